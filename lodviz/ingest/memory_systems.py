"""Readers for other memory systems' own files: mem0, MemPalace, Letta agent files.

Each reads what that system itself writes, and turns it into ``MemoryInput`` records under
the contract of ``lodviz.ingest.transcripts``: every record is checked as
``lodviz.ingest.inputs.parse_record`` checks it, and the whole file is read, before anything
is written; a malformed file is refused with one ``ImportFormatError`` that names the file
and the place in it. Re-running an import adds nothing: a memory is its agent and text
(``MemoryInput.content_hash``), and a record is made the same way from the same original.

What each original becomes (every record's metadata says where it came from: ``system``,
``original_id``, the original's own user and agent ids and its times; ``created_at`` is the
original's creation time):

- ``mem0``: what mem0's ``Memory.get_all()`` returns, written to a JSON file
  (``{"results": [...]}``, or the bare list the hosted API gives): one memory per mem0
  memory, kind ``note``. Its text is mem0's ``memory``; metadata keeps mem0's ``id`` and
  ``hash``, ``user_id``, ``agent_id``, ``run_id``, ``actor_id``, ``role``, ``updated_at``,
  ``categories`` and mem0's own ``metadata`` (as ``original_metadata``).
- ``mempalace``: a MemPalace palace, the folder that holds its ``chroma.sqlite3`` (or that
  file): one memory per drawer of the ``mempalace_drawers`` collection, read from the
  SQLite file with the standard library (no chromadb needed; the file is opened read-only).
  Conversation drawers (``ingest_mode`` convos) are kind ``turn``, all others ``document``;
  metadata keeps the drawer id, ``wing``, ``room``, ``hall``, ``added_by``, ``source_file``,
  ``filed_at`` and the drawer's other metadata. The closets (MemPalace's index of the drawers)
  are not memories and are left out. ``created_at`` is the drawer's ``authored_at``, else its
  ``filed_at`` (MemPalace writes local time without a zone; lodviz reads it as UTC).
- ``letta``: a Letta agent file (``.af``; the current schema with ``agents`` and ``blocks``,
  and the older one-agent schema with ``core_memory``): each core memory block is a memory of
  kind ``note`` (its ``label`` in metadata), each message of the history a ``turn`` (what the
  agent sent the user through ``send_message`` is its text; its inner thoughts and reasoning
  are left out), a tool's answer a ``tool_result`` (except send_message's receipts), and
  archival passages, where a file has them (``passages``; Letta's schema has none yet), are
  ``document``s. System messages (the system prompt with the blocks rendered into it) and
  heartbeat or login events are bookkeeping and are left out.

Records are written for lodviz's agent ``mem0``, ``mempalace`` or ``letta`` unless the import
names one (``--agent``). One text that appears twice in one export (the same memory for two
mem0 users, one block shared by two Letta agents) is one lodviz memory, whose metadata lists
the other originals under ``also`` (the first ``MAX_ALSO``; ``also_more`` counts the rest).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from lodviz.errors import ImportFormatError
from lodviz.ingest.inputs import MemoryInput, json_value
from lodviz.ingest.transcripts import TOOL_INPUT_CHARS, Parsed, _json_text, _load_json, _record, _time

#: A palace's SQLite file, as Chroma names it in the palace folder.
CHROMA_FILE = "chroma.sqlite3"
#: The collection of MemPalace's drawers (its closets are another collection).
DRAWERS = "mempalace_drawers"
SQLITE_HEADER = b"SQLite format 3\x00"
#: Above this size a .json file is read whole only when its beginning could be mem0's or Letta's.
SNIFF_BYTES = 1 << 20
#: Keys of a record's metadata that ``also`` repeats for each further original of the same text.
#: How many further originals ``also`` lists (a text said a thousand times is counted past these in ``also_more``).
MAX_ALSO = 20
PROVENANCE = ("original_id", "user_id", "agent_id", "run_id", "agent_name", "label", "wing", "room", "original_created_at")


def _meta(**values: Any) -> dict[str, Any]:
    """Metadata without the keys whose value is missing or empty."""
    return {k: v for k, v in values.items() if v is not None and v != "" and v != [] and v != {}}


def _one_per_text(records: list[MemoryInput]) -> list[MemoryInput]:
    """The records, one per agent and text: a later original of the same text is listed in the first one's ``also``."""
    first: dict[str, MemoryInput] = {}
    out = []
    for record in records:
        kept = first.setdefault(record.content_hash(), record)
        if kept is record:
            out.append(record)
        elif len(also := kept.metadata.setdefault("also", [])) < MAX_ALSO:
            also.append({k: record.metadata[k] for k in PROVENANCE if k in record.metadata})
        else:
            kept.metadata["also_more"] = kept.metadata.get("also_more", 0) + 1
    return out


