"""Emulation: float-reference specs reproduce onnxruntime; real specs are bit-exact at a site."""

from __future__ import annotations

import contextlib
import copy
import importlib
from collections.abc import Iterator

import numpy as np
import onnx
import pytest
from onnx_models import float_ref_spec, single_node

from hwapprox.approx.base import Operator
from hwapprox.approx.registry import make_spec
from hwapprox.export.builders import GELU_STYLES, EncoderShape, bert_encoder, sample_inputs
from hwapprox.export.emulate import Emulator, apply_spec, make_session
from hwapprox.export.refspec import FloatRefSoftmax
from hwapprox.export.validate import import_model, site_metrics

SHAPE = EncoderShape(layers=2, width=32, heads=4, ffn=64, seq=8, batch=None, vocab=50)
EPS32 = float(np.finfo(np.float32).eps)


def _ref_specs(sites, in_fmt=None):
    return {s.name: float_ref_spec(s, in_fmt) for s in sites}


# Tolerance for "reproduces onnxruntime to float rounding": the emulation runs
# the same float32 kernels but in separate sessions, so onnxruntime's fusions
# (and their summation orders) differ, and the sites run in float64. Measured
# once over all styles: max |diff| = 5.4e-7 on logits of |max| ~1.1 (~4.5
# float32 ulps at 1.0). We allow 32 ulps of the output scale: 7x margin, and
# far below what one quantisation step of a 24-bit site input does (checked
# below: the same comparison fails for in_fmt ap_fixed<24,8>).
def _tol(ref: np.ndarray) -> float:
    return 32 * EPS32 * max(1.0, float(np.abs(ref).max()))


@pytest.mark.parametrize(
    ("gelu", "layernorm"),
    [(g, "op") for g in GELU_STYLES] + [("erf", "decomposed"), ("op", "decomposed")],
)
def test_float_reference_reproduces_onnxruntime(gelu: str, layernorm: str) -> None:
    imp = import_model(bert_encoder(SHAPE, gelu=gelu, layernorm=layernorm, seed=11))
    feeds = sample_inputs(SHAPE, batch=3, seed=2)
    ref = make_session(imp.model, 1).run(None, feeds)[0]
    emu = Emulator(imp.model, imp.sites, threads=1)
    assert emu.n_sessions == 1 + len(imp.sites)  # the sites form one chain
    got = emu.run(feeds, _ref_specs(imp.sites))["logits"]
    assert np.abs(got - ref).max() <= _tol(ref)
    # All sites float (their own nodes in small sessions): same bound.
    assert np.abs(emu.run(feeds, {})["logits"] - ref).max() <= _tol(ref)


def test_comparison_can_fail() -> None:
    """The tolerance above detects a 16-fraction-bit site input quantisation."""
    imp = import_model(bert_encoder(SHAPE, gelu="erf", layernorm="op", seed=11))
    feeds = sample_inputs(SHAPE, batch=3, seed=2)
    ref = make_session(imp.model, 1).run(None, feeds)[0]
    got = Emulator(imp.model, imp.sites, threads=1).run(
        feeds, _ref_specs(imp.sites, "ap_fixed<24,8,AP_RND,AP_SAT>")
    )["logits"]
    assert np.abs(got - ref).max() > _tol(ref)


def test_subset_of_sites_and_levels() -> None:
    imp = import_model(bert_encoder(SHAPE, gelu="erf", layernorm="op", seed=11))
    soft = [s for s in imp.sites if s.operator is Operator.SOFTMAX]
    emu = Emulator(imp.model, soft, threads=1)
    assert emu.n_sessions == len(soft) + 1
    assert [emu.site_level[s.name] for s in soft] == [0, 1]
    feeds = sample_inputs(SHAPE, batch=2, seed=4)
    ref = make_session(imp.model, 1).run(None, feeds)[0]
    got = emu.run(feeds, _ref_specs(soft))["logits"]
    assert np.abs(got - ref).max() <= _tol(ref)


def _method(op: str, method: str):
    try:
        return make_spec(op, method)
    except ModuleNotFoundError:  # another engineer's module not landed yet
        pytest.skip(f"{op}/{method} is not available")


