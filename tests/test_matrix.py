"""Compact embedding matrices (``lodviz.matrix``): the same results as the exact one where the top-k is unambiguous."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

import lodviz
from lodviz import matrix
from lodviz.errors import InvalidParameters
from lodviz.store.base import NewMemory
from lodviz.store.duckdb import DuckDBStore

DIM = 64
K = 10
NOW = datetime(2026, 6, 1, tzinfo=UTC)


class _Vectors:
    """An embedder answering queries from a table of vectors."""

    name = "test-vectors"
    dimension = DIM

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return np.vstack([self.table[t] for t in texts]).astype(np.float32)


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _near(rng: np.random.Generator, q: np.ndarray, cos: float) -> np.ndarray:
    """A unit vector at exactly ``cos`` from the unit vector ``q``."""
    other = rng.normal(size=DIM)
    other -= (other @ q) * q
    return _unit(cos * q + np.sqrt(1 - cos**2) * _unit(other))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    """500 memories; for each of 5 queries, K memories at cos 0.95, 0.93, ... from it, the rest far from all."""
    rng = np.random.default_rng(7)
    queries = {f"query {i}": _unit(rng.normal(size=DIM)) for i in range(5)}
    vectors = [_near(rng, q, 0.95 - 0.02 * j) for q in queries.values() for j in range(K)]
    while len(vectors) < 500:
        v = _unit(rng.normal(size=DIM))
        if max(float(v @ q) for q in queries.values()) < 0.5:
            vectors.append(v)
    order = rng.permutation(len(vectors))
    rows = [
        NewMemory(
            text=f"memory {i}: a note about item {i}.", summary=f"memory {i}: a note.", headline=f"memory {i}",
            embedding=vectors[j], embedding_model="test-vectors", content_hash=f"h{i}",
            created_at=NOW - timedelta(days=float(rng.uniform(0, 400))), agent_id="a",
            retrieval_count=int(rng.integers(0, 4)), last_retrieved_at=None, floor=int(rng.random() < 0.05),
        )
        for i, j in enumerate(order.tolist())
    ]
    path = tmp_path_factory.mktemp("matrix") / "s.duckdb"
    with DuckDBStore(path) as s:
        s.set_meta({"embedding_dim": str(DIM), "embedding_model": "test-vectors", "reference_time": NOW.isoformat()})
        s.insert(rows, None)
    return path, queries


def _results(path: Path, queries: dict[str, np.ndarray], kind: str) -> dict[str, list[tuple[int, str, float]]]:
    with lodviz.open(path, embedder=_Vectors(queries), matrix=kind) as mem:
        return {
            q: [(item.id, item.tier.name, item.similarity) for item in mem.search(q, k=K, alpha=0.9, theta1=0.84, theta2=0.8, theta3=0.5, touch=False, record=False).items]
            for q in queries
        }


@pytest.mark.parametrize("kind", ["float16", "int8"])
def test_a_compact_matrix_gives_the_exact_matrix_tiers_where_the_top_k_is_unambiguous(store, kind):
    path, queries = store
    exact = _results(path, queries, "float32")
    compact = _results(path, queries, kind)
    for q in queries:
        assert len(exact[q]) == K
        assert [(i, tier) for i, tier, _ in compact[q]] == [(i, tier) for i, tier, _ in exact[q]], q
        # S is the exact cosine: the candidates were rescored from the float32 rows.
        assert np.allclose([s for _, _, s in compact[q]], [s for _, _, s in exact[q]], atol=1e-6)
    tiers = {tier for items in exact.values() for _, tier, _ in items}
    assert len(tiers) > 1  # the comparison means something: not every item at one tier


@pytest.mark.parametrize("kind", ["float16", "int8"])
def test_a_compact_landscape_gives_the_exact_tiers_of_the_candidates_and_close_s_for_the_rest(store, kind):
    path, queries = store
    settings = dict(k=K, alpha=0.9, theta1=0.84, theta2=0.8, theta3=0.5)
    views = {}
    for matrix_kind in ("float32", kind):
        with lodviz.open(path, embedder=_Vectors(queries), matrix=matrix_kind) as mem:
            q = next(iter(queries))
            land = mem.landscape(q, params=mem.profile(None).with_(**settings))
            views[matrix_kind] = (land.state.ids.copy(), land.candidate.copy(), land.scored.tier.copy(), land.scored.similarity.copy())
    ids, candidate, tier, s = views["float32"]
    c_ids, c_candidate, c_tier, c_s = views[kind]
    assert np.array_equal(ids, c_ids) and np.array_equal(candidate, c_candidate)
    assert np.array_equal(tier[candidate], c_tier[candidate]) and candidate.sum() == K
    assert np.allclose(s[candidate], c_s[candidate], atol=1e-6)  # the candidates' S is exact
    # Beyond them S comes from the compact copy: close, not exact.
    assert np.abs(s[~candidate] - c_s[~candidate]).max() < 0.02
    assert not np.array_equal(s[~candidate], c_s[~candidate])  # read from the compact copy, not the mapped rows


@pytest.mark.parametrize("kind", ["float16", "int8"])
def test_a_compact_matrix_follows_inserts_and_forgetting(store, kind, tmp_path):
    path, queries = store
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(path.read_bytes())
    q = next(iter(queries.values()))
    with DuckDBStore(copy, matrix=kind) as s:
        s.snapshot()  # loaded: the insert below grows the loaded matrix
        new = NewMemory(
            text="the newest", summary="the newest", headline="the newest", embedding=q, embedding_model="test-vectors",
            content_hash="new", created_at=NOW, agent_id="a",
        )
        (new_id,) = s.insert([new] * 1, None)
        rows, sims = s.nearest(q, 3)
        assert int(s.state().ids[rows[0]]) == new_id and sims[0] == pytest.approx(1.0, abs=1e-6)
        s.forget(int(new_id or 0), lodviz.AuditEvent(action="forget", actor="t"))
        rows, _ = s.nearest(q, 3)
        assert new_id not in s.state().ids[rows].tolist()


def test_a_float32_matrix_is_held_dimension_major_and_keeps_every_row_through_growth(store, tmp_path):
    """The layout a scan is fastest in (``lodviz.matrix``): each dimension contiguous across the rows."""
    path, _ = store
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(path.read_bytes())
    rng = np.random.default_rng(3)
    added = _unit(rng.normal(size=(700, DIM)))
    with DuckDBStore(copy) as s:
        _, before = s.snapshot()
        kept = np.array(before)
        assert before.strides[0] == before.itemsize  # row i's components sit a whole column apart
        s.insert([
            NewMemory(
                text=f"added {i}", summary=f"added {i}", headline=f"added {i}", embedding=added[i], embedding_model="test-vectors",
                content_hash=f"added {i}", created_at=NOW, agent_id="a",
            )
            for i in range(len(added))
        ], None)  # past the loaded matrix's room: it grows
        _, after = s.snapshot()
        assert after.strides[0] == after.itemsize and len(after) == len(kept) + len(added)
        np.testing.assert_array_equal(after[: len(kept)], kept)
        np.testing.assert_allclose(after[len(kept) :], added, atol=1e-6)
        np.testing.assert_array_equal(before, kept)  # an earlier snapshot still reads what it did
        rows, sims = s.nearest(added[5], 1)
        assert rows.tolist() == [len(kept) + 5] and sims[0] == pytest.approx(1.0, abs=1e-6)


def test_int8_codes_and_scan_approximate_the_dot_product():
    rng = np.random.default_rng(0)
    unit = _unit(rng.normal(size=(5000, DIM)))
    q = _unit(rng.normal(size=DIM))
    codes, scale = matrix.quantize_int8(unit)
    approx = matrix.scan(codes, scale, q)
    assert np.abs(approx - unit @ q).max() < 0.01
    assert np.abs(matrix.scan(unit.astype(np.float16), None, q) - unit @ q).max() < 0.002


def test_an_unknown_matrix_kind_is_refused():
    with pytest.raises(InvalidParameters, match="float32, float16, int8"):
        matrix.parse_kind("float8")


def test_the_matrix_setting_comes_from_the_environment_and_is_checked():
    from lodviz.settings import Settings

    assert Settings.resolve(environ={}).matrix == "float32"
    assert Settings.resolve(environ={"LODVIZ_MATRIX": "INT8"}).matrix == "int8"
    assert Settings.resolve(matrix="float16", environ={"LODVIZ_MATRIX": "int8"}).matrix == "float16"
    with pytest.raises(InvalidParameters):
        Settings.resolve(environ={"LODVIZ_MATRIX": "bad"})
