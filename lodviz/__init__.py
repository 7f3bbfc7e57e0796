"""lodviz: level-of-detail memory for AI agents.

Every memory is kept at three resolutions (full, summary, headline) plus an
embedding; a query decides, from semantic distance and recency of use, at which
resolution each memory comes back.

    import lodviz
    mem = lodviz.open("memory.duckdb")
    mem.add("Dr. Solberg wants hazard ratios with 95% CIs.", agent_id="research")
    result = mem.search("how should I report trial outcomes?", agent_id="research")
    print(result.render())
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from lodviz.errors import (
    AgentNotFound,
    BudgetTooSmall,
    CompressorError,
    EmbedderUnavailable,
    EmbeddingMismatch,
    ImportFormatError,
    InvalidInput,
    InvalidParameters,
    LodvizError,
    MemoryNotFound,
    StoreError,
)
from lodviz.ingest.compress import Compressor, ExtractiveCompressor
from lodviz.ingest.embed import Embedder, SentenceTransformerEmbedder
from lodviz.ingest.llm import OpenAICompressor, compressor_from_name
from lodviz.memory import Memory
from lodviz.params import PRESETS, Params, preset
from lodviz.records import AuditEvent, Conflict, Golden, MemoryRecord
from lodviz.result import AgentOverview, FloorChange, Hit, IngestReport, Landscape, Result, StoreInfo
from lodviz.scoring import Tier

__version__ = "0.1.0"


def open(
    path: str | Path = ":memory:",
    *,
    model: str | None = None,
    embedder: Embedder | None = None,
    read_only: bool = False,
    actor: str = "api",
    embed_field: str | None = None,
    compressor: Compressor | str | None = None,
    lock: AbstractContextManager[Any] | None = None,
    tokenizer: str | None = None,
    lexical_weight: float = 1.0,
    budget_policy: str = "readable-first",
    warm: bool = False,
    matrix: str | None = None,
) -> Memory:
    """Open (or create) a store and return the ``Memory`` service over it.

    ``path`` is a DuckDB file (or ":memory:"), or a ``postgresql://`` URL for a
    store that many processes share (docs/postgres.md; needs ``lodviz[postgres]``).

    ``model`` is any sentence-transformers model name or path; by default the
    bundled all-MiniLM-L6-v2 is used, loaded offline on first need.

    ``compressor`` makes the summaries and headlines of new memories: any
    object with ``compress(texts) -> list[Compressed]`` (e.g.
    ``OpenAICompressor(base_url, model, api_key)``), or the name
    ``"extractive"`` (the offline default) or ``"openai"`` (configured from
    ``LODVIZ_LLM_BASE_URL``, ``LODVIZ_LLM_MODEL`` and ``LODVIZ_LLM_API_KEY``
    or ``OPENAI_API_KEY``).

    ``lock`` (a ``threading.RLock``, say) makes every operation of the
    ``Memory`` hold it, so threads can share it (``lodviz serve`` does).

    ``tokenizer`` is what token budgets count with: by default the embedding
    model's own tokenizer; ``"tiktoken:cl100k_base"`` or any Hugging Face
    tokenizer name or path (``$LODVIZ_TOKENIZER``). ``lexical_weight`` (0-1)
    is how much BM25 evidence adds to S (0: the cosine alone).
    ``embed_field`` for a new store: ``"auto"`` (the default: the full text
    where the model reads it whole, else the summary), ``"summary"`` or
    ``"full"``.

    ``warm`` starts loading what searches read (the embedding matrix, the
    numeric columns, the short texts) in a background thread, so that the
    first search costs what a later one does; ``Memory.wait_warm`` waits for
    it. Worth it in a process that will search; a one-off write does not
    need it.

    ``matrix`` is how a DuckDB store holds its embedding matrix in memory
    (``$LODVIZ_MATRIX``): ``"float32"`` (the default: exact), ``"float16"``
    (half the memory) or ``"int8"`` (a quarter); the compact ones find
    candidates approximately and rescore them exactly from a memory-mapped
    float32 copy on disk (docs/benchmarks.md measures their recall).
    """
    from lodviz.store import open_store

    if isinstance(compressor, str):
        compressor = compressor_from_name(compressor)  # before the store: a bad name opens nothing
    store = open_store(path, read_only=read_only, matrix=matrix)
    if embedder is None:
        embedder = _embedder_named(model) if model else None
    try:
        mem = Memory(
            store,
            embedder,
            compressor,
            actor=actor,
            embed_field=embed_field,
            tokenizer=tokenizer,
            lexical_weight=lexical_weight,
            budget_policy=budget_policy,
            lock=lock,
        )
    except Exception:
        store.close()
        raise
    if warm:
        mem.warm(background=True)
    return mem


def _embedder_named(model: str) -> Embedder:
    """``hash`` or ``hash:N`` is the deterministic test embedder (``lodviz.testing``); anything
    else a sentence-transformers model name or path."""
    if model == "hash" or model.startswith("hash:"):
        from lodviz.testing import HashEmbedder

        _, _, size = model.partition(":")
        if size and (not size.isdigit() or int(size) < 2):
            raise InvalidParameters(f"the test embedder is 'hash' or 'hash:N' with N a number of dimensions of at least 2, got {model!r}.")
        return HashEmbedder(int(size) if size else 64)
    return SentenceTransformerEmbedder(model)


__all__ = [
    "open",
    "Memory",
    "Result",
    "Hit",
    "Landscape",
    "IngestReport",
    "FloorChange",
    "StoreInfo",
    "AgentOverview",
    "MemoryRecord",
    "AuditEvent",
    "Conflict",
    "Golden",
    "Params",
    "PRESETS",
    "preset",
    "Tier",
    "Embedder",
    "SentenceTransformerEmbedder",
    "Compressor",
    "ExtractiveCompressor",
    "OpenAICompressor",
    "LodvizError",
    "InvalidParameters",
    "InvalidInput",
    "ImportFormatError",
    "MemoryNotFound",
    "AgentNotFound",
    "BudgetTooSmall",
    "StoreError",
    "EmbeddingMismatch",
    "EmbedderUnavailable",
    "CompressorError",
]
