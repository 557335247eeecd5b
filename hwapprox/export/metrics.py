"""End-to-end metrics that fit the model's outputs.

Each graph output gets a *kind* (:func:`output_kinds`), read off the node that
produces it:

* ``embedding`` -- hidden states (produced by a LayerNorm site or a residual
  ``Add``, possibly through reshapes): per-token cosine and mean-pooled
  cosine, no top-1 (an argmax over hidden dimensions means nothing);
* ``classifier`` -- logits without a token axis (``Gemm``/``MatMul`` head):
  top-1 agreement per sample;
* ``token_logits`` -- logits with a token axis (a language-model head): top-1
  agreement per unmasked token;
* ``tensor`` -- anything else: errors and cosine only.

Padded tokens never count: when the model has a padding mask (the graph input
behind a softmax site's padding mask, or an input named ``attention_mask``),
every metric of an output whose leading axes are ``[batch, sequence]`` (or
``[sequence]`` for a model without a batch axis) is taken over the unmasked
tokens only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwapprox._cache import BoundedMemo
from hwapprox.approx.base import Operator
from hwapprox.export.graph import GraphIndex
from hwapprox.export.patterns import Site

__all__ = ["OutputInfo", "batch_axis", "end_to_end_metrics", "output_kinds", "token_mask"]

_PASS_OPS = frozenset(
    {"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Cast", "Gather"}
)
_HEAD_OPS = frozenset({"MatMul", "Gemm", "Einsum"})

#: Metric keys, in report order.
KEYS = (
    "max_abs",
    "mean_abs",
    "cosine_mean",
    "cosine_min",
    "token_cosine_mean",
    "token_cosine_min",
    "pooled_cosine_mean",
    "pooled_cosine_min",
    "top1",
)


@dataclass(frozen=True)
class OutputInfo:
    """How one graph output is measured (see the module docstring)."""

    name: str
    kind: str
    note: str = ""


def _producer_kind(g: GraphIndex, name: str, site_outputs: Mapping[str, Site]) -> tuple[str, str]:
    t = name
    for _ in range(16):
        s = site_outputs.get(t)
        if s is not None:
            if s.operator is Operator.LAYERNORM:
                return "embedding", f"LayerNorm site {s.name}"
            return "tensor", f"{s.operator} site {s.name}"
        node = g.producer.get(t)
        if node is None:
            return "tensor", "a graph input or constant"
        if node.op_type in _HEAD_OPS:
            return "logits", f"{node.op_type} '{node.name}'"
        if node.op_type == "Add":
            ops = [g.producer.get(i) for i in node.input]
            if any(p is not None and p.op_type in _HEAD_OPS for p in ops) and any(
                g.const(i) is not None for i in node.input
            ):
                return "logits", f"biased {ops[0].op_type if ops[0] else 'MatMul'} '{node.name}'"
            return "embedding", f"residual Add '{node.name}'"
        if node.op_type in _PASS_OPS and node.input:
            t = node.input[0]
            continue
        return "tensor", f"{node.op_type} '{node.name}'"
    return "tensor", "a long chain of reshapes"


def batch_axis(sites: list[Site]) -> int | None:
    """0 when the model has a batch axis, None when it has none.

    Read off the sites: attention scores of rank >= 4 (``[B, H, S, S]``) or
    LayerNorm/GELU inputs of rank >= 3 (``[B, S, D]``) mean a batch axis; scores
    of rank 3 (``[H, S, S]``) mean none. Without such evidence: 0.
    """
    for s in sites:
        if s.shape is None:
            continue
        r = len(s.shape)
        if s.operator is Operator.SOFTMAX:
            if r >= 4:
                return 0
            if r == 3:
                return None
    ranks = [
        len(s.shape) for s in sites if s.shape is not None and s.operator is not Operator.SOFTMAX
    ]
    if ranks and max(ranks) <= 2 and any(s.operator is Operator.SOFTMAX for s in sites):
        return None
    return 0


def token_mask(
    sites: list[Site], feeds: Mapping[str, np.ndarray], axis: int | None
) -> tuple[str, np.ndarray] | None:
    """``(input name, keep)`` -- True for real tokens -- from the padding mask input."""
    want = 2 if axis == 0 else 1
    names: list[str] = []
    for s in sites:
        if s.mask is not None:
            names += [n for p in s.mask.parts if p.role == "padding" for n in p.sources]
    names.append("attention_mask")
    for n in dict.fromkeys(names):
        v = feeds.get(n)
        if v is not None and np.ndim(v) == want:
            return n, np.asarray(v) != 0
    return None


#: output kinds by the graph index and sites (ids: each entry holds the objects), the
#: outputs' names and ranks, and the batch axis (validate asks once per call)
_KINDS: BoundedMemo[tuple[GraphIndex, list[Site], dict[str, OutputInfo]]] = BoundedMemo(64)


def output_kinds(
    g: GraphIndex, sites: list[Site], ref: Mapping[str, np.ndarray], axis: int | None
) -> dict[str, OutputInfo]:
    """Kind of every graph output (see the module docstring); memoised (:data:`_KINDS`:
    the kinds read only the graph, the sites, the names and the ranks)."""
    key = (id(g), id(sites), len(sites), tuple((n, np.ndim(a)) for n, a in ref.items()), axis)
    hit = _KINDS.get(key, None)
    if hit is not None and hit[0] is g and hit[1] is sites:
        return dict(hit[2])
    out = _output_kinds(g, sites, ref, axis)
    _KINDS.put(key, (g, sites, dict(out)))
    return out


def _output_kinds(
    g: GraphIndex, sites: list[Site], ref: Mapping[str, np.ndarray], axis: int | None
) -> dict[str, OutputInfo]:
    by_out = {s.output: s for s in sites}
    out: dict[str, OutputInfo] = {}
    for name, arr in ref.items():
        kind, how = _producer_kind(g, name, by_out)
        rank = np.ndim(arr) - (1 if axis == 0 else 0)
        if kind == "logits":
            kind = "token_logits" if rank >= 2 else "classifier"
        out[name] = OutputInfo(name, kind, f"produced by {how}")
    return out


def _samples(
    a: np.ndarray, axis: int | None, keep: np.ndarray | None
) -> tuple[list[np.ndarray], bool]:
    """Per-sample ``(tokens, features)`` matrices (kept tokens only) and whether the
    output has a token axis matched to ``keep``."""
    if axis == 0:
        if a.ndim >= 3 and keep is not None and a.shape[:2] == keep.shape:
            return [a[i][keep[i]].reshape(int(keep[i].sum()), -1) for i in range(a.shape[0])], True
        if a.ndim >= 3:
            return [a[i].reshape(a.shape[1], -1) for i in range(a.shape[0])], True
        if a.ndim >= 1:
            return [a[i].reshape(1, -1) for i in range(a.shape[0])], False
        return [a.reshape(1, -1)], False
    if a.ndim >= 2 and keep is not None and a.shape[:1] == keep.shape:
        return [a[keep].reshape(int(keep.sum()), -1)], True
    if a.ndim >= 2:
        return [a.reshape(a.shape[0], -1)], True
    return [a.reshape(1, -1)], False


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine; two zero rows agree (1), one zero row does not (0)."""
    na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    dot = (a * b).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.where((na == 0) & (nb == 0), 1.0, dot / np.maximum(na * nb, 1e-300))
    return np.clip(c, -1.0, 1.0)


