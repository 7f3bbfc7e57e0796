"""The shipped sample store is complete, consistent, and reproducible from its sources."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

import lodviz
from lodviz.scoring import Tier

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "lodviz" / "data" / "lodviz-sample.duckdb"

# The shipped store was embedded with the real model; its searches need it.
pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def sample(tmp_path_factory, model_embedder):
    copy = tmp_path_factory.mktemp("sample") / "sample.duckdb"
    copy.write_bytes(SAMPLE.read_bytes())  # never open the tracked file for writing
    mem = lodviz.open(copy, read_only=True, embedder=model_embedder)
    yield mem
    mem.close()


def sql(mem: lodviz.Memory, query: str, args: list | None = None) -> list[tuple]:
    """Read the DuckDB file itself (the checks here are about what the file holds)."""
    with duckdb.connect(mem.path, read_only=True) as con:
        return con.execute(query, args or []).fetchall()


def test_it_is_large_and_spans_two_years_of_three_agents(sample):
    state = sample.columns()
    assert len(state) >= 3000
    assert set(state.agent_names) == {"clinical-research", "exec-digest", "legal-review"}
    assert (state.created_at.max() - state.created_at.min()) / 86_400 >= 700
    assert {"turn", "document", "tool_result", "preference"} <= set(state.kind.tolist())
    assert state.shared.sum() > 100


def test_every_memory_has_three_texts_and_an_embedding_of_the_stores_dimension(sample):
    dim = sample.info().embedding_dim
    rows = sql(
        sample,
        "SELECT count(*) FROM memories WHERE length(trim(text)) = 0 OR length(trim(summary)) = 0 "
        "OR length(trim(headline)) = 0 OR len(embedding) != ?",
        [dim],
    )
    assert rows[0][0] == 0
    assert sample.snapshot()[1].shape == (len(sample), dim)


def test_summaries_and_headlines_are_shorter_than_the_text(sample):
    lengths = sql(sample, "SELECT length(text), length(summary), length(headline) FROM memories WHERE length(text) > 600")
    text, summary, headline = (np.array(col) for col in zip(*lengths))
    assert (summary < text).all() and (headline <= summary).all()
    assert np.median(summary / text) < 0.35


def test_the_layout_covers_every_memory(sample):
    state = sample.columns()
    assert not np.isnan(state.x).any() and not np.isnan(state.y).any()
    assert sample.layout_model() is not None


def test_usage_history_makes_old_memories_sharp_and_new_ones_faded(sample):
    state = sample.columns()
    now = sample.now().timestamp()
    age_days = (now - state.created_at) / 86_400
    recent_use = (now - np.nan_to_num(state.last_retrieved_at, nan=0)) / 86_400 < 30
    assert ((age_days > 365) & recent_use).sum() >= 30  # old and still in use
    assert ((age_days < 60) & (state.retrieval_count == 0)).sum() >= 30  # recent and never looked at


def test_the_legal_agent_has_pinned_precedents(sample):
    state = sample.columns()
    legal = state.agent_id == "legal-review"
    assert (legal & (state.floor == Tier.FULL)).sum() >= 25


def test_contradicting_pairs_are_kept(sample):
    rows = sql(
        sample,
        "SELECT json_extract_string(metadata, '$.conflict_group') AS g, count(*), count(DISTINCT created_at) "
        "FROM memories WHERE g IS NOT NULL GROUP BY g"
    )
    assert len(rows) >= 5
    assert all(count >= 2 and dates >= 2 for _, count, dates in rows)


def test_it_records_profiles_reference_time_and_demo_queries(sample):
    assert set(sample.profiles()) == {"clinical-research", "exec-digest", "legal-review"}
    assert sample.now().isoformat().startswith("2026-11-30")
    queries = sample.info().demo_queries
    assert {q["agent_id"] for q in queries} == {"clinical-research", "exec-digest", "legal-review"}


def test_the_three_profiles_give_different_tier_shapes(sample):
    from lodviz.stats import tier_shape

    query = sample.info().demo_queries[0]["query"]
    shapes = {agent: tier_shape(sample, query, agent)["counts"] for agent in sample.profiles()}
    assert len({tuple(c.values()) for c in shapes.values()}) == 3
    for counts in shapes.values():  # each profile's shape has all three resolutions
        assert counts["FULL"] > 0 and counts["SUMMARY"] > 0 and counts["HEADLINE"] > 0


def test_rebuilding_a_slice_reproduces_the_shipped_rows(sample, tmp_path):
    out = tmp_path / "slice.duckdb"
    subprocess.run(
        [sys.executable, str(ROOT / "sample_data" / "build.py"), "--slice", "1000:1012", "--out", str(out), "--no-layout"],
        check=True,
        capture_output=True,
    )
    rebuilt = lodviz.open(out, read_only=True)
    try:
        columns = "content_hash, text, summary, headline, created_at, last_retrieved_at, retrieval_count, floor, agent_id, visibility, kind, source, metadata"
        fresh = {r[0]: r for r in sql(rebuilt, f"SELECT {columns} FROM memories_with_usage")}
        shipped = {
            r[0]: r
            for r in sql(
                sample, f"SELECT {columns} FROM memories_with_usage WHERE content_hash IN (SELECT unnest(?::VARCHAR[]))", [list(fresh)]
            )
        }
        assert len(fresh) == 12 and shipped == fresh
        vectors = lambda mem, hashes: np.array(  # noqa: E731
            [sql(mem, "SELECT embedding FROM memories WHERE content_hash = ?", [h])[0][0] for h in hashes]
        )
        hashes = sorted(fresh)
        assert np.allclose(vectors(rebuilt, hashes), vectors(sample, hashes), atol=1e-4)
        spans = lambda mem: {  # noqa: E731
            h: [tuple(r) for r in sql(mem, "SELECT p.position, p.start, p.stop FROM passages p JOIN memories m ON m.id = p.memory_id "
                                           "WHERE m.content_hash = ? ORDER BY p.position", [h])]
            for h in hashes
        }
        rebuilt_spans = spans(rebuilt)
        # The shipped store was cut by today's passages.py: a change to the cutting rules shows here.
        assert sum(map(len, rebuilt_spans.values())) > 0 and rebuilt_spans == spans(sample)
    finally:
        rebuilt.close()
