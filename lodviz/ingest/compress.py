"""Compressors: one text in, a summary (about 20% of its length) and a headline out.

Compression happens once, at write time. The default runs offline with no LLM:
it splits the text into sentences, gives them vectors from the store's
embedding model (pooled from the text's own pass when the write pipeline has
one, ``lodviz.ingest.pooling``; else embedded alone), and keeps the most central ones (closest to the text's mean sentence
vector), after the lead sentence, in their original order until the summary
reaches its share of the length; the headline is the lead sentence, shortened
at a clause boundary to about 22 words. Texts shorter than
``short_threshold`` characters are their own summary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from lodviz.ingest.embed import Embedder


@dataclass(frozen=True)
class Compressed:
    summary: str
    headline: str


class Compressor(Protocol):
    def compress(self, texts: Sequence[str]) -> list[Compressed]: ...


class RanksSentences(Protocol):
    """A compressor that ranks sentences by their vectors, and takes them from its caller if it has them."""

    def sentence_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]: ...

    def compress(self, texts: Sequence[str], sentence_vectors: Sequence[np.ndarray | None] | None = None) -> list[Compressed]: ...


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


#: Words that carry no fact: function words, greetings, fillers, reactions.
_EMPTY = frozenset(
    """a an the and or but if of to in on at for with from by is are was were be been being am i me my mine
    we our ours us you your yours he him his she her hers it its they them their theirs this that these those
    do does did done doing have has had having not no yes so very really just what which who whom whose when
    where why how can could would should will shall may might must about as into than then there here up down
    out over again also too only own same such some any each few more most other all both get got getting go
    going went gone let oh ah um uh hmm okay ok yeah yep yup nope hey hi hiya hello bye thanks thank please
    sorry well like kind sort thing things stuff something anything nothing everything lot lots bit little
    much many way right guess know think mean feel said say says tell told see saw look looked sure maybe
    actually honestly basically literally totally pretty quite still even ever never always anyway though
    although because since while until now soon later good great nice fine cool fun bad wild crazy amazing
    awesome lovely wow haha lol ooh aw omg""".split()
)
_WORDS = re.compile(r"[^\W_][\w'’-]*", re.UNICODE)
# "Wes: ...", "Dr. Solberg: ...", "user: ...": a speaker or source label kept in front.
_LABEL = re.compile(r"^(?P<label>[^\W\d_][\w.'’ ()-]{0,38}?):[ \t]+(?=\S)", re.UNICODE)


def informativeness(sentence: str) -> float:
    """How much a sentence states: content words, names and numbers count; fillers do not."""
    score = 0.0
    for position, word in enumerate(_WORDS.findall(sentence)):
        lower = word.lower().strip("'’-")
        if any(ch.isdigit() for ch in word):
            score += 1.5
        elif lower in _EMPTY or len(lower) < 3:
            continue
        elif word[0].isupper() and position > 0:
            score += 1.5  # a name, mid-sentence
        else:
            score += 1.0
    return score


def split_label(text: str) -> tuple[str, str]:
    """("Wes: ", rest) for a text that opens with a short speaker or source label, else ("", text)."""
    match = _LABEL.match(text)
    if match and len(match.group("label").split()) <= 4 and "\n" not in match.group("label"):
        return match.group("label") + ": ", text[match.end():]
    return "", text


def split_title(body: str) -> tuple[str, str]:
    """(title, rest) when the first of several lines is a short title, else ("", body)."""
    first, newline, rest = body.partition("\n")
    first = first.strip()
    if newline and 0 < len(first.split()) <= 20 and informativeness(first) > 0:
        if any(informativeness(line) > 0 for line in rest.splitlines()):
            return first.rstrip(" :"), rest
    return "", body


class ExtractiveCompressor:
    """Extraction without an LLM: informative sentences, centrality from the store's own model.

    - headline: a text whose informative sentences fit ``headline_words``
      words is its own headline, fillers left out; otherwise its most
      informative sentence (the lead wins unless another states twice as
      much, as notes state their point first; a line that only introduces
      what follows counts half; a very short one takes the next along), cut
      at a clause; behind a title line, "title — that sentence"; a leading
      speaker label ("Wes: ") is kept.
    - summary: a text up to ``short_threshold`` characters keeps its
      informative sentences and drops greetings and fillers ("Oh hey!", "Do
      you know what I mean?") when that saves at least a fifth; a longer text
      keeps its lead and its most central sentences (closest to the mean
      sentence vector) in their original order, up to about ``ratio`` of its
      length.
    """

    LEAD_BONUS = 2.0
    MIN_SAVING = 0.2

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

    def sentence_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """Per text, where the sentences it ranks lie in it (character offsets); [] for a text that
        ranks none, or whose sentences are not verbatim pieces of it (a merged abbreviation's spaces)."""
        out: list[list[tuple[int, int]]] = []
        for text in texts:
            _, _, _, sentences = self._parts(text.strip())
            if not self._ranks(text, sentences):
                out.append([])
                continue
            spans: list[tuple[int, int]] = []
            at = 0
            for sentence in sentences:
                start = text.find(sentence, at)
                if start < 0:
                    spans = []
                    break
                spans.append((start, start + len(sentence)))
                at = start + len(sentence)
            out.append(spans)
        return out

    def compress(self, texts: Sequence[str], sentence_vectors: Sequence[np.ndarray | None] | None = None) -> list[Compressed]:
        """Summary and headline of each text. ``sentence_vectors``: per text, the vectors of the sentences
        of ``sentence_spans`` if the caller has them (pooled from the text's own pass: ``lodviz.ingest.pooling``),
        or None; the others are embedded here."""
        parts = [self._parts(text.strip()) for text in texts]
        given = list(sentence_vectors) if sentence_vectors is not None else [None] * len(texts)
        blocks: dict[int, np.ndarray] = {}
        for i, (_, _, _, sentences) in enumerate(parts):
            block = given[i]
            if block is not None and len(block) == len(sentences) and self._ranks(texts[i], sentences):
                blocks[i] = block
        # One embedding call for every other sentence of the batch that needs ranking;
        # a short text needs none.
        needs = [i for i, (_, _, _, sentences) in enumerate(parts) if i not in blocks and self._ranks(texts[i], sentences)]
        flat = [sentence for i in needs for sentence in parts[i][3]]
        vectors = self.embedder.embed(flat) if flat else np.zeros((0, 1), dtype=np.float32)
        position = 0
        for i in needs:
            n = len(parts[i][3])
            blocks[i] = vectors[position : position + n]
            position += n
        ranked = {i: np.argsort(-(block @ block.mean(axis=0)), kind="stable") for i, block in blocks.items()}
        out = []
        for i, text in enumerate(texts):
            label, title, body, sentences = parts[i]
            order = ranked.get(i, np.arange(len(sentences)))
            out.append(self._compress_one(text.strip(), label, title, sentences, order))
        return out

    def _ranks(self, text: str, sentences: Sequence[str]) -> bool:
        # Only a longer text of several sentences has sentences to rank.
        return len(sentences) > 1 and len(text.strip()) > self.short_threshold

    @staticmethod
    def _parts(text: str) -> tuple[str, str, str, list[str]]:
        label, body = split_label(text)
        title, body = split_title(body)
        sentences = split_sentences(body) or [body.strip() or text]
        return label, title, body, sentences

    def _compress_one(self, text: str, label: str, title: str, sentences: list[str], order: np.ndarray) -> Compressed:
        scores = [informativeness(s) * (self.LEAD_BONUS if j == 0 else 1.0) for j, s in enumerate(sentences)]
        headline, said = self._headline(label, title, sentences, scores)
        if len(text) <= self.short_threshold:
            kept = [s for s, score in zip(sentences, scores) if score > 0]
            body = " ".join(([title + ":"] if title else []) + kept)
            summary = label + body if kept else text
            if len(summary) > (1.0 - self.MIN_SAVING) * len(text):
                summary = text
            return _tiered(summary, headline)
        target = max(self.ratio * len(text), 1)
        # The lead states the point in agents' notes as in news (unless it is a
        # greeting); central sentences add what the rest is mostly about.
        chosen = [0] if scores[0] > 0 else []
        # The summary is the closer view of the same memory: it holds what the
        # headline says, even past the length it aims at.
        chosen += [j for j in said if j not in chosen]
        length = len(title) + sum(len(sentences[j]) + 1 for j in chosen)
        for index in order:
            index = int(index)
            if length >= target:
                break
            if index in chosen or scores[index] <= 0 or length + len(sentences[index]) > 1.6 * target:
                continue
            chosen.append(index)
            length += len(sentences[index]) + 1
        if not chosen:
            chosen = [int(order[0])]
        summary = label + " ".join(([title + ":"] if title else []) + [sentences[j] for j in sorted(chosen)])
        if len(summary) > 1.6 * target + 60:
            summary = shorten(summary, max(int(target / 6), self.headline_words + 8))
        if len(summary) < len(headline):  # shortening cut what the headline says
            summary = label + " ".join(([title + ":"] if title else []) + [sentences[j] for j in said])
        return _tiered(summary, headline)

    def _headline(self, label: str, title: str, sentences: list[str], scores: list[float]) -> tuple[str, list[int]]:
        """The headline, and the indices of the sentences it says."""
        informative = [j for j, score in enumerate(scores) if score > 0]
        if not title and informative and len(" ".join(sentences[j] for j in informative).split()) <= self.headline_words:
            # Short enough to say whole: its informative sentences, fillers left out.
            return (label + " ".join(sentences[j] for j in informative)).strip(), informative
        # A line that introduces ("Open questions:") says less than what follows it.
        ranked = [score * (0.5 if s.rstrip().endswith(":") else 1.0) for s, score in zip(sentences, scores)]
        best = max(range(len(sentences)), key=lambda j: (ranked[j], -j))
        sentence, said = sentences[best], [best]
        # A short sentence says little alone; the next one completes it.
        if len(sentence.split()) < 6 and best + 1 < len(sentences):
            sentence, said = f"{sentence} {sentences[best + 1]}", [best, best + 1]
        if title:
            head = shorten(title, max(self.headline_words // 2, 4)).rstrip("…")
            room = max(self.headline_words - len(head.split()), 6)
            return f"{label}{head} — {shorten(sentence, room)}".strip(), said
        return (label + shorten(sentence, self.headline_words)).strip(), said


def _tiered(summary: str, headline: str) -> Compressed:
    # Each tier is a coarser view than the one above it, never a longer one.
    return Compressed(summary=summary, headline=headline if len(headline) <= len(summary) else summary)
