"""The relational half of a store, written once for DuckDB and PostgreSQL.

``SQLStore`` holds every method whose SQL the two backends share: tokens,
golden queries, conflicts, the audit log, profiles, artifacts, the look-ups by
hash and by words, and the part of ``insert`` that writes a batch's conflict
links and its audit line; and what both do alike around their SQL: ``atomic``
(nested blocks join the outermost), the reads of the mirror (``state``,
``unit_vectors``, ``snapshot``, ``passages``) and a read-only open's check that no migration
is missing. A backend subclasses it and keeps what is its own
(DuckDB: Arrow loads, the journal, private files; PostgreSQL: COPY, HNSW,
advisory locks, the change counter), over a few hooks:

- ``PARAM``: how its driver marks a parameter; shared statements are written
  with ``?`` and ``_sql`` swaps them;
- ``NOW``: the SQL of the current moment as its time columns hold it;
- ``_run(sql, args)``: run one statement in its own dialect and fetch its rows,
  its driver's errors made one ``StoreError`` sentence;
- ``_transaction()`` and ``_write()``: the outermost transaction of ``atomic``
  (nested blocks join it), and what every writing transaction does first
  (PostgreSQL takes its change number);
- ``_load()``: the in-process mirror of the columns, the matrix and the
  passages (``lodviz.store.mirror``), brought up to date; ``state``,
  ``unit_vectors``, ``snapshot`` and ``passages`` read it;
- ``_in(column, type)``: "``column`` is one of an array parameter";
- ``_stored(when)``: a time as its columns take it.

Times. Out of the store, every ``datetime`` is aware UTC (``times.utc`` of what
the driver returns: DuckDB's naive UTC, PostgreSQL's aware); into it, whatever
the caller gave, converted by ``_stored``.

``within``: the look-ups that answer ids (``ids_with_words``,
``ids_containing``) can be asked for only the ids that given columns hold, so
that a caller indexing columns it took earlier never meets a memory another
process (or thread) committed since.
"""

from __future__ import annotations

import abc
import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np

from lodviz.access import TokenRecord, current_face
from lodviz.errors import StoreError
from lodviz.store.base import (
    TABLES,
    AuditEvent,
    Columns,
    Conflict,
    ConflictLink,
    Golden,
    MemoryRecord,
    NewMemory,
    Passages,
    Store,
    conflict_rows,
    dumps,
    imported_history,
    portable_row,
)
from lodviz.store.migrations import Migrations
from lodviz.store.mirror import Mirror
from lodviz.times import utc

#: What a forgotten memory's texts become.
FORGOTTEN = "(forgotten)"
#: A forget closes the memory's open conflicts and erases every one's reason, which quotes its words
#: ("3x instead of 2x"); parameters: FORGOTTEN, the memory's id twice.
FORGET_CONFLICTS = (
    "UPDATE conflicts SET status = CASE WHEN status = 'open' THEN 'forgotten' ELSE status END, reason = ? "
    "WHERE memory_id = ? OR other_id = ?"
)
#: A forget takes the memory's passages with its texts: their spans and vectors say what it held.
FORGET_PASSAGES = "DELETE FROM passages WHERE memory_id = ?"
#: The passages table's columns, as ``Passages`` and ``read_table`` speak them.
PASSAGE_COLUMNS = ", ".join(TABLES["passages"])
#: The columns of a ``MemoryRecord`` read from ``memories m`` (usage comes apart: see ``record``).
RECORD_COLUMNS = (
    "m.id, m.text, m.summary, m.headline, m.embedding_model, m.content_hash, m.created_at, "
    "m.floor, m.agent_id, m.visibility, m.kind, m.source, m.metadata, m.layout_x, m.layout_y, m.forgotten_at"
)
#: A profile's settings, as ``profiles`` keeps them.
PROFILE_FIELDS = ("alpha", "lam", "theta1", "theta2", "theta3", "k", "budget")


def utcnow() -> datetime:
    return datetime.now(UTC)


def aware(value: datetime | None) -> datetime | None:
    """A time the driver returned, as the store's interface speaks it: aware UTC."""
    return None if value is None else utc(value)


