"""Take the README's screenshots of the real app on the sample store.

    python scripts/screenshots.py            # writes docs/screenshots/*.png

The README's views at 1600x950 (the landscape, a query, the result as the
agent reads it, a long memory's passages, a replayed past search and the change view after an α move),
the page at 1280x720 and 1920x1080 (the latter after an agent's search, so it
shows the memories it used), and presentation mode.

The app runs on a copy of the sample store (so the tracked file never
changes), in headless Chromium with software WebGL, as a visitor sees it.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

import lodviz  # noqa: E402
from lodviz.app import create_app  # noqa: E402
from tests.app.browser import CHROMIUM, serving  # noqa: E402  (the one browser harness)
from tests.app.browser import CHROMIUM_ARGS as ARGS

OUT = ROOT / "docs" / "screenshots"
QUERY = "limitation of liability cap in CRO master services agreements"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "sample.duckdb"
        shutil.copy(ROOT / "lodviz" / "data" / "lodviz-sample.duckdb", store)
        mem = lodviz.open(store)
        mem.embedder.embed(["warm up"])
        # A pinned precedent near the query, to show "why this tier" with a floor.
        pinned = [hit for hit in mem.search(QUERY, agent_id="legal-review", touch=False).items if hit.floor == lodviz.Tier.FULL]
        app = create_app(mem, place_on_start=False, warm_model=False)
        try:
            with serving(app) as url, sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)

                def shoot(address: str, name: str, wait_for: str, size: tuple[int, int] = (1600, 950), then: str | None = None,
                          keys: tuple[str, str, int] | None = None, scroll_to: str | None = None) -> None:
                    page = browser.new_page(viewport={"width": size[0], "height": size[1]}, device_scale_factor=1)
                    page.goto(address)
                    page.wait_for_selector("#scene .gl-container canvas", timeout=60_000)
                    page.wait_for_function(wait_for, timeout=60_000)
                    page.wait_for_timeout(2500)
                    if then:
                        page.click(then)
                        page.wait_for_timeout(2500)
                    if keys:  # (control, key, presses): a slider moved from the keyboard
                        page.focus(keys[0])
                        for _ in range(keys[2]):
                            page.keyboard.press(keys[1])
                        page.wait_for_function("() => /[1-9]/.test(document.querySelector('#change-counts').innerText)", timeout=60_000)
                        page.wait_for_timeout(2500)
                    if scroll_to:
                        page.eval_on_selector(scroll_to, "e => e.scrollIntoView({block: 'start'})")
                        page.wait_for_timeout(500)
                    page.screenshot(path=str(OUT / name))
                    page.close()
                    print(f"wrote {OUT / name}")

                counted = "() => document.querySelector('#counts').innerText.includes('full')"
                placed = "() => document.querySelector('#scene-note').innerText.includes('Camera at')"
                shoot(url, "landscape.png", counted)
                target = f"&m={pinned[0].id}" if pinned else ""
                legal = f"{url}?q={QUERY.replace(' ', '+')}&agent=legal-review"
                shoot(f"{legal}&terrain=1{target}", "landscape-query.png", placed)
                shoot(legal, "layout-1280x720.png", placed, size=(1280, 720))
                shoot(legal, "result-list.png", "() => !!document.querySelector('#result-text')")
                # A long memory the agent read as an excerpt, opened: how near each passage is, which it received.
                quoted = [hit for hit in mem.search(QUERY, agent_id="legal-review", budget_tokens=2000, touch=False).items if hit.excerpt]
                if quoted:
                    shoot(f"{legal}&m={quoted[0].id}", "passages.png", "() => !!document.querySelector('#panel-strip')",
                          scroll_to=".section-title:has(+ #panel-strip)")
                # An agent searches first (wall clock now), so the scene rings what it used and says who.
                mem.search("what is Korvane Pharma doing that matters for us this week?", agent_id="exec-digest", actor="exec-digest")
                shoot(url, "layout-1920x1080.png", counted, size=(1920, 1080))
                shoot(legal, "presenting-1920x1080.png", placed, size=(1920, 1080), then="#present")
                # A past search replayed: legal-review asks under a budget, then keeps working (usage moves on).
                mem.search(QUERY, agent_id="legal-review", actor="legal-review", budget_tokens=1500)
                event = mem.audit(actions=["search"], limit=1)[0].id
                for later in ("indemnification obligations of the sponsor", "data protection addendum and GDPR transfers"):
                    mem.search(later, agent_id="legal-review", actor="legal-review")
                shoot(f"{url}?replay={event}", "replay.png", "() => (document.querySelector('#replay-verdict') || {}).innerText")
                # What changed: α from legal's 0.50 to 0.30, against its saved profile, over every candidate (budget=whole):
                # within its 2,000-token budget, once its searches above have used these memories, no α changes what it receives.
                shoot(f"{legal}&budget=whole", "changes.png", placed, keys=("#alpha [role=slider]", "ArrowLeft", 4),
                      scroll_to=".card:has(#change-counts)")
                browser.close()
        finally:
            mem.close()


if __name__ == "__main__":
    main()
