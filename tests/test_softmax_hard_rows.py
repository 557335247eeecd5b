"""Online softmax and Softermax on the rows where roundings add up (issue 26): at most 1 output LSB
against the float64 softmax of the quantised inputs, with the default internal
formats derived from ``out_fmt`` and ``row_max`` (:func:`online_formats`,
:func:`~hwapprox.approx.softmax.softermax.softermax_formats`).

Rows (:func:`hwapprox.approx.stimulus.hard_softmax_rows`): one or two dominant
scores at many heights over a flat background (N equal exp values, each rounded
the same way: the sum's error is coherent), plateaus of tied maxima, ramps (a new
maximum at every element when ascending) and uniform rows. The sweep over
W = 8..16 and N up to 4096 is ``benchmarks/bench_softmax.py`` (results in
``benchmarks/results/softmax.md``); here a compact set that the previous fixed
defaults fail (``test_old_fixed_defaults_fail``).
"""

from __future__ import annotations

import numpy as np
import pytest

from hwapprox.approx.registry import make_spec, spec_from_config
from hwapprox.approx.softmax import OnlineSoftmax, SoftermaxSoftmax, SoftmaxSpec
from hwapprox.approx.softmax.online import FIXED_FORMATS_BEFORE_DERIVED, online_formats
from hwapprox.approx.softmax.softermax import SOFTERMAX_FIXED_FORMATS_BEFORE_DERIVED
from hwapprox.approx.stimulus import HARD_KINDS, hard_softmax_rows
from hwapprox.fixed import FixedFormat

F = FixedFormat.parse

OLD_DEFAULTS = FIXED_FORMATS_BEFORE_DERIVED  # issue 26: the pre-derivation formats


def _max_lsb(spec: SoftmaxSpec, x: np.ndarray) -> float:
    """Largest |y - p| in output LSBs, p the float64 softmax of the quantised row."""
    y = spec.output_to_float(spec.model(x))
    ref = spec.reference(spec.in_fmt.to_float(x))
    return float(np.abs(y - ref).max() * 2.0**spec.out_fmt.frac_bits)


@pytest.mark.parametrize("n", [64, 1024, 4096])
@pytest.mark.parametrize("w", [8, 12, 16])
def test_derived_defaults_within_one_lsb(w: int, n: int) -> None:
    spec = make_spec("softmax", "online", out_fmt=f"ap_ufixed<{w},0,AP_RND,AP_SAT>", row_max=n)
    rows = hard_softmax_rows(spec.in_fmt, n, np.random.default_rng(w * 7919 + n))
    errs = {k: _max_lsb(spec, rows[k]) for k in HARD_KINDS}
    assert max(errs.values()) <= 1.0 + 1e-9, errs


def test_old_fixed_defaults_fail() -> None:
    """The check can fail: the fixed pre-issue-26 formats miss 1 LSB on dominant-score
    rows at 16 bits (the background's exp rounding adds up N times)."""
    old = make_spec(
        "softmax", "online", out_fmt="ap_ufixed<16,0,AP_RND,AP_SAT>", row_max=4096, **OLD_DEFAULTS
    )
    rows = hard_softmax_rows(old.in_fmt, 1024, np.random.default_rng(16 * 7919 + 1024))
    assert _max_lsb(old, rows["dominant"]) > 2.0


def test_formats_follow_out_fmt_and_row_max() -> None:
    a = OnlineSoftmax(out_fmt="ap_ufixed<16,0,AP_RND,AP_SAT>", row_max=4096)
    assert a.exp_fmt == F("ap_ufixed<31,1,AP_RND>")  # F_e = 16 + 12 + 2
    assert a.sum_fmt == F("ap_ufixed<44,13,AP_RND>")  # F_s = F_e + 1, d <= N + 1
    assert a.recip_fmt == F("ap_ufixed<21,1,AP_RND>")
    assert a.exp_arg_fmt is not None
    assert a.exp_arg_fmt.max >= a.exp_fmt.frac_bits + 2
    b = a.replace(out_fmt="ap_ufixed<8,0,AP_RND,AP_SAT>")  # derived again, not carried over
    assert b.exp_fmt == F("ap_ufixed<23,1,AP_RND>")
    assert b.exp_frac_bits == 4
    assert b == OnlineSoftmax(out_fmt="ap_ufixed<8,0,AP_RND,AP_SAT>", row_max=4096)
    c = a.replace(row_max=64, newton_steps=1)
    assert c.exp_fmt == F("ap_ufixed<25,1,AP_RND>")
    given = OnlineSoftmax(exp_fmt="ap_ufixed<22,1,AP_RND>")  # a set field stays set
    assert given.exp_fmt == F("ap_ufixed<22,1,AP_RND>")
    assert given.replace(out_fmt="ap_ufixed<8,0>").exp_fmt == F("ap_ufixed<22,1,AP_RND>")
    assert given.sum_fmt is not None
    assert given.sum_fmt.frac_bits >= 21
    assert online_formats(F("ap_ufixed<8,0>"), 1024)["exp_fmt"] == b.replace(row_max=1024).exp_fmt
    # the config round trip gives the same spec
    assert spec_from_config(a.to_config()) == a


