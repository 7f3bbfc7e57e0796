"""Synthetic stores for the benchmarks: realistic shape, no embedding model.

A store of N memories is written through the store's own batch ``insert``
(``lodviz.store.base.NewMemory``), the same path ``Memory.add_many`` ends in,
but with synthetic embeddings, so a million rows build in minutes instead of
the hours the model would take on a CPU.

What the data looks like:

* embeddings: 384-dimensional float32 unit vectors in a two-level cluster
  structure (topics -> clusters -> memories, cluster sizes heavy-tailed), so a
  query near one memory has a realistic graded neighbourhood: a few hundred
  close memories, then a long tail, not 1000 ties at cos = 0;
* texts: 1 to 12 sentences drawn from the bundled sample sources
  (``sample_data/sources/*.jsonl``), each text made unique by a reference
  number; summary about 20% of the length, headline the lead sentence cut to
  22 words (texts under 240 characters are their own summary, as in lodviz);
* ``created_at`` spread over the two years before a fixed reference time
  (denser towards the present), 40% retrieved at least once (count 1 to ~60,
  last retrieval between creation and the reference time), a few tier floors;
* five agents with different shares of the store, a quarter of the memories
  shared, the kinds in the proportions of the sample sources.

Everything is drawn from a seeded generator: the same N gives the same store.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from lodviz.ingest.compress import shorten, split_sentences
from lodviz.store.base import AuditEvent, NewMemory

DIM = 384
MODEL_NAME = "bench-synthetic-384"
#: "now" of every synthetic store (recorded as the store's reference time).
REFERENCE_TIME = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SPAN_DAYS = 730.0

AGENTS = ("research", "legal-review", "exec-digest", "support", "ops")
AGENT_WEIGHTS = np.array([0.30, 0.25, 0.20, 0.15, 0.10])
KINDS = ("note", "tool_result", "turn", "document", "preference", "email")
KIND_WEIGHTS = np.array([551, 357, 290, 166, 151, 117], dtype=np.float64)
SOURCES = ("chat", "slack:#rnd", "pubmed", "sharepoint:/Legal", "email:inbox", "jira", None)

REPO = Path(__file__).resolve().parent.parent
SAMPLE_SOURCES = REPO / "sample_data" / "sources"


def sample_texts() -> list[dict]:
    """Every record of the bundled sample sources, in a fixed order."""
    records = []
    for path in sorted(glob.glob(str(SAMPLE_SOURCES / "*.jsonl"))):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    records.append(json.loads(line))
    return records


def sentence_pool() -> list[str]:
    """The distinct sentences of the sample sources (about 6,000)."""
    seen: dict[str, None] = {}
    for record in sample_texts():
        for sentence in split_sentences(record["text"]):
            if len(sentence) >= 20:
                seen.setdefault(sentence, None)
    return list(seen)


# -- embeddings -----------------------------------------------------------------


@dataclass
class Geometry:
    """Cluster centres and the noise that places memories around them."""

    centres: np.ndarray  # (clusters, DIM) unit float32
    weights: np.ndarray  # (clusters,) probability of each cluster

    @classmethod
    def make(cls, n: int, rng: np.random.Generator) -> Geometry:
        topics = _unit(rng.standard_normal((40, DIM), dtype=np.float32))
        clusters = max(20, n // 400)
        topic_of = rng.integers(0, len(topics), clusters)
        # A cluster centre leans towards its topic: centres of one topic have
        # cos about 0.35 with each other, unrelated ones about 0.
        centres = _unit(topics[topic_of] * 0.75 + rng.standard_normal((clusters, DIM), dtype=np.float32) * (1.0 / np.sqrt(DIM)))
        weights = rng.pareto(1.2, clusters) + 1.0  # heavy-tailed cluster sizes
        return cls(centres=centres, weights=weights / weights.sum())

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` unit vectors and their cluster numbers."""
        cluster = rng.choice(len(self.centres), size=n, p=self.weights)
        # Per-memory spread: cos to its own centre between about 0.55 and 0.85.
        sigma = rng.uniform(0.6, 1.5, size=(n, 1)).astype(np.float32) / np.float32(np.sqrt(DIM))
        vectors = self.centres[cluster] + rng.standard_normal((n, DIM), dtype=np.float32) * sigma
        return _unit(vectors), cluster

    def queries(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """Query vectors placed like memories (near a cluster, chosen by size)."""
        vectors, _ = self.sample(count, rng)
        return vectors


def _unit(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


# -- records --------------------------------------------------------------------


def _summary(sentences: list[str], text: str) -> str:
    if len(text) <= 240:
        return text
    target = 0.2 * len(text)
    chosen, length = [], 0
    for sentence in sentences:
        if length >= target:
            break
        chosen.append(sentence)
        length += len(sentence) + 1
    summary = " ".join(chosen)
    if len(summary) > 1.6 * target + 60:
        summary = shorten(summary, max(int(target / 6), 30))
    return summary


def batches(
    n: int, *, seed: int = 0, batch_size: int = 50_000
) -> Iterator[tuple[list[NewMemory], np.ndarray]]:
    """The N memories of the synthetic store, in batches ready for ``Store.insert``.

    Yields (rows, vectors); the vectors are those inside the rows, kept for
    whoever wants them.
    """
    rng = np.random.default_rng(seed)
    geometry = Geometry.make(n, rng)
    pool = sentence_pool()
    pool_arr = np.array(pool, dtype=object)
    ref = REFERENCE_TIME.timestamp()
    done = 0
    while done < n:
        m = min(batch_size, n - done)
        vectors, cluster = geometry.sample(m, rng)
        # Time: denser towards the present (a store grows), over two years.
        age_days = SPAN_DAYS * rng.power(0.6, m)  # most memories are young-ish
        created = ref - age_days * 86_400.0
        retrieved = rng.random(m) < 0.4
        count = np.where(retrieved, rng.geometric(0.12, m), 0)
        last = np.where(retrieved, created + rng.random(m) * (ref - created), np.nan)
        floor = np.where(rng.random(m) < 0.005, rng.integers(1, 4, m), 0)
        agent = rng.choice(len(AGENTS), size=m, p=AGENT_WEIGHTS)
        shared = rng.random(m) < 0.25
        kind = rng.choice(len(KINDS), size=m, p=KIND_WEIGHTS / KIND_WEIGHTS.sum())
        source = rng.integers(0, len(SOURCES), m)
        n_sent = np.minimum(1 + rng.geometric(0.35, m) - 1, 12)
        picks = rng.integers(0, len(pool), int(n_sent.sum()))
        offsets = np.concatenate([[0], np.cumsum(n_sent)])
        rows = []
        for j in range(m):
            serial = done + j + 1
            sentences = list(pool_arr[picks[offsets[j] : offsets[j + 1]]])
            sentences[0] = f"Ref {serial:07d}: {sentences[0]}"
            text = " ".join(sentences)
            agent_id = AGENTS[agent[j]]
            rows.append(
                NewMemory(
                    text=text,
                    summary=_summary(sentences, text),
                    headline=shorten(sentences[0], 22),
                    embedding=vectors[j],
                    embedding_model=MODEL_NAME,
                    content_hash=hashlib.sha256(f"{agent_id}\x00{text}".encode()).hexdigest(),
                    created_at=datetime.fromtimestamp(created[j], tz=UTC),
                    agent_id=agent_id,
                    visibility="shared" if shared[j] else "private",
                    kind=KINDS[kind[j]],
                    source=SOURCES[source[j]],
                    metadata={"cluster": int(cluster[j])},
                    retrieval_count=int(count[j]),
                    last_retrieved_at=(
                        datetime.fromtimestamp(last[j], tz=UTC) if retrieved[j] else None
                    ),
                    floor=int(floor[j]),
                )
            )
        done += m
        yield rows, vectors


def query_vectors(n: int, count: int, *, seed: int = 0) -> np.ndarray:
    """Query vectors for the store of size ``n`` built with ``seed``."""
    rng = np.random.default_rng(seed)
    geometry = Geometry.make(n, rng)  # the same geometry as the store
    return geometry.queries(count, np.random.default_rng(seed + 10_000))


#: DuckDB's memory while building a store with a compact matrix.
BUILD_MEMORY = "8GB"


def build_store(path: str | os.PathLike, n: int, *, seed: int = 0, batch_size: int = 50_000, matrix: str | None = None) -> dict:
    """Write the synthetic store of ``n`` memories to ``path``; returns build facts.

    ``matrix`` a compact kind for a store too big for a float32 matrix: the
    writing connection then also caps DuckDB's memory (``lodviz.matrix``).
    """
    import lodviz
    from lodviz.store.duckdb import DuckDBStore

    start = time.perf_counter()
    store = DuckDBStore(path, matrix=matrix)
    if matrix not in (None, "float32"):
        # Writing 10M memories, DuckDB checkpoints their content-hash index in memory: more than a reader's cap.
        store._con.execute(f"SET memory_limit = '{BUILD_MEMORY}'").fetchall()
    # A build stopped part-way resumes after the batches it committed (the batches are deterministic).
    done = int(store._con.execute("SELECT count(*) FROM memories").fetchall()[0][0])
    generate = insert = 0.0
    try:
        t0 = time.perf_counter()
        for i, (rows, _) in enumerate(batches(n, seed=seed, batch_size=batch_size)):
            if (i + 1) * batch_size <= done:
                continue
            t1 = time.perf_counter()
            generate += t1 - t0
            store.insert(rows, AuditEvent(action="write", actor="benchmark", details={"count": len(rows)}))
            t0 = time.perf_counter()
            insert += t0 - t1
        store.set_meta(
            {
                "embedding_dim": str(DIM),
                "embedding_model": MODEL_NAME,
                "embed_field": "summary",
                "reference_time": REFERENCE_TIME.isoformat(),
            }
        )
    finally:
        store.close()
    # Agent profiles, written through the service as a user would.
    mem = lodviz.open(path, embedder=StubEmbedder({}), matrix=matrix)
    try:
        mem.set_profile("legal-review", "legal", actor="benchmark")
        mem.set_profile("research", "research", actor="benchmark")
        mem.set_profile("exec-digest", "digest", actor="benchmark")
    finally:
        mem.close()
    return {
        "rows": n,
        "seconds": time.perf_counter() - start,
        "generate_seconds": generate,
        "insert_seconds": insert,
        "file_bytes": os.path.getsize(path),
    }


class StubEmbedder:
    """An ``Embedder`` that answers from precomputed vectors (no model).

    Search timings then cover everything except the model's forward pass of the
    query, which does not depend on the store's size.
    """

    name = MODEL_NAME

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    @property
    def dimension(self) -> int:
        return DIM

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return np.vstack([self.vectors[t] for t in texts]).astype(np.float32)


if __name__ == "__main__":  # a quick look at the data
    rows, vectors = next(batches(2000, batch_size=2000))
    for row in rows[:3]:
        print(row.agent_id, row.kind, row.created_at.date(), row.retrieval_count, "|", row.headline)
        print("   ", len(row.text), len(row.summary), row.summary[:120])
    q = query_vectors(2000, 5)
    sims = vectors @ q.T
    for column in sims.T:
        top = np.sort(column)[::-1]
        print("top-k S:", [round(float(top[i]), 3) for i in (0, 10, 100, 500, 999)], "median", round(float(np.median(column)), 3))
