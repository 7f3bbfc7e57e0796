"""A LangGraph long-term memory store over a lodviz ``Memory``: ``LodvizStore``.

``LodvizStore(memory)`` is a ``langgraph.store.base.BaseStore``: a graph compiled
with ``builder.compile(store=store)`` hands it to its nodes, which ``put``,
``get``, ``search``, ``delete`` and ``list_namespaces`` as with any LangGraph
store (sync and async; ``batch`` and ``abatch`` are the two methods implemented,
``BaseStore`` derives the rest). The caller opens and closes the ``Memory``;
the store only uses it, through its public API.

Mapping. An item is one lodviz memory:

- its agent is the namespace label at ``agent_label`` (default 0: in
  ``("user-1", "memories")`` the agent is ``user-1``; ``agent_label=1`` for
  namespaces like ``("memories", "user-1")``). The label must be a lodviz agent
  id (1-64 letters, digits or ``_.:@-``); a shorter namespace is refused;
- its text is what the item says: the texts at the index ``fields`` (the
  store's ``index={"fields": [...]}``, or the put's ``index=[...]``; paths as
  LangGraph writes them, ``"$"`` for the whole value), joined by new lines;
  by default (or when those fields hold no text) the value's ``"text"``,
  ``"content"`` or ``"memory"`` string, else its only field when that is a
  string, else the whole value as JSON. The text is compressed and embedded as
  any lodviz memory's is;
- its metadata keeps the item: ``langgraph_namespace`` (a list),
  ``langgraph_key``, ``langgraph_value`` (the value as JSON text, so ``get``
  returns exactly what was put, key order included), ``langgraph_created_at``
  and ``langgraph_updated_at`` (ISO 8601), and ``langgraph_text_field`` (the
  one top-level field the text came from, if it came from one). Its ``source``
  is ``"langgraph"``, its ``created_at`` the put's time.

A memory's metadata never changes, so the store keeps what it read of it in
this process (``_Index``); every operation reads the store's live ids first,
so memories written or forgotten by anyone else are seen at the next call.
Memories not written through this store (imports, MCP writes) are not items.

Writes. ``put`` of a namespace and key that hold an item writes the new
memory, then forgets the old one (a put that leaves the text as it was forgets
first, as lodviz keeps one memory per agent and text, ``content_hash``: a
failure to write after that, which the checks make unlikely, loses the item); the
item keeps its ``created_at``, ``updated_at`` is the put's. ``put(value=None)``
and ``delete`` forget the item's memory (``Memory.forget``, audited). Two items
of one agent with the same text are two memories: the later one's text carries
an invisible mark (U+2063, removed from what a search returns) so that
lodviz's dedupe does not merge them. A value must be a mapping with string keys
and JSON values (lists, tuples, strings, finite numbers, booleans, None;
tuples come back as lists), at most ``MAX_METADATA_DEPTH`` levels deep; any
other value raises ``InvalidInput`` and nothing of the batch is written: every
put of a batch is checked before the first is written.

Search. Without a query: the items under the namespace prefix that match the
filter (equality, nested objects, lists and ``$eq``, ``$ne``, ``$gt``,
``$gte``, ``$lt``, ``$lte`` on the value's fields, as InMemoryStore compares),
in InMemoryStore's order, ``offset`` and ``limit`` applied; nothing is counted.
With a query: a lodviz search (``Memory.search``) for the prefix's agent (all
agents when the prefix does not reach ``agent_label``) with ``k = offset +
limit``, within the store's ``budget_tokens`` (the constructor's: the
agent's profile budget by default, an int, or None for the whole landscape;
``BaseStore.search`` has no parameter for it). It is a search like any other:
memories it returns at FULL or SUMMARY count as retrieved, and the audit log
records it. Each ``SearchItem`` is a memory at its tier, most relevant first:
``value`` is ``{<text field>: the text at its tier, "tier": "FULL" | "SUMMARY"
| "HEADLINE", "id": "#<memory id>"}`` (the text field is
``langgraph_text_field``, else ``"text"``; ``"superseded_by"`` and
``"conflicts"`` when lodviz marks them), never the whole stored value, which
would put the full text back past the budget; ``score`` is lodviz's L. The
``#id`` is what ``memory_expand`` and ``Memory.expand`` take. ``limit`` is
the search's k: LangGraph's default of 10 asks for a narrow view; an agent
that wants the wide landscape lodviz is made for asks ``limit=1000``.

One batch runs at a time through a ``LodvizStore`` (``abatch`` runs ``batch``
in a worker thread); a ``Memory`` used by other threads besides it should be
opened with ``lock=`` (``lodviz.open``).

Where it does not agree with ``langgraph.store.memory.InMemoryStore``:

- a search with a query returns memories at LOD tiers with lodviz's score, at
  most ``offset + limit`` nearest, fewer when the budget drops some or when
  they lie outside the prefix or the filter: the budget and the counting cover
  the agent's whole search, and memories the prefix or filter then leaves out
  (or that are not items) still count as retrieved when they came back at FULL
  or SUMMARY. InMemoryStore ranks by cosine and, without an index, ignores the
  query;
- every item is searchable: ``index=False`` and items whose fields hold no text
  are embedded all the same (lodviz has no memory without a text and a vector),
  and the index config takes ``fields`` only (lodviz embeds with its own model);
- ``list_namespaces`` lists namespaces that hold an item: InMemoryStore also
  lists one whose items were all deleted, or that was only read (``get``);
- a search without a query orders namespaces by their oldest item that is still
  there: InMemoryStore by when the namespace first appeared;
- ``$gt``, ``$gte``, ``$lt`` and ``$lte`` on a missing field or one that is no
  number do not match (InMemoryStore raises);
- a replaced item keeps its ``created_at`` (InMemoryStore sets both times
  anew); values come back as JSON gives them (tuples as lists, a new dict at
  every read); TTLs are not supported (``supports_ttl`` is False).
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

try:
    import langgraph.store.base  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError('LodvizStore needs LangGraph: pip install "lodviz[langgraph]".') from exc
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from lodviz.errors import InvalidInput, InvalidParameters, MemoryNotFound, StoreError
from lodviz.ingest.inputs import MAX_METADATA_DEPTH, MemoryInput, parse_record
from lodviz.memory import Memory
from lodviz.params import DEFAULT_BUDGET_ARG, BudgetArg
from lodviz.result import Hit

NAMESPACE = "langgraph_namespace"
KEY = "langgraph_key"
VALUE = "langgraph_value"
CREATED = "langgraph_created_at"
UPDATED = "langgraph_updated_at"
TEXT_FIELD = "langgraph_text_field"
#: The ``source`` of every memory this store writes.
SOURCE = "langgraph"
#: The value fields a memory's text is taken from by default, in this order.
TEXT_FIELDS = ("text", "content", "memory")
#: What makes the text of a second item of one agent with the same text differ for ``content_hash``
#: (U+2063 INVISIBLE SEPARATOR: not whitespace, which the hash folds; removed from search results).
MARK = "\u2063"
#: Labels metadata of this many memories at a time, when reading what the store holds.
_READ_BATCH = 1000
#: The keys of a query search's item value that are not the text.
_RESERVED = ("tier", "id", "superseded_by", "conflicts")


@dataclass(frozen=True)
class _Entry:
    """One LangGraph item as its memory's metadata keeps it."""

    memory_id: int
    namespace: tuple[str, ...]
    key: str
    value_json: str
    created_at: datetime
    updated_at: datetime
    text_field: str | None

    def value(self) -> dict[str, Any]:
        """The value as it was put (a new dict at every call)."""
        value: dict[str, Any] = json.loads(self.value_json)
        return value

    @property
    def order(self) -> tuple[datetime, int]:
        return self.created_at, self.memory_id


