"""``lodviz export --format atlas``: a Parquet file for Apple's Embedding Atlas, against real temporary DuckDB stores.

The store's map is fitted by ``mapping.fit_layout`` (the function the app's layout job runs);
with fewer than ``projection.MIN_UMAP_POINTS`` memories it is the PCA map, which takes no time.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import lodviz
from lodviz import mapping
from lodviz.cli import cli
from lodviz.export import ATLAS_COLUMNS, ATLAS_VECTOR_COLUMNS, atlas_frame, nearest_neighbors, write_atlas
from lodviz.scoring import Tier
from tests.conftest import NOW, RECENCY, days_ago

pytestmark = pytest.mark.slow  # the stores are mapped by a real UMAP fit, whose first run compiles for ~25 s

#: legal's profile: slow decay, so its memories of 20 days ago are FULL for it and HEADLINE for ops (RECENCY).
SLOW = lodviz.Params(alpha=0.0, lam=0.01, theta1=0.8, theta2=0.5, theta3=0.05, k=100)


def _build(path, embedder, *, fit: bool = True) -> dict[str, int]:
    mem = lodviz.open(path, embedder=embedder)
    try:
        ids = {}
        for name, age in (("full", 0), ("summary", 5), ("headline", 20), ("out", 60)):
            ids[name] = mem.add(f"The {name} memory: the Hyderabad plant's quarterly supplier audit, note {name}.",
                                agent_id="ops", created_at=days_ago(age))
        # Retrieved twice, 90 days ago: still OUT by score under ops's profile, lifted by its floor below.
        ids["floored"] = mem.add_many([{
            "text": "Ops runbook: page the on-call lead before any failover of the billing cluster.", "agent_id": "ops",
            "source": "runbook.md", "created_at": days_ago(120).isoformat(), "retrieval_count": 2,
            "last_retrieved_at": days_ago(90).isoformat(),
        }]).ids[0]
        ids["shared"] = mem.add("Paragon Clinical MSA: liability cap at 2x annual fees, carve-out for data breaches.",
                                agent_id="legal", visibility="shared", created_at=days_ago(20))
        ids["private"] = mem.add("Legal hold on the Lindqvist correspondence until the arbitration closes.",
                                 agent_id="legal", created_at=days_ago(20))
        ids["forgotten"] = mem.add("A customer's home address, written by mistake.", agent_id="ops", created_at=days_ago(1))
        mem.set_profile("ops", RECENCY)
        mem.set_profile("legal", SLOW)
        mem.set_reference_time(NOW)
        mem.promote(ids["floored"], to="summary", reason="house rule")
        if fit:
            mapping.fit_layout(mem)
        mem.forget(ids["forgotten"], reason="erasure request")
        return ids
    finally:
        mem.close()


@pytest.fixture
def store(tmp_path, embedder):
    path = tmp_path / "atlas.duckdb"
    return path, _build(path, embedder)


@pytest.fixture
def runner(cli_env):
    return CliRunner(env=cli_env)


def run(runner, path, *args):
    return runner.invoke(cli, ["--store", str(path), "export", *args])


def _one_line_refusal(result, out) -> str:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert not out.exists()
    assert [p.name for p in out.parent.iterdir() if p.name.endswith(".tmp")] == []  # no half file beside it
    return lines[0]


def test_the_file_reads_back_one_row_per_visible_memory_with_its_columns_and_types(runner, store, tmp_path, embedder):
    path, ids = store
    out = tmp_path / "memories.parquet"
    result = run(runner, path, "--format", "atlas", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert f"Wrote 7 memories to {out}; open it with: embedding-atlas {out} --x x --y y --text text" in result.output
    frame = pd.read_parquet(out)
    assert tuple(frame.columns) == ATLAS_COLUMNS
    assert frame["id"].tolist() == sorted(v for k, v in ids.items() if k != "forgotten")  # the forgotten one absent
    schema = pq.read_schema(out)
    assert schema.field("id").type == pa.int64() and schema.field("retrieval_count").type == pa.int64()
    assert schema.field("x").type == pa.float64() and schema.field("y").type == pa.float64()
    for name in ("created_at", "last_retrieved_at"):
        assert schema.field(name).type == pa.timestamp("us", tz="UTC")
    for name in ("text", "summary", "headline", "tier", "agent_id", "visibility", "kind", "source", "floor"):
        assert schema.field(name).type == pa.string()
    mem = lodviz.open(path, embedder=embedder, read_only=True)
    try:
        for row in frame.itertuples():
            record = mem.get(int(row.id))
            assert (row.text, row.summary, row.headline) == (record.text, record.summary, record.headline)
            source = None if pd.isna(row.source) else row.source  # a null string reads back as NaN
            assert (row.agent_id, row.visibility, row.kind, source) == (record.agent_id, record.visibility, record.kind, record.source)
            assert row.created_at.to_pydatetime() == record.created_at
            if record.last_retrieved_at is None:
                assert pd.isna(row.last_retrieved_at)
            else:
                assert row.last_retrieved_at.to_pydatetime() == record.last_retrieved_at
            assert row.retrieval_count == record.retrieval_count and row.floor == Tier(record.floor).name
    finally:
        mem.close()
    assert frame.set_index("id").loc[ids["floored"], "retrieval_count"] == 2
    assert frame.set_index("id").loc[ids["floored"], "floor"] == "SUMMARY"
    assert frame.set_index("id").loc[ids["floored"], "source"] == "runbook.md"


def test_x_and_y_are_the_stored_layout(runner, store, tmp_path, embedder):
    path, _ = store
    out = tmp_path / "memories.parquet"
    assert run(runner, path, "--format", "atlas", "-o", str(out)).exit_code == 0
    frame = pd.read_parquet(out)
    mem = lodviz.open(path, embedder=embedder, read_only=True)
    try:
        state = mem.columns()
        rows = state.rows_of(frame["id"].tolist())
        assert np.array_equal(frame["x"].to_numpy(), state.x[rows]) and np.array_equal(frame["y"].to_numpy(), state.y[rows])
        assert mem.info().layout_fitted_at is not None
    finally:
        mem.close()


def test_tiers_are_the_landscapes_under_each_memorys_own_agents_profile(runner, store, tmp_path, embedder):
    path, ids = store
    out = tmp_path / "memories.parquet"
    assert run(runner, path, "--format", "atlas", "-o", str(out)).exit_code == 0
    tiers = dict(zip(pd.read_parquet(out)["id"], pd.read_parquet(out)["tier"]))
    mem = lodviz.open(path, embedder=embedder, read_only=True)
    try:
        for memory_id, tier in tiers.items():
            owner = mem.get(int(memory_id)).agent_id
            assert tier == mem.explain(int(memory_id), agent_id=owner).tier.name  # what `lodviz explain ID --agent OWNER` says
        before = mem.columns().retrieval_count.copy()
    finally:
        mem.close()
    assert tiers[ids["full"]] == "FULL" and tiers[ids["summary"]] == "SUMMARY"
    assert tiers[ids["headline"]] == "HEADLINE" and tiers[ids["out"]] == "OUT"
    assert tiers[ids["floored"]] == "SUMMARY"  # its floor lifts it
    assert tiers[ids["shared"]] == "FULL" and tiers[ids["private"]] == "FULL"  # legal's slow decay
    mem = lodviz.open(path, embedder=embedder, read_only=True)
    try:
        assert np.array_equal(mem.columns().retrieval_count, before)  # nothing counted as a retrieval
    finally:
        mem.close()


def test_with_an_agent_only_what_it_may_see_tiered_under_its_profile(runner, store, tmp_path, embedder):
    path, ids = store
    out = tmp_path / "ops.parquet"
    assert run(runner, path, "--format", "atlas", "--agent", "ops", "-o", str(out)).exit_code == 0
    frame = pd.read_parquet(out)
    assert ids["private"] not in set(frame["id"]) and ids["forgotten"] not in set(frame["id"])
    tiers = dict(zip(frame["id"], frame["tier"]))
    assert tiers[ids["shared"]] == "HEADLINE"  # legal's shared memory, seen through ops's fast decay
    mem = lodviz.open(path, embedder=embedder, read_only=True)
    try:
        land = mem.landscape(None, agent_id="ops")
        assert dict(zip(land.state.ids.tolist(), (Tier(int(t)).name for t in land.scored.tier))) == tiers
    finally:
        mem.close()


def test_with_vectors_the_embedding_and_the_nearest_exported_memories_by_row(runner, store, tmp_path, embedder):
    path, _ = store
    out = tmp_path / "vectors.parquet"
    result = run(runner, path, "--format", "atlas", "--with-vectors", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "--neighbors neighbors" in result.output
    frame = pd.read_parquet(out)
    assert tuple(frame.columns) == ATLAS_COLUMNS + ATLAS_VECTOR_COLUMNS
    schema = pq.read_schema(out)
    assert schema.field("vector").type == pa.list_(pa.float32())
    assert schema.field("neighbors").type == pa.struct([("ids", pa.list_(pa.int64())), ("distances", pa.list_(pa.float32()))])
    mem = lodviz.open(path, embedder=embedder, read_only=True)
    try:
        state, vectors = mem.snapshot()
        expected = vectors[state.rows_of(frame["id"].tolist())]
    finally:
        mem.close()
    got = np.stack(frame["vector"].to_list())
    assert np.array_equal(got, expected)
    sims = got @ got.T
    for row, near in enumerate(frame["neighbors"]):
        others = [i for i in range(len(frame)) if i != row]
        assert sorted(near["ids"].tolist()) == sorted(others)  # 7 memories: every other one, itself left out
        assert np.all(np.diff(near["distances"]) >= -1e-6)  # nearest first
        assert np.allclose(near["distances"], np.maximum(1 - sims[row, near["ids"]], 0), atol=1e-5)


def test_nearest_neighbors_are_the_exact_top_k():
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(300, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids, distances = nearest_neighbors(vectors, 5)
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    assert np.array_equal(ids, np.argsort(-sims, axis=1, kind="stable")[:, :5])
    assert np.allclose(distances, 1 - np.take_along_axis(sims, ids, axis=1), atol=1e-6)
    assert nearest_neighbors(vectors[:1], 5)[0].shape == (1, 0)


def test_a_store_without_a_map_is_refused_in_one_line_and_no_file_is_written(runner, tmp_path, embedder):
    path = tmp_path / "unmapped.duckdb"
    _build(path, embedder, fit=False)
    out = tmp_path / "memories.parquet"
    line = _one_line_refusal(run(runner, path, "--format", "atlas", "-o", str(out)), out)
    assert "7 of 7 memories have no place on the store's map yet" in line and "lodviz serve" in line


def test_a_memory_written_since_the_map_was_fitted_is_refused_too(runner, store, tmp_path, embedder):
    path, _ = store
    mem = lodviz.open(path, embedder=embedder)
    mem.add("A memory written after the map was fitted.", agent_id="ops")
    mem.close()
    out = tmp_path / "memories.parquet"
    assert "1 of 8 memories have no place" in _one_line_refusal(run(runner, path, "--format", "atlas", "-o", str(out)), out)


def test_an_unknown_agent_is_refused_in_one_line_and_no_file_is_written(runner, store, tmp_path):
    path, _ = store
    out = tmp_path / "memories.parquet"
    line = _one_line_refusal(run(runner, path, "--format", "atlas", "--agent", "nobody", "-o", str(out)), out)
    assert "no agent 'nobody' in this store" in line


def test_atlas_needs_a_file_and_vectors_need_atlas(runner, store, tmp_path):
    path, _ = store
    out = tmp_path / "memories.jsonl"
    assert "name it with -o FILE" in _one_line_refusal(run(runner, path, "--format", "atlas"), out)
    assert "--with-vectors is for --format atlas" in _one_line_refusal(run(runner, path, "--with-vectors", "-o", str(out)), out)


def test_an_existing_file_is_replaced_whole_as_the_other_formats_do_and_kept_when_the_export_fails(runner, store, tmp_path, monkeypatch):
    path, _ = store
    out = tmp_path / "memories.parquet"
    out.write_bytes(b"an older export")
    assert run(runner, path, "--format", "atlas", "--agent", "nobody", "-o", str(out)).exit_code == 1
    assert out.read_bytes() == b"an older export"

    def full_disk(table, where, **_):
        with open(where, "wb") as handle:
            handle.write(b"PAR1 half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full_disk)
    result = run(runner, path, "--format", "atlas", "-o", str(out))
    assert result.exit_code == 1 and "No space left on device" in result.output and "Traceback" not in result.output
    assert out.read_bytes() == b"an older export"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    monkeypatch.undo()
    assert run(runner, path, "--format", "atlas", "-o", str(out)).exit_code == 0
    assert len(pd.read_parquet(out)) == 7


def test_without_pyarrow_one_sentence_says_what_to_install_and_nothing_is_written(store, tmp_path, embedder, monkeypatch):
    # The DuckDB store reads through pyarrow itself, so the frame is made first; the writer is what imports it.
    path, _ = store
    mem = lodviz.open(path, embedder=embedder, read_only=True)
    try:
        frame = atlas_frame(mem)
    finally:
        mem.close()
    out = tmp_path / "memories.parquet"
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(lodviz.LodvizError, match=r"needs pyarrow: pip install pyarrow\.$"):
        write_atlas(frame, out)
    assert not out.exists()


def test_the_frame_of_an_empty_store_has_the_columns(tmp_path, embedder):
    mem = lodviz.open(tmp_path / "empty.duckdb", embedder=embedder)
    try:
        frame = atlas_frame(mem, with_vectors=True)
    finally:
        mem.close()
    assert len(frame) == 0 and tuple(frame.columns) == ATLAS_COLUMNS + ATLAS_VECTOR_COLUMNS
