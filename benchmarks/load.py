"""A bounded load test: 32 MCP clients with their own tokens searching and writing against one `lodviz serve --auth`.

    python benchmarks/load.py                          # 32 clients, 60 s, a copy of the sample store, the real model
    python benchmarks/load.py --clients 8 --seconds 10 --model hash

Each client is an agent with its own agent token, holding one MCP session
over streamable HTTP on loopback; it searches three times for every write.
Afterwards the server is stopped and the store is counted: every write a
client saw acknowledged must be stored (exactly those), and the audit log must
hold exactly one search or write event per successful call. Reported:
throughput, p50/p95/p99 latency per tool, failed calls, and the counts.
Results go to ``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))

import lodviz  # noqa: E402

QUERIES = [
    "limitation of liability cap in CRO master services agreements",
    "drug interactions of AUR-302 with strong CYP3A4 inhibitors",
    "what is Korvane Pharma doing that matters for us this week?",
    "supplier audit findings at the Hyderabad plant",
    "board decisions on the operating budget",
]


def start_server(store: Path, model: str | None, home: Path) -> tuple[subprocess.Popen, str]:
    env = {"HF_HUB_OFFLINE": "1", "LODVIZ_HOME": str(home), "PATH": "/usr/bin:/bin", "LODVIZ_RATE_LIMIT": "0"}
    import os

    env = {**os.environ, **env}
    command = [sys.executable, "-m", "lodviz.cli", *(["--model", model] if model else []), "serve", "--store", str(store),
               "--auth", "--no-open", "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("lodviz is serving"):
            return process, line.split(" at ", 1)[1].split(" ", 1)[0]
    raise SystemExit("lodviz serve did not start: " + (process.stderr.read() if process.stderr else ""))


async def client(url: str, token: str, agent: str, until: float, log: dict) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
        async with Client(streamable_http_client(url + "mcp/", http_client=http)) as session:
            i = 0
            while time.monotonic() < until:
                i += 1
                tool = "memory_write" if i % 4 == 0 else "memory_search"
                args = ({"text": f"{agent} load note {i}: the Bergen venue holds {100 + i} seats."} if tool == "memory_write"
                        else {"query": QUERIES[i % len(QUERIES)], "budget_tokens": 2000})
                start = time.perf_counter()
                try:
                    result = await session.call_tool(tool, args)
                    ok = not result.is_error
                except Exception as exc:  # noqa: BLE001 - counted as a failed call
                    ok, result = False, exc
                log["latency"][tool].append(time.perf_counter() - start)
                if not ok:
                    log["failed"].append(f"{tool}: {result}")
                elif tool == "memory_write":
                    log["written"].append(int(result.structured_content["id"]))
                else:
                    log["searched"] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--model", default=None, help="e.g. hash (default: the bundled real model)")
    parser.add_argument("--name", default="load")
    args = parser.parse_args()
    import anyio

    tmp = Path(tempfile.mkdtemp(prefix="lodviz-load-"))
    store = tmp / "load.duckdb"
    shutil.copy(REPO / "lodviz" / "data" / "lodviz-sample.duckdb", store)
    mem = lodviz.open(store, model=args.model)
    tokens = {f"load-{n:02d}": mem.create_token(f"load-{n:02d}", "agent", agent_id=f"load-{n:02d}", actor="benchmark")[1]
              for n in range(args.clients)}
    before_memories = len(mem)
    before_events = mem.last_event_id()
    mem.close()
    process, url = start_server(store, args.model, tmp / "home")
    log = {"latency": {"memory_search": [], "memory_write": []}, "failed": [], "written": [], "searched": 0}
    try:
        until = time.monotonic() + args.seconds
        started = time.monotonic()

        async def run_all() -> None:
            async with anyio.create_task_group() as group:
                for agent, token in tokens.items():
                    group.start_soon(client, url, token, agent, until, log)

        anyio.run(run_all)
        elapsed = time.monotonic() - started
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    mem = lodviz.open(store, model=args.model)
    stored = {r.id for r in mem.export_records()}
    new_ids = stored - set(range(1, before_memories + 1))
    events = [e for e in mem.audit(after_id=before_events, limit=10**9) if e.actor.startswith("load-")]
    mem.close()
    calls = sum(len(v) for v in log["latency"].values())
    ok_calls = calls - len(log["failed"])
    result = {
        "command": " ".join(["python", "benchmarks/load.py", *sys.argv[1:]]),
        "clients": args.clients, "seconds": round(elapsed, 1), "calls": calls, "failed": len(log["failed"]),
        "throughput_per_s": round(calls / elapsed, 1),
        "latency_ms": {
            tool: {p: round(float(np.percentile(np.asarray(v) * 1e3, q)), 1) for p, q in (("p50", 50), ("p95", 95), ("p99", 99))}
            for tool, v in log["latency"].items() if v
        },
        "writes_acknowledged": len(log["written"]), "memories_added": len(new_ids),
        "writes_exact": set(log["written"]) == new_ids,
        "audit_events": len(events), "audit_exact": len(events) == ok_calls,
        "first_failures": log["failed"][:5],
    }
    print(json.dumps(result, indent=1))
    (REPO / "benchmarks" / "results" / f"{args.name}.json").write_text(json.dumps(result, indent=1))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
