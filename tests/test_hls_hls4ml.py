"""ONNX encoder block -> hls4ml project (Vivado, Vitis): compile() + predict() bit-exact.

The expected output is the Python block model (hwapprox.approx.linear + the
nonlinear specs composed in hwapprox.approx.block), never the C++ itself.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil

import numpy as np
import pytest

from hwapprox._cxx import cache_dir
from hwapprox.approx.block import WEIGHT_NAMES, BlockFormats
from hwapprox.approx.registry import make_spec
from hwapprox.export.blockmatch import OP_TYPE, encoder_block_onnx, fold_blocks
from hwapprox.fixed import FixedFormat
from hwapprox.hls.emit import INCLUDE_DIR, cpp_type
from hwapprox.hls.hls4ml_ext import MASK_INPUT, block_from_node, mask_layer_config, predict_raw
from hwapprox.hls.project import (
    CSIM_OPT,
    POISON_PRECISION,
    Prepared,
    _project_digest,
    compile_project,
    convert,
    csim_check,
    prepare_model,
)

pytestmark = [pytest.mark.hls, pytest.mark.slow]

S, D, H, F = 4, 8, 2, 16
CONFIGS = {
    "Vivado": {  # two chained blocks: block input format = LayerNorm output format
        "defaults": {
            "softmax": {"method": "online"},
            "gelu": {"method": "pwl"},
            "layernorm": {"method": "rsqrt_lut", "max_n": 64, "eps": 1e-5},
        },
        "hls": {"in_fmt": "ap_fixed<16,4,AP_RND,AP_SAT>"},
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


# one project per backend and IOType, shared by its tests on one xdist worker
# (tests/conftest.py); the Vivado config runs io_parallel and io_stream
BUILDS = [("Vitis", "io_parallel"), ("Vivado", "io_parallel"), ("Vivado", "io_stream")]


@pytest.fixture(scope="module", params=BUILDS, ids=[f"{b}-{io}" for b, io in BUILDS])
def built(request, tmp_path_factory):
    backend, io = request.param
    layers = 2 if backend == "Vivado" else 1
    prep = prepare_model(
        encoder_block_onnx(S, D, H, F, layers=layers, gelu="erf"), CONFIGS[backend]
    )
    assert len(prep.blocks) == layers
    out = tmp_path_factory.mktemp(f"prj_{backend}_{io}")
    model = convert(prep, out, backend=backend, io_type=io)
    compile_project(model)  # the path the CLI takes (hls4ml's own compile(): masked_built)
    return backend, prep, model, out


def test_predict_is_bit_exact(built):
    _backend, prep, model, _ = built
    x = _inputs(prep, 1)
    rep = csim_check(model, prep, x, compile=False)
    assert rep.values == x.size
    assert rep.bit_exact, rep
    want = prep.reference(x)
    assert len(np.unique(want)) > 50  # a non-degenerate output


def test_library_is_shared_between_projects(built, tmp_path):
    """The same model converted into another directory reuses the cached C-sim
    library (no g++ run: the cached file is untouched) and gives the same outputs;
    another weight value is another library."""
    backend, prep, model, out = built
    lib = compile_project(model)  # already built by the fixture: a cache hit
    entry = cache_dir() / "hls4ml_lib" / _project_digest(out, CSIM_OPT)
    assert (entry / "lib.so").read_bytes() == lib.read_bytes()
    stamp = (entry / "lib.so").stat().st_mtime_ns
    other = convert(
        prep, tmp_path / "again", backend=backend, io_type=model.config.get_config_value("IOType")
    )
    lib2 = compile_project(other)
    assert lib2.parent.parent == tmp_path / "again"
    assert (entry / "lib.so").stat().st_mtime_ns == stamp
    x = _inputs(prep, 2)
    assert np.array_equal(
        predict_raw(other, x, prep.in_fmt, prep.out_fmt),
        predict_raw(model, x, prep.in_fmt, prep.out_fmt),
    )
    # the library reads its weights from the cache entry, not from a project directory
    assert (entry / "weights" / "hwa2_wq.txt").is_file()
    # the cache key covers the weight values and the optimisation level
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    key = _project_digest(copy, CSIM_OPT)
    assert key == entry.name
    assert _project_digest(copy, "-O2") != key
    wq = copy / "firmware" / "weights" / "hwa2_wq.txt"
    vals = wq.read_text().split(",")
    wq.write_text(",".join(["0.5", *vals[1:]] if vals[0].strip() != "0.5" else ["0", *vals[1:]]))
    assert _project_digest(copy, CSIM_OPT) != key


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
    wrong = Prepared(
        prep.model, [dataclasses.replace(b, gelu=g) for b in prep.blocks], prep.site_names
    )
    rep = csim_check(model, wrong, _inputs(prep, 1), compile=False)
    assert not rep.bit_exact


def test_generated_config_is_explicit(built):
    _backend, prep, _, out = built
    fw = out / "firmware"
    params = (fw / "parameters.h").read_text()
    call = (fw / "myproject.cpp").read_text()
    # block i is layer i + 2 (layer 1 is the input); each call names its exact types
    # and config, and chains the previous block's output array into the next block
    n = len(prep.blocks)
    defines = (fw / "defines.h").read_text()
    stream = "stream" in call.split("void myproject(")[1].split(")")[0]
    fn = "encoder_block_stream" if stream else "encoder_block"
    for i, blk in enumerate(prep.blocks):
        lay = i + 2
        prev = ("input_t", prep.input_name)  # the folded graph's input name
        src_t, src = prev if i == 0 else (f"layer{lay - 1}_t", f"layer{lay - 1}_out")
        dst_t = "result_t" if i == n - 1 else f"layer{lay}_t"
        weights = ", ".join(f"hwa{lay}_{w}" for w in WEIGHT_NAMES)
        want = f"hwapprox::{fn}<{src_t}, {dst_t}, config{lay}>({src}, layer{lay}_out, {weights});"
        assert want in call, (want, call)
        # the block's output type is its ln2.out_fmt (hls4ml appends ",0" saturation bits);
        # io_stream: a pack of dim of them
        elem = rf"nnet::array<(ap_u?fixed<[^>]*>), {D}\*?1?>" if stream else r"(ap_u?fixed<[^>]*>)"
        m = re.search(rf"typedef {elem} {dst_t};", defines)
        assert m is not None, (dst_t, defines)
        assert FixedFormat.parse(m.group(1)) == blk.ln2.out_fmt, (dst_t, m.group(1))
        # each weight: an hls4ml weight variable of its format, its values in the .txt
        # that C-sim loads exactly on the format's grid
        wf = blk.weight_formats()
        for w in WEIGHT_NAMES:
            m = re.search(rf"typedef (ap_u?fixed<[^>]*>) hwa{lay}_{w}_t;", defines)
            assert m is not None, (w, defines)
            assert FixedFormat.parse(m.group(1)) == wf[w], (w, m.group(1))
            txt = (fw / "weights" / f"hwa{lay}_{w}.txt").read_text().split(",")
            vals = wf[w].quantize(np.array([float(v) for v in txt]))
            assert np.array_equal(vals, np.asarray(blk.weights[w]).ravel()), w
    assert call.count(f"hwapprox::{fn}<") == n
    # the poisoned model default precision is used nowhere
    text = params + (fw / "defines.h").read_text() + call
    assert POISON_PRECISION not in text
    blk = prep.blocks[0]
    assert f"typedef {cpp_type(blk.formats.accum_fmt)} accum_t;" in params
    assert f"typedef {cpp_type(blk.softmax.out_fmt)} out_t;" in params
    for sub in ("qkv", "qk", "pv", "o", "ffn1", "ffn2", "softmax", "gelu", "ln1", "ln2"):
        assert f"typedef config2_{sub} {sub}_cfg;" in params
    # every library header is in the project (softmax.h includes its per-method headers)
    for h in (INCLUDE_DIR / "hwapprox").glob("*.h"):
        assert (fw / "nnet_utils" / h.name).read_text() == h.read_text(), h.name


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


def _chain_onnx(seed: int = 0):
    """x -> LayerNormalization -> Erf-pattern GELU -> Softmax(axis=-1), [1, S, D]."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)

    def c(name, v):
        return numpy_helper.from_array(np.asarray(v, np.float32), name)

    nodes = [
        helper.make_node(
            "LayerNormalization", ["x", "g", "b"], ["ln"], name="ln", axis=-1, epsilon=1e-5
        ),
        helper.make_node("Div", ["ln", "sqrt2"], ["u"], name="div"),
        helper.make_node("Erf", ["u"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="add"),
        helper.make_node("Mul", ["ln", "a"], ["m"], name="mul"),
        helper.make_node("Mul", ["m", "half"], ["gl"], name="mul2"),
        helper.make_node("Softmax", ["gl"], ["y"], name="sm", axis=-1),
    ]
    inits = [c("g", 1 + rng.normal(0, 0.1, D)), c("b", rng.normal(0, 0.1, D)),
             c("sqrt2", np.sqrt(2)), c("one", 1.0), c("half", 0.5)]  # fmt: skip
    g = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, D])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, D])], inits,
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_operatorsetid("", 17)])
    m.ir_version = 8
    return m


