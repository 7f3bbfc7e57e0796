"""``lodviz expand --around PHRASE --width N``: one passage's neighbourhood from the command line, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from .test_cli_hostile import assert_refused, audit_ids, run

FACT = "Bo: The harbour master said the ferry licence expires in March."
SESSION = "\n".join(
    [f"{'Ada' if t % 2 == 0 else 'Bo'}: We talked about item {t} and the shipping dates came up. It was fine." for t in range(10)]
    + [FACT]
    + [f"{'Ada' if t % 2 == 0 else 'Bo'}: Then the office move, step {t}, and the parking permits. All fine." for t in range(10)]
)


@pytest.fixture
def runner(cli_env: dict[str, str]) -> CliRunner:
    return CliRunner(env=cli_env)


@pytest.fixture
def store(tmp_path: Path, runner: CliRunner) -> Path:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"text": SESSION, "agent_id": "ada", "kind": "session"}) + "\n")
    path = tmp_path / "drill.duckdb"
    result = run(runner, path, "ingest", str(source))
    assert result.exit_code == 0, result.output
    return path


def test_expand_around_prints_the_neighbourhood_and_counts_it(runner, store):
    result = run(runner, store, "expand", "1", "--around", "FERRY  licence", "--agent", "ada")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "passages 10–12 of 21 around “FERRY  licence”: the one holding it and 1 on each side; 9 left out before, 9 after" in out
    assert FACT in out and "item 9 and" in out and "step 0," in out
    assert "item 8 and" not in out and "step 1," not in out and out.rstrip().endswith("…")
    listed = json.loads(run(runner, store, "audit", "--json", "--action", "expand").stdout)
    assert listed[0]["details"]["positions"] == [9, 10, 11] and listed[0]["memory_id"] == 1
    verified = run(runner, store, "audit", "verify")
    assert verified.exit_code == 0 and "0 disagreements" in verified.output


def test_expand_around_with_a_width_as_json(runner, store):
    result = run(runner, store, "expand", "1", "--around", "ferry licence", "--width", "0", "--json")
    data = json.loads(result.stdout)
    assert data["positions"] == [10] and data["text"] == f"… {FACT} …" and data["matched"] == "phrase"
    assert data["before"] == 10 and data["after"] == 10 and data["passage_count"] == 21


def test_expand_without_around_is_the_whole_memory_as_before(runner, store):
    result = run(runner, store, "expand", "1")
    assert result.exit_code == 0 and "Full text" in result.stdout and SESSION.splitlines()[-1] in result.stdout


@pytest.mark.parametrize(("args", "line"), [
    (["--around", "ferry", "--width", "x"], "Error: --width must be a whole number of at least 0, got 'x'."),
    (["--around", "ferry", "--width", "-1"], "Error: --width must be a whole number of at least 0, got '-1'."),
    (["--around", "ferry", "--width", "1.5"], "Error: --width must be a whole number of at least 0, got '1.5'."),
    (["--width", "2"], "Error: --width needs --around: it counts passages on each side of the phrase."),
    (["--around", "   "], "Error: around is empty: give a phrase from the excerpt you read."),
    (["--around", "ferry", "--agent", "bo"], "Error: No memory with id 1."),
])
def test_bad_input_is_refused_in_one_line(runner, store, args, line):
    before = audit_ids(runner, store)
    assert assert_refused(run(runner, store, "expand", "1", *args)) == line
    assert audit_ids(runner, store) == before  # nothing counted
