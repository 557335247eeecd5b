"""GELU methods: accuracy per output width, PWL fitter, ShiftGELU's n, speed, cost.

Prints Markdown tables (the measured numbers in ``benchmarks/results/gelu.md``):

1. max |model - GELU| in output LSBs over every input code with |x| <= 8, for
   outputs ``ap_fixed<W,5,AP_RND,AP_SAT>``, W = 8..16. The error is measured
   against the float64 erf GELU *of the quantised input* (the unit's own error;
   input quantisation is not the unit's). Inputs ``ap_fixed<16,5,AP_RND,AP_SAT>``
   (LSB 2^-11) unless the row says otherwise;
2. PWL: L∞ of the fitter (float lines) vs uniform breakpoints, and of the
   integer model, for a few segment counts and ranges;
3. ShiftGELU: error on [-4, 4] against n for several input formats;
4. speed: each model on 1e6 seeded random codes vs the float64 reference
   (:func:`hwapprox.approx.gelu.gelu_reference`) on the same 1e6 values, best
   of 3 runs;
5. ``cost()`` of each default spec.

Usage::

    python benchmarks/bench_gelu.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from hwapprox.approx.gelu import (
    EdgeMoeGelu,
    IBertGelu,
    LutGelu,
    PwlGelu,
    ShiftGelu,
    gelu_reference,
)
from hwapprox.approx.pwl import fit_lines, fit_pwl, uniform_breakpoints
from hwapprox.fixed import FixedFormat

IN16 = "ap_fixed<16,5,AP_RND,AP_SAT>"


def max_err_lsb(spec, lim: float = 8.0) -> float:
    codes = spec.in_fmt.all_codes()
    x = spec.in_fmt.to_float(codes)
    keep = np.abs(x) <= lim
    y = spec.out_fmt.to_float(spec.model(codes[keep]))
    return float(np.abs(y - gelu_reference(x[keep])).max() / float(spec.out_fmt.lsb))


def accuracy_table(widths: list[int]) -> None:
    rows = [
        ("ibert (in 16b)", lambda o: IBertGelu(in_fmt=IN16, out_fmt=o)),
        ("shiftgelu (in 16b, n=8)", lambda o: ShiftGelu(in_fmt=IN16, out_fmt=o, n=8)),
        ("shiftgelu (in ap_fixed<8,4>, n=23)", lambda o: ShiftGelu(out_fmt=o)),
        ("edgemoe (in 16b)", lambda o: EdgeMoeGelu(in_fmt=IN16, out_fmt=o)),
        ("pwl 8 seg [-4,4] (in 16b)", lambda o: PwlGelu(in_fmt=IN16, out_fmt=o)),
        (
            "pwl 32 seg [-8,8] (in 16b)",
            lambda o: PwlGelu(in_fmt=IN16, out_fmt=o, segments=32, lo=-8, hi=8),
        ),
        (
            "pwl 64 seg [-8,8] (in 16b)",
            lambda o: PwlGelu(in_fmt=IN16, out_fmt=o, segments=64, lo=-8, hi=8),
        ),
        ("lut top 12 bits (in 16b)", lambda o: LutGelu(in_fmt=IN16, out_fmt=o, index_bits=12)),
        (
            "lut direct (in ap_fixed<12,5>)",
            lambda o: LutGelu(in_fmt="ap_fixed<12,5,AP_RND,AP_SAT>", out_fmt=o),
        ),
    ]
    print("| method | " + " | ".join(f"W={w}" for w in widths) + " |")
    print("|---|" + "---|" * len(widths))
    for name, make in rows:
        cells = []
        for w in widths:
            spec = make(f"ap_fixed<{w},5,AP_RND,AP_SAT>")
            cells.append(f"{max_err_lsb(spec):.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def pwl_table() -> None:
    print("| segments | range | uniform L∞ | fitted L∞ | model L∞ (16b in/out) | fit time s |")
    print("|---|---|---|---|---|---|")
    for n, lo, hi in [(4, -4, 4), (8, -4, 4), (16, -4, 4), (16, -8, 8), (32, -8, 8), (64, -8, 8)]:
        t = time.perf_counter()
        fit = fit_pwl(gelu_reference, lo, hi, n)
        dt = time.perf_counter() - t
        uni = fit_lines(gelu_reference, uniform_breakpoints(lo, hi, n))
        spec = PwlGelu(in_fmt=IN16, out_fmt=IN16, segments=n, lo=lo, hi=hi)
        model = max_err_lsb(spec, lim=max(-lo, hi)) * float(spec.out_fmt.lsb)
        cells = [f"{uni.max_error:.5f}", f"{fit.max_error:.5f}", f"{model:.5f}", f"{dt:.2f}"]
        print(f"| {n} | [{lo},{hi}] | " + " | ".join(cells) + " |")
    fit = fit_pwl(gelu_reference, -4, 4, 8)
    print("\n8 segments on [-4,4], breakpoints:", ", ".join(f"{b:.4f}" for b in fit.breakpoints))


def shiftgelu_table() -> None:
    fmts = [
        "ap_fixed<8,4,AP_RND,AP_SAT>",
        "ap_fixed<10,4,AP_RND,AP_SAT>",
        "ap_fixed<12,5,AP_RND,AP_SAT>",
        IN16,
    ]
    ns = [4, 6, 8, 10, 12, 16, 19, 23]
    print("| in_fmt (x0) | " + " | ".join(f"n={n}" for n in ns) + " |")
    print("|---|" + "---|" * len(ns))
    for f in fmts:
        cells = []
        x0 = None
        for n in ns:
            try:
                spec = ShiftGelu(in_fmt=f, n=n)
            except Exception:
                cells.append("refused")
                continue
            x0 = spec.hw_params()["X0"]
            cells.append(f"{max_err_lsb(spec, 4.0) * float(spec.out_fmt.lsb):.4f}")
        print(f"| {f} ({x0}) | " + " | ".join(cells) + " |")


def speed_table(n: int = 1_000_000) -> None:
    rng = np.random.default_rng(0)
    specs = [
        IBertGelu(),
        ShiftGelu(in_fmt=IN16, n=8),
        EdgeMoeGelu(),
        PwlGelu(),
        LutGelu(in_fmt=IN16, out_fmt=IN16, index_bits=12),
        LutGelu(),
    ]

    def best(fn) -> float:
        ts = []
        for _ in range(3):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return min(ts)

    print("| spec | model s (1e6) | reference s (1e6) | ratio |")
    print("|---|---|---|---|")
    for spec in specs:
        fmt: FixedFormat = spec.in_fmt
        codes = rng.integers(fmt.min_raw, fmt.max_raw + 1, n)
        x = fmt.to_float(codes)
        tm = best(lambda s=spec, c=codes: s.model(c))
        tr = best(lambda v=x: gelu_reference(v))
        print(
            f"| {spec.method} {spec.in_fmt}->{spec.out_fmt} | {tm:.3f} | {tr:.3f} | {tm / tr:.2f} |"
        )
    x = rng.uniform(-8, 8, n)
    erfc_py = np.frompyfunc(math.erfc, 1, 1)
    tp = best(lambda: x * 0.5 * erfc_py(-x / math.sqrt(2)).astype(np.float64))
    tt = best(lambda: gelu_reference(x, "tanh"))
    tr = best(lambda: gelu_reference(x))
    print(
        f"\nreference on 1e6 uniform [-8,8]: erf form {tr:.3f} s, tanh form {tt:.3f} s, "
        f"math.erfc via np.frompyfunc {tp:.3f} s"
    )


def cost_table() -> None:
    print("| spec | table bits | multipliers (a×b) | adders | dividers | widest | score |")
    print("|---|---|---|---|---|---|---|")
    for spec in [IBertGelu(), ShiftGelu(), EdgeMoeGelu(), PwlGelu(), LutGelu()]:
        c = spec.cost()
        mb = ", ".join(f"{a}×{b}" for a, b in c.mult_bits)
        print(
            f"| {spec.method} | {c.table_bits} | {c.multipliers} ({mb}) | {c.adders} | "
            f"{c.dividers} | {c.widest_bits} | {c.score():.1f} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="widths 8, 12, 16 only; skip speed")
    args = ap.parse_args()
    widths = [8, 12, 16] if args.quick else [8, 10, 12, 14, 16]
    print("## max error in output LSBs, |x| <= 8, out ap_fixed<W,5,AP_RND,AP_SAT>\n")
    accuracy_table(widths)
    print("\n## PWL fitter\n")
    pwl_table()
    print("\n## ShiftGELU: L∞ on [-4,4] vs n (out ap_fixed<16,5>, sigmoid 8 bits)\n")
    shiftgelu_table()
    if not args.quick:
        print("\n## speed\n")
        speed_table()
    print("\n## cost (default specs)\n")
    cost_table()


if __name__ == "__main__":
    main()
