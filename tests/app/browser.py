"""Running the app for a real headless Chromium: the server in a thread, Playwright's browser."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from werkzeug.serving import WSGIRequestHandler, make_server


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, *args, **kwargs) -> None:  # one line per request drowns the test output
        pass

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--use-gl=swiftshader",
    "--enable-unsafe-swiftshader",
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

#: The window most tests look through.
VIEWPORT = {"width": 1500, "height": 920}

# The screen position of a drawn memory (or of every one, for null), projected
# the way plotly's gl3d does for its hover labels, so a test can point at a
# memory for real.
PROJECT_JS = """
(memoryId) => {
  const gd = document.querySelector('#scene .js-plotly-plot');
  const scene = gd._fullLayout.scene._scene;
  const cp = scene.glplot.cameraParams, ds = scene.dataScale;
  const xf = (m, v) => { const o = [0, 0, 0, 0]; for (let r = 0; r < 4; ++r) for (let c = 0; c < 4; ++c) o[c] += m[4 * r + c] * v[r]; return o; };
  // The scene's viewport: its domain within the plot area, not the whole canvas.
  const box = gd.getBoundingClientRect(), size = gd._fullLayout._size, dom = gd._fullLayout.scene.domain;
  const left = box.left + size.l + dom.x[0] * size.w, width = size.w * (dom.x[1] - dom.x[0]);
  const top = box.top + size.t + (1 - dom.y[1]) * size.h, height = size.h * (dom.y[1] - dom.y[0]);
  const all = {};
  for (const trace of gd._fullData) {
    if (trace.type !== 'scatter3d' || !trace.customdata) continue;
    const ids = Array.from(trace.customdata);
    for (let i = 0; i < ids.length; ++i) {
      if (memoryId !== null && ids[i] !== memoryId) continue;
      const p = [trace.x[i] * ds[0], trace.y[i] * ds[1], trace.z[i] * ds[2], 1];
      const clip = xf(cp.projection, xf(cp.view, xf(cp.model, p)));
      const at = {x: left + (0.5 * clip[0] / clip[3] + 0.5) * width, y: top + (0.5 - 0.5 * clip[1] / clip[3]) * height};
      if (memoryId !== null) return at;
      all[ids[i]] = at;
    }
  }
  return memoryId === null ? all : null;
}
"""


def _a_free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


#: Every app a test serves listens here when the port is free, so the page's
#: scripts keep one address from test to test and the browser profile's cache,
#: and V8's cache of their compiled code, serve them (``warm_context``).
PORT = _a_free_port()


@contextmanager
def serving(app) -> Iterator[str]:
    def listening(port: int):
        return make_server("127.0.0.1", port, app.server, threaded=True, request_handler=_QuietHandler)

    try:
        server = listening(PORT)
    except OSError:  # taken: a second app served at once, or another process
        server = listening(0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        thread.join(10)
        server.server_close()  # free the port for the next test's app now, not when the server is collected


@contextmanager
def new_page(context, viewport: dict[str, int] | None = None) -> Iterator[Any]:
    """A page of ``context`` that records uncaught errors and server errors in ``page.errors``;
    closed afterwards, with the context's cookies cleared for the next test's page."""
    page = context.new_page()
    page.set_viewport_size(viewport or VIEWPORT)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 500 else None)
    page.errors = errors
    try:
        yield page
    finally:
        page.close()
        context.clear_cookies()


def trace_js(name: str, field: str) -> str:
    return f"() => {{ const gd = document.querySelector('#scene .js-plotly-plot'); const t = gd._fullData.find(t => t.name === '{name}'); return t ? Array.from(t.{field} || []) : null; }}"


def open_scene(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#scene .gl-container canvas", timeout=60_000)
    page.wait_for_function("() => document.querySelector('#counts') && document.querySelector('#counts').innerText.includes('full')", timeout=60_000)


def eventually(page, condition, timeout_ms: int = 30_000) -> bool:
    for _ in range(timeout_ms // 250):
        if condition():
            return True
        page.wait_for_timeout(250)
    return condition()


def click_memory(page, memory_id: int) -> None:
    """Hover the memory until plotly's hover label shows, then click it: a real WebGL pick."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    point = page.evaluate(PROJECT_JS, memory_id)
    for dx in (0, 1, -1):
        page.mouse.move(point["x"] + dx, point["y"])
        try:
            page.wait_for_selector("#scene .hovertext", timeout=5_000)
            break
        except PlaywrightTimeout:
            continue
    # gl3d takes a click from a press and release on the picked point, not an instant one.
    page.mouse.down()
    page.wait_for_timeout(80)
    page.mouse.up()


def settled(page) -> None:
    """Wait until the plot has the size of its box (opening or closing the panel resizes it)."""
    page.wait_for_function(
        "() => { const gd = document.querySelector('#scene .js-plotly-plot'), box = document.querySelector('.scene-box');"
        " return gd && gd._fullLayout && Math.abs(gd._fullLayout.width - box.clientWidth) <= 1; }",
        timeout=10_000,
    )
    page.wait_for_timeout(300)  # the WebGL scene redraws on the next frames


def unhover(page) -> None:
    """Move to empty sky in the scene until plotly drops its hover label, so the next label is the next memory's.

    One move can land while the WebGL scene is still redrawing (after the panel
    opened, say) and pick nothing new; a few small moves over some seconds do not.
    """
    box = page.locator(".scene-box").bounding_box()
    for step in range(30):
        page.mouse.move(box["x"] + 12 + step % 5, box["y"] + 12 + step % 3)
        try:
            page.wait_for_selector("#scene .hovertext", state="detached", timeout=700)
            return
        except Exception:  # noqa: BLE001 - Playwright's TimeoutError: try another small move
            continue
    page.wait_for_selector("#scene .hovertext", state="detached", timeout=5_000)


def counts(page) -> str:
    return page.inner_text("#counts")


def _run_catching(func, arg, failures: list) -> None:
    try:
        func(arg)
    except BaseException as exc:  # reported by the test thread
        failures.append(exc)


def most_isolated(at: dict, ids: list[int]) -> int:
    """Of ``ids``, the memory drawn farthest from any other point on screen (least likely hidden)."""
    points = {int(k): (v["x"], v["y"]) for k, v in at.items()}

    def room(memory_id: int) -> float:
        x, y = points[memory_id]
        return min(((x - ox) ** 2 + (y - oy) ** 2 for other, (ox, oy) in points.items() if other != memory_id), default=1e9)

    return max((i for i in ids if i in points), key=room)


def search(page, query: str) -> None:
    page.fill("#query", query)
    page.press("#query", "Enter")
    page.wait_for_function("() => document.querySelector('#scene-note').innerText.includes('Camera at')", timeout=60_000)
