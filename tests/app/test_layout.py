"""The landscape at the sizes people present it: 1280x720 and 1920x1080, in real Chromium.

Labels never sit on one another, every control can be reached, the scene keeps
the width while nothing is open, a plain click on or near a point opens it,
and presentation mode gives the room the scene.
"""

from __future__ import annotations

import re

import pytest

from .browser import PROJECT_JS, eventually, most_isolated, new_page, open_scene, settled

pytestmark = pytest.mark.browser
pytest.importorskip("playwright.sync_api")

SIZES = [(1280, 720), (1920, 1080)]
QUERY = "limitation of liability cap in CRO agreements"

# Every label drawn over or beside the scene, as on-screen boxes.
LABEL_BOXES_JS = """
() => {
  const box = (el, name) => { const r = el.getBoundingClientRect(); return {name, left: r.left, top: r.top, right: r.right, bottom: r.bottom}; };
  const out = Array.from(document.querySelectorAll('#scene .annotation-scene'))
    .filter(g => g.style.opacity !== '0' && g.style.display !== 'none')
    .map(g => box(g.querySelector('.annotation-text-g'), 'label ' + g.textContent));
  out.push(box(document.querySelector('#scene-note'), 'caption'));
  out.push(box(document.querySelector('.legend'), 'legend'));
  return out;
}
"""

# Controls a person must be able to reach in the sidebar, by selector.
CONTROLS = [
    "#query", "#exclude", "#search", "#fly", "#clear", "#open-memory", "#agent",
    "#preset-research", "#preset-digest", "#preset-legal", "#save-profile",
    "#alpha [role=slider]", "#lambda [role=slider]", "#thresholds [role=slider]", "#k [role=slider]",
    "#now", "#reference-pick", "#pin-reference", "#time-slider [role=slider]", "#time-live",
    "#color-by", "#terrain", "#refit",
]


@pytest.fixture(params=SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def sized(request, warm_context):
    width, height = request.param
    with new_page(warm_context, {"width": width, "height": height}) as page:
        yield page


def overlapping(boxes: list[dict]) -> list[tuple[str, str]]:
    pairs = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]:
                pairs.append((a["name"], b["name"]))
    return pairs


def panel_width(page) -> float:
    return page.evaluate("() => document.querySelector('.panel').getBoundingClientRect().width")


def scene_width(page) -> float:
    return page.evaluate("() => document.querySelector('.scene-box').getBoundingClientRect().width")


@pytest.mark.parametrize("view", ["no query", "query", "query, memory open"])
def test_labels_legend_and_caption_never_overlap(sized, served, view):
    url, mem = served
    address = url if view == "no query" else f"{url}?q={QUERY.replace(' ', '+')}"
    if view.endswith("memory open"):
        address += f"&m={int(mem.columns().ids[0])}"
    open_scene(sized, address)
    if view.endswith("memory open"):
        sized.wait_for_selector(".panel-id")
    settled(sized)
    boxes = sized.evaluate(LABEL_BOXES_JS)
    assert len([b for b in boxes if b["name"].startswith("label")]) == 6  # four terraces, two ground axes
    assert overlapping(boxes) == []
    scene = sized.evaluate("() => document.querySelector('.stage').getBoundingClientRect().toJSON()")
    for b in boxes:  # whole, inside the scene's column: not cut off, not under the sidebar or the panel
        assert b["left"] >= scene["left"] and b["right"] <= scene["right"] and b["top"] >= scene["top"] and b["bottom"] <= scene["bottom"], b


def test_every_control_can_be_reached_and_is_not_covered(sized, served):
    url, _ = served
    open_scene(sized, url)
    viewport = sized.viewport_size
    for selector in CONTROLS:
        control = sized.locator(selector).first
        control.scroll_into_view_if_needed()
        box = control.bounding_box()
        assert box is not None, selector
        cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        assert 0 <= cx <= viewport["width"] and 0 <= cy <= viewport["height"], selector
        on_top = sized.evaluate(
            "([sel, x, y]) => { const el = document.querySelector(sel), hit = document.elementFromPoint(x, y); return !!hit && (el === hit || el.contains(hit) || hit.contains(el)); }",
            [selector, cx, cy],
        )
        assert on_top, f"{selector} is covered at {sized.viewport_size}"


