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
import json
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from lodviz import limits
from lodviz.errors import InvalidInput
from lodviz.records import VISIBILITIES
from lodviz.scoring import Tier
from lodviz.times import EARLIEST, LATEST, utc

# Matched whole (``fullmatch``): "$" would let a trailing newline through.
_AGENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}")
_KIND = re.compile(r"[a-z][a-z0-9_-]{0,31}")

#: The most retrievals an imported history may bring. The stores count in 32-bit ``INTEGER``
#: columns (at most 2,147,483,647) and add every later retrieval to what was imported, so an
#: import keeps more than a billion retrievals of room.
MAX_RETRIEVAL_COUNT = 1_000_000_000
#: How deeply a memory's metadata may nest: enough for any real record, and far from the
#: recursion limit of whatever reads it back (``json``, the landscape, the MCP server).
MAX_METADATA_DEPTH = 64

# Seconds since the epoch that a datetime can hold at all (years 1 to 9999); a number outside is
# refused before ``datetime.fromtimestamp`` would overflow.
_FIRST_SECOND = datetime(1, 1, 1, tzinfo=UTC).timestamp()
_LAST_SECOND = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()

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


#: The agent of a record that names none.
DEFAULT_AGENT = "default"
#: A defaults key: the visibility of a record that names neither its agent nor its visibility.
UNOWNED = "visibility_if_unowned"


@dataclass
class MemoryInput:
    text: str
    agent_id: str = DEFAULT_AGENT
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
    _storable(text, "text", prefix)
    limits.current().check_text(text, prefix)
    return text.strip()


def _shown(value: Any) -> str:
    """``value`` as a message shows it: its repr, cut short."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # an int of more digits than Python prints, a structure nested too deeply
        return f"a {type(value).__name__}"
    return text if len(text) <= 40 else text[:37] + "..."


def _as_datetime(value: Any) -> datetime | None:
    """``value`` as an aware UTC datetime, None if it is no time at all.

    Raises OverflowError (or ValueError, OSError from the platform) for a time outside what a
    datetime holds, including one that a time zone shift carries past year 1 or 9999.
    """
    if isinstance(value, datetime):
        return utc(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value != value:  # NaN
            return None
        if not _FIRST_SECOND <= value <= _LAST_SECOND:  # compared exactly, before a huge int becomes a float
            raise OverflowError
        return datetime.fromtimestamp(float(value), tz=UTC)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
        return utc(parsed)
    return None


def _outside(value: Any, name: str, prefix: str) -> InvalidInput:
    return InvalidInput(
        f"{prefix}{name} {_shown(value)} is outside the times lodviz keeps "
        f"({EARLIEST.date().isoformat()} to {LATEST.date().isoformat()} UTC)."
    )


def parse_time(value: Any, name: str, where: str = "") -> datetime | None:
    """An aware UTC datetime from a datetime, POSIX seconds or ISO 8601 text; None for None or "".

    A time must lie between ``lodviz.times.EARLIEST`` and ``LATEST`` (0001-01-02 to 9999-12-30
    UTC), which every store holds and every conversion keeps; anything else is refused with
    ``InvalidInput``, never an overflow.
    """
    prefix = f"{where}: " if where else ""
    if value is None or (isinstance(value, str) and value == ""):
        return None
    try:
        when = _as_datetime(value)
    except (OverflowError, ValueError, OSError):  # beyond what a datetime holds, as given or once in UTC
        raise _outside(value, name, prefix) from None
    if when is None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise InvalidInput(f"{prefix}{name} {_shown(value)} is not a time.")
        raise InvalidInput(f"{prefix}{name} {_shown(value)} is not an ISO 8601 time.")
    if not EARLIEST <= when <= LATEST:
        raise _outside(value, name, prefix)
    return when


def _name(merged: Mapping[str, Any], key: str, default: str, prefix: str) -> str:
    """A short identifying field (agent_id, visibility, kind): a string, ``default`` when missing or empty."""
    value = merged.get(key)
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        raise InvalidInput(f"{prefix}{key} must be a string, got {type(value).__name__}.")
    return value


def _plain_text(value: Any, key: str, prefix: str) -> str:
    """A free-text field other than the memory's text (source): stored as a string every store accepts."""
    text = value if isinstance(value, str) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            text = str(value)
        except ValueError:  # an int of more digits than Python converts
            text = None
    if text is None:
        raise InvalidInput(f"{prefix}{key} must be a string, got {type(value).__name__}.")
    return _storable(text, key, prefix)


def _storable(text: str, key: str, prefix: str) -> str:
    """``text`` if every store can hold it: no NUL (PostgreSQL refuses it), no lone surrogates."""
    if "\x00" in text:
        raise InvalidInput(f"{prefix}{key} contains a NUL character.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{prefix}{key} is not valid UTF-8 (it holds lone surrogates).") from None
    return text


_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")  # JSON's escape of NUL, not an escaped backslash before "u0000"


def _depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers more than ``limit`` levels deep (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, Mapping) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (Mapping, list, tuple)))
    return False


