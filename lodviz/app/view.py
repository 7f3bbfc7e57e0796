"""The server's part of drawing the landscape: score the store, choose what to draw.

A ``ViewRequest`` is what the controls say (query, agent, parameters, now,
the moment of the store's history, the scene's filters and the settings to
compare with); ``compute_view`` turns it into a ``View``: every visible memory
scored through ``Memory.landscape`` (so the numbers are the library's), the
rows to draw, and their positions. Past ``draw_limit`` memories the view draws
the query's candidates in full plus a stable sample of the rest, and says so.
Filters hide points; they never change a tier, a count or a token.

With a query the scene shows what the agent receives: the same search an
agent makes (``Memory.search``, under the request's token budget), so the
scene's heights, the header's counts and tokens and the panel's result list
are one answer, its tokens counted once in the store's tokenizer. A memory the
budget lowered keeps a second, quieter mark at the tier it has without the
budget.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from lodviz import budget as budgeting
from lodviz.changes import TierChanges, tier_changes
from lodviz.history import Moment, returned_tiers
from lodviz.mapping import positions
from lodviz.memory import Landscape, Memory
from lodviz.params import Params
from lodviz.records import RecentUse
from lodviz.result import Result
from lodviz.scoring import Tier
from lodviz.tokens import count

#: Above this many memories the scene draws a sample (headless Chromium draws
#: WebGL in software: about 15k points keep a repaint well under a second).
DEFAULT_DRAW_LIMIT = 15_000
#: Height of each terrace's floor; a memory sits between its floor and the next
#: by where its score falls in its tier's band.
TERRACE_HEIGHT = 1.0
QUERY_NEIGHBOURS = 10
MAX_QUERY_LINES = 80
#: Changed-tier squares drawn at most; the rest are counted in the card.
MAX_MARKS = 60
#: Memories used this recently (wall clock) are ringed in the scene, with who used them.
RECENT_WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class SceneFilter:
    """Which memories the scene draws: by words of their text, kind, owning agent, creation date and tier."""

    text: str = ""
    kinds: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()
    start: datetime | None = None  # created at or after
    end: datetime | None = None  # created before
    tiers: tuple[int, ...] = ()  # the tier the scene shows; empty = every tier

    @property
    def active(self) -> bool:
        return bool(self.text.strip() or self.kinds or self.owners or self.start or self.end or self.tiers)

    def describe(self) -> str:
        parts = []
        if self.text.strip():
            parts.append(f"text “{self.text.strip()}”")
        if self.kinds:
            parts.append("kind " + " or ".join(self.kinds))
        if self.owners:
            parts.append("agent " + " or ".join(self.owners))
        last = f"{self.end - timedelta(days=1):%Y-%m-%d}" if self.end else ""
        if self.start and self.end:
            parts.append(f"created {self.start:%Y-%m-%d} to {last}")
        elif self.start:
            parts.append(f"created from {self.start:%Y-%m-%d}")
        elif self.end:
            parts.append(f"created until {last}")
        if self.tiers:
            parts.append("tier " + " or ".join(Tier(t).name for t in sorted(self.tiers, reverse=True)))
        return ", ".join(parts)

    def mask(self, mem: Memory, land: Landscape, tiers: np.ndarray | None = None) -> np.ndarray:
        """Rows of ``land`` that pass every filter; ``tiers``: each row's tier as the scene shows it."""
        state = land.state
        keep = np.ones(len(state), dtype=bool)
        if self.text.strip():
            keep &= np.isin(state.ids, np.asarray(mem.ids_matching(self.text), dtype=np.int64))
        if self.kinds:
            keep &= np.isin(state.kind, list(self.kinds))
        if self.owners:
            keep &= np.isin(state.agent_id, list(self.owners))
        if self.start is not None:
            keep &= state.created_at >= self.start.timestamp()
        if self.end is not None:
            keep &= state.created_at < self.end.timestamp()
        if self.tiers:
            keep &= np.isin(land.scored.tier if tiers is None else tiers, list(self.tiers))
        return keep


@dataclass(frozen=True)
class ViewRequest:
    params: Params
    now: datetime | None = None
    query: str | None = None
    exclude: tuple[str, ...] = ()
    agent_id: str | None = None
    moment: Moment | None = None  # the store as it was then (a replay, or the time slider); None = as it is
    scene_filter: SceneFilter = SceneFilter()
    reference: Params | None = None  # the settings the change list compares with
    budget_tokens: int | None = None  # what one search may return (the agent's budget, a replay's); None: the whole landscape

    @property
    def replaying(self) -> int | None:
        """The audit event being replayed, if any."""
        return self.moment.before_event if self.moment is not None else None

    @property
    def has_query(self) -> bool:
        return bool(self.query and self.query.strip())

    @property
    def scoring_params(self) -> Params:
        """Without a query there is no S: the view shows recency alone (L = D)."""
        return self.params if self.has_query else self.params.with_(alpha=0.0)

    @property
    def reference_params(self) -> Params | None:
        if self.reference is None:
            return None
        return self.reference if self.has_query else self.reference.with_(alpha=0.0)


