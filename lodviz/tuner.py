"""A tuning run: an agent's alpha and lambda swept over its golden queries, on record.

``Tuner.tune`` refuses an agent with no golden queries to measure against
(``golden``), sweeps the grid around the agent's profile through the preview
(``tuning.sweep``: no retrieval counted, no audit line per question), measures
the current settings the same way, and writes the whole run as one audit
line ("tune": the budget, the number of queries and settings, the current
settings' recall and the suggested ones). It suggests; saving a suggestion is
``Profiles.set``.

Handed the store, the golden queries, the agent's profile, the preview and
who acts when a call names nobody.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lodviz import tuning
from lodviz.errors import InvalidInput
from lodviz.params import Params
from lodviz.records import AuditEvent, Golden
from lodviz.store.base import Store


class Tuner:
    """Tuning runs over one store."""

    def __init__(
        self,
        store: Store,
        golden: Callable[[str | None], list[Golden]],
        profile: Callable[[str | None], Params],
        preview: tuning.Preview,
        actor: Callable[[], str],
    ) -> None:
        self._store = store
        self._golden = golden
        self._profile = profile
        self._preview = preview
        self._actor = actor

    def tune(
        self, agent_id: str | None, budget_tokens: int, alphas: Sequence[float] | None, lambdas: Sequence[float] | None, actor: str | None
    ) -> tuning.Sweep:
        """Sweep alpha and lambda over the agent's golden queries; one audit line."""
        golden = self._golden(agent_id)
        if not golden:
            who = f"agent {agent_id!r}" if agent_id else "this store"
            raise InvalidInput(
                f"{who} has no golden queries to tune against; add some with `lodviz golden import FILE` "
                "(a JSON Lines file of queries and the memories they need)."
            )
        base = self._profile(agent_id)
        result = tuning.sweep(
            self._preview, golden, agent_id=agent_id, base=base, budget=budget_tokens,
            alphas=alphas or tuning.ALPHAS, lambdas=lambdas or tuning.LAMBDAS,
        )
        result.current = tuning.evaluate(self._preview, golden, base, budget_tokens, agent_id)
        current = result.current
        best = result.suggest()
        self._store.record(
            AuditEvent(
                action="tune",
                actor=actor or self._actor(),
                agent_id=agent_id,
                details={"budget_tokens": budget_tokens, "queries": len(golden), "settings": len(result.rows),
                         "current": {"alpha": base.alpha, "lam": base.lam, **current}, "suggested": best,
                         "verdict": result.verdict()},
            )
        )
        return result


__all__ = ["Tuner"]
