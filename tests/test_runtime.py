"""``lodviz.runtime``: a served process freezes its start-up state once the store is warm."""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import lodviz
from lodviz import runtime
from lodviz.serve.process import _warm_then_settle
from lodviz.warmup import Warmup

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


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas")
def test_share_heap_lets_the_first_search_reuse_what_the_background_warm_up_freed(tmp_path):
    from benchmarks import synth

    path, n = str(tmp_path / "s.duckdb"), 5_000
    synth.build_store(path, n, seed=0)
    own = min(_first_search_faults(path, n, "own") for _ in range(2))
    shared = min(_first_search_faults(path, n, "share") for _ in range(2))
    # Own heaps: the search's temporaries come from pages new to its thread (~100 faults).
    assert own >= 40
    assert shared * 4 <= own


@pytest.mark.slow
def test_share_heap_says_whether_it_applied():
    done = subprocess.run(
        [sys.executable, "-c", "from lodviz import runtime; print(runtime.share_heap())"],
        capture_output=True, text=True, check=True, cwd=REPO, timeout=60,
    )
    assert done.stdout.strip() == str(sys.platform.startswith("linux"))


linux_only = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="threads seen in /proc/self/task")


@linux_only
def test_wait_exited_waits_while_the_thread_is_still_in_the_process():
    import threading

    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        assert not runtime.wait_exited(thread, timeout=0.05)
    finally:
        release.set()
        thread.join()
    assert runtime.wait_exited(thread, timeout=5)
    assert not Path(f"/proc/self/task/{thread.native_id}").exists()


def _slow_exit(microseconds: int) -> Callable[[], None]:
    """A hook that makes the calling thread's OS exit sleep ``microseconds`` after Python's ``join`` returned:
    a pthread key whose destructor is libc's ``usleep``, called with the key's value."""
    libc = ctypes.CDLL(None)
    key = ctypes.c_uint()
    assert libc.pthread_key_create(ctypes.byref(key), ctypes.cast(libc.usleep, ctypes.c_void_p)) == 0
    libc.pthread_setspecific.argtypes = [ctypes.c_uint, ctypes.c_void_p]
    return lambda: libc.pthread_setspecific(key, microseconds)


@linux_only
def test_wait_warm_returns_once_the_warm_up_thread_has_left_the_process(store_path, embedder, monkeypatch):
    with lodviz.open(store_path, embedder=embedder) as mem:
        mem.add_many([{"text": f"note {i} about lot {i}.", "agent_id": "ops"} for i in range(20)])
    slow_exit = _slow_exit(100_000)
    warm_now = Warmup.run

    def warm_then_exit_slowly(self: Warmup) -> None:
        warm_now(self)
        slow_exit()  # this thread's exit now takes 0.1 s after its Python part ends

    monkeypatch.setattr(Warmup, "run", warm_then_exit_slowly)
    with lodviz.open(store_path, embedder=embedder, warm=True) as mem:
        thread = mem._warmup.thread
        assert thread is not None
        assert mem.wait_warm(timeout=60)
        assert not Path(f"/proc/self/task/{thread.native_id}").exists()
