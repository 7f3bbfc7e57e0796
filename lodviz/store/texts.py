"""The texts and terms a DuckDB store's searches read from memory, row for row with its mirror.

``TextMirror`` is the store's mirror (``lodviz.store.mirror``) with two more
things kept in its row order: ``short_texts``, every memory's headline,
summary and source (and, in a store whose full texts are small enough, the
text), read from the file by the first search (``short``); and ``terms``,
every summary's BM25 terms (``lexical.TermIndex``), built by a warm-up
(``index_terms``) and extended as rows arrive. Rows written by this process
are added as they are written (``add``, ``forgot``); what a text read needs
from the file it is handed (``read``, ``read_full``), so nothing here holds
the store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from lodviz.errors import StoreError
from lodviz.lexical import TermIndex
from lodviz.matrix import UnitRows
from lodviz.records import Columns
from lodviz.store.mirror import Mirror
from lodviz.store.sql import FORGOTTEN

#: The text column a result shows at each tier (3, the full text, when held: ``ShortTexts.full``).
TIER_COLUMN = {1: "headline", 2: "summary"}


class ShortTexts:
    """Headline, summary and source of every memory, in the mirror's row order (and the full text in a small store).

    A search shows most results as headlines or summaries, scattered over the
    whole file; DuckDB reads them by decompressing a block of 2048 rows per
    hit (~5-7 ms per column for 1000 hits at 1M rows); from memory they take
    well under a millisecond. Full texts, the long ones, stay on disk unless
    all of them together are under ``FULL_TEXTS_IN_MEMORY`` characters: then
    reading the FULL results from the file (~3-4 ms at 100k memories) would be
    most of a search's own cost. Chunks appended by inserts are merged now and then.

    Up to ``objects`` memories the texts are kept as Python strings (numpy
    object arrays): a search then hands out the strings it holds, where Arrow
    would make 2,000-3,000 new ones, each a cache miss after the scan has
    flushed the CPU's caches (at 100k memories ~0.5 ms against ~1.2 ms). A
    Python string costs ~50 bytes more than Arrow's ~250 per memory, so a
    bigger store keeps Arrow's.
    """

    COLUMNS: tuple[str, ...] = ("headline", "summary", "source")
    _MERGE_AT = 16

    def __init__(self, table: pa.Table, full: bool = False, objects: bool = False) -> None:
        self.full = full
        self.objects = objects
        if full:
            self.COLUMNS = (*type(self).COLUMNS, "text")
        self._chunks: list[dict[str, pa.Array | np.ndarray]] = []
        self._starts: list[int] = []
        self.n = 0
        self.extend(table)

    def _chunk(self, table: pa.Table) -> dict[str, pa.Array | np.ndarray]:
        schema = pa.schema([(name, pa.large_string()) for name in self.COLUMNS])
        table = table.select(list(self.COLUMNS)).cast(schema).combine_chunks()
        if self.objects:
            return {name: table.column(name).to_numpy(zero_copy_only=False) for name in self.COLUMNS}
        return {name: table.column(name).chunk(0) if len(table) else pa.array([], pa.large_string()) for name in self.COLUMNS}

    def extend(self, table: pa.Table) -> None:
        if not len(table):
            return
        self._chunks.append(self._chunk(table))
        self._starts.append(self.n)
        self.n += len(table)
        if len(self._chunks) > self._MERGE_AT:
            # Merge the small chunks inserts added, not the big first one, unless
            # they have outgrown it: copying everything on every 17th insert
            # would cost ~170 ms and twice the memory at 1M memories.
            first = len(self._chunks[0]["source"])
            keep = 0 if self.n - first > first else 1
            parts = self._chunks[keep:]
            merged = {
                name: np.concatenate([p[name] for p in parts]) if self.objects
                else pa.concat_arrays([p[name] for p in parts])
                for name in self.COLUMNS
            }
            self._chunks = self._chunks[:keep] + [merged]
            self._starts = self._starts[:keep] + [self._starts[keep]]

    @staticmethod
    def _take(values: pa.Array | np.ndarray, rows: np.ndarray) -> list[str | None]:
        if isinstance(values, np.ndarray):
            return values[rows].tolist()
        return values.take(pa.array(rows)).to_pylist()

    def take_by(self, rows: np.ndarray, keys: np.ndarray, columns: dict[int, str]) -> list[str | None]:
        """For each of ``rows``, the column that its key names in ``columns`` (None for a key not there)."""
        if self.objects and len(self._chunks) == 1:  # one gather per column into one array
            chunk = self._chunks[0]
            out = np.full(len(rows), None, dtype=object)
            for key, column in columns.items():
                positions = np.flatnonzero(keys == key)
                if len(positions):
                    out[positions] = chunk[column][rows[positions]]
            return out.tolist()
        texts: list[str | None] = [None] * len(rows)
        for key, column in columns.items():
            positions = np.flatnonzero(keys == key)
            if len(positions):
                for position, text in zip(positions.tolist(), self.take(rows[positions], column)):
                    texts[position] = text
        return texts

    def take(self, rows: np.ndarray, column: str) -> list[str | None]:
        """``column`` at mirror rows ``rows``, in their order."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(self._chunks) == 1:
            return self._take(self._chunks[0][column], rows)
        out: list[str | None] = [None] * len(rows)
        which = np.searchsorted(np.asarray(self._starts), rows, side="right") - 1
        for chunk in np.unique(which).tolist():
            positions = np.flatnonzero(which == chunk)
            local = rows[positions] - self._starts[chunk]
            for position, value in zip(positions.tolist(), self._take(self._chunks[chunk][column], local)):
                out[position] = value
        return out

    def texts(
        self, rows: np.ndarray, tiers: np.ndarray, ids: np.ndarray, read_full: Callable[[list[int]], dict[int, str]]
    ) -> tuple[list[str], list[str | None]]:
        """The text at its tier and the source of each of ``rows`` (the memories ``ids``); full texts not
        held are read with ``read_full`` (ids: texts)."""
        sources = self.take(rows, "source")
        texts = self.take_by(rows, tiers, {**TIER_COLUMN, 3: "text"} if self.full else TIER_COLUMN)
        positions = np.flatnonzero(tiers >= 3) if not self.full else np.zeros(0, dtype=np.int64)
        if len(positions):
            full = read_full(ids[positions].tolist())
            for position in positions.tolist():
                texts[position] = full[int(ids[position])]
        return texts, sources  # type: ignore[return-value]

    def summaries(self, start: int, stop: int) -> list[str]:
        """The summaries of mirror rows ``start:stop``."""
        return [text or "" for text in self.take(np.arange(start, stop), "summary")]


