"""Presentation mode: the scene full screen, large type, the query as a title and, under it, the agent,
alpha and what one of its searches returns.

Everything happens in the browser: a class on the page's root switches the
layout (``style.css``, ``.app.presenting``), and the title follows the query
the camera uses. Esc leaves (``assets/keys.js``).
"""

from __future__ import annotations

import json

from dash import Dash, Input, Output, State

from lodviz.app import ids
from lodviz.app.figure import GROUND_LABEL_PX, TERRACE_LABEL_PX
from lodviz.scoring import Tier

#: The stage in presentation mode: the ground stretched along the screen's width and seen from the
#: front, so the terraces span most of a wide scene (45-56% of its width from the desk's corner view,
#: 72-88% from here at 1280x720 and 1920x1080). The desk's own view comes back on leaving.
PRESENT_ASPECT = {"x": 2.2, "y": 1.1, "z": 0.8}
PRESENT_CAMERA = {"eye": {"x": 0.5, "y": -1.6, "z": 0.6}, "center": {"x": 0.0, "y": 0.0, "z": -0.15}, "up": {"x": 0, "y": 0, "z": 1}}
#: The terrace names and the ground's axis names in presentation mode, px (13 and 12 on a desk).
PRESENT_TERRACE_PX = 26
PRESENT_GROUND_PX = 18

#: Puts the scene on the stage (``on``) or back at the desk; in the browser, where the camera lives.
STAGE_JS = """
function lodvizStage(on) {
    const gd = document.querySelector('#scene .js-plotly-plot');
    const scene = gd && gd._fullLayout && gd._fullLayout.scene;
    if (!scene) return;
    const update = {};
    if (on) {
        // What the desk showed, so that leaving puts it back (a camera the person moved included).
        gd.__lodvizDesk = {camera: JSON.parse(JSON.stringify(scene.camera)), aspect: Object.assign({}, scene.aspectratio)};
        update['scene.camera'] = PRESENT_CAMERA;
        update['scene.aspectratio'] = PRESENT_ASPECT;
    } else if (gd.__lodvizDesk) {
        update['scene.camera'] = gd.__lodvizDesk.camera;
        update['scene.aspectratio'] = gd.__lodvizDesk.aspect;
        delete gd.__lodvizDesk;
    }
    (gd.layout.scene.annotations || []).forEach((a, i) => {
        const terrace = i < TERRACES;
        update['scene.annotations[' + i + '].font.size'] = on ? (terrace ? TERRACE_PX : GROUND_PX) : (terrace ? DESK_TERRACE_PX : DESK_GROUND_PX);
    });
    window.Plotly.relayout(gd, update);
}
""".replace("PRESENT_CAMERA", json.dumps(PRESENT_CAMERA)).replace("PRESENT_ASPECT", json.dumps(PRESENT_ASPECT)) \
   .replace("TERRACES", str(len(Tier))).replace("DESK_TERRACE_PX", str(TERRACE_LABEL_PX)) \
   .replace("DESK_GROUND_PX", str(GROUND_LABEL_PX)).replace("TERRACE_PX", str(PRESENT_TERRACE_PX)) \
   .replace("GROUND_PX", str(PRESENT_GROUND_PX))


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
            STAGE_JS
            // After the layout change has resized the scene.
            setTimeout(() => lodvizStage(on), 350);
            return [on ? 'app presenting' : 'app', on ? 'Leave (Esc)' : 'Present'];
        }
        """.replace("STAGE_JS", STAGE_JS),
        Output(ids.APP, "className"),
        Output(ids.PRESENT, "children"),
        Input(ids.PRESENT, "n_clicks"),
        State(ids.APP, "className"),
        prevent_initial_call=True,
    )

    # A new figure (another query, the store changed) comes with the desk's camera: back on the stage.
    app.clientside_callback(
        """
        function(figure, className) {
            if (!(className || '').split(' ').includes('presenting')) return window.dash_clientside.no_update;
            STAGE_JS
            setTimeout(() => {
                const gd = document.querySelector('#scene .js-plotly-plot');
                const aspect = gd && gd._fullLayout && gd._fullLayout.scene && gd._fullLayout.scene.aspectratio;
                if (aspect && Math.abs(aspect.x - ASPECT_X) > 1e-6) lodvizStage(true);
            }, 50);
            return window.dash_clientside.no_update;
        }
        """.replace("STAGE_JS", STAGE_JS).replace("ASPECT_X", str(PRESENT_ASPECT["x"])),
        Output(ids.PRESENT_SINK, "data"),
        Input(ids.SCENE, "figure"),
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
