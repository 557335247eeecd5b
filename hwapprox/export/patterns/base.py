"""The finder's core: the graph, the sites found so far, and the single-operator sites
(``Softmax``, ``LayerNormalization``, ``RMSNormalization``, ``Gelu``) with the
helpers every pattern family shares."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto

from hwapprox.approx.base import Operator
from hwapprox.export.graph import GraphIndex, opset_version
from hwapprox.export.masks import find_mask
from hwapprox.export.patterns.site import (
    _SHAPE_ONLY_OPS,
    Site,
    _attr,
    _close,
    _other,
)

__all__ = ["FinderBase"]


class FinderBase:
    """Sites of one model, found pattern family by pattern family."""

    def __init__(self, model: ModelProto) -> None:
        self.model = model
        self.g = GraphIndex(model)
        self.opset = opset_version(model)
        self.used: set[str] = set()
        self.sites: list[Site] = []
        self.unsupported: list[Site] = []
        self.skipped: dict[str, str] = {}

    def _is(self, node: NodeProto | None, op: str) -> bool:
        return node is not None and node.op_type == op and node.domain in ("", "ai.onnx")

    def _add(self, site: Site) -> None:
        if self.used.intersection(site.nodes):
            return
        self.used.update(site.nodes)
        self.sites.append(site)

    def _add_one(self, t: str) -> NodeProto | None:
        a = self.g.sole_consumer(t)
        if self._is(a, "Add") and _close(self.g.scalar(_other(a, t) or ""), 1.0):  # type: ignore[arg-type]
            return a
        return None

    def op_sites(self) -> None:
        g = self.g
        for node in self.model.graph.node:
            if node.domain not in ("", "ai.onnx"):
                continue
            if node.op_type == "Softmax":
                axis, trailing = self._softmax_axis(node)
                self._add(
                    Site(
                        node.name,
                        Operator.SOFTMAX,
                        node.input[0],
                        node.output[0],
                        (node.name,),
                        axis=axis,
                        trailing=trailing,
                        shape=g.shape.get(node.input[0]),
                        mask=find_mask(g, node.input[0]),
                    )
                )
            elif node.op_type == "Gelu":
                approx = _attr(node, "approximate", b"none")
                approx = approx.decode() if isinstance(approx, bytes) else str(approx)
                self._add(
                    Site(
                        node.name,
                        Operator.GELU,
                        node.input[0],
                        node.output[0],
                        (node.name,),
                        approximate=approx,
                        shape=g.shape.get(node.input[0]),
                    )
                )
            elif node.op_type == "LayerNormalization":
                self._layernorm_op(node)
            elif node.op_type == "RMSNormalization":
                self._rmsnorm_op(node)

    def _softmax_axis(self, node: NodeProto) -> tuple[int, bool]:
        """(axis, trailing) of a Softmax node (see the module docstring)."""
        if self.opset >= 13:
            return int(_attr(node, "axis", -1)), False
        return int(_attr(node, "axis", 1)), True

    def _layernorm_op(self, node: NodeProto) -> None:
        g = self.g
        extra = [o for o in node.output[1:] if o and (g.consumers.get(o) or o in g.graph_outputs)]
        if extra:
            self.skipped[node.name] = f"LayerNormalization outputs {extra} (Mean/InvStdDev) used"
            return
        gamma = g.const(node.input[1])
        beta = g.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if gamma is None or (len(node.input) > 2 and node.input[2] and beta is None):
            self.skipped[node.name] = "LayerNormalization Scale/B are not constants"
            return
        self._add_norm_op(node, gamma, beta)

    def _rmsnorm_op(self, node: NodeProto) -> None:
        """ONNX ``RMSNormalization`` (opset 23): ``X``, constant ``Scale``, ``epsilon``."""
        g = self.g
        gamma = g.const(node.input[1]) if len(node.input) > 1 and node.input[1] else None
        if gamma is None:
            self.skipped[node.name] = "RMSNormalization Scale is not a constant"
            return
        self._add_norm_op(node, gamma, None, kind="rmsnorm")

    def _add_norm_op(self, node: NodeProto, gamma: Any, beta: Any | None, kind: str = "") -> None:
        """The site of a one-node normalisation op (its ``axis`` and ``epsilon``
        attributes, constant gamma and beta; ``kind``: the site kind, "" for the
        operator's own)."""
        self._add(
            Site(
                node.name,
                Operator.LAYERNORM,
                node.input[0],
                node.output[0],
                (node.name,),
                axis=int(_attr(node, "axis", -1)),
                trailing=True,
                epsilon=float(np.float32(_attr(node, "epsilon", 1e-5))),
                gamma=np.asarray(gamma, dtype=np.float64),
                beta=None if beta is None else np.asarray(beta, dtype=np.float64),
                shape=self.g.shape.get(node.input[0]),
                kind=kind,
            )
        )

    def _pattern_site(
        self,
        name: str,
        op: Operator,
        x: str,
        out: str,
        covered: list[NodeProto],
        pattern: str,
        **kw: Any,
    ) -> None:
        names = {n.name for n in covered}
        inner = [o for n in covered for o in n.output if o and o != out]
        if not self.g.internal(inner, names):
            self.skipped[name] = f"{pattern} pattern has intermediates used outside it"
            return
        order = [n.name for n in self.model.graph.node if n.name in names]
        self._add(Site(name, op, x, out, tuple(order), pattern, shape=self.g.shape.get(x), **kw))

    def _axes(self, node: NodeProto) -> list[int] | None:
        axes = _attr(node, "axes")
        if axes is None and len(node.input) > 1 and node.input[1]:
            v = self.g.const(node.input[1])
            if v is None:
                return None
            axes = [int(a) for a in np.asarray(v).ravel()]
        if axes is None or int(_attr(node, "keepdims", 1)) != 1:
            return None
        return [int(a) for a in axes]

    def _float_cast(self, node: NodeProto | None) -> bool:
        """A ``Cast`` to float32 of a float32 tensor (a no-op ``.to(float32)``)."""
        if not self._is(node, "Cast") or node is None:
            return False
        float32 = 1  # TensorProto.FLOAT
        return (
            int(_attr(node, "to", 0)) == float32 and self.g.elem_type.get(node.input[0]) == float32
        )

    def _trailing_axis(self, node: NodeProto, x: str) -> int | None:
        """The first of the trailing reduce axes of ``node`` over ``x`` (negative), else None."""
        axes = self._axes(node)
        if not axes:
            return None
        rank = self.g.rank(x)
        if rank is not None:
            axes = sorted(a + rank if a < 0 else a for a in axes)
            return axes[0] - rank if axes == list(range(rank - len(axes), rank)) else None
        return -len(axes) if sorted(axes) == list(range(-len(axes), 0)) else None

    def _norm_site(
        self,
        anchor: str,
        op: Operator | None,
        x: str,
        out: str,
        covered: list[NodeProto],
        pattern: str,
        kind: str,
        axis: int,
        params: dict[str, Any],
        trailing: bool = False,
    ) -> None:
        """A normaliser site over ``covered`` (intermediates used only inside it),
        with the attention mask in front of ``x``."""
        names = {n.name for n in covered}
        inner = [o for n in covered for o in n.output if o and o != out]
        if not self.g.internal(inner, names):
            self.skipped[anchor] = f"{kind} ({pattern}) has intermediates used outside it"
            return
        order = tuple(n.name for n in self.model.graph.node if n.name in names)
        site = Site(
            anchor,
            op,  # type: ignore[arg-type]
            x,
            out,
            order,
            pattern,
            axis=axis,
            trailing=trailing,
            shape=self.g.shape.get(x),
            mask=find_mask(self.g, x),
            kind=kind,
            params=params,
        )
        if self.used.intersection(site.nodes):
            return
        self.used.update(site.nodes)
        (self.sites if op is not None else self.unsupported).append(site)

    def _same_axis(self, axes: list[int] | None, axis: int, x: str) -> bool:
        """``axes`` (a reduce node's) is exactly the one axis ``axis`` of ``x``."""
        if axes is None or len(axes) != 1:
            return False
        if axes[0] == axis:
            return True
        rank = self.g.rank(x)
        return rank is not None and (axes[0] % rank) == (axis % rank)

    def _shape_scalar(self, t: str) -> bool:
        """``t`` is a scalar computed from tensor shapes and constants only."""
        g = self.g
        if g.const(t) is not None:
            return False
        stack, seen = [t], set()
        while stack:
            cur = stack.pop()
            if cur in seen or g.const(cur) is not None:
                continue
            seen.add(cur)
            q = g.producer.get(cur)
            if q is None or q.op_type not in _SHAPE_ONLY_OPS:
                return False
            if q.op_type not in ("Shape", "Size"):
                stack.extend(i for i in q.input if i)
        shape = g.shape.get(t)
        return shape is None or all(d == 1 for d in shape)
