"""The audit view: recent events with filters, and the current view exported as CSV."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from typing import Any

from dash import Dash, Input, Output, State, dcc

from lodviz.app import ids
from lodviz.app.context import AppContext
from lodviz.audit import RETRIEVING, summarise

AUDIT_LIMIT = 500


def rows(
    app_ctx: AppContext, agent: str | None, actions: list[str] | None, start: str | None, end: str | None, *, grouped: bool = False
) -> list[dict[str, Any]]:
    """The audit events that match, newest first; ``grouped`` folds the batches of one import into one row."""
    since = datetime.fromisoformat(start[:10]).replace(tzinfo=UTC) if start else None
    until = datetime.fromisoformat(end[:10]).replace(tzinfo=UTC) + timedelta(days=1) if end else None
    events = app_ctx.mem.audit(agent_id=agent or None, actions=actions or None, since=since, until=until, limit=AUDIT_LIMIT)
    table = [
        {
            "id": e.id,
            "at": e.at.strftime("%Y-%m-%d %H:%M:%S") if e.at else "",
            "action": e.action,
            "actor": e.actor,
            "agent_id": e.agent_id or "",
            "memory_id": e.memory_id if e.memory_id is not None else "",
            "query": e.query or "",
            "summary": summarise(e),
            # Searches open in the landscape as they were (callbacks/history.py).
            "replay": "▶ replay" if e.action in RETRIEVING else "",
            "_count": int(e.details.get("count", 0) or 0) if e.action == "write" else 0,
        }
        for e in events
    ]
    out = _group_imports(table) if grouped else table
    for row in out:
        row.pop("_count", None)
    return out


def _group_imports(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive bulk writes (more than one memory each) by the same actor for the same
    agent are one import: one row that says how many memories in how many batches."""
    out: list[dict[str, Any]] = []
    batches = 0
    for row in table:
        last = out[-1] if out else None
        bulk = row["action"] == "write" and row["_count"] > 1
        if bulk and last is not None and last["action"] == "write" and last["_count"] > 1 and (last["actor"], last["agent_id"]) == (row["actor"], row["agent_id"]):
            batches += 1
            last["_count"] += row["_count"]
            last["summary"] = f"{last['_count']:,} memories written in {batches} batches (an import, since {row['at']})"
            continue
        batches = 1
        out.append(dict(row))
    return out


#: Opens a CSV download: without it a spreadsheet reads UTF-8 as its local code page ("â‚¬" for "€", "Î±" for α).
BOM = "\ufeff"


def to_csv(table: list[dict[str, Any]]) -> str:
    """The audit rows as the CSV the app downloads, with a byte-order mark for spreadsheets."""
    out = io.StringIO()
    out.write(BOM)
    writer = csv.DictWriter(out, fieldnames=["id", "at", "action", "actor", "agent_id", "memory_id", "query", "summary"], extrasaction="ignore")
    writer.writeheader()
    writer.writerows(table)
    return out.getvalue()


def register(app: Dash, app_ctx: AppContext) -> None:
    @app.callback(
        Output(ids.AUDIT_TABLE, "data"),
        Input(ids.TABS, "value"),
        Input(ids.AUDIT_AGENT, "value"),
        Input(ids.AUDIT_ACTIONS, "value"),
        Input(ids.AUDIT_RANGE, "start_date"),
        Input(ids.AUDIT_RANGE, "end_date"),
        Input(ids.DATA_VERSION, "data"),
        Input(ids.AUDIT_VERSION, "data"),
    )
    def _rows(tab, agent, actions, start, end, _version, _audit_version):
        if tab != "audit":
            return []
        return rows(app_ctx, agent, actions, start, end, grouped=True)

    @app.callback(
        Output(ids.AUDIT_DOWNLOAD, "data"),
        Input(ids.AUDIT_EXPORT, "n_clicks"),
        State(ids.AUDIT_AGENT, "value"),
        State(ids.AUDIT_ACTIONS, "value"),
        State(ids.AUDIT_RANGE, "start_date"),
        State(ids.AUDIT_RANGE, "end_date"),
        prevent_initial_call=True,
    )
    def _export(_n, agent, actions, start, end):
        return dcc.send_string(to_csv(rows(app_ctx, agent, actions, start, end)), "lodviz-audit.csv")
