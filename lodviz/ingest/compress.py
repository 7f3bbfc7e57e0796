"""Compressors: one text in, a summary (about 20% of its length) and a headline out.

Compression happens once, at write time. The default runs offline with no LLM:
it splits the text into sentences, embeds them with the store's embedding
model, and keeps the most central ones (closest to the text's mean sentence
vector) in their original order until the summary reaches its share of the
length; the headline is the most central short sentence. Texts shorter than
``short_threshold`` characters are their own summary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from lodviz.ingest.embed import Embedder


@dataclass(frozen=True)
class Compressed:
    summary: str
    headline: str


class Compressor(Protocol):
    def compress(self, texts: Sequence[str]) -> list[Compressed]: ...


_SENTENCE_END = re.compile(r"(?<=[.!?;:])[\"”')\]]*\s+(?=[\"“'(\[]?[A-Z0-9@#$£€-])")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences and lines of ``text``, without empty pieces or bullet markers."""
    pieces: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        if not line:
            continue
        pieces.extend(part.strip() for part in _SENTENCE_END.split(line) if part.strip())
    return pieces


def shorten(sentence: str, max_words: int) -> str:
    """One sentence of at most ``max_words`` words, cut at a clause if it can be."""
    words = sentence.split()
    if len(words) <= max_words:
        return sentence.strip()
    head = " ".join(words[:max_words])
    for mark in (";", " - ", " — ", ",", ":"):
        cut = head.rfind(mark)
        if cut >= len(head) // 2:
            return head[:cut].rstrip(" ,;:-—") + "…"
    return head.rstrip(" ,;:-—") + "…"


class ExtractiveCompressor:
    """Sentence-centrality extraction with the store's own embedding model."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        ratio: float = 0.2,
        short_threshold: int = 240,
        headline_words: int = 22,
    ) -> None:
        self.embedder = embedder
        self.ratio = ratio
        self.short_threshold = short_threshold
        self.headline_words = headline_words

    def compress(self, texts: Sequence[str]) -> list[Compressed]:
        split = [split_sentences(t) or [t.strip()] for t in texts]
        # One embedding call for every sentence of the batch that needs ranking.
        needs = [i for i, s in enumerate(split) if len(s) > 1]
        flat = [sentence for i in needs for sentence in split[i]]
        vectors = self.embedder.embed(flat) if flat else np.zeros((0, 1), dtype=np.float32)
        out: list[Compressed] = []
        position = 0
        ranked: dict[int, np.ndarray] = {}
        for i in needs:
            n = len(split[i])
            block = vectors[position : position + n]
            position += n
            centre = block.mean(axis=0)
            # Centrality, with a small lead bias: agents' notes, like news, tend
            # to state the point first.
            lead = 0.12 * (1.0 - np.arange(n) / n)
            ranked[i] = np.argsort(-(block @ centre + lead), kind="stable")
        for i, text in enumerate(texts):
            sentences = split[i]
            order = ranked.get(i, np.arange(len(sentences)))
            out.append(self._compress_one(text.strip(), sentences, order))
        return out

    def _compress_one(self, text: str, sentences: list[str], order: np.ndarray) -> Compressed:
        headline = self._headline(sentences, order)
        if len(text) <= self.short_threshold or len(sentences) == 1:
            summary = text if len(text) <= self.short_threshold else self._trim(text)
            return Compressed(summary=summary, headline=headline)
        target = max(self.ratio * len(text), 1)
        chosen: list[int] = []
        length = 0
        for index in order:
            if length >= target:
                break
            if chosen and length + len(sentences[index]) > 1.6 * target:
                continue  # a long sentence would overshoot; try a shorter one
            chosen.append(int(index))
            length += len(sentences[index]) + 1
        summary = " ".join(sentences[j] for j in sorted(chosen))
        if len(summary) > 1.6 * target + 80:
            summary = self._trim(summary)
        return Compressed(summary=summary, headline=headline)

    def _trim(self, text: str) -> str:
        limit = max(int(self.ratio * len(text)), self.short_threshold)
        return shorten(text, max(limit // 6, self.headline_words))

    def _headline(self, sentences: list[str], order: np.ndarray) -> str:
        # The most central sentence that is short enough; else the most central, cut.
        for index in order:
            if len(sentences[index].split()) <= self.headline_words:
                if len(sentences[index].split()) >= 4 or len(sentences) == 1:
                    return sentences[index].strip()
        return shorten(sentences[int(order[0])], self.headline_words)
