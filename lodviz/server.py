"""The one process that owns a store: the landscape app and the MCP endpoint.

DuckDB lets a single process write a store file, so lodviz gives every store
one owner: ``lodviz serve``. It opens the store once, loads the embedding model
once, and serves on 127.0.0.1:

    /               the landscape (the Dash app of ``lodviz.app``, via a2wsgi)
    /mcp/           the MCP streamable-HTTP endpoint (``lodviz.mcp_server``)
    /mcp/<agent>    the same endpoint, acting for <agent>
    /api/health     {"service": "lodviz", "store": ..., "pid": ...}
    /api/promote    POST {"memory_id": 42, "reason": "..."}: promote as "app"

Browser and agents share that process's ``Memory``, so a promotion made in the
browser is in the agent's next search and an agent's write is in the next
landscape. While it runs, the server registers itself in ``<store>.serve.json``
(``lodviz.serve_registry``); ``lodviz mcp`` (stdio) finds it there and relays
to it, or starts one in the background (``lodviz.mcp_proxy``). No agent ever
opens the file itself, so none ever meets a lock error.

The click commands ``serve_command``, ``demo_command`` and ``mcp_command`` are
added to the ``lodviz`` CLI by name. Heavy imports (uvicorn, Starlette, Dash,
the MCP SDK) happen inside functions: every ``lodviz`` command imports this
module.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

import click

import lodviz
from lodviz.errors import InvalidInput, LodvizError, MemoryNotFound
from lodviz.memory import Memory
from lodviz import serve_registry as registry

if TYPE_CHECKING:  # pragma: no cover
    from starlette.types import Receive, Scope, Send

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050
SAMPLE_NAME = "lodviz-sample.duckdb"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ServeError(LodvizError):
    """The server cannot start (port in use, store already served, ...)."""


# -- one Memory, many threads -------------------------------------------------------------

#: The Memory operations the server runs one at a time. The store serialises
#: its own statements, but an operation is several of them (snapshot the
#: numeric state, rank, fetch texts, record use) plus the query-embedding
#: cache, so concurrent operations must not interleave.
SERIALISED = (
    "add", "add_many", "search", "expand", "promote", "demote", "get", "explain",
    "recent", "unseen", "sample", "landscape", "profile", "profiles", "set_profile",
    "audit", "record_event", "agents", "embed_query", "now", "set_reference_time", "close",
)


class LockedMemory(Memory):
    """A ``Memory`` whose operations run one at a time: the app's threads,
    the MCP worker threads and the API share one instance."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.lock = threading.RLock()
        super().__init__(*args, **kwargs)


def _serialised(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: LockedMemory, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)

    return call


for _name in SERIALISED:
    setattr(LockedMemory, _name, _serialised(getattr(Memory, _name)))


def open_memory(
    store: str | os.PathLike[str],
    *,
    model: str | None = None,
    embedder: Any = None,
    actor: str = "app",
    compressor: str | None = None,
) -> LockedMemory:
    """Open (or create) the store for serving, as ``lodviz.open`` does.

    ``compressor`` is a name (``extractive``, ``openai``); by default
    ``$LODVIZ_COMPRESSOR``, so an agent's writes through MCP are compressed
    the way the user chose.
    """
    memory = lodviz.open(
        store,
        model=model,
        embedder=embedder,
        actor=actor,
        compressor=compressor or os.environ.get("LODVIZ_COMPRESSOR") or "extractive",
        memory_class=LockedMemory,
    )
    assert isinstance(memory, LockedMemory)
    return memory


# -- the ASGI application ---------------------------------------------------------------------


