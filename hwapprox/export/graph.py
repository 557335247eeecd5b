"""ONNX loading and small graph helpers (producers, consumers, constants)."""

from __future__ import annotations

import copy
import functools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import ModelProto, NodeProto, TensorProto, numpy_helper

from hwapprox.export.errors import ExportError

__all__ = ["GraphIndex", "load_model", "max_runtime_ir_version", "opset_version"]


@functools.cache
def max_runtime_ir_version() -> int:
    """The newest model IR version the installed onnxruntime loads (probed once
    with a one-node model, from the installed onnx's IR version down)."""
    import onnxruntime as ort
    from onnx import helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "probe",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
    )
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    for ir in range(onnx.IR_VERSION, 6, -1):
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = ir
        try:
            ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        except Exception:
            continue
        return ir
    return 7


def _min_ir_for_opset(opset: int) -> int | None:
    """The oldest IR version whose release table entry covers ``ai.onnx`` ``opset``."""
    irs = [ir for _, ir, op, *_ in onnx.helper.VERSION_TABLE if op >= opset]
    return min(irs) if irs else None


def _max_opset_for_ir(ir: int) -> int:
    return max(op for _, v, op, *_ in onnx.helper.VERSION_TABLE if v <= ir)


def _lower_ir(model: ModelProto, label: str, notes: list[str] | None) -> None:
    """Lower ``model.ir_version`` to what onnxruntime reads when its opsets allow it
    (a note is appended), else raise naming the versions that would work."""
    import onnxruntime as ort

    have = int(model.ir_version)
    limit = max_runtime_ir_version()
    opsets = {imp.domain or "ai.onnx": int(imp.version) for imp in model.opset_import}
    opset = opsets.get("ai.onnx", 1)
    top = min(_max_opset_for_ir(limit), onnx.defs.onnx_opset_version())
    if opset > top:
        raise ExportError(
            f"{label}: model opset ai.onnx {opset} is newer than the installed onnx "
            f"{onnx.__version__} / onnxruntime {ort.__version__} know (opset <= {top}); "
            f"re-export with opset <= {top} (e.g. torch.onnx.export(..., opset_version=18))"
        )
    if have <= limit:
        return
    need = _min_ir_for_opset(opset)
    if need is None or need > limit:
        raise ExportError(
            f"{label}: model IR version {have} with opset ai.onnx {opset}; onnxruntime "
            f"{ort.__version__} reads IR <= {limit} (opset <= {_max_opset_for_ir(limit)}): "
            f"re-export with opset <= {_max_opset_for_ir(limit)}, or install an onnxruntime "
            f"that reads IR {have}"
        )
    model.ir_version = limit
    if notes is not None:
        notes.append(
            f"model IR version {have} lowered to {limit} (onnxruntime {ort.__version__} reads "
            f"IR <= {limit}; opset ai.onnx {opset} needs IR >= {need})"
        )


_MEMORY = "hwapprox-memory"  # (the external-data location of a weight given from memory)
#: initializers this large are left out of the copy that shape inference reads
_LIGHT_MIN_BYTES = 4096


def weight_stub(init: TensorProto) -> TensorProto:
    """An initializer's proto without its data: an external-data stub (name, type and
    dims), for protos whose readers need no values (shape inference) or get them from
    memory (:func:`hwapprox.export.emulate.make_session`'s ``shared``)."""
    stub = TensorProto(name=init.name, data_type=init.data_type, dims=init.dims)
    stub.data_location = TensorProto.EXTERNAL
    entry = stub.external_data.add()
    entry.key, entry.value = "location", _MEMORY
    return stub


def _copy_fields(dst: object, src: object, skip: str) -> None:
    """Every set field of the proto ``src`` but ``skip`` onto ``dst`` (copies)."""
    for fd, value in src.ListFields():  # type: ignore[attr-defined]
        if fd.name == skip:
            continue
        repeated = getattr(fd, "is_repeated", None)  # (older protobuf: the label)
        if repeated is None:
            repeated = fd.label == fd.LABEL_REPEATED
        if repeated:
            getattr(dst, fd.name).extend(value)
        elif fd.message_type is not None:
            getattr(dst, fd.name).CopyFrom(value)
        else:
            setattr(dst, fd.name, value)