# -- mem0 ----------------------------------------------------------------------------------------------

_MEM0_LIFTED = ("user_id", "agent_id", "run_id", "actor_id", "role", "categories", "expiration_date")


def _mem0_items(data: Any) -> list[Any] | None:
    """The memory list of a mem0 dump (``{"results": [...]}``, ``{"memories": [...]}`` or a bare list), None if it is none."""
    items = data.get("results", data.get("memories")) if isinstance(data, Mapping) else data
    return items if isinstance(items, list) else None


def read_mem0(path: Path, defaults: Mapping[str, Any] | None = None) -> Parsed:
    items = _mem0_items(_load_json(path))
    if items is None:
        raise ImportFormatError(f"{path.name}: a mem0 export is what Memory.get_all() returns: {{\"results\": [...]}} or a list of memories.")
    parsed = Parsed()
    defaults = {"agent_id": "mem0", "kind": "note", **(defaults or {})}
    records = []
    for number, item in enumerate(items, start=1):
        where = f"{path.name} memory {number}"
        if not isinstance(item, Mapping) or not isinstance(item.get("memory"), str):
            raise ImportFormatError(f"{where}: expected a mem0 memory, an object with its 'memory' text.")
        if not item["memory"].strip():
            parsed.skipped.append(f"{where}: empty")
            continue
        given = item.get("metadata")
        if given is not None and not isinstance(given, Mapping):
            raise ImportFormatError(f"{where}: its metadata is not an object.")
        scope = [str(item[k]) for k in ("user_id", "agent_id", "run_id") if item.get(k)]
        records.append(_record({
            "text": item["memory"],
            "created_at": _time(item.get("created_at")),
            "source": "mem0:" + "/".join(scope) if scope else "mem0",
            "metadata": _meta(system="mem0", original_id=item.get("id"), hash=item.get("hash"),
                              original_created_at=item.get("created_at"), updated_at=item.get("updated_at"),
                              **{k: item.get(k) for k in _MEM0_LIFTED}, original_metadata=dict(given or {})),
        }, where, defaults))
    parsed.records = _one_per_text(records)
    return parsed


# -- MemPalace (a Chroma palace, read from its SQLite file) --------------------------------------------


def _chroma_file(path: Path) -> Path:
    return path / CHROMA_FILE if path.is_dir() else path


def _sqlite_value(string: Any, integer: Any, real: Any, boolean: Any) -> Any:
    """One metadata value as Chroma stores it: in the column of its type."""
    if string is not None:
        return string
    if integer is not None:
        return integer
    if real is not None:
        return real
    return None if boolean is None else bool(boolean)


def _metadata_rows(connection: sqlite3.Connection, table: str) -> sqlite3.Cursor:
    """(embedding row id, key, string, int, float, bool value) of the drawers' metadata in ``table``, in the order written."""
    return connection.execute(
        f"SELECT m.id, m.key, m.string_value, m.int_value, m.float_value, m.bool_value FROM {table} m "
        "JOIN embeddings e ON m.id = e.id JOIN segments s ON e.segment_id = s.id JOIN collections c ON s.collection = c.id "
        "WHERE c.name = ? AND s.scope = 'METADATA' ORDER BY m.rowid",
        (DRAWERS,),
    )


