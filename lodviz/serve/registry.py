"""Which process owns a store: the registry file ``lodviz serve`` keeps beside it.

DuckDB lets one process write a store file. lodviz makes that process a
``lodviz serve`` (or ``lodviz mcp --http``): it hosts the landscape app and the
MCP endpoint, and while it runs it keeps ``<store>.serve.json`` beside the
store::

    {"url": "http://127.0.0.1:8050/", "mcp_url": "http://127.0.0.1:8050/mcp/",
     "pid": 4242, "store": "/abs/path/memory.duckdb", "agent": null, ...}

The file is written once the server answers and removed when it stops. An
entry whose process is gone, or whose address does not answer as lodviz for
this store, is stale and ignored. ``lodviz mcp`` (stdio) reads it to reach the
owner, and starts one with :func:`ensure_serve` when there is none.

Everything here is standard library only: the stdio proxy imports it on start.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lodviz.errors import StoreError

#: Suffixes of the files kept beside a store.
REGISTRY_SUFFIX = ".serve.json"
LOG_SUFFIX = ".serve.log"
LOCK_SUFFIX = ".serve.lock"

#: Seconds an auto-started server stays up without any request.
AUTO_IDLE_TIMEOUT = 900

#: What the DuckDB store says when another process holds its file (its _lock_message).
_LOCK_HINT = "open in another lodviz process"


@dataclass
class ServeEntry:
    """One registered owner of a store."""

    url: str
    mcp_url: str
    pid: int
    store: str
    agent: str | None = None
    started_at: float = field(default_factory=time.time)
    version: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServeEntry:
        return cls(
            url=str(data["url"]),
            mcp_url=str(data["mcp_url"]),
            pid=int(data["pid"]),
            store=str(data["store"]),
            agent=data.get("agent") or None,
            started_at=float(data.get("started_at") or 0.0),
            version=str(data.get("version") or ""),
        )


# -- paths ------------------------------------------------------------------------


def store_key(store: str | os.PathLike[str]) -> Path:
    """The store's absolute path: the one name every process agrees on."""
    return Path(store).expanduser().resolve()


def _beside(store: str | os.PathLike[str], suffix: str) -> Path:
    path = store_key(store)
    return path.with_name(path.name + suffix)


def registry_path(store: str | os.PathLike[str]) -> Path:
    return _beside(store, REGISTRY_SUFFIX)


def log_path(store: str | os.PathLike[str]) -> Path:
    """Where an auto-started server writes its output."""
    return _beside(store, LOG_SUFFIX)


def lock_path(store: str | os.PathLike[str]) -> Path:
    return _beside(store, LOCK_SUFFIX)


# -- the registry file ------------------------------------------------------------------


