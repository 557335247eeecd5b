"""ONNX encoder block -> hls4ml project (Vivado, Vitis): compile() + predict() bit-exact.

The expected output is the Python block model (hwapprox.approx.linear + the
nonlinear specs composed in hwapprox.hls.block), never the C++ itself.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hwapprox.approx.registry import make_spec
from hwapprox.hls.emit import cpp_type
from hwapprox.hls.onnx_block import OP_TYPE, encoder_block_onnx, fold_blocks
from hwapprox.hls.project import POISON_PRECISION, Prepared, convert, csim_check, prepare_model

pytestmark = [pytest.mark.hls, pytest.mark.slow]

S, D, H, F = 4, 8, 2, 16
CONFIGS = {
    "Vivado": {
        "defaults": {
            "softmax": {"method": "online"},
            "gelu": {"method": "pwl"},
            "layernorm": {"method": "rsqrt_lut", "max_n": 64, "eps": 1e-5},
        },
    },
    "Vitis": {
        "defaults": {
            "softmax": {"method": "ibert", "in_fmt": "ap_fixed<16,6>"},
            "gelu": {"method": "edgemoe"},
            "layernorm": {"method": "ibert"},
        },
        "sites": {"layernorm_56": {"out_fmt": "ap_fixed<12,4,AP_RND,AP_SAT>"}},
        "hls": {
            "in_fmt": "ap_fixed<12,4,AP_RND,AP_SAT>",
            "weight_fmt": "ap_fixed<8,2,AP_RND,AP_SAT>",
            "accum_fmt": "ap_fixed<24,8,AP_RND,AP_SAT>",
        },
    },
}


def _inputs(prep: Prepared, seed: int) -> np.ndarray:
    fmt = prep.blocks[0].formats.in_fmt
    rng = np.random.default_rng(seed)
    return np.concatenate(
        [
            fmt.quantize(rng.normal(0, 1, (8, S, D))),
            fmt.quantize(rng.normal(0, 3, (2, S, D))),
            np.full((1, S, D), fmt.max_raw),
            np.full((1, S, D), fmt.min_raw),
        ]
    )


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def built(request, tmp_path_factory):
    backend = request.param
    prep = prepare_model(encoder_block_onnx(S, D, H, F, gelu="erf"), CONFIGS[backend])
    out = tmp_path_factory.mktemp(f"prj_{backend}")
    model = convert(prep, out, backend=backend)
    model.compile()
    return backend, prep, model, out


def test_predict_is_bit_exact(built):
    _backend, prep, model, _ = built
    x = _inputs(prep, 1)
    rep = csim_check(model, prep, x, compile=False)
    assert rep.values == x.size
    assert rep.bit_exact, rep
    want = prep.reference(x)
    assert len(np.unique(want)) > 50  # a non-degenerate output


def test_other_spec_is_detected(built):
    """The comparison can fail: the same C-sim against a block model with another GELU."""
    _backend, prep, model, _ = built
    other = "lut" if prep.blocks[0].gelu.method != "lut" else "pwl"
    extra = {"index_bits": 10} if other == "lut" else {}
    g = make_spec(
        "gelu",
        other,
        in_fmt=prep.blocks[0].gelu.in_fmt,
        out_fmt=prep.blocks[0].gelu.out_fmt,
        **extra,
    )
    wrong = Prepared(prep.model, [dataclasses.replace(prep.blocks[0], gelu=g)], prep.site_names)
    rep = csim_check(model, wrong, _inputs(prep, 1), compile=False)
    assert not rep.bit_exact


def test_generated_config_is_explicit(built):
    _backend, prep, _, out = built
    fw = out / "firmware"
    params = (fw / "parameters.h").read_text()
    call = (fw / "myproject.cpp").read_text()
    assert "hwapprox::encoder_block<input_t, result_t, config" in call
    # the poisoned model default precision is used nowhere
    text = params + (fw / "defines.h").read_text() + call
    assert POISON_PRECISION not in text
    blk = prep.blocks[0]
    assert f"typedef {cpp_type(blk.formats.accum_fmt)} accum_t;" in params
    assert f"typedef {cpp_type(blk.softmax.out_fmt)} out_t;" in params
    for sub in ("qkv", "qk", "pv", "o", "ffn1", "ffn2", "softmax", "gelu", "ln1", "ln2"):
        assert f"typedef config2_{sub} {sub}_cfg;" in params
    assert (fw / "nnet_utils" / "encoder.h").is_file()


def test_fold_replaces_the_block_by_one_node():
    folded, matches = fold_blocks(encoder_block_onnx(S, D, H, F, layers=2, gelu="op"))
    assert [n.op_type for n in folded.graph.node] == [OP_TYPE, OP_TYPE]
    assert not folded.graph.initializer  # weights are tensor attributes
    assert [m.heads for m in matches] == [H, H]
    assert matches[0].score_scale == pytest.approx(1 / np.sqrt(D // H))
    assert [d.dim_value for d in folded.graph.input[0].type.tensor_type.shape.dim] == [1, S, D]


@pytest.mark.parametrize(
    ("gelu", "ln"),
    [("erf_mul", "decomposed"), ("tanh", "op"), ("op_tanh", "op"), ("erf_hf", "decomposed")],
)
def test_fold_exporter_styles(gelu, ln):
    folded, (m,) = fold_blocks(encoder_block_onnx(S, D, H, F, gelu=gelu, layernorm=ln))
    assert [n.op_type for n in folded.graph.node] == [OP_TYPE]
    node = folded.graph.node[0]
    attrs = {a.name: a for a in node.attribute}
    assert attrs["gelu_form"].s.decode() == ("tanh" if "tanh" in gelu else "erf")
    assert attrs["eps1"].f == pytest.approx(1e-12)
    assert m.weights["w1"].shape == (D, F)
    assert m.ln2.gamma is not None


def test_float_site_is_refused():
    cfg = {"defaults": {"softmax": {"method": "online"}, "gelu": {"method": "pwl"}}}
    with pytest.raises(Exception, match=r"resolve to float; an HLS block needs an approximation"):
        prepare_model(encoder_block_onnx(S, D, H, F), cfg)
