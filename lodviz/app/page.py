"""The page: controls on the left, the scene in the middle, the memory panel on the right,
and the audit log in a second tab.

The layout is a function of the page's URL (read from the layout request's
referrer), so a shared link opens on the same query, agent and sliders.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlparse

from dash import dcc, html
from dash.dash_table.DataTable import DataTable

from lodviz import audit
from lodviz.app import ids
from lodviz.app.figure import COLOR_MODES, TIER_COLOURS
from lodviz.app.view import day_number, end_of_day, replay_state
from lodviz.errors import LodvizError
from lodviz.memory import Memory
from lodviz.params import Params
from lodviz.scoring import Tier

ALL_AGENTS = "__all__"
#: What the scene, the counts and the result list show: one search under the agent's budget, or every candidate.
AGENT_BUDGET, WHOLE_LANDSCAPE = "agent", "whole"
BUDGET_MODES = (AGENT_BUDGET, WHOLE_LANDSCAPE)
LAMBDA_RANGE = (-3.3, 0.0)  # log10 of lambda per day
K_RANGE = (1.0, 4.0)  # log10 of k
AUDIT_ACTIONS = list(audit.ACTIONS)


@dataclass
class Controls:
    """The state the URL carries: what is asked, by whom, with which knobs."""

    query: str = ""
    exclude: str = ""
    agent: str = ALL_AGENTS
    params: Params = Params()
    now: str | None = None  # ISO date; None = the store's "now"
    color: str = "tier"
    terrain: bool = False
    selected: int | None = None  # the memory open in the panel
    budget: str = AGENT_BUDGET  # BUDGET_MODES: what one of the agent's searches returns, or the whole landscape
    as_of: dict | None = None  # a replayed search or a past day (``view.replay_state``, ``{"at": ...}``)
    refused: tuple[str, ...] = ()  # what the link asked that the page refused, one sentence each

    @classmethod
    def from_url(cls, url: str | None, mem: Memory) -> Controls:
        args: Mapping[str, list[str]] = parse_qs(urlparse(url or "").query)

        def one(name: str, default: str = "") -> str:
            return args.get(name, [default])[0]

        refused: list[str] = []  # a hand-edited link's bad values are refused, each said, never clamped
        agent = one("agent", ALL_AGENTS) or ALL_AGENTS
        if agent != ALL_AGENTS and agent not in agent_names(mem):
            refused.append(f"agent {agent!r} has no memories or profile here")
            agent = ALL_AGENTS
        params = mem.profile(None if agent == ALL_AGENTS else agent)
        changes: dict[str, Any] = {}
        for name, cast in (("alpha", float), ("lambda", float), ("theta1", float), ("theta2", float), ("theta3", float), ("k", int)):
            if one(name):
                try:  # "7" stays 7, so a refusal quotes what the link said
                    value = int(one(name)) if one(name).lstrip("-").isdigit() else cast(one(name))
                except ValueError:
                    refused.append(f"{name}={one(name)!r} is not a number")
                    continue
                if not math.isfinite(value):
                    refused.append(f"{name}={one(name)!r} is not a number")
                    continue
                changes[name] = value
        try:
            params = params.with_(**changes)
        except LodvizError as exc:
            refused.append(str(exc).rstrip("."))
        color = one("color", "tier")
        budget = one("budget", AGENT_BUDGET) or AGENT_BUDGET
        if budget not in BUDGET_MODES:
            refused.append(f"budget={budget!r} is not one of {', '.join(BUDGET_MODES)}")
            budget = AGENT_BUDGET
        selected = int(one("m")) if one("m").isdigit() else None
        query, exclude, as_of = one("q"), one("x"), None
        if one("replay").isdigit():
            try:
                as_of = replay_state(mem, int(one("replay")))
            except LodvizError:
                as_of = None  # a link to an event that is not a search opens the live store
            if as_of is not None:
                query, exclude = as_of["query"] or "", as_of["exclude"]
                agent = as_of["agent"] if as_of["agent"] in agent_names(mem) else ALL_AGENTS
                params = Params.from_dict(as_of["params"])
        elif one("asof"):
            try:
                as_of = {"at": end_of_day(day_number(datetime.fromisoformat(one("asof")[:10]).replace(tzinfo=UTC))).isoformat()}
            except ValueError:
                as_of = None
        return cls(
            query=query,
            exclude=exclude,
            agent=agent,
            params=params,
            now=one("now") or None,
            color=color if color in COLOR_MODES else "tier",
            terrain=one("terrain") == "1",
            budget=budget,
            selected=selected,
            as_of=as_of,
            refused=tuple(refused),
        )

    def refusal(self) -> str:
        """One sentence saying what the link asked that was refused, and what the page shows instead."""
        if not self.refused:
            return ""
        whose = "the default profile" if self.agent == ALL_AGENTS else f"{self.agent}'s profile"
        return f"This link was refused in part: {'; '.join(self.refused)}. Showing {whose} settings instead."


def _card(title: str, *children: Any, folded: bool = False) -> html.Details:
    """A sidebar card that folds on its title, so a short screen reaches every control."""
    return html.Details([html.Summary(title, className="card-title"), *children], open=not folded, className="card")


def _slider_row(label: str, readout_id: str, control: Any, hint: str) -> html.Div:
    return html.Div(
        [
            html.Div([html.Span(label, className="slider-label"), html.Span(id=readout_id, className="readout")], className="slider-head"),
            control,
            html.Div(hint, className="hint"),
        ],
        className="slider-row",
    )


def agent_names(mem: Memory) -> list[str]:
    """Every agent with memories or a profile (``Memory.agents_overview``)."""
    return [agent.agent_id for agent in mem.agents_overview()]


def agent_options(mem: Memory) -> list[dict[str, str]]:
    names = agent_names(mem)
    return [{"label": "All agents (auditor view)", "value": ALL_AGENTS}] + [{"label": n, "value": n} for n in names]


def controls_panel(mem: Memory, c: Controls) -> html.Div:
    p = c.params
    now = mem.now()
    return html.Div(
        [
            _card(
                "Query camera",
                # A text area that grows with the query, so a long question shows whole; Enter searches (assets/keys.js).
                dcc.Textarea(id=ids.QUERY, value=c.query, rows=1, placeholder="Ask the store, e.g. liability cap in CRO agreements", className="text-input query-input"),
                dcc.Input(id=ids.EXCLUDE, type="text", value=c.exclude, placeholder="Exclude topics (comma-separated)", className="text-input exclude-input", n_submit=0),
                html.Div(
                    [
                        html.Button("Search", id=ids.SEARCH, className="btn primary", n_clicks=0),
                        html.Button("Fly to query", id=ids.FLY, className="btn", n_clicks=0),
                        html.Button("Clear", id=ids.CLEAR, className="btn ghost", n_clicks=0),
                    ],
                    className="btn-row",
                ),
            ),
            _card(
                "Agent & profile",
                dcc.Dropdown(id=ids.AGENT, options=agent_options(mem), value=c.agent, clearable=False, className="dropdown"),
                html.Div(
                    [
                        html.Button("Research α≈1", id=ids.PRESET_RESEARCH, className="btn small", n_clicks=0),
                        html.Button("Digest α≈0", id=ids.PRESET_DIGEST, className="btn small", n_clicks=0),
                        html.Button("Legal α≈½", id=ids.PRESET_LEGAL, className="btn small", n_clicks=0),
                    ],
                    className="btn-row presets",
                ),
                html.Button("Save sliders as this agent's profile", id=ids.SAVE_PROFILE, className="btn wide", n_clicks=0),
                html.Div(id=ids.PROFILE_STATUS, className="status"),
            ),
            _card(
                "Scoring",
                _slider_row(
                    "α similarity vs recency",
                    ids.ALPHA_READOUT,
                    # Arrow keys move 0.05 and Shift+arrow 0.01 (assets/keys.js); a drag is fine-grained.
                    dcc.Slider(id=ids.ALPHA, min=0, max=1, step=0.01, value=p.alpha, marks={0: "0", 0.5: "½", 1: "1"}, updatemode="drag", allow_direct_input=False),
                    "0 = recency only, 1 = meaning only: L = α·S + (1−α)·D. Arrows: ±0.05, Shift+arrows: ±0.01",
                ),
                _slider_row(
                    "λ decay per day",
                    ids.LAMBDA_READOUT,
                    dcc.Slider(id=ids.LAMBDA, min=LAMBDA_RANGE[0], max=LAMBDA_RANGE[1], step=0.01, value=_log(p.lam, LAMBDA_RANGE[0]), marks={-3: "0.001", -2: "0.01", -1: "0.1", 0: "1"}, updatemode="drag", allow_direct_input=False),
                    "D = exp(−λ·t / (1 + ln(1 + r)))",
                ),
                _slider_row(
                    "θ3 · θ2 · θ1 tier thresholds",
                    ids.THRESHOLDS_READOUT,
                    dcc.RangeSlider(id=ids.THRESHOLDS, min=0, max=1, step=0.01, value=[p.theta3, p.theta2, p.theta1], pushable=0.01, allowCross=False, marks={0: "0", 0.5: "½", 1: "1"}, updatemode="drag", className="thresholds", allow_direct_input=False),
                    "HEADLINE ≥ θ3, SUMMARY ≥ θ2, FULL ≥ θ1",
                ),
                html.Div(
                    [
                        html.Span("the scene shows", className="slider-label"),
                        dcc.RadioItems(
                            id=ids.BUDGET_MODE, value=c.budget, inline=True, className="radio",
                            options=[{"label": " what one search returns (its budget)", "value": AGENT_BUDGET},
                                     {"label": " every candidate, no budget", "value": WHOLE_LANDSCAPE}],
                        ),
                    ],
                    className="budget-mode",
                ),
                _slider_row(
                    "k candidates",
                    ids.K_READOUT,
                    dcc.Slider(id=ids.K, min=K_RANGE[0], max=K_RANGE[1], step=0.01, value=_log(p.k, K_RANGE[0]), marks={1: "10", 2: "100", 3: "1000", 4: "10k"}, updatemode="mouseup", allow_direct_input=False),
                    "the nearest memories a search considers",
                ),
                html.Div(
                    [
                        html.Span("now", className="slider-label"),
                        dcc.DatePickerSingle(id=ids.NOW, date=c.now or now.date().isoformat(), display_format="YYYY-MM-DD", className="date"),
                        html.Span(f"store's now: {now.strftime('%Y-%m-%d %H:%M')} UTC", className="hint"),
                    ],
                    className="now-row",
                ),
            ),
            # Below the scoring card, so that alpha is in view on a 1280x720 screen without scrolling.
            _card(
                "Open a memory",
                dcc.Input(id=ids.OPEN_MEMORY, type="text", placeholder="#id, or words from its text", className="text-input", n_submit=0, debounce=True),
                html.Div(id=ids.OPEN_MEMORY_STATUS, className="hint"),
            ),
            changes_card(mem, c),
            time_card(mem, c),
            filter_card(mem),
            _card(
                "Display",
                dcc.RadioItems(id=ids.COLOR_BY, options=[{"label": m, "value": m} for m in COLOR_MODES], value=c.color, inline=True, className="radio"),
                dcc.Checklist(id=ids.TERRAIN, options=[{"label": " score terrain", "value": "on"}], value=["on"] if c.terrain else [], className="check"),
                html.Button("Refit map (UMAP)", id=ids.REFIT, className="btn small", n_clicks=0),
                html.Div(id=ids.LAYOUT_STATUS, className="status"),
            ),
        ],
        className="controls",
    )


def changes_card(mem: Memory, c: Controls) -> html.Details:
    """What changed tier against reference settings: pinned sliders, or an agent's saved profile."""
    options = [{"label": "the viewed agent's saved profile", "value": "viewed"}, {"label": "the pinned settings", "value": "pinned"}] + [
        {"label": f"{a}'s saved profile", "value": f"profile:{a}"} for a in agent_names(mem)
    ]
    return _card(
        "What changed",
        html.Div("Memories whose tier moves against the reference: after a slider move, or between two profiles.", className="hint"),
        dcc.Dropdown(id=ids.REFERENCE_PICK, options=options, value="viewed", clearable=False, className="dropdown"),
        html.Button("Pin the current settings as the reference", id=ids.PIN_REFERENCE, className="btn small wide", n_clicks=0),
        html.Div(id=ids.CHANGE_COUNTS, className="change-counts"),
        html.Div(id=ids.CHANGES, className="changes"),
    )


