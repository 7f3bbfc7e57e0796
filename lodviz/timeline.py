"""The store as it was: the audit log's history read once, and the past rebuilt from it on demand.

``Timeline`` keeps the events that shape existence, usage and floors
(``audit.HISTORY``), oldest first, reading only what is new on each ask; a
``history.Moment`` (a time, or "just before event N") turns the store's
columns into those of that moment (``history.rebuild``), kept for the last
few moments a time-slider drag or a replay's redraws ask again.

Handed the store; the rules of the rebuild are ``lodviz.history``'s.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from lodviz import audit, history
from lodviz.cache import LRU
from lodviz.errors import InvalidInput
from lodviz.ingest.inputs import parse_time
from lodviz.records import AuditEvent, Columns
from lodviz.store.base import Store


class Timeline:
    """The audit log's history of one store, and its columns at any moment of it."""

    def __init__(self, store: Store) -> None:
        self._store = store
        # The history events, oldest first, as of the last event id read.
        self._history: tuple[int, list[AuditEvent]] = (-1, [])
        # Rebuilt pasts by (moment, last event read, rows, forgotten).
        self._past_cache: LRU[Columns] = LRU(8)

    @property
    def seen(self) -> int:
        """The id of the last history event read (-1 before any)."""
        return self._history[0]

    def events(self) -> list[AuditEvent]:
        """The audit events that shape usage, floors and existence, oldest first; read once, then only what is new."""
        seen, events = self._history
        newer = self._store.audit(actions=list(audit.HISTORY), after_id=seen if seen >= 0 else None, limit=10**12)
        if newer:
            events.extend(reversed(newer))  # in place: a session of searches would copy the whole log each time
            self._history = (int(newer[0].id or seen), events)
        return events

    @staticmethod
    def moment(as_of: history.Moment | datetime | str | None) -> history.Moment | None:
        """``as_of`` as a ``Moment`` (a time given as text or datetime), or None for now."""
        if as_of is None or isinstance(as_of, history.Moment):
            return as_of
        return history.Moment(at=parse_time(as_of, "as_of"))

    def snapshot(self, moment: history.Moment | None) -> tuple[Columns, np.ndarray]:
        """The columns and unit matrix now (None), or the columns as they were at ``moment``."""
        state, vectors = self._store.snapshot()
        if moment is None:
            return state, vectors
        events = self.events()
        key = (moment, self.seen, len(state), int(state.forgotten.sum()))  # a forget is not a history event
        return self._past_cache.get(key, lambda: history.rebuild(state, events, moment)), vectors

    def event(self, event_id: int) -> AuditEvent:
        """One event of the audit log by its id; ``InvalidInput`` if there is none."""
        event = next((e for e in self.events() if e.id == int(event_id)), None)
        if event is None:
            event = next((e for e in self._store.audit(after_id=int(event_id) - 1, limit=10**12) if e.id == int(event_id)), None)
        if event is None:
            raise InvalidInput(f"there is no audit event #{event_id}.")
        return event


__all__ = ["Timeline"]
