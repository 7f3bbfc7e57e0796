"""Importing Codex CLI rollouts and Gemini CLI chat recordings (files in tests/fixtures/codex/ and
tests/fixtures/gemini/, written to the upstream types their README.md names).

Imports through the command line go into a real temporary DuckDB store; "nothing written" means
the store still holds exactly the memory it held before.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lodviz
from lodviz.cli import cli
from lodviz.errors import ImportFormatError
from lodviz.ingest.importers import FORMATS, read_path
from lodviz.ingest.transcripts import detect
from tests.importing import KEPT, assert_read_or_refused, assert_refused_in_one_line, ingest, kept_store, texts

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CODEX = FIXTURES / "codex" / "rollout-2026-03-14T10-02-11-0199e0a4-5b7c-7d21-9f3e-2a6c8b1d4e07.jsonl"
CODEX_FIRST = FIXTURES / "codex" / "rollout-2025-05-07T17-24-21-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"
GEMINI = FIXTURES / "gemini" / "session-2026-02-09T16-20-7c1e9a2b.json"
GEMINI_JSONL = FIXTURES / "gemini" / "session-2026-03-02T08-41-3f9d0c55.jsonl"
GEMINI_CHECKPOINT = FIXTURES / "gemini" / "checkpoint-zones-review.json"
GEMINI_LOGS = FIXTURES / "gemini" / "logs.json"
CODEX_SESSION = "0199e0a4-5b7c-7d21-9f3e-2a6c8b1d4e07"
GEMINI_SESSION = "7c1e9a2b-4d6f-4a81-b3c5-9e0d2f4a6b18"


@pytest.fixture
def runner(cli_env):
    return CliRunner(env=cli_env)


@pytest.fixture
def store(tmp_path, runner):
    """A store holding one memory, KEPT."""
    return kept_store(tmp_path, runner)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


# -- telling the formats apart ---------------------------------------------------------------------


@pytest.mark.parametrize("path", [CODEX, CODEX_FIRST], ids=["rollout", "first-rollout-shape"])
def test_a_codex_rollout_is_detected(path):
    assert detect(path) == "codex"


@pytest.mark.parametrize("path", [GEMINI, GEMINI_JSONL, GEMINI_CHECKPOINT, GEMINI_LOGS], ids=["json", "jsonl", "checkpoint", "logs"])
def test_a_gemini_file_is_detected(path):
    assert detect(path) == "gemini"


@pytest.mark.parametrize("name, content, fmt", [
    ("records.jsonl", {"text": "A lodviz record.", "created_at": "2026-01-01T00:00:00Z"}, "lodviz"),
    ("records.jsonl", {"text": "A lodviz record with an id.", "id": "r1", "timestamp": "2026-01-01T00:00:00Z"}, "lodviz"),
    ("messages.jsonl", {"role": "user", "content": "hi"}, "openai"),
    ("claude.jsonl", {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "hi"}}, "claude-code"),
    ("messages.json", [{"role": "user", "content": "hi"}], "openai"),
    ("messages.json", {"messages": [{"role": "user", "content": "hi"}]}, "openai"),
    ("history.json", [{"role": "user", "parts": [{"text": "hi"}]}], "gemini"),
], ids=["lodviz", "lodviz-id-timestamp", "openai-jsonl", "claude-code", "openai-list", "openai-messages", "gemini-checkpoint-list"])
def test_neighbouring_formats_are_not_taken_for_codex_or_gemini(tmp_path, name, content, fmt):
    path = tmp_path / name
    path.write_text(json.dumps(content) + "\n")
    assert detect(path) == fmt


def test_the_format_option_offers_both():
    assert {"codex", "gemini"} <= set(FORMATS)


# -- Codex ---------------------------------------------------------------------------------------------


def test_a_codex_rollout_becomes_turns_and_tool_results():
    parsed = read_path(CODEX)
    assert parsed.format == "codex" and parsed.skipped == []
    assert [(r.kind, r.metadata["role"], r.metadata.get("tools") or r.metadata.get("tool")) for r in parsed.records] == [
        ("turn", "user", None),
        ("turn", "assistant", ["shell"]),  # what it said, then the rg it ran
        ("tool_result", "tool", "shell"),
        ("turn", "assistant", ["apply_patch"]),
        ("tool_result", "tool", "apply_patch"),
        ("turn", "assistant", ["shell"]),
        ("tool_result", "tool", "shell"),
        ("turn", "assistant", None),
    ]
    assert {r.agent_id for r in parsed.records} == {"codex"}


def test_a_codex_turn_shows_the_tool_call_it_made():
    turn = read_path(CODEX).records[1]
    assert turn.text.startswith("I'll search the source for the places that round money.\n[called shell: ")
    assert '"rg -n \\"round\\\\(\\" src"' in turn.text


def test_codex_memories_keep_session_project_branch_model_and_times():
    user, assistant = read_path(CODEX).records[:2]
    assert user.created_at == utc("2026-03-14T10:02:19.031Z") and assistant.created_at == utc("2026-03-14T10:02:24.118Z")
    assert user.source == assistant.source == f"codex:ledger-api/{CODEX_SESSION}"
    assert user.metadata == {"session": CODEX_SESSION, "project": "/home/ravi/src/ledger-api", "role": "user",
                             "git_branch": "fix/statement-rounding"}
    assert assistant.metadata["model"] == "gpt-5-codex"  # from the turn context


def test_codex_reasoning_events_and_injected_context_are_not_memory():
    text = "\n".join(r.text for r in read_path(CODEX).records)
    assert "Locating the rounding" not in text  # reasoning summary, and the agent_reasoning event
    assert "AGENTS.md" not in text and "Money is Decimal" not in text and "<environment_context>" not in text
    assert "permissions instructions" not in text
    assert text.count("Monthly statements are a cent off") == 1  # the user_message event repeats the item


def test_a_codex_shell_output_is_unwrapped_with_its_exit_code():
    results = [r for r in read_path(CODEX).records if r.kind == "tool_result"]
    rg, patch, tests = results
    assert rg.text == "src/statement.py:88:    total = round(sum(float(l.amount) for l in lines), 2)\nsrc/fx.py:17:    return round(value * rate, 4)"
    assert rg.metadata["exit_code"] == 0 and rg.metadata["is_error"] is False and rg.metadata["call_id"] == "call_R7kQm2vX"
    assert patch.text.startswith("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nSuccess.") and patch.metadata["exit_code"] == 0
    assert tests.created_at == utc("2026-03-14T10:02:37.219Z")


def test_a_failed_codex_command_is_marked_an_error(tmp_path):
    lines = CODEX.read_text().splitlines()
    output = json.dumps({"output": "1 failed, 5 passed in 0.44s\n", "metadata": {"exit_code": 1, "duration_seconds": 2.3}})
    lines[18] = json.dumps({"timestamp": "2026-03-14T10:02:37.219Z", "type": "response_item",
                            "payload": {"type": "function_call_output", "call_id": "call_T5vB1yHc", "output": output}})
    path = tmp_path / "failed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    failed = [r for r in read_path(path).records if r.kind == "tool_result"][-1]
    assert failed.text == "1 failed, 5 passed in 0.44s" and failed.metadata["exit_code"] == 1 and failed.metadata["is_error"] is True


def test_the_first_codex_rollout_shape_is_read_with_the_session_start_as_its_time():
    parsed = read_path(CODEX_FIRST)
    assert [(r.kind, r.metadata["role"]) for r in parsed.records] == [
        ("turn", "user"), ("turn", "assistant"), ("tool_result", "tool"), ("turn", "assistant"),
    ]
    call, result = parsed.records[1], parsed.records[2]
    assert call.text == '[called local_shell: {"command": ["bash", "-lc", "lsof -nP -iTCP:8080 -sTCP:LISTEN"], "timeout_ms": 10000}]'
    assert result.metadata["tool"] == "local_shell" and result.text.startswith("COMMAND   PID")
    assert {r.created_at for r in parsed.records} == {utc("2025-05-07T17:24:21.123Z")}  # its items have no times
    assert {r.source for r in parsed.records} == {"codex:5973b6c0-94b8-487b-a530-2aeb6098ae0e"}


def test_a_codex_rollout_of_record_type_lines_is_read(tmp_path):
    session = "5973b6c0-94b8-487b-a530-2aeb6098ae0f"
    lines = [
        {"timestamp": "2025-08-20T09:00:00.100Z", "record_type": "session_meta", "id": session, "cwd": "/home/ravi/src/dns",
         "originator": "codex_cli_rs", "cli_version": "0.23.0", "git": {"branch": "main"}},
        {"timestamp": "2025-08-20T09:00:04.200Z", "record_type": "response", "type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "Why does dig time out?"}]},
        {"timestamp": "2025-08-20T09:00:04.300Z", "record_type": "event", "id": "1", "msg": {"type": "task_started"}},
        {"timestamp": "2025-08-20T09:00:09.900Z", "record_type": "response", "type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Port 53 is blocked by the sandbox's network policy."}]},
        {"timestamp": "2025-08-20T09:00:10.000Z", "record_type": "state"},
    ]
    path = tmp_path / f"rollout-2025-08-20T09-00-00-{session}.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert detect(path) == "codex"
    parsed = read_path(path)
    assert [(r.metadata["role"], r.text) for r in parsed.records] == [
        ("user", "Why does dig time out?"), ("assistant", "Port 53 is blocked by the sandbox's network policy."),
    ]
    assert parsed.records[1].created_at == utc("2025-08-20T09:00:09.900Z")
    assert parsed.records[1].source == f"codex:dns/{session}" and parsed.records[1].metadata["git_branch"] == "main"


def test_a_truncated_last_line_of_a_codex_rollout_is_skipped_and_counted(tmp_path):
    path = tmp_path / "live.jsonl"
    path.write_text(CODEX.read_text() + '{"timestamp": "2026-03-14T10:02:41.002Z", "type": "response_item", "payload": {"type": "mess')
    parsed = read_path(path)
    assert parsed.format == "codex" and len(parsed.records) == 8
    assert parsed.skipped == ["live.jsonl line 23: not valid JSON (Unterminated string starting at); a transcript still being written ends so, skipped"]


def test_the_cli_says_what_it_skipped_of_a_live_rollout(runner, store, tmp_path):
    path = tmp_path / "live.jsonl"
    path.write_text(CODEX.read_text() + '{"timestamp": "2026-03-14T10:02:41.002Z", "type": "resp')
    result = ingest(runner, store, path)
    assert result.exit_code == 0, result.output
    assert "Skipped live.jsonl line 23: not valid JSON" in result.output and "Added 8 memories" in result.output


def test_a_bad_line_in_the_middle_of_a_rollout_is_refused_in_one_line_and_nothing_is_written(runner, store, tmp_path, embedder):
    lines = CODEX.read_text().splitlines()
    lines[9] = lines[9][:50]
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = ingest(runner, store, path)
    assert_refused_in_one_line(result, "broken.jsonl line 10: not valid JSON")
    assert texts(store, embedder) == [KEPT]


def test_a_rollout_line_without_its_payload_is_refused_with_its_line(runner, store, tmp_path, embedder):
    lines = CODEX.read_text().splitlines()
    lines[5] = json.dumps({"timestamp": "2026-03-14T10:02:19.031Z", "type": "response_item", "payload": "lost"})
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = ingest(runner, store, path, "--format", "codex")
    assert_refused_in_one_line(result, "odd.jsonl line 6: a response_item line without its payload object.")
    assert texts(store, embedder) == [KEPT]


def test_watch_picks_up_a_codex_sessions_folder(runner, tmp_path):
    day = tmp_path / "sessions" / "2026" / "03" / "14"
    day.mkdir(parents=True)
    shutil.copy(CODEX, day / CODEX.name)
    result = runner.invoke(cli, ["--store", str(tmp_path / "m.duckdb"), "watch", str(tmp_path / "sessions"), "--once"])
    assert result.exit_code == 0 and f"2026/03/14/{CODEX.name}: added 8 memories; the store holds 8." in result.output, result.output


# -- Gemini --------------------------------------------------------------------------------------------


def test_a_gemini_session_becomes_turns_and_tool_results():
    parsed = read_path(GEMINI)
    assert parsed.format == "gemini" and parsed.skipped == []
    assert [(r.kind, r.metadata["role"], r.metadata.get("tools") or r.metadata.get("tool")) for r in parsed.records] == [
        ("turn", "user", None),
        ("turn", "assistant", ["read_file"]),
        ("tool_result", "tool", "read_file"),
        ("turn", "assistant", ["replace"]),
        ("tool_result", "tool", "replace"),
        ("turn", "user", None),
        ("turn", "assistant", ["run_shell_command"]),  # a message of only its tool call
        ("tool_result", "tool", "run_shell_command"),
        ("turn", "assistant", None),
    ]
    assert {r.agent_id for r in parsed.records} == {"gemini"}


def test_a_gemini_turn_lists_its_calls_and_their_results_follow_it():
    turn, result = read_path(GEMINI).records[1:3]
    assert turn.text == ("I'll look at how the chart converts station times to local time.\n"
                         '[called read_file: {"absolute_path": "/home/mei/src/tide-tables/tides/zones.py"}]')
    assert result.text.startswith("from datetime import timedelta, timezone\n\nLISBON = timezone(timedelta(hours=0))")
    assert result.metadata["tool_call_id"] == "read_file-1770654011904-4f2a1c" and result.metadata["status"] == "success"
    assert result.metadata["is_error"] is False and result.created_at == utc("2026-02-09T16:20:12.418Z")


def test_gemini_memories_keep_session_project_model_and_times():
    user, assistant = read_path(GEMINI).records[:2]
    project_hash = json.loads(GEMINI.read_text())["projectHash"]
    assert user.created_at == utc("2026-02-09T16:20:03.512Z") and assistant.created_at == utc("2026-02-09T16:20:11.904Z")
    assert user.metadata == {"session": GEMINI_SESSION, "project_hash": project_hash, "role": "user"}
    assert assistant.metadata["model"] == "gemini-2.5-pro"
    assert user.source == assistant.source == f"gemini:{project_hash[:8]}/{GEMINI_SESSION}"


def test_gemini_thoughts_are_not_memory():
    text = "\n".join(r.text for r in read_path(GEMINI).records)
    assert "Suspecting a DST offset" not in text and "smells like daylight saving" not in text


def test_a_gemini_jsonl_session_is_replayed_as_the_cli_replays_it():
    parsed = read_path(GEMINI_JSONL)
    said = [r.text.split("\n")[0] for r in parsed.records if r.kind == "turn"]
    assert "Make it return the uptime as well." not in said  # rewound
    assert said.count("I'll add the route next to the others in `app/routes.py`.") == 1  # written twice, the later wins
    assert [r.metadata.get("tool") for r in parsed.records if r.kind == "tool_result"] == ["write_file", "replace"]
    assert "Switched to fallback model" not in "\n".join(r.text for r in parsed.records)  # an info notice
    assert parsed.records[0].text == "Add a /health endpoint that returns the build sha."  # content given as parts


def test_a_failed_gemini_tool_call_is_marked_an_error():
    failed = [r for r in read_path(GEMINI_JSONL).records if r.kind == "tool_result"][-1]
    assert failed.text == "Failed to edit, 0 occurrences found for old_string in app/main.py."
    assert failed.metadata["is_error"] is True and failed.metadata["status"] == "error"


def test_a_truncated_last_line_of_a_gemini_jsonl_session_is_skipped_and_counted(tmp_path):
    path = tmp_path / "live.jsonl"
    path.write_text(GEMINI_JSONL.read_text() + '{"id": "u-4", "timestamp": "2026-03-02T08:43:0')
    parsed = read_path(path)
    assert parsed.format == "gemini" and len(parsed.records) == 7
    assert parsed.skipped == ["live.jsonl line 14: not valid JSON (Unterminated string starting at); a transcript still being written ends so, skipped"]


def test_a_gemini_checkpoint_is_read_without_its_setup_context():
    parsed = read_path(GEMINI_CHECKPOINT)
    assert [(r.kind, r.metadata["role"]) for r in parsed.records] == [
        ("turn", "user"), ("turn", "assistant"), ("tool_result", "tool"), ("turn", "assistant"),
    ]
    text = "\n".join(r.text for r in parsed.records)
    assert "setting up the context" not in text and "Thanks for the context" not in text and "Reading the module" not in text
    assert {r.source for r in parsed.records} == {"gemini:checkpoint/zones-review"}
    assert parsed.records[2].metadata["tool"] == "read_file"


def test_gemini_logs_json_gives_the_prompts_typed():
    parsed = read_path(GEMINI_LOGS)
    assert [(r.text, r.created_at) for r in parsed.records] == [
        ("Since Sunday the Lisbon tide chart shows every high tide an hour early. Why?", utc("2026-02-09T16:20:03.498Z")),
        ("Run the tests.", utc("2026-02-09T16:23:30.101Z")),
    ]
    assert parsed.records[0].metadata == {"session": GEMINI_SESSION, "role": "user"}


@pytest.mark.parametrize("content, args, fragment", [
    ({"sessionId": GEMINI_SESSION, "projectHash": "ab12", "startTime": "2026-02-09T16:20:03.512Z"}, (),
     "session.json: not a Gemini CLI conversation: expected a session file"),
    ({"title": "Trip to Lisbon", "turns": []}, ("--format", "gemini"),
     "session.json: not a Gemini CLI conversation: expected a session file"),
    ({"sessionId": GEMINI_SESSION, "projectHash": "ab12", "messages": [{"id": "m1", "type": "user", "content": "hi"}, "hello"]}, (),
     "session.json message 2: expected a message with 'type' and 'content'."),
], ids=["no-messages", "not-gemini-forced", "message-not-an-object"])
def test_a_gemini_json_that_is_not_a_conversation_is_refused_in_one_line(runner, store, tmp_path, embedder, content, args, fragment):
    path = tmp_path / "session.json"
    path.write_text(json.dumps(content))
    result = ingest(runner, store, path, *args)
    assert_refused_in_one_line(result, fragment)
    assert texts(store, embedder) == [KEPT]


def test_a_gemini_session_cut_short_is_refused_with_its_line(runner, store, tmp_path, embedder):
    path = tmp_path / "session.json"
    path.write_text(GEMINI.read_text()[:900])
    result = ingest(runner, store, path, "--format", "gemini")
    assert_refused_in_one_line(result, "session.json line ", "not valid JSON")
    assert texts(store, embedder) == [KEPT]


def test_a_gemini_jsonl_without_its_session_line_is_refused_in_one_line(runner, store, tmp_path, embedder):
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(GEMINI_JSONL.read_text().splitlines()[1:]) + "\n")
    result = ingest(runner, store, path, "--format", "gemini")
    assert_refused_in_one_line(result, "session.jsonl: not a Gemini CLI session (no line gives its sessionId and projectHash).")
    assert texts(store, embedder) == [KEPT]


def test_a_bad_line_in_the_middle_of_a_gemini_jsonl_is_refused_and_nothing_is_written(runner, store, tmp_path, embedder):
    lines = GEMINI_JSONL.read_text().splitlines()
    lines[3] = lines[3][:40]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = ingest(runner, store, path)
    assert_refused_in_one_line(result, "session.jsonl line 4: not valid JSON")
    assert texts(store, embedder) == [KEPT]


# -- through the command line -----------------------------------------------------------------------


@pytest.mark.parametrize("path, count", [
    (CODEX, 8), (CODEX_FIRST, 4), (GEMINI, 9), (GEMINI_JSONL, 7), (GEMINI_CHECKPOINT, 4), (GEMINI_LOGS, 2),
], ids=["codex", "codex-first-shape", "gemini", "gemini-jsonl", "gemini-checkpoint", "gemini-logs"])
def test_the_cli_imports_each_and_again_adds_nothing(runner, tmp_path, embedder, path, count):
    store = tmp_path / "m.duckdb"
    first = ingest(runner, store, path)
    assert first.exit_code == 0 and f"Added {count} memories, skipped 0 duplicates; the store holds {count}." in first.output, first.output
    again = ingest(runner, store, path)
    assert again.exit_code == 0 and f"Added 0 memories, skipped {count} duplicates; the store holds {count}." in again.output, again.output
    mem = lodviz.open(store, embedder=embedder)
    try:
        kinds = {r.kind for r in mem.export_records()}
    finally:
        mem.close()
    assert kinds <= {"turn", "tool_result"}


def test_imported_sessions_are_their_tools_agents_unless_an_agent_is_given(runner, tmp_path, embedder):
    """As for Claude Code: a transcript names its agent (codex, gemini), so what it holds is that agent's."""
    store = tmp_path / "m.duckdb"
    assert ingest(runner, store, CODEX).exit_code == 0
    assert ingest(runner, store, GEMINI, "--agent", "tides").exit_code == 0
    mem = lodviz.open(store, embedder=embedder)
    try:
        records = list(mem.export_records())
    finally:
        mem.close()
    assert {(r.agent_id, r.visibility) for r in records if r.source.startswith("codex:")} == {("codex", "private")}
    assert {(r.agent_id, r.visibility) for r in records if r.source.startswith("gemini:")} == {("tides", "private")}


