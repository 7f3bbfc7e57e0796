"""The scoring math of docs/contract.md, pinned with property tests."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from lodviz import scoring
from lodviz.errors import InvalidParameters
from lodviz.params import PRESETS, Params
from lodviz.scoring import Tier

days = st.floats(min_value=0, max_value=5000, allow_nan=False)
counts = st.integers(min_value=0, max_value=10_000)
lams = st.floats(min_value=1e-4, max_value=5, allow_nan=False)
unit = st.floats(min_value=0, max_value=1, allow_nan=False)


@given(counts, lams)
def test_decay_is_one_at_time_zero(r, lam):
    assert scoring.decay(np.array([0.0]), np.array([r]), lam)[0] == 1.0


@given(days, counts, lams)
def test_decay_stays_in_zero_one(t, r, lam):
    d = scoring.decay(np.array([t]), np.array([r]), lam)[0]
    assert 0.0 <= d <= 1.0


@given(days, st.floats(min_value=0.01, max_value=1000), counts, lams)
def test_decay_falls_with_time(t, dt, r, lam):
    d1, d2 = scoring.decay(np.array([t, t + dt]), np.array([r, r]), lam)
    assert d2 <= d1
    assume(d1 > 1e-300)
    assert d2 < d1


@given(st.floats(min_value=0.1, max_value=500), st.integers(0, 1000), lams)
def test_decay_falls_slower_as_retrievals_grow(t, r, lam):
    d_less, d_more = scoring.decay(np.array([t, t]), np.array([r, r + 1]), lam)
    assert d_more >= d_less


@given(st.floats(min_value=1, max_value=200), st.integers(1, 500))
def test_retrievals_have_diminishing_returns(t, r):
    # The effective decay rate lambda / (1 + ln(1 + r)) shrinks by less with each extra retrieval.
    rate = lambda n: 1 / (1 + math.log1p(n))  # noqa: E731
    gain_now = rate(r - 1) - rate(r)
    gain_next = rate(r) - rate(r + 1)
    assert gain_next < gain_now


def test_fifty_retrievals_decay_slower_but_not_fifty_times_slower():
    t, lam = 30.0, 0.1
    once, fifty = scoring.decay(np.array([t, t]), np.array([1, 50]), lam)
    assert fifty > once
    # The exponent shrinks by (1 + ln 51) / (1 + ln 2), about 2.9, not 50.
    assert math.log(once) / math.log(fifty) == pytest.approx((1 + math.log(51)) / (1 + math.log(2)))


def test_age_uses_last_retrieval_or_creation_and_clamps_at_zero():
    now = 10 * scoring.SECONDS_PER_DAY
    created = np.array([0.0, 0.0, 20 * scoring.SECONDS_PER_DAY])
    last = np.array([np.nan, 8 * scoring.SECONDS_PER_DAY, np.nan])
    assert scoring.age_days(now, created, last).tolist() == [10.0, 2.0, 0.0]


@given(unit, unit, unit)
def test_score_is_the_weighted_mix(alpha, s, d):
    assert scoring.lod_score(np.array([s]), np.array([d]), alpha)[0] == pytest.approx(alpha * s + (1 - alpha) * d)


def test_similarity_is_cosine_clamped_at_zero():
    matrix = scoring.normalize_rows(np.array([[1, 0], [0, 1], [-1, 0], [1, 1]], dtype=np.float32))
    s = scoring.similarity(np.array([2.0, 0.0]), matrix)
    assert s == pytest.approx([1.0, 0.0, 0.0, math.sqrt(0.5)], abs=1e-6)


def test_normalize_rows_gives_unit_rows_and_zero_for_empty_or_broken_ones():
    rows = scoring.normalize_rows(np.array([[3, 4], [0, 0], [np.nan, 1]], dtype=np.float32))
    assert rows.tolist() == [[0.6000000238418579, 0.800000011920929], [0.0, 0.0], [0.0, 0.0]]


thresholds = st.lists(st.floats(min_value=0.0, max_value=1.0, allow_nan=False), min_size=3, max_size=3, unique=True).map(
    lambda xs: sorted(xs, reverse=True)
)


@given(thresholds, st.lists(unit, min_size=1, max_size=50))
def test_tiers_respect_thresholds(ts, scores):
    params = Params(theta1=ts[0], theta2=ts[1], theta3=ts[2])
    tiers = scoring.tiers(np.array(scores), params)
    for score, tier in zip(scores, tiers):
        expected = (
            Tier.FULL if score >= ts[0] else Tier.SUMMARY if score >= ts[1] else Tier.HEADLINE if score >= ts[2] else Tier.OUT
        )
        assert tier == expected


@given(st.lists(unit, min_size=1, max_size=50), st.lists(st.integers(0, 3), min_size=50, max_size=50))
def test_floor_lifts_tier_to_at_least_the_floor_and_never_lowers_it(scores, floors):
    params = Params()
    floors = np.array(floors[: len(scores)], dtype=np.int8)
    plain = scoring.tiers(np.array(scores), params)
    lifted = scoring.tiers(np.array(scores), params, floors)
    assert (lifted >= floors).all()
    assert (lifted >= plain).all()
    assert ((lifted == plain) | (lifted == floors)).all()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"alpha": 1.5}, "alpha must be between 0 and 1"),
        ({"alpha": -0.1}, "alpha must be between 0 and 1"),
        ({"alpha": float("nan")}, "finite"),
        ({"lam": -1}, "lambda must be 0 or more"),
        ({"theta1": 0.3, "theta2": 0.5}, "theta1 > theta2 > theta3"),
        ({"theta2": 0.08, "theta3": 0.08}, "theta1 > theta2 > theta3"),
        ({"theta1": 1.2}, "theta1 must be between 0 and 1"),
        ({"k": 0}, "k must be between"),
        ({"k": 2.5}, "k must be a whole number"),
        ({"alpha": "high"}, "alpha must be a number"),
    ],
)
def test_bad_parameters_are_refused_not_clamped(changes, message):
    with pytest.raises(InvalidParameters, match=message):
        Params().with_(**changes)


def test_presets_order_alpha_as_the_concept_describes():
    assert PRESETS["research"].alpha > PRESETS["legal"].alpha > PRESETS["digest"].alpha
    assert PRESETS["research"].alpha >= 0.85 and PRESETS["digest"].alpha <= 0.2


@given(unit, st.floats(min_value=0, max_value=60), st.integers(0, 100), st.integers(0, 3), unit)
def test_explain_agrees_with_vectorised_scoring(s, t, r, floor, alpha):
    params = Params(alpha=alpha)
    placement = scoring.explain(s, t, r, floor, params)
    scored = scoring.score_all(np.array([s]), np.array([t]), np.array([r]), np.array([floor]), params)
    assert placement.score == pytest.approx(float(scored.score[0]))
    assert placement.tier == Tier(int(scored.tier[0]))
    assert placement.tier >= placement.floor
    assert placement.tier_by_score.name in placement.reason


@given(st.lists(unit, min_size=1, max_size=20), st.floats(min_value=0, max_value=1))
def test_exclusion_penalty_lowers_scores_and_never_below_zero(sims, weight):
    penalty = scoring.exclusion_penalty(np.array([sims]), weight)
    score = scoring.penalised(np.full(len(sims), 0.5), penalty)
    assert (score <= 0.5).all() and (score >= 0).all()
    assert penalty == pytest.approx(weight * np.array(sims))


def test_frequency_score_grows_with_use_from_zero():
    f = scoring.frequency_score(np.array([0, 1, 5, 50]))
    assert f[0] == 0 and (np.diff(f) > 0).all() and f[-1] < 1


@given(st.lists(st.tuples(days, counts, st.sampled_from([0, 1, 2, 3])), min_size=1, max_size=40))
def test_the_browsing_modes_never_return_less_than_a_headline(rows):
    t, r, floor = (np.array(col) for col in zip(*rows))
    params = Params()
    for scored in (scoring.score_by_frequency(t, r, floor.astype(np.int8), params), scoring.score_by_recency(t, r, floor.astype(np.int8), params)):
        assert (scored.tier >= Tier.HEADLINE).all() and (scored.tier >= floor).all()
    resurfaced = scoring.score_resurfaced(scoring.decay(t, r, params.lam), floor.astype(np.int8))
    assert (resurfaced.tier >= Tier.SUMMARY).all()


@given(st.lists(unit, min_size=1, max_size=50))
def test_resurfacing_favours_the_most_faded(d):
    d = np.array(d)
    weights = scoring.resurface_weights(d)
    assert weights.sum() == pytest.approx(1.0) and (weights > 0).all()
    faded, fresh = int(np.argmin(d)), int(np.argmax(d))
    assert weights[faded] >= weights[fresh]
