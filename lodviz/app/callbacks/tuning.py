"""Tuning: an agent's profile or a preset onto the sliders, and the sliders saved as a profile.

A preset glides the sliders to its values in the browser (a few frames, each
a rescoring), so the room sees memories climb and fall terraces instead of a
jump; an agent's profile is set at once.
"""

from __future__ import annotations

import json

from dash import Dash, Input, Output, State, no_update
from dash import ctx as dash_ctx

from lodviz.app import ids
from lodviz.app.callbacks.scoring import params_from_controls, slider_values
from lodviz.app.context import AppContext, app_actor
from lodviz.app.page import ALL_AGENTS
from lodviz.errors import LodvizError
from lodviz.params import PRESETS, Params


def load(app_ctx: AppContext, trigger: str | None, agent: str | None) -> tuple[float, float, list[float], float]:
    """Slider values for a preset button or for the selected agent's profile."""
    if trigger and trigger.startswith(ids.PRESET_PREFIX):
        return slider_values(PRESETS[trigger.removeprefix(ids.PRESET_PREFIX)])
    return slider_values(app_ctx.mem.profile(None if agent in (None, ALL_AGENTS) else agent))


def save(app_ctx: AppContext, agent: str | None, alpha, lam_log, thresholds, k_log) -> str:
    app_ctx.require_steer("save a profile")
    if agent in (None, ALL_AGENTS):
        return "Pick an agent first: a profile belongs to one agent."
    try:
        # What the sliders set, over the stored profile: a setting they do not show (the budget) stays.
        shown = params_from_controls(alpha, lam_log, thresholds, k_log).to_dict()
        del shown["budget"]
        params = app_ctx.mem.set_profile(agent, None, actor=app_actor(), reason="saved from the landscape", **shown)
    except LodvizError as exc:
        return str(exc)
    return (
        f"Saved {agent}'s profile: α {params.alpha}, λ {params.lam}, θ {params.theta1}/{params.theta2}/{params.theta3}, "
        f"k {params.k} (audited)."
    )


#: Frames of a preset's glide, and the time between them (each frame is one rescoring round trip).
GLIDE_FRAMES = 8
GLIDE_MS = 90


def register(app: Dash, app_ctx: AppContext) -> None:
    @app.callback(
        Output(ids.ALPHA, "value"),
        Output(ids.LAMBDA, "value"),
        Output(ids.THRESHOLDS, "value"),
        Output(ids.K, "value"),
        Output(ids.PRESET_TARGET, "data"),
        Input(ids.AGENT, "value"),
        Input(ids.PRESET_RESEARCH, "n_clicks"),
        Input(ids.PRESET_DIGEST, "n_clicks"),
        Input(ids.PRESET_LEGAL, "n_clicks"),
        State(ids.AS_OF, "data"),
        prevent_initial_call=True,
    )
    def _load(agent, _research, _digest, _legal, as_of):
        if dash_ctx.triggered_id == ids.AGENT and (as_of or {}).get("params"):
            # A replay set the agent: the sliders keep the replayed search's own settings, not the profile.
            return (*slider_values(Params.from_dict(as_of["params"])), no_update)
        values = load(app_ctx, dash_ctx.triggered_id, agent)
        if dash_ctx.triggered_id == ids.AGENT:
            return (*values, no_update)
        alpha, lam_log, thresholds, k_log = values
        return no_update, no_update, no_update, no_update, {"alpha": alpha, "lam": lam_log, "th": thresholds, "k": k_log}

    app.clientside_callback(
        f"""
        function(target, alpha, lam, th, k) {{
            if (!target) return window.dash_clientside.no_update;
            const set = window.dash_clientside.set_props;
            const from = {{alpha: alpha, lam: lam, th: [...th].sort((a, b) => a - b)}};
            const ease = t => t < 0.5 ? 2 * t * t : 1 - Math.pow(-2 * t + 2, 2) / 2;
            const mix = (a, b, t) => +(a + (b - a) * t).toFixed(3);
            clearInterval(window.__lodvizGlide);
            let i = 0;
            window.__lodvizGlide = setInterval(() => {{
                i += 1;
                const t = i >= {GLIDE_FRAMES} ? 1 : ease(i / {GLIDE_FRAMES});
                set('{ids.ALPHA}', {{value: t === 1 ? target.alpha : mix(from.alpha, target.alpha, t)}});
                set('{ids.LAMBDA}', {{value: t === 1 ? target.lam : mix(from.lam, target.lam, t)}});
                set('{ids.THRESHOLDS}', {{value: t === 1 ? target.th : from.th.map((v, j) => mix(v, target.th[j], t))}});
                if (t === 1) {{
                    clearInterval(window.__lodvizGlide);
                    if (Math.abs(target.k - k) > 1e-9) set('{ids.K}', {{value: target.k}});  // k redraws the scene: once, at the end
                }}
            }}, {GLIDE_MS});
            return window.dash_clientside.no_update;
        }}
        """,
        Output(ids.PRESET_TARGET, "data", allow_duplicate=True),
        Input(ids.PRESET_TARGET, "data"),
        State(ids.ALPHA, "value"),
        State(ids.LAMBDA, "value"),
        State(ids.THRESHOLDS, "value"),
        State(ids.K, "value"),
        prevent_initial_call=True,
    )

    # A preset button is lit while the sliders hold its values, and only then (a hover or a focus is not "current").
    presets = {button: dict(zip(("alpha", "lam", "th"), slider_values(PRESETS[button.removeprefix(ids.PRESET_PREFIX)])[:3]))
               for button in (ids.PRESET_RESEARCH, ids.PRESET_DIGEST, ids.PRESET_LEGAL)}
    app.clientside_callback(
        f"""
        function(alpha, lam, th) {{
            const presets = {json.dumps(presets)};
            const t = [...th].sort((a, b) => a - b);
            const near = (a, b) => Math.abs(a - b) < 0.005;
            return Object.values(presets).map((p) => {{
                const on = near(alpha, p.alpha) && near(lam, p.lam) && p.th.every((v, j) => near(v, t[j]));
                return on ? 'btn small preset-on' : 'btn small';
            }});
        }}
        """,
        *[Output(button, "className") for button in presets],
        Input(ids.ALPHA, "value"),
        Input(ids.LAMBDA, "value"),
        Input(ids.THRESHOLDS, "value"),
    )

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