@dataclass
class View:
    request: ViewRequest
    land: Landscape
    x: np.ndarray  # every visible row
    y: np.ndarray
    placeholder: np.ndarray  # rows whose position is not from the fitted layout yet
    drawn: np.ndarray  # row indices drawn in the scene
    query_xy: tuple[float, float] | None = None
    counts: dict[str, int] = field(default_factory=dict)
    tokens: int = 0
    conflict_pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))  # rows of open conflicts
    recent: dict[int, RecentUse] = field(default_factory=dict)  # drawn row -> its latest use within RECENT_WINDOW
    marked: dict[int, Tier] = field(default_factory=dict)  # drawn row -> the tier the replayed search returned it at
    changes: TierChanges | None = None  # against the request's reference settings
    changed: dict[int, str] = field(default_factory=dict)  # drawn row -> "up", "down", "in" or "out" (at most MAX_MARKS)
    changed_unmarked: int = 0  # drawn memories that changed tier beyond MAX_MARKS, counted, not marked
    filtered: int | None = None  # memories passing the scene's filters (None: no filter)
    drawable: int | None = None  # rows the draw limit allows, before any filter
    result: Result | None = None  # with a query: what the agent receives (the search, under the request's budget)
    delivered: np.ndarray | None = None  # each row's tier in ``result`` (OUT when not in it); None without a query

    @property
    def tier(self) -> np.ndarray:
        """Each row's tier as the scene shows it: what the agent receives, else (no query) the landscape's."""
        return self.delivered if self.delivered is not None else self.land.scored.tier

    @property
    def unbudgeted(self) -> np.ndarray:
        """Drawn rows the budget put below the tier they have without it (the scene's quieter second mark)."""
        if self.delivered is None or self.request.budget_tokens is None:
            return self.drawn[:0]
        before = self.land.returned_tiers()[self.drawn]
        return self.drawn[before > self.delivered[self.drawn]]

    @property
    def drawn_unfiltered(self) -> int:
        return self.drawable if self.drawable is not None else len(self.drawn)

    @property
    def total(self) -> int:
        return len(self.land.state)

    @property
    def sampled(self) -> bool:
        """Whether the draw limit (not a filter) left memories out."""
        return self.drawn_unfiltered < self.total

    def z(self, rows: np.ndarray | None = None, tiers: np.ndarray | None = None) -> np.ndarray:
        """Heights of ``rows`` at the tier the scene shows (or at ``tiers``, one per row)."""
        rows = self.drawn if rows is None else rows
        tier = self.tier[rows] if tiers is None else tiers
        return terrace_height(self.land.scored.score[rows], tier, self.land.params)


def terrace_height(score: np.ndarray, tier: np.ndarray, params: Params) -> np.ndarray:
    """z for a memory: its tier's floor plus where its score sits in the tier's band.

    A memory lifted by its tier floor (score below the band) sits on the floor.
    """
    lo = np.choose(tier.astype(np.int64), [0.0, params.theta3, params.theta2, params.theta1])
    hi = np.choose(tier.astype(np.int64), [params.theta3, params.theta2, params.theta1, 1.0])
    frac = np.clip((score - lo) / np.maximum(hi - lo, 1e-9), 0.0, 1.0)
    return tier * TERRACE_HEIGHT + 0.12 + 0.72 * frac


def _stable_sample(ids: np.ndarray, keep: int) -> np.ndarray:
    """A mask keeping about ``keep`` rows, chosen by a hash of the id.

    The same memories stay drawn as the store grows and as sliders move.
    """
    if keep >= len(ids):
        return np.ones(len(ids), dtype=bool)
    hashed = (ids.astype(np.uint64) * np.uint64(2654435761)) % np.uint64(2**32)
    return hashed < np.uint64(int(keep / len(ids) * 2**32))


