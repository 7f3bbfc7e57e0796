"""Stage 1 of a search: the query's vector and its k candidates.

The candidates are the k nearest memories the agent may see, by cosine less
the exclusion penalty (``scoring.exclusion_penalty``); the store finds them
(a scan, or its index), and ``evidence`` then weighs and ranks them. What a
slider move asks again (the cosines of every memory, the last candidate sets,
S of everything) is kept here, in small LRUs keyed by what decides them.

Handed the store and the function that embeds a query; imports nothing that uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from lodviz import scoring, selection
from lodviz.cache import LRU
from lodviz.errors import InvalidParameters
from lodviz.records import Columns
from lodviz.search import evidence
from lodviz.search.evidence import Candidates
from lodviz.store.base import Store


class CandidateFinder:
    """The k candidates of a query, and the cosines of every memory, kept for the next ask."""

    def __init__(self, store: Store, embed_query: Callable[[str], np.ndarray]) -> None:
        self._store = store
        self._embed_query = embed_query
        self._similarity_cache: LRU[np.ndarray] = LRU(4)
        self._candidate_cache: LRU[Candidates] = LRU(32)
        self._fused_cache: LRU[tuple[Candidates, scoring.Compact, np.ndarray]] = LRU(4)

    def forget(self) -> None:
        """Drop the kept cosines and candidate sets (a memory's vector was erased)."""
        self._similarity_cache.clear()
        self._candidate_cache.clear()
        self._fused_cache.clear()

    def find(
        self,
        query: str,
        qvec: np.ndarray,
        state: Columns,
        vectors: np.ndarray,
        visible: np.ndarray,
        k: int,
        exclude: Sequence[str] = (),
        exclude_weight: float = 1.0,
        cosine: np.ndarray | None = None,
        *,
        lexical_weight: float,
    ) -> Candidates:
        """A query's k candidates, most relevant first, with cos, lexical evidence, S and any penalty.

        Candidates are the k nearest visible memories by cosine (less the
        exclusion penalty); S = fuse(cos, lex) re-ranks them (``evidence``).
        Kept for the last few queries: a slider move asks again.
        """
        terms = tuple(t.strip() for t in exclude if t and t.strip())
        # Most asks see everything: one pass over the mask instead of packing and hashing it.
        seen = "all" if visible.all() else hash(np.packbits(visible).tobytes())
        key = (query.strip(), terms, exclude_weight, k, lexical_weight, len(vectors), seen)
        return self._candidate_cache.get(
            key, lambda: self.find_now(query, terms, exclude_weight, k, qvec, vectors, visible, state, cosine, lexical_weight)
        )

    def find_now(
        self,
        query: str,
        terms: tuple[str, ...],
        exclude_weight: float,
        k: int,
        qvec: np.ndarray,
        vectors: np.ndarray,
        visible: np.ndarray,
        state: Columns,
        cosine: np.ndarray | None,
        lexical_weight: float,
    ) -> Candidates:
        """``find`` without the cache."""
        penalty = None
        if terms or cosine is not None:
            cos_all = self.similarity_all(query, qvec, vectors, exact=True) if cosine is None else cosine
            penalty_all = self.penalty(terms, vectors, exclude_weight) if terms else None
            ranked = cos_all - penalty_all if penalty_all is not None else cos_all
            rows = selection.top_k(ranked, k, ordered=False, among=None if visible.all() else visible)
            cos = cos_all[rows].astype(np.float64)
            penalty = penalty_all[rows] if penalty_all is not None else None
        else:
            rows, cos = self._store.nearest(qvec, k, visible, vectors)
            cos = np.asarray(cos, dtype=np.float64)
        # A long memory whose one relevant paragraph is buried is found by that paragraph.
        new = np.setdiff1d(self.passage_rows(qvec, state, visible, k), rows)
        if len(new):
            rows = np.concatenate([np.asarray(rows, dtype=np.int64), new])
            cos = np.concatenate([cos, scoring.similarity(qvec, vectors[new]).astype(np.float64)])
            if penalty is not None:
                extra = self.penalty(terms, vectors[new], exclude_weight)
                penalty = np.concatenate([penalty, extra if extra is not None else np.zeros(len(new))])
        return evidence.weigh(self._store, query, state, rows, cos, penalty, lexical_weight, qvec)

    def passage_rows(self, qvec: np.ndarray, state: Columns, visible: np.ndarray, k: int) -> np.ndarray:
        """The rows of ``state`` whose passages are among the ``k`` nearest visible passages to ``qvec``."""
        kept = self._store.passages()
        if not len(kept) or not len(state):
            return np.zeros(0, dtype=np.int64)
        at = np.minimum(np.searchsorted(state.ids, kept.owner), len(state) - 1)
        mine = (state.ids[at] == kept.owner) & visible[at]
        if not mine.any():
            return np.zeros(0, dtype=np.int64)
        # Masked, not indexed: ``kept.vectors[mine]`` would copy every passage's vector on every search.
        cosine = kept.vectors @ np.asarray(qvec, dtype=np.float32)
        best = selection.top_k(cosine, k, ordered=False, among=None if mine.all() else mine)
        return np.unique(at[best]).astype(np.int64)

    def similarity_all(self, query: str, qvec: np.ndarray, vectors: np.ndarray, *, exact: bool = False) -> np.ndarray:
        """The cosine of every stored memory for ``query``, kept for the last few queries.

        The landscape rescores the same query on every slider move. Embeddings
        never change once written and rows are only ever appended, so the row
        count identifies the matrix. The array is shared: it is read-only.
        With a compact matrix it is approximate unless ``exact``.
        """
        approximate = not exact and self._store.approximate

        def make() -> np.ndarray:
            s = self._store.similarities(qvec, vectors) if approximate else scoring.similarity(qvec, vectors)
            s.setflags(write=False)
            return s

        return self._similarity_cache.get((query.strip(), len(vectors), approximate), make)

    def penalty(self, exclude: Sequence[str], vectors: np.ndarray | None, weight: float) -> np.ndarray | None:
        """The exclusion penalty of every row of ``vectors`` for the ``exclude`` topics (None for none)."""
        terms = [t.strip() for t in exclude if t and t.strip()]
        if not terms or vectors is None:
            return None
        if not 0 <= weight <= 1:
            raise InvalidParameters(f"exclude_weight must be between 0 and 1, got {weight}.")
        sims = np.vstack([scoring.similarity(self._embed_query(t), vectors) for t in terms])
        return scoring.exclusion_penalty(sims, weight)

    def fused(self, found: Candidates, cosine: np.ndarray) -> tuple[scoring.Compact, np.ndarray]:
        """S of every memory (the candidates' with their lexical evidence) and the candidates' mask.

        Kept for the last few candidate sets: a slider move asks again with the same query.
        """
        def make() -> tuple[Candidates, scoring.Compact, np.ndarray]:
            s_all = cosine.astype(np.float64)
            s_all[found.rows] = found.similarity
            candidate = np.zeros(len(cosine), dtype=bool)
            candidate[found.rows] = True
            candidate.setflags(write=False)
            return found, scoring.Compact.of(s_all), candidate

        kept, s_all, candidate = self._fused_cache.get((id(found), len(cosine)), make)
        if kept is not found:  # an id reused after the candidates it named were dropped
            kept, s_all, candidate = make()
        return s_all, candidate


__all__ = ["Candidates", "CandidateFinder"]
