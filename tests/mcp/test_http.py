"""A real `lodviz serve` process: MCP over streamable HTTP, the app and the API beside it.

One server for the module (the model loads once); every test acts as its own
agents or checks what it changes, so the order does not matter.
"""

from __future__ import annotations

import subprocess
from typing import Any

import anyio
import anyio.to_thread
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import lodviz
from lodviz.mcp_server import TOOL_NAMES
from lodviz.serve import registry

from .conftest import SEED, child_env, http_json, lodviz_command, stdio_params

SPEC_FIELDS = {"id", "tier", "content", "similarity", "decay", "score", "retrieval_count", "last_retrieved_at", "created_at", "agent_id"}


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def run_calls(target: Any, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    async def main() -> list[Any]:
        async with Client(target) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(main)


def test_prints_its_address_and_registers(served):
    assert served.banner == f"lodviz is serving {served.store} at {served.url} (MCP at {served.url}mcp/)"
    assert served.url.startswith("http://127.0.0.1:") and not served.url.endswith(":0/")
    entry = registry.live_entry(served.store)
    assert entry is not None and entry.url == served.url and entry.pid == served.process.pid
    status, health = http_json(served.url + "api/health")
    assert status == 200 and health["store"] == str(served.store) and health["pid"] == served.process.pid


def test_lists_tools_over_http(served):
    async def main() -> Any:
        async with Client(served.mcp_url()) as client:
            return await client.list_tools(), client.instructions

    tools, instructions = anyio.run(main)
    assert {tool.name for tool in tools.tools} == set(TOOL_NAMES)
    assert "memory_expand" in (instructions or "")


def test_search_expand_promote_and_see_it_next_time(served):
    ids = served.ids
    old = ids["alice_old"]
    first, expanded, promoted, promoted_again, after = run_calls(
        served.mcp_url("alice"),
        ("memory_search", {"query": "what did we agree on the liability cap?"}),
        ("memory_expand", {"memory_id": old}),
        ("memory_promote", {"memory_id": old, "reason": "venue questions keep coming back"}),
        ("memory_promote", {"memory_id": old, "reason": "keep it sharper still"}),
        ("memory_search", {"query": "what did we agree on the liability cap?"}),
    )
    data = first.structured_content
    assert data["agent_id"] == "alice" and data["items"]
    assert all(SPEC_FIELDS <= set(item) for item in data["items"])
    assert all(item["agent_id"] == "alice" or item["visibility"] == "shared" for item in data["items"])
    tiers = {item["id"]: item["tier"] for item in data["items"]}
    assert tiers[ids["alice_cap"]] == "FULL" and tiers[ids["alice_template"]] == "HEADLINE"
    assert old not in tiers  # beyond the far plane before the promotion
    assert text(first).startswith('Memory within 2000 tokens: ')
    assert expanded.structured_content["text"] == SEED["alice_old"]["text"]
    # Each promote lifts the floor at least one tier above where the memory comes back.
    floors = [promoted.structured_content["floor"], promoted_again.structured_content["floor"]]
    order = ["OUT", "HEADLINE", "SUMMARY", "FULL"]
    assert order.index(floors[0]) >= 1 and order.index(floors[1]) >= max(order.index(floors[0]), 2)
    again = {item["id"]: item for item in after.structured_content["items"]}
    assert again[old]["tier"] == floors[1] and again[old]["floor"] == floors[1]
    assert again[old]["retrieval_count"] >= 1  # the expand counted


def test_agent_by_path_header_and_query(served):
    async def agent_of(url: str, headers: dict[str, str] | None = None) -> str:
        import httpx2

        transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers or {}))
        async with Client(transport) as client:
            result = await client.call_tool("memory_unseen", {"limit": 1})
            return result.structured_content["agent_id"]

    async def main() -> list[str]:
        return [
            await agent_of(served.mcp_url("carol")),
            await agent_of(served.mcp_url(), {"X-Lodviz-Agent": "dave"}),
            await agent_of(served.mcp_url() + "?agent=erin"),
            await agent_of(served.mcp_url()),
        ]

    assert anyio.run(main) == ["carol", "dave", "erin", "default"]