def _drawers(database: Path) -> list[tuple[str, dict[str, Any]]]:
    """(drawer id, metadata with its document under ``chroma:document``) of every drawer, in filing order."""
    connection = sqlite3.connect(database.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"collections", "segments", "embeddings", "embedding_metadata"} <= tables:
            raise ImportFormatError(f"{database.name}: a SQLite file but not a Chroma database (no collections or embeddings tables).")
        names = [row[0] for row in connection.execute("SELECT name FROM collections")]
        if DRAWERS not in names:
            raise ImportFormatError(
                f"{database.name}: a Chroma database without MemPalace's '{DRAWERS}' collection"
                + (f" (it holds {', '.join(sorted(names))})." if names else " (it holds no collections).")
            )
        rows = connection.execute(
            "SELECT e.id, e.embedding_id FROM embeddings e JOIN segments s ON e.segment_id = s.id "
            "JOIN collections c ON s.collection = c.id WHERE c.name = ? AND s.scope = 'METADATA' ORDER BY e.id",
            (DRAWERS,),
        ).fetchall()
        drawers: dict[int, tuple[str, dict[str, Any]]] = {row_id: (str(drawer_id), {}) for row_id, drawer_id in rows}
        for row_id, key, *value in _metadata_rows(connection, "embedding_metadata"):
            if row_id in drawers:
                drawers[row_id][1][key] = _sqlite_value(*value)
        if "embedding_metadata_array" in tables:  # list values (Chroma 1.5 and later)
            for row_id, key, *value in _metadata_rows(connection, "embedding_metadata_array"):
                if row_id in drawers:
                    listed = drawers[row_id][1].setdefault(key, [])
                    if isinstance(listed, list):
                        listed.append(_sqlite_value(*value))
        return list(drawers.values())
    finally:
        connection.close()


def read_mempalace(path: Path, defaults: Mapping[str, Any] | None = None) -> Parsed:
    database = _chroma_file(path)
    if not database.is_file():
        raise ImportFormatError(f"{path.name}: no {CHROMA_FILE} here; a MemPalace palace is the folder that holds it.")
    try:
        drawers = _drawers(database)
    except sqlite3.Error as exc:
        raise ImportFormatError(f"{database.name}: not a readable Chroma database ({exc}).") from None
    parsed = Parsed()
    defaults = {"agent_id": "mempalace", **(defaults or {})}
    records = []
    for drawer_id, stored in drawers:
        where = f"{database.name} drawer {drawer_id}"
        text = stored.pop("chroma:document", None)
        if not isinstance(text, str) or not text.strip():
            parsed.skipped.append(f"{where}: no text")
            continue
        original = {k: v for k, v in stored.items() if not k.startswith("chroma:")}
        wing, room, hall = original.pop("wing", None), original.pop("room", None), original.pop("hall", None)
        added_by, source_file = original.pop("added_by", None), original.pop("source_file", None)
        filed_at, authored_at = original.pop("filed_at", None), original.pop("authored_at", None)
        records.append(_record({
            "text": text,
            "kind": "turn" if original.get("ingest_mode") == "convos" else "document",
            "created_at": _time(authored_at) or _time(filed_at),
            "source": "mempalace:" + "/".join(str(p) for p in (wing, room) if p) if wing or room else "mempalace",
            "metadata": _meta(system="mempalace", original_id=drawer_id, wing=wing, room=room, hall=hall, added_by=added_by,
                              source_file=source_file, filed_at=filed_at, authored_at=authored_at,
                              original_created_at=authored_at or filed_at, original_metadata=original),
        }, where, defaults))
    parsed.records = _one_per_text(records)
    return parsed


# -- Letta agent files (.af) -----------------------------------------------------------------------------

_BOOKKEEPING = {"heartbeat", "login", "system_alert"}  # events MemGPT-style agents log as user messages
_REPLY_TOOL = "send_message"