class _Activity:
    """Requests in flight and the time of the last one (for --idle-timeout)."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.last = time.monotonic()

    def enter(self) -> None:
        self.in_flight += 1
        self.last = time.monotonic()

    def leave(self) -> None:
        self.in_flight -= 1
        self.last = time.monotonic()

    def idle_for(self) -> float:
        return 0.0 if self.in_flight else time.monotonic() - self.last


def _host_allowed(host_header: str) -> bool:
    """Is the Host header a loopback name (DNS-rebinding protection)?"""
    return urlsplit(f"http://{host_header}").hostname in LOOPBACK


class LodvizServer:
    """The ASGI app of ``lodviz serve``: routes /mcp to MCP, the rest to Starlette.

    ``on_started`` runs once the MCP session manager is up (the registry is
    written there); ``on_stopping`` when shutdown begins.
    """

    def __init__(
        self,
        mem: Memory,
        *,
        host: str = DEFAULT_HOST,
        agent: str | None = None,
        with_app: bool = True,
        store_label: str | None = None,
        idle_timeout: float | None = None,
        on_started: Callable[[], None] | None = None,
        on_stopping: Callable[[], None] | None = None,
        request_exit: Callable[[], None] | None = None,
    ) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
        from mcp.server.transport_security import TransportSecuritySettings
        from starlette.applications import Starlette
        from starlette.routing import Mount, Route

        from lodviz.mcp_server import build_mcp, check_agent

        self.mem = mem
        self.agent = check_agent(agent) if agent is not None else None
        self.loopback = host in LOOPBACK
        self.store_label = store_label or getattr(mem.store, "path", "?")
        self.idle_timeout = idle_timeout
        self.on_started = on_started
        self.on_stopping = on_stopping
        self.request_exit = request_exit
        self.activity = _Activity()
        self.dash_app: Any = None

        self.mcp = build_mcp(mem, agent=self.agent)
        security = (
            TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            )
            if self.loopback
            else TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        # Builds the session manager; the Starlette app it returns is not used:
        # the endpoint is mounted below, under our own lifespan.
        self.mcp.streamable_http_app(streamable_http_path="/", host=host, transport_security=security)
        self.session_manager = self.mcp.session_manager
        self.mcp_endpoint = StreamableHTTPASGIApp(self.session_manager)

        routes: list[Any] = [
            Route("/api/health", self._health, methods=["GET"]),
            Route("/api/promote", self._promote, methods=["POST"]),
        ]
        if with_app:
            from a2wsgi import WSGIMiddleware

            from lodviz.app import create_app

            self.dash_app = create_app(mem)
            routes.append(Mount("/", app=WSGIMiddleware(self.dash_app.server, workers=8)))
        else:
            routes.append(Route("/", self._index, methods=["GET"]))
        self.starlette = Starlette(routes=routes, lifespan=self._lifespan)

    def close(self, timeout: float = 5.0) -> None:
        """Let the app's background layout job finish (briefly) before the store closes."""
        job = getattr(getattr(self.dash_app, "lodviz", None), "layout_job", None)
        if job is not None and hasattr(job, "wait"):
            with contextlib.suppress(Exception):
                job.wait(timeout)

    # -- lifespan ------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Any) -> Any:
        import anyio

        async with self.session_manager.run():
            async with anyio.create_task_group() as tasks:
                if self.idle_timeout:
                    tasks.start_soon(self._watch_idle)
                if self.on_started is not None:
                    self.on_started()
                try:
                    yield
                finally:
                    if self.on_stopping is not None:
                        self.on_stopping()
                    tasks.cancel_scope.cancel()

    async def _watch_idle(self) -> None:
        import anyio

        assert self.idle_timeout
        while True:
            await anyio.sleep(min(1.0, self.idle_timeout / 4))
            if self.activity.idle_for() >= self.idle_timeout:
                print(f"lodviz: no request for {self.idle_timeout:.0f} s; stopping.", file=sys.stderr, flush=True)
                if self.request_exit is not None:
                    self.request_exit()
                return

    # -- dispatch ----------------------------------------------------------------------------

    async def __call__(self, scope: "Scope", receive: "Receive", send: "Send") -> None:
        if scope["type"] == "lifespan":
            await self.starlette(scope, receive, send)
            return
        self.activity.enter()
        try:
            path = scope.get("path", "")
            if scope["type"] == "http" and (path == "/mcp" or path.startswith("/mcp/")):
                await self._mcp(scope, receive, send)
            else:
                await self.starlette(scope, receive, send)
        finally:
            self.activity.leave()

    async def _mcp(self, scope: "Scope", receive: "Receive", send: "Send") -> None:
        """Find the agent (path, header, query, fixed), pass it on as the header."""
        from lodviz.mcp_server import AGENT_HEADER, check_agent

        header = AGENT_HEADER.lower().encode("latin-1")
        rest = scope["path"][len("/mcp") :].strip("/")
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != header]
        named: str | None = None
        if rest:
            named = unquote(rest)
            if "/" in named:
                await _rpc_error(f"no such endpoint {scope['path']}; use /mcp/ or /mcp/<agent>.", 404)(scope, receive, send)
                return
        else:
            given = [v for k, v in scope.get("headers", []) if k.lower() == header]
            if given:
                named = given[-1].decode("latin-1").strip()
            else:
                query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
                named = (query.get("agent") or [None])[-1]
        if named:
            try:
                check_agent(named)
            except InvalidInput as exc:
                await _rpc_error(str(exc), 400)(scope, receive, send)
                return
            if self.agent is not None and named != self.agent:
                message = (
                    f"this lodviz server acts for agent {self.agent!r} only (it was started with --agent); "
                    f"{named!r} cannot use it. Stop it, or run `lodviz serve` for several agents."
                )
                await _rpc_error(message, 403)(scope, receive, send)
                return
        agent = named or self.agent
        if agent:
            headers.append((header, agent.encode("latin-1")))
        await self.mcp_endpoint({**scope, "headers": headers}, receive, send)

    # -- small routes --------------------------------------------------------------------------

    @staticmethod
    def _json(data: Any, status: int = 200) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse(data, status_code=status)

    async def _health(self, request: Any) -> Any:
        return self._json(
            {
                "service": "lodviz",
                "version": lodviz.__version__,
                "store": self.store_label,
                "pid": os.getpid(),
                "agent": self.agent,
            }
        )

    async def _index(self, request: Any) -> Any:
        from starlette.responses import PlainTextResponse

        return PlainTextResponse(f"lodviz MCP server for {self.store_label}: the MCP endpoint is /mcp/.\n")

    async def _promote(self, request: Any) -> Any:
        """Promote a memory as the app does (actor "app"): {"memory_id", "reason", "to"}."""
        import anyio.to_thread

        if self.loopback and not _host_allowed(request.headers.get("host", "")):
            return self._json({"error": "bad Host header."}, 421)
        origin = request.headers.get("origin")
        if origin and self.loopback and urlsplit(origin).hostname not in LOOPBACK:
            return self._json({"error": "cross-origin requests are refused."}, 403)
        if not request.headers.get("content-type", "").startswith("application/json"):
            return self._json({"error": "send JSON (Content-Type: application/json)."}, 415)
        try:
            body = await request.json()
            if not isinstance(body, dict) or "memory_id" not in body:
                raise ValueError
        except ValueError:
            return self._json({"error": 'send {"memory_id": ID, "reason": "why"}.'}, 400)
        try:
            floor = await anyio.to_thread.run_sync(
                functools.partial(self.mem.promote, body["memory_id"], reason=body.get("reason"), to=body.get("to"), actor="app")
            )
        except MemoryNotFound as exc:
            return self._json({"error": str(exc)}, 404)
        except (LodvizError, ValueError, TypeError) as exc:  # Tier.parse raises ValueError for an unknown tier
            return self._json({"error": str(exc)}, 400)
        return self._json({"id": int(body["memory_id"]), "floor": floor.name})


