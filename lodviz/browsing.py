"""The non-semantic modes as a caller asks them: the request checked, the memories chosen, delivered.

``Browsing.recent`` (everything created in a window, tiered by retrieval
frequency alone), ``unseen`` (never retrieved, tiered by recency) and
``sample`` (drawn at random, weighted towards the lowest D, as summaries)
check what they are asked, choose and score their memories with the pure
``lodviz.modes``, and hand them to a search's delivery stage
(``search.delivery``): budgeted, counted and audited as a search's are.

Handed the store, the delivery stage, the agent's profile, the caller's
"now" as a datetime, and the store's budget policy.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from lodviz import modes
from lodviz.arguments import positive
from lodviz.errors import InvalidInput
from lodviz.ingest.inputs import parse_time
from lodviz.params import Params
from lodviz.result import Result
from lodviz.search.delivery import Delivery
from lodviz.store.base import Store
from lodviz.times import iso


class Browsing:
    """The browsing modes of one store."""

    def __init__(
        self,
        store: Store,
        delivery: Delivery,
        profile: Callable[[str | None], Params],
        now: Callable[[datetime | str | None], datetime],
        policy: Callable[[], str],
    ) -> None:
        self._store = store
        self._delivery = delivery
        self._profile = profile
        self._now = now  # a caller's "now" as a datetime; None: the store's
        self._policy = policy

    def recent(
        self, since: datetime | str, until: datetime | str | None, agent_id: str | None, limit: int | None, now: datetime | str | None,
        budget_tokens: int | None, touch: bool, record: bool, actor: str | None,
    ) -> Result:
        """Everything created in [since, until], newest first, tiered by retrieval frequency alone."""
        start = parse_time(since, "since")
        if start is None:
            raise InvalidInput("recent needs a 'since' time.")
        when = self._now(now)
        end = parse_time(until, "until") if until else when
        assert end is not None
        if end < start:
            raise InvalidInput("'until' is before 'since'.")
        params = self._profile(agent_id)
        state = self._store.state()
        chosen = modes.recent(state, state.visible_to(agent_id), start, end,
                              None if limit is None else positive(limit, "limit"), params, when)
        return self._deliver("recent", chosen, params, when, agent_id, budget_tokens, touch, actor, record,
                             {"since": iso(start), "until": iso(end)})

    def unseen(
        self, agent_id: str | None, limit: int, now: datetime | str | None, budget_tokens: int | None, touch: bool, record: bool,
        actor: str | None,
    ) -> Result:
        """Memories never retrieved (r = 0), newest first, tiered by recency (L = D)."""
        when = self._now(now)
        params = self._profile(agent_id)
        state = self._store.state()
        chosen = modes.unseen(state, state.visible_to(agent_id), positive(limit, "limit"), params, when)
        return self._deliver("unseen", chosen, params, when, agent_id, budget_tokens, touch, actor, record)

    def sample(
        self, n: int, agent_id: str | None, seed: int | None, now: datetime | str | None, budget_tokens: int | None, touch: bool,
        record: bool, actor: str | None,
    ) -> Result:
        """``n`` memories drawn at random, the chance of each proportional to 1 - D (plus a small floor)."""
        n = positive(n, "n")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise InvalidInput(f"seed must be a whole number of at least 0, got {seed!r}.")
        when = self._now(now)
        params = self._profile(agent_id)
        state = self._store.state()
        chosen = modes.sample(state, state.visible_to(agent_id), n, seed, params, when)
        return self._deliver("sample", chosen, params, when, agent_id, budget_tokens, touch, actor, record, {"seed": seed})

    def _deliver(
        self, mode: str, chosen: modes.Browse, params: Params, when: datetime, agent_id: str | None,
        budget_tokens: int | None, touch: bool, actor: str | None, record: bool, extra: dict[str, Any] | None = None,
    ) -> Result:
        """A mode's chosen memories delivered as a search's are: budgeted, counted, audited."""
        return self._delivery.deliver(
            mode, chosen.sub, chosen.scored, params, when, agent_id, order=chosen.order, budget_tokens=budget_tokens,
            touch=touch, actor=actor, record=record, policy=self._policy(), extra=extra,
        )


__all__ = ["Browsing"]
