"""Counting tokens the way the agent's model will: a budget is kept in real tokens.

A ``TokenCounter`` turns texts into token counts. Three implementations:

- ``ModelTokenCounter``: a Hugging Face tokenizer, by default the embedding
  model's own (all-MiniLM-L6-v2's WordPiece for the bundled model), loaded
  offline from the model's directory;
- ``TiktokenCounter``: OpenAI's BPE encodings, when ``tiktoken`` is installed
  and its encoding files are available (``LODVIZ_TOKENIZER=tiktoken:cl100k_base``);
- ``RegexTokenCounter``: a cautious count from words and punctuation marks,
  for models without a tokenizer (the test embedder).

Counts are of the text alone, without the special tokens a model adds around
a sequence. ``token_counter(spec, embedder)`` picks one from a setting.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from lodviz.errors import InvalidParameters

log = logging.getLogger("lodviz.tokens")


class TokenCounter(Protocol):
    """What budgets need from a tokenizer."""

    name: str

    def count_many(self, texts: Sequence[str]) -> np.ndarray:
        """Tokens of each text, as int64."""
        ...


def count(counter: TokenCounter, text: str) -> int:
    """Tokens of one text."""
    return int(counter.count_many([text])[0]) if text else 0


@functools.lru_cache(maxsize=8)
def _tokenizer(source: str) -> Any:
    """A tokenizer loaded once per process: every Memory, and a Memory's budget and
    embedding-window counters, share it (it is only ever called the same way)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        tokenizer = AutoTokenizer.from_pretrained(source)
    except Exception as exc:  # the library raises many kinds; all mean "cannot load"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidParameters(f"cannot load the tokenizer of {source!r}: {first}") from None
    tokenizer.model_max_length = 10**12  # counting only, never truncating: no length warnings
    return tokenizer


class ModelTokenCounter:
    """A Hugging Face tokenizer loaded from a model name or directory (offline)."""

    def __init__(self, source: str, name: str | None = None) -> None:
        self.source = source
        self.name = name or f"model:{source}"
        self._tokenizer: Any = None

    def _load(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = _tokenizer(self.source)
        return self._tokenizer

    def count_many(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros(0, dtype=np.int64)
        encoded = self._load()(texts, add_special_tokens=False, return_attention_mask=False, return_token_type_ids=False)
        return np.fromiter((len(ids) for ids in encoded["input_ids"]), dtype=np.int64, count=len(texts))

    def __repr__(self) -> str:
        return f"ModelTokenCounter({self.source!r})"


class TiktokenCounter:
    """An OpenAI BPE encoding through ``tiktoken`` (install it; its files must be reachable)."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        try:
            import tiktoken
        except ImportError:
            raise InvalidParameters("tiktoken is not installed: pip install tiktoken, or use the model's tokenizer.") from None
        try:
            self._encoding = tiktoken.get_encoding(encoding)
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InvalidParameters(f"cannot load the tiktoken encoding {encoding!r}: {first}") from None
        self.name = f"tiktoken:{encoding}"

    def count_many(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        encoded = self._encoding.encode_ordinary_batch(texts) if texts else []
        return np.fromiter((len(ids) for ids in encoded), dtype=np.int64, count=len(texts))


_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def _cautious(piece: str) -> int:
    """At least as many tokens as a subword tokenizer makes of one word: a token per two
    ASCII characters and per switch between letters and digits, and one per other character."""
    ascii_chars = [ch for ch in piece if ord(ch) < 128]
    switches = sum(1 for a, b in zip(ascii_chars, ascii_chars[1:]) if a.isdigit() != b.isdigit())
    return (len(ascii_chars) + 1) // 2 + switches + (len(piece) - len(ascii_chars))


class RegexTokenCounter:
    """A cautious count without a tokenizer (``_cautious`` per word, one per punctuation mark).

    Subword tokenizers split rare and long words into pieces, so this counts
    more than they do for most text: a budget kept with it is kept with them.
    """

    name = "regex"

    def count_many(self, texts: Sequence[str]) -> np.ndarray:
        return np.fromiter(
            (sum(_cautious(piece) for piece in _PIECE.findall(t)) for t in texts), dtype=np.int64, count=len(texts)
        )


class RememberedCounts:
    """Any counter, with the counts of texts it has seen kept: a budget counts the same texts again and again.

    A search counts its candidates' texts at each tier, their excerpts and the
    rendered answer; a slider move in the landscape searches again over the
    same memories, so without this the tokenizer ran on the same texts on
    every move (34 ms of a 51 ms move on the sample store). Counts are kept
    for at most ``max_chars`` characters of text, the least recently counted
    going first; a count never depends on anything but the text.
    """

    def __init__(self, counter: TokenCounter, max_chars: int = 32_000_000) -> None:
        self.counter = counter
        self.name = counter.name
        self.max_chars = max_chars
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def count_many(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.zeros(len(texts), dtype=np.int64)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                known = self._counts.get(text)
                if known is None:
                    missing.setdefault(text, []).append(i)
                else:
                    self._counts.move_to_end(text)
                    out[i] = known
        if not missing:
            return out
        fresh = list(missing)
        counted = self.counter.count_many(fresh)
        with self._lock:
            for text, n in zip(fresh, counted.tolist()):
                out[missing[text]] = n
                if text not in self._counts and len(text) <= self.max_chars:
                    self._counts[text] = int(n)
                    self._chars += len(text)
            while self._chars > self.max_chars:
                old, _ = self._counts.popitem(last=False)
                self._chars -= len(old)
        return out

    def __repr__(self) -> str:
        return f"RememberedCounts({self.counter!r})"


def token_counter(spec: str | TokenCounter | None, embedder: Any = None) -> TokenCounter:
    """The counter a setting names.

    ``None`` or ``"model"``: the embedding model's tokenizer when it has one,
    else ``RegexTokenCounter``; ``"tiktoken:ENCODING"``; ``"regex"``; any
    other string is a Hugging Face tokenizer name or path; an object with
    ``count_many`` is used as it is.
    """
    if spec is not None and not isinstance(spec, str):
        if not callable(getattr(spec, "count_many", None)):
            raise InvalidParameters("a token counter needs a count_many(texts) method.")
        return spec
    spec = (spec or os.environ.get("LODVIZ_TOKENIZER") or "model").strip()
    if spec == "model":
        source = getattr(embedder, "tokenizer_source", None)
        if source:
            return ModelTokenCounter(source, name=f"model:{getattr(embedder, 'name', source)}")
        return RegexTokenCounter()
    if spec == "regex":
        return RegexTokenCounter()
    if spec.startswith("tiktoken"):
        _, _, encoding = spec.partition(":")
        return TiktokenCounter(encoding or "cl100k_base")
    return ModelTokenCounter(spec)


__all__ = ["TokenCounter", "ModelTokenCounter", "TiktokenCounter", "RegexTokenCounter", "RememberedCounts", "token_counter", "count"]
