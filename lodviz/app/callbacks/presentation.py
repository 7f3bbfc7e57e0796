"""Presentation mode: the scene full screen, large type, the query as a title and, under it, the agent,
alpha and what one of its searches returns.

Everything happens in the browser: a class on the page's root switches the
layout (``style.css``, ``.app.presenting``), and the title follows the query
the camera uses. Esc leaves (``assets/keys.js``).
"""

from __future__ import annotations

from dash import Dash, Input, Output, State

from lodviz.app import ids
from lodviz.app.figure import GROUND_LABEL_PX, TERRACE_LABEL_PX
from lodviz.scoring import Tier

#: How much nearer the camera comes in presentation mode (eye distance times this).
PRESENT_ZOOM = 0.8
#: The terrace names and the ground's axis names in presentation mode, px (13 and 12 on a desk).
PRESENT_TERRACE_PX = 26
PRESENT_GROUND_PX = 18


def register(app: Dash, _ctx) -> None:
    app.clientside_callback(
        """
        function(n, className) {
            const on = !(className || '').split(' ').includes('presenting');
            try {
                if (on && !document.fullscreenElement && document.documentElement.requestFullscreen) {
                    document.documentElement.requestFullscreen().catch(() => {});
                } else if (!on && document.fullscreenElement) {
                    document.exitFullscreen().catch(() => {});
                }
            } catch (e) { /* full screen is a bonus: the layout change is the mode */ }
            // The camera moves in so the terraces fill the width the mode gives the scene, and the terrace
            // and ground names grow to be read across a room (plotly redraws their backing); back on leaving.
            const zoom = (factor) => {
                const gd = document.querySelector('#scene .js-plotly-plot');
                const scene = gd && gd._fullLayout && gd._fullLayout.scene;
                if (!scene) return;
                const eye = scene.camera.eye;
                const update = {'scene.camera.eye': {x: eye.x * factor, y: eye.y * factor, z: eye.z * factor}};
                (gd.layout.scene.annotations || []).forEach((a, i) => {
                    const terrace = i < TERRACES;
                    update['scene.annotations[' + i + '].font.size'] = on ? (terrace ? TERRACE_PX : GROUND_PX) : (terrace ? DESK_TERRACE_PX : DESK_GROUND_PX);
                });
                window.Plotly.relayout(gd, update);
            };
            setTimeout(() => zoom(on ? PRESENT_ZOOM : 1 / PRESENT_ZOOM), 350);
            return [on ? 'app presenting' : 'app', on ? 'Leave (Esc)' : 'Present'];
        }
        """.replace("PRESENT_ZOOM", str(PRESENT_ZOOM)).replace("TERRACES", str(len(Tier)))
           .replace("DESK_TERRACE_PX", str(TERRACE_LABEL_PX)).replace("DESK_GROUND_PX", str(GROUND_LABEL_PX))
           .replace("TERRACE_PX", str(PRESENT_TERRACE_PX)).replace("GROUND_PX", str(PRESENT_GROUND_PX)),
        Output(ids.APP, "className"),
        Output(ids.PRESENT, "children"),
        Input(ids.PRESENT, "n_clicks"),
        State(ids.APP, "className"),
        prevent_initial_call=True,
    )

    app.clientside_callback(
        """
        function(applied) {
            const q = ((applied || {}).query || '').trim();
            return q ? '“' + q + '”' : 'What the agents remember, by recency of use';
        }
        """,
        Output(ids.PRESENT_TITLE, "children"),
        Input(ids.APPLIED, "data"),
    )

    # Under the title, for the room: whose memory, at which alpha, and what one of its searches may return.
    app.clientside_callback(
        """
        function(agent, alpha, budgets) {
            const all = !agent || agent === '__all__';
            const budget = (budgets || {})[agent || '__all__'];
            const who = all ? 'All agents' : agent;
            const reads = budget ? 'a search returns at most ' + budget.toLocaleString('en-US') + ' tokens'
                                 : 'a search returns the whole landscape';
            return who + ' · α ' + Number(alpha).toFixed(2) + ' · ' + reads;
        }
        """,
        Output(ids.PRESENT_SUB, "children"),
        Input(ids.AGENT, "value"),
        Input(ids.ALPHA, "value"),
        State(ids.BUDGETS, "data"),
    )
