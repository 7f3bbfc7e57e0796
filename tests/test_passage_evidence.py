"""Passage evidence: a passage's S, a long memory's best passage, and which passages an excerpt holds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lodviz.search import passages as near


def test_a_passage_naming_the_querys_rare_word_is_raised_above_its_cosine() -> None:
    texts = ["We talked about the weather all day.", "The code for the vault is AUR-302, keep it safe."]
    found = near.weigh("what is the vault code", np.array([1, 1]), np.array([[0, 10], [11, 40]]),
                       np.array([0.30, 0.30]), texts, lexical_weight=1.0)
    assert found.similarity[1] > found.similarity[0]
    assert found.similarity[1] > 0.30


def test_without_lexical_weight_a_passages_s_is_its_cosine() -> None:
    found = near.weigh("vault code", np.array([1]), np.array([[0, 5]]), np.array([0.4]), ["vault code"], 0.0)
    assert found.similarity.tolist() == [0.4]


def test_a_memorys_best_passage_is_the_highest_of_its_own() -> None:
    found = near.Near(
        owner=np.array([7, 7, 9, 4]), spans=np.zeros((4, 2)), cosine=np.zeros(4), lexical=np.zeros(4),
        similarity=np.array([0.2, 0.6, 0.5, 0.1]),
    )
    assert near.best(found, np.array([9, 7, 3])).tolist() == [0.5, 0.6, 0.0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 120), st.floats(0, 1)), min_size=1, max_size=30), st.integers(0, 400))
def test_an_excerpt_holds_the_nearest_passage_and_no_more_than_its_share(items: list[tuple[int, float]], share: int) -> None:
    words = np.array([w for w, _ in items])
    s = np.array([x for _, x in items])
    chosen = near.choose(words, s, share)
    assert chosen == sorted(chosen)
    assert s[chosen].max() == s.max()  # the nearest passage is always there
    used = int(words[chosen].sum())
    assert used <= max(share, int(words[int(np.argmax(s))]))
    for i in set(range(len(words))) - set(chosen):
        assert used + words[i] > share  # a passage left out did not fit

