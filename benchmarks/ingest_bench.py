"""Ingest throughput with the real embedding model.

``Memory.add_many`` on realistic texts (records of the bundled sample sources,
of varied length) into a fresh DuckDB store opened with the default embedder
(the bundled all-MiniLM-L6-v2 on the CPU): validation, content hashes,
compression (which embeds the sentences of every multi-sentence text to rank
them), embedding of the text lodviz embeds (the summary, by default) and the
batch insert with its audit line. The baseline is a bare
``SentenceTransformer.encode`` of the same texts, with the same batch size and
normalisation, timed in the same run, alternating with lodviz.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

import numpy as np

from benchmarks import synth
from benchmarks.measure import gib, peak_rss_bytes, summary, timed

FIELDS = ("text", "agent_id", "visibility", "kind", "source", "created_at", "metadata")


def pick_records(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` records of the sample sources, chosen at random with ``seed``."""
    records = synth.sample_texts()
    order = np.random.default_rng(seed).permutation(len(records))[:count]
    return [{key: records[i][key] for key in FIELDS if key in records[i]} for i in order]


def measure(count: int, reps: int, seed: int) -> dict[str, Any]:
    import torch
    from sentence_transformers import SentenceTransformer

    import lodviz
    from lodviz.ingest.embed import bundled_model_path

    records = pick_records(count, seed)
    texts = [r["text"] for r in records]
    lengths = np.array([len(t) for t in texts])
    out: dict[str, Any] = {
        "texts": len(texts),
        "chars": {"mean": float(lengths.mean()), "median": float(np.median(lengths)),
                  "min": int(lengths.min()), "max": int(lengths.max())},
        "torch_threads": torch.get_num_threads(),
    }

    with tempfile.TemporaryDirectory(prefix="lodviz-bench-ingest-") as tmp:
        # The default embedder, loaded (and warmed) once, as a long-lived process would.
        t_model, warm = timed(lambda: lodviz.open(os.path.join(tmp, "warm.duckdb")))
        t_first, _ = timed(lambda: warm.embedder.embed(["warm up the model"]))
        warm.close()
        batch_size = getattr(warm.embedder, "batch_size", 64)
        # The baseline: the same model files, loaded by sentence-transformers directly.
        t_base_load, model = timed(lambda: SentenceTransformer(bundled_model_path() or warm.embedder.name, device="cpu"))
        model.encode(["warm up the model"])
        out["model"] = {
            "name": warm.embedder.name,
            "lodviz_open_ms": t_model * 1000,
            "lodviz_first_embed_ms": t_first * 1000,
            "baseline_load_ms": t_base_load * 1000,
            "batch_size": batch_size,
        }

        # What a real search adds on top of the benchmarked search path: one
        # query through the model (the stub stands in for it there).
        queries = [f"what did we decide about {r['text'].split()[0].lower()} {i}" for i, r in enumerate(records[:20])]
        query_times = []
        for query in queries:
            t, _ = timed(lambda: warm.embedder.embed([query]))
            query_times.append(t)
        out["query_embedding"] = summary(query_times)

        def baseline() -> None:
            model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                         normalize_embeddings=True, show_progress_bar=False)

        runs: list[dict[str, float]] = []
        lodviz_times: list[float] = []
        base_times: list[float] = []
        for i in range(reps):
            mem = lodviz.open(os.path.join(tmp, f"ingest-{i}.duckdb"))
            spans: dict[str, float] = {}
            calls = {"texts": 0, "chars": 0, "sentence texts": 0}
            inside = {"compress": False}
            embedder, compressor, store = mem.embedder, mem.compressor, mem.store

            def timing(name, fn, before=None, after=None):  # type: ignore[no-untyped-def]
                def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
                    if before:
                        before(*args)
                    start = time.perf_counter()
                    try:
                        return fn(*args, **kwargs)
                    finally:
                        spans[name] = spans.get(name, 0.0) + time.perf_counter() - start
                        if after:
                            after()
                return wrapper

            def count(batch):  # type: ignore[no-untyped-def]
                calls["texts"] += len(batch)
                calls["chars"] += sum(len(t) for t in batch)
                if inside["compress"]:
                    calls["sentence texts"] += len(batch)

            # Wrap these instances only: the class and the cached model are untouched.
            embedder.embed = timing("embed, all calls", embedder.embed, before=count)
            compressor.compress = timing(
                "compress, incl. its sentence embedding", compressor.compress,
                before=lambda *_: inside.update(compress=True),
                after=lambda: inside.update(compress=False),
            )
            store.insert = timing("store insert", store.insert)

            def lodviz_run() -> Any:
                return mem.add_many(records)

            steps = [("baseline", baseline), ("lodviz", lodviz_run)]
            if i % 2:
                steps.reverse()
            for name, fn in steps:
                t, value = timed(fn)
                if name == "baseline":
                    base_times.append(t)
                else:
                    lodviz_times.append(t)
                    assert len(value.added) == len(records), "every record is new in a fresh store"
            span = {f"{name} ms": value * 1000 for name, value in spans.items()}
            span["embedded texts"] = calls["texts"]
            span["of which sentences (compressor)"] = calls["sentence texts"]
            span["embedded chars"] = calls["chars"]
            runs.append(span)
            mem.close()

    lod = summary(lodviz_times)
    base = summary(base_times)
    out["lodviz_add_many"] = lod
    out["baseline_encode"] = base
    out["lodviz_per_second"] = len(texts) / (lod["p50_ms"] / 1000)
    out["baseline_per_second"] = len(texts) / (base["p50_ms"] / 1000)
    out["ratio_time_p50"] = lod["p50_ms"] / base["p50_ms"]
    out["breakdown_p50"] = {key: float(np.median([r.get(key, 0.0) for r in runs])) for key in runs[0]}
    out["peak_rss_gib"] = gib(peak_rss_bytes())
    return out


if __name__ == "__main__":  # python -m benchmarks.ingest_bench
    import json

    start = time.perf_counter()
    result = measure(40, 1, 0)
    result["lodviz_add_many"].pop("samples_ms")
    result["baseline_encode"].pop("samples_ms")
    print(json.dumps(result, indent=1))
    print(time.perf_counter() - start)
