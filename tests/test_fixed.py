"""Unit and property tests of :mod:`hwapprox.fixed`.

The C++ ``ap_fixed`` comparison lives in ``test_fixed_oracle.py``; here the
core is checked against hand-computed codes, against a naive exact model
written with :class:`fractions.Fraction` (the ``ap_fixed`` rules: one
rounding of the exact value, then the overflow mode), with seeded
hypothesis properties, and its error paths are pinned with exact messages.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwapprox.fixed import (
    MAX_RAW_BITS,
    FixedArray,
    FixedFormat,
    FixedPointError,
    Overflow,
    Rounding,
    add,
    cast,
    mul,
    round_shift,
    shl,
    shr,
    sub,
)

SETTINGS = settings(derandomize=True, max_examples=150, deadline=None, database=None)
RND_MODES = [Rounding.RND, Rounding.RND_ZERO, Rounding.RND_INF, Rounding.RND_MIN_INF]
RND_MODES.append(Rounding.RND_CONV)
SYNTAX = "ap_fixed<W,I[,Q[,O]]> or ap_ufixed<W,I[,Q[,O]]>, e.g. ap_fixed<16,6,AP_RND,AP_SAT>"


# -- the naive exact model ----------------------------------------------------------
def ref_round(v: Fraction, mode: Rounding) -> int:
    """Round an exact rational to an integer with an ``ap_fixed`` quantisation mode."""
    fl = math.floor(v)
    rem = v - fl
    half = Fraction(1, 2)
    if mode is Rounding.TRN:
        return fl
    if mode is Rounding.TRN_ZERO:
        return math.trunc(v)
    if rem != half:
        return fl + (rem > half) if mode is not Rounding.TRN else fl
    tie_up = {
        Rounding.RND: True,
        Rounding.RND_ZERO: v < 0,
        Rounding.RND_INF: v > 0,
        Rounding.RND_MIN_INF: False,
        Rounding.RND_CONV: fl % 2 == 1,
    }[mode]
    return fl + int(tie_up)


def ref_overflow(q: int, fmt: FixedFormat) -> int:
    """Apply the overflow mode to an exact integer code."""
    lo, hi = fmt.min_raw, fmt.max_raw
    if fmt.overflow is Overflow.WRAP:
        return (q - lo) % (1 << fmt.width) + lo
    if lo <= q <= hi:
        if fmt.overflow is Overflow.SAT_SYM and fmt.signed and fmt.width > 1 and q == lo:
            return -hi
        return q
    if fmt.overflow is Overflow.SAT_ZERO:
        return 0
    if fmt.overflow is Overflow.SAT_SYM and fmt.signed and fmt.width > 1:
        return hi if q > hi else -hi
    return hi if q > hi else lo


def ref_quantize(x: float, fmt: FixedFormat) -> int:
    return ref_overflow(ref_round(Fraction(x) * Fraction(2) ** fmt.frac_bits, fmt.rounding), fmt)


def ref_cast(r: int, src: FixedFormat, dst: FixedFormat) -> int:
    v = Fraction(r) * Fraction(2) ** (dst.frac_bits - src.frac_bits)
    return ref_overflow(ref_round(v, dst.rounding), dst)


# -- strategies --------------------------------------------------------------------
@st.composite
def formats(
    draw: st.DrawFn,
    max_width: int = MAX_RAW_BITS,
    modes: list[Overflow] | None = None,
    roundings: list[Rounding] | None = None,
) -> FixedFormat:
    w = draw(st.integers(1, max_width))
    i = draw(st.integers(-20, w + 20))
    return FixedFormat(
        w,
        i,
        draw(st.booleans()),
        draw(st.sampled_from(roundings or list(Rounding))),
        draw(st.sampled_from(modes or list(Overflow))),
    )


@st.composite
def values_for(draw: st.DrawFn, fmt: FixedFormat) -> list[float]:
    """Doubles around ``fmt``: ties, their neighbours, codes, extremes, anything finite."""
    k = st.integers(fmt.min_raw - 4, fmt.max_raw + 4)
    lsb = 2.0**-fmt.frac_bits

    def tie(n: int) -> float:
        return (n + 0.5) * lsb

    near = st.builds(
        lambda t, d: float(np.nextafter(t, math.inf * d)), k.map(tie), st.sampled_from([-1, 1])
    )
    anything = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True)
    return draw(
        st.lists(
            st.one_of(k.map(tie), near, k.map(lambda n: n * lsb), anything), min_size=1, max_size=40
        )
    )


@st.composite
def format_and_values(draw: st.DrawFn, **kw: object) -> tuple[FixedFormat, list[float]]:
    fmt = draw(formats(**kw))
    return fmt, draw(values_for(fmt))


def codes_of(fmt: FixedFormat) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(fmt.min_raw, fmt.max_raw), min_size=1, max_size=30)


# -- hand-computed codes (ap_fixed<4,2>: LSB 1/4, codes -8..7) ------------------------
# Ties between codes: 0.125 (0|1), -0.125 (-1|0), 0.375 (1|2), -0.375 (-2|-1).
HAND_ROUNDING = {
    Rounding.TRN: [0, -1, 1, -2],
    Rounding.TRN_ZERO: [0, 0, 1, -1],
    Rounding.RND: [1, 0, 2, -1],
    Rounding.RND_ZERO: [0, 0, 1, -1],
    Rounding.RND_INF: [1, -1, 2, -2],
    Rounding.RND_MIN_INF: [0, -1, 1, -2],
    Rounding.RND_CONV: [0, 0, 2, -2],
}


@pytest.mark.parametrize("mode", list(Rounding))
def test_rounding_modes_on_hand_computed_ties(mode: Rounding) -> None:
    fmt = FixedFormat(4, 2, True, mode, Overflow.SAT)
    got = fmt.quantize([0.125, -0.125, 0.375, -0.375]).tolist()
    assert got == HAND_ROUNDING[mode]


# (x, rounding) -> codes for WRAP, SAT, SAT_ZERO, SAT_SYM in ap_fixed<4,2>.
HAND_OVERFLOW = [
    (1.875, Rounding.RND, [-8, 7, 0, 7]),  # rounds up to 8: overflow after rounding
    (1.875, Rounding.TRN, [7, 7, 7, 7]),
    (-2.125, Rounding.TRN, [7, -8, 0, -7]),  # floor -9
    (-2.125, Rounding.RND, [-8, -8, -8, -7]),  # rounds to -8: in range
    (-2.0, Rounding.TRN, [-8, -8, -8, -7]),  # SAT_SYM never gives the most negative code
    (5.0, Rounding.TRN, [4, 7, 0, 7]),  # 20 wraps to 4
    (-1e30, Rounding.RND, [0, -8, 0, -7]),  # -1e30 * 4 is a multiple of 16
]


@pytest.mark.parametrize(("x", "rounding", "codes"), HAND_OVERFLOW)
def test_overflow_modes_on_hand_computed_values(
    x: float, rounding: Rounding, codes: list[int]
) -> None:
    got = [FixedFormat(4, 2, True, rounding, o).quantize(x).item() for o in Overflow]
    assert got == codes


def test_unsigned_and_one_bit_edges_by_hand() -> None:
    u = "ap_ufixed<4,2,{},{}>"
    assert FixedFormat.parse(u.format("AP_TRN", "AP_WRAP")).quantize(-0.125).item() == 15
    assert FixedFormat.parse(u.format("AP_TRN", "AP_SAT")).quantize(-0.125).item() == 0
    assert FixedFormat.parse(u.format("AP_RND", "AP_SAT_ZERO")).quantize(-0.125).item() == 0
    assert FixedFormat.parse(u.format("AP_TRN", "AP_SAT_SYM")).quantize(5.0).item() == 15
    # 1-bit signed SAT_SYM has no symmetric range: it saturates like SAT.
    one = FixedFormat.parse("ap_fixed<1,1,AP_TRN,AP_SAT_SYM>")
    assert one.quantize([-5.0, -1.0, -0.5, 0.0, 3.0]).tolist() == [-1, -1, -1, 0, 0]
    # a negative subnormal truncates to -1 LSB even when x * 2**F underflows
    assert FixedFormat(8, 20).quantize([-5e-324, 5e-324, -0.0]).tolist() == [-1, 0, 0]


def test_round_shift_by_hand() -> None:
    x = np.array([5, -5, 6, -6, 7, -7])  # /4: 1.25 -1.25 1.5 -1.5 1.75 -1.75
    assert round_shift(x, 2, Rounding.TRN).tolist() == [1, -2, 1, -2, 1, -2]
    assert round_shift(x, 2, Rounding.RND).tolist() == [1, -1, 2, -1, 2, -2]
    assert round_shift(x, 2, Rounding.RND_CONV).tolist() == [1, -1, 2, -2, 2, -2]
    assert round_shift(x, 2, Rounding.RND_ZERO).tolist() == [1, -1, 1, -1, 2, -2]
    assert round_shift(x, -3).tolist() == [40, -40, 48, -48, 56, -56]


def test_shifts_by_hand() -> None:
    f = FixedFormat.parse("ap_fixed<4,2>")
    assert shl([3, -3, 5], f, 1).tolist() == [6, -6, -6]  # 10 wraps to -6
    assert shr([3, -3, 5], f, 1).tolist() == [1, -2, 2]
    assert shl([3], f, 4).tolist() == [0]


# -- properties against the exact model ----------------------------------------------
@SETTINGS
@given(format_and_values())
def test_quantize_matches_exact_model(fv: tuple[FixedFormat, list[float]]) -> None:
    fmt, xs = fv
    assert fmt.quantize(np.array(xs)).tolist() == [ref_quantize(x, fmt) for x in xs]


@SETTINGS
@given(formats(), formats(), st.data())
def test_cast_matches_exact_model(src: FixedFormat, dst: FixedFormat, data: st.DataObject) -> None:
    codes = data.draw(codes_of(src))
    shift = src.frac_bits - dst.frac_bits
    if shift > 0:  # add the exact ties of dst (dropped bits 100..0), where src has them
        ties = [(c >> shift << shift) + (1 << (shift - 1)) for c in codes]
        codes += [c for c in ties if src.min_raw <= c <= src.max_raw]
    assert cast(np.array(codes), src, dst).tolist() == [ref_cast(r, src, dst) for r in codes]


@SETTINGS
@given(
    st.integers(-(2**61), 2**61),
    st.integers(-30, 70),
    st.sampled_from(list(Rounding)),
    st.booleans(),
)
def test_round_shift_matches_exact_model(r: int, shift: int, mode: Rounding, tie: bool) -> None:
    if shift < 0 and abs(r) << -shift >= 2**62:
        return  # refused by design; covered by test_round_shift_refuses_overflow
    if tie and 0 < shift < 62:  # make the dropped bits exactly one half
        r = (r >> shift << shift) + (1 << (shift - 1))
    want = ref_round(Fraction(r, 2**shift) if shift >= 0 else Fraction(r << -shift), mode)
    assert round_shift(np.int64(r), shift, mode).item() == want


@SETTINGS
@given(formats(max_width=31), formats(max_width=31), st.data())
def test_arithmetic_is_exact_and_fits_its_result_format(
    fa: FixedFormat, fb: FixedFormat, data: st.DataObject
) -> None:
    n = data.draw(st.integers(1, 20))
    a = data.draw(st.lists(st.integers(fa.min_raw, fa.max_raw), min_size=n, max_size=n))
    b = data.draw(st.lists(st.integers(fb.min_raw, fb.max_raw), min_size=n, max_size=n))
    va, vb = fa.to_fractions(a), fb.to_fractions(b)
    for op, fn in [(lambda x, y: x + y, add), (lambda x, y: x - y, sub), (lambda x, y: x * y, mul)]:
        if fn is not mul and max(fa.int_bits, fb.int_bits) - min(fa.int_bits, fb.int_bits) > 25:
            continue  # the aligned sum would exceed MAX_RAW_BITS (see the error-path tests)
        raw, fr = fn(np.array(a), fa, np.array(b), fb)
        assert fr.contains(raw)
        assert fr.to_fractions(raw) == [op(x, y) for x, y in zip(va, vb, strict=True)]


# -- structural properties ----------------------------------------------------------
SAT_MODES = [Overflow.SAT, Overflow.SAT_SYM]


@SETTINGS
@given(format_and_values())
def test_codes_stay_in_range_and_saturate_to_the_bounds(
    fv: tuple[FixedFormat, list[float]],
) -> None:
    fmt, xs = fv
    q = fmt.quantize(xs)
    assert fmt.contains(q)
    sym = fmt.overflow is Overflow.SAT_SYM and fmt.signed and fmt.width > 1
    if sym:
        assert (q != fmt.min_raw).all()
    if fmt.overflow in SAT_MODES:
        x = np.array(xs)
        assert (q[x >= float(fmt.max)] == fmt.max_raw).all()
        assert (q[x <= float(fmt.min)] == (-fmt.max_raw if sym else fmt.min_raw)).all()


@SETTINGS
@given(format_and_values())
def test_cast_to_the_same_format_is_idempotent(fv: tuple[FixedFormat, list[float]]) -> None:
    fmt, xs = fv
    q = fmt.quantize(xs)
    assert np.array_equal(cast(q, fmt, fmt), q)
    if fmt.width <= 53:  # to_float is exact there
        assert np.array_equal(fmt.quantize(fmt.to_float(q)), q)


@SETTINGS
@given(format_and_values(modes=SAT_MODES))
def test_quantize_is_monotone_for_saturating_modes(fv: tuple[FixedFormat, list[float]]) -> None:
    fmt, xs = fv
    q = fmt.quantize(np.sort(np.array(xs)))
    assert (np.diff(q) >= 0).all()


@SETTINGS
@given(
    formats(max_width=40, modes=[Overflow.SAT], roundings=list(Rounding)),
    st.integers(1, 12),
    st.integers(0, 6),
    st.data(),
)
def test_narrow_then_widen_error_is_bounded(
    wide: FixedFormat, drop_frac: int, drop_int: int, data: st.DataObject
) -> None:
    """Wide -> narrow (fewer fraction and integer bits) -> wide: the error is at most
    half a narrow LSB for the round-to-nearest modes and below one for the truncations,
    for every value inside the narrow range."""
    narrow = FixedFormat(
        max(1, wide.width - drop_frac - drop_int),
        wide.int_bits - drop_int,
        wide.signed,
        wide.rounding,
        Overflow.SAT,
    )
    if narrow.frac_bits > wide.frac_bits:
        return  # width clamp at 1 made it finer; not a narrowing
    codes = np.array(data.draw(codes_of(wide)))
    back = cast(cast(codes, wide, narrow), narrow, wide.with_modes(Rounding.TRN, Overflow.WRAP))
    inside = (codes >= narrow.min_raw << (wide.frac_bits - narrow.frac_bits)) & (
        codes <= narrow.max_raw << (wide.frac_bits - narrow.frac_bits)
    )
    err = np.abs(back - codes)[inside]  # in wide LSBs
    step = 1 << (wide.frac_bits - narrow.frac_bits)  # one narrow LSB
    if wide.rounding in RND_MODES:
        assert (2 * err <= step).all()
    else:
        assert (err < step).all()


@SETTINGS
@given(formats())
def test_format_string_round_trip(fmt: FixedFormat) -> None:
    text = str(fmt)
    assert FixedFormat.parse(text) == fmt
    assert FixedFormat.parse(f"  {text.replace(',', ' , ')} ") == fmt
    long = f"{'ap_fixed' if fmt.signed else 'ap_ufixed'}<{fmt.width},{fmt.int_bits},"
    long += f"{fmt.rounding.value},{fmt.overflow.value},0>"
    assert FixedFormat.parse(long) == fmt
    assert hash(FixedFormat.parse(long)) == hash(fmt)


def test_parse_defaults_and_int_spellings() -> None:
    assert FixedFormat.parse("ap_fixed<8,3>") == FixedFormat(8, 3, True, "AP_TRN", "AP_WRAP")
    assert FixedFormat.parse("ap_uint<5>") == FixedFormat(5, 5, False)
    assert str(FixedFormat(8, 3, True, Rounding.RND)) == "ap_fixed<8,3,AP_RND>"
    assert str(FixedFormat(8, 3, False, Rounding.TRN, Overflow.SAT)) == (
        "ap_ufixed<8,3,AP_TRN,AP_SAT>"
    )


def test_empty_in_empty_out() -> None:
    f = FixedFormat.parse("ap_fixed<8,3,AP_RND,AP_SAT>")
    e = np.array([], dtype=np.int64)
    for got in [f.quantize([]), f.quantize(np.empty((2, 0))), f.saturate(e), cast(e, f, f)]:
        assert got.dtype == np.int64
        assert got.size == 0
    assert f.quantize(np.empty((2, 0))).shape == (2, 0)
    raw, fr = add(e, f, e, f)
    assert raw.shape == (0,)
    assert fr == FixedFormat(9, 4)
    assert f.to_float(e).shape == (0,)
    assert len(FixedArray(e, f)) == 0


def test_quantize_keeps_shape_and_accepts_scalars_ints_float32() -> None:
    f = FixedFormat.parse("ap_fixed<8,3,AP_RND,AP_SAT>")
    assert f.quantize(np.full((2, 3), 0.3)).shape == (2, 3)
    assert f.quantize(0.3).shape == ()
    assert f.quantize(np.array([1, -2, 3], dtype=np.int16)).tolist() == [32, -64, 96]
    assert f.quantize(np.float32(0.30000001192092896)).item() == 10


# -- error paths (exact messages) ------------------------------------------------------
F8 = FixedFormat.parse("ap_fixed<8,3>")


@pytest.mark.parametrize(("x", "shown"), [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_quantize_refuses_non_finite(x: float, shown: str) -> None:
    msg = (
        f"cannot quantize non-finite value {shown} to ap_fixed<8,3>; "
        "replace NaN/inf first (e.g. with np.nan_to_num)"
    )
    with pytest.raises(FixedPointError, match=f"^{re.escape(msg)}$"):
        F8.quantize([0.5, x, 1.0])


def test_quantize_refuses_non_numbers_and_huge_ints() -> None:
    with pytest.raises(
        FixedPointError, match=r"^quantize expects real numbers, got dtype <U1; pass a float array$"
    ):
        F8.quantize(["a"])
    with pytest.raises(
        FixedPointError,
        match=r"^integer input with \|x\| >= 2\*\*53 cannot be converted exactly; pass floats$",
    ):
        F8.quantize(np.array([2**53], dtype=np.int64))
    if np.dtype(np.longdouble).itemsize > 8:  # x86-64: 80-bit long double
        msg = (
            f"quantize works on float64; {np.dtype(np.longdouble)} input would be rounded to "
            "float64 first (a second rounding). Convert it explicitly if that is intended"
        )
        with pytest.raises(FixedPointError, match=f"^{re.escape(msg)}$"):
            F8.quantize(np.array([0.3], dtype=np.longdouble))


@pytest.mark.parametrize(("w", "i"), [(0, 0), (-3, 2)])
def test_zero_and_negative_widths(w: int, i: int) -> None:
    msg = f"width must be >= 1, got width={w} ({SYNTAX})"
    with pytest.raises(FixedPointError, match=f"^{re.escape(msg)}$"):
        FixedFormat(w, i)
    with pytest.raises(FixedPointError, match=f"^{re.escape(msg)}$"):
        FixedFormat.parse(f"ap_fixed<{w},{i}>")


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        ("fixed<8,3>", f"malformed fixed-point format 'fixed<8,3>'; expected {SYNTAX}"),
        ("ap_fixed<8>", f"malformed fixed-point format 'ap_fixed<8>'; expected {SYNTAX}"),
        ("ap_fixed<8,3", f"malformed fixed-point format 'ap_fixed<8,3'; expected {SYNTAX}"),
        (
            "ap_fixed<8,x>",
            f"width and integer bits must be integers in 'ap_fixed<8,x>'; expected {SYNTAX}",
        ),
        (
            "ap_fixed<8,3,AP_FOO>",
            "unknown rounding mode 'AP_FOO' in 'ap_fixed<8,3,AP_FOO>'; expected one of "
            "AP_TRN, AP_TRN_ZERO, AP_RND, AP_RND_ZERO, AP_RND_INF, AP_RND_MIN_INF, AP_RND_CONV",
        ),
        (
            "ap_fixed<8,3,AP_RND,AP_SATURATE>",
            "unknown overflow mode 'AP_SATURATE' in 'ap_fixed<8,3,AP_RND,AP_SATURATE>'; "
            "expected one of AP_WRAP, AP_SAT, AP_SAT_ZERO, AP_SAT_SYM",
        ),
        (
            "ap_fixed<8,3,AP_RND,AP_WRAP,2>",
            "saturation bits N=2 in 'ap_fixed<8,3,AP_RND,AP_WRAP,2>' are not supported (only N=0)",
        ),
        ("ap_int<8,3>", "ap_int takes one argument (width), got 'ap_int<8,3>'"),
    ],
)
def test_malformed_format_strings(text: str, msg: str) -> None:
    with pytest.raises(FixedPointError, match=f"^{re.escape(msg)}$"):
        FixedFormat.parse(text)


def test_non_string_format_and_bad_fields() -> None:
    with pytest.raises(
        FixedPointError, match=f"^{re.escape(f'format must be a string like {SYNTAX}; got 8')}$"
    ):
        FixedFormat.parse(8)  # type: ignore[arg-type]
    with pytest.raises(FixedPointError, match=r"^width must be an integer, got 8\.0$"):
        FixedFormat(8.0, 3)  # type: ignore[arg-type]
    with pytest.raises(FixedPointError, match=r"^unknown overflow mode 'SAT'; expected one of "):
        F8.with_modes(overflow="SAT")


WIDE = FixedFormat.parse("ap_fixed<63,10>")


def test_widths_beyond_the_raw_path() -> None:
    def msg(what: str) -> str:
        return (
            f"^{re.escape(f'ap_fixed<63,10> is 63 bits wide; the int64 {what} supports at most ')}"
            f"62 bits\\. Use a narrower format\\.$"
        )

    with pytest.raises(FixedPointError, match=msg("quantize")):
        WIDE.quantize([0.5])
    with pytest.raises(FixedPointError, match=msg("cast")):
        cast([1], F8, WIDE)
    with pytest.raises(FixedPointError, match=msg("cast")):
        cast([1], WIDE, F8)
    with pytest.raises(FixedPointError, match=msg("saturate")):
        WIDE.saturate([1])
    add_msg = (
        "ap_fixed<62,10> + ap_fixed<8,3> needs an exact ap_fixed<63,11> (63 bits); "
        "the int64 raw path supports 62. Cast the operands to narrower formats first."
    )
    assert add([0], FixedFormat(61, 10), [0], F8)[1].width == 62  # at the limit: fine
    with pytest.raises(FixedPointError, match=f"^{re.escape(add_msg)}$"):
        add([0], FixedFormat(62, 10), [0], F8)
    mul_msg = (
        "ap_fixed<32,16> * ap_fixed<32,16> needs an exact ap_fixed<64,32> (64 bits); "
        "the int64 raw path supports 62. Cast the operands to narrower formats first."
    )
    f32 = FixedFormat(32, 16)
    with pytest.raises(FixedPointError, match=f"^{re.escape(mul_msg)}$"):
        mul([1], f32, [1], f32)
    f62 = FixedFormat(62, 10)
    with pytest.raises(FixedPointError, match=r"^ap_fixed<62,10> - ap_fixed<62,10> needs an exact"):
        sub([1], f62, [1], f62)


def test_float_arrays_are_refused_where_raw_codes_are_expected() -> None:
    def msg(what: str) -> str:
        return (
            f"^{re.escape(what)} must be raw integer codes, got dtype float64; "
            f"convert reals with FixedFormat\\.quantize$"
        )

    x = np.array([1.0, 2.5])
    with pytest.raises(FixedPointError, match=msg("cast input (raw codes of ap_fixed<8,3>)")):
        cast(x, F8, F8)
    with pytest.raises(FixedPointError, match=msg("add operand a (raw codes of ap_fixed<8,3>)")):
        add(x, F8, [1, 2], F8)
    with pytest.raises(FixedPointError, match=msg("mul operand b (raw codes of ap_fixed<8,3>)")):
        mul([1, 2], F8, x, F8)
    with pytest.raises(FixedPointError, match=msg("saturate")):
        F8.saturate(x)
    with pytest.raises(FixedPointError, match=msg("to_float of ap_fixed<8,3>")):
        F8.to_float(x)
    with pytest.raises(FixedPointError, match=msg("round_shift input")):
        round_shift(x, 2)
    with pytest.raises(FixedPointError, match=msg("raw (raw codes of ap_fixed<8,3>)")):
        FixedArray(x, F8)  # type: ignore[arg-type]


def test_out_of_range_codes_are_refused() -> None:
    msg = "cast input raw code 200 is outside ap_fixed<8,3> (raw range [-128, 127])"
    with pytest.raises(FixedPointError, match=f"^{re.escape(msg)}$"):
        cast([1, 200], F8, FixedFormat(16, 8))
    msg = "add operand b raw code -129 is outside ap_fixed<8,3> (raw range [-128, 127])"
    with pytest.raises(FixedPointError, match=f"^{re.escape(msg)}$"):
        add([1, 2], F8, [0, -129], F8)


def test_round_shift_refuses_overflow_and_bad_arguments() -> None:
    with pytest.raises(
        FixedPointError,
        match=r"^left shift by 3 of codes up to 1152921504606846976 exceeds the int64 raw path$",
    ):
        round_shift([2**60], -3)
    with pytest.raises(FixedPointError, match=r"^shift must be an integer, got 1\.5$"):
        round_shift([1], 1.5)  # type: ignore[arg-type]
    with pytest.raises(
        FixedPointError, match=r"^unknown rounding mode 'AP_ROUND'; expected one of"
    ):
        round_shift([1], 1, "AP_ROUND")
    with pytest.raises(FixedPointError, match=r"^shift amount must be >= 0, got -1$"):
        shl([1], F8, -1)


def _float32_stress(fmt: FixedFormat, rng: np.random.Generator) -> np.ndarray:
    """float32 values around every rounding decision of ``fmt``: halves of the LSB and
    their float32 neighbours, tiny values, random values over many binades."""
    lsb = 2.0**-fmt.frac_bits
    k = rng.integers(-(1 << min(fmt.width, 20)), 1 << min(fmt.width, 20), 2000)
    half = ((k + 0.5) * lsb).astype(np.float32)
    vals = [
        half,
        np.nextafter(half, np.float32(np.inf)),
        np.nextafter(half, np.float32(-np.inf)),
        (k * lsb).astype(np.float32),
        np.float32([0.0, -0.0, 2.0**-40, -(2.0**-40), 2.0**-149, -(2.0**-149)]),
        (rng.standard_normal(4000) * 2.0 ** rng.integers(-30, 30, 4000)).astype(np.float32),
        np.float32([fmt.max, fmt.min, 1e30, -1e30]),
    ]
    return np.concatenate(vals).astype(np.float32)


@pytest.mark.parametrize(
    "text",
    [
        "ap_fixed<8,3,AP_RND,AP_SAT>",
        "ap_fixed<16,6,AP_RND,AP_SAT>",
        "ap_fixed<16,6,AP_TRN,AP_SAT_SYM>",
        "ap_ufixed<12,2,AP_RND,AP_SAT>",
        "ap_fixed<24,1,AP_RND,AP_SAT>",
        "ap_fixed<32,12,AP_RND,AP_SAT>",
        "ap_fixed<52,20,AP_RND,AP_SAT>",
        "ap_fixed<53,20,AP_RND,AP_SAT>",
        "ap_fixed<16,6,AP_RND_CONV,AP_SAT>",
    ],
)
def test_quantize_float32_fast_path_matches_general_path(text: str) -> None:
    """quantize of float32 arrays (the path site tensors from onnxruntime take: one
    scaling pass, floor(s + 1/2) for AP_RND) equals the general float64 path, which
    tests/test_fixed_oracle.py checks against ap_fixed, on every rounding decision."""
    fmt = FixedFormat.parse(text)
    x = _float32_stress(fmt, np.random.default_rng(5))
    fast = fmt.quantize(x)
    general = fmt._quantize_flat(x.astype(np.float64))
    assert np.array_equal(fast, general)
