"""How long a refused token takes, by kind: does the time tell whether a token id exists?

    python benchmarks/auth_timing.py [--reps 3000]

Times ``Memory.authenticate`` on a DuckDB store holding 50 tokens, for an
unknown id, a known id with a wrong secret and a string not shaped like a
token, interleaved so that the machine's noise falls on all alike; prints
each median and p10/p90 and the ratio of each to the known id's median.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import lodviz
from lodviz.errors import Unauthenticated
from lodviz.testing import HashEmbedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        mem = lodviz.open(Path(tmp) / "tokens.duckdb", embedder=HashEmbedder(64))
        records = [mem.create_token(f"person-{i}", "viewer", actor="bench")[0] for i in range(50)]
        kinds = {
            "known id, wrong secret": f"lvz_{records[25].id}_" + "x" * 43,
            "unknown id": "lvz_0badc0de_" + "x" * 43,
            "not a token": "hello-there",
        }
        times: dict[str, list[float]] = {k: [] for k in kinds}
        for _ in range(args.reps):
            for kind, token in kinds.items():
                start = time.perf_counter()
                try:
                    mem.authenticate(token)
                except Unauthenticated:
                    pass
                times[kind].append(time.perf_counter() - start)
        mem.close()
    base = statistics.median(times["known id, wrong secret"])
    for kind, values in times.items():
        q = statistics.quantiles(values, n=10)
        print(f"{kind:<24} median {statistics.median(values) * 1e6:8.1f} µs  p10 {q[0] * 1e6:8.1f}  p90 {q[-1] * 1e6:8.1f}  "
              f"ratio to a known id {statistics.median(values) / base:.3f}")


if __name__ == "__main__":
    main()
