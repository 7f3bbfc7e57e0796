"""Readers for the histories people already have: agent transcripts, chat exports, wiki folders.

Each turns one file (or folder) into ``MemoryInput`` records, one memory per
turn, tool result or page, keeping timestamps, roles, tool names, session and
project in ``kind``, ``source`` and ``metadata``. Re-running an import adds
nothing new: a memory is its agent and text (``content_hash``), so the same
turn is the same memory.

- ``claude-code``: Claude Code session transcripts (``~/.claude/projects/*/*.jsonl``):
  user and assistant turns (kind ``turn``; an assistant turn lists the tools it
  called), and each tool result (kind ``tool_result``, with the tool's name).
  Thinking blocks and bookkeeping lines (summaries, snapshots) are skipped.
- ``openai``: an OpenAI-style message list (a JSON list of ``{"role",
  "content"}``, ``{"messages": [...]}``, or JSONL of messages): one memory per
  message; ``tool`` messages become tool results, ``system`` ones instructions.
- ``chatgpt``: ChatGPT's export (``conversations.json``): each conversation's
  visible branch, one memory per message, with the conversation's title.
- ``markdown``: a folder of Markdown notes or LLM-wiki pages: one memory per
  page, or per ``#``/``##`` section for pages longer than ``SECTION_FROM``
  characters.

A line that is not JSON in the middle of a transcript stops the import with its
file and line and nothing is written. The last line of a JSONL transcript is
different: a session still being written ends in a partial line, so an
unreadable last line is skipped (and counted in ``Parsed.skipped``). Every
time, count and metadata is checked as ``lodviz.ingest.inputs.parse_record``
checks it, before anything is written; a UTF-8 byte order mark is ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lodviz.errors import ImportFormatError, InvalidInput
from lodviz.ingest.inputs import TOO_DEEP, TOO_LONG, MemoryInput, json_value, parse_record

BOM = b"\xef\xbb\xbf"
SECTION_FROM = 6_000  # characters: longer pages are split at their headings
TOOL_INPUT_CHARS = 400  # how much of a tool call's input an assistant turn keeps


@dataclass
class Parsed:
    records: list[MemoryInput] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # what was left out, and why
    format: str = ""


def _record(data: dict[str, Any], where: str, defaults: Mapping[str, Any] | None) -> MemoryInput:
    try:
        return parse_record(data, where, defaults)
    except InvalidInput as exc:
        raise ImportFormatError(str(exc)) from None


def _json_lines(path: Path) -> tuple[list[tuple[int, Any]], list[str]]:
    """(line number, object) of every line; a bad last line is skipped, a bad middle one raised."""
    raw = path.read_bytes().removeprefix(BOM).split(b"\n")
    while raw and not raw[-1].strip():
        raw.pop()
    out, skipped = [], []
    for number, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        try:
            value, reason = json_value(line.decode("utf-8"))
        except UnicodeDecodeError:
            reason = "not valid UTF-8"
        if reason is None:
            out.append((number, value))
        else:
            if number == len(raw):
                skipped.append(f"{path.name} line {number}: {reason}; a transcript still being written ends so, skipped")
                continue
            raise ImportFormatError(f"{path.name} line {number}: {reason}.") from None
    return out, skipped


def _time(value: Any) -> str | float | None:
    """A transcript's time as ``parse_record`` takes it (ISO text or POSIX seconds), None if it has none."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value  # checked, like every time, by parse_record: NaN or 1e20 is refused with its line
    return value if isinstance(value, str) and value else None


def _json_text(value: Any) -> str:
    """``value`` as JSON text for a memory to show; something ``json`` cannot write is shown as a mark."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        return "…"


# -- Claude Code -------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    """The readable text of a message's content (a string, or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(p for p in parts if p.strip())
    return ""


