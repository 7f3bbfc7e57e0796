"""Warming a store up: what searches read loaded ahead of the first search, once per service.

``Warmup.start`` loads the store's in-memory copy, texts and BM25 terms
(``Store.warm``), then runs a search's own steps once with a stored vector for
the query (so that whatever is slow the first time, BLAS's threads, the
conflicts index, is paid here; nothing is touched or recorded), then the
model. In the background it returns at once. The first caller (the server,
the app, a caller) starts it; a later one finds it done or under way and does
not load again, and in the foreground waits for it. ``Warmup.wait`` waits for
a background warm-up, thread exit included (``runtime.wait_exited``).

It never holds the service's lock for its whole length: the store takes its
own lock step by step, and the search step holds the service's (``holding``)
for itself only, so a request that comes first waits for a step, not for all.

Handed the store, the service's lock, the candidate stage, the row datetimes
a search hands out, and callables for the profile, "now", the lexical weight
and the embedder (each read when the step runs).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import numpy as np

from lodviz import runtime, scoring
from lodviz.ingest.embed import Embedder
from lodviz.params import Params
from lodviz.scoring import Tier
from lodviz.search.candidates import CandidateFinder
from lodviz.search.hits import hits
from lodviz.store.base import Store
from lodviz.times import RowDatetimes

log = logging.getLogger("lodviz")


class Warmup:
    """The one warm-up of one service's store."""

    def __init__(
        self,
        store: Store,
        holding: Callable[[], AbstractContextManager[Any]],
        candidates: CandidateFinder,
        row_times: tuple[RowDatetimes, RowDatetimes],
        params: Callable[[], Params],
        now: Callable[[], datetime],
        lexical_weight: Callable[[], float],
        embedder: Callable[[], Embedder],
    ) -> None:
        self._store = store
        self._holding = holding
        self._candidates = candidates
        self._row_times = row_times
        self._params = params
        self._now = now
        self._lexical_weight = lexical_weight
        self._embedder = embedder
        self.thread: threading.Thread | None = None  # the background warm-up, if one was started
        self._started = False  # whoever asks first starts it
        self._done = threading.Event()
        self._guard = threading.Lock()

    def start(self, background: bool) -> None:
        """Warm up now (or in a thread: ``background``), unless it was started already."""
        with self._guard:
            first = not self._started
            self._started = True
        if not first:  # done, or under way in another thread
            if not background:
                self._done.wait()
            return
        if background:
            self.thread = threading.Thread(target=self._quietly, name="lodviz-warm-store", daemon=True)
            self.thread.start()
            return
        self.run()

    def wait(self, timeout: float | None) -> bool:
        """Wait for a background warm-up; True when none is running any more (its thread gone from the process)."""
        thread = self.thread
        if thread is not None:
            deadline = None if timeout is None else time.monotonic() + timeout
            thread.join(timeout)
            if thread.is_alive():
                return False
            left = runtime.EXIT_TIMEOUT
            if deadline is not None:
                left = min(left, max(0.0, deadline - time.monotonic()))
            runtime.wait_exited(thread, left)
        return True

    def _quietly(self) -> None:
        try:
            self.run()
        except Exception as exc:  # a store closed meanwhile, say: the first search will load what it needs
            log.debug("warming the store in the background stopped: %s", exc)

    def run(self) -> None:
        """The store's load, a search's steps, the model; each step holds the service's lock for itself only."""
        try:
            self._store.warm()  # the long part: the store takes its own lock step by step
            with self._holding():
                self._search()
            try:  # the model, which a first query would load (one load per process: ``ingest.embed``)
                self._embedder().embed(["warm up"])
            except Exception as exc:
                log.debug("the embedder could not be warmed: %s", exc)
        finally:
            self._done.set()  # done or failed: nobody waits for it, and nobody starts it again

    def _search(self) -> None:
        state, vectors = self._store.snapshot()
        if not len(state):
            return
        visible = state.visible_to(None)
        params = self._params()
        found = self._candidates.find_now("warm", (), 1.0, params.k, vectors[0], vectors, visible, state, None, self._lexical_weight())
        sub = state.take(found.rows)
        t = scoring.age_days(self._now().timestamp(), sub.created_at, sub.last_retrieved_at)
        scored = scoring.score_all(found.similarity, t, sub.retrieval_count, sub.floor, params, found.penalty)
        keep = np.flatnonzero(scored.tier > Tier.OUT)
        tiers = scored.tier[keep].astype(np.int64)
        hits(sub, keep, tiers, *self._store.texts(sub.ids[keep].tolist(), tiers.tolist()), scored)
        self._store.conflicts(sub.ids[keep].tolist(), status=["open", "superseded"])
        # Every memory's two times as datetimes, by row: a search hands them out without making them.
        self._row_times[0].fill(state.last_retrieved_at)
        self._row_times[1].fill(state.created_at)


__all__ = ["Warmup"]
