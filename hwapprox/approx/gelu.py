"""GELU approximations: bit-accurate integer models and the float64 reference.

Reference ``GELU(x) = x·Φ(x) = x/2·(1 + erf(x/√2))`` (ONNX ``Gelu``,
``approximate="none"``), or with ``form="tanh"``
``x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³)))``, or with ``form="quick"`` CLIP's
``quick_gelu`` ``x·σ(1.702·x)`` (:data:`QUICK_GELU_ALPHA`), or with ``form="silu"`` the
SiLU / swish ``x·σ(x)`` of gated FFNs (Llama, Mistral: ``SiLU(x·Wg) ⊙ (x·Wu)``), the same
family at slope 1 (:data:`SIGMOID_FORM_ALPHA`). Every spec maps raw codes of
``in_fmt`` to raw codes of ``out_fmt`` elementwise with pure int64 numpy; the
final conversion to ``out_fmt`` always uses ``out_fmt``'s own rounding and
overflow modes (``AP_RND``/``AP_SAT`` in the defaults).

Methods (registry names in brackets):

* :class:`IBertGelu` (``ibert``) -- I-BERT i-GELU (Kim et al. 2021), exact
  integer arithmetic with I-BERT's constants.
* :class:`ShiftGelu` (``shiftgelu``) -- I-ViT ShiftGELU (Li & Gu 2023),
  ``x·σ(1.702x)`` with the shift-exp, per element.
* :class:`EdgeMoeGelu` (``edgemoe``) -- Edge-MoE ``src/gelu.cpp``: ReLU minus
  an interpolated correction table.
* :class:`PwlGelu` (``pwl``) -- minimax piecewise-linear with fitted
  breakpoints (:mod:`hwapprox.approx.pwl`).
* :class:`LutGelu` (``lut``) -- one table entry per input code (or per bin of
  the top ``index_bits`` bits).

The float64 reference uses :func:`erf`/:func:`erfc` below, vectorised and
within 1e-15 (absolute) of ``math.erf`` (see ``tests/test_gelu.py``).

``quick_gelu`` (``form="quick"``) is a GELU site whose float reference is
``x·σ(1.702x)`` itself, so every error is measured against the function the
model computes (it differs from the erf GELU by up to 0.02). How each method
maps onto it:

* ``lut`` and ``pwl`` tabulate / fit the spec's reference, so they compute
  ``quick_gelu`` directly (``pwl``'s tails stay ``0`` below ``lo`` and ``x``
  above ``hi``; ``quick_gelu(-4) = -4.5e-3`` where ``GELU(-4) = -1.3e-4``, so
  give a quick site ``lo = -8, hi = 8`` where its output LSB is finer than that);
* ``shiftgelu`` *is* ``x·σ(1.702x)`` (I-ViT's ShiftGELU); ``form`` only selects
  what its error is measured against;
* ``edgemoe`` is ``ReLU(x) - δ(|x|)`` with ``δ`` tabulated; it needs only
  ``f(x) - f(-x) = x``, which ``x·σ(αx)`` satisfies as ``x·Φ(x)`` does, so with
  ``form="quick"`` its table holds ``δ(t) = t·σ(-1.702t)`` (for ``erf`` and
  ``tanh`` the erf correction, as before); beyond the table ``δ`` is 0:
  ``δ(5.5) = 4.7e-4`` for quick (1e-7 for erf), about one LSB at 11 fraction bits;
* ``ibert`` evaluates I-BERT's polynomial of ``erf``: it approximates the erf
  GELU only, so a ``quick`` spec is refused (its error against ``quick_gelu``
  would be the 0.02 gap between the functions, not the method's).

``form="silu"`` (``x·σ(x)``) maps the same way with slope 1 instead of 1.702:
``lut``/``pwl`` tabulate / fit it, ``edgemoe`` tabulates ``δ(t) = t·σ(-t)`` (which
decays more slowly: ``δ(5.5) = 2.2e-2``, ``δ(11) = 1.8e-4``, so a SiLU table wants a
longer range or a coarser step than the erf default); ``ibert`` and ``shiftgelu``
(whose shift-exp is built for I-ViT's slope 1.702) refuse it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox._cache import BoundedMemo
from hwapprox.approx.base import Cost, Operator, SpecError
from hwapprox.approx.fntable import FnSpec, LutTable, PwlTable, round_half_up
from hwapprox.approx.hwparams import rounding_code, sbits, ubits
from hwapprox.approx.intmath import shift_exp, shift_exp_x0
from hwapprox.fixed import MAX_RAW_BITS, FixedFormat, round_shift

__all__ = [
    "GELU_FORMS",
    "QUICK_GELU_ALPHA",
    "SIGMOID_FORM_ALPHA",
    "EdgeMoeGelu",
    "IBertGelu",
    "LutGelu",
    "PwlGelu",
    "ShiftGelu",
    "erf",
    "erfc",
    "gelu_reference",
]

RawArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

_SQRT_PI = math.sqrt(math.pi)
_SERIES_LIMIT = 1.5  # |z| below: positive series for erf; above: continued fraction for erfc
_SERIES_TERMS = 30
#: (lower end of a z band, continued-fraction terms it needs for < 1e-16 truncation)
_CF_BANDS = ((1.5, 80), (2.5, 40), (4.0, 22), (8.0, 12))

#: reference forms of a GELU spec: erf (exact), tanh (approximate="tanh"), quick (CLIP)
GELU_FORMS = ("erf", "tanh", "quick", "silu")
#: CLIP's ``quick_gelu`` constant: ``x·σ(1.702·x)``
QUICK_GELU_ALPHA = 1.702
#: the sigmoid-form references ``x·σ(α·x)`` by form: CLIP's quick_gelu and SiLU (swish)
SIGMOID_FORM_ALPHA = {"quick": QUICK_GELU_ALPHA, "silu": 1.0}

# default formats (module constants: frozen, shared)
_FIX16_5 = FixedFormat.parse("ap_fixed<16,5,AP_RND,AP_SAT>")
_FIX8_4 = FixedFormat.parse("ap_fixed<8,4,AP_RND,AP_SAT>")
_UFIX22_0 = FixedFormat.parse("ap_ufixed<22,0>")
_FIX18_2 = FixedFormat.parse("ap_fixed<18,2,AP_RND,AP_SAT>")
_FIX10_4 = FixedFormat.parse("ap_fixed<10,4,AP_RND,AP_SAT>")

#: :meth:`ShiftGelu._best_n` by (class, fields but n, n_max); cleared when full
_BEST_N: BoundedMemo[tuple[int, float] | None] = BoundedMemo(64)


# ---------------------------------------------------------------------------
# float64 reference
# ---------------------------------------------------------------------------
def _exp_minus_sq(z: FloatArray) -> FloatArray:
    """``exp(-z²)`` without the rounding error of ``z*z`` (split ``z = zh + zl``, zh² exact)."""
    zh = np.round(z * 4096.0) / 4096.0
    return np.exp(-zh * zh) * np.exp(-(z - zh) * (z + zh))


def _erf_series(z: FloatArray) -> FloatArray:
    """``erf(z) = 2/√π·e^(-z²)·Σ 2^n z^(2n+1)/(2n+1)!!`` (all terms positive), Horner form."""
    w = 2.0 * z * z
    h = np.ones_like(z)
    for n in range(_SERIES_TERMS, 0, -1):
        h = 1.0 + h * w / (2 * n + 1)
    return (2.0 / _SQRT_PI) * z * h * _exp_minus_sq(z)


def _erfc_cf(z: FloatArray, terms: int) -> FloatArray:
    """``erfc(z) = e^(-z²)/√π · 1/(z + (1/2)/(z + 1/(z + (3/2)/(z + ...))))`` (z >= 1.5)."""
    f = z.copy()
    for k in range(terms, 0, -1):
        f = z + (k / 2.0) / f
    return _exp_minus_sq(z) / (_SQRT_PI * f)


def _erf_erfc(x: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    a = np.asarray(x, dtype=np.float64)
    if not np.isfinite(a).all():
        # inf is well defined; NaN propagates.
        a = np.where(np.isnan(a), a, np.clip(a, -30.0, 30.0))
    z = np.abs(a)
    e = np.empty_like(z)
    c = np.empty_like(z)
    small = z < _SERIES_LIMIT
    if small.any():
        es = _erf_series(z[small])
        e[small], c[small] = es, 1.0 - es
    zc = np.minimum(z, 30.0)  # erfc(30) < 1e-392: 0 in float64
    uppers = [b[0] for b in _CF_BANDS[1:]] + [np.inf]
    for (lower, terms), upper in zip(_CF_BANDS, uppers, strict=True):
        band = (z >= lower) & (z < upper)
        if band.any():
            cb = _erfc_cf(zc[band], terms)
            c[band], e[band] = cb, 1.0 - cb
    neg = a < 0
    return np.where(neg, -e, e), np.where(neg, 2.0 - c, c)


def erf(x: npt.ArrayLike) -> FloatArray:
    """Error function, float64, vectorised (|error| < 1e-15 vs ``math.erf``)."""
    return _erf_erfc(x)[0]


def erfc(x: npt.ArrayLike) -> FloatArray:
    """Complementary error function, float64, vectorised (relative error < 1e-13 for x > 0)."""
    return _erf_erfc(x)[1]


def gelu_reference(x: npt.ArrayLike, form: str = "erf") -> FloatArray:
    """GELU in float64: ``x·Φ(x)`` (``form="erf"``), the tanh form (``form="tanh"``) or
    CLIP's ``quick_gelu`` ``x·σ(1.702x)`` (``form="quick"``) or SiLU ``x·σ(x)``
    (``form="silu"``).

    The erf form uses ``Φ(x) = erfc(-x/√2)/2``, accurate in relative terms for
    negative x too (``GELU(-8) ≈ -5.3e-15`` is not lost to cancellation).
    """
    a = np.asarray(x, dtype=np.float64)
    if form == "erf":
        return a * 0.5 * erfc(-a / math.sqrt(2.0))
    if form == "tanh":
        u = math.sqrt(2.0 / math.pi) * (a + 0.044715 * a**3)
        # x/2·(1 + tanh(u)) = x / (1 + e^(-2u)), stable for both signs.
        with np.errstate(over="ignore"):
            return a / (1.0 + np.exp(-2.0 * u))
    if form in SIGMOID_FORM_ALPHA:
        alpha = SIGMOID_FORM_ALPHA[form]
        with np.errstate(over="ignore"):  # x / (1 + e^(-αx)): -0.0 where e^(-αx) overflows
            return a / (1.0 + np.exp(-alpha * a))
    raise SpecError(
        f"form={form!r} is not a GELU reference form; expected one of {', '.join(GELU_FORMS)}"
    )


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _floor(q: Fraction) -> int:
    return math.floor(q)


def _bits(v: int) -> int:
    """Signed two's-complement width that holds ``v`` and ``-v``."""
    return abs(int(v)).bit_length() + 1


