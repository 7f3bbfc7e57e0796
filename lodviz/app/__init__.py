"""The 3D memory landscape: a Dash app over one ``Memory``.

``create_app(mem)`` builds the app; it holds no user data at module level and
reads everything through the library's API. The combined server
(``lodviz.server``) mounts ``app.server`` (Flask) next to the MCP endpoint.
"""

from __future__ import annotations

import dash
from dash import html

from lodviz.memory import Memory


def create_app(mem: Memory, *, title: str = "lodviz") -> dash.Dash:
    """A placeholder until the landscape lands: shows the store's size."""
    app = dash.Dash(__name__, title=title)
    app.layout = lambda: html.Div([html.H1("lodviz"), html.P(f"{len(mem)} memories")], id="root")
    return app
