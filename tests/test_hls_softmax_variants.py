"""C simulation of the issue-15 options of the online softmax unit (hwapprox/softmax.h):
unified max, threshold skipping and log-coded outputs, bit-exact with the model.

Two or more parameter sets per option (and combinations), array and stream units, with
mask bits; type widths equal ``hw_params()``; and the comparison shown able to fail
(the same C-sim outputs against a model one constant away)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hls_widths_check import WIDTHS_ID0, read_widths, widths_rows

from hwapprox.approx.registry import make_spec
from hwapprox.approx.stimulus import edge_rows
from hwapprox.hls.csim import build_harness, run_harness
from hwapprox.hls.units import unit_instance

pytestmark = pytest.mark.hls

HARNESS = Path(__file__).parent / "cxx" / "hls_softmax_variants_harness.cpp"
NARROW = {
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
}
# (name, fields, row length N, input centre)
CASES = [
    ("unified", {"unified_max": 6.0}, 16, 3.0),
    ("unified_narrow", {**NARROW, "unified_max": 3.5, "unified_low": 2}, 8, 1.5),
    ("unified_two_pass", {"unified_max": 4.0, "schedule": "two_pass", "unified_low": 6}, 6, 1.0),
    ("skip", {"skip_threshold": 3.0}, 16, 0.0),
    ("skip_narrow_two_pass", {**NARROW, "skip_threshold": 2.0, "schedule": "two_pass"}, 8, 0.0),
    (
        "skip_softmax_1_clip",
        {"skip_threshold": 4.5, "off_by_one": True, "clip_gamma": -0.1, "clip_zeta": 1.1},
        12,
        0.0,
    ),
    ("log2", {"out_code": "log2", "out_code_bits": 5}, 8, 0.0),
    ("log2sqrt2_narrow", {**NARROW, "out_code": "log2sqrt2", "out_code_bits": 4}, 8, 0.0),
    ("log2_unified", {"unified_max": 5.0, "out_code": "log2", "out_code_bits": 4}, 8, 2.0),
    (
        "log2sqrt2_skip",
        {
            "skip_threshold": 2.5,
            "out_code": "log2sqrt2",
            "out_code_bits": 6,
            "schedule": "two_pass",
        },
        10,
        0.0,
    ),
    # log codes of the other methods: their unit, then softmax.h's post-stage
    ("log2_softermax", {"_method": "softermax", "out_code": "log2", "out_code_bits": 5}, 8, 0.0),
    (
        "log2sqrt2_shiftmax",
        {"_method": "shiftmax", "out_code": "log2sqrt2", "out_code_bits": 4},
        8,
        0.0,
    ),
    ("log2_ibert", {"_method": "ibert", "out_code": "log2", "out_code_bits": 6}, 12, 0.0),
    ("log2_hls4ml", {"_method": "hls4ml_stable", "out_code": "log2"}, 8, 0.0),
]
IDS = [c[0] for c in CASES]


def _spec(fields: dict):
    f = {k: v for k, v in fields.items() if k != "_method"}
    return make_spec("softmax", fields.get("_method", "online"), **f)


STREAM_ID0 = 100


@pytest.fixture(scope="module")
def setup():
    specs = [_spec(f) for _, f, _, _ in CASES]
    insts = [
        unit_instance(f"v{i}", s, c[2]) for i, (s, c) in enumerate(zip(specs, CASES, strict=True))
    ]
    rows = [(str(i), "run_array", f"v{i}") for i in range(len(CASES))]
    rows += [(str(STREAM_ID0 + i), "run_stream", f"v{i}") for i in range(len(CASES))]
    rows += widths_rows("v", len(CASES))
    harness = HARNESS.read_text()
    if "hls_widths.h" not in harness:  # the width report of every instance
        raise AssertionError("the harness must include hls_widths.h")
    return specs, build_harness(HARNESS, insts, rows, name="hls_softmax_variants")


def _inputs(spec, n, centre, seed):
    fmt = spec.in_fmt
    rng = np.random.default_rng(seed)
    one = 1 << fmt.frac_bits
    x = [
        rng.normal(centre * one, 2 * one, (400, n)),
        rng.normal(centre * one, 0.7 * one, (200, n)),  # mostly inside phi's safe range
        rng.integers(fmt.min_raw, fmt.max_raw + 1, (100, n)),
        edge_rows(fmt, n, rng, every_position=True),
    ]
    x = np.clip(np.concatenate(x), fmt.min_raw, fmt.max_raw).astype(np.int64)
    mask = rng.random(x.shape) < np.where(np.arange(len(x)) % 3 == 0, 0.0, 0.3)[:, None]
    mask[5] = True  # fully masked
    mask[7] = True
    mask[7, n // 2] = False  # one live element
    return x, mask


def _csim(exe, i, io, x, mask, spec):
    uid = i if io == "array" else STREAM_ID0 + i
    rec = [uid, len(x), *x.ravel(), *mask.astype(np.int64).ravel()]
    fmt = spec.out_fmt if spec.out_code == "linear" else None
    if fmt is None:  # log codes: unsigned integers of out_code_bits
        from hwapprox.fixed import FixedFormat

        fmt = FixedFormat(spec.out_code_bits, spec.out_code_bits, signed=False)
    (got,) = run_harness(exe, [rec], [fmt])
    return got.reshape(x.shape)


@pytest.mark.parametrize("io", ["array", "stream"])
@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_variant_csim_bit_exact(setup, i, io):
    specs, exe = setup
    spec, (_, _, n, centre) = specs[i], CASES[i]
    x, mask = _inputs(spec, n, centre, 500 + i)
    got = _csim(exe, i, io, x, mask, spec)
    want = spec.model(x, mask=mask)
    bad = np.argwhere(got != want)
    assert bad.size == 0, f"{len(bad)} of {want.size} differ, first at {tuple(bad[0])}"
    assert len(np.unique(want)) > 4
    if spec.method != "online":  # log codes of another unit: no unified / skip options
        return
    st = spec.model_stats(x, mask=mask)
    if spec.unified_max is not None:  # both paths are exercised
        assert 0.05 < st["fallback_rate"] < 0.95, st
    if spec.skip_threshold is not None:
        assert 0.02 < st["skip_fraction"] < 0.9, st


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_variant_widths_are_hw_params(setup, i):
    specs, exe = setup
    hw = specs[i].hw_params(CASES[i][2])
    got = read_widths(exe, i)
    if specs[i].method == "online":
        assert {"UOUTP_W", "U_S_W"} <= set(got)
    for name, ws in got.items():
        assert ws == [hw[name]] * len(ws), f"{name}: HLS {ws}, hw_params {hw[name]}"
    assert STREAM_ID0 + len(CASES) < WIDTHS_ID0


@pytest.mark.parametrize(
    ("i", "change"),
    [
        (0, {"unified_max": 6.0 + 2.0**-10}),  # φ one input LSB up
        (1, {"unified_low": 3}),
        (3, {"skip_threshold": 3.0 + 2.0**-10}),  # τ one LSB up
        (4, {"skip_threshold": None}),
        (6, {"out_code": "log2", "out_code_bits": 6}),
        (7, {"out_code": "log2"}),
        (10, {"out_code": "log2sqrt2"}),  # softermax's codes through the post-stage
        (12, {"out_code_bits": 5}),  # I-BERT's
    ],
)
def test_variant_csim_check_can_fail(setup, i, change):
    """The same C-sim outputs differ from a model one constant away (the comparison is
    able to fail)."""
    specs, exe = setup
    spec, (_, _, n, centre) = specs[i], CASES[i]
    x, mask = _inputs(spec, n, centre, 500 + i)
    got = _csim(exe, i, "array", x, mask, spec)
    other = spec.replace(**change)
    assert not np.array_equal(got, other.model(x, mask=mask))
    assert np.array_equal(got, spec.model(x, mask=mask))


def test_other_units_refuse_the_options():
    from hwapprox.rtl_sim.units import get_unit

    # every HLS softmax unit has log codes (above); the online RTL unit has all three
    # options (tests/test_rtl_units.py)
    unit = get_unit("softmax", "online")
    for kw in ({"unified_max": 2.0}, {"skip_threshold": 3.0}, {"out_code": "log2sqrt2"}):
        params, _ = unit.config(make_spec("softmax", "online", **kw), 16)
        assert params["UNIFIED"] + params["SKIP"] + (params["OUT_CODE"] == 2) == 1
    # every RTL softmax unit has the log-code stage (hwa_out_code after the unit)
    for m in ("softermax", "shiftmax", "ibert"):
        params, _ = get_unit("softmax", m).config(make_spec("softmax", m, out_code="log2"), 16)
        assert params["OUT_CODE"] == 1