def time_marks(first: int, last: int) -> dict[int, str]:
    """The time slider's labels: where the span starts, each new year on a span over a year ("2025"), else
    each quarter's month ("Jul"), and "now"; short, and an eighth of the span apart at least, so that a
    sidebar 220 px wide never runs them together."""
    gap = max((last - first) // 8, 1)
    wide = last - first > 400
    starts = [d for d in range(first + 1, last)
              if (end_of_day(d).timetuple().tm_yday == 1 if wide else end_of_day(d).day == 1 and end_of_day(d).month % 3 == 1)]
    marks = {first: end_of_day(first).strftime("%b %Y")}
    for d in starts:
        if d - max(marks) >= gap and last - d >= gap:
            marks[d] = str(end_of_day(d).year) if wide else end_of_day(d).strftime("%b")
    marks[last] = "now"
    return marks


def time_card(mem: Memory, c: Controls) -> html.Details:
    """The time slider: the store on any past day of its timeline, and the way back to now."""
    span = mem.history_span()
    first, last = (day_number(span[0]), day_number(span[1])) if span else (0, 1)
    last = max(last, first + 1)
    value = last
    if c.as_of and c.as_of.get("at"):
        value = min(max(day_number(datetime.fromisoformat(c.as_of["at"])), first), last)
    marks = time_marks(first, last)
    return _card(
        "Time travel",
        html.Div(
            [html.Span("the store on", className="slider-label"), html.Span(id=ids.TIME_READOUT, className="readout")],
            className="slider-head",
        ),
        dcc.Slider(id=ids.TIME_SLIDER, min=first, max=last, step=1, value=value, marks=marks, updatemode="mouseup",
                   allow_direct_input=False, className="time-slider"),
        html.Div("Only what existed by then, with the usage and floors of then, rebuilt from the audit log.", className="hint"),
        html.Button("Back to now", id=ids.TIME_LIVE, className="btn small", n_clicks=0),
    )


def filter_card(mem: Memory) -> html.Details:
    """Filters that choose which memories the scene draws (tiers, counts and tokens stay the whole answer's)."""
    state = mem.columns()
    kinds = sorted(set(state.kind.tolist())) if len(state) else []
    return _card(
        "Filter the scene",
        dcc.Input(id=ids.FILTER_TEXT, type="text", placeholder="Words in the text", className="text-input", debounce=True),
        dcc.Dropdown(id=ids.FILTER_KIND, options=[{"label": k, "value": k} for k in kinds], multi=True, placeholder="any kind", className="dropdown"),
        dcc.Dropdown(id=ids.FILTER_OWNER, options=[{"label": a, "value": a} for a in agent_names(mem)], multi=True,
                     placeholder="any owning agent", className="dropdown"),
        dcc.DatePickerRange(id=ids.FILTER_DATES, display_format="YYYY-MM-DD", start_date_placeholder_text="created from",
                            end_date_placeholder_text="to", className="date filter-dates", clearable=True),
        dcc.Checklist(id=ids.FILTER_TIERS, options=[{"label": f" {t.name.lower()}", "value": t.name} for t in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE, Tier.OUT)],
                      value=[], inline=True, className="check tiers-check"),
        html.Div([html.Button("Clear filters", id=ids.FILTER_CLEAR, className="btn small ghost", n_clicks=0)], className="btn-row"),
        folded=True,
    )


