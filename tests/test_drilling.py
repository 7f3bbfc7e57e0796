"""Inside a long memory (``lodviz.drilling``): its passages under a query, which the agent received and why,
and one passage's neighbourhood read around a phrase, counted and audited as an expand.

HashEmbedder throughout: nothing here judges ranking quality, only that the
numbers are the search's own, read from the audit log, and that the log still
accounts for the data.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

import lodviz
from lodviz import passages as cutting
from lodviz.audit import summarise
from lodviz.cli import cli
from lodviz.drilling import COLUMNS, folded, needle, ordinal, places
from lodviz.errors import InvalidInput, MemoryNotFound
from lodviz.history import Moment, rebuild
from lodviz.scoring import Tier
from lodviz.verify import verify

FACT = "Bo: The harbour master said the ferry licence expires in March, so renew it early."
TOPIC = ("the harbour", "ferries", "the tide", "a lighthouse", "the pier")
#: Everything a search returns comes back SUMMARY: a long memory as an excerpt.
SUMMARIES = lodviz.Params(alpha=1.0, lam=0.01, theta1=0.99, theta2=0.01, theta3=0.001)
EVERYTHING_FULL = lodviz.Params(alpha=1.0, lam=0.01, theta1=0.001, theta2=0.0005, theta3=0.0001)
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def transcript(turns: int = 20, fact_at: int = 10) -> str:
    lines = []
    for t in range(turns):
        who = "Ada" if t % 2 == 0 else "Bo"
        a, b = TOPIC[t % 5], TOPIC[(t + 2) % 5]
        lines.append(f"{who}: We talked about {a} again, and {b} came up {t % 7 + 2} times. It was fine.")
    lines.insert(fact_at, FACT)
    return "\n".join(lines)


@pytest.fixture
def store(mem):
    made = {
        "long": mem.add(transcript(), agent_id="ada", created_at="2026-05-20T10:00:00Z"),
        "short": mem.add("Note: the pier needs paint before the summer.", agent_id="ada", created_at="2026-05-21T10:00:00Z"),
        "bobs": mem.add(transcript(14, 3).replace("Ada:", "Cy:"), agent_id="bob", created_at="2026-05-22T10:00:00Z"),
    }
    mem.set_reference_time(NOW)
    return mem, made


def spans_of(mem, memory_id) -> list[tuple[int, int]]:
    return cutting.cut(mem.get(memory_id).text)


# -- the passages under a query --------------------------------------------------------------


def test_the_passages_the_agent_received_are_those_its_search_recorded(store):
    mem, ids = store
    result = mem.search("ferry licence expires", agent_id="ada", params=SUMMARIES, now=NOW)
    (item,) = [i for i in result.items if i.id == ids["long"]]
    assert item.excerpt
    event = mem.audit(actions=["search"], limit=1)[0]
    frame = mem.passages(ids["long"], agent_id="ada")
    assert list(frame.columns) == list(COLUMNS)
    assert [tuple(s) for s in frame.loc[frame.received, ["start", "stop"]].values.tolist()] == [tuple(s) for s in item.excerpt]
    assert frame.attrs["delivered_by"]["event_id"] == event.id
    assert frame.attrs["delivered_by"]["query"] == "ferry licence expires" and frame.attrs["delivered_by"]["tier"] == "SUMMARY"
    received = frame[frame.received]
    assert all(f"search #{event.id} “ferry licence expires”" in why and why.startswith("received") for why in received.why)
    assert all(why.startswith("not received") for why in frame[~frame.received].why)
    # Why: the nearest passages under that search's query, the nearest first.
    assert received.search_rank.min() == 1
    assert set(received.search_rank) == set(range(1, len(received) + 1))
    held = frame[frame.text.str.contains("licence expires")]
    assert held.received.all() and int(held.search_rank.iloc[0]) == 1
    assert f"S {held.search_S.iloc[0]:.3f}, 1st of {len(frame)} passages" in held.why.iloc[0]


def test_every_passage_is_a_verbatim_span_in_order(store):
    mem, ids = store
    frame = mem.passages(ids["long"])
    text = mem.get(ids["long"]).text
    assert [tuple(s) for s in frame[["start", "stop"]].values.tolist()] == spans_of(mem, ids["long"])
    assert all(text[a:b] == t for a, b, t in frame[["start", "stop", "text"]].values.tolist())
    assert frame.position.tolist() == list(range(len(frame)))
    assert frame.attrs["passage_count"] == len(frame) and frame.attrs["memory_id"] == ids["long"]


def test_with_a_query_each_passage_has_its_s_and_rank(store):
    mem, ids = store
    frame = mem.passages(ids["long"], query="harbour master licence")
    assert frame.S.between(0, 1).all() and (frame.S >= frame.cosine - 1e-9).all()
    assert sorted(frame["rank"].tolist()) == list(range(1, len(frame) + 1))
    assert frame.loc[frame.S.idxmax(), "rank"] == 1
    assert frame.attrs["query"] == "harbour master licence"


def test_without_a_query_there_is_no_s(store):
    mem, ids = store
    frame = mem.passages(ids["long"], query="  ")
    assert frame.S.isna().all() and frame.cosine.isna().all() and frame["rank"].isna().all()
    assert frame.attrs["query"] is None


def test_never_delivered_nothing_is_received(store):
    mem, ids = store
    frame = mem.passages(ids["long"], agent_id="ada", query="tide")
    assert not frame.received.any() and frame.attrs["delivered_by"] is None
    assert frame.search_S.isna().all()
    assert all(why.startswith("not received: no search") for why in frame.why)


def test_a_full_delivery_gives_every_passage_whole(store):
    mem, ids = store
    mem.search("ferry licence expires", agent_id="ada", params=EVERYTHING_FULL, now=NOW)
    frame = mem.passages(ids["long"], agent_id="ada")
    assert frame.received.all() and frame.attrs["delivered_by"]["tier"] == "FULL"
    assert all("received whole in search" in why for why in frame.why)


def test_the_latest_delivery_counts_and_a_headline_delivers_no_text(store):
    mem, ids = store
    mem.search("ferry licence expires", agent_id="ada", params=EVERYTHING_FULL, now=NOW)
    first = mem.audit(limit=1)[0].id
    headlines = lodviz.Params(alpha=1.0, lam=0.01, theta1=0.999, theta2=0.998, theta3=0.0001)
    mem.search("the tide and the pier", agent_id="ada", params=headlines, now=NOW)
    assert mem.passages(ids["long"], agent_id="ada").attrs["delivered_by"]["event_id"] == first
    mem.search("the tide and the pier", agent_id="ada", params=SUMMARIES, now=NOW)
    latest = mem.audit(limit=1)[0].id
    frame = mem.passages(ids["long"], agent_id="ada")
    assert frame.attrs["delivered_by"]["event_id"] == latest and not frame.received.all()


def test_a_named_search_is_read_instead_of_the_latest(store):
    mem, ids = store
    mem.search("ferry licence expires", agent_id="ada", params=SUMMARIES, now=NOW)
    named = mem.audit(limit=1)[0].id
    mem.search("the tide and the pier", agent_id="ada", params=EVERYTHING_FULL, now=NOW)
    frame = mem.passages(ids["long"], agent_id="ada", event_id=named)
    assert frame.attrs["delivered_by"]["event_id"] == named and 0 < frame.received.sum() < len(frame)
    mem.search("ferry licence expires", agent_id="bob", params=SUMMARIES, now=NOW)
    with pytest.raises(InvalidInput):
        mem.passages(ids["long"], agent_id="ada", event_id=mem.audit(limit=1)[0].id)  # another agent's search
    with pytest.raises(InvalidInput):
        mem.passages(ids["long"], agent_id="ada", event_id=10**9)


def test_an_auditor_sees_what_the_memorys_own_agent_received(store):
    mem, ids = store
    mem.search("ferry licence expires", agent_id="ada", params=SUMMARIES, now=NOW)
    assert mem.passages(ids["long"]).received.any()


def test_a_look_in_the_landscape_is_not_a_delivery(store):
    mem, ids = store
    land = mem.landscape("ferry licence expires", agent_id="ada", params=SUMMARIES, now=NOW)
    mem.record_view(land, agent_id="ada")
    assert mem.passages(ids["long"], agent_id="ada").attrs["delivered_by"] is None


def test_a_short_memory_has_no_passages(store):
    mem, ids = store
    frame = mem.passages(ids["short"], query="pier")
    assert frame.empty and list(frame.columns) == list(COLUMNS) and frame.attrs["passage_count"] == 0


def test_a_memory_the_caller_may_not_see_answers_as_one_that_does_not_exist(store):
    mem, ids = store
    with pytest.raises(MemoryNotFound) as hidden:
        mem.passages(ids["bobs"], agent_id="ada")
    with pytest.raises(MemoryNotFound) as missing:
        mem.passages(999, agent_id="ada")
    assert str(hidden.value) == str(missing.value).replace("999", str(ids["bobs"]))
    with pytest.raises(MemoryNotFound) as hidden:
        mem.expand_passage(ids["bobs"], "harbour master", agent_id="ada")
    with pytest.raises(MemoryNotFound) as missing:
        mem.expand_passage(999, "harbour master", agent_id="ada")
    assert str(hidden.value) == str(missing.value).replace("999", str(ids["bobs"]))
    assert mem.get(ids["bobs"]).retrieval_count == 0 and not mem.audit(actions=["expand"])


def test_a_forgotten_memory_has_no_passages_to_show(store):
    mem, ids = store
    mem.forget(ids["long"], reason="erasure request")
    with pytest.raises(MemoryNotFound):
        mem.passages(ids["long"])
    with pytest.raises(MemoryNotFound):
        mem.expand_passage(ids["long"], "harbour master")


# -- one passage's neighbourhood ----------------------------------------------------------------


def test_the_passage_holding_a_phrase_and_one_each_side(store):
    mem, ids = store
    spans = spans_of(mem, ids["long"])
    text = mem.get(ids["long"]).text
    at = next(i for i, (a, b) in enumerate(spans) if "licence expires" in text[a:b])
    got = mem.expand_passage(ids["long"], "  the FERRY\n licence   expires ", agent_id="ada", now=NOW)
    assert got.matched == "phrase" and got.held == (at,)
    assert got.positions == (at - 1, at, at + 1) and got.spans == tuple(spans[at - 1: at + 2])
    assert got.count == len(spans) and got.before == at - 1 and got.after == len(spans) - at - 2
    assert got.text == cutting.excerpt(text, spans, [at - 1, at, at + 1], "")
    assert got.text.startswith(cutting.GAP) and got.text.endswith(cutting.GAP) and FACT in got.text


@pytest.mark.parametrize("width", [0, 2, 50])
def test_width_passages_on_each_side_within_the_memory(store, width):
    mem, ids = store
    n = len(spans_of(mem, ids["long"]))
    got = mem.expand_passage(ids["long"], "licence expires", width=width, agent_id="ada")
    (at,) = got.held
    assert got.positions == tuple(range(max(at - width, 0), min(at + width, n - 1) + 1))
    if width >= n:
        assert got.before == got.after == 0 and cutting.GAP not in got.text


def test_a_phrase_no_passage_holds_finds_the_nearest_by_embedding(store, embedder):
    mem, ids = store
    phrase = "volcanic ash over the lighthouse"
    got = mem.expand_passage(ids["long"], phrase, width=0, agent_id="ada")
    kept = mem.passages(ids["long"], query=phrase)
    assert got.matched == "nearest" and got.held == (int(kept.cosine.values.argmax()),)


def test_a_phrase_across_a_passage_boundary_holds_both(store):
    mem, ids = store
    spans = spans_of(mem, ids["long"])
    text = mem.get(ids["long"]).text
    a, b = spans[4], spans[5]
    phrase = " ".join(text[a[0]:a[1]].split()[-7:] + text[b[0]:b[1]].split()[:6])  # once in the memory
    got = mem.expand_passage(ids["long"], phrase, width=0, agent_id="ada")
    assert got.held == (4, 5) and got.positions == (4, 5)


def test_a_phrase_copied_across_an_excerpts_gap_is_found_by_its_longest_piece():
    assert needle("came up … The harbour master said") == "the harbour master said"
    assert needle("Headline here — the ferry licence") == "the ferry licence"
    folded_text, at = folded("  A\tb  C")
    assert folded_text == "a b c" and at == [2, 3, 4, 5, 7]


def test_of_several_places_the_one_the_agent_read_wins(store):
    mem, ids = store
    read = mem.expand_passage(ids["long"], "licence expires", width=1, agent_id="ada")
    everywhere = places(mem.get(ids["long"]).text, spans_of(mem, ids["long"]), "it was FINE")
    assert len(everywhere) > 3 and everywhere[0] == (0,)
    got = mem.expand_passage(ids["long"], "It was fine", width=0, agent_id="ada")
    assert got.held == (read.positions[0],)  # the first place among what it read, not the first in the memory


def test_a_short_memory_is_its_own_only_passage(store):
    mem, ids = store
    got = mem.expand_passage(ids["short"], "pier needs paint", agent_id="ada")
    assert got.text == mem.get(ids["short"]).text and got.count == 1 and got.positions == (0,) and got.matched == "phrase"
    got = mem.expand_passage(ids["short"], "something else entirely", agent_id="ada")
    assert got.matched == "nearest" and got.positions == (0,)


def test_a_neighbourhood_counts_as_a_retrieval_with_an_expand_on_record(store):
    mem, ids = store
    got = mem.expand_passage(ids["long"], "licence expires", agent_id="ada", now=NOW, actor="token:bot")
    record = mem.get(ids["long"])
    assert record.retrieval_count == 1 and record.last_retrieved_at == NOW
    assert got.record.retrieval_count == 1
    (event,) = mem.audit(actions=["expand"])
    assert event.memory_id == ids["long"] and event.agent_id == "ada" and event.actor == "token:bot"
    assert event.details["passages"] == [list(s) for s in got.spans] and event.details["positions"] == list(got.positions)
    assert event.details["around"] == "licence expires" and event.details["of"] == got.count
    first, last = got.positions[0] + 1, got.positions[-1] + 1
    assert summarise(event) == f"passages {first}–{last} of {got.count} read around “licence expires”; counted as a retrieval"


def test_the_log_still_replays_and_verifies_after_a_neighbourhood(store, store_path):
    mem, ids = store
    mem.search("ferry licence expires", agent_id="ada", params=SUMMARIES, now=NOW)
    mem.expand_passage(ids["long"], "licence expires", agent_id="ada", now=NOW)
    mem.expand(ids["short"], agent_id="ada")
    report = verify(mem)
    assert report.ok, [str(d) for d in report.disagreements]
    events = list(reversed(mem.audit(limit=10_000)))
    past = rebuild(mem.columns(), events, Moment(before_event=events[-1].id + 1))
    row = mem.columns().rows_of([ids["long"]])[0]
    assert int(past.retrieval_count[row]) == mem.get(ids["long"]).retrieval_count == 2
    mem.close()
    result = CliRunner().invoke(cli, ["--store", str(store_path), "audit", "verify"])
    assert result.exit_code == 0, result.output


def test_the_agent_then_read_it_at_summary(store):
    mem, ids = store
    mem.expand_passage(ids["long"], "licence expires", agent_id="ada")
    assert mem.current_tier(ids["long"], agent_id="ada") == Tier.SUMMARY
    frame = mem.passages(ids["long"], agent_id="ada")
    assert frame.received.sum() == 3 and all("around “licence expires”" in why for why in frame.why)
    mem.expand(ids["long"], agent_id="ada")
    assert mem.current_tier(ids["long"], agent_id="ada") == Tier.FULL


def test_a_read_only_neighbourhood_leaves_no_trace(store):
    mem, ids = store
    got = mem.expand_passage(ids["long"], "licence expires", agent_id="ada", touch=False)
    assert FACT in got.text
    assert mem.get(ids["long"]).retrieval_count == 0 and not mem.audit(actions=["expand"])


@pytest.mark.parametrize(("around", "width", "says"), [
    ("", 1, "around is empty"),
    ("   ", 1, "around is empty"),
    (None, 1, "around is empty"),
    ("licence", -1, "width must be a whole number of at least 0"),
    ("licence", 1.5, "width must be a whole number of at least 0"),
    ("licence", True, "width must be a whole number of at least 0"),
    ("x" * 20_000, 1, "around is 20,000 characters"),
])
def test_bad_input_is_refused_in_one_sentence(store, around, width, says):
    mem, ids = store
    with pytest.raises(InvalidInput) as refused:
        mem.expand_passage(ids["long"], around, width=width, agent_id="ada")
    assert says in str(refused.value)
    assert not mem.audit(actions=["expand"])


def test_ordinals():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]


def test_the_same_on_postgresql(pg_url, embedder):
    """The store's passages and audit log as PostgreSQL keeps them: received, drilled into, verified."""
    mem = lodviz.open(pg_url, embedder=embedder)
    try:
        memory_id = mem.add(transcript(), agent_id="ada", created_at="2026-05-20T10:00:00Z")
        mem.set_reference_time(NOW)
        result = mem.search("ferry licence expires", agent_id="ada", params=SUMMARIES, now=NOW)
        (item,) = [i for i in result.items if i.id == memory_id]
        frame = mem.passages(memory_id, agent_id="ada")
        assert [tuple(s) for s in frame.loc[frame.received, ["start", "stop"]].values.tolist()] == [tuple(s) for s in item.excerpt]
        got = mem.expand_passage(memory_id, "licence expires", agent_id="ada", now=NOW)
        assert FACT in got.text and got.record.retrieval_count == 2
        report = verify(mem)
        assert report.ok, [str(d) for d in report.disagreements]
    finally:
        mem.close()
