"""``lodviz.runtime``: a served process freezes its start-up state once the store is warm."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

import lodviz
from lodviz import runtime
from lodviz.serve.process import _warm_then_settle

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()  # the test process's own heap goes back to normal collection


def test_settle_heap_freezes_what_is_alive(unfrozen):
    kept = [object() for _ in range(10)]
    assert gc.get_freeze_count() == 0
    runtime.settle_heap()
    assert gc.get_freeze_count() >= len(kept)


def test_a_server_warms_its_store_before_it_settles(tmp_path, embedder, unfrozen):
    mem = lodviz.open(str(tmp_path / "s.duckdb"), embedder=embedder)
    mem.add("the quarterly report is due on friday")
    _warm_then_settle(mem)
    assert mem._store._cache is not None and mem._store._cache.short_texts is not None  # warm: the texts are loaded
    assert gc.get_freeze_count() > 0
    mem.close()


# A fresh interpreter: the heap setting is process-wide and must come before any thread.
_FIRST_SEARCH_FAULTS = """
import resource, sys
from lodviz import runtime
if sys.argv[1] == "share":
    assert runtime.share_heap()
import lodviz
from benchmarks import synth
query = synth.query_vectors(int(sys.argv[3]), 1, seed=3)[0]
mem = lodviz.open(sys.argv[2], embedder=synth.StubEmbedder({"budget report": query}), warm=True)
mem.wait_warm()
before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
mem.search("budget report", touch=False)
print(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)
mem.close()
"""


def _first_search_faults(path: str, n: int, heap: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_SEARCH_FAULTS, heap, path, str(n)],
        capture_output=True, text=True, check=True, cwd=REPO, timeout=300,
    )
    return int(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas")
def test_share_heap_lets_the_first_search_reuse_what_the_background_warm_up_freed(tmp_path):
    from benchmarks import synth

    path, n = str(tmp_path / "s.duckdb"), 5_000
    synth.build_store(path, n, seed=0)
    own = min(_first_search_faults(path, n, "own") for _ in range(2))
    shared = max(_first_search_faults(path, n, "share") for _ in range(2))
    # Own heaps: the search's temporaries come from pages new to its thread (~100 faults).
    assert own >= 40
    assert shared * 4 <= own


def test_share_heap_says_whether_it_applied():
    done = subprocess.run(
        [sys.executable, "-c", "from lodviz import runtime; print(runtime.share_heap())"],
        capture_output=True, text=True, check=True, cwd=REPO, timeout=60,
    )
    assert done.stdout.strip() == str(sys.platform.startswith("linux"))