def with_initializers(model: ModelProto, inits: Iterable[TensorProto]) -> ModelProto:
    """A copy of ``model`` whose graph holds ``inits`` as its initializers (the model's
    own initializers are not copied: no weight is copied twice)."""
    out = ModelProto()
    _copy_fields(out, model, "graph")
    _copy_fields(out.graph, model.graph, "initializer")
    out.graph.initializer.extend(inits)
    return out


def infer_shapes(model: ModelProto) -> ModelProto:
    """``onnx.shape_inference.infer_shapes(model, data_prop=True)``, in place, run on a
    copy whose large initializers are :func:`weight_stub` s: inference reads an
    initializer's type and dims (and the values of small ones, which the copy keeps),
    so only the weights' serialisation through it is saved (0.27-0.30 s on a 90 MB
    ViT-S). The inferred value infos, inputs and outputs are put on ``model``."""
    light = with_initializers(
        model,
        (
            weight_stub(t)
            if t.data_location != TensorProto.EXTERNAL and len(t.raw_data) >= _LIGHT_MIN_BYTES
            else t
            for t in model.graph.initializer
        ),
    )
    done = onnx.shape_inference.infer_shapes(light, data_prop=True)
    for name in ("value_info", "input", "output"):
        model.graph.ClearField(name)
        getattr(model.graph, name).extend(getattr(done.graph, name))
    return model


def load_model(
    source: str | Path | ModelProto, *, check: bool = True, notes: list[str] | None = None
) -> ModelProto:
    """Load an ONNX model (path or proto), check it, name every node, infer shapes.

    Returns a copy; the caller's proto is never modified. Nodes without a name
    get ``<op_type>_<index>``; duplicate names get a ``_<index>`` suffix, so
    node names identify sites. A model saved with a newer IR version than the
    installed onnxruntime reads gets its IR version lowered when its opset
    allows it (a line is appended to ``notes``); otherwise the error names
    the versions that would work.
    """
    if isinstance(source, ModelProto):
        model = copy.deepcopy(source)
        label = f"model {source.graph.name or '(unnamed)'}"
    else:
        path = Path(source)
        label = str(path)
        if not path.exists():
            raise ExportError(f"ONNX model {label!r} does not exist")
        if not path.is_file():
            raise ExportError(f"ONNX model {label!r} is not a file")
        try:
            model = onnx.load(str(path))
        except Exception as exc:  # protobuf DecodeError and friends
            raise ExportError(
                f"{label!r} is not an ONNX model (protobuf parse failed: "
                f"{type(exc).__name__}: {exc})"
            ) from None
        if not model.graph.node and not model.graph.output:
            raise ExportError(f"{label!r} is not an ONNX model (it has an empty graph)")
    _lower_ir(model, label, notes)
    if check:
        try:
            onnx.checker.check_model(model)
        except onnx.checker.ValidationError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise ExportError(f"{label} fails the ONNX checker: {first}") from None
    seen: dict[str, int] = {}
    for i, node in enumerate(model.graph.node):
        name = node.name or f"{node.op_type}_{i}"
        if name in seen:
            name = f"{name}_{i}"
        seen[name] = i
        node.name = name
    try:
        model = infer_shapes(model)
    except Exception as exc:
        raise ExportError(f"{label}: ONNX shape inference failed: {exc}") from None
    fused = any(n.op_type == "Attention" and n.domain in ("", "ai.onnx") for n in model.graph.node)
    if fused and decompose_attention(model, notes):
        model = infer_shapes(model)
    return model


