"""How a store holds its unit embedding matrix in memory: exact float32, or compact.

``float32`` (the default) keeps every unit vector in RAM: 1.4 GiB at 1M
memories of 384 dimensions, 14 GiB at 10M, past what a 24 GiB machine holds
with everything else. The compact kinds keep a copy for scanning in RAM,
``float16`` (half) or ``int8`` with a scale per row (a quarter), and the
exact float32 vectors in a memory-mapped temporary file that the operating
system pages in and out as it can. A search scans the compact copy for the
``OVERSAMPLE * k`` nearest, then rescores those exactly from the float32 rows
and keeps the k best: S of every result is the exact cosine, so tiers are
those of an exact search whenever the true k nearest are among the
candidates (docs/benchmarks.md measures how often: the recall).

Everything that reads the whole matrix (the landscape, the map) reads the
memory-mapped float32 copy: exact, at the speed of the page cache.

In RAM, ``float32`` is held dimension by dimension (column-major: the rows'
first components side by side, then their second, ...), still indexed
(rows, dim). A scan, ``matrix @ q``, is then BLAS's streaming ``gemv`` "N"
kernel, one multiply-add down each dimension for all rows at once, instead of
a dot product per row: 5.2-5.6 ms against 7.6-8.1 ms for 100k rows here, and
43-56 ms against 73-75 ms for 1M (``benchmarks/run.py`` sets both layouts side
by side). Gathering scattered rows costs more in this layout (2,000 rows:
~11 ms against ~0.2 ms); nothing on a search's path does it.
"""

from __future__ import annotations

import functools
import mmap
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np

from lodviz import selection
from lodviz.errors import InvalidParameters
from lodviz.ivf import MIN_VISIBLE_SHARE, InvertedLists

KINDS = ("float32", "float16", "int8")
#: Candidates a compact scan hands to the exact rescoring, per result wanted.
OVERSAMPLE = 2
#: Rows converted to float32 at a time in a scan: small enough to stay in cache.
_CHUNK = 4096
#: Threads a scan is split between.
_THREADS = max(1, min(os.cpu_count() or 1, 8))


def parse_kind(value: str | None) -> str:
    """A matrix kind from a setting (None: float32), refused with a clear message if unknown."""
    kind = (value or "float32").strip().lower()
    if kind not in KINDS:
        raise InvalidParameters(f"the embedding matrix is one of {', '.join(KINDS)}, got {value!r}.")
    return kind


