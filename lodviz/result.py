"""What the service returns: search results and the text an agent reads, and the small
answers of its other operations (a landscape, an import, a floor change, a store's facts).

A search returns items at their tiers, and the text an agent reads.

``Result.render()`` is the text handed to an agent (the MCP tools return it as
their text, the CLI's ``--text`` prints it), and the text a token budget is
kept on. It is built to cost few tokens for what it carries:

    Memory within 400 tokens: 2 full, 1 summary, 3 headlines. … = condensed, memory_expand #id.
    2023
    8 May
    #411 Paloma: Okay so big news: I've moved to Calgary! Boxes everywhere.
    #412 Paloma: The flat is tiny but the light is amazing.…
    3 Jun
    #519 Wes: Gabe is thinking of moving to Melbourne for a job…

Memories are listed oldest first under the day they were written (a
conversation reads in order, and "when" questions need the day), the days
under their year: a year heading costs its tokens once, where "8 May 2023"
on every day cost twice what "8 May" does. The header does not repeat the
query: the agent has just sent it; it says the budget the text was kept within. Every line opens with its
memory's ``#id``, so the agent can promote, cite or expand what it read (a
memory shown whole too: about three tokens a line, measured in
docs/retrieval.md); a condensed one (a summary shorter than its text, or a
headline) ends in "…", so the agent knows what it can expand. Every id, tier
and score is in ``to_dict()``.

``line``, ``year_line``, ``date_line`` and ``header`` are the pieces
``render`` joins; the budget prices exactly these pieces.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, NamedTuple

import numpy as np

from lodviz import scoring
from lodviz.params import Params
from lodviz.records import Columns, rows_in
from lodviz.scoring import Tier
from lodviz.times import iso

CONDENSED = "…"
TITLES = {
    "search": "Memory",
    "recent": "Memories written in the window",
    "unseen": "Memories never retrieved",
    "sample": "Memories resurfaced from what is fading",
}


class _HitFields(NamedTuple):
    id: int
    tier: Tier
    content: str
    similarity: float
    decay: float
    score: float
    penalty: float
    retrieval_count: int
    last_retrieved_at: datetime | None
    created_at: datetime
    agent_id: str
    visibility: str
    kind: str
    source: str | None
    floor: Tier
    tokens: int
    whole: bool = True  # the content is the memory's full text


class Hit(_HitFields):
    """One memory in a result, with its content at its tier and why.

    A named tuple of its fields: a search builds up to k (1000) of these, and
    a tuple is made in C (1,000 in ~0.28 ms here, against ~0.49 ms through a
    dataclass's ``__init__``). ``conflicts`` and ``superseded_by`` are set
    after the fact, on the few items a conflict touches; they are part of
    equality between items.
    """

    # Ids of memories this one may contradict (open conflicts); an empty tuple unless set.
    conflicts: Sequence[int] = ()
    superseded_by: int | None = None  # an auditor marked it superseded by this memory
    # A long memory under a query: the passages (offsets in its full text) its content quotes; empty unless set.
    excerpt: Sequence[tuple[int, int]] = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hit):
            return NotImplemented
        return (
            tuple.__eq__(self, other)
            and list(self.conflicts) == list(other.conflicts)
            and self.superseded_by == other.superseded_by
            and [tuple(x) for x in self.excerpt] == [tuple(x) for x in other.excerpt]
        )

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]  # mutable, like the record it is

    def __repr__(self) -> str:
        extra = f", excerpt={list(self.excerpt)!r}" if self.excerpt else ""
        return f"{_HitFields.__repr__(self)[:-1]}, conflicts={self.conflicts!r}, superseded_by={self.superseded_by!r}{extra})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tier": self.tier.name,
            "content": self.content,
            "whole": self.whole,
            "similarity": round(self.similarity, 6),
            "decay": round(self.decay, 6),
            "score": round(self.score, 6),
            "penalty": round(self.penalty, 6),
            "retrieval_count": self.retrieval_count,
            "last_retrieved_at": iso(self.last_retrieved_at),
            "created_at": iso(self.created_at),
            "agent_id": self.agent_id,
            "visibility": self.visibility,
            "kind": self.kind,
            "source": self.source,
            "floor": self.floor.name,
            "tokens": self.tokens,
            "conflicts": list(self.conflicts),
            "superseded_by": self.superseded_by,
            "excerpt": [list(span) for span in self.excerpt],
        }


def line(
    memory_id: int, content: str, whole: bool, conflicts: Sequence[int] = (), superseded_by: int | None = None,
    quoted: bool = False,
) -> str:
    """One memory's line in the rendered text (``quoted``: an excerpt, which marks its own gaps).

    Every line opens with the memory's ``#id``, a text read whole too: the
    agent promotes, cites and expands by it.
    """
    text = " ".join(content.split()) if "\n" in content else content
    out = f"#{memory_id} {text}" + ("" if whole or quoted or text.endswith(CONDENSED) else CONDENSED)
    if superseded_by is not None:
        out += f" [superseded by #{superseded_by}]"
    if conflicts:
        out += " [may conflict with " + ", ".join(f"#{c}" for c in conflicts) + "]"
    return out


def year_line(created_at: date) -> str:
    """The heading of a year's days: "2023"."""
    return str(created_at.year)


def date_line(created_at: date) -> str:
    """The heading of a day's memories, under its year: "8 May"."""
    return f"{created_at.day} {created_at.strftime('%b')}"


def header(mode: str, counts: dict[str, int], exclude: Sequence[str] = (), excerpts: int = 0, budget: int | None = None) -> str:
    """The first line: what this is, within which budget, and how many memories at which resolution.

    ``excerpts`` of the SUMMARY items are long memories' passages near the query, counted apart.
    """
    title = TITLES[mode] + (f" within {budget} tokens" if budget is not None else "")
    summaries = counts["SUMMARY"] - excerpts
    parts = [
        f"{n} {name}"
        for n, name in (
            (counts["FULL"], "full"),
            (excerpts, _plural(excerpts, "excerpt", "excerpts")),
            (summaries, _plural(summaries, "summary", "summaries")),
            (counts["HEADLINE"], _plural(counts["HEADLINE"], "headline", "headlines")),
        )
        if n
    ]
    text = f"{title}: " + (", ".join(parts) if parts else "nothing visible here") + "."
    if counts["SUMMARY"] or counts["HEADLINE"]:
        text += f" {CONDENSED} = condensed, memory_expand #id."
    if exclude:
        text += " Excluding: " + ", ".join(exclude) + "."
    return text


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def render_items(mode: str, items: Sequence[Hit], exclude: Sequence[str] = (), budget: int | None = None) -> str:
    """The text of a result: a header, then the items oldest first under their days, the days under their years."""
    counts = count_tiers(items)
    lines = [header(mode, counts, exclude, sum(1 for item in items if item.excerpt), budget)]
    last_year = last_day = None
    for item in sorted(items, key=lambda hit: (hit.created_at, hit.id)):
        year, day = year_line(item.created_at), date_line(item.created_at)
        if year != last_year:
            lines.append(year)
            last_year, last_day = year, None
        if day != last_day:
            lines.append(day)
            last_day = day
        lines.append(line(item.id, item.content, item.whole, item.conflicts, item.superseded_by, bool(item.excerpt)))
    return "\n".join(lines) + "\n"


#: Tier names by tier: ``Tier.name`` is a descriptor call, and a search asks it of up to k items twice.
_NAMES = {tier: tier.name for tier in Tier}


def returned_by_tier(items: Sequence[Hit]) -> dict[str, list[int]]:
    """The ids of ``items`` by tier name: what a search's audit line keeps of its answer."""
    out: dict[str, list[int]] = {tier.name: [] for tier in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE)}
    for item in items:
        out[_NAMES[item.tier]].append(int(item.id))
    return out