def _log(value: float, floor: float) -> float:
    return round(max(math.log10(value), floor) if value > 0 else floor, 3)


def legend() -> html.Div:
    return html.Div(
        [
            html.Div(id=ids.LEGEND_COLOURS, className="legend-colours"),
            html.Details(
                [
                    html.Summary("How to read the scene · click a point (or near one) to open it", className="legend-summary"),
                    html.Div(
                        "Ground: a semantic map (UMAP of the embeddings), related memories sit together. "
                        "Height: the tier a search would return (FULL on top, then SUMMARY, HEADLINE, OUT), "
                        "and within a terrace the score L. Size: how often a memory was retrieved; ◆ = a tier floor set by promote; "
                        "a white ring = used in the last hour (hover it for who and when). "
                        "Faint points are outside the query's k nearest; red dashes link memories that may contradict each other.",
                        className="legend-text",
                    ),
                ],
                className="legend-more",
            ),
        ],
        className="legend",
    )


def memory_panel() -> html.Div:
    return html.Div(
        [
            html.Button("×", id=ids.PANEL_CLOSE, className="panel-close", n_clicks=0, title="Close (the scene takes the width)"),
            html.Div(id=ids.PANEL_BODY, children=html.Div("Click a memory in the scene to see why it sits where it sits.", className="empty nothing-open")),
            # Drawn with the scene (one search); shown while the body above is empty: a query, nothing open.
            html.Div(id=ids.RESULT_LIST),
            html.Div(
                [
                    dcc.Input(id=ids.REASON, type="text", placeholder="Reason (kept in the audit log)", className="text-input"),
                    html.Div(
                        [
                            html.Button("Promote ▲", id=ids.PROMOTE, className="btn primary", n_clicks=0),
                            html.Button("Demote ▼", id=ids.DEMOTE, className="btn", n_clicks=0),
                            html.Button("Expand", id=ids.EXPAND, className="btn", n_clicks=0, title="Count as a retrieval: last used becomes now, count +1 (audited)"),
                        ],
                        className="btn-row",
                    ),
                    html.Div(id=ids.ACTION_STATUS, className="status"),
                ],
                id=ids.PANEL_ACTIONS,
                className="panel-actions",
                style={"display": "none"},
            ),
        ],
        className="panel",
    )


