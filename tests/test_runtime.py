"""``lodviz.runtime``: a served process freezes its start-up state once the store is warm."""

from __future__ import annotations

import gc

import pytest

import lodviz
from lodviz import runtime
from lodviz.serve.process import _warm_then_settle


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
