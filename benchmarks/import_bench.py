"""Import throughput with the offline compressor and the real model: turns, whole sessions, long documents.

    python benchmarks/import_bench.py                  # 1,000 and 10,000 turns (~5 min)
    python benchmarks/import_bench.py --turns 1000
    python benchmarks/import_bench.py --set sessions --turns 40     # 40 sessions of ~22 turns, one memory each
    python benchmarks/import_bench.py --set documents --turns 24    # 24 generated documents (300-3,000 words)
    python benchmarks/import_bench.py --compare /tmp/before --name passages-write   # before and after, interleaved

Sets (``--set``; ``--turns`` is how many memories):

* **turns**: synthetic Claude Code session files (``~/.claude/projects``
  shape: user and assistant turns, tool calls, tool results; texts from the
  bundled sample sources), one memory per turn, read with ``read_path``;
* **sessions**: the retrieval benchmark's conversations
  (``benchmarks/conversation.py``), one memory per session, its turns as a
  transcript ("Speaker: text" lines): long memories, cut at their turns;
* **documents**: ``benchmarks/documents.py``'s reports, meeting notes,
  READMEs, logs, JSON listings and test runs: long memories, cut at blocks.

Timed in one process:

* **parse**: ``read_path`` of the files (turns only);
* **import**: ``lodviz ingest``'s work: parse (turns) + ``Memory.add_many`` into
  a new DuckDB store with the bundled all-MiniLM-L6-v2 and the extractive
  compressor (compression, embedding, passages where the code cuts them, the
  batched insert and its audit);
* **baseline**: a bare ``SentenceTransformer.encode`` of the memories' texts.

Reported: memories per second, seconds per 1,000 words (words split on white
space), import time as a ratio to the baseline, each in wall-clock seconds
and in the process's CPU seconds (steadier than the wall clock on a machine
that runs other work, with one torch thread: ``--threads``), what the model
was handed (calls, texts, characters, and tokens as it read them: its work,
whatever else runs) and the passages stored. For a long set, also the bare model's
CPU time for the memories' texts and their passages in one call against two
calls (what the write path does). ``--compare DIR`` runs each set ``--reps``
times in fresh processes, alternating the code at DIR (a ``git worktree`` of
an earlier commit, put first on ``PYTHONPATH``) with this checkout's, and
checks that both stored bit-identical memory vectors. Results go to
``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def words(text: str) -> int:
    return len(text.split())


def long_records(kind: str, count: int) -> list[dict]:
    """``count`` long memories: whole sessions of the retrieval benchmark's conversations, or generated documents."""
    if kind == "sessions":
        from benchmarks import conversation

        out: list[dict] = []
        for conv in conversation.generate(seed=0, conversations=max(1, -(-count // 24))):
            for session in conv.sessions:
                lines = [f"{t.speaker}: {t.text}" for t in session.turns]
                out.append({"text": "\n".join(lines), "kind": "session", "agent_id": "bench",
                            "created_at": session.started_at.isoformat(), "source": f"{conv.id} session {session.index}"})
        return out[:count]
    from benchmarks import documents

    return [{"text": d.text, "kind": d.kind, "agent_id": "bench", "created_at": d.at.isoformat(), "source": d.source}
            for d in documents.generate(seed=0, documents=count).documents]


def run(turns: int, kind: str = "turns", vectors_to: str | None = None, threads: int | None = None) -> dict:
    import numpy as np
    import torch

    if threads:
        torch.set_num_threads(threads)

    import lodviz
    from lodviz.ingest.embed import SentenceTransformerEmbedder
    from lodviz.ingest.importers import read_path

    tmp = Path(tempfile.mkdtemp(prefix="lodviz-import-"))
    embedder = SentenceTransformerEmbedder()
    embedder.embed(["warm up"])
    files, parse = 0, 0.0
    if kind == "turns":
        files = write_sessions(tmp / "projects", turns)
        paths = sorted((tmp / "projects").glob("**/*.jsonl"))
        start = time.perf_counter()
        texts = [r.text for p in paths for r in read_path(p).records]
        parse = time.perf_counter() - start
    else:
        given = long_records(kind, turns)
        texts = [r["text"] for r in given]

    start, cpu = time.perf_counter(), time.process_time()
    embedder.embed(texts)
    baseline, baseline_cpu = time.perf_counter() - start, time.process_time() - cpu

    mem = lodviz.open(tmp / "import.duckdb", embedder=embedder)
    embedded = {"calls": 0, "texts": 0, "chars": 0}
    seen: list[str] = []  # every text the model was handed, its tokens counted after the timing
    model_embed = embedder.embed

    def note(batch: list[str]) -> None:
        embedded["calls"] += 1
        embedded["texts"] += len(batch)
        embedded["chars"] += sum(len(t) for t in batch)
        seen.extend(batch)

    def counted(batch: list[str]) -> Any:
        note(batch)
        return model_embed(batch)

    embedder.embed = counted  # type: ignore[method-assign,assignment]  # this instance only
    model_spans = getattr(embedder, "embed_with_spans", None)
    if model_spans is not None:  # the one pass over a text and its sentences (lodviz.ingest.pooling)

        def counted_spans(batch: list[str], spans: Any) -> Any:
            note(batch)
            return model_spans(batch, spans)

        embedder.embed_with_spans = counted_spans  # type: ignore[method-assign]
    start, cpu = time.perf_counter(), time.process_time()
    if kind == "turns":
        records = [r for p in paths for r in read_path(p).records]
        report = mem.add_many(records, batch_size=256)
    else:
        report = mem.add_many(given, batch_size=256)
    full, full_cpu = time.perf_counter() - start, time.process_time() - cpu
    embedder.embed = model_embed  # type: ignore[method-assign]
    if model_spans is not None:
        embedder.embed_with_spans = model_spans  # type: ignore[method-assign]
    embedded["tokens"] = model_tokens(embedder, seen)
    added = len(report.added)
    store = mem._store
    passages = len(store.passages()) if hasattr(store, "passages") else 0
    if vectors_to:
        np.save(vectors_to, mem.snapshot()[1])
    mem.close()
    total_words = sum(words(t) for t in texts)
    out = {
        "set": kind, "turns": turns, "files": files, "memories": added, "words": total_words,
        "long_memories": sum(1 for t in texts if _is_long(t)), "passages": passages,
        "parse_seconds": round(parse, 2), "import_seconds": round(full, 1), "memories_per_second": round(added / full, 2),
        "seconds_per_1000_words": round(full / total_words * 1000, 3),
        "baseline_encode_seconds": round(baseline, 1), "import_over_encode": round(full / baseline, 2),
        "import_cpu_seconds": round(full_cpu, 1), "baseline_encode_cpu_seconds": round(baseline_cpu, 1),
        "cpu_seconds_per_1000_words": round(full_cpu / total_words * 1000, 3),
        "import_over_encode_cpu": round(full_cpu / baseline_cpu, 2),
        "embedded": embedded, "torch_threads": torch.get_num_threads(), "lodviz": str(Path(lodviz.__file__).parent.parent),
    }
    if kind != "turns":
        out["one_call_or_two"] = _calls(embedder, texts)
    return out


def model_tokens(embedder: Any, texts: list[str]) -> int:
    """The tokens the model read for ``texts``: its own tokenizer, cut at its window as encoding cuts them.

    The model's work, whatever else runs on the machine: what the timings cannot be here.
    """
    model = embedder.model
    limit = int(model.max_seq_length)
    total = 0
    for start in range(0, len(texts), 1024):
        encoded = model.tokenizer(texts[start : start + 1024], truncation=True, max_length=limit)
        total += sum(len(ids) for ids in encoded["input_ids"])
    return total


def _is_long(text: str) -> bool:
    from lodviz.passages import is_long

    return is_long(text)


def _calls(embedder: Any, texts: list[str]) -> dict[str, float]:
    """The bare model on the memories' texts and their passages: in one call, and in two (as the write path does);
    each way three times, alternating, the fastest kept."""
    from lodviz.passages import cut
    from lodviz.passages import texts as passage_texts

    pieces = [p for t in texts for p in passage_texts(t, cut(t))]
    one, two = [], []
    for _ in range(3):
        start = time.process_time()
        embedder.embed(texts + pieces)
        one.append(time.process_time() - start)
        start = time.process_time()
        embedder.embed(texts)
        embedder.embed(pieces)
        two.append(time.process_time() - start)
    return {"passages": len(pieces), "one_call_cpu_seconds": round(min(one), 2), "two_calls_cpu_seconds": round(min(two), 2)}


def compare(before: str, sets: list[tuple[str, int]], reps: int, threads: int) -> dict:
    """Each set ``reps`` times in fresh processes, the code at ``before`` and this checkout's alternating."""
    import numpy as np

    runs: list[dict] = []
    tmp = Path(tempfile.mkdtemp(prefix="lodviz-import-compare-"))
    for rep in range(reps):
        for kind, size in sets:
            order = [("before", before), ("after", str(REPO))]
            if rep % 2:
                order.reverse()
            vectors = {}
            for label, code in order:
                out, saved = tmp / f"{label}-{kind}-{rep}.json", tmp / f"{label}-{kind}-{rep}.npy"
                env = {**os.environ, "PYTHONPATH": code, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)}
                subprocess.run([sys.executable, __file__, "--set", kind, "--turns", str(size), "--one", str(out),
                                "--vectors", str(saved), "--threads", str(threads)], check=True, env=env)
                result = json.loads(out.read_text())
                result.update(code=label, rep=rep)
                runs.append(result)
                vectors[label] = np.load(saved)
                print(json.dumps(result), flush=True)
            runs[-1]["memory_vectors_identical"] = runs[-2]["memory_vectors_identical"] = bool(
                np.array_equal(vectors["before"], vectors["after"]))
    summary: dict[str, dict] = {}
    for kind, _ in sets:
        row: dict[str, Any] = {}
        for label in ("before", "after"):
            mine = [r for r in runs if r["set"] == kind and r["code"] == label]
            row[label] = {key: statistics.median(r[key] for r in mine) for key in (
                "import_seconds", "memories_per_second", "seconds_per_1000_words", "baseline_encode_seconds", "import_over_encode",
                "import_cpu_seconds", "cpu_seconds_per_1000_words", "baseline_encode_cpu_seconds", "import_over_encode_cpu")}
            row[label].update(passages=mine[0]["passages"], embedded_texts=mine[0]["embedded"]["texts"],
                              embedded_chars=mine[0]["embedded"]["chars"], embedded_tokens=mine[0]["embedded"]["tokens"],
                              memories=mine[0]["memories"], words=mine[0]["words"])
        row["after_over_before_import_over_encode"] = round(row["after"]["import_over_encode"] / row["before"]["import_over_encode"], 3)
        row["after_over_before_seconds"] = round(row["after"]["import_seconds"] / row["before"]["import_seconds"], 3)
        row["after_over_before_cpu_seconds"] = round(row["after"]["import_cpu_seconds"] / row["before"]["import_cpu_seconds"], 3)
        row["after_over_before_import_over_encode_cpu"] = round(
            row["after"]["import_over_encode_cpu"] / row["before"]["import_over_encode_cpu"], 3)
        row["after_over_before_tokens"] = round(row["after"]["embedded_tokens"] / row["before"]["embedded_tokens"], 3)
        row["memory_vectors_identical"] = all(r["memory_vectors_identical"] for r in runs if r["set"] == kind)
        summary[kind] = row
    return {"runs": runs, "summary": summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="1000,10000", help="memories per run (turns, sessions or documents)")
    parser.add_argument("--set", default="turns", choices=["turns", "sessions", "documents"])
    parser.add_argument("--name", default="import")
    parser.add_argument("--compare", metavar="DIR", help="the code to compare with (a git worktree)")
    parser.add_argument("--sets", default="turns:1000,sessions:40,documents:24", help="with --compare: set:size,...")
    parser.add_argument("--reps", type=int, default=2, help="with --compare: runs of each set and code")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (with --compare, default 1: CPU seconds of one thread are what a busy machine leaves steady)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # one run, its result to this file (--compare's processes)
    parser.add_argument("--vectors", help=argparse.SUPPRESS)
    args = parser.parse_args()
    command = " ".join(["python", "benchmarks/import_bench.py", *sys.argv[1:]])
    if args.one:
        Path(args.one).write_text(json.dumps(run(int(args.turns), args.set, args.vectors, args.threads)))
        return
    if args.compare:
        sets = [(kind, int(size)) for kind, size in (item.split(":") for item in args.sets.split(","))]
        results = {"command": command, "before": args.compare, **compare(args.compare, sets, args.reps, args.threads or 1)}
    else:
        results = {"command": command, "sizes": []}
        for turns in [int(t) for t in args.turns.split(",")]:
            result = run(turns, args.set, threads=args.threads)
            results["sizes"].append(result)
            print(json.dumps(result))
    (REPO / "benchmarks" / "results" / f"{args.name}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
