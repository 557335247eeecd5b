"""Exact fixed-point models of the linear layers of a transformer block.

These are not approximations: they state exactly what the HLS C++ in
``hwapprox/hls/include/hwapprox/linear.h`` computes, so that a whole encoder
block can be modelled bit for bit in Python.

* :class:`MatMulSpec` -- ``Y = A·B (+ bias)``: dense layers (MatMul/Gemm with
  constant weights) and activation×activation products (``Q·Kᵀ``, ``P·V``).
  Each product ``a·b`` is exact (``ap_fixed<Wa+Wb, Ia+Ib>``); the accumulator
  starts at ``bias`` cast to ``accum_fmt`` (or 0) and after every term is
  ``acc = accum_fmt(acc + a·b)`` -- the exact sum rounded with
  ``accum_fmt.rounding`` and overflowed with ``accum_fmt.overflow``, in
  ascending ``k``; the output is ``out_fmt(acc)``. With a saturating or
  rounding accumulator the order matters; it is fixed (``k = 0, 1, ...``).
* :class:`AddSpec` -- residual add ``y = out_fmt(a + b)`` (exact sum, one cast).
* :class:`MulSpec` -- elementwise product ``y = out_fmt(a·b)`` (exact product, one
  cast): the gate of a gated FFN, ``SiLU(x·Wg) ⊙ (x·Wu)``.
* :class:`RotarySpec` -- the rotary position embedding of one head,
  ``y = out_fmt(x ⊙ cos + rotate_half(x) ⊙ sin)`` (exact products and sum, one cast).

Examples
--------
>>> mm = MatMulSpec("ap_fixed<8,3>", "ap_fixed<8,2>", "ap_fixed<20,8>",
...                 "ap_fixed<10,4,AP_RND,AP_SAT>")
>>> a = mm.a_fmt.quantize([[1.0, 0.25]])
>>> b = mm.b_fmt.quantize([[0.5], [1.0]])
>>> mm.out_fmt.to_float(mm.model(a, b)).tolist()
[[0.75]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hwapprox.approx import _kernels
from hwapprox.approx.base import SpecError
from hwapprox.fixed import FixedFormat, FixedPointError, Rounding, add, cast, mul

__all__ = ["AddSpec", "MatMulSpec", "MulSpec", "RotarySpec"]

RawArray = npt.NDArray[np.int64]


def _parse(name: str, value: FixedFormat | str) -> FixedFormat:
    try:
        return FixedFormat.parse(value)
    except FixedPointError as exc:
        raise SpecError(f"{name}: {exc}") from None


def _check(fmt: FixedFormat, raw: npt.ArrayLike, name: str) -> RawArray:
    try:
        return fmt.check(raw, name)
    except FixedPointError as exc:
        raise SpecError(str(exc)) from None


@dataclass(frozen=True)
class MatMulSpec:
    """``Y[.., i, j] = out_fmt(acc_K)``, ``acc_{k+1} = accum_fmt(acc_k + A[.., i, k]·B[.., k, j])``.

    Formats may be given in HLS spelling (``"ap_fixed<16,6>"``); they are
    parsed on construction.

    ``acc_0 = accum_fmt(bias[j])`` when a bias is given (raw codes of
    ``bias_fmt``), else 0. ``transpose_b`` takes ``B`` as ``[..., N, K]``
    (``Q·Kᵀ`` with K stored row-major per key). Leading axes broadcast (heads).
    """

    a_fmt: FixedFormat
    b_fmt: FixedFormat
    accum_fmt: FixedFormat
    out_fmt: FixedFormat
    bias_fmt: FixedFormat | None = None
    transpose_b: bool = False

    def __post_init__(self) -> None:
        for name in ("a_fmt", "b_fmt", "accum_fmt", "out_fmt"):
            object.__setattr__(self, name, _parse(f"MatMulSpec.{name}", getattr(self, name)))
        if self.bias_fmt is not None:
            object.__setattr__(self, "bias_fmt", _parse("MatMulSpec.bias_fmt", self.bias_fmt))
        # a·b and acc + a·b must be exact on the int64 raw path.
        try:
            add(0, self.accum_fmt, 0, self.product_fmt)
        except FixedPointError as exc:
            raise SpecError(
                f"MatMulSpec: accumulator too wide for the exact model: {exc}"
            ) from None

    @property
    def product_fmt(self) -> FixedFormat:
        """Exact format of one product ``a·b``."""
        a, b = self.a_fmt, self.b_fmt
        return mul(0, a, 0, b)[1]

    def model(
        self, a: npt.ArrayLike, b: npt.ArrayLike, bias: npt.ArrayLike | None = None
    ) -> RawArray:
        """Raw ``A`` ``[..., M, K]`` × raw ``B`` ``[..., K, N]`` -> raw ``Y`` ``[..., M, N]``."""
        af, bf, accf, outf = self.a_fmt, self.b_fmt, self.accum_fmt, self.out_fmt
        ra = _check(af, a, "MatMul input A")
        rb = _check(bf, b, "MatMul input B")
        if ra.ndim < 2 or rb.ndim < 2:
            raise SpecError(
                f"MatMul needs A [..., M, K] and B [..., K, N]; got shapes {ra.shape}, {rb.shape}"
            )
        if self.transpose_b:
            rb = np.swapaxes(rb, -1, -2)
        if ra.shape[-1] != rb.shape[-2]:
            raise SpecError(
                f"MatMul inner sizes differ: A {ra.shape} has K={ra.shape[-1]}, "
                f"B {'(transposed) ' if self.transpose_b else ''}{rb.shape} has K={rb.shape[-2]}"
            )
        lead = np.broadcast_shapes(ra.shape[:-2], rb.shape[:-2])
        out_shape = (*lead, ra.shape[-2], rb.shape[-1])
        if bias is None:
            acc = np.zeros(out_shape, dtype=np.int64)
        else:
            if self.bias_fmt is None:
                raise SpecError("MatMul bias given but bias_fmt is None; set bias_fmt")
            bfmt = self.bias_fmt
            rbias = _check(bfmt, bias, "MatMul bias")
            if rbias.shape != (rb.shape[-1],):
                raise SpecError(f"MatMul bias must have shape ({rb.shape[-1]},), got {rbias.shape}")
            acc = np.broadcast_to(cast(rbias, bfmt, accf), out_shape).copy()
        fast = self._sum_fast(ra, rb, acc)
        if fast is None:
            fast = self._sum_loop(ra, rb, acc)
        return cast(fast, accf, outf)

    def _sum_loop(self, ra: RawArray, rb: RawArray, acc: RawArray) -> RawArray:
        """The accumulator after ``k = 0, 1, ...``, one cast per step (the contract)."""
        af, bf, accf = self.a_fmt, self.b_fmt, self.accum_fmt
        for k in range(ra.shape[-1]):
            p, pf = mul(ra[..., :, k : k + 1], af, rb[..., k : k + 1, :], bf)
            s, sf = add(acc, accf, p, pf)
            acc = cast(s, sf, accf)
        return acc

    def _sum_fast(self, ra: RawArray, rb: RawArray, acc0: RawArray) -> RawArray | None:
        """The same accumulator without the per-step loop, where that is exact; else None.

        Each step is ``acc + R(p_k)`` (``p_k`` on the product grid, ``R`` the
        accumulator's rounding to its grid ``d`` bits coarser) while nothing
        saturates. For ``R`` = floor (AP_TRN), half up (AP_RND) or half down
        (AP_RND_MIN_INF), ``R(n + x) = n + R(x)`` for an integer ``n`` (the accumulator
        is on its grid), so ``acc_K = acc_0 + Σ_k R(p_k)`` in any order: one integer
        matrix product when ``d <= 0`` (no rounding), else the rounded products summed
        in blocks of keys. No partial sum saturates when ``|acc_0| + Σ_k |R(p_k)|``
        fits the accumulator (bounded by ``(|A|·|B|) >> d + K``); otherwise (or for
        another rounding mode) None, and the loop runs."""
        accf = self.accum_fmt
        d = self.product_fmt.frac_bits - accf.frac_bits
        half = {Rounding.TRN: 0, Rounding.RND: 1, Rounding.RND_MIN_INF: 2}.get(accf.rounding)
        if d > 0 and half is None:
            return None
        n_k = ra.shape[-1]
        # the bound in float64: exact products of < 2^32 each, a relative error of about
        # K·2^-53 on the sum, far below the margin of one code per key added below
        mag = np.matmul(np.abs(ra).astype(np.float64), np.abs(rb).astype(np.float64))
        bound = np.abs(acc0) + np.ldexp(mag, -d) * (1 + 1e-9) + n_k + 1
        if not (bound <= min(accf.max_raw, -accf.min_raw)).all():
            return None
        if d <= 0:
            if float(mag.max(initial=0.0)) < 2.0**52:  # the float64 product is exact
                total = np.matmul(ra.astype(np.float64), rb.astype(np.float64)).astype(np.int64)
            else:
                total = np.matmul(ra, rb)
            return acc0 + (total << np.int64(-d))
        h = np.int64(0 if half == 0 else (1 << (d - 1)) - (half == 2))
        acc = np.array(acc0, dtype=np.int64, copy=True)
        if _kernels.available():  # compiled: one pass, no product tensor
            lead, (m, n) = acc.shape[:-2], acc.shape[-2:]
            a3 = np.ascontiguousarray(np.broadcast_to(ra, (*lead, m, n_k)).reshape(-1, m, n_k))
            bt = np.swapaxes(np.broadcast_to(rb, (*lead, n_k, n)), -1, -2)
            b3 = np.ascontiguousarray(bt.reshape(-1, n, n_k))
            acc3 = acc.reshape(-1, m, n)
            _kernels.rounded_dot_sums(a3, b3, acc3, int(h), int(d))
            return acc3.reshape(acc.shape)
        step = max(1, (1 << 22) // max(1, acc.size))  # products per block: ~4M elements
        for k0 in range(0, n_k, step):
            k1 = min(n_k, k0 + step)
            p = ra[..., :, k0:k1, None] * rb[..., None, k0:k1, :]  # [..., M, kb, N], exact
            acc += ((p + h) >> np.int64(d)).sum(axis=-2)
        return acc


@dataclass(frozen=True)
class AddSpec:
    """Residual add: ``y = out_fmt(a + b)``, the exact sum cast once."""

    a_fmt: FixedFormat
    b_fmt: FixedFormat
    out_fmt: FixedFormat

    def __post_init__(self) -> None:
        for name in ("a_fmt", "b_fmt", "out_fmt"):
            object.__setattr__(self, name, _parse(f"AddSpec.{name}", getattr(self, name)))

    def model(self, a: npt.ArrayLike, b: npt.ArrayLike) -> RawArray:
        """Raw ``a`` + raw ``b`` (same shape) -> raw ``out_fmt`` codes."""
        af, bf, outf = self.a_fmt, self.b_fmt, self.out_fmt
        ra = _check(af, a, "Add input a")
        rb = _check(bf, b, "Add input b")
        if ra.shape != rb.shape:
            raise SpecError(f"Add inputs differ in shape: {ra.shape} vs {rb.shape}")
        try:
            s, sf = add(ra, af, rb, bf)
        except FixedPointError as exc:
            raise SpecError(str(exc)) from None
        return cast(s, sf, outf)


@dataclass(frozen=True)
class MulSpec:
    """Elementwise product: ``y = out_fmt(a·b)``, the exact product cast once."""

    a_fmt: FixedFormat
    b_fmt: FixedFormat
    out_fmt: FixedFormat

    def __post_init__(self) -> None:
        for name in ("a_fmt", "b_fmt", "out_fmt"):
            object.__setattr__(self, name, _parse(f"MulSpec.{name}", getattr(self, name)))

    def model(self, a: npt.ArrayLike, b: npt.ArrayLike) -> RawArray:
        """Raw ``a`` ⊙ raw ``b`` (same shape) -> raw ``out_fmt`` codes."""
        ra = _check(self.a_fmt, a, "Mul input a")
        rb = _check(self.b_fmt, b, "Mul input b")
        if ra.shape != rb.shape:
            raise SpecError(f"Mul inputs differ in shape: {ra.shape} vs {rb.shape}")
        try:
            p, pf = mul(ra, self.a_fmt, rb, self.b_fmt)
        except FixedPointError as exc:
            raise SpecError(str(exc)) from None
        return cast(p, pf, self.out_fmt)


@dataclass(frozen=True)
class RotarySpec:
    """Rotary position embedding (RoFormer; Llama's ``apply_rotary_pos_emb``) of one
    head, ``x`` ``[..., S, d]`` (``d`` even) with tables ``cos``, ``sin`` ``[S, d]``::

        r = rotate_half(x) = concat(-x[..., d/2:], x[..., :d/2])
        y = out_fmt(x·cos + r·sin)       (both products and their sum exact, one cast)

    ``-x`` is exact (one more integer bit, as the sum's format has). The tables are
    codes of ``cs_fmt`` (cos and sin of the position angles, in [-1, 1])."""

    x_fmt: FixedFormat
    cs_fmt: FixedFormat
    out_fmt: FixedFormat

    def __post_init__(self) -> None:
        for name in ("x_fmt", "cs_fmt", "out_fmt"):
            object.__setattr__(self, name, _parse(f"RotarySpec.{name}", getattr(self, name)))
        xf = self.x_fmt
        try:
            p, pf = mul(0, xf, 0, self.cs_fmt)
            q, qf = mul(0, FixedFormat(xf.width + 1, xf.int_bits + 1, True), 0, self.cs_fmt)
            add(p, pf, q, qf)
        except FixedPointError as exc:
            raise SpecError(f"RotarySpec: too wide for the exact model: {exc}") from None

    def model(self, x: npt.ArrayLike, cos: npt.ArrayLike, sin: npt.ArrayLike) -> RawArray:
        """Raw ``x`` ``[..., S, d]`` and raw tables ``[S, d]`` -> raw ``out_fmt`` codes."""
        rx = _check(self.x_fmt, x, "rotary input")
        rc = _check(self.cs_fmt, cos, "rotary cos table")
        rs = _check(self.cs_fmt, sin, "rotary sin table")
        if rx.ndim < 2 or rx.shape[-1] % 2 or rc.shape != rx.shape[-2:] or rs.shape != rc.shape:
            raise SpecError(
                f"rotary: x must be [..., S, d] with d even and the tables [S, d]; got x "
                f"{rx.shape}, cos {rc.shape}, sin {rs.shape}"
            )
        h = rx.shape[-1] // 2
        rot = np.concatenate([-rx[..., h:], rx[..., :h]], axis=-1)
        p1, f1 = mul(rx, self.x_fmt, rc, self.cs_fmt)
        xf = self.x_fmt
        neg = FixedFormat(xf.width + 1, xf.int_bits + 1, True)  # -x: one more integer bit
        p2, f2 = mul(rot, neg, rs, self.cs_fmt)
        s, sf = add(p1, f1, p2, f2)
        return cast(s, sf, self.out_fmt)
