"""The cost model fitted to yosys synthesis (approx/costmodel.py and its shipped table)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hwapprox.approx import costmodel
from hwapprox.approx.base import SpecError
from hwapprox.approx.registry import make_spec, spec_from_config


def test_nnls_matches_a_brute_force_search() -> None:
    """On small problems NNLS equals the best least-squares fit over every support set
    (the non-negative optimum is the unconstrained optimum on some support)."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.normal(size=(9, 4))
        b = rng.normal(size=9) + a @ np.array([1.0, 0.0, 2.0, 0.0])
        x = costmodel.nnls(a, b)
        assert (x >= 0).all()
        best = np.inf
        for k in range(5):
            for sup in itertools.combinations(range(4), k):
                z = np.zeros(4)
                if sup:
                    z[list(sup)] = np.linalg.lstsq(a[:, sup], b, rcond=None)[0]
                if (z >= 0).all():
                    best = min(best, float(np.linalg.norm(a @ z - b)))
        assert np.linalg.norm(a @ x - b) <= best + 1e-9


def test_fit_recovers_a_linear_truth_and_reports_loo() -> None:
    rng = np.random.default_rng(1)
    rows = []
    for _ in range(12):
        f = {k: float(rng.uniform(0, 5)) for k in costmodel.FEATURES}
        f["one"] = 1.0
        lut = 10 + 3 * f["mult"] + 7 * f["table"]
        rows.append(
            {
                "unit": "gelu/x",
                "family": "7series",
                "features": f,
                "LUT": lut,
                "FF": 2 * lut,
                "DSP": f["dsp_tiles"],
                "BRAM": 0.0,
            }
        )
    m = costmodel.fit_table(rows)["gelu/x@7series"]
    coef = dict(zip(costmodel.FEATURES, m["coef"]["LUT"], strict=True))
    assert coef["one"] == pytest.approx(10, abs=1e-6)
    assert coef["mult"] == pytest.approx(3, abs=1e-6)
    assert coef["table"] == pytest.approx(7, abs=1e-6)
    assert m["loo"]["LUT"]["max"] < 1e-6  # exact truth: held-out points predicted exactly


def test_unknown_family_is_refused() -> None:
    with pytest.raises(SpecError, match="unknown family 'virtex2'"):
        costmodel.estimate(make_spec("gelu", "lut"), "virtex2")


TABLE = costmodel.load_table()
needs_table = pytest.mark.skipif(not TABLE.get("models"), reason="no cost table shipped yet")


@needs_table
def test_every_rtl_unit_has_a_fitted_model_per_family() -> None:
    from hwapprox.rtl_sim.units import UNITS

    for (op, m), _ in UNITS.items():
        for fam in costmodel.FAMILIES:
            assert f"{op.value}/{m}@{fam}" in TABLE["models"], f"{op}/{m}@{fam}"


@needs_table
def test_estimates_follow_the_measured_rows_within_the_stated_error() -> None:
    """Each measured row is predicted within its unit's leave-one-out maximum (the fit
    uses that row, so it can only do better) -- the model is the table's, not a proxy."""
    for r in TABLE["rows"]:
        spec = spec_from_config(r["spec"])
        e = costmodel.estimate(spec, r["family"])
        assert e.source == "fit"
        loo = TABLE["models"][f"{r['unit']}@{r['family']}"]["loo"]["LUT"]["max"]
        if loo is None:  # too few specs for a held-out error: the fit must hit its own rows
            loo = 0.05
        assert abs(e.LUT - r["LUT"]) <= max(loo, 0.05) * max(r["LUT"], 1.0) + 5


@needs_table
def test_methods_without_rtl_get_the_pooled_estimate() -> None:
    e = costmodel.estimate(make_spec("softmax", "hls4ml_stable"), "7series")
    assert e.source == "pooled"
    assert e.LUT > 0


@needs_table
def test_a_bigger_table_ranks_costlier() -> None:
    small = make_spec("gelu", "lut", in_fmt="ap_fixed<12,4>", index_bits=8)
    big = make_spec("gelu", "lut", in_fmt="ap_fixed<12,4>", index_bits=12)
    assert costmodel.rank_score(big) > costmodel.rank_score(small)
