"""C simulation of hwapprox/softmax.h, bit-exact with hwapprox.approx.softmax.

The cases include every RTL test's softmax parameter set (``rtl_cases.py``);
each case's type widths are checked against ``hw_params()`` and the SV
parameters (``hls_widths_check.py``) on the same binary. Every input goes
through the array unit (io_parallel) and the hls::stream unit (io_stream),
without and with mask bits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hls_widths_check import check_widths, read_widths, widths_rows
from rtl_cases import CASES as RTL_CASES

from hwapprox.approx.registry import make_spec
from hwapprox.approx.stimulus import edge_rows
from hwapprox.fixed import FixedFormat
from hwapprox.hls.csim import build_harness, run_harness
from hwapprox.hls.units import unit_instance

pytestmark = pytest.mark.hls

HARNESS = Path(__file__).parent / "cxx" / "hls_softmax_harness.cpp"

# (method, fields, row length N)
CASES = [
    ("online", {}, 8),
    ("online", {"schedule": "two_pass", "recip_unit": "lut", "exp_interp": "none"}, 5),
    (
        "online",
        {
            "in_fmt": "ap_fixed<10,4,AP_RND,AP_SAT>",
            "out_fmt": "ap_ufixed<8,0,AP_RND,AP_SAT>",
            "exp_unit": "lut",
            "exp_fmt": "ap_ufixed<12,1,AP_RND>",
            "exp_lut_bits": 8,
            "exp_lut_int_bits": 4,
            "sum_fmt": "ap_ufixed<20,6,AP_TRN>",
            "recip_fmt": "ap_ufixed<14,1,AP_TRN>",
            "recip_table_bits": 4,
            "recip_work_frac_bits": 14,
            "newton_steps": 1,
        },
        16,
    ),
    (
        "online",
        {
            "in_fmt": "ap_fixed<12,5>",
            "exp_fmt": "ap_ufixed<16,1,AP_RND>",
            "exp_arg_fmt": "ap_ufixed<20,5,AP_TRN,AP_SAT>",
            "exp_frac_bits": 5,
            "sum_fmt": "ap_ufixed<28,12,AP_TRN>",
            "recip_unit": "lut",
        },
        4,
    ),
    ("ibert", {}, 8),
    ("ibert", {"in_fmt": "ap_fixed<12,5>", "out_fmt": "ap_ufixed<12,1,AP_TRN,AP_SAT>"}, 16),
    ("ibert", {"requant": "shift"}, 6),
    ("shiftmax", {}, 8),
    ("shiftmax", {"in_fmt": "ap_fixed<8,3>", "out_fmt": "ap_ufixed<8,0,AP_TRN,AP_SAT>"}, 16),
    ("shiftmax", {"variant": "tvm", "n": 12, "out_fmt": "ap_ufixed<10,1,AP_TRN,AP_WRAP>"}, 6),
    ("online", {"off_by_one": True}, 8),  # Softmax_1
    ("online", {"clip_gamma": -0.03, "clip_zeta": 1.03}, 8),  # clipped softmax
    (
        "online",
        {
            "clip_gamma": -0.25,
            "clip_zeta": 1.5,
            "schedule": "two_pass",
            "clip_frac_bits": 10,
            "out_fmt": "ap_fixed<12,2,AP_TRN,AP_SAT>",
        },
        6,
    ),
    ("online", {"off_by_one": True, "schedule": "two_pass", "exp_unit": "lut"}, 6),
    ("softermax", {}, 8),
    (
        "softermax",
        {
            "in_fmt": "ap_fixed<10,4>",
            "out_fmt": "ap_ufixed<10,0,AP_TRN,AP_SAT>",
            "t_fmt": "ap_fixed<14,6,AP_TRN,AP_SAT>",
            "pow2_fmt": "ap_ufixed<12,1,AP_TRN>",
            "pow2_segments_log2": 3,
            "sum_fmt": "ap_ufixed<20,6,AP_RND>",
            "recip_segments_log2": 5,
        },
        12,
    ),
    ("hls4ml_stable", {}, 8),
    (
        "hls4ml_stable",
        {
            "in_fmt": "ap_fixed<12,4>",
            "accum_fmt": "ap_fixed<18,8,AP_RND,AP_SAT>",
            "exp_table_size": 256,
            "inv_table_size": 512,
        },
        5,
    ),
    ("hls4ml_latency", {}, 4),
    (
        "hls4ml_latency",
        {"in_fmt": "ap_fixed<12,4>", "exp_table_size": 256, "inv_table_size": 512},
        8,
    ),
    (
        "hls4ml_latency",
        {
            "in_fmt": "ap_fixed<10,3,AP_RND,AP_SAT>",
            "out_fmt": "ap_fixed<12,2,AP_RND,AP_SAT>",
            "accum_fmt": "ap_fixed<18,8,AP_RND,AP_SAT>",
        },
        6,
    ),
    (
        "hls4ml_stable",
        {
            "in_fmt": "ap_fixed<10,3>",
            "out_fmt": "ap_fixed<12,2,AP_RND,AP_SAT>",
            "exp_table_size": 512,
        },
        6,
    ),
    ("online", {}, 1),  # a row of one element: output 1.0 (saturated)
    ("hls4ml_stable", {}, 1),
]
CASES += [
    (m, f, n)
    for _, op, m, f, n in RTL_CASES
    if op == "softmax" and (m, f) not in [(cm, cf) for cm, cf, _ in CASES]
]

N_VALUES = 10_000  # raw input values per case (issue 4)
MASKED_ID0 = 2000  # harness id of instance i's masked entry point: MASKED_ID0 + i
STREAM_ID0 = 3000  # ... of its io_stream entry point
MASKED_STREAM_ID0 = 4000  # ... of its io_stream entry point with a mask stream
MASKED_ROWS = 10_000  # masked rows per method, over its format sets


@pytest.fixture(scope="module")
def setup():
    specs = [make_spec("softmax", m, **f) for m, f, _ in CASES]
    insts = [
        unit_instance(f"s{i}", s, c[2]) for i, (s, c) in enumerate(zip(specs, CASES, strict=True))
    ]
    rows = [(str(i), "run_softmax", f"s{i}") for i in range(len(CASES))]
    rows += widths_rows("s", len(CASES))
    for id0, run in (
        (MASKED_ID0, "run_softmax_masked"),
        (STREAM_ID0, "run_softmax_stream"),
        (MASKED_STREAM_ID0, "run_softmax_stream_masked"),
    ):
        rows += [(str(id0 + i), run, f"s{i}") for i in range(len(CASES))]
    return specs, build_harness(HARNESS, insts, rows, name="hls_softmax")


def _out_format(spec):
    """How the harness's output bits read: out_fmt codes, or (out_code, the RTL cases'
    log-coded outputs) unsigned integers of out_code_bits."""
    if spec.out_code == "linear":
        return spec.out_fmt
    return FixedFormat(spec.out_code_bits, spec.out_code_bits, signed=False)


def _rows(fmt, n, rng):
    lo, hi = fmt.min_raw, fmt.max_raw
    one = 1 << fmt.frac_bits
    k = max(60, -(-N_VALUES // (2 * n)))  # random rows per kind: >= N_VALUES values in all
    r = [
        rng.integers(lo, hi + 1, size=(k, n)),  # full range (huge differences)
        np.clip(rng.normal(0, 3 * one, (k, n)), lo, hi).astype(np.int64),  # attention-like
        # one-hot at every position (on 0 and on min), tied maxima, constants,
        # alternating min/max, ramps (increasing: rescale every step): shared with the RTL tests
        edge_rows(fmt, n, rng, every_position=True),
    ]
    return np.clip(np.concatenate(r), lo, hi).astype(np.int64)


@pytest.mark.parametrize("io", ["parallel", "stream"])
@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{m}-{n}" for m, _, n in CASES])
def test_softmax_csim_bit_exact(setup, i, io):
    specs, exe = setup
    spec, n = specs[i], CASES[i][2]
    x = _rows(spec.in_fmt, n, np.random.default_rng(300 + i))
    uid = i if io == "parallel" else STREAM_ID0 + i
    (got,) = run_harness(exe, [[uid, len(x), *x.ravel()]], [_out_format(spec)])
    want = spec.model(x).ravel()
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} mismatches, first rows {sorted(set(bad // n))[:3]}"


@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{m}-{n}" for m, _, n in CASES])
def test_softmax_widths_are_hw_params_and_sv_parameters(setup, i):
    specs, exe = setup
    check_widths(specs[i], CASES[i][2], read_widths(exe, i))


def _masked_rows(spec, n, rows, rng):
    """``rows`` rows of n codes with masks of every kind: random (10/50/90 %),
    masked maxima, all but one masked, fully masked, masked prefixes, no bit set."""
    fmt = spec.in_fmt
    base = _rows(fmt, n, rng)
    x = base[rng.integers(0, len(base), rows)]
    kind = np.arange(rows) % 8
    p = np.where(kind == 0, 0.1, np.where(kind == 1, 0.5, 0.9))[:, None]
    m = rng.random((rows, n)) < p  # kinds 0, 1, 2: random bits
    top = x == x.max(axis=1, keepdims=True)
    m[kind == 3] = top[kind == 3] | (rng.random((int((kind == 3).sum()), n)) < 0.3)  # maxima
    keep = rng.integers(0, n, rows)
    but_one = np.ones((rows, n), bool)
    but_one[np.arange(rows), keep] = False
    m[kind == 4] = but_one[kind == 4]  # all but one masked
    m[kind == 5] = True  # fully masked
    prefix = np.arange(n)[None, :] < rng.integers(1, n + 1, rows)[:, None]
    m[kind == 6] = prefix[kind == 6]  # a masked prefix: the online state starts late
    m[kind == 7] = False  # no bit set: the masked entry point = the unmasked unit
    return x, m


def _masked_rows_per_case(i):
    method = CASES[i][0]
    k = sum(1 for c in CASES if c[0] == method)
    return -(-MASKED_ROWS // k)  # >= MASKED_ROWS rows per method over its cases


@pytest.mark.parametrize("io", ["parallel", "stream"])
@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{m}-{n}" for m, _, n in CASES])
def test_softmax_masked_csim_bit_exact(setup, i, io):
    specs, exe = setup
    spec, n = specs[i], CASES[i][2]
    rng = np.random.default_rng(700 + i)
    x, m = _masked_rows(spec, n, _masked_rows_per_case(i), rng)
    uid = (MASKED_ID0 if io == "parallel" else MASKED_STREAM_ID0) + i
    rec = [uid, len(x), *x.ravel(), *m.ravel().astype(np.int64)]
    (got,) = run_harness(exe, [rec], [_out_format(spec)])
    want = spec.model(x, mask=m).ravel()
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} mismatches, first rows {sorted(set(bad // n))[:3]}"
    # masked outputs are 0 (log codes: the zero code)
    zero = 0 if spec.out_code == "linear" else (1 << spec.out_code_bits) - 1
    assert (got[m.ravel()] == zero).all()


def test_masked_rows_cover_every_method():
    total: dict[str, int] = {}
    for i, (method, _, _) in enumerate(CASES):
        total[method] = total.get(method, 0) + _masked_rows_per_case(i)
    assert min(total.values()) >= MASKED_ROWS, total
    assert all(sum(1 for c in CASES if c[0] == m) >= 2 for m in total)
