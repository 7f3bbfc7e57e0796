"""Warming a store in the background: opening returns at once, searches after it find everything loaded."""

from __future__ import annotations

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
