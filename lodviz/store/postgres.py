"""A store in PostgreSQL with pgvector: one store for a fleet of processes on many machines.

The same tables as the DuckDB store (memories, usage, the append-only audit
log, profiles, meta, artifacts, conflicts, golden queries), with numbered
migrations recorded in ``_migrations`` and applied under an advisory lock, so
two processes opening an old schema at once migrate it once.

Many writers. Every writing transaction first bumps the one row of
``changes`` (``n = n + 1``) and stamps the rows it writes with that number.
The row lock makes writers take turns in commit order, so no increment of a
retrieval count is lost (``usage`` is upserted with ``count + k``), a
promotion (``memories.floor``) and a touch (``usage``) never overwrite each
other, and no two writers deadlock. A reader keeps the numeric columns and
the unit embedding matrix in memory, as the DuckDB store does; before it
answers it reads ``changes.n`` (one indexed row) and, if another process
wrote since, reads back only the rows stamped after what it has. So a
process sees every other process's committed writes at its next read: the
bound is one round trip, not a polling interval.

Search. Below ``index_from`` memories (default 1,000,000; ``$LODVIZ_PG_INDEX_FROM``) the k nearest come
from an exact scan of the in-memory matrix, which measured faster and exact at
20k and 100k; from there on from pgvector's HNSW index (cosine), over-fetched and
filtered by what the agent may see, falling back to the exact scan when the
index returns too few. ``last_nearest`` says which one answered.

Credentials come from the URL, the standard ``PG*`` variables or a service
file (libpq reads them); ``path`` and every message carry the URL with its
password removed.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from lodviz.errors import StoreError
from lodviz.store.base import (
    TABLE_ORDER,
    TABLES,
    AuditEvent,
    Columns,
    ConflictLink,
    MemoryRecord,
    NewMemory,
    Passages,
    dumps,
    passage_rows,
    portable_row,
)
from lodviz.store.migrations import Migrations, Target
from lodviz.store.mirror import Mirror, code_agents
from lodviz.store.sql import FORGET_CONFLICTS, FORGET_PASSAGES, FORGOTTEN, PASSAGE_COLUMNS, RECORD_COLUMNS, SQLStore, record
from lodviz.times import utc

log = logging.getLogger("lodviz.store.postgres")

URL_SCHEMES = ("postgresql://", "postgres://")
#: Advisory lock key for migrations ("lodviz" in ASCII, as a number).
_MIGRATION_LOCK = 0x6C6F6476697A


def is_postgres_url(location: object) -> bool:
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


def redact(url: str) -> str:
    """``url`` without its password: what may appear in a log line, a message or ``ps``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://(unparsable URL)"
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    user = parts.username or ""
    return urlunsplit((parts.scheme, f"{user}:***@{host}", parts.path, parts.query, parts.fragment))


# -- migrations ---------------------------------------------------------------

MIGRATIONS = Migrations()


