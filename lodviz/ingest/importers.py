"""Readers that turn files into validated ``MemoryInput`` records.

Every reader parses and validates the whole file before anything is written
(every field, to ranges every store holds), so a bad line stops the import
with its location in one sentence and leaves the store untouched. A UTF-8
byte order mark at the start of a file is ignored.

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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from lodviz import limits
from lodviz.errors import ImportFormatError, InvalidInput
from lodviz.ingest import memory_systems, transcripts
from lodviz.ingest.inputs import TOO_DEEP, MemoryInput, json_value, parse_record
from lodviz.ingest.transcripts import Parsed

#: What ``--format`` takes: detection, lodviz's own JSON/JSONL and CSV, then every reader's format.
FORMATS = ("auto", "lodviz", "csv", *transcripts.READERS, *memory_systems.READERS)
TEXT_SUFFIXES = {".md", ".markdown", ".txt"}
BOM = b"\xef\xbb\xbf"


def _reraise(exc: InvalidInput) -> ImportFormatError:
    return ImportFormatError(str(exc))


def read_jsonl(path: Path, defaults: Mapping[str, Any] | None = None) -> list[MemoryInput]:
    records = []
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path.name} line {number}"
            if number == 1:
                raw = raw.removeprefix(BOM)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ImportFormatError(f"{where}: not valid UTF-8.") from None
            if not line.strip():
                continue
            data, problem = json_value(line)
            if problem:
                raise ImportFormatError(f"{where}: {problem}.")
            try:
                records.append(parse_record(data, where, defaults))
            except InvalidInput as exc:
                raise _reraise(exc) from None
    return records


def _csv_problem(name: str, line: int, exc: csv.Error, field_limit: int) -> ImportFormatError:
    message = str(exc)
    where = f"{name} line {line}"
    if message.startswith("unexpected end of data"):
        return ImportFormatError(f"{where}: a quoted field starts in this row and is never closed (a quote is missing).")
    if message.startswith("field larger than field limit"):
        return ImportFormatError(
            f"{where}: a field is longer than {field_limit:,} characters; one memory holds at most "
            f"{limits.current().max_memory_chars:,} (LODVIZ_MAX_MEMORY_CHARS)."
        )
    if "expected after" in message:
        return ImportFormatError(
            f"{where}: a quoted field goes on after its closing quote (a quote inside a quoted field is written twice)."
        )
    return ImportFormatError(f"{where}: not valid CSV ({message}).")


def read_csv(path: Path, defaults: Mapping[str, Any] | None = None) -> list[MemoryInput]:
    """Records from a CSV file, read strictly: a quote left open, or text after a closing
    quote, is refused with the row it starts on rather than merging rows into one memory."""
    content = path.read_bytes()
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = content[: exc.start].count(b"\n") + 1
        raise ImportFormatError(f"{path.name} line {line}: not valid UTF-8.") from None
    # A field may be as long as one memory's text (and the text is then checked against that
    # limit with its own message); the csv module's limit is process-wide, so it is put back.
    field_limit = max(csv.field_size_limit(), limits.current().max_memory_chars + 1)
    previous = csv.field_size_limit(field_limit)
    try:
        return _csv_records(path.name, csv.reader(io.StringIO(text, newline=""), strict=True), field_limit, defaults)
    finally:
        csv.field_size_limit(previous)


def _csv_records(name: str, reader: Any, field_limit: int, defaults: Mapping[str, Any] | None) -> list[MemoryInput]:
    header: list[str] | None = None
    records = []
    while True:
        start = reader.line_num + 1  # a row may span lines (a quoted field with line breaks): it is named by its first
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise _csv_problem(name, start, exc, field_limit) from None
        if not row:
            continue  # a blank line
        if header is None:
            if "text" not in row:
                break
            header = row
            continue
        where = f"{name} line {start}"
        if len(row) > len(header):
            raise ImportFormatError(f"{where}: more cells than header columns.")
        data: dict[str, Any] = {k: v for k, v in zip(header, row) if v != ""}
        if "metadata" in data:
            metadata, problem = json_value(data["metadata"])
            if problem or not isinstance(metadata, Mapping):
                raise ImportFormatError(f"{where}: metadata is not a JSON object" + (f" ({problem})." if problem else "."))
            data["metadata"] = metadata
        try:
            records.append(parse_record(data, where, defaults))
        except InvalidInput as exc:
            raise _reraise(exc) from None
    if header is None:
        raise ImportFormatError(f"{name}: the header has no 'text' column.")
    return records


def read_folder(path: Path, defaults: Mapping[str, Any] | None = None) -> list[MemoryInput]:
    records = []
    for file in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES):
        where = str(file.relative_to(path))
        try:
            text = file.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ImportFormatError(f"{where}: not valid UTF-8.") from None
        if not text.strip():
            continue  # an empty note in a folder is skipped, not fatal
        data = {
            "kind": "document",
            **(defaults or {}),
            "text": text,
            "source": where,
            "created_at": file.stat().st_mtime,  # POSIX seconds, checked like any other time
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
        text = path.read_bytes().decode("utf-8-sig")
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
    """Records from ``path`` in format ``fmt`` (``auto`` detects it; one of ``FORMATS``)."""
    path = Path(path)
    if not path.exists():
        raise ImportFormatError(f"{path}: no such file or folder.")
    if fmt not in FORMATS:
        raise ImportFormatError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}.")
    chosen = (memory_systems.detect(path) or transcripts.detect(path)) if fmt == "auto" else fmt
    readers = {**transcripts.READERS, **memory_systems.READERS}
    try:
        if chosen in readers:
            if path.is_dir() and chosen not in ("markdown", *memory_systems.FOLDER_FORMATS):
                raise ImportFormatError(f"{path}: a folder is read as markdown; {chosen} reads one file.")
            parsed = readers[chosen](path, defaults)
        elif chosen == "csv":
            parsed = Parsed(read_csv(path, defaults))
        else:
            parsed = Parsed(read_any(path, defaults))
    except RecursionError:
        # JSON that ``json`` could still read but that nests too deeply for what reads it next
        # (a transcript's tool input made into text): refused like JSON nested deeper still.
        raise ImportFormatError(f"{path.name}: {TOO_DEEP}.") from None
    parsed.format = chosen
    return parsed
