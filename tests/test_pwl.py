"""Minimax piecewise-linear fitter: closed-form cases, balance, beats uniform."""

from __future__ import annotations

import math

import numpy as np
import pytest

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