def _letta_file(path: Path) -> Mapping[str, Any]:
    data = _load_json(path)
    if isinstance(data, str):  # some published .af files are a JSON string holding the agent file's JSON
        data, problem = json_value(data)
        if problem:
            raise ImportFormatError(f"{path.name}: a JSON string that is not an agent file ({problem}).")
    if not isinstance(data, Mapping) or not (isinstance(data.get("agents"), list) or "core_memory" in data):
        raise ImportFormatError(f"{path.name}: a Letta agent file is an object with 'agents' and 'blocks' (or, in the older schema, 'core_memory').")
    return data


def _list(value: Any, where: str, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ImportFormatError(f"{where}: '{what}' is not a list.")
    return value


def _parts_text(content: Any) -> str:
    """The visible text of a Letta message's content: its text parts (reasoning, tool parts and images are left out)."""
    if isinstance(content, str):
        return content
    parts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping) and part.get("type", "text") == "text" and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "\n".join(p for p in parts if p.strip())


def _user_text(text: str) -> tuple[str, str | None]:
    """(the user's words, the event type) of a user message; MemGPT-style agents wrap them in JSON."""
    if not text.lstrip().startswith("{"):
        return text, None
    value, problem = json_value(text)
    if problem or not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        return text, None
    message = value.get("message")
    return (message if isinstance(message, str) else ""), value["type"]


def _arguments(call: Mapping[str, Any]) -> tuple[str, Any]:
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    raw = function.get("arguments")
    arguments = json_value(raw)[0] if isinstance(raw, str) else raw
    return str(function.get("name") or "tool"), arguments if arguments is not None else raw


