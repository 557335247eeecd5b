"""GELU models: reference accuracy, bit-exactness against naive re-implementations,
error bounds (derived in each test), formats, and bad-input errors."""

from __future__ import annotations

import dataclasses
import math
import re
from fractions import Fraction

import numpy as np
import pytest

from hwapprox.approx.base import SpecError
from hwapprox.approx.gelu import (
    EdgeMoeGelu,
    IBertGelu,
    LutGelu,
    PwlGelu,
    ShiftGelu,
    erf,
    erfc,
    gelu_reference,
)
from hwapprox.approx.registry import make_spec, spec_from_config
from hwapprox.fixed import FixedFormat

ALL = [IBertGelu, ShiftGelu, EdgeMoeGelu, PwlGelu, LutGelu]
#: max |GELU''| = 2·φ(0) (GELU'' = φ(x)(2 - x²)); max GELU' = 1.1289 at x = √2
D2_MAX = 2.0 / math.sqrt(2.0 * math.pi)
D1_MAX = 1.129


def _gelu_math(x: np.ndarray) -> np.ndarray:
    """Independent reference: ``x/2·erfc(-x/√2)`` with ``math.erfc`` per element."""
    return np.array([v * 0.5 * math.erfc(-v / math.sqrt(2.0)) for v in x.tolist()])


def _codes_and_values(spec, lo=None, hi=None):
    codes = spec.in_fmt.all_codes()
    x = spec.in_fmt.to_float(codes)
    if lo is not None:
        keep = (x >= lo) & (x <= hi)
        codes, x = codes[keep], x[keep]
    return codes, x


def _round_half_up(q: Fraction) -> int:
    return math.floor(q + Fraction(1, 2))


# -- float64 reference --------------------------------------------------------------
def test_erf_within_1e15_of_math_erf():
    rng = np.random.default_rng(1)
    x = np.concatenate([np.linspace(-7, 7, 40001), rng.uniform(-6, 6, 20000), [0.0, 2.0, -2.0]])
    want = np.array([math.erf(v) for v in x])
    assert np.abs(erf(x) - want).max() < 1e-15


def test_erfc_relative_accuracy_in_the_tail():
    x = np.linspace(0.0, 26.0, 30001)
    want = np.array([math.erfc(v) for v in x])
    rel = np.abs(erfc(x) - want) / want
    assert rel.max() < 1e-13
    assert erfc(np.array([40.0]))[0] == 0.0
    assert erf(np.array([np.inf, -np.inf])).tolist() == [1.0, -1.0]


def test_gelu_reference_erf_and_tanh_forms():
    x = np.linspace(-12, 12, 4801)
    ref = _gelu_math(x)
    got = gelu_reference(x)
    assert np.all(np.abs(got - ref) <= 1e-13 * np.abs(ref) + 1e-300)
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
    tanh_form = np.array([0.5 * a * (1 + math.tanh(b)) for a, b in zip(x, u, strict=True)])
    assert np.abs(gelu_reference(x, "tanh") - tanh_form).max() < 1e-14
    with pytest.raises(SpecError, match=r"^form='sigmoid' is not a GELU reference form"):
        gelu_reference(x, "sigmoid")


# -- shared contract ------------------------------------------------------------------
@pytest.mark.parametrize("cls", ALL)
def test_defaults_registry_and_config_round_trip(cls):
    spec = make_spec("gelu", cls.method)
    assert type(spec) is cls
    assert spec == cls()
    assert spec_from_config(spec.to_config()) == spec
    assert spec.source
    assert str(spec.operator) == "gelu"
    assert all(isinstance(v, int) for v in spec.hw_params().values())
    assert spec.cost().score() >= 0
    x = np.linspace(-3, 3, 13).reshape(13, 1)
    assert spec.evaluate(x).shape == x.shape


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("out", ["ap_fixed<8,2,AP_RND,AP_SAT>", "ap_fixed<8,2,AP_TRN,AP_WRAP>"])
def test_every_code_of_a_small_format_lands_in_out_fmt(cls, out):
    kw = {"in_fmt": "ap_fixed<8,3,AP_RND,AP_SAT>", "out_fmt": out}
    if cls is IBertGelu:
        kw["erf_shift"] = 6  # 5 input fraction bits: see the erf_shift check
    spec = cls(**kw)
    y = spec.model(spec.in_fmt.all_codes())
    assert spec.out_fmt.contains(y)
    assert y.dtype == np.int64
    if spec.out_fmt.overflow == "AP_SAT":
        # GELU of [-4, 4) lies in [-0.17, 4): saturating outputs clamp at the top only.
        x = spec.in_fmt.to_float(spec.in_fmt.all_codes())
        assert (y[x >= 2.5] == spec.out_fmt.max_raw).all()


