"""The memory panel: what a clicked memory says, why it sits at its tier, and the
Promote, Demote and Expand buttons that change it; a long memory's passages
under the query (``passage_strip``). With a query and nothing open the panel
body stays empty and the result list (``result_list``, sent with the scene)
shows instead.

Every number on the panel comes from ``Memory.explain``, the same scoring
functions a search uses. Memory text goes into plain text nodes, never HTML.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from dash import Dash, Input, Output, Patch, State, html, no_update
from dash import ctx as dash_ctx

from lodviz.app import ids
from lodviz.app.callbacks.scoring import SCORING_ONLY, VIEW_CONTROLS, params_from_controls, view_request
from lodviz.app.callbacks.status import mark_seen
from lodviz.app.context import AppContext, app_actor
from lodviz.app.figure import TIER_COLOURS
from lodviz.app.page import AGENT_BUDGET, ALL_AGENTS, tier_badge
from lodviz.app.passage_strip import passage_block
from lodviz.app.view import ViewRequest, agent_result, received_tier
from lodviz.errors import LodvizError, MemoryNotFound
from lodviz.records import Conflict, Label, MemoryRecord
from lodviz.scoring import Placement, Tier
from lodviz.times import from_seconds

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def why_bar(placement: Placement) -> html.Div:
    """The score on a 0-1 bar split into the tiers' bands, with the floor marked."""
    bands = [
        (Tier.OUT, 0.0, placement.theta3),
        (Tier.HEADLINE, placement.theta3, placement.theta2),
        (Tier.SUMMARY, placement.theta2, placement.theta1),
        (Tier.FULL, placement.theta1, 1.0),
    ]
    segments = [
        html.Div(
            tier.name if hi - lo > 0.12 else "",
            className="band",
            style={"left": f"{lo * 100:.2f}%", "width": f"{(hi - lo) * 100:.2f}%", "background": TIER_COLOURS[tier]},
            title=f"{tier.name}: {lo:.2f} ≤ L < {hi:.2f}",
        )
        for tier, lo, hi in bands
    ]
    marker = html.Div(
        html.Span(f"L {placement.score:.3f}", className="marker-label"),
        className="marker",
        style={"left": f"{min(max(placement.score, 0), 1) * 100:.2f}%"},
    )
    children = [*segments, marker]
    if placement.floor > Tier.OUT:
        floor_at = {Tier.HEADLINE: placement.theta3, Tier.SUMMARY: placement.theta2, Tier.FULL: placement.theta1}[placement.floor]
        children.append(
            html.Div(html.Span(f"floor {placement.floor.name}", className="floor-label"), className="floor", style={"left": f"{floor_at * 100:.2f}%"})
        )
    return html.Div(children, className="why-bar")


def _meta(label: str, value: Any) -> html.Div:
    return html.Div([html.Span(label, className="meta-label"), html.Span(str(value), className="meta-value")], className="meta")


def metadata_rows(metadata: dict[str, Any], limit: int = 10) -> list[tuple[str, str]]:
    """The memory's metadata as the panel lists it: where it came from first (session, tool, file...), then the rest."""
    keys = [k for k in Label.SHOWN if k in metadata] + sorted(k for k in metadata if k not in Label.SHOWN)
    out = []
    for key in keys[:limit]:
        value = metadata[key]
        if value in (None, "", [], {}):
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out.append((key, text if len(text) <= 120 else text[:117] + "…"))
    return out


def conflict_block(
    record: MemoryRecord, conflicts: list[Conflict], headlines: dict[int, str], unseen: dict[int, str] | None = None
) -> list[Any]:
    """The memory's conflicts: what differs, the other memory, and the auditor's three answers.

    ``unseen``: partners the viewed agent cannot see, with why ("private to
    exec-digest"); the auditor still sees the conflict, since that memory is
    the one that may make the agent wrong.
    """
    if not conflicts:
        return []
    unseen = unseen or {}
    out: list[Any] = [html.Div("May contradict", className="section-title")]
    for c in conflicts:
        other = c.partner(record.id)
        newer = "newer" if other == c.memory_id else "older"
        note = [html.Div(f"not visible to this agent: {unseen[other]}", className="hint unseen")] if other in unseen else []
        head = html.Div(
            [html.B(f"#{other} ({newer}) "), html.Span(headlines.get(other, "")), html.Div(c.reason, className="hint"), *note],
            className="conflict-other",
        )
        if c.status == "open":
            actions = html.Div(
                [
                    html.Button("Both stand", id={"type": ids.RESOLVE, "a": record.id, "b": other, "superseded": 0}, className="btn small"),
                    html.Button(f"#{record.id} is superseded", id={"type": ids.RESOLVE, "a": record.id, "b": other, "superseded": record.id}, className="btn small"),
                    html.Button(f"#{other} is superseded", id={"type": ids.RESOLVE, "a": record.id, "b": other, "superseded": other}, className="btn small"),
                ],
                className="btn-row",
            )
        else:
            decided = f"#{c.superseded_id} superseded" if c.superseded_id else "both stand"
            actions = html.Div(f"Resolved: {decided}, by {c.resolved_by}" + (f" ({c.note})" if c.note else ""), className="hint")
        out.append(html.Div([head, actions], className="conflict"))
    return out


