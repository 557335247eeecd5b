"""Independent scalar re-implementations of the softmax models (guards the speed-ups).

The vectorised models in :mod:`hwapprox.approx.softmax` use memo tables, in-place
casts and, for the streaming methods, precompute everything that does not
depend on the running sum around the per-element loop. Each function here is a
plain per-row, per-element Python-int implementation written from the class
docstrings (datapath descriptions), sharing only the spec's ``hw_params()`` /
``tables()`` / constants with the model. They are compared on the same raw
integers with ``np.array_equal`` on small seeded inputs and edge rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from hwapprox.approx.base import ApproxSpec
from hwapprox.approx.hwparams import rounding_code
from hwapprox.approx.softmax import (
    IBertSoftmax,
    OnlineSoftmax,
    ShiftmaxSoftmax,
    SoftermaxSoftmax,
)
from hwapprox.fixed import FixedFormat, Overflow, Rounding

F = FixedFormat.parse


# -- scalar helpers (Python ints, exact) ----------------------------------------------
def _rnd(code: int) -> bool:
    """A hardware rounding code (:mod:`hwapprox.approx.hwparams`): AP_RND or AP_TRN."""
    assert code in (rounding_code(Rounding.RND), rounding_code(Rounding.TRN))
    return code == rounding_code(Rounding.RND)


def _rshift(v: int, s: int, rnd: bool) -> int:
    """``v / 2^s``: floor (AP_TRN) or half up (AP_RND); ``s <= 0`` multiplies exactly."""
    if s <= 0:
        return v << -s
    return (v + (1 << (s - 1))) >> s if rnd else v >> s


def _overflow(v: int, fmt: FixedFormat) -> int:
    """``fmt``'s overflow mode (AP_SAT or AP_WRAP) on an integer code."""
    if fmt.overflow is Overflow.SAT:
        return min(max(v, fmt.min_raw), fmt.max_raw)
    assert fmt.overflow is Overflow.WRAP
    v &= (1 << fmt.width) - 1
    return v - (1 << fmt.width) if fmt.signed and v >> (fmt.width - 1) else v


def _exp2_neg(
    t: int, t_f: int, tab: list[int], addr: int, out_f: int, tab_f: int, interp: bool, rnd: bool
) -> int:
    """2^-t, t >= 0 with ``t_f`` fraction bits: integer part a shift, fraction by (PWL) table."""
    k, f, g = t >> t_f, t & ((1 << t_f) - 1), t_f - addr
    i = f >> g
    v = tab[i] << g
    if interp and g:
        v -= (tab[i] - tab[i + 1]) * (f & ((1 << g) - 1))
    return _rshift(v, k + tab_f + g - out_f, rnd)


def _recip(d: int, d_f: int, out_f: int, spec: OnlineSoftmax | SoftermaxSoftmax) -> int:
    """1/d by leading-one normalisation and a PWL table or a seed plus Newton steps."""
    p = spec.hw_params()
    wf, tb, rnd = (
        p["WF"],
        p["TB"],
        _rnd(p["R_RND"]),
    )
    tab = [int(v) for v in spec.tables()["recip_table"]]
    lead = d.bit_length() - 1
    u = d << (wf - lead) if wf >= lead else d >> (lead - wf)
    frac = u - (1 << wf)
    g = wf - tb
    i, w = frac >> g, frac & ((1 << g) - 1)
    if p["NEWTON"]:
        r = tab[i]  # seed table has wf fraction bits
        for _ in range(p["STEPS"]):
            e = _rshift((2 << (2 * wf)) - u * r, wf, rnd)
            r = _rshift(r * e, wf, rnd)
    else:
        r = _rshift((tab[i] << g) - (tab[i] - tab[i + 1]) * w, g, rnd)
    recip_fmt: FixedFormat = spec.recip_fmt
    return min(_rshift(r, wf + lead - d_f - out_f, rnd), recip_fmt.max_raw)


