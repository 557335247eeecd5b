"""A dense head after the encoder chain: [token select] -> [LayerNorm] -> Dense.

Exporters end an encoder with a head that hls4ml 1.3 cannot take as it is
written: GPT-2's final LayerNorm and per-token LM-head ``MatMul`` on
``[1, S, D]`` (hls4ml turns a MatMul on a 3-D tensor into a PointwiseConv1D
with the wrong output shape and the bias Add into an ApplyAlpha layer), and
ViT's final LayerNorm, ``Gather`` of the CLS token (no hls4ml op) and
classifier ``Gemm``. :func:`match_head` finds such a head on the last block's
output; :class:`DenseHead` is its exact fixed-point model and the config of
``hwapprox::dense_head`` (``include/hwapprox/head.h``), folded into one
``HwApproxDenseHead`` node like the blocks.

The maths, per sample (``X`` raw ``in_fmt`` codes ``[S, D]``)::

    Z = X[token] (one row, ``token`` not None) or X (every token)
    Y = LayerNorm(Z -> ln.in_fmt; gamma, beta) rows   (when the head has one)
    O = Y·W + b  -> out_fmt   (accum_fmt, :class:`~hwapprox.approx.linear.MatMulSpec`)

Selecting the token before the LayerNorm is the exporters' order reversed
(ViT normalises every token, then gathers one); LayerNorm is row-wise, so
the selected row is the same, bit for bit, and the hardware normalises one
row instead of ``S``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from onnx import ModelProto

from hwapprox.approx.base import ApproxSpec, SpecError
from hwapprox.approx.linear import MatMulSpec
from hwapprox.export.handoff import GraphIndex, Site
from hwapprox.fixed import FixedFormat, cast
from hwapprox.hls.emit import Instance, matmul_instance
from hwapprox.hls.units import unit_instance

__all__ = ["HEAD_OP_TYPE", "DenseHead", "HeadMatch", "head_from_attrs", "match_head"]

#: op type of the folded head node (domain :data:`hwapprox.export.blockmatch.DOMAIN`)
HEAD_OP_TYPE = "HwApproxDenseHead"

RawArray = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class HeadMatch:
    """A head found on the last block's output ``input``: float weights, graph names."""

    input: str
    output: str
    nodes: tuple[str, ...]
    weight: np.ndarray  # [D, C]
    bias: np.ndarray | None  # [C]
    token: int | None
    ln: Site | None
    dense_out: str  # the tensor holding Y·W + b (the head output)

    @property
    def n_out(self) -> int:
        return int(self.weight.shape[1])


def match_head(
    model: ModelProto, block_output: str, sites: list[Site]
) -> tuple[HeadMatch | None, str]:
    """The head on ``block_output``, or None and why not (a sentence for the notes).

    Accepted, in order: at most one LayerNorm site and at most one ``Gather`` of
    one token on axis 1 (constant index), in either order; then ``MatMul`` with a
    constant ``[D, C]`` (and an ``Add`` of a constant ``[C]``) or ``Gemm``
    (``alpha = beta = 1``, ``transB`` either way, constant ``B`` and ``C``); the
    result must be a graph output.
    """
    gi = GraphIndex(model)
    ln_by_input = {s.input: s for s in sites if str(s.operator) == "layernorm"}
    t = block_output
    nodes: list[str] = []
    ln: Site | None = None
    token: int | None = None
    for _ in range(2):
        if t in ln_by_input and ln is None:
            ln = ln_by_input[t]
            nodes += list(ln.nodes)
            t = ln.output
            continue
        n = gi.only_consumer(t)
        if n is not None and n.op_type == "Gather" and token is None:
            axis = next((a.i for a in n.attribute if a.name == "axis"), 0)
            idx = gi.const(n.input[1]) if len(n.input) > 1 else None
            rank = gi.rank(t)
            if idx is None or idx.size != 1 or rank is None or axis not in (1, 1 - rank):
                return None, f"{n.name!r} (Gather) does not select one token on axis 1"
            token = int(np.asarray(idx).reshape(()))
            nodes.append(n.name)
            t = n.output[0]
            continue
        break
    n = gi.only_consumer(t)
    if n is None:
        return None, "the last block's output (or its final LayerNorm) feeds no single node"
    weight = bias = None
    if n.op_type == "MatMul" and n.input[0] == t:
        weight = gi.const(n.input[1])
        nodes.append(n.name)
        out = n.output[0]
        add = gi.only_consumer(out)
        if add is not None and add.op_type == "Add":
            other = add.input[1] if add.input[0] == out else add.input[0]
            b = gi.const(other)
            if b is not None and weight is not None and b.shape == (weight.shape[-1],):
                bias = b
                nodes.append(add.name)
                out = add.output[0]
    elif n.op_type == "Gemm" and n.input[0] == t:
        attrs = {a.name: a for a in n.attribute}
        alpha = attrs["alpha"].f if "alpha" in attrs else 1.0
        beta = attrs["beta"].f if "beta" in attrs else 1.0
        trans_a = attrs["transA"].i if "transA" in attrs else 0
        w = gi.const(n.input[1])
        if alpha != 1.0 or beta != 1.0 or trans_a or w is None:
            return None, f"{n.name!r} (Gemm) is not Y = X·W + b with constant W"
        weight = w.T if (attrs["transB"].i if "transB" in attrs else 0) else w
        bias = gi.const(n.input[2]) if len(n.input) > 2 and n.input[2] else None
        if len(n.input) > 2 and n.input[2] and (bias is None or bias.size != weight.shape[1]):
            return None, f"{n.name!r} (Gemm) has a bias that is not a constant [C]"
        if bias is not None:
            bias = bias.reshape(-1)
        nodes.append(n.name)
        out = n.output[0]
    else:
        return None, f"{n.name!r} ({n.op_type}) is not a dense layer (MatMul/Gemm)"
    if weight is None or weight.ndim != 2:
        return None, f"{n.name!r} ({n.op_type}) has no constant 2-D weight"
    if out not in gi.graph_outputs:
        nxt = gi.consumers.get(out, [])
        what = f"{nxt[0].name!r} ({nxt[0].op_type})" if nxt else "nothing"
        return None, f"the dense layer {n.name!r} is followed by {what}, not a graph output"
    return (
        HeadMatch(
            block_output,
            out,
            tuple(nodes),
            np.asarray(weight, np.float64),
            None if bias is None else np.asarray(bias, np.float64),
            token,
            ln,
            out,
        ),
        "",
    )