def _dyadic(m: Fraction, bits: int) -> tuple[int, int]:
    """``m > 0`` as ``mant·2^-shift`` with a ``bits``-bit mantissa (round half up)."""
    e = m.numerator.bit_length() - m.denominator.bit_length()
    if Fraction(2) ** e > m:
        e -= 1
    shift = bits - 1 - e
    mant = round_half_up(m * Fraction(2) ** shift)
    return mant, shift


@dataclass(frozen=True)
class _GeluSpec(FnSpec):
    """Fields and checks every GELU method shares."""

    operator: ClassVar[Operator] = Operator.GELU

    in_fmt: FixedFormat = _FIX16_5
    out_fmt: FixedFormat = _FIX16_5
    #: reference the error is measured against: "erf" (exact GELU), "tanh", "quick"
    #: (CLIP's x·σ(1.702x)) or "silu" (x·σ(x)); the module docstring says how each method
    #: computes it
    form: str = "erf"

    def validate(self) -> None:
        # Values are written with repr (formats quoted: in_fmt='ap_fixed<16,5>').
        self._require(
            self.form in GELU_FORMS,
            "form",
            repr(self.form),
            f"expected one of {', '.join(map(repr, GELU_FORMS))}",
        )
        self._require(
            self.in_fmt.signed,
            "in_fmt",
            repr(str(self.in_fmt)),
            "must be signed (ap_fixed, not ap_ufixed)",
        )
        for name in ("in_fmt", "out_fmt"):
            fmt = getattr(self, name)
            self._require(
                fmt.width <= 40, name, repr(str(fmt)), "at most 40 bits wide for the int64 models"
            )

    def reference(self, x: npt.ArrayLike, **kw: Any) -> FloatArray:
        """GELU in float64 (``form`` selects erf or tanh)."""
        return gelu_reference(x, self.form)

    def _fn(self) -> Callable[[FloatArray], FloatArray]:
        return functools.partial(gelu_reference, form=self.form)

    def _fn_key(self) -> Hashable:
        return ("gelu", self.form)