def test_standalone_sites_chain_bit_exact(tmp_path):
    """Without a whole block: one hls4ml layer per site, formats cast between them."""
    cfg = {
        "defaults": {
            "softmax": {"method": "hls4ml_stable"},
            "gelu": {"method": "edgemoe"},
            "layernorm": {"method": "ibert"},
        }
    }
    prep = prepare_model(_chain_onnx(), cfg)
    assert [s.spec.method for s in prep.steps] == ["ibert", "edgemoe", "hls4ml_stable"]
    model = convert(prep, tmp_path / "prj", backend="Vivado")
    x = prep.in_fmt.quantize(np.random.default_rng(5).normal(0, 1, (10, S, D)))
    rep = csim_check(model, prep, x)
    assert rep.bit_exact, rep
    assert len(np.unique(prep.reference(x))) > 20


def test_mixed_model_without_block_is_refused():
    from onnx import TensorProto, helper, numpy_helper

    m = _chain_onnx()
    w = numpy_helper.from_array(np.eye(D, dtype=np.float32), "w")
    m.graph.initializer.append(w)
    m.graph.node.insert(0, helper.make_node("MatMul", ["x", "w"], ["xm"], name="mm"))
    m.graph.node[1].input[0] = "xm"
    m.graph.value_info.append(helper.make_tensor_value_info("xm", TensorProto.FLOAT, [1, S, D]))
    cfg = {"defaults": {"softmax": {"method": "online"}, "gelu": {"method": "pwl"},
                        "layernorm": {"method": "ibert"}}}  # fmt: skip
    want = r"unsupported ONNX op\(s\) MatMul x1 \(1 node\(s\); first 'mm'\).*no whole"
    with pytest.raises(Exception, match=want):
        prepare_model(m, cfg)


