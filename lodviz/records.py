"""The records lodviz keeps: memories, their columns and passages, audit events, conflicts, golden queries.

The store reads and writes these; the service (``lodviz.memory``) and the
faces speak in them. Times are timezone-aware UTC ``datetime`` here and POSIX
seconds in ``Columns``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from lodviz import scoring
from lodviz.times import iso

VISIBILITIES = ("private", "shared")

#: A memory's id as a face hands it in: the number, or its text ("42", from a command line).
MemoryId = int | str


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
    # A long memory's passages (``lodviz.passages.cut``): spans of ``text`` and, row for row, their
    # embeddings as the embedder made them; a short memory has none.
    passages: tuple[tuple[int, int], ...] = ()
    passage_vectors: np.ndarray | None = None


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
    #: The passages' spans, where the reader asked for them (an export: ``[]`` for a short memory); None otherwise.
    passages: list[list[int]] | None = None

    def visible_to(self, agent_id: str | None) -> bool:
        """May ``agent_id`` see this memory? Its own and shared ones; all for None (an auditor).
        The same rule as ``Columns.visible_to``, for one record; a forgotten memory is seen by nobody."""
        return not self.forgotten and (agent_id is None or self.visibility == "shared" or self.agent_id == agent_id)

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
            **({} if self.passages is None else {"passages": self.passages}),
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


@dataclass(frozen=True)
class Label:
    """What the landscape says of a memory at a glance: its headline, where it came from and its metadata."""

    memory_id: int
    headline: str
    source: str | None
    metadata: dict[str, Any]

    #: Metadata keys worth a place in a hover, in order (importers set them: session, tool, file...).
    SHOWN = ("role", "tool", "session", "project", "conversation", "file", "page", "section")

    def details(self, limit: int = 4) -> list[str]:
        """"key: value" of the metadata that says where a memory is from, the most telling first."""
        out = []
        for key in self.SHOWN:
            value = self.metadata.get(key)
            if value not in (None, "", [], {}):
                text = str(value)
                out.append(f"{key}: {text if len(text) <= 60 else text[:57] + '…'}")
            if len(out) >= limit:
                break
        return out


@dataclass(frozen=True)
class RecentUse:
    """The latest use of one memory: who retrieved it, when (wall clock), through what."""

    memory_id: int
    agent_id: str | None
    actor: str
    at: datetime
    action: str  # search, expand, recent, unseen, sample
    query: str | None = None

    @property
    def who(self) -> str:
        return self.actor if not self.agent_id or self.agent_id == self.actor else f"{self.actor} ({self.agent_id})"


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


def rows_in(sorted_ids: np.ndarray, ids: Sequence[int] | np.ndarray) -> np.ndarray:
    """Positions of ``ids`` in ``sorted_ids`` (ascending), -1 for an id it does not hold."""
    ids = np.asarray(ids, dtype=np.int64)
    if not len(sorted_ids):
        return np.full(len(ids), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    return np.where(sorted_ids[at] == ids, at, -1)


@dataclass
class Columns:
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

    def take(self, rows: np.ndarray | slice) -> Columns:
        return Columns(
            **{name: getattr(self, name)[rows] for name in ROW_FIELDS},
            agent_names=self.agent_names,
        )

    def rows_of(self, ids: Sequence[int]) -> np.ndarray:
        """Row positions of ``ids`` (which must be present)."""
        return np.searchsorted(self.ids, np.asarray(ids, dtype=np.int64))

    def rows_or_missing(self, ids: np.ndarray) -> np.ndarray:
        """Row positions of ``ids``, -1 for an id these columns do not hold (written since, say)."""
        return rows_in(self.ids, ids)

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


@dataclass(frozen=True, eq=False)  # arrays: compared by their contents where a caller needs it
class Passages:
    """The passages of many memories (``lodviz.passages``), one row each, grouped by memory id ascending,
    then by position within the memory.

    ``spans`` are ``(start, stop)`` character offsets into the memory's full
    text; ``vectors`` are unit vectors (a forgotten memory has no passages).
    """

    owner: np.ndarray  # int64 memory ids
    position: np.ndarray  # int32, the passage's index within its memory
    spans: np.ndarray  # (P, 2) int64
    vectors: np.ndarray  # (P, dim) float32, unit

    @classmethod
    def empty(cls, dim: int) -> Passages:
        return cls(
            owner=np.zeros(0, dtype=np.int64), position=np.zeros(0, dtype=np.int32),
            spans=np.zeros((0, 2), dtype=np.int64), vectors=np.zeros((0, dim), dtype=np.float32),
        )

    def __len__(self) -> int:
        return len(self.owner)

    def take(self, rows: np.ndarray | slice) -> Passages:
        return Passages(self.owner[rows], self.position[rows], self.spans[rows], self.vectors[rows])

    def of(self, ids: Sequence[int] | np.ndarray) -> Passages:
        """The rows of the memories ``ids`` (any order, repeats allowed), grouped as here: by memory id ascending."""
        wanted = np.unique(np.asarray(ids, dtype=np.int64))
        starts = np.searchsorted(self.owner, wanted, side="left")
        stops = np.searchsorted(self.owner, wanted, side="right")
        held = stops > starts
        if not held.any():
            return self.take(slice(0, 0))
        # Every row of each held memory: its run of rows, the runs one after the other.
        starts, stops = starts[held], stops[held]
        lengths = stops - starts
        rows = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
        return self.take(rows)


__all__ = [
    "VISIBILITIES", "MemoryId", "Label", "RecentUse", "NewMemory", "MemoryRecord", "ConflictLink", "Conflict", "Golden", "AuditEvent", "ROW_FIELDS", "Columns",
    "Passages",
]
