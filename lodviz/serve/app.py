"""The ASGI application of ``lodviz serve``: the landscape, the MCP endpoint, a few routes.

    /               the landscape (the Dash app of ``lodviz.app``, via a2wsgi)
    /mcp/           the MCP streamable-HTTP endpoint (``lodviz.mcp_server``)
    /mcp/<agent>    the same endpoint, acting for <agent>
    /api/health     {"service": "lodviz", "store": ..., "pid": ...}
    /api/promote    POST {"memory_id": 42, "reason": "..."}: promote (needs an auditor)
    /api/control/revoke  POST {"token_id": "...", "actor": "..."} with ``X-Lodviz-Control``: the
                    store owner's revocation while this server holds the file (``lodviz token revoke``)
    /login          the sign-in form of a server run with --auth (sets the session cookie)

Every request passes ``lodviz.serve.auth.Gate`` first: the Host header, the
caller's identity and role (with --auth), and cross-site POSTs.

Browser and agents share one ``Memory`` (opened with a lock, so its
operations run one at a time), so a promotion made in the browser is in the
agent's next search and an agent's write is in the next landscape.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote

import lodviz
from lodviz.access import APP_ACTOR, IDENTITY_SCOPE_KEY, LOCAL, Identity, set_face
from lodviz.errors import InvalidInput, LodvizError, MemoryNotFound
from lodviz.memory import Memory

if TYPE_CHECKING:  # pragma: no cover
    from starlette.types import Receive, Scope, Send

DEFAULT_HOST = "127.0.0.1"
#: The header that carries the registry file's control secret (``lodviz.serve.registry``).
CONTROL_HEADER = "X-Lodviz-Control"


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
        auth: bool = False,
        read_only: bool = False,
        allowed_hosts: tuple[str, ...] = (),
        control: str = "",
    ) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
        from mcp.server.transport_security import TransportSecuritySettings
        from starlette.applications import Starlette
        from starlette.routing import Mount, Route

        from lodviz.mcp_server import build_mcp, check_agent
        from lodviz.serve.auth import LOOPBACK, Gate

        self.gate = Gate(mem, host=host, auth=auth, read_only=read_only, allowed_hosts=allowed_hosts)
        self.control = control  # the registry file's secret: whoever can read that file owns the store
        self.mem = mem
        self.agent = check_agent(agent) if agent is not None else None
        self.loopback = host in LOOPBACK
        self.store_label = store_label or mem.path
        self.idle_timeout = idle_timeout
        self.on_started = on_started
        self.on_stopping = on_stopping
        self.request_exit = request_exit
        self.activity = _Activity()
        self.dash_app: Any = None

        self.mcp = build_mcp(mem, agent=self.agent, read_only=read_only)
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

            self.dash_app = create_app(mem, auth=auth, read_only=read_only)
            routes.append(Mount("/", app=WSGIMiddleware(self.dash_app.server, workers=8)))  # type: ignore[arg-type]  # a2wsgi is an ASGI app
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

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.starlette(scope, receive, send)
            return
        self.activity.enter()
        try:
            if scope["type"] != "http":
                await self.starlette(scope, receive, send)
                return
            await self._gated(scope, receive, send)
        finally:
            self.activity.leave()

    async def _gated(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Host, identity, role and cross-site checks (``lodviz.serve.auth``), then the route."""
        from starlette.responses import HTMLResponse, JSONResponse

        from lodviz.serve import auth

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        path, method = scope.get("path", ""), scope.get("method", "GET")
        is_mcp = path == "/mcp" or path.startswith("/mcp/")
        if not self.gate.host_ok(host):
            await JSONResponse({"error": "bad Host header: this server answers for its own address only."}, 421)(scope, receive, send)
            return
        if path == "/api/health":
            await self.starlette(scope, receive, send)
            return
        if path in ("/login", "/logout"):
            await self._login(scope, receive, send, headers)
            return
        if path == "/api/control/revoke":
            await self._control_revoke(scope, receive, send, headers)
            return
        try:
            client = (scope.get("client") or ("", 0))[0]
            identity = self.gate.identity(headers, client)
        except LodvizError as exc:
            if isinstance(exc, auth.TooManyFailures):
                message = str(exc)
                response = _rpc_error(message, 429) if is_mcp else JSONResponse({"error": message}, 429)
                response.headers["Retry-After"] = "60"
                await response(scope, receive, send)
                return
            if is_mcp:
                response = _rpc_error(str(exc), 401)
                response.headers["WWW-Authenticate"] = 'Bearer realm="lodviz"'
            elif method == "GET" and path == "/":
                response = HTMLResponse(auth.login_page(str(exc) if headers.get("cookie") else ""), 401)
            else:
                response = JSONResponse({"error": str(exc)}, 401)
            await response(scope, receive, send)
            return
        if not self.gate.within_rate(identity):
            message = f"rate limit: at most {self.gate.rate:,} requests a minute per identity (LODVIZ_RATE_LIMIT); try again shortly."
            response = _rpc_error(message, 429) if is_mcp else JSONResponse({"error": message}, 429)
            response.headers["Retry-After"] = "60"
            await response(scope, receive, send)
            return
        if is_mcp:
            await self._mcp(scope, receive, send, identity)
            return
        if method in ("POST", "PUT", "PATCH", "DELETE"):
            if not self.gate.same_origin(headers.get("origin"), host):
                await JSONResponse({"error": "cross-site requests are refused."}, 403)(scope, receive, send)
                return
            body = await _read_body(receive, headers.get("content-length"))
            if body is None:
                message = f"the request body is over {MAX_BODY_BYTES // (1024 * 1024)} MB; this server reads at most that."
                await JSONResponse({"error": message}, 413)(scope, receive, send)
                return
            receive = _replay(body, receive)
        try:
            if path == "/api/promote":
                self.gate.check_steer(identity, "promote")
            else:
                self.gate.check_app(identity)
        except LodvizError as exc:
            await JSONResponse({"error": str(exc)}, 403)(scope, receive, send)
            return
        # The identity travels in the scope (the app reads it there), never in a header a client could add.
        scope = {**scope, "headers": auth.with_identity(scope.get("headers", []), identity), IDENTITY_SCOPE_KEY: identity}
        await self.starlette(scope, receive, send)

    async def _login(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        from starlette.responses import HTMLResponse, RedirectResponse

        from lodviz.serve import auth

        response: Any
        if scope["path"] == "/logout":
            response = RedirectResponse("/login", 303)
            response.delete_cookie(auth.COOKIE, path="/")
        elif scope.get("method") != "POST":
            response = HTMLResponse(auth.login_page())
        elif not self.gate.same_origin(headers.get("origin"), headers.get("host", "")):
            response = HTMLResponse(auth.login_page("cross-site sign-in refused."), 403)
        else:
            token = auth.form_token(await _read_body(receive, headers.get("content-length")) or b"") or ""
            try:
                client = (scope.get("client") or ("", 0))[0]
                identity = self.gate.identity({"authorization": f"Bearer {token}"}, client) if self.gate.auth else None
                if identity is not None:
                    identity.require("view", "open the landscape")
            except LodvizError as exc:
                await HTMLResponse(auth.login_page(str(exc)), 401)(scope, receive, send)
                return
            response = RedirectResponse("/", 303)
            if self.gate.auth:
                response.set_cookie(auth.COOKIE, token, httponly=True, samesite="strict", path="/")
        await response(scope, receive, send)

    async def _control_revoke(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        """Revoke a token for the store's owner, who proved it with the registry file's secret."""
        import hmac
        import json

        import anyio.to_thread
        from starlette.responses import JSONResponse

        given = headers.get(CONTROL_HEADER.lower(), "")
        if scope.get("method") != "POST" or not self.control or not hmac.compare_digest(given.encode(), self.control.encode()):
            await JSONResponse({"error": "this route takes the store owner's control secret (from the registry file)."}, 403)(scope, receive, send)
            return
        body = await _read_body(receive, headers.get("content-length")) or b""
        try:
            request = json.loads(body)
            token_id, actor = str(request["token_id"]), str(request.get("actor") or "cli")
        except (ValueError, KeyError, TypeError):
            await JSONResponse({"error": 'send {"token_id": "...", "actor": "..."}.'}, 400)(scope, receive, send)
            return
        try:
            record = await anyio.to_thread.run_sync(lambda: self.mem.revoke_token(token_id, actor=actor))
        except LodvizError as exc:
            await JSONResponse({"error": str(exc)}, 400)(scope, receive, send)
            return
        self.gate.forget_token(record.id)  # refused from the next request on, not after the cache's 2 s
        await JSONResponse({"token": record.to_dict()})(scope, receive, send)

    async def _mcp(self, scope: Scope, receive: Receive, send: Send, identity: Any = None) -> None:
        """Find the agent (path, header, query, fixed, or the token's), pass it on as the header."""
        from lodviz.access import LOCAL
        from lodviz.mcp_server import AGENT_HEADER, check_agent
        from lodviz.serve import auth

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
        if identity is not None and identity is not LOCAL:
            try:
                agent = identity.acting_agent(agent)
            except LodvizError as exc:
                await _rpc_error(str(exc), 403)(scope, receive, send)
                return
        if agent:
            headers.append((header, agent.encode("latin-1")))
        headers = auth.with_identity(headers, identity or LOCAL)
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

        # Host, identity, role and origin were checked by the gate (_gated).
        identity = request.scope.get(IDENTITY_SCOPE_KEY)
        actor = identity.name if isinstance(identity, Identity) and identity is not LOCAL else APP_ACTOR
        if not request.headers.get("content-type", "").startswith("application/json"):
            return self._json({"error": "send JSON (Content-Type: application/json)."}, 415)
        try:
            body = await request.json()
            if not isinstance(body, dict) or "memory_id" not in body:
                raise ValueError
        except ValueError:
            return self._json({"error": 'send {"memory_id": ID, "reason": "why"}.'}, 400)
        try:
            def promote() -> Any:
                set_face("http")  # audited as coming through the HTTP API
                return self.mem.promote(
                    body["memory_id"], reason=body.get("reason"), to=body.get("to"), actor=actor
                )

            floor = await anyio.to_thread.run_sync(promote)
        except MemoryNotFound as exc:
            return self._json({"error": str(exc)}, 404)
        except (LodvizError, ValueError, TypeError) as exc:  # Tier.parse raises ValueError for an unknown tier
            return self._json({"error": str(exc)}, 400)
        return self._json({"id": int(body["memory_id"]), "floor": floor.name})


#: The largest request body the gate reads (a Dash callback or a JSON call is a few KB).
MAX_BODY_BYTES = 16 * 1024 * 1024
#: How much of a too-large body is read and dropped before answering 413, so that a client
#: still sending gets the answer instead of a reset connection; past it the connection is closed.
DRAIN_BYTES = 4 * MAX_BODY_BYTES


async def _read_body(receive: Receive, content_length: str | None = None) -> bytes | None:
    """The whole request body, or None when it is over ``MAX_BODY_BYTES`` (the rest is drained)."""
    declared = int(content_length) if content_length and content_length.strip().isdigit() else 0
    chunks: list[bytes] = []
    size = 0
    too_large = declared > MAX_BODY_BYTES
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            too_large = True
            chunks.clear()
        if not too_large:
            chunks.append(chunk)
        if not message.get("more_body", False) or size > DRAIN_BYTES:
            break
    return None if too_large else b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives ``body`` once, then waits on the client as before."""
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _rpc_error(message: str, status: int) -> Any:
    """An HTTP error whose body is a JSON-RPC error, so MCP clients show the message."""
    from starlette.responses import JSONResponse

    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}, status_code=status)
