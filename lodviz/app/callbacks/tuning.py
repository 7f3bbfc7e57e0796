"""Tuning: an agent's profile or a preset onto the sliders, and the sliders saved as a profile."""

from __future__ import annotations

from dash import Dash, Input, Output, State
from dash import ctx as dash_ctx

from lodviz.app import ids
from lodviz.app.callbacks.scoring import params_from_controls
from lodviz.app.context import APP_ACTOR, AppContext
from lodviz.app.page import ALL_AGENTS, K_RANGE, LAMBDA_RANGE, _log
from lodviz.errors import LodvizError
from lodviz.params import PRESETS, Params


def slider_values(params: Params) -> tuple[float, float, list[float], float]:
    return (
        params.alpha,
        _log(params.lam, LAMBDA_RANGE[0]),
        [params.theta3, params.theta2, params.theta1],
        _log(params.k, K_RANGE[0]),
    )


def load(app_ctx: AppContext, trigger: str | None, agent: str | None) -> tuple[float, float, list[float], float]:
    """Slider values for a preset button or for the selected agent's profile."""
    if trigger and trigger.startswith(ids.PRESET_PREFIX):
        return slider_values(PRESETS[trigger.removeprefix(ids.PRESET_PREFIX)])
    return slider_values(app_ctx.mem.profile(None if agent in (None, ALL_AGENTS) else agent))


def save(app_ctx: AppContext, agent: str | None, alpha, lam_log, thresholds, k_log) -> str:
    if agent in (None, ALL_AGENTS):
        return "Pick an agent first: a profile belongs to one agent."
    try:
        params = app_ctx.mem.set_profile(
            agent, params_from_controls(alpha, lam_log, thresholds, k_log), actor=APP_ACTOR, reason="saved from the landscape"
        )
    except LodvizError as exc:
        return str(exc)
    return (
        f"Saved {agent}'s profile: α {params.alpha}, λ {params.lam}, θ {params.theta1}/{params.theta2}/{params.theta3}, "
        f"k {params.k} (audited)."
    )


def register(app: Dash, app_ctx: AppContext) -> None:
    @app.callback(
        Output(ids.ALPHA, "value"),
        Output(ids.LAMBDA, "value"),
        Output(ids.THRESHOLDS, "value"),
        Output(ids.K, "value"),
        Input(ids.AGENT, "value"),
        Input(ids.PRESET_RESEARCH, "n_clicks"),
        Input(ids.PRESET_DIGEST, "n_clicks"),
        Input(ids.PRESET_LEGAL, "n_clicks"),
        prevent_initial_call=True,
    )
    def _load(agent, *_clicks):
        return load(app_ctx, dash_ctx.triggered_id, agent)

    @app.callback(
        Output(ids.PROFILE_STATUS, "children"),
        Input(ids.SAVE_PROFILE, "n_clicks"),
        State(ids.AGENT, "value"),
        State(ids.ALPHA, "value"),
        State(ids.LAMBDA, "value"),
        State(ids.THRESHOLDS, "value"),
        State(ids.K, "value"),
        prevent_initial_call=True,
    )
    def _save(_n, agent, alpha, lam_log, thresholds, k_log):
        return save(app_ctx, agent, alpha, lam_log, thresholds, k_log)

    @app.callback(Output(ids.PROFILE_STATUS, "children", allow_duplicate=True), Input(ids.AGENT, "value"), prevent_initial_call=True)
    def _clear_status(_agent):
        return ""
