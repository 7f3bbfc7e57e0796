"""``lodviz audit verify``: does the audit log account for the data?

The audit log is the store's history; the data is where that history ends.
Replaying the log from the first event:

* every memory was written by a ``write`` event that names its id;
* its retrieval count is what that write brought with it (``imported_usage``)
  plus one for every search, browse (recent, unseen, sample) that touched it
  and every expand;
* its tier floor is what the last promote or demote set, else what it was
  imported with (``imported_floors``), else none;
* every agent's stored profile is the ``new`` profile of its last ``profile``
  event.

Anything else is a disagreement: a write the log does not show, a count or a
floor changed behind its back, or an event lost. Stores written before writes
recorded their imported history cannot account for imported counts and
floors; those memories are reported as unverifiable, not as disagreements.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from lodviz.audit import FLOOR_MOVES, RETRIEVING
from lodviz.memory import Memory
from lodviz.scoring import Tier

#: What a disagreement says the audit log holds when it holds no event at all for the subject.
NO_EVENT = None


@dataclass
class Disagreement:
    """The data (``found``) against what the audit log says it should be (``expected``).

    ``expected`` is ``NO_EVENT`` when the log holds no event for the subject at
    all (a write nobody recorded, or a log emptied or cut short): then the
    data is there and the log is silent, and the sentence says so.
    """

    what: str  # "retrieval_count", "floor", "profile", "unwritten", "audit_log"
    subject: str  # "memory 42", "agent legal-review"
    expected: Any
    found: Any

    def __str__(self) -> str:
        if self.what == "audit_log":
            return f"{self.subject} is empty, but the store holds {self.found}"
        if self.what == "unwritten":
            return f"{self.subject} is stored, but no write event in the audit log names it"
        if self.expected is NO_EVENT:
            return f"{self.subject}: {self.what} is {self.found!r}, but no {self.what} event in the audit log sets it"
        return f"{self.subject}: {self.what} is {self.found!r}, the audit log says {self.expected!r}"


@dataclass
class VerifyReport:
    events: int
    memories: int
    checks: int
    disagreements: list[Disagreement] = field(default_factory=list)
    unverifiable: int = 0  # memories imported before writes recorded their history

    @property
    def ok(self) -> bool:
        return not self.disagreements

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok, "events": self.events, "memories": self.memories, "checks": self.checks,
            "unverifiable": self.unverifiable, "disagreements": [vars(d) for d in self.disagreements],
        }


def verify(mem: Memory) -> VerifyReport:
    """Replay ``mem``'s audit log and compare it with its data."""
    events = list(reversed(mem.audit(limit=10**12)))  # oldest first
    state = mem.columns()
    written: set[int] = set()
    touched: Counter[int] = Counter()
    imported_count: dict[int, int] = {}
    floors: dict[int, int] = {}
    profiles: dict[str, dict[str, Any]] = {}
    legacy_writes = False
    for e in events:
        if e.action == "write":
            ids = [int(i) for i in e.details.get("ids", []) if i is not None]
            written.update(ids)
            if ids and "imported_usage" not in e.details and "imported_floors" not in e.details and e.details.get("legacy", True):
                legacy_writes = True
            for key, (count, _last) in e.details.get("imported_usage", {}).items():
                imported_count[int(key)] = int(count)
            for key, floor in e.details.get("imported_floors", {}).items():
                floors[int(key)] = int(floor)
        elif e.action in RETRIEVING:
            touched.update(int(i) for i in e.details.get("touched", []))
        elif e.action == "expand" and e.memory_id is not None:
            touched[int(e.memory_id)] += 1
        elif e.action in FLOOR_MOVES and e.memory_id is not None and e.details.get("to"):
            floors[int(e.memory_id)] = int(Tier.parse(e.details["to"]))
        elif e.action == "profile" and e.agent_id and isinstance(e.details.get("new"), dict):
            profiles[e.agent_id] = e.details["new"]

    report = VerifyReport(events=len(events), memories=len(state), checks=0)
    if not events and len(state):  # emptied (a TRUNCATE, say): every memory below is then unwritten too
        report.checks += 1
        report.disagreements.append(Disagreement("audit_log", "the audit log", NO_EVENT, f"{len(state):,} memories"))
    for row, memory_id in enumerate(state.ids.tolist()):
        report.checks += 3
        if memory_id not in written:
            report.disagreements.append(Disagreement("unwritten", f"memory {memory_id}", NO_EVENT, "stored"))
            continue
        expected_count = imported_count.get(memory_id, 0) + touched.get(memory_id, 0)
        count = int(state.retrieval_count[row])
        floor = int(state.floor[row])
        if legacy_writes and memory_id not in imported_count and count > touched.get(memory_id, 0):
            report.unverifiable += 1  # imported before writes recorded what they brought: cannot tell
            continue
        if count != expected_count:
            report.disagreements.append(Disagreement("retrieval_count", f"memory {memory_id}", expected_count, count))
        if floor != floors.get(memory_id, 0) and not (legacy_writes and memory_id not in floors):
            report.disagreements.append(
                Disagreement("floor", f"memory {memory_id}", Tier(floors.get(memory_id, 0)).name, Tier(floor).name)
            )
    for agent, params in mem.profiles().items():
        report.checks += 1
        stored = params.to_dict()
        if agent not in profiles:
            report.disagreements.append(Disagreement("profile", f"agent {agent}", NO_EVENT, stored))
        elif {k: profiles[agent].get(k) for k in stored} != stored:
            report.disagreements.append(Disagreement("profile", f"agent {agent}", profiles[agent], stored))
    return report
