"""Helpers for the MCP tests: seeded stores, real server processes, SDK clients.

Server processes are started with ``python -m lodviz.cli`` (no PATH lookup)
and always stopped by their fixture's finaliser, also when a test fails;
servers that ``lodviz mcp`` starts by itself are found through the registry
beside the store and stopped the same way.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters

import lodviz
from lodviz.serve import registry

#: Where each seeded memory goes; tests refer to them by key.
SEED = {
    "alice_cap": {
        "text": "Paragon Clinical MSA: the liability cap is twice the annual fees, with a carve-out for data breaches. "
        "Alice negotiated it in March and the counterparty accepted the carve-out after two rounds.",
        "agent_id": "alice",
        "kind": "document",
        "created_at": "2026-05-25T10:00:00Z",
    },
    "alice_tea": {
        "text": "Alice prefers green tea over coffee in the morning meetings.",
        "agent_id": "alice",
        "kind": "preference",
        "created_at": "2026-05-20T08:00:00Z",
    },
    "alice_old": {
        "text": "The 2019 kickoff offsite was held in Lisbon; the team chose the riverside hotel.",
        "agent_id": "alice",
        "kind": "note",
        "created_at": "2019-06-01T09:00:00Z",
    },
    "alice_template": {
        "text": "The vendor contract template lives in the legal drive; its indemnity clause was last revised in 2025.",
        "agent_id": "alice",
        "kind": "note",
        "created_at": "2025-11-03T09:00:00Z",
    },
    "bob_secret": {
        "text": "Bob's private note: the acquisition codename is Nightingale and the liability cap talks stall on indemnities.",
        "agent_id": "bob",
        "kind": "note",
        "created_at": "2026-05-28T16:00:00Z",
    },
    "shared_handbook": {
        "text": "Employee handbook: expense reports are due by the fifth working day of each month, with receipts attached.",
        "agent_id": "ops",
        "kind": "document",
        "visibility": "shared",
        "created_at": "2024-09-01T12:00:00Z",
    },
    "shared_policy": {
        "text": "Company policy: every contract with a liability cap needs sign-off from legal before it is sent out.",
        "agent_id": "ops",
        "kind": "document",
        "visibility": "shared",
        "created_at": "2026-01-15T12:00:00Z",
    },
}


#: "now" for the seeded stores, so that tiers do not depend on the day the tests run.
REFERENCE_TIME = "2026-06-01T12:00:00Z"



@pytest.fixture(scope="session")
def embedder(model_embedder):
    """The MCP faces are judged end to end: which memory comes back at which
    tier for an agent's question, so they search with the real model."""
    return model_embedder


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.model)


_TEMPLATE: dict[str, Any] = {}


def seed_store(path: Path, embedder: Any) -> dict[str, int]:
    """Create a store at ``path`` holding SEED; returns ids by key.

    The first call of the session builds the store with the real pipeline
    (compression and embedding); later calls copy that file.
    """
    if "path" not in _TEMPLATE:
        folder = tempfile.mkdtemp(prefix="lodviz-seed-")
        atexit.register(shutil.rmtree, folder, True)
        template = Path(folder) / "seed.duckdb"
        mem = lodviz.open(template, embedder=embedder)
        try:
            ids = {key: mem.add(**record) for key, record in SEED.items()}
            mem.set_reference_time(REFERENCE_TIME)
        finally:
            mem.close()
        _TEMPLATE.update(path=template, ids=ids)
    shutil.copyfile(_TEMPLATE["path"], path)
    return dict(_TEMPLATE["ids"])


def child_env(tmp: Path) -> dict[str, str]:
    """Environment of the processes a test starts (no browser, no model hub, own home)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LODVIZ_")}
    env.update({"HF_HUB_OFFLINE": "1", "LODVIZ_HOME": str(tmp / "home"), "PYTHONUNBUFFERED": "1", "BROWSER": "true"})
    return env


def lodviz_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "lodviz.cli", *args]


def stdio_params(store: Path, agent: str, env: dict[str, str]) -> StdioServerParameters:
    """How an MCP client launches `lodviz mcp --store PATH --agent NAME`."""
    return StdioServerParameters(command=sys.executable, args=["-m", "lodviz.cli", "mcp", "--store", str(store), "--agent", agent], env=env)


def stop_pid(pid: int, timeout: float = 15.0) -> None:
    """SIGTERM, wait, then SIGKILL."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)  # reaps it if it is our child
            if finished:
                return
        except ChildProcessError:
            pass
        if not registry.pid_alive(pid):
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop_registered(store: Path) -> int | None:
    """Stop the server registered for ``store`` (if any); returns its pid."""
    entry = registry.read_entry(store)
    if entry is None:
        return None
    stop_pid(entry.pid)
    return entry.pid


@dataclass
class ServeProcess:
    """A real `lodviz serve` process on a temporary store."""

    store: Path | str  # a DuckDB file, or a postgresql:// URL
    env: dict[str, str]
    args: tuple[str, ...] = ()
    process: subprocess.Popen[str] | None = None
    url: str = ""
    banner: str = ""
    stderr_path: Path | None = None
    lines: queue.Queue[str] = field(default_factory=queue.Queue)

    def start(self, timeout: float = 90.0) -> ServeProcess:
        if isinstance(self.store, Path):
            self.stderr_path = self.store.with_name(self.store.name + ".test-stderr")
        else:  # a PostgreSQL URL: the log goes beside this process's own home
            home = Path(self.env["LODVIZ_HOME"])
            home.mkdir(parents=True, exist_ok=True)
            self.stderr_path = home / "serve.test-stderr"
        with open(self.stderr_path, "w") as stderr:
            self.process = subprocess.Popen(
                lodviz_command("serve", "--store", str(self.store), "--no-open", "--port", "0", *self.args),
                stdout=subprocess.PIPE,
                stderr=stderr,
                stdin=subprocess.DEVNULL,
                text=True,
                env=self.env,
            )
        threading.Thread(target=self._pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            if line.startswith("lodviz is serving"):
                self.banner = line.strip()
                self.url = line.split(" at ", 1)[1].split(" ", 1)[0]
                return self
        self.stop()
        raise AssertionError(f"lodviz serve did not start: {self.stderr()}")

    def _pump(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def stderr(self) -> str:
        return self.stderr_path.read_text() if self.stderr_path and self.stderr_path.exists() else ""

    def mcp_url(self, agent: str | None = None) -> str:
        return self.url + "mcp/" + (agent or "")

    def stop(self) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode


def http_json(url: str, data: Any = None, *, headers: dict[str, str] | None = None, timeout: float = 30.0) -> tuple[int, Any]:
    """GET (or POST ``data`` as JSON); returns (status, parsed body)."""
    body = None if data is None else json.dumps(data).encode()
    request = urllib.request.Request(url, data=body, method="GET" if data is None else "POST")
    request.add_header("Content-Type", "application/json")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):
    """One `lodviz serve` process on a seeded store, for a whole test module."""
    tmp = tmp_path_factory.mktemp("served")
    store = tmp / "shared.duckdb"
    ids = seed_store(store, embedder)
    server = ServeProcess(store, child_env(tmp))
    server.start()
    server.ids = ids  # type: ignore[attr-defined]
    server.tmp = tmp  # type: ignore[attr-defined]
    yield server
    server.stop()
