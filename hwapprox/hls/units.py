"""Which HLS unit implements which spec, and its generated config.

:data:`UNITS` is the explicit table ``(operator, method) -> op tag`` of the
library (``include/hwapprox/*.h``); :func:`unit_instance` turns a spec into
the :class:`~hwapprox.hls.emit.Instance` that the unit's function template
reads: one typedef per format field, the spec's hardware parameter set
``hw_params(n_in)`` as constants (the same numbers the SV units take as
parameters, :mod:`hwapprox.approx.hwparams`; the headers type every
intermediate from them), the row length ``n_in``, the tables and the ``op``
typedef. Nothing is renamed or computed here.
"""

from __future__ import annotations

from hwapprox.approx.base import ApproxSpec, SpecError
from hwapprox.fixed import FixedFormat
from hwapprox.hls.emit import Instance, instance_from_spec

__all__ = ["HEADERS", "UNITS", "supported", "unit_instance"]

#: (operator, method) -> op tag struct in namespace hwapprox
UNITS: dict[tuple[str, str], str] = {
    ("layernorm", "rsqrt_lut"): "hwapprox::layernorm_rsqrt_lut_op",
    ("layernorm", "rmsnorm"): "hwapprox::layernorm_rsqrt_lut_op",
    ("layernorm", "ibert"): "hwapprox::layernorm_ibert_op",
    ("layernorm", "ivit"): "hwapprox::layernorm_ivit_op",
    ("layernorm", "hls4ml_lut"): "hwapprox::layernorm_hls4ml_op",
    ("gelu", "ibert"): "hwapprox::gelu_ibert_op",
    ("gelu", "shiftgelu"): "hwapprox::gelu_shiftgelu_op",
    ("gelu", "edgemoe"): "hwapprox::gelu_edgemoe_op",
    ("gelu", "pwl"): "hwapprox::gelu_pwl_op",
    ("gelu", "lut"): "hwapprox::gelu_lut_op",
    ("softmax", "online"): "hwapprox::softmax_online_op",
    ("softmax", "ibert"): "hwapprox::softmax_ibert_op",
    ("softmax", "shiftmax"): "hwapprox::softmax_shiftmax_op",
    ("softmax", "softermax"): "hwapprox::softmax_softermax_op",
    ("softmax", "hls4ml_stable"): "hwapprox::softmax_hls4ml_op",
    ("softmax", "hls4ml_latency"): "hwapprox::softmax_hls4ml_op",
    ("sigmoid_attention", "lut"): "hwapprox::lut_fn_op",
    ("sigmoid_attention", "pwl"): "hwapprox::pwl_fn_op",
    ("relu_attention", "wortsman"): "hwapprox::relu_attention_op",
}

#: header that defines each operator's units and entry function
HEADERS: dict[str, tuple[str, str]] = {
    "softmax": ("softmax.h", "hwapprox::softmax"),
    "gelu": ("gelu.h", "hwapprox::gelu"),
    "layernorm": ("layernorm.h", "hwapprox::layernorm"),
    "sigmoid_attention": ("attnact.h", "hwapprox::sigmoid_attention"),
    "relu_attention": ("attnact.h", "hwapprox::relu_attention"),
}


def supported() -> list[str]:
    """``operator/method`` names that have an HLS unit."""
    return sorted(f"{op}/{m}" for op, m in UNITS)


def unit_instance(name: str, spec: ApproxSpec, n_in: int) -> Instance:
    """Config of the HLS unit for ``spec`` on rows (or chunks) of ``n_in`` values."""
    key = (str(spec.operator), spec.method)
    if key not in UNITS:
        raise SpecError(
            f"no HLS unit for {key[0]}/{key[1]}; units exist for: {', '.join(supported())}"
        )
    if n_in < 1:
        raise SpecError(f"n_in must be >= 1, got {n_in}")
    max_n = getattr(spec, "max_n", None)
    if isinstance(max_n, int) and n_in > max_n:
        raise SpecError(
            f"{key[0]}/{key[1]}: rows of n_in={n_in} exceed the spec's max_n={max_n} "
            "(its accumulator widths); raise max_n"
        )
    extra_types = {}
    code = getattr(spec, "out_code", "linear")
    if code != "linear":
        # every softmax unit: the online unit encodes inside, the others through
        # softmax.h's post-stage; the log code as an unsigned integer type (res_T)
        extra_types["code_t"] = FixedFormat(spec.out_code_bits, spec.out_code_bits, signed=False)  # type: ignore[attr-defined]
    if str(spec.operator) == "softmax" and spec.method.startswith("hls4ml"):
        extra_types["exp_addr_t"] = spec.exp_addr_fmt  # type: ignore[attr-defined]
    hw = spec.hw_params(n_in)  # type: ignore[attr-defined]
    inst = instance_from_spec(name, spec, extra_types=extra_types, consts={**hw, "n_in": n_in})
    return Instance(
        inst.name,
        inst.types,
        inst.consts,
        inst.tables,
        comment=inst.comment,
        aliases={"op": UNITS[key]},
    )
