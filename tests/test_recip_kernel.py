"""The compiled reciprocal (:func:`hwapprox.approx._kernels.recip_rows`, taken by
:func:`hwapprox.approx.intmath.reciprocal`) against its numpy path
(:func:`hwapprox.approx.intmath._reciprocal_numpy`).

* Every ``d`` of a 16-bit sum format (1 .. 2^16 - 1), and 10^5 more values per spec
  shape (log-uniform over int64 plus the edges: 1, every power of two and its
  neighbours, the maxima of 16/32/40/48-bit formats, 2^63 - 1), for both units,
  Newton steps 0..3, every :class:`~hwapprox.fixed.Rounding` mode, table address
  bits from 1 to the work fraction bits, ``d_frac_bits`` above and below the work
  fraction bits and table fraction bits below / above them, on the tables the models
  build and on random (signed) tables whose products wrap int64.
* The inlined rounding helpers against :func:`hwapprox.fixed.round_shift` and
  :func:`hwapprox.approx.intmath.round_shift_var` on signed values and every shift
  from -70 to 70 (where ``round_shift`` raises, the helper reports it).
* The errors (``d <= 0``, ``addr_bits``, a left shift past 63 bits, a bad unit) and the
  arguments outside the kernel's domain: the same exception and message as numpy.

Each comparison is ``np.array_equal`` on raw integers, with the kernel shown to have
run (the numpy function patched to fail); a planted one-LSB error is shown to be caught.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest

from hwapprox.approx import _kernels, intmath
from hwapprox.approx.intmath import recip_pwl_table, recip_seed_table, reciprocal
from hwapprox.fixed import FixedPointError, Rounding, round_shift

pytestmark = pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")

MODES = list(Rounding)

#: (unit, addr_bits, work_frac_bits, table_frac_bits, newton_steps, d_frac_bits, out_frac_bits)
SHAPES = [
    ("lut", 1, 2, 2, 0, 8, 4),  # the smallest legal unit; d_frac_bits > work
    ("lut", 4, 12, 12, 0, 10, 14),  # d_frac_bits < work
    ("lut", 8, 16, 16, 0, 20, 26),
    ("lut", 16, 16, 16, 0, 8, 20),  # addr_bits = work_frac_bits (no interpolation bits)
    ("lut", 6, 26, 24, 0, 12, 25),  # table coarser than the work format: a left shift
    ("lut", 8, 20, 30, 0, 12, 20),  # table finer: a rounding
    ("lut", 12, 29, 29, 0, 40, 20),  # the models' widest
    ("newton", 1, 4, 4, 3, 8, 6),
    ("newton", 4, 14, 14, 0, 10, 12),  # the seed alone
    ("newton", 8, 22, 22, 2, 29, 20),  # the online softmax's default
    ("newton", 6, 29, 29, 1, 16, 28),
    ("newton", 12, 12, 12, 3, 20, 10),  # addr_bits = work_frac_bits
    ("newton", 5, 24, 20, 2, 30, 22),  # seed coarser than the work format
    ("newton", 3, 18, 26, 3, 4, 30),  # seed finer
]


def _ids(shape: tuple[Any, ...]) -> str:
    return "{}-a{}-w{}-t{}-n{}-d{}-o{}".format(*shape)


def _edges() -> np.ndarray:
    """1, 2^k and 2^k ± 1 for every k, the maxima of 16/32/40/48-bit formats, 2^63 - 1."""
    p = [1 << k for k in range(63)]
    vals = p + [v - 1 for v in p] + [v + 1 for v in p]
    vals += [(1 << w) - 1 for w in (16, 32, 40, 48)] + [(1 << 63) - 1]
    return np.unique(np.array([v for v in vals if v > 0], dtype=np.int64))


def _values(n: int, seed: int) -> np.ndarray:
    """``n`` log-uniform positive int64 values (every bit length) and the edges."""
    rng = np.random.default_rng(seed)
    lo = np.left_shift(np.int64(1), rng.integers(0, 63, n))
    v = rng.integers(lo, lo + (lo - 1), endpoint=True)  # bit length 1 .. 63, uniform
    return np.concatenate([_edges(), v])


def _table(unit: str, addr_bits: int, tfb: int, mode: Rounding) -> np.ndarray:
    fn = recip_pwl_table if unit == "lut" else recip_seed_table
    return fn(addr_bits, tfb, mode)


def _kw(shape: tuple[Any, ...], mode: Rounding, table: np.ndarray | None = None) -> dict:
    unit, ab, wf, tfb, steps, _, _ = shape
    return {
        "unit": unit,
        "table": _table(unit, ab, tfb, mode) if table is None else table,
        "addr_bits": ab,
        "table_frac_bits": tfb,
        "work_frac_bits": wf,
        "newton_steps": steps,
        "rounding": mode,
    }


def _no_numpy(*a: Any, **k: Any) -> Any:
    raise AssertionError("the numpy path ran where the kernel should have")


def _outcome(fn: Callable[[], np.ndarray]) -> Any:
    """The result, or the exception's type and message."""
    try:
        return fn()
    except (ValueError, IndexError, OverflowError) as exc:
        return (type(exc), str(exc))


