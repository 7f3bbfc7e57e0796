"""The OpenAI-compatible LLM compressor against a fake endpoint on a real socket.

The fake speaks the chat-completions protocol over HTTP on 127.0.0.1 (port 0,
a thread), records every request and answers deterministically: a summary
request gets ``Summary of <first two words>.``, a headline request gets
``"**<first two words> in one line.**"`` (quotes and Markdown the compressor
must strip). A script of forced answers (status codes, empty content, delays)
drives the failure tests.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from click.testing import CliRunner

import lodviz
from lodviz.cli import cli
from lodviz.errors import CompressorError, InvalidParameters
from lodviz.ingest.llm import OpenAICompressor, clean_headline, clean_summary

KEY = "sk-test-0123456789secret"
LONG = (
    "Board, 12 Dec 2024 — decisions: FY2025 operating budget approved at $812M total opex, of which "
    "R&D $561M. Net headcount growth capped at +90. Leiden lab expansion approved (€14M capex over "
    "2025-26). Management authorised to pursue a co-development partner for AUR-610, with a report-back "
    "in February. Dr. Adeyemi will present the TAURUS interim plan. Next meeting 20 Feb 2025."
)
SHORT = "CAPA plan due 30 June for the Hyderabad site."
LLM_ENV = ("LODVIZ_COMPRESSOR", "LODVIZ_LLM_BASE_URL", "LODVIZ_LLM_MODEL", "LODVIZ_LLM_API_KEY", "OPENAI_API_KEY")


def tag(text: str) -> str:
    return " ".join(text.split()[:2])


class FakeLLM:
    """An OpenAI-compatible chat-completions server that records what it is sent."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[dict[str, Any]] = []  # forced answers, consumed one per request
        self.always: dict[str, Any] | None = None  # a forced answer for every request
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with fake.lock:
                    fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    forced = fake.script.pop(0) if fake.script else fake.always
                forced = forced or {}
                if forced.get("delay"):
                    time.sleep(forced["delay"])
                status = forced.get("status", 200)
                if status != 200:
                    answer = {"error": {"message": forced.get("message", "simulated failure"), "type": "server_error"}}
                else:
                    content = forced["content"] if "content" in forced else fake.answer(body)
                    answer = {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "model": body["model"],
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                    }
                data = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @staticmethod
    def memory_text(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        return re.search(r"<memory>\n(.*)\n</memory>", prompt, re.DOTALL).group(1)

    @staticmethod
    def kind(body: dict[str, Any]) -> str:
        return "headline" if "headline" in body["messages"][-1]["content"] else "summary"

    def answer(self, body: dict[str, Any]) -> str:
        text = self.memory_text(body)
        if self.kind(body) == "headline":
            return f'"**{tag(text)} in one line.**"'
        return f"Summary of {tag(text)}."

    def calls(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.requests if kind is None or self.kind(r["body"]) == kind]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def llm():
    fake = FakeLLM()
    yield fake
    fake.close()


@pytest.fixture
def no_llm_env(monkeypatch):
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)


def compressor(llm: FakeLLM, **options: Any) -> OpenAICompressor:
    options = {"backoff": 0.01, "timeout": 5, **options}
    return OpenAICompressor(llm.url, "fake-model", KEY, **options)


def events(mem) -> int:
    return len(mem.audit(limit=10_000))


# -- the protocol -----------------------------------------------------------------------------


def test_summaries_and_headlines_come_from_the_server_and_are_stored(llm, store_path, embedder):
    mem = lodviz.open(store_path, embedder=embedder, compressor=compressor(llm))
    try:
        long_id, short_id = mem.add_many([{"text": LONG}, {"text": SHORT}]).added
        long, short = mem.get(long_id), mem.get(short_id)
    finally:
        mem.close()
    assert (long.summary, long.headline) == ("Summary of Board, 12.", "Board, 12 in one line.")
    assert (short.summary, short.headline) == (SHORT, "CAPA plan in one line.")
    assert long.text == LONG
    # Two calls for the long text, one for the short one, all the real protocol.
    assert len(llm.calls("summary")) == 1 and len(llm.calls("headline")) == 2
    for request in llm.requests:
        assert request["path"] == "/v1/chat/completions"
        assert request["body"]["model"] == "fake-model"
        assert [m["role"] for m in request["body"]["messages"]] == ["system", "user"]
    summary_prompt = llm.calls("summary")[0]["body"]["messages"][-1]["content"]
    assert "20%" in summary_prompt and LONG in summary_prompt


