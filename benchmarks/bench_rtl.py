"""RTL units: throughput, latency, simulation speed, build time and resources.

For every unit (and method) at two format sets (the parameter sets of
``tests/rtl_cases.py``):

* **stream run** without stalls: GELU 8,192 elements in rows of 64; softmax
  and LayerNorm 32 back-to-back rows at each N in {16, 64, 256} (row buffer
  ``row_max = 256``), Gaussian inputs (seeded). Reports throughput (outputs
  per cycle from the first input to the last output, and the output rate
  while streaming), latency (first input -> first output and last input ->
  last output, per row, max over rows), the bit-exactness verdict of the
  scoreboard, and simulated cycles per second under cocotb;
* **build time** of the parameter set (from the build stamp; the Verilator
  runtime objects are shared between builds, so this is the design-specific
  part);
* **resources** (``--synth``): yosys ``synth_xilinx`` LUT/FF/DSP/BRAM for
  7-series (``--family`` to change), row_max = 64.

Targets: 1 element/cycle for every unit without backpressure; softmax
last input -> last output <= N + 16 for N <= 256.

Usage::

    .venv/bin/python benchmarks/bench_rtl.py [--synth] [--family 7series] [--only softmax]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from rtl_cases import CASES

from hwapprox.approx.registry import make_spec
from hwapprox.rtl_sim.sim import build_unit, simulate


def stream_rows(spec, n: int, count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    span = float(spec.in_fmt.max - spec.in_fmt.min)
    return [spec.in_fmt.quantize(rng.normal(0.0, span / 12, n)) for _ in range(count)]


def run_case(name: str, op: str, method: str, fields: dict, synth: bool, family: str) -> list[dict]:
    spec = make_spec(op, method, **fields)
    out = []
    row_max = 256
    sum_fmt = getattr(spec, "sum_fmt", None)  # shiftmax / ibert: integer sums, no format
    if op == "softmax" and sum_fmt is not None:
        row_max = min(row_max, int(sum_fmt.max))  # the sum must count the row
        if method == "softermax":  # its sum must stay below 2N (units._softmax_softermax)
            row_max = min(row_max, int(spec.sum_fmt.max) // 2)
    lengths = [64] if op == "gelu" else [16, 64, row_max]
    if op == "layernorm":
        spec = spec.replace(max_n=max(spec.max_n, row_max))
    info = build_unit(spec, row_max=0 if op == "gelu" else row_max)
    stamp = json.loads((info.build_dir / ".built").read_text())
    for n in lengths:
        count = 8192 // n if op == "gelu" else 32
        rows = stream_rows(spec, n, count, seed=n)
        t0 = time.perf_counter()
        res = simulate(spec, rows, row_max=row_max if op != "gelu" else None)
        wall = time.perf_counter() - t0
        st = res.stats
        out.append(
            {
                "case": name,
                "N": n,
                "elements": st.get("n_out"),
                "bit_exact": res.passed,
                "throughput": st.get("throughput"),
                "out_rate": st.get("throughput_out"),
                "lat_first_max": st.get("latency_first", {}).get("max"),
                "lat_last_max": st.get("latency_last", {}).get("max"),
                "cycles_per_s": st.get("cycles_per_second"),
                "sim_wall_s": wall,
                "build_s": stamp["seconds"],
            }
        )
    if synth:
        from hwapprox.rtl_sim.synth import synthesize

        s_spec = make_spec(op, method, **fields)
        r = synthesize(s_spec, row_max=64, family=family)
        out[0]["synth"] = {k: r[k] for k in ("LUT", "FF", "DSP", "BRAM", "LUTRAM", "CARRY")}
        out[0]["synth"]["seconds"] = r["seconds"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--synth", action="store_true", help="also run yosys synth_xilinx")
    ap.add_argument("--family", default="7series", choices=["7series", "ultrascale+"])
    ap.add_argument("--only", default=None, help="operator (gelu, softmax, layernorm)")
    ap.add_argument(
        "--cases", default=None, help="only cases whose name contains one of these (comma list)"
    )
    ap.add_argument("--json", type=Path, default=None, help="write all rows as JSON")
    args = ap.parse_args()
    rows = []
    for name, op, method, fields, _n in CASES:
        if args.only and op != args.only:
            continue
        if args.cases and not any(c in name for c in args.cases.split(",")):
            continue
        rows += run_case(name, op, method, fields, args.synth, args.family)
        print(f"# done {name}", file=sys.stderr, flush=True)
    print(
        "| case | N | elements | bit-exact | elem/cycle | out rate | lat first->first | "
        "lat last->last | N+16 | cycles/s | build s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")

    def f(v: object, spec: str) -> str:  # a missing figure (e.g. a cached build) as "-"
        return "-" if v is None else format(v, spec)

    for r in rows:
        target = r["N"] + 16 if r["case"].startswith("softmax") else ""
        print(
            f"| {r['case']} | {r['N']} | {r['elements']} | {'yes' if r['bit_exact'] else 'NO'} | "
            f"{f(r['throughput'], '.3f')} | {f(r['out_rate'], '.3f')} | {r['lat_first_max']} | "
            f"{r['lat_last_max']} | {target} | {f(r['cycles_per_s'], '.0f')} | "
            f"{f(r['build_s'], '.0f')} |"
        )
    if args.synth:
        print()
        print(f"Resources (yosys synth_xilinx, {args.family}, row_max = 64):")
        print()
        print("| case | LUT | FF | DSP | BRAM36 | LUTRAM | CARRY | synth s |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            s = r.get("synth")
            if s:
                print(
                    f"| {r['case']} | {s['LUT']} | {s['FF']} | {s['DSP']} | {s['BRAM']} | "
                    f"{s['LUTRAM']} | {s['CARRY']} | {s['seconds']:.0f} |"
                )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
