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
of the headings that group them (a day's, and the year's above it), each paid
once, by the first item under it; the caller verifies the rendered text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lodviz.errors import BudgetTooSmall
from lodviz.params import MIN_BUDGET  # budgets below it cannot hold a header and one headline
from lodviz.scoring import Tier

# The fitting loops compare plain ints: each IntEnum member lookup is a Python call, a few thousand a search.
_OUT, _HEADLINE, _SUMMARY, _FULL = int(Tier.OUT), int(Tier.HEADLINE), int(Tier.SUMMARY), int(Tier.FULL)

#: Tokens an item costs beyond its text in the estimate the app shows.
ITEM_OVERHEAD = 2
#: The budget policies: the default, and the alternative it was measured against.
POLICIES = ("readable-first", "coverage-first")
#: A long memory's later passages queue this much relevance (S) behind their own, so that another
#: memory's best passage a little less relevant comes first: the benchmark's long sets read as much
#: or more with more distinct memories at 0.03, and less on documents at 0.1 (docs/retrieval.md).
LATER_PASSAGE_DISCOUNT = 0.03


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


@dataclass(frozen=True)
class Excerpts:
    """The passages of a fit's long memories: what an excerpt of each may hold, and what each costs.

    One row per passage: ``item`` is the candidate it belongs to (a row of the
    fit's ``natural``/``costs``), ``key`` its relevance (its S, less the
    candidate's penalty), ``cost`` the tokens it adds to its excerpt's line,
    ``words`` its length. Per candidate: ``opening`` is the tokens of an
    excerpt line that holds no passage yet ("#12 …"), ``share`` the words an
    excerpt may hold, ``headline`` the tokens a headline adds to it.
    """

    item: np.ndarray
    key: np.ndarray
    cost: np.ndarray
    words: np.ndarray
    opening: np.ndarray
    share: np.ndarray
    headline: np.ndarray
    #: Per passage: its relevance as a later passage of its memory (what it adds to the best); None: ``key``.
    later: np.ndarray | None = None


@dataclass
class Fitted:
    """A fit's answer: each candidate's tier, and for excerpts which passages they hold and whether a headline."""

    tiers: np.ndarray
    passages: np.ndarray  # per passage row of ``Excerpts``: taken
    headed: np.ndarray  # per candidate: its excerpt opens with its headline


def fit(
    natural: np.ndarray,
    costs: np.ndarray,
    budget: int,
    *,
    groups: np.ndarray | None = None,
    group_costs: np.ndarray | None = None,
    parents: np.ndarray | None = None,
    detail_order: np.ndarray | None = None,
    policy: str = "readable-first",
) -> np.ndarray:
    """Tiers for candidates given in order of relevance, within ``budget`` tokens.

    ``natural`` is each candidate's tier by L and floor (OUT: not returned);
    ``costs[i, t]`` the tokens of candidate i's line at tier t; ``groups[i]``
    the date group candidate i is listed under, whose heading costs
    ``group_costs[groups[i]]`` once; ``parents[g]`` the group that group g is
    listed under (its year; -1: none), paid once with the first of its groups;
    ``detail_order`` the candidates by L,
    highest first (default: relevance order). Returns the tiers (OUT = left out).

    ``policy`` "coverage-first" is the alternative it was measured against:
    every candidate a headline first, in order of relevance, then detail back
    by L (docs/retrieval.md).
    """
    return fit_excerpts(
        natural, costs, budget, groups=groups, group_costs=group_costs, parents=parents, detail_order=detail_order,
        policy=policy,
    ).tiers


