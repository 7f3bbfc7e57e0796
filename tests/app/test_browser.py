"""The landscape in a real headless Chromium (software WebGL), against a real DuckDB file."""

from __future__ import annotations

import re
import threading

import pytest

import lodviz
from lodviz.app import create_app
from lodviz.params import Params
from lodviz.scoring import Tier

from .browser import (
    PROJECT_JS,
    _run_catching,
    click_memory,
    counts,
    eventually,
    most_isolated,
    open_scene,
    search,
    serving,
    settled,
    trace_js,
    unhover,
)
from .conftest import xss_id

pytestmark = pytest.mark.browser

pytest.importorskip("playwright.sync_api")


def test_page_loads_with_the_scene_drawn(page, served):
    url, mem = served
    open_scene(page, url)
    drawn = page.evaluate(trace_js("memories", "customdata")) + page.evaluate(trace_js("not a candidate", "customdata"))
    assert sorted(drawn) == sorted(mem.columns().ids.tolist())
    assert "No query" in page.inner_text("#scene-note")
    assert page.errors == []


def test_the_whole_landscape_toggle_shows_every_candidate_and_stays_in_the_link(page, served):
    url, mem = served
    query = "limitation of liability cap in CRO agreements"
    open_scene(page, url + "?agent=legal-review")
    search(page, query)
    budgeted = mem.search(query, agent_id="legal-review", touch=False, record=False, budget_tokens="default")
    assert eventually(page, lambda: f"{budgeted.counted_tokens:,} of 2,000 tokens" in " ".join(page.inner_text("#counts").split()), 20_000)
    page.click("#budget-mode input[value=whole]")
    whole = mem.search(query, agent_id="legal-review", touch=False, record=False)
    # The whole landscape's answer has arrived when the header says "no budget" (its counts may equal the budgeted ones).
    assert eventually(page, lambda: "no budget" in page.inner_text("#counts"), 20_000)
    assert f"{whole.counts['HEADLINE']:,} headlines" in " ".join(page.inner_text("#counts").split())
    assert "budget=whole" in page.url
    page.reload()
    page.wait_for_selector("#scene .gl-container canvas", timeout=60_000)
    assert eventually(page, lambda: page.is_checked("#budget-mode input[value=whole]"), 20_000)  # the link keeps it
    assert page.errors == []


def test_a_checkout_serves_the_top_level_assets_folder(page, served):
    from pathlib import Path

    url, _ = served
    loaded: dict[str, bytes] = {}
    page.on("response", lambda r: loaded.__setitem__(r.url.split("/assets/", 1)[1].split("?")[0], r.body())
            if "/assets/" in r.url and r.ok else None)
    open_scene(page, url)
    assets = Path(__file__).resolve().parents[2] / "assets"
    files = {p.name: p.read_bytes() for p in assets.iterdir() if p.is_file()}
    assert set(files) >= {"style.css", "picking.js", "keys.js"}
    assert loaded == files  # every file the page loads is the checkout's, byte for byte, and it loads them all


def test_typing_a_query_places_the_camera(page, served):
    url, _ = served
    open_scene(page, url)
    assert page.evaluate(trace_js("query camera", "x")) == []
    # The words of a much-used note: close and fresh under any embedder, so it comes back FULL.
    search(page, "note from the vendor portal")
    page.wait_for_function("() => document.querySelector('#scene .js-plotly-plot')._fullData.find(t => t.name === 'query camera').x.length === 1")
    assert len(page.evaluate(trace_js("to FULL", "x"))) > 0
    assert "q=note+from+the+vendor" in page.url  # the view is shareable


def test_moving_alpha_changes_the_tier_counts_and_the_scene(page, served):
    url, _ = served
    open_scene(page, url)
    search(page, "limitation of liability cap in CRO agreements")
    before_counts = counts(page)
    before_z = page.evaluate(trace_js("memories", "z"))
    page.focus("#alpha [role=slider]")
    for _ in range(6):  # 0.05 a press: from the default 0.7 to 1 in six
        page.keyboard.press("ArrowRight")
    assert eventually(page, lambda: counts(page) != before_counts)
    assert eventually(page, lambda: page.evaluate(trace_js("memories", "z")) != before_z)
    assert eventually(page, lambda: page.inner_text("#alpha-readout") == "1.00")  # the last presses settle