def _entry(memory_id: int, metadata: Mapping[str, Any]) -> _Entry | None:
    """The item a memory's metadata names, None for a memory that is not one (or whose metadata is not whole)."""
    namespace, key, value = metadata.get(NAMESPACE), metadata.get(KEY), metadata.get(VALUE)
    if not (isinstance(namespace, list) and namespace and all(isinstance(s, str) for s in namespace)):
        return None
    if not isinstance(key, str) or not isinstance(value, str):
        return None
    field = metadata.get(TEXT_FIELD)
    try:
        created = datetime.fromisoformat(str(metadata.get(CREATED)))
        updated = datetime.fromisoformat(str(metadata.get(UPDATED)))
        if not isinstance(json.loads(value), dict):
            return None
    except ValueError:
        return None
    return _Entry(int(memory_id), tuple(namespace), key, value, created, updated, field if isinstance(field, str) else None)


class _Items:
    """The items the store holds at one moment: by namespace and key, by memory id, in order."""

    def __init__(self, entries: Iterable[_Entry]) -> None:
        claims: dict[tuple[tuple[str, ...], str], list[_Entry]] = {}
        for entry in entries:
            claims.setdefault((entry.namespace, entry.key), []).append(entry)
        # One memory per item; two claim one only when a replacement was cut short (or raced):
        # the newest is the item, the others are forgotten at the item's next put or delete.
        for found in claims.values():
            found.sort(key=lambda e: (e.updated_at, e.memory_id), reverse=True)
        self._claims = claims
        self.by_id = {found[0].memory_id: found[0] for found in claims.values()}

    def get(self, namespace: tuple[str, ...], key: str) -> _Entry | None:
        found = self._claims.get((namespace, key))
        return found[0] if found else None

    def claimants(self, namespace: tuple[str, ...], key: str) -> list[_Entry]:
        return list(self._claims.get((namespace, key), ()))

    def ordered(self) -> list[_Entry]:
        """The items grouped by namespace, oldest namespace first, each namespace's items oldest first."""
        groups: dict[tuple[str, ...], list[_Entry]] = {}
        for entry in self.by_id.values():
            groups.setdefault(entry.namespace, []).append(entry)
        for group in groups.values():
            group.sort(key=lambda e: e.order)
        return [entry for group in sorted(groups.values(), key=lambda g: g[0].order) for entry in group]

    def namespaces(self) -> list[tuple[str, ...]]:
        return list({entry.namespace for entry in self.by_id.values()})


