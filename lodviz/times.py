"""Times as lodviz keeps them: aware UTC datetimes in records, POSIX seconds in arrays."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

#: The first and last moments lodviz accepts as a time (a memory's creation or last retrieval,
#: "now", "as of"). A Python datetime holds years 1 to 9999; a day's margin at each end keeps every
#: time zone shift, and a day's step from a stored time, inside that range, so a time once accepted
#: never overflows when it is converted, stored (DuckDB ``TIMESTAMP``, PostgreSQL ``timestamptz``)
#: or read back.
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, 23, 59, 59, 999_999, tzinfo=UTC)


def utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime; naive values are taken to be UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return utc(value).isoformat().replace("+00:00", "Z")


def to_seconds(value: datetime) -> float:
    return utc(value).timestamp()


def from_seconds(value: float | None) -> datetime | None:
    if value is None or value != value:  # NaN: never; cheaper than np.isnan per item
        return None
    return datetime.fromtimestamp(float(value), tz=UTC)


def datetimes(seconds: np.ndarray) -> list[datetime | None]:
    """UTC datetimes of epoch ``seconds``, None for NaN (never)."""
    values = np.asarray(seconds, dtype=np.float64)
    from_ts = datetime.fromtimestamp
    if np.isnan(values).any():
        return [from_ts(x, UTC) if x == x else None for x in values.tolist()]  # NaN: not equal to itself
    return [from_ts(x, UTC) for x in values.tolist()]


class RowDatetimes:
    """The datetimes of one time column (creation, last retrieval) kept by row, made once per row and value.

    A search hands out 1,000 items with two times each. Made afresh they
    cost ~0.3 ms per 1,000 after a scan has flushed the CPU's caches; kept
    in a dict by value, more (~0.45 ms: each lookup misses on a key and a
    value); kept by row, ~0.2 ms. A gather of the values they were made from
    tells which still hold, and only the others are made (a row's last
    retrieval changes when a search touches it). Checking the value, not
    trusting the row, keeps every answer right whatever a row means later.

    Rows at or past ``max_rows`` are made afresh: a store that large spends
    its time in the scan, and ~100 bytes a row would add up. Not thread-safe
    for concurrent ``of`` calls (its owner, ``Memory``, serialises them);
    ``fill`` may run beside one, in the warm-up thread.
    """

    def __init__(self, max_rows: int = 300_000) -> None:
        self.max_rows = max_rows
        # One attribute for the pair, so that ``fill`` replaces both at once.
        self._table: tuple[np.ndarray, np.ndarray] = (np.empty(0, dtype=np.float64), np.empty(0, dtype=object))

    def fill(self, seconds: np.ndarray) -> None:
        """Make the datetimes of every row's value now (the warm-up does, so that searches find them)."""
        values = np.asarray(seconds, dtype=np.float64)
        if len(values) > self.max_rows:
            return
        made = np.fromiter(datetimes(values), dtype=object, count=len(values))
        self._table = (values.copy(), made)

    def of(self, seconds: np.ndarray, rows: np.ndarray | None) -> list[datetime | None]:
        """``datetimes(seconds)``, where ``seconds[i]`` is row ``rows[i]``'s value (None: rows unknown)."""
        values = np.asarray(seconds, dtype=np.float64)
        if rows is None or not len(values):
            return datetimes(values)
        rows = np.asarray(rows, dtype=np.intp)
        if len(rows) != len(values) or int(rows.min()) < 0 or int(rows.max()) >= self.max_rows:
            return datetimes(values)
        kept_seconds, kept = self._reserve(int(rows.max()) + 1)
        before = kept_seconds[rows]
        # A slot never filled holds NaN and None: right for a NaN (never) value as it stands.
        held = (before == values) | (np.isnan(before) & np.isnan(values))
        out = kept[rows]
        stale = np.flatnonzero(~held)
        if len(stale):
            made = np.fromiter(datetimes(values[stale]), dtype=object, count=len(stale))
            out[stale] = made
            kept[rows[stale]] = made  # the datetime first: a value is never kept beside another's datetime
            kept_seconds[rows[stale]] = values[stale]
        result: list[datetime | None] = out.tolist()
        return result

    def _reserve(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        seconds, made = self._table
        if n <= len(seconds):
            return seconds, made
        size = min(max(n, 2 * len(seconds), 1024), self.max_rows)
        grown_seconds = np.full(size, np.nan)
        grown_made = np.full(size, None, dtype=object)
        grown_seconds[: len(seconds)] = seconds
        grown_made[: len(made)] = made
        self._table = (grown_seconds, grown_made)
        return self._table


__all__ = ["EARLIEST", "LATEST", "utc", "iso", "to_seconds", "from_seconds", "datetimes", "RowDatetimes"]