@pytest.mark.parametrize("cls", ALL)
def test_form_field_and_unsigned_input_refused(cls):
    name = cls.__name__
    with pytest.raises(
        SpecError, match=rf"^{name}\.form='exact': expected one of 'erf', 'tanh', 'quick', 'silu'$"
    ):
        cls(form="exact")
    with pytest.raises(SpecError, match=rf"^{name}\.in_fmt='ap_ufixed<8,3>': must be signed"):
        cls(in_fmt="ap_ufixed<8,3>")


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (
            lambda: ShiftGelu(in_fmt="ap_fixed<40,30>", n=1, sigmoid_bits=31),
            r"^ShiftGelu\.sigmoid_bits=31: x·sigmoid with in_fmt ap_fixed<40,30> needs 71 bits; "
            r"int64 allows 62$",
        ),
        (
            lambda: PwlGelu(in_fmt="ap_fixed<40,10>", slope_fmt="ap_fixed<30,2>"),
            r"^PwlGelu\.slope_fmt='ap_fixed<30,2>': .* needs 72-bit sums; int64 allows 62$",
        ),
        (
            lambda: EdgeMoeGelu(in_fmt="ap_fixed<40,38>", entry_fmt="ap_ufixed<32,0>"),
            r"^EdgeMoeGelu\.entry_fmt='ap_ufixed<32,0>': .* needs 72-bit intermediates",
        ),
        (
            lambda: IBertGelu(in_fmt="ap_fixed<40,4>"),
            r"^IBertGelu\.in_fmt='ap_fixed<40,4>': needs \d+-bit intermediates",
        ),
        (
            lambda: LutGelu(out_fmt="ap_fixed<41,4>"),
            r"^LutGelu\.out_fmt='ap_fixed<41,4>': at most 40",
        ),
    ],
)
def test_int64_width_limits_are_refused(make, pattern):
    with pytest.raises(SpecError, match=pattern):
        make()


def test_raw_input_checked():
    with pytest.raises(SpecError, match=r"outside ap_fixed<8,3"):
        LutGelu(in_fmt="ap_fixed<8,3>").model(np.array([200]))
    with pytest.raises(SpecError, match=r"integer codes.*got dtype float64"):
        LutGelu(in_fmt="ap_fixed<8,3>").model(np.array([0.5]))


# -- I-BERT ---------------------------------------------------------------------------
def _ibert_float_emulation(x_int: np.ndarray, s: float) -> tuple[np.ndarray, float, dict]:
    """I-BERT ``IntGELU.forward``/``int_erf`` transcribed with float64 ``floor`` (values < 2^53)."""
    k, n = 1.4142, 14
    coeff = [-0.2888, -1.769, 1.0 / -0.2888]
    se = s / k
    b_int = math.floor(coeff[1] / se)
    c_int = math.floor(coeff[2] / se**2)
    xf = x_int.astype(np.float64)
    absx = np.minimum(np.abs(xf), -b_int)
    y = np.sign(xf) * ((absx + b_int) ** 2 + c_int)
    sf = se**2 * coeff[0]
    y = np.floor(y / 2**n)
    sf = sf * 2**n
    shift_int = math.floor(1.0 / sf)
    out = xf * (y + shift_int)
    return out, s * sf / 2, {"b_int": b_int, "c_int": c_int, "erf_one": shift_int}


def test_ibert_matches_the_source_arithmetic_on_every_code():
    spec = IBertGelu()  # ap_fixed<16,5> in and out
    codes = spec.in_fmt.all_codes()
    prod, scale, consts = _ibert_float_emulation(codes, float(spec.in_fmt.lsb))
    p = spec.hw_params()
    assert {k: p[k.upper()] for k in consts} == consts
    v = prod * scale / float(spec.out_fmt.lsb)  # ideal output in LSBs (exact up to 1 ulp)
    y = spec.model(codes)
    sat = (y == spec.out_fmt.max_raw) | (y == spec.out_fmt.min_raw)
    # requantisation: round(v·(1 + e)) with |e| <= 2^-requant_bits
    bound = 0.5 + np.abs(v) * 2.0**-spec.requant_bits + 1e-9
    assert (np.abs(y - v)[~sat] <= bound[~sat]).all()
    assert (v[sat & (y > 0)] >= spec.out_fmt.max_raw - bound[sat & (y > 0)]).all()


