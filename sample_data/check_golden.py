"""Check the golden queries against the sample store's sources.

    python sample_data/check_golden.py

Each line of ``golden.jsonl`` is one query an agent would plausibly ask:

    {"agent_id": "...", "query": "...", "needs_text": ["...", ...], "why": "..."}

``needs_text`` are exact substrings (20-80 characters) of the ``text`` of the
memories a good answer needs. This script resolves every substring to the one
memory, among those the agent can see (its own memories plus every memory with
visibility "shared"), whose text contains it. It fails loudly, naming the
golden line, when a substring matches no memory, matches several, or matches
only memories the agent cannot see, and on any malformed line. It prints each
query with the resolved memories and exits non-zero if anything is wrong.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources"
GOLDEN = HERE / "golden.jsonl"

AGENTS = ("clinical-research", "exec-digest", "legal-review")
MIN_LEN, MAX_LEN = 20, 80
MIN_NEEDS, MAX_NEEDS = 1, 3
KEYS = {"agent_id", "query", "needs_text", "why"}


def load_sources() -> list[dict]:
    """Every source memory, with where it came from (file:line) for messages."""
    memories = []
    for path in sorted(SOURCES.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            data = json.loads(line)
            data["_where"] = f"{path.name}:{number}"
            memories.append(data)
    return memories


def visible(memory: dict, agent: str) -> bool:
    """An agent sees its own memories and every shared memory."""
    return memory["agent_id"] == agent or memory.get("visibility") == "shared"


def describe(memory: dict) -> str:
    first = " ".join(memory["text"].split())[:80]
    return f"{memory['agent_id']:<17} {memory['created_at'][:10]}  {first}"


def check_line(number: int, raw: str, memories: list[dict]) -> tuple[list[str], dict | None, list[dict]]:
    """Problems found on one golden line, the parsed entry and its resolved memories."""
    where = f"golden.jsonl line {number}"
    try:
        entry = json.loads(raw)
    except json.JSONDecodeError as exc:
        return [f"{where}: not valid JSON ({exc})"], None, []
    if not isinstance(entry, dict):
        return [f"{where}: not a JSON object"], None, []

    problems = []
    keys = set(entry)
    if keys != KEYS:
        missing, extra = KEYS - keys, keys - KEYS
        problems.append(f"{where}: keys must be {sorted(KEYS)} (missing {sorted(missing)}, unexpected {sorted(extra)})")
    agent = entry.get("agent_id")
    if agent not in AGENTS:
        problems.append(f"{where}: unknown agent_id {agent!r}")
    for key in ("query", "why"):
        if not isinstance(entry.get(key), str) or not entry.get(key, "").strip():
            problems.append(f"{where}: {key!r} must be a non-empty string")
    needs = entry.get("needs_text")
    if not isinstance(needs, list) or not all(isinstance(n, str) for n in needs):
        problems.append(f"{where}: 'needs_text' must be a list of strings")
        return problems, entry, []
    if not MIN_NEEDS <= len(needs) <= MAX_NEEDS:
        problems.append(f"{where}: {len(needs)} needs_text entries, expected {MIN_NEEDS}-{MAX_NEEDS}")

    resolved = []
    for needle in needs:
        label = f"{where}, needs_text {needle!r}"
        if not MIN_LEN <= len(needle) <= MAX_LEN:
            problems.append(f"{label}: {len(needle)} characters, expected {MIN_LEN}-{MAX_LEN}")
        hits = [m for m in memories if needle in m["text"]]
        seen = [m for m in hits if agent in AGENTS and visible(m, agent)]
        if len(seen) == 1:
            resolved.append(seen[0])
        elif not hits:
            problems.append(f"{label}: matches no memory")
        elif not seen:
            owners = ", ".join(f"{m['_where']} ({m['agent_id']}, {m['visibility']})" for m in hits)
            problems.append(f"{label}: {agent} cannot see the memory it matches: {owners}")
        else:
            places = ", ".join(m["_where"] for m in seen[:10])
            more = f" and {len(seen) - 10} more" if len(seen) > 10 else ""
            problems.append(f"{label}: matches {len(seen)} memories visible to {agent}: {places}{more}")
    wheres = [m["_where"] for m in resolved]
    for place, count in Counter(wheres).items():
        if count > 1:
            problems.append(f"{where}: {count} needs_text entries resolve to the same memory {place}")
    return problems, entry, resolved


def main() -> int:
    if not GOLDEN.exists():
        print(f"ERROR: {GOLDEN} not found", file=sys.stderr)
        return 1
    memories = load_sources()
    problems: list[str] = []
    per_agent: Counter[str] = Counter()
    lines = 0
    for number, raw in enumerate(GOLDEN.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        lines += 1
        line_problems, entry, resolved = check_line(number, raw, memories)
        problems.extend(line_problems)
        if entry is None:
            continue
        per_agent[str(entry.get("agent_id"))] += 1
        status = "FAIL" if line_problems else "ok"
        print(f"[{number:>2}] {status}  {entry.get('agent_id')}: {entry.get('query')}")
        for memory in resolved:
            print(f"       -> {memory['_where']:<27} {describe(memory)}")
        for problem in line_problems:
            print(f"       !! {problem}")

    print()
    print(f"{lines} queries, {len(memories)} source memories; per agent: "
          + ", ".join(f"{agent} {per_agent.get(agent, 0)}" for agent in AGENTS))
    if problems:
        print(f"\n{len(problems)} problem(s):", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    print("All needs_text resolve to exactly one visible memory.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
