"""Softmax approximations: bit-accurate integer models.

Every class is a frozen spec (see :mod:`hwapprox.approx.base`); ``model(raw,
axis=-1, mask=None)`` maps raw ``in_fmt`` codes to raw ``out_fmt`` codes with
exact int64 numpy, row by row along ``axis``; ``reference`` is the float64
stable softmax ``exp(x - max) / sum(exp(x - max))``.

Attention masks (every method; the contract the HLS and RTL units implement):
``mask`` is a bool array broadcastable to the input's shape, **True = masked
out** (one mask bit per element, no additive -inf). A masked element is
skipped by the row max (the running max of ``online``/``softermax``), adds
nothing to the row sum (its exp term is 0) and outputs raw 0. The unmasked
elements get exactly the codes of the row with the masked elements removed,
``model(row, mask)[~mask] == model(row[~mask])`` (stream order kept); a fully
masked row outputs all zeros. ``mask=None`` or a mask without any True is the
unmasked model. Row-length limits count every element of the row, masked or
not (the unit is sized for its row length). ``reference(x, axis, mask)`` is
the float64 softmax over the unmasked elements, 0 at masked ones and on fully
masked rows.

Methods (registry name -> class):

* ``hls4ml_stable`` / ``hls4ml_latency`` -- :class:`Hls4mlStableSoftmax`,
  :class:`Hls4mlLatencySoftmax`: hls4ml 1.3 ``nnet_activation.h``, bit-exact
  (proven against the header compiled with g++ in ``tests/test_softmax.py``).
* ``ibert`` -- :class:`IBertSoftmax` (Kim et al. 2021, ``IntSoftmax``).
* ``shiftmax`` -- :class:`ShiftmaxSoftmax` (I-ViT, Li & Gu 2023).
* ``online`` -- :class:`OnlineSoftmax`: single-pass running max/sum
  (Milakov & Gimelshein 2018; Edge-MoE ``finalize_attn``), explicit
  fixed-point datapath for RTL/HLS.
* ``softermax`` -- :class:`SoftermaxSoftmax` (Stevens et al., DAC 2021).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox.approx import intmath
from hwapprox.approx.base import Cost, Operator, RawArray, RowwiseSpec, SpecError
from hwapprox.approx.hwparams import overflow_code, raw_width, rounding_code, sbits, ubits
from hwapprox.fixed import MAX_RAW_BITS, FixedFormat, Overflow, Rounding, cast

__all__ = [
    "Hls4mlLatencySoftmax",
    "Hls4mlStableSoftmax",
    "IBertSoftmax",
    "OnlineSoftmax",
    "ShiftmaxSoftmax",
    "SoftermaxSoftmax",
    "SoftmaxSpec",
    "stable_softmax",
]

_F = FixedFormat.parse
_FIX16_6 = _F("ap_fixed<16,6>")
_FIX18_8_RND_SAT = _F("ap_fixed<18,8,AP_RND,AP_SAT>")
_UFIX12_1_RND = _F("ap_ufixed<12,1,AP_RND>")
_UFIX16_0_RND_SAT = _F("ap_ufixed<16,0,AP_RND,AP_SAT>")
_UFIX16_1_RND = _F("ap_ufixed<16,1,AP_RND>")
_UFIX22_1_RND = _F("ap_ufixed<22,1,AP_RND>")
_UFIX26_1_RND = _F("ap_ufixed<26,1,AP_RND>")
_UFIX27_5_RND_SAT = _F("ap_ufixed<27,5,AP_RND,AP_SAT>")
_UFIX28_12_TRN = _F("ap_ufixed<28,12,AP_TRN>")
_UFIX36_12_RND = _F("ap_ufixed<36,12,AP_RND>")
_UFIX8_0_RND_SAT = _F("ap_ufixed<8,0,AP_RND,AP_SAT>")
_UFIX9_1_TRN_SAT = _F("ap_ufixed<9,1,AP_TRN,AP_SAT>")


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
    mk = _broadcast_mask(mask, a.shape)
    a = np.where(mk, -np.inf, a)
    mx = a.max(axis=axis, keepdims=True)
    mx[~np.isfinite(mx)] = 0.0  # fully masked rows (max -inf): every exp below is 0
    e = np.exp(a - mx)
    s = e.sum(axis=axis, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)  # type: ignore[no-any-return]


def _broadcast_mask(mask: npt.ArrayLike, shape: tuple[int, ...]) -> npt.NDArray[np.bool_]:
    """``mask`` as a bool array of ``shape`` (a read-only broadcast view), or SpecError."""
    mk = np.asarray(mask)
    if mk.dtype != np.bool_:
        raise SpecError(
            f"mask must be a bool array (True = masked out), got dtype {mk.dtype}; "
            "convert a 0/1 attention mask (1 = attend) with `attention_mask == 0`"
        )
    try:
        return np.broadcast_to(mk, shape)
    except ValueError:
        raise SpecError(
            f"mask of shape {mk.shape} does not broadcast to the input shape {shape}; "
            "give the input's shape or size-1 axes where it repeats "
            "(e.g. [B,1,1,S] against [B,H,S,S])"
        ) from None


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

    def _need(self, ok: bool, field: str, value: Any, limit: str) -> None:
        if not ok:
            raise SpecError(f"{self._name()}.{field}={value}: {limit}")

    def _pow2(self, field: str, lo: int = 2, hi: int = 1 << 24) -> int:
        v = getattr(self, field)
        self._need(
            isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi and v & (v - 1) == 0,
            field,
            v,
            f"must be a power of two in [{lo}, {hi}]",
        )
        return int(v).bit_length() - 1

    def _int_in(self, field: str, lo: int, hi: int) -> int:
        v = getattr(self, field)
        self._need(
            isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi,
            field,
            v,
            f"must be an integer in [{lo}, {hi}]",
        )
        return int(v)

    def _choice(self, field: str, choices: tuple[str, ...]) -> None:
        v = getattr(self, field)
        self._need(v in choices, field, repr(v), f"must be one of {', '.join(choices)}")

    def _rounding_trn_rnd(self, field: str) -> None:
        fmt: FixedFormat = getattr(self, field)
        self._need(
            fmt.rounding in (Rounding.TRN, Rounding.RND),
            field,
            fmt,
            "internal formats support AP_TRN (floor) or AP_RND (half up) only",
        )

    def _row_limit(self, n: int, limit: int, what: str) -> None:
        if n > limit:
            raise SpecError(f"{self._name()}: rows of length {n} exceed {what} (at most {limit})")


def _rnd_flag(fmt: FixedFormat) -> int:
    return 1 if fmt.rounding is Rounding.RND else 0


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


# ======================================================================================
# hls4ml 1.3
# ======================================================================================
def _hls_real_from_idx(fmt: FixedFormat, nbits: int, i: npt.NDArray[np.int64]) -> np.ndarray:
    """``softmax_real_val_from_idx``: ``fmt`` value whose top ``nbits`` bits are ``i`` (float32)."""
    raw = i << np.int64(fmt.width - nbits)
    raw = fmt.with_modes(overflow="AP_WRAP").saturate(raw)  # bit pattern read as signed/unsigned
    return fmt.to_float(raw).astype(np.float32)  # exact: widths <= 24 bits (validated)


def _hls_idx_from_raw(raw: RawArray, fmt: FixedFormat, nbits: int) -> RawArray:
    """``softmax_idx_from_real_val``: the top ``nbits`` bits of the two's-complement pattern."""
    return (raw >> np.int64(fmt.width - nbits)) & np.int64((1 << nbits) - 1)


def _hls_reduce_add(e: RawArray, fmt: FixedFormat) -> RawArray:
    """``nnet::reduce<accum_t, N, Op_add<accum_t>>`` over the columns of ``e`` (R, N) -> (R,).

    hls4ml's adder tree, each add cast to ``fmt``: left = 2^floor(log2(N - 1))
    columns, right = the rest; both sides share ``fmt`` so a sum only needs
    the overflow mode (same fraction bits).
    """
    n = e.shape[1]
    if n > 2 and (
        fmt.overflow is Overflow.WRAP or (fmt.overflow is Overflow.SAT and int(e.min()) >= 0)
    ):
        # Same result as the tree, faster: wrapping sums are modular (any
        # order), and saturating sums of non-negative addends equal
        # min(total, max) in any order.
        return _saturate_fresh(e.sum(axis=1), fmt)
    if n == 1:
        return e[:, 0]
    if n == 2:
        return _saturate_fresh(e[:, 0] + e[:, 1], fmt)
    left = 1 << ((n - 1).bit_length() - 1)
    return _saturate_fresh(
        _hls_reduce_add(e[:, :left], fmt) + _hls_reduce_add(e[:, left:], fmt), fmt
    )


def _hls_reduce_add_masked(e: RawArray, mask: npt.NDArray[np.bool_], fmt: FixedFormat) -> RawArray:
    """:func:`_hls_reduce_add` of each row's unmasked elements only (``e`` is 0 at masked ones).

    hls4ml's tree over the compacted row (``N'`` = the row's unmasked count).
    Wrapping sums, and saturating sums of non-negative addends, do not depend
    on the tree, so the zero-filled full row gives the same; otherwise the
    rows are compacted and summed with one tree per distinct ``N'`` (a loop
    over counts, not rows). Fully masked rows sum to 0.
    """
    if fmt.overflow is Overflow.WRAP or (fmt.overflow is Overflow.SAT and int(e.min()) >= 0):
        return _saturate_fresh(e.sum(axis=1), fmt)  # addends are in range of fmt
    cnt = e.shape[1] - mask.sum(axis=1)
    ec = np.take_along_axis(e, np.argsort(mask, axis=1, kind="stable"), axis=1)
    s = np.zeros(e.shape[0], dtype=np.int64)
    for k in np.unique(cnt[cnt > 0]).tolist():
        rows = np.flatnonzero(cnt == k)
        s[rows] = _hls_reduce_add(np.ascontiguousarray(ec[rows, :k]), fmt)
    return s


