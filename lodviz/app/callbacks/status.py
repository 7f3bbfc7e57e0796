"""Keeping the scene in step with the store: the layout job, and writes from elsewhere.

An agent writing through the MCP endpoint of the same process adds memories
the scene has not seen; the poll notices the new count, starts placing them on
the map, and bumps the data version so the scene redraws. It does the same
when a tier floor changed (an agent's ``memory_promote``): slider moves patch
heights and colours but not the markers that show floors.
"""

from __future__ import annotations

import hashlib

from dash import Dash, Input, Output, State, ctx as dash_ctx, no_update

from lodviz.app.context import AppContext
from lodviz.store.base import State as StoreState


def status_text(app_ctx: AppContext) -> str:
    s = app_ctx.layout_job.status()
    if s.running:
        what = "Refitting the map with UMAP" if s.kind == "fit" else "Placing new memories on the map"
        return f"{what}… {s.elapsed:.0f}s (placeholder positions meanwhile)"
    if s.error:
        return f"The map could not be updated: {s.error}"
    meta = app_ctx.mem.store.meta()
    method = meta.get("layout_method")
    if not method:
        return "No map fitted yet."
    return f"Map: {method.upper()} of {int(meta.get('layout_count', 0)):,} memories."


def floors_mark(app_ctx: AppContext, state: StoreState | None = None) -> str:
    """A short fingerprint of every memory's tier floor (about 1 ms at 1M memories)."""
    state = app_ctx.mem.store.state() if state is None else state
    return hashlib.blake2b(state.floor.tobytes(), digest_size=8).hexdigest()


def poll(app_ctx: AppContext, seen: dict | None, version: int | None) -> tuple[dict, int | None, str]:
    """(new seen marker, new data version or None for unchanged, status line)."""
    seen = dict(seen or {})
    state = app_ctx.mem.store.state()  # the in-process copy: no query every 2 s per open page
    count = len(state)
    s = app_ctx.layout_job.status()
    finished = s.finished
    changed = False
    if count != seen.get("count"):
        changed = True
        app_ctx.layout_job.start("place")
    if finished is not None and finished != seen.get("layout"):
        changed = True
    floors = floors_mark(app_ctx, state)
    if seen.get("floors") not in (None, floors):
        changed = True
    seen.update(count=count, layout=finished, floors=floors)
    return seen, ((version or 0) + 1 if changed else None), status_text(app_ctx)


def register(app: Dash, app_ctx: AppContext) -> None:
    @app.callback(
        Output("seen", "data"),
        Output("data-version", "data", allow_duplicate=True),
        Output("layout-status", "children"),
        Input("poll", "n_intervals"),
        Input("refit", "n_clicks"),
        State("seen", "data"),
        State("data-version", "data"),
        prevent_initial_call=True,
    )
    def _poll(_n, _refit, seen, version):
        if dash_ctx.triggered_id == "refit":
            app_ctx.layout_job.start("fit")
        seen, new_version, text = poll(app_ctx, seen, version)
        return seen, new_version if new_version is not None else no_update, text
