"""LodvizStore: lodviz as a LangGraph long-term memory store (lodviz/langgraph_store.py), on real DuckDB stores."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage  # noqa: E402
from langchain_core.runnables import RunnableConfig  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.config import get_store  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402
from langgraph.store.base import BaseStore, GetOp, PutOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

import lodviz  # noqa: E402
from lodviz.errors import InvalidInput, InvalidParameters  # noqa: E402
from lodviz.langgraph_store import MARK, LodvizStore  # noqa: E402
from lodviz.tokens import count  # noqa: E402

NS = ("user-1", "memories")


@pytest.fixture
def store(mem) -> LodvizStore:
    return LodvizStore(mem)


def live(mem) -> list[int]:
    """Ids of the store's memories that are not forgotten."""
    return [r.id for r in mem.export_records()]


# -- a real graph ------------------------------------------------------------------------------


class ModelInputs(BaseCallbackHandler):
    """Keeps the messages every chat model call was given."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.calls.extend(messages)


def build_graph(store: BaseStore, model: GenericFakeChatModel):
    """A chat graph with long-term memory: one node writes what the user asks to remember, one recalls and answers."""

    def remember(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        text = str(state["messages"][-1].content)
        if text.startswith("Remember: "):
            get_store().put((config["configurable"]["user_id"], "memories"), f"m{len(text)}", {"memory": text[len("Remember: "):]})
        return {}

    def respond(state: MessagesState, config: RunnableConfig, *, store: BaseStore) -> dict[str, Any]:
        found = store.search((config["configurable"]["user_id"], "memories"), query=str(state["messages"][-1].content))
        recalled = "\n".join(f"{item.value['id']} {item.value['memory']}" for item in found)
        reply = model.invoke([SystemMessage(f"What you remember of this user:\n{recalled}"), *state["messages"]])
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("remember", remember)
    builder.add_node("respond", respond)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "respond")
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def test_a_graph_writes_memories_in_one_run_and_recalls_them_in_a_new_thread(mem, store):
    inputs = ModelInputs()
    model = GenericFakeChatModel(messages=iter([AIMessage("Noted."), AIMessage("Hazard ratios, with 95% CIs.")]), callbacks=[inputs])
    graph = build_graph(store, model)
    fact = "Dr. Solberg wants hazard ratios reported with 95% confidence intervals."

    graph.invoke({"messages": [HumanMessage(f"Remember: {fact}")]}, {"configurable": {"thread_id": "1", "user_id": "user-1"}})
    second = graph.invoke({"messages": [HumanMessage("How should I report the hazard ratios?")]},
                          {"configurable": {"thread_id": "2", "user_id": "user-1"}})

    [memory_id] = live(mem)
    assert mem.get(memory_id).agent_id == "user-1" and mem.get(memory_id).text == fact
    system = inputs.calls[1][0]
    assert isinstance(system, SystemMessage) and f"#{memory_id} {fact}" in str(system.content)
    assert [m.content for m in second["messages"]] == ["How should I report the hazard ratios?", "Hazard ratios, with 95% CIs."]


# -- agreement with InMemoryStore ---------------------------------------------------------------


def script(store: BaseStore) -> list[Any]:
    """The same operations for any store; what they answered, as plain data (no times: they differ by store)."""

    def items(found) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
        return [(i.namespace, i.key, i.value) for i in found]

    def got(namespace: tuple[str, ...], key: str) -> Any:
        item = store.get(namespace, key)
        return None if item is None else (item.namespace, item.key, item.value)

    seen: list[Any] = []
    store.put(("a", "notes"), "k1", {"text": "First note about the audit.", "score": 3, "tags": ["x", "y"]})
    store.put(("a", "notes"), "k2", {"text": "Second note.", "score": 7, "meta": {"colour": "red", "size": 2}})
    store.put(("a", "prefs"), "theme", {"theme": "dark"})
    store.put(("b", "notes", "v1"), "k1", {"text": "Another agent's note.", "score": 5})
    store.put(("b", "notes", "v2"), "k9", {"text": "Same words, other key.", "score": 1})
    store.put(("b", "notes", "v2"), "k8", {"text": "Same words, other key.", "score": 1})
    seen.append(got(("a", "notes"), "k1"))
    seen.append(got(("a", "notes"), "missing"))
    store.put(("a", "notes"), "k1", {"text": "First note, corrected.", "score": 4, "tags": ["x"]})  # replaces
    store.put(("a", "notes"), "k2", {"text": "Second note.", "score": 8, "meta": {"colour": "red", "size": 2}})  # same text
    seen.append(got(("a", "notes"), "k1"))
    seen.append(got(("a", "notes"), "k2"))
    store.delete(("b", "notes", "v2"), "k9")
    store.put(("a", "prefs"), "gone", {"theme": "light"})
    store.batch([PutOp(("a", "prefs"), "gone", None)])  # a put of None deletes
    seen.append(got(("b", "notes", "v2"), "k9"))
    seen.append(got(("b", "notes", "v2"), "k8"))
    # One batch: reads see the store before the batch's puts; the last put of an item wins.
    seen.append([
        None if r is None else (r.key, r.value)
        for r in store.batch([
            PutOp(("a", "notes"), "k3", {"text": "draft"}),
            GetOp(("a", "notes"), "k3"),
            PutOp(("a", "notes"), "k3", {"text": "Third note.", "score": 2}),
        ])
    ])
    seen.append(got(("a", "notes"), "k3"))
    seen.append(items(store.search(("a",))))
    seen.append(items(store.search(())))
    seen.append(items(store.search(("a", "notes"), limit=2)))
    seen.append(items(store.search(("a", "notes"), offset=1, limit=5)))
    seen.append(items(store.search(("a", "notes"), filter={"score": {"$gte": 4}})))
    seen.append(items(store.search(("b",), filter={"score": {"$gt": 2, "$lte": 5}})))
    seen.append(items(store.search(("a", "notes"), filter={"score": {"$lt": 8, "$ne": 4}})))
    seen.append(items(store.search((), filter={"score": {"$ne": 4}, "text": {"$eq": "Third note."}})))
    seen.append(items(store.search((), filter={"meta": {"colour": "red"}})))
    seen.append(items(store.search((), filter={"tags": ["x"]})))
    seen.append(items(store.search(("b",), filter={"score": 1})))
    seen.append(items(store.search(("c",))))
    seen.append(store.list_namespaces())
    seen.append(store.list_namespaces(prefix=("b",)))
    seen.append(store.list_namespaces(suffix=("notes",)))
    seen.append(store.list_namespaces(prefix=("b", "*", "v2")))
    seen.append(store.list_namespaces(max_depth=2))
    seen.append(store.list_namespaces(max_depth=1, limit=1, offset=1))
    seen.append(store.list_namespaces(prefix=("a",), suffix=("prefs",)))
    return seen


def test_the_same_script_gives_what_in_memory_store_gives(store):
    assert script(store) == script(InMemoryStore())


# -- where it does not agree with InMemoryStore (the module docstring's list) --------------------------


def test_a_search_with_a_query_returns_memories_at_their_tiers_not_the_stored_value(mem, store):
    store.put(NS, "k", {"memory": "The quarterly supplier audit of the Hyderabad plant is due in March.", "source": "chat"})
    plain = InMemoryStore()
    plain.put(NS, "k", {"memory": "The quarterly supplier audit of the Hyderabad plant is due in March.", "source": "chat"})

    [item] = store.search(NS, query="supplier audit")
    [memory_id] = live(mem)
    assert item.value == {"memory": mem.get(memory_id).text, "tier": "FULL", "id": f"#{memory_id}"}
    assert plain.search(NS, query="supplier audit")[0].value["source"] == "chat"


def test_a_namespace_whose_items_were_all_deleted_is_not_listed(store):
    plain = InMemoryStore()
    for each in (store, plain):
        each.put(("a", "x"), "k", {"text": "gone soon"})
        each.delete(("a", "x"), "k")
    assert store.list_namespaces() == []
    assert plain.list_namespaces() == [("a", "x")]


def test_an_ordering_filter_on_a_missing_field_does_not_match(store):
    store.put(NS, "scored", {"memory": "Has a score.", "score": 5})
    store.put(NS, "unscored", {"memory": "Has none."})
    assert [i.key for i in store.search(NS, filter={"score": {"$gt": 1}})] == ["scored"]
    plain = InMemoryStore()
    plain.put(NS, "unscored", {"memory": "Has none."})
    with pytest.raises(TypeError):
        plain.search(NS, filter={"score": {"$gt": 1}})


def test_an_item_put_with_index_false_is_searchable_all_the_same(store):
    store.put(NS, "k", {"memory": "Unindexed elsewhere."}, index=False)
    assert [i.key for i in store.search(NS, query="unindexed")] == ["k"]


def test_namespaces_are_ordered_by_their_oldest_item_still_there(store):
    plain = InMemoryStore()
    for each in (store, plain):
        each.put(("a",), "1", {"text": "one"})
        each.put(("b",), "2", {"text": "two"})
        each.put(("a",), "3", {"text": "three"})
        each.delete(("a",), "1")
    assert [i.key for i in store.search(())] == ["2", "3"]
    assert [i.key for i in plain.search(())] == ["3", "2"]


def test_tuples_come_back_as_lists(store):
    store.put(NS, "k", {"pair": (1, 2)})
    item = store.get(NS, "k")
    assert item is not None and item.value == {"pair": [1, 2]}


def test_a_replaced_item_keeps_its_created_at(mem, store):
    store.put(NS, "k", {"memory": "Version one."})
    first = store.get(NS, "k")
    store.put(NS, "k", {"memory": "Version two."})
    second = store.get(NS, "k")
    assert first is not None and second is not None
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    assert [mem.get(i).text for i in live(mem)] == ["Version two."]


# -- writes --------------------------------------------------------------------------------------------


def test_an_item_is_one_memory_of_the_namespaces_agent_with_the_item_in_its_metadata(mem, store):
    store.put(NS, "k", {"memory": "Prefers short answers.", "n": 1})
    [memory_id] = live(mem)
    record = mem.get(memory_id)
    assert (record.agent_id, record.text, record.source) == ("user-1", "Prefers short answers.", "langgraph")
    assert record.metadata["langgraph_namespace"] == ["user-1", "memories"]
    assert record.metadata["langgraph_key"] == "k"
    assert record.metadata["langgraph_text_field"] == "memory"


def test_get_returns_exactly_the_value_put_key_order_included(store):
    value = {"z": 1, "a": {"y": [1, 2.5, None, True], "b": "ünïcode"}, "m": -0.0}
    store.put(NS, "k", value)
    item = store.get(NS, "k")
    assert item is not None and item.value == value and list(item.value) == ["z", "a", "m"]
    assert item.created_at.tzinfo is not None and item.created_at == item.updated_at


def test_items_are_read_back_from_the_store_after_a_reopen(store_path, embedder, mem, store):
    store.put(NS, "k", {"memory": "Kept on disk."})
    mem.close()
    with lodviz.open(store_path, embedder=embedder) as again:
        item = LodvizStore(again).get(NS, "k")
    assert item is not None and item.value == {"memory": "Kept on disk."}


def test_a_memory_forgotten_through_lodviz_is_no_item_any_more(mem, store):
    store.put(NS, "k", {"memory": "To be erased."})
    [memory_id] = live(mem)
    mem.forget(memory_id, reason="erasure request")
    assert store.get(NS, "k") is None and store.search(NS) == []


def test_delete_forgets_the_items_memory(mem, store):
    store.put(NS, "k", {"memory": "Short-lived."})
    store.delete(NS, "k")
    assert store.get(NS, "k") is None and live(mem) == []
    assert mem.audit(actions=["forget"])[0].details["reason"] == "deleted through LangGraph"


def test_two_items_with_the_same_text_are_two_memories(mem, store):
    store.put(NS, "a", {"memory": "Likes pizza."})
    store.put(NS, "b", {"memory": "Likes pizza."})
    assert len(live(mem)) == 2
    found = store.search(NS, query="pizza")
    assert sorted(i.key for i in found) == ["a", "b"] and {i.value["memory"] for i in found} == {"Likes pizza."}
    store.delete(NS, "a")
    item = store.get(NS, "b")
    assert item is not None and item.value == {"memory": "Likes pizza."} and MARK in mem.get(live(mem)[0]).text


def test_index_fields_choose_the_memory_text(mem):
    store = LodvizStore(mem, index={"fields": ["note", "detail.why"]})
    store.put(NS, "k", {"note": "Uses metric units.", "detail": {"why": "Works in Oslo."}, "n": 3})
    store.put(NS, "own", {"note": "ignored", "title": "Per put: the title."}, index=["title"])
    assert sorted(mem.get(i).text for i in live(mem)) == ["Per put: the title.", "Uses metric units.\nWorks in Oslo."]


def test_the_agent_may_be_another_namespace_label(mem):
    store = LodvizStore(mem, agent_label=1)
    store.put(("memories", "user-7"), "k", {"memory": "Speaks Norwegian."})
    assert mem.get(live(mem)[0]).agent_id == "user-7"
    assert store.search(("memories", "user-7"), query="Norwegian")[0].key == "k"


def test_a_namespace_label_that_is_no_agent_id_is_refused(mem, store):
    with pytest.raises(InvalidInput, match="agent_id"):
        store.put(("user one", "memories"), "k", {"memory": "x"})
    assert live(mem) == []


def test_an_index_config_with_an_embedder_is_refused(mem):
    with pytest.raises(InvalidParameters, match="only 'fields'"):
        LodvizStore(mem, index={"dims": 3, "embed": lambda texts: [[0.0] * 3 for _ in texts]})


# -- values that cannot be stored ------------------------------------------------------------------------


def test_a_value_that_is_not_json_raises_and_writes_nothing(mem, store):
    with pytest.raises(InvalidInput, match=r"value\['when'\] is a datetime"):
        store.put(NS, "k", {"memory": "Meeting moved.", "when": datetime(2026, 3, 1)})
    assert len(mem) == 0 and mem.audit(actions=["write"]) == []


def test_a_batch_with_one_bad_value_writes_none_of_its_puts(mem, store):
    with pytest.raises(InvalidInput, match="not a string"):
        store.batch([PutOp(NS, "good", {"memory": "Fine."}), PutOp(NS, "bad", {"memory": "x", "ids": {1: "one"}})])
    assert len(mem) == 0


def test_a_bad_value_leaves_the_item_it_would_replace(mem, store):
    store.put(NS, "k", {"memory": "Still here."})
    with pytest.raises(InvalidInput, match="nan"):
        store.put(NS, "k", {"memory": "Broken.", "score": float("nan")})
    item = store.get(NS, "k")
    assert item is not None and item.value == {"memory": "Still here."} and len(live(mem)) == 1


# -- search with a query -------------------------------------------------------------------------------------

LONG = (
    "Note {i}: the supplier audit of plant {i} found the cold-chain logs incomplete for three weeks, "
    "so the quality team asked for a corrective action plan, a retraining of the night shift, "
    "and a follow-up visit before the next quarterly review of supplier audit findings."
)


def test_a_search_with_a_query_returns_tiers_and_ids_of_the_items_memories(mem, store):
    for i in range(3):
        store.put(NS, f"k{i}", {"memory": LONG.format(i=i)})
    found = store.search(NS, query="supplier audit cold-chain")
    assert len(found) == 3
    for item in found:
        memory_id = int(item.value["id"].removeprefix("#"))
        assert mem.get(memory_id).metadata["langgraph_key"] == item.key
        assert item.value["tier"] in {"FULL", "SUMMARY", "HEADLINE"} and isinstance(item.score, float)


def test_a_search_with_a_query_keeps_the_stores_budget(mem):
    store = LodvizStore(mem, budget_tokens=200)
    for i in range(12):
        store.put(NS, f"k{i}", {"memory": LONG.format(i=i)})
    found = store.search(NS, query="supplier audit cold-chain", limit=12)
    lines = [f"{item.value['id']} {item.value['memory']}" for item in found]
    assert found and sum(count(mem.token_counter, line) for line in lines) <= 200
    assert len(found) < 12 or any(item.value["tier"] != "FULL" for item in found)


def test_a_search_with_a_query_counts_as_a_retrieval(mem, store):
    store.put(NS, "k", {"memory": LONG.format(i=1)})
    [memory_id] = live(mem)
    [item] = store.search(NS, query="supplier audit cold-chain")
    assert item.value["tier"] in {"FULL", "SUMMARY"}
    assert mem.get(memory_id).retrieval_count == 1
    assert mem.audit(actions=["search"])[0].agent_id == "user-1"


def test_a_search_without_a_query_counts_nothing(mem, store):
    store.put(NS, "k", {"memory": LONG.format(i=1)})
    assert len(store.search(NS)) == 1
    assert mem.get(live(mem)[0]).retrieval_count == 0 and mem.audit(actions=["search"]) == []


def test_a_search_with_a_query_keeps_to_the_prefix_and_the_filter(store):
    store.put(("user-1", "memories"), "in", {"memory": LONG.format(i=1), "kind": "audit"})
    store.put(("user-1", "memories"), "filtered", {"memory": LONG.format(i=2), "kind": "other"})
    store.put(("user-1", "drafts"), "outside", {"memory": LONG.format(i=3), "kind": "audit"})
    found = store.search(("user-1", "memories"), query="supplier audit", filter={"kind": "audit"})
    assert [item.key for item in found] == ["in"]


def test_a_search_with_a_query_above_the_agent_label_searches_every_agent(store):
    store.put(("user-1", "memories"), "k", {"memory": LONG.format(i=1)})
    store.put(("user-2", "memories"), "k", {"memory": LONG.format(i=2)})
    assert sorted(i.namespace[0] for i in store.search((), query="supplier audit")) == ["user-1", "user-2"]
    assert [i.namespace[0] for i in store.search(("user-2",), query="supplier audit")] == ["user-2"]


def test_the_async_forms_work(mem, store):
    async def run() -> tuple[Any, ...]:
        await store.aput(NS, "k", {"memory": LONG.format(i=1)})
        got = await store.aget(NS, "k")
        found = await store.asearch(NS, query="supplier audit")
        spaces = await store.alist_namespaces()
        await store.adelete(NS, "k")
        return got, found, spaces, await store.aget(NS, "k")

    got, found, spaces, gone = asyncio.run(run())
    assert got is not None and got.value == {"memory": LONG.format(i=1)}
    assert [item.key for item in found] == ["k"] and found[0].value["tier"] in {"FULL", "SUMMARY", "HEADLINE"}
    assert spaces == [NS] and gone is None and live(mem) == []