# -- pre-LN, causal and key-masked blocks: the folded node written by hand (the contract
# of onnx_block/project: int attributes prenorm/causal/masked, a second graph input
# ``key_mask`` [1, S] feeding each masked block) -------------------------------------
#: a GPT-2-like chain: block 0 pre-LN causal + key mask, block 1 pre-LN key mask only
MASKED_KINDS = ({"prenorm": 1, "causal": 1, "masked": 1}, {"prenorm": 1, "causal": 0, "masked": 1})
MASKED_FORMATS = {
    "in_fmt": "ap_fixed<16,6,AP_RND,AP_SAT>",
    "res_fmt": "ap_fixed<18,7,AP_RND,AP_SAT>",
    "out_fmt": "ap_fixed<16,6,AP_RND,AP_SAT>",
}


def block_float_weights(seed: int) -> dict[str, np.ndarray]:
    """Float weights of one block (LayerNorm gamma near 1)."""
    rng = np.random.default_rng(seed)
    shapes = {"wq": (D, D), "wk": (D, D), "wv": (D, D), "wo": (D, D), "w1": (D, F),
              "w2": (F, D), "bq": (D,), "bk": (D,), "bv": (D,), "bo": (D,), "b1": (F,),
              "b2": (D,), "g1": (D,), "be1": (D,), "g2": (D,), "be2": (D,)}  # fmt: skip
    w = {k: rng.normal(0, 1 / np.sqrt(v[0]) if len(v) == 2 else 0.1, v) for k, v in shapes.items()}
    return w | {"g1": 1 + w["g1"], "g2": 1 + w["g2"]}


def _folded_blocks_onnx(kinds, seed: int = 0):
    """``x`` [1, S, D] (+ ``key_mask`` [1, S]) -> one HwApproxEncoderBlock node per kind."""
    from onnx import TensorProto, helper, numpy_helper

    from hwapprox.export.blockmatch import DOMAIN

    specs = {
        "softmax": make_spec("softmax", "online").to_config(),
        "gelu": make_spec("gelu", "pwl").to_config(),
        "ln1": make_spec("layernorm", "rsqrt_lut", max_n=64).to_config(),
        "ln2": make_spec("layernorm", "ibert").to_config(),
    }
    payload = json.dumps({"specs": specs, "formats": BlockFormats(**MASKED_FORMATS).to_dict()})
    nodes, masked = [], any(k["masked"] for k in kinds)
    for i, kind in enumerate(kinds):
        w = block_float_weights(seed + i)
        ins = ["x" if i == 0 else f"h{i}"] + ([MASK_INPUT] if kind["masked"] else [])
        out = "y" if i == len(kinds) - 1 else f"h{i + 1}"
        tensors = {
            f"t_{k}": numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in w.items()
        }
        nodes.append(
            helper.make_node(
                OP_TYPE, ins, [out], name=f"encoder_block{i}", domain=DOMAIN, heads=H,
                score_scale=float(1 / np.sqrt(D // H)), hwapprox=payload, **kind, **tensors,
            )
        )  # fmt: skip
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, D])]
    if masked:
        inputs.append(helper.make_tensor_value_info(MASK_INPUT, TensorProto.FLOAT, [1, S]))
    vis = [
        helper.make_tensor_value_info(f"h{i}", TensorProto.FLOAT, [1, S, D])
        for i in range(1, len(kinds))
    ]
    g = helper.make_graph(
        nodes, "blocks", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, D])],
        value_info=vis,
    )  # fmt: skip
    m = helper.make_model(
        g,
        opset_imports=[helper.make_operatorsetid("", 17), helper.make_operatorsetid(DOMAIN, 1)],
    )
    m.ir_version = 8
    blocks = [block_from_node(n, S) for n in m.graph.node]
    return m, blocks


