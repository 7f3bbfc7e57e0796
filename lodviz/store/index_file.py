"""The inverted-file index of a store (``lodviz.ivf``), kept in a file beside it for the next open.

What the file holds is what a build learns and the store cannot say by
itself: the centroids, which row sits in which group, and the ``nprobe``
measured for them, with the digest of the ids of the rows it covers. The
rows' vectors are not in it: an open gathers them from the store's matrix
(seconds at 1M rows, against tens for a build), so a forgotten memory's
vector is never read back from here. A file whose digest, size or shape
does not match the store's rows, or whose groups do not fit the store's
vectors (a sample of rows, each checked to sit with its nearest centroid),
is not used: ``load`` returns None and the caller builds the index again.

Written to a temporary file and renamed over the old one, so a reader
sees the old file or the new one, never part of one.
"""

from __future__ import annotations

import logging
import os
import threading
import zipfile
from pathlib import Path

import numpy as np

from lodviz.ivf import InvertedLists, assign, centred, grouped_rows
from lodviz.store import matrix_file

log = logging.getLogger(__name__)

#: Changes when the layout does: an older file is rebuilt, not read.
FORMAT = 1
#: Rows whose group is checked against their nearest centroid on load: the ids can match while the
#: vectors do not (another store's file: ids count from 1 in every store).
CHECKED_ROWS = 256
#: The share of them that must sit in the group of their nearest centroid (a forget recentres a group,
#: which can move a row at a border; a file of other vectors agrees for a handful).
AGREEMENT = 0.9


def path_for(store_path: str | os.PathLike[str]) -> Path:
    """Where the index file of the store at ``store_path`` lives."""
    return Path(f"{os.fspath(store_path)}.ivf")


def save(path: Path, index: InvertedLists, ids: np.ndarray, mode: int = 0o600) -> None:
    """Write ``index``, which covers the rows of ``ids`` (every covered row's id, sorted), to ``path``."""
    if len(ids) != index.covers:
        raise ValueError(f"an index of {index.covers} rows named by {len(ids)} ids")
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as handle:
            np.savez(
                handle,
                format=np.int64(FORMAT),
                digest=np.array(matrix_file.digest(ids)),
                covers=np.int64(index.covers),
                centroids=index.centroids,
                order=index.order.astype(np.int32 if index.covers < 2**31 else np.int64),
                offsets=index.offsets,
                nprobe=np.int64(index.nprobe),
                recall=np.float64(index.recall),
            )
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def load(path: Path, matrix: np.ndarray, ids: np.ndarray) -> tuple[InvertedLists, bool] | None:
    """The index in ``path`` over ``matrix`` (the store's unit rows, named by the sorted ``ids``), or None
    when there is no file or it does not match: other rows, other dimensions, another format, damage.

    With it, whether its centroids were made again: each is its group's mean over the rows now, so a
    memory forgotten after the file was last written (a crash between the two) leaves no trace in the
    index; the caller then writes the file again.
    """
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            if int(data["format"]) != FORMAT:
                return _refused(path, "an older format")
            covers = int(data["covers"])
            if covers > len(ids) or covers > len(matrix) or str(data["digest"]) != matrix_file.digest(ids[:covers]):
                return _refused(path, "its rows are not the store's")
            centroids = np.asarray(data["centroids"], dtype=np.float32)
            order = np.asarray(data["order"], dtype=np.int64)
            offsets = np.asarray(data["offsets"], dtype=np.int64)
            nprobe, recall = int(data["nprobe"]), float(data["recall"])
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile) as exc:
        return _refused(path, f"it cannot be read ({exc})")
    well_formed = (
        centroids.ndim == 2
        and centroids.shape[1] == matrix.shape[1]
        and len(order) == covers
        and len(offsets) == len(centroids) + 1
        and offsets[0] == 0
        and offsets[-1] == covers
        and bool(np.all(np.diff(offsets) >= 0))
        and 1 <= nprobe <= len(centroids)
    )
    if not well_formed:
        return _refused(path, "it is not well formed")
    position = np.full(covers, -1, dtype=np.int64)
    if covers and (order.min() < 0 or order.max() >= covers):
        return _refused(path, "it is not well formed")
    position[order] = np.arange(covers, dtype=np.int64)
    if covers and position.min() < 0:  # a row listed twice, another not at all
        return _refused(path, "it is not well formed")
    if not _groups_fit(matrix[:covers], centroids, offsets, position):
        return _refused(path, "its groups do not fit the store's vectors")
    rows = grouped_rows(matrix[:covers], position)
    now = centred(rows, offsets)
    changed = not np.allclose(now, centroids, atol=1e-5)
    return InvertedLists(now, order, offsets, rows, nprobe, recall, position), changed


def facts(path: Path) -> dict[str, int | float] | None:
    """What the file says of its index (rows covered, groups, nprobe, recall), unchecked; None without one."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if int(data["format"]) != FORMAT:
                return None
            return {"covers": int(data["covers"]), "lists": len(data["offsets"]) - 1,
                    "nprobe": int(data["nprobe"]), "recall": float(data["recall"])}
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile):
        return None


def _groups_fit(matrix: np.ndarray, centroids: np.ndarray, offsets: np.ndarray, position: np.ndarray) -> bool:
    picked = np.sort(np.random.default_rng(0).choice(len(matrix), min(len(matrix), CHECKED_ROWS), replace=False))
    vectors = np.asarray(matrix[picked], dtype=np.float32)
    live = np.any(vectors != 0, axis=1)  # a forgotten memory's zeroed row sits anywhere
    if not live.any():
        return True
    group = np.searchsorted(offsets, position[picked[live]], side="right") - 1
    return float(np.mean(assign(vectors[live], centroids) == group)) >= AGREEMENT


def _refused(path: Path, why: str) -> tuple[InvertedLists, bool] | None:
    """None, with the reason logged: the caller builds the index again."""
    log.info("not using the index file %s: %s; the index is built again", path, why)
    return None


__all__ = ["FORMAT", "facts", "load", "path_for", "save"]
