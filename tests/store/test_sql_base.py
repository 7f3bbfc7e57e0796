"""The relational half both backends share (``lodviz.store.sql``), its migration runner and its mirror.

The defect first: with PostgreSQL, another process may commit a memory between
the moment ``Memory`` takes the columns (``state()``) and the moment it asks the
store for ids (``ids_with_words``, ``ids_containing``); indexing the columns
with such an id raised ``IndexError``. The store now answers ``within`` given
columns: only ids they hold.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pytest

import lodviz
from lodviz.store import open_store

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _commit_after_state(mem, other, text: str) -> None:
    """Make ``other`` (another process's Memory) commit ``text`` right after ``mem`` next takes the columns."""
    store = mem._store
    taken = store.state

    def state():
        columns = taken()
        del store.state  # once
        other.add(text, agent_id="ops", created_at=T0)
        return columns

    store.state = state


@pytest.mark.parametrize("backend", ["postgres", "duckdb"])
def test_find_and_golden_entries_ignore_a_memory_committed_after_the_columns_were_taken(backend, request, tmp_path, embedder):
    location = request.getfixturevalue("pg_url") if backend == "postgres" else str(tmp_path / "m.duckdb")
    mem = lodviz.open(location, embedder=embedder)
    # DuckDB has one writer: there the "other process" is the same store, written between the two reads.
    other = lodviz.open(location, embedder=embedder) if backend == "postgres" else mem
    try:
        kept = mem.add("The zebra crossing near the plant was repainted.", agent_id="ops", created_at=T0)

        _commit_after_state(mem, other, "Another zebra crossing, committed meanwhile.")
        assert [r.id for r in mem.find("zebra crossing")] == [kept]  # was IndexError with PostgreSQL

        golden = tmp_path / "golden.jsonl"
        golden.write_text(json.dumps({"query": "where is the crossing?", "needs_text": ["zebra crossing near"]}) + "\n")
        _commit_after_state(mem, other, "A third zebra crossing near the gate, committed meanwhile.")
        [gid] = mem.import_golden(golden)  # was IndexError with PostgreSQL
        assert mem.golden()[0].needs == [kept] and gid
    finally:
        if other is not mem:
            other.close()
        mem.close()


@pytest.mark.parametrize("backend", ["postgres", "duckdb"])
def test_ids_are_answered_within_given_columns(backend, request, tmp_path):
    from tests.store.test_store import memory

    location = request.getfixturevalue("pg_url") if backend == "postgres" else str(tmp_path / "m.duckdb")
    with open_store(location) as store:
        first = store.insert([memory(1), memory(2)], None)
        columns = store.state()
        later = store.insert([memory(3)], None)
        assert store.ids_with_words(["full", "text"], 10) == [later[0], first[1], first[0]]
        assert store.ids_with_words(["full", "text"], 10, within=columns) == [first[1], first[0]]
        assert store.ids_containing("full text", 10, within=columns) == [first[0], first[1]]
        assert store.ids_containing("full text", 10) == [*first, *later]
        assert np.array_equal(columns.ids, np.asarray(first))
