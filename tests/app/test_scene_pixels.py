"""The 3D scene is drawn at the screen's own resolution, not Plotly's default of twice it."""

from __future__ import annotations

import pytest

from .browser import eventually, open_scene

pytestmark = pytest.mark.browser

CANVAS_JS = """() => {
    const canvas = document.querySelector('#scene .gl-container canvas');
    return canvas ? [canvas.width, canvas.getBoundingClientRect().width] : null;
}"""


def canvas_ratio(page) -> float:
    drawn, shown = page.evaluate(CANVAS_JS)
    return drawn / shown


@pytest.fixture
def page_at(browser):
    contexts = []

    def make(scale: float):
        context = browser.new_context(viewport={"width": 1280, "height": 720}, device_scale_factor=scale)
        contexts.append(context)
        page = context.new_page()
        page.errors = []
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        return page

    yield make
    for context in contexts:
        context.close()


def test_a_1x_screen_gets_the_scene_at_1x(page_at, served):
    url, _ = served
    page = page_at(1)
    open_scene(page, url)
    assert canvas_ratio(page) == pytest.approx(1.0, abs=0.02)
    assert page.errors == []


def test_a_2x_screen_gets_the_scene_at_2x(page_at, served):
    url, _ = served
    page = page_at(2)
    open_scene(page, url)
    assert eventually(page, lambda: abs(canvas_ratio(page) - 2.0) < 0.02, 20_000), canvas_ratio(page)
    assert page.errors == []
