"""Fitting a result into a token budget: which memories come back, and how sharp. Pure.

The policy (docs/retrieval.md has the measurements that chose it):

- Coverage follows relevance. Candidates are taken in order of S (the far
  plane is as deep as the budget reaches), never in order of L: an old but
  relevant memory is not dropped for a recent unrelated one.
- Resolution follows L. No memory comes back sharper than the tier its score
  (or its floor) gives it; under a budget it may come back coarser.
- Detail is given up before coverage, and the best items stay readable:
  1. in order of relevance, each memory gets a readable summary if its tier
     allows one (a headline if that is all its tier allows), or a headline
     when the summary no longer fits;
  2. then, in order of L, memories whose tier is FULL get their full text
     back where it fits;
  3. then, in order of relevance, memories cut to a headline in step 1 get
     back what their tier allows, where it fits.
  For short memories a summary is the text itself, so step 1 returns them
  whole; for long ones it keeps many memories readable instead of a few whole.

Costs are real tokens of each item's rendered line (``Result.render``), and
of the date lines that group them; the caller verifies the rendered text.
"""

from __future__ import annotations

import numpy as np

from lodviz.errors import BudgetTooSmall
from lodviz.scoring import Tier

#: Tokens an item costs beyond its text in the estimate the app shows.
ITEM_OVERHEAD = 2
#: The budget policies: the default, and the alternative it was measured against.
POLICIES = ("readable-first", "coverage-first")
#: Budgets below this cannot hold a header and one headline.
MIN_BUDGET = 16


def estimate_tokens(text: str) -> int:
    """A quick estimate (about four characters a token), for displays that cannot tokenise."""
    return ITEM_OVERHEAD + (len(text) + 3) // 4


def tokens_for_length(chars: np.ndarray) -> np.ndarray:
    """``estimate_tokens`` for many texts from their lengths alone, vectorised."""
    return ITEM_OVERHEAD + (np.asarray(chars, dtype=np.int64) + 3) // 4


def tier_costs(len_text: np.ndarray, len_summary: np.ndarray, len_headline: np.ndarray) -> np.ndarray:
    """(N, 4) estimated cost of each item at each tier from stored lengths, indexed by ``Tier``; OUT costs 0."""
    costs = np.zeros((len(len_text), 4), dtype=np.int64)
    costs[:, Tier.HEADLINE] = tokens_for_length(len_headline)
    costs[:, Tier.SUMMARY] = tokens_for_length(len_summary)
    costs[:, Tier.FULL] = tokens_for_length(len_text)
    return costs


def total_tokens(tier: np.ndarray, costs: np.ndarray) -> int:
    """What items cost at ``tier`` (one tier per row of ``costs``)."""
    tier = np.asarray(tier, dtype=np.int64)
    return int(costs[np.arange(len(tier)), tier].sum()) if len(tier) else 0


def fit(
    natural: np.ndarray,
    costs: np.ndarray,
    budget: int,
    *,
    groups: np.ndarray | None = None,
    group_costs: np.ndarray | None = None,
    detail_order: np.ndarray | None = None,
    policy: str = "readable-first",
) -> np.ndarray:
    """Tiers for candidates given in order of relevance, within ``budget`` tokens.

    ``natural`` is each candidate's tier by L and floor (OUT: not returned);
    ``costs[i, t]`` the tokens of candidate i's line at tier t; ``groups[i]``
    the date group candidate i is listed under, whose heading costs
    ``group_costs[groups[i]]`` once; ``detail_order`` the candidates by L,
    highest first (default: relevance order). Returns the tiers (OUT = left out).

    ``policy`` "coverage-first" is the alternative it was measured against:
    every candidate a headline first, in order of relevance, then detail back
    by L (docs/retrieval.md).
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown budget policy {policy!r}; choose one of {', '.join(POLICIES)}.")
    natural = np.asarray(natural, dtype=np.int64)
    n = len(natural)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out.astype(np.int8)
    groups = np.zeros(n, dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    group_costs = np.zeros(int(groups.max()) + 1, dtype=np.int64) if group_costs is None else np.asarray(group_costs, dtype=np.int64)
    charged = np.zeros(len(group_costs), dtype=bool)
    shown = natural > Tier.OUT
    if shown.any():
        cheapest = costs[shown, Tier.HEADLINE] + group_costs[groups[shown]]
        if budget < int(cheapest.min()):
            raise BudgetTooSmall(
                f"a budget of {budget} tokens (after the result's header) cannot hold even one headline "
                f"(the smallest costs {int(cheapest.min())})."
            )
    left = int(budget)

    def take(i: int, tier: int) -> bool:
        nonlocal left
        extra = int(costs[i, tier]) - (int(costs[i, out[i]]) if out[i] else 0)
        if not out[i] and not charged[groups[i]]:
            extra += int(group_costs[groups[i]])
        if extra > left:
            return False
        left -= extra
        if not out[i]:
            charged[groups[i]] = True
        out[i] = tier
        return True

    # 1. Coverage by relevance, readable where the tier allows.
    for i in range(n):
        if not shown[i]:
            continue
        first = Tier.HEADLINE if policy == "coverage-first" else min(int(natural[i]), Tier.SUMMARY)
        if not take(i, first) and first > Tier.HEADLINE:
            take(i, Tier.HEADLINE)
    # 2. Full text back by L (coverage-first: any detail back by L).
    for i in (np.arange(n) if detail_order is None else np.asarray(detail_order, dtype=np.int64)).tolist():
        if natural[i] == Tier.FULL and out[i] == Tier.SUMMARY:
            take(i, Tier.FULL)
        elif policy == "coverage-first" and out[i] == Tier.HEADLINE and natural[i] > Tier.HEADLINE:
            for tier in range(int(natural[i]), Tier.HEADLINE, -1):
                if take(i, tier):
                    break
    # 3. What step 1 cut to a headline, back by relevance.
    for i in range(n):
        if out[i] == Tier.HEADLINE and natural[i] > Tier.HEADLINE:
            for tier in range(int(natural[i]), Tier.HEADLINE, -1):
                if take(i, tier):
                    break
    return out.astype(np.int8)


__all__ = ["fit", "POLICIES", "estimate_tokens", "tokens_for_length", "tier_costs", "total_tokens", "MIN_BUDGET"]
