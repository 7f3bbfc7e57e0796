"""How a search's items are made: times from epoch seconds, token estimates from stored lengths."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from lodviz import memory
from lodviz.budget import estimate_tokens

seconds = st.one_of(st.just(math.nan), st.floats(0, 4e9, allow_nan=False), st.sampled_from([1.7e9, 1.7e9 + 0.5]))


@given(st.lists(seconds, max_size=50), st.lists(seconds, max_size=50))
def test_times_are_utc_datetimes_of_their_seconds_and_none_for_never(first, second):
    known: dict[float, datetime] = {}
    for values in (first, second):  # the second call meets some already known
        got = memory._datetimes(values, known)
        assert got == [None if x != x else datetime.fromtimestamp(x, UTC) for x in values]
        assert all(t is None or t.tzinfo is UTC for t in got)


def test_a_known_time_is_handed_out_again_not_made_again():
    known: dict[float, datetime] = {}
    (first,) = memory._datetimes([1.7e9], known)
    (again,) = memory._datetimes([1.7e9], known)
    assert again is first


def test_the_known_times_are_emptied_past_their_limit(monkeypatch):
    monkeypatch.setattr(memory, "KNOWN_TIMES", 3)
    known: dict[float, datetime] = {}
    memory._datetimes([1.0, 2.0, 3.0, 4.0], known)
    memory._datetimes([5.0], known)
    assert list(known) == [5.0]


def test_each_item_estimates_its_tokens_from_the_text_it_carries(mem):
    for i in range(30):
        mem.add(f"note {i}: " + "the budget review for the harbour project " * (1 + i % 5))
    result = mem.search("harbour budget review", touch=False)
    assert result.items
    assert [item.tokens for item in result.items] == [estimate_tokens(item.content) for item in result.items]
