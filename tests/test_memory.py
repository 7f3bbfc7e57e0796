"""The Memory service: search as docs/contract.md defines it, promotion by use, floors, modes."""

from __future__ import annotations

import pytest

import lodviz
from lodviz import Tier
from lodviz.errors import BudgetTooSmall, EmbeddingMismatch, InvalidInput, InvalidParameters, MemoryNotFound
from lodviz.tokens import count

from .conftest import NOW, RECENCY, days_ago


def test_search_returns_every_item_with_the_fields_spec_lists(mem, aged):
    result = mem.search("supplier audit", params=RECENCY, now=NOW)
    for item in result.to_dict()["items"]:
        for field in ("id", "tier", "content", "similarity", "decay", "score", "retrieval_count",
                      "last_retrieved_at", "created_at", "agent_id"):
            assert field in item


def test_search_tiers_by_score_and_leaves_out_what_falls_below_theta3(mem, aged):
    result = mem.search("supplier audit", params=RECENCY, now=NOW)
    tiers = {item.id: item.tier for item in result.items}
    assert tiers == {aged["full"]: Tier.FULL, aged["summary"]: Tier.SUMMARY, aged["headline"]: Tier.HEADLINE}


def test_content_comes_back_at_the_tier(mem, aged):
    result = mem.search("supplier audit", params=RECENCY, now=NOW)
    for item in result.items:
        record = mem.get(item.id)
        assert item.content == record.text_at(item.tier)


def test_full_and_summary_results_count_as_retrieved_and_headlines_do_not(mem, aged):
    mem.search("supplier audit", params=RECENCY, now=NOW)
    assert mem.get(aged["full"]).retrieval_count == 1
    assert mem.get(aged["summary"]).retrieval_count == 1
    assert mem.get(aged["summary"]).last_retrieved_at == NOW
    assert mem.get(aged["headline"]).retrieval_count == 0
    assert mem.get(aged["headline"]).last_retrieved_at is None
    assert mem.get(aged["out"]).retrieval_count == 0


def test_the_search_and_what_it_touched_are_in_the_audit_log(mem, aged):
    mem.search("supplier audit", params=RECENCY, now=NOW, agent_id="ops")
    event = mem.audit(actions=["search"])[0]
    assert event.query == "supplier audit" and event.agent_id == "ops"
    assert sorted(event.details["touched"]) == sorted([aged["full"], aged["summary"]])
    assert event.details["counts"] == {"FULL": 1, "SUMMARY": 1, "HEADLINE": 1}


def test_returned_retrieval_count_is_the_one_before_the_search(mem, aged):
    mem.search("supplier audit", params=RECENCY, now=NOW)
    second = mem.search("supplier audit", params=RECENCY, now=NOW)
    assert {i.id: i.retrieval_count for i in second.items}[aged["full"]] == 1


def test_use_keeps_a_memory_sharp(mem, aged):
    later = days_ago(-10)  # ten days after NOW
    untouched = mem.search("supplier audit", params=RECENCY, now=later, touch=False)
    mem.search("supplier audit", params=RECENCY, now=NOW)  # FULL and SUMMARY items are used now
    used = mem.search("supplier audit", params=RECENCY, now=later, touch=False)
    before = {i.id: i.decay for i in untouched.items}
    after = {i.id: i.decay for i in used.items}
    assert after[aged["summary"]] > before[aged["summary"]]


def test_looking_without_touch_changes_no_memory_but_is_audited(mem, aged):
    mem.search("supplier audit", params=RECENCY, now=NOW, touch=False)
    assert all(mem.get(i).retrieval_count == 0 for i in aged.values())
    event = mem.audit(actions=["search"])[0]
    assert event.details["looked_only"] and event.details["touched"] == []


def test_expand_returns_the_full_text_and_counts_as_a_retrieval(mem, aged):
    record = mem.expand(aged["out"], now=NOW)
    assert record.text.startswith("The out memory")
    assert record.retrieval_count == 1 and record.last_retrieved_at == NOW
    assert mem.audit(actions=["expand"])[0].memory_id == aged["out"]


