"""The DuckDB store: round trips, migrations, atomic batches, its in-process cache."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from lodviz.errors import StoreError
from lodviz.store.base import AuditEvent, NewMemory
from lodviz.store.duckdb import _STATE_SQL, MIGRATIONS, DuckDBStore, _state_from_batches, apply_migrations

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def rows(store: DuckDBStore, query: str) -> list[tuple]:
    """Read the file's tables directly: these tests pin the store's own layout."""
    return store._con.execute(query).fetchall()


def memory(i: int, **fields) -> NewMemory:
    vector = np.zeros(4, dtype=np.float32)
    vector[i % 4] = 1.0
    return NewMemory(
        text=f"full text {i}",
        summary=f"summary {i}",
        headline=f"headline {i}",
        embedding=vector,
        embedding_model="test-model",
        content_hash=f"hash-{i}",
        created_at=T0,
        agent_id=fields.pop("agent_id", "agent-a"),
        metadata={"n": i},
        **fields,
    )


def test_memory_round_trips_through_a_file(tmp_path):
    path = tmp_path / "m.duckdb"
    with DuckDBStore(path) as store:
        ids = store.insert([memory(1, kind="turn", source="slack:#x", visibility="shared")], None)
    with DuckDBStore(path) as store:
        record = store.get(ids)[ids[0]]
        assert (record.text, record.summary, record.headline) == ("full text 1", "summary 1", "headline 1")
        assert record.created_at == T0
        assert record.kind == "turn" and record.source == "slack:#x" and record.visibility == "shared"
        assert record.metadata == {"n": 1}
        assert record.last_retrieved_at is None and record.retrieval_count == 0 and record.floor == 0
        assert store.unit_vectors()[0].tolist() == [0.0, 1.0, 0.0, 0.0]


def test_duplicates_by_content_hash_are_skipped_in_and_across_batches():
    with DuckDBStore() as store:
        first = store.insert([memory(1), memory(1)], None)
        second = store.insert([memory(1), memory(2)], None)
        assert first[0] is not None and first[1] is None
        assert second[0] is None and second[1] is not None
        assert store.count() == 2


def test_a_failing_batch_writes_nothing(tmp_path):
    path = tmp_path / "m.duckdb"
    with DuckDBStore(path) as store:
        store.insert([memory(1)], None)
        bad = memory(3)
        bad.embedding = np.array([1.0, np.nan, 0, 0], dtype=np.float32)
        bad.text = None  # NOT NULL violation in the middle of a batch
        with pytest.raises(Exception):
            store.insert([memory(2), bad, memory(4)], AuditEvent(action="write", actor="t"))
        assert store.count() == 1
        assert store.audit(actions=["write"]) == []
        assert len(store.state()) == 1  # the cache did not take the failed rows either


def test_an_atomic_block_that_raises_leaves_nothing_behind(tmp_path):
    with DuckDBStore(tmp_path / "m.duckdb") as store:
        with pytest.raises(RuntimeError):
            with store.atomic():
                store.set_artifact("layout", b"half")
                store.set_meta({"note": "half"})
                raise RuntimeError("crash between two writes")
        assert store.artifact("layout") is None and "note" not in store.meta()
        with store.atomic():
            store.set_artifact("layout", b"whole")
        assert store.artifact("layout") == b"whole"


def old_store(tmp_path, upto: str, *statements: str):
    """A store file left at migration ``upto`` by an older lodviz, with ``statements`` run on it."""
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    apply_migrations(con, upto=upto)
    for statement in statements:
        con.execute(statement)
    con.close()
    return path


OLD_MEMORY = (
    "INSERT INTO memories (id, text, summary, headline, embedding, embedding_model, content_hash, "
    "created_at, agent_id, visibility, kind) VALUES (1, 'old', 'o', 'o', [1.0, 0.0], 'm', 'h', "
    "TIMESTAMP '2024-05-01 00:00:00', 'a', 'private', 'note')"
)


def test_an_old_file_is_migrated_on_open_and_keeps_its_data(tmp_path):
    path = old_store(tmp_path, "001_initial", OLD_MEMORY)
    with DuckDBStore(path) as store:
        applied = [r[0] for r in rows(store, "SELECT name FROM _migrations ORDER BY name")]
        assert applied == [name for name, _ in MIGRATIONS]
        assert store.get([1])[1].text == "old"
        assert np.isnan(store.state().x[0])  # the layout columns arrived empty
        assert store.profiles() == {}
        assert rows(store, "SELECT retrieval_count, last_retrieved_at FROM memories_with_usage") == [(0, None)]


def test_usage_history_moves_to_its_own_table_on_migration(tmp_path):
    path = old_store(
        tmp_path,
        "003_layout",
        "INSERT INTO memories (id, text, summary, headline, embedding, embedding_model, content_hash, "
        "created_at, last_retrieved_at, retrieval_count, agent_id, visibility, kind) VALUES "
        "(1, 'used', 'u', 'u', [1.0, 0.0], 'm', 'h1', TIMESTAMP '2024-05-01', TIMESTAMP '2024-06-01', 7, 'a', 'private', 'note'), "
        "(2, 'unused', 'u', 'u', [0.0, 1.0], 'm', 'h2', TIMESTAMP '2024-05-01', NULL, 0, 'a', 'private', 'note')",
    )
    with DuckDBStore(path) as store:
        records = store.get([1, 2])
        assert records[1].retrieval_count == 7 and records[1].last_retrieved_at.year == 2024
        assert records[2].retrieval_count == 0 and records[2].last_retrieved_at is None
        assert store.state().retrieval_count.tolist() == [7, 0]


def test_touch_counts_a_retrieval_in_the_file_and_the_cache(tmp_path):
    path = tmp_path / "m.duckdb"
    when = datetime(2025, 3, 1, tzinfo=UTC)
    with DuckDBStore(path) as store:
        ids = store.insert([memory(1), memory(2)], None)
        store.state()  # load the cache first, so the write must update it
        store.touch([ids[0]], when, AuditEvent(action="search", actor="t"))
        state = store.state()
        assert state.retrieval_count.tolist() == [1, 0]
        assert state.last_retrieved_at[0] == when.timestamp()
    with DuckDBStore(path) as store:
        record = store.get([ids[0]])[ids[0]]
        assert record.retrieval_count == 1 and record.last_retrieved_at == when
        assert [e.action for e in store.audit()] == ["search"]


def _usage(store: DuckDBStore) -> list[tuple]:
    return rows(store, "SELECT id, retrieval_count, last_retrieved_at FROM memories_with_usage ORDER BY id")


def test_retrievals_count_before_and_after_the_log_is_folded(tmp_path):
    path = tmp_path / "m.duckdb"
    early, late = datetime(2025, 3, 1, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC)
    with DuckDBStore(path) as store:
        ids = store.insert([memory(1), memory(2, retrieval_count=5, last_retrieved_at=early)], None)
        store.touch(ids, late, None)
        assert rows(store, "SELECT count(*) FROM retrievals") == [(2,)]
        logged = _usage(store)
        record = store.get([ids[1]])[ids[1]]
        assert (record.retrieval_count, record.last_retrieved_at) == (6, late)
    naive_late = late.replace(tzinfo=None)
    assert logged == [(ids[0], 1, naive_late), (ids[1], 6, naive_late)]
    with DuckDBStore(path) as store:  # opening folds the log into usage
        assert rows(store, "SELECT count(*) FROM retrievals") == [(0,)]
        assert _usage(store) == logged
        assert store.state().retrieval_count.tolist() == [1, 6]


def test_a_retrieval_sets_last_retrieved_at_to_its_now_even_if_earlier(tmp_path):
    # The contract: last_retrieved_at becomes the search's now; the file and the
    # in-process copy agree, before and after the log is folded.
    path = tmp_path / "m.duckdb"
    early, late = datetime(2025, 3, 1, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC)
    with DuckDBStore(path) as store:
        (memory_id,) = store.insert([memory(1)], None)
        store.state()
        store.touch([memory_id], late, None)
        store.touch([memory_id], early, None)
        assert store.get([memory_id])[memory_id].last_retrieved_at == early
        assert store.state().last_retrieved_at.tolist() == [early.timestamp()]
    with DuckDBStore(path) as store:
        assert store.get([memory_id])[memory_id].last_retrieved_at == early
        assert store.state().last_retrieved_at.tolist() == [early.timestamp()]
        assert store.state().retrieval_count.tolist() == [2]


def test_a_memory_listed_twice_in_one_touch_counts_twice_everywhere():
    store = DuckDBStore()
    (memory_id,) = store.insert([memory(1)], None)
    store.state()
    store.touch([memory_id, memory_id], T0, None)
    assert store.state().retrieval_count.tolist() == [2]
    assert store.get([memory_id])[memory_id].retrieval_count == 2


def test_a_retrieval_log_without_order_is_kept_by_the_migration_that_adds_it(tmp_path):
    path = old_store(
        tmp_path,
        "005_retrieval_log",
        OLD_MEMORY,
        "INSERT INTO usage VALUES (1, 3, TIMESTAMP '2024-06-01')",
        "INSERT INTO retrievals VALUES (1, TIMESTAMP '2024-07-01'), (1, TIMESTAMP '2024-08-01')",
    )
    with DuckDBStore(path) as store:
        record = store.get([1])[1]
        assert (record.retrieval_count, record.last_retrieved_at) == (5, datetime(2024, 8, 1, tzinfo=UTC))


def test_a_long_retrieval_log_is_folded_without_reopening():
    store = DuckDBStore()
    store.FOLD_AT = 4
    ids = store.insert([memory(i) for i in range(3)], None)
    store.touch(ids, T0, None)
    assert rows(store, "SELECT count(*) FROM retrievals") == [(3,)]
    store.touch(ids[:1], T0, None)
    assert rows(store, "SELECT count(*) FROM retrievals") == [(0,)]
    assert [count for _, count, _ in _usage(store)] == [2, 1, 1]


def test_contents_give_each_tier_its_text_across_inserts_after_the_first_read():
    store = DuckDBStore()
    ids = store.insert([memory(i, source=f"src-{i}") for i in range(30)], None)
    assert store.contents([ids[2]], [1]) == {ids[2]: ("headline 2", "src-2")}  # texts now held in memory
    # Single inserts past the number of held chunks: the first merge joins the
    # small ones only, the second, when they outgrow the first chunk, all.
    for i in range(30, 75):
        ids += store.insert([memory(i, source=f"src-{i}")], None)
    tiers = [1 + i % 3 for i in range(len(ids))]
    got = store.contents(ids[::-1], tiers[::-1])
    expected = {
        memory_id: ((f"headline {i}", f"summary {i}", f"full text {i}")[tier - 1], f"src-{i}")
        for i, (memory_id, tier) in enumerate(zip(ids, tiers))
    }
    assert got == expected


def test_contents_of_an_unknown_id_is_an_error():
    store = DuckDBStore()
    ids = store.insert([memory(1)], None)
    with pytest.raises(StoreError, match="no memory with id 99"):
        store.contents([ids[0], 99], [1, 1])


def test_the_first_load_puts_batches_arriving_in_any_order_in_id_order():
    # DuckDB streams the state in parallel, so batches can come out of id order.
    store = DuckDBStore()
    store.insert([memory(i) for i in range(10)], None)
    table = store._con.sql(_STATE_SQL.format(where="")).to_arrow_table()
    table = table.take(pa.array([9, 2, 5, 0, 7, 1, 8, 3, 6, 4]))  # out of order across and within batches
    ids = np.asarray(table.column("id").to_numpy())
    batches = table.to_batches(max_chunksize=3)
    state, vectors = _state_from_batches(pa.RecordBatchReader.from_batches(table.schema, batches), np.sort(ids))
    assert state.ids.tolist() == sorted(ids.tolist())
    assert vectors.argmax(axis=1).tolist() == [i % 4 for i in range(10)]  # memory(i) points along axis i % 4
    assert state.agent_names == ["agent-a"]


def test_cache_grows_with_inserts_after_it_was_loaded():
    with DuckDBStore() as store:
        store.insert([memory(i) for i in range(3)], None)
        assert len(store.state()) == 3
        store.insert([memory(i) for i in range(3, 2000)], None)
        state = store.state()
        assert len(state) == 2000 and state.ids.tolist() == list(range(1, 2001))
        assert store.unit_vectors().shape == (2000, 4)


def test_nearest_respects_visibility():
    with DuckDBStore() as store:
        store.insert([memory(0, agent_id="a"), memory(4, agent_id="b"), memory(8, agent_id="b", visibility="shared")], None)
        state = store.state()
        rows, sims = store.nearest(np.array([1.0, 0, 0, 0]), 10, state.visible_to("a"))
        assert sorted(state.ids[rows].tolist()) == [1, 3]


def test_audit_filters_by_agent_action_and_memory():
    with DuckDBStore() as store:
        store.record(AuditEvent(action="search", actor="x", agent_id="a", query="q"))
        store.record(AuditEvent(action="promote", actor="y", agent_id="b", memory_id=7))
        assert [e.action for e in store.audit(agent_id="a")] == ["search"]
        assert [e.actor for e in store.audit(actions=["promote"])] == ["y"]
        assert [e.memory_id for e in store.audit(memory_id=7)] == [7]


def test_a_file_that_is_not_a_store_gives_a_clear_error(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(StoreError, match="cannot open|not a lodviz store"):
        DuckDBStore(path)


def test_a_missing_directory_gives_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="no such directory"):
        DuckDBStore(tmp_path / "nope" / "m.duckdb")


def test_layout_positions_persist(tmp_path):
    path = tmp_path / "m.duckdb"
    with DuckDBStore(path) as store:
        ids = store.insert([memory(1), memory(2)], None)
        store.set_layout(ids, np.array([0.5, 1.5]), np.array([2.0, 3.0]))
    with DuckDBStore(path) as store:
        state = store.state()
        assert state.x.tolist() == [0.5, 1.5] and state.y.tolist() == [2.0, 3.0]


def test_an_empty_store_read_before_its_first_write_takes_it():
    with DuckDBStore() as store:
        assert len(store.state()) == 0  # loads an empty cache
        store.insert([memory(1)], None)
        assert store.unit_vectors().shape == (1, 4)


def test_a_snapshot_has_matching_rows():
    with DuckDBStore() as store:
        store.insert([memory(i) for i in range(5)], None)
        state, vectors = store.snapshot()
        assert len(state) == len(vectors) == 5
