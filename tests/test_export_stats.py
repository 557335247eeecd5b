"""Running statistics (hwapprox.export.stats) against numpy on the same data."""

from __future__ import annotations

import math
from unittest.mock import patch

import numpy as np
import pytest

from hwapprox.approx import _kernels
from hwapprox.export.calibrate import PERCENTILES, SiteStats
from hwapprox.export.stats import RunningStats, _edges_toward_zero, _scratch


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


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
@pytest.mark.parametrize("i", range(5))
def test_percentile_positions_compiled_match_cumsum_searchsorted(i: int) -> None:
    """The block-wise rank walk gives the cumsum + searchsorted percentiles exactly, for
    the recorded percentiles in any order, repeated ones, and the extremes; a walk one
    bin late is caught."""
    rs = RunningStats().add(_data(1)[i])
    qs = [99.99, 0.0, 50.0, 0.01, 50.0, 100.0, 1.0, 99.0, 0.1, 99.9, 25.0]
    got = rs.percentile(qs)
    with patch.object(_kernels, "enabled", False):
        want = rs.percentile(qs)
    assert np.array_equal(got, want)
    real = _kernels.block_percentiles

    def late(ids, counts, qs, count, lo, hi, pat, out):
        real(ids, counts, qs, count, lo, hi, pat, out)
        pat += np.where(pat >= 0x8000, -1, 1)  # the next bucket in value order
        inner = (out != lo) & (out != hi)
        out[inner] = _edges_toward_zero(pat)[inner]

    with patch.object(_kernels, "block_percentiles", late):
        inner = [q for q in qs if 0.0 < q < 100.0]
        assert not np.array_equal(rs.percentile(inner), want[[qs.index(q) for q in inner]])


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
def test_rank_patterns_match_the_value_order_walk() -> None:
    """``block_rank_patterns`` on sparse and dense histograms (several ranks in one
    exponent block, ranks on block edges, every rank of a small histogram, ranks past
    the total) equals ``_ORDER[searchsorted(cumsum(hist[_ORDER]), rank, "right")]``."""
    from hwapprox.export.stats import _ORDER, BLOCK_BINS, HIST_BINS

    rng = np.random.default_rng(5)
    finite = np.ones(HIST_BINS, bool)
    finite[0x7F80:0x8000] = finite[0xFF80:] = False
    hists = []
    for density in (3, 40, 5000, int(finite.sum())):
        h = np.zeros(HIST_BINS, np.int64)
        h[rng.choice(np.flatnonzero(finite), density, replace=False)] = rng.integers(1, 9, density)
        hists.append(h)
    h = np.zeros(HIST_BINS, np.int64)
    h[[0x8000, 0xFF00, 0xFF7F, 0x0000, 0x007F, 0x0080, 0x7F7F]] = 1  # block edges, +-0
    hists.append(h)
    for h in hists:
        cum = np.cumsum(h[_ORDER])
        total = int(cum[-1])
        ranks = np.unique(np.concatenate([
            np.arange(min(total, 300)), rng.integers(0, total, 200), [total - 1, total, total + 5],
        ]))  # fmt: skip
        pos = np.searchsorted(cum, ranks, side="right")
        want = np.where(pos < _ORDER.size, _ORDER[np.minimum(pos, _ORDER.size - 1)], -1)
        got = np.empty(ranks.size, np.int64)
        hb = h.reshape(-1, BLOCK_BINS)
        ids = np.flatnonzero(hb.any(axis=1)).astype(np.int64)
        _kernels.block_rank_patterns(ids, hb[ids], ranks, got)
        assert np.array_equal(got, want)


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


