"""GELU patterns: the erf and tanh forms written out, and the sigmoid forms
(CLIP's ``quick_gelu`` ``x·σ(1.702x)``, SiLU ``x·σ(x)``)."""

from __future__ import annotations

import math

from onnx import NodeProto

from hwapprox.approx.base import Operator
from hwapprox.approx.gelu import QUICK_GELU_ALPHA
from hwapprox.export.patterns.base import FinderBase
from hwapprox.export.patterns.site import (
    Site,
    _close,
    _other,
)

__all__ = ["GeluPatterns"]


class GeluPatterns(FinderBase):
    """The GELU pattern family (a mixin of the finder)."""

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

    def quick_gelu(self) -> None:
        """``x · sigmoid(α·x)``: with α = :data:`QUICK_GELU_ALPHA` (``Mul(x, α)`` before
        the Sigmoid; CLIP's ``quick_gelu``) a GELU site of kind ``quick_gelu`` (specs
        take ``form="quick"``); with no scale (``Sigmoid(x)``, α = 1: SiLU / swish, the
        gate of Llama-style FFNs) a GELU site of kind ``silu`` (``form="silu"``)."""
        g = self.g
        for sg in self.model.graph.node:
            if not self._is(sg, "Sigmoid") or sg.name in self.used:
                continue
            scale = g.producer.get(sg.input[0])
            x, alpha, kind = sg.input[0], 1.0, "silu"
            if self._is(scale, "Mul") and scale is not None:
                for i in (0, 1):
                    a = g.scalar(scale.input[1 - i])
                    if _close(a, QUICK_GELU_ALPHA):
                        x, alpha, kind = scale.input[i], float(a), "quick_gelu"  # type: ignore[arg-type]
                        break
            mul = g.sole_consumer(sg.output[0])
            if not self._is(mul, "Mul") or mul is None or _other(mul, sg.output[0]) != x:
                continue
            covered = [scale, sg, mul] if kind == "quick_gelu" else [sg, mul]
            inner = [c.output[0] for c in covered[:-1]]
            names = {n.name for n in covered if n is not None}
            if not g.internal(inner, names) or self.used & names:
                continue
            self._add(
                Site(
                    covered[0].name, Operator.GELU, x, mul.output[0],  # type: ignore[union-attr]
                    tuple(n.name for n in self.model.graph.node if n.name in names), "sigmoid",
                    shape=g.shape.get(x), kind=kind, params={"alpha": alpha},
                )
            )  # fmt: skip