@pytest.mark.parametrize(
    ("op", "shape", "opset", "attrs", "method"),
    [
        ("Softmax", [3, 5, 7], 13, {"axis": 1}, "ibert"),
        ("Softmax", [3, 5, 7], 11, {"axis": 1}, "hls4ml_stable"),
        ("Gelu", [4, 9], 20, {}, "ibert"),
        ("LayerNormalization", [3, 4, 8], 17, {"axis": -1, "epsilon": 1e-3}, "ibert"),
        ("LayerNormalization", [3, 4, 8], 17, {"axis": 1}, "rsqrt_lut"),
    ],
)
def test_site_output_is_the_integer_model(op, shape, opset, attrs, method) -> None:
    """One-node model: the emulated output is exactly out_fmt.to_float(model(quantize(x)))
    computed here by hand (row layout, gamma/beta quantisation), cast to float32."""
    spec = _method(op.lower().replace("layernormalization", "layernorm"), method)
    imp = import_model(single_node(op, shape, opset, **attrs))
    (site,) = imp.sites
    if site.operator is Operator.LAYERNORM:
        spec = spec.replace(eps=site.epsilon)
    x = np.random.default_rng(3).normal(0, 2, shape).astype(np.float32)
    got = Emulator(imp.model, imp.sites, threads=1).run({"x": x}, {site.name: spec})["y"]
    ax = attrs.get("axis", 1 if opset < 13 else -1)
    ax = ax % len(shape)
    if site.operator is Operator.SOFTMAX and opset >= 13:
        raw = spec.model(spec.in_fmt.quantize(x.astype(np.float64)), axis=ax)
    elif site.operator is Operator.GELU:
        raw = spec.model(spec.in_fmt.quantize(x.astype(np.float64)))
    else:  # rows = flattened trailing dims
        rows = x.astype(np.float64).reshape(int(np.prod(shape[:ax])), -1)
        kw = {}
        if site.operator is Operator.LAYERNORM:
            kw = {
                "gamma": spec.gamma_fmt.quantize(site.gamma.ravel()),
                "beta": spec.beta_fmt.quantize(site.beta.ravel()),
            }
        raw = spec.model(spec.in_fmt.quantize(rows), axis=-1, **kw).reshape(shape)
    want = spec.out_fmt.to_float(raw).astype(np.float32)
    assert np.array_equal(got, want)
    assert np.array_equal(apply_spec(site, spec, x).astype(np.float32), want)


# -- the ONNX operator test cases shipped with the onnx package --------------
def _onnx_cases():
    from onnx.backend.test.case import node as node_cases

    for mod in ("softmax", "gelu", "layernormalization"):
        importlib.import_module(f"onnx.backend.test.case.node.{mod}")
    return [
        c
        for c in node_cases._NodeTestCases
        if c.name.startswith(("test_softmax", "test_gelu", "test_layer_normalization"))
    ]


_CASES = _onnx_cases()


def test_onnx_cases_collected() -> None:
    names = {c.name for c in _CASES}
    assert {"test_softmax_axis_0", "test_gelu_tanh_1", "test_layer_normalization_4d_axis1"} <= names
    assert len(_CASES) >= 60


def _y_only(model, inputs):
    """The same LayerNormalization model with the Mean/InvStdDev outputs removed
    and the Scale/B graph inputs turned into initializers holding the case's data."""
    m = copy.deepcopy(model)
    node = m.graph.node[0]
    del node.output[1:]
    del m.graph.output[1:]
    for vi, v in zip(list(m.graph.input[1:]), inputs[1:], strict=True):
        m.graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(v), vi.name))
    del m.graph.input[1:]
    return m, inputs[:1]


