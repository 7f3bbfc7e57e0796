"""Hostile import files: each is refused in one sentence that names its place, with nothing written,
or (a byte order mark, a long CSV field) read as the data it holds.

Every import here goes into a real DuckDB store that already holds one memory, through the
command line (``lodviz ingest``) or the library (``read_path``, ``Memory.add_many``); "nothing
written" means the store still holds exactly that memory afterwards.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import lodviz
from lodviz.errors import ImportFormatError, InvalidInput
from lodviz.ingest.importers import read_path
from tests.importing import KEPT, assert_refused_in_one_line, ingest, kept_store, texts

VALID = [json.dumps({"text": f"Site visit {i}: the freezer log at plant {i} was complete."}) for i in range(600)]
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def runner(cli_env):
    return CliRunner(env=cli_env)


@pytest.fixture
def store(tmp_path, runner):
    """A store holding one memory, KEPT."""
    return kept_store(tmp_path, runner)


# -- F2: the whole input is validated before its first row is written ---------------------------------


def test_a_count_the_store_cannot_hold_after_600_good_lines_stops_the_import_before_any_is_written(runner, store, tmp_path, embedder):
    source = tmp_path / "history.jsonl"
    source.write_text("\n".join([*VALID, json.dumps({"text": "Used a great deal.", "retrieval_count": 10**30})]) + "\n")
    result = ingest(runner, store, source)
    assert_refused_in_one_line(result, "history.jsonl line 601", "retrieval_count")
    assert texts(store, embedder) == [KEPT]


def test_the_library_refuses_the_same_batch_before_writing_any_of_it(store, embedder):
    mem = lodviz.open(store, embedder=embedder)
    try:
        records = [json.loads(line) for line in VALID] + [{"text": "Used a great deal.", "retrieval_count": 2**31}]
        with pytest.raises(InvalidInput, match="record 601: retrieval_count"):
            mem.add_many(records)
        assert [r.text for r in mem.export_records()] == [KEPT]
    finally:
        mem.close()


# -- F9: tracebacks become one sentence; a byte order mark is read past --------------------------------


def test_json_nested_100000_deep_in_a_jsonl_line_is_refused_with_its_line(runner, store, tmp_path, embedder):
    source = tmp_path / "deep.jsonl"
    source.write_text(json.dumps({"text": "A fine first line."}) + "\n" + '{"text": "deep", "metadata": {"x": ' + DEEP + "}}\n")
    result = ingest(runner, store, source)
    assert_refused_in_one_line(result, "deep.jsonl line 2", "nested too deeply")
    assert texts(store, embedder) == [KEPT]


@pytest.mark.parametrize("fmt", ["auto", "openai", "chatgpt"])
def test_a_json_file_nested_100000_deep_is_refused_by_every_reader_of_json_files(tmp_path, fmt):
    source = tmp_path / "conversations.json"
    source.write_text(DEEP)
    with pytest.raises(ImportFormatError, match="conversations.json: JSON nested too deeply"):
        read_path(source, fmt)


@pytest.mark.parametrize("created_at", [1e20, float("nan"), -1e12, "0001-01-01T00:00+14:00"], ids=["1e20", "nan", "-1e12", "year-1-at-+14h"])
def test_a_creation_time_no_store_can_hold_is_refused_with_its_line(runner, store, tmp_path, embedder, created_at):
    source = tmp_path / "times.jsonl"
    source.write_text(json.dumps({"text": "A fine first line."}) + "\n" + json.dumps({"text": "When?", "created_at": created_at}) + "\n")
    result = ingest(runner, store, source)
    assert_refused_in_one_line(result, "times.jsonl line 2: created_at")
    assert texts(store, embedder) == [KEPT]


def test_a_chatgpt_message_time_no_store_can_hold_is_refused_with_its_conversation(runner, store, tmp_path, embedder):
    message = {"id": "m1", "author": {"role": "user"}, "create_time": 1e20, "content": {"parts": ["Plan a trip."]}}
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps([{"title": "Trip", "current_node": "m1", "mapping": {"m1": {"id": "m1", "parent": None, "message": message}}}]))
    result = ingest(runner, store, source)
    assert_refused_in_one_line(result, "conversations.json conversation 1", "created_at")
    assert texts(store, embedder) == [KEPT]


def test_the_library_refuses_a_time_that_a_time_zone_carries_before_year_1(store, embedder):
    mem = lodviz.open(store, embedder=embedder)
    try:
        with pytest.raises(InvalidInput, match="created_at '0001-01-01T00:00\\+14:00' is outside"):
            mem.add("Before time began.", created_at="0001-01-01T00:00+14:00")
        assert len(mem) == 1
    finally:
        mem.close()


def test_a_csv_field_longer_than_the_csv_modules_default_limit_is_imported_whole(runner, store, tmp_path, embedder):
    long_text = "The audit log of plant 7, page after page. " * 3_200  # 140,800 characters
    source = tmp_path / "long.csv"
    source.write_text('text,agent_id\n"' + long_text + '",ops\n')
    result = ingest(runner, store, source)
    assert result.exit_code == 0, (result.output, result.exception)
    assert sorted(texts(store, embedder)) == sorted([KEPT, long_text.strip()])


def test_a_csv_field_longer_than_one_memory_holds_is_refused_with_its_line(runner, store, tmp_path, embedder):
    source = tmp_path / "huge.csv"
    source.write_text('text\n"fine"\n"' + "x" * 1_200_000 + '"\n')
    result = ingest(runner, store, source)
    assert_refused_in_one_line(result, "huge.csv line 3", "LODVIZ_MAX_MEMORY_CHARS")
    assert texts(store, embedder) == [KEPT]


@pytest.mark.parametrize(
    "name, content, fmt",
    [
        ("notes.jsonl", json.dumps({"text": "Starts with a byte order mark."}) + "\n", "lodviz"),
        ("session.jsonl", json.dumps({"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "Starts with a byte order mark."}}) + "\n",
         "claude-code"),
        ("messages.json", json.dumps([{"role": "user", "content": "Starts with a byte order mark."}]), "openai"),
        ("note.md", "Starts with a byte order mark.\n", "markdown"),
    ],
    ids=["lodviz-jsonl", "claude-code", "openai-json", "markdown"],
)
def test_a_file_that_starts_with_a_utf8_byte_order_mark_is_imported_without_it(runner, store, tmp_path, embedder, name, content, fmt):
    source = tmp_path / name
    source.write_bytes(b"\xef\xbb\xbf" + content.encode("utf-8"))
    assert read_path(source).format == fmt
    result = ingest(runner, store, source)
    assert result.exit_code == 0, (result.output, result.exception)
    assert sorted(texts(store, embedder)) == sorted([KEPT, "Starts with a byte order mark."])


# -- F12: an unterminated CSV quote -------------------------------------------------------------------


def test_an_unterminated_csv_quote_is_refused_with_the_row_it_opens_in_not_merged_into_one_memory(runner, store, tmp_path, embedder):
    source = tmp_path / "notes.csv"
    source.write_text('text,agent_id\n"The cap is 2x fees,ops\nThe carve-out covers data breaches,ops\nSigned on 3 May,ops\n')
    result = ingest(runner, store, source)
    assert_refused_in_one_line(result, "notes.csv line 2", "never closed")
    assert texts(store, embedder) == [KEPT]