def test_histogram_blocks_merge_without_aliasing() -> None:
    """The histogram is kept only for the exponent blocks the data reach; merging the
    same statistics twice (new blocks, then the in-place add) doubles every count and
    leaves the merged-in statistics unchanged; merging into empty statistics copies."""
    x = _data(3)[0]
    b = RunningStats().add(x)
    assert 0 < b.blocks.size < 64
    assert b.counts.shape == (b.blocks.size, 128)
    h_b = b.hist
    a = RunningStats().merge(b)
    a.merge(b)
    assert np.array_equal(a.hist, 2 * h_b)
    assert np.array_equal(b.hist, h_b)
    c = RunningStats().add(np.array([1e-30, -3e20], dtype=np.float32)).merge(b)
    want = h_b.copy()
    want[[np.float32(1e-30).view(np.uint32) >> 16, np.float32(-3e20).view(np.uint32) >> 16]] += 1
    assert np.array_equal(c.hist, want)
    assert np.array_equal(b.hist, h_b)


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
    """RunningStats.add of float32 (one compiled pass) == the numpy path: the same
    histogram, count, non-finite count, min and max; moments to float64 rounding, also
    for data far from zero relative to their spread (no cancellation)."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(300_001) * 3 + 0.5).astype(np.float32)
    x[[5, 70, 900]] = [np.inf, np.nan, -np.inf]
    x[1000:1010] = 0.0
    x[1010] = -0.0
    fast = RunningStats().add(x).add(x[:777])
    assert not _scratch().any()  # the kernel's per-thread histogram is left all zero
    with patch.object(_kernels, "enabled", False):
        slow = RunningStats().add(x).add(x[:777])
    assert np.array_equal(fast.hist, slow.hist)
    assert (fast.count, fast.nonfinite, fast.min, fast.max) == (
        slow.count, slow.nonfinite, slow.min, slow.max
    )  # fmt: skip
    assert fast.mean == pytest.approx(slow.mean, rel=1e-12)
    assert fast.std == pytest.approx(slow.std, rel=1e-10)
    far = (3000.0 + rng.standard_normal(100_003) * 0.01).astype(np.float32)
    f_fast = RunningStats().add(far)
    with patch.object(_kernels, "enabled", False):
        f_slow = RunningStats().add(far)
    assert f_fast.std == pytest.approx(f_slow.std, rel=1e-9)
    assert f_fast.std == pytest.approx(np.std(far.astype(np.float64)), rel=1e-9)
    one = RunningStats().add(x)
    bad = x.copy()
    bad[123] = 1e30  # a planted difference moves the histogram and the max
    planted = RunningStats().add(bad)
    assert not np.array_equal(planted.hist, one.hist)
    assert planted.max != one.max


@pytest.mark.parametrize("masked", [False, True])
def test_site_error_sums_compiled_match_numpy(masked: bool) -> None:
    """validate's per-site error sums and saturation counts: the compiled pass against
    the numpy path (kernels switched off) and against figures written out here; a
    planted error in one kept element moves the maximum."""
    from hwapprox.approx import _kernels
    from hwapprox.export.validate import _err_sums

    rng = np.random.default_rng(3)
    y = rng.standard_normal((6, 7, 33))
    yf = (y + rng.normal(0, 1e-3, y.shape)).astype(np.float32)
    keep = rng.random(y.shape) > 0.3 if masked else None
    fast = _err_sums(y, yf, keep)
    with patch.object(_kernels, "enabled", False):
        slow = _err_sums(y, yf, keep)
    d = np.abs(y - yf.astype(np.float64))
    r = yf.astype(np.float64)
    if keep is not None:
        d, r = d[keep], r[keep]
    want = (d.size, d.max(), d.sum(), (d**2).sum(), (r**2).sum())
    assert fast[0] == slow[0] == want[0]
    np.testing.assert_allclose(fast[1:], want[1:], rtol=1e-12)
    np.testing.assert_allclose(slow[1:], want[1:], rtol=1e-12)
    i = np.flatnonzero(keep.reshape(-1) if keep is not None else np.ones(y.size, bool))[5]
    y2 = y.copy().reshape(-1)
    y2[i] += 0.5
    assert _err_sums(y2.reshape(y.shape), yf, keep)[1] > fast[1] + 0.4

    from hwapprox.approx.registry import make_spec
    from hwapprox.export.validate import saturation

    spec = make_spec("gelu", "lut")
    x = rng.normal(0, 6, y.shape).astype(np.float32)
    mask = ~keep if keep is not None else None
    got = saturation(spec, x, yf, mask)
    with patch.object(_kernels, "enabled", False):
        assert saturation(spec, x, yf, mask) == got
    xs = x.astype(np.float64) if mask is None else x[~mask].astype(np.float64)
    f = spec.in_fmt
    assert got["in"] == np.count_nonzero((xs < f.min - f.lsb) | (xs > f.max + f.lsb)) > 0
    assert got["in_total"] == xs.size


@pytest.mark.parametrize("masked", [False, True])
def test_saturation_from_calibration_extremes_equals_the_count(masked: bool) -> None:
    """``saturation`` given the calibration statistics of the same elements skips its
    pass exactly where the extremes prove the count is 0 (inside, or at the one-LSB
    tolerance), and counts where a value lies past it: the same counts and totals as
    without the statistics. A non-finite value forces the pass."""
    from hwapprox.approx.registry import make_spec
    from hwapprox.export.validate import saturation

    spec = make_spec("gelu", "lut")
    fi, lsb = spec.in_fmt, float(spec.in_fmt.lsb)
    rng = np.random.default_rng(11)
    mask = (rng.random((5, 1, 40)) < 0.3) if masked else None
    if mask is not None:
        mask[0, 0, 7] = False  # the planted value below is unmasked
    base = rng.uniform(float(fi.min) / 2, float(fi.max) / 2, (5, 3, 40)).astype(np.float32)
    no_pass = patch.object(_kernels, "count_outside", side_effect=AssertionError("a pass ran"))
    for past, outside in ((0.0, 0), (lsb, 0), (1.25 * lsb, 1), (3.0, 1), (np.inf, 1)):
        x = base.copy()
        x[0, 1, 7] = float(fi.max) + past
        fo = spec.out_fmt  # outputs well inside their format
        y = (np.clip(np.nan_to_num(x), float(fo.min), float(fo.max)) / 2).astype(np.float32)
        st = (SiteStats.of("s", x, mask), SiteStats.of("s", y, mask))
        want = saturation(spec, x, y, mask)
        kept = x.size if mask is None else int((~np.broadcast_to(mask, x.shape)).sum())
        assert want == {"in": outside, "in_total": kept, "out": 0, "out_total": kept}, past
        if outside or not _kernels.available():
            assert saturation(spec, x, y, mask, st) == want, past
        else:
            with no_pass:
                assert saturation(spec, x, y, mask, st) == want, past


def test_lazy_map_membership_does_not_compute() -> None:
    """``name in trace.row_extents`` must not compute the extents (validate asks it for
    every softmax site); reading the value computes it once."""
    from hwapprox.export.calibrate import LazyMap

    calls: list[str] = []
    lm = LazyMap({"a": lambda: calls.append("a") or np.zeros(1)})
    assert "a" in lm
    assert "b" not in lm
    assert calls == []
    lm["a"], lm["a"]
    assert calls == ["a"]


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
def test_mask_like_count_matches_numpy() -> None:
    """``count_mask_like`` counts NaN, +-inf and values at or below the limit outside
    the mask, as ``~isfinite(a) | (a <= limit)`` does; the limit itself counts."""
    rng = np.random.default_rng(2)
    for dt in (np.float32, np.float64):
        a = rng.normal(0, 1e4, 5000).astype(dt)
        a[rng.integers(0, 5000, 40)] = np.nan
        a[rng.integers(0, 5000, 40)] = -np.inf
        a[rng.integers(0, 5000, 40)] = np.inf
        a[rng.integers(0, 5000, 40)] = -1e4
        mask = rng.random(5000) < 0.5
        for m in (None, mask):
            want = ~np.isfinite(a) | (a <= -1e4)
            if m is not None:
                want &= ~m
            mk = np.zeros(1, bool) if m is None else m
            got = _kernels.count_mask_like(a, mk, m is not None, -1e4)
            assert got == int(want.sum()) > 0


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
@pytest.mark.parametrize("i", range(5))
def test_site_stats_percentiles_compiled_match_numpy(i: int) -> None:
    """``SiteStats.from_running``'s one-call percentiles equal the numpy path's exactly
    (negative, zero and subnormal buckets, the extremes)."""
    rs = RunningStats().add(_data(2)[i])
    got = SiteStats.from_running("s", rs).percentiles
    with patch.object(_kernels, "enabled", False):
        want = SiteStats.from_running("s", rs).percentiles
    assert got == want
