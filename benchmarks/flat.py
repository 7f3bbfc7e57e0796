"""Flat retrieval baselines: what a user would build with the same model, for the same tokens.

The retrieval benchmark (``benchmarks/retrieval.py``) gives each of these, for
each question, exactly the real tokens lodviz's default profile used on it
(``allowance``), and fills them greedily in rank order; the first item that does
not fit whole is cut to the tokens left (at a word boundary) and the fill stops,
so a flat reader spends what lodviz spent, to within a word.

``flat-memories``  whole memories ranked by cosine to the question (each memory
                   embedded once, as the model reads it: MiniLM reads the first
                   256 word pieces of a long one)
``flat-passages``  passages ranked by cosine
``flat-hybrid``    passages ranked by BM25 and by cosine, fused by reciprocal
                   rank fusion (k = 60): the hybrid a RAG user builds

Passages (the chunking a RAG user would choose):

- a transcript (a conversation's turns, a session) is cut at its turns: one
  passage per turn, ``"Speaker: text"``;
- a document or a tool's output is cut into sentence windows: its sentences
  (every line, cut after ``.``/``!``/``?`` before a capital or digit, as
  ``benchmarks.reading`` splits them) packed in order into windows of at most
  ``WINDOW_TOKENS`` (100) MiniLM tokens, a window closed at a paragraph break
  (a blank line) once it holds ``WINDOW_MIN_TOKENS`` (50), a sentence longer
  than a window a window of its own, no overlap; a window's text is the
  verbatim slice of the document from its first sentence to its last.

BM25 is Okapi BM25 (k1 = 1.5, b = 0.75, idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``)
over lower-case word tokens (``\\w+``), written here: lodviz's own lexical code
is not used, so the baseline does not move when lodviz does. Only passages
with a positive BM25 score enter the lexical ranking; every passage is in the
cosine ranking; RRF scores ``sum 1 / (k + rank)`` (ranks from 1), ties broken
by the better of the two ranks, then by position.

Pure functions: texts, vectors and a token counter in, orders and texts out.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

TokenCount = Callable[[str], int]

RRF_K = 60
BM25_K1 = 1.5
BM25_B = 0.75
WINDOW_TOKENS = 100
WINDOW_MIN_TOKENS = 50

_WORD = re.compile(r"\w+")
_NONSPACE = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”')\]]*\s+(?=[\"“'(\[]?[A-Z0-9])")


# -- lexical ----------------------------------------------------------------------


def word_tokens(text: str) -> list[str]:
    """Lower-case word tokens."""
    return _WORD.findall(text.lower())


class BM25:
    """Okapi BM25 over a fixed corpus (see the module docstring)."""

    def __init__(self, texts: Sequence[str], k1: float = BM25_K1, b: float = BM25_B) -> None:
        self.k1, self.b = k1, b
        self.n = len(texts)
        postings: dict[str, tuple[list[int], list[int]]] = {}
        lengths = np.zeros(self.n, dtype=np.float64)
        for i, text in enumerate(texts):
            tokens = word_tokens(text)
            lengths[i] = len(tokens)
            for term, tf in Counter(tokens).items():
                docs, tfs = postings.setdefault(term, ([], []))
                docs.append(i)
                tfs.append(tf)
        self.lengths = lengths
        avgdl = float(lengths.mean()) if self.n and lengths.sum() else 1.0
        self.norm = k1 * (1.0 - b + b * lengths / avgdl)  # the length part of each document's denominator
        self.postings = {t: (np.asarray(d, dtype=np.int64), np.asarray(f, dtype=np.float64)) for t, (d, f) in postings.items()}

    def idf(self, term: str) -> float:
        df = len(self.postings[term][0]) if term in self.postings else 0
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> np.ndarray:
        """The BM25 score of every document for ``query`` (a query term counts once per occurrence)."""
        out = np.zeros(self.n, dtype=np.float64)
        for term, qtf in Counter(word_tokens(query)).items():
            if term not in self.postings:
                continue
            docs, tfs = self.postings[term]
            out[docs] += qtf * self.idf(term) * tfs * (self.k1 + 1.0) / (tfs + self.norm[docs])
        return out


# -- rankings ---------------------------------------------------------------------


def rank_scores(scores: np.ndarray, positive_only: bool = False) -> list[int]:
    """Indices by descending score, ties in index order; with ``positive_only`` only scores > 0."""
    order = np.argsort(-scores, kind="stable")
    if positive_only:
        order = order[scores[order] > 0]
    return [int(i) for i in order]


def rank_cosine(query_vector: np.ndarray, vectors: np.ndarray) -> list[int]:
    """Indices of ``vectors`` (unit rows) by descending cosine to ``query_vector``."""
    if len(vectors) == 0:
        return []
    return rank_scores(vectors @ query_vector)


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Reciprocal rank fusion: ``sum 1 / (k + rank)`` over the rankings an item is in (ranks from 1).

    Ties: the item with the better best rank first, then the lower index.
    """
    score: dict[int, float] = {}
    best: dict[int, int] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
            best[item] = min(best.get(item, rank), rank)
    return sorted(score, key=lambda item: (-score[item], best[item], item))


