"""Conflict detection against the sample store's labelled pairs: precision and recall.

    python benchmarks/conflicts.py --name conflicts-1
    python benchmarks/conflicts.py --store OLD.duckdb --stored --name conflicts-before

``sample_data/conflicts.jsonl`` labels pairs of the sample store's memories
(keyed by content hash, so a rebuilt store still matches): the 13
contradictions designed into the sources (``metadata.conflict_group``) and
every pair that a detector raised on the store while the rules were written,
each read and labelled "yes" or "no" by the rubric in
``sample_data/conflicts.md``.

Two readings of a store (default: the shipped one):

``detector``  what ``lodviz.conflict_scan.scan`` (this version's rules, every
              memory against its earlier ones, as writes would) raises now;
``stored``    the store's conflicts table as it is (``--stored``), e.g. a store
              written by an earlier version.

Reported per reading: pairs raised, of them labelled yes / no / unlabelled,
precision (yes over labelled; unlabelled counted as no for the lower bound),
and recall of the designed contradictions and of every "yes" pair. A pair
raised that the file does not label is listed: label it before trusting the
number. Results go to ``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))

from lodviz.conflict_scan import scan  # noqa: E402
from lodviz.store import open_store  # noqa: E402

LABELS = ROOT / "sample_data" / "conflicts.jsonl"
SAMPLE = ROOT / "lodviz" / "data" / "lodviz-sample.duckdb"


def labelled(path: Path = LABELS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def raised_pairs(store_path: Path, stored: bool) -> tuple[list[tuple[str, str, str]], float]:
    """(older hash, newer hash, reason) of every pair raised, and the seconds it took."""
    store = open_store(store_path, read_only=True)
    try:
        started = time.perf_counter()
        if stored:
            found = [(c.memory_id, c.other_id, c.reason) for c in store.conflicts(status=["open"])]
        else:
            state, vectors = store.snapshot()
            found = [(a, b, reason) for a, b, _, reason in scan(state, vectors, store.passages(), store.get)]
        took = time.perf_counter() - started
        records = store.get(sorted({i for a, b, _ in found for i in (a, b)}))
    finally:
        store.close()
    out = []
    for newer, older, reason in found:
        a, b = records[older], records[newer]
        if a.created_at > b.created_at:  # the table names the later-written memory first; time decides here
            a, b = b, a
        out.append((a.content_hash, b.content_hash, reason))
    return out, took


def evaluate(raised: list[tuple[str, str, str]], labels: list[dict[str, Any]]) -> dict[str, Any]:
    by_pair = {frozenset((row["older"]["hash"], row["newer"]["hash"])): row for row in labels}
    yes = [row for row in labels if row["label"] == "yes"]
    designed = [row for row in yes if row.get("designed")]
    found_yes, found_no, unlabelled = [], [], []
    for older, newer, reason in raised:
        row = by_pair.get(frozenset((older, newer)))
        if row is None:
            unlabelled.append({"older": older, "newer": newer, "reason": reason})
        elif row["label"] == "yes":
            found_yes.append(row)
        else:
            found_no.append(row)
    labelled_count = len(found_yes) + len(found_no)
    hit_designed = sorted({row["designed"] for row in found_yes if row.get("designed")})
    return {
        "raised": len(raised),
        "yes": len(found_yes),
        "no": len(found_no),
        "unlabelled": len(unlabelled),
        "precision": round(len(found_yes) / labelled_count, 3) if labelled_count else None,
        "precision_lower_bound": round(len(found_yes) / len(raised), 3) if raised else None,
        "designed_found": f"{len(hit_designed)}/{len(designed)}",
        "designed_hits": len(hit_designed),
        "designed_recall": round(len(hit_designed) / len(designed), 3) if designed else None,
        "designed_missed": sorted({row["designed"] for row in designed} - set(hit_designed)),
        "yes_recall": round(len(found_yes) / len(yes), 3) if yes else None,
        "unlabelled_pairs": unlabelled,
        "false_positives": [{"older": r["older"]["id"], "newer": r["newer"]["id"], "why": r["why"]} for r in found_no],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, default=SAMPLE, help="The store to read (default: the shipped sample store).")
    parser.add_argument("--stored", action="store_true", help="Judge the store's conflicts table, not this version's detector.")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--name", default=None, help="Write benchmarks/results/<name>.json.")
    args = parser.parse_args(argv)
    raised, took = raised_pairs(args.store, args.stored)
    result = evaluate(raised, labelled(args.labels))
    result.update(reading="stored" if args.stored else "detector", store=str(args.store), seconds=round(took, 2),
                  labelled_pairs=len(labelled(args.labels)))
    print("| reading | raised | yes | no | unlabelled | precision | designed found | every 'yes' found |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {result['reading']} | {result['raised']} | {result['yes']} | {result['no']} | {result['unlabelled']} | "
          f"{result['precision']} | {result['designed_found']} | {result['yes_recall']} |")
    if result["designed_missed"]:
        print("designed, missed:", ", ".join(result["designed_missed"]))
    for pair in result["unlabelled_pairs"]:
        print("unlabelled:", pair)
    if args.name:
        out = ROOT / "benchmarks" / "results" / f"{args.name}.json"
        out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
