"""A long memory's passages in the panel (``app/passage_strip.py``), and excerpts in the result list, without a browser.

The panel is built by the same callback the page calls (``selection.show``);
every number on it is ``Memory.passages``'. A browser test at the end checks
the strip is drawn and the list opens at what the agent received.
"""

from __future__ import annotations

import math

import pytest

from lodviz import passages as cutting
from lodviz.app import create_app, ids
from lodviz.app.callbacks import scoring, selection
from lodviz.app.passage_strip import NEUTRAL, colours, heat
from lodviz.app.view import replay_state
from lodviz.params import Params

from .browser import open_scene
from .html_tree import parse

QUERY = "limitation of liability cap in CRO agreements"
#: Everything a search returns comes back SUMMARY: a long memory as an excerpt.
SUMMARIES = Params(alpha=1.0, lam=0.01, theta1=0.99, theta2=0.01, theta3=0.001)


@pytest.fixture
def ctx(app_mem):
    return create_app(app_mem, place_on_start=False, warm_model=False).lodviz


def controls(params: Params = Params()) -> tuple:
    return (params.alpha, math.log10(params.lam), [params.theta3, params.theta2, params.theta1], math.log10(params.k))


def find(node, *, id=None, cls=None) -> list:
    """Every component under ``node`` with that id, or whose className holds that class."""
    out = []
    if isinstance(node, (list, tuple)):
        for child in node:
            out += find(child, id=id, cls=cls)
        return out
    if node is None or isinstance(node, (str, int, float)):
        return out
    classes = (getattr(node, "className", None) or "").split()
    if (id is not None and getattr(node, "id", None) == id) or (cls is not None and cls in classes):
        out.append(node)
    return out + find(getattr(node, "children", None), id=id, cls=cls)


def text_of(node) -> str:
    if isinstance(node, (list, tuple)):
        return " ".join(text_of(c) for c in node)
    if isinstance(node, (str, int, float)):
        return str(node)
    children = getattr(node, "children", None)
    return " ".join(text_of(children).split()) if children is not None else ""


def long_delivered(mem, agent="legal-review") -> tuple[int, list[tuple[int, int]], int]:
    """The longest memory a search delivered as an excerpt: (its id, the quoted spans, the search's event id)."""
    result = mem.search(QUERY, agent_id=agent, params=SUMMARIES)
    hit = max((item for item in result.items if item.excerpt), key=lambda item: len(cutting.cut(mem.get(item.id).text)))
    return hit.id, [tuple(s) for s in hit.excerpt], mem.audit(actions=["search"], limit=1)[0].id


def show(ctx, memory_id, query=QUERY, agent="legal-review", params=Params(), as_of=None):
    applied = {"query": query, "exclude": ""} if query else None
    body, style = selection.show(ctx, memory_id, applied, agent, *controls(params), None, as_of)
    return body, style


def test_a_long_memory_shows_one_segment_per_passage_and_what_was_received(ctx, app_mem):
    memory_id, quoted, event_id = long_delivered(app_mem)
    body, style = show(ctx, memory_id)
    assert style == {"display": "block"}
    spans = cutting.cut(app_mem.get(memory_id).text)
    (strip,) = find(body, id=ids.PANEL_STRIP)
    segments = find(strip, cls="strip-segment")
    assert len(segments) == len(spans)
    received = [i for i, segment in enumerate(segments) if "received" in segment.className.split()]
    assert [spans[i] for i in received] == quoted
    assert all(text_of(segments[i]) == "▼" for i in received)
    frame = app_mem.passages(memory_id, query=QUERY, agent_id="legal-review")
    for segment, row in zip(segments, frame.itertuples(), strict=True):
        assert f"Passage {row.position + 1} of {len(frame)}" in segment.title
        assert f"S {row.S:.3f}, " in segment.title and row.why in segment.title
    (why,) = find(body, id=ids.PANEL_STRIP_WHY)
    assert f"Received in search #{event_id} “{QUERY}”" in text_of(why)
    # The text, passage by passage, the received ones highlighted; no separate full text.
    (listed,) = find(body, id=ids.PANEL_PASSAGES)
    shown = find(listed, cls="passage")
    assert [text_of(find(p, cls="passage-text")) for p in shown] == [" ".join(t.split()) for t in frame.text]
    assert [i for i, p in enumerate(shown) if "received" in p.className.split()] == received
    assert not find(body, id=ids.PANEL_FULL)


def test_the_strip_is_coloured_by_s_from_least_to_most_relevant(ctx, app_mem):
    memory_id, _, _ = long_delivered(app_mem)
    body, _ = show(ctx, memory_id)
    frame = app_mem.passages(memory_id, query=QUERY, agent_id="legal-review")
    segments = find(find(body, id=ids.PANEL_STRIP), cls="strip-segment")
    painted = [segment.style["background"] for segment in segments]
    assert painted == colours(frame)
    assert painted[int(frame.S.idxmax())] == heat(1.0) and painted[int(frame.S.idxmin())] == heat(0.0)
    assert "to the query" in text_of(body)