def read_claude_code(path: Path, defaults: Mapping[str, Any] | None = None) -> Parsed:
    lines, skipped = _json_lines(path)
    parsed = Parsed(skipped=skipped)
    tools: dict[str, str] = {}  # tool_use id -> tool name
    defaults = {"agent_id": "claude-code", **(defaults or {})}
    for number, entry in lines:
        where = f"{path.name} line {number}"
        if not isinstance(entry, Mapping) or entry.get("type") not in ("user", "assistant"):
            continue  # summaries, file-history snapshots, system lines: bookkeeping, not memory
        message = entry.get("message")
        if not isinstance(message, Mapping):
            raise ImportFormatError(f"{where}: a {entry.get('type')} line without its message.")
        role = str(message.get("role") or entry["type"])
        project = entry.get("cwd")
        session = entry.get("sessionId")
        base_meta = {k: v for k, v in {"session": session, "project": project, "role": role, "uuid": entry.get("uuid"),
                                        "git_branch": entry.get("gitBranch")}.items() if v}
        source = f"claude-code:{Path(str(project)).name if project else path.stem}/{session or path.stem}"
        when = _time(entry.get("timestamp"))
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        called = []
        for block in blocks:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_use":
                name = str(block.get("name") or "tool")
                tools[str(block.get("id"))] = name
                shown = _json_text(block.get("input"))[:TOOL_INPUT_CHARS]
                called.append((name, shown))
            elif block.get("type") == "tool_result":
                result = _text_of(block.get("content"))
                if not result.strip():
                    continue
                tool = tools.get(str(block.get("tool_use_id")), "tool")
                parsed.records.append(_record({
                    "text": result, "kind": "tool_result", "created_at": when, "source": source,
                    "metadata": {**base_meta, "role": "tool", "tool": tool, "tool_use_id": block.get("tool_use_id"),
                                 "is_error": bool(block.get("is_error"))},
                }, where, defaults))
        text = _text_of(content)
        if called:
            text = (text + "\n" if text else "") + "\n".join(f"[called {name}: {shown}]" for name, shown in called)
        if text.strip():
            meta = {**base_meta, **({"tools": [name for name, _ in called]} if called else {})}
            parsed.records.append(_record({"text": text, "kind": "turn", "created_at": when, "source": source, "metadata": meta},
                                          where, defaults))
    return parsed


# -- OpenAI message lists and the ChatGPT export ------------------------------------------------


def _openai_message(message: Any, where: str, source: str, defaults: Mapping[str, Any] | None) -> MemoryInput | None:
    if not isinstance(message, Mapping) or "role" not in message:
        raise ImportFormatError(f"{where}: expected a message with 'role' and 'content'.")
    role = str(message["role"])
    text = _text_of(message.get("content"))
    listed = message.get("tool_calls")
    functions = [c.get("function") for c in listed if isinstance(c, Mapping)] if isinstance(listed, list) else []
    calls: list[Mapping[str, Any]] = [f for f in functions if isinstance(f, Mapping)]
    if calls:
        shown = [f"[called {f.get('name') or 'tool'}: {str(f.get('arguments') or '')[:TOOL_INPUT_CHARS]}]" for f in calls]
        text = (text + "\n" if text else "") + "\n".join(shown)
    if not text.strip():
        return None
    kind = {"tool": "tool_result", "function": "tool_result", "system": "instruction", "developer": "instruction"}.get(role, "turn")
    meta = {k: v for k, v in {"role": role, "tool": message.get("name"), "tool_call_id": message.get("tool_call_id")}.items() if v}
    return _record({"text": text, "kind": kind, "source": source, "metadata": meta,
                    "created_at": _time(message.get("created_at") or message.get("timestamp"))}, where, defaults)


def read_openai(path: Path, defaults: Mapping[str, Any] | None = None) -> Parsed:
    parsed = Parsed()
    defaults = {"agent_id": "assistant", **(defaults or {})}
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        lines, parsed.skipped = _json_lines(path)
        items = [(f"{path.name} line {n}", m) for n, m in lines]
    else:
        data = _load_json(path)
        messages = data.get("messages") if isinstance(data, Mapping) else data
        if not isinstance(messages, list):
            raise ImportFormatError(f"{path.name}: expected a list of messages or {{\"messages\": [...]}}.")
        items = [(f"{path.name} message {i}", m) for i, m in enumerate(messages, start=1)]
    for where, message in items:
        record = _openai_message(message, where, f"openai:{path.name}", defaults)
        if record is not None:
            parsed.records.append(record)
    return parsed


def read_chatgpt(path: Path, defaults: Mapping[str, Any] | None = None) -> Parsed:
    data = _load_json(path)
    if not isinstance(data, list):
        raise ImportFormatError(f"{path.name}: a ChatGPT export is a list of conversations.")
    parsed = Parsed()
    defaults = {"agent_id": "chatgpt", **(defaults or {})}
    for number, conversation in enumerate(data, start=1):
        where = f"{path.name} conversation {number}"
        if not isinstance(conversation, Mapping) or not isinstance(conversation.get("mapping"), Mapping):
            raise ImportFormatError(f"{where}: no 'mapping' of messages.")
        mapping = conversation["mapping"]
        title = str(conversation.get("title") or f"conversation {number}")
        cid = conversation.get("conversation_id") or conversation.get("id")
        # The visible branch: from the current node up through the parents.
        chain, node = [], conversation.get("current_node")
        seen: set[str] = set()
        while isinstance(node, str) and node in mapping and node not in seen and isinstance(mapping[node], Mapping):
            seen.add(node)
            chain.append(mapping[node])
            node = mapping[node].get("parent")
        for entry in reversed(chain):
            message = entry.get("message") if isinstance(entry, Mapping) else None
            if not isinstance(message, Mapping):
                continue
            author = message.get("author")
            role = str(author.get("role") or "") if isinstance(author, Mapping) else ""
            content = message.get("content") or {}
            parts = content.get("parts") if isinstance(content, Mapping) else None
            text = "\n".join(p for p in (parts if isinstance(parts, list) else []) if isinstance(p, str) and p.strip())
            given_meta = message.get("metadata")
            meta: Mapping[str, Any] = given_meta if isinstance(given_meta, Mapping) else {}
            hidden = meta.get("is_visually_hidden_from_conversation")
            if not text.strip() or role == "system" or hidden:
                continue
            parsed.records.append(_record({
                "text": text, "kind": "tool_result" if role == "tool" else "turn", "source": f"chatgpt:{title}",
                "created_at": _time(message.get("create_time") or conversation.get("create_time")),
                "metadata": {k: v for k, v in {"role": role, "conversation": title, "conversation_id": cid,
                                                "model": meta.get("model_slug")}.items() if v},
            }, f"{where} message {message.get('id') or ''}".strip(), defaults))
    return parsed


