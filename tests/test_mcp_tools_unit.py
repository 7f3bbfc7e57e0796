"""The MCP tools as plain functions: a ``Call`` and typed arguments in, a ``CallToolResult`` out.

No server, no client, no model: a Memory on a temporary DuckDB store with the
deterministic ``HashEmbedder``. How they are registered and served is in
test_mcp_wiring.py; end to end with the real model in tests/mcp/.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from lodviz.access import current_face
from lodviz.errors import AccessDenied, InvalidInput, MemoryNotFound, StoreError
from lodviz.mcp_server import (
    AGENT_HEADER,
    DEFAULT_AGENT,
    TOOL_NAMES,
    TOOLS,
    Call,
    build_mcp,
    call_context,
    memory_expand,
    memory_promote,
    memory_recent,
    memory_sample,
    memory_search,
    memory_unseen,
    memory_write,
    run_tool,
)

CAP = "Paragon MSA: the liability cap is twice the annual fees, with a carve-out for data breaches."
TEA = "Alice prefers green tea over coffee in the morning meetings."
SECRET = "Bob's private note: the acquisition codename is Nightingale."
POLICY = "Company policy: every contract with a liability cap needs sign-off from legal."


@pytest.fixture
def ids(mem) -> dict[str, int]:
    made = {
        "cap": mem.add(CAP, agent_id="alice", kind="document", created_at="2026-05-25T10:00:00Z"),
        "tea": mem.add(TEA, agent_id="alice", kind="preference", created_at="2026-05-20T08:00:00Z"),
        "secret": mem.add(SECRET, agent_id="bob", created_at="2026-05-28T16:00:00Z"),
        "policy": mem.add(POLICY, agent_id="ops", visibility="shared", created_at="2026-01-15T12:00:00Z"),
    }
    mem.set_reference_time("2026-06-01T12:00:00Z")
    return made


def text(result: Any) -> str:
    return "".join(block.text for block in result.content)


class FakeContext:
    """What ``call_context`` reads of the SDK's request context: its headers, if there is a request."""

    def __init__(self, headers: dict[str, str] | None) -> None:
        self._headers = headers

    @property
    def headers(self) -> dict[str, str]:
        if self._headers is None:
            raise ValueError("no request")
        return self._headers


# -- the tools ----------------------------------------------------------------------------------


def test_search_returns_the_landscape_as_text_and_structure(mem, ids):
    result = memory_search(Call(mem, "alice"), query="liability cap")
    data = result.structured_content
    assert data["mode"] == "search" and data["query"] == "liability cap" and data["agent_id"] == "alice"
    assert {item["id"] for item in data["items"]} <= {ids["cap"], ids["tea"], ids["policy"]}  # never bob's
    assert data["items"] and sum(data["counts"].values()) == len(data["items"])
    assert text(result).startswith('Memory within 2000 tokens: ')
    assert "Nightingale" not in text(result)


def test_search_passes_its_arguments_on(mem, ids):
    result = memory_search(Call(mem, "alice"), query="liability cap", exclude=["tea"], k=2, budget_tokens=500)
    data = result.structured_content
    assert data["exclude"] == ["tea"] and data["budget_tokens"] == 500 and data["candidates"] == 2
    assert data["tokens"] <= 500


def test_search_is_recorded_for_the_agent_by_the_actor(mem, ids):
    memory_search(Call(mem, "alice", actor="token:legal-bot"), query="liability cap")
    (event,) = mem.audit(agent_id="alice", actions=["search"])
    assert event.actor == "token:legal-bot" and event.agent_id == "alice"
    assert event.details["face"] == "api"  # called directly: the face is the caller's, not "mcp"


def test_a_call_without_an_actor_is_acted_by_its_agent():
    assert Call(None, "alice").actor == "alice"
    assert Call(None).agent == DEFAULT_AGENT and Call(None).actor == DEFAULT_AGENT


def test_a_read_only_search_leaves_no_trace(mem, ids):
    result = memory_search(Call(mem, "alice", read_only=True), query="liability cap")
    assert result.structured_content["items"]
    assert mem.audit(agent_id="alice", actions=["search"]) == []
    assert all(mem.get(i).retrieval_count == 0 for i in ids.values())