class _LettaReader:
    def __init__(self, path: Path, defaults: Mapping[str, Any] | None) -> None:
        self.path = path
        self.defaults = {"agent_id": "letta", **(defaults or {})}
        self.records: list[MemoryInput] = []
        self.parsed = Parsed()

    def add(self, where: str, text: str, kind: str, when: Any, source: str, metadata: dict[str, Any]) -> None:
        self.records.append(_record({"text": text, "kind": kind, "created_at": _time(when), "source": source,
                                     "metadata": _meta(system="letta", original_created_at=when, **metadata)}, where, self.defaults))

    def read(self) -> Parsed:
        data = _letta_file(self.path)
        name = self.path.name
        file_time = data.get("created_at")
        if "core_memory" in data:  # the older schema: the file is one agent
            agents = [(f"{name} agent", data, _list(data.get("core_memory"), name, "core_memory"))]
        else:
            blocks = {}
            for number, block in enumerate(_list(data.get("blocks"), name, "blocks"), start=1):
                if not isinstance(block, Mapping):
                    raise ImportFormatError(f"{name} block {number}: not an object.")
                blocks[str(block.get("id", number))] = block
            agents = []
            used: set[str] = set()
            for number, agent in enumerate(data["agents"], start=1):
                where = f"{name} agent {number}"
                if not isinstance(agent, Mapping):
                    raise ImportFormatError(f"{where}: not an object.")
                ids = [str(i) for i in _list(agent.get("block_ids"), where, "block_ids")]
                missing = [i for i in ids if i not in blocks]
                if missing:
                    raise ImportFormatError(f"{where}: block_ids names {missing[0]!r}, which the file's blocks do not hold.")
                used.update(ids)
                agents.append((where, agent, [blocks[i] for i in ids] + _list(agent.get("memory_blocks"), where, "memory_blocks")))
            unowned = [b for i, b in blocks.items() if i not in used]
            if unowned:
                agents.append((f"{name} blocks", {}, unowned))
        for where, agent, agent_blocks in agents:
            self.agent(where, agent, agent_blocks, file_time)
        if "core_memory" not in data:  # passages beside the agents (in the older schema the file is the agent: read above)
            for number, passage in enumerate(_list(data.get("passages"), name, "passages"), start=1):
                self.passage(f"{name} passage {number}", passage, {}, file_time)
        self.parsed.records = _one_per_text(self.records)
        return self.parsed

    def agent(self, where: str, agent: Mapping[str, Any], blocks: list[Any], file_time: Any) -> None:
        agent_name = agent.get("name")
        agent_name = str(agent_name) if agent_name else None
        who = _meta(agent_id=agent.get("id") or agent.get("agent_id"), agent_name=agent_name, agent_type=agent.get("agent_type"))
        base = f"letta:{agent_name}" if agent_name else "letta"
        agent_time = agent.get("created_at") or file_time
        for number, block in enumerate(blocks, start=1):
            at = f"{where} block {number}"
            if not isinstance(block, Mapping) or not isinstance(block.get("value"), str):
                raise ImportFormatError(f"{at}: expected a memory block with its 'value' text.")
            if not block["value"].strip():
                self.parsed.skipped.append(f"{at} ({block.get('label')}): empty")
                continue
            label = block.get("label")
            extra = block.get("metadata", block.get("metadata_"))
            self.add(at, block["value"], "note", block.get("created_at") or agent_time, f"{base}/{label}" if label else base,
                     _meta(original_id=block.get("id"), label=label, description=block.get("description"), **who,
                           read_only=block.get("read_only") or None, updated_at=block.get("updated_at"),
                           original_metadata=dict(extra) if isinstance(extra, Mapping) else None))
        replies: set[str] = set()  # tool_call ids of send_message, whose receipts are not memories
        tools: dict[str, str] = {}
        # A MemGPT-style agent speaks only through send_message: the text of its messages is its inner monologue.
        monologue = str(agent.get("agent_type") or "").startswith("memgpt")
        for number, message in enumerate(_list(agent.get("messages"), where, "messages"), start=1):
            self.message(f"{where} message {number}", message, number, who, base, replies, tools, monologue)
        for number, passage in enumerate(_list(agent.get("passages"), where, "passages"), start=1):
            self.passage(f"{where} passage {number}", passage, who, agent_time)

    def message(self, at: str, message: Any, number: int, who: dict[str, Any], source: str,
                replies: set[str], tools: dict[str, str], monologue: bool) -> None:
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise ImportFormatError(f"{at}: expected a message with a 'role'.")
        role = message["role"]
        content = message.get("content")
        text = _parts_text(content) if content is not None else str(message.get("text") or "")
        meta = _meta(original_id=message.get("id"), position=number, role=role, **who, model=message.get("model"),
                     name=message.get("name"))
        when = message.get("created_at")
        if role == "system":
            return  # the system prompt with the memory blocks rendered into it: the blocks are imported themselves
        if role == "user":
            text, event = _user_text(text)
            if event in _BOOKKEEPING:
                return
        if role in ("tool", "function"):
            call_id = message.get("tool_call_id")
            if call_id in replies:
                return  # send_message's receipt ("status OK")
            if not text.strip():
                returns = [r.get("func_response") for r in _list(message.get("tool_returns"), at, "tool_returns") if isinstance(r, Mapping)]
                text = "\n".join(r for r in returns if isinstance(r, str))
            if text.strip() and text.strip() != "None":  # "None": what Letta shows for a tool that returns nothing
                self.add(at, text, "tool_result", when, source, {**meta, "tool": tools.get(str(call_id), "tool"), "tool_call_id": call_id})
            return
        calls = [c for c in _list(message.get("tool_calls"), at, "tool_calls") if isinstance(c, Mapping)]
        said, called = [], []
        for call in calls:
            tool, arguments = _arguments(call)
            tools[str(call.get("id"))] = tool
            if tool == _REPLY_TOOL:
                replies.add(str(call.get("id")))
                words = arguments.get("message") if isinstance(arguments, Mapping) else None
                if isinstance(words, str) and words.strip():
                    said.append(words)
            else:
                called.append(f"[called {tool}: {_json_text(arguments)[:TOOL_INPUT_CHARS]}]")
        if said or (monologue and role == "assistant"):
            text = "\n".join(said)  # what the agent sent; the text beside it is its inner monologue
        if called:
            text = (text + "\n" if text.strip() else "") + "\n".join(called)
            meta["tools"] = [tools[str(c.get("id"))] for c in calls if tools.get(str(c.get("id"))) != _REPLY_TOOL]
        if text.strip():
            self.add(at, text, "turn", when, source, meta)

    def passage(self, at: str, passage: Any, who: dict[str, Any], fallback_time: Any) -> None:
        text = passage.get("text", passage.get("content")) if isinstance(passage, Mapping) else None
        if not isinstance(passage, Mapping) or not isinstance(text, str):
            raise ImportFormatError(f"{at}: expected an archival passage with its 'text'.")
        if not text.strip():
            self.parsed.skipped.append(f"{at}: empty")
            return
        name = who.get("agent_name")
        tags = passage.get("tags")
        self.add(at, text, "document", passage.get("created_at") or fallback_time, f"letta:{name}/archival" if name else "letta:archival",
                 _meta(original_id=passage.get("id"), **who, archive_id=passage.get("archive_id"),
                       tags=list(tags) if isinstance(tags, list) else None, updated_at=passage.get("updated_at")))


