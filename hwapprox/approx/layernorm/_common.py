"""LayerNorm models' shared parts: the base spec (fields, γ/β, the float64
reference), the fixed-point affine output stage :func:`affine_out` and small exact
integer helpers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox.approx import _kernels
from hwapprox.approx.base import Operator, RowwiseSpec, SpecError, require
from hwapprox.fixed import (
    FixedFormat,
    FixedPointError,
    Overflow,
    Rounding,
    round_shift,
)

RawArray = npt.NDArray[np.int64]

_FIX16_6 = FixedFormat.parse("ap_fixed<16,6>")  # hls4ml's default model precision
_OUT16_4 = FixedFormat.parse("ap_fixed<16,4,AP_RND,AP_SAT>")
_HLS4ML_TABLE_T = FixedFormat.parse("ap_ufixed<8,5,AP_RND_CONV,AP_SAT>")


def _clog2(n: int) -> int:
    """ceil(log2(n)) for n >= 1."""
    return (n - 1).bit_length()


# -- shared output stage -----------------------------------------------------------------
def affine_out(
    z: RawArray,
    z_frac: int,
    gamma: RawArray | None,
    gamma_fmt: FixedFormat,
    beta: RawArray | None,
    beta_fmt: FixedFormat,
    out_fmt: FixedFormat,
) -> RawArray:
    """``out = cast<out_fmt>(Z·γ + β)`` with one rounding (``out_fmt`` modes).

    ``Z`` has ``z_frac`` fraction bits; the exact sum ``acc = Z·G + (B <<
    (z_frac + F_γ - F_β))`` has ``F_acc = z_frac + F_γ`` fraction bits (``F_β
    <= F_acc`` is validated by the specs); then ``round_shift(acc, F_acc -
    F_out, out_fmt.rounding)`` and ``out_fmt``'s overflow mode. ``gamma=None``
    is raw 1.0 (``G = 2^F_γ``) and ``beta=None`` raw 0; with both None the
    result is computed as ``round_shift(Z, z_frac - F_out)``, which is the same
    integer (the dropped bits of ``Z·2^F_γ`` are those of ``Z``, shifted).
    ``z`` may be overwritten.
    """
    f_acc = z_frac + gamma_fmt.frac_bits
    args = _affine_kernel_args(z, z_frac, gamma, gamma_fmt, beta, beta_fmt, out_fmt)
    if args is not None:  # one compiled pass, the same integers (tests/test_model_fastpath.py)
        out = np.empty_like(z)
        _kernels.affine_rows(z, *args, out)
        return out
    if gamma is None and beta is None:
        return _requant(z, z_frac - out_fmt.frac_bits, out_fmt)
    acc = z << np.int64(gamma_fmt.frac_bits) if gamma is None else z * gamma
    if beta is not None:
        acc += beta << np.int64(f_acc - beta_fmt.frac_bits)
    return _requant(acc, f_acc - out_fmt.frac_bits, out_fmt)


_NO_VEC = np.zeros(1, dtype=np.int64)


def _affine_kernel_args(
    z: RawArray,
    z_frac: int,
    gamma: RawArray | None,
    gamma_fmt: FixedFormat,
    beta: RawArray | None,
    beta_fmt: FixedFormat,
    out_fmt: FixedFormat,
) -> tuple[Any, ...] | None:
    """The arguments ``(g, has_g, g_sh, b, has_b, b_sh, shift, half, lo, hi, wrap)`` of
    :func:`hwapprox.approx._kernels.affine_rows` for :func:`affine_out`, or None where
    the kernel does not apply (no numba; ``z`` not a C-contiguous int64 ``(R, N)``;
    an output cast other than a right shift with :func:`_cast_modes`)."""
    modes = _cast_modes(out_fmt)
    if not (z.ndim == 2 and z.dtype == np.int64 and z.flags.c_contiguous and modes):
        return None
    if gamma is None and beta is None:
        g_sh, b_sh, shift = 0, 0, z_frac - out_fmt.frac_bits
    else:
        f_acc = z_frac + gamma_fmt.frac_bits
        g_sh, b_sh = gamma_fmt.frac_bits, f_acc - beta_fmt.frac_bits
        shift = f_acc - out_fmt.frac_bits
    if not (0 < shift < 63 and 0 <= g_sh < 63 and 0 <= b_sh < 63):
        return None
    half = 1 << (shift - 1) if out_fmt.rounding is Rounding.RND else 0
    g = _NO_VEC if gamma is None else np.ascontiguousarray(gamma, dtype=np.int64)
    b = _NO_VEC if beta is None else np.ascontiguousarray(beta, dtype=np.int64)
    return (g, gamma is not None, g_sh, b, beta is not None, b_sh, shift, half, *modes)


def _cast_modes(fmt: FixedFormat) -> tuple[int, int, int] | None:
    """``(lo, hi, wrap)`` of a compiled output cast into ``fmt`` (AP_TRN / AP_RND with
    AP_SAT: clip to ``[lo, hi]``, ``wrap = 0``; with signed AP_WRAP: ``wrap = 64 - W``),
    or None (other modes, or no numba): :func:`_requant`'s in-place fast paths."""
    if fmt.rounding not in (Rounding.TRN, Rounding.RND) or not _kernels.available():
        return None
    if fmt.overflow is Overflow.SAT:
        return fmt.min_raw, fmt.max_raw, 0
    if fmt.overflow is Overflow.WRAP and fmt.signed and fmt.width < 64:
        return fmt.min_raw, fmt.max_raw, 64 - fmt.width
    return None


