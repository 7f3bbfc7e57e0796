"""Conflict candidates: two memories about the same thing that say different things. Pure.

The concept leaves contradictory memories as an open question and points at
ingestion time. A new memory is a conflict candidate of an existing one when

- they are about the same subject: cosine similarity of their vectors at
  least ``SIMILAR`` (and not a duplicate, which the store skips anyway), and
- they make the same claim: at least ``SAME_CLAIM`` of their content words
  in common, said by the same speaker if both name one ("Wes: ..."), and
- they differ in one checkable fact: one number swapped for another, one
  name or day swapped for another (a capitalised word inside a sentence; one
  that opens a sentence may be any word), or a negation one has and the other
  lacks, nothing else differing.

A paraphrase states the same numbers and names, so it is not a candidate; a
restatement that adds detail (its numbers include the other's) is not either;
nor are two tool results (``OBSERVATIONS``): a tool's new output is a new
observation ("AURB closed at $47.05", then "$44.85"), not a contradiction.
Detection only proposes: an auditor keeps both or marks one superseded.

A new memory is linked to at most ``MAX_LINKS`` others, its most similar
candidates (``strongest``): a flood of near-duplicates, each of which differs
from the others in one number, would otherwise link every new memory to every
earlier one it is close to, and a store would keep rows by the tens of
thousands for an import of a few thousand memories.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from lodviz.records import ConflictLink

#: Kinds of memory that record an observation at a time: a later one updates, it does not contradict.
OBSERVATIONS = frozenset({"tool_result"})
#: Cosine similarity from which two memories are taken to be about the same subject.
SIMILAR = 0.7
#: Negation alone is a weak signal: it needs near-identical texts.
NEAR_IDENTICAL = 0.9
#: Share of content words two texts must have in common to make the same claim.
SAME_CLAIM = 0.5
#: Conflict links a new memory gets at most: its most similar candidates.
MAX_LINKS = 3

_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)([^\W\d_][\w'’-]*)", re.UNICODE)
_NEGATION = frozenset(
    "not no never none nobody nothing neither nor cannot cancelled canceled without isn't wasn't aren't weren't "
    "don't doesn't didn't won't wouldn't can't couldn't shouldn't hasn't haven't hadn't".split()
)
_STOP = frozenset("the a an of to in on at for with and or but is are was were be been by from as that this it its".split())
_TIME_NAMES = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july august "
    "september october november december jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
# Capitalised words that name no subject.
_COMMON = frozenset(
    "I I'm I've I'll I'd The A An And But Or So If We You He She It They My Our Your His Her Their This That These "
    "Those There Here What When Where Why How Who Mr Mrs Ms Dr Prof".split()
)


@dataclass(frozen=True)
class Facts:
    """What a text states that a contradiction could change, and the words it says it with."""

    speaker: str  # the label a text opens with ("Wes:"), lower-cased; "" for none
    words: frozenset[str]  # content words
    numbers: frozenset[str]
    names: frozenset[str]  # capitalised words inside sentences, days and months included
    negated: bool


_TOKEN = re.compile(r"[$€£]?\d[\d,]*(?:\.\d+)?(?:\s?(?:%|x|k|m|bn|mg|kg|million|billion)\b)?|[^\W\d_][\w'’-]*", re.UNICODE)


#: Texts up to this long have their ``facts`` remembered (the last ``_REMEMBERED``): a batch
#: compares each new text with several others, and each of those with several new ones.
_REMEMBER_UP_TO = 2_000
_REMEMBERED = 4_096


def facts(text: str) -> Facts:
    """What ``text`` states that a contradiction could change."""
    return _remembered_facts(text) if len(text) <= _REMEMBER_UP_TO else _facts(text)


def _facts(text: str) -> Facts:
    # A speaker or source label ("Priya: ...") says who, not what: it names nothing the claim is about.
    label = re.match(r"^\s*[^\W\d_][\w.'’ ()-]{0,38}?:\s+", text)
    speaker = ""
    if label and len(label.group(0).split()) <= 4:
        speaker = label.group(0).strip().rstrip(":").lower()
        text = text[label.end():]
    starts = {m.start(1) for m in _SENTENCE_START.finditer(text)}
    words, numbers, names = set(), set(), set()
    for m in _TOKEN.finditer(text):
        raw = m.group(0)
        if raw[0].isdigit() or raw[0] in "$€£":
            numbers.add(re.sub(r"[\s,]", "", raw).lower())
            continue
        lower = raw.lower()
        if lower not in _STOP:
            words.add(lower)
        if raw[0].isupper() and raw not in _COMMON and len(raw) > 2 and (m.start() not in starts or lower in _TIME_NAMES):
            names.add(re.sub(r"['’]s?$", "", lower))
    negated = bool(words & _NEGATION) or "n't" in text.lower()
    return Facts(speaker, frozenset(words), frozenset(numbers), frozenset(names), negated)


_remembered_facts = lru_cache(maxsize=_REMEMBERED)(_facts)


def difference(a: Facts, b: Facts, similarity: float) -> str | None:
    """Why two similar memories may contradict each other, or None if nothing checkable differs.

    The same claim (half their content words shared, or more) with another
    value: "the cap is 2x annual fees" / "the cap is 3x annual fees",
    "Paloma moved to Calgary" / "Paloma moved to Denver", "on Monday" / "moved
    to Wednesday". A series of reports ("AURB closed at $41.87 (+1.5%)" day
    after day: several numbers, none shared) is not a contradiction.
    """
    if similarity < SIMILAR:
        return None
    if a.speaker and b.speaker and a.speaker != b.speaker:
        return None  # two people saying alike is a conversation, not one claim changed
    if a.words and b.words and len(a.words & b.words) / len(a.words | b.words) < SAME_CLAIM:
        return None
    # One value swapped for another; a report that changes most of its values is the next report.
    only_a, only_b = a.numbers - b.numbers, b.numbers - a.numbers
    if len(only_a) == 1 and len(only_b) == 1:
        return f"{next(iter(only_b))} instead of {next(iter(only_a))}"
    names_a, names_b = a.names - b.names, b.names - a.names
    if len(names_a) == 1 and len(names_b) == 1 and not (only_a or only_b):
        return f"{next(iter(names_b)).title()} instead of {next(iter(names_a)).title()}"
    if a.negated != b.negated and similarity >= NEAR_IDENTICAL and not (only_a or only_b or names_a or names_b):
        return "one of them says not"
    return None


def close_pairs(new_vectors: np.ndarray, old_vectors: np.ndarray, limit: int = MAX_LINKS) -> list[tuple[int, int, float]]:
    """(new index, old index, similarity) of each new vector's most similar old ones at ``SIMILAR`` or more."""
    out: list[tuple[int, int, float]] = []
    if len(new_vectors) == 0 or len(old_vectors) == 0:
        return out
    sims = new_vectors @ old_vectors.T
    for i in range(len(new_vectors)):
        close = np.flatnonzero(sims[i] >= SIMILAR)
        for j in close[np.argsort(-sims[i, close], kind="stable")][: limit * 4].tolist():
            out.append((i, int(j), float(sims[i, j])))
    return out


def strongest(links: Iterable[ConflictLink], limit: int = MAX_LINKS) -> list[ConflictLink]:
    """At most ``limit`` links per new memory (``link.index``): its most similar, in the order given.

    What bounds the conflict rows of an import: n new memories make at most
    ``limit * n`` links, however many of them are near-duplicates of each other.
    """
    links = list(links)
    by_memory: dict[int, list[int]] = {}
    for at, link in enumerate(links):
        by_memory.setdefault(link.index, []).append(at)
    keep: set[int] = set()
    for positions in by_memory.values():
        keep.update(sorted(positions, key=lambda at: -links[at].similarity)[:limit])  # stable: the first of equals
    return [link for at, link in enumerate(links) if at in keep]


__all__ = ["Facts", "facts", "difference", "close_pairs", "strongest", "SIMILAR", "SAME_CLAIM", "MAX_LINKS"]
