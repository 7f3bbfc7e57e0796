"""The command line against a real temporary DuckDB file and the real model."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

import lodviz
from lodviz.cli import cli
from lodviz.scoring import Tier

RECORDS = [
    {"text": "Dr. Solberg wants hazard ratios with 95% confidence intervals, never p-values alone.", "agent_id": "research", "kind": "preference", "created_at": "2026-05-30T09:00:00Z"},
    {"text": "ASCEND-2 enrolled 3,412 patients across 212 sites; last patient in was 14 March 2026.", "agent_id": "research", "kind": "note", "created_at": "2026-03-15T10:00:00Z"},
    {"text": "AURB closed at $41.87, up 3.1% after the Lindqvist term sheet leaked.", "agent_id": "digest", "kind": "tool_result", "created_at": "2026-05-31T21:00:00Z"},
    {"text": "Paragon Clinical MSA: liability cap at 2x annual fees, carve-out for data breaches.", "agent_id": "legal", "kind": "document", "visibility": "shared", "created_at": "2025-02-01T00:00:00Z"},
]
NOW = "2026-06-01T12:00:00Z"


@pytest.fixture
def runner(cli_env):
    return CliRunner(env=cli_env)


@pytest.fixture
def store(tmp_path, runner):
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n")
    path = tmp_path / "cli.duckdb"
    result = runner.invoke(cli, ["--store", str(path), "ingest", str(source)])
    assert result.exit_code == 0, result.output
    assert "Added 4 memories" in result.output
    return path


def run(runner, store, *args):
    return runner.invoke(cli, ["--store", str(store), *args])


def test_ingest_twice_skips_duplicates(runner, store, tmp_path):
    result = run(runner, store, "ingest", str(tmp_path / "in.jsonl"))
    assert "Added 0 memories, skipped 4 duplicates" in result.output


def test_search_prints_a_tiered_view(runner, store):
    result = run(runner, store, "search", "how should trial results be reported", "--now", NOW)
    assert result.exit_code == 0, result.output
    assert "full ·" in result.output and "summaries ·" in result.output and "headlines" in result.output
    assert "S=" in result.output and "L=" in result.output


def test_search_json_carries_spec_fields(runner, store):
    result = run(runner, store, "search", "hazard ratios", "--json", "--now", NOW, "--agent", "research")
    data = json.loads(result.output)
    assert data["agent_id"] == "research"
    assert {"id", "tier", "content", "similarity", "decay", "score", "retrieval_count", "last_retrieved_at", "created_at", "agent_id"} <= set(data["items"][0])
    assert all(item["agent_id"] in ("research", "legal") for item in data["items"])  # legal's memory is shared


def test_expand_prints_the_full_text(runner, store):
    assert "hazard ratios" in run(runner, store, "expand", "1").output


def test_promote_lifts_a_memory_one_tier_above_where_the_last_search_showed_it(runner, store):
    data = json.loads(run(runner, store, "search", "hazard ratios", "--json", "--now", NOW, "--no-touch").output)
    shown = Tier[{item["id"]: item["tier"] for item in data["items"]}[1]]
    expected = Tier(min(shown + 1, Tier.FULL))
    assert f"tier floor {expected.name} (was OUT)" in run(runner, store, "promote", "1", "--reason", "house style").output
    assert "tier floor FULL" in run(runner, store, "promote", "1", "--to", "full").output
    assert "tier floor SUMMARY" in run(runner, store, "demote", "1").output
    assert "house style" in run(runner, store, "audit", "--action", "promote").output
    events = json.loads(run(runner, store, "audit", "--action", "promote", "--json").output)
    assert {e["details"]["face"] for e in events} == {"cli"}  # the audit log says where a change came from


def test_the_first_promote_of_a_headline_brings_it_back_as_a_summary(runner, store):
    args = ("search", "clinical trial enrolment", "--json", "--now", NOW, "--no-touch", "--alpha", "0.3")
    items = json.loads(run(runner, store, *args).output)["items"]
    headline = next(item["id"] for item in items if item["tier"] == "HEADLINE")
    run(runner, store, "promote", str(headline), "--reason", "matters")
    again = {item["id"]: item["tier"] for item in json.loads(run(runner, store, *args).output)["items"]}
    assert Tier[again[headline]] >= Tier.SUMMARY


def test_promote_without_an_agent_lifts_one_tier_above_where_the_memorys_own_agent_was_shown_it(runner, store):
    args = ("search", "clinical trial enrolment", "--agent", "research", "--json", "--now", NOW, "--no-touch", "--alpha", "0.3")
    items = json.loads(run(runner, store, *args).output)["items"]
    headline = next(item["id"] for item in items if item["tier"] == "HEADLINE" and item["agent_id"] == "research")
    run(runner, store, "search", "share price", "--agent", "digest", "--now", NOW, "--no-touch")  # someone else searched last
    assert "tier floor SUMMARY (was OUT)" in run(runner, store, "promote", str(headline), "--reason", "matters").output


def test_agents_set_and_show(runner, store):
    result = run(runner, store, "agents", "set", "research", "--preset", "research", "--reason", "deploy")
    assert result.exit_code == 0 and "alpha=0.9" in result.output
    shown = run(runner, store, "agents").output
    assert "research" in shown and "(defaults)" in shown  # digest has no stored profile
    assert run(runner, store, "audit", "--action", "profile").output.count("profile") == 1


def test_stats_counts_agents_kinds_and_tier_shapes(runner, store):
    run(runner, store, "agents", "set", "research", "--preset", "research")
    run(runner, store, "agents", "set", "digest", "--preset", "digest")
    result = run(runner, store, "stats", "-q", "share price")
    assert result.exit_code == 0, result.output
    assert "4 memories, 3 agents" in result.output
    assert "Tier shapes for 'share price'" in result.output
    assert "research" in result.output and "digest" in result.output


def test_export_then_ingest_reproduces_the_store(runner, store, tmp_path):
    run(runner, store, "promote", "2", "--to", "full")
    out = tmp_path / "export.jsonl"
    assert run(runner, store, "export", "-o", str(out)).exit_code == 0
    copy = tmp_path / "copy.duckdb"
    assert "Added 4 memories" in run(runner, copy, "ingest", str(out)).output
    exported = json.loads(run(runner, copy, "expand", "2", "--json").output)
    assert exported["floor"] == "FULL" and exported["text"].startswith("ASCEND-2")


def test_modes_run(runner, store):
    assert run(runner, store, "recent", "--since", "2026-05-01", "--until", NOW).exit_code == 0
    assert run(runner, store, "unseen").exit_code == 0
    assert run(runner, store, "sample", "-n", "2", "--seed", "1").exit_code == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["search", "   "], "the query is empty"),
        (["search", "x", "--alpha", "1.5"], "alpha must be between 0 and 1"),
        (["search", "x", "--theta1", "0.2", "--theta2", "0.5"], "theta1 > theta2 > theta3"),
        (["search", "x", "--budget", "1"], "cannot hold even one headline"),
        (["expand", "999"], "No memory with id 999"),
        (["expand", "abc"], "No memory with id 'abc'"),
        (["promote", "1", "--agent", "digest"], "No memory with id 1"),
        (["agents", "set", "x", "--alpha", "-1"], "alpha must be between 0 and 1"),
    ],
)
def test_bad_input_gets_one_clear_line_and_non_zero_exit(runner, store, args, message):
    result = run(runner, store, *args)
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_malformed_import_changes_nothing(runner, store, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "new and fine"}\n{"text": \n')
    result = run(runner, store, "ingest", str(bad))
    assert result.exit_code == 1 and "bad.jsonl line 2" in result.output
    assert "4 memories" in run(runner, store, "stats").output


def test_missing_store_is_a_clear_error(runner, tmp_path):
    result = run(runner, tmp_path / "none.duckdb", "search", "x")
    assert result.exit_code == 1 and "no store at" in result.output


@pytest.fixture(scope="session")
def small_model(tmp_path_factory) -> str:
    """A real sentence-transformers model that makes 32-dimensional vectors."""
    from sentence_transformers import SentenceTransformer, models

    from lodviz.ingest.embed import bundled_model_path

    base = SentenceTransformer(bundled_model_path(), device="cpu")
    model = SentenceTransformer(modules=[*base, models.Dense(in_features=384, out_features=32)], device="cpu")
    path = tmp_path_factory.mktemp("models") / "minilm-32"
    model.save(str(path))
    return str(path)


@pytest.mark.slow
def test_a_model_of_another_dimension_is_refused_in_one_line(runner, store, small_model):
    for args in (["search", "hazard ratios"], ["add", "a new memory"]):
        result = runner.invoke(cli, ["--store", str(store), "--model", small_model, *args])
        assert result.exit_code == 1
        assert "makes 32-dimensional vectors, but this store holds 384-dimensional ones" in result.output
        assert len(result.output.strip().splitlines()) == 1
    assert "4 memories" in run(runner, store, "stats").output


@pytest.mark.slow
def test_a_model_that_cannot_be_loaded_is_one_line(runner, store, tmp_path):
    result = runner.invoke(cli, ["--store", str(store), "--model", str(tmp_path / "no-such-model"), "search", "x"])
    assert result.exit_code == 1 and "cannot load embedding model" in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.model
def test_a_search_over_the_sample_store_has_the_concepts_shape(model_embedder, tmp_path):
    """A few FULL, more SUMMARY, most HEADLINE: k = 1000 (and what passages bring) at mixed resolution, default profile."""
    from pathlib import Path

    copy = tmp_path / "sample.duckdb"
    copy.write_bytes((Path(__file__).resolve().parents[1] / "lodviz" / "data" / "lodviz-sample.duckdb").read_bytes())
    result = CliRunner().invoke(cli, ["--store", str(copy), "search", "limitation of liability cap in CRO agreements", "--no-touch", "--headlines", "3"])
    assert result.exit_code == 0, result.output
    full, summaries, headlines = (int(n) for n in re.search(r"(\d+) full · (\d+) summaries · (\d+) headlines", result.output).groups())
    assert 0 < full < summaries < headlines
    # the k = 1000 nearest memories, and the long ones the 1000 nearest passages bring in besides
    assert 1000 < full + summaries + headlines < 2000
    assert "── FULL" in result.output and "── SUMMARY" in result.output and "── HEADLINE" in result.output


def test_conflicts_are_listed_and_resolved_from_the_command_line(runner, tmp_path):
    store = tmp_path / "c.duckdb"
    for text, when in (("Paragon MSA: liability cap at 2x annual fees.", "2025-01-01"), ("Paragon MSA: liability cap at 3x annual fees.", "2025-06-01")):
        assert run(runner, store, "add", text, "--agent", "legal", "--created-at", when).exit_code == 0
    listed = run(runner, store, "conflicts")
    assert "#2 vs #1: 3x instead of 2x  [open]" in listed.output
    assert "superseded" in run(runner, store, "resolve", "2", "1", "--superseded", "1", "--reason", "amendment").output
    assert "No conflicts are open." in run(runner, store, "conflicts").output
    assert "superseded: #1" in run(runner, store, "conflicts", "--all").output
    bad = run(runner, store, "resolve", "1", "9")
    assert bad.exit_code == 1 and bad.output.startswith("Error: memories 1 and 9 are not a conflict on record.")


def test_forget_asks_first_and_erases(runner, store):
    assert run(runner, store, "forget", "1", "--reason", "erasure").exit_code == 1  # no confirmation given
    done = run(runner, store, "forget", "1", "--reason", "erasure", "--yes")
    assert done.exit_code == 0 and "Forgot memory 1." in done.output
    assert run(runner, store, "expand", "1").output.startswith("Error: No memory with id 1.")


def test_audit_replay_rebuilds_a_past_search_and_says_it_matches(runner, store):
    first = json.loads(run(runner, store, "search", "hazard ratios", "--json", "--now", NOW).output)
    event = json.loads(run(runner, store, "audit", "--action", "search", "--limit", "1", "--json").output)[0]["id"]
    run(runner, store, "search", "hazard ratios", "--now", "2026-06-20T12:00:00Z")  # usage moves on
    listing = run(runner, store, "audit", "--action", "search").output
    assert f"#{event} " in listing  # the listing names the ids replay takes

    result = run(runner, store, "audit", "replay", str(event))
    assert result.exit_code == 0, result.output
    assert f"Search #{event}" in result.output and "The same memories at the same tiers" in result.output
    data = json.loads(run(runner, store, "audit", "replay", str(event), "--json").output)
    assert data["agrees"] is True
    assert data["replayed"] == {str(item["id"]): item["tier"] for item in first["items"]}


def test_audit_replay_of_what_is_not_a_search_is_one_line(runner, store):
    result = run(runner, store, "audit", "replay", "1")
    assert result.exit_code == 1
    assert result.output.strip() == "Error: audit event #1 is a write, not a search; only searches can be replayed."


def test_search_as_of_a_past_day_sees_only_what_existed(runner, store):
    data = json.loads(run(runner, store, "search", "trial results", "--json", "--as-of", "2000-01-01T00:00:00Z").output)
    assert data["items"] == []


def test_a_command_run_in_process_leaves_the_callers_face_as_it_was(runner, store):
    from lodviz.access import current_face

    before = current_face()
    run(runner, store, "search", "hazard ratios", "--now", NOW)
    assert current_face() == before


def test_promote_after_a_budget_cut_a_memory_to_a_headline_lands_on_summary(runner, tmp_path, embedder):
    from tests.mcp.conftest import REFERENCE_TIME, SEED

    path = tmp_path / "seeded.duckdb"
    with lodviz.open(path, embedder=embedder) as seeded:  # the MCP tests' memories, with this suite's embedder
        for record in SEED.values():
            seeded.add(**record)
        seeded.set_reference_time(REFERENCE_TIME)
    query = ("search", "what did we agree on the liability cap?", "--agent", "alice", "--json")
    natural = {i["id"]: i["tier"] for i in json.loads(run(runner, path, *query, "--no-touch").output)["items"]}
    tight = json.loads(run(runner, path, *query, "--budget", "170").output)["items"]
    cut = next(i["id"] for i in tight if i["tier"] == "HEADLINE" and natural[i["id"]] in ("FULL", "SUMMARY"))
    result = run(runner, path, "promote", str(cut), "--agent", "alice", "--reason", "read it as a headline")
    assert "tier floor SUMMARY (was OUT)" in result.output, result.output  # one above what alice was shown


def test_conflicts_redetect_finds_candidates_again_and_says_how_many(runner, store, tmp_path):
    extra = tmp_path / "cap.jsonl"
    extra.write_text(json.dumps({**RECORDS[3], "text": RECORDS[3]["text"].replace("2x", "3x"), "created_at": "2025-06-01T00:00:00Z"}) + "\n")
    assert run(runner, store, "ingest", str(extra)).exit_code == 0
    result = run(runner, store, "conflicts", "--redetect")
    assert result.exit_code == 0, result.output
    assert "Found 1 open conflict candidates again (replacing 1); decided ones kept." in result.output
    assert "3x instead of 2x" in result.output
    assert "conflict candidates found again: 1 open" in run(runner, store, "audit", "--action", "redetect").output


def test_a_csv_export_file_opens_in_a_spreadsheet_as_utf8_and_ingests_back(runner, store, tmp_path):
    out = tmp_path / "export.csv"
    assert run(runner, store, "export", "--format", "csv", "-o", str(out)).exit_code == 0
    assert out.read_bytes().startswith(b"\xef\xbb\xbf")  # the byte-order mark a spreadsheet reads UTF-8 by
    copy = tmp_path / "copy.duckdb"
    assert "Added 4 memories" in run(runner, copy, "ingest", str(out)).output
