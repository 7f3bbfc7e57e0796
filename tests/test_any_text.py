"""Any text is either stored whole or refused with one clear error, through every way in.

Property tests (hypothesis) with the deterministic ``HashEmbedder``: what is
pinned is that writing never crashes, not what the model makes of the text.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lodviz
from lodviz.cli import cli
from lodviz.errors import LodvizError
from lodviz.ingest.compress import ExtractiveCompressor, split_sentences
from lodviz.ingest.importers import read_any
from lodviz.testing import HashEmbedder

# Lines that trip sentence splitters: dots, ellipses, bullets, lone punctuation.
AWKWARD_LINES = st.sampled_from(
    ["....", "...", ". . .", "…", "-", "*", "1.", "•", "!?", "\"", "(", ")", ".", "", "   ", "\t", "Dr.", "e.g.", "— —", "...and so on"]
)
WORDS = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=40)
LINE = st.one_of(AWKWARD_LINES, WORDS)
TEXT = st.lists(LINE, min_size=1, max_size=8).map("\n".join)
# Also what must be refused: NUL, lone surrogates, nothing but space.
HOSTILE = st.one_of(TEXT, st.sampled_from(["", "  \n ", "a\x00b", "lone \ud800 surrogate", "\n....\n"]))

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def mem(tmp_path):
    memory = lodviz.open(tmp_path / "any.duckdb", embedder=HashEmbedder())
    yield memory
    memory.close()


@SETTINGS
@given(TEXT)
def test_the_sentence_splitter_is_total(text):
    pieces = split_sentences(text)
    assert all(piece.strip() for piece in pieces)


@SETTINGS
@given(st.lists(TEXT, min_size=1, max_size=4))
def test_the_extractive_compressor_is_total(texts):
    for text, out in zip(texts, ExtractiveCompressor(HashEmbedder(), short_threshold=10).compress(texts)):
        if text.strip():
            assert out.headline.strip() and out.summary.strip()


SENTENCE = st.lists(st.sampled_from("the cap is 2x fees data breach carve-out Paragon agreed on 3 May hi thanks".split()), min_size=1, max_size=30).map(
    lambda words: " ".join(words).capitalize() + "."
)


@SETTINGS
@given(st.lists(SENTENCE, min_size=1, max_size=12).map(" ".join))
def test_a_headline_is_never_longer_than_its_summary(text):
    (out,) = ExtractiveCompressor(HashEmbedder()).compress([text])
    assert len(out.headline) <= len(out.summary) <= len(text)


@pytest.mark.slow
@SETTINGS
@given(HOSTILE)
def test_add_stores_the_text_whole_or_refuses_it_clearly(mem, text):
    before = len(mem)
    try:
        memory_id = mem.add(text, agent_id="fuzz")
    except LodvizError as exc:
        assert str(exc) and "\n" not in str(exc)
        assert len(mem) == before
        return
    record = mem.get(memory_id)
    assert record.text.split() == text.split()  # the same text, or the duplicate it folds to
    assert record.summary.strip() and record.headline.strip()


@pytest.mark.slow
@SETTINGS
@given(st.lists(HOSTILE, min_size=1, max_size=5), st.sampled_from(["jsonl", "csv", "md"]))
def test_every_importer_stores_the_file_whole_or_refuses_it(mem, texts, fmt):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"in.{fmt}"
        if fmt == "jsonl":
            path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8", errors="surrogatepass")
        elif fmt == "csv":
            import csv

            with open(path, "w", encoding="utf-8", errors="surrogatepass", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(["text"])
                writer.writerows([t] for t in texts)
        else:
            path.write_text(texts[0], encoding="utf-8", errors="surrogatepass")
        before = len(mem)
        try:
            report = mem.add_many(read_any(path, {"agent_id": "fuzz"}))
        except LodvizError as exc:
            assert str(exc) and "\n" not in str(exc)
            assert len(mem) == before  # nothing half-written
            return
        assert len(mem) == before + len(report.added)
        for memory_id in report.added:
            assert mem.get(memory_id).headline.strip()


@pytest.mark.slow
@pytest.mark.parametrize("text", ["tests\n....", "....", "...\n. . .\n…", "ok.\n\n-\n*"])
def test_the_cli_add_of_punctuation_lines_stores_or_says_one_line(tmp_path, embedder, text):
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "cli.duckdb"), "add", text])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.exit_code == 0 and result.output.startswith("Stored memory")
