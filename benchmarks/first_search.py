"""The first searches after opening a store, one by one, with where each one's time goes.

    python benchmarks/first_search.py PATH [--matrix int8] [--searches 8]

Opens the store with a background warm (as ``lodviz serve`` does), waits for
it, then times ``Memory.search`` (``touch=False``) for fresh synthetic
queries (``benchmarks/synth.py``, the same generator as the stores of
``benchmarks/run.py``), each split into the store's steps: ``nearest`` (the
scan and, for a compact matrix, the exact rescoring from the mapped float32
rows), ``texts``, ``term_counts`` (BM25) and ``record`` (the audit line).
``run.py`` times the first search once per run; this shows whether the
first one stands out from the next few, or the next few vary as much.
``--baseline`` (float32 only) also times numpy's top-k of the same matrix,
for another query, right before each search: what the machine itself does
the first few times after opening. Prints one line per search; writes nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import duckdb  # noqa: E402

import lodviz  # noqa: E402
from benchmarks import store_bench, synth  # noqa: E402
from benchmarks.measure import Spans  # noqa: E402
from lodviz import runtime  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="a store built by benchmarks/run.py (synthetic-N.duckdb)")
    parser.add_argument("--matrix", default="float32", help="float32, float16 or int8 (default float32)")
    parser.add_argument("--searches", type=int, default=8)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--own-heaps", action="store_true", help="leave glibc's per-thread heaps (no lodviz.runtime.share_heap)")
    parser.add_argument("--baseline", action="store_true", help="time numpy's top-k of the same matrix before each search")
    args = parser.parse_args(argv)
    with duckdb.connect(args.path, read_only=True) as con:  # the queries are drawn for the store's size
        row = con.execute("SELECT count(*) FROM memories").fetchone()
    n = int(row[0]) if row else 0
    queries = synth.query_vectors(n, 2 * args.searches, seed=args.seed)
    texts = [f"first-search query {i}" for i in range(args.searches)]
    started = time.perf_counter()
    if not args.own_heaps:
        runtime.share_heap()  # as ``lodviz serve`` does
    mem = lodviz.open(args.path, warm=True, matrix=args.matrix, embedder=synth.StubEmbedder(dict(zip(texts, queries))))
    mem.wait_warm()
    print(f"{n:,} memories, {args.matrix} matrix: opened and warm in {time.perf_counter() - started:.1f} s", flush=True)
    spans = Spans()
    for method in ("nearest", "texts", "term_counts", "record"):
        spans.wrap(mem._store, method)  # the store is private to Memory; the benchmark looks inside
    matrix = mem.snapshot()[1] if args.baseline and args.matrix == "float32" else None
    for i, text in enumerate(texts):
        before = ""
        if matrix is not None:
            t0 = time.perf_counter()
            store_bench.numpy_topk(matrix, queries[args.searches + i], 1000)
            before = f"numpy top-k {(time.perf_counter() - t0) * 1000:.1f} ms, then "
        spans.take()
        t0 = time.perf_counter()
        result = mem.search(text, touch=False)
        total = time.perf_counter() - t0
        parts = ", ".join(f"{name} {seconds * 1000:.1f}" for name, seconds in spans.take().items())
        print(f"{before}search {i + 1}: {total * 1000:.0f} ms ({parts} ms) {result.counts}", flush=True)
    mem.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
