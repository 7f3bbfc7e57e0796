"""Readers that turn files into validated ``MemoryInput`` records.

Every reader validates the whole file before anything is written, so a bad
line stops the import with its location and leaves the store untouched.

- JSONL: one object per line with the fields of ``records.MemoryInput``.
- CSV: a header row; a ``text`` column is required, other columns by the same
  names; a ``metadata`` cell may hold a JSON object.
- A folder: every ``.md``, ``.markdown`` and ``.txt`` file below it is one
  memory, kind "document", source its relative path, created_at its mtime.

``read_path`` picks the reader for a path and a ``--format`` (``auto``
detects it): these, or the transcript and export readers of
``lodviz.ingest.transcripts`` (Claude Code, OpenAI messages, ChatGPT, wikis).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lodviz.errors import ImportFormatError, InvalidInput
from lodviz.ingest.inputs import MemoryInput, parse_record
from lodviz.ingest.transcripts import Parsed

TEXT_SUFFIXES = {".md", ".markdown", ".txt"}


def _reraise(exc: InvalidInput) -> ImportFormatError:
    return ImportFormatError(str(exc))


def read_jsonl(path: Path, defaults: Mapping[str, Any] | None = None) -> list[MemoryInput]:
    records = []
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path.name} line {number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ImportFormatError(f"{where}: not valid UTF-8.") from None
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ImportFormatError(f"{where}: not valid JSON ({exc.msg}).") from None
            try:
                records.append(parse_record(data, where, defaults))
            except InvalidInput as exc:
                raise _reraise(exc) from None
    return records


def read_csv(path: Path, defaults: Mapping[str, Any] | None = None) -> list[MemoryInput]:
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise ImportFormatError(f"{path.name} line {line}: not valid UTF-8.") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not reader.fieldnames or "text" not in reader.fieldnames:
        raise ImportFormatError(f"{path.name}: the header has no 'text' column.")
    records = []
    for row in reader:
        where = f"{path.name} line {reader.line_num}"
        data: dict[str, Any] = {k: v for k, v in row.items() if k is not None and v != ""}
        if None in row:
            raise ImportFormatError(f"{where}: more cells than header columns.")
        if "metadata" in data:
            try:
                data["metadata"] = json.loads(data["metadata"])
            except json.JSONDecodeError:
                raise ImportFormatError(f"{where}: metadata is not a JSON object.") from None
        try:
            records.append(parse_record(data, where, defaults))
        except InvalidInput as exc:
            raise _reraise(exc) from None
    return records


def read_folder(path: Path, defaults: Mapping[str, Any] | None = None) -> list[MemoryInput]:
    records = []
    for file in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES):
        where = str(file.relative_to(path))
        try:
            text = file.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise ImportFormatError(f"{where}: not valid UTF-8.") from None
        if not text.strip():
            continue  # an empty note in a folder is skipped, not fatal
        data = {
            "kind": "document",
            **(defaults or {}),
            "text": text,
            "source": where,
            "created_at": datetime.fromtimestamp(file.stat().st_mtime, tz=UTC),
        }
        try:
            records.append(parse_record(data, where))
        except InvalidInput as exc:
            raise _reraise(exc) from None
    return records


def read_any(path: str | Path, defaults: Mapping[str, Any] | None = None) -> list[MemoryInput]:
    """Records from a JSONL or CSV file or a folder, chosen by what ``path`` is."""
    path = Path(path)
    if path.is_dir():
        return read_folder(path, defaults)
    if not path.exists():
        raise ImportFormatError(f"{path}: no such file or folder.")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return read_jsonl(path, defaults)
    if suffix == ".csv":
        return read_csv(path, defaults)
    if suffix in TEXT_SUFFIXES:
        return read_folder_file(path, defaults)
    raise ImportFormatError(f"{path.name}: expected .jsonl, .csv, .md, .txt or a folder.")


def read_folder_file(path: Path, defaults: Mapping[str, Any] | None = None) -> list[MemoryInput]:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ImportFormatError(f"{path.name}: not valid UTF-8.") from None
    try:
        return [parse_record({"kind": "document", **(defaults or {}), "text": text, "source": path.name}, path.name)]
    except InvalidInput as exc:
        raise _reraise(exc) from None


def iter_batches(records: list[MemoryInput], size: int) -> Iterator[list[MemoryInput]]:
    for start in range(0, len(records), size):
        yield records[start : start + size]


def read_path(path: str | Path, fmt: str = "auto", defaults: Mapping[str, Any] | None = None) -> Parsed:
    """Records from ``path`` in format ``fmt`` (``auto`` detects it; ``lodviz.ingest.transcripts.FORMATS``)."""
    from lodviz.ingest import transcripts

    path = Path(path)
    if not path.exists():
        raise ImportFormatError(f"{path}: no such file or folder.")
    if fmt not in transcripts.FORMATS:
        raise ImportFormatError(f"unknown format {fmt!r}; choose one of {', '.join(transcripts.FORMATS)}.")
    chosen = transcripts.detect(path) if fmt == "auto" else fmt
    readers = {
        "claude-code": transcripts.read_claude_code,
        "openai": transcripts.read_openai,
        "chatgpt": transcripts.read_chatgpt,
        "markdown": transcripts.read_markdown,
    }
    if chosen in readers:
        if path.is_dir() and chosen != "markdown":
            raise ImportFormatError(f"{path}: a folder is read as markdown; {chosen} reads one file.")
        parsed = readers[chosen](path, defaults)
    elif chosen == "csv":
        parsed = Parsed(read_csv(path, defaults))
    else:
        parsed = Parsed(read_any(path, defaults))
    parsed.format = chosen
    return parsed
