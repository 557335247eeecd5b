"""C simulation of hwapprox/encoder.h, bit-exact with hwapprox.hls.block.EncoderBlock.model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hwapprox.approx.registry import make_spec
from hwapprox.hls.block import WEIGHT_NAMES, BlockFormats, EncoderBlock
from hwapprox.hls.csim import build_harness, run_harness

pytestmark = pytest.mark.hls

HARNESS = Path(__file__).parent / "cxx" / "hls_block_harness.cpp"
S, D, H, F = 4, 8, 2, 16


def float_weights(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {
        "wq": (D, D),
        "wk": (D, D),
        "wv": (D, D),
        "wo": (D, D),
        "w1": (D, F),
        "w2": (F, D),
        "bq": (D,),
        "bk": (D,),
        "bv": (D,),
        "bo": (D,),
        "b1": (F,),
        "b2": (D,),
    }
    w = {k: rng.normal(0, 1 / np.sqrt(v[0]) if len(v) == 2 else 0.1, v) for k, v in shapes.items()}
    w |= {
        "g1": 1 + rng.normal(0, 0.1, D),
        "g2": 1 + rng.normal(0, 0.1, D),
        "be1": rng.normal(0, 0.1, D),
        "be2": rng.normal(0, 0.1, D),
    }
    return w


def blocks() -> list[EncoderBlock]:
    ln = make_spec("layernorm", "rsqrt_lut", max_n=64)
    b0 = EncoderBlock.from_float(
        float_weights(0),
        seq=S,
        heads=H,
        softmax=make_spec("softmax", "online"),
        gelu=make_spec("gelu", "pwl"),
        ln1=ln,
        ln2=ln,
        score_scale=1 / np.sqrt(D // H),
    )
    fm = BlockFormats(
        in_fmt="ap_fixed<12,4,AP_RND,AP_SAT>",
        weight_fmt="ap_fixed<8,2,AP_RND,AP_SAT>",
        accum_fmt="ap_fixed<24,8,AP_RND,AP_SAT>",
        qkv_fmt="ap_fixed<12,4,AP_RND,AP_SAT>",
    )
    b1 = EncoderBlock.from_float(
        float_weights(1),
        seq=S,
        heads=H,
        softmax=make_spec("softmax", "ibert", in_fmt="ap_fixed<16,6>"),
        gelu=make_spec("gelu", "ibert"),
        ln1=make_spec("layernorm", "ibert"),
        ln2=make_spec("layernorm", "ibert", out_fmt="ap_fixed<12,4,AP_RND,AP_SAT>"),
        formats=fm,
        score_scale=1 / np.sqrt(D // H),
    )
    return [b0, b1]


@pytest.fixture(scope="module")
def setup():
    bl = blocks()
    insts = [i for j, b in enumerate(bl) for i in b.instances(f"blk{j}")]
    rows = [(str(j), "run_block", f"blk{j}") for j in range(len(bl))]
    return bl, build_harness(HARNESS, insts, rows, name="hls_block")


@pytest.mark.parametrize("j", [0, 1])
def test_block_csim_bit_exact(setup, j):
    bl, exe = setup
    blk = bl[j]
    rng = np.random.default_rng(500 + j)
    fmt = blk.formats.in_fmt
    x = np.concatenate(
        [
            fmt.quantize(rng.normal(0, 1, (6, S, D))),
            fmt.quantize(rng.normal(0, 4, (2, S, D))),
            np.full((1, S, D), fmt.max_raw),
            np.zeros((1, S, D), np.int64),
        ]
    )
    (got,) = run_harness(exe, [[j, x.size, *x.ravel()]], [blk.ln2.out_fmt])
    want = blk.model(x).ravel()
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} of {want.size} differ"
    assert len(set(want.tolist())) > 20  # a non-degenerate output


def test_weights_are_validated():
    b = blocks()[0]
    w = dict(b.weights)
    w["wq"] = w["wq"][:, :3]
    with pytest.raises(Exception, match=r"weight wq has shape \(8, 3\), expected \(8, 8\)"):
        EncoderBlock(S, D, H, F, w, b.softmax, b.gelu, b.ln1, b.ln2, b.formats)
    assert set(WEIGHT_NAMES) == set(b.weights)
