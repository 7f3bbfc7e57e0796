"""A write's slow part, run in a thread that yields the CPU to searches.

Compressing and embedding a large write runs outside the memory's lock
(``lodviz.writing``), but on a machine of two cores it still took the cores
a search needs: the model's threads ran at the same priority as the search,
so another agent's search during a 1 MB write took 1.21x its idle time.

``Yielding.run`` hands a call to one thread of its own whose OS priority is
lowered (Linux: ``setpriority`` on the thread, nice +10), and waits for its
answer. The model's worker threads that this thread starts (torch's OpenMP
team, one per calling thread) inherit its priority. An idle machine runs it
as fast as before; a busy one runs the search first. A thread's priority can
be lowered but not raised again without privileges, which is why the thread
is the writes' own and is never handed back to a pool. Where the priority
cannot be set (not Linux, a sandbox) the call runs at the normal priority.

Calls run in a copy of the caller's context (``contextvars``), one at a time, in the order they came: two writes embed one after
the other, as the model would share the same cores between them anyway.
"""

from __future__ import annotations

import contextvars
import logging
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

log = logging.getLogger("lodviz")

T = TypeVar("T")

#: How much lower the thread's priority is (nice): at +10 a busy search gets ~90% of a core against it.
NICENESS = 10


class Yielding:
    """One thread of lower priority, started on first use, ended by ``close``."""

    def __init__(self, niceness: int = NICENESS, name: str = "lodviz-write") -> None:
        self._niceness = niceness
        self._name = name
        self._calls: queue.SimpleQueue[tuple[Callable[[], object], Future[object]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()
        self.lowered = False  # whether the thread's priority could be lowered

    def run(self, call: Callable[[], T]) -> T:
        """``call()`` in the yielding thread; its answer, or what it raised."""
        if threading.current_thread() is self._thread:  # a call from within: run it here, never wait on itself
            return call()
        done: Future[object] = Future()
        with self._guard:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                self._thread.start()
            context = contextvars.copy_context()  # the caller's face and the like, as if it ran there
            self._calls.put((lambda: context.run(call), done))
        return done.result()  # type: ignore[return-value]

    def close(self, timeout: float = 0.0) -> None:
        """End the thread once the call it runs, if any, has returned; wait up to ``timeout`` seconds for
        that. A stopping server does not wait: its caller is waiting for that call's answer anyway."""
        with self._guard:
            thread, self._thread = self._thread, None
            if thread is None:
                return
            self._calls.put(None)
        if timeout > 0:
            thread.join(timeout)

    def _serve(self) -> None:
        self.lowered = _lower_priority(self._niceness)
        while True:
            item = self._calls.get()
            if item is None:
                return
            call, done = item
            if not done.set_running_or_notify_cancel():
                continue
            try:
                done.set_result(call())
            except BaseException as exc:  # handed back to the caller, who raises it
                done.set_exception(exc)


def _lower_priority(niceness: int) -> bool:
    """Lower this thread's priority (Linux: a thread id is a process id to ``setpriority``)."""
    if niceness <= 0 or not hasattr(os, "setpriority") or not os.path.isdir("/proc/self/task"):
        return False
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + niceness)
    except OSError as exc:
        log.debug("could not lower the write thread's priority: %s", exc)
        return False
    return True


__all__ = ["NICENESS", "Yielding"]
