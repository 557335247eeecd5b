"""Attention emulated as one fused site (hwapprox.export.fused, validate --attention fused)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hwapprox.approx.attention import AttentionRowSpec
from hwapprox.approx.softmax import OnlineSoftmax
from hwapprox.export.errors import ExportError
from hwapprox.export.fused import apply_fused, fuse_site
from hwapprox.export.graph import GraphIndex
from hwapprox.export.validate import import_model, validate

CORPUS = Path(__file__).parent / "corpus"
MODELS = {e["file"]: e for e in json.loads((CORPUS / "manifest.json").read_text())["models"]}


@pytest.mark.parametrize(
    "name",
    # plain MatMul P·V; torch sdpa's Where(IsNaN(p), 0, p) guard; opset-23 Attention
    # decomposed at load; GPT-2 causal + padding; the [S, D] export without batch axis
    ["bert_ts14.onnx", "bert_sdpa_ts14.onnx", "bert_sdpa_dynamo23.onnx", "gpt2_ts17.onnx",
     "encoder_nobatch_ts17.onnx"],
)  # fmt: skip
def test_every_corpus_softmax_fuses_with_its_pv(name):
    imp = import_model(CORPUS / name)
    idx = GraphIndex(imp.model)
    sms = [s for s in imp.sites if str(s.operator) == "softmax"]
    assert sms
    for s in sms:
        f, why = fuse_site(idx, s)
        assert f is not None, why
        mm = next(n for n in imp.model.graph.node if n.name == f.nodes[-1])
        assert mm.op_type == "MatMul"
        assert (f.output, f.fused_v) == (mm.output[0], mm.input[1])
        assert f.name == s.name
        assert f.mask is s.mask


def test_apply_fused_is_the_row_model_per_head():
    """Scores [B, H, S, N] and V [B, H, N, dh] (MatMul broadcasting): every (b, h, i)
    row equals AttentionRowSpec.model_scores on the same quantised row."""
    sp = AttentionRowSpec(
        v_fmt="ap_fixed<12,3,AP_RND,AP_SAT>",
        out_fmt="ap_fixed<14,3,AP_RND,AP_SAT>",
        softmax=OnlineSoftmax(in_fmt="ap_fixed<14,5,AP_RND,AP_SAT>"),
    )
    rng = np.random.default_rng(0)
    x = rng.normal(0, 2, (2, 3, 5, 7))
    v = rng.normal(0, 1, (2, 3, 7, 4))
    mask = rng.random((2, 1, 1, 7)) < 0.3  # padding mask broadcast over heads and queries
    site = import_model(CORPUS / "bert_ts14.onnx").sites[0]
    y = apply_fused(site, sp, x, v, mask)
    assert y.shape == (2, 3, 5, 4)
    mk = np.broadcast_to(mask, x.shape)
    for b in range(2):
        for h in range(3):
            s = sp.score_fmt.quantize(np.where(mk[b, h], 0.0, x[b, h]))
            want = sp.model_scores(s, sp.v_fmt.quantize(v[b, h]), mk[b, h])
            assert np.array_equal(sp.out_fmt.quantize(y[b, h]), want)
    with pytest.raises(ExportError, match=r"V \[2, 3, 6, 4\] does not match 7 keys"):
        apply_fused(site, sp, x, v[:, :, :6], mask)


def test_validate_fused_runs_another_datapath_close_to_float():
    name = "gpt2_ts14.onnx"
    r = validate(CORPUS / name, inputs=CORPUS / MODELS[name]["inputs"], attention="fused")
    f = r.fused
    assert f is not None
    assert f["fused_sites"] == 2
    assert all(v["fused"] for v in f["sites"].values())
    (out,) = r.end_to_end["outputs"]
    two, fused = r.end_to_end["outputs"][out], f["end_to_end"]["outputs"][out]
    assert fused["max_abs"] != two["max_abs"]  # the fused emulation did run
    assert fused["cosine_min"] > 0.9999
    assert "fused_attention" in r.as_dict()


def test_fused_needs_the_online_softmax_and_says_why_not():
    name = "bert_ts14.onnx"
    inputs = CORPUS / MODELS[name]["inputs"]
    with pytest.raises(ExportError, match=r"fused attention needs the online softmax"):
        validate(CORPUS / name, inputs=inputs, attention="fused", methods={"softmax": "ibert"})
    r = validate(CORPUS / name, inputs=inputs, attention="fused", methods={"softmax": "float"})
    assert r.fused["end_to_end"] is None
    assert any("no approximated softmax site feeds a P·V MatMul" in w for w in r.warnings)
    with pytest.raises(ExportError, match=r"attention='flash': use two_pass or fused"):
        validate(CORPUS / name, inputs=inputs, attention="flash")