def fit_excerpts(
    natural: np.ndarray,
    costs: np.ndarray,
    budget: int,
    *,
    groups: np.ndarray | None = None,
    group_costs: np.ndarray | None = None,
    parents: np.ndarray | None = None,
    detail_order: np.ndarray | None = None,
    policy: str = "readable-first",
    excerpts: Excerpts | None = None,
    keys: np.ndarray | None = None,
) -> Fitted:
    """``fit``, where long memories may come back at SUMMARY as excerpts of their passages nearest the query.

    With ``excerpts``, step 1 takes *units* in order of relevance instead of
    candidates: a short memory is one unit (its ``keys`` entry, the
    candidate's relevance), a long memory's passages one unit each (its best
    passage at the memory's own relevance, so that it enters where it ranks;
    its later passages ``LATER_PASSAGE_DISCOUNT`` behind their own).
    A long memory's first unit opens its excerpt (or a headline if that no
    longer fits); each later one adds its passage while the excerpt stays
    within the memory's share and the budget. Detail is given up before
    coverage here too, at the grain of a passage: a relevant passage of one
    memory comes before a less relevant one of another. Step 2 may replace an
    excerpt by the full text where its tier is FULL and it fits; last, by
    relevance, excerpts get their headline in front where room is left.
    Without ``excerpts`` this is ``fit`` exactly.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown budget policy {policy!r}; choose one of {', '.join(POLICIES)}.")
    natural = np.asarray(natural, dtype=np.int64)
    n = len(natural)
    out = np.zeros(n, dtype=np.int64)
    taken = np.zeros(len(excerpts.item) if excerpts is not None else 0, dtype=bool)
    headed = np.zeros(n, dtype=bool)
    if n == 0:
        return Fitted(out.astype(np.int8), taken, headed)
    groups = np.zeros(n, dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    group_costs = np.zeros(int(groups.max()) + 1, dtype=np.int64) if group_costs is None else np.asarray(group_costs, dtype=np.int64)
    charged = np.zeros(len(group_costs), dtype=bool)
    parents = np.full(len(group_costs), -1, dtype=np.int64) if parents is None else np.asarray(parents, dtype=np.int64)
    heading = headings(group_costs, parents)
    shown = natural > _OUT
    if shown.any():
        cheapest = costs[shown, _HEADLINE] + heading[groups[shown]]
        if budget < int(cheapest.min()):
            raise BudgetTooSmall(
                f"a budget of {budget} tokens (after the result's header) cannot hold even one headline "
                f"(the smallest costs {int(cheapest.min())})."
            )
    left = int(budget)
    spent = np.zeros(n, dtype=np.int64)  # what each candidate's line costs as taken so far
    long = np.zeros(n, dtype=bool)
    used_words = np.zeros(n, dtype=np.int64)
    if excerpts is not None and len(excerpts.item):
        long[np.asarray(excerpts.item, dtype=np.int64)] = True

    def pay(i: int, cost: int) -> bool:
        """Make candidate i's line cost ``cost`` (and its day's heading, and its year's, if it is their first)."""
        nonlocal left
        extra = cost - int(spent[i])
        g = int(groups[i])
        parent = int(parents[g])
        if not out[i] and not charged[g]:
            extra += int(group_costs[g])
            if parent >= 0 and not charged[parent]:
                extra += int(group_costs[parent])
        if extra > left:
            return False
        left -= extra
        if not out[i]:
            charged[g] = True
            if parent >= 0:
                charged[parent] = True
        spent[i] = cost
        return True

    def take(i: int, tier: int) -> bool:
        if not pay(i, int(costs[i, tier])):
            return False
        out[i] = tier
        return True

    def extend(p: int) -> None:
        """Passage ``p`` into its memory's excerpt (opening the excerpt, or a headline, if it is the first)."""
        assert excerpts is not None
        i = int(excerpts.item[p])
        if not shown[i]:
            return
        if natural[i] == _HEADLINE:
            if not out[i]:
                take(i, _HEADLINE)
            return
        if out[i] == _SUMMARY:
            if used_words[i] + int(excerpts.words[p]) > int(excerpts.share[i]):
                return
            if pay(i, int(spent[i]) + int(excerpts.cost[p])):
                taken[p] = True
                used_words[i] += int(excerpts.words[p])
            return
        if pay(i, int(excerpts.opening[i]) + int(excerpts.cost[p])):
            out[i] = _SUMMARY
            taken[p] = True
            used_words[i] = int(excerpts.words[p])
        elif not out[i]:
            take(i, _HEADLINE)

    # 1. Coverage by relevance, readable where the tier allows (a long memory: passage by passage).
    if excerpts is None or not len(excerpts.item):
        units = [(i, -1) for i in range(n)]
    else:
        units = _units(n, long, excerpts, keys)
    for i, p in units:
        if p >= 0:
            extend(p)
            continue
        if not shown[i]:
            continue
        first = _HEADLINE if policy == "coverage-first" else min(int(natural[i]), _SUMMARY)
        if not take(i, first) and first > _HEADLINE:
            take(i, _HEADLINE)
    # 2. Full text back by L (coverage-first: any detail back by L).
    for i in (np.arange(n) if detail_order is None else np.asarray(detail_order, dtype=np.int64)).tolist():
        if natural[i] == _FULL and out[i] == _SUMMARY:
            if take(i, _FULL) and long[i]:
                taken[excerpts.item == i] = False  # type: ignore[union-attr]
        elif policy == "coverage-first" and out[i] == _HEADLINE and natural[i] > _HEADLINE and not long[i]:
            for tier in range(int(natural[i]), _HEADLINE, -1):
                if take(i, tier):
                    break
    # 3. What step 1 cut to a headline, back by relevance (a long memory's passages had their turn).
    for i in range(n):
        if out[i] == _HEADLINE and natural[i] > _HEADLINE and not long[i]:
            for tier in range(int(natural[i]), _HEADLINE, -1):
                if take(i, tier):
                    break
    # 4. Excerpts get their headline in front, by relevance, where room is left.
    if excerpts is not None:
        for i in range(n):
            if long[i] and out[i] == _SUMMARY and pay(i, int(spent[i]) + int(excerpts.headline[i])):
                headed[i] = True
    return Fitted(out.astype(np.int8), taken, headed)


