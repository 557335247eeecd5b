"""Find post-LN transformer encoder blocks in ONNX and fold each into one node.

hls4ml 1.3's stock ONNX path cannot carry sequence-shaped tensors through an
encoder (MatMul(activation[S,D], W) becomes a PointwiseConv1D with the wrong
shape, Softmax(axis=-1) on [H,S,S] normalises over everything, ...). So the
block is recognised here, in ONNX, and replaced by a single
``HwApproxEncoderBlock`` node (domain :data:`DOMAIN`) whose weights and
constants are *tensor attributes* (no initializers left for hls4ml to turn
into Constant layers); :mod:`hwapprox.hls.hls4ml_ext` maps that node to one
hls4ml layer with its own C++ (``encoder.h``).

Granularity: the whole block is one node. Every tensor between the block's
input and output is sequence-shaped, which is exactly what hls4ml mishandles;
keeping them inside one layer keeps every intermediate type in one generated
config (explicit, from the specs) and leaves hls4ml only a [S, D] -> [S, D]
layer to wire. A chain of blocks becomes a chain of such layers.

Recognised (as :mod:`hwapprox.export.builders` and PyTorch/HuggingFace export
it): ``Q/K/V = MatMul(x, W) + b`` (Add in either order), heads by ``Reshape``
to ``[0, 0, H, d_h]`` and ``Transpose`` (perm ``[0,2,1,3]``; K ``[0,2,3,1]``),
``MatMul(Q_h, K_h)``, ``Div`` by a constant or ``Mul`` by a constant,
``Softmax(axis=-1)``, ``MatMul(P, V_h)``, ``Transpose [0,2,1,3]``,
``Reshape [0, 0, D]``, output projection, residual ``Add``, LayerNorm (opset 17
op or decomposed), FFN with GELU (opset 20 ``Gelu``, the Erf/tanh patterns or
CLIP's quick_gelu ``x·σ(1.702x)``; sites found by
:func:`hwapprox.export.patterns.find_sites`) or with one ``Relu`` (OPT; the
block's ``ffn_act="relu"`` stage, no site) or gated (Llama's ``down(SiLU(x·Wg) ⊙
(x·Wu))``: the SiLU site times a second projection of the same input, the block's
``ffn_act="gated"``), residual ``Add`` (also through the ``[B·S, D]`` reshapes OPT
writes around its FFN), LayerNorm or RMSNorm (its three torch spellings and ONNX
``RMSNormalization``). A rotary position embedding on the query and key heads
(``t·cos + rotate_half(t)·sin``, ``rotate_half`` as ``Slice``/``Neg``/``Concat``; the
tables evaluated on the sample inputs, constant over samples and heads) is the
block's ``rope`` stage.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import ModelProto, NodeProto, helper, numpy_helper

from hwapprox.approx.base import Operator
from hwapprox.approx.block import OPTIONAL_WEIGHTS
from hwapprox.export.errors import ExportError
from hwapprox.export.graph import GraphIndex, load_model
from hwapprox.export.masks import MASK_LIMIT
from hwapprox.export.masks import _Ancestry as Ancestry
from hwapprox.export.patterns import Site, find_sites

__all__ = [
    "DOMAIN",
    "OP_TYPE",
    "SITE_OP_TYPE",
    "BlockMatch",
    "encoder_block_onnx",
    "fold_blocks",
    "fold_sites",
    "match_blocks",
    "outside_nodes",
]

DOMAIN = "hwapprox.hls"
#: the folded model's key-mask input ([1, seq], 1.0 = real token) of masked blocks
MASK_INPUT = "key_mask"
OP_TYPE = "HwApproxEncoderBlock"
FLOAT_ATTRS = ("score_scale", "eps1", "eps2")


#: Relative rms error allowed between a match re-computed in float64 and the graph.
MATCH_RTOL = 1e-5


class _NoMatch(Exception):
    pass


@dataclass(frozen=True, eq=False)
class BlockMatch:
    """One encoder block found in a graph (float weights as in the model)."""

    input: str
    output: str
    nodes: frozenset[str]
    weights: dict[str, np.ndarray] = field(repr=False)
    heads: int
    score_scale: float
    softmax: Site
    #: the FFN's GELU site (``ffn_act="gelu"``), None for a ReLU FFN
    gelu: Site | None
    ln1: Site
    ln2: Site
    #: float tensors of the linear stages (calibration): q/k/v projections (before
    #: the score scale), ctx (P·V merged), attn (output projection), ffn2
    tensors: dict[str, str] = field(default_factory=dict)
    #: pre-LN block: ``r1 = x + Attn(LN1(x)); y = r1 + FFN(LN2(r1))`` (no final LN)
    prenorm: bool = False
    #: query ``i`` never attends key ``j > i``
    causal: bool = False
    #: graph input with the key padding (``[B, S]`` or ``[S]``, nonzero = token)
    key_mask: str | None = None
    #: a constant per-head table (``weights["sb"]``, ``[H·S·S]``) is added to the scores
    score_bias: bool = False
    #: causal local window: query ``i`` attends keys ``i - window < j <= i`` (0 = all)
    window: int = 0
    #: the FFN activation: ``gelu`` (the ``gelu`` site), ``relu`` (OPT: no site; exact
    #: at the block's formats) or ``gated`` (Llama: the ``gelu`` site, a SiLU, times the
    #: up projection ``weights["wu"]``, ``["bu"]``)
    ffn_act: str = "gelu"
    #: a rotary embedding on Q and K (tables ``weights["rc"]``, ``["rs"]`` ``[S, d_h]``)
    rope: bool = False
    #: per rotated path (``qr``, ``kr`` in :attr:`tensors`): the factor that turns the
    #: graph's rotated tensor into the rotation of the projection's output
    rope_gain: dict[str, float] = field(default_factory=dict)

    @property
    def site_roles(self) -> dict[str, Site]:
        """Role -> the block's nonlinear site (no ``gelu`` role in a ReLU FFN block)."""
        roles = {"softmax": self.softmax, "gelu": self.gelu, "ln1": self.ln1, "ln2": self.ln2}
        return {r: st for r, st in roles.items() if st is not None}

    @property
    def sites(self) -> dict[str, str]:
        """Role -> site name (the names the approximation config uses)."""
        return {r: st.name for r, st in self.site_roles.items()}


def _attr(node: NodeProto, name: str, default: object = None) -> object:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _ln_params(site: Site, d: int) -> tuple[np.ndarray, np.ndarray, float]:
    g = np.ones(d) if site.gamma is None else np.broadcast_to(site.gamma, (d,)).astype(np.float64)
    b = np.zeros(d) if site.beta is None else np.broadcast_to(site.beta, (d,)).astype(np.float64)
    return g, b, float(site.epsilon if site.epsilon is not None else 1e-5)