def quantize_int8(unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and a float32 scale per row, ``row ~ codes * scale`` (zero rows stay zero)."""
    unit = np.asarray(unit, dtype=np.float32)
    peak = np.max(np.abs(unit), axis=1) if unit.size else np.zeros(len(unit), dtype=np.float32)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(unit / scale[:, None]).astype(np.int8)
    return codes, scale


@functools.cache
def _blas() -> Any:
    try:
        from threadpoolctl import ThreadpoolController  # scikit-learn's dependency

        return ThreadpoolController()
    except Exception:  # not installed, or it cannot find the library: leave BLAS as it is
        return None


def _one_blas_thread() -> AbstractContextManager[Any]:
    # A scan makes hundreds of small matrix-vector products; with BLAS's threads
    # woken for each, one scan of 200k rows took 290-400 ms here instead of 15.
    controller = _blas()
    return controller.limit(limits=1, user_api="blas") if controller is not None else nullcontext()


def _half_to_float(half: np.ndarray, out: np.ndarray, sign: np.ndarray) -> None:
    """float16 to float32 by moving bits: numpy's own cast took ~4 ns an element here, this ~1.

    Exact for normal numbers; zero and subnormals (below 6e-5) come out as
    about 3e-5: harmless in a scan whose candidates are rescored exactly.
    """
    bits = out.view(np.uint32)
    np.copyto(bits, half.view(np.uint16), casting="unsafe")
    np.bitwise_and(bits, 0x8000, out=sign)
    np.left_shift(sign, 16, out=sign)
    np.bitwise_and(bits, 0x7FFF, out=bits)
    np.left_shift(bits, 13, out=bits)
    np.add(bits, (127 - 15) << 23, out=bits)
    np.bitwise_or(bits, sign, out=bits)


def _scan_part(codes: np.ndarray, q: np.ndarray, out: np.ndarray) -> None:
    shape = (min(_CHUNK, len(codes)), codes.shape[1] if codes.ndim == 2 else 0)
    buffer = np.empty(shape, dtype=np.float32)
    sign = np.empty(shape, dtype=np.uint32) if codes.dtype == np.float16 else None
    for start in range(0, len(codes), _CHUNK):
        stop = min(start + _CHUNK, len(codes))
        block = buffer[: stop - start]
        if sign is not None:
            _half_to_float(codes[start:stop], block, sign[: stop - start])
        else:
            np.copyto(block, codes[start:stop], casting="unsafe")
        np.dot(block, q, out=out[start:stop])


@functools.cache
def _workers() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="lodviz-scan")


def scan(codes: np.ndarray, scale: np.ndarray | None, query: np.ndarray) -> np.ndarray:
    """Approximate ``codes @ query`` (times each row's scale for int8), float32, a cache-sized chunk at a time.

    Large matrices are split between ``_THREADS`` threads (numpy lets go of
    the interpreter while it converts and multiplies), each with BLAS held to
    one thread of its own.
    """
    q = np.asarray(query, dtype=np.float32)
    out = np.empty(len(codes), dtype=np.float32)
    with _one_blas_thread():
        if _THREADS < 2 or len(codes) < 8 * _CHUNK:
            _scan_part(codes, q, out)
        else:
            bounds = np.linspace(0, len(codes), _THREADS + 1).astype(int)
            parts = [
                _workers().submit(_scan_part, codes[a:b], q, out[a:b]) for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())
            ]
            for part in parts:
                part.result()
    if scale is not None:
        out *= scale[: len(out)]
    return out


class _MappedRows:
    """A growable float32 (rows, dim) array in an unlinked temporary file, memory-mapped.

    Or, made ``over`` the rows of a store's matrix file (``lodviz.store.matrix_file``),
    that mapping until the first growth, which copies its rows into a temporary file.
    """

    def __init__(self, dim: int, capacity: int) -> None:
        self.dim = dim
        self._file: Any = None
        self.array = self._map(max(capacity, 1))

    @classmethod
    def over(cls, array: np.ndarray) -> _MappedRows:
        rows = cls.__new__(cls)
        rows.dim = array.shape[1]
        rows._file = None
        rows.array = array
        return rows

    def _map(self, capacity: int) -> np.ndarray:
        if self._file is None:
            fd, path = tempfile.mkstemp(prefix="lodviz-vectors-", suffix=".f32")
            self._file = os.fdopen(fd, "r+b")
            os.unlink(path)  # gone with the process, however it ends
        self._file.truncate(capacity * self.dim * 4)
        return np.memmap(self._file, dtype=np.float32, mode="r+", shape=(capacity, self.dim))

    def grow(self, capacity: int) -> None:
        # Views of the old mapping (earlier snapshots) stay valid: the file only grows.
        adopted = self.array if self._file is None else None
        self.array = self._map(capacity)
        if adopted is not None:
            self.array[: len(adopted)] = adopted

    def release(self) -> None:
        """Hand back the pages of the temporary file this process has touched (they stay in the file).

        Rows written through the mapping stay resident, counted as the
        process's, until the kernel needs the memory: 14 GiB of a 10M store's
        first load. Not for a mapping made ``over`` a matrix file, whose
        changed pages (forgotten rows) are the process's own copies.
        """
        handle = getattr(self.array, "_mmap", None)
        if self._file is None or handle is None or not hasattr(mmap, "MADV_DONTNEED"):
            return
        try:
            handle.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError):  # advice only
            pass

    def advise(self, scattered: bool) -> None:
        """Tell the kernel the next reads are scattered rows (no read-around), or back to normal.

        A search rescores 2k rows spread over the whole file: each page fault
        would otherwise read ~128 KiB around its 1.5 KiB row, 256 MiB per
        search at 2k candidates, from disk once the file outgrows the page cache.
        """
        handle = getattr(self.array, "_mmap", None)
        if handle is None or not hasattr(mmap, "MADV_RANDOM"):
            return
        try:
            handle.madvise(mmap.MADV_RANDOM if scattered else mmap.MADV_NORMAL)
        except (OSError, ValueError):  # advice only
            pass


class UnitRows:
    """The unit embedding matrix of a store's cache, row for row, of one ``kind``, with room to grow."""

    def __init__(self, kind: str, dim: int, capacity: int) -> None:
        self.kind = parse_kind(kind)
        self.dim = dim
        self._mapped: _MappedRows | None = None
        self.codes: np.ndarray | None = None
        self.scale: np.ndarray | None = None
        self.exact = self._allocate(capacity)
        self._no_index()

    @classmethod
    def mapped(cls, kind: str, exact: np.ndarray, codes: np.ndarray | None, scale: np.ndarray | None) -> UnitRows:
        """A matrix over arrays mapped from a file (``lodviz.store.matrix_file``), full to capacity."""
        matrix = cls.__new__(cls)
        matrix.kind = parse_kind(kind)
        matrix.dim = exact.shape[1]
        matrix._mapped = _MappedRows.over(exact) if matrix.compact else None
        matrix.codes, matrix.scale = (codes, scale) if matrix.compact else (None, None)
        matrix.exact = exact
        matrix._no_index()
        return matrix

    def _no_index(self) -> None:
        #: The inverted-file index over the first rows (``lodviz.ivf``), if one was built and still holds.
        self.index: InvertedLists | None = None
        # While an index is built outside the store's lock: the rows changed meanwhile, and the
        # first row rewritten wholesale (an index of the old rows would be wrong from there on).
        self._edited: list[np.ndarray] | None = None
        self._rewritten_from: int | None = None

    @property
    def compact(self) -> bool:
        return self.kind != "float32" and self.dim > 0

    def _allocate(self, capacity: int) -> np.ndarray:
        if not self.compact:
            return np.empty((capacity, self.dim), dtype=np.float32, order="F")  # dimension-major: see the module docstring
        if self._mapped is None:
            self._mapped = _MappedRows(self.dim, capacity)
        else:
            self._mapped.grow(capacity)
        codes = np.empty((capacity, self.dim), dtype=np.int8 if self.kind == "int8" else np.float16)
        scale = np.ones(capacity, dtype=np.float32) if self.kind == "int8" else None
        if self.codes is not None:
            keep = min(len(self.codes), capacity)
            codes[:keep] = self.codes[:keep]
            if scale is not None and self.scale is not None:
                scale[:keep] = self.scale[:keep]
        self.codes, self.scale = codes, scale
        return self._mapped.array

    @property
    def capacity(self) -> int:
        return len(self.exact)

    def grow(self, capacity: int, filled: int) -> None:
        """Room for ``capacity`` rows, keeping the first ``filled``."""
        if self.compact:
            self.exact = self._allocate(capacity)  # the file keeps its rows
            return
        matrix = np.empty((capacity, self.dim), dtype=np.float32, order="F")
        matrix[:filled] = self.exact[:filled]
        self.exact = matrix

    def written(self, start: int, stop: int) -> None:
        """Rows ``start:stop`` of ``exact`` were just written: bring the compact copy (and any index) up to date."""
        if stop <= start:
            return
        if self.index is not None and start < self.index.covers:
            self.index = None  # rows it holds were rewritten: rebuilt by the next warm-up
        if self._edited is not None:
            self._rewritten_from = start if self._rewritten_from is None else min(start, self._rewritten_from)
        if not self.compact:
            return
        assert self.codes is not None
        if self.kind == "int8":
            assert self.scale is not None
            self.codes[start:stop], self.scale[start:stop] = quantize_int8(self.exact[start:stop])
        else:
            self.codes[start:stop] = self.exact[start:stop]

    def written_at(self, rows: np.ndarray) -> None:
        """``written`` for scattered rows (a forgotten memory's, zeroed): changed in the index too, in place."""
        if not len(rows):
            return
        if self.index is not None:
            self.index.update(np.atleast_1d(rows), self.exact[rows])
        if self._edited is not None:
            self._edited.append(np.atleast_1d(np.asarray(rows, dtype=np.int64)).copy())
        if not self.compact:
            return
        assert self.codes is not None
        if self.kind == "int8":
            assert self.scale is not None
            self.codes[rows], self.scale[rows] = quantize_int8(self.exact[rows])
        else:
            self.codes[rows] = self.exact[rows]

    def index_begun(self) -> None:
        """An index of the first rows is about to be built from them, outside the lock: note what changes meanwhile."""
        self._edited, self._rewritten_from = [], None

    def index_built(self, index: InvertedLists | None) -> bool:
        """Take ``index`` (built since ``index_begun``), with the rows changed meanwhile changed in it too;
        False, and no index, if rows it covers were rewritten meanwhile or none was built."""
        edited, rewritten = self._edited or [], self._rewritten_from
        self._edited, self._rewritten_from = None, None
        if index is None or (rewritten is not None and rewritten < index.covers):
            return False
        for rows in edited:
            index.update(rows, self.exact[rows])
        self.index = index
        return True

    def nearest_indexed(
        self, query: np.ndarray, k: int, visible: np.ndarray | None, n: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """``nearest`` from the index and an exact scan of the rows it does not cover, or None where the
        index cannot answer: none, or a matrix prefix it outgrows, or an agent who sees too few rows
        (their nearest are then found by the exact scan, since the probed groups would hold too few)."""
        index = self.index
        if index is None or n < index.covers:
            return None
        covered = visible[: index.covers] if visible is not None else None
        seen: int | None = None
        if covered is not None:
            seen = int(np.count_nonzero(covered))
            if seen < MIN_VISIBLE_SHARE * index.covers:
                return None
            if seen == index.covers:
                covered = None  # an auditor sees everything: no mask to gather
        q = np.asarray(query, dtype=np.float32)
        rows, sims = index.search(q, k, covered, seen)
        if n > index.covers:  # written since the index was built: scored exactly
            tail = np.maximum(self.exact[index.covers : n] @ q, 0.0)
            among = visible[index.covers : n] if visible is not None else None
            best = selection.top_k(tail, k, among=among)
            rows = np.concatenate([rows, best + index.covers])
            sims = np.concatenate([sims, tail[best]]).astype(np.float32)
            keep = selection.top_k(sims, k)
            rows, sims = rows[keep], sims[keep]
        return rows.astype(np.int64), sims.astype(np.float32)

    def release(self) -> None:
        """Let the exact rows' pages of a compact matrix go from the process (``_MappedRows.release``)."""
        if self._mapped is not None:
            self._mapped.release()

    def nbytes_in_memory(self, n: int) -> int:
        """What the first ``n`` rows hold in RAM (the mapped float32 file not counted)."""
        if not self.compact:
            return n * self.dim * 4
        per_row = self.dim * (1 if self.kind == "int8" else 2) + (4 if self.kind == "int8" else 0)
        return n * per_row

    def similarity(self, query: np.ndarray, n: int) -> np.ndarray:
        """S of the first ``n`` rows for ``query`` (a unit vector), from the compact copy: approximate.

        For views of the whole store (the landscape), where reading every exact
        row back from the mapped file would cost more than the scan itself.
        """
        assert self.codes is not None
        approx = scan(self.codes[:n], self.scale[:n] if self.scale is not None else None, np.asarray(query, dtype=np.float32))
        return np.maximum(approx, 0.0, out=approx)

    def nearest(self, query: np.ndarray, k: int, visible: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` rows of the first ``n`` most similar to ``query`` (a unit vector) and their exact S, best first.

        Scans the compact copy for ``OVERSAMPLE * k`` candidates, then rescores
        them with the exact float32 rows.
        """
        assert self.codes is not None
        q = np.asarray(query, dtype=np.float32)
        approx = scan(self.codes[:n], self.scale[:n] if self.scale is not None else None, q)
        among = visible[:n] if visible is not None else None
        k = min(k, n if among is None else int(np.count_nonzero(among)))
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        # Ascending: the mapped file is read in order.
        rows = selection.top_k(approx, min(n, OVERSAMPLE * k), ordered=False, among=among)
        if self._mapped is not None:
            self._mapped.advise(scattered=True)
        try:
            exact = np.maximum(self.exact[rows] @ q, 0.0, dtype=np.float32)
        finally:
            if self._mapped is not None:
                self._mapped.advise(scattered=False)
        best = np.argsort(-exact, kind="stable")[:k]
        return rows[best].astype(np.int64), exact[best]


__all__ = ["KINDS", "OVERSAMPLE", "UnitRows", "parse_kind", "quantize_int8", "scan"]
