"""Choosing alpha and lambda on evidence: golden queries, swept, within a token budget.

A golden query is a question an agent asks and the memories a good answer
needs (``Golden``; import a file with ``Memory.import_golden``). ``sweep``
asks every golden query of an agent again under each (alpha, lambda) of a grid,
with the agent's thresholds and k, through the ``preview`` it is handed
(``Memory.preview``: the search an agent would get, without counting
retrievals or writing the audit log), and
measures what share of the needed memories comes back at any tier and
readable (FULL or SUMMARY) within the budget. ``suggest`` picks the setting
with the most readable recall, then the most recall at any tier, then the one
nearest the agent's current profile, and keeps the current profile unless
that setting reads at least one golden query's worth more; ``verdict`` says
in words how sure that is (how many queries, how many settings tie).

The file format (JSON Lines, one query per line)::

    {"agent_id": "legal-review", "query": "what cap did we agree with Paragon?",
     "needs": [812, 1290]}                       # memory ids, or
    {"agent_id": "legal-review", "query": "...",
     "needs_text": ["liability cap at 2x annual fees"]}   # exact text each needed memory contains

``needs_text`` entries must each match exactly one memory the agent can see;
they are resolved to ids on import, so the file survives a rebuilt store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from lodviz.params import Params
from lodviz.records import Golden
from lodviz.scoring import Tier

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from lodviz.result import Result

ALPHAS = tuple(round(a, 2) for a in np.linspace(0.0, 1.0, 11))
LAMBDAS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3)


@dataclass
class Sweep:
    """Recall of an agent's golden queries under each (alpha, lambda) of a grid."""

    agent_id: str | None
    budget: int
    queries: int
    base: Params  # the profile the grid varies (thresholds and k come from it)
    rows: list[dict[str, Any]] = field(default_factory=list)
    current: dict[str, float] | None = None  # recall under ``base`` itself

    def frame(self) -> pd.DataFrame:
        """One row per setting: alpha, lam, recall_any, recall_readable, tokens."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=["alpha", "lam", "recall_any", "recall_readable", "tokens"])

    def at(self, alpha: float, lam: float) -> dict[str, Any] | None:
        return next((r for r in self.rows if math.isclose(r["alpha"], alpha) and math.isclose(r["lam"], lam)), None)

    @property
    def margin(self) -> float:
        """The least difference in recall the evidence shows: one golden query's worth."""
        return 1.0 / self.queries if self.queries else 1.0

    def best(self) -> dict[str, Any]:
        """The grid's best setting: most readable recall, then most recall at any tier, then nearest the current profile."""

        def key(row: dict[str, Any]) -> tuple[float, float, float]:
            distance = abs(row["alpha"] - self.base.alpha) + abs(math.log10(row["lam"]) - math.log10(max(self.base.lam, 1e-6)))
            return (round(row["recall_readable"], 3), round(row["recall_any"], 3), -distance)

        return max(self.rows, key=key)

    def suggest(self) -> dict[str, Any]:
        """The grid's best setting if it beats the current profile by at least one golden query's worth of readable
        recall (or ties it there and beats it so at any tier); otherwise the current profile (``"keep": True``)."""
        best = self.best()
        if self.current is None or self._improves(best):
            return best
        return {"alpha": self.base.alpha, "lam": self.base.lam, **self.current, "keep": True}

    def _improves(self, row: dict[str, Any]) -> bool:
        assert self.current is not None
        gain = row["recall_readable"] - self.current["recall_readable"]
        wider = row["recall_any"] - self.current["recall_any"]
        return gain >= self.margin - 1e-9 or (gain > -1e-9 and wider >= self.margin - 1e-9)

    def verdict(self) -> str:
        """How sure the suggestion is, in one plain sentence or two."""
        best, chosen = self.best(), self.suggest()
        near = sum(1 for r in self.rows if best["recall_readable"] - r["recall_readable"] < self.margin - 1e-9)
        queries = f"{self.queries} golden {'query' if self.queries == 1 else 'queries'}"
        if chosen.get("keep"):
            current = self.current or {}
            return (
                f"On {queries}, no setting reads one query's worth more than the current profile "
                f"(best {best['recall_readable']:.0%} readable, current {current.get('recall_readable', 0):.0%}; "
                f"{near} of {len(self.rows)} settings within one query of the best): the evidence cannot tell them "
                "apart, so the profile stays. More golden queries would tell."
            )
        current = self.current or {}
        gain = (chosen["recall_readable"] - current.get("recall_readable", 0.0)) * self.queries
        text = (
            f"On {queries}, alpha {chosen['alpha']} lambda {chosen['lam']:g} reads {chosen['recall_readable']:.0%} "
            f"against the current {current.get('recall_readable', 0):.0%} (about {gain:.1f} queries' worth more; "
            f"{near} of {len(self.rows)} settings within one query of the best)."
        )
        if self.queries < 20:
            text += f" {self.queries} queries are few: take it as a hint, and add golden queries to be sure."
        return text

    def suggested_params(self) -> Params:
        best = self.suggest()
        return self.base.with_(alpha=best["alpha"], lam=best["lam"])


def recall(returned: Sequence[int], needs: Sequence[int]) -> float:
    needed = set(needs)
    return len(needed & set(returned)) / len(needed) if needed else 0.0


class Preview(Protocol):
    """What a search under these settings would return, leaving no trace (``Memory.preview``)."""

    def __call__(self, query: str, *, agent_id: str | None, params: Params, budget_tokens: int) -> Result: ...


def evaluate(preview: Preview, golden: Sequence[Golden], params: Params, budget: int, agent_id: str | None) -> dict[str, float]:
    """Mean recall (any tier, readable) and mean tokens of ``golden`` under ``params``."""
    any_tier, readable, tokens = [], [], []
    for g in golden:
        result = preview(g.query, agent_id=agent_id, params=params, budget_tokens=budget)
        any_tier.append(recall([item.id for item in result.items], g.needs))
        readable.append(recall([item.id for item in result.items if item.tier >= Tier.SUMMARY], g.needs))
        tokens.append(result.tokens)
    return {
        "recall_any": float(np.mean(any_tier)) if any_tier else 0.0,
        "recall_readable": float(np.mean(readable)) if readable else 0.0,
        "tokens": float(np.mean(tokens)) if tokens else 0.0,
    }


def sweep(
    preview: Preview,
    golden: Sequence[Golden],
    *,
    agent_id: str | None,
    base: Params,
    budget: int,
    alphas: Sequence[float] = ALPHAS,
    lambdas: Sequence[float] = LAMBDAS,
) -> Sweep:
    out = Sweep(agent_id=agent_id, budget=budget, queries=len(golden), base=base)
    for alpha in alphas:
        for lam in lambdas:
            params = base.with_(alpha=float(alpha), lam=float(lam))
            out.rows.append({"alpha": float(alpha), "lam": float(lam), **evaluate(preview, golden, params, budget, agent_id)})
    return out


__all__ = ["Preview", "Sweep", "sweep", "evaluate", "recall", "ALPHAS", "LAMBDAS"]