def _check_metadata(metadata: Mapping[str, Any], prefix: str) -> None:
    """Metadata every store can keep as JSON and give back: JSON as the stores write it (string
    keys, finite numbers), no NUL (PostgreSQL's jsonb refuses it), no lone surrogates, and at most
    ``MAX_METADATA_DEPTH`` levels deep.

    One ``json.dumps`` at C speed decides most of it; the nesting is walked only when the text
    holds more brackets than the limit (brackets in strings count too, so a few never hide depth).
    """
    try:
        dumped = json.dumps(metadata, ensure_ascii=False, allow_nan=False, sort_keys=True, default=str)
    except RecursionError:
        raise InvalidInput(f"{prefix}metadata is nested more than {MAX_METADATA_DEPTH} levels deep.") from None
    except TypeError:  # a key JSON cannot write, or keys of kinds that cannot be sorted together
        raise InvalidInput(f"{prefix}metadata keys must be strings.") from None
    except ValueError as exc:
        if "ircular" in str(exc):
            raise InvalidInput(f"{prefix}metadata contains itself.") from None
        raise InvalidInput(
            f"{prefix}metadata holds a number JSON cannot keep (NaN, an infinity, or more than 4,300 digits)."
        ) from None
    if dumped.count("{") + dumped.count("[") > MAX_METADATA_DEPTH and _depth_over(metadata, MAX_METADATA_DEPTH):
        raise InvalidInput(f"{prefix}metadata is nested more than {MAX_METADATA_DEPTH} levels deep.")
    if "\\u0000" in dumped and _NUL_ESCAPE.search(dumped):
        raise InvalidInput(f"{prefix}metadata contains a NUL character.")
    try:
        dumped.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{prefix}metadata is not valid UTF-8 (it holds lone surrogates).") from None


def _retrieval_count(value: Any, prefix: str) -> int:
    if value is None or value == "":
        return 0
    count: int | None = None
    if isinstance(value, str):
        try:
            count = int(value)
        except ValueError:
            count = None
    elif not isinstance(value, (bool, np.bool_)):
        try:
            count = operator.index(value)  # an int, or one of numpy's (a pandas row holds those)
        except TypeError:
            count = None
    if count is None or not 0 <= count <= MAX_RETRIEVAL_COUNT:
        raise InvalidInput(
            f"{prefix}retrieval_count must be a whole number from 0 to {MAX_RETRIEVAL_COUNT:,}, got {_shown(value)}."
        )
    return count


def parse_record(data: Mapping[str, Any], where: str = "", defaults: Mapping[str, Any] | None = None) -> MemoryInput:
    """A validated ``MemoryInput`` from a mapping; ``where`` prefixes messages."""
    prefix = f"{where}: " if where else ""
    if not isinstance(data, Mapping):
        raise InvalidInput(f"{prefix}expected an object with a 'text' field.")
    merged = {**(defaults or {}), **{k: v for k, v in data.items() if v is not None}}
    if "text" not in merged:
        raise InvalidInput(f"{prefix}missing the 'text' field.")
    text = check_text(merged["text"], where)
    agent_id = _name(merged, "agent_id", DEFAULT_AGENT, prefix)
    if not _AGENT.fullmatch(agent_id):
        raise InvalidInput(
            f"{prefix}agent_id {_shown(agent_id)} must be 1-64 letters, digits or _.:@- characters."
        )
    # A record that names neither its agent nor its visibility takes ``UNOWNED`` from the defaults when an
    # importer gives one (the CLI's: shared, so whichever agent an MCP client names finds it).
    if not merged.get("visibility") and not merged.get("agent_id") and (defaults or {}).get(UNOWNED):
        merged["visibility"] = (defaults or {})[UNOWNED]
    visibility = _name(merged, "visibility", "private", prefix)
    if visibility not in VISIBILITIES:
        raise InvalidInput(f"{prefix}visibility must be 'private' or 'shared', got {_shown(visibility)}.")
    kind = _name(merged, "kind", "note", prefix)
    if not _KIND.fullmatch(kind):
        raise InvalidInput(f"{prefix}kind {_shown(kind)} must be a short lower-case word.")
    metadata = merged.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"{prefix}metadata must be a JSON object.")
    _check_metadata(metadata, prefix)
    count = _retrieval_count(merged.get("retrieval_count"), prefix)
    floor = merged.get("floor", 0) or 0
    try:
        floor = int(Tier.parse(floor))
    except (ValueError, TypeError, OverflowError):
        raise InvalidInput(f"{prefix}floor must be a tier name or 0-3, got {_shown(floor)}.") from None
    source = merged.get("source")
    return MemoryInput(
        text=text,
        agent_id=agent_id,
        visibility=visibility,
        kind=kind,
        source=None if source is None else _plain_text(source, "source", prefix),
        created_at=parse_time(merged.get("created_at"), "created_at", where),
        metadata=dict(metadata),
        retrieval_count=count,
        last_retrieved_at=parse_time(merged.get("last_retrieved_at"), "last_retrieved_at", where),
        floor=floor,
    )


TOO_DEEP = "JSON nested too deeply to read"
TOO_LONG = "a JSON number too long to read"


def json_value(raw: str | bytes) -> tuple[Any, str | None]:
    """(the value, None) of a JSON text, or (None, why it cannot be read): never an exception.

    Besides malformed JSON, ``json`` raises RecursionError for nesting deeper than the
    interpreter's stack and ValueError for an integer of more digits than Python converts.
    """
    try:
        return json.loads(raw), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg})"
    except RecursionError:
        return None, TOO_DEEP
    except ValueError:
        return None, TOO_LONG