# -- per-method scalar models ---------------------------------------------------------
def online_row(spec: OnlineSoftmax, row: list[int]) -> list[int]:
    """OnlineSoftmax datapath, element by element (class docstring)."""
    p, tabs = spec.hw_params(), spec.tables()
    f_in, f_e, sum_f, one = p["IN_F"], p["EXP_F"], p["SUM_F"], p["SUM_ONE"]

    def e_unit(delta: int) -> int:
        if p["BASE2"]:
            t = _rshift(delta * p["LOG2E"], f_in + p["LOG2E_F"] - p["T_F"], _rnd(p["T_RND"]))
            t = min(t, spec.exp_arg_fmt.max_raw)
            tab = [int(v) for v in tabs["exp2_table"]]
            return _exp2_neg(
                t,
                p["T_F"],
                tab,
                p["A"],
                f_e,
                p["TABLE_F"],
                bool(p["INTERP"]),
                _rnd(p["EXP_RND"]),
            )
        if delta >= 1 << p["LIM_BITS"]:
            return 0
        return int(tabs["exp_lut"][delta >> p["LUT_SHIFT"]])

    if p["TWO_PASS"]:
        m = max(row)
        d = sum(e_unit(m - v) << (sum_f - f_e) for v in row)
    else:
        m, d = row[0], one
        for v in row[1:]:
            if v > m:
                d = _rshift(d * e_unit(v - m), f_e, _rnd(p["SUM_RND"])) + one
                m = v
            else:
                d += e_unit(m - v) << (sum_f - f_e)
    r = _recip(d, sum_f, p["R_F"], spec)
    sh = f_e + p["R_F"] - p["OUT_F"]
    return [
        _overflow(_rshift(e_unit(m - v) * r, sh, _rnd(p["OUT_RND"])), spec.out_fmt) for v in row
    ]


def softermax_row(spec: SoftermaxSoftmax, row: list[int]) -> list[int]:
    """Softermax: t = R_t(x·LOG2E), integer running max, shift-rescaled sum, PWL units."""
    p = spec.hw_params()
    tf, pf, up = p["T_F"], p["P_F"], p["SUM_F"] - p["P_F"]
    tab = [int(v) for v in spec.tables()["pow2_table"]]
    ts = [
        _overflow(
            _rshift(v * p["LOG2E"], p["IN_F"] + p["LOG2E_F"] - tf, _rnd(p["T_RND"])), spec.t_fmt
        )
        for v in row
    ]

    def pow2(a: int) -> int:  # 2^a = 2^-(1 - a) · 2, a < 1
        return _exp2_neg(
            (1 << tf) - a,
            tf,
            tab,
            p["A"],
            pf + 1,
            p["TABLE_F"],
            True,
            _rnd(p["EXP_RND"]),
        )

    big_m = ts[0] >> tf
    d = pow2(ts[0] - (big_m << tf)) << up
    for t in ts[1:]:
        mj = max(big_m, t >> tf)
        d = (d >> (mj - big_m)) + (pow2(t - (mj << tf)) << up)
        big_m = mj
    r = _recip(d, p["SUM_F"], p["R_F"], spec)
    sh = pf + p["R_F"] - p["OUT_F"]
    return [
        _overflow(_rshift(pow2(t - (big_m << tf)) * r, sh, _rnd(p["OUT_RND"])), spec.out_fmt)
        for t in ts
    ]


def shiftmax_row(spec: ShiftmaxSoftmax, row: list[int]) -> list[int]:
    """I-ViT Shiftmax (pytorch variant): shift-exp of x - max, 31-bit normalisation."""
    p = spec.hw_params()
    x0, n = p["X0"], p["EXP_N"]
    es = []
    for v in row:
        t = v - max(row)
        t = max(t + (t >> 1) - (t >> 4), n * x0)
        q = t // x0
        r = t - x0 * q
        es.append(((r - 2 * x0) << (n - q)) >> 1 if not p["TVM"] else ((r >> 1) - x0) << (n - q))
    lim = (1 << 31) - 1
    factor = lim // min(sum(es), lim)
    return [_overflow((e * factor) >> p["OUT_SHIFT"], spec.out_fmt) for e in es]


def ibert_row(spec: IBertSoftmax, row: list[int]) -> list[int]:
    """I-BERT IntSoftmax: i-exp, 16-bit requantisation (ties to even or shift), 2^32 / sum."""
    p = spec.hw_params()
    x0, n = p["X0"], p["EXP_N"]
    es = []
    for v in row:
        t = max(v - max(row), n * x0)
        q = t // x0
        r = t - x0 * q
        e = max((r * (r + p["B_INT"]) + p["C_INT"]) << (n - q), 0)
        if p["CALIBRATED"]:
            num, sh = e * p["REQUANT_MULT"], p["REQUANT_SHIFT"]
            q16, rem = num >> sh, num & ((1 << sh) - 1)
            half = 1 << (sh - 1)
            q16 += rem > half or (rem == half and q16 & 1)
            e = min(q16, (1 << (p["EXP_BITS"] - 1)) - 1)
        else:
            e >>= p["EXP_SHIFT"]
        es.append(e)
    factor = (1 << p["FACTOR_BITS"]) // sum(es)
    return [_overflow((e * factor) >> p["OUT_SHIFT"], spec.out_fmt) for e in es]