def _attr_value(node: NodeProto, name: str, default: object = None) -> object:
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def decompose_attention(model: ModelProto, notes: list[str] | None = None) -> int:
    """Rewrite opset-23 ``Attention`` nodes into ``MatMul``/``Softmax``/``MatMul`` in place.

    torch's dynamo exporter at opset >= 23 writes ``scaled_dot_product_attention``
    as one ``Attention`` node, whose softmax no site can reach. A node with 4-D
    Q/K/V, no past key/value, no softcap, equal head counts and only its ``Y``
    output used becomes ``Softmax(mask(Q·Kᵀ·scale))·V``: ``scale`` the attribute
    or ``1/√head_dim``; a bool ``attn_mask`` as ``Where(mask, scores, lowest)``, a
    float one as ``Add``; ``is_causal`` as ``Where`` of a ``Trilu`` triangle. The
    float32 lowest value (not -inf) keeps a fully masked row finite (uniform,
    where the ``Attention`` op outputs zeros). Other nodes are left as they are
    (the site finder reports them). Returns the number of nodes rewritten.
    """
    from onnx import TensorProto, helper

    g = model.graph
    elem: dict[str, int] = {}
    rank: dict[str, int] = {}
    for vi in [*g.input, *g.value_info, *g.output]:
        if vi.type.HasField("tensor_type"):
            elem[vi.name] = vi.type.tensor_type.elem_type
            if vi.type.tensor_type.HasField("shape"):
                rank[vi.name] = len(vi.type.tensor_type.shape.dim)
    for init in g.initializer:
        elem[init.name] = init.data_type
        rank[init.name] = len(init.dims)
    used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
    new_nodes: list[NodeProto] = []
    done = 0
    lowest = float(np.finfo(np.float32).min)
    for node in g.node:
        if node.op_type != "Attention" or node.domain not in ("", "ai.onnx"):
            new_nodes.append(node)
            continue
        q, k, v = node.input[0], node.input[1], node.input[2]
        mask = node.input[3] if len(node.input) > 3 else ""
        why = None
        if any(i for i in node.input[4:]):
            why = "past key/value inputs"
        elif any(o in used for o in node.output[1:] if o):
            why = "present key/value or qk outputs used"
        elif any(rank.get(t) != 4 for t in (q, k, v)):
            why = "Q/K/V are not 4-D [batch, heads, seq, head_dim]"
        elif float(_attr_value(node, "softcap", 0.0) or 0.0) != 0.0:  # type: ignore[arg-type]
            why = "softcap"
        elif _attr_value(node, "kv_num_heads") != _attr_value(node, "q_num_heads"):
            why = "grouped-query heads"
        elif elem.get(q) != TensorProto.FLOAT:
            why = "Q is not float32"
        if why is not None:
            if notes is not None:
                notes.append(f"Attention node '{node.name}' left fused ({why}): no softmax site")
            new_nodes.append(node)
            continue
        p = node.name

        def mk(op: str, ins: list[str], tag: str, _p: str = p, **kw: object) -> str:
            out = f"{_p}/{tag}_out"
            new_nodes.append(helper.make_node(op, ins, [out], name=f"{_p}/{tag}", **kw))
            return out

        def const(tag: str, value: np.ndarray, _p: str = p) -> str:
            out = f"{_p}/{tag}"
            new_nodes.append(
                helper.make_node(
                    "Constant", [], [out], name=out, value=numpy_helper.from_array(value, out)
                )
            )
            return out

        kt = mk("Transpose", [k], "KT", perm=[0, 1, 3, 2])
        scores = mk("MatMul", [q, kt], "QK")
        scale = _attr_value(node, "scale")
        if scale is None:
            hd = mk("Shape", [q], "HeadDim", start=-1)
            hdf = mk("Cast", [hd], "HeadDimF", to=TensorProto.FLOAT)
            scores = mk("Div", [scores, mk("Sqrt", [hdf], "SqrtHeadDim")], "Scale")
        else:
            scores = mk("Mul", [scores, const("scale", np.array(scale, np.float32))], "Scale")
        fill = None
        if int(_attr_value(node, "is_causal", 0) or 0):  # type: ignore[arg-type]
            fill = const("lowest", np.array(lowest, np.float32))
            sq = mk("Shape", [scores], "ScoresShape", start=-2)
            ones = mk(
                "ConstantOfShape",
                [sq],
                "Ones",
                value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]),
            )
            tri = mk("Cast", [mk("Trilu", [ones], "Causal", upper=0)], "CausalBool", to=9)
            scores = mk("Where", [tri, scores, fill], "CausalMask")
        if mask:
            if elem.get(mask) == TensorProto.BOOL:
                fill = fill or const("lowest", np.array(lowest, np.float32))
                scores = mk("Where", [mask, scores, fill], "Mask")
            else:
                scores = mk("Add", [scores, mask], "Mask")
        probs = mk("Softmax", [scores], "Softmax", axis=-1)
        new_nodes.append(helper.make_node("MatMul", [probs, v], [node.output[0]], name=f"{p}/PV"))
        done += 1
        if notes is not None:
            notes.append(
                f"Attention node '{p}' (opset {opset_version(model)}) decomposed into "
                f"MatMul/Softmax/MatMul so its softmax is a site"
            )
    if done:
        del g.node[:]
        g.node.extend(new_nodes)
    return done


