"""C simulation of hwapprox/intmath.h, bit-exact with hwapprox.approx.intmath."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hwapprox.approx import intmath as im
from hwapprox.fixed import Rounding, round_shift
from hwapprox.hls.csim import build_harness, run_lines
from hwapprox.hls.emit import Instance

pytestmark = pytest.mark.hls

HARNESS = Path(__file__).parent / "cxx" / "hls_intmath_harness.cpp"
MODES = list(Rounding)  # harness ids 0..6 in this order
TABLE_MODES = {0: Rounding.TRN, 2: Rounding.RND, 6: Rounding.RND_CONV}

EXP2 = [  # (addr_bits, table_frac_bits, rounding id)
    (4, 16, 2),
    (6, 20, 6),
    (3, 12, 0),
]
RECIP = [  # (unit, addr_bits, table_frac_bits, rounding id)
    ("lut", 5, 18, 2),
    ("newton", 4, 10, 6),
    ("lut", 3, 12, 0),
]


def _tables():
    tabs = []
    for ab, tfb, m in EXP2:
        tabs.append(im.exp2_frac_table(ab, tfb, TABLE_MODES[m]))
    for unit, ab, tfb, m in RECIP:
        f = im.recip_pwl_table if unit == "lut" else im.recip_seed_table
        tabs.append(f(ab, tfb, TABLE_MODES[m]))
    return tabs


@pytest.fixture(scope="module")
def exe():
    tabs = _tables()
    insts = [Instance(f"t{i}", tables={"table": t}) for i, t in enumerate(tabs)]
    rows = [(str(i), f"t{i}") for i in range(len(tabs))]
    return build_harness(HARNESS, insts, rows, name="hls_intmath")


def test_round_shift(exe):
    rng = np.random.default_rng(1)
    v = np.concatenate(
        [rng.integers(-(2**40), 2**40, 300), np.arange(-40, 41), [2**61, -(2**61), 0]]
    ).astype(np.int64)
    recs, exp = [], []
    for mid, mode in enumerate(MODES):
        for shift in (-3, 0, 1, 2, 3, 5, 17, 45, 62, 63, 70):
            vv = v if shift >= 0 else v[np.abs(v) < 2**50]
            recs.append([0, mid, shift, len(vv), *vv])
            exp.append(round_shift(vv, shift, mode))
    for got, e in zip(run_lines(exe, recs), exp, strict=True):
        assert np.array_equal(got, e)


def test_i_exp_and_shift_exp(exe):
    rng = np.random.default_rng(2)
    recs, exp = [], []
    for scale in (2.0**-4, 2.0**-6, 0.0123, 2.0**-10):
        k = im.ibert_exp_constants(scale)
        if k.max_exp.bit_length() > 62:
            continue
        x = np.concatenate([[0, -1, 30 * k.x0, 30 * k.x0 - 5], rng.integers(-2000, 1, 200)])
        recs.append([1, k.x0, k.b_int, k.c_int, k.n, len(x), *x])
        exp.append(im.i_exp(x, k))
    for scale, n, variant in (
        (2.0**-4, 15, "pytorch"),
        (2.0**-6, 23, "tvm"),
        (0.05, 15, "pytorch"),
    ):
        x0 = im.shift_exp_x0(scale, variant)
        x = np.concatenate([[0, -1, -3000], rng.integers(-3000, 1, 200)])
        recs.append([2, x0, n, int(variant == "tvm"), len(x), *x])
        exp.append(im.shift_exp(x, x0, n, variant))
    for got, e in zip(run_lines(exe, recs), exp, strict=True):
        assert np.array_equal(got, e)


def test_exp2_and_reciprocal(exe):
    rng = np.random.default_rng(3)
    tabs = _tables()
    recs, exp = [], []
    for i, (ab, tfb, m) in enumerate(EXP2):
        for t_frac, out_frac, interp in ((8, 15, True), (ab, 12, False), (10, 16, False)):
            t = np.concatenate([[0, 1, (1 << t_frac) - 1], rng.integers(0, 40 << t_frac, 200)])
            recs.append([3, i, t_frac, ab, out_frac, tfb, int(interp), m, len(t), *t])
            exp.append(
                im.exp2_neg(
                    t, t_frac, tabs[i], ab, out_frac, tfb, interp=interp, rounding=TABLE_MODES[m]
                )
            )
    for j, (unit, ab, tfb, m) in enumerate(RECIP):
        cfg = len(EXP2) + j
        for d_frac, out_frac, wf, steps in ((8, 16, 14, 1), (0, 20, 16, 2), (12, 10, ab + 2, 0)):
            d = np.concatenate([[1, 2, 3, 255, 256, 2**30], rng.integers(1, 2**20, 200)])
            recs.append(
                [4, cfg, d_frac, out_frac, int(unit == "newton"), ab, tfb, wf, steps, m, len(d), *d]
            )
            exp.append(
                im.reciprocal(
                    d,
                    d_frac,
                    out_frac,
                    unit=unit,
                    table=tabs[cfg],
                    addr_bits=ab,
                    table_frac_bits=tfb,
                    work_frac_bits=wf,
                    newton_steps=steps,
                    rounding=TABLE_MODES[m],
                )
            )
    for got, e in zip(run_lines(exe, recs), exp, strict=True):
        assert np.array_equal(got, e)


def test_isqrt(exe):
    import math

    rng = np.random.default_rng(4)
    n = np.concatenate([np.arange(0, 300), rng.integers(0, 2**62, 300), [2**62 - 1, 2**32]])
    (got,) = run_lines(exe, [[5, len(n), *n]])
    assert got == [math.isqrt(int(v)) for v in n]
