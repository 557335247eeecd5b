"""LayerNorm and RMSNorm written out (ReduceMean, Sub, Pow, Sqrt, Div, ...)."""

from __future__ import annotations

import numpy as np

from hwapprox.approx.base import Operator
from hwapprox.export.patterns.base import FinderBase
from hwapprox.export.patterns.site import (
    _close,
    _other,
)

__all__ = ["NormPatterns"]


class NormPatterns(FinderBase):
    """The decomposed-normalisation pattern family (a mixin of the finder)."""

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

    def decomposed_rmsnorm(self) -> None:
        """``x / sqrt(mean(x²) + eps) · gamma`` in the spellings of the module docstring."""
        g = self.g
        for r in self.model.graph.node:
            if not self._is(r, "ReduceMean") or r.name in self.used:
                continue
            sq = g.producer.get(r.input[0])
            if sq is None or g.sole_consumer(sq.output[0]) is not r:
                continue
            pow2 = self._is(sq, "Pow") and _close(g.scalar(sq.input[1]), 2.0)
            if not (pow2 or (self._is(sq, "Mul") and sq.input[0] == sq.input[1])):
                continue
            x = sq.input[0]
            axis = self._trailing_axis(r, x)
            if axis is None:
                continue
            ae = g.sole_consumer(r.output[0])
            if not self._is(ae, "Add") or ae is None:
                continue
            eps = g.scalar(_other(ae, r.output[0]) or "")
            sqrt = g.sole_consumer(ae.output[0])
            if eps is None or not self._is(sqrt, "Sqrt") or sqrt is None:
                continue
            covered = [sq, r, ae, sqrt]
            s_out = sqrt.output[0]
            nxt = g.sole_consumer(s_out)
            if nxt is None:
                continue
            if self._is(nxt, "Div") and list(nxt.input) == [x, s_out]:
                norm = nxt
            else:  # x · (1 / sqrt): Reciprocal or Div(1, ·), then Mul with x
                if not (
                    self._is(nxt, "Reciprocal")
                    or (self._is(nxt, "Div") and nxt.input[1] == s_out
                        and _close(g.scalar(nxt.input[0]), 1.0))
                ):  # fmt: skip
                    continue
                covered.append(nxt)
                norm = g.sole_consumer(nxt.output[0])  # type: ignore[assignment]
                if not self._is(norm, "Mul") or _other(norm, nxt.output[0]) != x:
                    continue
            covered.append(norm)
            out = norm.output[0]
            # the .to(float32) before and .to(input_dtype) after, when they are no-ops
            xin = x
            pre = g.producer.get(x)
            if self._float_cast(pre) and g.internal([x], {n.name for n in covered}):
                assert pre is not None
                covered.insert(0, pre)
                xin = pre.input[0]
            post = g.only_consumer(out)
            if self._float_cast(post):
                assert post is not None
                covered.append(post)
                out = post.output[0]
            gamma = None
            mul = g.only_consumer(out)
            if self._is(mul, "Mul") and mul is not None:
                c = g.const(_other(mul, out) or "")
                if c is not None and _row_vector(c):
                    gamma = np.asarray(c, dtype=np.float64).reshape(-1)
                    covered.append(mul)
                    out = mul.output[0]
            self._pattern_site(
                r.name, Operator.LAYERNORM, xin, out, covered, "decomposed", axis=axis,
                trailing=True, epsilon=eps, gamma=gamma, kind="rmsnorm",
            )  # fmt: skip


def _row_vector(c: np.ndarray) -> bool:
    """A constant that varies only along the last axis (gamma/beta shape)."""
    return c.size >= 1 and c.shape[:-1] == (1,) * (c.ndim - 1) if c.ndim else True