class _Index:
    """What this process has read of the store's LangGraph items.

    A memory's metadata is written once, so each live memory's is read once
    (``Memory.labels``); ``Memory.columns`` tells at every call which memories
    are live, so a memory written or forgotten elsewhere is seen at the next.
    """

    def __init__(self, memory: Memory) -> None:
        self._memory = memory
        self._read = np.empty(0, dtype=np.int64)  # sorted ids whose metadata was read
        self._entries: dict[int, _Entry] = {}

    def current(self) -> _Items:
        columns = self._memory.columns()
        live = np.asarray(columns.ids[~columns.forgotten], dtype=np.int64)
        unread = np.setdiff1d(live, self._read, assume_unique=True)
        for start in range(0, len(unread), _READ_BATCH):
            chunk = [int(i) for i in unread[start : start + _READ_BATCH]]
            for memory_id, label in self._memory.labels(chunk).items():
                entry = _entry(memory_id, label.metadata)
                if entry is not None:
                    self._entries[memory_id] = entry
        self._read = np.union1d(self._read, unread)
        if self._entries:
            known = np.fromiter(self._entries, dtype=np.int64, count=len(self._entries))
            for memory_id in known[~np.isin(known, live)].tolist():  # forgotten: never live again
                del self._entries[memory_id]
        return _Items(self._entries.values())

    def wrote(self, entry: _Entry) -> None:
        """Note a memory this store just wrote, so that its metadata need not be read back."""
        self._entries[entry.memory_id] = entry
        self._read = np.union1d(self._read, np.asarray([entry.memory_id], dtype=np.int64))


@dataclass
class _Put:
    """A put checked and made ready to write: its memory's fields, and the memories it replaces."""

    namespace: tuple[str, ...]
    key: str
    agent_id: str
    text: str  # "" for a delete
    fields: dict[str, Any]  # the memory's fields but its text; empty for a delete
    entry: _Entry | None  # the item as it will be, but for its memory id; None for a delete
    replaces: list[_Entry]


