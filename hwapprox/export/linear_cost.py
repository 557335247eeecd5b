"""An ESTIMATE of the linear layers' DSPs and block RAM, for the board fit.

The nonlinear units are synthesised (or taken from the fitted cost model); the
MatMul / Gemm layers around them are what hls4ml or a hand-written systolic array
implements, and their cost depends on choices hwapprox does not make. So the board
fit adds this documented first-order estimate, marked as one:

* a linear layer is a ``MatMul`` or ``Gemm`` with a constant weight of ``K x N``
  (``K·N`` weights; the attention's activation-by-activation MatMuls ``Q·Kᵀ`` and
  ``P·V`` have no constant weight and are counted separately as ``act_macs``);
* **DSP** = ``ceil(K·N / reuse)`` per layer: ``K·N`` multipliers per token time-shared
  ``reuse`` times (hls4ml's ``ReuseFactor``; default ``reuse = K``: one multiplier per
  output, the K inputs streamed through it, so ``N`` DSPs per layer), one DSP48 per
  multiplier of at most ``18 x 25`` bits (``weight_bits``, ``data_bits`` <= 18: one;
  wider: two);
* **BRAM36** = ``ceil(K·N·weight_bits / 36864)`` per layer (weights held on chip,
  no partitioning overhead: a lower bound when ``reuse`` is small).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from onnx import ModelProto, numpy_helper

__all__ = ["LinearEstimate", "linear_estimate", "reuse_to_fit"]


@dataclass(frozen=True)
class LinearEstimate:
    """The linear layers of a model: counts and the DSP / BRAM36 estimate."""

    layers: int
    weights: int
    act_matmuls: int
    dsp: int
    bram: float
    reuse: int
    weight_bits: int
    formula: str


def linear_estimate(
    model: ModelProto,
    *,
    reuse: int | None = None,
    weight_bits: int = 16,
    data_bits: int = 16,
    as_written: bool = False,
) -> LinearEstimate:
    """:class:`LinearEstimate` of ``model``'s constant-weight MatMul / Gemm layers
    (``reuse`` None: each layer's K, one multiplier per output).

    ``as_written``: the HLS project as hwapprox writes it (``linear.h``'s ``matmul``
    unrolls every row, column and inner product of a sequence: one multiplier per
    product, ``S·K·N`` per layer, ``S`` the tokens per sequence from the inferred
    shapes; no reuse knob): DSP = ``Σ S·K·N`` x multipliers per product."""
    if reuse is not None and reuse < 1:
        raise ValueError(f"reuse must be >= 1, got {reuse}")
    shapes = _static_shapes(model)
    inits = {t.name: t for t in model.graph.initializer}
    consts = {}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute:
            for a in node.attribute:
                if a.name == "value":
                    consts[node.output[0]] = a.t
    per_mult = 1 if max(weight_bits, data_bits) <= 18 else 2
    layers = weights = act = dsp = 0
    bram = 0.0
    for node in model.graph.node:
        if node.op_type not in ("MatMul", "Gemm"):
            continue
        w = next(
            (inits.get(n) or consts.get(n) for n in node.input[:2] if n in inits or n in consts),
            None,
        )
        if w is None:
            act += 1
            continue
        arr = numpy_helper.to_array(w)
        size = int(arr.size)
        k = int(arr.shape[0]) if arr.ndim >= 2 else size  # MatMul/Gemm weight [K, N]
        if node.op_type == "Gemm" and arr.ndim == 2:
            trans_b = any(a.name == "transB" and a.i for a in node.attribute)
            k = int(arr.shape[1]) if trans_b else int(arr.shape[0])
        layers += 1
        weights += size
        if as_written:
            x_in = next((n for n in node.input[:2] if n not in inits and n not in consts), "")
            dims = shapes.get(x_in, [])
            rows = math.prod(dims[1:-1]) if len(dims) >= 3 else 1
            dsp += rows * size * per_mult
        else:
            dsp += math.ceil(size / (k if reuse is None else reuse)) * per_mult
        bram += math.ceil(size * weight_bits / 36864)
    if as_written:
        formula = (
            f"DSP = sum over layers of S*K*N x {per_mult} (the project as written: "
            "hwapprox/linear.h unrolls every row, column and inner product of a sequence of "
            f"S tokens, no reuse; {weight_bits}-bit weights x {data_bits}-bit data); BRAM36 = "
            f"sum ceil(K*N*{weight_bits} / 36864); ESTIMATE, not synthesis"
        )
        return LinearEstimate(layers, weights, act, dsp, bram, 1, weight_bits, formula)
    rf = "K" if reuse is None else str(reuse)
    formula = (
        f"DSP = sum ceil(K*N / {rf}) x {per_mult} (ReuseFactor {rf}, "
        f"{weight_bits}-bit weights x {data_bits}-bit data); BRAM36 = sum ceil(K*N*"
        f"{weight_bits} / 36864); ESTIMATE, not synthesis"
    )
    return LinearEstimate(layers, weights, act, dsp, bram, reuse or 0, weight_bits, formula)


def _static_shapes(model: ModelProto) -> dict[str, list[int]]:
    """Tensor name -> its static dims (from the inferred value infos; dynamic dims 1)."""
    out: dict[str, list[int]] = {}
    g = model.graph
    for vi in [*g.input, *g.value_info, *g.output]:
        t = vi.type.tensor_type
        if t.HasField("shape"):
            out[vi.name] = [d.dim_value if d.HasField("dim_value") else 1 for d in t.shape.dim]
    return out


def reuse_to_fit(
    model: ModelProto, dsp_budget: float, *, weight_bits: int = 16, data_bits: int = 16
) -> LinearEstimate | None:
    """The smallest uniform ReuseFactor whose linear-layer DSP estimate is at most
    ``dsp_budget`` (the board's DSPs left after the nonlinear units), or None when even
    one multiplier per layer (reuse = the largest layer's K·N) does not fit."""
    if dsp_budget < 0:
        return None
    top = linear_estimate(model, reuse=1, weight_bits=weight_bits, data_bits=data_bits)
    if top.layers == 0:
        return top
    largest = max(1, top.dsp)  # reuse >= every layer's K·N gives one multiplier per layer
    lo, hi = 1, largest
    if linear_estimate(model, reuse=hi, weight_bits=weight_bits, data_bits=data_bits).dsp > (
        dsp_budget
    ):
        return None
    while lo < hi:  # DSP(reuse) is non-increasing: bisect on the smallest reuse that fits
        mid = (lo + hi) // 2
        e = linear_estimate(model, reuse=mid, weight_bits=weight_bits, data_bits=data_bits)
        if e.dsp <= dsp_budget:
            hi = mid
        else:
            lo = mid + 1
    return linear_estimate(model, reuse=lo, weight_bits=weight_bits, data_bits=data_bits)
