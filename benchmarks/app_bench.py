"""The landscape app in headless Chromium at 10k, 100k and 1M memories (issue 4).

    python benchmarks/app_bench.py                          # 10k, 100k, 1M + the sample store (5-9 min, +2 to build)
    python benchmarks/app_bench.py --quick                  # 10k + the sample store, few moves (~2 min)
    python benchmarks/app_bench.py --sizes 10000,100000 --moves 10
    python benchmarks/app_bench.py --report benchmarks/results/app.json   # tables of a past run

What it measures, per store size (docs/benchmarks-app.md has the details):

* every page state issue 32 names, each opened by its link: nothing open (no
  query), the result list (a query), a memory open, "what changed" on (alpha
  away from the profile), a replayed search;
* first paint: from navigation start to the scene drawn with its counts shown,
  and to the page settled (no callback in flight, two quiet frames);
* a slider move (alpha with a query, lambda without) to the settled page,
  median and p95, against a bare re-render of the same scene (a camera move
  through ``Plotly.relayout``) timed to the same end, the two alternating in
  the same page; then Chromium's long tasks during slider moves and during
  camera moves made without the benchmark's readPixels;
* the server's part of a move, in-process: ``scoring.render`` (the callback's
  whole body: rescoring, choosing what to draw, building the Patch) plus the
  JSON encoding Dash applies, and the bytes it sends.

The stores are ``benchmarks/synth.py``'s synthetic stores with a layout (a 2D
PCA map of the cluster centres, memories spread around their cluster), opened
with an embedder stub that answers every query with one fixed query vector; the
first-paint target uses a copy of the bundled sample store with the real model.
Speed is judged as ratios to a baseline measured in the same run; absolute
numbers are recorded to read, not asserted. Each store is measured in a fresh
process. Results go to ``benchmarks/results/app.json`` (``--name``) and a table
is printed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    # Appended, not prepended: a lodviz on PYTHONPATH (a patched copy, say) wins.
    sys.path.append(str(REPO))

from benchmarks import synth  # noqa: E402
from benchmarks.measure import gib, in_fresh_process, log, machine, peak_rss_bytes, summary, write_results  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
SAMPLE_STORE = REPO / "lodviz" / "data" / "lodviz-sample.duckdb"
LAYOUT_VERSION = "app-bench-layout-1"
QUERY = "benchmark query"  # the stub embeds every text as the one query vector
SAMPLE_QUERY = "limitation of liability cap in CRO agreements"

# The targets.
MOVE_RATIO_TARGET = 1.5  # slider move <= 1.5x a bare re-render of what is drawn
SERVER_TARGET_MS = 50.0  # the server's part of a move at 100k
SERVER_TARGET_SIZE = 100_000
FIRST_PAINT_TARGET_S = 5.0  # first paint of the sample store
MOVE_ABSOLUTE_TARGET_S = 1.0  # a slider move at 1M in headless Chromium
LINK_RATIO_TARGET = 1.5  # a query link's first paint (settled) <= 1.5x a no-query one (issue 32)
LONG_TASK_TARGET_MS = 200.0  # no main-thread task longer during a move with the result list shown (issue 32)






# -- stores -------------------------------------------------------------------------


class FixedQueryEmbedder:
    """An ``Embedder`` with the synthetic store's name and size that embeds any text as one vector."""

    name = synth.MODEL_NAME
    dimension = synth.DIM

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = np.asarray(vector, dtype=np.float32)

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return np.tile(self.vector, (len(texts), 1))


def cluster_layout(n: int, seed: int, cluster: np.ndarray) -> np.ndarray:
    """2D positions that show the store's cluster structure, in milliseconds even at 1M.

    The cluster centres (``synth.Geometry``, rebuilt from the seed) are placed by
    a PCA projection (``lodviz.projection.quick``); each memory sits around its
    centre with a spread that grows with its cluster's size. Not UMAP (hours at
    1M), but the same kind of picture: blobs of related memories.
    """
    from lodviz import projection

    geometry = synth.Geometry.make(n, np.random.default_rng(seed))
    centres = projection.quick(geometry.centres)
    share = geometry.weights / np.median(geometry.weights)
    spread = np.clip(0.12 * np.sqrt(share), 0.06, 0.9)
    rng = np.random.default_rng(seed + 4242)
    return centres[cluster] + rng.standard_normal((len(cluster), 2)) * spread[cluster, None]


def prepare_store(path: str, n: int, seed: int) -> dict[str, Any]:
    """Build the synthetic store of ``n`` memories at ``path`` with a layout (reused when present)."""
    from lodviz.store.duckdb import DuckDBStore

    if os.path.exists(path):
        store = DuckDBStore(path)
        try:
            if store.meta().get("app_bench") == f"{LAYOUT_VERSION}:{n}:{seed}":
                return {"rows": n, "reused": True, "file_bytes": os.path.getsize(path)}
        finally:
            store.close()
        for leftover in (path, path + ".wal"):
            if os.path.exists(leftover):
                os.remove(leftover)
    built = synth.build_store(path, n, seed=seed)
    start = time.perf_counter()
    import duckdb

    with duckdb.connect(path, read_only=True) as con:  # the synthetic cluster of each memory, from its metadata
        rows = np.array(
            con.execute("SELECT id, CAST(json_extract(metadata, '$.cluster') AS INTEGER) FROM memories ORDER BY id").fetchall(),
            dtype=np.int64,
        )
    store = DuckDBStore(path)
    try:
        xy = cluster_layout(n, seed, rows[:, 1])
        store.set_layout(rows[:, 0], xy[:, 0], xy[:, 1])
        store.set_meta(
            {
                "layout_method": "pca of clusters",
                "layout_count": str(n),
                "layout_fitted_at": datetime.now(UTC).isoformat(),
                "app_bench": f"{LAYOUT_VERSION}:{n}:{seed}",
            }
        )
    finally:
        store.close()
    built["layout_seconds"] = time.perf_counter() - start
    built["file_bytes"] = os.path.getsize(path)
    built["reused"] = False
    os.sync()  # the file's writeback must not disturb the timings
    return built