def live_part(record: MemoryRecord, placement: Placement, alpha: float, received: tuple[Tier, int] | None) -> html.Div:
    """What a slider changes in the panel: the tier, the bar, the numbers, the formula and the reasons.

    One container, the panel's first child, so that a slider move sends this part alone (``follow``).
    """
    s, d, score = placement.similarity, placement.decay, placement.score
    formula = f"L = α·S + (1−α)·D = {alpha:.2f} × {s:.3f} + {1 - alpha:.2f} × {d:.3f}"
    if placement.penalty:
        formula += f" − penalty {placement.penalty:.3f}"
    formula += f" = {score:.3f}"
    shown = received[0] if received is not None else placement.tier
    budget_note = [html.Div(
        f"Within its {received[1]:,}-token budget the agent receives it {received[0].name}: one search keeps what fits, "
        "and the scene shows it there.", className="reason budget-note", id=ids.PANEL_RECEIVED)] if received is not None else []
    return html.Div(
        [
            html.Div([tier_badge(shown), html.Span(f"#{record.id} · {record.agent_id} · {record.kind} · {record.visibility}", className="panel-id")],
                     className="panel-head"),
            html.H3(record.headline, className="panel-headline", id=ids.PANEL_HEADLINE),
            html.Div("Why this tier", className="section-title"),
            why_bar(placement),
            html.Div(
                [
                    html.Span([html.B("S "), html.Span(f"{s:.3f}", id=ids.PANEL_S)], className="num"),
                    html.Span([html.B("D "), html.Span(f"{d:.3f}", id=ids.PANEL_D)], className="num"),
                    html.Span([html.B("L "), html.Span(f"{score:.3f}", id=ids.PANEL_L)], className="num"),
                ],
                className="nums",
            ),
            html.Div(formula, className="formula"),
            html.Div(placement.reason, className="reason", id=ids.PANEL_REASON),
            *budget_note,
        ],
        className="panel-live",
    )


def panel(
    record: MemoryRecord,
    placement: Placement,
    alpha: float,
    has_query: bool,
    conflicts: list[Conflict] | None = None,
    headlines: dict[int, str] | None = None,
    passages: pd.DataFrame | None = None,
    query: str | None = None,
    unseen: dict[int, str] | None = None,
    received: tuple[Tier, int] | None = None,
) -> list[Any]:
    """The panel's content for one memory under the current view.

    ``passages`` (``Memory.passages``): a long memory's text is shown passage by
    passage under a strip of heat for ``query``, the ones the agent received marked.
    ``received``: (the tier the agent receives it at, the budget) when a budget
    gives it another tier than its score: the badge shows that tier, as the scene does.
    """
    strip, texts = passage_block(passages, len(record.text), query) if passages is not None and len(passages) else ([], [
        html.Div("Full text", className="section-title"),
        html.Div(record.text, className="full-text", id=ids.PANEL_FULL),
    ])
    return [
        live_part(record, placement, alpha, received),
        *strip,
        *conflict_block(record, conflicts or [], headlines or {}, unseen),
        html.Div("" if has_query else "No query: α is 0 here, so L is the decay D alone.", className="hint"),
        html.Div(
            [
                _meta("created", record.created_at.strftime("%Y-%m-%d %H:%M")),
                _meta("last retrieved", record.last_retrieved_at.strftime("%Y-%m-%d %H:%M") if record.last_retrieved_at else "never"),
                _meta("retrieved", f"{record.retrieval_count}×"),
                _meta("tier floor", floor_label(Tier(record.floor))),
                _meta("source", record.source or "—"),
                *[_meta(key, value) for key, value in metadata_rows(record.metadata)],
            ],
            className="meta-grid",
            id=ids.PANEL_META,
        ),
        html.Div("Summary", className="section-title"),
        html.P(record.summary, className="summary-text"),
        *texts,
    ]