def test_ibert_error_bound_on_minus4_to_4():
    spec = IBertGelu()
    codes, x = _codes_and_values(spec, -4, 4)
    y = spec.out_fmt.to_float(spec.model(codes))
    ref = _gelu_math(x)
    # float I-BERT polynomial (no integers): the method's own error
    a, b = -0.2888, -1.769
    z = np.minimum(np.abs(x) / 1.4142, -b)
    float_form = x / 2 * (1 + np.sign(x) * (a * (z + b) ** 2 + 1))
    method = np.abs(float_form - ref).max()
    assert 0.017 < method < 0.0185  # ALGORITHMS.md: L∞ 1.8e-2 on [-4, 4]
    # integer effects: the floors of erf (>> erf_shift) and of 1/scale_erf each move
    # (erf + 1) by < one erf unit |scale_erf|, times |x|/2; b_int/c_int floors move the
    # polynomial by < (2|z + b| + 1)·Se² + Se²·|a|... bounded by 2 erf units as well.
    s = float(spec.in_fmt.lsb)
    scale_erf = (s / 1.4142) ** 2 * 0.2888 * 2**spec.erf_shift
    bound = method + 4 * 4 * scale_erf / 2 + 0.5 * float(spec.out_fmt.lsb) + 4 * 2.0**-24
    err = np.abs(y - ref).max()
    assert err <= bound
    assert err > method - 0.001  # the integer model keeps the method's error


def test_ibert_bad_fields():
    with pytest.raises(SpecError, match=r"^IBertGelu\.erf_shift=41: must be in \[0, 40\]$"):
        IBertGelu(erf_shift=41)
    with pytest.raises(
        SpecError,
        match=r"^IBertGelu\.erf_shift=14: .*ap_fixed<8,4> with \|erf_one\| = 1 < 16 .*"
        r"use erf_shift <= 6 or more input fraction bits$",
    ):
        IBertGelu(in_fmt="ap_fixed<8,4>")
    with pytest.raises(SpecError, match=r"^IBertGelu\.requant_bits=1: must be in \[2, 32\]$"):
        IBertGelu(requant_bits=1)


# -- I-ViT ShiftGELU ------------------------------------------------------------------
def _ivit_float_emulation(x_int: np.ndarray, s: float, n: int, out_bits: int) -> np.ndarray:
    """I-ViT ``IntGELU`` transcribed with float64 floors, row max replaced by max(x, 0)."""

    def int_exp_shift(v, sf):
        v = v + np.floor(v / 2) - np.floor(v / 2**4)
        x0 = math.floor(-1.0 / sf)
        v = np.maximum(v, n * x0)
        q = np.floor(v / x0)
        r = v - x0 * q
        e = r / 2 - x0
        return np.maximum(np.floor(e * 2.0 ** (n - q)), 0)

    pre = x_int.astype(np.float64)
    sf_sig = s * 1.702
    x_max = np.maximum(pre, 0.0)
    e1 = int_exp_shift(pre - x_max, sf_sig)
    e2 = int_exp_shift(-x_max, sf_sig)
    total = np.minimum(e1 + e2, 2**31 - 1)
    factor = np.floor((2**31 - 1) / total)
    sig = np.floor(e1 * factor / 2 ** (31 - out_bits + 1))
    return pre * sig  # scale s·2^-(out_bits-1)


@pytest.mark.parametrize(
    ("in_fmt", "n", "bits"),
    [("ap_fixed<8,4,AP_RND,AP_SAT>", 23, 8), ("ap_fixed<10,4>", 8, 8), ("ap_fixed<8,3>", 12, 12)],
)
def test_shiftgelu_matches_the_source_arithmetic(in_fmt, n, bits):
    f_in = FixedFormat.parse(in_fmt).frac_bits
    out = f"ap_fixed<{f_in + bits - 1 + 6},6>"  # holds x·sig exactly: no output rounding
    spec = ShiftGelu(in_fmt=in_fmt, out_fmt=out, n=n, sigmoid_bits=bits)
    codes = spec.in_fmt.all_codes()
    want = _ivit_float_emulation(codes, float(spec.in_fmt.lsb), n, bits)
    assert np.array_equal(spec.model(codes), want.astype(np.int64))


def test_shiftgelu_sigmoid_is_bounded_and_error_reported_at_good_n():
    # With a small n the integer divide keeps enough bits: error of the x·σ(1.702x) form
    # (0.0203) plus the shift-exp's 1.4375-for-log2(e) and 1 + f/2 errors and the
    # floored 8-bit sigmoid (|x|·2^-7): measured 0.0534 on [-4, 4] (bound 0.06).
    spec = ShiftGelu(n=8)
    codes, x = _codes_and_values(spec, -4, 4)
    y = spec.out_fmt.to_float(spec.model(codes))
    assert np.abs(y - _gelu_math(x)).max() < 0.06
    sig = spec.model(codes) * 2.0**-spec.out_fmt.frac_bits / np.where(x == 0, 1, x)
    assert ((sig >= 0) & (sig <= 1 - 2.0**-7))[x != 0].all()


