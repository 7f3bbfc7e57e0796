"""Two `lodviz serve` processes ("machines") over one PostgreSQL store, each with its MCP endpoint and landscape.

Real server, real processes, a real MCP client, and the landscape in a real
Chromium: what one machine's agent writes or promotes, the other one's
search and scene show.
"""

from __future__ import annotations

import threading

import anyio
import pytest
from mcp import Client

import lodviz

from .conftest import REFERENCE_TIME, SEED, ServeProcess, child_env, stdio_params


def call(url: str, name: str, args: dict):
    """One MCP tool call, in a thread of its own (a test's thread may belong to Playwright's event loop)."""

    async def main():
        async with Client(url) as client:
            return await client.call_tool(name, args)

    return call_with(main)


def call_with(main):
    """Run the coroutine function ``main`` to its end in a thread of its own."""
    out: list = []
    worker = threading.Thread(target=lambda: out.append(anyio.run(main)))
    worker.start()
    worker.join(120)
    assert out, "the MCP call did not answer"
    return out[0]


@pytest.fixture(scope="module")
def two_machines(pg_server, tmp_path_factory, embedder):
    """Two servers over one new store, for the module (each test writes or promotes its own memories)."""
    pg_url = pg_server.new_database()
    tmp_path = tmp_path_factory.mktemp("fleet")
    mem = lodviz.open(pg_url, embedder=embedder)
    ids = {key: mem.add(**record) for key, record in SEED.items()}
    mem.set_reference_time(REFERENCE_TIME)
    mem.close()
    machines = [ServeProcess(pg_url, child_env(tmp_path / f"machine-{n}")).start() for n in range(2)]
    machines[0].pg_url = pg_url  # type: ignore[attr-defined]
    machines[0].tmp = tmp_path  # type: ignore[attr-defined]
    try:
        yield machines, ids
    finally:
        for machine in machines:
            machine.stop()


def test_two_servers_start_on_one_store_and_name_it_without_its_password(two_machines):
    (one, two), _ = two_machines
    assert one.url != two.url
    assert "postgresql://" in one.banner and "@" in one.banner and ":***@" in one.banner


def test_a_write_through_one_machine_is_found_through_the_other(two_machines):
    (one, two), _ = two_machines
    written = call(one.mcp_url("frank"), "memory_write", {"text": "Frank booked the Oslo venue for the autumn summit.", "visibility": "shared"})
    new_id = written.structured_content["id"]
    found = call(two.mcp_url("alice"), "memory_search", {"query": "where is the autumn summit?"})
    assert new_id in [item["id"] for item in found.structured_content["items"]]


def test_a_promotion_on_one_machine_is_in_the_next_search_on_the_other(two_machines):
    (one, two), ids = two_machines
    old = ids["alice_old"]  # far from the query and old: beyond the far plane until promoted
    query = {"query": "what did we agree on the liability cap?"}
    before = call(two.mcp_url("alice"), "memory_search", query)
    assert old not in [item["id"] for item in before.structured_content["items"]]
    promoted = call(one.mcp_url("alice"), "memory_promote", {"memory_id": old, "reason": "key precedent"})
    floor = promoted.structured_content["floor"]
    assert floor != "OUT"
    after = call(two.mcp_url("alice"), "memory_search", query)
    item = next(i for i in after.structured_content["items"] if i["id"] == old)
    assert item["floor"] == floor and item["tier"] == floor


def test_a_stdio_client_on_a_postgres_store_serves_itself_and_the_machines_see_its_writes(two_machines):
    (one, two), _ = two_machines
    params = stdio_params(one.pg_url, "grace", child_env(one.tmp / "stdio"))

    async def main():
        async with Client(params) as client:
            return await client.call_tool("memory_write", {"text": "Grace signed the Bergen venue contract.", "visibility": "shared"})

    written = call_with(main)
    assert not written.is_error
    found = call(two.mcp_url("alice"), "memory_search", {"query": "who signed the venue contract?"})
    assert written.structured_content["id"] in [item["id"] for item in found.structured_content["items"]]


@pytest.mark.browser
def test_a_write_through_one_machine_appears_in_the_other_machines_landscape(two_machines):
    playwright = pytest.importorskip("playwright.sync_api")
    from tests.app.browser import CHROMIUM, CHROMIUM_ARGS, eventually, open_scene, trace_js

    (one, two), _ = two_machines
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 920})
        open_scene(page, two.url)

        def drawn() -> list[int]:
            return page.evaluate(trace_js("memories", "customdata")) + page.evaluate(trace_js("not a candidate", "customdata"))

        assert len(drawn()) >= len(SEED)
        written = call(one.mcp_url("frank"), "memory_write", {"text": "Frank moved the autumn summit to Bergen.", "visibility": "shared"})
        new_id = written.structured_content["id"]
        assert eventually(page, lambda: new_id in drawn(), 20_000)  # the other machine's poll redraws it
        browser.close()