def _load_json(path: Path) -> Any:
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ImportFormatError(f"{path.name}: not valid UTF-8.") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"{path.name} line {exc.lineno}: not valid JSON ({exc.msg}).") from None
    except RecursionError:
        raise ImportFormatError(f"{path.name}: {TOO_DEEP}.") from None
    except ValueError:  # an integer of more digits than Python converts
        raise ImportFormatError(f"{path.name}: {TOO_LONG}.") from None


# -- Markdown and LLM-wiki folders -----------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,2})\s+(.+?)\s*#*\s*$", re.M)


def _sections(text: str) -> list[tuple[str | None, str]]:
    """(heading, body) of a long page split at its # and ## headings."""
    marks = list(_HEADING.finditer(text))
    if not marks:
        return [(None, text)]
    out: list[tuple[str | None, str]] = []
    if text[: marks[0].start()].strip():
        out.append((None, text[: marks[0].start()]))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.append((mark.group(2), text[mark.start():end]))
    return [(h, body) for h, body in out if body.strip()]


def read_markdown(path: Path, defaults: Mapping[str, Any] | None = None) -> Parsed:
    parsed = Parsed()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in (".md", ".markdown", ".txt"))
    root = path.parent if path.is_file() else path
    for file in files:
        where = str(file.relative_to(root))
        try:
            text = file.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ImportFormatError(f"{where}: not valid UTF-8.") from None
        if not text.strip():
            parsed.skipped.append(f"{where}: empty")
            continue
        title = next((m.group(2) for m in _HEADING.finditer(text)), file.stem)
        when = file.stat().st_mtime  # POSIX seconds, checked like any other time
        pieces = _sections(text) if len(text) > SECTION_FROM else [(None, text)]
        for heading, body in pieces:
            anchor = f"#{heading}" if heading else ""
            parsed.records.append(_record({
                "text": body, "kind": "document", "source": where + anchor, "created_at": when,
                "metadata": {k: v for k, v in {"page": title, "section": heading, "file": where}.items() if v},
            }, where + anchor, {"kind": "document", **(defaults or {})}))
    return parsed


# -- which format -----------------------------------------------------------------------------------

#: The readers of this module by format name (``lodviz.ingest.importers.read_path`` picks one).
READERS = {
    "claude-code": read_claude_code,
    "openai": read_openai,
    "chatgpt": read_chatgpt,
    "markdown": read_markdown,
}


def detect(path: Path) -> str:
    """The format of ``path``, by what it holds (``--format auto``)."""
    if path.is_dir():
        return "markdown"
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".md", ".markdown", ".txt"):
        return "markdown"
    if suffix in (".jsonl", ".ndjson"):
        first = _first_object(path)
        if isinstance(first, Mapping):
            if "sessionId" in first or ("type" in first and "message" in first) or first.get("type") in ("summary", "file-history-snapshot"):
                return "claude-code"
            if "text" not in first and "role" in first:
                return "openai"
        return "lodviz"
    if suffix == ".json":
        data = _load_json(path)
        if isinstance(data, list) and data and isinstance(data[0], Mapping) and "mapping" in data[0]:
            return "chatgpt"
        if isinstance(data, Mapping) and "messages" in data:
            return "openai"
        if isinstance(data, list) and data and isinstance(data[0], Mapping) and "role" in data[0] and "text" not in data[0]:
            return "openai"
        return "lodviz"
    raise ImportFormatError(f"{path.name}: expected .jsonl, .json, .csv, .md, .txt or a folder (or pass --format).")


def _first_object(path: Path) -> Any:
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if number == 1:
                line = line.removeprefix(BOM)
            if line.strip():
                try:
                    value, _ = json_value(line.decode("utf-8"))
                except UnicodeDecodeError:
                    return None
                return value  # None when unreadable: the reader then says what is wrong, with its line
    return None
