"""Attention masks in front of Softmax sites, as exporters write them.

Hardware does not add -3.4e38 to a score: it carries one mask bit per
element, and a masked element gets exactly zero probability (the softmax
specs' ``mask=`` contract, :mod:`hwapprox.approx.softmax`). The importer
therefore finds, for each softmax site, the graph nodes that mask its
scores, and evaluates the mask *bits* from the float model's own tensors:

* **additive** -- ``Add(scores, m)`` where ``m`` is not on the score path (no
  ``MatMul``/``Gemm``/``Einsum`` among its ancestors): Hugging Face's
  ``(1 - mask[:, None, None, :]) * finfo.min``, ``-1e4``/``-10000``, ``-inf``,
  a constant causal triangle, or a user's float mask input. An element is
  masked where ``m <= MASK_LIMIT``; smaller values of ``m`` (a position bias)
  are left in the scores.
* **where** -- ``Where(cond, scores, fill)`` (masked where ``cond`` is false) or
  ``Where(cond, fill, scores)`` (masked where ``cond`` is true), with ``fill``
  ``<= MASK_LIMIT`` at run time (``masked_fill``, GPT-2's causal ``torch.where``).

Parts are found walking up from the Softmax input through such ``Add`` and
``Where`` nodes (GPT-2: a causal ``Where`` then a padding ``Add``); the mask
bits are the OR of the parts. Each part records its node, the tensors that
carry it, the graph inputs it derives from and the operators on its path, so
the report says how it was found and whether it is a padding mask (derived from
a graph input), a computed causal mask (``Trilu``/``Range``/``Less``/...) or a
constant one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import NodeProto

from hwapprox.export.graph import GraphIndex

__all__ = ["MASK_LIMIT", "MaskPart", "SiteMask", "find_mask"]

#: Additive-mask values and ``Where`` fills at or below this mark masked elements
#: (Hugging Face's older ``-10000.0`` is the largest value exporters write).
MASK_LIMIT = -1.0e4

_SCORE_OPS = frozenset({"MatMul", "Gemm", "Einsum", "MatMulInteger", "QLinearMatMul"})
#: Their output depends on the input's shape only: ancestry stops there.
_SHAPE_OPS = frozenset({"Shape", "Size"})
_CAUSAL_OPS = frozenset({"Trilu", "Range", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})


@dataclass(frozen=True)
class MaskPart:
    """One masking node in front of a Softmax.

    ``kind`` is ``"additive"`` (``tensor`` is the added mask) or ``"where"``
    (``tensor`` is the condition, ``fill`` the fill value, and elements are
    masked where the condition equals ``fill_when``).
    """

    kind: str
    node: str
    tensor: str
    fill: str | None = None
    fill_when: bool = False
    sources: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()

    @property
    def role(self) -> str:
        """``"padding"`` (from a graph input), ``"causal"`` (computed or constant
        triangle) or ``"constant"``; refined from the values by :meth:`SiteMask.bits`."""
        if self.sources:
            return "padding"
        if _CAUSAL_OPS.intersection(self.ops):
            return "causal"
        return "constant"

    def tensors(self) -> list[str]:
        return [self.tensor] if self.fill is None else [self.tensor, self.fill]

    def describe(self) -> str:
        src = f"from input {', '.join(self.sources)}" if self.sources else "constant"
        chain = "→".join(dict.fromkeys(self.ops)) if self.ops else "direct"
        if self.kind == "additive":
            how = f"Add '{self.node}' adds '{self.tensor}' ({src} via {chain})"
        else:
            cond = "false" if not self.fill_when else "true"
            how = (
                f"Where '{self.node}' fills '{self.fill}' where '{self.tensor}' is {cond} "
                f"({src} via {chain})"
            )
        return how

    def bits(self, values: Mapping[str, np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
        """Masked elements (True) of this part, broadcast to ``shape``."""
        if self.kind == "additive":
            m = np.asarray(values[self.tensor])
            b = m <= MASK_LIMIT
        else:
            cond = np.asarray(values[self.tensor]).astype(bool)
            fill = np.asarray(values[self.fill])  # type: ignore[index]
            b = (cond == self.fill_when) & (fill <= MASK_LIMIT)
        return np.broadcast_to(b, shape)


@dataclass(frozen=True)
class SiteMask:
    """The mask parts in front of one softmax site (OR of their bits)."""

    parts: tuple[MaskPart, ...]

    def tensors(self) -> list[str]:
        return [t for p in self.parts for t in p.tensors()]

    @property
    def roles(self) -> list[str]:
        return list(dict.fromkeys(p.role for p in self.parts))

    @property
    def sources(self) -> list[str]:
        return list(dict.fromkeys(s for p in self.parts for s in p.sources))

    def describe(self) -> str:
        return "; ".join(p.describe() for p in self.parts)

    def bits(self, values: Mapping[str, np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
        """Mask bits (True = masked out) broadcast to the site input's ``shape``."""
        out = np.zeros(shape, dtype=bool)
        for p in self.parts:
            out |= p.bits(values, shape)
        return out

    def observed_roles(self, values: Mapping[str, np.ndarray], shape: tuple[int, ...]) -> list[str]:
        """Roles refined by the values: a part whose bits are the strict upper
        triangle over the last two (square) axes everywhere is ``"causal"``."""
        roles = []
        for p in self.parts:
            role = p.role
            if len(shape) >= 2 and shape[-1] == shape[-2]:
                bits = p.bits(values, shape)
                tri = np.triu(np.ones(shape[-2:], dtype=bool), 1)
                if bits.any() and bool((bits == tri).all()):
                    role = "causal"
            roles.append(role)
        return list(dict.fromkeys(roles))

    def as_dict(self) -> dict[str, Any]:
        return {
            "roles": self.roles,
            "sources": self.sources,
            "how": self.describe(),
            "parts": [
                {
                    "kind": p.kind,
                    "role": p.role,
                    "node": p.node,
                    "tensor": p.tensor,
                    "fill": p.fill,
                    "ops": list(dict.fromkeys(p.ops)),
                }
                for p in self.parts
            ],
        }


