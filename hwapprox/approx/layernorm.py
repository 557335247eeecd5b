"""LayerNorm (and RMSNorm) approximations: bit-accurate integer numpy models.

Every spec computes, along the last axis of a row of N raw ``in_fmt`` codes,

    y = (x - mean) / sqrt(var + eps) · γ + β        (population variance)

(:class:`RmsNorm`: ``y = x / sqrt(mean(x²) + eps) · γ + β``) and returns raw
``out_fmt`` codes. ``gamma``/``beta`` are raw codes of ``gamma_fmt`` /
``beta_fmt`` of length N (``None`` means 1.0 and 0.0). :meth:`reference` is the
float64 function with float gamma/beta.

Methods
-------
``ibert``      I-BERT ``IntLayerNorm`` (exact integers, Newton isqrt).
``ivit``       I-ViT ``IntLayerNorm`` (fixed 10-step Newton from 2^16, defect kept).
``hls4ml_lut`` what hls4ml 1.3 ``nnet_layernorm.h`` computes (bit-exact, proven
               against the header with g++ in ``tests/test_layernorm.py``).
``rsqrt_lut``  the hwapprox unit: single-pass Σx, Σx², exact integer variance,
               1/sqrt by leading-one normalisation + table + Newton.
``rmsnorm``    the ``rsqrt_lut`` datapath without the mean.

The I-BERT/I-ViT integer output ``y_int`` (scale √N/2^30) and the normalised
value of ``rsqrt_lut`` are turned into ``out_fmt`` by the same fixed-point
affine stage (:func:`affine_out`): ``Z`` (``norm_frac_bits`` fraction bits,
rounded half up) times raw γ plus aligned raw β, rounded once into ``out_fmt``
with its own quantisation and overflow modes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox.approx import _kernels
from hwapprox.approx.base import Cost, Operator, RowwiseSpec, SpecError, require
from hwapprox.approx.hwparams import overflow_code, raw_width, rounding_code, sbits, ubits
from hwapprox.approx.intmath import bit_length
from hwapprox.fixed import (
    MAX_RAW_BITS,
    FixedFormat,
    FixedPointError,
    Overflow,
    Rounding,
    cast,
    round_shift,
)

__all__ = [
    "Hls4mlLayerNorm",
    "IBertLayerNorm",
    "IVitLayerNorm",
    "RmsNorm",
    "RsqrtLutLayerNorm",
    "affine_out",
    "hls4ml_invsqrt_table",
    "isqrt_ivit",
    "isqrt_newton",
    "rsqrt_norm",
    "rsqrt_table",
]

RawArray = npt.NDArray[np.int64]

_FIX16_6 = FixedFormat.parse("ap_fixed<16,6>")  # hls4ml's default model precision
_OUT16_4 = FixedFormat.parse("ap_fixed<16,4,AP_RND,AP_SAT>")
_HLS4ML_TABLE_T = FixedFormat.parse("ap_ufixed<8,5,AP_RND_CONV,AP_SAT>")


def _clog2(n: int) -> int:
    """ceil(log2(n)) for n >= 1."""
    return (n - 1).bit_length()


# -- integer square roots ------------------------------------------------------------
def isqrt_newton(n: npt.ArrayLike) -> tuple[RawArray, int]:
    """floor(sqrt(n)) by I-BERT's integer Newton iteration; returns (root, iterations).

    ``x0 = 2^ceil(bits(n)/2)``, ``x_{i+1} = floor((x_i + floor(n / x_i)) / 2)``,
    stop when ``x_{i+1} >= x_i`` (then ``x_i`` is the root). Equals
    :func:`math.isqrt` for every ``0 <= n < 2^62``; ``iterations`` is the most
    any element needed (a hardware unit unrolls that many).
    """
    v = np.asarray(n, dtype=np.int64)
    if v.size and int(v.min()) < 0:
        raise SpecError(f"isqrt_newton needs non-negative integers, got {int(v.min())}")
    if v.size and int(v.max()) >= 1 << MAX_RAW_BITS:
        raise SpecError(f"isqrt_newton supports n < 2^{MAX_RAW_BITS}, got {int(v.max())}")
    x = np.left_shift(np.int64(1), (bit_length(v) + 1) >> 1)
    active = v > 0
    x = np.where(active, x, 0)
    iters = 0
    while active.any():
        xs = np.where(active, x, 1)
        nxt = (xs + v // xs) >> 1
        done = nxt >= xs
        x = np.where(active & ~done, nxt, x)
        active = active & ~done
        iters += 1
    return x, iters


def isqrt_ivit(n: npt.ArrayLike, iterations: int = 10, k0: int = 1 << 16) -> RawArray:
    """I-ViT's integer square root: ``iterations`` Newton steps from ``k0``, no stop test.

    ``k = floor((k + floor(n / k)) / 2)`` repeated exactly ``iterations`` times.
    With the defaults it is within ±1 of ``isqrt(n)`` only for 34596 <= n <
    ~2^44 (measured: exhaustive to 2^22, sampled above); ``n = 0`` and ``n = 1``
    give 64. Reproduced on purpose (see I-ViT).
    """
    v = np.asarray(n, dtype=np.int64)
    if v.size and int(v.min()) < 0:
        raise SpecError(f"isqrt_ivit needs non-negative integers, got {int(v.min())}")
    k = np.full(v.shape, k0, dtype=np.int64)
    for _ in range(iterations):
        k = (k + v // k) >> 1
    return k


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

    def _format_params(self) -> dict[str, int]:
        """Width and fraction bits of the four formats (the head of ``params()``)."""
        return {
            "in_width": self.in_fmt.width,
            "in_frac": self.in_fmt.frac_bits,
            "out_width": self.out_fmt.width,
            "out_frac": self.out_fmt.frac_bits,
            "gamma_width": self.gamma_fmt.width,
            "gamma_frac": self.gamma_fmt.frac_bits,
            "beta_width": self.beta_fmt.width,
            "beta_frac": self.beta_fmt.frac_bits,
        }

    def _check_n(self, n: int, limit: int, why: str) -> None:
        require(
            n <= limit,
            lambda: f"layernorm/{self.method}: row length N={n} exceeds {limit} ({why})",
        )


# -- I-BERT / I-ViT ------------------------------------------------------------------------
@dataclass(frozen=True)
class IBertLayerNorm(_LayerNormSpec):
    """I-BERT ``IntLayerNorm`` (Kim et al. 2021), exact integers.

    Source: ``kssteven418/I-BERT`` ``fairseq/quantization/utils/quant_modules.py``
    ``IntLayerNorm.forward``. With ``X`` the raw row (scale ``S = 2^-F_in``):

    1. ``mean = round(ΣX / N)`` (ties to even, as ``torch.round``), ``y = X - mean``.
    2. ``var = Σ floor(y / 2^s)^2`` with the smallest ``s >= shift`` such that
       ``var < 2^32`` (I-BERT: ``s = ceil(log2(sqrt(var0 / 2^32)))``, raised
       further if the floor pushes the sum over).
    3. ``std = isqrt(var)·2^s`` by integer Newton (:func:`isqrt_newton`).
    4. ``factor = floor(2^31 / std)``; ``y_int = floor(y·factor / 2)``, scale √N/2^30.

    Deviations (stated): exact integer arithmetic instead of I-BERT's fp32
    tensors; the shift is chosen per row and kept stateless (I-BERT keeps the
    running maximum over batches in a buffer during training); a row with
    ``std = 0`` (all inputs equal, ``y = 0``) gets ``factor = 0`` instead of
    I-BERT's division by zero; I-BERT adds no eps (``eps`` is only used by
    :meth:`reference`). γ/β are applied in fixed point, not folded as
    I-BERT's ``floor((β/γ)/scale)``: ``Z = round(y_int·round(√N·2^16) /
    2^(46 - norm_frac_bits))`` (half up), then :func:`affine_out`.
    """

    method: ClassVar[str] = "ibert"
    source: ClassVar[str] = "Kim et al., I-BERT (ICML 2021); kssteven418/I-BERT IntLayerNorm"

    shift: int = 0
    norm_frac_bits: int = 18

    #: fraction bits of the √N constant that rescales y_int (scale √N/2^30).
    SQRTN_FRAC: ClassVar[int] = 16
    #: I-BERT's variance limit (var_int < 2^32).
    VAR_LIMIT_BITS: ClassVar[int] = 32
    #: largest N the int64 path takes (y_int·√N·2^16 < 2^62).
    MAX_N: ClassVar[int] = 1 << 14

    def validate(self) -> None:
        super().validate()
        name = type(self).__name__
        require(0 <= self.shift <= 31, f"{name}.shift={self.shift} must be in [0, 31]")
        _check_norm_bits(self, name)

    def _std(self, y: RawArray) -> tuple[RawArray, RawArray]:
        """(std, s): ``isqrt(Σ floor(y/2^s)²)·2^s`` and the per-row shift s."""
        var0 = (y * y).sum(axis=1)
        lim = 1 << self.VAR_LIMIT_BITS
        s = np.full(var0.shape, self.shift, dtype=np.int64)
        # smallest s with var0 <= 2^(32 + 2s), i.e. ceil(log2(sqrt(var0 / 2^32)))
        need = np.maximum((bit_length(np.maximum(var0 - 1, 0)) - self.VAR_LIMIT_BITS + 1) >> 1, 0)
        s = np.maximum(s, need)
        while True:
            var = ((y >> s[:, None]) ** 2).sum(axis=1)
            over = var >= lim
            if not over.any():
                break
            s = s + over
        root, _ = isqrt_newton(var)
        return root << s, s

    def _factor(self, std: RawArray) -> RawArray:
        return np.where(std > 0, (1 << 31) // np.maximum(std, 1), 0)

    def _model_rows(
        self, x: RawArray, gamma: npt.ArrayLike | None = None, beta: npt.ArrayLike | None = None
    ) -> RawArray:
        n = x.shape[1]
        self._check_n(n, self.MAX_N, "int64 range of y_int·√N")
        g, b = self._affine_raw(n, gamma, beta)
        s1 = x.sum(axis=1)
        mean = _round_div_even(s1, n)
        y = x - mean[:, None]
        std, _ = self._std(y)
        factor = self._factor(std)
        y_int = (y * factor[:, None]) >> 1
        sqrtn = _round_sqrt(n << (2 * self.SQRTN_FRAC))
        z = _round_half_up_shift(
            y_int * np.int64(sqrtn), np.int64(30 + self.SQRTN_FRAC - self.norm_frac_bits)
        )
        return affine_out(z, self.norm_frac_bits, g, self.gamma_fmt, b, self.beta_fmt, self.out_fmt)

    def params(self) -> dict[str, int]:
        return {
            **self._format_params(),
            "shift": self.shift,
            "var_limit_bits": self.VAR_LIMIT_BITS,
            "factor_num_bits": 31,
            "y_int_scale_bits": 30,
            "sqrtn_frac": self.SQRTN_FRAC,
            "norm_frac": self.norm_frac_bits,
            "max_n": self.MAX_N,
        }

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set for rows of up to ``n`` elements (default ``MAX_N``).

        Codes ``x`` in ``[lo, hi]``; ``s`` is the per-row variance shift, at
        least ``need = ceil(log2(sqrt(var0 / 2^32)))`` (so ``var0 <= 2^(32+2s)``)
        and at most one above ``max(shift, need)`` (one step more brings the
        bound below ``2^32``).

        ========== ======== ========================================================
        name       sign     value range -> bits
        ========== ======== ========================================================
        X_W        signed   an input code (``ap_ufixed`` zero-extended)
        S1_W       signed   ``ΣX`` in ``[n·lo, n·hi]``
        YC_W       signed   ``y = X - mean`` in ``[lo - hi, hi - lo]``
        VAR0_W     unsigned ``Σy² <= n·(hi - lo)²``
        VAR_W      unsigned ``var = Σ floor(y/2^s)² <= var0/4^s + 2·sqrt(n·var0)/2^s + n
                            <= 2^32 + 2^17·sqrt(n) + n``, and ``<= var0``
                            (``|floor(y/2^s)| <= |y|``); every term is at most that
        YS_W       signed   ``floor(y/2^s)``: its square is one term of ``var``; within y
        ROOT_W     unsigned ``isqrt(var)`` of the accepted ``var < 2^32``
        STD_W      unsigned ``std = isqrt(var)·2^s``
        FACTOR_W   unsigned ``2^31 / std <= 2^31``
        YF_W       signed   ``y·factor``: ``|y| < (|floor(y/2^s)| + 1)·2^s <= 2·std``,
                            so ``|y·factor| < 2^32``
        YI_W       signed   ``y_int = y·factor >> 1``
        SQRTN_W    unsigned ``round(sqrt(n)·2^16)``
        YQ_W       signed   ``y_int·sqrtn``
        Z_W        signed   ``Z = round(y_int·sqrtn / 2^ZSHIFT)``
        ACC_W      signed   ``Z·γ + (β << BETA_SHIFT)``
        S2_W       unsigned ``S2 = ΣX² <= n·xmax²`` (``xmax = max(-lo, hi)``), RTL only
        MOM_W      signed   the RTL's one-pass variance ``Σy² = S2 - mean·(2·S1 -
                            n·mean)``: every term and partial result is within
                            ``3·n·xmax²`` (``|mean| <= xmax``), RTL only
        ========== ======== ========================================================

        ``S2_W``/``MOM_W`` size the SV units' one-pass statistics (they take ``Σy²``
        from ``S1``, ``S2`` and the mean instead of re-reading the row); the HLS unit
        re-reads its row and has no such types. ``OUT_SHIFT = ACC_F - OUT_F`` and the
        ``OUT_*`` codes (``hwa_pkg``) are the output stage's.
        """
        rows = self.MAX_N if n is None else int(n)
        self._check_n(rows, self.MAX_N, "int64 range of y_int·√N")
        require(rows >= 1, f"layernorm/{self.method}: rows of length {rows} (at least 1)")
        lo, hi = self.in_fmt.min_raw, self.in_fmt.max_raw
        span = hi - lo
        var0 = rows * span * span
        need = max(0, (ubits(max(var0 - 1, 0)) - self.VAR_LIMIT_BITS + 1) >> 1)
        s_max = max(self.shift, need) + 1
        var_max = (1 << 32) + (1 << 17) * (math.isqrt(rows) + 1) + rows
        ys = math.isqrt(var_max) + 1
        root_max = math.isqrt((1 << self.VAR_LIMIT_BITS) - 1)
        sqrtn = _round_sqrt(rows << (2 * self.SQRTN_FRAC))
        zshift = 30 + self.SQRTN_FRAC - self.norm_frac_bits
        yq = (1 << 31) * sqrtn
        z = -(-yq >> zshift) + 1
        f_acc = self.norm_frac_bits + self.gamma_fmt.frac_bits
        beta_shift = f_acc - self.beta_fmt.frac_bits
        z_w = sbits(-z, z)
        xmax = max(-lo, hi)
        mom = 3 * rows * xmax * xmax
        return {
            "IN_W": self.in_fmt.width,
            "X_W": raw_width(self.in_fmt),
            "OUT_W": self.out_fmt.width,
            "OUT_F": self.out_fmt.frac_bits,
            "OUT_SIGNED": int(self.out_fmt.signed),
            "OUT_RND": rounding_code(self.out_fmt.rounding),
            "OUT_OVF": overflow_code(self.out_fmt.overflow),
            "OUT_SHIFT": f_acc - self.out_fmt.frac_bits,
            "GAMMA_W": self.gamma_fmt.width,
            "GAMMA_F": self.gamma_fmt.frac_bits,
            "BETA_W": self.beta_fmt.width,
            "BETA_F": self.beta_fmt.frac_bits,
            "SHIFT": self.shift,
            "VAR_LIMIT_BITS": self.VAR_LIMIT_BITS,
            "FACTOR_NUM_BITS": 31,
            "SQRTN": sqrtn,
            "SQRTN_F": self.SQRTN_FRAC,
            "ZSHIFT": zshift,
            "ACC_F": f_acc,
            "BETA_SHIFT": beta_shift,
            "S1_W": sbits(rows * lo, rows * hi),
            "YC_W": sbits(-span, span),
            "VAR0_W": ubits(var0),
            "VAR_W": ubits(min(var_max, var0)),
            "YS_W": min(sbits(-ys, ys), sbits(-span, span)),
            "ROOT_W": ubits(root_max),
            "STD_W": ubits(root_max << s_max),
            "FACTOR_W": ubits(1 << 31),
            "YF_W": sbits(-(1 << 32), 1 << 32),
            "YI_W": sbits(-(1 << 31), 1 << 31),
            "SQRTN_W": ubits(sqrtn),
            "YQ_W": sbits(-yq, yq),
            "Z_W": z_w,
            "ACC_W": max(z_w + raw_width(self.gamma_fmt), raw_width(self.beta_fmt) + beta_shift)
            + 1,
            "S2_W": ubits(rows * xmax * xmax),
            "MOM_W": sbits(-mom, mom),
        }

    def cost(self) -> Cost:
        w = self.in_fmt.width
        return Cost(
            multipliers=3,
            mult_bits=((w + 1, w + 1), (w + 1, 32), (36, 22), (24, self.gamma_fmt.width)),
            adders=4,
            dividers=2,
            widest_bits=56,
            notes="per row: isqrt (Newton, ~6 divisions) and 2^31/std (one division)",
        )


