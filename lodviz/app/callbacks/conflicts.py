"""Conflicts: the list of memories that may contradict each other, and the auditor's decision.

The panel of a memory in a conflict offers three answers (both stand, this
one is superseded, the other is); each is ``Memory.resolve_conflict``,
audited with the app's identity. The *Conflicts* tab lists them; picking a
row opens its newer memory in the landscape.
"""

from __future__ import annotations

from typing import Any

from dash import ALL, Dash, Input, Output, State, no_update
from dash import ctx as dash_ctx

from lodviz.app import ids
from lodviz.app.callbacks.status import mark_seen
from lodviz.app.context import AppContext, app_actor
from lodviz.errors import LodvizError


def rows(app_ctx: AppContext, show_all: bool) -> list[dict[str, Any]]:
    mem = app_ctx.mem
    found = mem.conflicts(status=None if show_all else ("open",))
    headlines = mem.headlines(sorted({i for c in found for i in (c.memory_id, c.other_id)}))
    return [
        {
            "newer": c.memory_id,
            "newer_text": headlines.get(c.memory_id, ""),
            "older": c.other_id,
            "older_text": headlines.get(c.other_id, ""),
            "reason": c.reason,
            "status": c.status if not c.superseded_id else f"#{c.superseded_id} superseded",
            "detected": c.detected_at.strftime("%Y-%m-%d %H:%M") if c.detected_at else "",
        }
        for c in found
    ]


def resolve(app_ctx: AppContext, a: int, b: int, superseded: int, reason: str | None = None) -> str:
    """The auditor's answer, with the reason typed in the panel's box (kept in the audit log and on the conflict)."""
    app_ctx.require_steer("resolve a conflict")
    try:
        done = app_ctx.mem.resolve_conflict(
            a, b, superseded=superseded or None, actor=app_actor(), reason=(reason or "").strip() or None
        )
    except LodvizError as exc:
        return str(exc)
    what = f"#{done.superseded_id} is superseded by #{done.partner(done.superseded_id)}" if done.superseded_id else "both stand"
    return f"Conflict #{done.memory_id} vs #{done.other_id}: {what} (audited)."


def register(app: Dash, app_ctx: AppContext) -> None:
    @app.callback(
        Output(ids.CONFLICTS_TABLE, "data"),
        Output(ids.CONFLICTS_COUNT, "children"),
        Input(ids.TABS, "value"),
        Input(ids.CONFLICTS_ALL, "value"),
        Input(ids.DATA_VERSION, "data"),
    )
    def _rows(tab, show_all, _version):
        open_count = len(app_ctx.mem.conflicts())
        label = f"{open_count} open" if open_count else "none open"
        if tab != "conflicts":
            return no_update, label
        return rows(app_ctx, bool(show_all)), label

    @app.callback(
        Output(ids.ACTION_STATUS, "children", allow_duplicate=True),
        Output(ids.DATA_VERSION, "data", allow_duplicate=True),
        Output(ids.SEEN, "data", allow_duplicate=True),
        Output(ids.REASON, "value", allow_duplicate=True),
        Input({"type": ids.RESOLVE, "a": ALL, "b": ALL, "superseded": ALL}, "n_clicks"),
        State(ids.REASON, "value"),
        State(ids.DATA_VERSION, "data"),
        State(ids.SEEN, "data"),
        prevent_initial_call=True,
    )
    def _resolve(clicks, reason, version, seen):
        button = dash_ctx.triggered_id
        if not button or not any(clicks or []):
            return no_update, no_update, no_update, no_update
        message = resolve(app_ctx, int(button["a"]), int(button["b"]), int(button["superseded"]), reason)
        return message, (version or 0) + 1, mark_seen(app_ctx, seen), ""

    @app.callback(
        Output(ids.SELECTED_ID, "data", allow_duplicate=True),
        Output(ids.TABS, "value"),
        Input(ids.CONFLICTS_TABLE, "active_cell"),
        State(ids.CONFLICTS_TABLE, "derived_viewport_data"),
        prevent_initial_call=True,
    )
    def _open(cell, data):
        if not cell or not data:
            return no_update, no_update
        row = data[cell["row"]]
        return int(row["older"] if cell["column_id"].startswith("older") else row["newer"]), "landscape"
