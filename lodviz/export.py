"""The store read out whole, for a person or a file: its facts, its memories, its agents, its audit log.

``Export.info`` is the store's facts (size, embedding model, its map, demo
queries, reference time); ``records`` every memory an agent may see (all for
None) in id order, with usage, floor and its passages' spans, read in batches; ``agents`` every
agent with memories or a profile; the frames are pandas DataFrames of the
memories and of the audit log (pandas is imported only when one is asked for).
Nothing is counted as a retrieval.

Handed the store, the text it embeds, the stored profiles and the audit
log's reader (the caller's, with its checks).

``atlas_frame`` and ``write_atlas`` are ``lodviz export --format atlas``: one
Parquet row per memory an agent may see, in the columns Apple's Embedding Atlas
reads (``embedding-atlas FILE --x x --y y --text text``): its texts, its place
on the store's own map (the stored layout the landscape draws, never refitted
here), the tier the landscape gives it with no query, its owner, kind, source,
times (UTC) and usage; with vectors, its embedding and its nearest exported
memories in Atlas's ``--neighbors`` form. Handed the ``Memory`` (its public
methods, ``AtlasSource``); pyarrow is imported only when a file is written.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from lodviz.errors import AgentNotFound, InvalidInput, LodvizError, StoreError
from lodviz.ingest.inputs import parse_time
from lodviz.params import DEFAULT, Params
from lodviz.records import AuditEvent, MemoryRecord
from lodviz.result import AgentOverview, Landscape, StoreInfo
from lodviz.scoring import Tier
from lodviz.store.base import Store
from lodviz.times import iso

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


class Export:
    """One store, read out."""

    def __init__(
        self, store: Store, embed_field: str, profiles: Callable[[], dict[str, Params]], audit: Callable[..., list[AuditEvent]]
    ) -> None:
        self._store = store
        self._embed_field = embed_field
        self._profiles = profiles
        self._audit = audit  # Memory.audit's filters

    def info(self) -> StoreInfo:
        """The store's facts: size, embedding model, its map, demo queries, reference time."""
        meta = self._store.meta()
        reference = meta.get("reference_time")
        return StoreInfo(
            path=self._store.path,
            memories=len(self._store.state()),
            embedding_model=meta.get("embedding_model"),
            embedding_dim=int(meta["embedding_dim"]) if "embedding_dim" in meta else None,
            embed_field=meta.get("embed_field", self._embed_field),
            layout_method=meta.get("layout_method") or None,
            layout_count=int(meta.get("layout_count", 0) or 0),
            layout_fitted_at=meta.get("layout_fitted_at"),
            demo_queries=json.loads(meta["demo_queries"]) if meta.get("demo_queries") else [],
            reference_time=parse_time(reference, "reference_time") if reference else None,
        )

    def records(self, agent_id: str | None, batch: int) -> Iterator[MemoryRecord]:
        """Every memory the agent may see (all for None), in id order, with usage, floor and its passages'
        spans (``[[start, stop], ...]`` into its text; ``[]`` for a short memory)."""
        state = self._store.state()
        passages = self._store.passages()
        ids = state.ids[state.visible_to(agent_id)].tolist()
        for start in range(0, len(ids), batch):
            chunk = ids[start : start + batch]
            records = self._store.get(chunk)
            spans: dict[int, list[list[int]]] = {}
            held = passages.of(chunk)
            for owner, span in zip(held.owner.tolist(), held.spans.tolist()):
                spans.setdefault(owner, []).append(span)
            for memory_id in chunk:
                record = records[memory_id]
                record.passages = spans.get(memory_id, [])
                yield record

    @staticmethod
    def frame(records: Iterator[MemoryRecord]) -> pd.DataFrame:
        """Memories as a pandas DataFrame, one row each."""
        import pandas as pd

        return pd.DataFrame([record.to_dict() for record in records])

    def agents(self) -> list[AgentOverview]:
        """Every agent with memories or a profile: its memory count and the profile its searches use."""
        state = self._store.state()
        live = ~state.forgotten
        counts = dict(zip(*np.unique(state.agent_id[live].astype(str), return_counts=True))) if live.any() else {}
        stored = self._profiles()
        return [
            AgentOverview(agent_id=name, memories=int(counts.get(name, 0)), profile=stored.get(name, DEFAULT), stored=name in stored)
            for name in sorted(set(counts) | set(stored))
        ]

    def audit_frame(self, filters: dict[str, Any]) -> pd.DataFrame:
        """The audit log's events, filtered as ``audit`` takes them, as a pandas DataFrame, newest first."""
        import pandas as pd

        return pd.DataFrame([event.to_dict() for event in self._audit(**filters)])


