"""The transformer families as ``transformers`` writes them (tests/corpus/hf, made by
scripts/make_corpus_hf.py with torch's TorchScript and dynamo exporters) import and
validate as users run them.

* onnxruntime on each file reproduces the torch output it was exported from;
* every LayerNorm / RMSNorm / softmax / GELU site the architecture has is found
  (two layers each: counts written here from the model definitions, not read from
  the site finder), including LayerNorms whose parameters the TorchScript exporter
  reaches through ``Identity`` nodes (deduplicated initializers) and RMSNorm in its
  three spellings (``Div(1, Sqrt)``, ``Reciprocal``, ONNX ``RMSNormalization``);
* ``validate`` with the defaults approximates every site (RMSNorm sites with the
  ``rmsnorm`` method) at output cosine >= 0.999;
* an RMSNorm site given a LayerNorm method is refused, naming the site; near misses
  of the RMSNorm pattern are not taken for one.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from hwapprox.approx.base import Operator, SpecError
from hwapprox.export.errors import ExportError
from hwapprox.export.graph import GraphIndex, load_model
from hwapprox.export.patterns import find_all
from hwapprox.export.validate import import_model, validate

CORPUS = Path(__file__).parent / "corpus" / "hf"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
MODELS = MANIFEST["models"]
IDS = [e["file"] for e in MODELS]

#: sites per family, from the model definitions (2 layers): LayerNorms = 2 per layer +
#: the embedding LayerNorm (BERT-likes), the final one (pre-LN stacks) or CLIP vision's
#: pre_layrnorm; GELU = 1 per layer (+ Whisper's 2 conv front-end GELUs). CLIP's
#: quick_gelu (x·sigmoid(1.702x)) is a GELU site of its own kind, as is Llama's SiLU gate
#: (x·sigmoid(x)); OPT's ReLU is none.
SITES = {
    "bert": {"layernorm": 5, "softmax": 2, "gelu": 2},
    "roberta": {"layernorm": 5, "softmax": 2, "gelu": 2},
    "distilbert": {"layernorm": 5, "softmax": 2, "gelu": 2},
    "albert": {"layernorm": 5, "softmax": 2, "gelu": 2},
    "electra": {"layernorm": 5, "softmax": 2, "gelu": 2},
    "vit": {"layernorm": 5, "softmax": 2, "gelu": 2},
    "deit": {"layernorm": 5, "softmax": 2, "gelu": 2},
    "dinov2": {"layernorm": 5, "softmax": 2, "gelu": 2},
    "beit": {"layernorm": 5, "softmax": 2, "gelu": 2},
    "clip_vision": {"layernorm": 5, "softmax": 2, "quick_gelu": 2},
    "clip_text": {"layernorm": 5, "softmax": 2, "quick_gelu": 2},
    "gpt2": {"layernorm": 5, "softmax": 2, "gelu": 2},
    "opt": {"layernorm": 5, "softmax": 2},
    "gptneo": {"layernorm": 5, "softmax": 2, "gelu": 2},
    "gptneo_local": {"layernorm": 5, "softmax": 2, "gelu": 2},
    "llama": {"rmsnorm": 5, "softmax": 2, "silu": 2},
    "llama_rmsop": {"rmsnorm": 5, "softmax": 2, "silu": 2},
    "whisper_encoder": {"layernorm": 5, "softmax": 2, "gelu": 4},
}


def _feeds(entry: dict) -> dict[str, np.ndarray]:
    with np.load(CORPUS / entry["inputs"]) as z:
        return {k: z[k] for k in z.files}


def test_corpus_covers_the_families_and_exporters() -> None:
    fams = {e["family"] for e in MODELS}
    assert fams == set(SITES)
    for fam in fams - {"llama_rmsop", "gptneo_local"}:
        assert {e["exporter"] for e in MODELS if e["family"] == fam} == {"torchscript", "dynamo"}
    assert MANIFEST["failures"] == []
    listed = {e[k] for e in MODELS for k in ("file", "inputs", "torch_outputs")}
    assert {p.name for p in CORPUS.iterdir()} - {"manifest.json"} == listed


@pytest.mark.parametrize("entry", MODELS, ids=IDS)
def test_onnxruntime_reproduces_torch(entry: dict) -> None:
    sess = ort.InferenceSession(str(CORPUS / entry["file"]), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, _feeds(entry))
    with np.load(CORPUS / entry["torch_outputs"]) as z:
        ref = z["last_hidden_state"]
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-5 * max(1.0, float(np.abs(ref).max())))


@pytest.mark.parametrize("entry", MODELS, ids=IDS)
def test_every_site_of_the_architecture_is_found(entry: dict) -> None:
    imp = import_model(CORPUS / entry["file"])
    assert imp.skipped == {}
    assert dict(Counter(s.kind for s in imp.sites)) == SITES[entry["family"]]
    for s in imp.sites:
        if s.operator is Operator.LAYERNORM:
            # 32 wide, ALBERT's and ELECTRA's embedding LayerNorm 16
            assert s.gamma is not None
            assert s.shape is not None
            assert s.gamma.shape == (s.shape[-1],)
            assert s.shape[-1] in (16, 32)
            assert (s.beta is None) == (s.kind == "rmsnorm")


@pytest.mark.parametrize("family", ["clip_vision", "clip_text"])
def test_clip_quick_gelu_is_a_gelu_site_measured_against_itself(family: str) -> None:
    """CLIP's quick_gelu, x·sigmoid(1.702x): one GELU site per layer, of kind
    quick_gelu; its spec takes form quick, so its error is measured against
    quick_gelu (not erf GELU, 0.02 away); I-BERT's erf polynomial is refused there,
    naming the site; nothing is left found-but-float."""
    entry = next(e for e in MODELS if e["family"] == family and e["exporter"] == "torchscript")
    imp = import_model(CORPUS / entry["file"])
    quick = [s for s in imp.sites if s.kind == "quick_gelu"]
    assert len(quick) == 2
    assert imp.unsupported == []
    assert all(s.operator is Operator.GELU for s in quick)
    assert all(s.params["alpha"] == pytest.approx(1.702) for s in quick)
    r = validate(imp, inputs=_feeds(entry))
    assert r.as_dict()["found_not_emulated"] == []
    for s in quick:
        spec = r.specs[s.name]
        assert (spec.method, spec.form) == ("edgemoe", "quick")
        x = np.linspace(-3, 3, 61)
        np.testing.assert_allclose(spec.reference(x), x / (1 + np.exp(-1.702 * x)), rtol=1e-12)
        # the site's error is that of edgemoe vs quick_gelu: a few output LSBs
        assert r.site_errors[s.name]["max_lsb"] < 4
    cfg = {"sites": {quick[0].name: {"method": "ibert"}}}
    with pytest.raises(
        SpecError, match=rf"site {quick[0].name} .*erf GELU, not x·σ\(αx\) \(quick_gelu.*edgemoe"
    ):
        validate(imp, inputs=_feeds(entry), config=cfg)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_llama_silu_gate_is_a_gelu_site_with_a_silu_table(exporter: str) -> None:
    """Llama's gated FFN, SiLU(x·Wg) ⊙ (x·Wu): the SiLU is a GELU site of kind silu
    (Sigmoid + Mul, alpha 1) measured against x·sigmoid(x); with no config it gets
    edgemoe over |x| < 16 (table_size 513), a config's table_size is kept, and ShiftGELU
    (slope 1.702 only) is refused naming the site."""
    entry = next(e for e in MODELS if e["family"] == "llama" and e["exporter"] == exporter)
    imp = import_model(CORPUS / entry["file"])
    silu = [s for s in imp.sites if s.kind == "silu"]
    assert len(silu) == 2
    assert all(s.operator is Operator.GELU and s.params["alpha"] == 1.0 for s in silu)
    r = validate(imp, inputs=_feeds(entry))
    assert r.as_dict()["found_not_emulated"] == []
    for s in silu:
        spec = r.specs[s.name]
        assert (spec.method, spec.form, spec.table_size) == ("edgemoe", "silu", 513)
        x = np.linspace(-6, 6, 61)
        np.testing.assert_allclose(spec.reference(x), x / (1 + np.exp(-x)), rtol=1e-12)
        assert r.site_errors[s.name]["max_lsb"] < 4
    own = {"sites": {silu[0].name: {"method": "edgemoe", "table_size": 300}}}
    kept = validate(imp, inputs=_feeds(entry), config=own)
    assert kept.specs[silu[0].name].table_size == 300
    cfg = {"sites": {silu[0].name: {"method": "shiftgelu"}}}
    with pytest.raises(SpecError, match=f"site {silu[0].name} .*not SiLU.*edgemoe, pwl or lut"):
        validate(imp, inputs=_feeds(entry), config=cfg)


def test_gpt2_torchscript_layernorms_reached_through_identity() -> None:
    """The fresh GPT-2's equal LayerNorm parameters are one initializer each, the
    other LayerNorms read them through ``Identity``: all 5 are sites, gamma 1, beta 0."""
    m = load_model(CORPUS / "gpt2_ts17.onnx")
    gi = GraphIndex(m)
    lns = [n for n in m.graph.node if n.op_type == "LayerNormalization"]
    via_identity = [
        n for n in lns if any(
            gi.producer.get(i) is not None and gi.producer[i].op_type == "Identity"
            for i in n.input[1:]
        )
    ]  # fmt: skip
    assert len(lns) == 5
    assert len(via_identity) >= 4
    sites = [s for s in find_all(m).sites if s.operator is Operator.LAYERNORM]
    assert len(sites) == 5
    for s in sites:
        assert s.gamma is not None
        assert s.beta is not None
        np.testing.assert_array_equal(s.gamma, 1.0)
        np.testing.assert_array_equal(s.beta, 0.0)


@pytest.mark.parametrize(
    ("file", "ops"),
    [
        ("llama_ts17.onnx", {"Cast", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul"}),
        ("llama_dynamo18.onnx", {"Pow", "ReduceMean", "Add", "Sqrt", "Reciprocal", "Mul"}),
        ("llama_rmsop_dynamo23.onnx", {"RMSNormalization"}),
    ],
)
def test_rmsnorm_spellings(file: str, ops: set[str]) -> None:
    m = load_model(CORPUS / file)
    by_name = {n.name: n for n in m.graph.node}
    sites = [s for s in find_all(m).sites if s.kind == "rmsnorm"]
    assert len(sites) == 5
    for s in sites:
        assert {by_name[n].op_type for n in s.nodes} == ops
        assert s.epsilon == pytest.approx(1e-6, rel=1e-3)
        np.testing.assert_array_equal(s.gamma, 1.0)  # fresh Llama: RMSNorm weight 1


@pytest.mark.parametrize("entry", MODELS, ids=IDS)
def test_validate_with_defaults(entry: dict) -> None:
    imp = import_model(CORPUS / entry["file"])
    r = validate(imp, inputs=_feeds(entry))
    assert set(r.specs) == {s.name for s in imp.sites}
    assert all(v is not None for v in r.specs.values())
    for s in imp.sites:
        if s.kind == "rmsnorm":
            assert r.specs[s.name].method == "rmsnorm"
        elif s.operator is Operator.LAYERNORM:
            assert r.specs[s.name].method == "rsqrt_lut"
    assert r.end_to_end["cosine_min"] >= 0.999


def test_an_rmsnorm_site_refuses_a_layernorm_method() -> None:
    entry = next(e for e in MODELS if e["file"] == "llama_dynamo18.onnx")
    imp = import_model(CORPUS / entry["file"])
    site = next(s for s in imp.sites if s.kind == "rmsnorm")
    cfg = {
        "defaults": {"softmax": {"method": "online"}, "layernorm": {"method": "rsqrt_lut"}},
        "sites": {site.name: {"method": "rsqrt_lut"}},
    }
    with pytest.raises(ExportError, match=f"site {site.name} is a rmsnorm.*use method rmsnorm"):
        validate(imp, inputs=_feeds(entry), config=cfg)
    # the operator default alone (no site entry) is mapped to the rmsnorm method
    cfg["sites"] = {}
    r = validate(imp, inputs=_feeds(entry), config=cfg)
    assert {r.specs[s.name].method for s in imp.sites if s.kind == "rmsnorm"} == {"rmsnorm"}


def _rms_graph(variant: str) -> onnx.ModelProto:
    """``x / sqrt(mean(x²) + eps) · g`` on [2, 4, 8], or a near miss of it."""
    d = 8
    nodes = [
        helper.make_node("Pow", ["x", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["ms", "eps"], ["mse"]),
        helper.make_node("Sqrt", ["mse"], ["rms"]),
        # near miss: the root divides another tensor than the one squared
        helper.make_node("Div", ["x2" if variant == "other_x" else "x", "rms"], ["n"]),
        helper.make_node("Mul", ["n", "g"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(np.array(3.0 if variant == "cube" else 2.0, np.float32), "two"),
        numpy_helper.from_array(np.array(1e-6, np.float32), "eps"),
        numpy_helper.from_array(np.linspace(0.5, 1.5, d).astype(np.float32), "g"),
    ]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, d])]
    if variant == "other_x":
        ins.append(helper.make_tensor_value_info("x2", TensorProto.FLOAT, [2, 4, d]))
    g = helper.make_graph(
        nodes, "rms", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, d])],
        inits,
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_rmsnorm_pattern_and_near_misses() -> None:
    (site,) = find_all(load_model(_rms_graph("ok"))).sites
    assert site.kind == "rmsnorm"
    assert site.input == "x"
    assert site.output == "y"
    np.testing.assert_allclose(site.gamma, np.linspace(0.5, 1.5, 8), rtol=1e-6)
    for variant in ("cube", "other_x"):
        assert find_all(load_model(_rms_graph(variant))).sites == [], variant
