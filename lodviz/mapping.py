"""Keeping the 2D layout with the store: fit, place new memories, run in the background.

The layout is part of the store (``layout_x``/``layout_y`` on every memory, the
fitted UMAP model as the ``layout_model`` artifact), so every face draws the
same map. ``LayoutJob`` runs a fit or a placement on a thread and reports its
progress; until it finishes, ``positions`` gives an instant placeholder for
memories that have no stored position yet.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lodviz import projection
from lodviz.memory import Memory

log = logging.getLogger("lodviz.mapping")



def fit_layout(mem: Memory) -> projection.FittedLayout:
    """Fit the layout over every memory and store positions and model."""
    state, vectors = mem.snapshot()
    fitted = projection.fit(vectors)
    mem.set_positions(state.ids, fitted.xy[:, 0], fitted.xy[:, 1])
    mem.set_layout_model(fitted.model, method=fitted.method, count=len(state))
    return fitted


def place_missing(mem: Memory) -> int:
    """Give memories without a position one, from the fitted model; returns how many."""
    state, vectors = mem.snapshot()
    missing = np.flatnonzero(np.isnan(state.x))
    if len(missing) == 0:
        return 0
    model = mem.layout_model()
    if model is None or len(missing) == len(state):
        fit_layout(mem)
        return len(missing)
    xy = projection.place(model, vectors[missing])
    mem.set_positions(state.ids[missing], xy[:, 0], xy[:, 1])
    return len(missing)


def positions(
    state_x: np.ndarray, state_y: np.ndarray, vectors_of: Callable[[np.ndarray], np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x, y for every row, and a mask of rows whose position is a placeholder.

    A row without a stored position sits at its nearest placed neighbour (by
    embedding), or, when nothing is placed yet, at a PCA projection.
    ``vectors_of(rows)`` gives the unit vectors of some rows; it is only
    called when a placeholder is needed.
    """
    x, y = state_x.astype(np.float64).copy(), state_y.astype(np.float64).copy()
    missing = np.isnan(x) | np.isnan(y)
    if not missing.any():
        return x, y, missing
    placed = np.flatnonzero(~missing)
    if len(placed) == 0:
        xy = projection.quick(vectors_of(np.arange(len(x))))
        return xy[:, 0], xy[:, 1], missing
    todo = np.flatnonzero(missing)
    nearest = placed[np.argmax(vectors_of(todo) @ vectors_of(placed).T, axis=1)]
    jitter = np.random.default_rng(0).normal(scale=0.05, size=(len(todo), 2))
    x[todo] = x[nearest] + jitter[:, 0]
    y[todo] = y[nearest] + jitter[:, 1]
    return x, y, missing


@dataclass
class JobStatus:
    running: bool
    kind: str | None
    started: float | None
    finished: float | None
    error: str | None

    @property
    def elapsed(self) -> float:
        if self.started is None:
            return 0.0
        return (self.finished or time.monotonic()) - self.started


class LayoutJob:
    """Runs a layout fit or placement on a background thread, one at a time."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._status = JobStatus(False, None, None, None, None)

    def status(self) -> JobStatus:
        with self._lock:
            return JobStatus(**vars(self._status))

    def start(self, kind: str = "place") -> bool:
        """Start ``"fit"`` (refit everything) or ``"place"`` (only new memories); False if busy."""
        with self._lock:
            if self._status.running:
                return False
            self._status = JobStatus(True, kind, time.monotonic(), None, None)
            self._thread = threading.Thread(target=self._run, args=(kind,), name=f"lodviz-layout-{kind}", daemon=True)
            self._thread.start()
            return True

    def _run(self, kind: str) -> None:
        error = None
        try:
            if kind == "fit":
                fit_layout(self.mem)
            else:
                place_missing(self.mem)
        except Exception as exc:  # reported in the UI; the app must keep serving
            log.exception("layout %s failed", kind)
            error = str(exc) or type(exc).__name__
        with self._lock:
            self._status = JobStatus(False, kind, self._status.started, time.monotonic(), error)

    def wait(self, timeout: float | None = None) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
