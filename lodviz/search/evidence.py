"""Stage 2 of a search: the evidence that makes S, and the candidates' order by it.

Given the k candidates' cosines (and any exclusion penalty), the lexical
evidence of each candidate's summary (BM25, ``lodviz.lexical``, counted by the
store) is fused with the cosine into S (``scoring.fuse``, docs/contract.md).
A long memory's passages weigh in too (``search.passages``): each passage's
cosine and its BM25 among the candidates' passages make its own S, and a
memory's S is the best of its own and its best passage's. The candidates are
then ranked by S less the penalty. Handed the store; reads nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lodviz import lexical as lex
from lodviz import scoring
from lodviz.records import Columns
from lodviz.scoring import Tier
from lodviz.search import passages
from lodviz.search.passages import Near
from lodviz.store.base import Store


@dataclass(frozen=True)
class Candidates:
    """A query's candidates, most relevant first (rows of the store's snapshot)."""

    rows: np.ndarray
    cosine: np.ndarray
    lexical: np.ndarray
    similarity: np.ndarray  # S = fuse(cos, lex), or a long memory's best passage's where higher
    penalty: np.ndarray | None
    near: Near = field(default_factory=Near.none)  # the candidates' passages, with their evidence


def lexical(store: Store, query: str, state: Columns, rows: np.ndarray) -> np.ndarray:
    """BM25 evidence of each candidate's summary for ``query`` (zeros for a query with no terms)."""
    wanted = lex.query_terms(query)
    if not wanted or not len(rows):
        return np.zeros(len(rows), dtype=np.float64)
    # The store counts them (a DuckDB store keeps every summary's terms once warmed).
    tf, lengths = store.term_counts(state.ids[np.asarray(rows, dtype=np.int64)], wanted)
    return lex.bm25(tf, lengths)


def near(store: Store, query: str, qvec: np.ndarray, ids: np.ndarray, lexical_weight: float) -> Near:
    """The passages of the memories ``ids`` with their S for ``query`` (none if no memory of them is long)."""
    kept = store.passages().of(ids)
    if not len(kept):
        return Near.none()
    owners = np.unique(kept.owner)
    found = store.contents(owners.tolist(), [int(Tier.FULL)] * len(owners))
    full = {int(m): text for m, (text, _) in found.items()}
    texts = [full[m][a:b] for m, (a, b) in zip(kept.owner.tolist(), kept.spans.tolist())]
    cosine = np.maximum(kept.vectors @ np.asarray(qvec, dtype=np.float32), 0.0)
    return passages.weigh(query, kept.owner, kept.spans, cosine, texts, lexical_weight, full)


def weigh(
    store: Store,
    query: str,
    state: Columns,
    rows: np.ndarray,
    cos: np.ndarray,
    penalty: np.ndarray | None,
    lexical_weight: float,
    qvec: np.ndarray | None = None,
) -> Candidates:
    """The candidates ``rows`` (with their cosines ``cos``) with S, ranked by S less any penalty.

    With the query's vector ``qvec``, long memories' passages weigh in.
    """
    evidence = lexical(store, query, state, rows) if lexical_weight > 0 else np.zeros(len(rows))
    similarity = scoring.fuse(cos, evidence, lexical_weight)
    found = Near.none() if qvec is None or not len(rows) else near(
        store, query, qvec, state.ids[np.asarray(rows, dtype=np.int64)], lexical_weight
    )
    if len(found):
        similarity = np.maximum(similarity, passages.best(found, state.ids[np.asarray(rows, dtype=np.int64)]))
    relevance = similarity - penalty if penalty is not None else similarity
    order = np.argsort(-relevance, kind="stable")
    return Candidates(
        rows=np.asarray(rows, dtype=np.int64)[order],
        cosine=cos[order],
        lexical=evidence[order],
        similarity=similarity[order],
        penalty=penalty[order] if penalty is not None else None,
        near=found,
    )


__all__ = ["Candidates", "lexical", "near", "weigh"]
