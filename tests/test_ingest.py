"""Ingestion: compression at write time and the importers' handling of bad files."""

from __future__ import annotations

import json

import pytest

from lodviz.errors import ImportFormatError
from lodviz.ingest.compress import ExtractiveCompressor, split_sentences
from lodviz.ingest.importers import read_any

LONG = (
    "Board, 12 Dec 2024 — decisions: FY2025 operating budget approved at $812M total opex, of which "
    "R&D $561M. Net headcount growth capped at +90. Leiden lab expansion approved (€14M capex over "
    "2025-26). Management authorised to pursue a co-development partner for AUR-610, with a report-back "
    "in February. Dr. Adeyemi will present the TAURUS interim plan. Next meeting 20 Feb 2025."
)


def test_sentences_split_without_breaking_abbreviations():
    assert split_sentences("Dr. Solberg (rev. Nov 2024) agreed. J. Smith did not. Done!") == [
        "Dr. Solberg (rev. Nov 2024) agreed.",
        "J. Smith did not.",
        "Done!",
    ]


def test_summary_is_about_a_fifth_of_a_long_text_and_keeps_its_lead(embedder):
    (out,) = ExtractiveCompressor(embedder).compress([LONG])
    assert out.summary.startswith("Board, 12 Dec 2024")
    assert 0.1 * len(LONG) <= len(out.summary) <= 0.45 * len(LONG)
    assert out.summary in LONG or out.summary.endswith("…")


def test_headline_is_one_short_sentence(embedder):
    (out,) = ExtractiveCompressor(embedder).compress([LONG])
    assert len(out.headline.split()) <= 23
    assert out.headline.count(". ") == 0


def test_the_summary_holds_what_the_headline_says(embedder):
    text = (
        "Helena and Claire asked me to draft the Heron response strategy. "
        "Proposal: accept the audit (item 5) and the second European fill site (item 6) as goodwill, "
        "and push back on the price review in item 3 because the 2024 index clause already covers inflation. "
        "Hold the liability cap at $750k unless Heron concedes the termination-for-convenience window. "
        "Escalate only the data-integrity finding, which needs a root cause before anything is signed. "
        "Send the draft to Gareth by Friday so legal can review it on Monday."
    )
    (out,) = ExtractiveCompressor(embedder).compress([text])
    assert out.headline.rstrip("…").split(" — ")[-1][:40] in out.summary
    assert len(out.headline) <= len(out.summary) < len(text)


def test_short_text_is_its_own_summary(embedder):
    (out,) = ExtractiveCompressor(embedder).compress(["CAPA plan due 30 June."])
    assert out.summary == "CAPA plan due 30 June." and out.headline == "CAPA plan due 30 June."


def test_malformed_jsonl_names_its_line(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"text": "ok"}\n{"text": "fine"}\n{"text": broken\n')
    with pytest.raises(ImportFormatError, match="in.jsonl line 3: not valid JSON"):
        read_any(path)


def test_empty_text_in_jsonl_names_its_line(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"text": "ok"}) + "\n" + json.dumps({"text": "  "}) + "\n")
    with pytest.raises(ImportFormatError, match="line 2: text is empty"):
        read_any(path)


def test_invalid_utf8_names_its_line(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"text": "ok"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(ImportFormatError, match="line 2: not valid UTF-8"):
        read_any(path)


def test_bad_time_names_its_line(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"text": "ok", "created_at": "last Tuesday"}) + "\n")
    with pytest.raises(ImportFormatError, match="line 1: created_at 'last Tuesday'"):
        read_any(path)


def test_csv_rows_become_records_with_json_metadata(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text('text,agent_id,kind,metadata\n"Hello, world",a,turn,"{""k"": 1}"\n')
    (record,) = read_any(path)
    assert (record.text, record.agent_id, record.kind, record.metadata) == ("Hello, world", "a", "turn", {"k": 1})


def test_csv_without_text_column_is_refused(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("body\nhello\n")
    with pytest.raises(ImportFormatError, match="no 'text' column"):
        read_any(path)


def test_folder_of_notes_becomes_documents(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\nSome notes.")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("More notes.")
    (tmp_path / "skip.png").write_bytes(b"\x89PNG")
    records = read_any(tmp_path)
    assert [(r.source, r.kind) for r in records] == [("a.md", "document"), ("sub/b.txt", "document")]
