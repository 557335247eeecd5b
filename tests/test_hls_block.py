"""C simulation of hwapprox/encoder.h, bit-exact with hwapprox.approx.block.EncoderBlock.model.

Post-LN and pre-LN blocks, causal and key-masked, at two format sets, in one
harness build (tests/conftest.py keeps this module on one xdist worker).
"""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
from pathlib import Path

import numpy as np
import pytest

from hwapprox._cxx import cache_dir, hls4ml_include_dirs
from hwapprox.approx.base import SpecError
from hwapprox.approx.block import WEIGHT_NAMES, BlockFormats, EncoderBlock
from hwapprox.approx.registry import make_spec
from hwapprox.hls.block import block_instances
from hwapprox.hls.csim import build_harness, library_digest, run_harness
from hwapprox.hls.emit import INCLUDE_DIR, header_digest, render_header, write_header

pytestmark = pytest.mark.hls

HARNESS = Path(__file__).parent / "cxx" / "hls_block_harness.cpp"
S, D, H, F = 4, 8, 2, 16

#: block kinds: EncoderBlock flags
KINDS: dict[str, dict[str, bool | str]] = {
    "post": {},
    "pre": {"prenorm": True},
    "post_masked": {"masked": True},
    "pre_masked": {"prenorm": True, "masked": True},
    "pre_causal": {"prenorm": True, "causal": True},
    "pre_causal_masked": {"prenorm": True, "causal": True, "masked": True},
    # the fused attention schedule (needs the online softmax: format set a only)
    "post_fused": {"attention": "fused"},
    "pre_causal_masked_fused": {
        "prenorm": True, "causal": True, "masked": True, "attention": "fused",
    },
    # a constant per-head table added to the scores (BEiT's relative position bias)
    "pre_bias": {"prenorm": True, "score_bias": True},
    "post_masked_bias_fused": {"masked": True, "score_bias": True, "attention": "fused"},
    # a causal local window of 2 keys (GPT-Neo's local layers, sliding-window attention)
    "pre_causal_window": {"prenorm": True, "causal": True, "window": 2},
    "pre_causal_masked_window_fused": {
        "prenorm": True, "causal": True, "masked": True, "window": 2, "attention": "fused",
    },
    # a ReLU FFN (OPT): max(H, 0) in hid_fmt, no GELU unit
    "pre_causal_masked_relu": {"prenorm": True, "causal": True, "masked": True, "ffn_act": "relu"},
    "post_relu": {"ffn_act": "relu"},
    # Llama: rotary Q/K, a SiLU-gated FFN (SiLU(Y·Wg) ⊙ (Y·Wu)), RMSNorm in set a
    "pre_causal_masked_llama": {
        "prenorm": True, "causal": True, "masked": True, "rope": True, "ffn_act": "gated",
    },
    "pre_causal_llama_fused": {
        "prenorm": True, "causal": True, "rope": True, "ffn_act": "gated", "attention": "fused",
    },
}  # fmt: skip
FUSED = {k for k, v in KINDS.items() if v.get("attention") == "fused"}
FORMAT_SETS = ("a", "b")
CASES = [f"{f}_{k}" for f in FORMAT_SETS for k in KINDS if f == "a" or k not in FUSED]


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


def llama_weights(seed: int) -> dict[str, np.ndarray]:
    """The up projection and the rotary tables of positions 0..S-1 (base 10000, as
    Llama's rotary embedding: angle(s, j) = s·10000^(-2(j mod dh/2)/dh))."""
    rng = np.random.default_rng(seed)
    dh = D // H
    inv = 10000.0 ** (-np.arange(0, dh, 2) / dh)
    ang = np.arange(S)[:, None] * np.concatenate([inv, inv])[None, :]
    return {
        "wu": rng.normal(0, 1 / np.sqrt(D), (D, F)),
        "bu": rng.normal(0, 0.1, F),
        "rc": np.cos(ang),
        "rs": np.sin(ang),
    }