class _Ancestry:
    """Memoised questions about a tensor's ancestors."""

    def __init__(self, g: GraphIndex, graph_inputs: set[str]) -> None:
        self.g = g
        self.graph_inputs = graph_inputs
        self._score: dict[str, bool] = {}

    def on_score_path(self, t: str) -> bool:
        """True when a MatMul-like node is among the ancestors of ``t``."""
        if t in self._score:
            return self._score[t]
        seen: set[str] = set()
        stack = [t]
        found = False
        while stack and not found:
            cur = stack.pop()
            if cur in seen:
                continue
            seen.add(cur)
            if self._score.get(cur):
                found = True
                break
            node = self.g.producer.get(cur)
            if node is None:
                continue
            if node.op_type in _SCORE_OPS:
                found = True
                break
            if node.op_type in _SHAPE_OPS:
                continue
            stack.extend(i for i in node.input if i)
        self._score[t] = found
        return found

    def trace(self, t: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(graph inputs, op types in topological-ish order) among ``t``'s ancestors."""
        seen: set[str] = set()
        stack = [t]
        sources: list[str] = []
        ops: list[str] = []
        while stack:
            cur = stack.pop()
            if cur in seen:
                continue
            seen.add(cur)
            if cur in self.graph_inputs:
                sources.append(cur)
                continue
            node = self.g.producer.get(cur)
            if node is None:
                continue
            ops.append(node.op_type)
            if node.op_type in _SHAPE_OPS:
                continue
            stack.extend(i for i in node.input if i)
        return tuple(sorted(set(sources))), tuple(reversed(ops))


def _is(node: NodeProto | None, op: str) -> bool:
    return node is not None and node.op_type == op and node.domain in ("", "ai.onnx")


def find_mask(g: GraphIndex, softmax_input: str, anc: _Ancestry | None = None) -> SiteMask | None:
    """The mask parts in front of a Softmax whose input is ``softmax_input``."""
    if anc is None:
        inits = {i.name for i in g.model.graph.initializer}
        anc = _Ancestry(g, {i.name for i in g.model.graph.input} - inits)
    parts: list[MaskPart] = []
    t = softmax_input
    for _ in range(8):  # a chain of masking nodes is short
        node = g.producer.get(t)
        if _is(node, "Add") and node is not None and len(node.input) == 2:
            a, b = node.input
            sa, sb = anc.on_score_path(a), anc.on_score_path(b)
            if sa == sb:
                break
            scores, mask = (a, b) if sa else (b, a)
            src, ops = anc.trace(mask)
            parts.append(MaskPart("additive", node.name, mask, sources=src, ops=ops))
            t = scores
        elif _is(node, "Where") and node is not None:
            cond, a, b = node.input
            sa, sb = anc.on_score_path(a), anc.on_score_path(b)
            if sa == sb or anc.on_score_path(cond):
                break
            scores, fill, fill_when = (a, b, False) if sa else (b, a, True)
            src, ops = anc.trace(cond)
            fsrc, fops = anc.trace(fill)
            parts.append(
                MaskPart(
                    "where",
                    node.name,
                    cond,
                    fill,
                    fill_when,
                    tuple(sorted(set(src) | set(fsrc))),
                    ops + fops,
                )
            )
            t = scores
        else:
            break
    return SiteMask(tuple(parts)) if parts else None
