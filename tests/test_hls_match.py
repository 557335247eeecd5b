"""The encoder-block matcher on real torch exports (tests/corpus), and HLS without a config."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hwapprox.cli import cli
from hwapprox.export.blockmatch import (
    _check_float,
    _Evaluator,
    _NoMatch,
    float_block,
    match_blocks,
)
from hwapprox.export.graph import load_model

CORPUS = Path(__file__).parent / "corpus"
MODELS = json.loads((CORPUS / "manifest.json").read_text())["models"]
#: exports whose attention normaliser is elementwise (sigmoid / ReLU attention): no block
ELEMENTWISE = [e for e in MODELS if e.get("normaliser") in ("sigmoid", "relu", "relumul")]
BLOCKS = [e for e in MODELS if e not in ELEMENTWISE]


def _feeds(entry: dict) -> dict[str, np.ndarray]:
    with np.load(CORPUS / entry["inputs"]) as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize("entry", BLOCKS, ids=[e["file"] for e in BLOCKS])
def test_every_corpus_export_matches_its_blocks(entry: dict) -> None:
    """Two blocks per model, with the structure the architecture implies, each
    re-computed in float64 equal to the graph on the real padded batch (Softmax_1 and
    clipped softmax blocks with the model's constants)."""
    m = load_model(CORPUS / entry["file"])
    errors: dict[str, str] = {}
    blocks = match_blocks(m, _feeds(entry), errors=errors)
    assert errors == {}
    assert len(blocks) == 2
    style = entry["style"]
    for b in blocks:
        assert b.prenorm == (style in ("vit", "gpt2", "gpt2c"))
        assert b.causal == style.startswith("gpt2")
        assert (b.key_mask is not None) == (entry["mask"] != "none")
        d = b.weights["wo"].shape[1]
        assert b.score_scale == pytest.approx(1.0 / np.sqrt(d // b.heads), rel=1e-6)
    assert blocks[1].input == blocks[0].output


def test_softmax_variant_blocks_carry_the_model_constants() -> None:
    """A Softmax_1 / clipped block re-computed with a plain softmax misses the graph."""
    for name in ("bert_softmax1_ts17.onnx", "bert_clipped_dynamo18.onnx"):
        entry = next(e for e in MODELS if e["file"] == name)
        m = load_model(CORPUS / entry["file"])
        ev = _Evaluator(m, _feeds(entry))
        b = match_blocks(m, _feeds(entry))[0]
        assert b.softmax.kind in ("softmax1", "clipped_softmax")
        _check_float(b, ev)
        plain = dataclasses.replace(b.softmax, kind="softmax", params={})
        with pytest.raises(_NoMatch, match="does not reproduce the graph"):
            _check_float(dataclasses.replace(b, softmax=plain), ev)


@pytest.mark.parametrize("entry", ELEMENTWISE, ids=[e["file"] for e in ELEMENTWISE])
def test_sigmoid_and_relu_attention_exports_have_no_softmax_block(entry: dict) -> None:
    m = load_model(CORPUS / entry["file"])
    errors: dict[str, str] = {}
    assert match_blocks(m, _feeds(entry), errors=errors) == []
    assert errors == {}


def test_hls_on_a_relu_attention_export_names_the_normaliser(tmp_path) -> None:
    entry = next(e for e in ELEMENTWISE if e["normaliser"] == "relu")
    res = CliRunner().invoke(
        cli, ["hls", str(CORPUS / entry["file"]), "--inputs", str(CORPUS / entry["inputs"]),
              "-o", str(tmp_path / "prj")],
    )  # fmt: skip
    assert res.exit_code == 1
    assert "Its attention normaliser is relu_attention" in res.output
    assert "x66" in res.output or "node(s); first" in res.output  # summarised, not listed
    assert "Traceback" not in res.output


def test_float_check_can_fail() -> None:
    """A match whose flags or weights are wrong does not reproduce the graph."""
    entry = next(e for e in MODELS if e["file"] == "gpt2_ts17.onnx")
    m = load_model(CORPUS / entry["file"])
    ev = _Evaluator(m, _feeds(entry))
    b = match_blocks(m, _feeds(entry))[0]
    _check_float(b, ev)
    for wrong in (
        dataclasses.replace(b, causal=False),
        dataclasses.replace(b, prenorm=False),
        dataclasses.replace(b, score_scale=b.score_scale * 1.01),
        dataclasses.replace(b, weights={**b.weights, "bv": b.weights["bv"] + 0.01}),
    ):
        with pytest.raises(_NoMatch, match="does not reproduce the graph"):
            _check_float(wrong, ev)


def test_float_block_is_the_graph_on_the_example() -> None:
    from hwapprox.export import example

    m = load_model(example.model_path())
    with np.load(example.inputs_path()) as z:
        feeds = {k: z[k] for k in z.files}
    ev = _Evaluator(m, feeds)
    for b in match_blocks(m, feeds):
        v = ev([b.input, b.output])
        got = float_block(b, np.asarray(v[b.input], np.float64))
        assert np.abs(got - v[b.output]).max() < 1e-4


def test_no_block_names_the_first_node_that_breaks_the_pattern() -> None:
    """A softmax whose scores come from a non-MatMul op: the error names that node."""
    entry = next(e for e in MODELS if e["file"] == "bert_ts17.onnx")
    m = load_model(CORPUS / entry["file"])
    # Replace the first scores MatMul by an Add of the same operands: no block there.
    b = match_blocks(m, _feeds(entry))[0]
    sm = m.graph.node[[n.name for n in m.graph.node].index(b.softmax.name)]
    gi_prod = {o: n for n in m.graph.node for o in n.output}
    t = sm.input[0]
    while gi_prod[t].op_type != "MatMul":
        t = gi_prod[t].input[0]
    gi_prod[t].op_type = "Add"
    errors: dict[str, str] = {}
    blocks = match_blocks(m, None, errors=errors)
    assert len(blocks) == 1
    (msg,) = errors.values()
    assert f"node '{gi_prod[t].name}' (Add) before softmax" in msg
    assert "expected the scores MatMul" in msg


@pytest.mark.hls
def test_hls_csim_without_config_on_a_torch_export(tmp_path) -> None:
    """`hwapprox hls csim MODEL --inputs X` with no config: default methods, calibrated
    formats, [S, D] input without a batch axis; bit-exact on the real block inputs."""
    entry = next(e for e in MODELS if e["file"] == "encoder_nobatch_ts17.onnx")
    res = CliRunner().invoke(
        cli,
        [
            "hls",
            str(CORPUS / entry["file"]),
            "--inputs",
            str(CORPUS / entry["inputs"]),
            "-o",
            str(tmp_path / "prj"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "C-sim data: 1 real block input(s)" in res.output
    assert "bit-exact" in res.output
    cos = re.search(r"per-token cosine min ([0-9.]+)", res.output)
    assert cos is not None, res.output
    assert float(cos.group(1)) >= 0.99


#: one export per style: post-LN + key mask, masked_fill, pre-LN, pre-LN + causal + mask
CSIM_STYLES = [
    "bert_ts14.onnx",
    "distilbert_dynamo18.onnx",
    "vit_ts17.onnx",
    "gpt2c_ts17.onnx",
    "bert_softmax1_ts17.onnx",  # Softmax_1 and clipped softmax blocks (issue 15)
    "bert_clipped_dynamo18.onnx",
]


@pytest.mark.hls
@pytest.mark.parametrize("name", CSIM_STYLES)
def test_hls_csim_no_config_per_style(name: str, tmp_path) -> None:
    """No config, each exporter style: hls4ml C-sim = the Python block models on the
    model's own padded batch (key masks included) plus an all-zero and an all-max sample."""
    from hwapprox.hls.project import convert, csim_check, prepare_model

    entry = next(e for e in MODELS if e["file"] == name)
    prep = prepare_model(CORPUS / entry["file"], None, inputs=CORPUS / entry["inputs"])
    hmodel = convert(prep, tmp_path / "prj")
    s, d = prep.item_shape
    fmt = prep.in_fmt
    x = np.concatenate(
        [np.asarray(prep.samples), np.zeros((1, s, d), np.int64), np.full((1, s, d), fmt.max_raw)]
    )
    km = None
    if prep.masked:
        km = np.concatenate([np.asarray(prep.key_mask), np.ones((2, s), bool)])
        assert not km.all()  # the batch is padded: masked keys are exercised
    rep = csim_check(hmodel, prep, x, key_mask=km)
    assert rep.bit_exact, rep
    # the block chain's output, or the dense head's (GPT-2 LM head, ViT classifier)
    rows, n_out = (s, d) if prep.head is None else (prep.head.rows, prep.head.n_out)
    assert rep.values == len(x) * rows * n_out
    acc = prep.accuracy()
    assert acc is not None
    # Softmax_1 / clipped blocks: 0.99982 / 0.99987 measured (the bert weights, 16-bit)
    assert acc["token_cosine_min"] > (0.9999 if entry.get("normaliser") is None else 0.9995)