def test_the_scene_keeps_the_width_until_a_memory_is_open(sized, served):
    url, mem = served
    open_scene(sized, url)
    width = sized.viewport_size["width"]
    assert panel_width(sized) < 2 and scene_width(sized) > 0.7 * width
    target = int(mem.columns().ids[5])
    sized.fill("#open-memory", f"#{target}")
    sized.press("#open-memory", "Enter")
    assert eventually(sized, lambda: sized.is_visible(".panel-id") and f"#{target} " in sized.inner_text(".panel-id"), 20_000)
    assert panel_width(sized) > 300
    sized.click("#panel-close")
    assert eventually(sized, lambda: panel_width(sized) < 2, 10_000)
    assert "m=" not in sized.url


@pytest.mark.parametrize("offset", [0, 9], ids=["on the point", "9 px beside it"])
def test_a_plain_click_on_or_near_a_point_opens_it(sized, served, offset):
    url, mem = served
    open_scene(sized, url)
    settled(sized)
    at = sized.evaluate(PROJECT_JS, None)
    state = mem.columns()
    memory_id = most_isolated(at, state.ids.tolist())
    point = at[str(memory_id)]
    sized.mouse.click(point["x"] + offset, point["y"])  # no hover first: one press and release
    assert eventually(sized, lambda: sized.is_visible(".panel-id") and sized.inner_text(".panel-id").startswith(f"#{memory_id} "), 20_000)
    assert f"m={memory_id}" in sized.url


def test_a_drag_turns_the_camera_and_opens_nothing(sized, served):
    url, mem = served
    open_scene(sized, url)
    settled(sized)
    at = sized.evaluate(PROJECT_JS, None)
    point = at[str(most_isolated(at, mem.columns().ids.tolist()))]
    sized.mouse.move(point["x"], point["y"])
    sized.mouse.down()
    sized.mouse.move(point["x"] + 60, point["y"] + 10, steps=6)
    sized.mouse.up()
    sized.wait_for_timeout(1500)
    assert not sized.is_visible(".panel-id")


def test_a_memory_opens_by_id_from_the_sidebar(sized, served):
    url, mem = served
    open_scene(sized, url)
    target = int(mem.columns().ids[-3])
    sized.fill("#open-memory", f"#{target}")
    sized.press("#open-memory", "Enter")
    assert eventually(sized, lambda: sized.is_visible(".panel-id") and f"#{target} " in sized.inner_text(".panel-id"), 20_000)
    assert sized.errors == []


def test_presentation_mode_gives_the_scene_the_screen_and_the_query_the_title(sized, served):
    url, _ = served
    open_scene(sized, f"{url}?q={QUERY.replace(' ', '+')}")
    width = sized.viewport_size["width"]
    sized.click("#present")
    assert eventually(sized, lambda: scene_width(sized) > 0.97 * width, 10_000)
    assert not sized.is_visible(".controls") and not sized.is_visible("#tabs")
    assert sized.inner_text("#present-title") == f"“{QUERY}”"
    assert re.search(r"\d+\s+full", sized.inner_text("#counts"))  # the counts stay on screen
    title_px = float(sized.evaluate("() => parseFloat(getComputedStyle(document.querySelector('#present-title')).fontSize)"))
    assert title_px >= 28
    sized.keyboard.press("Escape")
    assert eventually(sized, lambda: sized.is_visible(".controls"), 10_000)
    assert scene_width(sized) < 0.9 * width


