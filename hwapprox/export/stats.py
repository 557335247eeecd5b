"""Running, mergeable statistics of a site tensor over calibration data.

:class:`RunningStats` takes a tensor batch by batch (:meth:`~RunningStats.add`)
and merges with another over the same site (:meth:`~RunningStats.merge`: two
workers' batches, two files of a dataset), so calibration needs neither the
whole dataset in memory nor a sort per percentile. It keeps, over the finite
unmasked values:

* ``count``, exact ``min`` and ``max``;
* ``mean`` and ``m2`` (sum of squared deviations), merged with Chan et al.'s
  pairwise update (exact up to float64 rounding);
* a histogram of the values' **bfloat16 buckets**: the high 16 bits of the
  float32 encoding (sign, 8 exponent bits, 7 mantissa bits; 65,536 buckets), kept
  by exponent blocks (the 128 buckets of one sign and exponent) and only for the
  blocks the data reach: a tensor's values span a few dozen binades, so a site
  keeps some KB, not a 512 KB array. Merging adds counts, so the histogram of
  several batches is exactly the histogram of their concatenation (no rank error is
  introduced by merging).

Percentiles (:meth:`~RunningStats.percentile`) come from the histogram: the
order statistic of rank ``⌊(n-1)·q/100⌋`` (as in numpy's ``"lower"`` method)
is located exactly among the bins, and its bin's edge nearest zero is
returned. Rank error: none at bin resolution. Value error: the returned value
has the order statistic's sign and **binade** (the same ``floor(log2|v|)``) and
lies within one bfloat16 step of it (relative error below ``2^-7``, rounded
toward zero). The formats :meth:`SiteStats.choose_format` picks depend on
``floor(log2 m)`` only, so they are those of the exact order statistic;
numpy's default linear interpolation between two adjacent order statistics
differs from it only where those two straddle a power of two.

float64 inputs are rounded to float32 for the histogram (at most one float32
step, far below a bin); the moments and extremes use the values as given.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx import _kernels
from hwapprox.export.errors import ExportError
from hwapprox.fixed import FixedFormat, Overflow, Rounding

__all__ = [
    "HIST_BINS",
    "PERCENTILES",
    "RANGE_STATS",
    "RunningStats",
    "SiteStats",
    "StatsBatch",
    "parse_range",
]

#: bins of the bfloat16 histogram (every 16-bit pattern)
HIST_BINS = 1 << 16
#: a histogram block: the 128 patterns of one sign and exponent (``pattern >> 7``)
BLOCK_BINS = 128
_EXP_ALL_ONES = 0x7F80  # exponent field all ones (inf / NaN), sign bit clear
_F32_MAX = float(np.finfo(np.float32).max)
_LITTLE = np.array([1], dtype=np.uint16).view(np.uint8)[0] == 1


def _order() -> npt.NDArray[np.intp]:
    """Bin indices (16-bit patterns) in ascending value order: negative patterns by
    descending magnitude, then non-negative ones by ascending magnitude; inf/NaN
    patterns are left out."""
    mag = np.arange(_EXP_ALL_ONES, dtype=np.intp)  # finite magnitudes 0x0000..0x7F7F
    return np.concatenate([(mag | 0x8000)[::-1], mag])


_ORDER = _order()


def _high_halves(f32: npt.NDArray[np.float32]) -> npt.NDArray[np.uint16]:
    """The high 16 bits (bfloat16 pattern) of each float32 value, as a strided view."""
    halves = np.ascontiguousarray(f32).view(np.uint16)
    return halves[1::2] if _LITTLE else halves[0::2]


def _edges_toward_zero(patterns: npt.NDArray[np.integer]) -> npt.NDArray[np.float64]:
    """The values of bins ``patterns``' edges nearest zero (each pattern, low bits 0)."""
    bits = np.asarray(patterns, dtype=np.uint32) << np.uint32(16)
    return bits.view(np.float32).astype(np.float64)


_THREAD = threading.local()
_NO_BLOCKS = np.zeros(0, dtype=np.int64)
_NO_COUNTS = np.zeros((0, BLOCK_BINS), dtype=np.int64)
_NO_BLOCKS.flags.writeable = False
_NO_COUNTS.flags.writeable = False


def _scratch() -> npt.NDArray[np.int64]:
    """This thread's all-zero 65,536-bin histogram for :func:`_kernels.hist_blocks_f32`
    (it leaves it all zero)."""
    h = getattr(_THREAD, "hist", None)
    if h is None:
        h = _THREAD.hist = np.zeros(HIST_BINS, dtype=np.int64)
    return h  # type: ignore[no-any-return]


