"""The online softmax from float32 rows in one compiled pass (``OnlineSoftmax.rows_f32``,
``_kernels.online_rows_f32``) and a softmax site's report from them
(``_kernels.online_report_f32`` through ``validate._softmax_sums``): bit-identical to the
codes path (``quantize_input -> model -> output_to_float``) and the same report figures,
on edge rows, over several specs, masks, row lengths and output dtypes; the emulation and
the report are shown to take the kernels, and a planted one-LSB error is caught."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from onnx_models import single_node

from hwapprox.approx import _kernels
from hwapprox.approx.base import SpecError
from hwapprox.approx.registry import make_spec
from hwapprox.approx.softmax import OnlineSoftmax
from hwapprox.export import validate as V
from hwapprox.export.emulate import apply_spec, make_session
from hwapprox.export.validate import import_model, site_metrics
from hwapprox.fixed import FixedPointError

pytestmark = pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")

_SAT = "ap_fixed<16,5,AP_RND,AP_SAT>"


def _specs() -> list[Any]:
    """Online softmax specs the float32-row kernels cover: saturating input formats (AP_RND
    and AP_TRN, AP_SAT and AP_SAT_SYM, 8 to 22 bits: the 22-bit one reads the clamped exp
    memo), base-2 and LUT exp units (PWL and none), Newton (0 to 3 steps) and PWL
    reciprocals rounded AP_RND or AP_TRN, wrapping or saturating, AP_TRN sums, and
    outputs of 8 to 25 bits (AP_RND, AP_TRN; one with an integer bit)."""
    kw: list[dict[str, Any]] = [
        {"in_fmt": _SAT},
        {"in_fmt": "ap_fixed<22,12,AP_RND,AP_SAT>"},
        {
            "in_fmt": "ap_fixed<8,3,AP_TRN,AP_SAT>", "out_fmt": "ap_ufixed<8,0,AP_RND,AP_SAT>",
            "recip_unit": "lut", "exp_unit": "lut", "exp_lut_bits": 7,
        },
        {
            "in_fmt": "ap_fixed<12,4,AP_RND,AP_SAT_SYM>",
            "out_fmt": "ap_ufixed<12,0,AP_TRN,AP_SAT>",
            "recip_fmt": "ap_ufixed<17,1,AP_TRN,AP_SAT>", "sum_fmt": "ap_ufixed<30,9,AP_TRN>",
            "newton_steps": 1,
        },
        {
            "in_fmt": _SAT, "recip_fmt": "ap_ufixed<12,1,AP_RND>", "newton_steps": 0,
            "recip_table_bits": 6,
        },
        {
            "in_fmt": "ap_fixed<10,6,AP_RND,AP_SAT>", "out_fmt": "ap_ufixed<10,0,AP_RND,AP_SAT>",
            "exp_interp": "none", "newton_steps": 3, "recip_unit": "lut",
            "recip_fmt": "ap_ufixed<14,1,AP_TRN,AP_SAT>",
        },
        {"in_fmt": _SAT, "out_fmt": "ap_ufixed<16,1,AP_RND,AP_SAT>"},
        {"in_fmt": _SAT, "out_fmt": "ap_ufixed<25,1,AP_RND,AP_SAT>", "row_max": 16},
    ]  # fmt: skip
    return [make_spec("softmax", "online", **k) for k in kw]


def _rows(spec: Any, n: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` float32 rows of ``n`` for ``spec``'s input format: random scores, ties at
    half an input LSB, all-equal rows, saturating rows (past the range on both sides),
    one huge element (+-1e30, float32's largest), ramps up (a new maximum at every
    element: the rescale at each) and down."""
    lsb, top = float(spec.in_fmt.lsb), float(spec.in_fmt.max)
    a = rng.normal(0, 0.25 * top, (count, n)) * rng.uniform(0.05, 1, (count, 1))
    k = count // 8
    a[:k] = (np.round(a[:k] / lsb) + 0.5) * lsb  # ties: exact in float32 (< 2^23 codes)
    a[k : 2 * k] = a[k : 2 * k, :1]  # all equal
    a[2 * k : 3 * k] *= 16.0  # saturating
    big = rng.choice([1e30, -1e30, 3.4028235e38, -3.4028235e38], k)
    a[3 * k + np.arange(k), rng.integers(0, n, k)] = big
    ramp = np.linspace(-1.5 * top, 1.5 * top, n)
    a[4 * k : 5 * k] = ramp + rng.uniform(-lsb, lsb, (k, 1))
    a[5 * k : 6 * k] = ramp[::-1]
    return np.ascontiguousarray(a.astype(np.float32))


