"""Seeded ONNX models for the export tests (single operators, bad models, specs).

The encoder models themselves come from :mod:`hwapprox.export.builders`;
this module adds one-node models, deliberately broken models and the
float-reference spec per site used to check the emulation path.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from hwapprox.approx.base import ApproxSpec, Operator
from hwapprox.export.patterns import Site
from hwapprox.export.refspec import (
    FloatRefGelu,
    FloatRefLayerNorm,
    FloatRefNormaliser,
    FloatRefReluAttention,
    FloatRefSigmoidAttention,
    FloatRefSoftmax,
)


def float_ref_spec(site: Site, in_fmt: str | None = None) -> ApproxSpec:
    """The float-reference spec for a site (wide formats unless ``in_fmt`` is given)."""
    kw = {} if in_fmt is None else {"in_fmt": in_fmt}
    if site.operator is Operator.SOFTMAX:
        if site.kind != "softmax":  # Softmax_1, clipped: the model's constants
            return FloatRefNormaliser(**kw, **site.fields_for_spec())
        return FloatRefSoftmax(**kw)
    if site.operator is Operator.GELU:
        return FloatRefGelu(form="tanh" if site.approximate == "tanh" else "erf", **kw)
    if site.operator is Operator.SIGMOID_ATTENTION:
        return FloatRefSigmoidAttention(bias=site.params["bias"], **kw)
    if site.operator is Operator.RELU_ATTENTION:  # a run-time n: the emulator sets seq_len
        return FloatRefReluAttention(seq_len=site.params.get("seq_len", 1), **kw)
    return FloatRefLayerNorm(eps=site.epsilon, **kw)


def single_node(
    op: str, shape: list[int | str], opset: int, *, seed: int = 0, **attrs: object
) -> onnx.ModelProto:
    """One ``op`` node on a float input ``x`` (LayerNormalization gets seeded Scale/B)."""
    rng = np.random.default_rng(seed)
    inits = []
    inputs = ["x"]
    if op == "LayerNormalization":
        axis = int(attrs.get("axis", -1))  # type: ignore[call-overload]
        norm = list(shape[axis:])
        g = (1 + 0.1 * rng.standard_normal(norm)).astype(np.float32)
        b = (0.1 * rng.standard_normal(norm)).astype(np.float32)
        inits = [numpy_helper.from_array(g, "scale"), numpy_helper.from_array(b, "bias")]
        inputs += ["scale", "bias"]
    node = helper.make_node(op, inputs, ["y"], name=f"{op.lower()}_node", **attrs)
    graph = helper.make_graph(
        [node],
        "single",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", opset)])
    m.ir_version = 8
    return m


def erf_gelu_shared_intermediate() -> onnx.ModelProto:
    """Erf-pattern GELU whose ``Erf`` output is also a graph output (cannot be replaced)."""
    c = {
        "sqrt2": np.array(math.sqrt(2), np.float32),
        "one": np.array(1.0, np.float32),
        "half": np.array(0.5, np.float32),
    }
    nodes = [
        helper.make_node("Div", ["x", "sqrt2"], ["u"], name="div"),
        helper.make_node("Erf", ["u"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="add"),
        helper.make_node("Mul", ["x", "a"], ["m"], name="mul"),
        helper.make_node("Mul", ["m", "half"], ["y"], name="mul2"),
    ]
    graph = helper.make_graph(
        nodes,
        "shared",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8]),
            helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 8]),
        ],
        [numpy_helper.from_array(v, k) for k, v in c.items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 14)])
    m.ir_version = 8
    return m


def erf_wrong_constant() -> onnx.ModelProto:
    """Div by 2 instead of √2 before Erf: not a GELU."""
    m = erf_gelu_shared_intermediate()
    del m.graph.output[1]
    for init in m.graph.initializer:
        if init.name == "sqrt2":
            init.CopyFrom(numpy_helper.from_array(np.array(2.0, np.float32), "sqrt2"))
    return m


def checker_failing() -> onnx.ModelProto:
    """A model whose node reads a tensor nothing produces (the checker rejects it)."""
    node = helper.make_node("Relu", ["nowhere"], ["y"], name="relu")
    graph = helper.make_graph(
        [node],
        "broken",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 14)])
    m.ir_version = 8
    return m
