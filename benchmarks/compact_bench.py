"""Compact embedding matrices (``lodviz.matrix``): search time, memory and recall against exact search.

Two measurements, each in a fresh process (see ``run.py``):

* ``measure_store``: a synthetic DuckDB store (``store_bench.build``) opened
  with ``matrix=float16`` or ``int8``: first load, resident memory (all, and
  anonymous: the memory-mapped float32 file is page cache the kernel can drop),
  ``Memory.search`` (auditor, no touch) against the numpy scan of the exact
  float32 matrix, and the recall of the store's top 1,000 against that scan.
* ``measure_matrix``: the matrix alone at a size no DuckDB store was built for
  here (10M): synthetic unit vectors written chunk by chunk into a
  ``UnitRows`` (int8 codes in RAM, float32 in a memory-mapped temporary file),
  the compact search (``UnitRows.nearest``: int8 scan + exact rescoring) against
  an exact scan of the same float32 rows, and its recall of the top 1,000.
  Everything a search does besides the top-k is not measured there.
"""

from __future__ import annotations

import gc
import os
import time
from typing import Any

import numpy as np

from benchmarks import synth
from benchmarks.measure import gib, peak_rss_bytes, ratio, rss_bytes, summary, timed

K = 1000


def anon_rss_bytes() -> int:
    """Anonymous resident memory of this process (not file-backed pages such as a memory-mapped matrix)."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def exact_topk(matrix: np.ndarray, q: np.ndarray, k: int, chunk: int = 262_144) -> np.ndarray:
    """Exact top ``k`` rows by ``matrix @ q``, a chunk at a time (the matrix may be memory-mapped)."""
    sims = np.empty(len(matrix), dtype=np.float32)
    for start in range(0, len(matrix), chunk):
        np.dot(matrix[start : start + chunk], q, out=sims[start : start + chunk])
    top = np.argpartition(-sims, k - 1)[:k]
    return top[np.argsort(-sims[top])]


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return len(np.intersect1d(found, truth)) / len(truth)


def measure_store(path: str, n: int, seed: int, kind: str, reps: int, warmup: int = 3) -> dict[str, Any]:
    import lodviz
    from lodviz import runtime

    runtime.share_heap()  # as ``lodviz serve`` does, before the warm-up thread starts

    count = warmup + reps + 1
    queries = synth.query_vectors(n, count, seed=seed + 5)
    texts = [f"compact query {i}" for i in range(count)]
    stub = synth.StubEmbedder(dict(zip(texts, queries)))
    out: dict[str, Any] = {"rows": n, "matrix": kind}
    rss0, anon0 = rss_bytes(), anon_rss_bytes()
    t_open, mem = timed(lambda: lodviz.open(path, embedder=stub, matrix=kind, warm=True))
    t_load, _ = timed(mem.wait_warm)
    state, exact = mem.snapshot()
    out["first_load"] = {
        "open_ms": t_open * 1000,
        "load_ms": t_load * 1000,
        "rss_before_gib": gib(rss0),
        "anon_before_gib": gib(anon0),
        "rss_after_gib": gib(rss_bytes()),
        "anon_after_gib": gib(anon_rss_bytes()),
        "matrix_in_memory_gib": gib(mem._store._load().matrix.nbytes_in_memory(len(state))),  # type: ignore[attr-defined]
        "float32_matrix_gib": gib(exact.nbytes),
    }
    t_first, _ = timed(lambda: mem.search(texts[-1], touch=False))
    out["first_load"]["first_search_ms"] = t_first * 1000
    series: dict[str, list[float]] = {"numpy": [], "search": []}
    recalls = []
    for i in range(warmup + reps):
        q = queries[i]
        t_np, truth = timed(lambda: exact_topk(exact, q, K))
        t_s, _ = timed(lambda: mem.search(texts[i], touch=False))
        rows, _ = mem._store.nearest(q, K)  # type: ignore[attr-defined]
        if i >= warmup:
            series["numpy"].append(t_np)
            series["search"].append(t_s)
            recalls.append(recall(rows, truth))
    stats = {name: summary(samples) for name, samples in series.items()}
    stats["search"]["ratio_p50"] = ratio(stats["search"], stats["numpy"], "p50_ms")
    stats["search"]["ratio_p95"] = ratio(stats["search"], stats["numpy"], "p95_ms")
    out["search"] = stats
    out["recall_at_1000"] = {"mean": float(np.mean(recalls)), "min": float(np.min(recalls)), "queries": len(recalls)}
    out["peak_rss_gib"] = gib(peak_rss_bytes())
    out["anon_after_gib"] = gib(anon_rss_bytes())
    mem.close()
    return out


def measure_matrix(n: int, seed: int, kind: str, queries: int, warmup: int = 2, chunk: int = 250_000) -> dict[str, Any]:
    from lodviz.matrix import UnitRows

    rng = np.random.default_rng(seed)
    geometry = synth.Geometry.make(n, rng)
    out: dict[str, Any] = {"rows": n, "matrix": kind, "dim": synth.DIM}
    started = time.perf_counter()
    rows = UnitRows(kind, synth.DIM, n)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        block, _ = geometry.sample(stop - start, rng)
        rows.exact[start:stop] = block
        rows.written(start, stop)
        del block
    out["build_seconds"] = time.perf_counter() - started
    gc.collect()
    out["anon_after_build_gib"] = gib(anon_rss_bytes())
    out["rss_after_build_gib"] = gib(rss_bytes())
    out["matrix_in_memory_gib"] = gib(rows.nbytes_in_memory(n))
    out["float32_matrix_gib"] = gib(n * synth.DIM * 4)
    qs = geometry.queries(warmup + queries, np.random.default_rng(seed + 10_000))
    series: dict[str, list[float]] = {"exact scan (memory-mapped float32)": [], "compact nearest": []}
    recalls = []
    for i, q in enumerate(qs):
        t_exact, truth = timed(lambda: exact_topk(rows.exact, q, K))
        t_compact, (found, _) = timed(lambda: rows.nearest(q, K, None, n))
        if i >= warmup:
            series["exact scan (memory-mapped float32)"].append(t_exact)
            series["compact nearest"].append(t_compact)
            recalls.append(recall(found, truth))
    stats = {name: summary(samples) for name, samples in series.items()}
    base = stats["exact scan (memory-mapped float32)"]
    stats["compact nearest"]["ratio_p50"] = ratio(stats["compact nearest"], base, "p50_ms")
    stats["compact nearest"]["ratio_p95"] = ratio(stats["compact nearest"], base, "p95_ms")
    out["search"] = stats
    out["recall_at_1000"] = {"mean": float(np.mean(recalls)), "min": float(np.min(recalls)), "queries": len(recalls)}
    out["peak_rss_gib"] = gib(peak_rss_bytes())
    out["anon_end_gib"] = gib(anon_rss_bytes())
    out["pid"] = os.getpid()
    return out
