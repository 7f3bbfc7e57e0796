"""Long memories under a query: the camera sharpens the part of a memory it is near.

A long memory at SUMMARY comes back as its passages nearest the query, verbatim
and in order (its headline in front where the budget has room); FULL stays
whole, HEADLINE a headline, and queryless views show the stored summary.
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lodviz
from lodviz import passages
from lodviz.errors import BudgetTooSmall
from lodviz.ingest.embed import bundled_model_path
from lodviz.scoring import Tier
from lodviz.testing import HashEmbedder
from lodviz.tokens import count

START = datetime(2025, 1, 1, tzinfo=UTC)
TOPICS = [
    ("the harbour", "ferries", "the tide", "a lighthouse", "the pier"),
    ("the garden", "tomatoes", "the compost", "a greenhouse", "the hedge"),
    ("the office", "the printer", "a deadline", "the budget", "the meeting"),
    ("the kitchen", "bread", "the oven", "a recipe", "the spices"),
    ("the trip", "the train", "a hotel", "the museum", "the mountains"),
]


def transcript(rng: random.Random, topic: tuple[str, ...], turns: int, fact: str | None = None) -> str:
    lines = []
    for t in range(turns):
        who = "Ada" if t % 2 == 0 else "Bo"
        a, b = rng.sample(topic, 2)
        lines.append(f"{who}: We talked about {a} again, and {b} came up {rng.randint(2, 9)} times. It was {rng.choice(['fine', 'long', 'odd', 'good'])}.")
    if fact:
        lines.append(f"Bo: {fact}")
    return "\n".join(lines)


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def long_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("long") / "long.duckdb"
    mem = lodviz.open(path, embedder=HashEmbedder(tokenizer_source=bundled_model_path()))
    rng = random.Random(11)
    records = []
    for i in range(40):
        topic = TOPICS[i % len(TOPICS)]
        records.append({"text": transcript(rng, topic, rng.randint(8, 30)), "created_at": START + timedelta(days=i)})
    for i in range(20):  # short memories beside them
        records.append({"text": f"Note {i}: the {rng.choice(TOPICS)[1]} needs attention.", "created_at": START + timedelta(days=i, hours=3)})
    mem.add_many(records)
    yield mem
    mem.close()


def excerpts(result):
    return [item for item in result.items if item.excerpt]


def test_a_long_memory_near_the_query_comes_back_as_an_excerpt(long_store):
    result = long_store.search("ferries and the tide at the harbour", budget_tokens=800, touch=False)
    quoted = excerpts(result)
    assert quoted
    for item in quoted:
        assert item.tier == Tier.SUMMARY
        text = long_store.get(item.id).text
        for a, b in item.excerpt:
            assert flat(text[a:b]) in flat(item.content)  # verbatim
        starts = [a for a, _ in item.excerpt]
        assert starts == sorted(starts)  # in the memory's order


def test_the_header_counts_excerpts_apart(long_store):
    result = long_store.search("ferries and the tide at the harbour", budget_tokens=800, touch=False)
    n = len(excerpts(result))
    header = result.render().splitlines()[0]
    assert f"{n} excerpt" in header


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    budget=st.integers(16, 4000),
    words=st.lists(st.sampled_from([w for topic in TOPICS for w in " ".join(topic).split()]), min_size=1, max_size=6),
    alpha=st.floats(0, 1),
)
def test_an_excerpt_never_takes_a_result_over_its_budget_in_real_tokens(long_store, budget, words, alpha):
    params = lodviz.Params(alpha=alpha, lam=0.01, theta1=0.6, theta2=0.2, theta3=0.02)
    try:
        result = long_store.search(" ".join(words), params=params, budget_tokens=budget, touch=False, now=START + timedelta(days=60))
    except BudgetTooSmall:
        return
    text = result.render()
    assert count(long_store.token_counter, text) <= budget
    for item in excerpts(result):
        full = long_store.get(item.id).text
        assert all(flat(full[a:b]) in flat(item.content) for a, b in item.excerpt)


def test_without_a_budget_an_excerpt_keeps_to_the_summarys_share(long_store):
    params = lodviz.Params(alpha=1.0, lam=0.01, theta1=0.99, theta2=0.01, theta3=0.001)  # everything SUMMARY
    result = long_store.search("the compost and the greenhouse", params=params, touch=False)
    quoted = excerpts(result)
    assert quoted
    for item in quoted:
        record = long_store.get(item.id)
        a, b = item.excerpt[0]
        # headline first, or straight the memory's opening when its passages already say the whole headline
        assert item.content.startswith(record.headline.rstrip()) or (a == 0 and flat(item.content).startswith(flat(record.text[a:b])))
        sizes = [b - a for a, b in item.excerpt]
        assert len(sizes) == 1 or len(record.headline) + sum(sizes) <= len(record.summary)


def test_full_stays_whole(long_store):
    params = lodviz.Params(alpha=1.0, lam=0.01, theta1=0.001, theta2=0.0005, theta3=0.0001)  # everything FULL
    result = long_store.search("the printer and the deadline", params=params, touch=False)
    for item in result.items[:10]:
        assert item.tier == Tier.FULL
        assert not item.excerpt
        assert item.content == long_store.get(item.id).text


def test_queryless_views_show_the_stored_summary(long_store):
    result = long_store.recent(START, START + timedelta(days=100), touch=False)
    for item in result.items:
        assert not item.excerpt
        if item.tier == Tier.SUMMARY:
            assert item.content == long_store.get(item.id).summary


def test_a_short_memory_has_no_passages_and_comes_back_as_before(long_store):
    result = long_store.search("Note the printer needs attention", budget_tokens=2000, touch=False)
    for item in result.items:
        if not passages.is_long(long_store.get(item.id).text):
            assert not item.excerpt


@pytest.mark.model
def test_a_memory_whose_only_relevant_sentence_is_its_last_is_found_and_that_sentence_delivered(tmp_path, model_embedder):
    rng = random.Random(5)
    mem = lodviz.open(tmp_path / "buried.duckdb", embedder=model_embedder)
    fact = "By the way, the locker code for the gym on Carver Street is 4471."
    records = [{"text": transcript(rng, TOPICS[i % len(TOPICS)], rng.randint(15, 25)), "created_at": START + timedelta(days=i)}
               for i in range(30)]
    records[17]["text"] = transcript(rng, TOPICS[2], 24, fact=fact)
    mem.add_many(records)
    try:
        result = mem.search("what is the code of my gym locker?", budget_tokens=500, touch=False)
        assert fact in flat(result.render())
        assert re.search(r"4471", result.render())
    finally:
        mem.close()


def test_an_excerpt_marks_its_own_gaps_and_gets_no_extra_mark_at_the_end():
    from lodviz.result import line

    assert line(7, "… the last words.", False, quoted=True) == "#7 … the last words."
    assert line(7, "a summary", False) == "#7 a summary…"