def count_tiers(items: Sequence[Hit]) -> dict[str, int]:
    counts = {tier.name: 0 for tier in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE)}
    for item in items:
        counts[_NAMES[item.tier]] += 1
    return counts


@dataclass(frozen=True, eq=False)
class PendingHits:
    """A search's items before they are ``Hit`` objects: their ids, tiers and token
    estimates as arrays, and how to make the items.

    A search answers 1,000 items; making them costs ~1-2 ms at 100k memories,
    as much as a third of what the search adds to its scan. What the search
    itself needs of them (counts, ids by tier, tokens, the audit line) comes
    from these arrays, and the items are made when first read. ``build`` holds
    the search's own columns and texts, so the items are those of the moment
    the search ran, whatever the store does in between.
    """

    ids: np.ndarray  # int64, in the items' order
    tiers: np.ndarray  # int64 tier numbers, in the items' order
    tokens: np.ndarray  # each item's ``tokens``
    build: Callable[[], list[Hit]]

    def counts(self) -> dict[str, int]:
        made = np.bincount(self.tiers, minlength=len(Tier))
        return {tier.name: int(made[tier]) for tier in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE)}

    def by_tier(self) -> dict[str, list[int]]:
        return {tier.name: self.ids[self.tiers == tier].tolist() for tier in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE)}


