"""Driving the lodviz app in headless Chromium for ``app_bench.py``: timings taken in the page.

Every time is read from ``performance.now()`` inside the page, so the numbers
do not include Playwright's own round trips. What "repainted" means here:

* the graph's ``plotly_afterplot`` event has fired for the change (for a slider
  move: for the figure the server's Patch produced, recognised by its new data
  arrays; for a camera move: for the ``Plotly.relayout`` of ``scene.camera``);
* then one animation frame has run (gl3d draws a camera change in its own
  ``requestAnimationFrame`` loop, which runs before ours in that frame);
* then a one-pixel ``gl.readPixels`` on the scene's WebGL context has returned.
  ``readPixels`` waits for every GL command issued before it, so the software
  rasteriser (SwiftShader) has finished drawing the frame, not only queued it.

First paint is timed from navigation start (``performance.timeOrigin``) to the
same "repainted" point for the first ``Plotly.react`` (dcc.Graph's call, wrapped
when plotly.js loads; its promise settles right after ``plotly_afterplot``) of a
figure whose memory traces hold points, with the tier counts shown.
"""

from __future__ import annotations

# Chromium, its flags and the in-process server come from the tests' harness,
# ``tests/app/browser.py``: one set for tests, benchmarks and scripts.

VIEWPORT = {"width": 1500, "height": 920}
#: The scene's scatter traces (``lodviz.app.figure.TRACE``): faint, then bright.
MEMORY_TRACES = ("not a candidate", "memories")


