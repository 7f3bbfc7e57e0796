"""``selection.top_k``: exactly the k largest, whichever way the sample falls."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lodviz import selection


def reference(scores: np.ndarray, k: int) -> np.ndarray:
    """A full sort: largest first, equal scores by index."""
    return np.lexsort((np.arange(len(scores)), -scores))[:k]


# Few distinct values make ties at the boundary common; -inf marks a hidden memory.
few_values = st.sampled_from([-np.inf, -1.0, 0.0, 0.25, 0.5, 0.5000001, 1.0])
many_values = st.floats(-1.0, 1.0, width=32, allow_nan=False)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    scores=arrays(np.float32, st.integers(0, 3000), elements=st.one_of(few_values, many_values)),
    k=st.integers(0, 400),
)
def test_top_k_is_a_full_sort_cut_at_k(scores: np.ndarray, k: int) -> None:
    assert selection.top_k(scores, k).tolist() == reference(scores, k).tolist()


@settings(max_examples=100, deadline=None)
@given(
    scores=arrays(np.float32, st.integers(1, 3000), elements=many_values),
    k=st.integers(1, 400),
)
def test_unordered_top_k_holds_the_same_rows_by_index(scores: np.ndarray, k: int) -> None:
    assert selection.top_k(scores, k, ordered=False).tolist() == sorted(reference(scores, k).tolist())


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    scores=arrays(np.float32, st.integers(1, 2000), elements=st.one_of(few_values, many_values)),
    k=st.integers(1, 200),
    step=st.integers(1, 8),
)
def test_the_sampled_path_agrees_at_any_stride(scores: np.ndarray, k: int, step: int) -> None:
    k = min(k, len(scores))
    rows = selection._top_rows(scores, k, step, min_spread=0)  # always tries the sample
    assert rows.tolist() == sorted(reference(scores, k).tolist())


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    scores=arrays(np.float32, st.integers(1, 2000), elements=st.one_of(few_values, many_values)),
    mask_seed=st.integers(0, 2**32 - 1),
    share=st.floats(0.0, 1.0),
    k=st.integers(1, 200),
    step=st.integers(1, 8),
)
def test_top_k_among_a_mask_is_the_full_sort_of_the_eligible(scores, mask_seed, share, k, step) -> None:
    among = np.random.default_rng(mask_seed).random(len(scores)) < share
    eligible = np.flatnonzero(among)
    expected = eligible[reference(scores[eligible], k)].tolist()
    assert selection.top_k(scores, k, among=among).tolist() == expected
    assert selection._top_rows(scores, min(k, len(eligible)), step, 0, among).tolist() == sorted(expected)


def test_top_k_among_a_mask_on_a_large_array_takes_the_sampled_path_and_agrees() -> None:
    rng = np.random.default_rng(9)
    scores = rng.standard_normal(300_000).astype(np.float32)
    among = rng.random(300_000) < 0.3
    eligible = np.flatnonzero(among)
    assert selection.top_k(scores, 1000, among=among).tolist() == eligible[reference(scores[eligible], 1000)].tolist()


def test_a_threshold_that_lets_too_few_through_falls_back_to_the_whole_array() -> None:
    # Scores high exactly on the sampled stride: the sample's threshold sits among the
    # highest, too few pass it, and the whole array must decide.
    n, k = 200_000, 1000
    rng = np.random.default_rng(5)
    scores = rng.uniform(0.0, 0.5, n).astype(np.float32)
    scores[:: selection.SAMPLE_STEP] = rng.uniform(0.5, 1.0, len(scores[:: selection.SAMPLE_STEP]))
    sample = scores[:: selection.SAMPLE_STEP]
    threshold = np.sort(sample)[-int(np.ceil(selection.MARGIN * k / selection.SAMPLE_STEP))]
    assert (scores >= threshold).sum() < k  # the path this test is about
    assert selection.top_k(scores, k).tolist() == reference(scores, k).tolist()


def test_large_random_scores_take_the_sampled_path_and_agree() -> None:
    rng = np.random.default_rng(3)
    scores = rng.standard_normal(300_000).astype(np.float32)
    sample = scores[:: selection.SAMPLE_STEP]
    threshold = np.sort(sample)[-int(np.ceil(selection.MARGIN * 1000 / selection.SAMPLE_STEP))]
    assert (scores >= threshold).sum() >= 1000  # the sampled threshold holds: the path this test is about
    assert selection.top_k(scores, 1000).tolist() == reference(scores, 1000).tolist()


def test_many_ties_at_the_boundary_keep_the_lowest_indices() -> None:
    scores = np.full(100_000, 0.5, dtype=np.float32)
    scores[[7, 70_000]] = 0.9
    assert selection.top_k(scores, 5).tolist() == [7, 70_000, 0, 1, 2]
