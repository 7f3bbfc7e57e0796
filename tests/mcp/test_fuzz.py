"""Every MCP tool fed arbitrary and hostile arguments (hypothesis): it answers or refuses, and the store stays whole.

Hostile strings: script and HTML payloads, SQL metacharacters, NUL and control
characters, right-to-left marks, lone surrogates, and (in test_limits.py) 10 MB
texts and 100,000-character queries.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

import lodviz
from lodviz.mcp_server import TOOL_NAMES, build_mcp
from lodviz.verify import verify

from .conftest import seed_store

HOSTILE = [
    "<script>window.__pwned = 1</script>", '<img src=x onerror="alert(1)">', "'; DROP TABLE memories; --",
    "\" OR 1=1 --", "a\x00b", "\x1b[31mred\x1b[0m", "\u202eevil\u202c", "\ud800lone", "%s%s%n", "../../etc/passwd",
    "{{7*7}}", "${jndi:ldap://x}", "\r\nX-Injected: 1", "null", "", " ", "🙂" * 50,
]
text = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=300))
anything = st.one_of(text, st.integers(min_value=-(2**63), max_value=2**63), st.none(), st.booleans(), st.floats(allow_nan=True),
                     st.lists(text, max_size=5), st.dictionaries(text, text, max_size=3))

ARGS = {
    "memory_search": {"query": anything, "exclude": anything, "k": anything, "budget_tokens": anything},
    "memory_expand": {"memory_id": anything, "around": anything, "width": anything},
    "memory_promote": {"memory_id": anything, "reason": anything},
    "memory_write": {"text": anything, "kind": anything, "metadata": anything, "visibility": anything, "source": anything},
    "memory_recent": {"since": anything, "until": anything, "budget_tokens": anything},
    "memory_unseen": {"limit": anything, "budget_tokens": anything},
    "memory_sample": {"n": anything, "budget_tokens": anything},
}


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.duckdb"
    seed_store(path, embedder)
    mem = lodviz.open(path, embedder=embedder)
    yield mem
    report = verify(mem)  # after every tool was fed everything: the log still accounts for the data
    mem.close()
    assert report.ok, [str(d) for d in report.disagreements[:5]]


def test_the_fuzzed_tools_are_every_tool():
    assert set(ARGS) == set(TOOL_NAMES)


@pytest.mark.parametrize("tool", sorted(ARGS))
def test_a_tool_answers_or_refuses_whatever_it_is_sent(fuzzed, tool, embedder):
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(st.fixed_dictionaries({}, optional=ARGS[tool]), st.sampled_from(["alice", "bob", "x" * 64]))
    def one(args: dict[str, Any], agent: str) -> None:
        async def main():
            async with Client(build_mcp(fuzzed, agent=agent)) as client:
                return await client.call_tool(tool, args)

        result = anyio.run(main)
        assert result.content, "no answer at all"  # a result, or a tool error with its message
        if result.is_error:
            message = result.content[0].text
            assert "Traceback" not in message and len(message) < 2000

    one()
    state, vectors = fuzzed.snapshot()
    records = {r.id: r for r in fuzzed.export_records()}
    assert set(state.ids.tolist()) == set(records)
    assert all(r.text and r.summary and r.headline for r in records.values())


def test_expand_around_answers_or_refuses_whatever_phrase_and_width_it_is_sent(fuzzed):
    """memory_expand's around and width on memories that exist (the general fuzz rarely names one)."""
    ids = fuzzed.columns().ids.tolist()

    # Widths a client can send (a dict keyed by a lone surrogate fails in the client, before any server sees it).
    widths = st.one_of(st.integers(-5, 60), st.integers(), st.none(), st.booleans(), st.floats(allow_nan=True), text)

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(st.sampled_from(ids), text, widths, st.sampled_from(["alice", "bob"]))
    def one(memory_id: int, around: Any, width: Any, agent: str) -> None:
        async def main():
            async with Client(build_mcp(fuzzed, agent=agent)) as client:
                return await client.call_tool("memory_expand", {"memory_id": memory_id, "around": around, "width": width})

        result = anyio.run(main)
        assert result.content
        if result.is_error:
            message = result.content[0].text
            assert "Traceback" not in message and "could not do this" not in message and len(message) < 2000
        else:
            assert result.structured_content["neighbourhood"]["positions"]

    one()
