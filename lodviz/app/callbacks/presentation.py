"""Presentation mode: the scene full screen, large type, the query and the counts as a title.

Everything happens in the browser: a class on the page's root switches the
layout (``style.css``, ``.app.presenting``), and the title follows the query
the camera uses. Esc leaves (``assets/keys.js``).
"""

from __future__ import annotations

from dash import Dash, Input, Output, State

from lodviz.app import ids


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
            return [on ? 'app presenting' : 'app', on ? 'Leave (Esc)' : 'Present'];
        }
        """,
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
