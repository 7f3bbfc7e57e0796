"""Times as lodviz keeps them: aware UTC datetimes in records, POSIX seconds in arrays."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np


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
    cost ~0.25 ms per 1,000 after a scan has flushed the CPU's caches; kept
    in a dict by value, more (~0.45 ms: each lookup misses on a key and a
    value). Kept by row, a gather of the values they were made from tells
    which still hold, and only the others are made (a row's last retrieval
    changes when a search touches it). Checking the value, not trusting the
    row, keeps every answer right whatever a row means later.

    Rows at or past ``max_rows`` are made afresh. Not thread-safe: its owner
    (``Memory``) serialises access.
    """

    def __init__(self, max_rows: int = 2_000_000) -> None:
        self.max_rows = max_rows
        self._seconds = np.empty(0, dtype=np.float64)
        self._made = np.empty(0, dtype=object)

    def of(self, seconds: np.ndarray, rows: np.ndarray | None) -> list[datetime | None]:
        """``datetimes(seconds)``, where ``seconds[i]`` is row ``rows[i]``'s value (None: rows unknown)."""
        values = np.asarray(seconds, dtype=np.float64)
        if rows is None or not len(values):
            return datetimes(values)
        rows = np.asarray(rows, dtype=np.intp)
        if len(rows) != len(values) or int(rows.min()) < 0 or int(rows.max()) >= self.max_rows:
            return datetimes(values)
        self._reserve(int(rows.max()) + 1)
        kept = self._seconds[rows]
        # A slot never filled holds NaN and None: right for a NaN (never) value as it stands.
        held = (kept == values) | (np.isnan(kept) & np.isnan(values))
        out = self._made[rows]
        stale = np.flatnonzero(~held)
        if len(stale):
            made = np.fromiter(datetimes(values[stale]), dtype=object, count=len(stale))
            out[stale] = made
            self._made[rows[stale]] = made
            self._seconds[rows[stale]] = values[stale]
        result: list[datetime | None] = out.tolist()
        return result

    def _reserve(self, n: int) -> None:
        if n <= len(self._seconds):
            return
        size = min(max(n, 2 * len(self._seconds), 1024), self.max_rows)
        seconds = np.full(size, np.nan)
        made = np.full(size, None, dtype=object)
        seconds[: len(self._seconds)] = self._seconds
        made[: len(self._made)] = self._made
        self._seconds, self._made = seconds, made


__all__ = ["utc", "iso", "to_seconds", "from_seconds", "datetimes", "RowDatetimes"]
