"""Minimax piecewise-linear fits with free breakpoints.

:func:`fit_pwl` approximates a smooth function ``f`` on ``[lo, hi]`` by
``segments`` independent lines (discontinuous at the breakpoints, which is what
a compare-and-select unit computes) and moves the breakpoints to minimise the
largest absolute error (L∞) over the whole interval.

Maths contract
--------------
* Per segment, :func:`minimax_lines` returns the best line in the L∞ sense on a
  dense uniform sample of the segment (``grid`` points, ends included): the
  error of slope ``m`` is ``E(m) = (max(f - m·x) - min(f - m·x)) / 2``, a convex
  function of ``m`` minimised by golden-section search inside the range of the
  sampled difference quotients (which always contains the optimum); the
  intercept is the centre ``(max + min) / 2``, so the error equioscillates.
* Breakpoints: for lines fitted independently per segment, the L∞ optimum has
  equal errors on all segments (a segment with a smaller error could give up
  length to its worse neighbour). :func:`fit_pwl` gets there in two steps:
  equidistribution (the error of a short segment grows like ``h²·|f''|``, so
  breakpoints are spread to equal shares of a per-segment density
  ``sqrt(e_i)/h_i``, damped, repeated) and then red-black sweeps that move each
  interior breakpoint by bisection until its two neighbours have equal errors.
  The best set seen (smallest max error) is returned.
* Everything is deterministic (no randomness) and float64.

The reported ``max_error`` is measured on the fitting grid; callers that
quantise the result measure their own error on their own input grid.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["PwlFit", "fit_lines", "fit_pwl", "minimax_lines", "uniform_breakpoints"]

Func = Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]
FloatArray = npt.NDArray[np.float64]

_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


@dataclass(frozen=True)
class PwlFit:
    """Breakpoints ``b_0 = lo < ... < b_N = hi``; segment i is ``[b_i, b_i+1]``
    with the line ``slopes[i]·x + intercepts[i]``; ``errors[i]`` its L∞ error."""

    breakpoints: tuple[float, ...]
    slopes: tuple[float, ...]
    intercepts: tuple[float, ...]
    errors: tuple[float, ...]

    @property
    def max_error(self) -> float:
        return max(self.errors)

    def __call__(self, x: npt.ArrayLike) -> FloatArray:
        """Evaluate the fit inside ``[lo, hi]`` (segment by comparison with breakpoints)."""
        a = np.asarray(x, dtype=np.float64)
        b = np.asarray(self.breakpoints)
        seg = np.clip(np.searchsorted(b, a, side="right") - 1, 0, len(self.slopes) - 1)
        return np.asarray(self.slopes)[seg] * a + np.asarray(self.intercepts)[seg]


def uniform_breakpoints(lo: float, hi: float, segments: int) -> FloatArray:
    """``segments + 1`` equally spaced breakpoints from ``lo`` to ``hi``."""
    return np.linspace(lo, hi, segments + 1)


def minimax_lines(
    f: Func,
    left: npt.ArrayLike,
    right: npt.ArrayLike,
    *,
    grid: int = 257,
    iterations: int = 52,
    slopes: npt.ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Best L∞ line of ``f`` on each ``[left[i], right[i]]`` (vectorised over i).

    Returns ``(slopes, intercepts, errors)``. With ``slopes`` given, only the
    intercepts are fitted (best centre for those slopes), which is how
    quantised slopes are refitted.
    """
    lft = np.atleast_1d(np.asarray(left, dtype=np.float64))
    rgt = np.atleast_1d(np.asarray(right, dtype=np.float64))
    t = np.linspace(0.0, 1.0, grid)
    xs = lft[:, None] + (rgt - lft)[:, None] * t[None, :]
    fs = f(xs)

    def spread(m: FloatArray) -> tuple[FloatArray, FloatArray]:
        d = fs - m[:, None] * xs
        hi_, lo_ = d.max(axis=1), d.min(axis=1)
        return (hi_ - lo_) / 2.0, (hi_ + lo_) / 2.0

    if slopes is not None:
        m = np.broadcast_to(np.asarray(slopes, dtype=np.float64), lft.shape).copy()
        err, icpt = spread(m)
        return m, icpt, err
    dx = np.diff(xs, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(dx > 0, np.diff(fs, axis=1) / np.where(dx > 0, dx, 1.0), 0.0)
    a, b = q.min(axis=1), q.max(axis=1)
    c = b - _GOLDEN * (b - a)
    d = a + _GOLDEN * (b - a)
    fc, fd = spread(c)[0], spread(d)[0]
    for _ in range(iterations):
        # Keep the better probe; the other end of the bracket moves to the worse one.
        lb = fc <= fd
        b = np.where(lb, d, b)
        a = np.where(lb, a, c)
        c_next = np.where(lb, b - _GOLDEN * (b - a), d)
        d_next = np.where(lb, c, a + _GOLDEN * (b - a))
        fp = spread(np.where(lb, c_next, d_next))[0]
        fc, fd = np.where(lb, fp, fd), np.where(lb, fc, fp)
        c, d = c_next, d_next
    m = (a + b) / 2.0
    err, icpt = spread(m)
    return m, icpt, err


def fit_lines(f: Func, breakpoints: npt.ArrayLike, *, grid: int = 257) -> PwlFit:
    """Minimax line per segment for fixed ``breakpoints``."""
    bp = np.asarray(breakpoints, dtype=np.float64)
    m, c, e = minimax_lines(f, bp[:-1], bp[1:], grid=grid)
    return PwlFit(tuple(bp.tolist()), tuple(m.tolist()), tuple(c.tolist()), tuple(e.tolist()))


def _errors(f: Func, bp: FloatArray, grid: int) -> FloatArray:
    return minimax_lines(f, bp[:-1], bp[1:], grid=grid)[2]


def _equidistribute(bp: FloatArray, err: FloatArray, damping: float) -> FloatArray:
    """New breakpoints giving each segment an equal share of ``sqrt(e_i)/h_i``."""
    h = np.diff(bp)
    dens = np.sqrt(np.maximum(err, 1e-300)) / h
    dens = np.maximum(dens, dens.max() * 1e-6)  # keep nearly-linear stretches finite
    cum = np.concatenate(([0.0], np.cumsum(dens * h)))
    target = np.linspace(0.0, cum[-1], len(bp))
    new = np.interp(target, cum, bp)
    new[0], new[-1] = bp[0], bp[-1]
    return (1.0 - damping) * bp + damping * new


def _balance(f: Func, bp: FloatArray, grid: int, steps: int) -> FloatArray:
    """Red-black sweep: move each interior breakpoint so its neighbours' errors match."""
    bp = bp.copy()
    n = len(bp) - 1
    for parity in (1, 2):
        idx = np.arange(parity, n, 2)
        if idx.size == 0:
            continue
        lo_b, hi_b = bp[idx - 1].copy(), bp[idx + 1].copy()
        a, b = lo_b.copy(), hi_b.copy()
        for _ in range(steps):
            mid = (a + b) / 2.0
            # left and right neighbours of every moved breakpoint in one batch
            e = minimax_lines(f, np.r_[lo_b, mid], np.r_[mid, hi_b], grid=grid)[2]
            el, er = e[: idx.size], e[idx.size :]
            move_left = el > er  # left segment too long: move breakpoint left
            b = np.where(move_left, mid, b)
            a = np.where(move_left, a, mid)
        bp[idx] = (a + b) / 2.0
    return bp


def fit_pwl(
    f: Func,
    lo: float,
    hi: float,
    segments: int,
    *,
    grid: int = 257,
    equi_iterations: int = 20,
    sweeps: int = 12,
    bisect_steps: int = 24,
    rel_tol: float = 1e-4,
) -> PwlFit:
    """Free-breakpoint minimax piecewise-linear fit of ``f`` on ``[lo, hi]``.

    Deterministic. ``segments`` lines; see the module docstring for the
    algorithm. Stops early once all segment errors agree within ``rel_tol``
    (relative). The result never has a larger max error than the uniform
    breakpoints it starts from.
    """
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"fit_pwl needs finite lo < hi, got lo={lo}, hi={hi}")
    if segments < 1:
        raise ValueError(f"fit_pwl needs segments >= 1, got {segments}")
    bp = uniform_breakpoints(lo, hi, segments)
    err = _errors(f, bp, grid)
    best_bp, best = bp, float(err.max())
    if segments > 1:
        for _ in range(equi_iterations):
            bp = _equidistribute(bp, err, 0.5)
            err = _errors(f, bp, grid)
            if err.max() < best:
                best_bp, best = bp, float(err.max())
            if err.max() - err.min() <= rel_tol * err.max():
                break
        bp = best_bp
        for _ in range(sweeps):
            bp = _balance(f, bp, grid, bisect_steps)
            err = _errors(f, bp, grid)
            if err.max() < best:
                best_bp, best = bp, float(err.max())
            if err.max() - err.min() <= rel_tol * err.max():
                break
    return fit_lines(f, best_bp, grid=grid)
