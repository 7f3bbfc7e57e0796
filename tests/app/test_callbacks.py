"""The app's callbacks as plain functions, without a browser."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dash import Patch, no_update

import lodviz
from lodviz.app import create_app, ids
from lodviz.app.callbacks import audit, scoring, selection, status, tuning
from lodviz.app.figure import TIER_COLOURS, TRACE, build_figure, colours, hover_texts, patch_figure
from lodviz.app.page import ALL_AGENTS, Controls
from lodviz.app.view import ViewRequest, compute_view
from lodviz.params import PRESETS, Params
from lodviz.scoring import Tier

from .conftest import ids_in, xss_id
from .html_tree import parse

QUERY = {"query": "limitation of liability cap in CRO agreements", "exclude": ""}


@pytest.fixture
def ctx(app_mem):
    return create_app(app_mem, place_on_start=False, warm_model=False).lodviz


def controls(params: Params = Params()) -> tuple:
    return (params.alpha, math.log10(params.lam), [params.theta3, params.theta2, params.theta1], math.log10(params.k))


def render_all(ctx, applied=None, agent=ALL_AGENTS, params: Params = Params(), triggered=None, color="tier", terrain=None, **kw):
    """(figure, counts, note, legend, change counts, change lists, result list, received ids)."""
    return scoring.render(ctx, applied, agent, *controls(params), None, color, terrain, triggered, **kw)


def render(ctx, applied=None, agent=ALL_AGENTS, params: Params = Params(), triggered=None, color="tier", terrain=None, **kw):
    """(figure, counts, note, legend)."""
    return render_all(ctx, applied, agent, params, triggered, color, terrain, **kw)[:4]


def text_of(component) -> str:
    """The visible text of a component tree, whitespace folded."""

    def walk(node) -> str:
        if isinstance(node, (list, tuple)):
            return " ".join(walk(c) for c in node)
        if isinstance(node, (str, int, float)):
            return str(node)
        children = getattr(node, "children", None)
        return walk(children) if children is not None else ""

    return " ".join(walk(component).split())


def test_first_render_draws_every_memory_with_counts(ctx, app_mem):
    figure, counts, note, legend = render(ctx)
    assert sorted(ids_in(figure).tolist()) == sorted(app_mem.columns().ids.tolist())
    assert "full" in text_of(counts) and "tokens" in text_of(counts)
    assert "No query" in text_of(note)


def test_a_query_places_the_camera_and_draws_lines_to_full_memories(ctx):
    figure, counts, note, _ = render(ctx, QUERY)
    camera = figure.data[TRACE["camera"]]
    assert len(camera.x) == 1 and camera.z[0] > 4
    assert "limitation of liability cap" in text_of(note)


def test_a_slider_move_sends_a_patch_and_changes_the_counts(ctx):
    _, counts_before, _, _ = render(ctx, QUERY)
    patch, counts_after, _, _ = render(ctx, QUERY, params=Params(alpha=0.95), triggered={"alpha"})
    assert isinstance(patch, Patch)
    assert text_of(counts_before) != text_of(counts_after)


def test_a_new_query_sends_a_whole_figure(ctx):
    figure, _, _, _ = render(ctx, QUERY, triggered={"applied"})
    assert not isinstance(figure, Patch)


def test_counts_match_a_search_with_the_same_settings_under_the_agents_budget(ctx, app_mem):
    params = PRESETS["legal"]
    _, counts, _, _ = render(ctx, QUERY, params=params)
    result = app_mem.search(QUERY["query"], params=params, touch=False, record=False, budget_tokens=app_mem.profile(None).budget)
    c = result.counts
    assert f"{c['FULL']:,} full" in text_of(counts)
    assert f"{c['SUMMARY']:,} summaries" in text_of(counts)
    assert f"{c['HEADLINE']:,} headlines" in text_of(counts)
    assert f"{result.counted_tokens:,} of {app_mem.profile(None).budget:,} tokens to read" in text_of(counts)


def test_the_header_and_the_result_list_count_the_same_tokens(ctx, app_mem):
    for mode in ("agent", "whole"):
        _, counts, *_, body, _ = render_all(ctx, QUERY, agent="legal-review", params=app_mem.profile("legal-review"), budget_mode=mode)
        header = int(text_of(next(c for c in counts if getattr(c, "id", None) == "token-count").children[0]).replace(",", ""))
        listed = int(next(node for node in _walk(body) if getattr(node, "id", None) == "result-tokens").children.replace(",", ""))
        assert header == listed, mode


def test_the_scene_lifts_only_what_the_agent_receives_and_rings_what_the_budget_lowered(ctx, app_mem):
    params = PRESETS["legal"]
    figure, _, note, legend = render(ctx, QUERY, params=params)
    budgeted = app_mem.search(QUERY["query"], params=params, touch=False, record=False, budget_tokens=app_mem.profile(None).budget)
    whole = app_mem.search(QUERY["query"], params=params, touch=False, record=False)
    received = {hit.id: hit.tier for hit in budgeted.items}
    heights = {}
    for name in ("faint", "memories"):
        trace = figure.data[TRACE[name]]
        heights.update(zip(trace.customdata, trace.z))
    for memory_id, z in heights.items():
        assert int(z) == int(received.get(memory_id, Tier.OUT)), memory_id  # the terrace a point sits on is the tier it is received at
    lowered = {hit.id for hit in whole.items if hit.tier > received.get(hit.id, Tier.OUT)}
    ghost = figure.data[TRACE["unbudgeted"]]
    at = {(round(x, 4), round(y, 4)) for x, y in zip(ghost.x, ghost.y)}
    points = {(round(x, 4), round(y, 4)): i for name in ("faint", "memories")
              for x, y, i in zip(figure.data[TRACE[name]].x, figure.data[TRACE[name]].y, figure.data[TRACE[name]].customdata)}
    assert lowered and {points[xy] for xy in at} == lowered  # a ring over each memory the budget lowered, and none other
    assert "faint rings" in text_of(legend) and "Heights are what the agent receives" in text_of(note)


def test_an_open_memory_the_budget_lowered_shows_the_tier_it_is_received_at(ctx, app_mem):
    params = PRESETS["legal"]
    budget = app_mem.profile(None).budget
    budgeted = app_mem.search(QUERY["query"], params=params, now=app_mem.now(), touch=False, record=False, budget_tokens=budget)
    whole = app_mem.search(QUERY["query"], params=params, now=app_mem.now(), touch=False, record=False)
    received = {hit.id: hit.tier for hit in budgeted.items}
    lowered = next(hit for hit in whole.items if hit.tier > received.get(hit.id, Tier.OUT))
    body, _ = selection.show(ctx, lowered.id, QUERY, ALL_AGENTS, *controls(params), None)
    tier = received.get(lowered.id, Tier.OUT)
    nodes = [node for part in body for node in _walk(part)]
    assert next(node for node in nodes if getattr(node, "className", None) == "badge").children == tier.name  # as the scene shows it
    note = next(node for node in nodes if getattr(node, "id", None) == "panel-received")
    assert f"Within its {budget:,}-token budget the agent receives it {tier.name}" in note.children


def test_the_panel_reads_an_open_memory_s_tier_from_the_scene_s_search(ctx, app_mem):
    params = PRESETS["legal"]
    *_, received = render_all(ctx, QUERY, params=params)
    budgeted = app_mem.search(QUERY["query"], params=params, now=app_mem.now(), touch=False, record=False,
                              budget_tokens=app_mem.profile(None).budget)
    assert received["budget"] == app_mem.profile(None).budget
    assert {i: Tier.parse(name) for name, got in received["returned"].items() for i in got} == {h.id: h.tier for h in budgeted.items}
    # Told by the scene that a memory is received at HEADLINE, the panel says so without searching again.
    memory_id = budgeted.items[0].id
    told = {"budget": received["budget"], "returned": {"HEADLINE": [memory_id]}}
    body, _ = selection.show(ctx, memory_id, QUERY, ALL_AGENTS, *controls(params), None, None, "agent", told)
    badge = next(node for part in body for node in _walk(part) if getattr(node, "className", None) == "badge")
    assert badge.children == "HEADLINE"


def as_json(component) -> str:
    import json

    from plotly.utils import PlotlyJSONEncoder

    return json.dumps(component, cls=PlotlyJSONEncoder, sort_keys=True)


def test_a_slider_move_sends_only_the_live_part_of_a_panel_already_shown(ctx, app_mem):
    params = PRESETS["legal"]
    *_, received = render_all(ctx, QUERY, params=params)
    memory_id = int(received["returned"]["FULL"][0]) if received["returned"].get("FULL") else int(app_mem.columns().ids[0])
    args = (QUERY, ALL_AGENTS, *controls(params), None, None, "agent", received)
    whole, style, shows = selection.follow(ctx, memory_id, None, *args)  # not on the page yet: the whole panel
    assert isinstance(whole, list) and shows == memory_id and style == {"display": "block"}
    live, style, shows = selection.follow(ctx, memory_id, memory_id, *args)
    assert isinstance(live, Patch) and style is no_update and shows is no_update
    operations = live.to_plotly_json()["operations"]
    assert [op["location"] for op in operations] == [[0]]  # the first child, the live part, and nothing else
    assert as_json(operations[0]["params"]["value"]) == as_json(whole[0])
    # Everything a slider changes is in that part; the passages, conflicts and metadata after it are not.
    inside = {getattr(node, "id", None) for node in _walk(whole[0])}
    assert {"panel-s", "panel-d", "panel-l", "panel-reason"} <= inside and "panel-meta" not in inside


def test_the_whole_landscape_sends_no_received_ids(ctx):
    *_, received = render_all(ctx, QUERY, params=PRESETS["legal"], budget_mode="whole")
    assert received is None


def test_the_header_counts_what_the_search_returns_even_beyond_the_k_nearest(ctx, app_mem):
    params = PRESETS["legal"].with_(k=20)  # a narrow k: memories found by a passage come on top of the 20 nearest
    _, counts, _, _ = render(ctx, QUERY, params=params, budget_mode="whole")
    result = app_mem.search(QUERY["query"], params=params, now=app_mem.now(), touch=False, record=False)
    assert len(result.items) > 20
    c = result.counts
    assert f"{c['FULL']:,} full {c['SUMMARY']:,} summaries {c['HEADLINE']:,} headlines" in text_of(counts)


def test_the_scene_note_counts_the_candidates_a_passage_brought_in(ctx, app_mem):
    params = PRESETS["legal"].with_(k=20)
    _, _, note, _ = render(ctx, QUERY, params=params, budget_mode="whole")
    land = app_mem.landscape(QUERY["query"], params=params, now=app_mem.now())
    extra = int(land.candidate.sum()) - 20
    assert extra > 0
    assert f"the 20 nearest memories, and {extra:,} more found by one of their passages, are candidates" in text_of(note)


def test_the_whole_landscape_mode_shows_every_candidate_with_no_rings(ctx, app_mem):
    params = PRESETS["legal"]
    figure, counts, _, _ = render(ctx, QUERY, params=params, budget_mode="whole")
    c = app_mem.search(QUERY["query"], params=params, touch=False, record=False).counts
    assert f"{c['FULL']:,} full" in text_of(counts) and f"{c['HEADLINE']:,} headlines" in text_of(counts)
    assert "no budget" in text_of(counts)
    assert len(figure.data[TRACE["unbudgeted"]].x) == 0


def test_an_agent_sees_only_its_own_and_shared_memories(ctx, app_mem):
    figure, _, _, _ = render(ctx, QUERY, agent="exec-digest")
    records = {record.id: record for record in app_mem.export_records() if record.id in set(ids_in(figure).tolist())}
    assert records and all(r.agent_id == "exec-digest" or r.visibility == "shared" for r in records.values())


def test_bad_thresholds_show_a_message_not_a_traceback(ctx):
    figure, _, note, *_ = scoring.render(ctx, QUERY, ALL_AGENTS, 0.5, -1.5, [0.3, 0.3, 0.3], 3, None, "tier", None, {"thresholds"})
    assert "theta1 > theta2 > theta3" in text_of(note)


def test_panel_numbers_are_the_librarys(ctx, app_mem):
    memory_id = int(app_mem.search(QUERY["query"], touch=False).items[0].id)
    body, style = selection.show(ctx, memory_id, QUERY, ALL_AGENTS, *controls(), None)
    placement = app_mem.explain(memory_id, QUERY["query"], params=Params(), now=app_mem.now())
    text = text_of(body)
    assert f"{placement.similarity:.3f}" in text and f"{placement.decay:.3f}" in text and f"{placement.score:.3f}" in text
    assert placement.reason in text and style == {"display": "block"}


def test_promote_from_the_app_lifts_the_floor_one_tier_above_the_view(ctx, app_mem):
    memory_id = int(app_mem.columns().ids[5])
    request = ViewRequest(params=app_mem.profile(None), query=QUERY["query"], now=app_mem.now())
    shown = app_mem.explain(memory_id, QUERY["query"], params=request.scoring_params, now=request.now).tier
    message = selection.act(ctx, "promote", memory_id, "key precedent", request)
    expected = Tier(min(shown + 1, Tier.FULL))
    assert f"→ {expected.name}" in message
    assert app_mem.get(memory_id).floor == expected
    event = app_mem.audit(actions=["promote"])[0]
    assert event.memory_id == memory_id and event.actor == "app" and event.details["reason"] == "key precedent"
    assert event.agent_id == app_mem.get(memory_id).agent_id  # filtering the log by the memory's agent finds it


def test_promote_from_the_app_after_a_budget_cut_a_memory_to_a_headline_lands_on_summary(tmp_path, embedder):
    from tests.mcp.conftest import REFERENCE_TIME, SEED

    path = tmp_path / "seeded.duckdb"
    with lodviz.open(path, embedder=embedder) as seeded:  # the MCP tests' memories, with this suite's embedder
        for record in SEED.values():
            seeded.add(**record)
        seeded.set_reference_time(REFERENCE_TIME)
    mem = lodviz.open(path, embedder=embedder)
    try:
        app_ctx = create_app(mem, place_on_start=False, warm_model=False).lodviz
        query = "what did we agree on the liability cap?"
        natural = {int(i.id): i.tier for i in mem.search(query, agent_id="alice", touch=False).items}
        tight = mem.search(query, agent_id="alice", budget_tokens=80)
        cut = next(int(i.id) for i in tight.items if i.tier == Tier.HEADLINE and natural[int(i.id)] >= Tier.SUMMARY)
        view = ViewRequest(params=mem.profile("alice"), query=query, agent_id="alice", now=mem.now())
        assert "→ SUMMARY" in selection.act(app_ctx, "promote", cut, "read it as a headline", view)  # not above the view's tier
    finally:
        mem.close()


def test_demote_and_expand_from_the_app(ctx, app_mem):
    memory_id = int(app_mem.columns().ids[6])
    selection.act(ctx, "promote", memory_id, None, ViewRequest(params=Params(), query=QUERY["query"]))
    floor = Tier(app_mem.get(memory_id).floor)
    expected = Tier(floor - 1).name  # OUT, as the audit log says, when it was HEADLINE
    assert f"→ {expected}" in selection.act(ctx, "demote", memory_id, None, None)
    before = app_mem.get(memory_id).retrieval_count
    selection.act(ctx, "expand", memory_id, None, None)
    assert app_mem.get(memory_id).retrieval_count == before + 1


def test_memory_markup_is_escaped_in_hover_labels(app_mem):
    memory_id = xss_id(app_mem)
    (label,) = hover_texts(app_mem.headlines([memory_id]), [memory_id])
    assert "<img" not in label and "&lt;img" in label


def test_panel_shows_markup_as_text(ctx, app_mem):
    body, _ = selection.show(ctx, xss_id(app_mem), None, ALL_AGENTS, *controls(), None)
    assert '<img src=x onerror="window.__lodviz_xss = 1">' in text_of(body)


def test_agent_loads_its_profile_and_presets_load_theirs(ctx):
    assert tuning.load(ctx, "agent", "legal-review")[0] == PRESETS["legal"].alpha
    assert tuning.load(ctx, "preset-digest", ALL_AGENTS)[0] == PRESETS["digest"].alpha


def test_saving_a_profile_is_audited(ctx, app_mem):
    message = tuning.save(ctx, "clinical-research", *controls(PRESETS["research"]))
    assert "Saved clinical-research" in message
    assert app_mem.profile("clinical-research").alpha == PRESETS["research"].alpha
    assert app_mem.audit(actions=["profile"])[0].actor == "app"


def test_saving_without_an_agent_is_refused(ctx):
    assert "Pick an agent" in tuning.save(ctx, ALL_AGENTS, *controls())


def test_audit_rows_filter_and_export(ctx, app_mem):
    app_mem.search("supplier audit", agent_id="exec-digest", touch=False)
    app_mem.search("supplier audit", agent_id="exec-digest")
    app_mem.promote(int(app_mem.columns().ids[0]), reason="r")
    rows = audit.rows(ctx, "exec-digest", ["search"], None, None)
    assert [r["action"] for r in rows] == ["search", "search"] and rows[0]["query"] == "supplier audit"
    csv_text = audit.to_csv(audit.rows(ctx, None, None, None, None))
    assert csv_text.startswith("\ufeffid,at,action")  # a byte-order mark, so a spreadsheet reads UTF-8
    assert "promote" in csv_text


def test_the_audit_view_shows_an_import_as_one_row_and_exports_every_batch(ctx, app_mem):
    records = [{"text": f"Batch note {i}: the cap is {i} million.", "agent_id": "legal-review"} for i in range(6)]
    app_mem.add_many(records, batch_size=2, actor="nightly-import")
    shown = [r for r in audit.rows(ctx, "legal-review", ["write"], None, None, grouped=True) if r["actor"] == "nightly-import"]
    assert len(shown) == 1 and shown[0]["summary"].startswith("6 memories written in 3 batches")
    exported = [r for r in audit.rows(ctx, "legal-review", ["write"], None, None) if r["actor"] == "nightly-import"]
    assert len(exported) == 3 and all(r["summary"] == "2 memories written" for r in exported)


def test_url_state_round_trips_through_controls(app_mem):
    c = Controls.from_url("http://x/?q=cap&x=cats&agent=legal-review&alpha=0.7&lambda=0.05&theta1=0.6&theta2=0.3&theta3=0.05&k=500&color=agent&terrain=1", app_mem)
    assert (c.query, c.exclude, c.agent, c.color, c.terrain) == ("cap", "cats", "legal-review", "agent", True)
    assert c.params == Params(alpha=0.7, lam=0.05, theta1=0.6, theta2=0.3, theta3=0.05, k=500)


def test_a_bad_url_is_refused_in_words_and_opens_on_the_profile(app_mem):
    c = Controls.from_url("http://x/?agent=nobody&alpha=7", app_mem)
    assert c.agent == ALL_AGENTS and c.params == app_mem.profile(None)
    assert c.refused == ("agent 'nobody' has no memories or profile here", "alpha must be between 0 and 1, got 7")
    assert c.refusal().endswith("Showing the default profile settings instead.")
    assert Controls.from_url("http://x/?agent=legal-review&alpha=0.3", app_mem).refused == ()


def test_a_link_asks_for_the_whole_landscape_or_is_refused_in_words(app_mem):
    assert Controls.from_url("http://x/?q=cap&budget=whole", app_mem).budget == "whole"
    assert Controls.from_url("http://x/?q=cap", app_mem).budget == "agent"  # by default, what one search returns
    c = Controls.from_url("http://x/?q=cap&budget=lots", app_mem)
    assert c.budget == "agent" and c.refused == ("budget='lots' is not one of agent, whole",)


@pytest.mark.slow
def test_poll_notices_a_write_from_elsewhere(ctx, app_mem):
    seen, _, _ = status.poll(ctx, None, 0)
    app_mem.add("An agent wrote this through MCP.", agent_id="exec-digest")
    seen, version, _ = status.poll(ctx, seen, 3)
    assert version == 4
    ctx.layout_job.wait(60)
    assert not (app_mem.columns().x != app_mem.columns().x).any()


def test_poll_notices_a_floor_changed_from_elsewhere(ctx, app_mem):
    seen, _, _ = status.poll(ctx, None, 0)  # the first poll also starts placing memories on the map
    ctx.layout_job.wait(60)
    seen, _, _ = status.poll(ctx, seen, 0)
    seen, version, _ = status.poll(ctx, seen, 3)
    assert version is None  # nothing changed since
    memory_id = int(app_mem.columns().ids[0])
    app_mem.promote(memory_id, reason="an agent promoted it over MCP", actor="exec-digest")
    _, version, _ = status.poll(ctx, seen, 3)
    assert version == 4


def test_memories_used_in_the_last_hour_are_ringed_and_named_in_the_legend(ctx, app_mem):
    result = app_mem.search(QUERY["query"], agent_id="legal-review", actor="legal-review")
    touched = sorted(item.id for item in result.items if item.tier >= Tier.SUMMARY)
    figure, _, _, legend = render(ctx)
    ring = figure.data[TRACE["recent"]]
    assert ring.name == "recently used" and sorted(ring.customdata) == touched
    assert all("used by legal-review" in text for text in ring.hovertext)
    assert f"{len(touched)} used in the last hour by legal-review" in text_of(legend)


def test_nothing_is_ringed_when_the_uses_are_older_than_the_window(app_mem):
    from datetime import timedelta

    app_mem.search(QUERY["query"], agent_id="legal-review")
    view = compute_view(app_mem, ViewRequest(params=Params()), recent_window=timedelta(0))
    assert view.recent == {}


def test_a_slider_patch_leaves_marker_symbols_alone(app_mem):
    view = compute_view(app_mem, ViewRequest(params=Params(), query=QUERY["query"]))
    operations = patch_figure(view).to_plotly_json()["operations"]
    assert operations and not any("symbol" in op["location"] for op in operations)


def test_the_faint_cloud_is_drawn_as_squares_and_the_candidates_as_circles(app_mem):
    view = compute_view(app_mem, ViewRequest(params=Params(k=20), query=QUERY["query"]))
    figure = build_figure(view, {})
    faint, bright = figure.data[TRACE["faint"]], figure.data[TRACE["memories"]]
    floored = {int(i) for i in app_mem.columns().ids[app_mem.columns().floor > 0]}
    assert len(faint.x) and len(bright.x)
    for trace, shape in ((faint, "square"), (bright, "circle")):
        for memory_id, symbol in zip(trace.customdata, trace.marker.symbol):
            assert symbol == ("diamond" if memory_id in floored else shape), memory_id


def test_a_slider_patch_sends_the_faint_cloud_one_colour_and_the_candidates_one_a_row(app_mem):
    view = compute_view(app_mem, ViewRequest(params=Params(k=20), query=QUERY["query"]))
    operations = patch_figure(view).to_plotly_json()["operations"]
    colour = {op["location"][1]: op["params"]["value"] for op in operations if op["location"][-2:] == ["marker", "color"]}
    assert set(view.tier[view.drawn[~view.land.candidate[view.drawn]]].tolist()) == {Tier.OUT}  # nothing beyond the k nearest received
    assert colour[TRACE["faint"]] == TIER_COLOURS[Tier.OUT]
    bright = colour[TRACE["memories"]]
    assert not isinstance(bright, str) and len(set(np.asarray(bright).tolist())) > 1  # mixed tiers: a value per row


def test_each_colour_mode_gives_one_colour_only_to_rows_that_share_it(app_mem):
    view = compute_view(app_mem, ViewRequest(params=Params(), query=QUERY["query"]))
    for mode in ("tier", "agent", "kind"):
        mixed = colours(view, mode, view.drawn)
        assert not isinstance(mixed["color"], str), mode
        one = colours(view, mode, view.drawn[:1])
        assert one["color"] in dict(mixed["legend"]).values(), mode


def test_the_rings_the_budget_leaves_are_drawn_without_an_outline(ctx):
    figure, *_ = render(ctx, QUERY, params=PRESETS["legal"])
    ring = figure.data[TRACE["unbudgeted"]]
    assert len(ring.x) and ring.marker.symbol == "circle-open" and ring.marker.line.width == 0


def shown_parts(out):
    return dict(zip(scoring.SHOWN_PARTS, out[1:8]))


def test_a_slider_move_that_leaves_the_result_list_alone_does_not_resend_it(ctx):
    params = PRESETS["legal"]
    first = shown_parts(render_all(ctx, QUERY, params=params))
    sent, shown = scoring.unless_shown(first, None)
    assert sent == first and set(shown) == set(scoring.SHOWN_PARTS)
    nudged = render_all(ctx, QUERY, params=Params(**{**params.to_dict(), "alpha": params.alpha + 0.001}), triggered={ids.ALPHA})
    sent, digests = scoring.unless_shown(shown_parts(nudged), shown)
    assert sent["result_list"] is no_update and digests is no_update


def test_a_slider_move_resends_only_the_parts_that_changed(ctx):
    params = PRESETS["legal"]
    _, shown = scoring.unless_shown(shown_parts(render_all(ctx, QUERY, params=params)), None)
    moved = shown_parts(render_all(ctx, QUERY, params=Params(**{**params.to_dict(), "alpha": 0.0, "lam": 0.3}), triggered={ids.ALPHA}))
    sent, digests = scoring.unless_shown(moved, shown)
    assert sent["result_list"] is moved["result_list"] and digests["result_list"] != shown["result_list"]
    assert sent["note"] is no_update and digests["note"] == shown["note"]  # the note says the same about this query


def test_an_answer_that_keeps_a_part_keeps_its_digest(ctx):
    parts = shown_parts(render_all(ctx, QUERY, params=PRESETS["legal"]))
    _, shown = scoring.unless_shown(parts, None)
    sent, digests = scoring.unless_shown({**parts, "counts": no_update, "note": ["an error, said once"]}, shown)
    assert sent["counts"] is no_update and digests["counts"] == shown["counts"]
    assert sent["note"] == ["an error, said once"] and digests["note"] != shown["note"]


def test_past_the_draw_limit_candidates_are_drawn_and_the_rest_sampled(app_mem):
    request = ViewRequest(params=Params(k=20), query=QUERY["query"])
    view = compute_view(app_mem, request, draw_limit=50)
    assert view.sampled and len(view.drawn) <= 55
    candidates = set(view.land.candidate.nonzero()[0].tolist())
    assert candidates <= set(view.drawn.tolist())


def test_enter_or_search_moves_the_camera_and_typing_does_not():
    assert scoring.apply_query({"search.n_clicks"}, " cap ", "")["query"] == "cap"
    assert scoring.apply_query({"search.n_clicks"}, "cap", "cats")["exclude"] == "cats"
    assert scoring.apply_query({"query.value"}, "ca", "") is scoring.no_update
    assert scoring.apply_query({"query.value"}, "", "")["query"] == ""
    assert scoring.apply_query({"clear.n_clicks"}, "cap", "x") == {"query": "", "exclude": ""}


def test_without_a_query_past_the_draw_limit_a_sample_is_drawn(app_mem):
    view = compute_view(app_mem, ViewRequest(params=Params()), draw_limit=40)
    assert view.sampled and 20 <= len(view.drawn) <= 60


CAP_2X = "Paragon Clinical MSA: liability cap at 2x annual fees, carve-out for data breaches."
CAP_3X = "Paragon Clinical MSA: liability cap at 3x annual fees, carve-out for data breaches."


@pytest.fixture
def conflict(app_mem):
    old = app_mem.add(CAP_2X, agent_id="legal-review", created_at="2025-01-10T09:00:00Z")
    new = app_mem.add(CAP_3X, agent_id="legal-review", created_at="2025-06-10T09:00:00Z")
    return old, new


def test_the_scene_links_memories_that_may_contradict_each_other(ctx, app_mem, conflict):
    view = compute_view(app_mem, ViewRequest(params=Params(), query=QUERY["query"]))
    ids = view.land.state.ids
    assert sorted(ids[view.conflict_pairs[0]].tolist()) == sorted(conflict)
    figure, *_ = render(ctx, QUERY)
    lines = figure.data[TRACE["conflicts"]]
    assert figure.data[TRACE["conflicts"]].name == "conflicts" and len(lines.x) == 3  # one segment and its break


def test_the_conflicts_tab_lists_open_conflicts_and_the_panel_resolves_them(ctx, app_mem, conflict):
    from lodviz.app.callbacks import conflicts

    old, new = conflict
    (row,) = conflicts.rows(ctx, show_all=False)
    assert (row["newer"], row["older"], row["reason"]) == (new, old, "3x instead of 2x")
    body, _ = selection.show(ctx, new, QUERY, ALL_AGENTS, *controls(), None)
    assert "May contradict" in text_of(body) and f"#{old} (older)" in text_of(body)
    message = conflicts.resolve(ctx, new, old, superseded=old)
    assert message.startswith(f"Conflict #{new} vs #{old}: #{old} is superseded by #{new}")
    assert conflicts.rows(ctx, show_all=False) == []
    event = app_mem.audit(actions=["resolve"])[0]
    assert event.actor == "app" and event.agent_id == "legal-review" and event.details["superseded"] == old


def test_the_reason_typed_before_resolving_is_kept_in_the_audit_log_and_on_the_conflict(ctx, app_mem, conflict):
    from lodviz.app.callbacks import conflicts

    old, new = conflict
    conflicts.resolve(ctx, new, old, superseded=0, reason="  both quoted correctly: draft vs signed  ")
    event = app_mem.audit(actions=["resolve"])[0]
    assert event.details["reason"] == "both quoted correctly: draft vs signed"
    (kept,) = app_mem.conflicts(new, status=None)
    assert kept.status == "kept" and kept.note == "both quoted correctly: draft vs signed"


def test_a_conflict_shows_in_the_panel_of_an_agent_that_sees_only_one_of_the_two(ctx, app_mem):
    old = app_mem.add(CAP_2X, agent_id="legal-review", created_at="2025-01-10T09:00:00Z")
    new = app_mem.add(CAP_3X, agent_id="exec-digest", visibility="shared", created_at="2025-06-10T09:00:00Z")
    assert app_mem.conflicts(new), "the shared memory was not linked to the private one it contradicts"
    body, _ = selection.show(ctx, new, QUERY, "exec-digest", *controls(), None)
    text = text_of(body)
    assert "May contradict" in text and f"#{old} (older)" in text
    assert "not visible to this agent: private to legal-review" in text
    assert app_mem.conflicts(new, agent_id="exec-digest") == []  # an agent's own searches still see only what it may see


def test_tuning_on_evidence_sweeps_and_saves_a_profile(ctx, app_mem):
    from lodviz.app.callbacks import evidence

    state = app_mem.columns()
    visible = [int(i) for i, agent in zip(state.ids, state.agent_id) if agent == "legal-review"][:2]
    app_mem.add_golden("limitation of liability cap in CRO agreements", visible, agent_id="legal-review")
    heat, curve, text, suggestion = evidence.run(ctx, "legal-review", 1500)
    assert heat.data[0].type == "heatmap" and len(curve.data) == 2
    assert "Suggested α" in text and suggestion["agent"] == "legal-review"
    assert evidence.save(ctx, dict(suggestion)).startswith("Saved legal-review's profile")
    assert app_mem.audit(actions=["profile"])[0].details["reason"] == "tuned on golden queries in the landscape"
    assert app_mem.audit(actions=["tune"])[0].actor == "app"


def test_tuning_without_golden_queries_says_how_to_add_them(ctx):
    from lodviz.app.callbacks import evidence

    *_, text, suggestion = evidence.run(ctx, "exec-digest", 2000)
    assert "no golden queries" in text and suggestion is None


def test_the_header_says_which_clock_drives_decay(app_mem, tmp_path):
    from lodviz.app.page import build_layout

    assert "now 2026-11-30 (the store's reference time)" in str(build_layout(app_mem, None).to_plotly_json())
    with lodviz.open(tmp_path / "fresh.duckdb", embedder=app_mem.embedder) as fresh:
        assert "(wall clock)" in str(build_layout(fresh, None).to_plotly_json())


def test_a_memory_opens_by_id_or_by_its_words(ctx, app_mem):
    target = xss_id(app_mem)
    assert selection.open_memory(ctx, f"#{target}", ALL_AGENTS)[0] == target
    picked, line = selection.open_memory(ctx, "vendor portal", ALL_AGENTS)
    assert picked == target and line.startswith(f"#{target}:")
    assert selection.open_memory(ctx, "#999999", ALL_AGENTS)[1] == "No memory with id 999999."
    assert selection.open_memory(ctx, "zebra quantum marmalade", ALL_AGENTS)[1].startswith("No memory holds all of those words")


def test_with_a_query_and_no_memory_open_the_panel_shows_what_the_agent_receives(ctx, app_mem):
    from lodviz.tokens import count

    panel, _ = selection.show(ctx, None, QUERY, "legal-review", *controls(app_mem.profile("legal-review")), None)
    assert panel == ""  # the panel's body leaves the room to the result list, drawn with the scene
    *_, body, _ = render_all(ctx, QUERY, "legal-review", app_mem.profile("legal-review"), triggered={"alpha"})
    result = app_mem.search(QUERY["query"], agent_id="legal-review", now=app_mem.now(), touch=False, record=False, budget_tokens="default")
    shown = text_of(body)
    assert f"What legal-review receives, within 2,000 tokens {count(app_mem.token_counter, result.render()):,} tokens" in shown
    assert result.render().strip() in [getattr(node, "children", None).strip() for node in _walk(body) if getattr(node, "id", None) == "result-text"]
    lines = next(node for node in _walk(body) if getattr(node, "id", None) == "result-lines")
    picks = [int(button.attrs["data-memory"]) for button in parse(lines.children).find(tag="button")]
    assert picks == [hit.id for tier in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE) for hit in result.by_tier(tier)]
    assert app_mem.audit(actions=["search"]) == []  # a look: nothing counted, nothing audited


def test_without_a_query_the_panel_stays_closed(ctx):
    body, _ = selection.show(ctx, None, {"query": "", "exclude": ""}, ALL_AGENTS, *controls(), None)
    assert "nothing-open" in body.className


def _walk(node):
    yield node
    children = getattr(node, "children", None)
    if isinstance(children, (list, tuple)):
        for child in children:
            yield from _walk(child)
    elif children is not None and not isinstance(children, (str, int, float)):
        yield from _walk(children)


# -- the store as it was, what changed, filters, where memories came from -------------------------------


def test_a_replay_from_the_audit_tab_puts_the_search_on_the_controls(ctx, app_mem):
    from lodviz.app.callbacks import history

    params = Params(alpha=0.55, lam=0.0231, k=40)
    app_mem.search(QUERY["query"], agent_id="legal-review", params=params, actor="legal-review")
    event = app_mem.audit(actions=["search"], limit=1)[0].id
    row = next(r for r in audit.rows(ctx, None, None, None, None) if r["id"] == event)
    assert row["replay"] == "▶ replay"

    as_of, tab, query, _exclude, applied, agent, alpha, lam_log, thresholds, k_log, selected, reference = history.start_replay(ctx, event)

    assert (as_of["event"], tab, query, applied["query"], agent) == (event, "landscape", QUERY["query"], QUERY["query"], "legal-review")
    assert alpha == 0.55 and reference["params"] == params.to_dict()
    # The sliders round λ; while they sit there the view scores with the search's exact settings.
    request = scoring.view_request(ctx, applied, agent, scoring.params_from_controls(alpha, lam_log, thresholds, k_log), None, as_of)
    assert request.params == params and request.replaying == event


def test_a_replayed_view_marks_what_the_search_returned_at_the_tiers_it_recorded(ctx, app_mem):
    from lodviz.app.callbacks import history

    result = app_mem.search(QUERY["query"], agent_id="legal-review", actor="legal-review")
    event = app_mem.audit(actions=["search"], limit=1)[0].id
    for _ in range(3):  # later searches change the usage the replay must undo
        app_mem.search(QUERY["query"], agent_id="legal-review", actor="legal-review")
    as_of, _, _, _, applied, agent, *sliders, _, reference = history.start_replay(ctx, event)

    figure, _, note, legend, *_ = render_all(ctx, applied, agent, Params.from_dict(as_of["params"]), as_of=as_of, reference=reference)

    marks = figure.data[TRACE["returned"]]
    assert marks.name == "returned then"
    assert dict(zip(marks.customdata, [t.split("returned as ")[1].split(" ")[0] for t in marks.hovertext])) == {
        item.id: item.tier.name for item in result.items
    }
    assert f"returned by search #{event}" in text_of(legend)
    banner = text_of(history.replay_banner(ctx, as_of))
    assert "the same" in banner and "✓" in banner


def test_replaying_records_no_new_search(ctx, app_mem):
    from lodviz.app.callbacks import history

    app_mem.search(QUERY["query"], agent_id="legal-review")
    event = app_mem.audit(actions=["search"], limit=1)[0].id
    as_of, _, _, _, applied, agent, *_ = history.start_replay(ctx, event)
    before = app_mem.last_event_id()
    render(ctx, applied, agent, Params(), as_of=as_of)
    assert app_mem.last_event_id() == before


def test_the_change_list_after_an_alpha_move_is_the_library_comparison(ctx, app_mem):
    start = Params()
    moved = start.with_(alpha=0.2)
    reference = {"label": "the pinned settings", "params": start.to_dict()}
    patch, _, _, _, counts, lists, _, _ = render_all(ctx, QUERY, ALL_AGENTS, moved, triggered={"alpha"}, reference=reference)

    expected = app_mem.compare(start, moved, QUERY["query"], now=app_mem.now(), budget_tokens=app_mem.profile(None).budget)
    assert len(expected) > 0
    shown = text_of(counts)
    for kind, n in expected.counts.items():
        assert f"{n} {'▲ up' if kind == 'up' else '▼ down' if kind == 'down' else '+ in' if kind == 'in' else '− out'}" in shown
    listed = text_of(lists)
    for memory_id in expected.ids.tolist():
        assert f"#{memory_id}" in listed
    assert isinstance(patch, Patch)  # the marks follow the slider by patch


def test_without_a_move_nothing_changed(ctx):
    reference = {"label": "the pinned settings", "params": Params().to_dict()}
    *_, counts, lists, _, _ = render_all(ctx, QUERY, reference=reference)
    assert "0 memories changed tier" in text_of(counts)


def test_an_agents_saved_profile_is_a_reference(ctx, app_mem):
    reference = scoring.pick_reference(ctx, "reference-pick", "profile:exec-digest", Params())
    assert reference["params"] == app_mem.profile("exec-digest").to_dict()
    assert "exec-digest's saved profile" in reference["label"]


def test_filters_hide_points_but_keep_the_whole_answer_s_counts(ctx, app_mem):
    unfiltered, counts_all, _, _ = render(ctx, QUERY)
    legal = scoring.scene_filter(None, None, ["legal-review"], None, None, None)
    figure, counts, note, _ = render(ctx, QUERY, filters=legal)
    state = app_mem.columns()
    assert set(ids_in(figure).tolist()) == set(state.ids[state.agent_id == "legal-review"].tolist())
    assert text_of(counts) == text_of(counts_all)
    assert "Filtered to agent legal-review" in text_of(note)


def test_a_text_kind_date_and_tier_filter_each_narrow_the_scene(ctx, app_mem):
    records = {r.id: r for r in app_mem.export_records()}
    figure, *_ = render(ctx, filters=scoring.scene_filter("liability", None, None, None, None, None))
    assert set(ids_in(figure).tolist()) == {i for i, r in records.items() if "liability" in r.text.lower()}
    kind = next(iter(records.values())).kind
    figure, *_ = render(ctx, filters=scoring.scene_filter(None, [kind], None, None, None, None))
    assert {records[i].kind for i in ids_in(figure).tolist()} == {kind}
    figure, *_ = render(ctx, filters=scoring.scene_filter(None, None, None, "2026-01-01", "2026-06-30", None))
    assert all("2026-01-01" <= records[i].created_at.date().isoformat() <= "2026-06-30" for i in ids_in(figure).tolist())
    whole = compute_view(app_mem, ViewRequest(params=Params(), query=QUERY["query"]))
    top = Tier(int(whole.land.scored.tier.max()))
    view = compute_view(app_mem, ViewRequest(params=Params(), query=QUERY["query"],
                                             scene_filter=scoring.scene_filter(None, None, None, None, None, [top.name])))
    assert set(view.land.scored.tier[view.drawn].tolist()) == {int(top)}
    assert 0 < len(view.drawn) < len(whole.drawn)


def test_the_time_slider_shows_only_what_existed_on_that_day(ctx, app_mem):
    day = "2026-03-03T23:59:59+00:00"
    figure, _, note, _ = render(ctx, as_of={"at": day})
    created = {r.id: r.created_at for r in app_mem.export_records()}
    drawn = ids_in(figure).tolist()
    assert drawn and all(created[i].isoformat() <= day for i in drawn)
    assert len(drawn) < len(created)
    assert "as it was on 2026-03-03" in text_of(note)


def test_hover_labels_say_where_a_memory_came_from(ctx, app_mem):
    memory_id = app_mem.add("Ran pytest: 14 passed.", kind="tool_result", source="claude-code:shop/abc123",
                            metadata={"tool": "Bash", "session": "abc123", "file": "tests/test_cart.py"})
    (label,) = hover_texts(app_mem.labels([memory_id]), [memory_id])
    assert "source: claude-code:shop/abc123" in label and "tool: Bash" in label and "session: abc123" in label


def test_the_panel_lists_the_memory_s_metadata(ctx, app_mem):
    memory_id = app_mem.add("Ran pytest: 14 passed.", kind="tool_result", source="claude-code:shop/abc123",
                            metadata={"tool": "Bash", "session": "abc123", "file": "tests/test_cart.py"})
    body, _ = selection.show(ctx, memory_id, None, ALL_AGENTS, *controls(), None)
    shown = text_of(body)
    assert "claude-code:shop/abc123" in shown and "tool Bash" in shown and "file tests/test_cart.py" in shown


def test_the_audit_csv_has_no_replay_column(ctx, app_mem):
    app_mem.search(QUERY["query"])
    csv_text = audit.to_csv(audit.rows(ctx, None, None, None, None))
    assert "replay" not in csv_text.splitlines()[0]


def test_what_changed_marks_the_biggest_moves_and_counts_the_rest(ctx, app_mem, monkeypatch):
    from lodviz.app import view as view_module

    monkeypatch.setattr(view_module, "MAX_MARKS", 5)
    request = ViewRequest(params=Params(alpha=0.05, lam=0.3), query=QUERY["query"], reference=Params(alpha=1.0, lam=0.001))
    view = compute_view(app_mem, request)
    moved = len(view.changed) + view.changed_unmarked
    assert moved > 5 and len(view.changed) == 5  # the scene draws five squares, whatever moved
    steps = {int(i): abs(int(a) - int(b)) for i, a, b in zip(view.changes.ids, view.changes.after, view.changes.before)}
    marked = {steps[int(view.land.state.ids[r])] for r in view.changed}
    assert min(marked) >= max(steps[int(view.land.state.ids[r])] for r in view.drawn if int(view.land.state.ids[r]) in steps
                               and r not in view.changed)  # the biggest moves first
    counts, _ = scoring.changes_children(ctx, view, {"label": "x", "params": Params(alpha=1.0, lam=0.001).to_dict()})
    assert f"The scene marks the 5 biggest moves of {moved:,}" in text_of(counts)


def test_the_reference_follows_the_viewed_agents_saved_profile(ctx, app_mem):
    reference = scoring.pick_reference(ctx, "agent", scoring.VIEWED_PROFILE, Params(alpha=0.9), "legal-review")
    assert reference == {"label": "legal-review's saved profile", "params": app_mem.profile("legal-review").to_dict()}
    assert scoring.pick_reference(ctx, "agent", scoring.VIEWED_PROFILE, Params(), ALL_AGENTS)["label"] == "the default profile"


def test_a_filter_is_not_called_a_sample(ctx):
    _, _, note, _ = render(ctx, filters=scoring.scene_filter("liability", None, None, None, None, None))
    assert "Filtered to text “liability”" in text_of(note) and "fixed sample" not in text_of(note)


def settled_poll(ctx):
    """A poll marker after the first poll's placing of memories has finished and been seen."""
    seen, _, _ = status.poll(ctx, None, 0)
    ctx.layout_job.wait(60)
    seen, _, _ = status.poll(ctx, seen, 0)
    return seen


