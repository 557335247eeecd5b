"""Seeded stimulus rows (raw input codes) for the stream testbenches.

Edge rows come first -- the same kinds as the HLS C-sim tests, from the one
shared generator :mod:`hwapprox.approx.stimulus` (all-equal rows at min/0/max,
one-hot rows, tied maxima, alternating min/max, ramps, rows of length 1) --
then random rows: uniform over every code of the input format and a narrower
"typical" normal distribution. Pure numpy; no cocotb import.
"""

from __future__ import annotations

import numpy as np

from hwapprox.approx import stimulus as _shared
from hwapprox.fixed import FixedFormat

__all__ = ["edge_rows", "make_rows", "random_rows"]

#: tied-maximum rows per edge set (the HLS tests use 20; a stream test is slower)
TIES = 2


def edge_rows(fmt: FixedFormat, n: int, rng: np.random.Generator | None = None) -> list[np.ndarray]:
    """:func:`hwapprox.approx.stimulus.edge_rows` (one-hot in the middle; ``TIES``
    tied-maximum rows when ``rng`` is given) as a list, then the rows of length 1."""
    rows = list(_shared.edge_rows(fmt, n, rng, ties=TIES))
    return rows + _shared.short_rows(fmt)


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
    rows = edge_rows(fmt, n, rng) if edges else []
    return rows + random_rows(fmt, n_random, n, rng, vary_length=vary_length)
