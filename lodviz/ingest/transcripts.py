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
- ``codex``: Codex CLI session rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``),
  today's ``{"timestamp", "type", "payload"}`` lines and the older shapes (a bare session line
  first, then bare items; ``record_type`` lines): user and assistant messages (kind ``turn``; an
  assistant turn lists the tools it called after it), and each tool output (kind ``tool_result``,
  with the tool's name and, for a shell, its exit code unwrapped from Codex's JSON). Session id,
  cwd, git branch and model come from the session and turn-context lines. Reasoning, events (they
  repeat the items), Codex's own instructions and the context it injects as user messages
  (AGENTS.md, ``<environment_context>`` ...) are skipped. The first rollouts timed only the session,
  so their turns carry its start.
- ``gemini``: Gemini CLI chat recordings (``~/.gemini/tmp/<project>/chats/session-*.json``, and
  the ``session-*.jsonl`` of newer versions, replayed as the CLI does: a message written again
  replaces itself, ``$rewindTo`` drops what was rewound): user and ``gemini`` messages (kind
  ``turn``, the model's listing its tool calls), then each call's result (kind ``tool_result``,
  with the tool's name and status). Thoughts and the CLI's info/warning/error notices are skipped.
  A ``/chat save`` checkpoint (``checkpoint-<tag>.json``, no times: the file's is used) and
  ``logs.json`` (the prompts typed in a project) are read too.
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
from urllib.parse import unquote

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


# -- Codex CLI ---------------------------------------------------------------------------------
#
# Modelled on openai/codex, codex-rs: protocol/src/protocol.rs (RolloutLine, RolloutItem,
# SessionMeta, SessionMetaLine, GitInfo, TurnContextItem), protocol/src/models.rs (ResponseItem,
# ContentItem, FunctionCallOutputPayload: written as a string or a list of content items) and the
# recorder, core/src/rollout/recorder.rs. Older rollouts, from core/src/rollout.rs: first a bare
# SessionMeta line, then bare ResponseItems and {"record_type": "state"} lines; for a while after,
# {"timestamp", "record_type": "session_meta" | "response" | "event" | "state", ...} lines.

#: What a line of today's rollout holds in ``type`` (its ``payload`` is that item).
_CODEX_LINES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
#: The ``record_type`` of the short-lived tagged lines, as today's ``type``.
_CODEX_TAGS = {"session_meta": "session_meta", "prev_session_meta": "session_meta", "response": "response_item",
               "event": "event_msg", "state": "state"}
#: The fields of the first, bare SessionMeta line.
_CODEX_META = {"id", "timestamp", "instructions", "cwd", "originator", "cli_version", "git"}
#: A tool call's ResponseItem type, and the tool name when the item carries none.
_CODEX_CALLS = {"function_call": None, "custom_tool_call": None, "local_shell_call": "local_shell", "web_search_call": "web_search"}
#: Text Codex sends as a user message that the user did not type (AGENTS.md, the environment, an
#: interrupted turn ...): codex-rs core/src/context/contextual_user_message.rs, with the older
#: ``<user_instructions>`` wrapper. (start, end) markers, matched without regard to case.
_CODEX_INJECTED = (
    ("# agents.md instructions", "</instructions>"), ("<user_instructions>", "</user_instructions>"),
    ("<environment_context>", "</environment_context>"), ("<skill>", "</skill>"),
    ("<user_shell_command>", "</user_shell_command>"), ("<turn_aborted>", ""),
    ("<subagent_notification>", "</subagent_notification>"), ("<agents_instructions>", "</agents_instructions>"),
    ("<multiagent_context>", "</multiagent_context>"), ("<goal_context>", "</goal_context>"), ("<hook_prompt", "</hook_prompt>"),
)
_UUID_AT_END = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_EXIT_CODE = re.compile(r"\AExit code: (-?\d+)")


def _codex_line(entry: Mapping[str, Any], first: bool) -> tuple[str, Any, Any]:
    """(item type, payload, the line's time) of a rollout line in any of its shapes."""
    if "payload" in entry and isinstance(entry.get("type"), str):
        return entry["type"], entry["payload"], entry.get("timestamp")
    tag = entry.get("record_type")
    if isinstance(tag, str):
        return _CODEX_TAGS.get(tag, ""), {k: v for k, v in entry.items() if k != "record_type"}, entry.get("timestamp")
    if first and _is_codex_meta(entry):
        return "session_meta", entry, None
    if isinstance(entry.get("type"), str):
        return "response_item", entry, None  # the first rollouts' bare ResponseItem
    return "", None, None


def _is_codex_meta(entry: Mapping[str, Any]) -> bool:
    return "id" in entry and "timestamp" in entry and set(entry) <= _CODEX_META


def _codex_text(content: Any) -> str:
    """The text of a ResponseItem message's content items (input_text, output_text)."""
    if isinstance(content, str):
        return content
    parts = [c["text"] for c in content if isinstance(c, Mapping) and isinstance(c.get("text"), str)
             and c.get("type") in ("input_text", "output_text", "text")] if isinstance(content, list) else []
    return "\n".join(p for p in parts if p.strip())


def _codex_injected(text: str) -> bool:
    text = text.strip().lower()
    return any(text.startswith(start) and text.endswith(end) for start, end in _CODEX_INJECTED)


def _codex_output(output: Any) -> tuple[str, int | None, bool]:
    """(text, exit code, failed) of a tool call's output: a shell's ``{"output", "metadata"}``
    JSON is unwrapped; "Exit code: N" heads the freeform shell output."""
    code: Any = None
    failed = False
    if isinstance(output, Mapping):  # {content, success}, as some versions wrote a failure
        failed = output.get("success") is False
        output = output.get("content")
    if isinstance(output, list):
        return _codex_text([{**c, "type": "text"} for c in output if isinstance(c, Mapping)]), None, failed
    if not isinstance(output, str):
        return "", None, failed
    text = output
    if output.lstrip().startswith("{"):
        value, _ = json_value(output)
        if isinstance(value, Mapping) and isinstance(value.get("output"), str) and isinstance(value.get("metadata"), Mapping):
            text, code = value["output"], value["metadata"].get("exit_code")
    elif (match := _EXIT_CODE.match(output)) is not None:
        code = int(match.group(1))
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    return text, code, failed or bool(code)


def _codex_call(item: Mapping[str, Any]) -> tuple[str, str, str]:
    """(tool name, what it was given as shown on the turn, call id) of a tool-call ResponseItem."""
    kind = str(item.get("type"))
    name = str(item.get("name") or _CODEX_CALLS[kind] or "tool")
    given = item.get("arguments") if kind == "function_call" else item.get("input") if kind == "custom_tool_call" else item.get("action")
    if isinstance(given, Mapping):  # a local shell's or web search's action: what it ran or looked for
        given = {k: v for k, v in given.items() if v is not None and k != "type"}
    shown = given if isinstance(given, str) else _json_text(given)
    return name, shown[:TOOL_INPUT_CHARS], str(item.get("call_id") or item.get("id") or "")


def read_codex(path: Path, defaults: Mapping[str, Any] | None = None) -> Parsed:
    lines, skipped = _json_lines(path)
    parsed = Parsed(skipped=skipped)
    defaults = {"agent_id": "codex", **(defaults or {})}
    found = _UUID_AT_END.search(path.stem)  # rollout-<time>-<session id>.jsonl
    session: str | None = found.group(0) if found else None
    cwd: str | None = None
    branch: str | None = None
    model: str | None = None
    started: str | float | None = None
    tools: dict[str, str] = {}  # call id -> tool name
    # The assistant turn being gathered: its text, then the tools it called (its calls follow it).
    pending: dict[str, Any] | None = None

    def context(role: str) -> tuple[str, dict[str, Any]]:
        meta = {k: v for k, v in {"session": session, "project": cwd, "role": role, "git_branch": branch,
                                   "model": model if role == "assistant" else None}.items() if v}
        return (f"codex:{Path(cwd).name}/{session or path.stem}" if cwd else f"codex:{session or path.stem}"), meta

    def flush() -> None:
        nonlocal pending
        if pending is None:
            return
        text, called = pending["text"], pending["calls"]
        if called:
            text = (text + "\n" if text else "") + "\n".join(f"[called {name}: {shown}]" for name, shown in called)
        if text.strip():
            meta = {**pending["meta"], **({"tools": [name for name, _ in called]} if called else {})}
            parsed.records.append(_record({"text": text, "kind": "turn", "created_at": pending["when"],
                                           "source": pending["source"], "metadata": meta}, pending["where"], defaults))
        pending = None

    def begin(text: str, when: Any, where: str) -> dict[str, Any]:
        source, meta = context("assistant")
        return {"text": text, "calls": [], "when": when, "where": where, "source": source, "meta": meta}

    for number, entry in lines:
        where = f"{path.name} line {number}"
        if not isinstance(entry, Mapping):
            continue
        kind, item, stamp = _codex_line(entry, first=number == lines[0][0])
        if kind in ("session_meta", "response_item", "turn_context") and not isinstance(item, Mapping):
            raise ImportFormatError(f"{where}: a {kind} line without its payload object.")
        if kind == "session_meta":
            session = str(item.get("id") or session or "") or None
            cwd = str(item.get("cwd") or cwd or "") or None
            git = item.get("git")
            branch = str(git.get("branch") or "") or None if isinstance(git, Mapping) else branch
            started = _time(item.get("timestamp")) or started
            continue
        if kind == "turn_context":  # the cwd and model of the turns from here on
            cwd = str(item.get("cwd") or cwd or "") or None
            model = str(item.get("model") or model or "") or None
            continue
        if kind != "response_item":
            continue  # events (they repeat the items as the UI showed them), compaction, state: bookkeeping
        when = _time(stamp) or started  # the first rollouts time only the session
        item_type = item.get("type")
        if item_type == "message":
            role = str(item.get("role") or "")
            text = _codex_text(item.get("content"))
            if role == "assistant":
                flush()
                pending = begin(text, when, where)
            elif role == "user" and not _codex_injected(text) and text.strip():
                flush()
                source, meta = context("user")
                parsed.records.append(_record({"text": text, "kind": "turn", "created_at": when, "source": source,
                                               "metadata": meta}, where, defaults))
            # developer and system messages are Codex's own instructions, injected user ones its context
        elif item_type in _CODEX_CALLS:
            name, shown, call_id = _codex_call(item)
            if call_id:
                tools[call_id] = name
            if pending is None:
                pending = begin("", when, where)
            pending["calls"].append((name, shown))
        elif item_type in ("function_call_output", "custom_tool_call_output"):
            flush()
            text, code, failed = _codex_output(item.get("output"))
            if not text.strip():
                continue
            call_id = str(item.get("call_id") or "")
            source, meta = context("tool")
            meta = {**meta, "tool": tools.get(call_id) or str(item.get("name") or "tool"), "call_id": call_id or None,
                    "is_error": failed, "exit_code": code}
            parsed.records.append(_record({"text": text, "kind": "tool_result", "created_at": when, "source": source,
                                           "metadata": {k: v for k, v in meta.items() if v is not None}}, where, defaults))
        # reasoning (summaries of the model's thinking, or encrypted), compaction, snapshots: not memory
    flush()
    return parsed


# -- Gemini CLI --------------------------------------------------------------------------------
#
# Modelled on google-gemini/gemini-cli, packages/core/src/services: chatRecordingTypes.ts
# (ConversationRecord, MessageRecord, ToolCallRecord, RewindRecord, MetadataUpdateRecord,
# PartialMetadataRecord) and chatRecordingService.ts (loadConversationRecord: how a session-*.jsonl
# is replayed, and the session-*.json it migrates from); a tool's result is the functionResponse
# parts of packages/core/src/utils/generateContentResponseUtilities.ts (convertToFunctionResponse);
# packages/core/src/core/logger.ts for logs.json (LogEntry) and /chat save checkpoints (Checkpoint).

#: The context a Gemini CLI chat history starts with (packages/core/src/utils/environmentContext.ts,
#: getInitialChatHistory): a user part opening so (today inside <session_context>), and, in older
#: versions, the model's reply.
_GEMINI_SETUP = ("This is the Gemini CLI. We are setting up the context for our chat.", "<session_context>")
_GEMINI_SETUP_REPLY = "Got it. Thanks for the context!"


def _gemini_parts(content: Any) -> list[Any]:
    """A PartListUnion (a string, a Part, or a list of either) as a list."""
    if content is None:
        return []
    return content if isinstance(content, list) else [content]


def _gemini_text(content: Any) -> str:
    """The text of a PartListUnion, without the model's thought parts."""
    parts = []
    for part in _gemini_parts(content):
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str) and not part.get("thought"):
            parts.append(part["text"])
    return "\n".join(p for p in parts if p.strip())


def _gemini_response(parts: Any) -> tuple[str, bool]:
    """(text, failed) of a tool's result: the output or error of its functionResponse, and any text parts."""
    texts, failed = [], False
    for part in _gemini_parts(parts):
        response = part.get("functionResponse") if isinstance(part, Mapping) else None
        if isinstance(response, Mapping):
            body = response.get("response")
            if isinstance(body, Mapping):
                for key in ("output", "error"):
                    if isinstance(body.get(key), str) and body[key].strip():
                        texts.append(body[key])
                        failed = failed or key == "error"
        else:
            text = _gemini_text([part])
            if text:
                texts.append(text)
    return "\n".join(texts), failed


def _gemini_session(meta: Mapping[str, Any], path: Path) -> tuple[str, dict[str, Any]]:
    """(source, metadata) of a recorded session: it names its project by a hash of its folder."""
    session, project_hash = meta.get("sessionId"), meta.get("projectHash")
    directories = meta.get("directories")
    project = directories[0] if isinstance(directories, list) and directories and isinstance(directories[0], str) else None
    label = Path(project).name if project else str(project_hash or "")[:8] or path.stem
    base = {k: v for k, v in {"session": session, "project": project, "project_hash": project_hash}.items() if v}
    return f"gemini:{label}/{session or path.stem}", base


def _gemini_messages(items: list[tuple[str, Any]], source: str, base: Mapping[str, Any],
                     defaults: Mapping[str, Any], parsed: Parsed) -> Parsed:
    for where, message in items:
        if not isinstance(message, Mapping) or not isinstance(message.get("type"), str):
            raise ImportFormatError(f"{where}: expected a message with 'type' and 'content'.")
        kind = message["type"]
        if kind not in ("user", "gemini"):
            continue  # info, warning and error lines are the CLI's notices, not the conversation
        when = _time(message.get("timestamp"))
        text = _gemini_text(message.get("content")) or _gemini_text(message.get("displayContent"))
        role = "user" if kind == "user" else "assistant"
        listed = message.get("toolCalls") if kind == "gemini" else None
        calls = [c for c in listed if isinstance(c, Mapping)] if isinstance(listed, list) else []
        names = [str(c.get("name") or "tool") for c in calls]
        if calls:
            shown = [f"[called {n}: {_json_text(c.get('args'))[:TOOL_INPUT_CHARS]}]" for n, c in zip(names, calls)]
            text = (text + "\n" if text else "") + "\n".join(shown)
        if text.strip():
            meta = {**base, "role": role, **({"model": message["model"]} if isinstance(message.get("model"), str) else {}),
                    **({"tools": names} if calls else {})}
            parsed.records.append(_record({"text": text, "kind": "turn", "created_at": when, "source": source,
                                           "metadata": meta}, where, defaults))
        for name, call in zip(names, calls):  # each call's result, after the turn that made it
            result, failed = _gemini_response(call.get("result"))
            if not result.strip() and isinstance(call.get("resultDisplay"), str):
                result = call["resultDisplay"]
            if not result.strip():
                continue
            meta = {**base, "role": "tool", "tool": name, "tool_call_id": call.get("id"),
                    "is_error": failed or call.get("status") == "error", "status": call.get("status")}
            parsed.records.append(_record({
                "text": result, "kind": "tool_result", "created_at": _time(call.get("timestamp")) or when, "source": source,
                "metadata": {k: v for k, v in meta.items() if v is not None},
            }, f"{where} tool call {call['id'] if isinstance(call.get('id'), str) else name}", defaults))
    return parsed


def _gemini_jsonl(path: Path, defaults: Mapping[str, Any]) -> Parsed:
    """A session-*.jsonl replayed as chatRecordingService.ts's loadConversationRecord does: a message
    written again under its id replaces the earlier one in its place, ``$rewindTo`` drops that
    message and all after it, ``$set`` and the first line set the session's fields."""
    lines, skipped = _json_lines(path)
    meta: dict[str, Any] = {}
    messages: dict[str, tuple[int, Mapping[str, Any]]] = {}
    for number, record in lines:
        if not isinstance(record, Mapping):
            continue
        if isinstance(record.get("$rewindTo"), str):
            ids = list(messages)
            target = record["$rewindTo"]
            for gone in ids[ids.index(target):] if target in messages else ids:
                del messages[gone]
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = (number, record)
        elif isinstance(record.get("$set"), Mapping):
            meta.update(record["$set"])
        elif isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
            meta.update(record)
    if not (meta.get("sessionId") and meta.get("projectHash")):
        raise ImportFormatError(f"{path.name}: not a Gemini CLI session (no line gives its sessionId and projectHash).")
    listed = meta.get("messages")  # a $set of the whole history replaces the messages
    items = ([(f"{path.name} message {i}", m) for i, m in enumerate(listed, start=1)] if isinstance(listed, list) and listed
             else [(f"{path.name} line {n}", m) for n, m in messages.values()])
    source, base = _gemini_session(meta, path)
    return _gemini_messages(items, source, base, defaults, Parsed(skipped=skipped))


def _gemini_checkpoint(path: Path, history: list[Any], defaults: Mapping[str, Any]) -> Parsed:
    """A /chat save checkpoint: the chat as the model saw it, {role, parts} without times (the file's is used)."""
    parsed = Parsed()
    tag = unquote(path.stem.removeprefix("checkpoint-"))
    source, when = f"gemini:checkpoint/{tag}", path.stat().st_mtime
    for number, content in enumerate(history, start=1):
        where = f"{path.name} message {number}"
        if not isinstance(content, Mapping) or not isinstance(content.get("parts"), list):
            raise ImportFormatError(f"{where}: expected {{\"role\", \"parts\": [...]}}.")
        role = "assistant" if content.get("role") == "model" else "user"
        parts = content["parts"]
        text = _gemini_text(parts)
        if text.lstrip().startswith(_GEMINI_SETUP) or text.strip() == _GEMINI_SETUP_REPLY:
            continue  # the context every chat starts with
        for part in parts:
            answer = part.get("functionResponse") if isinstance(part, Mapping) else None
            if isinstance(answer, Mapping):
                result, failed = _gemini_response([part])
                if result.strip():
                    parsed.records.append(_record({
                        "text": result, "kind": "tool_result", "created_at": when, "source": source,
                        "metadata": {k: v for k, v in {"role": "tool", "tool": str(answer.get("name") or "tool"), "checkpoint": tag,
                                                        "tool_call_id": answer.get("id"), "is_error": failed}.items() if v is not None},
                    }, where, defaults))
        calls = [p["functionCall"] for p in parts if isinstance(p, Mapping) and isinstance(p.get("functionCall"), Mapping)]
        names = [str(c.get("name") or "tool") for c in calls]
        if calls:
            text = (text + "\n" if text else "") + "\n".join(
                f"[called {n}: {_json_text(c.get('args'))[:TOOL_INPUT_CHARS]}]" for n, c in zip(names, calls))
        if text.strip():
            meta = {"role": role, "checkpoint": tag, **({"tools": names} if calls else {})}
            parsed.records.append(_record({"text": text, "kind": "turn", "created_at": when, "source": source,
                                           "metadata": meta}, where, defaults))
    return parsed


def _gemini_logs(path: Path, entries: list[Any], defaults: Mapping[str, Any]) -> Parsed:
    """logs.json: every prompt the user typed in a project, with its session and time."""
    parsed = Parsed()
    for number, entry in enumerate(entries, start=1):
        where = f"{path.name} entry {number}"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("message"), str):
            raise ImportFormatError(f"{where}: expected {{\"sessionId\", \"type\", \"message\", \"timestamp\"}}.")
        if entry.get("type") != "user" or not entry["message"].strip():
            continue
        session = entry.get("sessionId")
        parsed.records.append(_record({
            "text": entry["message"], "kind": "turn", "created_at": _time(entry.get("timestamp")),
            "source": f"gemini:logs/{session or path.stem}",
            "metadata": {k: v for k, v in {"session": session, "role": "user"}.items() if v},
        }, where, defaults))
    return parsed


def read_gemini(path: Path, defaults: Mapping[str, Any] | None = None) -> Parsed:
    defaults = {"agent_id": "gemini", **(defaults or {})}
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return _gemini_jsonl(path, defaults)
    data = _load_json(path)
    if isinstance(data, Mapping) and isinstance(data.get("sessionId"), str) and isinstance(data.get("messages"), list):
        source, base = _gemini_session(data, path)
        items = [(f"{path.name} message {i}", m) for i, m in enumerate(data["messages"], start=1)]
        return _gemini_messages(items, source, base, defaults, Parsed())
    history = data.get("history") if isinstance(data, Mapping) else data
    if isinstance(history, list) and (not history or isinstance(history[0], Mapping) and "parts" in history[0]):
        return _gemini_checkpoint(path, history, defaults)
    if isinstance(data, list) and isinstance(data[0], Mapping) and "messageId" in data[0]:
        return _gemini_logs(path, data, defaults)
    raise ImportFormatError(f"{path.name}: not a Gemini CLI conversation: expected a session file "
                            "({\"sessionId\", \"messages\": [...]}), a /chat save checkpoint or logs.json.")


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
    "codex": read_codex,
    "gemini": read_gemini,
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
            if isinstance(first.get("sessionId"), str) and isinstance(first.get("projectHash"), str):
                return "gemini"  # a session-*.jsonl opens with its metadata; Claude Code's lines have no projectHash
            if _is_codex_line(first):
                return "codex"
            if "sessionId" in first or ("type" in first and "message" in first) or first.get("type") in ("summary", "file-history-snapshot"):
                return "claude-code"
            if "text" not in first and "role" in first:
                return "openai"
        return "lodviz"
    if suffix == ".json":
        data = _load_json(path)
        if isinstance(data, list) and data and isinstance(data[0], Mapping) and "mapping" in data[0]:
            return "chatgpt"
        if _is_gemini_json(data):
            return "gemini"
        if isinstance(data, Mapping) and "messages" in data:
            return "openai"
        if isinstance(data, list) and data and isinstance(data[0], Mapping) and "role" in data[0] and "text" not in data[0]:
            return "openai"
        return "lodviz"
    raise ImportFormatError(f"{path.name}: expected .jsonl, .json, .csv, .md, .txt or a folder (or pass --format).")


def _is_codex_line(first: Mapping[str, Any]) -> bool:
    """Whether the first line of a JSONL file is a Codex rollout's, in any of its shapes."""
    if first.get("type") in _CODEX_LINES and "payload" in first:
        return True
    return first.get("record_type") in _CODEX_TAGS or ("text" not in first and _is_codex_meta(first))


def _is_gemini_json(data: Any) -> bool:
    """A Gemini CLI session file, /chat save checkpoint ({"history": [{role, parts}]} or the list) or logs.json."""
    if isinstance(data, Mapping):
        if isinstance(data.get("sessionId"), str) and ("projectHash" in data or isinstance(data.get("messages"), list)):
            return True
        history = data.get("history")
        return isinstance(history, list) and "messages" not in data and (
            not history or isinstance(history[0], Mapping) and "parts" in history[0])
    if isinstance(data, list) and data and isinstance(data[0], Mapping):
        first = data[0]
        return ("parts" in first and "role" in first and "content" not in first) or (
            "messageId" in first and "sessionId" in first and "message" in first)
    return False


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