def opset_version(model: ModelProto, domain: str = "") -> int:
    """Opset of the default (``ai.onnx``) domain."""
    for imp in model.opset_import:
        if imp.domain in (domain, "ai.onnx" if domain == "" else domain):
            return int(imp.version)
    raise ExportError(f"model imports no opset for domain {domain or 'ai.onnx'!r}")


@dataclass
class GraphIndex:
    """Producers, consumers, constants and types of one (main) graph."""

    model: ModelProto
    producer: dict[str, NodeProto] = field(default_factory=dict)
    consumers: dict[str, list[NodeProto]] = field(default_factory=lambda: defaultdict(list))
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    elem_type: dict[str, int] = field(default_factory=dict)
    shape: dict[str, tuple[int | str | None, ...] | None] = field(default_factory=dict)
    graph_outputs: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        g = self.model.graph
        for init in g.initializer:
            self.constants[init.name] = numpy_helper.to_array(init)
            self.elem_type[init.name] = init.data_type
            self.shape[init.name] = tuple(init.dims)
        for node in g.node:
            for out in node.output:
                if out:
                    self.producer[out] = node
            for inp in node.input:
                if inp:
                    self.consumers[inp].append(node)
            if node.domain not in ("", "ai.onnx"):
                continue
            if node.op_type == "Constant":
                value = _constant_value(node)
                if value is not None:
                    self.constants[node.output[0]] = value
            elif node.op_type in FOLDED_OPS and node.output and node.output[0]:
                value = _fold(node, self.constants)
                if value is not None:
                    self.constants[node.output[0]] = value
        for vi in [*g.input, *g.value_info, *g.output]:
            t = vi.type.tensor_type
            if vi.type.HasField("tensor_type"):
                self.elem_type.setdefault(vi.name, t.elem_type)
                if t.HasField("shape"):
                    dims: list[int | str | None] = []
                    for d in t.shape.dim:
                        if d.HasField("dim_value"):
                            dims.append(int(d.dim_value))
                        elif d.HasField("dim_param"):
                            dims.append(d.dim_param)
                        else:
                            dims.append(None)
                    self.shape.setdefault(vi.name, tuple(dims))
                else:
                    self.shape.setdefault(vi.name, None)
        self.graph_outputs = {o.name for o in g.output}

    def const(self, name: str) -> np.ndarray | None:
        """The value of a constant tensor (initializer, ``Constant`` node, or one of
        :data:`FOLDED_OPS` applied to constants), else None."""
        return self.constants.get(name)

    def scalar(self, name: str) -> float | None:
        """A constant holding one value (any shape of size 1), as float."""
        v = self.constants.get(name)
        if v is None or v.size != 1:
            return None
        return float(np.asarray(v, dtype=np.float64).reshape(()))

    def rank(self, name: str) -> int | None:
        s = self.shape.get(name)
        return None if s is None else len(s)

    def only_consumer(self, name: str) -> NodeProto | None:
        """The single consumer of an intermediate tensor (None if several or a graph output)."""
        cons = self.consumers.get(name, [])
        if len(cons) != 1 or name in self.graph_outputs:
            return None
        return cons[0]

    def sole_consumer(self, name: str) -> NodeProto | None:
        """The consumer of a tensor read by exactly one node (graph outputs allowed)."""
        cons = self.consumers.get(name, [])
        return cons[0] if len(cons) == 1 else None

    def internal(self, tensors: Iterable[str], nodes: set[str]) -> bool:
        """True when every tensor is consumed only by ``nodes`` and is no graph output."""
        for t in tensors:
            if t in self.graph_outputs:
                return False
            if any(c.name not in nodes for c in self.consumers.get(t, [])):
                return False
        return True


