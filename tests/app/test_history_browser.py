"""The auditor's questions in real Chromium: a past search replayed from the audit tab, what changed after a
slider move, the store on a past day, and the scene's filters."""

from __future__ import annotations

import pytest

from lodviz.app.figure import TIER_COLOURS
from lodviz.params import Params
from lodviz.scoring import Tier

from .browser import eventually, open_scene, search, trace_js

pytestmark = pytest.mark.browser
pytest.importorskip("playwright.sync_api")

PAST = "limitation of liability cap in CRO agreements"
LATER = ("indemnification obligations of the sponsor", "data protection addendum", "site payments schedule")

TIERS_JS = """
(tierOf) => {
  const gd = document.querySelector('#scene .js-plotly-plot');
  const out = {};
  for (const t of gd._fullData) {
    if ((t.name !== 'memories' && t.name !== 'not a candidate') || !t.marker) continue;  // no marker: an empty trace
    const c = t.marker.color;  // a trace whose rows share a tier carries that tier's one colour
    t.customdata.forEach((id, i) => { out[id] = typeof c === 'string' ? tierOf[c] : Math.floor(c[i]); });
  }
  return out;
}
"""


def scene_tiers(page) -> dict[int, int]:
    """Each drawn memory's tier as the scene colours it (tier colour mode: the tier + 0.5)."""
    tier_of = {colour: int(tier) for tier, colour in TIER_COLOURS.items()}
    return {int(k): int(v) for k, v in page.evaluate(TIERS_JS, tier_of).items()}


def test_replaying_a_past_search_from_the_audit_tab_shows_the_tiers_it_recorded(page, served):
    url, mem = served
    result = mem.search(PAST, agent_id="legal-review", actor="legal-review")
    event = mem.audit(actions=["search"], limit=1)[0].id
    recorded = {item.id: int(item.tier) for item in result.items}
    for query in LATER:  # later searches touch memories: today's store scores them differently
        mem.search(query, agent_id="legal-review", actor="legal-review")
    mem.promote(min(recorded, key=lambda i: recorded[i]), to="FULL", reason="a later promotion")
    today = mem.landscape(PAST, agent_id="legal-review")
    today_tiers = dict(zip(today.state.ids.tolist(), today.returned_tiers().tolist()))
    assert any(today_tiers[i] != t for i, t in recorded.items())  # the replay has something to undo

    open_scene(page, url)
    page.click("text=Audit log")
    cell = page.locator(f"tr:has(td[data-dash-column='query']:has-text('{PAST}')) td[data-dash-column='replay']")
    cell.wait_for(timeout=20_000)
    cell.click()

    assert eventually(page, lambda: page.is_visible("#replay-bar") and f"Replay of search #{event}" in page.inner_text("#replay-bar"))
    assert eventually(page, lambda: "✓" in page.inner_text("#replay-verdict"))
    assert page.input_value("#query") == PAST
    # The scene is the store as it was: the returned memories sit at the tiers the search recorded ...
    assert eventually(page, lambda: all(scene_tiers(page).get(i) == t for i, t in recorded.items()))
    # ... and are marked with those tiers.
    marked = dict(zip(page.evaluate(trace_js("returned then", "customdata")), page.evaluate(trace_js("returned then", "hovertext"))))
    assert {int(i): text.split("returned as ")[1].split(" ")[0] for i, text in marked.items()} == {
        i: Tier(t).name for i, t in recorded.items()
    }
    assert f"replay={event}" in page.url  # a replay is a link
    assert page.errors == []

    page.click("#replay-leave")
    assert eventually(page, lambda: not page.is_visible("#replay-bar"))
    assert "replay=" not in page.url