def test_shift_arrows_move_alpha_by_a_hundredth(page, served):
    url, _ = served
    open_scene(page, url)
    page.focus("#alpha [role=slider]")
    page.keyboard.press("ArrowLeft")
    assert eventually(page, lambda: page.inner_text("#alpha-readout") == "0.65")
    for _ in range(3):
        page.keyboard.press("Shift+ArrowRight")
    assert eventually(page, lambda: page.inner_text("#alpha-readout") == "0.68")
    page.keyboard.press("ArrowRight")  # a coarse press from 0.68 lands on the 0.05 grid
    assert eventually(page, lambda: page.inner_text("#alpha-readout") == "0.70")
    assert "alpha=0.70" in page.url


def test_a_preset_is_lit_while_the_sliders_hold_it_and_not_after_a_move(page, served):
    url, _ = served
    open_scene(page, url)
    lit = "() => Array.from(document.querySelectorAll('.preset-on')).map(b => b.id)"
    assert page.evaluate(lit) == []  # the default profile is no preset
    page.click("#preset-digest")
    assert eventually(page, lambda: page.evaluate(lit) == ["preset-digest"], 10_000)
    page.focus("#alpha [role=slider]")  # the pointer stays over Digest, as a person's would
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert eventually(page, lambda: page.evaluate(lit) == [], 10_000), page.inner_text("#alpha-readout")


def test_a_preset_glides_the_sliders_to_its_values(page, served):
    url, _ = served
    open_scene(page, url)
    page.wait_for_timeout(500)
    page.click("#preset-research")
    seen: list[str] = []
    for _ in range(60):  # about 1.5 s of frames
        value = page.inner_text("#alpha-readout")
        if not seen or seen[-1] != value:
            seen.append(value)
        if value == "0.90":
            break
        page.wait_for_timeout(25)
    assert seen[0] == "0.70" and seen[-1] == "0.90"
    assert len(seen) >= 4, seen  # frames between, not a jump
    assert eventually(page, lambda: page.inner_text("#lambda-readout") == "0.0050")
    assert eventually(page, lambda: "alpha=0.90" in page.url)


def test_memories_an_agent_just_used_are_ringed_with_who_and_when(page, served):
    url, mem = served
    result = mem.search("note from the vendor portal", agent_id="legal-review", actor="legal-review")
    touched = sorted(item.id for item in result.items if item.tier >= Tier.SUMMARY)
    assert touched
    open_scene(page, url)
    assert sorted(page.evaluate(trace_js("recently used", "customdata"))) == touched
    label = page.evaluate(trace_js("recently used", "hovertext"))[0]
    assert "used by legal-review" in label and "UTC (wall clock)" in label and "vendor portal" in label
    assert "used in the last hour by legal-review" in page.inner_text("#legend-colours")


def test_clicking_a_memory_opens_its_panel_with_the_librarys_numbers(page, served):
    url, mem = served
    open_scene(page, url)
    state = mem.columns()
    click_memory(page, int(state.ids[state.retrieval_count.argmax()]))  # a large point on the top terrace
    page.wait_for_selector("#panel-s", timeout=30_000)
    shown = int(re.search(r"#(\d+)", page.inner_text(".panel-id")).group(1))  # the point under the cursor
    placement = mem.explain(shown, None, params=Params().with_(alpha=0.0), now=mem.now())
    assert page.inner_text("#panel-s") == f"{placement.similarity:.3f}"
    assert page.inner_text("#panel-d") == f"{placement.decay:.3f}"
    assert page.inner_text("#panel-l") == f"{placement.score:.3f}"
    assert f"m={shown}" in page.url


def test_a_memory_opens_from_the_sidebar_by_id_and_by_words(page, served):
    url, mem = served
    open_scene(page, url)
    target = int(mem.columns().ids[7])
    page.fill("#open-memory", f"#{target}")
    page.press("#open-memory", "Enter")
    assert eventually(page, lambda: page.is_visible(".panel-id") and f"#{target}" in page.inner_text(".panel-id"), 20_000)
    page.fill("#open-memory", "vendor portal")
    page.press("#open-memory", "Enter")
    xss = xss_id(mem)
    assert eventually(page, lambda: f"#{xss}" in page.inner_text(".panel-id"), 20_000)
    assert page.inner_text("#open-memory-status").startswith(f"#{xss}:")


