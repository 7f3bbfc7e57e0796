"""Crash safety of the matrix file: SIGKILL a process that writes, forgets and saves its matrix, at random moments.

After every kill the store opens, and what it searches with, mapped from the
file or rebuilt, is exactly what a rebuild from the store gives; a forgotten
memory's vector is in no file; a save cut short leaves nothing the next open
would read.
"""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from lodviz.store import matrix_file
from lodviz.store.duckdb import DuckDBStore

ROOT = Path(__file__).resolve().parents[1]
RUNS = 8

WORKER = textwrap.dedent(
    """
    import itertools, random, sys
    sys.path.insert(0, sys.argv[3])
    from lodviz.store.base import AuditEvent
    from lodviz.store.duckdb import DuckDBStore
    from tests.store.test_matrix_file import rows

    DuckDBStore.MATRIX_FILE_FROM = 1
    path, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    store = DuckDBStore(path)
    store.snapshot()
    print("ready", flush=True)
    for i in itertools.count():
        start = 1_000_000 * seed + 1_000 * i
        store.insert(rows(start, rng.randrange(50, 400), seed=seed), None)
        n = store.count()
        if n:
            store.forget(rng.randrange(1, n + 1), AuditEvent(action="forget", actor="crash"))
        store.save_matrix(force=True)
    """
)


def rebuilt(path: Path, tmp: Path) -> tuple[np.ndarray, np.ndarray]:
    copy = tmp / "rebuilt.duckdb"
    shutil.copy(path, copy)
    with DuckDBStore(copy) as store:
        state, vectors = store.snapshot()
        assert store.matrix_rows_mapped == 0
        return state.ids.copy(), np.array(vectors)


@pytest.mark.slow  # eight processes started and killed
def test_sigkill_while_writing_and_saving_leaves_a_file_that_is_whole_or_unused(tmp_path):
    path = tmp_path / "m.duckdb"
    file = matrix_file.path_for(path)
    rng = random.Random(7)
    mapped_opens = 0
    for run in range(RUNS):
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), str(run + 1), str(ROOT)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready", worker.stderr.read() if worker.stderr else ""
        time.sleep(rng.uniform(0.05, 1.2))
        worker.send_signal(signal.SIGKILL)
        worker.wait()

        with DuckDBStore(path) as store:
            state, vectors = store.snapshot()
            state, vectors = state.take(slice(0, len(state))), np.array(vectors)
            mapped_opens += store.matrix_rows_mapped > 0
        ids, want = rebuilt(path, tmp_path)  # the store closed: its copy is whole
        assert np.array_equal(state.ids, ids)
        np.testing.assert_allclose(vectors, want, atol=1e-6)
        assert not np.any(vectors[state.forgotten])
        header = matrix_file.read_header(file)
        if header is not None and header["rows"] <= len(ids):
            on_disk = np.memmap(file, dtype="<f4", mode="r", offset=header["sections"]["exact"][0],
                                shape=(header["rows"], header["dim"]), order="F")
            gone = np.flatnonzero(state.forgotten[: header["rows"]])
            assert not np.any(on_disk[gone]), "a forgotten memory's vector is still in the file"
        for made in tmp_path.glob("rebuilt.duckdb*"):  # the copy, and the matrix file its close may keep
            made.unlink()
    assert mapped_opens >= RUNS // 3  # most kills leave a file that is used, not only ones that are refused
    with DuckDBStore(path) as store:
        store.snapshot()
        assert store.save_matrix(force=True)
    assert not list(tmp_path.glob("m.duckdb.matrix.tmp-*"))