def audit_tab(mem: Memory) -> html.Div:
    agents = agent_names(mem)
    return html.Div(
        [
            html.Div(
                [
                    dcc.Dropdown(id=ids.AUDIT_AGENT, options=[{"label": a, "value": a} for a in agents], placeholder="any agent", className="dropdown"),
                    dcc.Dropdown(id=ids.AUDIT_ACTIONS, options=[{"label": a, "value": a} for a in AUDIT_ACTIONS], multi=True, placeholder="any action", className="dropdown wide"),
                    dcc.DatePickerRange(id=ids.AUDIT_RANGE, display_format="YYYY-MM-DD", className="date"),
                    html.Button("Export CSV", id=ids.AUDIT_EXPORT, className="btn", n_clicks=0),
                    dcc.Download(id=ids.AUDIT_DOWNLOAD),
                ],
                className="audit-filters",
            ),
            DataTable(
                id=ids.AUDIT_TABLE,
                columns=[
                    {"name": "when (wall clock, UTC)", "id": "at"},
                    {"name": "action", "id": "action"},
                    {"name": "actor", "id": "actor"},
                    {"name": "agent", "id": "agent_id"},
                    {"name": "memory", "id": "memory_id"},
                    {"name": "query", "id": "query"},
                    {"name": "what happened", "id": "summary"},
                    {"name": "", "id": "replay"},
                ],
                page_size=25,
                style_cell_conditional=[{"if": {"column_id": "replay"}, "color": "#f472d0", "fontWeight": "600", "cursor": "pointer", "whiteSpace": "nowrap"}],
                sort_action="native",
                style_as_list_view=True,
                style_table={"overflowX": "auto"},
                style_header={"backgroundColor": "#141c33", "color": "#c9d3e6", "fontWeight": "600", "border": "none"},
                style_cell={"backgroundColor": "#0f1629", "color": "#c9d3e6", "border": "none", "borderBottom": "1px solid #1f2a44", "fontFamily": "Inter, system-ui, sans-serif", "fontSize": "13px", "textAlign": "left", "padding": "6px 10px", "whiteSpace": "normal", "height": "auto", "maxWidth": "420px"},
            ),
        ],
        className="audit",
    )


