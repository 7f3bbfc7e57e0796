"""Stage 2 of a search: the evidence that makes S, and the candidates' order by it.

Given the k candidates' cosines (and any exclusion penalty), the lexical
evidence of each candidate's summary (BM25, ``lodviz.lexical``, counted by the
store) is fused with the cosine into S (``scoring.fuse``, docs/contract.md);
the candidates are then ranked by S less the penalty. Handed the store; reads
nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lodviz import lexical as lex
from lodviz import scoring
from lodviz.records import Columns
from lodviz.store.base import Store


@dataclass(frozen=True)
class Candidates:
    """A query's candidates, most relevant first (rows of the store's snapshot)."""

    rows: np.ndarray
    cosine: np.ndarray
    lexical: np.ndarray
    similarity: np.ndarray  # S = fuse(cos, lex)
    penalty: np.ndarray | None


def lexical(store: Store, query: str, state: Columns, rows: np.ndarray) -> np.ndarray:
    """BM25 evidence of each candidate's summary for ``query`` (zeros for a query with no terms)."""
    wanted = lex.query_terms(query)
    if not wanted or not len(rows):
        return np.zeros(len(rows), dtype=np.float64)
    # The store counts them (a DuckDB store keeps every summary's terms once warmed).
    tf, lengths = store.term_counts(state.ids[np.asarray(rows, dtype=np.int64)], wanted)
    return lex.bm25(tf, lengths)


def weigh(
    store: Store,
    query: str,
    state: Columns,
    rows: np.ndarray,
    cos: np.ndarray,
    penalty: np.ndarray | None,
    lexical_weight: float,
) -> Candidates:
    """The candidates ``rows`` (with their cosines ``cos``) with S, ranked by S less any penalty."""
    evidence = lexical(store, query, state, rows) if lexical_weight > 0 else np.zeros(len(rows))
    similarity = scoring.fuse(cos, evidence, lexical_weight)
    relevance = similarity - penalty if penalty is not None else similarity
    order = np.argsort(-relevance, kind="stable")
    return Candidates(
        rows=np.asarray(rows, dtype=np.int64)[order],
        cosine=cos[order],
        lexical=evidence[order],
        similarity=similarity[order],
        penalty=penalty[order] if penalty is not None else None,
    )


__all__ = ["Candidates", "lexical", "weigh"]
