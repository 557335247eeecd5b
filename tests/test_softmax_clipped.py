"""Clipped softmax (Bondarenko, Nagel & Blankevoort 2023, "Quantizable Transformers"):
clip((ζ - γ)·softmax(x) + γ, 0, 1), an output option of the online softmax (issue 15)."""

from __future__ import annotations

import numpy as np
import pytest

from hwapprox.approx.registry import make_spec

OUT = "ap_ufixed<16,0,AP_RND,AP_SAT>"


def test_reference_is_the_formula_with_exact_zeros_and_ones():
    sp = make_spec("softmax", "online", clip_gamma=-0.03, clip_zeta=1.03)
    x = np.random.default_rng(0).normal(0, 3, (20, 16))
    p = np.exp(x - x.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    want = np.clip(1.06 * p - 0.03, 0, 1)
    assert np.allclose(sp.reference(x), want, rtol=0, atol=1e-12)
    one_hot = np.array([[30.0, 0, 0, 0]])
    assert sp.reference(one_hot)[0, 0] == 1.0  # an exact one without an outlier
    assert (sp.reference(x) == 0).mean() > 0.3  # exact zeros
    mask = np.zeros((20, 16), bool)
    mask[:, 0] = True
    assert not sp.reference(x, mask=mask)[:, 0].any()


def test_model_follows_the_reference_and_defaults_are_plain():
    sp = make_spec("softmax", "online", clip_gamma=-0.03, clip_zeta=1.03, out_fmt=OUT)
    rng = np.random.default_rng(1)
    raw = sp.quantize_input(rng.normal(0, 3, (300, 32)))
    y = sp.out_fmt.to_float(sp.model(raw, axis=-1))
    ref = sp.reference(sp.in_fmt.to_float(raw), axis=-1)
    assert np.abs(y - ref).max() <= 2.0**-16
    # exact zeros where the clip applies (a code either side of the threshold may differ)
    assert (y == 0).mean() > 0.3
    assert (y[ref == 0] == 0).mean() > 0.99
    # (γ, ζ) = (0, 1): the plain softmax, code for code
    plain = make_spec("softmax", "online", out_fmt=OUT)
    same = make_spec("softmax", "online", out_fmt=OUT, clip_gamma=0.0, clip_zeta=1.0)
    assert not same.clipped
    assert np.array_equal(same.model(raw, axis=-1), plain.model(raw, axis=-1))
    assert not np.array_equal(sp.model(raw, axis=-1), plain.model(raw, axis=-1))


def test_bad_clip_fields_are_named():
    with pytest.raises(Exception, match=r"OnlineSoftmax.clip_gamma=0.1: must be in \[-8, 0\]"):
        make_spec("softmax", "online", clip_gamma=0.1)
    with pytest.raises(Exception, match=r"OnlineSoftmax.clip_zeta=0.9: must be in \[1, 8\]"):
        make_spec("softmax", "online", clip_zeta=0.9)


def test_fused_attention_refuses_a_clipped_softmax():
    from hwapprox.approx.attention import AttentionRowSpec

    sm = make_spec("softmax", "online", clip_gamma=-0.03, clip_zeta=1.03)
    with pytest.raises(Exception, match=r"the clip acts on each probability"):
        AttentionRowSpec(softmax=sm)
