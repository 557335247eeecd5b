"""Attention normalisers other than softmax in ONNX models (issue 15): Softmax_1 (written
out, or a zero logit concatenated), clipped softmax, sigmoid attention and ReLU attention.

* every ``bert_<norm>`` corpus model (tests/corpus, torch TorchScript and dynamo exports,
  scripts/make_corpus.py) has its sites found with the right kind and the constants the
  torch module used (``expected_params`` in the manifest, set from the module's own
  constants), with the HF additive mask found in front of each;
* ``validate`` runs on them end to end: the float path (exact Softmax_1 / clipped
  softmax) reproduces onnxruntime to float32 rounding, a plain softmax in its place
  does not; the default approximation (online softmax with ``off_by_one`` / ``clip_*``
  from the model) stays within the stated tolerance, and the same spec without the
  options is far off; sigmoid / ReLU attention are emulated by their operators with
  the model's bias / n (a run-time n read per call), and a spec with another
  constant is far off;
* near misses (other clip bounds, an ``Add`` of a non-constant, a zero logit that is
  not zero, a slice that keeps it, a sigmoid that gates no ``P·V``, a ReLU divided
  by data) are not taken for these patterns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import float_ref_spec

from hwapprox.approx.base import Operator
from hwapprox.approx.registry import make_spec
from hwapprox.export.emulate import Emulator, apply_spec, make_session, trace_model
from hwapprox.export.errors import ExportError
from hwapprox.export.graph import load_model
from hwapprox.export.patterns import find_all
from hwapprox.export.refspec import FloatRefSoftmax
from hwapprox.export.tuning import SearchSpace, candidate_specs
from hwapprox.export.validate import import_model, validate

CORPUS = Path(__file__).parent / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
NORM = [e for e in MANIFEST["models"] if "expected_kinds" in e]
EMULATED = [e for e in NORM if e["expected_sites"].get("softmax")]
ELEMENTWISE = [e for e in NORM if not e["expected_sites"].get("softmax")]
EPS32 = float(np.finfo(np.float32).eps)
#: per-site limit of the default 16-bit approximation (out LSB 2^-16): the input
#: quantisation to ap_fixed<16,7> (2^-9) dominates, as for the plain softmax sites
#: of ``bert`` (22 LSB measured); end-to-end cosine >= 0.9999
SITE_MAX_ABS = 1e-3
COSINE = 0.9999


def _inputs(entry: dict[str, Any]) -> dict[str, np.ndarray]:
    with np.load(CORPUS / entry["inputs"]) as z:
        return {k: z[k] for k in z.files}


_IMPORTED: dict[str, Any] = {}


def _imported(entry: dict[str, Any]) -> Any:
    if entry["file"] not in _IMPORTED:
        _IMPORTED[entry["file"]] = import_model(CORPUS / entry["file"])
    return _IMPORTED[entry["file"]]


def test_corpus_has_each_normaliser_from_both_exporters() -> None:
    got = {(e["normaliser"], e["exporter"]) for e in NORM}
    norms = {"softmax1", "softmax1cat", "clipped", "sigmoid", "relu", "relumul"}
    assert got == {(n, x) for n in norms for x in ("torchscript", "dynamo")}


@pytest.mark.parametrize("entry", NORM, ids=[e["file"] for e in NORM])
def test_sites_found_with_kind_and_constants(entry: dict[str, Any]) -> None:
    imp = _imported(entry)
    norm_sites = [s for s in [*imp.sites, *imp.unsupported] if s.kind not in ("gelu", "layernorm")]
    kinds: dict[str, int] = {}
    for s in norm_sites:
        kinds[s.kind] = kinds.get(s.kind, 0) + 1
    assert kinds == entry["expected_kinds"], imp.skipped
    want = entry["expected_params"]
    for s in norm_sites:
        assert s.axis == -1
        for k, v in want.items():
            if v is None or isinstance(v, bool | str):
                assert s.params[k] == v
            else:
                assert s.params[k] == pytest.approx(v, rel=1e-6), k
        # the HF additive mask ((1 - mask) * finfo.min) is found in front of the site
        assert s.mask is not None
        assert s.mask.roles == ["padding"]
        assert s.mask.sources == ["attention_mask"]
    if entry["normaliser"] in ("softmax1", "softmax1cat", "clipped"):
        assert all(s.operator is Operator.SOFTMAX for s in norm_sites)
        assert not imp.unsupported
    else:
        op = {"sigmoid": Operator.SIGMOID_ATTENTION}.get(
            entry["normaliser"], Operator.RELU_ATTENTION
        )
        assert all(s.operator is op for s in norm_sites)
        assert not imp.unsupported


@pytest.mark.parametrize(
    "entry", [e for e in NORM if e["normaliser"] == "relu"], ids=lambda e: e["file"]
)
def test_relu_run_time_n_is_the_key_length(entry: dict[str, Any]) -> None:
    """``relu(x) / x.size(-1)``: n is a tensor computed from shapes; at run time it
    equals the length of the softmax axis (12 here, 9 on a shorter batch)."""
    imp = _imported(entry)
    names = [s.params["n_tensor"] for s in imp.sites if s.params.get("n_tensor")]
    assert len(names) == 2
    feeds = _inputs(entry)
    for seq in (12, 9):
        f = {k: np.ascontiguousarray(v[:, :seq]) for k, v in feeds.items()}
        vals = trace_model(imp.model, names).run(names, f)
        assert [float(v) for v in vals] == [float(seq)] * len(names)


@pytest.mark.parametrize("entry", EMULATED, ids=[e["file"] for e in EMULATED])
def test_float_path_matches_onnxruntime_and_plain_softmax_does_not(
    entry: dict[str, Any],
) -> None:
    imp = _imported(entry)
    feeds = _inputs(entry)
    ref = make_session(imp.model).run(None, feeds)[0]
    emu = Emulator(imp.model, imp.sites)
    exact = emu.run(feeds, {s.name: float_ref_spec(s) for s in imp.sites})
    tol = 32 * EPS32 * max(1.0, float(np.abs(ref).max()))
    assert float(np.abs(next(iter(exact.values())) - ref).max()) <= tol
    plain = {
        s.name: FloatRefSoftmax() if s.operator is Operator.SOFTMAX else float_ref_spec(s)
        for s in imp.sites
    }
    wrong = emu.run(feeds, plain)
    assert float(np.abs(next(iter(wrong.values())) - ref).max()) > 1000 * tol


@pytest.mark.parametrize("entry", EMULATED, ids=[e["file"] for e in EMULATED])
def test_validate_approximates_with_the_model_constants(entry: dict[str, Any]) -> None:
    imp = _imported(entry)
    res = validate(imp, inputs=_inputs(entry))
    assert res.warnings == []
    assert res.end_to_end["cosine_min"] >= COSINE
    want = entry["expected_params"]
    for s in imp.sites:
        if s.operator is not Operator.SOFTMAX:
            continue
        spec = res.specs[s.name]
        assert spec is not None
        assert spec.method == "online"
        assert spec.off_by_one is want.get("off_by_one", False)
        assert spec.clip_gamma == pytest.approx(want.get("clip_gamma", 0.0), rel=1e-6)
        assert spec.clip_zeta == pytest.approx(want.get("clip_zeta", 1.0), rel=1e-6)
        err = res.site_errors[s.name]
        assert err["max_abs"] <= SITE_MAX_ABS
        assert res.stats[s.name].masked > 0  # padded keys masked through the mask bits
        # without the options the same spec computes another function
        x, y = res.trace.site_inputs[s.name], res.trace.site_outputs[s.name]
        mask = res.trace.masks[s.name]
        plain = spec.replace(off_by_one=False, clip_gamma=0.0, clip_zeta=1.0)
        off = np.abs(apply_spec(s, plain, x, mask) - y)[~np.broadcast_to(mask, y.shape)]
        assert float(off.max()) > 20 * err["max_abs"]
        # masked elements are exactly zero in the approximation
        got = apply_spec(s, spec, x, mask)
        assert (got[np.broadcast_to(mask, got.shape)] == 0).all()


@pytest.mark.parametrize("entry", ELEMENTWISE, ids=[e["file"] for e in ELEMENTWISE])
def test_sigmoid_and_relu_attention_emulated_with_the_model_constants(
    entry: dict[str, Any],
) -> None:
    imp = _imported(entry)
    res = validate(imp, inputs=_inputs(entry))
    assert res.warnings == []  # masked scores neither saturate nor count as errors
    assert res.end_to_end["cosine_min"] >= COSINE
    sites = [s for s in imp.sites if s.kind.endswith("_attention")]
    assert len(sites) == 2
    for s in sites:
        spec = res.specs[s.name]
        assert spec is not None
        assert spec.method == ("pwl" if s.kind == "sigmoid_attention" else "wortsman")
        err = res.site_errors[s.name]
        assert err["max_abs"] <= SITE_MAX_ABS
        x, y = res.trace.site_inputs[s.name], res.trace.site_outputs[s.name]
        mask = res.trace.masks[s.name]
        live = ~np.broadcast_to(mask, y.shape)
        n_run = res.trace.site_n.get(s.name)
        if s.kind == "sigmoid_attention":
            assert spec.bias == pytest.approx(entry["expected_params"]["bias"], rel=1e-6)
            other = spec.replace(bias=0.0)  # the paper's b = -log n left out
        else:
            assert (n_run is None) == (
                "n" in entry["expected_params"] and entry["expected_params"]["n"] is not None
            )
            other = spec.replace(seq_len=2 * (spec.seq_len if n_run is None else int(n_run)))
        off = np.abs(apply_spec(s, other, x, mask, n_run if other is spec else None) - y)
        assert float(off[live].max()) > 20 * err["max_abs"]
        # masked scores give exactly zero
        got = apply_spec(s, spec, x, mask, n_run)
        assert (got[~live] == 0).all()


@pytest.mark.parametrize(
    "entry", [e for e in NORM if e["normaliser"] == "relu"], ids=lambda e: e["file"]
)
def test_relu_run_time_n_follows_the_batch(entry: dict[str, Any]) -> None:
    """A shorter batch (9 keys instead of 12): the emulation divides by the new n, as
    the model does (a fixed seq_len would be 33 % off)."""
    imp = _imported(entry)
    feeds = {k: np.ascontiguousarray(v[:, :9]) for k, v in _inputs(entry).items()}
    ref = make_session(imp.model).run(None, feeds)[0]
    specs = {
        s.name: make_spec("relu_attention", "wortsman", in_fmt="ap_fixed<24,8>",
                          out_fmt="ap_ufixed<24,4,AP_RND,AP_SAT>")
        for s in imp.sites if s.kind == "relu_attention"
    }  # fmt: skip
    got = next(iter(Emulator(imp.model, imp.sites).run(feeds, specs).values()))
    assert float(np.abs(got - ref).max()) <= 1e-3 * max(1.0, float(np.abs(ref).max()))


def test_a_method_without_the_option_is_refused() -> None:
    entry = next(e for e in EMULATED if e["normaliser"] == "softmax1")
    with pytest.raises(ExportError, match=r"is a softmax1 \(off_by_one=True\) but method ibert"):
        validate(_imported(entry), inputs=_inputs(entry), methods={"softmax": "ibert"})
    cfg = {"defaults": {"softmax": {"method": "online", "off_by_one": False}}}
    with pytest.raises(ExportError, match="sets off_by_one=False; leave off_by_one out"):
        validate(_imported(entry), inputs=_inputs(entry), config=cfg)


def test_tuning_candidates_keep_the_site_function() -> None:
    entry = next(e for e in EMULATED if e["normaliser"] == "clipped")
    imp = _imported(entry)
    res = validate(imp, inputs=_inputs(entry), methods={"softmax": "float", "gelu": "float"})
    site = next(s for s in imp.sites if s.kind == "clipped_softmax")
    from hwapprox.export.calibrate import calibrate

    trace = calibrate(imp.model, [site], _inputs(entry))
    cands = candidate_specs(site, trace.stats[site.name], None, None, SearchSpace(widths=(12,)))
    assert cands
    assert {c.method for c in cands} == {"online"}  # the only method with clip options
    assert all(c.clip_gamma == pytest.approx(-0.03, rel=1e-6) for c in cands)
    assert res.specs[site.name] is None


# --------------------------------------------------------------------------------------
# Synthetic graphs: the patterns and their near misses
# --------------------------------------------------------------------------------------

B, H, S, D = 2, 2, 6, 4


def _c(name: str, v: Any, dtype: Any = np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(v, dtype), name)


def _attention(norm: list[onnx.NodeProto], inits: list[onnx.TensorProto]) -> onnx.ModelProto:
    """``q·kᵀ + mask`` -> ``norm`` nodes (from ``s`` to ``p``) -> ``p·v``; the mask is an
    additive input. Opset 18."""
    nodes = [
        helper.make_node("MatMul", ["q", "kt"], ["qk"], name="qk"),
        helper.make_node("Add", ["qk", "mask"], ["s"], name="add_mask"),
        *norm,
        helper.make_node("MatMul", ["p", "v"], ["y"], name="pv"),
    ]
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "attn",
        [
            helper.make_tensor_value_info("q", f, [B, H, S, D]),
            helper.make_tensor_value_info("kt", f, [B, H, D, S]),
            helper.make_tensor_value_info("v", f, [B, H, S, D]),
            helper.make_tensor_value_info("mask", f, [B, 1, 1, S]),
        ],
        [helper.make_tensor_value_info("y", f, [B, H, S, D])],
        inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 18)])
    m.ir_version = 9
    return m


def _feeds(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.zeros((B, 1, 1, S), np.float32)
    mask[1, ..., 4:] = np.finfo(np.float32).min
    return {
        "q": rng.standard_normal((B, H, S, D)).astype(np.float32),
        "kt": rng.standard_normal((B, H, D, S)).astype(np.float32),
        "v": rng.standard_normal((B, H, S, D)).astype(np.float32),
        "mask": mask,
    }


def _clipped(bounds: tuple[float, float] = (0.0, 1.0), add_input: str = "g") -> onnx.ModelProto:
    return _attention(
        [
            helper.make_node("Softmax", ["s"], ["sm"], name="softmax", axis=-1),
            helper.make_node("Mul", ["sm", "stretch"], ["st"], name="mul"),
            helper.make_node("Add", ["st", add_input], ["sh"], name="add"),
            helper.make_node("Clip", ["sh", "lo", "hi"], ["p"], name="clip"),
        ],
        [_c("stretch", 1.1), _c("g", -0.05), _c("lo", bounds[0]), _c("hi", bounds[1])],
    )


def _kinds(m: onnx.ModelProto) -> tuple[list[tuple[str, str]], dict[str, str]]:
    scan = find_all(load_model(m))
    return [(s.name, s.kind) for s in [*scan.sites, *scan.unsupported]], scan.skipped


def test_clipped_softmax_pattern_and_its_float_path() -> None:
    m = load_model(_clipped())
    scan = find_all(m)
    (site,) = scan.sites
    assert (site.kind, site.pattern) == ("clipped_softmax", "clip")
    assert site.params["clip_gamma"] == pytest.approx(-0.05, rel=1e-6)
    assert site.params["clip_zeta"] == pytest.approx(1.05, rel=1e-6)
    assert site.nodes == ("softmax", "mul", "add", "clip")
    feeds = _feeds()
    ref = make_session(m).run(None, feeds)[0]
    got = Emulator(m, [site]).run(feeds, {site.name: float_ref_spec(site)})["y"]
    assert float(np.abs(got - ref).max()) <= 1e-6


def test_clip_with_other_bounds_is_a_plain_softmax() -> None:
    kinds, skipped = _kinds(_clipped(bounds=(0.0, 0.9)))
    assert kinds == [("softmax", "softmax")]
    assert "not followed by a clip to [0, 1]" in skipped["softmax"]


def test_clip_constants_out_of_range_are_a_plain_softmax() -> None:
    m = _clipped()
    for init in m.graph.initializer:
        if init.name == "g":
            init.CopyFrom(_c("g", 0.05))  # gamma > 0: not Bondarenko's clipped softmax
    kinds, skipped = _kinds(m)
    assert kinds == [("softmax", "softmax")]
    assert "clip_gamma=0.05 not in [-8, 0]" in skipped["softmax"]


def test_clipped_add_of_a_non_constant_is_a_plain_softmax() -> None:
    m = _clipped(add_input="mask")  # Add(·, mask): not a constant gamma
    kinds, _ = _kinds(m)
    assert kinds == [("softmax", "softmax")]


def test_clipped_intermediate_used_outside_is_a_plain_softmax() -> None:
    m = _clipped()
    m.graph.output.append(helper.make_tensor_value_info("st", TensorProto.FLOAT, [B, H, S, S]))
    kinds, _ = _kinds(m)
    assert kinds == [("softmax", "softmax")]


def _zero_logit(value: float = 0.0, width: int = 1, start: int = 1) -> onnx.ModelProto:
    return _attention(
        [
            helper.make_node("Slice", ["s", "z0", "zw", "ax"], ["s1"], name="col"),
            helper.make_node("Shape", ["s1"], ["shp"], name="shape"),
            helper.make_node(
                "ConstantOfShape",
                ["shp"],
                ["zeros"],
                name="zeros",
                value=helper.make_tensor("v", TensorProto.FLOAT, [1], [value]),
            ),
            helper.make_node("Concat", ["zeros", "s"], ["cat"], name="cat", axis=-1),
            helper.make_node("Softmax", ["cat"], ["sm"], name="softmax", axis=-1),
            helper.make_node("Slice", ["sm", "st", "big", "ax"], ["p"], name="drop"),
        ],
        [
            _c("z0", [0], np.int64),
            _c("zw", [width], np.int64),
            _c("ax", [-1], np.int64),
            _c("st", [start], np.int64),
            _c("big", [2**63 - 1], np.int64),
        ],
    )


def test_zero_logit_softmax1_and_its_float_path() -> None:
    m = load_model(_zero_logit())
    (site,) = find_all(m).sites
    assert (site.kind, site.pattern, site.params["zero_at"]) == ("softmax1", "zero_logit", "start")
    assert site.input == "s"
    feeds = _feeds(1)
    ref = make_session(m).run(None, feeds)[0]
    got = Emulator(m, [site]).run(feeds, {site.name: float_ref_spec(site)})["y"]
    assert float(np.abs(got - ref).max()) <= 1e-6


@pytest.mark.parametrize(
    "kw", [{"value": 1.0}, {"width": 2}, {"start": 2}], ids=["one", "two_wide", "keeps_more"]
)
def test_zero_logit_near_misses_are_a_plain_softmax(kw: dict[str, Any]) -> None:
    kinds, _ = _kinds(_zero_logit(**kw))
    assert kinds == [("softmax", "softmax")]


def _explicit(neg: str = "Neg", sum_axis: int = -1) -> onnx.ModelProto:
    negs = {
        "Neg": [helper.make_node("Neg", ["m"], ["nm"], name="neg")],
        "Sub": [helper.make_node("Sub", ["zero", "m"], ["nm"], name="neg")],
        "Abs": [helper.make_node("Abs", ["m"], ["nm"], name="neg")],  # not -m
    }[neg]
    return _attention(
        [
            helper.make_node("ReduceMax", ["s", "ax"], ["m"], name="max", keepdims=1),
            helper.make_node("Sub", ["s", "m"], ["d"], name="sub"),
            helper.make_node("Exp", ["d"], ["e"], name="exp"),
            *negs,
            helper.make_node("Exp", ["nm"], ["e0"], name="exp0"),
            helper.make_node("ReduceSum", ["e", "sax"], ["se"], name="sum", keepdims=1),
            helper.make_node("Add", ["se", "e0"], ["den"], name="den"),
            helper.make_node("Div", ["e", "den"], ["p"], name="div"),
        ],
        [
            _c("ax", [-1], np.int64),
            _c("sax", [sum_axis], np.int64),
            _c("zero", 0.0),
        ],
    )


@pytest.mark.parametrize("neg", ["Neg", "Sub"])
def test_explicit_softmax1_and_its_float_path(neg: str) -> None:
    m = load_model(_explicit(neg))
    (site,) = find_all(m).sites
    assert (site.kind, site.pattern, site.name) == ("softmax1", "explicit", "max")
    assert len(site.nodes) == 8
    feeds = _feeds(2)
    ref = make_session(m).run(None, feeds)[0]
    got = Emulator(m, [site]).run(feeds, {site.name: float_ref_spec(site)})["y"]
    assert float(np.abs(got - ref).max()) <= 1e-6
    # and the bit-accurate online softmax with off_by_one, through the mask bits
    spec = make_spec("softmax", "online", off_by_one=True, in_fmt="ap_fixed<16,5,AP_RND,AP_SAT>")
    approx = Emulator(m, [site]).run(feeds, {site.name: spec})["y"]
    assert 0 < float(np.abs(approx - ref).max()) <= 2e-3


def test_explicit_softmax1_intermediate_used_outside_is_skipped() -> None:
    m = _explicit()
    m.graph.output.append(helper.make_tensor_value_info("e0", TensorProto.FLOAT, [B, H, S, 1]))
    kinds, skipped = _kinds(m)
    assert kinds == []
    assert skipped == {"max": "softmax1 (explicit) has intermediates used outside it"}


@pytest.mark.parametrize("kw", [{"neg": "Abs"}, {"sum_axis": 2}], ids=["not_neg", "other_axis"])
def test_explicit_softmax1_near_misses_find_nothing(kw: dict[str, Any]) -> None:
    kinds, _ = _kinds(_explicit(**kw))
    assert kinds == []


def _sigmoid(bias_input: str = "b", gate: bool = False) -> onnx.ModelProto:
    """``Sigmoid(s + b) -> P·V``; ``gate``: ``Sigmoid(s + b) · s`` feeds the MatMul."""
    tail = (
        [
            helper.make_node("Sigmoid", ["sb"], ["sg"], name="sigmoid"),
            helper.make_node("Mul", ["sg", "s"], ["p"], name="gate"),
        ]
        if gate
        else [helper.make_node("Sigmoid", ["sb"], ["p"], name="sigmoid")]
    )
    return _attention(
        [helper.make_node("Add", ["s", bias_input], ["sb"], name="bias"), *tail],
        [_c("b", -np.log(S))],
    )


def test_sigmoid_attention_and_near_misses() -> None:
    scan = find_all(load_model(_sigmoid()))
    assert scan.unsupported == []
    (site,) = scan.sites
    assert (site.kind, site.operator, site.input) == (
        "sigmoid_attention",
        Operator.SIGMOID_ATTENTION,
        "s",
    )
    assert site.nodes == ("bias", "sigmoid")
    assert site.params["bias"] == pytest.approx(-np.log(S), rel=1e-6)
    assert site.params["n"] == pytest.approx(S, rel=1e-6)
    assert site.mask is not None
    # Add of a non-constant (the mask a second time): no bias; the Add output is the input
    (site2,) = find_all(load_model(_sigmoid(bias_input="mask"))).sites
    assert site2.params["bias"] == 0.0
    assert site2.input == "sb"
    # a gate (Sigmoid times the data, no P·V MatMul on the sigmoid): not attention
    kinds, _ = _kinds(_sigmoid(gate=True))
    assert kinds == []


def _relu(op: str, other: list[onnx.NodeProto], name: str) -> onnx.ModelProto:
    return _attention(
        [
            helper.make_node("Relu", ["s"], ["r"], name="relu"),
            *other,
            helper.make_node(op, ["r", name], ["p"], name="scale"),
        ],
        [_c("n", float(S)), _c("inv", 1.0 / S)],
    )


def test_relu_attention_forms_and_near_misses() -> None:
    (s1,) = find_all(load_model(_relu("Div", [], "n"))).sites
    assert (s1.kind, s1.pattern, s1.params["n"]) == ("relu_attention", "div", S)
    assert s1.operator is Operator.RELU_ATTENTION
    assert s1.fields_for_spec() == {"seq_len": S}
    (s2,) = find_all(load_model(_relu("Mul", [], "inv"))).sites
    assert s2.params["n"] == pytest.approx(S, rel=1e-6)
    shape_n = [
        helper.make_node("Shape", ["s"], ["sh"], name="shape", start=-1),
        helper.make_node("Cast", ["sh"], ["len"], name="cast", to=TensorProto.FLOAT),
    ]
    (s3,) = find_all(load_model(_relu("Div", shape_n, "len"))).sites
    assert s3.params == {"n": None, "n_tensor": "len", "n_form": "div"}
    data_n = [helper.make_node("ReduceMax", ["s"], ["len"], name="rmax", keepdims=1)]
    kinds, _ = _kinds(_relu("Div", data_n, "len"))  # divided by data: not a length
    assert kinds == []
