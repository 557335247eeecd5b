"""``hwapprox rtl`` command line: listing, errors, one cached simulation."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from hwapprox.cli import cli
from hwapprox.rtl_sim.runner import simulator_available


def test_units_lists_every_unit() -> None:
    res = CliRunner().invoke(cli, ["rtl", "units"])
    assert res.exit_code == 0, res.output
    from hwapprox.rtl_sim.units import UNITS

    lines = res.output.splitlines()
    assert len(lines) == len(UNITS)
    for (op, m), unit in UNITS.items():  # one aligned line per unit: name, top module
        assert any(ln.split()[:2] == [f"{op}/{m}", unit.toplevel] for ln in lines), (op, m)


def test_unknown_field_is_a_clear_error() -> None:
    res = CliRunner().invoke(cli, ["rtl", "sim", "gelu", "--method", "lut", "--set", "bogus=3"])
    assert res.exit_code == 2
    assert "gelu/lut has no field(s) bogus" in res.output


def test_method_without_unit_is_a_clear_error() -> None:
    res = CliRunner().invoke(cli, ["rtl", "sim", "layernorm", "--method", "hls4ml_lut"])
    assert res.exit_code == 1
    assert "no RTL unit for layernorm/hls4ml_lut" in res.output


def test_synth_of_a_method_without_unit_says_so() -> None:
    """A method without an RTL unit is named as such, whether or not yosys is installed
    (the unit lookup comes before the tool check)."""
    res = CliRunner().invoke(cli, ["rtl", "synth", "layernorm", "-m", "hls4ml_lut"])
    assert res.exit_code == 1
    assert "no RTL unit for layernorm/hls4ml_lut; RTL units exist for:" in res.output
    assert "yowasp" not in res.output


def test_bad_stall_probability() -> None:
    res = CliRunner().invoke(cli, ["rtl", "sim", "gelu", "--method", "lut", "--stall", "1.5"])
    assert res.exit_code == 2
    assert "--stall must be in [0, 1), got 1.5" in res.output


@pytest.mark.rtl
@pytest.mark.skipif(simulator_available("verilator") is not None, reason="no Verilator")
def test_sim_reports_bit_exactness_latency_throughput() -> None:
    res = CliRunner().invoke(
        cli, ["rtl", "sim", "gelu", "--method", "lut", "--rows", "4", "--n", "16", "--stall", "0.2"]
    )
    assert res.exit_code == 0, res.output
    assert "BIT-EXACT" in res.output
    assert "latency first-in->first-out" in res.output
    assert "throughput:" in res.output


def test_unwritable_keep_dir_is_refused_before_the_build() -> None:
    """issue 21: rtl sim --keep /proc/x ended in a traceback."""
    from click.testing import CliRunner

    from hwapprox.cli import cli

    res = CliRunner().invoke(cli, ["rtl", "sim", "gelu", "-m", "lut", "--keep", "/proc/hwa-keep"])
    assert res.exit_code == 2
    assert "'/proc' is not writable" in res.output
    assert "Traceback" not in res.output
