"""Tuning on evidence: sweep alpha and lambda over an agent's golden queries, see, save.

``Memory.tune`` asks every golden query again under each setting of the grid
within a token budget (one audit line for the whole sweep). The heat map shows
the share of needed memories that comes back readable; the curve, both shares
along alpha at the suggested lambda. "Save" writes the suggestion as the
agent's profile, audited.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from dash import Dash, Input, Output, State, no_update

from lodviz.app import ids
from lodviz.app.context import AppContext, app_actor
from lodviz.app.figure import BACKGROUND, GRID, TEXT
from lodviz.errors import LodvizError
from lodviz.params import Params
from lodviz.tuning import Sweep


def _style(fig: go.Figure, title: str) -> go.Figure:
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        paper_bgcolor=BACKGROUND,
        plot_bgcolor=BACKGROUND,
        font={"color": TEXT, "family": "Inter, system-ui, sans-serif"},
        margin={"l": 60, "r": 20, "t": 44, "b": 50},
        height=360,
    )
    fig.update_xaxes(gridcolor=GRID, zerolinecolor=GRID)
    fig.update_yaxes(gridcolor=GRID, zerolinecolor=GRID)
    return fig


def heatmap(result: Sweep) -> go.Figure:
    frame = result.frame()
    table = frame.pivot(index="alpha", columns="lam", values="recall_readable")
    best = result.best()  # on the grid; the suggestion may be to keep the current profile, off it
    label = "best (profile kept)" if result.suggest().get("keep") else "suggested"
    fig = go.Figure(
        go.Heatmap(
            z=table.values,
            x=[f"{lam:g}" for lam in table.columns],
            y=[f"{a:.1f}" for a in table.index],
            colorscale="Viridis",
            zmin=0,
            zmax=1,
            colorbar={"title": "readable"},
            hovertemplate="α %{y}, λ %{x}: %{z:.2f} of the needed memories readable<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[f"{best['lam']:g}"], y=[f"{best['alpha']:.1f}"], mode="markers+text", text=[label], textposition="top center",
            marker={"symbol": "star", "size": 16, "color": "#ffcf5c"}, textfont={"color": "#ffcf5c"}, hoverinfo="skip", showlegend=False,
        )
    )
    fig.update_xaxes(title="λ (decay per day)", type="category")
    fig.update_yaxes(title="α (meaning vs recency)", type="category")
    return _style(fig, f"Readable recall within {result.budget:,} tokens ({result.queries} golden queries)")


def curve(result: Sweep) -> go.Figure:
    best = result.best()
    frame = result.frame()
    line = frame[frame["lam"] == best["lam"]].sort_values("alpha")
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=line["alpha"], y=line["recall_any"], name="any tier", mode="lines+markers", line={"color": "#4aa3ff"}))
    fig.add_trace(go.Scatter(x=line["alpha"], y=line["recall_readable"], name="FULL or SUMMARY", mode="lines+markers", line={"color": "#3ddc97"}))
    fig.add_vline(x=result.base.alpha, line_dash="dot", line_color="#c9d3e6", annotation_text="current α")
    fig.update_xaxes(title="α")
    fig.update_yaxes(title="share of needed memories", range=[0, 1.02])
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    return _style(fig, f"Along α at λ {best['lam']:g}")


def run(app_ctx: AppContext, agent: str | None, budget: Any) -> tuple[Any, Any, str, dict | None]:
    app_ctx.require_steer("tune on golden queries")  # a sweep is audited
    try:
        result = app_ctx.mem.tune(agent or None, budget_tokens=int(budget or 2000), actor=app_actor())
    except (LodvizError, ValueError) as exc:
        return no_update, no_update, str(exc), None
    best, current = result.suggest(), result.current or {}
    text = (
        f"Current α {result.base.alpha}, λ {result.base.lam}: {current.get('recall_readable', 0):.0%} readable, "
        f"{current.get('recall_any', 0):.0%} at any tier. Suggested α {best['alpha']}, λ {best['lam']:g}: "
        f"{best['recall_readable']:.0%} readable, {best['recall_any']:.0%} at any tier. {result.verdict()}"
    )
    suggestion = {"agent": agent, **result.suggested_params().to_dict()}
    return heatmap(result), curve(result), text, suggestion


def save(app_ctx: AppContext, suggestion: dict | None) -> str:
    app_ctx.require_steer("save a tuned profile")
    if not suggestion or not suggestion.get("agent"):
        return "Run a sweep for one agent first: a profile belongs to one agent."
    agent = suggestion.pop("agent")
    try:
        params = app_ctx.mem.set_profile(agent, Params.from_dict(suggestion), actor=app_actor(), reason="tuned on golden queries in the landscape")
    except LodvizError as exc:
        return str(exc)
    return f"Saved {agent}'s profile: α {params.alpha}, λ {params.lam} (audited)."


def golden_rows(app_ctx: AppContext, agent: str | None) -> list[dict[str, Any]]:
    return [
        {"id": g.id, "agent": g.agent_id or "", "query": g.query, "needs": ", ".join(f"#{i}" for i in g.needs), "note": g.note or ""}
        for g in app_ctx.mem.golden(agent or None)
    ]


def register(app: Dash, app_ctx: AppContext) -> None:
    @app.callback(
        Output(ids.TUNE_HEATMAP, "figure"),
        Output(ids.TUNE_CURVE, "figure"),
        Output(ids.TUNE_STATUS, "children"),
        Output(ids.TUNE_SUGGESTION, "data"),
        Input(ids.TUNE_RUN, "n_clicks"),
        State(ids.TUNE_AGENT, "value"),
        State(ids.TUNE_BUDGET, "value"),
        prevent_initial_call=True,
    )
    def _run(_n, agent, budget):
        return run(app_ctx, agent, budget)

    @app.callback(
        Output(ids.TUNE_SAVE_STATUS, "children"),
        Input(ids.TUNE_SAVE, "n_clicks"),
        State(ids.TUNE_SUGGESTION, "data"),
        prevent_initial_call=True,
    )
    def _save(_n, suggestion):
        return save(app_ctx, dict(suggestion) if suggestion else None)

    @app.callback(Output(ids.GOLDEN_TABLE, "data"), Input(ids.TABS, "value"), Input(ids.TUNE_AGENT, "value"))
    def _golden(tab, agent):
        return golden_rows(app_ctx, agent) if tab == "evidence" else no_update


__all__ = ["run", "save", "heatmap", "curve", "golden_rows"]
