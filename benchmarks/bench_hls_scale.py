"""``hwapprox hls csim`` at scale: a 6-layer, 384-wide encoder at sequence 32.

Model: :func:`hwapprox.export.builders.bert_encoder` (6 layers, width 384, 6
heads, FFN 1536, sequence 32, batch 1, Erf GELU, LayerNormalization ops,
seed 0) with its embeddings; no config (default methods, formats calibrated
on seeded token ids). Measured, each in this process: the ONNX import, match
and calibration (``prepare_model``), hls4ml conversion and ``write()``,
``compile()`` (the g++ build of the project: wall time and the peak resident
memory of the compiler processes), and the C simulation of ``--samples`` real
block inputs against the Python model (bit-exact or not), plus the Python
model's own time. io_parallel only (the block has no io_stream path yet).

Usage: ``.venv/bin/python benchmarks/bench_hls_scale.py [--layers 6] [--samples 2]``
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

from hwapprox.export.builders import EncoderShape, bert_encoder, sample_inputs
from hwapprox.hls.project import convert, csim_check, prepare_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--width", type=int, default=384)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--ffn", type=int, default=1536)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="project dir (default: a temp dir)")
    args = ap.parse_args()
    shape = EncoderShape(
        layers=args.layers,
        width=args.width,
        heads=args.heads,
        ffn=args.ffn,
        seq=args.seq,
        batch=args.samples,
        vocab=1000,
    )
    work = args.out or Path(tempfile.mkdtemp(prefix="hwapprox_hls_scale_"))
    work.mkdir(parents=True, exist_ok=True)
    model = bert_encoder(shape, layernorm="op", seed=0)
    path = work / "encoder.onnx"
    onnx.save(model, path)
    feeds = sample_inputs(shape, batch=args.samples)
    times: dict[str, float] = {}

    t = time.perf_counter()
    prep = prepare_model(path, None, inputs=feeds)
    times["prepare_model (import, match, calibrate)"] = time.perf_counter() - t
    t = time.perf_counter()
    hmodel = convert(prep, work / "prj", backend="Vivado")
    times["hls4ml convert + write"] = time.perf_counter() - t
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    hmodel.compile()
    times["compile (g++ build)"] = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    x = np.asarray(prep.samples)
    t = time.perf_counter()
    prep.reference(x)
    times["Python block model"] = time.perf_counter() - t
    t = time.perf_counter()
    rep = csim_check(hmodel, prep, x, compile=False)
    times["C simulation + compare (incl. the Python model)"] = time.perf_counter() - t
    acc = prep.accuracy()
    print(
        f"{args.layers} layers x width {args.width}, {args.heads} heads, FFN {args.ffn}, "
        f"seq {args.seq}: {len(prep.blocks)} blocks; {rep.samples} samples, {rep.values} "
        f"values: {'bit-exact' if rep.bit_exact else f'{rep.mismatches} MISMATCHES'}"
    )
    if acc is not None:
        print(
            f"fixed-point design vs float: max |error| {acc['max_abs']:.3g}, per-token "
            f"cosine min {acc['token_cosine_min']:.6f}"
        )
    print()
    print("| step | time s |")
    print("|---|---|")
    for k, v in times.items():
        print(f"| {k} | {v:.1f} |")
    print(
        f"| g++ CPU (user + sys of child processes) | "
        f"{after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime:.1f} |"
    )
    print(f"\npeak resident memory of a child process (g++): {after.ru_maxrss / 1024:.0f} MiB")
    print(f"project: {work / 'prj'}")


if __name__ == "__main__":
    main()
