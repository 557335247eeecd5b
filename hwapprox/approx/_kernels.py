"""Compiled kernels (numba) for the integer models: the streaming softmax models'
row scans (the online softmax's running ``(m, d)`` and Softermax's pass 1, one row
element by element, as the hardware does it, and their output stages; Softermax's
whole row in one call), the LayerNorm models' whole rows (statistics, per-row
scalars and output stage) and output stages, the elementwise models' memo lookup
(range check and gather in one pass) and the input range check.

Only a speed-up, with no arithmetic of its own: each kernel is the recurrence
written in the model's docstring, on the same memo tables the numpy path
indexes (:meth:`OnlineSoftmax._exp_memo`, :meth:`SoftermaxSoftmax._t_memo` and
``_pow2_memo``), in int64. ``tests/test_model_fastpath.py`` compares them with the
element-by-element numpy loop (softmax) or the numpy path (LayerNorm) on more than
10^5 rows. Where numba is not installed (or :data:`enabled` is False) the models
take their numpy path (:func:`~hwapprox.approx.softmax._common.event_scan`), bit for
bit the same, several times slower; :data:`whole_rows` False keeps the row kernels
but not the whole-row ones (the path before them).

``HWAPPROX_NUMBA=0`` in the environment: numba is not imported at all and the models
take their numpy path, without the note. The RTL testbenches' simulator processes run
so (:func:`hwapprox.rtl_sim.runner.run_phases`): their scoreboards evaluate a few rows,
and importing numba and loading the kernels cost each simulation about 4 s.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

#: numba switched off by the environment (HWAPPROX_NUMBA=0): no import, no note
OFF_BY_ENV = os.environ.get("HWAPPROX_NUMBA", "1") == "0"

if OFF_BY_ENV:
    njit = None
else:
    try:  # numba is a dependency; the models still work without it
        from numba import njit
    except ImportError:  # pragma: no cover - exercised where numba is missing
        njit = None

__all__ = [
    "RECIP_MODES",
    "affine_rows",
    "available",
    "bitlen",
    "block_percentiles",
    "block_rank_patterns",
    "cast_params",
    "codes_in_range",
    "codes_to_float",
    "count_outside",
    "enabled",
    "err_stats",
    "hist_blocks_f32",
    "hls4ml_rows",
    "ibert_rows",
    "memo_lookup",
    "online_block_rows",
    "online_out",
    "online_report_f32",
    "online_rows_f32",
    "online_state",
    "quantize_f32",
    "quantize_gather",
    "recip_rows",
    "relu_mult_cast",
    "rounded_dot_sums",
    "rsqrt_report_f32",
    "rsqrt_rows",
    "rsqrt_rows_f32",
    "scale_affine_rows",
    "softermax_out",
    "softermax_rows",
    "softermax_sum",
    "whole_rows",
]

#: switch the kernels off (tests compare both paths; a user may too)
enabled = True


_noted = False


def available() -> bool:
    """True when the compiled kernels can run (numba importable and :data:`enabled`);
    without numba, one note (a warning) says the numpy path is used."""
    global _noted
    if njit is None and enabled and not _noted and not OFF_BY_ENV:
        _noted = True
        warnings.warn(
            "numba is not installed: the online and Softermax softmax models use their "
            "numpy path (the same results, several times slower on long rows); "
            "pip install numba to speed them up",
            stacklevel=2,
        )
    return enabled and njit is not None


def _bitlen(v: int) -> int:
    """``int.bit_length`` of ``v >= 0`` (0 -> 0)."""
    n = 0
    while v > 0:
        v >>= 1
        n += 1
    return n


bitlen = njit(cache=True, nogil=True)(_bitlen) if njit is not None else _bitlen


def _online_state(
    x: Any,
    mask: Any,
    masked: bool,
    memo: Any,
    one: int,
    up: int,
    fe: int,
    half: int,
    tau: int,
    lo: int,
    clamp: int,
    skip: Any,
) -> Any:
    """Per row: ``m`` and ``d`` after the stream (the class docstring's recurrence);
    ``skip`` (R, N) is set where threshold skipping drops an element (``tau > 0``).

    Unmasked: ``(m, d) = (x_0, ONE)``, then per element a new max rescales
    ``d = ((d·E(x - m) + half) >> F_e) + ONE`` (``half`` 0 for AP_TRN; the product
    split at bit ``F_e`` so that it may exceed 64 bits), else
    ``d += E(m - x)·up``. Masked (``masked``): the state starts empty (``m`` below
    every code, ``d = 0``), masked elements leave it untouched, differences are
    clamped to ``clamp`` (the memo's range), and a fully masked row reports ``lo``.
    """
    rows, n = x.shape
    m_out = np.empty(rows, dtype=np.int64)
    d_out = np.empty(rows, dtype=np.int64)
    for r in range(rows):
        if masked:
            m = lo - 1
            d = 0
            start = 0
        else:
            m = x[r, 0]
            d = one
            start = 1
        for j in range(start, n):
            if masked and mask[r, j]:
                continue
            xj = x[r, j]
            if xj > m:
                delta = xj - m
                if delta > clamp:
                    delta = clamp
                e = memo[delta]  # d·E exact beyond 64 bits: (d >> F_e)·E + (d mod 2^F_e)·E
                d = (d >> fe) * e + ((((d & ((1 << fe) - 1)) * e) + half) >> fe) + one
                m = xj
            else:
                delta = m - xj
                if delta > clamp:
                    delta = clamp
                if tau > 0 and delta > tau:
                    skip[r, j] = True
                else:
                    d += memo[delta] * up
        m_out[r] = m if m >= lo else lo
        d_out[r] = d
    return m_out, d_out


def _softermax_sum(
    x: Any,
    mask: Any,
    masked: bool,
    t_memo: Any,
    p_memo: Any,
    min_raw: int,
    ft: int,
    p_lo: int,
    up: int,
    m_empty: int,
) -> Any:
    """Softermax pass 1 per row: ``t = T(x)``, integer running max ``M`` of ``t >> F_t``,
    ``d = (d >> (M_j - M_(j-1))) + P(t - M_j·2^F_t)·up`` (shift capped at 62; ``P`` of
    arguments below ``p_lo`` is 0, the memo's first entry). Masked elements take ``M``
    = ``m_empty`` and ``P = 0``. Returns ``(d, M)`` per row."""
    rows, n = x.shape
    d_out = np.empty(rows, dtype=np.int64)
    m_out = np.empty(rows, dtype=np.int64)
    for r in range(rows):
        d = 0
        big_m = m_empty
        for j in range(n):
            if masked and mask[r, j]:
                continue
            t = t_memo[x[r, j] - min_raw]
            mj = t >> ft
            if mj > big_m:
                sh = mj - big_m
                if sh > 62:
                    sh = 62
                if j > 0:
                    d >>= sh
                big_m = mj
            a = t - (big_m << ft)
            if a < p_lo:
                a = p_lo
            d += p_memo[a - p_lo] * up
        d_out[r] = d
        m_out[r] = big_m
    return d_out, m_out


def _online_out(
    x: Any, m: Any, r: Any, memo: Any, s: int, half: int, lo: int, hi: int, mask: Any,
    masked: bool,
) -> Any:  # fmt: skip
    """Per element ``clip((E(m - x)·r + half) >> s, lo, hi)`` (the output multiply cast
    to ``out_fmt``: AP_TRN / AP_RND by ``half``, AP_SAT), 0 where masked."""
    rows, n = x.shape
    y = np.empty((rows, n), dtype=np.int64)
    top = memo.shape[0] - 1  # the clamp only moves masked elements (zeroed below)
    for i in range(rows):
        mi = m[i]
        ri = r[i]
        for j in range(n):  # no branch on the mask here: the loop stays branch-free
            v = (memo[min(max(mi - x[i, j], 0), top)] * ri + half) >> s
            y[i, j] = lo if v < lo else (hi if v > hi else v)
        if masked:
            for j in range(n):
                if mask[i, j]:
                    y[i, j] = 0
    return y


def _softermax_out(
    x: Any, big_m: Any, r: Any, t_memo: Any, min_raw: int, ft: int, p_memo: Any, p_lo: int,
    s: int, half: int, lo: int, hi: int, mask: Any, masked: bool,
) -> Any:  # fmt: skip
    """Per element ``clip((P(T(x) - M·2^F_t)·r + half) >> s, lo, hi)``, 0 where masked."""
    rows, n = x.shape
    y = np.empty((rows, n), dtype=np.int64)
    p_hi = p_lo + p_memo.shape[0] - 1  # (reached by masked elements only: zeroed below)
    for i in range(rows):
        base = big_m[i] << ft
        ri = r[i]
        for j in range(n):  # no branch on the mask here: the loop stays branch-free
            a = min(max(t_memo[x[i, j] - min_raw] - base, p_lo), p_hi)
            v = (p_memo[a - p_lo] * ri + half) >> s
            y[i, j] = lo if v < lo else (hi if v > hi else v)
        if masked:
            for j in range(n):
                if mask[i, j]:
                    y[i, j] = 0
    return y


def _softermax_rows(
    x: Any, mask: Any, masked: bool, t_memo: Any, p_memo: Any, min_raw: int, ft: int,
    p_lo: int, up: int, m_empty: int, one_s: int, f_s: int, f_r: int, r_tab: Any,
    r_addr: int, r_wf: int, r_rnd: bool, r_sat: bool, r_hi: int, s: int, half: int, lo: int,
    hi: int, out: Any,
) -> bool:  # fmt: skip
    """Softermax per row in one call: pass 1 (:func:`_softermax_sum`'s recurrence), the
    reciprocal and pass 2 (:func:`_softermax_out`'s stage).

    Pass 1 by segments: the integer running max ``M_j`` is constant between its rises,
    so the recurrence ``d = (d >> (M_j - M_(j-1))) + P(t_j - M_j·2^F_t)·up`` is, segment
    by segment, ``d = (d >> (M_k - M_(k-1))) + up·Σ_segment P(t_j - M_k·2^F_t)`` (the
    same integers: the shift comes before the segment's first element, as in the loop,
    and integer sums regroup). One scalar scan finds the rises; the ``T`` lookups and the
    segment sums are plain loops that vectorise. ``P`` against the row's ``M`` (pass 2's
    numerator) is the last segment's, and is looked up again only before it. Masked
    elements neither rise nor add; a fully masked row keeps ``M = m_empty``, ``d = 0``.

    The reciprocal is :func:`hwapprox.approx.intmath.reciprocal` (``unit="lut"``, no
    Newton step) for ``d`` with ``f_s`` fraction bits to ``f_r`` (``r_rnd``: AP_RND,
    else AP_TRN): ``p = bitlen(d) - 1``, ``U = d·2^(wf - p)`` (truncated), table index
    ``i`` = its top ``r_addr`` fraction bits, ``w`` the rest (``g = wf - r_addr``),
    ``R = T[i]·2^g - (T[i] - T[i+1])·w`` rounded by ``g`` bits, then by ``wf + p - f_s
    - f_r`` (clamped to 62; negative: a left shift); then ``recip_fmt``'s overflow
    (``r_sat``: clip to ``[0, r_hi]``, else unsigned wrap: ``& r_hi``). A fully masked
    row's ``d = 0`` becomes ``one_s`` first (its outputs are 0 whatever ``r`` is).
    False (``out`` then partly written) if a row's ``d <= 0`` remains: the caller takes
    its other path, which raises."""
    rows, n = x.shape
    tb = np.empty(n, dtype=np.int64)
    pb = np.empty(n, dtype=np.int64)
    starts = np.empty(n + 1, dtype=np.int64)
    seg_m = np.empty(n, dtype=np.int64)
    g = r_wf - r_addr
    p_hi = p_lo + p_memo.shape[0] - 1
    for i in range(rows):
        for j in range(n):
            tb[j] = t_memo[x[i, j] - min_raw]
        big_m = m_empty
        nseg = 0
        for j in range(n):  # the rises of the integer running max
            mj = tb[j] >> ft
            if mj > big_m and not (masked and mask[i, j]):
                starts[nseg] = j
                seg_m[nseg] = mj
                nseg += 1
                big_m = mj
        starts[nseg] = n
        d = 0
        for k in range(nseg):
            if k > 0:
                d >>= min(seg_m[k] - seg_m[k - 1], 62)
            base = seg_m[k] << ft
            acc = 0
            if masked:
                for j in range(starts[k], starts[k + 1]):
                    a = min(max(tb[j] - base, p_lo), p_hi)
                    pj = 0 if mask[i, j] else p_memo[a - p_lo]
                    pb[j] = pj
                    acc += pj
            else:
                for j in range(starts[k], starts[k + 1]):
                    pj = p_memo[max(tb[j] - base, p_lo) - p_lo]
                    pb[j] = pj
                    acc += pj
            d += acc * up
        base = big_m << ft
        last = starts[nseg - 1] if nseg > 0 else n
        for j in range(last):  # before the last rise: P against the row's M
            a = min(max(tb[j] - base, p_lo), p_hi)
            pb[j] = p_memo[a - p_lo]
        if masked and d == 0:
            d = one_s
        if d <= 0:
            return False
        lp = bitlen(d) - 1
        us = r_wf - lp
        u = d << us if us >= 0 else d >> -us
        fr = u - (1 << r_wf)
        k = fr >> g
        lo_t = r_tab[k]
        r = (lo_t << g) - (lo_t - r_tab[k + 1]) * (fr & ((1 << g) - 1))
        if g > 0:
            r = (r + ((1 << (g - 1)) if r_rnd else 0)) >> g
        tot = r_wf - f_s - f_r + lp
        if tot > 0:
            pos = min(tot, 62)
            r = (r >> pos) + (((r >> (pos - 1)) & 1) if r_rnd else 0)
        elif tot < 0:
            r = r << min(-tot, 62)
        r = (0 if r < 0 else (r_hi if r > r_hi else r)) if r_sat else r & r_hi
        for j in range(n):
            v = (pb[j] * r + half) >> s
            out[i, j] = lo if v < lo else (hi if v > hi else v)
        if masked:
            for j in range(n):
                if mask[i, j]:
                    out[i, j] = 0
    return True


if njit is not None:
    online_state = njit(cache=True, nogil=True)(_online_state)
    softermax_sum = njit(cache=True, nogil=True)(_softermax_sum)
    online_out = njit(cache=True, nogil=True)(_online_out)
    softermax_out = njit(cache=True, nogil=True)(_softermax_out)
    softermax_rows = njit(cache=True, nogil=True)(_softermax_rows)
else:  # pragma: no cover
    online_state = _online_state
    softermax_sum = _softermax_sum
    online_out = _online_out
    softermax_out = _softermax_out
    softermax_rows = _softermax_rows


def _memo_lookup(x: Any, memo: Any, lo: int, hi: int, out: Any) -> bool:
    """``out[i] = memo[x[i] - lo]`` for 1-D ``x``; False if a code lies outside
    ``[lo, hi]`` (``out`` is then meaningless and the caller raises its own error; the
    index is clamped, so nothing is read outside ``memo``). Branch-free: it vectorises."""
    bad = 0
    top = hi - lo
    for i in range(x.shape[0]):
        k = x[i] - lo
        bad += (k < 0) | (k > top)
        out[i] = memo[min(max(k, 0), top)]
    return bad == 0


memo_lookup = njit(cache=True, nogil=True)(_memo_lookup) if njit is not None else _memo_lookup


def _codes_in_range(x: Any, lo: int, hi: int) -> bool:
    """True when every element of 1-D ``x`` lies in ``[lo, hi]``: one pass, where
    ``x.min() >= lo and x.max() <= hi`` takes two. Branch-free: it vectorises."""
    bad = 0
    for i in range(x.shape[0]):
        bad += (x[i] < lo) | (x[i] > hi)
    return bad == 0


codes_in_range = (
    njit(cache=True, nogil=True)(_codes_in_range) if njit is not None else _codes_in_range
)


def _quantize_f32(x: Any, scale: float, lo: float, hi: float, rnd: bool, out: Any) -> bool:
    """``out[i]`` = float32 ``x[i]`` in a saturating format: ``s = x·scale`` clipped to
    ``[lo, hi]``, then ``floor(s + 1/2)`` (AP_RND) or ``floor(s)`` (AP_TRN) -- exactly
    :meth:`hwapprox.fixed.FixedFormat.quantize`'s float32 path (``W <= 52``, ``F >= 0``);
    False if a value is NaN/inf (``out`` is then meaningless; the caller raises the
    format's own error). No early exit: the loop stays branch-free and vectorises."""
    bad = 0
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        bad += not np.isfinite(v)
        s = min(max(v * scale, lo), hi)
        out[i] = np.int64(np.floor(s + 0.5)) if rnd else np.int64(np.floor(s))
    return bad == 0


quantize_f32 = njit(cache=True, nogil=True)(_quantize_f32) if njit is not None else _quantize_f32


#: elements whose table indices the gather kernels compute at once
_IDX_BLOCK = 4096


def _table_indices(
    xs: Any, scale: float, lo: float, hi: float, rnd: bool, code_lo: int, top: int, idx: Any
) -> int:
    """``idx[i]`` = the table index of float32 ``xs[i]`` for ``i < len(xs)`` (a block of
    the input, as a slice): its code as :func:`_quantize_f32` quantises it, less
    ``code_lo``, clamped into ``[0, top]`` (so a NaN/inf reads inside the table); returns
    how many of them are NaN/inf. A loop without gathers from index 0, so it vectorises
    (indexing ``x[i0 + i]`` and ``idx[i - i0]`` instead kept it scalar: the GELU
    gather of 32 K elements 45 -> 24 us)."""
    bad = 0
    for i in range(xs.shape[0]):
        v = np.float64(xs[i])
        bad += not np.isfinite(v)
        s = min(max(v * scale, lo), hi)
        q = np.int64(np.floor(s + 0.5)) if rnd else np.int64(np.floor(s))
        idx[i] = min(max(q - code_lo, 0), top)
    return bad


if njit is not None:  # (inlined into the gather kernels)
    _table_indices = njit(inline="always")(_table_indices)  # type: ignore[assignment]


def _quantize_gather(
    x: Any, scale: float, lo: float, hi: float, rnd: bool, code_lo: int, table: Any, out: Any
) -> bool:
    """``out[i] = table[q(x[i]) - code_lo]`` with ``q`` :func:`_quantize_f32`'s
    quantisation of float32 ``x[i]`` (the same clip and rounding), so an elementwise
    model's reals come out of one pass: ``table`` holds the output real of every input
    code (float64, or float32 already rounded from it for a float32 ``out``), stored into
    ``out`` (float32 or float64: numpy's rounding of the float64 value). False if a
    value is NaN/inf, as :func:`_quantize_f32` (its index is
    clamped into the table, so nothing is read outside it). By blocks of 4096: the
    indices first (a loop that vectorises), then the gathers."""
    bad = 0
    top = table.shape[0] - 1
    idx = np.empty(_IDX_BLOCK, np.int64)
    for i0 in range(0, x.shape[0], _IDX_BLOCK):
        i1 = min(x.shape[0], i0 + _IDX_BLOCK)
        bad += _table_indices(x[i0:i1], scale, lo, hi, rnd, code_lo, top, idx)
        ob = out[i0:i1]
        for i in range(i1 - i0):
            ob[i] = table[idx[i]]
    return bad == 0


def _codes_to_float(raw: Any, scale: float, out: Any) -> None:
    """``out[i] = raw[i]·scale`` computed in float64 and stored into ``out`` (float32 or
    float64): :meth:`hwapprox.fixed.FixedFormat.to_float` (``scale = 2^-F``, exact for
    codes of at most 53 bits) followed by numpy's ``astype``, in one pass."""
    for i in range(raw.shape[0]):
        out[i] = np.float64(raw[i]) * scale


if njit is not None:
    quantize_gather = njit(cache=True, nogil=True)(_quantize_gather)
    codes_to_float = njit(cache=True, nogil=True)(_codes_to_float)
else:  # pragma: no cover
    quantize_gather = _quantize_gather
    codes_to_float = _codes_to_float


def _relu_mult_cast(
    x: Any, lo_in: int, hi_in: int, k: int, s: int, half: int, lo: int, hi: int, out: Any
) -> bool:
    """``out[i] = clip((max(x[i], 0)·k + half) >> s, lo, hi)`` for 1-D integer codes
    ``x``: :class:`hwapprox.approx.attnact.ReluAttention`'s datapath with its output cast
    (:func:`cast_params`); False if a code lies outside ``[lo_in, hi_in]`` (``out`` is
    then meaningless and the caller raises its own error). Branch-free: it vectorises."""
    bad = 0
    for i in range(x.shape[0]):
        v = np.int64(x[i])
        bad += (v < lo_in) | (v > hi_in)
        a = max(v, 0) * k
        out[i] = min(max((a + half) >> s, lo), hi)
    return bad == 0


if njit is not None:
    relu_mult_cast = njit(cache=True, nogil=True)(_relu_mult_cast)
else:  # pragma: no cover
    relu_mult_cast = _relu_mult_cast


def cast_params(src_frac: int, dst: Any) -> tuple[int, int, int, int] | None:
    """``(s, half, lo, hi)`` of the output cast a kernel does inline, or None when the
    cast is not a single AP_TRN / AP_RND shift by ``0 < s < 63`` with AP_SAT."""
    from hwapprox.fixed import Overflow, Rounding

    s = src_frac - dst.frac_bits
    if not (0 < s < 63 and dst.overflow is Overflow.SAT):
        return None
    if dst.rounding is Rounding.TRN:
        return s, 0, dst.min_raw, dst.max_raw
    if dst.rounding is Rounding.RND:
        return s, 1 << (s - 1), dst.min_raw, dst.max_raw
    return None


def _hist_blocks_f32(
    x: Any, bits: Any, scratch: Any
) -> tuple[int, float, float, float, float, Any, Any]:
    """One float32 batch's statistics: ``x`` and ``bits`` (the same memory as uint32).

    Returns the number of finite values, their min, max, mean and ``m2 = Σ (x_i -
    mean)²`` in float64, and their bfloat16 histogram by exponent blocks: ``ids``,
    the ascending blocks present (``bits >> 23``: sign and exponent, the pattern
    ``bits >> 16`` shifted by its 7 mantissa bits), and ``counts`` (len(ids), 128),
    row ``i`` the counts of patterns ``ids[i]·128 + 0..127``. Non-finite values are
    skipped (the caller counts them as ``size - count``).

    One pass counts into ``scratch``, a 65,536-bin histogram that is all zero on entry
    and is left all zero (the blocks present are copied out and cleared), so a caller
    keeps one per thread and no 512 KB array is zeroed per call.
    Moments by blocks of 4096 finite values: each block sums ``x - c`` and ``(x - c)²``
    about its first value ``c`` (so the sums do not cancel when the data sit far from
    zero), and the blocks are merged by Chan et al.'s pairwise update, as
    :meth:`hwapprox.export.stats.RunningStats.merge` merges batches."""
    present = np.zeros(512, dtype=np.bool_)  # (a store, not a count: no chain through memory)
    n = 0
    lo = np.inf
    hi = -np.inf
    mean = 0.0
    m2 = 0.0
    c = 0.0
    s1 = 0.0
    s2 = 0.0
    k = 0
    for i in range(x.shape[0] + 1):
        if i < x.shape[0]:
            b = bits[i]
            if (b & 0x7F800000) == 0x7F800000:
                continue
            scratch[b >> 16] += 1
            present[b >> 23] = True
            v = np.float64(x[i])
            lo = min(lo, v)
            hi = max(hi, v)
            if k == 0:
                c = v
            d = v - c
            s1 += d
            s2 += d * d
            k += 1
            if k < 4096:
                continue
        if k == 0:
            break
        mean_b = c + s1 / k
        m2_b = max(s2 - s1 * s1 / k, 0.0)
        tot = n + k
        delta = mean_b - mean
        mean += delta * k / tot
        m2 += m2_b + delta * delta * n * k / tot
        n = tot
        s1 = 0.0
        s2 = 0.0
        k = 0
    n_ids = 0
    for t in range(512):
        if present[t]:
            n_ids += 1
    ids = np.empty(n_ids, dtype=np.int64)
    counts = np.empty((n_ids, 128), dtype=np.int64)
    row = 0
    for t in range(512):
        if present[t]:
            ids[row] = t
            for u in range(128):
                counts[row, u] = scratch[(t << 7) + u]
                scratch[(t << 7) + u] = 0
            row += 1
    return n, lo, hi, mean, m2, ids, counts


def _block_rank_patterns(ids: Any, counts: Any, ranks: Any, out: Any) -> None:
    """For ``ranks`` in ascending order: ``out[j]`` = the first 16-bit pattern, in
    ascending value order of its bfloat16 bucket, at which the cumulative count of
    the histogram ``(ids, counts)`` (:func:`_hist_blocks_f32`'s blocks) exceeds
    ``ranks[j]`` (-1 when none does). Value order: negative patterns by descending
    magnitude (blocks 256..510 walked downward, each from its bin 127 to 0), then
    non-negative ones by ascending magnitude (blocks 0..254 upward, bins 0 to 127).

    Each block present is summed, and only a block holding a rank is walked bin by bin."""
    j = 0
    cum = 0
    m = ranks.shape[0]
    k = ids.shape[0]
    n_pos = 0
    while n_pos < k and ids[n_pos] < 256:
        n_pos += 1
    for step in range(k):
        r = k - 1 - step if step < k - n_pos else step - (k - n_pos)
        neg = ids[r] >= 256
        s = 0
        for t in range(128):
            s += counts[r, t]
        if j < m and cum + s > ranks[j]:
            c = cum
            for u in range(128):
                t = 127 - u if neg else u
                c += counts[r, t]
                while j < m and c > ranks[j]:
                    out[j] = (ids[r] << 7) | t
                    j += 1
            if j == m:
                return
        cum += s
    while j < m:
        out[j] = -1
        j += 1


if njit is not None:
    hist_blocks_f32 = njit(cache=True, nogil=True)(_hist_blocks_f32)
    block_rank_patterns = njit(cache=True, nogil=True)(_block_rank_patterns)
else:  # pragma: no cover
    hist_blocks_f32 = _hist_blocks_f32
    block_rank_patterns = _block_rank_patterns


def _block_percentiles(
    ids: Any, counts: Any, qs: Any, count: int, lo: float, hi: float, pat: Any, out: Any
) -> None:
    """Percentiles ``qs`` (ascending, 0..100) of the histogram ``(ids, counts)`` of
    ``count`` values with extremes ``lo``, ``hi``: the rank ``⌊(count-1)·q/100⌋`` (the
    float64 expression numpy evaluates), its pattern by :func:`_block_rank_patterns`
    (into ``pat``), and the value of the pattern's bucket edge nearest zero (its
    bfloat16 value, exact in float64) into ``out``; rank 0 gives ``lo`` and rank
    ``count - 1`` gives ``hi`` (the extremes are known exactly)."""
    m = qs.shape[0]
    ranks = np.empty(m, dtype=np.int64)
    for j in range(m):
        ranks[j] = np.int64(np.floor((count - 1) * qs[j] / 100.0))
    block_rank_patterns(ids, counts, ranks, pat)
    for j in range(m):
        if ranks[j] <= 0:
            out[j] = lo
        elif ranks[j] >= count - 1:
            out[j] = hi
        else:
            p = pat[j]
            e = (p >> 7) & 0xFF
            v = np.float64(p & 0x7F)
            v = v * 2.0**-133 if e == 0 else (1.0 + v / 128.0) * 2.0 ** np.float64(e - 127)
            out[j] = -v if p & 0x8000 else v


block_percentiles = (
    njit(cache=True, nogil=True)(_block_percentiles) if njit is not None else _block_percentiles
)


if njit is not None:
    from numba import carray, types
    from numba.extending import intrinsic

    def _pointer_at(item: Any) -> Any:
        """An intrinsic giving the ``item`` pointer at an integer address (an array's
        data that the caller keeps alive for the whole call)."""

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

        def at(typingctx: Any, addr: Any) -> Any:
            return types.CPointer(item)(types.int64), codegen

        return intrinsic(at)

    _f32_at = _pointer_at(types.float32)
    _u32_at = _pointer_at(types.uint32)  # (the same memory's bit patterns)

    @njit(cache=True, nogil=True)  # type: ignore[misc]
    def stats_many_f32(addrs: Any, sizes: Any, qs: Any, scratch: Any) -> tuple[Any, Any, Any]:
        """:func:`hist_blocks_f32` and :func:`block_percentiles` of several contiguous
        float32 tensors in one call (so a caller on another thread hands the GIL over
        twice, not twice per tensor): tensor ``t`` is the ``sizes[t]`` values at address
        ``addrs[t]``, which the caller keeps alive for the call. Returns ``counts[t]``
        (finite values), ``moments[t] = (min, max, mean, m2)`` and ``pct[t]`` (the
        percentiles ``qs``, ascending; left 0 for a tensor without finite values): each
        the figure those two kernels give for the tensor alone."""
        t_n = addrs.shape[0]
        counts = np.zeros(t_n, dtype=np.int64)
        moments = np.zeros((t_n, 4), dtype=np.float64)
        pct = np.zeros((t_n, qs.shape[0]), dtype=np.float64)
        pat = np.empty(qs.shape[0], dtype=np.int64)
        for t in range(t_n):
            x = carray(_f32_at(addrs[t]), (sizes[t],))
            bits = carray(_u32_at(addrs[t]), (sizes[t],))
            n, lo, hi, mean, m2, ids, hist = hist_blocks_f32(x, bits, scratch)
            counts[t] = n
            moments[t, 0] = lo
            moments[t, 1] = hi
            moments[t, 2] = mean
            moments[t, 3] = m2
            if n > 0:
                block_percentiles(ids, hist, qs, n, lo, hi, pat, pct[t])
        return counts, moments, pct

    @njit(cache=True, nogil=True)  # type: ignore[misc]
    def extremes_many_f32(addrs: Any, sizes: Any) -> tuple[Any, Any, Any]:
        """Per tensor (as :func:`stats_many_f32` takes them): the number of NaN/inf
        values and the min and max of the others (``inf``, ``-inf`` when there are
        none), as :func:`hist_blocks_f32` gives them, except the sign of a zero
        extreme where a tensor holds both zeros (here -0.0 < +0.0; the serial pass keeps
        the first zero it meets). Over the bit patterns mapped to order-preserving int32
        keys, branch-free, so the loop vectorises."""
        t_n = addrs.shape[0]
        bad = np.zeros(t_n, dtype=np.int64)
        lo = np.empty(t_n, dtype=np.float64)
        hi = np.empty(t_n, dtype=np.float64)
        kmax = np.int32(0x7FFFFFFF)
        kmin = np.int32(-0x80000000)
        for t in range(t_n):
            bits = carray(_u32_at(addrs[t]), (sizes[t],))
            k_lo = kmax
            k_hi = kmin
            nf = 0
            for i in range(bits.shape[0]):
                b = np.int32(bits[i])
                fin = (b & 0x7F800000) != 0x7F800000
                key = b ^ ((b >> 31) & 0x7FFFFFFF)  # (negative floats: reversed order)
                k_lo = min(k_lo, key if fin else kmax)
                k_hi = max(k_hi, key if fin else kmin)
                nf += not fin
            bad[t] = nf
            if nf == sizes[t]:
                lo[t] = np.inf
                hi[t] = -np.inf
                continue
            pair = np.empty(2, dtype=np.int32)
            pair[0] = k_lo ^ ((k_lo >> 31) & 0x7FFFFFFF)
            pair[1] = k_hi ^ ((k_hi >> 31) & 0x7FFFFFFF)
            vals = pair.view(np.float32)
            lo[t] = np.float64(vals[0])
            hi[t] = np.float64(vals[1])
        return bad, lo, hi

else:  # pragma: no cover
    stats_many_f32 = None
    extremes_many_f32 = None


# -- LayerNorm output stages ---------------------------------------------------------------
# ``hwapprox.approx.layernorm.affine_out`` element by element: ``acc = Z·G + (B << b_sh)``
# (``G`` absent: ``Z << g_sh``; ``B`` absent: no add), then ``(acc + half) >> shift``
# (AP_TRN / AP_RND, ``shift > 0``) and the overflow: clipped to ``[lo, hi]`` (AP_SAT), or,
# with ``wrap > 0``, the low ``64 - wrap`` bits sign-extended (signed AP_WRAP). The caller
# checks the modes.


def _affine_rows(
    z: Any, g: Any, has_g: bool, g_sh: int, b: Any, has_b: bool, b_sh: int,
    shift: int, half: int, lo: int, hi: int, wrap: int, out: Any,
) -> None:  # fmt: skip
    """``out[i, j]`` = the affine output stage (above) of ``z[i, j]``."""
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            acc = z[i, j] * g[j] if has_g else z[i, j] << g_sh
            if has_b:
                acc += b[j] << b_sh
            v = (acc + half) >> shift
            if wrap > 0:
                out[i, j] = (v << wrap) >> wrap
            else:
                out[i, j] = lo if v < lo else (hi if v > hi else v)


def _scale_affine_rows(
    x: Any, c1: Any, c0: Any, sh: Any, g: Any, has_g: bool, g_sh: int, b: Any, has_b: bool,
    b_sh: int, shift: int, half: int, lo: int, hi: int, wrap: int, out: Any,
) -> None:  # fmt: skip
    """The rsqrt LayerNorm / RMSNorm pass 2 and output stage per element:
    ``A = X·c1[i] - c0[i]``, ``Z = round(A / 2^sh[i])`` ties up (``sh < 0``: ``A << -sh``),
    then the affine stage (above; written out again: a shared inner function keeps numba
    from vectorising the loop, 20x slower)."""
    for i in range(x.shape[0]):
        s = sh[i]
        zh = (1 << (s - 1)) if s > 0 else 0
        for j in range(x.shape[1]):
            a = x[i, j] * c1[i] - c0[i]
            z = (a + zh) >> s if s >= 0 else a << -s
            acc = z * g[j] if has_g else z << g_sh
            if has_b:
                acc += b[j] << b_sh
            v = (acc + half) >> shift
            if wrap > 0:
                out[i, j] = (v << wrap) >> wrap
            else:
                out[i, j] = lo if v < lo else (hi if v > hi else v)


if njit is not None:
    affine_rows = njit(cache=True, nogil=True)(_affine_rows)
    scale_affine_rows = njit(cache=True, nogil=True)(_scale_affine_rows)
else:  # pragma: no cover
    affine_rows = _affine_rows
    scale_affine_rows = _scale_affine_rows


# -- per-site metrics (hwapprox.export.validate) ------------------------------------------
#: the running state of the comparison kernels below, (n, max|y - yf|, max|yi - yf|,
#: max|y - yi|, Σ|y - yf|, Σ(y - yf)², Σ yf², and the three sums of the current block
#: of 4096 kept elements, its count): :func:`_acc_add` folds one element in
_ACC_BLOCK = 4096


def _acc_add(st: Any, v: float, r: float, w: float) -> Any:
    """The state ``st`` with one kept element folded in: the model's ``v``, the float
    output ``r`` and the reference of the quantised input ``w`` (float64). The sums go
    by blocks of 4096 elements, each block summed from zero, then added to the totals."""
    n, mx, mq, ma, s1, s2, sr, b1, b2, br, k = st
    d = abs(v - r)
    mx = max(mx, d)
    mq = max(mq, abs(w - r))
    ma = max(ma, abs(v - w))
    b1 += d
    b2 += d * d
    br += r * r
    n += 1
    k += 1
    if k == _ACC_BLOCK:
        s1 += b1
        s2 += b2
        sr += br
        b1 = 0.0
        b2 = 0.0
        br = 0.0
        k = 0
    return (n, mx, mq, ma, s1, s2, sr, b1, b2, br, k)


def _acc_result(st: Any) -> tuple[int, float, float, float, float, float, float]:
    """``(n, max|y - yf|, Σ|y - yf|, Σ(y - yf)², Σ yf², max|yi - yf|, max|y - yi|)``."""
    n, mx, mq, ma, s1, s2, sr, b1, b2, br, _ = st
    return n, mx, s1 + b1, s2 + b2, sr + br, mq, ma


if njit is not None:  # (inlined into the kernels: the state stays in registers)
    _acc_add = njit(inline="always")(_acc_add)  # type: ignore[assignment]
    _acc_result = njit(inline="always")(_acc_result)  # type: ignore[assignment]


def _err_stats(
    y: Any, yf: Any, keep: Any, has_keep: bool
) -> tuple[int, float, float, float, float]:
    """One pass over flat ``y`` (approximation) and ``yf`` (float reference), the
    elements where ``keep`` is True (all without ``has_keep``): their number,
    ``max |y - yf|``, ``Σ |y - yf|``, ``Σ (y - yf)²`` and ``Σ yf²``, each in float64
    (sums blocked by 4096)."""
    st = (0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    for i in range(y.shape[0]):
        if has_keep and not keep[i]:
            continue
        r = np.float64(yf[i])
        st = _acc_add(st, np.float64(y[i]), r, r)
    n, mx, s1, s2, sr, _, _ = _acc_result(st)
    return n, mx, s1, s2, sr


def _err_stats3(
    y: Any, yf: Any, yi: Any, keep: Any, has_keep: bool
) -> tuple[int, float, float, float, float, float, float]:
    """:func:`_err_stats` of ``(y, yf)`` and the maxima ``max |yi - yf|`` and
    ``max |y - yi|`` over the same elements, in one pass (each figure computed as
    :func:`_err_stats` computes it, the sums blocked the same way)."""
    st = (0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    for i in range(y.shape[0]):
        if has_keep and not keep[i]:
            continue
        st = _acc_add(st, np.float64(y[i]), np.float64(yf[i]), np.float64(yi[i]))
    return _acc_result(st)


def _softmax_err_stats(
    raw: Any, table: Any, y: Any, yf: Any, mask: Any, has_mask: bool
) -> tuple[int, float, float, float, float, float, float, float]:
    """The softmax site figures of :func:`_err_stats3` plus the row-sum error, with the
    float64 softmax of the quantised rows computed on the fly: ``raw`` (R, N) input
    codes, ``table[k] = exp(-k·lsb)``, ``y`` the model's reals, ``yf`` the float
    model's output, ``mask`` (R, N) True = masked. The ideal of element j of row r is
    ``table[m - raw[r, j]] / Σ_j table[m - raw[r, j]]`` over the unmasked elements
    (``m`` their largest code; an index past the table reads its last entry, the
    underflow's 0); fully masked rows are left out. Returns
    :func:`_err_stats3`'s figures and ``max_r |Σ_j y - Σ_unmasked yf|``, the sums
    blocked by 4096 kept elements as :func:`_err_stats3` blocks them."""
    st = (0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    st, rse = _softmax_rows_acc(st, 0.0, raw, y, table, yf, mask, has_mask, 0, raw.shape[0])
    n, mx, s1, s2, sr, mq, ma = _acc_result(st)
    return n, mx, s1, s2, sr, mq, ma, rse


def _softmax_rows_acc(
    st: Any, rse: float, x: Any, y: Any, table: Any, yf: Any, mask: Any, has_mask: bool,
    i0: int, rows: int,
) -> tuple[Any, float]:  # fmt: skip
    """:func:`_softmax_err_stats` of ``rows`` rows: row ``k`` has the codes ``x[k]`` and
    the model's reals ``y[k]``, and is row ``i0 + k`` of the float output ``yf`` and of
    ``mask`` (read when ``has_mask``). The state ``st`` with their kept elements folded
    in, in row order, and ``rse`` the row-sum error maximum with theirs; fully masked
    rows leave both as they are. (A block of rows per call, not one: an inlined call
    per row made the loops 1.5x slower.)"""
    top = table.shape[0] - 1
    n = x.shape[1]
    for k in range(rows):
        r = i0 + k
        m = np.int64(0)
        live = False
        for j in range(n):
            if has_mask and mask[r, j]:
                continue
            if not live or x[k, j] > m:
                m = x[k, j]
            live = True
        if not live:
            continue
        s = 0.0
        for j in range(n):
            if not (has_mask and mask[r, j]):
                s += table[min(m - x[k, j], top)]
        sy = 0.0
        sf = 0.0
        for j in range(n):
            v = np.float64(y[k, j])
            sy += v
            if has_mask and mask[r, j]:
                continue
            f = np.float64(yf[r, j])
            sf += f
            st = _acc_add(st, v, f, table[min(m - x[k, j], top)] / s)
        rse = max(rse, abs(sy - sf))
    return st, rse


if njit is not None:  # (inlined into the two softmax metric kernels)
    _softmax_rows_acc = njit(inline="always")(_softmax_rows_acc)  # type: ignore[assignment]


def _ln_row_acc(
    st: Any, xr: Any, lsb: float, center: bool, k: int, eps: float, gamma: Any, beta: Any,
    has_gamma: bool, has_beta: bool, int_sums: bool, w: Any, yr: Any, yfr: Any,
) -> Any:  # fmt: skip
    """:func:`_layernorm_err_stats` of one row (``xr`` its codes, ``yr`` the model's reals,
    ``yfr`` the float output): the state ``st`` with the row's elements folded in.

    The reference's running sums of exact terms (``Σ x·lsb``; RMSNorm's ``Σ (x·lsb)²``)
    are summed as integers where ``int_sums`` says every partial sum stays below 2^53
    in LSB units (the caller's bound from the input width and row length): each float64
    partial sum is then exact, so the integer sum times ``lsb`` (``lsb²``) is the float
    sum bit for bit, without its serial chain of float adds. The reference of each
    element goes into the row buffer ``w`` first (a loop that vectorises, divisions
    included), then the comparison folds the row in element order."""
    m = xr.shape[0]
    mean = 0.0
    acc = 0.0
    if center:
        if int_sums:
            si = 0
            for j in range(m):
                si += xr[j]
            acc = np.float64(si) * lsb
        else:
            for j in range(m):
                acc += np.float64(xr[j]) * lsb
        mean = acc / m
        acc = 0.0
        for j in range(m):
            c = np.float64(xr[j]) * lsb - mean
            acc += c * c
        sd = np.sqrt(acc / m + eps)
    else:
        if int_sums:
            si = 0
            for j in range(k):
                si += xr[j] * xr[j]
            acc = np.float64(si) * (lsb * lsb)
        else:
            for j in range(k):
                a = np.float64(xr[j]) * lsb
                acc += a * a
        sd = np.sqrt(acc / k + eps)
    for j in range(m):
        v = (np.float64(xr[j]) * lsb - mean) / sd
        if has_gamma:
            v = v * gamma[j]
        if has_beta:
            v = v + beta[j]
        w[j] = v
    for j in range(m):
        st = _acc_add(st, np.float64(yr[j]), np.float64(yfr[j]), w[j])
    return st


if njit is not None:  # (inlined into the two LayerNorm metric kernels)
    _ln_row_acc = njit(inline="always")(_ln_row_acc)  # type: ignore[assignment]


def _layernorm_err_stats(
    raw: Any,
    lsb: float,
    center: bool,
    k: int,
    eps: float,
    gamma: Any,
    beta: Any,
    has_gamma: bool,
    has_beta: bool,
    int_sums: bool,
    w: Any,
    y: Any,
    yf: Any,
) -> tuple[int, float, float, float, float, float, float]:
    """:func:`_err_stats3` of a LayerNorm site with the float64 LayerNorm of the
    quantised rows computed on the fly: ``raw`` (R, N) input codes of step ``lsb``;
    ``center``: ``(a - mean) / sqrt(mean((a - mean)²) + eps)``, else RMSNorm's ``a /
    sqrt(mean(a[:k]²) + eps)``; then ``· gamma``, ``+ beta`` where given; ``y`` the
    model's reals, ``yf`` the float model's output; ``int_sums`` and the row buffer
    ``w`` as :func:`_ln_row_acc` takes them. The reference's row means are summed in
    row order (numpy sums pairwise: equal up to float64 rounding)."""
    st = (0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    for r in range(raw.shape[0]):
        st = _ln_row_acc(
            st, raw[r], lsb, center, k, eps, gamma, beta, has_gamma, has_beta, int_sums, w,
            y[r], yf[r],
        )  # fmt: skip
    return _acc_result(st)


def _gather_err_stats3(
    x: Any,
    yf: Any,
    scale: float,
    lo: float,
    hi: float,
    rnd: bool,
    code_lo: int,
    t_y: Any,
    t_i: Any,
) -> tuple[bool, int, float, float, float, float, float, float]:
    """:func:`_err_stats3` of an elementwise model without building its two arrays:
    each float32 ``x[i]`` quantised as :func:`_quantize_f32` does, ``y = t_y[q - code_lo]``
    (the model's output real, as stored), ``yi = t_i[q - code_lo]`` (the reference of
    the quantised input), against ``yf[i]``; every element kept. The same figures, the
    sums blocked the same way; first item False if an ``x`` is NaN/inf (the rest is
    then meaningless).

    By blocks of 4096: the block's table indices first (a loop that vectorises), then
    the gathers and the comparison (42 % faster than one fused loop, the same figures)."""
    bad = 0
    top = t_y.shape[0] - 1
    st = (0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    idx = np.empty(_IDX_BLOCK, np.int64)
    for i0 in range(0, x.shape[0], _IDX_BLOCK):
        i1 = min(x.shape[0], i0 + _IDX_BLOCK)
        bad += _table_indices(x[i0:i1], scale, lo, hi, rnd, code_lo, top, idx)
        for i in range(i0, i1):
            j = idx[i - i0]
            st = _acc_add(st, t_y[j], np.float64(yf[i]), t_i[j])
    n, mx, s1, s2, sr, mq, ma = _acc_result(st)
    return bad == 0, n, mx, s1, s2, sr, mq, ma


def _count_outside(a: Any, masked: Any, has_mask: bool, lo: float, hi: float) -> tuple[int, int]:
    """(number of unmasked values of flat ``a`` below ``lo`` or above ``hi``, number of
    unmasked values); NaN counts as inside, as ``(a < lo) | (a > hi)`` does."""
    out = 0
    total = 0
    for i in range(a.shape[0]):
        if has_mask and masked[i]:
            continue
        v = np.float64(a[i])
        total += 1
        if v < lo or v > hi:
            out += 1
    return out, total


def _count_mask_like(a: Any, masked: Any, has_mask: bool, limit: float) -> int:
    """Number of unmasked values of flat ``a`` that are NaN, infinite or ``<= limit``
    (``~isfinite(a) | (a <= limit)``, masked elements left out)."""
    bad = 0
    for i in range(a.shape[0]):
        v = np.float64(a[i])
        hit = (not np.isfinite(v)) or v <= limit
        if has_mask:
            hit = hit and not masked[i]
        bad += hit
    return bad


if njit is not None:
    err_stats = njit(cache=True, nogil=True)(_err_stats)
    err_stats3 = njit(cache=True, nogil=True)(_err_stats3)
    gather_err_stats3 = njit(cache=True, nogil=True)(_gather_err_stats3)
    count_outside = njit(cache=True, nogil=True)(_count_outside)
    count_mask_like = njit(cache=True, nogil=True)(_count_mask_like)
    softmax_err_stats = njit(cache=True, nogil=True)(_softmax_err_stats)
    layernorm_err_stats = njit(cache=True, nogil=True)(_layernorm_err_stats)
else:  # pragma: no cover
    err_stats = _err_stats
    err_stats3 = _err_stats3
    gather_err_stats3 = _gather_err_stats3
    count_outside = _count_outside
    count_mask_like = _count_mask_like
    softmax_err_stats = _softmax_err_stats
    layernorm_err_stats = _layernorm_err_stats


def _rounded_dot_sums(a: Any, bt: Any, acc: Any, h: int, d: int) -> None:
    """``acc[g, i, j] += Σ_k (a[g, i, k]·bt[g, j, k] + h) >> d`` (int64; the rounded
    products of :meth:`hwapprox.approx.linear.MatMulSpec._sum_fast`, ``bt`` = B
    transposed so both rows are read in order)."""
    for g in range(a.shape[0]):
        for i in range(a.shape[1]):
            for j in range(bt.shape[1]):
                s = np.int64(0)
                for k in range(a.shape[2]):
                    s += (a[g, i, k] * bt[g, j, k] + h) >> d
                acc[g, i, j] += s


rounded_dot_sums = (
    njit(cache=True, nogil=True)(_rounded_dot_sums) if njit is not None else _rounded_dot_sums
)


# -- LayerNorm whole rows ------------------------------------------------------------------
# One compiled call per spec: per row the statistics pass(es), the per-row scalars and the
# output stage (the affine stage above, written out again for numba's vectoriser), each
# row read from cache after its first pass. The integers are those of the models' numpy
# paths (tests/test_model_fastpath.py compares the two, and with the output-stage-only
# path before these kernels). :data:`whole_rows` switches only these kernels off.

#: switch the whole-row LayerNorm kernels off (the output-stage kernels stay): the path
#: before them, which the fast-path tests compare with
whole_rows = True


def _rsqrt_scalars(
    s1: int, s2: int, k_rms: int, gb: int, eps_nn: int, p: int, tb: int, table: Any,
    newton: int, fz: int,
) -> tuple[int, int]:  # fmt: skip
    """A row's rsqrt scalars from its sums (:func:`_rsqrt_rows`' docstring): ``De``, its
    leading-one mantissa ``m``, ``y = rsqrt_norm(m)`` (table, ``newton`` steps) and the
    shift ``sh``; returns ``(y, sh)``."""
    de = ((k_rms * s2 - s1 * s1) << gb) + eps_nn
    k = (bitlen(de) - 1) >> 1
    e = 2 * k - p
    m = de >> e if e >= 0 else de << -e
    h = m >> (p + 1)
    y = table[(h << (tb - 1)) + ((m >> (p + h - (tb - 1))) & ((1 << (tb - 1)) - 1))]
    for _ in range(newton):
        sq = (y * y) >> p
        t = (m * sq) >> p
        y = (y * ((3 << p) - t)) >> (p + 1)
    return y, p + k - gb // 2 - fz


if njit is not None:  # (inlined into the two row kernels)
    _rsqrt_scalars = njit(inline="always")(_rsqrt_scalars)  # type: ignore[assignment]


def _rsqrt_rows(
    x: Any, k_rms: int, center: bool, gb: int, eps_nn: int, p: int, tb: int, table: Any,
    newton: int, fz: int, g: Any, has_g: bool, g_sh: int, b: Any, has_b: bool, b_sh: int,
    shift: int, half: int, lo: int, hi: int, wrap: int, out: Any,
) -> bool:  # fmt: skip
    """``rsqrt_lut`` / ``rmsnorm`` per row (:class:`RsqrtLutLayerNorm`'s docstring):
    ``S2 = Σ_(j<k) X²``, ``S1 = ΣX`` (0 without ``center``), ``De = ((k·S2 - S1²) << G)
    + eps_nn`` (``eps_nn = k²·eps_q``), ``2k' = 2·((bitlen(De) - 1) >> 1)``, the mantissa
    ``m``, ``y = rsqrt_norm(m)`` (table, ``newton`` steps), ``sh = P + k' - G/2 - Fz``;
    then per element ``Z = round_half_up((X·k·y - S1·y) / 2^sh)`` and the affine stage.
    False (``out`` then partly written) where a row's ``|sh| >= 63``: the caller takes
    its numpy path."""
    for i in range(x.shape[0]):
        s1 = 0
        s2 = 0
        for j in range(k_rms):
            s2 += x[i, j] * x[i, j]
        if center:
            for j in range(x.shape[1]):
                s1 += x[i, j]
        y, s = _rsqrt_scalars(s1, s2, k_rms, gb, eps_nn, p, tb, table, newton, fz)
        if s <= -63 or s >= 63:
            return False
        c1 = k_rms * y
        c0 = s1 * y
        zh = (1 << (s - 1)) if s > 0 else 0
        for j in range(x.shape[1]):
            a = x[i, j] * c1 - c0
            z = (a + zh) >> s if s >= 0 else a << -s
            acc = z * g[j] if has_g else z << g_sh
            if has_b:
                acc += b[j] << b_sh
            v = (acc + half) >> shift
            if wrap > 0:
                out[i, j] = (v << wrap) >> wrap
            else:
                out[i, j] = lo if v < lo else (hi if v > hi else v)
    return True


def _rsqrt_rows_f32(
    xf: Any, q_scale: float, q_lo: float, q_hi: float, q_rnd: bool, k_rms: int,
    center: bool, gb: int, eps_nn: int, p: int, tb: int, table: Any, newton: int, fz: int,
    g: Any, has_g: bool, g_sh: int, b: Any, has_b: bool, b_sh: int, shift: int, half: int,
    lo: int, hi: int, wrap: int, out_scale: float, out: Any,
) -> int:  # fmt: skip
    """:func:`_rsqrt_rows` from float32 rows to the output codes' reals in one pass, for
    an emulated site: each row quantised as :func:`_quantize_f32` does (``q_*``), the
    same integers as :func:`_rsqrt_rows` (its lines, written out again on a row buffer),
    and each output code stored as :func:`_codes_to_float` stores it (``out_scale`` =
    2^-F_out, float64, into ``out``'s dtype). Returns 0, or 1 where an input is NaN/inf,
    2 where a row's ``|sh| >= 63`` (``out`` then partly written; the caller takes the
    codes path, which raises the format's error or runs numpy). The row's loops are
    written out here and in :func:`_rsqrt_report_f32`: as an inlined helper they ran
    1.5x slower (23 -> 35 us on 256 rows of 64)."""
    n = xf.shape[1]
    xq = np.empty(n, dtype=np.int64)
    for i in range(xf.shape[0]):
        bad = 0
        for j in range(n):
            v = np.float64(xf[i, j])
            bad += not np.isfinite(v)
            s = min(max(v * q_scale, q_lo), q_hi)
            xq[j] = np.int64(np.floor(s + 0.5)) if q_rnd else np.int64(np.floor(s))
        if bad:
            return 1
        s1 = 0
        s2 = 0
        for j in range(k_rms):
            s2 += xq[j] * xq[j]
        if center:
            for j in range(n):
                s1 += xq[j]
        y, s = _rsqrt_scalars(s1, s2, k_rms, gb, eps_nn, p, tb, table, newton, fz)
        if s <= -63 or s >= 63:
            return 2
        c1 = k_rms * y
        c0 = s1 * y
        zh = (1 << (s - 1)) if s > 0 else 0
        for j in range(n):
            a = xq[j] * c1 - c0
            z = (a + zh) >> s if s >= 0 else a << -s
            acc = z * g[j] if has_g else z << g_sh
            if has_b:
                acc += b[j] << b_sh
            v = (acc + half) >> shift
            v = ((v << wrap) >> wrap) if wrap > 0 else (lo if v < lo else (hi if v > hi else v))
            out[i, j] = np.float64(v) * out_scale
    return 0


def _rsqrt_report_f32(
    xf: Any, yf: Any, q_scale: float, q_lo: float, q_hi: float, q_rnd: bool, k_rms: int,
    center: bool, gb: int, eps_nn: int, p: int, tb: int, table: Any, newton: int, fz: int,
    g: Any, has_g: bool, g_sh: int, b: Any, has_b: bool, b_sh: int, shift: int, half: int,
    lo: int, hi: int, wrap: int, out_scale: float, y_row: Any, lsb: float, r_center: bool,
    r_k: int, r_eps: float, gamma: Any, beta: Any, has_gamma: bool, has_beta: bool,
    int_sums: bool, w: Any,
) -> tuple[int, int, float, float, float, float, float, float]:  # fmt: skip
    """A LayerNorm site's metrics from its float32 input rows ``xf`` and float output
    ``yf`` in one pass: per row the model's reals as :func:`_rsqrt_rows_f32` gives them
    (its lines; into ``y_row``, whose dtype is the reals' dtype), then
    :func:`_layernorm_err_stats`' comparison on the row's codes (:func:`_ln_row_acc`):
    its figures, the same in the same order, without the codes, reals and their
    arrays. First item the status of :func:`_rsqrt_rows_f32` (the rest then
    meaningless)."""
    st = (0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    n = xf.shape[1]
    xq = np.empty(n, dtype=np.int64)
    for i in range(xf.shape[0]):
        bad = 0
        for j in range(n):
            v = np.float64(xf[i, j])
            bad += not np.isfinite(v)
            s = min(max(v * q_scale, q_lo), q_hi)
            xq[j] = np.int64(np.floor(s + 0.5)) if q_rnd else np.int64(np.floor(s))
        if bad:
            return 1, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        s1 = 0
        s2 = 0
        for j in range(k_rms):
            s2 += xq[j] * xq[j]
        if center:
            for j in range(n):
                s1 += xq[j]
        y, s = _rsqrt_scalars(s1, s2, k_rms, gb, eps_nn, p, tb, table, newton, fz)
        if s <= -63 or s >= 63:
            return 2, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        c1 = k_rms * y
        c0 = s1 * y
        zh = (1 << (s - 1)) if s > 0 else 0
        for j in range(n):
            a = xq[j] * c1 - c0
            z = (a + zh) >> s if s >= 0 else a << -s
            acc = z * g[j] if has_g else z << g_sh
            if has_b:
                acc += b[j] << b_sh
            v = (acc + half) >> shift
            v = ((v << wrap) >> wrap) if wrap > 0 else (lo if v < lo else (hi if v > hi else v))
            y_row[j] = np.float64(v) * out_scale
        st = _ln_row_acc(
            st, xq, lsb, r_center, r_k, r_eps, gamma, beta, has_gamma, has_beta, int_sums, w,
            y_row, yf[i],
        )  # fmt: skip
    n_kept, mx, s1f, s2f, sr, mq, ma = _acc_result(st)
    return 0, n_kept, mx, s1f, s2f, sr, mq, ma


def _ibert_rows(
    x: Any, ivit: bool, shift0: int, iters: int, sqrtn: int, zs: int, g: Any, has_g: bool,
    g_sh: int, b: Any, has_b: bool, b_sh: int, shift: int, half: int, lo: int, hi: int,
    wrap: int, out: Any,
) -> None:  # fmt: skip
    """I-BERT (``ivit`` False) / I-ViT LayerNorm per row (:class:`IBertLayerNorm`'s
    docstring): ``mean = round(ΣX / N)`` ties to even, ``y = X - mean``; I-BERT:
    ``var = Σ (y >> s)²`` with the smallest ``s >= max(shift0, need)`` giving ``var <
    2^32``, ``std = isqrt(var)·2^s`` (Newton from ``2^ceil(bits/2)``, stop when it stops
    falling), ``factor = 2^31 // std`` (0 for std 0); I-ViT: ``std`` = ``iters`` Newton
    steps from 2^16 on ``Σy²``, ``factor = (2^31 - 1) // std`` (std >= 1 for ``iters <=
    16``). Per element ``Z = (((y·factor) >> 1)·sqrtn + 2^(zs-1)) >> zs`` (``zs >= 1``)
    and the affine stage."""
    n = x.shape[1]
    lim = 1 << 32
    for i in range(x.shape[0]):
        s1 = 0
        for j in range(n):
            s1 += x[i, j]
        q = s1 // n
        twice = 2 * (s1 - q * n)
        mean = q + 1 if (twice > n or (twice == n and (q & 1) == 1)) else q
        var0 = 0
        for j in range(n):
            yj = x[i, j] - mean
            var0 += yj * yj
        if ivit:
            kk = 1 << 16
            for _ in range(iters):
                kk = (kk + var0 // kk) >> 1
            factor = ((1 << 31) - 1) // kk
        else:
            need = (bitlen(var0 - 1 if var0 > 0 else 0) - 32 + 1) >> 1
            s = max(shift0, need, 0)
            while True:
                var = 0
                for j in range(n):
                    ys = (x[i, j] - mean) >> s
                    var += ys * ys
                if var < lim:
                    break
                s += 1
            root = 0
            if var > 0:
                root = 1 << ((bitlen(var) + 1) >> 1)
                while True:
                    nxt = (root + var // root) >> 1
                    if nxt >= root:
                        break
                    root = nxt
            std = root << s
            factor = (1 << 31) // std if std > 0 else 0
        zh = 1 << (zs - 1)
        for j in range(n):
            z = ((((x[i, j] - mean) * factor) >> 1) * sqrtn + zh) >> zs
            acc = z * g[j] if has_g else z << g_sh
            if has_b:
                acc += b[j] << b_sh
            v = (acc + half) >> shift
            if wrap > 0:
                out[i, j] = (v << wrap) >> wrap
            else:
                out[i, j] = lo if v < lo else (hi if v > hi else v)


def _acc_cast(v: int, sat: bool, a_lo: int, a_hi: int, a_wrap: int) -> int:
    """An ``accum_t`` overflow: clip to ``[a_lo, a_hi]`` (AP_SAT) or keep the low bits,
    sign-extended (signed AP_WRAP, ``a_wrap = 64 - W``)."""
    if sat:
        return a_lo if v < a_lo else (a_hi if v > a_hi else v)
    return (v << a_wrap) >> a_wrap


acc_cast = njit(cache=True, nogil=True)(_acc_cast) if njit is not None else _acc_cast


def _hls4ml_rows(
    x: Any, x_sh: int, sat: bool, a_lo: int, a_hi: int, a_wrap: int, fa: int, a_half: int,
    k_inv: int, tscale: int, table: Any, g: Any, b: Any, b_sh: int, shift: int, half: int,
    lo: int, hi: int, wrap: int, out: Any,
) -> None:  # fmt: skip
    """hls4ml 1.3 ``layernorm_1d`` per row (:class:`Hls4mlLayerNorm`'s docstring), every
    ``accum_t`` assignment as :func:`_acc_cast` after ``(v + a_half) >> fa`` where it
    drops ``fa`` fraction bits: ``xa = X << x_sh`` (a cast that cannot overflow),
    ``sum = Σ xa`` (overflow after every addition; for AP_WRAP once at the end, the
    same integer), ``mean = acc((sum·k_inv + a_half) >> fa)``, ``d = acc(xa - mean)``,
    ``sum2 = Σ acc((d² + a_half) >> fa)``, ``var`` as ``mean``, ``index = clamp((var·
    tscale) >> fa, 0, size - 1)``, ``r = table[index]``; per element ``acc = d·r·g[j] +
    (b[j] << b_sh)`` and the output cast."""
    n = x.shape[1]
    top = table.shape[0] - 1
    for i in range(x.shape[0]):
        sm = 0
        for j in range(n):
            sm = sm + (x[i, j] << x_sh)
            if sat:
                sm = acc_cast(sm, sat, a_lo, a_hi, a_wrap)
        sm = acc_cast(sm, sat, a_lo, a_hi, a_wrap)
        mean = acc_cast((sm * k_inv + a_half) >> fa, sat, a_lo, a_hi, a_wrap)
        s2 = 0
        for j in range(n):
            d = acc_cast((x[i, j] << x_sh) - mean, sat, a_lo, a_hi, a_wrap)
            s2 = s2 + acc_cast((d * d + a_half) >> fa, sat, a_lo, a_hi, a_wrap)
            if sat:
                s2 = acc_cast(s2, sat, a_lo, a_hi, a_wrap)
        s2 = acc_cast(s2, sat, a_lo, a_hi, a_wrap)
        var = acc_cast((s2 * k_inv + a_half) >> fa, sat, a_lo, a_hi, a_wrap)
        idx = (var * tscale) >> fa
        idx = 0 if idx < 0 else (top if idx > top else idx)
        r = table[idx]
        for j in range(n):
            d = (x[i, j] << x_sh) - mean
            dw = (d << a_wrap) >> a_wrap
            d = (a_lo if d < a_lo else (a_hi if d > a_hi else d)) if sat else dw
            v = (d * r * g[j] + (b[j] << b_sh) + half) >> shift
            if wrap > 0:
                out[i, j] = (v << wrap) >> wrap
            else:
                out[i, j] = lo if v < lo else (hi if v > hi else v)


if njit is not None:
    rsqrt_rows = njit(cache=True, nogil=True)(_rsqrt_rows)
    rsqrt_rows_f32 = njit(cache=True, nogil=True)(_rsqrt_rows_f32)
    rsqrt_report_f32 = njit(cache=True, nogil=True)(_rsqrt_report_f32)
    ibert_rows = njit(cache=True, nogil=True)(_ibert_rows)
    hls4ml_rows = njit(cache=True, nogil=True)(_hls4ml_rows)
else:  # pragma: no cover
    rsqrt_rows = _rsqrt_rows
    rsqrt_rows_f32 = _rsqrt_rows_f32
    rsqrt_report_f32 = _rsqrt_report_f32
    ibert_rows = _ibert_rows
    hls4ml_rows = _hls4ml_rows


# -- reciprocal ----------------------------------------------------------------------------
# :func:`hwapprox.approx.intmath.reciprocal` one value at a time: the online softmax's and
# Softermax's per-row ``1/d``. The rounding modes are coded by their place in
# :class:`hwapprox.fixed.Rounding` (:data:`RECIP_MODES`).

#: rounding-mode code of :func:`recip_rows` per :class:`hwapprox.fixed.Rounding` value
RECIP_MODES = {
    "AP_TRN": 0,
    "AP_TRN_ZERO": 1,
    "AP_RND": 2,
    "AP_RND_ZERO": 3,
    "AP_RND_INF": 4,
    "AP_RND_MIN_INF": 5,
    "AP_RND_CONV": 6,
}


def _bit_length(v: int) -> int:
    """``int.bit_length`` of ``0 <= v < 2^63``: the six-step binary search of
    :func:`hwapprox.approx.intmath.bit_length` (branch-light, where :func:`bitlen`
    loops once per bit)."""
    n = 0
    for s in (32, 16, 8, 4, 2, 1):
        t = s if v >= (1 << s) else 0  # (a select, not a branch)
        n += t
        v >>= t
    return n + v


def _round_inc(above: int, at: int, inexact: int, q: int, neg: int, mode: int) -> int:
    """The 0/1 added to the floor quotient ``q`` (:func:`hwapprox.fixed._round_up`); the
    flags are 0/1 integers: remainder above / at half an LSB, non-zero, value negative;
    ``mode``: :data:`RECIP_MODES`. Integer ``|`` and ``&`` on the flags: no
    data-dependent branch (a mispredicted one per rounding tripled the kernel's time)."""
    if mode == 0:  # AP_TRN
        return 0
    if mode == 1:  # AP_TRN_ZERO
        return inexact & neg
    if mode == 2:  # AP_RND
        return above | at
    if mode == 3:  # AP_RND_ZERO
        return above | (at & neg)
    if mode == 4:  # AP_RND_INF
        return above | (at & (1 - neg))
    if mode == 5:  # AP_RND_MIN_INF
        return above
    return above | (at & q & 1)  # AP_RND_CONV: ties to even


def _round_shift1(r: int, s: int, mode: int) -> tuple[int, bool]:
    """:func:`hwapprox.fixed.round_shift` of one value: ``(r / 2^s rounded, True)``, or
    ``(0, False)`` where ``round_shift`` raises (``s < 0``: a left shift whose result
    needs more than 63 bits, ``bit_length(|r|) - s > 63``). ``s >= 63``: the floor
    quotient is -1 or 0 and the remainder above half exactly when ``r < 0``."""
    if s <= 0:
        if s == 0:
            return r, True
        if r == -(1 << 63) or _bit_length(-r if r < 0 else r) - s > 63:
            return 0, False
        return r << -s, True
    neg = int(r < 0)
    if s >= 63:
        q = -neg
        return q + _round_inc(neg, 0, int(r != 0), q, neg, mode), True
    q = r >> s
    rem = r & ((1 << s) - 1)
    half = 1 << (s - 1)
    return q + _round_inc(int(rem > half), int(rem == half), int(rem != 0), q, neg, mode), True


def _round_shift_var1(v: int, sh: int, mode: int) -> tuple[int, bool]:
    """:func:`hwapprox.approx.intmath.round_shift_var` of one value: AP_TRN / AP_RND
    by its vectorised rule (shift clamped to 62 both ways, ``+ ((v >> (s - 1)) & 1)``
    for AP_RND, no overflow check on left shifts), the other modes by
    :func:`_round_shift1`."""
    if mode == 0 or mode == 2:
        if sh < 0:
            return v << min(-sh, 62), True
        pos = min(sh, 62)
        out = v >> pos
        if mode == 2 and pos > 0:
            out += (v >> (pos - 1)) & 1
        return out, True
    return _round_shift1(v, sh, mode)


def _recip_norm(v: int, wf: int) -> tuple[int, int]:
    """The leading-one normalisation of :func:`_recip_rows` for one ``v > 0``: ``(p, U)``,
    ``p = bit_length(v) - 1``, ``U = v·2^(wf - p)`` (a right shift truncates)."""
    p = _bit_length(max(v, 1)) - 1
    sh = wf - p
    return p, (v << max(sh, 0)) >> max(-sh, 0)


def _recip_mant(
    u: int, p: int, newton: bool, tab: Any, addr_bits: int, tfb: int, wf: int, steps: int,
    mode: int, total0: int,
) -> tuple[int, bool]:  # fmt: skip
    """:func:`_recip_rows`' reciprocal of one normalised value (``U``, ``p`` of
    :func:`_recip_norm`): the table, the Newton steps or the PWL, and the final
    ``round_shift_var``; ``(y, ok)``, ``ok`` False where a ``round_shift`` raises."""
    g = wf - addr_bits
    frac = u - (1 << wf)
    i = frac >> g
    if newton:
        two2 = (2 << wf) << wf
        r, ok = _round_shift1(tab[i], tfb - wf, mode)
        for _ in range(steps):
            e, ok_e = _round_shift1(two2 - u * r, wf, mode)
            r, ok_r = _round_shift1(r * e, wf, mode)
            ok = ok & ok_e & ok_r
    else:
        lo = tab[i]
        w = frac & ((1 << g) - 1)
        r, ok = _round_shift1((lo << g) - (lo - tab[i + 1]) * w, tfb + g - wf, mode)
    y, ok_y = _round_shift_var1(r, total0 + p, mode)
    return y, ok & ok_y


if njit is not None:  # (inlined into recip_rows and the online softmax row kernels)
    _bit_length = njit(inline="always")(_bit_length)  # type: ignore[assignment]
    _round_inc = njit(inline="always")(_round_inc)  # type: ignore[assignment]
    _round_shift1 = njit(inline="always")(_round_shift1)  # type: ignore[assignment]
    _round_shift_var1 = njit(inline="always")(_round_shift_var1)  # type: ignore[assignment]
    _recip_norm = njit(inline="always")(_recip_norm)  # type: ignore[assignment]
    _recip_mant = njit(inline="always")(_recip_mant)  # type: ignore[assignment]


def _recip_rows(
    d: Any, newton: bool, tab: Any, addr_bits: int, tfb: int, wf: int, steps: int, mode: int,
    total0: int, out: Any,
) -> int:  # fmt: skip
    """``out[k]`` = :func:`hwapprox.approx.intmath.reciprocal` of ``d[k]`` (1-D int64;
    ``tfb`` the table's fraction bits, ``wf`` the work fraction bits, ``total0 = wf -
    d_frac_bits - out_frac_bits``), the same integers: ``p = bit_length(d) - 1``, ``U =
    d·2^(wf - p)`` (a right shift truncates), ``i`` = the top ``addr_bits`` fraction bits
    of ``U``, ``w`` the other ``g = wf - addr_bits``;

    * lut (``newton`` False): ``R = round_shift(T[i]·2^g - (T[i] - T[i+1])·w, tfb + g
      - wf)``;
    * newton: ``R = round_shift(T[i], tfb - wf)``, then ``steps`` times ``e =
      round_shift(2^(2·wf + 1) - U·R, wf)``, ``R = round_shift(R·e, wf)``;

    then ``round_shift_var(R, total0 + p)``, every rounding ``mode``
    (:data:`RECIP_MODES`). int64 products wrap as numpy's do. Requires ``0 <= addr_bits
    <= wf <= 62`` (every shift count then lies in [0, 62]) and ``tab`` of at least
    ``2^addr_bits`` (+1 for lut) entries. Returns 0; 1 if a ``d <= 0``, 2 where a
    ``round_shift`` raises (a left shift past 63 bits): ``out`` is then partly
    written and the caller takes the numpy path, which raises.

    Two loops: ``p`` and ``U`` (held in ``out``; :func:`_recip_norm`) for every value
    first, a loop without gathers or exits that vectorises, then the table and the
    roundings (:func:`_recip_mant`; 1.5 times faster than one loop)."""
    n = d.shape[0]
    ps = np.empty(n, dtype=np.int64)
    bad = 0
    for k in range(n):
        v = d[k]
        bad += v <= 0
        ps[k], out[k] = _recip_norm(v, wf)  # (p, U)
    if bad > 0:
        return 1
    fine = True
    for k in range(n):
        y, ok = _recip_mant(out[k], ps[k], newton, tab, addr_bits, tfb, wf, steps, mode, total0)
        fine &= ok
        out[k] = y
    return 0 if fine else 2


recip_rows = njit(cache=True, nogil=True)(_recip_rows) if njit is not None else _recip_rows


# -- online softmax from float32 rows ------------------------------------------------------
# An emulated softmax site (``OnlineSoftmax.rows_f32``) and its report
# (``hwapprox.export.validate``) from the site's float32 rows in one compiled pass each: the
# input quantisation of :func:`_quantize_f32`, the recurrence of :func:`_online_state`, the
# reciprocal of :func:`_recip_rows` (:func:`_recip_norm`, :func:`_recip_mant`), the stage of
# :func:`_online_out` and the decode of :func:`_codes_to_float`, the same integers and reals
# as those kernels in turn (``tests/test_online_f32.py`` compares them on 10^5 rows). Rows go
# by blocks (:func:`online_block_rows`): one call of the shared row code per block.

#: elements of a block of rows of the float32-row softmax kernels
_ROWS_BLOCK = 4096


def online_block_rows(rows: int, n: int) -> int:
    """Rows per block of :func:`online_rows_f32` / :func:`online_report_f32` for ``rows``
    rows of ``n``: about 4096 elements, at least one row, at most ``rows``."""
    return max(1, min(rows, _ROWS_BLOCK // max(n, 1)))


def _online_block_f32(
    xf: Any, i0: int, rows: int, mask: Any, masked: bool, q_scale: float, q_lo: float,
    q_hi: float, q_rnd: bool, memo: Any, one: int, up: int, fe: int, half_s: int, lo_in: int,
    newton: bool, tab: Any, addr_bits: int, tfb: int, wf: int, steps: int, mode: int,
    total0: int, r_wrap: bool, r_hi: int, s: int, half: int, lo: int, hi: int,
    out_scale: float, xq: Any, y: Any, yo: int,
) -> int:  # fmt: skip
    """Rows ``i0 .. i0 + rows - 1`` of float32 ``xf`` through the online softmax, row ``k``
    of the block in turn:

    1. its codes into ``xq[k]`` (:func:`_quantize_f32`: ``floor(clip(x·q_scale, q_lo,
       q_hi) [+ 1/2])``), masked scores read as 0 (as the emulation zeroes them before
       the codes path: their codes change nothing below);
    2. ``(m, d)`` by :func:`_online_state`'s recurrence (``masked``: from the empty state,
       ``mask[i0 + k]`` True = masked; differences clamped to the memo's last entry; ``m``
       at least ``lo_in``), a fully masked row's ``d = 0`` replaced by ``one`` (as
       ``OnlineSoftmax._rows_detail`` does);
    3. ``r = 1/d`` by :func:`_recip_mant` of :func:`_recip_norm` (``newton`` .. ``total0``
       as :func:`_recip_rows` takes them), then ``recip_fmt``'s overflow (``r_wrap``: ``r &
       r_hi``, else clipped to ``[0, r_hi]``);
    4. the outputs of :func:`_online_out`, ``(E(m - x)·r + half) >> s`` clipped to
       ``[lo, hi]``, 0 where masked, as reals ``code·out_scale`` (float64, stored into
       ``y[yo + k]``'s dtype: :func:`_codes_to_float`).

    ``memo`` may be int32 (values below 2^31: the same integers). Returns 0; 1 where an
    input is NaN/inf, 2 where the reciprocal would raise (``d <= 0``, a ``round_shift``
    past 63 bits): the codes path then raises or runs numpy. Each stage runs over the
    whole block before the next (one loop for all rows fused ran 1.6x slower)."""
    n = xf.shape[1]
    top = memo.shape[0] - 1
    fmask = (1 << fe) - 1
    bad = 0
    for k in range(rows):
        for j in range(n):
            v = np.float64(xf[i0 + k, j])
            if masked and mask[i0 + k, j]:
                v = 0.0  # (not read: masked scores may be -inf)
            bad += not np.isfinite(v)
            sv = min(max(v * q_scale, q_lo), q_hi)
            xq[k, j] = np.int64(np.floor(sv + 0.5)) if q_rnd else np.int64(np.floor(sv))
    if bad:
        return 1
    ms = np.empty(rows, dtype=np.int64)
    rs = np.empty(rows, dtype=np.int64)
    for k in range(rows):
        if masked:
            m = np.int64(lo_in - 1)
            d = 0
            start = 0
        else:
            m = xq[k, 0]
            d = one
            start = 1
        for j in range(start, n):
            if masked and mask[i0 + k, j]:
                continue
            xj = xq[k, j]
            if xj > m:
                e = memo[min(xj - m, top)]  # d·E beyond 64 bits: (d >> F_e)·E + (d mod 2^F_e)·E
                d = (d >> fe) * e + ((((d & fmask) * e) + half_s) >> fe) + one
                m = xj
            else:
                d += memo[min(m - xj, top)] * up
        ms[k] = m if m >= lo_in else lo_in
        rs[k] = d if d != 0 else one
    ps = np.empty(rows, dtype=np.int64)
    bad = 0
    for k in range(rows):  # (as _recip_rows: the normalisation first, a loop that vectorises)
        d = rs[k]
        bad += d <= 0
        ps[k], rs[k] = _recip_norm(d, wf)
    if bad:
        return 2
    fine = True
    for k in range(rows):
        r, ok = _recip_mant(rs[k], ps[k], newton, tab, addr_bits, tfb, wf, steps, mode, total0)
        fine &= ok
        rs[k] = (r & r_hi) if r_wrap else min(max(r, 0), r_hi)
    if not fine:
        return 2
    for k in range(rows):
        mk = ms[k]
        rk = rs[k]
        for j in range(n):  # no branch on the mask here: the loop stays branch-free
            v = (memo[min(max(mk - xq[k, j], 0), top)] * rk + half) >> s
            y[yo + k, j] = np.float64(lo if v < lo else (hi if v > hi else v)) * out_scale
        if masked:
            for j in range(n):
                if mask[i0 + k, j]:
                    y[yo + k, j] = 0.0
    return 0


if njit is not None:  # (called once per block by the two kernels below: numba cannot inline
    # a function of this many arguments)
    _online_block_f32 = njit(cache=True, nogil=True)(_online_block_f32)  # type: ignore[assignment]


def _online_rows_f32(
    xf: Any, mask: Any, masked: bool, q_scale: float, q_lo: float, q_hi: float, q_rnd: bool,
    memo: Any, one: int, up: int, fe: int, half_s: int, lo_in: int, newton: bool, tab: Any,
    addr_bits: int, tfb: int, wf: int, steps: int, mode: int, total0: int, r_wrap: bool,
    r_hi: int, s: int, half: int, lo: int, hi: int, out_scale: float, out: Any,
) -> int:  # fmt: skip
    """``OnlineSoftmax`` of float32 rows ``xf`` (R, N) to the output codes' reals ``out``
    (float32 or float64) in one pass: :func:`_online_block_f32` by blocks of rows (its
    arguments). Returns its status: 0, 1 (a NaN/inf input) or 2 (the reciprocal would
    raise); ``out`` is then partly written."""
    n = xf.shape[1]
    b = max(1, min(xf.shape[0], _ROWS_BLOCK // max(n, 1)))  # (online_block_rows)
    xq = np.empty((b, n), dtype=np.int64)
    for i0 in range(0, xf.shape[0], b):
        status = _online_block_f32(
            xf, i0, min(b, xf.shape[0] - i0), mask, masked, q_scale, q_lo, q_hi, q_rnd,
            memo, one, up, fe, half_s, lo_in, newton, tab, addr_bits, tfb, wf, steps, mode,
            total0, r_wrap, r_hi, s, half, lo, hi, out_scale, xq, out, i0,
        )  # fmt: skip
        if status:
            return status
    return 0


def _online_report_f32(
    xf: Any, yf: Any, mask: Any, masked: bool, q_scale: float, q_lo: float, q_hi: float,
    q_rnd: bool, memo: Any, one: int, up: int, fe: int, half_s: int, lo_in: int,
    newton: bool, tab: Any, addr_bits: int, tfb: int, wf: int, steps: int, mode: int,
    total0: int, r_wrap: bool, r_hi: int, s: int, half: int, lo: int, hi: int,
    out_scale: float, y_blk: Any, table: Any,
) -> tuple[int, int, float, float, float, float, float, float, float]:  # fmt: skip
    """A softmax site's figures (:func:`_softmax_err_stats`: count, max, sums, the two
    split maxima, the row-sum error) from its float32 rows ``xf`` (R, N) and float
    output ``yf`` (R, N) in one pass: per block of rows the model's reals as
    :func:`_online_rows_f32` gives them (into ``y_blk``, of the reals' dtype and
    :func:`online_block_rows` rows) and their codes, then :func:`_softmax_rows_acc` on
    them (``mask`` with ``masked``; ``table`` the exp table): the same figures in the
    same order, without the codes and reals arrays. First item the status of
    :func:`_online_rows_f32` (the rest then meaningless)."""
    st = (0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    rse = 0.0
    n = xf.shape[1]
    b = y_blk.shape[0]
    xq = np.empty((b, n), dtype=np.int64)
    for i0 in range(0, xf.shape[0], b):
        rows = min(b, xf.shape[0] - i0)
        status = _online_block_f32(
            xf, i0, rows, mask, masked, q_scale, q_lo, q_hi, q_rnd, memo, one, up, fe,
            half_s, lo_in, newton, tab, addr_bits, tfb, wf, steps, mode, total0, r_wrap,
            r_hi, s, half, lo, hi, out_scale, xq, y_blk, 0,
        )  # fmt: skip
        if status:
            return status, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        st, rse = _softmax_rows_acc(st, rse, xq, y_blk, table, yf, mask, masked, i0, rows)
    cnt, mx, s1, s2, sr, mq, ma = _acc_result(st)
    return 0, cnt, mx, s1, s2, sr, mq, ma, rse


if njit is not None:
    online_rows_f32 = njit(cache=True, nogil=True)(_online_rows_f32)
    online_report_f32 = njit(cache=True, nogil=True)(_online_report_f32)
else:  # pragma: no cover
    online_rows_f32 = _online_rows_f32
    online_report_f32 = _online_report_f32
