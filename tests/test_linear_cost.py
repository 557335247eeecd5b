"""The linear layers' DSP/BRAM estimate of the board fit (export/linear_cost.py)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from hwapprox.export.linear_cost import linear_estimate, reuse_to_fit


def _model() -> object:
    w1 = numpy_helper.from_array(np.ones((8, 16), np.float32), "w1")
    w2 = numpy_helper.from_array(np.ones((16, 300), np.float32), "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Gemm", ["h2", "w2"], ["y"]),
        helper.make_node("MatMul", ["h", "h_t"], ["s"]),  # activation x activation
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8]),
            helper.make_tensor_value_info("h2", TensorProto.FLOAT, [4, 16]),
            helper.make_tensor_value_info("h_t", TensorProto.FLOAT, [16, 4]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 300]),
            helper.make_tensor_value_info("s", TensorProto.FLOAT, [4, 4]),
        ],
        initializer=[w1, w2],
    )
    return helper.make_model(g)


def test_counts_and_formula() -> None:
    e = linear_estimate(_model(), reuse=64, weight_bits=16)
    assert (e.layers, e.weights, e.act_matmuls) == (2, 8 * 16 + 16 * 300, 1)
    # ceil(128/64) + ceil(4800/64) DSPs; ceil(128*16/36864) + ceil(4800*16/36864) BRAM36
    assert e.dsp == 2 + 75
    assert e.bram == 1 + 3
    assert "ESTIMATE" in e.formula
    wide = linear_estimate(_model(), reuse=64, weight_bits=24)
    assert wide.dsp == 2 * e.dsp  # > 18-bit operands: two DSP48 per multiplier


def test_default_reuse_is_one_multiplier_per_output() -> None:
    e = linear_estimate(_model())  # ReuseFactor = K per layer: N DSPs each
    assert e.dsp == 16 + 300
    assert "ReuseFactor K" in e.formula


def test_bad_reuse() -> None:
    with pytest.raises(ValueError, match="reuse must be >= 1"):
        linear_estimate(_model(), reuse=0)


def test_reuse_to_fit_is_the_smallest_reuse_within_the_budget() -> None:
    m = _model()
    for budget in (1000, 100, 37, 10, 2):
        e = reuse_to_fit(m, budget)
        assert e is not None
        assert e.dsp <= budget
        if e.reuse > 1:  # one less reuse would not fit
            assert linear_estimate(m, reuse=e.reuse - 1).dsp > budget
    assert reuse_to_fit(m, 1) is None  # two layers need at least two multipliers
    assert reuse_to_fit(m, -5) is None
