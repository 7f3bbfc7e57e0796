"""What a long-running lodviz process does once it has started (``lodviz serve``, an agent's own loop).

CPython's full garbage collection walks every container object in the
process. With numpy, pyarrow, DuckDB and Dash loaded that is ~70,000 objects
and 30-45 ms on the benchmark machine. A search's result items outlive the
young generations, so a full collection comes every ~80-140 searches, inside
whichever search happens to trigger it (run-16's p95 before this: up to 2.9x
a scan at 100k memories). ``settle_heap`` moves everything alive once start-up
is done (modules, the store's copy, the model) out of the collector's view;
the full collections after it walk only what came later.

glibc gives each thread that allocates its own heap ("arena"). A store
warmed in a background thread leaves what it freed in that thread's arena,
and the first search on another thread (the caller's, a server's worker)
then takes every temporary array from pages new to the process: ~110 page
faults in the term counts alone at 100k memories, 2-4 ms on the benchmark
machine, against ~0.5 ms once the pages are there. ``share_heap`` gives every
thread one arena, so that search reuses what the warm-up freed.

``Thread.join`` returns when a thread's Python part has ended; the thread
itself still runs its exit in the OS after that, handing its stack and
caches back to the kernel (``madvise``, which flushes the TLB on every
core). A search started right then shares the machine with it: on the
benchmark machine (two cores) the first search after ``wait_warm`` ran
1.17x-1.24x the search 2 s later (paired medians, 58 fresh opens at 100k
memories) until ``wait_warm`` also waited for that exit (``wait_exited``):
0.92x in 12 opens, and 0.92x and 0.82x in 8 each in run-27 and run-28.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
import time

#: glibc's ``mallopt`` parameter for the most arenas (``M_ARENA_MAX`` in malloc.h).
_M_ARENA_MAX = -8


def settle_heap() -> None:
    """Collect once, then freeze what is left (``gc.freeze``): call it once, after start-up and warm-up.

    What is frozen is never collected as cyclic garbage, so this is for a
    process's long-lived start-up state, not for a loop.
    """
    gc.collect()
    gc.freeze()


def share_heap() -> bool:
    """One heap for every thread (glibc: ``mallopt(M_ARENA_MAX, 1)``): call it first, before
    opening a store with a background warm-up; threads already running keep their own.

    Process-wide, like ``settle_heap``: for a process that is lodviz's own (``lodviz serve``)
    or an agent's loop. Threads then contend for one lock when they allocate outside
    the GIL; lodviz's own heavy allocators (DuckDB, Arrow) use allocators of their own.
    Returns False where there is no glibc (macOS, musl): nothing changes there.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, 1))


#: How long ``wait_exited`` waits by default: a thread's exit took 0.07-5.9 ms on the benchmark machine.
EXIT_TIMEOUT = 0.25


def wait_exited(thread: threading.Thread, timeout: float = EXIT_TIMEOUT) -> bool:
    """Wait until ``thread``, already joined, has left the process (its OS exit included).

    True once it has, or where that cannot be seen (no ``/proc/self/task``:
    not Linux); False if it is still there after ``timeout`` seconds.
    """
    if thread.native_id is None or not os.path.isdir("/proc/self/task"):
        return True
    task = f"/proc/self/task/{thread.native_id}"
    deadline = time.monotonic() + timeout
    while os.path.exists(task):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.0005)
    return True


__all__ = ["EXIT_TIMEOUT", "settle_heap", "share_heap", "wait_exited"]
