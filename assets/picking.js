/*
 * Every drawn memory can be hovered and clicked, whatever lies in front of it.
 *
 * plotly's 3D scene picks with an off-screen buffer into which every trace is
 * drawn, and `hoverinfo: "skip"` does not take a trace out of it
 * (plotly.js#6669): the translucent terrace planes, the score terrain and the
 * query's lines caught the pick for every point beneath them. gl-plot3d skips
 * objects whose `pickSlots` is 0 when it hands out pick ids, so after each
 * plot this gives every object that does not belong to a pickable trace zero
 * slots, and re-allocates the ids.
 *
 * A click opens the memory on or near the pointer, as 3D tools do: the point
 * plotly is showing a label for, else the drawn memory nearest the click on
 * screen within PICK_RADIUS pixels. A press that moved is a camera drag, not
 * a click.
 */
(function () {
  "use strict";

  // Trace names (lodviz/app/figure.py) whose points a person can hover and open.
  const PICKABLE = new Set(["memories", "not a candidate", "query camera", "recently used", "returned then", "changed tier"]);
  // Traces whose points are memories (customdata holds their ids).
  const MEMORY_TRACES = new Set(["memories", "not a candidate", "recently used", "returned then", "changed tier"]);
  const PICK_RADIUS = 16;
  const DRAG_PIXELS = 5;

  function scene3d(gd) {
    const layout = gd && gd._fullLayout;
    return layout && layout.scene && layout.scene._scene;
  }

  function unpickOthers(gd) {
    const scene = scene3d(gd);
    if (!scene || !scene.glplot || !scene.traces) return;
    const plot = scene.glplot;
    const onPlot = new Set(plot.objects);
    const keep = new Set();
    for (const uid of Object.keys(scene.traces)) {
      const trace = scene.traces[uid];
      if (!trace || !trace.data || !PICKABLE.has(trace.data.name)) continue;
      for (const part of Object.values(trace)) {
        if (part && onPlot.has(part)) keep.add(part);
      }
    }
    let changed = false;
    for (const obj of plot.objects) {
      if (!keep.has(obj) && obj.pickSlots) {
        obj.pickSlots = 0;
        changed = true;
      }
    }
    if (changed && plot.objects.length) {
      // gl-plot3d re-allocates pick ids whenever an object is added or removed.
      const last = plot.objects[plot.objects.length - 1];
      plot.remove(last);
      plot.add(last);
      gd.__lodvizUnpicked = (gd.__lodvizUnpicked || 0) + 1;
    }
  }

  // Screen positions of drawn memories, projected the way gl3d draws them.
  function screenPoints(gd) {
    const scene = scene3d(gd);
    if (!scene || !scene.glplot) return [];
    const cp = scene.glplot.cameraParams, ds = scene.dataScale;
    const xf = (m, v) => { const o = [0, 0, 0, 0]; for (let r = 0; r < 4; ++r) for (let c = 0; c < 4; ++c) o[c] += m[4 * r + c] * v[r]; return o; };
    const box = gd.getBoundingClientRect(), size = gd._fullLayout._size, dom = gd._fullLayout.scene.domain;
    const left = box.left + size.l + dom.x[0] * size.w, width = size.w * (dom.x[1] - dom.x[0]);
    const top = box.top + size.t + (1 - dom.y[1]) * size.h, height = size.h * (dom.y[1] - dom.y[0]);
    const out = [];
    for (const trace of gd._fullData) {
      if (trace.type !== "scatter3d" || !MEMORY_TRACES.has(trace.name) || !trace.customdata || trace.visible === false) continue;
      for (let i = 0; i < trace.customdata.length; ++i) {
        const clip = xf(cp.projection, xf(cp.view, xf(cp.model, [trace.x[i] * ds[0], trace.y[i] * ds[1], trace.z[i] * ds[2], 1])));
        if (clip[3] <= 0) continue; // behind the camera
        out.push({id: Number(trace.customdata[i]), x: left + (0.5 * clip[0] / clip[3] + 0.5) * width,
                  y: top + (0.5 - 0.5 * clip[1] / clip[3]) * height, depth: clip[2] / clip[3]});
      }
    }
    return out;
  }

  function nearest(gd, x, y) {
    let best = null, bestScore = Infinity;
    for (const p of screenPoints(gd)) {
      const d = Math.hypot(p.x - x, p.y - y);
      if (d > PICK_RADIUS) continue;
      const score = d + 2 * p.depth; // two points at the same spot: the nearer one
      if (score < bestScore) { best = p; bestScore = score; }
    }
    return best;
  }

  function hookClicks(gd) {
    let press = null, hovered = null;
    gd.on("plotly_hover", (e) => {
      const pt = e && e.points && e.points[0];
      hovered = pt && MEMORY_TRACES.has(pt.data.name) && pt.customdata != null ? Number(pt.customdata) : null;
    });
    gd.on("plotly_unhover", () => { hovered = null; });
    const onCanvas = (e) => e.target && e.target.closest && e.target.closest(".gl-container");
    gd.addEventListener("pointerdown", (e) => { press = onCanvas(e) && e.button === 0 ? {x: e.clientX, y: e.clientY} : null; }, true);
    gd.addEventListener("pointerup", (e) => {
      const start = press;
      press = null;
      if (!start || Math.hypot(e.clientX - start.x, e.clientY - start.y) > DRAG_PIXELS) return;
      const near = hovered != null ? {id: hovered} : nearest(gd, e.clientX, e.clientY);
      if (near && window.dash_clientside && window.dash_clientside.set_props) {
        window.dash_clientside.set_props("selected-id", {data: near.id});
        gd.__lodvizPicked = near.id;
      }
    }, true);
  }

  function hook() {
    const gd = document.querySelector("#scene .js-plotly-plot");
    if (!gd || gd.__lodvizPickHook || typeof gd.on !== "function") return;
    gd.__lodvizPickHook = true;
    gd.on("plotly_afterplot", () => unpickOthers(gd));
    unpickOthers(gd);
    hookClicks(gd);
  }

  // The graph is created (and may be re-created) by Dash after page load.
  setInterval(hook, 400);
  window.lodvizUnpickOthers = unpickOthers;
  window.lodvizNearest = (x, y) => nearest(document.querySelector("#scene .js-plotly-plot"), x, y);
})();