def test_shiftgelu_refuses_an_exp_sum_that_would_clamp():
    """The refusal names a usable n: the accepted n with the smallest error (n at the
    limit is accepted too, but loses precision: 2048 LSB at n = 19)."""
    with pytest.raises(
        SpecError,
        match=r"^ShiftGelu\.n=23: lets the exp sum reach 2·1204·2\^23 > 2\^31-1 with in_fmt "
        r"ap_fixed<16,5> \(x0=-1204\); use n = (\d+) \(max error ([\d.]+) where out_fmt "
        r"holds GELU\(x\); any n <= 19 is accepted, the largest are not the most accurate\)$",
    ) as info:
        ShiftGelu(in_fmt="ap_fixed<16,5>")
    m = re.search(r"use n = (\d+) \(max error ([\d.]+)", str(info.value))
    assert m is not None
    advised = ShiftGelu(in_fmt="ap_fixed<16,5>", n=int(m.group(1)))
    limit = ShiftGelu(in_fmt="ap_fixed<16,5>", n=19)  # the limit itself is accepted
    codes = np.arange(advised.in_fmt.min_raw, advised.in_fmt.max_raw + 1)
    ref = advised.reference(advised.in_fmt.to_float(codes))
    inside = np.abs(ref) <= advised.out_fmt.max
    err = {
        s.n: np.abs(s.out_fmt.to_float(s.model(codes)) - ref)[inside].max()
        for s in (advised, limit)
    }
    assert err[advised.n] == pytest.approx(float(m.group(2)), rel=1e-2)
    assert err[advised.n] < 0.2  # usable: a fraction of the output range
    assert err[19] > 10 * err[advised.n]
    with pytest.raises(SpecError, match=r"^ShiftGelu\.sigmoid_bits=1: must be in \[2, 31\]$"):
        ShiftGelu(sigmoid_bits=1)


# -- Edge-MoE -------------------------------------------------------------------------
def test_shiftgelu_hint_memo_is_the_fresh_search_and_keyed_on_every_field_but_n():
    """The refusal's advised n (memoised per process: the --budget search rejects the
    same candidates at every GELU site) equals a fresh search; a spec differing from a
    memoised one in any field but n, or another n_max, is searched afresh."""
    from hwapprox.approx import gelu

    gelu._BEST_N.clear()
    base = ShiftGelu(in_fmt="ap_fixed<16,5>", n=8)
    want = base._best_n_fresh(12)
    assert base._best_n(12) == want
    assert base._best_n(12) == want  # from the memo
    assert dataclasses.replace(base, n=9)._best_n(12) == want  # n does not enter the search
    variants = [
        (base, 5),
        (dataclasses.replace(base, out_fmt="ap_fixed<16,6>"), 12),
        (dataclasses.replace(base, sigmoid_bits=10), 12),
        (dataclasses.replace(base, in_fmt="ap_fixed<16,4>"), 12),
        (dataclasses.replace(base, form="quick"), 12),
    ]
    for spec, n_max in variants:
        fresh = spec._best_n_fresh(n_max)
        assert fresh != want  # each variant's own answer differs from the memoised one
        assert spec._best_n(n_max) == fresh


def test_edgemoe_table_matches_published_entries():
    t = EdgeMoeGelu().tables()["delta"]
    assert t.shape == (177,)
    assert t.dtype == np.int64
    # Values of GELU_DELTA_TABLE in sharc-lab/Edge-MoE src/gelu.cpp, times 2^22.
    published = {0: 0, 1: 63902, 2: 124540, 3: 181923, 24: 712908, 176: 0}
    assert {i: int(t[i]) for i in published} == published
    # every entry: δ(i/32) = i/32·erfc(i/32/√2)/2 (math.erfc) rounded half up at 2^-22
    want = [
        _round_half_up(Fraction(i / 32 * 0.5 * math.erfc(i / 32 / math.sqrt(2))) * 2**22)
        for i in range(177)
    ]
    assert t.tolist() == want