def test_without_a_query_the_strip_is_neutral_and_still_marks_what_was_received(ctx, app_mem):
    memory_id, quoted, _ = long_delivered(app_mem)
    body, _ = show(ctx, memory_id, query=None)
    segments = find(find(body, id=ids.PANEL_STRIP), cls="strip-segment")
    assert {segment.style["background"] for segment in segments} == {NEUTRAL}
    assert sum("received" in segment.className.split() for segment in segments) == len(quoted)
    assert "no query: every passage neutral" in text_of(body)


def test_a_memory_never_delivered_has_nothing_received(ctx, app_mem):
    state = app_mem.columns()
    memory_id = next(i for i in state.ids.tolist() if cutting.is_long(app_mem.get(i).text))
    body, _ = show(ctx, memory_id, agent=app_mem.get(memory_id).agent_id)
    segments = find(find(body, id=ids.PANEL_STRIP), cls="strip-segment")
    assert segments and not any("received" in segment.className.split() for segment in segments)
    assert "no passage was received" in text_of(find(body, id=ids.PANEL_STRIP_WHY))


def test_a_replayed_search_shows_what_that_search_delivered(ctx, app_mem):
    memory_id, quoted, event_id = long_delivered(app_mem)
    app_mem.expand(memory_id, agent_id="legal-review")  # later, the whole: the latest use is no longer the search
    body, _ = show(ctx, memory_id)
    assert "Received whole in expand" in text_of(find(body, id=ids.PANEL_STRIP_WHY))
    body, _ = show(ctx, memory_id, as_of=replay_state(app_mem, event_id))
    segments = find(find(body, id=ids.PANEL_STRIP), cls="strip-segment")
    assert sum("received" in segment.className.split() for segment in segments) == len(quoted)
    assert f"search #{event_id}" in text_of(find(body, id=ids.PANEL_STRIP_WHY))


def test_a_short_memory_keeps_its_full_text(ctx, app_mem):
    state = app_mem.columns()
    short = next(i for i in state.ids.tolist() if not cutting.is_long(app_mem.get(i).text))
    body, _ = show(ctx, short)
    assert find(body, id=ids.PANEL_FULL) and not find(body, id=ids.PANEL_STRIP)


def test_the_result_list_marks_excerpts_as_the_agent_reads_them(ctx, app_mem):
    *_, body, _ = scoring.render(ctx, {"query": QUERY, "exclude": ""}, "legal-review", *controls(SUMMARIES), None, "tier", None, {"alpha"})
    result = app_mem.search(QUERY, agent_id="legal-review", params=SUMMARIES, touch=False, record=False, budget_tokens="default")
    excerpts = [item for item in result.items if item.excerpt]
    assert excerpts
    items = parse(find(body, id=ids.RESULT_LINES)[0].children).find(cls="result-item")
    marked = [item for item in items if "excerpt" in item.classes]
    assert len(marked) == len(excerpts)
    for item, hit in zip(marked, excerpts, strict=True):
        assert [tag.text() for tag in item.find(cls="excerpt-tag")] == ["excerpt"]
        line = item.find(cls="result-line")[0].text()
        assert line.startswith(" ".join(hit.content.split())[:60])  # the content as the agent reads it
    assert not any(item.find(cls="excerpt-tag") for item in items if item not in marked)


def test_colours_are_neutral_without_s_and_middling_when_all_are_as_near():
    import pandas as pd

    assert colours(pd.DataFrame({"S": [float("nan")] * 3})) == [NEUTRAL] * 3
    assert colours(pd.DataFrame({"S": [0.4, 0.4]})) == [heat(0.5)] * 2
    assert colours(pd.DataFrame({"S": [0.1, 0.3, 0.5]})) == [heat(0.0), heat(0.5), heat(1.0)]


@pytest.mark.browser
def test_the_strip_is_drawn_and_the_list_opens_at_what_was_received(page, served):
    pytest.importorskip("playwright.sync_api")
    url, mem = served
    memory_id, quoted, _ = long_delivered(mem)
    frame = mem.passages(memory_id, query=QUERY, agent_id="legal-review")
    open_scene(page, f"{url}?q={QUERY.replace(' ', '+')}&agent=legal-review&m={memory_id}")
    page.wait_for_selector("#panel-strip .strip-segment", timeout=60_000)
    assert page.locator("#panel-strip .strip-segment").count() == len(frame)
    assert page.locator("#panel-strip .strip-segment.received").count() == len(quoted)
    shown = ("(n) => { const box = document.querySelector('#panel-passages'); const p = box.querySelector(`.passage[data-position=\"${n}\"]`);"
             " return p.offsetTop < box.scrollTop + box.clientHeight && p.offsetTop + p.offsetHeight > box.scrollTop; }")
    first = int(frame.index[frame.received][0])
    page.wait_for_function(shown, arg=first)  # the list opened at what the agent received
    # A click on a segment brings its passage into view in the list.
    hidden = [i for i in range(len(frame)) if not page.evaluate(shown, i)]
    assert hidden, "the list holds the whole memory at once: nothing to scroll to"
    page.locator(f"#panel-strip .strip-segment[data-position=\"{hidden[-1]}\"]").click()
    page.wait_for_function(shown, arg=hidden[-1])
    assert page.errors == []