# -- Embedding Atlas (lodviz export --format atlas) ---------------------------------

#: The columns of an Atlas file, in order; ``vector`` and ``neighbors`` follow with vectors.
ATLAS_COLUMNS = (
    "id", "text", "summary", "headline", "x", "y", "tier", "agent_id", "visibility", "kind", "source",
    "created_at", "last_retrieved_at", "retrieval_count", "floor",
)
ATLAS_VECTOR_COLUMNS = ("vector", "neighbors")
#: How many nearest memories ``neighbors`` lists: as many as Embedding Atlas finds for a projection of its own.
ATLAS_NEIGHBORS = 15
#: Similarities computed at a time while finding neighbours (rows x memories), to bound the memory it takes.
_NEIGHBOR_CELLS = 1 << 24


class AtlasSource(Protocol):
    """What an Atlas file is read from: ``Memory``'s public methods of these names."""

    def export_records(self, agent_id: str | None = None) -> Iterator[MemoryRecord]: ...

    def landscape(self, query: str | None = None, *, agent_id: str | None = None, params: Params | None = None) -> Landscape: ...

    def profile(self, agent_id: str | None) -> Params: ...

    def agents_overview(self) -> list[AgentOverview]: ...


def atlas_frame(source: AtlasSource, agent_id: str | None = None, *, with_vectors: bool = False) -> pd.DataFrame:
    """Every memory ``agent_id`` may see (all for None; never a forgotten one), one row each in id order,
    in ``ATLAS_COLUMNS`` (and ``ATLAS_VECTOR_COLUMNS`` with vectors).

    ``x``/``y`` are the store's layout; a store with memories not yet on the map is refused, not
    refitted (a fit takes UMAP seconds to minutes and writes the store; an export only reads).
    ``tier`` is the landscape's with no query at the store's "now": under ``agent_id``'s profile,
    or with no agent under each memory's own agent's profile. Nothing is counted as a retrieval.
    """
    import pandas as pd

    if agent_id is not None and agent_id not in {agent.agent_id for agent in source.agents_overview()}:
        raise AgentNotFound(f"no agent {agent_id!r} in this store; `lodviz agents` lists them.")
    land = source.landscape(None, agent_id=agent_id)
    state = land.state
    unplaced = int((np.isnan(state.x) | np.isnan(state.y)).sum())
    if unplaced:
        raise StoreError(
            f"{unplaced} of {len(state)} memories have no place on the store's map yet: open it once with "
            "`lodviz serve` (the app places them when it starts, and fits the map if there is none), then export again."
        )
    tier = np.asarray(land.scored.tier, dtype=np.int8).copy()
    if agent_id is None:
        owners = state.agent_id
        for owner in sorted(set(owners.tolist())):
            theirs = source.landscape(None, params=source.profile(owner))
            if not np.array_equal(theirs.state.ids, state.ids):
                raise StoreError("the store changed while it was exported; export again.")
            mine = owners == owner
            tier[mine] = theirs.scored.tier[mine]
    row_of = {memory_id: row for row, memory_id in enumerate(state.ids.tolist())}
    rows: list[int] = []
    records: list[MemoryRecord] = []
    for record in source.export_records(agent_id):
        row = row_of.get(record.id)
        if row is not None:  # None: written after the landscape was read
            rows.append(row)
            records.append(record)
    at = np.asarray(rows, dtype=np.int64)
    frame = pd.DataFrame(
        {
            "id": np.asarray([r.id for r in records], dtype=np.int64),
            "text": [r.text for r in records],
            "summary": [r.summary for r in records],
            "headline": [r.headline for r in records],
            "x": state.x[at].astype(np.float64),
            "y": state.y[at].astype(np.float64),
            "tier": [Tier(int(t)).name for t in tier[at]],
            "agent_id": [r.agent_id for r in records],
            "visibility": [r.visibility for r in records],
            "kind": [r.kind for r in records],
            "source": [r.source for r in records],
            "created_at": _utc_times([r.created_at for r in records]),
            "last_retrieved_at": _utc_times([r.last_retrieved_at for r in records]),
            "retrieval_count": np.asarray([r.retrieval_count for r in records], dtype=np.int64),
            "floor": [Tier(r.floor).name for r in records],
        },
        columns=list(ATLAS_COLUMNS),
    )
    if with_vectors:
        vectors = np.ascontiguousarray(land.vectors(at), dtype=np.float32)
        ids, distances = nearest_neighbors(vectors, ATLAS_NEIGHBORS)
        frame["vector"] = pd.Series(list(vectors), index=frame.index, dtype=object)
        frame["neighbors"] = pd.Series(
            [{"ids": i, "distances": d} for i, d in zip(ids.tolist(), distances.tolist())], index=frame.index, dtype=object
        )
    frame.attrs["lodviz"] = {
        "now": iso(land.now),
        "tiers": f"under the profile of {agent_id}" if agent_id is not None else "under each memory's own agent's profile",
        "agent_id": agent_id,
        "neighbors": "row indices, cosine distance" if with_vectors else None,
    }
    return frame


