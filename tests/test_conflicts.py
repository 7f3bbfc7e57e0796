"""Conflicting memories: found at ingestion, returned together, resolved by an auditor, audited."""

from __future__ import annotations

from datetime import date

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


def test_a_name_swapped_alone_is_not_a_candidate(mem):
    # Names swapped ("S-3 instead of Lantern", "Dec-1 instead of Leiden") were every open candidate on the
    # sample store and none was real: a candidate needs a value that can be checked.
    mem.add("Paloma moved to Calgary last spring.", agent_id="a", created_at="2025-01-01T00:00:00Z")
    mem.add("Paloma moved to Denver last spring.", agent_id="a", created_at="2025-06-01T00:00:00Z")
    assert mem.conflicts() == []


def find(older: str, newer: str, written=(date(2025, 1, 10), date(2025, 6, 10))) -> dict[int, str]:
    """The detector's verdict on two texts written on the two days: {0: reason} or {}."""
    return rules.find(rules.claims(newer, written[1]), [rules.claims(older, written[0])])


def test_a_moved_plan_is_a_conflict():
    older = "ASCEND-2 close-out: database lock planned for 6 November 2026, topline two weeks later."
    newer = "ASCEND-2 close-out: database lock planned for 3 November 2026, topline two weeks later."
    assert find(older, newer, (date(2026, 5, 1), date(2026, 9, 1))) == {0: "3 November 2026 instead of 6 November 2026"}


def test_the_next_meeting_is_not_a_moved_one():
    older = "Board outcomes. Next board meeting: 15 May in Cambridge."
    newer = "Board outcomes. Next board meeting: 18 September in Cambridge."
    assert find(older, newer, (date(2025, 2, 20), date(2025, 5, 16))) == {}


def test_a_day_already_past_when_written_is_a_record_not_a_plan():
    older = "The board meeting was held on 3 February in Cambridge."
    newer = "The board meeting is on 10 February in Cambridge."
    assert find(older, newer, (date(2025, 3, 1), date(2025, 3, 2))) == {}


def test_a_measurement_is_not_a_commitment():
    assert find("ASCEND-2 readiness: 470 open queries, SAP frozen.", "ASCEND-2 readiness: 410 open queries, SAP frozen.") == {}
    assert find("AURB closed at $47.05, XBI up.", "AURB closed at $44.85, XBI up.") == {}


def test_a_proposal_states_no_term():
    older = "Baxtrom sent its term sheet: they propose a DS-loss cap of $1M per batch."
    newer = "Baxtrom CSA v3 agreed: the DS-loss cap is $2M per batch."
    assert find(older, newer) == {}
    assert find("Agreed on the DS-loss cap: $1M per batch.", newer) == {0: "$2M instead of $1M"}


def test_values_that_agree_in_substance_are_not_a_conflict():
    assert find("Results must be posted within 12 months of completion.", "Results must be posted within one year of completion.") == {}
    assert find("Last participant visit: end of December 2026.", "Last participant visit: late December 2026.") == {}


def test_a_value_the_newer_text_marks_as_gone_is_not_its_claim():
    older = "ASCEND-2 close-out: database lock planned for 6 November 2026, topline two weeks later."
    newer = "ASCEND-2 close-out: database lock moved up from 6 November 2026; planned for 3 November 2026, topline two weeks later."
    assert find(older, newer, (date(2026, 5, 1), date(2026, 9, 1))) == {0: "3 November 2026 instead of 6 November 2026"}


def test_two_subjects_named_apart_are_not_one_claim():
    older = "Catalyst calendar: ASCEND-2 topline expected in Q4 2026, press release before market open."
    newer = "Catalyst calendar: ASCEND-3 topline expected in Q1 2027, press release before market open."
    assert find(older, newer, (date(2025, 12, 1), date(2026, 1, 5))) == {}


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
    # Three earlier memories each give the slot another value: the newest is the next report, not a contradiction.
    texts = [f"Weekly note: launch team travel budget cap ${n},000 per quarter." for n in (40, 45, 50)]
    earlier = [rules.claims(t, date(2025, 1, 6 + 7 * i)) for i, t in enumerate(texts)]
    newest = rules.claims("Weekly note: launch team travel budget cap $55,000 per quarter.", date(2025, 2, 3))
    assert rules.find(newest, earlier) == {}
    assert rules.find(newest, earlier[:1]) == {0: "$55,000 instead of $40,000"}


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


