"""What every callback of one app instance shares: the memory and the layout job.

It is created by ``create_app`` and passed to each ``register`` function, so no
module holds user data.
"""

from __future__ import annotations

from dataclasses import dataclass

from lodviz.access import IDENTITY_HEADER
from lodviz.app.view import DEFAULT_DRAW_LIMIT
from lodviz.mapping import LayoutJob
from lodviz.memory import Memory

#: The actor written into the audit log for what a person does in the app
#: when the server runs without authentication (local, single user).
APP_ACTOR = "app"


def app_actor() -> str:
    """Who acts in this request: the identity the server authenticated, else ``APP_ACTOR``."""
    from flask import has_request_context, request

    if has_request_context():
        name = request.headers.get(IDENTITY_HEADER)
        if name:
            return name
    return APP_ACTOR


@dataclass
class AppContext:
    mem: Memory
    layout_job: LayoutJob
    draw_limit: int = DEFAULT_DRAW_LIMIT
    read_only: bool = False  # a demo: the page writes nothing, not even its searches' audit lines
