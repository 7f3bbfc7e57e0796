"""Token costs of a result and fitting a result into a token budget. Pure.

Tokens are estimated, not counted with a model's tokenizer: ``ceil(chars / 4)``
plus a fixed per-item overhead for the id and tier label. Agents' tokenizers
differ; the estimate is deterministic, cheap, and what the budget guarantee is
stated against.
"""

from __future__ import annotations

import numpy as np

from lodviz.errors import BudgetTooSmall
from lodviz.scoring import Tier

#: Tokens an item costs beyond its text: id, tier label, separators.
ITEM_OVERHEAD = 6
#: The cost of the shortest possible item: a one-character headline.
MIN_ITEM_TOKENS = ITEM_OVERHEAD + 1


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` as it is sent to an agent, with item overhead."""
    return ITEM_OVERHEAD + (len(text) + 3) // 4


def tokens_for_length(chars: np.ndarray) -> np.ndarray:
    """``estimate_tokens`` for many texts from their lengths alone, vectorised."""
    return ITEM_OVERHEAD + (np.asarray(chars, dtype=np.int64) + 3) // 4


def tier_costs(len_text: np.ndarray, len_summary: np.ndarray, len_headline: np.ndarray) -> np.ndarray:
    """(N, 4) token cost of each item at each tier, from its stored text lengths, indexed by ``Tier``; OUT costs 0."""
    costs = np.zeros((len(len_text), 4), dtype=np.int64)
    costs[:, Tier.HEADLINE] = tokens_for_length(len_headline)
    costs[:, Tier.SUMMARY] = tokens_for_length(len_summary)
    costs[:, Tier.FULL] = tokens_for_length(len_text)
    return costs


def total_tokens(tier: np.ndarray, costs: np.ndarray) -> int:
    """What items cost at ``tier`` (one tier per row of ``costs``)."""
    tier = np.asarray(tier, dtype=np.int64)
    return int(costs[np.arange(len(tier)), tier].sum()) if len(tier) else 0


def fit_budget(
    tier: np.ndarray, score: np.ndarray, costs: np.ndarray, budget: int
) -> np.ndarray:
    """Tiers lowered until the result costs at most ``budget`` tokens.

    Lower-scoring items lose resolution first, one step at a time (FULL to
    SUMMARY, then SUMMARY to HEADLINE) before any item is left out; only when
    every item is a headline are the lowest-scoring headlines dropped (OUT).
    Items already OUT stay out.
    """
    tier = np.asarray(tier, dtype=np.int64).copy()
    if len(tier) == 0:
        return tier.astype(np.int8)
    shown = tier > Tier.OUT
    if shown.any() and budget < costs[shown, Tier.HEADLINE].min():
        raise BudgetTooSmall(
            f"a budget of {budget} tokens cannot hold even one headline "
            f"(the smallest costs {int(costs[shown, Tier.HEADLINE].min())})."
        )
    order = np.argsort(score, kind="stable")  # lowest score first
    rows = np.arange(len(tier))

    def cost() -> int:
        return int(costs[rows, tier].sum())

    excess = cost() - budget
    # Each round lowers items one step, from the lowest score up, stopping as
    # soon as the saving covers the excess.
    for _ in range(2):
        if excess <= 0:
            break
        lowerable = order[tier[order] >= Tier.SUMMARY]
        savings = costs[lowerable, tier[lowerable]] - costs[lowerable, tier[lowerable] - 1]
        needed = int(np.searchsorted(np.cumsum(savings), excess)) + 1
        chosen = lowerable[:needed]
        tier[chosen] -= 1
        excess = cost() - budget
    if excess > 0:
        headlines = order[tier[order] == Tier.HEADLINE]
        savings = costs[headlines, Tier.HEADLINE]
        needed = int(np.searchsorted(np.cumsum(savings), excess)) + 1
        tier[headlines[:needed]] = Tier.OUT
    return tier.astype(np.int8)
