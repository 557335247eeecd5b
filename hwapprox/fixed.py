"""``ap_fixed``-exact fixed-point arithmetic on raw integers.

A value is a raw two's-complement integer (numpy ``int64``) plus a
:class:`FixedFormat`; the real value is ``raw * 2**-frac_bits``. Every
conversion rounds once and then applies the overflow mode, exactly as
Vivado/Vitis HLS ``ap_fixed``/``ap_ufixed`` do (checked against the
``ap_types`` headers bundled with hls4ml, compiled with g++, in
``tests/test_fixed_oracle.py``). Arithmetic grows word lengths exactly, with
the result formats of ``ap_fixed`` operators, and never rounds.

Limits: raw arrays are int64, so operations refuse formats wider than
:data:`MAX_RAW_BITS` bits (and add/mul whose exact result would be wider)
with a :class:`FixedPointError`, never wrapping silently. ``AP_WRAP`` with
saturation bits (``N > 0``) is not supported. Raw-code inputs must be
integer arrays (floats are refused, never truncated) and, for
:func:`cast`, :func:`add`, :func:`sub`, :func:`mul`, :func:`shl` and
:func:`shr`, valid codes of their format. Empty arrays are fine everywhere:
empty in, empty (int64) out, same shape.

``ap_fixed`` details reproduced here (found with the oracle):

* a double is rounded from its exact binary value, so the doubles adjacent
  to a half-LSB tie are *not* ties (``-(0.5 - 2**-54)`` LSB is 0 under
  ``AP_RND_INF``/``AP_RND_MIN_INF``, not -1);
* subnormal and tiny inputs are ordinary nonzero values: under ``AP_TRN`` a
  negative one becomes -1 LSB whatever the binary point, even where
  ``x * 2**F`` underflows in float64;
* ``AP_SAT_SYM`` on a 1-bit signed format cannot be symmetric and behaves
  as ``AP_SAT`` (codes -1 and 0); on wider signed formats the most negative
  code is never produced (an exact ``min`` becomes ``-max``);
* ``AP_SAT_ZERO`` tests overflow after rounding (a value that rounds up past
  ``max`` gives 0).

Examples
--------
>>> fmt = FixedFormat.parse("ap_fixed<8,3,AP_RND,AP_SAT>")
>>> fmt.quantize([0.30, -5.0, 100.0]).tolist()
[10, -128, 127]
>>> fmt.to_float(fmt.quantize(0.30)).item()
0.3125
>>> str(FixedFormat(8, 0, signed=False))
'ap_ufixed<8,0>'
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "MAX_RAW_BITS",
    "FixedArray",
    "FixedFormat",
    "FixedPointError",
    "Overflow",
    "Rounding",
    "add",
    "cast",
    "mul",
    "round_shift",
    "shl",
    "shr",
    "sub",
]

#: Widest format (and exact intermediate) that the int64 raw path handles.
MAX_RAW_BITS = 62
#: Largest |int_bits| and |frac_bits| the raw path handles (binary point
#: positions that float64 scaling represents exactly).
MAX_INT_BITS = 512

RawArray = npt.NDArray[np.int64]


class FixedPointError(ValueError):
    """Invalid format, out-of-range value or unsupported width."""


class Rounding(enum.StrEnum):
    """``ap_fixed`` quantisation modes (what happens to dropped LSBs)."""

    TRN = "AP_TRN"  #: floor (toward -inf); the HLS default
    TRN_ZERO = "AP_TRN_ZERO"  #: toward zero
    RND = "AP_RND"  #: to nearest, ties toward +inf
    RND_ZERO = "AP_RND_ZERO"  #: to nearest, ties toward zero
    RND_INF = "AP_RND_INF"  #: to nearest, ties away from zero
    RND_MIN_INF = "AP_RND_MIN_INF"  #: to nearest, ties toward -inf
    RND_CONV = "AP_RND_CONV"  #: to nearest, ties to even


class Overflow(enum.StrEnum):
    """``ap_fixed`` overflow modes (what happens outside the range)."""

    WRAP = "AP_WRAP"  #: keep the low bits (two's complement wrap); the HLS default
    SAT = "AP_SAT"  #: clamp to min/max
    SAT_ZERO = "AP_SAT_ZERO"  #: overflow gives 0
    SAT_SYM = "AP_SAT_SYM"  #: clamp to ±max (signed: the most negative code is never produced)


_SYNTAX = "ap_fixed<W,I[,Q[,O]]> or ap_ufixed<W,I[,Q[,O]]>, e.g. ap_fixed<16,6,AP_RND,AP_SAT>"
_FMT_RE = re.compile(r"^\s*(?P<kind>ap_fixed|ap_ufixed|ap_int|ap_uint)\s*<\s*(?P<args>[^<>]*)>\s*$")


@functools.lru_cache(maxsize=512)
def _pow2(e: int) -> Fraction:
    """``2**e`` exactly (memoised: a format's exact properties are read per call on hot
    paths, and a Fraction power costs microseconds; Fractions are immutable)."""
    return Fraction(2) ** e


@functools.lru_cache(maxsize=2048)
def _times_pow2(n: int, e: int) -> Fraction:
    """``n·2**e`` exactly (memoised as :func:`_pow2`)."""
    return n * _pow2(e)


@dataclass(frozen=True, slots=True)
class FixedFormat:
    """An ``ap_fixed<W, I, Q, O>`` / ``ap_ufixed`` format.

    ``width`` W >= 1 total bits, ``int_bits`` I (may be negative or exceed W;
    ``frac_bits = W - I``), ``signed``, and the quantisation/overflow modes
    applied whenever a value is converted *into* this format.
    """

    width: int
    int_bits: int
    signed: bool = True
    rounding: Rounding = Rounding.TRN
    overflow: Overflow = Overflow.WRAP

    def __post_init__(self) -> None:
        if (
            type(self.width) is int
            and type(self.int_bits) is int
            and type(self.signed) is bool
            and type(self.rounding) is Rounding
            and type(self.overflow) is Overflow
            and self.width >= 1
        ):
            return  # already normalised (the checks below would change nothing)
        for name in ("width", "int_bits"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise FixedPointError(f"{name} must be an integer, got {value!r}")
            object.__setattr__(self, name, int(value))
        if self.width < 1:
            raise FixedPointError(f"width must be >= 1, got width={self.width} ({_SYNTAX})")
        if not isinstance(self.signed, bool | np.bool_):
            raise FixedPointError(f"signed must be a bool, got {self.signed!r}")
        object.__setattr__(self, "signed", bool(self.signed))
        try:
            object.__setattr__(self, "rounding", Rounding(self.rounding))
        except ValueError:
            raise FixedPointError(
                f"unknown rounding mode {self.rounding!r}; expected one of "
                f"{', '.join(m.value for m in Rounding)}"
            ) from None
        try:
            object.__setattr__(self, "overflow", Overflow(self.overflow))
        except ValueError:
            raise FixedPointError(
                f"unknown overflow mode {self.overflow!r}; expected one of "
                f"{', '.join(m.value for m in Overflow)}"
            ) from None

    # -- parsing and printing -------------------------------------------------
    @classmethod
    def parse(cls, text: str | FixedFormat) -> FixedFormat:
        """Parse the HLS spelling, e.g. ``ap_fixed<16,6,AP_RND,AP_SAT>``.

        ``ap_int<W>``/``ap_uint<W>`` are accepted as ``I = W``. A trailing
        saturation-bit count ``N`` is accepted only when it is 0.
        """
        if isinstance(text, FixedFormat):
            return text
        if not isinstance(text, str):
            raise FixedPointError(f"format must be a string like {_SYNTAX}; got {text!r}")
        m = _FMT_RE.match(text)
        if m is None:
            raise FixedPointError(f"malformed fixed-point format {text!r}; expected {_SYNTAX}")
        kind = m["kind"]
        args = [a.strip() for a in m["args"].split(",")]
        signed = kind in ("ap_fixed", "ap_int")
        if kind in ("ap_int", "ap_uint"):
            if len(args) != 1:
                raise FixedPointError(f"{kind} takes one argument (width), got {text!r}")
            args = [args[0], args[0]]
        if len(args) < 2 or len(args) > 5:
            raise FixedPointError(f"malformed fixed-point format {text!r}; expected {_SYNTAX}")
        try:
            width, int_bits = int(args[0]), int(args[1])
        except ValueError:
            raise FixedPointError(
                f"width and integer bits must be integers in {text!r}; expected {_SYNTAX}"
            ) from None
        rounding = _parse_mode(args[2], Rounding, text) if len(args) > 2 else Rounding.TRN
        overflow = _parse_mode(args[3], Overflow, text) if len(args) > 3 else Overflow.WRAP
        if len(args) == 5 and args[4] != "0":
            raise FixedPointError(
                f"saturation bits N={args[4]} in {text!r} are not supported (only N=0)"
            )
        return cls(width, int_bits, signed, rounding, overflow)

    def __str__(self) -> str:
        kind = "ap_fixed" if self.signed else "ap_ufixed"
        parts = [str(self.width), str(self.int_bits)]
        if self.overflow is not Overflow.WRAP:
            parts += [self.rounding.value, self.overflow.value]
        elif self.rounding is not Rounding.TRN:
            parts.append(self.rounding.value)
        return f"{kind}<{','.join(parts)}>"

    def __repr__(self) -> str:
        return f"FixedFormat({str(self)!r})"

    def with_modes(
        self, rounding: Rounding | str | None = None, overflow: Overflow | str | None = None
    ) -> FixedFormat:
        """The same bits with other quantisation/overflow modes."""
        return replace(
            self,
            rounding=self.rounding if rounding is None else rounding,
            overflow=self.overflow if overflow is None else overflow,
        )

    # -- exact properties ------------------------------------------------------
    @property
    def frac_bits(self) -> int:
        """F = W - I; the LSB weighs ``2**-F``."""
        return self.width - self.int_bits

    @property
    def lsb(self) -> Fraction:
        """Weight of one raw unit, exactly."""
        return _pow2(-self.frac_bits)

    @property
    def min_raw(self) -> int:
        """Smallest raw code (``AP_SAT_SYM`` does not change it: see :meth:`saturate`)."""
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def max_raw(self) -> int:
        """Largest raw code."""
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    def float_range(self) -> tuple[float, float, float]:
        """``(float(min), float(max), float(lsb))`` (memoised per format)."""
        return _float_range(self)

    @property
    def min(self) -> Fraction:
        """Smallest representable value, exactly."""
        return _times_pow2(self.min_raw, -self.frac_bits)

    @property
    def max(self) -> Fraction:
        """Largest representable value, exactly."""
        return _times_pow2(self.max_raw, -self.frac_bits)

    def _check_raw_width(self, what: str = "operation") -> None:
        if abs(self.int_bits) > MAX_INT_BITS or abs(self.frac_bits) > MAX_INT_BITS:
            raise FixedPointError(
                f"{self} has int_bits={self.int_bits}, frac_bits={self.frac_bits}; the int64 "
                f"{what} supports |I|, |F| <= {MAX_INT_BITS}."
            )
        if self.width > MAX_RAW_BITS:
            raise FixedPointError(
                f"{self} is {self.width} bits wide; the int64 {what} supports at most "
                f"{MAX_RAW_BITS} bits. Use a narrower format."
            )

    # -- conversions -----------------------------------------------------------
    def quantize(self, x: npt.ArrayLike) -> RawArray:
        """Convert real numbers to raw codes exactly as ``ap_fixed(double)``.

        One rounding of the exact binary value of each double (mode
        ``rounding``), then the overflow mode. NaN/inf raise; an empty array
        gives an empty int64 array. ``-0.0`` and subnormals are ordinary
        values (``ap_fixed`` treats a subnormal as a tiny nonzero number: it
        truncates a negative one to ``-1`` LSB under ``AP_TRN``).
        """
        self._check_raw_width("quantize")
        arr = np.asarray(x)
        if arr.dtype.kind not in "fiub":
            raise FixedPointError(
                f"quantize expects real numbers, got dtype {arr.dtype}; pass a float array"
            )
        if arr.dtype.kind == "f" and arr.dtype.itemsize > 8:
            raise FixedPointError(
                f"quantize works on float64; {arr.dtype} input would be rounded to float64 "
                f"first (a second rounding). Convert it explicitly if that is intended"
            )
        if (
            arr.dtype.kind in "iu"
            and arr.size
            and (np.abs(arr.astype(np.float64)) >= 2.0**53).any()
        ):
            raise FixedPointError(
                "integer input with |x| >= 2**53 cannot be converted exactly; pass floats"
            )
        if arr.size and arr.dtype in (np.float32, np.float64):
            fast = self._quantize_fast(arr)
            if fast is not None:
                return fast
        arr = np.asarray(arr, dtype=np.float64)
        if arr.size == 0:
            return np.zeros(arr.shape, dtype=np.int64)
        return self._quantize_flat(arr.reshape(-1)).reshape(arr.shape)

    def _quantize_fast(self, arr: npt.NDArray[np.floating[Any]]) -> RawArray | None:
        """:meth:`quantize` without the float64 copy, or None when it does not apply.

        The case: float32/float64 input, all finite, ``F >= 0``, ``W <= 53``,
        ``AP_SAT``/``AP_SAT_SYM``. Then ``s = x·2^F`` is exact in one pass
        (a float32 widens exactly; ``F >= 0`` cannot underflow) and the rest is
        :meth:`_quantize_flat`'s: clip to the integer code bounds (exact, rounding
        is monotone), then :func:`_round_float`. The same values, fewer passes.
        """
        if not (
            self.frac_bits >= 0
            and self.width <= 53
            and self.overflow in (Overflow.SAT, Overflow.SAT_SYM)
        ):
            return None
        if not (np.isfinite(arr.min()) and np.isfinite(arr.max())):
            return None  # the general path names the bad value
        with np.errstate(over="ignore"):  # ±inf is clipped below
            scaled = np.multiply(arr.reshape(-1), 2.0**self.frac_bits, dtype=np.float64)
        lo, hi = self._sat_bounds()
        np.clip(scaled, float(lo), float(hi), out=scaled)
        if arr.dtype == np.float32 and self.rounding is Rounding.RND and self.width <= 52:
            # floor(s + 1/2) is AP_RND here: s has 24 significant bits and |s| <= 2^51,
            # so s + 1/2 is exact unless |s| < 2^-30, where it rounds to within
            # 2^-30 of 1/2 and the floor is 0 either way (tests/test_fixed.py)
            scaled += 0.5
            out = np.empty(scaled.shape, dtype=np.int64)
            np.floor(scaled, out=out, casting="unsafe")
            return out.reshape(arr.shape)
        return _round_float(scaled, self.rounding).reshape(arr.shape)

    def _quantize_flat(self, arr: npt.NDArray[np.float64]) -> RawArray:
        """:meth:`quantize` of a non-empty 1-D float64 array."""
        lo_f, hi_f = float(arr.min()), float(arr.max())  # NaN propagates into both
        if not (np.isfinite(lo_f) and np.isfinite(hi_f)):
            bad = arr[~np.isfinite(arr)].flat[0]
            raise FixedPointError(
                f"cannot quantize non-finite value {float(bad)!r} to {self}; "
                f"replace NaN/inf first (e.g. with np.nan_to_num)"
            )
        frac, ib, width = self.frac_bits, self.int_bits, self.width
        # x * 2**F is exact unless it overflows (handled by the clip/fmod below)
        # or underflows: F >= -MAX_INT_BITS, so only |x| < 2**-510 can underflow,
        # and those lie far below half an LSB (fixed after scaling).
        if self.overflow is Overflow.WRAP and max(-lo_f, hi_f) >= 2.0 ** (MAX_RAW_BITS - frac):
            # Too big for the int64 wrap below: reduce modulo 2**I first.
            # Rounding commutes with that reduction (2**I is a multiple of the
            # LSB, fmod keeps the sign), and fmod by a power of two is exact.
            arr = np.fmod(arr, 2.0**ib)
            scaled = arr * 2.0**frac
        else:
            with np.errstate(over="ignore"):  # ±inf is clipped below
                scaled = arr * 2.0**frac
        if frac < 0:
            lost = (scaled == 0.0) & (arr != 0.0)
            if lost.any():  # underflowed to zero: any tiny value of that sign rounds alike
                scaled[lost] = np.copysign(0.25, arr[lost])
        mode = self.overflow
        if mode is Overflow.SAT or mode is Overflow.SAT_SYM:
            # Rounding to integers is monotone, so saturating before rounding to
            # the (integer) code bounds gives sat(round(s)); exact for W <= 53.
            lo, hi = self._sat_bounds()
            np.clip(scaled, float(lo), float(hi), out=scaled)
            raw = _round_float(scaled, self.rounding)
            return raw if width <= 53 else self._saturate_inplace(raw)
        if mode is Overflow.SAT_ZERO:
            # Beyond ±2**W every code overflows; the clip keeps the sign and
            # the overflow and bounds the magnitude for the int conversion.
            np.clip(scaled, -(2.0**width), 2.0**width, out=scaled)
        return self._saturate_inplace(_round_float(scaled, self.rounding))

    def to_float(self, raw: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Real value of raw codes as float64 (exact for widths <= 53)."""
        r = _as_raw(raw, lambda: f"to_float of {self}")
        if abs(self.frac_bits) <= 960:  # 2^-F and every product stay normal: exact scaling
            return np.multiply(r, 2.0**-self.frac_bits, dtype=np.float64)
        return np.ldexp(r.astype(np.float64), -self.frac_bits)

    def to_fractions(self, raw: npt.ArrayLike) -> list[Fraction]:
        """Exact real values of raw codes (slow; for tests and reports)."""
        return [int(r) * self.lsb for r in _as_raw(raw, lambda: f"to_fractions of {self}").ravel()]

    def saturate(self, raw: npt.ArrayLike) -> RawArray:
        """Apply this format's overflow mode to exact integer codes.

        ``raw`` must already be on this format's grid (no rounding here).
        ``AP_SAT_SYM`` on a signed format maps the most negative code to
        ``-max_raw`` as ``ap_fixed`` does (except at width 1: see below).
        """
        self._check_raw_width("saturate")
        return self._saturate_inplace(_as_raw(raw, "saturate").copy())

    def _sat_bounds(self) -> tuple[int, int]:
        """Clamp bounds of AP_SAT / AP_SAT_SYM.

        ``AP_SAT_SYM`` clamps a signed format to ``±max_raw``, except that a
        1-bit signed format has no symmetric range: ``ap_fixed`` then gives
        its codes -1 and 0 exactly like ``AP_SAT``.
        """
        sym = self.overflow is Overflow.SAT_SYM and self.signed and self.width > 1
        return (-self.max_raw if sym else self.min_raw), self.max_raw

    def _saturate_inplace(self, r: RawArray) -> RawArray:
        """:meth:`saturate` on a fresh int64 array that may be overwritten."""
        mode = self.overflow
        if mode is Overflow.WRAP:
            if self.signed:  # keep the low W bits, sign-extend bit W-1
                sh = np.int64(64 - self.width)
                r <<= sh
                r >>= sh
            else:
                r &= np.int64((1 << self.width) - 1)
            return r
        if mode is Overflow.SAT_ZERO:
            r[(r < self.min_raw) | (r > self.max_raw)] = 0
            return r
        lo, hi = self._sat_bounds()
        return np.clip(r, lo, hi, out=r)

    def cast(self, raw: npt.ArrayLike, src: FixedFormat) -> RawArray:
        """Convert raw codes of format ``src`` into this format (``dst = src``)."""
        return cast(raw, src, self)

    def contains(self, raw: npt.ArrayLike) -> bool:
        """True when every raw code is a valid code of this format."""
        r = np.asarray(raw)
        return not r.size or bool(r.min() >= self.min_raw and r.max() <= self.max_raw)

    def check(self, raw: npt.ArrayLike, name: str = "input") -> RawArray:
        """Validate raw codes (integers inside the range) and return them as int64."""
        self._check_raw_width()
        r = _as_raw(raw, lambda: f"{name} (raw codes of {self})")
        if not self.contains(r):
            bad = r[(r < self.min_raw) | (r > self.max_raw)].flat[0]
            raise FixedPointError(
                f"{name} raw code {int(bad)} is outside {self} "
                f"(raw range [{self.min_raw}, {self.max_raw}])"
            )
        return r

    def all_codes(self) -> RawArray:
        """Every raw code of the format, ascending (refuses more than 2**24)."""
        if self.width > 24:
            raise FixedPointError(f"{self} has 2**{self.width} codes; all_codes allows 2**24")
        return np.arange(self.min_raw, self.max_raw + 1, dtype=np.int64)