def compute_view(
    mem: Memory, request: ViewRequest, draw_limit: int = DEFAULT_DRAW_LIMIT, recent_window: timedelta = RECENT_WINDOW,
    references: ReferenceAnswers | None = None,
) -> View:
    land = mem.landscape(
        request.query if request.has_query else None,
        agent_id=request.agent_id,
        params=request.scoring_params,
        now=request.now,
        exclude=list(request.exclude),
        as_of=request.moment,
    )
    state = land.state
    x, y, placeholder = positions(state.x, state.y, land.vectors)
    candidates = np.flatnonzero(land.candidate)
    if len(state) <= draw_limit:
        drawn = np.arange(len(state))
    elif not request.has_query:
        # Without a query every memory is a "candidate"; draw a sample of them all.
        drawn = np.flatnonzero(_stable_sample(state.ids, draw_limit))
    else:
        rest = _stable_sample(state.ids, max(draw_limit - len(candidates), 0)) & ~land.candidate
        drawn = np.union1d(candidates, np.flatnonzero(rest))
    result = agent_result(mem, request) if request.has_query else None
    delivered = result.tiers_of(state.ids) if result is not None else None
    filtered = None
    drawable = len(drawn)
    if request.scene_filter.active:
        passing = request.scene_filter.mask(mem, land, delivered)
        filtered = int(passing.sum())
        drawn = drawn[passing[drawn]]
    view = View(request, land, x, y, placeholder, drawn, filtered=filtered, drawable=drawable, result=result, delivered=delivered)
    if request.replaying is not None:
        view.marked = marked_rows(mem.audit_event(request.replaying), state.ids, drawn)
    reference = request.reference_params
    if reference is not None and reference != request.scoring_params:
        if view.delivered is not None:  # what the agent would receive under the reference settings, same budget
            answer = references.get(mem, request, reference) if references is not None else agent_result(mem, request, reference)
            view.changes = tier_changes(state.ids, answer.tiers_of(state.ids), view.delivered)
        else:
            before = mem.landscape(
                None, agent_id=request.agent_id, params=reference, now=request.now, exclude=list(request.exclude), as_of=request.moment,
            )
            view.changes = tier_changes(state.ids, before.returned_tiers(), land.returned_tiers())
        if len(view.changes):
            kinds = dict(zip(view.changes.ids.tolist(), view.changes.kind().tolist()))
            moved = [(int(r), kinds[int(i)]) for r, i in zip(drawn.tolist(), state.ids[drawn].tolist()) if int(i) in kinds]
            # A person reads a few dozen marks, not hundreds: the biggest moves, the most relevant first; the rest counted.
            step = dict(zip(view.changes.ids.tolist(), np.abs(view.changes.after.astype(int) - view.changes.before.astype(int)).tolist()))
            moved.sort(key=lambda rk: (-step[int(state.ids[rk[0]])], -float(land.scored.score[rk[0]])))
            view.changed = dict(moved[:MAX_MARKS])
            view.changed_unmarked = len(moved) - len(view.changed)
    tiers = view.tier[candidates]
    view.counts = {t.name: int((tiers == t).sum()) for t in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE, Tier.OUT)}
    if view.result is not None:  # the result's own counts: a memory found by one of its passages may lie beyond the k nearest
        view.counts |= view.result.counts
    view.tokens = agent_tokens(mem, view.result) if view.result is not None else result_tokens(state, candidates, tiers)
    view.conflict_pairs = conflict_rows(mem, request, state.ids)
    if request.moment is None:  # "used in the last hour" is about the present, not a past moment
        view.recent = recent_rows(mem, state.ids, drawn, datetime.now(UTC) - recent_window)
    if land.query_vector is not None and len(candidates):
        s = land.scored.similarity
        nearest = np.argsort(-s)[:QUERY_NEIGHBOURS]
        weights = np.maximum(s[nearest], 1e-6) ** 4
        view.query_xy = (
            float(np.average(x[nearest], weights=weights)),
            float(np.average(y[nearest], weights=weights)),
        )
    return view


class ReferenceAnswers:
    """What the agent receives under a view's reference settings, kept while the store stands.

    "What changed" compares every slider move with the same reference (the
    agent's saved profile, by default): asking the store again on each move was
    a second search a move. An answer is kept under everything that search
    depends on and the store's ``Memory.revision``, so any write, or a search's touch,
    asks again; a store that cannot tell (``revision`` None) is always asked.
    """

    def __init__(self, size: int = 4) -> None:
        self._size = size
        self._kept: OrderedDict[tuple[Any, ...], Result] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, mem: Memory, request: ViewRequest, params: Params) -> Result:
        revision = mem.revision()
        if revision is None:
            return agent_result(mem, request, params)
        key = (revision, request.query, request.agent_id, params, request.now, request.exclude, request.moment, request.budget_tokens)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                return kept
        result = agent_result(mem, request, params)
        with self._lock:
            self._kept[key] = result
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return result


def agent_result(mem: Memory, request: ViewRequest, params: Params | None = None) -> Result:
    """What the agent receives for the request's query: the search an agent makes, under the request's
    budget, touching nothing and writing no audit line (the app's own audit line is ``record_view``)."""
    return mem.search(
        request.query or "", agent_id=request.agent_id, params=params or request.scoring_params, now=request.now,
        exclude=list(request.exclude), touch=False, record=False, as_of=request.moment, budget_tokens=request.budget_tokens,
    )


