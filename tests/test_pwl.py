"""Minimax piecewise-linear fitter: closed-form cases, balance, beats uniform."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hwapprox._cache import BoundedMemo
from hwapprox.approx.gelu import gelu_reference
from hwapprox.approx.pwl import fit_lines, fit_pwl, minimax_lines, uniform_breakpoints

D2_GELU = 2.0 / math.sqrt(2.0 * math.pi)  # max |GELU''|


def _square(x: np.ndarray) -> np.ndarray:
    return x * x


def test_minimax_line_of_a_parabola_is_closed_form():
    # Best line to x² on [a, b]: slope a + b, intercept -ab - (b - a)²/8, error (b - a)²/8.
    a = np.array([0.0, -1.0, 2.0, -3.0])
    b = np.array([1.0, 0.5, 2.25, 3.0])
    m, c, e = minimax_lines(_square, a, b)
    assert np.allclose(m, a + b, rtol=0, atol=1e-9)
    assert np.allclose(c, -a * b - (b - a) ** 2 / 8, rtol=0, atol=1e-9)
    assert np.allclose(e, (b - a) ** 2 / 8, rtol=1e-9, atol=0)


def test_minimax_intercept_for_a_given_slope():
    # With slope 0 on [0, 1]: x² spans [0, 1], best constant 1/2, error 1/2.
    m, c, e = minimax_lines(_square, [0.0], [1.0], slopes=[0.0])
    assert (m.tolist(), c.tolist(), e.tolist()) == ([0.0], [0.5], [0.5])


def test_parabola_free_knots_stay_uniform():
    # x² has constant curvature: the optimum is uniform with error 1/(8·N²).
    fit = fit_pwl(_square, 0.0, 1.0, 4)
    assert np.allclose(fit.breakpoints, [0, 0.25, 0.5, 0.75, 1.0], atol=1e-6)
    assert fit.max_error == pytest.approx(1 / 128, rel=1e-6)


def test_gelu_fit_beats_uniform_is_balanced_and_symmetric():
    def f(v):
        return gelu_reference(v)

    fit = fit_pwl(f, -4.0, 4.0, 8)
    uniform = fit_lines(f, uniform_breakpoints(-4.0, 4.0, 8))
    assert fit.max_error < 0.25 * uniform.max_error
    # equal errors on every segment: the L∞ optimum for independent lines
    assert max(fit.errors) - min(fit.errors) <= 1e-3 * fit.max_error
    # GELU(x) - x/2 is even, so the optimal breakpoints are symmetric about 0
    bp = np.asarray(fit.breakpoints)
    assert np.allclose(bp, -bp[::-1], atol=1e-4)
    # Reported L∞ (GQA-LUT's 8-segment fit on [-4, 4]: 0.0242); dense check of the
    # grid-measured error with the sampling slack h²/8·max|f''| (h = widest / 256).
    assert fit.max_error < 0.0065
    x = np.linspace(-4, 4, 100_001)
    dense = np.abs(fit(x) - f(x)).max()
    slack = (max(np.diff(bp)) / 256) ** 2 / 8 * D2_GELU
    assert fit.max_error <= dense <= fit.max_error + slack


def test_fit_is_deterministic():
    def f(v):
        return np.exp(v)

    a = fit_pwl(f, 0.0, 3.0, 5)
    b = fit_pwl(f, 0.0, 3.0, 5)
    assert a == b
    assert a.max_error < fit_lines(f, uniform_breakpoints(0.0, 3.0, 5)).max_error


def test_one_segment_is_the_single_minimax_line():
    fit = fit_pwl(_square, -1.0, 2.0, 1)
    assert fit.breakpoints == (-1.0, 2.0)
    assert fit.max_error == pytest.approx(9 / 8, rel=1e-9)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"^fit_pwl needs finite lo < hi, got lo=1.0, hi=1.0$"):
        fit_pwl(_square, 1.0, 1.0, 3)
    with pytest.raises(ValueError, match=r"^fit_pwl needs segments >= 1, got 0$"):
        fit_pwl(_square, 0.0, 1.0, 0)


def test_disk_fits_are_the_fitted_floats_and_follow_their_key(tmp_path, monkeypatch) -> None:
    """A PWL spec's fit kept on disk (``fntable._disk_fit``) reads back as exactly the
    fitted floats, so a fresh process gets the same tables; another segment count,
    range, function or code digest misses it, and an unreadable file is fitted and
    written again, never an error."""
    from hwapprox.approx import fntable
    from hwapprox.approx.registry import make_spec

    monkeypatch.setenv("HWAPPROX_CACHE", str(tmp_path))
    monkeypatch.setattr(fntable, "_FITS", BoundedMemo(256))
    spec = make_spec("gelu", "pwl", segments=8)
    lo, hi = spec.fit_range
    fresh = fit_pwl(spec._fn(), lo, hi, 8)
    key = (spec._fn_key(), float(lo), float(hi), 8)
    path, got = fntable._disk_fit(key, type(spec).__module__)
    assert path is not None
    assert path.is_file()  # written by make_spec
    assert got == fresh
    monkeypatch.setattr(fntable, "_FITS", BoundedMemo(256))  # a fresh process: read from disk
    again = make_spec("gelu", "pwl", segments=8)
    assert again._fit() == fresh
    assert np.array_equal(again.tables()["slopes"], spec.tables()["slopes"])
    others = [
        (spec._fn_key(), float(lo), float(hi), 9),
        (spec._fn_key(), float(lo) - 0.5, float(hi), 8),
        (("gelu", "tanh"), float(lo), float(hi), 8),
    ]
    paths = {fntable._disk_fit(k, type(spec).__module__)[0] for k in others}
    assert path not in paths
    assert len(paths) == 3
    monkeypatch.setattr(fntable, "_code_digest", lambda *m: "another fitter")
    assert fntable._disk_fit(key, type(spec).__module__)[0] != path
    monkeypatch.undo()
    monkeypatch.setenv("HWAPPROX_CACHE", str(tmp_path))
    monkeypatch.setattr(fntable, "_FITS", BoundedMemo(256))
    path.write_text("{not json")
    assert make_spec("gelu", "pwl", segments=8)._fit() == fresh
    assert fntable._disk_fit(key, type(spec).__module__)[1] == fresh  # rewritten
