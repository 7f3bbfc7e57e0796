"""Conflicting memories: found at ingestion, returned together, resolved by an auditor, audited."""

from __future__ import annotations

import duckdb
import pytest

import lodviz
from lodviz import conflicts as rules
from lodviz.errors import InvalidInput, MemoryNotFound

CAP_2X = "Paragon Clinical MSA: liability cap at 2x annual fees, carve-out for data breaches."
CAP_3X = "Paragon Clinical MSA: liability cap at 3x annual fees, carve-out for data breaches."
QUERY = "liability cap in the Paragon MSA"


@pytest.fixture
def pair(mem):
    old = mem.add(CAP_2X, agent_id="legal", created_at="2025-01-10T09:00:00Z")
    new = mem.add(CAP_3X, agent_id="legal", created_at="2025-06-10T09:00:00Z")
    return old, new


def test_a_changed_number_is_a_conflict_candidate(mem, pair):
    old, new = pair
    (found,) = mem.conflicts()
    assert (found.memory_id, found.other_id) == (new, old)
    assert found.reason == "3x instead of 2x" and found.status == "open"
    assert mem.audit(actions=["write"])[0].details["conflicts"] == [[new, old]]


def test_a_changed_name_is_a_conflict_candidate(mem):
    mem.add("Paloma moved to Calgary last spring.", agent_id="a", created_at="2025-01-01T00:00:00Z")
    mem.add("Paloma moved to Denver last spring.", agent_id="a", created_at="2025-06-01T00:00:00Z")
    (found,) = mem.conflicts()
    assert found.reason == "Denver instead of Calgary"


def test_a_paraphrase_is_not_a_conflict(mem):
    mem.add("Paloma moved to Calgary last spring.", agent_id="a")
    mem.add("Last spring, Paloma relocated to Calgary.", agent_id="a")
    assert mem.conflicts() == []


def test_an_exact_duplicate_is_not_a_conflict(mem):
    first = mem.add(CAP_2X, agent_id="a")
    assert mem.add("  " + CAP_2X.replace(" ", "  ") + " ", agent_id="a") == first  # the same memory
    mem.add(CAP_2X, agent_id="b", visibility="shared")  # the same words from another agent
    assert mem.conflicts() == []


def test_a_series_of_reports_is_not_a_conflict():
    a = rules.facts("AURB $43.70 (+0.5%), XBI -0.4%. Volume normal. No identified catalyst.")
    b = rules.facts("AURB $53.40 (+0.6%), XBI -0.1%. No identified catalyst.")
    assert rules.difference(a, b, 0.95) is None


def test_a_conflict_within_one_import_is_found(mem):
    mem.add_many([
        {"text": CAP_2X, "agent_id": "legal", "created_at": "2025-01-10T09:00:00Z"},
        {"text": CAP_3X, "agent_id": "legal", "created_at": "2025-06-10T09:00:00Z"},
    ])
    assert len(mem.conflicts()) == 1


def test_another_agents_private_memory_is_never_a_partner(mem):
    mem.add(CAP_2X, agent_id="a")
    mem.add(CAP_3X, agent_id="b")
    assert mem.conflicts() == []


def test_a_search_that_returns_one_returns_the_other_marked(mem, pair):
    old, new = pair
    result = mem.search("liability cap 3x", agent_id="legal", touch=False, k=1)
    assert [item.id for item in result.items][:1] == [new]
    by_id = {item.id: item for item in result.items}
    assert by_id[new].conflicts == [old] and by_id[old].conflicts == [new]
    text = result.render()
    assert f"[may conflict with #{old}]" in text and f"[may conflict with #{new}]" in text


def test_keeping_both_clears_the_mark_and_is_audited(mem, pair):
    old, new = pair
    resolved = mem.resolve_conflict(old, new, reason="two different contracts", actor="auditor")
    assert resolved.status == "kept" and resolved.resolved_by == "auditor"
    result = mem.search(QUERY, agent_id="legal", touch=False)
    assert all(not item.conflicts for item in result.items)
    event = mem.audit(actions=["resolve"])[0]
    assert event.actor == "auditor" and event.details["status"] == "kept" and event.agent_id == "legal"


def test_a_superseded_memory_comes_back_marked(mem, pair):
    old, new = pair
    mem.resolve_conflict(new, old, superseded=old, reason="amendment 2 raised the cap")
    by_id = {item.id: item for item in mem.search(QUERY, agent_id="legal", touch=False).items}
    assert by_id[old].superseded_by == new and by_id[new].superseded_by is None
    assert f"[superseded by #{new}]" in mem.search(QUERY, agent_id="legal", touch=False).render()


