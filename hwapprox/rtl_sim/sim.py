"""One call from a spec to a cycle-accurate, scoreboarded simulation.

>>> from hwapprox.approx.registry import make_spec          # doctest: +SKIP
>>> res = simulate(make_spec("gelu", "lut"), n_rows=20)      # doctest: +SKIP
>>> res.passed, res.stats["throughput"]                      # doctest: +SKIP
(True, 0.98)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx.base import ApproxSpec, Operator, SpecError
from hwapprox.rtl_sim.runner import RTL_DIR, BuildInfo, SimResult, build, run_job
from hwapprox.rtl_sim.tb.stimulus import make_rows
from hwapprox.rtl_sim.units import get_unit

__all__ = ["build_unit", "default_rows", "simulate"]


def build_unit(
    spec: ApproxSpec, *, row_max: int = 64, waves: bool = False, simulator: str = "verilator"
) -> BuildInfo:
    """Build (or reuse) the unit implementing ``spec`` with a row buffer of ``row_max``."""
    unit = get_unit(spec.operator, spec.method)
    params, mems = unit.config(spec, row_max if unit.rowwise else 0)
    return build(
        unit.toplevel,
        [RTL_DIR / s for s in unit.sources],
        params,
        mems,
        simulator=simulator,
        waves=waves,
    )


def default_rows(
    spec: ApproxSpec, n: int, n_rows: int, seed: int, *, edges: bool = True
) -> list[npt.NDArray[np.int64]]:
    """Edge rows plus ``n_rows`` seeded random rows of length ``n`` (see ``tb.stimulus``).

    Elementwise units with at most 12 input bits also get every input code
    (in rows of ``n``), so they are checked exhaustively.
    """
    rowwise = get_unit(spec.operator, spec.method).rowwise
    rows = make_rows(spec.in_fmt, n, n_rows, seed, edges=edges, vary_length=rowwise)
    if not rowwise and spec.in_fmt.width <= 12:
        codes = spec.in_fmt.all_codes()
        rows += [codes[i : i + n] for i in range(0, codes.size, n)]
    return rows


def simulate(
    spec: ApproxSpec,
    rows: list[npt.NDArray[np.int64]] | None = None,
    *,
    n: int = 16,
    n_rows: int = 8,
    row_max: int | None = None,
    idle: float = 0.0,
    backpressure: float = 0.0,
    seed: int = 0,
    gamma: npt.ArrayLike | None = None,
    beta: npt.ArrayLike | None = None,
    masks: list[npt.ArrayLike] | None = None,
    corrupt: int | None = None,
    long_rows: bool = False,
    expect_extra: int = 0,
    timeout_cycles: int | None = None,
    probe_ready: bool = False,
    waves: bool = False,
    keep_dir: Path | None = None,
    simulator: str = "verilator",
) -> SimResult:
    """Build the unit for ``spec`` and stream ``rows`` through it against ``spec.model``.

    Without ``rows``: edge rows and ``n_rows`` random rows of length ``n``
    (row-wise units also get random lengths 1..n). LayerNorm gets seeded
    random ``gamma``/``beta`` codes unless given. ``row_max`` (row-wise
    buffer size) defaults to the longest row; a longer row is refused unless
    ``long_rows``: then it is sent, and the unit must drop it (no output) and
    flag it (one ``row_err`` pulse, a run-time ``$error``).
    ``masks`` (softmax units): one bool array per row, True = masked out, sent on
    ``s_axis_tuser`` and given to ``spec.model`` as ``mask``.
    ``probe_ready``: also fail when ``s_axis_tready`` changes combinationally with
    ``m_axis_tready`` (flipped between clock edges every cycle; ``stats["ready_comb"]``).
    ``expect_extra`` and ``timeout_cycles`` are for testing the testbench (see
    :mod:`hwapprox.rtl_sim.tb.stream_test`).
    """
    if rows is None:
        rows = default_rows(spec, n, n_rows, seed)
    rows = [np.asarray(r, dtype=np.int64).ravel() for r in rows]
    if not rows or any(r.size == 0 for r in rows):
        raise SpecError("simulate needs at least one row, each of length >= 1")
    longest = max(r.size for r in rows)
    rmax = longest if row_max is None else row_max
    rowwise = get_unit(spec.operator, spec.method).rowwise
    n_long = sum(r.size > rmax for r in rows) if rowwise else 0
    if n_long and not long_rows:
        raise SpecError(f"a row of length {longest} exceeds row_max={rmax}; raise row_max")
    for r in rows:
        spec.check_input(r)
    info = build_unit(spec, row_max=rmax, waves=waves, simulator=simulator)
    job: dict[str, Any] = {
        "spec": spec.to_config(),
        "rows": [r.tolist() for r in rows],
        "idle": idle,
        "backpressure": backpressure,
        "seed": seed,
        "corrupt": corrupt,
        "expect_extra": expect_extra,
        "timeout_cycles": timeout_cycles,
        "probe_ready": probe_ready,
    }
    if rowwise:
        job["row_max"] = rmax
    if masks is not None:
        if len(masks) != len(rows):
            raise SpecError(f"masks has {len(masks)} rows for {len(rows)} rows")
        mk = [np.asarray(m, dtype=bool).ravel() for m in masks]
        for i, (m, r) in enumerate(zip(mk, rows, strict=True)):
            if m.size != r.size:
                raise SpecError(f"mask {i} has {m.size} bits for a row of {r.size}")
        job["masks"] = [m.astype(int).tolist() for m in mk]
    if spec.operator is Operator.LAYERNORM:
        rng = np.random.default_rng(seed + 7)
        gf, bf = spec.gamma_fmt, spec.beta_fmt  # type: ignore[attr-defined]
        if gamma is None:
            gamma = gf.quantize(rng.uniform(-2.0, 2.0, rmax))
        if beta is None:
            beta = bf.quantize(rng.uniform(-1.0, 1.0, rmax))
        g = gf.check(np.asarray(gamma), "gamma")
        b = bf.check(np.asarray(beta), "beta")
        if g.size < rmax or b.size < rmax:
            raise SpecError(f"gamma/beta need row_max={rmax} codes, got {g.size}/{b.size}")
        job["gamma"], job["beta"] = g[:rmax].tolist(), b[:rmax].tolist()
    return run_job(info, job, keep_dir=keep_dir, expected_errors=n_long)