@dataclass(frozen=True)
class _Hls4mlSoftmax(SoftmaxSpec):
    """Common fields and arithmetic of hls4ml 1.3 ``softmax_stable`` / ``softmax_latency``.

    Types as hls4ml 1.3.0 generates them (verified by converting a one-node
    ONNX Softmax with ``hls4ml.converters.convert_from_onnx_model``, Vivado
    backend, model precision ``fixed<16,6>``, and reading ``firmware/defines.h``
    and ``parameters.h``):

    * with ``config_from_onnx_model(granularity="model")`` (the default) or a
      model-level config dict: ``accum_t = model_default_t = ap_fixed<16,6>``
      (AP_TRN, AP_WRAP) -- the layer's declared ``accum`` attribute
      ``fixed<18,8,RND,SAT>`` is *not* used;
    * with ``granularity="name"`` or ``"type"``: ``accum_t =
      ap_fixed<18,8,AP_RND,AP_SAT>`` (set ``accum_fmt`` to that to model it);
    * always: ``exp_table_t = inv_table_t = inv_inp_t =
      ap_fixed<18,8,AP_RND,AP_SAT>``, ``result_t`` = the model precision
      ``ap_fixed<16,6>``, ``exp_table_size = inv_table_size = 1024``,
      ``exp_scale = 1.0``, and (stable) ``inp_norm_t = ap_ufixed<W-1, I-1>``
      of the input type (``ap_ufixed<15,5>`` for ``ap_fixed<16,6>``).

    Table contents follow ``init_exp_table``/``init_invert_table``: the
    address is the top ``log2(size)`` bits of the addressing type, the entry
    is the function at the bin's *lower edge* (the value with the low bits
    zero), computed in ``float`` (``std::exp``, ``1/x``) and then converted to
    the table type. float32 ``exp`` is evaluated as the correctly rounded
    float32 of the float64 ``exp`` (the g++/glibc ``expf`` agrees on every
    entry of the default tables; checked by the harness test).

    Masks (``model(..., mask=)``) are an hwapprox extension (hls4ml has no
    mask): the :class:`SoftmaxSpec` contract -- ``x_max`` over the unmasked
    elements (stable), masked ``exp_res`` = 0, the adder tree over the
    unmasked elements only (hls4ml's tree for ``N'`` inputs), masked outputs
    0; a fully masked row has ``exp_sum = 0`` and outputs all zeros.
    """

    in_fmt: FixedFormat = _FIX16_6
    out_fmt: FixedFormat = _FIX16_6
    exp_table_size: int = 1024
    inv_table_size: int = 1024
    exp_table_fmt: FixedFormat = _FIX18_8_RND_SAT
    inv_table_fmt: FixedFormat = _FIX18_8_RND_SAT
    inv_inp_fmt: FixedFormat = _FIX18_8_RND_SAT
    accum_fmt: FixedFormat = _FIX16_6
    exp_scale: float = 1.0

    _stable: ClassVar[bool] = False  # set by the subclasses (not a field)

    # -- derived ------------------------------------------------------------------
    @property
    def exp_addr_fmt(self) -> FixedFormat:
        """Type whose top bits address the exp table (``inp_norm_t`` or ``data_T``)."""
        raise NotImplementedError

    def validate(self) -> None:
        self._pow2("exp_table_size")
        self._pow2("inv_table_size")
        for f in (
            "in_fmt",
            "out_fmt",
            "exp_table_fmt",
            "inv_table_fmt",
            "inv_inp_fmt",
            "accum_fmt",
        ):
            fmt: FixedFormat = getattr(self, f)
            self._need(fmt.width <= 24, f, fmt, "hls4ml baseline formats must be <= 24 bits wide")
        self._need(
            self.accum_fmt.width + self.inv_table_fmt.width <= MAX_RAW_BITS,
            "accum_fmt",
            self.accum_fmt,
            f"accum x inv_table product must fit {MAX_RAW_BITS} bits",
        )
        self._need(
            isinstance(self.exp_scale, float | int) and math.isfinite(self.exp_scale),
            "exp_scale",
            self.exp_scale,
            "must be a finite number",
        )
        na = self.exp_table_size.bit_length() - 1
        addr = self.exp_addr_fmt
        self._need(
            na <= addr.width,
            "exp_table_size",
            self.exp_table_size,
            f"needs {na} address bits but the addressing type {addr} has {addr.width}",
        )
        ni = self.inv_table_size.bit_length() - 1
        self._need(
            ni <= self.inv_inp_fmt.width,
            "inv_table_size",
            self.inv_table_size,
            f"needs {ni} address bits but inv_inp_fmt {self.inv_inp_fmt} has "
            f"{self.inv_inp_fmt.width}",
        )

    def tables(self) -> dict[str, RawArray]:
        """``exp_table`` and ``invert_table`` raw codes (exp_table_fmt / inv_table_fmt)."""
        na = self.exp_table_size.bit_length() - 1
        x = _hls_real_from_idx(self.exp_addr_fmt, na, np.arange(self.exp_table_size))
        x = x * np.float32(self.exp_scale)
        if self._stable:
            x = -x
        with np.errstate(over="ignore"):  # exp beyond float32 is +inf, as in hls4ml's C++
            e = np.exp(x.astype(np.float64)).astype(np.float32)
        ni = self.inv_table_size.bit_length() - 1
        v = _hls_real_from_idx(self.inv_inp_fmt, ni, np.arange(self.inv_table_size))
        with np.errstate(divide="ignore"):
            inv = np.float32(1.0) / v
        return {
            "exp_table": _hls_quantize_float(e, self.exp_table_fmt),
            "invert_table": _hls_quantize_float(inv, self.inv_table_fmt),
        }

    def params(self) -> dict[str, int]:
        return {
            "n_in_width": self.in_fmt.width,
            "exp_table_size": self.exp_table_size,
            "inv_table_size": self.inv_table_size,
            "exp_addr_bits": self.exp_table_size.bit_length() - 1,
            "inv_addr_bits": self.inv_table_size.bit_length() - 1,
            "exp_addr_width": self.exp_addr_fmt.width,
            "inv_inp_width": self.inv_inp_fmt.width,
            "stable": int(self._stable),
        }

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set. hls4ml's own types carry the datapath (every
        ``*_fmt``); derived here: ``DIFF_W`` (stable: the exact difference
        ``x_max - x_i`` of two input values, one bit wider than ``in_fmt``) and
        ``PROD_W``/``PROD_I``, the exact product ``exp_res · inv`` (``accum_t``
        times ``inv_table_t``, widths and integer bits add) before ``result_t``.
        ``n`` is unused: the adder tree's every sum is an ``accum_t``."""
        return {
            "IN_W": self.in_fmt.width,
            "OUT_W": self.out_fmt.width,
            "STABLE": int(self._stable),
            "EXP_TABLE_SIZE": self.exp_table_size,
            "INV_TABLE_SIZE": self.inv_table_size,
            "EXP_ADDR_BITS": self.exp_table_size.bit_length() - 1,
            "INV_ADDR_BITS": self.inv_table_size.bit_length() - 1,
            "EXP_ADDR_W": self.exp_addr_fmt.width,
            "INV_INP_W": self.inv_inp_fmt.width,
            "ACCUM_W": self.accum_fmt.width,
            "EXP_TABLE_W": self.exp_table_fmt.width,
            "INV_TABLE_W": self.inv_table_fmt.width,
            "DIFF_W": self.in_fmt.width + 1,
            "PROD_W": self.accum_fmt.width + self.inv_table_fmt.width,
            "PROD_I": self.accum_fmt.int_bits + self.inv_table_fmt.int_bits,
        }

    def _exp_res(self, v: RawArray, tabs: dict[str, RawArray]) -> RawArray:
        """``exp_res`` (raw ``accum_fmt``) of ``v``: stable ``d = x_max - x_i`` (exact
        difference codes, >= 0), latency the input codes ``x_i``."""
        na = self.exp_table_size.bit_length() - 1
        if self._stable:
            # x_max - data[i]: exact (same format), assigned to inp_norm_t
            d = cast(v, _diff_fmt(self.in_fmt), self.exp_addr_fmt)
            idx = _hls_idx_from_raw(d, self.exp_addr_fmt, na)
        else:
            idx = _hls_idx_from_raw(v, self.in_fmt, na)
        return cast(tabs["exp_table"][idx], self.exp_table_fmt, self.accum_fmt)

    def _exp_memo(self) -> RawArray:
        """:meth:`_exp_res` of every argument code, index ``d`` (stable) or
        ``x - in_fmt.min_raw`` (latency). Only a speed-up."""
        tabs = _cached(self, "tables")
        if self._stable:
            return self._exp_res(np.arange(1 << self.in_fmt.width, dtype=np.int64), tabs)
        return self._exp_res(self.in_fmt.all_codes(), tabs)

    def _model_rows(
        self, x: RawArray, mask: npt.NDArray[np.bool_] | None = None, **kw: Any
    ) -> RawArray:
        tabs = _cached(self, "tables")
        ni = self.inv_table_size.bit_length() - 1
        memo = _cached(self, "_exp_memo") if self.in_fmt.width <= _MEMO_MAX_BITS else None
        if self._stable:
            v = (
                x.max(axis=1, keepdims=True) - x
                if mask is None
                else _max_minus(x, mask, self.in_fmt)
            )
        else:
            v = x - np.int64(self.in_fmt.min_raw) if memo is not None else x
        e = memo[v] if memo is not None else self._exp_res(v, tabs)  # exp_res (accum_t)
        if mask is None:
            s = _hls_reduce_add(e, self.accum_fmt)
        else:
            np.copyto(e, 0, where=mask)
            s = _hls_reduce_add_masked(e, mask, self.accum_fmt)
        s = cast(s, self.accum_fmt, self.inv_inp_fmt)  # exp_sum (inv_inp_t)
        inv = tabs["invert_table"][_hls_idx_from_raw(s, self.inv_inp_fmt, ni)]
        prod_fmt = FixedFormat(
            self.accum_fmt.width + self.inv_table_fmt.width,
            self.accum_fmt.int_bits + self.inv_table_fmt.int_bits,
        )
        e *= inv[:, None]
        return _zero_masked(_cast_prod(e, prod_fmt, self.out_fmt), mask)

    def cost(self) -> Cost:
        return Cost(
            table_bits=self.exp_table_size * self.exp_table_fmt.width
            + self.inv_table_size * self.inv_table_fmt.width,
            tables=2,
            multipliers=1,
            mult_bits=((self.accum_fmt.width, self.inv_table_fmt.width),),
            adders=2 if self._stable else 1,
            widest_bits=self.accum_fmt.width + self.inv_table_fmt.width,
            notes="per element: 1 exp lookup, 1 adder-tree input, 1 multiply; "
            "per row: 1 inv lookup",
        )


def _diff_fmt(fmt: FixedFormat) -> FixedFormat:
    """Exact format of ``a - b`` for two values of ``fmt`` (ap_fixed ``operator-``)."""
    return FixedFormat(fmt.width + 1, fmt.int_bits + 1, True)


def _hls_quantize_float(v: np.ndarray, fmt: FixedFormat) -> RawArray:
    """``fmt(float)``: ap_fixed conversion of float32 values (inf overflows like a huge value)."""
    v64 = v.astype(np.float64)
    big = float(2 ** (fmt.int_bits + 1))
    # 1/0 = inf in init_invert_table: ap_fixed saturates it to max for the
    # AP_SAT table types hls4ml generates (checked against the header); other
    # overflow modes are modelled as a huge finite value (not checked).
    v64 = np.where(np.isinf(v64), np.sign(v64) * big, v64)
    return fmt.quantize(v64)


@dataclass(frozen=True)
class Hls4mlStableSoftmax(_Hls4mlSoftmax):
    """hls4ml 1.3 ``softmax_stable`` (``implementation = stable``), bit-exact.

    Per row: ``x_max`` by ``Op_max``; ``d_i = x_max - x_i`` assigned to
    ``inp_norm_t = ap_ufixed<W-1, I-1>`` (AP_TRN, AP_WRAP: differences of
    2^(I-1) or more *wrap*, an hls4ml defect reproduced here); ``exp_res_i =
    exp_table[top log2(size) bits of d_i]`` (entry k = ``exp(-(lower edge of
    bin k)·exp_scale)``) assigned to ``accum_t``; ``exp_sum`` by hls4ml's
    adder tree in ``accum_t`` then assigned to ``inv_inp_t``;
    ``inv = invert_table[top bits of exp_sum]`` (entry k = ``1/(lower edge)``,
    signed addressing); ``y_i = exp_res_i · inv`` assigned to ``result_t``.
    See :class:`_Hls4mlSoftmax` for the generated types.
    """

    method = "hls4ml_stable"
    source = "hls4ml 1.3.0 templates/vivado/nnet_utils/nnet_activation.h softmax_stable"
    _stable: ClassVar[bool] = True

    @property
    def exp_addr_fmt(self) -> FixedFormat:
        return FixedFormat(self.in_fmt.width - 1, self.in_fmt.int_bits - 1, signed=False)


