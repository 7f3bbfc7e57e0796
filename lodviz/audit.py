"""The audit log's vocabulary: every action an event can name, the groups the code asks about,
and one line that says what an event did (``summarise``).

Every module that asks "is this a search?", "does this change what the
landscape shows?" or "what does a replay read?" asks here, so a new action is
added in one place.
"""

from __future__ import annotations

import json

from lodviz.records import AuditEvent

#: Results whose FULL and SUMMARY items count as retrieved (``details["touched"]``); they can be replayed.
RETRIEVING = ("search", "recent", "unseen", "sample")
#: Every use of memories: what "recently used" reads.
USING = (*RETRIEVING, "expand")
#: A memory's tier floor moved.
FLOOR_MOVES = ("promote", "demote")
#: The events a rebuild of the past reads: existence, usage and floors (``lodviz.history``).
HISTORY = ("write", *USING, *FLOOR_MOVES)
#: Events that change what the landscape shows (a retrieving one only if it touched memories).
CHANGING = ("write", *USING, *FLOOR_MOVES, "profile", "resolve", "redetect", "forget")
#: Every action, in the order the audit tab offers them.
ACTIONS = ("search", "expand", "promote", "demote", "profile", "write", "recent", "unseen", "sample",
           "resolve", "redetect", "forget", "golden", "tune", "token")


def changes_landscape(event: AuditEvent) -> bool:
    """Does ``event`` change what the landscape shows (so an open page must redraw)?"""
    if event.action not in CHANGING:
        return False
    if event.action in RETRIEVING:
        return bool(event.details.get("touched"))
    return True


def summarise(event: AuditEvent) -> str:
    d = event.details
    if event.action in RETRIEVING:
        c = d.get("counts", {})
        text = f"{c.get('FULL', 0)} full, {c.get('SUMMARY', 0)} summaries, {c.get('HEADLINE', 0)} headlines; {len(d.get('touched', []))} touched"
        if d.get("exclude"):
            text += f"; excluding {', '.join(d['exclude'])}"
        return text
    if event.action in FLOOR_MOVES:
        return f"floor {d.get('from')} → {d.get('to')}" + (f": {d['reason']}" if d.get("reason") else "")
    if event.action == "profile":
        new = d.get("new", {})
        return f"α {new.get('alpha')}, λ {new.get('lam')}, θ {new.get('theta1')}/{new.get('theta2')}/{new.get('theta3')}, k {new.get('k')}" + (
            f" (preset {d['preset']})" if d.get("preset") else ""
        )
    if event.action == "write":
        return f"{d.get('count', 0)} memories written"
    if event.action == "expand":
        if d.get("passages") is not None:  # one passage's neighbourhood (lodviz.drilling)
            at = d.get("positions") or [0]
            which = f"passage {at[0] + 1}" if len(at) == 1 else f"passages {at[0] + 1}–{at[-1] + 1}"
            return f"{which} of {d.get('of', '?')} read around “{d.get('around', '')}”; counted as a retrieval"
        return "full text read; counted as a retrieval"
    if event.action == "resolve":
        decided = f"#{d.get('superseded')} superseded" if d.get("superseded") else "both stand"
        return f"conflict with #{d.get('other')} ({d.get('was')}): {decided}" + (f": {d['reason']}" if d.get("reason") else "")
    if event.action == "redetect":
        return f"conflict candidates found again: {d.get('found', 0)} open"
    if event.action == "forget":
        return "texts and vector erased" + (f": {d['reason']}" if d.get("reason") else "")
    if event.action == "golden":
        return f"{d.get('count', 0)} golden queries added" + (f" from {d['source']}" if d.get("source") else "")
    if event.action == "tune":
        best = d.get("suggested", {})
        return (
            f"{d.get('settings')} settings × {d.get('queries')} golden queries within {d.get('budget_tokens')} tokens; "
            f"suggested α {best.get('alpha')}, λ {best.get('lam')} ({best.get('recall_readable', 0):.0%} readable)"
        )
    return json.dumps(d, ensure_ascii=False)[:200]


__all__ = ["ACTIONS", "CHANGING", "FLOOR_MOVES", "HISTORY", "RETRIEVING", "USING", "changes_landscape", "summarise"]