def test_narrower_output_is_cheaper() -> None:
    scores = [
        OnlineSoftmax(out_fmt=f"ap_ufixed<{w},0,AP_RND,AP_SAT>").cost().score()
        for w in (8, 10, 12, 16)
    ]
    assert scores == sorted(scores), scores
    assert scores[0] < 0.8 * scores[-1], scores


def test_rows_beyond_row_max_are_refused() -> None:
    spec = OnlineSoftmax(row_max=64)
    spec.model(np.zeros((1, 64), np.int64))
    with pytest.raises(ValueError, match="row_max"):
        spec.model(np.zeros((1, 65), np.int64))


def test_row_max_too_long_for_the_split_product() -> None:
    with pytest.raises(ValueError, match="lower row_max"):
        OnlineSoftmax(row_max=1 << 13)  # 16-bit outputs: F_e = 31, 31 + 32 > 62


@pytest.mark.parametrize("n", [64, 1024, 4096])
@pytest.mark.parametrize("w", [8, 12, 16])
def test_softermax_derived_defaults_within_one_lsb(w: int, n: int) -> None:
    """Softermax with its formats derived from out_fmt and row_max (its docstring's
    bound): <= 1 LSB on every hard row kind."""
    spec = make_spec("softmax", "softermax", out_fmt=f"ap_ufixed<{w},0,AP_RND,AP_SAT>", row_max=n)
    # the rows of benchmarks/bench_softmax.py's softermax table (same seed and count)
    rows = hard_softmax_rows(spec.in_fmt, n, np.random.default_rng(w * 7919 + n), rows=64)
    errs = {k: _max_lsb(spec, rows[k]) for k in HARD_KINDS}
    assert max(errs.values()) <= 1.0 + 1e-9, errs


@pytest.mark.parametrize(("w", "n", "over"), [(8, 1024, 1.2), (16, 64, 10.0)])
def test_softermax_old_fixed_defaults_fail(w: int, n: int, over: float) -> None:
    """The check can fail: Softermax's fixed pre-issue-26 formats (an 8-bit design) miss
    1 LSB on dominant-score rows at 8 bits and N = 1024 (the pow2_fmt roundings of the
    background add up), and far more at 16 bits (PWL, t and LOG2E too coarse)."""
    old = make_spec(
        "softmax",
        "softermax",
        out_fmt=f"ap_ufixed<{w},0,AP_RND,AP_SAT>",
        row_max=n,
        **SOFTERMAX_FIXED_FORMATS_BEFORE_DERIVED,
    )
    rows = hard_softmax_rows(old.in_fmt, n, np.random.default_rng(w * 7919 + n), rows=64)
    assert _max_lsb(old, rows["dominant"]) > over


def test_softermax_formats_follow_out_fmt_and_row_max() -> None:
    a = SoftermaxSoftmax(out_fmt="ap_ufixed<16,0,AP_RND,AP_SAT>", row_max=4096)
    assert a.pow2_fmt == F("ap_ufixed<31,1,AP_RND>")  # F_p = 16 + 12 + 2
    assert a.sum_fmt == F("ap_ufixed<46,14,AP_TRN>")  # F_s = F_p + 2, d < 2N
    assert a.t_fmt == F("ap_fixed<27,8,AP_RND,AP_SAT>")  # F_t = F + 3
    assert (a.pow2_segments_log2, a.recip_segments_log2) == (9, 10)
    b = a.replace(out_fmt="ap_ufixed<8,0,AP_RND,AP_SAT>")  # derived again
    assert b.pow2_fmt == F("ap_ufixed<23,1,AP_RND>")
    assert b == SoftermaxSoftmax(row_max=4096)
    given = SoftermaxSoftmax(pow2_fmt="ap_ufixed<16,1,AP_RND>")  # a set field stays set
    assert given.replace(out_fmt="ap_ufixed<16,0>").pow2_fmt == F("ap_ufixed<16,1,AP_RND>")
    assert given.pow2_table_frac_bits == 17
    assert spec_from_config(a.to_config()) == a
    scores = [
        SoftermaxSoftmax(out_fmt=f"ap_ufixed<{w},0,AP_RND,AP_SAT>").cost().score()
        for w in (8, 12, 16)
    ]
    assert scores == sorted(scores), scores


def test_softermax_rows_beyond_row_max_are_refused() -> None:
    spec = SoftermaxSoftmax(row_max=64)
    spec.model(np.zeros((1, 64), np.int64))
    with pytest.raises(ValueError, match="row_max"):
        spec.model(np.zeros((1, 65), np.int64))
