"""Rebuild the shipped sample store from its sources with the real pipeline.

    python sample_data/build.py                      # writes lodviz/data/lodviz-sample.duckdb (package data)
    python sample_data/build.py --slice 0:20 --out /tmp/slice.duckdb --no-layout

The sources (``sources/*.jsonl``) are the hand-written memories of three agents
of one company (see ``sample_data/README.md``). Each carries a ``usage`` hint
(hot, warm, stale, never, pinned) that this script turns into a retrieval
history, deterministically from the memory's own text, and an optional
``conflict`` key kept in its metadata. Everything else goes through
``Memory.add_many``: the same compression and embedding as any import. Then
the agents get their deployment's preset profile, the store records its
reference time, demo queries and golden queries (``golden.jsonl``, checked by
``check_golden.py``), the UMAP layout is fitted and stored, and each agent
asks its demo query once (a look on record, which the audit tab replays).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import lodviz  # noqa: E402
from lodviz.mapping import fit_layout  # noqa: E402
from lodviz.scoring import Tier  # noqa: E402

T = TypeVar("T")

DEFAULT_OUT = HERE.parent / "lodviz" / "data" / "lodviz-sample.duckdb"
#: Questions each agent asks and the memories a good answer needs (``lodviz tune``).
GOLDEN = HERE / "golden.jsonl"
#: "now" for the sample store, so the demo looks the same next year as today.
REFERENCE_TIME = datetime(2026, 11, 30, 18, 0, tzinfo=UTC)

PROFILES = {"clinical-research": "research", "exec-digest": "digest", "legal-review": "legal"}

DEMO_QUERIES = [
    {"agent_id": "clinical-research", "query": "drug interactions of AUR-302 with strong CYP3A4 inhibitors"},
    {"agent_id": "exec-digest", "query": "what is Korvane Pharma doing that matters for us this week?"},
    {"agent_id": "legal-review", "query": "limitation of liability cap in CRO master services agreements"},
]


def _rng(text: str) -> random.Random:
    return random.Random(int(hashlib.sha256(text.encode()).hexdigest()[:16], 16))


def history(text: str, created: datetime, hint: str) -> dict:
    """Retrieval count, last retrieval and floor for a usage hint, the same on every build."""
    rng = _rng(text)
    age = max((REFERENCE_TIME - created).total_seconds() / 86_400, 0.0)

    def after_creation(days_ago: float) -> datetime:
        days_ago = min(days_ago, age)
        return REFERENCE_TIME - timedelta(days=days_ago, minutes=rng.randint(0, 600))

    if hint == "hot":
        return {"retrieval_count": rng.randint(6, 40), "last_retrieved_at": after_creation(rng.uniform(0.3, 45))}
    if hint == "warm":
        return {"retrieval_count": rng.randint(2, 7), "last_retrieved_at": after_creation(rng.uniform(45, 300))}
    if hint == "stale":
        first_use = min(rng.uniform(1, 45), age)
        return {"retrieval_count": 1, "last_retrieved_at": after_creation(age - first_use)}
    if hint == "pinned":
        return {
            "retrieval_count": rng.randint(6, 30),
            "last_retrieved_at": after_creation(rng.uniform(3, 150)),
            "floor": int(Tier.FULL),
        }
    return {}


def load_sources() -> list[dict]:
    records = []
    for path in sorted((HERE / "sources").glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            data = json.loads(line)
            hint = data.pop("usage", "never")
            conflict = data.pop("conflict", None)
            metadata = dict(data.get("metadata") or {})
            if conflict:
                metadata["conflict_group"] = conflict
            data["metadata"] = metadata
            created = datetime.fromisoformat(data["created_at"].replace("Z", "+00:00"))
            data.update(history(data["text"], created, hint))
            data["_order"] = (created, path.name, number)
            records.append(data)
    records.sort(key=lambda r: r.pop("_order"))
    return records


def compact(source: Path, out: Path) -> None:
    """Copy the store into a fresh file with 16 KiB blocks: a third of the default's size."""
    import duckdb

    if out.exists():
        out.unlink()
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{out}' AS dst (BLOCK_SIZE 16384)")
        con.execute(f"ATTACH '{source}' AS src (READ_ONLY)")
        con.execute("COPY FROM DATABASE src TO dst")
    finally:
        con.close()


