"""Golden queries and tuning alpha and lambda on them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

import lodviz
from lodviz.cli import cli
from lodviz.errors import ImportFormatError, InvalidInput
from lodviz.testing import HashEmbedder
from lodviz.tuning import Sweep

NOW = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "tune.duckdb"
    mem = lodviz.open(path, embedder=HashEmbedder())
    # Old but relevant memories, and recent unrelated ones that recency alone would favour.
    for i in range(12):
        mem.add(f"Paragon supply contract clause {i}: the liability cap is {i + 2}x annual fees.", agent_id="legal",
                created_at=NOW - timedelta(days=400 + i))
        mem.add(f"Weekly canteen menu number {i}: soup, bread and salad.", agent_id="legal", created_at=NOW - timedelta(days=i))
    mem.set_reference_time(NOW)
    yield path, mem
    mem.close()


def golden_file(tmp_path, lines) -> str:
    path = tmp_path / "golden.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return str(path)


def test_tuning_without_golden_queries_is_a_clear_error(store):
    _, mem = store
    with pytest.raises(InvalidInput, match="no golden queries to tune against"):
        mem.tune("legal")


def test_the_command_line_says_so_in_one_line(store):
    path, mem = store
    mem.close()
    result = CliRunner().invoke(cli, ["--store", str(path), "--model", "hash", "tune", "--agent", "legal"], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output.startswith("Error: agent 'legal' has no golden queries") and result.output.count("\n") == 1


def test_golden_text_resolves_to_the_one_memory_that_contains_it(store, tmp_path):
    _, mem = store
    ids = mem.import_golden(golden_file(tmp_path, [{"agent_id": "legal", "query": "what cap with Paragon?", "needs_text": ["clause 3: the liability cap"]}]))
    (entry,) = mem.golden("legal")
    assert entry.id == ids[0] and mem.get(entry.needs[0]).text.startswith("Paragon supply contract clause 3:")
    assert mem.audit(actions=["golden"])[0].details["count"] == 1


@pytest.mark.parametrize(
    "line, message",
    [
        ({"agent_id": "legal", "query": "x", "needs_text": ["liability cap"]}, "12 memories visible to legal contain"),
        ({"agent_id": "legal", "query": "x", "needs_text": ["no such words"]}, "no memory visible to legal contains"),
        ({"agent_id": "legal", "query": "x", "needs": [999]}, "memory 999 does not exist"),
        ({"agent_id": "legal", "query": " "}, "'query' must be a non-empty string"),
        ({"agent_id": "legal", "query": "x"}, "give 'needs'"),
    ],
)
def test_a_bad_golden_file_names_its_line_and_stores_nothing(store, tmp_path, line, message):
    _, mem = store
    good = {"agent_id": "legal", "query": "what cap with Paragon?", "needs_text": ["clause 3: the liability cap"]}
    with pytest.raises(ImportFormatError, match="golden.jsonl line 2") as error:
        mem.import_golden(golden_file(tmp_path, [good, line]))
    assert message.split(" contain")[0] in str(error.value)
    assert mem.golden() == []


def test_a_sweep_measures_every_setting_and_suggests_the_best(store, tmp_path):
    _, mem = store
    mem.import_golden(golden_file(tmp_path, [
        {"agent_id": "legal", "query": f"liability cap of clause {i} with Paragon", "needs_text": [f"clause {i}: the liability cap"]}
        for i in range(4)
    ]))
    result = mem.tune("legal", budget_tokens=120, alphas=[0.0, 0.5, 1.0], lambdas=[0.01, 0.3])
    assert isinstance(result, Sweep) and len(result.rows) == 6 and result.queries == 4
    frame = result.frame()
    assert frame["recall_any"].between(0, 1).all() and frame["recall_readable"].le(frame["recall_any"]).all()
    best = result.suggest()
    assert best["recall_readable"] == frame["recall_readable"].max()
    # Old relevant memories against recent noise: meaning must weigh more than recency.
    assert best["alpha"] > 0.0
    event = mem.audit(actions=["tune"])[0]
    assert event.agent_id == "legal" and event.details["settings"] == 6 and event.details["suggested"] == best
    assert mem.audit(actions=["search"]) == []  # the sweep's searches leave no trace but that one line


def test_saving_the_suggestion_writes_the_profile_audited(store, tmp_path):
    path, mem = store
    mem.import_golden(golden_file(tmp_path, [{"agent_id": "legal", "query": "liability cap of clause 1", "needs_text": ["clause 1: the liability cap"]}]))
    mem.set_profile("legal", alpha=0.0, lam=0.3, actor="test")  # recency alone: the old clause falls out of reach
    mem.close()
    runner = CliRunner()
    result = runner.invoke(cli, ["--store", str(path), "--model", "hash", "tune", "--agent", "legal", "--budget", "120", "--save"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "suggested alpha" in result.output and "Saved: profile of legal" in result.output
    reopened = lodviz.open(path, embedder=HashEmbedder())
    try:
        assert "legal" in reopened.profiles()
        assert reopened.audit(actions=["profile"])[0].details["reason"].startswith("lodviz tune on 1 golden")
    finally:
        reopened.close()


def _sweep(rows, current, queries=10, base=None):
    result = Sweep(agent_id="research", budget=2000, queries=queries, base=base or lodviz.Params(alpha=0.9, lam=0.005))
    result.rows = [{"alpha": a, "lam": lam, "recall_any": any_, "recall_readable": readable, "tokens": 1000.0}
                   for a, lam, any_, readable in rows]
    result.current = {"recall_any": current[0], "recall_readable": current[1], "tokens": 1000.0}
    return result


def test_a_tie_keeps_the_current_profile_and_says_the_evidence_cannot_tell():
    # Every setting reads 80% of 10 queries, as the current profile does; alpha 0 reads a little more at any tier.
    result = _sweep([(0.0, 0.01, 0.95, 0.8), (0.5, 0.01, 0.9, 0.8), (1.0, 0.01, 0.9, 0.8)], current=(0.9, 0.8))
    suggested = result.suggest()
    assert suggested["keep"] and (suggested["alpha"], suggested["lam"]) == (0.9, 0.005)
    assert result.suggested_params() == result.base
    verdict = result.verdict()
    assert "10 golden queries" in verdict and "cannot tell them apart" in verdict and "3 of 3 settings" in verdict


def test_a_setting_a_query_s_worth_better_is_suggested_with_how_sure_it_is():
    result = _sweep([(0.0, 0.01, 0.9, 0.6), (0.5, 0.01, 1.0, 1.0)], current=(0.9, 0.8))
    suggested = result.suggest()
    assert not suggested.get("keep") and suggested["alpha"] == 0.5
    verdict = result.verdict()
    assert "reads 100% against the current 80%" in verdict and "about 2.0 queries' worth more" in verdict
    assert "10 queries are few" in verdict


def test_the_command_line_keeps_the_profile_on_a_tie_and_saves_nothing(store, tmp_path):
    path, mem = store
    mem.import_golden(golden_file(tmp_path, [{"agent_id": "legal", "query": "liability cap of clause 1", "needs_text": ["clause 1: the liability cap"]}]))
    mem.set_profile("legal", alpha=0.8, actor="test")
    before = mem.profile("legal")
    mem.close()
    result = CliRunner().invoke(cli, ["--store", str(path), "--model", "hash", "tune", "--agent", "legal", "--budget", "2000", "--save"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "cannot tell them apart" in result.output and "Nothing saved" in result.output
    reopened = lodviz.open(path, embedder=HashEmbedder())
    try:
        assert reopened.profile("legal") == before
    finally:
        reopened.close()
