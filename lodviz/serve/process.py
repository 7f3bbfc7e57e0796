"""Running ``lodviz serve``: the socket, the store opened once, uvicorn, signals, the registry.

``serve`` owns a store until it is stopped: it binds the port first (so a
busy port is reported before anything loads), opens the store with a lock,
loads the embedding model, registers itself beside the store
(``lodviz.serve.registry``) and runs the ASGI app (``lodviz.serve.app``).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

import click

import lodviz
from lodviz import runtime
from lodviz.errors import LodvizError
from lodviz.serve import registry
from lodviz.serve.app import DEFAULT_HOST, LodvizServer

DEFAULT_PORT = 8050
#: How long a stopping server waits for its warm-up thread to end once the store is closed under it
#: (a SIGTERM must end the process within 2 s).
SETTLE_JOIN_TIMEOUT = 0.5

log = logging.getLogger("lodviz.serve")


class ServeError(LodvizError):
    """The server cannot start (port in use, store already served, ...)."""


def _bind(host: str, port: int) -> socket.socket:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ServeError(f"--port must be 0 (a free one) to 65535, got {port!r}.")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(f"port {port} on {host} is in use; pass --port N (or --port 0 for a free one).") from None
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}.") from None
    sock.listen(2048)  # connections wait in the backlog until the server accepts them
    sock.set_inheritable(True)
    return sock


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def _already_stopping(signum: int, frame: Any) -> None:
    """uvicorn re-raises the SIGTERM it handled once it has shut down; by then
    serve() is already returning, and an exception here would cut its clean-up short."""


def _warm_then_settle(mem: lodviz.Memory) -> None:
    try:
        mem.warm()  # the process's one warm-up: the store, a search's first steps, the model
    except Exception as exc:  # the first search loads what it needs, and says what failed
        log.warning("warming the store failed: %s", exc)
    runtime.settle_heap()


def serve(
    store: str | os.PathLike[str],
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    open_browser: bool = True,
    agent: str | None = None,
    model: str | None = None,
    compressor: str | None = None,
    matrix: str | None = None,
    idle_timeout: float | None = None,
    with_app: bool = True,
    embedder: Any = None,
    echo: Callable[[str], None] = lambda line: click.echo(line),
    on_started: Callable[[registry.ServeEntry, Callable[[], None]], None] | None = None,
    auth: bool = False,
    read_only: bool = False,
    allowed_hosts: tuple[str, ...] = (),
    settle_heap: bool = False,
) -> None:
    """Own ``store`` and serve the app and the MCP endpoint until interrupted.

    ``settle_heap``: this process is the server's own (the CLI), so its threads
    share one heap and, once the store is warm, its start-up state is frozen out
    of the garbage collector's full passes (``lodviz.runtime``); a server
    embedded in another program leaves that program's heap alone.

    Raises ``ServeError`` / ``LodvizError`` (store locked, port in use, ...)
    before anything is served; prints the address once it is. ``on_started``
    (for embedding the server in a thread) gets the registry entry and a
    function that stops the server. ``embedder`` replaces loading ``model``.
    """
    import uvicorn

    from lodviz.store.postgres import is_postgres_url, redact

    # A file has one owner, registered beside it; a PostgreSQL store takes any
    # number of servers (and ":memory:" is this process's alone): no registry.
    in_memory = str(store) == ":memory:" or is_postgres_url(str(store))
    location = str(store) if in_memory else str(registry.store_key(store))
    key = redact(location) if is_postgres_url(location) else location
    if not in_memory:
        running = registry.live_entry(key)
        if running is not None:
            raise ServeError(
                f"{key} is already served by process {running.pid} at {running.url}; "
                "use that address (its MCP endpoint is "
                f"{running.mcp_url}), or stop it first."
            )
    if agent is not None:
        from lodviz.mcp_server import check_agent

        check_agent(agent)
    from lodviz.serve.auth import LOOPBACK

    if host not in LOOPBACK and not auth:
        raise ServeError(
            f"refusing to listen on {host} without authentication: anyone who can reach it could read and change "
            "every agent's memory. Create tokens (`lodviz token create NAME --role ...`) and add --auth, or listen on 127.0.0.1."
        )
    if idle_timeout is not None and idle_timeout <= 0:
        raise ServeError("--idle-timeout must be a positive number of seconds.")
    sock = _bind(host, port)
    if settle_heap:
        # Before any thread of ours: the warm-up's freed memory is then the workers' too (lodviz.runtime).
        runtime.share_heap()
    settling: threading.Thread | None = None
    try:
        real_port = sock.getsockname()[1]
        url = _url(host, real_port)
        mem = lodviz.open(
            location,
            model=model,
            embedder=embedder,
            actor="app",
            compressor=compressor or "extractive",
            matrix=matrix,  # how the embedding matrix is held in memory (lodviz.matrix)
            lock=threading.RLock(),  # the app's threads, the MCP workers and the API share it
        )
        server: uvicorn.Server | None = None
        app: LodvizServer | None = None
        try:
            if auth and not any(t.revoked_at is None for t in mem.tokens()):
                raise ServeError("--auth is on but the store has no live token; create one first: `lodviz token create NAME --role admin`.")
            # Only once nothing refuses to serve: a refusal must not leave a thread inside DuckDB while
            # the process exits (the interpreter's end then unwinds its C++ frames: "FATAL: exception not rethrown").
            if settle_heap:
                settling = threading.Thread(target=_warm_then_settle, args=(mem,), name="lodviz-settle", daemon=True)
                settling.start()
            else:  # the CLI's process warms in its settle thread; an embedded server here
                mem.warm(background=True)
            entry = registry.ServeEntry(
                url=url, mcp_url=url + "mcp/", pid=os.getpid(), store=key, agent=agent, version=lodviz.__version__,
                control="" if in_memory else secrets.token_urlsafe(32),
            )

            def started() -> None:
                if not in_memory:
                    registry.write_entry(entry)
                echo(f"lodviz is serving {key} at {url} (MCP at {url}mcp/)")
                sys.stdout.flush()
                if open_browser:
                    threading.Timer(0.5, launch_browser, args=(url,)).start()
                if on_started is not None:
                    on_started(entry, request_exit)

            def stopping() -> None:
                if not in_memory:
                    registry.remove_entry(key, os.getpid())

            def request_exit() -> None:
                if server is not None:
                    server.should_exit = True

            app = LodvizServer(
                mem,
                host=host,
                agent=agent,
                with_app=with_app,
                store_label=key,
                idle_timeout=idle_timeout,
                on_started=started,
                on_stopping=stopping,
                request_exit=request_exit,
                auth=auth,
                read_only=read_only,
                allowed_hosts=allowed_hosts,
                control=entry.control,
            )
            config = uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                lifespan="on",
                timeout_graceful_shutdown=1,  # a SIGTERM must end it within 2 s, open streams or not
            )
            server = uvicorn.Server(config)
            previous = signal.getsignal(signal.SIGTERM)
            if threading.current_thread() is threading.main_thread():
                # uvicorn handles SIGTERM while it runs and re-raises it afterwards.
                signal.signal(signal.SIGTERM, _already_stopping)
            try:
                server.run(sockets=[sock])
            except SystemExit as exc:
                if exc.code not in (0, None):
                    raise ServeError("the server could not start (see the messages above).") from None
            except KeyboardInterrupt:
                pass
            finally:
                if threading.current_thread() is threading.main_thread():
                    signal.signal(signal.SIGTERM, previous)
                if not in_memory:
                    registry.remove_entry(key, os.getpid())
            if not server.started and not server.should_exit:
                raise ServeError("the server could not start (see the messages above).")
        finally:
            if app is not None:
                app.close()
            mem.close()  # a warm-up still under way fails its next step on the closed store and ends
            if settling is not None:
                settling.join(SETTLE_JOIN_TIMEOUT)
    finally:
        sock.close()


def launch_browser(url: str) -> None:
    import webbrowser

    with contextlib.suppress(Exception):
        webbrowser.open(url)