class _Evaluator:
    """Values of graph tensors on sample inputs (shape-derived scalars, head shapes)."""

    def __init__(self, model: ModelProto, feeds: Mapping[str, np.ndarray] | None) -> None:
        self.model = model
        self.feeds = dict(feeds) if feeds is not None else None
        self.cache: dict[str, np.ndarray] = {}

    def _feeds(self) -> dict[str, np.ndarray]:
        if self.feeds is None:
            from hwapprox.export.calibrate import graph_inputs

            rng = np.random.default_rng(0)
            feeds: dict[str, np.ndarray] = {}
            for name, et, dims in graph_inputs(self.model):
                shape = tuple(int(d) if isinstance(d, int) else (1 if i == 0 else 8)
                              for i, d in enumerate(dims))  # fmt: skip
                dt = np.dtype(helper.tensor_dtype_to_np_dtype(et))
                if dt.kind == "f":
                    feeds[name] = rng.standard_normal(shape).astype(dt)
                else:
                    feeds[name] = np.ones(shape, dtype=dt)
            self.feeds = feeds
        return self.feeds

    def __call__(self, names: list[str]) -> dict[str, np.ndarray]:
        want = [n for n in dict.fromkeys(names) if n not in self.cache]
        if want:
            from hwapprox.export.emulate import trace_model

            sess = trace_model(self.model, want)
            outs = [o.name for o in sess.get_outputs()]
            try:
                vals = sess.run(outs, self._feeds())
            except Exception as exc:
                raise ExportError(f"onnxruntime failed on the sample inputs: {exc}") from None
            self.cache.update(dict(zip(outs, vals, strict=True)))
            self.cache.update({k: np.asarray(v) for k, v in self._feeds().items()})
        return {n: self.cache[n] for n in names}


#: layout ops a projection's output passes through on its way to a head tensor
_LAYOUT = frozenset({"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Flatten"})


@dataclass
class _Path:
    """What :meth:`_Matcher.up_to_dense` walked through."""

    source: str
    w: np.ndarray
    b: np.ndarray
    factor: float
    dense_out: str
    nodes: list[str]
    #: the rotary tables (cos, sin) ``[S, d_h]`` when the path rotates its heads
    rope: tuple[np.ndarray, np.ndarray] | None = None
    #: the rotation's output tensor, and the product of the scalar factors between the
    #: projection and the rotation (the rotated tensor / that = rotate(projection))
    rope_out: str = ""
    rope_factor: float = 1.0