def test_isolation_over_http(served):
    secret = served.ids["bob_secret"]
    as_bob = run_calls(served.mcp_url("bob"), ("memory_search", {"query": "the acquisition codename"}))[0]
    assert secret in [item["id"] for item in as_bob.structured_content["items"]]
    search, expand, expand_missing, promote, promote_missing = run_calls(
        served.mcp_url("alice"),
        ("memory_search", {"query": "the acquisition codename"}),
        ("memory_expand", {"memory_id": secret}),
        ("memory_expand", {"memory_id": 99999}),
        ("memory_promote", {"memory_id": secret, "reason": "probe"}),
        ("memory_promote", {"memory_id": 99999, "reason": "probe"}),
    )
    assert secret not in [item["id"] for item in search.structured_content["items"]]
    assert "Nightingale" not in text(search)
    assert expand.is_error and promote.is_error
    assert text(expand) == text(expand_missing).replace("99999", str(secret))
    assert text(promote) == text(promote_missing).replace("99999", str(secret))


def test_bad_input_over_http_and_the_server_keeps_answering(served):
    results = run_calls(
        served.mcp_url("alice"),
        ("memory_expand", {"memory_id": 424242}),
        ("memory_search", {"query": ""}),
        ("memory_search", {"query": "cap", "budget_tokens": 2}),
        ("memory_search", {"query": "cap", "k": "lots"}),
        ("memory_write", {"text": "x", "metadata": "not an object"}),
        ("memory_search", {"query": "liability cap"}),
    )
    *bad, good = results
    messages = [text(r) for r in bad]
    assert all(r.is_error for r in bad), messages
    assert "No memory with id 424242." in messages[0]
    assert "the query is empty." in messages[1]
    assert "cannot hold even one headline" in messages[2]
    assert "valid integer" in messages[3]
    assert "valid dictionary" in messages[4]
    assert not good.is_error and good.structured_content["items"]
    assert served.process.poll() is None


