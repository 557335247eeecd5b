"""cocotb test of ``hwa_attention_row`` (run by
:func:`hwapprox.rtl_sim.attention.simulate_attention`).

The job file (``$HWAPPROX_RTL_JOB``, JSON) holds the raw codes ``q`` ``[R][D]``,
``k`` ``[R][N][D]``, ``v`` ``[R][N][Dv]``, ``mask`` ``[R][N]`` (1 = masked), the model's
``expected`` outputs ``[R][Dv]`` (computed by the caller with
``AttentionRowSpec.model``, possibly with one value falsified), the lane ``widths``,
``idle``/``backpressure`` pause probabilities and ``seed``. Each of the three input
streams pauses independently. Every output beat is unpacked into lanes and compared
with the expected row, in order; the test fails on any difference, a missing or an
extra beat, a timeout or a broken AXI-Stream rule on the output.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from hwapprox.rtl_sim.tb.axis import (
    AxisMonitor,
    AxisSink,
    AxisSource,
    CycleCounter,
    no_pauses,
    random_pauses,
)
from hwapprox.rtl_sim.tb.stream_test import load_job

PERIOD = 10  # ns


def _pack(values: list[int], width: int) -> int:
    mask = (1 << width) - 1
    out = 0
    for i, v in enumerate(values):
        out |= (int(v) & mask) << (i * width)
    return out


def _unpack(word: int, width: int, lanes: int) -> list[int]:
    out = []
    for i in range(lanes):
        u = (word >> (i * width)) & ((1 << width) - 1)
        out.append(u - (1 << width) if u >> (width - 1) else u)
    return out


@cocotb.test()
async def attention_matches_model(dut: Any) -> None:
    job = load_job()
    w = job["widths"]
    dim_v = int(job["dim_v"])
    idle, bp, seed = float(job["idle"]), float(job["backpressure"]), int(job["seed"])
    from cocotb.simtime import convert

    counter = CycleCounter(int(convert(PERIOD * 1000, "ps", to="step")))
    Clock(dut.clk, PERIOD, unit="ns").start()

    def pauses(p: float, s: int) -> Any:
        return random_pauses(p, s) if p > 0 else no_pauses()

    src_q = AxisSource(dut, "s_q", dut.clk, counter, pauses(idle, seed + 1))
    src_k = AxisSource(dut, "s_k", dut.clk, counter, pauses(idle, seed + 2))
    src_v = AxisSource(dut, "s_v", dut.clk, counter, pauses(idle, seed + 3))
    sink = AxisSink(dut, "m_axis", dut.clk, counter, pauses(bp, seed + 4), signed=False)
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    monitor = AxisMonitor(dut, "m_axis", dut.clk, counter)

    t0 = time.perf_counter()
    start = counter.cycle
    for q, k, v, m in zip(job["q"], job["k"], job["v"], job["mask"], strict=True):
        src_q.send([_pack(q, w["Q_W"])], last_at_end=False)
        src_k.send([_pack(row, w["K_W"]) for row in k], user=[int(b) for b in m])
        src_v.send([_pack(row, w["V_W"]) for row in v], last_at_end=False)
    expected: list[list[int]] = job["expected"]
    n_keys = sum(len(k) for k in job["k"])
    timeout = 200 + 20 * (n_keys + len(expected)) * (1 + int(10 * max(idle, bp)))
    timed_out = True
    for _ in range(timeout):
        await RisingEdge(dut.clk)
        if len(sink.beats) >= len(expected) and src_k.idle:
            timed_out = False
            break
    await ClockCycles(dut.clk, 20)  # let any extra output show up
    cycles = counter.cycle - start

    got = [_unpack(b.data, w["Y_W"], dim_v) for b in sink.beats]
    mismatches = []
    for i, (g, e) in enumerate(zip(got, expected, strict=False)):
        if g != e:
            mismatches.append(f"row {i}: got {g}, expected {e}")
    # last key accepted -> output beat, per row
    last_keys = [b.cycle for b in src_k.sent if b.last]
    latency = [o.cycle - lk for o, lk in zip(sink.beats, last_keys, strict=False)]
    ks = src_k.sent
    stats: dict[str, Any] = {
        "n_rows": len(expected),
        "n_keys": len(ks),
        "n_out": len(got),
        "matched": sum(g == e for g, e in zip(got, expected, strict=False)),
        "mismatches": len(mismatches),
        "first_mismatches": mismatches[:5],
        "missing": max(0, len(expected) - len(got)),
        "unexpected": max(0, len(got) - len(expected)),
        "timed_out": timed_out,
        "axis_violations": monitor.violations[:10],
        "latency": {"min": min(latency, default=0), "max": max(latency, default=0)},
        "keys_per_cycle": len(ks) / (ks[-1].cycle - ks[0].cycle + 1) if ks else 0.0,
        "sim_cycles": cycles,
        "wall_seconds": time.perf_counter() - t0,
    }
    stats["passed"] = (
        not timed_out
        and not mismatches
        and stats["missing"] == 0
        and stats["unexpected"] == 0
        and not monitor.violations
        and all(b.last for b in sink.beats)
    )
    Path(job["stats_file"]).write_text(json.dumps(stats))
    assert stats["passed"], json.dumps(stats)[:2000]