def _edgemoe_naive(x_raw: int, spec: EdgeMoeGelu) -> int:
    """Scalar, rational transcription of ``gelu(fm_t x)`` with free formats."""
    x = x_raw * spec.in_fmt.lsb
    fe = spec.entry_fmt.frac_bits
    table = [
        _round_half_up(Fraction(float(v)) * 2**fe)
        for v in [i * spec.step * 0.5 * math.erfc(i * spec.step / math.sqrt(2)) for i in range(177)]
    ]
    relu = max(x, Fraction(0))
    ax = abs(x)
    if ax >= (spec.table_size - 1) * Fraction(spec.step):
        y = relu
    else:
        exact = ax / Fraction(spec.step)
        idx = math.floor(exact)
        t = Fraction(math.floor((exact - idx) * 2**fe), 2**fe)  # fm_frac_t: AP_TRN
        a, b = table[idx], table[idx + 1]
        delta = Fraction(math.floor(a + t * (b - a)), 2**fe)  # fm_frac_t: AP_TRN
        y = relu - delta
    q = _round_half_up(y / spec.out_fmt.lsb)  # out_fmt AP_RND
    return max(min(q, spec.out_fmt.max_raw), spec.out_fmt.min_raw)


def test_edgemoe_matches_naive_transcription():
    spec = EdgeMoeGelu()
    rng = np.random.default_rng(7)
    codes = np.concatenate(
        [rng.integers(spec.in_fmt.min_raw, spec.in_fmt.max_raw + 1, 400), [0, 1, -1]]
        + [np.array([-1, 0, 1]) + int(5.5 * 2**11) * s for s in (1, -1)]
        + [np.array([spec.in_fmt.min_raw, spec.in_fmt.max_raw])]
    )
    want = np.array([_edgemoe_naive(int(c), spec) for c in codes])
    assert np.array_equal(spec.model(codes), want)


def test_edgemoe_error_bound_on_every_code():
    spec = EdgeMoeGelu()
    codes, x = _codes_and_values(spec, -8, 8)
    err = np.abs(spec.out_fmt.to_float(spec.model(codes)) - _gelu_math(x))
    # linear interpolation h²/8·max|δ''| (δ'' = φ(t)(t² - 2), max 2φ(0)); entry rounding
    # 2^-23; truncation of the interpolated δ 2^-22; output rounding half an LSB;
    # beyond 5.5 the dropped δ(5.5) ≈ 1.1e-7.
    bound = (1 / 32) ** 2 / 8 * D2_MAX + 1.5 * 2.0**-22 + 0.5 * float(spec.out_fmt.lsb)
    assert err.max() <= bound
    assert err.max() <= 0.7 * float(spec.out_fmt.lsb)  # within 1 output LSB at 16 bits


def test_edgemoe_odd_part_is_exact():
    # GELU(x) - GELU(-x) = x; Edge-MoE keeps it exactly: ReLU(x) - ReLU(-x) = x and the
    # same δ(|x|) on both sides, and x is on the output grid (F_out >= F_in here).
    spec = EdgeMoeGelu(in_fmt="ap_fixed<14,5,AP_RND,AP_SAT>")
    codes = np.arange(1, spec.in_fmt.max_raw + 1)
    diff = spec.model(codes) - spec.model(-codes)
    assert np.array_equal(diff, codes << (spec.out_fmt.frac_bits - spec.in_fmt.frac_bits))


def test_edgemoe_bad_fields():
    with pytest.raises(SpecError, match=r"^EdgeMoeGelu\.step=0\.03: must be a power of two"):
        EdgeMoeGelu(step=0.03)
    with pytest.raises(SpecError, match=r"^EdgeMoeGelu\.table_size=1: must be in \[2, 65536\]$"):
        EdgeMoeGelu(table_size=1)
    with pytest.raises(
        SpecError,
        match=r"^EdgeMoeGelu\.entry_fmt='ap_ufixed<8,-3>': cannot hold the largest correction "
        r"0\.16997",
    ):
        EdgeMoeGelu(entry_fmt="ap_ufixed<8,-3>")
    with pytest.raises(SpecError, match=r"^EdgeMoeGelu\.entry_fmt='ap_fixed<22,1>': must be unsig"):
        EdgeMoeGelu(entry_fmt="ap_fixed<22,1>")


# -- piecewise linear -------------------------------------------------------------------
def _pwl_naive(x_raw: int, spec: PwlGelu) -> int:
    t = spec.tables()
    bp, s, c = t["breakpoints"].tolist(), t["slopes"].tolist(), t["intercepts"].tolist()
    x = x_raw * spec.in_fmt.lsb
    if x_raw < bp[0]:
        y = Fraction(0)
    elif x_raw >= bp[-1]:
        y = x
    else:
        i = max(j for j in range(len(s)) if x_raw >= bp[j])
        y = s[i] * spec.slope_fmt.lsb * x + c[i] * spec.intercept_fmt.lsb
    q = _round_half_up(y / spec.out_fmt.lsb)
    return max(min(q, spec.out_fmt.max_raw), spec.out_fmt.min_raw)