def test_promote_changes_the_floor_in_the_duckdb_file_and_adds_an_audit_event(page, app_store, embedder):
    mem = lodviz.open(app_store, embedder=embedder)
    target = int(mem.columns().ids[20])
    before = mem.get(target).floor
    app = create_app(mem, place_on_start=False)
    with serving(app) as url:
        open_scene(page, f"{url}?m={target}")
        page.wait_for_selector("#panel-s")
        page.fill("#reason", "auditor: key clause")
        page.click("#promote")
        page.wait_for_function("() => document.querySelector('#action-status').innerText.startsWith('Promoted')", timeout=30_000)
        # The floor shown moves off OUT (the labels are upper-cased by the stylesheet, as innerText reads them).
        page.wait_for_function("() => /TIER FLOOR\\n(HEADLINE|SUMMARY|FULL)/.test(document.querySelector('#panel-body').innerText.toUpperCase())", timeout=30_000)
    mem.close()
    reopened = lodviz.open(app_store, embedder=embedder)  # the file itself, after the app let go
    try:
        assert reopened.get(target).floor > before
        event = reopened.audit(actions=["promote"])[0]
        assert event.memory_id == target and event.actor == "app" and event.details["reason"] == "auditor: key clause"
    finally:
        reopened.close()


def test_markup_in_a_memory_shows_as_text_and_runs_nothing(page, served):
    url, mem = served
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    memory_id = xss_id(mem)
    open_scene(page, f"{url}?m={memory_id}")
    page.wait_for_selector("#panel-full")
    assert '<img src=x onerror="window.__lodviz_xss = 1">' in page.inner_text("#panel-full")
    assert page.locator("#panel-body img").count() == 0
    point = page.evaluate(PROJECT_JS, memory_id)
    page.mouse.move(point["x"], point["y"])  # the hover label shows the headline too
    page.wait_for_selector("#scene .hovertext", timeout=10_000)
    label = page.text_content("#scene .hovertext")
    assert '<img src=x onerror="window.__lodviz_xss = 1">' in label  # escaped once: quotes as written
    assert "&quot;" not in label and "&#x27;" not in label and "&lt;" not in label
    assert page.locator("#scene .hovertext img").count() == 0
    assert page.evaluate("() => window.__lodviz_xss") is None
    assert dialogs == [] and page.errors == []


@pytest.mark.parametrize("terrain", [False, True], ids=["terrain off", "terrain on"])
def test_a_memory_of_every_tier_can_be_hovered_and_opened(page, served, terrain):
    url, mem = served
    open_scene(page, url + ("?terrain=1" if terrain else ""))
    if terrain:
        page.wait_for_function("() => document.querySelector('#scene .js-plotly-plot')._fullData.find(t => t.name === 'score terrain').visible === true")
    land = mem.landscape(None, params=mem.profile(None).with_(alpha=0.0))  # the default view: no query
    tiers = dict(zip(land.state.ids.tolist(), land.scored.tier.tolist()))
    for tier in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE, Tier.OUT):
        settled(page)
        at = page.evaluate(PROJECT_JS, None)  # again each time: the first open makes room for the panel
        memory_id = most_isolated(at, [i for i, t in tiers.items() if t == tier])
        click_memory(page, memory_id)
        assert f"#{memory_id} " in page.text_content("#scene .hovertext"), tier
        page.wait_for_function(f"() => (document.querySelector('.panel-id') || {{}}).innerText?.startsWith('#{memory_id} ')", timeout=30_000)
        assert page.inner_text(".panel-head .badge") == tier.name
        unhover(page)
    assert page.errors == []


