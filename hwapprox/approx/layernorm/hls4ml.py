"""What hls4ml 1.3 ``nnet_layernorm.h`` computes, bit-exact: two passes over the
row, 1/sqrt by one read of hls4ml's table.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox.approx import _kernels
from hwapprox.approx.base import Cost, require
from hwapprox.approx.hwparams import ubits
from hwapprox.approx.layernorm._common import (
    _FIX16_6,
    _HLS4ML_TABLE_T,
    RawArray,
    _cast_modes,
    _clog2,
    _LayerNormSpec,
    _requant,
)
from hwapprox.fixed import (
    MAX_RAW_BITS,
    FixedFormat,
    Overflow,
    Rounding,
    cast,
)


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

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set of the HLS unit (``layernorm_hls4ml_op``), rows of ``n``.

        The datapath is ``ap_fixed`` arithmetic on the formats themselves (``accum_t``,
        ``table_t``, ``scale_t = gamma_fmt``, ``bias_t = beta_fmt``: every assignment
        into ``accum_t`` rounds and overflows as the class docstring says; the final
        ``d·r·γ + β`` is exact, one cast). Constants: ``K_INV`` (the raw ``accum_t``
        code of ``1/n``), ``TSCALE = table_size·2^table_range_power2`` and hls4ml's own
        config values ``EPS_POW10`` (``epsilon_power_of_10``), ``TABLE_RANGE_POW2``.

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
            "EPS_POW10": self.epsilon_power_of_10,
            "TABLE_RANGE_POW2": self.table_range_power2,
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
        k_inv = acc.quantize(1.0 / n)
        out = self._rows_compiled(x, g, b, int(k_inv))
        if out is not None:
            return out
        prod_fmt = FixedFormat(2 * acc.width, 2 * acc.int_bits)
        xa = cast(x, self.in_fmt, acc)
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

    def _rows_compiled(self, x: RawArray, g: RawArray, b: RawArray, k_inv: int) -> RawArray | None:
        """:meth:`_model_rows` row by row in one compiled call
        (:func:`._kernels.hls4ml_rows`: the same integers), or None where it does not
        apply: ``accum_t`` not signed AP_TRN / AP_RND with AP_SAT or AP_WRAP and ``0 <
        F_acc < 63``, an output cast other than :func:`._cast_modes`' (or no numba), or
        :data:`._kernels.whole_rows` off. An input cast that cannot overflow (``accum_t``
        holds every ``in_fmt`` code shifted left) runs inside the kernel; any other is
        done first in numpy."""
        acc, fin = self.accum_fmt, self.in_fmt
        f_p = self.output_frac
        f_b = self.beta_fmt.frac_bits
        shift = f_p - self.out_fmt.frac_bits
        modes = _cast_modes(self.out_fmt)
        if not (
            modes
            and _kernels.whole_rows
            and acc.signed
            and acc.rounding in (Rounding.TRN, Rounding.RND)
            and acc.overflow in (Overflow.SAT, Overflow.WRAP)
            and 0 < acc.frac_bits < 63
            and acc.width < 64
            and f_b <= f_p
            and f_p - f_b < 63
            and 0 < shift < 63
        ):
            return None
        d = acc.frac_bits - fin.frac_bits
        if 0 <= d < 63 and acc.min_raw <= fin.min_raw << d and fin.max_raw << d <= acc.max_raw:
            xa, x_sh = x, d  # the cast is the shift
        else:
            xa, x_sh = np.ascontiguousarray(cast(x, fin, acc)), 0
        fa = acc.frac_bits
        a_half = 1 << (fa - 1) if acc.rounding is Rounding.RND else 0
        half = 1 << (shift - 1) if self.out_fmt.rounding is Rounding.RND else 0
        out = np.empty_like(x)
        _kernels.hls4ml_rows(
            xa, x_sh, acc.overflow is Overflow.SAT, acc.min_raw, acc.max_raw, 64 - acc.width,
            fa, a_half, k_inv, self.table_size << self.table_range_power2, self._table(),
            np.ascontiguousarray(g, dtype=np.int64), np.ascontiguousarray(b, dtype=np.int64),
            f_p - f_b, shift, half, *modes, out,
        )  # fmt: skip
        return out

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
