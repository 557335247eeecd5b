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

:func:`hard_softmax_rows` gives the row kinds where a softmax datapath's
roundings add up instead of averaging out (``HARD_KINDS``): one or two dominant
scores at many heights over a flat background (every background element has the
same exp value, so its rounding is the same N times), plateaus, ramps and
uniform rows.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hwapprox.fixed import FixedFormat

__all__ = [
    "EDGE_KINDS",
    "HARD_KINDS",
    "edge_codes",
    "edge_rows",
    "hard_softmax_rows",
    "short_rows",
]

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

#: The row kinds of :func:`hard_softmax_rows`.
HARD_KINDS = ("dominant", "two_dominant", "plateau", "ramp", "uniform")

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


def hard_softmax_rows(
    fmt: FixedFormat,
    n: int,
    rng: np.random.Generator,
    *,
    rows: int = 32,
    max_height: float = 24.0,
) -> dict[str, Rows]:
    """``rows`` rows of ``n`` codes of ``fmt`` per kind of ``HARD_KINDS``:

    * ``dominant`` -- a flat background (one code) and one score ``h`` above it at a
      random position, ``h`` log-uniform in ``[1/4, max_height]`` (so the
      background's ``exp(-h)`` sweeps every rounding position of an exp format);
    * ``two_dominant`` -- the same with two scores: tied at ``h``, or at ``h`` and
      ``h - g`` with ``g`` in ``[0, 2]``;
    * ``plateau`` -- ``k`` tied maxima (``k`` from 2 to ``n/2``) ``h`` above the
      flat rest;
    * ``ramp`` -- ``c + s·i`` ascending or descending, slopes ``s`` from one code to
      ``2·max_height / n`` (a new maximum at every element when ascending);
    * ``uniform`` -- codes uniform in ``[c - a, c + a]`` with ``a`` from 1/4 to
      ``max_height``.

    Heights, offsets and slopes are quantised to ``fmt`` and clipped to its range
    (the background sits at ``max - h`` or below, so the peak fits).
    """
    if n < 2:
        raise ValueError(f"hard rows need n >= 2, got {n}")
    lo, hi = int(fmt.min_raw), int(fmt.max_raw)
    one = 2.0**fmt.frac_bits
    span = hi - lo

    def codes(v: npt.ArrayLike) -> Rows:
        return np.clip(np.rint(np.asarray(v, dtype=np.float64) * one), 1, span).astype(np.int64)

    def heights(k: int) -> Rows:
        return codes(np.exp(rng.uniform(np.log(0.25), np.log(max_height), k)))

    def base(h: Rows) -> Rows:
        """A background code per row with room for a peak ``h`` above it."""
        top = np.maximum(hi - h, lo)
        return np.asarray(rng.integers(np.maximum(lo, top - span // 4), top + 1), dtype=np.int64)

    out: dict[str, Rows] = {}
    i = np.arange(rows)
    h = heights(rows)
    r = np.repeat(base(h)[:, None], n, axis=1)
    r[i, rng.integers(0, n, rows)] += h
    out["dominant"] = r
    h = heights(rows)
    r = np.repeat(base(h)[:, None], n, axis=1)
    gap = np.where(i % 2 == 0, 0, codes(rng.uniform(0, 2, rows)))
    pos = np.stack([rng.choice(n, 2, replace=False) for _ in range(rows)])
    r[i, pos[:, 0]] += h
    r[i, pos[:, 1]] += np.maximum(h - gap, 0)
    out["two_dominant"] = r
    h = heights(rows)
    r = np.repeat(base(h)[:, None], n, axis=1)
    ks = np.unique(np.geomspace(2, max(2, n // 2), rows).astype(np.int64))
    for j in range(rows):
        k = int(ks[j % ks.size])
        r[j, rng.choice(n, k, replace=False)] += h[j]
    out["plateau"] = r
    slope = codes(np.geomspace(1 / one, 2 * max_height / n, rows))
    ramp = slope[:, None] * np.arange(n)[None, :]
    ramp = np.where((i % 2 == 0)[:, None], ramp, ramp[:, ::-1])
    off = np.asarray(rng.integers(lo, np.maximum(hi - ramp.max(axis=1), lo) + 1), dtype=np.int64)
    out["ramp"] = ramp + off[:, None]
    a = codes(np.geomspace(0.25, max_height, rows))
    c = np.asarray(rng.integers(lo + np.minimum(a, span // 2), hi - np.minimum(a, span // 2) + 1))
    out["uniform"] = c[:, None] + rng.integers(-a[:, None], a[:, None] + 1, (rows, n))
    return {k: np.clip(v, lo, hi).astype(np.int64) for k, v in out.items()}
