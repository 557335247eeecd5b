"""Elementwise attention normalisers: sigmoid attention and ReLU attention.

Both replace the softmax of ``softmax(QKᵀ/√d)·V`` by a function of each score
alone, so the row needs no max and no sum (no row buffer, no second pass):

* **sigmoid attention** (Ramapuram et al. 2024, "Theory, Analysis, and Best
  Practices for Sigmoid Self-Attention", FlashSigmoid): ``p = σ(x + b)`` with
  ``b = -log n`` by default (n the sequence length), operator
  ``sigmoid_attention``. Methods :class:`SigmoidLut` (``lut``) and
  :class:`SigmoidPwl` (``pwl``): the same datapaths as GELU's
  (:mod:`hwapprox.approx.fntable`) with the bias **folded into the table**: the
  function tabulated or fitted is ``x -> σ(x + b)``, so the bias is exact and
  costs no adder.
* **ReLU attention** (Wortsman et al. 2023, "Replacing softmax with ReLU in
  Vision Transformers"): ``p = ReLU(x) / n`` (n the sequence length), operator
  ``relu_attention``, method :class:`ReluAttention` (``wortsman``): a right
  shift when n is a power of two, else one multiply by ``1/n`` rounded to
  ``recip_bits`` significant bits (a deviation from the exact division, bounded
  in the class docstring).

Maths contract: raw codes of ``in_fmt`` to raw codes of ``out_fmt``,
elementwise, pure int64 numpy; the one final cast uses ``out_fmt``'s rounding
and overflow modes. The float64 references are :func:`sigmoid_attention_reference`
and :func:`relu_attention_reference`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox.approx import _kernels
from hwapprox.approx.base import Cost, Operator
from hwapprox.approx.fntable import FnSpec, LutTable, PwlTable
from hwapprox.fixed import MAX_RAW_BITS, FixedFormat

__all__ = [
    "ReluAttention",
    "SigmoidLut",
    "SigmoidPwl",
    "relu_attention_reference",
    "sigmoid_attention_reference",
]

RawArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

_FIX16_6 = FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>")
_FIX10_5 = FixedFormat.parse("ap_fixed<10,5,AP_RND,AP_SAT>")
_UFIX12_0 = FixedFormat.parse("ap_ufixed<12,0,AP_RND,AP_SAT>")
_UFIX10_0 = FixedFormat.parse("ap_ufixed<10,0,AP_RND,AP_SAT>")
_UFIX16_1 = FixedFormat.parse("ap_ufixed<16,1,AP_RND,AP_SAT>")
_FIX18_0 = FixedFormat.parse("ap_fixed<18,0,AP_RND,AP_SAT>")
_FIX18_4 = FixedFormat.parse("ap_fixed<18,4,AP_RND,AP_SAT>")


def sigmoid_attention_reference(x: npt.ArrayLike, bias: float) -> FloatArray:
    """``σ(x + bias) = 1 / (1 + e^-(x + bias))`` in float64 (stable for both signs)."""
    z = np.asarray(x, dtype=np.float64) + float(bias)
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def relu_attention_reference(x: npt.ArrayLike, n: int) -> FloatArray:
    """``max(x, 0) / n`` in float64."""
    return np.maximum(np.asarray(x, dtype=np.float64), 0.0) / float(n)


@dataclass(frozen=True)
class _SigmoidSpec(FnSpec):
    """Fields and checks the sigmoid-attention methods share."""

    operator: ClassVar[Operator] = Operator.SIGMOID_ATTENTION

    in_fmt: FixedFormat = _FIX16_6
    out_fmt: FixedFormat = _UFIX12_0
    #: n of the default bias ``b = -log n`` (the sequence length)
    seq_len: int = 128
    #: the bias b added to every score; None: ``-log(seq_len)`` (the paper's default)
    bias: float | None = None

    @property
    def b(self) -> float:
        """The bias in effect: ``bias``, or ``-log(seq_len)``."""
        return -math.log(self.seq_len) if self.bias is None else float(self.bias)

    def validate(self) -> None:
        self._require(
            isinstance(self.seq_len, int) and not isinstance(self.seq_len, bool)
            and self.seq_len >= 1,
            "seq_len", repr(self.seq_len), "must be an int >= 1 (the sequence length n)",
        )  # fmt: skip
        self._require(
            self.bias is None
            or (isinstance(self.bias, int | float) and math.isfinite(self.bias)),
            "bias", repr(self.bias), "must be a finite number or None (None: -log seq_len)",
        )  # fmt: skip
        self._require(
            self.in_fmt.signed, "in_fmt", repr(str(self.in_fmt)), "must be signed (scores)"
        )
        for name in ("in_fmt", "out_fmt"):
            fmt = getattr(self, name)
            self._require(
                fmt.width <= 40, name, repr(str(fmt)), "at most 40 bits wide for the int64 models"
            )

    def reference(self, x: npt.ArrayLike, **kw: Any) -> FloatArray:
        """``σ(x + b)`` in float64."""
        return sigmoid_attention_reference(x, self.b)

    def _fn(self) -> Callable[[FloatArray], FloatArray]:
        b = self.b
        return lambda v: sigmoid_attention_reference(v, b)

    def _fn_key(self) -> Hashable:
        return ("sigmoid", self.b)


@dataclass(frozen=True)
class SigmoidLut(_SigmoidSpec, LutTable):
    """Sigmoid attention by a direct table of ``σ(x + b)`` (bias folded into the table).

    ``T[i] = out_fmt.quantize(σ(x_i + b))`` per input code (``index_bits = 0``),
    or the rounded midpoint of the bin's min and max with fewer index bits; the
    error is at most half an output LSB per code (full index) unless out_fmt
    saturates (``σ -> 1`` in an ``ap_ufixed<W,0>`` is ``1 - 2^-W``). Datapath
    :class:`~hwapprox.approx.fntable.LutTable`, RTL ``hwa_lut``.
    """

    method: ClassVar[str] = "lut"
    source: ClassVar[str] = (
        "sigmoid attention σ(x + b), b = -log n (Ramapuram et al. 2024, FlashSigmoid); "
        "direct table of the float64 reference with the bias folded in"
    )

    in_fmt: FixedFormat = _FIX10_5
    out_fmt: FixedFormat = _UFIX10_0
    index_bits: int = 0

    def validate(self) -> None:
        super().validate()
        self._check_lut()


@dataclass(frozen=True)
class SigmoidPwl(_SigmoidSpec, PwlTable):
    """Sigmoid attention by minimax piecewise-linear segments of ``σ(x + b)``.

    The fit covers ``[lo, hi]`` (default ``-b ∓ T`` with ``T = ln(2^(F_out + 1))``,
    centred on the sigmoid's midpoint ``x = -b``, clipped to the in_fmt range);
    below the first breakpoint the output is 0, from the last one on it is 1
    (``TOP_ONE``): the default T puts those tails within half an output LSB
    (``σ(-T) <= 2^-(F_out+1)``; T = 8.3 at F_out = 12, 11.8 at 16). Datapath
    :class:`~hwapprox.approx.fntable.PwlTable` (the GELU unit's compare + MAC),
    RTL ``hwa_pwl`` with ``TOP_ONE = 1``.
    """

    method: ClassVar[str] = "pwl"
    source: ClassVar[str] = (
        "sigmoid attention σ(x + b), b = -log n (Ramapuram et al. 2024, FlashSigmoid); "
        "minimax piecewise-linear segments (hwapprox.approx.pwl) with the bias folded in"
    )
    TOP_ONE: ClassVar[bool] = True

    segments: int = 32
    #: fitted interval in score units; None: -b ∓ T (T: the tails within LSB/2)
    lo: float | None = None
    hi: float | None = None
    slope_fmt: FixedFormat = _FIX18_0
    intercept_fmt: FixedFormat = _FIX18_4

    @property
    def fit_range(self) -> tuple[float, float]:
        """``[lo, hi]`` (defaults ``-b ∓ T``, ``T = ln 2^(F_out+1)``) clipped to the
        in_fmt range."""
        t = (self.out_fmt.frac_bits + 1) * math.log(2.0)
        lo = -self.b - t if self.lo is None else float(self.lo)
        hi = -self.b + t if self.hi is None else float(self.hi)
        fmin, fmax = float(self.in_fmt.min), float(self.in_fmt.max)
        return max(lo, fmin), min(hi, fmax)

    def validate(self) -> None:
        super().validate()
        for name in ("lo", "hi"):
            v = getattr(self, name)
            self._require(
                v is None or (isinstance(v, int | float) and math.isfinite(v)),
                name, repr(v), "must be a finite number or None (None: -b ∓ T)",
            )  # fmt: skip
        lo, hi = self.fit_range
        self._require(
            lo < hi,
            "hi",
            repr(self.hi),
            f"the fitted range [{lo:g}, {hi:g}] is empty (lo, hi and the in_fmt "
            f"{self.in_fmt} range [{float(self.in_fmt.min)}, {float(self.in_fmt.max)}])",
        )
        self._check_pwl()


@dataclass(frozen=True)
class ReluAttention(FnSpec):
    """ReLU attention ``p = ReLU(x) / n`` (Wortsman et al. 2023).

    Datapath: ``acc = max(x, 0)·K`` exact, then one cast from ``FA`` fraction
    bits into ``out_fmt``:

    * n a power of two ``2^k``: ``K = 1``, ``FA = F_in + k`` -- a right shift,
      exact (only the output rounding);
    * otherwise ``e = ceil(log2 n)``, ``K = round_half_up(2^(R + e) / n)`` (``R =
      recip_bits`` significant bits, ``2^(R-1) < K <= 2^R``), ``FA = F_in + R + e``.
      Deviation from the paper's exact division: ``|K·2^-(R+e) - 1/n| <=
      2^-(R+e+1)``, so the error before the output cast is at most
      ``max|x|·2^-(R+e+1)``.
    """

    operator: ClassVar[Operator] = Operator.RELU_ATTENTION
    method: ClassVar[str] = "wortsman"
    source: ClassVar[str] = (
        "ReLU attention ReLU(x)/n (Wortsman et al. 2023, 'Replacing softmax with ReLU "
        "in Vision Transformers'); a shift when n is a power of two"
    )

    in_fmt: FixedFormat = _FIX16_6
    out_fmt: FixedFormat = _UFIX16_1
    #: n, the sequence length the scores are divided by
    seq_len: int = 128
    #: significant bits of 1/n when n is not a power of two
    recip_bits: int = 16

    def validate(self) -> None:
        self._require(
            isinstance(self.seq_len, int) and not isinstance(self.seq_len, bool)
            and 1 <= self.seq_len <= 1 << 20,
            "seq_len", repr(self.seq_len), "must be an int in [1, 2^20] (the sequence length n)",
        )  # fmt: skip
        self._require(
            isinstance(self.recip_bits, int) and 2 <= self.recip_bits <= 24,
            "recip_bits", repr(self.recip_bits), "must be an int in [2, 24]",
        )  # fmt: skip
        self._require(
            self.in_fmt.signed, "in_fmt", repr(str(self.in_fmt)), "must be signed (scores)"
        )
        for name in ("in_fmt", "out_fmt"):
            fmt = getattr(self, name)
            self._require(
                fmt.width <= 40, name, repr(str(fmt)), "at most 40 bits wide for the int64 models"
            )
        hw = self.hw_params()
        self._require(
            hw["ACC_W"] + 1 <= MAX_RAW_BITS,
            "recip_bits",
            repr(self.recip_bits),
            f"with in_fmt {self.in_fmt} needs a {hw['ACC_W']}-bit product; use fewer bits",
        )

    @property
    def pow2(self) -> bool:
        """n is a power of two (the unit is a shift)."""
        return self.seq_len & (self.seq_len - 1) == 0

    def _mult_shift(self) -> tuple[int, int]:
        """``(K, FA)`` of the class docstring."""
        n, f_in = self.seq_len, self.in_fmt.frac_bits
        if self.pow2:
            return 1, f_in + n.bit_length() - 1
        e = (n - 1).bit_length()
        r = self.recip_bits
        k = math.floor(Fraction(2 ** (r + e), n) + Fraction(1, 2))
        return k, f_in + r + e

    def reference(self, x: npt.ArrayLike, **kw: Any) -> FloatArray:
        """``max(x, 0) / n`` in float64."""
        return relu_attention_reference(x, self.seq_len)

    def _model_flat(self, x: RawArray) -> RawArray:
        k, fa = self._mult_shift()
        return self._to_out(np.maximum(x, 0) * np.int64(k), fa)

    def model(self, raw: npt.ArrayLike, **kw: Any) -> RawArray:
        """:meth:`_model_flat` with the range check; int64 codes whose output cast is one
        rounding right shift into a saturating format take one compiled pass
        (:func:`hwapprox.approx._kernels.relu_mult_cast`: the multiply, shift and clip
        vectorise, where the memo lookup gathers; the same codes)."""
        arr = np.asarray(raw)
        if arr.dtype == np.int64 and arr.size and _kernels.available():
            k, fa = self._mult_shift()
            c = _kernels.cast_params(fa, self.out_fmt)
            if c is not None:
                flat = np.ascontiguousarray(arr).reshape(-1)
                out = np.empty(flat.shape, dtype=np.int64)
                lo_in, hi_in = self.in_fmt.min_raw, self.in_fmt.max_raw
                if _kernels.relu_mult_cast(flat, lo_in, hi_in, k, *c, out):
                    return out.reshape(arr.shape)
        return super().model(raw, **kw)

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set: SV parameters of ``hwa_relu_attention`` and HLS constants.

        ========= ======== =========================================================
        name      sign     value range -> bits
        ========= ======== =========================================================
        MULT_W    unsigned ``K`` (1 for a power-of-two n: the multiply is wiring)
        ACC_W     signed   ``max(x, 0)·K < 2^(IN_W-1)·2^MULT_W``: ``IN_W + MULT_W``
        ========= ======== =========================================================

        ``FA`` fraction bits of the product; ``OUT_SHIFT = FA - F_out``.
        """
        k, fa = self._mult_shift()
        mult_w = max(1, k.bit_length())
        return {
            **self._hw_common(),
            "MULT": k,
            "MULT_W": mult_w,
            "FA": fa,
            "OUT_SHIFT": fa - self.out_fmt.frac_bits,
            "ACC_W": self.in_fmt.width + mult_w,
        }

    def cost(self) -> Cost:
        k, _ = self._mult_shift()
        return Cost(
            multipliers=0 if k == 1 else 1,
            mult_bits=() if k == 1 else ((self.in_fmt.width, k.bit_length()),),
            adders=1,
            widest_bits=self.in_fmt.width + k.bit_length(),
            notes="a shift (n a power of two)" if k == 1 else "one constant multiply by 1/n",
        )