def _as_raw(raw: npt.ArrayLike, what: str | Callable[[], str]) -> RawArray:
    """Raw integer codes as int64; floats, objects and uint64 beyond int64 are refused
    (``what`` names them in the error: a string, or a function giving it, called only
    then)."""
    r = np.asarray(raw)
    if r.dtype == np.int64:
        return r
    if callable(what):
        what = what()
    if r.dtype.kind not in "iub":
        raise FixedPointError(
            f"{what} must be raw integer codes, got dtype {r.dtype}; "
            f"convert reals with FixedFormat.quantize"
        )
    if r.dtype == np.uint64 and r.size and r.max() > np.iinfo(np.int64).max:
        raise FixedPointError(f"{what}: raw code {int(r.max())} does not fit the int64 raw path")
    return r.astype(np.int64, copy=False)


def _parse_mode(token: str, enum_cls: type[enum.StrEnum], text: str) -> Any:
    try:
        return enum_cls(token)
    except ValueError:
        names = ", ".join(m.value for m in enum_cls)
        raise FixedPointError(
            f"unknown {enum_cls.__name__.lower()} mode {token!r} in {text!r}; expected one of "
            f"{names}"
        ) from None


def _round_float(s: npt.NDArray[np.float64], mode: Rounding) -> RawArray:
    """Round exact doubles (``|s| <= 2**62``) to int64 with an ``ap_fixed`` mode.

    ``r = rint(s)`` rounds ties to even and ``d = s - r`` is exact (``|d| <= 1/2``),
    so a tie is exactly ``|d| == 1/2``; the tie modes move ``r`` by one LSB
    from there. (``s - floor(s)`` is not exact for ``s`` in ``(-1/2, 0)``.)
    The last float operation writes straight into the int64 result (integer
    valued doubles convert exactly). Overwrites ``s``.
    """
    out = np.empty(s.shape, dtype=np.int64)
    if mode is Rounding.TRN:
        np.floor(s, out=out, casting="unsafe")
        return out
    if mode is Rounding.TRN_ZERO:
        np.trunc(s, out=out, casting="unsafe")
        return out
    if mode is Rounding.RND_CONV:
        np.rint(s, out=out, casting="unsafe")
        return out
    r = np.rint(s)
    d = np.subtract(s, r, out=s)
    if mode is Rounding.RND:  # ties toward +inf
        np.add(r, d == 0.5, out=out, casting="unsafe")
    elif mode is Rounding.RND_MIN_INF:  # ties toward -inf
        np.subtract(r, d == -0.5, out=out, casting="unsafe")
    elif mode is Rounding.RND_ZERO:  # ties toward zero
        np.add(r, (d == 0.5) & (r < 0.0), out=out, casting="unsafe")
        out -= (d == -0.5) & (r > 0.0)
    else:  # RND_INF: ties away from zero
        np.add(r, (d == 0.5) & (r >= 0.0), out=out, casting="unsafe")
        out -= (d == -0.5) & (r <= 0.0)
    return out


