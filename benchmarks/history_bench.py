"""What looking at the past costs: a replay and a day of the time slider, against the present landscape.

    python benchmarks/history_bench.py                          # 20,000 memories, 2,000 searches on record
    python benchmarks/history_bench.py --memories 100000 --searches 5000

A store of synthetic memories (the deterministic test embedder: this measures
the rebuild, not the model) is searched ``--searches`` times by three agents
with k=100, so the audit log holds that many searches' touches. Then, in the
same process and interleaved, it times:

* ``search``: ``Memory.search(query, touch=False, record=False)`` of the store
  as it is, the same query each time (the baseline: what an agent pays per turn);
* ``landscape``: ``Memory.landscape(query)`` of the store as it is;
* ``past day``: ``Memory.landscape(query, as_of=a day halfway)``, first call
  (the audit log replayed) and again (the rebuilt past kept);
* ``replay``: ``Memory.replay(event)`` of a search halfway through the log.

Results go to ``benchmarks/results/<name>.json`` and a table is printed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))

import lodviz  # noqa: E402
from benchmarks.measure import machine, write_results  # noqa: E402
from lodviz.testing import HashEmbedder  # noqa: E402

WORDS = ("audit supplier plant contract liability cap trial dose safety signal revenue board filing renewal vendor "
         "payment clause sponsor site data privacy protocol amendment invoice budget forecast").split()
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def build(path: Path, memories: int, searches: int, seed: int = 7) -> tuple[lodviz.Memory, list[int], datetime]:
    rng = random.Random(seed)
    mem = lodviz.open(path, embedder=HashEmbedder(384))
    span = 600  # days of history
    records = [
        {"text": " ".join(rng.choices(WORDS, k=14)) + f" note {i}.", "agent_id": rng.choice(("a", "b", "c")),
         "visibility": "shared", "created_at": (T0 + timedelta(days=span * i / memories)).isoformat()}
        for i in range(memories)
    ]
    mem.add_many(records, batch_size=2000)
    events = []
    for j in range(searches):
        now = T0 + timedelta(days=span * (j + 1) / searches)
        mem.search(" ".join(rng.choices(WORDS, k=4)), agent_id=rng.choice(("a", "b", "c")), k=100, now=now, alpha=0.5)
        events.append(mem.audit(actions=["search"], limit=1)[0].id)
    return mem, events, T0 + timedelta(days=span / 2)


def timed(func) -> float:
    began = time.perf_counter()
    func()
    return (time.perf_counter() - began) * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--searches", type=int, default=2_000)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--name", default="history")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        mem, events, halfway = build(Path(tmp) / "history.duckdb", args.memories, args.searches)
        built = time.perf_counter() - began
        query = "supplier audit liability"
        event = events[len(events) // 2]
        mem.landscape(query)  # the query's embedding and the snapshot, once
        look, base, first, again, replay = [], [], [], [], []
        for rep in range(args.reps):
            look.append(timed(lambda: mem.search(query, touch=False, record=False)))
            base.append(timed(lambda: mem.landscape(query)))
            mem._past_cache.clear()  # a cold past: the audit log replayed
            first.append(timed(lambda: mem.landscape(query, as_of=halfway + timedelta(seconds=rep))))
            again.append(timed(lambda: mem.landscape(query, as_of=halfway + timedelta(seconds=rep))))
            mem._past_cache.clear()
            replay.append(timed(lambda: mem.replay(event)))
        agrees = mem.replay(event).agrees
        mem.close()
    p50 = {name: statistics.median(v) for name, v in (("search", look), ("landscape", base), ("past day, first", first), ("past day, again", again), ("replay", replay))}
    results = {
        "command": "python benchmarks/history_bench.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine(), "memories": args.memories, "searches_on_record": args.searches, "reps": args.reps,
        "build_s": round(built, 1), "replay_agrees": agrees,
        "p50_ms": {k: round(v, 1) for k, v in p50.items()},
        "ratio_to_search": {k: round(v / p50["search"], 2) for k, v in p50.items()},
    }

    def report(r: dict) -> str:
        lines = [f"{r['memories']:,} memories, {r['searches_on_record']:,} searches on record (built in {r['build_s']:.0f} s); p50 of {r['reps']}:"]
        for name, value in r["p50_ms"].items():
            lines.append(f"  {name:<17} {value:8.1f} ms  {r['ratio_to_search'][name]:5.2f}x a search of the present store")
        lines.append(f"  the replay rebuilds the recorded answer: {r['replay_agrees']}")
        return "\n".join(lines)

    write_results(results, started, str(REPO / "benchmarks" / "results"), args.name, report)

if __name__ == "__main__":
    main()