def test_a_search_and_a_promote_in_the_browser_are_audited_with_the_memorys_agent(page, served):
    url, mem = served
    open_scene(page, url)
    search(page, "limitation of liability cap in CRO agreements")
    assert eventually(page, lambda: bool(mem.audit(actions=["search"])))
    event = mem.audit(actions=["search"])[0]
    assert event.query == "limitation of liability cap in CRO agreements" and event.actor == "app"
    assert event.details["looked_only"] and sum(event.details["counts"].values()) > 0
    target = int(mem.columns().ids[7])
    page.goto(f"{url}?m={target}")
    page.wait_for_selector("#panel-s", timeout=60_000)
    page.click("#promote")
    page.wait_for_function("() => document.querySelector('#action-status').innerText.startsWith('Promoted')", timeout=30_000)
    promote = mem.audit(actions=["promote"])[0]
    assert promote.memory_id == target and promote.actor == "app" and promote.details["face"] == "app"
    assert promote.agent_id == mem.get(target).agent_id
    assert promote.id in [e.id for e in mem.audit(agent_id=mem.get(target).agent_id)]


def heights(page) -> dict[int, float]:
    """Each drawn memory's height in the scene, by id."""
    out: dict[int, float] = {}
    for name in ("memories", "not a candidate"):
        out.update(zip(page.evaluate(trace_js(name, "customdata")), page.evaluate(trace_js(name, "z"))))
    return out


def test_the_open_page_follows_an_agents_search_made_elsewhere(page, served):
    import anyio
    from mcp import Client

    from lodviz.mcp_server import build_mcp

    url, mem = served
    open_scene(page, url)
    page.wait_for_timeout(2500)  # one poll has passed: the page is in step
    before = heights(page)
    page.click("text=Audit log")
    page.wait_for_selector("#audit-table")

    async def agent_search() -> None:
        async with Client(build_mcp(mem, agent="exec-digest")) as client:
            result = await client.call_tool("memory_search", {"query": "board decisions on the operating budget"})
            assert not result.is_error

    # In a thread of its own, as an agent is: Playwright's sync API owns this thread's event loop.
    failures: list[BaseException] = []
    worker = threading.Thread(target=lambda: _run_catching(anyio.run, agent_search, failures))
    worker.start()
    worker.join(120)
    assert not failures, failures
    touched = mem.audit(actions=["search"])[0].details["touched"]
    assert touched  # the search used these memories: their decay, so their place in the scene, changed
    # The audit tab shows the agent's search without switching tabs.
    assert eventually(page, lambda: "board decisions" in page.inner_text("#audit-table"), 20_000)
    page.click("text=Landscape")
    assert eventually(page, lambda: all(heights(page)[i] != before[i] for i in touched), 20_000)
    assert "exec-digest" in page.inner_text("#sync-status") and f"used {len(touched)} memories" in page.inner_text("#sync-status")
    # ...and the memories it used are ringed, with who used them.
    assert eventually(page, lambda: sorted(page.evaluate(trace_js("recently used", "customdata"))) == sorted(touched), 10_000)
    assert "exec-digest" in page.inner_text("#legend-colours")
    assert page.errors == []


def test_the_result_list_is_what_the_agent_receives_and_its_ids_open_memories(page, served):
    url, mem = served
    open_scene(page, url + "?agent=legal-review")
    search(page, "limitation of liability cap in CRO agreements")
    page.wait_for_selector("#result-text", state="attached", timeout=30_000)
    expected = mem.search("limitation of liability cap in CRO agreements", agent_id="legal-review", touch=False, record=False,
                          budget_tokens="default")  # what the agent receives over MCP: within its profile's budget
    assert page.text_content("#result-text") == expected.render()
    from lodviz.tokens import count

    assert page.inner_text("#result-tokens") == f"{count(mem.token_counter, expected.render()):,}"
    # Every line is listed, in the agent's tiers' order (a line with braces once made the whole list vanish).
    wanted = [hit.id for tier in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE) for hit in expected.by_tier(tier)]
    listed_js = "() => Array.from(document.querySelectorAll('#result-lines [data-memory]')).map(b => Number(b.dataset.memory))"
    # The lines are a Markdown block, whose renderer loads on first use: they may land after the exact text.
    assert eventually(page, lambda: page.evaluate(listed_js) == wanted, 20_000), page.evaluate(listed_js)
    first = expected.by_tier(Tier.FULL)[0] if expected.by_tier(Tier.FULL) else expected.items[0]
    page.click(f"button.result-id >> text='#{first.id}'")
    assert eventually(page, lambda: page.is_visible(".panel-id") and page.inner_text(".panel-id").startswith(f"#{first.id} "), 20_000)
    assert not page.is_visible(".result-title")  # the memory's panel, not the list under it
    page.click("#panel-close")  # back to the result
    page.wait_for_selector(".result-title", state="visible", timeout=20_000)
    assert page.errors == []


