"""cocotb test of a token-stream unit: one wide beat per token in, one per token out
(``hwa_linear``, ``hwa_encoder_block``; run by :mod:`hwapprox.rtl_sim.linear` and
:mod:`hwapprox.rtl_sim.block`).

The job file (``$HWAPPROX_RTL_JOB``, JSON) holds ``tokens`` (the raw input codes of each
token, ``in_w`` bits per lane, lane 0 in the low bits), ``last`` (the ``tlast`` bit of
each token), optionally ``user`` (the ``s_axis_tuser`` bit of each token), the model's
``expected`` outputs per token (``out_w`` bits per lane, ``out_signed``), the
``idle``/``backpressure`` pause probabilities, ``seed``, ``probe_ready`` (fail when
``s_axis_tready`` follows a flip of ``m_axis_tready`` between clock edges),
optionally ``watch`` (an internal signal whose changes are recorded with their cycle
in ``stats["watch"]``: the encoder block's phase register) and ``stats_file``.

Every output beat is unpacked into lanes and compared with the expected token in order;
the test fails on any difference, a missing or an extra beat, a wrong ``tlast``, a
timeout, a broken AXI-Stream rule on the output or a combinational ready path. The
stats hold ``cycles`` (first input transfer -> last output transfer), ``out_gaps``
(cycles between consecutive output beats), ``latency`` (input transfer of token i ->
output transfer of token i) and the mismatches.
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from hwapprox.rtl_sim.tb.axis import (
    AxisMonitor,
    AxisSink,
    AxisSource,
    CycleCounter,
    ReadyProbe,
    no_pauses,
    random_pauses,
)
from hwapprox.rtl_sim.tb.stream_test import load_job

PERIOD = 10  # ns


def pack(values: list[int], width: int) -> int:
    """Lanes of ``width``-bit two's-complement codes into one word, lane 0 lowest."""
    mask = (1 << width) - 1
    out = 0
    for i, v in enumerate(values):
        out |= (int(v) & mask) << (i * width)
    return out


def unpack(word: int, width: int, lanes: int, signed: bool) -> list[int]:
    """The inverse of :func:`pack` (signed or unsigned lanes)."""
    out = []
    for i in range(lanes):
        u = (word >> (i * width)) & ((1 << width) - 1)
        out.append(u - (1 << width) if signed and u >> (width - 1) else u)
    return out


async def _watch(sig: Any, clk: Any, counter: CycleCounter, out: list[tuple[int, int]]) -> None:
    """Record (cycle, value) whenever ``sig`` changes (sampled after each rising edge)."""
    prev = None
    while True:
        await RisingEdge(clk)
        await ReadOnly()
        try:
            v = int(sig.value)
        except ValueError:
            continue
        if v != prev:
            out.append((counter.cycle, v))
            prev = v


@cocotb.test()
async def tokens_match_model(dut: Any) -> None:
    job = load_job()
    in_w, out_w = int(job["in_w"]), int(job["out_w"])
    out_signed = bool(job["out_signed"])
    expected: list[list[int]] = job["expected"]
    lanes = len(expected[0]) if expected else 0
    idle, bp, seed = float(job["idle"]), float(job["backpressure"]), int(job["seed"])
    from cocotb.simtime import convert

    counter = CycleCounter(int(convert(PERIOD * 1000, "ps", to="step")))
    Clock(dut.clk, PERIOD, unit="ns").start()

    def pauses(p: float, s: int) -> Any:
        return random_pauses(p, s) if p > 0 else no_pauses()

    src = AxisSource(dut, "s_axis", dut.clk, counter, pauses(idle, seed * 2 + 1))
    sink = AxisSink(dut, "m_axis", dut.clk, counter, pauses(bp, seed * 2 + 2), signed=False)
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    monitor = AxisMonitor(dut, "m_axis", dut.clk, counter)
    probe = ReadyProbe(dut, dut.clk, counter, "s_axis", "m_axis") if job["probe_ready"] else None

    changes: list[tuple[int, int]] = []
    if job.get("watch"):
        cocotb.start_soon(_watch(getattr(dut, job["watch"]), dut.clk, counter, changes))
    t0 = time.perf_counter()
    user = job.get("user")
    for i, (tok, last) in enumerate(zip(job["tokens"], job["last"], strict=True)):
        src.send(
            [pack(tok, in_w)],
            last_at_end=bool(last),
            user=None if user is None else [int(user[i])],
        )
    per_token = int(job.get("cycles_hint", 64))
    timeout = 200 + per_token * len(expected) * (1 + int(10 * max(idle, bp)))
    timed_out = True
    for _ in range(timeout):
        await RisingEdge(dut.clk)
        if len(sink.beats) >= len(expected) and src.idle:
            timed_out = False
            break
    await ClockCycles(dut.clk, 20 + per_token)  # let any extra output show up

    got = [unpack(b.data, out_w, lanes, out_signed) for b in sink.beats]
    mismatches = []
    for i, (g, e) in enumerate(zip(got, expected, strict=False)):
        if g != e:
            diff = [j for j in range(lanes) if g[j] != e[j]]
            mismatches.append(f"token {i}: lanes {diff[:8]} got {g[:8]}, expected {e[:8]}")
    lasts_ok = [b.last == bool(la) for b, la in zip(sink.beats, job["last"], strict=False)]
    sent, outs = src.sent, sink.beats
    latency = [o.cycle - s.cycle for s, o in zip(sent, outs, strict=False)]
    gaps = [b.cycle - a.cycle for a, b in itertools.pairwise(outs)]
    stats: dict[str, Any] = {
        "n_tokens": len(expected),
        "n_out": len(got),
        "matched": sum(g == e for g, e in zip(got, expected, strict=False)),
        "mismatches": len(mismatches),
        "first_mismatches": mismatches[:5],
        "missing": max(0, len(expected) - len(got)),
        "unexpected": max(0, len(got) - len(expected)),
        "tlast_errors": lasts_ok.count(False),
        "timed_out": timed_out,
        "axis_violations": monitor.violations[:10],
        "ready_comb": [] if probe is None else probe.changes[:10],
        "latency": latency,
        "out_gaps": gaps,
        "cycles": (outs[-1].cycle - sent[0].cycle) if outs and sent else 0,
        "in_cycles": [s.cycle for s in sent],
        "out_cycles": [o.cycle for o in outs],
        "wall_seconds": time.perf_counter() - t0,
        "watch": changes,
    }
    stats["passed"] = (
        not timed_out
        and not mismatches
        and stats["missing"] == 0
        and stats["unexpected"] == 0
        and stats["tlast_errors"] == 0
        and not monitor.violations
        and not stats["ready_comb"]
    )
    Path(job["stats_file"]).write_text(json.dumps(stats))
    assert stats["passed"], json.dumps({k: stats[k] for k in stats if "cycles" not in k})[:2000]