def _round_up(
    above_half: npt.NDArray[np.bool_],
    at_half: npt.NDArray[np.bool_],
    inexact: npt.NDArray[np.bool_],
    floor_q: npt.NDArray[Any],
    negative: npt.NDArray[np.bool_],
    mode: Rounding,
) -> npt.NDArray[np.int64]:
    """0/1 increments to add to the floor quotient for each rounding mode."""
    if mode is Rounding.TRN:
        inc = np.zeros_like(above_half)
    elif mode is Rounding.TRN_ZERO:
        inc = inexact & negative
    elif mode is Rounding.RND:
        inc = above_half | at_half
    elif mode is Rounding.RND_ZERO:
        inc = above_half | (at_half & negative)
    elif mode is Rounding.RND_INF:
        inc = above_half | (at_half & ~negative)
    elif mode is Rounding.RND_MIN_INF:
        inc = above_half
    else:  # RND_CONV: ties to even
        odd = (np.asarray(floor_q) % 2) != 0
        inc = above_half | (at_half & odd)
    return inc.astype(np.int64)


def round_shift(raw: npt.ArrayLike, shift: int, mode: Rounding | str = Rounding.TRN) -> RawArray:
    """``raw / 2**shift`` rounded to an integer with an ``ap_fixed`` mode.

    ``shift <= 0`` multiplies exactly. Pure integer arithmetic.
    """
    r = _as_raw(raw, "round_shift input")
    if isinstance(shift, bool) or not isinstance(shift, int | np.integer):
        raise FixedPointError(f"shift must be an integer, got {shift!r}")
    shift = int(shift)
    try:
        mode = Rounding(mode)
    except ValueError:
        names = ", ".join(m.value for m in Rounding)
        raise FixedPointError(f"unknown rounding mode {mode!r}; expected one of {names}") from None
    if shift <= 0:
        return _checked_shl(r, -shift)
    if shift >= 63:
        # |raw| < 2**62 <= 2**(shift-1): the floor quotient is -1 or 0; a
        # negative value's remainder raw + 2**shift is above half, a
        # non-negative one's is below half.
        q = np.where(r < 0, np.int64(-1), np.int64(0))
        below = np.zeros(r.shape, dtype=bool)
        return q + _round_up(r < 0, below, r != 0, q, r < 0, mode)
    q = r >> shift
    rem = r & np.int64((1 << shift) - 1)
    half = np.int64(1 << (shift - 1))
    return q + _round_up(rem > half, rem == half, rem != 0, q, r < 0, mode)