def test_bad_agent_name_is_refused_with_a_message(served):
    status, body = http_json(served.url + "mcp/not%20an%20agent", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert status == 400 and "agent name 'not an agent'" in body["error"]["message"]


def test_promotion_in_the_app_is_in_the_next_search(served):
    # The app promotes through the same Memory (actor "app"); /api/promote is the same call over HTTP.
    target = served.ids["shared_policy"]
    status, body = http_json(served.url + "api/promote", {"memory_id": target, "reason": "legal sign-off matters", "to": "FULL"})
    assert status == 200 and body == {"id": target, "floor": "FULL"}
    (result,) = run_calls(served.mcp_url("bob"), ("memory_search", {"query": "liability cap"}))
    item = {i["id"]: i for i in result.structured_content["items"]}[target]
    assert item["tier"] == "FULL" and item["floor"] == "FULL"
    status, body = http_json(served.url + "api/promote", {"memory_id": 99999})
    assert status == 404 and body["error"] == "No memory with id 99999."


def test_write_appears_in_the_landscape_data(served):
    (written,) = run_calls(
        served.mcp_url("frank"),
        ("memory_write", {"text": "Frank booked the Oslo venue for the autumn summit.", "kind": "note", "visibility": "shared"}),
    )
    new_id = written.structured_content["id"]
    (seen,) = run_calls(served.mcp_url("alice"), ("memory_search", {"query": "where is the autumn summit?"}))
    assert new_id in [item["id"] for item in seen.structured_content["items"]]  # shared: alice sees it
    status, page = http_json(served.url)
    assert status == 200 and "<html" in str(page).lower()  # the landscape app is served beside MCP


def test_stdio_relays_to_the_registered_server(served):
    env = child_env(served.tmp)
    calls = run_calls(
        stdio_params(served.store, "bob", env),
        ("memory_search", {"query": "the acquisition codename"}),
        ("memory_expand", {"memory_id": served.ids["alice_cap"]}),
    )
    assert served.ids["bob_secret"] in [item["id"] for item in calls[0].structured_content["items"]]
    assert calls[1].is_error and f"No memory with id {served.ids['alice_cap']}." in text(calls[1])
    entry = registry.read_entry(served.store)
    assert entry is not None and entry.pid == served.process.pid  # no second owner was started
    assert http_json(served.url + "api/health")[1]["pid"] == served.process.pid


def test_second_serve_on_the_same_store_is_refused_in_one_line(served):
    result = subprocess.run(
        lodviz_command("serve", "--store", str(served.store), "--no-open", "--port", "0"),
        capture_output=True, text=True, env=child_env(served.tmp), timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
    assert "already served by process" in result.stderr and served.url in result.stderr


def test_port_in_use_is_one_line(served, tmp_path):
    port = served.url.rsplit(":", 1)[1].strip("/")
    result = subprocess.run(
        lodviz_command("serve", "--create", "--store", str(tmp_path / "other.duckdb"), "--no-open", "--port", port),
        capture_output=True, text=True, env=child_env(tmp_path), timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == f"Error: port {port} on 127.0.0.1 is in use; pass --port N (or --port 0 for a free one)."



def test_api_and_mcp_refuse_foreign_origins_and_bad_bodies(served):
    url = served.url + "api/promote"
    target = served.ids["alice_tea"]
    assert http_json(url, {"memory_id": target}, headers={"Origin": "http://evil.example"})[0] == 403
    assert http_json(url, {"memory_id": target}, headers={"Host": "evil.example"})[0] == 421
    assert http_json(url, {"memory_id": target}, headers={"Content-Type": "text/plain"})[0] == 415
    assert http_json(url, {"reason": "no id"})[0] == 400
    status, body = http_json(url, {"memory_id": target, "to": "SKY"})
    assert status == 400 and "is not a tier" in body["error"]
    status, _ = http_json(served.mcp_url("alice"), {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Host": "evil.example"})
    assert status in (400, 403, 421)  # the SDK's DNS-rebinding protection
    (after,) = run_calls(served.mcp_url("alice"), ("memory_expand", {"memory_id": target}))
    assert after.structured_content["floor"] == "OUT"  # none of the refused requests promoted it


# -- concurrency: keep this last, it stops the module's server -------------------------

HTTP_AGENTS = ["ag-north", "ag-south", "ag-east", "ag-west"]
STDIO_AGENT = "ag-relay"
WRITES = 6
TOPICS = ["the supply contract", "the hiring plan", "the data-retention policy", "the Q3 budget", "the vendor audit", "the offsite"]


def note(agent: str, i: int) -> str:
    return f"{agent} note {i}: decision about {TOPICS[i % len(TOPICS)]} recorded on day {i + 1} by {agent}."


def promote_in_browser(url: str, memory_id: int) -> list[str]:
    """Promote a memory in the landscape, in headless Chromium, until its floor is FULL.

    Returns the floors the app reported after each click.
    """
    from playwright.sync_api import sync_playwright

    from tests.app.browser import CHROMIUM, CHROMIUM_ARGS

    floors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 920})
            page.goto(f"{url}?m={memory_id}")
            page.wait_for_selector("#panel-s", timeout=90_000)
            while not floors or floors[-1] != "FULL":
                before = page.inner_text("#action-status")
                page.fill("#reason", f"review step {len(floors)}")
                page.click("#promote")
                page.wait_for_function(
                    "(before) => { const t = document.querySelector('#action-status').innerText;"
                    " return t !== before && t.length > 0; }",
                    arg=before,
                    timeout=60_000,
                )
                message = page.inner_text("#action-status")
                assert message.startswith("Promoted"), message
                floors.append(message.rstrip(".").rsplit("→ ", 1)[1])
                assert len(floors) <= 3, floors
        finally:
            browser.close()
    return floors


def test_agents_and_app_share_one_store_concurrently(served, embedder):
    """Several agents write and search at once while the app promotes; nothing is lost.

    Runs last in this module: it stops the module's server to read the file.
    """
    server = served
    target = server.ids["shared_handbook"]
    failures: list[str] = []
    written: dict[str, list[int]] = {}
    searches: dict[str, int] = {}
    promotions: list[str] = []

    async def agent_work(client: Client, agent: str) -> None:
        written[agent], searches[agent] = [], 0
        for i in range(WRITES):
            result = await client.call_tool("memory_write", {"text": note(agent, i), "kind": "note"})
            if result.is_error:
                failures.append(f"{agent} write {i}: {result.content}")
                continue
            written[agent].append(result.structured_content["id"])
            result = await client.call_tool("memory_search", {"query": f"what did we decide about {TOPICS[i % len(TOPICS)]}?"})
            searches[agent] += 1
            if result.is_error:
                failures.append(f"{agent} search {i}: {result.content}")
            elif any(item["agent_id"] != agent and item["visibility"] != "shared" for item in result.structured_content["items"]):
                failures.append(f"{agent} saw another agent's private memory")
            if i % 2:
                result = await client.call_tool("memory_expand", {"memory_id": written[agent][-1]})
                if result.is_error:
                    failures.append(f"{agent} expand {i}: {result.content}")

    async def http_agent(agent: str) -> None:
        async with Client(server.mcp_url(agent)) as client:
            await agent_work(client, agent)

    async def stdio_agent() -> None:
        async with Client(stdio_params(server.store, STDIO_AGENT, child_env(server.tmp))) as client:
            await agent_work(client, STDIO_AGENT)

    async def app_side() -> None:
        # A person in the landscape promotes the memory while the agents work.
        promotions.extend(await anyio.to_thread.run_sync(promote_in_browser, server.url, target))

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            for agent in HTTP_AGENTS:
                tasks.start_soon(http_agent, agent)
            tasks.start_soon(stdio_agent)
            tasks.start_soon(app_side)

    anyio.run(main)
    assert not failures, failures
    assert promotions and promotions[-1] == "FULL"

    # The promotion is in every agent's next search.
    async def final_searches() -> list[Any]:
        results = []
        for agent in [*HTTP_AGENTS, STDIO_AGENT]:
            async with Client(server.mcp_url(agent)) as client:
                results.append(await client.call_tool("memory_search", {"query": "when are expense reports due?"}))
        return results

    for result in anyio.run(final_searches):
        item = {i["id"]: i for i in result.structured_content["items"]}[target]
        assert item["floor"] == "FULL" and item["tier"] == "FULL"

    assert server.process.poll() is None  # still serving
    assert server.stop() == 0
    assert "Traceback" not in server.stderr() and "ERROR" not in server.stderr(), server.stderr()

    # Nothing lost: the file holds every write, search and promotion.
    mem = lodviz.open(server.store, embedder=embedder)
    try:
        agents = [*HTTP_AGENTS, STDIO_AGENT]
        for agent in agents:
            assert len(written[agent]) == WRITES
            ids = [record.id for record in mem.export_records() if record.agent_id == agent]
            assert ids == sorted(written[agent])
            assert [mem.get(i).text for i in sorted(written[agent])] == [note(agent, i) for i in range(WRITES)]
            events = mem.audit(agent_id=agent, limit=1000)
            assert sum(1 for e in events if e.action == "write" and e.actor == agent) == WRITES
            assert sum(1 for e in events if e.action == "search" and e.actor == agent) == searches[agent] + 1
            assert sum(1 for e in events if e.action == "expand" and e.actor == agent) == WRITES // 2
        app_promotions = [e for e in mem.audit(actions=["promote"], limit=100) if e.actor == "app" and e.memory_id == target]
        assert len(app_promotions) == len(promotions)
        assert mem.get(target).floor == lodviz.Tier.FULL
    finally:
        mem.close()
