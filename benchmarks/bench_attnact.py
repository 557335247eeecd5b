"""Sigmoid and ReLU attention: accuracy vs output width over every input code.

Each row: the spec's integer model against its float64 reference on *every* code of
``in_fmt`` (the input range is the whole format: ap_fixed<W_in, 6> = [-32, 32) for
the PWL / ReLU units, ap_fixed<W_in, 5> = [-16, 16) for the direct tables, which
are limited to 12 index bits), b = -log 128 (n = 128) unless stated. Errors in
output LSBs and absolute. Cost: the fitted yosys model (7-series LUT / DSP) where
the unit is in the cost table, else '-'.

Run: python benchmarks/bench_attnact.py  (writes benchmarks/results/attnact.md)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hwapprox.approx import costmodel
from hwapprox.approx.registry import make_spec

OUT = Path(__file__).parent / "results" / "attnact.md"


def _err(spec) -> tuple[float, float, float]:
    codes = spec.in_fmt.all_codes()
    y = spec.out_fmt.to_float(spec.model(codes))
    r = spec.reference(spec.in_fmt.to_float(codes))
    d = np.abs(y - r)
    return float(d.max()), float(d.max() / float(spec.out_fmt.lsb)), float(d.mean())


def _cost(spec) -> str:
    est = costmodel.estimate(spec, "7series")
    if est.source == "proxy":  # not in the cost table yet
        return "-"
    return f"{est.LUT:.0f} / {est.DSP:.0f}"


def main() -> None:
    rows: list[tuple[str, ...]] = []
    for w in (8, 10, 12, 16):
        out = f"ap_ufixed<{w},0,AP_RND,AP_SAT>"
        for method, extra in (
            ("lut", {"in_fmt": "ap_fixed<12,5>"}),
            ("pwl", {"in_fmt": "ap_fixed<16,6>", "segments": 8}),
            ("pwl", {"in_fmt": "ap_fixed<16,6>", "segments": 16}),
            ("pwl", {"in_fmt": "ap_fixed<16,6>", "segments": 32}),
            ("pwl", {"in_fmt": "ap_fixed<16,6>", "segments": 64}),
        ):
            s = make_spec("sigmoid_attention", method, out_fmt=out, **extra)
            mx, lsb, mean = _err(s)
            detail = f"segments {extra['segments']}" if "segments" in extra else "full table"
            rows.append(
                ("sigmoid", method, str(s.in_fmt), out, detail, f"{mx:.2e}", f"{lsb:.2f}",
                 f"{mean:.1e}", _cost(s))
            )  # fmt: skip
    for w in (8, 12, 16):
        out = f"ap_ufixed<{w},1,AP_RND,AP_SAT>"
        for n in (128, 100, 197):
            s = make_spec("relu_attention", "wortsman", in_fmt="ap_fixed<16,6>", out_fmt=out,
                          seq_len=n)  # fmt: skip
            mx, lsb, mean = _err(s)
            how = "shift" if s.pow2 else f"K = {s.hw_params()['MULT']}"
            detail = f"n = {n} ({how})"
            rows.append(
                ("relu", "wortsman", str(s.in_fmt), out, detail, f"{mx:.2e}", f"{lsb:.2f}",
                 f"{mean:.1e}", _cost(s))
            )  # fmt: skip
    head = ("normaliser", "method", "in_fmt", "out_fmt", "parameters", "max abs err",
            "max err (LSB)", "mean abs err", "LUT / DSP (7-series, fitted)")  # fmt: skip
    lines = [
        "# Sigmoid and ReLU attention: accuracy vs output width",
        "",
        (__doc__ or "").split("\n\n")[1].replace("\n", " "),
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
        "Reading: the direct table is within half an LSB except where σ → 1 saturates",
        "an ap_ufixed<W,0> (< 1 LSB); a PWL's error is its fit's (segments) until the",
        "output LSB dominates; ReLU(x)/n is a shift (exact up to the output rounding)",
        "for n a power of two, and within the 16-bit reciprocal's bound otherwise.",
        "",
    ]
    OUT.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