def _convert_blocks(model, out, backend: str, mask_config: dict | None):
    import hls4ml

    from hwapprox.hls.hls4ml_ext import register

    register()
    layers = {"x": {"Precision": {"result": MASKED_FORMATS["in_fmt"]}}, **(mask_config or {})}
    hm = hls4ml.converters.convert_from_onnx_model(
        model,
        output_dir=str(out),
        project_name="myproject",
        backend=backend,
        io_type="io_parallel",
        hls_config={
            "Model": {"Precision": POISON_PRECISION, "ReuseFactor": 1, "Strategy": "Latency"},
            "LayerName": layers,
        },
    )
    hm.write()
    return hm


def _masked_inputs(fmt: FixedFormat, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw codes [12, S, D] and key masks [12, S] (True = real): right/left padding, one
    real token, every key padded, random lengths."""
    rng = np.random.default_rng(seed)
    x = np.concatenate(
        [fmt.quantize(rng.normal(0, 1, (10, S, D))), np.full((2, S, D), fmt.max_raw)]
    )
    fixed = [[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1], [0, 0, 0, 0]]
    n = rng.integers(1, S + 1, 6)
    rand = [np.arange(S) < k for k in n]
    return x, np.concatenate([np.array(fixed, bool), np.array(rand, bool)])


@pytest.fixture(scope="module", params=["Vitis"])
def masked_built(request, tmp_path_factory):
    model, blocks = _folded_blocks_onnx(MASKED_KINDS)
    out = tmp_path_factory.mktemp(f"prj_masked_{request.param}")
    hm = _convert_blocks(model, out, request.param, mask_layer_config())
    hm.compile()
    return blocks, hm, out


def test_masked_prenorm_predict_is_bit_exact(masked_built):
    """Two chained pre-LN blocks (causal + key mask, key mask), the key mask a second
    model input: predict([x, key_mask]) == the block models, bit for bit."""
    blocks, hm, _ = masked_built
    x, km = _masked_inputs(blocks[0].formats.in_fmt, 3)
    got = predict_raw(hm, x, blocks[0].formats.in_fmt, blocks[-1].out_fmt, key_mask=km)
    want = x
    for b in blocks:
        want = b.model(want, key_mask=km)
    bad = np.argwhere(got != want)
    assert bad.size == 0, f"{len(bad)} of {want.size} differ, first at {tuple(bad[0])}"
    assert len(np.unique(want)) > 50
    # the comparison can fail: the same output against the blocks without their masks
    plain = x
    for b in blocks:
        plain = dataclasses.replace(b, causal=False, masked=False).model(plain)
    assert not np.array_equal(got, plain)


def test_masked_generated_code(masked_built):
    """Layers 1, 2 are the inputs x and key_mask; each block call passes the key mask."""
    _, _, out = masked_built
    fw = out / "firmware"
    call = (fw / "myproject.cpp").read_text()
    params = (fw / "parameters.h").read_text()
    defines = (fw / "defines.h").read_text()
    for want in (
        "hwapprox::encoder_block<input_t, input2_t, layer3_t, config3>(x, key_mask, layer3_out, "
        "hwa3_wq, hwa3_bq,",
        "hwapprox::encoder_block<layer3_t, input2_t, result_t, config4>(layer3_out, key_mask, ",
    ):
        assert want in call, (want, call)
    assert re.search(r"typedef ap_uint<1> input2_t;", defines), defines
    for lay, kind in zip((3, 4), MASKED_KINDS, strict=True):
        struct = params.split(f"struct config{lay} {{")[1].split("};")[0]
        for k, v in kind.items():
            assert f"    static const long long {k} = {v};" in struct, (lay, k)
    assert POISON_PRECISION not in params + defines + call


def test_mask_input_precision_is_checked(tmp_path):
    """Without mask_layer_config the mask input takes the poisoned model default
    (ap_fixed<2,1>, cannot hold 1.0): the layer refuses it, naming the fix."""
    model, _ = _folded_blocks_onnx(MASKED_KINDS[:1])
    msg = (
        r"^encoder_block0: key mask key_mask has precision fixed<2,1,TRN,WRAP,0>, which cannot "
        r"hold 1\.0 \(a real token\); give its input layer ap_uint<1> "
        r"\(hwapprox\.hls\.hls4ml_ext\.mask_layer_config\)$"
    )
    with pytest.raises(Exception, match=msg):
        _convert_blocks(model, tmp_path / "prj", "Vivado", None)
