"""The DuckDB store's journal between the file and the tables: when its entries are applied, and where.

``Applier`` holds a store's journal (``lodviz.store.journal``) and applies it:

- ``open``: on a writable open, whatever a crashed process left is applied
  before anything else, and searches journal from then on (``append``);
- ``apply_if_long``: once ``BATCH`` entries are pending, a background thread
  applies them on a connection of its own, at a lower CPU priority, when the
  searches pause (``APPLY_WHEN_IDLE``) or at once when ``APPLY_AT_MOST`` are
  pending; past ``SYNC_AT`` bytes the search that fills the batch applies it;
- ``settle``: every other write, and every read of the audit log or of usage,
  has everything pending applied first (waiting for a background apply), so
  the audit log keeps the order things happened in;
- ``stop``, then ``close``: the thread ended, pending entries applied, an
  empty file removed.

A read-only open cannot apply the journal: ``check`` refuses one that holds
entries, or keeps them (``unapplied``) for the store to show as its writes
still to come (``unapplied_usage``, ``count_unapplied``, ``unapplied_events``).

It is handed what it works with, and nothing that holds the store: the
store's connection and lock, ``write`` (an entry batch's rows in one
transaction on a connection), ``driver`` (the context every DuckDB statement
runs in) and ``error`` (a file's ``OSError`` as a ``StoreError``). ``applied``
(called under the lock once entries are in the tables) is held weakly, and the
thread holds the applier weakly: a store dropped without ``close`` is
collected, and the thread then ends. The store calls ``settle``,
``apply_if_long`` and ``append`` only outside a transaction; the thread starts
an apply under the store's lock, which an open transaction holds throughout,
and a transaction begun while it writes settles first, so waits for it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any

import duckdb
import numpy as np

from lodviz.errors import StoreError
from lodviz.store.base import AuditEvent
from lodviz.store.journal import BATCH, SYNC_AT, Entry, Journal, audit_event, audit_row, epoch_us, journal_file
from lodviz.store.mirror import Mirror

log = logging.getLogger("lodviz.store")

#: The applier thread runs this much nicer than the searches (0-19).
APPLIER_NICENESS = 10
#: It applies a batch once no search has written for this many seconds: an agent's
#: searches come between its turns, and the upkeep then takes no search's CPU ...
APPLY_WHEN_IDLE = 0.05
#: ... or at once when this many entries are pending (searches that do not pause).
APPLY_AT_MOST = 4 * BATCH

_EPOCH_NAIVE = datetime(1970, 1, 1)


class Applier:
    """A store's journal (``journal``: None for ``:memory:``, read-only or closed) and its application to the tables."""

    def __init__(
        self,
        store_path: str,
        con: duckdb.DuckDBPyConnection,
        lock: threading.RLock,
        *,
        write: Callable[[duckdb.DuckDBPyConnection, list[Entry]], None],
        driver: Callable[[], AbstractContextManager[None]],
        error: Callable[[BaseException], StoreError],
        applied: Callable[[list[Entry]], None],
    ) -> None:
        self.path = store_path
        self.file = journal_file(store_path)
        self.journal: Journal | None = None
        #: A read-only open's view of what the journal holds and the tables do not yet (``check``).
        self.unapplied: list[Entry] = []
        self.thread: threading.Thread | None = None
        self._con = con
        self._lock = lock
        self._write = write
        self._driver = driver
        self._error = error
        self._applied_to_store = weakref.WeakMethod(applied)
        self._apply_con: duckdb.DuckDBPyConnection | None = None
        self._wanted = threading.Event()
        self._done = threading.Condition(lock)
        self._applying = False
        self._closing = False
        self._last_journalled = 0.0  # time.monotonic() of the last line journalled

    # -- opening -----------------------------------------------------------------------

    def open(self, read_meta: Callable[[], dict[str, str]], mode: int) -> None:
        """Apply what a crashed process left in the journal, and journal from now on (a new file gets ``mode``).

        ``read_meta``: the store's meta, where its id and the last sequence applied are kept."""
        if self.path == ":memory:":
            return
        meta = read_meta()
        # The store's id is made by its first journalled write, not here: an
        # open must leave a new store empty (``lodviz migrate`` copies into one).
        store_id = meta.get("store_id", "")
        applied = int(meta.get("journal_applied", "0") or 0)
        left = Journal.read(self.file, store_id, applied) if store_id else []
        self.journal = Journal(self.file, store_id, mode)
        self.journal.resume(left, applied)
        if left:
            log.info("%s: applying %d journalled writes the last process left", self.path, len(left))
            self.apply()
        elif os.path.getsize(self.file):
            self.journal.clear()  # applied already; the process died before emptying it

    def check(self, read_meta: Callable[[], dict[str, str]], read: bool = False) -> None:
        """A read-only open cannot apply a journal: refuse rather than show a past the log does not match,
        or (``read``) keep its entries, to show them as the store's writes still to come (``unapplied``).

        They are writes the store acknowledged (a search returned after its line was
        flushed); a process killed before it applied them leaves them there, and
        the next writable open applies them as they are. Reading them makes a
        read-only open see the store as that open will leave it, which is what
        ``lodviz audit verify`` must check right after a crash.
        """
        if self.path == ":memory:":
            return
        meta = read_meta()
        left = Journal.read(self.file, meta.get("store_id", ""), int(meta.get("journal_applied", "0") or 0))
        if left and read:
            self.unapplied = left
            log.info("%s: %d journalled writes not yet applied are read with the tables", self.path, len(left))
        elif left:
            raise StoreError(self._unapplied_message(len(left)))

    def require_applied(self) -> None:
        """Refuse what needs the tables as they will be (a copy of the store) while entries are ``unapplied``."""
        if self.unapplied:
            raise StoreError(self._unapplied_message(len(self.unapplied)))

    def _unapplied_message(self, n: int) -> str:
        return (
            f"{self.path} has {n} journalled writes the last process did not apply "
            "(it did not close the store); open it once without read-only to apply them."
        )

    # -- a search's writes ---------------------------------------------------------------

    def append(self, ids: list[int], now: datetime | None, audit: AuditEvent | None) -> None:
        """Journal a search's retrievals of ``ids`` at ``now`` and its audit line; on disk when this returns."""
        assert self.journal is not None
        row = audit_row(audit) if audit is not None else {}
        try:
            self.journal.append(ids, epoch_us(now) if ids and now is not None else None, row)
        except OSError as exc:  # a full disk: not acknowledged, and not in the journal either
            raise self._error(exc) from None
        self._last_journalled = time.monotonic()

    def reserve(self) -> None:
        """Room in the file for the next lines now (``Journal.reserve``), if it can be made."""
        assert self.journal is not None
        try:
            self.journal.reserve()
        except OSError as exc:  # room made ahead is an optimisation: the first search tries again
            log.warning("could not make room in the journal of %s: %s", self.path, exc)

    # -- applying on the caller's path ---------------------------------------------------

    def settle(self) -> None:
        """Bring the tables up to date with the journal (before a write or a read of audit or usage)."""
        if self.journal is not None and (self.journal.pending or self._applying):
            self.apply()

    def apply(self) -> None:
        """Write the journal's pending entries to the tables in one transaction, then empty it (on the caller's path)."""
        with self._lock:
            self.wait_for_thread()
            journal = self.journal
            if journal is None or not journal.pending:
                return
            entries: list[Entry] = list(journal.pending)
            with self._driver():
                self._write(self._con, entries)
            self._entries_applied(journal, entries)

    def apply_if_long(self) -> None:
        """Once the journal holds ``BATCH`` entries, have them applied; they are safe in it if that fails.

        In the background (``_apply_in_background``), unless the journal's file
        has grown past ``journal.SYNC_AT``: searches that kept coming while each
        batch was applied left lines in it, and only an apply with none coming
        can empty it, so this one search does it.
        """
        journal = self.journal
        if journal is None or len(journal.pending) < BATCH:
            return
        if journal.written < SYNC_AT:
            if not self._applying:
                self._apply_in_background()
            return
        try:
            self.apply()
        except StoreError as exc:  # the entries stay in the journal, for the next try
            log.warning("could not apply the journal to %s yet: %s", self.path, exc)

    def _entries_applied(self, journal: Journal, entries: list[Entry]) -> None:
        """``entries`` are in the tables (under the lock): the store is told, and the journal forgets them."""
        applied = self._applied_to_store()
        if applied is not None:
            applied(entries)
        try:
            journal.applied(entries[-1].seq)  # empties the file when nothing else is pending
        except OSError as exc:  # its lines are applied, and skipped when read: the file empties next time
            log.warning("could not empty the journal of %s: %s", self.path, exc)

    # -- the thread: the journal written to the tables off the searches' path --------------

    def _apply_in_background(self) -> None:
        """Have the applier thread write the pending entries to the tables (started on first use).

        A search's writes are on disk, in the journal, before it returns; their
        rows in the tables are upkeep (~15-20 ms for a batch at 100k memories).
        Done in the search that filled the batch, that was every 64th search's
        wait. The applier does it on a connection of its own (DuckDB lets go of
        the GIL while it works), at a lower CPU priority, once no search has
        written for ``APPLY_WHEN_IDLE`` (an agent's searches come between its
        turns), or at once when ``APPLY_AT_MOST`` entries are pending.
        """
        if self.thread is None:
            self._apply_con = self._con.cursor()
            self.thread = threading.Thread(
                target=_applier_loop, args=(weakref.ref(self), self._wanted), name="lodviz-journal", daemon=True
            )
            weakref.finalize(self, self._wanted.set)
            self.thread.start()
        self._wanted.set()

    def apply_pending_once(self) -> None:
        """One background apply of what is pending now (the applier thread's step)."""
        with self._lock:
            journal = self.journal
            if journal is None or self._applying or not journal.pending:
                return
            entries = list(journal.pending)
            self._applying = True
        applied = False
        try:
            assert self._apply_con is not None
            with self._driver():
                self._write(self._apply_con, entries)
            applied = True
        except Exception as exc:  # upkeep only: the entries stay in the journal, for the next try
            log.warning("could not apply the journal to %s yet: %s", self.path, exc)
        finally:
            with self._lock:
                try:
                    if applied and self.journal is journal:
                        self._entries_applied(journal, entries)
                except OSError as exc:  # emptying the file failed: its lines are applied, and skipped when read
                    log.warning("could not empty the journal of %s: %s", self.path, exc)
                finally:
                    self._applying = False
                    self._done.notify_all()

    def idle_wait(self) -> float:
        """Seconds the thread should still wait: until ``APPLY_WHEN_IDLE`` without a journalled write,
        or none once ``APPLY_AT_MOST`` entries are pending (searches that never pause)."""
        journal = self.journal
        if journal is None or len(journal.pending) >= APPLY_AT_MOST:
            return 0.0
        return APPLY_WHEN_IDLE - (time.monotonic() - self._last_journalled)

    def wait_for_thread(self) -> None:
        """Wait (holding the store's lock between checks) until no background apply is running."""
        with self._lock:
            while self._applying:
                self._done.wait()

    # -- closing ---------------------------------------------------------------------------

    def stop(self) -> None:
        """End the thread (after any apply it is running): before ``close``, without the store's lock (its last step takes it)."""
        thread = self.thread
        if thread is None:
            return
        self._closing = True
        self._wanted.set()
        thread.join()
        self.thread = None
        if self._apply_con is not None:
            try:
                self._apply_con.close()
            except duckdb.Error:
                pass
            self._apply_con = None

    def close(self, settle: bool = True) -> None:
        """Apply what is pending (``settle``), close the file and, empty, remove it (under the store's lock)."""
        journal = self.journal
        if journal is None:
            return
        if settle:
            try:
                self.settle()
            except StoreError as exc:  # the journal keeps them: the next open applies them
                log.warning("could not apply the journal to %s on close: %s", self.path, exc)
        journal.close()
        if not journal.pending:
            # Empty: leave no file behind. Still holding DuckDB's lock on the
            # store, so no other process can have opened a journal of its own.
            try:
                os.remove(self.file)
            except OSError:
                pass
        self.journal = None

    # -- a read-only open's view of what is not applied yet -----------------------------

    def unapplied_usage(self, usage: dict[int, tuple[Any, int]], ids: Sequence[int]) -> None:
        """Add the ``unapplied`` retrievals of ``ids`` to ``usage`` (id: last retrieved, naive UTC, and count)."""
        wanted = set(ids)
        for entry in self.unapplied:
            for memory_id in entry.ids:
                if memory_id in wanted:
                    usage[memory_id] = (
                        _EPOCH_NAIVE + timedelta(microseconds=entry.retrieved_us or 0), usage.get(memory_id, (None, 0))[1] + 1
                    )

    def count_unapplied(self, mirror: Mirror) -> None:
        """Count the ``unapplied`` retrievals in ``mirror``'s columns, as a touch counts them."""
        for entry in self.unapplied:
            rows = mirror.rows(entry.ids)
            known = rows < mirror.n
            known[known] = mirror.column("ids")[rows[known]] == np.asarray(entry.ids, dtype=np.int64)[known]
            mirror.column("last_retrieved_at")[rows[known]] = (entry.retrieved_us or 0) / 1e6
            np.add.at(mirror.column("retrieval_count"), rows[known], 1)

    def unapplied_events(self, last_id: int) -> list[AuditEvent]:
        """The ``unapplied`` audit lines, oldest first, numbered after ``last_id`` as applying them will."""
        audits = [e.audit for e in self.unapplied if e.audit]
        return [audit_event(a, last_id + n) for n, a in enumerate(audits, start=1)]


def _lower_this_threads_priority() -> None:
    """Nice the calling thread (Linux: a thread's own priority), so upkeep yields the CPU to searches."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), APPLIER_NICENESS)
    except (AttributeError, OSError):  # not Linux, or not allowed: run at the usual priority
        pass


def _applier_loop(applier_ref: weakref.ref[Applier], wanted: threading.Event) -> None:
    """The applier thread (``Applier._apply_in_background``): one apply per wake-up, once idle."""
    _lower_this_threads_priority()
    while True:
        wanted.wait()
        wanted.clear()
        while True:  # until the searches pause, or the journal is long
            applier = applier_ref()
            if applier is None or applier._closing:
                return
            wait = applier.idle_wait()
            del applier
            if wait <= 0:
                break
            time.sleep(wait)
        applier = applier_ref()
        if applier is None or applier._closing:
            return
        applier.apply_pending_once()
        del applier


__all__ = ["Applier", "APPLY_WHEN_IDLE", "APPLY_AT_MOST", "APPLIER_NICENESS"]
