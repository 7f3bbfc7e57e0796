"""The embedded default store: one DuckDB file, no server.

The store owns its connection. Schema changes are small numbered functions in
``MIGRATIONS``, applied in order when a file is opened and recorded in the
``_migrations`` table, so an old file is brought forward on open.

What is DuckDB's own is here: Arrow loads (the first load of the mirror, a
batch's inserts, the journal's rows), the files a store makes kept private,
its errors mapped to ``StoreError`` in one place (``_store_error``), and the
caches an only writer may keep. The SQL both backends share is
``lodviz.store.sql``'s; searches' writes go through the journal, applied by
``lodviz.store.applier``.

Searches read embeddings from an in-process copy of the numeric columns and
the unit-normalised embedding matrix, loaded once and kept in step with every
write this store makes; the first search adds the headlines, summaries and
sources (``lodviz.store.texts``). Full texts are read from the file. A search's
retrievals are appended to a log (``retrievals``) that is folded into
``usage`` on open and when it grows long. That is sound because DuckDB lets one process write a
file: nobody else can change it under us. All access goes through one lock, so
the app's and the MCP server's threads can share a store.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from lodviz.errors import StoreError
from lodviz.ivf import InvertedLists, Stopped
from lodviz.matrix import UnitRows, parse_kind
from lodviz.store import index_file, matrix_file
from lodviz.store.applier import Applier
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
from lodviz.store.journal import Entry, journal_file
from lodviz.store.migrations import Migrations, Target
from lodviz.store.sql import (
    FORGET_CONFLICTS,
    FORGET_PASSAGES,
    FORGOTTEN,
    PASSAGE_COLUMNS,
    RECORD_COLUMNS,
    SQLStore,
    record,
    utcnow,
)
from lodviz.store.texts import TIER_COLUMN, ShortTexts, TextMirror
from lodviz.times import utc

log = logging.getLogger("lodviz.store")

#: DuckDB's memory limit in a store with a compact matrix (``lodviz.matrix``). Not lower: a write
#: checkpoints the content-hash index in memory, and at 1 GB that failed (a fatal DuckDB error) past
#: 6.5M memories; what a load reads is cached up to it (~1.8 GiB at 1M memories, 80% of RAM by default).
COMPACT_DUCKDB_MEMORY = "4GB"

#: The moment, as DuckDB's ``TIMESTAMP`` columns hold it: naive UTC (whatever the session's time zone).
NOW = "make_timestamp(epoch_us(current_timestamp))"

# -- migrations -------------------------------------------------------------

MIGRATIONS = Migrations()


@MIGRATIONS
def m001_initial(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")
    con.execute(
        """
        CREATE TABLE memories (
            id BIGINT PRIMARY KEY,
            text VARCHAR NOT NULL,
            summary VARCHAR NOT NULL,
            headline VARCHAR NOT NULL,
            embedding FLOAT[] NOT NULL,
            embedding_model VARCHAR NOT NULL,
            content_hash VARCHAR NOT NULL UNIQUE,
            created_at TIMESTAMP NOT NULL,
            last_retrieved_at TIMESTAMP,
            retrieval_count INTEGER NOT NULL DEFAULT 0,
            floor TINYINT NOT NULL DEFAULT 0,
            agent_id VARCHAR NOT NULL,
            visibility VARCHAR NOT NULL,
            kind VARCHAR NOT NULL,
            source VARCHAR,
            metadata VARCHAR NOT NULL DEFAULT '{}'
        )
        """
    )
    con.execute("CREATE SEQUENCE audit_id START 1")
    con.execute(
        """
        CREATE TABLE audit (
            id BIGINT PRIMARY KEY DEFAULT nextval('audit_id'),
            occurred_at TIMESTAMP NOT NULL,
            action VARCHAR NOT NULL,
            actor VARCHAR NOT NULL,
            agent_id VARCHAR,
            memory_id BIGINT,
            query VARCHAR,
            details VARCHAR NOT NULL DEFAULT '{}'
        )
        """
    )


@MIGRATIONS
def m002_profiles(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        """
        CREATE TABLE profiles (
            agent_id VARCHAR PRIMARY KEY,
            alpha DOUBLE NOT NULL,
            lam DOUBLE NOT NULL,
            theta1 DOUBLE NOT NULL,
            theta2 DOUBLE NOT NULL,
            theta3 DOUBLE NOT NULL,
            k INTEGER NOT NULL,
            updated_at TIMESTAMP NOT NULL
        )
        """
    )


@MIGRATIONS
def m003_layout(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("ALTER TABLE memories ADD COLUMN layout_x DOUBLE")
    con.execute("ALTER TABLE memories ADD COLUMN layout_y DOUBLE")
    con.execute("CREATE TABLE artifacts (name VARCHAR PRIMARY KEY, data BLOB NOT NULL)")


@MIGRATIONS
def m004_usage_table(con: duckdb.DuckDBPyConnection) -> None:
    # Retrieval counts move to a narrow table of the memories ever retrieved:
    # DuckDB updates a row of the wide memories table, never updated before,
    # at 60-200 ms per thousand at 1M rows, and upserts into this one in ~5 ms.
    # The view keeps them first-class columns of every memory for SQL users.
    con.execute(
        "CREATE TABLE usage (memory_id BIGINT PRIMARY KEY, retrieval_count INTEGER NOT NULL, "
        "last_retrieved_at TIMESTAMP)"
    )
    con.execute(
        "INSERT INTO usage SELECT id, retrieval_count, last_retrieved_at FROM memories "
        "WHERE retrieval_count > 0 OR last_retrieved_at IS NOT NULL"
    )
    con.execute("ALTER TABLE memories DROP COLUMN retrieval_count")
    con.execute("ALTER TABLE memories DROP COLUMN last_retrieved_at")
    con.execute(
        "CREATE VIEW memories_with_usage AS SELECT m.*, coalesce(u.retrieval_count, 0) AS retrieval_count, "
        "u.last_retrieved_at FROM memories m LEFT JOIN usage u ON u.memory_id = m.id"
    )


@MIGRATIONS
def m005_retrieval_log(con: duckdb.DuckDBPyConnection) -> None:
    # A search appends one row per retrieved memory here instead of upserting
    # into ``usage``: an append costs ~1.5 ms for 500 memories at 1M rows, the
    # upsert through the primary-key index 5-11 ms. ``fold_retrievals`` moves
    # the log into ``usage`` now and then; ``usage_totals`` adds both up.
    con.execute("CREATE TABLE retrievals (memory_id BIGINT NOT NULL, retrieved_at TIMESTAMP NOT NULL)")
    con.execute(_USAGE_TOTALS_VIEW)
    con.execute(
        "CREATE OR REPLACE VIEW memories_with_usage AS SELECT m.*, coalesce(u.retrieval_count, 0) AS retrieval_count, "
        "u.last_retrieved_at FROM memories m LEFT JOIN usage_totals u ON u.memory_id = m.id"
    )


_USAGE_TOTALS_VIEW = """
CREATE OR REPLACE VIEW usage_totals AS
SELECT memory_id, sum(n)::INTEGER AS retrieval_count, max(last_at) AS last_retrieved_at FROM (
    SELECT memory_id, retrieval_count AS n, last_retrieved_at AS last_at FROM usage
    UNION ALL
    SELECT memory_id, 1, retrieved_at FROM retrievals
) GROUP BY memory_id
"""


@MIGRATIONS
def m006_retrieval_order(con: duckdb.DuckDBPyConnection) -> None:
    # The contract: a retrieval sets last_retrieved_at to the search's ``now``, even
    # when an earlier search named a later one; so the log keeps the order
    # retrievals happened in, and the last one logged wins (not the latest time).
    con.execute(
        "INSERT INTO usage SELECT memory_id, count(*), max(retrieved_at) FROM retrievals GROUP BY memory_id "
        "ON CONFLICT (memory_id) DO UPDATE SET retrieval_count = usage.retrieval_count + excluded.retrieval_count, "
        "last_retrieved_at = excluded.last_retrieved_at"
    )
    con.execute("DROP VIEW memories_with_usage")
    con.execute("DROP VIEW usage_totals")
    con.execute("DROP TABLE retrievals")
    con.execute("CREATE SEQUENCE retrieval_order")
    con.execute(
        "CREATE TABLE retrievals (memory_id BIGINT NOT NULL, retrieved_at TIMESTAMP NOT NULL, "
        "seq BIGINT NOT NULL DEFAULT nextval('retrieval_order'))"
    )
    con.execute(_USAGE_TOTALS_ORDERED_VIEW)
    con.execute(
        "CREATE VIEW memories_with_usage AS SELECT m.*, coalesce(u.retrieval_count, 0) AS retrieval_count, "
        "u.last_retrieved_at FROM memories m LEFT JOIN usage_totals u ON u.memory_id = m.id"
    )


# ``usage`` holds the folded past (seq -1); of the log, the last row logged wins.
_USAGE_UNION = """
    SELECT memory_id, retrieval_count AS n, last_retrieved_at AS last_at, -1 AS seq FROM usage {where}
    UNION ALL
    SELECT memory_id, 1, retrieved_at, seq FROM retrievals {where}