def test_short_texts_skip_the_summary_call(llm):
    (out,) = compressor(llm).compress([f"  {SHORT}\n"])
    assert out.summary == SHORT and out.headline == "CAPA plan in one line."
    assert len(llm.requests) == 1 and llm.calls("headline")


def test_a_batch_runs_in_parallel_and_keeps_its_order(llm):
    texts = [f"Memory {i:02d} " + "about the supplier audit of the Hyderabad plant. " * 6 for i in range(8)]
    out = compressor(llm, concurrency=4).compress(texts)
    assert [c.headline for c in out] == [f"Memory {i:02d} in one line." for i in range(8)]
    assert [c.summary for c in out] == [f"Summary of Memory {i:02d}." for i in range(8)]
    assert len(llm.requests) == 16


def test_the_authorization_header_carries_the_key(llm):
    compressor(llm).compress([SHORT])
    assert llm.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    OpenAICompressor(llm.url, "fake-model", backoff=0.01).compress([SHORT])
    assert "Authorization" not in llm.requests[1]["headers"]
    assert KEY not in repr(compressor(llm))


def test_a_full_chat_completions_url_is_used_as_it_is(llm):
    OpenAICompressor(llm.url + "/chat/completions/", "fake-model").compress([SHORT])
    assert llm.requests[0]["path"] == "/v1/chat/completions"


# -- retries and failures -------------------------------------------------------------------------


def test_429_then_200_is_retried(llm):
    llm.script = [{"status": 429, "message": "rate limited"}]
    (out,) = compressor(llm).compress([SHORT])
    assert out.headline == "CAPA plan in one line."
    assert len(llm.requests) == 2


def test_a_timeout_is_retried(llm):
    llm.script = [{"delay": 1.0}]
    (out,) = compressor(llm, timeout=0.25).compress([SHORT])
    assert out.headline == "CAPA plan in one line."
    assert len(llm.requests) == 2


def test_persistent_500_raises_a_clear_error_and_leaves_the_store_unchanged(llm, store_path, embedder):
    mem = lodviz.open(store_path, embedder=embedder, compressor=compressor(llm))
    try:
        mem.add(SHORT)
        before = (len(mem), events(mem))
        llm.always = {"status": 500, "message": f"upstream exploded for key {KEY}"}
        with pytest.raises(CompressorError) as caught:
            mem.add_many([{"text": LONG}, {"text": "Another memory about the Leiden lab."}])
        assert (len(mem), events(mem)) == before
    finally:
        mem.close()
    message = str(caught.value)
    assert f"{llm.url}/chat/completions" in message
    assert "500" in message and "after 3 attempts" in message
    assert KEY not in message and "***" in message  # the server's echo of the key is scrubbed
    assert caught.value.status == 500 and caught.value.endpoint == f"{llm.url}/chat/completions"
    assert "\n" not in message


def test_an_auth_error_is_not_retried_and_never_shows_the_key(llm):
    llm.script = [{"status": 401, "message": f"Incorrect API key provided: {KEY}"}]
    with pytest.raises(CompressorError, match="401") as caught:
        compressor(llm).compress([SHORT])
    assert KEY not in str(caught.value) and "LODVIZ_LLM_API_KEY" in str(caught.value)
    assert len(llm.requests) == 1


def test_an_empty_answer_is_refused_and_nothing_is_written(llm, store_path, embedder):
    llm.always = {"content": "  \n "}
    mem = lodviz.open(store_path, embedder=embedder, compressor=compressor(llm))
    try:
        with pytest.raises(CompressorError, match="empty content"):
            mem.add(LONG)
        assert len(mem) == 0 and events(mem) == 0
    finally:
        mem.close()


def test_an_answer_of_only_markdown_is_refused(llm):
    llm.always = {"content": '```\n"**"\n```'}
    with pytest.raises(CompressorError, match="empty headline"):
        compressor(llm).compress([SHORT])


def test_an_unreachable_endpoint_names_itself(llm):
    url = llm.url
    llm.close()
    with pytest.raises(CompressorError, match=r"could not be reached.*after 2 attempts"):
        OpenAICompressor(url, "m", max_retries=1, backoff=0.01, timeout=2).compress([SHORT])


# -- cleaning and configuration ----------------------------------------------------------------------


def test_answers_lose_quotes_markdown_labels_and_reasoning():
    assert clean_headline('<think>Let me see.</think>\nHere is the headline:\n"**Board approves $812M budget.**"') == (
        "Board approves $812M budget."
    )
    assert clean_headline("Headline: *Leiden* lab expansion approved.\n\nIt will cost €14M.") == "Leiden lab expansion approved."
    assert clean_summary("## Summary\nThe board **approved** the budget.\n- Capex €14M.") == (
        "The board approved the budget. Capex €14M."
    )
    assert clean_headline("Dose 5 * 3 * 2 mg") == "Dose 5 * 3 * 2 mg"


