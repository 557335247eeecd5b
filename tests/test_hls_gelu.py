"""C simulation of hwapprox/gelu.h, bit-exact with hwapprox.approx.gelu.

The cases include every RTL test's GELU parameter set (``rtl_cases.py``);
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
from hwapprox.approx.stimulus import edge_codes
from hwapprox.hls.csim import build_harness, run_harness
from hwapprox.hls.units import unit_instance

pytestmark = pytest.mark.hls

HARNESS = Path(__file__).parent / "cxx" / "hls_gelu_harness.cpp"

# (method, fields): defaults plus other formats/parameters per method.
CASES = [
    ("ibert", {}),
    (
        "ibert",
        {
            "in_fmt": "ap_fixed<12,4>",
            "out_fmt": "ap_fixed<10,3,AP_RND_CONV,AP_SAT>",
            "erf_shift": 6,
            "requant_bits": 16,
        },
    ),
    ("ibert", {"in_fmt": "ap_fixed<20,6>", "out_fmt": "ap_fixed<16,6,AP_TRN,AP_WRAP>"}),
    ("shiftgelu", {}),
    (
        "shiftgelu",
        {
            "in_fmt": "ap_fixed<10,4>",
            "out_fmt": "ap_fixed<12,4,AP_RND_CONV,AP_SAT>",
            "n": 15,
            "sigmoid_bits": 12,
        },
    ),
    ("edgemoe", {}),
    (
        "edgemoe",
        {
            "in_fmt": "ap_fixed<10,4>",
            "out_fmt": "ap_fixed<10,4,AP_RND_CONV,AP_SAT>",
            "entry_fmt": "ap_ufixed<12,0,AP_RND>",
            "step": 0.0625,
            "table_size": 97,
        },
    ),
    ("edgemoe", {"in_fmt": "ap_fixed<8,5>", "step": 0.125, "table_size": 49}),  # f_in < k
    # CLIP's quick_gelu x·σ(1.702x) (form quick): its own tables and fit
    ("edgemoe", {"form": "quick"}),
    ("pwl", {"form": "quick", "in_fmt": "ap_fixed<12,5>", "segments": 16, "lo": -8.0, "hi": 8.0}),
    # SiLU x·σ(x) (form silu, Llama's gate) with the table a SiLU site gets by default
    ("edgemoe", {"form": "silu", "table_size": 513}),
    # a narrow input reaching only the first half of that table: TABLE_SIZE - 1 = 512
    # does not fit the index width (9 bits), so the inside test must not narrow it
    (
        "edgemoe",
        {
            "form": "silu",
            "table_size": 513,
            "in_fmt": "ap_fixed<16,4,AP_RND,AP_SAT>",
            "out_fmt": "ap_fixed<16,3,AP_RND,AP_SAT>",
        },
    ),
    ("pwl", {}),
    (
        "pwl",
        {
            "in_fmt": "ap_fixed<12,4>",
            "out_fmt": "ap_fixed<10,3,AP_RND_CONV,AP_SAT>",
            "segments": 16,
            "lo": -5.0,
            "hi": 3.5,
            "slope_fmt": "ap_fixed<12,2,AP_RND>",
            "intercept_fmt": "ap_fixed<12,2,AP_RND>",
        },
    ),
    (
        "shiftgelu",
        {"in_fmt": "ap_fixed<16,6>", "out_fmt": "ap_fixed<14,4,AP_TRN,AP_SAT>", "n": 20},
    ),
    (
        "pwl",
        {"in_fmt": "ap_fixed<10,4>", "out_fmt": "ap_fixed<12,4,AP_TRN,AP_WRAP>", "segments": 32},
    ),
    ("lut", {}),
    ("lut", {"in_fmt": "ap_fixed<16,6>", "out_fmt": "ap_fixed<16,5>", "index_bits": 10}),
    (
        "lut",
        {"in_fmt": "ap_fixed<14,5>", "out_fmt": "ap_fixed<12,5,AP_RND,AP_SAT>", "index_bits": 9},
    ),
]
CASES += [(m, f) for _, op, m, f, _ in RTL_CASES if op == "gelu" and (m, f) not in CASES]
N_IN = 16
STREAM_ID0 = 3000  # harness id of instance i's io_stream entry point: STREAM_ID0 + i


@pytest.fixture(scope="module")
def setup():
    specs = [make_spec("gelu", m, **f) for m, f in CASES]
    insts = [unit_instance(f"g{i}", s, N_IN) for i, s in enumerate(specs)]
    rows = [(str(i), "run_gelu", f"g{i}") for i in range(len(CASES))]
    rows += widths_rows("g", len(CASES))
    rows += [(str(STREAM_ID0 + i), "run_gelu_stream", f"g{i}") for i in range(len(CASES))]
    return specs, build_harness(HARNESS, insts, rows, name="hls_gelu")


def _inputs(fmt, rng):
    if fmt.width <= 14:  # every code (the whole domain)
        return fmt.all_codes()
    return np.concatenate([edge_codes(fmt), rng.integers(fmt.min_raw, fmt.max_raw + 1, 10_000)])


@pytest.mark.parametrize("io", ["parallel", "stream"])
@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{m}{i}" for i, (m, _) in enumerate(CASES)])
def test_gelu_csim_bit_exact(setup, i, io):
    specs, exe = setup
    spec = specs[i]
    x = _inputs(spec.in_fmt, np.random.default_rng(200 + i)).astype(np.int64)
    uid = i if io == "parallel" else STREAM_ID0 + i
    (got,) = run_harness(exe, [[uid, len(x), *x]], [spec.out_fmt])
    want = spec.model(x)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (
        f"{bad.size} mismatches, e.g. x={x[bad[:3]]}: {got[bad[:3]]} != {want[bad[:3]]}"
    )


@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{m}{i}" for i, (m, _) in enumerate(CASES)])
def test_gelu_widths_are_hw_params_and_sv_parameters(setup, i):
    specs, exe = setup
    check_widths(specs[i], N_IN, read_widths(exe, i))
