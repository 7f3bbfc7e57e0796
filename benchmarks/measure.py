"""Small timing and memory helpers shared by the benchmarks."""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import platform
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np


def summary(seconds: list[float]) -> dict[str, Any]:
    """p50 / p95 / mean / min / max in milliseconds, and the raw samples."""
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    if len(ms) == 0:
        return {"n": 0}
    return {
        "n": int(len(ms)),
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "mean_ms": float(ms.mean()),
        "min_ms": float(ms.min()),
        "max_ms": float(ms.max()),
        "samples_ms": [round(float(v), 3) for v in ms],
    }


def ratio(a: dict[str, Any], b: dict[str, Any], key: str) -> float | None:
    if not a.get(key) or not b.get(key):
        return None
    return float(a[key] / b[key])


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


class Spans:
    """Accumulates the time spent inside wrapped callables, per name, per round.

    ``wrap(obj, "method")`` replaces a bound method on one instance with a
    timed one (the class and every other instance are untouched).
    """

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)

    def wrap(self, obj: Any, method: str, name: str | None = None) -> None:
        original = getattr(obj, method)
        label = name or method

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.current[label] += time.perf_counter() - start

        setattr(obj, method, wrapper)

    def take(self) -> dict[str, float]:
        """The spans of the round that just ended, and start a new round."""
        out = dict(self.current)
        self.current = defaultdict(float)
        return out


def rss_bytes() -> int:
    """Resident set size of this process now."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux
        return 0


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if platform.system() == "Darwin" else peak * 1024


def gib(n: float) -> float:
    return round(n / 2**30, 2)


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemTotal"):
                    info["memory_gib"] = gib(int(line.split()[1]) * 1024)
                    break
    except OSError:
        pass
    versions = {}
    for name in ("numpy", "duckdb", "pyarrow", "torch", "sentence_transformers", "lodviz"):
        try:
            module = __import__(name)
            versions[name] = getattr(module, "__version__", "?")
        except Exception:  # not installed
            versions[name] = None
    info["versions"] = versions
    try:
        import lodviz

        info["lodviz_path"] = str(Path(lodviz.__file__).resolve().parent)
    except Exception:
        pass
    try:
        config = np.show_config(mode="dicts")
        blas = config.get("Build Dependencies", {}).get("blas", {})
        info["blas"] = f"{blas.get('name')} {blas.get('version')}".strip()
    except Exception:
        pass
    return info


def log(message: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def in_fresh_process(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a new interpreter: each store starts cold, its peak memory is its own."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(fn, *args).result()


def write_results(result: dict[str, Any], started: float, results_dir: str, name: str, report: Callable[[dict[str, Any]], str]) -> None:
    """Finish ``result`` (end load, duration), write ``<results_dir>/<name>.json`` and print its report."""
    result["load_average_at_end"] = list(os.getloadavg())
    result["duration_seconds"] = time.perf_counter() - started
    directory = Path(results_dir)
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / f"{name}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(report(result))
    print(f"\nwritten {out} ({result['duration_seconds'] / 60:.1f} min)")
