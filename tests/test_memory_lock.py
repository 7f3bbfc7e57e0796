"""A Memory shared by threads: any lock works, and no operation waits on itself."""

from __future__ import annotations

import threading

import lodviz


def finishes(fn, timeout: float = 30.0) -> bool:
    """Does ``fn`` return (in a thread of its own) within ``timeout``? False means it hangs."""
    done = threading.Event()

    def run() -> None:
        fn()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done.wait(timeout)


def test_a_plain_lock_does_not_hang_an_add_that_calls_add_many(store_path, embedder):
    mem = lodviz.open(store_path, embedder=embedder, lock=threading.Lock())
    try:
        assert finishes(lambda: mem.add("The supplier audit is due in March.", agent_id="a"))
        assert finishes(lambda: mem.search("supplier audit", agent_id="a").render())
        assert len(mem) == 1
    finally:
        mem.close()


def test_a_plain_lock_still_keeps_two_threads_apart(store_path, embedder):
    lock = threading.Lock()
    mem = lodviz.open(store_path, embedder=embedder, lock=lock)
    try:
        lock.acquire()  # another thread is inside the memory
        added = threading.Event()
        threading.Thread(target=lambda: (mem.add("Waits for the lock.", agent_id="a"), added.set()), daemon=True).start()
        blocked = not added.wait(0.5)
        lock.release()
        assert blocked and added.wait(30)
    finally:
        mem.close()
