"""C simulation of hwapprox/layernorm.h, bit-exact with hwapprox.approx.layernorm.

The cases include every RTL test's LayerNorm parameter set (``rtl_cases.py``);
each case's type widths are checked against ``hw_params()`` and the SV
parameters (``hls_widths_check.py``) on the same binary. Every input goes
through the array unit (io_parallel) and the hls::stream unit (io_stream).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hls_widths_check import check_widths, read_widths, widths_rows
from rtl_cases import CASES as RTL_CASES

from hwapprox.approx.registry import make_spec
from hwapprox.approx.stimulus import edge_rows
from hwapprox.hls.csim import build_harness, run_harness
from hwapprox.hls.units import unit_instance

pytestmark = pytest.mark.hls

HARNESS = Path(__file__).parent / "cxx" / "hls_layernorm_harness.cpp"

# (method, fields, row length N)
CASES = [
    ("rsqrt_lut", {}, 8),
    (
        "rsqrt_lut",
        {
            "in_fmt": "ap_fixed<10,4,AP_RND,AP_SAT>",
            "out_fmt": "ap_fixed<12,4,AP_RND_CONV,AP_SAT>",
            "gamma_fmt": "ap_fixed<8,2>",
            "beta_fmt": "ap_fixed<8,2>",
            "max_n": 64,
            "rsqrt_table_bits": 4,
            "rsqrt_frac_bits": 14,
            "newton_steps": 1,
            "eps": 1e-3,
            "norm_frac_bits": 12,
        },
        16,
    ),
    (
        "rsqrt_lut",
        {
            "in_fmt": "ap_fixed<16,6>",
            "max_n": 32,
            "newton_steps": 0,
            "eps_guard_bits": 8,
            "out_fmt": "ap_fixed<16,5,AP_TRN,AP_WRAP>",
        },
        5,
    ),
    ("rmsnorm", {"in_fmt": "ap_fixed<12,5>", "max_n": 16}, 12),
    ("rmsnorm", {"max_n": 64}, 8),
    (
        "rmsnorm",
        {
            "in_fmt": "ap_fixed<10,4,AP_RND,AP_SAT>",
            "out_fmt": "ap_fixed<12,4,AP_RND_CONV,AP_SAT>",
            "gamma_fmt": "ap_fixed<8,2>",
            "max_n": 32,
            "rsqrt_table_bits": 4,
            "newton_steps": 1,
        },
        16,
    ),
    ("ibert", {}, 8),
    (
        "ibert",
        {
            "in_fmt": "ap_fixed<12,4>",
            "out_fmt": "ap_fixed<10,3,AP_RND_CONV,AP_SAT>",
            "gamma_fmt": "ap_fixed<8,2>",
            "beta_fmt": "ap_fixed<8,2>",
            "shift": 2,
            "norm_frac_bits": 14,
        },
        16,
    ),
    ("ibert", {"in_fmt": "ap_fixed<16,6>", "out_fmt": "ap_fixed<16,4,AP_TRN,AP_WRAP>"}, 3),
    ("rsqrt_lut", {}, 1),  # a row of one element: zero variance, output beta
    ("ibert", {}, 1),
    ("ivit", {}, 8),
    (
        "ivit",
        {
            "in_fmt": "ap_fixed<8,3>",  # I-ViT's 8-bit inputs
            "out_fmt": "ap_fixed<10,3,AP_RND_CONV,AP_SAT>",
            "gamma_fmt": "ap_fixed<8,2>",
            "beta_fmt": "ap_fixed<8,2>",
            "norm_frac_bits": 14,
        },
        24,
    ),
    ("ivit", {"newton_iterations": 6}, 3),  # fewer steps: far from isqrt, still bit-exact
    ("ivit", {}, 1),  # zero variance: std = 64 as the source, output beta
    ("hls4ml_lut", {}, 8),  # hls4ml 1.3's generated types (its Σd² wraps: reproduced)
    (
        "hls4ml_lut",
        {
            "in_fmt": "ap_fixed<12,4>",
            "accum_fmt": "ap_fixed<24,10,AP_RND,AP_SAT>",
            "table_fmt": "ap_ufixed<12,6,AP_RND_CONV,AP_SAT>",
            "table_size": 1024,
            "table_range_power2": 2,
            "out_fmt": "ap_fixed<14,5,AP_RND,AP_SAT>",
        },
        16,
    ),
]
CASES += [
    (m, f, n)
    for _, op, m, f, n in RTL_CASES
    if op == "layernorm" and (m, f) not in [(cm, cf) for cm, cf, _ in CASES]
]

N_VALUES = 10_000  # raw input values per case (issue 4)
STREAM_ID0 = 3000  # harness id of instance i's io_stream entry point: STREAM_ID0 + i


@pytest.fixture(scope="module")
def setup():
    specs = [make_spec("layernorm", m, **f) for m, f, _ in CASES]
    insts = [
        unit_instance(f"ln{i}", s, c[2]) for i, (s, c) in enumerate(zip(specs, CASES, strict=True))
    ]
    rows = [(str(i), "run_ln", f"ln{i}") for i in range(len(CASES))]
    rows += widths_rows("ln", len(CASES))
    rows += [(str(STREAM_ID0 + i), "run_ln_stream", f"ln{i}") for i in range(len(CASES))]
    return specs, build_harness(HARNESS, insts, rows, name="hls_layernorm")


def _rows(spec, n, rng):
    fmt = spec.in_fmt
    k = max(40, -(-N_VALUES // (2 * n)))  # random rows per kind: >= N_VALUES values in all
    r = [
        rng.integers(fmt.min_raw, fmt.max_raw + 1, size=(k, n)),
        # realistic activations: small spread around an offset
        np.clip(
            rng.normal(0, 2 ** (fmt.frac_bits), (k, n)).astype(np.int64) + 3,
            fmt.min_raw,
            fmt.max_raw,
        ),
        # one-hot at every position (on 0 and on min), tied maxima, constants (zero
        # variance), alternating min/max, ramps: shared with the RTL tests
        edge_rows(fmt, n, rng, every_position=True),
    ]
    return np.concatenate(r).astype(np.int64)


@pytest.mark.parametrize("io", ["parallel", "stream"])
@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{m}-{n}" for m, _, n in CASES])
def test_layernorm_csim_bit_exact(setup, i, io):
    specs, exe = setup
    uid = i if io == "parallel" else STREAM_ID0 + i
    spec, (_, _, n) = specs[i], CASES[i]
    rng = np.random.default_rng(100 + i)
    x = _rows(spec, n, rng)
    gf, bf = spec.gamma_fmt, spec.beta_fmt
    params = [
        (rng.integers(gf.min_raw, gf.max_raw + 1, n), rng.integers(bf.min_raw, bf.max_raw + 1, n)),
    ]
    if 1 << gf.frac_bits <= gf.max_raw:  # gamma = 1.0, beta = 0 when representable
        params.append((np.full(n, 1 << gf.frac_bits), np.zeros(n, np.int64)))
    records, fmts, expected = [], [], []
    for g, b in params:
        records.append([uid, len(x), *g, *b, *x.ravel()])
        fmts.append(spec.out_fmt)
        expected.append(spec.model(x, gamma=g, beta=b).ravel())
    got = run_harness(exe, records, fmts)
    for gg, e in zip(got, expected, strict=True):
        assert np.array_equal(gg, e), f"first mismatch at {np.flatnonzero(gg != e)[:5]}"


@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{m}-{n}" for m, _, n in CASES])
def test_layernorm_widths_are_hw_params_and_sv_parameters(setup, i):
    specs, exe = setup
    check_widths(specs[i], CASES[i][2], read_widths(exe, i))
