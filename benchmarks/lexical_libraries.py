"""BM25 and stemming from maintained libraries (bm25s, PyStemmer) against ``lodviz/lexical.py``.

    python benchmarks/lexical_libraries.py check                       # bm25s scoring lexical.py's own terms = lexical.bm25
    python benchmarks/lexical_libraries.py lexical --workdir DIR       # BM25 alone: recall@10 / MRR of the needed passage
    python benchmarks/lexical_libraries.py speed                       # the lexical work of a k = 1,000 search, per variant
    python benchmarks/lexical_libraries.py conflicts                   # the conflict detector (it stems too), per stemmer
    python benchmarks/lexical_libraries.py retrieval --variants today,pystemmer,bm25s --workdir DIR
        [-- any benchmarks/retrieval.py arguments, e.g. --systems lodviz-default,flat-hybrid --reuse-stores]

Variants (``VARIANTS``), swapped in this process only (lodviz's code is not changed):

``today``      ``lodviz/lexical.py`` as it is: its tokenizer, stopwords and suffix stemmer, its BM25
               (k1 1.2, b 0.75) over a search's candidates, the warmed ``TermIndex``.
``pystemmer``  the same code with PyStemmer's Snowball English stemmer in place of ``lexical.stem``
               (``lexical._MEMO`` emptied, so every word is stemmed again; the ``TermIndex`` a warm-up
               builds is built with it).
``bm25s``      bm25s end to end: ``bm25s.tokenize`` (its ``\\w\\w+`` words, stopwords "en", PyStemmer)
               and ``bm25s.BM25(k1=1.2, b=0.75, method="lucene")`` indexing the same candidates (a
               search's candidates' summaries; its long candidates' passages) and scoring each
               distinct query term (``get_scores_from_ids``); the per-term scores go through
               ``lexical.normalised`` with what each term can give, idf * (k1 + 1), as
               ``lexical.bm25_terms`` has it, so S is computed the same way. bm25s's "lucene" is
               lexical.py's formula (``check`` shows it to 1e-12): only the terms differ.

``retrieval`` runs ``benchmarks/retrieval.py``'s ``main`` once per variant in one process (the
embedding cache shared, so later variants embed nothing again), the variant patched into
``lodviz.search.evidence`` / ``lodviz.search.passages`` / ``lodviz.lexical``; results go to
``benchmarks/results/lexical-libraries-retrieval-<variant>.json``, each with ``lexical_variant``.
The stores it ingests do not depend on the variant: the term index is built by each run's warm-up
(``Memory.warm``) from the summaries, and the ingest uses lexical.py only through the conflict
detector (``lodviz.conflicts`` imports ``stem``; ingested with today's code for every variant).

``lexical`` ranks every passage of each store (the passages the benchmark's flat baselines use:
a turn, a transcript line, a document window of <= 100 tokens) by BM25 alone, the store as the
corpus, and, with ``--workdir`` holding the ingested stores, every memory by its summary (what
``evidence.lexical`` scores); results ``lexical-libraries-lexical.json``.

``speed`` times the lexical work of a search at k = 1,000 on the sample store
(``lodviz/data/lodviz-sample.duckdb``, 3,019 memories, 4,419 passages): the candidates are the
top 1,000 by cosine (stored vectors; the bundled model embeds the queries: ``sample_data/golden.jsonl``
and ``benchmarks/load.py``'s), the texts their summaries and their long memories' passages;
each path's wall and CPU time per query, median of repeats, interleaved in a new random order per query; results
``lexical-libraries-speed.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DISABLE_TQDM", "1")  # bm25s's progress bars

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))

import bm25s  # noqa: E402
import numpy as np  # noqa: E402
import Stemmer  # noqa: E402

from lodviz import lexical  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
SAMPLE = REPO / "lodviz" / "data" / "lodviz-sample.duckdb"
VARIANTS = ("today", "pystemmer", "bm25s")
K = 1000

_SNOWBALL = Stemmer.Stemmer("english")


def log(message: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def git(*argv: str) -> str:
    try:
        return subprocess.run(["git", *argv], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def provenance() -> dict[str, Any]:
    return {
        "lodviz_commit": git("rev-parse", "HEAD"),
        "lodviz_dirty": bool(git("status", "--porcelain", "--", "lodviz/lexical.py", "lodviz/search", "lodviz/store")),
        "bm25s": bm25s.__version__,
        "PyStemmer": getattr(Stemmer, "__version__", "3.1.0"),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_at_start": list(os.getloadavg()),
        "cpus": os.cpu_count(),
    }


# -- bm25s, end to end ---------------------------------------------------------------


def bm25s_query_terms(query: str) -> list[str]:
    """The distinct bm25s terms of ``query`` (its tokenizer, stopwords "en", PyStemmer), in order."""
    found = bm25s.tokenize([query], stopwords="en", stemmer=_SNOWBALL, return_ids=False, show_progress=False)
    return list(dict.fromkeys(found[0]))


def _idf(df: int, n: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))  # bm25s's "lucene" idf, lexical.py's too


def bm25s_index(tokenized: Any) -> bm25s.BM25 | None:
    """A bm25s index (k1, b of lexical.py, "lucene") of tokenized texts (``bm25s.tokenize``'s ids and vocab, or
    token lists); None when no text has a term (bm25s cannot index that)."""
    ids = tokenized.ids if hasattr(tokenized, "ids") else tokenized
    if not any(len(doc) for doc in ids):
        return None
    retriever = bm25s.BM25(k1=lexical.K1, b=lexical.B, method="lucene", dtype="float64")
    retriever.index(tokenized, show_progress=False)
    return retriever


def bm25s_parts(wanted: Sequence[str], retriever: bm25s.BM25 | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``lexical.bm25_terms``'s (parts, most) from a bm25s index of ``n`` texts: each wanted term's bm25s score of
    each text times (k1 + 1) (bm25s leaves that constant out), and what the term can give, idf * (k1 + 1)."""
    parts = np.zeros((len(wanted), n), dtype=np.float64)
    most = np.zeros(len(wanted), dtype=np.float64)
    for t, term in enumerate(wanted):
        term_id = None if retriever is None else retriever.vocab_dict.get(term)
        df = 0
        if term_id is not None and term != "":
            assert retriever is not None
            parts[t] = retriever.get_scores_from_ids([term_id]) * (lexical.K1 + 1.0)
            df = int(np.count_nonzero(parts[t]))
        most[t] = _idf(df, n) * (lexical.K1 + 1.0)
    return parts, most


