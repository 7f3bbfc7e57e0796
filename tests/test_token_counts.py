"""Counting tokens: the counts a budget keeps are the tokenizer's, remembered or not."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lodviz.tokens import RegexTokenCounter, RememberedCounts


class Tally(RegexTokenCounter):
    """The cautious counter, noting which texts it was asked to count."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def count_many(self, texts):
        self.asked += list(texts)
        return super().count_many(texts)


texts = st.lists(st.text(alphabet="ab 1.", max_size=12), max_size=30)


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, min_size=1, max_size=4), st.integers(min_value=0, max_value=60))
def test_remembered_counts_are_the_counters_whatever_was_counted_before(calls, max_chars):
    remembered = RememberedCounts(RegexTokenCounter(), max_chars=max_chars)
    for batch in calls:
        assert remembered.count_many(batch).tolist() == RegexTokenCounter().count_many(batch).tolist()


def test_a_text_counted_once_is_not_counted_again():
    tally = Tally()
    remembered = RememberedCounts(tally)
    remembered.count_many(["one text", "another text"])
    remembered.count_many(["another text", "a third", "one text", "a third"])
    assert tally.asked == ["one text", "another text", "a third"]


def test_the_least_recently_counted_text_goes_first_past_the_bound():
    tally = Tally()
    remembered = RememberedCounts(tally, max_chars=10)
    remembered.count_many(["aaaa", "bbbb"])
    remembered.count_many(["aaaa"])  # used again: now the most recent
    remembered.count_many(["cccc"])  # 12 characters: "bbbb" goes
    tally.asked.clear()
    remembered.count_many(["aaaa", "cccc", "bbbb"])
    assert tally.asked == ["bbbb"]


def test_it_keeps_the_counters_name():
    assert RememberedCounts(RegexTokenCounter()).name == "regex"
