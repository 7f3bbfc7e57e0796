"""The retrieval benchmark's long-memory parts, without the model: the read metric, the flat
baselines (BM25, RRF, the greedy fill, sentence windows) and the document generator."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchmarks import documents as docgen
from benchmarks import flat
from benchmarks.conversation import generate
from benchmarks.reading import is_read, needles, normalise, read_units, select, split_sentences


def words(text: str) -> int:
    """A whitespace token counter: each word one token."""
    return len(text.split())


# -- the read metric ---------------------------------------------------------------


def test_normalise_collapses_every_whitespace_run():
    assert normalise("  a\n\tb   c \n") == "a b c"


def test_sentences_split_at_ends_and_lines():
    text = "I moved to Denver last May. The flat is tiny!\nParking is a nightmare? Yes 3 times."
    assert split_sentences(text) == ["I moved to Denver last May.", "The flat is tiny!", "Parking is a nightmare?", "Yes 3 times."]


def test_sentences_do_not_split_inside_numbers_names_or_lowercase_continuations():
    assert split_sentences("Version 3.11.4 is needed. e.g. this stays.") == ["Version 3.11.4 is needed. e.g. this stays."]
    assert split_sentences("It cost $1,234.50 in May.") == ["It cost $1,234.50 in May."]


def test_fragments_under_four_words_are_not_needles():
    assert needles("Oh wow! I moved to Denver last month. You?") == ["I moved to Denver last month."]


def test_a_text_of_fragments_is_its_own_needle():
    assert needles("Ha. Okay,  fine.") == ["Ha. Okay, fine."]
    assert needles("Denver!") == ["Denver!"]


def test_read_means_verbatim_after_whitespace_normalisation():
    unit = needles("Oh! I moved to Denver last month.")
    assert unit == ["I moved to Denver last month."]
    assert is_read(unit, normalise("2 May 2023\nPaloma: I moved to   Denver\nlast month.…"))
    assert not is_read(unit, normalise("Paloma: I moved to Denver…"))  # cut: not the sentence
    assert needles("Paloma: I moved to Denver\nlast month, honestly.") == ["Paloma: I moved to Denver"]  # a line ends a sentence
    assert not is_read(unit, normalise("paloma: i moved to denver last month."))  # case matters: verbatim
    assert read_units({"a": ["one two three four"], "b": ["five six seven eight"]}, "x one  two\nthree four y") == ["a"]


def test_select_keeps_unique_keyed_needles_not_in_the_question():
    turn = "Anyway, how are things with you? Okay so my place in Tucson is tiny. It's on a steep hill, honestly."
    other = "Anyway, how are things with you? We went to the lake."
    store = "\x00".join(normalise(t) for t in (turn, other))
    candidates = needles(turn)
    chosen, unique = select(candidates, own=normalise(turn), store=store)
    assert unique and "Anyway, how are things with you?" not in chosen  # said twice in the store
    chosen, unique = select(candidates, own=normalise(turn), store=store, keys=["tucson"])
    assert chosen == ["Okay so my place in Tucson is tiny."] and unique
    chosen, _ = select(candidates, own=normalise(turn), store=store, question="Okay so my place in Tucson is tiny.")
    assert "Okay so my place in Tucson is tiny." not in chosen


def test_select_keeps_ambiguous_needles_when_nothing_is_unique():
    text = "We went to the lake on Sunday."
    store = "\x00".join([text, text])
    chosen, unique = select(needles(text), own=text, store=store)
    assert chosen == [text] and not unique


# -- BM25 and fusion -------------------------------------------------------------------


def test_bm25_ranks_rare_terms_and_short_documents_first():
    corpus = [
        "the cat sat on the mat",
        "the dog chased the cat around the garden for a very long time indeed",
        "kafka consumer lag on the orders topic",
        "the weather was nice",
    ]
    bm = flat.BM25(corpus)
    scores = bm.scores("cat")
    assert scores[0] > scores[1] > 0  # same tf, the shorter document wins
    assert scores[2] == scores[3] == 0
    assert flat.rank_scores(bm.scores("Kafka lag"), positive_only=True) == [2]
    assert flat.rank_scores(bm.scores("the"), positive_only=True)[-1] in (1, 2)
    assert bm.idf("kafka") > bm.idf("cat") > bm.idf("the") > 0
    assert bm.scores("nothing matches").sum() == 0


def test_bm25_matches_the_okapi_formula():
    corpus = ["a b b c", "a c", "d"]
    bm = flat.BM25(corpus, k1=1.5, b=0.75)
    avgdl = (4 + 2 + 1) / 3
    idf_b = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    expected = idf_b * 2 * 2.5 / (2 + 1.5 * (1 - 0.75 + 0.75 * 4 / avgdl))
    assert bm.scores("B")[0] == pytest.approx(expected)
    assert flat.word_tokens("Kafka-Lag, ORDERS_topic!") == ["kafka", "lag", "orders_topic"]


def test_rrf_order():
    # 0: 1/61 + 1/63 = 0.032266 beats 1: 2/62 = 0.032258; 0 and 2 tie, the lower index first
    assert flat.rrf([[0, 1, 2], [2, 1, 0]]) == [0, 2, 1]
    # an item in one ranking only comes after those in both; ties go to the better best rank, then the lower index
    assert flat.rrf([[5, 6], [6, 5, 7]]) == [5, 6, 7]
    assert flat.rrf([[3, 1, 2], [1, 3, 2]]) == [1, 3, 2]
    assert flat.rrf([[4], [9, 4]]) == [4, 9]  # 1/61 + 1/62 against 1/61
    assert flat.rrf([[1], [2]], k=60) == [1, 2]
    assert flat.rrf([]) == []


def test_hybrid_order_fuses_bm25_and_cosine():
    texts = ["alpha beta", "gamma delta", "epsilon"]
    vectors = np.eye(3, dtype=np.float32)
    order = flat.hybrid_order("gamma", np.array([1.0, 0.0, 0.0], dtype=np.float32), flat.BM25(texts), vectors)
    assert set(order) == {0, 1, 2} and order[-1] == 2  # 0 first by cosine, 1 first by BM25; 2 last in both


# -- filling a token allowance ------------------------------------------------------------


def test_cut_to_tokens_keeps_whole_words():
    assert flat.cut_to_tokens("one two  three four", 3, words) == "one two  three"
    assert flat.cut_to_tokens("one two", 5, words) == "one two"
    assert flat.cut_to_tokens("one two", 0, words) == ""


def test_greedy_fill_cuts_the_last_item_to_fit_exactly():
    texts = ["a b c d e", "f g h", "i j k l m n o p", "q r"]
    fill = flat.greedy_fill(texts, [2, 0, 1, 3], 15, words)
    assert fill.chosen == [2, 0, 1] and fill.cut
    assert fill.pieces == ["i j k l m n o p", "a b c d e", "f g"]
    assert fill.tokens == 15 == words(fill.text)
    # costs given: the same fill without counting the whole texts
    assert flat.greedy_fill(texts, [2, 0, 1, 3], 15, words, costs=[5, 3, 8, 2]).pieces == fill.pieces
    # an allowance that ends on an item's end takes it whole and cuts nothing
    exact = flat.greedy_fill(texts, [2, 0, 1, 3], 16, words)
    assert exact.chosen == [2, 0, 1] and not exact.cut and exact.tokens == 16


def test_greedy_fill_takes_whole_items_and_stops_at_the_allowance():
    texts = ["a b", "c d", "e f"]
    fill = flat.greedy_fill(texts, [0, 1, 2], 4, words)
    assert fill.chosen == [0, 1] and not fill.cut and fill.tokens == 4
    assert flat.greedy_fill(texts, [0, 1, 2], 100, words).tokens == 6
    assert flat.greedy_fill(texts, [0, 1, 2], 0, words).chosen == []
    cut = flat.greedy_fill(["x" * 5 + " y"], [0], 1, lambda t: len(t))  # no word fits: nothing is taken
    assert cut.chosen == [] and cut.tokens == 0


def test_greedy_fill_uses_the_cut_it_is_given():
    fill = flat.greedy_fill(["a b c d"], [0], 2, words, cut=lambda text, n, count: "CUT")
    assert fill.pieces == ["CUT"] and fill.cut


# -- sentence windows ------------------------------------------------------------------------


def test_sentence_windows_pack_sentences_verbatim():
    text = ("# Title\n\nFirst sentence has five words. Second one has five too.\nA log line with six words here\n\n"
            "New paragraph starts right here now. " + " ".join(f"Filler sentence number {i} is here." for i in range(12)))
    windows = flat.sentence_windows(text, words, max_tokens=20, min_tokens=8)
    slices = [text[a:b] for a, b in windows]
    sentences = [text[a:b] for (a, b), _ in flat.sentence_spans(text)]
    assert [s for s in sentences if s] == split_sentences(text)  # the same sentences as the read metric
    assert all(words(s) <= 20 for s in slices)
    assert normalise(" ".join(slices)) == normalise(text)  # every sentence in exactly one window, in order
    assert all(a < b <= c for (a, b), (c, _) in zip(windows, windows[1:]))
    # a paragraph break closes a window once it holds min_tokens
    assert any(s.startswith("New paragraph") for s in slices)


def test_a_long_sentence_is_a_window_alone():
    text = "Short one here now. " + " ".join(["Word"] * 50) + ". Tail sentence goes here."
    windows = flat.sentence_windows(text, words, max_tokens=20, min_tokens=5)
    assert [words(text[a:b]) for a, b in windows] == [4, 50, 4]


# -- the document generator -----------------------------------------------------------------


@pytest.fixture(scope="module")
def docs():
    return docgen.generate(seed=0, documents=30)


def test_documents_are_deterministic():
    assert docgen.to_json(docgen.generate(seed=3, documents=12)) == docgen.to_json(docgen.generate(seed=3, documents=12))
    assert docgen.to_json(docgen.generate(seed=3, documents=12)) != docgen.to_json(docgen.generate(seed=4, documents=12))


def test_documents_round_trip(docs):
    text = docgen.to_json(docs)
    assert docgen.to_json(docgen.from_json(text)) == text


def test_documents_check_out(docs):
    assert docgen.check(docs) == []
    assert docgen.check(docgen.generate(seed=0, documents=96)) == []


def test_every_needed_sentence_is_in_exactly_one_document(docs):
    texts = {d.doc_id: normalise(d.text) for d in docs.documents}
    assert docs.questions
    for q in docs.questions:
        sentence = normalise(q.sentence)
        assert [doc_id for doc_id, text in texts.items() if sentence in text] == [q.doc_id], q.qid
        assert texts[q.doc_id].count(sentence) == 1
        assert split_sentences(q.sentence) == [sentence]  # one sentence, as the read metric splits
        assert sentence not in normalise(q.text)
        if q.category == "last":
            assert texts[q.doc_id].endswith(sentence)


def test_documents_are_long_and_varied(docs):
    assert {d.genre for d in docs.documents} == set(docgen.GENRES)
    assert {d.kind for d in docs.documents} == {"document", "tool_result"}
    lengths = [len(d.text.split()) for d in docs.documents]
    assert min(lengths) >= 150 and max(lengths) <= 6000 and sorted(lengths)[len(lengths) // 2] >= 500
    assert {q.category for q in docs.questions} == set(docgen.POSITIONS)
    assert docs.near_misses and all(n["doc_id"] != next(q.doc_id for q in docs.questions if q.qid == n["of"])
                                    for n in docs.near_misses if n["of"])
    assert [d.at for d in docs.documents] == sorted(d.at for d in docs.documents)


def test_document_questions_are_paraphrased_with_anchors(docs):
    stop = set("the a an of to in on at for with and or is was did does do what which who when where how their they "
               "it that this from by as be has have".split())
    overlaps = []
    for q in docs.questions:
        qwords = {w for w in flat.word_tokens(q.text) if w not in stop}
        swords = set(flat.word_tokens(q.sentence))
        overlaps.append(len(qwords & swords) / max(1, len(qwords)))
    assert sum(overlaps) / len(overlaps) < 0.6  # not the sentence's wording
    assert sum(o > 0 for o in overlaps) / len(overlaps) > 0.5  # but most keep an anchor


def test_documents_stats_are_json(docs):
    data = docgen.stats(docs)
    assert data["questions"] == len(docs.questions) and json.dumps(data)


# -- the conversations' facts, which the read metric looks for ---------------------------------------


def test_conversation_facts_are_verbatim_in_their_turns():
    (conv,) = generate(seed=0, conversations=1, sessions=(8, 8), turns=(14, 22))
    index = conv.turn_index()
    assert conv.facts
    for turn_id, said in conv.facts.items():
        assert all(text in index[turn_id].text for text in said)
    evidence = {t for q in conv.questions for t in q.evidence}
    assert evidence <= set(conv.facts)


def test_conversation_needles_are_the_facts_sentences():
    from benchmarks import retrieval

    (conv,) = generate(seed=0, conversations=1, sessions=(8, 8), turns=(14, 22))
    units = retrieval._conversation_units(conv)
    keys = retrieval._keys([(conv, "")])
    store = "\x00".join(normalise(r["text"]) for r in retrieval.records(conv))
    index = conv.turn_index()
    for q in conv.questions:
        for unit in q.evidence:
            own, candidates = units[unit]
            chosen, _ = select(candidates, own=normalise(own), store=store, question=normalise(q.text),
                               keys=keys.get(q.qid, {}).get(unit, ()))
            assert chosen and all(n in normalise(index[unit].text) for n in chosen)
            for key in keys.get(q.qid, {}).get(unit, ()):
                assert any(key.lower() in n.lower() for n in chosen)
