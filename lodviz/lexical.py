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
from collections.abc import Sequence
from typing import cast

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


# A word's term (its stem, or "" for a function word), memoised: a search reads
# about 25,000 words of candidate summaries, from a vocabulary that is mostly
# seen before, and a dictionary look-up costs a fraction of ``stem``. Keys are
# str for the regular expression's words, bytes for the ASCII fast path.
# Bounded: emptied when it outgrows ``_MEMO_LIMIT`` words.
_MEMO: dict[str | bytes, str] = {}
_MEMO_LIMIT = 1_000_000

# ASCII text is split with a byte table instead of the regular expression: in
# ASCII, ``[^\W_]`` is exactly [0-9A-Za-z], so mapping every other byte to a
# space (and A-Z to a-z) and splitting gives the same words three times faster.
_ASCII_WORDS = bytes(
    c + 32 if 65 <= c <= 90 else c if (48 <= c <= 57 or 97 <= c <= 122) else 32 for c in range(256)
)


def _term(word: str | bytes) -> str:
    found = _MEMO.get(word)
    if found is None:
        text = word.decode("ascii") if isinstance(word, bytes) else word
        if text.isdecimal():  # no suffix, no function word: a number is its own term, and not worth keeping
            return text
        found = "" if text in STOPWORDS else stem(text)
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        _MEMO[word] = found
    return found


def _words(text: str) -> list[str] | list[bytes]:
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS).split()
    return _WORD.findall(text.lower())


def terms(text: str) -> list[str]:
    """The BM25 terms of ``text``: lower-cased words less function words, stemmed."""
    get = _MEMO.get
    out = []
    for word in _words(text):
        term = get(word)
        if term is None:
            term = _term(word)
        if term:
            out.append(term)
    return out


def document(text: str) -> tuple[tuple[str, ...], int]:
    """A candidate as BM25 reads it: its terms (in order; ``count`` gives a term's frequency) and length."""
    found = terms(text)
    return tuple(found), len(found)


def scores(query: str, documents: Sequence[tuple[tuple[str, ...], int]]) -> np.ndarray:
    """``lex`` in [0, 1] for each document (see the module docstring)."""
    n = len(documents)
    wanted = list(set(terms(query)))
    if not n or not wanted:
        return np.zeros(n, dtype=np.float64)
    lengths = np.fromiter((length for _, length in documents), dtype=np.float64, count=n)
    tf = np.array([[found.count(term) for found, _ in documents] for term in wanted], dtype=np.float64)
    return _bm25(tf, lengths)


def text_scores(query: str, texts: Sequence[str]) -> np.ndarray:
    """``lex`` for each text, as ``scores(query, [document(t) for t in texts])`` gives it, faster.

    A search scores its 1000 candidates' summaries: split one by one in
    Python that costs ~12 ms; here they are split all at once by a byte table
    and only each distinct word goes through ``_term`` (memoised). Texts with
    letters or digits beyond ASCII take ``document``'s path: the same terms.
    """
    n = len(texts)
    wanted = list(set(terms(query)))
    if not n or not wanted:
        return np.zeros(n, dtype=np.float64)
    tf, lengths = _counts(wanted, texts)
    return _bm25(tf, lengths)


# Texts whose words are found byte by byte (``_counts``): every character
# outside ASCII is a separator, as for ``[^\W_]``; \x01 marks where one ends.
_WIDE = re.compile(r"[^\x00-\x7f]")
_END = b"\x01"
_BYTE_WORDS = _ASCII_WORDS[:1] + _END + _ASCII_WORDS[2:]


def _plain(text: str) -> bool:
    """True when the byte table finds exactly ``_WORD``'s words in ``text``: no letter or digit beyond ASCII."""
    if "\x01" in text:
        return False
    return text.isascii() or not any(c.isalnum() for c in _WIDE.findall(text))


def _counts(wanted: list[str], texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Frequencies of each ``wanted`` term in each text, (terms, texts), and each text's length in terms."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(texts)
    tf = np.zeros((len(wanted), n), dtype=np.float64)
    lengths = np.zeros(n, dtype=np.float64)
    plain = [row for row, text in enumerate(texts) if _plain(text)]
    if plain:
        # All plain texts as one byte string: one translate, one split, one
        # dictionary of distinct words; each text ends with an \x01 word.
        blob = b" \x01 ".join(texts[row].encode("utf-8") for row in plain) + b" \x01"
        words = pa.array(blob.translate(_BYTE_WORDS).split(), type=pa.binary())
        encoded = pc.dictionary_encode(words)
        vocabulary = encoded.dictionary.to_pylist()
        index = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        get = _MEMO.get
        known = [get(word) for word in vocabulary]
        for i in [i for i, term in enumerate(known) if term is None]:
            word = vocabulary[i]
            # Numbers (a reference, a date) are their own terms and rarely repeat: not worth a call.
            known[i] = "" if word == _END else word.decode("ascii") if word.isdigit() else _term(word)
        found = np.array(known, dtype=object)
        ends = index == (vocabulary.index(_END) if _END in vocabulary else -1)
        text_of = np.cumsum(ends) - ends  # a word's text: the ends before it
        counted = (found != "")[index]
        lengths[plain] = np.bincount(text_of[counted], minlength=len(plain))
        position = {term: j for j, term in enumerate(wanted)}
        which = np.array([position.get(t, -1) for t in cast(list[str], known)], dtype=np.int64)[index]
        for j in range(len(wanted)):
            tf[j, plain] = np.bincount(text_of[which == j], minlength=len(plain))
    if len(plain) < n:
        for row in sorted(set(range(n)) - set(plain)):
            found_terms, length = document(texts[row])
            lengths[row] = length
            for j, term in enumerate(wanted):
                tf[j, row] = found_terms.count(term)
    return tf, lengths


def _bm25(tf: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``lex`` from term frequencies (query terms, documents) and document lengths."""
    n = len(lengths)
    out = np.zeros(n, dtype=np.float64)
    norm = K1 * (1.0 - B + B * lengths / max(float(lengths.mean()), 1e-9))
    best = 0.0
    for freq in tf:
        df = int(np.count_nonzero(freq))
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        best += idf * (K1 + 1.0)
        if df:
            out += idf * freq * (K1 + 1.0) / (freq + norm)
    if best <= 0:
        return np.zeros(n, dtype=np.float64)
    return np.minimum(out / (NORMALISE_AT * best), 1.0)


__all__ = ["terms", "document", "scores", "text_scores", "stem", "STOPWORDS"]
