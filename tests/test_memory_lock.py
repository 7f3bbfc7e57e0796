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


class HeldEmbedder:
    """The test embedder, except that a text holding ``marker`` waits in ``embed`` until released."""

    def __init__(self, inner, marker: str) -> None:
        self._inner, self._marker = inner, marker
        self.name, self.entered, self.release = inner.name, threading.Event(), threading.Event()

    def __getattr__(self, name):  # tokenizer_source, max_tokens and the rest: the inner embedder's
        return getattr(self._inner, name)

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts):
        if any(self._marker in t for t in texts):
            self.entered.set()
            assert self.release.wait(30)
        return self._inner.embed(texts)


def test_a_write_being_embedded_does_not_keep_another_agents_search_waiting(store_path, embedder):
    held = HeldEmbedder(embedder, "quarterly board pack")
    mem = lodviz.open(store_path, embedder=held, lock=threading.Lock())
    try:
        mem.add("The supplier audit is due in March.", agent_id="b")
        writer = threading.Thread(target=lambda: mem.add("The quarterly board pack goes out on Friday.", agent_id="a"), daemon=True)
        writer.start()
        assert held.entered.wait(30)  # the write is embedding its text, and stays there
        assert finishes(lambda: mem.search("supplier audit", agent_id="b").render(), timeout=10)
        assert len(mem) == 1  # nothing half-written meanwhile
        held.release.set()
        writer.join(30)
        assert len(mem) == 2
    finally:
        held.release.set()
        mem.close()


def test_two_writes_of_one_text_at_once_store_it_once(store_path, embedder):
    held = HeldEmbedder(embedder, "board pack")
    mem = lodviz.open(store_path, embedder=held, lock=threading.Lock())
    try:
        text = "The quarterly board pack goes out on Friday."
        results = []
        threads = [threading.Thread(target=lambda: results.append(mem.write(text, agent_id="a")), daemon=True) for _ in range(2)]
        for t in threads:
            t.start()
        assert held.entered.wait(30)
        held.release.set()
        for t in threads:
            t.join(30)
        assert len(mem) == 1
        assert sorted(duplicate for _, duplicate in results) == [False, True]
        assert results[0][0].id == results[1][0].id
    finally:
        held.release.set()
        mem.close()
