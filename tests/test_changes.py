"""What changed tier between two settings (lodviz.changes, Memory.compare), and the labels the scene hovers show."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lodviz import Tier
from lodviz.changes import tier_changes

from .conftest import NOW, RECENCY, days_ago

tiers = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=60)


@given(tiers)
def test_every_memory_that_changed_tier_is_listed_once_under_one_kind(pairs):
    ids = np.arange(len(pairs), dtype=np.int64) + 100
    before = np.array([p[0] for p in pairs], dtype=np.int8)
    after = np.array([p[1] for p in pairs], dtype=np.int8)
    changes = tier_changes(ids, before, after)
    assert sorted(changes.ids.tolist()) == [int(i) for i, (b, a) in zip(ids, pairs) if b != a]
    assert sum(changes.counts.values()) == len(changes)
    for memory_id, (b, a) in zip(ids.tolist(), pairs):
        if b == a:
            continue
        expected = "in" if b == Tier.OUT else "out" if a == Tier.OUT else "up" if a > b else "down"
        assert memory_id in changes.of(expected).tolist()


def test_a_move_of_alpha_lists_the_memories_whose_returned_tier_changed(mem):
    ids = [mem.add(f"Supplier audit note {i} about the Hyderabad plant.", created_at=days_ago(age)) for i, age in enumerate((0, 5, 20, 60))]
    before, after = RECENCY, RECENCY.with_(lam=0.02)  # slower decay: older memories climb

    changes = mem.compare(before, after, "supplier audit", now=NOW)

    a = mem.landscape("supplier audit", params=before, now=NOW)
    b = mem.landscape("supplier audit", params=after, now=NOW)
    expected = {int(i): (int(x), int(y)) for i, x, y in zip(a.state.ids, a.returned_tiers(), b.returned_tiers()) if x != y}
    assert expected  # the move does change something
    assert dict(zip(changes.ids.tolist(), zip(changes.before.tolist(), changes.after.tolist()))) == expected
    assert set(changes.of("up").tolist()) | set(changes.of("in").tolist()) == set(expected)
    assert ids[0] not in expected  # a memory of today is FULL under both


def test_under_a_budget_a_move_lists_what_the_agent_receives_differently(mem):
    for i, age in enumerate((0, 5, 20, 60, 120, 240)):
        mem.add(f"Supplier audit note {i} about the Hyderabad plant: findings, owners and the follow-up visit.", created_at=days_ago(age))
    before, after = RECENCY, RECENCY.with_(lam=0.002)
    budget = 60  # a few memories' worth: the budget, not the thresholds, decides most tiers

    changes = mem.compare(before, after, "supplier audit", now=NOW, budget_tokens=budget)

    ids = np.sort(mem.columns().ids)
    got = [mem.search("supplier audit", params=p, now=NOW, budget_tokens=budget, touch=False, record=False).tiers_of(ids) for p in (before, after)]
    expected = {int(i): (int(x), int(y)) for i, x, y in zip(ids, *got) if x != y}
    assert expected  # the move changes what the agent receives
    assert dict(zip(changes.ids.tolist(), zip(changes.before.tolist(), changes.after.tolist()))) == expected
    unbudgeted = mem.compare(before, after, "supplier audit", now=NOW)
    assert len(unbudgeted) > len(changes)  # without the budget more tiers move than the agent ever sees


def test_a_results_tiers_of_its_ids_are_its_items_tiers_and_out_for_the_rest(mem):
    for i in range(5):
        mem.add(f"Supplier audit note {i}.", created_at=days_ago(i))
    result = mem.search("supplier audit", now=NOW, budget_tokens=30, touch=False, record=False)
    ids = np.sort(mem.columns().ids)
    tiers = dict(zip(ids.tolist(), result.tiers_of(ids).tolist()))
    assert {hit.id: int(hit.tier) for hit in result.items} == {i: t for i, t in tiers.items() if t != Tier.OUT}
    assert sum(t == Tier.OUT for t in tiers.values()) == len(ids) - len(result.items)


def test_the_change_table_is_a_dataframe_an_auditor_can_filter(mem):
    for age in (0, 20, 60):
        mem.add(f"Audit note written {age} days ago.", created_at=days_ago(age))
    frame = mem.compare(RECENCY, RECENCY.with_(lam=0.01), now=NOW).frame()
    assert list(frame.columns) == ["memory_id", "before", "after", "change"]
    assert set(frame.change) <= {"up", "down", "in", "out"} and len(frame) >= 1


def test_labels_carry_the_source_and_metadata_an_importer_kept(mem):
    memory_id = mem.add("Ran the test suite: 12 passed.", source="claude-code:shop/abc123", kind="tool_result",
                        metadata={"tool": "Bash", "session": "abc123", "project": "/home/dev/shop", "tool_use_id": "toolu_1"})
    label = mem.labels([memory_id])[memory_id]
    assert label.source == "claude-code:shop/abc123"
    assert label.metadata["tool"] == "Bash"
    assert label.details() == ["tool: Bash", "session: abc123", "project: /home/dev/shop"]


def test_memories_matching_words_are_found_by_their_text(mem):
    hit = mem.add("The Hyderabad plant passed its supplier audit.")
    mem.add("Quarterly revenue grew.")
    assert mem.ids_matching("hyderabad AUDIT") == [hit]
    assert mem.ids_matching("   ") == []
