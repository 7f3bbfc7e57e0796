"""The audit view: recent events with filters, and the current view exported as CSV."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from typing import Any

from dash import Dash, Input, Output, State, dcc

from lodviz.app import ids
from lodviz.app.context import AppContext
from lodviz.audit import summarise

AUDIT_LIMIT = 500


def rows(app_ctx: AppContext, agent: str | None, actions: list[str] | None, start: str | None, end: str | None) -> list[dict[str, Any]]:
    since = datetime.fromisoformat(start[:10]).replace(tzinfo=UTC) if start else None
    until = datetime.fromisoformat(end[:10]).replace(tzinfo=UTC) + timedelta(days=1) if end else None
    events = app_ctx.mem.audit(agent_id=agent or None, actions=actions or None, since=since, until=until, limit=AUDIT_LIMIT)
    return [
        {
            "id": e.id,
            "at": e.at.strftime("%Y-%m-%d %H:%M:%S") if e.at else "",
            "action": e.action,
            "actor": e.actor,
            "agent_id": e.agent_id or "",
            "memory_id": e.memory_id if e.memory_id is not None else "",
            "query": e.query or "",
            "summary": summarise(e),
        }
        for e in events
    ]


def to_csv(table: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["id", "at", "action", "actor", "agent_id", "memory_id", "query", "summary"])
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
        return rows(app_ctx, agent, actions, start, end)

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