#: ops whose output is a constant when their data input is one (and the shape/axes input
#: of ``Reshape``/``Unsqueeze``/``Squeeze``): exporters reach deduplicated or retyped
#: initializers through them (torch's TorchScript exporter writes ``Identity`` of one
#: initializer for every tied or equal weight)
FOLDED_OPS = frozenset({"Identity", "Cast", "Reshape", "Unsqueeze", "Squeeze"})


def _fold(node: NodeProto, constants: dict[str, np.ndarray]) -> np.ndarray | None:
    """The value of ``node`` (one of :data:`FOLDED_OPS`) on constant inputs, else None."""
    if not node.input or node.input[0] not in constants:
        return None
    x = constants[node.input[0]]
    op = node.op_type
    if op == "Identity":
        return x
    if op == "Cast":
        to = _attr_value(node, "to")
        if to is None or int(to) == onnx.TensorProto.STRING:  # type: ignore[call-overload]
            return None
        dtype = onnx.helper.tensor_dtype_to_np_dtype(int(to))  # type: ignore[call-overload]
        return np.asarray(x).astype(dtype)
    second = node.input[1] if len(node.input) > 1 and node.input[1] else None
    if second is not None and second not in constants:
        return None
    arg = None if second is None else [int(v) for v in np.asarray(constants[second]).ravel()]
    if op == "Reshape":
        if arg is None:
            return None
        allow_zero = int(_attr_value(node, "allowzero", 0) or 0)  # type: ignore[call-overload]
        shape = [x.shape[i] if (d == 0 and not allow_zero) else d for i, d in enumerate(arg)]
        try:
            return np.reshape(x, shape)
        except ValueError:
            return None
    axes = arg if arg is not None else _attr_value(node, "axes")
    if op == "Unsqueeze":
        if axes is None:
            return None
        out = np.asarray(x)
        rank = out.ndim + len(axes)  # type: ignore[arg-type]
        for a in sorted(int(a) % rank for a in axes):  # type: ignore[union-attr]
            out = np.expand_dims(out, a)
        return out
    # Squeeze
    if axes is None:
        return np.squeeze(x)
    try:
        return np.squeeze(x, axis=tuple(int(a) for a in axes))  # type: ignore[union-attr]
    except ValueError:
        return None


def _constant_value(node: NodeProto) -> np.ndarray | None:
    for attr in node.attribute:
        if attr.name == "value":
            return numpy_helper.to_array(attr.t)
        if attr.name == "value_float":
            return np.array(attr.f, dtype=np.float32)
        if attr.name == "value_floats":
            return np.array(list(attr.floats), dtype=np.float32)
        if attr.name == "value_int":
            return np.array(attr.i, dtype=np.int64)
        if attr.name == "value_ints":
            return np.array(list(attr.ints), dtype=np.int64)
    return None