class TextMirror(Mirror):
    """The mirror with the short texts (``ShortTexts``) and the summaries' terms the searches read from memory."""

    #: Summaries indexed per step while ``index_terms`` builds the term index (the lock is held only to read them).
    TERMS_BATCH = 50_000

    def __init__(self, state: Columns, matrix: UnitRows) -> None:
        super().__init__(state, matrix)
        self.short_texts: ShortTexts | None = None  # loaded by the first search
        # Every summary's BM25 terms (``lexical.TermIndex``): built by ``index_terms``, then extended as rows arrive.
        self.terms: TermIndex | None = None

    def short(self, read: Callable[[bool], pa.Table], full_up_to: int, objects_up_to: int, where: str) -> ShortTexts:
        """The short texts, read on first use: ``read(full)`` is every memory's id, headline, summary and
        source, and text if ``full`` (all full texts together at most ``full_up_to`` characters); Python
        strings up to ``objects_up_to`` memories. ``where`` names the store if its rows are not the mirror's."""
        if self.short_texts is None:
            full = self.full_texts_fit(self.n, full_up_to)
            self.short_texts = self.short_from(read(full), self.n, full, objects_up_to, where)
        return self.short_texts

    def full_texts_fit(self, n: int, full_up_to: int) -> bool:
        """Whether the first ``n`` rows' full texts are held with the short ones (at most ``full_up_to`` characters)."""
        return int(self.column("len_text")[:n].sum()) <= full_up_to

    def short_from(self, table: pa.Table, n: int, full: bool, objects_up_to: int, where: str) -> ShortTexts:
        """``ShortTexts`` of the first ``n`` rows from ``table`` (``short``'s ``read``), checked against their ids.

        Touches nothing of the mirror's but the ids of those rows, which never
        change, so a warm-up makes it without holding the store's lock."""
        order = np.argsort(table.column("id").to_numpy(), kind="stable")
        if not np.array_equal(table.column("id").to_numpy()[order], self.column("ids")[:n]):
            raise StoreError(f"{where} changed under this process; reopen it.")
        if np.any(order[1:] < order[:-1]):
            table = table.take(pa.array(order))
        return ShortTexts(table, full=full, objects=n <= objects_up_to)

    def add(self, state: Columns, vectors: np.ndarray, table: pa.Table) -> None:
        """Rows this process wrote (ids above every one held): their columns, unit vectors and texts (``table``)."""
        self.append(state, vectors)
        if self.short_texts is not None:
            self.short_texts.extend(table)

    def forgot(self, memory_id: int) -> None:
        """A memory was forgotten: no vector, no texts (read again when needed), its terms erased."""
        row = self.rows([memory_id])
        self.column("forgotten")[row] = True
        self.matrix.exact[row] = 0.0
        self.matrix.written_at(row)
        self.short_texts = None
        if self.terms is not None and int(row[0]) < len(self.terms):
            self.terms.replace(int(row[0]), FORGOTTEN)

    def term_counts(self, rows: np.ndarray, wanted: Sequence[str], short: Callable[[], ShortTexts]) -> tuple[np.ndarray, np.ndarray]:
        """``lexical.TermIndex.counts`` of ``rows``, the index first extended by rows written since (``short``: the texts)."""
        assert self.terms is not None
        if len(self.terms) < self.n:
            self.terms.extend(short().summaries(len(self.terms), self.n))
        return self.terms.counts(rows, wanted)

    def index_terms(self, n: int, lock: threading.RLock, current: Callable[[], bool], short: Callable[[], ShortTexts]) -> None:
        """Build ``terms`` for rows ``:n``, splitting the summaries outside ``lock`` (~1 s per 100k): searches
        meanwhile read the summaries instead. Given up once ``current()`` is False (the store reloaded or closed)."""
        index = TermIndex()
        for start in range(0, n, self.TERMS_BATCH):
            with lock:
                if not current():
                    return
                summaries = short().summaries(start, min(start + self.TERMS_BATCH, n))
            index.extend(summaries)
        with lock:
            if not current() or self.terms is not None:
                return
            # Memories forgotten while it was built: their summaries are gone.
            for row in np.flatnonzero(self.column("forgotten")[:n]).tolist():
                index.replace(row, FORGOTTEN)
            self.terms = index


__all__ = ["ShortTexts", "TextMirror", "TIER_COLUMN"]
