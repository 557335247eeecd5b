"""Sigmoid and ReLU attention (issue 15): models against their float64 references,
computed here independently (math.exp, Fraction), over every input code."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from hwapprox.approx.base import SpecError
from hwapprox.approx.registry import list_methods, make_spec


def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v)) if v >= 0 else math.exp(v) / (1.0 + math.exp(v))


def _err_lsb(spec):  # every code: max |model - reference| in output LSBs
    codes = spec.in_fmt.all_codes()
    y = spec.out_fmt.to_float(spec.model(codes))
    r = spec.reference(spec.in_fmt.to_float(codes))
    return float(np.abs(y - r).max() / float(spec.out_fmt.lsb))


def test_listed_with_sources() -> None:
    ms = list_methods()
    assert [str(o) for o in ms][-2:] == ["sigmoid_attention", "relu_attention"]
    assert ms["sigmoid_attention"] == ["lut", "pwl"]
    assert ms["relu_attention"] == ["wortsman"]
    for op, m in (("sigmoid_attention", "lut"), ("sigmoid_attention", "pwl")):
        assert "Ramapuram" in type(make_spec(op, m)).source
    assert "Wortsman" in type(make_spec("relu_attention", "wortsman")).source


def test_sigmoid_reference_matches_math() -> None:
    spec = make_spec("sigmoid_attention", "lut", seq_len=64)
    xs = np.linspace(-15, 15, 301)
    ref = spec.reference(xs)
    want = [_sigmoid(x - math.log(64)) for x in xs]
    assert np.max(np.abs(ref - want)) < 1e-15
    assert spec.b == pytest.approx(-math.log(64))
    assert make_spec("sigmoid_attention", "lut", bias=-2.5).b == -2.5


@pytest.mark.parametrize(
    "fields",
    [{}, {"seq_len": 1000}, {"bias": 0.0, "out_fmt": "ap_ufixed<8,0,AP_RND,AP_SAT>"}],
)
def test_sigmoid_lut_within_half_lsb_except_saturated_one(fields) -> None:
    spec = make_spec("sigmoid_attention", "lut", **fields)
    codes = spec.in_fmt.all_codes()
    y = spec.out_fmt.to_float(spec.model(codes))
    r = np.array([_sigmoid(float(x) + spec.b) for x in spec.in_fmt.to_float(codes)])
    lsb = float(spec.out_fmt.lsb)
    top = float(spec.out_fmt.max)
    inside = r <= top + lsb / 2
    assert np.abs(y - r)[inside].max() <= lsb / 2 + 1e-12
    # σ -> 1 saturates at the largest code: reported error < 1 LSB there
    assert np.all(y[~inside] == top)
    assert np.abs(y - r).max() < lsb


def test_sigmoid_lut_bias_is_folded_not_quantised() -> None:
    """The table tabulates σ(x + b) for the exact b: b = -log 3 is not on the input grid."""
    spec = make_spec("sigmoid_attention", "lut", seq_len=3)
    x = spec.in_fmt.to_float(spec.in_fmt.all_codes())
    want = spec.out_fmt.quantize(np.array([_sigmoid(v - math.log(3)) for v in x]))
    assert np.array_equal(spec.model(spec.in_fmt.all_codes()), want)


@pytest.mark.parametrize(
    ("fields", "bound_lsb"),
    [
        ({}, 2.2),
        ({"segments": 64, "lo": -5.15, "hi": 14.85}, 1.1),
        ({"in_fmt": "ap_fixed<12,5>", "out_fmt": "ap_ufixed<8,0,AP_RND,AP_SAT>", "segments": 8,
          "seq_len": 64}, 2.0),
    ],
)  # fmt: skip
def test_sigmoid_pwl_error(fields, bound_lsb) -> None:
    spec = make_spec("sigmoid_attention", "pwl", **fields)
    err = _err_lsb(spec)
    assert err <= bound_lsb
    # the fit's own error plus the tails (0 below lo, 1 above hi) bound it
    lo, hi = spec.fit_range
    tail = max(_sigmoid(lo + spec.b), 1 - _sigmoid(hi + spec.b))
    lsb = float(spec.out_fmt.lsb)
    assert err * lsb <= spec.fit().max_error + tail + 1.5 * lsb


def test_sigmoid_pwl_outside_range_is_zero_and_one() -> None:
    spec = make_spec("sigmoid_attention", "pwl", out_fmt="ap_ufixed<12,1,AP_RND,AP_SAT>")
    bp = spec.tables()["breakpoints"]
    below = np.arange(spec.in_fmt.min_raw, bp[0])
    above = np.arange(bp[-1], spec.in_fmt.max_raw + 1)
    assert np.all(spec.model(below) == 0)
    assert np.all(spec.model(above) == 1 << spec.out_fmt.frac_bits)


def test_relu_power_of_two_is_exact_shift() -> None:
    spec = make_spec("relu_attention", "wortsman", seq_len=64)
    assert spec.hw_params()["MULT"] == 1
    assert spec.cost().multipliers == 0
    codes = spec.in_fmt.all_codes()
    got = spec.model(codes)
    f_in, f_out = spec.in_fmt.frac_bits, spec.out_fmt.frac_bits
    for c, g in zip(codes[::97], got[::97], strict=True):
        q = Fraction(max(int(c), 0), 64 * 2**f_in) * 2**f_out  # exact real in output LSBs
        want = min(math.floor(q + Fraction(1, 2)), spec.out_fmt.max_raw)  # AP_RND, AP_SAT
        assert g == want, c
    assert _err_lsb(spec) <= 0.5


@pytest.mark.parametrize("n", [3, 100, 197, 1000])
def test_relu_non_power_of_two_bound(n) -> None:
    spec = make_spec(
        "relu_attention", "wortsman", seq_len=n, out_fmt="ap_ufixed<16,4,AP_RND,AP_SAT>"
    )
    hw = spec.hw_params()
    r, e = spec.recip_bits, (n - 1).bit_length()
    assert hw["MULT"] == round(2 ** (r + e) / n)
    assert hw["MULT"].bit_length() <= r + 1
    lsb = float(spec.out_fmt.lsb)
    xmax = float(spec.in_fmt.max)
    assert _err_lsb(spec) * lsb <= lsb / 2 + xmax * 2.0 ** -(r + e + 1) + 1e-15


def test_relu_negative_scores_are_zero() -> None:
    spec = make_spec("relu_attention", "wortsman", seq_len=10)
    neg = np.arange(spec.in_fmt.min_raw, 1)
    assert np.all(spec.model(neg) == 0)


@pytest.mark.parametrize(
    ("op", "method", "fields", "needle"),
    [
        ("sigmoid_attention", "lut", {"seq_len": 0}, "seq_len=0"),
        ("sigmoid_attention", "lut", {"bias": float("nan")}, "bias=nan"),
        ("sigmoid_attention", "pwl", {"in_fmt": "ap_ufixed<10,5>"}, "must be signed"),
        ("sigmoid_attention", "pwl", {"lo": 40.0, "hi": 50.0}, "is empty"),
        ("sigmoid_attention", "lut", {"in_fmt": "ap_fixed<16,6>"}, "index_bits <= 12"),
        ("relu_attention", "wortsman", {"seq_len": 0}, "seq_len=0"),
        ("relu_attention", "wortsman", {"recip_bits": 40}, "recip_bits=40"),
    ],
)
def test_bad_fields_named(op, method, fields, needle) -> None:
    with pytest.raises(SpecError, match=needle.replace("(", r"\(")):
        make_spec(op, method, **fields)


def test_hwapprox_list_names_every_issue15_method_with_its_source() -> None:
    from click.testing import CliRunner

    from hwapprox.cli import cli

    res = CliRunner().invoke(cli, ["list"])
    assert res.exit_code == 0, res.output
    for source in ("OutEffHop", "Quantizable Transformers", "FlashDecoding++", "BLASST",
                   "RepQ-ViT", "pRMSNorm", "Ramapuram", "Wortsman"):  # fmt: skip
        assert source in res.output, source
    assert "relu_attention:" in res.output
    assert "sigmoid_attention:" in res.output