def test_recent_uses_name_who_used_each_memory_last(mem, aged):
    from datetime import UTC, datetime, timedelta

    start = datetime.now(UTC) - timedelta(seconds=5)
    mem.search("supplier audit", params=RECENCY, now=NOW, agent_id="ops", actor="ops")
    mem.expand(aged["full"], now=NOW, actor="auditor-ann")
    uses = mem.recent_uses(start)
    assert uses[aged["full"]].actor == "auditor-ann" and uses[aged["full"]].action == "expand"  # the later use wins
    assert uses[aged["summary"]].who == "ops" and uses[aged["summary"]].query == "supplier audit"
    assert aged["headline"] not in uses and aged["out"] not in uses  # a headline is not a retrieval
    assert mem.recent_uses(datetime.now(UTC) + timedelta(minutes=1)) == {}


def test_a_look_without_touch_is_not_a_recent_use(mem, aged):
    from datetime import UTC, datetime, timedelta

    mem.search("supplier audit", params=RECENCY, now=NOW, touch=False)
    assert mem.recent_uses(datetime.now(UTC) - timedelta(minutes=1)) == {}


def test_promote_lifts_the_tier_and_survives_reopening(store_path, embedder, aged, mem):
    before = {i.id: i.tier for i in mem.search("supplier audit", params=RECENCY, now=NOW, touch=False).items}
    assert aged["out"] not in before
    assert mem.promote(aged["out"], reason="key precedent") == Tier.HEADLINE
    assert mem.promote(aged["out"], reason="really key") == Tier.SUMMARY
    mem.close()
    reopened = lodviz.open(store_path, embedder=embedder)
    try:
        after = {i.id: i.tier for i in reopened.search("supplier audit", params=RECENCY, now=NOW, touch=False).items}
        assert after[aged["out"]] == Tier.SUMMARY
        events = reopened.audit(actions=["promote"])
        assert [e.details["reason"] for e in events] == ["really key", "key precedent"]
    finally:
        reopened.close()


def test_promote_stops_at_full_and_demote_at_no_floor(mem, aged):
    for _ in range(5):
        floor = mem.promote(aged["headline"])
    assert floor == Tier.FULL
    for _ in range(5):
        floor = mem.demote(aged["headline"])
    assert floor == Tier.OUT


def test_unknown_and_foreign_private_memories_answer_the_same(mem):
    private = mem.add("Agent A's private note about the Heron term sheet.", agent_id="a")
    shared = mem.add("Company holiday is 4 July.", agent_id="a", visibility="shared")
    for call in (lambda i: mem.expand(i, agent_id="b"), lambda i: mem.promote(i, agent_id="b"), lambda i: mem.get(i, agent_id="b")):
        with pytest.raises(MemoryNotFound) as foreign:
            call(private)
        with pytest.raises(MemoryNotFound) as missing:
            call(private + 1000)
        assert str(foreign.value).replace(str(private), "N") == str(missing.value).replace(str(private + 1000), "N")
    assert mem.get(shared, agent_id="b").agent_id == "a"
    found = {i.id for i in mem.search("Heron term sheet holiday", agent_id="b").items}
    assert private not in found


@pytest.mark.model
def test_exclude_pushes_down_memories_close_to_the_excluded_topic(model_mem):
    mem = model_mem
    cat = mem.add("Our cat Miso sleeps on the radiator every afternoon.", agent_id="a", created_at=NOW)
    dog = mem.add("The dog needs his rabies booster at the vet in March.", agent_id="a", created_at=NOW)
    plain = mem.search("pets at home", agent_id="a", now=NOW, touch=False)
    without_cats = mem.search("pets at home", agent_id="a", now=NOW, exclude=["cats"], touch=False)
    before = {i.id: i for i in plain.items}
    after = {i.id: i for i in without_cats.items}
    assert after[cat].penalty > after[dog].penalty
    assert after[cat].score < before[cat].score
    assert after[cat].penalty == pytest.approx(before[cat].score - after[cat].score, abs=1e-6) or after[cat].score == 0


LONG = (
    "The quarterly supplier audit of the Hyderabad API plant closed with two major observations. "
    "The HPLC audit trail had not been reviewed for eleven weeks, and one batch record carried a "
    "backdated correction signed by a supervisor who was on leave that day. No critical findings were "
    "raised. The CAPA plan is due on 30 June and Legal is checking what the quality agreement allows "
    "if it slips. We hold about seven months of API safety stock, so supply is not at risk this year."
)


