"""Integer-only softmax of the I-BERT family: I-BERT ``IntSoftmax`` (registry name
``ibert``, :class:`IBertSoftmax`) and I-ViT Shiftmax (``shiftmax``,
:class:`ShiftmaxSoftmax`): an integer exp per element, one integer divider per row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx import intmath
from hwapprox.approx.base import Cost, RawArray, SpecError, require
from hwapprox.approx.hwparams import overflow_code, raw_width, sbits, ubits
from hwapprox.approx.softmax._common import (
    _FIX16_6,
    _MEMO_MAX_BITS,
    SoftmaxSpec,
    _cached,
    _max_minus,
    _saturate_fresh,
    _zero_masked,
)
from hwapprox.fixed import FixedFormat, Rounding

_UFIX9_1_TRN_SAT = FixedFormat.parse("ap_ufixed<9,1,AP_TRN,AP_SAT>")


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
        self._require(
            k.max_exp.bit_length() <= 62,
            "in_fmt",
            self.in_fmt,
            f"i-exp needs {k.max_exp.bit_length()} bits at this scale (int64 allows 62); "
            "use fewer fraction bits",
        )
        self._require(
            0 <= self.out_fmt.frac_bits <= self.factor_bits,
            "out_fmt",
            self.out_fmt,
            f"fraction bits must be in [0, factor_bits={self.factor_bits}]",
        )
        if self.requant == "calibrated":
            self._require(
                k.max_exp.bit_length() <= 61 and self._requant_mult()[1] >= 31,
                "in_fmt",
                self.in_fmt,
                "calibrated requantisation needs e(0) < 2^61 and > 2^(exp_bits-1)",
            )
        self._require(
            self.exp_bits + self.factor_bits <= 62,
            "factor_bits",
            self.factor_bits,
            f"exp_bits + factor_bits must be <= 62 (exp_bits={self.exp_bits})",
        )

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
        require(
            1 <= rows <= nmax,
            f"{self._name()}: rows of length {rows} exceed the exp sum width (at most {nmax})",
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
            "OUT_SIGNED": int(self.out_fmt.signed),
            "OUT_OVF": overflow_code(self.out_fmt.overflow),
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
            **self._log_code_params(),
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
        self._require(
            x0 < 0, "in_fmt", self.in_fmt, "scale too coarse: x0 = floor(-1/S) must be < 0"
        )
        self._require(
            ((-x0) << self.n).bit_length() <= 31,
            "n",
            self.n,
            f"exp(0) = -x0·2^n = {(-x0) << self.n} must fit 31 bits (x0 = {x0} from {self.in_fmt})",
        )
        self._require(
            0 <= self.out_fmt.frac_bits <= 31,
            "out_fmt",
            self.out_fmt,
            "fraction bits must be in [0, 31]",
        )

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set for rows of up to ``n`` elements (default 2^16).

        Input codes ``x`` in ``[lo, hi]``; ``x0 < 0`` and ``n`` (``EXP_N``) are the
        shift-exp constants (:func:`~hwapprox.approx.intmath.shift_exp`):

        ========= ======== =========================================================
        name      sign     value range -> bits
        ========= ======== =========================================================
        X_W       signed   an input code (``ap_ufixed`` zero-extended)
        DIFF_W    signed   ``x - max`` in ``[-(hi - lo), 0]``
        ST_W      signed   ``t = d + (d >> 1) - (d >> 4)`` (its partial sum
                           ``d + (d >> 1)`` too) for ``d`` in that range, and the clip
                           ``EXP_N·x0``
        SQ_W      unsigned ``q = floor(t / x0)`` in ``[0, EXP_N]``
        SR_W      signed   ``r = t - x0·q`` in ``(x0, 0]``
        SEI_W     unsigned ``(r - 2·x0) << (EXP_N - q) <= -2·x0·2^EXP_N`` (pytorch
                           variant, before the halving)
        SE_W      unsigned ``e <= -x0·2^EXP_N`` (validated ``< 2^31``)
        SUM_W     unsigned ``Σ e <= n·(-x0·2^EXP_N)``, before the ``2^31 - 1`` clamp
        FACTOR_W  unsigned the clamped sum and ``(2^31 - 1) / sum``, both ``< 2^31``
        PROD_W    unsigned ``e·factor <= sum·factor <= 2^31 - 1`` (a clamped sum has
                           factor 1 and ``e < 2^31``)
        Y_W       signed   ``y = e·factor >> OUT_SHIFT < 2^OUT_F``, the signed carrier
                           of the output cast
        ========= ======== =========================================================
        """
        rows = 1 << 16 if n is None else int(n)
        require(rows >= 1, f"shiftmax: rows of {rows} elements")
        x0, nn = self._x0(), self.n
        lo, hi = self.in_fmt.min_raw, self.in_fmt.max_raw
        d_lo = lo - hi
        e_max = -x0 << nn
        lim = (1 << 31) - 1
        f = self.out_fmt.frac_bits
        return {
            "IN_W": self.in_fmt.width,
            "X_W": raw_width(self.in_fmt),
            "OUT_W": self.out_fmt.width,
            "OUT_F": f,
            "X0": x0,
            "EXP_N": nn,
            "TVM": int(self.variant == "tvm"),
            "SUM_MAX": lim,
            "OUT_SIGNED": int(self.out_fmt.signed),
            "OUT_OVF": overflow_code(self.out_fmt.overflow),
            "OUT_SHIFT": 31 - f,
            "DIFF_W": sbits(d_lo, 0),
            "ST_W": sbits(min(d_lo + (d_lo >> 1), d_lo + (d_lo >> 1) - (d_lo >> 4), nn * x0), 0),
            "SQ_W": ubits(nn),
            "SR_W": sbits(x0 + 1, 0),
            "SEI_W": ubits(-2 * x0 << nn),
            "SE_W": ubits(e_max),
            "SUM_W": ubits(rows * e_max),
            "FACTOR_W": ubits(lim),
            "PROD_W": ubits(lim),
            "Y_W": sbits(0, lim >> (31 - f)),
            **self._log_code_params(),
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