@pytest.mark.parametrize("case", _CASES, ids=lambda c: c.name)
def test_onnx_operator_cases(case) -> None:
    """Importer + emulation with float-reference specs agree with the expected
    outputs (onnx's own tolerances rtol=1e-3, atol=1e-7). A non-expanded case
    yields exactly one site; LayerNormalization cases that also output
    Mean/InvStdDev are skipped with a reason, and checked again with only Y.
    (The ``_expanded`` function bodies are not exporter patterns: no sites,
    float path only.)"""
    model = case.model
    imp = import_model(model)
    (inputs, outputs) = case.data_sets[0]
    expanded = "expanded" in case.name
    if not expanded and len(model.graph.output) > 1:
        assert list(imp.skipped.values()) == [
            "LayerNormalization outputs ['Mean', 'InvStdDev'] (Mean/InvStdDev) used"
        ]
        assert not imp.sites
        y_model, inputs = _y_only(model, inputs)
        imp = import_model(y_model)
        outputs = outputs[:1]
    if not expanded:
        assert len(imp.sites) == 1
    else:
        assert not imp.sites
    feeds = {vi.name: np.asarray(v) for vi, v in zip(imp.model.graph.input, inputs, strict=False)}
    got = Emulator(imp.model, imp.sites, threads=1).run(feeds, _ref_specs(imp.sites))
    for vi, want in zip(imp.model.graph.output, outputs, strict=True):
        np.testing.assert_allclose(got[vi.name], want, rtol=case.rtol, atol=case.atol)


def test_resume_from_prefix_is_the_full_run() -> None:
    """run(resume=prefix(level)) gives exactly the outputs of a full run (the
    budget tuner relies on it), for every level; a prefix computed with other
    specs for the earlier sites gives different outputs (the check can fail)."""
    imp = import_model(bert_encoder(SHAPE, gelu="erf", layernorm="op", seed=11))
    feeds = sample_inputs(SHAPE, batch=2, seed=4)
    emu = Emulator(imp.model, imp.sites, threads=1)
    specs = _ref_specs(imp.sites, "ap_fixed<20,6,AP_RND,AP_SAT>")
    full = emu.run(feeds, specs)["logits"]
    for level in sorted(set(emu.site_level.values())):
        state = emu.prefix(feeds, specs, level)
        assert np.array_equal(emu.run(feeds, specs, resume=state)["logits"], full)
    stale = emu.prefix(feeds, {}, 3)  # sites of levels 0..2 in float
    assert not np.array_equal(emu.run(feeds, specs, resume=stale)["logits"], full)


def test_runs_drop_the_tensors_nothing_later_reads() -> None:
    """A run keeps only the live tensors: a prefix state at a level holds exactly the
    tensors some segment or site at that level or later reads, and the graph's outputs
    (not every tensor the run made before it); the outputs are bit for bit those of an
    emulator that keeps everything, from the start and resumed from the states."""
    imp = import_model(bert_encoder(SHAPE, gelu="erf", layernorm="op", seed=11))
    feeds = sample_inputs(SHAPE, batch=2, seed=4)
    emu = Emulator(imp.model, imp.sites, threads=1)
    keep_all = Emulator(imp.model, imp.sites, threads=1)
    keep_all._last_use = {}
    specs = _ref_specs(imp.sites, "ap_fixed<12,4,AP_RND,AP_SAT>")
    full = emu.run(feeds, specs)
    assert full.keys() == keep_all.run(feeds, specs).keys()
    assert all(np.array_equal(full[k], keep_all.run(feeds, specs)[k]) for k in full)
    last_read = {n: lv for lv, names in emu._last_use.items() for n in names}
    outputs = {o.name for o in imp.model.graph.output}
    levels = sorted(set(emu.site_level.values()))
    for level in levels:
        state = emu.prefix(feeds, specs, level)[1]
        every = keep_all.prefix(feeds, specs, level)[1]
        live = {k for k in every if k in outputs or last_read.get(k, level) >= level}
        assert state.keys() == live
        assert all(np.array_equal(state[k], every[k]) for k in live)
        resumed = emu.run(feeds, specs, resume=(level, state))
        assert np.array_equal(resumed["logits"], full["logits"])
    deep = emu.prefix(feeds, specs, levels[-1])[1]
    assert len(deep) < len(keep_all.prefix(feeds, specs, levels[-1])[1])
    advanced = emu.advance(emu.prefix(feeds, specs, levels[0]), specs, levels[-1])[1]
    assert advanced.keys() == deep.keys()


