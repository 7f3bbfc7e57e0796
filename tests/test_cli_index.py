"""`lodviz index`: what a search finds its nearest memories with, shown and chosen from the command line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from lodviz.cli import cli
from lodviz.store.duckdb import DuckDBStore
from tests.store.test_vector_index import N, rows


@pytest.fixture
def runner(cli_env):
    return CliRunner(env=cli_env)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(DuckDBStore, "INDEX_FROM", 500)
    path = tmp_path / "s.duckdb"
    with DuckDBStore(path) as built:
        built.insert(rows(N), None)
    return path


def run(runner, store, *args):
    return runner.invoke(cli, ["--store", str(store), "index", *args])


def test_a_new_store_is_searched_exactly(runner, store):
    result = run(runner, store)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"exact: a search scans all {N:,} memories."


def test_choosing_ivf_builds_the_index_and_says_what_it_measured(runner, store):
    result = run(runner, store, "ivf")
    assert result.exit_code == 0, result.output
    assert f"ivf: {N:,} memories in " in result.output and " read per search; recall 0.9" in result.output
    facts = json.loads(run(runner, store, "--json").output)
    assert facts["index"] == "ivf" and facts["covers"] == N and facts["recall"] >= 0.99


def test_the_choice_is_kept_with_the_store(runner, store):
    run(runner, store, "ivf")
    with DuckDBStore(store) as reopened:
        assert reopened.vector_index() == "ivf"
    assert json.loads(run(runner, store, "exact", "--json").output)["index"] == "exact"
    with DuckDBStore(store) as reopened:
        assert reopened.vector_index() == "exact"


def test_a_small_store_says_it_is_scanned_until_it_grows(runner, store, monkeypatch):
    monkeypatch.setattr(DuckDBStore, "INDEX_FROM", 50_000)
    result = run(runner, store, "ivf")
    assert result.exit_code == 0, result.output
    assert f"ivf: chosen; {N:,} memories are scanned exactly until the store holds 50,000." in result.output


def test_an_unknown_index_is_refused_in_one_message(runner, store):
    result = run(runner, store, "hnsw")
    assert result.exit_code == 2
    assert "Traceback" not in result.output and "'hnsw' is not one of 'exact', 'ivf'" in result.output


def test_a_missing_store_is_one_message(runner, tmp_path):
    result = run(runner, tmp_path / "none.duckdb", "ivf")
    assert result.exit_code != 0 and "no store at" in result.output and "Traceback" not in result.output