def test_budget_is_respected_and_drops_resolution_before_items(mem):
    for word, age in (("first", 0), ("second", 1), ("third", 2)):
        mem.add(f"The {word} copy of the audit note. {LONG}", created_at=days_ago(age))
    assert mem.conflicts() == []  # copies, not contradictions: only budgets are at play here
    full = mem.search("supplier audit", params=RECENCY, now=NOW, touch=False)
    assert full.counts["FULL"] == 3
    real = count(mem.token_counter, full.render())  # the text the agent reads, in the model's tokens
    tight = mem.search("supplier audit", params=RECENCY, now=NOW, touch=False, budget_tokens=real - 1)
    assert tight.tokens == count(mem.token_counter, tight.render()) <= real - 1
    assert len(tight.items) == 3
    assert tight.counts["FULL"] == 2  # the lowest-scoring item alone dropped to a summary
    squeezed = mem.search("supplier audit", params=RECENCY, now=NOW, touch=False, budget_tokens=70)
    assert squeezed.tokens == count(mem.token_counter, squeezed.render()) <= 70
    assert squeezed.items and squeezed.items[0].tier == Tier.SUMMARY  # the best item stays readable


def test_the_default_budget_is_the_agents_profiles(mem, aged):
    mem.set_profile("legal", budget=40, actor="test")
    result = mem.search("supplier audit", agent_id="legal", now=NOW, touch=False, budget_tokens="default")
    assert result.budget_tokens == 40
    assert result.render().startswith("Memory within 40 tokens: ")
    assert count(mem.token_counter, result.render()) <= 40
    other = mem.search("supplier audit", agent_id="ops", now=NOW, touch=False, budget_tokens="default")
    assert other.budget_tokens == lodviz.params.DEFAULT_BUDGET  # an agent with no stored profile


def test_a_profile_budget_of_0_is_the_whole_landscape_and_one_below_a_headline_is_refused(mem, aged):
    mem.set_profile("legal", budget=0, actor="test")
    whole = mem.search("supplier audit", agent_id="legal", now=NOW, touch=False, budget_tokens="default")
    assert whole.budget_tokens is None and whole.render().startswith("Memory: ")
    with pytest.raises(InvalidParameters, match="budget must be 0"):
        mem.set_profile("legal", budget=5, actor="test")
    with pytest.raises(InvalidParameters, match='"default"'):
        mem.search("supplier audit", budget_tokens="plenty")  # type: ignore[arg-type]


def test_a_profiles_budget_survives_reopening(store_path, embedder, mem):
    mem.set_profile("legal", budget=777, actor="test")
    mem.close()
    with lodviz.open(store_path, embedder=embedder) as again:
        assert again.profile("legal").budget == 777


def test_a_profile_stored_before_budgets_existed_gets_the_default(store_path, embedder, mem):
    mem.set_profile("legal", alpha=0.4, actor="test")
    mem.close()
    import duckdb

    with duckdb.connect(str(store_path)) as con:  # what migration 011 leaves in a profile written before it
        con.execute("UPDATE profiles SET budget = NULL")
    with lodviz.open(store_path, embedder=embedder) as again:
        assert again.profile("legal").alpha == 0.4 and again.profile("legal").budget == lodviz.params.DEFAULT_BUDGET


def test_budget_below_one_headline_is_refused(mem, aged):
    with pytest.raises(BudgetTooSmall):
        mem.search("supplier audit", params=RECENCY, now=NOW, budget_tokens=2)


def test_a_budget_too_small_says_the_least_that_fits_and_that_least_fits(mem, aged):
    with pytest.raises(BudgetTooSmall, match=r"give at least (\d+)\.") as refused:
        mem.search("supplier audit", params=RECENCY, now=NOW, budget_tokens=20)
    least = int(str(refused.value).rsplit(" ", 1)[1].rstrip("."))
    assert "a budget of 20 tokens" in str(refused.value)  # the caller's budget, not what a header left of it
    result = mem.search("supplier audit", params=RECENCY, now=NOW, touch=False, budget_tokens=least)
    assert result.items and count(mem.token_counter, result.render()) <= least
    with pytest.raises(BudgetTooSmall):
        mem.search("supplier audit", params=RECENCY, now=NOW, budget_tokens=least - 1)


