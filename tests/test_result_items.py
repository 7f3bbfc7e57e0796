"""How a search's items are made: times from epoch seconds, token estimates from stored lengths."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lodviz import memory
from lodviz.budget import estimate_tokens

seconds = st.one_of(st.just(math.nan), st.floats(0, 4e9, allow_nan=False), st.sampled_from([1.7e9, 1.7e9 + 0.5]))


@given(st.lists(seconds, max_size=50))
def test_times_are_utc_datetimes_of_their_seconds_and_none_for_never(values):
    got = memory._datetimes(np.array(values, dtype=np.float64))
    assert got == [None if x != x else datetime.fromtimestamp(x, UTC) for x in values]
    assert all(t is None or t.tzinfo is UTC for t in got)


def test_each_item_estimates_its_tokens_from_the_text_it_carries(mem):
    for i in range(30):
        mem.add(f"note {i}: " + "the budget review for the harbour project " * (1 + i % 5))
    result = mem.search("harbour budget review", touch=False)
    assert result.items
    assert [item.tokens for item in result.items] == [estimate_tokens(item.content) for item in result.items]
