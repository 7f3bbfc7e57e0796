"""Inside a long memory: its passages under a query, and one passage's neighbourhood.

A long memory is kept whole and as passages (``lodviz.passages``). Under a
query an agent reads it as an excerpt, its passages nearest the query
(``lodviz.search.excerpts``), and the search's audit line records which
(``details["excerpts"]``). Two reads of that:

- ``Drilling.passages``: every passage of one memory with how near it is to a
  query (its cosine, and S fused with its lexical evidence as a search fuses
  it, ``search.passages.weigh`` over this memory's passages; its rank among
  them), and which ones the agent received in the latest use that delivered
  the memory's text (a search or browse at FULL or SUMMARY, an expand), with
  that use's own S and rank for each: why it received them. What an auditor
  reads as a DataFrame and the landscape draws as a strip of heat.
- ``Drilling.neighbourhood``: the passage holding a phrase the agent read (or,
  if none holds it, the passage nearest to it by embedding) and ``width``
  passages on each side, verbatim with ``…`` where text was left out: an agent
  drills in without paying for the whole document. It counts as a retrieval
  as ``expand`` does: the memory is touched with an "expand" audit line that
  names the passages (``details["passages"]``), so the log still replays.

A short memory has no passages: ``passages`` answers with none, and its
neighbourhood is the memory itself (its own only passage). A memory the caller
may not see answers exactly as one that does not exist (the lookup it is
handed raises ``MemoryNotFound``).

Handed the store, the lookup of one memory as an agent may see it, a query's
embedding, the store's lexical weight, one audit event by id, "now" and who
acts when a call names nobody.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from lodviz import audit, limits
from lodviz import passages as cutting
from lodviz.errors import InvalidInput
from lodviz.floors import SHOWN_LOOKBACK, touch_expanded
from lodviz.records import AuditEvent, MemoryId, MemoryRecord
from lodviz.scoring import Tier
from lodviz.search import passages as evidence
from lodviz.store.base import Store
from lodviz.times import iso

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

Span = tuple[int, int]

#: The columns of ``Drilling.passages``' frame, in order.
COLUMNS = ("position", "start", "stop", "text", "cosine", "S", "rank", "received", "search_S", "search_rank", "why")
#: At most this many places of a phrase are weighed (a phrase like "the" is everywhere; the first places decide).
MAX_PLACES = 1000


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass(frozen=True)
class Delivery:
    """A use on the audit log that delivered a memory's text to an agent, and which passages it carried.

    ``tier``: FULL for the whole (a FULL item, an expand), SUMMARY for an
    excerpt or the stored summary, lower when a use named by id did not
    deliver its text. ``spans``: the passages received (all of them for the
    whole). ``query``: the search's, or for an expand of passages the phrase
    it was around (``around``).
    """

    event_id: int | None
    action: str
    query: str | None
    at: datetime | None
    agent_id: str | None
    tier: Tier
    spans: tuple[Span, ...]
    whole: bool
    around: str | None = None
    lexical_weight: float | None = None

    @property
    def label(self) -> str:
        """How the panel and the frame name it: ``search #41 “liability cap” at 2026-06-01 12:00``."""
        text = f"{self.action} #{self.event_id}" if self.event_id is not None else self.action
        if self.around:
            text += f" around “{self.around}”"
        elif self.query:
            text += f" “{self.query}”"
        if self.at is not None:
            text += f" at {self.at:%Y-%m-%d %H:%M}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id, "action": self.action, "query": self.query, "around": self.around, "at": iso(self.at),
            "agent_id": self.agent_id, "tier": self.tier.name, "whole": self.whole, "passages": [list(s) for s in self.spans],
            "label": self.label,
        }


@dataclass(frozen=True)
class Neighbourhood:
    """One passage of a memory and its neighbours, as an agent reads them.

    ``text`` is the passages verbatim in the memory's order, ``…`` wherever
    text was left out (before, between, after). ``held`` are the positions
    that hold the phrase (two where it crosses a boundary), or the one nearest
    to it (``matched`` "nearest"). ``record`` is the memory after this read.
    """

    record: MemoryRecord
    text: str
    positions: tuple[int, ...]
    spans: tuple[Span, ...]
    held: tuple[int, ...]
    matched: str  # "phrase" or "nearest"
    count: int  # the memory's passages (1 for a short memory: itself)
    around: str
    width: int

    @property
    def memory_id(self) -> int:
        return self.record.id

    @property
    def before(self) -> int:
        """Passages left out before the neighbourhood."""
        return self.positions[0]

    @property
    def after(self) -> int:
        """Passages left out after it."""
        return self.count - 1 - self.positions[-1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.memory_id, "headline": self.record.headline, "text": self.text, "around": self.around, "width": self.width,
            "matched": self.matched, "held": list(self.held), "positions": list(self.positions),
            "passages": [list(s) for s in self.spans], "passage_count": self.count, "before": self.before, "after": self.after,
            "retrieval_count": self.record.retrieval_count, "last_retrieved_at": iso(self.record.last_retrieved_at),
        }


