"""hwapprox.approx.linear against an independent scalar Fraction reference."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from hwapprox.approx import _kernels
from hwapprox.approx.base import SpecError
from hwapprox.approx.linear import AddSpec, MatMulSpec
from hwapprox.fixed import FixedFormat, cast


def _q(v: Fraction, fmt: FixedFormat) -> int:
    """Scalar ap_fixed assignment written independently of hwapprox.fixed."""
    s = v * 2**fmt.frac_bits
    fl = math.floor(s)
    rem = s - fl
    mode = fmt.rounding.value
    if mode == "AP_TRN":
        q = fl
    elif mode == "AP_TRN_ZERO":
        q = fl + (1 if (rem and s < 0) else 0)
    elif mode == "AP_RND":
        q = fl + (1 if rem >= Fraction(1, 2) else 0)
    elif mode == "AP_RND_ZERO":
        q = fl + (1 if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and s < 0) else 0)
    elif mode == "AP_RND_CONV":
        q = fl + (1 if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl % 2) else 0)
    else:
        raise AssertionError(mode)
    lo, hi = fmt.min_raw, fmt.max_raw
    if fmt.overflow.value == "AP_SAT":
        return min(max(q, lo), hi)
    assert fmt.overflow.value == "AP_WRAP"
    m = q % (1 << fmt.width)
    return m - (1 << fmt.width) if fmt.signed and m > hi else m


def _ref_matmul(spec: MatMulSpec, a, b, bias=None):
    af, bf, accf, outf = spec.a_fmt, spec.b_fmt, spec.accum_fmt, spec.out_fmt
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n), dtype=np.int64)
    for i in range(m):
        for j in range(n):
            acc = _q(Fraction(int(bias[j])) * spec.bias_fmt.lsb, accf) if bias is not None else 0
            for kk in range(k):
                prod = Fraction(int(a[i, kk])) * af.lsb * Fraction(int(b[kk, j])) * bf.lsb
                acc = _q(Fraction(acc) * accf.lsb + prod, accf)
            out[i, j] = _q(Fraction(acc) * accf.lsb, outf)
    return out


CASES = [
    # (a, b, accum, out, bias) -- wide exact accumulator, narrow rounding and
    # saturating accumulators (order matters), a wrapping one.
    ("ap_fixed<8,3>", "ap_fixed<8,2>", "ap_fixed<24,10>", "ap_fixed<10,4,AP_RND,AP_SAT>", None),
    (
        "ap_fixed<8,3>",
        "ap_fixed<6,1>",
        "ap_fixed<10,4,AP_RND,AP_SAT>",
        "ap_fixed<8,3>",
        "ap_fixed<8,3>",
    ),
    (
        "ap_fixed<10,4>",
        "ap_fixed<10,4>",
        "ap_fixed<12,5,AP_RND_CONV,AP_WRAP>",
        "ap_fixed<9,5,AP_TRN_ZERO,AP_SAT>",
        None,
    ),
    (
        "ap_ufixed<8,0>",
        "ap_fixed<8,4>",
        "ap_fixed<16,6,AP_TRN,AP_SAT>",
        "ap_fixed<12,6,AP_RND_ZERO,AP_WRAP>",
        "ap_fixed<8,4>",
    ),
]


def _rand(fmt: FixedFormat, shape, rng):
    return rng.integers(fmt.min_raw, fmt.max_raw + 1, size=shape, dtype=np.int64)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[2]}->{c[3]}")
def test_matmul_matches_scalar_reference(case):
    a_f, b_f, acc_f, out_f, bias_f = case
    spec = MatMulSpec(a_f, b_f, acc_f, out_f, bias_f)
    rng = np.random.default_rng(7)
    a = _rand(spec.a_fmt, (3, 5), rng)
    b = _rand(spec.b_fmt, (5, 4), rng)
    # edge rows: all extremes of both signs
    a[0] = spec.a_fmt.max_raw
    a[1] = spec.a_fmt.min_raw
    bias = _rand(spec.bias_fmt, (4,), rng) if bias_f else None
    got = spec.model(a, b, bias)
    assert np.array_equal(got, _ref_matmul(spec, a, b, bias))


def test_matmul_transpose_and_heads():
    spec = MatMulSpec(
        "ap_fixed<8,3>", "ap_fixed<8,3>", "ap_fixed<12,6,AP_RND,AP_SAT>", "ap_fixed<8,4>"
    )
    spec_t = MatMulSpec(
        "ap_fixed<8,3>",
        "ap_fixed<8,3>",
        "ap_fixed<12,6,AP_RND,AP_SAT>",
        "ap_fixed<8,4>",
        transpose_b=True,
    )
    rng = np.random.default_rng(3)
    q = _rand(spec.a_fmt, (2, 4, 3), rng)
    k = _rand(spec.b_fmt, (2, 4, 3), rng)
    got = spec_t.model(q, k)
    assert got.shape == (2, 4, 4)
    for h in range(2):
        assert np.array_equal(got[h], _ref_matmul(spec, q[h], k[h].T))


def test_saturating_accumulator_is_order_dependent_and_modelled():
    # Accumulator saturating at [-8, 7.75]: exact 4 + 6 - 6 = 4, but the
    # accumulator clamps 10 -> 7.75 after the second term, leaving 1.75.
    spec = MatMulSpec(
        "ap_fixed<8,4>", "ap_fixed<8,4>", "ap_fixed<6,4,AP_TRN,AP_SAT>", "ap_fixed<8,4>"
    )
    a = spec.a_fmt.quantize([[2.0, 3.0, -3.0]])
    b = spec.b_fmt.quantize([[2.0], [2.0], [2.0]])
    assert spec.out_fmt.to_float(spec.model(a, b)).tolist() == [[1.75]]


def test_add():
    spec = AddSpec("ap_fixed<8,3>", "ap_fixed<10,2>", "ap_fixed<8,3,AP_RND,AP_SAT>")
    a = spec.a_fmt.quantize([3.96875, -4.0, 0.03125])
    b = spec.b_fmt.quantize([1.0, -1.0, 0.001953125 * 3])
    # 4.96875 saturates to 3.96875; -5 to -4; 0.03125 + 0.005859375 rounds to 0.03125
    assert spec.out_fmt.to_float(spec.model(a, b)).tolist() == [3.96875, -4.0, 0.03125]


def test_errors_name_the_problem():
    spec = MatMulSpec("ap_fixed<8,3>", "ap_fixed<8,3>", "ap_fixed<16,6>", "ap_fixed<8,3>")
    with pytest.raises(SpecError, match=r"inner sizes differ"):
        spec.model(np.zeros((2, 3), np.int64), np.zeros((4, 2), np.int64))
    with pytest.raises(SpecError, match=r"raw code 200 is outside ap_fixed<8,3>"):
        spec.model(np.full((1, 1), 200), np.zeros((1, 1), np.int64))
    with pytest.raises(SpecError, match=r"bias_fmt is None"):
        spec.model(np.zeros((1, 1), np.int64), np.zeros((1, 1), np.int64), np.zeros(1, np.int64))
    with pytest.raises(SpecError, match=r"MatMulSpec.accum_fmt: malformed"):
        MatMulSpec("ap_fixed<8,3>", "ap_fixed<8,3>", "ap_fixd<16,6>", "ap_fixed<8,3>")
    with pytest.raises(SpecError, match=r"accumulator too wide"):
        MatMulSpec("ap_fixed<32,3>", "ap_fixed<32,3>", "ap_fixed<40,6>", "ap_fixed<8,3>")


#: accumulator formats of the fast-path comparison: every rounding mode (the fast path
#: takes TRN, RND and RND_MIN_INF; the others must fall back), coarser and finer than
#: the products, wide (never saturates) and narrow (saturates on some outputs)
FAST_ACCUMS = [
    f"ap_fixed<{w},{i},{r},AP_SAT>"
    for w, i in ((32, 9), (40, 10), (24, 12), (16, 8), (14, 4))
    for r in ("AP_TRN", "AP_RND", "AP_RND_MIN_INF", "AP_RND_CONV", "AP_RND_ZERO")
] + ["ap_fixed<20,8,AP_RND,AP_WRAP>", "ap_ufixed<32,16,AP_RND,AP_SAT>"]


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("accum", FAST_ACCUMS)
def test_fast_accumulation_equals_the_loop(accum: str, compiled: bool, monkeypatch) -> None:
    """MatMulSpec.model's order-free sum (one product, or rounded products summed in
    blocks) against the per-step loop of the contract, on random and extreme codes,
    heads broadcast, a bias, K up to 300: identical codes, or the fast path declines;
    with the compiled kernel and with the numpy blocks."""
    monkeypatch.setattr(_kernels, "enabled", compiled)
    rng = np.random.default_rng(abs(hash(accum)) % 2**32)
    af, bf = FixedFormat.parse("ap_fixed<12,3>"), FixedFormat.parse("ap_fixed<10,1>")
    bias_fmt = FixedFormat.parse("ap_fixed<12,4>")
    spec = MatMulSpec(af, bf, accum, "ap_fixed<16,6,AP_RND,AP_SAT>", bias_fmt)
    for k in (1, 7, 300):
        a = rng.integers(af.min_raw, af.max_raw + 1, (2, 5, k))
        b = rng.integers(bf.min_raw, bf.max_raw + 1, (1, k, 6))
        a[0, 0] = af.max_raw  # an all-extreme row and column
        b[0, :, 0] = bf.min_raw
        bias = rng.integers(bias_fmt.min_raw, bias_fmt.max_raw + 1, 6)
        acc0 = np.broadcast_to(cast(bias, bias_fmt, spec.accum_fmt), (2, 5, 6)).copy()
        slow = spec._sum_loop(a, b, acc0)
        fast = spec._sum_fast(a, b, acc0)
        if spec.accum_fmt.rounding.value in ("AP_RND_CONV", "AP_RND_ZERO"):
            d = spec.product_fmt.frac_bits - spec.accum_fmt.frac_bits
            assert fast is None or d <= 0  # ties that depend on the sum: the loop runs
        if fast is not None:
            assert np.array_equal(fast, slow), accum
        assert np.array_equal(spec.model(a, b, bias), cast(slow, spec.accum_fmt, spec.out_fmt))


def test_fast_accumulation_is_taken_and_can_fail() -> None:
    """The fast path runs on a wide truncating accumulator (the calibrated blocks'),
    and a broken fast path (rounding half up where the contract truncates) differs."""
    spec = MatMulSpec("ap_fixed<16,4>", "ap_fixed<16,1>", "ap_fixed<36,12,AP_TRN,AP_SAT>",
                      "ap_fixed<16,6,AP_RND,AP_SAT>")  # fmt: skip
    rng = np.random.default_rng(5)
    a = rng.integers(-(2**15), 2**15, (8, 64))
    b = rng.integers(-(2**15), 2**15, (64, 8))
    acc0 = np.zeros((8, 8), np.int64)
    fast = spec._sum_fast(a, b, acc0)
    assert fast is not None
    assert np.array_equal(fast, spec._sum_loop(a, b, acc0))
    broken = MatMulSpec(spec.a_fmt, spec.b_fmt, "ap_fixed<36,12,AP_RND,AP_SAT>", spec.out_fmt)
    assert not np.array_equal(broken._sum_fast(a, b, acc0), fast)