def test_prefix_chain_continues_a_prefix_exactly() -> None:
    """PrefixChain (the budget search's prefixes, each continued from the last) gives
    the values of a prefix computed from the inputs, level after level, as sites get
    their specs one by one; when a spec below the last state changes it starts over
    (a chain that wrongly continued would keep the old site's values: caught)."""
    from hwapprox.export.emulate import PrefixChain

    imp = import_model(bert_encoder(SHAPE, gelu="erf", layernorm="op", seed=11))
    feeds = sample_inputs(SHAPE, batch=2, seed=4)
    emu = Emulator(imp.model, imp.sites, threads=1)
    real = _ref_specs(imp.sites, "ap_fixed<10,4,AP_RND,AP_SAT>")  # coarse: values move
    chain = PrefixChain(emu, feeds)
    done: dict = {}
    for s in sorted(imp.sites, key=lambda s: emu.site_level[s.name]):
        level = emu.site_level[s.name]
        got = chain.get(done, level)
        want = emu.prefix(feeds, done, level)
        assert got[0] == want[0]
        assert got[1].keys() == want[1].keys()
        for k in want[1]:
            assert np.array_equal(got[1][k], want[1][k]), k
        done = {**done, s.name: real[s.name]}
    first = min(imp.sites, key=lambda s: emu.site_level[s.name])
    last = max(emu.site_level.values())
    changed = {**done, first.name: None}  # the first site back in float
    got = chain.get(changed, last)[1]
    want = emu.prefix(feeds, changed, last)[1]
    stale = emu.advance(emu.prefix(feeds, done, last), changed, last)[1]
    out = [k for k in want if k not in feeds]
    assert all(np.array_equal(got[k], want[k]) for k in out)
    assert not all(np.array_equal(stale[k], want[k]) for k in out)


def test_softmax_row_sum_metric() -> None:
    """Uniform rows of 3: floor to 8 fraction bits gives 85/256 per element, so
    each row loses exactly 1/256 of its mass (worked by hand)."""
    imp = import_model(single_node("Softmax", [4, 3], 13))
    (site,) = imp.sites
    x = np.zeros((4, 3), np.float32)
    y = make_session(imp.model, 1).run(None, {"x": x})[0]
    m = site_metrics(site, FloatRefSoftmax(out_fmt="ap_ufixed<8,0>"), x, y)
    assert m["row_sum_err"] == pytest.approx(1 / 256, abs=1e-6)
    assert m["max_abs"] == pytest.approx(1 / 3 - 85 / 256, abs=1e-6)
    assert site_metrics(site, FloatRefSoftmax(), x, y)["row_sum_err"] < 1e-6


def test_small_model_emulates_on_one_thread_with_the_same_outputs() -> None:
    """A model whose site tensors are all below the split size gets one-thread emulator
    sessions (``emulation_threads``); its outputs equal a two-thread emulator's."""
    from hwapprox.export import example
    from hwapprox.export.emulate import MIN_SPLIT_ELEMENTS, emulation_threads
    from hwapprox.export.validate import validate

    assert emulation_threads(0, [MIN_SPLIT_ELEMENTS - 1, 10]) == 1
    assert emulation_threads(0, [MIN_SPLIT_ELEMENTS]) == 0
    assert emulation_threads(3, [10]) == 3
    feeds = dict(np.load(example.inputs_path()))
    imp = import_model(example.model_path())
    auto = validate(imp, inputs=feeds)
    assert [k[1] for k in imp.sessions._emulators] == [1]
    two = validate(imp, inputs=feeds, threads=2)
    assert sorted(k[1] for k in imp.sessions._emulators) == [1, 2]
    assert auto.emulated.keys() == two.emulated.keys()
    for k, v in auto.emulated.items():
        assert np.array_equal(v, two.emulated[k])
    assert auto.site_errors == two.site_errors


