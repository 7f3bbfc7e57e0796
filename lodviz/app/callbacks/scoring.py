"""Rescoring the scene: every control move recomputes the whole store and repaints.

A move of α, λ, the thresholds, "now", the colour mode, the terrain toggle or
the reference settings sends a ``Patch`` (heights, colours, terrain, the
camera's lines, the changed-tier marks); a new query, agent, k, moment, filter
or a change to the store sends a new figure. The same pass lists what changed
tier against the reference settings, so the list and the marks always agree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from dash import Dash, Input, Output, State, html, no_update
from dash import ctx as dash_ctx
from plotly.io.json import to_json_plotly

from lodviz.app import ids
from lodviz.app.change_list import CHANGE_LIST_LIMIT, change_lists
from lodviz.app.context import AppContext, app_actor
from lodviz.app.figure import CHANGE_COLOURS, CHANGE_WORDS, build_figure, colours, patch_figure
from lodviz.app.page import AGENT_BUDGET, ALL_AGENTS, K_RANGE, LAMBDA_RANGE, WHOLE_LANDSCAPE, _log, parse_date
from lodviz.app.result_list import result_list
from lodviz.app.view import SceneFilter, View, ViewRequest, compute_view, received_ids
from lodviz.changes import KINDS
from lodviz.errors import LodvizError
from lodviz.history import Moment
from lodviz.ingest.inputs import parse_time
from lodviz.params import Params
from lodviz.scoring import Tier

#: The controls that define a view, in the order the view callbacks take them.
VIEW_CONTROLS = [
    (ids.APPLIED, "data"),
    (ids.AGENT, "value"),
    (ids.ALPHA, "value"),
    (ids.LAMBDA, "value"),
    (ids.THRESHOLDS, "value"),
    (ids.K, "value"),
    (ids.NOW, "date"),
    (ids.AS_OF, "data"),
    (ids.BUDGET_MODE, "value"),
]

#: The scene's filters, in the order the render callback takes them.
FILTER_CONTROLS = [
    (ids.FILTER_TEXT, "value"),
    (ids.FILTER_KIND, "value"),
    (ids.FILTER_OWNER, "value"),
    (ids.FILTER_DATES, "start_date"),
    (ids.FILTER_DATES, "end_date"),
    (ids.FILTER_TIERS, "value"),
]

#: Controls that change scores and tiers only: the panel of an open memory follows them in the scene's own
#: answer (one request a move), and with nothing open the panel does not depend on them.
SCORING_ONLY = {ids.ALPHA, ids.LAMBDA, ids.THRESHOLDS, ids.K, ids.NOW, ids.BUDGET_MODE}
#: Inputs whose change leaves the drawn points the same, so a Patch suffices.
PATCHABLE = {ids.ALPHA, ids.LAMBDA, ids.THRESHOLDS, ids.NOW, ids.COLOR_BY, ids.TERRAIN, ids.REFERENCE, ids.BUDGET_MODE}


def slider_values(params: Params) -> tuple[float, float, list[float], float]:
    """What the sliders show for ``params`` (λ and k on log scales)."""
    return (
        params.alpha,
        _log(params.lam, LAMBDA_RANGE[0]),
        [params.theta3, params.theta2, params.theta1],
        _log(params.k, K_RANGE[0]),
    )


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


def moment_of(as_of: dict | None) -> tuple[Moment | None, datetime | None]:
    """(the moment, its "now") an ``AS_OF`` store names: a replayed search, a day of the time slider, or neither."""
    if not as_of:
        return None, None
    if as_of.get("event") is not None:
        now = parse_time(as_of.get("now"), "now")
        return Moment(before_event=int(as_of["event"])), now
    at = parse_time(as_of.get("at"), "as of")
    return (Moment(at=at), at) if at is not None else (None, None)


def scene_filter(text: str | None, kinds: list[str] | None, owners: list[str] | None, start: str | None, end: str | None,
                 tiers: list[str] | None) -> SceneFilter:
    day = timedelta(days=1)
    return SceneFilter(
        text=(text or "").strip(),
        kinds=tuple(kinds or ()),
        owners=tuple(owners or ()),
        start=datetime.fromisoformat(start[:10]).replace(tzinfo=UTC) if start else None,
        end=datetime.fromisoformat(end[:10]).replace(tzinfo=UTC) + day if end else None,
        tiers=tuple(int(Tier.parse(t)) for t in tiers or ()),
    )


def view_request(
    app_ctx: AppContext, applied: dict | None, agent: str | None, params: Params, now_date: str | None, as_of: dict | None = None,
    budget_mode: str | None = AGENT_BUDGET, *, reference: dict | None = None, filters: SceneFilter | None = None,
) -> ViewRequest:
    """What the controls ask for. The budget: a replay's own (what that search fitted in); else, unless the
    page shows the whole landscape, what one search of the viewed agent returns (its profile's budget)."""
    applied = applied or {}
    agent_id = None if agent in (None, ALL_AGENTS) else agent
    if (as_of or {}).get("event") is not None:
        budget = (as_of or {}).get("budget")
    else:
        budget = None if budget_mode == WHOLE_LANDSCAPE else app_ctx.mem.profile(agent_id).default_budget
    moment, moment_now = moment_of(as_of)
    recorded = (as_of or {}).get("params")
    if recorded:
        # Sliders hold values to a few decimals; while they sit where the replay put them, the
        # replay scores with the search's exact settings.
        exact = Params.from_dict(recorded)
        if params == params_from_controls(*slider_values(exact)):
            params = exact
    compared = Params.from_dict(reference["params"]) if reference and reference.get("params") else None
    if compared is not None and params_from_controls(*slider_values(compared)) == params_from_controls(*slider_values(params)):
        compared = params  # settings the sliders cannot tell apart are the same settings: nothing changed
    return ViewRequest(
        params=params,
        now=moment_now or parse_date(now_date, app_ctx.mem.now()),
        query=(applied.get("query") or "").strip() or None,
        exclude=split_terms(applied.get("exclude")),
        agent_id=agent_id,
        moment=moment,
        scene_filter=filters or SceneFilter(),
        reference=compared,
        budget_tokens=budget,
    )


def counts_children(view: View) -> list[Any]:
    """The header's line: the tiers and the tokens of what the agent receives (the result list's numbers)."""
    c = view.counts
    shown = sum(c[name] for name in ("FULL", "SUMMARY", "HEADLINE"))
    budget = view.request.budget_tokens
    if view.result is None:  # no query, no search: the tiers recency alone gives, and what they would cost
        tokens = html.Span([html.B(f"~{view.tokens:,}"), f" tokens if all {shown:,} were returned (no query)"],
                           className="count tokens", id=ids.TOKEN_COUNT)
    else:
        within = f" of {budget:,} tokens to read" if budget else " tokens to read, no budget"
        tokens = html.Span([html.B(f"{view.tokens:,}"), within],
                           className="count tokens", id=ids.TOKEN_COUNT,
                           title="Counted in the store's tokenizer on the exact text the agent receives for this one query.")
    return [
        html.Span([html.B(f"{c['FULL']:,}"), " full"], className="count full"),
        html.Span([html.B(f"{c['SUMMARY']:,}"), " summaries"], className="count summary"),
        html.Span([html.B(f"{c['HEADLINE']:,}"), " headlines"], className="count headline"),
        html.Span([html.B(f"{c['OUT']:,}"), " out"], className="count out"),
        tokens,
    ]


def scene_note(view: View) -> list[Any]:
    notes = []
    req = view.request
    if req.has_query:
        nearest = min(view.land.params.k, view.total)
        # Candidates are the k nearest memories and those with a passage among the k nearest passages.
        by_passage = int(view.land.candidate.sum()) - nearest
        text = (f"Camera at “{req.query}”: the {nearest:,} nearest memories"
                + (f", and {by_passage:,} more found by one of their passages," if by_passage > 0 else "") + " are candidates")
        if req.exclude:
            text += f"; excluding {', '.join(req.exclude)}"
        notes.append(text + ".")
        if req.budget_tokens:
            notes.append(f"Heights are what the agent receives: one search returns at most {req.budget_tokens:,} tokens, "
                         "so the rest of the candidates sit OUT; a faint ring marks a memory's tier without the budget.")
        else:
            notes.append("Heights are every candidate's tier with no token budget.")
    else:
        notes.append("No query: the camera is off, so S = 0 and memories sit by recency of use alone (L = D).")
    if view.sampled:
        what = "every query candidate plus a fixed sample of the rest" if req.has_query else "a fixed sample"
        notes.append(
            f"Drawing {view.drawn_unfiltered:,} of {view.total:,} memories: {what}. "
            "Counts, tokens and the terrain cover all of them."
        )
    if view.filtered is not None:
        notes.append(
            f"Filtered to {req.scene_filter.describe()}: {view.filtered:,} of {view.total:,} memories match"
            f"{f', {len(view.drawn):,} drawn' if len(view.drawn) < view.filtered else ''}. "
            "Tiers, counts and tokens are the unfiltered answer's."
        )
    if req.moment is not None and req.moment.at is not None:
        notes.append(f"The store as it was on {req.moment.at:%Y-%m-%d %H:%M} UTC: {view.total:,} memories existed, with the usage and floors of then.")
    waiting = int(view.placeholder.sum())
    if waiting:
        notes.append(f"{waiting:,} new memories sit at placeholder positions until the map places them.")
    return [html.Div(n) for n in notes]


def legend_children(view: View, mode: str) -> list[Any]:
    entries = colours(view, mode, view.drawn[:0])["legend"]
    out: list[Any] = [html.Span([html.I(style={"background": colour}), label], className="legend-entry") for label, colour in entries]
    if view.marked:
        out.append(html.Span([html.I(className="mark returned"), f"{len(view.marked):,} returned by search #{view.request.replaying}"],
                             className="legend-entry", id="legend-returned"))
    if view.changed:
        out.append(html.Span([html.I(className="mark changed"), f"{len(view.changed):,} changed tier"], className="legend-entry", id="legend-changed"))
    lowered = len(view.unbudgeted)
    if lowered:
        out.append(html.Span([html.I(className="mark unbudgeted"), f"{lowered:,} faint rings: their tier without the "
                              f"{view.request.budget_tokens:,}-token budget"], className="legend-entry", id="legend-unbudgeted",
                             title="Solid points sit at the tier the agent receives; a faint ring shows where the budget lowered one from."))
    if view.recent:
        who = sorted({use.who for use in view.recent.values()})
        label = f"{len(view.recent):,} used in the last hour by {', '.join(who[:3])}" + (f" and {len(who) - 3} more" if len(who) > 3 else "")
        out.append(html.Span([html.I(className="ring"), label], className="legend-entry recent", id="legend-recent"))
    return out


def reference_label(reference: dict | None) -> str:
    if not reference or not reference.get("params"):
        return "no reference"
    p = Params.from_dict(reference["params"])
    return f"{reference.get('label', 'reference')}: α {p.alpha:.2f}, λ {p.lam:.3g}, θ {p.theta1:.2f}/{p.theta2:.2f}/{p.theta3:.2f}, k {p.k}"


def changes_children(app_ctx: AppContext, view: View, reference: dict | None) -> tuple[list[Any], list[Any]]:
    """(the counts line, the lists) of memories whose returned tier differs from the reference settings'."""
    changes = view.changes
    against = html.Div(f"Against {reference_label(reference)}", className="hint change-ref")
    if view.request.reference is None:
        return [html.Span("Pin settings to compare with.", className="hint")], []
    if changes is None or not len(changes):
        return [html.Span([html.B("0"), " memories changed tier"], className="change-none")], [against]
    c = changes.counts
    counts: list[Any] = [
        html.Span([html.B(f"{c['up']:,}"), " ▲ up"], className="change-count up", id="change-up"),
        html.Span([html.B(f"{c['down']:,}"), " ▼ down"], className="change-count down", id="change-down"),
        html.Span([html.B(f"{c['in']:,}"), " + in"], className="change-count in", id="change-in"),
        html.Span([html.B(f"{c['out']:,}"), " − out"], className="change-count out", id="change-out"),
    ]
    if view.changed_unmarked:
        counts.append(html.Div(
            f"The scene marks the {len(view.changed)} biggest moves of {len(view.changed) + view.changed_unmarked:,}; "
            "the lists below hold them all.", className="hint", id="change-marked"))
    shown = {kind: changes.of(kind)[:CHANGE_LIST_LIMIT].tolist() for kind in KINDS}
    headlines = app_ctx.mem.headlines([i for ids_ in shown.values() for i in ids_])
    before = dict(zip(changes.ids.tolist(), changes.before.tolist()))
    after = dict(zip(changes.ids.tolist(), changes.after.tolist()))
    groups = [
        (kind, CHANGE_WORDS[kind], CHANGE_COLOURS[kind], c[kind], [(i, f"{Tier(before[i]).name} → {Tier(after[i]).name}") for i in shown[kind]])
        for kind in KINDS
    ]
    lists: list[Any] = [against, change_lists(groups, headlines)]
    return counts, lists


def pick_reference(app_ctx: AppContext, trigger: str | None, picked: str | None, current: Params, agent: str | None = None) -> Any:
    """The settings to compare with: the viewed agent's saved profile (the default, following the agent
    picked), another agent's, or the sliders as they are now (pinned)."""
    if picked == VIEWED_PROFILE:
        return viewed_profile(app_ctx.mem, agent)
    if trigger == ids.PIN_REFERENCE or picked == "pinned":
        return {"label": "the pinned settings", "params": current.to_dict()}
    if picked and picked.startswith("profile:"):
        other = picked.removeprefix("profile:")
        return {"label": f"{other}'s saved profile", "params": app_ctx.mem.profile(other).to_dict()}
    return no_update


#: The reference by default: the saved profile of whichever agent the page views.
VIEWED_PROFILE = "viewed"


def viewed_profile(mem: Any, agent: str | None) -> dict:
    """The reference "the viewed agent's saved profile" for ``agent`` (all agents: the default profile)."""
    who = None if agent in (None, ALL_AGENTS) else agent
    label = f"{who}'s saved profile" if who else "the default profile"
    return {"label": label, "params": mem.profile(who).to_dict()}


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
    as_of: dict | None = None,
    reference: dict | None = None,
    filters: SceneFilter | None = None,
    budget_mode: str | None = AGENT_BUDGET,
) -> tuple[Any, ...]:
    """(figure or Patch, counts, note, legend, change counts, change lists, result list, received ids) for the current controls."""
    try:
        params = params_from_controls(alpha, lam_log, thresholds, k_log)
        request = view_request(app_ctx, applied, agent, params, now_date, as_of, budget_mode, reference=reference, filters=filters)
        view = compute_view(app_ctx.mem, request, app_ctx.draw_limit, references=app_ctx.references)
    except LodvizError as exc:
        return no_update, no_update, html.Div(str(exc), className="error"), no_update, no_update, no_update, no_update, no_update
    if (request.has_query and not app_ctx.read_only and request.moment is None
            and (not triggered or triggered & {ids.APPLIED, ids.AGENT})):
        # A query the person asked (not a redraw, not a look at the past): on record, as every search is.
        app_ctx.mem.record_view(view.land, agent_id=request.agent_id, actor=app_actor())
    show_terrain = bool(terrain)
    if triggered and triggered <= PATCHABLE:
        figure = patch_figure(view, color_mode=color, show_terrain=show_terrain)
    else:
        labels = app_ctx.mem.labels(view.land.state.ids[view.drawn].tolist())
        figure = build_figure(view, labels, color_mode=color, show_terrain=show_terrain)
    change_counts, change_lists = changes_children(app_ctx, view, reference)
    listed = (result_list(request, view.result, view.tokens, app_ctx.mem.token_counter.name) if view.result is not None else None)
    return (figure, counts_children(view), scene_note(view), legend_children(view, color), change_counts, change_lists, listed,
            received_ids(view))