def test_pwl_matches_naive_transcription():
    spec = PwlGelu()
    bp = spec.tables()["breakpoints"]
    rng = np.random.default_rng(3)
    codes = np.concatenate(
        [rng.integers(spec.in_fmt.min_raw, spec.in_fmt.max_raw + 1, 300), bp - 1, bp, bp + 1]
    )
    want = np.array([_pwl_naive(int(c), spec) for c in codes])
    assert np.array_equal(spec.model(codes), want)


def test_pwl_error_bound_and_tables():
    spec = PwlGelu()  # 8 segments on [-4, 4]
    t = spec.tables()
    assert t["breakpoints"].shape == (9,)
    assert t["slopes"].shape == (8,)
    assert np.all(np.diff(t["breakpoints"]) > 0)
    fit = spec.fit()  # float lines on the rounded breakpoints
    assert fit.max_error < 0.0242 / 3  # GQA-LUT (8 segments, [-4, 4]) reports 0.0242
    codes, x = _codes_and_values(spec, -8, 8)
    err = np.abs(spec.out_fmt.to_float(spec.model(codes)) - _gelu_math(x))
    # fit error + sampling slack of the 257-point fit grid + slope rounding (intercept
    # refitted for it) + intercept rounding + output rounding
    widest = max(np.diff(fit.breakpoints))
    bound = (
        fit.max_error
        + (widest / 256) ** 2 / 8 * D2_MAX
        + 0.5 * float(spec.slope_fmt.lsb) * widest / 2
        + 0.5 * float(spec.intercept_fmt.lsb)
        + 0.5 * float(spec.out_fmt.lsb)
    )
    assert err.max() <= bound
    assert err.max() >= fit.max_error - 0.5 * float(spec.out_fmt.lsb)
    # outside [lo, hi]: 0 and x are within 4·Φ(-4) = 1.3e-4 (+ half an LSB)
    out = np.abs(x) > 4
    assert err[out].max() <= 4 * 0.5 * math.erfc(4 / math.sqrt(2)) + 0.5 * float(spec.out_fmt.lsb)


def test_pwl_range_clipped_to_a_narrow_input():
    spec = PwlGelu(in_fmt="ap_fixed<10,2,AP_RND,AP_SAT>")  # [-2, 2): hi = 4 is clipped
    assert spec.fit_range == (-2.0, 2.0 - 2.0**-8)
    bp = spec.tables()["breakpoints"]
    assert (bp[0], bp[-1]) == (spec.in_fmt.min_raw, spec.in_fmt.max_raw)
    codes, x = _codes_and_values(spec)
    err = np.abs(spec.out_fmt.to_float(spec.model(codes)) - _gelu_math(x))
    top = x == x.max()  # the top code alone takes y = x: error x·Φ(-x)
    xm = x.max()
    assert err[top][0] == pytest.approx(xm * 0.5 * math.erfc(xm / math.sqrt(2)), abs=1e-12)
    # fit + output rounding + coefficient rounding (2^-17·(1 + w/2)) + grid slack (< 1e-5)
    coef = 2.0**-17 * (1 + 4 / 2) + 1e-5
    assert err[~top].max() <= spec.fit().max_error + 0.5 * float(spec.out_fmt.lsb) + coef


def test_pwl_fit_is_deterministic_and_cached():
    a, b = PwlGelu(segments=6), PwlGelu(segments=6)
    assert a.fit() == b.fit()
    assert all(np.array_equal(a.tables()[k], b.tables()[k]) for k in a.tables())
    tanh = PwlGelu(segments=6, form="tanh")
    assert not np.array_equal(tanh.tables()["intercepts"], a.tables()["intercepts"])


def test_pwl_bad_fields():
    with pytest.raises(SpecError, match=r"^PwlGelu\.segments=0: must be in \[1, 1024\]$"):
        PwlGelu(segments=0)
    with pytest.raises(SpecError, match=r"^PwlGelu\.hi=-5\.0: must be greater than lo=-4\.0$"):
        PwlGelu(hi=-5.0)
    with pytest.raises(
        SpecError,
        match=r"^PwlGelu\.lo=20\.0: \[lo, hi\] = \[20\.0, 30\.0\] misses the in_fmt "
        r"ap_fixed<16,5,AP_RND,AP_SAT> range \[-16\.0, 15\.99951171875\]$",
    ):
        PwlGelu(lo=20.0, hi=30.0)
    with pytest.raises(
        SpecError, match=r"^PwlGelu\.slope_fmt='ap_fixed<8,0>': cannot hold the fitted value"
    ):
        PwlGelu(slope_fmt="ap_fixed<8,0>")
    # 41 breakpoints cannot be distinct among the 33 codes of [-4, 4] at LSB 1/4
    with pytest.raises(SpecError, match=r"^PwlGelu\.segments=40: breakpoints collide"):
        PwlGelu(in_fmt="ap_fixed<6,4>", segments=40)