def _rpc_error(message: str, status: int) -> Any:
    """An HTTP error whose body is a JSON-RPC error, so MCP clients show the message."""
    from starlette.responses import JSONResponse

    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}, status_code=status)


# -- running it -----------------------------------------------------------------------------------


def _bind(host: str, port: int) -> socket.socket:
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


def _raise_exit(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def serve(
    store: str | os.PathLike[str],
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    open_browser: bool = True,
    agent: str | None = None,
    model: str | None = None,
    compressor: str | None = None,
    idle_timeout: float | None = None,
    with_app: bool = True,
    embedder: Any = None,
    echo: Callable[[str], None] = lambda line: click.echo(line),
    on_started: Callable[[registry.ServeEntry, Callable[[], None]], None] | None = None,
) -> None:
    """Own ``store`` and serve the app and the MCP endpoint until interrupted.

    Raises ``ServeError`` / ``LodvizError`` (store locked, port in use, ...)
    before anything is served; prints the address once it is. ``on_started``
    (for embedding the server in a thread) gets the registry entry and a
    function that stops the server. ``embedder`` replaces loading ``model``.
    """
    import uvicorn

    in_memory = str(store) == ":memory:"
    key = str(store) if in_memory else str(registry.store_key(store))
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
    if idle_timeout is not None and idle_timeout <= 0:
        raise ServeError("--idle-timeout must be a positive number of seconds.")
    sock = _bind(host, port)
    try:
        real_port = sock.getsockname()[1]
        url = _url(host, real_port)
        mem = open_memory(key, model=model, embedder=embedder, compressor=compressor)
        try:
            mem.embedder.embed(["lodviz"])  # load the model now, not on the first search
            server: uvicorn.Server | None = None
            app: LodvizServer | None = None
            entry = registry.ServeEntry(
                url=url, mcp_url=url + "mcp/", pid=os.getpid(), store=key, agent=agent, version=lodviz.__version__
            )

            def started() -> None:
                if not in_memory:
                    registry.write_entry(entry)
                echo(f"lodviz is serving {key} at {url} (MCP at {url}mcp/)")
                sys.stdout.flush()
                if open_browser:
                    threading.Timer(0.5, _open_browser, args=(url,)).start()
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
            )
            config = uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                lifespan="on",
                timeout_graceful_shutdown=3,
            )
            server = uvicorn.Server(config)
            previous = signal.getsignal(signal.SIGTERM)
            if threading.current_thread() is threading.main_thread():
                # uvicorn re-raises SIGTERM after its graceful shutdown; make that a clean exit.
                signal.signal(signal.SIGTERM, _raise_exit)
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
            mem.close()
    finally:
        sock.close()


