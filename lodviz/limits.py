"""Limits on what one request may ask, each with its own message; set by environment variables.

    LODVIZ_MAX_MEMORY_CHARS   one memory's text (default 1,000,000 characters)
    LODVIZ_MAX_QUERY_CHARS    a query, or one exclude term (default 4,000)
    LODVIZ_MAX_K              the k nearest a search considers (default 100,000)
    LODVIZ_MAX_EXCLUDE_TERMS  exclude terms of one search (default 20)
    LODVIZ_RATE_LIMIT         requests a minute per identity to `lodviz serve` (default 1,200; 0 = none)

Read once per process; a bad value falls back to the default with a warning.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass

from lodviz.errors import InvalidInput, InvalidParameters

log = logging.getLogger("lodviz.limits")


@dataclass(frozen=True)
class Limits:
    max_memory_chars: int = 1_000_000
    max_query_chars: int = 4_000
    max_k: int = 100_000
    max_exclude_terms: int = 20
    rate_per_minute: int = 1_200

    @classmethod
    def from_env(cls) -> Limits:
        values = {}
        for field, name in (
            ("max_memory_chars", "LODVIZ_MAX_MEMORY_CHARS"), ("max_query_chars", "LODVIZ_MAX_QUERY_CHARS"),
            ("max_k", "LODVIZ_MAX_K"), ("max_exclude_terms", "LODVIZ_MAX_EXCLUDE_TERMS"), ("rate_per_minute", "LODVIZ_RATE_LIMIT"),
        ):
            raw = os.environ.get(name)
            if raw is None:
                continue
            if raw.strip().isdigit():
                values[field] = int(raw)
            else:
                log.warning("%s=%r is not a whole number; using the default", name, raw)
        return cls(**values)

    def check_text(self, text: str, prefix: str = "") -> None:
        if len(text) > self.max_memory_chars:
            raise InvalidInput(
                f"{prefix}text is {len(text):,} characters; one memory holds at most {self.max_memory_chars:,} "
                "(LODVIZ_MAX_MEMORY_CHARS). Split it into several memories."
            )

    def check_query(self, query: str, what: str = "the query") -> None:
        if len(query) > self.max_query_chars:
            raise InvalidInput(f"{what} is {len(query):,} characters; at most {self.max_query_chars:,} (LODVIZ_MAX_QUERY_CHARS).")
        try:  # the audit log and the journal keep the query as UTF-8
            query.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(f"{what} is not valid UTF-8 (it holds lone surrogates, as bytes that are not UTF-8 give).") from None

    def check_k(self, k: int) -> None:
        if k > self.max_k:
            raise InvalidParameters(f"k is {k:,}; a search considers at most {self.max_k:,} memories (LODVIZ_MAX_K).")

    def check_exclude(self, terms: list[str]) -> None:
        if len(terms) > self.max_exclude_terms:
            raise InvalidInput(f"{len(terms)} exclude terms; at most {self.max_exclude_terms} (LODVIZ_MAX_EXCLUDE_TERMS).")
        for term in terms:
            self.check_query(term, "an exclude term")


@functools.lru_cache(maxsize=1)
def current() -> Limits:
    """This process's limits (from the environment, read once)."""
    return Limits.from_env()
