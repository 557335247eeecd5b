"""Shared parts of the softmax specs: the base class, the mask contract, the float64
reference and the exact speed helpers (memo cache, in-place casts).

Everything here is private to :mod:`hwapprox.approx.softmax` except
:class:`SoftmaxSpec` and :func:`stable_softmax` (re-exported there).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox.approx.base import (
    Operator,
    RawArray,
    RowwiseSpec,
    SpecError,
    broadcast_mask,
    require,
)
from hwapprox.approx.metrics import LOG_CODE_FORMS, decode_log_code
from hwapprox.fixed import FixedFormat, FixedPointError, Overflow, Rounding, cast

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


def derive_fields(
    spec: Any, rule: Callable[[FixedFormat, int, dict[str, Any]], dict[str, Any]]
) -> None:
    """Fill ``spec``'s fields that are None with ``rule(out_fmt, row_max, given)``
    (``given``: the derivable fields the caller set) before the base class validates,
    and record their names in ``spec._derived``, so that
    :meth:`~hwapprox.approx.base.ApproxSpec.replace` derives them again.

    A derivable field given as a string (a format in HLS spelling) is parsed here."""
    name = type(spec).__name__

    def fmt(field: str, v: Any) -> Any:
        if not isinstance(v, str | FixedFormat):
            return v
        try:
            return FixedFormat.parse(v)
        except FixedPointError as exc:
            raise SpecError(f"{name}.{field}: {exc}") from None

    out = fmt("out_fmt", spec.out_fmt)
    n = spec.row_max
    require(
        isinstance(n, int | np.integer) and not isinstance(n, bool) and 1 <= n <= 1 << 24,
        lambda: f"{name}.row_max={n!r}: must be an integer in [1, {1 << 24}]",
    )
    names = rule(out, int(n), {}).keys()
    given = {k: fmt(k, getattr(spec, k)) for k in names if getattr(spec, k) is not None}
    derived = rule(out, int(n), given)
    done = []
    for k in names:
        if k in given:
            object.__setattr__(spec, k, given[k])
        else:
            object.__setattr__(spec, k, derived[k])
            done.append(k)
    object.__setattr__(spec, "_derived", frozenset(done))


def derived_widths(
    out_fmt: FixedFormat, row_max: int, given: dict[str, Any], value_fmt: str
) -> tuple[int, int, int]:
    """The terms a derivation rule of :func:`derive_fields` starts from: ``F =
    out_fmt.frac_bits`` (at least 1), ``L = ceil(log2 row_max)`` (at least 1) and the
    fraction bits ``F + L + 2`` of the per-element value summed over the row (the exp
    or 2^x value), held to a given ``sum_fmt``'s fraction bits, or those of a given
    ``value_fmt`` field."""
    f = max(out_fmt.frac_bits, 1)
    lg = max(1, (int(row_max) - 1).bit_length())
    f_v = f + lg + 2
    if isinstance(given.get("sum_fmt"), FixedFormat):
        f_v = max(1, min(f_v, given["sum_fmt"].frac_bits))
    if isinstance(given.get(value_fmt), FixedFormat):
        f_v = given[value_fmt].frac_bits
    return f, lg, f_v


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


def log_code_constants(width: int) -> dict[str, int]:
    """The rounding thresholds of :func:`log_encode` for a ``width``-bit normalised
    mantissa ``n`` in ``[2^(W-1), 2^W)``: ``C12 = floor(2^(1/2)·2^(W-1))``, ``C14 =
    floor(2^(1/4)·2^(W-1))``, ``C34 = floor(2^(3/4)·2^(W-1))``, exact integers
    (integer square roots). The powers are irrational, so ``n > C`` is ``n > 2^f·2^(W-1)``
    exactly (no ties)."""
    w1 = width - 1
    return {
        "C12": math.isqrt(1 << (2 * w1 + 1)),
        "C14": math.isqrt(math.isqrt(1 << (4 * w1 + 1))),
        "C34": math.isqrt(math.isqrt(1 << (4 * w1 + 3))),
    }


def log_encode(p: RawArray, fmt: FixedFormat, form: str, bits: int) -> RawArray:
    """Probability codes ``p`` (raw ``fmt``, ``F`` fraction bits) -> ``bits``-bit log codes.

    The exact integer rule (RepQ-ViT's ``round(-log2 p)``, Li et al. 2023, rounded
    in the log domain): ``p <= 0`` gives the zero code ``Z = 2^bits - 1``; otherwise
    ``e = floor(log2 p)`` (the leading one's position: a count of leading zeros),
    ``n = p << (W - 1 - e)`` the mantissa normalised to ``W = fmt.width`` bits, and

    * ``log2``: ``c = F - e - [n > C12]`` (``p > √2·2^e``: rounds ``-log2 p``),
    * ``log2sqrt2``: ``c = 2(F - e) - [n > C14] - [n > C34]`` (rounds ``-2·log2 p``),

    clamped below at 0 (``p >= 1.0``); a ``c > 2^bits - 2`` (too small for the code)
    becomes ``Z``. :func:`~hwapprox.approx.metrics.decode_log_code` inverts it.
    """
    w, f = fmt.width, fmt.frac_bits
    k = log_code_constants(w)
    pos = p > 0
    q = np.where(pos, p, 1)
    e = np.frexp(q.astype(np.float64))[1].astype(np.int64) - 1  # exact: |p| < 2^32
    n = q << (np.int64(w - 1) - e)
    c = f - e - (n > k["C12"]) if form == "log2" else 2 * (f - e) - (n > k["C14"]) - (n > k["C34"])
    zero = (1 << bits) - 1
    c = np.maximum(c, 0)
    return np.where(pos & (c < zero), c, zero).astype(np.int64)  # type: ignore[no-any-return]


#: the softmax specs' output codes: ``"linear"`` (``out_fmt`` codes) and the log forms
OUT_CODES: tuple[str, ...] = ("linear", *LOG_CODE_FORMS)


@dataclass(frozen=True)
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

    **Log-coded outputs** (``out_code``, every method; RepQ-ViT, Li et al.
    2023): ``"log2"`` / ``"log2sqrt2"`` add one post-stage after the method's
    ``out_fmt`` probability code: :func:`log_encode` turns it into an
    ``out_code_bits``-bit code ``round(-log2 p)`` (``round(-log_√2 p)``), so
    ``P·V`` becomes shifts; :meth:`model` then returns those codes and
    :meth:`output_to_float` decodes them (top code = exactly 0). The error is
    measured in the probability domain after decoding
    (:func:`~hwapprox.approx.metrics.log_code_metrics`).
    """

    operator = Operator.SOFTMAX

    #: output code: "linear" (``out_fmt`` codes), "log2" or "log2sqrt2" (RepQ-ViT)
    out_code: str = "linear"
    #: where an option's method comes from (``hwapprox list``)
    option_sources: ClassVar[dict[str, str]] = {
        "out_code": "log2 / log√2 output codes: Li et al., RepQ-ViT (ICCV 2023)",
    }
    #: bits of a log code (``out_code`` other than "linear"); the top code means 0
    out_code_bits: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        self._choice("out_code", OUT_CODES)
        self._int_in("out_code_bits", 2, 8)
        if self.out_code != "linear":
            self._require(
                self.out_fmt.width <= 32,
                "out_fmt",
                self.out_fmt,
                f"out_code={self.out_code!r} encodes codes of at most 32 bits",
            )

    def model(
        self,
        raw: npt.ArrayLike,
        axis: int = -1,
        mask: npt.ArrayLike | None = None,
        **kw: Any,
    ) -> RawArray:
        """Raw ``in_fmt`` codes -> raw ``out_fmt`` codes (``out_code="linear"``), or
        ``out_code_bits``-bit log codes of them (:func:`log_encode`)."""
        y = super().model(raw, axis=axis, mask=mask, **kw)
        if self.out_code == "linear":
            return y
        return log_encode(y, self.out_fmt, self.out_code, self.out_code_bits)

    def output_to_float(
        self, raw: npt.ArrayLike, dtype: npt.DTypeLike = np.float64
    ) -> npt.NDArray[np.floating]:
        """Reals of :meth:`model`'s codes: ``out_fmt`` values, or decoded log codes
        (as ``dtype``: :meth:`ApproxSpec.output_to_float`)."""
        if self.out_code == "linear":
            return super().output_to_float(raw, dtype)
        y = decode_log_code(raw, self.out_code, self.out_code_bits)
        return y if np.dtype(dtype) == np.float64 else y.astype(dtype)

    def _log_code_params(self) -> dict[str, int]:
        """The post-stage's hardware constants: ``OUT_CODE`` (0 linear, 1 log2,
        2 log2sqrt2), ``CODE_BITS``, ``CODE_ZERO`` (the zero code), ``CODE_NW`` (the
        mantissa width, ``out_fmt.width``), ``CODE_F`` (``out_fmt.frac_bits``) and the
        thresholds ``CODE_C12``/``CODE_C14``/``CODE_C34`` (:func:`log_code_constants`)."""
        c = log_code_constants(self.out_fmt.width)
        return {
            "OUT_CODE": OUT_CODES.index(self.out_code),
            "CODE_BITS": self.out_code_bits,
            "CODE_ZERO": (1 << self.out_code_bits) - 1,
            "CODE_NW": self.out_fmt.width,
            "CODE_F": self.out_fmt.frac_bits,
            "CODE_C12": c["C12"],
            "CODE_C14": c["C14"],
            "CODE_C34": c["C34"],
        }

    def reference(
        self, x: npt.ArrayLike, axis: int = -1, mask: npt.ArrayLike | None = None, **kw: Any
    ) -> npt.NDArray[np.float64]:
        """float64 stable softmax along ``axis`` (``mask``: True = masked out, output 0)."""
        return stable_softmax(x, axis=axis, mask=mask)

    def reference_is_standard(self) -> bool:
        """True when :meth:`reference` is :func:`stable_softmax` itself (what a compiled
        metric may compute in its place); a subclass that changes it says so."""
        return type(self).reference is SoftmaxSpec.reference

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


def event_scan(
    d0: RawArray,
    inc: npt.NDArray[np.integer[Any]],
    new: npt.NDArray[np.bool_],
    rescale: Callable[[RawArray, npt.NDArray[np.intp]], RawArray],
) -> RawArray:
    """The running state of a streaming normaliser after ``J`` elements, per row.

    For every row ``r`` of the ``(R, J)`` arrays and element ``j`` in stream
    order::

        d <- g_j(d) + inc[r, j]      g_j = rescale at a new max (new[r, j]),
                                      the identity elsewhere

    starting from ``d0`` (R,). An exact re-expression of that loop (no
    arithmetic of its own): between two new maxima ``d`` only gains exact
    integers, so with the prefix sums ``S_j = Σ_{i<j} inc_i`` the state before
    element ``j`` is ``base + S_j``, and ``base`` changes only at a new max.
    The loop runs over the rank of a new max within its row (step k: every
    row's k-th new max at once), so it takes as many steps as the row with
    the most new maxima has (a handful for typical rows, ``J`` only for an
    ascending one) instead of ``J``. ``rescale(dv, flat)`` gets the states at
    the events (a fresh array it may modify) and their flat indices
    ``r·J + j`` into the ``(R, J)`` arrays.
    """
    rows, n_el = inc.shape
    pre = np.empty((rows, n_el + 1), dtype=np.int64)
    pre[:, 0] = 0
    np.cumsum(inc, axis=1, dtype=np.int64, out=pre[:, 1:])
    base = np.asarray(d0, dtype=np.int64).copy()
    r_ev, j_ev = np.nonzero(new)  # row by row, in stream order within a row
    if r_ev.size:
        counts = np.bincount(r_ev, minlength=rows)
        starts = np.zeros(rows, dtype=np.intp)
        np.cumsum(counts[:-1], out=starts[1:])
        rank = np.arange(r_ev.size, dtype=np.intp) - starts[r_ev]
        order = np.argsort(rank, kind="stable")  # by rank, then row
        bounds = np.zeros(int(counts.max()) + 1, dtype=np.intp)
        np.cumsum(np.bincount(rank), out=bounds[1:])
        r_all = r_ev[order]
        flat_all = r_all * n_el + j_ev[order]  # into (R, J)
        pflat_all = flat_all + r_all  # into (R, J + 1): r·(J+1) + j
        pre_f = pre.ravel()
        inc_f = inc.ravel()
        for k in range(bounds.size - 1):
            sl = slice(bounds[k], bounds[k + 1])
            rr, flat, pflat = r_all[sl], flat_all[sl], pflat_all[sl]
            dv = base[rr] + pre_f[pflat]
            dv = rescale(dv, flat)
            dv += inc_f[flat]
            dv -= pre_f[pflat + 1]
            base[rr] = dv
    base += pre[:, n_el]
    return base


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
