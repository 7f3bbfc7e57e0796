"""Writing memories: validate, skip duplicates, compress and embed once, store with their conflict links.

``Writer.add_many`` validates every record before anything is written, then
stores them one transaction per batch; compression and embedding are paid
only for records whose content hash is new (``ingest.pipeline``), and each
batch is one audit line ("write"). ``add`` and ``write`` store one memory
and answer with the existing one for a duplicate; ``write`` leaves an audit
line for a duplicate too.

Only the store's part of a write holds the memory's lock (``hold``): the
duplicate check, the conflict links and the insert. Compression and embedding,
the slow part (a large write took a minute), run outside it, so another
agent's search is not kept waiting behind them. A record that another write
stored meanwhile is found again under the lock and skipped.

That slow part runs through ``slow`` (``lodviz.yielding``: in a thread of
lower priority, so that a search sharing the machine's cores goes first).

Handed the store, its models (``lodviz.models``), the lookup of one memory,
who acts when a call names nobody, the memory's lock and how the slow part runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from lodviz.ingest import pipeline
from lodviz.ingest.inputs import MemoryInput, parse_record
from lodviz.models import Models
from lodviz.records import AuditEvent, MemoryRecord
from lodviz.result import IngestReport
from lodviz.store.base import Store

T = TypeVar("T")


def _directly(call: Callable[[], T]) -> T:
    return call()


class Writer:
    """The write path of one store."""

    def __init__(self, store: Store, models: Models, get: Callable[[int], MemoryRecord], actor: Callable[[], str],
                 hold: Callable[[], AbstractContextManager[Any]] = nullcontext,
                 slow: Callable[[Callable[[], Any]], Any] = _directly) -> None:
        self._store = store
        self._models = models
        self._get = get
        self._actor = actor
        self._hold = hold
        self._slow = slow

    def add(self, text: str, fields: dict[str, Any]) -> int:
        """Store one memory; its id (the existing id if it is a duplicate)."""
        record = parse_record({"text": text, **fields})
        report = self.add_many([record], actor=fields.get("actor"))
        if report.added:
            return report.added[0]
        with self._hold():
            return self._existing(record)

    def write(self, text: str, actor: str | None, fields: dict[str, Any]) -> tuple[MemoryRecord, bool]:
        """Store one memory and return it, with whether it was a duplicate (which is audited all the same)."""
        record = parse_record({"text": text, **fields})
        report = self.add_many([record], actor=actor)
        with self._hold():
            if report.added:
                return self._get(report.added[0]), False
            existing = self._existing(record)
            self._store.record(
                AuditEvent(
                    action="write", actor=actor or record.agent_id or self._actor(), agent_id=record.agent_id,
                    memory_id=existing, details={"count": 0, "duplicate": True},
                )
            )
            return self._get(existing), True

    def _existing(self, record: MemoryInput) -> int:
        existing = self._store.id_of_hash(record.content_hash())
        assert existing is not None
        return existing

    def add_many(
        self,
        records: Iterable[MemoryInput | dict[str, Any]],
        *,
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
        actor: str | None = None,
    ) -> IngestReport:
        """Store many memories, one transaction per batch, skipping duplicates; all validated first."""
        inputs = [r if isinstance(r, MemoryInput) else parse_record(r, f"record {i + 1}") for i, r in enumerate(records)]
        added: list[int] = []
        skipped = 0
        if inputs:
            with self._hold():
                self._models.check()
        for start in range(0, len(inputs), batch_size):
            batch = inputs[start : start + batch_size]
            ids, dup = self._batch(batch, actor or self._actor())
            added.extend(ids)
            skipped += dup
            if progress is not None:
                progress(len(batch))
        return IngestReport(added=added, skipped=skipped)

    def _batch(self, batch: list[MemoryInput], actor: str) -> tuple[list[int], int]:
        hashes = [r.content_hash() for r in batch]
        with self._hold():
            existing = self._store.existing_hashes(hashes)
        fresh, seen = [], set()
        for record, content_hash in zip(batch, hashes):
            if content_hash not in existing and content_hash not in seen:
                seen.add(content_hash)
                fresh.append((record, content_hash))
        if not fresh:
            return [], len(batch)
        models = self._models
        # Outside the lock: the slow part.
        rows, vectors = self._slow(
            lambda: pipeline.prepare(fresh, models.compressor, models.embedder, models.embed_field, models.window_counter())
        )
        with self._hold():
            stored_meanwhile = self._store.existing_hashes([h for _, h in fresh])
            if stored_meanwhile:  # another write stored some of these while this one embedded them
                keep = [i for i, (_, h) in enumerate(fresh) if h not in stored_meanwhile]
                fresh, rows, vectors = [fresh[i] for i in keep], [rows[i] for i in keep], vectors[keep]
                if not fresh:
                    return [], len(batch)
            agents = sorted({r.agent_id for r in batch})
            event = AuditEvent(
                action="write",
                actor=actor,
                agent_id=agents[0] if len(agents) == 1 else None,
                details={"count": len(rows)},
            )
            state, stored = self._store.snapshot()
            links = pipeline.conflict_links(
                [r for r, _ in fresh], vectors, [row.passage_vectors for row in rows], state, stored, self._store.passages(), self._store.get
            )
            ids = self._store.insert(rows, event, links)
        written = [i for i in ids if i is not None]
        return written, len(batch) - len(written)


__all__ = ["Writer"]