def requests_of_one_alpha_move(page, url: str) -> list[str]:
    """The callback requests (their bodies) one α key press makes with the result list shown."""
    open_scene(page, url + "?agent=legal-review&q=limitation+of+liability+cap+in+CRO+agreements")
    page.wait_for_selector("#result-text", state="attached", timeout=30_000)
    page.wait_for_timeout(1_000)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.post_data or "") if "_dash-update-component" in r.url else None)
    page.focus("#alpha [role=slider]")
    page.keyboard.press("ArrowRight")
    assert eventually(page, lambda: any("scene.figure" in body for body in asked), 20_000)
    page.wait_for_timeout(1_500)
    return asked


def test_a_slider_move_with_the_result_list_asks_the_server_nothing_about_picks(page, served):
    asked = requests_of_one_alpha_move(page, served[0])
    # The lists drawn again make no pick callback: no request names the selected memory.
    assert not [body for body in asked if "selected-id.data" in body.split('"inputs"')[0]], asked
    assert page.errors == []


def test_a_slider_move_with_nothing_open_asks_the_server_nothing_about_the_panel(page, served):
    asked = requests_of_one_alpha_move(page, served[0])
    assert not [body for body in asked if body.startswith('{"output":"..panel-body')], asked  # only the scene's own request
    # ... and a memory opened afterwards still fills the panel, at the moved slider's tier.
    first = int(page.evaluate("() => document.querySelector('#result-lines [data-memory]').dataset.memory"))
    page.click(f"#result-lines [data-memory='{first}']")
    assert eventually(page, lambda: page.is_visible(".panel-id") and page.inner_text(".panel-id").startswith(f"#{first} "), 20_000)
    assert page.errors == []


def test_with_a_memory_open_a_slider_move_is_one_request_and_the_panel_follows_it(page, served):
    url, mem = served
    state = mem.columns()
    target = int(state.ids[state.retrieval_count.argmax()])
    query = "limitation of liability cap in CRO agreements"
    open_scene(page, f"{url}?q={query.replace(' ', '+')}&m={target}")
    page.wait_for_selector("#panel-l", timeout=30_000)
    page.wait_for_timeout(1_000)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.post_data or "") if "_dash-update-component" in r.url else None)
    page.focus("#alpha [role=slider]")
    page.keyboard.press("ArrowLeft")  # 0.70 -> 0.65
    assert eventually(page, lambda: page.inner_text("#alpha-readout") == "0.65")
    placement = mem.explain(target, query, params=mem.profile(None).with_(alpha=0.65), now=mem.now())
    assert eventually(page, lambda: page.inner_text("#panel-l") == f"{placement.score:.3f}", 20_000), page.inner_text("#panel-l")
    page.wait_for_timeout(1_000)
    moves = [body for body in asked if '"changedPropIds":["alpha.value"' in body or '"changedPropIds":["alpha.value",' in body]
    assert len(moves) == 1 and "panel-body.children" in moves[0].split('"inputs"')[0], asked  # the scene's answer holds the panel
    assert not [body for body in asked if body.startswith('{"output":"..panel-body')], asked
    assert page.errors == []


def test_the_panel_names_no_floor_out_as_the_audit_log_does(page, served):
    url, mem = served
    unfloored = next(int(i) for i, f in zip(mem.columns().ids, mem.columns().floor) if f == 0)
    open_scene(page, f"{url}?m={unfloored}")
    # The labels are upper-cased by the stylesheet, and innerText reads them as shown.
    page.wait_for_function("() => document.querySelector('#panel-body').innerText.toUpperCase().includes('TIER FLOOR')", timeout=30_000)
    text = page.inner_text("#panel-body").upper()
    assert "TIER FLOOR\nOUT" in text and "TIER FLOOR\nNONE" not in text


