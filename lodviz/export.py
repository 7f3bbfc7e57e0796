"""The store read out whole, for a person or a file: its facts, its memories, its agents, its audit log.

``Export.info`` is the store's facts (size, embedding model, its map, demo
queries, reference time); ``records`` every memory an agent may see (all for
None) in id order, with usage, floor and its passages' spans, read in batches; ``agents`` every
agent with memories or a profile; the frames are pandas DataFrames of the
memories and of the audit log (pandas is imported only when one is asked for).
Nothing is counted as a retrieval.

Handed the store, the text it embeds, the stored profiles and the audit
log's reader (the caller's, with its checks).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from lodviz.ingest.inputs import parse_time
from lodviz.params import DEFAULT, Params
from lodviz.records import AuditEvent, MemoryRecord
from lodviz.result import AgentOverview, StoreInfo
from lodviz.store.base import Store

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


class Export:
    """One store, read out."""

    def __init__(
        self, store: Store, embed_field: str, profiles: Callable[[], dict[str, Params]], audit: Callable[..., list[AuditEvent]]
    ) -> None:
        self._store = store
        self._embed_field = embed_field
        self._profiles = profiles
        self._audit = audit  # Memory.audit's filters

    def info(self) -> StoreInfo:
        """The store's facts: size, embedding model, its map, demo queries, reference time."""
        meta = self._store.meta()
        reference = meta.get("reference_time")
        return StoreInfo(
            path=self._store.path,
            memories=len(self._store.state()),
            embedding_model=meta.get("embedding_model"),
            embedding_dim=int(meta["embedding_dim"]) if "embedding_dim" in meta else None,
            embed_field=meta.get("embed_field", self._embed_field),
            layout_method=meta.get("layout_method") or None,
            layout_count=int(meta.get("layout_count", 0) or 0),
            layout_fitted_at=meta.get("layout_fitted_at"),
            demo_queries=json.loads(meta["demo_queries"]) if meta.get("demo_queries") else [],
            reference_time=parse_time(reference, "reference_time") if reference else None,
        )

    def records(self, agent_id: str | None, batch: int) -> Iterator[MemoryRecord]:
        """Every memory the agent may see (all for None), in id order, with usage, floor and its passages'
        spans (``[[start, stop], ...]`` into its text; ``[]`` for a short memory)."""
        state = self._store.state()
        passages = self._store.passages()
        ids = state.ids[state.visible_to(agent_id)].tolist()
        for start in range(0, len(ids), batch):
            chunk = ids[start : start + batch]
            records = self._store.get(chunk)
            spans: dict[int, list[list[int]]] = {}
            held = passages.of(chunk)
            for owner, span in zip(held.owner.tolist(), held.spans.tolist()):
                spans.setdefault(owner, []).append(span)
            for memory_id in chunk:
                record = records[memory_id]
                record.passages = spans.get(memory_id, [])
                yield record

    @staticmethod
    def frame(records: Iterator[MemoryRecord]) -> pd.DataFrame:
        """Memories as a pandas DataFrame, one row each."""
        import pandas as pd

        return pd.DataFrame([record.to_dict() for record in records])

    def agents(self) -> list[AgentOverview]:
        """Every agent with memories or a profile: its memory count and the profile its searches use."""
        state = self._store.state()
        live = ~state.forgotten
        counts = dict(zip(*np.unique(state.agent_id[live].astype(str), return_counts=True))) if live.any() else {}
        stored = self._profiles()
        return [
            AgentOverview(agent_id=name, memories=int(counts.get(name, 0)), profile=stored.get(name, DEFAULT), stored=name in stored)
            for name in sorted(set(counts) | set(stored))
        ]

    def audit_frame(self, filters: dict[str, Any]) -> pd.DataFrame:
        """The audit log's events, filtered as ``audit`` takes them, as a pandas DataFrame, newest first."""
        import pandas as pd

        return pd.DataFrame([event.to_dict() for event in self._audit(**filters)])


__all__ = ["Export"]