def received_ids(view: View) -> dict | None:
    """What the panel needs of the scene's search, sent with the scene: its budget and the ids it
    returned, by tier. None when the scene shows no budgeted search (no query, or the whole landscape)."""
    if view.result is None or view.request.budget_tokens is None:
        return None
    return {"budget": view.request.budget_tokens,
            "returned": {name: np.asarray(got).tolist() for name, got in view.result.returned.items()}}


def received_tier(received: dict, memory_id: int) -> Tier:
    """The tier ``received`` (from ``received_ids``) gives ``memory_id``: OUT when the search left it out."""
    for name, got in received["returned"].items():
        if memory_id in got:
            return Tier.parse(name)
    return Tier.OUT


def agent_tokens(mem: Memory, result: Result) -> int:
    """The real tokens of the text the agent reads (``render()``), in the store's tokenizer.

    A budgeted search counted them already; a whole landscape is counted here.
    The header and the result list both read this number.
    """
    return result.counted_tokens if result.counted_tokens is not None else count(mem.token_counter, result.render())


def marked_rows(event, ids: np.ndarray, drawn: np.ndarray) -> dict[int, Tier]:
    """Drawn rows the replayed search returned, with the tier its audit line recorded.

    An audit line from before searches recorded their answer names only the
    memories it touched (FULL or SUMMARY): those are marked, as SUMMARY.
    """
    recorded = returned_tiers(event)
    if recorded is None:
        recorded = {int(i): Tier.SUMMARY for i in event.details.get("touched", [])}
    if not recorded or not len(drawn):
        return {}
    return {int(r): recorded[int(i)] for r, i in zip(drawn.tolist(), ids[drawn].tolist()) if int(i) in recorded}


def recent_rows(mem: Memory, ids: np.ndarray, drawn: np.ndarray, since: datetime) -> dict[int, RecentUse]:
    """Drawn rows used since ``since``, each with its latest use (who, when, how)."""
    uses = mem.recent_uses(since)
    if not uses or not len(drawn):
        return {}
    drawn_ids = ids[drawn]
    return {int(row): uses[int(i)] for row, i in zip(drawn.tolist(), drawn_ids.tolist()) if int(i) in uses}


def conflict_rows(mem: Memory, request: ViewRequest, ids: np.ndarray) -> np.ndarray:
    """(n, 2) rows of this view's memories that an open conflict links (both visible)."""
    pairs = [(c.memory_id, c.other_id) for c in mem.conflicts(agent_id=request.agent_id)]
    if not pairs or not len(ids):
        return np.zeros((0, 2), dtype=np.int64)
    flat = np.asarray(pairs, dtype=np.int64).ravel()
    rows = np.searchsorted(ids, flat)
    ok = (rows < len(ids)) & (ids[np.minimum(rows, len(ids) - 1)] == flat)
    both = ok.reshape(-1, 2).all(axis=1)
    return rows.reshape(-1, 2)[both]


def result_tokens(state, rows: np.ndarray, tiers: np.ndarray) -> int:
    """Token cost of ``rows`` returned at ``tiers`` (OUT costs nothing), from stored lengths."""
    costs = budgeting.tier_costs(state.len_text[rows], state.len_summary[rows], state.len_headline[rows])
    return budgeting.total_tokens(tiers, costs)


def query_lines(view: View) -> np.ndarray:
    """Rows the query camera draws lines to: its FULL candidates, best first."""
    land = view.land
    full = np.flatnonzero(land.candidate & (view.tier == Tier.FULL))
    return full[np.argsort(-land.scored.score[full])][:MAX_QUERY_LINES]


def replay_state(mem: Memory, event_id: int) -> dict:
    """What the page keeps of a replayed search (the ``AS_OF`` store): the event, and its own question and settings.

    Raises ``InvalidInput`` for an event that is not a search.
    """
    event, params = mem.past_search(event_id)
    d = event.details
    return {
        "event": int(event.id or 0),
        "now": d.get("now") or (event.at.isoformat() if event.at else None),
        "budget": d.get("budget_tokens"),
        "params": params.to_dict(),
        "query": event.query if event.action == "search" else "",
        "exclude": ", ".join(t for t in d.get("exclude") or [] if isinstance(t, str)),
        "agent": event.agent_id,
        "action": event.action,
        "actor": event.actor,
        "at": event.at.isoformat() if event.at else None,
        "recorded": d.get("counts") or {},
    }


def day_number(when: datetime) -> int:
    """Days since 1970-01-01 (UTC): the time slider's unit."""
    return int(when.timestamp() // 86_400)


def end_of_day(day: int) -> datetime:
    """The last second of a slider day: "what did the agent know on 3 March" includes all of 3 March."""
    return datetime.fromtimestamp((day + 1) * 86_400 - 1, tz=UTC)