#: The parts of the scene's answer beside the figure, in ``render``'s order: each is sent only when it changed.
SHOWN_PARTS = ("counts", "note", "legend", "change_counts", "change_lists", "result_list", "received")


def digest(part: Any) -> str:
    return hashlib.blake2b(to_json_plotly(part).encode(), digest_size=16).hexdigest()


def unless_shown(parts: dict[str, Any], shown: dict[str, str] | None) -> tuple[dict[str, Any], Any]:
    """``parts`` with ``no_update`` for each the page shows already, and the digests of what it will show.

    A small slider move rarely changes what the agent receives, the header's
    counts or the legend, and every component Dash mounts anew costs the page
    one more pass over all of its components (dash-renderer dispatches a reset
    per new component): the page keeps what it has instead. ``no_update`` in
    ``parts`` (an error's answer) keeps its digest. The digests are
    ``no_update`` too when nothing changed.
    """
    shown = dict(shown or {})
    before = dict(shown)
    sent: dict[str, Any] = {}
    for name, part in parts.items():
        if part is no_update:
            sent[name] = no_update
            continue
        now = digest(part)
        sent[name] = no_update if shown.get(name) == now else part
        shown[name] = now
    return sent, (no_update if shown == before else shown)


#: An open memory's panel after a slider move, from the controls and the scene's received ids: ``selection.follow``.
Panel = Callable[..., tuple[Any, Any, Any]]


