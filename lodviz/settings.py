"""Settings, resolved once: which store, model, compressor and home, from flags and environment.

The CLI resolves a ``Settings`` when it starts (a flag wins over its
environment variable, which wins over the default) and passes it on; nothing
else in lodviz reads these variables or writes them back into the
environment. A child process (the background server ``lodviz mcp`` starts)
gets them as command-line arguments.

    LODVIZ_STORE             the store (default ./lodviz.duckdb)
    LODVIZ_EMBEDDING_MODEL   a sentence-transformers name or path (default: bundled MiniLM)
    LODVIZ_COMPRESSOR        extractive (default) or openai
    LODVIZ_HOME              lodviz's own files, the demo store among them (default ~/.local/share/lodviz)
    LODVIZ_MATRIX            how a DuckDB store holds its embeddings in memory: float32 (default), float16 or int8
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_STORE = "lodviz.duckdb"
COMPRESSORS = ("extractive", "openai")
SAMPLE_NAME = "lodviz-sample.duckdb"


def lodviz_home(environ: Mapping[str, str] | None = None) -> Path:
    """Where lodviz keeps its own files: $LODVIZ_HOME, else ~/.local/share/lodviz."""
    home = (os.environ if environ is None else environ).get("LODVIZ_HOME")
    return Path(home).expanduser() if home else Path.home() / ".local" / "share" / "lodviz"


def sample_store_path() -> Path:
    """The shipped sample store (package data; never opened for writing)."""
    return Path(__file__).resolve().parent / "data" / SAMPLE_NAME


@dataclass(frozen=True)
class Settings:
    store: str = DEFAULT_STORE
    model: str | None = None
    compressor: str = "extractive"
    home: Path = Path.home() / ".local" / "share" / "lodviz"
    matrix: str = "float32"

    @classmethod
    def resolve(
        cls,
        *,
        store: str | None = None,
        model: str | None = None,
        compressor: str | None = None,
        matrix: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Settings:
        from lodviz.matrix import parse_kind

        env = os.environ if environ is None else environ
        return cls(
            store=store or env.get("LODVIZ_STORE") or DEFAULT_STORE,
            model=model or env.get("LODVIZ_EMBEDDING_MODEL") or None,
            compressor=(compressor or env.get("LODVIZ_COMPRESSOR") or "extractive").lower(),
            home=lodviz_home(env),
            matrix=parse_kind(matrix or env.get("LODVIZ_MATRIX")),
        )


__all__ = ["Settings", "lodviz_home", "sample_store_path", "DEFAULT_STORE", "COMPRESSORS", "SAMPLE_NAME"]
