"""Seeded stimulus rows (raw input codes) for the stream testbenches.

Edge rows come first (all-equal rows at min/0/max, one-hot rows, alternating
min/max, rows of length 1 and of the maximum length), then random rows:
uniform over every code of the input format and a narrower "typical" normal
distribution. Pure numpy; no cocotb import.
"""

from __future__ import annotations

import numpy as np

from hwapprox.fixed import FixedFormat

__all__ = ["edge_rows", "make_rows", "random_rows"]


def edge_rows(fmt: FixedFormat, n: int) -> list[np.ndarray]:
    """Hand-picked rows of length ``n`` (and length 1) at the format's edges."""
    lo, hi = fmt.min_raw, fmt.max_raw
    zero = 0 if fmt.signed else lo
    rows: list[np.ndarray] = []
    for v in (lo, zero, hi, lo + 1, hi - 1):
        rows.append(np.full(n, v, dtype=np.int64))
    for base, peak in ((lo, hi), (zero, hi), (lo, zero)):
        r = np.full(n, base, dtype=np.int64)
        r[n // 2] = peak
        rows.append(r)
    alt = np.where(np.arange(n) % 2 == 0, lo, hi).astype(np.int64)
    rows.append(alt)
    rows.append(np.arange(n, dtype=np.int64) % (hi - lo + 1) + lo)
    for v in (lo, zero, hi):
        rows.append(np.array([v], dtype=np.int64))
    return rows


def random_rows(
    fmt: FixedFormat, n_rows: int, n: int, rng: np.random.Generator, *, vary_length: bool = False
) -> list[np.ndarray]:
    """``n_rows`` rows: half uniform over all codes, half normal with σ = range/16."""
    lo, hi = fmt.min_raw, fmt.max_raw
    rows = []
    for i in range(n_rows):
        length = int(rng.integers(1, n + 1)) if vary_length else n
        if i % 2 == 0:
            r = rng.integers(lo, hi + 1, size=length, dtype=np.int64)
        else:
            centre = (lo + hi) / 2
            r = np.rint(rng.normal(centre, (hi - lo) / 16.0, size=length)).astype(np.int64)
            r = np.clip(r, lo, hi)
        rows.append(r)
    return rows


def make_rows(
    fmt: FixedFormat,
    n: int,
    n_random: int,
    seed: int,
    *,
    edges: bool = True,
    vary_length: bool = False,
) -> list[np.ndarray]:
    """Edge rows (optional) followed by ``n_random`` seeded random rows."""
    rng = np.random.default_rng(seed)
    rows = edge_rows(fmt, n) if edges else []
    return rows + random_rows(fmt, n_random, n, rng, vary_length=vary_length)
