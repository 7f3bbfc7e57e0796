"""The store as it was: a past search replayed from the audit tab, and the time slider.

A replay puts the search's own question, agent and settings on the controls,
and the moment just before it into ``AS_OF``; every view callback then scores
the store as it was (``Memory.landscape(as_of=...)``), and the scene marks what
the search returned. The bar above the scene says whether rebuilding that
search today gives exactly the answer its audit line recorded.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dash import Dash, Input, Output, State, html, no_update

from lodviz.app import ids
from lodviz.app.callbacks.scoring import slider_values
from lodviz.app.context import AppContext
from lodviz.app.page import ALL_AGENTS
from lodviz.app.view import end_of_day, replay_state
from lodviz.errors import LodvizError
from lodviz.params import Params

HIDDEN = {"display": "none"}
SHOWN = {"display": "flex"}


def start_replay(app_ctx: AppContext, event_id: int) -> tuple[Any, ...]:
    """Everything a replay sets: the moment, the tab, the question, the agent, the sliders, the reference."""
    state = replay_state(app_ctx.mem, event_id)
    params = Params.from_dict(state["params"])
    agents = {a.agent_id for a in app_ctx.mem.agents_overview()}
    agent = state["agent"] if state["agent"] in agents else ALL_AGENTS
    query = state["query"] or ""
    return (
        state, "landscape", query, state["exclude"], {"query": query, "exclude": state["exclude"]}, agent,
        *slider_values(params), None, {"label": "the replayed search's own settings", "params": params.to_dict()},
    )


def _tiers(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts.get(name, 0)} {word}" for name, word in (("FULL", "full"), ("SUMMARY", "summaries"), ("HEADLINE", "headlines")))


def replay_banner(app_ctx: AppContext, as_of: dict) -> list[Any]:
    """What the replay bar says: which search, by whom, when, and whether rebuilding it gives what it recorded."""
    event = as_of["event"]
    try:
        replay = app_ctx.mem.replay(event)
    except LodvizError as exc:
        return [html.Span(str(exc), className="error")]
    who = as_of.get("actor") or "?"
    if as_of.get("agent") and as_of["agent"] != who:
        who += f" for {as_of['agent']}"
    when = datetime.fromisoformat(as_of["at"]).strftime("%Y-%m-%d %H:%M:%S UTC") if as_of.get("at") else "?"
    what = f"“{as_of['query']}”" if as_of.get("query") else f"a {as_of.get('action')} browse"
    land = replay.landscape
    out: list[Any] = [
        html.B(f"Replay of search #{event}"),
        f" by {who} at {when}: {what}. The store as it was just before it: {len(land.state):,} memories, "
        f"usage and floors of that moment. It returned {_tiers(as_of.get('recorded') or {})}",
        f" within {as_of['budget']:,} tokens" if as_of.get("budget") else "",
        ". ",
    ]
    if replay.agrees is True:
        out.append(html.Span(f"Rebuilt today: the same {len(replay.replayed):,} memories at the same tiers ✓", className="replay-ok", id="replay-verdict"))
    elif replay.agrees is False:
        frame = replay.frame()
        differ = int((frame.recorded != frame.replayed).sum())
        out.append(html.Span(f"Rebuilt today: {differ:,} memories differ from what it recorded", className="replay-differs", id="replay-verdict"))
    else:
        out.append(html.Span("Its audit line predates recorded answers: the memories it counted as retrieved are marked.",
                             className="hint", id="replay-verdict"))
    return out


def register(app: Dash, app_ctx: AppContext) -> None:
    @app.callback(
        Output(ids.AS_OF, "data", allow_duplicate=True),
        Output(ids.TABS, "value", allow_duplicate=True),
        Output(ids.QUERY, "value", allow_duplicate=True),
        Output(ids.EXCLUDE, "value", allow_duplicate=True),
        Output(ids.APPLIED, "data", allow_duplicate=True),
        Output(ids.AGENT, "value"),
        Output(ids.ALPHA, "value", allow_duplicate=True),
        Output(ids.LAMBDA, "value", allow_duplicate=True),
        Output(ids.THRESHOLDS, "value", allow_duplicate=True),
        Output(ids.K, "value", allow_duplicate=True),
        Output(ids.SELECTED_ID, "data", allow_duplicate=True),
        Output(ids.REFERENCE, "data", allow_duplicate=True),
        Input(ids.AUDIT_TABLE, "active_cell"),
        prevent_initial_call=True,
    )
    def _replay(cell):
        if not cell or cell.get("column_id") != "replay" or cell.get("row_id") is None:
            return (no_update,) * 12
        try:
            return start_replay(app_ctx, int(cell["row_id"]))
        except LodvizError:
            return (no_update,) * 12  # only searches carry the replay link

    @app.callback(
        Output(ids.AS_OF, "data", allow_duplicate=True),
        Input(ids.TIME_SLIDER, "value"),
        State(ids.TIME_SLIDER, "max"),
        prevent_initial_call=True,
    )
    def _travel(day, last):
        if day is None or day >= last:
            return None
        return {"at": end_of_day(int(day)).isoformat()}

    @app.callback(
        Output(ids.AS_OF, "data", allow_duplicate=True),
        Output(ids.TIME_SLIDER, "value"),
        Input(ids.TIME_LIVE, "n_clicks"),
        Input(ids.REPLAY_LEAVE, "n_clicks"),
        State(ids.TIME_SLIDER, "max"),
        prevent_initial_call=True,
    )
    def _back_to_now(_live, _leave, last):
        return None, last

    @app.callback(
        Output(ids.REPLAY_BAR, "style"),
        Output(ids.REPLAY_BANNER, "children"),
        Output(ids.TIME_READOUT, "children"),
        Input(ids.AS_OF, "data"),
    )
    def _banner(as_of):
        if as_of and as_of.get("event") is not None:
            return SHOWN, replay_banner(app_ctx, as_of), f"search #{as_of['event']} (replay)"
        if as_of and as_of.get("at"):
            return HIDDEN, [], datetime.fromisoformat(as_of["at"]).strftime("%Y-%m-%d")
        return HIDDEN, [], "now"
