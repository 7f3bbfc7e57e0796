"""The command line against hostile input: ids past BIGINT, bad options and paths, escape sequences in stored text.

The rule: bad input gets one sentence on stderr and a non-zero exit, never a
traceback, and nothing stored is lost or half-written; text from the store is
shown on the terminal, never obeyed by it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import lodviz
from lodviz.cli import cli

#: A terminal acts on these: C0 but newline and tab, DEL, C1.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Retitles the window, clears the screen, a C1 CSI (red), DEL and a carriage return that rewrites the line.
HOSTILE = "Quarterly close \x1b]0;pwned\x07 moved \x1b[2J to Friday \u009b31m red \x7f\r done."
#: How it shows (a headline ends before the DEL).
SHOWN = "\\x1b]0;pwned\\x07 moved \\x1b[2J to Friday \\x9b31m red \\x7f"
BIGINT_PAST = str(2**63)


@pytest.fixture
def runner(cli_env: dict[str, str]) -> CliRunner:
    return CliRunner(env=cli_env)


def run(runner: CliRunner, store: Path, *args: str, **kwargs: object) -> Result:
    return runner.invoke(cli, ["--store", str(store), *args], **kwargs)


def assert_refused(result: Result) -> str:
    """A non-zero exit with exactly one line on stderr, the library's or the CLI's own sentence; returns it."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)  # not an exception escaping the CLI
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


@pytest.fixture
def store(tmp_path: Path, runner: CliRunner) -> Path:
    path = tmp_path / "hostile.duckdb"
    added = run(runner, path, "add", "The vendor contract renews on 1 March.", "--agent", "legal")
    assert added.exit_code == 0, added.output
    return path


def audit_ids(runner: CliRunner, store: Path) -> list[int]:
    listed = run(runner, store, "audit", "--json", "--limit", "1000")
    assert listed.exit_code == 0, listed.output
    return [event["id"] for event in json.loads(listed.stdout)]


# -- F6: ids at or past 2**63 ----------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["expand", BIGINT_PAST],
        ["promote", BIGINT_PAST],
        ["demote", BIGINT_PAST],
        ["explain", BIGINT_PAST],
        ["explain", BIGINT_PAST, "vendor contract"],
        ["forget", BIGINT_PAST, "--reason", "erasure", "--yes"],
        ["conflicts", "--memory", BIGINT_PAST],
        ["expand", str(2**64)],
    ],
    ids=["expand", "promote", "demote", "explain", "explain-query", "forget", "conflicts", "expand-2**64"],
)
def test_an_id_past_the_largest_bigint_names_no_memory(runner, store, command):
    before = audit_ids(runner, store)
    line = assert_refused(run(runner, store, *command))
    memory_id = next(arg for arg in command if arg.isdigit())
    assert line == f"Error: No memory with id {memory_id}."
    assert audit_ids(runner, store) == before  # nothing written


# -- F9: options and paths the system or the database would refuse -----------------------------


@pytest.mark.parametrize("limit", ["-1", "0", BIGINT_PAST])
def test_an_audit_limit_outside_what_a_bigint_holds_is_refused_in_one_line(runner, store, limit):
    line = assert_refused(run(runner, store, "audit", "--limit", limit))
    assert "--limit" in line and limit in line


def test_exporting_into_a_missing_directory_is_refused_in_one_line(runner, store, tmp_path):
    target = tmp_path / "missing" / "export.jsonl"
    line = assert_refused(run(runner, store, "export", "-o", str(target)))
    assert line == f"Error: cannot write {target}: No such file or directory."
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("model", ["hash:0", "hash:1"])
def test_a_hash_model_of_fewer_than_two_dimensions_is_refused_in_one_line(runner, tmp_path, model):
    line = assert_refused(run(runner, tmp_path / "new.duckdb", "--model", model, "add", "a note"))
    assert repr(model) in line
    assert not (tmp_path / "new.duckdb").exists()


@pytest.mark.parametrize("port", ["-1", "65536"])
def test_a_port_outside_0_to_65535_is_refused_in_one_line(runner, store, port):
    line = assert_refused(run(runner, store, "serve", "--no-open", "--port", port))
    assert line == f"Error: --port must be a whole number from 0 to 65535, got {port}."