def show(app_ctx: AppContext, memory_id: int | None, applied, agent, alpha, lam_log, thresholds, k_log, now_date, as_of=None,
         budget_mode=AGENT_BUDGET, received_ids: dict | None = None) -> tuple[Any, dict]:
    """The panel's body and its actions' style. ``received_ids`` is what the scene's search returned
    (``view.received_ids``), so that an open memory's tier costs no second search; without it the
    search is made here."""
    hidden = {"display": "none"}
    if memory_id is None:
        if (applied or {}).get("query", "").strip():
            return "", hidden  # the result list shows, drawn with the scene
        return html.Div("Click a memory in the scene to see why it sits where it sits.", className="empty nothing-open"), hidden
    try:
        request = view_request(app_ctx, applied, agent, params_from_controls(alpha, lam_log, thresholds, k_log), now_date, as_of, budget_mode)
        record, placement, received = placed(app_ctx, memory_id, request, received_ids)
        if request.moment is not None:  # the panel's usage numbers are those of the moment shown
            state = app_ctx.mem.columns(as_of=request.moment)
            rows = np.flatnonzero((state.ids == record.id) & ~state.forgotten)
            if not len(rows):
                return html.Div(f"#{record.id} did not exist yet at the moment shown.", className="empty"), hidden
            record = replace(
                record, retrieval_count=int(state.retrieval_count[rows[0]]), floor=int(state.floor[rows[0]]),
                last_retrieved_at=from_seconds(float(state.last_retrieved_at[rows[0]])),
            )
        # Every conflict this agent could be misled by: the other memory may be one it cannot see.
        conflicts = app_ctx.mem.conflicts(memory_id, status=None, agent_id=request.agent_id, either=True)
        headlines = app_ctx.mem.headlines([c.partner(record.id) for c in conflicts])
        unseen = unseen_partners(app_ctx, record, conflicts, request.agent_id)
        # In a replay, what that search delivered; otherwise the agent's latest use of the memory.
        passages = app_ctx.mem.passages(memory_id, query=request.query, agent_id=request.agent_id, event_id=request.replaying)
    except MemoryNotFound:
        return html.Div("That memory is not visible to this agent.", className="empty"), hidden
    except LodvizError as exc:
        return html.Div(str(exc), className="error"), hidden
    return (panel(record, placement, request.scoring_params.alpha, request.has_query, conflicts, headlines, passages, request.query,
                  unseen, received),
            {"display": "block"})


def placed(app_ctx: AppContext, memory_id: int, request: ViewRequest, received_ids: dict | None) -> tuple[MemoryRecord, Placement, Any]:
    """An open memory, where the controls place it, and (the tier, the budget) when a budget gives it another tier."""
    record = app_ctx.mem.get(memory_id, agent_id=request.agent_id)
    placement = app_ctx.mem.explain(
        memory_id, request.query, agent_id=request.agent_id, params=request.scoring_params, now=request.now, exclude=request.exclude,
        as_of=request.moment,
    )
    received = None
    if request.has_query and request.budget_tokens:  # what the scene shows: the tier it is received at
        if received_ids is not None and received_ids.get("budget") == request.budget_tokens:
            tier = received_tier(received_ids, record.id)
        else:
            tier = Tier(int(agent_result(app_ctx.mem, request).tiers_of(np.array([record.id]))[0]))
        received = (tier, request.budget_tokens) if tier != placement.tier else None
    return record, placement, received


def shown_id(memory_id: int | None, body: Any) -> int | None:
    """The memory whose panel ``body`` is (None for a message in its place)."""
    return memory_id if isinstance(body, list) else None


