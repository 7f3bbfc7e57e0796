"""The store contract, one suite for every backend: DuckDB (a real file) and PostgreSQL (a real server).

Each test gets ``open_store``, which opens (or reopens) one store of the
backend under test; what a test checks after reopening is what the backend
kept, not what a process remembered.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np
import pytest

from lodviz.errors import StoreError
from lodviz.store import open_store as open_location
from lodviz.store.base import AuditEvent, NewMemory, Store

T0 = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["duckdb", "postgres"])
def open_store(request, tmp_path) -> Callable[[], Store]:
    """Opens the test's store of the backend under test (the same one every call)."""
    location = str(tmp_path / "m.duckdb") if request.param == "duckdb" else request.getfixturevalue("pg_url")
    opened: list[Store] = []

    def opener() -> Store:
        store = open_location(location)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()


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


def test_a_memory_round_trips(open_store):
    with open_store() as store:
        ids = store.insert([memory(1, kind="turn", source="slack:#x", visibility="shared")], None)
    with open_store() as store:
        record = store.get(ids)[ids[0]]
        assert (record.text, record.summary, record.headline) == ("full text 1", "summary 1", "headline 1")
        assert record.created_at == T0
        assert record.kind == "turn" and record.source == "slack:#x" and record.visibility == "shared"
        assert record.metadata == {"n": 1}
        assert record.last_retrieved_at is None and record.retrieval_count == 0 and record.floor == 0
        assert store.unit_vectors()[0].tolist() == [0.0, 1.0, 0.0, 0.0]


def test_duplicates_by_content_hash_are_skipped_in_and_across_batches(open_store):
    store = open_store()
    first = store.insert([memory(1), memory(1)], None)
    second = store.insert([memory(1), memory(2)], None)
    assert first[0] is not None and first[1] is None
    assert second[0] is None and second[1] is not None
    assert store.count() == 2


def test_a_failing_batch_writes_nothing(open_store):
    store = open_store()
    store.insert([memory(1)], None)
    bad = memory(3)
    bad.text = None  # NOT NULL violation in the middle of a batch
    with pytest.raises(Exception):
        store.insert([memory(2), bad, memory(4)], AuditEvent(action="write", actor="t"))
    assert store.count() == 1
    assert store.audit(actions=["write"]) == []
    assert len(store.state()) == 1  # the in-memory copy did not take the failed rows either


def test_an_atomic_block_that_raises_leaves_nothing_behind(open_store):
    store = open_store()
    with pytest.raises(RuntimeError):
        with store.atomic():
            store.set_artifact("layout", b"half")
            store.set_meta({"note": "half"})
            raise RuntimeError("crash between two writes")
    assert store.artifact("layout") is None and "note" not in store.meta()
    with store.atomic():
        store.set_artifact("layout", b"whole")
    assert store.artifact("layout") == b"whole"


def test_touch_counts_a_retrieval_in_the_store_and_the_copy(open_store):
    when = datetime(2025, 3, 1, tzinfo=UTC)
    with open_store() as store:
        ids = store.insert([memory(1), memory(2)], None)
        store.state()  # load the copy first, so the write must update it
        store.touch([ids[0]], when, AuditEvent(action="search", actor="t"))
        state = store.state()
        assert state.retrieval_count.tolist() == [1, 0]
        assert state.last_retrieved_at[0] == when.timestamp()
    with open_store() as store:
        record = store.get([ids[0]])[ids[0]]
        assert record.retrieval_count == 1 and record.last_retrieved_at == when
        assert [e.action for e in store.audit()] == ["search"]


def test_a_retrieval_sets_last_retrieved_at_to_its_now_even_if_earlier(open_store):
    early, late = datetime(2025, 3, 1, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC)
    with open_store() as store:
        (memory_id,) = store.insert([memory(1)], None)
        store.state()
        store.touch([memory_id], late, None)
        store.touch([memory_id], early, None)
        assert store.get([memory_id])[memory_id].last_retrieved_at == early
        assert store.state().last_retrieved_at.tolist() == [early.timestamp()]
    with open_store() as store:
        assert store.get([memory_id])[memory_id].last_retrieved_at == early
        assert store.state().last_retrieved_at.tolist() == [early.timestamp()]
        assert store.state().retrieval_count.tolist() == [2]


def test_a_memory_listed_twice_in_one_touch_counts_twice_everywhere(open_store):
    store = open_store()
    (memory_id,) = store.insert([memory(1)], None)
    store.state()
    store.touch([memory_id, memory_id], T0, None)
    assert store.state().retrieval_count.tolist() == [2]
    assert store.get([memory_id])[memory_id].retrieval_count == 2


