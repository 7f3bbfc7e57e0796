"""The matrix file beside a DuckDB store: an open maps it when it matches the store, and rebuilds when it does not."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import duckdb
import numpy as np
import pytest

from lodviz.store import matrix_file
from lodviz.store.duckdb import DuckDBStore
from tests.store.test_store import memory

N = 60
DIM = 8


def vector(i: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed * 100_003 + i).normal(size=DIM).astype(np.float32)


def rows(start: int, count: int, seed: int = 0) -> list:
    return [replace(memory(i), embedding=vector(i, seed), content_hash=f"hash-{seed}-{i}") for i in range(start, start + count)]


@pytest.fixture(autouse=True)
def small_stores_keep_a_file(monkeypatch):
    monkeypatch.setattr(DuckDBStore, "MATRIX_FILE_FROM", 10)


def build(path, count: int = N, seed: int = 0, kind: str | None = None) -> None:
    with DuckDBStore(path, matrix=kind) as store:
        store.insert(rows(0, count, seed), None)
        store.snapshot()  # the mirror is loaded, so close keeps it


def nearest(store: DuckDBStore, query: np.ndarray, k: int = 10) -> tuple[list[int], np.ndarray]:
    state, vectors = store.snapshot()
    found, similarity = store.nearest(query, k, state.visible_to(None), vectors)
    return state.ids[found].tolist(), similarity


def rebuilt_answer(path, query: np.ndarray, kind: str | None = None) -> tuple[list[int], np.ndarray]:
    """The answer of a store opened with no matrix file (its copy, so the file under test stays)."""
    copy = path.with_name("copy.duckdb")
    shutil.copy(path, copy)
    with DuckDBStore(copy, matrix=kind) as store:
        answer = nearest(store, query)
        assert store.matrix_rows_mapped == 0
    return answer


def test_a_store_keeps_its_matrix_in_a_file_that_the_next_open_maps(tmp_path):
    path = tmp_path / "m.duckdb"
    build(path)
    assert matrix_file.path_for(path).exists()
    query = vector(7)
    with DuckDBStore(path) as store:
        ids, similarity = nearest(store, query)
        assert store.matrix_rows_mapped == N
    want_ids, want_similarity = rebuilt_answer(path, query)
    assert ids == want_ids and ids[0] == 8  # memory(7) is the store's 8th id
    np.testing.assert_allclose(similarity, want_similarity, atol=1e-6)


def test_a_small_store_keeps_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(DuckDBStore, "MATRIX_FILE_FROM", 20_000)
    path = tmp_path / "m.duckdb"
    build(path)
    assert not matrix_file.path_for(path).exists()


@pytest.mark.parametrize("kind", ["float32", "float16", "int8"])
def test_memories_written_after_the_file_are_read_from_the_store_and_found(tmp_path, monkeypatch, kind):
    monkeypatch.setattr(DuckDBStore, "MATRIX_FILE_SLACK", 0.5)  # three new rows: the file is not written again
    path = tmp_path / "m.duckdb"
    build(path, kind=kind)
    with DuckDBStore(path, matrix=kind) as store:
        store.snapshot()
        store.insert(rows(N, 3, seed=1), None)  # grows the mapped matrix
        assert nearest(store, vector(N + 1, seed=1))[0][0] == N + 2
        assert nearest(store, vector(5))[0][0] == 6
    with DuckDBStore(path, matrix=kind) as store:
        assert nearest(store, vector(N + 1, seed=1))[0][0] == N + 2
        assert store.matrix_rows_mapped == N and store.snapshot()[1].shape == (N + 3, DIM)


def test_a_file_behind_by_many_rows_is_written_again(tmp_path):
    path = tmp_path / "m.duckdb"
    build(path)
    with DuckDBStore(path) as store:
        store.snapshot()
        store.insert(rows(N, N, seed=1), None)
    assert matrix_file.read_header(matrix_file.path_for(path))["rows"] == 2 * N


def corrupt_vectors(path) -> None:
    """The last row's first value changed in place: a row the probe reads."""
    header = matrix_file.read_header(path)
    rows = header["rows"]
    at = header["sections"]["exact"][0] + (rows - 1) * 4  # float32 is dimension-major: column 0, last row
    with open(path, "r+b") as handle:
        handle.seek(at)
        handle.write(np.float32(0.77).tobytes())


def another_stores_file(path) -> None:
    """The file of another store with as many memories (so the same ids), other vectors."""
    other = path.with_name("other.duckdb")
    build(other, seed=5)
    shutil.copy(matrix_file.path_for(other), path)


def truncate(path) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def garble_header(path) -> None:
    with open(path, "r+b") as handle:
        handle.write(b"not a matrix file")


def other_row_count(path) -> None:
    raw = path.read_bytes()
    header = matrix_file.read_header(path)
    header["rows"] = header["rows"] - 1
    head = matrix_file.MAGIC + json.dumps(header).encode()
    path.write_bytes(head.ljust(matrix_file.HEADER, b" ") + raw[matrix_file.HEADER :])


STALE = {
    "its vectors changed": corrupt_vectors,
    "another store's file": another_stores_file,
    "cut short": truncate,
    "garbled header": garble_header,
    "header rows disagree with its sections": other_row_count,
}


@pytest.mark.parametrize("spoil", STALE.values(), ids=STALE.keys())
def test_a_file_that_no_longer_matches_its_store_is_rebuilt_never_used(tmp_path, spoil):
    path = tmp_path / "m.duckdb"
    build(path)
    spoil(matrix_file.path_for(path))
    query = vector(3)
    with DuckDBStore(path) as store:
        ids, similarity = nearest(store, query)
        assert store.matrix_rows_mapped == 0
    want_ids, want_similarity = rebuilt_answer(path, query)
    assert ids == want_ids and ids[0] == 4
    np.testing.assert_allclose(similarity, want_similarity, atol=1e-6)
    with DuckDBStore(path) as store:  # the rebuilt matrix was written in its place
        assert nearest(store, query)[0] == want_ids and store.matrix_rows_mapped == N


