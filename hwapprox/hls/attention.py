"""HLS config of the fused attention row (``include/hwapprox/attention.h``).

:func:`attention_instances` writes, for an
:class:`~hwapprox.approx.attention.AttentionRowSpec` over ``n_keys`` keys of
``dim`` (K) and ``dim_v`` (V) lanes: the online softmax sub-unit's config (its
``hw_params`` and tables: the exp, sum and reciprocal units the row reuses) and
the row's own struct (the formats as typedefs, the exact dot-product type, the
sizes, the scale's raw code).
"""

from __future__ import annotations

from hwapprox.approx.attention import AttentionRowSpec
from hwapprox.approx.base import SpecError
from hwapprox.fixed import FixedFormat
from hwapprox.hls.emit import Instance
from hwapprox.hls.units import unit_instance

__all__ = ["attention_instances"]


def attention_instances(
    name: str, spec: AttentionRowSpec, n_keys: int, dim: int, dim_v: int
) -> list[Instance]:
    """Config structs of ``hwapprox::attention_row[_stream]``: ``{name}_sm`` (the online
    softmax units), then ``name``."""
    for k, v in (("n_keys", n_keys), ("dim", dim), ("dim_v", dim_v)):
        if int(v) < 1:
            raise SpecError(f"{name}: {k} must be >= 1, got {v}")
    if n_keys > spec.max_keys():
        raise SpecError(
            f"{name}: {n_keys} keys exceed the {spec.max_keys()} the spec's acc_fmt/sum_fmt hold"
        )
    sm = unit_instance(f"{name}_sm", spec.softmax, n_keys)
    dw = spec.dot_width(dim)
    types = {
        "q_t": spec.q_fmt,
        "k_t": spec.k_fmt,
        "v_t": spec.v_fmt,
        "score_t": spec.score_fmt,
        "acc_t": spec.acc_fmt,
        "out_t": spec.out_fmt,
        "scale_t": spec.scale_fmt,
        "dot_t": FixedFormat(dw, dw - spec.q_fmt.frac_bits - spec.k_fmt.frac_bits, True),
    }
    consts = {
        "n_keys": int(n_keys),
        "dim": int(dim),
        "dim_v": int(dim_v),
        "has_scale": int(spec.scale is not None),
        "scale_raw": spec.scale_raw,
    }
    row = Instance(
        name, types, consts, aliases={"softmax_cfg": f"{name}_sm"}, comment=spec.describe()
    )
    return [sm, row]
