"""Conflict candidates: two memories that state one commitment with different values. Pure.

The concept leaves contradictory memories as an open question and points at
ingestion time. An auditor can only afford to look at candidates that are
likely to be real, so detection works on *facts*, not on whole texts:

- A fact is one value a memory states (a day, an amount, a percentage, a
  multiple, a dose, a period, and a count only where the text says it
  changed) with its *slot*: the content words right beside it (``SLOT`` on
  each side, inside its clause) and the names (codes, acronyms: ASCEND-2,
  RP2D, B0219) within ``SUBJECT`` words.
- Only commitments count, not measurements (``commitment``): a day still
  ahead when it was written (a plan), a period with "within" or "notice", an
  amount or a percentage beside a term ("cap", "upfront", "fee", "target"...),
  a multiple beside a term, a dose beside "RP2D", "recommended" or "maximum".
  A later share price, count or result is the next observation, not a
  contradiction; so is anything two tool results (``OBSERVATIONS``) say.
- Two facts are about the same thing when their slots share ``MIN_SLOT``
  words (or one name), their subjects' names do not differ, and, for days,
  an event word is shared (a name alone does not make "17 June" and
  "27 Oct" the same event).
- They conflict when the values differ in substance (12 months is one year;
  "late" and "end of" December agree; a quarter holds its months) and
  neither text says so itself: the newer does not restate the older value,
  the older does not already state the newer one, and neither value is one
  its own text marks as gone ("moves from 6 Nov", "Q1 2027 -> June 2027").
- Not a conflict: the memory's own day (a stamp), a day already past when it
  was written (a record), a later occurrence of a day that has passed (the
  next meeting), and a slot that several earlier memories each give another
  value (``SERIES``: a series of reports).

The reason an auditor reads is "<newer value> instead of <older value>".
Candidates are the memories about the same subject: cosine similarity at
least ``SIMILAR`` between the two memories or any of their passages
(``lodviz.passages``), so a long document's one relevant paragraph is
compared too. A new memory is linked to at most ``MAX_LINKS`` others, its most
similar (``strongest``): an import of near-duplicates cannot make rows by the
tens of thousands. Detection only proposes: an auditor keeps both or marks one
superseded. Precision and recall on the sample store's labelled pairs are in
docs/retrieval.md (``benchmarks/conflicts.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lodviz.lexical import STOPWORDS, stem

if TYPE_CHECKING:
    from lodviz.records import ConflictLink

#: Kinds of memory that record an observation at a time: a later one updates, it does not contradict.
OBSERVATIONS = frozenset({"tool_result"})
#: Cosine similarity (of the memories or of any of their passages) from which two memories share a subject.
SIMILAR = 0.6
#: Candidates a new memory is compared with: its most similar memories above ``SIMILAR``.
CANDIDATES = 12
#: Conflict links a new memory gets at most: its most similar candidates.
MAX_LINKS = 3
#: Content words on each side of a value that make its slot.
SLOT = 2
#: Slot words two facts must share (one is enough when it is a name).
MIN_SLOT = 3
#: Words on each side within which a name is the value's subject.
SUBJECT = 3
#: Earlier memories with distinct other values for one slot that make it a series of reports.
SERIES = 3

_MONTH_NAMES = "january february march april may june july august september october november december".split()
MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES)} | {m[:3]: i + 1 for i, m in enumerate(_MONTH_NAMES)} | {"sept": 9}
_DAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_WORD_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "twelve": 12, "twenty-four": 24, "thirty": 30, "sixty": 60, "ninety": 90,
}
_MON = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "million": 1e6, "bn": 1e9, "b": 1e9, "billion": 1e9}
_CURRENCY = r"(?:us|usd|eur|gbp|chf|sek)"
_MAGNITUDE = r"(?:\s?(?:k|m|mn|bn|million|billion|thousand)\b)?"
_VALUE = re.compile(
    "|".join([
        rf"(?P<money>(?:\b{_CURRENCY}\s?)?[$€£]\s?(?:{_NUM}){_MAGNITUDE}|\b{_CURRENCY}\s?(?:{_NUM}){_MAGNITUDE})",
        rf"(?P<date>\b(?:\d{{1,2}}(?:st|nd|rd|th)?[\s-]{_MON}\.?(?:[\s-]\d{{4}})?|{_MON}\.?\s\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s\d{{4}})?"
        rf"|(?:early|mid|late|end of|end)[\s-]{_MON}?\s?\d{{4}}|{_MON}\s\d{{4}}|[qh][1-4]\s?\d{{4}}|\d{{4}}-\d{{2}}-\d{{2}}|\d{{2}}-\d{{2}}-\d{{4}})\b)",
        rf"(?P<pct>(?:{_NUM})\s?(?:%|per ?cent\b|percentage points?\b|pts\b))",
        rf"(?P<mult>\b(?:{_NUM})\s?x\b|\b(?:one|two|three|four|five)\s+times\b)",
        rf"(?P<dose>\b(?:{_NUM})\s?(?:mg|mcg|µg|g|ml|mg/kg)\b(?:\s?(?:qd|bid|tid|qw|q2w|q3w|once daily|twice daily))?)",
        rf"(?P<duration>\b(?:(?:{_NUM})|one|two|three|four|five|six|seven|eight|nine|ten|twelve|thirty|sixty|ninety|twenty-four)"
        rf"(?:\s?\(\d+\))?[\s-](?:business\s|calendar\s|working\s)?(?:hours?|days?|weeks?|months?|years?)\b)",
        rf"(?P<count>(?<![\w#§.:-])(?:{_NUM})(?![\w.%/:-]))",
    ]),
    re.IGNORECASE,
)
# Clauses: sentences, list items and lines, parts split by ";" or a spaced dash.
_CLAUSE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|;\s+|\n+\s*(?:[-*•]\s*)?|\s+[-–—]\s+(?=[A-Z])")
_WORD = re.compile(r"[^\W_][\w'’-]*", re.UNICODE)
_STOP = STOPWORDS | frozenset("per about around approximately roughly now still new our mr mrs ms dr x".split()) | _DAYS | frozenset(MONTHS)
_UNITS = frozenset(
    "mg mcg g ml qd bid tid hours hour days day weeks week months month years year percent percentage points pts times "
    "million billion thousand k m bn us usd eur gbp".split()
)
# A clause that says a value changed (or the next one does: "... filled on 27 April. That's not the 23rd").
_CHANGE = re.compile(
    r"\b(?:instead|supersed\w*|replac\w*|mov(?:ed|es|e)\b|chang\w*|revis\w*|increas\w*|decreas\w*|reduc\w*|rais\w*|lower\w*"
    r"|no longer|outdated|correct\w*|not)\b|→",
    re.IGNORECASE,
)
# A value its own text marks as gone: "from 6 Nov", "was 1,200", "Q1 2027 ->".
_GONE_BEFORE = re.compile(r"\b(?:from|was|were|instead of|not)\s+(?:the\s+)?[\"“~(]*$", re.IGNORECASE)
# A clause that records a proposal, not a term: "they propose a cap of $1M", "New asks: CPI cap at 5%".
_PROPOSAL = re.compile(
    r"\b(?:propos\w*|asks?|asked|asking|offer(?:s|ed|ing)?|counter\w*|wants?|wanted|requests?|requested|position|opening|mark-?up)\b",
    re.IGNORECASE,
)
# A memory that is itself a proposal or a set of positions states no terms ("Lindqvist's first term sheet",
# "CSA issues list v1", "Clause Playbook v8", "Internal requirements for the new MSA"), unless it says they were agreed.
_PROPOSAL_TITLE = re.compile(r"\b(?:term sheet|issues list|requirements|playbook|positions|proposal|sketch|draft|outline)\b", re.IGNORECASE)
_AGREED = re.compile(r"\b(?:agreed|signed|executed|final)\b", re.IGNORECASE)
_GONE_AFTER = re.compile(r"[\"”)]*\s*(?:→|->)")
_RANGE_AFTER = re.compile(r"\s?[–-]\s?[$€£]?\d")
_RANGE_BEFORE = re.compile(r"\d\s?[–-]\s?$")
_SPEAKER = re.compile(r"^\s*[^\W\d_][\w.'’ ()-]{0,38}?:\s+")


def _terms(words: str) -> frozenset[str]:
    return frozenset(stem(stem(w)) for w in words.split())


#: What a commitment sits beside: a term, a payment, a target.
TERMS = _terms(
    "cap caps capped upfront milestone milestones payment payments payable fee fees royalty royalties budget guidance "
    "guide price target targets threshold limit ceiling floor rate share tier offer deposit penalty salary bonus"
)
#: What a decided dose sits beside.
DECIDED = _terms("rp2d recommended recommend cap capped maximum max target label dose")
#: What a period with a deadline sits beside.
WINDOWS = _terms("within notice term period window deadline")
#: Words of a measurement or a label, never of a commitment: "consensus $98.4M", "week 40", "410 open queries".
MEASURED = _terms("consensus estimate estimated week weeks wk open queries spent volume average")

Value = float | tuple[object, ...]


@dataclass(frozen=True)
class Fact:
    """One value a text states, with what it is about."""

    kind: str  # money, date, pct, mult, dose, duration, count
    value: Value
    raw: str  # as written
    slot: frozenset[str]  # stemmed content words beside it
    names: frozenset[str]  # names (codes, acronyms) near it: its subject
    changed: bool  # its clause, or the next one, says something changed
    gone: bool  # its own text marks it as no longer holding


@dataclass(frozen=True)
class Claims:
    """The facts of one memory as written on ``day``."""

    speaker: str  # the label a text opens with ("Gareth:"), lower-cased; "" for none
    facts: tuple[Fact, ...]
    day: date


def commitment(kind: str, slot: frozenset[str], changed: bool) -> bool:
    """Whether a value states a commitment (a plan, a term, a target) rather than a measurement."""
    if kind == "date":
        return True  # a plan or a record: judged by when it was written (``_clash``)
    if kind == "dose":
        return bool(slot & DECIDED)
    if kind == "mult":
        return bool(slot & TERMS)
    if kind == "duration":
        return bool(slot & WINDOWS)
    if kind in ("money", "pct"):
        return bool(slot & TERMS) and not slot & MEASURED
    return changed and not slot & MEASURED  # a bare count, only where the text says it changed


def claims(text: str, day: date) -> Claims:
    """The commitments ``text`` states, as written on ``day`` (the memory's creation day)."""
    return _claims(text, day) if len(text) <= _REMEMBER_UP_TO else _read(text, day)


def _read(text: str, day: date) -> Claims:
    label = _SPEAKER.match(text)
    speaker = ""
    if label and len(label.group(0).split()) <= 4:
        speaker = label.group(0).strip().rstrip(":").lower()
        text = text[label.end():]
    clauses = [c for c in _CLAUSE.split(text) if c and c.strip()]
    changed = [bool(_CHANGE.search(c)) for c in clauses] + [False]
    title_year = _bare_year(clauses[0]) if clauses else None
    if clauses and _PROPOSAL_TITLE.search(clauses[0]) and not _AGREED.search(clauses[0]):
        return Claims(speaker, (), day)
    facts: list[Fact] = []
    for at, clause in enumerate(clauses):
        if _PROPOSAL.search(clause):
            continue  # a proposal is true as a record of what someone asked; it states no term
        facts.extend(_facts(clause, day, changed[at] or changed[at + 1], title_year))
    return Claims(speaker, tuple(facts), day)


def _bare_year(text: str) -> int | None:
    """The first year a text names on its own ("2026 board calendar"), not inside a date."""
    for m in re.finditer(r"(?<![\d/-])\b(19\d\d|20\d\d)\b(?![\d/-])", text):
        before = text[max(0, m.start() - 12):m.start()].lower()
        if not re.search(rf"(?:{_MON}|[qh][1-4])\.?[\s,]*$", before):
            return int(m.group(1))
    return None


def _facts(clause: str, day: date, changed: bool, title_year: int | None = None) -> list[Fact]:
    items: list[tuple[int, str, object]] = []  # (offset, "v" value / "w" word / "n" name, payload)
    spans: list[tuple[int, int]] = []
    for m in _VALUE.finditer(clause):
        kind = m.lastgroup or ""
        value = _normal(kind, m.group(0))
        if value is None:
            continue
        spans.append((m.start(), m.end()))
        if _RANGE_AFTER.match(clause, m.end()) or _RANGE_BEFORE.search(clause[max(0, m.start() - 4):m.start()]):
            continue  # one end of a range ("$800–830M", "15–19 Sept")
        if kind == "date" and value[0] is None:  # type: ignore[index]
            year = _bare_year(clause[: m.start()]) or title_year  # "2026 calendar: board on 19 February"
            if year is not None:
                value = (year, *value[1:])  # type: ignore[index]
        if kind == "date" and _within(value, day, day):
            continue  # the memory's own day: a stamp, not a claim
        gone = bool(_GONE_BEFORE.search(clause[max(0, m.start() - 16):m.start()]) or _GONE_AFTER.match(clause, m.end()))
        items.append((m.start(), "v", (kind, value, m.group(0).strip(), gone)))
    for w in _WORD.finditer(clause):
        if any(a <= w.start() < b for a, b in spans):
            continue
        raw = w.group(0)
        low = raw.lower().strip("'’-")
        if low in _STOP or low in _UNITS or len(low) < 2:
            continue
        items.append((w.start(), "n" if _is_name(raw) else "w", stem(stem(low))))
    items.sort(key=lambda item: item[0])
    words = [(i, str(payload), tag == "n") for i, (_, tag, payload) in enumerate(items) if tag != "v"]
    clause_names = frozenset(w for _, w, name in words if name)
    out = []
    for i, (_, tag, payload) in enumerate(items):
        if tag != "v":
            continue
        kind, value, raw, gone = cast(tuple[str, Value, str, bool], payload)
        before = [w for w in words if w[0] < i]
        after = [w for w in words if w[0] > i]
        slot = frozenset(w for _, w, _ in before[-SLOT:] + after[:SLOT])
        if not commitment(kind, slot, changed):
            continue
        # Its subject: the names just before it ("ASCEND-2 (topline Q4 2026)", "B0219 fills on 23 April"), else
        # just after it, else those of its clause ("ASCEND-3 ... database lock in January 2027").
        names = (
            frozenset(w for _, w, name in before[-SUBJECT:] if name)
            or frozenset(w for _, w, name in after[:SUBJECT] if name)
            or clause_names
        )
        out.append(Fact(kind, value, raw, slot, names, changed, gone))
    return out


#: Texts up to this long have their claims remembered (the last ``_REMEMBERED``): a batch
#: compares each new text with several others, and each of those with several new ones.
_REMEMBER_UP_TO = 20_000
_REMEMBERED = 8_192
_claims = lru_cache(maxsize=_REMEMBERED)(_read)


def _is_name(word: str) -> bool:
    """A code or an acronym: "ASCEND-2", "B0219", "RP2D", "NDA"."""
    return (any(c.isdigit() for c in word) and any(c.isalpha() for c in word)) or (len(word) > 1 and word.isupper())


def _number(text: str) -> float | None:
    m = re.search(_NUM, text)
    if m:
        return float(m.group(0).replace(",", ""))
    word = next((w for w in _WORD_NUMBERS if re.search(rf"\b{w}\b", text, re.IGNORECASE)), None)
    return None if word is None else float(_WORD_NUMBERS[word])


def _normal(kind: str, raw: str) -> Value | None:
    """A value in a form two texts can be compared in, or None for one that says nothing checkable."""
    low = raw.lower().strip()
    if kind == "date":
        return _date(low)
    number = _number(low)
    if number is None:
        return None
    if kind == "money":
        scale = re.search(r"(k|mn|m|bn|million|billion|thousand)\b\s*$", low)
        return round(number * (_SCALE[scale.group(1)] if scale else 1), 2)
    if kind == "dose":
        unit = re.search(r"mg/kg|mg|mcg|µg|g|ml", low)
        regimen = 2 if re.search(r"bid|twice", low) else 3 if "tid" in low else 1 if re.search(r"qd|once", low) else None
        return (number, unit.group(0) if unit else "", regimen)
    if kind == "duration":
        if "business" in low or "working" in low:
            return (number, "business day")
        unit = re.search(r"hour|day|week|month|year", low)
        days = {"hour": 1 / 24, "day": 1, "week": 7, "month": 365.25 / 12, "year": 365.25}[unit.group(0) if unit else "day"]
        return (round(number * days, 3), "day")
    if kind == "count" and (number < 10 or 1900 <= number <= 2100):
        return None  # small numbers and years say too little alone
    return number


def _date(low: str) -> tuple[object, ...]:
    """(year or None, month or "q1".."h2" or None, day or "early"/"mid"/"late"/"end" or None)."""
    if m := re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", low):
        return (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if m := re.fullmatch(r"(\d{2})-(\d{2})-(\d{4})", low):
        return (int(m.group(3)), int(m.group(2)), int(m.group(1)))
    if m := re.fullmatch(r"([qh])([1-4])\s?(\d{4})", low):
        return (int(m.group(3)), m.group(1) + m.group(2), None)
    year = re.search(r"\b(\d{4})\b", low)
    month = next((MONTHS[w] for w in re.findall(r"[a-z]+", low) if w in MONTHS), None)
    if re.match(r"early|mid|late|end", low):
        return (int(year.group(1)) if year else None, month, low.split()[0].split("-")[0])
    day = re.search(r"\b(\d{1,2})(?:st|nd|rd|th)?\b", re.sub(r"\b\d{4}\b", "", low))
    return (int(year.group(1)) if year else None, month, int(day.group(1)) if day else None)


def _agree(kind: str, a: Value, b: Value) -> bool:
    """Whether two values of one kind can be the same in substance."""
    if kind == "date":
        return _dates_agree(a, b)  # type: ignore[arg-type]
    if kind == "dose":  # "50 mg" and "50 mg BID" may be one dose
        return a[:2] == b[:2] and (a[2] is None or b[2] is None or a[2] == b[2])  # type: ignore[index]
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1)
    return a == b


def _dates_agree(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    for x, y in zip(a, b):
        if x is None or y is None or {x, y} == {"late", "end"}:
            continue
        if isinstance(x, str) and isinstance(y, str):
            if x != y:
                return False
        elif isinstance(x, str) or isinstance(y, str):
            part, month = (x, y) if isinstance(x, str) else (y, x)
            if str(part)[0] in "qh" and isinstance(month, int) and not _in_part(month, str(part)):
                return False
        elif x != y:
            return False
    return True


def _in_part(month: int, part: str) -> bool:
    n, size = int(part[1]), 3 if part[0] == "q" else 6
    return size * (n - 1) < month <= size * n


def _year(month: object, day: object, written: date) -> int:
    """The year that puts a day without one nearest its writing: "19 February" written in September is next year's."""
    m = month if isinstance(month, int) else 1 if month is None else {"q": 3, "h": 6}[str(month)[0]] * (int(str(month)[1]) - 1) + 1
    d = min(day if isinstance(day, int) else 15, 28)
    return min((written.year - 1, written.year, written.year + 1), key=lambda y: abs((date(y, m, d) - written).days))


def _bounds(value: Value, written: date) -> tuple[date, date] | None:
    """The first and last day a date value can mean, read as written on ``written``; None for an impossible one."""
    year, month, day = value  # type: ignore[misc]
    y = year if isinstance(year, int) else _year(month, day, written)
    if month is None:
        return date(y, 1, 1), date(y, 12, 31)
    if isinstance(month, str):
        size = 3 if month[0] == "q" else 6
        first, last = size * (int(month[1]) - 1) + 1, size * int(month[1])
        return date(y, first, 1), date(y, last, 28)
    m = cast(int, month)
    try:
        if isinstance(day, int):
            return date(y, m, day), date(y, m, day)
        return date(y, m, 1), date(y, m, 28)
    except ValueError:
        return None


def _within(value: Value, written: date, day: date) -> bool:
    bounds = _bounds(value, written)
    return bounds is None or bounds[0] <= day <= bounds[1]


def _same_slot(a: Fact, b: Fact) -> bool:
    shared = a.slot & b.slot
    if a.kind != b.kind or not shared:
        return False
    named = {w for w in shared if w in a.names or w in b.names}
    if len(shared) < MIN_SLOT and not named:
        return False  # one word in common is enough only if it names something (RP2D, B0219)
    if a.kind == "date" and shared == named:
        return False  # a day needs its event in common (topline, lock, meeting), not only a name
    return not (a.names and b.names and not a.names & b.names)


def _clash(old: Claims, a: Fact, new: Claims, b: Fact) -> bool:
    """Whether the older fact ``a`` and the newer ``b`` (about one thing) state it differently."""
    if _agree(a.kind, a.value, b.value):
        return False
    if a.kind == "date":
        old_days, new_days = _bounds(a.value, old.day), _bounds(b.value, new.day)
        if old_days is None or new_days is None or old_days[1] < old.day:
            return False  # already past when written: a record, not a plan
        if not b.changed and old_days[1] <= new.day and new_days[0] > old_days[1]:
            return False  # the old day has passed and the new one is later: the next meeting, not a moved one
        if isinstance(a.value[2], int) and isinstance(b.value[2], int) and old_days[0].year != new_days[0].year:  # type: ignore[index]
            return False  # two exact days in different years: two occurrences (this year's board, next year's)
    if any(_same_slot(a, f) and _agree(a.kind, a.value, f.value) and not f.changed for f in new.facts):
        return False  # the newer memory restates the older value
    return not any(_same_slot(f, b) and _agree(b.kind, b.value, f.value) for f in old.facts)  # the older has the newer value too


def _against(new: Claims, olds: Sequence[Claims]) -> dict[int, str]:
    """The reason each of ``olds`` (all written no later than ``new``) conflicts with ``new``, by position."""
    best: dict[int, tuple[int, str]] = {}
    for b in new.facts:
        if b.gone:
            continue
        matches = [
            (at, a)
            for at, old in enumerate(olds)
            if not (old.speaker and new.speaker and old.speaker != new.speaker)  # two people saying alike: a conversation
            for a in old.facts
            if not a.gone and _same_slot(a, b)
        ]
        others: dict[int, Value] = {}
        for at, a in matches:
            if not _agree(a.kind, a.value, b.value):
                others.setdefault(at, a.value)
        distinct: list[Value] = []
        for value in others.values():
            if not any(_agree(b.kind, value, seen) for seen in distinct):
                distinct.append(value)
        if len(others) >= SERIES and len(distinct) >= SERIES:
            continue  # several earlier memories, each with another value: a series of reports
        for at, a in matches:
            if _clash(olds[at], a, new, b):
                score = len(a.slot & b.slot)
                if at not in best or score > best[at][0]:
                    best[at] = (score, f"{b.raw} instead of {a.raw}")
    return {at: reason for at, (_, reason) in best.items()}


def find(subject: Claims, others: Sequence[Claims]) -> dict[int, str]:
    """Which of ``others`` (memories about the same subject) state one of ``subject``'s commitments
    differently: their positions, each with the reason "<newer value> instead of <older value>"."""
    older = [at for at, other in enumerate(others) if other.day <= subject.day]
    found = {older[at]: reason for at, reason in _against(subject, [others[at] for at in older]).items()}
    for at, other in enumerate(others):
        if other.day > subject.day and (reason := _against(other, [subject]).get(0)):
            found[at] = reason
    return found


@dataclass(frozen=True)
class Written:
    """A memory as detection reads it: its text, its kind and the day it was written."""

    text: str
    kind: str
    day: date

    @classmethod
    def of(cls, record: Any) -> Written:
        """A stored record or a write's input (``text``, ``kind``, ``created_at``; none: written now)."""
        when = record.created_at or datetime.now(UTC)
        return cls(record.text, record.kind, when.astimezone(UTC).date())


def judge(subject: Written, others: Sequence[tuple[Written, float]]) -> dict[int, str]:
    """Which of ``others`` (memories about the same subject, each with its similarity) conflict with
    ``subject``: their positions, each with its reason. Two tool results never do (``OBSERVATIONS``);
    nor does the same text again."""
    kept = [
        at for at, (other, similarity) in enumerate(others)
        if not (subject.kind in OBSERVATIONS and other.kind in OBSERVATIONS)
        and not (similarity >= 0.9999 and other.text.split() == subject.text.split())
    ]
    found = find(claims(subject.text, subject.day), [claims(others[at][0].text, others[at][0].day) for at in kept])
    return {kept[at]: reason for at, reason in found.items()}


def subject_similarity(
    new: np.ndarray, new_passages: Sequence[np.ndarray | None], old: np.ndarray, old_passages: np.ndarray, old_columns: np.ndarray
) -> np.ndarray:
    """(new x old) the best cosine similarity of each pair of memories, whole or by any passage.

    ``new`` and ``old`` are unit vectors of whole memories; ``new_passages``
    holds each new memory's passage vectors (None for a short one);
    ``old_passages`` are old memories' passage vectors, ``old_columns`` the
    column in ``old`` each belongs to. A long document's vector is the mean of
    many topics; one of its passages may be about exactly what a note says.
    """
    best = new @ old.T
    if len(old_passages):
        order = np.argsort(old_columns, kind="stable")  # grouped by column, for one max per group
        columns, starts = np.unique(old_columns[order], return_index=True)
        grouped = old_passages[order]
        best[:, columns] = np.maximum(best[:, columns], np.maximum.reduceat(new @ grouped.T, starts, axis=1))
    for i, passages in enumerate(new_passages):
        if passages is None or not len(passages):
            continue
        np.maximum(best[i], (passages @ old.T).max(axis=0), out=best[i])
        if len(old_passages):
            best[i, columns] = np.maximum(best[i, columns], np.maximum.reduceat((passages @ grouped.T).max(axis=0), starts))
    return best


def most_similar(similarity: np.ndarray, limit: int = CANDIDATES) -> list[tuple[int, int, float]]:
    """(row, column, similarity) of each row's ``limit`` most similar columns at ``SIMILAR`` or more."""
    out: list[tuple[int, int, float]] = []
    for i in range(len(similarity)):
        close = np.flatnonzero(similarity[i] >= SIMILAR)
        for j in close[np.argsort(-similarity[i, close], kind="stable")][:limit].tolist():
            out.append((i, int(j), float(similarity[i, j])))
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


__all__ = [
    "Claims", "Fact", "Written", "claims", "commitment", "find", "judge", "subject_similarity", "most_similar", "strongest",
    "OBSERVATIONS", "SIMILAR", "CANDIDATES", "MAX_LINKS",
]
