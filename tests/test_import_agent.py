"""Imports land where the user will look: without an agent, every agent finds them; with one, that agent alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import lodviz
from lodviz.cli import cli


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "cap.md").write_text("# Liability cap\n\nWe agreed the Paragon liability cap at twice the annual fees.\n")
    (folder / "tea.md").write_text("# Tea\n\nThe team prefers green tea in the afternoon meeting.\n")
    return folder


def _import(tmp_path: Path, notes: Path, env: dict[str, str], *args: str) -> Path:
    store = tmp_path / "s.duckdb"
    result = CliRunner(env=env).invoke(cli, ["--store", str(store), "ingest", str(notes), *args])
    assert result.exit_code == 0, result.output
    return store


def _seen_by(store: Path, agent: str, embedder) -> set[str]:
    with lodviz.open(store, embedder=embedder) as mem:
        return {hit.content for hit in mem.search("liability cap", agent_id=agent, touch=False).items}


def test_notes_imported_without_an_agent_are_found_by_the_agent_an_mcp_client_names(tmp_path, notes, cli_env, embedder):
    store = _import(tmp_path, notes, cli_env)
    seen = _seen_by(store, "claude-code", embedder)
    assert any("Paragon liability cap" in text for text in seen)
    assert len(seen) == 2


def test_notes_imported_for_an_agent_are_that_agents_alone(tmp_path, notes, cli_env, embedder):
    store = _import(tmp_path, notes, cli_env, "--agent", "claude-code")
    assert len(_seen_by(store, "claude-code", embedder)) == 2
    assert _seen_by(store, "someone-else", embedder) == set()


def test_the_agent_an_import_writes_to_comes_from_lodviz_agent_as_for_lodviz_mcp(tmp_path, notes, cli_env, embedder):
    store = _import(tmp_path, notes, {**cli_env, "LODVIZ_AGENT": "claude-code"})
    assert len(_seen_by(store, "claude-code", embedder)) == 2
    assert _seen_by(store, "someone-else", embedder) == set()


def test_a_record_that_says_private_stays_private_when_imported_without_an_agent(tmp_path, cli_env, embedder):
    source = tmp_path / "in.jsonl"
    source.write_text(
        '{"text": "Our liability cap note, private on purpose.", "visibility": "private"}\n'
        '{"text": "The shared liability cap glossary entry."}\n'
    )
    store = _import(tmp_path, source, cli_env)
    with lodviz.open(store, embedder=embedder) as mem:
        kept = {record.text: (record.agent_id, record.visibility) for record in mem.export_records()}
    assert kept["Our liability cap note, private on purpose."] == ("default", "private")
    assert kept["The shared liability cap glossary entry."] == ("default", "shared")
