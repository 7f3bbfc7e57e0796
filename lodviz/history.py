"""The store as it was: usage, floors and which memories existed, rebuilt from the audit log.

The audit log is the store's history (``lodviz.verify`` checks that it
accounts for the data). Replaying it up to a point gives each memory's
retrieval count, last retrieval and tier floor as they were then, and which
memories had been written: what the landscape needs to show a past search as
its agent saw it, or the store on a past day.

Two kinds of "then" (a ``Moment``):

* ``before_event=N``: exactly the store a search saw, replaying every event
  logged before event N (the log's order is the order things happened).
* ``at=T``: the store on a day of its own timeline. A memory exists from its
  ``created_at`` (an imported transcript from March was known in March); a
  search, browse or expand counts at the time it was scored for (its
  recorded ``now``, else when it was logged); a promote or demote at its
  recorded ``now``, else when it was logged. Usage a write imported from
  before the store (a count and a last retrieval) arrives whole at that last
  retrieval: the log never saw the uses before it, so earlier moments show
  the memory as not yet used (a lower bound, never an invention).

Forgotten memories stay hidden at every moment: their texts and vector are
erased, so there is nothing to show.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from lodviz.audit import FLOOR_MOVES, RETRIEVING
from lodviz.records import AuditEvent, Columns
from lodviz.result import Landscape, Result
from lodviz.scoring import Tier
from lodviz.times import utc

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd



@dataclass(frozen=True)
class Moment:
    """A point in the store's history: just before an audit event, or a time on the store's timeline."""

    before_event: int | None = None
    at: datetime | None = None

    def __post_init__(self) -> None:
        if (self.before_event is None) == (self.at is None):
            raise ValueError("a Moment is either before_event or at, not both or neither")

    def to_dict(self) -> dict[str, object]:
        return {"before_event": self.before_event} if self.before_event is not None else {"at": utc(self.at).isoformat()}  # type: ignore[arg-type]


def _time(value: object, fallback: datetime | None) -> float | None:
    """POSIX seconds of an ISO time in an audit line, else of ``fallback``."""
    if isinstance(value, str) and value:
        try:
            return utc(datetime.fromisoformat(value.replace("Z", "+00:00"))).timestamp()
        except ValueError:
            pass
    return utc(fallback).timestamp() if fallback is not None else None


def event_time(event: AuditEvent) -> float | None:
    """When an event happened on the store's timeline: its recorded ``now``, else when it was logged."""
    return _time(event.details.get("now"), event.at)


def rebuild(state: Columns, events: Iterable[AuditEvent], moment: Moment) -> Columns:
    """``state`` with usage, floors and existence as they were at ``moment``.

    ``events`` is the audit log, oldest first (other actions are skipped).
    Rows stay aligned with ``state``; memories that did not exist yet are
    marked ``forgotten`` so that no view shows them.
    """
    cutoff = None if moment.at is None else utc(moment.at).timestamp()
    counts: dict[int, int] = {}
    last: dict[int, float] = {}
    floors: dict[int, int] = {}
    written: set[int] = set()
    named: set[int] = set()  # memories some write event names (the others are from before writes named them)

    def use(memory_id: int, when: float | None) -> None:
        counts[memory_id] = counts.get(memory_id, 0) + 1
        if when is not None:
            last[memory_id] = when  # a touch sets the last retrieval, as the store does

    for e in events:
        if e.action == "write":
            ids = [int(i) for i in e.details.get("ids", []) if i is not None]
            named.update(ids)
            if moment.before_event is not None and (e.id is None or e.id >= moment.before_event):
                continue
            written.update(ids)
            for key, pair in (e.details.get("imported_usage") or {}).items():
                count, when_text = pair
                when = _time(when_text, None)
                if cutoff is not None and (when is None or when > cutoff):
                    continue  # imported usage arrives whole at its last retrieval
                counts[int(key)] = counts.get(int(key), 0) + int(count)
                if when is not None:
                    last[int(key)] = max(last.get(int(key), when), when)
            for key, floor in (e.details.get("imported_floors") or {}).items():
                floors[int(key)] = int(floor)  # held from its creation; existence decides
            continue
        if moment.before_event is not None:
            if e.id is None or e.id >= moment.before_event:
                continue
        elif (when := event_time(e)) is None or cutoff is None or when > cutoff:
            continue
        if e.action in RETRIEVING:
            when = event_time(e)
            for memory_id in e.details.get("touched", []) or []:
                use(int(memory_id), when)
        elif e.action == "expand" and e.memory_id is not None:
            use(int(e.memory_id), event_time(e))
        elif e.action in FLOOR_MOVES and e.memory_id is not None and e.details.get("to"):
            floors[int(e.memory_id)] = int(Tier.parse(e.details["to"]))

    ids = state.ids.tolist()
    if moment.before_event is not None:
        # Memories no write names come from before writes named them: they existed.
        exists = np.fromiter((i in written or i not in named for i in ids), dtype=bool, count=len(ids))
    else:
        exists = state.created_at <= cutoff
    count = np.fromiter((counts.get(i, 0) for i in ids), dtype=np.int64, count=len(ids))
    retrieved = np.fromiter((last.get(i, np.nan) for i in ids), dtype=np.float64, count=len(ids))
    floor = np.fromiter((floors.get(i, 0) for i in ids), dtype=np.int8, count=len(ids))
    return replace(
        state,
        retrieval_count=count,
        last_retrieved_at=retrieved,
        floor=floor,
        forgotten=state.forgotten | ~exists,
    )


def returned_tiers(event: AuditEvent) -> dict[int, Tier] | None:
    """What a search's audit line says it returned, memory by memory; None for lines older than that record."""
    returned = event.details.get("returned")
    if not isinstance(returned, dict):
        return None
    out: dict[int, Tier] = {}
    for name, ids in returned.items():
        tier = Tier.parse(name)
        for memory_id in ids or []:
            out[int(memory_id)] = tier
    return out


@dataclass
class Replay:
    """A past search replayed on the store as it was just before it (``Memory.replay``)."""

    event: AuditEvent
    moment: Moment
    landscape: Landscape  # every memory that existed then, scored with the search's settings
    result: Result | None  # the answer rebuilt (None for a look in the app or a browse mode: the landscape is the answer)
    recorded: dict[int, Tier] | None  # what the audit line says was returned (None: a line older than that record)

    @property
    def replayed(self) -> dict[int, Tier]:
        """What the replay returns, memory by memory."""
        if self.result is not None:
            return {int(item.id): Tier(item.tier) for item in self.result.items}
        land = self.landscape
        tiers = land.scored.tier
        rows = np.flatnonzero(land.candidate & (tiers > Tier.OUT))
        return {int(land.state.ids[r]): Tier(int(tiers[r])) for r in rows}

    @property
    def agrees(self) -> bool | None:
        """Whether the replay returns exactly what the search recorded (None if it recorded no list)."""
        return None if self.recorded is None else self.replayed == self.recorded

    def frame(self) -> pd.DataFrame:
        """One row per memory returned then or now: recorded and replayed tier (an auditor's table)."""
        import pandas as pd

        recorded = self.recorded or {}
        replayed = self.replayed
        rows = [
            {"memory_id": i, "recorded": recorded[i].name if i in recorded else None,
             "replayed": replayed[i].name if i in replayed else None}
            for i in sorted(set(recorded) | set(replayed))
        ]
        return pd.DataFrame(rows, columns=["memory_id", "recorded", "replayed"])


__all__ = ["Moment", "Replay", "event_time", "rebuild", "returned_tiers"]
