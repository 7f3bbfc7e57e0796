"""BM25 evidence: the kept term index counts what splitting the texts counts."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lodviz import lexical

WORDS = ["supplier", "shipped", "shipping", "late", "lots", "Lot", "AUR-302", "Tbilisi", "café", "naïve", "日本語",
         "under_score", "the", "and", "42", "2024-05-01", "x\x01y", "ÉTÉ", "adopted", "adopting", "Ⅻ", "½", "ß"]
texts_strategy = st.lists(
    st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=8)), max_size=12).map(" ".join), min_size=1, max_size=30
)


@settings(max_examples=60, deadline=None)
@given(texts=texts_strategy, split=st.integers(min_value=0, max_value=30), query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
def test_the_index_counts_what_splitting_the_texts_counts(texts, split, query):
    index = lexical.TermIndex()
    index.extend(texts[:split])  # rows arrive in batches: the counts do not depend on how
    index.extend(texts[split:])
    wanted = lexical.query_terms(" ".join(query)) + ["absentterm"]
    rows = np.arange(len(texts))[::-1]  # any order of rows
    tf, lengths = index.counts(rows, wanted)
    expected_tf, expected_lengths = lexical.counts(wanted, [texts[r] for r in rows])
    assert np.array_equal(tf, expected_tf)
    assert np.array_equal(lengths, expected_lengths)


def test_scores_from_the_index_equal_scores_of_the_texts():
    texts = [f"the supplier shipped lot {i} late to Tbilisi" if i % 3 else f"invoice {i} paid on time" for i in range(200)]
    index = lexical.TermIndex()
    index.extend(texts)
    rows = np.arange(0, 200, 7)
    query = "supplier shipping late Tbilisi"
    tf, lengths = index.counts(rows, lexical.query_terms(query))
    expected = lexical.text_scores(query, [texts[r] for r in rows])
    assert np.allclose(lexical.bm25(tf, lengths), expected, rtol=0, atol=1e-12)
    assert expected.max() > 0  # the query does match: the comparison is not of zeros


def test_a_replaced_row_counts_its_new_text():
    index = lexical.TermIndex()
    index.extend(["supplier shipped late", "supplier paid"])
    index.replace(0, "(forgotten)")
    tf, lengths = index.counts(np.array([0, 1]), ["supplier", "forgotten"])
    assert tf.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert lengths.tolist() == [1.0, 2.0]


def test_rows_appended_one_at_a_time_grow_the_index():
    index = lexical.TermIndex()
    for i in range(3000):
        index.extend([f"note {i} supplier"])
    assert len(index) == 3000
    tf, lengths = index.counts(np.array([0, 2999]), ["supplier", "2999"])
    assert tf.tolist() == [[1.0, 1.0], [0.0, 1.0]]
    assert lengths.tolist() == [3.0, 3.0]


@settings(max_examples=100, deadline=None)
@given(
    size=st.integers(2, 80),
    matching=st.lists(st.integers(1, 6), min_size=1, max_size=5),
    cosine=st.floats(0, 0.99),
)
def test_on_a_store_of_any_size_lexical_evidence_never_saturates_s_and_more_matches_score_higher(size, matching, cosine):
    # A store of ``size`` memories about other things, and a few that hold the query's terms 1-6 times each.
    others = [f"weekly canteen menu number {i} soup bread salad" for i in range(size)]
    holding = [" ".join(["load config"] * times + ["notes"]) for times in sorted(set(matching))]
    lex = lexical.text_scores("where do we load the config?", others + holding)
    s = 1.0 - (1.0 - cosine) * (1.0 - lex)  # scoring.fuse at weight 1
    assert (lex < 1.0).all() and (s < 1.0).all()
    held = lex[size:]
    assert (np.diff(held) > 0).all()  # a memory holding the terms more often is still told apart
    assert (lex[:size] == 0).all()


def test_lexical_evidence_is_the_linear_score_below_the_bend_and_below_1_above_it():
    score = np.array([0.0, 0.05, 0.39, 0.5, 1.0])  # x = score / 0.5: 0, 0.1, 0.78, 1, 2
    lex = lexical.normalised(score, 1.0)
    assert np.allclose(lex[:3], score[:3] / lexical.NORMALISE_AT)
    assert lexical.BEND_AT < lex[3] < lex[4] < 1.0
