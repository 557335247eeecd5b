"""hls4ml 1.3 softmax baselines (``softmax_stable``, ``softmax_latency``): exp and
inverse look-up tables, bit-exact with ``nnet_activation.h``.

Registry names ``hls4ml_stable`` / ``hls4ml_latency``
(:class:`Hls4mlStableSoftmax`, :class:`Hls4mlLatencySoftmax`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox.approx.base import Cost, RawArray
from hwapprox.approx.softmax._common import (
    _FIX16_6,
    _FIX18_8_RND_SAT,
    _MEMO_MAX_BITS,
    SoftmaxSpec,
    _cached,
    _cast_prod,
    _max_minus,
    _saturate_fresh,
    _zero_masked,
)
from hwapprox.fixed import MAX_RAW_BITS, FixedFormat, Overflow, cast


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
            self._require(
                fmt.width <= 24, f, fmt, "hls4ml baseline formats must be <= 24 bits wide"
            )
        self._require(
            self.accum_fmt.width + self.inv_table_fmt.width <= MAX_RAW_BITS,
            "accum_fmt",
            self.accum_fmt,
            f"accum x inv_table product must fit {MAX_RAW_BITS} bits",
        )
        self._require(
            isinstance(self.exp_scale, float | int) and math.isfinite(self.exp_scale),
            "exp_scale",
            self.exp_scale,
            "must be a finite number",
        )
        na = self.exp_table_size.bit_length() - 1
        addr = self.exp_addr_fmt
        self._require(
            na <= addr.width,
            "exp_table_size",
            self.exp_table_size,
            f"needs {na} address bits but the addressing type {addr} has {addr.width}",
        )
        ni = self.inv_table_size.bit_length() - 1
        self._require(
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
            **self._log_code_params(),
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