def folded(text: str) -> tuple[str, list[int]]:
    """``text`` case-folded with every run of whitespace one space (none leading), and each character's offset in ``text``."""
    out: list[str] = []
    at: list[int] = []
    space = True
    for i, ch in enumerate(text):
        if ch.isspace():
            if not space:
                out.append(" ")
                at.append(i)
                space = True
            continue
        space = False
        for c in ch.casefold():
            out.append(c)
            at.append(i)
    return "".join(out), at


def needle(phrase: str) -> str:
    """What of ``phrase`` is looked for: folded, and of a phrase copied across an excerpt's marks the longest piece."""
    pieces = [folded(piece)[0].strip() for part in phrase.split(cutting.GAP) for piece in part.split(cutting.HEAD_MARK)]
    return max(pieces, key=len) if pieces else ""


def places(text: str, spans: Sequence[Span], phrase: str) -> list[tuple[int, ...]]:
    """Where ``phrase`` occurs in ``text`` (whitespace-normalised, case-insensitive), each as the positions of the passages holding it."""
    wanted = needle(phrase)
    if not wanted:
        return []
    haystack, at = folded(text)
    starts = np.asarray([a for a, _ in spans], dtype=np.int64)
    stops = np.asarray([b for _, b in spans], dtype=np.int64)
    found: list[tuple[int, ...]] = []
    p = haystack.find(wanted)
    while p >= 0 and len(found) < MAX_PLACES:
        a, b = at[p], at[p + len(wanted) - 1] + 1
        held = tuple(np.flatnonzero((starts < b) & (stops > a)).tolist())
        if held and held not in found:
            found.append(held)
        p = haystack.find(wanted, p + 1)
    return found


