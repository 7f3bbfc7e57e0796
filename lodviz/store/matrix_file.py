"""A DuckDB store's unit embedding matrix, kept in a file beside the store, so that an open maps it instead of rebuilding it.

Rebuilding the matrix is most of a cold open: at 1M memories, reading the
embeddings from DuckDB took 1.7 s here and normalising them into the
dimension-major matrix 4.4 s more. The vectors of a memory never change once
written (a forget zeroes them, and sets ``forgotten_at``), so the rows a file
holds stay right for as long as the store keeps those memories.

The file (``<store>.matrix``) holds the unit vectors of the store's first
``rows`` memories in id order, in the layout the matrix kind keeps in memory
(``lodviz.matrix``): float32 dimension by dimension for ``float32``; for a
compact kind the float32 rows row by row, then the compact codes (and int8's
scale per row). A 4 KiB header names the kind, the dimension, the number of
rows, the first and last id and a digest of every id.

The contract:

- ``save`` writes a new file beside the old one and renames it into place
  (flushed first), so a file is whole or absent; a crash leaves at most a
  ``.matrix.tmp-<pid>`` file, which the next save removes.
- ``load`` maps a file (copy on write: what the process changes, a forgotten
  row zeroed, stays in its own memory) only if its header's kind and
  dimension are those asked for, its ids are the first ids of the store
  (the digest), and a probe of rows it holds (the first, the last and some
  between, never a forgotten one) equals the store's own embeddings, made
  unit the same way. Anything else, a missing, short or garbled file
  included, gives ``None`` with the reason logged, and the caller rebuilds
  from the store. Rows the store gained after the file was written (ids
  above its last) are the caller's to read.

Handed what it checks against (the store's ids, its embeddings of a few
ids, its forgotten rows), it never opens the store itself.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from lodviz.matrix import UnitRows, parse_kind
from lodviz.scoring import normalize_rows

log = logging.getLogger("lodviz.store")

MAGIC = b"LODVIZ-MATRIX\n"
FORMAT = 1
HEADER = 4096
#: Rows of the file compared with the store on load (the first and the last among them).
PROBES = 16
#: Bytes written at a time: the rows of a big matrix go out in slices of about this size.
_SLICE = 64 << 20


def path_for(store_path: str | os.PathLike[str]) -> Path:
    """Where the matrix file of the store at ``store_path`` lives."""
    return Path(f"{os.fspath(store_path)}.matrix")


def digest(ids: np.ndarray) -> str:
    """A digest of a sorted id array (what the header names the file's rows by)."""
    return hashlib.blake2b(np.ascontiguousarray(ids, dtype="<i8").tobytes(), digest_size=16).hexdigest()


def _align(offset: int) -> int:
    return -(-offset // HEADER) * HEADER


def _sections(kind: str, rows: int, dim: int) -> dict[str, tuple[int, int, str]]:
    """Each array's (offset, bytes, dtype) in a file of ``rows`` rows of ``kind``."""
    out: dict[str, tuple[int, int, str]] = {}
    at = HEADER
    parts = [("lengths", rows * 3 * 4, "<i4"), ("exact", rows * dim * 4, "<f4")]
    if kind == "int8":
        parts += [("codes", rows * dim, "i1"), ("scale", rows * 4, "<f4")]
    elif kind == "float16":
        parts += [("codes", rows * dim * 2, "<f2")]
    for name, size, dtype in parts:
        out[name] = (at, size, dtype)
        at = _align(at + size)
    return out


def _write(handle: Any, array: np.ndarray, release: Callable[[], None] = lambda: None) -> None:
    """``array``'s bytes in C order, a slice of rows at a time (no full-size copy), ``release``
    called after each (a mapped array's pages read so far, handed back)."""
    if array.ndim == 1 or array.flags.c_contiguous:
        flat = array.reshape(-1) if array.flags.c_contiguous else np.ascontiguousarray(array).reshape(-1)
        step = max(1, _SLICE // max(flat.itemsize, 1))
        for start in range(0, len(flat), step):
            handle.write(np.ascontiguousarray(flat[start : start + step]).data)
            release()
        return
    step = max(1, _SLICE // max(array.shape[1] * array.itemsize, 1))
    for start in range(0, len(array), step):
        handle.write(np.ascontiguousarray(array[start : start + step]).data)
        release()


def save(path: Path, ids: np.ndarray, lengths: np.ndarray, matrix: UnitRows, rows: int, mode: int = 0o600) -> None:
    """Write the first ``rows`` rows of ``matrix`` (memories ``ids[:rows]``) to ``path``, whole or not at all.

    ``lengths`` are the memories' text, summary and headline lengths in
    characters, (rows, 3): reading them from DuckDB means reading every text.
    """
    ids = np.asarray(ids[:rows], dtype=np.int64)
    kind = matrix.kind if matrix.compact else "float32"
    dim = matrix.dim
    sections = _sections(kind, rows, dim)
    header = {
        "format": FORMAT, "kind": kind, "dim": dim, "rows": rows,
        "first_id": int(ids[0]) if rows else None, "last_id": int(ids[-1]) if rows else None,
        "ids": digest(ids), "sections": {name: [at, size] for name, (at, size, _) in sections.items()},
    }
    head = MAGIC + json.dumps(header).encode()
    if len(head) > HEADER:
        raise ValueError("matrix file header too long")
    for stale in path.parent.glob(f"{path.name}.tmp-*"):  # a save that a crash stopped
        try:
            stale.unlink()
        except OSError:
            pass
    temp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(head.ljust(HEADER, b" "))
            handle.write(np.ascontiguousarray(lengths[:rows], dtype="<i4").data)
            handle.seek(sections["exact"][0])
            exact = matrix.exact
            if kind == "float32":
                # Dimension by dimension, as the matrix is held (``order="F"``): one contiguous column each.
                for j in range(dim):
                    handle.write(np.ascontiguousarray(exact[:rows, j]).data)
            else:
                _write(handle, exact[:rows], matrix.release)
            for name in ("codes", "scale"):
                if name not in sections:
                    continue
                handle.seek(sections[name][0])
                _write(handle, (matrix.codes if name == "codes" else matrix.scale)[:rows])  # type: ignore[index]
            end = max(at + size for at, size, _ in sections.values())
            handle.truncate(_align(end))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            temp.unlink()
        except OSError:
            pass
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:  # not every file system lets a directory be flushed
        pass


def erase(path: Path, rows: Sequence[int]) -> int:
    """Zero rows ``rows`` of the file (forgotten memories) on disk, flushed; returns how many it held.

    A forgotten memory's vector must not outlive it in a file beside the
    store. The file stays valid: a forgotten row is zero in the store too.
    """
    header = read_header(path)
    if header is None:
        return 0
    count, dim, kind = int(header["rows"]), int(header["dim"]), str(header["kind"])
    wanted = [int(r) for r in rows if 0 <= int(r) < count]
    if not wanted:
        return 0
    sections = _sections(kind, count, dim)
    with open(path, "r+b") as handle:
        for row in wanted:
            at = sections["exact"][0]
            if kind == "float32":
                for j in range(dim):
                    handle.seek(at + (j * count + row) * 4)
                    handle.write(b"\0\0\0\0")
            else:
                handle.seek(at + row * dim * 4)
                handle.write(bytes(dim * 4))
                width = np.dtype(sections["codes"][2]).itemsize
                handle.seek(sections["codes"][0] + row * dim * width)
                handle.write(bytes(dim * width))
            if "scale" in sections:  # a zero row's scale is 1 (``quantize_int8``)
                handle.seek(sections["scale"][0] + row * 4)
                handle.write(np.float32(1.0).tobytes())
        handle.flush()
        os.fsync(handle.fileno())
    return len(wanted)


def read_header(path: Path) -> dict[str, Any] | None:
    """The header of the file at ``path``, or None if there is no readable one."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEADER)
    except OSError:
        return None
    if not head.startswith(MAGIC):
        return None
    try:
        header = json.loads(head[len(MAGIC) :].decode().strip())
    except (UnicodeDecodeError, ValueError):
        return None
    return header if isinstance(header, dict) else None


def load(
    path: Path,
    kind: str,
    ids: np.ndarray,
    embeddings: Callable[[Sequence[int]], dict[int, np.ndarray]],
    forgotten: np.ndarray,
    scrub: bool = False,
) -> tuple[UnitRows, np.ndarray, int] | None:
    """The matrix in the file at ``path``, its rows' text lengths (``save``) and how many of the store's
    first rows it holds, or None.

    ``ids`` are every memory's id, sorted; ``embeddings(ids)`` the store's raw
    vectors of a few of them; ``forgotten`` every row's forgotten flag
    (those rows are zeroed in the process's copy, and never probed; on disk
    too with ``scrub``).
    """
    kind = parse_kind(kind)
    header = read_header(path)
    if header is None:
        if path.exists():
            log.info("%s is not a matrix file lodviz can read; rebuilding the matrix from the store", path)
        return None

    def refuse(why: str) -> None:
        log.info("%s does not match its store (%s); rebuilding the matrix from the store", path, why)

    try:
        rows, dim = int(header["rows"]), int(header["dim"])
        sections = {name: (int(at), int(size)) for name, (at, size) in header["sections"].items()}
        file_kind = str(header["kind"])
    except (KeyError, TypeError, ValueError):
        refuse("its header is incomplete")
        return None
    if header.get("format") != FORMAT:
        refuse(f"format {header.get('format')!r}, this lodviz reads {FORMAT}")
        return None
    if file_kind != kind:
        refuse(f"it holds a {file_kind} matrix, the store is opened with {kind}")
        return None
    if rows < 1 or rows > len(ids) or dim < 1:
        refuse(f"it holds {rows} rows, the store {len(ids)} memories")
        return None
    layout = _sections(kind, rows, dim)
    expected = {name: (at, size) for name, (at, size, _) in layout.items()}
    if sections != expected:
        refuse("its sections are not where its header says")
        return None
    try:
        size = path.stat().st_size
    except OSError:
        return None
    if size < max(at + length for at, length in expected.values()):
        refuse("it is shorter than its header says")
        return None
    if digest(ids[:rows]) != header.get("ids"):
        refuse("the store's memories are not the ones it was written for")
        return None
    arrays: dict[str, np.ndarray] = {}
    for name, (at, _, dtype) in layout.items():
        shape: tuple[int, ...] = (rows,) if name == "scale" else (rows, 3) if name == "lengths" else (rows, dim)
        order: Literal["F", "C"] = "F" if name == "exact" and kind == "float32" else "C"
        arrays[name] = np.memmap(path, dtype=np.dtype(dtype), mode="c", offset=at, shape=shape, order=order)
    exact = arrays["exact"]
    live = np.flatnonzero(~np.asarray(forgotten[:rows], dtype=bool))
    if len(live):
        probe = np.unique(live[np.linspace(0, len(live) - 1, min(PROBES, len(live))).astype(np.int64)])
        stored = embeddings(ids[probe].tolist())
        if len(stored) != len(probe):
            refuse("some probed memories have no embedding in the store")
            return None
        want = normalize_rows(np.stack([np.asarray(stored[int(i)], dtype=np.float32) for i in ids[probe]]))
        # Within float32 rounding: the file's rows were made unit in batches of another shape.
        if want.shape[1] != dim or not np.allclose(np.asarray(exact[probe]), want, rtol=0.0, atol=1e-6):
            refuse("its vectors differ from the store's")
            return None
    matrix = UnitRows.mapped(kind, exact, arrays.get("codes"), arrays.get("scale"))
    gone = np.flatnonzero(np.asarray(forgotten[:rows], dtype=bool))
    if len(gone):
        # Forgotten while the file was not told (a crash between the two): zero in the process's
        # copy, and on disk when the caller may write (``scrub``).
        left = gone[np.any(np.asarray(exact[gone]) != 0, axis=1)]
        if len(left):
            if scrub:
                erase(path, left.tolist())
            matrix.exact[left] = 0.0
            matrix.written_at(left)
    return matrix, arrays["lengths"], rows


__all__ = ["FORMAT", "HEADER", "MAGIC", "PROBES", "digest", "erase", "load", "path_for", "read_header", "save"]
