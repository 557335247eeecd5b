"""Float-reference "approximations": the exact function, quantised once at each end.

These specs follow the :class:`~hwapprox.approx.base.ApproxSpec` call
contracts (softmax ``model(raw, axis)``, GELU ``model(raw)``, LayerNorm
``model(raw, axis, gamma, beta)`` with raw gamma/beta codes) but compute in
float64: ``model(raw) = out_fmt.quantize(f(in_fmt.to_float(raw)))``. They are
*not* hardware models; they isolate quantisation error (what a perfect unit
with these formats would do) and, with wide formats (the defaults below, 40+
fraction bits), reproduce the float model to float32 rounding -- which is how
the emulation path is checked against onnxruntime.

They are not in the method registry (:mod:`hwapprox.approx.registry`); pass
them to the emulator directly, or register them in tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox.approx.attnact import relu_attention_reference, sigmoid_attention_reference
from hwapprox.approx.base import Cost, Operator, RowwiseSpec, SpecError
from hwapprox.approx.gelu import GELU_FORMS, QUICK_GELU_ALPHA
from hwapprox.fixed import FixedFormat

__all__ = [
    "FloatRefGelu",
    "FloatRefLayerNorm",
    "FloatRefNormaliser",
    "FloatRefReluAttention",
    "FloatRefSigmoidAttention",
    "FloatRefSoftmax",
    "erf",
    "gelu_erf",
    "gelu_float",
    "gelu_quick",
    "gelu_tanh",
    "layernorm_ref",
    "softmax1_ref",
    "softmax_ref",
]

_WIDE_IN = "ap_fixed<56,16,AP_RND_CONV,AP_SAT>"
_WIDE_OUT = "ap_fixed<56,16,AP_RND_CONV,AP_SAT>"
_erf_u = np.frompyfunc(math.erf, 1, 1)


def erf(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Error function in float64 (``math.erf`` elementwise; correctly rounded to ~1 ulp)."""
    a = np.asarray(x, dtype=np.float64)
    return np.asarray(_erf_u(a), dtype=np.float64).reshape(a.shape)


def gelu_erf(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``x/2 · (1 + erf(x/√2))`` in float64."""
    a = np.asarray(x, dtype=np.float64)
    return 0.5 * a * (1.0 + erf(a / math.sqrt(2.0)))


def gelu_tanh(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))`` in float64."""
    a = np.asarray(x, dtype=np.float64)
    return 0.5 * a * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (a + 0.044715 * a**3)))


