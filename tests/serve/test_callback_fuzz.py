"""Hypothesis against the Dash callback endpoint, as a viewer: any body changes nothing and never gets a 500.

Each example is one `_dash-update-component` POST over real HTTP to `lodviz
serve --auth` (DuckDB and PostgreSQL), from a viewer's session: a real
callback's ``output`` (or made-up text), its inputs and state filled with the
values a page would send or with arbitrary JSON, and ``changedPropIds`` drawn
from the real prop ids, JSON-escaped spellings of them and noise; sometimes a
body that is not a JSON object at all. Every answer is below 500; when the
run is over the store holds exactly what it held before (a look, which the
audit log keeps as touching nothing, is all a viewer leaves).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import dash_requests as dash
from .conftest import get, post
from .test_forged_callbacks import view_values

pytestmark = pytest.mark.slow

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def escaped(prop_id: str) -> str:
    """A prop id with its first letter written as a JSON escape inside the id's own JSON (or upper-cased)."""
    if prop_id.startswith("{"):
        return prop_id.replace('"type":"', '"type":"\\u00' + format(ord(prop_id.split('"type":"')[1][0]), "02x"), 1)
    return prop_id.upper()


@st.composite
def requests(draw, deps: list[dict], values: dict, ids: list[int]) -> bytes:
    kind = draw(st.sampled_from(["callback", "callback", "callback", "callback", "made-up", "not-an-object"]))
    if kind == "not-an-object":
        return json.dumps(draw(st.none() | st.integers() | st.text(max_size=30) | st.lists(json_values, max_size=3))).encode()
    dependency = draw(st.sampled_from(deps))
    if kind == "made-up":
        dependency = {**dependency, "output": draw(st.sampled_from([dependency["output"] + "x", "..x.y...", "", draw(st.text(max_size=40))]))}
    filled = {key: (draw(json_values) if draw(st.booleans()) else value) for key, value in values.items()}
    fill = {"a": draw(st.sampled_from(ids)), "b": draw(st.sampled_from(ids)), "superseded": draw(st.sampled_from([0, *ids]))}
    real = []
    for spec in dependency["inputs"]:
        component = spec["id"]
        if component.startswith("{"):
            concrete = dash.concrete(json.loads(component), fill)
            component = json.dumps(concrete, separators=(",", ":"), sort_keys=True)
        real.append(f"{component}.{spec['property']}")
    pool = real + [escaped(p) for p in real] + [draw(st.text(max_size=30))]
    changed = draw(st.lists(st.sampled_from(pool), max_size=3))
    body = dash.body(dependency, filled, changed=changed, pattern_fill=fill)
    if draw(st.booleans()):
        body["outputs"] = draw(json_values)
    return json.dumps(body).encode()


def test_a_viewers_arbitrary_callback_requests_change_nothing_and_never_fail_the_server(served):
    vera = served.tokens["vera"]
    status, text = get(served.url + "_dash-dependencies", token=vera)
    deps = [d for d in json.loads(text) if not d.get("clientside_function")]
    values = view_values(served)
    fill = {"a": served.ids[1], "b": served.ids[0], "superseded": 0}
    answers = []
    for dependency in deps:  # every callback once as the page sends it: the fuzz starts from real requests
        first = dependency["inputs"][0]
        trigger = (json.dumps(dash.concrete(json.loads(first["id"]), fill), separators=(",", ":"), sort_keys=True)
                   if first["id"].startswith("{") else first["id"])
        status, text = post(served.url + "_dash-update-component",
                            dash.body(dependency, values, changed=[f"{trigger}.{first['property']}"], pattern_fill=fill), token=vera)
        assert status < 500, (dependency["output"], status, text[:300])
        answers.append(status)
    assert 403 in answers and 200 in answers  # the store-changing ones refused, the others answered

    @settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(body=requests(deps, values, served.ids))
    def one(body: bytes) -> None:
        status, text = post(served.url + "_dash-update-component", body, token=vera)
        assert status < 500, (status, text[:300], body[:300])

    one()
    assert served.stop_and_state() == served.before
