"""Import throughput of Claude Code transcripts, with the offline compressor and the real model.

    python benchmarks/import_bench.py                  # 1,000 and 10,000 turns (~5 min)
    python benchmarks/import_bench.py --turns 1000

Writes synthetic Claude Code session files (``~/.claude/projects`` shape: user
and assistant turns, tool calls, tool results; texts from the bundled sample
sources), then times, in one run:

* **parse**: ``read_path`` of the files (detection, JSON, records);
* **import**: ``lodviz ingest``'s work: parse + ``Memory.add_many`` into a new
  DuckDB store with the bundled all-MiniLM-L6-v2 and the extractive
  compressor (compression, embedding, the batched insert and its audit);
* **baseline**: a bare ``SentenceTransformer.encode`` of the same texts.

Reported: memories per second, and import time as a ratio to the baseline.
Results go to ``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))

from benchmarks import synth  # noqa: E402


def write_sessions(folder: Path, turns: int, seed: int = 0) -> int:
    """Session files holding ``turns`` memories in all (turns and tool results); returns the file count."""
    rng = random.Random(seed)
    texts = [r["text"] for r in synth.sample_texts()]
    made = files = 0
    while made < turns:
        session = f"{rng.getrandbits(64):016x}"
        project = folder / f"-home-dana-src-project-{files % 7}"
        project.mkdir(parents=True, exist_ok=True)
        lines = []
        for n in range(min(rng.randrange(20, 200), turns - made)):
            stamp = f"2026-11-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:00.000Z"
            base = {"sessionId": session, "cwd": f"/home/dana/src/project-{files % 7}", "timestamp": stamp, "uuid": f"{session}-{n}"}
            text = f"{rng.choice(texts)} (turn {made + n} of session {session})"
            kind = n % 3
            if kind == 0:
                lines.append({**base, "type": "user", "message": {"role": "user", "content": text}})
            elif kind == 1:
                lines.append({**base, "type": "assistant", "message": {"role": "assistant", "content": [
                    {"type": "text", "text": text}, {"type": "tool_use", "id": f"t{made + n}", "name": "Grep", "input": {"pattern": "cap"}}]}})
            else:
                lines.append({**base, "type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": f"t{made + n - 1}", "content": text}]}})
        (project / f"{session}.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
        made += len(lines)
        files += 1
    return files


def run(turns: int) -> dict:
    import lodviz
    from lodviz.ingest.embed import SentenceTransformerEmbedder
    from lodviz.ingest.importers import read_path

    tmp = Path(tempfile.mkdtemp(prefix="lodviz-import-"))
    files = write_sessions(tmp / "projects", turns)
    paths = sorted((tmp / "projects").glob("**/*.jsonl"))
    embedder = SentenceTransformerEmbedder()
    embedder.embed(["warm up"])

    start = time.perf_counter()
    records = [r for p in paths for r in read_path(p).records]
    parse = time.perf_counter() - start

    texts = [r.text for r in records]
    start = time.perf_counter()
    embedder.embed(texts)
    baseline = time.perf_counter() - start

    mem = lodviz.open(tmp / "import.duckdb", embedder=embedder)
    start = time.perf_counter()
    records = [r for p in paths for r in read_path(p).records]
    report = mem.add_many(records, batch_size=256)
    full = time.perf_counter() - start
    added = len(report.added)
    mem.close()
    return {
        "turns": turns, "files": files, "memories": added, "parse_seconds": round(parse, 2),
        "import_seconds": round(full, 1), "memories_per_second": round(added / full, 1),
        "baseline_encode_seconds": round(baseline, 1), "import_over_encode": round(full / baseline, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="1000,10000")
    parser.add_argument("--name", default="import")
    args = parser.parse_args()
    results = {"command": " ".join(["python", "benchmarks/import_bench.py", *sys.argv[1:]]), "sizes": []}
    for turns in [int(t) for t in args.turns.split(",")]:
        result = run(turns)
        results["sizes"].append(result)
        print(json.dumps(result))
    (REPO / "benchmarks" / "results" / f"{args.name}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