_TABLE_STYLE: dict[str, Any] = {
    "style_as_list_view": True,
    "style_table": {"overflowX": "auto"},
    "style_header": {"backgroundColor": "#141c33", "color": "#c9d3e6", "fontWeight": "600", "border": "none"},
    "style_cell": {"backgroundColor": "#0f1629", "color": "#c9d3e6", "border": "none", "borderBottom": "1px solid #1f2a44",
                   "fontFamily": "Inter, system-ui, sans-serif", "fontSize": "13px", "textAlign": "left", "padding": "6px 10px",
                   "whiteSpace": "normal", "height": "auto", "maxWidth": "420px"},
}


def conflicts_tab() -> html.Div:
    return html.Div(
        [
            html.Div(
                [
                    html.B(id=ids.CONFLICTS_COUNT, className="status"),
                    html.Span("Memories that may contradict each other, found when the newer one was written. "
                              "Open one to decide in its panel: both stand, or one is superseded.", className="hint"),
                    dcc.Checklist(id=ids.CONFLICTS_ALL, options=[{"label": " resolved ones too", "value": "all"}], value=[], className="check"),
                ],
                className="audit-filters",
            ),
            DataTable(
                id=ids.CONFLICTS_TABLE,
                columns=[
                    {"name": "newer", "id": "newer"},
                    {"name": "newer memory", "id": "newer_text"},
                    {"name": "older", "id": "older"},
                    {"name": "older memory", "id": "older_text"},
                    {"name": "what differs", "id": "reason"},
                    {"name": "status", "id": "status"},
                    {"name": "found (UTC, wall clock)", "id": "detected"},
                ],
                page_size=20,
                **_TABLE_STYLE,
            ),
        ],
        className="audit",
    )


