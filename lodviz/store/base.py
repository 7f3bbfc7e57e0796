"""The store interface every backend implements, and the records it speaks in.

A store knows tables, not faces: memories (three texts, an embedding and the
first-class columns the non-semantic modes query), an append-only audit log,
agent profiles, a small key-value ``meta`` table and named binary artifacts
(the fitted layout model). ``memory.Memory`` is the only caller.

Times cross this interface as POSIX seconds (float) in numpy arrays and as
timezone-aware UTC ``datetime`` in records.
"""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Sequence

import numpy as np

from lodviz import scoring

VISIBILITIES = ("private", "shared")


@dataclass
class NewMemory:
    """A memory ready to be written: texts compressed and embedded already."""

    text: str
    summary: str
    headline: str
    embedding: np.ndarray
    embedding_model: str
    content_hash: str
    created_at: datetime
    agent_id: str
    visibility: str = "private"
    kind: str = "note"
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # Usage history, for imports that carry one (the sample store does).
    retrieval_count: int = 0
    last_retrieved_at: datetime | None = None
    floor: int = 0


@dataclass
class MemoryRecord:
    """One stored memory as read back."""

    id: int
    text: str
    summary: str
    headline: str
    embedding_model: str
    content_hash: str
    created_at: datetime
    last_retrieved_at: datetime | None
    retrieval_count: int
    floor: int
    agent_id: str
    visibility: str
    kind: str
    source: str | None
    metadata: dict[str, Any]
    x: float | None = None
    y: float | None = None
    forgotten: bool = False

    def text_at(self, tier: int) -> str:
        return {
            scoring.Tier.FULL: self.text,
            scoring.Tier.SUMMARY: self.summary,
            scoring.Tier.HEADLINE: self.headline,
        }.get(scoring.Tier(tier), "")

    def to_dict(self) -> dict[str, Any]:
        """The memory as plain data (texts, usage, floor): what ``export`` writes and ``expand`` returns."""
        return {
            "text": self.text,
            "summary": self.summary,
            "headline": self.headline,
            "id": self.id,
            "agent_id": self.agent_id,
            "visibility": self.visibility,
            "kind": self.kind,
            "source": self.source,
            "created_at": iso(self.created_at),
            "last_retrieved_at": iso(self.last_retrieved_at),
            "retrieval_count": self.retrieval_count,
            "floor": scoring.Tier(self.floor).name,
            "metadata": self.metadata,
        }


@dataclass(frozen=True)
class ConflictLink:
    """A conflict candidate found while writing a batch: memory ``index`` of the batch and ``other``
    (an existing memory's id, or another index of the batch when ``other_is_new``)."""

    index: int
    other: int
    similarity: float
    reason: str
    other_is_new: bool = False


@dataclass
class Conflict:
    """Two memories that may contradict each other, and what an auditor decided.

    ``memory_id`` is the newer one. ``status``: open, kept (both stand),
    superseded (``superseded_id`` no longer holds), forgotten (one was erased).
    """

    memory_id: int
    other_id: int
    similarity: float
    reason: str
    detected_at: datetime | None
    status: str = "open"
    superseded_id: int | None = None
    resolved_by: str | None = None
    resolved_at: datetime | None = None
    note: str | None = None

    def partner(self, memory_id: int) -> int:
        return self.other_id if memory_id == self.memory_id else self.memory_id

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory_id": self.memory_id,
            "other_id": self.other_id,
            "similarity": round(self.similarity, 4),
            "reason": self.reason,
            "detected_at": iso(self.detected_at),
            "status": self.status,
            "superseded_id": self.superseded_id,
            "resolved_by": self.resolved_by,
            "resolved_at": iso(self.resolved_at),
            "note": self.note,
        }


@dataclass
class Golden:
    """A golden query: a question an agent asks, and the memories a good answer needs."""

    query: str
    needs: list[int]
    agent_id: str | None = None
    note: str | None = None
    id: int | None = None
    created_at: datetime | None = None
    created_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "agent_id": self.agent_id, "query": self.query, "needs": list(self.needs), "note": self.note,
                "created_at": iso(self.created_at), "created_by": self.created_by}


