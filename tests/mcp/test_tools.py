"""The MCP tools in process: the SDK's client against ``build_mcp(mem)``.

Fast: no subprocess. The same tools are driven over stdio and HTTP in
test_stdio.py and test_http.py.
"""

from __future__ import annotations

import shutil
from typing import Any

import anyio
import pytest
from mcp import Client

import lodviz
from lodviz.mcp_server import INSTRUCTIONS, TOOL_NAMES, build_mcp

from .conftest import SEED, seed_store

SPEC_FIELDS = {"id", "tier", "content", "similarity", "decay", "score", "retrieval_count", "last_retrieved_at", "created_at", "agent_id"}


@pytest.fixture(scope="module")
def template(tmp_path_factory, embedder):
    """The seeded store, built once; each test works on a copy."""
    path = tmp_path_factory.mktemp("template") / "tools.duckdb"
    return path, seed_store(path, embedder)


@pytest.fixture
def store(tmp_path, template, embedder):
    source, ids = template
    path = tmp_path / "tools.duckdb"
    shutil.copyfile(source, path)
    mem = lodviz.open(path, embedder=embedder)
    mem.ids = ids  # type: ignore[attr-defined]
    yield mem
    mem.close()


def call(mem: lodviz.Memory, agent: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Run tool calls in order as ``agent`` through the SDK client; return the results."""

    async def main() -> list[Any]:
        async with Client(build_mcp(mem, agent=agent)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(main)


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def test_lists_the_tools_with_schemas_and_guidance(store):
    async def main() -> Any:
        async with Client(build_mcp(store, agent="alice")) as client:
            return await client.list_tools(), client.instructions

    tools, instructions = anyio.run(main)
    by_name = {tool.name: tool for tool in tools.tools}
    assert set(by_name) == set(TOOL_NAMES)
    for tool in by_name.values():
        assert len(tool.description or "") > 80, tool.name  # tells an agent when to use it
        assert tool.output_schema is not None, tool.name  # structured output
    search = by_name["memory_search"].input_schema
    assert search["required"] == ["query"]
    assert {"query", "exclude", "k", "budget_tokens", "whole_landscape"} == set(search["properties"])
    assert "ctx" not in search["properties"]
    assert set(by_name["memory_promote"].input_schema["required"]) == {"memory_id", "reason"}
    assert {"items", "counts", "params"} <= set(by_name["memory_search"].output_schema["properties"])
    assert instructions in (None, INSTRUCTIONS)  # the in-process path may skip the handshake


def test_search_returns_tiers_text_and_spec_fields(store):
    (result,) = call(store, "alice", ("memory_search", {"query": "what did we agree on the liability cap?"}))
    assert not result.is_error, text(result)
    data = result.structured_content
    assert data["mode"] == "search" and data["agent_id"] == "alice"
    assert data["items"], data
    for item in data["items"]:
        assert SPEC_FIELDS <= set(item)
        assert item["tier"] in ("FULL", "SUMMARY", "HEADLINE")
        assert item["agent_id"] in ("alice", "ops")  # own and shared, never bob's
    order = [("FULL", "SUMMARY", "HEADLINE").index(item["tier"]) for item in data["items"]]
    assert order == sorted(order)  # full items first, then summaries, then headlines
    assert sum(data["counts"].values()) == len(data["items"])
    top = data["items"][0]
    assert top["tier"] == "FULL"
    by_id = {item["id"]: item for item in data["items"]}
    assert by_id[store.ids["alice_cap"]]["tier"] == "FULL"  # close and recent
    assert by_id[store.ids["alice_template"]]["tier"] == "HEADLINE"  # related but long untouched
    assert data["counts"]["FULL"] >= 1 and data["counts"]["HEADLINE"] >= 1  # mixed resolution
    for item in data["items"]:  # the content is the text at the item's tier
        record = store.get(item["id"])
        assert item["content"] == {"FULL": record.text, "SUMMARY": record.summary, "HEADLINE": record.headline}[item["tier"]]
    rendered = text(result)
    assert rendered.startswith('Memory within 2000 tokens: ')
    assert store.get(top["id"]).text.split()[0] in rendered  # a whole memory is its text
    assert any(item["whole"] for item in data["items"])
    for item in data["items"]:  # every line carries its memory's id, a text read whole too: to promote, cite, expand
        content = " ".join(item["content"].split())
        assert f"#{item['id']} {content}" in rendered


def test_a_search_naming_no_budget_keeps_to_the_agents_default_and_counts_only_what_it_delivered(store):
    store.set_profile("alice", budget=60, actor="test")
    before = {m: store.get(m).retrieval_count for m in store.ids.values()}
    (budgeted,) = call(store, "alice", ("memory_search", {"query": "what did we agree on the liability cap?"}))
    rendered = text(budgeted)
    assert rendered.startswith("Memory within 60 tokens: ")
    assert budgeted.structured_content["tokens"] == lodviz.tokens.count(store.token_counter, rendered) <= 60
    delivered = {item["id"] for item in budgeted.structured_content["items"] if item["tier"] in ("FULL", "SUMMARY")}
    assert delivered
    for memory_id, count in before.items():  # use is counted for what was read, nothing else
        assert store.get(memory_id).retrieval_count == count + (memory_id in delivered), memory_id


def test_promote_after_a_budget_cut_a_memory_to_a_headline_lands_on_summary(store):
    query = "what did we agree on the liability cap?"
    (whole, tight) = call(store, "alice", ("memory_search", {"query": query, "whole_landscape": True}),
                          ("memory_search", {"query": query, "budget_tokens": 80}))
    assert tight.structured_content is not None, text(tight)
    natural = {item["id"]: item["tier"] for item in whole.structured_content["items"]}
    cut = next(item["id"] for item in tight.structured_content["items"]
               if item["tier"] == "HEADLINE" and natural[item["id"]] in ("FULL", "SUMMARY"))
    (promoted,) = call(store, "alice", ("memory_promote", {"memory_id": cut, "reason": "read it as a headline"}))
    assert promoted.structured_content["floor"] == "SUMMARY"  # one above what the agent was shown, not above its score


def test_the_whole_landscape_is_one_argument_away(store):
    store.set_profile("alice", budget=60, actor="test")
    (budgeted, whole) = call(store, "alice", ("memory_search", {"query": "liability cap"}),
                             ("memory_search", {"query": "liability cap", "whole_landscape": True}))
    assert len(whole.structured_content["items"]) > len(budgeted.structured_content["items"])
    assert text(whole).startswith("Memory: ")  # no budget to state
    assert lodviz.tokens.count(store.token_counter, text(whole)) > 60


def test_profile_k_and_exclude_apply(store):
    store.set_profile("alice", "research", actor="test")
    (plain, narrow, excluded) = call(
        store,
        "alice",
        ("memory_search", {"query": "liability cap"}),
        ("memory_search", {"query": "liability cap", "k": 1}),
        ("memory_search", {"query": "liability cap", "exclude": ["contracts and liability"]}),
    )
    assert plain.structured_content["params"]["alpha"] == pytest.approx(lodviz.preset("research").alpha)
    assert len(narrow.structured_content["items"]) == 1 and narrow.structured_content["candidates"] == 1
    assert any(item["penalty"] > 0 for item in excluded.structured_content["items"])
    assert excluded.structured_content["exclude"] == ["contracts and liability"]


def test_budget_is_kept(store):
    (result,) = call(store, "alice", ("memory_search", {"query": "liability cap", "budget_tokens": 80}))
    assert not result.is_error, text(result)
    assert result.structured_content["tokens"] <= 80 and result.structured_content["tokens_counted"]
    assert result.structured_content["items"]


def test_expand_returns_the_full_text(store):
    old = store.ids["alice_old"]
    (expanded,) = call(store, "alice", ("memory_expand", {"memory_id": old}))
    assert not expanded.is_error and expanded.structured_content["text"] == SEED["alice_old"]["text"]
    assert SEED["alice_old"]["text"] in text(expanded)


def test_the_first_promote_of_a_headline_brings_it_back_as_a_summary(store):
    (first,) = call(store, "alice", ("memory_search", {"query": "liability cap"}))
    headline = next(item["id"] for item in first.structured_content["items"] if item["tier"] == "HEADLINE")
    promoted, again, after = call(
        store,
        "alice",
        ("memory_promote", {"memory_id": headline, "reason": "the offsite venue is a standing question"}),
        ("memory_promote", {"memory_id": headline, "reason": "and keep it in full"}),
        ("memory_search", {"query": "liability cap"}),
    )
    assert promoted.structured_content["previous_floor"] == "OUT" and promoted.structured_content["floor"] == "SUMMARY"
    assert again.structured_content["floor"] == "FULL"
    now = {item["id"]: item for item in after.structured_content["items"]}
    assert now[headline]["floor"] == "FULL" and now[headline]["tier"] == "FULL"
    events = store.audit(agent_id="alice", actions=["promote"])
    assert [e.actor for e in events] == ["alice", "alice"]
    assert {e.details["reason"] for e in events} == {"the offsite venue is a standing question", "and keep it in full"}


def test_write_then_find_and_duplicate(store):
    note = "Alice decided to move the Paragon renewal review to the first week of July."
    written, duplicate, found = call(
        store,
        "alice",
        ("memory_write", {"text": note, "kind": "note", "metadata": {"ticket": "LEG-42"}}),
        ("memory_write", {"text": note, "kind": "note"}),
        ("memory_search", {"query": "when is the Paragon renewal review?"}),
    )
    assert not written.is_error, text(written)
    new_id = written.structured_content["id"]
    assert written.structured_content["duplicate"] is False and written.structured_content["agent_id"] == "alice"
    assert duplicate.structured_content == {**written.structured_content, "duplicate": True}
    assert new_id in [item["id"] for item in found.structured_content["items"]]
    record = store.get(new_id)
    assert record.metadata == {"ticket": "LEG-42"} and record.visibility == "private"
    writes = [e for e in store.audit(agent_id="alice", actions=["write"]) if e.actor == "alice"]
    assert len(writes) == 2  # the write, and the duplicate that stored nothing


def test_non_semantic_modes(store):
    recent, unseen, sample = call(
        store,
        "alice",
        ("memory_recent", {"since": "2026-01-01", "until": "2026-12-31"}),
        ("memory_unseen", {"limit": 10}),
        ("memory_sample", {"n": 2}),
    )
    for result, mode in ((recent, "recent"), (unseen, "unseen"), (sample, "sample")):
        assert not result.is_error, text(result)
        assert result.structured_content["mode"] == mode
        assert all(item["agent_id"] in ("alice", "ops") for item in result.structured_content["items"])
    recent_ids = {item["id"] for item in recent.structured_content["items"]}
    assert recent_ids == {store.ids["alice_cap"], store.ids["alice_tea"], store.ids["shared_policy"]}
    assert len(sample.structured_content["items"]) == 2
    assert {e.action for e in store.audit(agent_id="alice")} >= {"recent", "unseen", "sample"}


def test_agent_b_cannot_reach_agent_a_private_memory(store):
    secret = store.ids["bob_secret"]
    missing = 987654
    results = call(
        store,
        "alice",
        ("memory_search", {"query": "the acquisition codename"}),
        ("memory_expand", {"memory_id": secret}),
        ("memory_expand", {"memory_id": missing}),
        ("memory_promote", {"memory_id": secret, "reason": "probe"}),
        ("memory_promote", {"memory_id": missing, "reason": "probe"}),
        ("memory_recent", {"since": "2000-01-01"}),
        ("memory_unseen", {"limit": 100}),
        ("memory_sample", {"n": 100}),
    )
    search, expand_secret, expand_missing, promote_secret, promote_missing, recent, unseen, sample = results
    for listing in (search, recent, unseen, sample):
        assert secret not in [item["id"] for item in listing.structured_content["items"]]
        assert "Nightingale" not in text(listing)
    assert expand_secret.is_error and promote_secret.is_error
    assert text(expand_secret) == text(expand_missing).replace(str(missing), str(secret))
    assert text(promote_secret) == text(promote_missing).replace(str(missing), str(secret))
    assert f"No memory with id {secret}." in text(expand_secret)
    assert store.get(secret).floor == 0 and store.get(secret).retrieval_count == 0


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("memory_expand", {"memory_id": 987654}, "No memory with id 987654."),
        ("memory_search", {"query": "   "}, "the query is empty."),
        ("memory_search", {"query": "cap", "budget_tokens": 3}, "cannot hold even one headline"),
        ("memory_search", {"query": "cap", "k": 0}, "k"),
        ("memory_search", {"query": "cap", "k": "many"}, "valid integer"),
        ("memory_search", {"query": 42}, "valid string"),
        ("memory_search", {}, "query"),
        ("memory_expand", {"memory_id": "forty-two"}, "valid integer"),
        ("memory_promote", {"memory_id": 1}, "reason"),
        ("memory_write", {"text": ""}, "empty"),
        ("memory_write", {"text": "x", "kind": "Not A Kind!"}, "kind"),
        ("memory_write", {"text": "x", "metadata": [1, 2]}, "valid dictionary"),
        ("memory_recent", {"since": "last tuesday"}, "since"),
        ("memory_unseen", {"limit": 0}, "limit must be a whole number"),
        ("memory_sample", {"n": -3}, "n must be a whole number"),
        ("memory_nonsense", {}, "memory_nonsense"),
    ],
)
def test_bad_input_is_a_tool_error_and_the_server_keeps_going(store, name, args, message):
    bad, good = call(store, "alice", (name, args), ("memory_search", {"query": "liability cap"}))
    assert bad.is_error
    assert message in text(bad)
    assert "Traceback" not in text(bad)
    assert not good.is_error and good.structured_content["items"]


def test_header_names_the_agent_when_none_is_fixed(store):
    async def main() -> Any:
        async with Client(build_mcp(store, default_agent="bob")) as client:
            return await client.call_tool("memory_search", {"query": "acquisition codename"})

    result = anyio.run(main)
    assert result.structured_content["agent_id"] == "bob"
    assert store.ids["bob_secret"] in [item["id"] for item in result.structured_content["items"]]


def test_a_new_empty_store_takes_its_first_memory(tmp_path, embedder):
    mem = lodviz.open(tmp_path / "new.duckdb", embedder=embedder)
    try:
        empty, written, found = call(
            mem,
            "alice",
            ("memory_search", {"query": "anything at all"}),
            ("memory_write", {"text": "The very first memory of a new store."}),
            ("memory_search", {"query": "the first memory"}),
        )
        assert not empty.is_error and empty.structured_content["items"] == []
        assert "nothing visible here" in text(empty)
        assert not written.is_error, text(written)
        assert [item["id"] for item in found.structured_content["items"]] == [written.structured_content["id"]]
    finally:
        mem.close()
