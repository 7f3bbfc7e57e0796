"""Times as lodviz keeps them: aware UTC datetimes in records, POSIX seconds in arrays."""

from __future__ import annotations

from datetime import UTC, datetime


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


__all__ = ["utc", "iso", "to_seconds", "from_seconds"]
