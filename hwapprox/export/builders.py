"""Seeded BERT-style encoder ONNX models, written the way exporters write them.

:func:`bert_encoder` builds a post-LN transformer encoder (embeddings,
``layers`` x [multi-head self-attention, Add, LayerNorm, FFN with GELU, Add,
LayerNorm], then a classifier head on the first token with a ``Tanh`` pooler)
directly with :mod:`onnx.helper` -- torch is not a dependency. The nonlinear
sites are spelled in one of several exporter styles:

``gelu``:
  ``"op"`` / ``"op_tanh"`` -- opset 20 ``Gelu`` (``approximate`` none / tanh);
  ``"erf"`` -- ``torch.nn.GELU`` at opset < 20: ``Div(x, √2)``, ``Erf``,
  ``Add(·, 1)``, ``Mul(x, ·)``, ``Mul(·, 0.5)``;
  ``"erf_hf"`` -- HuggingFace ``x * 0.5 * (1 + erf(x / √2))``: ``Mul(x, 0.5)``,
  ``Div``, ``Erf``, ``Add(1, ·)``, ``Mul(half_x, ·)``;
  ``"erf_mul"`` -- ``Mul(x, 1/√2)``, ``Erf``, ``Add``, ``Mul(·, 0.5)``, ``Mul(x, ·)``;
  ``"tanh"`` -- ``torch.nn.GELU(approximate="tanh")`` at opset < 20 (``x·x·x``);
  ``"tanh_hf"`` -- HuggingFace ``NewGELU`` (``Pow(x, 3)``).
``layernorm``:
  ``"op"`` -- opset 17 ``LayerNormalization``;
  ``"decomposed"`` -- ``torch.nn.LayerNorm`` at opset < 17 (ReduceMean, Sub, Pow,
  ReduceMean, Add, Sqrt, Div, Mul, Add); ReduceMean axes are an attribute
  below opset 18 and an input from 18.

Scalar constants are ``Constant`` nodes (``scalars="node"``, as torch writes
them) or initializers (``scalars="init"``). Weights are float32 drawn from
``numpy.random.default_rng(seed)``: ``N(0, 1/fan_in)`` matrices, biases
``N(0, 0.02²)``, LayerNorm gamma ``1 + N(0, 0.1²)``, beta ``N(0, 0.1²)``,
embeddings ``N(0, 1)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import ModelProto, TensorProto, helper, numpy_helper

__all__ = [
    "GELU_STYLES",
    "LN_STYLES",
    "MASK_STYLES",
    "EncoderShape",
    "bert_encoder",
    "sample_inputs",
]

#: Attention-mask styles of :func:`bert_encoder` (``attention_mask`` int64 input):
#: ``"additive"`` -- Hugging Face BERT: ``(1 - Cast(Unsqueeze(m))) * float32_min``
#: added to the scores; ``"additive_1e4"`` -- the same with ``-10000``;
#: ``"where"`` -- ``masked_fill``: ``Where(Equal(m, 0), float32_min, scores)``;
#: ``"causal"`` -- GPT-2: ``Where(triangle, scores, float32_min)`` with a constant
#: lower triangle, then the additive padding mask; ``"causal_trilu"`` -- the
#: triangle computed by ``Trilu`` from a ``ConstantOfShape`` of the sequence length.
MASK_STYLES = ("none", "additive", "additive_1e4", "where", "causal", "causal_trilu")

GELU_STYLES = ("op", "op_tanh", "erf", "erf_hf", "erf_mul", "tanh", "tanh_hf")
LN_STYLES = ("op", "decomposed")


@dataclass(frozen=True)
class EncoderShape:
    """Sizes of the encoder: ``batch=None`` makes the batch dim dynamic."""

    layers: int = 2
    width: int = 64
    heads: int = 4
    ffn: int = 128
    seq: int = 16
    batch: int | None = 1
    vocab: int = 96
    classes: int = 4


class _B:
    def __init__(self, seed: int, scalars: str) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.scalars = scalars
        self.n = 0

    def name(self, base: str) -> str:
        self.n += 1
        return f"{base}_{self.n}"

    def init(self, base: str, value: np.ndarray) -> str:
        nm = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(value), nm))
        return nm

    def scalar(self, value: float) -> str:
        v = np.array(value, dtype=np.float32)
        if self.scalars == "init":
            return self.init("c", v)
        nm = self.name("const")
        self.nodes.append(
            helper.make_node(
                "Constant", [], [nm], name=nm, value=numpy_helper.from_array(v, nm + "_v")
            )
        )
        return nm

    def op(self, op_type: str, inputs: list[str], base: str | None = None, **attrs: object) -> str:
        nm = self.name(base or op_type)
        self.nodes.append(helper.make_node(op_type, inputs, [nm], name=nm, **attrs))
        return nm

    def dense(self, x: str, fan_in: int, fan_out: int, base: str) -> str:
        w = self.rng.normal(0, 1 / math.sqrt(fan_in), (fan_in, fan_out)).astype(np.float32)
        b = self.rng.normal(0, 0.02, fan_out).astype(np.float32)
        y = self.op("MatMul", [x, self.init(base + ".weight", w)], base + ".matmul")
        return self.op("Add", [y, self.init(base + ".bias", b)], base + ".bias_add")

    # -- nonlinear sites in exporter styles ------------------------------------
    def gelu(self, x: str, style: str) -> str:
        if style == "op":
            return self.op("Gelu", [x], "gelu")
        if style == "op_tanh":
            return self.op("Gelu", [x], "gelu", approximate="tanh")
        if style == "erf":
            u = self.op("Div", [x, self.scalar(math.sqrt(2))])
            e = self.op("Erf", [u])
            a = self.op("Add", [e, self.scalar(1.0)])
            m = self.op("Mul", [x, a])
            return self.op("Mul", [m, self.scalar(0.5)])
        if style == "erf_hf":
            h = self.op("Mul", [x, self.scalar(0.5)])
            u = self.op("Div", [x, self.scalar(math.sqrt(2))])
            e = self.op("Erf", [u])
            a = self.op("Add", [self.scalar(1.0), e])
            return self.op("Mul", [h, a])
        if style == "erf_mul":
            u = self.op("Mul", [self.scalar(1 / math.sqrt(2)), x])
            e = self.op("Erf", [u])
            a = self.op("Add", [e, self.scalar(1.0)])
            m = self.op("Mul", [a, self.scalar(0.5)])
            return self.op("Mul", [m, x])
        if style in ("tanh", "tanh_hf"):
            if style == "tanh":  # operand order of torch's symbolic_opset9 gelu(tanh)
                sq = self.op("Mul", [x, x])
                cube = self.op("Mul", [x, sq])
                k = self.op("Mul", [self.scalar(0.044715), cube])
                inner = self.op("Add", [x, k])
                t = self.op("Tanh", [self.op("Mul", [self.scalar(math.sqrt(2 / math.pi)), inner])])
                a = self.op("Add", [self.scalar(1.0), t])
                m = self.op("Mul", [x, a])
                return self.op("Mul", [self.scalar(0.5), m])
            h = self.op("Mul", [self.scalar(0.5), x])
            cube = self.op("Pow", [x, self.scalar(3.0)])
            k = self.op("Mul", [self.scalar(0.044715), cube])
            inner = self.op("Add", [x, k])
            t = self.op("Tanh", [self.op("Mul", [self.scalar(math.sqrt(2 / math.pi)), inner])])
            a = self.op("Add", [self.scalar(1.0), t])
            return self.op("Mul", [h, a])
        raise ValueError(f"unknown gelu style {style!r}; expected one of {GELU_STYLES}")

    def layernorm(self, x: str, width: int, style: str, opset: int, eps: float) -> str:
        g = (1 + self.rng.normal(0, 0.1, width)).astype(np.float32)
        b = self.rng.normal(0, 0.1, width).astype(np.float32)
        if style == "op":
            nm = self.name("layernorm")
            self.nodes.append(
                helper.make_node(
                    "LayerNormalization",
                    [x, self.init(nm + ".weight", g), self.init(nm + ".bias", b)],
                    [nm],
                    name=nm,
                    axis=-1,
                    epsilon=eps,
                )
            )
            return nm
        if style != "decomposed":
            raise ValueError(f"unknown layernorm style {style!r}; expected one of {LN_STYLES}")

        def mean(t: str) -> str:
            if opset >= 18:
                axes = self.init("axes", np.array([-1], dtype=np.int64))
                return self.op("ReduceMean", [t, axes], "ReduceMean", keepdims=1)
            return self.op("ReduceMean", [t], "ReduceMean", axes=[-1], keepdims=1)

        mu = mean(x)
        d = self.op("Sub", [x, mu])
        var = mean(self.op("Pow", [d, self.scalar(2.0)]))
        s = self.op("Sqrt", [self.op("Add", [var, self.scalar(eps)])])
        n = self.op("Div", [d, s])
        m = self.op("Mul", [n, self.init("ln.weight", g)])
        return self.op("Add", [m, self.init("ln.bias", b)])


def bert_encoder(
    shape: EncoderShape | None = None,
    *,
    gelu: str = "erf",
    layernorm: str = "op",
    seed: int = 0,
    scalars: str = "node",
    opset: int | None = None,
    token_input: bool = True,
    eps: float = 1e-12,
    mask: str = "none",
) -> ModelProto:
    """A seeded BERT-style encoder + classifier (see the module docstring).

    Input ``input_ids`` (int64 ``[batch, seq]``) when ``token_input``, else
    ``embeddings`` (float32 ``[batch, seq, width]``); output ``logits``
    (float32 ``[batch, classes]``). ``opset`` defaults to 20 for ``Gelu`` ops,
    17 otherwise (decomposed LayerNorm alone: 14 unless given). ``mask`` adds an
    ``attention_mask`` input (int64 ``[batch, seq]``, 1 = token) in one of
    :data:`MASK_STYLES`.
    """
    if mask not in MASK_STYLES:
        raise ValueError(f"unknown mask style {mask!r}; expected one of {MASK_STYLES}")
    s = shape or EncoderShape()
    if gelu not in GELU_STYLES:
        raise ValueError(f"unknown gelu style {gelu!r}; expected one of {GELU_STYLES}")
    if layernorm not in LN_STYLES:
        raise ValueError(f"unknown layernorm style {layernorm!r}; expected one of {LN_STYLES}")
    if s.width % s.heads:
        raise ValueError(f"width={s.width} is not a multiple of heads={s.heads}")
    if opset is None:
        opset = 20 if gelu.startswith("op") else (17 if layernorm == "op" else 14)
    b = _B(seed, scalars)
    batch: int | str = "batch" if s.batch is None else s.batch
    dh = s.width // s.heads
    if token_input:
        inp = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, s.seq])
        emb = b.rng.normal(0, 1, (s.vocab, s.width)).astype(np.float32)
        pos = b.rng.normal(0, 1, (1, s.seq, s.width)).astype(np.float32)
        x = b.op("Gather", [b.init("embeddings.word", emb), "input_ids"], "embed", axis=0)
        x = b.op("Add", [x, b.init("embeddings.position", pos)], "embed_pos")
    else:
        inp = helper.make_tensor_value_info(
            "embeddings", TensorProto.FLOAT, [batch, s.seq, s.width]
        )
        x = "embeddings"
    x = b.layernorm(x, s.width, layernorm, opset, eps)
    inputs = [inp]
    masking = _mask_nodes(b, mask, s.seq, batch) if mask != "none" else None
    if masking is not None:
        inputs.append(masking[0])
    split = b.init("heads_shape", np.array([0, 0, s.heads, dh], dtype=np.int64))
    merge = b.init("merge_shape", np.array([0, 0, s.width], dtype=np.int64))
    for layer in range(s.layers):
        p = f"layer{layer}"

        def heads(t: str, perm: list[int]) -> str:
            return b.op("Transpose", [b.op("Reshape", [t, split])], perm=perm)

        q = heads(b.dense(x, s.width, s.width, p + ".q"), [0, 2, 1, 3])
        k = heads(b.dense(x, s.width, s.width, p + ".k"), [0, 2, 3, 1])
        v = heads(b.dense(x, s.width, s.width, p + ".v"), [0, 2, 1, 3])
        scores = b.op("Div", [b.op("MatMul", [q, k]), b.scalar(math.sqrt(dh))])
        if masking is not None:
            scores = masking[1](scores)
        attn = b.op("Softmax", [scores], p + ".softmax", axis=-1)
        ctx = b.op("Transpose", [b.op("MatMul", [attn, v])], perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, merge])
        h = b.op("Add", [x, b.dense(ctx, s.width, s.width, p + ".o")])
        x = b.layernorm(h, s.width, layernorm, opset, eps)
        f = b.gelu(b.dense(x, s.width, s.ffn, p + ".ffn1"), gelu)
        h = b.op("Add", [x, b.dense(f, s.ffn, s.width, p + ".ffn2")])
        x = b.layernorm(h, s.width, layernorm, opset, eps)
    first = b.op("Gather", [x, b.init("cls_index", np.array(0, dtype=np.int64))], axis=1)
    pooled = b.op("Tanh", [b.dense(first, s.width, s.width, "pooler")], "pooler.tanh")
    logits = b.dense(pooled, s.width, s.classes, "classifier")
    b.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="logits"))
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, s.classes])
    graph = helper.make_graph(b.nodes, "bert_encoder", inputs, [out], b.inits)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_operatorsetid("", opset)],
        producer_name="hwapprox.export.builders",
    )
    model.ir_version = 8 if opset < 19 else 9
    return model


def _mask_nodes(b: _B, style: str, seq: int, batch: int | str) -> tuple[Any, Any]:
    """The ``attention_mask`` input and a function masking one layer's scores."""
    vi = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [batch, seq])
    fmin = float(np.finfo(np.float32).min)
    axes = b.init("mask_axes", np.array([1, 2], dtype=np.int64))
    m4 = b.op("Unsqueeze", ["attention_mask", axes], "mask_unsqueeze")
    if style == "where":
        cond = b.op("Equal", [m4, b.init("mask_zero", np.array(0, dtype=np.int64))], "mask_eq")
        fill = b.scalar(fmin)
        return vi, lambda t: b.op("Where", [cond, fill, t], "masked_fill")
    mf = b.op("Cast", [m4], "mask_cast", to=TensorProto.FLOAT)
    inv = b.op("Sub", [b.scalar(1.0), mf], "mask_invert")
    big = -10000.0 if style == "additive_1e4" else fmin
    ext = b.op("Mul", [inv, b.scalar(big)], "mask_extended")
    if style in ("additive", "additive_1e4"):
        return vi, lambda t: b.op("Add", [t, ext], "mask_add")
    if style == "causal":
        tri = b.init("causal_bias", np.tril(np.ones((1, 1, seq, seq), dtype=bool)))
    else:
        ones = b.op(
            "ConstantOfShape",
            [b.init("causal_shape", np.array([seq, seq], dtype=np.int64))],
            "causal_ones",
            value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]),
        )
        tri = b.op("Cast", [b.op("Trilu", [ones], "causal_trilu", upper=0)], to=TensorProto.BOOL)
    fill = b.scalar(fmin)
    return vi, lambda t: b.op(
        "Add", [b.op("Where", [tri, t, fill], "causal_where"), ext], "mask_add"
    )


def sample_inputs(
    shape: EncoderShape,
    *,
    batch: int | None = None,
    seed: int = 1,
    token_input: bool = True,
    mask: bool = False,
) -> dict[str, np.ndarray]:
    """Seeded inputs for :func:`bert_encoder` (token ids uniform over the vocabulary);
    with ``mask`` an ``attention_mask`` of a padded batch: row ``i`` keeps a
    seeded length in ``[1, seq]`` (the first row the full ``seq``), ids 0 on padding."""
    rng = np.random.default_rng(seed)
    n = batch or shape.batch or 1
    if token_input:
        feeds = {"input_ids": rng.integers(0, shape.vocab, (n, shape.seq), dtype=np.int64)}
    else:
        feeds = {"embeddings": rng.normal(0, 1, (n, shape.seq, shape.width)).astype(np.float32)}
    if mask:
        lengths = rng.integers(1, shape.seq + 1, n)
        lengths[0] = shape.seq
        am = (np.arange(shape.seq)[None, :] < lengths[:, None]).astype(np.int64)
        feeds["attention_mask"] = am
        if token_input:
            feeds["input_ids"] = feeds["input_ids"] * am
    return feeds