# -- any JSON ------------------------------------------------------------------------------------------

#: Any JSON, leaning towards the keys and values these readers look at.
json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
        st.sampled_from(["session_meta", "response_item", "turn_context", "message", "function_call", "function_call_output",
                         "user", "assistant", "gemini", "input_text", "{\"output\": \"x\", \"metadata\": {}}", "Exit code: 2", ""]),
        st.text(max_size=40),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from([
            "type", "payload", "timestamp", "record_type", "id", "cwd", "git", "branch", "model", "role", "content", "text",
            "name", "arguments", "input", "action", "call_id", "output", "metadata", "exit_code", "sessionId", "projectHash",
            "messages", "toolCalls", "args", "result", "functionResponse", "response", "error", "status", "$set",
            "$rewindTo", "parts", "thought", "history", "directories", "displayContent",
        ]), inner, max_size=6),
    ),
    max_leaves=20,
)


@pytest.mark.slow
@pytest.mark.parametrize("fmt, suffix", [("codex", ".jsonl"), ("gemini", ".json"), ("gemini", ".jsonl")])
def test_any_json_is_imported_or_refused_with_its_place(tmp_path, fmt, suffix):
    @settings(max_examples=int(os.environ.get("LODVIZ_FUZZ_EXAMPLES", "80")), deadline=None,
              suppress_health_check=list(HealthCheck), derandomize=os.environ.get("LODVIZ_FUZZ_RANDOM") is None)
    @given(st.lists(json_values, min_size=1, max_size=5))
    def one(values) -> None:
        path = tmp_path / f"input{suffix}"
        if suffix == ".jsonl":
            path.write_text("\n".join(json.dumps(v) for v in values) + "\n")
        else:
            path.write_text(json.dumps({"sessionId": "s", "projectHash": "p", "messages": values}))
        assert_read_or_refused(path, fmt)

    one()


def test_the_reader_errors_are_import_format_errors(tmp_path):
    path = tmp_path / "odd.json"
    path.write_text("42")
    with pytest.raises(ImportFormatError, match=r"odd.json: not a Gemini CLI conversation"):
        read_path(path, "gemini")
