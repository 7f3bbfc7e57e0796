"""Warming a store in the background: opening returns at once, searches after it find everything loaded."""

from __future__ import annotations

import pytest

import lodviz


def test_a_store_opened_warm_loads_in_the_background_and_searches_alike(store_path, embedder):
    with lodviz.open(store_path, embedder=embedder) as mem:
        mem.add_many([{"text": f"note {i}: the supplier shipped lot {i} late.", "agent_id": "ops"} for i in range(50)])
        cold = mem.search("supplier shipped late", touch=False)
    with lodviz.open(store_path, embedder=embedder, warm=True) as mem:
        assert mem.wait_warm(timeout=60)
        warm = mem.search("supplier shipped late", touch=False)
    assert [(i.id, i.tier) for i in warm.items] == [(i.id, i.tier) for i in cold.items]


def test_waiting_for_the_warm_holds_no_lock_the_warm_needs(store_path, embedder):
    import threading

    with lodviz.open(store_path, embedder=embedder) as mem:
        mem.add_many([{"text": f"note {i} about lot {i}.", "agent_id": "ops"} for i in range(20)])
    with lodviz.open(store_path, embedder=embedder, warm=True, lock=threading.RLock()) as mem:
        assert mem.wait_warm(timeout=60)


def test_closing_a_store_while_it_warms_is_quiet(store_path, embedder):
    with lodviz.open(store_path, embedder=embedder) as mem:
        mem.add_many([{"text": f"note {i} about lot {i}.", "agent_id": "ops"} for i in range(20)])
    mem = lodviz.open(store_path, embedder=embedder, warm=True)
    mem.close()
    assert mem.wait_warm(timeout=60)


def test_closing_a_store_while_it_warms_waits_for_the_warm_up_to_end(store_path, embedder):
    # A process that exits right after close must not finalise with the warm-up inside DuckDB.
    with lodviz.open(store_path, embedder=embedder) as mem:
        mem.add_many([{"text": f"note {i} about lot {i}.", "agent_id": "ops"} for i in range(200)])
    mem = lodviz.open(store_path, embedder=embedder, warm=True)
    warming = mem._warmup.thread
    mem.close()
    assert warming is not None and not warming.is_alive()


class CountingEmbedder:
    """The test embedder, counting the texts it is asked to embed."""

    def __init__(self, inner):
        self.inner, self.texts = inner, []
        self.name, self.dimension = inner.name, inner.dimension

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed(self, texts):
        self.texts.extend(texts)
        return self.inner.embed(texts)


def test_a_request_during_the_warm_up_waits_for_a_step_not_for_all_of_it(store_path, embedder):
    import threading

    with lodviz.open(store_path, embedder=embedder) as mem:
        first = mem.add("The supplier audit is due in March.", agent_id="ops")
    with lodviz.open(store_path, embedder=embedder, lock=threading.RLock()) as mem:
        loading, go_on = threading.Event(), threading.Event()
        store_warm = mem._store.warm

        def slow_warm():
            loading.set()
            go_on.wait(30)  # the store's load takes long (a large store)
            store_warm()

        mem._store.warm = slow_warm
        warming = threading.Thread(target=mem.warm)  # as `lodviz serve` warms: in a thread, in the foreground there
        warming.start()
        assert loading.wait(10)
        got = threading.Event()
        threading.Thread(target=lambda: (mem.get(first), got.set()), daemon=True).start()
        answered = got.wait(10)
        go_on.set()
        warming.join(30)
        assert answered


@pytest.mark.slow
def test_the_server_the_app_and_a_caller_warm_once(store_path, embedder):
    import threading

    from lodviz.app import create_app

    with lodviz.open(store_path, embedder=embedder) as mem:
        mem.add("The supplier audit is due in March.", agent_id="ops")
    counting = CountingEmbedder(embedder)
    with lodviz.open(store_path, embedder=counting, lock=threading.RLock()) as mem:
        mem.warm()
        mem.warm(background=True)
        create_app(mem, place_on_start=False)
        assert mem.wait_warm(timeout=60)
        for thread in threading.enumerate():
            if thread.name.startswith("lodviz-warm"):
                thread.join(60)
        assert counting.texts == ["warm up"]