def write_entry(entry: ServeEntry) -> Path:
    """Register ``entry`` for its store (atomically: readers never see half a file)."""
    path = registry_path(entry.store)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entry.to_dict(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_entry(store: str | os.PathLike[str]) -> ServeEntry | None:
    """The registered entry, alive or not; None if there is none or it is unreadable."""
    try:
        data = json.loads(registry_path(store).read_text(encoding="utf-8"))
        return ServeEntry.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_entry(store: str | os.PathLike[str], pid: int | None = None) -> None:
    """Remove the entry (only if it is ``pid``'s, when given)."""
    path = registry_path(store)
    if pid is not None:
        entry = read_entry(store)
        if entry is not None and entry.pid != pid:
            return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    except OSError:
        return False
    try:  # a zombie (exited, not yet reaped) is not alive
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def health(url: str, timeout: float = 2.0) -> dict[str, Any] | None:
    """``GET <url>api/health`` as JSON, or None if nothing answers as lodviz."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/api/health", timeout=timeout) as response:
            data = json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return data if isinstance(data, dict) and data.get("service") == "lodviz" else None


def live_entry(store: str | os.PathLike[str], *, check_http: bool = True, timeout: float = 2.0) -> ServeEntry | None:
    """The entry of a server that is running for this store now, or None.

    An entry whose process is gone is removed. One whose process lives but
    whose address does not answer for this store (a recycled pid, a hung
    server) is ignored but left in place.
    """
    entry = read_entry(store)
    if entry is None:
        return None
    if not pid_alive(entry.pid):
        remove_entry(store, entry.pid)
        return None
    if not check_http:
        return entry
    answer = health(entry.url, timeout)
    if answer is None or answer.get("pid") != entry.pid or answer.get("store") != str(store_key(store)):
        return None
    return entry


# -- starting an owner ---------------------------------------------------------------------


@contextlib.contextmanager
def spawn_lock(store: str | os.PathLike[str], timeout: float) -> Iterator[None]:
    """Hold ``<store>.serve.lock`` so that only one process starts a server at a time."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no cross-process lock, the store's own lock decides
        yield
        return
    path = lock_path(store)
    handle = open(path, "a+")
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreError(f"timed out waiting for another process to start the server for {store_key(store)}.") from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()


def serve_command_line(
    store: str | os.PathLike[str],
    *,
    model: str | None = None,
    compressor: str | None = None,
    idle_timeout: float | None = AUTO_IDLE_TIMEOUT,
) -> list[str]:
    """The command that starts a background owner for ``store`` on a free port."""
    command = [sys.executable, "-m", "lodviz.cli"]
    if model:
        command += ["--model", model]
    if compressor:
        command += ["--compressor", compressor]
    command += ["serve", "--store", str(store_key(store)), "--no-open", "--port", "0"]
    if idle_timeout:
        command += ["--idle-timeout", str(int(idle_timeout))]
    return command


def _tail(path: Path, lines: int = 1) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    useful = [line for line in text if line.strip()]
    return "\n".join(useful[-lines:])


def _give_up(process: subprocess.Popen[bytes]) -> None:
    """Stop a server that did not come up in time: leave nothing half-started behind."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def _busy(key: Path, timeout: float, log: Path) -> str:
    return (
        f"{key} is held by another program (not a lodviz server), so no server could start for it "
        f"within {timeout:.0f} s; try again when that program is done (log: {log})."
    )


def ensure_serve(
    store: str | os.PathLike[str],
    *,
    model: str | None = None,
    compressor: str | None = None,
    timeout: float = 120.0,
    idle_timeout: float | None = AUTO_IDLE_TIMEOUT,
    env: dict[str, str] | None = None,
) -> ServeEntry:
    """The live owner of ``store``, starting one in the background if there is none.

    The new server runs detached (its own session, output appended to
    ``<store>.serve.log``) and stops by itself after ``idle_timeout`` seconds
    without a request. If the store is held by some other process (an
    ``ingest``, say), this waits for it to be released until ``timeout``.
    Raises ``StoreError`` with the server's last words if none comes up.
    """
    key = store_key(store)
    if not key.parent.is_dir():
        raise StoreError(f"cannot serve {key}: no such directory {key.parent}.")
    deadline = time.monotonic() + timeout
    entry = live_entry(key)
    if entry is not None:
        return entry
    with spawn_lock(key, timeout):
        last_error = ""
        while True:
            entry = live_entry(key)
            if entry is not None:
                return entry
            log = log_path(key)
            with open(log, "ab") as out:
                out.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} started by pid {os.getpid()}\n".encode())
                out.flush()
                process = subprocess.Popen(
                    serve_command_line(key, model=model, compressor=compressor, idle_timeout=idle_timeout),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    close_fds=True,
                    env={**os.environ, **(env or {})},
                )
            while True:
                entry = read_entry(key)
                if entry is not None and entry.pid == process.pid and live_entry(key) is not None:
                    return entry
                code = process.poll()
                if code is not None:
                    last_error = _tail(log) or f"the server exited with status {code}"
                    break
                if time.monotonic() > deadline:
                    _give_up(process)
                    if _LOCK_HINT in last_error:
                        raise StoreError(_busy(key, timeout, log))
                    raise StoreError(f"the lodviz server for {key} did not come up within {timeout:.0f} s; see {log}.")
                time.sleep(0.1)
            entry = live_entry(key)
            if entry is not None:  # someone else won the race
                return entry
            if _LOCK_HINT in last_error and time.monotonic() > deadline:
                raise StoreError(_busy(key, timeout, log))
            if _LOCK_HINT not in last_error:
                message = last_error.removeprefix("Error: ").strip()
                raise StoreError(f"the lodviz server for {key} did not start: {message} (log: {log})")
            time.sleep(1.0)  # another program holds the store; wait for it to let go


__all__ = [
    "ServeEntry",
    "registry_path",
    "log_path",
    "lock_path",
    "store_key",
    "write_entry",
    "read_entry",
    "remove_entry",
    "live_entry",
    "pid_alive",
    "health",
    "ensure_serve",
    "serve_command_line",
    "AUTO_IDLE_TIMEOUT",
]
