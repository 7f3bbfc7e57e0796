"""Measure a compact matrix on a store whose build was stopped part-way (what exists of it).

    python benchmarks/partial_store.py PATH INTENDED_N KIND REPS NAME

The store at PATH was being built by ``synth.build_store(PATH, INTENDED_N)``
and stopped; its committed batches are a real store of fewer memories, with
the cluster geometry of INTENDED_N (so the queries come from that geometry),
but without the meta (reference time, profiles) the build writes at its end.
Runs ``compact_bench.measure_store`` on it and writes results/NAME.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))

from benchmarks import compact_bench  # noqa: E402
from benchmarks.measure import machine  # noqa: E402


def main() -> int:
    path, intended, kind, reps, name = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    import duckdb

    con = duckdb.connect(path, read_only=True)
    rows = int(con.execute("SELECT count(*) FROM memories").fetchall()[0][0])
    con.close()
    out = compact_bench.measure_store(path, intended, 0, kind, reps)
    out["rows"] = rows
    out["intended_rows"] = intended
    out["command"] = "python benchmarks/partial_store.py " + " ".join(sys.argv[1:])
    out["machine"] = machine()
    (REPO / "benchmarks" / "results" / f"{name}.json").write_text(json.dumps(out, indent=1, default=str))
    print(json.dumps({k: v for k, v in out.items() if k != "machine"}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
