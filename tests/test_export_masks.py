"""Attention masks as exporters write them: found, calibrated around, emulated as mask bits."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import float_ref_spec

from hwapprox.approx.base import Operator
from hwapprox.export.builders import MASK_STYLES, EncoderShape, bert_encoder, sample_inputs
from hwapprox.export.calibrate import calibrate
from hwapprox.export.emulate import Emulator, make_session
from hwapprox.export.errors import ExportError
from hwapprox.export.graph import load_model, max_runtime_ir_version
from hwapprox.export.validate import ImportedModel, import_model, validate

SHAPE = EncoderShape(layers=2, width=32, heads=4, ffn=64, seq=8, batch=None, vocab=50)
EPS32 = float(np.finfo(np.float32).eps)
EXPECTED_ROLES = {
    "additive": ["padding"],
    "additive_1e4": ["padding"],
    "where": ["padding"],
    "causal": ["padding", "causal"],
    "causal_trilu": ["padding", "causal"],
}


def _model(style: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    return bert_encoder(SHAPE, mask=style, seed=5), sample_inputs(SHAPE, batch=5, mask=True)


@pytest.mark.parametrize("style", MASK_STYLES[1:])
def test_mask_found_and_calibrated_around(style: str) -> None:
    model, feeds = _model(style)
    imp = import_model(model)
    softmax = [s for s in imp.sites if s.operator is Operator.SOFTMAX]
    assert len(softmax) == SHAPE.layers
    assert all(s.mask is not None for s in softmax)
    trace = calibrate(imp.model, softmax, feeds)
    am = feeds["attention_mask"]
    s_len = am.shape[1]
    pad = (am == 0)[:, None, None, :]  # keys that are padding
    expect = np.broadcast_to(pad, (am.shape[0], SHAPE.heads, s_len, s_len))
    if style.startswith("causal"):
        expect = expect | np.triu(np.ones((s_len, s_len), dtype=bool), 1)
    for s in softmax:
        assert trace.mask_roles[s.name] == EXPECTED_ROLES[style]
        assert np.array_equal(trace.masks[s.name], expect)
        st = trace.stats[s.name]
        assert st.masked == int(expect.sum())
        assert st.min > -1e3  # the float32-min scores are not calibrated
        assert st.count == expect.size - st.masked


@pytest.mark.parametrize("style", MASK_STYLES[1:])
def test_float_reference_with_mask_reproduces_onnxruntime(style: str) -> None:
    """Masked elements at exactly 0 (mask bits) = onnxruntime's exp(min - max) = 0."""
    model, feeds = _model(style)
    imp = import_model(model)
    ref = make_session(imp.model).run(None, feeds)[0]
    emu = Emulator(imp.model, imp.sites)
    got = emu.run(feeds, {s.name: float_ref_spec(s) for s in imp.sites})["logits"]
    tol = 32 * EPS32 * max(1.0, float(np.abs(ref).max()))
    assert float(np.abs(got - ref).max()) <= tol
    # Without the mask the masked scores reach calibration: a clear refusal.
    no_mask = [dataclasses.replace(s, mask=None) for s in imp.sites]
    with pytest.raises(ExportError, match=r"outside any recognised attention mask"):
        validate(ImportedModel(imp.model, no_mask), inputs=feeds)


@pytest.mark.parametrize("style", ["additive", "causal"])
def test_masked_elements_are_exactly_zero_in_the_approximation(style: str) -> None:
    model, feeds = _model(style)
    imp = import_model(model)
    res = validate(imp, inputs=feeds)
    assert res.warnings == []
    sm = next(s for s in imp.sites if s.operator is Operator.SOFTMAX)
    spec = res.specs[sm.name]
    assert spec is not None
    assert spec.method == "online"
    from hwapprox.export.emulate import apply_spec

    x = res.trace.site_inputs[sm.name]
    mask = res.trace.masks[sm.name]
    y = apply_spec(sm, spec, x, mask)
    assert np.all(y[mask] == 0.0)
    assert np.all(np.abs(y.sum(axis=-1) - 1.0) < 0.01)
    assert res.end_to_end["cosine_min"] > 0.999


def test_fully_masked_rows_are_zero_and_reported() -> None:
    model, feeds = _model("additive")
    feeds = {k: v.copy() for k, v in feeds.items()}
    feeds["attention_mask"][1] = 0
    feeds["input_ids"][1] = 0
    res = validate(import_model(model), inputs=feeds)
    sm = next(s for s in res.selected if s.operator is Operator.SOFTMAX)
    st = res.stats[sm.name]
    assert st.masked_rows == SHAPE.heads * SHAPE.seq  # every query row of sample 1
    assert any("fully masked" in w for w in res.warnings)


def _unrecognised() -> onnx.ModelProto:
    """Softmax(Sub(x, big)) with a constant that subtracts 1e9 from some entries:
    masks written as a Sub are not a pattern the importer knows."""
    big = np.zeros((1, 4), dtype=np.float32)
    big[0, 3] = 1e9
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["s"], name="scores"),
        helper.make_node("Sub", ["s", "big"], ["z"], name="odd_mask"),
        helper.make_node("Softmax", ["z"], ["y"], name="sm", axis=-1),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [
            numpy_helper.from_array(np.eye(4, dtype=np.float32), "w"),
            numpy_helper.from_array(big, "big"),
        ],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_unrecognised_mask_is_named_with_its_node_and_the_fix() -> None:
    with pytest.raises(ExportError, match=r"site sm: 2 input values .* node 'odd_mask' \(Sub\)"):
        validate(_unrecognised())
    # Kept float, the site is not calibrated, so the model validates.
    res = validate(_unrecognised(), methods={"softmax": "float"})
    assert res.specs["sm"] is None
    assert "sm" not in res.stats


def test_newer_ir_version_is_lowered_with_a_note(tmp_path) -> None:
    model = bert_encoder(SHAPE, seed=1)
    model.ir_version = max_runtime_ir_version() + 1
    path = tmp_path / "new_ir.onnx"
    onnx.save(model, path)
    res = validate(path, inputs=sample_inputs(SHAPE, batch=2))
    assert any(f"IR version {model.ir_version} lowered to" in n for n in res.notes)
    # A model whose opset needs the newer IR cannot be lowered: the error says which works.
    model.opset_import[0].version = 99
    with pytest.raises(ExportError, match=r"re-export with opset <= \d+"):
        load_model(model, check=False)


def test_no_batch_axis_counts_one_sample() -> None:
    """[S, D] input, scores [H, S, S]: one sample, not S."""
    s, d, h = 6, 8, 2
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.5, (d, d)).astype(np.float32), n)
        for n in ("wq", "wk")
    ]
    inits.append(numpy_helper.from_array(np.array([s, h, d // h], dtype=np.int64), "shp"))
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q0"]),
        helper.make_node("MatMul", ["x", "wk"], ["k0"]),
        helper.make_node("Reshape", ["q0", "shp"], ["q1"]),
        helper.make_node("Reshape", ["k0", "shp"], ["k1"]),
        helper.make_node("Transpose", ["q1"], ["q"], perm=[1, 0, 2]),
        helper.make_node("Transpose", ["k1"], ["k"], perm=[1, 2, 0]),
        helper.make_node("MatMul", ["q", "k"], ["sc"]),
        helper.make_node("Softmax", ["sc"], ["y"], axis=-1),
    ]
    g = helper.make_graph(
        nodes,
        "nobatch",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [s, d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [h, s, s])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    res = validate(m)
    assert res.n_samples == 1
    assert res.batch_axis is None
    assert any("no batch axis" in n for n in res.notes)
