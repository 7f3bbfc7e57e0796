"""Crash safety: SIGKILL a process in the middle of imports and promoting searches, 30 times.

After every kill the store must open, every memory must be whole (three texts
and a usable embedding) or absent, every memory a write event names must be
there, and the audit log must account for the data (``lodviz.verify``).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import lodviz
from lodviz.testing import HashEmbedder
from lodviz.verify import verify

ROOT = Path(__file__).resolve().parents[1]
RUNS = 30

WORKER = textwrap.dedent(
    """
    import itertools, random, sys
    import lodviz
    from lodviz.testing import HashEmbedder

    path, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    mem = lodviz.open(path, embedder=HashEmbedder(64), actor="crash-worker")
    print("ready", flush=True)
    for i in itertools.count():
        step = i % 4
        if step == 0:  # an import: one batch, one transaction
            mem.add_many([
                {"text": f"run {seed} note {i}.{j}: supplier {rng.randrange(99)} shipped {rng.randrange(9)} lots late.",
                 "agent_id": rng.choice(["ops", "legal"]), "retrieval_count": rng.randrange(3),
                 "floor": rng.choice(["OUT", "OUT", "HEADLINE"])}
                for j in range(rng.randrange(20, 200))
            ])
        elif step == 1:  # a burst of searches that promote by use
            for _ in range(5):
                mem.search(f"supplier {rng.randrange(99)} shipped late", agent_id="ops", k=50)
        elif step == 2 and len(mem):
            mem.promote(rng.randrange(1, len(mem) + 1), reason="crash test")
        else:
            mem.set_profile("ops", rng.choice(["legal", "research", "digest"]), reason="crash test")
    """
)


def invariants(path: Path) -> int:
    """Open the store after a kill and check everything; returns the number of checks made."""
    mem = lodviz.open(path, embedder=HashEmbedder(64))
    try:
        checks = 1  # it opened
        records = {r.id: r for r in mem.export_records()}
        state, vectors = mem.snapshot()
        for row, memory_id in enumerate(state.ids.tolist()):
            record = records[memory_id]
            assert record.text and record.summary and record.headline, memory_id
            assert np.isfinite(vectors[row]).all() and np.linalg.norm(vectors[row]) > 0.5, memory_id
            checks += 2
        named = {int(i) for e in mem.audit(actions=["write"], limit=10**9) for i in e.details.get("ids", [])}
        assert named == set(records), "a write event names a memory that is not there, or the reverse"
        checks += 1
        report = verify(mem)
        assert report.ok, [str(d) for d in report.disagreements[:5]]
        assert report.unverifiable == 0
        return checks + report.checks
    finally:
        mem.close()


@pytest.mark.slow
def test_sigkill_at_random_moments_leaves_a_whole_store_and_a_matching_audit_log(tmp_path):
    path = tmp_path / "crash.duckdb"
    rng = random.Random(20261203)
    checks = kills = 0
    for run in range(RUNS):
        worker = subprocess.Popen([sys.executable, "-c", WORKER, str(path), str(run)], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready", worker.stderr.read() if worker.stderr else ""
        time.sleep(rng.uniform(0.05, 1.5))
        if worker.poll() is None:
            worker.send_signal(signal.SIGKILL)
            kills += 1
        worker.wait(30)
        assert worker.returncode == -signal.SIGKILL, worker.stderr.read() if worker.stderr else ""
        checks += invariants(path)
    mem = lodviz.open(path, embedder=HashEmbedder(64))
    stored, searches = len(mem), len(mem.audit(actions=["search"], limit=10**9))
    mem.close()
    print(f"crash test: {RUNS} runs, {kills} SIGKILLs mid-work, {checks:,} invariant checks passed; "
          f"{stored:,} memories and {searches:,} searches survived")
    assert kills == RUNS and stored > 0 and searches > 0
