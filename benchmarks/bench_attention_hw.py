"""Fused attention row vs the two-pass schedule in hardware: area, storage, latency,
throughput (issue 16's headline comparison; accuracy is bench_attention.py's).

* fused: ``hwa_attention_row`` synthesised with yosys (``synth_xilinx``) at d_k = d_v = D,
  its latency and keys/cycle measured in cocotb + Verilator;
* two-pass: ``hwa_softmax_online`` with a row buffer of N scores, synthesised at each N,
  its latency measured, plus the parts it needs that have no RTL unit here, estimated
  and marked ``est.``: the q·k dot product (D multipliers, as in the fused unit), the V
  buffer (the N x D_v values held until the reciprocal is known: BRAM36 =
  ceil(2·N·D_v·V_W / 36864), double-buffered so the next row streams in) and the P·V
  MACs (D_v multipliers P_W x V_W, one DSP each at <= 25 x 18 bits).

Usage: python benchmarks/bench_attention_hw.py [--dim 16] [--family 7series] [--out FILE]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from hwapprox.approx.attention import AttentionRowSpec
from hwapprox.rtl_sim.attention import (
    ATTENTION_SOURCES,
    ATTENTION_TOP,
    attention_config,
    simulate_attention,
)
from hwapprox.rtl_sim.sim import simulate
from hwapprox.rtl_sim.synth import synthesize, synthesize_top

NS = (64, 128, 256, 512, 1024)


def dsp_count(a: int, b: int) -> int:
    """DSP48E1 (25 x 18 signed) slices for one a x b multiplier (tiled)."""
    return math.ceil(a / 24) * math.ceil(b / 17) if a > 1 and b > 1 else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=16, help="d_k = d_v")
    ap.add_argument("--family", default="7series")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    d = args.dim
    spec = AttentionRowSpec(scale=1 / math.sqrt(d))
    sm = spec.softmax
    lines = []

    t0 = time.perf_counter()
    params, mems = attention_config(spec, d, d)
    fused = synthesize_top(ATTENTION_TOP, list(ATTENTION_SOURCES), params, mems, family=args.family)
    print(f"fused synth {fused['seconds']:.0f} s (cached {fused['cached']})", flush=True)
    rng = np.random.default_rng(1)
    n_sim = 64
    q = spec.q_fmt.quantize(rng.normal(0, 1, (8, d)))
    k = spec.k_fmt.quantize(rng.normal(0, 1, (8, n_sim, d)))
    v = spec.v_fmt.quantize(rng.normal(0, 1, (8, n_sim, d)))
    fres = simulate_attention(spec, q, k, v)
    assert fres.passed, fres.stats
    f_lat = fres.stats["latency"]["max"]
    f_kpc = fres.stats["keys_per_cycle"]

    # the two-pass parts without an RTL unit (estimates)
    pw, vw = sm.out_fmt.width, spec.v_fmt.width
    qk_dsp = d * dsp_count(spec.q_fmt.width, spec.k_fmt.width)
    pv_dsp = d * dsp_count(pw, vw)
    lines.append(
        f"Fused unit (`hwa_attention_row`, d_k = d_v = {d}, yosys `synth_xilinx -family "
        f"{args.family}`, {fused['seconds']:.0f} s): LUT {fused['LUT']}, FF {fused['FF']}, "
        f"DSP {fused['DSP']}, BRAM36 {fused['BRAM']:g}, LUTRAM {fused['LUTRAM']}; "
        f"measured {f_kpc:.2f} keys/cycle, last key -> output {f_lat} cycles, for every N "
        f"(no per-key storage)."
    )
    lines.append("")
    lines.append(
        "| N | fused state bits | two-pass storage bits | fused LUT / FF / DSP / BRAM36 | "
        "two-pass softmax unit LUT / FF / DSP / BRAM36 (yosys) | + q·k, P·V DSP (est.) | "
        "+ V buffer BRAM36 (est.) | fused latency | two-pass latency | keys/cycle fused / "
        "two-pass |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for n in NS:
        bits = spec.buffer_bits(n, d)
        s = synthesize(sm, row_max=n, family=args.family)
        print(f"softmax row_max {n}: {s['seconds']:.0f} s (cached {s['cached']})", flush=True)
        rows = [sm.in_fmt.quantize(rng.normal(0, 2, n)) for _ in range(6)]
        sres = simulate(sm, rows, row_max=n)
        assert sres.passed, sres.stats.get("summary")
        s_lat = sres.stats["latency_last"]["max"]  # last score in -> last P out
        v_bram = math.ceil(2 * n * d * vw / 36864)
        # two-pass: P·V finishes 2 cycles (MAC pipeline) after the last P
        tp_lat = s_lat + 2
        lines.append(
            f"| {n} | {bits['fused']} | {bits['two_pass']} | {fused['LUT']} / {fused['FF']} / "
            f"{fused['DSP']} / {fused['BRAM']:g} | {s['LUT']} / {s['FF']} / {s['DSP']} / "
            f"{s['BRAM']:g} | {qk_dsp} + {pv_dsp} | {v_bram} | {f_lat} | {tp_lat} | "
            f"{f_kpc:.2f} / {sres.stats['throughput_in']:.2f} |"
        )
    lines.append("")
    lines.append(f"(bench wall time {time.perf_counter() - t0:.0f} s)")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
