"""The agent interface: LOD memory as MCP tools, over one ``Memory``.

The tools are plain module-level functions, one per tool:
``memory_search``, ``memory_expand`` and ``memory_promote`` (the concept's
three), ``memory_write``, and the non-semantic modes ``memory_recent``,
``memory_unseen`` and ``memory_sample``. Each takes a ``Call`` (the Memory,
the agent it acts for, who acts, whether the server is read-only) and its
typed arguments, and returns the ``CallToolResult`` the agent receives: text
and structured content. Their signatures are the tools' input schemas, their
return annotations the output schemas, their docstrings the descriptions, so
a test calls ``memory_search(Call(mem, "alice"), query="...")`` with no
server at all.

``build_mcp(mem)`` registers them on an ``MCPServer`` (official ``mcp`` SDK):
each tool's handler builds the ``Call`` from the request (``call_context``)
and runs the tool whole on a worker thread (``run_tool``), so neither the
store's work nor the rendering of its result (which takes the Memory's lock)
ever blocks the event loop that serves other clients and the app. Errors
lodviz raises on purpose (``LodvizError``) come back as tool errors carrying
their one-sentence message; anything else as one sentence naming its type,
with the details in the server's log. The server keeps serving.

Every call acts for one agent: its stored profile (alpha, lambda, thresholds,
k) applies, it sees its own memories and shared ones only, and the audit log
records the call under its name. Which agent a call acts for:

- the server's fixed agent, if it has one (``lodviz mcp --http --agent NAME``);
- otherwise the ``X-Lodviz-Agent`` request header, which ``lodviz.serve.app`` also
  sets from the URL forms ``/mcp/<agent>/`` and ``/mcp/?agent=<agent>``;
- otherwise ``default``.

The agent name is a label that keeps memories apart, not an authentication:
whoever can reach the endpoint can name any agent. The server listens on
127.0.0.1 only.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar, cast

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

import lodviz
from lodviz.access import IDENTITY_HEADER, check_agent, set_face
from lodviz.drilling import Neighbourhood
from lodviz.errors import AccessDenied, LodvizError, StoreError
from lodviz.ingest.inputs import DEFAULT_AGENT  # the agent of a call, like a record, that names none
from lodviz.memory import Memory, Result
from lodviz.params import DEFAULT_BUDGET, DEFAULT_BUDGET_ARG, BudgetArg
from lodviz.records import MemoryRecord
from lodviz.scoring import Tier
from lodviz.times import iso

#: The request header naming the agent a call acts for.
AGENT_HEADER = "X-Lodviz-Agent"
#: The agent of calls that name none.

INSTRUCTIONS = """\
lodviz is level-of-detail (LOD) memory. Nothing is forgotten: every memory is
kept as full text, a summary and a one-line headline, and a search returns the
whole relevant landscape at mixed resolution - the memories closest to your
query (and those in recent use) in full, the next ring as summaries, the rest
as headlines with their [id].

- Start with memory_search(query): read the full items and summaries, scan the
  headlines; call memory_expand(id) on any headline you need in full. A long
  memory may come back as an excerpt (passages, "…" where text was left out):
  memory_expand(id, around="a phrase you read") reads on around it.
- Results keep to your profile's token budget (usually 2000; the header says
  which): pass budget_tokens=N for more or less, whole_landscape=true for all.
- Use exclude=[topics] to push a topic away.
- memory_promote(id, reason) keeps a key memory at a higher resolution for good.
- memory_write(text, kind) stores something worth remembering (private to you
  unless visibility="shared").
- memory_recent, memory_unseen and memory_sample browse without a query: a time
  window, what was never retrieved, and a random draw from what is fading.