@pytest.mark.parametrize("command", [["serve", "--no-open", "--port", "0"], ["mcp", "--agent", "claude-code"],
                                     ["mcp", "--http", "--agent", "claude-code", "--port", "0"]])
def test_serving_a_mistyped_store_path_is_refused_and_creates_nothing(tmp_path, cli_env, command):
    typo = tmp_path / "typo.duckdb"
    package_root = Path(lodviz.__file__).resolve().parents[1]
    env = {**os.environ, **cli_env, "PYTHONPATH": str(package_root)}
    # A process, with a timeout: a server that starts on the mistyped path would otherwise serve for ever.
    done = subprocess.run([sys.executable, "-m", "lodviz", *command, "--store", str(typo)], env=env, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"Error: no store at {typo}; pass --create to start an empty one there."
    assert list(tmp_path.iterdir()) == []


def test_the_owner_a_relay_starts_creates_the_store_only_when_asked():
    from lodviz.serve.registry import serve_command_line

    assert "--create" not in serve_command_line("/tmp/x.duckdb")
    assert serve_command_line("/tmp/x.duckdb", create=True)[-1] == "--create"


def test_a_negative_sample_seed_is_refused_in_one_line(runner, store):
    assert_refused(run(runner, store, "sample", "--seed", "-1"))


def test_an_error_naming_a_path_with_a_newline_stays_on_one_line(runner, store, tmp_path):
    odd = tmp_path / "two\nlines.jsonl"
    line = assert_refused(run(runner, store, "ingest", str(odd)))
    assert "two\\nlines.jsonl" in line


def _without_file_permission_override() -> list[str]:
    """A prefix that makes root obey file modes (it may write anywhere otherwise); nothing for other users."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only directory cannot be simulated")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


@pytest.mark.slow
def test_serving_a_store_in_a_read_only_directory_is_refused_in_one_line(runner, store, cli_env):
    folder = store.parent
    before = audit_ids(runner, store)
    package_root = Path(lodviz.__file__).resolve().parents[1]
    env = {**os.environ, **cli_env, "PYTHONPATH": str(package_root)}
    command = [*_without_file_permission_override(), sys.executable, "-m", "lodviz", "--store", str(store),
               "serve", "--no-open", "--port", "0", "--idle-timeout", "5"]
    folder.chmod(0o555)
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    finally:
        folder.chmod(0o755)
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Permission denied" in lines[0], done.stderr
    assert audit_ids(runner, store) == before  # the store opens, as it was
    assert "vendor contract" in run(runner, store, "expand", "1").stdout


# -- F10: escape sequences in stored text --------------------------------------------------------


@pytest.fixture
def hostile(tmp_path: Path, runner: CliRunner) -> Path:
    """A store whose memories, conflict, search, golden query and resolution note carry escape sequences."""
    path = tmp_path / "escapes.duckdb"
    for text, when in (("Paragon MSA: liability cap at 2x annual fees. " + HOSTILE, "2025-01-01"),
                       ("Paragon MSA: liability cap at 3x annual fees. " + HOSTILE, "2025-06-01")):
        added = run(runner, path, "add", text, "--agent", "legal", "--created-at", when, "--source", "mail \x1b[5m")
        assert added.exit_code == 0, added.output
    assert run(runner, path, "search", HOSTILE, "--agent", "legal").exit_code == 0
    golden = path.parent / "golden.jsonl"
    golden.write_text(json.dumps({"query": HOSTILE, "needs": [1]}) + "\n", encoding="utf-8")
    assert run(runner, path, "golden", "import", str(golden)).exit_code == 0
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ["add", "The renewal notice: " + HOSTILE],
        ["search", HOSTILE],
        ["search", "liability cap", "--exclude", HOSTILE, "--headlines", "5", "--theta1", "0.99", "--theta2", "0.98"],
        ["expand", "1"],
        ["explain", "2", HOSTILE],
        ["promote", "1"],
        ["conflicts"],
        ["audit"],
        ["golden"],
        ["stats", "--query", HOSTILE],
        ["recent", "--since", "2000-01-01"],
    ],
    ids=["add", "search", "search-exclude", "expand", "explain", "promote", "conflicts", "audit", "golden", "stats", "recent"],
)
def test_stored_escape_sequences_are_shown_not_obeyed(runner, hostile, command):
    result = run(runner, hostile, *command)
    assert result.exit_code == 0, result.output
    assert not CONTROL.findall(result.output), result.output
    assert SHOWN in result.output


def test_a_forget_prompt_shows_escape_sequences_not_obeys_them(runner, hostile):
    result = run(runner, hostile, "forget", "1", "--reason", "erasure", input="n\n")
    assert not CONTROL.findall(result.output), result.output
    assert "\\x1b]0;pwned" in result.output


def test_a_resolution_note_is_shown_not_obeyed(runner, hostile):
    assert run(runner, hostile, "resolve", "2", "1", "--reason", "amended \x1b]52;c;ZXZpbA==\x07").exit_code == 0
    result = run(runner, hostile, "conflicts", "--all")
    assert not CONTROL.findall(result.output), result.output
    assert "amended \\x1b]52;c;ZXZpbA==\\x07" in result.output


@pytest.mark.parametrize("command", [["search", HOSTILE, "--json"], ["expand", "1", "--json"], ["export"]])
def test_json_escapes_control_characters_and_keeps_the_text(runner, hostile, command):
    result = run(runner, hostile, *command)
    assert result.exit_code == 0, result.output
    assert not CONTROL.findall(result.stdout), result.stdout
    first = json.loads(result.stdout.splitlines()[0]) if command == ["export"] else json.loads(result.stdout)
    texts = [first["text"]] if "text" in first else [item["content"] for item in first["items"]]
    assert any(text.endswith(HOSTILE) for text in texts)


@pytest.mark.parametrize("command", [["search", HOSTILE, "--text"], ["export", "--format", "csv"]])
def test_data_printed_to_a_terminal_is_shown_not_obeyed(runner, hostile, monkeypatch, command):
    monkeypatch.setattr("lodviz.cli._is_terminal", lambda: True, raising=False)
    result = run(runner, hostile, *command)
    assert result.exit_code == 0, result.output
    assert not CONTROL.findall(result.stdout.replace("\r\n", "\n")), result.stdout  # CSV ends its rows in \r\n
    assert SHOWN in result.stdout


@pytest.mark.parametrize("command", [["search", HOSTILE, "--text"], ["export", "--format", "csv"]])
def test_data_written_to_a_pipe_is_the_text_as_stored(runner, hostile, command):
    result = run(runner, hostile, *command)
    assert result.exit_code == 0, result.output
    assert "\x1b]0;pwned\x07 moved " in result.stdout  # raw: for a file, a program or an agent, not a terminal


# -- F12: agent names and duplicates ------------------------------------------------------------


def test_an_agent_name_with_a_newline_is_refused_in_one_line(runner, store):
    before = audit_ids(runner, store)
    line = assert_refused(run(runner, store, "agents", "set", "bad\nname", "--alpha", "0.5"))
    assert "'bad\\nname'" in line
    assert audit_ids(runner, store) == before
    listed = run(runner, store, "agents", "show", "--json")
    assert [row["agent_id"] for row in json.loads(listed.stdout)] == ["legal"]


def test_adding_a_text_already_stored_names_its_memory_and_stores_nothing(runner, store):
    again = run(runner, store, "add", "The vendor contract renews on 1 March.", "--agent", "legal")
    assert again.exit_code == 0, again.output
    assert again.stdout.startswith("Already stored as memory 1; nothing new was stored: ")
    exported = run(runner, store, "export")
    assert len(exported.stdout.splitlines()) == 1


def test_search_text_is_what_an_agent_receives_within_its_default_budget(runner, store):
    assert run(runner, store, "agents", "set", "legal", "--budget", "300").exit_code == 0
    text = run(runner, store, "search", "vendor contract", "--agent", "legal", "--text", "--no-touch").stdout
    assert text.startswith("Memory within 300 tokens: ")
    whole = run(runner, store, "search", "vendor contract", "--agent", "legal", "--text", "--whole-landscape", "--no-touch").stdout
    assert whole.startswith("Memory: ")


def test_a_profile_budget_below_a_headline_is_refused_in_one_line(runner, store):
    line = assert_refused(run(runner, store, "agents", "set", "legal", "--budget", "5"))
    assert "budget must be 0 (the whole landscape) or between 16" in line
