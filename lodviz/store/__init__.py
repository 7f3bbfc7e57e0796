"""Stores: where memories, their usage, the audit log and profiles are kept.

``open_store`` picks the backend a location names: a file path (or
":memory:") is an embedded DuckDB store. ``lodviz.memory.Memory`` is the only
caller of a store.
"""

from __future__ import annotations

from pathlib import Path

from lodviz.store.base import Store


def open_store(location: str | Path, *, read_only: bool = False) -> Store:
    """The store at ``location``."""
    from lodviz.store.duckdb import DuckDBStore

    return DuckDBStore(location, read_only=read_only)


__all__ = ["Store", "open_store"]
