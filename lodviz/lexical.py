"""Lexical evidence for S: BM25 of a query against a search's candidates. Pure.

Embeddings miss what words catch: names, codes, rare nouns ("AUR-302",
"Tbilisi", "shakshuka"). A search scores its k candidates by BM25 (k1 1.2,
b 0.75) with the candidates themselves as the corpus, so document frequencies
say what is rare *among the memories near the query*; a warmed store keeps
every summary's terms counted (``TermIndex``) so that a search only adds up
its candidates' counts. The score is measured against half the best score the query
could reach (every query term present, at the average length):

    x   = BM25 / (0.5 * sum over query terms of idf * (k1 + 1))
    lex = x                                    below 0.8
    lex = 1 - 0.2 * exp(-(x - 0.8) / 0.5)      above: towards 1, never at it

A hard cap at 1 gave S = 1.00 to every memory that held half the query's
terms (five of nine on a small store, a grep output among them), and S no
longer told them apart; a soft saturation everywhere (``1 - exp(-1.4 x)``)
read less on the long-memory sets (docs/retrieval.md), so only the top is bent.

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
#: A document matching about half the query's weight in full scores x = 1.
NORMALISE_AT = 0.5
#: Where lex leaves x and bends towards 1 (``normalised``), and how slowly.
BEND_AT, BEND_SCALE = 0.8, 0.5

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
    return bm25(tf, lengths)


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
    return bm25(tf, lengths)


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


def counts(wanted: Sequence[str], texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Frequencies of each ``wanted`` term in each text, (terms, texts), and each text's length in terms."""
    return _counts(list(wanted), texts)


def _vocabulary_terms(vocabulary: list[bytes]) -> list[str]:
    """The term of each distinct ASCII word a byte table split off ("" for a function word or ``_END``)."""
    get = _MEMO.get
    known = [get(word) for word in vocabulary]
    for i in [i for i, term in enumerate(known) if term is None]:
        word = vocabulary[i]
        # Numbers (a reference, a date) are their own terms and rarely repeat: not worth a call.
        known[i] = "" if word == _END else word.decode("ascii") if word.isdigit() else _term(word)
    return cast(list[str], known)


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
        known = _vocabulary_terms(vocabulary)
        found = np.array(known, dtype=object)
        ends = index == (vocabulary.index(_END) if _END in vocabulary else -1)
        text_of = np.cumsum(ends) - ends  # a word's text: the ends before it
        counted = (found != "")[index]
        lengths[plain] = np.bincount(text_of[counted], minlength=len(plain))
        position = {term: j for j, term in enumerate(wanted)}
        which = np.array([position.get(t, -1) for t in known], dtype=np.int64)[index]
        for j in range(len(wanted)):
            tf[j, plain] = np.bincount(text_of[which == j], minlength=len(plain))
    if len(plain) < n:
        for row in sorted(set(range(n)) - set(plain)):
            found_terms, length = document(texts[row])
            lengths[row] = length
            for j, term in enumerate(wanted):
                tf[j, row] = found_terms.count(term)
    return tf, lengths


def query_terms(query: str) -> list[str]:
    """The distinct BM25 terms of a query, in the order ``text_scores`` weighs them."""
    return list(set(terms(query)))