@MIGRATIONS
def m001_initial(cur: Any) -> None:
    cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
    cur.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    cur.execute("CREATE TABLE changes (id INTEGER PRIMARY KEY, n BIGINT NOT NULL)")
    cur.execute("INSERT INTO changes VALUES (1, 0)")
    cur.execute("CREATE SEQUENCE memory_id")
    cur.execute(
        """
        CREATE TABLE memories (
            id BIGINT PRIMARY KEY,
            text TEXT NOT NULL,
            summary TEXT NOT NULL,
            headline TEXT NOT NULL,
            embedding vector NOT NULL,
            embedding_model TEXT NOT NULL,
            content_hash TEXT NOT NULL UNIQUE,
            created_at TIMESTAMPTZ NOT NULL,
            floor SMALLINT NOT NULL DEFAULT 0,
            agent_id TEXT NOT NULL,
            visibility TEXT NOT NULL,
            kind TEXT NOT NULL,
            source TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            layout_x DOUBLE PRECISION,
            layout_y DOUBLE PRECISION,
            forgotten_at TIMESTAMPTZ,
            change_seq BIGINT NOT NULL
        )
        """
    )
    cur.execute(
        "CREATE TABLE usage (memory_id BIGINT PRIMARY KEY, retrieval_count INTEGER NOT NULL, "
        "last_retrieved_at TIMESTAMPTZ, change_seq BIGINT NOT NULL)"
    )
    cur.execute(
        """
        CREATE TABLE audit (
            id BIGSERIAL PRIMARY KEY,
            occurred_at TIMESTAMPTZ NOT NULL,
            action TEXT NOT NULL,
            actor TEXT NOT NULL,
            agent_id TEXT,
            memory_id BIGINT,
            query TEXT,
            details TEXT NOT NULL DEFAULT '{}'
        )
        """
    )
    cur.execute(
        """
        CREATE TABLE profiles (
            agent_id TEXT PRIMARY KEY,
            alpha DOUBLE PRECISION NOT NULL,
            lam DOUBLE PRECISION NOT NULL,
            theta1 DOUBLE PRECISION NOT NULL,
            theta2 DOUBLE PRECISION NOT NULL,
            theta3 DOUBLE PRECISION NOT NULL,
            k INTEGER NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL
        )
        """
    )
    cur.execute("CREATE TABLE artifacts (name TEXT PRIMARY KEY, data BYTEA NOT NULL)")
    cur.execute(
        """
        CREATE TABLE conflicts (
            memory_id BIGINT NOT NULL,
            other_id BIGINT NOT NULL,
            similarity DOUBLE PRECISION NOT NULL,
            reason TEXT NOT NULL,
            detected_at TIMESTAMPTZ NOT NULL,
            status TEXT NOT NULL DEFAULT 'open',
            superseded_id BIGINT,
            resolved_by TEXT,
            resolved_at TIMESTAMPTZ,
            note TEXT,
            PRIMARY KEY (memory_id, other_id)
        )
        """
    )
    cur.execute(
        """
        CREATE TABLE golden (
            id BIGSERIAL PRIMARY KEY,
            agent_id TEXT,
            query TEXT NOT NULL,
            needs TEXT NOT NULL,
            note TEXT,
            created_at TIMESTAMPTZ NOT NULL,
            created_by TEXT NOT NULL
        )
        """
    )
    # The relational indexes the non-semantic modes and the readers use.
    for sql in (
        "CREATE INDEX memories_created_at ON memories (created_at)",
        "CREATE INDEX memories_agent ON memories (agent_id)",
        "CREATE INDEX memories_floor ON memories (floor) WHERE floor > 0",
        "CREATE INDEX memories_change_seq ON memories (change_seq)",
        "CREATE INDEX usage_last_retrieved ON usage (last_retrieved_at)",
        "CREATE INDEX usage_count ON usage (retrieval_count)",
        "CREATE INDEX usage_change_seq ON usage (change_seq)",
        "CREATE INDEX audit_occurred_at ON audit (occurred_at)",
        "CREATE INDEX audit_agent ON audit (agent_id)",
        "CREATE INDEX audit_action ON audit (action)",
        "CREATE INDEX audit_memory ON audit (memory_id)",
    ):
        cur.execute(sql)
    # The audit log is append-only: no UPDATE or DELETE through any session.
    cur.execute(
        "CREATE FUNCTION audit_is_append_only() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'the lodviz audit log is append-only'; END $$"
    )
    cur.execute(
        "CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit "
        "FOR EACH ROW EXECUTE FUNCTION audit_is_append_only()"
    )


@MIGRATIONS
def m002_tokens(cur: Any) -> None:
    # Who may do what (lodviz.access): a token's id, identity, role and hash; never the token.
    cur.execute(
        "CREATE TABLE tokens (id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL, agent_id TEXT, "
        "secret_sha256 TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL, created_by TEXT NOT NULL, revoked_at TIMESTAMPTZ)"
    )


@MIGRATIONS
def m003_audit_no_truncate(cur: Any) -> None:
    # TRUNCATE fires no row trigger: the append-only rule needs a statement trigger of its own.
    cur.execute(
        "CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit "
        "FOR EACH STATEMENT EXECUTE FUNCTION audit_is_append_only()"
    )


