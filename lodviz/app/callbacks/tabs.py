"""The tabs' panes: all of them mounted, the picked one shown.

A pane that Dash's own tabs hold is unmounted when another tab is picked, and
the scene was drawn again from nothing on coming back (2.0-2.6 s). Here the
Landscape only steps out of sight, at its full size, so that coming back is a
repaint; the other panes are hidden.
"""

from __future__ import annotations

from dash import Dash, Input, Output

from lodviz.app import ids


def register(app: Dash, _ctx) -> None:
    app.clientside_callback(
        """
        function(tab) {
            // Out of sight at its size: a scene with no size would be drawn again on coming back.
            const away = {position: 'absolute', inset: '0', visibility: 'hidden', pointerEvents: 'none'};
            const shown = (value) => tab === value ? {} : (value === 'landscape' ? away : {display: 'none'});
            return PANES.map(shown);
        }
        """.replace("PANES", repr(list(ids.PANES))),
        *[Output(pane, "style") for pane in ids.PANES.values()],
        Input(ids.TABS, "value"),
    )
