""""What changed" keeps the reference answer while the store stands, and asks again after any change."""

from __future__ import annotations

import pytest

from lodviz.app.view import ReferenceAnswers, ViewRequest, agent_result, compute_view
from lodviz.params import PRESETS, Params

QUERY = "limitation of liability cap in CRO agreements"


@pytest.fixture
def searches(app_mem, monkeypatch):
    """The searches the memory is asked for, as (params) in order."""
    asked: list[Params | None] = []
    search = app_mem.search

    def counted(*args, **kwargs):
        asked.append(kwargs.get("params"))
        return search(*args, **kwargs)

    monkeypatch.setattr(app_mem, "search", counted)
    return asked


def request_at(alpha: float, reference: Params) -> ViewRequest:
    return ViewRequest(params=reference.with_(alpha=alpha), query=QUERY, reference=reference, budget_tokens=2000)


def test_slider_moves_ask_for_the_reference_answer_once(app_mem, searches):
    reference, kept = PRESETS["legal"], ReferenceAnswers()
    for alpha in (0.3, 0.35, 0.4):
        compute_view(app_mem, request_at(alpha, reference), references=kept)
    assert searches.count(reference) == 1 and len(searches) == 4  # three moves, one reference search


def test_without_kept_answers_every_move_asks_for_the_reference_again(app_mem, searches):
    reference = PRESETS["legal"]
    for alpha in (0.3, 0.35, 0.4):
        compute_view(app_mem, request_at(alpha, reference))
    assert searches.count(reference) == 3


@pytest.mark.parametrize("change", ["promote", "forget", "add", "search"])
def test_any_change_to_the_store_asks_for_the_reference_again(app_mem, searches, change):
    reference, kept = PRESETS["legal"], ReferenceAnswers()
    first = compute_view(app_mem, request_at(0.3, reference), references=kept).result
    top = first.items[0].id
    before = app_mem.revision()
    if change == "promote":
        app_mem.promote(top, reason="test")
    elif change == "forget":
        app_mem.forget(top, reason="test")
    elif change == "add":
        app_mem.add("A new limitation of liability cap for CRO agreements: 2x fees.", agent_id="legal-review")
    else:
        app_mem.search(QUERY)  # a search that touches what it returns
    assert app_mem.revision() != before
    compute_view(app_mem, request_at(0.35, reference), references=kept)
    assert searches.count(reference) == 2
    answer = kept.get(app_mem, request_at(0.35, reference), reference)
    fresh = agent_result(app_mem, request_at(0.35, reference), reference)
    assert [(h.id, h.tier) for h in answer.items] == [(h.id, h.tier) for h in fresh.items]


def test_only_a_few_answers_are_kept(app_mem, searches):
    kept = ReferenceAnswers(size=2)
    references = [PRESETS["legal"].with_(alpha=a) for a in (0.1, 0.2, 0.3)]
    for reference in references:
        kept.get(app_mem, request_at(0.5, reference), reference)
    kept.get(app_mem, request_at(0.5, references[0]), references[0])  # the oldest was dropped: asked again
    assert searches.count(references[0]) == 2
