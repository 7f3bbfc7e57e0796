"""``lodviz mcp`` over stdio: a relay to the process that owns the store.

An MCP client (Claude Code, Claude Desktop, an IDE) starts ``lodviz mcp
--store PATH --agent NAME`` and speaks MCP on its stdin/stdout. This process
never opens the store. It finds the store's owner in the registry beside the
store (``lodviz.serve.registry``), or starts ``lodviz serve`` in the
background if there is none, and relays ``tools/list`` and ``tools/call`` to
that owner's streamable-HTTP endpoint ``/mcp/<agent>``. Tool results and tool
errors come back unchanged. ``tools/list`` is answered here from the same tool
definitions, so a client starts at once while the owner is still loading.

Each relayed call uses its own short HTTP session, so a server that stopped
(or was restarted, or timed out idle) in between is simply found or started
again; a call that cannot reach any server comes back as a tool error naming
the cause and the server's log, never as a crash of this process.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import quote

import anyio
import anyio.to_thread

from lodviz.errors import LodvizError
from lodviz.serve import registry

log = logging.getLogger("lodviz.mcp")
T = TypeVar("T")


class Relay:
    """The upstream side: where the owner is, and one call through it."""

    def __init__(
        self, store: str, agent: str, *, model: str | None = None, compressor: str | None = None, timeout: float = 120.0,
        create: bool = False,
    ) -> None:
        self.store = str(registry.store_key(store))
        self.create = create
        self.agent = agent
        self.model = model
        self.compressor = compressor
        self.timeout = timeout
        self._entry: registry.ServeEntry | None = None
        self._lock = anyio.Lock()
        self._tools: Any = None

    async def endpoint(self, *, refresh: bool = False) -> str:
        """The owner's MCP URL for this agent, finding or starting the owner."""
        async with self._lock:
            if refresh or self._entry is None:
                self._entry = await anyio.to_thread.run_sync(
                    functools.partial(
                        registry.ensure_serve, self.store, model=self.model, compressor=self.compressor, timeout=self.timeout,
                        create=self.create,
                    ),
                    abandon_on_cancel=True,
                )
                print(
                    f"lodviz mcp: agent {self.agent!r} on {self.store} via {self._entry.mcp_url} (pid {self._entry.pid})",
                    file=sys.stderr,
                    flush=True,
                )
            return f"{self._entry.mcp_url}{quote(self.agent, safe='')}"

    async def warm(self) -> None:
        """Find or start the owner early, while the client is still handshaking."""
        try:
            await self.endpoint()
        except Exception as exc:  # reported again on the first call
            log.warning("lodviz mcp: %s", exc)

    async def call(self, work: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``work(client)`` against the owner; once more after finding it again."""
        from mcp import Client

        failure: BaseException | None = None
        for attempt in range(2):
            try:
                url = await self.endpoint(refresh=attempt > 0)
            except LodvizError as exc:
                raise RelayError(str(exc)) from exc
            try:
                async with Client(url, mode="legacy", cache=None) as client:
                    return await work(client)
            except Exception as exc:  # the owner went away, or refused us
                failure = exc
        raise RelayError(_describe(failure, self.store))

    async def list_tools(self) -> Any:
        """The tool list, answered here: the same ``build_mcp`` the owner runs.

        Listing needs no store, so a client's start-up never waits for the
        owner to load its model; the first tool call does (``warm`` starts it
        meanwhile).
        """
        if self._tools is None:
            import mcp_types as types

            from lodviz.mcp_server import build_mcp

            self._tools = types.ListToolsResult(tools=await build_mcp(None).list_tools())
        return self._tools

    async def call_tool(self, name: str, arguments: dict[str, Any] | None) -> Any:
        import mcp_types as types

        async def work(client: Any) -> Any:
            request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
            return await client.session.send_request(request, types.CallToolResult)

        return await self.call(work)


class RelayError(LodvizError):
    """The store's server cannot be reached or started."""


def _describe(exc: BaseException | None, store: str) -> str:
    """The innermost useful message of a (grouped) exception."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) if exc is not None else "unknown error"
    if not text and exc is not None:
        text = type(exc).__name__
    return f"cannot reach the lodviz server for {store}: {text} (log: {registry.log_path(store)})"


def build_relay_server(relay: Relay) -> Any:
    """A low-level MCP server whose tools are the owner's tools."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    import lodviz
    from lodviz.mcp_server import INSTRUCTIONS

    async def list_tools(ctx: Any, params: Any) -> Any:
        return await relay.list_tools()

    async def call_tool(ctx: Any, params: Any) -> Any:
        try:
            return await relay.call_tool(params.name, params.arguments)
        except RelayError as exc:
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))], is_error=True)

    return Server(
        "lodviz",
        version=lodviz.__version__,
        title="lodviz LOD memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def run_relay(
    store: str, agent: str, *, model: str | None = None, compressor: str | None = None, timeout: float = 120.0,
    create: bool = False,
) -> None:
    """Serve MCP on stdin/stdout for ``agent``, relaying to the store's owner (started with
    ``model`` and ``compressor`` if it has to be, and ``create`` to start an empty store)."""
    from mcp.server.stdio import stdio_server

    logging.getLogger("mcp").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    relay = Relay(store, agent, model=model, compressor=compressor, timeout=timeout, create=create)
    server = build_relay_server(relay)

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(relay.warm)
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            tasks.cancel_scope.cancel()

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        pass


__all__ = ["Relay", "RelayError", "build_relay_server", "run_relay"]
