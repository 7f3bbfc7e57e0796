"""Headline quality: how often a memory's headline alone retrieves that memory among its neighbours.

    python benchmarks/headlines.py --name headlines-1
    python benchmarks/headlines.py --limit 300 --no-write        # a smoke run

A headline is what lodviz shows of a memory at the lowest tier, so it should
point back at its memory: embedded and used as a query, it should rank its own
memory first. For every memory:

- its vector is its full text embedded with the bundled model (what the
  store's default ``embed_field="auto"`` does for a text within the model's
  window; longer texts are embedded whole here too, i.e. truncated by the
  model, to keep it simple);
- its headline is made two ways: ``after``, the current
  ``lodviz.ingest.compress.ExtractiveCompressor``; ``before``, the previous
  rule (lodviz up to f5086ae): the first sentence of ``split_sentences(text)``,
  joined with the second when the first has fewer than 6 words, cut by
  ``shorten(lead, 22)``;
- the headline is embedded and every memory of its pool ranked by cosine to
  it; the rank of its own memory is 1 + the number of *other* memories scoring
  at least as high (ties count against).

Reported: hit@1, hit@5 and MRR of those ranks, overall, per agent_id and per
kind, and the mean headline length in words and in real MiniLM tokens, for
before and after. Two data sets:

``sample``        ``sample_data/sources/*.jsonl`` (~3,000 memories of three agents);
                  one pool: every memory (exact duplicate texts once, as the store keeps them)
``conversation``  the synthetic conversations of ``benchmarks/conversation.py``
                  (``generate(0, 4)``), one memory per turn, text "Speaker: text";
                  one pool per conversation (each is its own store in retrieval.py),
                  "agent" = the conversation

Results go to ``benchmarks/results/<name>.json`` with a Markdown report printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))

import numpy as np  # noqa: E402

from benchmarks.retrieval import env_prefix, lodviz_version, markdown_table  # noqa: E402  (the same report helpers)

RESULTS = REPO / "benchmarks" / "results"
SOURCES = REPO / "sample_data" / "sources"
BEFORE_WORDS = 22  # the previous ExtractiveCompressor's headline_words
KS = (1, 5)


# -- the metric (pinned by tests/test_headlines_bench.py) --------------------------


def own_ranks(queries: np.ndarray, docs: np.ndarray, pools: Sequence[Any] | None = None) -> np.ndarray:
    """Per query i, the rank of doc i among the docs of its pool by cosine to query i.

    ``queries`` and ``docs`` are (n, d) with row i of each belonging to memory
    i; rows need not be unit length (they are normalised here). ``pools``
    (length n) restricts each query to the docs with the same pool value
    (None: one pool). Rank 1 is best; a doc of the pool other than i scoring
    at least as high as doc i counts against it (ties lose).
    """
    q = np.asarray(queries, dtype=np.float64)
    d = np.asarray(docs, dtype=np.float64)
    if q.shape != d.shape or q.ndim != 2:
        raise ValueError(f"queries and docs must both be (n, d), got {q.shape} and {d.shape}")
    n = len(q)
    q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
    d = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
    labels = np.zeros(n, dtype=np.int64) if pools is None else np.unique(np.asarray(pools, dtype=object).astype(str), return_inverse=True)[1]
    ranks = np.zeros(n, dtype=np.int64)
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        sims = q[members] @ d[members].T  # (m, m): row = query, column = doc
        own = np.diag(sims)
        at_least = (sims >= own[:, None]).sum(axis=1) - 1  # minus the memory itself
        ranks[members] = 1 + at_least
    return ranks


def rank_summary(ranks: Sequence[int], ks: Sequence[int] = KS) -> dict[str, Any]:
    """hit@k (share of ranks <= k) and MRR (mean of 1/rank)."""
    r = np.asarray(ranks, dtype=np.float64)
    if len(r) == 0:
        return {"n": 0, **{f"hit@{k}": None for k in ks}, "mrr": None}
    return {"n": int(len(r)), **{f"hit@{k}": float(np.mean(r <= k)) for k in ks}, "mrr": float(np.mean(1.0 / r))}


def grouped(ranks: Sequence[int], groups: Sequence[str]) -> dict[str, dict[str, Any]]:
    by: dict[str, list[int]] = defaultdict(list)
    for rank, group in zip(ranks, groups):
        by[str(group)].append(int(rank))
    return {g: rank_summary(by[g]) for g in sorted(by)}


# -- headlines -------------------------------------------------------------------


def before_headline(text: str) -> str:
    """The previous rule: the lead sentence (the next joined when it is under 6 words), shortened to 22 words."""
    from lodviz.ingest.compress import shorten, split_sentences

    sentences = split_sentences(text) or [text.strip()]
    lead = sentences[0]
    if len(lead.split()) < 6 and len(sentences) > 1:
        lead = f"{lead} {sentences[1]}"
    return shorten(lead, BEFORE_WORDS)


def after_headlines(texts: Sequence[str], embedder: Any) -> list[str]:
    from lodviz.ingest.compress import ExtractiveCompressor

    compressor = ExtractiveCompressor(embedder)
    out: list[str] = []
    for start in range(0, len(texts), 256):  # the batch size of Memory.add_many
        out.extend(c.headline for c in compressor.compress(list(texts[start : start + 256])))
    return out


# -- data ------------------------------------------------------------------------


def sample_memories(limit: int | None = None) -> list[dict[str, str]]:
    """Every source memory: text, agent_id, kind, pool (exact duplicates once)."""
    seen: set[str] = set()
    out = []
    for path in sorted(SOURCES.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            text = rec["text"].strip()
            if not text or text in seen:
                continue
            seen.add(text)
            out.append({"text": text, "agent": rec.get("agent_id") or "?", "kind": rec.get("kind") or "?", "pool": "all"})
    return out[:limit] if limit else out


def conversation_memories(limit: int | None = None) -> list[dict[str, str]]:
    from benchmarks.conversation import generate

    out = []
    for conv in generate(0, 4):
        for turn in conv.turns():
            out.append({"text": f"{turn.speaker}: {turn.text}".strip(), "agent": conv.id, "kind": "turn", "pool": conv.id})
    return out[:limit] if limit else out


# -- the run -----------------------------------------------------------------------


def measure(label: str, memories: list[dict[str, str]], embedder: Any, count_tokens: Any, caps: Sequence[int] = ()) -> dict[str, Any]:
    from benchmarks.measure import log

    texts = [m["text"] for m in memories]
    pools = [m["pool"] for m in memories]
    t0 = time.perf_counter()
    docs = embedder.embed(texts)
    log(f"  {label}: {len(texts)} texts embedded in {time.perf_counter() - t0:.0f} s")
    heads = {"before": [before_headline(t) for t in texts]}
    t0 = time.perf_counter()
    heads["after"] = after_headlines(texts, embedder)
    log(f"  {label}: compressed in {time.perf_counter() - t0:.0f} s")
    from lodviz.ingest.compress import shorten

    for cap in caps:  # the same headlines cut to at most ``cap`` words: what a tinier rule would cost in retrieval
        heads[f"after, at most {cap} words"] = [shorten(h, cap) for h in heads["after"]]
    out: dict[str, Any] = {"memories": len(texts), "pools": len(set(pools)), "variants": {}}
    ranks: dict[str, np.ndarray] = {}
    for variant, headlines in heads.items():
        t0 = time.perf_counter()
        queries = embedder.embed(headlines)
        ranks[variant] = own_ranks(queries, docs, pools)
        words = [len(h.split()) for h in headlines]
        tokens = [count_tokens(h) for h in headlines]
        # What 1,000 headlines cost an agent as lines of a result: "#id headline" each (ids of the store's size).
        line_tokens = [count_tokens(f"#{1000 + i} {h}") for i, h in enumerate(headlines)]
        out["variants"][variant] = {
            "overall": rank_summary(ranks[variant]),
            "by_agent": grouped(ranks[variant], [m["agent"] for m in memories]),
            "by_kind": grouped(ranks[variant], [m["kind"] for m in memories]),
            "mean_words": float(np.mean(words)),
            "mean_tokens": float(np.mean(tokens)),
            "max_tokens": int(max(tokens)),
            "tokens_per_1000_lines": int(round(1000 * float(np.mean(line_tokens)))),
            "cut_short": float(np.mean([h.endswith("…") for h in headlines])),  # shortened by shorten()
            "ranks": " ".join(str(int(r)) for r in ranks[variant]),
        }
        log(f"  {label} {variant}: hit@1 {out['variants'][variant]['overall']['hit@1']:.3f} "
            f"({time.perf_counter() - t0:.0f} s)")
    changed = [b != a for b, a in zip(heads["before"], heads["after"])]
    delta = ranks["before"] - ranks["after"]  # > 0: after ranks its memory higher
    out["changed_headlines"] = float(np.mean(changed))
    out["rank_better_after"] = int((delta > 0).sum())
    out["rank_worse_after"] = int((delta < 0).sum())
    order = np.argsort(-delta, kind="stable")

    def example(i: int) -> dict[str, Any]:
        return {"agent": memories[i]["agent"], "kind": memories[i]["kind"], "text": texts[i][:300],
                "before": heads["before"][i], "before_rank": int(ranks["before"][i]),
                "after": heads["after"][i], "after_rank": int(ranks["after"][i])}

    out["examples_better_after"] = [example(int(i)) for i in order[:5] if delta[i] > 0]
    out["examples_worse_after"] = [example(int(i)) for i in order[::-1][:5] if delta[i] < 0]
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", default=None, help="results/<name>.json (default headlines-<UTC time>)")
    parser.add_argument("--datasets", default="sample,conversation", help="comma-separated: sample, conversation")
    parser.add_argument("--limit", type=int, default=None, help="the first N memories of each data set (a smoke run)")
    parser.add_argument("--results-dir", default=str(RESULTS))
    parser.add_argument("--no-write", action="store_true", help="print the report only")
    parser.add_argument("--caps", default="", help="comma-separated word caps: the 'after' headlines cut to each, measured too")
    args = parser.parse_args(argv)
    args.cap_list = [int(c) for c in args.caps.split(",") if c.strip()]
    args.dataset_list = [d.strip() for d in args.datasets.split(",") if d.strip()]
    for d in args.dataset_list:
        if d not in ("sample", "conversation"):
            parser.error(f"unknown data set {d!r}")
    args.name = args.name or f"headlines-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    return args


def main(argv: list[str] | None = None) -> int:
    import lodviz
    from benchmarks.measure import log, machine, write_results
    from benchmarks.retrieval import count_tokens, git, lodviz_fingerprint, lodviz_source

    given = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(given)
    started = time.perf_counter()
    log("loading the embedding model and tokenizer")
    embedder = lodviz.SentenceTransformerEmbedder()
    embedder.embed(["warm up"])
    count_tokens("warm up")
    result: dict[str, Any] = {
        "name": args.name,
        "command": " ".join([env_prefix() + "python benchmarks/headlines.py", shlex.join(given)]).strip(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "lodviz_commit": git("rev-parse", "HEAD"),
        "lodviz_dirty": bool(git("status", "--porcelain", "--", "lodviz")),
        "lodviz_fingerprint": lodviz_fingerprint(),
        "lodviz_source": str(lodviz_source()),  # not <repo>/lodviz: a copy on PYTHONPATH
        "config": {
            "embedding_model": embedder.name,
            "documents": "full text of every memory, embedded whole (truncated by the model past its window)",
            "before": f"shorten(lead, {BEFORE_WORDS}); lead = first sentence of split_sentences(text), "
                      "joined with the second when the first has < 6 words",
            "after": "lodviz.ingest.compress.ExtractiveCompressor(embedder).compress(texts).headline, batches of 256",
            "rank": "1 + other memories of the pool with cosine >= the memory's own (ties lose)",
            "token_counter": "bundled all-MiniLM-L6-v2 WordPiece tokenizer, no special tokens",
            "limit": args.limit,
        },
        "datasets": {},
    }
    loaders = {"sample": sample_memories, "conversation": conversation_memories}
    for name in args.dataset_list:
        memories = loaders[name](args.limit)
        log(f"{name}: {len(memories)} memories")
        result["datasets"][name] = measure(name, memories, embedder, count_tokens, args.cap_list)
    if args.no_write:
        result["duration_seconds"] = time.perf_counter() - started
        print(report(result))
        return 0
    write_results(result, started, args.results_dir, args.name, report)
    return 0


# -- the printed report ------------------------------------------------------------


def _f(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def report(result: dict[str, Any]) -> str:
    parts = [
        f"## Headline quality: {result['name']}",
        "",
        f"`{result['command']}`; lodviz {lodviz_version(result)}; {result['config']['embedding_model']}; "
        "a memory's headline as the query, its rank among its pool by cosine to the full-text vectors.",
    ]
    header = ["", "n", "hit@1 before", "hit@1 after", "hit@5 before", "hit@5 after", "MRR before", "MRR after"]
    for name, data in result["datasets"].items():
        before, after = data["variants"]["before"], data["variants"]["after"]

        def row(label: str, b: dict[str, Any], a: dict[str, Any]) -> list[str]:
            return [label, str(b["n"]), _f(b["hit@1"]), _f(a["hit@1"]), _f(b["hit@5"]), _f(a["hit@5"]), _f(b["mrr"]), _f(a["mrr"])]

        rows = [row("**all**", before["overall"], after["overall"])]
        rows += [row(f"agent {g}", before["by_agent"][g], after["by_agent"][g]) for g in before["by_agent"]]
        if len(before["by_kind"]) > 1:
            rows += [row(f"kind {g}", before["by_kind"][g], after["by_kind"][g]) for g in before["by_kind"]]
        parts += ["", f"### {name}: {data['memories']:,} memories, {data['pools']} pool(s)", "", markdown_table(header, rows), ""]
        parts.append(markdown_table(
            ["headline", "hit@1", "hit@5", "MRR", "mean words", "mean MiniLM tokens", "max tokens", "1,000 lines", "cut short"],
            [[v, _f(d["overall"]["hit@1"]), _f(d["overall"]["hit@5"]), _f(d["overall"]["mrr"]), _f(d["mean_words"], 1),
              _f(d["mean_tokens"], 1), str(d["max_tokens"]), f"{d.get('tokens_per_1000_lines', 0):,}", f"{100 * d['cut_short']:.0f}%"]
             for v, d in data["variants"].items()]))
        parts += ["", f"Headlines changed: {100 * data['changed_headlines']:.0f}%; own memory ranked higher after: "
                      f"{data['rank_better_after']}, lower: {data['rank_worse_after']}."]
    return "\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
