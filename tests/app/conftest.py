"""A small real store for the app's tests: real texts, the real model, a stored layout."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import lodviz
from lodviz import projection
from lodviz.app import create_app

from .browser import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, new_page, serving

SOURCES = Path(__file__).resolve().parents[2] / "sample_data" / "sources"
XSS = '<img src=x onerror="window.__lodviz_xss = 1">Note from the vendor portal'


def sample_records(n: int) -> list[dict]:
    records = []
    for path in sorted(SOURCES.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                data = json.loads(line)
                data.pop("usage", None)
                data.pop("conflict", None)
                records.append(data)
    # A spread over every source file rather than the first file's opening weeks.
    step = max(len(records) // n, 1)
    return records[::step][:n]


@pytest.fixture(scope="session")
def app_store_template(tmp_path_factory, embedder) -> Path:
    """Built once per session; tests get a copy."""
    path = tmp_path_factory.mktemp("app-store") / "template.duckdb"
    mem = lodviz.open(path, embedder=embedder)
    records = sample_records(120)
    for i, record in enumerate(records):
        # A usage history, so tiers differ by recency as well as meaning.
        if i % 3 == 0:
            record["retrieval_count"] = 4 + i % 7
            record["last_retrieved_at"] = "2026-11-20T12:00:00Z"
    # Much used, so it is drawn large on the top terrace where a test can hover it.
    records.append({"text": XSS, "agent_id": "legal-review", "kind": "note", "created_at": "2026-11-01T09:00:00Z",
                    "retrieval_count": 40, "last_retrieved_at": "2026-11-29T09:00:00Z"})
    mem.add_many(records)
    mem.set_profile("legal-review", "legal")
    mem.set_profile("exec-digest", "digest")
    mem.set_reference_time("2026-11-30T18:00:00Z")
    state = mem.columns()
    xy = projection.quick(mem.snapshot()[1])
    mem.set_positions(state.ids, xy[:, 0], xy[:, 1])
    mem.close()
    return path


@pytest.fixture
def app_store(app_store_template, tmp_path) -> Path:
    path = tmp_path / "app.duckdb"
    path.write_bytes(app_store_template.read_bytes())
    return path


@pytest.fixture
def app_mem(app_store, embedder):
    mem = lodviz.open(app_store, embedder=embedder, actor="test")
    yield mem
    mem.close()


def xss_id(mem) -> int:
    return next(record.id for record in mem.export_records() if record.text.startswith("<img"))


def ids_in(figure) -> np.ndarray:
    """Memory ids drawn in a go.Figure."""
    parts = [t.customdata for t in figure.data if t.type == "scatter3d" and t.customdata is not None]
    return np.concatenate([np.asarray(p, dtype=np.int64) for p in parts])


@pytest.fixture(scope="module")
def playwright():
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright):
    """A plain Chromium, for a test that needs a context of its own (a screen's scale, say)."""
    chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield chromium
    chromium.close()


@pytest.fixture(scope="session")
def chromium_profile(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("chromium-profile")


@pytest.fixture(scope="module")
def warm_context(playwright, chromium_profile):
    """Chromium on one profile for the whole session, relaunched per module.

    Its disk cache, with V8's cache of compiled scripts, is what makes a page
    after the first two load in ~3.5 s instead of ~5.5 here: plotly.js is
    compiled once, not per test (the apps share one address, ``browser.PORT``).
    Each test still gets a new page, and nothing else carries over: the app
    keeps no cookies or storage, and cookies are cleared after each test.
    """
    context = playwright.chromium.launch_persistent_context(
        str(chromium_profile), executable_path=CHROMIUM, args=CHROMIUM_ARGS, viewport=VIEWPORT
    )
    yield context
    context.close()


@pytest.fixture
def served(app_mem):
    app = create_app(app_mem, place_on_start=False)
    with serving(app) as url:
        yield url, app_mem


@pytest.fixture
def page(warm_context):
    with new_page(warm_context) as page:
        yield page
