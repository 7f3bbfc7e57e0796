"""A cold process's first search: from the process's start to the first answer, with and without the matrix file.

    python benchmarks/cold_open.py PATH [--matrix int8] [--opens 5] [--warm] [--name NAME]
    python benchmarks/cold_open.py PATH --before /path/to/earlier/checkout --ways before --opens 3

Each open is a fresh Python process (``--child``) that imports lodviz, opens
the store (``benchmarks/synth.py``'s, as ``run.py`` builds them) and searches
a fresh synthetic query at once, then another one 2 s later. The time "from
start" runs from just before the parent starts the process to the moment the
first search returned (both read ``CLOCK_MONOTONIC``), so it includes the
interpreter, the imports and the open. The ways alternate open by open:

- ``rebuilt``: the matrix file moved aside, so the open reads every embedding
  from DuckDB and normalises it (what every open did before the file);
- ``mapped``: the file in place (``lodviz.store.matrix_file``);
- ``bare``: a process that imports lodviz and numpy and exits: what starting
  Python costs here, the floor under both;
- ``before`` (with ``--before DIR``): the same child with an earlier
  checkout's lodviz imported first, the file moved aside.

``--warm`` opens with the background warm-up a server starts (``lodviz serve``
and the app do), searching at once without waiting for it. Peak resident
memory is the child's ``ru_maxrss``. Writes ``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def child(path: str, kind: str, queries_path: str, draw: int, warm: bool) -> None:
    code = os.environ.get("COLD_OPEN_CODE")
    if code:  # another checkout's lodviz (``--before``), imported ahead of this one
        sys.path.insert(0, code)
    import numpy as np

    import lodviz
    from benchmarks import synth

    queries = np.load(queries_path)[2 * draw : 2 * draw + 2]  # drawn by the parent: not this process's work
    texts = ["cold open query 1", "cold open query 2"]
    opened = time.monotonic()
    mem = lodviz.open(path, embedder=synth.StubEmbedder(dict(zip(texts, queries))), warm=warm, matrix=kind)
    t0 = time.monotonic()
    first = mem.search(texts[0], touch=False)
    t1 = time.monotonic()
    mapped = getattr(mem._store, "matrix_rows_mapped", 0)
    time.sleep(2.0)
    t2 = time.monotonic()
    mem.search(texts[1], touch=False)
    t3 = time.monotonic()
    if warm:
        mem.wait_warm()
    mem.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"lodviz": lodviz.__file__, "opened_at": opened, "open_s": t0 - opened, "first_done_at": t1, "first_s": t1 - t0, "later_s": t3 - t2,
                      "rows_mapped": mapped, "counts": first.counts, "peak_rss": peak}))


def bare() -> None:
    import numpy  # noqa: F401

    import lodviz  # noqa: F401

    print(json.dumps({"done_at": time.monotonic()}))


def run_child(args: list[str], code: str | None = None) -> dict:
    env = {**os.environ, "COLD_OPEN_CODE": code} if code else None
    started = time.monotonic()
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        raise SystemExit(f"the child failed: {out.stderr.strip().splitlines()[-1:]}")
    report = json.loads(out.stdout.strip().splitlines()[-1])
    report["from_start_s"] = report.get("first_done_at", report.get("done_at", started)) - started
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?")
    parser.add_argument("--matrix", default="float32")
    parser.add_argument("--opens", type=int, default=5)
    parser.add_argument("--seed", type=int, default=501)
    parser.add_argument("--warm", action="store_true")
    parser.add_argument("--name", default=None)
    parser.add_argument("--before", metavar="DIR", help="also time a checkout of earlier code (a git worktree) as a fourth way")
    parser.add_argument("--ways", default="bare,rebuilt,mapped", help="which ways to time (with --before: before too)")
    parser.add_argument("--child", choices=["search", "bare"])
    parser.add_argument("--queries", help=argparse.SUPPRESS)
    parser.add_argument("--draw", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child == "search":
        child(args.path, args.matrix, args.queries, args.draw, args.warm)
        return 0
    if args.child == "bare":
        bare()
        return 0
    if not args.path:
        parser.error("the store's path is needed")
    import duckdb
    import numpy as np

    from benchmarks import synth
    from lodviz.store import matrix_file

    store = Path(args.path)
    with duckdb.connect(str(store), read_only=True) as con:
        n = int(con.execute("SELECT count(*) FROM memories").fetchone()[0])  # type: ignore[index]
    queries_path = store.with_name(f"{store.name}.cold-open-queries.npy")
    np.save(queries_path, synth.query_vectors(n, 2 * (2 * args.opens + 1), seed=args.seed))
    file = matrix_file.path_for(store)
    aside = file.with_name(file.name + ".aside")
    flags = ["--matrix", args.matrix] + (["--warm"] if args.warm else [])
    if not file.exists():  # one open writes it (the rebuilt open's close does)
        run_child(["--child", "search", str(store), "--queries", str(queries_path), "--draw", str(2 * args.opens), *flags])
    if not file.exists():
        raise SystemExit(f"no matrix file was written beside {store}")
    ways = [w for w in args.ways.split(",") if w] + (["before"] if args.before and "before" not in args.ways else [])
    samples: dict[str, list[dict]] = {way: [] for way in ways}
    for i in range(args.opens):
        search = ["--child", "search", str(store), "--queries", str(queries_path), *flags]
        if "bare" in samples:
            samples["bare"].append(run_child(["--child", "bare"]))
        for way, draw in (("rebuilt", 2 * i), ("before", 2 * i)):
            if way not in samples:
                continue
            shutil.move(file, aside)  # earlier code never reads the file; moved all the same, so the page cache is alike
            try:
                samples[way].append(run_child([*search, "--draw", str(draw)], args.before if way == "before" else None))
            finally:
                if file.exists():  # the rebuilt open's close wrote its own: keep the one under test
                    file.unlink()
                shutil.move(aside, file)
        if "mapped" in samples:
            samples["mapped"].append(run_child([*search, "--draw", str(2 * i + 1)]))
        print(f"open {i + 1}: " + ", ".join(f"{way} {rows[-1]['from_start_s']:.2f} s" for way, rows in samples.items()) + " from start", flush=True)
    summary = {}
    for way, rows in samples.items():
        summary[way] = {"from_start_p50_s": statistics.median(r["from_start_s"] for r in rows)}
        if way != "bare":
            summary[way].update({
                "open_p50_s": statistics.median(r["open_s"] for r in rows),
                "first_search_p50_s": statistics.median(r["first_s"] for r in rows),
                "later_search_p50_s": statistics.median(r["later_s"] for r in rows),
                "first_over_later_paired_p50": statistics.median(r["first_s"] / r["later_s"] for r in rows),
                "peak_rss_gib_max": max(r["peak_rss"] for r in rows) / 2**30,
                "rows_mapped": rows[0]["rows_mapped"],
            })
    queries_path.unlink()
    print(f"\n{n:,} memories, {args.matrix}{', warm-up started' if args.warm else ''}, {args.opens} opens each (p50):")
    print("| way | first answer from process start s | open s | first search s | search 2 s later s | first / later (paired) | peak RSS GiB |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for way in samples:
        s = summary[way]
        if way == "bare":
            print(f"| bare interpreter + imports | {s['from_start_p50_s']:.2f} | | | | | |")
            continue
        print(f"| {way} | {s['from_start_p50_s']:.2f} | {s['open_p50_s']:.2f} | {s['first_search_p50_s']:.3f} | "
              f"{s['later_search_p50_s']:.3f} | {s['first_over_later_paired_p50']:.2f} | {s['peak_rss_gib_max']:.2f} |")
    if args.name:
        results = HERE / "results" / f"{args.name}.json"
        results.write_text(json.dumps({
            "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
            "when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "machine": platform.platform(),
            "cpus": os.cpu_count(), "load_average": os.getloadavg(), "memories": n, "matrix": args.matrix, "warm": args.warm,
            "summary": summary, "samples": samples,
        }, indent=1))
        print(f"\nresults: {results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
