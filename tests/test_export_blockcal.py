"""The calibrated block formats of ``hwapprox hls`` with no config
(:mod:`hwapprox.export.blockcal`): the bias format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from hwapprox.export.blockcal import bias_format
from hwapprox.fixed import FixedFormat
from hwapprox.hls.project import prepare_model

CORPUS = Path(__file__).parent / "corpus" / "hf"
MODELS = json.loads((CORPUS / "manifest.json").read_text())["models"]


def _dinov2_spread_biases() -> onnx.ModelProto:
    """The two-block DINOv2 export with the spread of biases a pretrained DINOv2 has: one
    large K bias (+30 on one channel; it moves each query's scores by a constant, which
    the softmax ignores, so the float model's output is the same function) and small
    LayerScale gains (x0.05, so the attention and FFN outputs and their folded biases
    ``bo``, ``b2`` are small)."""
    m = onnx.load(CORPUS / "dinov2_ts17.onnx")
    for t in m.graph.initializer:
        a = numpy_helper.to_array(t).copy()
        if "k_proj.bias" in t.name:
            a[0] += 30.0
        elif "lambda1" in t.name:
            a *= 0.05
        else:
            continue
        t.CopyFrom(numpy_helper.from_array(a.astype(np.float32), t.name))
    return m


def test_bias_format_resolves_the_finest_biased_output() -> None:
    """A large bias sets the integer bits, the finest output the fraction bits (capped by
    the accumulator's), never under 12 bits nor over the accumulator's width."""
    acc = FixedFormat.parse("ap_fixed<32,8,AP_TRN,AP_SAT>")
    outs = [FixedFormat.parse(f"ap_fixed<16,{i}>") for i in (6, 1, 4)]
    f = bias_format(30.0, outs, acc)
    assert (f.int_bits, f.frac_bits) == (6, 15)  # 2^5 > 30; ap_fixed<16,1>'s 15 bits
    assert bias_format(0.3, [outs[0]], acc).width == 12  # 10 fraction bits fit in 12
    f = bias_format(30.0, [FixedFormat.parse("ap_fixed<40,2>")], acc)
    assert f.frac_bits == acc.frac_bits
    assert f.width == 30
    assert bias_format(100.0, [FixedFormat.parse("ap_fixed<16,-20>")], acc).width == 32


def test_spread_biases_keep_the_block_accurate() -> None:
    """With one bias format per block, the old fixed 12 bits sized by the largest bias
    (the K bias of 30: ap_fixed<12,6>, a step of 2^-6) rounded the small LayerScale-folded
    biases coarser than the outputs they land in: per-token cosine 0.99899, max error
    0.0127. The calibrated width resolves the finest biased output: 0.999997, 8e-4."""
    entry = next(e for e in MODELS if e["file"] == "dinov2_ts17.onnx")
    prep = prepare_model(_dinov2_spread_biases(), None, inputs=CORPUS / entry["inputs"])
    for b in prep.blocks:
        fm = b.formats
        assert fm.bias_fmt.int_bits == 6
        finest = min(f.lsb for f in (fm.qkv_fmt, fm.attn_fmt, fm.ffn_fmt, b.gelu.in_fmt))
        assert fm.bias_fmt.lsb <= finest
    acc = prep.accuracy()
    assert acc is not None
    assert acc["token_cosine_min"] > 0.99995
    assert acc["max_abs"] < 0.002