def test_expand_returns_the_full_memory_and_counts_its_use(mem, ids):
    result = memory_expand(Call(mem, "alice"), memory_id=ids["cap"])
    assert result.structured_content["text"] == CAP and result.structured_content["id"] == ids["cap"]
    assert text(result).startswith(f"[{ids['cap']}] ") and text(result).endswith(f"\n\n{CAP}\n")
    assert "kind document, agent alice (private)" in text(result)
    assert mem.get(ids["cap"]).retrieval_count == 1


def test_a_read_only_expand_does_not_count(mem, ids):
    result = memory_expand(Call(mem, "alice", read_only=True), memory_id=ids["cap"])
    assert result.structured_content["text"] == CAP
    assert mem.get(ids["cap"]).retrieval_count == 0


def test_another_agents_private_memory_is_not_found(mem, ids):
    with pytest.raises(MemoryNotFound) as caught:
        memory_expand(Call(mem, "alice"), memory_id=ids["secret"])
    assert str(caught.value) == f"No memory with id {ids['secret']}."


#: A long memory: a session of turns, one of which holds the fact an agent drills into.
SESSION = "\n".join(
    [f"{'Ada' if t % 2 == 0 else 'Bo'}: We went over the vendor list again, item {t}, and the shipping dates came up. Nothing new." for t in range(10)]
    + ["Bo: The Paragon renewal notice must reach them ninety days before the term ends."]
    + [f"{'Ada' if t % 2 == 0 else 'Bo'}: Then we talked about the office move, step {t}, and the parking permits. All fine." for t in range(10)]
)


@pytest.fixture
def session_id(mem, ids) -> int:
    return mem.add(SESSION, agent_id="alice", kind="session", created_at="2026-05-26T10:00:00Z")


def test_expand_around_a_phrase_returns_its_neighbourhood_not_the_whole(mem, ids, session_id):
    result = memory_expand(Call(mem, "alice"), memory_id=session_id, around="renewal  NOTICE must reach")
    data = result.structured_content
    where = data["neighbourhood"]
    assert where["matched"] == "phrase" and where["positions"] == [9, 10, 11] and where["passage_count"] == 21
    assert where["before"] == 9 and where["after"] == 9 and where["around"] == "renewal  NOTICE must reach"
    assert "ninety days before the term ends" in data["text"] and len(data["text"]) < len(SESSION) / 3
    assert data["text"].startswith("…") and data["text"].endswith("…")
    assert [SESSION[a:b] for a, b in where["spans"]] == [line for line in SESSION.splitlines()[9:12]]
    said = text(result)
    assert said.startswith(f"[{session_id}] ") and said.endswith(f"\n\n{data['text']}\n")
    assert 'Passages 10-12 of 21: the one holding "renewal  NOTICE must reach", and 1 on each side.' in said
    assert f"Left out: 9 before, 9 after; memory_expand({session_id}, around=..., width=...) reads more" in said
    assert SESSION not in said
    assert mem.get(session_id).retrieval_count == 1 and data["retrieval_count"] == 1
    (event,) = mem.audit(agent_id="alice", actions=["expand"])
    assert event.memory_id == session_id and event.details["passages"] == where["spans"]


def test_expand_around_with_a_width(mem, ids, session_id):
    data = memory_expand(Call(mem, "alice"), memory_id=session_id, around="renewal notice", width=0).structured_content
    assert data["neighbourhood"]["positions"] == [10]
    data = memory_expand(Call(mem, "alice"), memory_id=session_id, around="renewal notice", width=30).structured_content
    assert data["neighbourhood"]["positions"] == list(range(21)) and data["neighbourhood"]["before"] == 0
    assert " ".join(data["text"].split()) == " ".join(SESSION.split())


def test_expand_around_a_phrase_no_passage_holds_says_so(mem, ids, session_id):
    result = memory_expand(Call(mem, "alice"), memory_id=session_id, around="a phrase that is nowhere", width=0)
    assert result.structured_content["neighbourhood"]["matched"] == "nearest"
    assert 'no passage holds "a phrase that is nowhere": the one nearest in meaning' in text(result)


