"""Test doubles for lodviz and for users' own tests: a deterministic embedder.

``HashEmbedder`` turns text into a bag-of-words vector by hashing each word
(and each pair of adjacent words) into a fixed number of dimensions. It needs
no model, loads instantly and gives the same vector for the same text on any
machine; texts that share words are similar, texts that share none are not.
It is not a language model: paraphrases that share no words look unrelated.
Use it where a test pins store, scoring or interface behaviour; judge
retrieval quality with a real model.

    import lodviz
    from lodviz.testing import HashEmbedder

    mem = lodviz.open(tmp_path / "t.duckdb", embedder=HashEmbedder())
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"[\w']+", re.UNICODE)


class HashEmbedder:
    """A deterministic, model-free ``Embedder`` (see the module docstring)."""

    def __init__(self, dimension: int = 64, *, name: str | None = None, tokenizer_source: str | None = None) -> None:
        if dimension < 2:
            raise ValueError("dimension must be at least 2")
        self._dimension = dimension
        self.name = name or f"lodviz-hash-{dimension}"
        # Budgets count with this tokenizer (a Hugging Face name or path) when
        # given, so a test can pin token counts without the model's weights.
        self.tokenizer_source = tokenizer_source

    @property
    def dimension(self) -> int:
        return self._dimension

    def _slot(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self._dimension, 1.0 if (value >> 63) & 1 else -1.0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            words = [w.lower() for w in _WORD.findall(text)]
            tokens = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
            if not tokens:  # punctuation only: still a vector, from the characters
                tokens = [text.strip() or "<empty>"]
            for token in tokens:
                slot, sign = self._slot(token)
                out[row, slot] += sign
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
            else:  # every token cancelled out: a fixed direction, never a zero vector
                out[row, self._slot(text)[0]] = 1.0
        return out

    def __repr__(self) -> str:
        return f"HashEmbedder({self._dimension})"


__all__ = ["HashEmbedder"]