@dataclass
class RunningStats:
    """Statistics of one tensor over many batches (see the module docstring)."""

    count: int = 0
    nonfinite: int = 0
    masked: int = 0
    min: float = np.inf
    max: float = -np.inf
    mean: float = 0.0
    m2: float = 0.0
    #: the exponent blocks present (ascending ``pattern >> 7``) and their bins' counts
    #: (empty: one shared read-only pair, replaced by the first batch's blocks)
    blocks: npt.NDArray[np.int64] = field(default_factory=lambda: _NO_BLOCKS)
    counts: npt.NDArray[np.int64] = field(default_factory=lambda: _NO_COUNTS)

    @property
    def hist(self) -> npt.NDArray[np.int64]:
        """The whole 65,536-bin histogram (a new array; bin ``p`` counts pattern ``p``)."""
        h = np.zeros(HIST_BINS, dtype=np.int64)
        h.reshape(-1, BLOCK_BINS)[self.blocks] = self.counts
        return h

    def _add_hist(self, blocks: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]) -> None:
        """Add a histogram given by blocks (ascending ids) to this one."""
        if self.blocks.size == 0:
            self.blocks, self.counts = blocks, counts
            return
        ids = np.union1d(self.blocks, blocks)
        if ids.size == self.blocks.size:  # no new block: add in place
            self.counts[np.searchsorted(ids, blocks)] += counts
            return
        merged = np.zeros((ids.size, BLOCK_BINS), dtype=np.int64)
        merged[np.searchsorted(ids, self.blocks)] = self.counts
        merged[np.searchsorted(ids, blocks)] += counts
        self.blocks, self.counts = ids, merged

    def add(self, x: npt.ArrayLike, mask: npt.ArrayLike | None = None) -> RunningStats:
        """Fold in a batch; ``mask`` (broadcastable, True = left out) drops elements."""
        a = np.asarray(x)
        if a.dtype != np.float32:
            small = a.dtype.kind == "f" and a.dtype.itemsize < 4
            a = a.astype(np.float32 if small else np.float64)
        if mask is not None:
            keep = ~np.broadcast_to(np.asarray(mask, dtype=bool), a.shape)
            self.masked += int(a.size - np.count_nonzero(keep))
            a = a[keep]
        a = a.ravel()
        if a.size == 0:
            return self
        if a.dtype == np.float32 and _kernels.available():
            return self._add_f32_compiled(np.ascontiguousarray(a))
        if a.dtype == np.float32:
            h = np.bincount(_high_halves(a), minlength=HIST_BINS)
            bad = int(h[_EXP_ALL_ONES:0x8000].sum() + h[_EXP_ALL_ONES | 0x8000 :].sum())
            h[_EXP_ALL_ONES:0x8000] = 0  # inf / NaN patterns: counted, not binned
            h[_EXP_ALL_ONES | 0x8000 :] = 0
            if bad:
                a = a[np.isfinite(a)]
        else:  # float64: finiteness on the values as given, the histogram in float32
            fin = np.isfinite(a)
            bad = int(a.size - np.count_nonzero(fin))
            if bad:
                a = a[fin]
            f32 = np.clip(a, -_F32_MAX, _F32_MAX).astype(np.float32)
            h = np.bincount(_high_halves(f32), minlength=HIST_BINS)
        self.nonfinite += bad
        if a.size == 0:
            return self
        hb = h.reshape(-1, BLOCK_BINS)
        ids = np.flatnonzero(hb.any(axis=1)).astype(np.int64)
        self._add_hist(ids, hb[ids])
        n_b = int(a.size)
        lo, hi = float(a.min()), float(a.max())
        mean_b = float(a.sum(dtype=np.float64)) / n_b
        dev = np.subtract(a, mean_b, dtype=np.float64)
        m2_b = float(np.einsum("i,i->", dev, dev))  # (np.dot goes through a slow BLAS here)
        self._merge_moments(n_b, lo, hi, mean_b, m2_b)
        return self

    def _add_f32_compiled(self, a: npt.NDArray[np.float32]) -> RunningStats:
        """:meth:`add` of a contiguous 1-D float32 batch in one compiled pass (the
        same histogram and extremes; moments equal up to float64 summation order)."""
        bits = a.view(np.uint32)
        n_b, lo, hi, mean_b, m2_b, ids, counts = _kernels.hist_blocks_f32(a, bits, _scratch())
        self.nonfinite += int(a.size - n_b)
        if n_b == 0:
            return self
        self._add_hist(ids, counts)
        self._merge_moments(int(n_b), lo, hi, mean_b, m2_b)
        return self

    def _merge_moments(self, n_b: int, lo: float, hi: float, mean_b: float, m2_b: float) -> None:
        n_a = self.count
        n = n_a + n_b
        if n_a == 0:  # exactly the batch's moments (merging into empty statistics is a copy)
            self.mean, self.m2 = mean_b, m2_b
        else:
            delta = mean_b - self.mean
            self.mean += delta * n_b / n
            self.m2 += m2_b + delta * delta * n_a * n_b / n
        self.count = n
        self.min = min(self.min, lo)
        self.max = max(self.max, hi)

    def merge(self, other: RunningStats) -> RunningStats:
        """Fold in another tensor's statistics (in place; returns self)."""
        self.nonfinite += other.nonfinite
        self.masked += other.masked
        if other.count:
            self._add_hist(other.blocks, other.counts.copy())
            self._merge_moments(other.count, other.min, other.max, other.mean, other.m2)
        return self

    @property
    def std(self) -> float:
        """Population standard deviation of the finite values."""
        return float(np.sqrt(self.m2 / self.count)) if self.count else 0.0

    def _percentiles_sorted(self, qs: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """:meth:`percentile` of ascending float64 ``qs`` in one compiled call
        (:func:`hwapprox.approx._kernels.block_percentiles`: the same values)."""
        pat = np.empty(qs.size, dtype=np.int64)
        out = np.empty(qs.size, dtype=np.float64)
        _kernels.block_percentiles(
            self.blocks, self.counts, qs, self.count, float(self.min), float(self.max), pat, out
        )
        return out

    def percentile(self, q: float | npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Percentiles ``q`` (0..100) of the finite values, from the histogram (module
        docstring: the order statistic ``⌊(n-1)·q/100⌋``'s bin edge nearest zero)."""
        qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
        if self.count == 0:
            raise ValueError("percentile of an empty RunningStats")
        if _kernels.available():  # the same buckets, walked by the blocks present
            order = np.argsort(qs, kind="stable")
            return self._percentiles_sorted(qs[order])[np.argsort(order)]
        ranks = np.floor((self.count - 1) * qs / 100.0).astype(np.int64)
        pat = _ORDER[np.searchsorted(np.cumsum(self.hist[_ORDER]), ranks, side="right")]
        vals = _edges_toward_zero(pat)
        # the extremes are known exactly
        vals = np.where(ranks <= 0, self.min, vals)
        return np.where(ranks >= self.count - 1, self.max, vals)


#: Percentiles recorded per site.
PERCENTILES = (0.01, 0.1, 1.0, 50.0, 99.0, 99.9, 99.99)
_PERCENTILES_Q = np.array(PERCENTILES, dtype=np.float64)  # (ascending)
_PERCENTILES_Q.flags.writeable = False
#: Named range policies :meth:`SiteStats.choose_format` accepts (or a number:
#: a chosen clipping magnitude).
RANGE_STATS = ("max", "p99.99", "p99.9", "p99")


def parse_range(stat: str | float) -> str | float:
    """A range policy: one of :data:`RANGE_STATS`, or a positive number (clip value)."""
    if isinstance(stat, int | float):
        v = float(stat)
    elif stat in RANGE_STATS:
        return stat
    else:
        try:
            v = float(stat)
        except ValueError:
            raise ExportError(
                f"range policy {stat!r} is not one of {list(RANGE_STATS)} or a positive number "
                f"(a clipping magnitude)"
            ) from None
    if not (math.isfinite(v) and v > 0):
        raise ExportError(f"range clip value {stat!r} must be a positive finite number")
    return v


class StatsBatch:
    """The moments and percentiles of several float32 tensors, computed in one compiled
    call (:func:`hwapprox.approx._kernels.stats_many_f32`) started by ``submit`` (e.g.
    on a worker thread) while the caller goes on: each tensor's figures are those
    :class:`RunningStats` gives it alone (NaN/inf values left out). The tensors are kept
    alive until the call ends; :meth:`result` waits for it. :meth:`extremes` gives
    their counts of NaN/inf values and extremes here, in another compiled call."""

    def __init__(
        self,
        arrays: list[npt.NDArray[np.float32]],
        submit: Callable[[Callable[[], Any]], Future[Any]],
    ) -> None:
        addr, size = [], []
        for a in arrays:
            iface = a.__array_interface__  # (strides None: C-contiguous)
            if (
                iface["typestr"] != "<f4"
                or len(iface["shape"]) != 1
                or iface["strides"]
                or not a.size
            ):
                raise ValueError("StatsBatch takes non-empty contiguous 1-D float32 arrays")
            addr.append(iface["data"][0])
            size.append(a.size)
        self._arrays = arrays
        self._addrs = addrs = np.array(addr, dtype=np.int64)
        self._sizes = sizes = np.array(size, dtype=np.int64)

        def run(keep: list[npt.NDArray[np.float32]] = arrays) -> tuple[Any, ...]:
            # (``keep``: the tensors stay alive while the kernel reads them by address)
            return _kernels.stats_many_f32(addrs, sizes, _PERCENTILES_Q, _scratch())

        self._future = submit(run)
        self._done: list[list[Any]] | None = None

    def extremes(self) -> tuple[list[int], list[float], list[float]]:
        """Per tensor: the number of NaN/inf values, and the min and max of the others
        (:func:`hwapprox.approx._kernels.extremes_many_f32`: :class:`RunningStats`'
        figures but for the sign of a zero extreme where both zeros occur). The kernel
        releases the GIL, so the worker may begin meanwhile. Call before
        :meth:`result` (the tensors are dropped once it has run)."""
        if self._done is not None:
            raise ValueError("StatsBatch.extremes after result: the tensors are dropped")
        bad, lo, hi = _kernels.extremes_many_f32(self._addrs, self._sizes)
        return bad.tolist(), lo.tolist(), hi.tolist()

    def fill(self, stats: list[SiteStats]) -> None:
        """Fill in pending statistics of this batch (waits for the compiled call): what
        reading them does, for many at once."""
        for st in stats:
            d = st.__dict__
            pend = d.get("_batch")
            if pend is not None and pend[0] is self:
                mean, std, pct = self.result(pend[1])
                d.update(mean=mean, std=std, percentiles=pct)
                del d["_batch"]

    def result(self, i: int) -> tuple[float, float, tuple[tuple[float, float], ...]]:
        """``(mean, std, percentiles)`` of tensor ``i``'s finite values (as
        :class:`SiteStats` holds them; ValueError if it has none); waits for the
        compiled call."""
        if self._done is None:
            self._done = [a.tolist() for a in self._future.result()]
            self._arrays = []
        counts, moments, pct = self._done
        n, (_, _, mean, m2) = counts[i], moments[i]
        if not n:
            raise ValueError(f"StatsBatch tensor {i} has no finite value")
        # (RunningStats.std: the same correctly rounded square root)
        return mean, math.sqrt(m2 / n), tuple(zip(PERCENTILES, pct[i], strict=True))


@functools.lru_cache(maxsize=512)
def _signed_format(
    width: int, int_bits: int, rounding: Rounding, overflow: Overflow
) -> FixedFormat:
    """``FixedFormat(width, int_bits, True, rounding, overflow)`` (immutable: memoised,
    formats are chosen per site and call)."""
    return FixedFormat(width, int_bits, True, rounding, overflow)


#: the fields of a pending :class:`SiteStats` that its :class:`StatsBatch` fills in
_LATE = frozenset(("mean", "std", "percentiles"))


@dataclass(frozen=True)
class SiteStats:
    """Distribution of one site tensor (its input, or its output) over the
    calibration data; masked softmax elements are left out (``masked``).

    A pending one (:meth:`pending`) knows its counts and extremes and reads ``mean``,
    ``std`` and ``percentiles`` from its :class:`StatsBatch` when one of them is first
    read (comparing, hashing, printing and pickling read them)."""

    name: str
    count: int
    min: float
    max: float
    mean: float
    std: float
    percentiles: tuple[tuple[float, float], ...]
    nonfinite: int = 0
    masked: int = 0
    masked_rows: int = 0
    rows: int = 0

    @classmethod
    def pending(
        cls,
        name: str,
        count: int,
        lo: float,
        hi: float,
        batch: StatsBatch,
        index: int,
        *,
        masked: int = 0,
        masked_rows: int = 0,
        rows: int = 0,
    ) -> SiteStats:
        """Statistics of ``count`` finite values with extremes ``lo``, ``hi``, whose
        moments and percentiles are tensor ``index`` of ``batch``."""
        obj = object.__new__(cls)
        obj.__dict__.update(
            name=name, count=count, min=lo, max=hi, nonfinite=0, masked=masked,
            masked_rows=masked_rows, rows=rows, _batch=(batch, index),
        )  # fmt: skip
        return obj

    def __getattr__(self, key: str) -> Any:
        # (only for attributes not set: a pending object's late fields)
        pend = self.__dict__.get("_batch") if key in _LATE else None
        if pend is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")
        pend[0].fill([self])
        return self.__dict__[key]

    def __getstate__(self) -> dict[str, Any]:
        if "_batch" in self.__dict__:
            _ = self.mean  # (filled in)
        return dict(self.__dict__)

    @property
    def absmax(self) -> float:
        return max(abs(self.min), abs(self.max))

    @classmethod
    def of(
        cls,
        name: str,
        x: np.ndarray,
        mask: np.ndarray | None = None,
        *,
        masked_rows: int = 0,
        rows: int = 0,
    ) -> SiteStats:
        """Statistics of ``x`` without the elements where ``mask`` is True (one pass:
        :class:`~hwapprox.export.stats.RunningStats`, percentiles from its histogram)."""
        return cls.from_running(
            name, RunningStats().add(x, mask), masked_rows=masked_rows, rows=rows
        )

    @classmethod
    def from_running(
        cls, name: str, rs: RunningStats, *, masked_rows: int = 0, rows: int = 0
    ) -> SiteStats:
        """The summary of running statistics (several batches merged)."""
        if rs.count == 0:
            what = "unmasked values" if rs.masked else "values"
            size = rs.count + rs.nonfinite + rs.masked
            raise ExportError(
                f"site {name}: no finite {what} to calibrate on (size {size}, {rs.masked} "
                f"masked); give sample inputs (--inputs) in which the site sees real data"
            )
        pct = (
            rs._percentiles_sorted(_PERCENTILES_Q).tolist()
            if _kernels.available()
            else rs.percentile(PERCENTILES)
        )
        return cls(
            name,
            int(rs.count + rs.nonfinite),
            float(rs.min),
            float(rs.max),
            float(rs.mean),
            rs.std,
            tuple((float(p), float(v)) for p, v in zip(PERCENTILES, pct, strict=True)),
            int(rs.nonfinite),
            int(rs.masked),
            masked_rows,
            rows,
        )

    def range_value(self, stat: str | float = "max") -> float:
        """The magnitude the format must hold: ``"max"`` = max|x|; ``"p99.99"`` /
        ``"p99.9"`` / ``"p99"`` = the larger of |p0.01|, |p99.99| (|p0.1|, |p99.9|;
        |p1|, |p99|); a number = that clipping magnitude. Values beyond it
        saturate (the formats use ``AP_SAT``) and are counted in the report."""
        if stat == "max":
            return self.absmax
        stat = parse_range(stat)
        if isinstance(stat, float):
            return stat
        pct = dict(self.percentiles)
        lo = {"p99.99": 0.01, "p99.9": 0.1, "p99": 1.0}[stat]
        return max(abs(pct[lo]), abs(pct[100.0 - lo]))

    def int_bits(self, headroom: int = 1, stat: str | float = "max") -> int:
        """``floor(log2(m)) + 2 + headroom`` with ``m = range_value(stat)`` -- the
        smallest ``I`` with ``m < 2^(I-1)``, plus headroom (``1 + headroom`` if m = 0)."""
        m = self.range_value(stat)
        base = 1 if m == 0 else math.floor(math.log2(m)) + 2
        return base + headroom

    def choose_format(
        self,
        width: int = 16,
        headroom: int = 1,
        rounding: Rounding | str = Rounding.RND,
        overflow: Overflow | str = Overflow.SAT,
        stat: str | float = "max",
    ) -> FixedFormat:
        """``ap_fixed<width, int_bits(headroom, stat), rounding, overflow>``."""
        if self.nonfinite:
            raise ExportError(
                f"site {self.name}: {self.nonfinite} non-finite values (e.g. an -inf attention "
                f"mask the importer did not recognise), which no fixed-point format represents; "
                f"keep the site float (config 'sites: {{{self.name}: float}}')"
            )
        ib = self.int_bits(headroom, stat)
        if ib >= width:
            raise ExportError(
                f"site {self.name}: range {stat} = {self.range_value(stat):.4g} needs {ib} "
                f"integer bits (headroom {headroom}), not less than the width {width}; use a "
                f"wider --width, a percentile or numeric --range, or keep the site float"
            )
        return _signed_format(width, ib, Rounding(rounding), Overflow(overflow))

    def as_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "std": self.std,
            "absmax": self.absmax,
            "nonfinite": self.nonfinite,
            "masked": self.masked,
            "masked_rows": self.masked_rows,
            "rows": self.rows,
            "percentiles": {f"p{p:g}": v for p, v in self.percentiles},
        }