def _clear(work: Path) -> None:
    """Remove a work file and its WAL left by a crashed run."""
    for path in (work, Path(f"{work}.wal")):
        if path.exists():
            path.unlink()


def record_demo_searches(mem: lodviz.Memory) -> None:
    """Each agent asks its demo query under a budget, at the reference time: searches on record that the
    audit tab can replay out of the box. Looks (``touch=False``): the usage the sources describe stays as it is."""
    for demo in DEMO_QUERIES:
        mem.search(demo["query"], agent_id=demo["agent_id"], actor=demo["agent_id"], budget_tokens=2000, touch=False)


def add_demo_searches(out: Path) -> None:
    """Record the demo searches in an already built store, without re-embedding it."""
    on_a_copy(out, ".searching.duckdb", lambda mem: None if mem.audit(actions=["search"], limit=1) else record_demo_searches(mem))
    print(f"recorded the demo searches in {out} ({out.stat().st_size / 1e6:.1f} MB)")


def on_a_copy(out: Path, suffix: str, step: Callable[[lodviz.Memory], T]) -> T:
    """Run ``step`` on a copy of the built store ``out``, then put the compacted copy in its place: a step that
    fails leaves the shipped file as it was."""
    work = out.with_suffix(suffix)
    _clear(work)
    work.write_bytes(out.read_bytes())
    mem = lodviz.open(work, actor="sample-build")
    try:
        result = step(mem)
    finally:
        mem.close()
    compact(work, out)
    work.unlink()
    return result


def build(out: Path, *, start: int = 0, stop: int | None = None, layout: bool = True) -> None:
    records = load_sources()[start:stop]
    work = out.with_suffix(".building.duckdb")
    _clear(work)
    began = time.perf_counter()
    mem = lodviz.open(work, actor="sample-build")
    try:
        report = mem.add_many(records, batch_size=128, progress=lambda n: print(".", end="", flush=True))
        print(f"\n{len(report.added)} memories in {time.perf_counter() - began:.0f}s")
        for agent, preset in PROFILES.items():
            mem.set_profile(agent, preset, actor="sample-build", reason="deployment preset")
        mem.set_reference_time(REFERENCE_TIME)
        mem.set_demo_queries(DEMO_QUERIES)
        if GOLDEN.exists() and stop is None and start == 0:
            print(f"{len(mem.import_golden(GOLDEN))} golden queries")
        if layout:
            fit_layout(mem)
            print(f"layout fitted at {time.perf_counter() - began:.0f}s")
        if stop is None and start == 0:
            record_demo_searches(mem)
        # As if each memory had been written in order of creation, whatever the batches' order was.
        print(f"{mem.redetect_conflicts(actor='sample-build')[1]} conflict candidates")
    finally:
        mem.close()
    compact(work, out)
    work.unlink()
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")


def redetect_conflicts(out: Path) -> None:
    """Find the conflict candidates of an already built store again with this version's rules."""
    dropped, found = on_a_copy(out, ".conflicts.duckdb", lambda mem: mem.redetect_conflicts(actor="sample-build"))
    print(f"{found} conflict candidates (were {dropped}) in {out} ({out.stat().st_size / 1e6:.1f} MB)")


def migrate(out: Path) -> None:
    """Bring an already built store to the current schema without re-embedding it (opening applies the migrations)."""
    on_a_copy(out, ".migrating.duckdb", lambda mem: None)
    print(f"migrated {out} ({out.stat().st_size / 1e6:.1f} MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--slice", default=None, help="START:STOP of the date-sorted sources (for checks)")
    parser.add_argument("--no-layout", action="store_true")
    parser.add_argument("--migrate", action="store_true", help="only apply new schema migrations to --out")
    parser.add_argument("--demo-searches", action="store_true", help="only record the demo searches in --out")
    parser.add_argument("--conflicts", action="store_true", help="only find the conflict candidates of --out again")
    args = parser.parse_args()
    if args.conflicts:
        redetect_conflicts(args.out)
        return
    if args.migrate:
        migrate(args.out)
        return
    if args.demo_searches:
        add_demo_searches(args.out)
        return
    start, stop = 0, None
    if args.slice:
        first, _, last = args.slice.partition(":")
        start, stop = int(first or 0), (int(last) if last else None)
    build(args.out, start=start, stop=stop, layout=not args.no_layout)


if __name__ == "__main__":
    main()
