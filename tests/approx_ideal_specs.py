"""Tiny "ideal" specs for testing the metrics/sweep/tune machinery.

Their errors are known by construction, independent of the real methods:

* ``IdealSoftmax``: float64 softmax of the input codes rounded to nearest
  (``AP_RND``) into ``out_fmt`` -> max error <= 0.5 output LSB as long as
  ``out_fmt`` holds 1.0 (default ``ap_ufixed<9,1>``). ``coarse = c`` then
  clears the ``c`` low bits of that code (``r & ~(2^c - 1)``), adding an
  error in ``[0, 2^c - 1]`` LSB, so the total lies in ``[-0.5, 2^c - 0.5]``.
  Cost: one table of 64 entries of ``width - coarse`` bits (score =
  ``width - coarse``).
* ``IdealGelu``: float GELU rounded into ``out_fmt``; same cost rule.
* ``IdealLayerNorm``: float LayerNorm with gamma/beta codes, rounded.

Registered under the method name ``ideal`` by the :func:`register` fixture
helper (the real registry is patched only for the test).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from hwapprox.approx.base import Cost, ElementwiseSpec, Operator, RowwiseSpec, SpecError
from hwapprox.approx.registry import METHODS
from hwapprox.fixed import FixedFormat


def _round_out(spec: Any, y: np.ndarray) -> np.ndarray:
    fmt = spec.out_fmt.with_modes("AP_RND", "AP_SAT")
    r = fmt.quantize(y)
    if spec.coarse:
        r = r & ~np.int64((1 << spec.coarse) - 1)
    return r


def _cost(spec: Any) -> Cost:
    bits = spec.out_fmt.width - spec.coarse
    return Cost(table_bits=64 * bits, tables=1, widest_bits=bits)


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@dataclass(frozen=True)
class IdealSoftmax(RowwiseSpec):
    operator: ClassVar[Operator] = Operator.SOFTMAX
    method: ClassVar[str] = "ideal"
    source: ClassVar[str] = "test helper: float64 softmax rounded to out_fmt"

    in_fmt: FixedFormat = "ap_fixed<16,6>"  # type: ignore[assignment]
    out_fmt: FixedFormat = "ap_ufixed<9,1>"  # type: ignore[assignment]
    coarse: int = 0

    def validate(self) -> None:
        if not 0 <= self.coarse < self.out_fmt.width:
            raise SpecError(f"coarse={self.coarse} must be in [0, {self.out_fmt.width})")

    def _model_rows(self, x: Any, **kw: Any) -> Any:
        return _round_out(self, _softmax(self.in_fmt.to_float(x)))

    def reference(self, x: Any, axis: int = -1, **kw: Any) -> Any:
        return _softmax(np.asarray(x, dtype=np.float64), axis=axis)

    def cost(self) -> Cost:
        return _cost(self)


def _gelu(x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


@dataclass(frozen=True)
class IdealGelu(ElementwiseSpec):
    operator: ClassVar[Operator] = Operator.GELU
    method: ClassVar[str] = "ideal"
    source: ClassVar[str] = "test helper: float64 GELU rounded to out_fmt"

    in_fmt: FixedFormat = "ap_fixed<16,6>"  # type: ignore[assignment]
    out_fmt: FixedFormat = "ap_fixed<16,6>"  # type: ignore[assignment]
    coarse: int = 0

    def _model_flat(self, x: Any) -> Any:
        return _round_out(self, _gelu(self.in_fmt.to_float(x)))

    def reference(self, x: Any, **kw: Any) -> Any:
        return _gelu(np.asarray(x, dtype=np.float64))

    def cost(self) -> Cost:
        return _cost(self)


@dataclass(frozen=True)
class IdealLayerNorm(RowwiseSpec):
    operator: ClassVar[Operator] = Operator.LAYERNORM
    method: ClassVar[str] = "ideal"
    source: ClassVar[str] = "test helper: float64 LayerNorm rounded to out_fmt"

    in_fmt: FixedFormat = "ap_fixed<16,6>"  # type: ignore[assignment]
    out_fmt: FixedFormat = "ap_fixed<16,6>"  # type: ignore[assignment]
    gamma_fmt: FixedFormat = "ap_fixed<16,4>"  # type: ignore[assignment]
    beta_fmt: FixedFormat = "ap_fixed<16,4>"  # type: ignore[assignment]
    eps: float = 1e-5
    coarse: int = 0

    def _model_rows(self, x: Any, gamma: Any = None, beta: Any = None, **kw: Any) -> Any:
        g = None if gamma is None else self.gamma_fmt.to_float(gamma)
        b = None if beta is None else self.beta_fmt.to_float(beta)
        return _round_out(self, self.reference(self.in_fmt.to_float(x), gamma=g, beta=b))

    def reference(
        self, x: Any, axis: int = -1, gamma: Any = None, beta: Any = None, **kw: Any
    ) -> Any:
        x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
        y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + self.eps)
        if gamma is not None:
            y = y * gamma
        if beta is not None:
            y = y + beta
        return np.moveaxis(y, -1, axis)

    def cost(self) -> Cost:
        return _cost(self)


IDEAL = {
    Operator.SOFTMAX: "approx_ideal_specs:IdealSoftmax",
    Operator.GELU: "approx_ideal_specs:IdealGelu",
    Operator.LAYERNORM: "approx_ideal_specs:IdealLayerNorm",
}


def register(monkeypatch: pytest.MonkeyPatch) -> None:
    """Add the ``ideal`` methods to the registry for one test."""
    for op, target in IDEAL.items():
        monkeypatch.setitem(METHODS[op], "ideal", target)
