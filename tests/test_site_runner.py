"""The emulator's bound site passes (``emulate.site_runner``: a site's compiled float32
pass with its arguments resolved once per spec and shape) against ``apply_spec``: the
same reals, bit for bit, for every method of every operator, on inputs that reach the
formats' ends; None where the pass gives up (NaN/inf) or does not apply; and an
emulator with them gives the outputs of one without, across spec changes."""

from __future__ import annotations

import dataclasses
from unittest.mock import patch

import numpy as np
import pytest

from hwapprox.approx.base import Operator
from hwapprox.approx.registry import list_methods, make_spec
from hwapprox.export import emulate, example
from hwapprox.export.builders import EncoderShape, bert_encoder, sample_inputs
from hwapprox.export.emulate import apply_spec, site_runner
from hwapprox.export.patterns import Site
from hwapprox.export.validate import import_model, validate
from hwapprox.fixed import Overflow, Rounding

_ROW_OPS = (Operator.SOFTMAX, Operator.LAYERNORM)


def _site(op: Operator, n: int = 64) -> Site:
    rng = np.random.default_rng(7)
    extra = {}
    if op is Operator.LAYERNORM:
        extra = {"gamma": rng.normal(size=n), "beta": rng.normal(size=n), "trailing": True}
    axis = -1 if op in _ROW_OPS else None
    return Site(name="s", operator=op, input="x", output="y", nodes=("n",), axis=axis, **extra)


def _inputs(spec, shape: tuple[int, ...], seed: int) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    """Random inputs over the input format's range and past its ends, plus edge values
    (zeros of both signs, subnormals, the format's extremes, equal rows)."""
    rng = np.random.default_rng(seed)
    lo, hi = float(spec.in_fmt.min), float(spec.in_fmt.max)
    wide = rng.uniform(2 * lo - 1, 2 * hi + 1, size=shape).astype(np.float32)
    inside = rng.uniform(lo, hi, size=shape).astype(np.float32)
    edge = rng.choice(
        np.array([0.0, -0.0, 1e-40, -1e-40, lo, hi, lo - 1, hi + 1, 0.5, -0.5], np.float32),
        size=shape,
    )
    edge[..., :1, :] = edge[..., 1:2, :] if edge.ndim >= 3 else edge[..., :1, :]
    return [wide, inside, edge]


def _saturating(spec):  # type: ignore[no-untyped-def]
    """``spec`` with its default input format rounding and saturating (as calibrated)."""
    f = spec.in_fmt
    return spec.replace(in_fmt=dataclasses.replace(f, rounding=Rounding.RND, overflow=Overflow.SAT))


_CASES = [(op, m) for op, ms in list_methods().items() for m in ms]


def _own_pass_applies(site: Site, spec, x: np.ndarray, dtype: type) -> bool:  # type: ignore[no-untyped-def]
    """Whether the spec's own compiled float32 pass takes ``x`` (apply_spec's route)."""
    if site.operator in _ROW_OPS:
        if getattr(spec, "rows_f32", None) is None:
            return False
        rows = emulate.rows_view(site, x)[0].reshape(-1, x.shape[-1])
        if site.operator is Operator.SOFTMAX:
            return spec.rows_f32(rows, None, dtype) is not None
        return spec.rows_f32(rows, *emulate.site_row_params(site, spec, 64), dtype) is not None
    return spec.f32_runner(x, dtype) is not None