def _open_browser(url: str) -> None:
    import webbrowser

    with contextlib.suppress(Exception):
        webbrowser.open(url)


# -- the commands --------------------------------------------------------------------------------


def _store_of(ctx: click.Context, given: str | None) -> str:
    """--store on the command wins over the group's --store / LODVIZ_STORE."""
    if given:
        return given
    store = getattr(ctx.obj, "store", None)  # cli._State, inherited from the group
    return store or os.environ.get("LODVIZ_STORE") or "lodviz.duckdb"


def _model_of(ctx: click.Context) -> str | None:
    return getattr(ctx.obj, "model", None) or os.environ.get("LODVIZ_EMBEDDING_MODEL") or None


def _compressor_of(ctx: click.Context) -> str | None:
    return getattr(ctx.obj, "compressor", None) or os.environ.get("LODVIZ_COMPRESSOR") or None


def _run(func: Callable[[], None]) -> None:
    """Errors as one line on stderr and exit status 1, never a traceback."""
    try:
        func()
    except LodvizError as exc:
        raise click.ClickException(str(exc)) from None


_store_option = click.option(
    "--store", "store", default=None, help="The store file (default: the lodviz group's --store / LODVIZ_STORE)."
)


@click.command("serve")
@_store_option
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=int, help="Port (0 picks a free one).")
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@click.option("--idle-timeout", type=float, default=None, help="Stop after this many seconds without a request.")
@click.pass_context
def serve_command(ctx: click.Context, store: str | None, host: str, port: int, no_open: bool, idle_timeout: float | None) -> None:
    """Serve the landscape app and the MCP endpoint (/mcp/) over one store.

    This process owns the store; agents reach it through its MCP endpoint or
    through `lodviz mcp` (stdio), which finds it by the registry file beside
    the store.
    """
    path = _store_of(ctx, store)
    _run(lambda: serve(path, host=host, port=port, open_browser=not no_open, model=_model_of(ctx), compressor=_compressor_of(ctx), idle_timeout=idle_timeout))