"""

_USAGE_TOTALS_ORDERED_VIEW = f"""
CREATE VIEW usage_totals AS
SELECT memory_id, sum(n)::INTEGER AS retrieval_count, arg_max(last_at, seq) AS last_retrieved_at
FROM ({_USAGE_UNION.format(where="")}) GROUP BY memory_id
"""


@MIGRATIONS
def m007_conflicts_and_forgetting(con: duckdb.DuckDBPyConnection) -> None:
    # Conflict candidates found at ingestion, and what an auditor decided about them.
    con.execute(
        """
        CREATE TABLE conflicts (
            memory_id BIGINT NOT NULL,
            other_id BIGINT NOT NULL,
            similarity DOUBLE NOT NULL,
            reason VARCHAR NOT NULL,
            detected_at TIMESTAMP NOT NULL,
            status VARCHAR NOT NULL DEFAULT 'open',
            superseded_id BIGINT,
            resolved_by VARCHAR,
            resolved_at TIMESTAMP,
            note VARCHAR,
            PRIMARY KEY (memory_id, other_id)
        )
        """
    )
    # A forgotten memory keeps its row (and so its place) but loses its texts and vector.
    con.execute("ALTER TABLE memories ADD COLUMN forgotten_at TIMESTAMP")


@MIGRATIONS
def m008_golden_queries(con: duckdb.DuckDBPyConnection) -> None:
    # Questions with the memories a good answer needs: what tuning measures against.
    con.execute("CREATE SEQUENCE golden_id START 1")
    con.execute(
        """
        CREATE TABLE golden (
            id BIGINT PRIMARY KEY DEFAULT nextval('golden_id'),
            agent_id VARCHAR,
            query VARCHAR NOT NULL,
            needs VARCHAR NOT NULL,
            note VARCHAR,
            created_at TIMESTAMP NOT NULL,
            created_by VARCHAR NOT NULL
        )
        """
    )


@MIGRATIONS
def m009_tokens(con: duckdb.DuckDBPyConnection) -> None:
    # Who may do what (lodviz.access): a token's id, identity, role and hash; never the token.
    con.execute(
        """
        CREATE TABLE tokens (
            id VARCHAR PRIMARY KEY,
            name VARCHAR NOT NULL,
            role VARCHAR NOT NULL,
            agent_id VARCHAR,
            secret_sha256 VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL,
            created_by VARCHAR NOT NULL,
            revoked_at TIMESTAMP
        )
        """
    )


@MIGRATIONS
def m010_passages(con: duckdb.DuckDBPyConnection) -> None:
    # A long memory's passages (lodviz.passages): spans of its full text, each embedded like a memory.
    # No key: the writer numbers a memory's passages once, and a memory's rows, written together
    # in id order, are found by the column's min/max per row group; an index would cost every insert.
    con.execute(
        """
        CREATE TABLE passages (
            memory_id BIGINT NOT NULL,
            position INTEGER NOT NULL,
            start BIGINT NOT NULL,
            stop BIGINT NOT NULL,
            embedding FLOAT[] NOT NULL
        )
        """
    )


@MIGRATIONS
def m011_profile_budget(con: duckdb.DuckDBPyConnection) -> None:
    # The tokens an agent's search returns unless it asks otherwise; NULL: the default (params.DEFAULT_BUDGET).
    con.execute("ALTER TABLE profiles ADD COLUMN budget INTEGER")


def apply_migrations(con: duckdb.DuckDBPyConnection, upto: str | None = None) -> list[str]:
    """Apply pending migrations in order (up to and including ``upto``), each in a transaction of its own."""

    @contextmanager
    def each() -> Iterator[None]:
        _run(con, "BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            _run(con, "ROLLBACK")
            raise
        _run(con, "COMMIT")

    return MIGRATIONS.apply(Target(
        con, lambda sql, args: _run(con, sql, args),
        table="CREATE TABLE IF NOT EXISTS _migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP)",
        record=f"INSERT INTO _migrations VALUES (?, {NOW})", each=each,
    ), upto)


# -- helpers ------------------------------------------------------------------


def _run(con: duckdb.DuckDBPyConnection, sql: str, args: Sequence[Any] | None = None) -> list[tuple]:
    """Execute and consume the result: DuckDB refuses other work on a connection
    while a statement's result (even an INSERT's row count) is unread."""
    return con.execute(sql, args).fetchall() if args is not None else con.execute(sql).fetchall()


# -- the files a store makes, and the driver's errors ---------------------------------

#: The permissions of a new store file and of the files beside it (its ``.wal``, ``.journal``, spill files).
PRIVATE = 0o600

_umask_lock = threading.Lock()
_umask_users = 0
_umask_before = 0


def _side_file_mode(path: str) -> int:
    """The permissions of the files a store makes: ``PRIVATE`` for a new store; for an existing
    one, the store file's own (read and write bits, and always the owner's), since its owner may
    have shared it with a group on purpose. lodviz never changes the store file's permissions."""
    try:
        return (os.stat(path).st_mode & 0o666) | 0o600
    except OSError:
        return PRIVATE


def _umask_for(mode: int) -> int:
    """The umask under which new files get ``mode`` and new directories (DuckDB's spill folder) the same
    plus the search bit wherever they may be read (0600: 0700; 0640: 0750)."""
    return 0o777 & ~(mode | 0o700 | ((mode & 0o044) >> 2))


def _narrow(path: str, mode: int) -> None:
    """Take away from the file at ``path`` (if there is one, and it is ours) any permission ``mode`` lacks."""
    try:
        now = os.stat(path).st_mode & 0o777
        if now & ~mode:
            os.chmod(path, now & mode)
    except OSError:
        pass


@contextmanager
def _private_files(mask: int) -> Iterator[None]:
    """Files created meanwhile get none of the permission bits in ``mask``.

    DuckDB makes the store file on connect, its write-ahead log (``<store>.wal``)
    at the first commit after each checkpoint, and spill files in ``<store>.tmp``
    when a query outgrows memory, all with the process's umask; so every
    statement runs with ``mask`` added to it (``_driving``). The umask
    belongs to the process: while windows of several threads overlap, each adds
    its mask, and the last to leave restores what was there before.
    """
    global _umask_users, _umask_before
    with _umask_lock:
        current = os.umask(0o077)
        if _umask_users == 0:
            _umask_before = current
        os.umask(current | mask)
        _umask_users += 1
    try:
        yield
    finally:
        with _umask_lock:
            _umask_users -= 1
            if _umask_users == 0:
                os.umask(_umask_before)


#: What an error says when the file system refused a read or a write (a full disk, a size limit, ...).
_FILE_FAILURE = re.compile(r"could not (?:write|read|sync|truncate|open|create)|no space left|file too large|disk quota", re.I)
#: The labels DuckDB puts before what happened.
_DRIVER_LABELS = re.compile(r"^(?:(?:[A-Z][A-Za-z]*)(?: [A-Z][A-Za-z]*)* Error: |Failed to commit: )+")


def _is_file_failure(exc: BaseException) -> bool:
    return isinstance(exc, (OSError, duckdb.IOException)) or bool(_FILE_FAILURE.search(str(exc)))


def _store_error(path: str, exc: BaseException) -> StoreError:
    """The one sentence a DuckDB error (or the journal's ``OSError``) becomes; the only place they are mapped.

    The file system refusing a read or write (a full disk, a size limit)
    is "the store could not be written: <what DuckDB said>"; any other
    failure names the store and DuckDB's first line, as the PostgreSQL store
    does with psycopg's.
    """
    if isinstance(exc, OSError) and exc.strerror:
        reason = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    else:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        reason = _DRIVER_LABELS.sub("", first) or first
    if _is_file_failure(exc):
        verb = "read" if re.search(r"could not read", reason, re.I) else "written"
        return StoreError(f"the store could not be {verb}: {reason}")
    return StoreError(f"{path}: {reason}")


def _connect(path: str, read_only: bool, mode: int, compact: bool) -> duckdb.DuckDBPyConnection:
    """A connection to the store at ``path``, the files DuckDB makes as private as ``mode`` (side files a process
    left more open narrowed to it); a file another process holds, or not a store, is refused in one sentence."""
    if path != ":memory:":
        for side in (path + ".wal", journal_file(path)):
            _narrow(side, mode)  # left by a process before this rule
    try:
        with _private_files(_umask_for(mode)):
            con = duckdb.connect(path, read_only=read_only)
        # DuckDB's own progress bar would print over the CLI's output and the app's logs.
        con.execute("SET enable_progress_bar = false").fetchall()
        if compact:
            # A compact matrix is chosen to save memory; DuckDB's buffer
            # manager would otherwise keep the blocks the first load read
            # (1.8 GiB at 1M memories, up to 80% of RAM by default).
            con.execute(f"SET memory_limit = '{COMPACT_DUCKDB_MEMORY}'").fetchall()
    except duckdb.IOException as exc:
        raise StoreError(_lock_message(path, exc)) from None
    except duckdb.Error as exc:
        raise StoreError(f"cannot open {path} as a lodviz store: {exc}") from None
    return con


