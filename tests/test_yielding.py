"""``lodviz.yielding``: a write's compression and embedding run in a thread of lower priority."""

from __future__ import annotations

import contextvars
import os
import sys
import threading

import pytest

import lodviz
from lodviz.yielding import NICENESS, Yielding

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities are Linux's")


def _priority() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_a_call_returns_its_answer_from_another_thread():
    worker = Yielding()
    try:
        assert worker.run(lambda: (threading.current_thread().name, 6 * 7)) == ("lodviz-write", 42)
        assert threading.current_thread().name != "lodviz-write"
    finally:
        worker.close()


def test_what_a_call_raises_is_raised_to_its_caller():
    worker = Yielding()
    try:
        with pytest.raises(ValueError, match="bad text"):
            worker.run(lambda: (_ for _ in ()).throw(ValueError("bad text")))
        assert worker.run(lambda: "still serving") == "still serving"
    finally:
        worker.close()


@linux
def test_the_thread_runs_at_a_lower_priority_than_its_caller():
    worker = Yielding()
    try:
        assert worker.run(_priority) == min(_priority() + NICENESS, 19)
        assert worker.lowered
    finally:
        worker.close()


def test_a_call_sees_its_callers_context():
    face: contextvars.ContextVar[str] = contextvars.ContextVar("face", default="api")
    face.set("mcp")
    worker = Yielding()
    try:
        assert worker.run(face.get) == "mcp"
    finally:
        worker.close()


def test_close_ends_the_thread():
    worker = Yielding()
    worker.run(lambda: None)
    before = {t.name for t in threading.enumerate()}
    worker.close(timeout=10)
    assert "lodviz-write" in before
    assert "lodviz-write" not in {t.name for t in threading.enumerate()}


class WhereEmbedded:
    """The test embedder, noting the thread and its priority for every call."""

    def __init__(self, inner):
        self._inner = inner
        self.name = inner.name
        self.calls: list[tuple[str, int]] = []

    def __getattr__(self, attribute):
        return getattr(self._inner, attribute)

    def embed(self, texts):
        self.calls.append((threading.current_thread().name, _priority()))
        return self._inner.embed(texts)


@linux
def test_a_write_embeds_in_the_lowered_thread_and_a_search_in_its_own(store_path, embedder):
    noting = WhereEmbedded(embedder)
    with lodviz.open(store_path, embedder=noting) as mem:
        mem.add("the supplier shipped lot 7 two weeks late, and the buyer wants a credit note.")
        writes = list(noting.calls)
        noting.calls.clear()
        mem.search("supplier late", touch=False)
    assert writes and all(name == "lodviz-write" and priority > _priority() for name, priority in writes)
    assert noting.calls == [(threading.current_thread().name, _priority())]
