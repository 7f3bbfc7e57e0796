"""An auditor's review of conflicts: the candidates on record as an agent may see them, and decisions on them.

Detection (``lodviz.conflicts``) only proposes. ``ConflictReview.of`` lists
the conflicts of one memory or of all, newest first; an agent sees only those
between two memories it can see, and an auditor looking through an agent's
eyes (``either``) those where the agent can see at least one of the two: the
memory it does not see is the one that may make it wrong. ``ConflictReview.resolve`` records a
decision, audited ("resolve"): both stand ("kept"), or one is superseded by
the other; the superseded memory stays in the store and comes back marked
"[superseded by #id]", with the memory that replaces it. A conflict one of
whose memories was forgotten has nothing left to resolve.

Handed the store, the lookup of one memory as an agent may see it, and who
acts when a call names nobody.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lodviz import conflict_scan
from lodviz.arguments import as_id
from lodviz.errors import InvalidInput
from lodviz.records import AuditEvent, Conflict, MemoryId, MemoryRecord
from lodviz.store.base import Store


class ConflictReview:
    """The conflicts of one store, listed and resolved."""

    def __init__(self, store: Store, get: Callable[[MemoryId, str | None], MemoryRecord], actor: Callable[[], str]) -> None:
        self._store = store
        self._get = get  # MemoryNotFound for a memory the agent may not see
        self._actor = actor

    def of(
        self, memory_id: MemoryId | None, status: Sequence[str] | None, agent_id: str | None, limit: int | None, either: bool = False,
    ) -> list[Conflict]:
        """Conflict candidates (of one memory, or all), newest first; an agent sees those between memories it can see
        (``either``: those where it can see one of the two)."""
        ids = None if memory_id is None else [self._get(memory_id, agent_id).id]
        found = self._store.conflicts(ids, status=list(status) if status else None, limit=limit)
        if agent_id is None:
            return found
        records = self._store.get(sorted({i for c in found for i in (c.memory_id, c.other_id)}))
        seen = {rid for rid, rec in records.items() if rec.visibility == "shared" or rec.agent_id == agent_id}
        if either:
            return [c for c in found if c.memory_id in seen or c.other_id in seen]
        return [c for c in found if c.memory_id in seen and c.other_id in seen]

    def resolve(
        self, memory_id: MemoryId, other_id: MemoryId, superseded: MemoryId | None, reason: str | None, actor: str | None
    ) -> Conflict:
        """Both memories stand (``superseded`` None), or ``superseded`` (one of them) is superseded by the other."""
        a, b = as_id(memory_id), as_id(other_id)
        pair = next((c for c in self._store.conflicts([a]) if {c.memory_id, c.other_id} == {a, b}), None)
        if pair is None:
            raise InvalidInput(f"memories {a} and {b} are not a conflict on record.")
        if pair.status == "forgotten":
            raise InvalidInput(f"memory {a if self._store.get([a])[a].forgotten else b} was forgotten; nothing is left to resolve.")
        if superseded is not None and as_id(superseded) not in (a, b):
            raise InvalidInput(f"the superseded memory must be {a} or {b}, not {superseded}.")
        status = "kept" if superseded is None else "superseded"
        record = self._get(pair.memory_id, None)
        self._store.resolve_conflict(
            pair.memory_id,
            pair.other_id,
            status,
            None if superseded is None else as_id(superseded),
            AuditEvent(
                action="resolve",
                actor=actor or self._actor(),
                agent_id=record.agent_id,
                memory_id=pair.memory_id,
                details={"other": pair.other_id, "status": status, "superseded": superseded, "reason": reason, "was": pair.reason},
            ),
        )
        return next(c for c in self._store.conflicts([pair.memory_id]) if c.other_id == pair.other_id)


    def redetect(self, actor: str | None) -> tuple[int, int]:
        """Replace the open conflict candidates with what the detector finds now over the whole store,
        audited ("redetect"); decided conflicts stay. Returns (dropped, found)."""
        state, vectors = self._store.snapshot()
        found = conflict_scan.scan(state, vectors, self._store.passages(), self._store.get)
        event = AuditEvent(action="redetect", actor=actor or self._actor(), details={"found": len(found)})
        dropped = self._store.replace_open_conflicts(found, event)
        return dropped, len(found)


__all__ = ["ConflictReview"]
