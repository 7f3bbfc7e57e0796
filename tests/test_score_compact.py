"""``scoring.score_compact``: a slider move's float32 rescoring keeps a search's float64 tiers.

The float32 L is within about 1e-6 of float64's; what must never differ is a
tier where a search could return the memory. The hard cases are memories whose
float64 L sits exactly on a threshold, where float32's rounding alone would
put about half of them on the wrong side.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lodviz import scoring
from lodviz.errors import InvalidParameters
from lodviz.params import Params
from tests.conftest import NOW

signed = st.floats(min_value=-1, max_value=1, allow_nan=False)
unit = st.floats(min_value=0, max_value=1, allow_nan=False)
ages = st.floats(min_value=0, max_value=5000, allow_nan=False)
lams = st.one_of(st.just(0.0), st.floats(min_value=1e-5, max_value=5, allow_nan=False))
alphas = st.floats(min_value=0, max_value=1, allow_nan=False)


def _inputs(s: list[float], age: list[float]) -> tuple[scoring.Compact, scoring.Compact]:
    return scoring.Compact.of(np.array(s)), scoring.Compact.of(np.array(age))


def _on_the_thresholds(s: np.ndarray, age: np.ndarray, alpha: float, lam: float, picks: tuple[int, int, int]) -> Params:
    """Params whose three thresholds are exactly the float64 L of three of the memories."""
    exact = scoring.score_aged(s, age, np.zeros(len(s), dtype=np.int8), Params(alpha=alpha, lam=lam))
    t1, t2, t3 = sorted({float(exact.score[i]) for i in picks}, reverse=True)
    return Params(alpha=alpha, lam=lam, theta1=t1, theta2=t2, theta3=t3)


def _naive_tiers(scored: scoring.Scored, params: Params) -> np.ndarray:
    """What float32 L alone would give: its own comparison with the thresholds."""
    score = np.asarray(scored.score, dtype=np.float32)
    return sum((score >= np.float32(t)).astype(np.int8) for t in params.thresholds)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(signed, ages, st.integers(0, 3)), min_size=1, max_size=60), alphas, lams, st.data())
def test_every_tier_is_score_aged_s_even_with_thresholds_exactly_on_scores(rows, alpha, lam, data):
    s = np.array([r[0] for r in rows])
    age = np.array([r[1] for r in rows])
    floor = np.array([r[2] for r in rows], dtype=np.int8)
    picks = data.draw(st.lists(st.integers(0, len(rows) - 1), min_size=3, max_size=3))
    try:
        params = _on_the_thresholds(s, age, alpha, lam, tuple(picks))
    except (ValueError, InvalidParameters):  # two picks with one L, or an L outside [0, 1]
        params = Params(alpha=alpha, lam=lam)
    want = scoring.score_aged(s, age, floor, params)
    got = scoring.score_compact(*_inputs(list(s), list(age)), floor, params)
    assert np.array_equal(got.tier, want.tier)
    assert np.allclose(got.score, want.score, rtol=0, atol=2e-6)
    assert np.allclose(got.decay, want.decay, rtol=0, atol=2e-6)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(unit, ages), min_size=1, max_size=60), alphas, lams, st.data())
def test_with_exact_rows_those_rows_take_score_aged_s_tiers(rows, alpha, lam, data):
    s = np.array([r[0] for r in rows])
    age = np.array([r[1] for r in rows])
    floor = np.zeros(len(rows), dtype=np.int8)
    chosen = np.array(sorted(set(data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=len(rows))))), dtype=np.int64)
    try:
        params = _on_the_thresholds(s, age, alpha, lam, tuple(int(i) for i in chosen[:3]))
    except (ValueError, InvalidParameters):  # fewer than three distinct L, or one outside [0, 1]
        params = Params(alpha=alpha, lam=lam)
    want = scoring.score_aged(s, age, floor, params)
    got = scoring.score_compact(*_inputs(list(s), list(age)), floor, params, chosen)
    assert np.array_equal(got.tier[chosen], want.tier[chosen])
    # Elsewhere a tier agrees with the float32 L shown beside it.
    assert np.array_equal(np.delete(got.tier, chosen), np.delete(_naive_tiers(got, params), chosen))


def _a_case_float32_gets_wrong() -> tuple[np.ndarray, np.ndarray, Params]:
    """Memories with thresholds exactly on three of their scores, where float32 alone misplaces one."""
    for seed in range(200):
        rng = np.random.default_rng(seed)
        s, age = rng.uniform(0, 1, 50), rng.uniform(0, 300, 50)
        params = _on_the_thresholds(s, age, 0.37, 0.041, (3, 17, 31))
        want = scoring.score_aged(s, age, np.zeros(50, dtype=np.int8), params)
        d = np.exp(np.float32(-params.lam) * age.astype(np.float32))
        naive = np.float32(params.alpha) * s.astype(np.float32) + np.float32(1 - params.alpha) * d
        if not np.array_equal(_naive_tiers(scoring.Scored(s, d, d, naive, want.tier), params), want.tier):
            return s, age, params
    raise AssertionError("no seed where float32 alone misplaces a memory at a threshold")


def test_a_memory_exactly_on_a_threshold_keeps_a_search_s_tier_where_float32_alone_would_not():
    s, age, params = _a_case_float32_gets_wrong()
    floor = np.zeros(len(s), dtype=np.int8)
    want = scoring.score_aged(s, age, floor, params)
    for rows in (None, np.arange(len(s))):
        got = scoring.score_compact(*_inputs(list(s), list(age)), floor, params, rows)
        assert np.array_equal(got.tier, want.tier)


def test_the_float32_scores_are_float32_and_close():
    rng = np.random.default_rng(1)
    s, age = rng.uniform(0, 1, 1000), rng.uniform(0, 2000, 1000)
    got = scoring.score_compact(*_inputs(list(s), list(age)), np.zeros(1000, dtype=np.int8), Params(lam=0.3))
    want = scoring.score_aged(s, age, np.zeros(1000, dtype=np.int8), Params(lam=0.3))
    assert got.score.dtype == np.float32 and got.decay.dtype == np.float32
    assert np.abs(got.score - want.score).max() < 1e-6


@pytest.mark.parametrize("lam", [1e7, 0.0])
def test_a_huge_lambda_or_none_still_gives_score_aged_s_tiers(lam):
    rng = np.random.default_rng(2)
    s, age = rng.uniform(0, 1, 500), rng.uniform(0, 50, 500)
    age[:5] = 0.0
    params = Params(alpha=0.5, lam=lam, theta1=0.6, theta2=0.3, theta3=0.1)
    floor = np.zeros(500, dtype=np.int8)
    got = scoring.score_compact(*_inputs(list(s), list(age)), floor, params)
    assert np.array_equal(got.tier, scoring.score_aged(s, age, floor, params).tier)


def test_the_landscape_gives_every_candidate_the_tier_a_search_returns_it_at(mem):
    for i in range(80):
        mem.add(
            f"Supplier audit note {i}: the Hyderabad plant, batch {i * 7}, inspection {i % 5}.",
            agent_id="ops",
            created_at=NOW - timedelta(days=i * 1.37),
        )
    base = mem.profile(None).with_(k=60, alpha=0.61, lam=0.043)
    query = "supplier audit of the Hyderabad plant"
    scores = sorted({item.score for item in mem.search(query, params=base, now=NOW, touch=False).items}, reverse=True)
    assert len(scores) >= 30
    # Thresholds exactly on returned scores: where float32's rounding alone would move some tiers.
    for j in range(0, 27, 2):
        params = base.with_(theta1=scores[j], theta2=scores[j + 1], theta3=scores[j + 3])
        result = mem.search(query, params=params, now=NOW, touch=False)
        land = mem.landscape(query, params=params, now=NOW)
        shown = {i: t for i, t in zip(land.state.ids.tolist(), land.returned_tiers().tolist()) if t > 0}
        assert shown == {item.id: int(item.tier) for item in result.items}
