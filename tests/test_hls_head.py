"""C simulation of hwapprox/head.h, bit-exact with hwapprox.hls.head.DenseHead.model.

Three heads (a token select with LayerNorm and bias, every token with LayerNorm
and no bias, every token without LayerNorm), io_parallel and io_stream, one
harness build.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from cxx_lint import assert_warning_clean

from hwapprox.approx.registry import make_spec
from hwapprox.fixed import FixedFormat
from hwapprox.hls.csim import build_harness, run_harness
from hwapprox.hls.head import DenseHead

pytestmark = pytest.mark.hls

HARNESS = Path(__file__).parent / "cxx" / "hls_head_harness.cpp"
S, D, C = 5, 8, 3
IN = FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>")
CASES = ("token_ln", "all_ln_nobias", "all_plain")
IO = ("io_parallel", "io_stream")


def make_head(case: str) -> DenseHead:
    rng = np.random.default_rng(CASES.index(case))
    wf = FixedFormat.parse("ap_fixed<10,2,AP_RND,AP_SAT>")
    bf = FixedFormat.parse("ap_fixed<12,3,AP_RND,AP_SAT>")
    ln = make_spec("layernorm", "rsqrt_lut", in_fmt=IN, max_n=64) if "ln" in case else None
    g = b = None
    if ln is not None:
        g = ln.gamma_fmt.quantize(1 + rng.normal(0, 0.1, D))
        b = ln.beta_fmt.quantize(rng.normal(0, 0.1, D))
    bias = bf.quantize(rng.normal(0, 0.3, C)) if "nobias" not in case else np.zeros(C, np.int64)
    return DenseHead(
        seq=S, dim=D, token=0 if case.startswith("token") else None, ln=ln, gamma=g, beta=b,
        weight=wf.quantize(rng.normal(0, 0.5, (D, C))), bias=bias, in_fmt=IN, weight_fmt=wf,
        bias_fmt=bf, accum_fmt=FixedFormat.parse("ap_fixed<32,12,AP_TRN,AP_SAT>"),
        out_fmt=FixedFormat.parse("ap_fixed<16,5,AP_RND,AP_SAT>"),
    )  # fmt: skip


def _table() -> tuple[dict, list, list]:
    heads = {c: make_head(c) for c in CASES}
    insts = [i for j, c in enumerate(CASES) for i in heads[c].instances(f"head{j}")]
    rows = [
        (
            str(j + k * len(CASES)),
            "run_head_stream" if io == "io_stream" else "run_head",
            f"head{j}",
        )
        for k, io in enumerate(IO)
        for j in range(len(CASES))
    ]
    return heads, insts, rows


@pytest.fixture(scope="module")
def setup():
    heads, insts, rows = _table()
    return heads, build_harness(HARNESS, insts, rows, name="hls_head")


def test_head_header_is_warning_clean():
    _, insts, rows = _table()
    assert_warning_clean(HARNESS, insts, rows, name="hls_head")


def csim(exe, case: str, head: DenseHead, x: np.ndarray, io: str) -> np.ndarray:
    j = CASES.index(case) + IO.index(io) * len(CASES)
    w = np.concatenate([np.asarray(a).ravel() for a in head.weight_arrays().values()])
    (got,) = run_harness(exe, [[j, *w, x.size, *x.ravel()]], [head.out_fmt])
    return got.reshape(x.shape[0], head.rows, head.n_out)


@pytest.mark.parametrize("io", IO)
@pytest.mark.parametrize("case", CASES)
def test_head_csim_bit_exact(setup, case, io):
    heads, exe = setup
    head = heads[case]
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [IN.quantize(rng.normal(0, 2, (10, S, D))), np.full((1, S, D), IN.max_raw),
         np.zeros((1, S, D), np.int64)]
    )  # fmt: skip
    got = csim(exe, case, head, x, io)
    want = head.model(x)
    assert np.array_equal(got, want), np.argwhere(got != want)[:3]
    assert len(np.unique(want)) > 10


def test_token_select_is_checked_by_csim(setup):
    """The comparison can fail: the token head's C-sim against the same head reading
    token 1 differs (the C++ does select token 0)."""
    heads, exe = setup
    head = heads["token_ln"]
    x = IN.quantize(np.random.default_rng(3).normal(0, 2, (6, S, D)))
    got = csim(exe, "token_ln", head, x, "io_parallel")
    assert np.array_equal(got, head.model(x))
    assert not np.array_equal(got, dataclasses.replace(head, token=1).model(x))


def test_head_model_follows_float():
    """The head's model is close to the float64 head on the dequantised weights."""
    head = make_head("token_ln")
    x = IN.quantize(np.random.default_rng(1).normal(0, 1, (20, S, D)))
    xf = IN.to_float(x)[:, 0:1]
    mu = xf.mean(-1, keepdims=True)
    g, b = head.ln.gamma_fmt.to_float(head.gamma), head.ln.beta_fmt.to_float(head.beta)
    y = (xf - mu) / np.sqrt(xf.var(-1, keepdims=True) + head.ln.eps) * g + b
    ref = y @ head.weight_fmt.to_float(head.weight) + head.bias_fmt.to_float(head.bias)
    got = head.out_fmt.to_float(head.model(x))
    assert np.max(np.abs(got - ref)) < 0.05
    with pytest.raises(Exception, match=r"head token 9 is outside the sequence 0\.\.4"):
        dataclasses.replace(head, token=9)