def _one(a: np.ndarray, b: np.ndarray, info: OutputInfo, axis: int | None, keep: Any) -> dict:
    if axis == 0 and keep is None and a.ndim >= 2 and a.shape[0] > 1 and a.size:
        # every sample kept whole, one shape: _samples' matrices stacked, as views
        tok = a.ndim >= 3
        shape = (a.shape[0], a.shape[1] if tok else 1, -1)
        return _one_stacked(a.reshape(shape), b.reshape(shape), info, tok)
    sa, tok = _samples(a, axis, keep)
    sb, _ = _samples(b, axis, keep)
    sa_nz = [x for x in sa if x.size]
    sb_nz = [y for x, y in zip(sa, sb, strict=True) if x.size]
    if len(sa_nz) > 1 and len({x.shape for x in sa_nz}) == 1:
        return _one_stacked(np.stack(sa_nz), np.stack(sb_nz), info, tok)
    return _one_loop(sa_nz, sb_nz, info, tok)


def _one_loop(
    sa_nz: list[np.ndarray], sb_nz: list[np.ndarray], info: OutputInfo, tok: bool
) -> dict:
    """:func:`_one`'s figures from the non-empty samples, one sample at a time."""
    pairs = list(zip(sa_nz, sb_nz, strict=True))
    d = np.concatenate([np.abs(x - y).ravel() for x, y in pairs] or [[]])
    flat = np.array([_cos(x.ravel(), y.ravel()) for x, y in pairs])
    tc = pc = hits = None
    if info.kind == "embedding" and tok and sa_nz:
        tc = np.concatenate([_cos(x, y) for x, y in pairs])
        pc = np.array([_cos(x.mean(axis=0), y.mean(axis=0)) for x, y in pairs])
    if info.kind in ("classifier", "token_logits") and sa_nz and sa_nz[0].shape[-1] >= 2:
        if info.kind == "classifier":
            hits = np.array([x.ravel().argmax() == y.ravel().argmax() for x, y in pairs])
        else:
            hits = np.concatenate([x.argmax(axis=-1) == y.argmax(axis=-1) for x, y in pairs])
    ref = float(max((np.abs(x).max() for x in sa_nz), default=0.0))
    return _figures(info, d, ref, flat, tc, pc, hits)


