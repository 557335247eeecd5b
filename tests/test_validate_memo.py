"""The calibrated-spec memo of validate (``_calibrate_spec``) against computing each spec
afresh: the same specs for every site, width and range policy, and a new spec whenever
what the calibration reads changes (statistics, LayerNorm parameters, settings)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hwapprox.export import example
from hwapprox.export import validate as V
from hwapprox.export.stats import SiteStats


@pytest.fixture(scope="module")
def run() -> V.ValidationResult:
    return V.validate(example.model_path(), inputs=example.inputs_path())


def _both(spec, site, trace, **kw):  # type: ignore[no-untyped-def]
    return V._calibrate_spec(spec, site, trace, set(), **kw), V._calibrate_spec_now(
        spec, site, trace, set(), **kw
    )


@pytest.mark.parametrize("stat", ["max", "p99.9", 2.0])
@pytest.mark.parametrize(("width", "out_width"), [(16, None), (12, 10), (10, 16)])
def test_memoised_specs_equal_fresh_ones(run, stat, width, out_width) -> None:  # type: ignore[no-untyped-def]
    for s in run.selected:
        spec = run.specs[s.name]
        kw = {"width": width, "out_width": out_width, "headroom": 1, "stat": stat}
        first, fresh = _both(spec, s, run.trace, **kw)
        again = V._calibrate_spec(spec, s, run.trace, set(), **kw)  # (a memo hit)
        assert first == fresh
        assert again == fresh


def test_changed_statistics_give_a_new_spec(run) -> None:  # type: ignore[no-untyped-def]
    """Wider input and output ranges (other integer bits) are not served the memoised
    spec of the narrower ones."""
    s = next(s for s in run.selected if s.gamma is not None)
    spec = run.specs[s.name]
    kw = {"width": 16, "out_width": None, "headroom": 1, "stat": "max"}
    base, _ = _both(spec, s, run.trace, **kw)
    for attr in ("stats", "out_stats"):
        st = getattr(run.trace, attr)[s.name]
        wide = dataclasses.replace(st, min=8 * st.min - 1, max=8 * st.max + 1)
        trace = dataclasses.replace(run.trace, **{attr: {**getattr(run.trace, attr), s.name: wide}})
        got, fresh = _both(spec, s, trace, **kw)
        assert got == fresh != base


def test_layernorm_parameters_changed_in_place_give_a_new_spec(run) -> None:  # type: ignore[no-untyped-def]
    s = next(s for s in run.selected if s.gamma is not None)
    site = dataclasses.replace(s, gamma=np.array(s.gamma, dtype=np.float64, copy=True))
    spec = run.specs[s.name]
    kw = {"width": 16, "out_width": None, "headroom": 1, "stat": "max"}
    before, _ = _both(spec, site, run.trace, **kw)
    np.multiply(site.gamma, 300.0, out=site.gamma)  # in place: the same array object
    after, fresh = _both(spec, site, run.trace, **kw)
    assert after == fresh
    assert after.gamma_fmt != before.gamma_fmt


def test_nonfinite_statistics_are_not_memoised(run) -> None:  # type: ignore[no-untyped-def]
    s = run.selected[0]
    st: SiteStats = run.trace.stats[s.name]
    bad = dataclasses.replace(st, nonfinite=3)
    trace = dataclasses.replace(run.trace, stats={**run.trace.stats, s.name: bad})
    with pytest.raises(V.ExportError, match="non-finite"):
        V._calibrate_spec(
            run.specs[s.name], s, trace, set(), width=16, out_width=None, headroom=1, stat="max"
        )


def test_layernorm_reference_arguments_follow_gamma_changed_in_place(run) -> None:  # type: ignore[no-untyped-def]
    """The LayerNorm reports' memoised reference arguments (gamma, beta as float64 rows)
    follow a gamma changed in place: the figures equal those of a cleared memo (float32,
    as ONNX stores it: the float64 row is a copy)."""
    s = next(s for s in run.selected if s.gamma is not None)
    site = dataclasses.replace(s, gamma=np.array(s.gamma, dtype=np.float32, copy=True))
    spec = run.specs[s.name]
    x, y = run.trace.site_inputs[s.name], run.trace.site_outputs[s.name]
    before = V.site_metrics(site, spec, x, y)
    np.multiply(site.gamma, 1.5, out=site.gamma)
    after = V.site_metrics(site, spec, x, y)
    V._LN_REFS._d.clear()
    assert after == V.site_metrics(site, spec, x, y)
    assert after["quant_max_lsb"] != before["quant_max_lsb"]


def test_default_config_is_built_once_and_handed_out_as_copies() -> None:
    """``build_config(None)`` equals the defaults applied one by one, and a caller that
    changes the returned mappings does not change the next caller's."""
    from hwapprox.approx.config import load_config

    want = load_config(None)
    for op, method in V.DEFAULT_METHODS.items():
        want = want.with_default(op, {"method": method})
    got = V.build_config(None)
    assert got == want
    got.defaults.clear()
    got.sites["x"] = "float"
    assert V.build_config(None) == want


def test_graph_inputs_memo_follows_the_model() -> None:
    """The model's inputs are read once per model, and again when they change in place
    (a new dim: the feeds are checked against it)."""
    from hwapprox.export import calibrate as C
    from hwapprox.export.graph import load_model

    model = load_model(example.model_path())
    feeds = dict(np.load(example.inputs_path()))
    first = C.graph_inputs(model)
    assert C.graph_inputs(model) == first == C._graph_inputs(model)
    C.prepare_inputs(model, feeds)
    dim = model.graph.input[0].type.tensor_type.shape.dim[0]
    dim.dim_value += 1
    assert C.graph_inputs(model) == C._graph_inputs(model) != first
    with pytest.raises(C.ExportError, match="has shape"):
        C.prepare_inputs(model, feeds)


def test_output_kinds_memo_follows_the_outputs(run) -> None:  # type: ignore[no-untyped-def]
    from hwapprox.export import metrics as M

    g, sites = run.imported.sessions.index, run.imported.sites
    ref = run.trace.outputs
    for axis in (0, None):
        assert M.output_kinds(g, sites, ref, axis) == M._output_kinds(g, sites, ref, axis)
        assert M.output_kinds(g, sites, ref, axis) == M._output_kinds(g, sites, ref, axis)
    flat = {k: np.asarray(v).reshape(-1) for k, v in ref.items()}  # (other ranks)
    assert M.output_kinds(g, sites, flat, 0) == M._output_kinds(g, sites, flat, 0)
