"""Max error vs LUTs and vs DSPs across all methods per operator and output width, from
real synthesis (issue 14's Pareto figures).

Reads the yosys runs of ``bench_synth.py`` (``benchmarks/data/synth_runs.jsonl``,
7-series): every spec there was synthesised (``synth_xilinx -family xc7``, row-wise
units at row_max 64). Each spec's max |error| against the float64 reference is
measured on the sweep's default input set (Gaussian rows, sigma 2, 256 rows of 64,
seed 0; LayerNorm with seeded gamma/beta), in real output units. Writes
``benchmarks/results/pareto.md`` (per operator and output width: every method's
resources and error, the Pareto-optimal ones marked) and
``benchmarks/results/pareto_<operator>_{lut,dsp}.png``.

Usage: python benchmarks/bench_pareto.py [--family 7series]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from hwapprox.approx.inputs import InputSet
from hwapprox.approx.registry import spec_from_config
from hwapprox.approx.sweep import measure, pareto_front

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "benchmarks" / "data" / "synth_runs.jsonl"
OUT = ROOT / "benchmarks" / "results"


def _distinct(spec: Any) -> str:
    """The spec's fields that differ from its method's default (formats included)."""
    from hwapprox.approx.registry import make_spec

    base = make_spec(spec.operator.value, spec.method).to_config()
    cfg = spec.to_config()
    keep = {k: v for k, v in cfg.items() if k not in ("operator", "method") and base.get(k) != v}
    return ", ".join(f"{k}={v}" for k, v in keep.items() if k != "out_fmt") or "default"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="7series")
    args = ap.parse_args()
    recs = [json.loads(x) for x in RUNS.read_text().splitlines()]
    latest: dict[str, dict[str, Any]] = {}  # one run per spec (the latest), as bench_synth
    for r in recs:
        if r["family"] == args.family:
            cfg = spec_from_config(r["spec"]).to_config()
            latest[json.dumps(cfg, sort_keys=True)] = {**r, "spec": cfg}
    points: list[dict[str, Any]] = []
    for r in latest.values():
        spec = spec_from_config(r["spec"])
        m = measure(spec, InputSet())
        points.append(
            {
                "operator": spec.operator.value,
                "method": spec.method,
                "width": spec.out_fmt.width,
                "describe": _distinct(spec),
                "LUT": r["LUT"],
                "FF": r["FF"],
                "DSP": r["DSP"],
                "BRAM": r["BRAM"],
                "max_abs": m.max_abs,
                "max_lsb": m.max_lsb,
            }
        )
    by_op: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        by_op[p["operator"]].append(p)
    lines = [
        "## Max error vs area per operator and output width (issue 14)",
        "",
        f"`benchmarks/bench_pareto.py` on the yosys runs of `bench_synth.py` "
        f"(`synth_xilinx`, {args.family}; row-wise units at row_max 64). Error: max |y - "
        "float64 reference| in real units on Gaussian rows (sigma 2, 256 rows of 64, seed 0; "
        "LayerNorm with seeded gamma/beta), and in output LSBs. **front** marks the specs on "
        "the Pareto front of (LUTs, max error) at that output width; *dsp* marks the front of "
        "(DSPs, max error). Every unit here is bit-exact with its model in the RTL tests.",
        "",
    ]
    for op, pts in sorted(by_op.items()):
        for kind in ("LUT", "DSP"):
            fig = Figure(figsize=(6.4, 4.4))
            ax = fig.add_subplot()
            widths = sorted({p["width"] for p in pts})
            methods = sorted({p["method"] for p in pts})
            markers = "osD^v<>PX*"
            for i, meth in enumerate(methods):
                sel = [p for p in pts if p["method"] == meth]
                ax.scatter(
                    [max(p[kind], 0.5) for p in sel],
                    [max(p["max_abs"], 1e-7) for p in sel],
                    marker=markers[i % len(markers)],
                    label=meth,
                    s=22,
                    alpha=0.85,
                )
            for w in widths:
                front = pareto_front(
                    (max(p[kind], 0.5), p["max_abs"], p) for p in pts if p["width"] == w
                )
                ax.step(
                    [f[0] for f in front],
                    [max(f[1], 1e-7) for f in front],
                    where="post",
                    linewidth=0.8,
                    alpha=0.6,
                    label=f"front, {w}-bit out",
                )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(f"{kind} (yosys synth_xilinx, {args.family})")
            ax.set_ylabel("max |error| vs float64")
            ax.set_title(f"{op}: max error vs {kind}s, all methods")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize="x-small", ncol=2)
            fig.tight_layout()
            fig.savefig(OUT / f"pareto_{op}_{kind.lower()}.png", dpi=120)
        lines += [
            f"### {op}",
            "",
            f"![{op} LUT](pareto_{op}_lut.png) ![{op} DSP](pareto_{op}_dsp.png)",
            "",
            "| out bits | method | fields (vs the default spec; out_fmt = out bits) | LUT | FF "
            "| DSP | BRAM36 | max abs err | max LSB "
            "| front |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for w in sorted({p["width"] for p in pts}):
            sel = sorted(
                (p for p in pts if p["width"] == w), key=lambda p: (p["LUT"], p["max_abs"])
            )
            lut_front = {id(f[2]) for f in pareto_front((p["LUT"], p["max_abs"], p) for p in sel)}
            dsp_front = {id(f[2]) for f in pareto_front((p["DSP"], p["max_abs"], p) for p in sel)}
            for p in sel:
                mark = ("**front**" if id(p) in lut_front else "") + (
                    " *dsp*" if id(p) in dsp_front else ""
                )
                lines.append(
                    f"| {w} | {p['method']} | {p['describe']} | {p['LUT']} | {p['FF']} | "
                    f"{p['DSP']} | {p['BRAM']:g} | {p['max_abs']:.3g} | {p['max_lsb']:.3g} | "
                    f"{mark.strip()} |"
                )
        lines.append("")
    (OUT / "pareto.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT / 'pareto.md'} ({len(points)} specs)")


if __name__ == "__main__":
    main()
