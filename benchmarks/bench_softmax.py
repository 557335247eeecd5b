"""Softmax models: hls4ml baseline error, max error in output LSBs, online variants, speed.

Prints Markdown tables (the numbers in ``benchmarks/results/softmax.md``):

1. hls4ml 1.3 baselines with all hls4ml defaults (inputs and outputs
   ``ap_fixed<16,6>``, tables 1024 x ``ap_fixed<18,8,AP_RND,AP_SAT>``) for
   both ``accum_t`` choices hls4ml generates: max/mean |y - ref| and max
   |row sum - 1|.
2. Max |y - ref| in output LSBs per method, outputs
   ``ap_ufixed<W,0,AP_RND,AP_SAT>`` (W = 8, 10, 12, 16; I-BERT and Shiftmax
   floor by construction and use only the overflow mode), inputs
   ``ap_fixed<16,6>`` Gaussian sigma = 2 and 4, rows of N = 64 and 256.
3. ``online`` variants (exp unit x reciprocal unit x schedule) at W = 16 with
   their cost score.
4. Model time vs the float64 reference on a (1000, 256) array, best of 3.
5. ``online`` on the hard row kinds (``hard_softmax_rows``: one or two dominant
   scores at many heights over a flat background, plateaus, ramps, uniform) at
   W = 8..16 and N up to 4096: max error in LSBs with the fixed pre-issue-26
   formats (before) and the formats derived from ``out_fmt`` and ``row_max = N``
   (after), and the cost of both (proxy score, fitted 7-series LUT estimate).
6. ``softermax`` on the same hard row kinds and grid: its fixed pre-issue-26
   formats (before; rows up to 2047) and the formats derived from ``out_fmt`` and
   ``row_max = N`` by ``softermax_formats`` (after), and the cost of both
   (``--only softermax``: these tables alone).

Every input set is seeded; the reference is float64 stable softmax of the
quantised inputs. Usage: ``python benchmarks/bench_softmax.py [--rows 256]
[--only hard|softermax]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from hwapprox.approx.base import ApproxSpec
from hwapprox.approx.costmodel import estimate
from hwapprox.approx.registry import get_method, make_spec
from hwapprox.approx.softmax import OnlineSoftmax, SoftmaxSpec, stable_softmax
from hwapprox.approx.softmax.online import FIXED_FORMATS_BEFORE_DERIVED
from hwapprox.approx.softmax.softermax import SOFTERMAX_FIXED_FORMATS_BEFORE_DERIVED
from hwapprox.approx.stimulus import HARD_KINDS, hard_softmax_rows

METHODS = ("hls4ml_stable", "hls4ml_latency", "ibert", "shiftmax", "softermax", "online")
WIDTHS = (8, 10, 12, 16)
CASES = ((2.0, 64), (2.0, 256), (4.0, 64), (4.0, 256))


def _inputs(spec: SoftmaxSpec, sigma: float, n: int, rows: int) -> np.ndarray:
    rng = np.random.default_rng(int(sigma * 1000) + n)
    x = rng.normal(0.0, sigma, (rows, n))
    return spec.in_fmt.to_float(spec.quantize_input(x))


def _errors(spec: SoftmaxSpec, sigma: float, n: int, rows: int) -> tuple[float, float, float]:
    x = _inputs(spec, sigma, n, rows)
    y = spec.evaluate(x)
    err = np.abs(y - stable_softmax(x))
    return float(err.max()), float(err.mean()), float(np.abs(y.sum(-1) - 1).max())


def table_hls4ml(rows: int) -> None:
    print("### hls4ml 1.3 baselines, all defaults (in/out ap_fixed<16,6>)\n")
    print("| method | accum_t | sigma | N | max abs err | mean abs err | max abs(sum-1) |")
    print("|---|---|---|---|---|---|---|")
    for method in ("hls4ml_stable", "hls4ml_latency"):
        for accum in ("ap_fixed<16,6>", "ap_fixed<18,8,AP_RND,AP_SAT>"):
            spec = get_method("softmax", method)(accum_fmt=accum)
            for sigma, n in CASES:
                mx, mean, sd = _errors(spec, sigma, n, rows)
                print(
                    f"| {method} | {accum} | {sigma:g} | {n} | {mx:.4f} | {mean:.2e} | {sd:.4f} |"
                )
    print()


def table_lsb(rows: int) -> None:
    print("### Max error in output LSBs, out = ap_ufixed<W,0,AP_RND,AP_SAT>, in = ap_fixed<16,6>\n")
    head = " | ".join(f"W={w} s={s:g} N={n}" for w in WIDTHS for s, n in CASES)
    print(f"| method | {head} |")
    print("|---|" + "---|" * (len(WIDTHS) * len(CASES)))
    for method in METHODS:
        cells = []
        for w in WIDTHS:
            spec = get_method("softmax", method)(out_fmt=f"ap_ufixed<{w},0,AP_RND,AP_SAT>")
            for sigma, n in CASES:
                mx, _, _ = _errors(spec, sigma, n, rows)
                cells.append(f"{mx / float(spec.out_fmt.lsb):.3g}")
        print(f"| {method} | " + " | ".join(cells) + " |")
    print()


def table_online(rows: int) -> None:
    print("### online variants at W = 16 (max error in LSBs; cost score)\n")
    print("| exp_unit | recip_unit | schedule | fields | s=2 N=64 | s=4 N=256 | cost score |")
    print("|---|---|---|---|---|---|---|")
    variants: list[dict[str, object]] = [
        {},
        {"schedule": "two_pass"},
        {"newton_steps": 1},
        {"recip_unit": "lut", "recip_table_bits": 8},
        {"recip_unit": "lut", "recip_table_bits": 10},
        {"exp_interp": "none"},
        {"exp_frac_bits": 6},
        {"exp_unit": "lut", "exp_lut_bits": 14},
        {"exp_unit": "lut", "exp_lut_bits": 12},
        {"exp_unit": "lut", "exp_lut_bits": 10},
    ]
    for fields in variants:
        spec = OnlineSoftmax(**fields)  # type: ignore[arg-type]
        a, _, _ = _errors(spec, 2.0, 64, rows)
        b, _, _ = _errors(spec, 4.0, 256, rows)
        lsb = float(spec.out_fmt.lsb)
        desc = ", ".join(f"{k}={v}" for k, v in fields.items()) or "defaults"
        print(
            f"| {spec.exp_unit} | {spec.recip_unit} | {spec.schedule} | {desc} | "
            f"{a / lsb:.3f} | {b / lsb:.3f} | {spec.cost().score():.0f} |"
        )
    print()


def _best(fn: Callable[[], object], repeat: int = 3) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def table_speed() -> None:
    print("### Model time on a (1000, 256) array vs float64 reference (best of 3)\n")
    print("| method | model ms | reference ms | ratio |")
    print("|---|---|---|---|")
    for method in METHODS:
        spec = get_method("softmax", method)()
        rng = np.random.default_rng(0)
        raw = spec.quantize_input(rng.normal(0.0, 2.0, (1000, 256)))
        x = spec.in_fmt.to_float(raw)
        tm = _best(lambda: spec.model(raw))  # noqa: B023
        tr = _best(lambda: spec.reference(x))  # noqa: B023
        print(f"| {method} | {tm * 1e3:.1f} | {tr * 1e3:.1f} | {tm / tr:.1f} |")
    print()


OLD_ONLINE = FIXED_FORMATS_BEFORE_DERIVED  # issue 26: the pre-derivation formats
HARD_WIDTHS = (8, 10, 12, 14, 16)
HARD_NS = (64, 256, 1024, 4096)


def _hard_lsb(spec: SoftmaxSpec, x: np.ndarray) -> tuple[float, float]:
    """Max |y - p| in LSBs over all outputs, and over the outputs whose probability is
    below the largest code (not saturated)."""
    y = spec.output_to_float(spec.model(x))
    ref = spec.reference(spec.in_fmt.to_float(x))
    err = np.abs(y - ref) * 2.0**spec.out_fmt.frac_bits
    top = float(spec.out_fmt.max)
    return float(err.max()), float(np.where(ref > top, 0.0, err).max())


def table_hard(rows: int) -> None:
    print(
        "### online on hard row kinds: max error in output LSBs, before -> after "
        f"({rows} rows per kind and N)\n"
    )
    print(
        "Before: the fixed formats `exp_fmt ap_ufixed<22,1>`, `sum_fmt ap_ufixed<37,13>`, "
        "`recip_fmt ap_ufixed<26,1>`, 257-entry exp table. After: the defaults derived "
        "from `out_fmt` and `row_max = N` (`online_formats`). Cells: all outputs "
        "(saturated ones included) / outputs below the largest code.\n"
    )
    _hard_grid(
        rows,
        lambda out, n: (
            OnlineSoftmax(out_fmt=out, row_max=n),
            OnlineSoftmax(out_fmt=out, row_max=n, **OLD_ONLINE),  # type: ignore[arg-type]
        ),
    )


def _hard_grid(
    rows: int,
    specs: Callable[[str, int], tuple[ApproxSpec, ApproxSpec]],
    before_ok: Callable[[int], bool] = lambda n: True,
) -> None:
    """The hard-row table body: per output width W and row length N, ``specs(out_fmt,
    N)`` = (after, before), each hard kind's max LSB error before -> after (``--`` where
    ``before_ok(N)`` is false) / after below the largest code; then the worst after."""
    print("| W | N | " + " | ".join(HARD_KINDS) + " |")
    print("|---|---|" + "---|" * len(HARD_KINDS))
    worst = 0.0
    for w in HARD_WIDTHS:
        out = f"ap_ufixed<{w},0,AP_RND,AP_SAT>"
        for n in HARD_NS:
            new, old = specs(out, n)
            xs = hard_softmax_rows(new.in_fmt, n, np.random.default_rng(w * 7919 + n), rows=rows)
            cells = []
            for k in HARD_KINDS:
                bs = f"{_hard_lsb(old, xs[k])[0]:.2f}" if before_ok(n) else "--"
                a, a_ns = _hard_lsb(new, xs[k])
                worst = max(worst, a)
                cells.append(f"{bs} -> {a:.2f} / {a_ns:.2f}")
            print(f"| {w} | {n} | " + " | ".join(cells) + " |")
    print(f"\nWorst after: {worst:.3f} LSB.\n")


def table_hard_cost() -> None:
    print("### Cost of the derived formats (online, base-2 exp, Newton reciprocal)\n")
    print(
        "| W | row_max | exp_fmt | sum_fmt | recip_fmt | table entries | score before -> "
        "after | 7-series LUT before -> after | DSP before -> after |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for w in (8, 10, 12, 16):
        out = f"ap_ufixed<{w},0,AP_RND,AP_SAT>"
        for n in (256, 1024, 4096):
            new = OnlineSoftmax(out_fmt=out, row_max=n)
            old = OnlineSoftmax(out_fmt=out, row_max=n, **OLD_ONLINE)  # type: ignore[arg-type]
            eo, en = estimate(old, row_max=64), estimate(new, row_max=64)
            print(
                f"| {w} | {n} | {new.exp_fmt} | {new.sum_fmt} | {new.recip_fmt} | "
                f"{(1 << int(new.exp_frac_bits or 0)) + 1} | {old.cost().score():.0f} -> "
                f"{new.cost().score():.0f} | {eo.LUT:.0f} -> {en.LUT:.0f} | "
                f"{eo.DSP or 0:.0f} -> {en.DSP or 0:.0f} |"
            )
    print()


OLD_SOFTERMAX = SOFTERMAX_FIXED_FORMATS_BEFORE_DERIVED  # issue 26: its fixed formats


def table_hard_softermax(rows: int) -> None:
    print(
        "### softermax on hard row kinds: max error in output LSBs, before -> after "
        f"({rows} rows per kind and N)\n"
    )
    print(
        "Before: the fixed 8-bit-design formats (`pow2_fmt ap_ufixed<16,1>`, "
        "`sum_fmt ap_ufixed<28,12>`, `t_fmt ap_fixed<18,8>`, 12-bit `LOG2E`, 16-segment "
        "PWLs; `sum_fmt` refuses rows longer than 2047: `--`). After: the defaults "
        "derived from `out_fmt` and `row_max = N` (`softermax_formats`). Cells: all "
        "outputs (saturated ones included) / outputs below the largest code.\n"
    )
    _hard_grid(
        rows,
        lambda out, n: (
            make_spec("softmax", "softermax", out_fmt=out, row_max=n),
            make_spec("softmax", "softermax", out_fmt=out, row_max=n, **OLD_SOFTERMAX),
        ),
        before_ok=lambda n: n <= 2047,
    )


def table_hard_cost_softermax() -> None:
    print("### Cost of the derived formats (softermax)\n")
    print(
        "| W | row_max | pow2_fmt | sum_fmt | t_fmt | PWL segments 2^x / 1/x | score "
        "before -> after | 7-series LUT before -> after | DSP before -> after |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for w in (8, 10, 12, 16):
        out = f"ap_ufixed<{w},0,AP_RND,AP_SAT>"
        for n in (256, 1024, 4096):
            new = make_spec("softmax", "softermax", out_fmt=out, row_max=n)
            old = make_spec("softmax", "softermax", out_fmt=out, row_max=2047, **OLD_SOFTERMAX)
            eo, en = estimate(old, row_max=64), estimate(new, row_max=64)
            print(
                f"| {w} | {n} | {new.pow2_fmt} | {new.sum_fmt} | {new.t_fmt} | "
                f"{1 << new.pow2_segments_log2} / {1 << new.recip_segments_log2} | "
                f"{old.cost().score():.0f} -> {new.cost().score():.0f} | "
                f"{eo.LUT:.0f} -> {en.LUT:.0f} | {eo.DSP or 0:.0f} -> {en.DSP or 0:.0f} |"
            )
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=256, help="rows per input set (default 256)")
    ap.add_argument(
        "--only",
        choices=("hard", "softermax"),
        help="only the hard-row tables (5, 6), or only table 6",
    )
    args = ap.parse_args()
    if args.only == "softermax":
        table_hard_softermax(max(32, args.rows // 4))
        table_hard_cost_softermax()
        return
    if args.only != "hard":
        table_hls4ml(args.rows)
        table_lsb(args.rows)
        table_online(args.rows)
        table_speed()
    table_hard(max(32, args.rows // 4))
    table_hard_cost()
    table_hard_softermax(max(32, args.rows // 4))
    table_hard_cost_softermax()


if __name__ == "__main__":
    main()
