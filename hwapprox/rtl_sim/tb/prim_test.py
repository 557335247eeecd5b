"""cocotb test of the arithmetic primitives against :mod:`hwapprox.fixed`.

Drives ``hwa_prim_check`` (every rounding mode of ``hwa_round_shift``, every
overflow mode of ``hwa_sat``) with every input code and shift (or a seeded
sample) and compares with ``round_shift`` and ``FixedFormat.saturate``.
Writes ``{"passed", "checked", "mismatches"}`` to the job's ``stats_file``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cocotb
import numpy as np
from cocotb.triggers import Timer

from hwapprox.fixed import FixedFormat, Overflow, Rounding, round_shift
from hwapprox.rtl_sim.tb.stream_test import load_job

ROUNDINGS = [
    Rounding.TRN,
    Rounding.TRN_ZERO,
    Rounding.RND,
    Rounding.RND_ZERO,
    Rounding.RND_INF,
    Rounding.RND_MIN_INF,
    Rounding.RND_CONV,
]
OVERFLOWS = [Overflow.WRAP, Overflow.SAT, Overflow.SAT_ZERO, Overflow.SAT_SYM]


def _field(value: int, i: int, w: int, signed: bool) -> int:
    v = (value >> (i * w)) & ((1 << w) - 1)
    if signed and v >= 1 << (w - 1):
        v -= 1 << w
    return v


@cocotb.test()
async def primitives_match_fixed(dut: Any) -> None:
    """Every (x, sh) through every mode equals hwapprox.fixed."""
    job = load_job()
    in_w, sh_w, sat_w = len(dut.x), len(dut.sh), len(dut.s) // 4
    corrupt = job.get("corrupt")
    xs = np.arange(-(1 << (in_w - 1)), 1 << (in_w - 1), dtype=np.int64)
    rng = np.random.default_rng(int(job.get("seed", 0)))
    pairs = [(int(x), int(s)) for x in xs for s in rng.choice(1 << sh_w, 3, replace=False)]
    sfmt = [FixedFormat(sat_w, sat_w, True, overflow=o) for o in OVERFLOWS]
    ufmt = [FixedFormat(sat_w, sat_w, False, overflow=o) for o in OVERFLOWS]
    bad: list[str] = []
    checked = 0
    for k, (x, sh) in enumerate(pairs):
        dut.x.value = x & ((1 << in_w) - 1)
        dut.sh.value = sh
        await Timer(1, unit="ns")
        y, s, u = int(dut.y.value), int(dut.s.value), int(dut.u.value)
        for m, mode in enumerate(ROUNDINGS):
            want = int(round_shift(np.int64(x), sh, mode))
            want = _field(want & ((1 << in_w) - 1), 0, in_w, True)
            if corrupt is not None and k == corrupt and m == 0:
                want ^= 1
            got = _field(y, m, in_w, True)
            checked += 1
            if got != want:
                bad.append(f"round_shift({x}, {sh}, {mode}) rtl={got} fixed={want}")
        for o in range(4):
            for fmts, val, signed in ((sfmt, s, True), (ufmt, u, False)):
                want = int(fmts[o].saturate(np.int64(x)))
                got = _field(val, o, sat_w, signed)
                checked += 1
                if got != want:
                    bad.append(f"saturate({x}) into {fmts[o]} rtl={got} fixed={want}")
    stats = {"passed": not bad, "checked": checked, "mismatches": len(bad), "first": bad[:10]}
    Path(job["stats_file"]).write_text(json.dumps(stats))
    assert not bad, f"{len(bad)} mismatches of {checked}:\n" + "\n".join(bad[:10])