class Drilling:
    """The passages of one store's long memories: weighed under a query, received, and read around a phrase."""

    def __init__(
        self,
        store: Store,
        get: Callable[[MemoryId, str | None], MemoryRecord],
        embed: Callable[[str], np.ndarray],
        lexical_weight: Callable[[], float],
        event: Callable[[int], AuditEvent],
        now: Callable[[datetime | str | None], datetime],
        actor: Callable[[], str],
    ) -> None:
        self._store = store
        self._get = get  # MemoryNotFound for a memory the agent may not see
        self._embed = embed
        self._lexical_weight = lexical_weight
        self._event = event  # InvalidInput for an id the log does not hold
        self._now = now
        self._actor = actor

    # -- what is kept ----------------------------------------------------------------------

    def _spans(self, record: MemoryRecord) -> tuple[list[Span], np.ndarray]:
        """The memory's passages' spans and unit vectors, in its order (none for a short memory)."""
        kept = self._store.passages().of([record.id])
        order = np.argsort(kept.position, kind="stable")
        return [(int(a), int(b)) for a, b in kept.spans[order].tolist()], kept.vectors[order]

    def _weigh(self, query: str, text: str, spans: list[Span], vectors: np.ndarray, lexical_weight: float) -> evidence.Near:
        cosine = np.maximum(vectors @ np.asarray(self._embed(query), dtype=np.float32), 0.0)
        owner = np.zeros(len(spans), dtype=np.int64)
        return evidence.weigh(query, owner, np.asarray(spans, dtype=np.int64), cosine, cutting.texts(text, spans), lexical_weight)

    # -- what the agent received -------------------------------------------------------------

    def delivery(
        self, record: MemoryRecord, agent_id: str | None, event_id: int | None = None, spans: list[Span] | None = None
    ) -> Delivery | None:
        """The latest use that delivered ``record``'s text to the agent (FULL or SUMMARY, an expand), or the use ``event_id``.

        With no agent named: the latest such use by the memory's own agent or
        for all agents (an auditor's search), as ``Floors.last_delivered`` reads it.
        A person's look in the landscape is no delivery. None: no use on record
        (among the agent's latest ``SHOWN_LOOKBACK``). ``spans``: the memory's, if read already.
        """
        spans = self._spans(record)[0] if spans is None else spans
        if event_id is not None:
            event = self._event(event_id)
            if event.action not in audit.USING or (agent_id is not None and event.agent_id != agent_id):
                raise InvalidInput(f"there is no search or expand #{event_id} for this agent.")
            return self._delivered(event, record, spans, named=True)
        for event in self._store.audit(agent_id=agent_id, actions=list(audit.USING), limit=SHOWN_LOOKBACK):
            if agent_id is None and event.agent_id not in (None, record.agent_id):
                continue
            found = self._delivered(event, record, spans, named=False)
            if found is not None:
                return found
        return None

    def _delivered(self, event: AuditEvent, record: MemoryRecord, spans: list[Span], named: bool) -> Delivery | None:
        """What ``event`` delivered of ``record``; None where it delivered no text and was not asked for by id (``named``)."""

        def made(tier: Tier, received: Sequence[Sequence[int]], whole: bool, query: str | None, around: str | None = None,
                 weight: float | None = None) -> Delivery:
            return Delivery(event.id, event.action, query, event.at, event.agent_id, tier, tuple((int(a), int(b)) for a, b in received),
                            whole, around, weight)

        if event.action == "expand":
            if event.memory_id != record.id:
                return made(Tier.OUT, (), False, None) if named else None
            quoted = event.details.get("passages")
            if quoted is None:  # the whole memory
                return made(Tier.FULL, spans, True, None)
            around = event.details.get("around")
            return made(Tier.SUMMARY, quoted, False, around, around)
        if event.details.get("view") and not named:  # a person's look in the landscape, not what the agent received
            return None
        tier = Tier.OUT
        for name, members in (event.details.get("returned") or {}).items():
            if record.id in members and name in Tier.__members__:
                tier = max(tier, Tier[name])
        if tier < Tier.SUMMARY and not named:
            return None
        weight = event.details.get("lexical_weight")
        whole = tier == Tier.FULL
        quoted = spans if whole else (event.details.get("excerpts") or {}).get(str(record.id)) or []
        return made(Tier(tier), quoted, whole, event.query, None, float(weight) if isinstance(weight, (int, float)) else None)

    # -- the passages under a query ------------------------------------------------------------

    def passages(
        self, memory_id: MemoryId, query: str | None, agent_id: str | None, event_id: int | None = None
    ) -> pd.DataFrame:
        """One row per passage of the memory, in its order (``COLUMNS``); empty for a short memory.

        ``cosine``, ``S`` and ``rank`` (1 = nearest) are for ``query`` (NaN
        and missing without one). ``received``: the passage was in what the
        latest use that delivered the memory gave the agent (or use
        ``event_id``); ``search_S`` and ``search_rank`` are the same numbers
        for that use's query, and ``why`` says it in words. The frame's
        ``attrs`` hold ``memory_id``, ``query``, ``passage_count`` and
        ``delivered_by`` (``Delivery.to_dict()``, or None).
        """
        import pandas as pd

        record = self._get(memory_id, agent_id)
        query = (query or "").strip() or None
        if query is not None:
            limits.current().check_query(query)
        spans, vectors = self._spans(record)
        delivered = self.delivery(record, agent_id, event_id, spans) if spans else None
        frame = pd.DataFrame(self._rows(record, spans, vectors, query, delivered), columns=list(COLUMNS))
        frame = frame.astype({"position": "int64", "start": "int64", "stop": "int64", "cosine": "float64", "S": "float64",
                              "rank": "Int64", "received": "bool", "search_S": "float64", "search_rank": "Int64"})
        frame.attrs.update(memory_id=record.id, query=query, passage_count=len(spans),
                           delivered_by=delivered.to_dict() if delivered is not None else None)
        return frame

    def _rows(
        self, record: MemoryRecord, spans: list[Span], vectors: np.ndarray, query: str | None, delivered: Delivery | None
    ) -> list[dict[str, Any]]:
        if not spans:
            return []
        n = len(spans)
        nan = np.full(n, np.nan)
        cosine, similarity = nan, nan
        rank: list[int | None] = [None] * n
        weight = self._lexical_weight()
        current: evidence.Near | None = None
        if query is not None:
            current = self._weigh(query, record.text, spans, vectors, weight)
            cosine, similarity, rank = current.cosine, current.similarity, ranks(current.similarity)
        then = nan
        then_rank: list[int | None] = [None] * n
        searched = delivered is not None and delivered.action in audit.RETRIEVING and bool(delivered.query)
        if searched:
            assert delivered is not None and delivered.query is not None
            recorded = delivered.lexical_weight if delivered.lexical_weight is not None else weight
            same = current is not None and query == delivered.query and recorded == weight
            past = current if same and current is not None else self._weigh(delivered.query, record.text, spans, vectors, recorded)
            then, then_rank = past.similarity, ranks(past.similarity)
        received = set(delivered.spans) if delivered is not None else set()
        rows = []
        for i, (a, b) in enumerate(spans):
            got = (a, b) in received
            rows.append({
                "position": i, "start": a, "stop": b, "text": record.text[a:b], "cosine": float(cosine[i]),
                "S": float(similarity[i]), "rank": rank[i], "received": got, "search_S": float(then[i]), "search_rank": then_rank[i],
                "why": why(delivered, got, float(then[i]), then_rank[i], n, searched),
            })
        return rows

    # -- one passage's neighbourhood ---------------------------------------------------------------

    def neighbourhood(
        self, memory_id: MemoryId, around: str, width: int, agent_id: str | None, now: datetime | str | None, actor: str | None,
        touch: bool,
    ) -> Neighbourhood:
        """The passage holding ``around`` (else the one nearest it) and ``width`` passages on each side; counts as a retrieval.

        Where the phrase occurs more than once, a place among the passages the
        agent last received wins (it quotes what it read), else the first.
        ``touch`` False (a read-only caller) counts and records nothing.
        """
        if not isinstance(around, str) or not around.strip():
            raise InvalidInput("around is empty: give a phrase from the excerpt you read.")
        around = around.strip()
        limits.current().check_query(around, "around")
        if isinstance(width, bool) or not isinstance(width, int) or width < 0:
            raise InvalidInput(f"width must be a whole number of at least 0, got {width!r}.")
        record = self._get(memory_id, agent_id)
        text = record.text
        spans, vectors = self._spans(record)
        if not spans:  # a short memory is its own only passage
            start = len(text) - len(text.lstrip())
            spans, vectors = [(start, len(text.rstrip()))], np.zeros((0, 0), dtype=np.float32)
        found = places(text, spans, around)
        if found:
            delivered = self.delivery(record, agent_id, spans=spans) if len(found) > 1 else None
            read = {i for i, span in enumerate(spans) if delivered is not None and span in set(delivered.spans)}
            held, matched = next((p for p in found if read.intersection(p)), found[0]), "phrase"
        else:
            nearest = 0 if len(spans) == 1 else int(np.argmax(vectors @ np.asarray(self._embed(around), dtype=np.float32)))
            held, matched = (nearest,), "nearest"
        positions = tuple(range(max(held[0] - width, 0), min(held[-1] + width, len(spans) - 1) + 1))
        quoted = tuple(spans[i] for i in positions)
        if touch:
            touch_expanded(
                self._store, record, self._now(now), actor or agent_id or self._actor(), agent_id,
                {"around": around, "width": width, "matched": matched, "positions": list(positions),
                 "passages": [list(s) for s in quoted], "of": len(spans)},
            )
            record = self._get(record.id, None)
        return Neighbourhood(
            record=record, text=cutting.excerpt(text, spans, positions, ""), positions=positions, spans=quoted, held=tuple(held),
            matched=matched, count=len(spans), around=around, width=width,
        )


