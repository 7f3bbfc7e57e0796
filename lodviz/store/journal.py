"""The write journal of a DuckDB store: a search's writes, on disk before it returns, in the tables later.

Every search writes a retrieval-log append and an audit line. In DuckDB that
is a transaction of four statements, 4-6 ms at 100k memories, most of it
per-statement overhead rather than the disk (an fsync here costs ~0.5 ms).
So the store appends a search's writes to this journal as one JSON line and
flushes it to disk (``fdatasync``) before the search returns, and applies the
journal to its tables later, in one transaction for many searches
(``lodviz.store.applier``): in a background thread once it holds ``BATCH`` lines (the
search that filled the batch does not wait for it), before any other write,
before any read of the audit log or of usage, on close, and on the next open
after a crash.

What a crash may lose: a search that had not returned (its line was not, or
not completely, on disk). Nothing a caller was answered for. A line carries
the store's id and a sequence number; the store records the last sequence
applied (meta ``journal_applied``) in the same transaction as the rows, so a
line is applied exactly once, even if the process dies between that commit
and the journal's truncation, and a journal left beside another store's file
is never applied to it.
"""

from __future__ import annotations

import errno
import json
import logging
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from lodviz.access import current_face
from lodviz.store.base import AuditEvent, dumps
from lodviz.times import utc

log = logging.getLogger("lodviz.store")

#: Lines that make the store apply the journal at the next write it journals.
BATCH = 64
#: Past this many bytes of lines the next batch is applied in the search that fills it, so that the
#: file can be emptied (see ``Applier.apply_if_long``); searches arriving while the applier thread
#: works add lines that keep it from emptying the file.
SYNC_AT = 8 << 20
#: The file grows this much at a time, written as zeros and flushed once: a line written inside
#: the file's size is flushed by ``fdatasync`` without a metadata commit (ext4 here: ~0.1 ms,
#: against 0.4-2 ms for a line that makes the file longer). ``clear`` starts again at the top.
CHUNK = 1 << 20


@dataclass
class Entry:
    """One journalled write: retrievals of ``ids`` at ``retrieved_us`` (may be none) and one audit row."""

    seq: int
    ids: list[int]
    retrieved_us: int | None
    audit: dict[str, Any] = field(default_factory=dict)  # occurred_us, action, actor, agent_id, memory_id, query, details (JSON text)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def journal_file(store_path: str) -> str:
    """Where the journal of the store file at ``store_path`` is kept: beside it."""
    return store_path + ".journal"


def epoch_us(value: datetime) -> int:
    """Microseconds since the epoch, exactly (a float timestamp would round)."""
    return (utc(value) - _EPOCH) // timedelta(microseconds=1)


def audit_row(event: AuditEvent) -> dict[str, Any]:
    """``event`` as an entry's ``audit``, marked with the face it came through as a table row is."""
    event.details.setdefault("face", current_face())
    return {
        "occurred_us": epoch_us(event.at or datetime.now(UTC)),
        "action": event.action,
        "actor": event.actor,
        "agent_id": event.agent_id,
        "memory_id": event.memory_id,
        "query": event.query,
        "details": dumps(event.details),
    }


def audit_event(row: dict[str, Any], event_id: int) -> AuditEvent:
    """An entry's ``audit`` as the audit log will hold it once applied, numbered ``event_id``."""
    return AuditEvent(
        id=event_id, at=_EPOCH + timedelta(microseconds=row["occurred_us"]), action=row["action"], actor=row["actor"],
        agent_id=row["agent_id"], memory_id=row["memory_id"], query=row["query"], details=json.loads(row["details"]),
    )


