"""Lexical evidence for S: BM25 of a query against a search's candidates. Pure.

Embeddings miss what words catch: names, codes, rare nouns ("AUR-302",
"Tbilisi", "shakshuka"). A search scores its k candidates by BM25 (k1 1.2,
b 0.75) with the candidates themselves as the corpus, so document frequencies
say what is rare *among the memories near the query*, and no store-wide index
is needed. The score is normalised by half the best score the query could
reach (every query term present, at the average length), then capped at 1:

    lex = min(1, BM25 / (0.5 * sum over query terms of idf * (k1 + 1)))

``scoring.fuse`` combines it with the cosine as a probabilistic OR,
``S = 1 - (1 - cos) * (1 - w * lex)``, so lexical evidence can only raise S,
and S stays in [0, 1]. Measured on benchmarks/retrieval.py (docs/retrieval.md).

Terms are lower-cased words and numbers with common English function words
removed and a light suffix stemmer ("adopted", "adopting" -> "adopt").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

K1 = 1.2
B = 0.75
#: A document matching about half the query's weight in full scores lex = 1.
NORMALISE_AT = 0.5

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
STOPWORDS = frozenset(
    """a an the and or but if of to in on at for with from by is are was were be been being am i me my
    mine we our ours us you your yours he him his she her hers it its they them their theirs this that these
    those do does did done doing have has had having not no so very just what which who whom whose when where
    why how can could would should will shall may might must about as into than then there here up down out
    over again also too only own same such some any each few more most other all both s t d ll m re ve""".split()
)
_SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "s", "ly")


def stem(word: str) -> str:
    """A light suffix stemmer: enough to match plurals and tenses, never a dictionary."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
    return word


def terms(text: str) -> list[str]:
    """The BM25 terms of ``text``."""
    return [stem(word) for word in _WORD.findall(text.lower()) if word not in STOPWORDS]


def document(text: str) -> tuple[Counter[str], int]:
    """A candidate as BM25 reads it: term frequencies and length in terms."""
    found = terms(text)
    return Counter(found), len(found)


def scores(query: str, documents: Sequence[tuple[Counter[str], int]]) -> np.ndarray:
    """``lex`` in [0, 1] for each document (see the module docstring)."""
    n = len(documents)
    out = np.zeros(n, dtype=np.float64)
    wanted = set(terms(query))
    if not n or not wanted:
        return out
    lengths = np.fromiter((length for _, length in documents), dtype=np.float64, count=n)
    norm = K1 * (1.0 - B + B * lengths / max(float(lengths.mean()), 1e-9))
    best = 0.0
    for term in wanted:
        tf = np.fromiter((freq.get(term, 0) for freq, _ in documents), dtype=np.float64, count=n)
        df = int(np.count_nonzero(tf))
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        best += idf * (K1 + 1.0)
        if df:
            out += idf * tf * (K1 + 1.0) / (tf + norm)
    if best <= 0:
        return np.zeros(n, dtype=np.float64)
    return np.minimum(out / (NORMALISE_AT * best), 1.0)


__all__ = ["terms", "document", "scores", "stem", "STOPWORDS"]