# -- heads of real exports, through hls4ml with no config -------------------------------
CORPUS = Path(__file__).parent / "corpus"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("file", "io", "note"),
    [
        # GPT-2: ln_f + LM-head MatMul over every token (key mask, causal blocks)
        ("gpt2_ts17.onnx", "io_parallel", "every token, LayerNorm"),
        # ViT: decomposed LayerNorm + CLS Gather + classifier Gemm
        ("vit_ts14.onnx", "io_stream", "token 0, LayerNorm"),
    ],
)
def test_corpus_head_csim_bit_exact(tmp_path, file, io, note):
    import json

    from hwapprox.hls.project import compile_project, convert, csim_check, prepare_model

    entry = next(
        e for e in json.loads((CORPUS / "manifest.json").read_text())["models"] if e["file"] == file
    )
    prep = prepare_model(CORPUS / file, None, inputs=CORPUS / entry["inputs"])
    assert prep.head is not None, prep.notes
    (msg,) = [n for n in prep.notes if n.startswith("dense head converted")]
    assert note in msg
    assert not [n for n in prep.notes if "after the blocks (pooler, head)" in n]
    hm = convert(prep, tmp_path / "prj", io_type=io)
    compile_project(hm, write=False)
    x = np.asarray(prep.samples)
    rep = csim_check(hm, prep, x, compile=False, key_mask=prep.key_mask)
    assert rep.bit_exact, rep
    want = prep.reference(x, prep.key_mask)
    assert want.shape == (len(x), prep.head.rows, prep.head.n_out)
    assert len(np.unique(want)) > 20
    acc = prep.accuracy()
    assert acc is not None
    assert acc["token_cosine_min"] > 0.999, acc
    # the comparison can fail: the blocks without the head give another output
    assert rep.values == want.size != np.asarray(dataclasses.replace(prep, head=None)
                                                 .reference(x, prep.key_mask)).size  # fmt: skip


def _onnx_head(after: str):
    """x [1, 4, 8] -> MatMul W [8, 3] -> ``after`` ("output" or "Tanh") -> y."""
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((D, C), np.float32), "W")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"], name="proj")]
    out = "m"
    if after == "Tanh":
        nodes.append(helper.make_node("Tanh", ["m"], ["t"], name="act"))
        out = "t"
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, D])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 4, C])], [w],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_operatorsetid("", 17)])


def test_match_head_says_why_not():
    from hwapprox.hls.head import match_head

    hm, why = match_head(_onnx_head("output"), "x", [])
    assert hm is not None
    assert (why, hm.n_out, hm.token) == ("", C, None)
    hm, why = match_head(_onnx_head("Tanh"), "x", [])
    assert hm is None
    assert why == "the dense layer 'proj' is followed by 'act' (Tanh), not a graph output"
