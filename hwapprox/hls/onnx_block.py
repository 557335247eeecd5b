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
op or decomposed), FFN with GELU (opset 20 ``Gelu`` or the Erf/tanh patterns;
sites found by :func:`hwapprox.export.patterns.find_sites`), residual ``Add``,
LayerNorm.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import ModelProto, NodeProto, helper, numpy_helper

from hwapprox.approx.base import Operator
from hwapprox.export.errors import ExportError
from hwapprox.export.graph import GraphIndex, load_model
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
OP_TYPE = "HwApproxEncoderBlock"
FLOAT_ATTRS = ("score_scale", "eps1", "eps2")


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
    gelu: Site
    ln1: Site
    ln2: Site
    #: float tensors of the linear stages (calibration): q/k/v projections (before
    #: the score scale), ctx (P·V merged), attn (output projection), ffn2
    tensors: dict[str, str] = field(default_factory=dict)

    @property
    def sites(self) -> dict[str, str]:
        """Role -> site name (the names the approximation config uses)."""
        return {
            "softmax": self.softmax.name,
            "gelu": self.gelu.name,
            "ln1": self.ln1.name,
            "ln2": self.ln2.name,
        }


def _node(gi: GraphIndex, tensor: str, op: str) -> NodeProto:
    n = gi.producer.get(tensor)
    if n is None or n.op_type != op:
        raise _NoMatch(f"{tensor} is not produced by {op}")
    return n


def _attr(node: NodeProto, name: str, default: object = None) -> object:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _dense(gi: GraphIndex, tensor: str) -> tuple[str, np.ndarray, np.ndarray]:
    """``tensor = MatMul(u, W) + b`` with constant W [in, out], b [out]: (u, W, b)."""
    add = _node(gi, tensor, "Add")
    for mm_out, bias in (tuple(add.input), tuple(add.input)[::-1]):
        mm = gi.producer.get(mm_out)
        b = gi.const(bias)
        if mm is None or mm.op_type != "MatMul" or b is None:
            continue
        w = gi.const(mm.input[1])
        if w is None or w.ndim != 2 or b.reshape(-1).shape != (w.shape[1],):
            continue
        return mm.input[0], np.asarray(w, np.float64), np.asarray(b, np.float64).reshape(-1)
    raise _NoMatch(f"{tensor} is not MatMul(x, W) + b with constant W, b")


def _heads(gi: GraphIndex, tensor: str, perm: list[int]) -> tuple[str, int, int]:
    """``Transpose(Reshape(t, [0, 0, H, dh]), perm)``: (t, H, dh)."""
    tr = _node(gi, tensor, "Transpose")
    if list(_attr(tr, "perm", [])) != perm:  # type: ignore[arg-type]
        raise _NoMatch(f"{tr.name} perm is not {perm}")
    rs = _node(gi, tr.input[0], "Reshape")
    shape = gi.const(rs.input[1])
    if shape is None or shape.size != 4:
        raise _NoMatch(f"{rs.name} has no constant 4-D shape")
    return rs.input[0], int(shape.reshape(-1)[2]), int(shape.reshape(-1)[3])


def _ln_params(site: Site, d: int) -> tuple[np.ndarray, np.ndarray, float]:
    g = np.ones(d) if site.gamma is None else np.broadcast_to(site.gamma, (d,)).astype(np.float64)
    b = np.zeros(d) if site.beta is None else np.broadcast_to(site.beta, (d,)).astype(np.float64)
    return g, b, float(site.epsilon if site.epsilon is not None else 1e-5)