# Installed before any page script runs (``add_init_script``). It hooks the
# graph as soon as it exists and records the first paint; ``window.__bench``
# then offers the two timed moves.
INIT_JS = r"""
(() => {
  const TRACES = %(traces)s;
  performance.setResourceTimingBufferSize(5000);
  const bench = window.__bench = {firstPaint: null, firstSettled: null, firstPaintDetail: null, keydownAt: null, afterplots: 0};
  const gd = () => document.querySelector('#scene .js-plotly-plot');
  const points = (g) => {
    if (!g || !g._fullData) return -1;
    let n = 0, found = 0;
    for (const t of g._fullData) {
      if (TRACES.includes(t.name)) { found += 1; n += (t._length != null ? t._length : (t.x ? t.x.length : 0)); }
    }
    return found ? n : -1;
  };
  bench.points = () => points(gd());
  // Wait for the frame the change is drawn in, then for the rasteriser.
  bench.sync = () => {
    // Off for the long-task pass: readPixels makes the main thread wait for the rasteriser,
    // a wait of the benchmark's own that would be counted as the page's task.
    if (bench.noSync) return true;
    try {
      const gl = gd()._fullLayout.scene._scene.glplot.gl;
      const px = new Uint8Array(4);
      gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
      return true;
    } catch (e) { return false; }
  };
  bench.repainted = () => new Promise((resolve) => {
    requestAnimationFrame(() => { bench.sync(); resolve(performance.now()); });
  });
  const countsShown = () => {
    const c = document.querySelector('#counts');
    return !!(c && c.innerText.includes('full'));
  };
  window.addEventListener('keydown', () => { bench.keydownAt = performance.now(); }, true);

  // The page is "settled" when no callback the page is waiting on is in flight
  // (the status poll, which runs every 2 s whatever happens, does not count)
  // and two animation frames have run with nothing in flight (the second after a paint):
  // the result list and the panel are on screen, not only the scene.
  bench.inflight = 0;
  const fetch0 = window.fetch;
  window.fetch = function (input, init) {
    const url = typeof input === 'string' ? input : (input && input.url) || '';
    const body = init && typeof init.body === 'string' ? init.body : '';
    const counted = url.includes('_dash-update-component') && !body.includes('"id":"%(poll)s"');
    if (!counted) return fetch0.apply(this, arguments);
    bench.inflight += 1;
    const done = () => { bench.inflight -= 1; bench.lastAnswerAt = performance.now(); };
    return fetch0.apply(this, arguments).then((r) => { r.clone().text().then(done, done); return r; }, (e) => { done(); throw e; });
  };
  bench.settled = () => new Promise((resolve) => {
    let quiet = 0;
    const step = () => {
      if (bench.inflight > 0) { quiet = 0; requestAnimationFrame(step); return; }
      quiet += 1;
      if (quiet < 2) { requestAnimationFrame(step); return; }
      bench.sync();
      resolve(performance.now());
    };
    requestAnimationFrame(step);
  });
  // Chromium's long-task timing: every main-thread task over 50 ms.
  bench.longtasks = [];
  try {
    new PerformanceObserver((list) => { for (const e of list.getEntries()) bench.longtasks.push([e.startTime, e.duration]); })
      .observe({type: 'longtask', buffered: true});
  } catch (e) { bench.longtasks = null; }

  // First paint: the first Plotly.react / newPlot of a figure with memory points
  // (its promise settles right after plotly_afterplot), with the counts shown.
  // Plotly.react is wrapped as soon as plotly.min.js has run: a capturing
  // 'load' listener sees the script's load event before dcc.Graph's own handler.
  const onPlotted = (g) => {
    bench.afterplots += 1;
    if (bench.firstPaint !== null || bench._firstPending) return;
    const n = points(g);
    if (n <= 0) return;
    bench._firstPending = true;
    const afterplotAt = performance.now();
    const finish = () => {
      if (!countsShown()) { requestAnimationFrame(finish); return; }
      bench.sync();
      bench.firstPaint = performance.now();
      bench.settled().then((t) => { bench.firstSettled = t; });
      const entries = performance.getEntriesByType('resource');
      const end = (pred) => { const e = entries.filter(pred); return e.length ? Math.max(...e.map((x) => x.responseEnd)) : null; };
      const updates = entries.filter((e) => e.name.includes('_dash-update-component'));
      const figure = updates.length ? updates.reduce((a, b) => ((b.encodedBodySize || 0) > (a.encodedBodySize || 0) ? b : a)) : null;
      const nav = performance.getEntriesByType('navigation')[0];
      bench.firstPaintDetail = {
        afterplot_ms: afterplotAt, points: n,
        dom_content_loaded_ms: nav ? nav.domContentLoadedEventEnd : null,
        scripts_loaded_ms: end((e) => e.initiatorType === 'script'),
        layout_response_ms: end((e) => e.name.includes('_dash-layout')),
        figure_request_ms: figure ? figure.requestStart : null,
        figure_response_ms: figure ? figure.responseEnd : null,
        figure_bytes: figure ? figure.encodedBodySize : null,
      };
    };
    requestAnimationFrame(finish);
  };
  const wrap = () => {
    const P = window.Plotly;
    if (!P || P.__benchWrapped) return !!P;
    for (const name of ['react', 'newPlot']) {
      const original = P[name];
      P[name] = function (g, ...rest) {
        const out = original.call(this, g, ...rest);
        const el = typeof g === 'string' ? document.getElementById(g) : g;
        Promise.resolve(out).then(() => onPlotted(el), () => {});
        return out;
      };
    }
    P.__benchWrapped = true;
    return true;
  };
  document.addEventListener('load', wrap, true);
  const poll = () => { if (!wrap()) requestAnimationFrame(poll); };
  requestAnimationFrame(poll);

  // A camera move: relayout scene.camera to the other of two eyes, timed to the repaint.
  bench.cameraMove = () => new Promise((resolve, reject) => {
    const g = gd();
    const cam = g._fullLayout.scene.camera;
    const a = {x: 1.55, y: -1.2, z: 0.75}, b = {x: 1.35, y: -1.45, z: 0.85};
    const eye = Math.abs(cam.eye.x - a.x) < 1e-6 ? b : a;
    const t0 = performance.now();
    let afterplotAt = null;
    const handler = () => {
      if (afterplotAt !== null) return;
      afterplotAt = performance.now();
      g.removeListener('plotly_afterplot', handler);
      // Timed to the same end as a slider move: the frame drawn, then the page settled (nothing in flight, two quiet frames).
      bench.repainted().then((t1) => bench.settled().then((t2) => resolve({start: t0, afterplot: afterplotAt, repainted: t1, end: t2, points: points(g)})));
    };
    g.on('plotly_afterplot', handler);
    Plotly.relayout(g, {'scene.camera': {eye: eye, center: cam.center, up: {x: 0, y: 0, z: 1}}}).catch(reject);
  });

  // A slider move: armed here, started by a real key press from Playwright.
  // Done when afterplot fires for a figure whose memory traces carry new z arrays.
  bench.armSlider = () => {
    const g = gd();
    const zs = () => g.data.filter((t) => TRACES.includes(t.name)).map((t) => t.z);
    const before = zs();
    bench.keydownAt = null;
    const since = performance.now();
    bench.pending = new Promise((resolve) => {
      const handler = () => {
        const now = zs();
        if (now.length === before.length && now.every((z, i) => z === before[i])) return;
        const afterplotAt = performance.now();
        g.removeListener('plotly_afterplot', handler);
        bench.repainted().then((t1) => bench.settled().then((t2) => [t1, t2])).then(([t1, t2]) => {
          const calls = performance.getEntriesByType('resource').filter(
            (e) => e.name.includes('_dash-update-component') && e.startTime >= since);
          // The render callback's response is the largest (the 2 s status poll also calls the server).
          const last = calls.length ? calls.reduce((a, b) => ((b.encodedBodySize || 0) > (a.encodedBodySize || 0) ? b : a)) : null;
          resolve({
            start: bench.keydownAt, afterplot: afterplotAt, end: t1, settled: t2, points: points(g),
            request_start: last ? last.requestStart : null,
            response_end: last ? last.responseEnd : null,
            response_bytes: last ? (last.encodedBodySize || last.transferSize) : null,
            requests: calls.length,
          });
        });
      };
      g.on('plotly_afterplot', handler);
    });
    return true;
  };
})();
"""


def init_script() -> str:
    import json

    from lodviz.app import ids

    return INIT_JS % {"traces": json.dumps(list(MEMORY_TRACES)), "poll": ids.POLL}