def test_contents_give_each_tier_its_text_across_inserts_after_the_first_read(open_store):
    store = open_store()
    ids = store.insert([memory(i, source=f"src-{i}") for i in range(30)], None)
    assert store.contents([ids[2]], [1]) == {ids[2]: ("headline 2", "src-2")}
    for i in range(30, 75):
        ids += store.insert([memory(i, source=f"src-{i}")], None)
    tiers = [1 + i % 3 for i in range(len(ids))]
    got = store.contents(ids[::-1], tiers[::-1])
    expected = {
        memory_id: ((f"headline {i}", f"summary {i}", f"full text {i}")[tier - 1], f"src-{i}")
        for i, (memory_id, tier) in enumerate(zip(ids, tiers))
    }
    assert got == expected


def test_contents_of_an_unknown_id_is_an_error(open_store):
    store = open_store()
    ids = store.insert([memory(1)], None)
    with pytest.raises(StoreError, match="no memory with id 99"):
        store.contents([ids[0], 99], [1, 1])


def test_the_copy_grows_with_inserts_after_it_was_loaded(open_store):
    store = open_store()
    store.insert([memory(i) for i in range(3)], None)
    assert len(store.state()) == 3
    store.insert([memory(i) for i in range(3, 2000)], None)
    state = store.state()
    assert len(state) == 2000 and state.ids.tolist() == sorted(state.ids.tolist()) and len(set(state.ids.tolist())) == 2000
    assert store.unit_vectors().shape == (2000, 4)


def test_nearest_respects_visibility(open_store):
    store = open_store()
    ids = store.insert([memory(0, agent_id="a"), memory(4, agent_id="b"), memory(8, agent_id="b", visibility="shared")], None)
    state = store.state()
    rows, sims = store.nearest(np.array([1.0, 0, 0, 0]), 10, state.visible_to("a"))
    assert sorted(state.ids[rows].tolist()) == sorted([ids[0], ids[2]])


def test_a_scan_answers_stay_what_they_were_after_the_next_scan(open_store):
    # Scans reuse one array for their scores (``ScanBuffer``): an answer must not be a view of it.
    store = open_store()
    store.insert([memory(i) for i in range(12)], None)
    vectors = store.unit_vectors()
    first_rows, first_sims = store.nearest(np.array([1.0, 0.2, 0, 0]), 5)
    kept = first_sims.copy()
    store.nearest(np.array([0, 0, 1.0, 0.3]), 5)
    assert np.array_equal(first_sims, kept)
    expected = vectors @ (np.array([1.0, 0.2, 0, 0], dtype=np.float32) / np.float32(np.hypot(1.0, 0.2)))
    assert np.allclose(first_sims, expected[first_rows], atol=1e-6)


def test_audit_filters_by_agent_action_and_memory(open_store):
    store = open_store()
    store.record(AuditEvent(action="search", actor="x", agent_id="a", query="q"))
    store.record(AuditEvent(action="promote", actor="y", agent_id="b", memory_id=7))
    assert [e.action for e in store.audit(agent_id="a")] == ["search"]
    assert [e.actor for e in store.audit(actions=["promote"])] == ["y"]
    assert [e.memory_id for e in store.audit(memory_id=7)] == [7]
    assert all(e.at is not None and e.at.utcoffset() is not None and e.at.utcoffset().total_seconds() == 0 for e in store.audit())


def test_layout_positions_persist(open_store):
    with open_store() as store:
        ids = store.insert([memory(1), memory(2)], None)
        store.set_layout(ids, np.array([0.5, 1.5]), np.array([2.0, 3.0]))
    with open_store() as store:
        state = store.state()
        assert state.x.tolist() == [0.5, 1.5] and state.y.tolist() == [2.0, 3.0]


def test_an_empty_store_read_before_its_first_write_takes_it(open_store):
    store = open_store()
    assert len(store.state()) == 0
    store.insert([memory(1)], None)
    assert store.unit_vectors().shape == (1, 4)


def test_a_snapshot_has_matching_rows(open_store):
    store = open_store()
    store.insert([memory(i) for i in range(5)], None)
    state, vectors = store.snapshot()
    assert len(state) == len(vectors) == 5


def test_a_floor_and_a_touch_of_the_same_memory_both_stay(open_store):
    store = open_store()
    (memory_id,) = store.insert([memory(1)], None)
    store.set_floor(memory_id, 3, AuditEvent(action="promote", actor="t", memory_id=memory_id))
    store.touch([memory_id], T0, None)
    record = store.get([memory_id])[memory_id]
    assert record.floor == 3 and record.retrieval_count == 1
    assert store.state().floor.tolist() == [3]


def test_forget_erases_the_texts_and_the_vector_but_keeps_the_row(open_store):
    store = open_store()
    ids = store.insert([memory(1), memory(2)], None)
    store.forget(ids[0], AuditEvent(action="forget", actor="t", memory_id=ids[0]))
    record = store.get([ids[0]])[ids[0]]
    assert record.forgotten and "full text 1" not in record.text
    state, vectors = store.snapshot()
    assert state.forgotten.tolist() == [True, False] and not vectors[0].any()
    assert store.count() == 1


