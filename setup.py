"""Build hook: the app's assets live at the top of the checkout (``assets/``) and ship inside the package.

Everything else about the build is in ``pyproject.toml``. Dash serves the app's
stylesheets and scripts from ``assets/`` when lodviz runs from a checkout; a
wheel carries the same files as ``lodviz/app/assets/``, copied here at build
time, so there is one copy to edit and an installed ``lodviz demo`` looks the
same (``lodviz.app.assets_folder``; ``tests/test_wheel.py`` compares the bytes).
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ASSETS = Path(__file__).resolve().parent / "assets"


class BuildWithAssets(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:  # an editable install serves the checkout's assets/ directly
            self.copy_tree(str(ASSETS), str(Path(self.build_lib) / "lodviz" / "app" / "assets"))


setup(cmdclass={"build_py": BuildWithAssets})