def _checked_shl(r: RawArray, s: int) -> RawArray:
    if s == 0:
        return r
    if r.size:
        mag = int(max(abs(int(r.min())), abs(int(r.max()))))
        if mag.bit_length() + s > MAX_RAW_BITS + 1:
            raise FixedPointError(
                f"left shift by {s} of codes up to {mag} exceeds the int64 raw path"
            )
    return r << np.int64(s)


def cast(raw: npt.ArrayLike, src: FixedFormat, dst: FixedFormat) -> RawArray:
    """Convert raw codes from ``src`` to ``dst`` exactly as ``dst = src`` in HLS.

    Round once with ``dst.rounding`` (when fractional bits are dropped), then
    apply ``dst.overflow``.
    """
    src._check_raw_width("cast")
    dst._check_raw_width("cast")
    r = src.check(raw, "cast input")
    d = dst.frac_bits - src.frac_bits
    if d >= 0:
        # Exact left shift; only the low bits matter for WRAP, and for the
        # saturating modes the overflow test is done before shifting.
        if d == 0:
            # Every src code fits: no overflow mode can act, except SAT_SYM,
            # which also moves a signed format's most negative code.
            sym = dst.overflow is Overflow.SAT_SYM and dst.signed
            if not sym and dst.min_raw <= src.min_raw and src.max_raw <= dst.max_raw:
                return r.copy()
            return dst.saturate(r)
        if dst.overflow is Overflow.WRAP:
            keep = dst.width - d
            if keep <= 0:
                return np.zeros(r.shape, dtype=np.int64)
            low = r & np.int64((1 << keep) - 1)
            low <<= np.int64(d)
            return dst._saturate_inplace(low)
        lo_in = -((-dst.min_raw) >> d) if dst.min_raw < 0 else 0  # ceil(min / 2**d)
        hi_in = dst.max_raw >> d  # floor(max / 2**d)
        inside = (r >= lo_in) & (r <= hi_in)
        shifted = np.where(inside, r, 0) << np.int64(min(d, MAX_RAW_BITS))
        flagged = np.where(r > hi_in, dst.max_raw + 1, np.where(r < lo_in, dst.min_raw - 1, 0))
        return dst._saturate_inplace(np.where(inside, shifted, flagged))
    return dst._saturate_inplace(round_shift(r, -d, dst.rounding))


