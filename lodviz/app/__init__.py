"""The 3D memory landscape: a Dash app over one ``Memory``.

``create_app(mem)`` builds the app; no module holds user data, and everything
is read through the library's API. The combined server (``lodviz.serve``)
mounts ``app.server`` (Flask) next to the MCP endpoint, in the one process
that owns the store.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import dash
import flask

from lodviz.access import set_face
from lodviz.app.callbacks import register_all
from lodviz.app.context import AppContext
from lodviz.app.page import build_layout
from lodviz.app.view import DEFAULT_DRAW_LIMIT
from lodviz.errors import AccessDenied, LodvizError, Unauthenticated
from lodviz.mapping import LayoutJob
from lodviz.memory import Memory

log = logging.getLogger("lodviz.app")



def assets_folder() -> Path:
    """Where the app's stylesheets, scripts and images are: the copy a wheel ships in the package
    (``setup.py`` puts it there), else, run from a checkout, the top-level ``assets/`` (the one to edit)."""
    here = Path(__file__).resolve().parent
    packaged = here / "assets"
    return packaged if packaged.is_dir() else here.parent.parent / "assets"



def create_app(
    mem: Memory,
    *,
    title: str = "lodviz · memory landscape",
    draw_limit: int = DEFAULT_DRAW_LIMIT,
    layout_job: LayoutJob | None = None,
    place_on_start: bool = True,
    warm_model: bool = True,
    auth: bool = False,
    read_only: bool = False,
) -> dash.Dash:
    """A Dash app showing ``mem`` as a landscape; place new memories in the background.

    ``auth`` and ``read_only`` are what the server enforces (``lodviz.serve.auth``);
    the page says which mode it runs in, and a read-only page writes nothing.
    """
    job = layout_job or LayoutJob(mem)
    app_ctx = AppContext(mem=mem, layout_job=job, draw_limit=draw_limit, read_only=read_only, auth=auth)
    app = dash.Dash(
        __name__,
        title=title,
        assets_folder=str(assets_folder()),
        update_title=None,  # type: ignore[arg-type]  # Dash documents None: no "Updating..." title
        suppress_callback_exceptions=False,
    )

    def serve_layout():
        # The layout is fetched by the page with a same-origin request whose
        # referrer is the page's own URL: a shared link restores its view.
        url = flask.request.referrer if flask.has_request_context() else None
        return build_layout(mem, url, job.status().finished, mode=access_mode(auth, read_only))

    app.layout = serve_layout  # Dash calls it once here and keeps that as the validation layout
    app.server.before_request(_through_the_app)
    app.server.register_error_handler(Exception, _one_sentence)
    register_all(app, app_ctx)
    app.lodviz = app_ctx  # type: ignore[attr-defined]  # for tests and the server
    if warm_model:
        # Loading the embedding model takes seconds, and a large store's texts
        # a fraction of one; do both before the first query asks.
        mem.warm(background=True)  # does nothing when the server (or anyone) warmed it already
    if place_on_start:
        state = mem.columns()
        if len(state) and (state.x != state.x).any():  # NaN: memories not yet on the map
            job.start("place")
    return app


def _through_the_app() -> None:
    """What a request of the page changes is audited as coming through the app."""
    set_face("app")


def _one_sentence(exc: Exception) -> Any:
    """Every error a request of the page meets, as one sentence with its HTTP status.

    A refusal is 401/403; any other error the library raises on purpose is the
    request's fault (400); anything else is logged here, and the client gets
    a sentence, not a traceback: a request no page of ours sends (a forged
    callback with inputs of the wrong kind) lands here too.
    """
    from werkzeug.exceptions import HTTPException

    if isinstance(exc, HTTPException):
        return exc
    if isinstance(exc, Unauthenticated):
        status = 401
    elif isinstance(exc, AccessDenied):
        status = 403
    elif isinstance(exc, LodvizError):
        status = 400
    else:
        log.warning("a request of the page failed: %s: %s", type(exc).__name__, exc)
        log.debug("the failure in full", exc_info=exc)
        return flask.jsonify(error="the page sent a request this server cannot answer; reload the page."), 400
    return flask.jsonify(error=str(exc)), status


def access_mode(auth: bool, read_only: bool) -> tuple[str, str] | None:
    """What the header says about who may do what here: a label that fits whole, and the sentence (its tooltip)."""
    if read_only:
        return "Read-only demo", "Read-only demo: nothing you do here is written."
    if auth:
        return None
    return "Unauthenticated", "Unauthenticated: any local process can act as any agent (lodviz serve --auth)."