def _requant(x: RawArray, shift: int, fmt: FixedFormat) -> RawArray:
    """``fmt.saturate(round_shift(x, shift, fmt.rounding))``; ``x`` may be overwritten.

    In-place fast paths for ``AP_TRN`` (floor) and ``AP_RND`` (add half, floor)
    followed by ``AP_SAT`` (clip) or signed ``AP_WRAP`` (sign-extend bit W-1);
    every other combination uses :func:`hwapprox.fixed.round_shift` and
    :meth:`FixedFormat.saturate`.
    """
    if not (shift > 0 and fmt.rounding in (Rounding.TRN, Rounding.RND)):
        return fmt.saturate(round_shift(x, shift, fmt.rounding))
    if fmt.rounding is Rounding.RND:
        x += np.int64(1 << (shift - 1))
    x >>= np.int64(shift)
    if fmt.overflow is Overflow.SAT:
        return np.clip(x, fmt.min_raw, fmt.max_raw, out=x)
    if fmt.overflow is Overflow.WRAP and fmt.signed:
        w = np.int64(64 - fmt.width)
        x <<= w
        x >>= w
        return x
    return fmt.saturate(x)


def _round_half_up_shift(x: RawArray, sh: RawArray) -> RawArray:
    """``round(x / 2^sh)`` with ties toward +inf (``AP_RND``); ``sh <= 0`` shifts left exactly."""
    pos = np.maximum(sh, 0)
    half = np.where(pos > 0, np.left_shift(np.int64(1), np.maximum(pos - 1, 0)), 0)
    if int(np.min(sh)) >= 0:  # the usual case: one add and one shift, in place
        x += half
        x >>= pos
        return x
    return np.where(pos > 0, (x + half) >> pos, x << np.maximum(-sh, 0))


