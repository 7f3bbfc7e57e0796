"""Moving a store between backends (``lodviz migrate SRC DST``): every table, then a check.

Every table of ``TABLES`` is copied as it is (ids, long memories' passages,
usage totals, floors, layout, profiles, golden queries, conflicts and the
whole audit log) into a new, empty store in one transaction, so a failed copy
leaves nothing behind. Then both stores are read again and compared table by
table: row counts and a SHA-256 of every row (texts, embeddings as float32
bytes, times in UTC).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from lodviz.errors import StoreError
from lodviz.store import open_store
from lodviz.store.base import TABLES, Store

log = logging.getLogger("lodviz.migrate")


@dataclass
class TableCheck:
    table: str
    source_rows: int
    target_rows: int
    source_sha256: str
    target_sha256: str

    @property
    def same(self) -> bool:
        return self.source_rows == self.target_rows and self.source_sha256 == self.target_sha256


@dataclass
class CopyReport:
    source: str
    target: str
    tables: list[TableCheck] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return all(t.same for t in self.tables)

    def rows(self, table: str) -> int:
        return next(t.target_rows for t in self.tables if t.table == table)


def _canonical(value: object) -> bytes:
    if value is None:
        return b"\x00null"
    if isinstance(value, np.ndarray):
        return b"\x01" + np.asarray(value, dtype=np.float32).tobytes()
    if isinstance(value, datetime):
        return b"\x02" + value.isoformat().encode()
    if isinstance(value, bytes):
        return b"\x03" + value
    if isinstance(value, bool):
        return b"\x04" + str(value).encode()
    if isinstance(value, float):
        return b"\x05" + repr(value).encode()
    if isinstance(value, int):
        return b"\x06" + str(value).encode()
    return b"\x07" + str(value).encode()


def table_digest(store: Store, table: str) -> tuple[int, str]:
    """(rows, SHA-256 of every row in key order) of one table."""
    digest = hashlib.sha256()
    rows = 0
    for batch in store.read_table(table):
        for row in batch:
            for value in row:
                part = _canonical(value)
                digest.update(len(part).to_bytes(8, "little") + part)
            rows += 1
    return rows, digest.hexdigest()


def _is_empty(store: Store) -> bool:
    return all(not next(iter(store.read_table(table, batch=1)), []) for table in TABLES)


def copy_store(source: str, target: str, *, echo: Callable[[str], None] = lambda line: None) -> CopyReport:
    """Copy the store at ``source`` into a new, empty store at ``target`` and check the copy."""
    src = open_store(source, read_only=True)
    try:
        # A source that cannot be read as it stands (a DuckDB store with writes still in its
        # journal) says so before the target is made.
        next(iter(src.read_table("meta", batch=1)), None)
        dst = open_store(target)
        try:
            if not _is_empty(dst):
                raise StoreError(f"{dst.path} already holds data; migrate into a new, empty store.")
            with dst.atomic():
                for table in TABLES:
                    copied = 0
                    for batch in src.read_table(table):
                        dst.write_table(table, batch)
                        copied += len(batch)
                    echo(f"{table}: {copied:,} rows copied")
                dst.finish_copy()
            report = CopyReport(src.path, dst.path)
            for table in TABLES:
                (source_rows, source_sha), (target_rows, target_sha) = table_digest(src, table), table_digest(dst, table)
                report.tables.append(TableCheck(table, source_rows, target_rows, source_sha, target_sha))
            return report
        finally:
            dst.close()
    finally:
        src.close()
