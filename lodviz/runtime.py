"""What a long-running lodviz process does once it has started (``lodviz serve``, an agent's own loop).

CPython's full garbage collection walks every container object in the
process. With numpy, pyarrow, DuckDB and Dash loaded that is ~70,000 objects
and 30-45 ms on the benchmark machine. A search's result items outlive the
young generations, so a full collection comes every ~80-140 searches, inside
whichever search happens to trigger it (run-16's p95 before this: up to 2.9x
a scan at 100k memories). ``settle_heap`` moves everything alive once start-up
is done (modules, the store's copy, the model) out of the collector's view;
the full collections after it walk only what came later.
"""

from __future__ import annotations

import gc


def settle_heap() -> None:
    """Collect once, then freeze what is left (``gc.freeze``): call it once, after start-up and warm-up.

    What is frozen is never collected as cyclic garbage, so this is for a
    process's long-lived start-up state, not for a loop.
    """
    gc.collect()
    gc.freeze()


__all__ = ["settle_heap"]
