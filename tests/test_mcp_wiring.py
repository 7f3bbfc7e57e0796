"""The MCP server as registered, without the model: its tool list, where its work runs, its refusals.

These drive ``build_mcp`` through the SDK's in-process client on a store
made with the deterministic ``HashEmbedder``. The tools themselves are tested
as plain functions in test_mcp_tools_unit.py, and end to end (real model,
stdio, HTTP) in tests/mcp/.
"""

from __future__ import annotations

import inspect
import json
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import lodviz
from lodviz.mcp_server import TOOL_NAMES, build_mcp
from lodviz.result import Result

#: tools/list as clients saw it before the tools became module-level functions
#: (descriptions with their docstring indentation removed); since then memory_expand
#: gained the optional around and width, and an optional neighbourhood in its output.
PINNED = Path(__file__).parent / "fixtures" / "mcp_tools.json"


def listed(server: Any) -> list[dict[str, Any]]:
    async def main() -> Any:
        async with Client(server) as client:
            return await client.list_tools()

    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in anyio.run(main).tools]


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


class WatchedLock:
    """The Memory's lock, noting the thread of every acquisition."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.threads: list[threading.Thread] = []

    def __enter__(self) -> WatchedLock:
        self._lock.acquire()
        self.threads.append(threading.current_thread())
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def seeded(path: Path, embedder: Any, lock: Any = None) -> lodviz.Memory:
    mem = lodviz.open(path, embedder=embedder, lock=lock)
    mem.add("Paragon MSA: the liability cap is twice the annual fees.", agent_id="alice", created_at="2026-05-25T10:00:00Z")
    mem.add("Alice prefers green tea in the morning meetings.", agent_id="alice", created_at="2026-05-20T08:00:00Z")
    mem.add("The 2019 offsite was held in Lisbon.", agent_id="alice", created_at="2019-06-01T09:00:00Z")
    mem.add("Bob's private note: the codename is Nightingale.", agent_id="bob", created_at="2026-05-28T16:00:00Z")
    mem.set_reference_time("2026-06-01T12:00:00Z")
    return mem


def test_the_tool_list_is_what_clients_saw_before():
    """Names, descriptions, input and output schemas, annotations: pinned, and the same with or without a store."""
    pinned = json.loads(PINNED.read_text())
    now = listed(build_mcp(None))
    for tool in now:
        tool["description"] = inspect.cleandoc(tool["description"])
    assert [tool["name"] for tool in now] == [tool["name"] for tool in pinned] == list(TOOL_NAMES)
    for tool, before in zip(now, pinned, strict=True):
        assert tool == before, tool["name"]


def test_the_tool_list_of_a_served_store_is_the_relays(tmp_path, embedder):
    with lodviz.open(tmp_path / "m.duckdb", embedder=embedder) as mem:
        assert listed(build_mcp(mem, agent="alice", read_only=True)) == listed(build_mcp(None))


def test_store_work_and_rendering_run_off_the_event_loop(tmp_path, embedder, monkeypatch):
    """Defect 3: a result was rendered (taking the Memory's lock) on the event loop's thread."""
    lock = WatchedLock()
    mem = seeded(tmp_path / "m.duckdb", embedder, lock)
    rendered: list[threading.Thread] = []
    render = Result.render

    def watched_render(self: Result) -> str:
        rendered.append(threading.current_thread())
        return render(self)

    monkeypatch.setattr(Result, "render", watched_render)
    calls = [
        ("memory_search", {"query": "liability cap"}),
        ("memory_recent", {"since": "2026-01-01"}),
        ("memory_unseen", {"limit": 10}),
        ("memory_sample", {"n": 2}),
        ("memory_expand", {"memory_id": 1}),
        ("memory_write", {"text": "A new note about the cap."}),
        ("memory_promote", {"memory_id": 1, "reason": "key"}),
    ]

    async def main() -> tuple[threading.Thread, list[Any], list[threading.Thread]]:
        loop_thread = threading.current_thread()
        async with Client(build_mcp(mem, agent="alice")) as client:
            lock.threads.clear()
            results = [await client.call_tool(name, args) for name, args in calls]
            return loop_thread, results, list(lock.threads)

    try:
        loop_thread, results, locked = anyio.run(main)
    finally:
        mem.close()
    for (name, _), result in zip(calls, results, strict=True):
        assert not result.is_error, (name, text(result))
    assert len(rendered) == 4  # search, recent, unseen, sample
    assert loop_thread not in rendered, "a result was rendered on the event loop's thread"
    assert locked, "no store work seen"
    assert loop_thread not in locked, "the Memory's lock was taken on the event loop's thread"


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("memory_write", {"text": "x"}, "Error executing tool memory_write: this lodviz server is read-only (a demo); it does not write."),
        (
            "memory_promote",
            {"memory_id": 1, "reason": "r"},
            "Error executing tool memory_promote: this lodviz server is read-only (a demo); it does not promote.",
        ),
    ],
)
def test_a_read_only_server_refuses_changes_in_one_sentence(tmp_path, embedder, name, args, message):
    mem = seeded(tmp_path / "m.duckdb", embedder)

    async def main() -> list[Any]:
        async with Client(build_mcp(mem, agent="alice", read_only=True)) as client:
            return [await client.call_tool(name, args), await client.call_tool("memory_search", {"query": "cap"})]

    try:
        refused, searched = anyio.run(main)
        assert refused.is_error and text(refused) == message
        assert not searched.is_error and searched.structured_content["items"]
        assert mem.get(1).retrieval_count == 0 and len(mem) == 4  # nothing written, not even the use
    finally:
        mem.close()


def test_expand_around_through_the_server_matches_its_output_schema(tmp_path, embedder):
    """The SDK validates structured content against the output schema: a neighbourhood passes, and so does the whole."""
    mem = seeded(tmp_path / "m.duckdb", embedder)
    session = "\n".join(f"{'Ada' if t % 2 else 'Bo'}: Turn {t} of the review, about item {t} and the shipping dates. Fine." for t in range(16))
    memory_id = mem.add(session, agent_id="alice")

    async def main() -> list[Any]:
        async with Client(build_mcp(mem, agent="alice")) as client:
            return [
                await client.call_tool("memory_expand", {"memory_id": memory_id, "around": "about item 7", "width": 1}),
                await client.call_tool("memory_expand", {"memory_id": memory_id}),
                await client.call_tool("memory_expand", {"memory_id": memory_id, "around": "", "width": 1}),
            ]

    try:
        part, whole, empty = anyio.run(main)
        assert not part.is_error and not whole.is_error, (text(part), text(whole))
        assert part.structured_content["neighbourhood"]["positions"] == [6, 7, 8]
        assert whole.structured_content["neighbourhood"] is None and whole.structured_content["text"] == session
        assert empty.is_error and text(empty) == "Error executing tool memory_expand: around is empty: give a phrase from the excerpt you read."
        assert mem.get(memory_id).retrieval_count == 2
    finally:
        mem.close()


def test_a_server_without_a_store_lists_but_does_not_call():
    async def main() -> Any:
        async with Client(build_mcp(None)) as client:
            return await client.call_tool("memory_search", {"query": "anything"})

    result = anyio.run(main)
    assert result.is_error
    assert text(result) == "Error executing tool memory_search: this MCP server lists tools only; it has no store."


def test_an_unexpected_failure_is_one_sentence_and_a_log_line(tmp_path, embedder, monkeypatch, caplog):
    mem = seeded(tmp_path / "m.duckdb", embedder)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the disk caught fire")

    monkeypatch.setattr(mem, "search", broken)

    async def main() -> Any:
        async with Client(build_mcp(mem, agent="alice")) as client:
            return await client.call_tool("memory_search", {"query": "cap"})

    try:
        with caplog.at_level("WARNING", logger="lodviz.mcp"):
            result = anyio.run(main)
    finally:
        mem.close()
    assert result.is_error
    assert text(result) == (
        "Error executing tool memory_search: lodviz could not do this (RuntimeError); the server's log says more."
    )
    assert "fire" not in text(result)
    assert any("RuntimeError: the disk caught fire" in record.getMessage() for record in caplog.records)
