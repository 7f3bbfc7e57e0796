"""Rescoring the scene: every control move recomputes the whole store and repaints.

A move of α, λ, the thresholds, "now", the colour mode or the terrain toggle
sends a ``Patch`` (heights, colours, terrain, the camera's lines); a new query,
agent, k or a change to the store sends a new figure.
"""

from __future__ import annotations

from typing import Any

from dash import Dash, Input, Output, html, no_update
from dash import ctx as dash_ctx

from lodviz.app import ids
from lodviz.app.context import AppContext, app_actor
from lodviz.app.figure import build_figure, colours, patch_figure
from lodviz.app.page import ALL_AGENTS, parse_date
from lodviz.app.view import View, ViewRequest, compute_view
from lodviz.errors import LodvizError
from lodviz.params import Params

#: The controls that define a view, in the order the view callbacks take them.
VIEW_CONTROLS = [
    (ids.APPLIED, "data"),
    (ids.AGENT, "value"),
    (ids.ALPHA, "value"),
    (ids.LAMBDA, "value"),
    (ids.THRESHOLDS, "value"),
    (ids.K, "value"),
    (ids.NOW, "date"),
]

#: Inputs whose change leaves the drawn points the same, so a Patch suffices.
PATCHABLE = {ids.ALPHA, ids.LAMBDA, ids.THRESHOLDS, ids.NOW, ids.COLOR_BY, ids.TERRAIN}


def params_from_controls(alpha: float, lam_log: float, thresholds: list[float], k_log: float) -> Params:
    theta3, theta2, theta1 = sorted(float(t) for t in thresholds)
    return Params(
        alpha=round(float(alpha), 4),
        lam=round(10 ** float(lam_log), 6),
        theta1=round(theta1, 4),
        theta2=round(theta2, 4),
        theta3=round(theta3, 4),
        k=int(round(10 ** float(k_log))),
    )


def split_terms(text: str | None) -> tuple[str, ...]:
    return tuple(t.strip() for t in (text or "").split(",") if t.strip())


def view_request(app_ctx: AppContext, applied: dict | None, agent: str | None, params: Params, now_date: str | None) -> ViewRequest:
    applied = applied or {}
    return ViewRequest(
        params=params,
        now=parse_date(now_date, app_ctx.mem.now()),
        query=(applied.get("query") or "").strip() or None,
        exclude=split_terms(applied.get("exclude")),
        agent_id=None if agent in (None, ALL_AGENTS) else agent,
    )


def counts_children(view: View) -> list[Any]:
    c = view.counts
    shown = sum(c[name] for name in ("FULL", "SUMMARY", "HEADLINE"))
    return [
        html.Span([html.B(f"{c['FULL']:,}"), " full"], className="count full"),
        html.Span([html.B(f"{c['SUMMARY']:,}"), " summaries"], className="count summary"),
        html.Span([html.B(f"{c['HEADLINE']:,}"), " headlines"], className="count headline"),
        html.Span([html.B(f"{c['OUT']:,}"), " out"], className="count out"),
        html.Span([html.B(f"~{view.tokens:,}"), f" tokens for {shown:,} memories"], className="count tokens", id=ids.TOKEN_COUNT),
    ]


def scene_note(view: View) -> list[Any]:
    notes = []
    req = view.request
    if req.has_query:
        text = f"Camera at “{req.query}”: the {min(view.land.params.k, view.total):,} nearest memories are candidates"
        if req.exclude:
            text += f"; excluding {', '.join(req.exclude)}"
        notes.append(text + ".")
    else:
        notes.append("No query: the camera is off, so S = 0 and memories sit by recency of use alone (L = D).")
    if view.sampled:
        what = "every query candidate plus a fixed sample of the rest" if req.has_query else "a fixed sample"
        notes.append(
            f"Drawing {len(view.drawn):,} of {view.total:,} memories: {what}. "
            "Counts, tokens and the terrain cover all of them."
        )
    waiting = int(view.placeholder.sum())
    if waiting:
        notes.append(f"{waiting:,} new memories sit at placeholder positions until the map places them.")
    return [html.Div(n) for n in notes]


def legend_children(view: View, mode: str) -> list[Any]:
    entries = colours(view, mode, view.drawn[:0])["legend"]
    out: list[Any] = [html.Span([html.I(style={"background": colour}), label], className="legend-entry") for label, colour in entries]
    if view.recent:
        who = sorted({use.who for use in view.recent.values()})
        label = f"{len(view.recent):,} used in the last hour by {', '.join(who[:3])}" + (f" and {len(who) - 3} more" if len(who) > 3 else "")
        out.append(html.Span([html.I(className="ring"), label], className="legend-entry recent", id="legend-recent"))
    return out


