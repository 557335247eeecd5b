"""Site finding on ONNX models written the way exporters write them."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx_models import erf_gelu_shared_intermediate, erf_wrong_constant, single_node

from hwapprox.approx.base import Operator
from hwapprox.export.builders import GELU_STYLES, EncoderShape, bert_encoder, sample_inputs
from hwapprox.export.calibrate import calibrate
from hwapprox.export.refspec import gelu_erf, gelu_tanh, layernorm_ref, softmax_ref
from hwapprox.export.validate import import_model, select_sites

SHAPE = EncoderShape(layers=2, width=32, heads=4, ffn=64, seq=8, batch=2, vocab=50)

# Nodes each pattern covers, counted from the exporter spellings in builders.py.
GELU_NODES = {"op": 1, "op_tanh": 1, "erf": 5, "erf_hf": 5, "erf_mul": 5, "tanh": 9, "tanh_hf": 8}
LN_NODES = {"op": 1, "decomposed": 9}


def _float_site(site, x):
    """Independent float64 value of a site from its recorded constants."""
    if site.operator is Operator.SOFTMAX:
        return softmax_ref(x, site.axis)
    if site.operator is Operator.GELU:
        return gelu_tanh(x) if site.approximate == "tanh" else gelu_erf(x)
    return layernorm_ref(x, -1, site.gamma, site.beta, site.epsilon)


@pytest.mark.parametrize("gelu", GELU_STYLES)
@pytest.mark.parametrize("layernorm", ["op", "decomposed"])
def test_encoder_sites(gelu: str, layernorm: str) -> None:
    """Every site found, covering the right nodes, with constants that reproduce
    the float model at the site (checks axis, epsilon, gamma, beta, GELU form)."""
    eps = 1e-5 if layernorm == "op" else 1e-12
    model = bert_encoder(SHAPE, gelu=gelu, layernorm=layernorm, seed=3, eps=eps)
    imp = import_model(model)
    ops = [s.operator.value for s in imp.sites]
    # embeddings LayerNorm, then per layer softmax, LN, GELU, LN
    assert ops == ["layernorm"] + ["softmax", "layernorm", "gelu", "layernorm"] * SHAPE.layers
    assert imp.skipped == {}
    for s in imp.sites:
        if s.operator is Operator.GELU:
            assert len(s.nodes) == GELU_NODES[gelu]
            assert s.approximate == ("tanh" if "tanh" in gelu else "none")
        elif s.operator is Operator.LAYERNORM:
            assert len(s.nodes) == LN_NODES[layernorm]
            assert s.epsilon == pytest.approx(eps, rel=1e-6)
            assert s.gamma.shape == (SHAPE.width,)
            assert s.beta.shape == (SHAPE.width,)
            assert (s.axis, s.trailing) == (-1, True)
        else:
            assert (s.axis, s.trailing, len(s.nodes)) == (-1, False, 1)
    trace = calibrate(imp.model, imp.sites, sample_inputs(SHAPE, seed=5))
    for s in imp.sites:
        x = trace.site_inputs[s.name].astype(np.float64)
        y = trace.site_outputs[s.name].astype(np.float64)
        # float32 model vs float64 formula: a few float32 ulps of the output scale
        # (LayerNorm outputs reach ~4: 4 * 2^-23 ≈ 5e-7; 2e-5 leaves margin for
        # the float32 reductions). A wrong gamma/beta/eps/form is off by >1e-3.
        np.testing.assert_allclose(_float_site(s, x), y, atol=2e-5, rtol=0)


def test_gamma_beta_are_the_model_constants() -> None:
    model = bert_encoder(SHAPE, gelu="erf", layernorm="op", seed=3)
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    imp = import_model(model)
    ln = next(s for s in imp.sites if s.operator is Operator.LAYERNORM)
    node = next(n for n in imp.model.graph.node if n.name == ln.name)
    assert np.array_equal(ln.gamma, inits[node.input[1]].astype(np.float64))
    assert np.array_equal(ln.beta, inits[node.input[2]].astype(np.float64))


def test_classifier_head_tanh_is_not_gelu() -> None:
    imp = import_model(bert_encoder(SHAPE, gelu="tanh", layernorm="op"))
    assert not any("pooler" in n for s in imp.sites for n in s.nodes)


def test_intermediate_used_elsewhere_is_skipped() -> None:
    imp = import_model(erf_gelu_shared_intermediate())
    assert imp.sites == []
    assert imp.skipped == {"erf": "erf pattern has intermediates used outside it"}


def test_wrong_constant_is_not_a_gelu() -> None:
    assert import_model(erf_wrong_constant()).sites == []


@pytest.mark.parametrize(
    ("opset", "attrs", "axis", "trailing"),
    [
        (11, {}, 1, True),
        (11, {"axis": 2}, 2, True),
        (13, {}, -1, False),
        (13, {"axis": 1}, 1, False),
    ],
)
def test_softmax_axis_semantics(opset: int, attrs: dict, axis: int, trailing: bool) -> None:
    imp = import_model(single_node("Softmax", [2, 3, 4], opset, **attrs))
    (s,) = imp.sites
    assert (s.axis, s.trailing) == (axis, trailing)


def test_layernorm_op_axis_and_epsilon() -> None:
    imp = import_model(single_node("LayerNormalization", [2, 3, 4], 17, axis=1, epsilon=0.25))
    (s,) = imp.sites
    assert (s.axis, s.trailing, s.epsilon) == (1, True, 0.25)
    assert s.gamma.shape == (3, 4)


def test_select_sites() -> None:
    imp = import_model(bert_encoder(SHAPE, gelu="erf", layernorm="op"))
    assert [s.operator for s in select_sites(imp.sites, ["softmax"])] == [Operator.SOFTMAX] * 2
    one = imp.sites[3].name
    assert [s.name for s in select_sites(imp.sites, [f"gelu,{one}"])] == [
        s.name for s in imp.sites if s.operator is Operator.GELU or s.name == one
    ]
    with pytest.raises(Exception, match=r"^unknown site selector\(s\) \['relu'\]; use 'all'"):
        select_sites(imp.sites, ["relu"])


@pytest.mark.parametrize("gelu", ["erf", "erf_mul", "tanh_hf"])
def test_constants_from_initializers(gelu: str) -> None:
    """The same patterns with scalar constants as initializers, not Constant nodes."""
    imp = import_model(bert_encoder(SHAPE, gelu=gelu, layernorm="decomposed", scalars="init"))
    assert not any(n.op_type == "Constant" for n in imp.model.graph.node)
    assert [s.pattern for s in imp.sites if s.operator is Operator.GELU] == [
        "tanh" if "tanh" in gelu else "erf"
    ] * SHAPE.layers
    assert len([s for s in imp.sites if s.pattern == "decomposed"]) == 1 + 2 * SHAPE.layers


@pytest.mark.parametrize(
    "name",
    [
        "bert_ts17",
        "gpt2_dynamo18",
        "bert_sdpa_dynamo23",
        "hf/llama_dynamo18",
        "hf/whisper_encoder_ts17",
    ],
)
def test_shape_inference_without_the_weights_equals_onnx(name: str) -> None:
    """graph.infer_shapes (onnx's inference on a copy whose large initializers are
    external-data stubs) gives the model onnx's inference gives, byte for byte, on
    exports of several families (reshape shapes and other small constants kept for the
    data propagation); the copy it hands to onnx holds no large weight, and a copy that
    also dropped the small constants would infer less (the comparison can fail)."""
    from pathlib import Path
    from unittest.mock import patch

    from hwapprox.export import graph

    m = onnx.load(str(Path(__file__).parent / "corpus" / f"{name}.onnx"))
    for i, node in enumerate(m.graph.node):
        node.name = node.name or f"{node.op_type}_{i}"
    want = onnx.shape_inference.infer_shapes(m, data_prop=True).SerializeToString()
    seen = []
    real = onnx.shape_inference.infer_shapes

    def spy(model, **kw):
        seen.append(max((len(t.raw_data) for t in model.graph.initializer), default=0))
        return real(model, **kw)

    mine = onnx.ModelProto()
    mine.CopyFrom(m)
    with patch.object(onnx.shape_inference, "infer_shapes", spy):
        got = graph.infer_shapes(mine)
    assert got.SerializeToString() == want
    assert seen
    assert seen[0] < graph._LIGHT_MIN_BYTES


def test_shape_inference_keeps_the_small_constants_it_propagates() -> None:
    """A Reshape whose target shape is an initializer: graph.infer_shapes infers its
    output shape as onnx does; a copy that also stubbed the small shape tensor would
    not (the comparison can fail)."""
    from unittest.mock import patch

    from onnx import TensorProto, helper, numpy_helper

    from hwapprox.export import graph

    shape = numpy_helper.from_array(np.array([2, 3, 4], np.int64), "shape")
    w = numpy_helper.from_array(np.ones((24, 24), np.float32), "w")  # a large weight
    g = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
            helper.make_node("Reshape", ["h", "shape"], ["y"], name="rs"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 24])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [shape, w],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    want = onnx.shape_inference.infer_shapes(m, data_prop=True).SerializeToString()
    mine = onnx.ModelProto()
    mine.CopyFrom(m)
    got = graph.infer_shapes(mine)
    assert got.SerializeToString() == want
    dims = [d.dim_value for d in got.graph.output[0].type.tensor_type.shape.dim]
    assert dims == [2, 3, 4]
    assert len(got.graph.initializer[1].raw_data) == 24 * 24 * 4  # the weight stays in place
    poor = onnx.ModelProto()
    poor.CopyFrom(m)
    with patch.object(graph, "_LIGHT_MIN_BYTES", 1):
        assert graph.infer_shapes(poor).SerializeToString() != want