@dataclass(frozen=True, eq=False)
class DenseHead:
    """The head's exact model: ``[token] -> [LayerNorm] -> Dense`` on raw codes.

    ``weight`` raw ``weight_fmt`` ``[D, C]``, ``bias`` raw ``bias_fmt`` ``[C]``
    (zeros when the graph has none: the accumulator then starts at 0, as without
    a bias), ``gamma``/``beta`` raw codes of ``ln``'s formats.
    """

    seq: int
    dim: int
    token: int | None
    ln: ApproxSpec | None
    gamma: RawArray | None
    beta: RawArray | None
    weight: RawArray
    bias: RawArray
    in_fmt: FixedFormat
    weight_fmt: FixedFormat
    bias_fmt: FixedFormat
    accum_fmt: FixedFormat
    out_fmt: FixedFormat

    def __post_init__(self) -> None:
        if self.token is not None and not 0 <= self.token < self.seq:
            raise SpecError(f"head token {self.token} is outside the sequence 0..{self.seq - 1}")
        if self.weight.shape[0] != self.dim or self.bias.shape != (self.weight.shape[1],):
            raise SpecError(
                f"head weight {self.weight.shape} / bias {self.bias.shape} do not fit D={self.dim}"
            )
        if self.ln is not None and str(self.ln.operator) != "layernorm":
            raise SpecError(f"head ln must be a layernorm spec, got {self.ln.describe()}")
        self.weight_fmt.check(self.weight, "head weight")
        self.bias_fmt.check(self.bias, "head bias")

    @property
    def n_out(self) -> int:
        return int(self.weight.shape[1])

    @property
    def rows(self) -> int:
        """Output rows per sample: 1 with a token select, else ``seq``."""
        return 1 if self.token is not None else self.seq

    @property
    def dense(self) -> MatMulSpec:
        a = self.ln.out_fmt if self.ln is not None else self.in_fmt
        return MatMulSpec(a, self.weight_fmt, self.accum_fmt, self.out_fmt, self.bias_fmt)

    def model(self, x: npt.ArrayLike) -> RawArray:
        """Raw ``in_fmt`` codes ``[S, D]`` or ``[B, S, D]`` -> raw ``out_fmt`` ``[.., rows, C]``."""
        xr = self.in_fmt.check(np.asarray(x), "head input")
        if xr.shape[-2:] != (self.seq, self.dim):
            raise SpecError(f"head input must be [.., {self.seq}, {self.dim}], got {xr.shape}")
        if self.token is not None:
            xr = xr[..., self.token : self.token + 1, :]
        if self.ln is not None:
            xl = cast(xr, self.in_fmt, self.ln.in_fmt)
            xr = self.ln.model(xl, axis=-1, gamma=self.gamma, beta=self.beta)
        return self.dense.model(xr, self.weight, self.bias)

    def instances(self, name: str) -> list[Instance]:
        """Config structs of ``hwapprox::dense_head``: the dense (and LayerNorm) sub-units
        first, then ``name`` (sizes, ``token``, ``has_ln``, weight types)."""
        subs = [matmul_instance(f"{name}_dense", self.dense, self.rows, self.dim, self.n_out)]
        aliases = {"dense_cfg": f"{name}_dense"}
        types = {
            "in_t": self.in_fmt,
            "out_t": self.out_fmt,
            "weight_t": self.weight_fmt,
            "bias_t": self.bias_fmt,
        }
        if self.ln is not None:
            subs.append(unit_instance(f"{name}_ln", self.ln, self.dim))
            aliases["ln_cfg"] = f"{name}_ln"
            types |= {"gamma_t": self.ln.gamma_fmt, "beta_t": self.ln.beta_fmt}  # type: ignore[attr-defined]
        else:  # unread placeholders, so that one signature serves both kinds
            types |= {"gamma_t": self.in_fmt, "beta_t": self.in_fmt}
        consts = {
            "seq": self.seq,
            "dim": self.dim,
            "n_out": self.n_out,
            "rows": self.rows,
            "token": -1 if self.token is None else self.token,
            "has_ln": int(self.ln is not None),
        }
        desc = (
            f"dense head: token {'all' if self.token is None else self.token}, "
            f"{'LayerNorm ' + self.ln.method + ', ' if self.ln is not None else ''}"
            f"Dense {self.dim}->{self.n_out}"
        )
        return [*subs, Instance(name, types, consts, aliases=aliases, comment=desc)]

    def weight_arrays(self) -> dict[str, RawArray]:
        """The C++ function's weight arguments in order: w, b, g, be (g/be: zeros of
        length ``dim`` when the head has no LayerNorm)."""
        zeros = np.zeros(self.dim, np.int64)
        return {
            "w": self.weight,
            "b": self.bias,
            "g": self.gamma if self.gamma is not None else zeros,
            "be": self.beta if self.beta is not None else zeros,
        }

    def weight_formats(self) -> dict[str, FixedFormat]:
        ln: Any = self.ln
        return {
            "w": self.weight_fmt,
            "b": self.bias_fmt,
            "g": ln.gamma_fmt if ln is not None else self.in_fmt,
            "be": ln.beta_fmt if ln is not None else self.in_fmt,
        }


