"""C simulation of hwapprox/linear.h, bit-exact with hwapprox.approx.linear."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hwapprox.approx.linear import AddSpec, MatMulSpec
from hwapprox.hls.csim import build_harness, run_harness
from hwapprox.hls.emit import add_instance, matmul_instance

pytestmark = pytest.mark.hls

HARNESS = Path(__file__).parent / "cxx" / "hls_linear_harness.cpp"

# (spec, n_rows, n_inner, n_cols): dense with bias, Q.K^T (transposed B),
# P.V, rounding/saturating/wrapping accumulators, unsigned operands.
MATMULS = [
    (
        MatMulSpec(
            "ap_fixed<8,3>",
            "ap_fixed<8,2>",
            "ap_fixed<24,10>",
            "ap_fixed<10,4,AP_RND,AP_SAT>",
            "ap_fixed<8,3>",
        ),
        4,
        8,
        6,
    ),
    (
        MatMulSpec(
            "ap_fixed<8,3>",
            "ap_fixed<6,1>",
            "ap_fixed<10,4,AP_RND,AP_SAT>",
            "ap_fixed<8,3>",
            "ap_fixed<8,3>",
        ),
        3,
        7,
        5,
    ),
    (
        MatMulSpec(
            "ap_fixed<10,4>",
            "ap_fixed<10,4>",
            "ap_fixed<12,5,AP_RND_CONV,AP_WRAP>",
            "ap_fixed<9,5,AP_TRN_ZERO,AP_SAT>",
            transpose_b=True,
        ),
        4,
        4,
        4,
    ),
    (
        MatMulSpec(
            "ap_ufixed<8,0>",
            "ap_fixed<8,4>",
            "ap_fixed<16,6,AP_TRN,AP_SAT>",
            "ap_fixed<12,6,AP_RND_ZERO,AP_WRAP>",
        ),
        4,
        4,
        4,
    ),
    (
        MatMulSpec(
            "ap_fixed<16,6>",
            "ap_fixed<12,2>",
            "ap_fixed<32,12,AP_RND_INF,AP_SAT_SYM>",
            "ap_fixed<16,6,AP_RND_MIN_INF,AP_SAT_ZERO>",
            "ap_fixed<16,6>",
        ),
        2,
        9,
        3,
    ),
]
ADDS = [
    (AddSpec("ap_fixed<8,3>", "ap_fixed<10,2>", "ap_fixed<8,3,AP_RND,AP_SAT>"), 16),
    (AddSpec("ap_fixed<16,6>", "ap_fixed<16,6>", "ap_fixed<12,4,AP_RND_CONV,AP_WRAP>"), 8),
]


@pytest.fixture(scope="module")
def exe():
    insts, rows = [], []
    for i, (spec, m, k, n) in enumerate(MATMULS):
        insts.append(matmul_instance(f"mm{i}", spec, m, k, n))
        rows.append((str(i), "run_matmul", f"mm{i}"))
    for j, (spec, n) in enumerate(ADDS):
        insts.append(add_instance(f"add{j}", spec, n))
        rows.append((str(100 + j), "run_add", f"add{j}"))
    return build_harness(HARNESS, insts, rows, name="hls_linear")


def _rand(fmt, shape, rng, edges=True):
    x = rng.integers(fmt.min_raw, fmt.max_raw + 1, size=shape, dtype=np.int64)
    if edges:
        flat = x.reshape(-1)
        flat[:2] = [fmt.min_raw, fmt.max_raw]
    return x


def test_matmul_csim_bit_exact(exe):
    rng = np.random.default_rng(2026)
    records, fmts, expected = [], [], []
    for i, (spec, m, k, n) in enumerate(MATMULS):
        for trial in range(20):
            a = _rand(spec.a_fmt, (m, k), rng)
            bshape = (n, k) if spec.transpose_b else (k, n)
            b = _rand(spec.b_fmt, bshape, rng)
            if trial == 0:  # all-extreme operands drive the accumulator into overflow
                a[:] = spec.a_fmt.max_raw
                b[:] = spec.b_fmt.min_raw if spec.b_fmt.signed else spec.b_fmt.max_raw
            bias = _rand(spec.bias_fmt, (n,), rng) if spec.bias_fmt is not None else None
            rec = [i, *a.ravel(), *b.ravel()]
            if bias is not None:
                rec += list(bias)
            records.append(rec)
            fmts.append(spec.out_fmt)
            expected.append(spec.model(a, b, bias).ravel())
    got = run_harness(exe, records, fmts)
    for rec, g, e in zip(records, got, expected, strict=True):
        assert np.array_equal(g, e), f"instance {rec[0]}: csim {g} != model {e}"


def test_add_csim_bit_exact(exe):
    rng = np.random.default_rng(11)
    records, fmts, expected = [], [], []
    for j, (spec, n) in enumerate(ADDS):
        for _ in range(30):
            a = _rand(spec.a_fmt, (n,), rng)
            b = _rand(spec.b_fmt, (n,), rng)
            records.append([100 + j, *a, *b])
            fmts.append(spec.out_fmt)
            expected.append(spec.model(a, b))
    got = run_harness(exe, records, fmts)
    for g, e in zip(got, expected, strict=True):
        assert np.array_equal(g, e)