def register(app: Dash, app_ctx: AppContext, panel: Panel | None = None) -> None:
    """The scene's callback; ``panel`` draws an open memory's panel in the same answer when a slider moves."""

    @app.callback(
        Output(ids.SCENE, "figure"),
        Output(ids.COUNTS, "children"),
        Output(ids.SCENE_NOTE, "children"),
        Output(ids.LEGEND_COLOURS, "children"),
        Output(ids.CHANGE_COUNTS, "children"),
        Output(ids.CHANGES, "children"),
        Output(ids.RESULT_LIST, "children"),
        Output(ids.RECEIVED, "data"),
        Output(ids.PANEL_BODY, "children", allow_duplicate=True),
        Output(ids.PANEL_ACTIONS, "style", allow_duplicate=True),
        Output(ids.PANEL_SHOWS, "data", allow_duplicate=True),
        Output(ids.SHOWN, "data"),
        *[Input(component, prop) for component, prop in VIEW_CONTROLS],
        Input(ids.COLOR_BY, "value"),
        Input(ids.TERRAIN, "value"),
        Input(ids.DATA_VERSION, "data"),
        Input(ids.REFERENCE, "data"),
        *[Input(component, prop) for component, prop in FILTER_CONTROLS],
        State(ids.SELECTED_ID, "data"),
        State(ids.PANEL_SHOWS, "data"),
        State(ids.SHOWN, "data"),
        prevent_initial_call="initial_duplicate",
    )
    def _render(applied, agent, alpha, lam_log, thresholds, k_log, now_date, as_of, budget_mode, color, terrain, _version, reference, *rest):
        *filter_values, selected, shown, on_page = rest
        triggered = {t["prop_id"].split(".")[0] for t in dash_ctx.triggered} if dash_ctx.triggered_id else None
        try:
            filters = scene_filter(*filter_values)
        except ValueError:
            filters = SceneFilter()
        out = render(app_ctx, applied, agent, alpha, lam_log, thresholds, k_log, now_date, color, terrain, triggered,
                     as_of=as_of, reference=reference, filters=filters, budget_mode=budget_mode)
        body: tuple[Any, Any, Any] = (no_update, no_update, no_update)
        if panel is not None and selected is not None and triggered and triggered <= SCORING_ONLY and out[7] is not no_update:
            body = panel(app_ctx, selected, shown, applied, agent, alpha, lam_log, thresholds, k_log, now_date, as_of, budget_mode, out[7])
        sent, digests = unless_shown(dict(zip(SHOWN_PARTS, out[1:])), on_page)
        return (out[0], *sent.values(), *body, digests)

    @app.callback(
        Output(ids.REFERENCE, "data"),
        Output(ids.REFERENCE_PICK, "value"),
        Input(ids.PIN_REFERENCE, "n_clicks"),
        Input(ids.REFERENCE_PICK, "value"),
        Input(ids.AGENT, "value"),
        State(ids.ALPHA, "value"),
        State(ids.LAMBDA, "value"),
        State(ids.THRESHOLDS, "value"),
        State(ids.K, "value"),
        State(ids.AS_OF, "data"),
        prevent_initial_call=True,
    )
    def _reference(_pin, picked, agent, alpha, lam_log, thresholds, k_log, as_of):
        trigger = dash_ctx.triggered_id
        if trigger == ids.AGENT and (picked != VIEWED_PROFILE or (as_of and as_of.get("event") is not None)):
            return no_update, no_update  # a reference picked by hand stays; a replay compares with its search's settings
        chosen = "pinned" if trigger == ids.PIN_REFERENCE else picked
        reference = pick_reference(app_ctx, trigger, chosen, params_from_controls(alpha, lam_log, thresholds, k_log), agent)
        return reference, (chosen if chosen != picked else no_update)

    @app.callback(
        Output(ids.FILTER_TEXT, "value"),
        Output(ids.FILTER_KIND, "value"),
        Output(ids.FILTER_OWNER, "value"),
        Output(ids.FILTER_DATES, "start_date"),
        Output(ids.FILTER_DATES, "end_date"),
        Output(ids.FILTER_TIERS, "value"),
        Input(ids.FILTER_CLEAR, "n_clicks"),
        prevent_initial_call=True,
    )
    def _clear_filters(_n):
        return "", [], [], None, None, []

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
