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
from hwapprox.rtl_sim.runner import RTL_DIR, BuildInfo, SimResult, build, run_job, run_phases
from hwapprox.rtl_sim.tb.stimulus import make_rows
from hwapprox.rtl_sim.units import get_unit

__all__ = ["build_unit", "default_rows", "simulate", "simulate_phases", "simulate_stalls"]


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
    info, job, n_long = _prepare(
        spec, rows, row_max=row_max, seed=seed, long_rows=long_rows, gamma=gamma,
        beta=beta, masks=masks, waves=waves, simulator=simulator,
    )  # fmt: skip
    job.update(
        idle=idle, backpressure=backpressure, corrupt=corrupt, expect_extra=expect_extra,
        timeout_cycles=timeout_cycles, probe_ready=probe_ready,
    )  # fmt: skip
    return run_job(info, job, keep_dir=keep_dir, expected_errors=n_long)


def simulate_stalls(
    spec: ApproxSpec,
    stalls: list[tuple[float, float]],
    rows: list[npt.NDArray[np.int64]] | None = None,
    *,
    n: int = 16,
    n_rows: int = 8,
    row_max: int | None = None,
    seed: int = 0,
    simulator: str = "verilator",
) -> list[SimResult]:
    """:func:`simulate` of the same rows at each ``(idle, backpressure)`` point of
    ``stalls`` (:func:`simulate_phases`); one result per point, in order."""
    if rows is None:
        rows = default_rows(spec, n, n_rows, seed)
    phases = [{"idle": i, "backpressure": b} for i, b in stalls]
    return simulate_phases(spec, phases, rows, row_max=row_max, seed=seed, simulator=simulator)


def simulate_phases(
    spec: ApproxSpec,
    phases: list[dict[str, Any]],
    rows: list[npt.NDArray[np.int64]] | None = None,
    *,
    row_max: int | None = None,
    seed: int = 0,
    simulator: str = "verilator",
) -> list[SimResult]:
    """Several :func:`simulate` runs of one unit build in one simulator process.

    Each phase is a dict with ``idle`` / ``backpressure`` (default 0) and ``rows``
    (default: ``rows``); the phases run one after another, each from its own reset
    with its own scoreboard, so the simulator's start-up is paid once. One result
    per phase, in order; a failing phase does not fail the others. ``row_max``
    defaults to the longest row of any phase.
    """
    if not phases:
        raise SpecError("simulate_phases needs at least one phase")
    known = {"rows", "idle", "backpressure"}
    sets = []
    for k, ph in enumerate(phases):
        if set(ph) - known:
            raise SpecError(f"phase {k}: unknown field(s) {sorted(set(ph) - known)}; use {known}")
        for key in ("idle", "backpressure"):
            p = float(ph.get(key, 0.0))
            if not 0.0 <= p < 1.0:
                raise SpecError(f"phase {k}: {key}={p} must be a probability in [0, 1)")
        r = ph.get("rows", rows)
        if r is None:
            raise SpecError(f"phase {k} has no rows (give rows= or the phase's 'rows')")
        sets.append([np.asarray(x, dtype=np.int64).ravel() for x in r])
    every = [x for s in sets for x in s]
    info, job, _ = _prepare(spec, every, row_max=row_max, seed=seed, simulator=simulator)
    job["rows"] = [x.tolist() for x in sets[0]]
    out = []
    for ph, s in zip(phases, sets, strict=True):
        o = {"idle": float(ph.get("idle", 0.0)), "backpressure": float(ph.get("backpressure", 0.0))}
        if "rows" in ph:
            o["rows"] = [x.tolist() for x in s]
        out.append(o)
    return run_phases(info, job, out)


def _prepare(
    spec: ApproxSpec,
    rows: list[npt.NDArray[np.int64]],
    *,
    row_max: int | None,
    seed: int,
    long_rows: bool = False,
    gamma: npt.ArrayLike | None = None,
    beta: npt.ArrayLike | None = None,
    masks: list[npt.ArrayLike] | None = None,
    waves: bool = False,
    simulator: str = "verilator",
) -> tuple[BuildInfo, dict[str, Any], int]:
    """Rows (and masks, gamma/beta) checked, the unit built, the job's stimulus part
    written out (a run's stalls and test switches are its caller's); and the overlong
    row count."""
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
        "seed": seed,
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
    return info, job, n_long
