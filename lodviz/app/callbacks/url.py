"""The view's state in the URL, so a view can be shared.

The browser rewrites its address as the controls move (``history.replaceState``,
no reload and no server round trip); the layout reads it back on load. A link
whose values the page refused (``Controls.refused``, said on the page) keeps its
address until a control moves, so what was typed stays in view beside the
refusal; the first move takes the notice away with it.
"""

from __future__ import annotations

from dash import Dash, Input, Output, State

from lodviz.app import ids
from lodviz.app.callbacks.scoring import VIEW_CONTROLS


def register(app: Dash, _ctx) -> None:
    app.clientside_callback(
        """
        function(applied, agent, alpha, lamLog, th, kLog, now, asOf, budget, color, terrain, selected, refused) {
            if (refused && !window.__lodvizRefusedShown) {  // the first sync after a refused link: leave it as typed
                window.__lodvizRefusedShown = true;
                return window.dash_clientside.no_update;
            }
            const notice = document.getElementById('url-refused-note');
            if (notice) notice.remove();  // a control moved: the page no longer shows what the notice says
            const p = new URLSearchParams();
            if (applied && applied.query) p.set('q', applied.query);
            if (applied && applied.exclude) p.set('x', applied.exclude);
            if (agent && agent !== '__all__') p.set('agent', agent);
            const t = [...th].sort((a, b) => a - b);
            p.set('alpha', alpha.toFixed(2));
            p.set('lambda', Math.pow(10, lamLog).toPrecision(3));
            p.set('theta1', t[2].toFixed(2));
            p.set('theta2', t[1].toFixed(2));
            p.set('theta3', t[0].toFixed(2));
            p.set('k', String(Math.round(Math.pow(10, kLog))));
            if (now) p.set('now', now.slice(0, 10));
            if (asOf && asOf.event != null) p.set('replay', String(asOf.event));
            else if (asOf && asOf.at) p.set('asof', asOf.at.slice(0, 10));
            if (budget === 'whole') p.set('budget', 'whole');
            if (color && color !== 'tier') p.set('color', color);
            if (terrain && terrain.length) p.set('terrain', '1');
            if (selected !== null && selected !== undefined) p.set('m', String(selected));
            const next = window.location.pathname + '?' + p.toString();
            if (next !== window.location.pathname + window.location.search) {
                window.history.replaceState(null, '', next);
            }
            return next;
        }
        """,
        Output(ids.URL_SINK, "data"),
        *[Input(component, prop) for component, prop in VIEW_CONTROLS],
        Input(ids.COLOR_BY, "value"),
        Input(ids.TERRAIN, "value"),
        Input(ids.SELECTED_ID, "data"),
        State(ids.URL_REFUSED, "data"),
    )
