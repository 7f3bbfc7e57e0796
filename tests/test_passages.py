"""Cutting a long memory into passages, and an excerpt of them: pure text in, offsets and text out."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from lodviz import passages

TRANSCRIPT = "\n".join(
    [
        "Ada: Hi there, how was the trip to Lisbon last week?",
        "Bo: It was great. We saw the tram 28 and ate pasteis de nata by the river.",
        "Ada: Did you go to Sintra?",
        "Bo: Yes, on Tuesday. " + "We walked up the hill to the palace. " * 14,
        "Ada: Nice. My sister moved to Porto in March, she works at a bakery now.",
    ]
)


def _words(text: str) -> list[str]:
    return text.split()


def test_a_short_text_is_not_cut() -> None:
    assert passages.cut("The deploy finished at noon. Nothing failed.") == []
    assert not passages.is_long("The deploy finished at noon.")


def test_a_transcript_is_cut_at_its_turns() -> None:
    spans = passages.cut(TRANSCRIPT)
    texts = passages.texts(TRANSCRIPT, spans)
    assert texts[0] == "Ada: Hi there, how was the trip to Lisbon last week?"
    assert texts[2] == "Ada: Did you go to Sintra?"
    assert texts[-1] == "Ada: Nice. My sister moved to Porto in March, she works at a bakery now."


def test_a_turn_too_long_for_a_window_is_cut_at_its_sentences() -> None:
    texts = passages.texts(TRANSCRIPT, passages.cut(TRANSCRIPT))
    long_turn = [t for t in texts if "palace" in t]
    assert len(long_turn) >= 2
    assert long_turn[0].startswith("Bo: Yes, on Tuesday.")
    assert all(passages.tokens(t) <= passages.TURN_TOKENS for t in long_turn)


def test_a_long_single_turn_is_one_passage_as_in_a_transcript() -> None:
    # A memory per turn with many short sentences is long by its sentences; it stays one passage (a turn),
    # so an excerpt of it is the turn whole, not a window of it.
    turn = ("Wes: Oh wow. Really? Ha. I grew up in Willowmere, by the river. Everyone knew everyone there. "
            "We left in May, the year the mill closed. It rained for a week. Anyway, that was that.")
    assert passages.is_long(turn)
    assert passages.texts(turn, passages.cut(turn)) == [turn]


def test_a_document_packs_short_lines_and_keeps_its_last_sentence() -> None:
    doc = "\n".join(f"{i:03d} INFO worker {i} started" for i in range(60)) + "\nThe server password rotates every 90 days."
    texts = passages.texts(doc, passages.cut(doc))
    assert len(texts) > 1
    assert texts[-1].endswith("The server password rotates every 90 days.")
    assert all(passages.tokens(t) <= passages.MAX_TOKENS for t in texts)


def test_tokens_count_word_pieces_not_words() -> None:
    # A JSON record is 8 words by whitespace and 35 MiniLM tokens: its marks are tokens of their own.
    record = '{"user": "chloe.aziz", "role": "billing-viewer", "mfa": false, "team": "infrastructure"}'
    assert passages.tokens(record) == 36
    assert passages.tokens("The deploy ended at noon") == 5
    assert passages.tokens("2024-01-05T02:54:52.908Z") == 15  # 2024 (two) - 01 - 05 T 02 : 54 : 52 . 908 Z
    assert passages.tokens("internationalisation") == 3  # a long word is split into pieces


def test_a_log_is_cut_into_windows_of_a_few_lines() -> None:
    log = "\n".join(f"2024-01-05T02:{i % 60:02d}:52.908Z INFO orchid-crm-gateway user u{i} signed in from 10.54.157.{i}" for i in range(40))
    texts = passages.texts(log, passages.cut(log))
    # By words (11 a line) a window held 8 lines, some 330 word pieces; by tokens it holds two or three.
    assert all(1 <= t.count("\n") + 1 <= 3 for t in texts)
    assert all(passages.tokens(t) <= passages.MAX_TOKENS for t in texts)


_line = st.one_of(
    st.text(alphabet="abc XYZ.!?,:\t", min_size=0, max_size=80),
    st.builds(lambda name, rest: f"{name}: {rest}", st.sampled_from(["Ada", "Bo", "Dr. Li"]), st.text(alphabet="ab cd. E", max_size=200)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_line, min_size=0, max_size=40))
def test_passages_are_ordered_disjoint_stripped_slices_holding_every_word(lines: list[str]) -> None:
    text = "\n".join(lines)
    spans = passages.cut(text)
    if not passages.is_long(text):
        assert spans == []
        return
    assert spans
    last = 0
    for a, b in spans:
        assert last <= a < b <= len(text)
        piece = text[a:b]
        assert piece == piece.strip()
        assert not text[last:a].strip()  # nothing but space between passages
        last = b
    assert not text[last:].strip()
    assert _words(" ".join(passages.texts(text, spans))) == _words(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abcdefgh ", min_size=1, max_size=40), min_size=8, max_size=60))
def test_no_passage_is_longer_than_a_window_unless_one_sentence_is(sentences: list[str]) -> None:
    text = " ".join(f"{s.strip() or 'x'}.".capitalize() for s in sentences)
    for piece in passages.texts(text, passages.cut(text)):
        if passages.tokens(piece) > passages.MAX_TOKENS:
            assert len(passages.sentences(piece)) == 1


def test_an_excerpt_is_the_headline_then_the_chosen_passages_in_order_with_gaps() -> None:
    spans = passages.cut(TRANSCRIPT)
    out = passages.excerpt(TRANSCRIPT, spans, [len(spans) - 1, 0], "Ada and Bo talk about Lisbon.")
    assert out.startswith("Ada and Bo talk about Lisbon. — Ada: Hi there")
    assert out.index("Lisbon last week?") < out.index("bakery now.")
    assert " … Ada: Nice." in out
    assert not out.endswith(passages.GAP)  # the last passage is the end of the text


def test_an_excerpt_keeps_every_chosen_sentence_verbatim() -> None:
    spans = passages.cut(TRANSCRIPT)
    out = passages.excerpt(TRANSCRIPT, spans, [1], "Lisbon.")
    flat = re.sub(r"\s+", " ", out)
    assert "We saw the tram 28 and ate pasteis de nata by the river." in flat
    assert flat.endswith(passages.GAP)


def test_an_excerpt_with_nothing_chosen_is_the_headline() -> None:
    assert passages.excerpt(TRANSCRIPT, passages.cut(TRANSCRIPT), [], "Lisbon.") == "Lisbon."


def test_an_excerpt_leaves_out_a_headline_its_passages_already_say() -> None:
    spans = passages.cut(TRANSCRIPT)
    out = passages.excerpt(TRANSCRIPT, spans, [0], "Ada: Hi there, how — the trip to Lisbon…")
    assert out.startswith("Ada: Hi there, how was the trip to Lisbon last week?")
    assert out.count("Hi there") == 1


def test_an_excerpt_keeps_a_headline_with_a_part_its_passages_do_not_say() -> None:
    spans = passages.cut(TRANSCRIPT)
    headline = "Ada: Hi there, how — a trip to Portugal…"
    assert passages.excerpt(TRANSCRIPT, spans, [0], headline).startswith(headline + " " + passages.HEAD_MARK)


def test_an_excerpt_keeps_the_headline_when_it_does_not_open_with_the_memorys_opening() -> None:
    spans = passages.cut(TRANSCRIPT)
    headline = "Ada: Did you go to Sintra?"
    assert passages.excerpt(TRANSCRIPT, spans, [2], headline).startswith(headline + " " + passages.HEAD_MARK)
