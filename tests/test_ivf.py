"""The inverted-file index (``lodviz.ivf``): what it finds, how it measures itself, how it changes in place."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lodviz import ivf
from lodviz.ivf import InvertedLists, exact_top

DIM = 16


def clustered(n: int, clusters: int = 40, seed: int = 0) -> np.ndarray:
    """Unit rows around ``clusters`` centres, like memories around topics."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, DIM)).astype(np.float32)
    rows = centres[rng.integers(0, clusters, n)] + 0.35 * rng.standard_normal((n, DIM)).astype(np.float32)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    """The share of the true nearest that were found."""
    return float(np.isin(truth, found).mean())


@pytest.fixture(scope="module")
def matrix() -> np.ndarray:
    return clustered(6000)


@pytest.fixture(scope="module")
def index(matrix) -> InvertedLists:
    return InvertedLists.build(matrix, k=200)


def test_fresh_queries_find_the_recall_the_build_measured_on_its_own_rows(matrix, index):
    rng = np.random.default_rng(7)
    queries = matrix[rng.choice(len(matrix), 60, replace=False)] + 0.05 * rng.standard_normal((60, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    truth = exact_top(matrix, queries, 200)
    mean = np.mean([recall(index.search(q, 200)[0], t) for q, t in zip(queries, truth)])
    assert index.recall >= ivf.TARGET_RECALL + ivf.CALIBRATION_MARGIN
    assert mean >= ivf.TARGET_RECALL - 0.01
    assert index.nprobe < index.nlist  # it reads part of the store, or it is no index


def test_a_search_gives_the_exact_cosine_of_what_it_finds_best_first(matrix, index):
    q = matrix[17]
    rows, sims = index.search(q, 50)
    np.testing.assert_allclose(sims, np.maximum(matrix[rows] @ q, 0), atol=1e-6)
    assert np.all(np.diff(sims) <= 0)
    assert rows[0] == 17


def test_reading_every_group_is_the_exact_answer(matrix, index):
    every = InvertedLists(index.centroids, index.order, index.offsets, index.rows, index.nlist, 1.0, index.position)
    for q in matrix[:5]:
        rows, _ = every.search(q, 100)
        assert set(rows.tolist()) == set(exact_top(matrix, q[None, :], 100)[0].tolist())


def test_a_build_asked_for_every_neighbour_reads_as_many_groups_as_that_takes():
    rows = clustered(800)
    loose = InvertedLists.build(rows, k=50, nlist=40, target=0.9)
    strict = InvertedLists.build(rows, k=50, nlist=40, target=1.0)
    assert strict.recall == 1.0
    assert loose.nprobe < strict.nprobe <= strict.nlist


def test_only_visible_rows_come_back_and_as_many_as_asked(matrix, index):
    visible = np.random.default_rng(3).random(len(matrix)) < 0.25
    rows, _ = index.search(matrix[5], 200, visible)
    assert visible[rows].all()
    assert len(rows) == 200


def test_a_zeroed_row_is_zero_in_its_group_and_its_group_is_centred_again(matrix):
    index = InvertedLists.build(matrix.copy(), k=100)
    row = 123
    index.update(np.array([row]), np.zeros((1, DIM), dtype=np.float32))
    at = index.position[row]
    assert not index.rows[at].any()
    group = int(np.searchsorted(index.offsets, at, side="right") - 1)
    members = index.rows[index.offsets[group] : index.offsets[group + 1]]
    mean = members.sum(axis=0)
    np.testing.assert_allclose(index.centroids[group], mean / np.linalg.norm(mean), atol=1e-5)


def test_a_group_of_one_forgotten_keeps_no_trace_of_its_row():
    # Rows in the positive orthant of the first dimensions, and one along the last, alone in the
    # group of the centroid placed on it: its centroid would be its vector.
    rows = np.abs(clustered(400))
    rows[:, -1] = 0.0
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    alone = np.zeros((1, DIM), dtype=np.float32)
    alone[0, -1] = 1.0
    rows = np.vstack([rows, alone]).astype(np.float32)
    centroids = np.vstack([rows[:8], alone]).astype(np.float32)
    index = InvertedLists.grouped(rows, centroids, 2, 1.0)
    last = len(rows) - 1
    group = int(np.searchsorted(index.offsets, index.position[last], side="right") - 1)
    assert index.offsets[group + 1] - index.offsets[group] == 1  # alone in its group
    index.update(np.array([last]), np.zeros((1, DIM), dtype=np.float32))
    assert not index.centroids[group].any()


def test_a_build_asked_to_stop_stops():
    calls = iter(range(10**6))
    with pytest.raises(ivf.Stopped):
        InvertedLists.build(clustered(3000), k=50, stop=lambda: next(calls) > 3)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(10, 300), nlist=st.integers(1, 12), k=st.integers(1, 40), seed=st.integers(0, 10_000))
def test_every_group_read_is_an_exact_scan(n, nlist, k, seed):
    rows = clustered(n, clusters=5, seed=seed)
    rng = np.random.default_rng(seed)
    centroids = rows[rng.choice(n, min(nlist, n), replace=False)]
    index = InvertedLists.grouped(rows, centroids, len(centroids), 1.0)
    q = rows[seed % n]
    found, sims = index.search(q, k)
    exact = np.sort(np.maximum(rows @ q, 0))[::-1][: min(k, n)]
    np.testing.assert_allclose(sims, exact, atol=1e-5)
    assert sorted(index.order.tolist()) == list(range(n))  # every row in exactly one group