class Journal:
    """An append-only file of ``Entry`` lines beside the store file (``<store>.journal``).

    It holds what searches retrieved and their audit lines: as private as the
    store. A new file is made with ``mode`` (the store's permissions), and an
    old one that is more open than that is narrowed to it.
    """

    def __init__(self, path: str, store_id: str, mode: int = 0o600) -> None:
        self.path = path
        self.store_id = store_id
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, mode)
        try:
            now = os.fstat(self._fd).st_mode & 0o777
            if now & ~mode:
                os.fchmod(self._fd, now & mode)
        except OSError:  # not ours to change (another owner's store, opened for reading its journal)
            pass
        self._size = os.fstat(self._fd).st_size  # written (lines or zeros) and flushed
        self._end = self._size  # where the next line goes; what is already there is unknown until ``clear``
        self.pending: list[Entry] = []  # appended, not yet applied
        self._next = 1

    @staticmethod
    def read(path: str, store_id: str, applied: int) -> list[Entry]:
        """The entries of the journal at ``path`` for this store that are not applied yet, in order.

        Reading stops at the first line that is not whole: it was being
        written when the process died, so its search never returned.
        """
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        out: list[Entry] = []
        for raw in data.split(b"\n")[:-1]:  # the last piece has no newline: torn or empty
            if raw.startswith(b"\0"):
                break  # the zeroed room after the last line
            try:
                line = json.loads(raw)
                entry = Entry(int(line["seq"]), [int(i) for i in line["ids"]], line["at"], dict(line["audit"]))
            except (ValueError, KeyError, TypeError):
                log.warning("%s: a damaged line; the journal is read up to it", path)
                break
            if line.get("store") != store_id:
                log.warning("%s belongs to another store; not applied", path)
                return []
            if entry.seq > applied:
                out.append(entry)
        return out

    def resume(self, entries: list[Entry], applied: int) -> None:
        """Take over what a previous process left: ``entries`` still to apply, numbering after them."""
        self.pending = list(entries)
        self._next = max([applied, *(e.seq for e in entries)]) + 1

    def append(self, ids: list[int], retrieved_us: int | None, audit: dict[str, Any]) -> Entry:
        """Write one entry and flush it to disk; when this returns, it survives a crash."""
        entry = Entry(self._next, ids, retrieved_us, audit)
        line = json.dumps(
            {"store": self.store_id, "seq": entry.seq, "ids": ids, "at": retrieved_us, "audit": audit},
            ensure_ascii=False, separators=(",", ":"),
        ).encode("utf-8") + b"\n"
        start, stop = self._end, self._end + len(line)
        if stop > self._size:
            self._reserve(stop)
        try:
            if os.pwrite(self._fd, line, start) != len(line):  # a full disk
                raise _short_write(self.path)
            os.fdatasync(self._fd)
        except OSError as exc:
            # Not flushed, so not acknowledged: zero the line whole, or it could
            # reach the disk later and be applied after a crash.
            try:
                os.pwrite(self._fd, bytes(len(line)), start)
            except OSError:
                pass
            raise _named(exc, self.path) from None
        self._end = stop
        self._next += 1
        self.pending.append(entry)
        return entry

    def reserve(self) -> None:
        """Room for the next lines now (a warm calls it), so that the first search does not flush a new size."""
        if self._end + CHUNK // 2 > self._size:
            self._reserve(self._end + CHUNK // 2)

    def _reserve(self, stop: int) -> None:
        """Zeros up to at least ``stop``, flushed: the file's new size is on disk before a line relies on it."""
        size = max(stop, self._size + CHUNK)
        try:
            if os.pwrite(self._fd, bytes(size - self._size), self._size) != size - self._size:
                raise _short_write(self.path)
            os.fdatasync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                pass
            raise _named(exc, self.path) from None
        self._size = size

    @property
    def written(self) -> int:
        """Bytes of lines in the file (applied or not) since it was last emptied."""
        return self._end

    def applied(self, seq: int) -> None:
        """Entries up to ``seq`` are in the tables: forget them, and empty the file if nothing else is pending.

        Lines left in the file up to ``seq`` are harmless: the store records the
        last sequence applied, and a reader skips them.
        """
        self.pending = [e for e in self.pending if e.seq > seq]
        if not self.pending:
            self.clear()

    def clear(self) -> None:
        """Empty the file once its entries are in the tables: zero what was written, keep the room."""
        if self._end:
            os.pwrite(self._fd, bytes(self._end), 0)
            os.fdatasync(self._fd)
        self._end = 0
        self.pending = []

    def close(self) -> None:
        try:
            os.close(self._fd)
        except OSError:
            pass


def _short_write(path: str) -> OSError:
    """A write that wrote less than it was given: the disk or the file size limit is full."""
    return OSError(errno.ENOSPC, "a short write (the disk is full, or the file at its size limit)", path)


def _named(exc: OSError, path: str) -> OSError:
    """``exc`` with the journal's path, for a message that says which file could not be written."""
    if exc.filename is not None or exc.errno is None:
        return exc
    return OSError(exc.errno, exc.strerror, path)


__all__ = ["Journal", "Entry", "BATCH", "SYNC_AT", "CHUNK", "journal_file", "audit_row", "audit_event", "epoch_us"]
