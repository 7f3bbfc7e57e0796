"""Callbacks, one module per feature; each exposes ``register(app, ctx)``."""

from __future__ import annotations

from dash import Dash

from lodviz.app.callbacks import (
    audit,
    camera,
    conflicts,
    evidence,
    history,
    presentation,
    scoring,
    selection,
    status,
    tabs,
    tuning,
    url,
)
from lodviz.app.context import AppContext


def register_all(app: Dash, ctx: AppContext) -> None:
    scoring.register(app, ctx, panel=selection.follow)  # an open memory's panel follows a slider in the scene's answer
    for module in (tuning, selection, audit, status, url, camera, conflicts, evidence, presentation, history, tabs):
        module.register(app, ctx)
