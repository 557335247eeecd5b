"""Attention emulated as one fused site: softmax and P·V as a single-pass row.

``hwapprox validate --attention fused`` asks what a model's outputs become when
each attention row runs as :class:`~hwapprox.approx.attention.AttentionRowSpec`
(running max, sum and ``D_v`` accumulators; no score row stored) instead of
the softmax site followed by a float ``P·V``. For every approximated softmax
site whose output feeds ``MatMul(P, V)`` (directly, or through the
``Where(IsNaN(p), 0, p)`` guard of torch's sdpa exports), :func:`fuse_site`
widens the site to end at the context tensor and to read ``V`` as a second
input (:attr:`~hwapprox.export.patterns.Site.fused_v`); the site's mask bits
are the same. Formats: scores and the exp/sum/reciprocal units are the
softmax site's own spec (it must be the online softmax, schedule online), ``V``
and the context are calibrated from the float model like any site input and
output (width, headroom, range policy), the accumulators are 32 bits with
``log2(N) + 1`` integer bits above ``V``'s (``|o| <= N·max|V|``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from onnx import ModelProto

from hwapprox.approx.attention import AttentionRowSpec
from hwapprox.approx.base import Operator, SpecError
from hwapprox.approx.softmax import OnlineSoftmax
from hwapprox.export.emulate import apply_fused, trace_model
from hwapprox.export.errors import ExportError
from hwapprox.export.graph import GraphIndex
from hwapprox.export.patterns import Site
from hwapprox.export.stats import SiteStats
from hwapprox.fixed import FixedFormat, Overflow, Rounding

__all__ = ["apply_fused", "fuse_site", "fused_specs"]


def fuse_site(index: GraphIndex, site: Site) -> tuple[Site | None, str]:
    """The fused version of a softmax site (output = the ``P·V`` MatMul's), or None and
    why not."""
    if site.operator is not Operator.SOFTMAX:
        return None, f"{site.operator} site"
    if site.kind == "clipped_softmax":
        return None, "a clipped softmax has no fused attention form"
    rank = index.rank(site.input)
    if site.trailing or site.axis is None or rank is None or site.axis not in (-1, rank - 1):
        return None, "the softmax is not over the last axis (the keys)"
    t = site.output
    extra: list[str] = []
    for _ in range(3):
        cons = index.consumers.get(t, [])
        if t in index.graph_outputs:
            return None, "the probabilities are a graph output"
        isnan = [n for n in cons if n.op_type == "IsNaN"]
        where = [n for n in cons if n.op_type == "Where"]
        if len(cons) == 2 and isnan and where and where[0].input[2] == t:
            # torch sdpa: Where(IsNaN(p), 0, p) after the softmax (fully masked rows)
            if where[0].input[0] != isnan[0].output[0]:
                return None, f"{where[0].name!r} (Where) is not the IsNaN guard of P"
            extra += [isnan[0].name, where[0].name]
            t = where[0].output[0]
            continue
        if len(cons) != 1:
            return None, f"the probabilities feed {len(cons)} nodes, not one P·V MatMul"
        n = cons[0]
        if n.op_type == "MatMul" and n.input[0] == t:
            v = n.input[1]
            if index.const(v) is not None:
                return None, f"{n.name!r}: V is a constant"
            extra.append(n.name)
            fused = dataclasses.replace(
                site, output=n.output[0], nodes=(*site.nodes, *extra), fused_v=v
            )
            return fused, ""
        if n.op_type in ("Cast", "Identity"):
            extra.append(n.name)
            t = n.output[0]
            continue
        return None, f"the probabilities go to {n.name!r} ({n.op_type}), not a P·V MatMul"
    return None, "no P·V MatMul within three nodes of the softmax"


def fused_specs(
    model: ModelProto,
    fused: list[Site],
    softmax_specs: Mapping[str, Any],
    feeds: Mapping[str, np.ndarray],
    *,
    width: int,
    headroom: int,
    stat: str | float,
    threads: int = 0,
) -> tuple[dict[str, AttentionRowSpec], dict[str, dict[str, int]]]:
    """The :class:`AttentionRowSpec` of each fused site (module docstring), calibrated on
    one float run of ``model`` over ``feeds``; and per site the float V and context
    values outside their formats (``v``/``out`` of ``v_total``/``out_total``)."""
    names = [t for s in fused for t in (s.fused_v, s.output) if t is not None]
    sess = trace_model(model, names, threads=threads)
    try:
        vals = dict(zip(names, sess.run(names, dict(feeds)), strict=True))
    except Exception as exc:
        raise ExportError(f"onnxruntime failed on the sample inputs: {exc}") from None
    out: dict[str, AttentionRowSpec] = {}
    sat: dict[str, dict[str, int]] = {}
    rs = (Rounding.RND, Overflow.SAT)
    for s in fused:
        sm = softmax_specs[s.name]
        if not (isinstance(sm, OnlineSoftmax) and sm.schedule == "online"):
            raise ExportError(
                f"site {s.name}: fused attention needs the online softmax (method online, "
                f"schedule online), not {sm.describe()}; use --method softmax=online"
            )
        assert s.fused_v is not None
        v = np.asarray(vals[s.fused_v])
        v_fmt = SiteStats.of(f"{s.name} V", v).choose_format(width, headroom, *rs, stat=stat)
        o_fmt = SiteStats.of(f"{s.name} P·V", vals[s.output]).choose_format(
            width, headroom, *rs, stat=stat
        )
        n = int(v.shape[-2]) if v.ndim >= 2 else 1
        ib = v_fmt.int_bits + max(1, math.ceil(math.log2(max(n, 2)))) + 1
        try:
            out[s.name] = AttentionRowSpec(
                v_fmt=v_fmt,
                acc_fmt=FixedFormat(32, ib, True, *rs),
                out_fmt=o_fmt,
                softmax=sm,
            )
        except SpecError as exc:  # e.g. a unified-max or log-coded softmax
            raise ExportError(f"site {s.name}: no fused attention row: {exc}") from None
        o = np.asarray(vals[s.output], np.float64)
        sat[s.name] = {
            "v": int(np.sum((v < v_fmt.min) | (v > v_fmt.max))),
            "v_total": int(v.size),
            "out": int(np.sum((o < o_fmt.min) | (o > o_fmt.max))),
            "out_total": int(o.size),
        }
    return out, sat