@MIGRATIONS
def m004_passages(cur: Any) -> None:
    # A long memory's passages (lodviz.passages): spans of its full text, each embedded like a memory.
    # The key finds a memory's passages: a reader loads those of the ids its mirror merges, a forget deletes them.
    cur.execute(
        "CREATE TABLE passages (memory_id BIGINT NOT NULL, position INTEGER NOT NULL, start BIGINT NOT NULL, "
        "stop BIGINT NOT NULL, embedding vector NOT NULL, PRIMARY KEY (memory_id, position))"
    )


@MIGRATIONS
def m005_profile_budget(cur: Any) -> None:
    # The tokens an agent's search returns unless it asks otherwise; NULL: the default (params.DEFAULT_BUDGET).
    cur.execute("ALTER TABLE profiles ADD COLUMN budget INTEGER")


def apply_migrations(con: Any) -> list[str]:
    """Apply pending migrations in order, once, whoever else opens the store now: one transaction
    under an advisory lock."""

    @contextmanager
    def whole() -> Iterator[None]:
        with con.transaction():
            con.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATION_LOCK])
            yield

    return MIGRATIONS.apply(Target(
        con, lambda sql, args: _fetch(con.execute(sql, args or None)),
        table="CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)",
        record="INSERT INTO _migrations VALUES (%s, now())", whole=whole,
    ))


def _fetch(cur: Any) -> list[tuple]:
    return cur.fetchall() if cur.description is not None else []


# -- the store ------------------------------------------------------------------

_STATE_COLUMNS = (
    "m.id, extract(epoch FROM m.created_at)::float8, extract(epoch FROM u.last_retrieved_at)::float8, "
    "coalesce(u.retrieval_count, 0), m.floor, m.agent_id, m.visibility = 'shared', m.kind, m.layout_x, m.layout_y, "
    "length(m.text), length(m.summary), length(m.headline), m.forgotten_at IS NOT NULL"
)


