"""Keeping the page in step with the store: the layout job, and changes made elsewhere.

An agent writing, searching or promoting through the MCP endpoint of the same
process changes what the scene shows: new memories, retrieval counts and last
retrievals (so D and the tiers), tier floors. Every such change is an audit
event, so the poll follows the audit log: events after the last one the page
has seen redraw the scene when they change memories, refresh the audit tab in
any case, and the header says what happened. New memories also start the job
that places them on the map.
"""

from __future__ import annotations

from datetime import UTC, datetime

from dash import Dash, Input, Output, State, html, no_update
from dash import ctx as dash_ctx

from lodviz.app import ids
from lodviz.app.context import AppContext
from lodviz.audit import FLOOR_MOVES, RETRIEVING, changes_landscape
from lodviz.records import AuditEvent

#: Actions that change what the scene shows. A look without touch changes nothing.
#: At most this many new events are read per poll; more just means "many changes".
EVENTS_PER_POLL = 200


def status_text(app_ctx: AppContext) -> str:
    s = app_ctx.layout_job.status()
    if s.running:
        what = "Refitting the map with UMAP" if s.kind == "fit" else "Placing new memories on the map"
        return f"{what}… {s.elapsed:.0f}s (placeholder positions meanwhile)"
    if s.error:
        return f"The map could not be updated: {s.error}"
    info = app_ctx.mem.info()
    if not info.layout_method:
        return "No map fitted yet."
    return f"Map: {info.layout_method.upper()} of {info.layout_count:,} memories."


def mark_seen(app_ctx: AppContext, seen: dict | None) -> dict:
    """``seen`` after a change the page made itself and has already drawn."""
    return {**(seen or {}), "audit": app_ctx.mem.last_event_id(), "count": len(app_ctx.mem.columns())}


def describe(events: list[AuditEvent]) -> str:
    """One line for the header: who changed what, newest first."""
    changing = [e for e in events if changes_landscape(e)]
    if not changing:
        return ""
    e = changing[0]
    who = e.actor if not e.agent_id or e.agent_id == e.actor else f"{e.actor} ({e.agent_id})"
    if e.action in RETRIEVING:
        what = f"{e.action} used {len(e.details.get('touched', []))} memories"
    elif e.action == "write":
        what = f"wrote {e.details.get('count', 0)} memories"
    elif e.action in FLOOR_MOVES:
        what = f"{e.action}d #{e.memory_id}"
    elif e.action == "expand":
        what = f"read passages of #{e.memory_id}" if e.details.get("passages") is not None else f"expanded #{e.memory_id}"
    elif e.action == "forget":
        what = f"forgot #{e.memory_id}"
    elif e.action == "resolve":
        what = f"decided the conflict of #{e.memory_id}"
    else:
        what = f"changed the profile of {e.agent_id}"
    more = f" and {len(changing) - 1} more changes" if len(changing) > 1 else ""
    at = (e.at or datetime.now(UTC)).strftime("%H:%M:%S")
    return f"Updated: {who} {what}{more} at {at} UTC (wall clock); the scene was redrawn."


def poll(app_ctx: AppContext, seen: dict | None, version: int | None) -> tuple[dict, int | None, str]:
    """(new seen marker, new data version or None for unchanged, status line).

    ``seen["audit"]`` is the last audit event the page has taken in, and
    ``seen["note"]`` says what changed in this poll ("" if nothing did).
    """
    seen = dict(seen or {})
    count = len(app_ctx.mem.columns())  # the in-process copy: no query every 2 s per open page
    s = app_ctx.layout_job.status()
    changed = False
    if count != seen.get("count"):
        changed = True
        app_ctx.layout_job.start("place")
    if s.finished is not None and s.finished != seen.get("layout"):
        changed = True
    note = ""
    if "audit" not in seen:
        seen["audit"] = app_ctx.mem.last_event_id()
    else:
        events = app_ctx.mem.audit(after_id=int(seen["audit"]), limit=EVENTS_PER_POLL)
        if events:
            seen["audit"] = int(events[0].id or seen["audit"])
            if any(changes_landscape(e) for e in events):
                changed = True
                note = describe(events)
    seen.update(count=count, layout=s.finished, note=note)
    return seen, ((version or 0) + 1 if changed else None), status_text(app_ctx)


def register(app: Dash, app_ctx: AppContext) -> None:
    @app.callback(
        Output(ids.SEEN, "data"),
        Output(ids.DATA_VERSION, "data", allow_duplicate=True),
        Output(ids.LAYOUT_STATUS, "children"),
        Output(ids.SYNC_STATUS, "children"),
        Output(ids.AUDIT_VERSION, "data"),
        Input(ids.POLL, "n_intervals"),
        Input(ids.REFIT, "n_clicks"),
        State(ids.SEEN, "data"),
        State(ids.DATA_VERSION, "data"),
        prevent_initial_call=True,
    )
    def _poll(_n, _refit, seen, version):
        if dash_ctx.triggered_id == ids.REFIT:
            app_ctx.require_steer("refit the map")
            app_ctx.layout_job.start("fit")
        before = (seen or {}).get("audit")
        seen, new_version, text = poll(app_ctx, seen, version)
        return (
            seen,
            new_version if new_version is not None else no_update,
            text,
            html.Span(seen["note"], title=seen["note"]) if seen["note"] else no_update,  # one line in the header; all of it on hover
            seen["audit"] if seen.get("audit") != before else no_update,
        )
