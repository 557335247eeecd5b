"""The fused single-pass attention row (hwapprox.approx.attention).

The vectorised model is checked against a plain scalar re-implementation of the
stated datapath (Python ints, explicit shifts), against the float64 reference,
and for the mask contract (a masked key is exactly absent).
"""

from __future__ import annotations

import numpy as np
import pytest

from hwapprox.approx.attention import AttentionRowSpec
from hwapprox.approx.softmax import OnlineSoftmax
from hwapprox.fixed import FixedFormat

SPECS = {
    "default_scaled": AttentionRowSpec(scale=1 / 8),
    "softmax_1": AttentionRowSpec(scale=1 / 8, softmax=OnlineSoftmax(off_by_one=True)),
    # narrow: 12-bit q/k/v, LUT exp, LUT reciprocal, truncating accumulator, 10-bit out
    "narrow": AttentionRowSpec(
        q_fmt="ap_fixed<12,4,AP_RND,AP_SAT>",
        k_fmt="ap_fixed<12,4,AP_RND,AP_SAT>",
        v_fmt="ap_fixed<12,4,AP_RND,AP_SAT>",
        acc_fmt="ap_fixed<24,12,AP_TRN,AP_SAT>",
        out_fmt="ap_fixed<10,4,AP_RND,AP_SAT>",
        softmax=OnlineSoftmax(
            in_fmt="ap_fixed<12,5,AP_RND,AP_SAT>",
            exp_unit="lut",
            recip_unit="lut",
            exp_fmt="ap_ufixed<14,1,AP_RND>",
            sum_fmt="ap_ufixed<26,12,AP_RND>",
            exp_lut_bits=10,
        ),
    ),
}


def _rshift(v: int, s: int, rnd: bool) -> int:
    """v / 2^s, AP_TRN (floor) or AP_RND (half up); s <= 0 is an exact left shift."""
    if s <= 0:
        return v << -s
    return (v + (1 << (s - 1))) >> s if rnd else v >> s


def _sat(v: int, fmt: FixedFormat) -> int:
    return max(fmt.min_raw, min(fmt.max_raw, v))


def scalar_model(sp: AttentionRowSpec, q, k, v, mask=None) -> list[int]:
    """One row, written out as the module docstring states it (independent of the model's
    vectorisation and of hwapprox.fixed.cast)."""
    sm = sp.softmax
    sf, af, vf = sp.score_fmt, sp.acc_fmt, sp.v_fmt
    rnd_a = af.rounding.value == "AP_RND"
    fe = sm.exp_fmt.frac_bits
    one = 1 << sm.sum_fmt.frac_bits
    up = sm.sum_fmt.frac_bits - fe
    m = d = 0
    o = [0] * len(v[0])
    started = False
    if sm.off_by_one:  # Softmax_1: the state starts at a zero logit with V = 0
        d, started = one, True
    for j in range(len(k)):
        dot = sum(int(a) * int(b) for a, b in zip(q, k[j], strict=True))
        f = sp.q_fmt.frac_bits + sp.k_fmt.frac_bits
        if sp.scale is not None:
            dot *= sp.scale_raw
            f += sp.scale_fmt.frac_bits
        s = _sat(_rshift(dot, f - sf.frac_bits, sf.rounding.value == "AP_RND"), sf)
        if mask is not None and mask[j]:
            continue
        if not started or s > m:
            e = int(sm.exp_unit_raw([s - m if started else 0])[0])
            d = _rshift(d * e, fe, sm.sum_fmt.rounding.value == "AP_RND") + one
            align = af.frac_bits - vf.frac_bits
            o = [
                _sat(_sat(_rshift(oi * e, fe, rnd_a), af) + (int(vj) << align), af)
                for oi, vj in zip(o, v[j], strict=True)
            ]
            m, started = s, True
        else:
            e = int(sm.exp_unit_raw([m - s])[0])
            d += e << up
            sh = fe + vf.frac_bits - af.frac_bits
            o = [
                _sat(oi + _sat(_rshift(e * int(vj), sh, rnd_a), af), af)
                for oi, vj in zip(o, v[j], strict=True)
            ]
    if not started:
        return [0] * len(o)
    r = int(sm.recip_raw([d])[0])
    out = sp.out_fmt
    sh = af.frac_bits + sm.recip_fmt.frac_bits - out.frac_bits
    return [_sat(_rshift(oi * r, sh, out.rounding.value == "AP_RND"), out) for oi in o]


def _rows(sp: AttentionRowSpec, rows: int, n: int, d: int, dv: int, seed: int, sigma=1.0):
    rng = np.random.default_rng(seed)
    q = sp.q_fmt.quantize(rng.normal(0, sigma, (rows, d)))
    k = sp.k_fmt.quantize(rng.normal(0, sigma, (rows, n, d)))
    v = sp.v_fmt.quantize(rng.normal(0, 1, (rows, n, dv)))
    return q, k, v


@pytest.mark.parametrize("name", sorted(SPECS))
def test_model_equals_the_scalar_datapath(name):
    sp = SPECS[name]
    q, k, v = _rows(sp, 12, 24, 8, 5, 1, sigma=2.0)
    rng = np.random.default_rng(2)
    mask = rng.random((12, 24)) < 0.3
    mask[3] = True  # a fully masked row
    mask[4, 1:] = True  # one key only
    got = sp.model(q, k, v, mask)
    for r in range(12):
        assert got[r].tolist() == scalar_model(sp, q[r], k[r], v[r], mask[r]), r
    assert not got[3].any()
    assert len(np.unique(got)) > 20