def _match_one(gi: GraphIndex, ln2: Site, by_out: dict[str, Site]) -> BlockMatch:
    add2 = _node(gi, ln2.input, "Add")
    for x1, f2 in (tuple(add2.input), tuple(add2.input)[::-1]):
        ln1 = by_out.get(x1)
        if ln1 is None or ln1.operator is not Operator.LAYERNORM:
            continue
        try:
            g_out, w2, b2 = _dense(gi, f2)
        except _NoMatch:
            continue
        gelu = by_out.get(g_out)
        if gelu is None or gelu.operator is not Operator.GELU:
            continue
        break
    else:
        raise _NoMatch(f"{ln2.name}: input is not LayerNorm output + FFN(GELU)")
    u1, w1, b1 = _dense(gi, gelu.input)
    if u1 != x1:
        raise _NoMatch(f"FFN input {u1} is not the first LayerNorm output {x1}")
    add1 = _node(gi, ln1.input, "Add")
    for cand, o_out in (tuple(add1.input), tuple(add1.input)[::-1]):
        x0 = cand
        try:
            ctx, wo, bo = _dense(gi, o_out)
            merge = _node(gi, ctx, "Reshape")
            tr = _node(gi, merge.input[0], "Transpose")
            if list(_attr(tr, "perm", [])) != [0, 2, 1, 3]:  # type: ignore[arg-type]
                raise _NoMatch("context transpose perm")
            pv = _node(gi, tr.input[0], "MatMul")
            break
        except _NoMatch:
            continue
    else:
        raise _NoMatch(f"{ln1.name}: input is not x + attention output")
    sm = by_out.get(pv.input[0])
    if sm is None or sm.operator is not Operator.SOFTMAX:
        raise _NoMatch("P·V does not read a softmax site")
    if sm.trailing or sm.axis not in (-1, 3):
        raise _NoMatch(f"softmax {sm.name} is not over the last axis")
    scale_node = gi.producer.get(sm.input)
    if scale_node is None or scale_node.op_type not in ("Div", "Mul"):
        raise _NoMatch("scores are not scaled by Div/Mul")
    c = gi.scalar(scale_node.input[1])
    if c is None or c == 0:
        raise _NoMatch(f"{scale_node.name} does not scale by a constant")
    score_scale = 1.0 / c if scale_node.op_type == "Div" else c
    qk = _node(gi, scale_node.input[0], "MatMul")
    xq, h, dh = _heads(gi, qk.input[0], [0, 2, 1, 3])
    xk, hk, _ = _heads(gi, qk.input[1], [0, 2, 3, 1])
    xv, hv, _ = _heads(gi, pv.input[1], [0, 2, 1, 3])
    if not h == hk == hv:
        raise _NoMatch("Q, K, V head counts differ")
    ins = {}
    for role, t in (("q", xq), ("k", xk), ("v", xv)):
        u, w, b = _dense(gi, t)
        if u != x0:
            raise _NoMatch(f"{role} projection reads {u}, not the block input {x0}")
        ins[role] = (w, b)
    d = wo.shape[1]
    if h * dh != d:
        raise _NoMatch(f"heads {h} x head_dim {dh} != width {d}")
    g1, be1, _ = _ln_params(ln1, d)
    g2, be2, _ = _ln_params(ln2, d)
    weights = {
        "wq": ins["q"][0], "bq": ins["q"][1], "wk": ins["k"][0], "bk": ins["k"][1],
        "wv": ins["v"][0], "bv": ins["v"][1], "wo": wo, "bo": bo, "w1": w1, "b1": b1,
        "w2": w2, "b2": b2, "g1": g1, "be1": be1, "g2": g2, "be2": be2,
    }  # fmt: skip
    # every node between x0 and the block output
    nodes: set[str] = set()
    stack = [ln2.output]
    while stack:
        t = stack.pop()
        if t == x0:
            continue
        n = gi.producer.get(t)
        if n is None or n.name in nodes:
            continue
        nodes.add(n.name)
        stack.extend(i for i in n.input if i)
    produced = {o for n in gi.model.graph.node if n.name in nodes for o in n.output if o}
    if not gi.internal(produced - {ln2.output}, nodes):
        raise _NoMatch("an intermediate tensor of the block is used outside it")
    tensors = {"q": xq, "k": xk, "v": xv, "ctx": ctx, "attn": o_out, "ffn2": f2}
    return BlockMatch(
        x0, ln2.output, frozenset(nodes), weights, h, score_scale, sm, gelu, ln1, ln2, tensors
    )


def match_blocks(model: ModelProto) -> list[BlockMatch]:
    """Every encoder block of a loaded model (:func:`hwapprox.export.graph.load_model`)."""
    gi = GraphIndex(model)
    sites, _ = find_sites(model)
    by_out = {s.output: s for s in sites}
    out = []
    for s in sites:
        if s.operator is Operator.LAYERNORM:
            try:
                out.append(_match_one(gi, s, by_out))
            except _NoMatch:
                continue
    return out


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
    d = matches[0].weights["wo"].shape[1]
    nodes = []
    for i, bm in enumerate(matches):
        attrs = {k: numpy_helper.from_array(v.astype(np.float32), k) for k, v in bm.weights.items()}
        nodes.append(
            helper.make_node(
                OP_TYPE,
                [bm.input],
                [bm.output],
                name=f"encoder_block{i}",
                domain=DOMAIN,
                heads=bm.heads,
                score_scale=float(bm.score_scale),
                eps1=float(_ln_params(bm.ln1, d)[2]),
                eps2=float(_ln_params(bm.ln2, d)[2]),
                gelu_form="tanh" if bm.gelu.approximate == "tanh" else "erf",
                softmax_site=bm.softmax.name,
                gelu_site=bm.gelu.name,
                ln1_site=bm.ln1.name,
                ln2_site=bm.ln2.name,
                **{f"t_{k}": t for k, t in attrs.items()},
            )
        )
    tin = helper.make_tensor_value_info(matches[0].input, onnx.TensorProto.FLOAT, [1, seq, d])
    tout = helper.make_tensor_value_info(matches[-1].output, onnx.TensorProto.FLOAT, [1, seq, d])
    vis = [
        helper.make_tensor_value_info(bm.output, onnx.TensorProto.FLOAT, [1, seq, d])
        for bm in matches[:-1]
    ]
    graph = helper.make_graph(nodes, f"{m.graph.name}_blocks", [tin], [tout], value_info=vis)
    out = helper.make_model(
        graph,
        opset_imports=[helper.make_operatorsetid("", 17), helper.make_operatorsetid(DOMAIN, 1)],
        producer_name="hwapprox.hls.onnx_block",
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
            attrs["form"] = "tanh" if s.approximate == "tanh" else "erf"
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
        producer_name="hwapprox.hls.onnx_block",
    )  # fmt: skip
    out.ir_version = m.ir_version
    return out, sites
