"""Golden queries: questions an agent asks and the memories a good answer needs (what ``tuning`` measures).

``GoldenQueries`` records them one by one or from a JSON Lines file (the
format is in ``lodviz.tuning``'s docstring), all or nothing: every entry is
checked (its memories exist and the agent can see them; a ``needs_text``
names exactly one memory) before any is written, and the write is one audit
line. Handed the store and the visibility-checked lookup of one memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lodviz.errors import ImportFormatError, MemoryNotFound
from lodviz.records import AuditEvent, Golden, MemoryRecord
from lodviz.store.base import Store


class GoldenQueries:
    """The golden queries of one store."""

    def __init__(self, store: Store, get: Callable[[Any, str | None], MemoryRecord]) -> None:
        self._store = store
        self._get = get  # a memory by id as ``agent_id`` may see it; MemoryNotFound otherwise

    def all(self, agent_id: str | None = None) -> list[Golden]:
        """The golden queries on record (of one agent, or all)."""
        return self._store.golden(agent_id)

    def add(self, query: str, needs: Sequence[int], agent_id: str | None, note: str | None, actor: str) -> int:
        """Record one golden query (audited); returns its id."""
        return self._add([self.entry({"query": query, "needs": list(needs), "agent_id": agent_id, "note": note}, "")], actor)[0]

    def import_file(self, path: str | Path, actor: str) -> list[int]:
        """Golden queries from a JSON Lines file, all or nothing."""
        path = Path(path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ImportFormatError(f"cannot read {path}: {exc}") from None
        entries = []
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            where = f"{path.name} line {number}"
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ImportFormatError(f"{where}: not valid JSON ({exc.msg}).") from None
            entries.append(self.entry(data, where))
        if not entries:
            raise ImportFormatError(f"{path.name} holds no golden queries.")
        return self._add(entries, actor, source=path.name)

    def entry(self, data: Any, where: str) -> Golden:
        """One golden query from its JSON object, its memories resolved to ids the agent can see."""
        prefix = f"{where}: " if where else ""
        if not isinstance(data, dict):
            raise ImportFormatError(f"{prefix}expected an object with 'query' and 'needs' or 'needs_text'.")
        query = data.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ImportFormatError(f"{prefix}'query' must be a non-empty string.")
        agent_id = data.get("agent_id")
        if agent_id is not None and not isinstance(agent_id, str):
            raise ImportFormatError(f"{prefix}'agent_id' must be a string.")
        needs: list[int] = []
        for raw in data.get("needs") or []:
            try:
                needs.append(self._get(raw, agent_id).id)
            except MemoryNotFound:
                raise ImportFormatError(f"{prefix}memory {raw!r} does not exist or {agent_id or 'the auditor'} cannot see it.") from None
        for text in data.get("needs_text") or []:
            if not isinstance(text, str) or not text.strip():
                raise ImportFormatError(f"{prefix}each 'needs_text' entry must be a non-empty string.")
            state = self._store.state()
            matches = [i for i in self._store.ids_containing(text, 50, within=state) if bool(state.visible_to(agent_id)[state.rows_of([i])[0]])]
            if len(matches) != 1:
                found = "no memory" if not matches else f"{len(matches)} memories"
                raise ImportFormatError(f"{prefix}{found} visible to {agent_id or 'the auditor'} contain {text!r}; it must name exactly one.")
            needs.append(matches[0])
        if not needs:
            raise ImportFormatError(f"{prefix}give 'needs' (memory ids) or 'needs_text' (text each needed memory contains).")
        return Golden(query=query.strip(), needs=sorted(set(needs)), agent_id=agent_id, note=data.get("why") or data.get("note"))

    def _add(self, entries: list[Golden], actor: str, source: str | None = None) -> list[int]:
        event = AuditEvent(
            action="golden",
            actor=actor,
            agent_id=entries[0].agent_id if len({g.agent_id for g in entries}) == 1 else None,
            details={"count": len(entries), "source": source},
        )
        return self._store.add_golden(entries, event)


__all__ = ["GoldenQueries"]
