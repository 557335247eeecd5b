"""``hwapprox hls csim`` at scale: a 6-layer, 384-wide encoder at sequence 32.

Model: :func:`hwapprox.export.builders.bert_encoder` (6 layers, width 384, 6
heads, FFN 1536, sequence 32, Erf GELU, LayerNormalization ops, seed 0) with
its embeddings; no config (default methods, formats calibrated on seeded token
ids). ``--model PATH --inputs NPZ`` runs a given export instead (e.g. the real
all-MiniLM-L6-v2 of ``scripts/export_real_model.py`` and its padded batch).

Measured in this process, for io_parallel and io_stream: ``prepare_model``
(import, match, calibrate), hls4ml conversion and ``write()``, the g++ build
of the C-sim library (:func:`hwapprox.hls.project.compile_project`, cold: an
empty cache directory; wall time, CPU time and the peak resident memory of the
compiler processes), the same build again (a cache hit), and the C simulation
of the real block inputs against the Python model (bit-exact or not), plus the
Python model's own time, and the peak resident memory of this process.

Usage: ``.venv/bin/python benchmarks/bench_hls_scale.py [--layers 6] [--samples 2]
[--io io_parallel io_stream] [--model PATH --inputs NPZ]``
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx


def _cpu(r0: resource.struct_rusage, r1: resource.struct_rusage) -> float:
    return r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--width", type=int, default=384)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--ffn", type=int, default=1536)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--io", nargs="+", default=["io_parallel", "io_stream"])
    ap.add_argument("--model", type=Path, default=None, help="an ONNX export instead")
    ap.add_argument("--inputs", type=Path, default=None, help="its input batch (.npz)")
    ap.add_argument("--out", type=Path, default=None, help="work dir (default: a temp dir)")
    args = ap.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="hwapprox_hls_scale_"))
    work.mkdir(parents=True, exist_ok=True)
    # cold builds: a cache of our own (set before hwapprox reads it)
    os.environ["HWAPPROX_CACHE"] = str(work / "cache")
    from hwapprox.export.builders import EncoderShape, bert_encoder, sample_inputs
    from hwapprox.hls.project import CSIM_OPT, compile_project, convert, csim_check, prepare_model

    if args.model is None:
        shape = EncoderShape(
            layers=args.layers, width=args.width, heads=args.heads, ffn=args.ffn,
            seq=args.seq, batch=args.samples, vocab=1000,
        )  # fmt: skip
        path = work / "encoder.onnx"
        onnx.save(bert_encoder(shape, layernorm="op", seed=0), path)
        feeds: object = sample_inputs(shape, batch=args.samples)
        label = (
            f"bert_encoder: {args.layers} layers x width {args.width}, {args.heads} heads, "
            f"FFN {args.ffn}, seq {args.seq}"
        )
    else:
        path, feeds, label = args.model, args.inputs, args.model.name

    t = time.perf_counter()
    prep = prepare_model(path, None, inputs=feeds)
    t_prep = time.perf_counter() - t
    x = np.asarray(prep.samples)[: args.samples]
    km = None if prep.key_mask is None else np.asarray(prep.key_mask)[: args.samples]
    t = time.perf_counter()
    prep.reference(x, km)
    t_model = time.perf_counter() - t
    b0 = prep.blocks[0]
    print(
        f"{label}: {len(prep.blocks)} blocks S={b0.seq} D={b0.dim} H={b0.heads} F={b0.ffn} "
        f"({b0.kind}); g++ {CSIM_OPT}; {len(x)} real samples"
    )
    acc = prep.accuracy()
    if acc is not None:
        print(
            f"fixed-point design vs float: max |error| {acc['max_abs']:.3g}, per-token "
            f"cosine min {acc['token_cosine_min']:.6f}"
        )
    print(
        f"prepare_model (import, match, calibrate): {t_prep:.1f} s; Python model: {t_model:.1f} s"
    )
    print()
    print(
        "| IOType | convert + write s | g++ build s (cold) | g++ CPU s | g++ peak RSS MiB | "
        "cached rebuild s | C-sim + compare s | values | bit-exact |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for io in args.io:
        t = time.perf_counter()
        hmodel = convert(prep, work / f"prj_{io}", backend="Vivado", io_type=io)
        t_conv = time.perf_counter() - t
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        compile_project(hmodel, write=False)
        t_build = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        compile_project(hmodel, write=False)
        t_again = time.perf_counter() - t
        t = time.perf_counter()
        rep = csim_check(hmodel, prep, x, compile=False, key_mask=km)
        t_sim = time.perf_counter() - t
        print(
            f"| {io} | {t_conv:.1f} | {t_build:.1f} | {_cpu(r0, r1):.1f} | "
            f"{r1.ru_maxrss / 1024:.0f} | {t_again:.1f} | {t_sim:.1f} | {rep.values} | "
            f"{'yes' if rep.bit_exact else f'NO: {rep.mismatches} differ'} |",
            flush=True,
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of this process (import, calibration, models, hls4ml): {peak:.0f} MiB")
    print(f"work dir: {work}")


if __name__ == "__main__":
    main()
