"""Fused attention end to end: ``validate --attention fused`` on the export corpus and,
when present, the real all-MiniLM-L6-v2 export (``scripts/export_real_model.py``).

Per model: how many softmax sites fuse with their ``P·V`` MatMul, and the end-to-end
error of the model with the default approximations, two-pass (softmax site, float
``P·V``) and fused (one single-pass row per query, ``AttentionRowSpec``), against the
float model on onnxruntime. The cosine column is the most specific one the output has
(pooled embedding, else per token, else per sample).

Usage: ``.venv/bin/python benchmarks/bench_attention_models.py [--minilm PATH]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from hwapprox.export.validate import validate

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
MINILM = Path.home() / ".cache" / "hwapprox" / "models" / "all-MiniLM-L6-v2.onnx"


def _cos(m: dict) -> float:
    for k in ("pooled_cosine_min", "token_cosine_min", "cosine_min"):
        if m.get(k) is not None:
            return float(m[k])
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minilm", type=Path, default=MINILM)
    args = ap.parse_args()
    items = [
        (CORPUS / e["file"], CORPUS / e["inputs"])
        for e in json.loads((CORPUS / "manifest.json").read_text())["models"]
    ]
    if args.minilm.is_file():
        items.append((args.minilm, ROOT / "benchmarks" / "data" / "minilm_batch.npz"))
    print(
        "| model | fused sites | two-pass max abs | two-pass cos min | fused max abs "
        "| fused cos min | validate s |"
    )
    print("|---|---|---|---|---|---|---|")
    for model, inputs in items:
        t = time.perf_counter()
        r = validate(model, inputs=inputs, attention="fused")
        dt = time.perf_counter() - t
        f = r.fused or {}
        n_sm = sum(1 for s in r.selected if str(s.operator) == "softmax")
        out = next(iter(r.end_to_end["outputs"]))
        two = r.end_to_end["outputs"][out]
        fe = (f.get("end_to_end") or {"outputs": {}})["outputs"].get(out)
        print(
            f"| {model.name} | {f.get('fused_sites', 0)}/{n_sm} | {two['max_abs']:.3g} | "
            f"{_cos(two):.6f} | {fe['max_abs'] if fe else float('nan'):.3g} | "
            f"{_cos(fe) if fe else float('nan'):.6f} | {dt:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
