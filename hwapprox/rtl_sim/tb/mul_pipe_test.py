"""cocotb test of ``hwa_mul_pipe`` against Python integers.

Each cycle drives seeded random ``a`` (signed ``A_W``), ``b`` (``B_W``, signed when
``B_SIGNED``) and a random enable; the product of the inputs taken at an enabled
cycle must appear on ``p`` after 3 + ``IN_REG`` enabled cycles (the job's ``IN_REG``,
default 0), equal to ``a * b`` reduced to a signed ``P_W``-bit value. Edge operands
(the most negative and largest codes, 0, -1) are mixed in. Writes ``{"passed",
"checked", "mismatches", "first"}``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from hwapprox.rtl_sim.tb.stream_test import load_job


def _wrap(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


def _pick(rng: random.Random, w: int, signed: bool) -> int:
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    edge = [lo, hi, 0, -1 if signed else 1, lo + 1, hi - 1]
    return rng.choice(edge) if rng.random() < 0.2 else rng.randint(lo, hi)


@cocotb.test()
async def mul_pipe_matches_integers(dut: Any) -> None:
    job = load_job()
    a_w, b_w, p_w, b_signed = (int(job[k]) for k in ("A_W", "B_W", "P_W", "B_SIGNED"))
    rng = random.Random(int(job.get("seed", 0)))
    Clock(dut.clk, 10, unit="ns").start()
    lat = 3 + int(job.get("IN_REG", 0))
    pending: list[int] = []  # expected products in flight (lat enabled stages)
    checked, bad, first = 0, 0, []
    dut.en.value = 0
    await FallingEdge(dut.clk)
    corrupt_at = int(job.get("corrupt", 0))
    for _ in range(int(job.get("cycles", 3000))):
        a, b = _pick(rng, a_w, True), _pick(rng, b_w, bool(b_signed))
        en = rng.random() < 0.8
        dut.a.value = a & ((1 << a_w) - 1)
        dut.b.value = b & ((1 << b_w) - 1)
        dut.en.value = int(en)
        await RisingEdge(dut.clk)
        await ReadOnly()
        if en:
            pending.append(_wrap(a * b, p_w))
            if len(pending) == lat:  # p now holds the product taken lat enables ago
                want = pending.pop(0)
                got = dut.p.value.to_signed()
                checked += 1
                if checked == corrupt_at:
                    want ^= 1  # negative test: a wrong expected value must fail
                if got != want:
                    bad += 1
                    if len(first) < 5:
                        first.append(f"check {checked}: got {got}, want {want}")
        await FallingEdge(dut.clk)
    stats = {"passed": bad == 0 and checked > 0, "checked": checked, "mismatches": bad}
    stats["first"] = first
    Path(job["stats_file"]).write_text(json.dumps(stats))
    assert bad == 0, first
