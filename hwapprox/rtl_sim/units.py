"""Which SystemVerilog unit implements which spec, and its parameters.

:data:`UNITS` maps ``(operator, method)`` to an :class:`RtlUnit`: the top
module, its source files (``rtl/``) and a function that turns a spec (plus the
row buffer size for row-wise units) into SV parameters and ``$readmemh``
contents. The parameter names are read from the top's SV source
(:mod:`hwapprox.rtl_sim.svparams`): each is taken from the spec's hardware
parameter set (``spec.hw_params()``, :mod:`hwapprox.approx.hwparams`) by name --
the same numbers the HLS config carries; 64-bit ones (``longint``, ``logic [63:0]``) as
:func:`sv_long` literals -- or is the row buffer geometry of
:func:`~hwapprox.approx.hwparams.row_stream_params` (where the unit takes it), a
memory file (``*_FILE``, from ``tables()``), a parameter the spec's variant leaves
unused (the online softmax's other exp unit) or a unit-level knob kept at its SV
default (:attr:`RtlUnit.knobs`). A parameter that is none of these is a
:class:`SpecError` naming the module, the parameter and the spec; nothing is
renamed or recomputed here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from hwapprox.approx.base import ApproxSpec, Operator, SpecError
from hwapprox.approx.hwparams import overflow_code, rounding_code, row_stream_params
from hwapprox.fixed import FixedFormat
from hwapprox.rtl_sim.emit import memh_text
from hwapprox.rtl_sim.svparams import derive_sv_params, sv_long

__all__ = [
    "EXP_VARIANT_PARAMS",
    "HELD_INPUT",
    "UNITS",
    "RtlUnit",
    "UnitSetup",
    "get_unit",
    "list_units",
    "overflow_code",
    "rounding_code",
    "sv_long",
]

Config = tuple[dict[str, int | str], dict[str, str]]

#: the exp unit's (``hwa_exp_unit``) parameters of one variant only, by ``BASE2``: a
#: spec's hw_params carry its own variant's; the other's stay at their SV defaults
EXP_VARIANT_PARAMS: dict[bool, tuple[str, ...]] = {
    True: (
        "LOG2E",
        "LOG2E_W",
        "PROD_SHIFT",
        "T_W",
        "T_F",
        "T_RND",
        "A",
        "TABLE_F",
        "INTERP",
        "V_W",
    ),
    False: ("LUT_BITS", "LIM_BITS", "LUT_SHIFT"),
}


@dataclass(frozen=True)
class UnitSetup:
    """What a unit's configure function takes from a spec: its hardware parameter set,
    the SV parameters the unit sets itself (row buffer geometry), the memory files
    (``*_FILE`` -> ``$readmemh`` text) and the top's parameters the spec's variant
    leaves unused (at their SV defaults)."""

    hw: Mapping[str, int]
    given: dict[str, int | str] = field(default_factory=dict)
    mems: dict[str, str] = field(default_factory=dict)
    unused: tuple[str, ...] = ()


@dataclass(frozen=True)
class RtlUnit:
    """One SV unit: top module, sources, and spec -> (parameters, memory files)."""

    operator: Operator
    method: str
    toplevel: str
    sources: tuple[str, ...]
    configure: Callable[[Any, int], UnitSetup]
    rowwise: bool
    doc: str = ""
    #: reads of a row before its first output (1: the row's statistics are gathered as
    #: it enters; 2: a second full pass first, e.g. exp and sum after the max), so the
    #: last-in -> last-out latency is (row_passes - 1)·N + N + a constant
    row_passes: int = 1
    #: last-in -> last-out of a row is at most (row_passes - 1)·N + N + this (the
    #: project's target is 16; more only where the method needs it, said in ``doc``)
    latency_extra: int = 16
    #: an elementwise unit's fixed input -> output latency in cycles at one element per
    #: cycle (the contract header's "Latency:"; tests/test_rtl_units.py measures it)
    latency: int | None = None
    #: the unit has the log-code output post-stage (``out_code`` "log2"/"log2sqrt2")
    out_codes: bool = False
    #: unit-level SV parameters of the top (with a default) that no spec sets: they
    #: stay at their SV default unless hw_params has them (the online softmax's PIPE)
    knobs: tuple[str, ...] = ()

    def config(self, spec: ApproxSpec, row_max: int = 64) -> Config:
        if (spec.operator, spec.method) != (self.operator, self.method):
            raise SpecError(
                f"unit {self.toplevel} implements {self.operator}/{self.method}, "
                f"got a {spec.operator}/{spec.method} spec"
            )
        if self.rowwise and row_max < 1:
            raise SpecError(f"row_max must be >= 1, got {row_max}")
        if getattr(spec, "out_code", "linear") != "linear" and not self.out_codes:
            raise SpecError(
                f"unit {self.toplevel} has no log-code output stage (out_code="
                f"{spec.out_code!r}, issue 15): use out_code='linear' for the RTL"  # type: ignore[attr-defined]
            )
        s = self.configure(spec, row_max)
        params = derive_sv_params(
            self.toplevel,
            s.hw,
            spec=spec,
            given=s.given,
            mems=s.mems,
            unused=s.unused,
            knobs=self.knobs,
        )
        return params, dict(s.mems)


def _signed_in(spec: ApproxSpec, unit: str) -> FixedFormat:
    if not spec.in_fmt.signed:
        raise SpecError(f"{unit} needs a signed in_fmt, got {spec.in_fmt}")
    return spec.in_fmt


# -- GELU ------------------------------------------------------------------------------
def _fn_lut(spec: Any, row_max: int) -> UnitSetup:
    hw = spec.hw_params()
    lut = spec.tables()["lut"]
    if len(lut) != hw["TABLE_SIZE"]:
        raise SpecError(
            f"{spec.operator}/lut: {len(lut)} table entries, hw_params say {hw['TABLE_SIZE']}"
        )
    return UnitSetup(hw, mems={"LUT_FILE": memh_text(lut, spec.out_fmt.width)})


def _fn_pwl(spec: Any, row_max: int) -> UnitSetup:
    hw = spec.hw_params()
    t = spec.tables()
    mems = {
        "BP_FILE": memh_text(t["breakpoints"], hw["IN_W"]),
        "SLOPE_FILE": memh_text(t["slopes"], hw["S_W"]),
        "ICPT_FILE": memh_text(t["intercepts"], hw["C_W"]),
    }
    return UnitSetup(hw, mems=mems)


def _gelu_edgemoe(spec: Any, row_max: int) -> UnitSetup:
    hw = spec.hw_params()
    return UnitSetup(hw, mems={"DELTA_FILE": memh_text(spec.tables()["delta"], hw["ENTRY_W"])})


def _hw_only(spec: Any, row_max: int) -> UnitSetup:
    """An elementwise unit without tables: hw_params alone."""
    return UnitSetup(spec.hw_params())


# -- LayerNorm ---------------------------------------------------------------------------
def _layernorm_rsqrt(spec: Any, row_max: int) -> UnitSetup:
    """The rsqrt LayerNorms (rsqrt_lut, RMSNorm): the row buffer geometry but N_BITS."""
    _signed_in(spec, f"layernorm/{spec.method}")
    hw = spec.hw_params()
    if row_max > hw["MAX_N"]:
        raise SpecError(
            f"row_max={row_max} exceeds the spec's max_n={hw['MAX_N']} (its accumulator sizes)"
        )
    if not spec.gamma_fmt.signed or not spec.beta_fmt.signed:
        raise SpecError(f"layernorm/{spec.method} RTL needs signed gamma_fmt and beta_fmt")
    geometry: dict[str, int | str] = dict(row_stream_params(row_max))
    del geometry["N_BITS"]  # the spec's N_BITS sizes the N·X and N·S2 multipliers
    table = spec.tables()["rsqrt_table"]
    return UnitSetup(hw, given=geometry, mems={"RSQRT_FILE": memh_text(table, hw["P"])})


def _layernorm_int(spec: Any, row_max: int) -> UnitSetup:
    """The integer LayerNorms (I-BERT, I-ViT)."""
    _signed_in(spec, f"layernorm/{spec.method}")
    if not spec.gamma_fmt.signed or not spec.beta_fmt.signed:
        raise SpecError(f"layernorm/{spec.method} RTL needs signed gamma_fmt and beta_fmt")
    hw = spec.hw_params(row_max)  # widths for rows of up to row_max (sqrt(n) per row)
    return UnitSetup(hw, given=dict(row_stream_params(row_max)))


# -- softmax ------------------------------------------------------------------------------
def _softmax_online(spec: Any, row_max: int) -> UnitSetup:
    _signed_in(spec, "softmax/online")
    if spec.schedule != "online":
        raise SpecError(
            f"the RTL unit implements schedule='online', got schedule={spec.schedule!r}"
        )

    hw = spec.hw_params()
    t = spec.tables()
    if row_max > int(spec.sum_fmt.max):
        raise SpecError(f"row_max={row_max} exceeds what sum_fmt {spec.sum_fmt} can count")
    base2 = bool(hw["BASE2"])
    if base2:
        exp_mem = memh_text(t["exp2_table"], hw["TABLE_F"] + 1)
    else:
        exp_mem = memh_text(t["exp_lut"], hw["EXP_W"])
    recip_mem = memh_text(t["recip_table"], hw["WF"] + 1)
    return UnitSetup(
        hw,
        given=dict(row_stream_params(row_max)),
        mems={"EXP_FILE": exp_mem, "RECIP_FILE": recip_mem},
        unused=EXP_VARIANT_PARAMS[not base2],
    )


def _softmax_softermax(spec: Any, row_max: int) -> UnitSetup:
    _signed_in(spec, "softmax/softermax")
    hw = spec.hw_params()
    if row_max > int(spec.sum_fmt.max) // 2:
        raise SpecError(f"row_max={row_max} exceeds what sum_fmt {spec.sum_fmt} can sum (< 2N)")
    t = spec.tables()
    mems = {
        "POW2_FILE": memh_text(t["pow2_table"], hw["TABLE_F"] + 1),
        "RECIP_FILE": memh_text(t["recip_table"], hw["WF"] + 1),
    }
    return UnitSetup(hw, given=dict(row_stream_params(row_max)), mems=mems)


def _softmax_3pass(spec: Any, row_max: int) -> UnitSetup:
    """The three-pass softmaxes (I-BERT, Shiftmax): widths for rows of up to row_max."""
    _signed_in(spec, f"softmax/{spec.method}")
    return UnitSetup(spec.hw_params(row_max), given=dict(row_stream_params(row_max)))


_COMMON = ("hwa_pkg.sv", "hwa_rom.sv", "hwa_round_shift.sv", "hwa_sat.sv", "hwa_skid.sv")
#: the rsqrt LayerNorms' row stream and pipelined per-row 1/sqrt and output products
_RSQRT_SOURCES = (
    "hwa_row_stream.sv",
    "hwa_delay.sv",
    "hwa_mul_pipe.sv",
    "hwa_round_shift_pipe.sv",
    "hwa_rsqrt_pipe.sv",
    "hwa_ln_rsqrt_out.sv",
)
_LN_INT_SOURCES = (
    "hwa_row_stream.sv",
    "hwa_delay.sv",
    "hwa_mul_pipe.sv",
    "hwa_fifo.sv",
    "hwa_udiv_iter.sv",
    "hwa_isqrt_iter.sv",
    "hwa_udiv_rr.sv",
    "hwa_isqrt_rr.sv",
    "hwa_ln_int_stats.sv",
    "hwa_ln_int_out.sv",
)

#: (operator, method) -> unit
UNITS: dict[tuple[Operator, str], RtlUnit] = {
    (Operator.GELU, "lut"): RtlUnit(
        Operator.GELU,
        "lut",
        "hwa_lut",
        ("hwa_rom.sv", "hwa_skid.sv", "hwa_lut.sv"),
        _fn_lut,
        rowwise=False,
        latency=2,
        doc="direct table, one entry per input code (or per bin); latency 2",
    ),
    (Operator.GELU, "pwl"): RtlUnit(
        Operator.GELU,
        "pwl",
        "hwa_pwl",
        (*_COMMON, "hwa_cast.sv", "hwa_pwl.sv"),
        _fn_pwl,
        rowwise=False,
        latency=6,
        doc="parallel breakpoint compare, count, slope/intercept ROMs, registered multiply, "
        "add; latency 6",
    ),
    (Operator.GELU, "ibert"): RtlUnit(
        Operator.GELU,
        "ibert",
        "hwa_gelu_ibert",
        (*_COMMON, "hwa_cast.sv", "hwa_mul_pipe.sv", "hwa_gelu_ibert.sv"),
        _hw_only,
        rowwise=False,
        latency=9,
        doc="erf polynomial (abs, min, square), x·(erf + 1), dyadic requantisation in "
        "18 x 18 partial products; latency 9",
    ),
    (Operator.GELU, "edgemoe"): RtlUnit(
        Operator.GELU,
        "edgemoe",
        "hwa_gelu_edgemoe",
        (*_COMMON, "hwa_cast.sv", "hwa_mul_pipe.sv", "hwa_gelu_edgemoe.sv"),
        _gelu_edgemoe,
        rowwise=False,
        latency=10,
        doc="ReLU(x) - delta(|x|): two reads of the delta table, one interpolation multiply "
        "(18 x 18 partial products); latency 10",
    ),
    (Operator.GELU, "shiftgelu"): RtlUnit(
        Operator.GELU,
        "shiftgelu",
        "hwa_gelu_shiftgelu",
        (
            *_COMMON,
            "hwa_cast.sv",
            "hwa_shift_exp_pipe.sv",
            "hwa_mul_pipe.sv",
            "hwa_udiv.sv",
            "hwa_gelu_shiftgelu.sv",
        ),
        _hw_only,
        rowwise=False,
        latency=44,
        doc="two five-stage shift-exps (shifts, adds, a compare chain for q), a 31-stage "
        "pipelined divider, two multiplies; latency 44",
    ),
    (Operator.SOFTMAX, "online"): RtlUnit(
        Operator.SOFTMAX,
        "online",
        "hwa_softmax_online",
        (
            *_COMMON,
            "hwa_row_stream.sv",
            "hwa_mul_pipe.sv",
            "hwa_round_shift_pipe.sv",
            "hwa_delay.sv",
            "hwa_exp_unit.sv",
            "hwa_recip.sv",
            "hwa_log_code.sv",
            "hwa_out_code.sv",
            "hwa_softmax_online.sv",
        ),
        _softmax_online,
        rowwise=True,
        latency_extra=100,
        knobs=("PIPE",),
        doc=(
            "single pass: running max and sum, exp base2 (table + PWL) or LUT, "
            "1/d per row (Newton or PWL), circular row buffer; options: threshold "
            "skipping, unified max (the exact state kept alongside: fallback without a "
            "re-read), log-coded outputs (one more output stage); pipelined for ECP5 "
            "(issue 22): last in -> last out N + 91 (+4 when the row's last element is a "
            "new max, +4 when it comes in the cycle after one), the input held 4 cycles "
            "per new running max, from the second cycle after it"
        ),
        out_codes=True,
    ),
    (Operator.SOFTMAX, "softermax"): RtlUnit(
        Operator.SOFTMAX,
        "softermax",
        "hwa_softmax_softermax",
        (
            *_COMMON,
            "hwa_row_stream.sv",
            "hwa_mul_pipe.sv",
            "hwa_round_shift_pipe.sv",
            "hwa_delay.sv",
            "hwa_exp_unit.sv",
            "hwa_recip.sv",
            "hwa_log_code.sv",
            "hwa_out_code.sv",
            "hwa_softmax_softermax.sv",
        ),
        _softmax_softermax,
        rowwise=True,
        latency_extra=76,
        doc="base 2, integer running max with shift rescaling, PWL 2^x and PWL 1/d, "
        "mask bits; circular row buffer of x (t computed on both sides); log-coded outputs "
        "(one more stage); pipelined for ECP5 (issue 22): the input held one cycle per rise "
        "of the integer running max (the sum's shift in a cycle of its own), 7 elements "
        "after it; last in -> last out N + 68, +1 per rise among the row's last 8 elements "
        "(at most N + 76)",
        out_codes=True,
    ),
    (Operator.SOFTMAX, "ibert"): RtlUnit(
        Operator.SOFTMAX,
        "ibert",
        "hwa_softmax_ibert",
        (
            *_COMMON,
            "hwa_row_stream.sv",
            "hwa_mul_pipe.sv",
            "hwa_ibert_exp_pipe.sv",
            "hwa_udiv.sv",
            "hwa_log_code.sv",
            "hwa_out_code.sv",
            "hwa_softmax_3pass.sv",
            "hwa_softmax_ibert.sv",
        ),
        _softmax_3pass,
        rowwise=True,
        doc="three passes through two row buffers: max; i-exp, requantisation (12 "
        "pipelined stages) and sum; a 33-stage pipelined divider 2^32 / sum per row; "
        "e16·factor (18 x 18 partial products). Mask bits; log-coded outputs (one more "
        "stage). Last-in -> last-out 2N + 60, log-coded 2N + 61 (the exps need the row "
        "max, the outputs the whole sum)",
        row_passes=2,
        latency_extra=60,
        out_codes=True,
    ),
    (Operator.SOFTMAX, "shiftmax"): RtlUnit(
        Operator.SOFTMAX,
        "shiftmax",
        "hwa_softmax_shiftmax",
        (
            *_COMMON,
            "hwa_row_stream.sv",
            "hwa_mul_pipe.sv",
            "hwa_shift_exp_pipe.sv",
            "hwa_udiv.sv",
            "hwa_log_code.sv",
            "hwa_out_code.sv",
            "hwa_softmax_3pass.sv",
            "hwa_softmax_shiftmax.sv",
        ),
        _softmax_3pass,
        rowwise=True,
        doc="three passes through two row buffers: max; shift-exp (5 pipelined stages) "
        "and sum; a 31-stage pipelined divider per row; e·factor (18 x 18 partial "
        "products). Mask bits; log-coded outputs (one more stage). Last-in -> last-out "
        "2N + 51, log-coded 2N + 52 (the exps need the row max, the outputs the whole sum)",
        row_passes=2,
        latency_extra=51,
        out_codes=True,
    ),
    (Operator.LAYERNORM, "rsqrt_lut"): RtlUnit(
        Operator.LAYERNORM,
        "rsqrt_lut",
        "hwa_layernorm_rsqrt",
        (*_COMMON, *_RSQRT_SOURCES, "hwa_layernorm_rsqrt.sv"),
        _layernorm_rsqrt,
        rowwise=True,
        doc="single-pass S1/S2, pipelined 1/sqrt (table + Newton, 18 x 18 partial "
        "products: 13 stages per Newton step), gamma/beta memory. Last-in -> last-out "
        "N + 40 + 13·newton_steps (N + 53 at the default one step; the row buffer is "
        "sized for the per-row latency)",
        latency_extra=53,
    ),
    (Operator.LAYERNORM, "ibert"): RtlUnit(
        Operator.LAYERNORM,
        "ibert",
        "hwa_layernorm_ibert",
        (*_COMMON, *_LN_INT_SOURCES, "hwa_layernorm_ibert.sv"),
        _layernorm_int,
        rowwise=True,
        doc="two passes through two row buffers: S1/S2 (mean, var0 from the moments, the "
        "shift s); y and the variance at s and s + 1; per row an iterative isqrt and "
        "2^31/std; y·factor, sqrt(n), gamma/beta. Last-in -> last-out 2N + 116 (the "
        "variance at the row's shift needs the row re-read once its mean is known; "
        "2N + 51 before the issue-22 pipelining: dividers and roots at one bit per cycle, "
        "the output products and the second pass's shifts and squares in stages)",
        row_passes=2,
        latency_extra=116,
    ),
    (Operator.LAYERNORM, "ivit"): RtlUnit(
        Operator.LAYERNORM,
        "ivit",
        "hwa_layernorm_ivit",
        (*_COMMON, *_LN_INT_SOURCES, "hwa_layernorm_ivit.sv"),
        _layernorm_int,
        rowwise=True,
        doc="single-pass S1/S2 (var0 from the moments), per row: mean divider, sqrt(n), "
        "I-ViT's 10 Newton steps as a chain of iterative dividers, (2^31-1)/std; "
        "gamma/beta memory. Last-in -> last-out N + 297 at the defaults (nine dependent "
        "divisions per row at one quotient bit per cycle, for 125 MHz: N + 16 is out of "
        "reach for this method; N + 146 before the issue-22 pipelining)",
        latency_extra=300,
    ),
    (Operator.LAYERNORM, "rmsnorm"): RtlUnit(
        Operator.LAYERNORM,
        "rmsnorm",
        "hwa_layernorm_rmsnorm",
        (*_COMMON, *_RSQRT_SOURCES, "hwa_layernorm_rmsnorm.sv"),
        _layernorm_rsqrt,
        rowwise=True,
        doc="single-pass S2 over the first k = N, partial_k or ceil(partial·N) elements "
        "(pRMSNorm: a queue of codes lets S2 follow k(i) = ceil(p·i)), pipelined "
        "1/sqrt(k·S2 + eps) (table + Newton, 18 x 18 partial products: 13 stages per "
        "Newton step), gamma/beta memory. Last-in -> last-out N + 37 + 13·newton_steps "
        "(N + 50 at the default one step; the row buffer is sized for the per-row latency)",
        latency_extra=50,
    ),
    (Operator.RELU_ATTENTION, "wortsman"): RtlUnit(
        Operator.RELU_ATTENTION,
        "wortsman",
        "hwa_relu_attention",
        (*_COMMON, "hwa_cast.sv", "hwa_relu_attention.sv"),
        _hw_only,
        rowwise=False,
        latency=3,
        doc="max(x, 0)·K, one cast (K = 1: a shift for n a power of two); latency 3",
    ),
}
# sigmoid attention runs on GELU's table units (the function lives in the tables)
UNITS[(Operator.SIGMOID_ATTENTION, "lut")] = replace(
    UNITS[(Operator.GELU, "lut")],
    operator=Operator.SIGMOID_ATTENTION,
    doc="table of σ(x + b) (bias folded in), one entry per input code (or bin); latency 2",
)
UNITS[(Operator.SIGMOID_ATTENTION, "pwl")] = replace(
    UNITS[(Operator.GELU, "pwl")],
    operator=Operator.SIGMOID_ATTENTION,
    doc="the GELU PWL unit with TOP_ONE (1 above the last breakpoint); latency 6",
)


def get_unit(op: str | Operator, method: str) -> RtlUnit:
    """The unit of ``op``/``method``; the error lists what exists."""
    try:
        key = (Operator(op), method)
    except ValueError:
        names = [o.value for o in Operator]
        raise SpecError(f"unknown operator {op!r}; expected one of {names}") from None
    if key not in UNITS:
        have = ", ".join(f"{o}/{m}" for o, m in UNITS)
        raise SpecError(f"no RTL unit for {key[0]}/{method}; RTL units exist for: {have}")
    return UNITS[key]


def list_units() -> list[str]:
    """``operator/method`` of every RTL unit."""
    return [f"{o}/{m}" for o, m in UNITS]


def exp_unit_lat(hw: Mapping[str, Any]) -> int:
    """``hwa_pkg::exp_unit_lat`` at PIPE = MUL_IN_REG = 1 for a spec's ``hw_params``:
    the LUT variant 2; base 2: 1 + 10 + 1 when d·LOG2E is the identity, else the
    product 3 + 1, its rounding 3 (PROD_SHIFT > 0), saturation 1, 2^-t 10 + 1."""
    if not hw["BASE2"]:
        return 2
    if int(hw["LOG2E"]) == 1 and int(hw["PROD_SHIFT"]) == 0:
        return 1 + 10 + 1
    return 3 + (3 if int(hw["PROD_SHIFT"]) > 0 else 0) + 1 + 10 + 2


def recip_lat(hw: Mapping[str, Any]) -> int:
    """``hwa_pkg::recip_lat`` at PIPE = MUL_IN_REG = 1: normalisation 3, the seed
    (Newton 2, PWL 11), 15 per Newton step, final 5 (40 at the default spec)."""
    return 3 + (2 + 15 * int(hw["STEPS"]) if hw["NEWTON"] else 11) + 5


#: ``hwa_softmax_online`` (PIPE = 1, its default): the cycles the rescale of a new
#: running max takes (d·E through hwa_mul_pipe, 3 stages, and its rounding, 1): the
#: cycles of ``s_axis_tready`` low it costs and the cycles the sum stage takes no
#: element after it (the contract header)
ONLINE_RESCALE_BUBBLES = 4


def _new_maxima(keys: Any, masks: Any, start_seen: bool = False) -> list[list[bool]]:
    """Per row of ``keys`` (what the running max compares), per element: whether it raises the
    running max: an unmasked element above the max before it, other than the row's first
    unmasked element (``start_seen``: the row starts with a max, the zero logit, so every
    unmasked element above it counts)."""
    out: list[list[bool]] = []
    for k, row in enumerate(keys):
        mask = None if masks is None else masks[k]
        seen, m, new = start_seen, 0, []
        for j, x in enumerate(row):
            g = False
            if mask is None or not mask[j]:
                if not seen:
                    m, seen = x, True
                elif x > m:
                    m, g = x, True
            new.append(g)
        out.append(new)
    return out


def _online_new_maxima(spec: Any, rows: Any, masks: Any) -> list[list[bool]]:
    """Per row, per element: whether it raises the running max of ``hwa_softmax_online``
    (:func:`_new_maxima` of the raw codes; with ``off_by_one`` the row starts at the zero
    logit). A skipped element (threshold skipping) lies below the max, so it never
    counts."""
    return _new_maxima(rows, masks, bool(getattr(spec, "off_by_one", False)))


def _by_row(new: list[list[bool]], flat: list[int]) -> list[list[int]]:
    """``flat`` (one value per element of all rows in stream order) cut into rows."""
    out, k = [], 0
    for r in new:
        out.append(flat[k : k + len(r)])
        k += len(r)
    return out


def online_schedule(
    spec: Any, rows: Any, masks: Any = None
) -> tuple[list[list[int]], list[list[int]]]:
    """``hwa_softmax_online``'s input and sum timeline (PIPE = 1) for rows offered back
    to back with ``s_axis_tvalid`` always high (and room in its buffers), per row and
    element: ``(gaps, waits)``.

    ``gaps``: the cycles ``s_axis_tready`` is low between the element and the next one
    (the next row's first after a row's last). An element that raises the running max
    (B = :data:`ONLINE_RESCALE_BUBBLES`) owes B held cycles, paid one per cycle from the
    second cycle after it was accepted (its new-max flag is a register: the ready of
    the cycle after it is already decided), so the element after a new max is accepted
    at once and the held cycles follow it (two new maxima in a row: 2B).

    ``waits``: the cycles the element waits in the unit's first stage before it reaches
    the running sum, which takes an element at most once a cycle and, after a new max,
    B cycles later at the earliest (its rescale). The element in flight after a new max
    waits B; the others 0. A row's last-in -> last-out latency is the unit's constant
    plus its last element's wait plus B when that element is a new max
    (:func:`online_row_delays`)."""
    b = ONLINE_RESCALE_BUBBLES
    new = _online_new_maxima(spec, rows, masks)
    flat = [g for r in new for g in r]
    t_acc: list[int] = []  # the cycle each element is accepted
    u, idx, owe, nm_q, hold = 0, 0, 0, False, False
    while idx < len(flat):
        nm_now = False
        if not hold:  # s_axis_tready high this cycle: the next element is accepted
            t_acc.append(u)
            nm_now = flat[idx]
            idx += 1
        hold = nm_q or owe > 0  # the registered ready of the next cycle
        owe = owe + b - 1 if nm_q else max(owe - 1, 0)
        nm_q, u = nm_now, u + 1
    waits_flat: list[int] = []
    s_prev = None  # the cycle the previous element reached the sum stage
    for i, t in enumerate(t_acc):
        s = t if s_prev is None else max(t, s_prev + 1 + (b if flat[i - 1] else 0))
        waits_flat.append(s - t)
        s_prev = s
    gaps_flat = [t_acc[i + 1] - t_acc[i] - 1 for i in range(len(t_acc) - 1)] + [0]
    return _by_row(new, gaps_flat), _by_row(new, waits_flat)


def online_input_gaps(spec: Any, rows: Any, masks: Any = None) -> list[list[int]]:
    """Per row, per element: the cycles ``hwa_softmax_online`` holds its input after it
    (rows back to back; the very last element's is 0): see :func:`online_schedule`."""
    return online_schedule(spec, rows, masks)[0]


def online_row_delays(spec: Any, rows: Any, masks: Any = None) -> list[int]:
    """Per row: the cycles ``hwa_softmax_online``'s last-in -> last-out exceeds its
    constant (rows back to back): its last element's wait in the first stage (B when it
    directly follows a new max) plus B when it is a new max itself (its rescale comes
    before the row's sum is final); see :func:`online_schedule`."""
    new = _online_new_maxima(spec, rows, masks)
    _, waits = online_schedule(spec, rows, masks)
    return _row_delays(new, waits, ONLINE_RESCALE_BUBBLES)


def _row_delays(new: list[list[bool]], waits: list[list[int]], b: int) -> list[int]:
    """Per row: its last element's wait plus ``b`` when that element is a new max (the
    ``b`` cycles the sum takes for it before the row's sum is final)."""
    return [w[-1] + (b if m[-1] else 0) for w, m in zip(waits, new, strict=True)]


def online_lone_rows(spec: Any, rows: Any, masks: Any = None) -> list[tuple[int, int]]:
    """Per row, the row fed alone (nothing before or after it): the cycles
    ``hwa_softmax_online`` holds its input before the row's last element, and the
    row's last-in -> last-out delay over the constant (:func:`online_row_delays`)."""
    out = []
    for k, row in enumerate(rows):
        one = [row]
        one_mask = None if masks is None else [masks[k]]
        gaps, waits = online_schedule(spec, one, one_mask)
        (delay,) = _row_delays(
            _online_new_maxima(spec, one, one_mask), waits, ONLINE_RESCALE_BUBBLES
        )
        out.append((sum(gaps[0][:-1]), delay))
    return out


#: ``hwa_softmax_softermax``: the cycles the running sum takes after an element that
#: raises the integer running max (its shift d >> sh in a cycle of its own, the add in
#: the next): the cycles of ``s_axis_tready`` low it costs (the contract header)
SOFTERMAX_SHIFT_BUBBLES = 1


def softermax_ingest_latency(spec: Any) -> int:
    """``hwa_softmax_softermax``'s TLAT: the cycles from accepting an element to its
    running-max stage (t = x·LOG2E: hwa_mul_pipe 3, its rounding hwa_round_shift_pipe 3
    when PROD_SHIFT > 0, the saturation 1), counted in cycles the ingest advances."""
    return 3 + (3 if int(spec.hw_params()["PROD_SHIFT"]) > 0 else 0) + 1


def _softermax_new_maxima(spec: Any, rows: Any, masks: Any) -> list[list[bool]]:
    """Per row, per element: whether it raises Softermax's integer running max
    ``M = floor(t)`` (``t >> t_fmt.frac_bits`` of the model's ``t``): :func:`_new_maxima`
    of those keys (the row's first unmasked element sets M, it does not raise it)."""
    ft = spec.t_fmt.frac_bits
    keys = [(spec._t(np.asarray(r, dtype=np.int64)) >> ft).tolist() for r in rows]
    return _new_maxima(keys, masks)


def softermax_schedule(
    spec: Any, rows: Any, masks: Any = None
) -> tuple[list[list[int]], list[list[int]]]:
    """``hwa_softmax_softermax``'s input and ingest timeline for rows offered back to
    back with ``s_axis_tvalid`` always high (and room in its buffers), per row and
    element: ``(gaps, waits)``, as :func:`online_schedule`.

    An element that raises the integer running max stops the ingest for B =
    :data:`SOFTERMAX_SHIFT_BUBBLES` cycle when it reaches the running-max stage, L =
    :func:`softermax_ingest_latency` advancing cycles after it was accepted: the stages
    before it and the input stand still (``s_axis_tready`` low), so with the input
    always offered the held cycle falls after the element accepted L elements after it
    (``gaps``; after the very last element the held cycles are not counted), and every
    element still in the ingest stages then reaches the sum B cycles later (``waits``:
    the held cycles of the L elements before it)."""
    b = SOFTERMAX_SHIFT_BUBBLES
    lat = softermax_ingest_latency(spec)
    new = _softermax_new_maxima(spec, rows, masks)
    flat = [g for r in new for g in r]
    n = len(flat)
    gaps_flat = [b * int(j >= lat and flat[j - lat]) for j in range(n - 1)] + [0]
    waits_flat = [b * sum(flat[max(j - lat, 0) : j]) for j in range(n)]
    return _by_row(new, gaps_flat), _by_row(new, waits_flat)


def softermax_input_gaps(spec: Any, rows: Any, masks: Any = None) -> list[list[int]]:
    """Per row, per element: the cycles ``hwa_softmax_softermax`` holds its input after
    it (rows back to back; the very last element's is 0): see :func:`softermax_schedule`."""
    return softermax_schedule(spec, rows, masks)[0]


def softermax_row_delays(spec: Any, rows: Any, masks: Any = None) -> list[int]:
    """Per row: the cycles ``hwa_softmax_softermax``'s last-in -> last-out exceeds its
    constant (rows back to back): the held cycles while its last element was in the
    ingest stages, plus B when it raises the integer max itself (its shift cycle comes
    before the row's sum is final); see :func:`softermax_schedule`."""
    new = _softermax_new_maxima(spec, rows, masks)
    _, waits = softermax_schedule(spec, rows, masks)
    return _row_delays(new, waits, SOFTERMAX_SHIFT_BUBBLES)


#: (operator, method) -> the input gaps and row delays of a row-wise unit whose input
#: rate depends on the data (rows back to back): ``(input_gaps, row_delays)``, each
#: ``f(spec, rows, masks=None)``; every other row-wise unit takes one element per cycle
HELD_INPUT: dict[
    tuple[Operator, str], tuple[Callable[..., list[list[int]]], Callable[..., list[int]]]
] = {
    (Operator.SOFTMAX, "online"): (online_input_gaps, online_row_delays),
    (Operator.SOFTMAX, "softermax"): (softermax_input_gaps, softermax_row_delays),
}
