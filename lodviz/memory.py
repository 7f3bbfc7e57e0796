"""The LOD memory service: the one API every face calls.

``Memory`` wraps a store with the concept's operations: write (compress once,
embed, store), ``search`` (wide k, tiers, content at tier, promotion by use),
``expand``, ``promote``/``demote``, the non-semantic modes (``recent``,
``unseen``, ``sample``), per-agent profiles, the audit log, and the whole-store
rescoring the landscape draws (``landscape``).

Visibility: every call may name the agent it acts for. An agent sees its own
memories and shared ones; asking for anything else answers exactly as for a
memory that does not exist. ``agent_id=None`` is the auditor's view: all.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lodviz import access, audit, history, limits, modes, runtime, scoring, tuning
from lodviz import budget as budgeting
from lodviz.access import Identity, TokenRecord
from lodviz.cache import LRU
from lodviz.changes import TierChanges, tier_changes
from lodviz.credentials import Credentials
from lodviz.errors import (
    EmbeddingMismatch,
    InvalidInput,
    InvalidParameters,
    MemoryNotFound,
)
from lodviz.golden import GoldenQueries
from lodviz.ingest import pipeline
from lodviz.ingest.compress import Compressor, ExtractiveCompressor
from lodviz.ingest.embed import Embedder, SentenceTransformerEmbedder
from lodviz.ingest.inputs import MemoryInput, parse_record, parse_time
from lodviz.params import DEFAULT, PRESETS, AnswerSettings, Params, preset
from lodviz.records import Label, MemoryId, RecentUse
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
from lodviz.search.hits import hits
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
from lodviz.tokens import TokenCounter, token_counter

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

log = logging.getLogger("lodviz")

EMBED_FIELDS = ("auto", "summary", "full")
#: The artifact the fitted map is kept as.
LAYOUT_MODEL = "layout_model"
#: The default for new stores: the full text where the model reads it whole, else the summary.
DEFAULT_EMBED_FIELD = "auto"


class Memory:
    """LOD memory over one store. Create with ``lodviz.open(path)``."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None = None,
        compressor: Compressor | None = None,
        *,
        actor: str = "api",
        embed_field: str | None = None,
        tokenizer: str | TokenCounter | None = None,
        lexical_weight: float = 1.0,
        budget_policy: str = "readable-first",
        lock: AbstractContextManager[Any] | None = None,
    ) -> None:
        # With a lock, every public method holds it (``_serialised``): the app's
        # threads, the MCP workers and the API can then share one Memory.
        self._lock: AbstractContextManager[Any] = lock if lock is not None else nullcontext()
        self._lock_owner: int | None = None  # the thread inside a public method, holding ``_lock``
        self._store = store
        self._embedder = embedder
        self._compressor = compressor
        self.actor = actor
        meta = store.meta()
        chosen = embed_field or meta.get("embed_field") or DEFAULT_EMBED_FIELD
        if chosen not in EMBED_FIELDS:
            raise InvalidParameters(f"embed_field must be 'auto', 'summary' or 'full', got {chosen!r}.")
        if meta.get("embed_field") and embed_field and embed_field != meta["embed_field"]:
            raise InvalidParameters(
                f"this store embeds the {meta['embed_field']} text; it cannot switch to {embed_field}."
            )
        self.embed_field = chosen
        if isinstance(lexical_weight, bool) or not isinstance(lexical_weight, (int, float)) or not 0 <= lexical_weight <= 1:
            raise InvalidParameters(f"lexical_weight must be between 0 and 1, got {lexical_weight!r}.")
        if budget_policy not in budgeting.POLICIES:
            raise InvalidParameters(f"budget_policy must be one of {', '.join(budgeting.POLICIES)}, got {budget_policy!r}.")
        #: What shapes this store's answers beyond an agent's profile; a search passes it down.
        self.settings = AnswerSettings(float(lexical_weight), budget_policy)
        self._tokenizer_spec = tokenizer
        self._counter: TokenCounter | None = None
        self._window_counter: TokenCounter | None = None
        self._query_cache: LRU[np.ndarray] = LRU(64)
        self._timeline = Timeline(store)
        self._credentials = Credentials(store)
        self._golden = GoldenQueries(store, lambda memory_id, agent_id: self.get(memory_id, agent_id=agent_id))
        self._warming: threading.Thread | None = None
        self._warm_started = False  # one warm-up per Memory, whoever asks first (server, app, a caller)
        self._warmed = threading.Event()
        self._warm_guard = threading.Lock()
        # Agents' stored profiles as Params, by their stored values: an agent's every search asks.
        self._profile_params: LRU[Params] = LRU(64)
        # Result items' datetimes by row: last retrieval, creation (``RowDatetimes``).
        self._row_times = (RowDatetimes(), RowDatetimes())
        # A search's stages (``lodviz.search``), handed what they need from here.
        self._pipeline = Pipeline(
            store, self.embed_query, lambda: self.token_counter, self._holding, self._row_times, lambda: self.actor
        )
        self._scene = Scene(store, self._timeline, self._pipeline.candidates, self.embed_query)

    # -- parts ----------------------------------------------------------------

    @property
    def lexical_weight(self) -> float:
        return self.settings.lexical_weight

    @property
    def budget_policy(self) -> str:
        return self.settings.budget_policy

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._default_embedder()
        return self._embedder

    def _default_embedder(self) -> Embedder:
        # A store made with the deterministic test embedder is read with it again:
        # its vectors mean nothing to a language model, and it needs no download.
        name = self._store.meta().get("embedding_model", "")
        size = name.removeprefix("lodviz-hash-")
        if name.startswith("lodviz-hash-") and size.isdigit():
            from lodviz.testing import HashEmbedder

            return HashEmbedder(int(size))
        return SentenceTransformerEmbedder()

    @property
    def compressor(self) -> Compressor:
        if self._compressor is None:
            self._compressor = ExtractiveCompressor(self.embedder)
        return self._compressor

    @property
    def token_counter(self) -> TokenCounter:
        """What budgets count with: the embedding model's tokenizer unless configured otherwise."""
        if self._counter is None:
            self._counter = token_counter(self._tokenizer_spec, self._embedder if self._embedder is not None else self.embedder)
        return self._counter

    def _check_embedder(self) -> None:
        """Refuse a model whose vectors cannot be compared with the store's."""
        meta = self._store.meta()
        dim = self.embedder.dimension
        if "embedding_dim" not in meta:
            self._store.set_meta(
                {
                    "embedding_dim": str(dim),
                    "embedding_model": self.embedder.name,
                    "embed_field": self.embed_field,
                }
            )
            return
        if int(meta["embedding_dim"]) != dim:
            raise EmbeddingMismatch(
                f"the embedding model {self.embedder.name!r} makes {dim}-dimensional vectors, "
                f"but this store holds {meta['embedding_dim']}-dimensional ones from "
                f"{meta.get('embedding_model', 'another model')!r}."
            )
        if meta.get("embedding_model") != self.embedder.name:
            log.warning(
                "store was embedded with %s, querying with %s",
                meta.get("embedding_model"),
                self.embedder.name,
            )

    def embed_query(self, text: str) -> np.ndarray:
        """The query's embedding (cached: the app rescores the same query often)."""
        text = text.strip()

        def make() -> np.ndarray:
            self._check_embedder()
            return self.embedder.embed([text])[0]

        return self._query_cache.get(text, make)

    # -- the store, as the faces see it ---------------------------------------------------

    @property
    def path(self) -> str:
        """Where the store is (a file path, or ":memory:")."""
        return self._store.path

    def info(self) -> StoreInfo:
        """The store's facts: size, embedding model, its map, demo queries, reference time."""
        meta = self._store.meta()
        reference = meta.get("reference_time")
        return StoreInfo(
            path=self._store.path,
            memories=len(self._store.state()),
            embedding_model=meta.get("embedding_model"),
            embedding_dim=int(meta["embedding_dim"]) if "embedding_dim" in meta else None,
            embed_field=meta.get("embed_field", self.embed_field),
            layout_method=meta.get("layout_method") or None,
            layout_count=int(meta.get("layout_count", 0) or 0),
            layout_fitted_at=meta.get("layout_fitted_at"),
            demo_queries=json.loads(meta["demo_queries"]) if meta.get("demo_queries") else [],
            reference_time=parse_time(reference, "reference_time") if reference else None,
        )

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
        """Load what searches read from memory now, ahead of the first search; once per Memory.

        With ``background`` it happens in a thread and this returns at once: a
        search that comes first waits only for the part of the load it needs
        (the store's lock and this memory's are taken step by step), never for
        the rest. ``wait_warm`` waits for it. A second call (the app's, the
        server's) finds the first one's work done or under way and does not
        load again.
        """
        with self._warm_guard:
            first = not self._warm_started
            self._warm_started = True
        if not first:  # done, or under way in another thread
            if not background:
                self._warmed.wait()
            return
        if background:
            self._warming = threading.Thread(target=self._warm_quietly, name="lodviz-warm-store", daemon=True)
            self._warming.start()
            return
        self._warm_now()

    def wait_warm(self, timeout: float | None = None) -> bool:
        """Wait for a background ``warm``; True when none is running any more.

        That includes the warm-up thread's own exit, which the OS finishes
        after Python's ``join`` returns: a search started during it runs
        slower (``lodviz.runtime.wait_exited``). ``timeout`` bounds both.
        """
        thread = self._warming
        if thread is not None:
            deadline = None if timeout is None else time.monotonic() + timeout
            thread.join(timeout)
            if thread.is_alive():
                return False
            left = runtime.EXIT_TIMEOUT
            if deadline is not None:
                left = min(left, max(0.0, deadline - time.monotonic()))
            runtime.wait_exited(thread, left)
        return True

    def _warm_quietly(self) -> None:
        try:
            self._warm_now()
        except Exception as exc:  # a store closed meanwhile, say: the first search will load what it needs
            log.debug("warming the store in the background stopped: %s", exc)

    def _warm_now(self) -> None:
        """The store's in-memory copy, texts and BM25 terms (``Store.warm``), then the parts of a search
        that are slow the first time, then the model. Each step holds this memory's lock for itself only."""
        try:
            self._store.warm()  # the long part: the store takes its own lock step by step
            with self._holding():
                self._warm_search()
            try:  # the model, which a first query would load (one load per process: ``ingest.embed``)
                self.embedder.embed(["warm up"])
            except Exception as exc:
                log.debug("the embedder could not be warmed: %s", exc)
        finally:
            self._warmed.set()  # done or failed: nobody waits for it, and nobody starts it again

    def _warm_search(self) -> None:
        state, vectors = self._store.snapshot()
        if not len(state):
            return
        # A search's own steps once, with a stored vector for the query, so
        # that whatever is slow the first time (BLAS's threads, the conflicts
        # index, first queries) is paid here; nothing is touched or recorded.
        visible = state.visible_to(None)
        params = self.profile(None)
        found = self._pipeline.candidates.find_now("warm", (), 1.0, params.k, vectors[0], vectors, visible, state, None, self.settings.lexical_weight)
        sub = state.take(found.rows)
        t = scoring.age_days(self.now().timestamp(), sub.created_at, sub.last_retrieved_at)
        scored = scoring.score_all(found.similarity, t, sub.retrieval_count, sub.floor, params, found.penalty)
        keep = np.flatnonzero(scored.tier > Tier.OUT)
        tiers = scored.tier[keep].astype(np.int64)
        hits(sub, keep, tiers, *self._store.texts(sub.ids[keep].tolist(), tiers.tolist()), scored)
        self._store.conflicts(sub.ids[keep].tolist(), status=["open", "superseded"])
        # Every memory's two times as datetimes, by row: a search hands them out without making them.
        self._row_times[0].fill(state.last_retrieved_at)
        self._row_times[1].fill(state.created_at)

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
        state = self._store.state()
        ids = state.ids[state.visible_to(agent_id)].tolist()
        for start in range(0, len(ids), batch):
            chunk = ids[start : start + batch]
            records = self._store.get(chunk)
            for memory_id in chunk:
                yield records[memory_id]

    def export_frame(self, agent_id: str | None = None) -> pd.DataFrame:
        """``export_records`` as a pandas DataFrame, one row per memory."""
        import pandas as pd

        return pd.DataFrame([record.to_dict() for record in self.export_records(agent_id)])

    def agents_overview(self) -> list[AgentOverview]:
        """Every agent with memories or a profile: its memory count and the profile its searches use."""
        state = self._store.state()
        live = ~state.forgotten
        counts = dict(zip(*np.unique(state.agent_id[live].astype(str), return_counts=True))) if live.any() else {}
        stored = self.profiles()
        return [
            AgentOverview(agent_id=name, memories=int(counts.get(name, 0)), profile=stored.get(name, DEFAULT), stored=name in stored)
            for name in sorted(set(counts) | set(stored))
        ]

    def audit_frame(self, **filters: Any) -> pd.DataFrame:
        """``audit(**filters)`` as a pandas DataFrame, one row per event, newest first."""
        import pandas as pd

        return pd.DataFrame([event.to_dict() for event in self.audit(**filters)])

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

    # -- writing --------------------------------------------------------------

    def add(self, text: str, **fields: Any) -> int:
        """Store one memory; returns its id (the existing id if it is a duplicate)."""
        record = parse_record({"text": text, **fields})
        report = self.add_many([record], actor=fields.get("actor"))
        if report.added:
            return report.added[0]
        existing = self._find_hash(record.content_hash())
        assert existing is not None
        return existing

    def _find_hash(self, content_hash: str) -> int | None:
        return self._store.id_of_hash(content_hash)

    def write(self, text: str, *, actor: str | None = None, **fields: Any) -> tuple[MemoryRecord, bool]:
        """Store one memory and return it, with whether it was already stored (a duplicate).

        A duplicate writes nothing new, but the call still leaves its trace in
        the audit log.
        """
        record = parse_record({"text": text, **fields})
        report = self.add_many([record], actor=actor)
        if report.added:
            return self.get(report.added[0]), False
        existing = self._find_hash(record.content_hash())
        assert existing is not None
        self._store.record(
            AuditEvent(
                action="write", actor=actor or record.agent_id or self.actor, agent_id=record.agent_id,
                memory_id=existing, details={"count": 0, "duplicate": True},
            )
        )
        return self.get(existing), True

    def add_many(
        self,
        records: Iterable[MemoryInput | dict[str, Any]],
        *,
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
        actor: str | None = None,
    ) -> IngestReport:
        """Store many memories, one transaction per batch, skipping duplicates.

        Every record is validated before anything is written. Compression and
        embedding are paid only for records whose content hash is new.
        """
        inputs = [r if isinstance(r, MemoryInput) else parse_record(r, f"record {i + 1}") for i, r in enumerate(records)]
        added: list[int] = []
        skipped = 0
        if inputs:
            self._check_embedder()
        for start in range(0, len(inputs), batch_size):
            batch = inputs[start : start + batch_size]
            ids, dup = self._write_batch(batch, actor or self.actor)
            added.extend(ids)
            skipped += dup
            if progress is not None:
                progress(len(batch))
        return IngestReport(added=added, skipped=skipped)

    def _write_batch(self, batch: list[MemoryInput], actor: str) -> tuple[list[int], int]:
        hashes = [r.content_hash() for r in batch]
        existing = self._store.existing_hashes(hashes)
        fresh, seen = [], set()
        for record, content_hash in zip(batch, hashes):
            if content_hash not in existing and content_hash not in seen:
                seen.add(content_hash)
                fresh.append((record, content_hash))
        if not fresh:
            return [], len(batch)
        rows, vectors = pipeline.prepare(fresh, self.compressor, self.embedder, self.embed_field, self._embedding_window_counter())
        agents = sorted({r.agent_id for r in batch})
        event = AuditEvent(
            action="write",
            actor=actor,
            agent_id=agents[0] if len(agents) == 1 else None,
            details={"count": len(rows)},
        )
        state, stored = self._store.snapshot()
        links = pipeline.conflict_links([r for r, _ in fresh], vectors, state, stored, self._store.get)
        ids = self._store.insert(rows, event, links)
        written = [i for i in ids if i is not None]
        return written, len(batch) - len(written)

    def _embedding_window_counter(self) -> TokenCounter | None:
        """The model's own tokens, to tell which texts it reads whole (``embed_field="auto"``)."""
        source = getattr(self.embedder, "tokenizer_source", None)
        if source and self._window_counter is None:
            self._window_counter = token_counter(source)
        return self._window_counter if source else None

    # -- profiles ---------------------------------------------------------------

    def profile(self, agent_id: str | None) -> Params:
        """The agent's stored profile, or the defaults."""
        if agent_id is None:
            return DEFAULT
        stored = self._store.profile(agent_id)
        if not stored:
            return DEFAULT
        return self._profile_params.get(tuple(sorted(stored.items())), lambda: Params.from_dict(stored))

    def profiles(self) -> dict[str, Params]:
        return {agent: Params.from_dict(values) for agent, values in self._store.profiles().items()}

    def set_profile(
        self,
        agent_id: str,
        params: Params | str | None = None,
        *,
        actor: str | None = None,
        reason: str | None = None,
        **changes: Any,
    ) -> Params:
        """Store an agent's profile: a ``Params``, a preset name, or changes to the current one."""
        access.check_agent(agent_id)
        if isinstance(params, str):
            base = preset(params)
        elif params is None:
            base = self.profile(agent_id)
        else:
            base = params
        new = base.with_(**changes)
        old = self.profile(agent_id)
        self._store.set_profile(
            agent_id,
            new.to_dict(),
            AuditEvent(
                action="profile",
                actor=actor or self.actor,
                agent_id=agent_id,
                details={
                    "old": old.to_dict(),
                    "new": new.to_dict(),
                    "preset": params if isinstance(params, str) else None,
                    "reason": reason,
                },
            ),
        )
        return new

    def _params(self, agent_id: str | None, profile_of: str | None = None, **overrides: Any) -> Params:
        return self.profile(profile_of or agent_id).with_(**overrides)

    # -- scoring the whole store -------------------------------------------------

    def _visible(self, state: Columns, agent_id: str | None) -> np.ndarray:
        return state.visible_to(agent_id)

    def landscape(
        self,
        query: str | None = None,
        *,
        agent_id: str | None = None,
        params: Params | None = None,
        now: datetime | str | None = None,
        exclude: Sequence[str] = (),
        exclude_weight: float = 1.0,
        as_of: history.Moment | datetime | str | None = None,
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

    # -- the store as it was (lodviz.history) ------------------------------------------

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
        self,
        before: Params,
        after: Params,
        query: str | None = None,
        *,
        agent_id: str | None = None,
        now: datetime | str | None = None,
        exclude: Sequence[str] = (),
        as_of: history.Moment | datetime | str | None = None,
    ) -> TierChanges:
        """The memories a move from settings ``before`` to ``after`` changes the tier of (up, down, in, out).

        Tiers are those a search returns (OUT beyond the k candidates), for
        the same query, agent, now and moment; nothing is touched or audited.
        """
        a = self.landscape(query, agent_id=agent_id, params=before, now=now, exclude=exclude, as_of=as_of)
        b = self.landscape(query, agent_id=agent_id, params=after, now=now, exclude=exclude, as_of=as_of)
        return tier_changes(a.state.ids, a.returned_tiers(), b.returned_tiers())

    def past_search(self, event_id: int) -> tuple[AuditEvent, Params]:
        """A search (or browse) on record and the settings it used; ``InvalidInput`` for any other event."""
        event = self.audit_event(event_id)
        if event.action not in audit.RETRIEVING:
            raise InvalidInput(f"audit event #{event_id} is a {event.action}, not a search; only searches can be replayed.")
        recorded = event.details.get("params")
        return event, Params.from_dict(recorded) if recorded else self.profile(event.agent_id)

    def replay(self, event_id: int) -> history.Replay:
        """A past search as its agent saw it: the store as it was just before it, the same question again.

        The usage and floors of that moment are rebuilt from the audit log;
        query, agent, parameters, ``now``, exclusions, budget and the store's
        settings are the search's own. ``Replay.agrees`` says whether the
        answer rebuilt is the one the audit log recorded.
        """
        event, params = self.past_search(event_id)
        d = event.details
        moment = history.Moment(before_event=int(event.id or 0))
        when = parse_time(d.get("now"), "now") or event.at or self._now(None)
        exclude = [t for t in d.get("exclude") or [] if isinstance(t, str)]
        weight = float(d.get("exclude_weight", 1.0))
        # The search's own settings, handed down: the live memory's stay as they are for everyone else.
        settings = AnswerSettings(float(d.get("lexical_weight", self.settings.lexical_weight)),
                                  str(d.get("budget_policy", self.settings.budget_policy)))
        query = event.query if event.action == "search" else None
        land = self.landscape(query, agent_id=event.agent_id, params=params, now=when, exclude=exclude,
                              exclude_weight=weight, as_of=moment, settings=settings)
        result = None
        if event.action == "search" and event.query and not d.get("view"):
            result = self._pipeline.run(
                self._timeline.snapshot(moment), event.query.strip(), params, when, event.agent_id, exclude, weight,
                budget_tokens=d.get("budget_tokens"), touch=False, actor=None, record=False, past=True, settings=settings,
            )
        return history.Replay(event, moment, land, result, history.returned_tiers(event))


    def record_view(self, land: Landscape, *, agent_id: str | None = None, actor: str | None = None) -> None:
        """Audit a landscape looked at with a query (the app's searches) as a search that touched nothing."""
        self._scene.record_view(land, agent_id, actor or agent_id or self.actor)

    # -- search -------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        agent_id: str | None = None,
        alpha: float | None = None,
        lam: float | None = None,
        theta1: float | None = None,
        theta2: float | None = None,
        theta3: float | None = None,
        k: int | None = None,
        params: Params | None = None,
        now: datetime | str | None = None,
        exclude: Sequence[str] | None = None,
        exclude_weight: float = 1.0,
        budget_tokens: int | None = None,
        touch: bool = True,
        actor: str | None = None,
        record: bool = True,
        as_of: history.Moment | datetime | str | None = None,
    ) -> Result:
        """The LOD landscape for ``query``: the k nearest memories, each at its tier.

        Memories returned FULL or SUMMARY count as retrieved (their
        last_retrieved_at becomes ``now``, their count grows), in the same
        transaction that writes the search to the audit log; pass
        ``touch=False`` to look without leaving a trace on the memories, and
        also ``record=False`` to leave no audit line either (a read-only demo).

        ``as_of`` asks the store as it was at a past moment (``now`` defaults
        to it): a look at the past, so it counts nothing and writes no audit line.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("the query is empty.")
        query = query.strip()
        bounds = limits.current()
        bounds.check_query(query)
        base = params or self.profile(agent_id)
        params = base.with_(alpha=alpha, lam=lam, theta1=theta1, theta2=theta2, theta3=theta3, k=k)
        bounds.check_k(params.k)
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


    def preview(
        self,
        query: str,
        *,
        agent_id: str | None = None,
        params: Params | None = None,
        now: datetime | str | None = None,
        budget_tokens: int | None = None,
    ) -> Result:
        """What ``search`` would return, leaving no trace: no retrieval counted, no audit line.

        For tuning, which asks the same questions under many settings and
        records itself once (``lodviz.tuning``). Agents and people search.
        """
        return self.search(query, agent_id=agent_id, params=params, now=now, budget_tokens=budget_tokens, touch=False, record=False)


    # -- conflicts and forgetting -----------------------------------------------------

    def conflicts(
        self,
        memory_id: MemoryId | None = None,
        *,
        status: Sequence[str] | None = ("open",),
        agent_id: str | None = None,
        limit: int | None = None,
    ) -> list[Conflict]:
        """Conflict candidates (of one memory, or all), newest first; an agent sees those between memories it can see."""
        ids = None if memory_id is None else [self.get(memory_id, agent_id=agent_id).id]
        found = self._store.conflicts(ids, status=list(status) if status else None, limit=limit)
        if agent_id is None:
            return found
        records = self._store.get(sorted({i for c in found for i in (c.memory_id, c.other_id)}))
        seen = {rid for rid, rec in records.items() if rec.visibility == "shared" or rec.agent_id == agent_id}
        return [c for c in found if c.memory_id in seen and c.other_id in seen]

    def resolve_conflict(
        self,
        memory_id: MemoryId,
        other_id: MemoryId,
        *,
        superseded: MemoryId | None = None,
        reason: str | None = None,
        actor: str | None = None,
    ) -> Conflict:
        """An auditor's decision on a conflict: both stand (``superseded`` None), or one is superseded by the other.

        Audited ("resolve"); the superseded memory stays in the store and comes
        back marked "[superseded by #id]", with the memory that replaces it.
        """
        a, b = _as_id(memory_id), _as_id(other_id)
        pair = next((c for c in self._store.conflicts([a]) if {c.memory_id, c.other_id} == {a, b}), None)
        if pair is None:
            raise InvalidInput(f"memories {a} and {b} are not a conflict on record.")
        if pair.status == "forgotten":
            raise InvalidInput(f"memory {a if self._store.get([a])[a].forgotten else b} was forgotten; nothing is left to resolve.")
        if superseded is not None and _as_id(superseded) not in (a, b):
            raise InvalidInput(f"the superseded memory must be {a} or {b}, not {superseded}.")
        status = "kept" if superseded is None else "superseded"
        record = self.get(pair.memory_id)
        self._store.resolve_conflict(
            pair.memory_id,
            pair.other_id,
            status,
            None if superseded is None else _as_id(superseded),
            AuditEvent(
                action="resolve",
                actor=actor or self.actor,
                agent_id=record.agent_id,
                memory_id=pair.memory_id,
                details={"other": pair.other_id, "status": status, "superseded": superseded, "reason": reason, "was": pair.reason},
            ),
        )
        return next(c for c in self._store.conflicts([pair.memory_id]) if c.other_id == pair.other_id)

    def forget(self, memory_id: MemoryId, *, reason: str | None = None, agent_id: str | None = None, actor: str | None = None) -> None:
        """Erase a memory for good: its texts and vector go, its id, usage and audit history stay.

        For erasure requests; everything else fades instead. Nobody sees a
        forgotten memory again; its open conflicts close as "forgotten".
        """
        record = self.get(memory_id, agent_id=agent_id)
        self._store.forget(
            record.id,
            AuditEvent(
                action="forget",
                actor=actor or agent_id or self.actor,
                agent_id=record.agent_id,
                memory_id=record.id,
                details={"reason": reason, "kind": record.kind},
            ),
        )
        self._pipeline.forget(record.id)

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
        self,
        agent_id: str | None = None,
        *,
        budget_tokens: int = 2000,
        alphas: Sequence[float] | None = None,
        lambdas: Sequence[float] | None = None,
        actor: str | None = None,
    ) -> tuning.Sweep:
        """Sweep alpha and lambda over the agent's golden queries (``lodviz.tuning``); one audit line.

        Raises ``InvalidInput`` when there are no golden queries to measure against.
        """
        golden = self.golden(agent_id)
        if not golden:
            who = f"agent {agent_id!r}" if agent_id else "this store"
            raise InvalidInput(
                f"{who} has no golden queries to tune against; add some with `lodviz golden import FILE` "
                "(a JSON Lines file of queries and the memories they need)."
            )
        base = self.profile(agent_id)
        result = tuning.sweep(
            self.preview, golden, agent_id=agent_id, base=base, budget=budget_tokens,
            alphas=alphas or tuning.ALPHAS, lambdas=lambdas or tuning.LAMBDAS,
        )
        best = result.suggest()
        current = tuning.evaluate(self.preview, golden, base, budget_tokens, agent_id)
        self._store.record(
            AuditEvent(
                action="tune",
                actor=actor or self.actor,
                agent_id=agent_id,
                details={"budget_tokens": budget_tokens, "queries": len(golden), "settings": len(result.rows),
                         "current": {"alpha": base.alpha, "lam": base.lam, **current}, "suggested": best},
            )
        )
        result.current = current
        return result

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
        memory_id = _as_id(memory_id)
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
        limit = _positive(limit, "limit")
        state = self._store.state()
        candidates = self._store.ids_with_words(words, limit * 4 + 50, within=state)
        seen = self._visible(state, agent_id)[state.rows_of(candidates)] if candidates else []
        found = [i for i, ok in zip(candidates, seen) if ok][:limit]
        records = self._store.get(found)
        return [records[i] for i in found if i in records]

    def expand(
        self,
        memory_id: MemoryId,
        *,
        agent_id: str | None = None,
        now: datetime | str | None = None,
        actor: str | None = None,
    ) -> MemoryRecord:
        """The full content of one memory; counts as a retrieval."""
        record = self.get(memory_id, agent_id=agent_id)
        when = self._now(now)
        self._store.touch(
            [record.id],
            when,
            AuditEvent(
                action="expand",
                actor=actor or agent_id or self.actor,
                agent_id=agent_id or record.agent_id,
                memory_id=record.id,
                details={"now": iso(when)},  # the last retrieval it set, for a replay
            ),
        )
        return self.get(record.id)

    def promote(
        self,
        memory_id: MemoryId,
        *,
        reason: str | None = None,
        agent_id: str | None = None,
        actor: str | None = None,
        to: Tier | str | int | None = None,
        query: str | None = None,
        params: Params | None = None,
        now: datetime | str | None = None,
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
        self,
        memory_id: MemoryId,
        *,
        reason: str | None = None,
        agent_id: str | None = None,
        actor: str | None = None,
        to: Tier | str | int | None = None,
    ) -> Tier:
        """Lower the memory's tier floor by one tier (or to ``to``); returns the new floor.

        A floor only ever lifts a memory: once it is below the tier the score
        gives, the memory comes back where its score puts it.
        """
        return self.move_floor(memory_id, -1, to=to, reason=reason, agent_id=agent_id, actor=actor).after

    def current_tier(
        self,
        memory_id: MemoryId,
        *,
        agent_id: str | None = None,
        query: str | None = None,
        params: Params | None = None,
        now: datetime | str | None = None,
    ) -> Tier:
        """The tier at which this agent was shown a memory, or at which it comes back now.

        Scored for ``query`` with ``params`` if given (the landscape's view).
        Otherwise the tier the agent's latest result that held the memory
        delivered it at (after its budget; from the audit log); with no agent
        named, the memory's own agent. Without such a result: as in the
        agent's last search (its query, parameters and "now"), or with none
        on record, for no query (S = 0) under the agent's profile.
        """
        if query is None:
            delivered = self._last_delivered(self.get(memory_id, agent_id=agent_id), agent_id)
            if delivered is not None:
                return delivered
            last = self._store.audit(agent_id=agent_id, actions=["search"], limit=1)
            if last and (agent_id is not None or last[0].agent_id is None) and last[0].query:
                query = last[0].query
                details = last[0].details
                if params is None and details.get("params"):
                    params = Params.from_dict(details["params"])
                if now is None and details.get("now"):
                    now = details["now"]
        return self.explain(memory_id, query, agent_id=agent_id, params=params, now=now).tier

    #: How many of an agent's latest results are read to find where it was last shown a memory.
    SHOWN_LOOKBACK = 200

    def _last_delivered(self, record: MemoryRecord, agent_id: str | None) -> Tier | None:
        """The tier the agent's latest result holding ``record`` delivered it at (an expand: FULL).

        With no agent named: the latest such result of the memory's own agent
        or of a search for all agents (an auditor's).
        """
        memory_id = record.id
        for event in self._store.audit(agent_id=agent_id, actions=list(audit.USING), limit=self.SHOWN_LOOKBACK):
            if agent_id is None and event.agent_id not in (None, record.agent_id):
                continue
            if event.action == "expand":
                if event.memory_id == memory_id:
                    return Tier.FULL
                continue
            if event.details.get("view"):  # a person's look in the landscape, not what the agent received
                continue
            for name, ids in (event.details.get("returned") or {}).items():
                if memory_id in ids and name in Tier.__members__:
                    return Tier[name]
        return None

    def move_floor(
        self,
        memory_id: MemoryId,
        step: int,
        *,
        to: Tier | str | int | None = None,
        reason: str | None = None,
        agent_id: str | None = None,
        actor: str | None = None,
        query: str | None = None,
        params: Params | None = None,
        now: datetime | str | None = None,
    ) -> FloorChange:
        """Promote (``step`` +1) or demote (-1) one memory's tier floor, audited; the one floor rule."""
        record = self.get(memory_id, agent_id=agent_id)
        before = Tier(record.floor)
        target: Tier
        action, other = ("promote", "demote") if step > 0 else ("demote", "promote")
        if to is not None:
            try:
                target = Tier.parse(to)
            except ValueError:
                raise InvalidInput(f"{to!r} is not a tier; use FULL, SUMMARY, HEADLINE or OUT.") from None
            if (target - before) * step < 0:
                raise InvalidInput(f"{action} cannot move the floor from {before.name} to {target.name}; use {other}.")
        elif step > 0:
            shown = self.current_tier(record.id, agent_id=agent_id, query=query, params=params, now=now)
            target = Tier(min(max(before, shown) + 1, Tier.FULL))
        else:
            target = Tier(max(before - 1, Tier.OUT))
        self._store.set_floor(
            record.id,
            int(target),
            AuditEvent(
                action=action,
                actor=actor or agent_id or self.actor,
                agent_id=agent_id or record.agent_id,
                memory_id=record.id,
                details={"from": before.name, "to": target.name, "reason": reason, "now": iso(self._now(now))},
            ),
        )
        return FloorChange(memory_id=record.id, before=before, after=target, headline=record.headline, agent_id=record.agent_id)

    def explain(
        self,
        memory_id: MemoryId,
        query: str | None = None,
        *,
        agent_id: str | None = None,
        params: Params | None = None,
        now: datetime | str | None = None,
        exclude: Sequence[str] = (),
        exclude_weight: float = 1.0,
        as_of: history.Moment | datetime | str | None = None,
    ) -> scoring.Placement:
        """Why this memory sits at its tier for this query and these settings (at a past moment: ``as_of``)."""
        record = self.get(memory_id, agent_id=agent_id)
        moment = self._timeline.moment(as_of)
        when = self._now(now if now is not None or moment is None or moment.at is None else moment.at)
        return self._scene.explain(record, query, agent_id, params or self.profile(agent_id), when, moment, exclude, exclude_weight,
                                   self.settings)

    # -- non-semantic modes ---------------------------------------------------------

    def recent(
        self,
        since: datetime | str,
        until: datetime | str | None = None,
        *,
        agent_id: str | None = None,
        limit: int | None = None,
        budget_tokens: int | None = None,
        now: datetime | str | None = None,
        touch: bool = True,
        record: bool = True,
        actor: str | None = None,
    ) -> Result:
        """Everything created in [since, until], tiered by retrieval frequency alone.

        Frequently used memories in the window come back FULL, untouched ones
        as headlines: the LOD shape without a semantic query. Newest first.
        """
        start = parse_time(since, "since")
        if start is None:
            raise InvalidInput("recent needs a 'since' time.")
        when = self._now(now)
        end = parse_time(until, "until") if until else when
        assert end is not None
        if end < start:
            raise InvalidInput("'until' is before 'since'.")
        params = self.profile(agent_id)
        state = self._store.state()
        chosen = modes.recent(state, self._visible(state, agent_id), start, end,
                              None if limit is None else _positive(limit, "limit"), params, when)
        return self._browse("recent", chosen, params, when, agent_id, budget_tokens, touch, actor, record,
                            {"since": iso(start), "until": iso(end)})

    def unseen(
        self,
        *,
        agent_id: str | None = None,
        limit: int = 50,
        budget_tokens: int | None = None,
        now: datetime | str | None = None,
        touch: bool = True,
        record: bool = True,
        actor: str | None = None,
    ) -> Result:
        """Memories never retrieved (r = 0), newest first, tiered by recency (L = D)."""
        when = self._now(now)
        params = self.profile(agent_id)
        state = self._store.state()
        chosen = modes.unseen(state, self._visible(state, agent_id), _positive(limit, "limit"), params, when)
        return self._browse("unseen", chosen, params, when, agent_id, budget_tokens, touch, actor, record)

    def sample(
        self,
        n: int = 10,
        *,
        agent_id: str | None = None,
        seed: int | None = None,
        budget_tokens: int | None = None,
        now: datetime | str | None = None,
        touch: bool = True,
        record: bool = True,
        actor: str | None = None,
    ) -> Result:
        """``n`` memories drawn at random, weighted towards the lowest D.

        The chance of a memory is proportional to 1 - D (plus a small floor so
        nothing is impossible): the system resurfaces what it has been
        ignoring. Drawn memories come back as summaries, so they count as used.
        """
        n = _positive(n, "n")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise InvalidInput(f"seed must be a whole number of at least 0, got {seed!r}.")
        when = self._now(now)
        params = self.profile(agent_id)
        state = self._store.state()
        chosen = modes.sample(state, self._visible(state, agent_id), n, seed, params, when)
        return self._browse("sample", chosen, params, when, agent_id, budget_tokens, touch, actor, record, {"seed": seed})

    def _browse(
        self, mode: str, chosen: modes.Browse, params: Params, when: datetime, agent_id: str | None,
        budget_tokens: int | None, touch: bool, actor: str | None, record: bool, extra: dict[str, Any] | None = None,
    ) -> Result:
        """A mode's chosen memories delivered as a search's are: budgeted, counted, audited."""
        return self._pipeline.delivery.deliver(
            mode, chosen.sub, chosen.scored, params, when, agent_id, order=chosen.order, budget_tokens=budget_tokens,
            touch=touch, actor=actor, record=record, policy=self.settings.budget_policy, extra=extra,
        )

    # -- audit and facts --------------------------------------------------------------

    def audit(self, **filters: Any) -> list[AuditEvent]:
        """Audit events, newest first, filtered as the store's ``audit`` takes them."""
        if filters.get("limit") is not None and _positive(filters["limit"], "limit") > MAX_ID:
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

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self._store.count()


def _serialised(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` run holding the memory's lock, unless this thread holds it already.

    Public methods call public methods (``add`` calls ``add_many``): taking the
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
    if _name.startswith("_") or _name in ("warm", "wait_warm"):  # a warm-up takes the lock step by step; waiting must not hold it
        continue
    if isinstance(_member, property) and _member.fget is not None:
        setattr(Memory, _name, property(_serialised(_member.fget), _member.fset, _member.fdel, _member.__doc__))
    elif callable(_member) and not isinstance(_member, (staticmethod, classmethod, type)):
        setattr(Memory, _name, _serialised(_member))


#: Ids are BIGINT in both stores: anything outside 1 .. 2**63 - 1 names no memory.
MAX_ID = 2**63 - 1


def _as_id(value: Any) -> int:
    """A memory id from what a caller sent; ``MemoryNotFound`` for anything no memory can have."""
    if isinstance(value, bool):
        raise MemoryNotFound(value)
    try:
        memory_id = int(str(value).strip())
    except (TypeError, ValueError):
        raise MemoryNotFound(value) from None
    if not 1 <= memory_id <= MAX_ID:
        raise MemoryNotFound(memory_id)
    return memory_id


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"{name} must be a whole number of at least 1, got {value!r}.")
    return value


__all__ = ["Memory", "Result", "Hit", "Landscape", "IngestReport", "FloorChange", "PRESETS"]


