"""Shared parts of the softmax specs: the base class, the mask contract, the float64
reference and the exact speed helpers (memo cache, in-place casts).

Everything here is private to :mod:`hwapprox.approx.softmax` except
:class:`SoftmaxSpec` and :func:`stable_softmax` (re-exported there).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx.base import (
    Operator,
    RawArray,
    RowwiseSpec,
    broadcast_mask,
    require,
)
from hwapprox.fixed import FixedFormat, Overflow, Rounding, cast

_F = FixedFormat.parse
_FIX16_6 = _F("ap_fixed<16,6>")
_FIX18_8_RND_SAT = _F("ap_fixed<18,8,AP_RND,AP_SAT>")


def stable_softmax(
    x: npt.ArrayLike, axis: int = -1, mask: npt.ArrayLike | None = None
) -> npt.NDArray[np.float64]:
    """float64 ``exp(x - max) / sum(exp(x - max))`` along ``axis``.

    ``mask`` (bool, broadcastable to ``x``, True = masked out): max and sum
    over the unmasked elements only; masked entries and fully masked rows are 0.
    """
    a = np.asarray(x, dtype=np.float64)
    if mask is None:
        e = np.exp(a - a.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)  # type: ignore[no-any-return]
    mk = broadcast_mask(mask, a.shape)
    a = np.where(mk, -np.inf, a)
    mx = a.max(axis=axis, keepdims=True)
    mx[~np.isfinite(mx)] = 0.0  # fully masked rows (max -inf): every exp below is 0
    e = np.exp(a - mx)
    s = e.sum(axis=axis, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)  # type: ignore[no-any-return]


def _max_minus(x: RawArray, mask: npt.NDArray[np.bool_], fmt: FixedFormat) -> RawArray:
    """``max - x`` per row with the max over the unmasked elements; 0 at masked places.

    ``x`` holds raw ``fmt`` codes. Every entry is >= 0 (unmasked: at most
    ``2^W - 1``; masked: 0), so it can index the difference memos; fully
    masked rows are all 0.
    """
    v = np.where(mask, np.int64(fmt.min_raw), x).max(axis=1, keepdims=True) - x
    np.copyto(v, 0, where=mask)
    return v


def _zero_masked(y: RawArray, mask: npt.NDArray[np.bool_] | None) -> RawArray:
    """Masked outputs are raw 0 (in place)."""
    if mask is not None:
        np.copyto(y, 0, where=mask)
    return y


class SoftmaxSpec(RowwiseSpec):
    """Base of the softmax specs: the operator, the mask contract and the float64 reference.

    **Mask contract** (every method; the HLS and RTL units implement the same):
    ``model(raw, axis=-1, mask=None)`` takes ``mask``, a bool array
    broadcastable to ``raw``'s shape (e.g. ``[B,1,1,S]`` against
    ``[B,H,S,S]``), **True = masked out**: one mask bit per element travels
    with it. A masked element

    * is skipped by the row max (by the running max of the single-pass
      methods: it never updates the row state),
    * contributes nothing to the row sum (its exp term is 0, not
      ``exp(min - max)``),
    * outputs raw 0.

    The unmasked elements then get *exactly* the codes the model gives for
    the row with the masked elements removed (stream order kept):
    ``model(row, mask)[~mask] == model(row[~mask])``. A fully masked row
    outputs all zeros; its empty sum is never divided by (the models put a
    dummy non-zero sum there whose result is discarded: no division by zero).
    ``mask=None`` and a mask without any True give the unmasked model, bit for
    bit. Row-length limits (``rows of length N exceed ...``) count every
    element of the row, masked or not: the unit is sized for its row length.
    ``reference(x, axis, mask)``: the float64 softmax over the unmasked
    elements, exactly 0 at masked entries and on fully masked rows.
    """

    operator = Operator.SOFTMAX

    def reference(
        self, x: npt.ArrayLike, axis: int = -1, mask: npt.ArrayLike | None = None, **kw: Any
    ) -> npt.NDArray[np.float64]:
        """float64 stable softmax along ``axis`` (``mask``: True = masked out, output 0)."""
        return stable_softmax(x, axis=axis, mask=mask)

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """The hardware parameter set (:mod:`hwapprox.approx.hwparams`) for rows of up
        to ``n`` elements (None: the longest row the spec allows)."""
        raise NotImplementedError(f"softmax/{self.method} has no hardware unit")

    # -- validation helpers ---------------------------------------------------
    def _name(self) -> str:
        return type(self).__name__

    def _pow2(self, field: str, lo: int = 2, hi: int = 1 << 24) -> int:
        v = getattr(self, field)
        self._require(
            isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi and v & (v - 1) == 0,
            field,
            v,
            f"must be a power of two in [{lo}, {hi}]",
        )
        return int(v).bit_length() - 1

    def _int_in(self, field: str, lo: int, hi: int) -> int:
        v = getattr(self, field)
        self._require(
            isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi,
            field,
            v,
            f"must be an integer in [{lo}, {hi}]",
        )
        return int(v)

    def _choice(self, field: str, choices: tuple[str, ...]) -> None:
        v = getattr(self, field)
        self._require(v in choices, field, repr(v), f"must be one of {', '.join(choices)}")

    def _rounding_trn_rnd(self, field: str) -> None:
        fmt: FixedFormat = getattr(self, field)
        self._require(
            fmt.rounding in (Rounding.TRN, Rounding.RND),
            field,
            fmt,
            "internal formats support AP_TRN (floor) or AP_RND (half up) only",
        )

    def _row_limit(self, n: int, limit: int, what: str) -> None:
        require(
            n <= limit,
            lambda: f"{self._name()}: rows of length {n} exceed {what} (at most {limit})",
        )


# -- speed helpers (no arithmetic of their own: exact re-expressions) ---------------------
#: Inputs up to this width use memo tables over every input code / difference code.
_MEMO_MAX_BITS = 20


@functools.lru_cache(maxsize=16)
def _cached(spec: SoftmaxSpec, name: str, narrow: bool = False) -> Any:
    """``getattr(spec, name)()`` computed once per (equal, frozen) spec; arrays read-only.

    Only a speed-up: specs are frozen dataclasses whose tables and memos are
    functions of the fields alone (equal specs give equal values). ``narrow``
    returns an int64 memo as int32 (checked to be exact).
    """
    val = getattr(spec, name)()
    if narrow:
        if val.size and not (int(val.min()) >= -(1 << 31) and int(val.max()) < 1 << 31):
            raise AssertionError(f"{name} of {spec} does not fit int32")  # pragma: no cover
        val = val.astype(np.int32)
    for a in val.values() if isinstance(val, dict) else (val,):
        if isinstance(a, np.ndarray):
            a.setflags(write=False)
    return val


def _cast_prod(r: RawArray, src: FixedFormat, dst: FixedFormat) -> RawArray:
    """``cast(r, src, dst)`` for a fresh product array ``r`` that is in range of ``src``.

    Same result as :func:`hwapprox.fixed.cast` (one rounding with
    ``dst.rounding``, then ``dst.overflow``), computed in place for the modes
    the models use on their outputs: AP_TRN (``r >> s``) and AP_RND (``(r +
    2^(s-1)) >> s``, exact since ``|r| < 2^62``), AP_SAT (clip) and AP_WRAP
    (keep the low W bits). Other modes go through :func:`~hwapprox.fixed.cast`.
    """
    s = src.frac_bits - dst.frac_bits
    if not (0 < s < 63 and dst.rounding in (Rounding.TRN, Rounding.RND)):
        return cast(r, src, dst)
    if dst.rounding is Rounding.RND:
        r += np.int64(1 << (s - 1))
    r >>= np.int64(s)
    return _saturate_fresh(r, dst)


def _saturate_fresh(r: RawArray, dst: FixedFormat) -> RawArray:
    """``dst.saturate(r)`` for an array the caller owns (in place for AP_SAT / AP_WRAP)."""
    if dst.overflow is Overflow.SAT:
        return np.clip(r, dst.min_raw, dst.max_raw, out=r)
    if dst.overflow is Overflow.WRAP:
        if dst.signed:
            sh = np.int64(64 - dst.width)
            r <<= sh
            r >>= sh
        else:
            r &= np.int64((1 << dst.width) - 1)
        return r
    return dst.saturate(r)