def test_empty_query_is_refused(mem):
    with pytest.raises(InvalidInput, match="query is empty"):
        mem.search("   ")


@pytest.mark.parametrize("text", ["", "   \n\t", b"\xff\xfe bad bytes"])
def test_bad_text_is_refused_and_nothing_is_stored(mem, text):
    with pytest.raises(InvalidInput):
        mem.add(text)
    assert len(mem) == 0


def test_a_bad_record_in_a_batch_stores_nothing(mem):
    with pytest.raises(InvalidInput, match="record 2"):
        mem.add_many([{"text": "fine"}, {"text": ""}, {"text": "also fine"}])
    assert len(mem) == 0


def test_duplicate_text_is_stored_once(mem):
    first = mem.add("Same words.", agent_id="a")
    assert mem.add("Same   words.", agent_id="a") == first
    assert len(mem) == 1


def test_a_model_of_another_dimension_is_refused(store_path, mem):
    mem.add("something stored with MiniLM")
    mem.close()

    class Tiny:
        name = "tiny"
        dimension = 8

        def embed(self, texts):
            raise AssertionError("must not embed")

    other = lodviz.open(store_path, embedder=Tiny())
    try:
        with pytest.raises(EmbeddingMismatch, match="8-dimensional.*384-dimensional"):
            other.search("anything")
        with pytest.raises(EmbeddingMismatch):
            other.add("new text")
        assert len(other) == 1
    finally:
        other.close()


def test_profiles_apply_to_searches_and_changes_are_audited(mem, aged):
    mem.set_profile("ops", RECENCY, reason="test")
    result = mem.search("supplier audit", agent_id="ops", now=NOW, touch=False)
    assert result.params == RECENCY
    event = mem.audit(actions=["profile"])[0]
    assert event.agent_id == "ops" and event.details["new"]["lam"] == 0.1
    assert mem.set_profile("ops", "digest").alpha == lodviz.PRESETS["digest"].alpha


def test_recent_returns_the_window_tiered_by_use(mem, aged):
    mem.expand(aged["summary"], now=NOW)
    for _ in range(6):
        mem.expand(aged["headline"], now=NOW)
    result = mem.recent(days_ago(30), NOW, now=NOW, touch=False)
    tiers = {i.id: i.tier for i in result.items}
    assert aged["out"] not in tiers  # created 60 days ago
    assert tiers[aged["full"]] == Tier.HEADLINE  # never used
    assert tiers[aged["headline"]] == Tier.FULL  # used six times


def test_unseen_lists_only_never_retrieved_memories(mem, aged):
    mem.expand(aged["full"], now=NOW)
    ids = {i.id for i in mem.unseen(now=NOW, touch=False).items}
    assert ids == {aged["summary"], aged["headline"], aged["out"]}


def test_sample_favours_the_most_faded(mem):
    fresh = [mem.add(f"Fresh note number {i} about lab supplies.", created_at=NOW) for i in range(5)]
    stale = [mem.add(f"Old note number {i} about the 2019 offsite.", created_at=days_ago(900)) for i in range(5)]
    picks = {i: 0 for i in fresh + stale}
    for seed in range(40):
        for item in mem.sample(2, now=NOW, seed=seed, touch=False).items:
            picks[item.id] += 1
    assert sum(picks[i] for i in stale) > 5 * sum(picks[i] for i in fresh)


def test_find_opens_memories_by_the_words_of_their_text(mem):
    old = mem.add("The Paragon MSA caps liability at 2x annual fees.", agent_id="legal", created_at=days_ago(30))
    new = mem.add("Paragon asked to lower the liability cap to 1x fees.", agent_id="legal", created_at=days_ago(1))
    mem.add("Private note of another agent about the Paragon liability cap.", agent_id="other", created_at=days_ago(2))
    mem.add("100% of the batch_size setting is used.", agent_id="legal", created_at=days_ago(3))
    assert [r.id for r in mem.find("paragon LIABILITY", agent_id="legal")] == [new, old]  # every word, any case, newest first
    assert len(mem.find("paragon liability")) == 3  # no agent: every memory
    assert mem.find("100% batch_size", agent_id="legal")[0].text.startswith("100%")  # LIKE wildcards are literal
    assert mem.find("10_% batch", agent_id="legal") == []
    with pytest.raises(InvalidInput):
        mem.find("   ")