@pytest.mark.parametrize(("op", "method"), _CASES, ids=[f"{o}-{m}" for o, m in _CASES])
@pytest.mark.parametrize("saturating", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bound_pass_equals_apply_spec(
    op: Operator, method: str, saturating: bool, dtype: type
) -> None:
    """Bound once, run on three inputs of the shape: each equals apply_spec's reals
    (and dtype) exactly. Bound exactly where the spec's own compiled pass applies
    (calibrated, saturating input formats; not the wrapping defaults)."""
    spec = make_spec(op, method)
    if saturating:
        spec = _saturating(spec)
    site = _site(op)
    xs = _inputs(spec, (3, 5, 64), seed=len(method))
    run = site_runner(site, spec, xs[0], dtype)
    assert (run is not None) == _own_pass_applies(site, spec, xs[0], dtype)
    if run is None:
        return
    for x in xs:
        got = run(x)
        want = apply_spec(site, spec, x, None, None, dtype)
        assert got is not None
        assert got.dtype == want.dtype == np.dtype(dtype)
        assert got.shape == x.shape
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (op, method)


def test_bound_where_expected() -> None:
    """The compiled passes exist for the methods validate picks by default (so the
    comparison above is not vacuous)."""
    x = np.zeros((2, 3, 64), np.float32)
    for op, method in [
        (Operator.SOFTMAX, "online"),
        (Operator.LAYERNORM, "rsqrt_lut"),
        (Operator.GELU, "edgemoe"),
        (Operator.GELU, "pwl"),
        (Operator.SIGMOID_ATTENTION, "lut"),
        (Operator.RELU_ATTENTION, "wortsman"),
    ]:
        spec = _saturating(make_spec(op, method))
        assert site_runner(_site(op), spec, x, np.float32) is not None, (op, method)


@pytest.mark.parametrize("op", [Operator.SOFTMAX, Operator.LAYERNORM, Operator.GELU])
def test_bound_pass_gives_up_on_nan_and_inf(op: Operator) -> None:
    """A NaN/inf input: the bound pass returns None (apply_spec's codes path decides)."""
    method = {"softmax": "online", "layernorm": "rsqrt_lut", "gelu": "edgemoe"}[op]
    spec = _saturating(make_spec(op, method))
    site = _site(op)
    x = np.random.default_rng(3).normal(size=(2, 4, 64)).astype(np.float32)
    run = site_runner(site, spec, x, np.float32)
    assert run is not None
    assert run(x) is not None
    for bad in (np.nan, np.inf):
        y = x.copy()
        y[1, 2, 3] = bad
        assert run(y) is None


def test_not_bound_where_apply_spec_takes_another_route() -> None:
    """float64 or non-contiguous inputs, a spec of another operator, softmax rows not
    along the last axis: no bound pass."""
    x = np.random.default_rng(4).normal(size=(2, 8, 64)).astype(np.float32)
    sm = _saturating(make_spec("softmax", "online"))
    ln = _saturating(make_spec("layernorm", "rsqrt_lut"))
    assert site_runner(_site(Operator.SOFTMAX), sm, x.astype(np.float64), np.float32) is None
    assert site_runner(_site(Operator.SOFTMAX), sm, x[:, ::2], np.float32) is None
    assert site_runner(_site(Operator.SOFTMAX), ln, x, np.float32) is None
    across = Site(name="s", operator=Operator.SOFTMAX, input="x", output="y", nodes=("n",), axis=1)
    assert site_runner(across, sm, x, np.float32) is None
    assert site_runner(_site(Operator.SOFTMAX), sm, x, np.float32) is not None


def _emulations(imp, feeds, spec_sets):  # type: ignore[no-untyped-def]
    """Each spec set's emulated outputs, bound passes on and off, on one emulator each
    (the bound one run through every set in turn: its passes are re-bound on change)."""
    sites = list(spec_sets[0])
    chosen = [s for s in imp.sites if s.name in sites]
    on = emulate.Emulator(imp.model, chosen, threads=1, index=imp.sessions.index)
    out_on, out_off, bound = [], [], []
    real = emulate.site_runner

    def counting(*a):  # type: ignore[no-untyped-def]
        r = real(*a)
        bound.append(r is not None)
        return r

    with patch.object(emulate, "site_runner", counting):
        for specs in spec_sets:
            out_on.append(on.run(feeds, specs))
            out_on.append(on.run(feeds, specs))  # (bound already)
    with patch.object(emulate, "_BOUND", False):
        for specs in spec_sets:
            off = emulate.Emulator(imp.model, on.sites, threads=1, index=imp.sessions.index)
            out_off.append(off.run(feeds, specs))
    return out_on, out_off, bound


def test_emulator_with_bound_passes_equals_without() -> None:
    """The embedded example with validate's specs, then with one LayerNorm, one softmax
    and one GELU site at other input formats: the same outputs as emulators without
    bound passes (and the passes were bound, then re-bound for the changed specs)."""
    imp = import_model(example.model_path())
    feeds = dict(np.load(example.inputs_path()))
    res = validate(imp, inputs=feeds)
    specs = dict(res.specs)
    changed = dict(specs)
    for op in (Operator.LAYERNORM, Operator.SOFTMAX, Operator.GELU):
        s = next(s for s in res.selected if s.operator is op)
        changed[s.name] = specs[s.name].replace(in_fmt="ap_fixed<12,5,AP_RND,AP_SAT>")
    out_on, out_off, bound = _emulations(imp, feeds, [specs, changed])
    assert sum(bound) == len(specs) + 3, bound  # each site once, then the 3 changed ones
    want = [out_off[0], out_off[0], out_off[1], out_off[1]]
    for got, ref in zip(out_on, want, strict=True):
        for k in ref:
            assert np.array_equal(got[k], ref[k])
    assert not np.array_equal(out_off[0]["logits"], out_off[1]["logits"])


def test_masked_softmax_sites_keep_apply_spec() -> None:
    """A padded batch: its softmax sites have masks and are not bound (the LayerNorm
    and GELU sites are); the outputs equal an emulator's without bound passes."""
    shape = EncoderShape(layers=1, width=32, heads=2, ffn=64, seq=8, batch=None, vocab=50)
    model = bert_encoder(shape, mask="additive")
    feeds = sample_inputs(shape, batch=4, mask=True)
    imp = import_model(model)
    res = validate(imp, inputs=feeds)
    specs = dict(res.specs)
    out_on, out_off, bound = _emulations(imp, feeds, [specs])
    n_softmax = sum(s.operator is Operator.SOFTMAX for s in res.selected)
    assert n_softmax
    assert sum(bound) == len(specs) - n_softmax
    for k in out_off[0]:
        assert np.array_equal(out_on[0][k], out_off[0][k])


def test_layernorm_parameters_changed_in_place_are_seen() -> None:
    """A LayerNorm site's gamma changed in place between two runs: the bound emulator
    re-binds and gives what an emulator without bound passes gives (the codes path
    reads gamma's values on every call)."""
    imp = import_model(example.model_path())
    feeds = dict(np.load(example.inputs_path()))
    res = validate(imp, inputs=feeds)
    specs = dict(res.specs)
    s = next(s for s in res.selected if s.gamma is not None)
    site = dataclasses.replace(s, gamma=np.array(s.gamma, dtype=np.float64, copy=True))
    sites = [site if t.name == s.name else t for t in res.selected]
    on = emulate.Emulator(imp.model, sites, threads=1, index=imp.sessions.index)
    before = on.run(feeds, specs)["logits"]
    site.gamma[:] *= 1.5  # (in place)
    after = on.run(feeds, specs)["logits"]
    with patch.object(emulate, "_BOUND", False):
        off = emulate.Emulator(imp.model, sites, threads=1, index=imp.sessions.index)
        want = off.run(feeds, specs)["logits"]
    assert not np.array_equal(before, after)
    assert np.array_equal(after, want)
