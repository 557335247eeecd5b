"""Issue 15 softmax variants: unified max (FlashDecoding++), threshold skipping (BLASST)
and log2-coded outputs (RepQ-ViT), as options of the softmax specs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hwapprox.approx.metrics import decode_log_code, log_code_metrics
from hwapprox.approx.registry import make_spec
from hwapprox.approx.softmax._common import log_encode

OUT = "ap_ufixed<16,0,AP_RND,AP_SAT>"


def _rows(sp, rows=400, n=24, seed=0, loc=0.0, scale=3.0):
    rng = np.random.default_rng(seed)
    return sp.quantize_input(rng.normal(loc, scale, (rows, n)))


# -- unified max -----------------------------------------------------------------------
def test_unified_rows_in_range_follow_the_phi_formula():
    """A safe row's codes are E(φ - x)·(1/d_φ) from the exp and reciprocal units, written
    out here from the public unit methods (not from the unified code path)."""
    sp = make_spec("softmax", "online", unified_max=6.0, out_fmt=OUT)
    x = _rows(sp, loc=2.0, scale=1.5)
    phi = sp.unified_phi_raw
    assert phi == 6 << sp.in_fmt.frac_bits
    e = sp.exp_unit_raw(np.maximum(phi - x, 0))
    d = (e << (sp.sum_fmt.frac_bits - sp.exp_fmt.frac_bits)).sum(axis=1)
    one = 1 << sp.sum_fmt.frac_bits
    safe = (x <= phi).all(axis=1) & (d >= one >> sp.unified_low)
    assert 0.3 < safe.mean() < 1.0  # both kinds of row occur
    got = sp.model(x)
    plain = make_spec("softmax", "online", out_fmt=OUT)
    assert np.array_equal(got[~safe], plain.model(x[~safe]))  # fallback = the exact path
    f = sp.exp_fmt.frac_bits + sp.recip_fmt.frac_bits - sp.out_fmt.frac_bits
    for i in np.flatnonzero(safe)[:40]:
        s = 0
        while (int(d[i]) << s) < one:
            s += 1
        r = int(sp.recip_raw(np.array([int(d[i]) << s]))[0])
        want = [min((int(v) * r << s) + (1 << (f - 1)) >> f, sp.out_fmt.max_raw) for v in e[i]]
        assert got[i].tolist() == want
    st = sp.model_stats(x)
    assert st["fallback_rate"] == pytest.approx(1 - safe.mean())
    assert st["skip_fraction"] is None


def test_unified_accuracy_and_masks():
    sp = make_spec("softmax", "online", unified_max=7.0, out_fmt=OUT)
    x = _rows(sp, rows=600, n=32, seed=3)
    rng = np.random.default_rng(4)
    mask = rng.random(x.shape) < 0.3
    mask[0] = True
    y = sp.model(x, mask=mask)
    ref = sp.reference(sp.in_fmt.to_float(x), mask=mask)
    assert np.abs(sp.out_fmt.to_float(y) - ref).max() <= 2 * 2.0**-16
    assert not y[0].any()
    assert not y[mask].any()
    # the unmasked elements get the codes of the row without the masked ones
    for i in range(1, 30):
        assert np.array_equal(y[i][~mask[i]], sp.model(x[i][~mask[i]][None])[0])
    st = sp.model_stats(x, mask=mask)
    assert st["rows"] == 599
    assert 0 < st["fallback_rate"] < 1


def test_unified_low_widens_the_safe_range():
    x = _rows(make_spec("softmax", "online"), rows=500, loc=-2.0)
    rates = [
        make_spec("softmax", "online", unified_max=6.0, unified_low=k).model_stats(x)[
            "fallback_rate"
        ]
        for k in (0, 4, 8)
    ]
    assert rates[0] > rates[1] > rates[2]


def test_unified_fields_are_checked():
    with pytest.raises(Exception, match=r"OnlineSoftmax.unified_max=100.0: must be a real in"):
        make_spec("softmax", "online", unified_max=100.0)
    with pytest.raises(Exception, match=r"OnlineSoftmax.off_by_one=True: cannot combine"):
        make_spec("softmax", "online", unified_max=1.0, off_by_one=True)
    with pytest.raises(Exception, match=r"OnlineSoftmax.skip_threshold=3.0: cannot combine"):
        make_spec("softmax", "online", unified_max=1.0, skip_threshold=3.0)
    with pytest.raises(Exception, match=r"OnlineSoftmax.unified_low=17: must be an integer"):
        make_spec("softmax", "online", unified_max=1.0, unified_low=17)


# -- threshold skipping ------------------------------------------------------------------
def _skip_by_hand(sp, row):
    """The BLASST rule written out on one row, element by element (default sum_fmt:
    AP_RND rescale): the skip flags and the final (m, d)."""
    one = 1 << sp.sum_fmt.frac_bits
    up = 1 << (sp.sum_fmt.frac_bits - sp.exp_fmt.frac_bits)
    m, d, flags = int(row[0]), one, [False]
    for v in row[1:]:
        v = int(v)
        if v > m:
            e = int(sp.exp_unit_raw(np.array([v - m]))[0])
            d = (d * e + (1 << (sp.exp_fmt.frac_bits - 1)) >> sp.exp_fmt.frac_bits) + one
            m = v
            flags.append(False)
        elif m - v > sp.skip_raw:
            flags.append(True)
        else:
            d += int(sp.exp_unit_raw(np.array([m - v]))[0]) * up
            flags.append(False)
    return np.array(flags), m, d


@pytest.mark.parametrize("tau", [2.0, 5.5])
def test_skip_follows_the_running_max_rule(tau):
    sp = make_spec("softmax", "online", skip_threshold=tau, out_fmt=OUT)
    assert sp.skip_raw == round(tau * 2**sp.in_fmt.frac_bits)
    x = _rows(sp, rows=60, n=16, seed=5)
    y = sp.model(x)
    for i in range(len(x)):
        flags, m, d = _skip_by_hand(sp, x[i])
        assert not y[i][flags].any()
        r = int(sp.recip_raw(np.array([d]))[0])
        e = sp.exp_unit_raw(m - x[i][~flags])
        f = sp.exp_fmt.frac_bits + sp.recip_fmt.frac_bits - sp.out_fmt.frac_bits
        want = np.minimum((e * r + (1 << (f - 1))) >> f, sp.out_fmt.max_raw)
        assert np.array_equal(y[i][~flags], want)
    st = sp.model_stats(x)
    flags = np.array([_skip_by_hand(sp, r)[0] for r in x])
    assert st["skip_fraction"] == pytest.approx(flags.mean())
    plain = make_spec("softmax", "online", out_fmt=OUT)
    err = np.abs(sp.out_fmt.to_float(y) - plain.out_fmt.to_float(plain.model(x)))
    assert st["skip_max_abs"] == pytest.approx(err.max())


def test_skip_error_grows_as_the_threshold_falls():
    x = _rows(make_spec("softmax", "online"), rows=300, n=64, seed=6)
    stats = [
        make_spec("softmax", "online", skip_threshold=t).model_stats(x) for t in (12.0, 6.0, 3.0)
    ]
    fr = [s["skip_fraction"] for s in stats]
    err = [s["skip_max_abs"] for s in stats]
    assert fr[0] < fr[1] < fr[2]
    assert err[0] <= err[1] < err[2]
    # each skipped weight is < e^-τ of the max's: the renormalisation moves y by at most
    # n·e^-τ, plus an output LSB of rounding
    for t, e in zip((12.0, 6.0, 3.0), err, strict=True):
        assert e <= 64 * math.exp(-t) + 2.0**-16


def test_skip_two_pass_masked_and_off_by_one():
    for kw in ({"schedule": "two_pass"}, {"off_by_one": True}, {}):
        sp = make_spec("softmax", "online", skip_threshold=3.0, out_fmt=OUT, **kw)
        x = _rows(sp, rows=200, n=12, seed=7)
        mask = np.random.default_rng(8).random(x.shape) < 0.3
        y = sp.model(x, mask=mask)
        assert not y[mask].any()
        for i in range(40):  # the mask contract holds with skipping too
            assert np.array_equal(y[i][~mask[i]], sp.model(x[i][~mask[i]][None])[0])
        if kw.get("schedule") == "two_pass":
            m = np.where(mask, sp.in_fmt.min_raw, x).max(axis=1, keepdims=True)
            skipped = ((m - x) > sp.skip_raw) & ~mask
            assert not y[skipped].any()
            assert sp.model_stats(x, mask=mask)["skip_fraction"] == skipped.sum() / (~mask).sum()
        st = sp.model_stats(x, mask=mask)
        assert 0 < st["skip_fraction"] < 1
        assert st["elements"] == int((~mask).sum())


def test_skip_field_is_checked():
    with pytest.raises(Exception, match=r"OnlineSoftmax.skip_threshold=-1.0: must be a real"):
        make_spec("softmax", "online", skip_threshold=-1.0)
    with pytest.raises(Exception, match=r"OnlineSoftmax.skip_threshold=5000.0: must be a real"):
        make_spec("softmax", "online", skip_threshold=5000.0)


# -- log2-coded outputs ------------------------------------------------------------------
def test_log_encode_is_round_of_minus_log2_on_every_code():
    fmt = make_spec("softmax", "online", out_fmt="ap_ufixed<12,0,AP_RND,AP_SAT>").out_fmt
    p = np.arange(1 << 12, dtype=np.int64)
    pr = p / 2.0**12
    with np.errstate(divide="ignore"):
        lg = -np.log2(pr)
    for form, step in (("log2", 1.0), ("log2sqrt2", 0.5)):
        for bits in (3, 4, 6):
            zero = (1 << bits) - 1
            want = np.floor(lg / step + 0.5)  # no ties: 2^(k/2 + 1/4) is irrational
            want = np.where((p == 0) | (want > zero - 1), zero, want).astype(np.int64)
            assert np.array_equal(log_encode(p, fmt, form, bits), want), (form, bits)
    # 1.0 in a format with an integer bit: code 0; a negative code: the zero code
    f2 = make_spec("softmax", "online", out_fmt="ap_fixed<12,2,AP_RND,AP_SAT>").out_fmt
    assert log_encode(np.array([1 << 10, -5, 0]), f2, "log2", 4).tolist() == [0, 15, 15]


def test_decode_and_log_code_metrics():
    assert decode_log_code([0, 2, 7], "log2", 3).tolist() == [1.0, 0.25, 0.0]
    assert decode_log_code([1], "log2sqrt2", 3)[0] == pytest.approx(math.sqrt(0.5))
    with pytest.raises(ValueError, match=r"log codes must lie in \[0, 7\]"):
        decode_log_code([8], "log2", 3)
    m = log_code_metrics([[0, 7]], [[0.75, 0.25]], "log2", 3)
    assert m.max_abs == pytest.approx(0.25)
    assert m.top1 == 1.0


@pytest.mark.parametrize("method", ["online", "ibert", "softermax", "hls4ml_stable"])
@pytest.mark.parametrize("form", ["log2", "log2sqrt2"])
def test_any_softmax_method_takes_the_log_code_post_stage(method, form):
    lin = make_spec("softmax", method)
    sp = make_spec("softmax", method, out_code=form, out_code_bits=5)
    x = _rows(lin, rows=100, n=16, seed=9)
    mask = np.random.default_rng(10).random(x.shape) < 0.2
    codes = sp.model(x, mask=mask)
    assert np.array_equal(codes, log_encode(lin.model(x, mask=mask), lin.out_fmt, form, 5))
    assert (codes[mask] == 31).all()  # masked: the zero code, decoded exactly 0
    y = sp.output_to_float(codes)
    assert not y[mask].any()
    # rounding in the log domain: the decoded value is within a factor 2^(1/2) (log2) or
    # 2^(1/4) (log√2) of the method's linear output, where that lies in the code's range
    p = lin.output_to_float(lin.model(x, mask=mask))
    lo = 2.0 ** -(29 if form == "log2" else 14.5)
    big = (p > lo) & (p <= 1.0)
    ratio = y[big] / p[big]
    h = 2**0.5 if form == "log2" else 2**0.25
    assert big.sum() > 500
    assert ratio.min() >= 1 / h
    assert ratio.max() <= h
    assert np.array_equal(sp.evaluate(lin.in_fmt.to_float(x)), sp.output_to_float(sp.model(x)))


def test_log_code_fields_are_checked():
    with pytest.raises(Exception, match=r"OnlineSoftmax.out_code='log3': must be one of"):
        make_spec("softmax", "online", out_code="log3")
    with pytest.raises(Exception, match=r"IBertSoftmax.out_code_bits=1: must be an integer"):
        make_spec("softmax", "ibert", out_code="log2", out_code_bits=1)