#: The share of the window's width the terraces span on screen (their corners, projected as WebGL draws them).
TERRACE_SPAN_JS = """
() => {
  const gd = document.querySelector('#scene .js-plotly-plot');
  const sc = gd._fullLayout.scene._scene, cp = sc.glplot.cameraParams, ds = sc.dataScale;
  const xf = (m, v) => [0, 1, 2, 3].map(r => m[r] * v[0] + m[4 + r] * v[1] + m[8 + r] * v[2] + m[12 + r] * v[3]);
  const xs = [];
  gd._fullData.filter(t => t.type === 'mesh3d').forEach(t => {
    for (let i = 0; i < t.x.length; i++) {
      const c = xf(cp.projection, xf(cp.view, xf(cp.model, [t.x[i] * ds[0], t.y[i] * ds[1], t.z[i] * ds[2], 1])));
      xs.push(Math.min(1, Math.max(0, 0.5 * c[0] / c[3] + 0.5)));
    }
  });
  return (Math.max(...xs) - Math.min(...xs)) * gd.getBoundingClientRect().width / window.innerWidth;
}
"""


def test_presentation_mode_spreads_the_terraces_across_the_width_and_names_them_in_large_type(sized, served):
    url, _ = served
    open_scene(sized, f"{url}?q={QUERY.replace(' ', '+')}")
    view = """() => { const s = document.querySelector('#scene .js-plotly-plot')._fullLayout.scene;
                      return JSON.stringify([s.camera.eye, s.aspectratio]); }"""
    terrace_px = """() => Array.from(document.querySelectorAll('#scene .annotation-text'))
        .filter(t => ['FULL', 'SUMMARY', 'HEADLINE', 'OUT'].includes(t.textContent)).map(t => parseFloat(getComputedStyle(t).fontSize))"""
    desk = sized.evaluate(view)
    assert max(sized.evaluate(terrace_px)) < 20
    sized.click("#present")
    assert eventually(sized, lambda: sized.evaluate(TERRACE_SPAN_JS) >= 0.7, 10_000)  # 0.45 at 1280x720, 0.56 at 1920x1080 before
    assert eventually(sized, lambda: min(sized.evaluate(terrace_px)) >= 24, 10_000)  # readable across a room
    sized.keyboard.press("Escape")
    assert eventually(sized, lambda: sized.evaluate(view) == desk, 10_000)
    assert eventually(sized, lambda: max(sized.evaluate(terrace_px)) < 20, 10_000)


def test_presentation_mode_keeps_its_stage_when_a_new_figure_arrives(sized, served):
    url, _ = served
    open_scene(sized, url)
    sized.fill("#query", QUERY)
    sized.click("#present")
    assert eventually(sized, lambda: sized.evaluate(TERRACE_SPAN_JS) >= 0.7, 10_000)
    # A query sends a whole new figure, which comes with the desk's camera (the button is hidden on the stage).
    sized.evaluate("() => document.getElementById('search').click()")
    sized.wait_for_function("() => document.querySelector('#scene .js-plotly-plot')._fullData.find(t => t.name === 'query camera').x.length === 1",
                            timeout=20_000)
    assert eventually(sized, lambda: sized.evaluate(TERRACE_SPAN_JS) >= 0.7, 10_000)


CLIPPED_JS = """
(sel) => { const el = document.querySelector(sel); if (!el) return null;
  return {w: el.scrollWidth - el.clientWidth, h: el.scrollHeight - el.clientHeight, shown: el.getBoundingClientRect().width > 0}; }
"""


def header_box(page) -> dict:
    return page.evaluate("""() => ({header: document.querySelector('.header').getBoundingClientRect().height,
                                     store: document.querySelector('.store-info').getBoundingClientRect().width})""")


def test_the_auth_notice_is_whole_in_every_view(sized, served):
    url, _ = served
    open_scene(sized, f"{url}?q={QUERY.replace(' ', '+')}")
    for view in ("landscape", "present"):
        if view == "present":
            sized.click("#present")
            sized.wait_for_timeout(500)
        clipped = sized.evaluate(CLIPPED_JS, "#access-mode")
        assert clipped["shown"] and clipped["w"] <= 0 and clipped["h"] <= 0, (view, clipped)
        assert "any local process can act as any agent" in sized.get_attribute("#access-mode", "title")


