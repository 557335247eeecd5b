"""Find the nonlinear sites of an ONNX graph: single operators and exporter patterns.

Recognised (main graph only; subgraphs of If/Loop are not searched):

* ``Softmax`` -- opset >= 13: one axis (default -1). Opset < 13: the input is
  coerced to 2-D at ``axis`` (default 1) and softmax runs over the flattened
  trailing dims; recorded as ``trailing=True`` and emulated the same way.
* ``LayerNormalization`` (opset 17) -- rows are the flattened dims from ``axis``
  (default -1) to the end; ``Scale``/``B`` must be constants (else the node is
  skipped with a reason); the optional ``Mean``/``InvStdDev`` outputs must be
  unused.
* ``Gelu`` (opset 20), ``approximate`` ``"none"`` or ``"tanh"``.
* Erf-pattern GELU as PyTorch/HuggingFace export it: ``u = Div(x, √2)`` or
  ``Mul(x, 1/√2)``, ``Erf(u)``, ``Add(·, 1)``, then ``0.5·x·(1+erf)`` as two
  ``Mul`` in any association (``(x·a)·0.5``, ``(x·0.5)·a``, ``(a·0.5)·x``; the
  0.5 may be ``Div(·, 2)``). Constants from initializers or ``Constant``
  nodes, any operand order of commutative ops.
* tanh-pattern GELU: ``Tanh(c·(x + k·x³))`` with ``c = √(2/π)``, ``k = 0.044715``,
  ``x³`` as ``Pow(x, 3)`` or ``Mul(Mul(x, x), x)``, then ``Add 1`` and the same
  ``0.5·x·(…)`` ending.
* Decomposed LayerNorm (PyTorch opset < 17): ``ReduceMean(x)``, ``Sub(x, mean)``,
  ``Pow(d, 2)`` (or ``Mul(d, d)``), ``ReduceMean``, ``Add(·, eps)``, ``Sqrt``,
  ``Div(d, ·)``, then optionally ``Mul`` by a constant gamma and ``Add`` of a
  constant beta; reduce axes as attribute (opset < 18) or input (opset 18), a
  trailing set of axes.

Constants must match to relative tolerance :data:`CONST_RTOL` (float32 exports).
Every intermediate tensor of a pattern must be used only inside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto, helper

from hwapprox.approx.base import Operator
from hwapprox.export.graph import GraphIndex, opset_version
from hwapprox.export.masks import SiteMask, find_mask

__all__ = ["CONST_RTOL", "Site", "find_sites"]

#: Relative tolerance when matching pattern constants (√2, 0.5, 0.044715, ...).
CONST_RTOL = 1e-4


@dataclass(frozen=True, eq=False)
class Site:
    """One nonlinear site: ``output = f(input)`` over ``nodes`` of the graph.

    ``axis`` is the reduction axis as written in the model (may be negative);
    ``trailing`` means rows are the flattened dims ``axis..rank-1`` (LayerNorm,
    opset < 13 Softmax) rather than the single ``axis``. ``gamma``/``beta``
    (LayerNorm) are float64 arrays broadcast over the row, or None.
    ``approximate`` is ``"none"``/``"tanh"`` for GELU. ``pattern`` says how the
    site was found (``"op"``, ``"erf"``, ``"tanh"``, ``"decomposed"``).
    ``mask`` (softmax) is the attention mask found in front of the site
    (:mod:`hwapprox.export.masks`), or None.
    """

    name: str
    operator: Operator
    input: str
    output: str
    nodes: tuple[str, ...]
    pattern: str = "op"
    axis: int | None = None
    trailing: bool = False
    epsilon: float | None = None
    gamma: np.ndarray | None = field(default=None, repr=False)
    beta: np.ndarray | None = field(default=None, repr=False)
    approximate: str | None = None
    shape: tuple[int | str | None, ...] | None = None
    mask: SiteMask | None = None
    #: a fused attention site (:mod:`hwapprox.export.fused`): the V tensor of the
    #: ``P·V`` MatMul the site also covers (``output`` is then the context), else None
    fused_v: str | None = None

    def fields_for_spec(self) -> dict[str, Any]:
        """Model constants a spec may take: LayerNorm ``eps``, GELU ``form`` (erf/tanh)."""
        if self.operator is Operator.GELU:
            return {"form": "tanh" if self.approximate == "tanh" else "erf"}
        return {"eps": self.epsilon} if self.epsilon is not None else {}

    def as_dict(self) -> dict[str, Any]:
        """Plain data for reports (arrays summarised)."""
        return {
            "name": self.name,
            "operator": str(self.operator),
            "pattern": self.pattern,
            "input": self.input,
            "output": self.output,
            "nodes": list(self.nodes),
            "axis": self.axis,
            "trailing": self.trailing,
            "epsilon": self.epsilon,
            "approximate": self.approximate,
            "gamma_shape": None if self.gamma is None else list(self.gamma.shape),
            "beta_shape": None if self.beta is None else list(self.beta.shape),
            "shape": None if self.shape is None else list(self.shape),
            "mask": None if self.mask is None else self.mask.as_dict(),
            "fused_v": self.fused_v,
        }


def _close(value: float | None, target: float) -> bool:
    return value is not None and math.isclose(value, target, rel_tol=CONST_RTOL)


def _other(node: NodeProto, name: str) -> str | None:
    """The other input of a binary node one of whose inputs is ``name``."""
    if len(node.input) != 2:
        return None
    a, b = node.input
    if a == name:
        return b
    if b == name:
        return a
    return None


def _attr(node: NodeProto, name: str, default: Any = None) -> Any:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


class _Finder:
    def __init__(self, model: ModelProto) -> None:
        self.model = model
        self.g = GraphIndex(model)
        self.opset = opset_version(model)
        self.used: set[str] = set()
        self.sites: list[Site] = []
        self.skipped: dict[str, str] = {}

    # -- helpers -----------------------------------------------------------------
    def _is(self, node: NodeProto | None, op: str) -> bool:
        return node is not None and node.op_type == op and node.domain in ("", "ai.onnx")

    def _add(self, site: Site) -> None:
        if self.used.intersection(site.nodes):
            return
        self.used.update(site.nodes)
        self.sites.append(site)

    def _half_x(self, a_out: str, x: str) -> tuple[list[NodeProto], str] | None:
        """Match ``0.5 · x · a`` built from ``a`` (two Mul, any association)."""
        g = self.g
        m1 = g.sole_consumer(a_out)
        if not self._is(m1, "Mul"):
            return None
        assert m1 is not None
        o = _other(m1, a_out)
        if o is None:
            return None
        if o == x or _close(g.scalar(o), 0.5):
            m2 = g.sole_consumer(m1.output[0])
            if m2 is None:
                return None
            if o == x:  # (x·a) then ·0.5 or /2
                c = _other(m2, m1.output[0])
                if c is None:
                    return None
                if (self._is(m2, "Mul") and _close(g.scalar(c), 0.5)) or (
                    self._is(m2, "Div") and m2.input[0] == m1.output[0] and _close(g.scalar(c), 2)
                ):
                    return [m1, m2], m2.output[0]
                return None
            # (a·0.5) then ·x
            if self._is(m2, "Mul") and _other(m2, m1.output[0]) == x:
                return [m1, m2], m2.output[0]
            return None
        # (x·0.5 or x/2) · a
        h = g.producer.get(o)
        if h is None or len(g.consumers[o]) != 1:
            return None
        if self._is(h, "Mul") and _other(h, x) is not None and _close(g.scalar(_other(h, x)), 0.5):
            return [h, m1], m1.output[0]
        if self._is(h, "Div") and h.input[0] == x and _close(g.scalar(h.input[1]), 2.0):
            return [h, m1], m1.output[0]
        return None

    def _add_one(self, t: str) -> NodeProto | None:
        a = self.g.sole_consumer(t)
        if self._is(a, "Add") and _close(self.g.scalar(_other(a, t) or ""), 1.0):  # type: ignore[arg-type]
            return a
        return None

    # -- single operators ----------------------------------------------------------
    def op_sites(self) -> None:
        g = self.g
        for node in self.model.graph.node:
            if node.domain not in ("", "ai.onnx"):
                continue
            if node.op_type == "Softmax":
                if self.opset >= 13:
                    axis, trailing = int(_attr(node, "axis", -1)), False
                else:
                    axis, trailing = int(_attr(node, "axis", 1)), True
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
                shape=g.shape.get(node.input[0]),
            )
        )

    # -- GELU patterns -------------------------------------------------------------
    def erf_gelu(self) -> None:
        g = self.g
        for e in self.model.graph.node:
            if not self._is(e, "Erf") or e.name in self.used:
                continue
            s = g.producer.get(e.input[0])
            if s is None or len(g.consumers[e.input[0]]) != 1:
                continue
            if self._is(s, "Div") and _close(g.scalar(s.input[1]), math.sqrt(2.0)):
                x = s.input[0]
            elif self._is(s, "Mul"):
                cands = [
                    i
                    for i, c in ((s.input[0], s.input[1]), (s.input[1], s.input[0]))
                    if _close(g.scalar(c), 1.0 / math.sqrt(2.0))
                ]
                if not cands:
                    continue
                x = cands[0]
            else:
                continue
            self._gelu_tail(e, x, [s, e], "erf", "none")

    def tanh_gelu(self) -> None:
        g = self.g
        for t in self.model.graph.node:
            if not self._is(t, "Tanh") or t.name in self.used:
                continue
            m = g.producer.get(t.input[0])
            if not self._is(m, "Mul"):
                continue
            assert m is not None
            inner = None
            for i, c in ((m.input[0], m.input[1]), (m.input[1], m.input[0])):
                if _close(g.scalar(c), math.sqrt(2.0 / math.pi)):
                    inner = i
            ad = g.producer.get(inner) if inner else None
            if not self._is(ad, "Add"):
                continue
            assert ad is not None
            match = None
            for x, k in ((ad.input[0], ad.input[1]), (ad.input[1], ad.input[0])):
                km = g.producer.get(k)
                if not self._is(km, "Mul"):
                    continue
                assert km is not None
                for cube, c in ((km.input[0], km.input[1]), (km.input[1], km.input[0])):
                    if not _close(g.scalar(c), 0.044715):
                        continue
                    cube_nodes = self._cube(cube, x)
                    if cube_nodes is not None:
                        match = (x, [*cube_nodes, km])
            if match is None:
                continue
            x, pre = match
            self._gelu_tail(t, x, [*pre, ad, m, t], "tanh", "tanh")

    def _gelu_tail(
        self, anchor: NodeProto, x: str, head: list[NodeProto], form: str, approximate: str
    ) -> None:
        """``anchor`` (Erf or Tanh) ``-> + 1 -> · x/2``: a GELU site over ``head`` and the tail."""
        a = self._add_one(anchor.output[0])
        if a is None:
            return
        tail = self._half_x(a.output[0], x)
        if tail is None:
            return
        nodes, out = tail
        self._pattern_site(
            anchor.name, Operator.GELU, x, out, [*head, a, *nodes], form, approximate=approximate
        )

    def _cube(self, cube: str, x: str) -> list[NodeProto] | None:
        g = self.g
        p = g.producer.get(cube)
        if self._is(p, "Pow") and p is not None and p.input[0] == x:
            if _close(g.scalar(p.input[1]), 3.0):
                return [p]
            return None
        if self._is(p, "Mul") and p is not None:
            sq = _other(p, x)
            q = g.producer.get(sq) if sq else None
            if self._is(q, "Mul") and q is not None and list(q.input) == [x, x]:
                return [q, p]
            if (
                self._is(q, "Pow")
                and q is not None
                and q.input[0] == x
                and _close(g.scalar(q.input[1]), 2.0)
            ):
                return [q, p]
        return None

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

    # -- decomposed LayerNorm ------------------------------------------------------
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

    def decomposed_layernorm(self) -> None:
        g = self.g
        for r1 in self.model.graph.node:
            if not self._is(r1, "ReduceMean") or r1.name in self.used:
                continue
            x = r1.input[0]
            axes = self._axes(r1)
            if not axes:
                continue
            rank = g.rank(x)
            if rank is not None:
                axes = sorted(a + rank if a < 0 else a for a in axes)
                if axes != list(range(rank - len(axes), rank)):
                    self.skipped[r1.name] = f"decomposed LayerNorm over non-trailing axes {axes}"
                    continue
                axis = axes[0] - rank
            elif sorted(axes) == list(range(-len(axes), 0)):
                axis = -len(axes)
            else:
                continue
            sub = g.sole_consumer(r1.output[0])
            if not self._is(sub, "Sub") or sub is None or list(sub.input) != [x, r1.output[0]]:
                continue
            d = sub.output[0]
            cons = g.consumers.get(d, [])
            sq = next((c for c in cons if self._is(c, "Pow") or self._is(c, "Mul")), None)
            div = next((c for c in cons if self._is(c, "Div")), None)
            if sq is None or div is None or len(cons) != 2 or div.input[0] != d:
                continue
            if sq.op_type == "Pow" and not (
                sq.input[0] == d and _close(g.scalar(sq.input[1]), 2.0)
            ):
                continue
            if sq.op_type == "Mul" and list(sq.input) != [d, d]:
                continue
            r2 = g.sole_consumer(sq.output[0])
            if not self._is(r2, "ReduceMean") or r2 is None:
                continue
            axes2 = self._axes(r2)
            if axes2 is None or (
                rank is not None and sorted(a + rank if a < 0 else a for a in axes2) != axes
            ):
                continue
            ae = g.sole_consumer(r2.output[0])
            if not self._is(ae, "Add") or ae is None:
                continue
            eps = g.scalar(_other(ae, r2.output[0]) or "")
            if eps is None:
                continue
            sq_node = g.sole_consumer(ae.output[0])
            if not self._is(sq_node, "Sqrt") or sq_node is None:
                continue
            if g.sole_consumer(sq_node.output[0]) is not div or div.input[1] != sq_node.output[0]:
                continue
            covered = [r1, sub, sq, r2, ae, sq_node, div]
            out = div.output[0]
            gamma = beta = None
            mul = g.only_consumer(out)
            if self._is(mul, "Mul") and mul is not None:
                c = g.const(_other(mul, out) or "")
                if c is not None and _row_vector(c):
                    gamma = np.asarray(c, dtype=np.float64).reshape(-1)
                    covered.append(mul)
                    out = mul.output[0]
            add = g.only_consumer(out)
            if self._is(add, "Add") and add is not None:
                c = g.const(_other(add, out) or "")
                if c is not None and _row_vector(c):
                    beta = np.asarray(c, dtype=np.float64).reshape(-1)
                    covered.append(add)
                    out = add.output[0]
            self._pattern_site(
                r1.name,
                Operator.LAYERNORM,
                x,
                out,
                covered,
                "decomposed",
                axis=axis,
                trailing=True,
                epsilon=eps,
                gamma=gamma,
                beta=beta,
            )


def _row_vector(c: np.ndarray) -> bool:
    """A constant that varies only along the last axis (gamma/beta shape)."""
    return c.size >= 1 and c.shape[:-1] == (1,) * (c.ndim - 1) if c.ndim else True


def find_sites(model: ModelProto) -> tuple[list[Site], dict[str, str]]:
    """Sites of a loaded model (see :func:`hwapprox.export.graph.load_model`), in
    graph order, plus ``{node name: reason}`` for candidates that were skipped."""
    f = _Finder(model)
    f.op_sites()
    f.erf_gelu()
    f.tanh_gelu()
    f.decomposed_layernorm()
    order = {n.name: i for i, n in enumerate(model.graph.node)}
    f.sites.sort(key=lambda s: order[s.nodes[0]])
    return f.sites, f.skipped