@contextmanager
def _registered(con: duckdb.DuckDBPyConnection, name: str, table: pa.Table) -> Iterator[None]:
    """``table`` readable as ``name`` in ``con``'s statements inside the block: an Arrow load."""
    con.register(name, table)
    try:
        yield
    finally:
        con.unregister(name)


def _insert_arrow(con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
    with _registered(con, "_journalled", rows):
        _run(con, f"INSERT INTO {table} ({', '.join(rows.column_names)}) SELECT * FROM _journalled")


def _roll_back(con: duckdb.DuckDBPyConnection) -> None:
    """End the open transaction, if there still is one: a failed COMMIT has already rolled it back."""
    try:
        _run(con, "ROLLBACK")
    except duckdb.Error:
        pass


@contextmanager
def _driving(path: str, mask: int) -> Iterator[None]:
    """Where a store meets DuckDB: every statement runs inside.

    The files DuckDB makes meanwhile (the ``.wal`` at a commit, spill files)
    get none of the permission bits in ``mask`` (``_private_files``), and
    DuckDB's errors become one ``StoreError`` sentence (``_store_error``), as
    psycopg's do in the PostgreSQL store's ``_run``.
    """
    with _private_files(mask):
        try:
            yield
        except duckdb.Error as exc:
            raise _store_error(path, exc) from None


def write_entries(con: duckdb.DuckDBPyConnection, entries: list[Entry]) -> None:
    """Journalled ``entries``' rows (retrievals, audit lines) and the last sequence applied, in one transaction on ``con``."""
    ids = [i for e in entries for i in e.ids]
    audits = [e.audit for e in entries if e.audit]
    _run(con, "BEGIN TRANSACTION")
    try:
        if ids:
            # Explicit sequence numbers, in journal order: of a memory's
            # retrievals, the last one logged sets last_retrieved_at.
            top = int(_run(con, "SELECT max(nextval('retrieval_order')) FROM range(?)", [len(ids)])[0][0])
            at = np.concatenate([np.full(len(e.ids), e.retrieved_us or 0, dtype=np.int64) for e in entries if e.ids])
            _insert_arrow(con, "retrievals", pa.table({
                "memory_id": pa.array(ids, pa.int64()),
                "retrieved_at": pa.array(at, pa.timestamp("us")),
                "seq": pa.array(np.arange(top - len(ids) + 1, top + 1, dtype=np.int64)),
            }))
        if audits:
            top = int(_run(con, "SELECT max(nextval('audit_id')) FROM range(?)", [len(audits)])[0][0])
            _insert_arrow(con, "audit", pa.table({
                "id": pa.array(np.arange(top - len(audits) + 1, top + 1, dtype=np.int64)),
                "occurred_at": pa.array([a["occurred_us"] for a in audits], pa.timestamp("us")),
                "action": pa.array([a["action"] for a in audits], pa.string()),
                "actor": pa.array([a["actor"] for a in audits], pa.string()),
                "agent_id": pa.array([a["agent_id"] for a in audits], pa.string()),
                "memory_id": pa.array([a["memory_id"] for a in audits], pa.int64()),
                "query": pa.array([a["query"] for a in audits], pa.string()),
                "details": pa.array([a["details"] for a in audits], pa.string()),
            }))
        _run(con, "INSERT OR REPLACE INTO meta VALUES ('journal_applied', ?)", [str(entries[-1].seq)])
        _run(con, "COMMIT")
    except BaseException:
        _roll_back(con)
        raise


def _naive(value: datetime | None) -> datetime | None:
    """DuckDB TIMESTAMP holds naive UTC."""
    return None if value is None else utc(value).replace(tzinfo=None)


_STATE_SQL = """
    SELECT m.id, epoch_us(m.created_at) / 1e6 AS created_at,
           epoch_us(u.last_retrieved_at) / 1e6 AS last_retrieved_at,
           coalesce(u.retrieval_count, 0) AS retrieval_count, m.floor, m.agent_id,
           m.visibility = 'shared' AS shared, m.kind, m.layout_x, m.layout_y,
           length(m.text) AS len_text, length(m.summary) AS len_summary,
           length(m.headline) AS len_headline, m.forgotten_at IS NOT NULL AS forgotten{embedding}
    FROM memories m LEFT JOIN usage_totals u ON u.memory_id = m.id {where}
"""
# No ORDER BY: sorting a million rows with their embeddings costs seconds and
# gigabytes; ``_state_from_batches`` puts each batch's rows in id order itself.


def _without(sql: str, *swaps: tuple[str, str]) -> str:
    for old, new in swaps:
        if old not in sql:
            raise AssertionError(f"_STATE_SQL no longer has {old!r}")
        sql = sql.replace(old, new)
    return sql


# ``_STATE_SQL`` for an open from the matrix file: no lengths (the file holds them; they need every
# text read) and no usage (read apart): without the join DuckDB hands the rows back in the table's
# order, and a gather of every column into id order took longer than the query (1.3 s at 10M).
_MAPPED_STATE_SQL = _without(
    _STATE_SQL.format(where="", embedding=""),
    ("LEFT JOIN usage_totals u ON u.memory_id = m.id", ""),
    ("epoch_us(u.last_retrieved_at) / 1e6", "NULL::DOUBLE"),
    ("coalesce(u.retrieval_count, 0)", "0::BIGINT"),
    *((f"length(m.{name}) AS len_{name}", f"0::INTEGER AS len_{name}") for name in ("text", "summary", "headline")),
)


class DuckDBStore(SQLStore):
    """A store in one DuckDB file (or ``:memory:``)."""

    NOW = NOW
    MIGRATIONS = MIGRATIONS

    #: Retrievals logged since the last fold that make the next touch fold them.
    FOLD_AT = 500_000
    #: Full texts are held in memory with the short ones while all of them
    #: together are at most this many characters (~1.2M memories of this
    #: benchmark's texts, ~0.4 GiB); with a compact matrix, which is chosen to
    #: save memory, at most ``FULL_TEXTS_IN_MEMORY_COMPACT``: see ``texts.ShortTexts``.
    FULL_TEXTS_IN_MEMORY = 400_000_000
    #: In a store of at least ``TEXTS_BY_ID_FROM`` memories, text reads (a search makes one or two) answered
    #: from the file before the short texts are loaded whole (a warm-up loads them at once).
    TEXT_READS_BY_ID = 6
    TEXTS_BY_ID_FROM = 200_000
    #: Stores with at least this many memories keep their matrix in a file beside them (``save_matrix``).
    MATRIX_FILE_FROM = 20_000
    #: The file is written again once the mirror holds this share of rows more than it does.
    MATRIX_FILE_SLACK = 0.05
    #: With the "ivf" vector index, stores of at least this many memories search it (``build_index``);
    #: below, an exact scan takes a few milliseconds anyway.
    INDEX_FROM = 50_000
    #: The index is built again once the rows written after it outnumber this share of those it covers.
    INDEX_SLACK = 0.1
    #: Up to this many memories the texts in memory are Python strings (see ``texts.ShortTexts``).
    TEXTS_AS_OBJECTS = 2_000_000
    FULL_TEXTS_IN_MEMORY_COMPACT = 64_000_000

    def __init__(
        self, path: str | Path = ":memory:", *, read_only: bool = False, matrix: str | None = None, journal: str = "refuse"
    ) -> None:
        """``journal``: what a read-only open does with writes the last process journalled and did not
        apply (it was killed): ``"refuse"`` them (a ``StoreError``), or ``"read"`` them as the store's own
        writes still to come, so that the audit log and the usage it shows include them (``open_store``
        does that; a writable open applies them)."""
        self.path = str(path)
        self.read_only = read_only
        self.matrix = parse_kind(matrix)  # how the embedding matrix is held in memory (``lodviz.matrix``)
        if journal not in ("refuse", "read"):
            raise ValueError(f"journal is 'refuse' or 'read', not {journal!r}")
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise StoreError(f"cannot create a store in {parent}: no such directory.")
            if read_only and not Path(self.path).exists():
                raise StoreError(f"no store at {self.path}.")
        # The files this store makes are as private as the store file (a new one: PRIVATE).
        self._mode = PRIVATE if self.path == ":memory:" else _side_file_mode(self.path)
        self._mask = _umask_for(self._mode)
        self._con = _connect(self.path, read_only, self._mode, compact=self.matrix != "float32")
        self._lock = threading.RLock()
        self._depth = 0  # how deep in atomic() blocks this connection is
        self._cache: TextMirror | None = None
        self._forgets = 0  # memories this process forgot (a text read outside the lock is dropped if it changes)
        self._texts_read_by_id = 0  # text reads made from the file while the short texts were not loaded
        self.matrix_rows_mapped = 0  # rows of the loaded matrix mapped from the matrix file (0: rebuilt)
        self._matrix_saved: int | None = None  # rows this process last wrote to the matrix file
        self._forgotten_while_saving: list[int] | None = None  # ids forgotten while ``save_matrix`` writes
        self._index_building = threading.Lock()  # one build of the vector index at a time (``build_index``)
        self._closing = threading.Event()  # a build in progress stops when the store closes
        self._index_thread: threading.Thread | None = None  # a rebuild started by a write (``insert``)
        self._version = 0  # see ``version``: grows with every write and every change to the cached columns
        self._meta: dict[str, str] | None = None
        self._profiles: dict[str, dict[str, Any]] | None = None
        self._pending_retrievals = 0
        # Every id that appears in a conflict, sorted; None until read. A search
        # asks whether any of its 1000 results is in one (~5 ms as a query at
        # 100k memories); only this connection writes the file, so the answer
        # is kept and dropped whenever the conflicts table changes.
        self._in_conflicts: np.ndarray | None = None
        # Searches' writes go through the journal (``lodviz.store.journal``) in a file store; this applies it.
        self._applier = Applier(
            self.path, self._con, self._lock, write=write_entries, driver=functools.partial(_driving, self.path, self._mask),
            error=functools.partial(_store_error, self.path), applied=self._entries_applied,
        )
        try:
            with _private_files(self._mask):
                if read_only:
                    self._check_schema()
                    self._applier.check(self.meta, read=journal == "read")
                else:
                    apply_migrations(self._con)
                    self._applier.open(self.meta, self._mode)
                    self.fold_retrievals()
        except (duckdb.Error, OSError) as exc:
            self._con.close()
            if _is_file_failure(exc):
                raise _store_error(self.path, exc) from None
            raise StoreError(f"{self.path} is not a lodviz store: {exc}") from None
        except BaseException:
            self._con.close()
            raise

    # -- the journal of searches' writes (``lodviz.store.applier``) ----------------------

    def _name_for_journal(self) -> None:
        """The first journalled write names the store (a copy keeps its source's name): a write to the file."""
        journal = self._applier.journal
        if journal is not None and not journal.store_id:
            journal.store_id = self.meta().get("store_id") or uuid.uuid4().hex
            self.set_meta({"store_id": journal.store_id})

    def _journal_write(self, ids: list[int], now: datetime | None, audit: AuditEvent | None) -> bool:
        """Journal a search's writes if this store journals and no transaction is open; False otherwise."""
        if self._applier.journal is None or self._depth:
            return False
        self._name_for_journal()
        self._applier.append(ids, now, audit)
        return True

    def _entries_applied(self, entries: list[Entry]) -> None:
        """Journalled ``entries`` are in the tables (under the lock): meta changed, and their retrievals await folding."""
        self._meta = None  # journal_applied changed
        self._pending_retrievals += sum(len(e.ids) for e in entries)

    def _settle(self) -> None:
        """Bring the tables up to date with the journal (before a write or a read of audit or usage)."""
        if not self._depth:
            self._applier.settle()

    def _check_schema(self) -> None:
        self._require_migrations(r[0] for r in self._con.execute("SELECT name FROM _migrations").fetchall())

    # -- transactions ---------------------------------------------------------

    def _driver(self) -> AbstractContextManager[None]:
        """Where this store meets DuckDB: every statement runs inside (``_driving``)."""
        return _driving(self.path, self._mask)

    def _run(self, sql: str, args: Sequence[Any] | None = None) -> list[tuple]:
        with self._driver():
            return _run(self._con, sql, args)

    # -- the shared SQL's hooks (``lodviz.store.sql``) --------------------------------

    def _in(self, column: str, sql_type: str) -> str:
        return f"{column} IN (SELECT unnest(?::{sql_type}[]))"

    def _stored(self, when: datetime) -> datetime:
        return utc(when).replace(tzinfo=None)  # DuckDB TIMESTAMP holds naive UTC

    def _insert_links(self, found: list[tuple[int, int, float, str]]) -> None:
        links = pa.table({
            "memory_id": pa.array([f[0] for f in found], pa.int64()),
            "other_id": pa.array([f[1] for f in found], pa.int64()),
            "similarity": pa.array([f[2] for f in found], pa.float64()),
            "reason": pa.array([f[3] for f in found], pa.string()),
        })
        with _registered(self._con, "_links", links):  # one statement for the batch's links, not one each
            self._run(
                "INSERT INTO conflicts (memory_id, other_id, similarity, reason, detected_at) "
                f"SELECT memory_id, other_id, similarity, reason, {NOW} FROM _links ON CONFLICT DO NOTHING"
            )

    def _conflicts_changed(self) -> None:
        self._in_conflicts = None

    def _forget_cached_rows(self) -> None:
        """What a rolled-back transaction may have cached is not in the file."""
        self._meta = None
        self._profiles = None
        self._in_conflicts = None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._settle()  # journalled writes first: the audit log keeps the order things happened in
        self._run("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            _roll_back(self._con)
            self._forget_cached_rows()
            raise
        try:
            self._run("COMMIT")
        except StoreError:  # a full disk: DuckDB rolled it back, and nothing of it is in the file
            _roll_back(self._con)
            self._forget_cached_rows()
            raise

    # -- meta and artifacts ---------------------------------------------------

    def meta(self) -> dict[str, str]:
        # Kept in memory: every search asks for the reference time, and this
        # connection is the only writer of the file.
        with self._lock:
            if self._meta is None:
                self._meta = dict(self._run("SELECT key, value FROM meta"))
            return dict(self._meta)

    def _meta_changed(self) -> None:
        self._meta = None

    # -- memories -------------------------------------------------------------

    def insert(
        self, memories: Sequence[NewMemory], audit: AuditEvent | None, links: Sequence[ConflictLink] = ()
    ) -> list[int | None]:
        with self._lock:
            fresh = self._fresh(memories)
            start = int(self._run("SELECT coalesce(max(id), 0) FROM memories")[0][0])
            ids: list[int | None] = [None] * len(memories)
            for offset, i in enumerate(fresh):
                ids[i] = start + 1 + offset
            rows = [memories[i] for i in fresh]
            if not rows:
                with self.atomic():
                    self._links_and_audit(ids, fresh, memories, links, audit)
                return ids
            vectors = np.vstack([np.asarray(m.embedding, dtype=np.float32) for m in rows])
            table = _incoming(rows, [ids[i] for i in fresh], vectors)
            passages = passage_rows([(int(ids[i] or 0), memories[i]) for i in fresh])
            with self.atomic():
                with _registered(self._con, "_incoming", table):
                    self._run(
                        "INSERT INTO memories (id, text, summary, headline, embedding, "
                        "embedding_model, content_hash, created_at, floor, agent_id, visibility, "
                        "kind, source, metadata) "
                        "SELECT id, text, summary, headline, embedding, embedding_model, "
                        "content_hash, created_at, floor, "
                        "agent_id, visibility, kind, source, metadata FROM _incoming"
                    )
                    self._run(
                        "INSERT INTO usage SELECT id, retrieval_count, last_retrieved_at FROM _incoming "
                        "WHERE retrieval_count > 0 OR last_retrieved_at IS NOT NULL"
                    )
                if len(passages):
                    _insert_arrow(self._con, "passages", _passage_table(passages))
                self._links_and_audit(ids, fresh, memories, links, audit)
            if self._cache is not None:
                codes = self._cache.code_agents([m.agent_id for m in rows])
                self._cache.add(_state_of(rows, [int(ids[i] or 0) for i in fresh], codes), _unit(vectors), table)
                self._cache.passages.add(passages)
                self._version += 1
                self._rebuild_index_if_outgrown()
            return ids

    def get(self, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        # Two narrow lookups: joining the usage tables would hash all of them
        # (15-30 ms at 1M memories) to find a handful of rows.
        with self._lock:
            self._settle()
            rows = self._run(
                f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.id IN (SELECT unnest(?::BIGINT[]))", [ids]
            )
            usage = {
                memory_id: (last, count)
                for memory_id, count, last in self._run(
                    "SELECT memory_id, sum(n)::INTEGER, arg_max(last_at, seq) FROM ("
                    + _USAGE_UNION.format(where="WHERE memory_id IN (SELECT unnest(?::BIGINT[]))")
                    + ") GROUP BY memory_id",
                    [ids, ids],
                )
            }
            self._applier.unapplied_usage(usage, ids)  # a read-only open's journalled searches
        return {row[0]: record(row, *usage.get(row[0], (None, 0))) for row in rows}

    def contents(self, ids: Sequence[int] | np.ndarray, tiers: Sequence[int] | np.ndarray) -> dict[int, tuple[str, str | None]]:
        ids = [int(i) for i in ids]
        return dict(zip(ids, zip(*self.texts(ids, tiers)))) if ids else {}

    def texts(self, ids: Sequence[int] | np.ndarray, tiers: Sequence[int] | np.ndarray) -> tuple[list[str], list[str | None]]:
        wanted = np.asarray(ids, dtype=np.int64)
        at = np.asarray(tiers, dtype=np.int64)
        if not len(wanted):
            return [], []
        with self._lock:
            cache = self._load()
            rows = cache.present_rows(wanted)
            if cache.short_texts is None and cache.n >= self.TEXTS_BY_ID_FROM and self._texts_read_by_id < self.TEXT_READS_BY_ID:
                # Before a warm-up has read every short text (2 s at 1M memories), the first
                # searches of a cold process read just theirs.
                self._texts_read_by_id += 1
                return self._texts_by_id(wanted, at)
            return self._short_texts().texts(rows, at, wanted, self._full_texts)

    def _texts_by_id(self, ids: np.ndarray, tiers: np.ndarray) -> tuple[list[str], list[str | None]]:
        full = bool(np.any(tiers >= 3))
        found = {
            row[0]: row[1:]
            for row in self._run(
                f"SELECT id, headline, summary, source{', text' if full else ''} FROM memories "
                "WHERE id IN (SELECT unnest(?::BIGINT[]))",
                [ids.tolist()],
            )
        }
        columns = ("headline", "summary", "source", "text")
        texts: list[Any] = []
        sources: list[str | None] = []
        for memory_id, tier in zip(ids.tolist(), tiers.tolist()):
            row = dict(zip(columns, found[memory_id]))
            texts.append(row.get({**TIER_COLUMN, 3: "text"}.get(tier, ""), None))
            sources.append(row["source"])
        return texts, sources

    def _full_texts(self, ids: list[int]) -> dict[int, str]:
        return dict(self._run("SELECT id, text FROM memories WHERE id IN (SELECT unnest(?::BIGINT[]))", [ids]))

    def warm(self) -> None:
        self._load()
        self.save_matrix()  # a rebuilt matrix, kept for the next open (outside the lock)
        self.build_index()  # outside the lock too: tens of seconds at 1M memories when there is no file
        self._short_texts_aside()
        with self._lock:
            cache = self._load()
            self._short_texts()
            if cache.n and not self._depth and self._applier.journal is not None:
                # Now, not in the first search: the store's name and the journal's room are writes
                # flushed to disk (an empty store stays empty: see Applier.open).
                self._name_for_journal()
                self._applier.reserve()
            if cache.terms is not None:
                return
            n = cache.n
        cache.index_terms(n, self._lock, lambda: self._cache is cache, self._short_texts)

    def term_counts(self, ids: Sequence[int] | np.ndarray, wanted: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            cache = self._load()
            if cache.terms is None:  # not warmed (a one-off command): split the candidates' summaries
                return super().term_counts(ids, wanted)
            return cache.term_counts(cache.present_rows(np.asarray(ids, dtype=np.int64)), wanted, self._short_texts)

    def _short_texts(self) -> ShortTexts:
        return self._load().short(self._read_texts, self._full_texts_limit(), self.TEXTS_AS_OBJECTS, self.path)

    def _full_texts_limit(self) -> int:
        return self.FULL_TEXTS_IN_MEMORY if self.matrix == "float32" else self.FULL_TEXTS_IN_MEMORY_COMPACT

    def _short_texts_aside(self) -> None:
        """The warm-up's read of every short text, on a cursor of its own and outside the lock (2-3 s at
        1M memories, which a cold process's first searches would otherwise wait for), handed to the
        mirror if no memory was written or forgotten meanwhile (else the next read makes them)."""
        with self._lock:
            cache = self._cache
            if cache is None or cache.short_texts is not None or self.path == ":memory:":
                return
            n, forgets = cache.n, self._forgets
            full = cache.full_texts_fit(n, self._full_texts_limit())
            cursor = self._con.cursor()
        try:
            with self._driver():
                table = cursor.sql(f"SELECT id, headline, summary, source{', text' if full else ''} FROM memories").to_arrow_table()
            texts = cache.short_from(table, n, full, self.TEXTS_AS_OBJECTS, self.path)
        except (duckdb.Error, StoreError) as exc:  # a write meanwhile: the next read loads them under the lock
            log.debug("reading the short texts aside stopped: %s", exc)
            return
        finally:
            cursor.close()
        with self._lock:
            if self._cache is cache and cache.short_texts is None and cache.n == n and self._forgets == forgets:
                cache.short_texts = texts

    def _read_texts(self, full: bool) -> pa.Table:
        with self._driver():
            return self._con.sql(f"SELECT id, headline, summary, source{', text' if full else ''} FROM memories").to_arrow_table()

    def _load(self) -> TextMirror:
        with self._lock:
            if self._cache is None:
                self._settle()
                with self._driver():
                    ids = np.asarray(self._con.sql("SELECT id FROM memories ORDER BY id").to_arrow_table().column("id").to_numpy(), dtype=np.int64)
                    cache = self._mapped_mirror(ids)
                    if cache is None:
                        batches = self._con.sql(_STATE_SQL.format(where="", embedding=", m.embedding")).to_arrow_reader(_LOAD_BATCH)
                        cache = TextMirror(*_state_from_batches(batches, ids, self.matrix))
                    cache.passages.add(_passages_from(self._con.sql(f"SELECT {PASSAGE_COLUMNS} FROM passages").to_arrow_table()))
                self._applier.count_unapplied(cache)  # a read-only open's journalled searches, as touch counts them
                self._cache = cache
                self._version += 1
            return self._cache

    # -- the matrix file beside the store (``lodviz.store.matrix_file``) -------------------

    def _matrix_path(self) -> Path | None:
        return None if self.path == ":memory:" else matrix_file.path_for(Path(self.path).expanduser())

    def _mapped_mirror(self, ids: np.ndarray) -> TextMirror | None:
        """The mirror with its matrix mapped from the matrix file, if that file matches the store; else None.

        The columns are read from the store (ages and counts change with every
        search); only the rows the file lacks, memories written after it, have
        their embeddings read.
        """
        path = self._matrix_path()
        self.matrix_rows_mapped = 0
        if path is None or not len(ids) or not path.exists():
            return None
        table = self._con.sql(_MAPPED_STATE_SQL).to_arrow_table()
        order = np.argsort(np.asarray(table.column("id").to_numpy(), dtype=np.int64), kind="stable")
        state = _state_from_arrow(table, None if np.all(order[1:] > order[:-1]) else order)
        if not np.array_equal(state.ids, ids):
            raise StoreError("the store changed while it was being read; reopen it.")
        usage = self._con.sql(
            "SELECT memory_id, epoch_us(last_retrieved_at) / 1e6 AS at, retrieval_count FROM usage_totals"
        ).to_arrow_table()
        if len(usage):
            used = np.asarray(usage.column("memory_id").to_numpy(), dtype=np.int64)
            at = np.searchsorted(ids, used)
            known = (at < len(ids)) & (ids[np.minimum(at, len(ids) - 1)] == used)  # usage of a memory no longer there: none
            state.last_retrieved_at[at[known]] = usage.column("at").fill_null(float("nan")).to_numpy()[known]
            state.retrieval_count[at[known]] = usage.column("retrieval_count").to_numpy()[known]
        loaded = matrix_file.load(path, self.matrix, ids, self._embeddings, state.forgotten, scrub=not self.read_only)
        if loaded is None:
            return None
        matrix, lengths, rows = loaded
        for j, name in enumerate(("len_text", "len_summary", "len_headline")):
            getattr(state, name)[:rows] = lengths[:, j]
        if rows < len(ids):
            later = self._run(
                "SELECT id, length(text), length(summary), length(headline) FROM memories WHERE id > ? ORDER BY id", [int(ids[rows - 1])]
            )
            for j, name in enumerate(("len_text", "len_summary", "len_headline")):
                getattr(state, name)[rows:] = [row[j + 1] for row in later]
        gone = state.forgotten[:rows]
        if gone.any():  # forgotten after the file was written: an erased memory's lengths
            for name in ("len_text", "len_summary", "len_headline"):
                getattr(state, name)[:rows][gone] = len(FORGOTTEN)
        head = state.take(slice(0, rows))
        head.agent_names = state.agent_names
        cache = TextMirror(head, matrix)
        if rows < len(ids):
            found = self._embeddings(ids[rows:].tolist())
            rest = state.take(slice(rows, len(ids)))
            rest.agent_names = state.agent_names
            cache.append(rest, _unit(np.stack([np.asarray(found[int(i)], dtype=np.float32) for i in ids[rows:]])))
        self.matrix_rows_mapped = rows
        return cache

    def _erase_from_matrix_file(self, memory_id: int) -> None:
        """A forgotten memory's vector out of the matrix file too (its row zeroed on disk)."""
        if self._forgotten_while_saving is not None:
            self._forgotten_while_saving.append(memory_id)
        path = self._matrix_path()
        if path is None or not path.exists():
            return
        header = matrix_file.read_header(path)
        if header is None or header.get("first_id") is None or not header["first_id"] <= memory_id <= header["last_id"]:
            return
        ids = self._cache.column("ids")[: self._cache.n] if self._cache is not None else None
        if ids is None:
            ids = np.asarray([r[0] for r in self._run("SELECT id FROM memories ORDER BY id")], dtype=np.int64)
        row = int(np.searchsorted(ids, memory_id))
        try:
            matrix_file.erase(path, [row])
        except OSError as exc:  # the file cannot be trusted to be scrubbed: take it away
            log.warning("could not erase a forgotten memory from %s (%s); removing the file", path, exc)
            path.unlink(missing_ok=True)

    def _embeddings(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        table = self._con.sql(
            "SELECT id, embedding FROM memories WHERE id IN (SELECT unnest(?::BIGINT[]))", params=[list(map(int, ids))]
        ).to_arrow_table()
        if not len(table):
            return {}
        vectors = table.column("embedding").combine_chunks().flatten().to_numpy().reshape(len(table), -1)
        return dict(zip(table.column("id").to_pylist(), vectors))

    def save_matrix(self, force: bool = False) -> bool:
        """Write the matrix file beside the store if it lacks more than a few of the mirror's rows; True if written.

        Not for a read-only open, an in-memory store, or a store under
        ``MATRIX_FILE_FROM`` memories (its matrix is rebuilt in well under a second).
        """
        path = self._matrix_path()
        if path is None or self.read_only:
            return False
        with self._lock:
            cache = self._cache
            if cache is None or not cache.n or cache.matrix.dim == 0:
                return False
            n = cache.n
            covered = self.matrix_rows_mapped if self._matrix_saved is None else self._matrix_saved
            if not force and (n < self.MATRIX_FILE_FROM or n - covered <= n * self.MATRIX_FILE_SLACK):
                return False
            ids, matrix = cache.column("ids")[:n], cache.matrix
            lengths = np.stack([cache.column(name)[:n] for name in ("len_text", "len_summary", "len_headline")], axis=1)
            self._forgotten_while_saving = []
        # Outside the lock: rows below ``n`` only change when a memory is forgotten (zeroed);
        # one forgotten meanwhile may have been written before it was zeroed, so it is erased after.
        try:
            matrix_file.save(path, ids, lengths, matrix, n, self._mode)
        except OSError as exc:
            log.warning("could not write the matrix file %s: %s", path, exc)
            return False
        finally:
            with self._lock:
                forgotten, self._forgotten_while_saving = self._forgotten_while_saving or [], None
        if forgotten:
            matrix_file.erase(path, np.searchsorted(ids, np.asarray(forgotten, dtype=np.int64)).tolist())
        self._matrix_saved = n
        return True

    # -- the vector index (``lodviz.ivf``), kept beside the store (``lodviz.store.index_file``) --

    VECTOR_INDEXES = ("exact", "ivf")

    def _index_path(self) -> Path | None:
        return None if self.path == ":memory:" else index_file.path_for(Path(self.path).expanduser())

    def set_vector_index(self, kind: str) -> str:
        kind = super().set_vector_index(kind)
        if kind == "exact":
            with self._lock:
                if self._cache is not None:
                    self._cache.matrix.index = None
                path = self._index_path()
                if path is not None:
                    path.unlink(missing_ok=True)
        return kind

    def kept_index(self) -> dict[str, Any] | None:
        path = self._index_path()
        return index_file.facts(path) if path is not None and path.exists() else None

    def held_index(self) -> InvertedLists | None:
        with self._lock:
            return self._cache.matrix.index if self._cache is not None else None

    def build_index(self, *, force: bool = False) -> InvertedLists | None:
        """The inverted-file index the store searches, made if the store keeps one ("ivf") and has none
        or has outgrown it (``INDEX_SLACK``): read from the index file when that matches the store's rows,
        else built (and the file written). None for an exact store, one under ``INDEX_FROM`` memories,
        a compact matrix, or a store closing or set back to "exact" while it was made.

        Made outside the store's lock (searches go on with what they had); rows forgotten meanwhile are
        changed in it before it is used. ``force``: built from the rows whatever is held or kept.
        """
        with self._index_building:
            with self._lock:
                if self._closing.is_set() or self.vector_index() != "ivf":
                    return None
                cache = self._load()
                matrix, n = cache.matrix, cache.n
                if matrix.compact or matrix.dim == 0 or n < max(2, self.INDEX_FROM):
                    return None
                held = matrix.index
                if held is not None and not force and n - held.covers <= n * self.INDEX_SLACK:
                    return held
                ids = cache.column("ids")[:n].copy()
                rows = matrix.exact[:n]
                matrix.index_begun()
            path = self._index_path()
            index: InvertedLists | None = None
            write = False  # built, or its centroids made again on load: the file is written
            try:
                if path is not None and held is None and not force:
                    loaded = index_file.load(path, rows, ids)
                    if loaded is not None and n - loaded[0].covers <= n * self.INDEX_SLACK:
                        index, write = loaded
                if index is None:
                    index, write = InvertedLists.build(rows, stop=self._closing.is_set), True
            except Stopped:
                index = None
            finally:
                with self._lock:
                    # Set back to "exact", or closing, meanwhile: the index is not taken.
                    wanted = not self._closing.is_set() and self.vector_index() == "ivf"
                    taken = matrix.index_built(index if wanted else None) and self._cache is cache and cache.matrix is matrix
                    if not taken and matrix.index is index:
                        matrix.index = None
                    if taken and index is not None and write and path is not None and not self.read_only:
                        # Under the lock, as a forget's rewrite is: the last file written is the index as it is.
                        self._save_index(path, index, ids[: index.covers])
            return index if taken else None

    def _rebuild_index_if_outgrown(self) -> None:
        """After a write (under the lock): an index the new rows have outgrown, or one a store set to "ivf"
        has now grown big enough for, is built in a thread, so a long-running server does not scan ever
        more rows exactly; searches use what they had meanwhile."""
        cache = self._cache
        if cache is None or cache.matrix.compact or self._closing.is_set():
            return
        index = cache.matrix.index
        if index is None:  # none yet: a store set to "ivf" that has grown to the size it is used from
            if cache.n < self.INDEX_FROM or self.vector_index() != "ivf":
                return
        elif cache.n - index.covers <= cache.n * self.INDEX_SLACK:
            return
        if self._index_thread is not None and self._index_thread.is_alive():
            return
        self._index_thread = threading.Thread(target=self._build_index_quietly, name="lodviz-index", daemon=True)
        self._index_thread.start()

    def _build_index_quietly(self) -> None:
        try:
            self.build_index()
        except Exception as exc:  # upkeep only: searches go on with the index they have
            log.warning("could not build the vector index again: %s", exc)

    def _save_index(self, path: Path, index: InvertedLists, ids: np.ndarray) -> None:
        try:
            with _private_files(self._mask):
                index_file.save(path, index, ids, self._mode)
        except OSError as exc:  # upkeep only: the next open builds it again
            log.warning("could not keep the vector index in %s: %s", path, exc)

    def _forget_in_index_file(self) -> None:
        """After a forget: the index file written again from the index, whose centroids no longer hold the
        forgotten vector (``InvertedLists.update``), or removed if this process holds no index."""
        path = self._index_path()
        if path is None or not path.exists():
            return
        index = self._cache.matrix.index if self._cache is not None else None
        if index is None or self.read_only or self._cache is None:
            path.unlink(missing_ok=True)
            return
        self._save_index(path, index, self._cache.column("ids")[: index.covers])

    def version(self) -> int:
        # Only this connection writes the file. Every write is audited and every
        # audit line begins with ``_write``; the columns' ages and counts change in
        # ``touch`` (a search's, even one only journalled), ``insert`` and ``_load``.
        return self._version

    def _write(self) -> None:
        self._version += 1

    @property
    def approximate(self) -> bool:  # type: ignore[override]
        return self.matrix != "float32"

    def similarities(self, query: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        with self._lock:
            cache = self._load()
            matrix = cache.matrix
            ours = matrix.compact and len(vectors) <= cache.n and (not len(vectors) or np.shares_memory(vectors[:1], matrix.exact[:1]))
        if not ours:
            return super().similarities(query, vectors)
        # The compact copy, not the exact rows: those are in a mapped file (14 GiB at 10M memories).
        return matrix.similarity(_unit(np.asarray(query, dtype=np.float32).reshape(1, -1))[0], len(vectors))

    def nearest(
        self,
        query: np.ndarray,
        k: int,
        visible: np.ndarray | None = None,
        vectors: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            matrix = self._load().matrix
            n = len(vectors) if vectors is not None else self._load().n
        q = _unit(np.asarray(query, dtype=np.float32).reshape(1, -1))[0]
        if not matrix.compact:
            if matrix.index is not None and (vectors is None or _rows_of(vectors, matrix.exact)):
                found = matrix.nearest_indexed(q, k, visible, n)
                if found is not None:
                    self.last_nearest = "ivf"
                    return found
            self.last_nearest = "scan"
            return super().nearest(query, k, visible, vectors)
        # A compact matrix: an approximate scan, then the candidates rescored exactly.
        self.last_nearest = f"scan-{matrix.kind}"
        return matrix.nearest(q, k, visible, n)

    def touch(self, ids: Sequence[int], now: datetime, audit: AuditEvent | None) -> None:
        ids = list(map(int, ids))  # a search's 1,000: half the time of a comprehension

        with self._lock:
            if not self._journal_write(ids, now, audit):
                with self.atomic():
                    if ids:
                        self._run(
                            "INSERT INTO retrievals (memory_id, retrieved_at) SELECT unnest(?::BIGINT[]), ?",
                            [ids, _naive(now)],
                        )
                    if audit is not None:
                        self._insert_audit(audit)
                self._pending_retrievals += len(ids)
            if self._cache is not None and ids:
                rows = self._cache.rows(ids)
                self._cache.column("last_retrieved_at")[rows] = utc(now).timestamp()
                np.add.at(self._cache.column("retrieval_count"), rows, 1)  # an id listed twice counts twice
                self._version += 1
            if not self._depth:
                self._applier.apply_if_long()
            if self._pending_retrievals >= self.FOLD_AT:
                try:
                    self.fold_retrievals()
                except StoreError as exc:  # upkeep only: the retrievals are stored; try again next time
                    log.warning("could not fold the retrieval log into usage: %s", exc)

    def fold_retrievals(self) -> int:
        """Add the retrieval log up into ``usage`` and empty it; returns the rows folded.

        Done on open and whenever the log grows past ``FOLD_AT`` rows, so the
        log stays short and ``usage_totals`` cheap; totals do not change.
        """
        with self._lock, self.atomic():
            pending = int(self._run("SELECT count(*) FROM retrievals")[0][0])
            if pending:
                self._run(
                    "INSERT INTO usage SELECT memory_id, count(*), arg_max(retrieved_at, seq) FROM retrievals "
                    "GROUP BY memory_id ON CONFLICT (memory_id) DO UPDATE SET "
                    "retrieval_count = usage.retrieval_count + excluded.retrieval_count, "
                    "last_retrieved_at = excluded.last_retrieved_at"
                )
                self._run("DELETE FROM retrievals")
            self._pending_retrievals = 0
        return pending

    def set_floor(self, memory_id: int, floor: int, audit: AuditEvent) -> None:
        with self._lock:
            with self.atomic():
                self._run(
                    "UPDATE memories SET floor = ? WHERE id = ?", [int(floor), int(memory_id)]
                )
                self._insert_audit(audit)
            if self._cache is not None:
                self._cache.column("floor")[self._cache.rows([memory_id])] = floor

    def forget(self, memory_id: int, audit: AuditEvent) -> None:
        memory_id = int(memory_id)

        with self._lock:
            with self.atomic():
                dim = self._run("SELECT len(embedding) FROM memories WHERE id = ?", [memory_id])[0][0]
                self._run(
                    "UPDATE memories SET text = ?, summary = ?, headline = ?, embedding = ?, "
                    "content_hash = 'forgotten:' || id::VARCHAR, source = NULL, metadata = '{}', forgotten_at = ? WHERE id = ?",
                    [FORGOTTEN, FORGOTTEN, FORGOTTEN, [0.0] * int(dim), _naive(utcnow()), memory_id],
                )
                self._sql(FORGET_CONFLICTS, [FORGOTTEN, memory_id, memory_id])
                self._sql(FORGET_PASSAGES, [memory_id])
                self._insert_audit(audit)
            self._forgets += 1
            if self._cache is not None:
                self._cache.forgot(memory_id)
                self._cache.passages.drop([memory_id])
            self._erase_from_matrix_file(memory_id)
            self._forget_in_index_file()

    def _any_in_conflicts(self, ids: Sequence[int]) -> bool:
        with self._lock:
            if self._in_conflicts is None:
                rows = self._run("SELECT memory_id FROM conflicts UNION SELECT other_id FROM conflicts")
                self._in_conflicts = np.unique(np.asarray([r[0] for r in rows], dtype=np.int64))
            known = self._in_conflicts
        if not len(known):
            return False
        wanted = np.asarray(ids, dtype=np.int64)
        at = np.minimum(np.searchsorted(known, wanted), len(known) - 1)
        return bool(np.any(known[at] == wanted))

    def set_layout(self, ids: Sequence[int] | np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        table = pa.table(
            {
                "id": pa.array(np.asarray(ids, dtype=np.int64)),
                "x": pa.array(np.asarray(x, dtype=np.float64)),
                "y": pa.array(np.asarray(y, dtype=np.float64)),
            }
        )

        with self._lock:
            with self.atomic(), _registered(self._con, "_layout", table):
                self._run(
                    "UPDATE memories SET layout_x = _layout.x, layout_y = _layout.y "
                    "FROM _layout WHERE memories.id = _layout.id"
                )
            if self._cache is not None:
                rows = self._cache.rows(ids)
                self._cache.column("x")[rows] = x
                self._cache.column("y")[rows] = y

    # -- audit and profiles ---------------------------------------------------

    def record(self, event: AuditEvent) -> None:
        with self._lock:
            if self._journal_write([], None, event):
                self._applier.apply_if_long()  # journalled: no transaction is open
                return
            with self.atomic():
                self._insert_audit(event)

    def _unapplied_events(self) -> list[AuditEvent]:
        """The audit lines of a read-only open's journalled writes, oldest first, numbered as applying them will."""
        if not self._applier.unapplied:
            return []
        last = self._run(
            "SELECT coalesce((SELECT last_value FROM duckdb_sequences() WHERE sequence_name = 'audit_id'), "
            "(SELECT max(id) FROM audit), 0)"
        )[0][0]
        return self._applier.unapplied_events(int(last or 0))

    def _profile_rows(self) -> dict[str, dict[str, Any]]:
        # Kept in memory, like meta: an agent's every search asks for its profile,
        # and only this connection writes the file. Callers hold the lock and copy what they hand out.
        if self._profiles is None:
            self._profiles = super()._profile_rows()
        return self._profiles

    def _profiles_changed(self) -> None:
        self._profiles = None  # inside the transaction, under the lock: no reader can cache the old row

    # -- tokens -------------------------------------------------------------------

    # -- copying a whole store ---------------------------------------------------

    def read_table(self, table: str, batch: int = 10_000) -> Iterator[list[tuple]]:
        columns = TABLES[table]
        source = "usage_totals" if table == "usage" else table
        self._applier.require_applied()  # a copy takes the tables as they are: apply the journal to them first
        with self._lock:
            self._settle()
            cursor = self._con.cursor()
        try:
            with self._driver():
                cursor.execute(f"SELECT {', '.join(columns)} FROM {source} ORDER BY {TABLE_ORDER[table]}")
            while True:
                with self._driver():
                    rows = cursor.fetchmany(batch)
                if not rows:
                    break
                yield [portable_row(row, columns) for row in rows]
        finally:
            cursor.close()

    def write_table(self, table: str, rows: Sequence[tuple]) -> None:
        if not rows:
            return
        columns = TABLES[table]
        stored = [tuple(_naive(v) if isinstance(v, datetime) else v for v in row) for row in rows]
        if "embedding" in columns:
            at = columns.index("embedding")
            stored = [(*row[:at], np.asarray(row[at], dtype=np.float32).tolist(), *row[at + 1:]) for row in stored]
        marks = ", ".join("?" for _ in columns)
        with self.atomic(), self._driver():
            self._con.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", stored)
            self._in_conflicts = None
            self._profiles = None

    def finish_copy(self) -> None:
        with self._lock, self.atomic():
            for table, sequence in (("audit", "audit_id"), ("golden", "golden_id")):
                top = int(self._run(f"SELECT coalesce(max(id), 0) FROM {table}")[0][0])
                if top:  # DuckDB has no setval: draw the sequence up to the copied ids
                    self._run(f"SELECT max(nextval('{sequence}')) FROM range({top})")
            self._cache = None
            self._meta = None
            self._in_conflicts = None
            self._profiles = None

    def close(self) -> None:
        self._closing.set()
        if self._index_thread is not None:
            self._index_thread.join(CLOSE_INDEX_TIMEOUT)  # stopped by ``_closing`` within a block of rows
        self._applier.stop()  # before the lock: its last step takes it
        try:
            self.save_matrix()
        except Exception as exc:  # upkeep only: the next open rebuilds the matrix
            log.warning("could not keep the matrix for the next open: %s", exc)
        with self._lock:
            self._applier.close(settle=not self._depth)
            try:
                self._con.close()
            except duckdb.Error:  # already closed
                pass


def _lock_message(path: str, exc: Exception) -> str:
    text = str(exc)
    if "lock" in text.lower():
        return (
            f"{path} is open in another lodviz process (DuckDB allows one writer); "
            "use that process (for example `lodviz serve`'s MCP endpoint) or stop it first."
        )
    return f"cannot open {path}: {text.splitlines()[0]}"


def _unit(vectors: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    from lodviz.scoring import normalize_rows

    return normalize_rows(vectors, out=out)


def _incoming(rows: Sequence[NewMemory], ids: Sequence[int | None], vectors: np.ndarray) -> pa.Table:
    """New memories (``ids`` theirs, ``vectors`` their embeddings) as the Arrow table ``insert`` loads."""
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "text": [m.text for m in rows],
            "summary": [m.summary for m in rows],
            "headline": [m.headline for m in rows],
            "embedding": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.ravel(), pa.float32()), len(rows[0].embedding)
            ).cast(pa.list_(pa.float32())),
            "embedding_model": [m.embedding_model for m in rows],
            "content_hash": [m.content_hash for m in rows],
            "created_at": pa.array([_naive(m.created_at) for m in rows], pa.timestamp("us")),
            "last_retrieved_at": pa.array(
                [_naive(m.last_retrieved_at) for m in rows], pa.timestamp("us")
            ),
            "retrieval_count": pa.array([m.retrieval_count for m in rows], pa.int32()),
            "floor": pa.array([m.floor for m in rows], pa.int8()),
            "agent_id": [m.agent_id for m in rows],
            "visibility": [m.visibility for m in rows],
            "kind": [m.kind for m in rows],
            "source": pa.array([m.source for m in rows], pa.string()),
            "metadata": [dumps(m.metadata) for m in rows],
        }
    )


def _passage_table(passages: Passages) -> pa.Table:
    """A batch's passages (``base.passage_rows``) as the Arrow table ``insert`` loads into ``passages``."""
    return pa.table({
        "memory_id": pa.array(passages.owner, pa.int64()),
        "position": pa.array(passages.position, pa.int32()),
        "start": pa.array(passages.spans[:, 0], pa.int64()),
        "stop": pa.array(passages.spans[:, 1], pa.int64()),
        "embedding": pa.FixedSizeListArray.from_arrays(
            pa.array(passages.vectors.ravel(), pa.float32()), passages.vectors.shape[1]
        ).cast(pa.list_(pa.float32())),
    })


def _passages_from(table: pa.Table) -> Passages:
    """The passages table read whole (Arrow), as ``Passages`` in their order, vectors as stored.

    Read without ORDER BY, which would sort the embeddings too: DuckDB keeps the
    order rows were inserted in (id order), and only a table written otherwise is sorted here.
    """
    owner = np.asarray(table.column("memory_id").to_numpy(), dtype=np.int64)
    position = np.asarray(table.column("position").to_numpy(), dtype=np.int32)
    spans = np.stack([table.column("start").to_numpy(), table.column("stop").to_numpy()], axis=1).astype(np.int64)
    vectors = (
        np.asarray(table.column("embedding").combine_chunks().flatten().to_numpy(), dtype=np.float32).reshape(len(owner), -1)
        if len(owner) else np.zeros((0, 0), dtype=np.float32)
    )
    step = np.diff(owner)
    if np.any((step < 0) | ((step == 0) & (np.diff(position) <= 0))):
        order = np.lexsort((position, owner))
        return Passages(owner[order], position[order], spans[order], vectors[order])
    return Passages(owner, position, spans, vectors)


def _state_of(rows: Sequence[NewMemory], ids: Sequence[int], codes: np.ndarray) -> Columns:
    return Columns(
        ids=np.asarray(ids, dtype=np.int64),
        created_at=np.array([utc(m.created_at).timestamp() for m in rows], dtype=np.float64),
        last_retrieved_at=np.array(
            [utc(m.last_retrieved_at).timestamp() if m.last_retrieved_at else np.nan for m in rows],
            dtype=np.float64,
        ),
        retrieval_count=np.array([m.retrieval_count for m in rows], dtype=np.int64),
        floor=np.array([m.floor for m in rows], dtype=np.int8),
        agent_code=codes,
        shared=np.array([m.visibility == "shared" for m in rows], dtype=bool),
        kind=np.array([m.kind for m in rows], dtype=object),
        x=np.full(len(rows), np.nan),
        y=np.full(len(rows), np.nan),
        len_text=np.array([len(m.text) for m in rows], dtype=np.int32),
        len_summary=np.array([len(m.summary) for m in rows], dtype=np.int32),
        len_headline=np.array([len(m.headline) for m in rows], dtype=np.int32),
        forgotten=np.zeros(len(rows), dtype=bool),
    )


#: How long a close waits for a rebuild of the vector index to notice it and stop (it checks between blocks of rows).
CLOSE_INDEX_TIMEOUT = 5.0


def _rows_of(vectors: np.ndarray, matrix: np.ndarray) -> bool:
    """Whether ``vectors`` are the first rows of ``matrix`` (a snapshot's view of it), not other rows."""
    if vectors.ndim != 2 or len(vectors) > len(matrix) or vectors.strides != matrix.strides:
        return False
    return bool(vectors.__array_interface__["data"][0] == matrix.__array_interface__["data"][0])


#: Rows per Arrow batch on the first load: the embeddings are normalised into
#: the matrix batch by batch, so the whole list column is never held at once.
_LOAD_BATCH = 65_536


def _state_from_batches(batches: pa.RecordBatchReader, ids: np.ndarray, kind: str = "float32") -> tuple[Columns, UnitRows]:
    """The state and unit matrix, in id order, from a stream of ``_STATE_SQL`` batches.

    ``ids`` are every memory's id, sorted. Batches arrive in any order (the
    usage join is parallel); each batch's embeddings are normalised straight
    into their rows of the one matrix, so no full-size copy is ever made.
    """
    matrix: UnitRows | None = None
    seen = 0
    columns: list[pa.RecordBatch] = []
    rows: list[np.ndarray] = []
    for batch in batches:
        if not len(batch):
            continue
        batch_ids = np.asarray(batch.column("id").to_numpy(), dtype=np.int64)
        at = np.searchsorted(ids, batch_ids)
        if np.any(at >= len(ids)) or np.any(ids[np.minimum(at, len(ids) - 1)] != batch_ids):
            raise StoreError("the store changed while it was being read; reopen it.")
        block = batch.column("embedding").flatten().to_numpy().reshape(len(batch), -1)
        if matrix is None:
            matrix = UnitRows(kind, block.shape[1], len(ids))
        if at[-1] - at[0] == len(at) - 1 and np.all(np.diff(at) == 1):
            _unit(block, out=matrix.exact[at[0] : at[-1] + 1])
            matrix.written(int(at[0]), int(at[-1]) + 1)
        else:
            matrix.exact[at] = _unit(block)
            matrix.written_at(at)
        seen += len(batch)
        matrix.release()  # a compact matrix's exact rows: on to the file, not held
        # A copy of the small columns: a slice would keep the batch's whole
        # import alive, embeddings included (1.4 GiB more at the peak at 1M).
        rest = batch.drop_columns(["embedding"])
        columns.append(rest.take(pa.array(np.arange(len(rest)))))
        rows.append(at)
    if seen != len(ids):
        raise StoreError("the store changed while it was being read; reopen it.")
    schema = batches.schema
    table = pa.Table.from_batches(columns, schema=schema.remove(schema.get_field_index("embedding")))
    if rows:
        order = np.argsort(np.concatenate(rows), kind="stable")
        if np.any(order[1:] < order[:-1]):
            table = table.take(pa.array(order))
    state = _state_from_arrow(table)
    if matrix is None:
        return state, UnitRows(kind, 0, 0)
    return state, matrix


def _state_from_arrow(table: pa.Table, order: np.ndarray | None = None) -> Columns:
    """The numeric columns of the state, from a ``_STATE_SQL`` table without embeddings; its rows
    taken in ``order`` if given (one numpy gather per column: at 10M rows, ``Table.take`` took 3 s)."""

    def arranged(values: np.ndarray) -> np.ndarray:
        return values[order] if order is not None else values

    def col(name: str, dtype: Any, fill: Any = None) -> np.ndarray:
        column = table.column(name)
        if fill is not None:
            column = column.fill_null(fill)
        values = column.to_numpy()
        if order is not None:
            values = values[order]
        out = np.asarray(values, dtype=dtype)
        # The mirror changes some columns in place: a read-only view of Arrow's buffers is copied;
        # a writable array (chunks joined, a gather, a cast) is already this process's own.
        return out if out.flags.writeable else out.copy()

    encoded = table.column("agent_id").combine_chunks().dictionary_encode()
    agent_code = np.array(arranged(encoded.indices.to_numpy(zero_copy_only=False)), dtype=np.int32)
    agent_names = [str(name) for name in encoded.dictionary.to_pylist()]
    # A few kinds among millions of rows: one Python string per kind, not per row.
    kinds = table.column("kind").combine_chunks().dictionary_encode()
    kind = np.asarray(kinds.dictionary.to_pylist() + [None], dtype=object)[
        arranged(kinds.indices.fill_null(len(kinds.dictionary)).to_numpy(zero_copy_only=False))
    ]
    return Columns(
        ids=col("id", np.int64),
        created_at=col("created_at", np.float64),
        last_retrieved_at=col("last_retrieved_at", np.float64, fill=float("nan")),
        retrieval_count=col("retrieval_count", np.int64),
        floor=col("floor", np.int8),
        agent_code=agent_code,
        shared=col("shared", bool),
        kind=kind,
        x=col("layout_x", np.float64, fill=float("nan")),
        y=col("layout_y", np.float64, fill=float("nan")),
        len_text=col("len_text", np.int32),
        len_summary=col("len_summary", np.int32),
        len_headline=col("len_headline", np.int32),
        forgotten=col("forgotten", bool),
        agent_names=agent_names,
    )