class PostgresStore(SQLStore):
    """A store in a PostgreSQL database with the ``vector`` extension."""

    #: From this many memories on, search asks the HNSW index instead of scanning
    #: (at 20k and 100k the scan was faster and exact: docs/postgres.md).
    INDEX_FROM = 1_000_000
    #: How many more neighbours than asked the index returns, for the visibility filter.
    OVERFETCH = 4
    PARAM = "%s"
    MIGRATIONS = MIGRATIONS

    def __init__(self, url: str, *, read_only: bool = False, index_from: int | None = None) -> None:
        try:
            import psycopg
            from pgvector.psycopg import register_vector
        except ImportError:  # pragma: no cover - an install without the extra
            raise StoreError("PostgreSQL stores need psycopg and pgvector: pip install 'lodviz[postgres]'.") from None
        self.path = redact(url)
        self.read_only = read_only
        if index_from is None:
            setting = os.environ.get("LODVIZ_PG_INDEX_FROM", "")
            index_from = int(setting) if setting.isdigit() else self.INDEX_FROM
        self.index_from = int(index_from)
        self.last_nearest = "scan"
        self._psycopg = psycopg
        try:
            self._con = psycopg.connect(url, autocommit=True, application_name="lodviz")
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {self.path}: {_first_line(exc, url)}") from None
        self._lock = threading.RLock()
        self._depth = 0
        self._stamp: int | None = None  # this transaction's change number, once it wrote
        try:
            if read_only:
                self._check_schema()
            else:
                apply_migrations(self._con)
            register_vector(self._con)
        except psycopg.Error as exc:
            self._con.close()
            raise StoreError(f"{self.path} is not a lodviz store: {_first_line(exc, url)}") from None
        self._url = url
        self._mirror: Mirror | None = None
        self._seen = -1  # the change number the in-memory copy reflects
        self._dim: int | None = None
        self._index_dim: int | None = None

    def _check_schema(self) -> None:
        try:
            rows = self._con.execute("SELECT name FROM _migrations").fetchall()
        except self._psycopg.Error:
            raise StoreError(f"{self.path} is not a lodviz store; open it once without read-only.") from None
        self._require_migrations(r[0] for r in rows)

    # -- transactions -----------------------------------------------------------

    def _run(self, sql: str, args: Sequence[Any] | None = None) -> list[tuple]:
        try:
            cur = self._con.execute(sql, args)
            return cur.fetchall() if cur.description is not None else []
        except self._psycopg.Error as exc:
            raise StoreError(f"{self.path}: {_first_line(exc, self._url)}") from None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        if self.read_only:
            raise StoreError(f"{self.path} is open read-only.")
        with self._con.transaction():
            try:
                yield
            finally:
                self._stamp = None

    def _write(self) -> None:
        self._change()

    def _change(self) -> int:
        """This transaction's change number (taking the writers' turn on first use)."""
        if self._stamp is None:
            self._stamp = int(self._run("UPDATE changes SET n = n + 1 WHERE id = 1 RETURNING n")[0][0])
        return self._stamp

    # -- meta and artifacts -----------------------------------------------------

    def meta(self) -> dict[str, str]:
        with self._lock:
            return {str(k): str(v) for k, v in self._run("SELECT key, value FROM meta")}

    # -- memories ----------------------------------------------------------------

    def insert(
        self, memories: Sequence[NewMemory], audit: AuditEvent | None, links: Sequence[ConflictLink] = ()
    ) -> list[int | None]:
        ids: list[int | None] = [None] * len(memories)
        with self.atomic():
            stamp = self._change()  # writers take turns from here: the hash check below is not raced
            fresh = self._fresh(memories)
            if fresh:
                new_ids = [int(r[0]) for r in self._run("SELECT nextval('memory_id') FROM generate_series(1, %s)", [len(fresh)])]
                with self._con.cursor().copy(
                    "COPY memories (id, text, summary, headline, embedding, embedding_model, content_hash, created_at, floor, "
                    "agent_id, visibility, kind, source, metadata, change_seq) FROM STDIN"
                ) as copy:
                    for memory_id, i in zip(new_ids, fresh):
                        m = memories[i]
                        ids[i] = memory_id
                        copy.write_row((
                            memory_id, m.text, m.summary, m.headline, np.asarray(m.embedding, dtype=np.float32),
                            m.embedding_model, m.content_hash, utc(m.created_at), int(m.floor), m.agent_id, m.visibility,
                            m.kind, m.source, dumps(m.metadata), stamp,
                        ))
                passages = passage_rows([(int(ids[i] or 0), memories[i]) for i in fresh])
                if len(passages):
                    with self._con.cursor().copy(f"COPY passages ({PASSAGE_COLUMNS}) FROM STDIN") as copy:
                        for row in zip(passages.owner.tolist(), passages.position.tolist(), passages.spans.tolist(), passages.vectors):
                            copy.write_row((row[0], row[1], row[2][0], row[2][1], row[3]))
                used = [(ids[i], memories[i]) for i in fresh if memories[i].retrieval_count or memories[i].last_retrieved_at]
                if used:  # one statement for the batch's usage, not one per row
                    self._run(
                        "INSERT INTO usage SELECT u.*, %s FROM unnest(%s::bigint[], %s::int[], %s::timestamptz[]) AS u",
                        [
                            stamp, [used_id for used_id, _ in used], [int(m.retrieval_count) for _, m in used],
                            [utc(m.last_retrieved_at) if m.last_retrieved_at else None for _, m in used],
                        ],
                    )
            self._links_and_audit(ids, fresh, memories, links, audit)
        if fresh:
            self._ensure_index(len(memories[fresh[0]].embedding))
        return ids

    def _ensure_index(self, dim: int) -> None:
        """The HNSW index over the embeddings of this store's dimension (built once)."""
        if self._index_dim == dim or self.read_only:
            return
        with self._lock:
            self._run("SELECT pg_advisory_lock(%s)", [_MIGRATION_LOCK + 1])
            try:
                self._run(
                    f"CREATE INDEX IF NOT EXISTS memories_embedding_hnsw_{dim} ON memories "
                    f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE forgotten_at IS NULL"
                )
            finally:
                self._run("SELECT pg_advisory_unlock(%s)", [_MIGRATION_LOCK + 1])
            self._index_dim = dim

    def get(self, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        with self._lock:
            rows = self._run(
                f"SELECT {RECORD_COLUMNS}, u.last_retrieved_at, coalesce(u.retrieval_count, 0) FROM memories m LEFT JOIN usage u ON u.memory_id = m.id WHERE m.id = ANY(%s)", [ids]
            )
        return {int(r[0]): record(r[:16], *r[16:]) for r in rows}

    _TIER_COLUMN = {1: "headline", 2: "summary", 3: "text"}

    def contents(self, ids: Sequence[int] | np.ndarray, tiers: Sequence[int] | np.ndarray) -> dict[int, tuple[str, str | None]]:
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        with self._lock:
            rows = self._run("SELECT id, headline, summary, text, source FROM memories WHERE id = ANY(%s)", [ids])
        by_id = {int(r[0]): r for r in rows}
        out: dict[int, tuple[str, str | None]] = {}
        for memory_id, tier in zip(ids, tiers):
            row = by_id.get(memory_id)
            if row is None:
                raise StoreError(f"no memory with id {memory_id}.")
            out[memory_id] = (row[min(max(int(tier), 1), 3)], row[4])
        return out

    # -- the in-memory copy --------------------------------------------------------

    def _load(self) -> Mirror:
        """The mirror (``lodviz.store.mirror``), brought up to the latest committed change of any process."""
        with self._lock:
            if self._depth and self._mirror is not None:
                return self._mirror  # inside a transaction: what it started from
            latest = int(self._run("SELECT n FROM changes WHERE id = 1")[0][0])
            if self._mirror is not None and latest == self._seen:
                return self._mirror
            since = self._seen if self._mirror is not None else -1
            rows = self._run(
                f"SELECT {_STATE_COLUMNS}, m.embedding FROM memories m LEFT JOIN usage u ON u.memory_id = m.id "
                "WHERE m.change_seq > %s OR u.change_seq > %s",
                [since, since],
            )
            if self._mirror is None:
                names: list[str] = []
                self._mirror = Mirror.of(*_columns_of(rows, code_agents(names, [r[5] for r in rows]), names))
                # Every passage, less those of memories committed since the rows above were read.
                every = self._read_passages("", [])
                self._mirror.passages.add(every.take(np.flatnonzero(self._mirror.holds(every.owner))))
            else:
                incoming = np.array([r[0] for r in rows], dtype=np.int64)
                new = incoming[~self._mirror.holds(incoming)]
                self._mirror.merge(*_columns_of(rows, self._mirror.code_agents([r[5] for r in rows]), []))
                self._mirror.passages.drop([r[0] for r in rows if r[13]])  # forgotten here or elsewhere
                if len(new):
                    self._mirror.passages.add(self._read_passages("WHERE memory_id = ANY(%s)", [new.tolist()]))
            self._seen = latest
            return self._mirror

    def _read_passages(self, where: str, args: list[Any]) -> Passages:
        """Passages (vectors as stored) of the memories ``where`` picks, in ``Passages`` order."""
        rows = self._run(f"SELECT {PASSAGE_COLUMNS} FROM passages {where} ORDER BY memory_id, position", args)
        if not rows:
            return Passages.empty(0)
        return Passages(
            np.array([r[0] for r in rows], dtype=np.int64), np.array([r[1] for r in rows], dtype=np.int32),
            np.array([(r[2], r[3]) for r in rows], dtype=np.int64), np.array([_as_array(r[4]) for r in rows], dtype=np.float32),
        )

    #: pgvector's HNSW index, used from ``index_from`` memories (``nearest``); nothing to choose here.
    VECTOR_INDEXES = ("hnsw",)

    def vector_index(self) -> str:
        return "hnsw"

    def nearest(
        self,
        query: np.ndarray,
        k: int,
        visible: np.ndarray | None = None,
        vectors: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            mirror = self._load()
            state, matrix = mirror.state(), mirror.vectors()
        if len(state) < self.index_from or self._depth:
            self.last_nearest = "scan"
            return super().nearest(query, k, visible, vectors if vectors is not None else matrix)
        dim = matrix.shape[1]
        self._ensure_index(dim)
        want = min(max(k, 1) * self.OVERFETCH, len(state))
        with self._lock, self._con.transaction():
            # The widest search pgvector allows: at 400 the recall of the 100 nearest
            # was 0.54-0.59 on benchmarks/synth.py's vectors, at 1000 it was 1.0.
            self._run("SET LOCAL hnsw.ef_search = 1000")
            self._run("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = self._run(
                f"SELECT id FROM memories WHERE forgotten_at IS NULL "
                f"ORDER BY embedding::vector({dim}) <=> %s::vector({dim}) LIMIT %s",
                [np.asarray(query, dtype=np.float32), int(want)],
            )
        positions = state.rows_of([int(r[0]) for r in rows])
        ok = positions < len(state)
        positions = positions[ok]
        positions = positions[state.ids[positions] == np.asarray([int(r[0]) for r in rows], dtype=np.int64)[ok]]
        if visible is not None:
            positions = positions[visible[positions]]
        needed = min(k, int(visible.sum()) if visible is not None else len(state))
        if len(positions) < needed:  # the index found too few the agent may see: scan instead
            self.last_nearest = "scan"
            return super().nearest(query, k, visible, matrix)
        from lodviz import scoring

        sims = scoring.similarity(np.asarray(query, dtype=np.float32), matrix[positions])
        order = np.argsort(-sims, kind="stable")[:k]
        self.last_nearest = "hnsw"
        return positions[order], sims[order]

    # -- usage, floors, layout ---------------------------------------------------------

    def touch(self, ids: Sequence[int], now: datetime, audit: AuditEvent | None) -> None:
        ids = [int(i) for i in ids]
        with self.atomic():
            stamp = self._change()
            if ids:
                # One upsert in id order: count + k, so no increment is ever lost.
                self._run(
                    "INSERT INTO usage (memory_id, retrieval_count, last_retrieved_at, change_seq) "
                    "SELECT id, count(*), %s, %s FROM unnest(%s::bigint[]) AS t(id) GROUP BY id ORDER BY id "
                    "ON CONFLICT (memory_id) DO UPDATE SET retrieval_count = usage.retrieval_count + excluded.retrieval_count, "
                    "last_retrieved_at = excluded.last_retrieved_at, change_seq = excluded.change_seq",
                    [utc(now), stamp, ids],
                )
            if audit is not None:
                self._insert_audit(audit)

    def set_floor(self, memory_id: int, floor: int, audit: AuditEvent) -> None:
        with self.atomic():
            stamp = self._change()
            self._run("UPDATE memories SET floor = %s, change_seq = %s WHERE id = %s", [int(floor), stamp, int(memory_id)])
            self._insert_audit(audit)

    def forget(self, memory_id: int, audit: AuditEvent) -> None:
        memory_id = int(memory_id)
        with self.atomic():
            stamp = self._change()
            dim = self._run("SELECT vector_dims(embedding) FROM memories WHERE id = %s", [memory_id])[0][0]
            self._run(
                "UPDATE memories SET text = %s, summary = %s, headline = %s, embedding = %s, "
                "content_hash = 'forgotten:' || id::text, source = NULL, metadata = '{}', forgotten_at = now(), change_seq = %s "
                "WHERE id = %s",
                [FORGOTTEN, FORGOTTEN, FORGOTTEN, np.zeros(int(dim), dtype=np.float32), stamp, memory_id],
            )
            self._sql(FORGET_CONFLICTS, [FORGOTTEN, memory_id, memory_id])
            self._sql(FORGET_PASSAGES, [memory_id])
            self._insert_audit(audit)

    def set_layout(self, ids: Sequence[int] | np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        with self.atomic():
            stamp = self._change()
            self._run(
                "UPDATE memories m SET layout_x = t.x, layout_y = t.y, change_seq = %s "
                "FROM unnest(%s::bigint[], %s::float8[], %s::float8[]) AS t(id, x, y) WHERE m.id = t.id",
                [stamp, np.asarray(ids, dtype=np.int64).tolist(), np.asarray(x, dtype=np.float64).tolist(),
                 np.asarray(y, dtype=np.float64).tolist()],
            )

    # -- conflicts and golden queries ----------------------------------------------------

    # -- audit and profiles ---------------------------------------------------------------

    # -- tokens ---------------------------------------------------------------------

    # -- copying a whole store -----------------------------------------------------

    def read_table(self, table: str, batch: int = 10_000) -> Iterator[list[tuple]]:
        columns = TABLES[table]
        # A named (server-side) cursor streams a big table instead of loading it at once.
        with self._lock, self._con.transaction(), self._con.cursor(name=f"lodviz_copy_{table}") as cursor:
            cursor.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {TABLE_ORDER[table]}")
            while rows := cursor.fetchmany(batch):
                yield [portable_row(row, columns) for row in rows]

    def write_table(self, table: str, rows: Sequence[tuple]) -> None:
        if not rows:
            return
        columns = TABLES[table]
        with self.atomic():
            stamp = self._change()
            extra = ("change_seq",) if table in ("memories", "usage") else ()
            with self._con.cursor().copy(f"COPY {table} ({', '.join(columns + extra)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row((*row, stamp) if extra else row)

    def finish_copy(self) -> None:
        with self.atomic():
            self._change()
            self._run("SELECT setval('memory_id', greatest((SELECT max(id) FROM memories), 1), (SELECT count(*) > 0 FROM memories))")
            for table in ("audit", "golden"):
                self._run(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), greatest((SELECT max(id) FROM {table}), 1), "
                    f"(SELECT count(*) > 0 FROM {table}))"
                )
        with self._lock:
            self._mirror, self._seen = None, -1
            dims = self._run("SELECT vector_dims(embedding) FROM memories LIMIT 1")
        if dims:
            self._ensure_index(int(dims[0][0]))

    def close(self) -> None:
        with self._lock:
            try:
                self._con.close()
            except self._psycopg.Error:  # pragma: no cover - closing a broken connection
                pass


def _utc(value: datetime | None) -> datetime | None:
    """A ``timestamptz`` as the store interface speaks it: aware, in ``datetime.UTC``."""
    return None if value is None else value.astimezone(UTC)


def _columns_of(rows: list[tuple], codes: np.ndarray, names: list[str]) -> tuple[Columns, np.ndarray]:
    """The columns and the unit vectors of ``_STATE_COLUMNS, m.embedding`` rows (agents already coded)."""
    from lodviz.scoring import normalize_rows

    state = Columns(
        ids=np.array([r[0] for r in rows], dtype=np.int64),
        created_at=np.array([r[1] for r in rows], dtype=np.float64),
        last_retrieved_at=np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=np.float64),
        retrieval_count=np.array([r[3] for r in rows], dtype=np.int64),
        floor=np.array([r[4] for r in rows], dtype=np.int8),
        agent_code=codes,
        shared=np.array([r[6] for r in rows], dtype=bool),
        kind=np.array([r[7] for r in rows], dtype=object),
        x=np.array([np.nan if r[8] is None else r[8] for r in rows], dtype=np.float64),
        y=np.array([np.nan if r[9] is None else r[9] for r in rows], dtype=np.float64),
        len_text=np.array([r[10] for r in rows], dtype=np.int32),
        len_summary=np.array([r[11] for r in rows], dtype=np.int32),
        len_headline=np.array([r[12] for r in rows], dtype=np.int32),
        forgotten=np.array([r[13] for r in rows], dtype=bool),
        agent_names=names,
    )
    vectors = np.array([_as_array(r[14]) for r in rows], dtype=np.float32) if rows else np.zeros((0, 0), dtype=np.float32)
    return state, normalize_rows(vectors) if len(rows) else vectors


def _as_array(value: Any) -> np.ndarray:
    """A pgvector value (``Vector`` or array, by driver version) as float32 numpy."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def _first_line(exc: Exception, url: str) -> str:
    """The driver's message, one line, with the URL's password never in it."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    password = urlsplit(url).password if url.startswith(URL_SCHEMES) else None
    return text.replace(password, "***") if password else text