def test_sessions_read_the_weights_from_memory_with_the_same_outputs() -> None:
    """The emulator's segment sessions and the calibration trace get their large
    weights from memory (external-data stubs in their protos, the model's arrays given
    to onnxruntime): the emulated outputs and the trace's site tensors equal those of
    sessions built with the weights in the proto; a perturbed shared weight changes
    them (the comparison can fail)."""
    from unittest.mock import patch

    from hwapprox.export import emulate
    from hwapprox.export.calibrate import calibrate

    shape = EncoderShape(layers=2, width=64, heads=4, ffn=128, seq=12, batch=3)
    model = bert_encoder(shape, layernorm="decomposed")
    feeds = sample_inputs(shape, batch=3)
    mem = import_model(model)
    with patch.object(emulate, "SHARED_MIN_BYTES", 1 << 60):
        proto = import_model(model)
        plain = proto.sessions.emulator(proto.sites)
        t_plain = calibrate(proto.model, proto.sites, feeds, sessions=proto.sessions)
    shared = mem.sessions.emulator(mem.sites)
    segs = [s for s in shared.segments if s.session is not None]
    sub, weights = shared._submodel(segs[1], set())
    assert weights  # the segment's weights are shared ...
    assert all(not t.raw_data for t in sub.graph.initializer if t.name in weights)  # ... not copied
    specs = {s.name: None for s in mem.sites}
    out_p, out_m = plain.run(feeds, specs), shared.run(feeds, specs)
    assert out_p.keys() == out_m.keys()
    for k, v in out_p.items():
        assert np.array_equal(v, out_m[k])
    t_mem = calibrate(mem.model, mem.sites, feeds, sessions=mem.sessions)
    for k, v in t_plain.site_inputs.items():
        assert np.array_equal(v, t_mem.site_inputs[k])
    real = emulate.shared_weights

    def perturbed(inits, index):  # one shared weight off by 0.5
        out, w = real(inits, index)
        if name in w:
            w = {**w, name: w[name] + np.float32(0.5)}
        return out, w

    name = next(iter(weights))
    with patch.object(emulate, "shared_weights", perturbed):
        worse = emulate.Emulator(mem.model, mem.sites, index=mem.sessions.index)
    out_w = worse.run(feeds, specs)
    assert any(not np.array_equal(v, out_w[k]) for k, v in out_p.items())


@contextlib.contextmanager
def _counting(obj: object, name: str) -> Iterator[list[int]]:
    """``obj.name`` patched to count its calls (the list it yields grows by one each)."""
    from unittest.mock import patch

    calls: list[int] = []
    real = getattr(obj, name)

    def counted(*a: object) -> object:
        calls.append(1)
        return real(*a)

    with patch.object(obj, name, counted):
        yield calls


@pytest.mark.parametrize(("masked", "opset"), [(False, 13), (True, 13), (False, 11)])
def test_fused_softmax_metrics_equal_the_array_path(masked: bool, opset: int) -> None:
    """The compiled softmax site metrics (``_softmax_sums``: the float64 softmax of the
    quantised rows from an exp table, on the fly) give the array path's count, maximum
    and sums of |y - y_float| exactly and its error-split maxima and row-sum error up
    to float64 rounding, for every softmax method, masked rows (one fully masked)
    included, and for opset 11's rows over the trailing axes; Softmax_1 and the clipped
    reference keep the array path. A table whose entries past the row maximum are one
    part in 10^6 off is caught."""
    from unittest.mock import patch

    from hwapprox.approx import _kernels
    from hwapprox.export import validate as V

    if not _kernels.available():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(4)
    attrs = {"axis": 1} if opset < 13 else {}  # opset 11: rows of 4 x 37 trailing elements
    imp = import_model(single_node("Softmax", [3, 4, 37], opset, **attrs))
    (site,) = imp.sites
    x = (rng.normal(0, 3, (3, 4, 37)) * rng.uniform(0.2, 2, (3, 4, 1))).astype(np.float32)
    mask = None
    if masked:
        mask = rng.random((3, 1, 37)) < 0.3
        mask[1] = True  # every row of batch 1 fully masked
    xs = np.where(mask, -1e9, x) if mask is not None else x
    y = make_session(imp.model, 1).run(None, {"x": xs.astype(np.float32)})[0]
    specs = [
        make_spec("softmax", m, in_fmt="ap_fixed<16,6>")
        for m in ("ibert", "online", "softermax", "shiftmax", "hls4ml_stable")
    ] + [make_spec("softmax", "online", off_by_one=True), make_spec("softmax", "online",
         clip_gamma=-0.01, clip_zeta=1.01)]  # fmt: skip
    exact = ("max_abs", "mean_abs", "rms", "rel_rms", "max_lsb", "out_lsb")
    for spec in specs:
        with _counting(_kernels, "softmax_err_stats") as calls:
            got = site_metrics(site, spec, x, y, mask)
        with patch.object(V, "_softmax_sums", lambda *a: None):
            want = site_metrics(site, spec, x, y, mask)
        assert len(calls) == int(spec.reference_is_standard()), spec.describe()
        assert got.keys() == want.keys()
        for k in exact:
            assert got[k] == want[k], (spec.describe(), k)
        lsb = got["out_lsb"]
        for k in ("quant_max_lsb", "approx_max_lsb"):
            assert abs(got[k] - want[k]) * lsb <= 1e-15, (spec.describe(), k)
        assert abs(got["row_sum_err"] - want["row_sum_err"]) <= 1e-14
    plain = specs[1]
    off = np.array(V._exp_table(16, 10))
    off[1:] *= 1 + 1e-6
    with patch.object(V, "_exp_table", lambda w, f: off):
        bad = site_metrics(site, plain, x, y, mask)
    good = site_metrics(site, plain, x, y, mask)
    assert abs(bad["quant_max_lsb"] - good["quant_max_lsb"]) * good["out_lsb"] > 1e-9