def bm25s_tokens(texts: Sequence[str]) -> Any:
    return bm25s.tokenize(list(texts), stopwords="en", stemmer=_SNOWBALL, return_ids=True, show_progress=False)


def bm25s_text_parts(wanted: Sequence[str], texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Tokenize ``texts``, index them, score ``wanted``: what a search would do with bm25s, per search."""
    return bm25s_parts(wanted, bm25s_index(bm25s_tokens(texts)), len(texts))


@dataclass
class _Pending:
    """What ``lexical.counts`` hands ``lexical.bm25_terms`` in the bm25s variant: the texts, scored there."""

    wanted: list[str]
    texts: list[str]


class _PassagesLexical:
    """``lodviz.search.passages.lex`` in the bm25s variant: ``query_terms``, ``counts``, ``bm25_terms``, ``normalised``."""

    normalised = staticmethod(lexical.normalised)
    query_terms = staticmethod(bm25s_query_terms)

    @staticmethod
    def counts(wanted: Sequence[str], texts: Sequence[str]) -> tuple[_Pending, np.ndarray]:
        return _Pending(list(wanted), list(texts)), np.zeros(len(texts))

    @staticmethod
    def bm25_terms(tf: _Pending, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return bm25s_text_parts(tf.wanted, tf.texts)


def bm25s_evidence_lexical(store: Any, query: str, state: Any, rows: np.ndarray) -> np.ndarray:
    """``lodviz.search.evidence.lexical`` in the bm25s variant: the candidates' summaries, indexed by bm25s."""
    wanted = bm25s_query_terms(query)
    if not wanted or not len(rows):
        return np.zeros(len(rows), dtype=np.float64)
    ids = state.ids[np.asarray(rows, dtype=np.int64)]
    found = store.contents(ids.tolist(), [2] * len(ids))  # 2: SUMMARY
    parts, most = bm25s_text_parts(wanted, [found[int(i)][0] for i in ids])
    return lexical.normalised(parts.sum(axis=0), float(most.sum()))


# -- the variants, patched in ------------------------------------------------------------


def snowball(word: str) -> str:
    return str(_SNOWBALL.stemWord(word))


@contextlib.contextmanager
def variant(name: str) -> Iterator[None]:
    """``name``'s lexical evidence in this process while the block runs (``VARIANTS``)."""
    from lodviz.search import evidence, passages

    if name not in VARIANTS:
        raise SystemExit(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}")
    saved = (lexical.stem, lexical._MEMO, evidence.lexical, passages.lex)
    lexical._MEMO = {}
    try:
        if name == "pystemmer":
            lexical.stem = snowball
        elif name == "bm25s":
            setattr(evidence, "lexical", bm25s_evidence_lexical)  # noqa: B010
            setattr(passages, "lex", _PassagesLexical)  # noqa: B010
        yield
    finally:
        lexical.stem, lexical._MEMO = saved[0], saved[1]
        setattr(evidence, "lexical", saved[2])  # noqa: B010
        setattr(passages, "lex", saved[3])  # noqa: B010


# -- scoring a fixed corpus (the lexical-only check) --------------------------------------


class Ranker:
    """BM25 of queries over a fixed corpus by one variant (call inside ``variant(name)``)."""

    def __init__(self, name: str, texts: Sequence[str]) -> None:
        self.name, self.n = name, len(texts)
        if name == "bm25s":
            self.retriever = bm25s_index(bm25s_tokens(texts))
        else:
            self.index = lexical.TermIndex()
            self.index.extend(list(texts))
            self.rows = np.arange(self.n)

    def scores(self, query: str) -> np.ndarray:
        if self.name == "bm25s":
            wanted = bm25s_query_terms(query)
            if not wanted:
                return np.zeros(self.n)
            parts, most = bm25s_parts(wanted, self.retriever, self.n)
            return lexical.normalised(parts.sum(axis=0), float(most.sum()))
        wanted = lexical.query_terms(query)
        if not wanted:
            return np.zeros(self.n)
        tf, lengths = self.index.counts(self.rows, wanted)
        return lexical.bm25(tf, lengths)


def ranks(scores: np.ndarray) -> np.ndarray:
    """Each item's rank by score, ties at their average rank; inf where the score is 0 (not found)."""
    order = np.sort(scores)[::-1]
    above = np.searchsorted(-order, -scores, side="left")  # items strictly above
    tied = np.searchsorted(-order, -scores, side="right") - above
    out = 1.0 + above + (tied - 1) / 2.0
    out[scores <= 0] = np.inf
    return out


def rank_metrics(ranker: Ranker, questions: Sequence[Any], holders: Sequence[Sequence[str]]) -> list[dict[str, float]]:
    """Per question: recall@10 / @50 of its needed units (a unit's best-ranked holder) and 1 / rank of the first."""
    out = []
    held: dict[str, list[int]] = {}
    for i, units in enumerate(holders):
        for u in units:
            held.setdefault(u, []).append(i)
    for q in questions:
        r = ranks(ranker.scores(q.text))
        best = [min((r[i] for i in held.get(u, [])), default=np.inf) for u in dict.fromkeys(q.evidence)]
        first = min(best, default=np.inf)
        out.append({"r10": float(np.mean([b <= 10 for b in best])), "r50": float(np.mean([b <= 50 for b in best])),
                    "rr": 0.0 if not np.isfinite(first) else 1.0 / first})
    return out


def lexical_check(args: argparse.Namespace) -> dict[str, Any]:
    """BM25 alone per variant on the retrieval benchmark's sets: passages, and summaries where stores are at hand."""
    import duckdb

    retrieval = importlib.import_module("benchmarks.retrieval")  # Any: its types are its own business here

    bench_args = retrieval.parse_args(args.retrieval_args)
    corpora, _ = retrieval.corpora_for(bench_args)
    workdir = Path(args.workdir) if args.workdir else None
    levels: dict[str, dict[str, Any]] = {}
    for corpus in corpora:
        texts = [t for m in corpus.memories for t, _ in m.passages]
        holders = [units for m in corpus.memories for _, units in m.passages]
        units_of = {m.key: m.units for m in corpus.memories}
        summaries = None
        if workdir is not None:
            import hashlib

            recs = [m.record for m in corpus.memories]
            digest = hashlib.sha256(json.dumps(recs, sort_keys=True).encode()).hexdigest()[:16]
            key = retrieval.store_key(corpus.id, digest, "any-lodviz", bench_args.open_args, bench_args.model)
            path, sidecar = workdir / f"{key}.duckdb", workdir / f"{key}.json"
            if path.exists() and sidecar.exists():
                keys = {int(k): v for k, v in json.loads(sidecar.read_text())["ids"].items()}
                con = duckdb.connect(str(path), read_only=True)
                try:
                    rows = con.sql("SELECT id, summary FROM memories ORDER BY id").fetchall()
                finally:
                    con.close()
                summaries = ([s for _, s in rows], [units_of[keys[int(i)]] for i, _ in rows])
            else:
                log(f"  {corpus.id}: no ingested store in {workdir} ({path.name}); passages only")
        for name in VARIANTS:
            with variant(name):
                t0 = time.perf_counter()
                got = rank_metrics(Ranker(name, texts), corpus.questions, holders)
                levels.setdefault("passages", {}).setdefault(corpus.set, {}).setdefault(name, []).extend(got)
                if summaries is not None:
                    got_s = rank_metrics(Ranker(name, summaries[0]), corpus.questions, summaries[1])
                    levels.setdefault("summaries", {}).setdefault(corpus.set, {}).setdefault(name, []).extend(got_s)
                log(f"  {corpus.id} {name}: passages r@10 {np.mean([g['r10'] for g in got]):.3f} "
                    f"({len(texts)} passages, {len(corpus.questions)} questions, {time.perf_counter() - t0:.1f} s)")
    table: dict[str, Any] = {}
    for level, sets in levels.items():
        for set_name, by_variant in sets.items():
            for name, rows_ in by_variant.items():
                table.setdefault(level, {}).setdefault(set_name, {})[name] = {
                    "questions": len(rows_),
                    "recall_at_10": float(np.mean([r["r10"] for r in rows_])),
                    "recall_at_50": float(np.mean([r["r50"] for r in rows_])),
                    "mrr": float(np.mean([r["rr"] for r in rows_])),
                }
    return {"levels": table, "retrieval_args": args.retrieval_args}


def report_lexical(result: dict[str, Any]) -> str:
    lines = []
    for level, sets in result["levels"].items():
        lines.append(f"\n**{level}** (BM25 alone; recall@10 / recall@50 / MRR)\n")
        lines.append("| set | " + " | ".join(VARIANTS) + " |")
        lines.append("|---|" + "---|" * len(VARIANTS))
        for set_name, by_variant in sets.items():
            cells = [f"{by_variant[v]['recall_at_10']:.3f} / {by_variant[v]['recall_at_50']:.3f} / {by_variant[v]['mrr']:.3f}"
                     for v in VARIANTS if v in by_variant]
            lines.append(f"| {set_name} ({next(iter(by_variant.values()))['questions']} q) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- the equivalence check ----------------------------------------------------------------


def equivalence_check() -> dict[str, Any]:
    """bm25s's "lucene" scoring of lexical.py's own terms against ``lexical.bm25_terms``: the largest difference."""
    texts, queries = sample_texts()
    rng = np.random.default_rng(0)
    worst = 0.0
    for query in queries:
        rows = np.sort(rng.choice(len(texts), size=K, replace=False))
        chosen = [texts[i] for i in rows]
        wanted = lexical.query_terms(query)
        tf, lengths = lexical.counts(wanted, chosen)
        parts, most = lexical.bm25_terms(tf, lengths)
        their_parts, their_most = bm25s_parts(wanted, bm25s_index([lexical.terms(t) for t in chosen]), len(chosen))
        ours = lexical.normalised(parts.sum(axis=0), float(most.sum()))
        theirs = lexical.normalised(their_parts.sum(axis=0), float(their_most.sum()))
        worst = max(worst, float(np.abs(parts - their_parts).max(initial=0.0)), float(np.abs(ours - theirs).max(initial=0.0)),
                    float(np.abs(most - their_most).max(initial=0.0)))
    return {"queries": len(queries), "candidates": K, "max_abs_difference": worst}


# -- speed ------------------------------------------------------------------------------------


def sample_texts() -> tuple[list[str], list[str]]:
    import duckdb

    con = duckdb.connect(str(SAMPLE), read_only=True)
    try:
        texts = [s for (s,) in con.sql("SELECT summary FROM memories ORDER BY id").fetchall()]
    finally:
        con.close()
    return texts, queries()


def queries() -> list[str]:
    golden = [json.loads(line)["query"] for line in (REPO / "sample_data" / "golden.jsonl").read_text().splitlines() if line.strip()]
    return golden + list(importlib.import_module("benchmarks.load").QUERIES)


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter_ns(), time.process_time_ns()
    fn()
    return (time.perf_counter_ns() - wall) / 1e6, (time.process_time_ns() - cpu) / 1e6


def speed(args: argparse.Namespace) -> dict[str, Any]:
    import duckdb

    import lodviz

    con = duckdb.connect(str(SAMPLE), read_only=True)
    try:
        memories = con.sql("SELECT id, summary, text, embedding FROM memories WHERE forgotten_at IS NULL ORDER BY id").fetchall()
        spans = con.sql("SELECT memory_id, start, stop FROM passages ORDER BY memory_id, position").fetchall()
    finally:
        con.close()
    ids = np.array([m[0] for m in memories], dtype=np.int64)
    summaries = [m[1] for m in memories]
    full = {int(m[0]): m[2] for m in memories}
    vectors = np.array([m[3] for m in memories], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    passages_of: dict[int, list[str]] = {}
    for memory_id, start, stop in spans:
        passages_of.setdefault(int(memory_id), []).append(full[int(memory_id)][start:stop])
    asked = queries()
    log(f"sample store: {len(ids):,} memories, {len(spans):,} passages of {len(passages_of)} memories; {len(asked)} queries")
    qv = lodviz.SentenceTransformerEmbedder().embed(asked)
    qv = qv / np.linalg.norm(qv, axis=1, keepdims=True)
    cases = []
    for query, v in zip(asked, qv):
        rows = np.sort(np.argsort(-(vectors @ v), kind="stable")[: min(K, len(ids))])
        texts = [summaries[i] for i in rows]
        long = [p for i in rows for p in passages_of.get(int(ids[i]), [])]
        cases.append((query, rows, texts, long))
    log(f"candidates: {K} per query; passages of the long candidates: median {int(np.median([len(c[3]) for c in cases]))}")

    # Warm-ups, each variant from nothing (empty memo): what a store's warm-up pays once (median of 7).
    setup: dict[str, dict[str, float]] = {}
    memos: dict[str, dict[str | bytes, str]] = {}
    indexes: dict[str, lexical.TermIndex] = {}
    built: dict[str, Any] = {}

    def once(label: str, fn: Callable[[], Any]) -> None:
        got = []
        for _ in range(7):
            gc.collect()
            got.append(timed(fn))
        setup[label] = {"wall_ms": float(np.median([w for w, _ in got])), "cpu_ms": float(np.median([c for _, c in got]))}

    def term_index(name: str) -> None:
        with variant(name):  # an empty memo each time
            index = lexical.TermIndex()
            index.extend(summaries)
            indexes[name], memos[name] = index, lexical._MEMO

    for name in ("today", "pystemmer"):
        once(f"{name}: TermIndex of every summary (empty memo)", lambda: term_index(name))
    once("bm25s: tokenize every summary", lambda: built.__setitem__("tokens", bm25s_tokens(summaries)))
    every = built["tokens"]
    once("bm25s: index every summary (after tokenizing)", lambda: built.__setitem__("index", bm25s_index(every)))
    whole = built
    global_index = whole["index"]
    doc_freq = np.zeros(len(every.vocab), dtype=np.int64)  # df over the whole store, for the global index's "most"
    for doc in every.ids:
        doc_freq[list(set(doc))] += 1

    stem_today = lexical.stem

    def lexical_path(name: str, warm: bool) -> Callable[[tuple[str, np.ndarray, list[str], list[str]]], Callable[[], Any]]:
        def make(case: tuple[str, np.ndarray, list[str], list[str]]) -> Callable[[], Any]:
            query, rows, texts, _ = case

            def run() -> Any:
                lexical.stem, lexical._MEMO = (snowball if name == "pystemmer" else stem_today), memos[name]
                wanted = lexical.query_terms(query)
                if warm:
                    tf, lengths = indexes[name].counts(rows, wanted)
                else:
                    tf, lengths = lexical.counts(wanted, texts)
                return lexical.bm25(tf, lengths)

            return run

        return make

    def passages_path(name: str) -> Callable[[tuple[str, np.ndarray, list[str], list[str]]], Callable[[], Any]]:
        def make(case: tuple[str, np.ndarray, list[str], list[str]]) -> Callable[[], Any]:
            query, _, _, long = case

            def run() -> Any:
                if name == "bm25s":
                    parts, most = bm25s_text_parts(bm25s_query_terms(query), long)
                else:
                    lexical.stem, lexical._MEMO = (snowball if name == "pystemmer" else stem_today), memos[name]
                    tf, lengths = lexical.counts(lexical.query_terms(query), long)
                    parts, most = lexical.bm25_terms(tf, lengths)
                return lexical.normalised(parts.sum(axis=0), float(most.sum()))

            return run

        return make

    def bm25s_per_search(case: tuple[str, np.ndarray, list[str], list[str]]) -> Callable[[], Any]:
        query, _, texts, _ = case

        def run() -> Any:
            parts, most = bm25s_text_parts(bm25s_query_terms(query), texts)
            return lexical.normalised(parts.sum(axis=0), float(most.sum()))

        return run

    def bm25s_pretokenized(case: tuple[str, np.ndarray, list[str], list[str]]) -> Callable[[], Any]:
        query, rows, _, _ = case

        def run() -> Any:
            chosen = [every.ids[i] for i in rows.tolist()]
            retriever = bm25s.BM25(k1=lexical.K1, b=lexical.B, method="lucene", dtype="float64")
            retriever.index((chosen, every.vocab), show_progress=False)
            parts, most = bm25s_parts(bm25s_query_terms(query), retriever, len(rows))
            return lexical.normalised(parts.sum(axis=0), float(most.sum()))

        return run

    def bm25s_global(case: tuple[str, np.ndarray, list[str], list[str]]) -> Callable[[], Any]:
        query, rows, _, _ = case

        def run() -> Any:
            wanted = bm25s_query_terms(query)
            term_ids = [every.vocab[t] for t in wanted if t in every.vocab]
            score = global_index.get_scores_from_ids(term_ids)[rows] if term_ids else np.zeros(len(rows))
            dfs = [int(doc_freq[every.vocab[t]]) if t in every.vocab else 0 for t in wanted]
            most = sum(_idf(df, len(every.ids)) for df in dfs)  # bm25s leaves out (k1 + 1): so does this
            return lexical.normalised(score, most)

        return run

    paths: dict[str, Callable[[tuple[str, np.ndarray, list[str], list[str]]], Callable[[], Any]]] = {
        "summaries, today, warmed TermIndex": lexical_path("today", True),
        "summaries, pystemmer, warmed TermIndex": lexical_path("pystemmer", True),
        "summaries, today, split per search": lexical_path("today", False),
        "summaries, pystemmer, split per search": lexical_path("pystemmer", False),
        "summaries, bm25s, tokenize + index per search": bm25s_per_search,
        "summaries, bm25s, tokenized once, index per search": bm25s_pretokenized,
        "summaries, bm25s, one global index (global idf)": bm25s_global,
        "passages, today, split per search": passages_path("today"),
        "passages, pystemmer, split per search": passages_path("pystemmer"),
        "passages, bm25s, tokenize + index per search": passages_path("bm25s"),
    }
    samples: dict[str, list[tuple[float, float]]] = {p: [] for p in paths}
    runs = {p: [make(c) for c in cases] for p, make in paths.items()}
    saved = (lexical.stem, lexical._MEMO)
    try:
        for fn_list in runs.values():  # once untimed: memos and caches as a served store has them
            for fn in fn_list:
                fn()
        names = list(paths)
        shuffle = np.random.default_rng(0)
        for _ in range(args.repeats):
            gc.collect()
            for i in range(len(cases)):
                # A new order for every query: a sub-millisecond path timed right after a 40 ms one finds the
                # caches flushed, so no path may always follow the same other.
                for j in shuffle.permutation(len(names)).tolist():
                    samples[names[j]].append(timed(runs[names[j]][i]))
    finally:
        lexical.stem, lexical._MEMO = saved
    base = {"summaries": "summaries, today, warmed TermIndex", "passages": "passages, today, split per search"}
    table = {}
    for p, got in samples.items():
        walls = np.array([w for w, _ in got])
        cpus = np.array([c for _, c in got])
        ref = np.array([w for w, _ in samples[base[p.split(",")[0]]]])
        ref_cpu = np.array([c for _, c in samples[base[p.split(",")[0]]]])
        table[p] = {"median_wall_ms": float(np.median(walls)), "p90_wall_ms": float(np.percentile(walls, 90)),
                    "median_cpu_ms": float(np.median(cpus)), "ratio_wall": float(np.median(walls) / np.median(ref)),
                    "ratio_cpu": float(np.median(cpus) / max(float(np.median(ref_cpu)), 1e-9)),
                    "ratio_wall_split_today": float(np.median(walls) / np.median([w for w, _ in samples["summaries, today, split per search"]]))
                    if p.startswith("summaries") else None}
    return {"store": str(SAMPLE.relative_to(REPO)), "memories": len(ids), "passages": len(spans), "queries": len(asked), "k": K,
            "repeats": args.repeats, "median_long_passages": float(np.median([len(c[3]) for c in cases])),
            "setup": setup, "paths": table}


def report_speed(result: dict[str, Any]) -> str:
    lines = [f"\n{result['queries']} queries x {result['repeats']} repeats, k = {result['k']} of {result['memories']:,} memories\n",
             "| path | median ms (wall) | p90 | median ms (CPU) | ratio (wall) | ratio (CPU) |", "|---|---|---|---|---|---|"]
    for p, row in result["paths"].items():
        lines.append(f"| {p} | {row['median_wall_ms']:.2f} | {row['p90_wall_ms']:.2f} | {row['median_cpu_ms']:.2f} | "
                     f"{row['ratio_wall']:.2f} | {row['ratio_cpu']:.2f} |")
    lines += ["", "| once (warm-up) | wall ms | CPU ms |", "|---|---|---|"]
    for p, row in result["setup"].items():
        lines.append(f"| {p} | {row['wall_ms']:.0f} | {row['cpu_ms']:.0f} |")
    return "\n".join(lines)


# -- the conflict detector (lodviz.conflicts stems with lexical.stem too) ------------------------


def conflicts_check() -> dict[str, Any]:
    """``benchmarks/conflicts.py``'s detector reading of the sample store with today's stemmer and with PyStemmer's.

    ``lodviz.conflicts`` imports ``stem`` and stems its word lists at import, so it is reloaded with the
    stemmer in place (and again after). bm25s has no part in it (not a stemmer): not run.
    """
    from lodviz import conflict_scan, conflicts

    bench = importlib.import_module("benchmarks.conflicts")
    out: dict[str, Any] = {}
    for name in ("today", "pystemmer"):
        with variant(name):
            importlib.reload(conflicts)
            importlib.reload(conflict_scan)
            raised, took = bench.raised_pairs(SAMPLE, False)
        importlib.reload(conflicts)
        importlib.reload(conflict_scan)
        got = bench.evaluate(raised, bench.labelled())
        got["seconds"] = round(took, 2)
        out[name] = got
        log(f"  conflicts {name}: raised {got['raised']}, yes {got['yes']}, no {got['no']}, unlabelled {got['unlabelled']}, "
            f"designed {got['designed_found']}")
    return out


def report_conflicts(result: dict[str, Any]) -> str:
    lines = ["| stemmer | raised | yes | no | unlabelled | precision | designed found | every 'yes' found |", "|---|---|---|---|---|---|---|---|"]
    for name, r in result["conflicts"].items():
        lines.append(f"| {name} | {r['raised']} | {r['yes']} | {r['no']} | {r['unlabelled']} | {r['precision']} | "
                     f"{r['designed_found']} | {r['yes_recall']} |")
    return "\n".join(lines)


# -- the retrieval benchmark, per variant -------------------------------------------------------


def retrieval_runs(args: argparse.Namespace) -> int:
    retrieval = importlib.import_module("benchmarks.retrieval")  # Any: its types are its own business here

    real = retrieval.CachingEmbedder
    shared: dict[str, Any] = {}

    def one_embedder(inner: Any) -> Any:  # one cache for every variant's run: the same texts embed once
        if "embedder" not in shared:
            shared["embedder"] = real(inner)
        return shared["embedder"]

    setattr(retrieval, "CachingEmbedder", one_embedder)  # noqa: B010
    try:
        for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
            out = f"{args.prefix}-{name}"
            argv = [*args.retrieval_args, "--name", out, "--results-dir", str(args.results_dir)]
            if args.workdir:
                argv += ["--workdir", args.workdir]
            log(f"variant {name}: benchmarks/retrieval.py {' '.join(argv)}")
            t0 = time.perf_counter()
            with variant(name):
                code = retrieval.main(argv)
            if code:
                return code
            path = Path(args.results_dir) / f"{out}.json"
            result = json.loads(path.read_text())
            result["lexical_variant"] = name
            result["lexical_variant_description"] = __doc__.split(f"``{name}``", 1)[1].split("\n``", 1)[0].strip() if name else ""
            result["command"] = "python benchmarks/lexical_libraries.py retrieval " + " ".join(sys.argv[2:])
            result["variant_seconds"] = round(time.perf_counter() - t0, 1)
            path.write_text(json.dumps(result, indent=1) + "\n")
            log(f"variant {name}: written {path} ({(time.perf_counter() - t0) / 60:.1f} min)")
    finally:
        setattr(retrieval, "CachingEmbedder", real)  # noqa: B010
    return 0


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    rest: list[str] = []
    if "--" in given:
        at = given.index("--")
        given, rest = given[:at], given[at + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("check", "lexical", "speed", "conflicts", "retrieval"))
    parser.add_argument("--variants", default=",".join(VARIANTS), help="retrieval: comma-separated, run in this order")
    parser.add_argument("--workdir", default=None, help="retrieval: the ingested stores (reused); lexical: where to find them")
    parser.add_argument("--prefix", default="lexical-libraries-retrieval", help="retrieval: results are <prefix>-<variant>.json")
    parser.add_argument("--results-dir", default=str(RESULTS))
    parser.add_argument("--repeats", type=int, default=15, help="speed: timed passes over the queries")
    parser.add_argument("--name", default=None, help="check / lexical / speed: results/<name>.json (default lexical-libraries-<what>)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(given)
    args.retrieval_args = rest
    if args.what == "retrieval":
        return retrieval_runs(args)
    started = time.perf_counter()
    result: dict[str, Any] = {"name": args.name or f"lexical-libraries-{args.what}", **provenance(),
                              "command": "python benchmarks/lexical_libraries.py " + " ".join(sys.argv[1:])}
    if args.what == "check":
        result["check"] = equivalence_check()
        text = json.dumps(result["check"])
    elif args.what == "conflicts":
        result["conflicts"] = conflicts_check()
        text = report_conflicts(result)
    elif args.what == "lexical":
        result.update(lexical_check(args))
        text = report_lexical(result)
    else:
        result.update(speed(args))
        text = report_speed(result)
    result["load_average_at_end"] = list(os.getloadavg())
    result["duration_seconds"] = round(time.perf_counter() - started, 1)
    print(text)
    if not args.no_write:
        out = Path(args.results_dir) / f"{result['name']}.json"
        out.write_text(json.dumps(result, indent=1) + "\n")
        log(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
