"""Passages: the parts of a long memory that a query can be near.

A long memory (a session, a document, a tool's output) is kept whole, and is
also cut, once at write time, into passages that the store embeds with the same
model, so that a search can tell *which part* of a memory it is near and
deliver that part sharp (docs/retrieval.md, "Long memories"). A passage is a
span of the full text, ``(start, stop)`` character offsets: its text is always
a verbatim slice of the memory, never a rewrite, so what an agent reads from an
excerpt is what was stored.

How a text is cut:

- a transcript (lines that open with a speaker label, ``"Ada: ..."``) is cut
  at its turns, one passage per turn;
- anything else at its blocks (paragraphs, list items, log lines), with short
  blocks packed together up to a window, and a block too long for a window cut
  at its sentences.

Lengths are counted in *tokens* as a WordPiece model reads them, estimated
without the model (``tokens``: within about 10% of MiniLM's on the
benchmark's prose, logs, JSON and test output, where a count of words is off
by a factor of three on a JSON record). A document's window holds at most
``MAX_TOKENS`` unless one sentence is longer, and is closed at a block
boundary once it holds ``MIN_TOKENS``; a transcript's turn is a passage up to
``TURN_TOKENS``. Only a long text is cut (``is_long``): a short one is its own
only passage and needs none.

Pure: text in, offsets out; no model, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: A window of a document holds at most this many tokens (``tokens``): a sentence or two, so that the camera
#: can be near one line of a log or one record of a listing (docs/retrieval.md measured 40 to 120).
MAX_TOKENS = 40
#: A window is closed at a block boundary once it holds this many tokens.
MIN_TOKENS = 20
#: A transcript's turn is one passage up to this many tokens; only a longer one is cut at its sentences.
TURN_TOKENS = 100
#: A text is long (and cut) past this many tokens, or past ``LONG_SENTENCES`` sentences of more than
#: ``FEW_TOKENS`` in all (a few short lines are not long, however many sentences).
LONG_TOKENS = 160
LONG_SENTENCES = 6
FEW_TOKENS = 35

# Where a sentence ends inside a line: after . ! ? (and any closing quote or bracket), before a capital or digit.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”')\]]*\s+(?=[\"“'(\[]?[A-Z0-9@#$£€])")
# "Ada: ...", "Dr. Solberg: ...", "user: ...": a turn of a transcript.
_TURN = re.compile(r"^[^\W\d_][\w.'’ ()-]{0,38}?:[ \t]+\S", re.UNICODE | re.MULTILINE)
# The pieces a WordPiece tokenizer starts from: runs of letters, runs of digits, and every other mark alone.
_PIECE = re.compile(r"[^\W\d_]+|\d+|[^\w\s]|_", re.UNICODE)
#: A run of letters is one token per this many letters (a long word is split into word pieces).
LETTERS_PER_TOKEN = 7
#: A run of digits is one token per this many digits.
DIGITS_PER_TOKEN = 3

Span = tuple[int, int]


def tokens(text: str, span: Span | None = None) -> int:
    """The tokens of ``text`` (or of one span of it) as a WordPiece model reads them, estimated: a run of
    letters is a token per ``LETTERS_PER_TOKEN`` letters, a run of digits per ``DIGITS_PER_TOKEN`` digits,
    every other mark one."""
    a, b = span if span is not None else (0, len(text))
    n = 0
    for match in _PIECE.finditer(text, a, b):
        piece = match.group()
        if piece[0].isdigit():
            n += (len(piece) + DIGITS_PER_TOKEN - 1) // DIGITS_PER_TOKEN
        elif piece[0].isalpha():
            n += 1 + (len(piece) - 1) // LETTERS_PER_TOKEN
        else:
            n += 1
    return n


def _strip(text: str, start: int, stop: int) -> Span:
    while start < stop and text[start].isspace():
        start += 1
    while stop > start and text[stop - 1].isspace():
        stop -= 1
    return start, stop


def _lines(text: str) -> list[Span]:
    """The non-blank lines of ``text``, stripped."""
    spans = []
    start = 0
    for piece in text.splitlines(keepends=True):
        span = _strip(text, start, start + len(piece))
        if span[1] > span[0]:
            spans.append(span)
        start += len(piece)
    return spans


def _is_transcript(text: str, lines: Sequence[Span]) -> bool:
    """Whether at least half the lines open a turn: one turn alone (a memory per turn) is a transcript too."""
    turns = sum(1 for a, b in lines if _TURN.match(text, a, b))
    return turns >= 1 and turns * 2 >= len(lines)


def _blocks(text: str, lines: Sequence[Span]) -> list[Span]:
    """Turns of a transcript (a turn runs until the next label), else the lines themselves."""
    if not _is_transcript(text, lines):
        return list(lines)
    blocks: list[Span] = []
    for a, b in lines:
        if blocks and not _TURN.match(text, a, b):
            blocks[-1] = (blocks[-1][0], b)  # a turn's continuation line
        else:
            blocks.append((a, b))
    return blocks


def sentences(text: str, span: Span | None = None) -> list[Span]:
    """The sentences of ``text`` (or of one span of it), as stripped spans, line by line."""
    a, b = span if span is not None else (0, len(text))
    out: list[Span] = []
    for la, lb in _lines(text[a:b]):
        start = a + la
        for match in _SENTENCE_END.finditer(text, a + la, a + lb):
            piece = _strip(text, start, match.start())
            if piece[1] > piece[0]:
                out.append(piece)
            start = match.end()
        piece = _strip(text, start, a + lb)
        if piece[1] > piece[0]:
            out.append(piece)
    return out


def is_long(text: str) -> bool:
    """Whether ``text`` is long enough to be kept as passages as well as whole."""
    size = tokens(text)
    if size > LONG_TOKENS:
        return True
    return size > FEW_TOKENS and len(sentences(text)) > LONG_SENTENCES


def cut(text: str) -> list[Span]:
    """The passages of a long ``text``, in order, as ``(start, stop)`` offsets; ``[]`` for a short one.

    Every passage is a stripped, non-empty slice of ``text``; passages do not
    overlap, and together they hold every word of it.
    """
    if not is_long(text):
        return []
    lines = _lines(text)
    transcript = _is_transcript(text, lines)
    most = TURN_TOKENS if transcript else MAX_TOKENS
    units: list[tuple[Span, bool]] = []  # (span, starts a block)
    for block in _blocks(text, lines):
        if tokens(text, block) <= most:
            units.append((block, True))
        else:
            units.extend((s, i == 0) for i, s in enumerate(sentences(text, block)))
    passages: list[Span] = []
    current: Span | None = None
    size = 0
    for span, opens in units:
        n = tokens(text, span)
        close = current is not None and (
            size + n > most or (opens and (transcript or size >= MIN_TOKENS))
        )
        if close:
            assert current is not None
            passages.append(current)
            current = None
        if current is None:
            current, size = span, n
        else:
            current, size = (current[0], span[1]), size + n
    if current is not None:
        passages.append(current)
    return passages


def texts(text: str, spans: Sequence[Span]) -> list[str]:
    """The text of each passage."""
    return [text[a:b] for a, b in spans]


#: Where an excerpt left text out.
GAP = "…"
#: Between a headline and the passages quoted after it.
HEAD_MARK = "—"


def excerpt(text: str, spans: Sequence[Span], chosen: Sequence[int], headline: str) -> str:
    """A long memory as the camera sees it near: its headline (if given), then the ``chosen`` passages verbatim.

    The passages come in the memory's own order, with ``…`` wherever text was
    left out (before, between and after them), so an agent can tell an excerpt
    from the whole and what it skipped; ``—`` parts the headline from them.
    """
    picked = sorted(set(int(i) for i in chosen))
    if not picked:
        return headline
    opening = not text[: spans[picked[0]][0]].strip()
    said = opening and _said(headline, [text[a:b] for a, b in (spans[i] for i in picked)])
    parts = [headline.rstrip(), HEAD_MARK] if headline.strip() and not said else []
    last_stop = 0
    for i in picked:
        a, b = spans[i]
        if text[last_stop:a].strip():
            parts.append(GAP)
        parts.append(text[a:b])
        last_stop = b
    if text[last_stop:].strip():
        parts.append(GAP)
    return " ".join(parts)


def _said(headline: str, quoted: Sequence[str]) -> bool:
    """Whether every part of ``headline`` (split at ``—`` and ``…``) appears verbatim in ``quoted``."""
    parts = [" ".join(p.split()) for p in re.split(r"[—…]", headline)]
    parts = [p for p in parts if p]
    body = " ".join(" ".join(q.split()) for q in quoted)
    return bool(parts) and all(p in body for p in parts)


__all__ = ["FEW_TOKENS", "GAP", "HEAD_MARK", "LONG_SENTENCES", "LONG_TOKENS", "MAX_TOKENS", "MIN_TOKENS", "TURN_TOKENS", "Span", "cut", "excerpt", "is_long", "sentences", "texts", "tokens"]
