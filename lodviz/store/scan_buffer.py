"""The array a store's exact scans write their scores into, kept from one scan to the next.

A scan of N memories makes N float32 scores. Made afresh, that array's pages
are new to the process the first time, and faulting them in is slow here (a
virtual machine: the first search after a background warm-up paid 1.1x-1.4x
for its scan at 100k memories, a later one did not). Kept, the warm-up's own
scan faults them in and every search after it reuses them, whichever thread
it runs on.

One scan at a time uses it; another scan meanwhile (the warm-up thread
beside a search, say) makes its own array, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np


class ScanBuffer:
    """One reusable float32 array, lent to one scan at a time (``take``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._array = np.empty(0, dtype=np.float32)

    @contextmanager
    def take(self, n: int) -> Iterator[np.ndarray | None]:
        """``n`` float32 slots to write into, or None while another scan has them.

        Valid only inside the ``with``: copy out what must outlive it.
        """
        if not self._lock.acquire(blocking=False):
            yield None
            return
        try:
            if len(self._array) < n:
                # A quarter more than asked: a store that grows by inserts does not reallocate every time.
                self._array = np.empty(n + n // 4, dtype=np.float32)
            yield self._array[:n]
        finally:
            self._lock.release()


__all__ = ["ScanBuffer"]