def head_from_attrs(attrs: dict[str, Any], seq: int, dim: int) -> DenseHead:
    """Rebuild the :class:`DenseHead` of a folded ``HwApproxDenseHead`` node's attributes
    (``token`` int, -1 = every token; JSON ``hwapprox`` with the LayerNorm spec or null and
    the formats; float tensors ``t_w``, ``t_b``, ``t_g``, ``t_be`` on their grids)."""
    import json

    from hwapprox.approx.registry import spec_from_config

    try:
        cfg = json.loads(attrs["hwapprox"])
    except KeyError:
        raise SpecError(
            f"{HEAD_OP_TYPE} node has no 'hwapprox' attribute; build the model with "
            "hwapprox.hls.project.prepare_model"
        ) from None
    ln = spec_from_config(cfg["ln"]) if cfg.get("ln") else None
    f = {k: FixedFormat.parse(v) for k, v in cfg["formats"].items()}
    token = int(attrs.get("token", -1))
    w = np.asarray(attrs["t_w"], np.float64)
    if w.ndim != 2 or w.shape[0] != dim:
        raise SpecError(f"{HEAD_OP_TYPE}: weight shape {w.shape} does not take D={dim}")
    g = be = None
    if ln is not None:
        g = ln.gamma_fmt.quantize(np.asarray(attrs["t_g"], np.float64))  # type: ignore[attr-defined]
        be = ln.beta_fmt.quantize(np.asarray(attrs["t_be"], np.float64))  # type: ignore[attr-defined]
    return DenseHead(
        seq=seq, dim=dim, token=None if token < 0 else token, ln=ln, gamma=g, beta=be,
        weight=f["weight_fmt"].quantize(w),
        bias=f["bias_fmt"].quantize(np.asarray(attrs["t_b"], np.float64)),
        in_fmt=f["in_fmt"], weight_fmt=f["weight_fmt"], bias_fmt=f["bias_fmt"],
        accum_fmt=f["accum_fmt"], out_fmt=f["out_fmt"],
    )  # fmt: skip
