"""The in-process mirror of a store: the numeric columns and the unit embedding matrix of every memory.

Searches read the columns (``records.Columns``) and the matrix
(``matrix.UnitRows``) from memory, in id order, row for row. Both backends keep
one ``Mirror`` and bring it forward as rows are written:

- ``append``: rows this process wrote, every id above those held (DuckDB's
  inserts; the arrays grow by doubling, so a snapshot taken before, a view of
  the first rows, keeps what it was taken with);
- ``merge``: rows another process changed or added, ids in any order
  (PostgreSQL's reads of what was stamped since): changed rows are replaced and
  new ones placed in id order. What it changes it copies first, so columns
  and matrices handed out before keep what they were taken with;
- ``column(name)``: one column to change in place (DuckDB's touch, floor,
  layout: the writes this process makes, counted by the store's version).

``rows``/``present_rows`` find the rows of ids (``present_rows`` refuses an id
not held); ``holds`` says which ids are held.

``passages`` (a ``PassageMirror``) holds the passages of the memories held,
brought forward by the backend with the rows: added with new memories (DuckDB's
inserts; PostgreSQL reads those of the ids a merge brings in) and dropped with
a forgotten one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lodviz.errors import StoreError
from lodviz.matrix import UnitRows
from lodviz.records import ROW_FIELDS, Columns, Passages
from lodviz.scoring import normalize_rows


def code_agents(known: list[str], names: Sequence[str]) -> np.ndarray:
    """Integer codes of agent ``names`` in ``known``, adding new names to it."""
    index = {name: i for i, name in enumerate(known)}
    codes = []
    for name in names:
        if name not in index:
            index[name] = len(known)
            known.append(name)
        codes.append(index[name])
    return np.asarray(codes, dtype=np.int32)


class PassageMirror:
    """Every passage of the memories a mirror holds, in ``Passages`` order (memory id ascending, then position).

    Passages of memories above every one held are appended into arrays that
    grow by doubling, so ``Passages`` handed out before (views of the first
    rows) keep what they were taken with; rows placed among the held ones
    (another writer's memory, committed late) or taken out (a forget) make new
    arrays, for the same reason.
    """

    def __init__(self) -> None:
        self.n = 0
        self._rows = Passages.empty(0)  # capacity rows; the first ``n`` are held

    def passages(self, dim: int) -> Passages:
        """The rows held (an empty mirror's vectors have ``dim`` columns)."""
        if not self.n:
            return Passages.empty(dim)
        return self._rows.take(slice(0, self.n))

    def add(self, incoming: Passages) -> None:
        """Passages of memories not held yet, in ``Passages`` order; their vectors as stored (made unit here)."""
        if not len(incoming):
            return
        incoming = Passages(
            np.asarray(incoming.owner, dtype=np.int64), np.asarray(incoming.position, dtype=np.int32),
            np.asarray(incoming.spans, dtype=np.int64).reshape(-1, 2),
            normalize_rows(np.asarray(incoming.vectors, dtype=np.float32)),
        )
        if self.n and incoming.owner[0] <= self._rows.owner[self.n - 1]:
            held = self._rows.take(slice(0, self.n))
            both = [np.concatenate([getattr(held, name), getattr(incoming, name)]) for name in ("owner", "position", "spans", "vectors")]
            order = np.lexsort((both[1], both[0]))
            self._rows = Passages(*(column[order] for column in both))
            self.n = len(order)
            return
        need = self.n + len(incoming)
        if need > len(self._rows) or self._rows.vectors.shape[1] != incoming.vectors.shape[1]:
            capacity = max(need, 2 * len(self._rows), 1024)
            grown = Passages(
                np.empty(capacity, dtype=np.int64), np.empty(capacity, dtype=np.int32),
                np.empty((capacity, 2), dtype=np.int64), np.empty((capacity, incoming.vectors.shape[1]), dtype=np.float32),
            )
            if self.n:
                for name in ("owner", "position", "spans", "vectors"):
                    getattr(grown, name)[: self.n] = getattr(self._rows, name)[: self.n]
            self._rows = grown
        for name in ("owner", "position", "spans", "vectors"):
            getattr(self._rows, name)[self.n : need] = getattr(incoming, name)
        self.n = need

    def drop(self, ids: Sequence[int] | np.ndarray) -> None:
        """Take out the passages of memories ``ids`` (forgotten)."""
        if not self.n or not len(ids):
            return
        held = self._rows.take(slice(0, self.n))
        gone = np.isin(held.owner, np.asarray(ids, dtype=np.int64))
        if gone.any():
            self._rows = held.take(np.flatnonzero(~gone))  # a copy: what was handed out stays as it was
            self.n = len(self._rows)


class Mirror:
    """The columns and the unit embedding matrix (``lodviz.matrix``) of every memory, in id order, and their passages."""

    def __init__(self, state: Columns, matrix: UnitRows) -> None:
        self.n = len(state)
        self._state = state
        self.matrix = matrix
        self.passages = PassageMirror()

    @classmethod
    def of(cls, state: Columns, vectors: np.ndarray, kind: str = "float32") -> Mirror:
        """A mirror of ``state`` and its unit ``vectors`` (rows in any order: put in id order here)."""
        order = np.argsort(state.ids, kind="stable")
        dim = vectors.shape[1] if vectors.ndim == 2 else 0
        matrix = UnitRows(kind, dim, len(order))
        if len(order):
            matrix.exact[:] = vectors[order]
            matrix.written(0, len(order))
        ordered = state.take(order)
        ordered.agent_names = state.agent_names
        return cls(ordered, matrix)

    def code_agents(self, names: Sequence[str]) -> np.ndarray:
        """Integer codes for agent names, adding new names to the list."""
        return code_agents(self._state.agent_names, names)

    def state(self) -> Columns:
        state = self._state.take(slice(0, self.n))
        state.agent_names = list(state.agent_names)  # a snapshot keeps the names it was taken with
        return state

    def vectors(self) -> np.ndarray:
        return self.matrix.exact[: self.n]

    def append(self, state: Columns, vectors: np.ndarray) -> None:
        """Rows whose ids are above every id held, in id order."""
        need = self.n + len(state)
        if need > len(self._state.ids):
            capacity = max(need, 2 * len(self._state.ids), 1024)
            grown = {}
            for name in ROW_FIELDS:
                old = getattr(self._state, name)
                new = np.empty(capacity, dtype=old.dtype)
                new[: self.n] = old[: self.n]
                grown[name] = new
            self._state = Columns(**grown, agent_names=self._state.agent_names)
            if self.matrix.dim == 0:  # an empty store's matrix is (0, 0): nothing to carry over
                self.matrix = UnitRows(self.matrix.kind, vectors.shape[1], capacity)
            else:
                self.matrix.grow(capacity, self.n)
        for name in ROW_FIELDS:
            getattr(self._state, name)[self.n : need] = getattr(state, name)
        self.matrix.exact[self.n : need] = vectors
        self.matrix.written(self.n, need)
        self.n = need

    def merge(self, incoming: Columns, vectors: np.ndarray) -> None:
        """Rows changed or added elsewhere (ids in any order; agent codes from ``code_agents``)."""
        if not len(incoming):
            return
        held = self._state.ids[: self.n]
        at = np.searchsorted(held, incoming.ids)
        known = np.zeros(len(incoming), dtype=bool)
        if self.n:
            known = (at < self.n) & (held[np.minimum(at, self.n - 1)] == incoming.ids)
        if known.any():
            rows = at[known]
            self._state = Columns(
                **{name: getattr(self._state, name).copy() for name in ROW_FIELDS}, agent_names=self._state.agent_names
            )
            for name in ROW_FIELDS:
                getattr(self._state, name)[rows] = getattr(incoming, name)[known]
            moved = np.any(self.matrix.exact[rows] != vectors[known], axis=1)
            if moved.any():  # a forgotten memory's zeroed vector: a matrix of its own, the old one left as it was
                matrix = UnitRows(self.matrix.kind, self.matrix.dim, self.matrix.capacity)
                matrix.exact[: self.n] = self.matrix.exact[: self.n]
                matrix.exact[rows[moved]] = vectors[known][moved]
                matrix.written(0, self.n)
                self.matrix = matrix
        new = np.flatnonzero(~known)
        if not len(new):
            return
        new = new[np.argsort(incoming.ids[new], kind="stable")]
        if not self.n or incoming.ids[new[0]] > held[-1]:
            self.append(incoming.take(new), vectors[new])
            return
        # An id below the last one held (another writer's transaction committed late): rebuilt in id order.
        ids = np.concatenate([held, incoming.ids[new]])
        order = np.argsort(ids, kind="stable")
        fields = {
            name: np.concatenate([getattr(self._state, name)[: self.n], getattr(incoming, name)[new]])[order]
            for name in ROW_FIELDS
        }
        exact = np.concatenate([self.matrix.exact[: self.n], vectors[new]])[order]
        self._state = Columns(**fields, agent_names=self._state.agent_names)
        self.matrix = UnitRows(self.matrix.kind, exact.shape[1], len(ids))
        self.matrix.exact[:] = exact
        self.matrix.written(0, len(ids))
        self.n = len(ids)

    def present_rows(self, ids: np.ndarray) -> np.ndarray:
        """``rows`` of ``ids``, every one of which must be held."""
        guessed = self._guess_rows(ids)
        if guessed is not None:  # checked there, id by id
            return guessed
        rows = np.searchsorted(self._state.ids[: self.n], ids)
        found = rows < self.n
        found[found] = self._state.ids[rows[found]] == ids[found]
        if not found.all():
            raise StoreError(f"no memory with id {int(ids[~found][0])}.")
        return rows

    def rows(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        wanted = np.asarray(ids, dtype=np.int64)
        guessed = self._guess_rows(wanted)
        return guessed if guessed is not None else np.searchsorted(self._state.ids[: self.n], wanted)

    def _guess_rows(self, wanted: np.ndarray) -> np.ndarray | None:
        """The rows of ``wanted`` if each is its id less the first id (checked), else None.

        Ids are handed out in order without gaps, so that is the usual case: one
        look-up each, where a binary search would miss the CPU's cache ~17 times
        per id after a scan of the matrix has flushed it.
        """
        if not self.n or not len(wanted):
            return None
        known = self._state.ids[: self.n]
        guess = wanted - known[0]
        inside = (guess >= 0) & (guess < self.n)
        if inside.all() and np.array_equal(known[guess], wanted):
            return guess
        return None

    def holds(self, ids: np.ndarray) -> np.ndarray:
        """Which of ``ids`` are held (a mask)."""
        if not self.n:
            return np.zeros(len(ids), dtype=bool)
        held = self._state.ids[: self.n]
        at = np.minimum(np.searchsorted(held, ids), self.n - 1)
        return held[at] == ids

    def column(self, name: str) -> np.ndarray:
        return getattr(self._state, name)


__all__ = ["Mirror", "PassageMirror", "code_agents"]
