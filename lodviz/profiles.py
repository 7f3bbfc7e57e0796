"""Agents' profiles: the parameters each agent's searches use unless a call overrides them.

``Profiles.get`` is an agent's stored profile as ``Params``, or the defaults
(for no agent, or one with none stored); every search of an agent asks it, so
the parsed profile is kept by its stored values. ``Profiles.set`` stores a
profile (a ``Params``, a preset, or changes to the current one) with an
audit line holding the old and the new.

Handed the store and who acts when a call names nobody.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lodviz import access
from lodviz.cache import LRU
from lodviz.params import DEFAULT, Params, preset
from lodviz.records import AuditEvent
from lodviz.store.base import Store


class Profiles:
    """The stored profiles of one store's agents."""

    def __init__(self, store: Store, actor: Callable[[], str]) -> None:
        self._store = store
        self._actor = actor
        self._params: LRU[Params] = LRU(64)  # by the stored values

    def get(self, agent_id: str | None) -> Params:
        """The agent's stored profile, or the defaults."""
        if agent_id is None:
            return DEFAULT
        stored = self._store.profile(agent_id)
        if not stored:
            return DEFAULT
        return self._params.get(tuple(sorted(stored.items())), lambda: Params.from_dict(stored))

    def all(self) -> dict[str, Params]:
        """Every stored profile, by agent."""
        return {agent: Params.from_dict(values) for agent, values in self._store.profiles().items()}

    def set(self, agent_id: str, params: Params | str | None, actor: str | None, reason: str | None, changes: dict[str, Any]) -> Params:
        """Store an agent's profile: a ``Params``, a preset name, or changes to the current one (audited)."""
        access.check_agent(agent_id)
        if isinstance(params, str):
            base = preset(params)
        elif params is None:
            base = self.get(agent_id)
        else:
            base = params
        new = base.with_(**changes)
        old = self.get(agent_id)
        self._store.set_profile(
            agent_id,
            new.to_dict(),
            AuditEvent(
                action="profile",
                actor=actor or self._actor(),
                agent_id=agent_id,
                details={
                    "old": old.to_dict(),
                    "new": new.to_dict(),
                    "preset": params if isinstance(params, str) else None,
                    "reason": reason,
                },
            ),
        )
        return new


__all__ = ["Profiles"]
