"""The store interface every backend implements (its records are in ``lodviz.records``).

A store knows tables, not faces: memories (three texts, an embedding and the
first-class columns the non-semantic modes query), the passages of long
memories (spans of the full text, each with its embedding), an append-only audit log,
agent profiles, a small key-value ``meta`` table and named binary artifacts
(the fitted layout model). ``memory.Memory`` is the only caller.

Times cross this interface as POSIX seconds (float) in numpy arrays and as
timezone-aware UTC ``datetime`` in records.
"""

from __future__ import annotations

import abc
import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import numpy as np

from lodviz import lexical, scoring, selection
from lodviz.access import TokenRecord
from lodviz.errors import InvalidParameters
from lodviz.records import (  # re-exported: the backends speak in them
    AuditEvent,
    Columns,
    Conflict,
    ConflictLink,
    Golden,
    MemoryRecord,
    NewMemory,
    Passages,
)
from lodviz.store.scan_buffer import ScanBuffer
from lodviz.times import utc

#: Every table a store keeps, in the order a copy writes them, with the
#: columns ``read_table``/``write_table`` speak (times aware UTC, JSON as
#: text, embeddings as float32 arrays as the embedder made them, ``usage``
#: as totals per memory).
TABLES: dict[str, tuple[str, ...]] = {
    "meta": ("key", "value"),
    "artifacts": ("name", "data"),
    "memories": (
        "id", "text", "summary", "headline", "embedding", "embedding_model", "content_hash", "created_at", "floor",
        "agent_id", "visibility", "kind", "source", "metadata", "layout_x", "layout_y", "forgotten_at",
    ),
    "passages": ("memory_id", "position", "start", "stop", "embedding"),
    "usage": ("memory_id", "retrieval_count", "last_retrieved_at"),
    "profiles": ("agent_id", "alpha", "lam", "theta1", "theta2", "theta3", "k", "updated_at", "budget"),
    "conflicts": (
        "memory_id", "other_id", "similarity", "reason", "detected_at", "status", "superseded_id", "resolved_by",
        "resolved_at", "note",
    ),
    "golden": ("id", "agent_id", "query", "needs", "note", "created_at", "created_by"),
    "audit": ("id", "occurred_at", "action", "actor", "agent_id", "memory_id", "query", "details"),
    "tokens": ("id", "name", "role", "agent_id", "secret_sha256", "created_at", "created_by", "revoked_at"),
}
#: The key each table is read in order of (what a comparison of two copies walks).
TABLE_ORDER = {
    "meta": "key", "artifacts": "name", "memories": "id", "passages": "memory_id, position", "usage": "memory_id",
    "profiles": "agent_id",
    "conflicts": "memory_id, other_id", "golden": "id", "audit": "id", "tokens": "id",
}


