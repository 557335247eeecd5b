"""The HLS block matcher on the transformer families as ``transformers`` writes them
(tests/corpus/hf, TorchScript and dynamo exports; scripts/make_corpus_hf.py).

* the families whose blocks the HLS encoder block computes are matched, two blocks
  each, with the kind the architecture implies (written here from the model
  definitions: post-/pre-LN, causal, key padding), and each match re-computed in
  float64 reproduces the graph (``match_blocks`` checks it; a LayerScale left out
  does not);
* the others are refused per softmax site with the first thing the block cannot
  compute (rotary Q/K, no GELU FFN); BEiT's relative position bias is the block's
  score bias and GPT-Neo's local window its window;
* ``hwapprox hls csim`` with no config is bit-exact on a LayerScale (DINOv2), a
  causal decoder (GPT-2), a score-bias (BEiT), a local-window (GPT-Neo) and the two
  CLIP (quick_gelu FFN; the text one causal and padded) exports and OPT (ReLU FFN).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hwapprox.cli import cli
from hwapprox.export.graph import GraphIndex, load_model
from hwapprox.hls.onnx_block import _check_float, _Evaluator, _NoMatch, match_blocks

CORPUS = Path(__file__).parent / "corpus" / "hf"
MODELS = json.loads((CORPUS / "manifest.json").read_text())["models"]

#: family -> (pre-LN, causal, key-padded) of its blocks
MATCHED = {
    "bert": (False, False, True),
    "roberta": (False, False, True),
    "distilbert": (False, False, True),
    "albert": (False, False, True),
    "electra": (False, False, True),
    "vit": (True, False, False),
    "deit": (True, False, False),
    "dinov2": (True, False, False),
    "beit": (True, False, False),  # + LayerScale and a relative position bias on the scores
    "clip_vision": (True, False, False),  # quick_gelu FFN: a GELU site of form quick
    "clip_text": (True, True, True),
    "gpt2": (True, True, True),
    "opt": (True, True, True),  # ReLU FFN: exact at the block's hid_fmt
    "gptneo": (True, True, True),  # local window 256 > sequence: causal
    "gptneo_local": (True, True, True),  # its second layer: a local window of 4
    "whisper_encoder": (True, False, False),
}
#: family -> what the refusal of its first refused softmax site says
REFUSED = {
    "llama": "is a rotary position embedding",
    "llama_rmsop": "is a rotary position embedding",
}


def _feeds(entry: dict) -> dict[str, np.ndarray]:
    with np.load(CORPUS / entry["inputs"]) as z:
        return {k: z[k] for k in z.files}


def test_every_family_is_classified() -> None:
    assert set(MATCHED) | set(REFUSED) == {e["family"] for e in MODELS}


@pytest.mark.parametrize(
    "entry", [e for e in MODELS if e["family"] in MATCHED], ids=lambda e: e["file"]
)
def test_families_the_block_computes_are_matched(entry: dict) -> None:
    m = load_model(CORPUS / entry["file"])
    errors: dict[str, str] = {}
    blocks = match_blocks(m, _feeds(entry), errors=errors)
    assert errors == {}
    assert len(blocks) == 2
    prenorm, causal, masked = MATCHED[entry["family"]]
    for b in blocks:
        assert b.prenorm == prenorm
        assert b.causal == causal
        assert (b.key_mask == "attention_mask") if masked else (b.key_mask is None)
        assert b.score_bias == (entry["family"] == "beit")
        assert b.ffn_act == ("relu" if entry["family"] == "opt" else "gelu")
        assert (b.gelu is None) == (b.ffn_act == "relu")
    assert [b.window for b in blocks] == ([0, 4] if entry["family"] == "gptneo_local" else [0, 0])
    assert blocks[1].input == blocks[0].output


@pytest.mark.parametrize(
    "entry", [e for e in MODELS if e["family"] in REFUSED], ids=lambda e: e["file"]
)
def test_other_families_are_refused_naming_the_cause(entry: dict) -> None:
    m = load_model(CORPUS / entry["file"])
    errors: dict[str, str] = {}
    match_blocks(m, _feeds(entry), errors=errors)
    assert errors, "a refused family must report why"
    names = {n.name for n in m.graph.node}
    assert set(errors) <= names  # keyed by the softmax site (its node)
    first = next(iter(errors.values()))
    assert REFUSED[entry["family"]] in " ".join(errors.values()), errors
    assert "'" in first  # names a node or tensor


@pytest.mark.parametrize("file", ["dinov2_ts17.onnx", "dinov2_dynamo18.onnx"])
def test_layerscale_is_folded_and_checked(file: str) -> None:
    """DINOv2 scales both branches by a learned vector before the residual add: the
    match folds it into the projection before it; the same match without it does not
    reproduce the graph."""
    entry = next(e for e in MODELS if e["file"] == file)
    m = load_model(CORPUS / file)
    gi = GraphIndex(m)
    ev = _Evaluator(m, _feeds(entry))
    b = match_blocks(m, _feeds(entry))[0]
    _check_float(b, ev)
    # the first block's LayerScale vectors, as the model holds them
    lam = {
        w: np.asarray(gi.const(f"model.encoder.layer.0.layer_scale{i}.lambda1"), np.float64)
        for w, i in (("wo", 1), ("w2", 2))
    }
    assert all(np.ptp(v) > 0.1 for v in lam.values())  # perturbed: not one value
    for w, bias in (("wo", "bo"), ("w2", "b2")):
        unscaled = {**b.weights, w: b.weights[w] / lam[w], bias: b.weights[bias] / lam[w]}
        with pytest.raises(_NoMatch, match="does not reproduce the graph"):
            _check_float(dataclasses.replace(b, weights=unscaled), ev)


@pytest.mark.parametrize("file", ["beit_ts17.onnx", "beit_dynamo18.onnx"])
def test_relative_position_bias_is_the_score_bias(file: str) -> None:
    """BEiT adds a per-head table (gathered from its relative position parameters) to
    the scores: the match carries it as the block's score bias, [H·S·S], different per
    head; without it the match does not reproduce the graph."""
    entry = next(e for e in MODELS if e["file"] == file)
    m = load_model(CORPUS / file)
    ev = _Evaluator(m, _feeds(entry))
    for b in match_blocks(m, _feeds(entry)):
        s = entry["input_shapes"]["pixel_values"][-1] // 8
        sb = b.weights["sb"].reshape(b.heads, s * s + 1, s * s + 1)
        assert not np.allclose(sb[0], sb[1])
        _check_float(b, ev)
        with pytest.raises(_NoMatch, match="does not reproduce the graph"):
            _check_float(dataclasses.replace(b, score_bias=False), ev)


@pytest.mark.hls
@pytest.mark.parametrize(
    "file",
    [
        "dinov2_ts17.onnx", "gpt2_dynamo18.onnx", "beit_dynamo18.onnx",
        "gptneo_local_ts17.onnx", "clip_vision_ts17.onnx", "clip_text_dynamo18.onnx",
        "opt_ts17.onnx",
    ],
)  # fmt: skip
def test_hls_csim_no_config_bit_exact(file: str, tmp_path) -> None:
    entry = next(e for e in MODELS if e["file"] == file)
    res = CliRunner().invoke(
        cli,
        ["hls", "csim", str(CORPUS / file), "--inputs", str(CORPUS / entry["inputs"]),
         "-o", str(tmp_path / "prj")],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "C-sim data: 2 real block input(s)" in res.output
    assert "bit-exact" in res.output


def test_hls_on_a_refused_family_names_the_node_and_writes_nothing(tmp_path) -> None:
    """Llama's rotary Q/K: one paragraph naming the softmax site and the Add of the
    rotary embedding first; the output directory is not created."""
    entry = next(e for e in MODELS if e["file"] == "llama_ts17.onnx")
    out = tmp_path / "prj"
    res = CliRunner().invoke(
        cli,
        ["hls", "csim", str(CORPUS / entry["file"]), "--inputs", str(CORPUS / entry["inputs"]),
         "-o", str(out)],
    )  # fmt: skip
    assert res.exit_code == 1
    msg = res.output.split("Error: ", 1)[1]
    assert msg.startswith("no encoder block the HLS flow builds was found: around softmax ")
    assert "node '/model/layers.0/self_attn/Add' (Add) on the query path" in msg
    assert "rotary position embedding" in msg
    assert "Traceback" not in res.output
    assert len(msg.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("file", ["clip_vision_ts17.onnx", "clip_text_dynamo18.onnx"])
def test_clip_quick_gelu_is_the_blocks_gelu_site(file: str) -> None:
    """CLIP's FFN activation x·sigmoid(1.702x) is each block's GELU site (kind
    quick_gelu, form quick); the float re-computation uses quick_gelu: read as the erf
    GELU, the same match does not reproduce the graph."""
    entry = next(e for e in MODELS if e["file"] == file)
    m = load_model(CORPUS / file)
    ev = _Evaluator(m, _feeds(entry))
    for b in match_blocks(m, _feeds(entry)):
        assert (b.gelu.kind, b.gelu.gelu_form) == ("quick_gelu", "quick")
        erf_site = dataclasses.replace(b.gelu, kind="gelu")
        assert erf_site.gelu_form == "erf"
        with pytest.raises(_NoMatch, match="does not reproduce the graph"):
            _check_float(dataclasses.replace(b, gelu=erf_site), ev)


@pytest.mark.parametrize("file", ["opt_ts17.onnx", "opt_dynamo18.onnx"])
def test_opt_relu_ffn_is_a_block_stage(file: str) -> None:
    """OPT's FFN activation is a Relu: the block's ReLU stage (no site; ffn_act relu),
    checked in float64; read as a GELU FFN the same match does not reproduce the graph."""
    entry = next(e for e in MODELS if e["file"] == file)
    m = load_model(CORPUS / file)
    ev = _Evaluator(m, _feeds(entry))
    for b in match_blocks(m, _feeds(entry)):
        assert b.ffn_act == "relu"
        assert "gelu" not in b.sites
        assert "hid" in b.tensors
        with pytest.raises(_NoMatch, match="does not reproduce the graph"):
            _check_float(dataclasses.replace(b, ffn_act="gelu", gelu=b.ln1), ev)


def test_hls_config_on_a_quick_gelu_site() -> None:
    """An operator default naming I-BERT's GELU (an erf polynomial) gives CLIP's
    quick_gelu sites the first method that computes them (as validate does); a site
    entry naming it is refused, naming the site and the methods to use."""
    from hwapprox.approx.base import SpecError
    from hwapprox.hls.project import prepare_model

    entry = next(e for e in MODELS if e["file"] == "clip_vision_ts17.onnx")
    path, inputs = CORPUS / entry["file"], CORPUS / entry["inputs"]
    cfg: dict = {"defaults": {"softmax": {"method": "online"}, "gelu": {"method": "ibert"},
                              "layernorm": {"method": "rsqrt_lut"}}}  # fmt: skip
    prep = prepare_model(path, cfg, inputs=inputs)
    assert [(b.gelu.method, b.gelu.form) for b in prep.blocks] == [("edgemoe", "quick")] * 2
    site = prep.site_names[0]["gelu"]
    cfg["sites"] = {site: {"method": "ibert"}}
    with pytest.raises(SpecError, match=f"^site {site} \\(quick_gelu\\): .*use method edgemoe"):
        prepare_model(path, cfg, inputs=inputs)
