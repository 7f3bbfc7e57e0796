"""Importing the histories people already have: a Claude Code session, an OpenAI message list,
a ChatGPT export and a wiki folder (realistic files in tests/fixtures/imports/).
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lodviz.cli import cli
from lodviz.errors import ImportFormatError
from lodviz.ingest.importers import read_path
from lodviz.ingest.transcripts import detect
from tests.importing import assert_read_or_refused

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "imports"


@pytest.mark.parametrize(
    "name, fmt",
    [("claude-code-session.jsonl", "claude-code"), ("openai-messages.json", "openai"), ("conversations.json", "chatgpt"), ("wiki", "markdown")],
)
def test_the_format_is_told_by_the_contents(name, fmt):
    assert detect(FIXTURES / name) == fmt


def test_a_claude_code_session_becomes_turns_and_tool_results():
    parsed = read_path(FIXTURES / "claude-code-session.jsonl")
    kinds = [(r.kind, r.metadata.get("role"), r.metadata.get("tool")) for r in parsed.records]
    assert kinds == [
        ("turn", "user", None),
        ("turn", "assistant", None),  # its text, and the Grep call it made
        ("tool_result", "tool", "Grep"),
        ("turn", "assistant", None),
        ("tool_result", "tool", "Edit"),
        ("turn", "assistant", None),
    ]
    first, grep_call, grep_result = parsed.records[0], parsed.records[1], parsed.records[2]
    assert first.agent_id == "claude-code" and first.created_at == datetime(2026, 11, 28, 9, 14, 2, 118000, tzinfo=UTC)
    assert first.metadata["session"] == "5f1c2a7e-8d3b-4c55-9a41-0e6f2b7c9d10" and first.metadata["project"] == "/home/dana/src/billing-service"
    assert first.source == "claude-code:billing-service/5f1c2a7e-8d3b-4c55-9a41-0e6f2b7c9d10"
    assert grep_call.metadata["tools"] == ["Grep"] and '[called Grep: {"pattern": "round\\\\(", "path": "src/"}]' in grep_call.text
    assert "Look for round() in totals" not in grep_call.text  # thinking is not memory
    assert grep_result.text.startswith("src/totals.py:42:") and grep_result.metadata["tool_use_id"] == "toolu_01"
    assert parsed.skipped == []


def test_an_openai_message_list_keeps_roles_tools_and_instructions():
    parsed = read_path(FIXTURES / "openai-messages.json", defaults={"agent_id": "support"})
    assert [(r.kind, r.metadata["role"]) for r in parsed.records] == [
        ("instruction", "system"), ("turn", "user"), ("turn", "assistant"), ("tool_result", "tool"), ("turn", "assistant"),
    ]
    assert parsed.records[2].text.startswith("[called lookup_order:")
    assert parsed.records[3].metadata == {"role": "tool", "tool": "lookup_order", "tool_call_id": "call_1"}
    assert all(r.agent_id == "support" for r in parsed.records)


def test_a_chatgpt_export_keeps_the_visible_branch_with_its_title_and_times():
    parsed = read_path(FIXTURES / "conversations.json")
    texts = [r.text for r in parsed.records]
    assert len(texts) == 4 and "An abandoned draft answer." not in texts  # the edited-away branch is not what was said
    assert texts[0].startswith("Plan three days in Lisbon") and texts[-1].startswith("Day 2 is now Sintra")
    assert parsed.records[0].created_at == datetime.fromtimestamp(1764000010.5, tz=UTC)
    assert parsed.records[1].metadata == {"role": "assistant", "conversation": "Trip to Lisbon", "conversation_id": "c-77", "model": "gpt-4o"}
    assert {r.source for r in parsed.records} == {"chatgpt:Trip to Lisbon"} and {r.agent_id for r in parsed.records} == {"chatgpt"}


def test_a_wiki_folder_gives_a_page_per_memory_and_long_pages_by_section():
    parsed = read_path(FIXTURES / "wiki")
    sources = [r.source for r in parsed.records]
    assert sources == [
        "supplier-audits.md#Supplier audits", "supplier-audits.md#Scheduling", "supplier-audits.md#On-site checks",
        "supplier-audits.md#Findings and follow-up", "vendor-portal.md",
    ]
    assert parsed.records[1].metadata == {"page": "Supplier audits", "section": "Scheduling", "file": "supplier-audits.md"}
    assert all(r.kind == "document" for r in parsed.records)
    assert parsed.skipped == ["empty.md: empty"]


def test_a_bad_line_in_the_middle_is_reported_with_file_and_line(tmp_path):
    lines = (FIXTURES / "claude-code-session.jsonl").read_text().splitlines()
    lines[3] = lines[3][:40]  # cut in the middle of the file
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportFormatError, match=r"broken.jsonl line 4: not valid JSON"):
        read_path(path, "claude-code")


def test_a_truncated_last_line_of_a_live_session_is_skipped_and_said(tmp_path):
    text = (FIXTURES / "claude-code-session.jsonl").read_text()
    path = tmp_path / "live.jsonl"
    path.write_text(text + '{"type": "assistant", "sessionId": "5f1c", "message": {"role": "assis')
    parsed = read_path(path)
    assert len(parsed.records) == 6
    assert parsed.skipped == ["live.jsonl line 8: not valid JSON (Unterminated string starting at); a transcript still being written ends so, skipped"]


def test_importing_again_adds_nothing_and_the_cli_reports_what_it_skipped(tmp_path, cli_env):
    store = str(tmp_path / "m.duckdb")
    runner = CliRunner()
    for name in ("claude-code-session.jsonl", "openai-messages.json", "conversations.json", "wiki"):
        first = runner.invoke(cli, ["--store", store, "ingest", str(FIXTURES / name)], env=cli_env)
        assert first.exit_code == 0 and "Added" in first.output, first.output
        again = runner.invoke(cli, ["--store", store, "ingest", str(FIXTURES / name)], env=cli_env)
        assert again.exit_code == 0 and "Added 0 memories" in again.output, again.output
    stats = json.loads(runner.invoke(cli, ["--store", store, "stats", "--json"], env=cli_env).output)
    assert stats["memories"] == 6 + 5 + 4 + 5
    wiki = runner.invoke(cli, ["--store", store, "ingest", str(FIXTURES / "wiki")], env=cli_env)
    assert "Skipped empty.md: empty." in wiki.output


def test_a_forced_format_that_does_not_fit_is_one_line(tmp_path, cli_env):
    shutil.copy(FIXTURES / "openai-messages.json", tmp_path / "messages.json")
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "m.duckdb"), "ingest", "--format", "chatgpt", str(tmp_path / "messages.json")], env=cli_env)
    assert result.exit_code == 1 and result.output.strip() == "Error: messages.json: a ChatGPT export is a list of conversations."


def test_watch_adds_only_the_new_turns_of_a_growing_session(tmp_path, cli_env):
    lines = (FIXTURES / "claude-code-session.jsonl").read_text().splitlines(keepends=True)
    folder = tmp_path / "projects" / "billing-service"
    folder.mkdir(parents=True)
    session = folder / "5f1c2a7e.jsonl"
    session.write_text("".join(lines[:4]) + lines[4][:30])  # a turn still being written
    store = str(tmp_path / "m.duckdb")
    runner = CliRunner()
    first = runner.invoke(cli, ["--store", store, "watch", str(tmp_path / "projects"), "--once"], env=cli_env)
    assert first.exit_code == 0 and "billing-service/5f1c2a7e.jsonl: added 3 memories; the store holds 3." in first.output
    session.write_text("".join(lines))  # the turn finished, and more came
    second = runner.invoke(cli, ["--store", store, "watch", str(tmp_path / "projects"), "--once"], env=cli_env)
    assert "added 3 memories; the store holds 6." in second.output
    third = runner.invoke(cli, ["--store", store, "watch", str(tmp_path / "projects"), "--once"], env=cli_env)
    assert third.exit_code == 0 and third.output == ""  # nothing changed, nothing said


@pytest.mark.slow
def test_watch_keeps_looking_until_stopped(tmp_path, cli_env):
    import os
    import signal
    import subprocess
    import sys
    import time

    lines = (FIXTURES / "claude-code-session.jsonl").read_text().splitlines(keepends=True)
    session = tmp_path / "live.jsonl"
    session.write_text("".join(lines[:2]))
    env = {**os.environ, **cli_env, "HF_HUB_OFFLINE": "1"}
    errors = tmp_path / "watch.err"  # a file, not a pipe nobody reads: what it says cannot block it
    # As from a shell: Ctrl-C neither ignored nor blocked. A child inherits both from this process,
    # where a test run before this one may have left SIGINT blocked (in the whole suite, twice in
    # CI, the watcher never saw the signal).
    parent = f"parent's SIGINT handler {signal.getsignal(signal.SIGINT)!r}, blocked {sorted(signal.pthread_sigmask(signal.SIG_BLOCK, []))}"

    def as_from_a_shell() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    with errors.open("w") as err:
        watcher = subprocess.Popen(
            [sys.executable, "-m", "lodviz.cli", "--store", str(tmp_path / "m.duckdb"), "watch", str(tmp_path), "--interval", "0.3", "--pattern", "*.jsonl"],
            stdout=subprocess.PIPE, stderr=err, text=True, env=env, cwd=Path(__file__).resolve().parents[1],
            preexec_fn=as_from_a_shell,
        )
    try:
        assert watcher.stdout.readline().strip() == "live.jsonl: added 1 memories; the store holds 1."
        time.sleep(0.5)
        session.write_text("".join(lines))
        assert watcher.stdout.readline().strip() == "live.jsonl: added 5 memories; the store holds 6."
    finally:
        watcher.send_signal(signal.SIGINT)
        try:
            code = watcher.wait(60)
        except subprocess.TimeoutExpired:
            watcher.kill()
            raise AssertionError(f"the watch did not stop on SIGINT ({parent}); it said: {errors.read_text()[-2000:]!r}") from None
    assert code == 130, errors.read_text()[-2000:]  # "Interrupted.", as the CLI ends on Ctrl-C


#: Any JSON, leaning towards the keys and values the transcript readers look at.
json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(),
        st.integers(), st.floats(allow_nan=False),
        st.sampled_from(["user", "assistant", "tool", "text", "tool_use", "tool_result", "<script>x</script>", "\u202e", ""]),
        st.text(max_size=40),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(["type", "message", "role", "content", "text", "name", "id", "tool_use_id",
                                                              "timestamp", "sessionId", "cwd", "mapping", "current_node", "parent",
                                                              "author", "parts", "messages", "title", "create_time", "tool_calls"]),
            inner, max_size=6),
    ),
    max_leaves=20,
)


@pytest.mark.slow
@pytest.mark.parametrize("fmt, suffix", [("claude-code", ".jsonl"), ("openai", ".json"), ("openai", ".jsonl"), ("chatgpt", ".json")])
def test_any_json_is_imported_or_refused_with_its_place(tmp_path, fmt, suffix):

    @settings(max_examples=int(__import__('os').environ.get('LODVIZ_FUZZ_EXAMPLES', '80')), deadline=None,
              suppress_health_check=list(HealthCheck), derandomize=__import__('os').environ.get('LODVIZ_FUZZ_RANDOM') is None)
    @given(st.lists(json_values, min_size=1, max_size=5))
    def one(values) -> None:
        path = tmp_path / f"input{suffix}"
        if suffix == ".jsonl":
            path.write_text("\n".join(json.dumps(v) for v in values) + "\n")
        else:
            path.write_text(json.dumps(values if fmt == "chatgpt" else {"messages": values}))
        assert_read_or_refused(path, fmt)

    one()