def evidence_tab(mem: Memory) -> html.Div:
    agents = agent_names(mem)
    golden_agents = {g.agent_id for g in mem.golden()}
    first = next((a for a in agents if a in golden_agents), agents[0] if agents else None)
    return html.Div(
        [
            html.Div(
                [
                    dcc.Dropdown(id=ids.TUNE_AGENT, options=[{"label": a, "value": a} for a in agents], value=first, clearable=False, className="dropdown"),
                    html.Span("budget", className="slider-label"),
                    dcc.Input(id=ids.TUNE_BUDGET, type="number", min=100, step=100, value=2000, className="text-input narrow"),
                    html.Button("Sweep α and λ on golden queries", id=ids.TUNE_RUN, className="btn primary", n_clicks=0),
                    html.Button("Save suggestion as this agent's profile", id=ids.TUNE_SAVE, className="btn", n_clicks=0),
                ],
                className="audit-filters",
            ),
            dcc.Loading(html.Div(id=ids.TUNE_STATUS, className="status")),
            html.Div(id=ids.TUNE_SAVE_STATUS, className="status"),
            dcc.Store(id=ids.TUNE_SUGGESTION),
            html.Div(
                [dcc.Graph(id=ids.TUNE_HEATMAP, config={"displaylogo": False}), dcc.Graph(id=ids.TUNE_CURVE, config={"displaylogo": False})],
                className="tune-graphs",
            ),
            html.Div("Golden queries: what a good answer needs (lodviz golden import FILE)", className="section-title"),
            DataTable(
                id=ids.GOLDEN_TABLE,
                columns=[{"name": n, "id": i} for n, i in (("id", "id"), ("agent", "agent"), ("query", "query"), ("needs", "needs"), ("why", "note"))],
                page_size=12,
                **_TABLE_STYLE,
            ),
        ],
        className="audit",
    )


