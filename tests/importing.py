"""What the import tests share: a CLI runner, a store holding one memory, and how a refusal must look.

A refused import prints one line starting ``Error:``, exits 1 with no
traceback, and the store still holds exactly what it held (``texts``).
Each test module keeps its own ``runner`` and ``store`` fixtures (pytest finds fixtures by module).
"""

from __future__ import annotations

from click.testing import CliRunner, Result

import lodviz
from lodviz.cli import cli
from lodviz.errors import LodvizError
from lodviz.ingest.importers import read_path

#: The one memory a ``store`` holds before an import.
KEPT = "Paragon Clinical MSA: liability cap at 2x annual fees, carve-out for data breaches."


def kept_store(tmp_path, runner: CliRunner):
    """A new store in ``tmp_path`` holding one memory, KEPT, of the agent ``legal``."""
    path = tmp_path / "memory.duckdb"
    result = runner.invoke(cli, ["--store", str(path), "add", KEPT, "--agent", "legal"])
    assert result.exit_code == 0, result.output
    return path


def texts(path, embedder) -> list[str]:
    mem = lodviz.open(path, embedder=embedder)
    try:
        return [record.text for record in mem.export_records()]
    finally:
        mem.close()


def ingest(runner: CliRunner, store, source, *args) -> Result:
    return runner.invoke(cli, ["--store", str(store), "ingest", str(source), *args])


def assert_refused_in_one_line(result: Result, *fragments: str) -> None:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1 and lines[0].startswith("Error: "), (result.output, result.exception)
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def assert_read_or_refused(path, fmt: str) -> None:
    """``path`` in format ``fmt`` is either read into records that all hold text, or refused with a message."""
    try:
        parsed = read_path(path, fmt)
    except LodvizError as exc:
        assert str(exc) and "Traceback" not in str(exc)
        return
    assert all(r.text.strip() for r in parsed.records)
