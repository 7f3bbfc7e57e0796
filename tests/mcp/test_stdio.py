"""`lodviz mcp --store PATH --agent NAME` over stdio, with no server running yet.

The first client makes `lodviz mcp` start the store's owner in the background;
every later client (any agent) relays to that same owner. The owner is
stopped by the fixture's finaliser.
"""

from __future__ import annotations

import subprocess
from typing import Any

import anyio
import pytest
from mcp import Client

from lodviz.mcp_server import TOOL_NAMES
from lodviz.serve import registry

from .conftest import SEED, child_env, lodviz_command, seed_store, stdio_params, stop_registered


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder):
    tmp = tmp_path_factory.mktemp("stdio")
    path = tmp / "agents.duckdb"
    ids = seed_store(path, embedder)
    yield path, ids, child_env(tmp)
    stop_registered(path)


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def session(store: Any, agent: str, *calls: tuple[str, dict[str, Any]], list_tools: bool = False) -> tuple[Any, list[Any]]:
    path, _, env = store

    async def main() -> tuple[Any, list[Any]]:
        async with Client(stdio_params(path, agent, env)) as client:
            tools = await client.list_tools() if list_tools else None
            return tools, [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(main)


def test_first_client_starts_the_owner_and_does_everything(store):
    path, ids, _ = store
    assert registry.live_entry(path) is None
    tools, (written, first, expanded, promoted, again, bad, after_bad) = session(
        store,
        "alice",
        ("memory_write", {"text": "Alice moved the Paragon renewal review to the first week of July.", "kind": "note"}),
        ("memory_search", {"query": "when is the Paragon renewal review?"}),
        ("memory_expand", {"memory_id": ids["alice_template"]}),
        ("memory_promote", {"memory_id": ids["alice_template"], "reason": "the template is the starting point"}),
        ("memory_search", {"query": "when is the Paragon renewal review?"}),
        ("memory_expand", {"memory_id": 31337}),
        ("memory_search", {"query": "Paragon renewal"}),
        list_tools=True,
    )
    assert {tool.name for tool in tools.tools} == set(TOOL_NAMES)
    assert not written.is_error, text(written)
    new_id = written.structured_content["id"]
    items = {item["id"]: item for item in first.structured_content["items"]}
    assert items[new_id]["tier"] == "FULL" and items[new_id]["agent_id"] == "alice"
    assert "Paragon renewal review" in text(first)
    assert expanded.structured_content["text"] == SEED["alice_template"]["text"]
    # Expanded just before, it comes back sharper; the promote lifts it one tier above that.
    floor = promoted.structured_content["floor"]
    assert promoted.structured_content["previous_floor"] == "OUT" and floor in ("SUMMARY", "FULL")
    before = first.structured_content["items"]
    after = {item["id"]: item for item in again.structured_content["items"]}
    assert after[ids["alice_template"]]["floor"] == floor and after[ids["alice_template"]]["tier"] == floor
    assert after[ids["alice_template"]]["retrieval_count"] == 1 + next(
        (i["retrieval_count"] for i in before if i["id"] == ids["alice_template"]), 0
    )
    assert bad.is_error and "No memory with id 31337." in text(bad)
    assert not after_bad.is_error
    entry = registry.live_entry(path)
    assert entry is not None and entry.store == str(path)
    assert registry.log_path(path).exists()


def test_other_agents_share_the_owner_but_not_private_memories(store):
    path, ids, _ = store
    owner = registry.live_entry(path)
    assert owner is not None
    _, (search, expand, promote, missing) = session(
        store,
        "bob",
        ("memory_search", {"query": "Paragon renewal review"}),
        ("memory_expand", {"memory_id": ids["alice_cap"]}),
        ("memory_promote", {"memory_id": ids["alice_cap"], "reason": "probe"}),
        ("memory_expand", {"memory_id": 31337}),
    )
    assert {item["agent_id"] for item in search.structured_content["items"]} <= {"bob", "ops"}
    assert "moved the Paragon renewal review" not in text(search)  # alice's private write
    assert expand.is_error and promote.is_error
    assert text(expand) == text(missing).replace("31337", str(ids["alice_cap"]))
    assert f"No memory with id {ids['alice_cap']}." in text(promote)
    again = registry.live_entry(path)
    assert again is not None and again.pid == owner.pid  # the same owner, not a second one


def test_mcp_without_agent_is_a_usage_error(store):
    path, _, env = store
    result = subprocess.run(lodviz_command("mcp", "--store", str(path)), capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 2 and "--agent" in result.stderr and "Traceback" not in result.stderr


def test_the_relay_survives_a_restart_of_the_owner(store):
    path, ids, env = store
    before = registry.live_entry(path)
    assert before is not None

    async def main() -> list[Any]:
        async with Client(stdio_params(path, "alice", env)) as client:
            first = await client.call_tool("memory_expand", {"memory_id": ids["alice_tea"]})
            stop_registered(path)  # the owner goes away between two calls
            second = await client.call_tool("memory_expand", {"memory_id": ids["alice_tea"]})
            return [first, second]

    first, second = anyio.run(main)
    assert not first.is_error and not second.is_error, text(second)
    assert second.structured_content["retrieval_count"] == first.structured_content["retrieval_count"] + 1
    after = registry.live_entry(path)
    assert after is not None and after.pid != before.pid  # a new owner, started on demand