def lodviz_home() -> Path:
    """Where lodviz keeps its own files: $LODVIZ_HOME, else ~/.local/share/lodviz."""
    home = os.environ.get("LODVIZ_HOME")
    return Path(home).expanduser() if home else Path.home() / ".local" / "share" / "lodviz"


def sample_store_path() -> Path:
    """The shipped sample store (git-tracked; never opened for writing)."""
    return Path(lodviz.__file__).resolve().parent.parent / "sample_data" / SAMPLE_NAME


def prepare_demo(reset: bool = False) -> Path:
    """A working copy of the sample store under ``lodviz_home()``, copied if needed."""
    source = sample_store_path()
    home = lodviz_home()
    target = home / SAMPLE_NAME
    if reset or not target.exists():
        if not source.exists():
            raise ServeError(
                f"the sample store {source} is missing; build it with `python sample_data/build.py` "
                "(or serve your own store with `lodviz serve --store PATH`)."
            )
        running = registry.live_entry(target) if target.exists() else None
        if running is not None:
            raise ServeError(f"the demo store is being served by process {running.pid} at {running.url}; stop it before --reset.")
        home.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".copying")
        shutil.copyfile(source, tmp)
        os.chmod(tmp, 0o644)
        for stale in (target.with_name(target.name + ".wal"),):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        os.replace(tmp, target)
    return target


@click.command("demo")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=int, help="Port (0 picks a free one).")
@click.option("--reset", is_flag=True, help="Start again from a fresh copy of the sample store.")
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@click.pass_context
def demo_command(ctx: click.Context, host: str, port: int, reset: bool, no_open: bool) -> None:
    """Serve a working copy of the bundled sample store (three agents of one company).

    The copy lives in $LODVIZ_HOME (default ~/.local/share/lodviz/), so the
    shipped file never changes; --reset starts again from the original.
    """

    def run() -> None:
        target = prepare_demo(reset)
        running = registry.live_entry(target)
        if running is not None:
            click.echo(f"lodviz is already serving {target} at {running.url} (MCP at {running.mcp_url})")
            if not no_open:
                _open_browser(running.url)
            return
        serve(target, host=host, port=port, open_browser=not no_open, model=_model_of(ctx), compressor=_compressor_of(ctx))

    _run(run)


@click.command("mcp")
@_store_option
@click.option("--agent", envvar="LODVIZ_AGENT", help="The agent this client acts for (env LODVIZ_AGENT).")
@click.option("--http", "http", is_flag=True, help="Serve the streamable HTTP transport instead of stdio.")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="With --http: address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=int, help="With --http: port (0 picks a free one).")
@click.option("--timeout", default=120.0, show_default=True, type=float, help="Seconds to wait for the store's server to come up.")
@click.pass_context
def mcp_command(ctx: click.Context, store: str | None, agent: str | None, http: bool, host: str, port: int, timeout: float) -> None:
    """The MCP server for one agent: stdio (default) or streamable HTTP.

    stdio: relays to the server that owns the store (`lodviz serve`), starting
    one in the background if none runs, so that any number of agents and the
    browser share the store. --http: own the store and serve /mcp/ (and the
    landscape at /) like `lodviz serve --no-open`; with --agent, every call
    acts for that agent.
    """
    path = _store_of(ctx, store)
    model = _model_of(ctx)
    if http:
        _run(lambda: serve(path, host=host, port=port, open_browser=False, agent=agent, model=model, compressor=_compressor_of(ctx)))
        return
    if not agent:
        raise click.UsageError("give --agent NAME: the agent this MCP client acts for.")

    def run() -> None:
        from lodviz.mcp_proxy import run_proxy
        from lodviz.mcp_server import check_agent

        check_agent(agent)
        compressor = _compressor_of(ctx)
        if compressor:  # an owner this relay starts compresses as the user chose
            os.environ["LODVIZ_COMPRESSOR"] = compressor
        run_proxy(path, agent, model=model, timeout=timeout)

    _run(run)


__all__ = [
    "serve",
    "serve_command",
    "demo_command",
    "mcp_command",
    "LodvizServer",
    "LockedMemory",
    "open_memory",
    "prepare_demo",
    "sample_store_path",
    "lodviz_home",
    "ServeError",
]