def test_fused_softmax_metrics_of_wide_inputs_read_a_cut_exp_table() -> None:
    """Scores wider than 20 bits (a real ViT's attention logits need 17-21): the exp
    table stops at its first entry past the float64 underflow (0, as every later one),
    and the fused metrics, clamping the index there, equal the array path; a table
    cut where exp is not yet 0 is caught."""
    from unittest.mock import patch

    from hwapprox.approx import _kernels
    from hwapprox.export import validate as V

    if not _kernels.available():
        pytest.skip("numba is not installed")
    table = V._exp_table(22, 10)
    assert table is not None
    assert table.size < 1 << 22
    assert table[-1] == 0.0  # past the underflow
    assert table[745 * 2**10] > 0.0  # exp(-745) is still a subnormal
    rng = np.random.default_rng(6)
    imp = import_model(single_node("Softmax", [2, 3, 41], 13))
    (site,) = imp.sites
    x = (rng.normal(0, 400, (2, 3, 41))).astype(np.float32)  # differences past 746
    y = make_session(imp.model, 1).run(None, {"x": x})[0]
    spec = make_spec("softmax", "online", in_fmt="ap_fixed<22,12,AP_RND,AP_SAT>")
    with patch.object(V, "_softmax_sums", lambda *a: None):
        want = site_metrics(site, spec, x, y)
    # the codes' comparison kernel, and the one from the float32 rows (the same table)
    for name, f32_off in (("softmax_err_stats", True), ("online_report_f32", False)):
        with contextlib.ExitStack() as stack:
            if f32_off:
                stack.enter_context(patch.object(V, "_softmax_sums_f32", lambda *a: None))
            calls = stack.enter_context(_counting(_kernels, name))
            got = site_metrics(site, spec, x, y)
            assert calls == [1], name
            for k in ("max_abs", "mean_abs", "rms", "rel_rms", "max_lsb"):
                assert got[k] == want[k], (name, k)
            for k in ("quant_max_lsb", "approx_max_lsb"):
                assert abs(got[k] - want[k]) * got["out_lsb"] <= 1e-15, (name, k)
            with patch.object(V, "_exp_table", lambda w, f: table[:2000]):  # exp(-1.95): not 0
                bad = site_metrics(site, spec, x, y)
            assert abs(bad["quant_max_lsb"] - want["quant_max_lsb"]) * got["out_lsb"] > 1e-6