# -- the server's part ----------------------------------------------------------------


def slider_values(mem: Any) -> dict[str, Any]:
    """The controls as a fresh page shows them (``layout.Controls`` with no URL)."""
    from lodviz.app.page import ALL_AGENTS, K_RANGE, LAMBDA_RANGE, _log

    p = mem.profile(None)
    return {
        "agent": ALL_AGENTS,
        "alpha": p.alpha,
        "lam_log": _log(p.lam, LAMBDA_RANGE[0]),
        "thresholds": [p.theta3, p.theta2, p.theta1],
        "k_log": _log(p.k, K_RANGE[0]),
        "now_date": mem.now().date().isoformat(),
        "color": "tier",
        "terrain": [],
    }


def encode_response(outputs: tuple[Any, ...]) -> str:
    """The callback's response body, encoded as Dash encodes it (``dash._utils.to_json``)."""
    from dash._utils import to_json

    from lodviz.app import ids

    # The render callback's outputs, in its order (``lodviz.app.callbacks.scoring.register``).
    names = [(ids.SCENE, "figure"), (ids.COUNTS, "children"), (ids.SCENE_NOTE, "children"), (ids.LEGEND_COLOURS, "children"),
             (ids.CHANGE_COUNTS, "children"), (ids.CHANGES, "children")]
    if len(outputs) >= 7:  # since issue 32 the result list comes with the scene (an older lodviz: six outputs)
        names.append((getattr(ids, "RESULT_LIST", "result-list"), "children"))
    if len(outputs) >= 8:  # and the ids it returned, for the panel
        names.append((getattr(ids, "RECEIVED", "received"), "data"))
    if len(outputs) != len(names):
        raise ValueError(f"render() returned {len(outputs)} outputs; this benchmark encodes {len(names)}")
    return to_json({"multi": True, "response": {c: {prop: value} for (c, prop), value in zip(names, outputs)}})