def headings(group_costs: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Each group's heading with its parent's (-1: none): what the first item under it pays when neither is paid yet."""
    group_costs, parents = np.asarray(group_costs, dtype=np.int64), np.asarray(parents, dtype=np.int64)
    return group_costs + np.where(parents >= 0, group_costs[np.maximum(parents, 0)], 0)


def _units(n: int, long: np.ndarray, excerpts: Excerpts, keys: np.ndarray | None) -> list[tuple[int, int]]:
    """Step 1's units in order of relevance: (candidate, -1) for a short memory, (candidate, passage) for a long one's."""
    item = np.asarray(excerpts.item, dtype=np.int64)
    relevance = np.asarray(keys, dtype=np.float64) if keys is not None else -np.arange(n, dtype=np.float64)
    pkey = np.asarray(excerpts.key, dtype=np.float64).copy()
    # A long memory's best passage stands at the memory's own relevance (it may rank by its whole text).
    best = np.full(n, -1, dtype=np.int64)
    for p in np.lexsort((-pkey, item)).tolist():
        if best[item[p]] < 0:
            best[item[p]] = p
    firsts = best[long]
    pkey[firsts] = np.maximum(pkey[firsts], relevance[long])
    later = np.ones(len(item), dtype=bool)
    later[firsts] = False
    if excerpts.later is not None:
        pkey[later] = np.asarray(excerpts.later, dtype=np.float64)[later]
    pkey[later] -= LATER_PASSAGE_DISCOUNT
    short = np.flatnonzero(~long)
    all_keys = np.concatenate([relevance[short], pkey])
    units = [(int(i), -1) for i in short] + [(int(item[p]), p) for p in range(len(item))]
    return [units[u] for u in np.argsort(-all_keys, kind="stable").tolist()]


__all__ = ["Excerpts", "Fitted", "fit", "fit_excerpts", "POLICIES", "estimate_tokens", "tokens_for_length", "tier_costs", "total_tokens", "MIN_BUDGET", "LATER_PASSAGE_DISCOUNT", "headings"]