def test_poll_redraws_for_a_forget_from_elsewhere(ctx, app_mem):
    seen = settled_poll(ctx)
    memory_id = int(app_mem.columns().ids[0])
    app_mem.forget(memory_id, reason="asked by the data owner", actor="exec-digest")
    seen, version, _ = status.poll(ctx, seen, 3)
    assert version == 4 and f"forgot #{memory_id}" in seen["note"]


@pytest.mark.slow
def test_poll_redraws_for_a_conflict_decided_elsewhere(ctx, app_mem):
    old = app_mem.add("Paragon MSA: liability cap at 2x annual fees.", agent_id="legal-review", created_at="2025-01-10T09:00:00Z")
    new = app_mem.add("Paragon MSA: liability cap at 3x annual fees.", agent_id="legal-review", created_at="2025-06-10T09:00:00Z")
    seen = settled_poll(ctx)
    app_mem.resolve_conflict(new, old, superseded=old, reason="the amendment", actor="otto")
    seen, version, _ = status.poll(ctx, seen, 3)
    assert version == 4 and f"decided the conflict of #{new}" in seen["note"]


def test_hover_labels_are_short_lines_so_they_fit_beside_a_point(app_mem):
    long = "Master services agreement with Paragon Clinical Research: " + "limitation of liability and indemnities, " * 6
    memory_id = app_mem.add(long, kind="document", source="import:" + "x" * 90,
                            metadata={"tool": "Bash", "session": "abc123", "file": "tests/test_cart.py"})
    (label,) = hover_texts(app_mem.labels([memory_id]), [memory_id])
    lines = label.split("<br>")
    assert 2 <= len(lines) <= 5 and all(len(line) <= 60 for line in lines), lines
    assert lines[0].startswith(f"#{memory_id} · Master services agreement")
    assert "session: abc123" in label  # a detail is never broken across lines