class Store(abc.ABC):
    """What a backend provides. Writes that belong together take one transaction."""

    path: str
    #: How the last ``nearest`` found its answer: "scan" (exact, in memory) or "hnsw" (a vector index).
    last_nearest: str = "scan"

    @abc.abstractmethod
    def atomic(self) -> AbstractContextManager[None]:
        """A transaction: every write of the store's inside it lands together, or none does."""

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
        """Write a batch, its passages and its conflict candidates in one transaction; duplicates (by content
        hash) get None."""

    @abc.abstractmethod
    def existing_hashes(self, hashes: Iterable[str]) -> set[str]: ...

    @abc.abstractmethod
    def id_of_hash(self, content_hash: str) -> int | None:
        """The id of the memory with this content hash, if one is stored."""

    @abc.abstractmethod
    def get(self, ids: Sequence[int]) -> dict[int, MemoryRecord]: ...

    @abc.abstractmethod
    def ids_with_words(self, words: Sequence[str], limit: int, within: Columns | None = None) -> list[int]:
        """Ids of memories whose full text holds every word (case-insensitive), newest first;
        with ``within``, only ids those columns hold (taken earlier: none written since)."""

    def contents(self, ids: Sequence[int] | np.ndarray, tiers: Sequence[int] | np.ndarray) -> dict[int, tuple[str, str | None]]:
        """Each memory's text at its tier, and its source: what a result shows.

        A backend may read only the one text column each tier needs.
        """
        records = self.get([int(i) for i in ids])
        return {int(i): (records[int(i)].text_at(int(t)), records[int(i)].source) for i, t in zip(ids, tiers)}

    def texts(self, ids: Sequence[int] | np.ndarray, tiers: Sequence[int] | np.ndarray) -> tuple[list[str], list[str | None]]:
        """``contents`` as two lists in the order of ``ids``: the texts, and the sources.

        What a search's items are built from; a backend may make them without the dict.
        """
        found = self.contents(ids, tiers)
        pairs = [found[int(i)] for i in ids]
        return [text for text, _ in pairs], [source for _, source in pairs]

    def term_counts(self, ids: Sequence[int] | np.ndarray, wanted: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """BM25 frequencies of each ``wanted`` term in each memory's summary, (terms, memories),
        and each summary's length in terms (``lodviz.lexical``).

        Here the summaries are read and split; a backend may keep them counted
        (``lexical.TermIndex``).
        """
        texts = self.contents(ids, [2] * len(ids))  # 2: SUMMARY
        return lexical.counts(wanted, [texts[int(i)][0] for i in ids])

    def metadata(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Each memory's metadata (what an importer kept: session, tool, file...). Backends read just that column."""
        return {i: r.metadata for i, r in self.get(ids).items()}

    @abc.abstractmethod
    def count(self) -> int: ...

    @abc.abstractmethod
    def state(self) -> Columns:
        """The numeric columns of every memory."""

    @abc.abstractmethod
    def unit_vectors(self) -> np.ndarray:
        """Every embedding, unit-normalised, float32, aligned with ``state()``."""

    def passages(self) -> Passages:
        """Every passage of the memories ``state()`` holds, their vectors unit (none of a forgotten memory).

        Read from the same in-process mirror as ``snapshot()``, but by a call
        of its own: a memory written in between may have passages here and no
        row there, so a caller keeps the ``Passages.of`` its rows. A backend
        without passages has none.
        """
        return Passages.empty(self.unit_vectors().shape[1])

    def warm(self) -> None:
        """Load what searches read from memory now, ahead of the first search.

        Here the columns and the matrix, and BM25's stems: splitting a summary
        stems every word it meets (``lexical`` keeps them), and a sample of
        summaries holds most of the words the first searches meet. A backend
        that keeps the terms counted (``term_counts``) stems them all instead.
        """
        state, _ = self.snapshot()
        if not len(state):
            return
        rows = np.random.default_rng(0).choice(len(state), size=min(len(state), 20_000), replace=False)
        ids = state.ids[np.sort(rows)].tolist()
        texts = self.contents(ids, [2] * len(ids))  # 2: SUMMARY
        lexical.counts(["warm"], [texts[i][0] for i in ids])

    #: The vector indexes this backend can search with (``set_vector_index``); "exact" scans every row.
    VECTOR_INDEXES: tuple[str, ...] = ("exact",)

    def vector_index(self) -> str:
        """What the store searches with for a query's nearest: "exact" (a scan) or an index's name."""
        return self.meta().get("vector_index", "exact")

    def set_vector_index(self, kind: str) -> str:
        """Keep ``kind`` as what the store searches with (for every process that opens it); returns it.

        Refused with a clear message for a kind this backend does not have.
        """
        name = str(kind).strip().lower()
        if name not in self.VECTOR_INDEXES:
            raise InvalidParameters(
                f"the vector index is one of {', '.join(self.VECTOR_INDEXES)} for this store, got {kind!r}."
            )
        if name != self.vector_index():
            self.set_meta({"vector_index": name})
        return name

    def held_index(self) -> Any:
        """The vector index this process holds now, if any (``lodviz.ivf.InvertedLists``)."""
        return None

    def kept_index(self) -> dict[str, Any] | None:
        """What the vector index kept beside the store says of itself (``covers``, ``lists``, ``nprobe``,
        ``recall``), read without loading it; None when none is kept."""
        return None

    def build_index(self, *, force: bool = False) -> Any:
        """Make the vector index the store asks for, if it has one to make; None otherwise."""
        return None

    def version(self) -> int | None:
        """A number that changes whenever this connection changes the store (rows, usage and so
        ``state()``'s ages and counts, floors, texts, conflicts, forgets), so results derived from it
        can be kept; None when the backend cannot tell (another process may write)."""
        return None

    def snapshot(self) -> tuple[Columns, np.ndarray]:
        """``state()`` and ``unit_vectors()`` of the same moment: rows that match.

        Two separate calls could straddle a write from another thread.
        """
        return self.state(), self.unit_vectors()

    #: True when ``similarities`` is approximate (a compact matrix): exact S comes from ``nearest`` only.
    approximate = False

    def similarities(self, query: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        """S of every row of ``vectors`` (a snapshot's) for ``query``; a backend with a compact
        matrix may answer approximately (``approximate``)."""
        return scoring.similarity(query, vectors)

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
        vectors = self.unit_vectors() if vectors is None else vectors
        # The scores go into the store's kept array (``ScanBuffer``): the rows' scores are copied out.
        with self._scan_buffer.take(len(vectors)) as out:
            sims = scoring.similarity(query, vectors, out=out)
            hidden = visible is not None and not visible.all()  # an auditor sees everything: no mask for it
            rows = selection.top_k(sims, k, among=visible if hidden else None)
            return rows, sims[rows]

    @functools.cached_property
    def _scan_buffer(self) -> ScanBuffer:
        return ScanBuffer()

    @abc.abstractmethod
    def touch(self, ids: Sequence[int], now: datetime, audit: AuditEvent | None) -> None:
        """Count a retrieval of ``ids`` at ``now``, with its audit line, atomically."""

    @abc.abstractmethod
    def set_floor(self, memory_id: int, floor: int, audit: AuditEvent) -> None: ...

    @abc.abstractmethod
    def set_layout(self, ids: Sequence[int] | np.ndarray, x: np.ndarray, y: np.ndarray) -> None: ...

    @abc.abstractmethod
    def forget(self, memory_id: int, audit: AuditEvent) -> None:
        """Erase a memory's texts, vector and passages for good, keeping its row and usage; audited."""

    # -- conflicts ------------------------------------------------------------
    @abc.abstractmethod
    def conflicts(
        self, ids: Sequence[int] | None = None, status: Sequence[str] | None = None, limit: int | None = None
    ) -> list[Conflict]:
        """Conflicts involving any of ``ids`` (all for None) in any of ``status``, newest first."""

    @abc.abstractmethod
    def ids_containing(self, text: str, limit: int = 10, within: Columns | None = None) -> list[int]:
        """Ids of live memories whose full text contains ``text`` (at most ``limit``), lowest first;
        with ``within``, only ids those columns hold."""

    # -- golden queries -------------------------------------------------------
    @abc.abstractmethod
    def golden(self, agent_id: str | None = None) -> list[Golden]: ...

    @abc.abstractmethod
    def add_golden(self, entries: Sequence[Golden], audit: AuditEvent) -> list[int]:
        """Store golden queries with their audit line, in one transaction; returns their ids."""

    @abc.abstractmethod
    def replace_open_conflicts(self, found: Sequence[tuple[int, int, float, str]], audit: AuditEvent) -> int:
        """Drop every open conflict and write ``found`` ((memory id, other id, similarity, reason)) instead,
        with its audit line, in one transaction; decided ones stay. Returns how many were dropped."""

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

    # -- tokens (lodviz.access) --------------------------------------------------
    def add_token(self, record: TokenRecord, audit: AuditEvent) -> None:
        """Keep a new token's record (its hash, never the token), with its audit line."""
        with self.atomic():
            self.write_table("tokens", [tuple(getattr(record, name) for name in TABLES["tokens"])])
            self.record(audit)

    @abc.abstractmethod
    def token(self, token_id: str) -> TokenRecord | None: ...

    def tokens(self) -> list[TokenRecord]:
        return [TokenRecord(*row) for batch in self.read_table("tokens") for row in batch]

    @abc.abstractmethod
    def revoke_token(self, token_id: str, when: datetime, audit: AuditEvent) -> bool:
        """Mark a token revoked (once); False if there is no such live token."""

    # -- copying a whole store (lodviz migrate) ---------------------------------
    @abc.abstractmethod
    def read_table(self, table: str, batch: int = 10_000) -> Iterator[list[tuple]]:
        """Every row of ``table`` (a key of ``TABLES``), in ``TABLE_ORDER``, in batches."""

    @abc.abstractmethod
    def write_table(self, table: str, rows: Sequence[tuple]) -> None:
        """Add ``rows`` of ``table`` as they are (ids kept): for a copy into an empty store."""

    @abc.abstractmethod
    def finish_copy(self) -> None:
        """After ``write_table``: new ids continue after the copied ones, caches start afresh."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def imported_history(written: Sequence[tuple[int | None, NewMemory]]) -> dict[str, Any]:
    """What a write brought with it from before the store existed: retrieval counts and tier floors.

    Kept in the write's audit line, so ``lodviz audit verify`` can account for
    every retrieval count and floor from the audit log alone. Both keys are
    always there, empty when the write brought nothing: their absence marks a
    write from before writes recorded it (a legacy write, which verify cannot check).
    """
    usage = {
        str(memory_id): [int(m.retrieval_count), m.last_retrieved_at.isoformat() if m.last_retrieved_at else None]
        for memory_id, m in written
        if memory_id is not None and (m.retrieval_count or m.last_retrieved_at)
    }
    floors = {str(memory_id): int(m.floor) for memory_id, m in written if memory_id is not None and m.floor}
    return {"imported_usage": usage, "imported_floors": floors}


def conflict_rows(ids: Sequence[int | None], links: Sequence[ConflictLink]) -> list[tuple[int, int, float, str]]:
    """The rows of a batch's conflict ``links`` once its memories have ``ids`` (None: skipped as a
    duplicate): (memory id, other id, similarity, reason), each pair once, and at most
    ``conflicts.MAX_LINKS`` per new memory (its most similar), so that no import, however many
    near-duplicates it holds, makes more than that many rows per memory."""
    from lodviz.conflicts import strongest

    def other_id(link: ConflictLink) -> int | None:
        return ids[link.other] if link.other_is_new else link.other

    unique: dict[tuple[int, int], ConflictLink] = {}
    for link in links:
        memory_id, other = ids[link.index], other_id(link)
        if memory_id is not None and other is not None and other != memory_id:
            unique.setdefault((int(memory_id), int(other)), link)
    pair_of = {id(link): pair for pair, link in unique.items()}
    return [(*pair_of[id(link)], float(link.similarity), link.reason) for link in strongest(unique.values())]


def passage_rows(written: Sequence[tuple[int, NewMemory]]) -> Passages:
    """The passages of a batch's new memories (each with its id), vectors as the embedder made them.

    Checked before anything is written: every span needs its vector.
    """
    owners, positions, spans, vectors = [], [], [], []
    for memory_id, m in written:
        if not m.passages:
            continue
        made = np.asarray(m.passage_vectors if m.passage_vectors is not None else np.zeros((0, 0)), dtype=np.float32)
        if made.ndim != 2 or len(made) != len(m.passages) or made.shape[1] != len(m.embedding):
            raise ValueError(f"memory {memory_id} has {len(m.passages)} passages and {made.shape[0] if made.ndim else 0} passage vectors of its dimension.")
        owners.append(np.full(len(m.passages), memory_id, dtype=np.int64))
        positions.append(np.arange(len(m.passages), dtype=np.int32))
        spans.append(np.asarray(m.passages, dtype=np.int64).reshape(-1, 2))
        vectors.append(made)
    if not owners:
        return Passages.empty(len(written[0][1].embedding) if written else 0)
    return Passages(np.concatenate(owners), np.concatenate(positions), np.concatenate(spans), np.vstack(vectors))


def portable_row(row: tuple, columns: Sequence[str]) -> tuple:
    """A row as ``TABLES`` speaks it, from either backend: aware UTC times, float32 embeddings, bytes."""
    out = []
    for name, value in zip(columns, row):
        if isinstance(value, datetime):
            value = utc(value)
        elif name == "embedding":
            value = np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            value = bytes(value)
        out.append(value)
    return tuple(out)
