"""`lodviz audit verify`: the audit log accounts for every count, floor, profile and write, and tampering shows."""

from __future__ import annotations

import duckdb
from click.testing import CliRunner

import lodviz
from lodviz.cli import cli
from lodviz.verify import verify


def busy_store(path, embedder) -> None:
    mem = lodviz.open(path, embedder=embedder)
    mem.add_many([
        {"text": "The quarterly supplier audit found three issues.", "agent_id": "ops", "retrieval_count": 4,
         "last_retrieved_at": "2026-01-01T00:00:00Z"},
        {"text": "Plant 7 passed the audit with no findings.", "agent_id": "ops", "floor": "SUMMARY"},
        {"text": "The board approved the budget.", "agent_id": "exec"},
    ])
    mem.search("supplier audit", agent_id="ops")
    mem.expand(3, agent_id="exec")
    mem.promote(1, agent_id="ops", reason="precedent")
    mem.demote(2, agent_id="ops")
    mem.set_profile("ops", "legal", reason="legal work")
    mem.search("board budget", agent_id="exec", touch=False)
    mem.close()


def test_a_store_used_through_lodviz_verifies_clean(tmp_path, embedder):
    path = tmp_path / "m.duckdb"
    busy_store(path, embedder)
    mem = lodviz.open(path, embedder=embedder)
    report = verify(mem)
    mem.close()
    assert report.ok, [str(d) for d in report.disagreements]
    assert report.memories == 3 and report.checks == 3 * 3 + 1 and report.unverifiable == 0


def test_a_count_or_floor_changed_behind_lodvizs_back_is_reported(tmp_path, embedder):
    path = tmp_path / "m.duckdb"
    busy_store(path, embedder)
    con = duckdb.connect(str(path))
    con.execute("UPDATE memories SET floor = 3 WHERE id = 3")
    con.execute("INSERT INTO usage VALUES (2, 9, TIMESTAMP '2026-01-01') ON CONFLICT (memory_id) DO UPDATE SET retrieval_count = 9")
    con.execute("UPDATE profiles SET alpha = 0.99 WHERE agent_id = 'ops'")
    con.close()
    result = CliRunner().invoke(cli, ["--store", str(path), "audit", "verify"])
    assert result.exit_code == 1
    assert "3 disagreements" in result.output
    assert "memory 3: floor is 'FULL', the audit log says 'OUT'" in result.output
    assert "memory 2: retrieval_count is 10, the audit log says 1" in result.output  # 9 set by hand + 1 search
    assert "agent ops: profile" in result.output


def test_a_memory_no_write_event_names_is_reported(tmp_path, embedder):
    path = tmp_path / "m.duckdb"
    busy_store(path, embedder)
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO memories SELECT 99, text, summary, headline, embedding, embedding_model, 'sneaked', created_at, floor, "
                "agent_id, visibility, kind, source, metadata, layout_x, layout_y, forgotten_at FROM memories WHERE id = 1")
    con.close()
    mem = lodviz.open(path, embedder=embedder)
    report = verify(mem)
    mem.close()
    assert [(d.what, d.subject) for d in report.disagreements] == [("unwritten", "memory 99")]


def test_tampering_shows_on_a_store_that_never_imported_usage(tmp_path, embedder):
    path = tmp_path / "plain.duckdb"
    mem = lodviz.open(path, embedder=embedder)
    mem.add("The supplier audit is due in March.", agent_id="ops")
    mem.add("Plant 7 passed the audit.", agent_id="ops")
    mem.close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE memories SET floor = 3 WHERE id = 1")
    con.execute("INSERT INTO usage VALUES (2, 9, TIMESTAMP '2026-01-01') ON CONFLICT (memory_id) DO UPDATE SET retrieval_count = 9")
    con.close()
    mem = lodviz.open(path, embedder=embedder)
    report = verify(mem)
    mem.close()
    assert sorted((d.what, d.subject) for d in report.disagreements) == [("floor", "memory 1"), ("retrieval_count", "memory 2")]
    assert report.unverifiable == 0