def server_part(app_ctx: Any, query: str | None, reps: int, full_reps: int) -> dict[str, Any]:
    """``scoring.render`` for a slider move (a Patch) and for a first paint (a figure), in-process."""
    from lodviz.app.callbacks import scoring
    from lodviz.app.figure import patch_figure
    from lodviz.app.view import compute_view

    controls = slider_values(app_ctx.mem)
    applied = {"query": query or "", "exclude": ""}
    moved = "alpha" if query else "lam_log"
    step = 0.01
    base = controls[moved]

    def call(i: int, triggered: set[str] | None) -> tuple[float, float, int, Any]:
        args = dict(controls)
        args[moved] = round(base + (step if i % 2 else 0.0), 4)
        t0 = time.perf_counter()
        out = scoring.render(
            app_ctx, applied, args["agent"], args["alpha"], args["lam_log"], args["thresholds"], args["k_log"],
            args["now_date"], args["color"], args["terrain"], triggered,
        )
        t1 = time.perf_counter()
        body = encode_response(out)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, len(body.encode()), out

    result: dict[str, Any] = {"slider": "alpha" if query else "lambda"}
    call(0, {"alpha"})  # warm: the query's embedding is cached after this
    render_s, encode_s, total_s, sizes = [], [], [], []
    for i in range(reps):
        r, e, size, _ = call(i + 1, {"alpha"} if query else {"lambda"})
        render_s.append(r)
        encode_s.append(e)
        total_s.append(r + e)
        sizes.append(size)
    result["move"] = {
        "render": summary(render_s),
        "encode": summary(encode_s),
        "total": summary(total_s),
        "bytes": int(np.median(sizes)),
    }
    # Where a move's time goes: scoring + choosing what to draw, then the Patch.
    params = scoring.params_from_controls(controls["alpha"], controls["lam_log"], controls["thresholds"], controls["k_log"])
    request = scoring.view_request(app_ctx, applied, controls["agent"], params, controls["now_date"])
    view_s, patch_s = [], []
    for _ in range(max(5, reps // 2)):
        t0 = time.perf_counter()
        view = compute_view(app_ctx.mem, request, app_ctx.draw_limit)
        t1 = time.perf_counter()
        patch_figure(view)
        view_s.append(t1 - t0)
        patch_s.append(time.perf_counter() - t1)
    result["breakdown"] = {"compute_view": summary(view_s), "patch_figure": summary(patch_s)}
    result["drawn"] = int(len(view.drawn))
    result["total"] = int(view.total)
    result["candidates"] = int(view.land.candidate.sum())
    result["sampled"] = bool(view.sampled)
    # The first paint's figure (what a new query, agent or k also sends).
    full_s, full_bytes = [], []
    for i in range(full_reps):
        r, e, size, _ = call(i, None)
        full_s.append(r + e)
        full_bytes.append(size)
    result["figure"] = {"total": summary(full_s), "bytes": int(np.median(full_bytes))}
    return result


# -- the browser's part ---------------------------------------------------------------


FIRST_PAINT_JS = """() => ({
  fp: window.__bench.firstPaint,
  settled: window.__bench.firstSettled,
  detail: window.__bench.firstPaintDetail,
  note: document.querySelector('#scene-note').innerText,
  counts: document.querySelector('#counts').innerText,
})"""


FIRST_PAINTED = "() => window.__bench && window.__bench.firstPaint !== null"
FIRST_SETTLED = "() => window.__bench && window.__bench.firstSettled !== null"


def bench_page(browser: Any) -> tuple[Any, Any, list[str]]:
    """A fresh browser context and page with the timing hooks installed, and its page errors."""
    from benchmarks.app_browser import VIEWPORT, init_script

    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.add_init_script(init_script())
    return context, page, errors


def first_paint(browser: Any, url: str, timeout_s: float) -> dict[str, Any]:
    """One cold page load (a new browser context) to the first repaint with counts shown."""
    context, page, errors = bench_page(browser)
    try:
        start = time.perf_counter()
        page.goto(url, timeout=timeout_s * 1000)
        page.wait_for_function(FIRST_PAINTED, timeout=timeout_s * 1000, polling=100)
        wall = time.perf_counter() - start
        page.wait_for_function(FIRST_SETTLED, timeout=timeout_s * 1000, polling=100)
        got = page.evaluate(FIRST_PAINT_JS)
        return {
            "ms": got["fp"],
            "settled_ms": got["settled"],
            **{k: v for k, v in got["detail"].items() if k != "points"},
            "wall_ms": wall * 1000,
            "points": got["detail"]["points"],
            "note": got["note"],
            "counts": got["counts"],
            "errors": errors,
        }
    finally:
        context.close()


# ``window.__bench[name]`` (a promise, or a function returning one), or null after ``ms``.
WITHIN = """([name, ms]) => {
  const b = window.__bench, p = typeof b[name] === 'function' ? b[name]() : b[name];
  return Promise.race([p, new Promise((resolve) => setTimeout(() => resolve(null), ms))]);
}"""


#: A click on the element ``target`` (a JS expression) timed to the page settled once ``done`` holds.
TIMED_CLICK = """async ([target, done]) => {
  const element = new Function('return ' + target)();
  const t0 = performance.now();
  element.click();
  const until = new Function('return (' + done + ')()');
  while (!until()) await new Promise((r) => requestAnimationFrame(r));
  return (await window.__bench.settled()) - t0;
}"""


def clicks(page: Any, rounds: int) -> dict[str, Any]:
    """A preset's glide and a trip to the Audit log tab and back, each to the settled page (issue 32 names both)."""
    from lodviz.app.callbacks.scoring import slider_values
    from lodviz.params import PRESETS

    glide, back = [], []
    for i in range(rounds):
        name = ("digest", "research")[i % 2]
        alpha = f"{slider_values(PRESETS[name])[0]:.2f}"
        glide.append(page.evaluate(TIMED_CLICK, [f"document.querySelector('#preset-{name}')",
                                                 f"() => document.querySelector('#alpha-readout').innerText === '{alpha}'"]))
        page.wait_for_timeout(300)
        page.click("text=Audit log")
        page.wait_for_selector("#audit-table", state="visible")
        page.wait_for_timeout(300)
        back.append(page.evaluate(TIMED_CLICK, ["Array.from(document.querySelectorAll('.tab')).find(t => t.innerText.trim() === 'Landscape')",
                                                "() => { const c = document.querySelector('#scene .gl-container canvas'); "
                                                "return !!c && c.getBoundingClientRect().width > 0 && !!document.querySelector('#counts b'); }"]))
        page.wait_for_timeout(300)
    return {"preset_glide": summary([g / 1000 for g in glide]), "back_to_landscape": summary([b / 1000 for b in back])}


def moves(browser: Any, url: str, pairs: int, warmup: int, slider: str, timeout_s: float, budget_s: float,
          extras: bool = False) -> dict[str, Any]:
    """Slider moves and camera moves, alternating in one page, each timed to the repaint."""
    context, page, errors = bench_page(browser)
    try:
        page.goto(url, timeout=timeout_s * 1000)
        page.wait_for_function(FIRST_PAINTED, timeout=timeout_s * 1000, polling=100)
        page.wait_for_timeout(500)
        thumb = f"#{slider} [role=slider]"
        page.focus(thumb)
        keys = ["ArrowRight", "ArrowLeft"]
        presses = 0

        def slider_move() -> dict[str, Any]:
            nonlocal presses
            page.evaluate("() => { performance.clearResourceTimings(); return window.__bench.armSlider(); }")
            page.keyboard.press(keys[presses % 2])
            presses += 1
            row = page.evaluate(WITHIN, ["pending", timeout_s * 1000])
            if row is None:
                raise TimeoutError(f"a slider move took more than {timeout_s:.0f} s")
            return row

        def camera_move() -> dict[str, Any]:
            row = page.evaluate(WITHIN, ["cameraMove", timeout_s * 1000])
            if row is None:
                raise TimeoutError(f"a camera move took more than {timeout_s:.0f} s")
            return row

        slider_rows: list[dict[str, Any]] = []
        camera_rows: list[dict[str, Any]] = []
        started = time.perf_counter()
        for i in range(warmup + pairs):
            if i >= warmup + 2 and time.perf_counter() - started > budget_s:
                break  # a slow size: keep what was measured
            order = ("slider", "camera") if i % 2 == 0 else ("camera", "slider")
            for what in order:
                row = camera_move() if what == "camera" else slider_move()
                if i >= warmup:
                    (camera_rows if what == "camera" else slider_rows).append(row)
                page.wait_for_timeout(150)  # let the poll and the page settle between moves
        # The long-task pass: the same key presses with no readPixels, each window's longest main-thread task.
        page.evaluate("() => { window.__bench.noSync = true; }")
        windows = []
        for _ in range(max(pairs // 2, 2)):
            row = slider_move()
            page.wait_for_timeout(300)  # long-task entries arrive after their task
            windows.append((row["start"], row["settled"]))
        # The same for bare camera moves: the longest task drawing the scene alone costs the main thread.
        camera_windows = []
        for _ in range(max(pairs // 2, 2)):
            row = camera_move()
            page.wait_for_timeout(300)
            camera_windows.append((row["start"], row["end"]))
        tasks_seen = page.evaluate("() => window.__bench.longtasks") or []
        page.evaluate("() => { window.__bench.noSync = false; }")
        note = page.inner_text("#scene-note")
        clicked = clicks(page, 3) if extras else None
    finally:
        context.close()

    def series(rows: list[dict[str, Any]], a: str, b: str) -> dict[str, Any]:
        return summary([(r[b] - r[a]) / 1000 for r in rows if r.get(a) is not None and r.get(b) is not None])

    # A move is done when the page has settled (the panel and the lists too), not when the scene alone is drawn.
    slider_total = series(slider_rows, "start", "settled")
    camera_total = series(camera_rows, "start", "end")
    def longest(spans: list[tuple[float, float]]) -> list[float]:
        return [max([d for at, d in tasks_seen if at + d >= t0 and at <= t1], default=0.0) for t0, t1 in spans]

    tasks, camera_tasks = longest(windows), longest(camera_windows)
    out = {
        "slider": slider,
        "pairs": len(camera_rows),
        "points": camera_rows[-1]["points"] if camera_rows else None,
        "slider_move": slider_total,
        "slider_scene_repainted": series(slider_rows, "start", "end"),
        "camera_scene_repainted": series(camera_rows, "start", "repainted"),
        # Chromium's long tasks (over 50 ms) in the main thread during slider moves made without readPixels.
        "longest_task_ms": {"p50": float(np.median(tasks)), "max": float(max(tasks)), "moves": len(tasks)} if tasks else None,
        "camera_longest_task_ms": {"p50": float(np.median(camera_tasks)), "max": float(max(camera_tasks)), "moves": len(camera_tasks)}
        if camera_tasks else None,
        "slider_repainted_to_settled": series(slider_rows, "end", "settled"),
        "camera_move": camera_total,
        # slider move = key press -> response received (server and network), then the repaint
        "slider_to_response": series(slider_rows, "start", "response_end"),
        "slider_response_to_repaint": series(slider_rows, "response_end", "end"),
        "camera_to_afterplot": series(camera_rows, "start", "afterplot"),
        "response_bytes": int(np.median([r["response_bytes"] for r in slider_rows if r.get("response_bytes")])) if slider_rows else None,
        "note": note,
        "errors": errors,
    }
    if clicked is not None:
        out.update(clicked)
    if slider_total.get("n") and camera_total.get("n"):
        out["ratio_p50"] = slider_total["p50_ms"] / camera_total["p50_ms"]
        out["ratio_p95"] = slider_total["p95_ms"] / camera_total["p95_ms"]
        paired = [s["settled"] - s["start"] for s in slider_rows]
        cams = [c["end"] - c["start"] for c in camera_rows]
        out["paired_ratio_p50"] = float(np.median(np.array(paired[: len(cams)]) / np.array(cams[: len(paired)])))
    return out


def cold_first_paint(app: Any, timeout_s: float) -> dict[str, Any]:
    """One first paint on a server that has just started (a fresh browser, too)."""
    from playwright.sync_api import sync_playwright

    from tests.app.browser import CHROMIUM, CHROMIUM_ARGS, serving

    with serving(app) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            return first_paint(browser, url, timeout_s)
        finally:
            browser.close()


def page_states(mem: Any, query: str) -> list[tuple[str, dict[str, str]]]:
    """The page's states a move is timed in, each as the link that opens it (issue 32: every panel state).

    A search is made on record (budgeted, as an agent's) so that a replay has one
    to rebuild; it touches nothing. "what changed" opens with alpha away from the
    profile's, so the scene carries its marks and the panel its lists.
    """
    mem.search(query, budget_tokens="default", touch=False)
    event = mem.audit(actions=["search"], limit=1)[0]
    top = mem.search(query, touch=False, record=False, budget_tokens="default").items[0].id
    alpha = mem.profile(None).alpha
    moved = f"{alpha - 0.3 if alpha > 0.5 else alpha + 0.3:.2f}"
    return [
        ("nothing open", {}),
        ("result list", {"q": query}),
        ("memory open", {"q": query, "m": str(top)}),
        ("what changed", {"q": query, "alpha": moved}),
        ("replay", {"replay": str(event.id)}),
    ]


def browser_part(app: Any, cfg: dict[str, Any], drawn: dict[str, int]) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from tests.app.browser import CHROMIUM, CHROMIUM_ARGS, serving

    out: dict[str, Any] = {}
    with serving(app) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for name, link in cfg["states"]:
                page_url = url + ("?" + urlencode(link) if link else "")
                points = drawn["query" if "q" in link or "replay" in link else "no query"]
                if points > cfg["max_points"]:
                    out[name] = {"skipped": f"the scene would draw {points:,} points (more than --max-points {cfg['max_points']:,})"}
                    log(f"    {name}: skipped, {points:,} points to draw")
                    continue
                scenario: dict[str, Any] = {"first_paint": []}
                try:
                    for _ in range(cfg["paints"]):
                        scenario["first_paint"].append(first_paint(browser, page_url, cfg["timeout_s"]))
                    paints = [f["ms"] for f in scenario["first_paint"]]
                    scenario["first_paint_ms"] = {"p50": float(np.median(paints)), "min": min(paints), "max": max(paints)}
                    settled = [f["settled_ms"] for f in scenario["first_paint"]]
                    scenario["first_settled_ms"] = {"p50": float(np.median(settled)), "min": min(settled), "max": max(settled)}
                    log(f"    {name}: first paint {scenario['first_paint_ms']['p50'] / 1000:.2f} s, settled "
                        f"{scenario['first_settled_ms']['p50'] / 1000:.2f} s ({scenario['first_paint'][0]['points']:,} points)")
                    if cfg["pairs"]:
                        slider = "alpha" if link else "lambda"
                        scenario["moves"] = moves(browser, page_url, cfg["pairs"], cfg["warmup"], slider, cfg["timeout_s"], cfg["move_budget_s"],
                                                  extras=name == "result list")
                        m = scenario["moves"]
                        log(
                            f"    {name}: slider move p50 {m['slider_move'].get('p50_ms', float('nan')):.0f} ms "
                            f"(longest task {(m.get('longest_task_ms') or {}).get('max', float('nan')):.0f} ms), "
                            f"camera move p50 {m['camera_move'].get('p50_ms', float('nan')):.0f} ms, "
                            f"ratio {m.get('ratio_p50', float('nan')):.2f} ({m['pairs']} pairs)"
                        )
                except Exception as exc:  # a timeout at a size too large for the machine: record it
                    scenario["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                    log(f"    {name}: {scenario['error']}")
                out[name] = scenario
        finally:
            browser.close()
    return out


# -- one store, in a fresh process ----------------------------------------------------------


def measure_synthetic(path: str, n: int, seed: int, cfg: dict[str, Any]) -> dict[str, Any]:
    import lodviz
    from lodviz.app import create_app

    query_vector = synth.query_vectors(n, 1, seed=seed)[0]
    t0 = time.perf_counter()
    mem = lodviz.open(path, embedder=FixedQueryEmbedder(query_vector))
    mem.columns()  # the store's in-process copy, filled once, as the app's first request would
    load_s = time.perf_counter() - t0
    try:
        limit = {"draw_limit": cfg["draw_limit"]} if cfg.get("draw_limit") else {}
        app = create_app(mem, place_on_start=False, **limit)
        app_ctx = app.lodviz
        result: dict[str, Any] = {"rows": n, "load_seconds": load_s, "draw_limit": app_ctx.draw_limit, "server": {}}
        for name, query in (("no query", None), ("query", QUERY)):
            full_reps = 1 if n >= 1_000_000 and query is None else cfg["full_reps"]
            result["server"][name] = server_part(app_ctx, query, cfg["server_reps"], full_reps)
            s = result["server"][name]
            log(
                f"    server, {name}: move p50 {s['move']['total']['p50_ms']:.1f} ms, {s['move']['bytes'] / 1e6:.2f} MB; "
                f"draws {s['drawn']:,} of {s['total']:,}; first figure {s['figure']['total']['p50_ms'] / 1000:.2f} s, {s['figure']['bytes'] / 1e6:.1f} MB"
            )
            gc.collect()
        drawn = {name: s["drawn"] for name, s in result["server"].items()}
        result["browser"] = browser_part(app, {**cfg, "states": page_states(mem, QUERY)}, drawn)
        result["peak_rss_gib"] = gib(peak_rss_bytes())
        return result
    finally:
        mem.close()


def measure_sample(cfg: dict[str, Any]) -> dict[str, Any]:
    """First paint (and moves) of a copy of the bundled sample store, with the real model."""
    import lodviz
    from lodviz.app import create_app

    workdir = tempfile.mkdtemp(prefix="lodviz-app-sample-")
    path = os.path.join(workdir, "sample.duckdb")
    shutil.copyfile(SAMPLE_STORE, path)  # never open the tracked file for writing
    try:
        mem = lodviz.open(path)
        try:
            app = create_app(mem)  # as `lodviz demo` does: warms the model in a thread
            app_ctx = app.lodviz
            n = len(mem)
            result: dict[str, Any] = {"rows": n, "server": {}}
            # The very first page, while the model still loads in the background (as after `make demo`).
            result["cold_first_paint"] = cold_first_paint(app, cfg["timeout_s"])
            log(f"    cold first paint (model loading meanwhile) {result['cold_first_paint']['ms'] / 1000:.2f} s")
            # The real model embeds the query once; the server part is then a rescoring.
            for name, query in (("no query", None), ("query", SAMPLE_QUERY)):
                result["server"][name] = server_part(app_ctx, query, cfg["server_reps"], cfg["full_reps"])
            drawn = {name: s["drawn"] for name, s in result["server"].items()}
            result["browser"] = browser_part(app, {**cfg, "states": page_states(mem, SAMPLE_QUERY)}, drawn)
            return result
        finally:
            mem.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# -- report ---------------------------------------------------------------------------------


def _ms(stats: dict[str, Any] | None, key: str = "p50_ms") -> str:
    if not stats or key not in stats:
        return "-"
    return f"{stats[key]:,.0f}"


def _state_view(state: str) -> str:
    """The server-side view a page state rescored ("no query" or "query")."""
    return "no query" if state == "nothing open" else "query"


def table(result: dict[str, Any]) -> str:
    """One line per store and page state: a slider move to the settled page against a camera move."""
    head = (
        "| store | page state | drawn | first paint s | settled s | slider move p50 / p95 ms | scene repainted p50 ms "
        "| camera move p50 / p95 ms | ratio p50 / p95 | longest task max ms, slider / camera | bytes per move |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    )
    lines = [head]
    entries = [(f"{m['rows']:,}", m) for m in result["sizes"]]
    if result.get("sample"):
        entries.append((f"sample ({result['sample']['rows']:,})", result["sample"]))
    for label, m in entries:
        for state, b in m.get("browser", {}).items():
            s = m["server"].get(_state_view(state)) or m["server"].get(state)
            fp, settled = b.get("first_paint_ms"), b.get("first_settled_ms")
            mv = b.get("moves", {})
            if "skipped" in b:
                paint = "skipped"
            elif "error" in b and not fp:
                paint = "timed out"
            else:
                paint = f"{fp['p50'] / 1000:.2f}" if fp else "-"
            ratio = f"{mv['ratio_p50']:.2f} / {mv['ratio_p95']:.2f}" if mv.get("ratio_p50") else "-"
            longest = (mv.get("longest_task_ms") or {}).get("max")
            camera_longest = (mv.get("camera_longest_task_ms") or {}).get("max")
            settle = f"{settled['p50'] / 1000:.2f}" if settled else "-"
            lines.append(
                f"| {label} | {state} | {s['drawn']:,} of {s['total']:,} | {paint} | {settle} "
                f"| {_ms(mv.get('slider_move'))} / {_ms(mv.get('slider_move'), 'p95_ms')} | {_ms(mv.get('slider_scene_repainted'))} "
                f"| {_ms(mv.get('camera_move'))} / {_ms(mv.get('camera_move'), 'p95_ms')} | {ratio} "
                f"| {'-' if longest is None else f'{longest:,.0f}'} / {'-' if camera_longest is None else f'{camera_longest:,.0f}'} "
                f"| {mv.get('response_bytes') or '-'} |"
            )
    return "\n".join(lines)


def details(result: dict[str, Any]) -> str:
    """Where the time goes: a slider move's two halves, first paint's steps, the server's part."""
    entries = [(f"{m['rows']:,}", m) for m in result["sizes"]]
    if result.get("sample"):
        entries.append((f"sample ({result['sample']['rows']:,})", result["sample"]))
    moves_t = [
        "| store | view | key press -> response ms | response -> repainted ms | camera: relayout -> afterplot ms | paired ratio p50 | pairs |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    paint_t = [
        "| store | view | scripts loaded s | figure requested s | figure received s | figure MB | plotted s | repainted s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    server_t = [
        "| store | view | render() p50 ms | JSON p50 ms | of which compute_view ms | patch_figure ms | first figure s | first figure MB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, m in entries:
        for view, s in m["server"].items():
            server_t.append(
                f"| {label} | {view} | {s['move']['render']['p50_ms']:.1f} | {s['move']['encode']['p50_ms']:.1f} "
                f"| {s['breakdown']['compute_view']['p50_ms']:.1f} | {s['breakdown']['patch_figure']['p50_ms']:.1f} "
                f"| {s['figure']['total']['p50_ms'] / 1000:.2f} | {s['figure']['bytes'] / 1e6:.1f} |"
            )
        for view, b in m.get("browser", {}).items():
            mv = b.get("moves")
            if mv and mv["slider_move"].get("n"):
                moves_t.append(
                    f"| {label} | {view} | {_ms(mv['slider_to_response'])} | {_ms(mv['slider_response_to_repaint'])} "
                    f"| {_ms(mv['camera_to_afterplot'])} | {mv.get('paired_ratio_p50', float('nan')):.2f} | {mv['pairs']} |"
                )
            paints = b.get("first_paint") or []
            if paints:
                def med(key: str) -> str:
                    values = [p[key] for p in paints if p.get(key) is not None]
                    return f"{np.median(values) / 1000:.2f}" if values else "-"
                size = [p["figure_bytes"] for p in paints if p.get("figure_bytes")]
                paint_t.append(
                    f"| {label} | {view} | {med('scripts_loaded_ms')} | {med('figure_request_ms')} | {med('figure_response_ms')} "
                    f"| {np.median(size) / 1e6 if size else float('nan'):.1f} | {med('afterplot_ms')} | {med('ms')} |"
                )
    return "\n".join(["A slider move's two halves (p50):", *moves_t, "", "First paint, from navigation start (median of the page loads):",
                      *paint_t, "", "The server's part:", *server_t])


def targets(result: dict[str, Any]) -> dict[str, Any]:
    """Each of the issue's targets, judged on this run (None where not measured)."""
    out: dict[str, Any] = {}
    ratios = {}
    for m in result["sizes"] + ([result["sample"]] if result.get("sample") else []):
        for view, b in m.get("browser", {}).items():
            mv = b.get("moves", {})
            if mv.get("ratio_p50"):
                ratios[f"{m['rows']}/{view}"] = {
                    "ratio_p50": mv["ratio_p50"],
                    "ratio_p95": mv["ratio_p95"],
                    "met": mv["ratio_p50"] <= MOVE_RATIO_TARGET,
                }
            elif "skipped" in b or "error" in b:
                ratios[f"{m['rows']}/{view}"] = {"met": False, "why": b.get("skipped") or b.get("error")}
    out["slider_vs_camera"] = {"target_ratio": MOVE_RATIO_TARGET, "cases": ratios}
    at = next((m for m in result["sizes"] if m["rows"] == SERVER_TARGET_SIZE), None)
    if at:
        out["server_100k"] = {
            "target_ms": SERVER_TARGET_MS,
            "cases": {
                view: {
                    "p50_ms": s["move"]["total"]["p50_ms"],
                    "p95_ms": s["move"]["total"]["p95_ms"],
                    "met_p50": s["move"]["total"]["p50_ms"] < SERVER_TARGET_MS,
                    "met_p95": s["move"]["total"]["p95_ms"] < SERVER_TARGET_MS,
                }
                for view, s in at["server"].items()
            },
        }
    links, tasks = {}, {}
    for m in result["sizes"] + ([result["sample"]] if result.get("sample") else []):
        bare = m.get("browser", {}).get("nothing open", {}).get("first_settled_ms")
        linked = m.get("browser", {}).get("result list", {}).get("first_settled_ms")
        if bare and linked:
            ratio = linked["p50"] / bare["p50"]
            links[str(m["rows"])] = {"ratio_p50": ratio, "met": ratio <= LINK_RATIO_TARGET}
        listed = m.get("browser", {}).get("result list", {}).get("moves", {})
        longest = (listed.get("longest_task_ms") or {}).get("max")
        if longest is not None:
            tasks[str(m["rows"])] = {"max_ms": longest, "met": longest <= LONG_TASK_TARGET_MS,
                                     "camera_max_ms": (listed.get("camera_longest_task_ms") or {}).get("max")}
    out["query_link_first_paint"] = {"target_ratio": LINK_RATIO_TARGET, "cases": links}
    out["clicks_with_the_result_list"] = {
        str(m["rows"]): {k: mv[k]["p50_ms"] for k in ("preset_glide", "back_to_landscape") if mv.get(k, {}).get("n")}
        for m in result["sizes"] + ([result["sample"]] if result.get("sample") else [])
        for mv in [m.get("browser", {}).get("result list", {}).get("moves", {})]
    }
    out["longest_task_result_list"] = {"target_ms": LONG_TASK_TARGET_MS, "cases": tasks}
    if result.get("sample"):
        fp = result["sample"]["browser"].get("nothing open", {}).get("first_paint_ms")
        out["sample_first_paint"] = {"target_s": FIRST_PAINT_TARGET_S, "p50_s": fp["p50"] / 1000 if fp else None,
                                     "met": bool(fp and fp["p50"] / 1000 < FIRST_PAINT_TARGET_S)}
    big = max(result["sizes"], key=lambda m: m["rows"], default=None)
    if big and big["rows"] >= 1_000_000:
        cases = {}
        for view in ("nothing open", "result list"):
            b = big.get("browser", {}).get(view, {})
            mv = b.get("moves", {}).get("slider_move", {})
            s = big["server"].get(_state_view(view))
            cases[view] = {
                "p50_ms": mv.get("p50_ms"),
                "p95_ms": mv.get("p95_ms"),
                "drawn": s["drawn"] if s else None,
                "met": bool(mv.get("p50_ms") and mv["p50_ms"] < MOVE_ABSOLUTE_TARGET_S * 1000),
                "why": b.get("skipped") or b.get("error"),
            }
        out["move_under_1s_at_1m"] = {"target_ms": MOVE_ABSOLUTE_TARGET_S * 1000, "cases": cases}
    return out


# -- main -------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=None, help="comma-separated store sizes (default 10000,100000,1000000; --quick: 10000)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 10k and the sample store, few moves")
    parser.add_argument("--moves", type=int, default=None, help="slider/camera pairs per view (default 12, --quick 4)")
    parser.add_argument("--warmup", type=int, default=2, help="pairs not recorded at the start of each page (default 2)")
    parser.add_argument("--paints", type=int, default=None, help="cold page loads per view for first paint (default 3, --quick 1)")
    parser.add_argument("--server-reps", type=int, default=None, help="in-process render() calls per view (default 30, --quick 10)")
    parser.add_argument("--max-points", type=int, default=200_000,
                        help="skip the browser for a view that would draw more points than this (default 200000)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for a page or a move (default 180)")
    parser.add_argument("--move-budget", type=float, default=120.0, help="seconds of moves per view before stopping early (default 120)")
    parser.add_argument("--draw-limit", type=int, default=None,
                        help="create_app(draw_limit=N) for the synthetic stores (default: the app's DEFAULT_DRAW_LIMIT)")
    parser.add_argument("--no-sample", action="store_true", help="skip the bundled sample store")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="app", help="results/<name>.json (default app)")
    parser.add_argument("--workdir", default=None,
                        help="where the synthetic stores are built and kept for the next run (default $TMPDIR/lodviz-app-bench)")
    parser.add_argument("--results-dir", default=str(RESULTS))
    parser.add_argument("--report", metavar="JSON", default=None, help="print the tables of an earlier run's results file and exit")
    args = parser.parse_args(argv)
    if args.sizes is None:
        args.sizes = "10000" if args.quick else "10000,100000,1000000"
    args.size_list = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    args.moves = args.moves if args.moves is not None else (4 if args.quick else 12)
    args.paints = args.paints or (1 if args.quick else 3)
    args.server_reps = args.server_reps or (10 if args.quick else 30)
    return args


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(given)
    if args.report:
        result = json.loads(Path(args.report).read_text())
        print(report(result))
        return 0
    started = time.perf_counter()
    cfg = {
        "pairs": args.moves,
        "warmup": args.warmup,
        "paints": args.paints,
        "server_reps": args.server_reps,
        "full_reps": 1 if args.quick else 3,
        "max_points": args.max_points,
        "timeout_s": args.timeout,
        "move_budget_s": args.move_budget,
        "draw_limit": args.draw_limit,
    }
    import lodviz

    result: dict[str, Any] = {
        "name": args.name,
        "command": " ".join(["python benchmarks/app_bench.py", shlex.join(given)]).strip(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "lodviz_path": str(Path(lodviz.__file__).resolve().parent),
        "pythonpath": os.environ.get("PYTHONPATH"),
        "chromium": CHROMIUM_VERSION(),
        "load_average_at_start": list(os.getloadavg()),
        "config": {**cfg, "sizes": args.size_list, "seed": args.seed, "quick": args.quick},
        "sizes": [],
    }
    workdir = Path(args.workdir or os.path.join(tempfile.gettempdir(), "lodviz-app-bench"))
    workdir.mkdir(parents=True, exist_ok=True)
    for n in args.size_list:
        path = str(workdir / f"app-{n}-seed{args.seed}.duckdb")
        log(f"store of {n:,} memories: {path}")
        built = in_fresh_process(prepare_store, path, n, args.seed)
        log("  reused" if built.get("reused") else f"  built in {built['seconds'] + built['layout_seconds']:.0f} s")
        measured = in_fresh_process(measure_synthetic, path, n, args.seed, cfg)
        measured["build"] = built
        measured["load_average_after"] = list(os.getloadavg())
        result["sizes"].append(measured)
    if not args.no_sample:
        log(f"sample store (a copy of {SAMPLE_STORE.relative_to(REPO)}, real model)")
        result["sample"] = in_fresh_process(measure_sample, cfg)
    result["targets"] = targets(result)
    write_results(result, started, args.results_dir, args.name, report)
    return 0


def report(result: dict[str, Any]) -> str:
    return "\n\n".join([table(result), details(result), targets_text(result["targets"])])


def targets_text(t: dict[str, Any]) -> str:
    lines = []
    for case, r in t.get("slider_vs_camera", {}).get("cases", {}).items():
        if "ratio_p50" in r:
            lines.append(f"slider move <= {MOVE_RATIO_TARGET}x camera move, {case}: {r['ratio_p50']:.2f}x  {'met' if r['met'] else 'NOT met'}")
        else:
            lines.append(f"slider move <= {MOVE_RATIO_TARGET}x camera move, {case}: not measured ({r['why']})")
    for view, r in (t.get("server_100k") or {}).get("cases", {}).items():
        lines.append(f"server part < {SERVER_TARGET_MS:.0f} ms at 100k, {view}: p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms  {'met' if r['met_p50'] else 'NOT met'}")
    for rows, r in (t.get("query_link_first_paint") or {}).get("cases", {}).items():
        lines.append(f"query link first paint <= {LINK_RATIO_TARGET}x a no-query one, {rows}: {r['ratio_p50']:.2f}x  {'met' if r['met'] else 'NOT met'}")
    for rows, r in (t.get("clicks_with_the_result_list") or {}).items():
        if r:
            lines.append(f"with the result list, {rows}: a preset's glide to the settled page p50 {r.get('preset_glide', float('nan')):.0f} ms "
                         f"(eight frames of 90 ms by design), back to the Landscape tab p50 {r.get('back_to_landscape', float('nan')):.0f} ms")
    for rows, r in (t.get("longest_task_result_list") or {}).get("cases", {}).items():
        camera = f" (a bare camera move's: {r['camera_max_ms']:.0f} ms)" if r.get("camera_max_ms") is not None else ""
        lines.append(f"no task over {LONG_TASK_TARGET_MS:.0f} ms during a move with the result list, {rows}: longest {r['max_ms']:.0f} ms{camera}  "
                     f"{'met' if r['met'] else 'NOT met'}")
    if t.get("sample_first_paint"):
        r = t["sample_first_paint"]
        lines.append(f"sample store first paint < {FIRST_PAINT_TARGET_S:.0f} s: {r['p50_s']:.2f} s  {'met' if r['met'] else 'NOT met'}" if r["p50_s"] else "sample store first paint: not measured")
    for view, r in (t.get("move_under_1s_at_1m") or {}).get("cases", {}).items():
        if r["p50_ms"]:
            lines.append(f"slider move < 1 s at 1M, {view}: p50 {r['p50_ms']:.0f} ms ({r['drawn']:,} drawn)  {'met' if r['met'] else 'NOT met'}")
        else:
            lines.append(f"slider move < 1 s at 1M, {view}: NOT met ({r['why']})")
    return "\n".join(lines)


def CHROMIUM_VERSION() -> str | None:  # noqa: N802
    import subprocess

    from tests.app.browser import CHROMIUM

    try:
        return subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main())
