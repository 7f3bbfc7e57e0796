"""What an agent can *read*: a needed sentence verbatim in the text it was handed.

The retrieval benchmark's main metric (``benchmarks/retrieval.py``). A needed
unit (a conversation turn, a document's fact sentence) counts as *read* when one
of its *needles* appears verbatim in the text a system returned, after
whitespace normalisation (every run of whitespace is one space, so a transcript
rendered on one line still holds its turns' sentences).

Needles of a needed text: its sentences (split at line breaks and after ``.``,
``!`` or ``?`` before a capital, digit or opening quote), each normalised;
sentences under ``MIN_WORDS`` words are fragments and do not count ("Oh wow!",
"You?"), unless the text has no longer sentence, in which case the whole text
is the one needle. ``select`` then keeps only the needles that prove the
unit was read: those found in no other memory of the store (a sentence said
twice cannot show which one the agent saw), not in the question itself (the
rendered result repeats the query), and, when the question names a string the
unit must contain, those holding it.

Pure: text in, text out; no model, no lodviz.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

#: Sentences shorter than this many words are fragments, not evidence of reading.
MIN_WORDS = 4

# After . ! ? (and any closing quote or bracket), before a capital, a digit or an opening quote.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”')\]]*\s+(?=[\"“'(\[]?[A-Z0-9])")


def normalise(text: str) -> str:
    """``text`` with every run of whitespace made one space, and no space at either end."""
    return " ".join(text.split())


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``: every line is cut after sentence ends; empty pieces are dropped."""
    out: list[str] = []
    for line in text.splitlines():
        for piece in _SENTENCE_END.split(line):
            piece = normalise(piece)
            if piece:
                out.append(piece)
    return out


def words(text: str) -> int:
    return len(text.split())


def needles(text: str, min_words: int = MIN_WORDS) -> list[str]:
    """The sentences of ``text`` that can show it was read (see the module docstring)."""
    sentences = split_sentences(text)
    long = [s for s in sentences if words(s) >= min_words]
    if long:
        return list(dict.fromkeys(long))
    whole = normalise(text)
    return [whole] if whole else []


def select(candidates: Sequence[str], *, own: str, store: str, question: str = "",
           keys: Iterable[str] = ()) -> tuple[list[str], bool]:
    """The needles of one needed unit that prove it was read, and whether they are unique.

    ``own`` is the unit's own text (a turn, a fact sentence) and ``store``
    every memory text of the store, both normalised and ``store`` joined with
    a separator no needle holds (``"\\x00"``). A needle is unique when the
    store holds it no more often than the unit itself does. With ``keys`` (strings the question says the
    unit contains), the needles holding one of them win. When no needle is
    unique, the non-unique ones are kept (the second value says so): the unit
    stays readable, at the risk of a false positive the caller can count.
    """
    keys = [k.lower() for k in keys if k]
    pool = [n for n in candidates if n and n not in question]
    if keys:
        keyed = [n for n in pool if any(k in n.lower() for k in keys)]
        pool = keyed or pool
    unique = [n for n in pool if store.count(n) <= own.count(n)]
    if unique:
        return unique, True
    return pool, False


def is_read(unit_needles: Sequence[str], returned: str) -> bool:
    """Does the normalised ``returned`` text hold one of ``unit_needles`` verbatim?"""
    return any(n in returned for n in unit_needles)


def read_units(needed: dict[str, Sequence[str]], returned_text: str) -> list[str]:
    """The needed units (id -> needles) read in ``returned_text`` (normalised here)."""
    text = normalise(returned_text)
    return [unit for unit, ns in needed.items() if is_read(ns, text)]


__all__ = ["MIN_WORDS", "normalise", "split_sentences", "words", "needles", "select", "is_read", "read_units"]
