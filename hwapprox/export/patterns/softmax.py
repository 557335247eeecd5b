"""Attention normalisers beyond ``Softmax``: Softmax_1 (explicit and as a zero logit),
the clipped softmax, sigmoid and ReLU attention."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from onnx import NodeProto, numpy_helper

from hwapprox.approx.base import Operator
from hwapprox.export.patterns.base import FinderBase
from hwapprox.export.patterns.site import (
    _SHAPE_ONLY_OPS,
    CLIP_LIMITS,
    CONST_RTOL,
    _attr,
    _close,
    _other,
)

__all__ = ["SoftmaxPatterns"]


class SoftmaxPatterns(FinderBase):
    """The attention-normaliser pattern family (a mixin of the finder)."""

    def softmax1_explicit(self) -> None:
        """``e = Exp(x - ReduceMax(x)); e / (Exp(-m) + ReduceSum(e))`` over one axis."""
        g = self.g
        for r in self.model.graph.node:
            if not self._is(r, "ReduceMax") or r.name in self.used:
                continue
            x, m = r.input[0], r.output[0]
            axes = self._axes(r)
            if axes is None or len(axes) != 1:
                continue
            axis = axes[0]
            cons = g.consumers.get(m, [])
            sub = next((c for c in cons if self._is(c, "Sub") and list(c.input) == [x, m]), None)
            neg = next((c for c in cons if c is not sub and self._neg_of(c, m)), None)
            if sub is None or neg is None or len(cons) != 2:
                continue
            e1 = g.sole_consumer(sub.output[0])
            e0 = g.sole_consumer(neg.output[0])
            if not (self._is(e1, "Exp") and self._is(e0, "Exp")):
                continue
            assert e1 is not None
            assert e0 is not None
            e = e1.output[0]
            econs = g.consumers.get(e, [])
            rsum = next((c for c in econs if self._is(c, "ReduceSum")), None)
            div = next((c for c in econs if self._is(c, "Div") and c.input[0] == e), None)
            if rsum is None or div is None or len(econs) != 2:
                continue
            if not self._same_axis(self._axes(rsum), axis, x):
                continue
            add = g.sole_consumer(rsum.output[0])
            if (
                not self._is(add, "Add")
                or add is None
                or _other(add, rsum.output[0]) != e0.output[0]
                or g.sole_consumer(e0.output[0]) is not add
                or g.sole_consumer(add.output[0]) is not div
                or div.input[1] != add.output[0]
            ):
                continue
            covered = [r, sub, neg, e1, e0, rsum, add, div]
            self._norm_site(
                r.name, Operator.SOFTMAX, x, div.output[0], covered, "explicit", "softmax1",
                axis, {"off_by_one": True},
            )  # fmt: skip

    def _neg_of(self, node: NodeProto, m: str) -> bool:
        """``node`` computes ``-m``: ``Neg(m)``, ``Sub(0, m)`` or ``Mul(m, -1)``."""
        g = self.g
        if self._is(node, "Neg"):
            return node.input[0] == m
        if self._is(node, "Sub"):
            return node.input[1] == m and g.scalar(node.input[0]) == 0.0
        if self._is(node, "Mul"):
            return _close(g.scalar(_other(node, m) or ""), -1.0)
        return False

    def softmax1_zero_logit(self) -> None:
        """``Concat(zeros, x)`` (or ``(x, zeros)``) on the softmax axis, ``Softmax``,
        then ``Slice`` dropping the zero's column."""
        g = self.g
        for sm in self.model.graph.node:
            if not self._is(sm, "Softmax") or sm.name in self.used:
                continue
            axis, trailing = self._softmax_axis(sm)
            cat = g.producer.get(sm.input[0])
            if trailing or not self._is(cat, "Concat") or cat is None or len(cat.input) != 2:
                continue
            if g.sole_consumer(cat.output[0]) is not sm:
                continue
            rank = g.rank(cat.output[0])
            cax = int(_attr(cat, "axis", 0))
            if rank is None or cax % rank != axis % rank:
                continue
            sl = g.sole_consumer(sm.output[0])
            if not self._is(sl, "Slice") or sl is None:
                continue
            for zi, x in ((0, cat.input[1]), (1, cat.input[0])):
                zeros = self._zero_column(cat.input[zi], x, axis % rank, rank)
                if zeros is None or not self._drops_column(sl, zi, axis % rank, rank):
                    continue
                covered = [*zeros, cat, sm, sl]
                params = {"off_by_one": True, "zero_at": "start" if zi == 0 else "end"}
                self._norm_site(
                    sm.name, Operator.SOFTMAX, x, sl.output[0], covered, "zero_logit",
                    "softmax1", axis, params,
                )  # fmt: skip
                break

    def _zero_column(self, z: str, x: str, axis: int, rank: int) -> list[NodeProto] | None:
        """The nodes making ``z``, a tensor of zeros one column wide on ``axis``,
        from constants and the shape of ``x`` only; None if ``z`` is not that."""
        g = self.g
        shape = g.shape.get(z)
        known = shape is not None and len(shape) == rank and isinstance(shape[axis], int)
        if known and shape[axis] != 1:  # type: ignore[index]
            return None
        p = g.producer.get(z)
        if self._is(p, "ConstantOfShape") and p is not None:
            val = _attr(p, "value")
            if val is not None and np.any(numpy_helper.to_array(val) != 0):
                return None
        elif self._is(p, "Expand") and p is not None:
            c = g.const(p.input[0])
            if c is None or np.any(c != 0):
                return None
        else:
            return None
        nodes: list[NodeProto] = []
        stack = [i for i in p.input if i and g.const(i) is None]
        while stack:
            t = stack.pop()
            q = g.producer.get(t)
            if q is None or q.op_type not in _SHAPE_ONLY_OPS:
                return None
            nodes.append(q)
            if q.op_type in ("Shape", "Size"):
                if q.input[0] != x:
                    src = g.producer.get(q.input[0])
                    # the shape of a slice of x (torch's zeros_like(x[..., :1]))
                    if not (
                        self._is(src, "Slice")
                        and src is not None
                        and src.input[0] == x
                        and self._slice_1d(src, rank) in ((axis, 0, 1), (axis, -1, 2**31 - 1))
                    ):
                        return None
                    nodes.append(src)
                continue
            stack.extend(i for i in q.input if i and g.const(i) is None)
        if not known and not any(self._is(n, "Slice") for n in nodes):
            return None  # width on the axis unknown and not shaped from a slice of x
        return [*nodes, p]

    def _slice_1d(self, sl: NodeProto, rank: int) -> tuple[int, int, int] | None:
        """(axis, start, end) of a constant one-axis, step-1 ``Slice`` (opset >= 10),
        ends at or past 2^31 - 1 reported as 2^31 - 1; else None."""
        g = self.g
        vals = [g.const(i) if i else None for i in sl.input[1:]]
        if len(vals) < 2 or vals[0] is None or vals[1] is None:
            return None
        starts, ends = (np.asarray(v).ravel() for v in vals[:2])
        axes = np.asarray(vals[2]).ravel() if len(vals) > 2 and vals[2] is not None else None
        steps = np.asarray(vals[3]).ravel() if len(vals) > 3 and vals[3] is not None else None
        if starts.size != 1 or ends.size != 1:
            return None
        if axes is None and rank != 1:
            return None
        if axes is not None and axes.size != 1:
            return None
        if steps is not None and int(steps[0]) != 1:
            return None
        ax = 0 if axes is None else int(axes[0]) % rank
        return ax, int(starts[0]), min(int(ends[0]), 2**31 - 1)

    def _drops_column(self, sl: NodeProto, zi: int, axis: int, rank: int) -> bool:
        """``sl`` (Slice) keeps everything on ``axis`` but the first (``zi`` 0) or
        the last (``zi`` 1) column."""
        want = (axis, 1, 2**31 - 1) if zi == 0 else (axis, 0, -1)
        return self._slice_1d(sl, rank) == want

    def clipped_softmax(self) -> None:
        """``Softmax -> Mul(ζ - γ) -> Add(γ) -> Clip(0, 1)``."""
        g = self.g
        for sm in self.model.graph.node:
            if not self._is(sm, "Softmax") or sm.name in self.used:
                continue
            p = sm.output[0]
            mul = g.only_consumer(p)
            if not self._is(mul, "Mul") or mul is None:
                continue
            stretch = g.scalar(_other(mul, p) or "")
            add = g.only_consumer(mul.output[0])
            if stretch is None or not self._is(add, "Add") or add is None:
                continue
            gamma = g.scalar(_other(add, mul.output[0]) or "")
            if gamma is None:
                continue
            clip = self._clip01(add.output[0])
            if clip is None:
                self.skipped.setdefault(
                    sm.name,
                    "Softmax -> Mul -> Add not followed by a clip to [0, 1]: a plain softmax site",
                )
                continue
            zeta = stretch + gamma
            params = {"clip_gamma": gamma, "clip_zeta": zeta}
            bad = [
                f"{k}={v:.6g} not in [{lo:g}, {hi:g}]"
                for k, v in params.items()
                for lo, hi in [CLIP_LIMITS[k]]
                if not lo <= v <= hi
            ]
            if bad:
                self.skipped[sm.name] = (
                    f"clipped softmax with {', '.join(bad)} (Bondarenko et al.: γ <= 0, ζ >= 1): "
                    f"a plain softmax site"
                )
                continue
            axis, trailing = self._softmax_axis(sm)
            self._norm_site(
                sm.name, Operator.SOFTMAX, sm.input[0], clip[-1].output[0],
                [sm, mul, add, *clip], "clip", "clipped_softmax", axis, params, trailing,
            )  # fmt: skip

    def _clip01(self, t: str) -> list[NodeProto] | None:
        """The node(s) clipping ``t`` to exactly [0, 1]: ``Clip`` (bounds as inputs
        or, opset < 11, attributes) or ``Max(·, 0)`` and ``Min(·, 1)`` in either order."""
        g = self.g
        c = g.only_consumer(t)
        if self._is(c, "Clip") and c is not None:
            if len(c.input) >= 3 and c.input[1] and c.input[2]:
                lo, hi = g.scalar(c.input[1]), g.scalar(c.input[2])
            else:
                lo, hi = _attr(c, "min"), _attr(c, "max")
            return [c] if lo == 0.0 and hi == 1.0 else None
        if c is None or c.op_type not in ("Max", "Min") or len(c.input) != 2:
            return None
        c2 = g.only_consumer(c.output[0])
        if c2 is None or {c.op_type, c2.op_type} != {"Max", "Min"} or len(c2.input) != 2:
            return None
        bound = {
            n.op_type: g.scalar(_other(n, src) or "") for n, src in ((c, t), (c2, c.output[0]))
        }
        return [c, c2] if bound == {"Max": 0.0, "Min": 1.0} else None

    def _feeds_pv(self, t: str) -> bool:
        """``t`` is the first input of a MatMul whose second input is not a constant."""
        c = self.g.only_consumer(t)
        return (
            self._is(c, "MatMul")
            and c is not None
            and c.input[0] == t
            and self.g.const(c.input[1]) is None
        )

    def sigmoid_attention(self) -> None:
        """``Sigmoid(x + b)`` (``b`` a scalar constant, or no ``Add``) feeding ``P·V``."""
        g = self.g
        for sg in self.model.graph.node:
            if not self._is(sg, "Sigmoid") or sg.name in self.used:
                continue
            if not self._feeds_pv(sg.output[0]):
                continue
            a = g.producer.get(sg.input[0])
            covered: list[NodeProto] = [sg]
            x, bias = sg.input[0], 0.0
            if self._is(a, "Add") and a is not None and g.only_consumer(a.output[0]) is sg:
                for xi, bi in ((a.input[0], a.input[1]), (a.input[1], a.input[0])):
                    b = g.scalar(bi)
                    if b is not None and g.const(xi) is None:
                        x, bias = xi, b
                        covered.insert(0, a)
                        break
            self._norm_site(
                sg.name, Operator.SIGMOID_ATTENTION, x, sg.output[0], covered, "sigmoid",
                "sigmoid_attention", -1, {"bias": bias, "n": math.exp(-bias)},
            )  # fmt: skip

    def relu_attention(self) -> None:
        """``Relu(x)`` then ``Div(·, n)`` or ``Mul(·, 1/n)`` feeding ``P·V``."""
        g = self.g
        for r in self.model.graph.node:
            if not self._is(r, "Relu") or r.name in self.used:
                continue
            d = g.only_consumer(r.output[0])
            if d is None or not (self._is(d, "Div") or self._is(d, "Mul")):
                continue
            if self._is(d, "Div"):
                if d.input[0] != r.output[0]:
                    continue
                other = d.input[1]
            else:
                other = _other(d, r.output[0]) or ""
            if not self._feeds_pv(d.output[0]):
                continue
            c = g.scalar(other)
            form = "div" if d.op_type == "Div" else "mul"
            if c is not None:
                if c <= 0:
                    continue
                n = c if form == "div" else 1.0 / c
                params: dict[str, Any] = {"n": n}
                if abs(n - round(n)) > CONST_RTOL * n or round(n) < 1:
                    self.skipped[r.name] = (
                        f"relu_attention: n = {n:.6g} is not a whole sequence length "
                        "(the unit divides by an integer n)"
                    )
                    continue
                params["seq_len"] = round(n)
            elif self._shape_scalar(other):
                params = {"n": None, "n_tensor": other, "n_form": form}
            else:
                continue
            x = r.input[0]
            self._norm_site(
                r.name, Operator.RELU_ATTENTION, x, d.output[0], [r, d], form,
                "relu_attention", -1, params,
            )  # fmt: skip
