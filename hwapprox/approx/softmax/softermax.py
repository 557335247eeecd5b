"""Softermax (:class:`SoftermaxSoftmax`, Stevens et al., DAC 2021): the streaming
softmax in base 2 with an integer running max (rescaling is a shift) and PWL units for
2^x and the reciprocal. Its base-e sibling is :mod:`.online`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx import _kernels, intmath
from hwapprox.approx.base import Cost, RawArray
from hwapprox.approx.hwparams import overflow_code, raw_width, rounding_code, ubits
from hwapprox.approx.softmax._common import (
    _FIX16_6,
    _MEMO_MAX_BITS,
    SoftmaxSpec,
    _cached,
    _cast_prod,
    _zero_masked,
    derive_fields,
    derived_widths,
    event_scan,
)
from hwapprox.fixed import MAX_RAW_BITS, FixedFormat, Overflow, Rounding, cast

_F = FixedFormat.parse
_UFIX8_0_RND_SAT = _F("ap_ufixed<8,0,AP_RND,AP_SAT>")

#: Softermax's fixed internal formats before they were derived from ``out_fmt`` and
#: ``row_max`` (issue 26; an 8-bit design, rows up to 2047): what the tests and
#: ``benchmarks/bench_softmax.py`` compare the derived ones with
SOFTERMAX_FIXED_FORMATS_BEFORE_DERIVED: dict[str, Any] = {
    "log2e_fmt": "ap_ufixed<12,1,AP_RND>",
    "t_fmt": "ap_fixed<18,8,AP_RND,AP_SAT>",
    "pow2_fmt": "ap_ufixed<16,1,AP_RND>",
    "pow2_segments_log2": 4,
    "pow2_table_frac_bits": 16,
    "sum_fmt": "ap_ufixed<28,12,AP_TRN>",
    "recip_fmt": "ap_ufixed<16,1,AP_RND>",
    "recip_segments_log2": 4,
    "recip_work_frac_bits": 16,
}


def softermax_formats(
    out_fmt: FixedFormat,
    row_max: int,
    given: dict[str, Any] | None = None,
    in_fmt: FixedFormat = _FIX16_6,
) -> dict[str, Any]:
    """Softermax's default internal formats for ``out_fmt``, rows of up to ``row_max``
    elements and scores in ``in_fmt`` (only ``t_fmt``'s integer bits follow it), from
    the worst-case bound below. ``given``: fields the spec sets itself; ``F_p``
    follows a given ``pow2_fmt`` (else at most a given ``sum_fmt``'s fraction bits),
    the table and ``sum_fmt`` follow ``F_p``.

    With ``F = out_fmt.frac_bits`` (an output LSB is ``2^-F``) and ``L =
    ceil(log2 row_max)``:

    * ``log2e_fmt`` = ``ap_ufixed<F + 9, 1>``; ``t_fmt`` = ``ap_fixed<I + F + 3, I,
      AP_RND, AP_SAT>`` (``F_t = F + 3``, ``I = in_fmt.int_bits + 2``);
    * ``pow2_fmt`` = ``ap_ufixed<F_p + 1, 1>`` with ``F_p = F + L + 2``, a
      ``2^A``-segment PWL with ``A = max(4, ceil((F + 1)/2))`` and
      ``pow2_table_frac_bits`` = ``F_p + 2``;
    * ``sum_fmt`` = ``ap_ufixed<F_s + L + 2, L + 2, AP_TRN>``, ``F_s = F_p + 2``
      (``d < 2N``);
    * ``recip_fmt`` = ``ap_ufixed<F + 5, 1>``, ``recip_work_frac_bits`` = ``min(F +
      6, 29)``, a ``2^B``-segment PWL with ``B = ceil((F + 3)/2)``.

    **Bound** (to first order, relative errors; ``p_i = 2^(t_i - M) / D`` with
    ``D >= 1``: the element at the integer max contributes ``2^a >= 1``). An output
    errs by its numerator's relative error plus the sum's (a weighted mean of its
    terms'), times ``p_i <= 1``:

    * ``LOG2E`` rounded to ``F + 8`` fraction bits moves ``t_i - t_max`` by at most
      ``2^-(F + 9)·Δ_i`` (``Δ_i = x_max - x_i``), ``ln 2·2^-(F + 9)·Δ_i`` relative: in an
      output ``p_i <= e^-Δ_i`` that is at most ``ln 2·2^-(F + 9)/e`` (negligible); in
      the sum (a mean of ``Δ`` weighted by ``e^-Δ``, at most ``ln N + 1``) ``<=
      2^-(F + 6)`` for ``N <= 4096``;
    * ``t`` rounded to ``F_t = F + 3`` fraction bits (``M`` is an integer, exact):
      ``ln 2·2^-(F + 4) < 2^-(F + 4.5)``;
    * the PWL of ``2^-f`` over ``2^-A`` steps: ``(ln 2)²/8·2^-2A <= 2^-(F + 5)``;
    * the reciprocal's PWL over ``2^-B`` steps and its rounding: ``<= 2^-(2B + 1)
      <= 2^-(F + 4)`` (output only);
    * **coherent** (they do not average out: a flat background of N equal scores
      rounds the same way N times): each ``P`` rounded to ``pow2_fmt``, ``N·2^-(F_p
      + 1) <= 2^-(F + 3)`` against ``D >= 1``; the truncating rescale shifts (at most
      one per element, ``2^-F_s`` each), ``N·2^-F_s <= 2^-(F + 4)``.

    Numerator ``2^-F·(0.044 + 0.031)``, sum ``2^-F·(0.016 + 0.044 + 0.031)``; in all
    with the reciprocal and the coherent terms ``2^-F·(0.075 + 0.091 + 0.0625 + 0.125
    + 0.0625) = 0.42`` LSB before the output's own rounding (0.5 LSB): <= 1 LSB for
    every row of ``N <= row_max`` (a saturated output errs by the distance of ``p <=
    1`` to ``1 - 2^-W``, at most 1 LSB). Measured on the hard row
    kinds at W = 8..16, N up to 4096 (largest 1.00 LSB, at saturated outputs; <=
    0.60 elsewhere): ``tests/test_softmax_hard_rows.py``,
    ``benchmarks/results/softmax.md``.
    """
    given = given or {}
    f, lg, f_p = derived_widths(out_fmt, row_max, given, "pow2_fmt")
    f_t = f + 3
    if isinstance(given.get("t_fmt"), FixedFormat):
        f_t = given["t_fmt"].frac_bits
    i_t = in_fmt.int_bits + 2
    f_s = f_p + 2
    wf = min(f + 6, 29)
    return {
        "log2e_fmt": FixedFormat(f + 9, 1, False, Rounding.RND),
        "t_fmt": FixedFormat(i_t + f + 3, i_t, True, Rounding.RND, Overflow.SAT),
        "pow2_fmt": FixedFormat(f_p + 1, 1, False, Rounding.RND),
        "pow2_segments_log2": min(max(4, -(-(f + 1) // 2)), 12, max(f_t, 0)),
        "pow2_table_frac_bits": f_p + 2,
        "sum_fmt": FixedFormat(f_s + lg + 2, lg + 2, False, Rounding.TRN),
        "recip_fmt": FixedFormat(f + 5, 1, False, Rounding.RND),
        "recip_segments_log2": min(-(-(f + 3) // 2), 12, wf),
        "recip_work_frac_bits": wf,
    }


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

    Q-formats are not published: the paper fixes base 2, the integer running max with
    online normalisation and PWL units for 2^x and 1/x (16 segments each in its
    design); the formats and segment counts are the implementer's (mine).
    **Defaults** (issue 26): the internal formats and segment counts left None are
    derived from ``out_fmt`` and ``row_max`` by :func:`softermax_formats`, whose
    docstring carries the worst-case bound (the coherent rounding of a flat
    background included): at most 1 output LSB against the float64 softmax of the
    quantised scores for every row of ``N <= row_max`` (measured on the hard row
    kinds of :func:`~hwapprox.approx.stimulus.hard_softmax_rows` at W = 8..16, N up
    to 4096: ``tests/test_softmax_hard_rows.py``, ``benchmarks/results/softmax.md``).
    Deviation from the paper's scale: more PWL segments than its 16 for wider outputs
    (``2^A``, ``A = max(4, ceil((F + 1)/2))``: 32 from 8 fraction bits on; ``2^B``,
    ``B = ceil((F + 3)/2)``: 32 from 6 on). The fixed formats used before (an 8-bit design:
    :data:`SOFTERMAX_FIXED_FORMATS_BEFORE_DERIVED`) reached 1.42 LSB at N = 1024 on
    a dominant score over a flat background at 8 bits and 58 LSB at 16 bits.
    :meth:`replace` derives the formats again, a field set explicitly stays as set.
    Rows longer than ``row_max`` are refused.
    Not exactly shift-invariant: ``x·LOG2E`` is rounded before the max.

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
    #: the longest row the unit is built for (the model refuses longer rows); with
    #: ``out_fmt`` it sets the derived formats (:func:`softermax_formats`)
    row_max: int = 1024
    #: None (the default): derived from ``out_fmt`` and ``row_max``
    #: (:func:`softermax_formats`)
    log2e_fmt: FixedFormat | None = None
    t_fmt: FixedFormat | None = None
    pow2_fmt: FixedFormat | None = None
    pow2_segments_log2: int | None = None
    pow2_table_frac_bits: int | None = None
    sum_fmt: FixedFormat | None = None
    recip_fmt: FixedFormat | None = None
    recip_segments_log2: int | None = None
    recip_work_frac_bits: int | None = None

    def __post_init__(self) -> None:
        in_fmt = self.in_fmt
        if isinstance(in_fmt, str):
            try:
                in_fmt = FixedFormat.parse(in_fmt)
            except Exception:  # the base class names the field and the error
                in_fmt = _FIX16_6

        def rule(out: FixedFormat, n: int, given: dict[str, Any]) -> dict[str, Any]:
            return softermax_formats(out, n, given, in_fmt)

        derive_fields(self, rule)
        super().__post_init__()

    def validate(self) -> None:
        self._int_in("row_max", 1, 1 << 24)
        for f in ("log2e_fmt", "pow2_fmt", "sum_fmt", "recip_fmt"):
            fmt: FixedFormat = getattr(self, f)
            self._require(not fmt.signed, f, fmt, "must be unsigned (ap_ufixed)")
        for f in ("log2e_fmt", "t_fmt", "pow2_fmt", "sum_fmt", "recip_fmt", "out_fmt"):
            self._rounding_trn_rnd(f)
        self._require(
            self.out_fmt.overflow.value in ("AP_SAT", "AP_WRAP"),
            "out_fmt",
            self.out_fmt,
            "overflow must be AP_SAT or AP_WRAP",
        )
        self._require(
            self.t_fmt.overflow.value == "AP_SAT",
            "t_fmt",
            self.t_fmt,
            "overflow must be AP_SAT",
        )
        self._require(self.t_fmt.signed, "t_fmt", self.t_fmt, "must be signed (ap_fixed)")
        self._require(self.log2e_fmt.int_bits >= 1, "log2e_fmt", self.log2e_fmt, "int_bits >= 1")
        self._require(
            self.t_fmt.int_bits >= self.in_fmt.int_bits + 1,
            "t_fmt",
            self.t_fmt,
            f"needs int_bits >= in_fmt.int_bits + 1 = {self.in_fmt.int_bits + 1} to hold x·log2(e)",
        )
        self._require(self.t_fmt.frac_bits >= 1, "t_fmt", self.t_fmt, "frac_bits >= 1")
        self._require(
            self.pow2_fmt.int_bits >= 1,
            "pow2_fmt",
            self.pow2_fmt,
            "must hold 2^a < 2 (int_bits >= 1)",
        )
        self._require(
            self.sum_fmt.frac_bits >= self.pow2_fmt.frac_bits and self.sum_fmt.int_bits >= 2,
            "sum_fmt",
            self.sum_fmt,
            f"needs >= {self.pow2_fmt.frac_bits} fraction bits (pow2_fmt) and int_bits >= 2",
        )
        self._int_in("pow2_segments_log2", 0, min(12, self.t_fmt.frac_bits))
        self._int_in("pow2_table_frac_bits", self.pow2_fmt.frac_bits + 1, 40)
        self._int_in("recip_work_frac_bits", 2, 29)
        self._int_in("recip_segments_log2", 0, min(12, self.recip_work_frac_bits))
        self._require(
            self.recip_fmt.int_bits >= 1,
            "recip_fmt",
            self.recip_fmt,
            "must hold 1/d <= 1 (int_bits >= 1)",
        )
        self._require(
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

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """The hardware parameter set of the HLS unit ``softmax_softermax_op``.

        ``t = R_t(x·LOG2E)`` in ``t_fmt`` (``F_t`` fraction bits), the integer running
        max ``M = floor(t)``, ``P(a) = 2^a`` for ``a = t - M·2^F_t < 1`` by
        ``exp2_neg`` of ``1 - a`` with ``F_p + 1`` fraction bits (= ``2^a`` as a
        ``pow2_fmt`` code, ``F_p`` fraction bits); ``a`` is clamped at
        ``-(F_p + 2)·2^F_t`` (below, P is 0 with either rounding: the model's memo
        argument). The reciprocal is ``reciprocal`` with the PWL table (no Newton).

        ========= ======== =========================================================
        name      sign     value range -> bits
        ========= ======== =========================================================
        X_W       signed   an input code (``ap_ufixed`` zero-extended)
        PROD_W    signed   ``x·LOG2E`` over the input codes, exact
        TX_W      signed   ``t`` (``t_fmt``)
        M_W       signed   ``M = t >> F_t`` of every ``t``, and the empty state one below
        SH_W      unsigned ``M_new - M_old`` (the right shift of ``d``)
        A_W       signed   ``a = t - M·2^F_t`` in ``[t_min - M_max·2^F_t, 2^F_t)``
        T_W       unsigned the exp2 argument ``2^F_t - max(a, -(F_p + 2)·2^F_t)``
        V_W       unsigned ``v = T[i]·2^G - (T[i] - T[i+1])·u <= 2^(TABLE_F + G)``
        EXP_W     unsigned ``2^-(1 - a) <= 1.0`` with ``F_p + 1`` fraction bits
        SUM_W     unsigned ``d`` (``sum_fmt``)
        RU_W ..   unsigned/signed: the reciprocal's, as :meth:`OnlineSoftmax.hw_params`
        R_W       unsigned ``1/d`` (``recip_fmt``)
        OUTP_W    unsigned ``P·r``, the exact output product
        ========= ======== =========================================================
        """
        del n  # d is a sum_fmt value; the model refuses rows beyond row_max and sum_fmt
        ft, fp = self.t_fmt.frac_bits, self.pow2_fmt.frac_bits
        lo, hi = self.in_fmt.min_raw, self.in_fmt.max_raw
        lg = self.log2e_raw
        tmin, tmax = self.t_fmt.min_raw, self.t_fmt.max_raw
        m_lo, m_hi = (tmin >> ft) - 1, tmax >> ft
        a_lo = tmin - ((tmax >> ft) << ft)
        arg_max = (1 << ft) + ((fp + 2) << ft)
        a_bits, tf = self.pow2_segments_log2, self.pow2_table_frac_bits
        g = ft - a_bits
        wf, tb = self.recip_work_frac_bits, self.recip_segments_log2
        f_r = self.recip_fmt.frac_bits
        exp_w = fp + 2
        return {
            "IN_W": self.in_fmt.width,
            "IN_F": self.in_fmt.frac_bits,
            "X_W": raw_width(self.in_fmt),
            "OUT_W": self.out_fmt.width,
            "OUT_F": self.out_fmt.frac_bits,
            "LOG2E": lg,
            "LOG2E_W": self.log2e_fmt.width,
            "LOG2E_F": self.log2e_fmt.frac_bits,
            "PROD_W": max(
                (lo * lg).bit_length() + 1, (hi * lg).bit_length() + 1, self.in_fmt.width + 1
            ),
            "TX_W": self.t_fmt.width,
            "T_F": ft,
            "M_W": max(m_lo.bit_length(), m_hi.bit_length()) + 1,
            "SH_W": ubits(m_hi - m_lo),
            "A_W": max((a_lo - 1).bit_length(), ft) + 1,
            "A_MIN": -((fp + 2) << ft),
            "T_W": ubits(arg_max),
            "A": a_bits,
            "G": g,
            "TABLE_F": tf,
            "INTERP": 1,
            "V_W": ubits(1 << (tf + g)),
            "EXP_W": exp_w,
            "EXP_F": fp + 1,
            "EXP2_SHIFT": tf + g - (fp + 1),
            "P_F": fp,
            "SUM_W": self.sum_fmt.width,
            "SUM_F": self.sum_fmt.frac_bits,
            "SUM_UP": self.sum_fmt.frac_bits - fp,
            "SUM_ONE": 1 << self.sum_fmt.frac_bits,
            "R_W": self.recip_fmt.width,
            "R_F": f_r,
            "WF": wf,
            "TB": tb,
            "NEWTON": 0,
            "STEPS": 0,
            "RU_W": wf + 1,
            "RG": wf - tb,
            "RT_W": ubits(1 << (2 * wf - tb)),
            "RN_W": wf + 3,
            "RP_W": 2 * wf + 3,
            "RS_W": max(wf, f_r) + 3,
            "RPRE_W": f_r + 2,
            "OUTP_W": exp_w + self.recip_fmt.width,
            # the SV unit's codes and shifts (the HLS unit takes them from its typedefs)
            "T_RND": rounding_code(self.t_fmt.rounding),
            "PROD_SHIFT": self.in_fmt.frac_bits + self.log2e_fmt.frac_bits - ft,
            "EXP_RND": rounding_code(self.pow2_fmt.rounding),
            "R_RND": rounding_code(self.recip_fmt.rounding),
            "R_OVF": overflow_code(self.recip_fmt.overflow),
            "OUT_SIGNED": int(self.out_fmt.signed),
            "OUT_RND": rounding_code(self.out_fmt.rounding),
            "OUT_OVF": overflow_code(self.out_fmt.overflow),
            "OUT_SHIFT": fp + f_r - self.out_fmt.frac_bits,
            **self._log_code_params(),
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
        if not self._memo_ok():  # a wide t_fmt (16-bit outputs): P computed directly
            return lambda a: self._pow2_raw(np.maximum(a, lo), tab)
        memo = _cached(self, "_pow2_memo", narrow)
        if memo[0] != 0:  # pragma: no cover - guaranteed by the bound above
            return lambda a: self._pow2_raw(a, tab)

        def pow2(a: RawArray) -> RawArray:
            a = np.maximum(a, lo)
            a -= lo
            return memo[a]  # type: ignore[no-any-return]

        return pow2

    def _memo_ok(self) -> bool:
        """The ``P`` memo has at most 2^22 entries (``(F_p + 3)·2^F_t``): larger ones
        (``t_fmt`` derived for 16-bit outputs) cost more memory than they save."""
        return (self.pow2_fmt.frac_bits + 3) << self.t_fmt.frac_bits <= 1 << 22

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
        stays 0 until the first unmasked element.

        Where numba is available, pass 1 is the compiled row scan
        :func:`._kernels.softermax_sum` (the same recurrence, element by element)."""
        n = x.shape[1]
        self._row_limit(n, self.row_max, "row_max, the row length the unit is built for")
        self._row_limit(n, int(self.sum_fmt.max) // 2, f"sum_fmt {self.sum_fmt} (sum < 2N)")
        tabs = _cached(self, "tables")
        narrow = self._narrow()
        pow2 = self._pow2_fn(tabs["pow2_table"], narrow)
        ft = self.t_fmt.frac_bits  # Python ints keep int32 arrays int32
        up = 1 << (self.sum_fmt.frac_bits - self.pow2_fmt.frac_bits)
        p_lo = -(self.pow2_fmt.frac_bits + 2) << ft
        m_empty = (self.t_fmt.min_raw >> ft) - 1
        out = self._rows_compiled(x, mask, tabs, ft, up, p_lo, m_empty)
        if out is not None:
            return out
        if self._kernel_ok():
            d, big_m = _kernels.softermax_sum(*self._scan_args(x, mask, ft, p_lo, up, m_empty))
            if narrow:
                big_m = big_m.astype(np.int32)
            t = None  # the compiled scans read T from the memo themselves
        else:
            t = self._t_codes(x, narrow)
            d, big_m = self._pass1_numpy(t, mask, pow2, ft, up, m_empty)
        return self._softermax_out(x, t, d, big_m, mask, tabs, pow2, ft)

    def _t_codes(self, x: RawArray, narrow: bool) -> RawArray:
        """``T(x)`` of every element (from the memo where the input is memo-sized)."""
        if self.in_fmt.width <= _MEMO_MAX_BITS:
            t_memo = _cached(self, "_t_memo", narrow)
            return t_memo[x - np.int64(self.in_fmt.min_raw)]
        return self._t(x)

    def _scan_args(
        self,
        x: RawArray,
        mask: npt.NDArray[np.bool_] | None,
        ft: int,
        p_lo: int,
        up: int,
        m_empty: int,
    ) -> tuple[Any, ...]:
        """The leading arguments the compiled row scans share (:func:`._kernels.softermax_sum`
        and :func:`._kernels.softermax_rows`): the rows, the mask (a dummy when None) and
        its flag, the T and 2^x memos, the input's lowest code and the pass-1 constants."""
        return (
            np.ascontiguousarray(x, dtype=np.int64),
            mask if mask is not None else np.zeros((1, 1), dtype=bool),
            mask is not None,
            _cached(self, "_t_memo"),
            _cached(self, "_pow2_memo"),
            self.in_fmt.min_raw,
            ft,
            p_lo,
            up,
            m_empty,
        )

    def _rows_compiled(
        self,
        x: RawArray,
        mask: npt.NDArray[np.bool_] | None,
        tabs: dict[str, RawArray],
        ft: int,
        up: int,
        p_lo: int,
        m_empty: int,
    ) -> RawArray | None:
        """Both passes and the reciprocal row by row in one compiled call
        (:func:`._kernels.softermax_rows`: the same integers as the two row kernels and
        :func:`.intmath.reciprocal` between them), or None where it does not apply:
        :meth:`_kernel_ok` false, :data:`._kernels.whole_rows` off, an output cast
        other than :func:`._kernels.cast_params`', a ``recip_fmt`` rounding other than
        AP_TRN / AP_RND or an overflow other than unsigned AP_WRAP / AP_SAT."""
        rf = self.recip_fmt
        if not (
            _kernels.whole_rows
            and self._kernel_ok()
            and not rf.signed
            and rf.rounding in (Rounding.TRN, Rounding.RND)
            and rf.overflow in (Overflow.WRAP, Overflow.SAT, Overflow.SAT_SYM)
            and rf.width < 63
        ):
            return None
        cp = _kernels.cast_params(self.pow2_fmt.frac_bits + rf.frac_bits, self.out_fmt)
        if cp is None:
            return None
        out = np.empty(x.shape, dtype=np.int64)
        ok = _kernels.softermax_rows(
            *self._scan_args(x, mask, ft, p_lo, up, m_empty),
            1 << self.sum_fmt.frac_bits,
            self.sum_fmt.frac_bits,
            rf.frac_bits,
            np.ascontiguousarray(tabs["recip_table"], dtype=np.int64),
            self.recip_segments_log2,
            self.recip_work_frac_bits,
            rf.rounding is Rounding.RND,
            rf.overflow is not Overflow.WRAP,
            rf.max_raw,
            *cp,
            out,
        )
        return out if ok else None

    def _kernel_ok(self) -> bool:
        """The compiled scans apply: numba present, memo-sized input and ``P`` memo, ``P``
        of the memo's lowest argument 0 (always: see :meth:`_pow2_fn`)."""
        return (
            self.in_fmt.width <= _MEMO_MAX_BITS
            and _kernels.available()
            and self._memo_ok()
            and _cached(self, "_pow2_memo")[0] == 0
        )

    def _pass1_numpy(
        self,
        t: RawArray,
        mask: npt.NDArray[np.bool_] | None,
        pow2: Callable[[RawArray], RawArray],
        ft: int,
        up: int,
        m_empty: int,
    ) -> tuple[RawArray, RawArray]:
        """Pass 1 in numpy: ``(d, M)`` per row (see :meth:`_model_rows`)."""
        n = t.shape[1]
        run_m = t >> ft
        if mask is not None:
            np.copyto(run_m, m_empty, where=mask)
        np.maximum.accumulate(run_m, axis=1, out=run_m)  # M after each element
        p = run_m << ft
        np.subtract(t, p, out=p)
        if mask is not None:
            np.copyto(p, 0, where=mask)
        p = pow2(p)
        if mask is not None:
            np.copyto(p, 0, where=mask)
        p *= up
        d = p[:, 0].astype(np.int64)
        if n > 1:
            sh = run_m[:, 1:] - run_m[:, :-1]
            np.minimum(sh, 62, out=sh)
            d = self._shift_sum(d, p[:, 1:], sh)
        return d, run_m[:, -1]

    def _softermax_out(
        self,
        x: RawArray,
        t: RawArray | None,
        d: RawArray,
        big_m: RawArray,
        mask: npt.NDArray[np.bool_] | None,
        tabs: dict[str, RawArray],
        pow2: Callable[[RawArray], RawArray],
        ft: int,
    ) -> RawArray:
        """Pass 2: the reciprocal of ``d`` and ``P(t - M)·r`` cast to ``out_fmt``
        (``t`` None: not computed yet)."""
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
        prod_f = self.pow2_fmt.frac_bits + self.recip_fmt.frac_bits
        cp = _kernels.cast_params(prod_f, self.out_fmt) if self._kernel_ok() else None
        if cp is not None:  # the output stage compiled: one pass, same cast
            return _kernels.softermax_out(
                np.ascontiguousarray(x, dtype=np.int64),
                np.asarray(big_m, dtype=np.int64),
                r,
                _cached(self, "_t_memo"),
                self.in_fmt.min_raw,
                ft,
                _cached(self, "_pow2_memo"),
                -(self.pow2_fmt.frac_bits + 2) << ft,
                *cp,
                mask if mask is not None else np.zeros((1, 1), dtype=bool),
                mask is not None,
            )
        if t is None:
            t = self._t_codes(x, self._narrow())
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

    @staticmethod
    def _shift_sum(d: RawArray, p: RawArray, sh: RawArray) -> RawArray:
        """Pass 1's sum: for each element ``j`` (columns of the (R, J) ``p``/``sh``),
        ``d = (d >> sh_j) + P_j``; ``sh_j > 0`` only where the integer max rises. By
        :func:`event_scan` (prefix sums of P between rises, the shift only at them);
        :meth:`_shift_sum_loop` is the direct loop (the fast-path test's reference)."""
        sh_f = np.ascontiguousarray(sh).ravel()

        def rescale(dv: RawArray, flat: npt.NDArray[np.intp]) -> RawArray:
            dv >>= sh_f[flat]
            return dv

        return event_scan(d, p, sh > 0, rescale)

    @staticmethod
    def _shift_sum_loop(d: RawArray, p: RawArray, sh: RawArray) -> RawArray:
        """:meth:`_shift_sum` element by element."""
        d = d.copy()
        for j in range(p.shape[1]):
            d >>= sh[:, j]
            d += p[:, j]
        return d

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
