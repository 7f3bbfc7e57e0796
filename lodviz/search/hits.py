"""Result items made from the scored columns: one ``Hit`` per memory a result holds.

The last step of a search (``delivery``) and the budget fit (``fit``) build
them here, column by column; nothing here reads the store.
"""

from __future__ import annotations

from datetime import datetime
from itertools import repeat

import numpy as np

from lodviz import budget as budgeting
from lodviz import scoring
from lodviz.params import Params
from lodviz.records import Columns, MemoryRecord
from lodviz.result import Hit
from lodviz.scoring import Tier
from lodviz.times import RowDatetimes, datetimes

#: Tiers and visibilities as object arrays: a result's column of them is one gather.
_TIER_OBJECTS = np.array(tuple(Tier), dtype=object)
_VISIBILITY = np.array(["private", "shared"], dtype=object)
#: ``tuple.__new__(Hit, fields)``: a result item made in C from a row of its columns.
_new_hit = tuple.__new__


def hit_of(record: MemoryRecord, tier: Tier, params: Params, when: datetime) -> Hit:
    """A result item for one memory read on its own (not a search candidate: S is 0)."""
    t = scoring.age_days(
        when.timestamp(),
        np.array([record.created_at.timestamp()]),
        np.array([record.last_retrieved_at.timestamp() if record.last_retrieved_at else np.nan]),
    )
    d = float(scoring.decay(t, np.array([record.retrieval_count]), params.lam)[0])
    content = record.text_at(tier)
    return Hit(
        id=record.id,
        tier=tier,
        content=content,
        similarity=0.0,
        decay=d,
        score=(1.0 - params.alpha) * d,
        penalty=0.0,
        retrieval_count=record.retrieval_count,
        last_retrieved_at=record.last_retrieved_at,
        created_at=record.created_at,
        agent_id=record.agent_id,
        visibility=record.visibility,
        kind=record.kind,
        source=record.source,
        floor=Tier(record.floor),
        tokens=budgeting.estimate_tokens(content),
        whole=content == record.text,
    )


def lengths(sub: Columns, rows: np.ndarray, tiers: np.ndarray) -> np.ndarray:
    """The stored length of each row's text at its tier."""
    if not len(rows):
        return np.zeros(0, dtype=np.int64)
    # Each tier's rows gathered from its own column (np.choose would gather all three for every row).
    out = sub.len_headline[rows].astype(np.int64)
    summary, full = np.flatnonzero(tiers == 2), np.flatnonzero(tiers >= 3)
    out[summary] = sub.len_summary[rows[summary]]
    out[full] = sub.len_text[rows[full]]
    return out


def hits(
    sub: Columns,
    rows: np.ndarray,
    tiers: np.ndarray,
    texts: list[str],
    sources: list[str | None],
    scored: scoring.Scored,
    tokens: np.ndarray | None = None,
    *,
    origin: np.ndarray | None = None,
    row_times: tuple[RowDatetimes, RowDatetimes] | None = None,
) -> list[Hit]:
    """Result items for ``rows`` of the scored state, column by column, with their texts and sources in order.

    A search builds up to k (1000) of these; reading each column once as a list
    costs a fraction of indexing numpy scalars item by item. ``retrieval_count``
    is the count before this search. ``tokens`` are the items' counted line
    tokens where known, else an estimate from the text's stored length.
    ``origin``: the rows of the store's state that ``sub`` holds, by which
    ``row_times`` (last retrieval, creation) keep the items' datetimes.
    """
    names = sub.agent_names
    stored = lengths(sub, rows, tiers)
    whole = (stored == sub.len_text[rows]).tolist()
    if row_times is None:
        last, created = datetimes(sub.last_retrieved_at[rows]), datetimes(sub.created_at[rows])
    else:
        at = None if origin is None else np.asarray(origin)[rows]
        last, created = row_times[0].of(sub.last_retrieved_at[rows], at), row_times[1].of(sub.created_at[rows], at)
    ids = sub.ids[rows].tolist()
    if tokens is None:  # ``budget.estimate_tokens`` of each text, from the lengths stored with it
        tokens = budgeting.tokens_for_length(stored)
    # Each item is a tuple of its row across the columns, in Hit's field order, made a Hit in C
    # (``tuple.__new__``): 1,000 took ~0.28 ms here against ~0.49 ms through a dataclass's __init__.
    return list(map(
        _new_hit,
        repeat(Hit),
        zip(
            ids,
            _TIER_OBJECTS[tiers].tolist(),
            texts,
            scored.similarity[rows].tolist(),
            scored.decay[rows].tolist(),
            scored.score[rows].tolist(),
            # No exclusion: the penalty is a broadcast zero (stride 0), so one 0.0 for every item, not 1000 floats.
            scored.penalty[rows].tolist() if scored.penalty.strides[0] else [0.0] * len(rows),
            sub.retrieval_count[rows].tolist(),
            last,
            created,
            np.asarray(names, dtype=object)[sub.agent_code[rows]].tolist(),
            _VISIBILITY[sub.shared[rows].astype(np.intp)].tolist(),
            sub.kind[rows].tolist(),
            sources,
            _TIER_OBJECTS[sub.floor[rows]].tolist(),
            np.asarray(tokens).tolist(),
            whole,
        ),
    ))
