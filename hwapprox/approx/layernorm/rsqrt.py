"""The hwapprox single-pass LayerNorm unit ``rsqrt_lut`` (Σx, Σx², exact integer
variance, 1/sqrt by leading-one normalisation + table + Newton) and ``rmsnorm``, its
datapath without the mean.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox._cache import BoundedMemo
from hwapprox.approx import _kernels
from hwapprox.approx.base import Cost, require
from hwapprox.approx.hwparams import overflow_code, raw_width, rounding_code, ubits
from hwapprox.approx.intmath import bit_length
from hwapprox.approx.layernorm._common import (
    RawArray,
    _affine_kernel_args,
    _check_norm_bits,
    _LayerNormSpec,
    _round_half_up_shift,
    affine_out,
)
from hwapprox.fixed import (
    MAX_RAW_BITS,
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


#: :meth:`RsqrtLutLayerNorm.rows_f32`'s kernel arguments by (spec, row length, gamma, beta)
_F32_PLANS: BoundedMemo[tuple[Any, ...]] = BoundedMemo(256)


@functools.lru_cache(maxsize=256)
def _eps_code(eps: float, e: int) -> int:
    """``max(1, round(eps·2^e))`` half up, exact from the double ``eps`` (memoised: read
    by every call of a LayerNorm model)."""
    return max(1, math.floor(Fraction(eps) * Fraction(2) ** e + Fraction(1, 2)))


@dataclass(frozen=True)
class RsqrtLutLayerNorm(_LayerNormSpec):
    """hwapprox single-pass LayerNorm unit: exact statistics, table + Newton 1/sqrt.

    N is the row length at call time, ``1 <= N <= max_n``; ``max_n`` sizes
    the accumulators (:meth:`hw_params`). Notation: ``X`` raw input (``F`` =
    in_fmt fraction bits, ``W`` its width), ``P = rsqrt_frac_bits``, ``b =
    rsqrt_table_bits``, ``G = eps_guard_bits`` (even), ``Fz =
    norm_frac_bits``. Every step is an integer operation; ``>>`` is floor.

    Pass 1 (while the row streams in):
      ``S1 = Σ X`` (signed, ``S1_W``), ``S2 = Σ X²`` (unsigned, ``S2_W``).
    Per row (once):
      ``D = N·S2 - S1²`` (exact; = N²·var·2^2F, no rounding: the mean is
      never divided out), ``De = (D << G) + N²·eps_q`` with the constant
      ``eps_q = round(eps·2^(2F+G))`` (``DE_W``);
      ``L = bitlen(De)``, ``k = (L-1) >> 1`` (even shift 2k: ``4^k <= De < 4^(k+1)``);
      ``m = De >> (2k-P)`` if ``2k >= P`` else ``De << (P-2k)`` (``m`` in
      ``[2^P, 2^(P+2))``, ``P+2`` bits, truncated);
      ``y = rsqrt_norm(m)`` (table ``2^b`` entries of ``P`` bits, then
      ``newton_steps`` Newton steps, see :func:`rsqrt_norm`);
      ``sh = P + k - G/2 - Fz`` (signed per-row shift).
    Pass 2 (on the way out, γ_i/β_i from memory):
      ``A = N·X - S1`` (``A_W``; RMSNorm: ``A = N·X``),
      ``Z = (A·y + 2^(sh-1)) >> sh`` (round half up; ``A·y << -sh`` if sh <= 0),
      so ``Z ≈ (x - mean)/sqrt(var + eps)·2^Fz`` (``Z_W``);
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
        w = self._acc_widths()
        for key, what in (("DE_W", "De"), ("AY_W", "A·y")):
            require(
                w[key] <= MAX_RAW_BITS,
                f"{name}: in_fmt={self.in_fmt}, max_n={self.max_n} need a {w[key]}-bit "
                f"{what} accumulator; the int64 model holds {MAX_RAW_BITS}. Lower max_n "
                f"or eps_guard_bits, or narrow in_fmt",
            )
        require(
            w["ACC_W"] <= MAX_RAW_BITS,
            f"{name}: Z·γ needs {w['ACC_W']} bits (norm_frac_bits={self.norm_frac_bits}, "
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
        return _eps_code(self.eps, 2 * self.in_fmt.frac_bits + self.eps_guard_bits)

    def _acc_widths(self) -> dict[str, int]:
        """The accumulator widths of :meth:`hw_params` (rows up to ``max_n``; see its table)."""
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
            "N_BITS": n.bit_length(),
            "S1_W": s1.bit_length() + 1,
            "S2_W": s2.bit_length(),
            "D_W": d.bit_length(),
            "DE_W": de.bit_length(),
            "A_W": a.bit_length() + 1,
            "AY_W": (a * 2 * y_max).bit_length() + 1,
            "Z_W": z_bits,
            # Z·γ (signed product) plus β aligned by beta_shift, one carry
            "ACC_W": max(
                z_bits + raw_width(self.gamma_fmt),
                raw_width(self.beta_fmt) + self._beta_shift,
            )
            + 1,
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
        ``1..max_n``), derived from the largest input
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
        w = self._acc_widths()
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
            **{k: w[k] for k in ("N_BITS", "S1_W", "S2_W", "D_W", "DE_W")},
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
            **{k: w[k] for k in ("A_W", "AY_W", "Z_W", "ACC_W")},
            "AYS_W": w["AY_W"] + lsh + 1,
        }

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
        table = rsqrt_table(self.rsqrt_table_bits, p)
        args = _affine_kernel_args(
            x, self.norm_frac_bits, g, self.gamma_fmt, b, self.beta_fmt, self.out_fmt
        )
        if args is not None and _kernels.whole_rows:
            # the lines below, row by row in one compiled call: the same integers
            out = np.empty_like(x)
            eps_nn = n * n * self.eps_q
            kw = (self.center, gb, eps_nn, p, self.rsqrt_table_bits, table, self.newton_steps)
            if _kernels.rsqrt_rows(x, k_rms, *kw, self.norm_frac_bits, *args, out):
                return out
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
        y = rsqrt_norm(m, table, self.rsqrt_table_bits, p, self.newton_steps)
        sh = p + k - gb // 2 - self.norm_frac_bits
        # pass 2: normalise and apply γ, β
        # A·y with A = N·X - S1, evaluated as X·(N·y) - S1·y: the same integers,
        # one full-width multiply per element fewer in numpy.
        c1 = nn * y
        c0 = s1 * y if self.center else np.zeros_like(y)
        if args is not None and sh.size and int(sh.min()) > -63 and int(sh.max()) < 63:
            # the lines below in one compiled pass, the same integers
            out = np.empty_like(x)
            _kernels.scale_affine_rows(x, c1, c0, sh, *args, out)
            return out
        a = x * c1[:, None]
        a -= c0[:, None]
        z = _round_half_up_shift(a, sh[:, None])
        return affine_out(z, self.norm_frac_bits, g, self.gamma_fmt, b, self.beta_fmt, self.out_fmt)

    def rows_f32(
        self,
        xf: npt.NDArray[np.float32],
        gamma: npt.ArrayLike | None = None,
        beta: npt.ArrayLike | None = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> npt.NDArray[np.floating] | None:
        """``output_to_float(model(quantize_input(xf), gamma=gamma, beta=beta), dtype)`` of
        C-contiguous float32 rows ``xf`` (R, N) in one compiled pass
        (:func:`hwapprox.approx._kernels.rsqrt_rows_f32`, the same integers as the codes
        path); None where that pass does not apply (no numba, another input quantisation,
        output cast or width, a NaN/inf input or a row's shift out of range): the caller
        then takes the codes path, which gives these values or raises its errors."""
        run = self.f32_runner(xf, gamma, beta, dtype)
        return None if run is None else run(xf)

    def f32_runner(
        self,
        xf: npt.NDArray[np.float32],
        gamma: npt.ArrayLike | None = None,
        beta: npt.ArrayLike | None = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> Callable[[npt.NDArray[np.float32]], npt.NDArray[np.floating] | None] | None:
        """:meth:`rows_f32` bound to rows of ``xf``'s shape and these gamma/beta (its
        kernel's arguments resolved once, :meth:`f32_plan`): ``run(rows)`` of C-contiguous
        float32 rows of that shape is ``rows_f32(rows, gamma, beta, dtype)``; None where
        :meth:`f32_plan` is (the pass does not apply to such rows); ``run`` gives None
        where it gives up on the rows' values, as :meth:`rows_f32` does."""
        dt = np.dtype(dtype)
        args = self.f32_plan(xf, gamma, beta, dt)
        if args is None:
            return None
        kernel = _kernels.rsqrt_rows_f32

        def run(rows: npt.NDArray[np.float32]) -> npt.NDArray[np.floating] | None:
            out = np.empty(rows.shape, dtype=dt)
            return out if kernel(rows, *args, out) == 0 else None

        return run

    def f32_plan(
        self,
        xf: npt.NDArray[np.float32],
        gamma: npt.ArrayLike | None,
        beta: npt.ArrayLike | None,
        dtype: np.dtype[Any],
    ) -> tuple[Any, ...] | None:
        """The arguments of the float32-row kernels (:func:`rows_f32`,
        :func:`hwapprox.approx._kernels.rsqrt_report_f32`) after the rows, or None where
        they do not apply (no numba, another input quantisation, output cast or width,
        rows not C-contiguous float32). Memoised per spec, row length and read-only
        gamma/beta (by identity)."""
        q = self._f32_quant()
        if (
            q is None
            or not _kernels.whole_rows
            or xf.dtype != np.float32
            or xf.ndim != 2
            or not xf.flags.c_contiguous
            or xf.shape[1] == 0
            or dtype not in (np.float32, np.float64)
            or self.out_fmt.width > 53
            or abs(self.out_fmt.frac_bits) > 960
        ):
            return None
        n = xf.shape[1]
        key = (self, n, id(gamma), id(beta))
        plan = _F32_PLANS.get(key, None)
        if plan is None or plan[0] is not gamma or plan[1] is not beta:
            plan = (gamma, beta, self._f32_args(n, gamma, beta, q))
            if all(v is None or not np.asarray(v).flags.writeable for v in (gamma, beta)):
                _F32_PLANS.put(key, plan)  # (read-only parameters: by identity)
        return plan[2]  # type: ignore[no-any-return]

    def _f32_args(
        self,
        n: int,
        gamma: npt.ArrayLike | None,
        beta: npt.ArrayLike | None,
        q: tuple[float, float, float, bool],
    ) -> tuple[Any, ...] | None:
        """:meth:`rows_f32`'s kernel arguments for rows of ``n`` (its checks and errors
        are the codes path's), or None where the kernel's output stage does not apply."""
        self._check_n(n, self.max_n, "the accumulators are sized for max_n; raise max_n")
        g, b = self._affine_raw(n, gamma, beta)
        args = _affine_kernel_args(
            np.empty((1, n), dtype=np.int64),  # (only its layout is read)
            self.norm_frac_bits, g, self.gamma_fmt, b, self.beta_fmt, self.out_fmt,
        )  # fmt: skip
        if args is None:
            return None
        p, k_rms = self.rsqrt_frac_bits, min(self.stat_count(n), n)
        return (
            *q, k_rms, self.center, self.eps_guard_bits, k_rms * k_rms * self.eps_q, p,
            self.rsqrt_table_bits, rsqrt_table(self.rsqrt_table_bits, p), self.newton_steps,
            self.norm_frac_bits, *args, 2.0**-self.out_fmt.frac_bits,
        )  # fmt: skip

    def rsqrt_rel_error(self) -> float:
        """Max |y·2^-P·sqrt(m·2^-P) - 1| over every mantissa m in [2^P, 2^(P+2)) (exhaustive)."""
        return _rsqrt_rel_error(self.rsqrt_table_bits, self.rsqrt_frac_bits, self.newton_steps)

    def cost(self) -> Cost:
        w = self._acc_widths()
        p = self.rsqrt_frac_bits
        nb = w["N_BITS"]
        mults = [
            (self.in_fmt.width, self.in_fmt.width),  # X² (per element)
            (self.in_fmt.width, nb),  # N·X (per element)
            (w["A_W"], p + 1),  # A·y (per element)
            (w["Z_W"], self.gamma_fmt.width),  # Z·γ (per element)
        ]
        per_row = [(w["S2_W"], nb), (w["S1_W"], w["S1_W"])] + [
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
            widest_bits=w["DE_W"],
            notes=(
                "per element: X², N·X, A·y, Z·γ; per row (may be multi-cycle/shared): "
                f"{len(per_row)} multipliers {per_row}, one leading-one detector of "
                f"{w['DE_W']} bits"
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
