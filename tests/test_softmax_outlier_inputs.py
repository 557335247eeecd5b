"""Softmax inputs with outlier scores (issue 26): calibrated by what the unit needs
(the fraction bits of ``x - max`` over the range where exp is non-zero at the output
precision) instead of giving fraction bits up to ``max|x|``; wider codes cost a
comparator and subtractor, not the exp path; the budget search tries them."""

from __future__ import annotations

import numpy as np
import pytest

from hwapprox.approx.softmax import OnlineSoftmax, stable_softmax
from hwapprox.export.calibrate import SiteStats
from hwapprox.export.example import inputs_path, model_path
from hwapprox.export.tuning import SearchSpace, candidate_specs, softmax_input_format
from hwapprox.export.validate import validate
from hwapprox.fixed import FixedFormat

F = FixedFormat.parse


def _outlier_rows(rng: np.random.Generator) -> np.ndarray:
    """Attention-sink rows: scores N(0, 2), one key (a high-norm token) at 250..295."""
    x = rng.normal(0.0, 2.0, (64, 197))
    x[:, 0] = rng.uniform(250.0, 295.0, 64)
    x[::2, 0] = rng.normal(0.0, 2.0, 32)  # half the rows without the outlier
    return x


def test_outlier_range_widens_the_code_not_the_lsb() -> None:
    rng = np.random.default_rng(0)
    x = _outlier_rows(rng)
    st = SiteStats.of("scores", x)
    assert st.choose_format(16) == F("ap_fixed<16,11,AP_RND,AP_SAT>")  # max|x|: 5 fraction bits
    got = softmax_input_format(st, 16, 1, "max", 16)
    assert got == F("ap_fixed<21,11,AP_RND,AP_SAT>")  # 10 fraction bits, as for |x| < 16
    normal = SiteStats.of("scores", rng.normal(0.0, 2.0, (64, 197)))
    assert softmax_input_format(normal, 16, 1, "max", 16) == normal.choose_format(16)


def test_outlier_site_error_against_float64() -> None:
    """Measured against the float64 softmax of the unquantised scores: the max|x|
    calibration loses hundreds of output LSBs, the unit-need calibration does not."""
    x = _outlier_rows(np.random.default_rng(1))
    p = stable_softmax(x)
    st = SiteStats.of("scores", x)
    out = "ap_ufixed<16,0,AP_RND,AP_SAT>"
    errs = {}
    for name, fmt in (
        ("max_abs", st.choose_format(16)),
        ("unit_need", softmax_input_format(st, 16, 1, "max", 16)),
    ):
        spec = OnlineSoftmax(in_fmt=fmt, out_fmt=out, row_max=256)
        errs[name] = float(np.abs(spec.evaluate(x) - p).max() * 2.0**16)
    assert errs["max_abs"] > 100, errs
    assert errs["unit_need"] < 0.1 * errs["max_abs"], errs


def test_wider_input_costs_the_compare_not_the_exp_path() -> None:
    a = OnlineSoftmax(in_fmt="ap_fixed<16,5,AP_RND,AP_SAT>")
    b = OnlineSoftmax(in_fmt="ap_fixed<22,11,AP_RND,AP_SAT>")  # the same 11 fraction bits
    assert b.exp_delta_bits() == a.exp_delta_bits()  # same fraction bits: same δ range
    assert b.cost().mult_bits == a.cost().mult_bits
    assert "comparator" in b.cost().notes
    # the clamp is exact: every δ beyond 2^exp_delta_bits - 1 gives E = 0
    d = np.arange(1 << b.exp_delta_bits(), 1 << b.in_fmt.width, 997, dtype=np.int64)
    assert not b.exp_unit_raw(d).any()


@pytest.fixture(scope="module")
def example():  # type: ignore[no-untyped-def]
    return validate(model_path(), inputs=inputs_path())


def test_budget_search_tries_wider_softmax_inputs(example) -> None:  # type: ignore[no-untyped-def]
    site = next(s for s in example.imported.sites if s.kind == "softmax")
    space = SearchSpace(ranges=("max",), params=False, methods={site.operator: ("online",)})
    cands = candidate_specs(site, example.stats[site.name], None, None, space)
    widths = sorted({c.in_fmt.width for c in cands})
    assert widths == [8, 10, 12, 16, 20, 24]
    assert all(c.out_fmt.width <= 16 for c in cands)
