"""`lodviz serve` under a service manager: SIGTERM ends it promptly and loses nothing it acknowledged.

The 2-second bound is the behaviour asked of the server (a service manager
escalates to SIGKILL when a stop takes longer), not a speed measurement:
`benchmarks/sigterm.py` measures how long it takes (about 0.3 s here).
"""

from __future__ import annotations

import http.client
import signal
import subprocess
import threading
import urllib.parse

import anyio
import numpy as np
from mcp import Client

import lodviz
from lodviz.serve import registry

from .conftest import ServeProcess, child_env, seed_store

STOP_WITHIN_SECONDS = 2.0


def _keep_alive(url: str) -> http.client.HTTPConnection:
    """An open keep-alive connection, as a browser tab holds one."""
    where = urllib.parse.urlparse(url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    connection.request("GET", "/")
    connection.getresponse().read()
    return connection


def test_serve_exits_within_two_seconds_of_sigterm_with_its_store_intact(tmp_path, embedder):
    store = tmp_path / "shared.duckdb"
    seeded = seed_store(store, embedder)
    server = ServeProcess(store, child_env(tmp_path)).start()
    connection = _keep_alive(server.url)
    try:
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(STOP_WITHIN_SECONDS)
    except subprocess.TimeoutExpired:
        server.process.kill()
        raise AssertionError(f"lodviz serve was still running {STOP_WITHIN_SECONDS} s after SIGTERM") from None
    finally:
        connection.close()
    assert code == 0
    assert registry.read_entry(store) is None
    mem = lodviz.open(store, embedder=embedder)
    try:
        assert sorted(mem.columns().ids.tolist()) == sorted(seeded.values())
    finally:
        mem.close()


def test_writes_acknowledged_before_sigterm_are_stored_whole(tmp_path, embedder):
    store = tmp_path / "shared.duckdb"
    seeded = seed_store(store, embedder)
    server = ServeProcess(store, child_env(tmp_path)).start()
    acknowledged: list[int] = []
    three_in = threading.Event()

    async def keep_writing() -> None:
        async with Client(server.mcp_url("frank")) as client:
            for i in range(10_000):
                result = await client.call_tool("memory_write", {"text": f"Frank's field note number {i}: the Oslo venue holds {100 + i} seats."})
                acknowledged.append(int(result.structured_content["id"]))
                if len(acknowledged) >= 3:
                    three_in.set()

    def writer() -> None:
        try:
            anyio.run(keep_writing)
        except BaseException:  # the server went away mid-call: expected
            pass
        finally:
            three_in.set()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    assert three_in.wait(120)
    try:
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(STOP_WITHIN_SECONDS)
    except subprocess.TimeoutExpired:
        server.process.kill()
        raise AssertionError(f"lodviz serve was still running {STOP_WITHIN_SECONDS} s after SIGTERM with a write in flight") from None
    thread.join(30)
    assert code == 0 and len(acknowledged) >= 3
    mem = lodviz.open(store, embedder=embedder)
    try:
        state, vectors = mem.snapshot()
        stored = set(state.ids.tolist()) - set(seeded.values())
        assert set(acknowledged) <= stored  # nothing acknowledged is lost
        assert len(stored) <= len(acknowledged) + 1  # at most the one in flight, finished but not acknowledged
        records = mem.export_records()
        written = [r for r in records if r.id in stored]
        assert all(r.text and r.summary and r.headline for r in written)  # whole: three texts...
        rows = np.isin(state.ids, list(stored))
        assert np.all(np.isfinite(vectors[rows])) and np.all(np.linalg.norm(vectors[rows], axis=1) > 0.5)  # ...and the embedding
    finally:
        mem.close()
