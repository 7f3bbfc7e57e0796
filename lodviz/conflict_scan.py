"""Conflict detection over a whole store, as if every memory had been written in order of its creation.

Ingestion finds a new memory's conflicts as it is written (``ingest.pipeline``).
A store written before the detector changed, or imported out of order, can
have its open candidates found again: ``scan`` takes the memories in order of
creation (id breaks ties) and compares each, as a write would, with its
``conflicts.CANDIDATES`` most similar earlier memories that its agent can see
(whole or by passage, ``conflicts.subject_similarity``), keeping at most
``conflicts.MAX_LINKS`` links per memory. Pure: handed the store's columns,
vectors, passages and a reader of texts; ``ConflictReview.redetect`` writes
what it finds. Quadratic in the store's size (each memory against all earlier
ones, in blocks), so meant for stores of up to some hundred thousand memories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from lodviz import conflicts as rules
from lodviz.records import Columns, ConflictLink, MemoryRecord, Passages

#: Memories compared with the earlier ones at a time.
BLOCK = 256


def scan(
    state: Columns, vectors: np.ndarray, passages: Passages, read: Callable[[Sequence[int]], dict[int, MemoryRecord]]
) -> list[tuple[int, int, float, str]]:
    """(memory id, other id, similarity, reason) of every conflict candidate in the store, the later-written
    memory first; ``vectors`` are ``state``'s unit vectors row for row, ``read`` reads records by id."""
    live = np.flatnonzero(~state.forgotten)
    order = live[np.lexsort((state.ids[live], state.created_at[live]))]
    rank = np.full(len(state), -1, dtype=np.int64)
    rank[order] = np.arange(len(order))
    rows = state.rows_or_missing(passages.owner)
    found: list[tuple[int, int, float, str]] = []
    for block in _blocks(order):
        candidates = _candidates(state, vectors, passages, rows, rank, block)
        wanted = sorted({int(state.ids[r]) for r in block} | {int(state.ids[c]) for cs in candidates for c, _ in cs})
        records = read(wanted)
        links: list[ConflictLink] = []
        for at, (r, cs) in enumerate(zip(block, candidates)):
            me = records.get(int(state.ids[r]))
            others = [(int(state.ids[c]), s) for c, s in cs if int(state.ids[c]) in records]
            if me is None or not others:
                continue
            reasons = rules.judge(rules.Written.of(me), [(rules.Written.of(records[o]), s) for o, s in others])
            links.extend(ConflictLink(at, others[i][0], others[i][1], reason) for i, reason in sorted(reasons.items()))
        for link in rules.strongest(links):
            found.append((int(state.ids[block[link.index]]), link.other, float(link.similarity), link.reason))
    return found


def _blocks(order: np.ndarray) -> Iterator[np.ndarray]:
    for start in range(0, len(order), BLOCK):
        yield order[start : start + BLOCK]


def _candidates(
    state: Columns, vectors: np.ndarray, passages: Passages, rows: np.ndarray, rank: np.ndarray, block: np.ndarray
) -> list[list[tuple[int, float]]]:
    """Per memory of ``block``, its most similar earlier memories its agent can see: (row, similarity)."""
    mine = [passages.vectors[rows == r] for r in block]
    similar = rules.subject_similarity(vectors[block], [p if len(p) else None for p in mine], vectors, passages.vectors[rows >= 0],
                                       rows[rows >= 0])
    out = []
    for i, r in enumerate(block):
        # What a write of this memory would have compared it with: what its agent sees (all, for a shared one).
        visible = state.visible_to(None if state.shared[r] else state.agent_names[state.agent_code[r]])
        earlier = (rank >= 0) & (rank < rank[r]) & visible
        row = np.where(earlier, similar[i], -1.0)
        out.append([(int(j), s) for _, j, s in rules.most_similar(row[None, :])])
    return out


__all__ = ["scan", "BLOCK"]