def build_layout(mem: Memory, url: str | None, layout_finished: float | None = None, mode: tuple[str, str] | None = None) -> html.Div:
    """The page for ``url``; ``layout_finished`` is when the map was last updated, which the page already shows."""
    c = Controls.from_url(url, mem)
    applied = {"query": c.query.strip(), "exclude": c.exclude}
    return html.Div(
        [
            dcc.Store(id=ids.APPLIED, data=applied),
            dcc.Store(id=ids.AS_OF, data=c.as_of),
            # What changed compares with the viewed agent's saved profile (a replay: with the search's own settings).
            dcc.Store(id=ids.REFERENCE, data={
                "label": "the replayed search's own settings", "params": c.params.to_dict(),
            } if c.as_of and c.as_of.get("event") else {
                "label": "the default profile" if c.agent == ALL_AGENTS else f"{c.agent}'s saved profile",
                "params": mem.profile(None if c.agent == ALL_AGENTS else c.agent).to_dict(),
            }),
            dcc.Store(id=ids.DATA_VERSION, data=0),
            dcc.Store(id=ids.SELECTED_ID, data=c.selected),
            dcc.Store(id=ids.SEEN, data={"count": len(mem), "layout": layout_finished, "audit": mem.last_event_id()}),
            dcc.Store(id=ids.AUDIT_VERSION, data=0),
            dcc.Store(id=ids.URL_SINK),
            # Each agent's budget, for Present's line "legal-review · α 0.50 · an agent search returns ≤ 2,000 tokens".
            dcc.Store(id=ids.BUDGETS, data={a: mem.profile(None if a == ALL_AGENTS else a).budget for a in [ALL_AGENTS, *agent_names(mem)]}),
            dcc.Store(id=ids.URL_REFUSED, data=bool(c.refused)),
            dcc.Store(id=ids.FLY_SINK),
            dcc.Store(id=ids.PRESENT_SINK),
            dcc.Store(id=ids.PRESET_TARGET),
            dcc.Store(id=ids.RECEIVED),
            dcc.Store(id=ids.SHOWN),
            dcc.Store(id=ids.PANEL_ASK),
            dcc.Store(id=ids.PANEL_SHOWS),
            dcc.Interval(id=ids.POLL, interval=2000),
            html.Header(
                [
                    html.Div([html.Span("lod", className="logo-a"), html.Span("viz", className="logo-b")], className="logo"),
                    html.Div(f"{store_name(mem.path)} · {len(mem):,} memories · now {mem.now().strftime('%Y-%m-%d')} ({_clock(mem)})", id=ids.STORE_INFO, className="store-info"),
                    # A short label that fits the header whole; the sentence on hover.
                    html.Div(mode[0], id=ids.ACCESS_MODE, className="access-mode", title=mode[1]) if mode else None,
                    html.Div(id=ids.SYNC_STATUS, className="sync-status"),
                    html.Div(id=ids.COUNTS, className="counts"),
                    html.Button("Present", id=ids.PRESENT, className="btn small present-btn", n_clicks=0,
                                title="Presentation mode: the scene full screen, large type, the query as a title (Esc leaves)"),
                ],
                className="header",
            ),
            # The tabs are headers only; their panes are siblings below, all mounted. A tab's own children
            # are unmounted when another is picked, and coming back redrew the whole scene (2.0-2.6 s).
            dcc.Tabs(
                id=ids.TABS,
                value="landscape",
                className="tabs",
                children=[
                    dcc.Tab(label=label, value=value, className="tab", selected_className="tab selected")
                    for value, label in TAB_LABELS.items()
                ],
            ),
            html.Div(
                [
                    html.Div(landscape_pane(mem, c), id=ids.PANES["landscape"], className="pane"),
                    html.Div(audit_tab(mem), id=ids.PANES["audit"], className="pane", style={"display": "none"}),
                    html.Div(conflicts_tab(), id=ids.PANES["conflicts"], className="pane", style={"display": "none"}),
                    html.Div(evidence_tab(mem), id=ids.PANES["evidence"], className="pane", style={"display": "none"}),
                ],
                className="panes",
            ),
        ],
        className="app",
        id=ids.APP,
    )


