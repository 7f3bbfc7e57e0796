"""Scoring parameters: one validated value object, and the concept's presets.

A ``Params`` is what an agent profile stores and what every face passes to
``scoring``. It is validated on construction, so a ``Params`` that exists is
always usable: values outside their ranges are refused, never clamped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from lodviz.errors import InvalidParameters

#: The largest k accepted; wider than any store we expect an agent to read whole.
MAX_K = 1_000_000
#: An agent's default budget: the retrieval benchmark's readable recall per token stops paying past it
#: (docs/retrieval.md, "Defaults, chosen on evidence"); 0 in a profile means the whole landscape.
DEFAULT_BUDGET = 2000
#: The smallest budget that holds a header and one headline (``budget.MIN_BUDGET``), and the largest accepted.
MIN_BUDGET, MAX_BUDGET = 16, 10_000_000
#: ``budget_tokens="default"``: the agent's profile's budget.
DEFAULT_BUDGET_ARG: Literal["default"] = "default"
#: A search's budget as callers give it: tokens, the profile's ("default"), or None for the whole landscape.
BudgetArg = int | Literal["default"] | None


@dataclass(frozen=True)
class Params:
    """The knobs of LOD retrieval (docs/contract.md, "Scoring").

    alpha   weight of semantic similarity against temporal decay, in [0, 1]
    lam     decay rate per day (lambda), >= 0
    theta1  score at or above which a memory comes back FULL
    theta2  ... SUMMARY
    theta3  ... HEADLINE; below it a memory is OUT
    k       how many nearest memories are candidates for a search
    budget  the tokens an agent's search returns unless it asks otherwise (MCP, ``search --text``,
            ``budget_tokens="default"``); 0: the whole landscape
    """

    alpha: float = 0.7
    lam: float = 0.03
    theta1: float = 0.5
    theta2: float = 0.22
    theta3: float = 0.04
    k: int = 1000
    budget: int = DEFAULT_BUDGET

    def __post_init__(self) -> None:
        for name in ("alpha", "lam", "theta1", "theta2", "theta3"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidParameters(f"{_label(name)} must be a number, got {value!r}.")
            if not math.isfinite(value):
                raise InvalidParameters(f"{_label(name)} must be a finite number, got {value!r}.")
        if not 0.0 <= self.alpha <= 1.0:
            raise InvalidParameters(f"alpha must be between 0 and 1, got {self.alpha}.")
        if self.lam < 0:
            raise InvalidParameters(f"lambda must be 0 or more, got {self.lam}.")
        for name in ("theta1", "theta2", "theta3"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise InvalidParameters(
                    f"{name} must be between 0 and 1, got {getattr(self, name)}."
                )
        if not self.theta1 > self.theta2 > self.theta3:
            raise InvalidParameters(
                "thresholds must be in order theta1 > theta2 > theta3, got "
                f"{self.theta1} > {self.theta2} > {self.theta3}."
            )
        if isinstance(self.k, bool) or not isinstance(self.k, int):
            raise InvalidParameters(f"k must be a whole number, got {self.k!r}.")
        if not 1 <= self.k <= MAX_K:
            raise InvalidParameters(f"k must be between 1 and {MAX_K}, got {self.k}.")
        if isinstance(self.budget, bool) or not isinstance(self.budget, int):
            raise InvalidParameters(f"budget must be a whole number of tokens, got {self.budget!r}.")
        if self.budget != 0 and not MIN_BUDGET <= self.budget <= MAX_BUDGET:
            raise InvalidParameters(
                f"budget must be 0 (the whole landscape) or between {MIN_BUDGET} and {MAX_BUDGET:,} tokens, got {self.budget}."
            )

    @property
    def default_budget(self) -> int | None:
        """The tokens an agent's search returns unless it asks otherwise (None: the whole landscape)."""
        return self.budget or None

    @property
    def thresholds(self) -> tuple[float, float, float]:
        return (self.theta1, self.theta2, self.theta3)

    def with_(self, **changes: Any) -> Params:
        """A copy with some values changed (None values are ignored), validated."""
        changes = {name: value for name, value in changes.items() if value is not None}
        if not changes:  # every search asks with its profile's values: no copy, no second validation
            return self
        if "lambda" in changes:
            changes["lam"] = changes.pop("lambda")
        unknown = set(changes) - set(_FIELDS)
        if unknown:
            raise InvalidParameters(f"unknown parameter {sorted(unknown)[0]!r}.")
        return replace(self, **changes)

    def to_dict(self) -> dict[str, float | int]:
        return {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Params:
        return cls().with_(**dict(data))


_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Params))


def _label(name: str) -> str:
    return "lambda" if name == "lam" else name


#: The concept's three deployments (seed, "Alpha is the parameter that changes
#: everything"). Lambda is per day: 0.005 halves an unused memory's recency in
#: about 4.5 months, 0.15 in under 5 days.
PRESETS: dict[str, Params] = {
    # Clinical literature: a 2019 finding is as relevant today; age barely matters.
    "research": Params(alpha=0.9, lam=0.005, theta1=0.45, theta2=0.26, theta3=0.05, k=1000),
    # Daily digest: yesterday matters, last month mostly does not.
    "digest": Params(alpha=0.15, lam=0.15, theta1=0.6, theta2=0.3, theta3=0.03, k=1000),
    # Legal: balance both; pinned precedents stay FULL through their tier floor.
    "legal": Params(alpha=0.5, lam=0.02, theta1=0.6, theta2=0.3, theta3=0.04, k=1000),
}

DEFAULT = Params()


def preset(name: str) -> Params:
    """The preset called ``name``; raises ``InvalidParameters`` for an unknown one."""
    try:
        return PRESETS[name]
    except KeyError:
        names = ", ".join(sorted(PRESETS))
        raise InvalidParameters(f"unknown preset {name!r}; choose one of {names}.") from None


@dataclass(frozen=True)
class AnswerSettings:
    """The store's own settings that shape an answer beyond an agent's ``Params``.

    Handed down a search rather than read from the live ``Memory``, so that a
    replay asks with the recorded ones while other searches keep their own.
    """

    lexical_weight: float = 1.0  # how much BM25 evidence raises S (``scoring.fuse``)
    budget_policy: str = "readable-first"  # how ``budget.fit`` gives up detail

