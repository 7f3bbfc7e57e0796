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
 */
(function () {
  "use strict";

  // Trace names (lodviz/app/figure.py) whose points a person can hover and open.
  const PICKABLE = new Set(["memories", "not a candidate", "query camera"]);

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

  function hook() {
    const gd = document.querySelector("#scene .js-plotly-plot");
    if (!gd || gd.__lodvizPickHook || typeof gd.on !== "function") return;
    gd.__lodvizPickHook = true;
    gd.on("plotly_afterplot", () => unpickOthers(gd));
    unpickOthers(gd);
  }

  // The graph is created (and may be re-created) by Dash after page load.
  setInterval(hook, 400);
  window.lodvizUnpickOthers = unpickOthers;
})();