def landscape_pane(mem: Memory, c: Controls) -> html.Div:
    """The Landscape tab: the controls, the scene with its notes and legend, and the memory panel."""
    return html.Div(
        [
            controls_panel(mem, c),
            html.Div(
                [
                    html.Div(id=ids.PRESENT_TITLE, className="present-title"),
                    html.Div(id=ids.PRESENT_SUB, className="present-sub"),
                    html.Div(
                        [html.Div(id=ids.REPLAY_BANNER, className="replay-text"),
                         html.Button("Leave the replay", id=ids.REPLAY_LEAVE, className="btn small", n_clicks=0)],
                        id=ids.REPLAY_BAR, className="replay-bar", style={"display": "none"},
                    ),
                    html.Div(c.refusal(), id=ids.URL_REFUSED_NOTE, className="url-refused", role="alert") if c.refused else None,
                    html.Div(id=ids.SCENE_NOTE, className="scene-note"),
                    html.Div(
                        dcc.Graph(id=ids.SCENE, config=SCENE_CONFIG, responsive=True, className="scene",
                                  style={"height": "100%"}),
                        className="scene-box",
                    ),
                    legend(),
                ],
                className="stage",
            ),
            memory_panel(),
        ],
        className="main",
    )


#: The scene's Plotly config. Plotly draws a 3D scene at twice the page's resolution unless told
#: (``plotGlPixelRatio`` defaults to 2): four times the pixels of a 1x screen, which software GL
#: fills in one long task per frame. 1 here; a screen of more pixels per point raises it to its own
#: ratio in the browser (``callbacks.camera``).
SCENE_CONFIG: Any = {"displaylogo": False, "scrollZoom": True, "plotGlPixelRatio": 1}


#: The page's tabs, by value, as their headers name them.
TAB_LABELS = {"landscape": "Landscape", "audit": "Audit log", "conflicts": "Conflicts", "evidence": "Tune on evidence"}


def store_name(path: str) -> str:
    """The store as the header names it: a file's name, or a PostgreSQL database and its host."""
    from urllib.parse import parse_qs, urlsplit

    if path.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(path)
        host = parts.hostname or parse_qs(parts.query).get("host", ["local socket"])[0]
        return f"PostgreSQL {parts.path.lstrip('/') or 'postgres'} on {host}"
    return path.rsplit("/", 1)[-1]


def tier_badge(tier: Tier) -> html.Span:
    return html.Span(tier.name, className="badge", style={"background": TIER_COLOURS[tier], "color": "#0b1020"})


def _clock(mem: Memory) -> str:
    """Which clock drives decay: the store's own reference time, or the wall clock."""
    return "the store's reference time" if mem.info().reference_time is not None else "wall clock"


def parse_date(value: str | None, reference: datetime) -> datetime:
    """The picked day at the reference time of day (the store's now keeps its exact time)."""
    if not value:
        return reference
    day = datetime.fromisoformat(value[:10]).date()
    if day == reference.date():
        return reference
    return reference.replace(year=day.year, month=day.month, day=day.day)