class _Matcher:
    """Encoder blocks around softmax sites (see :func:`match_blocks`)."""

    def __init__(self, model: ModelProto, evaluate: _Evaluator) -> None:
        self.m = model
        self.gi = GraphIndex(model)
        self.ev = evaluate
        self.sites, _ = find_sites(model)
        self.by_out = {s.output: s for s in self.sites}
        self.by_in: dict[str, list[Site]] = {}
        for st in self.sites:
            self.by_in.setdefault(st.input, []).append(st)

    # -- helpers ---------------------------------------------------------------------
    def producer(self, t: str, want: str) -> NodeProto:
        n = self.gi.producer.get(t)
        if n is None:
            raise _NoMatch(f"'{t}' is a graph input or constant where {want} was expected")
        return n

    def scalar(self, name: str) -> float | None:
        """A constant scalar, or a scalar computed from shapes only (evaluated)."""
        v = self.gi.scalar(name)
        if v is not None:
            return v
        from hwapprox.export.masks import _Ancestry

        inits = {i.name for i in self.m.graph.initializer}
        anc = _Ancestry(self.gi, {i.name for i in self.m.graph.input} - inits)
        if anc.on_score_path(name):
            return None
        src, _ = anc.trace(name)
        if src:  # depends on an input's values, not only on shapes
            return None
        val = self.ev([name])[name]
        return float(np.asarray(val, np.float64).reshape(-1)[0]) if np.size(val) == 1 else None

    def dense(self, t: str) -> tuple[str, np.ndarray, np.ndarray, list[str]] | None:
        """``t = x·W + b`` (MatMul + Add in either order, MatMul alone, or Gemm)."""
        gi = self.gi
        n = gi.producer.get(t)
        if n is None:
            return None
        if n.op_type == "Gemm":
            w = gi.const(n.input[1])
            if w is None or int(_attr(n, "transA", 0) or 0):
                return None
            w = np.asarray(w, np.float64)
            if int(_attr(n, "transB", 0) or 0):
                w = w.T
            w = w * float(_attr(n, "alpha", 1.0) or 1.0)
            b = np.zeros(w.shape[1])
            if len(n.input) > 2 and n.input[2]:
                c = gi.const(n.input[2])
                if c is None:
                    return None
                b = np.broadcast_to(np.asarray(c, np.float64).reshape(-1), (w.shape[1],)) * float(
                    _attr(n, "beta", 1.0) or 1.0
                )
            return n.input[0], w, np.array(b), [n.name]
        if n.op_type == "Add":
            for mm_out, bias in (tuple(n.input), tuple(n.input)[::-1]):
                c = gi.const(bias)
                sub = self.dense_matmul(mm_out)
                if c is None or sub is None:
                    continue
                x, w, mm = sub
                if c.reshape(-1).shape != (w.shape[1],):
                    continue
                return x, w, np.asarray(c, np.float64).reshape(-1), [mm, n.name]
            return None
        sub = self.dense_matmul(t)
        if sub is not None:
            x, w, mm = sub
            return x, w, np.zeros(w.shape[1]), [mm]
        return None

    def dense_matmul(self, t: str) -> tuple[str, np.ndarray, str] | None:
        n = self.gi.producer.get(t)
        if n is None or n.op_type != "MatMul":
            return None
        w = self.gi.const(n.input[1])
        if w is None or w.ndim != 2:
            return None
        return n.input[0], np.asarray(w, np.float64), n.name

    def strip_layout(self, t: str) -> str:
        """Walk up through Reshape/Identity (a [B*S, D] flatten around a Gemm)."""
        for _ in range(4):
            n = self.gi.producer.get(t)
            if n is None or n.op_type not in ("Reshape", "Identity", "Flatten"):
                return t
            t = n.input[0]
        return t

    def up_to_dense(self, t: str, what: str) -> _Path:
        """From a head tensor up to its projection: layout ops, scalar scales, a Split
        of a fused projection; then the projection's input (through reshapes)."""
        factor = 1.0
        split: tuple[int, int, int] | None = None  # (index, offset, size)
        nodes: list[str] = []
        rope: tuple[np.ndarray, np.ndarray] | None = None
        rope_out, factor_at_rope = "", 1.0
        for _ in range(16):
            d = self.dense(t)
            if d is not None:
                x, w, b, dn = d
                if split is not None:
                    _, off, size = split
                    w, b = w[:, off : off + size], b[off : off + size]
                return _Path(
                    self.strip_layout(x), w, b, factor, t, nodes + dn, rope, rope_out,
                    factor / factor_at_rope,
                )  # fmt: skip
            n = self.producer(t, f"the {what} projection (MatMul/Gemm with constant weights)")
            nodes.append(n.name)
            if n.op_type in _LAYOUT or (n.op_type == "Cast" and len(n.input) == 1):
                t = n.input[0]
            elif n.op_type in ("Mul", "Div") and len(n.input) == 2:
                for i in (1, 0) if n.op_type == "Mul" else (1,):
                    c = self.scalar(n.input[i])
                    if c is not None and c != 0:
                        factor *= c if n.op_type == "Mul" else 1.0 / c
                        t = n.input[1 - i]
                        break
                else:
                    raise _NoMatch(
                        f"node '{n.name}' ({n.op_type}) on the {what} path does not scale by "
                        f"a scalar"
                    )
            elif n.op_type == "Split":
                idx = list(n.output).index(t)
                axis = int(_attr(n, "axis", 0) or 0)
                rank = self.gi.rank(n.input[0])
                if rank is None or axis not in (-1, rank - 1):
                    raise _NoMatch(f"Split '{n.name}' is not over the last axis")
                sizes = _attr(n, "split")
                if sizes is None and len(n.input) > 1 and n.input[1]:
                    v = self.gi.const(n.input[1])
                    sizes = None if v is None else [int(a) for a in v.reshape(-1)]
                if sizes is None:
                    shp = self.gi.shape.get(n.input[0])
                    if not shp or not isinstance(shp[-1], int):
                        raise _NoMatch(f"Split '{n.name}' sizes are not static")
                    sizes = [shp[-1] // len(n.output)] * len(n.output)
                split = (idx, int(sum(sizes[:idx])), int(sizes[idx]))
                t = n.input[0]
            elif (
                n.op_type == "Add"
                and rope is None
                and all(self.gi.const(i) is None for i in n.input)
            ):
                rope_out, factor_at_rope = t, factor
                t, cos, sin, rn = self.rotary(n, what)
                rope = (cos, sin)
                nodes += rn
            else:
                raise _NoMatch(
                    f"node '{n.name}' ({n.op_type}) on the {what} path: expected Reshape/"
                    f"Transpose/Split, a scalar Mul/Div, a rotary embedding or the "
                    f"projection MatMul/Gemm"
                )
        raise _NoMatch(f"the {what} path is longer than expected")

    def rotary(self, add: NodeProto, what: str) -> tuple[str, np.ndarray, np.ndarray, list[str]]:
        """``add`` = ``t·cos + rotate_half(t)·sin`` (Llama / GPT-NeoX / RoFormer's rotary
        position embedding; ``rotate_half(t) = concat(-t[..., d/2:], t[..., :d/2])``
        written as Slice, Neg, Concat): (``t``, cos, sin ``[S, d_h]``, the nodes).
        The tables are evaluated on the sample inputs and must not depend on an
        input's values (positions 0..S-1, the same for every sample and head); the
        rotation itself is checked on the sample values, exactly."""
        why = (
            f"node '{add.name}' (Add) on the {what} path adds two activations but is not "
            f"a rotary embedding t·cos + rotate_half(t)·sin"
        )
        muls = [self.gi.producer.get(i) for i in add.input]
        if len(muls) != 2 or any(m is None or m.op_type != "Mul" for m in muls):
            raise _NoMatch(why)
        cat = None
        for i, m in enumerate(muls):
            assert m is not None
            for j in (0, 1):
                c = self.gi.producer.get(m.input[j])
                if c is not None and c.op_type == "Concat" and len(c.input) == 2:
                    cat, rot_mul, k = c, i, j
                    break
            if cat is not None:
                break
        if cat is None:
            raise _NoMatch(why + " (no Concat of the two halves)")
        m_rot, m_x = muls[rot_mul], muls[1 - rot_mul]
        assert m_rot is not None
        assert m_x is not None
        sin_t = m_rot.input[1 - k]
        neg = self.gi.producer.get(cat.input[0])
        if neg is None or neg.op_type != "Neg":
            raise _NoMatch(why + " (the Concat's first half is not negated)")
        srcs = [self.gi.producer.get(neg.input[0]), self.gi.producer.get(cat.input[1])]
        if any(sl is None or sl.op_type != "Slice" for sl in srcs):
            raise _NoMatch(why + " (the halves are not Slices)")
        t = srcs[0].input[0]  # type: ignore[union-attr]
        if srcs[1].input[0] != t or t not in m_x.input:  # type: ignore[union-attr]
            raise _NoMatch(why + " (the halves and the cos product read different tensors)")
        cos_t = m_x.input[1] if m_x.input[0] == t else m_x.input[0]
        inits = {i.name for i in self.m.graph.initializer}
        anc = Ancestry(self.gi, {i.name for i in self.m.graph.input} - inits)
        for tab in (cos_t, sin_t):
            src, _ = anc.trace(tab)
            if src:
                raise _NoMatch(
                    f"the rotary table '{tab}' on the {what} path depends on the input(s) "
                    f"{', '.join(src)} (positions from the data, e.g. left padding); the HLS "
                    f"block takes constant tables for positions 0..S-1"
                )
        vals = self.ev([t, cat.output[0], cos_t, sin_t])
        x = np.asarray(vals[t], np.float64)
        if x.ndim < 2 or x.shape[-1] % 2:
            raise _NoMatch(why + f" (head tensor {list(x.shape)} has no even last axis)")
        hh = x.shape[-1] // 2
        want = np.concatenate([-x[..., hh:], x[..., :hh]], axis=-1)
        if not np.array_equal(np.asarray(vals[cat.output[0]], np.float64), want):
            raise _NoMatch(why + " (the Concat is not rotate_half of the head tensor)")
        tabs = []
        for tab in (cos_t, sin_t):
            v = np.broadcast_to(np.asarray(vals[tab], np.float64), x.shape)
            flat = v.reshape(-1, *x.shape[-2:])
            if not (flat == flat[:1]).all():
                raise _NoMatch(f"the rotary table '{tab}' differs between samples or heads")
            tabs.append(flat[0].copy())
        used = [add.name, m_x.name, m_rot.name, cat.name, neg.name]
        used += [sl.name for sl in srcs if sl is not None]
        return t, tabs[0], tabs[1], used

    def down_layout(self, t: str, what: str) -> tuple[str, list[str]]:
        """From a tensor down through single-consumer layout ops (and HF sdpa's
        ``Where(IsNaN(p), 0, p)``) to the next real consumer's input."""
        nodes = []
        for _ in range(8):
            cons = self.gi.consumers.get(t, [])
            real = [c for c in cons if c.op_type not in ("Shape", "IsNaN")]
            if len(real) != 1:
                return t, nodes
            c = real[0]
            if (
                c.op_type in _LAYOUT
                or self.float_cast(c)
                or (c.op_type == "Where" and len(c.input) == 3 and c.input[2] == t)
            ):
                if c.op_type == "Where":
                    cond = self.gi.producer.get(c.input[0])
                    if cond is None or cond.op_type != "IsNaN":
                        return t, nodes
                    nodes.append(cond.name)
                nodes.append(c.name)
                t = c.output[0]
                continue
            return t, nodes
        raise _NoMatch(f"the {what} path is longer than expected")

    def channel_scale(self, t: str, d: int) -> tuple[str, np.ndarray]:
        """``t`` through a ``Mul`` by a constant per-channel vector (LayerScale, as in
        CaiT / DeiT-III / DINOv2 / BEiT: ``γ ⊙ branch`` before the residual add) and the
        layout ops after it: (the tensor the residual reads, γ of length ``d``; ones
        when there is none). γ is folded into the projection before it by the caller:
        ``(x·W + b) ⊙ γ = x·(W diag γ) + b ⊙ γ``, exact in real arithmetic, so the
        quantised block has no extra stage."""
        cons = [c for c in self.gi.consumers.get(t, []) if c.op_type != "Shape"]
        if len(cons) != 1 or cons[0].op_type != "Mul":
            return t, np.ones(d)
        mul = cons[0]
        other = mul.input[1] if mul.input[0] == t else mul.input[0]
        c = self.gi.const(other)
        if c is None or c.size not in (1, d) or (c.size == d and c.shape[-1] != d):
            return t, np.ones(d)
        lam = np.broadcast_to(np.asarray(c, np.float64).reshape(-1), (d,)).copy()
        out, _ = self.down_layout(mul.output[0], "scaled branch")
        return out, lam

    def float_cast(self, n: NodeProto) -> bool:
        """A ``Cast`` to float32 of a float32 tensor (``.to(query.dtype)``): a no-op."""
        return (
            n.op_type == "Cast"
            and int(_attr(n, "to", 0) or 0) == onnx.TensorProto.FLOAT  # type: ignore[call-overload]
            and self.gi.elem_type.get(n.input[0]) == onnx.TensorProto.FLOAT
        )

    def residual(self, t: str, what: str) -> tuple[NodeProto, str]:
        """The residual ``Add`` reading ``t``: (node, the other input)."""
        cons = [c for c in self.gi.consumers.get(t, []) if c.op_type == "Add"]
        if len(cons) != 1:
            raise _NoMatch(f"{what} '{t}' does not feed exactly one residual Add")
        a = cons[0]
        other = a.input[1] if a.input[0] == t else a.input[0]
        return a, other

    def layernorm_at(self, t: str, what: str) -> Site:
        """The LayerNorm site reading ``t`` (or ``t`` through layout ops: OPT flattens
        the residual stream to ``[B·S, D]`` before its FFN LayerNorm)."""
        for u in dict.fromkeys((t, self.down_layout(t, what)[0])):
            for st in self.by_in.get(u, []):
                if st.operator is Operator.LAYERNORM:
                    return st
        raise _NoMatch(f"{what} '{t}' is not the input of a LayerNorm site")

    def ffn_activation(self, ffn_in: str) -> str:
        """What follows the FFN's first projection when it is no GELU site (for the
        refusal): the node after ``ffn_in``'s projection, named with its op."""
        for c in self.gi.consumers.get(ffn_in, []):
            if c.op_type not in ("MatMul", "Gemm"):
                continue
            out = c.output[0]
            add = [a for a in self.gi.consumers.get(out, []) if a.op_type == "Add"]
            if c.op_type == "MatMul" and len(add) == 1:
                out = add[0].output[0]
            out, _ = self.down_layout(out, "FFN projection")
            nxt = [n for n in self.gi.consumers.get(out, []) if n.op_type != "Shape"]
            if nxt:
                names = ", ".join(f"'{n.name}' ({n.op_type})" for n in nxt)
                return (
                    f"the FFN projection '{c.name}' feeds {names}, neither a GELU site "
                    f"(erf, tanh or quick_gelu) nor one Relu (a gated FFN, SiLU(x·Wg) ⊙ "
                    f"(x·Wu), is one of these); the HLS block's FFN computes GELU or ReLU"
                )
        return f"'{ffn_in}' does not feed an FFN MatMul/Gemm -> GELU site or Relu"

    # -- one block -------------------------------------------------------------------
    def block(self, sm: Site) -> BlockMatch:
        gi = self.gi
        if sm.trailing or (sm.axis not in (-1, (gi.rank(sm.input) or 0) - 1)):
            raise _NoMatch(f"softmax {sm.name} is not over the last axis")
        # scores: mask parts, then scalar scales, then MatMul(Qh, KhT)
        t = sm.input
        mask_nodes = set() if sm.mask is None else {p.node for p in sm.mask.parts}
        factor = 1.0
        extra: list[str] = []
        for _ in range(12):
            n = self.producer(t, "the scores MatMul(Q, Kᵀ)")
            if n.name in mask_nodes:
                part = next(p for p in sm.mask.parts if p.node == n.name)  # type: ignore[union-attr]
                t = next(i for i in n.input if i not in (part.tensor, part.fill))
                extra.append(n.name)
                continue
            if n.op_type in ("Mul", "Div"):
                for i in (1, 0) if n.op_type == "Mul" else (1,):
                    c = self.scalar(n.input[i])
                    if c is not None and c != 0:
                        factor *= c if n.op_type == "Mul" else 1.0 / c
                        t = n.input[1 - i]
                        break
                else:
                    raise _NoMatch(
                        f"node '{n.name}' ({n.op_type}) before softmax {sm.name} scales by a "
                        f"non-scalar"
                    )
                extra.append(n.name)
                continue
            if n.op_type == "Cast" or n.op_type == "Identity":
                t = n.input[0]
                extra.append(n.name)
                continue
            if n.op_type != "MatMul":
                raise _NoMatch(
                    f"node '{n.name}' ({n.op_type}) before softmax {sm.name}: expected the "
                    f"scores MatMul(Q, Kᵀ), a scalar scale or the mask"
                )
            qk = n
            break
        else:
            raise _NoMatch(f"softmax {sm.name}: scores path too long")
        q = self.up_to_dense(qk.input[0], "query")
        k = self.up_to_dense(qk.input[1], "key")
        shapes = self.ev([qk.input[0], qk.input[1]])
        qs, ks = np.shape(shapes[qk.input[0]]), np.shape(shapes[qk.input[1]])
        if len(qs) < 3 or len(ks) < 3:
            raise _NoMatch(f"scores MatMul '{qk.name}' is not per head (Q shape {qs})")
        h, dh = int(qs[-3]), int(qs[-1])
        if ks[-2] != dh:
            raise _NoMatch(f"scores MatMul '{qk.name}': K is not transposed to [.., {dh}, S]")
        # P·V
        p_t, _ = self.down_layout(sm.output, "probabilities")
        pv = [c for c in gi.consumers.get(p_t, []) if c.op_type == "MatMul"]
        if len(pv) != 1 or pv[0].input[0] != p_t:
            raise _NoMatch(f"softmax {sm.name}'s output does not feed one MatMul(P, V)")
        pv_node = pv[0]
        v = self.up_to_dense(pv_node.input[1], "value")
        if not q.source == k.source == v.source:
            raise _NoMatch(
                f"Q, K and V of softmax {sm.name} read different tensors ({q.source}, "
                f"{k.source}, {v.source})"
            )
        if (q.rope is None) != (k.rope is None) or v.rope is not None:
            raise _NoMatch(
                f"softmax {sm.name}: a rotary embedding on "
                + ", ".join(n for n, pt in (("Q", q), ("K", k), ("V", v)) if pt.rope is not None)
                + " only; the HLS block rotates Q and K with the same tables"
            )
        if q.rope is not None and k.rope is not None:
            if not all(np.array_equal(a, b) for a, b in zip(q.rope, k.rope, strict=True)):
                raise _NoMatch(f"softmax {sm.name}: Q and K are rotated by different tables")
            if q.rope[0].shape != (int(qs[-2]), dh):
                raise _NoMatch(
                    f"softmax {sm.name}: rotary tables {list(q.rope[0].shape)} are not "
                    f"[{int(qs[-2])}, {dh}] (one row per position)"
                )
        d = q.w.shape[0]
        if h * dh != q.w.shape[1] or v.w.shape[1] != d or k.w.shape[1] != d:
            raise _NoMatch(f"softmax {sm.name}: heads {h} x {dh} do not match the width {d}")
        # context merge -> output projection
        ctx_t, _ = self.down_layout(pv_node.output[0], "context")
        o_cons = [c for c in gi.consumers.get(ctx_t, []) if c.op_type in ("MatMul", "Gemm")]
        if len(o_cons) != 1:
            raise _NoMatch(f"context after {pv_node.name!r} feeds no output projection")
        o_node = o_cons[0]
        o_out = o_node.output[0]
        if o_node.op_type == "MatMul":
            add = [c for c in gi.consumers.get(o_out, []) if c.op_type == "Add"]
            if len(add) == 1 and any(gi.const(i) is not None for i in add[0].input):
                o_out = add[0].output[0]
        od = self.dense(o_out)
        if od is None:
            raise _NoMatch(f"'{o_node.name}' is not a projection with constant weights")
        o_out_t, _ = self.down_layout(o_out, "attention output")  # [B*S, D] -> [B, S, D]
        _, wo, bo, _ = od
        o_out_t, lam1 = self.channel_scale(o_out_t, wo.shape[1])  # LayerScale
        wo, bo = wo * lam1[None, :], bo * lam1
        # residual 1 and the LayerNorm arrangement
        add1, x_res = self.residual(o_out_t, "the attention output")
        r1 = add1.output[0]
        src = q.source
        ln_src = self.by_out.get(src)
        prenorm = (
            ln_src is not None and ln_src.operator is Operator.LAYERNORM and (ln_src.input == x_res)
        )
        if prenorm:
            assert ln_src is not None
            ln1, x0 = ln_src, x_res
            ln2 = self.layernorm_at(r1, "the first residual")
            ffn_in, ffn_res = ln2.output, r1
        else:
            if x_res != src:
                raise _NoMatch(
                    f"residual Add '{add1.name}' adds '{x_res}', not the attention input "
                    f"'{src}' (post-LN) nor the input of the LayerNorm before it (pre-LN)"
                )
            x0 = src
            ln1 = self.layernorm_at(r1, "the first residual")
            ffn_in, ffn_res = ln1.output, ln1.output
        # feed-forward
        f1 = [c for c in gi.consumers.get(ffn_in, []) if c.op_type in ("MatMul", "Gemm", "Reshape")]
        gelu = None
        for st in self.sites:
            if st.operator is Operator.GELU:
                d1 = self.dense(self.strip_up(st.input))
                if d1 is not None and self.strip_layout(d1[0]) == ffn_in:
                    gelu, (_, w1, b1, _) = st, d1
                    break
        ffn_act = "gelu"
        if gelu is None and f1:
            relu = self.relu_ffn(ffn_in)
            if relu is not None:
                ffn_act, (w1, b1, relu_out) = "relu", relu
        if (gelu is None and ffn_act == "gelu") or not f1:
            raise _NoMatch(self.ffn_activation(ffn_in))
        g_out, _ = self.down_layout(
            gelu.output if gelu is not None else relu_out, "FFN activation output"
        )
        gate = self.gated_ffn(g_out, ffn_in) if gelu is not None else None
        if gate is not None:  # act(x·Wg + bg) ⊙ (x·Wu + bu)
            ffn_act, (wu, bu, u_t, z_t) = "gated", gate
            g_out, _ = self.down_layout(z_t, "FFN gate product")
        f2 = None
        for c in gi.consumers.get(g_out, []):
            if c.op_type in ("MatMul", "Gemm"):
                out = c.output[0]
                if c.op_type == "MatMul":
                    add = [a for a in gi.consumers.get(out, []) if a.op_type == "Add"]
                    if len(add) == 1 and any(gi.const(i) is not None for i in add[0].input):
                        out = add[0].output[0]
                f2 = (out, self.dense(out))
        if f2 is None or f2[1] is None:
            raise _NoMatch(f"the FFN activation '{g_out}' does not feed the second FFN projection")
        f2_out, (_, w2, b2, _) = f2  # type: ignore[misc]
        f2_t, _ = self.down_layout(f2_out, "FFN output")
        f2_t, lam2 = self.channel_scale(f2_t, w2.shape[1])
        w2, b2 = w2 * lam2[None, :], b2 * lam2
        add2, res2 = self.residual(f2_t, "the FFN output")
        if res2 != ffn_res and res2 != self.down_layout(ffn_res, "first residual")[0]:
            raise _NoMatch(
                f"residual Add '{add2.name}' adds '{res2}', expected '{ffn_res}' "
                f"({'first residual' if prenorm else 'first LayerNorm output'})"
            )
        if prenorm:
            out, _ = self.down_layout(add2.output[0], "block output")  # OPT: [B·S, D] back
            ln2_site = ln2
        else:
            ln2_site = self.layernorm_at(add2.output[0], "the second residual")
            out = ln2_site.output
        score_scale = factor * q.factor * k.factor
        g1, be1, _ = _ln_params(ln1, d)
        g2, be2, _ = _ln_params(ln2_site, d)
        weights = {
            "wq": q.w, "bq": q.b, "wk": k.w, "bk": k.b, "wv": v.w * v.factor,
            "bv": v.b * v.factor, "wo": wo, "bo": bo, "w1": w1, "b1": b1, "w2": w2,
            "b2": b2, "g1": g1, "be1": be1, "g2": g2, "be2": be2,
        }  # fmt: skip
        nodes: set[str] = set()
        stack = [out]
        while stack:
            tt = stack.pop()
            if tt == x0:
                continue
            n = gi.producer.get(tt)
            if n is None or n.name in nodes:
                continue
            nodes.add(n.name)
            stack.extend(i for i in n.input if i)
        tensors = {"q": q.dense_out, "k": k.dense_out, "v": v.dense_out, "ctx": ctx_t,
                   "attn": o_out_t, "ffn2": f2_t, "res1": r1}  # fmt: skip
        if ffn_act == "relu":
            tensors["hid"] = g_out  # max(H, 0): the positive range hid_fmt must hold
        if ffn_act == "gated":
            weights |= {"wu": wu, "bu": bu}
            tensors |= {"hid": u_t, "gate": z_t}  # U (hid_fmt), Z = act ⊙ U (gate_fmt)
        rope_gain: dict[str, float] = {}
        if q.rope is not None:
            weights |= {"rc": q.rope[0], "rs": q.rope[1]}
            tensors |= {"qr": q.rope_out, "kr": k.rope_out}
            rope_gain = {"qr": 1.0 / q.rope_factor, "kr": 1.0 / k.rope_factor}
        causal, window, key_mask, bias = self.mask_kind(sm, h)
        if bias is not None:
            weights["sb"] = bias.reshape(-1)
        return BlockMatch(
            x0, out, frozenset(nodes), weights, h, score_scale, sm, gelu, ln1, ln2_site,
            tensors, prenorm=prenorm, causal=causal, key_mask=key_mask,
            score_bias=bias is not None, window=window, ffn_act=ffn_act,
            rope=q.rope is not None, rope_gain=rope_gain,
        )  # fmt: skip

    def gated_ffn(
        self, act_out: str, ffn_in: str
    ) -> tuple[np.ndarray, np.ndarray, str, str] | None:
        """A gated FFN (Llama's ``down(act(gate(x)) ⊙ up(x))``, GLU variants): the FFN
        activation's output ``act_out`` times one ``Mul`` by a second projection of
        ``ffn_in``: (Wu, bu, the up projection's output, the product), or None."""
        cons = [c for c in self.gi.consumers.get(act_out, []) if c.op_type != "Shape"]
        if len(cons) != 1 or cons[0].op_type != "Mul":
            return None
        mul = cons[0]
        other = mul.input[1] if mul.input[0] == act_out else mul.input[0]
        up = self.strip_up(other)
        d = self.dense(up)
        if d is None or self.strip_layout(d[0]) != ffn_in:
            return None
        return d[1], d[2], up, mul.output[0]

    def relu_ffn(self, ffn_in: str) -> tuple[np.ndarray, np.ndarray, str] | None:
        """An FFN whose first projection (reading ``ffn_in``) feeds one ``Relu`` (OPT's
        ReLU FFN): (W1, b1, the Relu's output), or None."""
        for c in self.gi.consumers.get(ffn_in, []):
            if c.op_type not in ("MatMul", "Gemm"):
                continue
            out = c.output[0]
            add = [a for a in self.gi.consumers.get(out, []) if a.op_type == "Add"]
            if c.op_type == "MatMul" and len(add) == 1:
                out = add[0].output[0]
            d = self.dense(out)
            if d is None or self.strip_layout(d[0]) != ffn_in:
                continue
            t, _ = self.down_layout(out, "FFN projection")
            nxt = [n for n in self.gi.consumers.get(t, []) if n.op_type != "Shape"]
            if len(nxt) == 1 and nxt[0].op_type == "Relu":
                return d[1], d[2], nxt[0].output[0]
        return None

    def mask_kind(self, sm: Site, heads: int) -> tuple[bool, int, str | None, np.ndarray | None]:
        """(causal, local window, key-padding graph input, score bias ``[H, S, S]`` or
        None) of the mask in front of ``sm``, read off its bits on the sample inputs:
        the bits must be the same for every head and equal, on the real query rows, to
        key padding from one graph input (nonzero = token) OR'd with the causal
        triangle (and keys ``window`` or more behind the query: a local window) or not.
        An additive part computed from constants only may also add a bias (values
        above the mask's, e.g. BEiT's relative position bias): the same for every
        sample, it is the block's score bias; a bias that depends on an input is
        refused."""
        if sm.mask is None:
            return False, 0, None, None
        srcs = [s for p in sm.mask.parts if p.role == "padding" for s in p.sources]
        key_mask = srcs[0] if srcs else None
        vals = self.ev([sm.input, *sm.mask.tensors(), *([key_mask] if key_mask else [])])
        shape = np.shape(vals[sm.input])
        bias = None
        for p in sm.mask.parts:
            if p.kind == "additive":
                m = np.broadcast_to(np.asarray(vals[p.tensor], np.float64), shape)
                if not np.any(m[m > MASK_LIMIT] != 0):
                    continue
                per = np.where(m > MASK_LIMIT, m, 0.0).reshape(-1, *shape[-3:])
                why = (
                    "depends on an input" if p.sources
                    else "is a second one" if bias is not None
                    else "differs between samples" if not (per == per[:1]).all()
                    else None
                )  # fmt: skip
                if why is not None:
                    raise _NoMatch(
                        f"node '{p.node}' (Add) adds a bias to the scores before softmax "
                        f"{sm.name} that {why}; the HLS block adds one constant per-head "
                        f"table to the scores"
                    )
                bias = np.broadcast_to(per[0], (heads, shape[-2], shape[-1])).copy()
        bits = sm.mask.bits(vals, shape)
        if len(shape) < 3 or shape[-1] != shape[-2]:
            raise _NoMatch(f"softmax {sm.name}: scores {list(shape)} are not [.., S, S]")
        b3 = bits.reshape(-1, *shape[-3:]) if len(shape) >= 4 else bits[None]
        if not (b3 == b3[:, :1]).all():
            raise _NoMatch(f"the mask in front of softmax {sm.name} differs between heads")
        b3 = b3[:, 0]  # [B, S, S]
        s_ = shape[-1]
        if key_mask is not None:
            keep = np.asarray(vals[key_mask]).reshape(b3.shape[0], -1) != 0
            if keep.shape[1] != s_:
                raise _NoMatch(f"key mask input {key_mask} is not [batch, {s_}]")
        else:
            keep = np.ones((b3.shape[0], s_), dtype=bool)
        tri = np.triu(np.ones((s_, s_), dtype=bool), 1)
        pad = (~keep)[:, None, :]
        km = key_mask if (~keep).any() or key_mask else None
        for causal, window in ((False, 0), (True, 0), *((True, w) for w in range(1, s_))):
            want = pad | (tri[None] & causal)
            if window:
                want = want | np.tril(np.ones((s_, s_), dtype=bool), -window)[None]
            if np.array_equal(b3[keep], np.broadcast_to(want, b3.shape)[keep]):
                return causal, window, km, bias
        raise _NoMatch(
            f"the mask in front of softmax {sm.name} ({sm.mask.describe()}) is neither key "
            f"padding nor causal (with or without a local window) nor both; the HLS block "
            f"masks padding keys, future keys and keys a window behind only"
        )

    def strip_up(self, t: str) -> str:
        """Up through layout ops from a site input to the projection output."""
        for _ in range(4):
            n = self.gi.producer.get(t)
            if n is None or n.op_type not in ("Reshape", "Identity"):
                return t
            t = n.input[0]
        return t


def _float_layernorm(
    x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float, rms: bool = False
) -> np.ndarray:
    """LayerNorm over the last axis, or RMSNorm (``rms``: no mean taken out)."""
    mu = 0.0 if rms else x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def _float_rotary(t: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """``t·cos + rotate_half(t)·sin`` over the last axis (tables ``[S, d_h]``)."""
    hh = t.shape[-1] // 2
    return t * cos + np.concatenate([-t[..., hh:], t[..., :hh]], axis=-1) * sin


def float_block(bm: BlockMatch, x: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
    """The matched block in float64 on ``x`` ``[B, S, D]`` (``keep`` ``[B, S]``: real
    tokens): what the matcher believes the graph computes (checked against it)."""
    from hwapprox.export.refspec import FloatRefNormaliser, gelu_float

    w = bm.weights
    d = w["wo"].shape[1]
    h, dh = bm.heads, d // bm.heads
    b_, s_ = x.shape[0], x.shape[1]
    _, _, eps1 = _ln_params(bm.ln1, d)
    _, _, eps2 = _ln_params(bm.ln2, d)
    rms1, rms2 = bm.ln1.kind == "rmsnorm", bm.ln2.kind == "rmsnorm"
    a_in = _float_layernorm(x, w["g1"], w["be1"], eps1, rms1) if bm.prenorm else x

    def heads(t: np.ndarray) -> np.ndarray:
        return t.reshape(b_, s_, h, dh).transpose(0, 2, 1, 3)

    q = heads(a_in @ w["wq"] + w["bq"])
    k = heads(a_in @ w["wk"] + w["bk"])
    v = heads(a_in @ w["wv"] + w["bv"])
    if bm.rope:
        q, k = _float_rotary(q, w["rc"], w["rs"]), _float_rotary(k, w["rc"], w["rs"])
    scores = (q @ k.transpose(0, 1, 3, 2)) * bm.score_scale
    if bm.score_bias:
        scores = scores + w["sb"].reshape(h, s_, s_)
    mask = np.zeros((b_, 1, s_, s_), dtype=bool)
    if keep is not None:
        mask |= ~keep.astype(bool)[:, None, None, :]
    if bm.causal:
        mask |= np.triu(np.ones((s_, s_), dtype=bool), 1)
    if bm.window:
        mask |= np.tril(np.ones((s_, s_), dtype=bool), -bm.window)
    # the site's normaliser: softmax, or Softmax_1 / clipped softmax with the model's constants
    norm = FloatRefNormaliser(**bm.softmax.fields_for_spec())
    p = norm.reference(scores, axis=-1, mask=np.broadcast_to(mask, scores.shape))
    ctx = (p @ v).transpose(0, 2, 1, 3).reshape(b_, s_, d)
    r1 = x + ctx @ w["wo"] + w["bo"]
    y1 = (
        _float_layernorm(r1, w["g2"], w["be2"], eps2, rms2)
        if bm.prenorm
        else _float_layernorm(r1, w["g1"], w["be1"], eps1, rms1)
    )
    hh = y1 @ w["w1"] + w["b1"]
    g = gelu_float(hh, bm.gelu.gelu_form) if bm.gelu is not None else np.maximum(hh, 0.0)
    if bm.ffn_act == "gated":
        g = g * (y1 @ w["wu"] + w["bu"])
    f = g @ w["w2"] + w["b2"]
    if bm.prenorm:
        return r1 + f
    return _float_layernorm(y1 + f, w["g2"], w["be2"], eps2, rms2)


def match_blocks(
    model: ModelProto,
    feeds: Mapping[str, np.ndarray] | None = None,
    *,
    errors: dict[str, str] | None = None,
) -> list[BlockMatch]:
    """Encoder blocks of a loaded model (:func:`hwapprox.export.graph.load_model`),
    one per softmax site that heads one, in graph order.

    Recognised as real exporters write them: post-LN or pre-LN; input
    ``[B, S, D]`` or ``[S, D]``; Q/K/V by ``MatMul`` (+ ``Add`` either order),
    ``Gemm`` (also on a flattened ``[B·S, D]``) or one fused projection and a
    ``Split``; heads by ``Reshape``/``Transpose`` in any order; the score scale by
    ``Div``/``Mul`` on Q, K or the scores (constants, or scalars computed from
    shapes, evaluated on ``feeds``); a mask in front of the softmax (padding:
    its graph input becomes the block's key mask; causal); GELU and LayerNorm as
    the site finder finds them. ``errors`` (when given) receives, per softmax
    site that heads no block, the first node that broke the pattern.
    """
    ev = _Evaluator(model, feeds)
    mt = _Matcher(model, ev)
    out = []
    for st in mt.sites:
        if st.operator is not Operator.SOFTMAX:
            continue
        try:
            bm = mt.block(st)
            _check_float(bm, ev)
            out.append(bm)
        except _NoMatch as exc:
            if errors is not None:
                errors[st.name] = str(exc)
    return out


def _check_float(bm: BlockMatch, ev: _Evaluator) -> None:
    """The float re-computation of a match must reproduce the graph on sample inputs."""
    vals = ev([bm.input, bm.output] + ([bm.key_mask] if bm.key_mask else []))
    x = np.asarray(vals[bm.input], np.float64)
    y = np.asarray(vals[bm.output], np.float64)
    if x.ndim == 2:
        x, y = x[None], y[None]
    keep = None
    if bm.key_mask is not None:
        keep = np.asarray(vals[bm.key_mask]).reshape(x.shape[0], x.shape[1]) != 0
    got = float_block(bm, x, keep)
    rows = np.ones(x.shape[:2], dtype=bool) if keep is None else keep
    if not rows.any():
        return
    d, ref = (got - y)[rows], y[rows]
    rel = float(np.sqrt((d**2).mean() / max((ref**2).mean(), 1e-300)))
    # float32 graph vs float64: ~1e-7 (measured on the corpus); one wrong flag,
    # a 1 % scale error or a 0.01 bias error: >= 3e-4.
    if rel > MATCH_RTOL:
        raise _NoMatch(
            f"the block matched around softmax {bm.softmax.name} does not reproduce the graph "
            f"(relative rms error {rel:.3g} on real tokens, max {np.abs(d).max():.3g}): a "
            f"pattern the matcher misreads"
        )


def _seq_len(model: ModelProto, tensor: str, seq: int | None) -> int:
    """Sequence length of the block input ``[batch, seq, dim]`` or ``[seq, dim]``:
    static in the model, else ``seq`` (from the sample inputs)."""
    gi = GraphIndex(model)
    shape = gi.shape.get(tensor)
    if shape is not None and len(shape) in (2, 3):
        s = shape[-2]
        if isinstance(s, int):
            if seq is not None and seq != s:
                raise ExportError(f"block input {tensor} has sequence length {s}, not {seq}")
            return s
    if seq is None:
        raise ExportError(
            f"block input {tensor} has shape {shape}: its sequence length is not static; give "
            f"sample inputs (--inputs) whose sequence length the HLS design is built for"
        )
    return seq


def outside_nodes(model: ModelProto, matches: list[BlockMatch]) -> dict[str, list[NodeProto]]:
    """Nodes before the block chain (embeddings) and after it (pooler, head)."""
    inside = set().union(*(m.nodes for m in matches)) if matches else set()
    gi = GraphIndex(model)
    before: set[str] = set()
    stack = [matches[0].input] if matches else []
    while stack:
        t = stack.pop()
        n = gi.producer.get(t)
        if n is None or n.name in before:
            continue
        before.add(n.name)
        stack.extend(i for i in n.input if i)
    out: dict[str, list[NodeProto]] = {"before": [], "after": []}
    for n in model.graph.node:
        if n.name in inside or n.op_type == "Constant":
            continue
        out["before" if n.name in before else "after"].append(n)
    return out


def fold_blocks(
    model: ModelProto,
    *,
    matches: list[BlockMatch] | None = None,
    seq: int | None = None,
) -> tuple[ModelProto, list[BlockMatch]]:
    """The model cut to its chain of encoder blocks, each folded into one node.

    Returns a new model whose graph input is the first block's input (batch
    dimension fixed to 1, as hls4ml takes dim 0 as the batch) and whose output
    is the last block's output, with one ``HwApproxEncoderBlock`` node per block
    and no initializers; and the matches (float weights, site names). ``model``
    may be a loaded model with its ``matches``; ``seq`` fixes a dynamic
    sequence length.
    """
    m = model if matches is not None else load_model(model)
    matches = matches if matches is not None else match_blocks(m)
    if not matches:
        raise ExportError(
            "no transformer encoder block found (MHSA + residual + LayerNorm + FFN with GELU + "
            "residual + LayerNorm, as PyTorch exports it)"
        )
    for a, b in itertools.pairwise(matches):
        if b.input != a.output:
            raise ExportError(
                f"encoder blocks are not a chain: {b.ln2.name} reads {b.input}, not {a.output}"
            )
    seq = _seq_len(m, matches[0].input, seq)
    # hls4ml turns tensor names into C++ identifiers: exporters' names ('/Add_output_0')
    # are not, so the folded graph names its tensors block_in, block0_out, ...
    names = {matches[0].input: "block_in"}
    names.update({bm.output: f"block{i}_out" for i, bm in enumerate(matches)})
    d = matches[0].weights["wo"].shape[1]
    nodes = []
    for i, bm in enumerate(matches):
        # the optional weights a block does not use: one unread zero each
        ws = {n: np.zeros(1) for n in OPTIONAL_WEIGHTS} | bm.weights
        if bm.rope and bm.weights["rc"].shape[0] != seq:
            raise ExportError(
                f"block {i} rotates Q/K with tables for {bm.weights['rc'].shape[0]} positions, "
                f"not the sequence length {seq}: give sample inputs (--inputs) of the length "
                f"the design is built for"
            )
        attrs = {k: numpy_helper.from_array(v.astype(np.float32), k) for k, v in ws.items()}
        nodes.append(
            helper.make_node(
                OP_TYPE,
                [names[bm.input]],
                [names[bm.output]],
                name=f"encoder_block{i}",
                domain=DOMAIN,
                heads=bm.heads,
                score_scale=float(bm.score_scale),
                eps1=float(_ln_params(bm.ln1, d)[2]),
                eps2=float(_ln_params(bm.ln2, d)[2]),
                **(
                    {"gelu_form": bm.gelu.gelu_form, "gelu_site": bm.gelu.name}
                    if bm.gelu is not None
                    else {}
                ),
                ffn_act=bm.ffn_act,
                softmax_site=bm.softmax.name,
                ln1_site=bm.ln1.name,
                ln2_site=bm.ln2.name,
                prenorm=int(bm.prenorm),
                causal=int(bm.causal),
                masked=int(bm.key_mask is not None),
                score_bias=int(bm.score_bias),
                window=int(bm.window),
                rope=int(bm.rope),
                **{f"t_{k}": t for k, t in attrs.items()},
            )
        )
        if bm.key_mask is not None:
            nodes[-1].input.append(MASK_INPUT)
    tin = helper.make_tensor_value_info("block_in", onnx.TensorProto.FLOAT, [1, seq, d])
    ins = [tin]
    if any(bm.key_mask is not None for bm in matches):
        ins.append(helper.make_tensor_value_info(MASK_INPUT, onnx.TensorProto.FLOAT, [1, seq]))
    tout = helper.make_tensor_value_info(
        names[matches[-1].output], onnx.TensorProto.FLOAT, [1, seq, d]
    )
    vis = [
        helper.make_tensor_value_info(names[bm.output], onnx.TensorProto.FLOAT, [1, seq, d])
        for bm in matches[:-1]
    ]
    graph = helper.make_graph(nodes, f"{m.graph.name}_blocks", ins, [tout], value_info=vis)
    out = helper.make_model(
        graph,
        opset_imports=[helper.make_operatorsetid("", 17), helper.make_operatorsetid(DOMAIN, 1)],
        producer_name="hwapprox.export.blockmatch",
    )
    out.ir_version = m.ir_version
    return out, matches


def encoder_block_onnx(
    seq: int = 4,
    dim: int = 8,
    heads: int = 2,
    ffn: int = 16,
    *,
    layers: int = 1,
    gelu: str = "erf",
    layernorm: str = "op",
    seed: int = 0,
) -> ModelProto:
    """A seeded ``[1, seq, dim] -> [1, seq, dim]`` encoder (``layers`` blocks) as ONNX.

    Cut out of :func:`hwapprox.export.builders.bert_encoder` (the exporter-style
    graphs of the export package): from the embedding LayerNorm's output to
    the last block's output. The input is named ``x``.
    """
    from hwapprox.export.builders import EncoderShape, bert_encoder

    full = load_model(
        bert_encoder(
            EncoderShape(layers=layers, width=dim, heads=heads, ffn=ffn, seq=seq, batch=1),
            token_input=False,
            gelu=gelu,
            layernorm=layernorm,
            seed=seed,
        )
    )
    sites, _ = find_sites(full)
    lns = [s for s in sites if s.operator is Operator.LAYERNORM]
    start, end = lns[0].output, lns[-1].output
    ext = onnx.utils.Extractor(full)
    cut = ext.extract_model([start], [end])
    for n in cut.graph.node:
        for i, t in enumerate(n.input):
            if t == start:
                n.input[i] = "x"
    cut.graph.input[0].name = "x"
    onnx.checker.check_model(cut)
    return cut


#: op type of a standalone nonlinear site folded into one node
SITE_OP_TYPE = "HwApproxNonlinear"


def fold_sites(model: ModelProto) -> tuple[ModelProto, list[Site]]:
    """Every softmax/GELU/LayerNorm site of ``model`` replaced by one ``HwApproxNonlinear``.

    For models without a whole encoder block (or pieces of one): each site
    (single op or exporter pattern, :func:`hwapprox.export.patterns.find_sites`)
    becomes a node carrying ``operator``, ``site`` (its name), GELU ``form``,
    LayerNorm ``eps`` and ``t_gamma``/``t_beta`` as tensor attributes. Rows
    must be along the last axis. Constants left unused are dropped. The graph
    input keeps its shape (hls4ml takes dim 0 as the batch: give it 1).
    """
    m = load_model(model)
    sites, _ = find_sites(m)
    if not sites:
        raise ExportError("no softmax, GELU or LayerNorm site found")
    gi = GraphIndex(m)
    drop: set[str] = set()
    new_for: dict[str, NodeProto] = {}
    for s in sites:
        rank = gi.rank(s.input)
        if s.operator is not Operator.GELU and (
            s.axis is None or rank is None or s.axis not in (-1, rank - 1)
        ):
            raise ExportError(f"site {s.name}: rows must be along the last axis (axis={s.axis})")
        if s.operator is Operator.SOFTMAX and s.trailing and s.axis not in (-1, (rank or 0) - 1):
            raise ExportError(f"site {s.name}: opset < 13 softmax over several axes")
        attrs: dict[str, object] = {"operator": str(s.operator), "site": s.name}
        if s.operator is Operator.GELU:
            attrs["form"] = s.gelu_form
        if s.operator is Operator.LAYERNORM:
            shape = gi.shape.get(s.input) or ()
            n = shape[-1] if shape and isinstance(shape[-1], int) else None
            if n is None:
                raise ExportError(f"site {s.name}: the row length must be static")
            g, b, eps = _ln_params(s, n)
            attrs["eps"] = float(eps)
            attrs["t_gamma"] = numpy_helper.from_array(g.astype(np.float32), "gamma")
            attrs["t_beta"] = numpy_helper.from_array(b.astype(np.float32), "beta")
        new_for[s.nodes[-1]] = helper.make_node(
            SITE_OP_TYPE, [s.input], [s.output], name=f"hwa_{s.name}", domain=DOMAIN, **attrs
        )
        drop |= set(s.nodes)
    nodes = []
    for n in m.graph.node:
        if n.name in new_for:
            nodes.append(new_for[n.name])
        elif n.name not in drop:
            nodes.append(n)
    # drop constants (nodes and initializers) nothing reads any more
    used = {i for n in nodes for i in n.input} | {o.name for o in m.graph.output}
    nodes = [n for n in nodes if not (n.op_type == "Constant" and n.output[0] not in used)]
    used = {i for n in nodes for i in n.input} | {o.name for o in m.graph.output}
    inits = [t for t in m.graph.initializer if t.name in used]
    graph = helper.make_graph(
        nodes, m.graph.name, list(m.graph.input), list(m.graph.output), inits,
        value_info=list(m.graph.value_info),
    )  # fmt: skip
    opsets = [o for o in m.opset_import if o.domain != DOMAIN]
    out = helper.make_model(
        graph, opset_imports=[*opsets, helper.make_operatorsetid(DOMAIN, 1)],
        producer_name="hwapprox.export.blockmatch",
    )  # fmt: skip
    out.ir_version = m.ir_version
    return out, sites