@dataclass
class AuditEvent:
    """One line of the append-only audit log."""

    action: str  # write, search, expand, promote, demote, profile, recent, unseen, sample, layout
    actor: str
    agent_id: str | None = None
    memory_id: int | None = None
    query: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    at: datetime | None = None
    id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": iso(self.at) if self.at else None,
            "action": self.action,
            "actor": self.actor,
            "agent_id": self.agent_id,
            "memory_id": self.memory_id,
            "query": self.query,
            "details": self.details,
        }


ROW_FIELDS = (
    "ids",
    "created_at",
    "last_retrieved_at",
    "retrieval_count",
    "floor",
    "agent_code",
    "shared",
    "kind",
    "x",
    "y",
    "len_text",
    "len_summary",
    "len_headline",
    "forgotten",
)


@dataclass
class State:
    """The numeric columns of many memories, aligned by row, sorted by id.

    ``last_retrieved_at`` is NaN where a memory was never retrieved; ``x``/``y``
    are NaN where no layout position is stored yet. Agents are coded as
    integers into ``agent_names`` so that visibility is a vector comparison,
    not a million string comparisons.
    """

    ids: np.ndarray  # int64
    created_at: np.ndarray  # float64 POSIX seconds
    last_retrieved_at: np.ndarray  # float64, NaN = never
    retrieval_count: np.ndarray  # int64
    floor: np.ndarray  # int8
    agent_code: np.ndarray  # int32 index into agent_names
    shared: np.ndarray  # bool
    kind: np.ndarray  # object (str)
    x: np.ndarray  # float64
    y: np.ndarray  # float64
    len_text: np.ndarray  # int32 characters, for token costs without reading texts
    len_summary: np.ndarray  # int32
    len_headline: np.ndarray  # int32
    forgotten: np.ndarray  # bool: erased by forget(); seen by nobody
    agent_names: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def agent_id(self) -> np.ndarray:
        names = np.asarray(self.agent_names + [""], dtype=object)
        return names[self.agent_code]

    def take(self, rows: np.ndarray | slice) -> "State":
        return State(
            **{name: getattr(self, name)[rows] for name in ROW_FIELDS},
            agent_names=self.agent_names,
        )

    def rows_of(self, ids: Sequence[int]) -> np.ndarray:
        """Row positions of ``ids`` (which must be present)."""
        return np.searchsorted(self.ids, np.asarray(ids, dtype=np.int64))

    def visible_to(self, agent_id: str | None) -> np.ndarray:
        """Mask of rows an agent may see: its own and shared ones; all for None. Never a forgotten one."""
        live = ~self.forgotten
        if agent_id is None:
            return live
        try:
            code = self.agent_names.index(agent_id)
        except ValueError:
            return self.shared & live
        return (self.shared | (self.agent_code == code)) & live


