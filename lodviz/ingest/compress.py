"""Compressors: one text in, a summary (about 20% of its length) and a headline out.

Compression happens once, at write time. The default runs offline with no LLM:
it splits the text into sentences, embeds them with the store's embedding
model, and keeps the most central ones (closest to the text's mean sentence
vector), after the lead sentence, in their original order until the summary
reaches its share of the length; the headline is the lead sentence, shortened
at a clause boundary to about 22 words. Texts shorter than
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


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”')\]]*\s+(?=[\"“'(\[]?[A-Z0-9@#$£€])")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
# A full stop after these is not the end of a sentence.
_ABBREVIATIONS = {
    "dr", "mr", "mrs", "ms", "prof", "st", "rev", "vs", "nos", "inc", "ltd", "co",
    "corp", "approx", "dept", "fig", "al", "e.g", "i.e", "etc", "jan", "feb", "mar", "apr",
    "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "art", "sec", "para", "cl",
    "v", "u.s", "u.k", "ph.d", "m.d", "mg", "vol", "p", "pp", "est",
}


def split_sentences(text: str) -> list[str]:
    """Sentences and lines of ``text``, without empty pieces or bullet markers."""
    pieces: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        if not line:
            continue
        current = ""
        for part in _SENTENCE_END.split(line):
            current = f"{current} {part}".strip() if current else part.strip()
            words = current.rstrip(".").split()  # "...." leaves no word at all
            last = words[-1].lower().lstrip("([\"'“") if words else ""
            if current.endswith(".") and (last in _ABBREVIATIONS or len(last) == 1):
                continue  # "Dr. Solberg", "rev. Nov", "J. Smith": keep going
            if current:
                pieces.append(current)
            current = ""
        if current:
            pieces.append(current)
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
        # One embedding call for every sentence of the batch that needs ranking;
        # a text up to short_threshold is its own summary, so it needs none.
        needs = [
            i for i, s in enumerate(split) if len(s) > 1 and len(texts[i].strip()) > self.short_threshold
        ]
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
            ranked[i] = np.argsort(-(block @ centre), kind="stable")
        for i, text in enumerate(texts):
            sentences = split[i]
            order = ranked.get(i, np.arange(len(sentences)))
            out.append(self._compress_one(text.strip(), sentences, order))
        return out

    def _compress_one(self, text: str, sentences: list[str], order: np.ndarray) -> Compressed:
        headline = self._headline(sentences)
        if len(text) <= self.short_threshold:
            return Compressed(summary=text, headline=headline)
        target = max(self.ratio * len(text), 1)
        # The lead states the point in agents' notes as in news; central
        # sentences add what the rest of the text is mostly about.
        chosen = [0]
        length = len(sentences[0])
        for index in order:
            index = int(index)
            if length >= target:
                break
            if index in chosen or length + len(sentences[index]) > 1.6 * target:
                continue
            chosen.append(index)
            length += len(sentences[index]) + 1
        summary = " ".join(sentences[j] for j in sorted(chosen))
        if len(summary) > 1.6 * target + 60:
            summary = shorten(summary, max(int(target / 6), self.headline_words + 8))
        return Compressed(summary=summary, headline=headline)

    def _headline(self, sentences: list[str]) -> str:
        lead = sentences[0]
        # A lead like "Board, 12 Dec — decisions:" says little alone; join the next.
        if len(lead.split()) < 6 and len(sentences) > 1:
            lead = f"{lead} {sentences[1]}"
        return shorten(lead, self.headline_words)
