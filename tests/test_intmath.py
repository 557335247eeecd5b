"""Integer primitives against literal scalar transcriptions of their sources."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from hwapprox.approx.intmath import (
    bit_length,
    exp2_frac_table,
    exp2_neg,
    i_exp,
    ibert_exp_constants,
    leading_one,
    log2e_shift,
    mul_round_shift,
    recip_pwl_table,
    recip_seed_table,
    reciprocal,
    round_shift_var,
    shift_exp,
    shift_exp_x0,
)
from hwapprox.fixed import round_shift

RNG = np.random.default_rng(20260302)


def test_bit_length_matches_python() -> None:
    vals = [0, 1, 2, 3, 4, 7, 8, 255, 256, (1 << 40) - 1, 1 << 40, (1 << 62) - 1, 1 << 62]
    vals += [int(v) for v in RNG.integers(0, 1 << 62, 200)]
    got = bit_length(np.array(vals, dtype=np.int64))
    assert got.tolist() == [v.bit_length() for v in vals]
    assert leading_one(np.array([1, 2, 3, 1 << 50])).tolist() == [0, 1, 1, 50]
    with pytest.raises(ValueError, match="non-negative"):
        bit_length(np.array([-1]))


def test_log2e_shift_is_floor_divisions() -> None:
    x = np.arange(-5000, 5000)
    want = [v + math.floor(v / 2) - math.floor(v / 16) for v in x.tolist()]
    assert log2e_shift(x).tolist() == want


def _shift_exp_scalar(x: int, s: Fraction, n: int) -> int:
    """I-ViT int_exp_shift (PyTorch) transcribed with exact rationals."""
    x = x + math.floor(Fraction(x, 2)) - math.floor(Fraction(x, 16))
    x0 = math.floor(-1 / s)
    x = max(x, n * x0)
    q = math.floor(Fraction(x, x0))
    r = x - x0 * q
    e = Fraction(r, 2) - x0
    return max(math.floor(e * 2 ** (n - q)), 0)


@pytest.mark.parametrize(("frac", "n"), [(10, 15), (4, 15), (7, 23)])
def test_shift_exp_matches_transcription(frac: int, n: int) -> None:
    s = Fraction(1, 1 << frac)
    x = np.concatenate([np.arange(-3000, 1), -RNG.integers(0, 1 << 20, 300)])
    x0 = shift_exp_x0(s)
    got = shift_exp(x, x0, n)
    assert got.tolist() == [_shift_exp_scalar(int(v), s, n) for v in x]


def test_shift_exp_tvm_variant_constants() -> None:
    s = Fraction(1, 1024)
    assert shift_exp_x0(s, "tvm") == -1025  # int(-1024 - 1)
    x = np.array([0, -1, -1000, -50000])
    got = shift_exp(x, -1025, 16, "tvm")
    t = [v + (v >> 1) - (v >> 4) for v in x.tolist()]
    want = []
    for v in t:
        v = max(v, 16 * -1025)
        q = v // -1025
        r = v + 1025 * q
        want.append(((r >> 1) + 1025) << (16 - q))
    assert got.tolist() == want


def test_shift_exp_accuracy_bound() -> None:
    # 2^f ~ 1 + f/2 on f in (-1, 0] has max relative error 1 - 0.75/2^-0.4150..
    # plus log2e 1.4375 vs 1.4427; measured 0.0443 absolute at S = 2^-10.
    s = Fraction(1, 1024)
    x = np.arange(-16 * 1024, 1)
    e = shift_exp(x, shift_exp_x0(s), 15)
    err = np.abs(e * float(s) / 2**15 - np.exp(x * float(s)))
    # bound: max over f of |1 + f/2 - 2^f| = 0.0430 (at f = log2(1/(2 ln 2)) - ...),
    # plus input/log2e rounding (< 0.005 near 0)
    assert err.max() < 0.05


def _i_exp_scalar(x: int, s: Fraction) -> int:
    a, b, c = 0.35815147, 0.96963238, 1.0
    x0 = math.floor(Fraction(-0.6931) / s)
    b_int = math.floor(Fraction(b / a) / s)
    c_int = math.floor(Fraction(c / a) / s**2)
    x = max(x, 30 * x0)
    q = math.floor(Fraction(x, x0))
    r = x - x0 * q
    z = r * (r + b_int) + c_int
    return max(math.floor(z * Fraction(2) ** (30 - q)), 0)


@pytest.mark.parametrize("frac", [4, 8, 10])
def test_i_exp_matches_transcription(frac: int) -> None:
    s = Fraction(1, 1 << frac)
    k = ibert_exp_constants(s)
    x = np.concatenate([np.arange(-2000, 1), -RNG.integers(0, 1 << 16, 300)])
    got = i_exp(x, k)
    assert got.tolist() == [_i_exp_scalar(int(v), s) for v in x]
    # I-BERT reports the polynomial is accurate to ~2e-3 on (-ln2, 0]
    real = got * float(k.out_scale)
    assert np.abs(real - np.exp(x * float(s))).max() < 2.5e-3 + float(s)


def test_exp2_neg_error_bound() -> None:
    # PWL on 2^-f with segment h = 2^-8: interpolation error <= h^2 (ln2)^2 / 8
    # = 9.2e-7 = 0.96 LSB at 2^-20; table rounding adds 0.5 LSB, final rounding 0.5.
    tab = exp2_frac_table(8, 20, "AP_RND")
    t = np.arange(0, 1 << 21)  # t in [0, 32) with 16 fraction bits
    y = exp2_neg(t, 16, tab, 8, 20, 20, interp=True, rounding="AP_RND")
    err = np.abs(y / 2**20 - 2.0 ** (-t / 2**16)) * 2**20
    bound = (2.0**-16 * math.log(2) ** 2 / 8) * 2**20 + 1.0
    assert err.max() <= bound
    assert y[0] == 1 << 20
    # without interpolation: truncated index, error up to h·ln2 relative
    y0 = exp2_neg(t, 16, tab, 8, 20, 20, interp=False, rounding="AP_RND")
    err0 = np.abs(y0 / 2**20 - 2.0 ** (-t / 2**16))
    assert err0.max() <= 2.0**-8 * math.log(2) + 2.0**-20


@pytest.mark.parametrize("unit", ["lut", "newton"])
def test_reciprocal_error_bound(unit: str) -> None:
    # lut: PWL of 1/u with h = 2^-8: error <= h^2/4 (max |f''|/8 = 2/8 on [1,2));
    # newton: seed error <= h/2 relative, one step squares it: (2^-9)^2 = 2^-18.
    # Both ~2^-18 relative; plus table/R roundings (1/2 + 1/2 LSB of 2^-24), the
    # truncation of the mantissa to 24 bits (1 LSB) and the output rounding
    # (1/2 LSB of 2^-30 on a value >= 2^-10 here: 2^-21 relative).
    tab = recip_pwl_table(8, 24, "AP_RND") if unit == "lut" else recip_seed_table(8, 24, "AP_RND")
    d = np.concatenate([np.arange(1 << 16, (1 << 16) + 5000), RNG.integers(1 << 16, 1 << 26, 5000)])
    r = reciprocal(
        d, 16, 30, unit=unit, table=tab, addr_bits=8, table_frac_bits=24,
        work_frac_bits=24, newton_steps=1, rounding="AP_RND",
    )  # fmt: skip
    exact = 2.0**16 / d
    rel = np.abs(r / 2**30 - exact) / exact
    assert rel.max() <= 2.0**-18 + 2 * 2.0**-24 + 2.0**-21
    if unit == "lut":
        assert r[0] == 1 << 30  # 1/1.0 exactly: the table's first end point is 1.0


@pytest.mark.parametrize("mode", ["AP_TRN", "AP_RND", "AP_RND_CONV", "AP_TRN_ZERO"])
def test_round_shift_var_matches_round_shift(mode: str) -> None:
    v = np.concatenate([np.arange(-300, 300), RNG.integers(-(1 << 60), 1 << 60, 2000)])
    shifts = RNG.integers(-3, 64, v.shape)
    shifts = np.where(shifts < 0, np.minimum(shifts, 0), shifts)
    small = np.abs(v) < (1 << 55)  # left shifts only on values that stay in range
    shifts = np.where(small | (shifts >= 0), shifts, 0)
    got = round_shift_var(v, shifts, mode)
    want = np.array(
        [
            round_shift(np.array([a]), int(min(s, 62)), mode)[0]
            for a, s in zip(v, shifts, strict=True)
        ]
    )
    assert np.array_equal(got, want)


@pytest.mark.parametrize("mode", ["AP_RND_CONV", "AP_RND"])
def test_mul_round_shift_exact(mode: str) -> None:
    a = np.concatenate([RNG.integers(0, 1 << 61, 3000), np.arange(0, 2000)])
    for m, s in [((1 << 31) - 12345, 67), (1 << 31, 31), (3, 32), (1 << 30, 33)]:
        # include exact ties: a·m = odd·2^(s-1)
        got = mul_round_shift(a, m, s, mode)
        want = []
        for v in a.tolist():
            q, r = divmod(v * m, 1 << s)
            half = 1 << (s - 1)
            tie_up = (q % 2 == 1) if mode == "AP_RND_CONV" else True
            want.append(q + (r > half or (r == half and tie_up)))
        assert got.tolist() == want
    # ties do occur in this set and go both ways
    assert mul_round_shift(np.array([1, 3]), 1 << 30, 31).tolist() == [0, 2]
    assert mul_round_shift(np.array([1, 3]), 1 << 30, 31, "AP_RND").tolist() == [1, 2]