def record(row: Sequence[Any], last_retrieved_at: datetime | None, retrieval_count: int) -> MemoryRecord:
    """A memory from a ``RECORD_COLUMNS`` row and its usage totals."""
    return MemoryRecord(
        id=int(row[0]),
        text=row[1],
        summary=row[2],
        headline=row[3],
        embedding_model=row[4],
        content_hash=row[5],
        created_at=utc(row[6]),
        last_retrieved_at=aware(last_retrieved_at),
        retrieval_count=int(retrieval_count),
        floor=int(row[7]),
        agent_id=row[8],
        visibility=row[9],
        kind=row[10],
        source=row[11],
        metadata=json.loads(row[12]),
        x=row[13],
        y=row[14],
        forgotten=row[15] is not None,
    )


def held(ids: list[int], within: Columns | None) -> list[int]:
    """``ids`` that ``within`` holds (all of them for None), in their order."""
    if within is None or not ids:
        return ids
    known = within.ids
    wanted = np.asarray(ids, dtype=np.int64)
    at = np.minimum(np.searchsorted(known, wanted), max(len(known) - 1, 0))
    ok = known[at] == wanted if len(known) else np.zeros(len(wanted), dtype=bool)
    return [i for i, keep in zip(ids, ok.tolist()) if keep]


