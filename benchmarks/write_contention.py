"""Another agent's search while a large write is stored: does it wait?

    python benchmarks/write_contention.py                       # a 1 MB write, ~2 min
    python benchmarks/write_contention.py --mb 0.5 --name NAME
    PYTHONPATH=/path/to/older/checkout python benchmarks/write_contention.py --name before

One process, a copy of the bundled sample store, the bundled model, one
``threading.RLock`` shared by every caller (as ``lodviz serve`` shares one
among the app, the MCP workers and the API). Timed, in the same run:

* **idle**: legal-review's search (its profile, its 2,000-token budget,
  ``render()`` included) back to back, with nothing else running, before the
  write and again after it (the two pooled: the ratio's baseline);
* **during the write**: research's ``Memory.write`` of one text of about
  ``--mb`` megabytes (the sample sources' texts joined, so it is long and cut
  into passages) in a thread, and legal-review's same search back to back
  until the write returns.

Reported: p50 and p95 of both, their ratio (issue 33 asks for at most 1.2x at
p50), how many searches ran during the write, and the write's own time. The
machine has two cores and the model uses both while it embeds, so a search
during a write also shares the CPU with it; the ratio counts both waits.
Results go to ``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))

QUERY = "limitation of liability cap in CRO master services agreements"


def big_text(megabytes: float) -> str:
    """About ``megabytes`` of the sample sources' texts, one paragraph each, marked so it is never a duplicate."""
    texts = []
    for path in sorted((REPO / "sample_data" / "sources").glob("*.jsonl")):
        texts += [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out, size, i = [f"Contention run {time.time_ns()}."], 0, 0
    while size < megabytes * 1_000_000:
        out.append(texts[i % len(texts)])
        size += len(texts[i % len(texts)].encode()) + 2
        i += 1
    return "\n\n".join(out)


def stats(samples: list[float]) -> dict[str, Any]:
    ordered = sorted(samples)
    return {
        "n": len(samples),
        "p50_ms": statistics.median(samples) * 1000 if samples else None,
        "p95_ms": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000 if samples else None,
    }


def measure(megabytes: float, idle_runs: int) -> dict[str, Any]:
    import lodviz

    workdir = tempfile.mkdtemp(prefix="lodviz-contention-")
    path = os.path.join(workdir, "sample.duckdb")
    shutil.copyfile(Path(lodviz.__file__).parent / "data" / "lodviz-sample.duckdb", path)  # the imported checkout's
    mem = lodviz.open(path, lock=threading.RLock())
    try:
        def search() -> float:
            t0 = time.perf_counter()
            mem.search(QUERY, agent_id="legal-review", touch=False, record=False, budget_tokens="default").render()
            return time.perf_counter() - t0

        for _ in range(3):  # the model, the columns, the caches
            search()
        idle = [search() for _ in range(idle_runs)]
        text = big_text(megabytes)
        done = threading.Event()
        wrote: dict[str, Any] = {}

        def write() -> None:
            t0 = time.perf_counter()
            record, _ = mem.write(text, agent_id="research", kind="document")
            wrote["seconds"] = time.perf_counter() - t0
            wrote["id"] = record.id
            done.set()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        during: list[float] = []
        while not done.is_set():
            during.append(search())
        writer.join()
        # Idle again once the write is done: a machine whose load drifts moves both ends alike.
        idle_after = [search() for _ in range(idle_runs)]
        idle_p50 = statistics.median(idle + idle_after)
        return {
            "bytes": len(text.encode()),
            "write_seconds": wrote["seconds"],
            "idle": stats(idle + idle_after),
            "idle_before": stats(idle),
            "idle_after": stats(idle_after),
            "during_write": stats(during),
            "ratio_p50": statistics.median(during) / idle_p50 if during else None,
            "longest_wait_ms": max(during) * 1000 if during else None,
            "lodviz_path": str(Path(lodviz.__file__).parent),
        }
    finally:
        mem.close()
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1.0, help="the write's size in megabytes (default 1)")
    parser.add_argument("--idle-runs", type=int, default=100,
                        help="searches timed with nothing else running, before the write and again after it (default 100 each)")
    parser.add_argument("--name", default="write-contention", help="results file name (benchmarks/results/NAME.json)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = {"command": " ".join(["python", *sys.argv]), "started_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              **measure(args.mb, args.idle_runs)}
    out = REPO / "benchmarks" / "results" / f"{args.name}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{result['bytes'] / 1e6:.2f} MB write in {result['write_seconds']:.1f} s; "
          f"search p50 idle {result['idle']['p50_ms']:.0f} ms, during the write {result['during_write']['p50_ms']:.0f} ms "
          f"({result['during_write']['n']} searches), ratio {result['ratio_p50']:.2f}, longest {result['longest_wait_ms']:.0f} ms")
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