def _one_stacked(sa: np.ndarray, sb: np.ndarray, info: OutputInfo, tok: bool) -> dict:
    """:func:`_one` of samples of one shape, stacked ``(samples, tokens, features)``: the
    same figures from whole-array operations (each reduction runs along the same axis
    of the same values as the per-sample loop, so the floats are the same)."""
    n = sa.shape[0]
    d = np.abs(sa - sb).ravel()
    flat = _cos(sa.reshape(n, -1), sb.reshape(n, -1))
    tc = pc = hits = None
    if info.kind == "embedding" and tok:
        tc = _cos(sa, sb).ravel()
        pc = _cos(sa.mean(axis=1), sb.mean(axis=1))
    if info.kind in ("classifier", "token_logits") and sa.shape[-1] >= 2:
        if info.kind == "classifier":
            hits = sa.reshape(n, -1).argmax(axis=1) == sb.reshape(n, -1).argmax(axis=1)
        else:
            hits = (sa.argmax(axis=-1) == sb.argmax(axis=-1)).ravel()
    return _figures(info, d, float(np.abs(sa).max()), flat, tc, pc, hits)


def _figures(
    info: OutputInfo,
    d: np.ndarray,
    ref_absmax: float,
    flat: np.ndarray,
    tc: np.ndarray | None,
    pc: np.ndarray | None,
    hits: np.ndarray | None,
) -> dict[str, Any]:
    """One output's figures from its arrays: ``d`` = |reference - emulated| of every
    value, the reference's largest |value|, per-sample cosines ``flat``, per-token and
    pooled cosines (embeddings; else None) and top-1 hits (logits; else None)."""
    m: dict[str, Any] = {
        "kind": info.kind,
        "note": info.note,
        "values": int(d.size),
        "max_abs": float(d.max()) if d.size else 0.0,
        "mean_abs": float(d.mean()) if d.size else 0.0,
        "ref_absmax": ref_absmax,
        "cosine_mean": float(flat.mean()) if flat.size else 1.0,
        "cosine_min": float(flat.min()) if flat.size else 1.0,
        "token_cosine_mean": None,
        "token_cosine_min": None,
        "pooled_cosine_mean": None,
        "pooled_cosine_min": None,
        "top1": None,
    }
    if tc is not None and pc is not None:
        m.update(
            token_cosine_mean=float(tc.mean()),
            token_cosine_min=float(tc.min()),
            pooled_cosine_mean=float(pc.mean()),
            pooled_cosine_min=float(pc.min()),
        )
    if hits is not None:
        m["top1"] = float(np.mean(hits))
    return m


def end_to_end_metrics(
    ref: Mapping[str, np.ndarray],
    got: Mapping[str, np.ndarray],
    kinds: Mapping[str, OutputInfo] | None = None,
    *,
    axis: int | None = 0,
    keep: np.ndarray | None = None,
) -> dict[str, Any]:
    """Metrics per output (``"outputs"``) and overall: the worst over outputs
    (largest errors, smallest cosines and top-1); a metric no output has is None.

    Without ``kinds`` every output is a ``tensor``, except that outputs of rank
    >= 2 with a last axis >= 2 get top-1 (the behaviour before output kinds).
    """
    per: dict[str, dict[str, Any]] = {}
    for name, r in ref.items():
        a = np.asarray(r, dtype=np.float64)
        b = np.asarray(got[name], dtype=np.float64)
        if kinds is not None:
            info = kinds[name]
        else:
            info = OutputInfo(name, "classifier" if a.ndim >= 2 and a.shape[-1] >= 2 else "tensor")
        per[name] = _one(a, b, info, axis, keep)
    out: dict[str, Any] = {}
    for k in KEYS:
        vals = [v[k] for v in per.values() if v[k] is not None]
        if not vals:
            out[k] = None
        elif k in ("max_abs", "mean_abs"):
            out[k] = max(vals)
        else:
            out[k] = min(vals)
    out["outputs"] = per
    return out
