"""The DuckDB store's journal: a search's writes are on disk when it returns, and reach the tables once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lodviz.errors import StoreError
from lodviz.store import applier as applier_module
from lodviz.store.base import AuditEvent
from lodviz.store.duckdb import DuckDBStore
from lodviz.store.journal import BATCH
from tests.store.test_store import T0, memory

ROOT = Path(__file__).resolve().parents[2]


def _usage(store: DuckDBStore) -> dict[int, tuple[int, datetime | None]]:
    records = store.get(store.state().ids.tolist())
    return {i: (r.retrieval_count, r.last_retrieved_at) for i, r in records.items()}


@pytest.mark.slow
def test_searches_acknowledged_before_a_crash_are_in_the_tables_after_it(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with DuckDBStore(path) as store:
        store.insert([memory(i) for i in range(5)], None)
    worker = textwrap.dedent(
        f"""
        import os, sys
        from datetime import datetime, UTC
        sys.path.insert(0, {str(ROOT)!r})
        from lodviz.store.duckdb import DuckDBStore
        from lodviz.store.base import AuditEvent
        store = DuckDBStore({str(path)!r})
        for n in range(3):
            store.touch([1, 2], datetime(2025, 5, 1 + n, tzinfo=UTC), AuditEvent(action="search", actor="w", query=f"q{{n}}", details={{"touched": [1, 2]}}))
        store.record(AuditEvent(action="search", actor="w", query="look", details={{"looked_only": True}}))
        print("acknowledged", flush=True)
        os._exit(0)  # no close: as if killed
        """
    )
    out = subprocess.run([sys.executable, "-c", worker], capture_output=True, text=True, check=True)
    assert "acknowledged" in out.stdout
    assert Path(str(path) + ".journal").read_bytes().rstrip(b"\0")  # lines: nothing was applied before the "crash"
    with DuckDBStore(path) as store:
        usage = _usage(store)
        assert usage[1] == (3, datetime(2025, 5, 3, tzinfo=UTC))
        assert usage[2] == (3, datetime(2025, 5, 3, tzinfo=UTC))
        assert usage[3] == (0, None)
        queries = [e.query for e in reversed(store.audit(actions=["search"]))]
        assert queries == ["q0", "q1", "q2", "look"]
    assert not Path(str(path) + ".journal").exists()  # applied, and a clean close removes it
    with DuckDBStore(path) as store:  # applied once: a second open adds nothing
        assert _usage(store)[1][0] == 3
        assert len(store.audit(actions=["search"])) == 4


def test_a_torn_last_line_was_never_acknowledged_and_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with DuckDBStore(path) as store:
        store.insert([memory(1)], None)
        store.touch([1], T0, AuditEvent(action="search", actor="t", query="kept"))
        journal = Path(store._applier.file).read_bytes().rstrip(b"\0")  # the rest of the file is zeroed room
        assert journal.endswith(b"\n")
        store._applier.journal = None  # leave the line in the file, as a crash would
        store._con.close()
    # A crash in the middle of the next line's write:
    Path(str(path) + ".journal").write_bytes(journal + journal[: len(journal) // 2])
    with DuckDBStore(path) as store:
        assert [e.query for e in store.audit(actions=["search"])] == ["kept"]
        assert _usage(store)[1][0] == 1


def test_a_read_only_open_refuses_a_journal_it_cannot_apply(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with DuckDBStore(path) as store:
        store.insert([memory(1)], None)
        store.touch([1], T0, AuditEvent(action="search", actor="t", query="q"))
        store._applier.journal = None
        store._con.close()
    with pytest.raises(StoreError, match="journalled"):
        DuckDBStore(path, read_only=True)
    DuckDBStore(path).close()  # a writable open applies it
    with DuckDBStore(path, read_only=True) as store:
        assert _usage(store)[1][0] == 1


def test_other_writes_come_after_the_journalled_searches_in_the_audit_log(tmp_path: Path) -> None:
    with DuckDBStore(tmp_path / "s.duckdb") as store:
        store.insert([memory(1)], None)
        store.touch([1], T0, AuditEvent(action="search", actor="t", query="first"))
        store.set_floor(1, 2, AuditEvent(action="promote", actor="t", memory_id=1))
        store.record(AuditEvent(action="search", actor="t", query="third"))
        events = list(reversed(store.audit()))
        assert [e.action for e in events][-3:] == ["search", "promote", "search"]
        assert [e.id for e in events] == sorted(e.id for e in events)


def _wait_until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the applier thread did not get to it"
        time.sleep(0.01)


def _wait_until_applied(store: DuckDBStore) -> None:
    _wait_until(lambda: store._applier.journal is not None and not store._applier.journal.pending)
    store._applier.wait_for_thread()  # and its last step (emptying the file) done: it holds the lock for it


def test_a_full_batch_is_applied_in_the_background_while_searches_go_on(tmp_path: Path) -> None:
    with DuckDBStore(tmp_path / "s.duckdb") as store:
        store.insert([memory(1)], None)
        for _ in range(BATCH - 1):
            store.touch([1], T0, AuditEvent(action="search", actor="t", query="q"))
        assert store._applier.journal is not None and len(store._applier.journal.pending) == BATCH - 1
        assert store._applier.thread is None  # nothing to apply yet
        store.touch([1], T0, AuditEvent(action="search", actor="t", query="q"))
        assert store._applier.thread is not None
        # Applied by the applier thread, on its own connection; nothing here asks for it.
        _wait_until_applied(store)
        assert store._applier.journal.written == 0  # and the file emptied
        assert store._con.execute("SELECT count(*) FROM retrievals").fetchall() == [(BATCH,)]
        assert store._con.execute("SELECT count(*) FROM audit WHERE query = 'q'").fetchall() == [(BATCH,)]
        assert _usage(store)[1][0] == BATCH


def test_the_applier_waits_for_a_pause_in_the_searches_unless_the_journal_is_long(tmp_path: Path, monkeypatch) -> None:
    with DuckDBStore(tmp_path / "s.duckdb") as store:
        store.insert([memory(1)], None)
        store.touch([1], T0, AuditEvent(action="search", actor="t", query="q"))
        assert 0 < store._applier.idle_wait() <= applier_module.APPLY_WHEN_IDLE  # a search just wrote: not yet
        monkeypatch.setattr(applier_module, "APPLY_AT_MOST", 1)
        assert store._applier.idle_wait() == 0  # searches that never pause: now
        monkeypatch.setattr(applier_module, "APPLY_AT_MOST", 4 * BATCH)
        monkeypatch.setattr(applier_module, "APPLY_WHEN_IDLE", 0.0)
        assert store._applier.idle_wait() <= 0  # a pause as long as asked for: now


def test_a_write_waits_for_a_background_apply_and_comes_after_it_in_the_audit_log(tmp_path: Path) -> None:
    with DuckDBStore(tmp_path / "s.duckdb") as store:
        store.insert([memory(1)], None)
        for n in range(BATCH):
            store.touch([1], T0, AuditEvent(action="search", actor="t", query=f"q{n}"))
        store.set_floor(1, 2, AuditEvent(action="promote", actor="t", memory_id=1))  # while the applier may be at work
        events = list(reversed(store.audit()))
        assert [e.query for e in events if e.action == "search"] == [f"q{n}" for n in range(BATCH)]
        assert events[-1].action == "promote"
        assert [e.id for e in events] == sorted(e.id for e in events)


def test_searches_during_background_applies_keep_the_file_bounded(tmp_path: Path, monkeypatch) -> None:
    # Lines that arrive while a batch is being applied keep the file from being emptied; past SYNC_AT
    # bytes a search applies the batch itself and empties it.
    monkeypatch.setattr("lodviz.store.applier.SYNC_AT", 4096)
    with DuckDBStore(tmp_path / "s.duckdb") as store:
        store.insert([memory(1)], None)
        for n in range(5 * BATCH):
            store.touch([1], T0, AuditEvent(action="search", actor="t", query=f"q{n}", details={"pad": "x" * 200}))
            assert store._applier.journal is not None and store._applier.journal.written < 4096 + BATCH * 400
        assert _usage(store)[1][0] == 5 * BATCH
        assert len(store.audit(actions=["search"], limit=10 * BATCH)) == 5 * BATCH


def test_a_store_dropped_without_close_ends_its_applier(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    store.insert([memory(1)], None)
    for _ in range(BATCH):
        store.touch([1], T0, AuditEvent(action="search", actor="t", query="q"))
    thread = store._applier.thread
    assert thread is not None
    _wait_until_applied(store)
    del store
    import gc

    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_of_journalled_retrievals_the_last_logged_sets_last_retrieved_at(tmp_path: Path) -> None:
    # The contract (migration 006): a retrieval sets last_retrieved_at to its search's now,
    # even when an earlier search named a later one; a batch applied at once keeps that order.
    later, earlier = datetime(2025, 6, 1, tzinfo=UTC), datetime(2025, 5, 1, tzinfo=UTC)
    with DuckDBStore(tmp_path / "s.duckdb") as store:
        store.insert([memory(1)], None)
        store.touch([1], later, AuditEvent(action="search", actor="t", query="first"))
        store.touch([1], earlier, AuditEvent(action="search", actor="t", query="second"))
        assert store._applier.journal is not None and len(store._applier.journal.pending) == 2
        assert _usage(store)[1] == (2, earlier)


def test_a_clean_close_leaves_no_journal_file(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with DuckDBStore(path) as store:
        store.insert([memory(1)], None)
        store.touch([1], T0, AuditEvent(action="search", actor="t", query="q"))
        assert Path(store._applier.file).exists()
    assert not Path(str(path) + ".journal").exists()
    with DuckDBStore(path) as store:
        assert _usage(store)[1][0] == 1
