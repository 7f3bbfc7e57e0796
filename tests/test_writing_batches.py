"""A write of many batches: each batch is one transaction, duplicates across batches are stored once, and a batch that fails leaves the ones before it."""

from __future__ import annotations

import pytest

import lodviz
from lodviz.testing import HashEmbedder

from .conftest import HASH_DIMENSION


def batch(name: str, n: int) -> list[dict]:
    return [{"text": f"{name} note {i}: the supplier audit moved to week {i}.", "agent_id": "ops"} for i in range(n)]


def test_a_text_in_two_batches_is_stored_once(tmp_path):
    mem = lodviz.open(tmp_path / "twice.duckdb", embedder=HashEmbedder(HASH_DIMENSION))
    try:
        same = {"text": "The Paragon MSA caps liability at 2x annual fees.", "agent_id": "legal"}
        report = mem.add_many([same, *batch("a", 3), same, *batch("b", 3)], batch_size=4)
        assert len(report.added) == 7 and report.skipped == 1
        assert sum(r.text == same["text"] for r in mem.export_records()) == 1
    finally:
        mem.close()


def test_a_batch_that_fails_to_store_leaves_the_batches_before_it_and_nothing_after(tmp_path, monkeypatch):
    mem = lodviz.open(tmp_path / "fails.duckdb", embedder=HashEmbedder(HASH_DIMENSION))
    try:
        calls: list[int] = []
        insert = mem._store.insert

        def failing_second(rows, *args, **kwargs):
            calls.append(len(rows))
            if len(calls) == 2:
                raise lodviz.StoreError("the disk is full")
            return insert(rows, *args, **kwargs)

        monkeypatch.setattr(mem._store, "insert", failing_second)
        with pytest.raises(lodviz.StoreError, match="disk is full"):
            mem.add_many(batch("one", 3) + batch("two", 3) + batch("three", 3), batch_size=3)
        assert calls == [3, 3]  # the third batch is never stored
        assert sorted(r.text.split(" ")[0] for r in mem.export_records()) == ["one"] * 3
    finally:
        mem.close()