def make_block(fset: str, **kind: bool) -> EncoderBlock:
    """Format set ``a``: spec defaults (online/pwl/rsqrt_lut), a wider residual stream.
    ``b``: I-BERT units, narrow formats, LayerNorm inputs that round and saturate
    (pre-LN: the casts x -> ln1.in_fmt and R1 -> ln2.in_fmt are lossy)."""
    # fused blocks: a truncating accumulator with the context's 10 fraction bits, so that
    # the fused datapath's codes differ from the two-pass ones (16 fraction bits mostly
    # round to the same context codes at S = 4)
    fused_acc = {"attn_acc_fmt": "ap_fixed<20,10,AP_TRN,AP_SAT>"} if kind.get("attention") else {}
    sb = {}
    if kind.get("score_bias"):  # a per-head table of about the scores' own size
        sb = {"sb": np.random.default_rng(7).normal(0, 1.0, (H, S, S))}
    relu = kind.get("ffn_act") == "relu"
    gated = kind.get("ffn_act") == "gated"
    if gated:
        sb |= llama_weights(3)
    if fset == "a":
        ln = (
            make_spec("layernorm", "rmsnorm", max_n=64)
            if gated
            else make_spec("layernorm", "rsqrt_lut", max_n=64)
        )
        act = make_spec("gelu", "pwl", form="silu", lo=-16.0, hi=16.0, segments=16)
        return EncoderBlock.from_float(
            float_weights(0) | sb,
            seq=S,
            heads=H,
            softmax=make_spec("softmax", "online"),
            gelu=None if relu else act if gated else make_spec("gelu", "pwl"),
            ln1=ln,
            ln2=ln,
            formats=BlockFormats(res_fmt="ap_fixed<18,7,AP_RND,AP_SAT>", **fused_acc),
            score_scale=1 / np.sqrt(D // H),
            **kind,
        )
    fm = BlockFormats(
        in_fmt="ap_fixed<12,4,AP_RND,AP_SAT>",
        weight_fmt="ap_fixed<8,2,AP_RND,AP_SAT>",
        accum_fmt="ap_fixed<24,8,AP_RND,AP_SAT>",
        qkv_fmt="ap_fixed<12,4,AP_RND,AP_SAT>",
        res_fmt="ap_fixed<14,5,AP_RND,AP_SAT>",
        out_fmt="ap_fixed<12,4,AP_RND,AP_SAT>",
        hid_fmt="ap_fixed<8,2,AP_TRN,AP_SAT>",  # H saturates and truncates (ReLU blocks)
    )
    return EncoderBlock.from_float(
        float_weights(1) | sb,
        seq=S,
        heads=H,
        softmax=make_spec("softmax", "ibert", in_fmt="ap_fixed<16,6>"),
        gelu=None
        if relu
        else make_spec("gelu", "edgemoe", form="silu", table_size=513)
        if gated
        else make_spec("gelu", "ibert"),
        ln1=make_spec("layernorm", "ibert", in_fmt="ap_fixed<11,3,AP_RND,AP_SAT>"),
        ln2=make_spec(
            "layernorm",
            "ibert",
            in_fmt="ap_fixed<12,4,AP_RND,AP_SAT>",
            out_fmt="ap_fixed<12,4,AP_RND,AP_SAT>",
        ),
        formats=fm,
        score_scale=1 / np.sqrt(D // H),
        **kind,
    )


def case_block(case: str) -> EncoderBlock:
    fset, kind = case.split("_", 1)
    return make_block(fset, **KINDS[kind])


#: key masks (True = real token): none padded; right padding (BERT) down to one
#: real token; left padding (GPT-2 batches: with causal, the first query rows see
#: no real key at all); non-contiguous; every key padded (all rows fully masked)
KEY_MASKS = np.array(
    [
        [1, 1, 1, 1],
        [1, 1, 1, 0],
        [1, 1, 0, 0],
        [1, 0, 0, 0],
        [0, 0, 1, 1],
        [0, 0, 0, 1],
        [1, 0, 1, 0],
        [0, 1, 1, 1],
        [1, 0, 0, 0],
        [0, 0, 0, 0],
    ],
    dtype=bool,
)


def inputs(blk: EncoderBlock, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Raw ``in_fmt`` codes [16, S, D] (incl. max and zero codes) and, for masked
    blocks, key masks [16, S]: the fixed set above plus random padding lengths."""
    rng = np.random.default_rng(seed)
    fmt = blk.formats.in_fmt
    x = np.concatenate(
        [
            fmt.quantize(rng.normal(0, 1, (12, S, D))),
            fmt.quantize(rng.normal(0, 4, (2, S, D))),
            np.full((1, S, D), fmt.max_raw),
            np.zeros((1, S, D), np.int64),
        ]
    )
    if not blk.masked:
        return x, None
    n_real = rng.integers(1, S + 1, 6)
    left = rng.integers(0, 2, 6).astype(bool)
    extra = np.array(
        [
            np.arange(S) >= S - n if lf else np.arange(S) < n
            for n, lf in zip(n_real, left, strict=True)
        ]
    )
    km = np.concatenate([KEY_MASKS, extra])
    assert km.shape == (x.shape[0], S)
    return x, km


IO_TYPES = ("io_parallel", "io_stream")


def _harness_table() -> tuple[dict[str, EncoderBlock], list, list[tuple[str, str, str]]]:
    """Instance ``blk{j}`` per case; id ``j`` runs it io_parallel, ``j + len(CASES)``
    io_stream (``encoder_block_stream``)."""
    bl = {c: case_block(c) for c in CASES}
    insts = [i for j, c in enumerate(CASES) for i in block_instances(bl[c], f"blk{j}")]
    rows = []
    for k, io in enumerate(IO_TYPES):
        fn = "run_block_stream" if io == "io_stream" else "run_block"
        rows += [
            (str(j + k * len(CASES)), fn + "_masked" * bl[c].masked, f"blk{j}")
            for j, c in enumerate(CASES)
        ]
    return bl, insts, rows


@pytest.fixture(scope="module")
def setup():
    """One harness for every case (12 block instances, io_parallel and io_stream, one
    g++ build)."""
    bl, insts, rows = _harness_table()
    ids = {c: j for j, c in enumerate(CASES)}
    return bl, ids, build_harness(HARNESS, insts, rows, name="hls_block")


def test_encoder_header_is_warning_clean():
    """encoder.h with every block kind instantiated: g++ -Wall -Wextra -Werror (syntax
    only; a stamp per content skips the rerun)."""
    _, insts, rows = _harness_table()
    header = render_header("HWAPPROX_INSTANCES_H", insts, xmacro=rows)
    gen = cache_dir() / "hls_gen" / header_digest(header)
    write_header(gen / "hwapprox_instances.h", header)
    cmd = [
        "g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
        "-Wno-unknown-pragmas", "-Wno-unused-label", f"-I{INCLUDE_DIR}", f"-I{HARNESS.parent}",
        f"-I{gen}", *(f"-isystem{d}" for d in hls4ml_include_dirs()), str(HARNESS),
    ]  # fmt: skip
    key = hashlib.sha256(
        "\0".join([*cmd, HARNESS.read_text(), library_digest(HARNESS.parent)]).encode()
    ).hexdigest()[:16]
    stamp = cache_dir() / "cxx" / f"hls_block_lint-{key}.ok"
    if stamp.exists():
        return
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-6000:]
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text("clean\n")


def csim(
    exe, j: int, blk: EncoderBlock, x: np.ndarray, km: np.ndarray | None, io: str = "io_parallel"
) -> np.ndarray:
    """Raw block outputs [B, S, D] of harness instance ``j`` (the block's raw weights
    first, then the inputs)."""
    j += IO_TYPES.index(io) * len(CASES)
    weights = np.concatenate([np.asarray(blk.weights[n]).ravel() for n in WEIGHT_NAMES])
    if km is None:
        rec = [j, *weights, x.size, *x.ravel()]
    else:
        per = [
            np.concatenate([xb.ravel(), kb.astype(np.int64)]) for xb, kb in zip(x, km, strict=True)
        ]
        rec = [j, *weights, x.shape[0], *np.concatenate(per)]
    (got,) = run_harness(exe, [rec], [blk.out_fmt])
    return got.reshape(x.shape)


@pytest.mark.parametrize("io", IO_TYPES)
@pytest.mark.parametrize("case", CASES)
def test_block_csim_bit_exact(setup, case, io):
    bl, ids, exe = setup
    blk = bl[case]
    x, km = inputs(blk, 500 + CASES.index(case))
    got = csim(exe, ids[case], blk, x, km, io)
    want = blk.model(x, key_mask=km)
    bad = np.argwhere(got != want)
    assert bad.size == 0, f"{len(bad)} of {want.size} differ, first at {tuple(bad[0])}"
    assert len(np.unique(want)) > 20  # a non-degenerate output


@pytest.mark.parametrize("case", ["a_pre_bias", "a_post_masked_bias_fused", "b_pre_bias"])
def test_csim_adds_the_score_bias(setup, case):
    """The comparison can fail: the same C-sim output against the block model with the
    score bias zeroed differs (the C++ does add the table, in both schedules)."""
    bl, ids, exe = setup
    blk = bl[case]
    x, km = inputs(blk, 11)
    got = csim(exe, ids[case], blk, x, km)
    assert np.array_equal(got, blk.model(x, key_mask=km))
    zero = dataclasses.replace(blk, weights={**blk.weights, "sb": 0 * blk.weights["sb"]})
    assert not np.array_equal(got, zero.model(x, key_mask=km))


@pytest.mark.parametrize("case", ["a_pre_causal_window", "a_pre_causal_masked_window_fused"])
def test_csim_follows_the_window(setup, case):
    """The comparison can fail: the same C-sim output against the block model without
    the window (causal only) differs."""
    bl, ids, exe = setup
    blk = bl[case]
    x, km = inputs(blk, 13)
    got = csim(exe, ids[case], blk, x, km)
    assert np.array_equal(got, blk.model(x, key_mask=km))
    assert not np.array_equal(got, dataclasses.replace(blk, window=0).model(x, key_mask=km))


def test_relu_ffn_block() -> None:
    """ffn_act relu: no GELU spec, the FFN hidden layer in hid_fmt, max(H, 0) exact."""
    blk = make_block("b", ffn_act="relu")
    st = blk.stages()
    assert st["ffn1"].out_fmt == st["ffn2"].a_fmt == blk.formats.hid_fmt
    assert "relu FFN" in blk.kind
    insts = {i.name for i in block_instances(blk, "blk")}
    assert "blk_gelu" not in insts
    x, _ = inputs(blk, 0)
    y1 = blk._ffn(x[0], st)
    h = st["ffn1"].model(x[0], blk.weights["w1"], blk.weights["b1"])
    assert (h < 0).any()
    assert np.array_equal(
        y1, st["ffn2"].model(np.maximum(h, 0), blk.weights["w2"], blk.weights["b2"])
    )
    with pytest.raises(SpecError, match="ffn_act='relu' takes no gelu spec"):
        dataclasses.replace(blk, gelu=make_spec("gelu", "pwl"))
    with pytest.raises(SpecError, match="ffn_act='swish': use one of gelu, relu"):
        dataclasses.replace(blk, ffn_act="swish")


def test_window_needs_causal() -> None:
    with pytest.raises(SpecError, match="window=2 needs causal=True"):
        make_block("a", window=2)


@pytest.mark.parametrize("case", ["a_pre_causal_masked", "b_post_masked"])
def test_csim_follows_the_mask(setup, case):
    """The comparison can fail: the same C-sim output against the block model with
    every key real and no causal mask differs (the C++ does apply the mask)."""
    bl, ids, exe = setup
    blk = bl[case]
    x, km = inputs(blk, 7)
    got = csim(exe, ids[case], blk, x, km)
    plain = dataclasses.replace(blk, causal=False, masked=False)
    assert np.array_equal(got, blk.model(x, key_mask=km))
    assert not np.array_equal(got, plain.model(x))
    padded = np.flatnonzero(~km.all(axis=1))
    assert not np.array_equal(got[padded], plain.model(x[padded]))


def test_prenorm_config_and_stages():
    pre, post = make_block("b", prenorm=True), make_block("b")
    fm = pre.formats
    st = pre.stages()
    assert st["qkv"].a_fmt == pre.ln1.out_fmt
    assert st["ffn1"].a_fmt == pre.ln2.out_fmt
    assert (st["add1"].a_fmt, st["add1"].b_fmt, st["add1"].out_fmt) == (
        fm.in_fmt, fm.attn_fmt, fm.res_fmt,
    )  # fmt: skip
    assert (st["add2"].a_fmt, st["add2"].out_fmt) == (fm.res_fmt, fm.out_fmt)
    assert pre.out_fmt == fm.out_fmt
    assert post.out_fmt == post.ln2.out_fmt
    st = post.stages()
    assert st["qkv"].a_fmt == fm.in_fmt
    assert st["add2"].out_fmt == post.ln2.in_fmt
    blk = make_block("a", prenorm=True, causal=True, masked=True)
    (inst,) = [i for i in block_instances(blk, "t") if i.name == "t"]
    assert {k: inst.consts[k] for k in ("prenorm", "causal", "masked")} == {
        "prenorm": 1, "causal": 1, "masked": 1,
    }  # fmt: skip
    assert inst.types["out_t"] == blk.formats.out_fmt
    assert "pre-LN, causal, key-masked" in inst.comment


def _float_block(blk: EncoderBlock, x: np.ndarray, km: np.ndarray | None) -> np.ndarray:
    """float64 block on the dequantised weights: exact softmax/GELU/LayerNorm."""
    from math import erf

    wf = blk.weight_formats()
    w = {n: wf[n].to_float(blk.weights[n]) for n in WEIGHT_NAMES}

    def ln(t, g, b):
        mu = t.mean(-1, keepdims=True)
        return (t - mu) / np.sqrt(t.var(-1, keepdims=True) + 1e-5) * g + b

    def attn(a):
        q, k, v = (a @ w[f"w{n}"] + w[f"b{n}"] for n in "qkv")

        def sp(t):
            return t.reshape(S, H, D // H).transpose(1, 0, 2)

        sc = sp(q) @ sp(k).transpose(0, 2, 1)
        m = blk.score_mask(km)
        p = blk.softmax.reference(sc, axis=-1, mask=None if m is None else m[None])
        return (p @ sp(v)).transpose(1, 0, 2).reshape(S, D) @ w["wo"] + w["bo"]

    def ffn(y):
        h = y @ w["w1"] + w["b1"]
        return (0.5 * h * (1 + np.vectorize(erf)(h / np.sqrt(2)))) @ w["w2"] + w["b2"]

    if blk.prenorm:
        r1 = x + attn(ln(x, w["g1"], w["be1"]))
        return r1 + ffn(ln(r1, w["g2"], w["be2"]))
    y1 = ln(x + attn(x), w["g1"], w["be1"])
    return ln(y1 + ffn(y1), w["g2"], w["be2"])


@pytest.mark.parametrize("kind", ["post", "pre", "post_masked", "pre_causal_masked"])
def test_model_follows_the_float_block(kind):
    """The fixed-point model computes the stated maths: close to the float64 block of
    its own kind, far from the block of the other order / without the mask."""
    blk = make_block("a", **KINDS[kind])
    x, km = inputs(blk, 11)
    x = x[:12]  # the normal(0, 1) inputs
    km = None if km is None else np.concatenate([km[1:8], km[10:15]])
    got = blk.out_fmt.to_float(blk.model(x, key_mask=km))
    other = dataclasses.replace(blk, prenorm=not blk.prenorm, masked=False, causal=False)

    def rel(b, m):
        ref = np.stack([_float_block(b, blk.formats.in_fmt.to_float(xb), None if m is None
                                     else m[i]) for i, xb in enumerate(x)])  # fmt: skip
        return np.sqrt(np.mean((got - ref) ** 2) / np.mean(ref**2))

    assert rel(blk, km) < 0.03
    assert rel(other, None) > 0.2
    if blk.masked:
        assert rel(dataclasses.replace(blk, masked=False, causal=False), None) > 0.2


def test_masks_hide_what_they_should():
    """Key padding: a padded token's content reaches no other row. Causal: token p
    reaches rows >= p only. An all-real key mask is the unmasked block, bit for bit."""
    blk = make_block("a", prenorm=True, causal=True, masked=True)
    x, _ = inputs(blk, 3)
    x = x[:4]
    km = np.array([[1, 1, 0, 1], [1, 1, 1, 0], [0, 1, 1, 1], [1, 1, 1, 1]], bool)
    y = blk.model(x, key_mask=km)
    x2 = x.copy()
    x2[:, 2] = x[::-1, 2]  # change token 2 of every sample
    y2 = blk.model(x2, key_mask=km)
    changed = np.any(y2 != y, axis=2)  # [B, S]
    assert not changed[0, [0, 1, 3]].any()  # padded token 2: no other row sees it
    assert not changed[:, :2].any()  # causal: rows 0, 1 never see token 2
    assert changed[1:, 2:].any(axis=1).all()  # real token 2 reaches rows 2..3
    plain = dataclasses.replace(blk, masked=False)
    assert np.array_equal(blk.model(x, key_mask=np.ones((4, S), bool)), plain.model(x))
    assert np.array_equal(blk.model(x, key_mask=np.ones(S, bool)), plain.model(x))


def test_key_mask_is_checked():
    masked, plain = make_block("a", masked=True), make_block("a")
    x, _ = inputs(plain, 0)
    with pytest.raises(Exception, match=r"^this block is masked: model\(\) needs key_mask, bool "
                                        r"\[4\] \(or \[B, 4\]\), True = real token$"):  # fmt: skip
        masked.model(x)
    with pytest.raises(Exception, match=r"^key_mask given to a block without a key mask"):
        plain.model(x, key_mask=np.ones((x.shape[0], S), bool))
    with pytest.raises(Exception, match=r"^key_mask must be a bool array .* got dtype int64"):
        masked.model(x, key_mask=np.ones((x.shape[0], S), np.int64))
    with pytest.raises(Exception, match=r"^key_mask must be \[16, 4\] or \[4\], got \[16, 3\]$"):
        masked.model(x, key_mask=np.ones((x.shape[0], 3), bool))
    with pytest.raises(Exception, match=r"^EncoderBlock.causal must be a bool, got 2$"):
        dataclasses.replace(plain, causal=2)


def test_weights_are_validated():
    b = make_block("a")
    w = dict(b.weights)
    w["wq"] = w["wq"][:, :3]
    with pytest.raises(Exception, match=r"weight wq has shape \(8, 3\), expected \(8, 8\)"):
        EncoderBlock(S, D, H, F, w, b.softmax, b.gelu, b.ln1, b.ln2, b.formats)
    assert set(WEIGHT_NAMES) == set(b.weights)


def test_fused_schedule_is_another_datapath_close_to_float():
    """attention="fused" changes the codes (it is not the two-pass datapath renamed) and
    stays as close to the float64 block; it needs the online softmax."""
    fused = make_block("a", prenorm=True, attention="fused")  # the truncating accumulator
    two = dataclasses.replace(fused, attention="two_pass")
    x, _ = inputs(fused, 13)
    x = x[:12]
    yf, y2 = fused.model(x), two.model(x)
    assert not np.array_equal(yf, y2)
    assert np.abs(yf - y2).max() <= 8  # a few LSB (rounding), not another function
    ref = np.stack([_float_block(fused, fused.formats.in_fmt.to_float(xb), None) for xb in x])
    got = fused.out_fmt.to_float(yf)
    assert np.sqrt(np.mean((got - ref) ** 2) / np.mean(ref**2)) < 0.03
    assert "fused attention" in fused.kind
    with pytest.raises(Exception, match=r"fused attention needs the online softmax"):
        make_block("b", attention="fused")
    with pytest.raises(Exception, match=r"EncoderBlock.attention='flash': use one of two_pass"):
        dataclasses.replace(fused, attention="flash")


@pytest.mark.parametrize("case", [c for c in CASES if c.endswith("_fused")])
def test_csim_runs_the_fused_schedule(setup, case):
    """The comparison can fail: the fused block's C-sim differs from the same block's
    two-pass model (so the C++ did take the fused path)."""
    bl, ids, exe = setup
    blk = bl[case]
    x, km = inputs(blk, 21)
    got = csim(exe, ids[case], blk, x, km)
    assert np.array_equal(got, blk.model(x, key_mask=km))
    assert not np.array_equal(got, dataclasses.replace(blk, attention="two_pass").model(x, km))


@pytest.mark.parametrize("case", ["a_pre_causal_masked_llama", "b_pre_causal_masked_llama"])
def test_csim_rotates_and_gates(setup, case):
    """The comparison can fail: the same C-sim output against the block model with
    identity rotary tables (cos 1, sin 0) or with the up projection's bias shifted by one LSB (the
    gate reads wu/bu) differs."""
    bl, ids, exe = setup
    blk = bl[case]
    x, km = inputs(blk, 17)
    got = csim(exe, ids[case], blk, x, km)
    assert np.array_equal(got, blk.model(x, key_mask=km))
    one = blk.formats.rope_fmt.quantize(np.ones_like(blk.weights["rc"], dtype=float))
    still = {**blk.weights, "rc": one, "rs": 0 * blk.weights["rs"]}  # the identity rotation
    assert not np.array_equal(got, dataclasses.replace(blk, weights=still).model(x, key_mask=km))
    bu = blk.weights["bu"] + 1
    other = dataclasses.replace(blk, weights={**blk.weights, "bu": bu})
    assert not np.array_equal(got, other.model(x, key_mask=km))