# -- base class --------------------------------------------------------------------------
@dataclass(frozen=True)
class _LayerNormSpec(RowwiseSpec):
    """Common fields, gamma/beta handling and the float64 reference."""

    operator: ClassVar[Operator] = Operator.LAYERNORM
    center: ClassVar[bool] = True  # False: RMSNorm (no mean)

    in_fmt: FixedFormat = _FIX16_6
    out_fmt: FixedFormat = _OUT16_4
    gamma_fmt: FixedFormat = _FIX16_6
    beta_fmt: FixedFormat = _FIX16_6
    eps: float = 1e-5

    def validate(self) -> None:
        name = type(self).__name__
        require(
            not isinstance(self.eps, bool) and isinstance(self.eps, int | float),
            f"{name}.eps must be a real number, got {self.eps!r}",
        )
        require(
            math.isfinite(self.eps) and self.eps >= 0,
            f"{name}.eps={self.eps!r} must be finite and >= 0",
        )
        for fname in ("in_fmt", "out_fmt", "gamma_fmt", "beta_fmt"):
            fmt = getattr(self, fname)
            require(
                fmt.width <= 32,
                f"{name}.{fname}={fmt} is {fmt.width} bits wide; LayerNorm specs "
                f"support at most 32 bits per operand",
            )

    # -- gamma / beta -------------------------------------------------------------
    def _affine_raw(
        self, n: int, gamma: npt.ArrayLike | None, beta: npt.ArrayLike | None
    ) -> tuple[RawArray | None, RawArray | None]:
        """Validated raw gamma/beta of length n; None stays None (= raw 1.0 / 0.0)."""
        if gamma is None:
            one = 1 << self.gamma_fmt.frac_bits if self.gamma_fmt.frac_bits >= 0 else None
            require(
                one is not None and one <= self.gamma_fmt.max_raw,
                lambda: (
                    f"gamma=None means 1.0, which {self.gamma_fmt} (gamma_fmt) cannot hold; "
                    f"pass gamma codes explicitly or widen gamma_fmt"
                ),
            )
            g = None
        else:
            g = self._check_vec(gamma, n, self.gamma_fmt, "gamma")
        b = None if beta is None else self._check_vec(beta, n, self.beta_fmt, "beta")
        return g, b

    def _check_vec(self, v: npt.ArrayLike, n: int, fmt: FixedFormat, what: str) -> RawArray:
        arr = np.asarray(v)
        require(
            arr.ndim == 1 and arr.shape[0] == n,
            lambda: (
                f"{what} must be a 1-D array of {n} raw {fmt} codes (the row length), "
                f"got shape {arr.shape}"
            ),
        )
        try:
            return fmt.check(arr, f"{what}")
        except FixedPointError as exc:
            raise SpecError(str(exc)) from None

    def model(
        self,
        raw: npt.ArrayLike,
        axis: int = -1,
        gamma: npt.ArrayLike | None = None,
        beta: npt.ArrayLike | None = None,
    ) -> RawArray:
        """Raw ``in_fmt`` codes -> raw ``out_fmt`` codes, normalised along ``axis``."""
        return super().model(raw, axis=axis, gamma=gamma, beta=beta)

    def reference(
        self,
        x: npt.ArrayLike,
        axis: int = -1,
        gamma: npt.ArrayLike | None = None,
        beta: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.float64]:
        """Float64 LayerNorm (RMSNorm for :class:`RmsNorm`) along ``axis``, population variance."""
        a = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
        n = a.shape[-1]
        require(n > 0, lambda: f"layernorm/{self.method}: rows of length 0 (shape {a.shape})")
        if self.center:
            c = a - a.mean(axis=-1, keepdims=True)
            y = c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + self.eps)
        else:
            # pRMSNorm (Zhang & Sennrich 2019): the RMS of the first k = ceil(p·n) (or k)
            k = self.stat_count(n) if hasattr(self, "stat_count") else n
            head = a[..., : min(k, n)]
            y = a / np.sqrt((head * head).mean(axis=-1, keepdims=True) + self.eps)
        if gamma is not None:
            y = y * self._float_vec(gamma, n, "gamma")
        if beta is not None:
            y = y + self._float_vec(beta, n, "beta")
        return np.moveaxis(y, -1, axis)

    def reference_is_standard(self) -> bool:
        """True when :meth:`reference` is this class's float64 LayerNorm / (p)RMSNorm
        (what a compiled metric may compute in its place)."""
        return type(self).reference is _LayerNormSpec.reference

    @staticmethod
    def _float_vec(v: npt.ArrayLike, n: int, what: str) -> npt.NDArray[np.float64]:
        arr = np.asarray(v, dtype=np.float64)
        require(
            arr.ndim == 1 and arr.shape[0] == n,
            lambda: f"{what} must be a 1-D array of length {n}, got shape {arr.shape}",
        )
        return arr

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """The hardware parameter set (:mod:`hwapprox.approx.hwparams`) for rows of up
        to ``n`` elements (None: the longest row the spec allows)."""
        raise NotImplementedError(f"layernorm/{self.method} has no hardware unit")

    def _check_n(self, n: int, limit: int, why: str) -> None:
        require(
            n <= limit,
            lambda: f"layernorm/{self.method}: row length N={n} exceeds {limit} ({why})",
        )


# -- small exact helpers -----------------------------------------------------------------
def _round_div_even(s: RawArray, n: int) -> RawArray:
    """round(s / n) with ties to even (``torch.round`` of the mean), exact."""
    q, r = np.divmod(s, np.int64(n))  # floor division, 0 <= r < n
    twice = 2 * r
    up = (twice > n) | ((twice == n) & (q % 2 == 1))
    return q + up


def _round_sqrt(v: int) -> int:
    """round(sqrt(v)) half up, exact (v >= 0)."""
    return (math.isqrt(4 * v) + 1) // 2


def _check_norm_bits(spec: Any, name: str) -> None:
    fz = spec.norm_frac_bits
    require(0 <= fz <= 30, f"{name}.norm_frac_bits={fz} must be in [0, 30]")
    f_acc = fz + spec.gamma_fmt.frac_bits
    require(
        spec.beta_fmt.frac_bits <= f_acc,
        f"{name}: beta_fmt={spec.beta_fmt} has {spec.beta_fmt.frac_bits} fraction bits, more "
        f"than norm_frac_bits + gamma fraction bits = {f_acc}; raise norm_frac_bits",
    )
    require(
        f_acc >= spec.out_fmt.frac_bits,
        f"{name}: norm_frac_bits={fz} + gamma fraction bits < out_fmt fraction bits "
        f"({spec.out_fmt.frac_bits}); raise norm_frac_bits",
    )
