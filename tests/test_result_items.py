"""How a search's items are made: records of their fields, times from epoch seconds, token estimates from stored lengths."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lodviz import times
from lodviz.budget import estimate_tokens
from lodviz.result import Hit, count_tiers, render_items, returned_by_tier
from lodviz.scoring import Tier

seconds = st.one_of(st.just(math.nan), st.floats(0, 4e9, allow_nan=False), st.sampled_from([1.7e9, 1.7e9 + 0.5]))


@given(st.lists(seconds, max_size=50))
def test_times_are_utc_datetimes_of_their_seconds_and_none_for_never(values):
    got = times.datetimes(np.array(values, dtype=np.float64))
    assert got == [None if x != x else datetime.fromtimestamp(x, UTC) for x in values]
    assert all(t is None or t.tzinfo is UTC for t in got)


# A sequence of asks: each gives rows (some repeated across asks) and the value each row holds now.
asks = st.lists(st.lists(st.tuples(st.integers(0, 40), seconds), max_size=30, unique_by=lambda rv: rv[0]), max_size=8)


@given(asks, st.sampled_from([8, 1000]))
def test_times_kept_by_row_are_always_those_of_the_values_asked_for(sequence, max_rows):
    kept = times.RowDatetimes(max_rows=max_rows)
    for ask in sequence:
        rows = np.array([r for r, _ in ask], dtype=np.int64)
        values = np.array([v for _, v in ask], dtype=np.float64)
        assert kept.of(values, rows) == times.datetimes(values)  # a row's value may change between asks


def test_a_row_s_time_is_made_once_while_its_value_holds():
    kept = times.RowDatetimes()
    rows, values = np.array([3, 7]), np.array([1.7e9, 1.6e9])
    first = kept.of(values, rows)
    again = kept.of(values, rows)
    assert again[0] is first[0] and again[1] is first[1]
    touched = kept.of(np.array([1.8e9, 1.6e9]), rows)  # row 3 was retrieved since
    assert touched[0] == datetime.fromtimestamp(1.8e9, UTC) and touched[1] is first[1]


@given(st.lists(seconds, min_size=1, max_size=30), asks)
def test_times_filled_for_every_row_are_handed_out_while_their_values_hold(column, sequence):
    kept = times.RowDatetimes()
    values = np.array(column, dtype=np.float64)
    kept.fill(values)
    assert kept.of(values, np.arange(len(values))) == times.datetimes(values)
    for ask in sequence:  # rows past the filled ones, and values that changed since
        rows = np.array([r for r, _ in ask], dtype=np.int64)
        asked = np.array([v for _, v in ask], dtype=np.float64)
        assert kept.of(asked, rows) == times.datetimes(asked)


def test_a_filled_row_s_time_is_not_made_again():
    kept = times.RowDatetimes()
    kept.fill(np.array([1.7e9, np.nan, 1.6e9]))
    first = kept.of(np.array([1.6e9]), np.array([2]))
    assert first[0] is kept.of(np.array([1.6e9]), np.array([2]))[0]
    assert kept.of(np.array([np.nan]), np.array([1])) == [None]


def test_rows_past_the_limit_or_unknown_are_made_afresh():
    kept = times.RowDatetimes(max_rows=4)
    values = np.array([1.7e9])
    assert kept.of(values, np.array([9])) == kept.of(values, None) == times.datetimes(values)
    assert kept.of(values, np.array([9]))[0] is not kept.of(values, np.array([9]))[0]


def test_a_search_hands_out_the_times_of_its_memories_as_they_stand(mem):
    for i in range(6):
        mem.add(f"harbour note {i}", created_at=datetime(2026, 1, 1 + i, tzinfo=UTC))
    first = {item.id: item for item in mem.search("harbour note", now=datetime(2026, 2, 1, tzinfo=UTC)).items}
    second = {item.id: item for item in mem.search("harbour note", now=datetime(2026, 3, 1, tzinfo=UTC)).items}
    state = mem.columns()
    for i, item in second.items():
        row = int(np.flatnonzero(state.ids == i)[0])
        assert item.created_at == datetime.fromtimestamp(float(state.created_at[row]), UTC)
        if i in first and first[i].tier >= 2:  # FULL or SUMMARY: touched by the first search
            assert item.last_retrieved_at == datetime(2026, 2, 1, tzinfo=UTC)


def test_each_item_estimates_its_tokens_from_the_text_it_carries(mem):
    for i in range(30):
        mem.add(f"note {i}: " + "the budget review for the harbour project " * (1 + i % 5))
    result = mem.search("harbour budget review", touch=False)
    assert result.items
    assert [item.tokens for item in result.items] == [estimate_tokens(item.content) for item in result.items]


def _item(**changes):
    fields = dict(
        id=1, tier=Tier.SUMMARY, content="harbour budget", similarity=0.5, decay=0.25, score=0.4, penalty=0.0,
        retrieval_count=2, last_retrieved_at=None, created_at=datetime(2026, 1, 1, tzinfo=UTC), agent_id="a",
        visibility="shared", kind="note", source=None, floor=Tier.OUT, tokens=3,
    )
    return Hit(**{**fields, **changes})


def test_the_text_lists_days_under_their_years_each_heading_once_oldest_first():
    items = [
        _item(id=3, content="third", created_at=datetime(2024, 2, 9, tzinfo=UTC)),
        _item(id=1, content="first", created_at=datetime(2023, 12, 30, 9, tzinfo=UTC)),
        _item(id=2, content="second", created_at=datetime(2023, 12, 30, 17, tzinfo=UTC)),
        _item(id=4, content="fourth", created_at=datetime(2024, 3, 1, tzinfo=UTC)),
    ]
    lines = render_items("search", items).splitlines()
    assert lines[0] == "Memory: 4 summaries. … = condensed, memory_expand #id."  # the query is not repeated
    assert lines[1:] == ["2023", "30 Dec", "#1 first", "#2 second", "2024", "9 Feb", "#3 third", "1 Mar", "#4 fourth"]


def test_an_item_s_fields_read_by_name_and_default_to_whole_and_no_conflicts():
    item = _item()
    assert (item.id, item.tier, item.content, item.tokens) == (1, Tier.SUMMARY, "harbour budget", 3)
    assert item.whole is True and item.conflicts == () and item.superseded_by is None


def test_marking_one_item_s_conflicts_leaves_every_other_item_unmarked():
    marked, other = _item(id=1), _item(id=2)
    marked.conflicts = [2]
    marked.superseded_by = 2
    assert (marked.conflicts, marked.superseded_by) == ([2], 2)
    assert (other.conflicts, other.superseded_by) == ((), None)
    assert _item(id=1).conflicts == ()


def test_items_are_equal_only_if_their_conflicts_and_supersession_are_too():
    assert _item() == _item()
    marked = _item()
    marked.conflicts = [7]
    assert marked != _item()
    superseded = _item()
    superseded.superseded_by = 7
    assert superseded != _item()
    assert _item(score=0.41) != _item()
    assert "conflicts=[7]" in repr(marked)


def test_a_search_s_items_are_made_from_its_columns_field_by_field(mem):
    for i in range(12):
        mem.add(f"harbour note {i}: the crane budget", created_at=datetime(2026, 1, 1 + i, tzinfo=UTC))
    result = mem.search("harbour crane budget", touch=False, now=datetime(2026, 2, 1, tzinfo=UTC))
    assert result.items
    for item in result.items:
        record = mem.get(item.id)
        assert item.content == record.text_at(item.tier)
        assert (item.agent_id, item.visibility, item.kind, item.source) == (record.agent_id, record.visibility, record.kind, record.source)
        assert (item.created_at, item.retrieval_count, item.floor) == (record.created_at, record.retrieval_count, Tier(record.floor))
        assert isinstance(item.tier, Tier) and isinstance(item.floor, Tier)
        assert item.whole == (item.content == record.text)


def _notes(mem, n=12):
    for i in range(n):
        mem.add(f"harbour note {i}: the crane budget", created_at=datetime(2026, 1, 1 + i, tzinfo=UTC))


def test_a_search_s_counts_ids_and_tokens_match_its_items_before_and_after_they_are_made(mem):
    _notes(mem)
    result = mem.search("harbour crane budget", now=datetime(2026, 2, 1, tzinfo=UTC))
    counts, returned, tokens = result.counts, result.returned, result.tokens  # from the search's arrays
    assert sum(counts.values()) == 12
    assert (counts, returned, tokens) == (count_tiers(result.items), returned_by_tier(result.items), sum(i.tokens for i in result.items))
    line_of_audit = mem.audit(limit=1)[0]
    assert line_of_audit.details["returned"] == returned and line_of_audit.details["tokens"] == tokens


def test_items_read_later_are_those_of_the_moment_the_search_ran(mem):
    _notes(mem)
    first = mem.search("harbour crane budget", now=datetime(2026, 2, 1, tzinfo=UTC))
    assert first.returned["FULL"]
    before = {i: mem.get(i).retrieval_count for i in first.returned["FULL"]}
    mem.search("harbour crane budget", now=datetime(2026, 3, 1, tzinfo=UTC))  # touches the same memories again
    for item in first.items:  # made only now
        if item.tier == Tier.FULL:
            assert item.retrieval_count == before[item.id] - 1  # the count before the first search
            assert item.last_retrieved_at is None
    assert first.items is first.items  # made once


def test_a_result_made_from_pending_items_equals_one_made_from_the_list(mem):
    _notes(mem)
    when = datetime(2026, 2, 1, tzinfo=UTC)
    a = mem.search("harbour crane budget", now=when, touch=False)
    b = mem.search("harbour crane budget", now=when, touch=False)
    assert b.items == a.items and b == a
    assert "counts=" in repr(a)


def test_a_pickled_result_carries_its_items(mem):
    import pickle

    _notes(mem)
    result = mem.search("harbour crane budget", now=datetime(2026, 2, 1, tzinfo=UTC), touch=False)
    again = pickle.loads(pickle.dumps(result))
    assert again.items and again == result and again.render() == result.render()
