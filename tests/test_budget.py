"""A token budget is never exceeded, and resolution drops before items do."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lodviz.budget import estimate_tokens, fit_budget, total_tokens
from lodviz.errors import BudgetTooSmall
from lodviz.scoring import Tier


@st.composite
def results(draw):
    n = draw(st.integers(1, 40))
    headline = draw(st.lists(st.integers(5, 20), min_size=n, max_size=n))
    summary = [h + draw(st.integers(0, 60)) for h in headline]
    full = [s + draw(st.integers(0, 300)) for s in summary]
    costs = np.zeros((n, 4), dtype=np.int64)
    costs[:, 1], costs[:, 2], costs[:, 3] = headline, summary, full
    tiers = np.array(draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)))
    scores = np.array(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    budget = draw(st.integers(int(costs[:, 1].min()), int(costs[np.arange(n), tiers].sum()) + 10))
    return tiers, scores, costs, budget


@given(results())
def test_budget_is_never_exceeded(case):
    tiers, scores, costs, budget = case
    fitted = fit_budget(tiers, scores, costs, budget)
    assert total_tokens(fitted, costs) <= budget


@given(results())
def test_no_item_is_dropped_while_any_item_is_above_headline(case):
    tiers, scores, costs, budget = case
    fitted = fit_budget(tiers, scores, costs, budget)
    if (fitted == Tier.OUT).any():
        assert (fitted[fitted > Tier.OUT] == Tier.HEADLINE).all()


@given(results())
def test_tiers_only_go_down(case):
    tiers, scores, costs, budget = case
    assert (fit_budget(tiers, scores, costs, budget) <= tiers).all()


def test_lower_scoring_items_lose_resolution_first():
    costs = np.array([[0, 5, 50, 200]] * 3)
    tiers = np.array([Tier.FULL, Tier.FULL, Tier.FULL])
    scores = np.array([0.9, 0.5, 0.7])
    fitted = fit_budget(tiers, scores, costs, budget=460)  # needs 140 saved: one FULL -> SUMMARY is 150
    assert fitted.tolist() == [Tier.FULL, Tier.SUMMARY, Tier.FULL]


def test_a_result_that_fits_is_unchanged():
    costs = np.array([[0, 5, 50, 200]] * 2)
    tiers = np.array([Tier.FULL, Tier.HEADLINE])
    assert fit_budget(tiers, np.array([0.9, 0.2]), costs, 1000).tolist() == tiers.tolist()


def test_budget_below_one_headline_is_refused():
    costs = np.array([[0, 9, 50, 200]])
    with pytest.raises(BudgetTooSmall, match="cannot hold even one headline"):
        fit_budget(np.array([Tier.FULL]), np.array([0.9]), costs, 8)


def test_token_estimate_counts_characters_and_overhead():
    assert estimate_tokens("") == estimate_tokens("a") - 1
    assert estimate_tokens("x" * 400) > estimate_tokens("x" * 40)
