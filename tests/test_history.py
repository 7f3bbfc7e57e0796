"""The store as it was: replaying a past search, and the store on a past day (lodviz.history)."""

from __future__ import annotations

from datetime import timedelta

import pytest

import lodviz
from lodviz import Tier
from lodviz.errors import InvalidInput
from lodviz.history import Moment

from .conftest import NOW, RECENCY, days_ago

QUERY = "supplier audit"


def last_search_id(mem) -> int:
    return mem.audit(actions=["search"], limit=1)[0].id


def test_a_replayed_search_returns_what_it_recorded_though_usage_and_floors_changed_since(mem, aged):
    first = mem.search(QUERY, params=RECENCY, now=NOW)
    event = last_search_id(mem)
    # Afterwards: more searches touch memories, one is promoted to FULL, a new one is written.
    for day in (1, 2, 3):
        mem.search(QUERY, params=RECENCY, now=NOW + timedelta(days=day))
    mem.promote(aged["headline"], to="FULL")
    mem.add("A new supplier audit memory, written after the first search.", agent_id="ops", created_at=days_ago(1))

    replay = mem.replay(event)

    recorded = {item.id: item.tier for item in first.items}
    assert replay.recorded == recorded
    assert replay.replayed == recorded
    assert replay.agrees is True
    # The same question asked of today's store answers differently: the replay did rebuild the past.
    today = mem.search(QUERY, params=RECENCY, now=NOW, touch=False, record=False)
    assert {item.id: item.tier for item in today.items} != recorded


def test_the_replay_rebuilds_retrieval_counts_and_last_retrievals_of_that_moment(mem, aged):
    mem.search(QUERY, params=RECENCY, now=NOW)  # touches the full and summary memories
    mem.search(QUERY, params=RECENCY, now=NOW + timedelta(days=1))
    second = last_search_id(mem)
    mem.search(QUERY, params=RECENCY, now=NOW + timedelta(days=2))

    state = mem.replay(second).landscape.state
    row = {int(i): r for r, i in enumerate(state.ids)}
    assert state.retrieval_count[row[aged["summary"]]] == 1  # the first search only; now it is 3
    assert state.last_retrieved_at[row[aged["summary"]]] == NOW.timestamp()
    assert state.retrieval_count[row[aged["headline"]]] == 0
    assert mem.get(aged["summary"]).retrieval_count == 3


def test_memories_written_after_a_search_are_not_in_its_replay(mem, aged):
    mem.search(QUERY, params=RECENCY, now=NOW)
    event = last_search_id(mem)
    later = mem.add("Supplier audit follow-up written later.", agent_id="ops", created_at=days_ago(30))

    replay = mem.replay(event)

    assert later not in replay.landscape.state.ids.tolist()
    assert set(replay.landscape.state.ids.tolist()) == set(aged.values())


def test_a_search_under_a_token_budget_replays_to_the_same_answer(mem, aged):
    first = mem.search(QUERY, params=RECENCY, now=NOW, budget_tokens=120)
    event = last_search_id(mem)
    mem.search(QUERY, params=RECENCY, now=NOW + timedelta(days=1))

    replay = mem.replay(event)

    assert replay.result is not None and replay.result.budget_tokens == 120
    assert replay.replayed == {item.id: item.tier for item in first.items}
    assert replay.agrees is True


def test_a_look_in_the_app_replays_to_the_tiers_it_recorded(mem, aged):
    land = mem.landscape(QUERY, params=RECENCY, now=NOW)
    mem.record_view(land, actor="auditor")
    event = last_search_id(mem)
    mem.search(QUERY, params=RECENCY, now=NOW + timedelta(days=1))

    replay = mem.replay(event)

    assert replay.result is None
    assert replay.agrees is True
    assert replay.replayed == {aged["full"]: Tier.FULL, aged["summary"]: Tier.SUMMARY, aged["headline"]: Tier.HEADLINE}


def test_replaying_what_is_not_a_search_is_refused_in_one_sentence(mem, aged):
    mem.promote(aged["out"], to="HEADLINE")
    promote = mem.audit(actions=["promote"], limit=1)[0].id
    with pytest.raises(InvalidInput, match=f"audit event #{promote} is a promote, not a search"):
        mem.replay(promote)
    with pytest.raises(InvalidInput, match="there is no audit event #99999"):
        mem.replay(99999)


def test_the_store_on_a_past_day_holds_only_what_was_created_by_then(mem, aged):
    land = mem.landscape(None, params=RECENCY, as_of=days_ago(10))

    assert set(land.state.ids.tolist()) == {aged["headline"], aged["out"]}
    assert land.now == days_ago(10)  # scored as of that day


