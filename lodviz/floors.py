"""Where one memory sits for an agent, and moving it: the tier it was shown at, tier floors, expand.

``Floors.current_tier`` is the tier at which an agent was last shown a memory
(from the audit log), or at which it comes back now. ``Floors.move`` is the
one floor rule: a promote sets the floor one tier above where the memory
comes back now, FULL at most, and above its old floor (so the first promote
of a headline makes it a summary); a demote lowers it one tier; ``to`` sets
it directly, in the move's own direction. A floor only ever lifts a memory:
below the tier its score gives, the memory comes back where its score puts
it. ``Floors.expand`` hands out the full text and counts it as a retrieval
(one passage's neighbourhood is ``lodviz.drilling``'s).
Each move is an audit line carrying its "now", for a replay.

Handed the store, the lookup of one memory as an agent may see it, the
placement of one memory (``explain``), "now" and who acts when a call names
nobody.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from lodviz import audit, scoring
from lodviz.errors import InvalidInput
from lodviz.params import Params
from lodviz.records import AuditEvent, MemoryId, MemoryRecord
from lodviz.result import FloorChange
from lodviz.scoring import Tier
from lodviz.store.base import Store
from lodviz.times import iso

#: How many of an agent's latest results are read to find where it was last shown a memory.
SHOWN_LOOKBACK = 200


def touch_expanded(
    store: Store, record: MemoryRecord, when: datetime, actor: str, agent_id: str | None, details: dict | None = None
) -> None:
    """Count an expand of ``record`` (whole, or ``details`` says which part) as a retrieval, on record."""
    store.touch(
        [record.id],
        when,
        AuditEvent(
            action="expand",
            actor=actor,
            agent_id=agent_id or record.agent_id,
            memory_id=record.id,
            details={"now": iso(when), **(details or {})},  # "now": the last retrieval it set, for a replay
        ),
    )


class Floors:
    """Tiers shown and tier floors of one store's memories."""

    def __init__(
        self,
        store: Store,
        get: Callable[[MemoryId, str | None], MemoryRecord],
        explain: Callable[[MemoryId, str | None, str | None, Params | None, datetime | str | None], scoring.Placement],
        now: Callable[[datetime | str | None], datetime],
        actor: Callable[[], str],
    ) -> None:
        self._store = store
        self._get = get  # MemoryNotFound for a memory the agent may not see
        self._explain = explain  # (memory, query, agent, params, now)
        self._now = now  # a caller's "now" as a datetime; None: the store's
        self._actor = actor

    def expand(self, memory_id: MemoryId, agent_id: str | None, now: datetime | str | None, actor: str | None) -> MemoryRecord:
        """The full content of one memory; counts as a retrieval."""
        record = self._get(memory_id, agent_id)
        touch_expanded(self._store, record, self._now(now), actor or agent_id or self._actor(), agent_id)
        return self._get(record.id, None)

    def current_tier(
        self,
        memory_id: MemoryId,
        agent_id: str | None,
        query: str | None,
        params: Params | None,
        now: datetime | str | None,
    ) -> Tier:
        """The tier at which this agent was shown a memory, or at which it comes back now.

        First the tier the agent's latest result that held the memory
        delivered it at (after its budget; from the audit log), whenever an
        agent is named or no view is given (with no agent named, the memory's
        own agent's). Otherwise scored for ``query`` with ``params`` (the
        landscape's view). Without either: as in the agent's last search (its
        query, parameters and "now"), or with none on record, for no query
        (S = 0) under the agent's profile. So a promote means "one tier above
        what this agent was shown" in MCP, the CLI and the landscape alike.
        """
        if query is None or agent_id is not None:
            delivered = self.last_delivered(self._get(memory_id, agent_id), agent_id)
            if delivered is not None:
                return delivered
        if query is None:
            last = self._store.audit(agent_id=agent_id, actions=["search"], limit=1)
            if last and (agent_id is not None or last[0].agent_id is None) and last[0].query:
                query = last[0].query
                details = last[0].details
                if params is None and details.get("params"):
                    params = Params.from_dict(details["params"])
                if now is None and details.get("now"):
                    now = details["now"]
        return self._explain(memory_id, query, agent_id, params, now).tier

    def last_delivered(self, record: MemoryRecord, agent_id: str | None) -> Tier | None:
        """The tier the agent's latest result holding ``record`` delivered it at (an expand: FULL; of passages: SUMMARY).

        With no agent named: the latest such result of the memory's own agent
        or of a search for all agents (an auditor's).
        """
        memory_id = record.id
        for event in self._store.audit(agent_id=agent_id, actions=list(audit.USING), limit=SHOWN_LOOKBACK):
            if agent_id is None and event.agent_id not in (None, record.agent_id):
                continue
            if event.action == "expand":
                if event.memory_id == memory_id:
                    # Passages around a phrase (``lodviz.drilling``) are an excerpt: what SUMMARY gives a long memory.
                    return Tier.SUMMARY if event.details.get("passages") is not None else Tier.FULL
                continue
            if event.details.get("view"):  # a person's look in the landscape, not what the agent received
                continue
            for name, ids in (event.details.get("returned") or {}).items():
                if memory_id in ids and name in Tier.__members__:
                    return Tier[name]
        return None

    def move(
        self,
        memory_id: MemoryId,
        step: int,
        *,
        to: Tier | str | int | None,
        reason: str | None,
        agent_id: str | None,
        actor: str | None,
        query: str | None = None,
        params: Params | None = None,
        now: datetime | str | None = None,
    ) -> FloorChange:
        """Promote (``step`` +1) or demote (-1) one memory's tier floor, audited."""
        record = self._get(memory_id, agent_id)
        before = Tier(record.floor)
        target: Tier
        action, other = ("promote", "demote") if step > 0 else ("demote", "promote")
        if to is not None:
            try:
                target = Tier.parse(to)
            except ValueError:
                raise InvalidInput(f"{to!r} is not a tier; use FULL, SUMMARY, HEADLINE or OUT.") from None
            if (target - before) * step < 0:
                raise InvalidInput(f"{action} cannot move the floor from {before.name} to {target.name}; use {other}.")
        elif step > 0:
            shown = self.current_tier(record.id, agent_id, query, params, now)
            target = Tier(min(max(before, shown) + 1, Tier.FULL))
        else:
            target = Tier(max(before - 1, Tier.OUT))
        self._store.set_floor(
            record.id,
            int(target),
            AuditEvent(
                action=action,
                actor=actor or agent_id or self._actor(),
                agent_id=agent_id or record.agent_id,
                memory_id=record.id,
                details={"from": before.name, "to": target.name, "reason": reason, "now": iso(self._now(now))},
            ),
        )
        return FloorChange(memory_id=record.id, before=before, after=target, headline=record.headline, agent_id=record.agent_id)


__all__ = ["SHOWN_LOOKBACK", "Floors"]
