"""Vectors for parts of a text, pooled from the one pass the model made over the whole text.

The extractive compressor ranks a text's sentences by how central they are
(``lodviz.ingest.compress``), and used to embed every sentence in a pass of
its own: on an import of transcript turns that pass cost about as much as
embedding the memories themselves. A text that fits the model's window is
read whole anyway for its own vector; the model's token vectors from that
pass, averaged over the tokens inside a sentence (the model's own mean
pooling, restricted to a span), give the sentence a vector in the context of
its text at no further cost. On the sample sources the compressor then keeps
the same summary for 532 of 547 texts it ranks (benchmarks/pooled_sentences.py).

Pure: token vectors and character offsets in, unit vectors out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Span = tuple[int, int]


def pool_spans(token_vectors: np.ndarray, offsets: np.ndarray, spans: Sequence[Span]) -> np.ndarray | None:
    """Per span, the unit mean of the token vectors whose characters lie inside it.

    ``token_vectors`` is (tokens, dimension), ``offsets`` (tokens, 2) the
    characters each token was read from (a special token's are (0, 0)). None
    when a span holds no token at all: then no vector says what it is about.
    """
    if not len(spans):
        return np.zeros((0, token_vectors.shape[1]), dtype=np.float32)
    starts, stops = offsets[:, 0], offsets[:, 1]
    real = stops > starts
    out = np.empty((len(spans), token_vectors.shape[1]), dtype=np.float32)
    for row, (start, stop) in enumerate(spans):
        inside = real & (starts >= start) & (stops <= stop)
        if not inside.any():
            return None
        mean = token_vectors[inside].mean(axis=0)
        out[row] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return out


__all__ = ["pool_spans"]
