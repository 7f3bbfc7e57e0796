"""A text read whole gives its sentences' vectors from the same pass (``lodviz.ingest.pooling``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lodviz.ingest import pipeline
from lodviz.ingest.compress import ExtractiveCompressor
from lodviz.ingest.pooling import pool_spans

NOTE = (
    "The supplier shipped lot 7 two weeks late. The buyer wants a credit note for the delay. "
    "Legal says the contract caps penalties at 5% of the order. Finance will book the credit in March. "
    "Nobody has asked the carrier why the container sat in Rotterdam."
)


def test_a_span_pools_the_tokens_inside_it_and_only_those():
    tokens = np.array([[0, 0], [1, 0], [0, 1], [5, 5]], dtype=np.float32)
    offsets = np.array([[0, 0], [0, 3], [4, 8], [0, 0]])  # [CLS], two words, [SEP]
    (first, both) = pool_spans(tokens, offsets, [(0, 3), (0, 8)])
    assert np.allclose(first, [1, 0])
    assert np.allclose(both, [2**-0.5, 2**-0.5])


def test_a_span_with_no_token_gives_no_vectors():
    tokens = np.ones((3, 2), dtype=np.float32)
    offsets = np.array([[0, 0], [0, 3], [0, 0]])
    assert pool_spans(tokens, offsets, [(0, 3), (4, 9)]) is None


@given(st.lists(st.lists(st.floats(-10, 10), min_size=3, max_size=3), min_size=1, max_size=12), st.data())
def test_pooled_vectors_are_unit_vectors_along_their_tokens_mean(rows, data):
    tokens = np.array(rows, dtype=np.float32)
    n = len(rows)
    offsets = np.array([[2 * k, 2 * k + 1] for k in range(n)])
    start = data.draw(st.integers(0, n - 1))
    stop = data.draw(st.integers(start, n - 1))
    (vector,) = pool_spans(tokens, offsets, [(2 * start, 2 * stop + 1)])
    mean = tokens[start : stop + 1].mean(axis=0)
    if np.linalg.norm(mean) > 1e-3:
        assert np.isclose(np.linalg.norm(vector), 1.0, atol=1e-5)
        assert np.allclose(vector, mean / np.linalg.norm(mean), atol=1e-4)


def test_the_sentence_spans_are_where_the_compressor_s_sentences_are(embedder):
    compressor = ExtractiveCompressor(embedder)
    (spans,) = compressor.sentence_spans(["  " + NOTE])
    assert [("  " + NOTE)[a:b] for a, b in spans][:2] == ["The supplier shipped lot 7 two weeks late.", "The buyer wants a credit note for the delay."]
    assert compressor.sentence_spans(["CAPA plan due 30 June."]) == [[]]  # a short text ranks nothing


@pytest.mark.model
def test_the_model_s_vectors_with_spans_are_embed_s_vectors_bit_for_bit(model_embedder):
    texts = [NOTE, "CAPA plan due 30 June.", "Two lines.\nThe second one is here."]
    vectors, _ = model_embedder.embed_with_spans(texts, [[], [], []])
    assert np.array_equal(vectors, model_embedder.embed(texts))


@pytest.mark.model
def test_pooled_sentence_vectors_point_where_the_sentences_alone_do(model_embedder):
    compressor = ExtractiveCompressor(model_embedder)
    (spans,) = compressor.sentence_spans([NOTE])
    _, (pooled,) = model_embedder.embed_with_spans([NOTE], [spans])
    alone = model_embedder.embed([NOTE[a:b] for a, b in spans])
    assert pooled is not None and pooled.shape == alone.shape
    others = pooled @ alone.T
    own = np.diagonal(others)  # each pooled vector against its own sentence alone
    assert own.min() > 0.6
    # Nearest to its own sentence (compared as an argmax: one dot product computed two ways can differ in the last bit).
    assert (others.argmax(axis=1) == np.arange(len(spans))).all()


@pytest.mark.model
def test_a_span_past_the_model_s_window_is_not_pooled(model_embedder):
    long_text = " ".join(f"Sentence {k} says the lot {k} shipped on day {k}." for k in range(80))
    spans = ExtractiveCompressor(model_embedder).sentence_spans([long_text])[0]
    _, (pooled,) = model_embedder.embed_with_spans([long_text], [spans])
    assert pooled is None


class CountingEmbedder:
    """The real model, counting the texts of every call."""

    def __init__(self, inner):
        self._inner = inner
        self.calls: list[list[str]] = []

    def __getattr__(self, attribute):
        return getattr(self._inner, attribute)

    def embed(self, texts):
        self.calls.append(list(texts))
        return self._inner.embed(texts)

    def embed_with_spans(self, texts, spans):
        self.calls.append(list(texts))
        return self._inner.embed_with_spans(texts, spans)


@pytest.mark.model
def test_a_text_read_whole_is_embedded_once_for_its_vector_and_its_sentences(model_embedder):
    counting = CountingEmbedder(model_embedder)
    compressed, vectors = pipeline.compress_and_embed([NOTE], ExtractiveCompressor(counting), counting, "auto", None)
    assert counting.calls == [[NOTE]]
    assert np.array_equal(vectors, model_embedder.embed([NOTE]))
    assert compressed[0].summary.startswith("The supplier shipped lot 7 two weeks late.")


@pytest.mark.model
def test_a_text_too_long_for_the_window_embeds_its_sentences_and_then_its_summary(model_embedder):
    long_text = " ".join(f"Sentence {k} says the lot {k} shipped on day {k}." for k in range(80))
    counting = CountingEmbedder(model_embedder)
    compressed, vectors = pipeline.compress_and_embed([NOTE, long_text], ExtractiveCompressor(counting), counting, "auto", None)
    assert counting.calls[0] == [NOTE]  # the one that fits, read once
    assert counting.calls[-1] == [compressed[1].summary]  # the long one's vector is its summary's
    assert np.array_equal(vectors[1], model_embedder.embed([compressed[1].summary])[0])