def apply_query(triggered: set[str], query: str | None, exclude: str | None) -> Any:
    """The query the camera uses: set by Enter or Search, cleared by Clear or an emptied box.

    Typing alone does not move the camera (each query costs an embedding).
    """
    if "clear.n_clicks" in triggered:
        return {"query": "", "exclude": ""}
    if triggered & {"search.n_clicks", "exclude.n_submit"}:
        return {"query": (query or "").strip(), "exclude": exclude or ""}
    if "query.value" in triggered and not (query or "").strip():
        return {"query": "", "exclude": exclude or ""}
    return no_update


def render(
    app_ctx: AppContext,
    applied: dict | None,
    agent: str | None,
    alpha: float,
    lam_log: float,
    thresholds: list[float],
    k_log: float,
    now_date: str | None,
    color: str,
    terrain: list[str] | None,
    triggered: set[str] | None = None,
) -> tuple[Any, Any, Any, Any]:
    """(figure or Patch, counts, note, legend) for the current controls."""
    try:
        params = params_from_controls(alpha, lam_log, thresholds, k_log)
        request = view_request(app_ctx, applied, agent, params, now_date)
        view = compute_view(app_ctx.mem, request, app_ctx.draw_limit)
    except LodvizError as exc:
        return no_update, no_update, html.Div(str(exc), className="error"), no_update
    if request.has_query and not app_ctx.read_only and (not triggered or triggered & {ids.APPLIED, ids.AGENT}):
        # A query the person asked (not a redraw): on record, as every search is.
        app_ctx.mem.record_view(view.land, agent_id=request.agent_id, actor=app_actor())
    show_terrain = bool(terrain)
    if triggered and triggered <= PATCHABLE:
        figure = patch_figure(view, color_mode=color, show_terrain=show_terrain)
    else:
        headlines = app_ctx.mem.headlines(view.land.state.ids[view.drawn].tolist())
        figure = build_figure(view, headlines, color_mode=color, show_terrain=show_terrain)
    return figure, counts_children(view), scene_note(view), legend_children(view, color)


def register(app: Dash, app_ctx: AppContext) -> None:
    @app.callback(
        Output(ids.SCENE, "figure"),
        Output(ids.COUNTS, "children"),
        Output(ids.SCENE_NOTE, "children"),
        Output(ids.LEGEND_COLOURS, "children"),
        *[Input(component, prop) for component, prop in VIEW_CONTROLS],
        Input(ids.COLOR_BY, "value"),
        Input(ids.TERRAIN, "value"),
        Input(ids.DATA_VERSION, "data"),
    )
    def _render(applied, agent, alpha, lam_log, thresholds, k_log, now_date, color, terrain, _version):
        triggered = {t["prop_id"].split(".")[0] for t in dash_ctx.triggered} if dash_ctx.triggered_id else None
        return render(app_ctx, applied, agent, alpha, lam_log, thresholds, k_log, now_date, color, terrain, triggered)

    @app.callback(
        Output(ids.APPLIED, "data"),
        Input(ids.SEARCH, "n_clicks"),  # Enter in the query box clicks it (assets/keys.js)
        Input(ids.EXCLUDE, "n_submit"),
        Input(ids.CLEAR, "n_clicks"),
        Input(ids.QUERY, "value"),
        Input(ids.EXCLUDE, "value"),
        prevent_initial_call=True,
    )
    def _apply_query(_search, _submit_x, _clear, query, exclude):
        return apply_query({t["prop_id"] for t in dash_ctx.triggered}, query, exclude)

    @app.callback(
        Output(ids.QUERY, "value"),
        Output(ids.EXCLUDE, "value"),
        Input(ids.CLEAR, "n_clicks"),
        prevent_initial_call=True,
    )
    def _clear_boxes(_n):
        return "", ""

    # Readouts follow the sliders in the browser, with no round trip.
    app.clientside_callback(
        """
        function(alpha, lamLog, th, kLog) {
            const lam = Math.pow(10, lamLog);
            const t = [...th].sort((a, b) => a - b);
            return [
                alpha.toFixed(2),
                lam < 0.01 ? lam.toFixed(4) : lam.toFixed(3),
                `${t[0].toFixed(2)} · ${t[1].toFixed(2)} · ${t[2].toFixed(2)}`,
                String(Math.round(Math.pow(10, kLog)))
            ];
        }
        """,
        Output(ids.ALPHA_READOUT, "children"),
        Output(ids.LAMBDA_READOUT, "children"),
        Output(ids.THRESHOLDS_READOUT, "children"),
        Output(ids.K_READOUT, "children"),
        Input(ids.ALPHA, "value"),
        Input(ids.LAMBDA, "value"),
        Input(ids.THRESHOLDS, "value"),
        Input(ids.K, "value"),
    )
