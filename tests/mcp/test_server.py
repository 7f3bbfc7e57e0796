"""The serving process in this process: fixed agents, idle stop, demo copy, relay errors.

These run ``lodviz.serve.serve`` on a thread (or the main thread) with the
session's embedder, so they need no model load of their own.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

import lodviz
from lodviz import serve as serving
from lodviz.cli import cli
from lodviz.serve import demo, registry
from lodviz.serve.relay import Relay, build_relay_server

from .conftest import child_env, http_json, lodviz_command, seed_store


class Background:
    """``serve(...)`` on a thread; stopped in the finaliser whatever happens."""

    def __init__(self, store: Path, **options: Any) -> None:
        self.entry: registry.ServeEntry | None = None
        self._stop: Any = None
        self.error: BaseException | None = None
        ready = threading.Event()

        def started(entry: registry.ServeEntry, stop: Any) -> None:
            self.entry, self._stop = entry, stop
            ready.set()

        def run() -> None:
            try:
                serving.serve(store, port=0, open_browser=False, echo=lambda line: None, on_started=started, **options)
            except BaseException as exc:  # reported by the test
                self.error = exc
                ready.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert ready.wait(60), "the server did not start"
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()
        self.thread.join(20)


@pytest.fixture
def background():
    started: list[Background] = []

    def start(store: Path, **options: Any) -> Background:
        server = Background(store, **options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def test_fixed_agent_server(tmp_path, embedder, background):
    store = tmp_path / "solo.duckdb"
    ids = seed_store(store, embedder)
    server = background(store, agent="alice", with_app=False, embedder=embedder)
    assert server.entry is not None and server.entry.agent == "alice"
    assert registry.live_entry(store) is not None

    async def main() -> list[Any]:
        out = []
        for url in (server.entry.mcp_url, server.entry.mcp_url + "alice"):
            async with Client(url) as client:
                out.append(await client.call_tool("memory_expand", {"memory_id": ids["alice_cap"]}))
        try:
            async with Client(server.entry.mcp_url + "bob") as client:
                await client.call_tool("memory_search", {"query": "anything"})
        except Exception as exc:  # refused before any session exists
            out.append(exc)
        return out

    as_default, as_named, refused = anyio.run(main)
    assert not as_default.is_error and as_default.structured_content["agent_id"] == "alice"
    assert not as_named.is_error
    assert "acts for agent 'alice' only" in str(refused) or "acts for agent 'alice' only" in repr(refused)
    status, body = http_json(server.entry.url)
    assert status == 200 and "MCP server" in body  # no landscape app in this server


def test_idle_server_stops_and_unregisters(tmp_path, embedder):
    store = tmp_path / "idle.duckdb"
    seed_store(store, embedder)
    lines: list[str] = []
    started = time.monotonic()
    serving.serve(store, port=0, open_browser=False, idle_timeout=1.0, with_app=False, embedder=embedder, echo=lines.append)
    assert time.monotonic() - started < 20
    assert lines and lines[0].startswith(f"lodviz is serving {store} at http://127.0.0.1:")
    assert registry.read_entry(store) is None
    with lodviz.open(store, embedder=embedder) as mem:  # the store was released
        assert len(mem) > 0


def test_relay_turns_an_unreachable_owner_into_a_tool_error(tmp_path):
    relay = Relay(str(tmp_path / "no" / "such" / "dir" / "m.duckdb"), "alice", timeout=5)
    server = build_relay_server(relay)

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool("memory_search", {"query": "anything"})

    result = anyio.run(main)
    assert result.is_error and "no such directory" in text(result)


def test_stale_registry_entries_are_ignored(tmp_path):
    store = tmp_path / "stale.duckdb"
    dead = subprocess.Popen(["true"])
    dead.wait()
    registry.write_entry(registry.ServeEntry(url="http://127.0.0.1:9/", mcp_url="http://127.0.0.1:9/mcp/", pid=dead.pid, store=str(store)))
    assert registry.live_entry(store) is None
    assert not registry.registry_path(store).exists()  # a dead pid's entry is removed
    registry.write_entry(registry.ServeEntry(url="http://127.0.0.1:9/", mcp_url="http://127.0.0.1:9/mcp/", pid=os.getpid(), store=str(store)))
    assert registry.live_entry(store) is None  # alive, but nothing answers there as lodviz
    registry.remove_entry(store, pid=os.getpid() + 1)
    assert registry.registry_path(store).exists()  # only its owner removes an entry
    registry.remove_entry(store, pid=os.getpid())
    assert not registry.registry_path(store).exists()


def test_demo_works_on_a_copy(tmp_path, embedder, monkeypatch):
    sample = tmp_path / "sample" / "lodviz-sample.duckdb"
    sample.parent.mkdir()
    seed_store(sample, embedder)
    original = sample.read_bytes()
    monkeypatch.setattr(demo, "sample_store_path", lambda: sample)
    monkeypatch.setenv("LODVIZ_HOME", str(tmp_path / "home"))
    copy = serving.prepare_demo()
    assert copy == tmp_path / "home" / "lodviz-sample.duckdb" and copy.read_bytes() == original
    with lodviz.open(copy, embedder=embedder) as mem:
        mem.add("A change made during the demo.", agent_id="alice")
    changed = copy.read_bytes()
    assert serving.prepare_demo().read_bytes() == changed  # kept between runs
    assert serving.prepare_demo(reset=True).read_bytes() == original  # --reset starts again
    assert sample.read_bytes() == original  # the shipped file is never touched


def test_demo_without_a_sample_store_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "sample_store_path", lambda: tmp_path / "missing.duckdb")
    monkeypatch.setenv("LODVIZ_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(cli, ["demo", "--no-open"])
    assert result.exit_code == 1
    assert result.output.strip().startswith("Error: the sample store") and "missing" in result.output
    assert "Traceback" not in result.output


def test_mcp_http_with_a_bad_agent_is_one_line(tmp_path):
    result = subprocess.run(
        lodviz_command("mcp", "--http", "--create", "--store", str(tmp_path / "m.duckdb"), "--agent", "no spaces", "--port", "0"),
        capture_output=True, text=True, env=child_env(tmp_path), timeout=60, stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1
    assert result.stderr.strip().startswith("Error: agent name 'no spaces' must be") and result.stderr.count("\n") == 1


def test_relay_waits_for_a_busy_store_then_says_so(tmp_path, embedder):
    store = tmp_path / "busy.duckdb"
    seed_store(store, embedder)
    relay = Relay(str(store), "alice", timeout=5)
    server = build_relay_server(relay)

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool("memory_search", {"query": "anything"})

    with lodviz.open(store, embedder=embedder):  # another program holds the file
        result = anyio.run(main)
    assert result.is_error
    assert "is held by another program (not a lodviz server)" in text(result)
    assert registry.read_entry(store) is None
