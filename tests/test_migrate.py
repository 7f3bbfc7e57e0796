"""`lodviz migrate SRC DST`: a store moves between DuckDB and PostgreSQL whole, and says so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lodviz.cli import cli
from lodviz.store import open_store
from lodviz.store.base import TABLES

SAMPLE = Path(__file__).resolve().parents[1] / "lodviz" / "data" / "lodviz-sample.duckdb"


def everything(location: str) -> dict[str, list[tuple]]:
    store = open_store(location, read_only=True)
    try:
        return {table: [row for batch in store.read_table(table) for row in batch] for table in TABLES}
    finally:
        store.close()


def rows_equal(a: list[tuple], b: list[tuple]) -> bool:
    import numpy as np

    return len(a) == len(b) and all(
        len(x) == len(y) and all(np.array_equal(u, v) if isinstance(u, np.ndarray) else u == v for u, v in zip(x, y))
        for x, y in zip(a, b)
    )


@pytest.mark.slow
def test_the_sample_store_round_trips_duckdb_postgres_duckdb_unchanged(tmp_path, pg_url):
    source = tmp_path / "sample.duckdb"
    shutil.copy(SAMPLE, source)
    back = tmp_path / "back.duckdb"
    runner = CliRunner()
    there = runner.invoke(cli, ["migrate", str(source), pg_url])
    assert there.exit_code == 0, there.output
    home = runner.invoke(cli, ["migrate", pg_url, str(back)])
    assert home.exit_code == 0, home.output
    assert "every table has the same rows and checksums" in home.output
    original, final = everything(str(source)), everything(str(back))
    for table in TABLES:  # memories (texts, embeddings, floors, layout), usage, profiles, golden, conflicts, audit
        assert rows_equal(original[table], final[table]), table
    assert len(original["memories"]) == 3019 and len(original["audit"]) > 0 and len(original["usage"]) > 0


def test_a_migrated_store_answers_like_the_original(tmp_path, pg_url, embedder):
    import lodviz

    source = tmp_path / "small.duckdb"
    mem = lodviz.open(source, embedder=embedder)
    mem.add_many([{"text": f"Supplier audit {i}: plant {i} passed with {i} findings.", "agent_id": "ops"} for i in range(40)])
    mem.search("supplier audit plant 7", agent_id="ops")
    mem.promote(5, agent_id="ops", reason="precedent")
    expected = mem.search("supplier audit plant 7", agent_id="ops", touch=False)
    mem.close()
    assert CliRunner().invoke(cli, ["migrate", str(source), pg_url]).exit_code == 0
    moved = lodviz.open(pg_url, embedder=embedder)
    got = moved.search("supplier audit plant 7", agent_id="ops", touch=False, now=expected.now)
    assert [(i.id, i.tier, i.floor, i.retrieval_count) for i in got.items] == [
        (i.id, i.tier, i.floor, i.retrieval_count) for i in expected.items
    ]
    new_id = moved.add("A note written after the move.", agent_id="ops")
    assert new_id == 41  # ids go on after the copied ones
    moved.close()


def test_migrating_into_a_store_that_holds_data_is_refused_and_changes_nothing(tmp_path, embedder):
    import lodviz

    source, target = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    for path in (source, target):
        mem = lodviz.open(path, embedder=embedder)
        mem.add(f"A memory of {path.name}.", agent_id="ops")
        mem.close()
    result = CliRunner().invoke(cli, ["migrate", str(source), str(target)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [f"Error: {target} already holds data; migrate into a new, empty store."]
    assert len(everything(str(target))["memories"]) == 1


def test_a_password_on_the_command_line_is_refused(tmp_path):
    runner = CliRunner()
    for args in (
        ["migrate", str(tmp_path / "a.duckdb"), "postgresql://me:hunter2@db.example/lodviz"],
        ["--store", "postgresql://me:hunter2@db.example/lodviz", "stats"],
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code == 2 and "PGPASSWORD" in result.output and "Traceback" not in result.output, result.output


def test_a_missing_source_is_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["migrate", str(tmp_path / "nope.duckdb"), str(tmp_path / "b.duckdb")])
    assert result.exit_code == 1 and result.output.strip() == f"Error: no store at {tmp_path / 'nope.duckdb'}."
