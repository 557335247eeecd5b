"""The fast paths of the integer models against the direct forms they replace.

* Online softmax and Softermax: the running sum by :func:`event_scan` (prefix
  sums between new maxima, the rescale only at them) against the
  element-by-element loop (``_stream_sum_loop`` / ``_shift_sum_loop``), swapped in
  on the same spec, over more than 10^5 rows: Gaussian rows at several widths
  and lengths, and the edge rows the event form is most likely to get wrong
  (ascending ramps: a new max at every element; descending ramps: none;
  plateaus, one or two dominant keys over a flat background, all-equal rows,
  alternating extremes), with masks, threshold skipping, Softmax_1 and both
  sum roundings.
* Elementwise models: :meth:`ElementwiseSpec.model` (a memo over every input
  code) against ``_model_flat`` on every input code, in shuffled and reshaped
  arrays, for every elementwise method at its default spec and at other widths.

Each comparison is ``np.array_equal`` on raw integers; a planted one-LSB error
in the fast path is shown to be caught (``test_*_detects_*``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest

from hwapprox.approx import _kernels
from hwapprox.approx.base import ElementwiseSpec, SpecError, _elementwise_memo
from hwapprox.approx.registry import get_method, list_methods, make_spec
from hwapprox.approx.softmax import OnlineSoftmax, SoftermaxSoftmax


def _edge_rows(fmt: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """Rows of length ``n`` in raw ``fmt`` codes that stress the event form."""
    lo, hi = fmt.min_raw, fmt.max_raw
    span = hi - lo
    rows = []
    ramp = np.linspace(lo, hi, n).round().astype(np.int64)
    rows += [ramp, ramp[::-1].copy()]  # a new max at every element / never
    step = np.repeat(np.linspace(lo // 2, hi // 2, 8).round(), -(-n // 8))[:n].astype(np.int64)
    rows.append(step)  # plateaus rising in steps
    rows.append(np.full(n, hi // 3))  # all equal
    rows.append(np.where(np.arange(n) % 2, lo, hi).astype(np.int64))  # alternating extremes
    for height in (0.05, 0.2, 0.5):
        for k in (1, 2):
            bg = np.full(n, lo // 4)
            pos = rng.choice(n, size=min(k, n), replace=False)
            bg[pos] = lo // 4 + int(height * span)
            rows.append(bg)  # one or two dominant keys over a flat background
    sawtooth = (np.arange(n) % 7) * (span // 64) + lo // 2
    rows.append(sawtooth.astype(np.int64))
    return np.clip(np.stack(rows), lo, hi)


def _row_sets(spec: Any, seed: int) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
    rng = np.random.default_rng(seed)
    fmt = spec.in_fmt
    for n in (1, 2, 3, 17, 64, 257):
        for sigma in (0.5, 2.0, 8.0):
            x = fmt.quantize(rng.normal(0.0, sigma, size=(max(8, 4096 // n), n)))
            yield x, None
            yield x, rng.random(x.shape) < 0.3
        edge = _edge_rows(fmt, n, rng)
        yield edge, None
        mk = np.zeros(edge.shape, bool)
        mk[:, : n // 2] = True  # a masked prefix: the first live element starts the state
        yield edge, mk
        mk2 = np.ones(edge.shape, bool)  # fully masked rows
        yield edge, mk2


ONLINE_SPECS = [
    make_spec("softmax", "online"),
    make_spec("softmax", "online", in_fmt="ap_fixed<8,4>", out_fmt="ap_ufixed<8,0,AP_RND,AP_SAT>"),
    make_spec("softmax", "online", schedule="two_pass"),
    make_spec("softmax", "online", sum_fmt="ap_ufixed<34,12,AP_TRN>"),
    make_spec("softmax", "online", skip_threshold=4.0),
    make_spec("softmax", "online", off_by_one=True),
    make_spec("softmax", "online", in_fmt="ap_fixed<22,8>"),  # no memo: the direct exp
]
SOFTERMAX_SPECS = [
    make_spec("softmax", "softermax"),
    make_spec(
        "softmax", "softermax", in_fmt="ap_fixed<8,4>", out_fmt="ap_ufixed<8,0,AP_RND,AP_SAT>"
    ),
    make_spec(
        "softmax", "softermax", in_fmt="ap_fixed<22,7>", t_fmt="ap_fixed<24,9,AP_RND,AP_SAT>"
    ),
    # the whole-row kernel's other modes: a truncating, saturating reciprocal and a
    # truncating output; a narrow input with a reciprocal format that wraps (AP_WRAP)
    make_spec(
        "softmax",
        "softermax",
        recip_fmt="ap_ufixed<12,1,AP_TRN,AP_SAT>",
        out_fmt="ap_ufixed<10,0,AP_TRN,AP_SAT>",
    ),
    make_spec("softmax", "softermax", in_fmt="ap_fixed<10,5>", recip_fmt="ap_ufixed<9,1>"),
]


@contextmanager
def _slow_paths() -> Iterator[None]:
    """The element-by-element numpy loops: compiled kernels off, loops for event scans."""
    with (
        patch.object(_kernels, "enabled", False),
        patch.object(OnlineSoftmax, "_stream_sum", OnlineSoftmax._stream_sum_loop),
        patch.object(SoftermaxSoftmax, "_shift_sum", SoftermaxSoftmax.__dict__["_shift_sum_loop"]),
    ):
        yield


@contextmanager
def _numpy_paths() -> Iterator[None]:
    """The numpy fast path (event scans), compiled kernels off."""
    with patch.object(_kernels, "enabled", False):
        yield


def _compare(spec: Any, seed: int) -> int:
    """The default path (compiled kernels where numba is installed; Softermax's whole
    rows in one call), the row kernels before that (``whole_rows`` off), the numpy event
    scans and the element-by-element loop agree on every row set."""
    rows = 0
    for x, mk in _row_sets(spec, seed):
        fast = spec.model(x, mask=mk)
        with patch.object(_kernels, "whole_rows", False):
            two_kernels = spec.model(x, mask=mk)
        with _numpy_paths():
            numpy_fast = spec.model(x, mask=mk)
        with _slow_paths():
            slow = spec.model(x, mask=mk)
        assert np.array_equal(fast, slow), (spec.describe(), x.shape, mk is not None)
        assert np.array_equal(two_kernels, slow), (spec.describe(), x.shape, mk is not None)
        assert np.array_equal(numpy_fast, slow), (spec.describe(), x.shape, mk is not None)
        rows += x.shape[0]
    return rows


@pytest.mark.parametrize("spec", ONLINE_SPECS + SOFTERMAX_SPECS, ids=lambda s: s.describe()[:60])
def test_event_scan_matches_loop(spec: Any) -> None:
    rows = _compare(spec, seed=7)
    assert rows > 10_000


def test_event_scan_rows_total_over_1e5() -> None:
    """The specs above together see more than 10^5 rows (the issue's floor)."""
    total = sum(x.shape[0] for s in ONLINE_SPECS + SOFTERMAX_SPECS for x, _ in _row_sets(s, 7))
    assert total > 100_000


def test_online_row_state_event_scan_matches_loop() -> None:
    spec = make_spec("softmax", "online")
    x = spec.in_fmt.quantize(np.random.default_rng(3).normal(0, 3, (500, 100)))
    fast = spec.row_state(x)
    with _slow_paths():
        slow = spec.row_state(x)
    assert all(np.array_equal(a, b) for a, b in zip(fast, slow, strict=True))


def test_event_scan_comparison_detects_a_planted_error() -> None:
    """The comparison can fail: a sum 1/256 high in rows with more than three new maxima
    (what a rescale dropped or applied twice would do) is caught."""
    spec = make_spec("softmax", "online")
    good = OnlineSoftmax._stream_sum

    def off_by_one(self: OnlineSoftmax, d: Any, e: Any, new: Any) -> None:
        good(self, d, e, new)
        d += np.where(new.sum(axis=1) > 3, d >> 8, 0)

    with patch.object(OnlineSoftmax, "_stream_sum", off_by_one), pytest.raises(AssertionError):
        _compare(spec, seed=7)


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
def test_kernel_comparison_detects_a_planted_error() -> None:
    """A compiled online scan whose sum is 1/256 high fails the comparison; so does a
    Softermax scan whose sum is 1/256 high."""
    spec = make_spec("softmax", "online")
    good = _kernels.online_state

    def bad_online(*a: Any) -> Any:
        m, d = good(*a)
        return m, d + (d >> 8)

    with patch.object(_kernels, "online_state", bad_online), pytest.raises(AssertionError):
        _compare(spec, seed=7)
    good_s = _kernels.softermax_sum

    def bad_softermax(*a: Any) -> Any:
        d, m = good_s(*a)
        return d + (d >> 8), m

    s2 = make_spec("softmax", "softermax")
    with patch.object(_kernels, "softermax_sum", bad_softermax), pytest.raises(AssertionError):
        _compare(s2, seed=7)
    for name in ("online_out", "softermax_out"):  # the compiled output stages: one LSB off
        good_o = getattr(_kernels, name)

        def bad_out(*a: Any, _g: Any = good_o) -> Any:
            y = _g(*a)
            y[:, ::7] += 1
            return y

        sp = spec if name == "online_out" else s2
        with patch.object(_kernels, name, bad_out), pytest.raises(AssertionError):
            _compare(sp, seed=7)


def _elementwise_specs() -> list[ElementwiseSpec]:
    out: list[ElementwiseSpec] = []
    for op, methods in list_methods().items():
        for m in methods:
            cls = get_method(op, m)
            if not issubclass(cls, ElementwiseSpec):
                continue
            out.append(cls())
            for in_fmt in ("ap_fixed<10,4>", "ap_fixed<18,6>"):
                try:
                    out.append(cls(in_fmt=in_fmt))
                except Exception:
                    continue
    return out


@pytest.mark.parametrize("spec", _elementwise_specs(), ids=lambda s: s.describe()[:60])
def test_elementwise_memo_matches_direct_model_on_every_code(spec: ElementwiseSpec) -> None:
    codes = spec.in_fmt.all_codes()
    rng = np.random.default_rng(0)
    shuffled = rng.permutation(codes)
    direct = spec._model_flat(shuffled.copy())
    got = spec.model(shuffled.reshape(-1, 2) if shuffled.size % 2 == 0 else shuffled)
    assert got.shape == (
        shuffled.reshape(-1, 2).shape if shuffled.size % 2 == 0 else shuffled.shape
    )
    assert np.array_equal(got.ravel(), direct)


def test_elementwise_memo_comparison_detects_a_planted_error() -> None:
    """The comparison above can fail: a memo with one entry off by one LSB is caught."""
    spec = make_spec("gelu", "pwl")
    memo = _elementwise_memo(spec)
    bad = memo.copy()
    bad[len(bad) // 3] += 1
    codes = spec.in_fmt.all_codes()
    assert not np.array_equal(bad[codes - spec.in_fmt.min_raw], spec._model_flat(codes))
    assert np.array_equal(memo[codes - spec.in_fmt.min_raw], spec._model_flat(codes))


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
def test_elementwise_kernel_lookup_and_its_errors() -> None:
    """The compiled lookup gives the memo's values for every dtype a caller passes, and
    codes outside in_fmt still get check_input's error (not a wrong gather)."""
    from hwapprox.approx.base import SpecError

    spec = make_spec("gelu", "pwl")
    codes = spec.in_fmt.all_codes()
    want = spec._model_flat(codes.copy())
    for dt in (np.int64, np.int32):
        got = spec.model(codes.astype(dt))
        assert np.array_equal(got, want)
    with patch.object(_kernels, "enabled", False):
        assert np.array_equal(spec.model(codes), want)
    bad = codes.copy()
    bad[5] = spec.in_fmt.max_raw + 1
    with pytest.raises(SpecError, match="outside"):
        spec.model(bad)
    with pytest.raises(SpecError, match="outside"):
        spec.model(np.array([2**63 - 1], dtype=np.uint64))


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
@pytest.mark.parametrize(
    "text",
    [
        "ap_fixed<8,3,AP_RND,AP_SAT>",
        "ap_fixed<16,6,AP_RND,AP_SAT>",
        "ap_fixed<16,6,AP_TRN,AP_SAT_SYM>",
        "ap_fixed<24,1,AP_RND,AP_SAT>",
        "ap_fixed<52,20,AP_RND,AP_SAT>",
    ],
)
def test_float32_quantize_kernel_matches_the_format(text: str) -> None:
    """spec.quantize_input of float32 (one compiled pass) == FixedFormat.quantize, on every
    rounding decision of the format (tests/test_fixed.py's stress set); NaN still raises."""
    from test_fixed import _float32_stress

    from hwapprox.fixed import FixedFormat, FixedPointError

    fmt = FixedFormat.parse(text)
    spec = make_spec("gelu", "pwl").replace(in_fmt=text) if fmt.width <= 24 else None
    x = _float32_stress(fmt, np.random.default_rng(3))
    if spec is None:  # wide formats: the kernel directly
        out = np.empty(x.size, dtype=np.int64)
        lo, hi = fmt._sat_bounds()
        rnd = fmt.rounding.value == "AP_RND"
        assert _kernels.quantize_f32(x, 2.0**fmt.frac_bits, float(lo), float(hi), rnd, out)
        assert np.array_equal(out, fmt._quantize_flat(x.astype(np.float64)))
        return
    got = spec.quantize_input(x)
    assert np.array_equal(got, fmt._quantize_flat(x.astype(np.float64)))
    bad = x.copy()
    bad[3] = np.nan
    with pytest.raises(FixedPointError, match="non-finite"):
        spec.quantize_input(bad)


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("spec", _elementwise_specs(), ids=lambda s: s.describe()[:60])
def test_elementwise_fused_evaluate_matches_the_three_steps(spec: ElementwiseSpec, dtype) -> None:
    """evaluate() of float32 reals (quantise and gather the output real in one compiled
    pass) == quantize_input -> model -> output_to_float -> astype, on every rounding
    decision of in_fmt (tests/test_fixed.py's stress set) and out-of-range values."""
    from test_fixed import _float32_stress

    x = _float32_stress(spec.in_fmt, np.random.default_rng(5))
    with patch.object(_kernels, "enabled", False):
        want = spec.output_to_float(spec.model(spec.in_fmt.quantize(x))).astype(dtype)
    got = spec.evaluate(x.reshape(1, -1), dtype)
    assert got.dtype == dtype
    assert got.shape == (1, x.size)
    assert np.array_equal(got.ravel(), want)


def _reference_specs() -> list[ElementwiseSpec]:
    """Every elementwise spec above, and each GELU reference form."""
    out = _elementwise_specs()
    for form in ("tanh", "quick", "silu"):
        out += [make_spec("gelu", "pwl", form=form), make_spec("gelu", "lut", form=form)]
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("spec", _reference_specs(), ids=lambda s: s.describe()[:60])
def test_quantized_reference_memo_matches_the_direct_reference(
    spec: ElementwiseSpec, dtype
) -> None:
    """quantized_reference (a memo of the float64 reference over every input code, gathered
    in one compiled pass from float32) == reference(to_float(quantize_input(x))), on every
    rounding decision of in_fmt, out-of-range values and every input code; NaN still raises
    the format's error."""
    from test_fixed import _float32_stress

    from hwapprox.fixed import FixedPointError

    stress = _float32_stress(spec.in_fmt, np.random.default_rng(11)).astype(dtype)
    codes = spec.in_fmt.to_float(np.random.default_rng(1).permutation(spec.in_fmt.all_codes()))
    for x in (stress, codes.astype(dtype)):
        want = spec.reference(spec.in_fmt.to_float(spec.in_fmt.quantize(x)))
        got = spec.quantized_reference(x.reshape(1, -1))
        assert got.dtype == np.float64
        assert got.shape == (1, x.size)
        assert np.array_equal(got.ravel(), want)
        with patch.object(_kernels, "enabled", False):
            assert np.array_equal(spec.quantized_reference(x), want)
    bad = stress.copy()
    bad[3] = np.nan
    with pytest.raises(FixedPointError, match="non-finite"):
        spec.quantized_reference(bad)


def test_quantized_reference_comparison_detects_a_planted_error() -> None:
    """The comparison above can fail: a reference memo off by one ulp at one code is caught."""
    from hwapprox.approx import base

    spec = make_spec("gelu", "pwl")
    x = spec.in_fmt.to_float(spec.in_fmt.all_codes()).astype(np.float32)
    want = spec.reference(spec.in_fmt.to_float(spec.quantize_input(x)))
    table = base._elementwise_ref_memo(spec).copy()
    i = len(table) // 3
    table[i] = np.nextafter(table[i], np.inf)
    with patch.object(base, "_elementwise_ref_memo", lambda s: table):
        assert not np.array_equal(spec.quantized_reference(x), want)
    assert np.array_equal(spec.quantized_reference(x), want)


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
def test_fused_evaluate_comparison_detects_a_planted_error() -> None:
    """The comparison above can fail: a float table one LSB off at one code is caught,
    and a NaN still gets the format's error."""
    from hwapprox.approx import base
    from hwapprox.fixed import FixedPointError

    spec = make_spec("gelu", "pwl")
    x = spec.in_fmt.to_float(spec.in_fmt.all_codes()).astype(np.float32)
    want = spec.output_to_float(spec.model(spec.quantize_input(x)))
    table = base._elementwise_float_memo(spec).copy()
    table[len(table) // 3] += float(spec.out_fmt.lsb)
    with patch.object(base, "_elementwise_float_memo", lambda s: table):
        assert not np.array_equal(spec.evaluate(x), want)
    assert np.array_equal(spec.evaluate(x), want)
    x[7] = np.nan
    with pytest.raises(FixedPointError, match="non-finite"):
        spec.evaluate(x)


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
@pytest.mark.parametrize("text", ["ap_fixed<16,6>", "ap_ufixed<24,0>", "ap_fixed<40,10>"])
def test_output_to_float_kernel_matches_to_float_astype(text: str) -> None:
    """output_to_float(raw, dtype) in one compiled pass == out_fmt.to_float(raw).astype
    (float32 rounding of codes wider than 24 bits included); a planted error is caught."""
    from hwapprox.approx.base import _codes_to_float
    from hwapprox.fixed import FixedFormat

    fmt = FixedFormat.parse(text)
    rng = np.random.default_rng(2)
    raw = rng.integers(fmt.min_raw, fmt.max_raw, size=50_000, endpoint=True)
    raw[:2] = fmt.min_raw, fmt.max_raw
    for dt in (np.float64, np.float32):
        want = fmt.to_float(raw).astype(dt)
        got = _codes_to_float(raw.reshape(100, -1), fmt, dt)
        assert got.dtype == dt
        assert got.shape == (100, 500)
        assert np.array_equal(got.ravel(), want)
        bad = raw.copy()
        bad[9] ^= 1 << (fmt.width - 2)  # a high bit: visible in float32 too
        assert not np.array_equal(_codes_to_float(bad, fmt, dt), want)


# -- LayerNorm output stages ----------------------------------------------------------------
def _ln_specs() -> list[Any]:
    out = []
    for m in ("hls4ml_lut", "ibert", "ivit", "rmsnorm", "rsqrt_lut"):
        base = make_spec("layernorm", m)
        out.append(base)
        for fmt in ("ap_fixed<12,4,AP_TRN,AP_SAT>", "ap_fixed<16,5,AP_RND,AP_WRAP>"):
            out.append(base.replace(out_fmt=fmt))
        out.append(base.replace(in_fmt="ap_fixed<8,4>", gamma_fmt="ap_fixed<8,2>"))
    return out


def _ln_rows(fmt: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """Gaussian rows at three scales plus edge rows: constant, extremes, ramps, one spike."""
    lo, hi = fmt.min_raw, fmt.max_raw
    rows = [rng.normal(0, s * hi, (700, n)) for s in (0.01, 0.2, 0.7)]
    edge = [
        np.full(n, hi // 3),
        np.full(n, lo),
        np.where(np.arange(n) % 2, lo, hi),
        np.linspace(lo, hi, n),
        np.where(np.arange(n) == n // 2, hi, 0),
    ]
    rows.append(np.stack(edge))
    return np.clip(np.concatenate(rows).round(), lo, hi).astype(np.int64)


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
@pytest.mark.parametrize("spec", _ln_specs(), ids=lambda s: s.describe()[:70])
def test_layernorm_kernels_match_numpy(spec: Any) -> None:
    """The compiled output stages (affine_rows, scale_affine_rows) == the numpy path, with
    gamma and beta given or None, at three row lengths (> 10^5 rows over all specs)."""
    rng = np.random.default_rng(17)
    for n in (8, 64, 384):
        x = _ln_rows(spec.in_fmt, n, rng)
        g = rng.integers(spec.gamma_fmt.min_raw, spec.gamma_fmt.max_raw, n, endpoint=True)
        b = rng.integers(spec.beta_fmt.min_raw, spec.beta_fmt.max_raw, n, endpoint=True)
        for gamma, beta in ((g, b), (None, b), (g, None), (None, None)):
            try:
                with patch.object(_kernels, "enabled", False):
                    want = spec.model(x, gamma=gamma, beta=beta)
            except Exception:  # e.g. gamma=None (1.0) that gamma_fmt cannot hold
                continue
            got = spec.model(x, gamma=gamma, beta=beta)
            assert np.array_equal(got, want), (n, gamma is None, beta is None)


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
def test_layernorm_kernel_comparison_detects_a_planted_error() -> None:
    """The comparison above can fail: a kernel that is one LSB off at one element (the
    output-stage kernels, on the path before the whole-row kernels, which
    test_layernorm_whole_row_kernels_match_the_path_before compares with numpy)."""
    for method, name in (("rsqrt_lut", "scale_affine_rows"), ("ibert", "affine_rows")):
        spec = make_spec("layernorm", method)
        x = _ln_rows(spec.in_fmt, 64, np.random.default_rng(3))
        with patch.object(_kernels, "enabled", False):
            want = spec.model(x)
        real = getattr(_kernels, name)

        def off_by_one(*args: Any, real: Any = real) -> None:
            real(*args)
            args[-1][5, 7] += 1

        with patch.object(_kernels, "whole_rows", False):
            with patch.object(_kernels, name, off_by_one):
                assert not np.array_equal(spec.model(x), want)
            assert np.array_equal(spec.model(x), want)


# -- LayerNorm whole rows -------------------------------------------------------------------
def _ln_row_specs() -> list[Any]:
    """Specs for the whole-row kernels: each method at its defaults, 8-bit inputs, output
    casts AP_TRN/AP_SAT and AP_RND/AP_WRAP, and the modes each kernel branches on
    (I-BERT's variance shift, I-ViT's Newton count, hls4ml's saturating / rounding
    accumulator and an input cast that drops bits, pRMSNorm, two Newton steps)."""
    out = []
    for m in ("hls4ml_lut", "ibert", "ivit", "rmsnorm", "rsqrt_lut"):
        base = make_spec("layernorm", m)
        out += [
            base,
            base.replace(in_fmt="ap_fixed<8,4>", out_fmt="ap_fixed<8,3>"),
            base.replace(out_fmt="ap_fixed<12,4,AP_TRN,AP_SAT>"),
            base.replace(out_fmt="ap_fixed<16,5,AP_RND,AP_WRAP>"),
        ]
    out += [
        make_spec("layernorm", "ibert", shift=3),
        make_spec("layernorm", "ibert", in_fmt="ap_fixed<24,8>", norm_frac_bits=12),
        make_spec("layernorm", "ivit", newton_iterations=16),
        make_spec("layernorm", "hls4ml_lut", accum_fmt="ap_fixed<16,6,AP_RND,AP_SAT>"),
        make_spec("layernorm", "hls4ml_lut", accum_fmt="ap_fixed<18,8,AP_TRN,AP_SAT>"),
        make_spec("layernorm", "hls4ml_lut", in_fmt="ap_fixed<16,3>"),  # cast drops 3 bits
        make_spec("layernorm", "hls4ml_lut", in_fmt="ap_fixed<12,8>"),  # shift could wrap
        make_spec("layernorm", "rmsnorm", partial=0.5),
        make_spec("layernorm", "rmsnorm", partial_k=3),
        make_spec("layernorm", "rsqrt_lut", newton_steps=2, rsqrt_table_bits=6),
    ]
    return out


def _ln_edge_rows(fmt: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """Gaussian rows at four scales (0.7 of the range saturates many codes) and the edge
    rows: all equal, zeros, all max / all min codes, alternating extremes, a ramp, one
    spike over zeros, one code above a constant row."""
    lo, hi = fmt.min_raw, fmt.max_raw
    rows = [
        np.clip(rng.normal(0, s * hi, (500, n)).round(), lo, hi) for s in (0.002, 0.05, 0.3, 0.7)
    ]
    edge = [
        np.full(n, hi // 3),
        np.zeros(n),
        np.full(n, hi),
        np.full(n, lo),
        np.where(np.arange(n) % 2, lo, hi),
        np.linspace(lo, hi, n).round(),
        np.where(np.arange(n) == n // 2, hi, 0),
        np.where(np.arange(n) == 0, lo // 5 + 1, lo // 5),
    ]
    rows.append(np.stack(edge))
    return np.concatenate(rows).astype(np.int64)


def _ln_three_paths(spec: Any, x: np.ndarray, gamma: Any, beta: Any) -> tuple[Any, Any, Any]:
    """(default: the whole-row kernel; the path before it: ``whole_rows`` off, output-stage
    kernels on; numpy: every kernel off) of ``spec.model``."""
    fast = spec.model(x, gamma=gamma, beta=beta)
    with patch.object(_kernels, "whole_rows", False):
        before = spec.model(x, gamma=gamma, beta=beta)
    with patch.object(_kernels, "enabled", False):
        numpy_path = spec.model(x, gamma=gamma, beta=beta)
    return fast, before, numpy_path


def _ln_compare(spec: Any, seed: int) -> int:
    """The three paths agree on every row set of :func:`_ln_edge_rows` at N = 1, 2, 7,
    64 and 384, with gamma and beta given or None; returns the rows compared."""
    rng = np.random.default_rng(seed)
    rows = 0
    for n in (1, 2, 7, 64, 384):
        x = _ln_edge_rows(spec.in_fmt, n, rng)
        g = rng.integers(spec.gamma_fmt.min_raw, spec.gamma_fmt.max_raw, n, endpoint=True)
        b = rng.integers(spec.beta_fmt.min_raw, spec.beta_fmt.max_raw, n, endpoint=True)
        g[0] = spec.gamma_fmt.max_raw
        b[-1] = spec.beta_fmt.min_raw
        for gamma, beta in ((g, b), (None, b), (g, None), (None, None)):
            try:
                fast, before, numpy_path = _ln_three_paths(spec, x, gamma, beta)
            except SpecError:  # e.g. gamma=None (1.0) that gamma_fmt cannot hold
                continue
            assert np.array_equal(before, numpy_path), (n, gamma is None, beta is None)
            assert np.array_equal(fast, numpy_path), (n, gamma is None, beta is None)
            rows += x.shape[0]
    return rows


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
@pytest.mark.parametrize("spec", _ln_row_specs(), ids=lambda s: s.describe())
def test_layernorm_whole_row_kernels_match_the_path_before(spec: Any) -> None:
    """rsqrt_rows, ibert_rows and hls4ml_rows (statistics, per-row scalars and output stage
    in one call) == the output-stage-only path before them == numpy (see _ln_compare)."""
    assert _ln_compare(spec, seed=23) > 4000


def test_layernorm_whole_row_rows_total_over_1e5() -> None:
    """The specs above together see more than 10^5 rows (the issue's floor): each row set
    is compared for up to four gamma/beta combinations, counted once here."""
    fmt = make_spec("layernorm", "ibert").in_fmt
    rng = np.random.default_rng(0)
    per_spec = sum(_ln_edge_rows(fmt, n, rng).shape[0] for n in (1, 2, 7, 64, 384))
    assert per_spec * len(_ln_row_specs()) > 100_000


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
def test_layernorm_whole_row_kernels_run_for_every_method() -> None:
    """The comparison above compares the kernels, not a fallback: each method's default
    spec calls its whole-row kernel (and the path before does not)."""
    for m, name in (("hls4ml_lut", "hls4ml_rows"), ("ibert", "ibert_rows"),
                    ("ivit", "ibert_rows"), ("rmsnorm", "rsqrt_rows"),
                    ("rsqrt_lut", "rsqrt_rows")):  # fmt: skip
        spec = make_spec("layernorm", m)
        x = _ln_edge_rows(spec.in_fmt, 16, np.random.default_rng(1))
        real = getattr(_kernels, name)
        calls: list[int] = []

        def spy(*a: Any, _r: Any = real, _c: list[int] = calls) -> Any:
            _c.append(1)
            return _r(*a)

        with patch.object(_kernels, name, spy):
            spec.model(x)
            assert calls, m
            calls.clear()
            with patch.object(_kernels, "whole_rows", False):
                spec.model(x)
            assert not calls, m


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
def test_softermax_whole_row_kernel_runs() -> None:
    """The Softermax comparisons compare the whole-row kernel: the default spec, a masked
    call and the 8-bit spec call it; a t_fmt too wide for the P memo does not."""
    real = _kernels.softermax_rows
    calls: list[bool] = []

    def spy(*a: Any) -> Any:
        ok = real(*a)
        calls.append(ok)
        return ok

    x = np.arange(-40, 40).reshape(4, 20)
    with patch.object(_kernels, "softermax_rows", spy):
        for spec in SOFTERMAX_SPECS[:2]:
            spec.model(x)
            spec.model(x, mask=x % 3 == 0)
        assert calls == [True] * 4
        SOFTERMAX_SPECS[2].model(x)
        assert len(calls) == 4


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
@pytest.mark.parametrize(
    ("op", "method", "name"),
    [
        ("layernorm", "hls4ml_lut", "hls4ml_rows"),
        ("layernorm", "ibert", "ibert_rows"),
        ("layernorm", "ivit", "ibert_rows"),
        ("layernorm", "rmsnorm", "rsqrt_rows"),
        ("softmax", "softermax", "softermax_rows"),
    ],
)
def test_whole_row_comparison_detects_a_planted_error(op: str, method: str, name: str) -> None:
    """The comparisons above can fail: a whole-row kernel one LSB off at one element of
    one row is caught."""
    spec = make_spec(op, method)
    real = getattr(_kernels, name)

    def off_by_one(*args: Any) -> Any:
        ok = real(*args)
        args[-1][len(args[-1]) // 2, 0] += 1
        return ok

    run = (lambda: _ln_compare(spec, seed=23)) if op == "layernorm" else (lambda: _compare(spec, 7))
    with patch.object(_kernels, name, off_by_one), pytest.raises(AssertionError):
        run()
    run()  # and passes unplanted


def test_models_without_numba_match_in_a_fresh_process(tmp_path: Any) -> None:
    """Where numba is missing (imports of it fail in a fresh interpreter) the package
    imports, warns once, and the four sped-up models and the online softmax give the
    same codes as here (the compiled path where numba is installed)."""
    import subprocess
    import sys
    from pathlib import Path

    rng = np.random.default_rng(8)
    cases = [("layernorm", m) for m in ("rmsnorm", "hls4ml_lut", "ibert", "ivit")]
    cases += [("softmax", "softermax"), ("softmax", "online")]
    arrays = {}
    for op, m in cases:
        spec = make_spec(op, m)
        x = _ln_edge_rows(spec.in_fmt, 48, rng)[::7]
        arrays[f"{op}_{m}_x"] = x
        arrays[f"{op}_{m}_y"] = spec.model(x)
    np.savez(tmp_path / "cases.npz", **arrays)
    code = (
        "import sys, warnings; sys.modules['numba'] = None\n"
        "import numpy as np\n"
        "from hwapprox.approx import _kernels\n"
        "from hwapprox.approx.registry import make_spec\n"
        "assert _kernels.njit is None\n"
        f"z = np.load({str(tmp_path / 'cases.npz')!r})\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        f"    for op, m in {cases!r}:\n"
        "        y = make_spec(op, m).model(z[f'{op}_{m}_x'])\n"
        "        assert np.array_equal(y, z[f'{op}_{m}_y']), (op, m)\n"
        "assert any('numba is not installed' in str(x.message) for x in w)\n"
        "print('ok')\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


class _Sub(np.ndarray):
    """An ndarray subclass (check_input returns a base array for it)."""


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
def test_check_input_range_kernel_gives_the_format_errors() -> None:
    """check_input's compiled range check returns the array itself (as in_fmt.check does
    for int64), and a code just outside in_fmt -- first, middle or last, below or above --
    still raises the format's error; other dtypes and small arrays take in_fmt.check."""
    spec = make_spec("layernorm", "rmsnorm")
    fmt = spec.in_fmt
    x = np.random.default_rng(0).integers(fmt.min_raw, fmt.max_raw, (64, 128), endpoint=True)
    assert spec.check_input(x) is x
    for pos in (0, x.size // 2, x.size - 1):
        for bad in (fmt.min_raw - 1, fmt.max_raw + 1):
            y = x.copy()
            y.flat[pos] = bad
            with pytest.raises(SpecError, match=f"raw code {bad} is outside"):
                spec.check_input(y)
            with pytest.raises(SpecError, match="outside"):
                spec.model(y)
    assert np.array_equal(spec.check_input(x.astype(np.int32)), x)
    mm = spec.check_input(x.view(_Sub))  # a subclass: in_fmt.check's base array
    assert type(mm) is np.ndarray
    assert np.array_equal(mm, x)
    assert np.array_equal(spec.check_input(x.T), x.T)  # not C-contiguous: in_fmt.check
    with pytest.raises(SpecError, match="raw integer codes"):
        spec.check_input(x.astype(np.float64))


@pytest.mark.parametrize("threads", [3, 4])
def test_site_blocks_on_threads_match_one_block(threads: int) -> None:
    """apply_spec_blocks (a site tensor cut along its first axis, one block per worker
    thread, from MIN_SPLIT_THREADS threads on) == apply_spec on the whole tensor, for
    every site of the embedded example (softmax with masks, GELU, LayerNorm); and the
    emulator's outputs with blocks on threads == without; two threads do not cut."""
    from hwapprox.export import emulate
    from hwapprox.export.example import inputs_path, model_path
    from hwapprox.export.validate import import_model, validate

    imp = import_model(str(model_path()))
    feeds = dict(np.load(inputs_path()))
    res = validate(imp, inputs=feeds, threads=threads)
    tr = res.trace
    specs = {k: v for k, v in res.specs.items() if v is not None}
    assert {s.operator for s in res.selected} >= {"softmax", "gelu", "layernorm"}
    with patch.object(emulate, "MIN_SPLIT_ELEMENTS", 1):
        for s in res.selected:
            if s.name not in specs:
                continue
            x, mask = tr.site_inputs[s.name], tr.masks.get(s.name)
            assert emulate._splittable(s, np.ndim(x))
            want = emulate.apply_spec(s, specs[s.name], x, mask, dtype=np.float32)
            got = emulate.apply_spec_blocks(s, specs[s.name], x, mask, None, np.float32, threads)
            assert got.dtype == want.dtype
            assert np.array_equal(got, want), s.name
        emu = imp.sessions.emulator(res.selected, threads)
        split = emu.run(feeds, specs)
    with patch.object(emulate, "MIN_SPLIT_ELEMENTS", 1 << 62):
        whole = emu.run(feeds, specs)
    assert split.keys() == whole.keys()
    for k in whole:
        assert np.array_equal(split[k], whole[k]), k
    s = next(s for s in res.selected if s.name in specs and s.mask is None)
    x = tr.site_inputs[s.name]
    real = emulate.apply_spec
    for n, blocks in ((2, 1), (threads, min(threads, x.shape[0]))):  # two threads: one block
        calls = []
        with (
            patch.object(emulate, "MIN_SPLIT_ELEMENTS", 1),
            patch.object(emulate, "apply_spec", lambda *a, c=calls: c.append(1) or real(*a)),
        ):
            emulate.apply_spec_blocks(s, specs[s.name], x, None, None, np.float32, n)
        assert len(calls) == blocks, n


def test_site_blocks_keep_rows_along_the_first_axis_whole() -> None:
    """A site whose rows run along axis 0 (or a 1-D row site) is never cut."""
    from hwapprox.approx.base import Operator
    from hwapprox.export import emulate
    from hwapprox.export.patterns import Site

    def site(op: Operator, axis: int | None) -> Site:
        return Site(name="s", operator=op, input="x", output="y", nodes=("n",), axis=axis)

    assert not emulate._splittable(site(Operator.SOFTMAX, 0), 3)
    assert not emulate._splittable(site(Operator.SOFTMAX, -3), 3)
    assert not emulate._splittable(site(Operator.LAYERNORM, -1), 1)
    assert emulate._splittable(site(Operator.SOFTMAX, -1), 3)
    assert emulate._splittable(site(Operator.GELU, None), 1)


def test_spec_cache_serves_equal_fields_and_tells_types_apart() -> None:
    """make_spec / replace build a spec once per distinct field values: the cached spec
    equals a direct construction; 1 vs True vs 1.0 and -0.0 vs 0.0 are different keys
    (a refused value is still refused); replace gives dataclasses.replace's spec."""
    import dataclasses

    from hwapprox.approx.base import SpecError, _spec_key

    a = make_spec("softmax", "online", row_max=256, clip_gamma=-0.0)
    b = make_spec("softmax", "online", row_max=256, clip_gamma=-0.0)
    assert a is b
    assert a == OnlineSoftmax(row_max=256, clip_gamma=-0.0)
    assert a.describe() == OnlineSoftmax(row_max=256, clip_gamma=-0.0).describe()
    c = make_spec("softmax", "online", row_max=256, clip_gamma=0.0)
    assert c is not a
    assert np.signbit(a.clip_gamma)
    assert not np.signbit(c.clip_gamma)
    assert make_spec("softmax", "online", off_by_one=False).off_by_one is False
    with pytest.raises(SpecError, match="off_by_one"):
        make_spec("softmax", "online", off_by_one=0)
    with pytest.raises(SpecError, match="row_max"):
        make_spec("softmax", "online", row_max=True)
    assert _spec_key(OnlineSoftmax, {"x": 1}) != _spec_key(OnlineSoftmax, {"x": 1.0})
    assert _spec_key(OnlineSoftmax, {"x": [1]}) is None
    for spec in (a, make_spec("layernorm", "rsqrt_lut"), make_spec("gelu", "pwl")):
        derived = getattr(spec, "_derived", frozenset())
        for changes in ({"in_fmt": "ap_fixed<12,4>"}, {}):
            want = dataclasses.replace(spec, **{**dict.fromkeys(derived), **changes})
            got = spec.replace(**changes)
            assert got == want
            assert got.describe() == want.describe()
    with pytest.raises(TypeError):
        a.replace(no_such_field=1)


def test_calibration_folded_on_threads_matches_serial() -> None:
    """calibrate folds the sites on worker threads: the statistics, masks and row counts
    equal the one-thread run's (the embedded example, two batches)."""
    from hwapprox.export import emulate
    from hwapprox.export.calibrate import calibrate
    from hwapprox.export.example import inputs_path, model_path
    from hwapprox.export.validate import import_model

    imp = import_model(str(model_path()))
    feeds = dict(np.load(inputs_path()))
    half = {k: v[: max(1, len(v) // 2)] for k, v in feeds.items()}
    runs = []
    for n in (1, 4):
        with patch.object(emulate, "site_threads", lambda threads=0, n=n: n):
            runs.append(calibrate(imp.model, imp.sites, feeds, more=[half]))
    one, many = runs
    assert one.stats == many.stats
    assert one.out_stats == many.out_stats
    assert one.masks.keys() == many.masks.keys()
    for k in one.masks:
        assert np.array_equal(one.masks[k], many.masks[k])


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
@pytest.mark.parametrize("with_keep", [False, True])
def test_err_stats3_matches_three_err_stats_passes(with_keep: bool) -> None:
    """site_metrics' one-pass comparison of approximation, float output and ideal ==
    the three err_stats passes it replaces (float32 and float64 operands, a keep mask,
    blocks of 4096 and a tail)."""
    rng = np.random.default_rng(4)
    n = 3 * 4096 + 77
    yf = rng.normal(size=n).astype(np.float32)
    y = (yf + rng.normal(scale=1e-3, size=n)).astype(np.float32)
    yi = yf.astype(np.float64) + rng.normal(scale=1e-4, size=n)
    keep = rng.random(n) < 0.7 if with_keep else np.zeros(1, bool)
    got = _kernels.err_stats3(y, yf, yi, keep, with_keep)
    want = _kernels.err_stats(y, yf, keep, with_keep)
    assert got[:5] == want
    assert got[5] == _kernels.err_stats(yi, yf, keep, with_keep)[1]
    assert got[6] == _kernels.err_stats(y, yi, keep, with_keep)[1]
    assert got[6] > 0
    assert got[5] > 0


def test_thread_start_runs_before_the_wait_in_order_with_the_first_error() -> None:
    """thread_start (the budget search screens one operator's candidates while it builds
    the next one's) runs the items before its results are asked for, returns them in
    item order, and raises the first error in item order there."""
    import threading

    from hwapprox.export import emulate

    started = threading.Event()

    def square(i: int) -> int:
        started.set()
        return i * i

    wait = emulate.thread_start(square, range(8), 2)
    assert started.wait(10)  # running before the wait
    assert wait() == [i * i for i in range(8)]

    def fail_at(i: int) -> int:
        if i in (3, 5):
            raise ValueError(f"item {i}")
        return i

    with pytest.raises(ValueError, match="item 3"):
        emulate.thread_start(fail_at, range(8), 2)()
    with pytest.raises(ValueError, match="item 3"):  # one thread: runs at once, same error
        emulate.thread_start(fail_at, range(8), 1)
    assert emulate.thread_start(square, [], 2)() == []


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_thread_map_works_in_a_forked_child() -> None:
    """A child forked after the worker threads ran (budget-search workers, a user's
    fork-based pool) gets threads of its own instead of the parent's dead pool."""
    import os
    import time

    from hwapprox.export import emulate

    assert emulate.thread_map(lambda i: i * i, range(8), 2) == [i * i for i in range(8)]
    pid = os.fork()
    if pid == 0:  # the child: exit 0 when the map completes
        try:
            ok = emulate.thread_map(lambda i: i + 1, range(8), 2) == list(range(1, 9))
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("thread_map hung in the forked child")


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spec", _reference_specs(), ids=lambda s: s.describe()[:60])
def test_error_sums_match_err_stats3_of_the_arrays(spec: ElementwiseSpec, dtype) -> None:
    """site_metrics' one pass for elementwise sites (quantise, gather the model's real
    and the reference, compare with the float output) == err_stats3 of the arrays it
    no longer builds, on every rounding decision of in_fmt, out-of-range values and
    every input code (blocks of 4096 and a tail); a NaN gives None (the arrays' path
    then raises the format's error)."""
    from test_fixed import _float32_stress

    rng = np.random.default_rng(8)
    stress = _float32_stress(spec.in_fmt, rng)
    codes = spec.in_fmt.to_float(rng.permutation(spec.in_fmt.all_codes())).astype(np.float32)
    for x in (stress, codes):
        yf = spec.reference(x.astype(np.float64)) + rng.normal(scale=1e-3, size=x.size)
        yf = yf.astype(np.float32).reshape(2, -1) if x.size % 2 == 0 else yf.astype(np.float32)
        xs = x.reshape(yf.shape)
        y = np.ascontiguousarray(spec.evaluate(xs, dtype)).reshape(-1)
        yi = np.ascontiguousarray(spec.quantized_reference(xs)).reshape(-1)
        want = _kernels.err_stats3(y, yf.reshape(-1), yi, np.zeros(1, bool), False)
        got = spec.error_sums(xs, yf, dtype)
        if spec._f32_quant() is None:  # a wrapping input format: the arrays' path
            assert got is None
            continue
        assert got is not None
        assert got == tuple(type(g)(w) for g, w in zip(got, want, strict=True))
        assert got[1] > 0
        assert got[6] > 0
    bad = stress.copy()
    bad[3] = np.nan
    assert spec.error_sums(bad, bad, dtype) is None
    assert spec.error_sums(stress.astype(np.float64), stress, dtype) is None  # not float32


def test_error_sums_cover_saturating_specs() -> None:
    """The one pass applies where validate's calibrated specs are (saturating input
    formats), so the comparison above is not vacuous."""
    specs = [s for s in _reference_specs() if s._f32_quant() is not None]
    assert len(specs) >= 5


def test_error_sums_comparison_detects_a_planted_error() -> None:
    """The comparison above can fail: a model real one LSB off at one code changes the
    figures (the code is hit by the data)."""
    from hwapprox.approx import base

    spec = make_spec("gelu", "pwl")
    x = spec.in_fmt.to_float(spec.in_fmt.all_codes()).astype(np.float32)
    yf = spec.reference(x.astype(np.float64)).astype(np.float32)
    want = spec.error_sums(x, yf, np.float32)
    table = base._elementwise_float_memo(spec).copy()
    table[len(table) // 3] += 64 * float(spec.out_fmt.lsb)
    base._elementwise_f32_memo.cache_clear()  # (it holds the memo as stored)
    try:
        with patch.object(base, "_elementwise_float_memo", lambda s: table):
            assert spec.error_sums(x, yf, np.float32) != want
    finally:
        base._elementwise_f32_memo.cache_clear()
    assert spec.error_sums(x, yf, np.float32) == want


@pytest.mark.parametrize("op", ["softmax", "layernorm"])
def test_apply_spec_pair_matches_two_apply_spec_calls(op: str) -> None:
    """The approximation and the ideal from one quantisation == two apply_spec calls."""
    from hwapprox.approx.base import Operator
    from hwapprox.export.emulate import apply_spec, apply_spec_pair
    from hwapprox.export.patterns import Site

    rng = np.random.default_rng(2)
    x = rng.normal(scale=3.0, size=(3, 4, 64)).astype(np.float32)
    if op == "softmax":
        site = Site(name="s", operator=Operator.SOFTMAX, input="x", output="y", nodes=("n",),
                    axis=-1)  # fmt: skip
        spec = make_spec("softmax", "online")
        mask = rng.random((3, 1, 64)) < 0.2
    else:
        gamma = rng.normal(size=64)
        site = Site(name="s", operator=Operator.LAYERNORM, input="x", output="y", nodes=("n",),
                    axis=-1, gamma=gamma, beta=rng.normal(size=64))  # fmt: skip
        spec = make_spec("layernorm", "rsqrt_lut")
        mask = None
    y, yi = apply_spec_pair(site, spec, x, mask, dtype=np.float32)
    assert np.array_equal(y, apply_spec(site, spec, x, mask, dtype=np.float32))
    assert np.array_equal(yi, apply_spec(site, spec, x, mask, ideal=True))
    assert y.dtype == np.float32
    assert yi.dtype == np.float64
    assert not np.array_equal(y, yi)


@pytest.mark.parametrize("unit", ["base2", "lut"])
def test_online_softmax_wide_inputs_clamped_exp_memo_is_exact(unit: str) -> None:
    """Inputs over 20 bits: E from a memo over ``δ < 2^b`` with δ clamped (``b`` of
    ``_exp_clamp_bits``) equals E computed, over every δ of a 21-bit input and at a
    24-bit input's largest δ; the model on 10^5 rows (edge rows: equal codes, one
    extreme, the format's ends) equals the model with the memo switched off; and a
    clamp 3 bits short is caught."""
    from unittest.mock import patch

    from hwapprox.approx.softmax.online import OnlineSoftmax

    sp = make_spec("softmax", "online", in_fmt="ap_fixed<21,11,AP_RND,AP_SAT>", exp_unit=unit)
    b = sp._exp_clamp_bits()
    assert b is not None
    assert b < sp.in_fmt.width
    every = np.arange(1 << sp.in_fmt.width, dtype=np.int64)
    fast = sp._exp_fn(sp.tables())
    assert np.array_equal(fast(every), sp.exp_unit_raw(every))
    wide = make_spec("softmax", "online", in_fmt="ap_fixed<24,12,AP_RND,AP_SAT>", exp_unit=unit)
    top = np.array([(1 << 24) - 1, (1 << 23) + 5, 7], dtype=np.int64)
    assert np.array_equal(wide._exp_fn(wide.tables())(top), wide.exp_unit_raw(top))
    rng = np.random.default_rng(9)
    lo, hi = sp.in_fmt.min_raw, sp.in_fmt.max_raw
    shift = rng.integers(0, 12, (100_000, 1))  # rows of every spread
    rows = rng.integers(lo, hi + 1, (100_000, 16), dtype=np.int64) >> shift
    rows[:8] = [[0] * 16, [lo] * 16, [hi] * 16, [hi] + [lo] * 15, [lo] + [hi] * 15,
                [5] * 15 + [6], list(range(-8, 8)), [hi, lo] * 8]  # fmt: skip
    mask = rng.random(rows.shape) < 0.2
    mask[8] = True  # a fully masked row
    calls = []
    real = _kernels.online_state
    with patch.object(_kernels, "online_state", lambda *a: calls.append(1) or real(*a)):
        got = sp.model(rows)
        got_m = sp.model(rows, mask=mask)
    if _kernels.available():
        assert len(calls) == 2  # the compiled scans on the clamped memo
    with patch.object(OnlineSoftmax, "_exp_clamp_bits", lambda self: None):
        assert not sp._kernel_ok()
        want = sp.model(rows)
        want_m = sp.model(rows, mask=mask)
    assert np.array_equal(got, want)
    assert np.array_equal(got_m, want_m)
    for tau in (1 << (b - 2), (1 << b) - 1):  # below the clamp: compiled; at it: numpy
        sk = sp.replace(skip_threshold=float(tau * sp.in_fmt.lsb))
        assert sk._kernel_ok() == (sk.skip_raw < (1 << b) - 1)
        got_s = sk.model(rows[:5000])
        with patch.object(OnlineSoftmax, "_exp_clamp_bits", lambda self: None):
            assert np.array_equal(got_s, sk.model(rows[:5000]))
    from hwapprox.approx.softmax import _common

    short = b - 3
    _common._cached.cache_clear()  # (the memo of the right size is cached per spec)
    with patch.object(OnlineSoftmax, "_exp_clamp_bits", lambda self: short):
        bad = sp._exp_fn(sp.tables())
        assert not np.array_equal(bad(every), sp.exp_unit_raw(every))
        assert not np.array_equal(sp.model(rows), want)  # the compiled scans too
    _common._cached.cache_clear()


# -- LayerNorm float32 rows in one pass (the emulation's LayerNorm sites) ----------------------
def _rsqrt_specs() -> list[Any]:
    """The rsqrt-family whole-row specs with calibration's saturating input formats
    (AP_RND/AP_SAT; one AP_TRN/AP_SAT), which the compiled float32 quantiser takes, and
    one default (wrapping) input format, which it does not."""
    fam = [s for s in _ln_row_specs() if s.method in ("rsqrt_lut", "rmsnorm")]
    out = [s.replace(in_fmt=s.in_fmt.with_modes("AP_RND", "AP_SAT")) for s in fam]
    out.append(fam[0].replace(in_fmt=fam[0].in_fmt.with_modes("AP_TRN", "AP_SAT")))
    out.append(fam[0])
    return out


def _f32_rows(spec: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """float32 rows: the edge rows' codes as reals, reals off the grid (ties at half an
    LSB, values past the format's range on both sides)."""
    lsb = float(spec.in_fmt.lsb)
    codes = _ln_edge_rows(spec.in_fmt, n, rng).astype(np.float64) * lsb
    off = rng.normal(0, 0.3 * float(spec.in_fmt.max), (300, n))
    off[:50] = (np.round(off[:50] / lsb) + 0.5) * lsb  # ties
    off[50:60] *= 10.0  # saturate
    return np.concatenate([codes, off]).astype(np.float32)


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
@pytest.mark.parametrize("spec", _rsqrt_specs(), ids=lambda s: s.describe()[:90])
def test_layernorm_f32_rows_equal_the_codes_path(spec: Any) -> None:
    """rows_f32 (quantise, statistics, normalise, affine and decode in one compiled pass)
    equals quantize_input -> model -> output_to_float, in float32 and float64, with gamma
    and beta given or None, at N = 1, 2, 7, 64 and 384; a NaN row and a writeable gamma
    (not memoised by identity) behave; a kernel off by one code is caught."""
    rng = np.random.default_rng(41)
    rows = 0
    for n in (1, 2, 7, 64, 384):
        xf = _f32_rows(spec, n, rng)
        g = rng.integers(spec.gamma_fmt.min_raw, spec.gamma_fmt.max_raw, n, endpoint=True)
        b = rng.integers(spec.beta_fmt.min_raw, spec.beta_fmt.max_raw, n, endpoint=True)
        g.flags.writeable = False
        b.flags.writeable = False
        for gamma, beta in ((g, b), (None, b), (g, None), (None, None)):
            try:
                codes = spec.model(spec.quantize_input(xf), gamma=gamma, beta=beta)
            except SpecError:  # gamma=None (1.0) that gamma_fmt cannot hold
                with pytest.raises(SpecError):
                    spec.rows_f32(xf, gamma, beta)
                continue
            for dt in (np.float32, np.float64):
                got = spec.rows_f32(xf, gamma, beta, dt)
                if spec._f32_quant() is None:  # an input format the compiled quantiser
                    assert got is None  # does not take (not saturating): the codes path
                    continue
                assert got is not None
                assert got.dtype == dt
                assert np.array_equal(got, spec.output_to_float(codes, dt)), (n, dt)
            rows += xf.shape[0]
    assert rows > 4000
    if spec._f32_quant() is None:
        return
    xf = _f32_rows(spec, 64, rng)
    xf[3, 5] = np.nan
    assert spec.rows_f32(xf) is None  # the codes path raises the format's error
    g = np.ones(64, np.int64) << spec.gamma_fmt.frac_bits if spec.gamma_fmt.frac_bits < 60 else None
    if g is not None and g.max() <= spec.gamma_fmt.max_raw:
        xf = _f32_rows(spec, 64, rng)
        first = spec.rows_f32(xf, g)
        g[0] = 0  # writeable: changed in place, and seen
        want = spec.output_to_float(spec.model(spec.quantize_input(xf), gamma=g), np.float32)
        assert np.array_equal(spec.rows_f32(xf, g), want)
        assert not np.array_equal(first, want)
    real = _kernels.rsqrt_rows_f32

    def off_by_one(*a: Any) -> int:
        status = real(*a)
        a[-1][0, 0] += a[-2]  # one output LSB on the first element
        return status

    xf = _f32_rows(spec, 7, rng)
    want = spec.output_to_float(spec.model(spec.quantize_input(xf)), np.float32)
    with patch.object(_kernels, "rsqrt_rows_f32", off_by_one):
        got = spec.rows_f32(xf)
    assert got is None or not np.array_equal(got, want)


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
def test_layernorm_site_emulation_takes_the_f32_rows() -> None:
    """An emulated LayerNorm site (apply_spec on float32 rows) runs rows_f32 and gives the
    codes path's values."""
    from hwapprox.export.builders import EncoderShape, bert_encoder
    from hwapprox.export.emulate import apply_spec
    from hwapprox.export.validate import import_model

    shape = EncoderShape(layers=1, width=32, heads=2, ffn=64, seq=6, batch=2)
    imp = import_model(bert_encoder(shape, layernorm="decomposed"))
    site = next(s for s in imp.sites if s.operator.value == "layernorm")
    spec = make_spec("layernorm", "rsqrt_lut", in_fmt="ap_fixed<16,5,AP_RND,AP_SAT>")
    x = np.random.default_rng(2).normal(0, 2, (2, 6, 32)).astype(np.float32)
    calls = []
    real = _kernels.rsqrt_rows_f32
    with patch.object(_kernels, "rsqrt_rows_f32", lambda *a: calls.append(1) or real(*a)):
        got = apply_spec(site, spec, x, dtype=np.float32)
    assert calls
    with patch.object(type(spec), "rows_f32", lambda *a, **k: None):
        want = apply_spec(site, spec, x, dtype=np.float32)
    assert np.array_equal(got, want)


_RELU_CASES = [
    {},
    {"seq_len": 197},
    {"seq_len": 100, "recip_bits": 10},
    {"seq_len": 64, "out_fmt": "ap_ufixed<8,1,AP_TRN,AP_SAT>"},
    {"seq_len": 12, "in_fmt": "ap_fixed<12,5>", "out_fmt": "ap_ufixed<10,0,AP_RND,AP_SAT>"},
    {"seq_len": 3, "in_fmt": "ap_fixed<8,8>", "out_fmt": "ap_ufixed<6,2,AP_RND,AP_SAT>"},
]


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
@pytest.mark.parametrize("fields", _RELU_CASES, ids=str)
def test_relu_attention_kernel_matches_its_datapath_on_every_code(fields: dict) -> None:
    """ReLU attention's compiled multiply-shift-clip gives _model_flat's codes on every
    input code (powers of two and not, rounding and truncating, saturating outputs), the
    memo path's too; an out-of-range code still gets check_input's error."""
    from hwapprox.approx.base import SpecError

    spec = make_spec("relu_attention", "wortsman", **fields)
    fa = spec._mult_shift()[1]
    assert _kernels.cast_params(fa, spec.out_fmt) is not None  # (the kernel's case)
    codes = np.random.default_rng(3).permutation(spec.in_fmt.all_codes())
    want = spec._model_flat(codes.copy())
    assert np.array_equal(spec.model(codes), want)
    memo = _elementwise_memo(spec)
    assert np.array_equal(memo[codes - spec.in_fmt.min_raw], want)
    bad = codes.copy()
    bad[7] = spec.in_fmt.min_raw - 1
    with pytest.raises(SpecError, match="outside"):
        spec.model(bad)


@pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")
def test_relu_attention_kernel_comparison_detects_a_planted_error() -> None:
    spec = make_spec("relu_attention", "wortsman", seq_len=197)
    codes = spec.in_fmt.all_codes()
    good = _kernels.relu_mult_cast

    def off(x: Any, *a: Any) -> bool:
        ok = good(x, *a)
        a[-1][len(x) // 2] += 1
        return ok

    with patch.object(_kernels, "relu_mult_cast", off):
        assert not np.array_equal(spec.model(codes), spec._model_flat(codes.copy()))
    assert np.array_equal(spec.model(codes), spec._model_flat(codes.copy()))
