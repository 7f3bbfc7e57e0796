"""The registry beside a store: trusted only as far as it can be checked, and the owner's way to revoke a token.

A planted ``<store>.serve.json`` (a live pid, an address that answers as
lodviz for this store) must neither stop `lodviz serve` nor draw `lodviz
mcp`'s calls; a token revoked while a server holds the DuckDB file is refused
from the next request on, without a restart.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest

from lodviz.serve import registry
from lodviz.serve.relay import Relay
from tests.mcp.conftest import ServeProcess, child_env

from .conftest import DIMENSION, get, seed, store_state

pytestmark = pytest.mark.slow


class FakeLodviz:
    """An HTTP server on loopback that answers /api/health as lodviz for ``store`` with ``pid``."""

    def __init__(self, store: str, pid: int) -> None:
        answer = json.dumps({"service": "lodviz", "store": store, "pid": pid, "version": "0"}).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server name
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def planted(tmp_path: Path):
    """A seeded store with a registry entry that names this test process and a fake server."""
    store = tmp_path / "planted.duckdb"
    seed(str(store))
    key = str(registry.store_key(store))
    fake = FakeLodviz(key, os.getpid())
    registry.write_entry(registry.ServeEntry(url=fake.url, mcp_url=fake.url + "mcp/", pid=os.getpid(), store=key))
    yield store, fake
    fake.close()


def test_a_planted_registry_entry_is_not_taken_for_the_stores_owner(planted):
    store, fake = planted
    assert registry.health(fake.url)["pid"] == os.getpid()  # it answers as lodviz would
    assert registry.live_entry(store) is None


def test_a_planted_registry_entry_does_not_stop_serve(planted, tmp_path):
    store, _ = planted
    env = {**child_env(tmp_path), "LODVIZ_EMBEDDING_MODEL": f"hash:{DIMENSION}"}
    server = ServeProcess(store, env).start()
    try:
        entry = registry.live_entry(store)
        assert entry is not None and entry.pid == server.process.pid
    finally:
        server.stop()


def test_lodviz_mcp_does_not_relay_to_a_planted_address(planted, monkeypatch, tmp_path):
    store, fake = planted
    for key, value in {**child_env(tmp_path), "LODVIZ_EMBEDDING_MODEL": f"hash:{DIMENSION}"}.items():
        monkeypatch.setenv(key, value)
    relay = Relay(str(store), "alice", model=f"hash:{DIMENSION}", timeout=90)
    url = anyio.run(relay.endpoint)
    started = registry.read_entry(store)
    try:
        assert not url.startswith(fake.url)
        assert started is not None and started.pid != os.getpid() and url.startswith(started.mcp_url)
    finally:
        if started is not None and started.pid != os.getpid():
            os.kill(started.pid, signal.SIGTERM)


def test_the_registry_file_is_private_to_its_owner(planted):
    store, _ = planted
    assert registry.registry_path(store).stat().st_mode & 0o077 == 0


def test_revoking_a_token_while_a_server_holds_the_store_takes_effect_at_once(tmp_path):
    store = tmp_path / "held.duckdb"
    _, tokens = seed(str(store))
    env = {**child_env(tmp_path), "LODVIZ_EMBEDDING_MODEL": f"hash:{DIMENSION}"}
    server = ServeProcess(store, env, args=("--auth",)).start()
    try:
        vera = tokens["vera"]
        assert get(server.url + "_dash-layout", token=vera)[0] == 200  # checked, and cached for 2 s
        result = subprocess.run([sys.executable, "-m", "lodviz.cli", "--store", str(store), "token", "revoke", vera.split("_")[1]],
                                capture_output=True, text=True, env=env, timeout=120)
        assert result.returncode == 0, result.stderr
        assert "Revoked token" in result.stdout and "through the server" in result.stdout
        assert get(server.url + "_dash-layout", token=vera)[0] == 401
    finally:
        server.stop()
    state = store_state(str(store))
    (revoked,) = [t for t in state["tokens"] if t["name"] == "vera"]
    assert revoked["revoked_at"] is not None
    assert any(e["action"] == "token" and e["details"].get("revoked") == revoked["id"] for e in state["audit"])
