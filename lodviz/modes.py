"""The non-semantic modes: which memories a browse returns, and their scores (no query).

Each function picks rows of the store's columns and scores them; the caller
delivers the result (``search.delivery``), so a browse is budgeted, counted
and audited as a search is:

* ``recent``: everything created in a window, newest first, tiered by
  retrieval frequency alone;
* ``unseen``: memories never retrieved (r = 0), newest first, tiered by recency;
* ``sample``: memories drawn at random, weighted towards the lowest D
  ("resurface what is being ignored"), returned as summaries.

Pure: columns and numbers in, rows and scores out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from lodviz import scoring
from lodviz.params import Params
from lodviz.records import Columns


@dataclass(frozen=True)
class Browse:
    """What a mode chose: the rows' columns, their scores, and the order to deliver them in."""

    sub: Columns
    scored: scoring.Scored
    order: np.ndarray


def recent(state: Columns, visible: np.ndarray, start: datetime, end: datetime, limit: int | None, params: Params, when: datetime) -> Browse:
    mask = visible & (state.created_at >= start.timestamp()) & (state.created_at <= end.timestamp())
    rows = np.flatnonzero(mask)
    rows = rows[np.argsort(-state.created_at[rows], kind="stable")]
    if limit is not None:
        rows = rows[:limit]
    sub = state.take(rows)
    t = scoring.age_days(when.timestamp(), sub.created_at, sub.last_retrieved_at)
    return Browse(sub, scoring.score_by_frequency(t, sub.retrieval_count, sub.floor, params), np.arange(len(sub)))


def unseen(state: Columns, visible: np.ndarray, limit: int, params: Params, when: datetime) -> Browse:
    rows = np.flatnonzero(visible & (state.retrieval_count == 0))
    rows = rows[np.argsort(-state.created_at[rows], kind="stable")][:limit]
    sub = state.take(rows)
    t = scoring.age_days(when.timestamp(), sub.created_at, sub.last_retrieved_at)
    return Browse(sub, scoring.score_by_recency(t, sub.retrieval_count, sub.floor, params), np.arange(len(sub)))


def sample(state: Columns, visible: np.ndarray, n: int, seed: int | None, params: Params, when: datetime) -> Browse:
    rows = np.flatnonzero(visible)
    sub_all = state.take(rows)
    t = scoring.age_days(when.timestamp(), sub_all.created_at, sub_all.last_retrieved_at)
    d_all = scoring.decay(t, sub_all.retrieval_count, params.lam)
    take = min(n, len(rows))
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(rows), size=take, replace=False, p=scoring.resurface_weights(d_all)) if take else np.zeros(0, dtype=np.int64)
    sub = sub_all.take(picked)
    d = d_all[picked]
    return Browse(sub, scoring.score_resurfaced(d, sub.floor), np.argsort(d, kind="stable"))


__all__ = ["Browse", "recent", "unseen", "sample"]