def test_a_conflict_with_a_forgotten_memory_is_closed(mem, pair):
    old, new = pair
    mem.forget(new, reason="erasure request")
    (closed,) = mem.conflicts(status=None)
    assert closed.status == "forgotten"
    items = mem.search(QUERY, agent_id="legal", touch=False).items
    assert [item.id for item in items] == [old] and not items[0].conflicts
    with pytest.raises(InvalidInput, match="forgotten"):
        mem.resolve_conflict(old, new)
    with pytest.raises(MemoryNotFound):
        mem.get(new)


def test_a_superseding_memory_forgotten_leaves_the_old_one_unmarked(mem, pair):
    old, new = pair
    mem.resolve_conflict(new, old, superseded=old)
    mem.forget(new, reason="erasure request")
    (item,) = mem.search(QUERY, agent_id="legal", touch=False).items
    assert item.id == old and item.superseded_by is None


def test_resolving_what_is_not_a_conflict_is_refused(mem, pair):
    old, _ = pair
    other = mem.add("Unrelated note about the offsite venue.", agent_id="legal")
    with pytest.raises(InvalidInput, match="not a conflict"):
        mem.resolve_conflict(old, other)


def test_forgetting_erases_the_texts_and_keeps_the_audit(store_path, embedder):
    mem = lodviz.open(store_path, embedder=embedder)
    memory_id = mem.add("My passport number is 123456789.", agent_id="a")
    mem.forget(memory_id, reason="erasure request", actor="dpo")
    mem.close()
    with duckdb.connect(str(store_path), read_only=True) as con:  # the file itself keeps no trace of the text
        assert con.execute("SELECT count(*) FROM memories WHERE text LIKE '%123456789%'").fetchone()[0] == 0
    reopened = lodviz.open(store_path, embedder=embedder)
    try:
        assert len(reopened) == 0
        assert all("123456789" not in record.text for record in reopened.export_records())
        event = reopened.audit(actions=["forget"])[0]
        assert event.memory_id == memory_id and event.actor == "dpo" and event.details["reason"] == "erasure request"
        assert reopened.add("My passport number is 123456789.", agent_id="a") != memory_id  # may be written again
    finally:
        reopened.close()


def test_a_tools_new_output_is_an_observation_not_a_conflict(mem):
    mem.add("AURB closed at $47.05 (+0.4%), XBI +0.1%.", agent_id="digest", kind="tool_result", created_at="2025-07-11T21:00:00Z")
    mem.add("AURB closed at $44.85 (+0.4%), XBI +0.1%.", agent_id="digest", kind="tool_result", created_at="2025-12-04T21:00:00Z")
    assert mem.conflicts() == []


def test_a_speaker_label_is_not_a_name_in_the_claim():
    a = rules.facts("Priya: name the person, not the function.")
    b = rules.facts("Name the person, not the function: Gareth says Deccan replied.")
    assert "priya" not in a.names and rules.difference(a, b, 0.9) is None


def test_two_people_saying_alike_is_not_a_conflict():
    a = rules.facts("Wes: Catch you later, Paloma!")
    b = rules.facts("Paloma: Catch you later, Wes!")
    assert rules.difference(a, b, 0.95) is None


def test_a_flood_of_near_duplicates_makes_at_most_max_links_conflicts_per_memory(mem):
    # Each differs from every other in one number: every pair is a conflict candidate. Two batches,
    # so both the candidates among stored memories and those within a batch are bounded.
    n = 300
    report = mem.add_many(
        [{"text": f"Paragon Clinical MSA: liability cap at {i}x annual fees, carve-out for data breaches.", "agent_id": "legal"}
         for i in range(n)],
        batch_size=200,
    )
    assert len(report.added) == n
    found = mem.conflicts(limit=None)
    per_memory: dict[int, int] = {}
    for c in found:
        per_memory[c.memory_id] = per_memory.get(c.memory_id, 0) + 1
    bound = 3  # lodviz.conflicts.MAX_LINKS, pinned
    assert found and len(found) <= bound * n  # linear in the import, however alike its memories
    assert max(per_memory.values()) <= bound
    assert all(len(event.details.get("conflicts", [])) <= bound * 200 for event in mem.audit(actions=["write"]))


@pytest.mark.parametrize("backend", ["duckdb", "postgres"])
def test_forgetting_a_memory_erases_its_words_from_every_conflict_reason(request, store_path, embedder, backend):
    where = str(store_path) if backend == "duckdb" else request.getfixturevalue("pg_url")
    mem = lodviz.open(where, embedder=embedder)
    try:
        old = mem.add(CAP_2X, agent_id="legal", created_at="2025-01-10T09:00:00Z")
        new = mem.add(CAP_3X, agent_id="legal", created_at="2025-06-10T09:00:00Z")
        (found,) = mem.conflicts()
        assert found.reason == "3x instead of 2x"
        mem.forget(old, reason="erasure request", actor="dpo")
        (closed,) = mem.conflicts(status=None)
        assert closed.status == "forgotten" and "2x" not in closed.reason and "3x" not in closed.reason
        assert mem.conflicts(new) == []
    finally:
        mem.close()