@dataclass(frozen=True)
class IVitLayerNorm(IBertLayerNorm):
    """I-ViT ``IntLayerNorm`` (Li & Gu 2023), exact integers, defect included.

    Source: ``zkkli/I-ViT`` ``models/quantization_utils/quant_modules.py``
    ``IntLayerNorm.forward``. Same as :class:`IBertLayerNorm` except:
    ``var = Σ y²`` (no shift), ``std`` from :func:`isqrt_ivit` (exactly 10
    Newton steps from ``k = 2^16``, reproduced on purpose: ``var = 0`` or ``1``
    gives 64; within ±1 of isqrt only for 34596 <= var < ~2^44 -- measured,
    ALGORITHMS.md's 26244 is too low, e.g. 34595 gives 187, isqrt 185), and
    ``factor = floor((2^31 - 1) / std)``. The ``shift`` field is ignored
    (kept for a uniform field set; must stay 0).
    """

    method: ClassVar[str] = "ivit"
    source: ClassVar[str] = "Li & Gu, I-ViT (ICCV 2023); zkkli/I-ViT IntLayerNorm"

    newton_iterations: int = 10

    def validate(self) -> None:
        super().validate()
        name = type(self).__name__
        require(self.shift == 0, f"{name}.shift={self.shift}: I-ViT has no variance shift; use 0")
        require(
            1 <= self.newton_iterations <= 64,
            f"{name}.newton_iterations={self.newton_iterations} not in [1, 64]",
        )

    def _std(self, y: RawArray) -> tuple[RawArray, RawArray]:
        var = (y * y).sum(axis=1)
        return isqrt_ivit(var, self.newton_iterations), np.zeros_like(var)

    def _factor(self, std: RawArray) -> RawArray:
        return ((1 << 31) - 1) // std

    def params(self) -> dict[str, int]:
        p = super().params()
        p.update({"newton_iterations": self.newton_iterations, "newton_k0": 1 << 16})
        p.pop("var_limit_bits")
        return p

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set: :meth:`IBertLayerNorm.hw_params` without the variance
        shift (``SHIFT``, ``VAR_LIMIT_BITS``, ``VAR_W``, ``YS_W``, ``ROOT_W``) and with
        I-ViT's square root and factor:

        ========== ======== ========================================================
        name       sign     value range -> bits
        ========== ======== ========================================================
        K_W        unsigned the Newton iterate ``k``: from ``K0 = 2^16`` it never rises
                            above ``max(K0, (K0 + var0 >> 16) >> 1)`` (after the first
                            step every iterate is ``>= isqrt(var0)``, and from there
                            the integer Newton step does not increase)
        Q_W        unsigned ``var0 / k``: ``var0 >> 16`` at ``k = K0``, else
                            ``<= var0 / isqrt(var0) <= 2·isqrt(var0) + 2``
        KS_W       unsigned ``k + var0 / k`` (before the halving)
        STD_W      unsigned ``std`` = the last iterate (``K_W``)
        FACTOR_W   unsigned ``(2^31 - 1) / std <= 2^31 - 1`` (``std >= 1``: at most 16
                            iterations from ``2^16``)
        ========== ======== ========================================================

        ``y·factor`` keeps I-BERT's bound: ``std >= isqrt(var0)`` (integer Newton from
        above never undershoots), so ``|y| <= sqrt(var0) < std + 1 <= 2·std``.
        """
        require(
            self.newton_iterations <= 16,
            f"layernorm/ivit: newton_iterations={self.newton_iterations}: the hardware unit "
            "takes at most 16 (from 2^16 the iterate could reach 0 after more)",
        )
        hw = IBertLayerNorm.hw_params(self, n)
        for k in ("SHIFT", "VAR_LIMIT_BITS", "FACTOR_NUM_BITS", "VAR_W", "YS_W", "ROOT_W"):
            hw.pop(k)
        rows = self.MAX_N if n is None else int(n)
        span = self.in_fmt.max_raw - self.in_fmt.min_raw
        var0 = rows * span * span
        k0 = 1 << 16
        k_max = max(k0, (k0 + (var0 >> 16)) >> 1)
        q_max = max(var0 >> 16, 2 * math.isqrt(var0) + 2)
        hw.update(
            {
                "NEWTON_ITERS": self.newton_iterations,
                "NEWTON_K0": k0,
                "FACTOR_NUM": (1 << 31) - 1,
                "K_W": ubits(k_max),
                "Q_W": ubits(q_max),
                "KS_W": ubits(k_max + q_max),
                "STD_W": ubits(k_max),
                "FACTOR_W": ubits((1 << 31) - 1),
            }
        )
        return hw


# -- hls4ml 1.3 ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def hls4ml_invsqrt_table(
    table_size: int, epsilon_power_of_10: int, table_range_power2: int, table_fmt: FixedFormat
) -> RawArray:
    """hls4ml 1.3 ``init_invert_sqr_table`` as raw ``table_fmt`` codes.

    C++ (float arithmetic, rounded to float after every operation):
    ``min_val = (float)pow(10.0f, -eps_pow)`` (the double overload),
    ``max_val = (float)pow(2.0f, -range_pow2)``, ``step = max_val / (float)N``,
    ``in_val = min_val + step * ii``; entry ``ii`` is
    ``(table_t)(1.0 / sqrt(in_val))`` (float sqrt, double division, then the
    ``ap_fixed`` conversion from double with ``table_t``'s modes).
    """
    f32 = np.float32
    min_val = f32(10.0 ** (-epsilon_power_of_10))
    max_val = f32(2.0 ** (-table_range_power2))
    step = f32(max_val / f32(table_size))
    ii = np.arange(table_size).astype(np.float32)
    in_val = (min_val + step * ii).astype(np.float32)
    root = np.sqrt(in_val).astype(np.float32)
    table = table_fmt.quantize(1.0 / root.astype(np.float64))
    table.flags.writeable = False  # cached: shared by every caller
    return table


@dataclass(frozen=True)
class Hls4mlLayerNorm(_LayerNormSpec):
    """hls4ml 1.3 ``nnet::layernorm_1d`` (``templates/vivado/nnet_utils/nnet_layernorm.h``).

    Types (verified by generating a Vivado project with a LayerNormalization
    layer through ``ModelGraph.from_layer_list``, model precision
    ``ap_fixed<16,6>``, and reading ``firmware/parameters.h``/``defines.h``):
    ``accum_t``, ``scale_t``, ``bias_t`` are ``model_default_t`` =
    ``ap_fixed<16,6>`` (TRN, WRAP) -- the backend's declared ``accum``
    attribute default ``ap_fixed<14,4,AP_RND_CONV,AP_SAT>`` is NOT applied;
    ``table_t = ap_ufixed<8,5,AP_RND_CONV,AP_SAT>``; ``table_size = 4096``;
    ``table_range_power2 = 0``; ``product = nnet::product::mult`` (exact
    ``a * b`` then assignment). These are the defaults here. ``eps`` maps to
    ``epsilon_power_of_10 = -round(log10(eps))`` (as hls4ml's Keras parser);
    eps is never added to the variance, it only offsets the table start.

    Per row (all assignments into ``accum_t`` round/overflow with its modes):
    ``sum = Σ accum(x)``; ``k_inv = accum(1.0/N)``; ``mean = accum(sum·k_inv)``;
    ``d_i = accum(accum(x_i) - mean)``; ``sum2 = Σ accum(d_i·d_i)``;
    ``var = accum(sum2·k_inv)``; ``index = int(var·table_size·2^range_pow2)``
    clamped to ``[0, table_size-1]``; ``r = table[index]``;
    ``out_i = out_t(d_i·r·γ_i + β_i)`` (exact products and sum, one cast).
    The C++ ``int`` conversion of the index truncates; negative values (a
    wrapped variance) clamp to 0 either way.

    Known defects (reproduced, measured in ``benchmarks/results/layernorm.md``):
    ``Σd²`` wraps once a row's ``N·var >= 32`` with the default accumulator;
    the table clamps at var >= 1 (rsqrt taken as 1); ``ap_ufixed<8,5>``
    entries have 0.125 resolution; ``k_inv`` truncated to 2^-10 makes mean and
    variance 25 % low at N = 768.
    """

    method: ClassVar[str] = "hls4ml_lut"
    source: ClassVar[str] = "hls4ml 1.3.0 templates/vivado/nnet_utils/nnet_layernorm.h"

    out_fmt: FixedFormat = _FIX16_6
    accum_fmt: FixedFormat = _FIX16_6
    table_fmt: FixedFormat = _HLS4ML_TABLE_T
    table_size: int = 4096
    table_range_power2: int = 0

    def validate(self) -> None:
        super().validate()
        name = type(self).__name__
        require(
            not isinstance(self.table_size, bool) and isinstance(self.table_size, int),
            f"{name}.table_size must be an int, got {self.table_size!r}",
        )
        require(
            1 <= self.table_size <= 1 << 20,
            f"{name}.table_size={self.table_size} must be in [1, 2^20]",
        )
        require(
            0 <= self.table_range_power2 <= 30,
            f"{name}.table_range_power2={self.table_range_power2} not in [0, 30]",
        )
        require(
            0 < self.eps < 0.1,
            f"{name}.eps={self.eps!r}: hls4ml needs 0 < eps < 0.1 "
            f"(epsilon_power_of_10 = -round(log10(eps)) >= 1)",
        )
        require(
            self.epsilon_power_of_10 >= 1,
            f"{name}.eps={self.eps!r} gives epsilon_power_of_10 < 1",
        )
        idx_bits = self.accum_fmt.int_bits + _clog2(self.table_size) + self.table_range_power2
        require(
            idx_bits <= 31,
            f"{name}: var·table_size·2^table_range_power2 needs {idx_bits} integer bits "
            f"(accum_fmt={self.accum_fmt}, table_size={self.table_size}); the C++ int "
            f"index holds 31; narrow accum_fmt or the table",
        )
        wide = (
            self.accum_fmt.width
            + self.table_fmt.width
            + self.gamma_fmt.width
            + 1
            + max(0, self.beta_fmt.frac_bits - self.output_frac)
        )
        require(
            2 * self.accum_fmt.width <= MAX_RAW_BITS and wide <= MAX_RAW_BITS,
            f"{name}: exact products need {max(wide, 2 * self.accum_fmt.width)} bits "
            f"(accum_fmt={self.accum_fmt}, table_fmt={self.table_fmt}, "
            f"gamma_fmt={self.gamma_fmt}); the int64 model holds {MAX_RAW_BITS}",
        )

    @property
    def output_frac(self) -> int:
        """Fraction bits of the exact ``d·r·γ`` product."""
        return self.accum_fmt.frac_bits + self.table_fmt.frac_bits + self.gamma_fmt.frac_bits

    @property
    def epsilon_power_of_10(self) -> int:
        return -round(math.log10(self.eps)) if self.eps > 0 else 0

    def tables(self) -> dict[str, RawArray]:
        return {"invert_sqr_table": self._table().copy()}

    def _table(self) -> RawArray:
        return hls4ml_invsqrt_table(
            self.table_size, self.epsilon_power_of_10, self.table_range_power2, self.table_fmt
        )

    def params(self) -> dict[str, int]:
        return {
            "epsilon_power_of_10": self.epsilon_power_of_10,
            "table_range_power2": self.table_range_power2,
            "table_size": self.table_size,
            "accum_width": self.accum_fmt.width,
            "accum_int": self.accum_fmt.int_bits,
            "table_width": self.table_fmt.width,
            "table_int": self.table_fmt.int_bits,
        }

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set of the HLS unit (``layernorm_hls4ml_op``), rows of ``n``.

        The datapath is ``ap_fixed`` arithmetic on the formats themselves (``accum_t``,
        ``table_t``, ``scale_t = gamma_fmt``, ``bias_t = beta_fmt``: every assignment
        into ``accum_t`` rounds and overflows as the class docstring says; the final
        ``d·r·γ + β`` is exact, one cast). Constants: ``K_INV`` (the raw ``accum_t``
        code of ``1/n``) and ``TSCALE = table_size·2^table_range_power2``.

        ========= ======== ==========================================================
        name      sign     value range -> bits
        ========= ======== ==========================================================
        IDX_W     signed   ``var·TSCALE`` as raw ``accum_t`` codes (``|var| <
                           2^(ACCUM_W-1)``), before ``>> ACCUM_F`` and the clamp
        ADDR_W    unsigned the table index ``[0, table_size - 1]``
        ========= ======== ==========================================================
        """
        rows = 1 if n is None else int(n)
        require(rows >= 1, f"layernorm/{self.method}: rows of length {rows} (at least 1)")
        acc = self.accum_fmt
        tscale = self.table_size << self.table_range_power2
        return {
            "IN_W": self.in_fmt.width,
            "OUT_W": self.out_fmt.width,
            "GAMMA_W": self.gamma_fmt.width,
            "BETA_W": self.beta_fmt.width,
            "ACCUM_W": acc.width,
            "ACCUM_F": acc.frac_bits,
            "TABLE_W": self.table_fmt.width,
            "TABLE_SIZE": self.table_size,
            "TSCALE": tscale,
            "K_INV": int(acc.quantize(np.array([1.0 / rows]))[0]),
            "IDX_W": acc.width + ubits(tscale) + 1,
            "ADDR_W": ubits(self.table_size - 1),
        }

    def _sum(self, a: RawArray) -> RawArray:
        """Σ over columns with ``accum_t`` overflow after every addition."""
        acc = self.accum_fmt
        if acc.overflow is Overflow.WRAP:
            return acc.saturate(a.sum(axis=1))  # wrapping is modular: once is enough
        s = np.zeros(a.shape[0], dtype=np.int64)
        for i in range(a.shape[1]):
            s = acc.saturate(s + a[:, i])
        return s

    def _model_rows(
        self, x: RawArray, gamma: npt.ArrayLike | None = None, beta: npt.ArrayLike | None = None
    ) -> RawArray:
        n = x.shape[1]
        g, b = self._affine_raw(n, gamma, beta)
        if g is None:
            g = np.full(n, 1 << self.gamma_fmt.frac_bits, dtype=np.int64)
        if b is None:
            b = np.zeros(n, dtype=np.int64)
        acc = self.accum_fmt
        prod_fmt = FixedFormat(2 * acc.width, 2 * acc.int_bits)
        xa = cast(x, self.in_fmt, acc)
        k_inv = acc.quantize(1.0 / n)
        mean = cast(self._sum(xa) * k_inv, prod_fmt, acc)
        d = acc.saturate(xa - mean[:, None])
        sq = _requant(d * d, acc.frac_bits, acc)  # = cast(d*d, prod_fmt, acc)
        var = cast(self._sum(sq) * k_inv, prod_fmt, acc)
        index = (var * np.int64(self.table_size << self.table_range_power2)) >> acc.frac_bits
        index = np.where(index < 0, 0, np.minimum(index, self.table_size - 1))
        r = self._table()[index]
        p = d * r[:, None]
        f_p = self.output_frac
        f_b = self.beta_fmt.frac_bits
        shift = f_p - self.out_fmt.frac_bits
        modes = _cast_modes(self.out_fmt)
        if modes and f_b <= f_p and f_p - f_b < 63 and 0 < shift < 63:
            # the lines below in one compiled pass (affine_out's stage), the same integers
            half = 1 << (shift - 1) if self.out_fmt.rounding is Rounding.RND else 0
            out = np.empty_like(p)
            _kernels.affine_rows(p, g, True, 0, b, True, f_p - f_b, shift, half, *modes, out)
            return out
        p *= g  # exact: accum·table·scale
        if f_b <= f_p:
            p += b << np.int64(f_p - f_b)
            f_t = f_p
        else:
            p = (p << np.int64(f_b - f_p)) + b
            f_t = f_b
        return _requant(p, f_t - self.out_fmt.frac_bits, self.out_fmt)

    def cost(self) -> Cost:
        a, t = self.accum_fmt.width, self.table_fmt.width
        return Cost(
            table_bits=self.table_size * t,
            tables=1,
            multipliers=4,
            mult_bits=((a, a), (a, t), (a + t, self.gamma_fmt.width)),
            adders=3,
            widest_bits=a + t + self.gamma_fmt.width,
            notes="two passes over the row (mean, then variance); 1/sqrt by one table read",
        )


# -- hwapprox single-pass unit -----------------------------------------------------------
@functools.lru_cache(maxsize=64)
def rsqrt_table(index_bits: int, frac_bits: int) -> RawArray:
    """1/sqrt(m) seed table for m in [1, 4), ``2^index_bits`` entries, ``frac_bits`` bits.

    Entry ``h·2^(b-1) + j`` (``b = index_bits``) covers ``m`` in ``[lo, hi)``:
    ``h = 0``: ``lo = 1 + j·2^-(b-1)``, width ``2^-(b-1)``; ``h = 1``:
    ``lo = 2 + j·2^-(b-2)``, width ``2^-(b-2)``. The value is
    ``round(2^frac_bits · 2 / (sqrt(lo) + sqrt(hi)))`` (the harmonic mean of
    the end values, which equalises the relative error at both ends), rounded
    half up from a 60-digit decimal evaluation. Every entry is < 2^frac_bits.
    """
    half = 1 << (index_bits - 1)
    out = []
    with localcontext() as ctx:
        ctx.prec = 60
        for h in (0, 1):
            base = Fraction(1 + h)
            width = Fraction(1 + h, half)
            for j in range(half):
                lo, hi = base + j * width, base + (j + 1) * width
                lo_d = Decimal(lo.numerator) / Decimal(lo.denominator)
                hi_d = Decimal(hi.numerator) / Decimal(hi.denominator)
                c = Decimal(2 << frac_bits) / (lo_d.sqrt() + hi_d.sqrt())
                out.append(int((c + Decimal("0.5")).to_integral_value(rounding="ROUND_FLOOR")))
    table = np.asarray(out, dtype=np.int64)
    table.flags.writeable = False  # cached: shared by every caller
    return table


def rsqrt_norm(
    m: npt.ArrayLike, table: RawArray, index_bits: int, frac_bits: int, newton_steps: int
) -> RawArray:
    """1/sqrt(m) for a normalised mantissa ``m`` in ``[2^P, 2^(P+2))`` (P = ``frac_bits``).

    Integer operations (``>>`` is floor):
    ``h = m >> (P+1)``; ``j = (m >> (P + h - (b-1))) & (2^(b-1) - 1)``;
    ``y = table[h·2^(b-1) + j]``; each Newton step
    ``sq = (y·y) >> P``; ``t = (m·sq) >> P``; ``u = 3·2^P - t``;
    ``y = (y·u) >> (P+1)``. Returns y with P fraction bits (≈ 2^P/sqrt(m/2^P)).
    """
    p, b = frac_bits, index_bits
    mm = np.asarray(m, dtype=np.int64)
    h = mm >> (p + 1)
    j = (mm >> (p + h - (b - 1))) & ((1 << (b - 1)) - 1)
    y = table[(h << (b - 1)) + j]
    for _ in range(newton_steps):
        sq = (y * y) >> p
        t = (mm * sq) >> p
        u = (3 << p) - t
        y = (y * u) >> (p + 1)
    return y


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


@dataclass(frozen=True)
class RsqrtLutLayerNorm(_LayerNormSpec):
    """hwapprox single-pass LayerNorm unit: exact statistics, table + Newton 1/sqrt.

    N is the row length at call time, ``1 <= N <= max_n``; ``max_n`` sizes
    the accumulators (``params()``). Notation: ``X`` raw input (``F`` =
    in_fmt fraction bits, ``W`` its width), ``P = rsqrt_frac_bits``, ``b =
    rsqrt_table_bits``, ``G = eps_guard_bits`` (even), ``Fz =
    norm_frac_bits``. Every step is an integer operation; ``>>`` is floor.

    Pass 1 (while the row streams in):
      ``S1 = Σ X`` (signed, ``s1_bits``), ``S2 = Σ X²`` (unsigned, ``s2_bits``).
    Per row (once):
      ``D = N·S2 - S1²`` (exact; = N²·var·2^2F, no rounding: the mean is
      never divided out), ``De = (D << G) + N²·eps_q`` with the constant
      ``eps_q = round(eps·2^(2F+G))`` (``de_bits``);
      ``L = bitlen(De)``, ``k = (L-1) >> 1`` (even shift 2k: ``4^k <= De < 4^(k+1)``);
      ``m = De >> (2k-P)`` if ``2k >= P`` else ``De << (P-2k)`` (``m`` in
      ``[2^P, 2^(P+2))``, ``P+2`` bits, truncated);
      ``y = rsqrt_norm(m)`` (table ``2^b`` entries of ``P`` bits, then
      ``newton_steps`` Newton steps, see :func:`rsqrt_norm`);
      ``sh = P + k - G/2 - Fz`` (signed per-row shift).
    Pass 2 (on the way out, γ_i/β_i from memory):
      ``A = N·X - S1`` (``a_bits``; RMSNorm: ``A = N·X``),
      ``Z = (A·y + 2^(sh-1)) >> sh`` (round half up; ``A·y << -sh`` if sh <= 0),
      so ``Z ≈ (x - mean)/sqrt(var + eps)·2^Fz`` (``z_bits``);
      ``out = affine_out(Z)``: ``acc = Z·γ + (β << (Fz + F_γ - F_β))``, then
      ``round_shift(acc, Fz + F_γ - F_out, out_fmt.rounding)`` and
      ``out_fmt``'s overflow (default ``AP_RND``/``AP_SAT``).
    Maths: ``(x-mean)/sqrt(var+eps) = A·2^(G/2)/sqrt(De)`` and
    ``1/sqrt(De) ≈ y·2^-P·2^-k``.
    """

    method: ClassVar[str] = "rsqrt_lut"
    source: ClassVar[str] = (
        "hwapprox: single-pass Σx/Σx² statistics, leading-one normalised 1/sqrt table + Newton"
    )
    #: ``partial`` is a multiple of 2^-PARTIAL_F: ``k = ceil(PARTIAL_NUM·N / 2^PARTIAL_F)``
    PARTIAL_F: ClassVar[int] = 16

    max_n: int = 1024
    #: pRMSNorm (Zhang & Sennrich 2019), ``rmsnorm`` only: the RMS is estimated from the
    #: first ``partial_k`` elements of each row (p·d for the model's hidden size d);
    #: 0 (or >= N) = the whole row
    partial_k: int = 0
    #: pRMSNorm as the paper states it, ``rmsnorm`` only: the RMS of the first
    #: ``k = ceil(partial·N)`` elements of a row of N (1.0 = the whole row); a multiple
    #: of 2^-PARTIAL_F so that hardware computes k exactly for any N
    partial: float = 1.0
    #: defaults: one Newton step on a 256-entry table (<= 0.56 LSB at 16 bits), which
    #: keeps the RTL unit at last-in -> last-out N + 16 (two steps on 64: N + 19)
    rsqrt_table_bits: int = 8
    rsqrt_frac_bits: int = 20
    newton_steps: int = 1
    eps_guard_bits: int = 4
    norm_frac_bits: int = 18

    def validate(self) -> None:
        super().validate()
        name = type(self).__name__
        require(
            not isinstance(self.partial_k, bool) and isinstance(self.partial_k, int),
            f"{name}.partial_k must be an int, got {self.partial_k!r}",
        )
        require(
            self.partial_k == 0 or not self.center,
            f"{name}.partial_k={self.partial_k}: the partial RMS (pRMSNorm) is an option of "
            "method rmsnorm; LayerNorm's mean needs the whole row",
        )
        require(
            0 <= self.partial_k <= self.max_n,
            f"{name}.partial_k={self.partial_k} must be in [0, max_n={self.max_n}]",
        )
        p = self.partial
        require(
            not isinstance(p, bool) and isinstance(p, int | float) and 0 < p <= 1,
            f"{name}.partial={p!r} must be a fraction in (0, 1] (1.0: the whole row)",
        )
        grid = p * (1 << self.PARTIAL_F)
        require(
            grid == int(grid),
            lambda: (
                f"{name}.partial={p!r} is not a multiple of 2^-{self.PARTIAL_F} (hardware "
                f"computes k = ceil(partial·N) exactly); use e.g. "
                f"{math.floor(grid) / (1 << self.PARTIAL_F)!r}"
            ),
        )
        require(
            p == 1 or not self.center,
            f"{name}.partial={p!r}: the partial RMS (pRMSNorm) is an option of method "
            "rmsnorm; LayerNorm's mean needs the whole row",
        )
        require(
            p == 1 or self.partial_k == 0,
            f"{name}: partial={p!r} and partial_k={self.partial_k} both choose the first k "
            "elements; give one (partial: k = ceil(partial·N); partial_k: k itself)",
        )
        for fname, lo, hi in (
            ("max_n", 1, 1 << 16),
            ("rsqrt_table_bits", 2, 12),
            ("rsqrt_frac_bits", 8, 28),
            ("newton_steps", 0, 2),
            ("eps_guard_bits", 0, 16),
        ):
            v = getattr(self, fname)
            require(
                not isinstance(v, bool) and isinstance(v, int),
                f"{name}.{fname} must be an int, got {v!r}",
            )
            require(lo <= v <= hi, f"{name}.{fname}={v} must be in [{lo}, {hi}]")
        require(
            self.eps_guard_bits % 2 == 0,
            f"{name}.eps_guard_bits={self.eps_guard_bits} must be even",
        )
        require(
            self.rsqrt_table_bits - 1 <= self.rsqrt_frac_bits,
            f"{name}.rsqrt_table_bits={self.rsqrt_table_bits} needs rsqrt_frac_bits >= "
            f"{self.rsqrt_table_bits - 1}",
        )
        _check_norm_bits(self, name)
        require(
            self.eps != 0,
            f"{name}.eps=0 leaves an all-equal row undefined (1/sqrt(0)); use eps > 0 "
            f"(values below 2^-{2 * self.in_fmt.frac_bits + self.eps_guard_bits} count as "
            f"that one step)",
        )
        w = self.widths()
        for key, limit in (("de_bits", MAX_RAW_BITS), ("ay_bits", MAX_RAW_BITS)):
            require(
                w[key] <= limit,
                f"{name}: in_fmt={self.in_fmt}, max_n={self.max_n} need a {w[key]}-bit "
                f"{key[:-5]} accumulator; the int64 model holds {limit}. Lower max_n "
                f"or eps_guard_bits, or narrow in_fmt",
            )
        require(
            w["acc_bits"] <= MAX_RAW_BITS,
            f"{name}: Z·γ needs {w['acc_bits']} bits (norm_frac_bits={self.norm_frac_bits}, "
            f"gamma_fmt={self.gamma_fmt}); the int64 model holds {MAX_RAW_BITS}",
        )

    @property
    def partial_num(self) -> int:
        """``partial·2^PARTIAL_F`` (exact; ``2^PARTIAL_F`` = the whole row)."""
        return int(self.partial * (1 << self.PARTIAL_F))

    def stat_count(self, n: int) -> int:
        """k, the elements of a row of ``n`` the statistics use: ``partial_k`` when set
        (capped at n), else ``ceil(partial·n) = ceil(PARTIAL_NUM·n / 2^PARTIAL_F)``
        (exact integers; n for ``partial = 1``)."""
        if self.partial_k:
            return min(self.partial_k, n)
        return -((-self.partial_num * n) >> self.PARTIAL_F)

    @property
    def eps_q(self) -> int:
        """``max(1, round(eps·2^(2F+G)))`` (half up, exact from the double eps).

        Deviation: an eps below half a step of the variance grid (BERT's 1e-12
        at 16-bit inputs, say) is raised to one step, 2^-(2F+G), so that an
        all-equal row still has a finite 1/sqrt. The difference from the float
        eps is below that step, far under one LSB of any input's variance.
        """
        v = Fraction(self.eps) * (Fraction(2) ** (2 * self.in_fmt.frac_bits + self.eps_guard_bits))
        return max(1, math.floor(v + Fraction(1, 2)))

    def widths(self) -> dict[str, int]:
        """Bit widths of every accumulator/intermediate for rows up to ``max_n``."""
        n = self.max_n
        xmax = max(-self.in_fmt.min_raw, self.in_fmt.max_raw)  # largest |X|
        s1 = n * xmax
        s2 = n * xmax * xmax
        d = n * s2  # N·S2 - S1² <= N·S2
        de = (d << self.eps_guard_bits) + n * n * self.eps_q
        a = 2 * n * xmax if self.center else n * xmax
        p = self.rsqrt_frac_bits
        y_max = 1 << p  # y < 2^P·(1 + tiny); one bit of margin
        z_int = math.isqrt(n) + 2  # |z| <= sqrt(N-1)·(1 + rel. error) < sqrt(N) + 1
        if self.partial_k or self.partial < 1:
            # pRMSNorm: an element after the first k can exceed sqrt(k) RMS units; only
            # De >= k²·eps_q bounds it: |Z| <= xmax·2^(G/2) / sqrt(eps_q) (+ margin)
            bound = (xmax << (self.eps_guard_bits // 2)) // max(1, math.isqrt(self.eps_q))
            z_int = max(z_int, bound + 2)
        z_bits = z_int.bit_length() + self.norm_frac_bits + 1
        return {
            "n_bits": n.bit_length(),
            "s1_bits": s1.bit_length() + 1,
            "s2_bits": s2.bit_length(),
            "d_bits": d.bit_length(),
            "de_bits": de.bit_length(),
            "m_bits": p + 2,
            "y_bits": p + 1,
            "a_bits": a.bit_length() + 1,
            "ay_bits": (a * 2 * y_max).bit_length() + 1,
            "z_bits": z_bits,
            # Z·γ (signed product) plus β aligned by beta_shift, one carry
            "acc_bits": max(
                z_bits + raw_width(self.gamma_fmt),
                raw_width(self.beta_fmt) + self._beta_shift,
            )
            + 1,
            "newton_sq_bits": 2 * (p + 1),
            "newton_t_bits": 2 * p + 4,
        }

    @property
    def _beta_shift(self) -> int:
        return self.norm_frac_bits + self.gamma_fmt.frac_bits - self.beta_fmt.frac_bits

    def tables(self) -> dict[str, RawArray]:
        return {"rsqrt_table": rsqrt_table(self.rsqrt_table_bits, self.rsqrt_frac_bits).copy()}

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """The hardware parameter set: the SV parameters of ``hwa_layernorm_rsqrt`` and the
        HLS config constants, one set (``RmsNorm``: ``CENTER = 0``).

        ``n`` is unused: the accumulators are sized for ``max_n`` (rows of
        ``1..max_n``); :meth:`widths` derives them from the largest input
        magnitude ``|X| <= xmax``. Codes ``OUT_RND``/``OUT_OVF`` are ``hwa_pkg``'s.

        ========= ======== =========================================================
        name      sign     value range -> bits
        ========= ======== =========================================================
        X_W       signed   an input code (``ap_ufixed`` zero-extended)
        N_BITS    unsigned ``N <= max_n``
        S1_W      signed   ``S1 = ΣX``, ``|S1| <= max_n·xmax``
        S2_W      unsigned ``S2 = ΣX² <= max_n·xmax²``
        D_W       unsigned ``D = N·S2 - S1² <= N·S2`` (Cauchy-Schwarz: ``D >= 0``)
        DE_W      unsigned ``De = (D << G) + N²·eps_q``
        M_W       unsigned the normalised mantissa ``m`` in ``[2^P, 2^(P+2))``
        Y_W       unsigned ``y``: table entries ``< 2^P``; a Newton step gives
                           ``y(3 - m·y²)/2 <= 1/sqrt(m)`` (floors only lower it), so
                           ``y <= 2^P``
        SQ_W      unsigned ``y·y <= 2^(2P)``
        MSQ_W     unsigned ``m·(y² >> P) < 2^(P+2)·2^P``
        U_W       unsigned ``u = 3·2^P - (m·sq >> P)`` in ``(0, 3·2^P]``: a seed of bin
                           ``[lo, hi)`` is ``<= 1/sqrt(lo)`` and ``hi <= 1.5·lo``, so
                           ``m·y² < 1.5`` (real scale), and after a step ``m·y² <= 1``
        YU_W      unsigned ``y·u <= 3·2^(2P)``
        A_W       signed   ``A = N·X - S1`` (``N·X`` for RMSNorm)
        AY_W      signed   ``A·y``
        AYS_W     signed   ``A·y`` with room for the rounding shift: a left shift by
                           ``-sh <= FZ + G/2 - P`` (``k >= 0``) and the rounding carry
        Z_W       signed   ``Z ≈ (x - mean)/std·2^FZ``, ``|Z| <= (sqrt(N) + 2)·2^FZ``
        ACC_W     signed   ``Z·γ + (β << BETA_SHIFT)``
        ========= ======== =========================================================
        """
        w = self.widths()
        pb, g = self.rsqrt_frac_bits, self.eps_guard_bits
        lsh = max(0, self.norm_frac_bits + g // 2 - pb)
        return {
            "IN_W": self.in_fmt.width,
            "IN_F": self.in_fmt.frac_bits,
            "X_W": raw_width(self.in_fmt),
            "OUT_W": self.out_fmt.width,
            "OUT_F": self.out_fmt.frac_bits,
            "OUT_SIGNED": int(self.out_fmt.signed),
            "OUT_RND": rounding_code(self.out_fmt.rounding),
            "OUT_OVF": overflow_code(self.out_fmt.overflow),
            "GAMMA_W": self.gamma_fmt.width,
            "GAMMA_F": self.gamma_fmt.frac_bits,
            "BETA_W": self.beta_fmt.width,
            "BETA_F": self.beta_fmt.frac_bits,
            "CENTER": int(self.center),
            "PARTIAL_K": self.partial_k,
            "PARTIAL_NUM": self.partial_num,
            "PARTIAL_F": self.PARTIAL_F,
            "MAX_N": self.max_n,
            "N_BITS": w["n_bits"],
            "S1_W": w["s1_bits"],
            "S2_W": w["s2_bits"],
            "D_W": w["d_bits"],
            "DE_W": w["de_bits"],
            "EPS_Q": self.eps_q,
            "G": g,
            "P": pb,
            "TB": self.rsqrt_table_bits,
            "NEWTON": self.newton_steps,
            "FZ": self.norm_frac_bits,
            "BETA_SHIFT": self._beta_shift,
            "ACC_F": self.norm_frac_bits + self.gamma_fmt.frac_bits,
            "OUT_SHIFT": self.norm_frac_bits + self.gamma_fmt.frac_bits - self.out_fmt.frac_bits,
            "M_W": pb + 2,
            "Y_W": pb + 1,
            "SQ_W": 2 * pb + 1,
            "MSQ_W": 2 * pb + 2,
            "U_W": ubits(3 << pb),
            "YU_W": ubits(3 << (2 * pb)),
            "A_W": w["a_bits"],
            "AY_W": w["ay_bits"],
            "AYS_W": w["ay_bits"] + lsh + 1,
            "Z_W": w["z_bits"],
            "ACC_W": w["acc_bits"],
        }

    def params(self) -> dict[str, int]:
        p = {
            **self._format_params(),
            "center": int(self.center),
            "max_n": self.max_n,
            "eps_q": self.eps_q,
            "eps_guard_bits": self.eps_guard_bits,
            "rsqrt_table_bits": self.rsqrt_table_bits,
            "rsqrt_entries": 1 << self.rsqrt_table_bits,
            "rsqrt_frac_bits": self.rsqrt_frac_bits,
            "rsqrt_entry_bits": self.rsqrt_frac_bits,  # unsigned entries < 2^P
            "newton_steps": self.newton_steps,
            "newton_three": 3 << self.rsqrt_frac_bits,
            "norm_frac_bits": self.norm_frac_bits,
            "acc_frac_bits": self.norm_frac_bits + self.gamma_fmt.frac_bits,
            "out_shift": self.norm_frac_bits + self.gamma_fmt.frac_bits - self.out_fmt.frac_bits,
            "beta_shift": self.norm_frac_bits + self.gamma_fmt.frac_bits - self.beta_fmt.frac_bits,
        }
        p.update(self.widths())
        return p

    def _model_rows(
        self, x: RawArray, gamma: npt.ArrayLike | None = None, beta: npt.ArrayLike | None = None
    ) -> RawArray:
        n = x.shape[1]
        self._check_n(n, self.max_n, "the accumulators are sized for max_n; raise max_n")
        g, b = self._affine_raw(n, gamma, beta)
        p, gb = self.rsqrt_frac_bits, self.eps_guard_bits
        k_rms = min(self.stat_count(n), n)
        nn = np.int64(k_rms)  # pRMSNorm: the first k elements stand for the row
        n = k_rms
        # pass 1: exact sums
        xs = x[:, :k_rms]
        s2 = np.einsum("ij,ij->i", xs, xs)  # Σ X², exact int64
        s1 = x.sum(axis=1) if self.center else np.zeros(x.shape[0], dtype=np.int64)  # RMS: 0
        # per row: exact scaled variance, leading-one normalisation, 1/sqrt
        d = nn * s2 - s1 * s1
        de = (d << np.int64(gb)) + np.int64(n * n * self.eps_q)
        k = (bit_length(de) - 1) >> 1
        e = 2 * k - p
        m = np.where(e >= 0, de >> np.maximum(e, 0), de << np.maximum(-e, 0))
        table = rsqrt_table(self.rsqrt_table_bits, p)
        y = rsqrt_norm(m, table, self.rsqrt_table_bits, p, self.newton_steps)
        sh = p + k - gb // 2 - self.norm_frac_bits
        # pass 2: normalise and apply γ, β
        # A·y with A = N·X - S1, evaluated as X·(N·y) - S1·y: the same integers,
        # one full-width multiply per element fewer in numpy.
        c1 = nn * y
        c0 = s1 * y if self.center else np.zeros_like(y)
        args = _affine_kernel_args(
            x, self.norm_frac_bits, g, self.gamma_fmt, b, self.beta_fmt, self.out_fmt
        )
        if args is not None and sh.size and int(sh.min()) > -63 and int(sh.max()) < 63:
            # the lines below in one compiled pass, the same integers
            out = np.empty_like(x)
            _kernels.scale_affine_rows(x, c1, c0, sh, *args, out)
            return out
        a = x * c1[:, None]
        a -= c0[:, None]
        z = _round_half_up_shift(a, sh[:, None])
        return affine_out(z, self.norm_frac_bits, g, self.gamma_fmt, b, self.beta_fmt, self.out_fmt)

    def rsqrt_rel_error(self) -> float:
        """Max |y·2^-P·sqrt(m·2^-P) - 1| over every mantissa m in [2^P, 2^(P+2)) (exhaustive)."""
        return _rsqrt_rel_error(self.rsqrt_table_bits, self.rsqrt_frac_bits, self.newton_steps)

    def cost(self) -> Cost:
        w = self.widths()
        p = self.rsqrt_frac_bits
        nb = w["n_bits"]
        mults = [
            (self.in_fmt.width, self.in_fmt.width),  # X² (per element)
            (self.in_fmt.width, nb),  # N·X (per element)
            (w["a_bits"], p + 1),  # A·y (per element)
            (w["z_bits"], self.gamma_fmt.width),  # Z·γ (per element)
        ]
        per_row = [(w["s2_bits"], nb), (w["s1_bits"], w["s1_bits"])] + [
            (p + 1, p + 1),
            (p + 2, p + 2),
            (p + 1, p + 2),
        ] * self.newton_steps
        return Cost(
            table_bits=(1 << self.rsqrt_table_bits) * p,
            tables=1,
            multipliers=len(mults),
            mult_bits=tuple(mults),
            adders=4,
            widest_bits=w["de_bits"],
            notes=(
                "per element: X², N·X, A·y, Z·γ; per row (may be multi-cycle/shared): "
                f"{len(per_row)} multipliers {per_row}, one leading-one detector of "
                f"{w['de_bits']} bits"
            ),
        )


@dataclass(frozen=True)
class RmsNorm(RsqrtLutLayerNorm):
    """RMSNorm ``x / sqrt(mean(x²) + eps)·γ + β`` on the ``rsqrt_lut`` datapath.

    Identical to :class:`RsqrtLutLayerNorm` with ``S1`` forced to 0 (no mean):
    ``D = N·S2``, ``A = N·X``. :meth:`reference` is RMSNorm.

    pRMSNorm (Zhang & Sennrich 2019, "Root Mean Square Layer Normalization", §4): the
    RMS is estimated from the first k elements of the row, ``x / sqrt(mean(x[:k]²) +
    eps)``, with the paper's ``k = ceil(p·N)`` (``partial = p``, a multiple of 2^-16 so
    that k is exact: ``k = ceil(PARTIAL_NUM·N / 2^16)``) or a fixed count ``partial_k =
    k`` (capped at N). The datapath is the same with k for N: ``S2`` sums the first k,
    ``D = k·S2``, ``De = (D << G) + k²·eps_q`` and ``A = k·X``; the mean of squares is
    never divided out (``x/sqrt(S2/k) = k·x/sqrt(k·S2)``), so no divide by k, shift or
    reciprocal is needed for any k. Deviation: p is restricted to that 2^-16 grid (the
    error names the nearest one below); :meth:`reference` uses the same k.
    """

    method: ClassVar[str] = "rmsnorm"
    source: ClassVar[str] = "Zhang & Sennrich, RMSNorm (2019), on the hwapprox rsqrt_lut unit"
    #: where an option's method comes from (``hwapprox list``)
    option_sources: ClassVar[dict[str, str]] = {
        "partial": "pRMSNorm, Zhang & Sennrich (NeurIPS 2019) §4: RMS of the first "
        "k = ceil(p·N) elements",
        "partial_k": "pRMSNorm with the count k given (capped at N)",
    }
    center: ClassVar[bool] = False


@functools.lru_cache(maxsize=32)
def _rsqrt_rel_error(index_bits: int, frac_bits: int, newton_steps: int) -> float:
    p = frac_bits
    m = np.arange(1 << p, 1 << (p + 2), dtype=np.int64)
    y = rsqrt_norm(m, rsqrt_table(index_bits, p), index_bits, p, newton_steps)
    rel = np.ldexp(y.astype(np.float64), -p) * np.sqrt(np.ldexp(m.astype(np.float64), -p))
    return float(np.max(np.abs(rel - 1.0)))


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