def _utc_times(values: list[Any]) -> pd.Series:
    import pandas as pd

    return pd.Series(pd.to_datetime(values, utc=True), dtype="datetime64[us, UTC]")


def nearest_neighbors(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For each unit row, the rows of its ``k`` most similar others (itself left out), nearest first, and
    their cosine distances (1 - cosine): Embedding Atlas's neighbours, by row index. Exact, so quadratic
    in the number of rows, computed a block of rows at a time."""
    n = len(vectors)
    k = max(min(k, n - 1), 0)
    ids = np.zeros((n, k), dtype=np.int64)
    distances = np.zeros((n, k), dtype=np.float32)
    if k == 0:
        return ids, distances
    step = max(1, _NEIGHBOR_CELLS // n)
    for start in range(0, n, step):
        stop = min(start + step, n)
        sims = vectors[start:stop] @ vectors.T
        sims[np.arange(stop - start), np.arange(start, stop)] = -np.inf  # not its own neighbour
        top = np.argpartition(sims, n - k, axis=1)[:, n - k :]  # the k largest (faster than partitioning -sims)
        near = np.take_along_axis(sims, top, axis=1)
        order = np.argsort(-near, axis=1, kind="stable")
        ids[start:stop] = np.take_along_axis(top, order, axis=1)
        distances[start:stop] = np.maximum(1.0 - np.take_along_axis(near, order, axis=1), 0.0)
    return ids, distances


def _atlas_schema(pa: Any, with_vectors: bool) -> Any:
    text, utc = pa.string(), pa.timestamp("us", tz="UTC")
    fields = [
        ("id", pa.int64()), ("text", text), ("summary", text), ("headline", text), ("x", pa.float64()), ("y", pa.float64()),
        ("tier", text), ("agent_id", text), ("visibility", text), ("kind", text), ("source", text),
        ("created_at", utc), ("last_retrieved_at", utc), ("retrieval_count", pa.int64()), ("floor", text),
    ]
    if with_vectors:
        fields += [
            ("vector", pa.list_(pa.float32())),
            ("neighbors", pa.struct([("ids", pa.list_(pa.int64())), ("distances", pa.list_(pa.float32()))])),
        ]
    return pa.schema([pa.field(name, kind, nullable=name in ("source", "last_retrieved_at")) for name, kind in fields])


def write_atlas(frame: pd.DataFrame, path: Path) -> None:
    """``atlas_frame`` as a Parquet file, whole or not at all: written into a temporary file beside
    ``path`` and renamed over it once complete (a link or a device is written as it is, as the
    other export formats do). The export's facts go into the file's metadata under ``lodviz``."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise LodvizError("--format atlas writes Parquet, which needs pyarrow: pip install pyarrow.") from None
    schema = _atlas_schema(pa, with_vectors="vector" in frame.columns)
    table = pa.Table.from_pandas(frame[schema.names], schema=schema, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"lodviz": json.dumps(frame.attrs.get("lodviz", {})).encode()})
    direct = path.is_symlink() or (path.exists() and not path.is_file())
    target = path if direct else path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, str(target))
        if not direct:
            os.replace(target, path)
    except OSError as exc:
        if not direct:
            target.unlink(missing_ok=True)
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}.") from None
    except BaseException:
        if not direct:
            target.unlink(missing_ok=True)
        raise


def atlas_command(path: Path, with_vectors: bool) -> str:
    """The command that opens an Atlas file in Embedding Atlas."""
    return f"embedding-atlas {shlex.quote(str(path))} --x x --y y --text text" + (" --neighbors neighbors" if with_vectors else "")


__all__ = ["ATLAS_COLUMNS", "ATLAS_VECTOR_COLUMNS", "AtlasSource", "Export", "atlas_command", "atlas_frame", "nearest_neighbors", "write_atlas"]
