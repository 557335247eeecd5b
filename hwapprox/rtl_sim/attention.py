"""The fused attention row in RTL: ``hwa_attention_row`` configured from an
:class:`~hwapprox.approx.attention.AttentionRowSpec` and simulated against its model.

:func:`attention_config` passes the spec's :meth:`AttentionRowSpec.hw_params` to the SV
parameters by name (the online softmax's exp / sum / reciprocal units included; the
names and 64-bit types read from the SV source, :func:`.svparams.derive_sv_params`)
and its softmax's tables as ``$readmemh`` files. :func:`simulate_attention` streams
queries, keys, values and mask bits through the unit under idle input cycles and
output backpressure (cocotb + Verilator, :mod:`hwapprox.rtl_sim.tb.attention_test`)
and compares every output lane with :meth:`AttentionRowSpec.model` on the same raw
integers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx.attention import AttentionRowSpec
from hwapprox.approx.base import SpecError
from hwapprox.rtl_sim.emit import memh_text
from hwapprox.rtl_sim.runner import BuildInfo, SimResult, build, lint, run_job
from hwapprox.rtl_sim.sources import sv_sources
from hwapprox.rtl_sim.svparams import derive_sv_params
from hwapprox.rtl_sim.units import EXP_VARIANT_PARAMS

__all__ = [
    "ATTENTION_SOURCES",
    "ATTENTION_TOP",
    "attention_config",
    "build_attention",
    "lint_attention",
    "simulate_attention",
]

ATTENTION_TOP = "hwa_attention_row"
#: every SV file the row needs, read from the sources (:func:`.sources.sv_sources`)
ATTENTION_SOURCES = sv_sources(ATTENTION_TOP)


def attention_config(
    spec: AttentionRowSpec, dim: int, dim_v: int, outq: int = 4, out_lanes: int | None = None
) -> tuple[dict[str, int | str], dict[str, str]]:
    """SV parameters and ``$readmemh`` files of ``hwa_attention_row`` for ``spec`` with
    ``dim`` K lanes and ``dim_v`` V lanes; ``outq`` rows fit the output queue (a power of
    two >= 2); ``out_lanes`` output lanes are computed per cycle (``o·r`` multipliers,
    a divisor of ``dim_v``; None: all ``dim_v`` at once)."""
    if outq < 2 or outq & (outq - 1):
        raise SpecError(f"outq must be a power of two >= 2, got {outq}")
    lanes = dim_v if out_lanes is None else int(out_lanes)
    if lanes < 1 or dim_v % lanes:
        raise SpecError(
            f"out_lanes must divide dim_v={dim_v}, got {out_lanes}; use a divisor such as 1 "
            f"(one o·r multiplier) or {dim_v} (all lanes at once)"
        )
    hw: Mapping[str, int] = spec.hw_params(dim, dim_v)
    base2 = bool(hw["BASE2"])
    t = spec.softmax.tables()
    if base2:
        exp_mem = memh_text(t["exp2_table"], hw["TABLE_F"] + 1)
    else:
        exp_mem = memh_text(t["exp_lut"], hw["EXP_W"])
    mems = {"EXP_FILE": exp_mem, "RECIP_FILE": memh_text(t["recip_table"], hw["WF"] + 1)}
    params = derive_sv_params(
        ATTENTION_TOP,
        hw,
        spec=spec,
        given={"OUTQ": outq, "OUT_LANES": lanes},
        mems=mems,
        unused=EXP_VARIANT_PARAMS[not base2],
    )
    return params, mems


def build_attention(
    spec: AttentionRowSpec,
    dim: int,
    dim_v: int,
    *,
    outq: int = 4,
    out_lanes: int | None = None,
    waves: bool = False,
) -> BuildInfo:
    """Build (or reuse from the cache) the Verilator model of one configuration."""
    from hwapprox.rtl_sim.runner import RTL_DIR

    params, mems = attention_config(spec, dim, dim_v, outq, out_lanes)
    return build(
        ATTENTION_TOP,
        [RTL_DIR / s for s in ATTENTION_SOURCES],
        params,
        mems,
        waves=waves,
    )


def lint_attention(
    spec: AttentionRowSpec, dim: int, dim_v: int, out_lanes: int | None = None
) -> str:
    """``verilator --lint-only -Wall`` of the unit at ``spec``'s parameters (tables aside)."""
    from hwapprox.rtl_sim.runner import RTL_DIR

    params, _ = attention_config(spec, dim, dim_v, out_lanes=out_lanes)
    return lint(ATTENTION_TOP, [RTL_DIR / s for s in ATTENTION_SOURCES], params)


def simulate_attention(
    spec: AttentionRowSpec,
    q: npt.ArrayLike,
    k: npt.ArrayLike,
    v: npt.ArrayLike,
    mask: npt.ArrayLike | None = None,
    *,
    idle: float = 0.0,
    backpressure: float = 0.0,
    seed: int = 0,
    outq: int = 4,
    out_lanes: int | None = None,
    corrupt: int | None = None,
) -> SimResult:
    """Stream rows through ``hwa_attention_row`` and compare with ``spec.model``.

    ``q`` ``[R, D]``, ``k`` ``[R, N, D]``, ``v`` ``[R, N, D_v]`` raw codes (rows may not
    differ in N here: pass equal-length rows), ``mask`` bool ``[R, N]`` (True = masked).
    ``idle`` / ``backpressure``: per-cycle pause probabilities of every input stream and
    of the output. ``out_lanes``: o·r multipliers (see :func:`attention_config`).
    ``corrupt``: index of one expected output lane (row-major) to falsify, so the
    comparison must fail (a test of the test). ``stats`` holds ``matched``,
    ``mismatches``, ``first_mismatches``, ``latency`` (last key accepted -> output, per
    row), ``keys_per_cycle`` (keys accepted / cycles from the first key to the last).
    """
    qr = np.atleast_2d(np.asarray(q, dtype=np.int64))
    kr = np.asarray(k, dtype=np.int64)
    vr = np.asarray(v, dtype=np.int64)
    rows, dim = qr.shape
    if kr.ndim != 3 or vr.ndim != 3 or kr.shape[0] != rows or vr.shape[0] != rows:
        raise SpecError(
            f"simulate_attention needs q [R, D], k [R, N, D], v [R, N, Dv]; got "
            f"{list(qr.shape)}, {list(kr.shape)}, {list(vr.shape)}"
        )
    n, dim_v = kr.shape[1], vr.shape[2]
    mk = np.zeros((rows, n), bool) if mask is None else np.broadcast_to(mask, (rows, n))
    expected = spec.model(qr, kr, vr, mk)  # validates formats, lengths and the mask
    exp_list = expected.astype(np.int64).tolist()
    if corrupt is not None:
        r, lane = divmod(int(corrupt), dim_v)
        exp_list[r][lane] += 1
    info = build_attention(spec, dim, dim_v, outq=outq, out_lanes=out_lanes)
    job: dict[str, Any] = {
        "q": qr.tolist(),
        "k": kr.tolist(),
        "v": vr.tolist(),
        "mask": mk.astype(int).tolist(),
        "expected": exp_list,
        "widths": {
            "Q_W": spec.q_fmt.width,
            "K_W": spec.k_fmt.width,
            "V_W": spec.v_fmt.width,
            "Y_W": spec.out_fmt.width,
        },
        "dim_v": int(dim_v),
        "idle": float(idle),
        "backpressure": float(backpressure),
        "seed": int(seed),
    }
    return run_job(info, job, test_module="hwapprox.rtl_sim.tb.attention_test")
