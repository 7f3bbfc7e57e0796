"""The models one store is read and written with: embedder, compressor, token counters, made on first need.

``Models`` keeps the embedder (the one given, else the store's own test
embedder for a store made with it, else the sentence-transformers one), the
compressor (extractive over that embedder unless given), what budgets count
tokens with, and the model's own tokenizer that tells which texts it reads
whole (``embed_field="auto"``). ``check`` refuses a model whose vectors cannot
be compared with the store's, and records the model on a new store;
``embed_query`` caches a query's vector (the app rescores the same query often).

Handed the store and what the caller chose; nothing here holds a lock (the
service's facade does).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np

from lodviz.cache import LRU
from lodviz.errors import EmbeddingMismatch, InvalidParameters
from lodviz.ingest.compress import Compressor, ExtractiveCompressor
from lodviz.ingest.embed import Embedder, SentenceTransformerEmbedder
from lodviz.store.base import Store
from lodviz.tokens import RememberedCounts, TokenCounter, token_counter

log = logging.getLogger("lodviz")

EMBED_FIELDS = ("auto", "summary", "full")
#: The default for new stores: the full text where the model reads it whole, else the summary.
DEFAULT_EMBED_FIELD = "auto"


def embed_field_of(meta: Mapping[str, str], requested: str | None) -> str:
    """Which text the store embeds: the one it records, else ``requested``, else the default; a store does not switch."""
    chosen = requested or meta.get("embed_field") or DEFAULT_EMBED_FIELD
    if chosen not in EMBED_FIELDS:
        raise InvalidParameters(f"embed_field must be 'auto', 'summary' or 'full', got {chosen!r}.")
    if meta.get("embed_field") and requested and requested != meta["embed_field"]:
        raise InvalidParameters(f"this store embeds the {meta['embed_field']} text; it cannot switch to {requested}.")
    return chosen


class Models:
    """The embedder, compressor and token counters of one store."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None,
        compressor: Compressor | None,
        tokenizer: str | TokenCounter | None,
        embed_field: str,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._compressor = compressor
        self._tokenizer_spec = tokenizer
        self.embed_field = embed_field
        self._counter: TokenCounter | None = None
        self._window_counter: TokenCounter | None = None
        self._query_cache: LRU[np.ndarray] = LRU(64)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._default_embedder()
        return self._embedder

    def _default_embedder(self) -> Embedder:
        # A store made with the deterministic test embedder is read with it again:
        # its vectors mean nothing to a language model, and it needs no download.
        name = self._store.meta().get("embedding_model", "")
        size = name.removeprefix("lodviz-hash-")
        if name.startswith("lodviz-hash-") and size.isdigit():
            from lodviz.testing import HashEmbedder

            return HashEmbedder(int(size))
        return SentenceTransformerEmbedder()

    @property
    def compressor(self) -> Compressor:
        if self._compressor is None:
            self._compressor = ExtractiveCompressor(self.embedder)
        return self._compressor

    @property
    def token_counter(self) -> TokenCounter:
        """What budgets count with: the embedding model's tokenizer unless configured otherwise."""
        if self._counter is None:
            self._counter = RememberedCounts(token_counter(self._tokenizer_spec, self._embedder if self._embedder is not None else self.embedder))
        return self._counter

    def window_counter(self) -> TokenCounter | None:
        """The model's own tokens, to tell which texts it reads whole (``embed_field="auto"``)."""
        source = getattr(self.embedder, "tokenizer_source", None)
        if source and self._window_counter is None:
            self._window_counter = token_counter(source)
        return self._window_counter if source else None

    def check(self) -> None:
        """Refuse a model whose vectors cannot be compared with the store's; a new store records this one."""
        meta = self._store.meta()
        dim = self.embedder.dimension
        if "embedding_dim" not in meta:
            self._store.set_meta(
                {
                    "embedding_dim": str(dim),
                    "embedding_model": self.embedder.name,
                    "embed_field": self.embed_field,
                }
            )
            return
        if int(meta["embedding_dim"]) != dim:
            raise EmbeddingMismatch(
                f"the embedding model {self.embedder.name!r} makes {dim}-dimensional vectors, "
                f"but this store holds {meta['embedding_dim']}-dimensional ones from "
                f"{meta.get('embedding_model', 'another model')!r}."
            )
        if meta.get("embedding_model") != self.embedder.name:
            log.warning(
                "store was embedded with %s, querying with %s",
                meta.get("embedding_model"),
                self.embedder.name,
            )

    def embed_query(self, text: str) -> np.ndarray:
        """The query's embedding, cached."""
        text = text.strip()

        def make() -> np.ndarray:
            self.check()
            return self.embedder.embed([text])[0]

        return self._query_cache.get(text, make)


__all__ = ["DEFAULT_EMBED_FIELD", "EMBED_FIELDS", "Models", "embed_field_of"]
