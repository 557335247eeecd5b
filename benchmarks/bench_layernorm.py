"""LayerNorm models: error in output LSBs, the hls4ml 1.3 baseline's defects, speed, cost.

Run: ``python benchmarks/bench_layernorm.py`` (prints Markdown tables; the
measured numbers are kept in ``benchmarks/results/layernorm.md``).

Inputs ``ap_fixed<16,6>`` Gaussian rows (seeded), quantised; the float64
reference gets the same quantised inputs and is clipped to the output range.
"""

from __future__ import annotations

import time

import numpy as np

from hwapprox.approx.layernorm import (
    Hls4mlLayerNorm,
    IBertLayerNorm,
    IVitLayerNorm,
    RmsNorm,
    RsqrtLutLayerNorm,
)

NS = (64, 197, 384, 768)
WIDTHS = (8, 10, 12, 14, 16)
SIGMAS = (0.1, 0.3, 1.0, 3.0)


def rows(spec, n, rows_per_sigma=40, seed=0):
    rng = np.random.default_rng(seed + n)
    x = np.concatenate([rng.normal(0.0, s, (rows_per_sigma, n)) for s in SIGMAS])
    return spec.quantize_input(x)


def max_err(spec, raw, lsb=True):
    x = spec.in_fmt.to_float(raw)
    ref = np.clip(spec.reference(x), float(spec.out_fmt.min), float(spec.out_fmt.max))
    err = np.abs(spec.out_fmt.to_float(spec.model(raw)) - ref).max()
    return err / float(spec.out_fmt.lsb) if lsb else err


def methods(width):
    out = f"ap_fixed<{width},4,AP_RND,AP_SAT>"
    return [
        ("ibert", IBertLayerNorm(out_fmt=out)),
        ("ivit", IVitLayerNorm(out_fmt=out)),
        ("hls4ml_lut (1.3 types, out W,4)", Hls4mlLayerNorm(out_fmt=out)),
        ("rsqrt_lut 64 entries, 0 Newton", RsqrtLutLayerNorm(out_fmt=out, newton_steps=0)),
        ("rsqrt_lut 64 entries, 1 Newton", RsqrtLutLayerNorm(out_fmt=out, newton_steps=1)),
        (
            "rsqrt_lut 256 entries, 1 Newton",
            RsqrtLutLayerNorm(out_fmt=out, rsqrt_table_bits=8, newton_steps=1),
        ),
        ("rsqrt_lut default (64, 2 Newton)", RsqrtLutLayerNorm(out_fmt=out)),
        ("rmsnorm default (vs RMSNorm)", RmsNorm(out_fmt=out)),
    ]


def lsb_table() -> None:
    print("### Max error in output LSBs, out ap_fixed<W,4,AP_RND,AP_SAT>, γ=1, β=0\n")
    print("Rows: 40 per σ in", SIGMAS, "for each N; worst over N in", NS, "(per-N below).\n")
    print("| method | " + " | ".join(f"W={w}" for w in WIDTHS) + " |")
    print("|---" * (len(WIDTHS) + 1) + "|")
    per_n: dict[str, dict[int, float]] = {}
    names = [name for name, _ in methods(16)]
    res = {name: {} for name in names}
    for w in WIDTHS:
        for name, spec in methods(w):
            worst = 0.0
            for n in NS:
                e = max_err(spec, rows(spec, n))
                worst = max(worst, e)
                if w == 16:
                    per_n.setdefault(name, {})[n] = e
            res[name][w] = worst
    for name in names:
        print(f"| {name} | " + " | ".join(f"{res[name][w]:.2f}" for w in WIDTHS) + " |")
    print("\n#### Per N at W = 16 (LSB = 2^-12)\n")
    print("| method | " + " | ".join(f"N={n}" for n in NS) + " |")
    print("|---" * (len(NS) + 1) + "|")
    for name in names:
        print(f"| {name} | " + " | ".join(f"{per_n[name][n]:.2f}" for n in NS) + " |")
    spec = Hls4mlLayerNorm()
    cells = " | ".join(f"{max_err(spec, rows(spec, n)):.1f}" for n in NS)
    print(f"| hls4ml 1.3 default, out ap_fixed<16,6> (LSB 2^-10) | {cells} |")


def hls4ml_table() -> None:
    print("\n### hls4ml 1.3 baseline with its generated defaults (absolute max error)\n")
    print("in/out/accum/scale/bias ap_fixed<16,6>, table ap_ufixed<8,5,AP_RND_CONV,AP_SAT>,")
    print("4096 entries, eps 1e-5; 64 Gaussian rows per cell. N·σ² in brackets.\n")
    spec = Hls4mlLayerNorm()
    sig = (0.1, 0.3, 0.5, 1.0, 2.0, 3.0)
    ns = (4, 8, 16, 32, 64, 768)
    print("| N | " + " | ".join(f"σ={s}" for s in sig) + " |")
    print("|---" * (len(sig) + 1) + "|")
    for n in ns:
        cells = []
        for s in sig:
            rng = np.random.default_rng(n * 100 + int(s * 10))
            raw = spec.quantize_input(rng.normal(0, s, (64, n)))
            cells.append(f"{max_err(spec, raw, lsb=False):.3g} [{n * s * s:.3g}]")
        print(f"| {n} | " + " | ".join(cells) + " |")


def speed_table() -> None:
    print("\n### Speed on (1000, 768), best of 9 (shared machine: indicative)\n")
    print("| method | model ms | float64 reference ms | ratio |")
    print("|---|---|---|---|")
    for name, spec in methods(16):
        rng = np.random.default_rng(1)
        raw = spec.quantize_input(rng.normal(0, 1.0, (1000, 768)))
        x = spec.in_fmt.to_float(raw)
        tm = tr = float("inf")
        for _ in range(9):
            t0 = time.perf_counter()
            spec.model(raw)
            t1 = time.perf_counter()
            spec.reference(x)
            t2 = time.perf_counter()
            tm, tr = min(tm, t1 - t0), min(tr, t2 - t1)
        print(f"| {name} | {tm * 1e3:.1f} | {tr * 1e3:.1f} | {tm / tr:.2f} |")


def cost_table() -> None:
    print("\n### Cost (pre-synthesis, `spec.cost()`; out W=16)\n")
    print("| method | table bits | per-element multipliers (a×b) | score |")
    print("|---|---|---|---|")
    for name, spec in methods(16):
        c = spec.cost()
        mb = ", ".join(f"{a}×{b}" for a, b in c.mult_bits)
        print(f"| {name} | {c.table_bits} | {mb} | {c.score():.0f} |")


if __name__ == "__main__":
    lsb_table()
    hls4ml_table()
    speed_table()
    cost_table()
