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


# -- the one migration runner ---------------------------------------------------------------------


def test_migrations_are_named_functions_applied_in_order_and_recorded_once():
    import duckdb

    from lodviz.store.duckdb import MIGRATIONS as DUCKDB
    from lodviz.store.migrations import Migrations, Target
    from lodviz.store.postgres import MIGRATIONS as POSTGRES

    # The names stores already record.
    assert DUCKDB.names[:3] == ["001_initial", "002_profiles", "003_layout"] and DUCKDB.names[-2:] == ["010_passages", "011_profile_budget"]
    assert POSTGRES.names == ["001_initial", "002_tokens", "003_audit_no_truncate", "004_passages", "005_profile_budget"]

    steps = Migrations()
    ran: list[str] = []

    @steps
    def m001_first(con):
        ran.append("first")
        con.execute("CREATE TABLE t (x INTEGER)")

    @steps
    def m002_second(con):
        ran.append("second")

    con = duckdb.connect()
    target = Target(
        con, lambda sql, args: con.execute(sql, list(args)).fetchall(),
        table="CREATE TABLE IF NOT EXISTS _migrations (name VARCHAR PRIMARY KEY)", record="INSERT INTO _migrations VALUES (?)",
    )
    assert steps.apply(target, upto="001_first") == ["001_first"]
    assert steps.missing(["001_first"]) == ["002_second"]
    assert steps.apply(target) == ["002_second"] and steps.apply(target) == []
    assert ran == ["first", "second"]
    assert [name for name, _ in steps[:1]] == ["001_first"]
    with pytest.raises(ValueError):
        steps(m001_first)


# -- the one mirror ------------------------------------------------------------------------------


def _columns(ids, agents, names, count=0):
    from lodviz.records import Columns
    from lodviz.store.mirror import code_agents

    n = len(ids)
    return Columns(
        ids=np.asarray(ids, dtype=np.int64), created_at=np.zeros(n), last_retrieved_at=np.full(n, np.nan),
        retrieval_count=np.full(n, count, dtype=np.int64), floor=np.zeros(n, dtype=np.int8),
        agent_code=code_agents(names, agents), shared=np.zeros(n, dtype=bool), kind=np.array(["note"] * n, dtype=object),
        x=np.full(n, np.nan), y=np.full(n, np.nan), len_text=np.ones(n, dtype=np.int32),
        len_summary=np.ones(n, dtype=np.int32), len_headline=np.ones(n, dtype=np.int32),
        forgotten=np.zeros(n, dtype=bool), agent_names=names,
    )


def test_the_mirror_merges_changed_and_late_rows_in_id_order_and_leaves_snapshots_alone():
    from lodviz.store.mirror import Mirror

    names: list[str] = []
    mirror = Mirror.of(_columns([3, 1], ["a", "b"], names), np.eye(4, dtype=np.float32)[[2, 0]])
    before, before_vectors = mirror.state(), mirror.vectors()
    assert before.ids.tolist() == [1, 3] and before.agent_names == ["a", "b"]

    # Row 3 touched (count 5) and its vector zeroed (forgotten); 4 new; then 2 committed late, below 4.
    mirror.merge(_merge_rows(mirror, [3, 4], ["a", "c"], 5), np.array([[0, 0, 0, 0], [0, 0, 0, 1]], dtype=np.float32))
    mirror.merge(_merge_rows(mirror, [2], ["b"], 0), np.array([[0, 1, 0, 0]], dtype=np.float32))
    after = mirror.state()
    assert after.ids.tolist() == [1, 2, 3, 4]
    assert after.retrieval_count.tolist() == [0, 0, 5, 5]
    assert [after.agent_names[c] for c in after.agent_code] == ["b", "b", "a", "c"]
    assert mirror.vectors().tolist() == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]]
    # What was handed out before is as it was taken.
    assert before.ids.tolist() == [1, 3] and before.retrieval_count.tolist() == [0, 0] and before.agent_names == ["a", "b"]
    assert before_vectors.tolist() == [[1, 0, 0, 0], [0, 0, 1, 0]]
    assert mirror.present_rows(np.array([4, 1])).tolist() == [3, 0]


def _merge_rows(mirror, ids, agents, count):
    columns = _columns(ids, agents, [], count)
    columns.agent_code = mirror.code_agents(agents)
    return columns