# -- direct LUT -----------------------------------------------------------------------
def test_lut_is_the_rounded_reference_on_every_code():
    spec = LutGelu()  # ap_fixed<10,4> -> ap_fixed<10,4>, AP_RND
    codes, x = _codes_and_values(spec)
    y = spec.model(codes)
    assert np.array_equal(y, spec.out_fmt.quantize(_gelu_math(x)))
    err = np.abs(spec.out_fmt.to_float(y) - _gelu_math(x))
    assert err.max() <= 0.5 * float(spec.out_fmt.lsb) + 1e-15
    # monotone where GELU is (minimum at x = -0.7518): rounding is monotone
    assert np.all(np.diff(y[x >= -0.75]) >= 0)
    assert np.all(np.diff(y[x <= -0.76]) <= 0)


def test_lut_top_bits_index_for_a_wide_input():
    spec = LutGelu(in_fmt="ap_fixed<16,5,AP_RND,AP_SAT>", out_fmt="ap_fixed<16,5>", index_bits=12)
    assert spec.hw_params()["INDEX_SHIFT"] == 4
    assert spec.tables()["lut"].shape == (4096,)
    codes, x = _codes_and_values(spec)
    err = np.abs(spec.out_fmt.to_float(spec.model(codes)) - _gelu_math(x))
    # best constant per bin of 16 codes: half the bin's rise, <= (15 LSB_in)·max|GELU'|/2,
    # plus output truncation (AP_TRN: < 1 LSB)
    bound = 15 * float(spec.in_fmt.lsb) * D1_MAX / 2 + float(spec.out_fmt.lsb)
    assert err.max() <= bound


def test_lut_binned_is_monotone_where_gelu_is():
    # bin value = rounded midpoint of the bin's min and max: monotone over bins on
    # which GELU is monotone (bins entirely right of the minimum at -0.7518)
    spec = LutGelu(in_fmt="ap_fixed<12,4,AP_RND,AP_SAT>", out_fmt="ap_fixed<12,4>", index_bits=8)
    lut = spec.tables()["lut"]
    lo_edge = spec.in_fmt.to_float(spec.in_fmt.all_codes()[:: 1 << spec.hw_params()["INDEX_SHIFT"]])
    assert np.all(np.diff(lut[lo_edge >= -0.75]) >= 0)


def test_lut_refuses_wide_inputs():
    with pytest.raises(
        SpecError,
        match=r"^LutGelu\.in_fmt='ap_fixed<16,5>': has 16 bits; a direct LUT allows at most 12 "
        r"index bits: set index_bits <= 12 \(index by the top bits\) or use a narrower in_fmt$",
    ):
        LutGelu(in_fmt="ap_fixed<16,5>")
    with pytest.raises(SpecError, match=r"^LutGelu\.index_bits=13: must be <= 12$"):
        LutGelu(in_fmt="ap_fixed<16,5>", index_bits=13)
    with pytest.raises(SpecError, match=r"^LutGelu\.index_bits=11: must be in \[0, 10\]"):
        LutGelu(index_bits=11)


def test_lut_tanh_form_tabulates_the_tanh_reference():
    spec = LutGelu(form="tanh")
    codes, x = _codes_and_values(spec)
    assert np.array_equal(spec.model(codes), spec.out_fmt.quantize(gelu_reference(x, "tanh")))


# -- quick_gelu (form="quick": CLIP's x·σ(1.702x)) ---------------------------------------
def _quick_math(x: np.ndarray) -> np.ndarray:
    return np.array([v / (1.0 + math.exp(-1.702 * v)) for v in x.tolist()])


def test_quick_form_reference_is_quick_gelu():
    x = np.linspace(-30, 30, 6001)
    assert np.abs(gelu_reference(x, "quick") - _quick_math(x)).max() < 1e-14
    assert gelu_reference(np.array([-1000.0]), "quick")[0] == 0.0  # no overflow warning
    # not the erf GELU: 0.02 apart near |x| = 2
    assert np.abs(gelu_reference(x, "quick") - gelu_reference(x)).max() > 0.015