def test_expand_around_a_short_memory_is_the_memory(mem, ids):
    result = memory_expand(Call(mem, "alice"), memory_id=ids["cap"], around="liability cap")
    assert result.structured_content["text"] == CAP and result.structured_content["neighbourhood"]["passage_count"] == 1
    assert "Left out" not in text(result)


def test_a_read_only_expand_around_does_not_count(mem, ids, session_id):
    result = memory_expand(Call(mem, "alice", read_only=True), memory_id=session_id, around="renewal notice")
    assert "ninety days" in result.structured_content["text"]
    assert mem.get(session_id).retrieval_count == 0 and mem.audit(actions=["expand"]) == []


def test_expand_around_another_agents_memory_is_not_found(mem, ids):
    with pytest.raises(MemoryNotFound) as caught:
        memory_expand(Call(mem, "alice"), memory_id=ids["secret"], around="codename")
    assert str(caught.value) == f"No memory with id {ids['secret']}."


@pytest.mark.parametrize(("args", "message"), [
    ({"around": "   "}, "around is empty: give a phrase from the excerpt you read."),
    ({"around": "renewal", "width": -2}, "width must be a whole number of at least 0, got -2."),
])
def test_expand_around_refuses_bad_input_in_one_sentence(mem, ids, session_id, args, message):
    with pytest.raises(ToolError) as caught:
        run_tool(memory_expand, Call(mem, "alice"), memory_id=session_id, **args)
    assert str(caught.value) == message
    assert mem.audit(actions=["expand"]) == []


def test_promote_raises_the_floor_and_records_the_reason(mem, ids):
    result = memory_promote(Call(mem, "alice", actor="carol"), memory_id=ids["tea"], reason="a standing preference")
    data = result.structured_content
    assert data["id"] == ids["tea"] and data["previous_floor"] == "OUT" and data["floor"] != "OUT"
    assert text(result) == f"Memory {ids['tea']} now has tier floor {data['floor']} (was OUT): {data['headline']}\n"
    (event,) = mem.audit(agent_id="alice", actions=["promote"])
    assert event.actor == "carol" and event.details["reason"] == "a standing preference"


@pytest.mark.parametrize(("tool", "args", "what"), [
    (memory_promote, {"memory_id": 1, "reason": "r"}, "promote"),
    (memory_write, {"text": "A note."}, "write"),
])
def test_a_read_only_call_refuses_to_change_anything(mem, ids, tool, args, what):
    before = mem.audit()
    with pytest.raises(AccessDenied) as caught:
        tool(Call(mem, "alice", read_only=True), **args)
    assert str(caught.value) == f"this lodviz server is read-only (a demo); it does not {what}."
    assert len(mem) == 4 and mem.get(1).floor == 0 and mem.audit() == before


def test_write_stores_then_knows_the_duplicate(mem):
    call = Call(mem, "alice")
    first = memory_write(call, text="Move the renewal review to July.", metadata={"ticket": "LEG-42"}, source="chat")
    again = memory_write(call, text="Move the renewal review to July.")
    new_id = first.structured_content["id"]
    assert first.structured_content["duplicate"] is False and again.structured_content == {**first.structured_content, "duplicate": True}
    assert text(first).startswith(f"Stored memory {new_id} (private, note): ")
    assert text(again).startswith(f"Already stored as memory {new_id} (private, note): ")
    record = mem.get(new_id)
    assert record.agent_id == "alice" and record.metadata == {"ticket": "LEG-42"} and record.source == "chat"


def test_write_shared_with_a_kind(mem):
    result = memory_write(Call(mem, "ops"), text="Expenses are due on the fifth.", kind="policy", visibility="shared")
    assert result.structured_content["visibility"] == "shared" and result.structured_content["kind"] == "policy"


def test_recent_is_a_time_window(mem, ids):
    result = memory_recent(Call(mem, "alice"), since="2026-05-01", until="2026-05-31")
    assert result.structured_content["mode"] == "recent"
    assert {item["id"] for item in result.structured_content["items"]} == {ids["cap"], ids["tea"]}


