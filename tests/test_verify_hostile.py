"""`lodviz audit verify` after a crash, and on a log someone emptied.

- F8: right after a process is killed with searches still in the journal, the
  store verifies clean read-only: the journal's entries are the store's own
  acknowledged writes, read with the tables (and applied by the next writable open).
- F12: an emptied audit log is reported in sentences that say what is there and
  what is missing, not the other way round.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

import lodviz
from lodviz.cli import cli
from lodviz.errors import StoreError
from lodviz.migrate import copy_store
from lodviz.testing import HashEmbedder
from lodviz.verify import verify

ROOT = Path(__file__).resolve().parents[1]

CRASH = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, sys.argv[1])
    import lodviz
    from lodviz.testing import HashEmbedder

    mem = lodviz.open(sys.argv[2], embedder=HashEmbedder(64))
    mem.add_many([{"text": f"note {i}: the supplier audit of plant {i} found {i % 3} issues", "agent_id": "ops"} for i in range(20)])
    mem.search("supplier audit", agent_id="ops", k=10)
    mem.search("plant issues", agent_id="ops", k=5)
    mem.search("audit", agent_id="ops", touch=False)
    print("acknowledged", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # the searches' writes are in the journal only
    """
)


@pytest.fixture
def crashed(tmp_path: Path) -> Path:
    path = tmp_path / "s.duckdb"
    run = subprocess.run([sys.executable, "-c", CRASH, str(ROOT), str(path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == -signal.SIGKILL and "acknowledged" in run.stdout, run.stderr
    assert Path(str(path) + ".journal").read_bytes().rstrip(b"\0")  # lines no process applied
    return path


def _usage(columns) -> dict[int, tuple[int, float | None]]:
    return {
        i: (count, None if math.isnan(last) else last)
        for i, count, last in zip(columns.ids.tolist(), columns.retrieval_count.tolist(), columns.last_retrieved_at.tolist())
    }


@pytest.mark.slow
def test_audit_verify_right_after_a_crash_accounts_for_the_journal_and_agrees(crashed: Path) -> None:
    result = CliRunner().invoke(cli, ["--store", str(crashed), "--model", "hash:64", "audit", "verify", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["ok"] and report["events"] == 4 and report["memories"] == 20  # the write and the three searches
    # Read-only: the journal is still there, and the library sees what the CLI saw.
    assert Path(str(crashed) + ".journal").read_bytes().rstrip(b"\0")
    mem = lodviz.open(crashed, embedder=HashEmbedder(64), read_only=True)
    try:
        read_only_events = [(e.id, e.action, e.query) for e in reversed(mem.audit(limit=100))]
        assert [a for _, a, _ in read_only_events] == ["write", "search", "search", "search"]
        assert [e.query for e in mem.audit(actions=["search"], limit=1)] == ["audit"]
        columns = mem.columns()
        read_only_usage = _usage(columns)
        assert sum(count for count, _ in read_only_usage.values()) > 0  # the journalled searches' retrievals
        used = next(i for i, (count, _) in read_only_usage.items() if count)
        assert mem.get(used).retrieval_count == read_only_usage[used][0]  # a record's usage too
        with pytest.raises(StoreError, match="journalled writes"):  # a copy takes applied tables only
            copy_store(str(crashed), str(crashed.with_name("copy.duckdb")))
        assert not crashed.with_name("copy.duckdb").exists()
    finally:
        mem.close()
    # A writable open applies the journal: the same events with the same ids, the same usage, still agreeing.
    mem = lodviz.open(crashed, embedder=HashEmbedder(64))
    try:
        assert [(e.id, e.action, e.query) for e in reversed(mem.audit(limit=100))] == read_only_events
        columns = mem.columns()
        assert _usage(columns) == read_only_usage
        assert verify(mem).ok
    finally:
        mem.close()


@pytest.mark.slow
def test_a_journal_that_disagrees_with_itself_is_reported(crashed: Path) -> None:
    # Someone edits the journal: a search's line no longer counts a memory its audit line says it touched.
    journal = Path(str(crashed) + ".journal")
    data = journal.read_bytes()
    lines = data.rstrip(b"\0").split(b"\n")[:-1]
    first = json.loads(lines[0])
    dropped = first["ids"].pop(0)
    lines[0] = json.dumps(first, separators=(",", ":")).encode()
    edited = b"\n".join(lines) + b"\n"
    journal.write_bytes(edited + bytes(max(0, len(data) - len(edited))))
    result = CliRunner().invoke(cli, ["--store", str(crashed), "--model", "hash:64", "audit", "verify"])
    assert result.exit_code == 1
    assert f"memory {dropped}: retrieval_count is" in result.output


def _busy(path: Path) -> None:
    mem = lodviz.open(path, embedder=HashEmbedder(64))
    mem.add_many([
        {"text": "The quarterly supplier audit found three issues.", "agent_id": "ops"},
        {"text": "Plant 7 passed the audit with no findings.", "agent_id": "ops"},
        {"text": "The board approved the budget.", "agent_id": "exec"},
    ])
    mem.search("supplier audit", agent_id="ops")
    mem.set_profile("ops", "legal", reason="legal work")
    mem.close()


def test_an_emptied_audit_log_is_reported_in_sentences_that_read_right(tmp_path: Path) -> None:
    path = tmp_path / "m.duckdb"
    _busy(path)
    con = duckdb.connect(str(path))
    con.execute("DELETE FROM audit")  # what TRUNCATE does; DuckDB has no trigger to refuse it
    con.close()
    result = CliRunner().invoke(cli, ["--store", str(path), "--model", "hash:64", "audit", "verify"])
    assert result.exit_code == 1
    out = result.output
    assert "the audit log is empty, but the store holds 3 memories" in out
    assert "memory 1 is stored, but no write event in the audit log names it" in out
    assert "agent ops: profile is {" in out and "but no profile event in the audit log sets it" in out
    # Not the old sentences, which had the log saying what it lacks.
    assert "the audit log says 'a write event naming it'" not in out and "the audit log says 'a profile event'" not in out
    report = json.loads(CliRunner().invoke(cli, ["--store", str(path), "--model", "hash:64", "audit", "verify", "--json"]).output)
    unwritten = [d for d in report["disagreements"] if d["what"] == "unwritten"]
    assert len(unwritten) == 3 and all(d["expected"] is None and d["found"] == "stored" for d in unwritten)