def follow(app_ctx: AppContext, memory_id: int | None, shown: int | None, applied, agent, alpha, lam_log, thresholds, k_log, now_date,
           as_of=None, budget_mode=AGENT_BUDGET, received_ids: dict | None = None) -> tuple[Any, Any, Any]:
    """An open memory's panel after a slider move, in the scene's answer: (body, style, the memory it shows).

    When the page already shows this memory's panel (``shown``) only its live
    part goes, as a Patch: a slider changes nothing else in it, and the
    whole panel redrawn was most of what a move with a memory open cost the
    page beyond one with nothing open. Otherwise the whole panel, as ``show``.
    """
    if memory_id is None:
        return no_update, no_update, no_update
    if shown == memory_id:
        try:
            request = view_request(app_ctx, applied, agent, params_from_controls(alpha, lam_log, thresholds, k_log), now_date, as_of, budget_mode)
            record, placement, received = placed(app_ctx, memory_id, request, received_ids)
        except LodvizError:
            pass  # the whole panel says what went wrong
        else:
            live = Patch()
            live[0] = live_part(record, placement, request.scoring_params.alpha, received)
            return live, no_update, no_update
    body, style = show(app_ctx, memory_id, applied, agent, alpha, lam_log, thresholds, k_log, now_date, as_of, budget_mode, received_ids)
    return body, style, shown_id(memory_id, body)


def unseen_partners(app_ctx: AppContext, record: MemoryRecord, conflicts: list[Conflict], agent_id: str | None) -> dict[int, str]:
    """The conflicts' other memories that ``agent_id`` cannot see, each with whose it is."""
    if agent_id is None:
        return {}
    out = {}
    for c in conflicts:
        other = c.partner(record.id)
        try:
            app_ctx.mem.get(other, agent_id=agent_id)
        except MemoryNotFound:
            owner = app_ctx.mem.get(other)
            out[other] = f"private to {owner.agent_id}"
    return out


def floor_label(tier: Tier) -> str:
    """A tier floor as the panel shows it: by the name the audit log and the CLI use (OUT: no floor at all)."""
    return tier.name


def act(app_ctx: AppContext, action: str, memory_id: int | None, reason: str | None, request: ViewRequest | None = None) -> str:
    """Promote, demote or expand one memory from the app; returns the message to show.

    Raises ``AccessDenied`` when the request's identity may not steer.

    A promote lifts the memory one tier above what the viewed agent was
    shown (its latest result holding the memory, after its budget), or, with
    none on record or no agent viewed, above where the current view shows it:
    the service's one rule (``Floors.current_tier``).
    """
    app_ctx.require_steer(action)  # AccessDenied: the server answers 403, nothing is written
    if memory_id is None:
        return "Select a memory first."
    mem = app_ctx.mem
    reason = (reason or "").strip() or None
    try:
        if action in ("promote", "demote"):
            seen = request if action == "promote" else None  # promote: one tier above where the view shows it
            change = mem.move_floor(
                memory_id,
                +1 if action == "promote" else -1,
                reason=reason,
                actor=app_actor(),
                agent_id=seen.agent_id if seen is not None else None,
                query=(seen.query or "") if seen is not None else None,
                params=seen.scoring_params if seen is not None else None,
                now=seen.now if seen is not None else None,
            )
            verb = "Promoted" if action == "promote" else "Demoted"
            return f"{verb} #{memory_id}: tier floor {floor_label(change.before)} → {floor_label(change.after)}."
        record = mem.expand(memory_id, actor=app_actor())
        return f"Expanded #{memory_id}: counted as retrieval {record.retrieval_count}, last used now."
    except LodvizError as exc:
        return str(exc)


def open_memory(app_ctx: AppContext, text: str | None, agent: str | None) -> tuple[Any, str]:
    """(the id to select, a line for the sidebar) for "#id" or words from a memory's text."""
    text = (text or "").strip()
    if not text:
        return no_update, ""
    who = None if agent in (None, ALL_AGENTS) else agent
    number = text.lstrip("#")
    try:
        if number.isdigit():
            record = app_ctx.mem.get(int(number), agent_id=who)
            return record.id, f"#{record.id}: {record.headline}"
        found = app_ctx.mem.find(text, agent_id=who, limit=5)
    except LodvizError as exc:
        return no_update, str(exc)
    if not found:
        return no_update, "No memory holds all of those words" + (f" for {who}." if who else ".")
    more = f" ({len(found)} match; the newest is open)" if len(found) > 1 else ""
    return found[0].id, f"#{found[0].id}: {found[0].headline}{more}"