def gelu_quick(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """CLIP's ``quick_gelu`` ``x·σ(1.702·x)`` in float64."""
    a = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        return a / (1.0 + np.exp(-QUICK_GELU_ALPHA * a))


def silu(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """SiLU (swish) ``x·σ(x)`` in float64 (Llama's gated FFN)."""
    a = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        return a / (1.0 + np.exp(-a))


def gelu_float(x: npt.ArrayLike, form: str = "erf") -> npt.NDArray[np.float64]:
    """The GELU of ``form`` (:data:`~hwapprox.approx.gelu.GELU_FORMS`) in float64."""
    fn = {"erf": gelu_erf, "tanh": gelu_tanh, "quick": gelu_quick, "silu": silu}.get(form)
    if fn is None:
        raise SpecError(f"GELU form must be one of {', '.join(GELU_FORMS)}, got {form!r}")
    return fn(x)


def softmax_ref(
    x: npt.ArrayLike, axis: int = -1, mask: npt.ArrayLike | None = None
) -> npt.NDArray[np.float64]:
    """``exp(x - max) / Σ exp(x - max)`` along ``axis`` in float64; elements where
    ``mask`` is True are left out (output 0; a fully masked row is all 0)."""
    a = np.asarray(x, dtype=np.float64)
    if mask is None:
        e = np.exp(a - a.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    m = np.broadcast_to(np.asarray(mask, dtype=bool), a.shape)
    top = np.where(m, -np.inf, a).max(axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.where(m, 0.0, np.exp(np.where(m, 0.0, a - top)))
    s = e.sum(axis=axis, keepdims=True)
    return e / np.where(s == 0, 1.0, s)


def softmax1_ref(
    x: npt.ArrayLike, axis: int = -1, mask: npt.ArrayLike | None = None
) -> npt.NDArray[np.float64]:
    """Softmax_1 ``exp(x_i) / (1 + Σ_j exp(x_j))`` along ``axis`` in float64, as
    ``exp(x_i - m) / (exp(-m) + Σ exp(x_j - m))`` with ``m = max(0, max x)``;
    elements where ``mask`` is True are left out (output 0)."""
    a = np.asarray(x, dtype=np.float64)
    m = np.zeros(a.shape, dtype=bool) if mask is None else np.broadcast_to(mask, a.shape)
    top = np.maximum(np.where(m, -np.inf, a).max(axis=axis, keepdims=True), 0.0)
    e = np.where(m, 0.0, np.exp(np.where(m, 0.0, a - top)))
    return e / (np.exp(-top) + e.sum(axis=axis, keepdims=True))


def layernorm_ref(
    x: npt.ArrayLike,
    axis: int = -1,
    gamma: npt.ArrayLike | None = None,
    beta: npt.ArrayLike | None = None,
    eps: float = 1e-5,
) -> npt.NDArray[np.float64]:
    """``(x - mean) / sqrt(var + eps) · gamma + beta`` along ``axis`` (biased var)."""
    a = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    mu = a.mean(axis=-1, keepdims=True)
    var = ((a - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (a - mu) / np.sqrt(var + eps)
    if gamma is not None:
        y = y * np.asarray(gamma, dtype=np.float64)
    if beta is not None:
        y = y + np.asarray(beta, dtype=np.float64)
    return np.moveaxis(y, -1, axis)


def _float_cost(spec: Any) -> Cost:
    return Cost(widest_bits=max(spec.in_fmt.width, spec.out_fmt.width), notes="float reference")


@dataclass(frozen=True)
class FloatRefSoftmax(RowwiseSpec):
    """Softmax in float64 between quantised input and output."""

    operator: ClassVar[Operator] = Operator.SOFTMAX
    method: ClassVar[str] = "float_ref"
    source: ClassVar[str] = "float64 reference (not a hardware method)"

    in_fmt: FixedFormat = _WIDE_IN  # type: ignore[assignment]
    out_fmt: FixedFormat = _WIDE_OUT  # type: ignore[assignment]

    def _model_rows(
        self, x: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_] | None = None, **kw: Any
    ) -> npt.NDArray[np.int64]:
        return self.out_fmt.quantize(softmax_ref(self.in_fmt.to_float(x), axis=-1, mask=mask))

    def reference(
        self, x: npt.ArrayLike, axis: int = -1, mask: npt.ArrayLike | None = None, **kw: Any
    ) -> npt.NDArray[np.float64]:
        return softmax_ref(x, axis=axis, mask=mask)

    def cost(self) -> Cost:
        return _float_cost(self)


@dataclass(frozen=True)
class FloatRefNormaliser(FloatRefSoftmax):
    """Softmax_1 (``off_by_one``) and clipped softmax (``clip((ζ - γ)·p + γ, 0, 1)``
    with ``clip_gamma`` = γ, ``clip_zeta`` = ζ) in float64 between quantised input
    and output: the options of the online softmax, computed exactly (constants
    not quantised). Masked outputs are 0."""

    off_by_one: bool = False
    clip_gamma: float = 0.0
    clip_zeta: float = 1.0

    def _ref_rows(self, a: npt.ArrayLike, axis: int, mask: Any) -> npt.NDArray[np.float64]:
        p = (softmax1_ref if self.off_by_one else softmax_ref)(a, axis=axis, mask=mask)
        if (self.clip_gamma, self.clip_zeta) != (0.0, 1.0):
            p = np.clip((self.clip_zeta - self.clip_gamma) * p + self.clip_gamma, 0.0, 1.0)
            if mask is not None:
                p = np.where(np.broadcast_to(mask, p.shape), 0.0, p)
        return p

    def _model_rows(
        self, x: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_] | None = None, **kw: Any
    ) -> npt.NDArray[np.int64]:
        return self.out_fmt.quantize(self._ref_rows(self.in_fmt.to_float(x), -1, mask))

    def reference(
        self, x: npt.ArrayLike, axis: int = -1, mask: npt.ArrayLike | None = None, **kw: Any
    ) -> npt.NDArray[np.float64]:
        return self._ref_rows(x, axis, mask)


@dataclass(frozen=True)
class _FloatRefElementwise(FloatRefSoftmax):
    """An elementwise function (``reference``) between quantised input and output."""

    def model(self, raw: npt.ArrayLike, **kw: Any) -> npt.NDArray[np.int64]:
        x = self.check_input(raw)
        return self.out_fmt.quantize(self.reference(self.in_fmt.to_float(x)))


@dataclass(frozen=True)
class FloatRefGelu(_FloatRefElementwise):
    """GELU (erf, tanh or quick form) in float64 between quantised input and output."""

    operator: ClassVar[Operator] = Operator.GELU
    form: str = "erf"

    def validate(self) -> None:
        if self.form not in GELU_FORMS:
            raise SpecError(
                f"FloatRefGelu.form must be one of {', '.join(GELU_FORMS)}, got {self.form!r}"
            )

    def reference(self, x: npt.ArrayLike, **kw: Any) -> npt.NDArray[np.float64]:
        return gelu_float(x, self.form)


@dataclass(frozen=True)
class FloatRefLayerNorm(FloatRefSoftmax):
    """LayerNorm in float64 between quantised input/gamma/beta and output."""

    operator: ClassVar[Operator] = Operator.LAYERNORM
    gamma_fmt: FixedFormat = _WIDE_IN  # type: ignore[assignment]
    beta_fmt: FixedFormat = _WIDE_IN  # type: ignore[assignment]
    eps: float = 1e-5

    def _model_rows(
        self,
        x: npt.NDArray[np.int64],
        gamma: npt.ArrayLike | None = None,
        beta: npt.ArrayLike | None = None,
        **kw: Any,
    ) -> npt.NDArray[np.int64]:
        g = None if gamma is None else self.gamma_fmt.to_float(self.gamma_fmt.check(gamma, "gamma"))
        b = None if beta is None else self.beta_fmt.to_float(self.beta_fmt.check(beta, "beta"))
        y = layernorm_ref(self.in_fmt.to_float(x), -1, g, b, self.eps)
        return self.out_fmt.quantize(y)

    def reference(
        self,
        x: npt.ArrayLike,
        axis: int = -1,
        gamma: npt.ArrayLike | None = None,
        beta: npt.ArrayLike | None = None,
        **kw: Any,
    ) -> npt.NDArray[np.float64]:
        return layernorm_ref(x, axis, gamma, beta, self.eps)


@dataclass(frozen=True)
class FloatRefSigmoidAttention(_FloatRefElementwise):
    """Sigmoid attention ``σ(x + bias)`` in float64 between quantised input and output
    (the bias exact)."""

    operator: ClassVar[Operator] = Operator.SIGMOID_ATTENTION
    bias: float = 0.0

    def reference(self, x: npt.ArrayLike, **kw: Any) -> npt.NDArray[np.float64]:
        return sigmoid_attention_reference(x, self.bias)


@dataclass(frozen=True)
class FloatRefReluAttention(_FloatRefElementwise):
    """ReLU attention ``max(x, 0) / seq_len`` in float64 between quantised input and
    output."""

    operator: ClassVar[Operator] = Operator.RELU_ATTENTION
    seq_len: int = 1

    def reference(self, x: npt.ArrayLike, **kw: Any) -> npt.NDArray[np.float64]:
        return relu_attention_reference(x, self.seq_len)
