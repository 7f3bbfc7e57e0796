"""The compressor's sentence vectors pooled from the text's own pass, against each sentence embedded alone.

    python benchmarks/pooled_sentences.py                # the sample sources' texts (~3,000), ~2 min
    python benchmarks/pooled_sentences.py --texts 1200 --name pooled-sentences

For every sample text the extractive compressor ranks (several sentences,
longer than its short threshold) that the bundled model reads whole, the
summary is made twice: with each sentence embedded alone (the compressor's own
call, as before) and with the sentence vectors pooled from the text's own
pass (``SentenceTransformerEmbedder.embed_with_spans``). Reported: how many
summaries are the same, how many rankings are, the cosine of each pooled
vector to its sentence alone, and the CPU seconds of the sentences' own call
against the pooling (the text's pass is paid for the memory's vector either
way, so pooling adds only its own arithmetic). One torch thread. Results go to
``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))


def report(result: dict[str, Any]) -> str:
    cosine, cpu, placed = result["cosine_to_alone"], result["cpu_seconds"], result["pooled"]
    return (f"{placed} of {result['ranked_and_read_whole']} ranked texts pooled; same summary {result['same_summary']}/{placed}, "
            f"same ranking {result['same_ranking']}/{placed}; cosine to alone min {cosine['min']:.3f} p5 {cosine['p5']:.3f} "
            f"mean {cosine['mean']:.3f}; CPU s: texts with spans {cpu['texts_with_spans']:.1f}, texts bare {cpu['texts_bare']:.1f}, "
            f"sentences alone {cpu['sentences_alone']:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=0, help="the first N sample texts (default: all)")
    parser.add_argument("--name", default="pooled-sentences", help="results file name (benchmarks/results/NAME.json)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    import torch

    from benchmarks import measure, synth
    from lodviz.ingest import pipeline
    from lodviz.ingest.compress import ExtractiveCompressor
    from lodviz.ingest.embed import SentenceTransformerEmbedder

    torch.set_num_threads(1)
    started = time.perf_counter()
    embedder = SentenceTransformerEmbedder()
    compressor = ExtractiveCompressor(embedder)
    texts = [r["text"] for r in synth.sample_texts()]
    texts = texts[: args.texts] if args.texts else texts
    fits = pipeline.fits_window(texts, embedder, None)
    spans = compressor.sentence_spans(texts)
    ranked = [i for i, (fit, s) in enumerate(zip(fits, spans)) if s and fit]
    embedder.embed(["warm up"])

    t0 = time.process_time()
    _, pooled = embedder.embed_with_spans([texts[i] for i in ranked], [spans[i] for i in ranked])
    with_spans = time.process_time() - t0
    t0 = time.process_time()
    embedder.embed([texts[i] for i in ranked])
    bare = time.process_time() - t0
    flat = [texts[i][a:b] for i in ranked for a, b in spans[i]]
    t0 = time.process_time()
    alone_flat = embedder.embed(flat)
    alone_seconds = time.process_time() - t0

    same_summary = same_order = placed = 0
    cosines = []
    at = 0
    for i, block in zip(ranked, pooled):
        n = len(spans[i])
        alone = alone_flat[at : at + n]
        at += n
        if block is None:
            continue
        placed += 1
        cosines.extend(np.sum(block * alone, axis=1).tolist())
        by_alone = compressor.compress([texts[i]], sentence_vectors=[alone])[0]
        by_pool = compressor.compress([texts[i]], sentence_vectors=[block])[0]
        same_summary += by_alone.summary == by_pool.summary
        same_order += list(np.argsort(-(alone @ alone.mean(0)), kind="stable")) == list(np.argsort(-(block @ block.mean(0)), kind="stable"))
    result: dict[str, Any] = {
        "command": " ".join(["python", *sys.argv]),
        "started_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "texts": len(texts),
        "ranked_and_read_whole": len(ranked),
        "pooled": placed,
        "sentences": len(flat),
        "same_summary": same_summary,
        "same_ranking": same_order,
        "cosine_to_alone": {"min": float(np.min(cosines)), "p5": float(np.percentile(cosines, 5)), "mean": float(np.mean(cosines))},
        "cpu_seconds": {"texts_with_spans": with_spans, "texts_bare": bare, "sentences_alone": alone_seconds},
    }
    measure.write_results(result, started, str(REPO / "benchmarks" / "results"), args.name, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
