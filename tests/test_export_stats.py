"""Running statistics (hwapprox.export.stats) against numpy on the same data."""

from __future__ import annotations

import math
from unittest.mock import patch

import numpy as np
import pytest

from hwapprox.approx import _kernels
from hwapprox.export.calibrate import PERCENTILES, SiteStats
from hwapprox.export.stats import RunningStats


def _data(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.normal(0, 3, 100_000).astype(np.float32),
        rng.standard_t(2, 50_000).astype(np.float32) * 40,  # heavy tails (outliers)
        np.concatenate([np.full(5000, -1e4), rng.normal(1.5, 0.2, 20_000)]).astype(np.float32),
        rng.uniform(-1e-3, 1e-3, 10_000),  # float64, tiny values
        np.array([0.0, -0.0, 5.0, -7.0, 2.0**-130], dtype=np.float32),  # zeros, subnormal
    ]


@pytest.mark.parametrize("i", range(5))
def test_moments_and_extremes_match_numpy(i: int) -> None:
    x = _data(0)[i]
    rs = RunningStats().add(x)
    ref = x.astype(np.float64)
    assert rs.count == x.size
    assert (rs.min, rs.max) == (ref.min(), ref.max())
    assert rs.mean == pytest.approx(ref.mean(), rel=1e-12, abs=1e-15)
    assert rs.std == pytest.approx(ref.std(), rel=1e-9)


@pytest.mark.parametrize("i", range(5))
def test_percentiles_are_the_lower_order_statistic_within_one_bfloat16_step(i: int) -> None:
    x = _data(0)[i]
    rs = RunningStats().add(x)
    got = rs.percentile(PERCENTILES)
    exact = np.percentile(x.astype(np.float32).astype(np.float64), PERCENTILES, method="lower")
    for g, e in zip(got, exact, strict=True):
        assert np.sign(g) == np.sign(e) or g == 0
        assert abs(g) <= abs(e)  # rounded toward zero
        assert abs(e) - abs(g) <= abs(e) * 2.0**-7
        if e != 0 and g != 0:
            assert math.floor(math.log2(abs(g))) == math.floor(math.log2(abs(e)))  # same binade


def test_merged_batches_equal_the_whole() -> None:
    x = np.concatenate(_data(1)[:3])
    whole = RunningStats().add(x)
    parts = [RunningStats().add(c) for c in np.array_split(x, 7)]
    merged = RunningStats()
    for p in parts:
        merged.merge(p)
    assert np.array_equal(merged.hist, whole.hist)
    assert np.array_equal(merged.percentile(PERCENTILES), whole.percentile(PERCENTILES))
    assert (merged.count, merged.min, merged.max) == (whole.count, whole.min, whole.max)
    assert merged.mean == pytest.approx(whole.mean, rel=1e-12)
    assert merged.std == pytest.approx(whole.std, rel=1e-10)


def test_mask_and_nonfinite_are_counted_not_binned() -> None:
    x = np.array([[1.0, np.inf, -2.0], [np.nan, 3.0, 4.0]], dtype=np.float32)
    mask = np.array([[False, False, True], [False, False, False]])
    rs = RunningStats().add(x, mask)
    assert (rs.count, rs.nonfinite, rs.masked) == (3, 2, 1)
    assert (rs.min, rs.max) == (1.0, 4.0)
    assert int(rs.hist.sum()) == 3


def test_formats_from_the_sketch_match_exact_percentiles() -> None:
    """The formats choose_format picks from the sketch's percentiles are those of the
    exact lower order statistics (the binade is exact), for every range policy."""
    for x in _data(2)[:3]:
        st = SiteStats.of("s", x)
        exact = dict(
            zip(
                PERCENTILES,
                np.percentile(x.astype(np.float64), PERCENTILES, method="lower"),
                strict=True,
            )
        )
        for stat, lo in (("p99.99", 0.01), ("p99.9", 0.1), ("p99", 1.0)):
            m = max(abs(exact[lo]), abs(exact[100 - lo]))
            want = math.floor(math.log2(m)) + 2 + 1
            assert st.int_bits(1, stat) == want
        assert st.int_bits(1, "max") == math.floor(math.log2(np.abs(x).max())) + 3


def test_empty_site_is_a_clear_error() -> None:
    from hwapprox.export.errors import ExportError

    with pytest.raises(ExportError, match="no finite values"):
        SiteStats.of("s", np.array([np.nan], dtype=np.float32))


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
def test_compiled_add_matches_the_numpy_path() -> None:
    """RunningStats.add of float32 (two compiled passes) == the numpy path: the same
    histogram, count, non-finite count, min and max; moments to float64 rounding."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(300_001) * 3 + 0.5).astype(np.float32)
    x[[5, 70, 900]] = [np.inf, np.nan, -np.inf]
    x[1000:1010] = 0.0
    x[1010] = -0.0
    fast = RunningStats().add(x).add(x[:777])
    with patch.object(_kernels, "enabled", False):
        slow = RunningStats().add(x).add(x[:777])
    assert np.array_equal(fast.hist, slow.hist)
    assert (fast.count, fast.nonfinite, fast.min, fast.max) == (
        slow.count, slow.nonfinite, slow.min, slow.max
    )  # fmt: skip
    assert fast.mean == pytest.approx(slow.mean, rel=1e-12)
    assert fast.std == pytest.approx(slow.std, rel=1e-10)
    one = RunningStats().add(x)
    bad = x.copy()
    bad[123] = 1e30  # a planted difference moves the histogram and the max
    planted = RunningStats().add(bad)
    assert not np.array_equal(planted.hist, one.hist)
    assert planted.max != one.max