# ---------------------------------------------------------------------------
# I-BERT
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class IBertGelu(_GeluSpec):
    """I-BERT i-GELU: ``x/2·(1 + L(x/√2))`` with the second-order erf polynomial.

    Datapath (S = LSB of ``in_fmt``, ``Se = S/k``; constants exact rationals
    of I-BERT's decimals, floors exact)::

        b_int = floor(b/Se)          c_int = floor((1/a)/Se²)       (k=1.4142, a=-0.2888, b=-1.769)
        t     = min(|x|, -b_int)
        erf   = sign(x)·((t + b_int)² + c_int) >> erf_shift         (floor; scale Se²·a·2^erf_shift)
        one   = floor(1/(Se²·a·2^erf_shift))
        p     = x·(erf + one)                                        (scale S·Se²·a·2^erf_shift/2)
        y     = round((-p)·mult >> mult_shift) into out_fmt          (out_fmt rounding/overflow)

    ``mult``/``mult_shift`` are the dyadic requantisation of the (negative)
    output scale, ``-S·Se²·a·2^erf_shift/(2·LSB_out) = mult·2^-mult_shift`` with a
    ``requant_bits``-bit ``mult`` -- the step I-BERT's next ``QuantAct`` does.

    Deviations from ``quant_modules.py``: exact integers instead of fp32 tensors;
    the input scale is the ``in_fmt`` LSB (I-BERT's is a learned float); the
    output is requantised here. The erf term resolves ``1/|one|``, with
    ``|one| ≈ k²/(0.2888·S²·2^erf_shift)``: with I-BERT's ``erf_shift = 14`` that
    is 1773 levels at S = 2^-11 but 7 at S = 2^-7 (I-BERT feeds int32
    accumulators with tiny scales). Specs with ``|one| < MIN_ERF_ONE`` are
    refused with the largest ``erf_shift`` that works.
    """

    method: ClassVar[str] = "ibert"
    source: ClassVar[str] = (
        "Kim et al., I-BERT (ICML 2021); kssteven418/I-BERT "
        "fairseq/quantization/utils/quant_modules.py IntGELU/int_erf"
    )

    #: I-BERT's ``n``: right shift of the erf polynomial
    erf_shift: int = 14
    #: mantissa bits of the output requantisation multiplier
    requant_bits: int = 24

    #: smallest |floor(1/scale_erf)| accepted (the erf term keeps >= 4 bits)
    MIN_ERF_ONE: ClassVar[int] = 16

    K: ClassVar[Fraction] = Fraction("1.4142")
    A: ClassVar[Fraction] = Fraction("-0.2888")
    B: ClassVar[Fraction] = Fraction("-1.769")

    def validate(self) -> None:
        super().validate()
        self._require(
            self.form not in SIGMOID_FORM_ALPHA,
            "form",
            repr(self.form),
            "I-BERT's polynomial approximates the erf GELU, not x·σ(αx) (quick_gelu, SiLU); "
            "use method edgemoe, pwl or lut (or shiftgelu for quick_gelu)",
        )
        self._require(
            0 <= self.erf_shift <= 40, "erf_shift", repr(self.erf_shift), "must be in [0, 40]"
        )
        self._require(
            2 <= self.requant_bits <= 32,
            "requant_bits",
            repr(self.requant_bits),
            "must be in [2, 32]",
        )
        c = self._consts

        def erf_one_hint() -> str:
            unit = (self.in_fmt.lsb / self.K) ** 2 * -self.A  # |scale_erf| / 2^erf_shift
            best = self.erf_shift
            while best >= 0 and _floor(1 / (unit * 2**best)) < self.MIN_ERF_ONE:
                best -= 1
            return (
                f"leaves the erf term of in_fmt {self.in_fmt} with |erf_one| = "
                f"{abs(c['erf_one'])} < {self.MIN_ERF_ONE} (under 4 bits); "
                + (f"use erf_shift <= {best} or " if best >= 0 else "use ")
                + "more input fraction bits"
            )

        self._require(
            abs(c["erf_one"]) >= self.MIN_ERF_ONE, "erf_shift", repr(self.erf_shift), erf_one_hint
        )
        self._require(
            c["widest_bits"] <= MAX_RAW_BITS,
            "in_fmt",
            repr(str(self.in_fmt)),
            f"needs {c['widest_bits']}-bit intermediates (int64 path allows "
            f"{MAX_RAW_BITS}); use fewer fraction bits or a smaller requant_bits",
        )

    @functools.cached_property
    def _consts(self) -> dict[str, int]:
        s = self.in_fmt.lsb
        se = s / self.K
        b_int = _floor(self.B / se)
        c_int = _floor((1 / self.A) / se**2)
        scale_erf = se**2 * self.A * 2**self.erf_shift  # negative
        one = _floor(1 / scale_erf)
        out_scale = -(s * scale_erf / 2) / self.out_fmt.lsb  # positive
        mult, shift = _dyadic(out_scale, self.requant_bits)
        x_max = 1 << (self.in_fmt.width - 1)
        poly_max = b_int * b_int + abs(c_int)
        erf_max = (poly_max >> self.erf_shift) + 1
        p_max = x_max * (erf_max + abs(one))
        widest = max(_bits(poly_max), _bits(p_max * mult))
        return {
            "b_int": b_int,
            "c_int": c_int,
            "erf_one": one,
            "mult": mult,
            "mult_shift": shift,
            "poly_bits": _bits(poly_max),
            "sum_bits": _bits(erf_max + abs(one)),
            "prod_bits": _bits(p_max),
            "widest_bits": widest,
        }

    def _model_flat(self, x: RawArray) -> RawArray:
        c = self._consts
        b_int, c_int = np.int64(c["b_int"]), np.int64(c["c_int"])
        t = np.minimum(np.abs(x), -b_int)
        poly = (t + b_int) ** 2 + c_int
        erf_int = (np.sign(x) * poly) >> np.int64(self.erf_shift)
        p = x * (erf_int + np.int64(c["erf_one"]))
        q = (-p) * np.int64(c["mult"])
        y = round_shift(q, c["mult_shift"], self.out_fmt.rounding)
        return self.out_fmt.saturate(y)

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set (names as the HLS config constants).

        Every width holds the whole range the model's integer can take, from
        the input range ``x`` in ``[-2^(W-1), 2^(W-1) - 1]`` and the constants:

        ======== ======== ==========================================================
        name     sign     value range -> bits
        ======== ======== ==========================================================
        ABS_W    unsigned ``|x| <= 2^(W-1)``
        T_W      unsigned ``t = min(|x|, -b_int)`` in ``[0, -b_int]``
        TB_W     signed   ``t + b_int`` in ``[b_int, 0]``
        SQ_W     unsigned ``(t + b_int)^2 <= b_int^2``
        POLY_W   signed   ``poly = (t + b_int)^2 + c_int`` in ``[c_int, b_int^2 + c_int]``
        ERF_W    signed   ``sign(x)·poly >> erf_shift`` (floor)
        SUM_W    signed   ``erf + erf_one``
        PROD_W   signed   ``p = x·sum`` (the four corners of the two ranges)
        Q_W      signed   ``(-p)·mult`` (the requantising product)
        ======== ======== ==========================================================
        """
        c = self._consts
        b, cc, one = c["b_int"], c["c_int"], c["erf_one"]
        w = self.in_fmt.width
        xlo, xhi = -(1 << (w - 1)), (1 << (w - 1)) - 1
        poly_lo, poly_hi = cc, b * b + cc
        pmax = max(abs(poly_lo), abs(poly_hi))
        s = self.erf_shift
        erf_lo, erf_hi = (-pmax) >> s, pmax >> s
        sum_lo, sum_hi = erf_lo + one, erf_hi + one
        corners = [xlo * sum_lo, xlo * sum_hi, xhi * sum_lo, xhi * sum_hi]
        p_lo, p_hi = min(corners), max(corners)
        m = c["mult"]
        return {
            **self._hw_common(),
            "B_INT": b,
            "C_INT": cc,
            "ERF_SHIFT": s,
            "ERF_ONE": one,
            "MULT": m,
            "MULT_SHIFT": c["mult_shift"],
            "ABS_W": ubits(-xlo),
            "T_W": ubits(-b),
            "TB_W": sbits(b, 0),
            "SQ_W": ubits(b * b),
            "POLY_W": sbits(min(poly_lo, -pmax), pmax),
            "ERF_W": sbits(erf_lo, erf_hi),
            "SUM_W": sbits(sum_lo, sum_hi),
            "PROD_W": sbits(p_lo, p_hi),
            "Q_W": sbits(-p_hi * m, -p_lo * m),
        }

    def cost(self) -> Cost:
        c = self._consts
        w = self.in_fmt.width
        return Cost(
            multipliers=3,
            mult_bits=((w, w), (w, c["sum_bits"]), (c["prod_bits"], self.requant_bits)),
            adders=3,
            widest_bits=c["widest_bits"],
            notes="square, x·(erf+1), requantise; abs/min/sign logic",
        )


# ---------------------------------------------------------------------------
# I-ViT ShiftGELU
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ShiftGelu(_GeluSpec):
    """I-ViT ShiftGELU: ``x·σ(1.702x)`` with the shift-exp (integer only).

    Datapath (S = LSB of ``in_fmt``; shift-exp works at scale ``S' = 1.702·S``,
    ``x0 = floor(-1/S')``, ``n`` as I-ViT, exact rationals)::

        m      = max(x, 0)
        e1     = shift_exp(x - m)        e2 = shift_exp(-m)      (both arguments <= 0)
        factor = floor((2^31 - 1) / (e1 + e2))
        sig    = floor(e1·factor / 2^(32 - sigmoid_bits))        (scale 2^-(sigmoid_bits-1))
        y      = x·sig into out_fmt                              (exact scale S·2^-(sigmoid_bits-1))

    Deviation from I-ViT: I-ViT subtracts the max over the feature row,
    ``σ = e^(y-M)/(e^(y-M) + e^(-M))``. An elementwise unit has no row, so
    ``M = max(x, 0)`` per element: the same formula with both exponents <= 0,
    i.e. ``1/(1 + e^-y)`` for x >= 0 and ``e^y/(e^y + 1)`` for x < 0. (This is
    also what I-ViT computes when the row max is 0, and it avoids I-ViT's
    positive shift-exp argument ``-M`` when a whole row is negative.) I-ViT
    clamps the sum at 2^31 - 1; here specs whose sum could reach that are
    refused instead (``2·|x0|·2^n <= 2^31 - 1``), because a clamped sum gives a
    wrong sigmoid.

    Precision note (measured, ``benchmarks/bench_gelu.py``): ``factor`` keeps
    only ``log2((2^31-1)/sum)`` bits, so a large ``n`` *hurts*: with in_fmt
    ``ap_fixed<8,4>`` the L∞ error on [-4, 4] is 0.128 at I-ViT's n = 23 but
    0.053 at n = 8..12 (the x·σ(1.702x) form alone: 0.020). The default keeps
    I-ViT's n = 23; tune ``n`` per input format.
    """

    method: ClassVar[str] = "shiftgelu"
    source: ClassVar[str] = (
        "Li & Gu, I-ViT (ICCV 2023); zkkli/I-ViT "
        "models/quantization_utils/quant_modules.py IntGELU/int_exp_shift"
    )

    in_fmt: FixedFormat = _FIX8_4
    out_fmt: FixedFormat = _FIX16_5
    #: I-ViT's "sufficiently large integer" n of the shift-exp
    n: int = 23
    #: width of the sigmoid (I-ViT output_bit); scale 2^-(sigmoid_bits-1)
    sigmoid_bits: int = 8

    SIGMOID_SLOPE: ClassVar[Fraction] = Fraction("1.702")

    def validate(self) -> None:
        super().validate()
        self._require(
            self.form != "silu",
            "form",
            repr(self.form),
            "ShiftGELU's shift-exp is built for I-ViT's slope 1.702 (x·σ(1.702x)), not SiLU "
            "x·σ(x); use method edgemoe, pwl or lut for a SiLU site",
        )
        self._require(1 <= self.n <= 30, "n", repr(self.n), "must be in [1, 30]")
        self._require(
            2 <= self.sigmoid_bits <= 31,
            "sigmoid_bits",
            repr(self.sigmoid_bits),
            "must be in [2, 31]",
        )
        x0 = self._x0  # <= -1 for every scale (a floor of a negative number)

        def n_hint() -> str:
            n_max = (31 - 1 - (-x0 - 1).bit_length()) if -x0 > 1 else 29
            while 2 * -x0 * 2**n_max > 2**31 - 1:
                n_max -= 1
            best = self._best_n(n_max)
            use = (
                f"use n = {best[0]} (max error {best[1]:.3g} where out_fmt holds GELU(x); any "
                f"n <= {n_max} is accepted, the largest are not the most accurate)"
                if best is not None
                else "use a coarser in_fmt"
            )
            return (
                f"lets the exp sum reach 2·{-x0}·2^{self.n} > 2^31-1 with in_fmt "
                f"{self.in_fmt} (x0={x0}); {use}"
            )

        self._require(2 * -x0 * 2**self.n <= 2**31 - 1, "n", repr(self.n), n_hint)
        self._require(
            self.in_fmt.width + self.sigmoid_bits <= MAX_RAW_BITS,
            "sigmoid_bits",
            repr(self.sigmoid_bits),
            f"x·sigmoid with in_fmt {self.in_fmt} needs "
            f"{self.in_fmt.width + self.sigmoid_bits} bits; int64 allows {MAX_RAW_BITS}",
        )

    @functools.cached_property
    def _x0(self) -> int:
        return shift_exp_x0(self.SIGMOID_SLOPE * self.in_fmt.lsb)

    def _best_n(self, n_max: int) -> tuple[int, float] | None:
        """:meth:`_best_n_fresh`, memoised per process on ``(class, every field but n,
        n_max)`` (its result does not depend on ``n``): the ``--budget`` search
        rejects the same ShiftGELU candidates at every GELU site of a model, and each
        rejection builds this hint (bounded: :data:`_BEST_N`, 64 entries)."""
        key = (
            type(self),
            tuple(
                (f.name, getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "n"
            ),
            n_max,
        )
        try:
            return _BEST_N.get(key)
        except KeyError:
            return _BEST_N.put(key, self._best_n_fresh(n_max))

    def _best_n_fresh(self, n_max: int) -> tuple[int, float] | None:
        """The accepted ``n`` (1..n_max) with the smallest max |error| against the float
        GELU over every ``in_fmt`` code whose GELU ``out_fmt`` holds (at most 2^16 codes
        sampled), and that error."""
        if n_max < 1:
            return None
        codes = np.arange(self.in_fmt.min_raw, self.in_fmt.max_raw + 1, dtype=np.int64)
        if codes.size > 1 << 16:
            codes = np.unique(np.linspace(codes[0], codes[-1], 1 << 16).astype(np.int64))
        ref = self.reference(self.in_fmt.to_float(codes))
        # not out_fmt's clipping; its bounds are dyadic, exact in float64 (compared as
        # Fractions, numpy made an object comparison per code)
        lo, hi = float(self.out_fmt.min), float(self.out_fmt.max)
        inside = (ref >= lo) & (ref <= hi)
        codes, ref = codes[inside], ref[inside]
        best: tuple[int, float] | None = None
        for cand in range(1, n_max + 1):
            spec = dataclasses.replace(self, n=cand)
            err = float(np.max(np.abs(spec.out_fmt.to_float(spec.model(codes)) - ref)))
            if best is None or err < best[1]:
                best = (cand, err)
        return best

    def _model_flat(self, x: RawArray) -> RawArray:
        x0, n = self._x0, self.n
        m = np.maximum(x, 0)
        e1 = shift_exp(x - m, x0, n)
        e2 = shift_exp(-m, x0, n)
        factor = np.int64(2**31 - 1) // (e1 + e2)
        sig = (e1 * factor) >> np.int64(32 - self.sigmoid_bits)
        return self._to_out(x * sig, self.in_fmt.frac_bits + self.sigmoid_bits - 1)

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set (names as the HLS config constants).

        ``x`` in ``[-2^(W-1), 2^(W-1) - 1]``; ``m = max(x, 0)``; both shift-exp
        arguments ``x - m`` and ``-m`` lie in ``[-2^(W-1), 0]``:

        ======== ======== ==========================================================
        name     sign     value range -> bits
        ======== ======== ==========================================================
        M_W      unsigned ``m`` in ``[0, 2^(W-1) - 1]``
        SX_W     signed   shift-exp argument in ``[-2^(W-1), 0]``
        ST_W     signed   ``t = x + (x >> 1) - (x >> 4)`` (non-decreasing in x: its
                          least value at ``x = -2^(W-1)``) and the clip ``n·x0``
        SQ_W     unsigned ``q = floor(t / x0)`` in ``[0, n]``
        SR_W     signed   ``r = t - x0·q`` in ``(x0, 0]``
        SEI_W    unsigned ``(r - 2·x0) << (n - q) <= -2·x0·2^n`` (before the halving)
        SE_W     unsigned shift-exp result ``<= -x0·2^n``
        ESUM_W   unsigned ``e1 + e2 <= -2·x0·2^n`` (validated ``< 2^31``)
        FACTOR_W unsigned ``(2^31 - 1) / (e1 + e2) <= 2^31 - 1``
        SIGP_W   unsigned ``e1·factor <= 2^31 - 1`` (``e1 <= e1 + e2``)
        SIG_W    unsigned ``sig = e1·factor >> (32 - sigmoid_bits) < 2^(sigmoid_bits-1)``
        YP_W     signed   ``x·sig``
        ======== ======== ==========================================================
        """
        w, x0, nn = self.in_fmt.width, self._x0, self.n
        xlo = -(1 << (w - 1))
        t_lo = xlo + (xlo >> 1) - (xlo >> 4)
        pre_lo = xlo + (xlo >> 1)
        sig_max = ((1 << 31) - 1) >> (32 - self.sigmoid_bits)
        return {
            **self._hw_common(),
            "X0": x0,
            "EXP_N": nn,
            "TVM": 0,
            "SIGMOID_BITS": self.sigmoid_bits,
            "SIGMOID_SHIFT": 32 - self.sigmoid_bits,
            "PROD_F": self.in_fmt.frac_bits + self.sigmoid_bits - 1,
            "M_W": ubits(-xlo - 1),
            "SX_W": sbits(xlo, 0),
            "ST_W": sbits(min(pre_lo, t_lo, nn * x0), 0),
            "SQ_W": ubits(nn),
            "SR_W": sbits(x0 + 1, 0),
            "SEI_W": ubits(-2 * x0 << nn),
            "SE_W": ubits(-x0 << nn),
            "ESUM_W": ubits(-2 * x0 << nn),
            "FACTOR_W": ubits((1 << 31) - 1),
            "SIGP_W": ubits((1 << 31) - 1),
            "SIG_W": ubits(sig_max),
            "YP_W": sbits(xlo * sig_max, ((1 << (w - 1)) - 1) * sig_max),
        }

    def cost(self) -> Cost:
        eb = (2 * -self._x0 * 2**self.n).bit_length()
        return Cost(
            multipliers=2,
            mult_bits=((eb, 31), (self.in_fmt.width, self.sigmoid_bits)),
            adders=7,
            dividers=1,
            widest_bits=max(32, eb),
            notes="2 shift-exps (shifts/adds, one constant divide by x0 each), "
            "one 31-bit integer divide per element, 2 multipliers",
        )


# ---------------------------------------------------------------------------
# Edge-MoE
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class EdgeMoeGelu(_GeluSpec):
    """Edge-MoE GELU: ``ReLU(x) - δ(|x|)``, ``δ(t) = t·Φ(-t)`` from a table.

    Datapath (F = in_fmt fraction bits, ``step = 2^-k``, Fe = entry fraction bits)::

        a      = |x|;  idx = floor(a/step);  t = frac(a/step) truncated to Fe bits
        if idx >= table_size - 1:  y = ReLU(x)
        else: δ = T[idx] + t·(T[idx+1] - T[idx])   cast to entry_fmt (its rounding, AP_TRN default)
              y = ReLU(x) - δ
        y into out_fmt

    Table ``T[i] = round_half_up(δ(i·step)·2^Fe)`` (exact rounding of the
    float64 reference; entry i = 176 is δ(5.5) ≈ 1e-7, 0 at 22 bits).
    Deviations: Edge-MoE works in its ``fm_t`` (ap_fixed<32,10>) for input and
    output; here in_fmt/out_fmt are free and the difference is exact before
    the output cast. The correction is the erf GELU's for ``form`` erf and tanh;
    ``form="quick"`` tabulates ``δ(t) = t·σ(-1.702t)`` (``ReLU(x) - δ(|x|) =
    x·σ(1.702x)`` for both signs, as ``σ(-u) = 1 - σ(u)``; ``δ(5.5) ≈ 4.7e-4``), and
    ``form="silu"`` ``δ(t) = t·σ(-t)`` (``δ(5.5) ≈ 2.2e-2``: beyond the default table's
    5.5 the output is ReLU(x), so a SiLU spec wants ``table_size``·``step`` near 16).
    """

    method: ClassVar[str] = "edgemoe"
    source: ClassVar[str] = "Sarkar et al., Edge-MoE (ICCAD 2023); sharc-lab/Edge-MoE src/gelu.cpp"

    table_size: int = 177
    step: float = 0.03125
    entry_fmt: FixedFormat = _UFIX22_0

    def validate(self) -> None:
        super().validate()
        self._require(
            2 <= self.table_size <= 1 << 16,
            "table_size",
            repr(self.table_size),
            "must be in [2, 65536]",
        )
        m, e = math.frexp(float(self.step))
        self._require(
            self.step > 0 and m == 0.5 and -30 <= e - 1 <= 4,
            "step",
            repr(self.step),
            "must be a power of two in [2^-30, 16]",
        )
        entry = repr(str(self.entry_fmt))
        self._require(
            not self.entry_fmt.signed and self.entry_fmt.width <= 32,
            "entry_fmt",
            entry,
            "must be unsigned and at most 32 bits",
        )
        self._require(
            self._table.max() <= self.entry_fmt.max_raw,
            "entry_fmt",
            entry,
            lambda: f"cannot hold the largest correction {self._table_float.max():.6f}",
        )
        f_in, fe = self.in_fmt.frac_bits, self.entry_fmt.frac_bits
        acc = max(self.in_fmt.width + max(fe - f_in, 0), self.entry_fmt.width + max(f_in - fe, 0))
        self._require(
            acc + 2 <= MAX_RAW_BITS,
            "entry_fmt",
            entry,
            f"with in_fmt {self.in_fmt} needs "
            f"{acc + 2}-bit intermediates; the int64 path allows {MAX_RAW_BITS}",
        )

    @property
    def _k(self) -> int:
        return 1 - math.frexp(float(self.step))[1]  # step = 2^-k

    @functools.cached_property
    def _table_float(self) -> FloatArray:
        t = np.arange(self.table_size, dtype=np.float64) * float(self.step)
        if self.form in SIGMOID_FORM_ALPHA:  # δ(t) = t·σ(-αt)
            return t / (1.0 + np.exp(SIGMOID_FORM_ALPHA[self.form] * t))
        return t * 0.5 * erfc(t / math.sqrt(2.0))  # δ(t) = t·Φ(-t)

    @functools.cached_property
    def _table(self) -> RawArray:
        # Exact round-half-up of the float64 values (scaling by 2^Fe is exact).
        scaled = self._table_float * 2.0**self.entry_fmt.frac_bits
        return np.floor(scaled + 0.5).astype(np.int64)

    def tables(self) -> dict[str, RawArray]:
        return {"delta": self._table.copy()}

    @property
    def _t_bits(self) -> int:
        return max(0, min(self.in_fmt.frac_bits - self._k, self.entry_fmt.frac_bits))

    def _model_flat(self, x: RawArray) -> RawArray:
        f_in, k, fe = self.in_fmt.frac_bits, self._k, self.entry_fmt.frac_bits
        a = np.abs(x)
        if f_in >= k:
            idx = a >> np.int64(f_in - k)
            t = a & np.int64((1 << (f_in - k)) - 1)
            ft = f_in - k
            if ft > fe:
                t = t >> np.int64(ft - fe)
                ft = fe
        else:
            idx = a << np.int64(k - f_in)
            t = np.zeros_like(a)
            ft = 0
        inside = idx < self.table_size - 1
        i = np.where(inside, idx, 0)
        lo, hi = self._table[i], self._table[i + 1]
        exact = (lo << np.int64(ft)) + t * (hi - lo)  # frac fe + ft
        delta = round_shift(exact, ft, self.entry_fmt.rounding)
        delta = np.where(inside, delta, 0)
        fa = max(f_in, fe)
        relu = np.maximum(x, 0) << np.int64(fa - f_in)
        return self._to_out(relu - (delta << np.int64(fa - fe)), fa)

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set (names as the HLS config constants).

        ``F = in_fmt.frac_bits``, ``k = -log2(step)``, ``Fe`` the entry fraction
        bits, ``ft`` = :attr:`_t_bits` interpolation bits, ``Fa = max(F, Fe)``:

        ========= ======== =========================================================
        name      sign     value range -> bits
        ========= ======== =========================================================
        ABS_W     unsigned ``a = |x| <= 2^(W-1)``
        IDX_W     unsigned ``idx = a >> (F - k)`` (or ``a << (k - F)``)
        T_W       unsigned ``t``, the ``ft`` bits below the index (at least 1 bit)
        ENTRY_W   unsigned table entries (``entry_fmt``)
        INTERP_W  signed   ``(T[i] << ft) + t·(T[i+1] - T[i])``: the signed product
                           ``|t·(T[i+1] - T[i])| < 2^(ft + ENTRY_W)``; the sum lies
                           between ``T[i+1] << ft`` and ``T[i] << ft``
        DELTA_W   unsigned the interpolated correction, rounded: ``< 2^ENTRY_W``
        ACC_W     signed   ``(ReLU(x) << (Fa - F)) - (delta << (Fa - Fe))``
        ========= ======== =========================================================
        """
        w, f_in, k = self.in_fmt.width, self.in_fmt.frac_bits, self._k
        ew, fe, ft = self.entry_fmt.width, self.entry_fmt.frac_bits, self._t_bits
        fa = max(f_in, fe)
        a_max = 1 << (w - 1)
        idx_max = a_max >> (f_in - k) if f_in >= k else a_max << (k - f_in)
        relu_max = ((1 << (w - 1)) - 1) << (fa - f_in)
        delta_max = ((1 << ew) - 1) << (fa - fe)
        return {
            **self._hw_common(),
            "TABLE_SIZE": self.table_size,
            "K": k,
            "ENTRY_F": fe,
            "ENTRY_RND": rounding_code(self.entry_fmt.rounding),
            "FT": ft,
            "FA": fa,
            "ABS_W": ubits(a_max),
            "IDX_W": ubits(idx_max),
            "T_W": max(1, ft),
            "ENTRY_W": ew,
            "INTERP_W": sbits(-((1 << (ft + ew)) - 1), (1 << (ft + ew)) - 1),
            "DELTA_W": ew,
            "ACC_W": sbits(-delta_max, relu_max),
        }

    def cost(self) -> Cost:
        w = self.entry_fmt.width
        return Cost(
            table_bits=self.table_size * w,
            tables=1,
            multipliers=1,
            mult_bits=((max(self._t_bits, 1), w + 1),),
            adders=3,
            widest_bits=max(self.in_fmt.width, w + self._t_bits + 1),
            notes="abs, 2 table reads (dual-port ROM), one interpolation multiply",
        )


# ---------------------------------------------------------------------------
# piecewise linear
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class PwlGelu(_GeluSpec, PwlTable):
    """Piecewise-linear GELU with minimax-fitted breakpoints.

    Fitting (offline, deterministic, cached per ``(form, lo, hi, segments)``):
    :func:`~hwapprox.approx.pwl.fit_pwl` places ``segments`` breakpoint
    intervals on ``[lo, hi]`` for the least L∞ error (``[lo, hi]`` clipped to
    the ``in_fmt`` range, :attr:`fit_range`, so a narrow calibrated input keeps
    the default fields; then ``B_N`` is the top code, which alone takes the
    ``y = x`` branch); breakpoints are rounded
    to ``in_fmt`` codes ``B_0 < ... < B_N``; per segment the minimax slope is
    rounded (``slope_fmt`` mode) and the best intercept for that slope refitted
    and rounded (``intercept_fmt`` mode). The datapath is
    :class:`~hwapprox.approx.fntable.PwlTable` (shared with the sigmoid)::

        x <  B_0 : y = 0                     (GELU(lo) ≈ 0 for lo <= -4)
        x >= B_N : y = x                     (GELU(x) ≈ x for hi >= 4)
        else     : i = #{j in 1..N-1 : x >= B_j};  y = s_i·x + c_i (exact)
        y into out_fmt
    """

    method: ClassVar[str] = "pwl"
    source: ClassVar[str] = (
        "piecewise-linear tables as in NN-LUT (DAC 2022) and GQA-LUT (DAC 2024); "
        "minimax breakpoint fitter hwapprox.approx.pwl"
    )

    segments: int = 8
    lo: float = -4.0
    hi: float = 4.0
    slope_fmt: FixedFormat = _FIX18_2
    intercept_fmt: FixedFormat = _FIX18_2

    @property
    def fit_range(self) -> tuple[float, float]:
        """``[lo, hi]`` clipped to the ``in_fmt`` range (the interval actually fitted)."""
        fmin, fmax = float(self.in_fmt.min), float(self.in_fmt.max)
        return max(float(self.lo), fmin), min(float(self.hi), fmax)

    def validate(self) -> None:
        super().validate()
        for name in ("lo", "hi"):
            v = getattr(self, name)
            self._require(
                isinstance(v, int | float) and math.isfinite(v),
                name,
                repr(v),
                "must be a finite number",
            )
        self._require(self.lo < self.hi, "hi", repr(self.hi), f"must be greater than lo={self.lo}")
        lo, hi = self.fit_range
        fmin, fmax = float(self.in_fmt.min), float(self.in_fmt.max)
        self._require(
            lo < hi,
            "lo" if self.lo >= fmax else "hi",
            repr(self.lo if self.lo >= fmax else self.hi),
            f"[lo, hi] = [{self.lo}, {self.hi}] misses the in_fmt {self.in_fmt} "
            f"range [{fmin}, {fmax}]",
        )
        self._check_pwl()


# ---------------------------------------------------------------------------
# direct table
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class LutGelu(_GeluSpec, LutTable):
    """Direct table: ``y = T[(x - min_code) >> (W - index_bits)]``.

    ``index_bits = 0`` (default) means the full input width: one entry per
    code, ``T[i] = out_fmt.quantize(GELU(x_i))`` (exact rounding of the float64
    reference, out_fmt's modes), so the error is at most half an output LSB plus
    the reference's own error (< 1e-15) unless out_fmt saturates. With fewer
    index bits each entry covers ``2^(W - index_bits)`` consecutive codes and
    holds the rounded midpoint of the reference's min and max over them (the
    best constant in L∞). The table has at most ``2^MAX_INDEX_BITS`` entries.
    The datapath is :class:`~hwapprox.approx.fntable.LutTable` (shared with the
    sigmoid).
    """

    method: ClassVar[str] = "lut"
    source: ClassVar[str] = "direct look-up table of the float64 reference (baseline)"

    in_fmt: FixedFormat = _FIX10_4
    out_fmt: FixedFormat = _FIX10_4
    index_bits: int = 0

    def validate(self) -> None:
        super().validate()
        self._check_lut()
