"""Presentation mode: the scene full screen, large type, the query as a title and, under it, the agent,
alpha and what one of its searches returns.

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
