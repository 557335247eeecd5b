"""Shared integer primitives of the approximation models (exact int64 numpy).

Every function here is pure integer arithmetic on ``int64`` arrays (or Python
ints for per-spec constants), so HLS C++ and SystemVerilog can mirror it bit
for bit. Signatures are a contract other modules import: keep them stable.

Contents
--------
* :func:`bit_length`, :func:`leading_one` -- leading-one detection.
* :func:`log2e_shift` -- ``x + (x >> 1) - (x >> 4)`` (x·log2 e ≈ x·1.4375, I-ViT).
* :func:`shift_exp_x0`, :func:`shift_exp` -- I-ViT shift-exp (Shiftmax/ShiftGELU).
* :func:`ibert_exp_constants`, :func:`i_exp` -- I-BERT i-exp (second-order polynomial).
* :func:`exp2_frac_table`, :func:`exp2_neg` -- base-2 exponential of a
  non-negative fixed-point argument: integer part a shift, fraction from a
  table (optionally piecewise-linear between entries).
* :func:`recip_seed_table`, :func:`recip_pwl_table`, :func:`reciprocal` --
  1/d of a positive integer by leading-one normalisation plus a table
  (PWL) or a table seed plus Newton steps.

Conventions: ``>>`` is an arithmetic shift (floor); "round" names an
``ap_fixed`` quantisation mode (:class:`hwapprox.fixed.Rounding`) and is
applied by :func:`hwapprox.fixed.round_shift`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from hwapprox.fixed import Rounding, round_shift

__all__ = [
    "IBERT_EXP_COEF",
    "IBERT_EXP_N",
    "IBERT_LN2",
    "IBertExpConstants",
    "bit_length",
    "exp2_frac_table",
    "exp2_neg",
    "i_exp",
    "ibert_exp_constants",
    "leading_one",
    "log2e_shift",
    "mul_round_shift",
    "recip_pwl_table",
    "recip_seed_table",
    "reciprocal",
    "round_shift_var",
    "shift_exp",
    "shift_exp_x0",
]

RawArray = npt.NDArray[np.int64]

#: I-BERT polynomial ``a·(r + b/a)^2 + c`` ≈ exp(r·S) on r·S in (-ln 2, 0]: (a, b, c).
IBERT_EXP_COEF = (0.35815147, 0.96963238, 1.0)
#: I-BERT's ``x0`` constant (-ln 2 rounded to 4 digits, as in the source).
IBERT_LN2 = -0.6931
#: I-BERT's ``const``: clip at 30·x0 and scale the result by 2^30.
IBERT_EXP_N = 30


def _i64(x: npt.ArrayLike) -> RawArray:
    return np.asarray(x, dtype=np.int64)


# -- leading-one detection ---------------------------------------------------------
def bit_length(x: npt.ArrayLike) -> RawArray:
    """Number of bits of non-negative integers (``int.bit_length``): 0 -> 0, 1 -> 1, 5 -> 3.

    Exact for the whole int64 range (binary search on shifts, no floats).
    Negative inputs raise ``ValueError``.
    """
    v = _i64(x)
    if v.size and int(v.min()) < 0:
        raise ValueError(f"bit_length needs non-negative integers, got {int(v.min())}")
    n = np.zeros(v.shape, dtype=np.int64)
    w = v.copy()
    for s in (32, 16, 8, 4, 2, 1):
        big = w >= (np.int64(1) << np.int64(s))
        n += np.where(big, s, 0)
        w = np.where(big, w >> np.int64(s), w)
    return n + (w > 0)


def leading_one(x: npt.ArrayLike) -> RawArray:
    """Position of the most significant set bit of positive integers (``bit_length - 1``)."""
    v = _i64(x)
    if v.size and int(v.min()) <= 0:
        raise ValueError(f"leading_one needs positive integers, got {int(v.min())}")
    return bit_length(v) - 1


# -- I-ViT shift-exp ------------------------------------------------------------------
def log2e_shift(x: npt.ArrayLike) -> RawArray:
    """``x + (x >> 1) - (x >> 4)``: x·log2(e) ≈ x·1.4375 with shifts (I-ViT).

    ``>>`` floors (arithmetic shift), identical to the source's
    ``floor(x / 2)`` and ``floor(x / 16)`` on integers.
    """
    v = _i64(x)
    return v + (v >> np.int64(1)) - (v >> np.int64(4))


def shift_exp_x0(scale: Fraction | float, variant: str = "pytorch") -> int:
    """I-ViT's ``x0`` (the integer code of -1 in the log2 domain) for input scale ``scale``.

    ``pytorch``: ``floor(-1 / S)``; ``tvm``: ``int(-1 / S - 1)`` (truncation
    toward zero). Computed exactly from the rational value of ``scale``.
    """
    s = Fraction(scale)
    if s <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    if variant == "pytorch":
        return math.floor(-1 / s)
    if variant == "tvm":
        return math.trunc(-1 / s - 1)
    raise ValueError(f"variant must be 'pytorch' or 'tvm', got {variant!r}")


def shift_exp(x: npt.ArrayLike, x0: int, n: int, variant: str = "pytorch") -> RawArray:
    """I-ViT shift-exp of integer codes ``x <= 0`` (scale S): returns ``exp_int``, scale S/2^n.

    Steps (I-ViT ``int_exp_shift``), all exact integers:

    1. ``x = x + (x >> 1) - (x >> 4)`` (x·log2 e);
    2. clip ``x = max(x, n·x0)``, ``x0 < 0`` from :func:`shift_exp_x0`;
    3. ``q = floor(x / x0)`` (0..n), ``r = x - x0·q`` in ``(x0, 0]``;
    4. ``pytorch``: ``exp = floor((r/2 - x0)·2^(n - q))`` evaluated exactly as
       ``((r - 2·x0) << (n - q)) >> 1`` (the source's ``r/2`` is a real division);
       ``tvm``: ``exp = ((r >> 1) - x0) << (n - q)`` (``r/2`` as a shift).

    The result is ``>= 0`` by construction (the source's clamp at 0 never acts).
    Largest value ``-x0·2^n`` (at x = 0); callers check it fits their width.
    """
    if x0 >= 0:
        raise ValueError(f"x0 must be negative, got {x0}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    v = _i64(x)
    if v.size and int(v.max()) > 0:
        raise ValueError(f"shift_exp needs x <= 0, got {int(v.max())}")
    t = log2e_shift(v)
    t = np.maximum(t, np.int64(n * x0))
    q = t // np.int64(x0)  # floor division; t <= 0, x0 < 0 -> q in [0, n]
    r = t - np.int64(x0) * q
    sh = np.int64(n) - q
    if variant == "pytorch":
        return ((r - np.int64(2 * x0)) << sh) >> np.int64(1)
    if variant == "tvm":
        return ((r >> np.int64(1)) - np.int64(x0)) << sh
    raise ValueError(f"variant must be 'pytorch' or 'tvm', got {variant!r}")


# -- I-BERT i-exp --------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class IBertExpConstants:
    """Integer constants of I-BERT's i-exp for one input scale S.

    ``x0 = floor(-0.6931 / S)``, ``b_int = floor((b/a) / S)``,
    ``c_int = floor((c/a) / S^2)``, clip at ``n·x0``; the result
    ``exp_int`` has scale ``a·S^2 / 2^n`` (``out_scale``).
    """

    x0: int
    b_int: int
    c_int: int
    n: int
    out_scale: Fraction

    @property
    def max_exp(self) -> int:
        """Largest ``exp_int`` (at x = 0): ``c_int · 2^n``."""
        return self.c_int << self.n


def ibert_exp_constants(scale: Fraction | float, n: int = IBERT_EXP_N) -> IBertExpConstants:
    """I-BERT i-exp constants for input scale ``scale``, computed exactly.

    The coefficient quotients ``b/a`` and ``c/a`` are taken as the float64
    values the source computes (``coef[1] /= coef[0]``); the floors are exact
    rational floors (the source floors fp32 tensors; see module notes).
    """
    s = Fraction(scale)
    if s <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    a, b, c = IBERT_EXP_COEF
    b_over_a = Fraction(b / a)
    c_over_a = Fraction(c / a)
    x0 = math.floor(Fraction(IBERT_LN2) / s)
    if x0 >= 0:
        raise ValueError(f"scale {scale} is too coarse for i-exp (x0 = {x0} must be < 0)")
    return IBertExpConstants(
        x0=x0,
        b_int=math.floor(b_over_a / s),
        c_int=math.floor(c_over_a / (s * s)),
        n=n,
        out_scale=Fraction(a) * s * s / (1 << n),
    )


def i_exp(x: npt.ArrayLike, k: IBertExpConstants) -> RawArray:
    """I-BERT i-exp of integer codes ``x <= 0``: ``exp_int`` with scale ``k.out_scale``.

    ``x = max(x, n·x0)``; ``q = floor(x / x0)``; ``r = x - x0·q`` in (x0, 0];
    ``z = r·(r + b_int) + c_int``; ``exp_int = max(z << (n - q), 0)``
    (``q <= n`` after the clip, so the source's ``floor(z·2^(n-q))`` is a shift).
    """
    v = _i64(x)
    if v.size and int(v.max()) > 0:
        raise ValueError(f"i_exp needs x <= 0, got {int(v.max())}")
    if k.max_exp.bit_length() > 62:
        raise ValueError(
            f"i-exp result up to {k.max_exp} needs {k.max_exp.bit_length()} bits; int64 "
            f"allows 62: use a coarser input scale"
        )
    t = np.maximum(v, np.int64(k.n * k.x0))
    q = t // np.int64(k.x0)
    r = t - np.int64(k.x0) * q
    z = r * (r + np.int64(k.b_int)) + np.int64(k.c_int)
    return np.maximum(z << (np.int64(k.n) - q), np.int64(0))


def round_shift_var(v: npt.ArrayLike, shift: npt.ArrayLike, rounding: Rounding | str) -> RawArray:
    """``v / 2^shift`` rounded with ``rounding``, per-element shifts (negative: exact left shift).

    Vectorised for AP_TRN (floor) and AP_RND (``(v + 2^(s-1)) >> s``); other
    modes fall back to :func:`hwapprox.fixed.round_shift` per distinct shift.
    Shifts are clamped to 62 (every bit of a 62-bit value shifts out).
    """
    vv = _i64(v)
    sh = np.broadcast_to(_i64(shift), vv.shape)
    mode = Rounding(rounding)
    if mode in (Rounding.TRN, Rounding.RND):
        pos = np.clip(sh, 0, 62)
        neg = np.clip(-sh, 0, 62)
        out = vv >> pos
        if mode is Rounding.RND:
            half = (vv >> np.maximum(pos - 1, 0)) & np.int64(1)
            out = out + np.where(pos > 0, half, np.int64(0))
        return np.where(sh < 0, vv << neg, out)
    out = np.empty(vv.shape, dtype=np.int64)
    for s in np.unique(sh):
        sel = sh == s
        out[sel] = round_shift(vv[sel], int(s), mode)
    return out


def mul_round_shift(
    a: npt.ArrayLike, m: int, s: int, rounding: Rounding | str = Rounding.RND_CONV
) -> RawArray:
    """``a·m / 2^s`` rounded to nearest, exactly; ``0 <= a < 2^61``, ``0 < m <= 2^31``, ``s >= 31``.

    The product may exceed int64, so it is formed in two halves (``a = ah·2^31 +
    al``) and the rounding decision is taken on the exact remainder.
    ``rounding``: ``AP_RND_CONV`` (ties to even, ``torch.round``) or ``AP_RND``
    (ties up).
    """
    mode = Rounding(rounding)
    if mode not in (Rounding.RND_CONV, Rounding.RND):
        raise ValueError(f"rounding must be AP_RND_CONV or AP_RND, got {mode}")
    if not (0 < m <= 1 << 31) or s < 31:
        raise ValueError(f"need 0 < m <= 2^31 and s >= 31, got m={m}, s={s}")
    v = _i64(a)
    if v.size and (int(v.min()) < 0 or int(v.max()) >= 1 << 61):
        raise ValueError("mul_round_shift needs 0 <= a < 2^61")
    ah, al = v >> np.int64(31), v & np.int64((1 << 31) - 1)
    p_lo = al * np.int64(m)
    c = ah * np.int64(m) + (p_lo >> np.int64(31))  # a·m = c·2^31 + r1
    r1 = p_lo & np.int64((1 << 31) - 1)
    t = s - 31
    if t == 0:
        q, above, tie = c, r1 > (1 << 30), r1 == (1 << 30)
    else:
        q = c >> np.int64(t)
        rem = c & np.int64((1 << t) - 1)
        h = np.int64(1 << (t - 1))
        above = (rem > h) | ((rem == h) & (r1 > 0))
        tie = (rem == h) & (r1 == 0)
    odd = (q & 1) == 1
    up = (above | tie) if mode is Rounding.RND else (above | (tie & odd))
    return q + up.astype(np.int64)


# -- base-2 exponential ----------------------------------------------------------------
def exp2_frac_table(addr_bits: int, out_frac_bits: int, rounding: Rounding | str) -> RawArray:
    """``2^(-k / 2^addr_bits)`` for k = 0 .. 2^addr_bits, as raw codes with ``out_frac_bits``.

    ``2^addr_bits + 1`` entries (the last, 2^-1, is the right end point used by
    linear interpolation in the last segment). Each entry is the exact real
    value rounded once with ``rounding``: computed as a float64 then corrected
    exactly (the error of ``2.0**`` is far below the decision margin; checked
    with rational arithmetic on the neighbours).
    """
    if addr_bits < 0 or out_frac_bits < 1:
        raise ValueError(f"bad exp2 table shape addr_bits={addr_bits}, frac={out_frac_bits}")
    k = np.arange((1 << addr_bits) + 1, dtype=np.float64)
    vals = np.exp2(-k / (1 << addr_bits))
    return _round_real(vals, out_frac_bits, Rounding(rounding))


def _round_real(vals: npt.NDArray[np.float64], frac_bits: int, mode: Rounding) -> RawArray:
    """Round reals (float64, accurate to < 2^-50 relative) to ``frac_bits`` with ``mode``.

    Ties cannot occur for the transcendental values tabulated here except at
    exact binary points (0.5, 1.0) which float64 holds exactly; the scaled
    value is rounded with the ap_fixed rule.
    """
    from hwapprox.fixed import FixedFormat  # local: keeps the import graph flat

    fmt = FixedFormat(frac_bits + 8, 8, signed=False, rounding=mode)
    return fmt.quantize(vals)


def exp2_neg(
    t: npt.ArrayLike,
    t_frac_bits: int,
    table: RawArray,
    addr_bits: int,
    out_frac_bits: int,
    table_frac_bits: int,
    *,
    interp: bool,
    rounding: Rounding | str,
) -> RawArray:
    """``2^(-t)`` for raw ``t >= 0`` with ``t_frac_bits``, as raw codes with ``out_frac_bits``.

    ``k = t >> t_frac_bits`` (integer part), ``f`` = the fraction bits. The top
    ``addr_bits`` bits of ``f`` index ``table`` (:func:`exp2_frac_table`,
    ``table_frac_bits``); with ``interp`` the remaining ``g = t_frac_bits -
    addr_bits`` bits ``u`` interpolate linearly toward the next entry:
    ``v = T[i]·2^g - (T[i] - T[i+1])·u`` (exact, ``table_frac_bits + g``
    fraction bits); without ``interp`` ``v = T[i]·2^g``. Finally
    ``2^-t = v·2^-k`` is rounded once: ``round_shift(v, k + table_frac_bits + g -
    out_frac_bits, rounding)``. Requires ``addr_bits <= t_frac_bits``.
    """
    if addr_bits > t_frac_bits:
        raise ValueError(f"addr_bits={addr_bits} exceeds t_frac_bits={t_frac_bits}")
    v_t = _i64(t)
    if v_t.size and int(v_t.min()) < 0:
        raise ValueError(f"exp2_neg needs t >= 0, got {int(v_t.min())}")
    g = t_frac_bits - addr_bits
    k = v_t >> np.int64(t_frac_bits)
    f = v_t & np.int64((1 << t_frac_bits) - 1)
    i = f >> np.int64(g)
    tab = _i64(table)
    lo = tab[i]
    v = lo << np.int64(g)
    if interp and g > 0:
        u = f & np.int64((1 << g) - 1)
        v = v - (lo - tab[i + 1]) * u
    shift = table_frac_bits + g - out_frac_bits
    # 2^-t < 2^-(k) and v < 2^(table_frac_bits + g + 1): for k beyond the width
    # every bit shifts out; clamp the shift to keep int64 shifts defined.
    return round_shift_var(v, np.minimum(k + shift, np.int64(62)), rounding)


# -- reciprocal ------------------------------------------------------------------------
def recip_seed_table(addr_bits: int, out_frac_bits: int, rounding: Rounding | str) -> RawArray:
    """Seed for 1/u, u in [1, 2): entry i = ``1 / (1 + (i + 0.5) / 2^addr_bits)`` (bin centre).

    ``2^addr_bits`` entries, raw codes with ``out_frac_bits``, one rounding.
    """
    i = np.arange(1 << addr_bits, dtype=np.float64)
    vals = 1.0 / (1.0 + (i + 0.5) / (1 << addr_bits))
    return _round_real(vals, out_frac_bits, Rounding(rounding))


def recip_pwl_table(addr_bits: int, out_frac_bits: int, rounding: Rounding | str) -> RawArray:
    """End points of 1/u on [1, 2]: entry i = ``1 / (1 + i / 2^addr_bits)``, i = 0 .. 2^addr_bits.

    ``2^addr_bits + 1`` entries for linear interpolation; raw codes with
    ``out_frac_bits``, one rounding (1.0 and 0.5 are exact).
    """
    i = np.arange((1 << addr_bits) + 1, dtype=np.float64)
    vals = 1.0 / (1.0 + i / (1 << addr_bits))
    return _round_real(vals, out_frac_bits, Rounding(rounding))


def reciprocal(
    d: npt.ArrayLike,
    d_frac_bits: int,
    out_frac_bits: int,
    *,
    unit: str,
    table: RawArray,
    addr_bits: int,
    table_frac_bits: int,
    work_frac_bits: int,
    newton_steps: int,
    rounding: Rounding | str,
) -> RawArray:
    """``1/d`` for raw ``d > 0`` with ``d_frac_bits``; raw result with ``out_frac_bits``.

    Leading-one normalisation: ``p = leading_one(d)``, mantissa ``u = d / 2^p``
    in [1, 2) taken as a ``work_frac_bits`` fraction ``U`` (``d`` shifted
    left or, when longer, truncated: ``U = floor(d·2^(work_frac_bits - p))``).
    The top ``addr_bits`` fraction bits of ``U`` are ``i``, the rest ``w``
    (``g = work_frac_bits - addr_bits`` bits).

    * ``unit="lut"``: ``table`` = :func:`recip_pwl_table`; ``R = T[i]·2^g -
      (T[i] - T[i+1])·w`` (exact, ``table_frac_bits + g`` fraction bits), then
      rounded to ``work_frac_bits`` with ``rounding``.
    * ``unit="newton"``: ``table`` = :func:`recip_seed_table`; ``R = T[i]``
      moved to ``work_frac_bits`` (exact left shift or ``rounding``); each
      step ``e = 2 - U·R`` (rounded to ``work_frac_bits``), ``R = R·e``
      (rounded to ``work_frac_bits``).

    Then ``1/d = R·2^(d_frac_bits - p)``: ``round_shift(R, work_frac_bits +
    p - d_frac_bits - out_frac_bits, rounding)``.

    Where numba is available this runs as one compiled loop
    (:func:`hwapprox.approx._kernels.recip_rows`, the same integers), for integer
    parameters with ``0 <= addr_bits <= work_frac_bits <= 62`` and a 1-D table long
    enough; other arguments, and inputs it would reject (``d <= 0``, a left shift
    past 63 bits), take the numpy path (:func:`_reciprocal_numpy`), which raises.
    """
    v = _i64(d)
    ints = (addr_bits, table_frac_bits, work_frac_bits, newton_steps, d_frac_bits, out_frac_bits)
    if _recip_kernel_fits(unit, ints, rounding):
        from hwapprox.approx import _kernels  # local: importing intmath needs no numba

        if _kernels.available():
            tab = np.ascontiguousarray(table, dtype=np.int64)
            if tab.ndim == 1 and tab.shape[0] >= (1 << addr_bits) + (unit == "lut"):
                out = np.empty(v.shape, dtype=np.int64)
                status = _kernels.recip_rows(
                    np.ascontiguousarray(v).reshape(-1),
                    unit == "newton",
                    tab,
                    addr_bits,
                    table_frac_bits,
                    work_frac_bits,
                    newton_steps,
                    _kernels.RECIP_MODES[rounding],
                    work_frac_bits - d_frac_bits - out_frac_bits,
                    out.reshape(-1),
                )
                if status == 0:
                    return out
    return _reciprocal_numpy(
        v,
        d_frac_bits,
        out_frac_bits,
        unit=unit,
        table=table,
        addr_bits=addr_bits,
        table_frac_bits=table_frac_bits,
        work_frac_bits=work_frac_bits,
        newton_steps=newton_steps,
        rounding=rounding,
    )


#: parameters of :func:`reciprocal`'s compiled path are below this in magnitude
_RECIP_PARAM_LIMIT = 1 << 40


def _recip_kernel_fits(unit: str, ints: tuple[int, ...], rounding: Rounding | str) -> bool:
    """Whether :func:`reciprocal`'s arguments are in the compiled path's domain: a known
    unit and rounding mode, plain integers (not bool) for ``ints`` = ``(addr_bits,
    table_frac_bits, work_frac_bits, newton_steps, d_frac_bits, out_frac_bits)``, ``0 <=
    addr_bits <= work_frac_bits <= 62`` and all below 2^40 in magnitude (their sums stay
    far inside int64)."""
    return (
        unit in ("lut", "newton")
        and isinstance(rounding, str)
        and rounding in _RECIP_MODE_NAMES
        and all(type(a) is int and -_RECIP_PARAM_LIMIT < a < _RECIP_PARAM_LIMIT for a in ints)
        and 0 <= ints[0] <= ints[2] <= 62
    )


_RECIP_MODE_NAMES = frozenset(m.value for m in Rounding)


def _reciprocal_numpy(
    d: npt.ArrayLike,
    d_frac_bits: int,
    out_frac_bits: int,
    *,
    unit: str,
    table: RawArray,
    addr_bits: int,
    table_frac_bits: int,
    work_frac_bits: int,
    newton_steps: int,
    rounding: Rounding | str,
) -> RawArray:
    """:func:`reciprocal` in numpy, array by array: the reference of the compiled path
    and its fallback (every argument; raises on the inputs :func:`reciprocal` refuses)."""
    v = _i64(d)
    if v.size and int(v.min()) <= 0:
        raise ValueError(f"reciprocal needs d > 0, got {int(v.min())}")
    if addr_bits > work_frac_bits:
        raise ValueError(f"addr_bits={addr_bits} exceeds work_frac_bits={work_frac_bits}")
    mode = Rounding(rounding)
    p = leading_one(v)
    wf = work_frac_bits
    sh = np.int64(wf) - p
    u_full = np.where(sh >= 0, v << np.maximum(sh, 0), v >> np.maximum(-sh, 0))
    g = wf - addr_bits
    frac = u_full - (np.int64(1) << np.int64(wf))
    i = frac >> np.int64(g)
    w = frac & np.int64((1 << g) - 1)
    tab = _i64(table)
    if unit == "lut":
        lo = tab[i]
        r_exact = (lo << np.int64(g)) - (lo - tab[i + 1]) * w
        r = round_shift(r_exact, table_frac_bits + g - wf, mode)
    elif unit == "newton":
        r = round_shift(tab[i], table_frac_bits - wf, mode)
        two = np.int64(2) << np.int64(wf)
        for _ in range(newton_steps):
            e = round_shift((two << np.int64(wf)) - u_full * r, wf, mode)
            r = round_shift(r * e, wf, mode)
    else:
        raise ValueError(f"unit must be 'lut' or 'newton', got {unit!r}")
    total = np.int64(wf - d_frac_bits - out_frac_bits) + p
    return round_shift_var(r, total, mode)
