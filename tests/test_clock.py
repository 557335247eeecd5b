"""Ranking at a target clock: the post-route Fmax of a spec (measured or estimated
from the nearest measured format), the ``--clock`` filter of tune and the budget
search, and the Pareto plot's front at a clock.

The Fmax figures here come from a synthetic ``"fmax"`` section (monkeypatched into
the cost table), so each test knows which spec was "measured" at what clock; the
shipped table's own figures are checked in tests/test_rtl_pnr.py.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hwapprox.approx import costmodel
from hwapprox.approx.inputs import InputSet
from hwapprox.approx.registry import make_spec
from hwapprox.approx.sweep import Grid
from hwapprox.approx.tune import Budget, tune


def _point(label: str, mhz: float, **fields: Any) -> dict[str, Any]:
    spec = make_spec("gelu", fields.pop("method"), **fields)
    return {"label": label, "spec": spec.to_config(), "fmax_mhz": mhz}


def _table(units: dict[str, dict[str, Any]]) -> dict[str, Any]:
    t = copy.deepcopy(costmodel.load_table())
    t["fmax"] = {"device": "Lattice ECP5 LFE5U-85F-6", "tools": {"t": "v"}, "units": units}
    return t


@pytest.fixture
def fake_fmax(monkeypatch: pytest.MonkeyPatch) -> None:
    """gelu/pwl: default 100 MHz, in/out 12 bits 150 MHz; gelu/lut: default 200 MHz."""
    pwl = _point("default", 100.0, method="pwl")
    pwl["variants"] = [
        _point(
            "in/out 12/12 bits",
            150.0,
            method="pwl",
            in_fmt="ap_fixed<12,5,AP_RND,AP_SAT>",
            out_fmt="ap_fixed<12,5,AP_RND,AP_SAT>",
        )
    ]
    lut = _point("default", 200.0, method="lut")
    table = _table({"gelu/pwl": pwl, "gelu/lut": lut})
    monkeypatch.setattr(costmodel, "load_table", lambda: table)


@pytest.mark.usefixtures("fake_fmax")
def test_fmax_is_exact_for_a_measured_spec_and_nearest_otherwise() -> None:
    f = costmodel.fmax(make_spec("gelu", "pwl"))
    assert f is not None
    assert (f["fmax_mhz"], f["exact"], f["basis"]) == (100.0, True, "default")
    twelve = make_spec(
        "gelu", "pwl", in_fmt="ap_fixed<12,5,AP_RND,AP_SAT>", out_fmt="ap_fixed<12,5,AP_RND,AP_SAT>"
    )
    f = costmodel.fmax(twelve)
    assert f is not None
    assert (f["fmax_mhz"], f["exact"]) == (150.0, True)
    # 11 bits: nearer the 12-bit point than the 16-bit default
    eleven = make_spec(
        "gelu", "pwl", in_fmt="ap_fixed<11,5,AP_RND,AP_SAT>", out_fmt="ap_fixed<11,5,AP_RND,AP_SAT>"
    )
    f = costmodel.fmax(eleven)
    assert f is not None
    assert (f["fmax_mhz"], f["exact"], f["basis"]) == (150.0, False, "in/out 12/12 bits")
    # 15 bits: nearer the default
    fifteen = make_spec(
        "gelu", "pwl", in_fmt="ap_fixed<15,5,AP_RND,AP_SAT>", out_fmt="ap_fixed<15,5,AP_RND,AP_SAT>"
    )
    f = costmodel.fmax(fifteen)
    assert f is not None
    assert (f["fmax_mhz"], f["exact"], f["basis"]) == (100.0, False, "default")
    # a unit that was never placed and routed has no figure, and meets no clock
    assert costmodel.fmax(make_spec("gelu", "edgemoe")) is None
    ok, why = costmodel.meets_clock(make_spec("gelu", "edgemoe"), 50.0)
    assert not ok
    assert "no post-route Fmax" in why
    assert costmodel.meets_clock(make_spec("gelu", "edgemoe"), None) == (True, "")
    ok, why = costmodel.meets_clock(fifteen, 125.0)
    assert not ok
    assert "100.0 MHz" in why
    assert "estimated from its default spec" in why


def _gelu_grid() -> Grid:
    return Grid(
        operator="gelu",
        methods=["pwl", "lut"],
        out_widths=[12, 16],
        fields={"in_fmt": ["ap_fixed<12,5,AP_RND,AP_SAT>", "ap_fixed<16,5,AP_RND,AP_SAT>"]},
        inputs=(InputSet(dist="uniform", rows=8, n=256, low=-6.0, high=6.0),),
    )


@pytest.mark.usefixtures("fake_fmax")
def test_tune_at_a_clock_skips_the_units_that_miss_it() -> None:
    budget = Budget(max_abs=0.05)
    free = tune(_gelu_grid(), budget)
    assert free.met
    assert free.best is not None
    at = tune(_gelu_grid(), budget, clock_mhz=140.0)
    assert at.space_size < free.space_size
    slow = [why for _, why in at.skipped if "MHz" in why]
    assert slow, at.skipped
    for c in at.evaluated:
        f = costmodel.fmax(c.spec)
        assert f is not None
        assert f["fmax_mhz"] >= 140.0
    assert "reaching 140 MHz" in at.summary()
    none = tune(_gelu_grid(), budget, clock_mhz=500.0)
    assert not none.met
    assert none.space_size == 0
    assert "reaching 500 MHz" in none.summary()


@pytest.mark.usefixtures("fake_fmax")
def test_sweep_records_fmax_and_the_plot_draws_the_front_at_the_clock(tmp_path: Path) -> None:
    from hwapprox.approx.sweep import expand, run_sweep
    from hwapprox.report.plots import plot_pareto

    exp = expand(_gelu_grid())
    res = run_sweep(exp.points, tmp_path / "sw", progress=False)
    got = {json.dumps(r["spec"], sort_keys=True): r for r in res.ok()}
    assert got
    for r in got.values():
        f = costmodel.fmax(make_spec("gelu", r["method"], **_fields(r["spec"])))
        assert r["fmax_mhz"] == (None if f is None else f["fmax_mhz"])
    files = plot_pareto(res.records, tmp_path, clock_mhz=140.0)
    assert any(p.name == "pareto_gelu.png" for p in files)


def _fields(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in ("operator", "method")}


def test_validate_clock_needs_a_budget() -> None:
    from hwapprox.cli import cli

    res = CliRunner().invoke(cli, ["validate", "--clock", "125"])
    assert res.exit_code == 2
    assert "--budget" in res.output


@pytest.mark.usefixtures("fake_fmax")
def test_budget_search_candidates_at_a_clock() -> None:
    import numpy as np
    from onnx_models import single_node

    from hwapprox.export.tuning import SearchSpace, candidate_specs
    from hwapprox.export.validate import import_model, validate

    imp = import_model(single_node("Gelu", [4, 256], 20))
    x = {"x": np.linspace(-6.0, 6.0, 1024, dtype=np.float32).reshape(4, 256)}
    res = validate(imp, inputs=x)
    site = imp.sites[0]
    stats, out = res.stats[site.name], res.trace.out_stats[site.name]
    free = candidate_specs(site, stats, out, None, SearchSpace())
    at = candidate_specs(site, stats, out, None, SearchSpace(clock_mhz=150.0))
    assert 0 < len(at) < len(free)
    assert {s.method for s in at} <= {"lut", "pwl"}
    for s in at:
        f = costmodel.fmax(s)
        assert f is not None
        assert f["fmax_mhz"] >= 150.0