@pytest.mark.parametrize("axis", [-1, 1])
def test_fused_layernorm_metrics_equal_the_array_path(axis: int) -> None:
    """The compiled LayerNorm site metrics (``_layernorm_sums``: the float64 reference
    of the quantised rows on the fly, float gamma and beta) give the array path's
    count, maximum and sums of |y - y_float| exactly and its error-split maxima up to
    float64 rounding, for every LayerNorm method, RMSNorm and pRMSNorm (k of n
    elements) included, over one axis and over trailing axes; a reference with eps
    off by 10^-3 is caught."""
    from unittest.mock import patch

    from hwapprox.approx import _kernels
    from hwapprox.export import validate as V

    if not _kernels.available():
        pytest.skip("numba is not installed")
    imp = import_model(single_node("LayerNormalization", [3, 4, 40], 17, axis=axis))
    (site,) = imp.sites
    rng = np.random.default_rng(8)
    x = (rng.normal(0.3, 2, (3, 4, 40)) * rng.uniform(0.3, 3, (3, 4, 1))).astype(np.float32)
    y = make_session(imp.model, 1).run(None, {"x": x})[0]
    specs = [
        make_spec("layernorm", m, eps=site.epsilon, in_fmt="ap_fixed<16,6>")
        for m in ("rsqrt_lut", "ibert", "ivit", "hls4ml_lut")
    ] + [
        make_spec("layernorm", "rmsnorm", eps=site.epsilon),
        make_spec("layernorm", "rmsnorm", eps=site.epsilon, partial_k=24),
    ]
    exact = ("max_abs", "mean_abs", "rms", "rel_rms", "max_lsb", "out_lsb")
    for spec in specs:
        with _counting(_kernels, "layernorm_err_stats") as calls:
            got = site_metrics(site, spec, x, y)
        with patch.object(V, "_layernorm_sums", lambda *a: None):
            want = site_metrics(site, spec, x, y)
        assert calls == [1], spec.describe()
        assert got.keys() == want.keys()
        for k in exact:
            assert got[k] == want[k], (spec.describe(), k)
        lsb = got["out_lsb"]
        for k in ("quant_max_lsb", "approx_max_lsb"):
            assert abs(got[k] - want[k]) * lsb <= 1e-14, (spec.describe(), k)
    real = _kernels.layernorm_err_stats

    def eps_off(raw, lsb, center, k, eps, *rest):
        return real(raw, lsb, center, k, eps + 1e-3, *rest)

    with patch.object(_kernels, "layernorm_err_stats", eps_off):
        bad = site_metrics(site, specs[0], x, y)
    good = site_metrics(site, specs[0], x, y)
    assert abs(bad["quant_max_lsb"] - good["quant_max_lsb"]) * good["out_lsb"] > 1e-6


@pytest.mark.parametrize("axis", [-1, 1])
def test_layernorm_report_from_float32_rows_equals_the_codes_path(axis: int) -> None:
    """A LayerNorm site's metrics in one pass from its float32 rows
    (``rsqrt_report_f32``: the model's reals and the float64 reference of the row's codes
    compared row by row) equal the codes path's figures exactly, the error-split maxima
    included (the same comparison in the same order), for rsqrt_lut, RMSNorm and
    pRMSNorm with calibration's saturating input formats, over one axis and trailing
    axes; a NaN input takes the codes path and its error; an eps off by 10^-3 is caught."""
    from unittest.mock import patch

    from hwapprox.approx import _kernels
    from hwapprox.approx.layernorm.rsqrt import RsqrtLutLayerNorm
    from hwapprox.fixed import FixedPointError

    if not _kernels.available():
        pytest.skip("numba is not installed")
    imp = import_model(single_node("LayerNormalization", [3, 4, 40], 17, axis=axis))
    (site,) = imp.sites
    rng = np.random.default_rng(9)
    x = (rng.normal(0.3, 2, (3, 4, 40)) * rng.uniform(0.3, 3, (3, 4, 1))).astype(np.float32)
    x[0, 0, :5] = 40.0  # saturates the input format
    y = make_session(imp.model, 1).run(None, {"x": x})[0]
    sat = "ap_fixed<16,5,AP_RND,AP_SAT>"
    specs = [
        make_spec("layernorm", "rsqrt_lut", eps=site.epsilon, in_fmt=sat),
        make_spec(
            "layernorm", "rsqrt_lut", eps=site.epsilon, in_fmt="ap_fixed<12,4,AP_TRN,AP_SAT>"
        ),
        make_spec("layernorm", "rmsnorm", eps=site.epsilon, in_fmt=sat),
        make_spec("layernorm", "rmsnorm", eps=site.epsilon, in_fmt=sat, partial_k=24),
    ]
    for spec in specs:
        with (
            _counting(_kernels, "rsqrt_report_f32") as fused,
            _counting(_kernels, "layernorm_err_stats") as codes,
        ):
            got = site_metrics(site, spec, x, y)
        assert (fused, codes) == ([1], []), spec.describe()
        with patch.object(RsqrtLutLayerNorm, "f32_plan", lambda *a: None):
            want = site_metrics(site, spec, x, y)
        assert got == want, spec.describe()
    bad_x = x.copy()
    bad_x[1, 2, 3] = np.nan
    with pytest.raises(FixedPointError, match="non-finite") as fused_err:
        site_metrics(site, specs[0], bad_x, y)
    with (
        patch.object(RsqrtLutLayerNorm, "f32_plan", lambda *a: None),
        pytest.raises(FixedPointError, match="non-finite") as codes_err,
    ):
        site_metrics(site, specs[0], bad_x, y)
    assert str(fused_err.value) == str(codes_err.value)
    real = _kernels.rsqrt_report_f32

    def eps_off(*a):  # (eps, gamma, beta, has_gamma, has_beta, int_sums, w at the end)
        return real(*a[:-7], a[-7] + 1e-3, *a[-6:])

    with patch.object(_kernels, "rsqrt_report_f32", eps_off):
        off = site_metrics(site, specs[0], x, y)
    good = site_metrics(site, specs[0], x, y)
    assert off["quant_max_lsb"] != good["quant_max_lsb"]


