"""Flying the view to the query camera, animated in the browser."""

from __future__ import annotations

from dash import Dash, Input, Output, State

from lodviz.app import ids


def register(app: Dash, _ctx) -> None:
    # The scene at the screen's own resolution, once, when the page opens: sharp on a 2x screen,
    # a quarter of Plotly's default pixels on a 1x one (``page.SCENE_CONFIG``).
    app.clientside_callback(
        """
        function(_, config) {
            const ratio = Math.min(2, window.devicePixelRatio || 1);
            if (ratio <= 1 || !config) return window.dash_clientside.no_update;
            return Object.assign({}, config, {plotGlPixelRatio: ratio});
        }
        """,
        Output(ids.SCENE, "config"),
        Input(ids.SCENE, "id"),
        State(ids.SCENE, "config"),
    )
    app.clientside_callback(
        """
        function(n, figure) {
            if (!n || !figure) return window.dash_clientside.no_update;
            const cam = figure.data.find(t => t.name === 'query camera');
            if (!cam || !cam.x || !cam.x.length) return 'no query';
            const gd = document.querySelector('#scene .js-plotly-plot');
            if (!gd || !gd._fullLayout) return 'no graph';
            // The scene as drawn (presentation mode stretches it), not as the figure was sent.
            const scene = gd._fullLayout.scene;
            const ar = scene.aspectratio;
            // Plotly's camera works in the scene's normalised box: each axis
            // range maps to [-ratio/2, ratio/2] around the centre.
            const norm = (v, range, r) => ((v - range[0]) / (range[1] - range[0]) - 0.5) * r;
            const target = {
                x: norm(cam.x[0], scene.xaxis.range, ar.x),
                y: norm(cam.y[0], scene.yaxis.range, ar.y),
                z: norm(cam.z[0] * 0.55, scene.zaxis.range, ar.z),
            };
            const start = gd._fullLayout.scene.camera;
            const from = {eye: {...start.eye}, center: {...start.center}};
            // A low look (about 10 degrees above the ground) keeps the terraces stacked on screen:
            // from higher up (35 degrees), a SUMMARY point behind the query drew above a FULL one in
            // front of it, in a fifth to a quarter of FULL/SUMMARY pairs; from here, in about 1%.
            const to = {center: target, eye: {x: target.x + 0.715, y: target.y - 0.975, z: target.z + 0.2}};
            const steps = 24;
            let i = 0;
            const ease = t => t < 0.5 ? 2 * t * t : 1 - Math.pow(-2 * t + 2, 2) / 2;
            const mix = (a, b, t) => ({x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t, z: a.z + (b.z - a.z) * t});
            function frame() {
                i += 1;
                const t = ease(i / steps);
                Plotly.relayout(gd, {'scene.camera': {eye: mix(from.eye, to.eye, t), center: mix(from.center, to.center, t), up: {x: 0, y: 0, z: 1}}});
                if (i < steps) window.requestAnimationFrame(frame);
            }
            window.requestAnimationFrame(frame);
            return 'flying';
        }
        """,
        Output(ids.FLY_SINK, "data"),
        Input(ids.FLY, "n_clicks"),
        State(ids.SCENE, "figure"),
        prevent_initial_call=True,
    )
