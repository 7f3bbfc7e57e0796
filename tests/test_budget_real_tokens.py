"""A budget is kept in real tokens of exactly the text the agent receives, on any store.

Property tests over random stores, queries and budgets: the rendered result,
counted with a real tokenizer (the bundled model's WordPiece, and the cautious
fallback), never exceeds the budget. The deterministic test embedder keeps
them fast; what is pinned is the counting, not the ranking.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lodviz
from lodviz.errors import BudgetTooSmall
from lodviz.ingest.embed import bundled_model_path
from lodviz.testing import HashEmbedder
from lodviz.tokens import count, token_counter

WORDS = (
    "the board approved budget liability cap clause Paragon CRO trial AUR-302 interaction CYP3A4 inhibitor "
    "Tbilisi shakshuka Wes Paloma moved Calgary #42 2026 $1.5M 95% hazard ratio … — “quoted” naïve café "
    "zürich 東京 emoji 🙂 supercalifragilistic antidisestablishmentarianism e.g. i.e. Dr. Solberg"
).split()
START = datetime(2025, 1, 1, tzinfo=UTC)


def random_text(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(1, 12)):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 25))]
        sentences.append(" ".join(words).capitalize() + rng.choice([".", "!", "?", ":", ""]))
    text = " ".join(sentences)
    if rng.random() < 0.3:
        text = f"{rng.choice(['Wes', 'Paloma', 'user', 'Dr. Solberg'])}: {text}"
    if rng.random() < 0.2:
        text = "Heading line\n" + text.replace(". ", ".\n")
    return text


@pytest.fixture(scope="module", params=["model", "regex"])
def store(request, tmp_path_factory):
    if request.param == "model" and bundled_model_path() is None:
        pytest.skip("the bundled model is not installed")
    tokenizer = bundled_model_path() if request.param == "model" else "regex"
    path = tmp_path_factory.mktemp("budget") / f"{request.param}.duckdb"
    mem = lodviz.open(path, embedder=HashEmbedder(), tokenizer=tokenizer)
    rng = random.Random(7)
    records = []
    for i in range(160):
        record = {"text": f"{i} {random_text(rng)}", "created_at": START + timedelta(days=rng.randint(0, 500), hours=rng.randint(0, 23))}
        if rng.random() < 0.3:
            record.update(retrieval_count=rng.randint(1, 9), last_retrieved_at=START + timedelta(days=rng.randint(400, 520)))
        if rng.random() < 0.05:
            record["floor"] = rng.choice(["HEADLINE", "SUMMARY", "FULL"])
        records.append(record)
    mem.add_many(records)
    yield mem
    mem.close()


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    budget=st.integers(16, 3000),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join),
    alpha=st.floats(0, 1),
    exclude=st.lists(st.sampled_from(WORDS), max_size=2),
)
def test_a_budgeted_result_never_exceeds_its_budget_in_real_tokens(store, budget, query, alpha, exclude):
    params = lodviz.Params(alpha=alpha, lam=0.01, theta1=0.5, theta2=0.2, theta3=0.02)
    try:
        result = store.search(query, params=params, budget_tokens=budget, exclude=exclude, touch=False, now=START + timedelta(days=530))
    except BudgetTooSmall:
        return
    text = result.render()
    assert count(store.token_counter, text) <= budget
    assert result.tokens == count(store.token_counter, text)


def test_the_model_counter_counts_what_the_model_sees():
    if bundled_model_path() is None:
        pytest.skip("the bundled model is not installed")
    counter = token_counter(bundled_model_path())
    assert count(counter, "hello world") == 2
    assert count(counter, "antidisestablishmentarianism") > 1  # a rare word is several pieces
    assert count(counter, "a\nb") == 2  # a line break is free in WordPiece


def test_the_fallback_counts_at_least_as_many_tokens_as_wordpiece():
    if bundled_model_path() is None:
        pytest.skip("the bundled model is not installed")
    model, regex = token_counter(bundled_model_path()), token_counter("regex")
    rng = random.Random(3)
    for _ in range(200):
        text = random_text(rng)
        assert count(regex, text) >= count(model, text), text
