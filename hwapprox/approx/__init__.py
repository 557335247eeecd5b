"""Bit-accurate integer models of softmax, GELU and LayerNorm approximations.

Each method is a frozen, validated spec whose ``model(raw)`` (pure integer
numpy) is the single definition that the HLS and RTL implementations must
reproduce bit for bit; ``tables()`` gives every look-up table as exact
integers and ``reference(x)`` the float64 function approximated.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> defining module (imported on first attribute access, so
#: ``import hwapprox.approx`` stays light: no matplotlib, no method modules).
#: ``tune`` is not listed: it is also the submodule ``hwapprox.approx.tune``.
_EXPORTS: dict[str, str] = {
    "ApproxSpec": "hwapprox.approx.base",
    "Cost": "hwapprox.approx.base",
    "Operator": "hwapprox.approx.base",
    "SpecError": "hwapprox.approx.base",
    "get_method": "hwapprox.approx.registry",
    "list_methods": "hwapprox.approx.registry",
    "make_spec": "hwapprox.approx.registry",
    "spec_from_config": "hwapprox.approx.registry",
    "Metrics": "hwapprox.approx.metrics",
    "compute_metrics": "hwapprox.approx.metrics",
    "InputSet": "hwapprox.approx.inputs",
    "Grid": "hwapprox.approx.sweep",
    "expand": "hwapprox.approx.sweep",
    "measure": "hwapprox.approx.sweep",
    "pareto_front": "hwapprox.approx.sweep",
    "run_sweep": "hwapprox.approx.sweep",
    "Budget": "hwapprox.approx.tune",
    "AttentionRowSpec": "hwapprox.approx.attention",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
