"""Accuracy targets: max error in output LSBs of every method, per output width.

Three tables (Markdown on stdout), each cell the max |y - ref| in LSBs of the
output format over one seeded input set (:mod:`hwapprox.approx.inputs`),
against the float64 reference evaluated on the same quantised inputs:

* softmax -- inputs ``ap_fixed<16,6>`` (the spec's in_fmt with the method's
  own modes), Gaussian sigma = 2 and 4, rows of N = 64 and 256 (256 rows
  each); outputs ``ap_ufixed<W,0,AP_RND,AP_SAT>`` for W = 8, 10, 12, 16 for
  every method (one output format for all, so LSBs compare). The hls4ml 1.3
  baselines (``hls4ml_stable``/``hls4ml_latency`` with the 1.3 default tables:
  1024 entries, ``ap_fixed<18,8,AP_RND,AP_SAT>``) sit in the same table, and
  one extra row keeps *all* hls4ml defaults including its output type
  ``ap_fixed<16,6>``;
* GELU -- inputs ``ap_fixed<16,6,AP_RND,AP_SAT>`` uniform over [-8, 8]
  (65,536 samples), outputs ``ap_fixed<W,5,AP_RND,AP_SAT>``; other fields at
  each method's defaults; ``lut`` twice: indexed by the top 10 bits of the
  16-bit input (a 1024-entry table, hls4ml's default table size) and on its
  own 10-bit input ``ap_fixed<10,4>`` (one entry per code); ``shiftgelu`` on
  its own ``ap_fixed<8,4>`` (with n = 23 a 16-bit input overflows its sum);
* LayerNorm -- inputs ``ap_fixed<16,6>`` Gaussian sigma = 0.5 and 2 (mean 1),
  rows of N = 64, 256, 768 (64 rows each), random seeded gamma/beta;
  outputs ``ap_fixed<W,4,AP_RND,AP_SAT>``; hls4ml 1.3 (``hls4ml_lut``) with its
  default table next to the others.

A cell reads ``refused`` when the spec rejects the combination and ``error``
when the model raised (messages listed under the table). Usage::

    python benchmarks/bench_accuracy.py [--only softmax|gelu|layernorm]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from hwapprox.approx.base import SpecError
from hwapprox.approx.inputs import InputSet
from hwapprox.approx.registry import list_methods, make_spec
from hwapprox.approx.sweep import measure

WIDTHS = (8, 10, 12, 16)


def _cell(value: float) -> str:
    return f"{value:.3g}"


def _table(
    op: str,
    rows: Sequence[tuple[str, str, dict[str, Any]]],
    sets: Sequence[tuple[str, InputSet]],
    out_fmt: str,
) -> tuple[list[str], list[str]]:
    """Markdown lines: one row per (label, method, width); a column per input set."""
    head = "| method | W | " + " | ".join(name for name, _ in sets) + " | worst | max abs |"
    lines = [head, "|" + "---|" * (len(sets) + 4)]
    notes: list[str] = []
    for label, method, fields in rows:
        for w in WIDTHS:
            f = {"out_fmt": out_fmt.format(W=w), **fields}
            try:
                spec = make_spec(op, method, **f)
            except SpecError as exc:
                lines.append(f"| {label} | {w} | " + " | ".join("refused" for _ in sets) + " | | |")
                notes.append(f"{label} W={w}: {exc}")
                continue
            cells = []
            worst = 0.0
            worst_abs = 0.0
            for set_name, s in sets:
                try:
                    m = measure(spec, s)
                except Exception as exc:  # a model bug: report it in the table
                    cells.append("error")
                    notes.append(f"{label} W={w} {set_name}: {type(exc).__name__}: {exc}")
                    continue
                cells.append(_cell(m.max_lsb))
                worst = max(worst, m.max_lsb)
                worst_abs = max(worst_abs, m.max_abs)
            if "error" in cells:
                lines.append(f"| {label} | {w} | " + " | ".join(cells) + " | error | |")
                continue
            lines.append(
                f"| {label} | {w} | "
                + " | ".join(cells)
                + f" | **{_cell(worst)}** | {worst_abs:.2e} |"
            )
    return lines, notes


def softmax_table() -> list[str]:
    sets = [
        (f"σ={s:g}, N={n}", InputSet(dist="gaussian", sigma=s, n=n, rows=256))
        for s in (2.0, 4.0)
        for n in (64, 256)
    ]
    methods = list_methods("softmax")["softmax"]  # type: ignore[index]
    rows = [(m, m, {"in_fmt": "ap_fixed<16,6>"}) for m in methods]
    lines, notes = _table("softmax", rows, sets, "ap_ufixed<{W},0,AP_RND,AP_SAT>")
    # all hls4ml 1.3 defaults, including its output type ap_fixed<16,6>
    for method in ("hls4ml_stable", "hls4ml_latency"):
        spec = make_spec("softmax", method)
        ms = [measure(spec, s) for _, s in sets]
        lines.append(
            f"| {method}, all 1.3 defaults (out {spec.out_fmt}) | 16 | "
            + " | ".join(_cell(m.max_lsb) for m in ms)
            + f" | **{_cell(max(m.max_lsb for m in ms))}** | "
            f"{max(m.max_abs for m in ms):.2e} |"
        )
    return _finish("Softmax", lines, notes)


def gelu_table() -> list[str]:
    sets = [
        (
            "U[-8, 8]",
            InputSet(dist="uniform", low=-8.0, high=8.0, rows=256, n=256),
        )
    ]
    methods = list_methods("gelu")["gelu"]  # type: ignore[index]
    common = "ap_fixed<16,6,AP_RND,AP_SAT>"
    rows: list[tuple[str, str, dict[str, Any]]] = []
    for m in methods:
        if m == "shiftgelu":
            # n = 23 overflows its 32-bit sum on 10 fraction bits; its own input
            # format ap_fixed<8,4> covers [-8, 8)
            rows.append(("shiftgelu (in ap_fixed<8,4>)", m, {}))
        elif m == "lut":
            rows.append(
                ("lut (1024 entries, top 10 bits)", m, {"in_fmt": common, "index_bits": 10})
            )
            rows.append(("lut (in ap_fixed<10,4>, entry per code)", m, {}))
        else:
            rows.append((m, m, {"in_fmt": common}))
    lines, notes = _table("gelu", rows, sets, "ap_fixed<{W},5,AP_RND,AP_SAT>")
    return _finish("GELU", lines, notes)


def layernorm_table() -> list[str]:
    sets = [
        (
            f"σ={s:g}, N={n}",
            InputSet(dist="gaussian", sigma=s, mean=1.0, n=n, rows=64, affine="random"),
        )
        for s in (0.5, 2.0)
        for n in (64, 256, 768)
    ]
    methods = list_methods("layernorm")["layernorm"]  # type: ignore[index]
    rows = [(m, m, {"in_fmt": "ap_fixed<16,6>"}) for m in methods]
    lines, notes = _table("layernorm", rows, sets, "ap_fixed<{W},4,AP_RND,AP_SAT>")
    return _finish("LayerNorm", lines, notes)


def _finish(title: str, lines: list[str], notes: list[str]) -> list[str]:
    out = [f"### {title}: max error in output LSBs", "", *lines]
    if notes:
        out += ["", "Refused or failed:", *[f"- {n}" for n in notes]]
    return [*out, ""]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("softmax", "gelu", "layernorm"), default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    tables = {"softmax": softmax_table, "gelu": gelu_table, "layernorm": layernorm_table}
    for name, fn in tables.items():
        if args.only in (None, name):
            print("\n".join(fn()))
    print(f"(measured in {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
