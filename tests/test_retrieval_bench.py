"""The retrieval benchmark: the synthetic conversation generator (fast) and one quick harness run (slow)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.conversation import CATEGORIES, check, from_json, generate, stats, to_json


@pytest.fixture(scope="module")
def conversations():
    return generate(seed=0, conversations=2)


def test_same_seed_same_bytes():
    assert to_json(generate(seed=5, conversations=1)) == to_json(generate(seed=5, conversations=1))


def test_different_seeds_differ():
    assert to_json(generate(seed=1, conversations=1)) != to_json(generate(seed=2, conversations=1))


def test_json_round_trip(conversations):
    text = to_json(conversations)
    assert to_json(from_json(text)) == text


def test_shape_in_range(conversations):
    for c in conversations:
        assert len(c.speakers) == 2 and c.speakers[0] != c.speakers[1]
        assert 24 <= len(c.sessions) <= 32
        days = (c.sessions[-1].started_at - c.sessions[0].started_at).days
        assert 9 * 30 - 15 <= days <= 14 * 31
        gaps = [(b.started_at - a.started_at).days for a, b in zip(c.sessions, c.sessions[1:])]
        assert min(gaps) >= 1 and max(gaps) >= 14  # days to weeks apart
        for s in c.sessions:
            assert 14 <= len(s.turns) <= 30
            assert all(a.at <= b.at for a, b in zip(s.turns, s.turns[1:]))
            assert s.started_at.tzinfo is not None
        turns = c.turns()
        assert 500 <= len(turns) <= 800
        lengths = [len(t.text.split()) for t in turns]
        assert min(lengths) >= 4 and max(lengths) <= 95
        assert sum(10 <= n <= 40 for n in lengths) / len(lengths) > 0.5
        assert 90 <= len(c.questions) <= 130
        assert {t.speaker for t in turns} == set(c.speakers)


def test_turn_ids_are_session_and_position(conversations):
    for c in conversations:
        for s in c.sessions:
            assert [t.turn_id for t in s.turns] == [f"D{s.index}:{i}" for i in range(1, len(s.turns) + 1)]


def test_turn_texts_distinct(conversations):
    # identical texts from one agent would be stored once by lodviz
    for c in conversations:
        texts = [f"{t.speaker}: {t.text}" for t in c.turns()]
        assert len(set(" ".join(t.split()) for t in texts)) == len(texts)


def test_every_question_checks_out(conversations):
    for c in conversations:
        assert check(c) == []


def test_evidence_exists_and_contains_the_answer(conversations):
    for c in conversations:
        index = c.turn_index()
        for q in c.questions:
            assert q.evidence and all(tid in index for tid in q.evidence), q
            assert len(set(q.evidence)) == len(q.evidence)
            assert q.keys and {tid for tid, _ in q.keys} <= set(q.evidence)
            for tid, key in q.keys:
                assert key.lower() in index[tid].text.lower(), (q.qid, tid, key)
            texts = " ".join(index[t].text.lower() for t in q.evidence)
            if q.category == "temporal":
                assert re.search(r"\d{4}", q.answer)  # a date from the session
            else:  # the answer, or its key entity, is said in an evidence turn
                assert q.answer.lower() in texts or any(k.lower() in texts for _, k in q.keys), q


def test_categories_all_present_and_mixed(conversations):
    for c in conversations:
        counts = Counter(q.category for q in c.questions)
        assert set(counts) == set(CATEGORIES)
        assert min(counts.values()) >= 8
        assert counts["single_old"] + counts["single_recent"] >= max(counts.values())


def test_category_rules(conversations):
    for c in conversations:
        n = len(c.sessions)
        session = {t.turn_id: int(t.turn_id[1:].split(":")[0]) for t in c.turns()}
        for q in c.questions:
            first = [session[t] for t in q.evidence]
            if q.category == "single_old":
                assert len(q.evidence) == 1 and first[0] <= max(1, n // 3)
            elif q.category == "single_recent":
                assert len(q.evidence) == 1 and first[0] > n - max(1, n // 3)
            elif q.category == "multi_hop":
                assert 2 <= len(q.evidence) <= 3
            elif q.category == "repeated":
                assert 2 <= len(q.evidence) <= 3 and len(set(first)) == len(first)
            elif q.category == "before_change":
                assert len(q.evidence) == 2 and first[0] < first[1]
            elif q.category in ("current", "temporal"):
                assert len(q.evidence) == 1


def test_questions_do_not_copy_the_turn(conversations):
    # paraphrased: the question shares well under all of its content words with its evidence
    stop = set("the a an of to in on at for with and or is was did does do what which who when where how their they "
               "them s it that this from by as be has have".split())
    overlaps = []
    for c in conversations:
        index = c.turn_index()
        for q in c.questions:
            qwords = {w for w in re.findall(r"[a-z']+", q.text.lower()) if w not in stop}
            ev = set(re.findall(r"[a-z']+", " ".join(index[t].text.lower() for t in q.evidence)))
            overlaps.append(len(qwords & ev) / max(1, len(qwords)))
    assert sum(overlaps) / len(overlaps) < 0.6


def test_stats(conversations):
    data = stats(conversations)
    assert [c["questions"] for c in data["conversations"]] == [len(c.questions) for c in conversations]
    assert json.dumps(data)


def test_small_conversation_for_quick_mode():
    (c,) = generate(seed=0, conversations=1, sessions=(8, 8), turns=(14, 22))
    assert len(c.sessions) == 8
    assert 100 <= len(c.turns()) <= 250
    assert 20 <= len(c.questions) <= 45
    assert check(c) == []
    assert {q.category for q in c.questions} == set(CATEGORIES)


@pytest.mark.slow
def test_quick_harness_run(tmp_path: Path):
    from benchmarks import retrieval

    # Every set and system, on six documents instead of the quick run's 18 (the harness, not the numbers, is under test).
    code = retrieval.main(["--quick", "--documents", "6", "--name", "quick-test", "--results-dir", str(tmp_path), "--workdir", str(tmp_path / "work")])
    assert code == 0
    result = json.loads((tmp_path / "quick-test.json").read_text())
    runs = result["runs"]
    assert set(runs) == {"flat", "lodviz-default", "lodviz-alpha1"}
    for name, run in runs.items():
        for budget, m in run["budgets"].items():
            assert m["questions"] > 0
            for key in ("recall_any", "recall_full_summary", "pooled_recall_any"):
                assert 0.0 <= m[key] <= 1.0, (name, budget, key)
            assert m["recall_full_summary"] <= m["recall_any"] + 1e-9
    for budget, m in runs["flat"]["budgets"].items():
        assert m["budget_violations"] == 0 and m["max_tokens"] <= int(budget)
        assert m["recall_full_summary"] == m["recall_any"]
    # the token counter is the real tokenizer: words are split into word pieces
    assert retrieval.count_tokens("hello world") == 2
    assert retrieval.count_tokens("") == 0
