"""cocotb test of ``hwa_log_code`` (the softmax units' log-code post-stage) against
:func:`hwapprox.approx.softmax._common.log_encode`.

Drives every ``W``-bit probability code through the combinational stage and compares
each output code with the model's. The job names the stage's format: ``frac_bits``,
``signed``, ``form`` ("log2" or "log2sqrt2") and ``bits``; ``corrupt`` (a code index)
falsifies one expected value. Writes ``{"passed", "checked", "mismatches", "ties",
"codes", "first"}`` to the job's ``stats_file``: ``ties`` counts the inputs whose
normalised mantissa equals a threshold (where ``>`` and ``>=`` differ), ``codes`` the
distinct output codes seen.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cocotb
import numpy as np
from cocotb.triggers import Timer

from hwapprox.approx.softmax._common import log_code_constants, log_encode
from hwapprox.fixed import FixedFormat
from hwapprox.rtl_sim.tb.stream_test import load_job


@cocotb.test()
async def log_code_matches_model(dut: Any) -> None:
    """Every input code of the stage equals log_encode's code."""
    job = load_job()
    w, signed = len(dut.p), bool(job["signed"])
    fmt = FixedFormat(w, w - int(job["frac_bits"]), signed)
    codes = np.arange(fmt.min_raw, fmt.max_raw + 1, dtype=np.int64)
    want = log_encode(codes, fmt, str(job["form"]), int(job["bits"]))
    corrupt = job.get("corrupt")
    if corrupt is not None:
        want[int(corrupt)] ^= 1
    bad: list[str] = []
    seen: set[int] = set()
    for i, p in enumerate(codes.tolist()):
        dut.p.value = p & ((1 << w) - 1)
        await Timer(1, unit="ns")
        got = int(dut.c.value)
        seen.add(got)
        if got != int(want[i]):
            bad.append(f"p={p}: rtl {got}, model {int(want[i])}")
    # inputs on a threshold: the mantissa p << (W - 1 - floor(log2 p)) equals one
    pos = codes[codes > 0]
    e = np.frexp(pos.astype(np.float64))[1].astype(np.int64) - 1
    n = pos << (w - 1 - e)
    ties = int(np.isin(n, list(log_code_constants(w).values())).sum())
    stats = {
        "passed": not bad,
        "checked": int(codes.size),
        "mismatches": len(bad),
        "ties": ties,
        "codes": sorted(seen),
        "first": bad[:10],
    }
    Path(job["stats_file"]).write_text(json.dumps(stats))
    assert not bad, f"{len(bad)} mismatches of {codes.size}:\n" + "\n".join(bad[:10])