def _plain_words(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
    """The words of plain texts (see ``_plain``), split in Arrow: each word's text, its distinct word, the distinct words."""
    import pyarrow as pa
    import pyarrow.compute as pc

    translated = pa.array([t.encode("utf-8").translate(_ASCII_WORDS) for t in texts], type=pa.large_binary())
    # The table maps every byte to a digit, a lower-case letter or a space: valid ASCII, split on spaces.
    split = pc.ascii_split_whitespace(translated.cast(pa.large_string()))
    offsets = np.asarray(split.offsets.to_numpy(), dtype=np.int64)
    encoded = pc.dictionary_encode(split.values.cast(pa.large_binary()))
    index = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    text_of = np.repeat(np.arange(len(texts), dtype=np.int64), np.diff(offsets))
    return text_of, index, encoded.dictionary.to_pylist()


class TermIndex:
    """Every text's BM25 terms, counted once: what ``text_scores`` splits per search, kept.

    A search scores its 1,000 candidates' summaries by BM25; splitting them
    each time is most of a search's own cost at 100k memories (~6-8 ms). The
    index holds, row by row, each distinct term's id and its count, and the
    text's length in terms (about 8 bytes per distinct term of a summary):
    ``counts`` then gives ``_counts``'s numbers for any rows in ~0.2 ms.
    Rows are appended (``extend``) and may be replaced (``replace``: a
    forgotten memory's text is gone). Pure: texts in, arrays out.
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._indptr = np.zeros(1, dtype=np.int64)
        self._terms = np.zeros(0, dtype=np.int32)
        self._counts = np.zeros(0, dtype=np.int32)
        self._lengths = np.zeros(0, dtype=np.int32)
        self._n = 0
        self._replaced: dict[int, tuple[tuple[str, ...], int]] = {}

    def __len__(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        return int(self._indptr.nbytes + self._terms.nbytes + self._counts.nbytes + self._lengths.nbytes)

    def _id(self, term: str) -> int:
        found = self._ids.get(term)
        if found is None:
            found = self._ids[term] = len(self._ids)
        return found

    def extend(self, texts: Sequence[str]) -> None:
        """Index ``texts`` as the next rows."""
        n = len(texts)
        if not n:
            return
        plain = [row for row, text in enumerate(texts) if _plain(text)]
        owners: list[np.ndarray] = []
        found: list[np.ndarray] = []
        if plain:
            text_of, index, vocabulary = _plain_words([texts[row] for row in plain])
            ids = np.array([self._id(term) if term else -1 for term in _vocabulary_terms(vocabulary)], dtype=np.int64)
            words = ids[index]
            counted = words >= 0
            owners.append(np.asarray(plain, dtype=np.int64)[text_of[counted]])
            found.append(words[counted])
        for row in sorted(set(range(n)) - set(plain)):
            row_terms = terms(texts[row])
            owners.append(np.full(len(row_terms), row, dtype=np.int64))
            found.append(np.fromiter((self._id(t) for t in row_terms), dtype=np.int64, count=len(row_terms)))
        owner = np.concatenate(owners) if owners else np.zeros(0, dtype=np.int64)
        term_ids = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        width = max(len(self._ids), 1)
        pairs, counts = np.unique(owner * width + term_ids, return_counts=True)  # by row, then term
        per_row = np.bincount(pairs // width, minlength=n)
        self._append(per_row, (pairs % width).astype(np.int32), counts.astype(np.int32), np.bincount(owner, minlength=n))

    def _append(self, per_row: np.ndarray, term_ids: np.ndarray, counts: np.ndarray, lengths: np.ndarray) -> None:
        rows, nnz = self._n + len(per_row), int(self._indptr[self._n]) + len(term_ids)
        if rows + 1 > len(self._indptr):  # grown by doubling: inserts come a few rows at a time
            self._indptr = _grown(self._indptr, rows + 1)
            self._lengths = _grown(self._lengths, rows)
        if nnz > len(self._terms):
            self._terms = _grown(self._terms, nnz)
            self._counts = _grown(self._counts, nnz)
        start = int(self._indptr[self._n])
        self._indptr[self._n + 1 : rows + 1] = start + np.cumsum(per_row)
        self._lengths[self._n : rows] = lengths
        self._terms[start:nnz] = term_ids
        self._counts[start:nnz] = counts
        self._n = rows

    def replace(self, row: int, text: str) -> None:
        """Row ``row`` now holds ``text``."""
        if not 0 <= row < self._n:
            raise IndexError(f"row {row} is not indexed")
        self._replaced[int(row)] = document(text)

    def counts(self, rows: np.ndarray | Sequence[int], wanted: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Frequencies of each ``wanted`` term in each row, (terms, rows), and each row's length in terms: as ``_counts``."""
        rows = np.asarray(rows, dtype=np.int64)
        n = len(rows)
        tf = np.zeros((len(wanted), n), dtype=np.float64)
        lengths = self._lengths[rows].astype(np.float64)
        ids = [self._ids.get(t, -1) for t in wanted]
        if n and any(i >= 0 for i in ids):
            starts = self._indptr[rows]
            sizes = self._indptr[rows + 1] - starts
            owner = np.repeat(np.arange(n, dtype=np.int64), sizes)
            position = np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)
            found = self._terms[position]
            for j, term_id in enumerate(ids):
                if term_id >= 0:
                    hit = found == term_id
                    tf[j] = np.bincount(owner[hit], weights=self._counts[position[hit]], minlength=n)
        if self._replaced:
            for i in [i for i, row in enumerate(rows.tolist()) if row in self._replaced]:
                found_terms, length = self._replaced[int(rows[i])]
                lengths[i] = length
                tf[:, i] = [found_terms.count(t) for t in wanted]
        return tf, lengths


def _grown(array: np.ndarray, need: int) -> np.ndarray:
    new = np.zeros(max(need, 2 * len(array), 1024), dtype=array.dtype)
    new[: len(array)] = array
    return new


def bm25(tf: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``lex`` in [0, 1] from term frequencies (query terms, documents) and document lengths."""
    parts, most = bm25_terms(tf, lengths)
    return normalised(parts.sum(axis=0), float(most.sum()))


def bm25_terms(tf: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """BM25 term by term: each query term's part of each document's score (terms, documents), and the
    most each term can give (its idf times k1 + 1); ``bm25`` is their sums, normalised."""
    tf = np.asarray(tf, dtype=np.float64).reshape(-1, len(lengths))
    n = len(lengths)
    parts = np.zeros(tf.shape, dtype=np.float64)
    most = np.zeros(len(tf), dtype=np.float64)
    norm = K1 * (1.0 - B + B * lengths / max(float(lengths.mean()), 1e-9)) if n else np.zeros(0)
    for t, freq in enumerate(tf):
        df = int(np.count_nonzero(freq))
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        most[t] = idf * (K1 + 1.0)
        if df:
            parts[t] = idf * freq * (K1 + 1.0) / (freq + norm)
    return parts, most


def normalised(score: np.ndarray, most: float | np.ndarray) -> np.ndarray:
    """BM25 scores as ``lex`` in [0, 1): x, the score against half of ``most`` (what the query's terms can give; one
    for all, or one per document), bent towards 1 above ``BEND_AT``; 0 where nothing can be given."""
    most = np.broadcast_to(np.asarray(most, dtype=np.float64), np.shape(score))
    out = np.zeros(np.shape(score), dtype=np.float64)
    can = most > 0
    x = np.asarray(score, dtype=np.float64)[can] / (NORMALISE_AT * most[can])
    out[can] = np.where(x <= BEND_AT, x, 1.0 - (1.0 - BEND_AT) * np.exp(-(np.maximum(x, BEND_AT) - BEND_AT) / BEND_SCALE))
    return out


__all__ = ["terms", "query_terms", "document", "scores", "text_scores", "counts", "bm25", "bm25_terms", "normalised", "TermIndex", "stem", "STOPWORDS"]