def test_the_audit_csv_download_opens_in_a_spreadsheet_as_utf8(page, served):
    url, mem = served
    memory_id = int(mem.columns().ids[3])
    mem.promote(memory_id, reason="cap in € at α 0.5, θ 0.6", actor="auditor")
    open_scene(page, url)
    page.click("text=Audit log")
    page.wait_for_selector("#audit-export")
    with page.expect_download(timeout=60_000) as download:
        page.click("#audit-export")
    data = open(download.value.path(), "rb").read()
    assert data.startswith(b"\xef\xbb\xbfid,at,action")  # the byte-order mark a spreadsheet reads UTF-8 by
    assert "cap in € at α 0.5, θ 0.6" in data.decode("utf-8-sig")


@pytest.mark.parametrize(("query", "said"), [
    ("alpha=5", "alpha must be between 0 and 1, got 5"),
    ("alpha=abc", "alpha='abc' is not a number"),
    ("theta1=0.1&theta2=0.5", "thresholds must be in order theta1 > theta2 > theta3"),
])
def test_a_link_with_values_out_of_range_is_refused_in_words_and_left_as_typed(page, served, query, said):
    url, mem = served
    open_scene(page, f"{url}?agent=legal-review&{query}")
    notice = page.inner_text("#url-refused-note")
    assert said in notice and "Showing legal-review's profile settings instead." in notice
    page.wait_for_timeout(1500)  # the address would have been rewritten by now
    assert query.split("&")[0] in page.url
    alpha = mem.profile("legal-review").alpha
    assert page.inner_text("#alpha-readout").strip() == f"{alpha:.2f}"  # the profile's, not the link's
    page.click("#preset-research")  # a control moves: the address follows it and the notice goes
    assert eventually(page, lambda: "alpha=0.90" in page.url)
    assert page.locator("#url-refused-note").count() == 0


def changed_marks(page) -> int:
    return len(page.evaluate(trace_js("changed tier", "x")) or [])


def test_what_changed_compares_with_the_viewed_agents_profile_and_marks_what_a_person_can_read(page, served):
    url, _ = served
    open_scene(page, url)
    search(page, "limitation of liability cap in CRO agreements")
    page.click("#agent")
    page.locator("[role=option]", has_text="legal-review").first.click()
    assert eventually(page, lambda: "legal-review's saved profile" in page.inner_text("#changes"))
    assert eventually(page, lambda: page.inner_text("#alpha-readout") == "0.50")
    page.wait_for_timeout(1500)
    assert changed_marks(page) == 0 and "0 memories changed tier" in page.inner_text("#change-counts")  # no slider moved
    page.click("#preset-digest")  # recency first: memories change tier, against legal-review's profile
    assert eventually(page, lambda: changed_marks(page) > 0, 60_000)


def test_after_fly_to_query_full_sits_above_summary_above_headline_on_screen(page, served):
    url, mem = served
    query = "limitation of liability cap in CRO agreements"
    # Every candidate, at an alpha that puts some on each terrace of this small store.
    open_scene(page, url + "?budget=whole&alpha=0.5&q=" + query.replace(" ", "+"))
    settled(page)
    page.click("#fly")
    eye = "() => JSON.stringify(document.querySelector('#scene .js-plotly-plot')._fullLayout.scene.camera.eye)"
    seen = [page.evaluate(eye)]

    def landed() -> bool:  # the flight is 24 animation frames, each a redraw: done when the eye stops moving
        seen.append(page.evaluate(eye))
        return len(seen) > 4 and len(set(seen[-4:])) == 1 and seen[-1] != seen[0]

    assert eventually(page, landed, 30_000)
    at = page.evaluate(PROJECT_JS, None)
    whole = mem.search(query, params=Params(alpha=0.5), now=mem.now(), touch=False, record=False)
    ys = {tier: [at[str(hit.id)]["y"] for hit in whole.items if hit.tier == tier and str(hit.id) in at]
          for tier in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE)}
    assert all(len(v) >= 3 for v in ys.values()), {t.name: len(v) for t, v in ys.items()}

    def below(upper: list[float], lower: list[float]) -> float:
        """The share of pairs in which the upper tier's point is drawn lower on screen (larger y)."""
        return sum(u > w for u in upper for w in lower) / (len(upper) * len(lower))

    assert below(ys[Tier.FULL], ys[Tier.SUMMARY]) <= 0.10  # 0.17-0.22 from the old, higher look
    assert below(ys[Tier.SUMMARY], ys[Tier.HEADLINE]) <= 0.10
    assert page.errors == []


