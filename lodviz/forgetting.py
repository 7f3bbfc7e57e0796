"""Forgetting a memory for good: erasure, for the requests that need it; everything else fades instead.

``Forgetting.forget`` erases one memory the caller may see: its texts and
vector go, its id, usage and audit history stay, its open conflicts close as
"forgotten" (``Store.forget``), and nobody sees it again. What a search's
stages kept of its texts or vector is dropped with it. Audited ("forget",
with the reason and the memory's kind).

Handed the store, the lookup of one memory as an agent may see it, what
drops a memory from the search's caches, and who acts when a call names nobody.
"""

from __future__ import annotations

from collections.abc import Callable

from lodviz.records import AuditEvent, MemoryId, MemoryRecord
from lodviz.store.base import Store


class Forgetting:
    """Erasure of one store's memories."""

    def __init__(
        self,
        store: Store,
        get: Callable[[MemoryId, str | None], MemoryRecord],
        drop_kept: Callable[[int], None],
        actor: Callable[[], str],
    ) -> None:
        self._store = store
        self._get = get  # MemoryNotFound for a memory the agent may not see
        self._drop_kept = drop_kept
        self._actor = actor

    def forget(self, memory_id: MemoryId, reason: str | None, agent_id: str | None, actor: str | None) -> None:
        """Erase ``memory_id`` as ``agent_id`` may see it, audited."""
        record = self._get(memory_id, agent_id)
        self._store.forget(
            record.id,
            AuditEvent(
                action="forget",
                actor=actor or agent_id or self._actor(),
                agent_id=record.agent_id,
                memory_id=record.id,
                details={"reason": reason, "kind": record.kind},
            ),
        )
        self._drop_kept(record.id)


__all__ = ["Forgetting"]
