"""Which SystemVerilog unit implements which spec, and its parameters.

:data:`UNITS` maps ``(operator, method)`` to an :class:`RtlUnit`: the top
module, its source files (``rtl/``) and a function that turns a spec (plus the
row buffer size for row-wise units) into SV parameters and ``$readmemh``
contents -- all taken from the spec's ``params()``/``tables()``, nothing
recomputed here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hwapprox.approx.base import ApproxSpec, Operator, SpecError
from hwapprox.fixed import FixedFormat, Overflow, Rounding
from hwapprox.rtl_sim.emit import memh_text

__all__ = ["UNITS", "RtlUnit", "get_unit", "list_units", "overflow_code", "rounding_code"]

_ROUNDING = [
    Rounding.TRN,
    Rounding.TRN_ZERO,
    Rounding.RND,
    Rounding.RND_ZERO,
    Rounding.RND_INF,
    Rounding.RND_MIN_INF,
    Rounding.RND_CONV,
]
_OVERFLOW = [Overflow.WRAP, Overflow.SAT, Overflow.SAT_ZERO, Overflow.SAT_SYM]

Config = tuple[dict[str, int | str], dict[str, str]]


def rounding_code(mode: Rounding) -> int:
    """``hwa_pkg`` RND_* code of an ap_fixed quantisation mode."""
    return _ROUNDING.index(Rounding(mode))


def overflow_code(mode: Overflow) -> int:
    """``hwa_pkg`` OVF_* code of an ap_fixed overflow mode."""
    return _OVERFLOW.index(Overflow(mode))


def _pow2_at_least(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


@dataclass(frozen=True)
class RtlUnit:
    """One SV unit: top module, sources, and spec -> (parameters, memory files)."""

    operator: Operator
    method: str
    toplevel: str
    sources: tuple[str, ...]
    configure: Callable[[Any, int], Config]
    rowwise: bool
    doc: str = ""

    def config(self, spec: ApproxSpec, row_max: int = 64) -> Config:
        if (spec.operator, spec.method) != (self.operator, self.method):
            raise SpecError(
                f"unit {self.toplevel} implements {self.operator}/{self.method}, "
                f"got a {spec.operator}/{spec.method} spec"
            )
        if self.rowwise and row_max < 1:
            raise SpecError(f"row_max must be >= 1, got {row_max}")
        return self.configure(spec, row_max)


def _signed_in(spec: ApproxSpec, unit: str) -> FixedFormat:
    if not spec.in_fmt.signed:
        raise SpecError(f"{unit} needs a signed in_fmt, got {spec.in_fmt}")
    return spec.in_fmt


# -- GELU ------------------------------------------------------------------------------
def _gelu_lut_indexed(spec: Any, row_max: int) -> Config:
    p = spec.params()
    lut = spec.tables()["lut"]
    if len(lut) != p["table_size"]:
        raise SpecError(f"gelu/lut: {len(lut)} table entries, params say {p['table_size']}")
    params: dict[str, int | str] = {
        "IN_W": p["in_width"],
        "IN_SIGNED": int(spec.in_fmt.signed),
        "OUT_W": p["out_width"],
        "INDEX_BITS": p["index_bits"],
    }
    return params, {"LUT_FILE": memh_text(lut, spec.out_fmt.width)}


def _gelu_pwl(spec: Any, row_max: int) -> Config:
    p = spec.params()
    t = spec.tables()
    bp, sl, ic = t["breakpoints"], t["slopes"], t["intercepts"]
    f_in, f_s, f_c = p["in_frac_bits"], p["slope_frac_bits"], p["intercept_frac_bits"]
    fa = p["acc_frac_bits"]
    w_in, w_s, w_c = p["in_width"], p["slope_width"], p["intercept_width"]
    sh_xs, sh_c, sh_x = fa - f_in - f_s, fa - f_c, fa - f_in
    acc_w = max(w_in + w_s + sh_xs, w_c + sh_c, w_in + sh_x) + 2
    params: dict[str, int | str] = {
        "IN_W": w_in,
        "OUT_W": p["out_width"],
        "OUT_SIGNED": int(spec.out_fmt.signed),
        "OUT_RND": rounding_code(spec.out_fmt.rounding),
        "OUT_OVF": overflow_code(spec.out_fmt.overflow),
        "NSEG": p["segments"],
        "S_W": w_s,
        "C_W": w_c,
        "SH_XS": sh_xs,
        "SH_C": sh_c,
        "SH_X": sh_x,
        "OUT_SHIFT": fa - p["out_frac_bits"],
        "ACC_W": acc_w,
    }
    mems = {
        "BP_FILE": memh_text(bp, w_in),
        "SLOPE_FILE": memh_text(sl, w_s),
        "ICPT_FILE": memh_text(ic, w_c),
    }
    return params, mems


# -- LayerNorm ---------------------------------------------------------------------------
def _layernorm_rsqrt(spec: Any, row_max: int) -> Config:
    _signed_in(spec, "layernorm/rsqrt_lut")
    p = spec.params()
    if row_max > p["max_n"]:
        raise SpecError(
            f"row_max={row_max} exceeds the spec's max_n={p['max_n']} (its accumulator sizes)"
        )
    params: dict[str, int | str] = {
        "IN_W": p["in_width"],
        "OUT_W": p["out_width"],
        "OUT_SIGNED": int(spec.out_fmt.signed),
        "OUT_RND": rounding_code(spec.out_fmt.rounding),
        "OUT_OVF": overflow_code(spec.out_fmt.overflow),
        "GAMMA_W": p["gamma_width"],
        "BETA_W": p["beta_width"],
        "CENTER": p["center"],
        "ROW_MAX": row_max,
        "BUF_DEPTH": _pow2_at_least(2 * row_max),
        "ROWQ": 4,
        "N_BITS": p["n_bits"],
        "S1_W": p["s1_bits"],
        "S2_W": p["s2_bits"],
        "D_W": p["d_bits"],
        "DE_W": p["de_bits"],
        "A_W": p["a_bits"],
        "AY_W": p["ay_bits"],
        "Z_W": p["z_bits"],
        "ACC_W": p["acc_bits"],
        "EPS_Q": f"64'd{p['eps_q']}",
        "G": p["eps_guard_bits"],
        "P": p["rsqrt_frac_bits"],
        "TB": p["rsqrt_table_bits"],
        "NEWTON": p["newton_steps"],
        "FZ": p["norm_frac_bits"],
        "BETA_SHIFT": p["beta_shift"],
        "OUT_SHIFT": p["out_shift"],
    }
    if not spec.gamma_fmt.signed or not spec.beta_fmt.signed:
        raise SpecError("layernorm/rsqrt_lut RTL needs signed gamma_fmt and beta_fmt")
    table = spec.tables()["rsqrt_table"]
    return params, {"RSQRT_FILE": memh_text(table, p["rsqrt_frac_bits"])}


# -- softmax ------------------------------------------------------------------------------
def _softmax_online(spec: Any, row_max: int) -> Config:
    _signed_in(spec, "softmax/online")
    if spec.schedule != "online":
        raise SpecError(
            f"the RTL unit implements schedule='online', got schedule={spec.schedule!r}"
        )
    p = spec.params()
    t = spec.tables()
    if row_max > int(spec.sum_fmt.max):
        raise SpecError(f"row_max={row_max} exceeds what sum_fmt {spec.sum_fmt} can count")
    base2 = bool(p["EXP_UNIT_BASE2"])
    params: dict[str, int | str] = {
        "IN_W": p["IN_W"],
        "OUT_W": p["OUT_W"],
        "OUT_SIGNED": p["OUT_SIGNED"],
        "OUT_RND": rounding_code(spec.out_fmt.rounding),
        "OUT_OVF": overflow_code(spec.out_fmt.overflow),
        "OUT_SHIFT": p["EXP_F"] + p["RECIP_F"] - p["OUT_F"],
        "ROW_MAX": row_max,
        "BUF_DEPTH": _pow2_at_least(2 * row_max),
        "ROWQ": 4,
        "N_BITS": row_max.bit_length() + 1,
        "BASE2": int(base2),
        "EXP_W": p["EXP_W"],
        "EXP_F": p["EXP_F"],
        "EXP_RND": rounding_code(spec.exp_fmt.rounding),
        "SUM_W": p["SUM_W"],
        "SUM_F": p["SUM_F"],
        "SUM_RND": rounding_code(spec.sum_fmt.rounding),
        "R_W": p["RECIP_W"],
        "R_F": p["RECIP_F"],
        "R_OVF": overflow_code(spec.recip_fmt.overflow),
        "WF": p["RECIP_WORK_F"],
        "TB": p["RECIP_TABLE_BITS"],
        "NEWTON": p["RECIP_NEWTON"],
        "STEPS": p["NEWTON_STEPS"],
        "R_RND": rounding_code(spec.recip_fmt.rounding),
    }
    if base2:
        params |= {
            "LOG2E": f"64'd{p['LOG2E']}",
            "LOG2E_W": p["LOG2E_W"],
            "PROD_SHIFT": p["IN_F"] + p["LOG2E_F"] - p["T_F"],
            "T_W": p["T_W"],
            "T_F": p["T_F"],
            "T_RND": rounding_code(spec.exp_arg_fmt.rounding),
            "A": p["EXP2_ADDR_BITS"],
            "TABLE_F": p["EXP2_TABLE_F"],
            "INTERP": p["EXP2_INTERP"],
        }
        exp_mem = memh_text(t["exp2_table"], p["EXP2_TABLE_F"] + 1)
    else:
        params |= {
            "LUT_BITS": p["EXP_LUT_BITS"],
            "LIM_BITS": p["IN_F"] + p["EXP_LUT_INT_BITS"],
            "LUT_SHIFT": p["EXP_LUT_SHIFT"],
        }
        exp_mem = memh_text(t["exp_lut"], p["EXP_W"])
    recip_mem = memh_text(t["recip_table"], p["RECIP_WORK_F"] + 1)
    return params, {"EXP_FILE": exp_mem, "RECIP_FILE": recip_mem}


_COMMON = ("hwa_pkg.sv", "hwa_rom.sv", "hwa_round_shift.sv", "hwa_sat.sv")

#: (operator, method) -> unit
UNITS: dict[tuple[Operator, str], RtlUnit] = {
    (Operator.GELU, "lut"): RtlUnit(
        Operator.GELU,
        "lut",
        "hwa_gelu_lut",
        ("hwa_rom.sv", "hwa_gelu_lut.sv"),
        _gelu_lut_indexed,
        rowwise=False,
        doc="direct table, one entry per input code (or per bin); latency 2",
    ),
    (Operator.GELU, "pwl"): RtlUnit(
        Operator.GELU,
        "pwl",
        "hwa_gelu_pwl",
        (*_COMMON, "hwa_gelu_pwl.sv"),
        _gelu_pwl,
        rowwise=False,
        doc="parallel breakpoint compare, slope/intercept ROMs, one MAC; latency 4",
    ),
    (Operator.SOFTMAX, "online"): RtlUnit(
        Operator.SOFTMAX,
        "online",
        "hwa_softmax_online",
        (*_COMMON, "hwa_exp_unit.sv", "hwa_recip.sv", "hwa_softmax_online.sv"),
        _softmax_online,
        rowwise=True,
        doc=(
            "single pass: running max and sum, exp base2 (table + PWL) or LUT, "
            "1/d per row (Newton or PWL), circular row buffer"
        ),
    ),
    (Operator.LAYERNORM, "rsqrt_lut"): RtlUnit(
        Operator.LAYERNORM,
        "rsqrt_lut",
        "hwa_layernorm_rsqrt",
        (*_COMMON, "hwa_layernorm_rsqrt.sv"),
        _layernorm_rsqrt,
        rowwise=True,
        doc="single-pass S1/S2, pipelined 1/sqrt (table + Newton), gamma/beta memory",
    ),
}


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