def _masks(rows: int, n: int, rng: np.random.Generator) -> list[np.ndarray | None]:
    """No mask, a padding-like random mask (fully masked rows and rows with one unmasked
    element among them) and a mask without any True."""
    mk = rng.random((rows, n)) < 0.3
    mk[::7] = True  # fully masked
    mk[3::7] = True
    mk[3::7, rng.integers(0, n)] = False  # one element left
    return [None, mk, np.zeros((rows, n), bool)]


def _codes_path(spec: Any, xf: np.ndarray, mask: np.ndarray | None, dt: Any) -> np.ndarray:
    return spec.output_to_float(spec.model(spec.quantize_input(xf), mask=mask), dt)


def _same(a: np.ndarray | None, b: np.ndarray) -> bool:
    """Bit-identical: dtype, shape and bytes (so 0.0 and -0.0 differ)."""
    if a is None or a.dtype != b.dtype or a.shape != b.shape:
        return False
    return a.tobytes() == b.tobytes()


def test_f32_rows_equal_the_codes_path() -> None:
    """rows_f32 equals quantize_input -> model(mask) -> output_to_float bit for bit on more
    than 10^5 edge rows (:func:`_rows`), every spec of :func:`_specs`, rows of 1 to 256,
    float32 and float64 outputs, no mask, a padding mask and an all-False one; masked
    scores are not read (-inf there: the values of the rows with them zeroed)."""
    rng = np.random.default_rng(28)
    rows = 0
    for spec in _specs():
        for n in (1, 2, 3, 5, 16, 17, 64, 100, 255, 256):
            if n > spec.row_max:
                continue
            count = max(200, min(3000, 60000 // n))
            xf = _rows(spec, n, count, rng)
            for mask in _masks(count, n, rng):
                # masked scores are not read: -inf there gives the values of zeroed ones
                xm = xf if mask is None else np.where(mask, np.float32(-np.inf), xf)
                for dt in (np.float32, np.float64):
                    want = _codes_path(
                        spec, xf if mask is None else np.where(mask, 0, xf), mask, dt
                    )
                    for xs in (xf, xm):
                        got = spec.rows_f32(xs, mask, dt)
                        assert got is not None, (spec.describe(), n)
                        assert _same(got, want), (spec.describe(), n, dt)
            rows += count
    assert rows > 100_000


def test_f32_report_kernel_equals_the_codes_comparison() -> None:
    """online_report_f32 (the model's reals per block of rows, then the comparison) gives
    softmax_err_stats' figures on the codes path's codes and reals exactly, as a tuple of
    the same floats, on the edge rows of every spec of :func:`_specs` (the reals float32
    up to 24 output bits, else float64, as the reports store them), rows of 1 to 256 (row
    counts that leave a partial last block), no mask, a padding mask and an all-False one,
    against a float output near the exact softmax; more than 10^5 rows."""
    from hwapprox.approx.softmax import stable_softmax

    rng = np.random.default_rng(29)
    rows = 0
    for spec in _specs():
        dt = np.float32 if spec.out_fmt.width <= 24 else np.float64
        table = V._exp_table(spec.in_fmt.width, spec.in_fmt.frac_bits)
        for n in (1, 2, 3, 5, 16, 17, 64, 100, 255, 256):
            if n > spec.row_max:
                continue
            count = max(200, min(3001, 60001 // n))
            xf = _rows(spec, n, count, rng)
            for mask in _masks(count, n, rng):
                ref = stable_softmax(spec.in_fmt.to_float(spec.quantize_input(xf)), mask=mask)
                yf = (ref * (1 + 1e-4 * rng.standard_normal(ref.shape))).astype(np.float32)
                raw = spec.quantize_input(xf)
                y = spec.output_to_float(spec.model(raw, mask=mask), dt)
                mk = np.zeros((1, 1), bool) if mask is None else mask
                want = _kernels.softmax_err_stats(raw, table, y, yf, mk, mask is not None)
                args = spec.f32_plan(xf, mask, np.dtype(dt))
                blk = np.empty((_kernels.online_block_rows(count, n), n), dtype=dt)
                status, *got = _kernels.online_report_f32(
                    xf, yf, mk, mask is not None, *args, blk, table
                )
                assert status == 0
                assert tuple(got) == tuple(want), (spec.describe(), n)
            rows += count
    assert rows > 100_000


def test_f32_rows_refuse_what_they_do_not_cover() -> None:
    """None (the caller takes the codes path) for NaN/inf inputs (the codes path raises the
    format's error), rows longer than row_max (it raises its limit), a wrapping input
    format, the variants (Softmax_1, clip, unified max, skipping, two-pass, log codes),
    float64 or non-contiguous rows and a mask of another shape; the plan is memoised."""
    spec = make_spec("softmax", "online", in_fmt=_SAT)
    xf = _rows(spec, 16, 64, np.random.default_rng(1))
    for bad in (np.nan, np.inf, -np.inf):
        xb = xf.copy()
        xb[5, 3] = bad
        assert spec.rows_f32(xb) is None
        with pytest.raises(FixedPointError, match="non-finite"):
            _codes_path(spec, xb, None, np.float32)
    short = spec.replace(row_max=8)
    assert short.rows_f32(xf) is None
    with pytest.raises(SpecError, match="rows of length 16 exceed"):
        _codes_path(short, xf, None, np.float32)
    for other in (
        spec.replace(in_fmt="ap_fixed<16,5>"),
        spec.replace(off_by_one=True),
        spec.replace(clip_gamma=-0.01, clip_zeta=1.01),
        spec.replace(unified_max=4.0),
        spec.replace(skip_threshold=6.0),
        spec.replace(schedule="two_pass"),
        spec.replace(out_code="log2"),
    ):
        assert other.rows_f32(xf) is None, other.describe()
    assert spec.rows_f32(xf.astype(np.float64)) is None  # type: ignore[arg-type]
    assert spec.rows_f32(np.asfortranarray(xf)) is None
    assert spec.rows_f32(xf, np.zeros((64, 15), bool)) is None
    assert spec.f32_plan(xf, None, np.dtype(np.float32)) is spec.f32_plan(
        xf, None, np.dtype(np.float64)
    )


def test_f32_rows_catch_one_lsb() -> None:
    """The comparison can fail: a kernel whose output cast adds half + one code (a
    monkeypatched argument: every unsaturated output one LSB up), or that moves a single
    output by one LSB, differs from the codes path."""
    spec = make_spec("softmax", "online", in_fmt=_SAT)
    xf = _rows(spec, 16, 256, np.random.default_rng(2))
    want = _codes_path(spec, xf, None, np.float32)
    assert _same(spec.rows_f32(xf), want)
    real = _kernels.online_rows_f32

    def one_code_up(*a: Any) -> int:  # (..., s, half, lo, hi, out_scale, out)
        return real(*a[:-5], a[-5] + (1 << a[-6]), *a[-4:])  # type: ignore[no-any-return]

    def one_element(*a: Any) -> int:
        status = real(*a)
        a[-1][7, 3] += a[-2]  # one output LSB on one element
        return status  # type: ignore[no-any-return]

    for bad in (one_code_up, one_element):
        with patch.object(_kernels, "online_rows_f32", bad):
            got = spec.rows_f32(xf)
        assert got is not None
        assert not _same(got, want)


# -- emulated sites and their reports ----------------------------------------------------------
@contextmanager
def _counting(name: str) -> Iterator[list[int]]:
    """``_kernels.name`` patched to count its calls."""
    calls: list[int] = []
    real = getattr(_kernels, name)

    def counted(*a: object) -> object:
        calls.append(1)
        return real(*a)

    with patch.object(_kernels, name, counted):
        yield calls


def _site(opset: int) -> tuple[Any, tuple[int, ...]]:
    """A Softmax site over (2, 3, 5, 16): rows of 16 on the last axis (opset 13) or of 3·5·16
    trailing elements (opset 11, axis 1)."""
    attrs = {"axis": 1} if opset < 13 else {}
    imp = import_model(single_node("Softmax", [2, 3, 5, 16], opset, **attrs))
    (site,) = imp.sites
    return site, (2, 3, 5, 16)


def _site_case(
    opset: int, masked: bool, rng: np.random.Generator
) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray | None]:
    """(site, float32 scores with edge values, the float model's output, the mask)."""
    site, shape = _site(opset)
    x = (rng.normal(0, 3, shape) * rng.uniform(0.2, 3, (*shape[:-1], 1))).astype(np.float32)
    x[0, 0, 0] = 40.0  # saturates
    x[0, 0, 1] = x[0, 0, 1, 0]  # all equal
    mask = None
    if masked:
        mask = rng.random((2, 1, 1, 16)) < 0.3
        mask[1] = True  # batch 1 fully masked
    xs = np.where(mask, -1e9, x).astype(np.float32) if mask is not None else x
    y = make_session(import_model(single_node("Softmax", list(shape), opset,
                                              **({"axis": 1} if opset < 13 else {}))).model,
                     1).run(None, {"x": xs})[0]  # fmt: skip
    return site, x, y, mask


def _unmasked(mask: np.ndarray | None) -> int:
    """A column of batch 0 the mask leaves (NaN there reaches the input format)."""
    return 0 if mask is None else int(np.flatnonzero(~mask[0, 0, 0])[0])


def _site_specs() -> list[Any]:
    return [
        make_spec("softmax", "online", in_fmt=_SAT),
        make_spec("softmax", "online", in_fmt="ap_fixed<12,4,AP_TRN,AP_SAT>",
                  out_fmt="ap_ufixed<12,0,AP_RND,AP_SAT>", recip_unit="lut"),
        make_spec("softmax", "online", in_fmt=_SAT, out_fmt="ap_ufixed<25,1,AP_RND,AP_SAT>",
                  row_max=16),
        make_spec("softmax", "online", in_fmt=_SAT, row_max=8),  # raised to the site's rows
    ]  # fmt: skip


@pytest.mark.parametrize(("opset", "masked"), [(13, False), (13, True), (11, False)])
def test_softmax_site_emulation_takes_the_f32_rows(opset: int, masked: bool) -> None:
    """apply_spec on a softmax site's float32 scores runs online_rows_f32 (rows along the last
    axis, or trailing axes), with the site's mask and a row_max below the site's rows raised
    as the codes path raises it, and gives the codes path's values bit for bit, float32 and
    float64; float64 scores take the codes path; a NaN gives the codes path's error."""
    site, x, _, mask = _site_case(opset, masked, np.random.default_rng(3))
    for spec in _site_specs():
        if opset == 11 and spec.row_max < 240:
            continue  # (rows of 240: beyond that spec's formats)
        for dt in (np.float32, np.float64):
            with _counting("online_rows_f32") as calls:
                got = apply_spec(site, spec, x, mask, dtype=dt)
            assert calls == [1], spec.describe()
            with patch.object(OnlineSoftmax, "rows_f32", None):
                want = apply_spec(site, spec, x, mask, dtype=dt)
            assert _same(got, want), (spec.describe(), dt)
    spec = _site_specs()[0]
    if mask is not None:  # masked scores as a graph gives them (-inf): read as 0, as zeroed
        xm = np.where(mask, np.float32(-np.inf), x)
        with _counting("online_rows_f32") as calls:
            got = apply_spec(site, spec, xm, mask, dtype=np.float32)
        assert calls == [1]
        with patch.object(OnlineSoftmax, "rows_f32", None):
            assert _same(got, apply_spec(site, spec, xm, mask, dtype=np.float32))
    with _counting("online_rows_f32") as calls:
        apply_spec(site, spec, x.astype(np.float64), mask)
    assert calls == []
    bad = x.copy()
    bad[0, 2, 3, _unmasked(mask)] = np.nan
    with pytest.raises(FixedPointError, match="non-finite") as err:
        apply_spec(site, spec, bad, mask)
    with (
        patch.object(OnlineSoftmax, "rows_f32", None),
        pytest.raises(FixedPointError, match="non-finite") as codes_err,
    ):
        apply_spec(site, spec, bad, mask)
    assert str(err.value) == str(codes_err.value)


@pytest.mark.parametrize(("opset", "masked"), [(13, False), (13, True), (11, False)])
def test_softmax_report_from_float32_rows_equals_the_codes_path(opset: int, masked: bool) -> None:
    """A softmax site's metrics from its float32 rows in one pass (online_report_f32: the
    model's reals and the float64 softmax of the row's codes compared block by block) equal
    the codes path's figures exactly (count, max, sums, split maxima, row-sum error),
    float32 and float64 reals (out_fmt up to 24 bits and wider), masked rows (fully masked
    ones included) and an all-False mask; the codes path's kernel is not called; a NaN
    takes the codes path and its error; one LSB more on every output is caught."""
    site, x, y, mask = _site_case(opset, masked, np.random.default_rng(5))
    masks = [mask] if mask is not None else [None, np.zeros((2, 1, 1, 16), bool)]
    for spec in _site_specs():
        if opset == 11 and spec.row_max < 240:
            continue
        for mk in masks:
            # masked scores as a graph gives them (-inf) too
            for xs in (x, x if mk is None else np.where(mk, np.float32(-np.inf), x)):
                with (
                    _counting("online_report_f32") as fused,
                    _counting("softmax_err_stats") as codes,
                ):
                    got = site_metrics(site, spec, xs, y, mk)
                assert (fused, codes) == ([1], []), spec.describe()
                with patch.object(V, "_softmax_sums_f32", lambda *a: None):
                    want = site_metrics(site, spec, xs, y, mk)
                assert got == want, spec.describe()
    spec = _site_specs()[0]
    bad = x.copy()
    bad[0, 2, 3, _unmasked(mask)] = np.nan
    with pytest.raises(FixedPointError, match="non-finite") as err:
        site_metrics(site, spec, bad, y, mask)
    with (
        patch.object(V, "_softmax_sums_f32", lambda *a: None),
        pytest.raises(FixedPointError, match="non-finite") as codes_err,
    ):
        site_metrics(site, spec, bad, y, mask)
    assert str(err.value) == str(codes_err.value)
    real = _kernels.online_report_f32

    def one_code_up(*a: Any) -> Any:  # (..., s, half, lo, hi, out_scale, y_blk, table)
        return real(*a[:-6], a[-6] + (1 << a[-7]), *a[-5:])

    good = site_metrics(site, spec, x, y, mask)
    with patch.object(_kernels, "online_report_f32", one_code_up):
        off = site_metrics(site, spec, x, y, mask)
    assert off["mean_abs"] != good["mean_abs"]
    assert off["approx_max_lsb"] != good["approx_max_lsb"]


def test_embedded_example_validate_takes_the_f32_rows() -> None:
    """validate on the embedded example (two online softmax sites) runs the float32-row
    kernels in the emulation and the reports, and gives the codes path's site errors and
    end-to-end figures exactly."""
    from hwapprox.export import example

    z = dict(np.load(example.inputs_path()))
    imp = import_model(example.model_path())
    with _counting("online_rows_f32") as emu, _counting("online_report_f32") as rep:
        got = V.validate(imp, inputs=z)
    assert len(emu) >= 2
    assert len(rep) == 2
    with (
        patch.object(OnlineSoftmax, "rows_f32", None),
        patch.object(V, "_softmax_sums_f32", lambda *a: None),
    ):
        want = V.validate(imp, inputs=z)
    assert got.site_errors == want.site_errors
    assert got.end_to_end == want.end_to_end
