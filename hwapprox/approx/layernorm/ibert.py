"""I-BERT ``IntLayerNorm`` (Kim et al. 2021) and I-ViT's (Li & Gu 2023): exact integer
statistics, an integer Newton square root, the shared affine output stage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox.approx import _kernels
from hwapprox.approx.base import Cost, SpecError, require
from hwapprox.approx.hwparams import overflow_code, raw_width, rounding_code, sbits, ubits
from hwapprox.approx.intmath import bit_length
from hwapprox.approx.layernorm._common import (
    RawArray,
    _affine_kernel_args,
    _check_norm_bits,
    _LayerNormSpec,
    _round_div_even,
    _round_half_up_shift,
    _round_sqrt,
    affine_out,
)
from hwapprox.fixed import (
    MAX_RAW_BITS,
)


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

    def _row_kernel(self) -> bool | None:
        """The ``ivit`` flag of :func:`._kernels.ibert_rows` for this spec (False:
        I-BERT, True: I-ViT with at most 16 Newton steps, so that ``std >= 1``), or None
        where the compiled rows do not apply (a subclass with its own ``_std`` or
        ``_factor``, :data:`._kernels.whole_rows` off, no numba)."""
        if not (_kernels.whole_rows and _kernels.available()):
            return None
        cls = type(self)
        for base, ivit in ((IBertLayerNorm, False), (IVitLayerNorm, True)):
            if cls._std is base._std and cls._factor is base._factor:
                if ivit and self.newton_iterations > 16:
                    return None
                return ivit
        return None

    def _model_rows(
        self, x: RawArray, gamma: npt.ArrayLike | None = None, beta: npt.ArrayLike | None = None
    ) -> RawArray:
        n = x.shape[1]
        self._check_n(n, self.MAX_N, "int64 range of y_int·√N")
        g, b = self._affine_raw(n, gamma, beta)
        sqrtn = _round_sqrt(n << (2 * self.SQRTN_FRAC))
        zs = 30 + self.SQRTN_FRAC - self.norm_frac_bits
        kind = self._row_kernel()
        args = None if kind is None else _affine_kernel_args(
            x, self.norm_frac_bits, g, self.gamma_fmt, b, self.beta_fmt, self.out_fmt
        )  # fmt: skip
        if args is not None:  # the lines below, row by row in one compiled call
            out = np.empty_like(x)
            iters = getattr(self, "newton_iterations", 0)
            _kernels.ibert_rows(x, kind, self.shift, iters, sqrtn, zs, *args, out)
            return out
        s1 = x.sum(axis=1)
        mean = _round_div_even(s1, n)
        y = x - mean[:, None]
        std, _ = self._std(y)
        factor = self._factor(std)
        y_int = (y * factor[:, None]) >> 1
        z = _round_half_up_shift(y_int * np.int64(sqrtn), np.int64(zs))
        return affine_out(z, self.norm_frac_bits, g, self.gamma_fmt, b, self.beta_fmt, self.out_fmt)

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
