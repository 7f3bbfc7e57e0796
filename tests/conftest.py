"""Shared fixtures: a real embedding model (loaded once) and real temporary stores."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import lodviz  # noqa: E402
from lodviz.ingest.embed import SentenceTransformerEmbedder  # noqa: E402

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    model = SentenceTransformerEmbedder()
    model.embed(["warm up"])  # load once for the whole session
    return model


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.duckdb"


@pytest.fixture
def mem(store_path: Path, embedder: SentenceTransformerEmbedder):
    memory = lodviz.open(store_path, embedder=embedder)
    yield memory
    memory.close()


def days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)
