"""The demo: a working copy of the bundled sample store under lodviz's home.

The shipped sample store never changes; ``prepare_demo`` copies it to
``$LODVIZ_HOME`` (default ``~/.local/share/lodviz``) once, or again with ``reset``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from lodviz.serve import registry
from lodviz.serve.process import ServeError
from lodviz.settings import SAMPLE_NAME, lodviz_home, sample_store_path


def prepare_demo(reset: bool = False, home: Path | None = None) -> Path:
    """A working copy of the sample store under ``home`` (``lodviz_home()``), copied if needed."""
    source = sample_store_path()
    home = home or lodviz_home()
    target = home / SAMPLE_NAME
    if reset or not target.exists():
        if not source.exists():
            raise ServeError(
                f"the sample store {source} is missing; build it with `python sample_data/build.py` "
                "(or serve your own store with `lodviz serve --store PATH`)."
            )
        running = registry.live_entry(target) if target.exists() else None
        if running is not None:
            raise ServeError(f"the demo store is being served by process {running.pid} at {running.url}; stop it before --reset.")
        home.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".copying")
        shutil.copyfile(source, tmp)
        os.chmod(tmp, 0o644)
        for stale in (target.with_name(target.name + ".wal"), target.with_name(target.name + ".journal")):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        os.replace(tmp, target)
    return target
