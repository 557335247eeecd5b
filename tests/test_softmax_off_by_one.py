"""Softmax_1 (OutEffHop; "attention is off by one"): exp(x_i) / (1 + Σ_j exp(x_j)), as the
``off_by_one`` option of the online softmax (issue 15)."""

from __future__ import annotations

import numpy as np
import pytest

from hwapprox.approx.registry import make_spec

OUT = "ap_ufixed<16,0,AP_RND,AP_SAT>"


def test_reference_is_the_formula():
    sp = make_spec("softmax", "online", off_by_one=True)
    x = np.random.default_rng(0).normal(0, 2, (5, 7))
    want = np.exp(x) / (1 + np.exp(x).sum(axis=1, keepdims=True))
    assert np.allclose(sp.reference(x), want, rtol=1e-12, atol=0)
    # axis and mask: masked elements out of the sum, output 0
    mask = np.zeros((5, 7), bool)
    mask[:, 2] = True
    mask[4] = True
    e = np.where(mask, 0.0, np.exp(x))
    want = e / (1 + e.sum(axis=1, keepdims=True))
    assert np.allclose(sp.reference(x, mask=mask), want, rtol=1e-12, atol=0)
    assert np.allclose(sp.reference(x.T, axis=0), sp.reference(x).T)
    # one element: the logistic sigmoid
    assert np.allclose(sp.reference(x[:, :1]), 1 / (1 + np.exp(-x[:, :1])))


@pytest.mark.parametrize("schedule", ["online", "two_pass"])
def test_model_is_the_softmax_behind_a_zero_logit(schedule):
    """The definition the HLS unit implements: the state starts at the zero logit; the
    codes equal the plain model on the row with a 0 in front, that output dropped."""
    one = make_spec("softmax", "online", off_by_one=True, schedule=schedule, out_fmt=OUT)
    plain = make_spec("softmax", "online", schedule=schedule, out_fmt=OUT)
    rng = np.random.default_rng(1)
    x = one.in_fmt.quantize(rng.normal(-1, 3, (50, 12)))
    zero = np.zeros((50, 1), np.int64)
    assert np.array_equal(
        one.model(x, axis=-1), plain.model(np.concatenate([zero, x], axis=1), axis=-1)[:, 1:]
    )
    mask = rng.random((50, 12)) < 0.3
    mask[0] = True
    got = one.model(x, axis=-1, mask=mask)
    pad = np.concatenate([np.zeros((50, 1), bool), mask], axis=1)
    want = plain.model(np.concatenate([zero, x], axis=1), axis=-1, mask=pad)[:, 1:]
    assert np.array_equal(got, want)
    assert not got[0].any()  # a fully masked row attends to nothing


def test_model_follows_the_reference_and_can_attend_to_nothing():
    sp = make_spec("softmax", "online", off_by_one=True, out_fmt=OUT)
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(0, 2, (40, 64)), rng.normal(-12, 1, (4, 64))])
    raw = sp.quantize_input(x)
    y = sp.out_fmt.to_float(sp.model(raw, axis=-1))
    ref = sp.reference(sp.in_fmt.to_float(raw), axis=-1)
    assert np.abs(y - ref).max() <= 2.0**-16
    assert y[40:].sum(axis=1).max() < 1e-3  # all logits far below 0: (almost) no attention
    plain = make_spec("softmax", "online", out_fmt=OUT)
    assert plain.out_fmt.to_float(plain.model(raw[40:], axis=-1)).sum(axis=1).min() > 0.99


def test_rtl_unit_takes_it_as_a_parameter():
    """The SV unit's OFF_BY_ONE parameter is the spec's (the RTL tests run a Softmax_1
    parameter set bit-exactly, tests/rtl_cases.py); a non-bool option is refused."""
    from hwapprox.rtl_sim.units import get_unit

    unit = get_unit("softmax", "online")
    on, _ = unit.config(make_spec("softmax", "online", off_by_one=True), 16)
    off, _ = unit.config(make_spec("softmax", "online"), 16)
    assert (on["OFF_BY_ONE"], off["OFF_BY_ONE"]) == (1, 0)
    with pytest.raises(Exception, match=r"OnlineSoftmax.off_by_one=1: a bool"):
        make_spec("softmax", "online", off_by_one=1)
