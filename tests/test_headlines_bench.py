"""The headline benchmark's ranking and metrics on hand-made vectors (no model)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.headlines import before_headline, own_ranks, rank_summary


def test_own_ranks_and_metrics_on_a_hand_made_example() -> None:
    docs = np.array([
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 0.0, 2.0],  # doc 3 points where doc 2 does: norms do not matter
    ])
    queries = np.array([
        [3.0, 0.1, 0.0],  # closest to doc 0: rank 1
        [0.9, 0.5, 0.0],  # doc 0 beats doc 1: rank 2
        [0.0, 0.0, 1.0],  # doc 3 ties doc 2: ties lose, rank 2
        [0.0, 1.0, 0.2],  # docs 1 beats doc 3, doc 2 ties it: rank 3
    ])
    assert own_ranks(queries, docs).tolist() == [1, 2, 2, 3]
    # In pools {0, 1} and {2, 3} query 1 still loses to doc 0, query 3 competes with doc 2 only.
    assert own_ranks(queries, docs, ["a", "a", "b", "b"]).tolist() == [1, 2, 2, 2]
    summary = rank_summary([1, 2, 2, 3, 7])
    assert summary["n"] == 5
    assert summary["hit@1"] == pytest.approx(0.2)
    assert summary["hit@5"] == pytest.approx(0.8)
    assert summary["mrr"] == pytest.approx((1 + 0.5 + 0.5 + 1 / 3 + 1 / 7) / 5)
    assert rank_summary([])["mrr"] is None
    # The previous headline rule: a lead under 6 words takes the next sentence; 22 words at most.
    assert before_headline("Decisions today. The board approved the budget. Then lunch.") == "Decisions today. The board approved the budget."
    assert before_headline("The board approved the budget for 2026. Then lunch.") == "The board approved the budget for 2026."
    assert len(before_headline(" ".join(["word"] * 40) + ".").split()) <= 22