class LodvizStore(BaseStore):
    """LangGraph's long-term memory store over a lodviz ``Memory`` (the module docstring is its contract).

    ``budget_tokens``: what a search with a query may return, in real tokens
    (``"default"``: the agent's profile budget; None: the whole landscape).
    ``agent_label``: which namespace label is the lodviz agent. ``index``:
    ``{"fields": [...]}``, the value fields a memory's text is taken from.
    ``actor``: who the audit log says acted (default: the item's agent).
    """

    supports_ttl = False

    def __init__(
        self,
        memory: Memory,
        *,
        budget_tokens: BudgetArg = DEFAULT_BUDGET_ARG,
        agent_label: int = 0,
        index: IndexConfig | None = None,
        actor: str | None = None,
    ) -> None:
        if not isinstance(memory, Memory):
            raise InvalidParameters(f"LodvizStore wraps a lodviz Memory (lodviz.open(...)), got {type(memory).__name__}.")
        if budget_tokens is not None and budget_tokens != DEFAULT_BUDGET_ARG and (
            isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 1
        ):
            raise InvalidParameters(f'budget_tokens must be a whole number of tokens, "default" or None, got {budget_tokens!r}.')
        if isinstance(agent_label, bool) or not isinstance(agent_label, int) or agent_label < 0:
            raise InvalidParameters(f"agent_label must be a namespace position (0 or more), got {agent_label!r}.")
        fields: list[str] | None = None
        if index is not None:
            other = sorted(set(index) - {"fields"})
            if other:
                raise InvalidParameters(
                    f"LodvizStore's index takes only 'fields': lodviz embeds with the Memory's own model (got {', '.join(other)})."
                )
            given = index.get("fields")
            if given is not None and (not isinstance(given, list) or not all(isinstance(f, str) and f for f in given)):
                raise InvalidParameters(f"index fields must be a list of paths, got {given!r}.")
            fields = list(given) if given else None
        self.memory = memory
        self.budget_tokens = budget_tokens
        self.agent_label = agent_label
        self.fields = fields
        self.actor = actor
        self._index = _Index(memory)
        self._lock = threading.RLock()  # one batch at a time: the index and a replacement's two writes

    # -- BaseStore -----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; as in InMemoryStore, reads see the store as it was before the batch's
        puts, and of several puts of one item the last is the one written."""
        ops = list(ops)
        for op in ops:
            if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
                raise ValueError(f"Unknown operation type: {type(op)}")
            validate_op_namespace(op)
        with self._lock:
            items = self._index.current()
            results: list[Result] = []
            puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(items, op))
                elif isinstance(op, SearchOp):
                    results.append(self._search(items, op))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(items, op))
                else:
                    puts[(tuple(op.namespace), str(op.key))] = op
                    results.append(None)
            if puts:
                ready = [self._prepare(items, op) for op in puts.values()]  # every put checked before any is written
                for put in ready:
                    self._write(put)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread: the Memory's calls block."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- reads -----------------------------------------------------------------------------

    def _get(self, items: _Items, op: GetOp) -> Item | None:
        entry = items.get(tuple(op.namespace), str(op.key))
        if entry is None:
            return None
        return Item(value=entry.value(), key=entry.key, namespace=entry.namespace, created_at=entry.created_at,
                    updated_at=entry.updated_at)

    def _search(self, items: _Items, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if op.query:
            return self._query(items, op, prefix)
        found = [e for e in items.ordered() if e.namespace[: len(prefix)] == prefix and _matches(e.value(), op.filter)]
        return [
            SearchItem(namespace=e.namespace, key=e.key, value=e.value(), created_at=e.created_at, updated_at=e.updated_at)
            for e in found[op.offset : op.offset + op.limit]
        ]

    def _query(self, items: _Items, op: SearchOp, prefix: tuple[str, ...]) -> list[SearchItem]:
        """A lodviz search for the prefix's agent: its items at their tiers, within the budget; counted as any search is."""
        if op.limit <= 0:
            return []
        offset = max(op.offset, 0)
        agent = prefix[self.agent_label] if len(prefix) > self.agent_label else None
        assert op.query is not None
        result = self.memory.search(op.query, agent_id=agent, k=offset + op.limit, budget_tokens=self.budget_tokens,
                                    actor=self.actor or agent)
        hits: list[tuple[Hit, _Entry]] = []
        for hit in result.items:
            entry = items.by_id.get(int(hit.id))
            if entry is None or entry.namespace[: len(prefix)] != prefix or not _matches(entry.value(), op.filter):
                continue
            hits.append((hit, entry))
        return [_search_item(hit, entry) for hit, entry in hits[offset : offset + op.limit]]

    def _list_namespaces(self, items: _Items, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = items.namespaces()
        if op.match_conditions:
            spaces = [ns for ns in spaces if all(_does_match(c, ns) for c in op.match_conditions)]
        if op.max_depth is not None:
            spaces = sorted({ns[: op.max_depth] for ns in spaces})
        else:
            spaces = sorted(spaces)
        return spaces[op.offset : op.offset + op.limit]

    # -- writes ----------------------------------------------------------------------------

    def _prepare(self, items: _Items, op: PutOp) -> _Put:
        """A put checked whole (namespace, agent, value, text, the memory's fields) before anything is written."""
        namespace, key = tuple(op.namespace), str(op.key)
        where = f"LangGraph item {namespace!r} {key!r}"
        if op.ttl is not None:
            raise NotImplementedError("TTL is not supported by LodvizStore. Use ttl=None.")
        replaces = items.claimants(namespace, key)
        if op.value is None:  # a delete: of whatever is there, under any namespace
            return _Put(namespace, key, "", "", {}, None, replaces)
        if not namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if namespace[0] == "langgraph":
            raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')
        if len(namespace) <= self.agent_label:
            raise InvalidInput(
                f"{where}: the namespace needs at least {self.agent_label + 1} labels (label {self.agent_label} is the lodviz agent)."
            )
        agent = namespace[self.agent_label]
        now = datetime.now(UTC)
        value_json = _value_json(op.value, where)
        value = json.loads(value_json)
        if op.index is not None and op.index is not False and not (
            isinstance(op.index, list) and all(isinstance(p, str) and p for p in op.index)
        ):
            raise InvalidInput(f"{where}: index must be False, None or a list of paths, got {op.index!r}.")
        paths = op.index if isinstance(op.index, list) else self.fields
        text, field = _text_of(value, paths)
        created = replaces[0].created_at if replaces else now
        metadata: dict[str, Any] = {
            NAMESPACE: list(namespace), KEY: key, VALUE: value_json, CREATED: created.isoformat(), UPDATED: now.isoformat(),
        }
        if field is not None:
            metadata[TEXT_FIELD] = field
        fields = {"agent_id": agent, "source": SOURCE, "created_at": now, "metadata": metadata}
        try:
            parse_record({"text": text, **fields})
        except InvalidInput as exc:
            raise InvalidInput(f"{where} cannot be stored: {exc}") from exc
        return _Put(namespace, key, agent, text, fields, _Entry(0, namespace, key, value_json, created, now, field), replaces)

    def _write(self, put: _Put) -> None:
        """Write a put's memory, then forget the memories it replaces (or only forget them, for a delete)."""
        if put.entry is None:  # a delete
            for old in put.replaces:
                self._forget(old.memory_id, "deleted through LangGraph", self.actor or old.namespace[self.agent_label])
            return
        actor = self.actor or put.agent_id
        pending: dict[int, str] = {}
        for old in put.replaces:
            try:
                pending[old.memory_id] = self.memory.get(old.memory_id).content_hash
            except MemoryNotFound:  # forgotten meanwhile
                continue
        # The text again with one more mark each time it is the text of another live memory of the agent.
        for marks in range(len(self.memory) + 1):
            record: MemoryInput = parse_record({"text": put.text + MARK * marks, **put.fields})
            same = record.content_hash()
            for memory_id in [m for m, h in pending.items() if h == same]:  # the item's own text: forget it first
                self._forget(memory_id, "replaced through LangGraph", actor)
                del pending[memory_id]
            report = self.memory.add_many([record], actor=actor)
            if report.added:
                memory_id = report.added[0]
                break
        else:  # pragma: no cover - every mark can only collide with another memory, and there are fewer
            raise StoreError(f"LangGraph item {put.namespace!r} {put.key!r}: its text could not be written.")
        entry = put.entry
        self._index.wrote(_Entry(memory_id, entry.namespace, entry.key, entry.value_json, entry.created_at, entry.updated_at,
                                 entry.text_field))
        for old_id in pending:
            self._forget(old_id, "replaced through LangGraph", actor)

    def _forget(self, memory_id: int, reason: str, actor: str) -> None:
        try:
            self.memory.forget(memory_id, reason=reason, actor=actor)
        except MemoryNotFound:  # forgotten meanwhile: what was asked is done
            pass


# -- values and texts ----------------------------------------------------------------------


def _value_json(value: Any, where: str) -> str:
    """``value`` as the JSON text kept in metadata; ``InvalidInput`` naming the first part JSON cannot keep."""
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{where}: the value must be a mapping (a dict), got {type(value).__name__}.")
    problem = _unstorable(value)
    if problem is not None:
        raise InvalidInput(f"{where} cannot be stored: {problem}; a value must be JSON (objects with string keys, "
                           "lists, strings, finite numbers, booleans, null).")
    return json.dumps(_plain(value), ensure_ascii=False, allow_nan=False)


def _unstorable(value: Any) -> str | None:
    """Where ``value`` holds something JSON cannot keep exactly, None if nowhere (walked without recursion)."""
    stack: list[tuple[Any, str, int]] = [(value, "value", 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, Mapping):
            if depth > MAX_METADATA_DEPTH:
                return f"it is nested more than {MAX_METADATA_DEPTH} levels deep"
            for name, child in node.items():
                if not isinstance(name, str):
                    return f"{path} has the key {name!r}, which is not a string"
                stack.append((child, f"{path}[{name!r}]", depth + 1))
        elif isinstance(node, (list, tuple)):
            if depth > MAX_METADATA_DEPTH:
                return f"it is nested more than {MAX_METADATA_DEPTH} levels deep"
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(node))
        elif isinstance(node, float):
            if not math.isfinite(node):
                return f"{path} is {node!r}, which JSON cannot keep"
        elif node is not None and not isinstance(node, (str, int, bool)):
            return f"{path} is a {type(node).__name__}, which is not JSON"
    return None


def _plain(value: Any) -> Any:
    """``value`` with every mapping a dict and every tuple a list (what ``json.dumps`` writes them as)."""
    if isinstance(value, Mapping):
        return {name: _plain(child) for name, child in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(child) for child in value]
    return value


def _text_of(value: dict[str, Any], paths: Sequence[str] | None) -> tuple[str, str | None]:
    """The memory text of a value (the module docstring's rule), and the one top-level field it came from."""
    if paths:
        texts = [text for path in paths for text in get_text_at_path(value, path) if text.strip()]
        if texts:
            whole_field = len(paths) == 1 and len(texts) == 1 and tokenize_path(paths[0]) == [paths[0]] and paths[0] in value
            return "\n".join(texts), _field_name(paths[0]) if whole_field else None
    for name in TEXT_FIELDS:
        text = value.get(name)
        if isinstance(text, str) and text.strip():
            return text, name
    if len(value) == 1:
        ((name, text),) = value.items()
        if isinstance(text, str) and text.strip():
            return text, _field_name(name)
    return json.dumps(value, ensure_ascii=False), None


def _field_name(name: str | None) -> str | None:
    """The key a query search's item carries the text under: the field's own, unless a reserved one."""
    return None if name is None or name in _RESERVED else name


def _search_item(hit: Hit, entry: _Entry) -> SearchItem:
    value: dict[str, Any] = {entry.text_field or "text": hit.content.replace(MARK, ""), "tier": hit.tier.name, "id": f"#{hit.id}"}
    if hit.superseded_by is not None:
        value["superseded_by"] = f"#{hit.superseded_by}"
    if hit.conflicts:
        value["conflicts"] = [f"#{c}" for c in hit.conflicts]
    return SearchItem(namespace=entry.namespace, key=entry.key, value=value, created_at=entry.created_at,
                      updated_at=entry.updated_at, score=float(hit.score))


# -- filters and namespace conditions, as InMemoryStore applies them ------------------------


def _matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    if not filter:
        return True
    return all(_compare(value.get(name), wanted) for name, wanted in filter.items())


def _compare(value: Any, wanted: Any) -> bool:
    """A filter's value against an item's: nested objects field by field, lists element by element, ``$`` operators."""
    if isinstance(wanted, dict):
        if any(name.startswith("$") for name in wanted):
            return all(_operator(value, name, operand) for name, operand in wanted.items())
        if not isinstance(value, dict):
            return False
        return all(_compare(value.get(name), inner) for name, inner in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(wanted)
            and all(_compare(v, w) for v, w in zip(value, wanted))
        )
    return bool(value == wanted)


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    if operator not in _ORDERINGS:
        raise ValueError(f"Unsupported operator: {operator}")
    try:
        a, b = float(value), float(operand)
    except (TypeError, ValueError):  # a missing field, or no number: no match (InMemoryStore raises)
        return False
    return _ORDERINGS[operator](a, b)


_ORDERINGS: dict[str, Callable[[float, float], bool]] = {
    "$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__,
}


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """A prefix or suffix condition ("*" matches any label) against a namespace."""
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path))
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(want == "*" or label == want for label, want in pairs)


__all__ = ["LodvizStore", "MARK"]