def _add_format(a: FixedFormat, b: FixedFormat) -> FixedFormat:
    ia = a.int_bits + (b.signed and not a.signed)
    ib = b.int_bits + (a.signed and not b.signed)
    i = max(ia, ib) + 1
    f = max(a.frac_bits, b.frac_bits)
    return FixedFormat(i + f, i, a.signed or b.signed)


def _binary_check(result: FixedFormat, op: str, a: FixedFormat, b: FixedFormat) -> None:
    if result.width > MAX_RAW_BITS:
        raise FixedPointError(
            f"{a} {op} {b} needs an exact {result} ({result.width} bits); the int64 raw "
            f"path supports {MAX_RAW_BITS}. Cast the operands to narrower formats first."
        )


def add(
    a: npt.ArrayLike, fa: FixedFormat, b: npt.ArrayLike, fb: FixedFormat
) -> tuple[RawArray, FixedFormat]:
    """Exact ``a + b`` with the result format of ``ap_fixed`` ``operator+``."""
    fr = _add_format(fa, fb)
    _binary_check(fr, "+", fa, fb)
    ra = fa.check(a, "add operand a") << np.int64(fr.frac_bits - fa.frac_bits)
    rb = fb.check(b, "add operand b") << np.int64(fr.frac_bits - fb.frac_bits)
    return ra + rb, fr


