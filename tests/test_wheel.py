"""A built wheel, installed outside the source checkout, runs `lodviz demo`: the checkout's assets/ and the sample store included."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

import lodviz
from tests.mcp.conftest import child_env

ROOT = Path(__file__).resolve().parents[1]
SKIP = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "results", "*.building.*", "*.wal")

pytestmark = [pytest.mark.slow, pytest.mark.model]


def run(*args: str | Path, cwd: Path) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel in it (dependencies reused from this one)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=SKIP)  # a build writes into its tree: never into the checkout
    run(sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-q", "-w", tmp / "dist", cwd=source)
    (wheel,) = (tmp / "dist").glob("lodviz-*.whl")
    shutil.rmtree(source)
    venv = tmp / "venv"
    run(sys.executable, "-m", "venv", "--system-site-packages", venv, cwd=tmp)
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel, cwd=tmp)
    return venv


def test_the_wheel_is_what_the_environment_imports(installed):
    where = run(installed / "bin" / "python", "-c", "import lodviz; print(lodviz.__file__)", cwd=installed.parent)
    assert Path(where.strip()).is_relative_to(installed)


def test_the_installed_demo_serves_the_page_its_stylesheet_and_the_sample_store(installed):
    tmp = installed.parent
    env = child_env(tmp)
    command = [str(installed / "bin" / "lodviz"), "demo", "--no-open", "--port", "0"]
    server_process = subprocess.Popen(command, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = ""
        assert server_process.stdout is not None
        for line in server_process.stdout:
            if line.startswith("lodviz is serving"):
                banner = line
                break
        assert banner, server_process.stderr.read() if server_process.stderr else ""
        url = banner.split(" at ", 1)[1].split(" ", 1)[0]
        served_copy = Path(banner.split("lodviz is serving ", 1)[1].split(" at ", 1)[0])
        assert served_copy.is_relative_to(tmp / "home")  # a working copy, in LODVIZ_HOME
        with urllib.request.urlopen(url, timeout=60) as response:
            page = response.read().decode()
        stylesheet = re.search(r'href="([^"]*style\.css[^"]*)"', page)
        assert stylesheet, "the page links no stylesheet"
        with urllib.request.urlopen(url.rstrip("/") + stylesheet.group(1), timeout=30) as response:
            css = response.read().decode()
        assert response.status == 200 and "lodviz: the memory landscape" in css
        assert "picking.js" in page  # the scene's picking script ships too
        # Every file of the checkout's assets/ is served, byte for byte: one copy, edited there, shipped in the wheel.
        assets = sorted(p for p in (ROOT / "assets").iterdir() if p.is_file())
        assert {p.name for p in assets} >= {"style.css", "picking.js", "keys.js"}
        for path in assets:
            with urllib.request.urlopen(f"{url.rstrip('/')}/assets/{path.name}", timeout=30) as response:
                assert response.status == 200, path.name
                assert response.read() == path.read_bytes(), path.name
    finally:
        server_process.terminate()
        try:
            server_process.wait(15)
        except subprocess.TimeoutExpired:
            server_process.kill()
    # What it served is a copy of the packaged sample store: thousands of memories of three agents.
    with lodviz.open(served_copy, read_only=True) as mem:
        assert mem.info().memories >= 3000
        assert set(mem.agents()) == {"clinical-research", "exec-digest", "legal-review"}
