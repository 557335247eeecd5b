"""C simulation of hwapprox/attnact.h (sigmoid and ReLU attention), bit-exact with
hwapprox.approx.attnact on every input code (inputs <= 14 bits) or >= 10,000 codes.

The cases include every RTL test's parameter set of these operators
(``rtl_cases.py``), so Python = HLS = RTL on the same codes; each case's type
widths are checked against ``hw_params()`` and the SV parameters
(``hls_widths_check.py``). Every input goes through the array unit (io_parallel)
and the hls::stream unit (io_stream).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hls_widths_check import check_widths, read_widths, widths_rows
from rtl_cases import CASES as RTL_CASES

from hwapprox.approx.registry import make_spec
from hwapprox.approx.stimulus import edge_codes
from hwapprox.hls.csim import build_harness, run_harness
from hwapprox.hls.units import unit_instance

pytestmark = pytest.mark.hls

HARNESS = Path(__file__).parent / "cxx" / "hls_attnact_harness.cpp"
OPS = ("sigmoid_attention", "relu_attention")

# (operator, method, fields): three format sets per method
CASES: list[tuple[str, str, dict]] = [
    ("sigmoid_attention", "lut", {}),
    ("sigmoid_attention", "lut", {"in_fmt": "ap_fixed<12,6>", "seq_len": 1000}),
    (
        "sigmoid_attention",
        "lut",
        {"in_fmt": "ap_fixed<16,6>", "index_bits": 11, "bias": -2.0,
         "out_fmt": "ap_ufixed<8,0,AP_TRN,AP_SAT>"},
    ),
    ("sigmoid_attention", "pwl", {}),
    (
        "sigmoid_attention",
        "pwl",
        {"in_fmt": "ap_fixed<12,5>", "out_fmt": "ap_ufixed<10,1,AP_RND_CONV,AP_SAT>",
         "segments": 8, "seq_len": 64, "slope_fmt": "ap_fixed<12,0>"},
    ),
    (
        "sigmoid_attention",
        "pwl",
        {"in_fmt": "ap_fixed<14,6>", "out_fmt": "ap_ufixed<16,0,AP_RND,AP_SAT>",
         "segments": 64, "bias": 0.0},
    ),
    ("relu_attention", "wortsman", {}),
    (
        "relu_attention",
        "wortsman",
        {"in_fmt": "ap_fixed<12,5>", "out_fmt": "ap_ufixed<12,2,AP_TRN,AP_SAT>", "seq_len": 100},
    ),
    (
        "relu_attention",
        "wortsman",
        {"in_fmt": "ap_fixed<20,8>", "out_fmt": "ap_ufixed<8,0,AP_RND_CONV,AP_SAT>",
         "seq_len": 3, "recip_bits": 10},
    ),
]  # fmt: skip
CASES += [(op, m, f) for _, op, m, f, _ in RTL_CASES if op in OPS and (op, m, f) not in CASES]
N_IN = 16
STREAM_ID0 = 3000


@pytest.fixture(scope="module")
def setup():
    specs = [make_spec(op, m, **f) for op, m, f in CASES]
    insts = [unit_instance(f"a{i}", s, N_IN) for i, s in enumerate(specs)]
    rows = [(str(i), "run_attnact", f"a{i}") for i in range(len(CASES))]
    rows += widths_rows("a", len(CASES))
    rows += [(str(STREAM_ID0 + i), "run_attnact_stream", f"a{i}") for i in range(len(CASES))]
    return specs, build_harness(HARNESS, insts, rows, name="hls_attnact")


def _inputs(fmt, rng):
    if fmt.width <= 14:  # every code
        return fmt.all_codes()
    return np.concatenate([edge_codes(fmt), rng.integers(fmt.min_raw, fmt.max_raw + 1, 10_000)])


IDS = [f"{op.split('_')[0]}-{m}{i}" for i, (op, m, _) in enumerate(CASES)]


@pytest.mark.parametrize("io", ["parallel", "stream"])
@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_attnact_csim_bit_exact(setup, i, io):
    specs, exe = setup
    spec = specs[i]
    x = _inputs(spec.in_fmt, np.random.default_rng(300 + i)).astype(np.int64)
    uid = i if io == "parallel" else STREAM_ID0 + i
    (got,) = run_harness(exe, [[uid, len(x), *x]], [spec.out_fmt])
    want = spec.model(x)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (
        f"{bad.size} mismatches, e.g. x={x[bad[:3]]}: {got[bad[:3]]} != {want[bad[:3]]}"
    )


def test_attnact_comparison_can_fail(setup):
    """A model one constant away (ReLU's K + 1, the sigmoid's bias + 1/64) disagrees."""
    specs, exe = setup
    for i, changed in ((7, {"recip_bits": 9}), (3, {"bias": specs[3].b + 1 / 64})):
        spec = specs[i]
        x = _inputs(spec.in_fmt, np.random.default_rng(1)).astype(np.int64)
        (got,) = run_harness(exe, [[i, len(x), *x]], [spec.out_fmt])
        assert np.array_equal(got, spec.model(x))
        assert not np.array_equal(got, spec.replace(**changed).model(x))


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_attnact_widths_are_hw_params_and_sv_parameters(setup, i):
    specs, exe = setup
    check_widths(specs[i], N_IN, read_widths(exe, i))
