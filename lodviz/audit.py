"""The audit log as people read it: one line that says what an event did."""

from __future__ import annotations

import json

from lodviz.records import AuditEvent


def summarise(event: AuditEvent) -> str:
    d = event.details
    if event.action in ("search", "recent", "unseen", "sample"):
        c = d.get("counts", {})
        text = f"{c.get('FULL', 0)} full, {c.get('SUMMARY', 0)} summaries, {c.get('HEADLINE', 0)} headlines; {len(d.get('touched', []))} touched"
        if d.get("exclude"):
            text += f"; excluding {', '.join(d['exclude'])}"
        return text
    if event.action in ("promote", "demote"):
        return f"floor {d.get('from')} → {d.get('to')}" + (f": {d['reason']}" if d.get("reason") else "")
    if event.action == "profile":
        new = d.get("new", {})
        return f"α {new.get('alpha')}, λ {new.get('lam')}, θ {new.get('theta1')}/{new.get('theta2')}/{new.get('theta3')}, k {new.get('k')}" + (
            f" (preset {d['preset']})" if d.get("preset") else ""
        )
    if event.action == "write":
        return f"{d.get('count', 0)} memories written"
    if event.action == "expand":
        return "full text read; counted as a retrieval"
    if event.action == "resolve":
        decided = f"#{d.get('superseded')} superseded" if d.get("superseded") else "both stand"
        return f"conflict with #{d.get('other')} ({d.get('was')}): {decided}" + (f": {d['reason']}" if d.get("reason") else "")
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


__all__ = ["summarise"]
