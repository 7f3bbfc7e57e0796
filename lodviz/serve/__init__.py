"""``lodviz serve``: the one process that owns a store, split by job.

DuckDB lets a single process write a store file, so lodviz gives every store
one owner. It opens the store once, loads the embedding model once, and
serves the landscape and the MCP endpoint on 127.0.0.1:

- ``app``: the ASGI application and its routes;
- ``process``: binding, running uvicorn, signals, ``serve()``;
- ``registry``: the ``<store>.serve.json`` file that lets others find the owner,
  and starting one in the background;
- ``relay``: ``lodviz mcp`` over stdio, relaying to the owner;
- ``demo``: the working copy of the sample store.

The click commands live with the rest of the CLI (``lodviz.cli``).
"""

from __future__ import annotations

from lodviz.serve.app import DEFAULT_HOST, LodvizServer
from lodviz.serve.demo import prepare_demo
from lodviz.serve.process import DEFAULT_PORT, ServeError, serve

__all__ = ["serve", "ServeError", "LodvizServer", "prepare_demo", "DEFAULT_HOST", "DEFAULT_PORT"]
