"""A DuckDB store's inverted-file index: chosen per store, searched, kept beside it, never used when stale."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lodviz import ivf
from lodviz.errors import InvalidParameters
from lodviz.ivf import InvertedLists
from lodviz.records import AuditEvent
from lodviz.store import index_file
from lodviz.store.duckdb import DuckDBStore
from tests.store.test_store import memory

N = 3000
DIM = 16
CLUSTERS = 30


def vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(99).standard_normal((CLUSTERS, DIM)).astype(np.float32)
    rows = centres[rng.integers(0, CLUSTERS, n)] + 0.4 * rng.standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def rows(count: int, seed: int = 0, start: int = 0) -> list:
    found = vectors(count, seed)
    return [
        replace(memory(i), embedding=found[i - start], content_hash=f"hash-{seed}-{i}", agent_id=("agent-a" if i % 5 else "agent-b"))
        for i in range(start, start + count)
    ]


@pytest.fixture(autouse=True)
def small_stores_use_the_index(monkeypatch):
    monkeypatch.setattr(DuckDBStore, "INDEX_FROM", 500)
    monkeypatch.setattr(DuckDBStore, "MATRIX_FILE_FROM", 100)


def build(path, seed: int = 0, index: str = "ivf") -> None:
    with DuckDBStore(path) as store:
        store.insert(rows(N, seed), None)
        store.set_vector_index(index)
        store.warm()


def built(tmp_path, index: str = "ivf") -> Path:
    """A store of ``N`` clustered memories set to ``index``, warmed once (its index kept beside it)."""
    path = tmp_path / "s.duckdb"
    build(path, index=index)
    return path


@contextmanager
def warmed(path: Path) -> Iterator[DuckDBStore]:
    with DuckDBStore(path) as store:
        store.warm()
        yield store


def nearest(store: DuckDBStore, query: np.ndarray, k: int = 100, agent: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    state, matrix = store.snapshot()
    found, sims = store.nearest(query, k, state.visible_to(agent), matrix)
    return state.ids[found], sims


def exact(store: DuckDBStore, query: np.ndarray, k: int = 100, agent: str | None = None) -> np.ndarray:
    state, matrix = store.snapshot()
    sims = np.where(state.visible_to(agent), matrix @ query, -np.inf)
    return state.ids[np.argsort(-sims, kind="stable")[:k]]


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.isin(truth, found).mean())


def queries(count: int = 20) -> np.ndarray:
    return vectors(count, seed=7)


def test_a_store_set_to_ivf_searches_its_index_and_finds_what_a_scan_finds(tmp_path):
    path = built(tmp_path)
    with warmed(path) as store:
        got = []
        for q in queries():
            ids, sims = nearest(store, q)
            assert store.last_nearest == "ivf"
            got.append(recall(ids, exact(store, q)))
            state, matrix = store.snapshot()
            np.testing.assert_allclose(sims, np.maximum(matrix[state.rows_of(ids.tolist())] @ q, 0), atol=1e-6)
        assert np.mean(got) >= 0.98


def test_an_exact_store_scans(tmp_path):
    path = tmp_path / "s.duckdb"
    build(path, index="exact")
    with DuckDBStore(path) as store:
        store.warm()
        nearest(store, queries(1)[0])
        assert store.last_nearest == "scan"
        assert store.held_index() is None
    assert not index_file.path_for(path).exists()


def test_the_next_open_reads_the_kept_index_instead_of_building_one(tmp_path, monkeypatch):
    path = tmp_path / "s.duckdb"
    build(path)
    assert index_file.path_for(path).exists()

    def no_build(*args, **kwargs):
        raise AssertionError("the index was built again")

    monkeypatch.setattr(InvertedLists, "build", classmethod(no_build))
    with DuckDBStore(path) as store:
        store.warm()
        q = queries(1)[0]
        ids, _ = nearest(store, q)
        assert store.last_nearest == "ivf"
        assert recall(ids, exact(store, q)) >= 0.9


def test_a_kept_index_of_other_rows_is_built_again_and_never_used(tmp_path, monkeypatch):
    mine, theirs = tmp_path / "mine.duckdb", tmp_path / "theirs.duckdb"
    build(mine, seed=0)
    with DuckDBStore(theirs) as store:  # other vectors and one memory more: other ids
        store.insert(rows(N + 1, seed=3), None)
        store.set_vector_index("ivf")
    shutil.copy(index_file.path_for(mine), index_file.path_for(theirs))
    built = []
    real = InvertedLists.build.__func__

    def counted(cls, *args, **kwargs):
        built.append(1)
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(InvertedLists, "build", classmethod(counted))
    with DuckDBStore(theirs) as store:
        store.warm()
        assert built == [1]
        assert store.held_index().covers == N + 1
        q = queries(1)[0]
        ids, _ = nearest(store, q)
        assert recall(ids, exact(store, q)) >= 0.9


def test_a_damaged_index_file_is_built_again(tmp_path):
    path = tmp_path / "s.duckdb"
    build(path)
    index_file.path_for(path).write_bytes(b"not an index")
    with DuckDBStore(path) as store:
        store.warm()
        assert store.held_index() is not None
        nearest(store, queries(1)[0])
        assert store.last_nearest == "ivf"


def test_memories_written_after_the_index_are_found(tmp_path):
    path = built(tmp_path)
    with warmed(path) as store:
        q = queries(1)[0]
        (new_id,) = store.insert([replace(memory(N + 10), embedding=q, content_hash="new")], None)
        ids, sims = nearest(store, q)
        assert store.last_nearest == "ivf"
        assert ids[0] == new_id and sims[0] == pytest.approx(1.0, abs=1e-6)


def test_an_index_outgrown_by_new_memories_is_built_again_on_warm_up(tmp_path):
    path = built(tmp_path)
    with warmed(path) as store:
        store.insert(rows(N // 2, seed=5, start=N + 100), None)
        assert store.build_index().covers == N + N // 2


def test_a_forgotten_memory_is_not_found_and_its_group_is_centred_without_it(tmp_path):
    path = built(tmp_path)
    with warmed(path) as store:
        state, matrix = store.snapshot()
        target = int(state.ids[42])
        q = matrix[42].copy()
        store.forget(target, AuditEvent(action="forget", actor="test"))
        ids, _ = nearest(store, q)
        assert target not in ids.tolist()
        index = store.held_index()
        at = index.position[42]
        group = int(np.searchsorted(index.offsets, at, side="right") - 1)
    with np.load(index_file.path_for(path)) as kept:
        centroid = kept["centroids"][group]
        order = kept["order"]
    with DuckDBStore(path) as store:
        _, matrix = store.snapshot()
        members = matrix[order[index.offsets[group] : index.offsets[group + 1]]].sum(axis=0)
    np.testing.assert_allclose(centroid, members / np.linalg.norm(members), atol=1e-5)


def test_an_agent_who_sees_few_memories_gets_an_exact_scan(tmp_path, monkeypatch):
    monkeypatch.setattr("lodviz.matrix.MIN_VISIBLE_SHARE", 0.5)  # agent-b sees a fifth
    path = built(tmp_path)
    with warmed(path) as store:
        q = queries(1)[0]
        ids, _ = nearest(store, q, agent="agent-b")
        assert store.last_nearest == "scan"
        assert ids.tolist() == exact(store, q, agent="agent-b").tolist()


def test_an_agent_who_sees_part_of_the_store_gets_only_what_it_may_see(tmp_path):
    path = built(tmp_path)
    with warmed(path) as store:
        q = queries(1)[0]
        ids, _ = nearest(store, q, agent="agent-b")
        assert store.last_nearest == "ivf"
        state, _ = store.snapshot()
        assert state.visible_to("agent-b")[state.rows_of(ids.tolist())].all()
        assert recall(ids, exact(store, q, agent="agent-b")) >= 0.9


def test_choosing_exact_drops_the_index_and_its_file(tmp_path):
    path = built(tmp_path)
    with warmed(path) as store:
        store.set_vector_index("exact")
        nearest(store, queries(1)[0])
        assert store.last_nearest == "scan"
    assert not index_file.path_for(path).exists()
    with DuckDBStore(path) as store:
        assert store.vector_index() == "exact"


def test_an_unknown_index_is_refused_in_words(tmp_path):
    with DuckDBStore(tmp_path / "s.duckdb") as store:
        with pytest.raises(InvalidParameters, match="exact, ivf"):
            store.set_vector_index("hnsw")
        assert store.vector_index() == "exact"


def test_a_store_closing_stops_a_build(tmp_path):
    path = tmp_path / "s.duckdb"
    build(path, index="exact")
    store = DuckDBStore(path)
    store.set_vector_index("ivf")
    store.snapshot()
    store._closing.set()  # what close() does first
    assert store.build_index() is None and store.held_index() is None
    store.close()


def test_a_save_cut_short_leaves_the_kept_index_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "s.duckdb"
    build(path)
    kept = index_file.path_for(path)
    before = kept.read_bytes()
    with DuckDBStore(path) as store:
        store.warm()
        index = store.held_index()
        ids = store.snapshot()[0].ids

    def cut(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", cut)
    with pytest.raises(OSError):
        index_file.save(kept, index, ids)
    assert kept.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_write_that_outgrows_the_index_has_it_built_again_in_the_background(tmp_path):
    path = built(tmp_path)
    with warmed(path) as store:
        store.insert(rows(N // 2, seed=5, start=N + 100), None)
        store._index_thread.join(60)
        assert store.held_index().covers == N + N // 2
        q = vectors(1, seed=5)[0]
        nearest(store, q)
        assert store.last_nearest == "ivf"


def test_a_write_within_the_slack_keeps_the_index(tmp_path):
    path = built(tmp_path)
    with warmed(path) as store:
        held = store.held_index()
        store.insert(rows(10, seed=5, start=N + 100), None)
        assert store._index_thread is None and store.held_index() is held


def test_every_centroid_is_the_mean_of_its_group(tmp_path):
    path = built(tmp_path)
    with warmed(path) as store:
        index = store.held_index()
        for g in range(index.nlist):
            members = index.rows[index.offsets[g] : index.offsets[g + 1]].sum(axis=0)
            want = members / np.linalg.norm(members) if np.linalg.norm(members) > 0 else members
            np.testing.assert_allclose(index.centroids[g], want, atol=1e-5)


def test_an_open_after_a_forget_the_file_missed_recentres_and_rewrites_it(tmp_path):
    path = tmp_path / "s.duckdb"
    build(path)
    kept = index_file.path_for(path)
    stale = kept.read_bytes()  # the file as it was before the forget: a crash came before its rewrite
    with DuckDBStore(path) as store:
        store.warm()
        store.forget(int(store.snapshot()[0].ids[42]), AuditEvent(action="forget", actor="test"))
    kept.write_bytes(stale)
    with DuckDBStore(path) as store:
        store.warm()
        _, matrix = store.snapshot()
        assert not matrix[42].any()
    with np.load(kept) as data:
        centroids, order, offsets = data["centroids"], data["order"], data["offsets"]
    grouped = matrix[order]
    group = int(np.searchsorted(offsets, np.flatnonzero(order == 42)[0], side="right") - 1)
    members = grouped[offsets[group] : offsets[group + 1]].sum(axis=0)
    np.testing.assert_allclose(centroids[group], members / np.linalg.norm(members), atol=1e-5)
    assert kept.read_bytes() != stale


def test_an_index_file_of_other_ids_is_built_again(tmp_path, monkeypatch):
    mine, theirs = tmp_path / "mine.duckdb", tmp_path / "theirs.duckdb"
    build(mine)
    with DuckDBStore(theirs) as store:  # the same vectors under other ids
        store.insert(rows(5, seed=9, start=90_000), None)
        store.insert(rows(N), None)
        store.set_vector_index("ivf")
    shutil.copy(index_file.path_for(mine), index_file.path_for(theirs))
    assert index_file.load(index_file.path_for(theirs), np.zeros((N + 5, DIM), np.float32), np.arange(10, N + 15)) is None
    with DuckDBStore(theirs) as store:
        store.warm()
        assert store.held_index().covers == N + 5


def test_choosing_exact_while_an_index_is_built_is_not_undone(tmp_path, monkeypatch):
    path = tmp_path / "s.duckdb"
    build(path, index="exact")
    store = DuckDBStore(path)
    store.set_vector_index("ivf")
    store.snapshot()
    real = InvertedLists.build.__func__

    def meanwhile(cls, *args, **kwargs):
        built = real(cls, *args, **kwargs)
        store.set_vector_index("exact")  # another caller, while this build ran outside the lock
        return built

    monkeypatch.setattr(InvertedLists, "build", classmethod(meanwhile))
    assert store.build_index() is None
    assert store.held_index() is None and not index_file.path_for(path).exists()
    nearest(store, queries(1)[0])
    assert store.last_nearest == "scan"
    store.close()


def test_closing_a_store_stops_a_rebuild_running_in_the_background(tmp_path, monkeypatch):
    path = tmp_path / "s.duckdb"
    build(path)
    store = DuckDBStore(path)
    store.warm()
    started, steps = threading.Event(), []
    real_assign = ivf.assign

    def slow_assign(rows, centroids, stop=ivf._never):
        started.set()
        steps.append(1)
        time.sleep(0.05)
        return real_assign(rows, centroids, stop)

    monkeypatch.setattr(ivf, "assign", slow_assign)
    store.insert(rows(N // 2, seed=5, start=N + 100), None)
    assert started.wait(30)
    thread = store._index_thread
    store.close()
    assert not thread.is_alive()
    assert store.held_index() is None or store.held_index().covers == N  # the rebuild was not taken


def test_a_store_set_to_ivf_gets_its_index_once_a_write_takes_it_past_the_size_it_is_used_from(tmp_path, monkeypatch):
    monkeypatch.setattr(DuckDBStore, "INDEX_FROM", N + 200)
    path = built(tmp_path)
    with warmed(path) as store:
        assert store.held_index() is None
        store.insert(rows(500, seed=5, start=N + 100), None)
        store._index_thread.join(60)
        assert store.held_index().covers == N + 500