def ranks(similarity: np.ndarray) -> list[int | None]:
    """Each passage's rank by S, 1 for the nearest (ties in the memory's order)."""
    order = np.argsort(-np.asarray(similarity, dtype=np.float64), kind="stable")
    out = np.empty(len(order), dtype=np.int64)
    out[order] = np.arange(1, len(order) + 1)
    return [int(r) for r in out]


def why(delivered: Delivery | None, received: bool, similarity: float, rank: int | None, count: int, searched: bool) -> str:
    """Why a passage was or was not received, in words: the use, and its S and rank there."""
    if delivered is None:
        return "not received: no search or expand on record delivered this memory"
    if delivered.whole:
        return f"received whole in {delivered.label} ({'FULL' if delivered.action != 'expand' else 'the full text'})"
    if delivered.action == "expand":
        return f"{'received' if received else 'not received'} in {delivered.label}"
    if delivered.tier < Tier.SUMMARY:
        return f"not received: {delivered.label} did not deliver its text"
    if not delivered.spans:
        return f"not received: {delivered.label} gave its summary"
    if not searched or rank is None:
        return f"{'received' if received else 'not received'} in {delivered.label}"
    return f"{'received' if received else 'not received'} in {delivered.label}: S {similarity:.3f}, {ordinal(rank)} of {count} passages"


__all__ = ["COLUMNS", "Delivery", "Drilling", "Neighbourhood", "folded", "needle", "ordinal", "places", "ranks", "why"]
