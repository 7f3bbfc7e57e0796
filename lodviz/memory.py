"""The LOD memory service: the one API every face calls.

``Memory`` wraps a store with the concept's operations: write (compress once,
embed, store), ``search`` (wide k, tiers, content at tier, promotion by use),
``expand``, ``promote``/``demote``, the non-semantic modes (``recent``,
``unseen``, ``sample``), per-agent profiles, the audit log, and the whole-store
rescoring the landscape draws (``landscape``).

It is a facade: it checks a request, holds the lock (every public method, one
mechanism: ``_serialised``), and hands the work to the part that does it, each
handed what it needs and none importing this module: ``writing`` (write),
``floors`` (tiers shown, floors, expand), ``drilling`` (a long memory's
passages: under a query, received, read around a phrase), ``profiles``, ``browsing`` (the
modes), ``conflict_review``, ``forgetting``, ``replay``, ``tuner``,
``warmup``, ``export``, ``models`` (embedder, compressor, token counters),
``scene`` (the landscape, explain), ``search`` (the pipeline), ``timeline``
(the store as it was), ``golden``, ``credentials``; ``arguments`` checks what
a caller sent.

Visibility: every call may name the agent it acts for. An agent sees its own
memories and shared ones; asking for anything else answers exactly as for a
memory that does not exist. ``agent_id=None`` is the auditor's view: all.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lodviz import audit, history, limits, scoring, tuning
from lodviz import budget as budgeting
from lodviz.access import Identity, TokenRecord
from lodviz.arguments import MAX_ID, as_id, positive
from lodviz.browsing import Browsing
from lodviz.changes import TierChanges, tier_changes
from lodviz.conflict_review import ConflictReview
from lodviz.credentials import Credentials
from lodviz.drilling import Drilling, Neighbourhood
from lodviz.errors import InvalidInput, InvalidParameters, MemoryNotFound
from lodviz.export import Export
from lodviz.floors import Floors
from lodviz.forgetting import Forgetting
from lodviz.golden import GoldenQueries
from lodviz.ingest.compress import Compressor
from lodviz.ingest.embed import Embedder
from lodviz.ingest.inputs import MemoryInput, parse_time
from lodviz.models import Models, embed_field_of
from lodviz.params import DEFAULT_BUDGET_ARG, PRESETS, AnswerSettings, BudgetArg, Params
from lodviz.profiles import Profiles
from lodviz.records import Label, MemoryId, RecentUse
from lodviz.replay import Replayer
from lodviz.result import (
    AgentOverview,
    FloorChange,
    Hit,
    IngestReport,
    Landscape,
    Result,
    StoreInfo,
)
from lodviz.scene import Scene
from lodviz.scoring import Tier
from lodviz.search import Pipeline
from lodviz.store.base import (
    AuditEvent,
    Columns,
    Conflict,
    Golden,
    MemoryRecord,
    Store,
)
from lodviz.timeline import Timeline
from lodviz.times import RowDatetimes, iso
from lodviz.tokens import TokenCounter
from lodviz.tuner import Tuner
from lodviz.warmup import Warmup
from lodviz.writing import Writer
from lodviz.yielding import Yielding

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The artifact the fitted map is kept as.
LAYOUT_MODEL = "layout_model"
#: How long ``close`` waits for a background warm-up to end once the store is closed under it.
CLOSE_WARM_TIMEOUT = 10.0


class Memory:
    """LOD memory over one store. Create with ``lodviz.open(path)``."""

    def __init__(
        self, store: Store, embedder: Embedder | None = None, compressor: Compressor | None = None, *, actor: str = "api",
        embed_field: str | None = None, tokenizer: str | TokenCounter | None = None, lexical_weight: float = 1.0,
        budget_policy: str = "readable-first", lock: AbstractContextManager[Any] | None = None,
    ) -> None:
        # With a lock, every public method holds it (``_serialised``): the app's
        # threads, the MCP workers and the API can then share one Memory.
        self._lock: AbstractContextManager[Any] = lock if lock is not None else nullcontext()
        self._lock_owner: int | None = None  # the thread inside a public method, holding ``_lock``
        self._store = store
        self.actor = actor
        self.embed_field = embed_field_of(store.meta(), embed_field)
        if isinstance(lexical_weight, bool) or not isinstance(lexical_weight, (int, float)) or not 0 <= lexical_weight <= 1:
            raise InvalidParameters(f"lexical_weight must be between 0 and 1, got {lexical_weight!r}.")
        if budget_policy not in budgeting.POLICIES:
            raise InvalidParameters(f"budget_policy must be one of {', '.join(budgeting.POLICIES)}, got {budget_policy!r}.")
        #: What shapes this store's answers beyond an agent's profile; a search passes it down.
        self.settings = AnswerSettings(float(lexical_weight), budget_policy)
        # The parts, each handed what it needs. A part that uses one of this memory's public methods
        # gets a lambda that looks the method up at each call, as ``self.method(...)`` here did: a
        # method replaced on the instance is the one called, and it holds the lock as any call does.
        acting = lambda: self.actor
        get = lambda memory_id, agent_id=None: self.get(memory_id, agent_id=agent_id)
        profile = lambda agent_id: self.profile(agent_id)
        self._models = Models(store, embedder, compressor, tokenizer, self.embed_field)
        self._timeline = Timeline(store)
        self._credentials = Credentials(store)
        self._golden = GoldenQueries(store, get)
        self._profiles = Profiles(store, acting)
        # Result items' datetimes by row: last retrieval, creation (``RowDatetimes``).
        self._row_times = (RowDatetimes(), RowDatetimes())
        # A search's stages (``lodviz.search``), handed what they need from here.
        self._pipeline = Pipeline(store, self.embed_query, lambda: self.token_counter, self._holding, self._row_times, acting)
        self._scene = Scene(store, self._timeline, self._pipeline.candidates, self.embed_query)
        self._yielding = Yielding()  # a write's compression and embedding give the cores to searches first
        self._writer = Writer(store, self._models, get, acting, hold=self._holding, slow=self._yielding.run)
        explain = lambda memory_id, query, agent_id, params, now: self.explain(memory_id, query, agent_id=agent_id, params=params, now=now)
        self._floors = Floors(store, get, explain, self._now, acting)
        self._drilling = Drilling(store, get, self.embed_query, lambda: self.settings.lexical_weight,
                                  lambda event_id: self.audit_event(event_id), self._now, acting)
        self._browsing = Browsing(store, self._pipeline.delivery, profile, self._now, lambda: self.settings.budget_policy)
        self._conflicts = ConflictReview(store, get, acting)
        self._forgetting = Forgetting(store, get, self._pipeline.forget, acting)
        self._replayer = Replayer(self._timeline, self._pipeline, profile, lambda *a, **kw: self.landscape(*a, **kw),
                                  lambda: self.settings, self._now)
        self._tuner = Tuner(store, lambda agent_id: self.golden(agent_id), profile, lambda query, **kw: self.preview(query, **kw), acting)
        self._export = Export(store, self.embed_field, lambda: self.profiles(), lambda **filters: self.audit(**filters))
        # One warm-up per Memory, whoever asks first (server, app, a caller); it takes the lock step by step.
        self._warmup = Warmup(store, self._holding, self._pipeline.candidates, self._row_times, lambda: self.profile(None),
                              lambda: self.now(), lambda: self.settings.lexical_weight, lambda: self.embedder)

    # -- parts ----------------------------------------------------------------

    @property
    def lexical_weight(self) -> float:
        return self.settings.lexical_weight

    @property
    def budget_policy(self) -> str:
        return self.settings.budget_policy

    @property
    def embedder(self) -> Embedder:
        return self._models.embedder

    @property
    def compressor(self) -> Compressor:
        return self._models.compressor

    @property
    def token_counter(self) -> TokenCounter:
        """What budgets count with: the embedding model's tokenizer unless configured otherwise."""
        return self._models.token_counter

    def embed_query(self, text: str) -> np.ndarray:
        """The query's embedding (cached: the app rescores the same query often)."""
        return self._models.embed_query(text)

    # -- the store, as the faces see it ---------------------------------------------------

    @property
    def path(self) -> str:
        """Where the store is (a file path, or ":memory:")."""
        return self._store.path

    def info(self) -> StoreInfo:
        """The store's facts: size, embedding model, its map, demo queries, reference time."""
        return self._export.info()

    def revision(self) -> int | None:
        """A number that changes after any change this process made to the store (a write, a search's
        touch), for keeping answers derived from it; None when the store cannot tell (PostgreSQL,
        which other processes may write)."""
        return self._store.version()

    def columns(self, *, as_of: history.Moment | datetime | str | None = None) -> Columns:
        """The numeric columns of every memory (forgotten ones included, flagged), read-only by agreement.

        ``as_of``: with the usage and floors of a past moment (memories not yet written flagged forgotten).
        """
        moment = self._timeline.moment(as_of)
        return self._store.state() if moment is None else self._timeline.snapshot(moment)[0]

    def snapshot(self) -> tuple[Columns, np.ndarray]:
        """``columns()`` and the unit embedding matrix of the same moment, row for row."""
        return self._store.snapshot()

    def warm(self, *, background: bool = False) -> None:
        """Load what searches read now, ahead of the first search (in a thread: ``background``); once per Memory (``lodviz.warmup``)."""
        self._warmup.start(background)

    def wait_warm(self, timeout: float | None = None) -> bool:
        """Wait for a background ``warm``, its thread's exit included; True when none is running any more."""
        return self._warmup.wait(timeout)

    def set_positions(self, ids: Sequence[int] | np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        """Store memories' places on the landscape's map."""
        self._store.set_layout(ids, x, y)

    def layout_model(self) -> bytes | None:
        """The fitted map (a pickled UMAP model), if one is stored."""
        return self._store.artifact(LAYOUT_MODEL)

    def set_layout_model(self, model: bytes | None, *, method: str, count: int) -> None:
        """Keep the fitted map with the store, and how it was made."""
        if model is not None:
            self._store.set_artifact(LAYOUT_MODEL, model)
        self._store.set_meta(
            {"layout_method": method, "layout_count": str(count), "layout_fitted_at": datetime.now(UTC).isoformat()}
        )

    def set_demo_queries(self, queries: Sequence[dict[str, str]]) -> None:
        """The queries a store suggests for a demo (``[{"agent_id": ..., "query": ...}]``)."""
        self._store.set_meta({"demo_queries": json.dumps(list(queries))})

    def export_records(self, agent_id: str | None = None, *, batch: int = 2000) -> Iterator[MemoryRecord]:
        """Every memory the agent may see (all for None), in id order, with usage and floor."""
        return self._export.records(agent_id, batch)

    def export_frame(self, agent_id: str | None = None) -> pd.DataFrame:
        """``export_records`` as a pandas DataFrame, one row per memory."""
        return self._export.frame(self.export_records(agent_id))

    def agents_overview(self) -> list[AgentOverview]:
        """Every agent with memories or a profile: its memory count and the profile its searches use."""
        return self._export.agents()

    def audit_frame(self, **filters: Any) -> pd.DataFrame:
        """``audit(**filters)`` as a pandas DataFrame, one row per event, newest first."""
        return self._export.audit_frame(filters)

    # -- time -----------------------------------------------------------------

    def now(self) -> datetime:
        """The store's reference time if it records one, else the current UTC time."""
        reference = self._store.meta().get("reference_time")
        if reference:
            parsed = parse_time(reference, "reference_time")
            if parsed is not None:
                return parsed
        return datetime.now(UTC)

    def set_reference_time(self, when: datetime | str | None) -> None:
        """Pin "now" for this store (the sample store does); None unpins it."""
        value = "" if when is None else iso(parse_time(when, "reference time"))
        self._store.set_meta({"reference_time": value or ""})

    def _now(self, now: datetime | str | None) -> datetime:
        if now is None:
            return self.now()
        parsed = parse_time(now, "now")
        assert parsed is not None
        return parsed

    # -- writing (lodviz.writing) -----------------------------------------------------

    def add(self, text: str, **fields: Any) -> int:
        """Store one memory; returns its id (the existing id if it is a duplicate)."""
        return self._writer.add(text, fields)

    def write(self, text: str, *, actor: str | None = None, **fields: Any) -> tuple[MemoryRecord, bool]:
        """Store one memory and return it, with whether it was already stored (a duplicate: audited all the same)."""
        return self._writer.write(text, actor, fields)

    def add_many(
        self, records: Iterable[MemoryInput | dict[str, Any]], *, batch_size: int = 256, progress: Callable[[int], None] | None = None,
        actor: str | None = None,
    ) -> IngestReport:
        """Store many memories, one transaction per batch, skipping duplicates; all validated before any is written."""
        return self._writer.add_many(records, batch_size=batch_size, progress=progress, actor=actor)

    # -- profiles (lodviz.profiles) -----------------------------------------------------

    def profile(self, agent_id: str | None) -> Params:
        """The agent's stored profile, or the defaults."""
        return self._profiles.get(agent_id)

    def profiles(self) -> dict[str, Params]:
        return self._profiles.all()

    def set_profile(
        self, agent_id: str, params: Params | str | None = None, *, actor: str | None = None, reason: str | None = None, **changes: Any
    ) -> Params:
        """Store an agent's profile: a ``Params``, a preset name, or changes to the current one."""
        return self._profiles.set(agent_id, params, actor, reason, changes)

    # -- scoring the whole store -------------------------------------------------

    def landscape(
        self, query: str | None = None, *, agent_id: str | None = None, params: Params | None = None, now: datetime | str | None = None,
        exclude: Sequence[str] = (), exclude_weight: float = 1.0, as_of: history.Moment | datetime | str | None = None,
        settings: AnswerSettings | None = None,
    ) -> Landscape:
        """Score every memory the agent may see, without touching any.

        This is the visualiser's view: the tiers a search with these settings
        would give, for the whole store at once. With no query, S is 0 and the
        tiers follow recency alone. S of a query's k candidates carries their
        lexical evidence, as in a search; beyond them S is the cosine alone.

        ``as_of`` shows the store as it was at a past moment (a time, or a
        ``history.Moment``): only the memories that existed then, with their
        usage and floors of then, rebuilt from the audit log. ``now`` defaults
        to that moment.
        """
        params = params or self.profile(agent_id)
        bounds = limits.current()
        if query:
            bounds.check_query(query.strip())
        bounds.check_k(params.k)
        bounds.check_exclude([t for t in exclude if isinstance(t, str) and t.strip()])
        moment = self._timeline.moment(as_of)
        when = self._now(now if now is not None or moment is None or moment.at is None else moment.at)
        return self._scene.landscape(query, agent_id, params, when, moment, exclude, exclude_weight, settings or self.settings)

    # -- the store as it was (lodviz.history, lodviz.replay) ------------------------------

    def history_span(self) -> tuple[datetime, datetime] | None:
        """The store's timeline: from its oldest memory to its "now" (None for an empty store)."""
        state = self._store.state()
        if not len(state):
            return None
        return datetime.fromtimestamp(float(state.created_at.min()), tz=UTC), self.now()

    def audit_event(self, event_id: int) -> AuditEvent:
        """One event of the audit log by its id."""
        return self._timeline.event(event_id)

    def compare(
        self, before: Params, after: Params, query: str | None = None, *, agent_id: str | None = None,
        now: datetime | str | None = None, exclude: Sequence[str] = (), as_of: history.Moment | datetime | str | None = None,
        budget_tokens: BudgetArg = None,
    ) -> TierChanges:
        """The memories a move from settings ``before`` to ``after`` changes the tier of (up, down, in, out).

        Tiers are those a search returns (OUT beyond the k candidates), for
        the same query, agent, now and moment; nothing is touched or audited.
        With a query and ``budget_tokens``, those a search returns within that
        budget (what the agent receives).
        """
        a = self.landscape(query, agent_id=agent_id, params=before, now=now, exclude=exclude, as_of=as_of)
        if query and budget_tokens is not None:
            def received(params: Params) -> np.ndarray:
                found = self.search(query, agent_id=agent_id, params=params, now=now if now is not None else a.now, exclude=exclude,
                                    budget_tokens=budget_tokens, touch=False, record=False, as_of=as_of)
                return found.tiers_of(a.state.ids)
            return tier_changes(a.state.ids, received(before), received(after))
        b = self.landscape(query, agent_id=agent_id, params=after, now=now, exclude=exclude, as_of=as_of)
        return tier_changes(a.state.ids, a.returned_tiers(), b.returned_tiers())

    def past_search(self, event_id: int) -> tuple[AuditEvent, Params]:
        """A search (or browse) on record and the settings it used; ``InvalidInput`` for any other event."""
        return self._replayer.past_search(event_id)

    def replay(self, event_id: int) -> history.Replay:
        """A past search as its agent saw it: the store as it was just before it, the same question again (``lodviz.replay``)."""
        return self._replayer.replay(event_id)

    def record_view(self, land: Landscape, *, agent_id: str | None = None, actor: str | None = None) -> None:
        """Audit a landscape looked at with a query (the app's searches) as a search that touched nothing."""
        self._scene.record_view(land, agent_id, actor or agent_id or self.actor)

    # -- search -------------------------------------------------------------------

    def search(
        self, query: str, *, agent_id: str | None = None, alpha: float | None = None, lam: float | None = None,
        theta1: float | None = None, theta2: float | None = None, theta3: float | None = None, k: int | None = None,
        params: Params | None = None, now: datetime | str | None = None, exclude: Sequence[str] | None = None,
        exclude_weight: float = 1.0, budget_tokens: BudgetArg = None, touch: bool = True, actor: str | None = None,
        record: bool = True, as_of: history.Moment | datetime | str | None = None,
    ) -> Result:
        """The LOD landscape for ``query``: the k nearest memories, each at its tier.

        Memories returned FULL or SUMMARY count as retrieved (their
        last_retrieved_at becomes ``now``, their count grows), in the same
        transaction that writes the search to the audit log; pass
        ``touch=False`` to look without leaving a trace on the memories, and
        also ``record=False`` to leave no audit line either (a read-only demo).

        ``as_of`` asks the store as it was at a past moment (``now`` defaults
        to it): a look at the past, so it counts nothing and writes no audit line.

        ``budget_tokens``: the real tokens ``render()`` may take (None: the
        whole landscape; "default": the agent's profile's budget, as an agent
        that names none gets through MCP).
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("the query is empty.")
        query = query.strip()
        bounds = limits.current()
        bounds.check_query(query)
        base = params or self.profile(agent_id)
        params = base.with_(alpha=alpha, lam=lam, theta1=theta1, theta2=theta2, theta3=theta3, k=k)
        bounds.check_k(params.k)
        budget_tokens = self._budget(budget_tokens, agent_id, params)
        exclude = [t.strip() for t in (exclude or []) if isinstance(t, str) and t.strip()]
        bounds.check_exclude(exclude)
        moment = self._timeline.moment(as_of)
        if moment is not None:
            when = self._now(now if now is not None or moment.at is None else moment.at)
            return self._pipeline.run(
                self._timeline.snapshot(moment), query, params, when, agent_id, exclude, exclude_weight,
                budget_tokens=budget_tokens, touch=False, actor=actor, record=False, past=True, settings=self.settings,
            )
        return self._pipeline.run(
            self._store.snapshot(), query, params, self._now(now), agent_id, exclude, exclude_weight,
            budget_tokens=budget_tokens, touch=touch, actor=actor, record=record, settings=self.settings,
        )

    def _budget(self, budget_tokens: BudgetArg, agent_id: str | None, params: Params | None = None) -> int | None:
        """``budget_tokens`` with "default" made the agent's profile's budget."""
        if isinstance(budget_tokens, str):
            if budget_tokens != DEFAULT_BUDGET_ARG:
                raise InvalidParameters(f'budget_tokens must be a whole number, "default" or None, got {budget_tokens!r}.')
            return (params or self.profile(agent_id)).default_budget
        return budget_tokens

    def preview(
        self, query: str, *, agent_id: str | None = None, params: Params | None = None, now: datetime | str | None = None,
        budget_tokens: int | None = None,
    ) -> Result:
        """What ``search`` would return, leaving no trace: no retrieval counted, no audit line.

        For tuning, which asks the same questions under many settings and
        records itself once (``lodviz.tuning``). Agents and people search.
        """
        return self.search(query, agent_id=agent_id, params=params, now=now, budget_tokens=budget_tokens, touch=False, record=False)

    # -- conflicts and forgetting (lodviz.conflict_review, lodviz.forgetting) ---------------

    def conflicts(
        self, memory_id: MemoryId | None = None, *, status: Sequence[str] | None = ("open",), agent_id: str | None = None,
        limit: int | None = None, either: bool = False,
    ) -> list[Conflict]:
        """Conflict candidates (of one memory, or all), newest first; an agent sees those between memories it can see.

        ``either``: those where the agent can see at least one of the two, as
        an auditor reviewing that agent needs them (the app's panel).
        """
        return self._conflicts.of(memory_id, status, agent_id, limit, either)

    def resolve_conflict(
        self, memory_id: MemoryId, other_id: MemoryId, *, superseded: MemoryId | None = None, reason: str | None = None,
        actor: str | None = None,
    ) -> Conflict:
        """An auditor's decision on a conflict: both stand (``superseded`` None), or one is superseded by the other.

        Audited ("resolve"); the superseded memory stays in the store and comes
        back marked "[superseded by #id]", with the memory that replaces it.
        """
        return self._conflicts.resolve(memory_id, other_id, superseded, reason, actor)

    def redetect_conflicts(self, *, actor: str | None = None) -> tuple[int, int]:
        """Find the open conflict candidates again with today's detector, over the whole store, as if each
        memory had been written in order of creation; decided conflicts stay. Audited ("redetect").
        Returns (open candidates dropped, candidates found)."""
        return self._conflicts.redetect(actor)

    def forget(self, memory_id: MemoryId, *, reason: str | None = None, agent_id: str | None = None, actor: str | None = None) -> None:
        """Erase a memory for good: its texts and vector go, its id, usage and audit history stay.

        For erasure requests; everything else fades instead. Nobody sees a
        forgotten memory again; its open conflicts close as "forgotten".
        """
        self._forgetting.forget(memory_id, reason, agent_id, actor)

    # -- golden queries and tuning ------------------------------------------------------

    def golden(self, agent_id: str | None = None) -> list[Golden]:
        """The golden queries on record (of one agent, or all)."""
        return self._golden.all(agent_id)

    def add_golden(
        self, query: str, needs: Sequence[int], *, agent_id: str | None = None, note: str | None = None, actor: str | None = None
    ) -> int:
        """Record a golden query: ``query`` as ``agent_id`` asks it, and the memories a good answer needs (audited)."""
        return self._golden.add(query, needs, agent_id, note, actor or self.actor)

    def import_golden(self, path: str | Path, *, actor: str | None = None) -> list[int]:
        """Golden queries from a JSON Lines file (``lodviz.tuning`` documents it), all or nothing."""
        return self._golden.import_file(path, actor or self.actor)

    def tune(
        self, agent_id: str | None = None, *, budget_tokens: int = 2000, alphas: Sequence[float] | None = None,
        lambdas: Sequence[float] | None = None, actor: str | None = None,
    ) -> tuning.Sweep:
        """Sweep alpha and lambda over the agent's golden queries (``lodviz.tuner``); one audit line.

        Raises ``InvalidInput`` when there are no golden queries to measure against.
        """
        return self._tuner.tune(agent_id, budget_tokens, alphas, lambdas, actor)

    # -- one memory ---------------------------------------------------------------

    def labels(self, ids: Sequence[int]) -> dict[int, Label]:
        """Headline, source and metadata of each memory (the landscape's hover), without counting a retrieval."""
        ids = [int(i) for i in ids]
        heads = self._store.contents(ids, [int(Tier.HEADLINE)] * len(ids))
        meta = self._store.metadata(ids)
        return {i: Label(i, heads[i][0], heads[i][1], meta.get(i) or {}) for i in ids}

    def ids_matching(self, text: str, *, limit: int = 100_000) -> list[int]:
        """Ids of memories whose full text holds every word of ``text`` (case-insensitive), newest first."""
        words = [w for w in str(text).split() if w]
        return self._store.ids_with_words(words, limit) if words else []

    def headlines(self, ids: Sequence[int]) -> dict[int, str]:
        """Each memory's headline, without counting a retrieval (the landscape's labels)."""
        ids = [int(i) for i in ids]
        return {i: text for i, (text, _) in self._store.contents(ids, [int(Tier.HEADLINE)] * len(ids)).items()}

    def get(self, memory_id: MemoryId, *, agent_id: str | None = None) -> MemoryRecord:
        """One memory as stored, without counting a retrieval."""
        memory_id = as_id(memory_id)
        record = self._store.get([memory_id]).get(memory_id)
        if record is None or not record.visible_to(agent_id):
            raise MemoryNotFound(memory_id)
        return record

    def find(self, text: str, *, agent_id: str | None = None, limit: int = 10) -> list[MemoryRecord]:
        """Memories whose full text contains every word of ``text`` (case-insensitive), newest
        first: to open a memory one remembers the words of. Not a retrieval; nothing is counted."""
        words = [w for w in text.split() if w]
        if not words:
            raise InvalidInput("give some words to look for.")
        limit = positive(limit, "limit")
        state = self._store.state()
        candidates = self._store.ids_with_words(words, limit * 4 + 50, within=state)
        seen = state.visible_to(agent_id)[state.rows_of(candidates)] if candidates else []
        found = [i for i, ok in zip(candidates, seen) if ok][:limit]
        records = self._store.get(found)
        return [records[i] for i in found if i in records]

    # -- tiers shown and floors (lodviz.floors) ---------------------------------------

    def expand(
        self, memory_id: MemoryId, *, agent_id: str | None = None, now: datetime | str | None = None, actor: str | None = None
    ) -> MemoryRecord:
        """The full content of one memory; counts as a retrieval."""
        return self._floors.expand(memory_id, agent_id, now, actor)

    def expand_passage(
        self, memory_id: MemoryId, around: str, *, width: int = 1, agent_id: str | None = None, now: datetime | str | None = None,
        actor: str | None = None, touch: bool = True,
    ) -> Neighbourhood:
        """The passage holding the phrase ``around`` (else the one nearest it) and ``width`` passages on each side,
        verbatim with "…" gaps; counts as a retrieval as ``expand`` does (not with ``touch=False``). ``lodviz.drilling``."""
        return self._drilling.neighbourhood(memory_id, around, width, agent_id, now, actor, touch)

    def passages(
        self, memory_id: MemoryId, *, query: str | None = None, agent_id: str | None = None, event_id: int | None = None
    ) -> pd.DataFrame:
        """A long memory's passages: how near each is to ``query`` and which the agent received in its latest use of the
        memory (or use ``event_id``), and why; empty for a short memory. Nothing is counted. ``lodviz.drilling``."""
        return self._drilling.passages(memory_id, query, agent_id, event_id)

    def promote(
        self, memory_id: MemoryId, *, reason: str | None = None, agent_id: str | None = None, actor: str | None = None,
        to: Tier | str | int | None = None, query: str | None = None, params: Params | None = None, now: datetime | str | None = None,
    ) -> Tier:
        """Force a memory up a tier for good; returns its new tier floor.

        The floor becomes at least one tier above where the memory comes back
        now for this agent (``current_tier``), FULL at most, and above its old
        floor: so the first promote of a headline makes it a summary. ``to``
        sets the floor to a tier directly.
        """
        return self.move_floor(
            memory_id, +1, to=to, reason=reason, agent_id=agent_id, actor=actor, query=query, params=params, now=now
        ).after

    def demote(
        self, memory_id: MemoryId, *, reason: str | None = None, agent_id: str | None = None, actor: str | None = None,
        to: Tier | str | int | None = None,
    ) -> Tier:
        """Lower the memory's tier floor by one tier (or to ``to``); returns the new floor."""
        return self.move_floor(memory_id, -1, to=to, reason=reason, agent_id=agent_id, actor=actor).after

    def current_tier(
        self, memory_id: MemoryId, *, agent_id: str | None = None, query: str | None = None, params: Params | None = None,
        now: datetime | str | None = None,
    ) -> Tier:
        """The tier at which this agent was shown a memory, or at which it comes back now (``Floors.current_tier``)."""
        return self._floors.current_tier(memory_id, agent_id, query, params, now)

    def move_floor(
        self, memory_id: MemoryId, step: int, *, to: Tier | str | int | None = None, reason: str | None = None,
        agent_id: str | None = None, actor: str | None = None, query: str | None = None, params: Params | None = None,
        now: datetime | str | None = None,
    ) -> FloorChange:
        """Promote (``step`` +1) or demote (-1) one memory's tier floor, audited; the one floor rule."""
        return self._floors.move(memory_id, step, to=to, reason=reason, agent_id=agent_id, actor=actor, query=query, params=params, now=now)

    def explain(
        self, memory_id: MemoryId, query: str | None = None, *, agent_id: str | None = None, params: Params | None = None,
        now: datetime | str | None = None, exclude: Sequence[str] = (), exclude_weight: float = 1.0,
        as_of: history.Moment | datetime | str | None = None,
    ) -> scoring.Placement:
        """Why this memory sits at its tier for this query and these settings (at a past moment: ``as_of``)."""
        record = self.get(memory_id, agent_id=agent_id)
        moment = self._timeline.moment(as_of)
        when = self._now(now if now is not None or moment is None or moment.at is None else moment.at)
        return self._scene.explain(record, query, agent_id, params or self.profile(agent_id), when, moment, exclude, exclude_weight,
                                   self.settings)

    # -- non-semantic modes (lodviz.browsing) ------------------------------------------

    def recent(
        self, since: datetime | str, until: datetime | str | None = None, *, agent_id: str | None = None, limit: int | None = None,
        budget_tokens: BudgetArg = None, now: datetime | str | None = None, touch: bool = True, record: bool = True,
        actor: str | None = None,
    ) -> Result:
        """Everything created in [since, until], newest first, tiered by retrieval frequency alone (no query)."""
        return self._browsing.recent(since, until, agent_id, limit, now, self._budget(budget_tokens, agent_id), touch, record, actor)

    def unseen(
        self, *, agent_id: str | None = None, limit: int = 50, budget_tokens: BudgetArg = None, now: datetime | str | None = None,
        touch: bool = True, record: bool = True, actor: str | None = None,
    ) -> Result:
        """Memories never retrieved (r = 0), newest first, tiered by recency (L = D)."""
        return self._browsing.unseen(agent_id, limit, now, self._budget(budget_tokens, agent_id), touch, record, actor)

    def sample(
        self, n: int = 10, *, agent_id: str | None = None, seed: int | None = None, budget_tokens: BudgetArg = None,
        now: datetime | str | None = None, touch: bool = True, record: bool = True, actor: str | None = None,
    ) -> Result:
        """``n`` memories drawn at random, weighted towards the lowest D; they come back as summaries, so count as used."""
        return self._browsing.sample(n, agent_id, seed, now, self._budget(budget_tokens, agent_id), touch, record, actor)

    # -- audit and facts --------------------------------------------------------------

    def audit(self, **filters: Any) -> list[AuditEvent]:
        """Audit events, newest first, filtered as the store's ``audit`` takes them."""
        if filters.get("limit") is not None and positive(filters["limit"], "limit") > MAX_ID:
            raise InvalidInput(f"limit must be at most {MAX_ID:,}.")
        return self._store.audit(**filters)

    def recent_uses(self, since: datetime, *, limit_events: int = 100) -> dict[int, RecentUse]:
        """The memories used since ``since`` (wall clock), each with its latest use.

        Read from the audit log: every search that touched memories and every
        expand is an event there, with who and when. At most ``limit_events``
        events are read, newest first, so a busy store costs one bounded query.
        """
        events = self._store.audit(actions=list(audit.USING), since=since, limit=limit_events)
        latest: dict[int, RecentUse] = {}
        for event in events:  # newest first: the first use seen of a memory is its latest
            used = [event.memory_id] if event.action == "expand" else event.details.get("touched", [])
            for memory_id in used:
                if memory_id is None or int(memory_id) in latest or event.at is None:
                    continue
                latest[int(memory_id)] = RecentUse(int(memory_id), event.agent_id, event.actor, event.at, event.action, event.query)
        return latest

    def last_event_id(self) -> int:
        """The id of the newest audit event (0 for none): every change to the store writes one."""
        latest = self._store.audit(limit=1)
        return int(latest[0].id or 0) if latest else 0

    # -- tokens (lodviz.access) --------------------------------------------------------

    def create_token(self, name: str, role: str, *, agent_id: str | None = None, actor: str | None = None) -> tuple[TokenRecord, str]:
        """A new token for identity ``name`` with ``role``: its record, and the token (shown once, never kept)."""
        return self._credentials.create(name, role, agent_id, actor or self.actor)

    def tokens(self) -> list[TokenRecord]:
        """Every token's record (live and revoked), oldest first; no token is ever shown again."""
        return self._credentials.all()

    def revoke_token(self, token_id: str, *, actor: str | None = None) -> TokenRecord:
        """Revoke a token for good; its identity is refused from the next request on."""
        return self._credentials.revoke(token_id, actor or self.actor)

    def authenticate(self, token: str | None) -> Identity:
        """The identity a token proves (``Credentials.authenticate``: the same work whatever the token)."""
        return self._credentials.authenticate(token)

    def record_event(self, event: AuditEvent) -> None:
        self._store.record(event)

    # -- the vector index ---------------------------------------------------------------

    def vector_index(self) -> dict[str, Any]:
        """What a search finds a query's nearest memories with, as ``{"index": ..., "memories": n, ...}``.

        ``"exact"`` scans every memory. ``"ivf"`` (``lodviz.ivf``) reads the groups nearest the query;
        for the index this process holds, ``covers`` (rows in it; later ones are scanned exactly),
        ``lists``, ``nprobe`` (groups read per search), ``recall`` (of the exact 1,000 nearest,
        measured when it was built) and ``bytes`` (its memory). ``held`` is False while this process
        has not made it yet (a store under ``from`` memories never does); the facts are then those
        the file beside the store keeps, if any (``kept``).
        """
        kind = self._store.vector_index()
        facts: dict[str, Any] = {"index": kind, "memories": self._store.count()}
        held = self._store.held_index()
        if kind == "ivf":
            facts["from"] = int(getattr(self._store, "INDEX_FROM", 0))
            facts["held"] = held is not None
            facts["matrix"] = str(getattr(self._store, "matrix", "float32"))  # the index covers float32 only
        if held is not None:
            facts.update(covers=held.covers, lists=held.nlist, nprobe=held.nprobe, recall=held.recall, bytes=held.nbytes)
        elif kind == "ivf":
            kept = self._store.kept_index()
            facts["kept"] = kept is not None
            facts.update(kept or {})
        return facts

    def set_vector_index(self, kind: str, *, rebuild: bool = False) -> dict[str, Any]:
        """Search with ``kind`` from now on, in every process that opens this store; ``vector_index()`` after.

        ``"ivf"`` is made now (read from the file beside the store when that matches, else built:
        ~40 s for 1M memories here), ``rebuild`` builds it again whatever is kept; ``"exact"`` drops it.
        A kind the store's backend lacks is refused (``InvalidParameters``).
        """
        self._store.set_vector_index(kind)
        started = time.perf_counter()
        made = self._store.build_index(force=rebuild)
        self._pipeline.candidates.forget()  # candidate sets found the other way
        facts = self.vector_index()
        if made is not None:
            facts["seconds"] = round(time.perf_counter() - started, 2)
        return facts

    def agents(self) -> list[str]:
        """Every agent that wrote a memory, sorted."""
        state = self._store.state()
        return sorted(set(state.agent_id[~state.forgotten].astype(str).tolist()))

    @contextlib.contextmanager
    def _holding(self) -> Iterator[None]:
        """Hold this memory's lock for the current thread, once: a thread that holds it goes on."""
        me = threading.get_ident()
        if self._lock_owner == me:
            yield
            return
        with self._lock:
            self._lock_owner = me
            try:
                yield
            finally:
                self._lock_owner = None

    def close(self) -> None:
        self._store.close()  # a background warm in progress holds the store's lock for one step; close waits for it
        # Its next step then fails on the closed store: wait for the thread to end, so that a process
        # exiting right after never finalises with a thread inside DuckDB or BLAS.
        self._warmup.wait(CLOSE_WARM_TIMEOUT)
        self._yielding.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self._store.count()


def _serialised(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` run holding the memory's lock, unless this thread holds it already.

    Public methods call public methods (``promote`` calls ``move_floor``): taking the
    lock again would hang on a plain ``threading.Lock``, so the owner is kept.
    """
    @functools.wraps(method)
    def call(self: Memory, *args: Any, **kwargs: Any) -> Any:
        with self._holding():
            return method(self, *args, **kwargs)

    return call


# One mechanism for every public operation (and the lazily loaded parts), so
# none can be forgotten: an operation is several store calls plus caches, and
# two threads must not interleave them.
for _name, _member in list(vars(Memory).items()):
    # A warm-up takes the lock step by step and waiting must not hold it; a write holds it for its
    # store part only (``lodviz.writing``), not while it compresses and embeds.
    if _name.startswith("_") or _name in ("warm", "wait_warm", "add", "write", "add_many"):
        continue
    if isinstance(_member, property) and _member.fget is not None:
        setattr(Memory, _name, property(_serialised(_member.fget), _member.fset, _member.fdel, _member.__doc__))
    elif callable(_member) and not isinstance(_member, (staticmethod, classmethod, type)):
        setattr(Memory, _name, _serialised(_member))


__all__ = ["Memory", "Result", "Hit", "Landscape", "IngestReport", "FloorChange", "PRESETS"]