def test_settings_are_checked():
    with pytest.raises(CompressorError):
        OpenAICompressor("", "m")
    with pytest.raises(CompressorError, match="http"):
        OpenAICompressor("localhost:11434/v1", "m")
    with pytest.raises(InvalidParameters, match="ratio"):
        OpenAICompressor("http://x/v1", "m", ratio=0)
    with pytest.raises(InvalidParameters, match="concurrency"):
        OpenAICompressor("http://x/v1", "m", concurrency=0)


def test_from_env_falls_back_to_openai_api_key(llm, no_llm_env):
    env = {"LODVIZ_LLM_BASE_URL": llm.url, "LODVIZ_LLM_MODEL": "fake-model", "OPENAI_API_KEY": KEY}
    OpenAICompressor.from_env(env, backoff=0.01).compress([SHORT])
    assert llm.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"


def test_open_by_name_without_configuration_is_refused_before_the_store_is_made(tmp_path, no_llm_env):
    path = tmp_path / "never.duckdb"
    with pytest.raises(CompressorError, match="LODVIZ_LLM_BASE_URL and LODVIZ_LLM_MODEL"):
        lodviz.open(path, compressor="openai")
    assert not path.exists()


# -- the command line --------------------------------------------------------------------------------


def test_cli_ingest_with_the_openai_compressor(llm, tmp_path, embedder, cli_env, no_llm_env):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"text": LONG, "agent_id": "board"}) + "\n" + json.dumps({"text": SHORT}) + "\n")
    store = tmp_path / "cli.duckdb"
    env = {"LODVIZ_LLM_BASE_URL": llm.url, "LODVIZ_LLM_MODEL": "fake-model", "LODVIZ_LLM_API_KEY": KEY, **cli_env}
    result = CliRunner().invoke(cli, ["--store", str(store), "--compressor", "openai", "ingest", str(source)], env=env)
    assert result.exit_code == 0, result.output
    assert "Added 2 memories" in result.output
    assert {r["headers"]["Authorization"] for r in llm.requests} == {f"Bearer {KEY}"}
    with lodviz.open(store, embedder=embedder, read_only=True) as mem:
        stored = {mem.get(i).text: mem.get(i) for i in (1, 2)}
    assert stored[LONG].summary == "Summary of Board, 12." and stored[LONG].headline == "Board, 12 in one line."
    assert stored[SHORT].headline == "CAPA plan in one line."
    # LODVIZ_COMPRESSOR selects it too.
    result = CliRunner().invoke(cli, ["--store", str(store), "add", "Leiden lab opens in May."], env={**env, "LODVIZ_COMPRESSOR": "openai"})
    assert result.exit_code == 0 and "Leiden lab in one line." in result.output


def test_cli_openai_without_configuration_is_one_line_and_status_1(tmp_path, embedder, no_llm_env):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"text": SHORT}) + "\n")
    store = tmp_path / "cli.duckdb"
    result = CliRunner().invoke(cli, ["--store", str(store), "--compressor", "openai", "ingest", str(source)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and "LODVIZ_LLM_BASE_URL" in lines[0]
    assert not store.exists()


@pytest.mark.slow
def test_cli_reports_a_failing_endpoint_in_one_line(llm, tmp_path, embedder, no_llm_env):
    llm.always = {"status": 503}
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"text": SHORT}) + "\n")
    env = {"LODVIZ_LLM_BASE_URL": llm.url, "LODVIZ_LLM_MODEL": "fake-model", "LODVIZ_LLM_API_KEY": KEY}
    # The default backoff (1 s, then 2 s) would make this slow; no retries keeps it quick.
    env = {**env, "LODVIZ_LLM_MAX_RETRIES": "0", "LODVIZ_LLM_TIMEOUT": "5"}
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.duckdb"), "--compressor", "openai", "ingest", str(source)], env=env)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "503" in lines[0] and llm.url in lines[0] and KEY not in lines[0]
    assert len(llm.requests) == 1


def test_cli_refuses_a_bad_timeout_in_one_line(tmp_path, embedder, no_llm_env):
    env = {"LODVIZ_LLM_BASE_URL": "http://127.0.0.1:9/v1", "LODVIZ_LLM_MODEL": "m", "LODVIZ_LLM_TIMEOUT": "soon"}
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.duckdb"), "--compressor", "openai", "add", "x y z"], env=env)
    assert result.exit_code == 1 and result.output.strip() == "Error: LODVIZ_LLM_TIMEOUT must be a number, got 'soon'."
