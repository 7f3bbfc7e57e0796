"""Facts about a store: counts, time span, usage, and tier shapes per profile.

Tier shapes are computed without touching any memory: for each query, every
agent profile scores the same k nearest candidates (the whole store, as an
auditor sees it), so the shapes differ only by the profiles' parameters.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lodviz import budget as budgeting
from lodviz.memory import Memory
from lodviz.scoring import Tier
from lodviz.times import from_seconds, iso


def demo_queries(mem: Memory) -> list[dict[str, str]]:
    """The store's demo queries (``[{"agent_id": ..., "query": ...}]``), if it records any."""
    return mem.info().demo_queries


def tier_shape(mem: Memory, query: str, profile_of: str | None) -> dict[str, Any]:
    """Tier counts and token cost of ``query``'s k candidates under one agent's profile."""
    params = mem.profile(profile_of)
    view = mem.landscape(query, params=params)
    rows = np.flatnonzero(view.candidate)
    tiers = view.scored.tier[rows]
    counts = {t.name: int((tiers == t).sum()) for t in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE, Tier.OUT)}
    state = view.state
    tokens = budgeting.total_tokens(
        tiers, budgeting.tier_costs(state.len_text[rows], state.len_summary[rows], state.len_headline[rows])
    )
    return {
        "profile": profile_of or "(defaults)",
        "alpha": params.alpha,
        "lambda": params.lam,
        "counts": counts,
        "tokens": tokens,
    }


def store_stats(mem: Memory, queries: list[str] | None = None) -> dict[str, Any]:
    state = mem.columns()
    state = state.take(np.flatnonzero(~state.forgotten))
    info = mem.info()
    data: dict[str, Any] = {
        "store": info.path,
        "memories": len(state),
        "agents_count": len(set(state.agent_id.tolist())),
        "now": iso(mem.now()),
        "embedding_model": info.embedding_model,
        "embedding_dim": info.embedding_dim,
        "embed_field": info.embed_field,
    }
    if len(state) == 0:
        return {**data, "queries": []}
    first, last = float(state.created_at.min()), float(state.created_at.max())
    data["span"] = {
        "first": iso(from_seconds(first)),
        "last": iso(from_seconds(last)),
        "days": round((last - first) / 86_400),
    }
    kinds = sorted(set(state.kind.tolist()))
    data["kinds"] = kinds
    per_agent: dict[str, Any] = {}
    for agent in sorted(set(state.agent_id.tolist())):
        mine = state.agent_id == agent
        per_agent[agent] = {
            "total": int(mine.sum()),
            "shared": int((mine & state.shared).sum()),
            "kinds": {k: int((mine & (state.kind == k)).sum()) for k in kinds if (mine & (state.kind == k)).any()},
        }
    data["per_agent"] = per_agent
    retrieved = state.retrieval_count[state.retrieval_count > 0]
    data["usage"] = {
        "never": int((state.retrieval_count == 0).sum()),
        "retrieved": int(len(retrieved)),
        "median_count": int(np.median(retrieved)) if len(retrieved) else 0,
        "max_count": int(retrieved.max()) if len(retrieved) else 0,
        "floors": {Tier(f).name: int((state.floor == f).sum()) for f in (1, 2, 3) if (state.floor == f).any()},
    }
    asked = [{"agent_id": None, "query": q} for q in queries] if queries else demo_queries(mem)
    profiles: list[str | None] = list(sorted(mem.profiles())) or [None]
    data["queries"] = [
        {
            "query": item["query"],
            "agent_id": item.get("agent_id"),
            "profiles": [tier_shape(mem, str(item["query"]), p) for p in profiles],
        }
        for item in asked
    ]
    return data
