"""What a caller hands in to become a memory, and its validation.

The fields of an import record (JSONL object, CSV row) are the keyword
arguments of ``Memory.add``:

    text          required, non-empty UTF-8
    agent_id      the writing agent (default "default")
    visibility    "private" (only its agent sees it) or "shared"
    kind          turn, document, tool_result, preference, note, email, ...
    source        where it came from, free text ("slack:#general", "pubmed")
    created_at    ISO 8601; naive times are UTC; default now
    metadata      a JSON object of anything else

and, for moving a store's history between stores (``lodviz export`` writes them):
    retrieval_count, last_retrieved_at, floor (a tier name or 0-3)
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from lodviz import limits
from lodviz.errors import InvalidInput
from lodviz.records import VISIBILITIES
from lodviz.scoring import Tier
from lodviz.times import utc

_AGENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$")
_KIND = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")

KNOWN_FIELDS = {
    "text",
    "agent_id",
    "visibility",
    "kind",
    "source",
    "created_at",
    "metadata",
    "retrieval_count",
    "last_retrieved_at",
    "floor",
}


@dataclass
class MemoryInput:
    text: str
    agent_id: str = "default"
    visibility: str = "private"
    kind: str = "note"
    source: str | None = None
    created_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    retrieval_count: int = 0
    last_retrieved_at: datetime | None = None
    floor: int = 0

    def content_hash(self) -> str:
        """Same agent, same text (whitespace folded): the same memory."""
        folded = " ".join(self.text.split())
        return hashlib.sha256(f"{self.agent_id}\x00{folded}".encode()).hexdigest()


def check_text(text: Any, where: str = "") -> str:
    prefix = f"{where}: " if where else ""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(f"{prefix}text is not valid UTF-8.") from None
    if not isinstance(text, str):
        raise InvalidInput(f"{prefix}text must be a string, got {type(text).__name__}.")
    if not text.strip():
        raise InvalidInput(f"{prefix}text is empty.")
    if "\x00" in text:
        raise InvalidInput(f"{prefix}text contains a NUL character.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{prefix}text is not valid UTF-8 (it holds lone surrogates).") from None
    limits.current().check_text(text, prefix)
    return text.strip()


def parse_time(value: Any, name: str, where: str = "") -> datetime | None:
    prefix = f"{where}: " if where else ""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return utc(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(float(value), tz=UTC)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            return utc(datetime.fromisoformat(text))
        except ValueError:
            pass
    raise InvalidInput(f"{prefix}{name} {value!r} is not an ISO 8601 time.")


def parse_record(data: Mapping[str, Any], where: str = "", defaults: Mapping[str, Any] | None = None) -> MemoryInput:
    """A validated ``MemoryInput`` from a mapping; ``where`` prefixes messages."""
    prefix = f"{where}: " if where else ""
    if not isinstance(data, Mapping):
        raise InvalidInput(f"{prefix}expected an object with a 'text' field.")
    merged = {**(defaults or {}), **{k: v for k, v in data.items() if v is not None}}
    if "text" not in merged:
        raise InvalidInput(f"{prefix}missing the 'text' field.")
    text = check_text(merged["text"], where)
    agent_id = str(merged.get("agent_id") or "default")
    if not _AGENT.match(agent_id):
        raise InvalidInput(
            f"{prefix}agent_id {agent_id!r} must be 1-64 letters, digits or _.:@- characters."
        )
    visibility = str(merged.get("visibility") or "private")
    if visibility not in VISIBILITIES:
        raise InvalidInput(f"{prefix}visibility must be 'private' or 'shared', got {visibility!r}.")
    kind = str(merged.get("kind") or "note")
    if not _KIND.match(kind):
        raise InvalidInput(f"{prefix}kind {kind!r} must be a short lower-case word.")
    metadata = merged.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"{prefix}metadata must be a JSON object.")
    count = merged.get("retrieval_count", 0) or 0
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        try:
            count = int(str(count))
            assert count >= 0
        except (ValueError, AssertionError):
            raise InvalidInput(f"{prefix}retrieval_count must be a whole number >= 0.") from None
    floor = merged.get("floor", 0) or 0
    try:
        floor = int(Tier.parse(floor))
    except ValueError:
        raise InvalidInput(f"{prefix}floor must be a tier name or 0-3, got {floor!r}.") from None
    source = merged.get("source")
    return MemoryInput(
        text=text,
        agent_id=agent_id,
        visibility=visibility,
        kind=kind,
        source=None if source is None else str(source),
        created_at=parse_time(merged.get("created_at"), "created_at", where),
        metadata=dict(metadata),
        retrieval_count=count,
        last_retrieved_at=parse_time(merged.get("last_retrieved_at"), "last_retrieved_at", where),
        floor=floor,
    )