def read_letta(path: Path, defaults: Mapping[str, Any] | None = None) -> Parsed:
    return _LettaReader(path, defaults).read()


# -- which format ---------------------------------------------------------------------------------------

#: The readers of this module by format name (``lodviz.ingest.importers.read_path`` picks one).
READERS: dict[str, Callable[[Path, Mapping[str, Any] | None], Parsed]] = {
    "mem0": read_mem0,
    "mempalace": read_mempalace,
    "letta": read_letta,
}
#: The formats of this module that read a folder.
FOLDER_FORMATS = ("mempalace",)

_MARKERS = (b'"memory"', b'"agents"', b'"core_memory"')


def _is_letta(data: Any) -> bool:
    if not isinstance(data, Mapping):
        return False
    agents = data.get("agents")
    if isinstance(agents, list) and "blocks" in data:
        return not agents or isinstance(agents[0], Mapping) and ("messages" in agents[0] or "block_ids" in agents[0])
    return "core_memory" in data and "messages" in data


def _is_mem0(data: Any) -> bool:
    items = _mem0_items(data)
    first = items[0] if items else None
    return isinstance(first, Mapping) and isinstance(first.get("memory"), str) and ("id" in first or "hash" in first)


def _sniff(path: Path, suffixes: Iterable[str]) -> bool:
    """Whether ``path`` could be one of this module's JSON formats: small, or with a marker near its start."""
    if path.suffix.lower() not in suffixes:
        return False
    try:
        if path.stat().st_size <= SNIFF_BYTES:
            return True
        with open(path, "rb") as handle:
            start = handle.read(SNIFF_BYTES)
    except OSError:
        return False
    return any(marker in start for marker in _MARKERS)


def _may_be_palace(database: Path) -> bool:
    """False for a Chroma database that is readable and holds no MemPalace drawers (a notes folder's own index, say)."""
    try:
        connection = sqlite3.connect(database.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            return connection.execute("SELECT 1 FROM collections WHERE name = ?", (DRAWERS,)).fetchone() is not None
        finally:
            connection.close()
    except sqlite3.Error:
        return True  # unreadable: the palace reader says what is wrong with it


def detect(path: Path) -> str | None:
    """The format of ``path`` if it is one of this module's (``--format auto``), else None."""
    if path.is_dir():
        database = path / CHROMA_FILE
        return "mempalace" if database.is_file() and _may_be_palace(database) else None
    suffix = path.suffix.lower()
    if suffix == ".af":
        return "letta"
    if path.name == CHROMA_FILE:
        return "mempalace"
    if suffix in (".sqlite3", ".sqlite", ".db"):
        try:
            with open(path, "rb") as handle:
                header = handle.read(len(SQLITE_HEADER))
        except OSError:
            return None
        return "mempalace" if header == SQLITE_HEADER else None
    if not _sniff(path, (".json",)):
        return None
    try:
        data = _load_json(path)
    except ImportFormatError:
        return None  # not JSON: the transcript readers' detection says so
    if isinstance(data, str):
        data, _ = json_value(data)
    if _is_letta(data):
        return "letta"
    if _is_mem0(data):
        return "mem0"
    return None
