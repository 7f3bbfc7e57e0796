"""Fitting long memories as excerpts: passage by passage in order of relevance, never over the budget."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lodviz.budget import LATER_PASSAGE_DISCOUNT, Excerpts, fit_excerpts
from lodviz.errors import BudgetTooSmall
from lodviz.scoring import Tier


@st.composite
def cases(draw):
    n = draw(st.integers(1, 12))
    headline = np.array(draw(st.lists(st.integers(3, 20), min_size=n, max_size=n)))
    costs = np.zeros((n, 4), dtype=np.int64)
    costs[:, 1] = headline
    costs[:, 2] = headline + np.array(draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)))
    costs[:, 3] = costs[:, 2] + np.array(draw(st.lists(st.integers(0, 400), min_size=n, max_size=n)))
    natural = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    long = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    item, pkey, pcost, words = [], [], [], []
    for i in np.flatnonzero(long).tolist():
        for _ in range(draw(st.integers(1, 6))):
            item.append(i)
            pkey.append(draw(st.floats(0, 1)))
            pcost.append(draw(st.integers(2, 60)))
            words.append(draw(st.integers(1, 50)))
    keys = np.sort(np.array(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))))[::-1].copy()
    excerpts = Excerpts(
        item=np.array(item, dtype=np.int64), key=np.array(pkey), cost=np.array(pcost, dtype=np.int64),
        words=np.array(words, dtype=np.int64), opening=np.full(n, 3), share=np.array(draw(st.lists(st.integers(1, 120), min_size=n, max_size=n))),
        headline=headline.copy(),
    )
    budget = draw(st.integers(1, int(costs[:, 3].sum()) + 50))
    return natural, costs, keys, excerpts, budget


def spent(natural, costs, excerpts, fitted) -> int:
    total = 0
    for i, tier in enumerate(fitted.tiers.tolist()):
        rows = excerpts.item == i
        if tier == Tier.SUMMARY and rows.any():
            total += int(excerpts.opening[i]) + int(excerpts.cost[rows & fitted.passages].sum())
            total += int(excerpts.headline[i]) if fitted.headed[i] else 0
        elif tier:
            total += int(costs[i, tier])
    return total


def run(case):
    natural, costs, keys, excerpts, budget = case
    return fit_excerpts(natural, costs, budget, excerpts=excerpts, keys=keys)


@given(cases())
def test_excerpts_never_exceed_the_budget(case):
    try:
        fitted = run(case)
    except BudgetTooSmall:
        return
    assert spent(*case[:2], case[3], fitted) <= case[4]


@given(cases())
def test_an_excerpt_holds_passages_only_of_a_memory_at_summary_and_within_its_share(case):
    natural, _, _, excerpts, _ = case
    try:
        fitted = run(case)
    except BudgetTooSmall:
        return
    assert (fitted.tiers <= natural).all()
    for i in range(len(natural)):
        rows = (excerpts.item == i) & fitted.passages
        if fitted.tiers[i] != Tier.SUMMARY:
            assert not rows.any()
        elif rows.sum() > 1:
            assert excerpts.words[rows].sum() <= excerpts.share[i]
        if (excerpts.item == i).any() and fitted.tiers[i] == Tier.SUMMARY:
            assert rows.any()  # an excerpt is never empty


def test_passages_are_taken_by_relevance_across_memories():
    # Two long memories whose passages alternate in relevance; room for three passages.
    natural = np.array([Tier.SUMMARY, Tier.SUMMARY])
    costs = np.array([[0, 5, 50, 500], [0, 5, 50, 500]])
    excerpts = Excerpts(
        item=np.array([0, 0, 1, 1]), key=np.array([0.9, 0.5, 0.8, 0.7]), cost=np.array([10, 10, 10, 10]),
        words=np.array([5, 5, 5, 5]), opening=np.array([2, 2]), share=np.array([100, 100]), headline=np.array([5, 5]),
    )
    fitted = fit_excerpts(natural, costs, 34, excerpts=excerpts, keys=np.array([0.9, 0.8]))
    assert fitted.tiers.tolist() == [Tier.SUMMARY, Tier.SUMMARY]
    assert fitted.passages.tolist() == [True, False, True, True]  # 0.9, 0.8, 0.7; not 0.5
    assert not fitted.headed.any()  # no room left for a headline


def test_an_excerpt_gets_its_headline_when_room_is_left():
    natural = np.array([Tier.SUMMARY])
    costs = np.array([[0, 5, 50, 500]])
    excerpts = Excerpts(
        item=np.array([0]), key=np.array([0.9]), cost=np.array([10]), words=np.array([5]),
        opening=np.array([2]), share=np.array([100]), headline=np.array([5]),
    )
    fitted = fit_excerpts(natural, costs, 40, excerpts=excerpts, keys=np.array([0.9]))
    assert fitted.headed.tolist() == [True]


def test_a_short_memory_between_passages_comes_in_its_place():
    natural = np.array([Tier.SUMMARY, Tier.SUMMARY])
    costs = np.array([[0, 5, 50, 500], [0, 5, 12, 12]])
    excerpts = Excerpts(
        item=np.array([0, 0]), key=np.array([0.9, 0.3]), cost=np.array([10, 10]), words=np.array([5, 5]),
        opening=np.array([2, 2]), share=np.array([100, 100]), headline=np.array([5, 5]),
    )
    fitted = fit_excerpts(natural, costs, 25, excerpts=excerpts, keys=np.array([0.9, 0.5]))
    assert fitted.tiers.tolist() == [Tier.SUMMARY, Tier.SUMMARY]
    assert fitted.passages.tolist() == [True, False]  # the short memory (0.5) before the weaker passage (0.3)


def _second_passage_against_a_best_one(margin: float) -> list[bool]:
    """Memory 0's two passages (0.9, then 0.7 + margin) against memory 1's best (0.7); room for two passages."""
    natural = np.array([Tier.SUMMARY, Tier.SUMMARY])
    costs = np.array([[0, 5, 50, 500], [0, 5, 50, 500]])
    excerpts = Excerpts(
        item=np.array([0, 0, 1]), key=np.array([0.9, 0.7 + margin, 0.7]), cost=np.array([10, 10, 10]),
        words=np.array([5, 5, 5]), opening=np.array([2, 2]), share=np.array([100, 100]), headline=np.array([5, 5]),
    )
    return fit_excerpts(natural, costs, 24, excerpts=excerpts, keys=np.array([0.9, 0.7])).passages.tolist()


def test_a_memorys_later_passage_queues_behind_another_memorys_best_one_a_little_less_relevant():
    assert _second_passage_against_a_best_one(LATER_PASSAGE_DISCOUNT / 2) == [True, False, True]


def test_a_memorys_later_passage_much_more_relevant_still_comes_first():
    assert _second_passage_against_a_best_one(LATER_PASSAGE_DISCOUNT * 3) == [True, True, False]


def test_a_later_passage_queues_by_what_it_adds_not_by_its_own_relevance():
    # Memory 0: its best (0.9), a passage near the query that adds nothing new (0.8 alone, 0.6 as a later one),
    # and one that names what the best lacks (0.65 alone, 0.85 as a later one); room for two passages.
    natural = np.array([Tier.SUMMARY])
    costs = np.array([[0, 5, 50, 500]])
    excerpts = Excerpts(
        item=np.array([0, 0, 0]), key=np.array([0.9, 0.8, 0.65]), cost=np.array([10, 10, 10]), words=np.array([5, 5, 5]),
        opening=np.array([2]), share=np.array([100]), headline=np.array([5]), later=np.array([0.9, 0.6, 0.85]),
    )
    assert fit_excerpts(natural, costs, 22, excerpts=excerpts, keys=np.array([0.9])).passages.tolist() == [True, False, True]
