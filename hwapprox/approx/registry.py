"""Explicit registry of approximation methods, per operator.

The table below is the single list of methods; classes are imported on first
use (no import side effects). Unknown names get an error listing what exists.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from typing import Any

from hwapprox.approx.base import ApproxSpec, Operator, SpecError, field_names, new_spec

__all__ = [
    "IMPLEMENTED",
    "METHODS",
    "get_method",
    "implemented",
    "list_methods",
    "make_spec",
    "spec_from_config",
]

#: operator -> method name -> "module:Class"
METHODS: dict[Operator, dict[str, str]] = {
    Operator.SOFTMAX: {
        "hls4ml_stable": "hwapprox.approx.softmax:Hls4mlStableSoftmax",
        "hls4ml_latency": "hwapprox.approx.softmax:Hls4mlLatencySoftmax",
        "ibert": "hwapprox.approx.softmax:IBertSoftmax",
        "shiftmax": "hwapprox.approx.softmax:ShiftmaxSoftmax",
        "online": "hwapprox.approx.softmax:OnlineSoftmax",
        "softermax": "hwapprox.approx.softmax:SoftermaxSoftmax",
    },
    Operator.GELU: {
        "ibert": "hwapprox.approx.gelu:IBertGelu",
        "shiftgelu": "hwapprox.approx.gelu:ShiftGelu",
        "edgemoe": "hwapprox.approx.gelu:EdgeMoeGelu",
        "pwl": "hwapprox.approx.gelu:PwlGelu",
        "lut": "hwapprox.approx.gelu:LutGelu",
    },
    Operator.LAYERNORM: {
        "ibert": "hwapprox.approx.layernorm:IBertLayerNorm",
        "ivit": "hwapprox.approx.layernorm:IVitLayerNorm",
        "hls4ml_lut": "hwapprox.approx.layernorm:Hls4mlLayerNorm",
        "rsqrt_lut": "hwapprox.approx.layernorm:RsqrtLutLayerNorm",
        "rmsnorm": "hwapprox.approx.layernorm:RmsNorm",
    },
    Operator.SIGMOID_ATTENTION: {
        "lut": "hwapprox.approx.attnact:SigmoidLut",
        "pwl": "hwapprox.approx.attnact:SigmoidPwl",
    },
    Operator.RELU_ATTENTION: {
        "wortsman": "hwapprox.approx.attnact:ReluAttention",
    },
}


#: implementation target -> operator -> methods with a unit there. The unit tables
#: themselves are ``hwapprox.hls.units.UNITS`` and ``hwapprox.rtl_sim.units.UNITS``
#: (tests/test_registry.py checks they list exactly these); this copy lets the export
#: side (``validate --for hls``) choose methods without importing ``hls``/``rtl_sim``.
IMPLEMENTED: dict[str, dict[Operator, tuple[str, ...]]] = {
    "hls": {
        Operator.SOFTMAX: (
            "hls4ml_latency",
            "hls4ml_stable",
            "ibert",
            "online",
            "shiftmax",
            "softermax",
        ),
        Operator.GELU: ("edgemoe", "ibert", "lut", "pwl", "shiftgelu"),
        Operator.LAYERNORM: ("hls4ml_lut", "ibert", "ivit", "rmsnorm", "rsqrt_lut"),
        Operator.SIGMOID_ATTENTION: ("lut", "pwl"),
        Operator.RELU_ATTENTION: ("wortsman",),
    },
    "rtl": {
        Operator.SOFTMAX: ("ibert", "online", "shiftmax", "softermax"),
        Operator.GELU: ("edgemoe", "ibert", "lut", "pwl", "shiftgelu"),
        Operator.LAYERNORM: ("ibert", "ivit", "rmsnorm", "rsqrt_lut"),
        Operator.SIGMOID_ATTENTION: ("lut", "pwl"),
        Operator.RELU_ATTENTION: ("wortsman",),
    },
}


def implemented(target: str) -> dict[Operator, tuple[str, ...]]:
    """Methods per operator that have a unit for ``target`` (``hls`` or ``rtl``)."""
    if target not in IMPLEMENTED:
        raise SpecError(f"unknown target {target!r}; expected one of: {', '.join(IMPLEMENTED)}")
    return {op: tuple(ms) for op, ms in IMPLEMENTED[target].items()}


def _operator(op: str | Operator) -> Operator:
    try:
        return Operator(op)
    except ValueError:
        names = ", ".join(o.value for o in Operator)
        raise SpecError(f"unknown operator {op!r}; expected one of: {names}") from None


def get_method(op: str | Operator, method: str) -> type[ApproxSpec]:
    """The spec class of ``op``/``method``."""
    operator = _operator(op)
    table = METHODS[operator]
    if method not in table:
        raise SpecError(
            f"unknown {operator} method {method!r}; available: {', '.join(sorted(table))}"
        )
    return _load(table[method])


@functools.cache
def _load(path: str) -> type[ApproxSpec]:
    """The class at ``module:name`` (imported once)."""
    module_name, _, cls_name = path.partition(":")
    return getattr(importlib.import_module(module_name), cls_name)  # type: ignore[no-any-return]


def list_methods(op: str | Operator | None = None) -> dict[Operator, list[str]]:
    """Method names per operator (all operators when ``op`` is None)."""
    ops = list(Operator) if op is None else [_operator(op)]
    return {o: sorted(METHODS[o]) for o in ops}


def make_spec(op: str | Operator, method: str, **fields: Any) -> ApproxSpec:
    """Build a spec; formats may be given in HLS spelling. Unknown fields are an error."""
    cls = get_method(op, method)
    known = field_names(cls)
    unknown = sorted(set(fields) - known)
    if unknown:
        raise SpecError(
            f"{op}/{method} has no field(s) {', '.join(unknown)}; "
            f"fields: {', '.join(sorted(known))}"
        )
    return new_spec(cls, fields)


def spec_from_config(config: dict[str, Any]) -> ApproxSpec:
    """Inverse of :meth:`ApproxSpec.to_config`."""
    cfg = dict(config)
    try:
        op = cfg.pop("operator")
        method = cfg.pop("method")
    except KeyError as exc:
        raise SpecError(f"spec config needs 'operator' and 'method', missing {exc}") from None
    cls = get_method(op, method)
    for f in dataclasses.fields(cls):
        if f.name in cfg and isinstance(cfg[f.name], list):
            cfg[f.name] = tuple(cfg[f.name])
    return make_spec(op, method, **cfg)