class Store(abc.ABC):
    """What a backend provides. Writes that belong together take one transaction."""

    path: str

    # -- meta and artifacts -------------------------------------------------
    @abc.abstractmethod
    def meta(self) -> dict[str, str]: ...

    @abc.abstractmethod
    def set_meta(self, values: dict[str, str]) -> None: ...

    @abc.abstractmethod
    def artifact(self, name: str) -> bytes | None: ...

    @abc.abstractmethod
    def set_artifact(self, name: str, data: bytes) -> None: ...

    # -- memories -----------------------------------------------------------
    @abc.abstractmethod
    def insert(
        self, memories: Sequence[NewMemory], audit: AuditEvent | None, links: Sequence[ConflictLink] = ()
    ) -> list[int | None]:
        """Write a batch and its conflict candidates in one transaction; duplicates (by content hash) get None."""

    @abc.abstractmethod
    def existing_hashes(self, hashes: Iterable[str]) -> set[str]: ...

    @abc.abstractmethod
    def get(self, ids: Sequence[int]) -> dict[int, MemoryRecord]: ...

    def contents(self, ids: Sequence[int], tiers: Sequence[int]) -> dict[int, tuple[str, str | None]]:
        """Each memory's text at its tier, and its source: what a result shows.

        A backend may read only the one text column each tier needs.
        """
        records = self.get(ids)
        return {int(i): (records[int(i)].text_at(int(t)), records[int(i)].source) for i, t in zip(ids, tiers)}

    @abc.abstractmethod
    def count(self) -> int: ...

    @abc.abstractmethod
    def state(self) -> State:
        """The numeric columns of every memory."""

    @abc.abstractmethod
    def unit_vectors(self) -> np.ndarray:
        """Every embedding, unit-normalised, float32, aligned with ``state()``."""

    def warm(self) -> None:
        """Load what searches read from memory now, ahead of the first search."""
        self.snapshot()

    def snapshot(self) -> tuple[State, np.ndarray]:
        """``state()`` and ``unit_vectors()`` of the same moment: rows that match.

        Two separate calls could straddle a write from another thread.
        """
        return self.state(), self.unit_vectors()

    def nearest(
        self,
        query: np.ndarray,
        k: int,
        visible: np.ndarray | None = None,
        vectors: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the ``k`` memories most similar to ``query`` and their S.

        The default is an exact brute-force scan of ``vectors`` (a snapshot's,
        or ``unit_vectors()``); a backend with a vector index may answer from it
        instead.
        """
        sims = scoring.similarity(query, self.unit_vectors() if vectors is None else vectors)
        if visible is not None:
            sims = np.where(visible, sims, -1.0)
            k = min(k, int(visible.sum()))
        k = min(k, len(sims))
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        rows = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
        rows = rows[np.argsort(-sims[rows], kind="stable")]
        return rows, sims[rows]

    @abc.abstractmethod
    def touch(self, ids: Sequence[int], now: datetime, audit: AuditEvent | None) -> None:
        """Count a retrieval of ``ids`` at ``now``, with its audit line, atomically."""

    @abc.abstractmethod
    def set_floor(self, memory_id: int, floor: int, audit: AuditEvent) -> None: ...

    @abc.abstractmethod
    def set_layout(self, ids: Sequence[int], x: np.ndarray, y: np.ndarray) -> None: ...

    @abc.abstractmethod
    def forget(self, memory_id: int, audit: AuditEvent) -> None:
        """Erase a memory's texts and vector for good, keeping its row and usage; audited."""

    # -- conflicts ------------------------------------------------------------
    @abc.abstractmethod
    def conflicts(
        self, ids: Sequence[int] | None = None, status: Sequence[str] | None = None, limit: int | None = None
    ) -> list[Conflict]:
        """Conflicts involving any of ``ids`` (all for None) in any of ``status``, newest first."""

    @abc.abstractmethod
    def ids_containing(self, text: str, limit: int = 10) -> list[int]:
        """Ids of live memories whose full text contains ``text`` (at most ``limit``), lowest first."""

    # -- golden queries -------------------------------------------------------
    @abc.abstractmethod
    def golden(self, agent_id: str | None = None) -> list[Golden]: ...

    @abc.abstractmethod
    def add_golden(self, entries: Sequence[Golden], audit: AuditEvent) -> list[int]:
        """Store golden queries with their audit line, in one transaction; returns their ids."""

    @abc.abstractmethod
    def resolve_conflict(
        self, memory_id: int, other_id: int, status: str, superseded_id: int | None, audit: AuditEvent
    ) -> None: ...

    # -- audit and profiles -------------------------------------------------
    @abc.abstractmethod
    def record(self, event: AuditEvent) -> None: ...

    @abc.abstractmethod
    def audit(
        self,
        *,
        agent_id: str | None = None,
        actions: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        memory_id: int | None = None,
        after_id: int | None = None,
        limit: int = 200,
    ) -> list[AuditEvent]:
        """Events matching every filter given, newest first (``after_id``: only later ones)."""

    @abc.abstractmethod
    def profile(self, agent_id: str) -> dict[str, Any] | None: ...

    @abc.abstractmethod
    def profiles(self) -> dict[str, dict[str, Any]]: ...

    @abc.abstractmethod
    def set_profile(self, agent_id: str, values: dict[str, Any], audit: AuditEvent) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime; naive values are taken to be UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return utc(value).isoformat().replace("+00:00", "Z")


def to_seconds(value: datetime) -> float:
    return utc(value).timestamp()


def from_seconds(value: float | None) -> datetime | None:
    if value is None or value != value:  # NaN: never; cheaper than np.isnan per item
        return None
    return datetime.fromtimestamp(float(value), tz=timezone.utc)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
