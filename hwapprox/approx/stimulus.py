"""Edge stimulus: hand-picked raw input codes at a format's corners.

One generator for every bit-exact test that feeds the same raw integers to a
model and an implementation -- the HLS C-sim tests (``tests/test_hls_*.py``)
and the RTL stream testbenches (:mod:`hwapprox.rtl_sim.tb.stimulus`) -- so
both check the same corner cases. Pure numpy; imports nothing of ours but
:class:`~hwapprox.fixed.FixedFormat`.

Row kinds of :func:`edge_rows` (rows of ``n`` codes, in this order):

* ``constant`` -- all min, all zero (min when unsigned), all max, all min+1,
  all max-1 (a zero-variance row; every element tied for the maximum);
* ``one_hot`` -- max on a floor of zero, at every position or the middle one;
* ``one_hot_on_min`` -- max on a floor of min (the largest differences), same
  positions; ``peak_zero_on_min`` -- zero on a floor of min (middle);
* ``tied_max`` -- random rows whose first two codes both equal the row's
  maximum (needs ``rng``);
* ``alternating`` -- min, max, min, ...;
* ``ramp_up`` -- increasing by a quarter of one from min/2 (a new maximum at
  every element: the running max rescales every step); ``ramp_down`` --
  decreasing by the same step to zero; ``centred_ramp`` -- ``i - n//2``;
  ``code_ramp`` -- consecutive codes from min (wrapping at the range);

all clipped to the format. :func:`short_rows` gives rows of one code (min,
zero, max); :func:`edge_codes` the elementwise corner codes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hwapprox.fixed import FixedFormat

__all__ = ["EDGE_KINDS", "edge_codes", "edge_rows", "short_rows"]

#: The row kinds of :func:`edge_rows`, in order.
EDGE_KINDS = (
    "constant",
    "one_hot",
    "one_hot_on_min",
    "peak_zero_on_min",
    "tied_max",
    "alternating",
    "ramp_up",
    "ramp_down",
    "centred_ramp",
    "code_ramp",
)

Rows = npt.NDArray[np.int64]


def _zero(fmt: FixedFormat) -> int:
    return 0 if fmt.signed else int(fmt.min_raw)


def edge_codes(fmt: FixedFormat) -> Rows:
    """The corner codes of ``fmt`` for elementwise units: min, min+1, -1, 0, 1,
    max-1, max (those in range, each once, in this order)."""
    lo, hi = int(fmt.min_raw), int(fmt.max_raw)
    out: list[int] = []
    for v in (lo, lo + 1, -1, 0, 1, hi - 1, hi):
        if lo <= v <= hi and v not in out:
            out.append(v)
    return np.asarray(out, dtype=np.int64)


def edge_rows(
    fmt: FixedFormat,
    n: int,
    rng: np.random.Generator | None = None,
    *,
    every_position: bool = False,
    ties: int = 20,
) -> Rows:
    """The edge rows of ``fmt`` of length ``n`` (``EDGE_KINDS``), as a 2-D array.

    ``every_position``: one-hot rows at each of the ``n`` positions, else only at
    ``n // 2``. ``tied_max`` rows (``ties`` of them) need ``rng``; without it they
    are left out.
    """
    if n < 1:
        raise ValueError(f"edge rows need n >= 1, got {n}")
    lo, hi, zero = int(fmt.min_raw), int(fmt.max_raw), _zero(fmt)
    one = 1 << max(fmt.frac_bits, 0)
    step = max(one // 4, 1)
    i = np.arange(n, dtype=np.int64)
    rows: list[Rows] = [np.full((1, n), v, np.int64) for v in (lo, zero, hi, lo + 1, hi - 1)]
    pos = i if every_position else np.array([n // 2])
    for floor, peak in ((zero, hi), (lo, hi)):
        r = np.full((pos.size, n), floor, np.int64)
        r[np.arange(pos.size), pos] = peak
        rows.append(r)
    r = np.full((1, n), lo, np.int64)
    r[0, n // 2] = zero
    rows.append(r)
    if rng is not None and ties > 0:
        t = rng.integers(lo, hi + 1, size=(ties, n), dtype=np.int64)
        t[:, : min(2, n)] = t.max(axis=1, keepdims=True)
        rows.append(t)
    rows.append(np.where(i % 2 == 0, lo, hi)[None, :])
    rows.append((i * step + lo // 2)[None, :])
    rows.append((i[::-1] * step)[None, :])
    rows.append((i - n // 2)[None, :])
    rows.append((i % (hi - lo + 1) + lo)[None, :])
    return np.clip(np.concatenate(rows), lo, hi).astype(np.int64)


def short_rows(fmt: FixedFormat) -> list[Rows]:
    """Rows of a single code: min, zero (min when unsigned: then once), max."""
    vals = dict.fromkeys((int(fmt.min_raw), _zero(fmt), int(fmt.max_raw)))
    return [np.array([v], dtype=np.int64) for v in vals]