def test_unseen_is_what_was_never_retrieved(mem, ids):
    memory_expand(Call(mem, "alice"), memory_id=ids["cap"])
    result = memory_unseen(Call(mem, "alice"), limit=10)
    assert result.structured_content["mode"] == "unseen"
    assert {item["id"] for item in result.structured_content["items"]} == {ids["tea"], ids["policy"]}


def test_sample_draws_n(mem, ids):
    result = memory_sample(Call(mem, "alice"), n=2)
    assert result.structured_content["mode"] == "sample" and len(result.structured_content["items"]) == 2


def test_a_call_without_a_store_says_so(ids):
    with pytest.raises(StoreError, match="this MCP server lists tools only; it has no store."):
        memory_search(Call(None, "alice"), query="anything")


# -- running one: errors and the face -----------------------------------------------------------


def test_run_tool_turns_a_lodviz_error_into_its_sentence(mem, ids):
    with pytest.raises(ToolError) as caught:
        run_tool(memory_expand, Call(mem, "alice"), memory_id=ids["secret"])
    assert str(caught.value) == f"No memory with id {ids['secret']}."


def test_run_tool_turns_a_defect_into_one_sentence_and_a_log_line(caplog):
    def broken(call: Call) -> Any:
        raise RuntimeError("the disk caught fire")

    with caplog.at_level("WARNING", logger="lodviz.mcp"), pytest.raises(ToolError) as caught:
        run_tool(broken, Call(None))
    assert str(caught.value) == "lodviz could not do this (RuntimeError); the server's log says more."
    assert caught.value.__cause__ is None
    assert [record.getMessage() for record in caplog.records] == ["broken failed: RuntimeError: the disk caught fire"]


def test_run_tool_acts_through_the_mcp_face_and_leaves_the_callers(mem, ids):
    seen: list[str] = []

    def look(call: Call) -> str:
        seen.append(current_face())
        return "done"

    assert run_tool(look, Call(mem, "alice")) == "done"
    assert seen == ["mcp"] and current_face() == "api"
    run_tool(memory_search, Call(mem, "alice"), query="liability cap")
    (event,) = mem.audit(agent_id="alice", actions=["search"])
    assert event.details["face"] == "mcp"


# -- the call a request makes -------------------------------------------------------------------


def test_the_fixed_agent_wins_over_the_header(mem):
    call = call_context(FakeContext({AGENT_HEADER: "bob"}), mem, agent="alice")
    assert call == Call(mem, "alice", "alice", False)


def test_the_header_names_the_agent_and_the_identity_the_actor(mem):
    call = call_context(FakeContext({AGENT_HEADER: "bob", "X-Lodviz-Identity": "token:ci"}), mem, read_only=True)
    assert call == Call(mem, "bob", "token:ci", True)


@pytest.mark.parametrize("headers", [None, {}, {AGENT_HEADER: ""}])
def test_no_agent_named_is_the_default_agent(mem, headers):
    call = call_context(FakeContext(headers), mem, default_agent="research")
    assert call == Call(mem, "research", "research", False)


def test_a_header_that_is_no_agent_name_is_refused(mem):
    with pytest.raises(InvalidInput, match="agent name 'no spaces' must be"):
        call_context(FakeContext({AGENT_HEADER: "no spaces"}), mem)


# -- the list ------------------------------------------------------------------------------------


def test_the_tool_names_are_the_registered_functions():
    assert TOOL_NAMES == tuple(function.__name__ for function, _ in TOOLS) == (
        "memory_search", "memory_expand", "memory_promote", "memory_write", "memory_recent", "memory_unseen", "memory_sample",
    )
    listed = anyio.run(build_mcp(None).list_tools)
    assert tuple(tool.name for tool in listed) == TOOL_NAMES
    for tool, (function, hints) in zip(listed, TOOLS, strict=True):
        assert tool.annotations == hints
        assert tool.input_schema["title"] == f"{function.__name__}Arguments"
        assert "call" not in tool.input_schema["properties"] and "ctx" not in tool.input_schema["properties"]
