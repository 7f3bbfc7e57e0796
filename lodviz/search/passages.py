"""Passage evidence: which part of a long memory a query is near, and the excerpt the agent reads of it.

A long memory is kept whole and as passages with their own embeddings
(``lodviz.passages``; the store keeps them, ``Store.passages``). Under a query:

- each passage of a candidate gets its own S, from its cosine and its lexical
  evidence (BM25 with the candidates' passages as the corpus, normalised as a
  memory's), fused as a memory's are (``scoring.fuse``); a relative scaling
  read more on documents but less on turns, sessions and the mixed store
  (docs/retrieval.md);
- a long memory's S is the best of its own and its best passage's: a memory
  whose one relevant paragraph is buried is as near as that paragraph;
- at SUMMARY the memory comes back as its headline plus its passages nearest
  the query, verbatim and in order, as many as fit in the summary's share of
  its length (at least the nearest one): ``choose``, then
  ``lodviz.passages.excerpt``.

Pure: arrays in, arrays out; the search stages hand it what they read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from lodviz import lexical as lex
from lodviz import scoring


@dataclass(frozen=True)
class Near:
    """The passages of a search's candidates, with their evidence; rows in the store's passage order.

    ``owner`` is each passage's memory id, ``spans`` its offsets in that
    memory's full text, ``similarity`` its S (``cosine`` fused with ``lexical``);
    ``full`` the full texts of the memories they belong to (read once, for the
    excerpts written from them).
    """

    owner: np.ndarray
    spans: np.ndarray
    cosine: np.ndarray
    lexical: np.ndarray
    similarity: np.ndarray
    full: Mapping[int, str] = field(default_factory=dict)
    #: Each passage's S as its memory's second passage: what it adds to the memory's best one (``added``);
    #: the best passage's own S for the best. None: its S.
    later: np.ndarray | None = None

    @classmethod
    def none(cls) -> Near:
        empty = np.zeros(0, dtype=np.float64)
        return cls(np.zeros(0, dtype=np.int64), np.zeros((0, 2), dtype=np.int64), empty, empty, empty)

    def __len__(self) -> int:
        return len(self.owner)

    def of(self, memory_id: int) -> np.ndarray:
        """The rows of ``memory_id``'s passages, in the memory's order."""
        return np.flatnonzero(self.owner == memory_id)


def weigh(
    query: str,
    owner: np.ndarray,
    spans: np.ndarray,
    cosine: np.ndarray,
    texts: Sequence[str],
    lexical_weight: float,
    full: Mapping[int, str] | None = None,
) -> Near:
    """S of each passage: its ``cosine`` fused with BM25 of ``query`` over ``texts`` (the passages' own)."""
    wanted = lex.query_terms(query)
    owner = np.asarray(owner, dtype=np.int64)
    cosine = np.asarray(cosine, dtype=np.float64)
    later = None
    if lexical_weight > 0 and wanted and len(texts):
        tf, lengths = lex.counts(wanted, texts)
        parts, most = lex.bm25_terms(tf, lengths)
        evidence = lex.normalised(parts.sum(axis=0), float(most.sum()))
        similarity = scoring.fuse(cosine, evidence, lexical_weight)
        later = added(owner, cosine, similarity, parts, most, lexical_weight)
    else:
        evidence = np.zeros(len(texts), dtype=np.float64)
        similarity = scoring.fuse(cosine, evidence, lexical_weight)
    return Near(
        owner=owner,
        spans=np.asarray(spans, dtype=np.int64).reshape(-1, 2),
        cosine=cosine,
        lexical=evidence,
        similarity=similarity,
        full=full or {},
        later=later,
    )


#: A later passage that holds none of the query terms its memory's best passage lacks queues at most this
#: much of S behind its own: it adds nothing the agent can search for (chosen in docs/retrieval.md).
NOTHING_NEW = 0.02


def added(
    owner: np.ndarray, cosine: np.ndarray, similarity: np.ndarray, parts: np.ndarray, most: np.ndarray, lexical_weight: float
) -> np.ndarray:
    """Each passage's S as a later passage of its memory: what it adds to the memory's best passage.

    That is its cosine fused with the lexical evidence of the query terms the
    best passage does not hold (normalised over those terms alone), and at
    least its own S less ``NOTHING_NEW``; never more than the best's S. A
    document whose opening names the query's subject ("Orchid CRM:
    permissions") has said that once its best passage is in; the passage that
    names the user the query also asks about ("Chloe Aziz") adds what the
    agent needs, one more on the subject adds little. ``parts`` and ``most``
    are ``lexical.bm25_terms`` of the passages.
    """
    if not len(owner):
        return similarity.copy()
    order = np.lexsort((-similarity, owner))
    starts = np.r_[True, owner[order][1:] != owner[order][:-1]]
    best = np.empty(len(owner), dtype=np.int64)
    best[order] = order[np.flatnonzero(starts)[np.cumsum(starts) - 1]]  # each passage's memory's best passage
    missing = parts[:, best] <= 0  # (terms, passages): query terms the best passage does not hold
    room = (most[:, None] * missing).sum(axis=0)
    score = (parts * missing).sum(axis=0)
    novel = lex.normalised(score, room)
    out = np.maximum(scoring.fuse(cosine, novel, lexical_weight), similarity - NOTHING_NEW)
    out = np.minimum(out, similarity[best])
    out[best] = similarity[best]
    return out


def best(near: Near, ids: np.ndarray) -> np.ndarray:
    """For each memory of ``ids``, the S of its best passage (0 for a memory without passages)."""
    ids = np.asarray(ids, dtype=np.int64)
    out = np.zeros(len(ids), dtype=np.float64)
    if not len(near) or not len(ids):
        return out
    order = np.argsort(ids, kind="stable")
    at = np.searchsorted(ids[order], near.owner)
    at = np.clip(at, 0, len(ids) - 1)
    hit = ids[order][at] == near.owner
    np.maximum.at(out, order[at[hit]], near.similarity[hit])
    return out


def choose(words: np.ndarray, similarity: np.ndarray, share: int) -> list[int]:
    """The passages an excerpt holds: nearest first while their words stay within ``share``; at least one.

    ``words`` and ``similarity`` are one memory's passages' lengths and S.
    Returns positions in the memory's order.
    """
    if not len(words):
        return []
    order = np.argsort(-np.asarray(similarity, dtype=np.float64), kind="stable")
    chosen = [int(order[0])]
    used = int(words[order[0]])
    for i in order[1:].tolist():
        if used + int(words[i]) <= share:
            chosen.append(i)
            used += int(words[i])
    return sorted(chosen)


__all__ = ["Near", "best", "choose", "weigh"]
