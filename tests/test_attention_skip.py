"""Threshold skipping (BLASST) in the fused attention row: a key far below the running
max changes no state (no exp, no V load); model rule, statistics and HLS C-sim bit-exact
at two parameter sets (tests/cxx/hls_attention_harness.cpp)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hwapprox.approx.attention import AttentionRowSpec
from hwapprox.approx.softmax import OnlineSoftmax

HARNESS = Path(__file__).parent / "cxx" / "hls_attention_harness.cpp"
SPECS = {
    "default": AttentionRowSpec(scale=1 / 8, softmax=OnlineSoftmax(skip_threshold=3.0)),
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
            skip_threshold=1.5,
            off_by_one=True,
        ),
    ),
}
#: (n_keys, dim, dim_v)
SHAPES = {"default": (40, 8, 4), "narrow": (24, 6, 3)}


def _inputs(case, rows, seed):
    sp = SPECS[case]
    n, d, dv = SHAPES[case]
    rng = np.random.default_rng(seed)
    q = sp.q_fmt.quantize(rng.normal(0, 2, (rows, d)))
    k = sp.k_fmt.quantize(rng.normal(0, 2, (rows, n, d)))
    v = sp.v_fmt.quantize(rng.normal(0, 1.5, (rows, n, dv)))
    mask = rng.random((rows, n)) < 0.2
    mask[1] = True
    return sp, q, k, v, mask


def _skip_flags(sp, s, mask):
    """The skip rule written out: running max over the live keys (Softmax_1: from the
    zero logit), a key that is not a new max and lies more than SKIP_TAU below it."""
    tau = sp.softmax.skip_raw
    flags = np.zeros(s.shape, bool)
    for r in range(s.shape[0]):
        m = 0 if sp.softmax.off_by_one else None
        for j in range(s.shape[1]):
            if mask[r, j]:
                continue
            x = int(s[r, j])
            if m is None or x > m:
                m = x
            elif m - x > tau:
                flags[r, j] = True
    return flags


@pytest.mark.parametrize("case", sorted(SPECS))
def test_a_skipped_key_is_a_masked_key(case):
    """Skipping = masking the keys the rule flags, on the row without skipping."""
    sp, q, k, v, mask = _inputs(case, 60, 1)
    s = sp.scores(q, k)
    flags = _skip_flags(sp, s, mask)
    plain = sp.with_(softmax=sp.softmax.replace(skip_threshold=None))
    assert np.array_equal(sp.model(q, k, v, mask), plain.model(q, k, v, mask | flags))
    st = sp.skip_stats(s, v, mask)
    assert st["skip_fraction"] == pytest.approx(flags.sum() / (~mask).sum())
    assert 0.05 < st["skip_fraction"] < 0.9
    y0 = plain.model(q, k, v, mask)
    err = np.abs(sp.out_fmt.to_float(sp.model(q, k, v, mask)) - sp.out_fmt.to_float(y0))
    assert st["skip_max_abs"] == pytest.approx(err.max())
    assert plain.skip_stats(s, v, mask)["skip_fraction"] is None


def test_fused_row_refuses_unified_max_and_log_codes():
    with pytest.raises(Exception, match=r"has unified_max or a log out_code"):
        AttentionRowSpec(softmax=OnlineSoftmax(unified_max=2.0))
    with pytest.raises(Exception, match=r"has unified_max or a log out_code"):
        AttentionRowSpec(softmax=OnlineSoftmax(out_code="log2"))


@pytest.fixture(scope="module")
def exe():
    from hwapprox.hls.attention import attention_instances
    from hwapprox.hls.csim import build_harness

    insts = [
        i for j, c in enumerate(SPECS) for i in attention_instances(f"sk{j}", SPECS[c], *SHAPES[c])
    ]
    rows = [(str(j), "run_rows", f"sk{j}") for j in range(len(SPECS))]
    rows += [(str(10 + j), "run_rows_stream", f"sk{j}") for j in range(len(SPECS))]
    return build_harness(HARNESS, insts, rows, name="hls_attention_skip")


def _csim(exe, case, io, q, k, v, mask):
    from hwapprox.hls.csim import run_harness

    j = list(SPECS).index(case) + (10 if io == "stream" else 0)
    per = [
        np.concatenate([q[r], k[r].ravel(), v[r].ravel(), mask[r].astype(np.int64)])
        for r in range(len(q))
    ]
    (got,) = run_harness(exe, [[j, len(q), *np.concatenate(per)]], [SPECS[case].out_fmt])
    return got.reshape(len(q), -1)


@pytest.mark.hls
@pytest.mark.parametrize("io", ["arrays", "stream"])
@pytest.mark.parametrize("case", sorted(SPECS))
def test_attention_skip_csim_bit_exact(exe, case, io):
    sp, q, k, v, mask = _inputs(case, 50, 2)
    got = _csim(exe, case, io, q, k, v, mask)
    assert np.array_equal(got, sp.model(q, k, v, mask))
    # able to fail: the same outputs differ from the row without skipping
    plain = sp.with_(softmax=sp.softmax.replace(skip_threshold=None))
    assert not np.array_equal(got, plain.model(q, k, v, mask))
