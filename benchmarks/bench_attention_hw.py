"""Fused attention row vs the two-pass schedule in hardware: area, storage, latency,
throughput (issue 16's headline comparison; accuracy is bench_attention.py's).

* fused: ``hwa_attention_row`` synthesised with yosys (``synth_xilinx``) at d_k = d_v = D,
  twice: all D output lanes at once (``out_lanes = D``, D o·r multipliers) and with one
  o·r multiplier time-shared over the D lanes (``out_lanes = 1``); at each N, keys/cycle
  and latency (the row's last key -> its output, the minimum over the rows: a key that
  raises the running max makes the keys behind it wait) measured in cocotb + Verilator
  on 6 rows of N random keys;
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
    attention_timing,
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
    rng = np.random.default_rng(1)
    lanes = {"all lanes": d, "1 o·r mult.": 1}
    fused: dict[str, dict] = {}
    for name, out_lanes in lanes.items():
        params, mems = attention_config(spec, d, d, out_lanes=out_lanes)
        f = synthesize_top(ATTENTION_TOP, list(ATTENTION_SOURCES), params, mems, family=args.family)
        print(f"fused ({name}) synth {f['seconds']:.0f} s (cached {f['cached']})", flush=True)
        fused[name] = f
    tm = attention_timing(spec, d, d)
    hw = spec.hw_params(d, d)
    vd = tm.v_entries
    queue_bits = tm.queue * (hw["IN_W"] + 4) + vd * d * spec.v_fmt.width
    fa, fs = fused["all lanes"], fused["1 o·r mult."]

    # the two-pass parts without an RTL unit (estimates)
    pw, vw = sm.out_fmt.width, spec.v_fmt.width
    qk_dsp = d * dsp_count(spec.q_fmt.width, spec.k_fmt.width)
    pv_dsp = d * dsp_count(pw, vw)
    for name, f in fused.items():
        lines.append(
            f"* Fused unit, {name} (`hwa_attention_row`, d_k = d_v = {d}, yosys `synth_xilinx "
            f"-family {args.family}`, {f['seconds']:.0f} s): LUT {f['LUT']}, FF {f['FF']}, "
            f"DSP {f['DSP']}, BRAM36 {f['BRAM']:g}, LUTRAM {f['LUTRAM']}; a key queue of "
            f"{tm.queue} keys and a V buffer of {vd} values ({queue_bits} bits, the same at "
            f"every N); latency and keys/cycle per N in the table."
        )
    lines.append("")
    lines.append(
        "| N | fused state bits | two-pass storage bits | fused LUT / FF / DSP / BRAM36, all "
        "lanes | fused, 1 o·r mult. | two-pass softmax unit LUT / FF / DSP / BRAM36 (yosys) | "
        "+ q·k, P·V DSP (est.) | + V buffer BRAM36 (est.) | latency fused all / 1 mult. / "
        "two-pass | keys/cycle fused all / 1 mult. / two-pass |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for n in NS:
        bits = spec.buffer_bits(n, d)
        s = synthesize(sm, row_max=n, family=args.family)
        print(f"softmax row_max {n}: {s['seconds']:.0f} s (cached {s['cached']})", flush=True)
        q = spec.q_fmt.quantize(rng.normal(0, 1, (6, d)))
        k = spec.k_fmt.quantize(rng.normal(0, 1, (6, n, d)))
        v = spec.v_fmt.quantize(rng.normal(0, 1, (6, n, d)))
        for f, out_lanes in zip(fused.values(), lanes.values(), strict=True):
            fres = simulate_attention(spec, q, k, v, out_lanes=out_lanes)
            assert fres.passed, fres.stats
            f["lat"], f["kpc"] = fres.stats["latency"]["min"], fres.stats["keys_per_cycle"]
        rows = [sm.in_fmt.quantize(rng.normal(0, 2, n)) for _ in range(6)]
        sres = simulate(sm, rows, row_max=n)
        assert sres.passed, sres.stats.get("summary")
        s_lat = sres.stats["latency_last"]["max"]  # last score in -> last P out
        v_bram = math.ceil(2 * n * d * vw / 36864)
        # two-pass: P·V finishes 2 cycles (MAC pipeline) after the last P
        tp_lat = s_lat + 2
        area = [f"{f['LUT']} / {f['FF']} / {f['DSP']} / {f['BRAM']:g}" for f in (fa, fs)]
        lines.append(
            f"| {n} | {bits['fused']} | {bits['two_pass']} | {area[0]} | {area[1]} | "
            f"{s['LUT']} / {s['FF']} / {s['DSP']} / {s['BRAM']:g} | {qk_dsp} + {pv_dsp} | "
            f"{v_bram} | {fa['lat']} / {fs['lat']} / {tp_lat} | {fa['kpc']:.2f} / "
            f"{fs['kpc']:.2f} / {sres.stats['throughput_in']:.2f} |"
        )
    lines.append("")
    lines.append(f"(bench wall time {time.perf_counter() - t0:.0f} s)")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
