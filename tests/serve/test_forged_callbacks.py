"""Forged `_dash-update-component` requests over real HTTP: a viewer changes nothing, whatever the body says.

Each test sends what a hostile viewer would (the callback named by its
``output``, with no trigger, or with a trigger hidden behind a JSON escape)
to `lodviz serve --auth` on DuckDB and on PostgreSQL, then reads the store:
it must hold exactly what it held before. An auditor's same request works,
so the refusal is about who asks, not about the request's shape.
"""

from __future__ import annotations

import json

import pytest

from . import dash_requests as dash
from .conftest import get, post

pytestmark = pytest.mark.slow


def dependencies(served, token: str) -> list[dict]:
    status, text = get(served.url + "_dash-dependencies", token=token)
    assert status == 200
    return json.loads(text)


def update(served, token: str, body: dict) -> tuple[int, str]:
    return post(served.url + "_dash-update-component", body, token=token)


def view_values(served) -> dict:
    """The sidebar as a page would send it, with the first seeded memory open."""
    return {
        "selected-id.data": served.ids[2], "agent.value": "legal-review", "alpha.value": 0.01, "lambda.value": 0.0,
        "thresholds.value": [0.97, 0.98, 0.99], "k.value": 0.0, "applied.data": None, "now.date": None,
        "reason.value": "forged", "data-version.data": 0, "seen.data": {}, "tune-agent.value": "legal-review",
        "tune-budget.value": 2000, "promote.n_clicks": 1, "demote.n_clicks": 1, "expand.n_clicks": 1,
        "save-profile.n_clicks": 1, "tune-save.n_clicks": 1, "tune-run.n_clicks": 1, "refit.n_clicks": 1,
        "tune-suggestion.data": {"agent": "alice", "alpha": 0.0, "lam": 1.0, "theta1": 0.99, "theta2": 0.98, "theta3": 0.97, "k": 1},
    }


def test_a_viewer_cannot_expand_with_a_request_that_names_no_trigger(served):
    vera = served.tokens["vera"]
    request = dash.body(dash.find(dependencies(served, vera), "expand.n_clicks"), view_values(served), changed=[])
    status, text = update(served, vera, request)
    assert status == 403 and "vera (viewer) may not" in text
    assert served.stop_and_state() == served.before


def test_a_viewer_cannot_save_a_profile_with_a_request_that_names_no_trigger(served):
    vera = served.tokens["vera"]
    request = dash.body(dash.find(dependencies(served, vera), "save-profile.n_clicks"), view_values(served), changed=[])
    status, text = update(served, vera, request)
    assert status == 403 and "may not save a profile" in text
    assert served.stop_and_state() == served.before


def test_a_viewer_cannot_save_another_agents_tuned_profile(served):
    vera = served.tokens["vera"]
    request = dash.body(dash.find(dependencies(served, vera), "tune-save.n_clicks"), view_values(served), changed=[])
    status, text = update(served, vera, request)
    assert status == 403 and "may not save a tuned profile" in text
    assert served.stop_and_state() == served.before


def test_a_viewer_cannot_resolve_a_conflict_behind_an_escaped_prop_id(served):
    vera = served.tokens["vera"]
    newer, older = served.ids[1], served.ids[0]
    # "\u0072esolve" is "resolve" once Dash reads the prop id as JSON; a substring test on the body misses it.
    escaped = f'{{"a":{newer},"b":{older},"superseded":{older},"type":"\\u0072esolve"}}.n_clicks'
    request = dash.body(dash.find(dependencies(served, vera), "resolve.n_clicks"), view_values(served), changed=[escaped],
                        pattern_fill={"a": newer, "b": older, "superseded": older})
    status, text = update(served, vera, request)
    assert status == 403 and "may not resolve a conflict" in text
    assert served.stop_and_state() == served.before


STEERING = ["promote.n_clicks", "demote.n_clicks", "expand.n_clicks", "save-profile.n_clicks", "tune-run.n_clicks",
            "tune-save.n_clicks", "refit.n_clicks", "resolve.n_clicks"]


def test_a_viewer_is_refused_every_store_changing_callback_with_or_without_its_trigger(served):
    vera = served.tokens["vera"]
    deps = dependencies(served, vera)
    newer, older = served.ids[1], served.ids[0]
    fill = {"a": newer, "b": older, "superseded": older}
    for trigger in STEERING:
        named = (json.dumps({"a": newer, "b": older, "superseded": older, "type": "resolve"}, separators=(",", ":")) + ".n_clicks"
                 if trigger.startswith("resolve") else trigger)
        for changed in ([named], [], [named.upper()], [named, "poll.n_intervals"]):
            request = dash.body(dash.find(deps, trigger), view_values(served), changed=changed, pattern_fill=fill)
            status, text = update(served, vera, request)
            if named in changed:
                assert status == 403, (trigger, changed, status, text)
            else:  # the refit shares the poll's callback and the resolve buttons their list: without a press they only read
                assert status in (200, 204, 400, 403), (trigger, changed, status, text)
    assert served.stop_and_state() == served.before


def test_an_auditors_same_requests_change_the_store_as_their_own(served):
    otto = served.tokens["otto"]
    deps = dependencies(served, otto)
    values = view_values(served)
    status, text = update(served, otto, dash.body(dash.find(deps, "expand.n_clicks"), values, changed=["expand.n_clicks"]))
    assert status == 200 and "Expanded" in text
    # A client's own identity header, spelled so that WSGI folds it into the server's, names nobody.
    status, text = post(served.url + "_dash-update-component",
                        dash.body(dash.find(deps, "save-profile.n_clicks"), values, changed=["save-profile.n_clicks"]),
                        token=otto, headers={"X_Lodviz_Identity": "ada"})
    assert status == 200 and "Saved legal-review's profile" in text
    after = served.stop_and_state()
    assert after != served.before
    new_events = [e for e in after["audit"] if e not in served.before["audit"]]
    assert {e["action"] for e in new_events} == {"expand", "profile"}
    assert all(e["actor"] == "otto" for e in new_events)
