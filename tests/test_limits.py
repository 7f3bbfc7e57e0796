"""Limits: a 10 MB memory, a 100,000-character query, a huge k, too many exclude terms, too many requests.

Each is refused with one sentence that names the limit and its setting, through
the library, the CLI and the MCP server, and nothing already stored changes.
"""

from __future__ import annotations

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

import lodviz
from lodviz.cli import cli
from lodviz.errors import InvalidInput, InvalidParameters
from lodviz.limits import Limits
from lodviz.mcp_server import build_mcp

TEN_MB = "word " * (2 * 1024 * 1024)
LONG_QUERY = "q" * 100_000


@pytest.fixture
def small(mem):
    mem.add("The quarterly supplier audit found three issues.", agent_id="ops")
    return mem


def test_a_10_mb_memory_is_refused_and_nothing_is_stored(small):
    with pytest.raises(InvalidInput, match=r"one memory holds at most 1,000,000 \(LODVIZ_MAX_MEMORY_CHARS\)"):
        small.add(TEN_MB, agent_id="ops")
    assert len(small) == 1


def test_a_100000_character_query_is_refused(small):
    with pytest.raises(InvalidInput, match=r"the query is 100,000 characters; at most 4,000 \(LODVIZ_MAX_QUERY_CHARS\)"):
        small.search(LONG_QUERY)
    with pytest.raises(InvalidInput, match="at most 4,000"):
        small.landscape(LONG_QUERY)


def test_k_and_exclude_terms_have_limits(small):
    with pytest.raises(InvalidParameters, match=r"at most 100,000 memories \(LODVIZ_MAX_K\)"):
        small.search("audit", k=200_000)
    with pytest.raises(InvalidInput, match=r"21 exclude terms; at most 20"):
        small.search("audit", exclude=[f"topic {i}" for i in range(21)])


def test_limits_come_from_the_environment_and_a_bad_value_keeps_the_default(monkeypatch, caplog):
    monkeypatch.setenv("LODVIZ_MAX_QUERY_CHARS", "10")
    monkeypatch.setenv("LODVIZ_MAX_K", "many")
    limits = Limits.from_env()
    assert limits.max_query_chars == 10 and limits.max_k == 100_000
    assert "LODVIZ_MAX_K='many' is not a whole number" in caplog.text


def test_the_cli_refuses_in_one_line(tmp_path, cli_env):
    store = str(tmp_path / "cli.duckdb")
    runner = CliRunner()
    assert runner.invoke(cli, ["--store", store, "add", "A first memory."], env=cli_env).exit_code == 0
    result = runner.invoke(cli, ["--store", store, "search", LONG_QUERY], env=cli_env)
    assert result.exit_code == 1 and result.output.strip().startswith("Error: the query is 100,000 characters")
    assert len(result.output.strip().splitlines()) == 1


def test_the_mcp_server_refuses_as_a_tool_error_and_keeps_answering(small):
    async def main():
        async with Client(build_mcp(small, agent="ops")) as client:
            long = await client.call_tool("memory_search", {"query": LONG_QUERY})
            huge = await client.call_tool("memory_write", {"text": TEN_MB})
            fine = await client.call_tool("memory_search", {"query": "supplier audit"})
            return long, huge, fine

    long, huge, fine = anyio.run(main)
    assert long.is_error and "LODVIZ_MAX_QUERY_CHARS" in long.content[0].text
    assert huge.is_error and "LODVIZ_MAX_MEMORY_CHARS" in huge.content[0].text
    assert not fine.is_error and len(small) == 1


@pytest.mark.slow
def test_too_many_requests_from_one_identity_get_429(tmp_path, embedder):
    from tests.mcp.conftest import ServeProcess, child_env, http_json

    mem = lodviz.open(tmp_path / "rate.duckdb", embedder=embedder)
    mem.add("One memory.", agent_id="ops")
    _, vera = mem.create_token("vera", "viewer")
    _, otto = mem.create_token("otto", "viewer")
    mem.close()
    env = {**child_env(tmp_path), "LODVIZ_RATE_LIMIT": "5"}
    server = ServeProcess(tmp_path / "rate.duckdb", env, args=("--auth",)).start()
    try:
        statuses = [http_json(server.url + "_dash-layout", headers={"Authorization": f"Bearer {vera}"})[0] for _ in range(7)]
        other = http_json(server.url + "_dash-layout", headers={"Authorization": f"Bearer {otto}"})[0]
    finally:
        server.stop()
    assert statuses[:5] == [200] * 5 and statuses[5:] == [429, 429]
    assert other == 200  # per identity: another one is not held back
