"""A `lodviz serve --auth` process on a small seeded store, on DuckDB or PostgreSQL, and what the store holds.

The server runs the deterministic hash model (these tests judge who may
change the store, not what retrieval returns), so one starts in about two
seconds. ``StoreState`` is everything a request could change, read through
the library: a test takes it before and after and compares.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import lodviz
from lodviz.testing import HashEmbedder
from tests.mcp.conftest import ServeProcess, child_env

DIMENSION = 384
#: A conflict pair (the detector links them), two agents' memories, a profile.
SEED = [
    {"text": "Paragon Clinical MSA: liability cap at 2x annual fees, carve-out for data breaches.", "agent_id": "legal-review",
     "created_at": "2025-01-10T09:00:00Z"},
    {"text": "Paragon Clinical MSA: liability cap at 3x annual fees, carve-out for data breaches.", "agent_id": "legal-review",
     "created_at": "2025-06-10T09:00:00Z"},
    {"text": "Alice prefers green tea in the afternoon meetings.", "agent_id": "alice", "created_at": "2024-03-01T09:00:00Z"},
    {"text": "The Q3 supplier report is due on the last Friday of September.", "agent_id": "alice", "created_at": "2026-05-30T09:00:00Z"},
    {"text": "Bob keeps the on-call rota in the ops wiki.", "agent_id": "bob", "created_at": "2026-05-01T09:00:00Z"},
]
ROLES = {"vera": "viewer", "otto": "auditor", "ada": "admin"}


@dataclass
class Served:
    server: ServeProcess
    store: str
    tokens: dict[str, str]
    ids: list[int]
    before: dict[str, Any]  # the store's state when the server started

    @property
    def url(self) -> str:
        return self.server.url

    def stop_and_state(self) -> dict[str, Any]:
        """Stop the server (a DuckDB file has one owner) and read what the store holds now."""
        self.server.stop()
        return store_state(self.store)


def open_store(store: str) -> lodviz.Memory:
    return lodviz.open(store, embedder=HashEmbedder(DIMENSION))


def seed(store: str) -> tuple[list[int], dict[str, str]]:
    mem = open_store(store)
    try:
        ids = [mem.add(**record) for record in SEED]
        mem.set_profile("legal-review", "legal", actor="test", reason="seed")
        mem.set_reference_time("2026-06-01T12:00:00Z")
        tokens = {name: mem.create_token(name, role, actor="test")[1] for name, role in ROLES.items()}
        assert mem.conflicts(), "the seed's conflict pair must be linked"
    finally:
        mem.close()
    return ids, tokens


def store_state(store: str) -> dict[str, Any]:
    """Everything a request could change, as plain data: memories with their usage and floors,
    profiles, conflicts, golden queries, tokens, and every audit line except a look's
    (a search in the landscape is on record as touching nothing; a viewer may look)."""
    mem = open_store(store)
    try:
        return {
            "memories": [r.to_dict() if hasattr(r, "to_dict") else repr(r) for r in mem.export_records()],
            "floors": {r.id: int(r.floor) for r in mem.export_records()},
            "profiles": {k: v.to_dict() for k, v in mem.profiles().items()},
            "conflicts": [repr(c) for c in mem.conflicts(status=None)],
            "golden": [repr(g) for g in mem.golden()],
            "tokens": [t.to_dict() for t in mem.tokens()],
            "audit": [e.to_dict() for e in mem.audit(limit=100_000) if not e.details.get("looked_only")],
        }
    finally:
        mem.close()


@contextmanager
def serving(kind: str, tmp: Path, request: pytest.FixtureRequest) -> Iterator[Served]:
    """`lodviz serve --auth` on a newly seeded store of ``kind`` ("duckdb" or "postgres")."""
    store = str(tmp / "guarded.duckdb") if kind == "duckdb" else request.getfixturevalue("pg_server").new_database()
    ids, tokens = seed(store)
    before = store_state(store)
    env = child_env(tmp)
    env["LODVIZ_EMBEDDING_MODEL"] = f"hash:{DIMENSION}"
    server = ServeProcess(store if store.startswith("postgresql") else Path(store), env, args=("--auth",)).start()
    try:
        yield Served(server, store, tokens, ids, before)
    finally:
        server.stop()


@pytest.fixture(params=["duckdb", "postgres"])
def served(request, tmp_path: Path):
    """A fresh `lodviz serve --auth` on a seeded store; ``served.stop_and_state()`` ends it and reads the store."""
    with serving(request.param, tmp_path, request) as served:
        yield served


def post(url: str, body: bytes | dict | list, *, token: str | None = None, headers: dict[str, str] | None = None) -> tuple[int, str]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST")
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    for key, value in (headers or {}).items():
        req.add_header(key, value)
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def get(url: str, *, token: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