Only your own memories and shared ones are visible to you.
"""

T = TypeVar("T")

log = logging.getLogger("lodviz.mcp")


# -- structured output ----------------------------------------------------------------------


FloorName = Literal["FULL", "SUMMARY", "HEADLINE", "OUT"]
VisibilityName = Literal["private", "shared"]


class MemoryItem(BaseModel):
    """One memory in a landscape, with its content at its tier."""

    id: int = Field(description="Pass to memory_expand or memory_promote.")
    tier: Literal["FULL", "SUMMARY", "HEADLINE"] = Field(description="The resolution it came back at.")
    content: str = Field(description="The text at that tier: full text, summary or headline.")
    similarity: float = Field(description="S: cosine similarity to the query, 0-1 (0 without a query).")
    decay: float = Field(description="D: temporal decay since last use, 0-1 (1 = just used).")
    score: float = Field(description="L = alpha*S + (1-alpha)*D, less any exclusion penalty.")
    penalty: float = Field(description="What exclude=[...] subtracted from L.")
    retrieval_count: int = Field(description="How often it was retrieved before this call.")
    last_retrieved_at: str | None
    created_at: str
    agent_id: str
    visibility: VisibilityName
    kind: str
    source: str | None
    floor: FloorName = Field(description="Its promoted tier floor.")
    tokens: int = Field(description="Estimated tokens of content.")


class LandscapeOut(BaseModel):
    """A tiered result: what memory_search and the browsing modes return."""

    # Clients see the schema's title; it stays what it always was.
    model_config = ConfigDict(title="Landscape")

    mode: Literal["search", "recent", "unseen", "sample"]
    query: str | None
    exclude: list[str]
    agent_id: str | None = Field(description="The agent the call acted for.")
    now: str = Field(description="The time the scores were computed for.")
    params: dict[str, float] = Field(description="alpha, lam (lambda), theta1-3 and k used.")
    budget_tokens: int | None
    candidates: int = Field(description="How many memories were considered.")
    counts: dict[str, int] = Field(description="Items per tier.")
    tokens: int = Field(description="Estimated tokens of all contents.")
    items: list[MemoryItem] = Field(description="FULL items first, then SUMMARY, then HEADLINE.")


class NeighbourhoodOut(BaseModel):
    """What memory_expand(around=...) returned of a memory: which passages, and what more there is."""

    around: str
    matched: Literal["phrase", "nearest"] = Field(description="phrase: a passage holds it; nearest: none does, so the passage nearest in meaning.")
    positions: list[int] = Field(description="The passages returned (0-based), in the memory's order.")
    spans: list[list[int]] = Field(description="[start, stop] of each in the full text.")
    passage_count: int = Field(description="How many passages the memory has.")
    before: int = Field(description="Passages left out before them.")
    after: int = Field(description="Passages left out after them.")


class MemoryOut(BaseModel):
    """One memory in full, or with around only the passages asked for."""

    id: int
    headline: str
    summary: str
    text: str = Field(description="The full text; with around, only the passages returned, verbatim, with … where text was left out.")
    agent_id: str
    visibility: VisibilityName
    kind: str
    source: str | None
    created_at: str
    last_retrieved_at: str | None
    retrieval_count: int
    floor: FloorName
    metadata: dict[str, Any]
    neighbourhood: NeighbourhoodOut | None = Field(default=None, description="With around: which passages text holds.")


class Promotion(BaseModel):
    id: int
    previous_floor: FloorName
    floor: FloorName = Field(description="The tier floor now.")
    headline: str


class Written(BaseModel):
    id: int
    duplicate: bool = Field(description="True if this agent had stored the same text before; nothing new was written.")
    agent_id: str
    visibility: VisibilityName
    kind: str
    headline: str
    summary: str


ToolFunction = Callable[..., CallToolResult]
F = TypeVar("F", bound=ToolFunction)


# -- the call ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """What one tool call acts with: the store, the agent it acts for, who acts, and whether it may change anything.

    ``actor`` is who the audit log names (the authenticated identity); empty,
    the agent itself. ``mem`` is ``None`` only in a server that lists its
    tools and does nothing else (the stdio relay's).
    """

    mem: Memory | None
    agent: str = DEFAULT_AGENT
    actor: str = ""
    read_only: bool = False

    def __post_init__(self) -> None:
        if not self.actor:
            object.__setattr__(self, "actor", self.agent)

    def service(self) -> Memory:
        if self.mem is None:
            raise StoreError("this MCP server lists tools only; it has no store.")
        return self.mem

    def writable(self, what: str) -> None:
        if self.read_only:
            raise AccessDenied(f"this lodviz server is read-only (a demo); it does not {what}.")


def _headers(ctx: Context) -> Mapping[str, str] | None:
    try:
        return ctx.headers
    except ValueError:  # no request (in-process use)
        return None


def call_context(
    ctx: Context, mem: Memory | None, *, agent: str | None = None, default_agent: str = DEFAULT_AGENT, read_only: bool = False
) -> Call:
    """The ``Call`` a request makes: the fixed ``agent``, else the ``X-Lodviz-Agent`` header
    (checked), else ``default_agent``; acted by the ``X-Lodviz-Identity`` header (set by the
    server after it checked a token), else by that agent."""
    headers = _headers(ctx)
    if agent is None:
        named = headers.get(AGENT_HEADER) if headers is not None else None
        agent = check_agent(named) if named else default_agent
    actor = headers.get(IDENTITY_HEADER) if headers is not None else None
    return Call(mem, agent, actor or agent, read_only)


def run_tool(function: Callable[..., T], call: Call, /, **arguments: Any) -> T:
    """``function(call, **arguments)`` as the MCP face runs it: its changes recorded as made
    through "mcp"; a lodviz error a tool error with its message, a defect one sentence (and a log line)."""

    def as_mcp() -> T:
        set_face("mcp")
        return function(call, **arguments)

    try:
        return contextvars.copy_context().run(as_mcp)
    except LodvizError as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:  # a defect, not the caller's doing: one line in the log, one sentence to the agent
        log.warning("%s failed: %s: %s", function.__name__, type(exc).__name__, exc)
        raise ToolError(f"lodviz could not do this ({type(exc).__name__}); the server's log says more.") from None


# -- rendering ---------------------------------------------------------------------------------


def _record_out(record: MemoryRecord) -> MemoryOut:
    return MemoryOut(**{**record.to_dict(), "metadata": dict(record.metadata or {})})


def _neighbourhood_out(part: Neighbourhood) -> MemoryOut:
    where = NeighbourhoodOut(
        around=part.around, matched=cast(Literal["phrase", "nearest"], part.matched), positions=list(part.positions),
        spans=[list(span) for span in part.spans], passage_count=part.count, before=part.before, after=part.after,
    )
    return MemoryOut(**{**part.record.to_dict(), "text": part.text, "metadata": dict(part.record.metadata or {}), "neighbourhood": where})


def _neighbourhood_note(part: Neighbourhood) -> str:
    """Which passages the text holds, why those, and how to read more."""
    first, last = part.positions[0] + 1, part.positions[-1] + 1
    which = f"Passage {first}" if first == last else f"Passages {first}-{last}"
    found = (f'the one holding "{part.around}"' if part.matched == "phrase"
             else f'no passage holds "{part.around}": the one nearest in meaning')
    note = f"{which} of {part.count}: {found}, and {part.width} on each side."
    if part.before or part.after:
        note += (f" Left out: {part.before} before, {part.after} after; memory_expand({part.memory_id}, around=..., width=...) "
                 f"reads more, memory_expand({part.memory_id}) the whole.")
    return note


def _result(text: str, data: BaseModel | dict[str, Any]) -> CallToolResult:
    structured = data.model_dump(mode="json") if isinstance(data, BaseModel) else data
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _landscape(result: Result) -> CallToolResult:
    # Exactly render(): the text a token budget was kept on. Both take the Memory's lock
    # (a search's items are made when first read).
    return _result(result.render(), result.to_dict())


def _describe(record: MemoryRecord) -> str:
    floor = Tier(record.floor)
    facts = [
        f"kind {record.kind}",
        f"agent {record.agent_id} ({record.visibility})",
        f"created {iso(record.created_at)}",
        f"retrieved {record.retrieval_count}x",
    ]
    if record.source:
        facts.append(f"source {record.source}")
    if floor > Tier.OUT:
        facts.append(f"floor {floor.name}")
    return f"[{record.id}] {record.headline}\n(" + ", ".join(facts) + ")"


# -- the tools ---------------------------------------------------------------------------------

_TOOLS: list[tuple[ToolFunction, ToolAnnotations]] = []

#: Every tool but memory_write: a call counts as use of what it returns, so none is read-only.
USES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
#: memory_write: the same text again stores nothing new.
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

Budget = Annotated[
    int | None,
    Field(description=f"Hard cap on the tokens of the returned text (default: your profile's, usually {DEFAULT_BUDGET})."),
]
WholeLandscape = Annotated[
    bool,
    Field(description="Return every memory in range at its tier, with no token cap (tens of thousands of tokens on a large store)."),
]


def _budget(budget_tokens: int | None, whole_landscape: bool) -> BudgetArg:
    """What a tool asks the store for: the agent's own cap, its profile's default, or none at all."""
    if whole_landscape:
        return None
    return DEFAULT_BUDGET_ARG if budget_tokens is None else budget_tokens


def tool(annotations: ToolAnnotations) -> Callable[[F], F]:
    """Register a module-level function as an MCP tool (in definition order)."""

    def register(function: F) -> F:
        _TOOLS.append((function, annotations))
        return function

    return register


@tool(USES)
def memory_search(
    call: Call,
    query: Annotated[str, Field(description="What you want to remember about, in natural language.")],
    exclude: Annotated[list[str] | None, Field(description="Topics to push away (negative retrieval).")] = None,
    k: Annotated[int | None, Field(description="How many nearest memories to consider (default: your profile's, usually 1000).")] = None,
    budget_tokens: Budget = None,
    whole_landscape: WholeLandscape = False,
) -> Annotated[CallToolResult, LandscapeOut]:
    """Search your memory: the landscape around a query, at mixed resolution.

    Use this first, whenever past conversations, documents, decisions,
    preferences or results might matter. It returns the k nearest memories
    (wide: about 1000, not 5), each at the resolution its relevance and
    recency earn: FULL text for the closest and most used, SUMMARY for the
    next ring, a one-line HEADLINE with its [id] for the rest. Read the full
    items, scan the headlines, and call memory_expand(id) on any headline
    you need. exclude=["topic", ...] pushes a topic down. The result keeps to
    your profile's token budget (usually 2000 tokens; the header says which):
    lower-scoring items lose resolution first, nothing is dropped before it
    must be; budget_tokens=N sets another cap, whole_landscape=true returns
    every memory in range. Memories returned FULL or SUMMARY count as used
    and stay sharp.
    """
    result = call.service().search(
        query, agent_id=call.agent, exclude=exclude, k=k, budget_tokens=_budget(budget_tokens, whole_landscape),
        touch=not call.read_only, record=not call.read_only, actor=call.actor,
    )
    return _landscape(result)


@tool(USES)
def memory_expand(
    call: Call,
    memory_id: Annotated[int, Field(description="The [id] shown in a search or browse result.")],
    around: Annotated[
        str | None,
        Field(description="A phrase from the excerpt you read: return only the passage holding it and its neighbours, not the whole memory."),
    ] = None,
    width: Annotated[int, Field(description="With around: how many passages to return on each side of it.")] = 1,
) -> Annotated[CallToolResult, MemoryOut]:
    """The full text of one memory (its headline and summary too), or only the part of it you need.

    Use it when a headline or summary in a landscape looks relevant and you
    need the details. A long memory (a session, a document) comes back
    from a search as an excerpt: its passages nearest your query, with …
    where text was left out. To read on around something in an excerpt,
    pass around="a phrase you read there": you get the passage holding it
    and width passages on each side (default 1), far cheaper than the
    whole document; ask again with a larger width or another phrase for
    more. Without around you get the whole memory. Either counts as using
    the memory, so it stays sharp in later searches.
    """
    mem = call.service()
    if around is not None:
        part = mem.expand_passage(
            memory_id, around, width=width, agent_id=call.agent, actor=call.actor, touch=not call.read_only
        )
        return _result(f"{_describe(part.record)}\n{_neighbourhood_note(part)}\n\n{part.text}\n", _neighbourhood_out(part))
    if call.read_only:
        record = mem.get(memory_id, agent_id=call.agent)
    else:
        record = mem.expand(memory_id, agent_id=call.agent, actor=call.actor)
    return _result(f"{_describe(record)}\n\n{record.text}\n", _record_out(record))


@tool(USES)
def memory_promote(
    call: Call,
    memory_id: Annotated[int, Field(description="The [id] of the memory to keep sharp.")],
    reason: Annotated[str, Field(description="Why it matters (kept in the audit log).")],
) -> Annotated[CallToolResult, Promotion]:
    """Pin a memory at least one tier higher for good (HEADLINE -> SUMMARY -> FULL).

    Use it for something that must never fade: a key decision, a
    precedent, a standing preference. It raises the memory's tier floor to
    one tier above where it came back in your last search (a headline
    becomes at least a summary), so every later search returns it at least
    at that resolution, however old or distant it is. Say why: the reason
    is recorded with your name.
    """
    call.writable("promote")
    change = call.service().move_floor(memory_id, +1, reason=reason, agent_id=call.agent, actor=call.actor)
    data = Promotion(
        id=change.memory_id,
        previous_floor=cast(FloorName, change.before.name),
        floor=cast(FloorName, change.after.name),
        headline=change.headline,
    )
    return _result(
        f"Memory {change.memory_id} now has tier floor {change.after.name} (was {change.before.name}): {change.headline}\n",
        data,
    )


@tool(WRITES)
def memory_write(
    call: Call,
    text: Annotated[str, Field(description="The memory, in full; it is summarised and headlined for you.")],
    kind: Annotated[str, Field(description="A short lower-case word: note, turn, document, tool_result, preference, email, ...")] = "note",
    metadata: Annotated[dict[str, Any] | None, Field(description="Any JSON object to keep with it.")] = None,
    visibility: Annotated[Literal["private", "shared"], Field(description="private: only you see it; shared: every agent does.")] = "private",
    source: Annotated[str | None, Field(description="Where it came from (a URL, a channel, a file).")] = None,
) -> Annotated[CallToolResult, Written]:
    """Store a memory: a fact, decision, preference, result or conversation turn worth keeping.

    Write the full text; lodviz keeps it at three resolutions (full,
    summary, headline) and it appears in later searches, and in the
    landscape people see. Writing the same text again stores nothing new
    and returns the existing id.
    """
    call.writable("write")
    record, duplicate = call.service().write(
        text, agent_id=call.agent, kind=kind, metadata=metadata, visibility=visibility, source=source, actor=call.actor,
    )
    data = Written(
        id=record.id,
        duplicate=duplicate,
        agent_id=record.agent_id,
        visibility=cast(VisibilityName, record.visibility),
        kind=record.kind,
        headline=record.headline,
        summary=record.summary,
    )
    verb = "Already stored as" if duplicate else "Stored"
    return _result(f"{verb} memory {record.id} ({record.visibility}, {record.kind}): {record.headline}\n", data)


@tool(USES)
def memory_recent(
    call: Call,
    since: Annotated[str, Field(description="Start of the window, ISO 8601 (e.g. 2026-05-01 or 2026-05-01T09:00:00Z).")],
    until: Annotated[str | None, Field(description="End of the window, ISO 8601 (default: now).")] = None,
    budget_tokens: Budget = None,
    whole_landscape: WholeLandscape = False,
) -> Annotated[CallToolResult, LandscapeOut]:
    """What was stored in a time window, newest first, without a query.

    Use it for "what happened last week", digests and catch-ups. Memories
    in the window come back tiered by how often they have been used:
    frequently used ones in full, untouched ones as headlines.
    """
    result = call.service().recent(
        since, until, agent_id=call.agent, budget_tokens=_budget(budget_tokens, whole_landscape),
        touch=not call.read_only, record=not call.read_only, actor=call.actor,
    )
    return _landscape(result)


@tool(USES)
def memory_unseen(
    call: Call,
    limit: Annotated[int, Field(description="At most this many, newest first.")] = 50,
    budget_tokens: Budget = None,
    whole_landscape: WholeLandscape = False,
) -> Annotated[CallToolResult, LandscapeOut]:
    """Memories that have never been retrieved, newest first.

    Use it to review what was stored but never looked at (new documents,
    unread results) before it fades.
    """
    result = call.service().unseen(
        agent_id=call.agent, limit=limit, budget_tokens=_budget(budget_tokens, whole_landscape),
        touch=not call.read_only, record=not call.read_only, actor=call.actor,
    )
    return _landscape(result)


@tool(USES)
def memory_sample(
    call: Call,
    n: Annotated[int, Field(description="How many memories to draw.")] = 10,
    budget_tokens: Budget = None,
    whole_landscape: WholeLandscape = False,
) -> Annotated[CallToolResult, LandscapeOut]:
    """Resurface n memories at random, weighted towards the most faded.

    Use it to rediscover what is being ignored: old decisions, forgotten
    findings. Drawn memories come back as summaries and count as used.
    """
    result = call.service().sample(
        n, agent_id=call.agent, budget_tokens=_budget(budget_tokens, whole_landscape),
        touch=not call.read_only, record=not call.read_only, actor=call.actor,
    )
    return _landscape(result)


#: The tools, in the order they are listed, with their annotations.
TOOLS: tuple[tuple[ToolFunction, ToolAnnotations], ...] = tuple(_TOOLS)
#: Their names, as clients call them.
TOOL_NAMES: tuple[str, ...] = tuple(function.__name__ for function, _ in TOOLS)


# -- the server --------------------------------------------------------------------------------


def _handler(function: ToolFunction, make_call: Callable[[Context], Call]) -> Callable[..., Awaitable[CallToolResult]]:
    """``function`` as the SDK registers it: the request's ``ctx`` in place of ``call``, the same
    typed arguments (so the same schemas), its docstring as the description."""
    signature = inspect.signature(function, eval_str=True)
    _, *arguments = signature.parameters.values()
    context = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context)

    async def handler(ctx: Context, **kwargs: Any) -> CallToolResult:
        try:
            call = make_call(ctx)
        except LodvizError as exc:  # an agent header that is no agent name
            raise ToolError(str(exc)) from exc
        # The store's work and the rendering of its result, together, off the event loop.
        return await anyio.to_thread.run_sync(functools.partial(run_tool, function, call, **kwargs))

    handler.__name__ = handler.__qualname__ = function.__name__
    handler.__doc__ = inspect.cleandoc(function.__doc__ or "")
    handler.__signature__ = signature.replace(parameters=[context, *arguments])  # type: ignore[attr-defined]
    handler.__annotations__ = {
        "ctx": Context,
        **{parameter.name: parameter.annotation for parameter in arguments},
        "return": signature.return_annotation,
    }
    return handler


def build_mcp(
    mem: Memory | None, *, agent: str | None = None, default_agent: str = DEFAULT_AGENT, read_only: bool = False
) -> MCPServer:
    """The MCP server over ``mem`` (``None`` only to list the tools, as the stdio relay does).

    With ``agent``, every call acts for that agent whatever the request says
    (the HTTP layer in ``lodviz.serve.app`` refuses requests naming another one).
    Without it, the ``X-Lodviz-Agent`` header names the agent, else
    ``default_agent``. The ``X-Lodviz-Identity`` header (set by the server
    after it checked a token; a client's own is dropped) names who acts, for
    the audit log. ``read_only``: nothing is written, not even the use a
    search counts; ``memory_write`` and ``memory_promote`` are refused.
    """
    fixed = check_agent(agent) if agent is not None else None
    check_agent(default_agent)
    server = MCPServer(
        "lodviz",
        title="lodviz LOD memory",
        description="Level-of-detail memory: search the landscape, expand, promote, write.",
        instructions=INSTRUCTIONS,
        version=lodviz.__version__,
        log_level="WARNING",
    )
    make_call = functools.partial(call_context, mem=mem, agent=fixed, default_agent=default_agent, read_only=read_only)
    for function, hints in TOOLS:
        server.add_tool(_handler(function, make_call), annotations=hints)
    return server


__all__ = [
    "AGENT_HEADER",
    "DEFAULT_AGENT",
    "INSTRUCTIONS",
    "TOOLS",
    "TOOL_NAMES",
    "Call",
    "build_mcp",
    "call_context",
    "check_agent",
    "memory_expand",
    "memory_promote",
    "memory_recent",
    "memory_sample",
    "memory_search",
    "memory_unseen",
    "memory_write",
    "run_tool",
]
