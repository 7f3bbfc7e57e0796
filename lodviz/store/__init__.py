"""Stores: where memories, their usage, the audit log and profiles are kept.

``open_store`` picks the backend a location names: a ``postgresql://`` (or
``postgres://``) URL is a PostgreSQL store with pgvector, shared by any
number of processes; a file path (or ":memory:") is an embedded DuckDB store. ``lodviz.memory.Memory`` is the only
caller of a store.
"""

from __future__ import annotations

from pathlib import Path

from lodviz.store.base import Store


def open_store(location: str | Path, *, read_only: bool = False, matrix: str | None = None) -> Store:
    """The store at ``location``; ``matrix`` is how a DuckDB store holds its embeddings in memory
    (``lodviz.matrix``; a PostgreSQL store searches with pgvector and ignores it).

    A DuckDB store opened read-only after a process was killed with searches
    still in its journal reads them as the store's own writes to come (they were
    acknowledged; the next writable open applies them), so that what it shows,
    and what ``lodviz audit verify`` checks, is the store as it stands.
    """
    from lodviz.store.postgres import PostgresStore, is_postgres_url

    if is_postgres_url(location):
        return PostgresStore(str(location), read_only=read_only)
    from lodviz.store.duckdb import DuckDBStore

    return DuckDBStore(location, read_only=read_only, matrix=matrix, journal="read")


__all__ = ["Store", "open_store"]