def test_the_store_on_a_past_day_counts_only_the_uses_made_by_then(mem, aged):
    mem.search(QUERY, params=RECENCY, now=NOW - timedelta(days=2))
    mem.search(QUERY, params=RECENCY, now=NOW)

    before = mem.landscape(None, params=RECENCY, as_of=NOW - timedelta(days=1)).state
    row = {int(i): r for r, i in enumerate(before.ids)}
    assert before.retrieval_count[row[aged["headline"]]] == 0
    assert before.retrieval_count[row[aged["summary"]]] == 1
    assert before.last_retrieved_at[row[aged["summary"]]] == (NOW - timedelta(days=2)).timestamp()
    assert mem.get(aged["summary"]).retrieval_count == 2


def test_imported_usage_arrives_whole_at_its_last_retrieval(mem):
    memory_id = mem.add(
        "An imported memory with a history of its own.", created_at=days_ago(100),
        retrieval_count=7, last_retrieved_at=days_ago(10),
    )
    land_before = mem.landscape(None, params=RECENCY, as_of=days_ago(20)).state
    land_after = mem.landscape(None, params=RECENCY, as_of=days_ago(5)).state
    assert land_before.retrieval_count[land_before.rows_of([memory_id])[0]] == 0
    assert land_after.retrieval_count[land_after.rows_of([memory_id])[0]] == 7


def test_a_promotion_counts_from_when_it_was_made(mem, aged):
    mem.move_floor(aged["out"], +1, to="FULL", now=NOW)
    earlier = mem.landscape(None, params=RECENCY, as_of=NOW - timedelta(hours=1)).state
    later = mem.landscape(None, params=RECENCY, as_of=NOW + timedelta(hours=1)).state
    assert earlier.floor[earlier.rows_of([aged["out"]])[0]] == Tier.OUT
    assert later.floor[later.rows_of([aged["out"]])[0]] == Tier.FULL


def test_the_replay_table_lists_recorded_and_replayed_tier_per_memory(mem, aged):
    mem.search(QUERY, params=RECENCY, now=NOW)
    frame = mem.replay(last_search_id(mem)).frame()
    assert list(frame.columns) == ["memory_id", "recorded", "replayed"]
    assert dict(zip(frame.memory_id, frame.recorded)) == {aged["full"]: "FULL", aged["summary"]: "SUMMARY", aged["headline"]: "HEADLINE"}
    assert (frame.recorded == frame.replayed).all()


def test_a_moment_is_an_event_or_a_time_not_both():
    with pytest.raises(ValueError):
        Moment()
    with pytest.raises(ValueError):
        Moment(before_event=3, at=NOW)


def test_a_search_replays_on_postgresql_too(pg_url, embedder):
    with lodviz.open(pg_url, embedder=embedder) as mem:
        ids = [mem.add(f"Supplier audit note {i}.", created_at=days_ago(age)) for i, age in enumerate((0, 5, 20))]
        first = mem.search(QUERY, params=RECENCY, now=NOW)
        event = last_search_id(mem)
        mem.search(QUERY, params=RECENCY, now=NOW + timedelta(days=1))
        mem.promote(ids[2], to="FULL")
        replay = mem.replay(event)
        assert replay.replayed == {item.id: item.tier for item in first.items}
        assert replay.agrees is True


def test_a_search_that_touched_nothing_replays_to_its_answer_not_the_landscape(mem, aged):
    other = mem.add("Supplier audit finding: the Hyderabad plant's cleaning validation is overdue.", created_at=days_ago(1))
    first = mem.search(QUERY, params=RECENCY, now=NOW, budget_tokens=80, touch=False)
    event = last_search_id(mem)
    replay = mem.replay(event)
    assert replay.result is not None  # a search's own answer, under its budget
    assert replay.replayed == {item.id: item.tier for item in first.items}
    assert replay.agrees is True
    assert other in replay.landscape.state.ids.tolist()


def test_a_replay_asks_with_the_searchs_own_settings_and_leaves_the_live_memorys_alone(store_path, embedder, aged):
    with lodviz.open(store_path, embedder=embedder, lexical_weight=0.0, budget_policy="coverage-first") as then:
        then.search(QUERY, params=RECENCY, now=NOW)
        event = last_search_id(then)
    with lodviz.open(store_path, embedder=embedder) as mem:
        seen_meanwhile = []
        landscape = mem.landscape

        def look_meanwhile(*args, **kwargs):  # what a search in another thread would read while the replay runs
            seen_meanwhile.append((mem.lexical_weight, mem.budget_policy))
            return landscape(*args, **kwargs)

        mem.landscape = look_meanwhile
        replay = mem.replay(event)
        assert replay.agrees is True
        assert seen_meanwhile == [(1.0, "readable-first")]
