"""An inverted-file index over a store's unit matrix: a search that scores a few thousand of a million rows.

The rows are grouped by the nearest of ``nlist`` centroids (spherical
k-means on a sample of the rows), and each group is copied side by side in
float32, so a search scores the rows of the ``nprobe`` groups whose
centroids lie nearest the query, exactly, and nothing else. S of every
answer is the exact cosine; what is approximate is which rows are scored
(the recall of the true k nearest). ``nprobe`` is not guessed: ``build``
measures it, as the smallest that finds ``target`` of the exact top k, on
average, for queries drawn from the rows themselves (a memory's neighbours
are what an agent's query near it asks for), and keeps what it measured.

Rows added after the build are not in any group: the caller scores them
exactly (``covers`` says how many rows the index holds). A row changed in
place (a forgotten memory's vector, zeroed) is changed in its group too
(``update``), keeping S exact; it stays in the group it was in.

Pure numpy (matrices in, arrays out); no I/O, no locks: its owner
(``lodviz.matrix.UnitRows``) decides when to build, use and drop it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from lodviz import selection
from lodviz.scoring import normalize_rows

#: Mean recall of the exact top k that an index is built to reach.
TARGET_RECALL = 0.99
#: What ``build`` asks of its own sample, above the target: 48 queries measured 0.991 where 100 others
#: measured 0.984 (1M synthetic rows); 128 queries and this margin keep a fresh set at the target.
CALIBRATION_MARGIN = 0.005
#: The k that recall is measured at: the concept's wide candidate set.
CALIBRATION_K = 1000
#: Queries drawn from the rows to measure recall on.
CALIBRATION_QUERIES = 128
#: Queries scored against every row at once while the exact answers are found.
_QUERY_BLOCK = 16
#: Rows of the sample the centroids are trained on, per centroid.
SAMPLE_PER_LIST = 32
#: Lloyd iterations of the k-means.
ITERATIONS = 6
#: Rows scored at a time when every row is assigned to its centroid (a 16 MB block of scores at 4,000 lists).
_BLOCK = 1024
#: A search seeing less than this share of the rows scans them all instead (an index finds too few of them).
MIN_VISIBLE_SHARE = 0.125


class Stopped(Exception):
    """A build was asked to stop (its store is closing) before it ended."""


def _never() -> bool:
    return False


def list_count(n: int) -> int:
    """How many groups for ``n`` rows: about 4 sqrt(n), FAISS's usual choice (4,000 at 1M)."""
    return int(min(max(16, round(4 * math.sqrt(max(n, 1)))), 65_536, max(1, n // 8)))


def assign(rows: np.ndarray, centroids: np.ndarray, stop: Callable[[], bool] = _never) -> np.ndarray:
    """The index of each row's nearest centroid (largest inner product); ``Stopped`` once ``stop()``."""
    out = np.empty(len(rows), dtype=np.int64)
    ct = np.ascontiguousarray(centroids.T)
    for start in range(0, len(rows), _BLOCK):
        if stop():
            raise Stopped
        block = rows[start : start + _BLOCK]
        out[start : start + len(block)] = np.argmax(block @ ct, axis=1)
    return out


def train(
    rows: np.ndarray, nlist: int, rng: np.random.Generator, iterations: int = ITERATIONS, stop: Callable[[], bool] = _never
) -> np.ndarray:
    """``nlist`` unit centroids from spherical k-means on a sample of ``rows`` (float32)."""
    take = min(len(rows), nlist * SAMPLE_PER_LIST)
    sample = np.ascontiguousarray(rows[np.sort(rng.choice(len(rows), take, replace=False))], dtype=np.float32)
    centroids = sample[rng.choice(take, nlist, replace=False)].copy()
    for _ in range(iterations):
        nearest = assign(sample, centroids, stop)
        counts = np.bincount(nearest, minlength=nlist)
        offsets = np.concatenate([[0], np.cumsum(counts)])
        used = counts > 0
        centroids[used] = centred(sample[np.argsort(nearest, kind="stable")], offsets)[used]  # an empty group keeps its own
    return centroids


@dataclass
class InvertedLists:
    """The groups of the first ``covers`` rows of a matrix, and the ``nprobe`` measured for them."""

    centroids: np.ndarray  # (nlist, dim) float32, unit
    order: np.ndarray  # (covers,) int64: the matrix row at each position of ``rows``
    offsets: np.ndarray  # (nlist + 1,) int64: group g is rows[offsets[g]:offsets[g + 1]]
    rows: np.ndarray  # (covers, dim) float32, C order: the matrix's rows, grouped
    nprobe: int
    recall: float  # the mean recall measured at ``nprobe`` (``build``)
    position: np.ndarray = field(repr=False)  # (covers,) int64: where each matrix row sits in ``rows``

    @property
    def covers(self) -> int:
        return len(self.order)

    @property
    def nlist(self) -> int:
        return len(self.centroids)

    @property
    def nbytes(self) -> int:
        return int(self.rows.nbytes + self.order.nbytes + self.position.nbytes + self.centroids.nbytes + self.offsets.nbytes)

    @classmethod
    def grouped(
        cls, matrix: np.ndarray, centroids: np.ndarray, nprobe: int, recall: float, stop: Callable[[], bool] = _never
    ) -> InvertedLists:
        """The index of ``matrix`` (unit rows) over given centroids: every row assigned and copied into its
        group, and each centroid then made the mean of its group (``centred``)."""
        nearest = assign(matrix, centroids, stop)
        order = np.argsort(nearest, kind="stable").astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(np.bincount(nearest, minlength=len(centroids)))]).astype(np.int64)
        position = np.empty_like(order)
        position[order] = np.arange(len(order), dtype=np.int64)
        rows = grouped_rows(matrix, position, stop)
        return cls(centred(rows, offsets), order, offsets, rows, int(nprobe), float(recall), position)

    @classmethod
    def build(
        cls,
        matrix: np.ndarray,
        *,
        nlist: int | None = None,
        target: float = TARGET_RECALL + CALIBRATION_MARGIN,
        k: int = CALIBRATION_K,
        seed: int = 0,
        stop: Callable[[], bool] = _never,
    ) -> InvertedLists:
        """Train, group and calibrate an index over ``matrix`` (unit rows, any memory order).

        ``nprobe`` is the smallest on a doubling-then-bisected ladder whose mean
        recall of the exact top ``k`` reaches ``target`` for
        ``CALIBRATION_QUERIES`` rows of ``matrix`` taken as queries. Raises
        ``Stopped`` soon after ``stop()`` turns true.
        """
        n = len(matrix)
        if n < 2:
            raise ValueError("an index needs at least two rows")
        rng = np.random.default_rng(seed)
        nlist = list_count(n) if nlist is None else int(min(max(1, nlist), n))
        centroids = _ordered(train(matrix, nlist, rng, stop=stop), rng)
        index = cls.grouped(matrix, centroids, nlist, 1.0, stop)
        queries = np.ascontiguousarray(matrix[np.sort(rng.choice(n, min(n, CALIBRATION_QUERIES), replace=False))])
        k = min(k, n)
        exact = exact_top(matrix, queries, k, stop)

        def recall_at(nprobe: int) -> float:
            if stop():
                raise Stopped
            index.nprobe = nprobe
            return float(np.mean([np.isin(truth, index.search(q, k)[0]).mean() for q, truth in zip(queries, exact)]))

        # Doubling finds a bracket; bisection the smallest nprobe inside it.
        low, high = 0, 1
        while high < nlist and recall_at(high) < target:
            low, high = high, min(nlist, high * 2)
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if recall_at(middle) >= target else (middle, high)
        index.recall = recall_at(high)
        return index

    def _probe_count(self, visible_share: float) -> int:
        # An agent who sees a quarter of the rows needs four times the groups for as many candidates.
        return int(min(self.nlist, math.ceil(self.nprobe / max(visible_share, 1e-9))))

    def search(
        self, query: np.ndarray, k: int, visible: np.ndarray | None = None, seen: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` indexed rows nearest ``query`` (a unit vector) among ``visible`` (a mask over the
        covered rows, or None), and their S (``max(0, cos)``), best first, exact S. ``seen``: the
        mask's count of true rows, if the caller has it (a pass over a million rows).

        Fewer than ``k`` come back when the probed groups hold fewer visible rows.
        """
        q = np.asarray(query, dtype=np.float32)
        if visible is not None and seen is None:
            seen = int(np.count_nonzero(visible))
        share = 1.0 if visible is None or seen is None else seen / max(1, len(visible))
        nprobe = self._probe_count(share)
        near = self.centroids @ q
        groups = np.sort(selection.top_k(near, nprobe, ordered=False))
        # Neighbouring groups lie side by side (``_ordered``): each run of them is one product.
        breaks = np.flatnonzero(np.diff(groups) != 1) + 1
        starts = self.offsets[groups[np.concatenate([[0], breaks])]]
        stops = self.offsets[groups[np.concatenate([breaks - 1, [len(groups) - 1]])] + 1]
        sizes = stops - starts
        total = int(sizes.sum())
        scores = np.empty(total, dtype=np.float32)
        at = 0
        for start, stop in zip(starts.tolist(), stops.tolist()):
            if stop > start:
                np.dot(self.rows[start:stop], q, out=scores[at : at + stop - start])
                at += stop - start
        # The positions of the scored rows in ``rows``: each run's, without a Python list of ranges.
        positions = np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes) + np.arange(total)
        matrix_rows = self.order[positions]
        among = visible[matrix_rows] if visible is not None else None
        best = selection.top_k(scores, k, among=among)
        return matrix_rows[best], np.maximum(scores[best], 0.0)

    def update(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        """Matrix ``rows`` (covered ones) now hold ``vectors``: their copies in the groups too, and the
        centroids of those groups made again from what the groups now hold. Every centroid is its
        group's mean (``grouped``), so none keeps a trace of a forgotten memory's vector after this
        (a group of one would otherwise be that vector)."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        inside = rows < self.covers
        at = self.position[rows[inside]]
        self.rows[at] = np.asarray(vectors, dtype=np.float32).reshape(len(rows), -1)[inside]
        for group in np.unique(np.searchsorted(self.offsets, at, side="right") - 1).tolist():
            start, stop = self.offsets[group], self.offsets[group + 1]
            self.centroids[group] = centred(self.rows[start:stop], np.array([0, stop - start]))[0]


#: Matrix rows read at a time by ``grouped_rows``: a 24 MB block at 384 dimensions.
_GATHER_BLOCK = 16_384


def grouped_rows(matrix: np.ndarray, position: np.ndarray, stop: Callable[[], bool] = _never) -> np.ndarray:
    """The rows of ``matrix`` put where ``position`` says (row i of the matrix to row ``position[i]``), float32.

    Read in order, a block at a time, and written row by row: the store's matrix is held dimension by
    dimension, where gathering rows in group order reads every dimension's column at random (12 s at
    1M rows here, against about 1 s this way).
    """
    out = np.empty((len(position), matrix.shape[1]), dtype=np.float32)
    for start in range(0, len(position), _GATHER_BLOCK):
        if stop():
            raise Stopped
        end = min(start + _GATHER_BLOCK, len(position))
        out[position[start:end]] = np.ascontiguousarray(matrix[start:end], dtype=np.float32)
    return out


def centred(rows: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each group's unit mean (group g: ``rows[offsets[g]:offsets[g + 1]]``); zero for an empty or all-zero group.

    A centroid straight from training is the mean of a sample's rows, some of which may sit in other
    groups: made from its own group, forgetting a row can take that row out of the one centroid it is in.
    """
    sizes = np.diff(offsets)
    out = np.zeros((len(sizes), rows.shape[1]), dtype=np.float32)
    used = sizes > 0
    if used.any():
        # Sums by reduceat (numpy's add.at took seconds on a sample this size). The empty groups'
        # offsets equal the next group's start: skipping them leaves every sum whole.
        out[used] = normalize_rows(np.add.reduceat(rows, offsets[:-1][used], axis=0))
    return out


def _ordered(centroids: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The centroids reordered so that neighbours sit side by side: grouped by a coarse k-means of
    their own (about sqrt(nlist) groups of groups). A query's nearest groups then form a few runs
    of rows, read by a few long products instead of one short one per group."""
    coarse = max(1, int(round(math.sqrt(len(centroids)))))
    if coarse < 2 or len(centroids) < 4:
        return centroids
    parents = assign(centroids, train(centroids, coarse, rng, iterations=4))
    return np.ascontiguousarray(centroids[np.argsort(parents, kind="stable")])


def exact_top(matrix: np.ndarray, queries: np.ndarray, k: int, stop: Callable[[], bool] = _never) -> list[np.ndarray]:
    """The rows of the exact top ``k`` of ``matrix`` for each of ``queries``, a block of queries per pass."""
    found: list[np.ndarray] = []
    for start in range(0, len(queries), _QUERY_BLOCK):
        if stop():
            raise Stopped
        scores = matrix @ np.ascontiguousarray(queries[start : start + _QUERY_BLOCK].T)
        found.extend(selection.top_k(np.ascontiguousarray(scores[:, j]), k, ordered=False) for j in range(scores.shape[1]))
    return found


__all__ = ["InvertedLists", "Stopped", "TARGET_RECALL", "MIN_VISIBLE_SHARE", "assign", "centred", "exact_top", "grouped_rows", "list_count", "train"]