class Result:
    """What a search or a non-semantic mode returns.

    ``items`` is a list of ``Hit``; a search may hand them over as
    ``PendingHits``, made into the list when ``items`` is first read
    (``counts``, ``tokens`` and ``returned`` do not need it).
    """

    def __init__(
        self,
        mode: str,  # search, recent, unseen, sample
        items: list[Hit] | PendingHits,
        params: Params,
        now: datetime,
        agent_id: str | None,
        query: str | None = None,
        exclude: list[str] | None = None,
        budget_tokens: int | None = None,
        candidates: int = 0,
        counted_tokens: int | None = None,
        tokenizer: str | None = None,
    ) -> None:
        self.mode = mode
        self._items: list[Hit] | None = None if isinstance(items, PendingHits) else items
        self._pending: PendingHits | None = items if isinstance(items, PendingHits) else None
        self.params = params
        self.now = now
        self.agent_id = agent_id
        self.query = query
        self.exclude = list(exclude) if exclude is not None else []
        self.budget_tokens = budget_tokens
        self.candidates = candidates
        #: Real tokens of ``render()`` when the result was counted (always under a
        #: budget); otherwise None and ``tokens`` is an estimate.
        self.counted_tokens = counted_tokens
        self.tokenizer = tokenizer

    @property
    def items(self) -> list[Hit]:
        if self._items is None:
            assert self._pending is not None
            self._items = self._pending.build()
            self._pending = None
        return self._items

    @items.setter
    def items(self, items: list[Hit]) -> None:
        self._items, self._pending = items, None

    def __getstate__(self) -> dict[str, Any]:
        # A pickle carries the items themselves, not the search's way of making them.
        return {**self.__dict__, "_items": self.items, "_pending": None}

    def _fields(self) -> tuple[Any, ...]:
        return (self.mode, self.items, self.params, self.now, self.agent_id, self.query, self.exclude,
                self.budget_tokens, self.candidates, self.counted_tokens, self.tokenizer)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Result):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"Result(mode={self.mode!r}, query={self.query!r}, agent_id={self.agent_id!r}, counts={self.counts!r}, "
                f"tokens={self.tokens!r}, candidates={self.candidates!r}, now={iso(self.now)!r})")

    @property
    def counts(self) -> dict[str, int]:
        if self._pending is not None:
            return self._pending.counts()
        return count_tiers(self.items)

    @property
    def returned(self) -> dict[str, list[int]]:
        """The ids of the items by tier name, most relevant first within a tier."""
        if self._pending is not None:
            return self._pending.by_tier()
        return returned_by_tier(self.items)

    @property
    def tokens(self) -> int:
        """Tokens of ``render()``: counted with the store's tokenizer under a budget, else estimated."""
        if self.counted_tokens is not None:
            return self.counted_tokens
        if self._pending is not None:
            return int(self._pending.tokens.sum())
        return sum(item.tokens for item in self.items)

    def by_tier(self, tier: Tier) -> list[Hit]:
        return [item for item in self.items if item.tier == tier]

    def tiers_of(self, ids: np.ndarray) -> np.ndarray:
        """The tier this result gives each of ``ids`` (sorted ascending), OUT for those it does not hold."""
        ids = np.asarray(ids, dtype=np.int64)
        tiers = np.full(len(ids), int(Tier.OUT), dtype=np.int8)
        for name, got in self.returned.items():
            rows = rows_in(ids, got)
            tiers[rows[rows >= 0]] = int(Tier.parse(name))
        return tiers

    def render(self) -> str:
        """The text an agent reads (see the module docstring)."""
        return render_items(self.mode, self.items, self.exclude, self.budget_tokens)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "query": self.query,
            "exclude": self.exclude,
            "agent_id": self.agent_id,
            "now": iso(self.now),
            "params": self.params.to_dict(),
            "budget_tokens": self.budget_tokens,
            "candidates": self.candidates,
            "counts": self.counts,
            "tokens": self.tokens,
            "tokens_counted": self.counted_tokens is not None,
            "tokenizer": self.tokenizer,
            "items": [item.to_dict() for item in self.items],
        }

    def to_frame(self) -> Any:
        """The items as a pandas DataFrame (one row per memory), for notebooks."""
        import pandas as pd

        return pd.DataFrame([item.to_dict() for item in self.items])

