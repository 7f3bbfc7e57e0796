"""Take the README's screenshots of the real app on the sample store.

    python scripts/screenshots.py            # writes docs/screenshots/*.png

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
                page = browser.new_page(viewport={"width": 1600, "height": 950}, device_scale_factor=1)

                def shoot(address: str, name: str, wait_for: str) -> None:
                    page.goto(address)
                    page.wait_for_selector("#scene .gl-container canvas", timeout=60_000)
                    page.wait_for_function(wait_for, timeout=60_000)
                    page.wait_for_timeout(2500)
                    page.screenshot(path=str(OUT / name))
                    print(f"wrote {OUT / name}")

                shoot(url, "landscape.png", "() => document.querySelector('#counts').innerText.includes('full')")
                target = f"&m={pinned[0].id}" if pinned else ""
                shoot(
                    f"{url}?q={QUERY.replace(' ', '+')}&agent=legal-review&terrain=1{target}",
                    "landscape-query.png",
                    "() => document.querySelector('#scene-note').innerText.includes('Camera at')",
                )
                browser.close()
        finally:
            mem.close()


if __name__ == "__main__":
    main()