def sub(
    a: npt.ArrayLike, fa: FixedFormat, b: npt.ArrayLike, fb: FixedFormat
) -> tuple[RawArray, FixedFormat]:
    """Exact ``a - b`` with the result format of ``ap_fixed`` ``operator-`` (always signed)."""
    fr = replace(_add_format(fa, fb), signed=True)
    _binary_check(fr, "-", fa, fb)
    ra = fa.check(a, "sub operand a") << np.int64(fr.frac_bits - fa.frac_bits)
    rb = fb.check(b, "sub operand b") << np.int64(fr.frac_bits - fb.frac_bits)
    return ra - rb, fr


def mul(
    a: npt.ArrayLike, fa: FixedFormat, b: npt.ArrayLike, fb: FixedFormat
) -> tuple[RawArray, FixedFormat]:
    """Exact ``a * b``: ``ap_fixed<Wa+Wb, Ia+Ib>``, signed if either is."""
    fr = FixedFormat(fa.width + fb.width, fa.int_bits + fb.int_bits, fa.signed or fb.signed)
    _binary_check(fr, "*", fa, fb)
    return fa.check(a, "mul operand a") * fb.check(b, "mul operand b"), fr


def shl(raw: npt.ArrayLike, fmt: FixedFormat, n: int) -> RawArray:
    """``x << n`` of ``ap_fixed``: same format, bits shifted out are lost (wrap)."""
    if n < 0:
        raise FixedPointError(f"shift amount must be >= 0, got {n}")
    fmt._check_raw_width("shift")
    wrap = fmt.with_modes(overflow=Overflow.WRAP)
    r = fmt.check(raw, "shl input")
    if n >= fmt.width:
        return np.zeros(r.shape, dtype=np.int64)
    low = r & np.int64((1 << (fmt.width - n)) - 1)
    return wrap.saturate(low << np.int64(n))


