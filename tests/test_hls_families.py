"""The HLS block matcher on the transformer families as ``transformers`` writes them
(tests/corpus/hf, TorchScript and dynamo exports; scripts/make_corpus_hf.py).

* the families whose blocks the HLS encoder block computes are matched, two blocks
  each, with the kind the architecture implies (written here from the model
  definitions: post-/pre-LN, causal, key padding), and each match re-computed in
  float64 reproduces the graph (``match_blocks`` checks it; a LayerScale left out
  does not);
* BEiT's relative position bias is the block's score bias, GPT-Neo's local window its
  window, Llama's rotary Q/K and SiLU-gated FFN its rope and gated stages (a block
  the matcher cannot read is refused per softmax site, naming the first node);
* ``hwapprox hls csim`` with no config is bit-exact on a LayerScale (DINOv2), a
  causal decoder (GPT-2), a score-bias (BEiT), a local-window (GPT-Neo) and the two
  CLIP (quick_gelu FFN; the text one causal and padded) exports, OPT (ReLU FFN) and
  Llama (RMSNorm, rotary Q/K, gated FFN; also with ONNX RMSNormalization).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hwapprox.cli import cli
from hwapprox.export.blockmatch import _check_float, _Evaluator, _NoMatch, match_blocks
from hwapprox.export.graph import GraphIndex, load_model

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
    # RMSNorm sites in the LayerNorm places, rotary Q/K, a SiLU-gated FFN
    "llama": (True, True, True),
    "llama_rmsop": (True, True, True),
}
#: families with a gated FFN and rotary Q/K
LLAMA = {"llama", "llama_rmsop"}


def _feeds(entry: dict) -> dict[str, np.ndarray]:
    with np.load(CORPUS / entry["inputs"]) as z:
        return {k: z[k] for k in z.files}


def test_every_family_is_classified() -> None:
    assert set(MATCHED) == {e["family"] for e in MODELS}


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
        fam = entry["family"]
        assert b.ffn_act == ("relu" if fam == "opt" else "gated" if fam in LLAMA else "gelu")
        assert (b.gelu is None) == (b.ffn_act == "relu")
        assert b.rope == (fam in LLAMA)
        assert (b.ln1.kind == b.ln2.kind == "rmsnorm") == (fam in LLAMA)
    assert [b.window for b in blocks] == ([0, 4] if entry["family"] == "gptneo_local" else [0, 0])
    assert blocks[1].input == blocks[0].output


@pytest.mark.parametrize(
    "file", ["llama_ts17.onnx", "llama_dynamo18.onnx", "llama_rmsop_dynamo23.onnx"]
)
def test_llama_rotary_and_gated_ffn_are_block_stages(file: str) -> None:
    """Llama rotates Q and K by constant tables (positions 0..S-1) and gates its FFN
    (SiLU(x·Wg) ⊙ (x·Wu)): the match carries the tables and the up projection, checked
    in float64; without the rotation, or read as an ungated FFN, the same match does not
    reproduce the graph."""
    entry = next(e for e in MODELS if e["file"] == file)
    m = load_model(CORPUS / file)
    ev = _Evaluator(m, _feeds(entry))
    s = entry["input_shapes"]["input_ids"][-1]
    for b in match_blocks(m, _feeds(entry)):
        assert (b.gelu.kind, b.gelu.gelu_form) == ("silu", "silu")
        dh = b.weights["wq"].shape[1] // b.heads
        assert b.weights["rc"].shape == b.weights["rs"].shape == (s, dh)
        assert np.allclose(b.weights["rc"] ** 2 + b.weights["rs"] ** 2, 1.0)
        assert b.weights["wu"].shape == b.weights["w1"].shape
        with pytest.raises(_NoMatch, match="does not reproduce the graph"):
            _check_float(dataclasses.replace(b, rope=False), ev)
        with pytest.raises(_NoMatch, match="does not reproduce the graph"):
            _check_float(dataclasses.replace(b, ffn_act="gelu"), ev)


def _swap_concats(file: str, nodes: list[str], out: Path) -> Path:
    """The export with these Concats' two inputs swapped (concat(t1, -t2): not
    rotate_half), written to ``out``."""
    import onnx

    m = onnx.load(CORPUS / file)
    for cat in (n for n in m.graph.node if n.name in nodes):
        cat.input[0], cat.input[1] = cat.input[1], cat.input[0]
    onnx.save(m, out)
    return out


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
        "opt_ts17.onnx", "llama_ts17.onnx", "llama_rmsop_dynamo23.onnx",
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


def test_hls_on_a_refused_block_names_the_node_and_writes_nothing(tmp_path) -> None:
    """A Llama export whose query rotations are no rotate_half (the Concats' halves
    swapped): one paragraph naming the softmax site and the rotation's Add first; the
    output directory is not created. With only the first layer's swapped, the second
    block is built and a note names the site that heads no block and why."""
    entry = next(e for e in MODELS if e["file"] == "llama_ts17.onnx")
    cats = ["/model/layers.0/self_attn/Concat", "/model/layers.1/self_attn/Concat"]
    out = tmp_path / "prj"
    half = _swap_concats(entry["file"], cats[:1], tmp_path / "half.onnx")
    args = ["--inputs", str(CORPUS / entry["inputs"]), "-o", str(out)]
    res = CliRunner().invoke(cli, ["hls", "csim", str(half), *args])
    assert res.exit_code == 0, res.output
    assert (
        "note: softmax /model/layers.0/self_attn/Softmax heads no encoder block the HLS "
        "design builds (it stays in the float model): node '/model/layers.0/self_attn/Add'"
    ) in res.output
    bad = _swap_concats(entry["file"], cats, tmp_path / "bad.onnx")
    out = tmp_path / "prj2"
    args[-1] = str(out)
    res = CliRunner().invoke(cli, ["hls", "csim", str(bad), *args])
    assert res.exit_code == 1
    msg = res.output.split("Error: ", 1)[1]
    assert msg.startswith("no encoder block the HLS flow builds was found: around softmax ")
    assert "node '/model/layers.0/self_attn/Add' (Add) on the query path" in msg
    assert "not a rotary embedding" in msg
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