class SQLStore(Store):
    """A store whose tables are SQL: the methods both backends share (see the module docstring)."""

    PARAM = "?"
    NOW = "now()"
    MIGRATIONS: Migrations  # the backend's schema changes
    _lock: threading.RLock
    _depth: int  # how deep in atomic() blocks this connection is

    # -- hooks ----------------------------------------------------------------------

    @abc.abstractmethod
    def _run(self, sql: str, args: Sequence[Any] | None = None) -> list[tuple]:
        """One statement in the backend's own dialect, its rows fetched (none for a statement without)."""

    @abc.abstractmethod
    def _transaction(self) -> AbstractContextManager[None]:
        """The outermost ``atomic`` block's transaction: begun, then committed, or rolled back on any exception."""

    @abc.abstractmethod
    def _load(self) -> Mirror:
        """The mirror of the columns and the matrix, loaded on first use and brought up to date."""

    def _sql(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        """One shared statement (parameters marked ``?``, the moment ``{now}``)."""
        sql = sql.replace("{now}", self.NOW)
        return self._run(sql if self.PARAM == "?" else sql.replace("?", self.PARAM), list(args))

    def _in(self, column: str, sql_type: str) -> str:
        """``column`` is one of the values of an array parameter (of ``sql_type``)."""
        return f"{column} = ANY(?)"

    def _stored(self, when: datetime) -> datetime:
        """``when`` as the backend's time columns take it."""
        return utc(when)

    def _write(self) -> None:
        """Called first in every writing transaction (inside ``atomic``)."""

    def _settle(self) -> None:
        """Bring the tables up to date before a read of the audit log or of usage."""

    def _any_in_conflicts(self, ids: Sequence[int]) -> bool:
        """False only if none of ``ids`` is in a conflict (a backend may know without asking)."""
        return True

    def _conflicts_changed(self) -> None:
        """The conflicts table was written (a backend may keep facts about it)."""

    def _unapplied_events(self) -> list[AuditEvent]:
        """Audit lines acknowledged but not yet in the table (DuckDB's journal, read-only), oldest first."""
        return []

    def _profile_rows(self) -> dict[str, dict[str, Any]]:
        """Every profile by agent (callers hold the lock and copy what they hand out)."""
        rows = self._run(f"SELECT agent_id, {', '.join(PROFILE_FIELDS)} FROM profiles ORDER BY agent_id")
        return {r[0]: dict(zip(PROFILE_FIELDS, r[1:])) for r in rows}

    def _profiles_changed(self) -> None:
        """A profile was written (inside the transaction, under the lock)."""

    def _meta_changed(self) -> None:
        """``meta`` was written (inside the transaction, under the lock)."""

    def _insert_links(self, found: list[tuple[int, int, float, str]]) -> None:
        """Write a batch's conflict rows (``conflict_rows``), detected now, one statement for all."""
        self._sql(
            "INSERT INTO conflicts (memory_id, other_id, similarity, reason, detected_at) "
            "SELECT l.*, {now} FROM unnest(?::bigint[], ?::bigint[], ?::float8[], ?::text[]) AS l "
            "ON CONFLICT DO NOTHING",
            [[f[0] for f in found], [f[1] for f in found], [f[2] for f in found], [f[3] for f in found]],
        )

    def _require_migrations(self, applied: Iterable[str]) -> None:
        """Refuse a store opened read-only (so not brought forward) that lacks one of the backend's ``MIGRATIONS``."""
        missing = self.MIGRATIONS.missing(applied)
        if missing:
            raise StoreError(f"{self.path} needs migration {missing[0]}; open it once without read-only.")

    # -- transactions and the mirror ----------------------------------------------------

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One transaction: everything inside is written, or (on any exception) nothing is.

        Nested blocks join the outermost one, so a method that is atomic on its
        own is atomic as part of a larger change too.
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            with self._transaction():
                self._depth = 1
                try:
                    yield
                finally:
                    self._depth = 0

    def state(self) -> Columns:
        return self._load().state()

    def unit_vectors(self) -> np.ndarray:
        return self._load().vectors()

    def snapshot(self) -> tuple[Columns, np.ndarray]:
        with self._lock:
            mirror = self._load()
            return mirror.state(), mirror.vectors()

    def passages(self) -> Passages:
        with self._lock:
            mirror = self._load()
            return mirror.passages.passages(mirror.matrix.dim)

    # -- what both backends write alike ----------------------------------------------

    def _insert_audit(self, event: AuditEvent) -> None:
        event.details.setdefault("face", current_face())
        self._write()
        self._sql(
            "INSERT INTO audit (occurred_at, action, actor, agent_id, memory_id, query, details) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [self._stored(event.at or utcnow()), event.action, event.actor, event.agent_id, event.memory_id,
             event.query, dumps(event.details)],
        )

    def _links_and_audit(
        self, ids: list[int | None], fresh: list[int], memories: Sequence[NewMemory], links: Sequence[ConflictLink],
        audit: AuditEvent | None,
    ) -> None:
        """The tail of ``insert`` (inside its transaction): the batch's conflict links and its audit line."""
        found = conflict_rows(ids, links)  # at most conflicts.MAX_LINKS per new memory
        if found:
            self._insert_links(found)
            self._conflicts_changed()
        if audit is not None:
            if fresh:
                audit.details.setdefault("ids", [ids[i] for i in fresh])
                if found:
                    audit.details["conflicts"] = [[a, b] for a, b, _, _ in found]
                audit.details.update(imported_history([(ids[i], memories[i]) for i in fresh]))
            self._insert_audit(audit)

    def _fresh(self, memories: Sequence[NewMemory]) -> list[int]:
        """Which of a batch to write: the first of each content hash that is not stored yet (their indexes)."""
        existing = self.existing_hashes(m.content_hash for m in memories)
        seen: set[str] = set()
        fresh: list[int] = []
        for i, m in enumerate(memories):
            if m.content_hash in existing or m.content_hash in seen:
                continue
            seen.add(m.content_hash)
            fresh.append(i)
        return fresh

    # -- meta and artifacts ----------------------------------------------------------

    def set_meta(self, values: dict[str, str]) -> None:
        with self.atomic():
            self._write()
            for key, value in values.items():
                self._sql("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [key, str(value)])
            self._meta_changed()

    def artifact(self, name: str) -> bytes | None:
        with self._lock:
            rows = self._sql("SELECT data FROM artifacts WHERE name = ?", [name])
        return bytes(rows[0][0]) if rows else None

    def set_artifact(self, name: str, data: bytes) -> None:
        with self.atomic():
            self._write()
            self._sql("INSERT INTO artifacts VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET data = excluded.data", [name, data])

    # -- memories ----------------------------------------------------------------------

    def existing_hashes(self, hashes: Iterable[str]) -> set[str]:
        hashes = list(hashes)
        if not hashes:
            return set()
        with self._lock:
            return {r[0] for r in self._sql(f"SELECT content_hash FROM memories WHERE {self._in('content_hash', 'VARCHAR')}", [hashes])}

    def id_of_hash(self, content_hash: str) -> int | None:
        with self._lock:
            rows = self._sql("SELECT id FROM memories WHERE content_hash = ?", [content_hash])
        return int(rows[0][0]) if rows else None

    def count(self) -> int:
        with self._lock:
            return int(self._sql("SELECT count(*) FROM memories WHERE forgotten_at IS NULL")[0][0])

    def metadata(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        with self._lock:
            rows = self._sql(f"SELECT id, metadata FROM memories WHERE {self._in('id', 'BIGINT')}", [ids])
        return {int(i): (json.loads(m) if isinstance(m, str) else dict(m or {})) for i, m in rows}

    def _below(self, within: Columns | None) -> tuple[str, list[Any]]:
        """A clause that keeps ids no higher than ``within`` holds (the rest is filtered by ``held``)."""
        if within is None:
            return "", []
        return " AND id <= ?", [int(within.ids[-1]) if len(within.ids) else 0]

    def ids_with_words(self, words: Sequence[str], limit: int, within: Columns | None = None) -> list[int]:
        if not words:
            return []
        escaped = ["%" + w.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%" for w in words]
        where = " AND ".join("text ILIKE ? ESCAPE '\\'" for _ in escaped)
        below, bound = self._below(within)
        with self._lock:
            rows = self._sql(
                f"SELECT id FROM memories WHERE forgotten_at IS NULL AND {where}{below} ORDER BY created_at DESC, id DESC LIMIT ?",
                [*escaped, *bound, int(limit)],
            )
        return held([int(r[0]) for r in rows], within)

    def ids_containing(self, text: str, limit: int = 10, within: Columns | None = None) -> list[int]:
        below, bound = self._below(within)
        with self._lock:
            rows = self._sql(
                f"SELECT id FROM memories WHERE forgotten_at IS NULL AND strpos(text, ?) > 0{below} ORDER BY id LIMIT ?",
                [text, *bound, int(limit)],
            )
        return held([int(r[0]) for r in rows], within)

    # -- conflicts ------------------------------------------------------------------------

    def conflicts(
        self, ids: Sequence[int] | None = None, status: Sequence[str] | None = None, limit: int | None = None
    ) -> list[Conflict]:
        if ids is not None and not self._any_in_conflicts(ids):
            return []
        clauses: list[str] = []
        args: list[Any] = []
        if ids is not None:
            clauses.append(f"({self._in('memory_id', 'BIGINT')} OR {self._in('other_id', 'BIGINT')})")
            args += [[int(i) for i in ids], [int(i) for i in ids]]
        if status:
            clauses.append(self._in("status", "VARCHAR"))
            args.append(list(status))
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        tail = f" LIMIT {int(limit)}" if limit else ""
        with self._lock:
            rows = self._sql(
                "SELECT memory_id, other_id, similarity, reason, detected_at, status, superseded_id, resolved_by, "
                f"resolved_at, note FROM conflicts {where} ORDER BY detected_at DESC, memory_id DESC{tail}",
                args,
            )
        return [
            Conflict(
                memory_id=r[0], other_id=r[1], similarity=r[2], reason=r[3], detected_at=aware(r[4]), status=r[5],
                superseded_id=r[6], resolved_by=r[7], resolved_at=aware(r[8]), note=r[9],
            )
            for r in rows
        ]

    def replace_open_conflicts(self, found: Sequence[tuple[int, int, float, str]], audit: AuditEvent) -> int:
        with self.atomic():
            self._write()
            removed = len(self._sql("DELETE FROM conflicts WHERE status = 'open' RETURNING 1"))
            if found:
                self._insert_links(list(found))  # a pair an auditor decided stays as decided
            self._conflicts_changed()
            self._insert_audit(audit)
        return removed

    def resolve_conflict(
        self, memory_id: int, other_id: int, status: str, superseded_id: int | None, audit: AuditEvent
    ) -> None:
        with self.atomic():
            self._write()
            updated = self._sql(
                "UPDATE conflicts SET status = ?, superseded_id = ?, resolved_by = ?, resolved_at = {now}, note = ? "
                "WHERE memory_id = ? AND other_id = ? RETURNING 1",
                [status, superseded_id, audit.actor, audit.details.get("reason"), int(memory_id), int(other_id)],
            )
            if not updated:
                raise StoreError(f"no conflict between memories {memory_id} and {other_id}.")
            self._insert_audit(audit)

    # -- golden queries -------------------------------------------------------------------

    def golden(self, agent_id: str | None = None) -> list[Golden]:
        with self._lock:
            rows = self._sql(
                "SELECT id, agent_id, query, needs, note, created_at, created_by FROM golden "
                + ("WHERE agent_id = ? " if agent_id is not None else "")
                + "ORDER BY id",
                [agent_id] if agent_id is not None else [],
            )
        return [
            Golden(id=r[0], agent_id=r[1], query=r[2], needs=json.loads(r[3]), note=r[4], created_at=aware(r[5]), created_by=r[6])
            for r in rows
        ]

    def add_golden(self, entries: Sequence[Golden], audit: AuditEvent) -> list[int]:
        ids = []
        with self.atomic():
            self._write()
            for g in entries:
                ids.append(int(self._sql(
                    "INSERT INTO golden (agent_id, query, needs, note, created_at, created_by) "
                    "VALUES (?, ?, ?, ?, {now}, ?) RETURNING id",
                    [g.agent_id, g.query, json.dumps(list(g.needs)), g.note, audit.actor],
                )[0][0]))
            audit.details.setdefault("golden_ids", ids)
            self._insert_audit(audit)
        return ids

    # -- audit and profiles -------------------------------------------------------------

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
        clauses: list[str] = []
        args: list[Any] = []
        for clause, value in (
            ("id > ?", None if after_id is None else int(after_id)),
            ("agent_id = ?", agent_id),
            (self._in("action", "VARCHAR"), list(actions) if actions else None),
            ("occurred_at >= ?", None if since is None else self._stored(since)),
            ("occurred_at <= ?", None if until is None else self._stored(until)),
            ("memory_id = ?", None if memory_id is None else int(memory_id)),
        ):
            if value is not None:
                clauses.append(clause)
                args.append(value)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._lock:
            self._settle()
            # Lines acknowledged but not yet in the table come after every row of it.
            extra = [
                e for e in reversed(self._unapplied_events())
                if (after_id is None or (e.id or 0) > after_id) and (agent_id is None or e.agent_id == agent_id)
                and (not actions or e.action in actions) and (memory_id is None or e.memory_id == memory_id)
                and (since is None or (e.at is not None and e.at >= utc(since)))
                and (until is None or (e.at is not None and e.at <= utc(until)))
            ][: int(limit)]
            rows = self._sql(
                f"SELECT id, occurred_at, action, actor, agent_id, memory_id, query, details FROM audit {where} "
                "ORDER BY id DESC LIMIT ?",
                [*args, int(limit) - len(extra)],
            )
        return extra + [
            AuditEvent(id=r[0], at=aware(r[1]), action=r[2], actor=r[3], agent_id=r[4], memory_id=r[5], query=r[6],
                       details=json.loads(r[7]))
            for r in rows
        ]

    def record(self, event: AuditEvent) -> None:
        with self.atomic():
            self._insert_audit(event)

    def profile(self, agent_id: str) -> dict[str, Any] | None:
        with self._lock:
            values = self._profile_rows().get(agent_id)
            return dict(values) if values is not None else None

    def profiles(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {agent: dict(values) for agent, values in self._profile_rows().items()}

    def set_profile(self, agent_id: str, values: dict[str, Any], audit: AuditEvent) -> None:
        fields = ", ".join(PROFILE_FIELDS)
        updates = ", ".join(f"{f} = excluded.{f}" for f in (*PROFILE_FIELDS, "updated_at"))
        with self.atomic():
            self._write()
            self._sql(
                f"INSERT INTO profiles (agent_id, {fields}, updated_at) VALUES (?, {', '.join('?' for _ in PROFILE_FIELDS)}, {{now}}) "
                f"ON CONFLICT (agent_id) DO UPDATE SET {updates}",
                [agent_id, *(values[f] for f in PROFILE_FIELDS)],
            )
            self._insert_audit(audit)
            self._profiles_changed()

    # -- tokens ---------------------------------------------------------------------------

    def token(self, token_id: str) -> TokenRecord | None:
        with self._lock:
            rows = self._sql(f"SELECT {', '.join(TABLES['tokens'])} FROM tokens WHERE id = ?", [token_id])
        return TokenRecord(*portable_row(rows[0], TABLES["tokens"])) if rows else None

    def revoke_token(self, token_id: str, when: datetime, audit: AuditEvent) -> bool:
        with self.atomic():
            self._write()
            done = self._sql(
                "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING 1", [self._stored(when), token_id]
            )
            if done:
                self._insert_audit(audit)
        return bool(done)


__all__ = [
    "SQLStore", "FORGOTTEN", "FORGET_PASSAGES", "PASSAGE_COLUMNS", "RECORD_COLUMNS", "PROFILE_FIELDS", "record", "aware",
    "utcnow", "held",
]