def shr(raw: npt.ArrayLike, fmt: FixedFormat, n: int) -> RawArray:
    """``x >> n`` of ``ap_fixed``: same format, arithmetic (floor) for signed."""
    if n < 0:
        raise FixedPointError(f"shift amount must be >= 0, got {n}")
    fmt._check_raw_width("shift")
    r = fmt.check(raw, "shr input")
    return r >> np.int64(min(n, 63))


@dataclass(frozen=True, slots=True, eq=False)
class FixedArray:
    """Raw codes plus their format; arithmetic is exact and grows formats.

    >>> a = FixedArray.from_float([1.5, -0.25], "ap_fixed<8,4>")
    >>> (a * a).fmt
    FixedFormat('ap_fixed<16,8>')
    >>> (a * a).to_float().tolist()
    [2.25, 0.0625]
    """

    raw: RawArray
    fmt: FixedFormat

    def __post_init__(self) -> None:
        object.__setattr__(self, "fmt", FixedFormat.parse(self.fmt))
        object.__setattr__(self, "raw", self.fmt.check(self.raw, "raw"))

    @classmethod
    def from_float(cls, x: npt.ArrayLike, fmt: FixedFormat | str) -> FixedArray:
        f = FixedFormat.parse(fmt)
        return cls(f.quantize(x), f)

    def to_float(self) -> npt.NDArray[np.float64]:
        return self.fmt.to_float(self.raw)

    def cast(self, fmt: FixedFormat | str) -> FixedArray:
        f = FixedFormat.parse(fmt)
        return FixedArray(cast(self.raw, self.fmt, f), f)

    def __add__(self, other: FixedArray) -> FixedArray:
        return FixedArray(*add(self.raw, self.fmt, other.raw, other.fmt))

    def __sub__(self, other: FixedArray) -> FixedArray:
        return FixedArray(*sub(self.raw, self.fmt, other.raw, other.fmt))

    def __mul__(self, other: FixedArray) -> FixedArray:
        return FixedArray(*mul(self.raw, self.fmt, other.raw, other.fmt))

    def __lshift__(self, n: int) -> FixedArray:
        return FixedArray(shl(self.raw, self.fmt, n), self.fmt)

    def __rshift__(self, n: int) -> FixedArray:
        return FixedArray(shr(self.raw, self.fmt, n), self.fmt)

    def __len__(self) -> int:
        return len(self.raw)

    def __repr__(self) -> str:
        return f"FixedArray({self.fmt}, raw={self.raw!r})"


@functools.lru_cache(maxsize=1024)
def _float_range(fmt: FixedFormat) -> tuple[float, float, float]:
    """:meth:`FixedFormat.float_range` computed."""
    return float(fmt.min), float(fmt.max), float(fmt.lsb)