def _same(a: Any, b: Any) -> bool:
    """Equal arrays (shape, dtype, values) or equal exception outcomes."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
    return isinstance(a, tuple) and isinstance(b, tuple) and a == b


def _check(d: Any, dfb: int, ofb: int, kw: dict) -> int:
    """``reciprocal`` equals ``_reciprocal_numpy`` on ``d`` (shape, dtype, integers), with
    the numpy function patched to fail: the kernel produced it. Returns how many values
    were compared."""
    want = intmath._reciprocal_numpy(d, dfb, ofb, **kw)
    with patch.object(intmath, "_reciprocal_numpy", _no_numpy):
        got = reciprocal(d, dfb, ofb, **kw)
    assert _same(got, want), (kw["unit"], kw["rounding"], np.flatnonzero(got != want)[:8])
    return int(np.size(d))


@pytest.mark.parametrize("shape", SHAPES, ids=_ids)
def test_kernel_matches_numpy_on_every_16_bit_d(shape: tuple[Any, ...]) -> None:
    d = np.arange(1, 1 << 16, dtype=np.int64)
    for mode in MODES:
        assert _check(d, shape[5], shape[6], _kw(shape, mode)) == (1 << 16) - 1


@pytest.mark.parametrize("shape", SHAPES, ids=_ids)
def test_kernel_matches_numpy_on_1e5_values_and_edges(shape: tuple[Any, ...]) -> None:
    d = _values(100_000, seed=SHAPES.index(shape))
    assert d.size > 100_000
    for mode in MODES:
        _check(d, shape[5], shape[6], _kw(shape, mode))


#: shapes whose int64 products wrap (the numpy path wraps them the same way): (unit,
#: addr_bits, wf, tfb, steps, dfb, ofb, table lo, table hi), random (signed) tables
#: between lo and hi, or the model's table where lo is None
WRAPS = [
    ("lut", 4, 62, 62, 0, 30, 40, 0, 1 << 62),  # T[i]·2^58 wraps; wf at the domain's top
    ("lut", 6, 50, 50, 0, 10, 50, -(1 << 55), 1 << 55),  # signed entries
    ("newton", 10, 40, 40, 1, 16, 30, None, None),  # U·R and R·e wrap
    ("newton", 10, 36, 36, 2, 16, 30, None, None),
    ("newton", 3, 62, 62, 1, 60, 60, 0, 1 << 20),  # 2^(2·wf + 1) wraps to 0
    ("newton", 6, 30, 30, 4, 10, 20, -(1 << 40), 1 << 40),  # negative seeds
    ("newton", 2, 12, 30, 1, 0, 0, -(1 << 62), 1 << 62),  # final shifts past 62
]


@pytest.mark.parametrize("case", WRAPS, ids=lambda c: _ids(c[:7]))
def test_kernel_matches_numpy_where_int64_wraps(case: tuple[Any, ...]) -> None:
    _, ab, wf, _, _, dfb, ofb, lo, hi = case
    rng = np.random.default_rng(ab * 100 + wf)
    table = None if lo is None else rng.integers(lo, hi, (1 << ab) + 1, dtype=np.int64)
    d = _values(30_000, seed=wf)
    for mode in MODES:
        _check(d, dfb, ofb, _kw(case[:7], mode, table))


def test_kernel_left_shift_past_63_bits_raises_as_numpy() -> None:
    """A table coarser than the work format shifts left; where a code then needs more
    than 63 bits ``round_shift`` raises: the kernel reports it and the numpy path
    raises the same error. Below that limit the kernel gives the integers."""
    shape = ("newton", 3, 40, 20, 1, 10, 30)
    ok = np.full(9, (1 << 42) - 1, dtype=np.int64)  # 42 bits + 20 = 62: no raise
    bad = np.full(9, 1 << 43, dtype=np.int64)  # 44 bits + 20 = 64: raises
    d = _values(1000, seed=3)
    for mode in MODES:
        _check(d, 10, 30, _kw(shape, mode, ok))
        want = _outcome(lambda m=mode: intmath._reciprocal_numpy(d, 10, 30, **_kw(shape, m, bad)))
        assert want[0] is FixedPointError
        assert _outcome(lambda m=mode: reciprocal(d, 10, 30, **_kw(shape, m, bad))) == want
    # the final round_shift_var of the modes other than AP_TRN / AP_RND checks its
    # left shift as round_shift does; AP_TRN / AP_RND shift without the check
    shape = ("lut", 4, 12, 12, 0, 50, 20)  # total shift 12 - 70 + p: left for small d
    for mode in MODES:
        kw = _kw(shape, mode)
        want = _outcome(lambda k=kw: intmath._reciprocal_numpy(d, 50, 20, **k))
        assert _same(_outcome(lambda k=kw: reciprocal(d, 50, 20, **k)), want), mode
        raised = isinstance(want, tuple) and want[0] is FixedPointError
        assert raised == (mode not in (Rounding.TRN, Rounding.RND)), mode


@pytest.mark.parametrize("mode", MODES)
def test_round_helpers_match_round_shift(mode: Rounding) -> None:
    """The inlined helpers on signed values and every shift from -70 to 70:
    ``_round_shift1`` is ``round_shift`` (``ok`` False exactly where ``round_shift`` of
    the value raises), ``_round_shift_var1`` is ``round_shift_var``."""
    rng = np.random.default_rng(5)
    big = rng.integers(-(1 << 62), 1 << 62, 300)
    small = np.arange(-40, 41)
    p2 = np.array([1 << k for k in range(62)] + [-(1 << k) for k in range(63)], dtype=np.int64)
    vals = np.concatenate([big, small, p2, p2 + 1, p2 - 1, [(1 << 63) - 1]]).astype(np.int64)
    code = _kernels.RECIP_MODES[mode]
    for s in range(-70, 71):
        got = [_kernels._round_shift1(int(v), s, code) for v in vals]
        ok = np.array([k for _, k in got])
        res = np.array([g for g, _ in got], dtype=np.int64)
        assert np.array_equal(res[ok], round_shift(vals[ok], s, mode)), s
        for v in vals[~ok][:12]:  # (each value alone: round_shift raises)
            with pytest.raises(FixedPointError):
                round_shift(np.array([v]), s, mode)
        assert ok.all() or s < 0, s
        var = [_kernels._round_shift_var1(int(v), s, code) for v in vals]
        ok_v = np.array([k for _, k in var])
        res_v = np.array([g for g, _ in var], dtype=np.int64)
        assert np.array_equal(ok_v, ok | (code in (0, 2))), s  # AP_TRN / AP_RND never raise
        want_v = intmath.round_shift_var(vals[ok_v], np.full(int(ok_v.sum()), s), mode)
        assert np.array_equal(res_v[ok_v], want_v), s


def test_bit_length_helper_matches_python() -> None:
    vals = np.concatenate([_edges(), _values(5000, seed=9), [0]])
    got = [_kernels._bit_length(int(v)) for v in vals]
    assert got == [int(v).bit_length() for v in vals]


def test_errors_and_arguments_outside_the_kernel_domain() -> None:
    """The same exception and message as the numpy path: ``d <= 0`` anywhere in the
    array, ``addr_bits > work_frac_bits``, an unknown unit or rounding, a short table;
    and the same integers for arguments the kernel leaves to numpy (numpy integer
    parameters, ``work_frac_bits`` above 62, a 2-D table)."""
    shape = ("newton", 8, 22, 22, 2, 29, 20)
    kw = _kw(shape, Rounding.RND)
    d = _values(2000, seed=1)
    for bad in (0, -5):
        for pos in (0, 1000, d.size - 1):
            dd = d.copy()
            dd[pos] = bad
            want = _outcome(lambda x=dd: intmath._reciprocal_numpy(x, 29, 20, **kw))
            assert want == (ValueError, f"reciprocal needs d > 0, got {bad}")
            assert _outcome(lambda x=dd: reciprocal(x, 29, 20, **kw)) == want
    variants: list[dict] = [
        {**kw, "addr_bits": 23},
        {**kw, "unit": "pwl"},
        {**kw, "rounding": "AP_NEAREST"},
        {**kw, "table": kw["table"][:100]},  # too short: numpy's IndexError
        {**kw, "table": np.stack([kw["table"], kw["table"]])},
        {**kw, "addr_bits": np.int64(8)},
        {**kw, "newton_steps": True},
    ]
    for v in variants:
        want = _outcome(lambda k=v: intmath._reciprocal_numpy(d, 29, 20, **k))
        assert _same(_outcome(lambda k=v: reciprocal(d, 29, 20, **k)), want), v
    table = np.random.default_rng(2).integers(0, 1 << 40, 9)
    for wf in (63, 64):
        v = {**kw, "work_frac_bits": wf, "addr_bits": 3, "table": table}
        want = _outcome(lambda k=v: intmath._reciprocal_numpy(d, 29, 20, **k))
        assert _same(_outcome(lambda k=v: reciprocal(d, 29, 20, **k)), want), wf


def test_shapes_dtypes_and_the_switch() -> None:
    """0-d, 2-D, empty, non-contiguous and Python-list inputs give numpy's shapes and
    integers; with :data:`_kernels.enabled` off the numpy path runs."""
    shape = ("lut", 8, 16, 16, 0, 20, 26)
    kw = _kw(shape, Rounding.TRN)
    d = _values(4000, seed=4)
    for x in (d[5], d[:3000].reshape(60, 50), d[:0], d[::3], d[:7].tolist(), int(d[9])):
        _check(np.asarray(x) if isinstance(x, list) else x, 20, 26, kw)
    calls: list[int] = []
    real = intmath._reciprocal_numpy

    def spy(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return real(*a, **k)

    with patch.object(intmath, "_reciprocal_numpy", spy), patch.object(_kernels, "enabled", False):
        reciprocal(d, 20, 26, **kw)
    assert calls == [1]


def test_the_models_take_the_kernel() -> None:
    """The online softmax's ``recip_raw`` (default: Newton, AP_RND) and a lut spec, and
    Softermax's reciprocal where its whole-row kernel is off, run the kernel."""
    from hwapprox.approx.registry import make_spec

    calls: list[int] = []
    real = _kernels.recip_rows

    def spy(*a: Any) -> Any:
        calls.append(1)
        return real(*a)

    x = np.arange(-60, 60).reshape(6, 20)
    specs = [
        make_spec("softmax", "online"),
        make_spec("softmax", "online", recip_unit="lut"),
        make_spec("softmax", "softermax"),
    ]
    with (
        patch.object(_kernels, "recip_rows", spy),
        patch.object(intmath, "_reciprocal_numpy", _no_numpy),
        patch.object(_kernels, "whole_rows", False),
    ):
        for spec in specs:
            spec.model(x)
            assert calls, spec.describe()
            calls.clear()


def test_comparison_detects_a_planted_error() -> None:
    """The comparison can fail: a kernel one LSB high on the last value, or on powers of
    two only, is caught."""
    real = _kernels.recip_rows
    d = np.arange(1, 1 << 16, dtype=np.int64)
    shape = SHAPES[9]
    kw = _kw(shape, Rounding.RND)

    def last_off(*a: Any) -> Any:
        status = real(*a)
        a[-1][-1] += 1
        return status

    def pow2_off(*a: Any) -> Any:
        status = real(*a)
        a[-1][(a[0] & (a[0] - 1)) == 0] += 1
        return status

    for bad in (last_off, pow2_off):
        with patch.object(_kernels, "recip_rows", bad), pytest.raises(AssertionError):
            _check(d, shape[5], shape[6], kw)
    _check(d, shape[5], shape[6], kw)  # and passes unplanted
