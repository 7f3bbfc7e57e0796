"""Passage evidence: a passage's S, a long memory's best passage, and which passages an excerpt holds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lodviz import lexical as lex
from lodviz import scoring
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


def test_a_later_passage_that_names_what_the_best_one_lacks_is_worth_more_than_one_repeating_it() -> None:
    texts = [
        "Orchid CRM permissions export: every user of Orchid CRM and their role.",
        '{"user": "chloe.aziz", "role": "billing-viewer", "mfa": false}',
        "Orchid CRM permissions, continued: roles of Orchid CRM users in other teams.",
        "The weather in Lisbon was mild.",
    ]
    found = near.weigh("What permissions has Chloe Aziz been given in Orchid CRM?", np.array([1, 1, 1, 2]),
                       np.zeros((4, 2)), np.array([0.40, 0.25, 0.30, 0.10]), texts, lexical_weight=1.0)
    assert found.later is not None
    assert found.similarity[0] == found.similarity[:3].max()  # the opening is the memory's best passage
    assert found.later[1] > found.similarity[1]  # it names the user the opening does not
    assert found.later[1] > found.later[2]  # the continuation repeats what the opening said
    assert found.later[2] >= found.similarity[2] - near.NOTHING_NEW


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.floats(0, 1), st.lists(st.integers(0, 3), min_size=3, max_size=3)),
                min_size=1, max_size=25))
def test_a_later_passage_never_outranks_its_memorys_best_nor_falls_more_than_nothing_new(rows) -> None:
    owner = np.array([o for o, _, _ in rows])
    cosine = np.array([c for _, c, _ in rows])
    tf = np.array([t for _, _, t in rows], dtype=np.float64).T
    parts, most = lex.bm25_terms(tf, np.maximum(tf.sum(axis=0), 1.0))
    similarity = scoring.fuse(cosine, lex.normalised(parts.sum(axis=0), float(most.sum())), 1.0)
    later = near.added(owner, cosine, similarity, parts, most, 1.0)
    for memory in set(owner.tolist()):
        own = owner == memory
        assert (later[own] <= similarity[own].max() + 1e-12).all()
        assert later[own][np.argmax(similarity[own])] == similarity[own].max()
    assert (later >= similarity - near.NOTHING_NEW - 1e-12).all()


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

