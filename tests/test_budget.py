"""Fitting a result into a budget: never over, coverage by relevance, resolution capped by L."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lodviz.budget import POLICIES, fit
from lodviz.errors import BudgetTooSmall
from lodviz.scoring import Tier


@st.composite
def candidates(draw):
    """Candidates in relevance order: natural tiers, line costs per tier, day groups, a budget."""
    n = draw(st.integers(1, 40))
    headline = np.array(draw(st.lists(st.integers(3, 20), min_size=n, max_size=n)))
    summary = headline + np.array(draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)))
    full = summary + np.array(draw(st.lists(st.integers(0, 300), min_size=n, max_size=n)))
    costs = np.zeros((n, 4), dtype=np.int64)
    costs[:, 1], costs[:, 2], costs[:, 3] = headline, summary, full
    natural = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    groups = np.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)))
    group_costs = np.array(draw(st.lists(st.integers(0, 6), min_size=6, max_size=6)))
    order = np.array(draw(st.permutations(list(range(n)))))
    cheapest = int((costs[:, 1] + group_costs[groups]).min())
    budget = draw(st.integers(cheapest, int(costs[:, 3].sum() + group_costs.sum()) + 10))
    policy = draw(st.sampled_from(POLICIES))
    return natural, costs, groups, group_costs, order, budget, policy


def spent(tiers, costs, groups, group_costs) -> int:
    shown = tiers > Tier.OUT
    return int(costs[np.flatnonzero(shown), tiers[shown]].sum() + group_costs[np.unique(groups[shown])].sum())


def run(case):
    natural, costs, groups, group_costs, order, budget, policy = case
    return fit(natural, costs, budget, groups=groups, group_costs=group_costs, detail_order=order, policy=policy)


@given(candidates())
def test_the_budget_is_never_exceeded(case):
    natural, costs, groups, group_costs, _, budget, _ = case
    try:
        tiers = run(case)
    except BudgetTooSmall:
        return
    assert spent(tiers, costs, groups, group_costs) <= budget


@given(candidates())
def test_no_memory_comes_back_sharper_than_its_tier(case):
    try:
        tiers = run(case)
    except BudgetTooSmall:
        return
    assert (tiers <= case[0]).all()


@given(candidates())
def test_a_more_relevant_memory_is_left_out_only_when_it_was_the_larger(case):
    natural, costs, groups, group_costs, _, _, _ = case
    try:
        tiers = run(case)
    except BudgetTooSmall:
        return
    for i in np.flatnonzero((natural > Tier.OUT) & (tiers == Tier.OUT)):
        for j in np.flatnonzero(tiers > Tier.OUT):
            if j > i:
                assert costs[j, Tier.HEADLINE] < costs[i, Tier.HEADLINE] + group_costs[groups[i]]


@given(candidates())
def test_the_best_memory_stays_readable_when_the_budget_holds_it(case):
    natural, costs, groups, group_costs, order, budget, _ = case
    shown = np.flatnonzero(natural > Tier.OUT)
    if not len(shown):
        return
    best = shown[0]
    if natural[best] < Tier.SUMMARY or costs[best, Tier.SUMMARY] + group_costs[groups[best]] > budget:
        return
    tiers = fit(natural, costs, budget, groups=groups, group_costs=group_costs, detail_order=order)
    assert tiers[best] >= Tier.SUMMARY


def test_a_result_that_fits_comes_back_at_its_tiers():
    costs = np.array([[0, 5, 50, 200]] * 3)
    natural = np.array([Tier.FULL, Tier.HEADLINE, Tier.SUMMARY])
    assert fit(natural, costs, 1000).tolist() == natural.tolist()


def test_full_text_is_given_up_first_by_l():
    costs = np.array([[0, 5, 50, 200]] * 3)
    natural = np.array([Tier.FULL, Tier.FULL, Tier.FULL])
    by_l = np.array([2, 1, 0])  # by L, highest first: the most relevant candidate has the lowest L
    tiers = fit(natural, costs, budget=460, detail_order=by_l)  # room for two full texts and a summary
    assert tiers.tolist() == [Tier.SUMMARY, Tier.FULL, Tier.FULL]


def test_coverage_follows_relevance_not_l():
    costs = np.array([[0, 10, 10, 10]] * 4)
    natural = np.array([Tier.HEADLINE, Tier.SUMMARY, Tier.FULL, Tier.FULL])
    tiers = fit(natural, costs, budget=20, detail_order=np.array([3, 2, 1, 0]))
    assert tiers.tolist() == [Tier.HEADLINE, Tier.SUMMARY, Tier.OUT, Tier.OUT]


def test_coverage_first_gives_every_candidate_a_headline_before_any_detail():
    costs = np.array([[0, 5, 40, 40]] * 4)
    natural = np.array([Tier.FULL] * 4)
    tiers = fit(natural, costs, budget=20 + 35, policy="coverage-first")
    assert (tiers > Tier.OUT).all() and (tiers == Tier.FULL).sum() == 1


def test_a_day_heading_is_paid_once():
    costs = np.array([[0, 5, 5, 5]] * 3)
    tiers = fit(np.array([Tier.FULL] * 3), costs, budget=19, groups=np.array([0, 0, 0]), group_costs=np.array([4]))
    assert (tiers == Tier.FULL).all()


def test_a_year_heading_is_paid_once_with_the_first_of_its_days():
    costs = np.array([[0, 5, 5, 5]] * 3)
    # Two days (groups 0, 1) under one year (group 2): 15 for the lines, 2 + 2 for the days, 2 for the year.
    days_under_a_year = dict(groups=np.array([0, 0, 1]), group_costs=np.array([2, 2, 2]), parents=np.array([2, 2, -1]))
    assert (fit(np.array([Tier.FULL] * 3), costs, budget=21, **days_under_a_year) == Tier.FULL).all()
    assert (fit(np.array([Tier.FULL] * 3), costs, budget=20, **days_under_a_year) == Tier.OUT).sum() == 1


@given(candidates(), st.lists(st.integers(0, 6), min_size=6, max_size=6))
def test_days_under_years_never_exceed_the_budget(case, year_costs):
    natural, costs, groups, group_costs, order, budget, policy = case
    # Days 0-2 under year 6, days 3-5 under year 7.
    all_costs = np.concatenate([group_costs, np.array(year_costs[:2])])
    parents = np.array([6, 6, 6, 7, 7, 7, -1, -1])
    try:
        tiers = fit(natural, costs, budget, groups=groups, group_costs=all_costs, parents=parents, detail_order=order, policy=policy)
    except BudgetTooSmall:
        return
    shown = tiers > Tier.OUT
    used = np.unique(groups[shown])
    headings = all_costs[used].sum() + all_costs[np.unique(parents[used])].sum()
    assert costs[np.flatnonzero(shown), tiers[shown]].sum() + headings <= budget


def test_a_budget_below_one_headline_is_refused():
    costs = np.array([[0, 9, 50, 200]])
    with pytest.raises(BudgetTooSmall, match="cannot hold even one headline"):
        fit(np.array([Tier.FULL]), costs, 8)


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="unknown budget policy"):
        fit(np.array([Tier.FULL]), np.array([[0, 1, 1, 1]]), 10, policy="random")