# -- the answers of other operations -----------------------------------------------------------


@dataclass
class Landscape:
    """Every visible memory scored for one view: what the visualiser draws."""

    state: Columns
    scored: scoring.Scored
    params: Params
    now: datetime
    query: str | None
    query_vector: np.ndarray | None
    candidate: np.ndarray  # bool: within the k nearest by S (all True without a query)
    all_vectors: np.ndarray  # the snapshot's whole unit matrix (not copied)
    rows: np.ndarray | slice  # rows of all_vectors that ``state`` holds
    exclude: tuple[str, ...] = ()

    def returned_tiers(self) -> np.ndarray:
        """Each memory's tier as a search returns it: its tier within the k candidates, OUT beyond them."""
        return np.where(self.candidate, self.scored.tier, int(Tier.OUT)).astype(np.int8)

    def vectors(self, local_rows: np.ndarray) -> np.ndarray:
        """Unit vectors of some of this landscape's rows."""
        if isinstance(self.rows, slice):
            return self.all_vectors[local_rows]
        return self.all_vectors[self.rows[local_rows]]


@dataclass
class IngestReport:
    added: list[int]
    skipped: int

    @property
    def ids(self) -> list[int]:
        return self.added


@dataclass(frozen=True)
class FloorChange:
    """What a promote or demote did to one memory's tier floor."""

    memory_id: int
    before: Tier
    after: Tier
    headline: str
    agent_id: str


@dataclass(frozen=True)
class StoreInfo:
    """What a store is: where, how many memories, which model, its map and demo queries."""

    path: str
    memories: int
    embedding_model: str | None
    embedding_dim: int | None
    embed_field: str
    layout_method: str | None
    layout_count: int
    layout_fitted_at: str | None
    demo_queries: list[dict[str, str]]
    reference_time: datetime | None


@dataclass(frozen=True)
class AgentOverview:
    """One agent: how many memories it wrote, and the profile its searches use."""

    agent_id: str
    memories: int
    profile: Params
    stored: bool  # False: no profile of its own, the defaults apply

    def to_dict(self) -> dict[str, Any]:
        return {"agent_id": self.agent_id, "memories": self.memories, "profile": self.profile.to_dict(), "stored": self.stored}


__all__ = ["Hit", "PendingHits", "Result", "Landscape", "IngestReport", "FloorChange", "StoreInfo", "AgentOverview", "render_items", "line", "year_line", "date_line", "header", "count_tiers", "returned_by_tier", "CONDENSED"]
