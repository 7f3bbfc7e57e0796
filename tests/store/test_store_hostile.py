"""The stores against a hostile machine: other local users, a full disk, floods of near-duplicates, a TRUNCATE.

- F4: every file a DuckDB store makes (the store, its ``.wal``, its ``.journal``) is its owner's alone.
- F5: a batch's conflict links are bounded per new memory, in both backends.
- F9: a full disk during a write is a ``StoreError`` sentence, not DuckDB's exception.
- F12: ``TRUNCATE audit`` is refused in PostgreSQL, as UPDATE and DELETE are.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import lodviz
from lodviz.records import ConflictLink
from lodviz.store.base import AuditEvent
from lodviz.store.duckdb import DuckDBStore
from lodviz.testing import HashEmbedder
from lodviz.verify import verify
from tests.store.test_store import T0, memory, open_store  # noqa: F401  (open_store: the fixture, both backends)

ROOT = Path(__file__).resolve().parents[2]
#: The bound on a new memory's conflict links (``lodviz.conflicts.MAX_LINKS``), pinned.
MAX_LINKS = 3


def _modes(folder: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}


@pytest.fixture
def umask_022():
    """The common umask, under which DuckDB and ``open`` make files every local user can read."""
    before = os.umask(0o022)
    yield
    os.umask(before)


# -- F4: the files a store makes are private ------------------------------------------


def test_a_new_store_its_wal_and_its_journal_are_readable_by_their_owner_only(tmp_path: Path, umask_022) -> None:
    path = tmp_path / "s.duckdb"
    store = DuckDBStore(path)
    try:
        store.insert([memory(i) for i in range(3)], AuditEvent(action="write", actor="t"))  # a commit: DuckDB makes the .wal
        store.touch([1, 2], T0, AuditEvent(action="search", actor="t", query="private words"))  # a journalled search
        modes = _modes(tmp_path)
        assert {"s.duckdb", "s.duckdb.wal", "s.duckdb.journal"} <= set(modes)
        assert {name: oct(mode) for name, mode in modes.items()} == {name: oct(0o600) for name in modes}
        store._run("CHECKPOINT")  # the WAL is gone; the next commit makes a new one
        assert "s.duckdb.wal" not in _modes(tmp_path)
        store.set_floor(1, 2, AuditEvent(action="promote", actor="t", memory_id=1))
        assert oct(_modes(tmp_path)["s.duckdb.wal"]) == oct(0o600)
        assert os.umask(0o022) == 0o022  # and the process's own umask is what it was
    finally:
        store.close()
    # Through the library, as the CLI and the server use it: the same.
    mem = lodviz.open(tmp_path / "m.duckdb", embedder=HashEmbedder(64))
    try:
        mem.add("A private memory about the merger.", agent_id="legal")
        mem.search("merger", agent_id="legal")
        modes = _modes(tmp_path)
        assert {"m.duckdb", "m.duckdb.wal", "m.duckdb.journal"} <= set(modes)
        assert all(modes[name] == 0o600 for name in modes if name.startswith("m.duckdb")), modes
    finally:
        mem.close()


def test_an_existing_store_keeps_its_permissions_and_its_files_follow_them(tmp_path: Path, umask_022) -> None:
    path = tmp_path / "s.duckdb"
    DuckDBStore(path).close()
    os.chmod(path, 0o640)  # its owner shares it with a group, on purpose
    Path(str(path) + ".journal").write_bytes(b"")  # left by an older lodviz, world-readable
    os.chmod(str(path) + ".journal", 0o644)
    with DuckDBStore(path) as store:
        store.insert([memory(1)], None)
        store.touch([1], T0, AuditEvent(action="search", actor="t"))
        modes = _modes(tmp_path)
        assert modes["s.duckdb"] == 0o640  # lodviz does not change what the owner chose
        assert modes["s.duckdb.wal"] == 0o640 and modes["s.duckdb.journal"] == 0o640  # never more open than the store


# -- F5: conflict links are bounded per new memory -----------------------------------------


def test_a_batch_stores_at_most_max_links_conflicts_per_new_memory(open_store) -> None:  # noqa: F811
    store = open_store()
    old = store.insert([memory(i) for i in range(10)], None)
    batch = [memory(100 + i) for i in range(4)]
    # Every new memory a candidate of every old one and of every earlier new one: a flood of near-duplicates.
    links = [ConflictLink(i, int(o or 0), 0.8 + 0.01 * k, f"{k} instead of 1") for i in range(4) for k, o in enumerate(old)]
    links += [ConflictLink(i, j, 0.95, "2 instead of 1", other_is_new=True) for i in range(4) for j in range(i)]
    event = AuditEvent(action="write", actor="t")
    ids = store.insert(batch, event, links)
    found = store.conflicts()
    per_memory: dict[int, int] = {}
    for c in found:
        per_memory[c.memory_id] = per_memory.get(c.memory_id, 0) + 1
    assert set(per_memory) == set(ids)
    assert max(per_memory.values()) == MAX_LINKS and len(found) <= MAX_LINKS * len(batch)
    # The most similar are the ones kept: for the first new memory, the three last old ones.
    assert {c.other_id for c in found if c.memory_id == ids[0]} == set(old[-MAX_LINKS:])
    assert sorted(map(tuple, event.details["conflicts"])) == sorted((c.memory_id, c.other_id) for c in found)


# -- F9: a full disk is a StoreError ----------------------------------------------------------------

FULL_DISK = textwrap.dedent(
    """
    import json, resource, signal, sys
    sys.path.insert(0, sys.argv[1])
    import lodviz
    from lodviz.testing import HashEmbedder

    path, what = sys.argv[2], sys.argv[3]
    mem = lodviz.open(path, embedder=HashEmbedder(64))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), as on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, resource.RLIM_INFINITY))
    out = {}
    try:
        if what == "add":
            mem.add("A memory too big for the disk: " + "words " * 4000, agent_id="ops")
        elif what == "ingest":
            mem.add_many([{"text": f"imported memory {i}: " + "lines " * 500, "agent_id": "ops"} for i in range(40)])
        else:
            mem.search("budget", agent_id="ops", touch=False)
    except BaseException as exc:
        out = {"module": type(exc).__module__, "type": type(exc).__name__, "message": str(exc),
               "store_error": isinstance(exc, lodviz.StoreError)}
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))  # room again
    out["after"] = mem.add("Written once the disk has room again.", agent_id="ops")
    mem.close()
    print(json.dumps(out))
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("what", ["add", "ingest", "search-no-touch"])
def test_a_full_disk_is_a_store_error_in_one_sentence_and_the_store_stays_whole(tmp_path: Path, what: str) -> None:
    path = tmp_path / "s.duckdb"
    mem = lodviz.open(path, embedder=HashEmbedder(64))
    mem.add_many([{"text": f"seed memory {i} about the budget", "agent_id": "ops"} for i in range(30)])
    mem.close()
    run = subprocess.run([sys.executable, "-c", FULL_DISK, str(ROOT), str(path), what], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out.get("store_error") is True, out  # not duckdb's TransactionException, nor an OSError
    assert out["message"].startswith("the store could not be written: ") and "\n" not in out["message"], out
    mem = lodviz.open(path, embedder=HashEmbedder(64), read_only=True)
    try:
        assert len(mem) == 31  # the seeds and the write after: nothing of the failed one
        report = verify(mem)
        assert report.ok, [str(d) for d in report.disagreements]
    finally:
        mem.close()


# -- F12: TRUNCATE of the audit log is refused in PostgreSQL ----------------------------------------


def test_truncating_the_audit_log_is_refused_in_postgres(pg_url: str, monkeypatch) -> None:
    psycopg = pytest.importorskip("psycopg")
    from lodviz.store import postgres

    monkeypatch.setattr(postgres, "MIGRATIONS", postgres.MIGRATIONS[:2])
    postgres.PostgresStore(pg_url).close()  # a store made before the rule: its next open migrates it
    monkeypatch.undo()
    with postgres.PostgresStore(pg_url) as store:
        store.record(AuditEvent(action="search", actor="t", query="kept"))
    with psycopg.connect(pg_url, autocommit=True) as con:
        with pytest.raises(psycopg.Error, match="append-only"):
            con.execute("TRUNCATE audit")
        with pytest.raises(psycopg.Error, match="append-only"):
            con.execute("TRUNCATE audit CASCADE")
    with postgres.PostgresStore(pg_url) as store:
        assert [e.query for e in store.audit()] == ["kept"]