def hybrid_order(query: str, query_vector: np.ndarray, bm25: BM25, vectors: np.ndarray, k: int = RRF_K) -> list[int]:
    """Passages by BM25 and cosine fused with RRF."""
    return rrf([rank_scores(bm25.scores(query), positive_only=True), rank_cosine(query_vector, vectors)], k)


# -- filling a token allowance -------------------------------------------------------


def cut_to_tokens(text: str, tokens: int, count: TokenCount) -> str:
    """The longest prefix of ``text`` ending at a word end with at most ``tokens`` tokens ("" if none)."""
    if tokens <= 0:
        return ""
    ends = [m.end() for m in _NONSPACE.finditer(text)]
    lo, hi = 0, len(ends)  # the answer is the largest i with count(text[:ends[i - 1]]) <= tokens
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[: ends[mid - 1]]) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[: ends[lo - 1]] if lo else ""


@dataclass
class Fill:
    """What a greedy fill took: item indices in order, their texts (the last one maybe cut), the tokens."""

    chosen: list[int]
    pieces: list[str]
    tokens: int
    cut: bool  # the last piece is a cut item

    @property
    def text(self) -> str:
        # Joined with "\n", which a WordPiece tokenizer (and a whitespace counter) does not count.
        return "\n".join(self.pieces)


Cut = Callable[[str, int, TokenCount], str]


def greedy_fill(texts: Sequence[str], order: Sequence[int], allowance: int, count: TokenCount,
                costs: Sequence[int] | None = None, cut: Cut | None = None) -> Fill:
    """Items in ``order`` while they fit in ``allowance`` tokens; the first that does not is cut to fit, and the fill ends.

    ``costs`` are the items' token counts when already known (``count`` of each text);
    ``cut`` cuts a text to a number of tokens (default ``cut_to_tokens``).
    """
    cut_text = cut or cut_to_tokens
    chosen: list[int] = []
    pieces: list[str] = []
    used = 0
    was_cut = False
    for i in order:
        left = allowance - used
        if left <= 0:
            break
        cost = costs[i] if costs is not None else count(texts[i])
        if cost <= left:
            chosen.append(i)
            pieces.append(texts[i])
            used += cost
            continue
        piece = cut_text(texts[i], left, count)
        if piece:
            chosen.append(i)
            pieces.append(piece)
            used += count(piece)
            was_cut = True
        break
    return Fill(chosen, pieces, used, was_cut)


# -- passages -------------------------------------------------------------------------


Span = tuple[int, int]


def sentence_spans(text: str) -> list[tuple[Span, bool]]:
    """Each sentence's span in ``text``, and whether a blank line comes before it (a paragraph starts)."""
    out: list[tuple[Span, bool]] = []
    pos = 0
    blank = True
    for line in text.splitlines(keepends=True):
        start = pos
        pos += len(line)
        body = line.rstrip("\r\n")
        if not body.strip():
            blank = True
            continue
        cursor = 0
        for match in _SENTENCE_END.finditer(body):
            piece = (start + cursor, start + match.start())
            if body[cursor:match.start()].strip():
                out.append((_strip(text, piece), blank))
                blank = False
            cursor = match.end()
        if body[cursor:].strip():
            out.append((_strip(text, (start + cursor, start + len(body))), blank))
            blank = False
    return out


def _strip(text: str, span: Span) -> Span:
    start, stop = span
    while start < stop and text[start].isspace():
        start += 1
    while stop > start and text[stop - 1].isspace():
        stop -= 1
    return start, stop


def sentence_windows(text: str, count: TokenCount, max_tokens: int = WINDOW_TOKENS,
                     min_tokens: int = WINDOW_MIN_TOKENS) -> list[Span]:
    """Spans of ``text`` packing its sentences into windows (see the module docstring)."""
    windows: list[Span] = []
    current: Span | None = None
    used = 0
    for span, paragraph in sentence_spans(text):
        cost = count(text[span[0]:span[1]])
        if current is not None and (used + cost > max_tokens or (paragraph and used >= min_tokens)):
            windows.append(current)
            current, used = None, 0
        current = span if current is None else (current[0], span[1])
        used += cost
    if current is not None:
        windows.append(current)
    return windows


__all__ = [
    "BM25", "Fill", "RRF_K", "WINDOW_MIN_TOKENS", "WINDOW_TOKENS", "cut_to_tokens", "greedy_fill", "hybrid_order",
    "rank_cosine", "rank_scores", "rrf", "sentence_spans", "sentence_windows", "word_tokens",
]