def register(app: Dash, app_ctx: AppContext) -> None:
    # A click in the scene selects in the browser (assets/picking.js: the point
    # on or near the pointer), so there is no clickData callback here.

    @app.callback(Output(ids.SELECTED_ID, "data", allow_duplicate=True), Input(ids.PANEL_CLOSE, "n_clicks"), prevent_initial_call=True)
    def _close(_n):
        return None

    @app.callback(
        Output(ids.SELECTED_ID, "data", allow_duplicate=True),
        Output(ids.OPEN_MEMORY_STATUS, "children"),
        Input(ids.OPEN_MEMORY, "n_submit"),
        State(ids.OPEN_MEMORY, "value"),
        State(ids.AGENT, "value"),
        prevent_initial_call=True,
    )
    def _open(_n, text, agent):
        return open_memory(app_ctx, text, agent)

    # In the browser: a slider move's panel comes with the scene's answer (``scoring.register`` draws it for
    # an open memory; with nothing open it does not change), so asking the server here too was one more
    # round trip per move, which the page waited for before it settled.
    app.clientside_callback(
        f"""
        function(memoryId, ...rest) {{
            const asked = rest[rest.length - 1] || 0;
            const scoringOnly = {json.dumps(sorted(SCORING_ONLY | {ids.RECEIVED}))};
            const fired = (window.dash_clientside.callback_context.triggered || []).map(t => t.prop_id.split('.')[0]);
            if (fired.length && fired.every(id => scoringOnly.includes(id))) return window.dash_clientside.no_update;
            return asked + 1;
        }}
        """,
        Output(ids.PANEL_ASK, "data"),
        Input(ids.SELECTED_ID, "data"),
        Input(ids.DATA_VERSION, "data"),
        *[Input(component, prop) for component, prop in VIEW_CONTROLS],
        # An input, not a state: Dash holds this callback until the scene's answer is in, and fires it once.
        Input(ids.RECEIVED, "data"),
        State(ids.PANEL_ASK, "data"),
    )

    @app.callback(
        Output(ids.PANEL_BODY, "children"),
        Output(ids.PANEL_ACTIONS, "style"),
        Output(ids.PANEL_SHOWS, "data"),
        Input(ids.PANEL_ASK, "data"),
        State(ids.SELECTED_ID, "data"),
        *[State(component, prop) for component, prop in VIEW_CONTROLS],
        State(ids.RECEIVED, "data"),
    )
    def _show(_ask, memory_id, applied, agent, alpha, lam_log, thresholds, k_log, now_date, as_of, budget_mode, received):
        body, style = show(app_ctx, memory_id, applied, agent, alpha, lam_log, thresholds, k_log, now_date, as_of, budget_mode, received)
        return body, style, shown_id(memory_id, body)

    @app.callback(
        Output(ids.ACTION_STATUS, "children"),
        Output(ids.DATA_VERSION, "data", allow_duplicate=True),
        Output(ids.REASON, "value"),
        Output(ids.SEEN, "data", allow_duplicate=True),
        Input(ids.PROMOTE, "n_clicks"),
        Input(ids.DEMOTE, "n_clicks"),
        Input(ids.EXPAND, "n_clicks"),
        State(ids.SELECTED_ID, "data"),
        State(ids.REASON, "value"),
        State(ids.DATA_VERSION, "data"),
        State(ids.SEEN, "data"),
        *[State(component, prop) for component, prop in VIEW_CONTROLS],
        prevent_initial_call=True,
    )
    def _act(_p, _d, _e, memory_id, reason, version, seen, applied, agent, alpha, lam_log, thresholds, k_log, now_date, _as_of, _budget):
        action = dash_ctx.triggered_id if dash_ctx.triggered_id in (ids.PROMOTE, ids.DEMOTE) else ids.EXPAND
        try:
            request = view_request(app_ctx, applied, agent, params_from_controls(alpha, lam_log, thresholds, k_log), now_date)
        except (LodvizError, TypeError, ValueError):  # controls a page never sends: no view to promote above
            request = None
        message = act(app_ctx, action, memory_id, reason, request)
        # This redraw shows the change, so the poll need not redraw for it again.
        return message, (version or 0) + 1, "", mark_seen(app_ctx, seen)

    @app.callback(Output(ids.ACTION_STATUS, "children", allow_duplicate=True), Input(ids.SELECTED_ID, "data"), prevent_initial_call=True)
    def _clear(_memory_id):
        return ""
