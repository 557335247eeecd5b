"""HLS C simulation vs the Python models on large input sets (prints a Markdown table).

For every HLS unit with its default spec (and a narrow variant), feed many raw
codes through the g++-compiled header (the test harnesses in tests/cxx) and
through the spec's model, and count differing raw codes. GELU: every code of
the input format (exhaustive up to 2^16); softmax and LayerNorm: seeded random
rows (full-range and N(0, 3) codes); encoder block: seeded samples.

    .venv/bin/python benchmarks/bench_hls.py [--rows 4000] [--block-samples 200]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from hwapprox.approx.registry import make_spec
from hwapprox.hls.csim import build_harness, run_harness
from hwapprox.hls.units import unit_instance

CXX = Path(__file__).resolve().parent.parent / "tests" / "cxx"

GELU = [
    ("ibert", {}), ("shiftgelu", {}), ("edgemoe", {}), ("pwl", {}), ("lut", {}),
    ("pwl", {"in_fmt": "ap_fixed<12,4>", "segments": 16, "slope_fmt": "ap_fixed<12,2,AP_RND>",
             "intercept_fmt": "ap_fixed<12,2,AP_RND>"}),
]  # fmt: skip
SOFTMAX = [
    ("online", {}, 8), ("online", {}, 64), ("online", {"exp_unit": "lut", "recip_unit": "lut"}, 16),
    ("ibert", {}, 8), ("ibert", {}, 64), ("hls4ml_stable", {}, 8), ("hls4ml_latency", {}, 8),
]  # fmt: skip
LAYERNORM = [
    ("rsqrt_lut", {}, 8), ("rsqrt_lut", {}, 64), ("rmsnorm", {}, 64),
    ("ibert", {}, 8), ("ibert", {}, 64),
]  # fmt: skip


def _build(kind: str, specs: list, ns: list[int]) -> tuple[Path, float]:
    insts = [unit_instance(f"u{i}", s, n) for i, (s, n) in enumerate(zip(specs, ns, strict=True))]
    run = {"gelu": "run_gelu", "softmax": "run_softmax", "layernorm": "run_ln"}[kind]
    rows = [(str(i), run, f"u{i}") for i in range(len(specs))]
    t = time.perf_counter()
    exe = build_harness(CXX / f"hls_{kind}_harness.cpp", insts, rows, name=f"bench_hls_{kind}")
    return exe, time.perf_counter() - t


def _rows(fmt, n: int, count: int, rng: np.random.Generator) -> np.ndarray:
    half = count // 2
    a = rng.integers(fmt.min_raw, fmt.max_raw + 1, size=(half, n))
    b = np.clip(rng.normal(0, 3 * 2**fmt.frac_bits, (count - half, n)), fmt.min_raw, fmt.max_raw)
    return np.concatenate([a, b.astype(np.int64)]).astype(np.int64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4000)
    ap.add_argument("--block-samples", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(2026)
    out = ["| unit | spec | inputs compared | outputs compared | mismatches | csim s |",
           "|---|---|---:|---:|---:|---:|"]  # fmt: skip
    builds = []

    specs = [make_spec("gelu", m, **f) for m, f in GELU]
    exe, tb = _build("gelu", specs, [64] * len(specs))
    builds.append(("gelu", tb))
    for i, s in enumerate(specs):
        x = s.in_fmt.all_codes()
        t = time.perf_counter()
        (got,) = run_harness(exe, [[i, len(x), *x]], [s.out_fmt])
        dt = time.perf_counter() - t
        bad = int((got != s.model(x)).sum())
        out.append(f"| gelu/{s.method} | {s.in_fmt} -> {s.out_fmt} | {x.size} (all codes) | "
                   f"{x.size} | {bad} | {dt:.2f} |")  # fmt: skip

    for kind, cases in (("softmax", SOFTMAX), ("layernorm", LAYERNORM)):
        specs = [make_spec(kind, m, **f) for m, f, _ in cases]
        ns = [n for _, _, n in cases]
        exe, tb = _build(kind, specs, ns)
        builds.append((kind, tb))
        for i, (s, n) in enumerate(zip(specs, ns, strict=True)):
            x = _rows(s.in_fmt, n, args.rows, rng)
            if kind == "softmax":
                rec, want = [i, len(x), *x.ravel()], s.model(x).ravel()
            else:
                g = rng.integers(s.gamma_fmt.min_raw, s.gamma_fmt.max_raw + 1, n)
                b = rng.integers(s.beta_fmt.min_raw, s.beta_fmt.max_raw + 1, n)
                rec, want = [i, len(x), *g, *b, *x.ravel()], s.model(x, gamma=g, beta=b).ravel()
            t = time.perf_counter()
            (got,) = run_harness(exe, [rec], [s.out_fmt])
            dt = time.perf_counter() - t
            bad = int((got != want).sum())
            out.append(f"| {kind}/{s.method} N={n} | {s.in_fmt} -> {s.out_fmt} | "
                       f"{x.shape[0]} rows | {want.size} | {bad} | {dt:.2f} |")  # fmt: skip

    from hwapprox.approx.block import EncoderBlock
    from hwapprox.hls.block import block_instances

    s_, d_, h_, f_ = 4, 8, 2, 16
    w = {}
    wr = np.random.default_rng(0)
    for k, shp in {"wq": (d_, d_), "wk": (d_, d_), "wv": (d_, d_), "wo": (d_, d_), "w1": (d_, f_),
                   "w2": (f_, d_)}.items():  # fmt: skip
        w[k] = wr.normal(0, 1 / np.sqrt(shp[0]), shp)
    for k, n in {"bq": d_, "bk": d_, "bv": d_, "bo": d_, "b1": f_, "b2": d_}.items():
        w[k] = wr.normal(0, 0.1, n)
    w |= {"g1": 1 + wr.normal(0, 0.1, d_), "g2": 1 + wr.normal(0, 0.1, d_),
          "be1": wr.normal(0, 0.1, d_), "be2": wr.normal(0, 0.1, d_)}  # fmt: skip
    ln = make_spec("layernorm", "rsqrt_lut", max_n=64)
    blk = EncoderBlock.from_float(w, seq=s_, heads=h_, softmax=make_spec("softmax", "online"),
                                  gelu=make_spec("gelu", "pwl"), ln1=ln, ln2=ln,
                                  score_scale=1 / np.sqrt(d_ // h_))  # fmt: skip
    t = time.perf_counter()
    exe = build_harness(CXX / "hls_block_harness.cpp", block_instances(blk, "blk0"),
                        [("0", "run_block", "blk0")], name="bench_hls_block")  # fmt: skip
    builds.append(("block", time.perf_counter() - t))
    x = blk.formats.in_fmt.quantize(rng.normal(0, 1, (args.block_samples, s_, d_)))
    t = time.perf_counter()
    (got,) = run_harness(exe, [[0, x.size, *x.ravel()]], [blk.ln2.out_fmt])
    dt = time.perf_counter() - t
    bad = int((got != blk.model(x).ravel()).sum())
    out.append(f"| encoder block S=4 D=8 H=2 F=16 | online/pwl/rsqrt_lut | {x.shape[0]} samples | "
               f"{x.size} | {bad} | {dt:.2f} |")  # fmt: skip
    print("\n".join(out))
    print()
    print("| harness | build s (0 when cached) |\n|---|---:|")
    for k, tb in builds:
        print(f"| {k} | {tb:.1f} |")


if __name__ == "__main__":
    main()