def test_two_people_saying_alike_is_not_a_conflict():
    assert find("Wes: the fee cap is $5M per claim.", "Paloma: the fee cap is $6M per claim.") == {}
    assert find("Wes: the fee cap is $5M per claim.", "Wes: the fee cap is $6M per claim.") == {0: "$6M instead of $5M"}


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


LONG_TERMS = (
    "Heron co-development agreement, key terms for the deal team.\n\n"
    "Territory and scope. Lindqvist takes the EEA, the UK and Switzerland; Aurelian keeps the US and the rest of "
    "the world. A joint steering committee meets quarterly and a joint development committee monthly.\n\n"
    "Governance. Aurelian holds the casting vote on global development, safety and manufacturing; Lindqvist on "
    "European commercial matters. Disputes go to the chief executives, then to ICC arbitration in London.\n\n"
    "Economics. Upfront payment by Lindqvist to Aurelian of US$75 million, payable within 30 days after the "
    "effective date. Development costs are shared 60/40. Royalties are tiered on European net sales.\n\n"
    "Intellectual property. Aurelian owns the background and program IP; Lindqvist gets a licence back for its "
    "territory. Present assignment language throughout."
)
SHORT_TERMS = (
    "Economics as executed. Upfront payment by Lindqvist to Aurelian of US$60 million, payable within 45 days after "
    "the effective date. Development costs are shared 60/40."
)


def test_a_long_documents_one_paragraph_is_compared_through_its_passages(mem, embedder):
    long = mem.add(LONG_TERMS, agent_id="legal", kind="document", created_at="2025-03-18T09:00:00Z")
    short = mem.add(SHORT_TERMS, agent_id="legal", created_at="2025-10-14T09:00:00Z")
    whole = embedder.embed([LONG_TERMS, SHORT_TERMS])
    whole = whole / (whole ** 2).sum(axis=1, keepdims=True) ** 0.5
    assert float(whole[0] @ whole[1]) < rules.SIMILAR  # the memories as wholes are too far apart to be compared
    (found,) = mem.conflicts()
    assert (found.memory_id, found.other_id) == (short, long)
    assert found.reason in ("US$60 million instead of US$75 million", "45 days instead of 30 days")


@pytest.mark.parametrize("backend", ["duckdb", "postgres"])
def test_finding_candidates_again_replaces_the_open_ones_and_keeps_decided_ones(request, store_path, embedder, backend):
    where = str(store_path) if backend == "duckdb" else request.getfixturevalue("pg_url")
    mem = lodviz.open(where, embedder=embedder)
    try:
        old = mem.add(CAP_2X, agent_id="legal", created_at="2025-01-10T09:00:00Z")
        new = mem.add(CAP_3X, agent_id="legal", created_at="2025-06-10T09:00:00Z")
        mem.resolve_conflict(new, old, reason="two contracts", actor="auditor")
        newest = mem.add(CAP_2X.replace("2x", "4x"), agent_id="legal", created_at="2025-09-10T09:00:00Z")
        before = {(c.memory_id, c.other_id): c.status for c in mem.conflicts(status=None)}
        dropped, found = mem.redetect_conflicts(actor="auditor")
        after = {(c.memory_id, c.other_id): c.status for c in mem.conflicts(status=None)}
        assert before == after == {(new, old): "kept", (newest, new): "open", (newest, old): "open"}
        assert (dropped, found) == (2, 3)  # the decided pair is found again and stays decided
        (event,) = mem.audit(actions=["redetect"])
        assert event.actor == "auditor" and event.details["found"] == 3
    finally:
        mem.close()
