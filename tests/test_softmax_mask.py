"""Attention-mask bits in every softmax model (True = masked out).

The contract (:class:`hwapprox.approx.softmax.SoftmaxSpec`): a masked element
takes no part in the row max or sum and outputs raw 0; the unmasked elements
get exactly ``model(row[~mask])``; a fully masked row is all zeros; no mask
(or an all-False one) is the unmasked model, bit for bit.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from hwapprox.approx.base import Operator, RowwiseSpec, SpecError
from hwapprox.approx.registry import METHODS, make_spec
from hwapprox.approx.softmax import OnlineSoftmax, SoftmaxSpec, stable_softmax

#: Per method: the default spec and other format sets (different in/out widths;
#: "wide" inputs take the int64 paths without memo tables; hls4ml "satsym" and
#: "satzero" sum through the compacted adder tree, and with AP_SAT_ZERO the
#: tree's shape changes the sum).
FORMATS: dict[str, dict[str, dict[str, Any]]] = {
    "hls4ml_stable": {
        "default": {},
        "small": {
            "in_fmt": "ap_fixed<10,4>",
            "out_fmt": "ap_fixed<12,2>",
            "exp_table_size": 256,
            "inv_table_size": 256,
        },
        "wide": {"in_fmt": "ap_fixed<22,8>", "out_fmt": "ap_fixed<18,4>"},
        "satsym": {"accum_fmt": "ap_fixed<16,6,AP_TRN,AP_SAT_SYM>"},
        "satzero": {"accum_fmt": "ap_fixed<10,4,AP_TRN,AP_SAT_ZERO>"},  # tree order matters
    },
    "hls4ml_latency": {
        "default": {},
        "small": {
            "in_fmt": "ap_fixed<10,4>",
            "out_fmt": "ap_fixed<12,2>",
            "exp_table_size": 256,
            "inv_table_size": 256,
        },
        "wide": {"in_fmt": "ap_fixed<22,6>", "out_fmt": "ap_fixed<18,4>"},
        "satsym": {"accum_fmt": "ap_fixed<16,6,AP_TRN,AP_SAT_SYM>"},
        "satzero": {"accum_fmt": "ap_fixed<10,4,AP_TRN,AP_SAT_ZERO>"},  # tree order matters
    },
    "ibert": {
        "default": {},
        "small": {"in_fmt": "ap_fixed<8,3>", "out_fmt": "ap_ufixed<8,0,AP_TRN,AP_SAT>"},
        "wide": {
            "in_fmt": "ap_fixed<24,10>",
            "out_fmt": "ap_ufixed<12,1,AP_TRN,AP_SAT>",
            "requant": "shift",
        },
    },
    "shiftmax": {
        "default": {},
        "small": {"in_fmt": "ap_fixed<8,3>", "out_fmt": "ap_ufixed<8,1,AP_TRN,AP_SAT>"},
        "wide": {"in_fmt": "ap_fixed<24,8>", "out_fmt": "ap_ufixed<12,1,AP_TRN,AP_SAT>", "n": 14},
    },
    "online": {
        "default": {},  # int32 stream precompute (narrow)
        "small_two_pass": {
            "in_fmt": "ap_fixed<10,4>",
            "out_fmt": "ap_ufixed<8,0,AP_RND,AP_SAT>",
            "schedule": "two_pass",
        },
        "lut": {  # E(0) != 1.0 (bin-centre LUT): the empty state must still give d = ONE
            "in_fmt": "ap_fixed<12,5>",
            "out_fmt": "ap_ufixed<10,0,AP_TRN,AP_SAT>",
            "exp_unit": "lut",
            "exp_lut_bits": 10,
            "recip_unit": "lut",
            "sum_fmt": "ap_ufixed<36,12,AP_TRN>",
        },
        "int64": {"sum_fmt": "ap_ufixed<40,8,AP_RND>"},  # memo, int64 precompute
        "wide": {"in_fmt": "ap_fixed<24,8>", "out_fmt": "ap_ufixed<12,0,AP_RND,AP_SAT>"},
    },
    "softermax": {
        "default": {},
        "small": {"in_fmt": "ap_fixed<10,4>", "out_fmt": "ap_ufixed<10,0,AP_TRN,AP_SAT>"},
        "wide": {
            "in_fmt": "ap_fixed<24,8>",
            "out_fmt": "ap_ufixed<12,0,AP_RND,AP_SAT>",
            "t_fmt": "ap_fixed<26,10,AP_RND,AP_SAT>",
        },
    },
}
CASES = [(m, k) for m in METHODS[Operator.SOFTMAX] for k in FORMATS[m]]
LENGTHS = (1, 2, 7, 64, 200)


def test_every_registered_method_has_format_sets() -> None:
    assert set(FORMATS) == set(METHODS[Operator.SOFTMAX])
    assert all(len(v) >= 2 for v in FORMATS.values())


def _spec(method: str, fmts: str) -> SoftmaxSpec:
    spec = make_spec("softmax", method, **FORMATS[method][fmts])
    assert isinstance(spec, SoftmaxSpec)
    return spec


def _random_rows(spec: SoftmaxSpec, rng: np.random.Generator, n: int, r: int) -> np.ndarray:
    """Rows of raw codes: normal at several spreads (in LSBs of 1.0) plus full-range uniform."""
    f = spec.in_fmt
    one = 1 << f.frac_bits
    sig = rng.choice([0.25, 1.0, 3.0, 10.0], size=(r, 1)) * one
    x = np.rint(rng.normal(0.0, 1.0, (r, n)) * sig + rng.normal(0.0, 2.0, (r, 1)) * one)
    x[: r // 5] = rng.integers(f.min_raw, f.max_raw + 1, (r // 5, n))
    return np.clip(x, f.min_raw, f.max_raw).astype(np.int64)


def _random_masks(rng: np.random.Generator, n: int, r: int) -> np.ndarray:
    dens = rng.choice([0.0, 0.1, 0.5, 0.9, 1.0], size=(r, 1))
    return rng.random((r, n)) < dens


def _edge_rows(spec: SoftmaxSpec, rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """(rows, masks): masked unique max (first/middle/last), all but one masked,
    fully masked, ties, in_fmt extremes, leading/trailing masked runs."""
    lo, hi = spec.in_fmt.min_raw, spec.in_fmt.max_raw
    one = 1 << spec.in_fmt.frac_bits
    base = np.clip(np.rint(rng.normal(0, 2 * one, n)), lo, hi).astype(np.int64)
    idx = np.arange(n)
    rows: list[np.ndarray] = []
    masks: list[np.ndarray] = []

    def add(x: np.ndarray, m: np.ndarray) -> None:
        rows.append(np.clip(x, lo, hi).astype(np.int64))
        masks.append(m.astype(bool))

    for p in sorted({0, n // 2, n - 1}):
        add(np.where(idx == p, hi, base), idx == p)  # masked unique max
        add(np.where(idx == p, hi, np.minimum(base, hi - 3 * one)), idx == p)
        add(base, idx != p)  # all but one masked
        add(np.where(idx == p, base, hi), idx != p)  # the masked ones are the maxima
    add(base, np.ones(n, bool))  # fully masked
    add(np.full(n, hi), np.ones(n, bool))
    add(np.full(n, 1234 % hi), idx % 3 == 1)  # ties
    add(np.where(idx % 2 == 0, hi, base), idx == 0)  # tied maxima, the first masked
    add(np.where(idx % 2 == 0, hi, lo), idx % 2 == 0)  # extremes: the max codes masked
    add(np.where(idx % 2 == 0, hi, lo), idx % 2 == 1)  # extremes: the min codes masked
    add(np.full(n, lo), idx != n - 1)
    add(np.where(idx < n // 2, hi, base), idx < n // 2)  # leading masked run of maxima
    add(np.where(idx >= n // 2, hi, base), idx >= (n + 1) // 2)  # trailing masked run
    add(np.linspace(lo, hi, n), rng.random(n) < 0.5)  # ramp
    return np.stack(rows), np.stack(masks)


def _check_rows(spec: SoftmaxSpec, x: np.ndarray, mask: np.ndarray) -> None:
    """The contract row by row on one batched call (masked and unmasked rows mixed)."""
    y = spec.model(x, mask=mask)
    assert y.shape == x.shape
    assert not y[mask].any(), "masked outputs must be raw 0"
    for i in range(x.shape[0]):
        keep = ~mask[i]
        if not keep.any():
            continue  # fully masked: all zeros, checked above
        want = spec.model(x[i][keep])
        assert np.array_equal(y[i][keep], want), (
            f"row {i}: x={x[i].tolist()} mask={mask[i].astype(int).tolist()} "
            f"got {y[i][keep].tolist()} want {want.tolist()}"
        )


@pytest.mark.parametrize(("method", "fmts"), CASES)
def test_masked_row_equals_row_without_masked_elements(method: str, fmts: str) -> None:
    spec = _spec(method, fmts)
    rng = np.random.default_rng([7, len(method), len(fmts)])
    for n in LENGTHS:
        r = 24 if n < 100 else 10
        x = _random_rows(spec, rng, n, r)
        mask = _random_masks(rng, n, r)
        ex, em = _edge_rows(spec, rng, n)
        _check_rows(spec, np.concatenate([x, ex]), np.concatenate([mask, em]))


@pytest.mark.parametrize(("method", "fmts"), CASES)
def test_no_mask_is_the_unmasked_model(method: str, fmts: str) -> None:
    """mask=None == all-False mask == the masked code path on rows without a masked element."""
    spec = _spec(method, fmts)
    rng = np.random.default_rng(3)
    for n in (1, 5, 64):
        x = _random_rows(spec, rng, n, 20)
        y = spec.model(x)
        assert np.array_equal(spec.model(x, mask=None), y)
        assert np.array_equal(spec.model(x, mask=np.zeros(x.shape, bool)), y)
        assert np.array_equal(spec.model(x, mask=np.bool_(False)), y)
        # one fully masked extra row forces the masked path for the whole batch
        xx = np.concatenate([x, x[:1]])
        mm = np.zeros(xx.shape, bool)
        mm[-1] = True
        yy = spec.model(xx, mask=mm)
        assert np.array_equal(yy[:-1], y)
        assert not yy[-1].any()


@pytest.mark.parametrize("method", sorted(METHODS[Operator.SOFTMAX]))
def test_fully_masked_rows_are_zero_without_warnings(method: str) -> None:
    spec = _spec(method, "default")
    x = np.array([[0, 5, -3], [spec.in_fmt.max_raw] * 3, [spec.in_fmt.min_raw] * 3])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        y = spec.model(x, mask=np.ones((1, 3), bool))
        assert np.array_equal(y, np.zeros_like(x))
        y1 = spec.model(x[:, :1], mask=np.ones((3, 1), bool))
        assert np.array_equal(y1, np.zeros((3, 1), np.int64))
        ref = spec.reference(spec.in_fmt.to_float(x), mask=np.ones(3, bool))
        assert np.array_equal(ref, np.zeros(x.shape))


@pytest.mark.parametrize("method", sorted(METHODS[Operator.SOFTMAX]))
def test_mask_broadcasts_like_attention(method: str) -> None:
    """A [B,1,1,S] padding mask and an [S,S] causal mask against [B,H,S,S], on axis -1
    and on a non-last axis."""
    spec = _spec(method, "default")
    rng = np.random.default_rng(11)
    b, h, s = 3, 2, 9
    x = _random_rows(spec, rng, s, b * h * s).reshape(b, h, s, s)
    valid = np.array([s, 5, 1])
    pad = (np.arange(s)[None, :] >= valid[:, None])[:, None, None, :]  # [B,1,1,S]
    causal = np.triu(np.ones((s, s), bool), 1)  # [S,S]
    for mask in (pad, causal, pad | causal):
        full = np.broadcast_to(mask, x.shape)
        y = spec.model(x, axis=-1, mask=mask)
        want = spec.model(x.reshape(-1, s), mask=full.reshape(-1, s)).reshape(x.shape)
        assert np.array_equal(y, want)
        assert not y[full].any()
        # the same rows along axis 2 (the rows' elements spaced by S)
        yt = spec.model(x.swapaxes(2, 3), axis=2, mask=np.swapaxes(mask, -1, -2))
        assert np.array_equal(yt.swapaxes(2, 3), y)
    # a [B,1,S,1] mask along axis 2 (masks query rows of each key column)
    qmask = (np.arange(s)[None, :] >= valid[:, None])[:, None, :, None]
    y2 = spec.model(x, axis=2, mask=qmask)
    want2 = spec.model(
        np.moveaxis(x, 2, -1), mask=np.broadcast_to(np.moveaxis(qmask, 2, -1), (b, h, s, s))
    )
    assert np.array_equal(y2, np.moveaxis(want2, -1, 2))


def test_bad_masks_are_spec_errors() -> None:
    spec = _spec("online", "default")
    x = np.zeros((2, 5), np.int64)
    with pytest.raises(SpecError, match=r"mask of shape \(3,\).*input shape \(2, 5\)"):
        spec.model(x, mask=np.zeros(3, bool))
    with pytest.raises(SpecError, match=r"mask of shape \(4, 5\).*input shape \(2, 5\)"):
        spec.model(x, mask=np.zeros((4, 5), bool))  # broadcasts with x, but not to x
    with pytest.raises(SpecError, match=r"\[B,1,1,S\] against \[B,H,S,S\]"):
        spec.model(np.zeros((2, 3, 4, 4), np.int64), mask=np.zeros((2, 1, 1, 3), bool))
    with pytest.raises(SpecError, match=r"bool array.*attention_mask == 0"):
        spec.model(x, mask=np.ones((2, 5), np.int64))
    with pytest.raises(SpecError, match="does not broadcast"):
        spec.reference(np.zeros((2, 5)), mask=np.zeros(3, bool))


@pytest.mark.parametrize("method", sorted(METHODS[Operator.LAYERNORM]))
def test_layernorm_rejects_a_mask(method: str) -> None:
    spec = make_spec("layernorm", method)
    assert isinstance(spec, RowwiseSpec)
    x = np.arange(-8, 8, dtype=np.int64).reshape(2, 8) << 6
    y = spec.model(x)  # unchanged path
    with pytest.raises((SpecError, TypeError), match="mask"):
        spec.model(x, mask=np.zeros(x.shape, bool))
    with pytest.raises(SpecError, match="does not take a mask"):
        RowwiseSpec.model(spec, x, mask=np.zeros(x.shape, bool))
    assert np.array_equal(RowwiseSpec.model(spec, x), y)


def test_row_limit_counts_every_element() -> None:
    spec = make_spec("softmax", "online", sum_fmt="ap_ufixed<24,3,AP_RND>")  # sum <= 7.99
    x = np.zeros((1, 8), np.int64)
    mask = np.ones((1, 8), bool)
    mask[0, 0] = False
    assert spec.model(x[:, :7]).shape == (1, 7)
    with pytest.raises(SpecError, match="rows of length 8"):
        spec.model(x, mask=mask)


@pytest.mark.parametrize("fmts", sorted(FORMATS["online"]))
@pytest.mark.parametrize("schedule", ["online", "two_pass"])
def test_online_row_state_skips_masked(fmts: str, schedule: str) -> None:
    spec = _spec("online", fmts)
    assert isinstance(spec, OnlineSoftmax)
    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 40):
        x = _random_rows(spec, rng, n, 12)
        mask = _random_masks(rng, n, 12)
        ex, em = _edge_rows(spec, rng, n)
        x, mask = np.concatenate([x, ex]), np.concatenate([mask, em])
        m, d = spec.row_state(x, schedule=schedule, mask=mask)
        for i in range(x.shape[0]):
            keep = ~mask[i]
            if keep.any():
                mi, di = spec.row_state(x[i : i + 1, keep], schedule=schedule)
                assert (m[i], d[i]) == (mi[0], di[0]), i
            else:
                assert (m[i], d[i]) == (spec.in_fmt.min_raw, 0)
    m0, d0 = spec.row_state(x, schedule=schedule)
    m1, d1 = spec.row_state(x, schedule=schedule, mask=np.zeros(x.shape, bool))
    assert np.array_equal(m0, m1)
    assert np.array_equal(d0, d1)


def test_reference_with_mask() -> None:
    spec = _spec("ibert", "default")
    rng = np.random.default_rng(9)
    x = rng.normal(0, 3, (50, 17))
    mask = _random_masks(rng, 17, 50)
    mask[0] = True
    mask[1, 3] = True
    x[1, 3] = 1e3  # a masked huge value changes nothing
    with np.errstate(all="raise"):
        ref = spec.reference(x, mask=mask)
    assert np.array_equal(spec.reference(x), stable_softmax(x))
    assert np.array_equal(spec.reference(x, mask=np.zeros(x.shape, bool)), stable_softmax(x))
    assert np.all(ref[mask] == 0.0)
    for i in range(50):
        keep = ~mask[i]
        if keep.any():
            np.testing.assert_allclose(ref[i][keep], stable_softmax(x[i][keep]), rtol=1e-13)
            assert abs(ref[i].sum() - 1.0) < 1e-12
        else:
            assert not ref[i].any()
    # broadcasting and a non-last axis
    x4 = rng.normal(0, 2, (2, 3, 5, 5))
    pad = np.zeros((2, 1, 1, 5), bool)
    pad[1, ..., 3:] = True
    r4 = spec.reference(x4, axis=-1, mask=pad)
    assert np.array_equal(
        spec.reference(x4.swapaxes(2, 3), axis=2, mask=pad.swapaxes(2, 3)).swapaxes(2, 3), r4
    )
    assert np.all(r4[1, ..., 3:] == 0.0)
    np.testing.assert_allclose(r4[1, ..., :3], stable_softmax(x4[1, ..., :3]), rtol=1e-13)


def test_evaluate_passes_the_mask() -> None:
    spec = _spec("softermax", "default")
    x = np.array([[0.5, 3.0, -1.0, 2.0]])
    mask = np.array([[False, True, False, False]])
    y = spec.evaluate(x, mask=mask)
    assert y[0, 1] == 0.0
    assert np.array_equal(y[:, ~mask[0]], spec.evaluate(x[:, ~mask[0]]))