@pytest.mark.parametrize("slider", ["alpha", "thresholds"])
def test_clicking_a_sliders_mark_label_sets_that_marks_value(page, served, slider):
    url, _ = served
    open_scene(page, url)

    def values() -> list[float]:
        return page.evaluate(f"() => Array.from(document.querySelectorAll('#{slider} [role=slider]')).map(t => +t.getAttribute('aria-valuenow'))")

    for label, value in (("1", 1.0), ("0", 0.0), ("½", 0.5)):
        mark = page.locator(f"#{slider} .dash-slider-mark", has_text=label).first
        mark.scroll_into_view_if_needed()
        box = mark.bounding_box()
        before = values()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        # The value itself (the track under "1" reads 0.96), on the thumb nearest the mark.
        nearest = min(range(len(before)), key=lambda i: abs(before[i] - value))
        assert eventually(page, lambda value=value: value in values(), 5_000), (label, values())
        assert sorted(values()) == sorted(before[:nearest] + [value] + before[nearest + 1:]), label
    assert page.errors == []


def test_hover_labels_stay_inside_the_scene_at_its_left_and_right_edges(page, served):
    url, mem = served
    page.set_viewport_size({"width": 1280, "height": 720})
    open_scene(page, url + f"?m={mem.columns().ids[0]}")  # a memory open: the scene at its narrowest
    page.wait_for_selector(".panel-id", timeout=30_000)
    settled(page)
    box = page.locator(".scene-box").bounding_box()
    at = {int(k): v for k, v in page.evaluate(PROJECT_JS, None).items()
          if box["x"] + 8 < v["x"] < box["x"] + box["width"] - 8 and box["y"] + 8 < v["y"] < box["y"] + box["height"] - 8}
    labels = dict(zip(page.evaluate(trace_js("memories", "customdata")) + page.evaluate(trace_js("not a candidate", "customdata")),
                      page.evaluate(trace_js("memories", "hovertext")) + page.evaluate(trace_js("not a candidate", "hovertext"))))
    # In each outer third of the scene, the memories with the longest labels.
    third = box["width"] / 3
    left = [k for k in at if at[k]["x"] < box["x"] + third]
    right = [k for k in at if at[k]["x"] > box["x"] + box["width"] - third]
    chosen = [*sorted(left, key=lambda k: -len(labels[k]))[:3], *sorted(right, key=lambda k: -len(labels[k]))[:3]]
    hovered = 0
    for memory_id in chosen:
        unhover(page)
        point = at[memory_id]
        for dx in (0, 1, -1):
            page.mouse.move(point["x"] + dx, point["y"])
            if eventually(page, lambda: page.locator("#scene .hovertext").count() > 0, 2_000):
                break
        else:
            continue  # hidden behind another point
        hovered += 1
        label = page.locator("#scene .hovertext").first.bounding_box()
        assert label["x"] >= box["x"] - 1 and label["x"] + label["width"] <= box["x"] + box["width"] + 1, (memory_id, label, box)
    assert hovered >= 2
    assert page.errors == []


def test_coming_back_to_the_landscape_tab_keeps_the_scene_drawn(page, served):
    url, _ = served
    open_scene(page, url)
    # A mark on the drawn scene's canvas: a scene drawn again on coming back would be a new canvas.
    page.evaluate("() => { document.querySelector('#scene .gl-container canvas').__lodvizMark = 1; }")
    for tab in ("Audit log", "Conflicts", "Tune on evidence"):
        page.click(f".tab >> text={tab}")
        page.wait_for_timeout(300)
        assert not page.is_visible("#scene .gl-container canvas"), tab
        page.click(".tab >> text=Landscape")
        page.wait_for_selector("#scene .gl-container canvas", state="visible", timeout=10_000)
        assert page.evaluate("() => document.querySelector('#scene .gl-container canvas').__lodvizMark") == 1, tab
    assert page.errors == []