SPECS: list[tuple[ApproxSpec, object]] = [
    (OnlineSoftmax(), online_row),
    (OnlineSoftmax(schedule="two_pass"), online_row),
    (OnlineSoftmax(exp_unit="lut", recip_unit="lut"), online_row),
    (
        OnlineSoftmax(
            exp_interp="none",
            sum_fmt=F("ap_ufixed<36,12,AP_TRN>"),
            exp_fmt=F("ap_ufixed<22,1,AP_TRN>"),
            out_fmt=F("ap_ufixed<8,0,AP_TRN,AP_WRAP>"),
        ),
        online_row,
    ),
    (SoftermaxSoftmax(), softermax_row),
    (
        SoftermaxSoftmax(
            t_fmt=F("ap_fixed<18,8,AP_TRN,AP_SAT>"),
            pow2_fmt=F("ap_ufixed<16,1,AP_TRN>"),
            out_fmt=F("ap_ufixed<8,0,AP_TRN,AP_WRAP>"),
        ),
        softermax_row,
    ),
    (SoftermaxSoftmax(in_fmt=F("ap_fixed<8,4>")), softermax_row),
    (ShiftmaxSoftmax(), shiftmax_row),
    (ShiftmaxSoftmax(variant="tvm", in_fmt=F("ap_fixed<8,4>"), n=16), shiftmax_row),
    (IBertSoftmax(), ibert_row),
    (IBertSoftmax(requant="shift"), ibert_row),
]


def _rows(fmt: FixedFormat, seed: int) -> list[np.ndarray]:
    """Seeded Gaussian rows (sigma 0.5, 2, 8; N = 1..40) and edge rows, raw ``fmt`` codes."""
    rng = np.random.default_rng(seed)
    out = []
    for n in (1, 2, 3, 5, 17, 40):
        for sigma in (0.5, 2.0, 8.0):
            out.append(fmt.quantize(np.clip(rng.normal(0, sigma, (3, n)), -1e6, 1e6)))
        lo, hi = fmt.min_raw, fmt.max_raw
        one_hot = np.full(n, lo)
        one_hot[n // 2] = hi
        ramp = np.linspace(lo, hi, n).astype(np.int64)
        out.append(
            np.array(
                [np.zeros(n), np.full(n, lo), np.full(n, hi), one_hot, ramp, ramp[::-1]],
                dtype=np.int64,
            )
        )
    return out


@pytest.mark.parametrize(("spec", "ref"), SPECS, ids=lambda v: getattr(v, "__name__", None))
def test_model_matches_scalar_reimplementation(spec: ApproxSpec, ref: object) -> None:
    checked = 0
    for x in _rows(spec.in_fmt, seed=7):
        want = np.array([ref(spec, [int(v) for v in row]) for row in x], dtype=np.int64)  # type: ignore[operator]
        got = spec.model(x)
        assert np.array_equal(got, want), (spec.describe(), x.shape)
        checked += x.size
    assert checked > 1000


def test_online_row_state_matches_scalar_recurrence() -> None:
    """``row_state`` (m, d) of the online schedule against the scalar recurrence."""
    spec = OnlineSoftmax()
    p = spec.hw_params()
    x = _rows(spec.in_fmt, seed=11)[-4]  # N = 40, Gaussian sigma 2
    m, d = spec.row_state(x)
    for row, mi, di in zip(x.tolist(), m, d, strict=True):
        want_m, want_d = row[0], p["SUM_ONE"]
        for v in row[1:]:
            if v > want_m:
                e = int(spec.exp_unit_raw(np.array([v - want_m]))[0])
                want_d = _rshift(want_d * e, p["EXP_F"], _rnd(p["SUM_RND"])) + p["SUM_ONE"]
                want_m = v
            else:
                e = int(spec.exp_unit_raw(np.array([want_m - v]))[0])
                want_d += e << (p["SUM_F"] - p["EXP_F"])
        assert (int(mi), int(di)) == (want_m, want_d)
