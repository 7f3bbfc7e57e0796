"""Imports from other memory systems, each from its own files: a mem0 ``get_all`` dump, a MemPalace
palace (its Chroma SQLite file) and Letta agent files (tests/fixtures/mem0, mempalace, letta; each
folder's README says how its files were made).

Every import through the command line goes into a real temporary DuckDB store.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

import lodviz
from lodviz.ingest import memory_systems
from lodviz.ingest.importers import read_path
from tests.importing import KEPT, assert_refused_in_one_line, ingest, kept_store

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MEM0 = FIXTURES / "mem0" / "get_all.json"
PALACE = FIXTURES / "mempalace" / "palace"
LETTA = FIXTURES / "letta" / "travel_desk.af"
LETTA_OLD = FIXTURES / "letta" / "audit_assistant_v0.6.af"


@pytest.fixture
def runner(cli_env):
    return CliRunner(env=cli_env)


@pytest.fixture
def store(tmp_path, runner):
    """A store holding one memory, KEPT."""
    return kept_store(tmp_path, runner)


def stored(store, embedder) -> list[lodviz.MemoryRecord]:
    with lodviz.open(store, embedder=embedder) as mem:
        return list(mem.export_records())


def imported(runner, store, source, embedder, *args) -> list[lodviz.MemoryRecord]:
    """The memories ``lodviz ingest source`` added to ``store`` (KEPT left out)."""
    result = ingest(runner, store, source, *args)
    assert result.exit_code == 0, result.output
    return [r for r in stored(store, embedder) if r.text != KEPT]


def when(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC) if "+" not in text else datetime.fromisoformat(text).astimezone(UTC)


# -- which format ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, fmt",
    [
        (MEM0, "mem0"),
        (FIXTURES / "mem0" / "get_all_alice.json", "mem0"),
        (PALACE, "mempalace"),
        (PALACE / "chroma.sqlite3", "mempalace"),
        (LETTA, "letta"),
        (LETTA_OLD, "letta"),
    ],
)
def test_each_systems_files_are_told_by_their_contents(source, fmt):
    assert read_path(source).format == fmt


def test_a_letta_agent_file_saved_as_json_is_told_by_its_contents(tmp_path):
    copy = tmp_path / "export.json"
    shutil.copy(LETTA, copy)
    assert read_path(copy).format == "letta"


@pytest.mark.parametrize("name", ["claude-code-session.jsonl", "openai-messages.json", "conversations.json", "wiki"])
def test_the_other_import_fixtures_are_not_taken_for_a_memory_system(name):
    assert memory_systems.detect(FIXTURES / "imports" / name) is None


def test_lodviz_json_and_a_plain_folder_are_not_taken_for_a_memory_system(tmp_path):
    (tmp_path / "records.json").write_text(json.dumps([{"text": "A note about the memory of the freezer log."}]))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A note\n")
    assert memory_systems.detect(tmp_path / "records.json") is None
    assert memory_systems.detect(tmp_path / "notes") is None


# -- mem0 -----------------------------------------------------------------------------------------------


def test_a_mem0_dump_becomes_one_note_per_memory_with_mem0s_ids_and_times(runner, store, embedder):
    items = {item["id"]: item for item in json.loads(MEM0.read_text())["results"]}
    records = imported(runner, store, MEM0, embedder)
    assert len(records) == 5  # six mem0 memories; alice's and bob's aisle-seat memory is one text
    for record in records:
        item = items[record.metadata["original_id"]]
        assert record.text == item["memory"] and record.kind == "note" and record.agent_id == "mem0"
        assert record.metadata["system"] == "mem0" and record.metadata["hash"] == item["hash"]
        assert record.created_at == when(item["created_at"]) and record.metadata["updated_at"] == item["updated_at"]
        for key in ("user_id", "agent_id", "run_id", "role"):
            assert record.metadata.get(key) == item.get(key)
        assert record.metadata.get("original_metadata") == (item["metadata"] or None)
    lisbon = next(r for r in records if r.text.startswith("Books the Lisbon"))
    assert lisbon.source == "mem0:alice/travel-agent/session-2026-02"


def test_the_same_mem0_text_for_two_users_is_one_memory_that_lists_both(runner, store, embedder):
    records = imported(runner, store, MEM0, embedder)
    aisle = [r for r in records if r.text.startswith("Prefers aisle seats")]
    assert len(aisle) == 1
    assert aisle[0].metadata["user_id"] == "alice"
    assert [other["user_id"] for other in aisle[0].metadata["also"]] == ["bob"]
    assert aisle[0].metadata["also"][0]["original_id"] == "bb26038c-9ab3-4cd0-a80a-ed3e1e2cbbf5"


def test_a_mem0_import_for_an_agent_is_that_agents(runner, store, embedder):
    records = imported(runner, store, MEM0, embedder, "--agent", "travel")
    assert {r.agent_id for r in records} == {"travel"} and {r.visibility for r in records} == {"private"}


# -- MemPalace ------------------------------------------------------------------------------------------


def test_a_palace_is_read_from_its_sqlite_file_as_chromadb_itself_returns_it():
    expected = {d["id"]: d for d in json.loads((FIXTURES / "mempalace" / "expected.json").read_text())}
    parsed = read_path(PALACE)
    assert len(parsed.records) == len(expected) == 5
    lifted = ("wing", "room", "hall", "added_by", "source_file", "filed_at", "authored_at")
    for record in parsed.records:
        drawer = expected[record.metadata["original_id"]]
        assert record.text == drawer["document"]
        meta = {**record.metadata.get("original_metadata", {}), **{k: record.metadata[k] for k in lifted if k in record.metadata}}
        assert meta == drawer["metadata"]


def test_palace_drawers_become_documents_and_turns_with_their_wing_room_and_hall(runner, store, embedder):
    records = imported(runner, store, PALACE, embedder)
    kinds = sorted((r.metadata["wing"], r.metadata["room"], r.kind) for r in records)
    assert kinds == [("audit-chats", "decisions", "turn")] * 3 + [("plant-ops", "decisions", "document"), ("plant-ops", "runbooks", "document")]
    retention = next(r for r in records if "Seven years" in r.text)
    assert retention.metadata["system"] == "mempalace" and retention.metadata["hall"] == "memory"
    assert retention.metadata["added_by"] == "maria" and retention.agent_id == "mempalace"
    assert retention.metadata["original_id"] == "drawer_audit-chats_decisions_4faab90d6ba37a5f28edcb7c"
    assert retention.source == "mempalace:audit-chats/decisions"
    assert retention.created_at == datetime(2026, 12, 6, 19, 2, 59, 308568, tzinfo=UTC)  # its authored_at


def test_reading_a_palace_changes_nothing_in_it(tmp_path, runner, store, embedder):
    palace = tmp_path / "palace"
    shutil.copytree(PALACE, palace)
    before = hashlib.sha256((palace / "chroma.sqlite3").read_bytes()).hexdigest()
    imported(runner, store, palace, embedder)
    assert hashlib.sha256((palace / "chroma.sqlite3").read_bytes()).hexdigest() == before
    assert sorted(p.name for p in palace.iterdir()) == ["chroma.sqlite3"]


def test_a_notes_folder_with_a_chroma_index_of_its_own_is_still_read_as_notes(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "freezer.md").write_text("# Freezer\n\nThe plant 3 freezer alarms when the door seal fails.\n")
    shutil.copy(PALACE / "chroma.sqlite3", notes / "chroma.sqlite3")
    with sqlite3.connect(notes / "chroma.sqlite3") as connection:
        connection.execute("UPDATE collections SET name = 'notes_index' WHERE name = 'mempalace_drawers'")
    connection.close()
    parsed = read_path(notes)
    assert parsed.format == "markdown" and [r.metadata["page"] for r in parsed.records] == ["Freezer"]


# -- Letta ----------------------------------------------------------------------------------------------


def test_a_letta_agent_file_becomes_its_blocks_its_conversation_and_its_passages(runner, store, embedder):
    records = imported(runner, store, LETTA, embedder)
    by_kind = {kind: [r for r in records if r.kind == kind] for kind in ("note", "turn", "document", "tool_result")}
    assert sorted(r.metadata["label"] for r in by_kind["note"]) == ["human", "persona"]
    assert [(r.metadata["role"], r.text) for r in by_kind["turn"]][:2] == [
        ("assistant", "Hi Chad, I'm Sam from the travel desk. Where are you headed?"),  # what it sent, not its inner monologue
        ("user", "I need a flight to the NeurIPS workshop in Vancouver, aisle seat please."),  # out of MemGPT's JSON wrapper
    ]
    assert len(by_kind["turn"]) == 7 and by_kind["tool_result"] == []  # receipts, "None" returns and the heartbeat left out
    assert not any("Bootup" in r.text or "heartbeat" in r.text or "<base_instructions>" in r.text for r in records)
    assert [r.text for r in by_kind["document"]] == ["Chad prefers aisle seats on long flights."]
    human = next(r for r in by_kind["note"] if r.metadata["label"] == "human")
    assert human.metadata["system"] == "letta" and human.metadata["original_id"] == "block-0"
    assert human.metadata["agent_id"] == "agent-0" and human.metadata["agent_name"] == "travel_desk"
    assert human.created_at == datetime(2025, 10, 31, 22, 58, 30, 879513, tzinfo=UTC)  # the file's, blocks have no time
    reply = by_kind["turn"][0]
    assert reply.metadata["original_id"] == "message-1" and reply.created_at == datetime(2025, 10, 31, 22, 56, 56, 459500, tzinfo=UTC)
    assert reply.source == "letta:travel_desk" and reply.agent_id == "letta"


def test_a_letta_tool_call_keeps_its_arguments_and_drops_the_reasoning_beside_it():
    turns = [r for r in read_path(LETTA).records if r.kind == "turn" and r.metadata.get("tools")]
    assert [r.metadata["tools"] for r in turns] == [["archival_memory_insert"], ["core_memory_append"]]
    assert turns[1].text == '[called core_memory_append: {"label": "human", "content": "Travel: flies economy, department-funded"}]'


def test_the_older_letta_schema_is_read_too():
    records = read_path(LETTA_OLD).records
    assert [(r.kind, r.metadata.get("label") or r.metadata.get("role")) for r in records] == [
        ("note", "human"), ("note", "persona"), ("turn", "user"), ("turn", "assistant")]
    assert records[3].text == "Got it: the Pune freezer log finding is closed."
    assert records[0].created_at == datetime(2025, 3, 2, 9, 0, tzinfo=UTC) and records[0].metadata["updated_at"] == "2025-03-04T17:20:00"


def test_an_agent_file_published_as_a_json_string_is_read(tmp_path):
    wrapped = tmp_path / "wrapped.af"
    wrapped.write_text(json.dumps(LETTA.read_text()))  # as some files of the agent-file repository are
    assert [r.text for r in read_path(wrapped).records] == [r.text for r in read_path(LETTA).records]


def test_a_text_said_many_times_lists_a_bounded_number_of_its_originals(tmp_path):
    data = json.loads(LETTA.read_text())
    user = next(m for m in data["agents"][0]["messages"] if m["id"] == "message-9")
    data["agents"][0]["messages"] += [{**user, "id": f"message-again-{i}"} for i in range(30)]
    path = tmp_path / "chatty.af"
    path.write_text(json.dumps(data))
    (said,) = [r for r in read_path(path).records if r.text == "Also, my department pays, so book economy only."]
    assert len(said.metadata["also"]) == memory_systems.MAX_ALSO and said.metadata["also_more"] == 30 - memory_systems.MAX_ALSO
    assert said.metadata["original_id"] == "message-9" and said.metadata["also"][0]["original_id"] == "message-again-0"


# -- a re-import adds nothing ---------------------------------------------------------------------------


@pytest.mark.parametrize("source", [MEM0, PALACE, LETTA, LETTA_OLD], ids=["mem0", "mempalace", "letta", "letta-0.6"])
def test_importing_again_adds_nothing(runner, store, embedder, source):
    first = ingest(runner, store, source)
    assert first.exit_code == 0, first.output
    before = [(r.id, r.text) for r in stored(store, embedder)]
    again = ingest(runner, store, source)
    assert again.exit_code == 0, again.output
    assert f"Added 0 memories, skipped {len(before) - 1} duplicates" in again.output
    assert [(r.id, r.text) for r in stored(store, embedder)] == before


# -- a malformed file is refused, with nothing written ----------------------------------------------------


def _mem0_bad_last_memory(tmp_path: Path) -> Path:
    data = json.loads(MEM0.read_text())
    data["results"][-1]["memory"] = 42
    path = tmp_path / "get_all.json"
    path.write_text(json.dumps(data))
    return path


def _mem0_bad_time(tmp_path: Path) -> Path:
    data = json.loads(MEM0.read_text())
    data["results"][3]["created_at"] = "last Tuesday"
    path = tmp_path / "get_all.json"
    path.write_text(json.dumps(data))
    return path


def _mem0_cut_short(tmp_path: Path) -> Path:
    path = tmp_path / "get_all.json"
    path.write_text(MEM0.read_text()[:700])
    return path


def _palace_not_sqlite(tmp_path: Path) -> Path:
    palace = tmp_path / "palace"
    palace.mkdir()
    (palace / "chroma.sqlite3").write_text("this is not a database\n" * 100)
    return palace


def _palace_cut_short(tmp_path: Path) -> Path:
    palace = tmp_path / "palace"
    palace.mkdir()
    (palace / "chroma.sqlite3").write_bytes((PALACE / "chroma.sqlite3").read_bytes()[:8192])
    return palace


def _chroma_without_drawers(tmp_path: Path) -> Path:
    database = tmp_path / "chroma.sqlite3"
    shutil.copy(PALACE / "chroma.sqlite3", database)
    with sqlite3.connect(database) as connection:
        connection.execute("UPDATE collections SET name = 'my_documents' WHERE name = 'mempalace_drawers'")
    connection.close()
    return database


def _letta_missing_block(tmp_path: Path) -> Path:
    data = json.loads(LETTA.read_text())
    data["agents"][0]["block_ids"].append("block-9")
    path = tmp_path / "agent.af"
    path.write_text(json.dumps(data))
    return path


def _letta_message_without_role(tmp_path: Path) -> Path:
    data = json.loads(LETTA.read_text())
    del data["agents"][0]["messages"][-1]["role"]
    path = tmp_path / "agent.af"
    path.write_text(json.dumps(data))
    return path


def _letta_not_an_agent_file(tmp_path: Path) -> Path:
    path = tmp_path / "agent.af"
    path.write_text(json.dumps({"name": "travel_desk", "messages": []}))
    return path


@pytest.mark.parametrize(
    "make, fragments",
    [
        (_mem0_bad_last_memory, ["get_all.json memory 6", "'memory' text"]),
        (_mem0_bad_time, ["get_all.json memory 4", "created_at", "last Tuesday"]),
        (_mem0_cut_short, ["get_all.json line", "not valid JSON"]),
        (_palace_not_sqlite, ["chroma.sqlite3", "not a readable Chroma database"]),
        (_palace_cut_short, ["chroma.sqlite3", "not a readable Chroma database"]),
        (_chroma_without_drawers, ["chroma.sqlite3", "mempalace_drawers", "my_documents"]),
        (_letta_missing_block, ["agent.af agent 1", "block-9"]),
        (_letta_message_without_role, ["agent.af agent 1 message 14", "role"]),
        (_letta_not_an_agent_file, ["agent.af", "Letta agent file"]),
    ],
    ids=lambda value: value.__name__.strip("_") if callable(value) else "",
)
def test_a_malformed_file_is_refused_in_one_line_and_the_store_is_unchanged(runner, store, embedder, tmp_path, make, fragments):
    before = [(r.id, r.text, r.metadata) for r in stored(store, embedder)]
    result = ingest(runner, store, make(tmp_path))
    assert_refused_in_one_line(result, *fragments)
    assert [(r.id, r.text, r.metadata) for r in stored(store, embedder)] == before