def test_quick_form_lut_and_edgemoe_compute_quick_gelu():
    lut = LutGelu(form="quick")
    codes, x = _codes_and_values(lut)
    assert np.array_equal(lut.model(codes), lut.out_fmt.quantize(_quick_math(x)))
    em = EdgeMoeGelu(form="quick")
    codes, x = _codes_and_values(em, -8, 8)
    err = np.abs(em.out_fmt.to_float(em.model(codes)) - _quick_math(x))
    # interpolation h²/8·max|δ''| (δ = t·σ(-αt): |δ''| <= α·(1 + α·t_max/4)... < 2.2),
    # entry and δ rounding, half an output LSB, and the dropped δ(5.5) = 4.7e-4
    assert err.max() <= 5.5 / (1 + math.exp(1.702 * 5.5)) + 0.5 * float(em.out_fmt.lsb) + 1e-3
    assert err[np.abs(x) < 5.4].max() <= (1 / 32) ** 2 / 8 * 2.2 + 2.0**-21 + 0.5 * float(
        em.out_fmt.lsb
    )
    # the odd part stays exact: quick_gelu(x) - quick_gelu(-x) = x
    codes = np.arange(1, em.in_fmt.max_raw + 1)
    diff = em.model(codes) - em.model(-codes)
    assert np.array_equal(diff, codes << (em.out_fmt.frac_bits - em.in_fmt.frac_bits))
    assert not np.array_equal(em.tables()["delta"], EdgeMoeGelu().tables()["delta"])


def test_quick_form_shiftgelu_is_measured_against_its_own_function():
    # ShiftGELU computes x·σ(1.702x): against quick_gelu its error is its own, against
    # the erf GELU it includes the 0.02 gap between the functions
    spec = ShiftGelu(in_fmt="ap_fixed<12,4,AP_RND,AP_SAT>", n=10, form="quick")
    codes, x = _codes_and_values(spec, -4, 4)
    y = spec.out_fmt.to_float(spec.model(codes))
    assert np.abs(y - spec.reference(x)).max() < np.abs(y - _gelu_math(x)).max()
    assert np.array_equal(spec.model(codes), dataclasses.replace(spec, form="erf").model(codes))


def test_quick_form_refused_by_ibert():
    with pytest.raises(SpecError, match=r"^IBertGelu\.form='quick': I-BERT's polynomial .*edgemoe"):
        IBertGelu(form="quick")


# -- SiLU (form="silu": x·σ(x), Llama's gate) -------------------------------------------
def _silu_math(x: np.ndarray) -> np.ndarray:
    return np.array([v / (1.0 + math.exp(-v)) if v > -700 else 0.0 for v in x.tolist()])


def test_silu_form_reference_and_methods():
    x = np.linspace(-30, 30, 6001)
    assert np.abs(gelu_reference(x, "silu") - _silu_math(x)).max() < 1e-14
    lut = LutGelu(form="silu")
    codes, xs = _codes_and_values(lut)
    assert np.array_equal(lut.model(codes), lut.out_fmt.quantize(_silu_math(xs)))
    # edgemoe with the table over |x| < 16 a SiLU site gets by default: within one LSB
    # on every code (interpolation h²/8·max|δ''| = 1.2e-4 + entry/δ rounding + half LSB)
    em = EdgeMoeGelu(form="silu", table_size=513)
    codes, xs = _codes_and_values(em)
    err = np.abs(em.out_fmt.to_float(em.model(codes)) - _silu_math(xs))
    assert err.max() <= (1 / 32) ** 2 / 8 * 1.0 + 2.0**-21 + 0.5 * float(em.out_fmt.lsb) + 2e-6
    assert err.max() < float(em.out_fmt.lsb)
    # Edge-MoE's erf-sized table (|x| < 5.5) drops δ(5.5) = 0.022 for SiLU: 45 LSB
    short = EdgeMoeGelu(form="silu")
    err_short = np.abs(short.out_fmt.to_float(short.model(codes)) - _silu_math(xs))
    assert err_short.max() > 0.02
    codes = np.arange(1, em.in_fmt.max_raw + 1)
    diff = em.model(codes) - em.model(-codes)  # the odd part exact: silu(x) - silu(-x) = x
    assert np.array_equal(diff, codes << (em.out_fmt.frac_bits - em.in_fmt.frac_bits))


@pytest.mark.parametrize("cls", [IBertGelu, ShiftGelu])
def test_silu_form_refused_by_ibert_and_shiftgelu(cls):
    with pytest.raises(SpecError, match=rf"^{cls.__name__}\.form='silu': .*edgemoe, pwl or lut"):
        cls(form="silu")