def test_profiles_and_golden_queries_round_trip(open_store):
    from lodviz.records import Golden

    with open_store() as store:
        values = {"alpha": 0.4, "lam": 0.02, "theta1": 0.6, "theta2": 0.3, "theta3": 0.05, "k": 500, "budget": 1500}
        store.set_profile("legal", values, AuditEvent(action="profile", actor="t", agent_id="legal"))
        store.set_profile("legal", {**values, "alpha": 0.5}, AuditEvent(action="profile", actor="t", agent_id="legal"))
        (gid,) = store.add_golden([Golden(agent_id="legal", query="cap?", needs=[1, 2])], AuditEvent(action="golden", actor="t"))
    with open_store() as store:
        assert store.profile("legal") == {**values, "alpha": 0.5}
        (golden,) = store.golden("legal")
        assert golden.id == gid and golden.needs == [1, 2] and golden.created_by == "t"


# -- passages (lodviz.passages): a long memory's spans, each with its vector ----------------------------


def long_memory(i: int, spans: tuple[tuple[int, int], ...] = ((0, 4), (5, 9), (10, 12)), **fields) -> NewMemory:
    """``memory(i)`` with passages: its ``spans`` of the full text, each with a vector of its own (not unit)."""
    m = memory(i, **fields)
    m.passages = spans
    m.passage_vectors = np.array(
        [[2.0 * (j == (i + p) % 4) + 0.5 for j in range(4)] for p in range(len(spans))], dtype=np.float32
    )
    return m


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_long_memorys_passages_are_kept_with_it_and_a_short_one_has_none(open_store):
    with open_store() as store:
        assert len(store.passages()) == 0
        ids = store.insert([long_memory(1), memory(2), long_memory(3, spans=((0, 11),))], None)
        in_process = store.passages()
    with open_store() as store:
        for passages in (in_process, store.passages()):
            assert passages.owner.tolist() == [ids[0]] * 3 + [ids[2]]
            assert passages.position.tolist() == [0, 1, 2, 0]
            assert passages.spans.tolist() == [[0, 4], [5, 9], [10, 12], [0, 11]]
            expected = np.vstack([unit(long_memory(1).passage_vectors), unit(long_memory(3, spans=((0, 11),)).passage_vectors)])
            assert passages.vectors.dtype == np.float32 and np.allclose(passages.vectors, expected, atol=1e-6)
            assert np.allclose(np.linalg.norm(passages.vectors, axis=1), 1.0, atol=1e-6)
        record = store.get([ids[0]])[ids[0]]
        assert [record.text[a:b] for a, b in store.passages().of([ids[0]]).spans.tolist()] == ["full", "text", "1"]
        assert len(store.passages().of([ids[1]])) == 0
        rows = [row for batch in store.read_table("passages") for row in batch]
        assert [row[:4] for row in rows] == [(ids[0], 0, 0, 4), (ids[0], 1, 5, 9), (ids[0], 2, 10, 12), (ids[2], 0, 0, 11)]
        assert np.array_equal(rows[0][4], long_memory(1).passage_vectors[0])  # the table keeps them as made


def test_passages_written_after_the_mirror_was_loaded_join_it(open_store):
    store = open_store()
    first = store.insert([long_memory(1)], None)
    assert store.passages().owner.tolist() == first * 3
    kept = store.passages()
    second = store.insert([memory(2), long_memory(3)], None)
    assert store.passages().owner.tolist() == first * 3 + [second[1]] * 3
    assert kept.owner.tolist() == first * 3  # what was handed out before stays as it was


def test_a_failing_batch_writes_no_passages(open_store):
    store = open_store()
    bad = long_memory(3)
    bad.text = None  # NOT NULL violation after the batch's first memory
    with pytest.raises(Exception):
        store.insert([long_memory(2), bad], None)
    assert len(store.passages()) == 0
    assert [row for batch in store.read_table("passages") for row in batch] == []


def test_passages_without_their_vectors_are_refused_before_anything_is_written(open_store):
    store = open_store()
    bad = long_memory(1)
    bad.passage_vectors = bad.passage_vectors[:2]
    with pytest.raises(ValueError, match="3 passages and 2 passage vectors"):
        store.insert([memory(2), bad], AuditEvent(action="write", actor="t"))
    assert store.count() == 0 and len(store.passages()) == 0


def test_forget_takes_a_memorys_passages_and_leaves_the_others(open_store):
    with open_store() as store:
        ids = store.insert([long_memory(1), long_memory(2)], None)
        store.passages()  # the mirror loaded: the forget must take them out of it too
        store.forget(ids[0], AuditEvent(action="forget", actor="t", memory_id=ids[0]))
        assert store.passages().owner.tolist() == [ids[1]] * 3
    with open_store() as store:
        assert store.passages().owner.tolist() == [ids[1]] * 3
        assert [row[0] for batch in store.read_table("passages") for row in batch] == [ids[1]] * 3
