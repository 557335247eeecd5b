"""cocotb test run by :func:`hwapprox.rtl_sim.runner.run_job` on every unit.

The job file named by ``$HWAPPROX_RTL_JOB`` (JSON) holds:

* ``spec``: ``spec.to_config()`` (rebuilt with ``spec_from_config``);
* ``rows``: list of rows of raw input codes (each row ends with ``tlast``);
* ``gamma``/``beta``: raw codes for LayerNorm units (optional);
* ``masks``: one list of 0/1 per row (softmax units: ``s_axis_tuser``, 1 = masked
  out; the model gets the same bits as ``mask``; optional);
* ``idle``/``backpressure``: per-cycle pause probabilities; ``seed``;
* ``corrupt``: index of one expected output to falsify (negative test);
* ``row_max``: rows longer than this are sent too, expecting no output and one
  ``row_err`` pulse each (row-wise units; optional);
* ``expect_extra``: expect this many outputs more than the rows give, so that
  :meth:`~hwapprox.rtl_sim.tb.bench.UnitTB.wait_done` must time out and raise
  (negative test); ``timeout_cycles`` overrides its timeout;
* ``probe_ready``: check every cycle that ``s_axis_tready`` does not follow a flip
  of ``m_axis_tready`` between clock edges (:class:`~hwapprox.rtl_sim.tb.axis.ReadyProbe`);
* ``stats_file``: where the measurements are written (JSON);
* ``phases``: optional list of field overrides (e.g. ``idle``, ``backpressure``,
  ``seed``, ``stats_file``), one cocotb test each, run one after another in the
  same simulator process, each from its own reset
  (:func:`~hwapprox.rtl_sim.runner.run_phases`).

The scoreboard compares every output with ``spec.model`` bit for bit and the
test fails unless all outputs matched, none is missing or extra, the run did not
time out, the output stream kept the AXI-Stream handshake rules
(:class:`~hwapprox.rtl_sim.tb.axis.AxisMonitor`) and ``row_err`` pulsed once
per overlong row and never otherwise. ``stats["error"]`` holds the message of
the :class:`~hwapprox.rtl_sim.tb.bench.StreamError` that ``wait_done`` raised.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import cocotb
import numpy as np

from hwapprox.approx.registry import spec_from_config
from hwapprox.rtl_sim.tb.bench import StreamError, UnitTB


def load_job() -> dict[str, Any]:
    path = os.environ.get("HWAPPROX_RTL_JOB")
    if not path:
        raise RuntimeError("HWAPPROX_RTL_JOB is not set; run through hwapprox.rtl_sim.runner")
    return json.loads(Path(path).read_text())


def _n_phases() -> int:
    """How many phases the job asks for (read when cocotb imports this module)."""
    if not os.environ.get("HWAPPROX_RTL_JOB"):
        return 1
    return len(load_job().get("phases") or ()) or 1


@cocotb.test()
@cocotb.parametrize(phase=list(range(_n_phases())))
async def stream_matches_model(dut: Any, phase: int) -> None:
    """Stream the job's rows through the unit; every output equals the model's."""
    job = load_job()
    if job.get("phases"):
        job = {**job, **job["phases"][phase]}
    spec = spec_from_config(job["spec"])
    tb = UnitTB(
        dut,
        spec,
        idle=float(job.get("idle", 0.0)),
        backpressure=float(job.get("backpressure", 0.0)),
        seed=int(job.get("seed", 0)),
        probe_ready=bool(job.get("probe_ready", False)),
    )
    await tb.reset()
    if job.get("gamma") is not None:
        await tb.load_affine(job["gamma"], job["beta"])
    rows = [np.asarray(r, dtype=np.int64) for r in job["rows"]]
    masks = job.get("masks")
    if masks is not None:
        masks = [np.asarray(m, dtype=bool) for m in masks]
    tb.send_rows(rows, corrupt=job.get("corrupt"), row_max=job.get("row_max"), masks=masks)
    extra = int(job.get("expect_extra", 0))
    tb.n_expected += extra
    timeout = job.get("timeout_cycles")
    try:
        stats = await tb.wait_done(None if timeout is None else int(timeout))
    except StreamError as exc:
        stats = dict(exc.stats, passed=False, error=str(exc))
        Path(job["stats_file"]).write_text(json.dumps(stats))
        raise
    stats["numba_loaded"] = "numba" in sys.modules  # (HWAPPROX_NUMBA=0: the numpy path)
    Path(job["stats_file"]).write_text(json.dumps(stats))
    tb.scoreboard.finish()