def test_a_live_update_message_does_not_grow_the_header_or_squeeze_the_store_name(sized, served):
    url, mem = served
    open_scene(sized, url)
    before = header_box(sized)
    mem.add("An agent wrote this through MCP while the page was open, with a long enough text to matter.", agent_id="exec-digest")
    assert eventually(sized, lambda: sized.inner_text("#sync-status").startswith("Updated:"), 20_000)
    after = header_box(sized)
    assert after["header"] <= before["header"] + 1 and after["store"] >= before["store"] - 1, (before, after)
    assert sized.get_attribute("#sync-status > span", "title").startswith("Updated:")  # all of it on hover


def test_a_long_token_wraps_inside_the_panel_title(sized, served):
    url, mem = served
    token = "https://trials.example.org/" + "x" * 140
    memory_id = mem.add(f"{token} is where the protocol lives.", agent_id="legal-review")
    open_scene(sized, f"{url}?m={memory_id}")
    sized.wait_for_selector("#panel-headline")
    clipped = sized.evaluate(CLIPPED_JS, "#panel-headline")
    assert clipped["w"] <= 0, clipped


def test_the_alpha_slider_is_in_view_without_scrolling(sized, served):
    url, _ = served
    open_scene(sized, url)
    # The sliders can be drawn after the scene (their code arrives with the page's other components).
    sized.wait_for_selector("#alpha .dash-slider-mark", state="attached", timeout=20_000)
    bottom = sized.evaluate("() => document.querySelector('#alpha').getBoundingClientRect().bottom")
    assert bottom <= sized.viewport_size["height"] - 8, bottom  # its marks included, above the fold


def test_the_time_slider_labels_do_not_overlap(sized, served):
    url, _ = served
    open_scene(sized, url)
    # The sidebar may still be rendering when the scene's counts show (a loaded machine).
    sized.wait_for_function("() => document.querySelectorAll('#time-slider [class*=mark]').length >= 3", timeout=20_000)
    boxes = sized.evaluate("""() => Array.from(document.querySelectorAll('#time-slider [class*=mark]'))
        .filter(el => el.children.length === 0 && el.textContent.trim())
        .map(el => { const r = el.getBoundingClientRect(); return {name: el.textContent, left: r.left, top: r.top, right: r.right, bottom: r.bottom}; })""")
    assert len(boxes) >= 3, boxes
    boxes.sort(key=lambda b: b["left"])
    gaps = [b["left"] - a["right"] for a, b in zip(boxes, boxes[1:])]
    assert min(gaps) >= 12, boxes  # apart at a glance, whatever the font


def test_present_mode_says_whose_memory_at_which_alpha_and_what_a_search_returns(sized, served):
    url, mem = served
    open_scene(sized, f"{url}?q={QUERY.replace(' ', '+')}&agent=legal-review")
    sized.click("#present")
    # The subtitle's text is kept current outside the mode too; the mode is the class on the page.
    assert eventually(sized, lambda: sized.evaluate("() => document.getElementById('app').classList.contains('presenting')"), 10_000)
    profile = mem.profile("legal-review")
    expected = f"legal-review · α {profile.alpha:.2f} · a search returns at most {profile.budget:,} tokens"
    assert eventually(sized, lambda: sized.inner_text("#present-sub") == expected, 10_000), sized.inner_text("#present-sub")
    sub_px = float(sized.evaluate("() => parseFloat(getComputedStyle(document.querySelector('#present-sub')).fontSize)"))
    assert sub_px >= 20  # readable across a room
    leave = sized.evaluate("""() => { const b = document.querySelector('#present'); const r = b.getBoundingClientRect();
        return {right: r.right, cut: b.scrollWidth - b.clientWidth}; }""")
    assert leave["right"] <= sized.viewport_size["width"] and leave["cut"] <= 0, leave  # the way out stays on screen, whole
    sized.keyboard.press("Escape")
    assert eventually(sized, lambda: not sized.is_visible("#present-sub"), 10_000)
