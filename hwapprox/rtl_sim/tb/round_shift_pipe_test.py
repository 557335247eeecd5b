"""cocotb test of ``hwa_round_shift_pipe`` against :func:`hwapprox.fixed.round_shift`.

Each cycle drives seeded random ``x`` (signed ``IN_W``), ``sh`` (``SH_W`` bits, shifts
beyond ``IN_W + 1`` included) and a random enable; the value taken at an enabled cycle
must appear on ``y`` after three enabled cycles, equal to ``round_shift(x, sh, mode)``
reduced to a signed ``OUT_W``-bit value. Edge operands (the most negative and largest
codes, 0, -1, exact halves at the shift) are mixed in. Writes ``{"passed", "checked",
"mismatches", "first"}``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from hwapprox.approx.hwparams import ROUNDING_CODES
from hwapprox.fixed import round_shift
from hwapprox.rtl_sim.tb.mul_pipe_test import _wrap
from hwapprox.rtl_sim.tb.stream_test import load_job

MODES = {code: mode for mode, code in ROUNDING_CODES.items()}


def _pick(rng: random.Random, w: int, sh: int) -> int:
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    r = rng.random()
    if r < 0.15:
        return rng.choice([lo, hi, 0, -1, 1, lo + 1, hi - 1])
    if r < 0.35 and 0 < sh < w:  # an exact half, or a half +- 1, at the shift
        v = (rng.randint(lo >> sh, hi >> sh) << sh) + (1 << (sh - 1)) + rng.choice([-1, 0, 1])
        return max(lo, min(hi, v))
    return rng.randint(lo, hi)


@cocotb.test()
async def round_shift_pipe_matches_fixed(dut: Any) -> None:
    job = load_job()
    in_w, sh_w, out_w, mode = (int(job[k]) for k in ("IN_W", "SH_W", "OUT_W", "MODE"))
    rng = random.Random(int(job.get("seed", 0)))
    Clock(dut.clk, 10, unit="ns").start()
    pending: list[int] = []
    checked, bad, first = 0, 0, []
    dut.en.value = 0
    await FallingEdge(dut.clk)
    corrupt_at = int(job.get("corrupt", 0))
    for _ in range(int(job.get("cycles", 3000))):
        sh = rng.randint(0, (1 << sh_w) - 1)
        x = _pick(rng, in_w, sh)
        en = rng.random() < 0.8
        dut.x.value = x & ((1 << in_w) - 1)
        dut.sh.value = sh
        dut.en.value = int(en)
        await RisingEdge(dut.clk)
        await ReadOnly()
        if en:
            pending.append(_wrap(int(round_shift(x, sh, MODES[mode])), out_w))
            if len(pending) == 3:  # y now holds the value taken three enables ago
                want = pending.pop(0)
                got = dut.y.value.to_signed()
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
