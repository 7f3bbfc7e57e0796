"""Schema changes as small named functions registered in order, and the one runner that applies them.

The shape of sqlite-utils' migrations: a backend keeps one ``Migrations``
(``MIGRATIONS`` in ``duckdb.py`` and ``postgres.py``) and registers each change
with it as a decorator, in the order they were written::

    MIGRATIONS = Migrations()

    @MIGRATIONS
    def m002_profiles(con): ...

A step's name is its function's less the leading ``m`` (``002_profiles``):
the names stores already record. ``apply`` runs, in order, every step the
store's ``_migrations`` table does not name yet, and records each one there;
``missing`` says which a store still needs (a read-only open refuses it).

The runner is handed a ``Target``: the connection each step receives, how a
statement runs, the ``_migrations`` table's DDL and the insert that records a
name, and two guards. ``whole`` is around the entire run (PostgreSQL: one
transaction under an advisory lock, so two processes opening an old schema at
once migrate it once); ``each`` is around one step and its record (DuckDB: a
transaction per step).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, overload

log = logging.getLogger("lodviz.store")

Step = Callable[[Any], None]


@dataclass
class Target:
    """Where the runner applies steps (one per backend)."""

    con: Any  # what each step is handed
    run: Callable[[str, Sequence[Any]], list[tuple]]
    table: str  # CREATE TABLE IF NOT EXISTS _migrations (...)
    record: str  # the INSERT that records one name (its only parameter)
    whole: Callable[[], AbstractContextManager[Any]] = nullcontext
    each: Callable[[], AbstractContextManager[Any]] = nullcontext


class Migrations:
    """Named steps in the order they were registered; iterates as ``(name, function)`` pairs."""

    def __init__(self, steps: Iterable[tuple[str, Step]] = ()) -> None:
        self._steps: list[tuple[str, Step]] = list(steps)

    def __call__(self, step: Step) -> Step:
        """Register ``step`` (a decorator): named after its function, less the leading ``m``."""
        name = step.__name__.lstrip("_").removeprefix("m")
        if name in self.names:
            raise ValueError(f"a migration named {name} is registered already")
        self._steps.append((name, step))
        return step

    def __iter__(self) -> Iterator[tuple[str, Step]]:
        return iter(self._steps)

    def __len__(self) -> int:
        return len(self._steps)

    @overload
    def __getitem__(self, index: int) -> tuple[str, Step]: ...

    @overload
    def __getitem__(self, index: slice) -> Migrations: ...

    def __getitem__(self, index: int | slice) -> tuple[str, Step] | Migrations:
        return Migrations(self._steps[index]) if isinstance(index, slice) else self._steps[index]

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self._steps]

    def missing(self, recorded: Iterable[str]) -> list[str]:
        """The steps a store that recorded ``recorded`` still needs, in order."""
        done = set(recorded)
        return [name for name in self.names if name not in done]

    def apply(self, target: Target, upto: str | None = None) -> list[str]:
        """Apply the pending steps in order (up to and including ``upto``); returns the names applied."""
        applied: list[str] = []
        with target.whole():
            target.run(target.table, ())
            done = {row[0] for row in target.run("SELECT name FROM _migrations", ())}
            for name, step in self._steps:
                if name not in done:
                    with target.each():
                        step(target.con)
                        target.run(target.record, (name,))
                    applied.append(name)
                    log.info("applied migration %s", name)
                if name == upto:
                    break
        return applied


__all__ = ["Migrations", "Target"]
