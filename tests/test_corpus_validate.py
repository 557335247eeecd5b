"""Every model of the export corpus (tests/corpus, torch exports) validates as users run it.

* float "approximations" reproduce onnxruntime within float rounding, masks included;
* with the defaults (no config) every site is approximated, nothing saturates,
  and the output cosine (padded tokens left out) is >= 0.999;
* the graph hwapprox loads (IR lowered, opset-23 ``Attention`` decomposed)
  computes what the file computes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx_models import float_ref_spec

from hwapprox.approx.base import Operator
from hwapprox.export.emulate import Emulator, make_session
from hwapprox.export.graph import max_runtime_ir_version
from hwapprox.export.validate import import_model, validate

CORPUS = Path(__file__).parent / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
MODELS = MANIFEST["models"]
EPS32 = float(np.finfo(np.float32).eps)
#: site kinds found but not emulated in this build (no operator yet)


def _inputs(entry: dict) -> dict[str, np.ndarray]:
    with np.load(CORPUS / entry["inputs"]) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def imported() -> dict:
    return {e["file"]: import_model(CORPUS / e["file"]) for e in MODELS}


def test_corpus_covers_the_styles_and_exporters() -> None:
    styles = {e["style"] for e in MODELS}
    assert {"bert", "distilbert", "vit", "gpt2"} <= styles
    assert {"torchscript", "dynamo"} <= {e["exporter"] for e in MODELS}
    assert {e["mask"] for e in MODELS} >= {"additive", "where", "none"}
    assert any(e["ir_too_new"] for e in MODELS)
    assert any(not e["batch_axis"] for e in MODELS)


@pytest.mark.parametrize("entry", MODELS, ids=[e["file"] for e in MODELS])
def test_loaded_graph_computes_what_the_file_computes(entry: dict, imported: dict) -> None:
    """The graph after loading (IR lowering, Attention decomposition) = the file on
    onnxruntime (where onnxruntime reads the file itself)."""
    imp = imported[entry["file"]]
    feeds = _inputs(entry)
    got = make_session(imp.model).run(None, feeds)
    raw = onnx.load(str(CORPUS / entry["file"]))
    if raw.ir_version > max_runtime_ir_version():
        assert any("lowered" in n for n in imp.notes)
        raw.ir_version = max_runtime_ir_version()
    ref = make_session(raw).run(None, feeds)
    for a, b in zip(ref, got, strict=True):
        tol = 64 * EPS32 * max(1.0, float(np.abs(a).max()))
        assert float(np.abs(a - b).max()) <= tol


@pytest.mark.parametrize("entry", MODELS, ids=[e["file"] for e in MODELS])
def test_float_reference_reproduces_onnxruntime(entry: dict, imported: dict) -> None:
    imp = imported[entry["file"]]
    feeds = _inputs(entry)
    counts = {op: sum(s.operator.value == op for s in imp.sites) for op in entry["expected_sites"]}
    assert counts == entry["expected_sites"]
    ref = make_session(imp.model).run(None, feeds)
    got = Emulator(imp.model, imp.sites).run(feeds, {s.name: float_ref_spec(s) for s in imp.sites})
    for a, name in zip(ref, [o.name for o in imp.model.graph.output], strict=True):
        tol = 32 * EPS32 * max(1.0, float(np.abs(a).max()))
        assert float(np.abs(got[name] - a).max()) <= tol
    if entry["mask"] != "none":
        sm = [s for s in imp.sites if s.operator is Operator.SOFTMAX]
        assert all(s.mask is not None for s in sm)


@pytest.mark.parametrize("entry", MODELS, ids=[e["file"] for e in MODELS])
def test_defaults_approximate_every_site_at_cosine_0999(entry: dict, imported: dict) -> None:
    res = validate(imported[entry["file"]], inputs=_inputs(entry))
    assert all(spec is not None for spec in res.specs.values())
    # every normaliser (sigmoid / ReLU attention included) is emulated: nothing runs
    # float unasked, and nothing saturates on these batches
    assert res.imported.unsupported == []
    assert res.warnings == []
    e = res.end_to_end
    assert e["cosine_min"] >= 0.999
    kinds = {m["kind"] for m in e["outputs"].values()}
    expect = {"embedding": "embedding", "classifier": "classifier", "lm_logits": "token_logits"}
    assert kinds == {expect[entry["output_kind"]]}
    if entry["output_kind"] == "embedding":
        assert e["pooled_cosine_min"] >= 0.999
        assert e["token_cosine_min"] >= 0.99
    if not entry["batch_axis"]:
        assert res.n_samples == 1
    if entry["mask"] != "none":
        am = _inputs(entry)["attention_mask"]
        attn = (Operator.SOFTMAX, Operator.SIGMOID_ATTENTION, Operator.RELU_ATTENTION)
        sm = next(s for s in res.selected if s.operator in attn)
        assert sm.mask is not None
        assert res.stats[sm.name].masked > 0
        assert res.token_mask_input == "attention_mask"
        out = next(iter(e["outputs"].values()))
        assert out["values"] % int(am.sum()) == 0  # padded tokens left out