def test_row_parameter_cache_follows_the_values() -> None:
    """The quantised gamma/beta cache returns the codes of a fresh quantisation, read
    only; a parameter changed in place, another format or row length misses it."""
    from hwapprox.export import emulate as E
    from hwapprox.fixed import FixedFormat

    imp = import_model(single_node("LayerNormalization", [2, 3, 8], 17))
    (site,) = imp.sites
    g = np.linspace(-1.3, 2.2, 8).astype(np.float32)
    f8, f12 = FixedFormat.parse("ap_fixed<8,3>"), FixedFormat.parse("ap_fixed<12,3>")
    first = E._row_param(g, 8, f8, "gamma", site)
    assert np.array_equal(first, f8.quantize(g.astype(np.float64)))
    assert not first.flags.writeable
    assert E._row_param(g, 8, f8, "gamma", site) is first
    assert np.array_equal(E._row_param(g, 8, f12, "gamma", site), f12.quantize(g.astype(float)))
    g[3] += 0.5  # changed in place: the same object, other values
    again = E._row_param(g, 8, f8, "gamma", site)
    assert np.array_equal(again, f8.quantize(g.astype(np.float64)))
    assert not np.array_equal(again, first)
    one = np.array([0.75], np.float32)  # broadcast to the row length asked for
    assert E._row_param(one, 4, f8, "beta", site).shape == (4,)
    assert E._row_param(one, 6, f8, "beta", site).shape == (6,)


def test_thread_map_lanes_do_not_queue_behind_each_other() -> None:
    """Work in one lane runs while another lane's workers are all busy: validate's
    per-site reports (lane "reports") must not hold up the emulation's site blocks
    (lane "sites"), which queued behind every report when both shared one pool."""
    import threading

    from hwapprox.export.emulate import thread_map

    release = threading.Event()
    started = threading.Barrier(3)

    def blocker(i: int) -> int:
        started.wait(timeout=10)
        release.wait(timeout=30)
        return i

    box: dict[str, list[int]] = {}
    t = threading.Thread(target=lambda: box.update(r=thread_map(blocker, [1, 2], 2, "reports")))
    t.start()
    started.wait(timeout=10)  # both "reports" workers are busy now
    done = threading.Event()
    out: list[int] = []

    def sites() -> None:
        out.extend(thread_map(lambda i: i * 10, [1, 2, 3], 2, "sites"))
        done.set()

    threading.Thread(target=sites).start()
    ok = done.wait(timeout=5)
    release.set()
    assert ok, "the sites lane waited for the reports lane"
    assert out == [10, 20, 30]
    t.join(timeout=10)
    assert box["r"] == [1, 2]
