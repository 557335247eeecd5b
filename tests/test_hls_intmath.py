"""C simulation of hwapprox/intmath.h, bit-exact with hwapprox.approx.intmath.

Each primitive runs with a parameter struct of explicit widths, as the units
use it: i_exp and shift_exp with the hardware parameter sets of I-BERT softmax
and ShiftGELU specs, exp2_neg and reciprocal with the tight widths their
docstrings state for the test's argument ranges (the harness checks every
narrowing, so a width one bit too small fails).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hwapprox.approx import intmath as im
from hwapprox.approx.gelu import ShiftGelu
from hwapprox.approx.hwparams import ROUNDING_CODES, sbits, ubits
from hwapprox.approx.softmax import IBertSoftmax
from hwapprox.fixed import Rounding, round_shift
from hwapprox.hls.csim import build_harness, run_lines
from hwapprox.hls.emit import Instance

pytestmark = pytest.mark.hls

HARNESS = Path(__file__).parent / "cxx" / "hls_intmath_harness.cpp"
MODES = list(Rounding)
RS_WIDTHS = (64, 12)

IEXP_FMTS = ["ap_fixed<16,12>", "ap_fixed<16,10>", "ap_fixed<16,8>", "ap_fixed<16,6>"]
SHIFT_EXP = [  # (in_fmt, n, variant)
    ("ap_fixed<16,12>", 15, "pytorch"),
    ("ap_fixed<16,10>", 23, "tvm"),
    ("ap_fixed<16,8>", 15, "pytorch"),
]
EXP2 = [  # (addr_bits, table_frac_bits, rounding), x (t_frac_bits, out_frac_bits, interp)
    (4, 16, Rounding.RND),
    (6, 20, Rounding.RND_CONV),
    (3, 12, Rounding.TRN),
]
EXP2_CALLS = [(8, 15, True), (None, 12, False), (10, 16, False)]  # None: t_frac = addr_bits
EXP2_T_INT = 6  # t < 2^6: shifts far beyond every value width
RECIP = [  # (unit, addr_bits, work_frac_bits, rounding), x (d_frac, out_frac, steps)
    ("lut", 5, 18, Rounding.RND),
    ("newton", 4, 14, Rounding.RND_CONV),
    ("lut", 3, 12, Rounding.TRN),
]
RECIP_CALLS = [(8, 16, 1), (0, 20, 2), (12, 10, 0)]
RECIP_D_W = 31  # d < 2^31


def _exp2_p(ab, tfb, mode, t_frac, out_frac, interp):
    g = t_frac - ab
    return {
        "RND": ROUNDING_CODES[mode],
        "T_W": t_frac + EXP2_T_INT,
        "T_F": t_frac,
        "A": ab,
        "G": g,
        "V_W": ubits(1 << (tfb + g)),  # T[i]·2^G <= 2^(TABLE_F + G)
        "TABLE_F": tfb,
        "INTERP": int(interp),
        "EXP_W": out_frac + 1,  # 2^-t <= 1.0
        "EXP2_SHIFT": tfb + g - out_frac,
    }


def _recip_p(unit, ab, wf, mode, d_frac, out_frac, steps):
    r_max = 1 << (d_frac + out_frac)  # 1/d at d = 1 (raw)
    return {
        "RND": ROUNDING_CODES[mode],
        "D_W": RECIP_D_W,
        "D_F": d_frac,
        "OUT_F": out_frac,
        "WF": wf,
        "TB": ab,
        "RG": wf - ab,
        "NEWTON": int(unit == "newton"),
        "STEPS": steps,
        "RU_W": wf + 1,
        "RT_W": ubits(1 << (2 * wf - ab)),
        "RN_W": wf + 3,
        "RP_W": 2 * wf + 3,
        "RS_W": max(wf, ubits(r_max)) + 3,
        "RPRE_W": sbits(0, r_max + 1),
    }


def _cases():
    """(instance, X-macro row, record builder) per primitive configuration."""
    out = []
    for m in MODES:
        for w in RS_WIDTHS:
            out.append(("round_shift", {"RND": ROUNDING_CODES[m], "W": w}, {}, (m, w)))
    for f in IEXP_FMTS:
        spec = IBertSoftmax(in_fmt=f)
        out.append(("i_exp", spec.hw_params(16), {}, spec))
    for f, n, variant in SHIFT_EXP:
        spec = ShiftGelu(in_fmt=f, n=n)
        hw = spec.hw_params() | {"TVM": int(variant == "tvm")}
        out.append(("shift_exp", hw, {}, (spec, variant)))
    for ab, tfb, mode in EXP2:
        table = im.exp2_frac_table(ab, tfb, mode)
        for t_frac, out_frac, interp in EXP2_CALLS:
            tf = ab if t_frac is None else t_frac
            p = _exp2_p(ab, tfb, mode, tf, out_frac, interp)
            out.append(("exp2", p, {"table": table}, (ab, tfb, mode, tf, out_frac, interp)))
    for unit, ab, wf, mode in RECIP:
        f = im.recip_pwl_table if unit == "lut" else im.recip_seed_table
        table = f(ab, wf, mode)
        for d_frac, out_frac, steps in RECIP_CALLS:
            p = _recip_p(unit, ab, wf, mode, d_frac, out_frac, steps)
            out.append(
                ("recip", p, {"table": table}, (unit, ab, wf, mode, d_frac, out_frac, steps))
            )
    out.append(("isqrt", {}, {}, None))
    return out


CASES = _cases()


@pytest.fixture(scope="module")
def exe():
    insts = [Instance(f"p{i}", consts=c, tables=t) for i, (_, c, t, _) in enumerate(CASES)]
    rows = [(str(i), f"run_{kind}", f"p{i}") for i, (kind, *_) in enumerate(CASES)]
    return build_harness(HARNESS, insts, rows, name="hls_intmath")


def _ids(kind):
    return [i for i, c in enumerate(CASES) if c[0] == kind]


def test_round_shift(exe):
    rng = np.random.default_rng(1)
    wide = np.concatenate(
        [rng.integers(-(2**40), 2**40, 300), np.arange(-40, 41), [2**61, -(2**61), 0]]
    )
    recs, exp = [], []
    for i in _ids("round_shift"):
        mode, w = CASES[i][3]
        if w == 64:
            v, shifts = wide, (-3, 0, 1, 2, 3, 5, 17, 45, 62, 63, 70)
        else:  # every 12-bit code, shifts up to and beyond the width
            v, shifts = np.arange(-(1 << 11), 1 << 11), (0, 1, 2, 5, 10, 11, 12, 13, 20)
        for shift in shifts:
            vv = v if shift >= 0 else v[np.abs(v) < 2**50]
            recs.append([i, shift, len(vv), *vv])
            exp.append(round_shift(vv.astype(np.int64), shift, mode))
    for got, e in zip(run_lines(exe, recs), exp, strict=True):
        assert np.array_equal(got, e)


def test_i_exp_and_shift_exp(exe):
    rng = np.random.default_rng(2)
    recs, exp = [], []
    for i in _ids("i_exp"):
        spec = CASES[i][3]
        k = spec._consts()
        x = np.concatenate(
            [[0, -1, 30 * k.x0, 30 * k.x0 - 5, -(2**16 - 1)], rng.integers(-2000, 1, 200)]
        )
        recs.append([i, len(x), *x])
        exp.append(im.i_exp(x, k))
    for i in _ids("shift_exp"):
        spec, variant = CASES[i][3]
        x0 = spec.hw_params()["X0"]
        x = np.concatenate([[0, -1, -(2**15)], rng.integers(-3000, 1, 200)])
        recs.append([i, len(x), *x])
        exp.append(im.shift_exp(x, x0, spec.n, variant))
    for got, e in zip(run_lines(exe, recs), exp, strict=True):
        assert np.array_equal(got, e)


def test_exp2_and_reciprocal(exe):
    rng = np.random.default_rng(3)
    recs, exp = [], []
    for i in _ids("exp2"):
        ab, tfb, mode, tf, out_frac, interp = CASES[i][3]
        table = CASES[i][2]["table"]
        top = 1 << (tf + EXP2_T_INT)
        t = np.concatenate([[0, 1, (1 << tf) - 1, top - 1], rng.integers(0, top, 300)])
        recs.append([i, len(t), *t])
        exp.append(im.exp2_neg(t, tf, table, ab, out_frac, tfb, interp=interp, rounding=mode))
    for i in _ids("recip"):
        unit, ab, wf, mode, d_frac, out_frac, steps = CASES[i][3]
        table = CASES[i][2]["table"]
        d = np.concatenate([[1, 2, 3, 255, 256, 2**30, 2**31 - 1], rng.integers(1, 2**20, 200)])
        recs.append([i, len(d), *d])
        exp.append(
            im.reciprocal(
                d,
                d_frac,
                out_frac,
                unit=unit,
                table=table,
                addr_bits=ab,
                table_frac_bits=wf,
                work_frac_bits=wf,
                newton_steps=steps,
                rounding=mode,
            )
        )
    for got, e in zip(run_lines(exe, recs), exp, strict=True):
        assert np.array_equal(got, e)


def test_isqrt(exe):
    rng = np.random.default_rng(4)
    n = np.concatenate([np.arange(0, 300), rng.integers(0, 2**62, 300), [2**62 - 1, 2**32]])
    (i,) = _ids("isqrt")
    (got,) = run_lines(exe, [[i, len(n), *n]])
    assert got == [math.isqrt(int(v)) for v in n]
