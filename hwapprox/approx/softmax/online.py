"""The single-pass ``online`` softmax (:class:`OnlineSoftmax`, Milakov & Gimelshein
2018; Edge-MoE ``finalize_attn``): a running max and sum and one reciprocal per row,
with an explicit fixed-point datapath for RTL/HLS. Its base-2 sibling with an integer
running max, Softermax, is :mod:`.softermax`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox._cache import BoundedMemo
from hwapprox.approx import _kernels, intmath
from hwapprox.approx.base import Cost, RawArray, broadcast_mask, require
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
_UFIX12_1_RND = _F("ap_ufixed<12,1,AP_RND>")
_UFIX16_0_RND_SAT = _F("ap_ufixed<16,0,AP_RND,AP_SAT>")
_UFIX16_1_RND = _F("ap_ufixed<16,1,AP_RND>")
_UFIX22_1_RND = _F("ap_ufixed<22,1,AP_RND>")
_UFIX26_1_RND = _F("ap_ufixed<26,1,AP_RND>")
_UFIX27_5_RND_SAT = _F("ap_ufixed<27,5,AP_RND,AP_SAT>")
_UFIX28_12_TRN = _F("ap_ufixed<28,12,AP_TRN>")
_UFIX36_12_RND = _F("ap_ufixed<36,12,AP_RND>")
_UFIX8_0_RND_SAT = _F("ap_ufixed<8,0,AP_RND,AP_SAT>")

#: :meth:`OnlineSoftmax.f32_plan`'s kernel arguments (or None) by (spec, row length); as
#: many as ``_cached`` keeps: each holds its spec's exp memo (up to 4 MiB)
_F32_PLANS: BoundedMemo[tuple[Any, ...] | None] = BoundedMemo(16)
_NO_PLAN: Any = object()
#: the mask argument of the compiled kernels when there is none (never read)
_NO_MASK = np.zeros((1, 1), dtype=bool)


def _bool_rows(mask: npt.NDArray[Any], shape: tuple[int, ...]) -> bool:
    """``mask`` is a C-contiguous bool array of ``shape``."""
    return bool(mask.dtype == np.bool_ and mask.shape == shape and mask.flags.c_contiguous)


#: the fixed internal formats the online softmax had before they were derived from
#: ``out_fmt`` and ``row_max`` (one more integer bit in the sum, so that rows of 4096
#: fit): what the tests and ``benchmarks/bench_softmax.py`` compare the derived ones with
FIXED_FORMATS_BEFORE_DERIVED = {
    "exp_fmt": "ap_ufixed<22,1,AP_RND>",
    "exp_arg_fmt": "ap_ufixed<27,5,AP_RND,AP_SAT>",
    "exp_frac_bits": 8,
    "exp_table_frac_bits": 24,
    "sum_fmt": "ap_ufixed<37,13,AP_RND>",
    "recip_fmt": "ap_ufixed<26,1,AP_RND>",
    "recip_work_frac_bits": 26,
}


def online_formats(
    out_fmt: FixedFormat, row_max: int, given: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The online softmax's default internal formats for ``out_fmt`` and rows of up to
    ``row_max`` elements, from the worst-case bound below (all AP_RND, unsigned).
    ``given``: formats the spec sets itself; the derived ones stay consistent with
    them (``F_e`` at most a given ``sum_fmt``'s fraction bits; ``F_s``, the table and
    ``exp_arg_fmt`` follow a given ``exp_fmt``).

    With ``F = out_fmt.frac_bits`` (an output LSB is ``2^-F``) and ``L =
    ceil(log2 row_max)`` (``N <= 2^L``):

    * ``exp_fmt`` = ``ap_ufixed<F_e + 1, 1>`` with ``F_e = F + L + 2``;
    * ``sum_fmt`` = ``ap_ufixed<F_e + L + 2, L + 1>`` (``F_s = F_e + 1``; holds
      ``d <= N + 1``, Softmax_1's zero logit included);
    * ``recip_fmt`` = ``ap_ufixed<F + 5, 1>`` (``F_r = F + 4``),
      ``recip_work_frac_bits`` = ``min(F + 6, 29)``;
    * base-2 exp unit: ``exp_frac_bits`` (table address bits) ``A = max(4,
      ceil(F/2))``, ``exp_table_frac_bits`` = ``F_e + 2``, ``exp_arg_fmt`` =
      ``ap_ufixed<F + 6 + I_t, I_t, AP_RND, AP_SAT>`` with ``I_t = bit_length(F_e
      + 2)`` (it reaches ``t = F_e + 2``, where E is 0).

    **Bound** (``p_i = e_i / D`` exact, ``e_j = exp(x_j - m)``, ``D = Σ e_j >= 1``).
    Write each exp unit value ``E_j = e_j·(1 + ρ_j) + β_j``: ``|ρ_j| <= ρ`` is the
    relative error before the final rounding (PWL of ``2^-f`` over ``2^-A`` steps,
    ``(ln 2)²/8·2^-2A``, plus the rounding of ``t`` and of the table entries and the
    ``LOG2E`` constant: ``ρ < 2^-(F + 3)`` at the derived ``A`` for ``F <= 16``) and
    ``|β_j| <= u_e = 2^-(F_e + 1)`` the final rounding to ``exp_fmt``. The sum then
    errs by ``|d - D| <= ρ·D + N·u_e`` (+ ``N·u_s``, ``u_s = 2^-(F_s + 1)``, for the
    online schedule's rescale roundings) -- the ``N·u_e`` term is **coherent**: a
    flat background of N equal scores rounds the same way N times, so it does not
    average out. To first order, for every output before its own rounding

    ``|E_i·r - p_i| <= 2ρ·p_i + u_e + p_i·N·(u_e + u_s)/D + ε_r
    <= 2ρ + 2^-(F + 3) + 2^-(F + 4) + 2^-(F + 4)`` (``e_i <= 1 <= D``; ``ε_r``: the
    reciprocal's rounding ``2^-(F_r + 1)`` and its Newton error),

    about 0.4 LSB; with the output's own rounding (0.5 LSB) that is below 1 LSB for
    every row of ``N <= row_max`` (an output whose probability rounds above the
    largest code of ``ap_ufixed<W,0>`` saturates: then the error is the distance of
    ``p <= 1`` to ``1 - 2^-W``, at most 1 LSB). The online schedule's rescales also
    scale earlier roundings by the later factors ``E <= 1``: measured on ramps (a new
    maximum at every element) in ``benchmarks/results/softmax.md``. The
    ``F_e + EXP_W <= 62`` limit of the split rescale product allows ``F + L <= 28``
    (16-bit outputs up to ``row_max = 4096``).
    """
    f, lg, f_e = derived_widths(out_fmt, row_max, given or {}, "exp_fmt")
    i_t = (f_e + 2).bit_length()
    return {
        "exp_fmt": FixedFormat(f_e + 1, 1, False, Rounding.RND),
        "exp_arg_fmt": FixedFormat(f + 6 + i_t, i_t, False, Rounding.RND, Overflow.SAT),
        "exp_frac_bits": max(4, -(-f // 2)),
        "exp_table_frac_bits": f_e + 2,
        "sum_fmt": FixedFormat(f_e + lg + 2, lg + 1, False, Rounding.RND),
        "recip_fmt": FixedFormat(f + 5, 1, False, Rounding.RND),
        "recip_work_frac_bits": min(f + 6, 29),
    }


def rescale_product(d: RawArray, e: RawArray, fe: int, rnd: bool) -> RawArray:
    """``R(d·e / 2^fe)`` (floor, or half up when ``rnd``) exactly when ``d·e`` exceeds
    64 bits: with ``d = dh·2^fe + dl``, ``dh·e`` is exact and only ``dl·e < 2^(fe +
    bits(e))`` is rounded (``fe + bits(e) <= 62``)."""
    d = np.asarray(d, dtype=np.int64)
    e = np.asarray(e, dtype=np.int64)
    lo = (d & np.int64((1 << fe) - 1)) * e
    if rnd:
        lo += np.int64(1 << (fe - 1))
    return (d >> np.int64(fe)) * e + (lo >> np.int64(fe))  # type: ignore[no-any-return]


@dataclass(frozen=True)
class OnlineSoftmax(SoftmaxSpec):
    """Single-pass softmax: running max and running sum (Milakov & Gimelshein 2018).

    As Edge-MoE ``finalize_attn`` streams it: one element per step, one
    reciprocal per row, outputs recomputed from the buffered row. Every step is
    a named fixed-point operation; an RTL/HLS unit reproduces it bit for bit
    from this code, :meth:`params` and :meth:`tables`.

    Datapath (``F_in = in_fmt.frac_bits``, ``F_e = exp_fmt.frac_bits``, ...):

    * **State** per row: ``m`` (raw ``in_fmt``), ``d`` (raw ``sum_fmt``).
      Element 0: ``m = x_0``, ``d = ONE`` (1.0 in ``sum_fmt``).
    * **Element j >= 1** (``schedule="online"``):
      if ``x_j > m``: ``d = R_s(d · E(x_j - m)) + ONE``, ``m = x_j``;
      else ``d = d + E(m - x_j)`` (exact: ``sum_fmt.frac_bits >= F_e``).
      ``R_s`` = exact product (``sum_fmt`` × ``exp_fmt``) rounded to
      ``sum_fmt`` with ``sum_fmt.rounding`` (AP_TRN or AP_RND).
      ``schedule="two_pass"``: ``m = max`` first, then ``d = Σ E(m - x_j)``
      (no rescaling; the same E and the same formats).
    * **E(δ) = exp(-δ)** for raw ``δ >= 0`` (``F_in`` fraction bits), a raw
      ``exp_fmt`` code:

      - ``exp_unit="base2"``: ``t = R_t(δ · LOG2E)`` with ``LOG2E`` =
        log2(e) quantised to ``log2e_fmt`` (its rounding), product exact,
        ``R_t`` = cast to ``exp_arg_fmt`` (its rounding; AP_SAT clamps huge
        δ, whose result is 0 anyway); then
        :func:`~hwapprox.approx.intmath.exp2_neg`: integer part of ``t`` is a
        right shift, the top ``exp_frac_bits`` fraction bits address the
        table ``exp2_table`` (2^(-k/2^b), ``exp_table_frac_bits``), the
        remaining bits interpolate linearly (``exp_interp="pwl"``) or are
        dropped (``"none"``); one final rounding to ``F_e`` with
        ``exp_fmt.rounding``.
      - ``exp_unit="lut"``: if ``δ >= 2^exp_lut_int_bits`` then 0, else
        ``exp_lut[δ >> s]`` with ``s = F_in + exp_lut_int_bits -
        exp_lut_bits`` (the top ``exp_lut_bits`` bits of δ); entry k holds
        exp(-centre of bin k) (exact value when ``s = 0``) rounded to
        ``exp_fmt``.
    * **Reciprocal** once per row, ``r = 1/d`` as raw ``recip_fmt``:
      :func:`~hwapprox.approx.intmath.reciprocal` with leading-one
      normalisation of ``d``, mantissa to ``recip_work_frac_bits`` bits,
      ``recip_unit="lut"`` (PWL between ``2^recip_table_bits + 1`` end
      points) or ``"newton"`` (bin-centre seed, ``newton_steps`` steps
      ``R = R·(2 - U·R)``), all roundings ``recip_fmt.rounding``.
    * **Output** per buffered element: ``y_i = cast_out(E(m - x_i) · r)``:
      exact product (``F_e + F_r`` fraction bits) cast to ``out_fmt`` with its
      rounding and overflow (default AP_RND, AP_SAT).

    * **Masks** (:class:`SoftmaxSpec` contract): the row state starts
      *empty*, ``(m, d) = (-inf, 0)``; the element-0 rule above is the
      ``x_j > m`` rule applied to the empty state (``R_s(0·E) + ONE = ONE``),
      so an unmasked element updates the state as stated and a masked element
      leaves ``(m, d)`` untouched (it never raises ``m``, adds no ``E``).
      ``schedule="two_pass"``: ``m`` = the max of the unmasked elements, masked
      ``E`` = 0. Masked outputs are 0. A fully masked row stays empty
      (``d = 0``; its reciprocal is not used) and outputs all zeros.

    * **Softmax_1** (``off_by_one``; OutEffHop, Hu et al. 2024, after Miller's
      "attention is off by one", 2023): ``y_i = exp(x_i) / (1 + Σ_j exp(x_j))``.
      Under max subtraction the 1 becomes ``exp(-m)``; here it is a zero logit
      in front of the row: the state starts at ``(m, d) = (0, ONE)`` (code 0 of
      ``in_fmt``, one element already counted) instead of empty, the rules above
      run unchanged, and no output is produced for that element. So ``m >= 0``
      always, ``d <= (n + 1)·ONE``, and a fully masked row outputs zeros (the
      state never leaves the zero logit). ``two_pass``: ``m = max(0, max x)``,
      ``d`` includes ``E(m)``.

    * **Clipped softmax** (``clip_gamma`` = γ <= 0, ``clip_zeta`` = ζ >= 1;
      Bondarenko, Nagel & Blankevoort 2023): ``clip((ζ - γ)·y + γ, 0, 1)``.
      ``S = ζ - γ`` and ``G = γ`` are quantised to ``clip_frac_bits``; the
      stretch is folded into the row's reciprocal, ``r_s = round(S·r /
      2^CF)`` (one added rounding per row: the stated deviation), then
      ``z = E·r_s + G`` exactly, cast to ``out_fmt`` and clamped to
      ``[0, 1.0]``. ``(γ, ζ) = (0, 1)`` is the plain softmax, code for code.
      RTL: the ``CLIP`` stage of ``hwa_softmax_online``; no fused attention form.

    * **Unified max** (``unified_max`` = φ; FlashDecoding++, Hong et al. 2024):
      φ (quantised to ``in_fmt``, code ``PHI``) replaces the running max, so
      every element's term is independent: ``d_φ = Σ E(φ - x_j)`` (exact adds,
      no rescale, no max dependency). **Safe range** of a row: every unmasked
      ``x_j <= φ`` (the exp unit's input ``φ - x_j >= 0``, so ``E <= 1.0`` and
      ``d_φ <= n·ONE`` fit ``exp_fmt``/``sum_fmt`` as on the exact path) and
      ``d_φ >= ONE·2^-unified_low`` (the sum keeps at least ``F_e - unified_low``
      bits of its largest term). Safe rows: ``s`` = the smallest shift with
      ``d_φ << s >= ONE`` (``s <= unified_low``), ``r = 1/(d_φ << s)`` (the
      reciprocal unit), ``y_i = cast_out((E(φ - x_i)·r) << s)``. Any other row
      (with an unmasked element) **falls back** to the exact path above, code for
      code (the HLS and RTL units keep the exact state alongside the φ sum, so
      the fallback needs no re-read of the row); :meth:`model_stats` reports
      the fallback rate. Deviation from the paper: it bounds ``x - φ`` on both
      sides per element; here the lower side is a bound on the sum (an element far
      below φ is harmless unless the whole row is). Not combined with
      ``off_by_one``, the clip or skipping (refused).

    * **Threshold skipping** (``skip_threshold`` = τ; BLASST): an element that is
      not a new max and lies more than τ below the running max (raw
      ``|x_j - m| > SKIP_TAU``, ``SKIP_TAU = round(τ·2^F_in)``: ``exp(x_j - m) <
      e^-τ``) is skipped: no exp, ``d`` unchanged, output 0 (a skip bit travels
      with the buffered code); ``two_pass``: ``m - x_j > SKIP_TAU`` against the row
      max. The decision uses the running max at the element, so an element that a
      later max pushes below the threshold is still counted (as in a stream).
      Deviation: a block-wise skip (a block of keys from its block max) would
      decide once per block; here the block is one element. :meth:`model_stats`
      reports the skipped fraction and the error it costs.

    * **Log-coded outputs** (``out_code``): :class:`SoftmaxSpec`'s post-stage.

    Intermediates for unit tests of the HLS/RTL ports: :meth:`exp_unit_raw`
    (E), :meth:`row_state` (``m``, ``d`` for either schedule) and
    :meth:`recip_raw` (``1/d``).

    **Defaults**: ``exp_fmt``, ``sum_fmt``, ``recip_fmt``, ``exp_arg_fmt``,
    ``exp_frac_bits``, ``exp_table_frac_bits`` and ``recip_work_frac_bits`` left
    None are derived from ``out_fmt`` and ``row_max`` by :func:`online_formats`,
    whose docstring carries the worst-case bound (the coherent rounding of a flat
    background included): at most 1 output LSB against the float64 softmax of the
    quantised inputs for every row of ``N <= row_max`` (measured on the hard row
    kinds at W = 8..16, N up to 4096: ``benchmarks/results/softmax.md``,
    ``tests/test_softmax_hard_rows.py``). A narrower output or a shorter
    ``row_max`` gives narrower formats (a cheaper unit); :meth:`replace` derives
    them again, a field set explicitly stays as set. Rows longer than ``row_max``
    are refused.
    """

    method = "online"
    source = "Milakov & Gimelshein 2018 (online normaliser); Edge-MoE finalize_attn"
    #: where an option's method comes from (``hwapprox list``)
    option_sources: ClassVar[dict[str, str]] = {
        **SoftmaxSpec.option_sources,
        "off_by_one": "Softmax_1, exp(x_i) / (1 + Σ exp(x_j)): Hu et al., OutEffHop (ICML "
        "2024); Miller, 'Attention is off by one' (2023)",
        "clip_gamma/clip_zeta": "clipped softmax clip((ζ - γ)·p + γ, 0, 1): Bondarenko, "
        "Nagel & Blankevoort, 'Quantizable Transformers' (NeurIPS 2023)",
        "unified_max": "unified max φ with exact-path fallback: Hong et al., "
        "FlashDecoding++ (MLSys 2024)",
        "skip_threshold": "threshold skipping of exp(x - m) < e^-τ: BLASST",
    }

    in_fmt: FixedFormat = _FIX16_6
    out_fmt: FixedFormat = _UFIX16_0_RND_SAT
    #: the longest row the unit is built for (its row buffer; the model refuses longer
    #: rows); with ``out_fmt`` it sets the derived formats (:func:`online_formats`)
    row_max: int = 1024
    schedule: str = "online"
    exp_unit: str = "base2"
    #: None (the default): derived from ``out_fmt`` and ``row_max`` (:func:`online_formats`)
    exp_fmt: FixedFormat | None = None
    # base2 exp unit
    log2e_fmt: FixedFormat = _UFIX26_1_RND
    exp_arg_fmt: FixedFormat | None = None
    exp_frac_bits: int | None = None
    exp_interp: str = "pwl"
    exp_table_frac_bits: int | None = None
    # lut exp unit
    exp_lut_bits: int = 12
    exp_lut_int_bits: int = 4
    # sum and reciprocal
    sum_fmt: FixedFormat | None = None
    recip_unit: str = "newton"
    recip_fmt: FixedFormat | None = None
    recip_table_bits: int = 8
    recip_work_frac_bits: int | None = None
    newton_steps: int = 2
    #: Softmax_1 ("off by one": OutEffHop, Hu et al. 2024; Miller 2023):
    #: ``exp(x_i) / (1 + Σ_j exp(x_j))``, so a row may attend to nothing
    off_by_one: bool = False
    #: clipped softmax (Bondarenko, Nagel & Blankevoort 2023, "Quantizable
    #: Transformers"): ``clip((ζ - γ)·softmax + γ, 0, 1)`` with γ <= 0, ζ >= 1;
    #: (0, 1) is the plain softmax. Constants quantised with ``clip_frac_bits``.
    clip_gamma: float = 0.0
    clip_zeta: float = 1.0
    clip_frac_bits: int = 16
    #: unified max (FlashDecoding++, Hong et al. 2024): a static φ (quantised to
    #: ``in_fmt``) replaces the running max; rows outside the safe range (an element
    #: above φ, or a sum below ``2^-unified_low``) take the exact path. None: off
    unified_max: float | None = None
    unified_low: int = 4
    #: threshold skipping (BLASST): an element whose ``m - x`` against the running max
    #: exceeds τ (``in_fmt`` units, i.e. ``exp(x - m) < e^-τ``) is skipped (E = 0,
    #: output 0; no V load in the fused row). None: off
    skip_threshold: float | None = None

    def __post_init__(self) -> None:
        derive_fields(self, online_formats)
        super().__post_init__()

    # -- validation ------------------------------------------------------------------
    def validate(self) -> None:
        self._validate_variants()
        self._int_in("row_max", 1, 1 << 24)
        self._require(
            isinstance(self.off_by_one, bool), "off_by_one", repr(self.off_by_one), "a bool"
        )
        self._require(
            math.isfinite(self.clip_gamma) and -8 <= self.clip_gamma <= 0,
            "clip_gamma",
            self.clip_gamma,
            "must be in [-8, 0] (Bondarenko et al.: γ <= 0)",
        )
        self._require(
            math.isfinite(self.clip_zeta) and 1 <= self.clip_zeta <= 8,
            "clip_zeta",
            self.clip_zeta,
            "must be in [1, 8] (Bondarenko et al.: ζ >= 1)",
        )
        self._int_in("clip_frac_bits", 4, 24)
        self._choice("schedule", ("online", "two_pass"))
        self._choice("exp_unit", ("base2", "lut"))
        self._choice("exp_interp", ("pwl", "none"))
        self._choice("recip_unit", ("lut", "newton"))
        self._rounding_trn_rnd("out_fmt")
        self._require(
            self.out_fmt.overflow.value in ("AP_SAT", "AP_WRAP"),
            "out_fmt",
            self.out_fmt,
            "overflow must be AP_SAT or AP_WRAP",
        )
        for f in ("exp_fmt", "sum_fmt", "recip_fmt", "log2e_fmt", "exp_arg_fmt"):
            fmt: FixedFormat = getattr(self, f)
            self._require(not fmt.signed, f, fmt, "must be unsigned (ap_ufixed)")
            self._rounding_trn_rnd(f)
        self._require(self.in_fmt.width <= 32, "in_fmt", self.in_fmt, "at most 32 bits")
        self._require(
            self.exp_fmt.int_bits >= 1 and self.exp_fmt.frac_bits >= 1,
            "exp_fmt",
            self.exp_fmt,
            "must hold 1.0 (int_bits >= 1) and fractions (frac_bits >= 1)",
        )
        self._require(
            self.sum_fmt.int_bits >= 1,
            "sum_fmt",
            self.sum_fmt,
            "int_bits must be >= 1 to hold the sum (>= 1.0)",
        )
        self._require(
            self.sum_fmt.frac_bits >= self.exp_fmt.frac_bits,
            "sum_fmt",
            self.sum_fmt,
            f"needs at least exp_fmt's {self.exp_fmt.frac_bits} fraction bits (exp adds exactly)",
        )
        self._require(
            self.exp_fmt.frac_bits + self.exp_fmt.width <= MAX_RAW_BITS,
            "exp_fmt",
            self.exp_fmt,
            f"frac_bits + width must be <= {MAX_RAW_BITS} (the rescale d·E is computed as "
            "(d >> F_e)·E + (d mod 2^F_e)·E); lower row_max or out_fmt's width",
        )
        self._require(
            self.recip_fmt.int_bits >= 1 and self.recip_fmt.frac_bits >= 1,
            "recip_fmt",
            self.recip_fmt,
            "must hold 1/d in (0, 1] (int_bits >= 1, frac_bits >= 1)",
        )
        self._require(
            self.exp_fmt.width + self.recip_fmt.width <= MAX_RAW_BITS,
            "recip_fmt",
            self.recip_fmt,
            f"exp x recip product must fit {MAX_RAW_BITS} bits",
        )
        self._int_in("recip_work_frac_bits", 2, 29)
        self._int_in("recip_table_bits", 1, min(16, self.recip_work_frac_bits))
        self._int_in("newton_steps", 0, 4)
        if self.exp_unit == "base2":
            self._require(
                self.log2e_fmt.int_bits >= 1,
                "log2e_fmt",
                self.log2e_fmt,
                "int_bits must be >= 1 to hold log2(e) = 1.44",
            )
            self._require(
                self.in_fmt.width + 1 + self.log2e_fmt.width <= MAX_RAW_BITS,
                "log2e_fmt",
                self.log2e_fmt,
                f"δ x LOG2E product must fit {MAX_RAW_BITS} bits",
            )
            self._int_in("exp_frac_bits", 1, min(16, max(1, self.exp_arg_fmt.frac_bits)))
            self._int_in("exp_table_frac_bits", self.exp_fmt.frac_bits, 40)
            self._require(
                self.exp_arg_fmt.overflow.value.startswith("AP_SAT")
                and self.exp_arg_fmt.max >= self.exp_fmt.frac_bits + 2,
                "exp_arg_fmt",
                self.exp_arg_fmt,
                f"must saturate (AP_SAT) and reach t >= exp_fmt.frac_bits + 2 = "
                f"{self.exp_fmt.frac_bits + 2} so that clamped arguments give exp = 0",
            )
        else:
            self._int_in("exp_lut_int_bits", 0, 8)
            self._int_in("exp_lut_bits", 1, min(20, self.in_fmt.frac_bits + self.exp_lut_int_bits))

    def _validate_variants(self) -> None:
        """The unified-max and skip fields (their own checks; see the class docstring)."""
        phi, tau = self.unified_max, self.skip_threshold
        if phi is not None:
            self._require(
                isinstance(phi, (int, float))
                and not isinstance(phi, bool)
                and math.isfinite(phi)
                and self.in_fmt.min <= phi <= self.in_fmt.max,
                "unified_max",
                phi,
                f"must be a real in in_fmt {self.in_fmt}'s range [{float(self.in_fmt.min)}, "
                f"{float(self.in_fmt.max)}] (φ, quantised to in_fmt), or None",
            )
            self._int_in("unified_low", 0, min(16, self.sum_fmt.frac_bits))
            self._require(
                self.exp_fmt.width + self.recip_fmt.width + self.unified_low <= MAX_RAW_BITS,
                "unified_low",
                self.unified_low,
                f"E·r << unified_low must fit {MAX_RAW_BITS} bits",
            )
            for name, bad, why in (
                ("off_by_one", self.off_by_one, "the zero logit needs its own E(φ) term"),
                ("clip_gamma", self.clipped, "the clip acts after the exact path's reciprocal"),
                ("skip_threshold", tau is not None, "skipping is against the running max"),
            ):
                self._require(
                    not bad,
                    name,
                    getattr(self, name),
                    f"cannot combine with unified_max ({why}); use one of them",
                )
        if tau is not None:
            self._require(
                isinstance(tau, (int, float))
                and not isinstance(tau, bool)
                and math.isfinite(tau)
                and tau > 0
                and 1 <= self.skip_raw < 1 << self.in_fmt.width,
                "skip_threshold",
                tau,
                f"must be a real τ > 0 (in_fmt units, skip when m - x > τ) whose code "
                f"round(τ·2^{self.in_fmt.frac_bits}) lies in [1, 2^{self.in_fmt.width} - 1], "
                "or None",
            )

    @property
    def unified_phi_raw(self) -> int:
        """φ as a raw ``in_fmt`` code (``unified_max`` quantised with in_fmt's modes)."""
        require(self.unified_max is not None, "unified_max is None (no unified max)")
        return int(self.in_fmt.quantize(np.array([float(self.unified_max)]))[0])  # type: ignore[arg-type]

    @property
    def skip_raw(self) -> int:
        """τ as a raw difference code: ``floor(τ·2^F_in + 1/2)`` (0 when skipping is off)."""
        if self.skip_threshold is None:
            return 0
        return math.floor(float(self.skip_threshold) * (1 << self.in_fmt.frac_bits) + 0.5)

    # -- constants and tables --------------------------------------------------------
    @property
    def log2e_raw(self) -> int:
        """log2(e) as a raw ``log2e_fmt`` code."""
        return int(self.log2e_fmt.quantize(np.array([math.log2(math.e)]))[0])

    def _one_sum(self) -> int:
        return 1 << self.sum_fmt.frac_bits

    def tables(self) -> dict[str, RawArray]:
        """``exp2_table`` (base2, ``exp_table_frac_bits``) or ``exp_lut`` (lut, raw ``exp_fmt``),
        and ``recip_table`` (``recip_work_frac_bits`` fraction bits)."""
        out: dict[str, RawArray] = {}
        if self.exp_unit == "base2":
            out["exp2_table"] = intmath.exp2_frac_table(
                self.exp_frac_bits, self.exp_table_frac_bits, self.exp_fmt.rounding
            )
        else:
            s = self.in_fmt.frac_bits + self.exp_lut_int_bits - self.exp_lut_bits
            k = np.arange(1 << self.exp_lut_bits, dtype=np.float64)
            centre = (k * 2.0**s + (2.0**s - 1) / 2) * 2.0**-self.in_fmt.frac_bits
            out["exp_lut"] = self.exp_fmt.quantize(np.exp(-centre))
        wf, tb, mode = self.recip_work_frac_bits, self.recip_table_bits, self.recip_fmt.rounding
        if self.recip_unit == "lut":
            out["recip_table"] = intmath.recip_pwl_table(tb, wf, mode)
        else:
            out["recip_table"] = intmath.recip_seed_table(tb, wf, mode)
        return out

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """The hardware parameter set: the SV parameters of ``hwa_softmax_online`` (and its
        ``hwa_exp_unit``/``hwa_recip``) and the HLS config constants, one set.

        ``n`` is unused: the running sum is a ``sum_fmt`` value and rows are at
        most ``floor(sum_fmt.max)`` long (the model refuses longer rows), so
        ``d <= n·ONE < 2^SUM_W``. Codes ``*_RND``/``*_OVF`` are ``hwa_pkg``'s.

        ========= ======== =========================================================
        name      sign     value range -> bits
        ========= ======== =========================================================
        X_W       signed   an input code (``ap_ufixed`` zero-extended)
        DELTA_W   unsigned ``|x_j - m| <= 2^IN_W - 1``
        PROD_W    unsigned ``δ·LOG2E`` (base2), exact, before the cast to ``exp_arg_fmt``
        T_W       unsigned ``t`` (``exp_arg_fmt``); ``t >> T_F`` is the shift ``k``
        V_W       unsigned ``v = T[i]·2^G - (T[i] - T[i+1])·u`` with ``G = T_F - A``:
                           between ``T[i+1]·2^G`` and ``T[i]·2^G <= 2^(TABLE_F + G)``
        EXP_W     unsigned ``E = round(v / 2^(k + EXP2_SHIFT)) <= 2^EXP_F`` (exp_fmt)
        SUM_W     unsigned ``d`` (sum_fmt), at most ``n·ONE``
        RESCALE_W unsigned ``d·E`` (``E <= 1.0``: ``R_s(d·E) + ONE <= d + ONE``); may
                           exceed 64 bits (69 by default: the derived formats)
        RU_W      unsigned the mantissa ``U`` of ``d`` in ``[2^WF, 2^(WF+1))``
        RT_W      unsigned lut reciprocal: ``T[i]·2^RG - (T[i] - T[i+1])·w <= 2^(WF+RG)``
        RN_W      signed   Newton ``R`` (``<= 2^WF + 1``) and ``e = 2 - U·R``
                           (``<= 1.5·2^WF + 1``: the seed is ``> 0.5``)
        RP_W      signed   Newton products ``U·R``, ``R·e`` and ``2^(2·WF+1)``: ``< 2^(2·WF+2)``
        RS_W      signed   ``R`` shifted to ``R_F`` fraction bits (a left shift by up to
                           ``R_F - WF`` when ``R_F > WF``)
        RPRE_W    signed   ``1/d <= 1`` (``d >= ONE``) before recip_fmt's overflow:
                           ``< 2^(R_F+1)``
        OUTP_W    unsigned ``E·r``, the exact output product
        UOUTP_W   unsigned unified max: ``(E·r) << s`` with ``s <= U_LOW``
        U_S_W     unsigned unified max: the normalising shift ``s``
        ========= ======== =========================================================

        Options as constants: ``SKIP``/``SKIP_TAU`` (threshold skipping), ``UNIFIED``/
        ``PHI``/``U_LOW``/``U_FLOOR`` (unified max), ``OUT_CODE``.. (the log-code
        post-stage, :meth:`SoftmaxSpec._log_code_params`).
        """
        f_in, f_e, f_s = self.in_fmt.frac_bits, self.exp_fmt.frac_bits, self.sum_fmt.frac_bits
        f_r, wf, tb = self.recip_fmt.frac_bits, self.recip_work_frac_bits, self.recip_table_bits
        hw: dict[str, int] = {
            "IN_W": self.in_fmt.width,
            "IN_F": f_in,
            "X_W": raw_width(self.in_fmt),
            "OUT_W": self.out_fmt.width,
            "OUT_F": self.out_fmt.frac_bits,
            "OUT_SIGNED": int(self.out_fmt.signed),
            "OUT_RND": rounding_code(self.out_fmt.rounding),
            "OUT_OVF": overflow_code(self.out_fmt.overflow),
            "OUT_SHIFT": f_e + f_r - self.out_fmt.frac_bits,
            "TWO_PASS": int(self.schedule == "two_pass"),
            "OFF_BY_ONE": int(self.off_by_one),
            "CLIP": int(self.clipped),
            "CLIP_F": self.clip_frac_bits,
            "CLIP_S": self.clip_constants()[0],
            "CLIP_G": self.clip_constants()[1],
            "CLIP_ONE": min(1 << self.out_fmt.frac_bits, self.out_fmt.max_raw),
            # clipped: r_s = round(S·r / 2^CLIP_F) (S < 2^(CLIP_F + 4): ζ - γ < 16) and
            # z = E·r_s + G·2^(EXP_F + R_F - CLIP_F) (|G| < 2^(CLIP_F + 3))
            "CS_W": self.clip_frac_bits + 5,
            "CRS_W": self.recip_fmt.width + self.clip_frac_bits + 5,
            "CZ_W": self.exp_fmt.width + self.recip_fmt.width + 6,
            "BASE2": int(self.exp_unit == "base2"),
            "EXP_W": self.exp_fmt.width,
            "EXP_F": f_e,
            "EXP_RND": rounding_code(self.exp_fmt.rounding),
            "SUM_W": self.sum_fmt.width,
            "SUM_F": f_s,
            "SUM_RND": rounding_code(self.sum_fmt.rounding),
            "SUM_UP": f_s - f_e,
            "SUM_ONE": self._one_sum(),
            "R_W": self.recip_fmt.width,
            "R_F": f_r,
            "R_OVF": overflow_code(self.recip_fmt.overflow),
            "R_RND": rounding_code(self.recip_fmt.rounding),
            "WF": wf,
            "TB": tb,
            "NEWTON": int(self.recip_unit == "newton"),
            "STEPS": self.newton_steps,
            "DELTA_W": self.in_fmt.width,
            "RESCALE_W": self.sum_fmt.width + self.exp_fmt.width,
            "RU_W": wf + 1,
            "RG": wf - tb,
            "RT_W": ubits(1 << (2 * wf - tb)),
            "RN_W": wf + 3,
            "RP_W": 2 * wf + 3,
            "RS_W": max(wf, f_r) + 3,
            "RPRE_W": f_r + 2,
            "OUTP_W": self.exp_fmt.width + self.recip_fmt.width,
            # threshold skipping: skip when |x - m| > SKIP_TAU (not a new max)
            "SKIP": int(self.skip_threshold is not None),
            "SKIP_TAU": self.skip_raw,
            # unified max: PHI (an in_fmt code), the safe sum floor ONE >> U_LOW, the
            # normalising shift s <= U_LOW (U_S_W bits) and E·r << s (UOUTP_W bits)
            "UNIFIED": int(self.unified_max is not None),
            "PHI": self.unified_phi_raw if self.unified_max is not None else 0,
            "U_LOW": self.unified_low,
            "U_FLOOR": self._one_sum() >> self.unified_low,
            "U_S_W": ubits(self.unified_low),
            "UOUTP_W": self.exp_fmt.width + self.recip_fmt.width + self.unified_low,
            **self._log_code_params(),
        }
        if self.exp_unit == "base2":
            t_f, a = self.exp_arg_fmt.frac_bits, self.exp_frac_bits
            g = t_f - a
            hw |= {
                "LOG2E": self.log2e_raw,
                "LOG2E_W": self.log2e_fmt.width,
                "LOG2E_F": self.log2e_fmt.frac_bits,
                "PROD_SHIFT": f_in + self.log2e_fmt.frac_bits - t_f,
                "PROD_W": self.in_fmt.width + self.log2e_fmt.width,
                "T_W": self.exp_arg_fmt.width,
                "T_F": t_f,
                "T_RND": rounding_code(self.exp_arg_fmt.rounding),
                "A": a,
                "G": g,
                "TABLE_F": self.exp_table_frac_bits,
                "INTERP": int(self.exp_interp == "pwl"),
                "V_W": ubits(1 << (self.exp_table_frac_bits + g)),
                "EXP2_SHIFT": self.exp_table_frac_bits + g - f_e,
            }
        else:
            hw |= {
                "LUT_BITS": self.exp_lut_bits,
                "LIM_BITS": f_in + self.exp_lut_int_bits,
                "LUT_SHIFT": f_in + self.exp_lut_int_bits - self.exp_lut_bits,
            }
        return hw

    # -- the datapath ------------------------------------------------------------------
    def exp_unit_raw(
        self, delta: npt.ArrayLike, tables: dict[str, RawArray] | None = None
    ) -> RawArray:
        """E(δ) = exp(-δ): raw non-negative δ (``in_fmt`` fraction bits) -> raw ``exp_fmt``."""
        dl = np.asarray(delta, dtype=np.int64)
        tabs = self.tables() if tables is None else tables
        if self.exp_unit == "lut":
            s = self.in_fmt.frac_bits + self.exp_lut_int_bits - self.exp_lut_bits
            limit = np.int64(1) << np.int64(self.in_fmt.frac_bits + self.exp_lut_int_bits)
            idx = np.minimum(dl, limit - 1) >> np.int64(s)
            return np.where(dl >= limit, np.int64(0), tabs["exp_lut"][idx])
        prod = dl * np.int64(self.log2e_raw)  # exact: F_in + LOG2E_F fraction bits
        prod_fmt = FixedFormat(
            self.in_fmt.width + 1 + self.log2e_fmt.width,
            self.in_fmt.int_bits + 1 + self.log2e_fmt.int_bits,
            signed=False,
        )
        t = cast(prod, prod_fmt, self.exp_arg_fmt)
        return intmath.exp2_neg(
            t,
            self.exp_arg_fmt.frac_bits,
            tabs["exp2_table"],
            self.exp_frac_bits,
            self.exp_fmt.frac_bits,
            self.exp_table_frac_bits,
            interp=self.exp_interp == "pwl",
            rounding=self.exp_fmt.rounding,
        )

    def _rescale(self, d: RawArray, e: RawArray) -> RawArray:
        """R_s(d · e): exact product rounded to ``sum_fmt`` (its rounding: AP_TRN or AP_RND).

        Exact beyond 64 bits: ``d = dh·2^F_e + dl``, so ``R_s(d·e) = dh·e + R_s(dl·e)``
        (``dl·e < 2^(F_e + EXP_W) <= 2^62``, validated)."""
        return rescale_product(d, e, self.exp_fmt.frac_bits, self.sum_fmt.rounding is Rounding.RND)

    def _exp_memo(self) -> RawArray:
        """:meth:`exp_unit_raw` of every δ code in ``[0, 2^W_in)`` (every difference of
        two ``in_fmt`` codes), index δ. Only a speed-up."""
        return self.exp_unit_raw(np.arange(1 << self.in_fmt.width, dtype=np.int64))

    def _exp_fn(self, tabs: dict[str, RawArray]) -> Callable[[RawArray], RawArray]:
        """E as a function; for inputs of <= 20 bits a memo of E over every δ code;
        for wider inputs a memo over ``δ < 2^b`` with δ clamped to ``2^b - 1`` where that
        clamp is exact (:meth:`_exp_clamp_bits`), else E computed."""
        if self.in_fmt.width <= _MEMO_MAX_BITS:
            memo = _cached(self, "_exp_memo")
            return lambda dl: memo[dl]  # type: ignore[no-any-return]
        if self._exp_clamp_bits() is not None:
            memo = _cached(self, "_exp_memo_clamped")
            top = np.int64(memo.size - 1)
            return lambda dl: memo[np.minimum(dl, top)]  # type: ignore[no-any-return]
        return lambda dl: self.exp_unit_raw(dl, tabs)

    def _exp_clamp_bits(self) -> int | None:
        """``b`` such that every ``δ >= 2^b - 1`` has the same E as ``2^b - 1`` (so a memo
        over ``[0, 2^b)`` serves every δ, clamped), proved here, or None: for the base-2
        unit the exp argument ``t`` of ``δ = 2^b - 1`` already saturates (E depends on δ
        through ``t`` alone, and a larger product saturates too); for the LUT unit
        ``2^b - 1`` is at or past the limit where E is 0. ``b`` is one more than
        :meth:`exp_delta_bits`, at most 20 bits and below the input width."""
        b = self.exp_delta_bits() + 1
        if not b <= min(_MEMO_MAX_BITS, self.in_fmt.width - 1):
            return None
        top = (1 << b) - 1
        if self.exp_unit == "lut":
            return b if top >= 1 << (self.in_fmt.frac_bits + self.exp_lut_int_bits) else None
        if self.exp_arg_fmt.overflow not in (Overflow.SAT, Overflow.SAT_SYM):
            return None
        prod_fmt = FixedFormat(
            self.in_fmt.width + 1 + self.log2e_fmt.width,
            self.in_fmt.int_bits + 1 + self.log2e_fmt.int_bits,
            signed=False,
        )
        t = cast(np.array([top * self.log2e_raw], dtype=np.int64), prod_fmt, self.exp_arg_fmt)
        return b if int(t[0]) == self.exp_arg_fmt.max_raw else None

    def _exp_memo_clamped(self) -> RawArray:
        """:meth:`exp_unit_raw` of every δ in ``[0, 2^b)``, ``b`` of :meth:`_exp_clamp_bits`
        (only a speed-up)."""
        b = self._exp_clamp_bits()
        assert b is not None
        return self.exp_unit_raw(np.arange(1 << b, dtype=np.int64))

    def row_state(
        self,
        x: RawArray,
        schedule: str | None = None,
        exp: Callable[[RawArray], RawArray] | None = None,
        mask: npt.ArrayLike | None = None,
    ) -> tuple[RawArray, RawArray]:
        """Per-row ``(m, d)`` after the whole row (raw ``in_fmt``, raw ``sum_fmt``).

        ``x`` is ``(R, N)`` raw codes; ``schedule`` overrides the spec's
        (``"online"`` or ``"two_pass"``); ``mask`` (bool, broadcastable to
        ``x``, True = masked out): masked elements leave the state untouched;
        a fully masked row reports the empty state as ``(in_fmt.min_raw, 0)``.
        """
        sched = self.schedule if schedule is None else schedule
        require(
            sched in ("online", "two_pass"),
            f"schedule must be 'online' or 'two_pass', got {sched!r}",
        )
        x = self.check_input(x)
        require(
            x.ndim == 2 and x.shape[1] > 0,
            f"row_state needs an (R, N >= 1) array, got shape {x.shape}",
        )
        mk = None
        if mask is not None:
            mk = np.ascontiguousarray(broadcast_mask(mask, x.shape))
            mk = mk if mk.any() else None
        narrow = exp is None and self._narrow()
        kernel = exp is None  # the spec's own exp: the compiled scan may stand in for it
        if exp is None:
            exp = self._exp_fn(_cached(self, "tables"))
        m, d, _, _ = self._row_state(x, sched, exp, narrow, mk, kernel=kernel)
        return m, d

    def _narrow(self) -> bool:
        """True when the stream precompute can use int32 exactly: memo inputs below 2^30
        (``|x_j - m|`` too) and ``E·up < 2^(exp_fmt.width + sum_f - exp_f) <= 2^30``."""
        return (
            self.in_fmt.width <= min(_MEMO_MAX_BITS, 29)
            and self.exp_fmt.width + self.sum_fmt.frac_bits - self.exp_fmt.frac_bits <= 30
        )

    def _row_state(
        self,
        x: RawArray,
        sched: str,
        exp: Callable[[RawArray], RawArray],
        narrow: bool = False,
        mask: npt.NDArray[np.bool_] | None = None,
        kernel: bool = False,
    ) -> tuple[RawArray, RawArray, RawArray | None, npt.NDArray[np.bool_] | None]:
        """:meth:`row_state` of checked ``(R, N >= 1)`` codes, plus ``E(m - x)`` (two_pass)
        and the ``(R, N)`` skip flags (``skip_threshold``; else None).

        ``kernel`` (``exp`` is the memo): the online schedule through the compiled
        row scan (:mod:`hwapprox.approx._kernels`) where numba is available -- the same recurrence.

        The online recurrence runs element by element in stream order; only
        the parts that do not depend on ``d`` are computed for all elements at
        once: the running max ``m_j`` (a cumulative max), the flags ``x_j >
        m_(j-1)`` and ``E(|x_j - m_(j-1)|)``. The rescale ``R_s(d·e) + ONE``
        is ``((d·e [+ 2^(F_e-1)]) >> F_e) + ONE`` (AP_TRN [AP_RND]), which is
        :meth:`_rescale` plus ONE. ``narrow`` (:meth:`_narrow`, ``exp`` = the
        memo): the precompute in int32 (exact, less memory).

        Skipping (``skip_threshold``): an element that is not a new max and whose
        ``|x_j - m_(j-1)|`` exceeds ``skip_raw`` gets ``E = 0`` (``d`` unchanged) and a
        skip flag; ``two_pass``: ``m - x_j > skip_raw`` against the row max.
        """
        if kernel and sched == "online" and self._kernel_ok():
            return self._row_state_kernel(x, mask)
        if mask is not None:
            return self._row_state_masked(x, sched, exp, narrow, mask)
        one = np.int64(self._one_sum())
        up = np.int64(1 << (self.sum_fmt.frac_bits - self.exp_fmt.frac_bits))
        tau = self.skip_raw
        if sched == "two_pass":
            m = x.max(axis=1)
            dl = m[:, None] - x
            e = exp(dl)
            skip = None
            if tau:
                skip = dl > tau
                e = np.where(skip, 0, e)
            return m, (e * up).sum(axis=1), e, skip
        rows, n = x.shape
        d = np.full(rows, one, dtype=np.int64)
        if n == 1:
            return x[:, 0].copy(), d, None, None
        xc = x.astype(np.int32) if narrow else x
        run_max = np.maximum.accumulate(xc, axis=1)
        prev = run_max[:, :-1]
        xs = xc[:, 1:]
        new = xs > prev
        delta = xs - prev
        np.abs(delta, out=delta)
        e = _cached(self, "_exp_memo", True)[delta] if narrow else exp(delta)
        skip = None
        if tau:
            sk = ~new & (delta > tau)
            e = np.where(sk, 0, e)
            skip = np.zeros((rows, n), bool)
            skip[:, 1:] = sk
        self._stream_sum(d, e, new)
        return run_max[:, -1].astype(np.int64), d, None, skip

    def _kernel_ok(self) -> bool:
        """The compiled scans apply: numba present, and a memo of ``E`` they can index
        (:meth:`_kernel_memo`); with threshold skipping and the clamped memo, the
        threshold below the clamp (a clamped δ still compares with it as δ does)."""
        if not _kernels.available():
            return False
        if self.in_fmt.width <= _MEMO_MAX_BITS:
            return True
        b = self._exp_clamp_bits()
        return b is not None and int(self.skip_raw or 0) < (1 << b) - 1

    def _kernel_memo(self) -> RawArray:
        """The memo the compiled scans index, δ clamped to its last entry: ``E`` over every
        δ code (inputs up to 20 bits), else over ``δ < 2^b`` (:meth:`_exp_clamp_bits`:
        every larger δ has the entry ``2^b - 1``'s E)."""
        if self.in_fmt.width <= _MEMO_MAX_BITS:
            return _cached(self, "_exp_memo")  # type: ignore[no-any-return]
        return _cached(self, "_exp_memo_clamped")  # type: ignore[no-any-return]

    def _kernel_memo32(self) -> RawArray:
        """:meth:`_kernel_memo` as int32 where every ``E`` fits (``exp_fmt`` of at most 31
        bits; the same values, half the cache the compiled gathers read), else as it is."""
        if self.exp_fmt.width > 31:
            return self._kernel_memo()
        name = "_exp_memo" if self.in_fmt.width <= _MEMO_MAX_BITS else "_exp_memo_clamped"
        return _cached(self, name, True)  # type: ignore[no-any-return]

    def _row_state_kernel(
        self, x: RawArray, mask: npt.NDArray[np.bool_] | None
    ) -> tuple[RawArray, RawArray, None, npt.NDArray[np.bool_] | None]:
        """:meth:`_row_state` (online schedule) by :func:`hwapprox.approx._kernels.online_state`."""
        skip = np.zeros(x.shape, dtype=bool) if self.skip_raw else None
        fe = self.exp_fmt.frac_bits
        memo = self._kernel_memo()
        m, d = _kernels.online_state(
            np.ascontiguousarray(x, dtype=np.int64),
            mask if mask is not None else np.zeros((1, 1), dtype=bool),
            mask is not None,
            memo,
            self._one_sum(),
            1 << (self.sum_fmt.frac_bits - fe),
            fe,
            (1 << (fe - 1)) if self.sum_fmt.rounding is Rounding.RND else 0,
            int(self.skip_raw or 0),
            self.in_fmt.min_raw,
            memo.size - 1,
            skip if skip is not None else np.zeros((1, 1), dtype=bool),
        )
        return m, d, None, skip

    def _stream_sum(self, d: RawArray, e: RawArray, new: npt.NDArray[np.bool_]) -> None:
        """The running sum over a stream, in place on ``d`` (R,): for each element
        ``j`` (columns of the (R, J) ``e``/``new``), ``d = R_s(d·E_j) + ONE`` where
        ``new[:, j]`` (a new max), else ``d + E_j`` (exact, scaled to ``sum_fmt``).

        Computed by :func:`event_scan` (prefix sums between new maxima, the
        rescale only at them); :meth:`_stream_sum_loop` is the element-by-element
        loop it replaces (kept as the reference of the fast-path test)."""
        one = np.int64(self._one_sum())
        up = int(1 << (self.sum_fmt.frac_bits - self.exp_fmt.frac_bits))
        inc = np.multiply(e, up, dtype=np.int64)
        np.copyto(inc, one, where=new)
        fe = np.int64(self.exp_fmt.frac_bits)
        half = np.int64(1 << (self.exp_fmt.frac_bits - 1))
        rnd = self.sum_fmt.rounding is Rounding.RND
        mask_fe = np.int64((1 << self.exp_fmt.frac_bits) - 1)
        e_f = np.ascontiguousarray(e).ravel()

        def rescale(dv: RawArray, flat: npt.NDArray[np.intp]) -> RawArray:
            ev = e_f[flat].astype(np.int64)
            lo = dv & mask_fe
            dv >>= fe
            dv *= ev
            lo *= ev
            if rnd:
                lo += half
            lo >>= fe
            dv += lo
            return dv

        d[...] = event_scan(d, inc, new, rescale)

    def _stream_sum_loop(self, d: RawArray, e: RawArray, new: npt.NDArray[np.bool_]) -> None:
        """:meth:`_stream_sum` element by element (the direct form of the recurrence)."""
        e_t, new_t = e.T, new.T
        one = np.int64(self._one_sum())
        eup_t = e_t * int(1 << (self.sum_fmt.frac_bits - self.exp_fmt.frac_bits))
        fe = np.int64(self.exp_fmt.frac_bits)
        rnd = self.sum_fmt.rounding is Rounding.RND
        for j in range(e_t.shape[0]):
            t = rescale_product(d, e_t[j].astype(np.int64), int(fe), rnd)
            t += one
            d += eup_t[j]
            np.copyto(d, t, where=new_t[j])

    def _row_state_masked(
        self,
        x: RawArray,
        sched: str,
        exp: Callable[[RawArray], RawArray],
        narrow: bool,
        mask: npt.NDArray[np.bool_],
    ) -> tuple[RawArray, RawArray, RawArray | None, npt.NDArray[np.bool_] | None]:
        """:meth:`_row_state` with a ``(R, N)`` mask (True = masked out).

        The state starts empty: ``m`` below every code (``in_fmt.min_raw -
        1``, reported as ``min_raw``), ``d = 0``. Masked elements take the
        value ``min_raw - 1`` for the running max (never above it: ``m`` and
        the ``x_j > m`` flags are as if they were absent) and ``E = 0`` (``d``
        unchanged). The first unmasked element always takes the ``x_j > m``
        branch with ``d = 0``: ``R_s(0·E) + ONE = ONE``, the unmasked
        element-0 rule. Differences are clamped to ``2^W - 1`` (the memo
        range); only masked elements (``E`` forced to 0) and the first
        unmasked one (``E`` multiplies ``d = 0``) can exceed it.
        """
        up = np.int64(1 << (self.sum_fmt.frac_bits - self.exp_fmt.frac_bits))
        lo = self.in_fmt.min_raw
        if sched == "two_pass":
            m = np.where(mask, np.int64(lo), x).max(axis=1)
            dl = m[:, None] - x
            np.copyto(dl, 0, where=mask)
            e = exp(dl)
            np.copyto(e, 0, where=mask)
            skip2 = None
            if self.skip_raw:
                skip2 = (dl > self.skip_raw) & ~mask
                np.copyto(e, 0, where=skip2)
            return m, (e * up).sum(axis=1), e, skip2
        rows = x.shape[0]
        xc = x.astype(np.int32 if narrow else np.int64)  # a copy: masked entries change
        np.copyto(xc, lo - 1, where=mask)  # masked: below every code, never a new max
        run_max = np.maximum.accumulate(xc, axis=1)
        prev = np.empty_like(run_max)  # m before each element (min_raw - 1 = empty)
        prev[:, 0] = lo - 1
        prev[:, 1:] = run_max[:, :-1]
        new = xc > prev  # False at masked elements
        delta = xc - prev
        np.abs(delta, out=delta)
        np.minimum(delta, (1 << self.in_fmt.width) - 1, out=delta)
        e = _cached(self, "_exp_memo", True)[delta] if narrow else exp(delta)
        np.copyto(e, 0, where=mask)
        skip = None
        if self.skip_raw:
            skip = ~new & ~mask & (delta > self.skip_raw)
            np.copyto(e, 0, where=skip)
        d = np.zeros(rows, dtype=np.int64)
        self._stream_sum(d, e, new)
        m = run_max[:, -1].astype(np.int64)
        np.maximum(m, lo, out=m)  # fully masked rows: the empty state, reported as min_raw
        return m, d, None, skip

    def recip_raw(self, d: npt.ArrayLike, tables: dict[str, RawArray] | None = None) -> RawArray:
        """``r = 1/d``: raw ``sum_fmt`` codes (>= ONE) -> raw ``recip_fmt`` codes (saturated)."""
        tabs = self.tables() if tables is None else tables
        r = intmath.reciprocal(
            np.asarray(d, dtype=np.int64),
            self.sum_fmt.frac_bits,
            self.recip_fmt.frac_bits,
            unit=self.recip_unit,
            table=tabs["recip_table"],
            addr_bits=self.recip_table_bits,
            table_frac_bits=self.recip_work_frac_bits,
            work_frac_bits=self.recip_work_frac_bits,
            newton_steps=self.newton_steps,
            rounding=self.recip_fmt.rounding,
        )
        return self.recip_fmt.saturate(r)

    # -- float32 rows in one compiled pass (an emulated site) -----------------------------
    def rows_f32(
        self,
        xf: npt.NDArray[np.float32],
        mask: npt.NDArray[np.bool_] | None = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> npt.NDArray[np.floating] | None:
        """``output_to_float(model(quantize_input(xf), mask=mask), dtype)`` of C-contiguous
        float32 rows ``xf`` (R, N) in one compiled pass
        (:func:`hwapprox.approx._kernels.online_rows_f32`: the same integers and reals as
        the codes path); ``mask`` None or C-contiguous (R, N) bools, True = masked. Masked
        scores are read as 0 (they may be -inf: the codes path of an emulated site gets
        them zeroed; their codes change no output). None where that pass does not apply
        (:meth:`f32_plan`), or an unmasked input is NaN/inf, or the reciprocal would
        raise: the caller then takes the codes path, which gives these values or raises
        its errors."""
        run = self.f32_runner(xf, mask, dtype)
        return None if run is None else run(xf, mask)

    def f32_runner(
        self,
        xf: npt.NDArray[np.float32],
        mask: npt.NDArray[np.bool_] | None = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> Callable[..., npt.NDArray[np.floating] | None] | None:
        """:meth:`rows_f32` bound to rows of ``xf``'s shape (its kernel's arguments
        resolved once, :meth:`f32_plan`, which checks ``mask`` too): ``run(rows, mask)``
        of C-contiguous float32 rows of that shape, with None or a mask as
        :meth:`rows_f32` takes it, is ``rows_f32(rows, mask, dtype)``; None where
        :meth:`f32_plan` is (the pass does not apply to such rows); ``run`` gives None
        where it gives up on the rows' values, as :meth:`rows_f32` does."""
        dt = np.dtype(dtype)
        args = self.f32_plan(xf, mask, dt)
        if args is None:
            return None
        kernel = _kernels.online_rows_f32

        def run(
            rows: npt.NDArray[np.float32], mk: npt.NDArray[np.bool_] | None = None
        ) -> npt.NDArray[np.floating] | None:
            out = np.empty(rows.shape, dtype=dt)
            m = _NO_MASK if mk is None else mk
            return out if kernel(rows, m, mk is not None, *args, out) == 0 else None

        return run

    def f32_plan(
        self,
        xf: npt.NDArray[np.float32],
        mask: npt.NDArray[np.bool_] | None,
        dtype: np.dtype[Any],
    ) -> tuple[Any, ...] | None:
        """The scalar and table arguments of the float32-row kernels (:meth:`rows_f32`,
        :func:`hwapprox.approx._kernels.online_report_f32`) after the rows and the mask, or
        None where they do not apply: rows not C-contiguous float32 (R >= 1, N >= 1), a mask not
        C-contiguous (R, N) bool, another output dtype, rows longer than the unit's limits
        (the codes path raises), or a spec the kernels do not cover (:meth:`_f32_args`).
        Memoised per spec and row length."""
        if (
            xf.dtype != np.float32
            or xf.ndim != 2
            or not xf.flags.c_contiguous
            or xf.size == 0
            or dtype not in (np.float32, np.float64)
            or not (mask is None or _bool_rows(mask, xf.shape))
        ):
            return None
        key = (self, xf.shape[1])
        plan = _F32_PLANS.get(key, _NO_PLAN)
        if plan is _NO_PLAN:
            plan = _F32_PLANS.put(key, self._f32_args(xf.shape[1]))
        return plan

    def _f32_args(self, n: int) -> tuple[Any, ...] | None:
        """:meth:`f32_plan`'s arguments for rows of ``n``, or None: the kernels cover the
        compiled path of :meth:`_rows_detail` -- the online schedule through the compiled
        scans (:meth:`_kernel_ok`), the compiled input quantisation
        (:meth:`_f32_quant`), the compiled reciprocal of :func:`intmath.reciprocal`
        with ``recip_fmt`` wrapping or saturating, the inline output cast
        (:func:`_kernels.cast_params`) and a decode in one product (``out_fmt`` of at
        most 53 bits) -- without ``unified_max``, skipping, the clip, Softmax_1 or log
        codes, for rows within ``row_max`` and ``sum_fmt``."""
        q = self._f32_quant()
        if (
            q is None
            or not self._kernel_ok()
            or self.schedule != "online"
            or self.unified_max is not None
            or self.skip_raw
            or self.clipped
            or self.off_by_one
            or self.out_code != "linear"
            or n > self.row_max
            or n > int(self.sum_fmt.max)
            or self.out_fmt.width > 53
            or abs(self.out_fmt.frac_bits) > 960
        ):
            return None
        fe, fs, fr = self.exp_fmt.frac_bits, self.sum_fmt.frac_bits, self.recip_fmt.frac_bits
        cp = _kernels.cast_params(fe + fr, self.out_fmt)
        wf, tb = self.recip_work_frac_bits, self.recip_table_bits
        ints = (tb, wf, wf, self.newton_steps, fs, fr)
        rnd = self.recip_fmt.rounding
        r_ovf = self.recip_fmt.overflow
        if (
            cp is None
            or not intmath._recip_kernel_fits(self.recip_unit, ints, rnd)
            or r_ovf not in (Overflow.WRAP, Overflow.SAT, Overflow.SAT_SYM)
        ):
            return None
        tab = np.ascontiguousarray(_cached(self, "tables")["recip_table"], dtype=np.int64)
        if tab.ndim != 1 or tab.shape[0] < (1 << tb) + (self.recip_unit == "lut"):
            return None
        return (
            *q, self._kernel_memo32(), self._one_sum(), 1 << (fs - fe), fe,
            (1 << (fe - 1)) if self.sum_fmt.rounding is Rounding.RND else 0,
            self.in_fmt.min_raw, self.recip_unit == "newton", tab, tb, wf, wf,
            self.newton_steps, _kernels.RECIP_MODES[rnd], wf - fs - fr,
            r_ovf is Overflow.WRAP, self.recip_fmt.max_raw, *cp,
            2.0**-self.out_fmt.frac_bits,
        )  # fmt: skip

    def _reference_unclipped(
        self, x: npt.ArrayLike, axis: int = -1, mask: npt.ArrayLike | None = None, **kw: Any
    ) -> npt.NDArray[np.float64]:
        """float64 softmax; with ``off_by_one``, ``exp(x_i) / (1 + Σ exp(x_j))`` (masked
        elements out of the sum, output 0), computed as the softmax of the row with a
        zero logit in front, that element dropped."""
        if not self.off_by_one:
            return super().reference(x, axis=axis, mask=mask, **kw)
        xa = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
        pad = np.zeros((*xa.shape[:-1], 1))
        mk = None
        if mask is not None:
            mb = np.moveaxis(np.broadcast_to(np.asarray(mask, bool), np.shape(x)), axis, -1)
            mk = np.concatenate([np.zeros(pad.shape, bool), mb], axis=-1)
        y = super().reference(np.concatenate([pad, xa], axis=-1), axis=-1, mask=mk)
        return np.moveaxis(y[..., 1:], -1, axis)

    def _model_rows(
        self, x: RawArray, mask: npt.NDArray[np.bool_] | None = None, **kw: Any
    ) -> RawArray:
        # Softmax_1 = the softmax of the row behind a zero logit, that element
        # dropped: the hardware starts the running state at (m, d) = (0, ONE)
        return self._model_rows_detail(x, mask)[0]

    def _rows(self, x: RawArray, mask: npt.NDArray[np.bool_] | None = None) -> RawArray:
        return self._rows_detail(x, mask)[0]

    def _rows_detail(
        self, x: RawArray, mask: npt.NDArray[np.bool_] | None = None
    ) -> tuple[RawArray, npt.NDArray[np.bool_] | None, npt.NDArray[np.bool_] | None]:
        """The outputs of ``(R, N)`` rows, the per-row fallback flags (``unified_max``;
        else None) and the ``(R, N)`` skip flags (``skip_threshold``; else None)."""
        n = x.shape[1]
        self._row_limit(n, int(self.sum_fmt.max), f"sum_fmt {self.sum_fmt}")
        self._row_limit(n, self.row_max, "row_max, the row length the unit is built for")
        tabs = _cached(self, "tables")
        exp = self._exp_fn(tabs)
        if self.unified_max is not None:
            return self._rows_unified(x, mask, exp)
        m, d, e, skip = self._row_state(x, self.schedule, exp, self._narrow(), mask, kernel=True)
        if mask is not None:
            # only fully masked rows have d = 0 (unmasked rows: d >= ONE); their
            # outputs are 0 whatever r is, so any d > 0 stands in for the reciprocal
            np.copyto(d, np.int64(self._one_sum()), where=d == 0)
        r = self.recip_raw(d, tabs)
        if e is None and not self.clipped and self._kernel_ok():
            prod_f = self.exp_fmt.frac_bits + self.recip_fmt.frac_bits
            cp = _kernels.cast_params(prod_f, self.out_fmt)
            if cp is not None:  # the output stage compiled too: one pass, same cast
                y = _kernels.online_out(
                    np.ascontiguousarray(x, dtype=np.int64),
                    m,
                    r,
                    self._kernel_memo(),
                    *cp,
                    mask if mask is not None else np.zeros((1, 1), dtype=bool),
                    mask is not None,
                )
                return _zero_masked(y, skip), None, skip
        if e is None and mask is None:
            e = exp(m[:, None] - x)
        elif e is None:
            dl = m[:, None] - x
            np.copyto(dl, 0, where=mask)
            e = exp(dl)
            np.copyto(e, 0, where=mask)
        if self.clipped:
            y = _zero_masked(self._clipped_out(e, r), mask)
        else:
            prod_fmt = FixedFormat(
                self.exp_fmt.width + self.recip_fmt.width,
                self.exp_fmt.int_bits + self.recip_fmt.int_bits,
                signed=False,
            )
            e = e * r[:, None]
            y = _zero_masked(_cast_prod(e, prod_fmt, self.out_fmt), mask)
        return _zero_masked(y, skip), None, skip

    # -- unified max -------------------------------------------------------------------
    def _rows_unified(
        self,
        x: RawArray,
        mask: npt.NDArray[np.bool_] | None,
        exp: Callable[[RawArray], RawArray],
    ) -> tuple[RawArray, npt.NDArray[np.bool_], None]:
        """The unified-max path (class docstring) and the exact path for the rows that
        leave the safe range. Returns the outputs, the per-row fallback flags and None."""
        phi = np.int64(self.unified_phi_raw)
        live = np.ones(x.shape, bool) if mask is None else ~mask
        over = live & (x > phi)
        fall = over.any(axis=1)
        dl = np.where(live & ~over, phi - x, 0)  # in [0, 2^W - 1]: the memo's range
        e = np.where(live & ~over, exp(dl), 0)
        d = (e * np.int64(1 << (self.sum_fmt.frac_bits - self.exp_fmt.frac_bits))).sum(axis=1)
        one = np.int64(self._one_sum())
        empty = ~live.any(axis=1)
        fall |= ~empty & (d < (one >> np.int64(self.unified_low)))
        ok = ~fall & ~empty
        dn = np.where(ok, d, one)
        s = np.zeros(x.shape[0], np.int64)
        for _ in range(self.unified_low):  # the normalising shift: dn << s >= ONE
            low = dn < one
            s += low
            dn = np.where(low, dn << 1, dn)
        r = self.recip_raw(dn, _cached(self, "tables"))
        w = self.exp_fmt.width + self.recip_fmt.width + self.unified_low
        f = self.exp_fmt.frac_bits + self.recip_fmt.frac_bits
        p = (e * r[:, None]) << s[:, None]
        y = cast(p, FixedFormat(w, w - f, signed=False), self.out_fmt)
        y[~ok] = 0
        if fall.any():
            exact = replace(self, unified_max=None)
            mk = None if mask is None else np.ascontiguousarray(mask[fall])
            y[fall] = exact._rows(
                np.ascontiguousarray(x[fall]), mk if mk is None or mk.any() else None
            )
        return _zero_masked(y, mask), fall, None

    # -- statistics of the variants ------------------------------------------------------
    def model_stats(
        self, raw: npt.ArrayLike, axis: int = -1, mask: npt.ArrayLike | None = None
    ) -> dict[str, float | int | None]:
        """What the unified max and threshold skipping did on these rows (the outputs
        are :meth:`model`'s; this reports alongside it).

        ``rows``/``elements``: rows with an unmasked element / unmasked elements;
        ``fallback_rate``: the fraction of those rows that took the exact path
        (``unified_max``; else None); ``skip_fraction``: skipped / unmasked elements,
        and ``skip_max_abs`` / ``skip_mean_abs``: the error skipping costs, |y - y'| in
        probability units against the same spec without skipping (``out_fmt``
        values, before any log code; ``skip_threshold``; else None).
        """
        x, _, mk = self._rows_of(raw, axis, mask)
        live = np.ones(x.shape, bool) if mk is None else ~mk
        y, fall, skip = self._model_rows_detail(x, mk)
        rows = live.any(axis=1)
        out: dict[str, float | int | None] = {
            "rows": int(rows.sum()),
            "elements": int(live.sum()),
            "fallback_rate": None,
            "skip_fraction": None,
            "skip_max_abs": None,
            "skip_mean_abs": None,
        }
        if fall is not None:
            out["fallback_rate"] = float(fall[rows].mean()) if rows.any() else 0.0
        if skip is not None:
            n_live = max(1, int(live.sum()))
            out["skip_fraction"] = float(skip.sum() / n_live)
            y0, _, _ = replace(self, skip_threshold=None)._model_rows_detail(x, mk)
            err = np.abs(self.out_fmt.to_float(y) - self.out_fmt.to_float(y0))
            out["skip_max_abs"] = float(err.max())
            out["skip_mean_abs"] = float(err[live].mean()) if live.any() else 0.0
        return out

    def _model_rows_detail(
        self, x: RawArray, mask: npt.NDArray[np.bool_] | None
    ) -> tuple[RawArray, npt.NDArray[np.bool_] | None, npt.NDArray[np.bool_] | None]:
        """:meth:`_rows_detail` with Softmax_1's zero logit (as :meth:`_model_rows`)."""
        if not self.off_by_one:
            return self._rows_detail(x, mask)
        zero = np.zeros((x.shape[0], 1), dtype=np.int64)
        mk = None if mask is None else np.concatenate([zero.astype(bool), mask], axis=1)
        y, fall, skip = self._rows_detail(np.concatenate([zero, x], axis=1), mk)
        return (
            np.ascontiguousarray(y[:, 1:]),
            fall,
            None if skip is None else np.ascontiguousarray(skip[:, 1:]),
        )

    # -- clipped softmax -----------------------------------------------------------------
    @property
    def clipped(self) -> bool:
        return (self.clip_gamma, self.clip_zeta) != (0.0, 1.0)

    def clip_constants(self) -> tuple[int, int]:
        """(S, G): ``ζ - γ`` and ``γ`` as raw codes of ``clip_frac_bits`` fraction bits."""
        cf = self.clip_frac_bits
        s = round((self.clip_zeta - self.clip_gamma) * (1 << cf))
        g = round(self.clip_gamma * (1 << cf))
        return s, g

    def _clipped_out(self, e: RawArray, r: RawArray) -> RawArray:
        """``clip((ζ - γ)·E·r + γ, 0, 1)``: the stretch is folded into the row's
        reciprocal, ``r_s = round(S·r / 2^CF)`` (half up; the one added rounding, once
        per row), then ``z = E·r_s + G·2^(F_e + F_r - CF)`` exact, cast to ``out_fmt``
        (its rounding and overflow) and clamped to ``[0, 1.0]`` (1.0, or the largest
        code when ``out_fmt`` cannot hold it)."""
        s, g = self.clip_constants()
        cf = self.clip_frac_bits
        rs = (r * np.int64(s) + np.int64(1 << (cf - 1))) >> np.int64(cf)
        f = self.exp_fmt.frac_bits + self.recip_fmt.frac_bits
        z = e * rs[:, None] + (np.int64(g) << np.int64(f - cf))
        w = self.exp_fmt.width + self.recip_fmt.width + 4
        y = cast(z, FixedFormat(w, w - f, True), self.out_fmt)
        one = min(1 << self.out_fmt.frac_bits, self.out_fmt.max_raw)
        return np.clip(y, 0, one)

    def reference(
        self, x: npt.ArrayLike, axis: int = -1, mask: npt.ArrayLike | None = None, **kw: Any
    ) -> npt.NDArray[np.float64]:
        """float64 softmax (``off_by_one``: Softmax_1); clipped as the spec says, masked
        elements 0."""
        y = self._reference_unclipped(x, axis=axis, mask=mask, **kw)
        if not self.clipped:
            return y
        z = np.clip((self.clip_zeta - self.clip_gamma) * y + self.clip_gamma, 0.0, 1.0)
        if mask is not None:
            z = np.where(np.broadcast_to(np.asarray(mask, bool), z.shape), 0.0, z)
        return z

    def reference_is_standard(self) -> bool:
        """The plain softmax reference: neither Softmax_1 nor the clip."""
        return (
            type(self).reference is OnlineSoftmax.reference
            and type(self)._reference_unclipped is OnlineSoftmax._reference_unclipped
            and not self.off_by_one
            and not self.clipped
        )

    @property
    def cost_variant(self) -> str:
        """The cost table's variant (:func:`hwapprox.approx.costmodel.unit_key`): the LUT
        exp + PWL reciprocal datapath is other hardware than base 2 + Newton."""
        return "lut_exp" if self.exp_unit == "lut" else ""

    def exp_delta_bits(self) -> int:
        """Bits of the differences ``δ = m - x`` the exp path needs: beyond ``D =
        ceil(max t / log2 e · 2^F_in)`` (base2: ``t`` saturates at ``exp_arg_fmt.max >=
        F_e + 2``, E = 0) or ``2^(F_in + exp_lut_int_bits)`` (lut: E = 0) every δ gives
        the same E, so a clamp of δ there changes nothing. At most ``in_fmt.width``."""
        f_in = self.in_fmt.frac_bits
        if self.exp_unit == "lut":
            return min(self.in_fmt.width, max(1, f_in + self.exp_lut_int_bits))
        d = math.ceil(float(self.exp_arg_fmt.max) / math.log2(math.e) * 2.0**f_in)
        return min(self.in_fmt.width, ubits(d))

    def cost(self) -> Cost:
        """Cost of one lane. Input width: the running max's comparator and the
        subtractor ``m - x`` (and the row buffer) are ``in_fmt.width`` wide, but the exp
        path's ``δ·LOG2E`` multiplier is counted at :meth:`exp_delta_bits` (δ clamped
        where E is 0), so a wider input code (an outlier range calibrated without
        losing fraction bits) costs a comparator and a subtractor, not the exp path.
        The HLS and RTL units multiply the unclamped δ today (the same E): in
        hardware the saving is potential only, until they clamp δ too."""
        t = self.tables()
        tb = sum(len(v) * int(max(1, int(v.max()).bit_length())) for v in t.values())
        mults: list[tuple[int, int]] = [
            (self.sum_fmt.width, self.exp_fmt.width),
            (self.exp_fmt.width, self.recip_fmt.width),
        ]
        d_bits = self.exp_delta_bits()
        if self.exp_unit == "base2":
            mults.append((d_bits + 1, self.log2e_fmt.width))
            if self.exp_interp == "pwl":
                mults.append(
                    (self.exp_table_frac_bits, self.exp_arg_fmt.frac_bits - self.exp_frac_bits)
                )
        adders = 3
        clipped = (self.clip_gamma, self.clip_zeta) != (0.0, 1.0)
        if clipped:  # per row r_s = S·r; per element + G·2^k and the [0, 1] clamp
            mults.append((self.recip_fmt.width, self.clip_frac_bits + 5))
            adders += 2
        if self.unified_max is not None:  # a second exp (of phi - x) and its sum
            if self.exp_unit == "base2":
                mults.append((d_bits + 1, self.log2e_fmt.width))
            adders += 2
        if self.skip_threshold is not None:  # one compare against m - tau
            adders += 1
        if self.out_code != "linear":  # priority encoder + constant compares
            adders += 2
        return Cost(
            table_bits=tb,
            tables=len(t),
            multipliers=len(mults),
            mult_bits=tuple(mults),
            adders=adders,
            widest_bits=max(a + b for a, b in mults),
            notes=(
                f"per element: max comparator and m - x subtractor at {self.in_fmt.width} bits, "
                f"2 exp evaluations on δ clamped to {d_bits} bits (stream + output), rescale "
                "multiply, output multiply; per row: 1 reciprocal "
                f"({self.recip_unit}, {self.newton_steps if self.recip_unit == 'newton' else 0} "
                "Newton steps); row buffer of N inputs"
            ),
        )