def test_the_change_list_after_an_alpha_move_matches_the_library_tiers_before_and_after(page, served):
    url, mem = served
    open_scene(page, url)
    search(page, PAST)
    start = mem.profile(None)
    page.focus("#alpha [role=slider]")
    for _ in range(4):  # 0.05 a press: 0.70 to 0.50
        page.keyboard.press("ArrowLeft")
    assert eventually(page, lambda: page.inner_text("#alpha-readout") == "0.50")
    moved = start.with_(alpha=0.5)
    expected = mem.compare(start, moved, PAST, now=mem.now(), budget_tokens=start.budget)  # what the agent receives, as the page shows
    assert len(expected) > 0
    c = expected.counts
    want = f"{c['up']} ▲ up {c['down']} ▼ down {c['in']} + in {c['out']} − out"
    assert eventually(page, lambda: " ".join(page.inner_text("#change-counts").split()) == want), page.inner_text("#change-counts")
    def listed(kind: str) -> list[int]:
        return page.evaluate(f"() => Array.from(document.querySelectorAll('.change-item.{kind}')).map(e => Number(e.id.split('-').pop()))")

    for kind in ("up", "down", "in", "out"):  # the lists' Markdown component loads its script on first use
        assert eventually(page, lambda kind=kind: listed(kind) == expected.of(kind)[:60].tolist()), (kind, listed(kind))
    marked = page.evaluate(trace_js("changed tier", "customdata"))
    assert sorted(int(i) for i in marked) == sorted(expected.ids.tolist())  # every memory is drawn in this small store
    assert page.errors == []


def test_a_changed_memory_opens_from_the_change_list(page, served):
    url, mem = served
    open_scene(page, url)
    search(page, PAST)
    page.focus("#alpha [role=slider]")
    for _ in range(6):
        page.keyboard.press("ArrowLeft")
    page.wait_for_selector(".change-item button", timeout=30_000)
    # Each key press redraws the change list; click once the last one has arrived, not a list about to go.
    assert eventually(page, lambda: _change_list_still(page))
    button = page.locator(".change-item button").first
    memory_id = int(button.inner_text().lstrip("#"))
    button.click()
    assert eventually(page, lambda: page.is_visible(".panel-id") and f"#{memory_id} " in page.inner_text(".panel-id"))


def _change_list_still(page) -> bool:
    """Whether the change list stays the same for half a second with nothing loading."""
    before = page.locator(".change-item").all_inner_texts()
    page.wait_for_timeout(500)
    loading = page.locator("[data-dash-is-loading=true]").count()
    return bool(before) and not loading and page.locator(".change-item").all_inner_texts() == before


def test_the_time_slider_shows_the_store_on_a_past_day(page, served):
    url, mem = served
    open_scene(page, url + "?asof=2026-03-03")
    assert eventually(page, lambda: "as it was on 2026-03-03" in page.inner_text("#scene-note"))
    created = {r.id: r.created_at.isoformat() for r in mem.export_records()}
    drawn = page.evaluate(trace_js("memories", "customdata"))
    assert drawn and all(created[int(i)] <= "2026-03-03T23:59:59+00:00" for i in drawn)
    assert len(drawn) < len(created)
    assert page.inner_text("#time-readout") == "2026-03-03"
    page.click("#time-live")
    assert eventually(page, lambda: len(page.evaluate(trace_js("memories", "customdata"))) == len(created))
    assert eventually(page, lambda: page.inner_text("#time-readout") == "now")  # its own callback: may come after the scene


def test_a_text_filter_narrows_the_scene_and_keeps_the_counts(page, served):
    url, mem = served
    open_scene(page, url)
    before = page.inner_text("#counts")
    page.click("text=Filter the scene")
    page.fill("#filter-text", "liability")
    page.press("#filter-text", "Enter")
    matching = set(mem.ids_matching("liability"))
    assert matching
    assert eventually(page, lambda: {int(i) for i in page.evaluate(trace_js("memories", "customdata"))} == matching)
    assert page.inner_text("#counts") == before
    assert f"{len(matching)} of" in page.inner_text("#scene-note")


def test_the_hover_says_where_a_memory_came_from(page, served):
    url, mem = served
    memory_id = mem.add("Ran pytest in the shop repo: 14 passed, 0 failed.", kind="tool_result", source="claude-code:shop/abc123",
                        metadata={"tool": "Bash", "session": "abc123"}, created_at="2026-11-30T17:00:00Z")
    open_scene(page, url)
    texts = dict(zip(page.evaluate(trace_js("memories", "customdata")) + page.evaluate(trace_js("not a candidate", "customdata")),
                     page.evaluate(trace_js("memories", "hovertext")) + page.evaluate(trace_js("not a candidate", "hovertext"))))
    assert "source: claude-code:shop/abc123" in texts[memory_id] and "tool: Bash" in texts[memory_id]
    assert Params  # the profile type stays importable for readers of this file