def test_a_file_is_not_used_when_memories_were_taken_out_behind_lodvizs_back(tmp_path, monkeypatch):
    monkeypatch.setattr(DuckDBStore, "MATRIX_FILE_SLACK", 0.5)
    path = tmp_path / "m.duckdb"
    build(path)
    with DuckDBStore(path) as store:  # one memory more than the file holds, so the count alone agrees after the delete
        store.insert(rows(N, 1, seed=1), None)
    con = duckdb.connect(str(path))
    con.execute("DELETE FROM memories WHERE id = 2")
    con.close()
    with DuckDBStore(path) as store:
        ids, _ = nearest(store, vector(3))
        assert store.matrix_rows_mapped == 0 and ids[0] == 4 and 2 not in ids


def test_a_file_of_another_matrix_kind_is_not_used(tmp_path):
    path = tmp_path / "m.duckdb"
    build(path, kind="int8")
    with DuckDBStore(path) as store:
        assert nearest(store, vector(9))[0][0] == 10 and store.matrix_rows_mapped == 0


def file_row(path, row: int) -> np.ndarray:
    header = matrix_file.read_header(path)
    exact = np.memmap(path, dtype="<f4", mode="r", offset=header["sections"]["exact"][0], shape=(header["rows"], header["dim"]), order="F")
    return np.array(exact[row])


def test_a_forgotten_memorys_vector_is_erased_from_the_file(tmp_path):
    from lodviz.store.base import AuditEvent

    path = tmp_path / "m.duckdb"
    build(path)
    file = matrix_file.path_for(path)
    assert np.any(file_row(file, 4) != 0)
    with DuckDBStore(path) as store:
        store.snapshot()
        store.forget(5, AuditEvent(action="forget", actor="test"))
        assert not np.any(file_row(file, 4))  # on disk before close
    with DuckDBStore(path) as store:
        ids, _ = nearest(store, vector(4))
        assert store.matrix_rows_mapped == N and 5 not in ids


def test_a_forget_the_file_missed_is_erased_from_it_on_the_next_open(tmp_path, monkeypatch):
    from lodviz.store.base import AuditEvent

    path = tmp_path / "m.duckdb"
    build(path)
    file = matrix_file.path_for(path)
    with DuckDBStore(path) as store:
        store.snapshot()
        monkeypatch.setattr(store, "_erase_from_matrix_file", lambda memory_id: None)  # the process died before it
        monkeypatch.setattr(store, "save_matrix", lambda force=False: False)
        store.forget(5, AuditEvent(action="forget", actor="test"))
    assert np.any(file_row(file, 4) != 0)
    with DuckDBStore(path) as store:
        ids, _ = nearest(store, vector(4))
        assert store.matrix_rows_mapped == N and 5 not in ids
        assert not np.any(store.snapshot()[1][4])
    assert not np.any(file_row(file, 4))


def test_a_read_only_open_writes_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(DuckDBStore, "MATRIX_FILE_FROM", 20_000)
    path = tmp_path / "m.duckdb"
    build(path)
    monkeypatch.setattr(DuckDBStore, "MATRIX_FILE_FROM", 10)
    with DuckDBStore(path, read_only=True) as store:
        store.snapshot()
    assert not matrix_file.path_for(path).exists()


def test_a_save_cut_short_leaves_the_old_file_and_the_next_save_clears_its_remains(tmp_path):
    path = tmp_path / "m.duckdb"
    build(path)
    file = matrix_file.path_for(path)
    before = file.read_bytes()
    leftover = file.with_name(f"{file.name}.tmp-999999")
    leftover.write_bytes(before[: len(before) // 3])  # what a save killed part-way leaves
    with DuckDBStore(path) as store:
        assert nearest(store, vector(1))[0][0] == 2 and store.matrix_rows_mapped == N
        assert store.save_matrix(force=True)
    assert not leftover.exists() and file.read_bytes() == before


def test_the_file_is_as_private_as_the_store(tmp_path):
    path = tmp_path / "m.duckdb"
    build(path)
    path.chmod(0o640)
    matrix_file.path_for(path).unlink()
    build(path)  # a new memory set on the same file: a rebuilt matrix, written again
    assert matrix_file.path_for(path).stat().st_mode & 0o777 == 0o640


def test_an_open_from_the_file_has_the_columns_a_rebuilt_one_has(tmp_path, monkeypatch):
    from lodviz.records import ROW_FIELDS
    from lodviz.store.base import AuditEvent

    monkeypatch.setattr(DuckDBStore, "MATRIX_FILE_SLACK", 0.5)
    path = tmp_path / "m.duckdb"
    with DuckDBStore(path) as store:
        store.insert([replace(r, text="x" * (i + 1), summary="s" * (i % 7 + 1)) for i, r in enumerate(rows(0, N))], None)
        store.snapshot()
    with DuckDBStore(path) as store:
        store.snapshot()
        store.insert(rows(N, 2, seed=1), None)  # after the file: not in it
        store.forget(3, AuditEvent(action="forget", actor="test"))
    with DuckDBStore(path) as store:
        mapped = store.snapshot()[0]
        assert store.matrix_rows_mapped == N
    copy = path.with_name("copy.duckdb")
    shutil.copy(path, copy)
    with DuckDBStore(copy) as store:
        rebuilt = store.snapshot()[0]
    for name in ROW_FIELDS:
        assert np.array_equal(getattr(mapped, name), getattr(rebuilt, name), equal_nan=getattr(mapped, name).dtype.kind == "f"), name