@dataclass(frozen=True)
class Hls4mlLatencySoftmax(_Hls4mlSoftmax):
    """hls4ml 1.3 ``softmax_latency`` (``implementation = latency``), bit-exact.

    No max subtraction: ``exp_res_i = exp_table[top bits of x_i]`` with the
    table addressed by the input type itself (signed: the upper half of the
    addresses holds exp of negative values), entry k = ``exp(lower edge ·
    exp_scale)`` saturating in ``exp_table_t`` (``ap_fixed<18,8>`` saturates
    above e^4.85); then as :class:`Hls4mlStableSoftmax`.
    """

    method = "hls4ml_latency"
    source = "hls4ml 1.3.0 templates/vivado/nnet_utils/nnet_activation.h softmax_latency"
    _stable: ClassVar[bool] = False

    @property
    def exp_addr_fmt(self) -> FixedFormat:
        return self.in_fmt


# ======================================================================================
# I-BERT
# ======================================================================================
@dataclass(frozen=True)
class IBertSoftmax(SoftmaxSpec):
    """I-BERT ``IntSoftmax`` (Kim et al., ICML 2021) in exact integer arithmetic.

    Input scale S = LSB of ``in_fmt``; output scale 2^-F with F =
    ``out_fmt.frac_bits`` (I-BERT's ``output_bit``; 8 in the paper: 1.0 -> 256).

    1. ``x = x - max(x)`` (row max; integer);
    2. ``e = i_exp(x)`` (:func:`~hwapprox.approx.intmath.i_exp`: x0 =
       floor(-0.6931/S), clip 30·x0, ``z = r(r + b_int) + c_int``,
       ``e = z << (30 - q)``), scale a·S²/2^30;
    3. requantise to ``exp_bits`` (16) signed bits as I-BERT's ``QuantAct(16)``
       (``requant="calibrated"``, default): symmetric scale ``x_max / (2^15 - 1)``
       with the calibrated ``x_max`` = the largest exp, ``e(0) = c_int·2^30``
       (every row holds one, so the running max converges to it); the rescale
       ``(2^15 - 1) / e(0)`` is ``fixedpoint_mul``'s ``m·2^-shift`` (frexp
       mantissa rounded half-up to 31 bits): ``e16 = round_half_even(e·m /
       2^shift)`` (``torch.round``), clamped to the signed range.
       ``requant="shift"``: ``e16 = e >> s``, ``s = bit_length(e(0)) -
       (exp_bits - 1)`` (a plain shift, for cheaper hardware);
    4. ``factor = floor(2^32 / sum(e16))``;
    5. ``y = floor(e16 · factor / 2^(32 - F))``, then ``out_fmt``'s overflow mode.

    Deviations from the source (``kssteven418/I-BERT``
    ``fairseq/quantization/utils/quant_modules.py``, ``quant_utils.py``):
    exact integers instead of fp32 ``floor`` (constants: exact rational floors
    of the float64 quotients ``b/a``, ``c/a``); the requantisation ratio is the
    exact rational ``(2^15 - 1)/e(0)`` (the source forms it from fp32 scales
    in double) and the product ``e·m`` is exact (the source rounds it to a
    double first). The normalisation makes the exp scale cancel, so these
    change at most the last bit of ``e16``.
    """

    method = "ibert"
    source = "Kim et al. 2021, I-BERT; kssteven418/I-BERT quant_modules.py IntSoftmax"

    in_fmt: FixedFormat = _FIX16_6
    out_fmt: FixedFormat = _UFIX9_1_TRN_SAT
    exp_bits: int = 16
    factor_bits: int = 32
    requant: str = "calibrated"

    def _consts(self) -> intmath.IBertExpConstants:
        return intmath.ibert_exp_constants(self.in_fmt.lsb)

    def _exp_shift(self) -> int:
        return max(0, self._consts().max_exp.bit_length() - (self.exp_bits - 1))

    def _requant_mult(self) -> tuple[int, int]:
        """``(m, shift)`` with ``m/2^shift`` ≈ ``(2^(exp_bits-1) - 1) / e(0)`` (frexp, 31 bits)."""
        ratio = Fraction((1 << (self.exp_bits - 1)) - 1, self._consts().max_exp)
        ex = ratio.numerator.bit_length() - ratio.denominator.bit_length()
        while ratio >= Fraction(2) ** ex:
            ex += 1
        while ratio < Fraction(2) ** (ex - 1):
            ex -= 1
        mant = ratio / Fraction(2) ** ex  # in [0.5, 1)
        m = math.floor(mant * (1 << 31) + Fraction(1, 2))  # Decimal ROUND_HALF_UP
        return m, 31 - ex

    def validate(self) -> None:
        self._choice("requant", ("calibrated", "shift"))
        self._int_in("exp_bits", 2, 31)
        self._int_in("factor_bits", 8, 40)
        try:
            k = self._consts()
        except ValueError as exc:
            raise SpecError(f"{self._name()}.in_fmt={self.in_fmt}: {exc}") from None
        self._need(
            k.max_exp.bit_length() <= 62,
            "in_fmt",
            self.in_fmt,
            f"i-exp needs {k.max_exp.bit_length()} bits at this scale (int64 allows 62); "
            "use fewer fraction bits",
        )
        self._need(
            0 <= self.out_fmt.frac_bits <= self.factor_bits,
            "out_fmt",
            self.out_fmt,
            f"fraction bits must be in [0, factor_bits={self.factor_bits}]",
        )
        if self.requant == "calibrated":
            self._need(
                k.max_exp.bit_length() <= 61 and self._requant_mult()[1] >= 31,
                "in_fmt",
                self.in_fmt,
                "calibrated requantisation needs e(0) < 2^61 and > 2^(exp_bits-1)",
            )
        self._need(
            self.exp_bits + self.factor_bits <= 62,
            "factor_bits",
            self.factor_bits,
            f"exp_bits + factor_bits must be <= 62 (exp_bits={self.exp_bits})",
        )

    def params(self) -> dict[str, int]:
        k = self._consts()
        return {
            "x0": k.x0,
            "b_int": k.b_int,
            "c_int": k.c_int,
            "n": k.n,
            "calibrated": int(self.requant == "calibrated"),
            "requant_mult": self._requant_mult()[0],
            "requant_shift": self._requant_mult()[1],
            "exp_shift": self._exp_shift(),
            "exp_bits": self.exp_bits,
            "factor_bits": self.factor_bits,
            "out_shift": self.factor_bits - self.out_fmt.frac_bits,
            "in_width": self.in_fmt.width,
            "out_width": self.out_fmt.width,
        }

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set for rows of up to ``n`` elements (default: the
        longest row the model takes, ``2^(62 - exp_bits)``).

        Input codes ``x`` in ``[lo, hi]`` of ``in_fmt``; ``x0 < 0``, ``b_int``,
        ``c_int`` and ``n_exp = 30`` are the i-exp constants:

        ========= ======== =========================================================
        name      sign     value range -> bits
        ========= ======== =========================================================
        X_W       signed   an input code (``ap_ufixed`` zero-extended)
        DIFF_W    signed   ``x - max`` in ``[-(hi - lo), 0]``
        IT_W      signed   the clipped argument ``max(x - max, n_exp·x0)``
        IQ_W      unsigned ``q = floor(t / x0)`` in ``[0, n_exp]``
        IR_W      signed   ``r = t - x0·q`` in ``(x0, 0]``
        IZ_W      signed   ``r + b_int``, ``r·(r + b_int)`` and ``z = r·(r + b_int) + c_int``
                           (a quadratic in r: its extremes at the ends or the vertex)
        IE_W      unsigned ``e = max(z << (n_exp - q), 0) <= z_max·2^n_exp``
        RQ_W      unsigned ``e·requant_mult`` (``REQUANT_MULT_W``-bit constant), the
                           exact QuantAct product: **more than
                           64 bits** for the usual input scales (``e < 2^61``,
                           ``requant_mult < 2^31``) -- the one wide type; it is a
                           constant multiplier whose low bits only decide rounding
        E16_W     unsigned the requantised exp, ``<= 2^(exp_bits-1) - 1``
        SUM_W     unsigned ``Σ e16 <= n·(2^(exp_bits-1) - 1)``
        FACTOR_W  unsigned ``2^factor_bits / Σ e16 <= 2^factor_bits``
        PROD_W    unsigned ``e16·factor <= Σe16·factor <= 2^factor_bits``
        Y_W       signed   ``y = e16·factor >> out_shift <= 2^F_out``, as the signed
                           carrier of the output cast
        ========= ======== =========================================================
        """
        k = self._consts()
        nmax = 1 << (62 - self.exp_bits)
        rows = nmax if n is None else int(n)
        if not 1 <= rows <= nmax:
            raise SpecError(
                f"{self._name()}: rows of length {rows} exceed the exp sum width (at most {nmax})"
            )
        lo, hi = self.in_fmt.min_raw, self.in_fmt.max_raw
        diff_lo = lo - hi
        t_lo = min(diff_lo, k.n * k.x0)
        r_lo = k.x0 + 1
        rb = [r_lo + k.b_int, k.b_int]
        cand = [r_lo, 0, *(v for v in (-(k.b_int // 2), -((k.b_int + 1) // 2)) if r_lo <= v <= 0)]
        zs = [r * (r + k.b_int) + k.c_int for r in cand]
        prods = [r * (r + k.b_int) for r in cand]
        z_lo, z_hi = min(zs), max(zs)
        e_max = max(z_hi, 0) << k.n
        mult, rshift = self._requant_mult()
        cap = (1 << (self.exp_bits - 1)) - 1
        fb = self.factor_bits
        return {
            "IN_W": self.in_fmt.width,
            "X_W": raw_width(self.in_fmt),
            "OUT_W": self.out_fmt.width,
            "OUT_F": self.out_fmt.frac_bits,
            "X0": k.x0,
            "B_INT": k.b_int,
            "C_INT": k.c_int,
            "EXP_N": k.n,
            "CALIBRATED": int(self.requant == "calibrated"),
            "REQUANT_MULT": mult,
            "REQUANT_MULT_W": ubits(mult),
            "REQUANT_SHIFT": rshift,
            "EXP_SHIFT": self._exp_shift(),
            "EXP_BITS": self.exp_bits,
            "E16_MAX": cap,
            "FACTOR_BITS": fb,
            "OUT_SHIFT": fb - self.out_fmt.frac_bits,
            "DIFF_W": sbits(diff_lo, 0),
            "IT_W": sbits(t_lo, 0),
            "IQ_W": ubits(k.n),
            "IR_W": sbits(r_lo, 0),
            "IZ_W": sbits(min(z_lo, *rb, *prods), max(z_hi, *rb, *prods)),
            "IE_W": ubits(e_max),
            "RQ_W": ubits(e_max * mult),
            "E16_W": ubits(cap),
            "SUM_W": ubits(rows * cap),
            "FACTOR_W": ubits(1 << fb),
            "PROD_W": ubits(1 << fb),
            "Y_W": sbits(0, 1 << self.out_fmt.frac_bits),
        }

    def _exp16(self, v: RawArray) -> RawArray:
        """Steps 2-3: ``e16`` of ``v = x - max(x)`` (<= 0)."""
        e = intmath.i_exp(v, self._consts())
        if self.requant == "calibrated":
            m, sh = self._requant_mult()
            e16 = intmath.mul_round_shift(e, m, sh, Rounding.RND_CONV)
            return np.minimum(e16, np.int64((1 << (self.exp_bits - 1)) - 1))
        return e >> np.int64(self._exp_shift())

    def _exp16_memo(self) -> RawArray:
        """:meth:`_exp16` of ``-δ`` for every δ in ``[0, 2^W_in)``, index δ. Only a speed-up."""
        return self._exp16(-np.arange(1 << self.in_fmt.width, dtype=np.int64))

    def _model_rows(
        self, x: RawArray, mask: npt.NDArray[np.bool_] | None = None, **kw: Any
    ) -> RawArray:
        """Masks: the max over the unmasked elements, masked ``e16`` = 0 (out of the
        sum), masked outputs 0; a fully masked row (sum 0) skips the divider."""
        n = x.shape[1]
        self._row_limit(n, (1 << (62 - self.exp_bits)), "the exp sum width")
        if mask is not None:
            dlt = _max_minus(x, mask, self.in_fmt)
            if self.in_fmt.width <= _MEMO_MAX_BITS:
                e16 = _cached(self, "_exp16_memo")[dlt]
            else:
                e16 = self._exp16(-dlt)
            np.copyto(e16, 0, where=mask)
        elif self.in_fmt.width <= _MEMO_MAX_BITS:
            e16 = _cached(self, "_exp16_memo")[x.max(axis=1, keepdims=True) - x]
        else:
            e16 = self._exp16(x - x.max(axis=1, keepdims=True))
        total = e16.sum(axis=1, keepdims=True)
        if mask is not None:
            np.maximum(total, 1, out=total)  # only fully masked rows sum to 0 (all e16 = 0)
        factor = (np.int64(1) << np.int64(self.factor_bits)) // total
        e16 *= factor
        e16 >>= np.int64(self.factor_bits - self.out_fmt.frac_bits)
        return _zero_masked(_saturate_fresh(e16, self.out_fmt), mask)

    def cost(self) -> Cost:
        wx = self.in_fmt.width + 1
        return Cost(
            multipliers=3,
            mult_bits=((wx, wx), (self.exp_bits, self.factor_bits)),
            adders=4,
            dividers=1,
            widest_bits=max(self._consts().max_exp.bit_length(), self.exp_bits + self.factor_bits),
            notes="per element: i-exp (1 square, shifts), 1 multiply; per row: 1 divider 2^32/sum",
        )


# ======================================================================================
# I-ViT Shiftmax
# ======================================================================================
@dataclass(frozen=True)
class ShiftmaxSoftmax(SoftmaxSpec):
    """I-ViT Shiftmax (Li & Gu, ICCV 2023), exact integers.

    ``variant="pytorch"`` (default) follows ``zkkli/I-ViT``
    ``models/quantization_utils/quant_modules.py`` ``IntSoftmax``:
    ``x0 = floor(-1/S)``, ``exp = floor((r/2 - x0)·2^(n - q))`` with a real
    ``r/2`` (exact here as ``((r - 2·x0) << (n - q)) >> 1``); ``variant="tvm"``
    the TVM path as summarised in ALGORITHMS.md (``x0 = int(-1/S - 1)``,
    ``r >> 1``; the TVM source uses ``n = 16``: set ``n``), not re-checked
    against the TVM code.

    1. ``x = x - max(x)``; ``e = shift_exp(x)`` (scale S/2^n);
    2. ``sum = min(sum(e), 2^31 - 1)``; ``factor = floor((2^31 - 1) / sum)``;
    3. ``y = floor(e · factor / 2^(31 - F))``, F = ``out_fmt.frac_bits``
       (I-ViT's ``output_bit - 1``: 8-bit output has scale 2^-7), then
       ``out_fmt``'s overflow mode.

    Note: with 16-bit inputs (S = 2^-10) one ``e(0) = 2^25`` (n = 15), so
    rows of 64 equal values already hit the 2^31 - 1 sum clamp, as in the
    source; I-ViT targets 8-bit inputs.
    """

    method = "shiftmax"
    source = "Li & Gu 2023, I-ViT; zkkli/I-ViT quant_modules.py IntSoftmax (Shiftmax)"

    in_fmt: FixedFormat = _FIX16_6
    out_fmt: FixedFormat = _UFIX9_1_TRN_SAT
    n: int = 15
    variant: str = "pytorch"

    def _x0(self) -> int:
        return intmath.shift_exp_x0(self.in_fmt.lsb, self.variant)

    def validate(self) -> None:
        self._choice("variant", ("pytorch", "tvm"))
        self._int_in("n", 1, 30)
        x0 = self._x0()
        self._need(x0 < 0, "in_fmt", self.in_fmt, "scale too coarse: x0 = floor(-1/S) must be < 0")
        self._need(
            ((-x0) << self.n).bit_length() <= 31,
            "n",
            self.n,
            f"exp(0) = -x0·2^n = {(-x0) << self.n} must fit 31 bits (x0 = {x0} from {self.in_fmt})",
        )
        self._need(
            0 <= self.out_fmt.frac_bits <= 31,
            "out_fmt",
            self.out_fmt,
            "fraction bits must be in [0, 31]",
        )

    def params(self) -> dict[str, int]:
        return {
            "x0": self._x0(),
            "n": self.n,
            "tvm": int(self.variant == "tvm"),
            "sum_max": (1 << 31) - 1,
            "out_shift": 31 - self.out_fmt.frac_bits,
            "in_width": self.in_fmt.width,
            "out_width": self.out_fmt.width,
        }

    def _exp_memo(self) -> RawArray:
        """``shift_exp(-δ)`` for every δ in ``[0, 2^W_in)``, index δ. Only a speed-up."""
        d = -np.arange(1 << self.in_fmt.width, dtype=np.int64)
        return intmath.shift_exp(d, self._x0(), self.n, self.variant)

    def _model_rows(
        self, x: RawArray, mask: npt.NDArray[np.bool_] | None = None, **kw: Any
    ) -> RawArray:
        """Masks: the max over the unmasked elements, masked exp = 0 (out of the sum),
        masked outputs 0; a fully masked row (sum 0) skips the divider."""
        if mask is not None:
            dlt = _max_minus(x, mask, self.in_fmt)
            if self.in_fmt.width <= _MEMO_MAX_BITS:
                e = _cached(self, "_exp_memo")[dlt]
            else:
                e = intmath.shift_exp(-dlt, self._x0(), self.n, self.variant)
            np.copyto(e, 0, where=mask)
        elif self.in_fmt.width <= _MEMO_MAX_BITS:
            e = _cached(self, "_exp_memo")[x.max(axis=1, keepdims=True) - x]
        else:
            v = x - x.max(axis=1, keepdims=True)
            e = intmath.shift_exp(v, self._x0(), self.n, self.variant)
        lim = np.int64((1 << 31) - 1)
        total = np.minimum(e.sum(axis=1, keepdims=True), lim)
        if mask is not None:
            np.maximum(total, 1, out=total)  # only fully masked rows sum to 0 (all e = 0)
        factor = lim // total
        e *= factor
        e >>= np.int64(31 - self.out_fmt.frac_bits)
        return _zero_masked(_saturate_fresh(e, self.out_fmt), mask)

    def cost(self) -> Cost:
        return Cost(
            multipliers=1,
            mult_bits=((31, 31),),
            adders=5,
            dividers=1,
            widest_bits=62,
            notes="per element: shift-exp (shifts/adds), 1 multiply; per row: 1 divider",
        )


# ======================================================================================
# Online (single-pass) softmax
# ======================================================================================
@dataclass(frozen=True)
class OnlineSoftmax(SoftmaxSpec):
    """Single-pass softmax: running max and running sum (Milakov & Gimelshein 2018).

    As Edge-MoE ``finalize_attn`` streams it: one element per step, one
    reciprocal per row, outputs recomputed from the buffered row. Every step is
    a named fixed-point operation; an RTL/HLS unit reproduces it bit for bit
    from this code, :meth:`params` and :meth:`tables`.

    Datapath (``F_in = in_fmt.frac_bits``, ``F_e = exp_fmt.frac_bits``, ...):

    * **State** per row: ``m`` (raw ``in_fmt``), ``d`` (raw ``sum_fmt``).
      Element 0: ``m = x_0``, ``d = ONE`` (1.0 in ``sum_fmt``).
    * **Element j >= 1** (``schedule="online"``):
      if ``x_j > m``: ``d = R_s(d · E(x_j - m)) + ONE``, ``m = x_j``;
      else ``d = d + E(m - x_j)`` (exact: ``sum_fmt.frac_bits >= F_e``).
      ``R_s`` = exact product (``sum_fmt`` × ``exp_fmt``) rounded to
      ``sum_fmt`` with ``sum_fmt.rounding`` (AP_TRN or AP_RND).
      ``schedule="two_pass"``: ``m = max`` first, then ``d = Σ E(m - x_j)``
      (no rescaling; the same E and the same formats).
    * **E(δ) = exp(-δ)** for raw ``δ >= 0`` (``F_in`` fraction bits), a raw
      ``exp_fmt`` code:

      - ``exp_unit="base2"``: ``t = R_t(δ · LOG2E)`` with ``LOG2E`` =
        log2(e) quantised to ``log2e_fmt`` (its rounding), product exact,
        ``R_t`` = cast to ``exp_arg_fmt`` (its rounding; AP_SAT clamps huge
        δ, whose result is 0 anyway); then
        :func:`~hwapprox.approx.intmath.exp2_neg`: integer part of ``t`` is a
        right shift, the top ``exp_frac_bits`` fraction bits address the
        table ``exp2_table`` (2^(-k/2^b), ``exp_table_frac_bits``), the
        remaining bits interpolate linearly (``exp_interp="pwl"``) or are
        dropped (``"none"``); one final rounding to ``F_e`` with
        ``exp_fmt.rounding``.
      - ``exp_unit="lut"``: if ``δ >= 2^exp_lut_int_bits`` then 0, else
        ``exp_lut[δ >> s]`` with ``s = F_in + exp_lut_int_bits -
        exp_lut_bits`` (the top ``exp_lut_bits`` bits of δ); entry k holds
        exp(-centre of bin k) (exact value when ``s = 0``) rounded to
        ``exp_fmt``.
    * **Reciprocal** once per row, ``r = 1/d`` as raw ``recip_fmt``:
      :func:`~hwapprox.approx.intmath.reciprocal` with leading-one
      normalisation of ``d``, mantissa to ``recip_work_frac_bits`` bits,
      ``recip_unit="lut"`` (PWL between ``2^recip_table_bits + 1`` end
      points) or ``"newton"`` (bin-centre seed, ``newton_steps`` steps
      ``R = R·(2 - U·R)``), all roundings ``recip_fmt.rounding``.
    * **Output** per buffered element: ``y_i = cast_out(E(m - x_i) · r)``:
      exact product (``F_e + F_r`` fraction bits) cast to ``out_fmt`` with its
      rounding and overflow (default AP_RND, AP_SAT).

    * **Masks** (:class:`SoftmaxSpec` contract): the row state starts
      *empty*, ``(m, d) = (-inf, 0)``; the element-0 rule above is the
      ``x_j > m`` rule applied to the empty state (``R_s(0·E) + ONE = ONE``),
      so an unmasked element updates the state as stated and a masked element
      leaves ``(m, d)`` untouched (it never raises ``m``, adds no ``E``).
      ``schedule="two_pass"``: ``m`` = the max of the unmasked elements, masked
      ``E`` = 0. Masked outputs are 0. A fully masked row stays empty
      (``d = 0``; its reciprocal is not used) and outputs all zeros.

    Intermediates for unit tests of the HLS/RTL ports: :meth:`exp_unit_raw`
    (E), :meth:`row_state` (``m``, ``d`` for either schedule) and
    :meth:`recip_raw` (``1/d``). The defaults reach <= 1 LSB max error at
    16-bit outputs for ``ap_fixed<16,6>`` inputs (``benchmarks/results/softmax.md``).
    """

    method = "online"
    source = "Milakov & Gimelshein 2018 (online normaliser); Edge-MoE finalize_attn"

    in_fmt: FixedFormat = _FIX16_6
    out_fmt: FixedFormat = _UFIX16_0_RND_SAT
    schedule: str = "online"
    exp_unit: str = "base2"
    exp_fmt: FixedFormat = _UFIX22_1_RND
    # base2 exp unit
    log2e_fmt: FixedFormat = _UFIX26_1_RND
    exp_arg_fmt: FixedFormat = _UFIX27_5_RND_SAT
    exp_frac_bits: int = 8
    exp_interp: str = "pwl"
    exp_table_frac_bits: int = 24
    # lut exp unit
    exp_lut_bits: int = 12
    exp_lut_int_bits: int = 4
    # sum and reciprocal
    sum_fmt: FixedFormat = _UFIX36_12_RND
    recip_unit: str = "newton"
    recip_fmt: FixedFormat = _UFIX26_1_RND
    recip_table_bits: int = 8
    recip_work_frac_bits: int = 26
    newton_steps: int = 2

    # -- validation ------------------------------------------------------------------
    def validate(self) -> None:
        self._choice("schedule", ("online", "two_pass"))
        self._choice("exp_unit", ("base2", "lut"))
        self._choice("exp_interp", ("pwl", "none"))
        self._choice("recip_unit", ("lut", "newton"))
        self._rounding_trn_rnd("out_fmt")
        self._need(
            self.out_fmt.overflow.value in ("AP_SAT", "AP_WRAP"),
            "out_fmt",
            self.out_fmt,
            "overflow must be AP_SAT or AP_WRAP",
        )
        for f in ("exp_fmt", "sum_fmt", "recip_fmt", "log2e_fmt", "exp_arg_fmt"):
            fmt: FixedFormat = getattr(self, f)
            self._need(not fmt.signed, f, fmt, "must be unsigned (ap_ufixed)")
            self._rounding_trn_rnd(f)
        self._need(self.in_fmt.width <= 32, "in_fmt", self.in_fmt, "at most 32 bits")
        self._need(
            self.exp_fmt.int_bits >= 1 and self.exp_fmt.frac_bits >= 1,
            "exp_fmt",
            self.exp_fmt,
            "must hold 1.0 (int_bits >= 1) and fractions (frac_bits >= 1)",
        )
        self._need(
            self.sum_fmt.int_bits >= 1,
            "sum_fmt",
            self.sum_fmt,
            "int_bits must be >= 1 to hold the sum (>= 1.0)",
        )
        self._need(
            self.sum_fmt.frac_bits >= self.exp_fmt.frac_bits,
            "sum_fmt",
            self.sum_fmt,
            f"needs at least exp_fmt's {self.exp_fmt.frac_bits} fraction bits (exp adds exactly)",
        )
        self._need(
            self.sum_fmt.width + self.exp_fmt.width <= MAX_RAW_BITS,
            "sum_fmt",
            self.sum_fmt,
            f"sum x exp product must fit {MAX_RAW_BITS} bits (exp_fmt {self.exp_fmt})",
        )
        self._need(
            self.recip_fmt.int_bits >= 1 and self.recip_fmt.frac_bits >= 1,
            "recip_fmt",
            self.recip_fmt,
            "must hold 1/d in (0, 1] (int_bits >= 1, frac_bits >= 1)",
        )
        self._need(
            self.exp_fmt.width + self.recip_fmt.width <= MAX_RAW_BITS,
            "recip_fmt",
            self.recip_fmt,
            f"exp x recip product must fit {MAX_RAW_BITS} bits",
        )
        self._int_in("recip_work_frac_bits", 2, 29)
        self._int_in("recip_table_bits", 1, min(16, self.recip_work_frac_bits))
        self._int_in("newton_steps", 0, 4)
        if self.exp_unit == "base2":
            self._need(
                self.log2e_fmt.int_bits >= 1,
                "log2e_fmt",
                self.log2e_fmt,
                "int_bits must be >= 1 to hold log2(e) = 1.44",
            )
            self._need(
                self.in_fmt.width + 1 + self.log2e_fmt.width <= MAX_RAW_BITS,
                "log2e_fmt",
                self.log2e_fmt,
                f"δ x LOG2E product must fit {MAX_RAW_BITS} bits",
            )
            self._int_in("exp_frac_bits", 1, min(16, max(1, self.exp_arg_fmt.frac_bits)))
            self._int_in("exp_table_frac_bits", self.exp_fmt.frac_bits, 40)
            self._need(
                self.exp_arg_fmt.overflow.value.startswith("AP_SAT")
                and self.exp_arg_fmt.max >= self.exp_fmt.frac_bits + 2,
                "exp_arg_fmt",
                self.exp_arg_fmt,
                f"must saturate (AP_SAT) and reach t >= exp_fmt.frac_bits + 2 = "
                f"{self.exp_fmt.frac_bits + 2} so that clamped arguments give exp = 0",
            )
        else:
            self._int_in("exp_lut_int_bits", 0, 8)
            self._int_in("exp_lut_bits", 1, min(20, self.in_fmt.frac_bits + self.exp_lut_int_bits))

    # -- constants and tables --------------------------------------------------------
    @property
    def log2e_raw(self) -> int:
        """log2(e) as a raw ``log2e_fmt`` code."""
        return int(self.log2e_fmt.quantize(np.array([math.log2(math.e)]))[0])

    def _one_sum(self) -> int:
        return 1 << self.sum_fmt.frac_bits

    def tables(self) -> dict[str, RawArray]:
        """``exp2_table`` (base2, ``exp_table_frac_bits``) or ``exp_lut`` (lut, raw ``exp_fmt``),
        and ``recip_table`` (``recip_work_frac_bits`` fraction bits)."""
        out: dict[str, RawArray] = {}
        if self.exp_unit == "base2":
            out["exp2_table"] = intmath.exp2_frac_table(
                self.exp_frac_bits, self.exp_table_frac_bits, self.exp_fmt.rounding
            )
        else:
            s = self.in_fmt.frac_bits + self.exp_lut_int_bits - self.exp_lut_bits
            k = np.arange(1 << self.exp_lut_bits, dtype=np.float64)
            centre = (k * 2.0**s + (2.0**s - 1) / 2) * 2.0**-self.in_fmt.frac_bits
            out["exp_lut"] = self.exp_fmt.quantize(np.exp(-centre))
        wf, tb, mode = self.recip_work_frac_bits, self.recip_table_bits, self.recip_fmt.rounding
        if self.recip_unit == "lut":
            out["recip_table"] = intmath.recip_pwl_table(tb, wf, mode)
        else:
            out["recip_table"] = intmath.recip_seed_table(tb, wf, mode)
        return out

    def params(self) -> dict[str, int]:
        """Integer constants and widths (``*_RND`` = 1 for AP_RND, 0 for AP_TRN)."""
        p = {
            "IN_W": self.in_fmt.width,
            "IN_F": self.in_fmt.frac_bits,
            "TWO_PASS": int(self.schedule == "two_pass"),
            "EXP_UNIT_BASE2": int(self.exp_unit == "base2"),
            "EXP_W": self.exp_fmt.width,
            "EXP_F": self.exp_fmt.frac_bits,
            "EXP_RND": _rnd_flag(self.exp_fmt),
            "SUM_W": self.sum_fmt.width,
            "SUM_F": self.sum_fmt.frac_bits,
            "SUM_RND": _rnd_flag(self.sum_fmt),
            "SUM_ONE": self._one_sum(),
            "RECIP_W": self.recip_fmt.width,
            "RECIP_F": self.recip_fmt.frac_bits,
            "RECIP_RND": _rnd_flag(self.recip_fmt),
            "RECIP_NEWTON": int(self.recip_unit == "newton"),
            "RECIP_TABLE_BITS": self.recip_table_bits,
            "RECIP_WORK_F": self.recip_work_frac_bits,
            "NEWTON_STEPS": self.newton_steps,
            "OUT_W": self.out_fmt.width,
            "OUT_RND": _rnd_flag(self.out_fmt),
            "OUT_SAT": int(self.out_fmt.overflow.value == "AP_SAT"),
            "OUT_SIGNED": int(self.out_fmt.signed),
            "OUT_F": self.out_fmt.frac_bits,
        }
        if self.exp_unit == "base2":
            p |= {
                "LOG2E": self.log2e_raw,
                "LOG2E_W": self.log2e_fmt.width,
                "LOG2E_F": self.log2e_fmt.frac_bits,
                "T_W": self.exp_arg_fmt.width,
                "T_F": self.exp_arg_fmt.frac_bits,
                "T_RND": _rnd_flag(self.exp_arg_fmt),
                "EXP2_ADDR_BITS": self.exp_frac_bits,
                "EXP2_TABLE_F": self.exp_table_frac_bits,
                "EXP2_INTERP": int(self.exp_interp == "pwl"),
            }
        else:
            p |= {
                "EXP_LUT_BITS": self.exp_lut_bits,
                "EXP_LUT_INT_BITS": self.exp_lut_int_bits,
                "EXP_LUT_SHIFT": self.in_fmt.frac_bits + self.exp_lut_int_bits - self.exp_lut_bits,
            }
        return p

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """The hardware parameter set: the SV parameters of ``hwa_softmax_online`` (and its
        ``hwa_exp_unit``/``hwa_recip``) and the HLS config constants, one set.

        ``n`` is unused: the running sum is a ``sum_fmt`` value and rows are at
        most ``floor(sum_fmt.max)`` long (the model refuses longer rows), so
        ``d <= n·ONE < 2^SUM_W``. Codes ``*_RND``/``*_OVF`` are ``hwa_pkg``'s.

        ========= ======== =========================================================
        name      sign     value range -> bits
        ========= ======== =========================================================
        X_W       signed   an input code (``ap_ufixed`` zero-extended)
        DELTA_W   unsigned ``|x_j - m| <= 2^IN_W - 1``
        PROD_W    unsigned ``δ·LOG2E`` (base2), exact, before the cast to ``exp_arg_fmt``
        T_W       unsigned ``t`` (``exp_arg_fmt``); ``t >> T_F`` is the shift ``k``
        V_W       unsigned ``v = T[i]·2^G - (T[i] - T[i+1])·u`` with ``G = T_F - A``:
                           between ``T[i+1]·2^G`` and ``T[i]·2^G <= 2^(TABLE_F + G)``
        EXP_W     unsigned ``E = round(v / 2^(k + EXP2_SHIFT)) <= 2^EXP_F`` (exp_fmt)
        SUM_W     unsigned ``d`` (sum_fmt), at most ``n·ONE``
        RESCALE_W unsigned ``d·E`` (``E <= 1.0``: ``R_s(d·E) + ONE <= d + ONE``)
        RU_W      unsigned the mantissa ``U`` of ``d`` in ``[2^WF, 2^(WF+1))``
        RT_W      unsigned lut reciprocal: ``T[i]·2^RG - (T[i] - T[i+1])·w <= 2^(WF+RG)``
        RN_W      signed   Newton ``R`` (``<= 2^WF + 1``) and ``e = 2 - U·R``
                           (``<= 1.5·2^WF + 1``: the seed is ``> 0.5``)
        RP_W      signed   Newton products ``U·R``, ``R·e`` and ``2^(2·WF+1)``: ``< 2^(2·WF+2)``
        RS_W      signed   ``R`` shifted to ``R_F`` fraction bits (a left shift by up to
                           ``R_F - WF`` when ``R_F > WF``)
        RPRE_W    signed   ``1/d <= 1`` (``d >= ONE``) before recip_fmt's overflow:
                           ``< 2^(R_F+1)``
        OUTP_W    unsigned ``E·r``, the exact output product
        ========= ======== =========================================================
        """
        p = self.params()
        f_in, f_e, f_s = self.in_fmt.frac_bits, self.exp_fmt.frac_bits, self.sum_fmt.frac_bits
        f_r, wf, tb = self.recip_fmt.frac_bits, self.recip_work_frac_bits, self.recip_table_bits
        hw: dict[str, int] = {
            "IN_W": self.in_fmt.width,
            "IN_F": f_in,
            "X_W": raw_width(self.in_fmt),
            "OUT_W": self.out_fmt.width,
            "OUT_F": self.out_fmt.frac_bits,
            "OUT_SIGNED": int(self.out_fmt.signed),
            "OUT_RND": rounding_code(self.out_fmt.rounding),
            "OUT_OVF": overflow_code(self.out_fmt.overflow),
            "OUT_SHIFT": f_e + f_r - self.out_fmt.frac_bits,
            "TWO_PASS": p["TWO_PASS"],
            "BASE2": p["EXP_UNIT_BASE2"],
            "EXP_W": self.exp_fmt.width,
            "EXP_F": f_e,
            "EXP_RND": rounding_code(self.exp_fmt.rounding),
            "SUM_W": self.sum_fmt.width,
            "SUM_F": f_s,
            "SUM_RND": rounding_code(self.sum_fmt.rounding),
            "SUM_UP": f_s - f_e,
            "SUM_ONE": self._one_sum(),
            "R_W": self.recip_fmt.width,
            "R_F": f_r,
            "R_OVF": overflow_code(self.recip_fmt.overflow),
            "R_RND": rounding_code(self.recip_fmt.rounding),
            "WF": wf,
            "TB": tb,
            "NEWTON": p["RECIP_NEWTON"],
            "STEPS": self.newton_steps,
            "DELTA_W": self.in_fmt.width,
            "RESCALE_W": self.sum_fmt.width + self.exp_fmt.width,
            "RU_W": wf + 1,
            "RG": wf - tb,
            "RT_W": ubits(1 << (2 * wf - tb)),
            "RN_W": wf + 3,
            "RP_W": 2 * wf + 3,
            "RS_W": max(wf, f_r) + 3,
            "RPRE_W": f_r + 2,
            "OUTP_W": self.exp_fmt.width + self.recip_fmt.width,
        }
        if self.exp_unit == "base2":
            t_f, a = self.exp_arg_fmt.frac_bits, self.exp_frac_bits
            g = t_f - a
            hw |= {
                "LOG2E": self.log2e_raw,
                "LOG2E_W": self.log2e_fmt.width,
                "LOG2E_F": self.log2e_fmt.frac_bits,
                "PROD_SHIFT": f_in + self.log2e_fmt.frac_bits - t_f,
                "PROD_W": self.in_fmt.width + self.log2e_fmt.width,
                "T_W": self.exp_arg_fmt.width,
                "T_F": t_f,
                "T_RND": rounding_code(self.exp_arg_fmt.rounding),
                "A": a,
                "G": g,
                "TABLE_F": self.exp_table_frac_bits,
                "INTERP": p["EXP2_INTERP"],
                "V_W": ubits(1 << (self.exp_table_frac_bits + g)),
                "EXP2_SHIFT": self.exp_table_frac_bits + g - f_e,
            }
        else:
            hw |= {
                "LUT_BITS": self.exp_lut_bits,
                "LIM_BITS": f_in + self.exp_lut_int_bits,
                "LUT_SHIFT": f_in + self.exp_lut_int_bits - self.exp_lut_bits,
            }
        return hw

    # -- the datapath ------------------------------------------------------------------
    def exp_unit_raw(
        self, delta: npt.ArrayLike, tables: dict[str, RawArray] | None = None
    ) -> RawArray:
        """E(δ) = exp(-δ): raw non-negative δ (``in_fmt`` fraction bits) -> raw ``exp_fmt``."""
        dl = np.asarray(delta, dtype=np.int64)
        tabs = self.tables() if tables is None else tables
        if self.exp_unit == "lut":
            s = self.in_fmt.frac_bits + self.exp_lut_int_bits - self.exp_lut_bits
            limit = np.int64(1) << np.int64(self.in_fmt.frac_bits + self.exp_lut_int_bits)
            idx = np.minimum(dl, limit - 1) >> np.int64(s)
            return np.where(dl >= limit, np.int64(0), tabs["exp_lut"][idx])
        prod = dl * np.int64(self.log2e_raw)  # exact: F_in + LOG2E_F fraction bits
        prod_fmt = FixedFormat(
            self.in_fmt.width + 1 + self.log2e_fmt.width,
            self.in_fmt.int_bits + 1 + self.log2e_fmt.int_bits,
            signed=False,
        )
        t = cast(prod, prod_fmt, self.exp_arg_fmt)
        return intmath.exp2_neg(
            t,
            self.exp_arg_fmt.frac_bits,
            tabs["exp2_table"],
            self.exp_frac_bits,
            self.exp_fmt.frac_bits,
            self.exp_table_frac_bits,
            interp=self.exp_interp == "pwl",
            rounding=self.exp_fmt.rounding,
        )

    def _rescale(self, d: RawArray, e: RawArray) -> RawArray:
        """R_s(d · e): exact product rounded to ``sum_fmt`` (its rounding: AP_TRN or AP_RND)."""
        return intmath.round_shift_var(d * e, self.exp_fmt.frac_bits, self.sum_fmt.rounding)

    def _exp_memo(self) -> RawArray:
        """:meth:`exp_unit_raw` of every δ code in ``[0, 2^W_in)`` (every difference of
        two ``in_fmt`` codes), index δ. Only a speed-up."""
        return self.exp_unit_raw(np.arange(1 << self.in_fmt.width, dtype=np.int64))

    def _exp_fn(self, tabs: dict[str, RawArray]) -> Callable[[RawArray], RawArray]:
        """E as a function; for inputs of <= 20 bits a memo of E over every δ code."""
        if self.in_fmt.width <= _MEMO_MAX_BITS:
            memo = _cached(self, "_exp_memo")
            return lambda dl: memo[dl]  # type: ignore[no-any-return]
        return lambda dl: self.exp_unit_raw(dl, tabs)

    def row_state(
        self,
        x: RawArray,
        schedule: str | None = None,
        exp: Callable[[RawArray], RawArray] | None = None,
        mask: npt.ArrayLike | None = None,
    ) -> tuple[RawArray, RawArray]:
        """Per-row ``(m, d)`` after the whole row (raw ``in_fmt``, raw ``sum_fmt``).

        ``x`` is ``(R, N)`` raw codes; ``schedule`` overrides the spec's
        (``"online"`` or ``"two_pass"``); ``mask`` (bool, broadcastable to
        ``x``, True = masked out): masked elements leave the state untouched;
        a fully masked row reports the empty state as ``(in_fmt.min_raw, 0)``.
        """
        sched = self.schedule if schedule is None else schedule
        if sched not in ("online", "two_pass"):
            raise SpecError(f"schedule must be 'online' or 'two_pass', got {sched!r}")
        x = self.check_input(x)
        if x.ndim != 2 or x.shape[1] == 0:
            raise SpecError(f"row_state needs an (R, N >= 1) array, got shape {x.shape}")
        mk = None
        if mask is not None:
            mk = np.ascontiguousarray(_broadcast_mask(mask, x.shape))
            mk = mk if mk.any() else None
        narrow = exp is None and self._narrow()
        if exp is None:
            exp = self._exp_fn(_cached(self, "tables"))
        m, d, _ = self._row_state(x, sched, exp, narrow, mk)
        return m, d

    def _narrow(self) -> bool:
        """True when the stream precompute can use int32 exactly: memo inputs below 2^30
        (``|x_j - m|`` too) and ``E·up < 2^(exp_fmt.width + sum_f - exp_f) <= 2^30``."""
        return (
            self.in_fmt.width <= min(_MEMO_MAX_BITS, 29)
            and self.exp_fmt.width + self.sum_fmt.frac_bits - self.exp_fmt.frac_bits <= 30
        )

    def _row_state(
        self,
        x: RawArray,
        sched: str,
        exp: Callable[[RawArray], RawArray],
        narrow: bool = False,
        mask: npt.NDArray[np.bool_] | None = None,
    ) -> tuple[RawArray, RawArray, RawArray | None]:
        """:meth:`row_state` of checked ``(R, N >= 1)`` codes, plus ``E(m - x)`` (two_pass).

        The online recurrence runs element by element in stream order; only
        the parts that do not depend on ``d`` are computed for all elements at
        once: the running max ``m_j`` (a cumulative max), the flags ``x_j >
        m_(j-1)`` and ``E(|x_j - m_(j-1)|)``. The rescale ``R_s(d·e) + ONE``
        is ``((d·e [+ 2^(F_e-1)]) >> F_e) + ONE`` (AP_TRN [AP_RND]), which is
        :meth:`_rescale` plus ONE. ``narrow`` (:meth:`_narrow`, ``exp`` = the
        memo): the precompute in int32 (exact, less memory).
        """
        if mask is not None:
            return self._row_state_masked(x, sched, exp, narrow, mask)
        one = np.int64(self._one_sum())
        up = np.int64(1 << (self.sum_fmt.frac_bits - self.exp_fmt.frac_bits))
        if sched == "two_pass":
            m = x.max(axis=1)
            e = exp(m[:, None] - x)
            return m, (e * up).sum(axis=1), e
        rows, n = x.shape
        d = np.full(rows, one, dtype=np.int64)
        if n == 1:
            return x[:, 0].copy(), d, None
        x_t = x.T.astype(np.int32 if narrow else np.int64, order="C")  # (N, R), stream-major
        run_max = np.maximum.accumulate(x_t, axis=0)
        prev = run_max[:-1]
        xs = x_t[1:]
        new_t = xs > prev
        delta = xs - prev
        np.abs(delta, out=delta)
        e_t = _cached(self, "_exp_memo", True)[delta] if narrow else exp(delta)
        eup_t = e_t * int(up)
        fe = np.int64(self.exp_fmt.frac_bits)
        half = np.int64(1 << (self.exp_fmt.frac_bits - 1))
        rnd = self.sum_fmt.rounding is Rounding.RND
        t = np.empty(rows, dtype=np.int64)
        for j in range(n - 1):
            np.multiply(d, e_t[j], out=t)
            if rnd:
                t += half
            t >>= fe
            t += one
            d += eup_t[j]
            np.copyto(d, t, where=new_t[j])
        return run_max[-1].astype(np.int64), d, None

    def _row_state_masked(
        self,
        x: RawArray,
        sched: str,
        exp: Callable[[RawArray], RawArray],
        narrow: bool,
        mask: npt.NDArray[np.bool_],
    ) -> tuple[RawArray, RawArray, RawArray | None]:
        """:meth:`_row_state` with a ``(R, N)`` mask (True = masked out).

        The state starts empty: ``m`` below every code (``in_fmt.min_raw -
        1``, reported as ``min_raw``), ``d = 0``. Masked elements take the
        value ``min_raw - 1`` for the running max (never above it: ``m`` and
        the ``x_j > m`` flags are as if they were absent) and ``E = 0`` (``d``
        unchanged). The first unmasked element always takes the ``x_j > m``
        branch with ``d = 0``: ``R_s(0·E) + ONE = ONE``, the unmasked
        element-0 rule. Differences are clamped to ``2^W - 1`` (the memo
        range); only masked elements (``E`` forced to 0) and the first
        unmasked one (``E`` multiplies ``d = 0``) can exceed it.
        """
        one = np.int64(self._one_sum())
        up = np.int64(1 << (self.sum_fmt.frac_bits - self.exp_fmt.frac_bits))
        lo = self.in_fmt.min_raw
        if sched == "two_pass":
            m = np.where(mask, np.int64(lo), x).max(axis=1)
            dl = m[:, None] - x
            np.copyto(dl, 0, where=mask)
            e = exp(dl)
            np.copyto(e, 0, where=mask)
            return m, (e * up).sum(axis=1), e
        rows, n = x.shape
        x_t = x.T.astype(np.int32 if narrow else np.int64, order="C")  # (N, R), stream-major
        mask_t = np.ascontiguousarray(mask.T)
        np.copyto(x_t, lo - 1, where=mask_t)  # masked: below every code, never a new max
        run_max = np.maximum.accumulate(x_t, axis=0)
        prev = np.empty_like(run_max)  # m before each element (min_raw - 1 = empty)
        prev[0] = lo - 1
        prev[1:] = run_max[:-1]
        new_t = x_t > prev  # False at masked elements
        delta = x_t - prev
        np.abs(delta, out=delta)
        np.minimum(delta, (1 << self.in_fmt.width) - 1, out=delta)
        e_t = _cached(self, "_exp_memo", True)[delta] if narrow else exp(delta)
        np.copyto(e_t, 0, where=mask_t)
        eup_t = e_t * int(up)
        fe = np.int64(self.exp_fmt.frac_bits)
        half = np.int64(1 << (self.exp_fmt.frac_bits - 1))
        rnd = self.sum_fmt.rounding is Rounding.RND
        d = np.zeros(rows, dtype=np.int64)
        t = np.empty(rows, dtype=np.int64)
        for j in range(n):
            np.multiply(d, e_t[j], out=t)
            if rnd:
                t += half
            t >>= fe
            t += one
            d += eup_t[j]
            np.copyto(d, t, where=new_t[j])
        m = run_max[-1].astype(np.int64)
        np.maximum(m, lo, out=m)  # fully masked rows: the empty state, reported as min_raw
        return m, d, None

    def recip_raw(self, d: npt.ArrayLike, tables: dict[str, RawArray] | None = None) -> RawArray:
        """``r = 1/d``: raw ``sum_fmt`` codes (>= ONE) -> raw ``recip_fmt`` codes (saturated)."""
        tabs = self.tables() if tables is None else tables
        r = intmath.reciprocal(
            np.asarray(d, dtype=np.int64),
            self.sum_fmt.frac_bits,
            self.recip_fmt.frac_bits,
            unit=self.recip_unit,
            table=tabs["recip_table"],
            addr_bits=self.recip_table_bits,
            table_frac_bits=self.recip_work_frac_bits,
            work_frac_bits=self.recip_work_frac_bits,
            newton_steps=self.newton_steps,
            rounding=self.recip_fmt.rounding,
        )
        return self.recip_fmt.saturate(r)

    def _model_rows(
        self, x: RawArray, mask: npt.NDArray[np.bool_] | None = None, **kw: Any
    ) -> RawArray:
        n = x.shape[1]
        self._row_limit(n, int(self.sum_fmt.max), f"sum_fmt {self.sum_fmt}")
        tabs = _cached(self, "tables")
        exp = self._exp_fn(tabs)
        m, d, e = self._row_state(x, self.schedule, exp, self._narrow(), mask)
        if mask is not None:
            # only fully masked rows have d = 0 (unmasked rows: d >= ONE); their
            # outputs are 0 whatever r is, so any d > 0 stands in for the reciprocal
            np.copyto(d, np.int64(self._one_sum()), where=d == 0)
        r = self.recip_raw(d, tabs)
        if e is None and mask is None:
            e = exp(m[:, None] - x)
        elif e is None:
            dl = m[:, None] - x
            np.copyto(dl, 0, where=mask)
            e = exp(dl)
            np.copyto(e, 0, where=mask)
        prod_fmt = FixedFormat(
            self.exp_fmt.width + self.recip_fmt.width,
            self.exp_fmt.int_bits + self.recip_fmt.int_bits,
            signed=False,
        )
        e *= r[:, None]  # e is a fresh array
        return _zero_masked(_cast_prod(e, prod_fmt, self.out_fmt), mask)

    def cost(self) -> Cost:
        t = self.tables()
        tb = sum(len(v) * int(max(1, int(v.max()).bit_length())) for v in t.values())
        mults: list[tuple[int, int]] = [
            (self.sum_fmt.width, self.exp_fmt.width),
            (self.exp_fmt.width, self.recip_fmt.width),
        ]
        if self.exp_unit == "base2":
            mults.append((self.in_fmt.width + 1, self.log2e_fmt.width))
            if self.exp_interp == "pwl":
                mults.append(
                    (self.exp_table_frac_bits, self.exp_arg_fmt.frac_bits - self.exp_frac_bits)
                )
        return Cost(
            table_bits=tb,
            tables=len(t),
            multipliers=len(mults),
            mult_bits=tuple(mults),
            adders=3,
            widest_bits=max(a + b for a, b in mults),
            notes=(
                "per element: 2 exp evaluations (stream + output), rescale multiply, "
                "output multiply; per row: 1 reciprocal "
                f"({self.recip_unit}, {self.newton_steps if self.recip_unit == 'newton' else 0} "
                "Newton steps); row buffer of N inputs"
            ),
        )


# ======================================================================================
# Softermax
# ======================================================================================
@dataclass(frozen=True)
class SoftermaxSoftmax(SoftmaxSpec):
    """Softermax (Stevens et al., DAC 2021): base-2, integer running max, PWL units.

    The network is not fine-tuned for base 2 here, so the input is pre-scaled:
    ``t = R_t(x · LOG2E)`` (``log2e_fmt`` constant, cast to signed
    ``t_fmt``); softmax_e(x) = softmax_2(t).

    * **Pass 1** (streaming): integer running max ``M = max(M, floor(t_j))``
      (``t >> F_t``); ``d = (d >> (M_new - M_old)) + P(t_j - M_new)`` in
      ``sum_fmt`` (rescaling is a right shift, truncating);
      ``P(a) = 2^a`` for ``a < 1``: ``2^a = 2^-(1 - a)·2`` by
      :func:`~hwapprox.approx.intmath.exp2_neg` with a
      ``2^pow2_segments_log2``-segment PWL table of ``2^-f`` (equivalently a
      PWL of 2^f on [0, 1)), result rounded to ``pow2_fmt``.
    * **Reciprocal**: ``1/d`` by leading-one normalisation and a
      ``2^recip_segments_log2``-segment PWL of 1/u on [1, 2)
      (``recip_fmt``, its rounding).
    * **Pass 2**: ``y_i = cast_out(P(t_i - M) · (1/d))``.

    Q-formats are not published; the defaults here are chosen to reach about
    8-bit output accuracy at the paper's scale (16 segments each) and are
    fields. Not exactly shift-invariant: ``x·LOG2E`` is rounded before the max.

    Masks (:class:`SoftmaxSpec` contract): pass 1 starts empty (``M`` below
    every ``floor(t)``, ``d = 0``); a masked element leaves ``M`` and ``d``
    unchanged (it never raises ``M``, adds no ``P``), the first unmasked one
    gives ``d = (0 >> ·) + P = P``, the unmasked element-0 value. Masked
    outputs are 0; a fully masked row (``d = 0``; its reciprocal is not
    used) outputs all zeros.
    """

    method = "softermax"
    source = "Stevens et al., DAC 2021, Softermax"

    in_fmt: FixedFormat = _FIX16_6
    out_fmt: FixedFormat = _UFIX8_0_RND_SAT
    log2e_fmt: FixedFormat = _UFIX12_1_RND
    t_fmt: FixedFormat = _FIX18_8_RND_SAT
    pow2_fmt: FixedFormat = _UFIX16_1_RND
    pow2_segments_log2: int = 4
    pow2_table_frac_bits: int = 16
    sum_fmt: FixedFormat = _UFIX28_12_TRN
    recip_fmt: FixedFormat = _UFIX16_1_RND
    recip_segments_log2: int = 4
    recip_work_frac_bits: int = 16

    def validate(self) -> None:
        for f in ("log2e_fmt", "pow2_fmt", "sum_fmt", "recip_fmt"):
            fmt: FixedFormat = getattr(self, f)
            self._need(not fmt.signed, f, fmt, "must be unsigned (ap_ufixed)")
        for f in ("log2e_fmt", "t_fmt", "pow2_fmt", "sum_fmt", "recip_fmt", "out_fmt"):
            self._rounding_trn_rnd(f)
        self._need(
            self.out_fmt.overflow.value in ("AP_SAT", "AP_WRAP"),
            "out_fmt",
            self.out_fmt,
            "overflow must be AP_SAT or AP_WRAP",
        )
        self._need(
            self.t_fmt.overflow.value == "AP_SAT",
            "t_fmt",
            self.t_fmt,
            "overflow must be AP_SAT",
        )
        self._need(self.t_fmt.signed, "t_fmt", self.t_fmt, "must be signed (ap_fixed)")
        self._need(self.log2e_fmt.int_bits >= 1, "log2e_fmt", self.log2e_fmt, "int_bits >= 1")
        self._need(
            self.t_fmt.int_bits >= self.in_fmt.int_bits + 1,
            "t_fmt",
            self.t_fmt,
            f"needs int_bits >= in_fmt.int_bits + 1 = {self.in_fmt.int_bits + 1} to hold x·log2(e)",
        )
        self._need(self.t_fmt.frac_bits >= 1, "t_fmt", self.t_fmt, "frac_bits >= 1")
        self._need(
            self.pow2_fmt.int_bits >= 1,
            "pow2_fmt",
            self.pow2_fmt,
            "must hold 2^a < 2 (int_bits >= 1)",
        )
        self._need(
            self.sum_fmt.frac_bits >= self.pow2_fmt.frac_bits and self.sum_fmt.int_bits >= 2,
            "sum_fmt",
            self.sum_fmt,
            f"needs >= {self.pow2_fmt.frac_bits} fraction bits (pow2_fmt) and int_bits >= 2",
        )
        self._int_in("pow2_segments_log2", 0, min(12, self.t_fmt.frac_bits))
        self._int_in("pow2_table_frac_bits", self.pow2_fmt.frac_bits + 1, 40)
        self._int_in("recip_work_frac_bits", 2, 29)
        self._int_in("recip_segments_log2", 0, min(12, self.recip_work_frac_bits))
        self._need(
            self.recip_fmt.int_bits >= 1,
            "recip_fmt",
            self.recip_fmt,
            "must hold 1/d <= 1 (int_bits >= 1)",
        )
        self._need(
            self.pow2_fmt.width + self.recip_fmt.width <= MAX_RAW_BITS
            and self.in_fmt.width + self.log2e_fmt.width <= MAX_RAW_BITS,
            "pow2_fmt",
            self.pow2_fmt,
            f"products must fit {MAX_RAW_BITS} bits",
        )

    @property
    def log2e_raw(self) -> int:
        return int(self.log2e_fmt.quantize(np.array([math.log2(math.e)]))[0])

    def tables(self) -> dict[str, RawArray]:
        """``pow2_table`` (2^(-k/S), ``pow2_table_frac_bits``) and ``recip_table``
        (1/u end points, ``recip_work_frac_bits``)."""
        return {
            "pow2_table": intmath.exp2_frac_table(
                self.pow2_segments_log2, self.pow2_table_frac_bits, self.pow2_fmt.rounding
            ),
            "recip_table": intmath.recip_pwl_table(
                self.recip_segments_log2, self.recip_work_frac_bits, self.recip_fmt.rounding
            ),
        }

    def params(self) -> dict[str, int]:
        return {
            "IN_W": self.in_fmt.width,
            "IN_F": self.in_fmt.frac_bits,
            "LOG2E": self.log2e_raw,
            "LOG2E_F": self.log2e_fmt.frac_bits,
            "T_W": self.t_fmt.width,
            "T_F": self.t_fmt.frac_bits,
            "T_RND": _rnd_flag(self.t_fmt),
            "POW2_F": self.pow2_fmt.frac_bits,
            "POW2_RND": _rnd_flag(self.pow2_fmt),
            "POW2_ADDR_BITS": self.pow2_segments_log2,
            "POW2_TABLE_F": self.pow2_table_frac_bits,
            "SUM_W": self.sum_fmt.width,
            "SUM_F": self.sum_fmt.frac_bits,
            "RECIP_W": self.recip_fmt.width,
            "RECIP_F": self.recip_fmt.frac_bits,
            "RECIP_RND": _rnd_flag(self.recip_fmt),
            "RECIP_ADDR_BITS": self.recip_segments_log2,
            "RECIP_WORK_F": self.recip_work_frac_bits,
            "OUT_W": self.out_fmt.width,
            "OUT_F": self.out_fmt.frac_bits,
            "OUT_RND": _rnd_flag(self.out_fmt),
            "OUT_SAT": int(self.out_fmt.overflow.value == "AP_SAT"),
            "OUT_SIGNED": int(self.out_fmt.signed),
        }

    def _t(self, x: RawArray) -> RawArray:
        prod_fmt = FixedFormat(
            self.in_fmt.width + self.log2e_fmt.width + 1,
            self.in_fmt.int_bits + self.log2e_fmt.int_bits + 1,
        )
        return cast(x * np.int64(self.log2e_raw), prod_fmt, self.t_fmt)

    def _pow2_raw(self, a: RawArray, tab: RawArray) -> RawArray:
        """2^a for raw ``a`` (``t_fmt`` fraction bits), ``a < 1``: raw ``pow2_fmt``."""
        ft = self.t_fmt.frac_bits
        arg = (np.int64(1) << np.int64(ft)) - a  # 1 - a > 0
        return intmath.exp2_neg(
            arg,
            ft,
            tab,
            self.pow2_segments_log2,
            self.pow2_fmt.frac_bits + 1,
            self.pow2_table_frac_bits,
            interp=True,
            rounding=self.pow2_fmt.rounding,
        )

    def _pow2_memo(self) -> RawArray:
        """P of every code in ``[-(F_p + 2)·2^F_t, 2^F_t)`` (see :meth:`_pow2_fn`)."""
        ft = self.t_fmt.frac_bits
        lo = -(self.pow2_fmt.frac_bits + 2) << ft
        return self._pow2_raw(np.arange(lo, 1 << ft, dtype=np.int64), self.tables()["pow2_table"])

    def _pow2_fn(self, tab: RawArray, narrow: bool = False) -> Callable[[RawArray], RawArray]:
        """P as a function, through a memo over the arguments that can be non-zero.

        Only a speed-up, exact: for ``a <= -(F_p + 2)`` (``F_p =
        pow2_fmt.frac_bits``) the PWL value is below 2^-(F_p+2), a quarter LSB,
        and both AP_TRN and AP_RND give 0; so ``a`` is clamped there and the
        memo holds P of every code in ``[-(F_p + 2)·2^F_t, 2^F_t)``.
        ``tab`` must be this spec's ``pow2_table``; ``narrow``: int32 memo
        (for int32 arguments, see :meth:`_narrow`).
        """
        lo = -(self.pow2_fmt.frac_bits + 2) << self.t_fmt.frac_bits
        memo = _cached(self, "_pow2_memo", narrow)
        if memo[0] != 0:  # pragma: no cover - guaranteed by the bound above
            return lambda a: self._pow2_raw(a, tab)

        def pow2(a: RawArray) -> RawArray:
            a = np.maximum(a, lo)
            a -= lo
            return memo[a]  # type: ignore[no-any-return]

        return pow2

    def _t_memo(self) -> RawArray:
        """:meth:`_t` of every ``in_fmt`` code, index ``x - in_fmt.min_raw``. Only a speed-up."""
        return self._t(self.in_fmt.all_codes())

    def _narrow(self) -> bool:
        """True when pass 1 can run on int32 exactly: memo inputs, ``|t|``, ``M·2^F_t`` and
        ``t - M·2^F_t`` and the memo offset ``(F_p + 2)·2^F_t`` below 2^30,
        ``P·up < 2^(sum_fmt.frac_bits + 2) <= 2^30``."""
        return (
            self.in_fmt.width <= _MEMO_MAX_BITS
            and self.t_fmt.width <= 29
            and (self.pow2_fmt.frac_bits + 2) << self.t_fmt.frac_bits < 1 << 30
            and self.sum_fmt.frac_bits <= 28
        )

    def _model_rows(
        self, x: RawArray, mask: npt.NDArray[np.bool_] | None = None, **kw: Any
    ) -> RawArray:
        """Pass 1 runs element by element in stream order; the parts that do not
        depend on ``d`` (``t``, the running max ``M_j`` as a cumulative max, the
        shifts ``M_j - M_(j-1)`` and ``P(t_j - M_j)``) are computed for all
        elements at once (in int32 when :meth:`_narrow`: exact, less memory).

        ``mask``: masked elements take ``floor(t_min) - 1`` for the running
        max (below every unmasked value: no shift at them) and ``P = 0``
        (their P argument is set to 0 first, as it may lie above the memo);
        ``d`` starts at ``P_0`` = 0 when element 0 is masked, and ``0 >> s``
        stays 0 until the first unmasked element."""
        n = x.shape[1]
        self._row_limit(n, int(self.sum_fmt.max) // 2, f"sum_fmt {self.sum_fmt} (sum < 2N)")
        tabs = _cached(self, "tables")
        narrow = self._narrow()
        pow2 = self._pow2_fn(tabs["pow2_table"], narrow)
        ft = self.t_fmt.frac_bits  # Python ints keep int32 arrays int32
        if self.in_fmt.width <= _MEMO_MAX_BITS:
            t_memo = _cached(self, "_t_memo", narrow)
            t = t_memo[x - np.int64(self.in_fmt.min_raw)]
        else:
            t = self._t(x)
        up = 1 << (self.sum_fmt.frac_bits - self.pow2_fmt.frac_bits)
        t_t = np.ascontiguousarray(t.T)  # (N, R), stream-major
        run_m = t_t >> ft
        mask_t = None if mask is None else np.ascontiguousarray(mask.T)
        if mask_t is not None:
            np.copyto(run_m, (self.t_fmt.min_raw >> ft) - 1, where=mask_t)
        np.maximum.accumulate(run_m, axis=0, out=run_m)  # M after each element
        p_t = run_m << ft
        np.subtract(t_t, p_t, out=p_t)
        if mask_t is not None:
            np.copyto(p_t, 0, where=mask_t)
        p_t = pow2(p_t)
        if mask_t is not None:
            np.copyto(p_t, 0, where=mask_t)
        p_t *= up
        d = p_t[0].astype(np.int64)
        if n > 1:
            sh_t = run_m[1:] - run_m[:-1]
            np.minimum(sh_t, 62, out=sh_t)
            for j in range(1, n):
                d >>= sh_t[j - 1]
                d += p_t[j]
        big_m = run_m[-1]
        if mask is not None:
            # only fully masked rows have d = 0 (unmasked rows hold a P >= 1.0);
            # their outputs are 0 whatever r is
            np.copyto(d, np.int64(1 << self.sum_fmt.frac_bits), where=d == 0)
        r = intmath.reciprocal(
            d,
            self.sum_fmt.frac_bits,
            self.recip_fmt.frac_bits,
            unit="lut",
            table=tabs["recip_table"],
            addr_bits=self.recip_segments_log2,
            table_frac_bits=self.recip_work_frac_bits,
            work_frac_bits=self.recip_work_frac_bits,
            newton_steps=0,
            rounding=self.recip_fmt.rounding,
        )
        r = self.recip_fmt.saturate(r)
        if mask is None:
            p = pow2(t - (big_m[:, None] << ft))
        else:
            a = t - (big_m[:, None] << ft)
            np.copyto(a, 0, where=mask)
            p = pow2(a)
            np.copyto(p, 0, where=mask)
        prod_fmt = FixedFormat(
            self.pow2_fmt.width + self.recip_fmt.width,
            self.pow2_fmt.int_bits + self.recip_fmt.int_bits,
            signed=False,
        )
        p = np.multiply(p, r[:, None], dtype=np.int64)
        return _zero_masked(_cast_prod(p, prod_fmt, self.out_fmt), mask)

    def cost(self) -> Cost:
        tabs = self.tables()
        tb = sum(len(v) * int(max(1, int(v.max()).bit_length())) for v in tabs.values())
        mults = (
            (self.in_fmt.width, self.log2e_fmt.width),
            (self.pow2_table_frac_bits, self.t_fmt.frac_bits - self.pow2_segments_log2),
            (self.pow2_fmt.width, self.recip_fmt.width),
        )
        return Cost(
            table_bits=tb,
            tables=2,
            multipliers=len(mults),
            mult_bits=mults,
            adders=4,
            widest_bits=max(a + b for a, b in mults),
            notes="per element: log2e multiply, PWL 2^x (1 mult), shift-rescale, output multiply; "
            "per row: PWL reciprocal",
        )