def test_scalar_check_can_fail():
    """The comparison can fail: a narrower, truncating accumulator changes the codes."""
    sp = SPECS["default_scaled"]
    q, k, v = _rows(sp, 6, 40, 8, 4, 3, sigma=2.0)
    other = sp.with_(acc_fmt="ap_fixed<26,16,AP_TRN,AP_SAT>")  # 10 fraction bits, truncating
    want = [scalar_model(sp, q[r], k[r], v[r]) for r in range(6)]
    assert sp.model(q, k, v).tolist() == want
    assert other.model(q, k, v).tolist() != want


@pytest.mark.parametrize("name", sorted(SPECS))
def test_masked_key_is_absent(name):
    """A masked key changes nothing: the same codes as the row without it."""
    sp = SPECS[name]
    q, k, v = _rows(sp, 8, 20, 8, 4, 5, sigma=2.0)
    keep = np.ones(20, bool)
    keep[[0, 3, 7, 19]] = False
    masked = sp.model(q, k, v, np.broadcast_to(~keep, (8, 20)))
    assert np.array_equal(masked, sp.model(q, k[:, keep], v[:, keep]))


@pytest.mark.parametrize("n", [1, 16, 256, 1024])
def test_fused_row_follows_float(n):
    """Default formats (16-bit output, 1/sqrt(64) scale): within 1 output LSB of the
    float64 softmax(q·kᵀ·scale)·v at N = 1..1024, like the two-pass schedule."""
    sp = SPECS["default_scaled"]
    q, k, v = _rows(sp, 16, n, 64, 8, n)
    ref = sp.reference(q, k, v)
    lsb = 2.0**-sp.out_fmt.frac_bits
    fused = np.abs(sp.out_fmt.to_float(sp.model(q, k, v)) - ref).max() / lsb
    two = np.abs(sp.out_fmt.to_float(sp.two_pass_model(q, k, v)) - ref).max() / lsb
    assert fused <= 1.0, fused
    assert two <= 1.5, two


def test_fully_masked_rows_and_reference():
    sp = SPECS["default_scaled"]
    q, k, v = _rows(sp, 3, 5, 8, 4, 9)
    mask = np.zeros((3, 5), bool)
    mask[1] = True
    y = sp.model(q, k, v, mask)
    assert not y[1].any()
    assert not sp.reference(q, k, v, mask)[1].any()
    assert not sp.two_pass_model(q, k, v, mask)[1].any()


def test_bad_specs_and_inputs_are_named():
    with pytest.raises(Exception, match=r"acc_fmt ap_fixed<16,4.* must hold every v_fmt"):
        AttentionRowSpec(acc_fmt="ap_fixed<16,4,AP_RND,AP_SAT>")
    with pytest.raises(Exception, match=r"must be an online OnlineSoftmax"):
        AttentionRowSpec(softmax=OnlineSoftmax(schedule="two_pass"))
    with pytest.raises(Exception, match=r"scale=-1 must be a positive finite number"):
        AttentionRowSpec(scale=-1)
    sp = SPECS["narrow"]
    q, k, v = _rows(sp, 2, 4, 8, 3, 0)
    with pytest.raises(Exception, match=r"k must be \[N, 8\] or \[2, N, 8\]"):
        sp.model(q, k[:, :, :5], v)
    big = sp.max_keys() + 1
    with pytest.raises(Exception, match=r"exceed the .* that acc_fmt"):
        sp.model(q[:1], np.zeros((big, 8), np.int64), np.zeros((big, 3), np.int64))


def test_buffer_bits():
    sp = SPECS["default_scaled"]
    b = sp.buffer_bits(1024, 64)
    assert b["fused"] == 16 + sp.softmax.sum_fmt.width + 64 * 32  # m, d, o
    assert b["two_pass"] > 1024 * 64 * 16  # the V rows alone


def test_softmax_1_row_is_the_row_behind_a_zero_key():
    """softmax.off_by_one: the fused row equals the plain row with a zero key (score 0)
    and a zero value in front, and stays within 1 LSB of its float64 reference."""
    one = AttentionRowSpec(scale=1 / 8, softmax=OnlineSoftmax(off_by_one=True))
    plain = AttentionRowSpec(scale=1 / 8)
    q, k, v = _rows(one, 10, 30, 8, 4, 21, sigma=2.0)
    mask = np.random.default_rng(3).random((10, 30)) < 0.3
    mask[0] = True
    got = one.model(q, k, v, mask)
    k0 = np.concatenate([np.zeros((10, 1, 8), np.int64), k], axis=1)
    v0 = np.concatenate([np.zeros((10, 1, 4), np.int64), v], axis=1)
    m0 = np.concatenate([np.zeros((10, 1), bool), mask], axis=1)
    assert np.array_equal(got, plain.model(q, k0, v0, m0))
    assert not got[0].any()
    err = np.abs(one.out_fmt.to_float(got) - one.reference(q, k, v, mask)).max()
    assert err <= 2.0**-one.out_fmt.frac_bits
    assert not np.array_equal(got, plain.model(q, k, v, mask))
