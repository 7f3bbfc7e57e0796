"""Which process owns a store: the registry file ``lodviz serve`` keeps beside it.

DuckDB lets one process write a store file. lodviz makes that process a
``lodviz serve`` (or ``lodviz mcp --http``): it hosts the landscape app and the
MCP endpoint, and while it runs it keeps ``<store>.serve.json`` beside the
store::

    {"url": "http://127.0.0.1:8050/", "mcp_url": "http://127.0.0.1:8050/mcp/",
     "pid": 4242, "store": "/abs/path/memory.duckdb", "agent": null, ...}

The file is written once the server answers (private to its owner: it holds
the server's control secret, which lets the store's owner revoke a token
through the server that holds the file) and removed when it stops. An entry is
trusted only as far as it can be checked, because anyone who can write beside
the store can plant one: the file must belong to this user; on Linux its
process must hold the store's lock and listen on its address; and the address
must answer as lodviz for this store with that pid. Anything else is stale or
planted, and ignored. ``lodviz mcp`` (stdio) reads it to reach the
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
    #: A secret the server accepts from the store's owner (``X-Lodviz-Control``), e.g. to revoke a token.
    control: str = ""

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
            control=str(data.get("control") or ""),
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
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # private: it holds the control secret
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(entry.to_dict(), indent=2) + "\n")
    os.replace(tmp, path)
    return path


def read_entry(store: str | os.PathLike[str]) -> ServeEntry | None:
    """The registered entry, alive or not; None if there is none, it is unreadable, or it is
    not this user's (another user's file beside the store is a plant, not a server of ours)."""
    path = registry_path(store)
    try:
        if hasattr(os, "geteuid") and path.stat().st_uid != os.geteuid():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
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
    if not owns(entry, store_key(store)):
        return None
    if not check_http:
        return entry
    answer = health(entry.url, timeout)
    if answer is None or answer.get("pid") != entry.pid or answer.get("store") != str(store_key(store)):
        return None
    return entry


# -- checking an owner ----------------------------------------------------------------------


def owns(entry: ServeEntry, store: Path) -> bool:
    """Does ``entry``'s process hold ``store`` and listen where the entry says?

    Linux tells both (``/proc/locks``: DuckDB holds a POSIX lock on the file
    it writes; ``/proc/net/tcp*`` and the process's descriptors: the socket).
    Elsewhere there is nothing to read, and the health answer decides alone.
    """
    if not Path("/proc/locks").exists():
        return True
    try:
        inode = store.stat().st_ino
    except OSError:
        return False
    return _holds_lock(entry.pid, inode) and _listens(entry.pid, entry.url)


def _holds_lock(pid: int, inode: int) -> bool:
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split()
        for i, value in enumerate(fields[1:], start=1):
            if value.count(":") == 2 and fields[i - 1].isdigit():  # "<pid> <major>:<minor>:<inode>"
                if int(fields[i - 1]) == pid and value.rsplit(":", 1)[1] == str(inode):
                    return True
    return False


def _listens(pid: int, url: str) -> bool:
    from urllib.parse import urlsplit

    try:
        port = urlsplit(url).port
    except ValueError:
        return False
    if not port:
        return False
    sockets: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                sockets.add(f"socket:[{fields[9]}]")
    if not sockets:
        return False
    try:
        descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in descriptors:
        with contextlib.suppress(OSError):
            if os.readlink(fd) in sockets:
                return True
    return False


def revoke_through(entry: ServeEntry, token_id: str, actor: str, timeout: float = 30.0) -> dict[str, Any]:
    """Revoke a token through the server that holds the store (``entry``, checked by ``live_entry``).

    The registry file's control secret proves the caller may read what only
    the store's owner may; the server revokes, audits and forgets the token at once.
    Returns the revoked token's record; raises ``StoreError`` with the server's sentence.
    """
    request = urllib.request.Request(
        entry.url.rstrip("/") + "/api/control/revoke",
        data=json.dumps({"token_id": token_id, "actor": actor}).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "X-Lodviz-Control": entry.control},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return dict(json.loads(response.read().decode("utf-8"))["token"])
    except urllib.error.HTTPError as exc:
        try:
            message = str(json.loads(exc.read().decode("utf-8"))["error"])
        except (ValueError, KeyError, TypeError):
            message = f"the server at {entry.url} answered {exc.code}"
        raise StoreError(message) from None
    except (OSError, ValueError, KeyError) as exc:
        raise StoreError(f"the server holding the store ({entry.url}) did not answer: {exc}") from None


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
    create: bool = False,
) -> list[str]:
    """The command that starts a background owner for ``store`` on a free port (``create``: an empty one if none is there)."""
    command = [sys.executable, "-m", "lodviz.cli"]
    if model:
        command += ["--model", model]
    if compressor:
        command += ["--compressor", compressor]
    command += ["serve", "--store", str(store_key(store)), "--no-open", "--port", "0"]
    if idle_timeout:
        command += ["--idle-timeout", str(int(idle_timeout))]
    if create:
        command.append("--create")
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
    create: bool = False,
) -> ServeEntry:
    """The live owner of ``store``, starting one in the background if there is none.

    The new server runs detached (its own session, output appended to
    ``<store>.serve.log``) and stops by itself after ``idle_timeout`` seconds
    without a request. If the store is held by some other process (an
    ``ingest``, say), this waits for it to be released until ``timeout``.
    Raises ``StoreError`` with the server's last words if none comes up;
    without ``create``, the server refuses a store that does not exist.
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
                    serve_command_line(key, model=model, compressor=compressor, idle_timeout=idle_timeout, create=create),
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
    "owns",
    "revoke_through",
    "ensure_serve",
    "serve_command_line",
    "AUTO_IDLE_TIMEOUT",
]
