"""Validate approximations on an ONNX model against onnxruntime.

Pipeline (:func:`validate`): load and check the model, find its sites,
prepare sample inputs, calibrate (one float onnxruntime run recording every
site's input and output), choose each site's input format, resolve one spec
per selected site from the config, emulate, and measure:

* **per-site error** -- ``spec`` applied to the site's input *as the
  unmodified float model computes it*, compared with that model's float
  output at the site (onnxruntime, float32). Each site is judged alone, on
  exact float inputs, so errors do not compound here;
* **end-to-end error** -- the graph outputs with *all* selected sites
  approximated (errors compound through the model) against the float model's
  outputs: max and mean |difference|, cosine similarity (flattened per
  sample, mean and min over samples) and top-1 agreement along the last axis
  (classifiers: the fraction of samples whose argmax is unchanged).

Formats are calibrated: each approximated site's ``in_fmt`` from its input
range and its ``out_fmt`` from its float outputs (GELU, LayerNorm), LayerNorm
gamma/beta formats from the weights (:func:`hwapprox.export.tuning.calibrated_fields`);
fields a config sets explicitly win. Saturated inputs and outputs are counted
per site and every saturating site gets a warning. Softmax sites with an
attention mask are calibrated and emulated with the mask bits (masked
elements exactly zero). Sites kept float are not calibrated.

With ``budget`` each selected site is tuned (:mod:`hwapprox.export.tuning`).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np
from onnx import ModelProto

from hwapprox._cache import BoundedMemo
from hwapprox.approx import _kernels
from hwapprox.approx.base import (
    ApproxSpec,
    ElementwiseSpec,
    Operator,
    SpecError,
    error_sums_result,
)
from hwapprox.approx.config import ApproxConfig, load_config
from hwapprox.approx.costmodel import fmax, rank_score
from hwapprox.approx.registry import get_method
from hwapprox.export import metrics as _metrics
from hwapprox.export.calibrate import (
    SiteStats,
    Trace,
    batch_files,
    calibrate,
    iter_batches,
    parse_range,
    prepare_inputs,
    unified_max_phi,
)
from hwapprox.export.emulate import (
    Emulator,
    ModelSessions,
    PrefixChain,
    apply_spec_pair,
    background,
    emulation_threads,
    model_rows,
    rows_view,
    site_row_params,
    site_threads,
    softmax_f32_rows,
    thread_map,
)
from hwapprox.export.errors import ExportError
from hwapprox.export.evaluators import ScreenSample, SearchContext, make_evaluator
from hwapprox.export.graph import GraphIndex, load_model
from hwapprox.export.patterns import Site, config_for_kinds, find_all
from hwapprox.export.tuning import (
    SearchSpace,
    calibrated_fields,
    candidate_specs,
    fronts_of,
    screen_groups,
    screen_sample,
    share,
    walk_front,
)

__all__ = [
    "DEFAULT_METHODS",
    "E2EBudget",
    "ImportedModel",
    "ValidationResult",
    "end_to_end_metrics",
    "import_model",
    "select_sites",
    "unsupported_message",
    "validate",
]

#: Method per operator when neither a config nor ``--method`` names one: the
#: most accurate of each operator at 16 bits (benchmarks/results): the online
#: softmax (<= 0.53 LSB at W = 8..16, exact max subtraction, Newton reciprocal),
#: Edge-MoE's GELU (<= 0.67 LSB; the direct LUT is exact but limited to 12-bit
#: inputs), and the rsqrt-table LayerNorm (<= 0.53 LSB; I-BERT's floors lose bits).
DEFAULT_METHODS: dict[Operator, str] = {
    Operator.SOFTMAX: "online",
    Operator.GELU: "edgemoe",
    Operator.LAYERNORM: "rsqrt_lut",
    Operator.SIGMOID_ATTENTION: "pwl",
    Operator.RELU_ATTENTION: "wortsman",
}


@dataclass
class ImportedModel:
    """A loaded, checked, shape-inferred model and its nonlinear sites.

    ``unsupported``: sites whose function was recognised but has no operator in
    this build (sigmoid and ReLU attention): they run float and are reported."""

    model: ModelProto
    sites: list[Site]
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unsupported: list[Site] = field(default_factory=list)
    #: the index and sessions built from ``model`` (kept for repeated calls)
    sessions: ModelSessions = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.sessions = ModelSessions(self.model)

    def site(self, name: str) -> Site:
        for s in self.sites:
            if s.name == name:
                return s
        raise ExportError(
            f"no site named {name!r}; sites: {', '.join(s.name for s in self.sites) or '(none)'}"
        )


def import_model(source: str | Path | ModelProto) -> ImportedModel:
    """Load ``source`` (path or proto) and find every nonlinear site."""
    notes: list[str] = []
    model = load_model(source, notes=notes)
    scan = find_all(model)
    return ImportedModel(model, scan.sites, scan.skipped, notes, scan.unsupported)


def unsupported_message(site: Site) -> str:
    """The warning for a recognised site that cannot be emulated in this build."""
    p = site.params
    if site.kind == "sigmoid_attention":
        what = f"sigmoid attention σ(x + b), b = {p['bias']:.6g} (= -log n, n = {p['n']:.6g})"
    elif site.kind == "relu_attention":
        n = f"{p['n']:.6g}" if p.get("n") is not None else f"run-time '{p['n_tensor']}'"
        what = f"ReLU attention relu(x) / n ({p.get('n_form', site.pattern)}), n = {n}"
    elif site.kind == "silu":
        what = "SiLU x·sigmoid(x) (a gated FFN's activation)"
    elif site.kind == "quick_gelu":
        what = f"quick_gelu x·sigmoid({p['alpha']:.6g}·x) (CLIP's activation, not GELU)"
    else:
        what = site.kind
    return (
        f"site {site.name}: {what} found but not emulated: this build has no {site.kind} "
        f"operator; it runs float (nodes {', '.join(site.nodes)})"
    )


def select_sites(sites: Sequence[Site], selectors: Iterable[str] | None) -> list[Site]:
    """Sites matching any selector: ``all``, an operator name, or a site name."""
    sel = [s.strip() for item in (selectors or ["all"]) for s in item.split(",") if s.strip()]
    if not sel or "all" in sel:
        return list(sites)
    names = {s.name for s in sites}
    ops = {o.value for o in Operator}
    bad = [s for s in sel if s not in names and s not in ops]
    if bad:
        raise ExportError(
            f"unknown site selector(s) {bad}; use 'all', an operator ({', '.join(sorted(ops))}) "
            f"or a site name: {', '.join(s.name for s in sites) or '(none)'}"
        )
    return [s for s in sites if s.name in sel or s.operator.value in sel]


@dataclass(frozen=True)
class E2EBudget:
    """End-to-end limits (each optional): max/mean |error|, min cosine (per sample,
    flattened), min per-token and mean-pooled cosine (embeddings, unmasked tokens
    only), min top-1 agreement (classifier / per-token logits)."""

    max_abs: float | None = None
    mean_abs: float | None = None
    cosine: float | None = None
    top1: float | None = None
    pooled_cosine: float | None = None
    token_cosine: float | None = None

    @classmethod
    def parse(cls, text: str) -> E2EBudget:
        """``"max_abs=0.05,top1=1"`` -> budget; errors list the allowed keys."""
        keys = [f.name for f in dataclasses.fields(cls)]
        vals: dict[str, float] = {}
        for part in text.split(","):
            k, sep, v = part.partition("=")
            k = k.strip()
            if not sep or k not in keys:
                raise ExportError(
                    f"budget item {part.strip()!r} is not KEY=VALUE with KEY one of {keys}"
                )
            try:
                vals[k] = float(v)
            except ValueError:
                raise ExportError(f"budget {k}={v.strip()!r} is not a number") from None
            lo, hi, what = cls.RANGES[k]
            if not (math.isfinite(vals[k]) and lo <= vals[k] <= hi):
                raise ExportError(
                    f"budget {k}={v.strip()} is out of range: {k} is {what}, in [{lo:g}, {hi:g}]"
                )
        if not vals:
            raise ExportError(f"empty budget; give KEY=VALUE with KEY one of {keys}")
        return cls(**vals)

    #: budget key -> (lowest, highest) value a reachable limit can take, and what it is
    RANGES: ClassVar[dict[str, tuple[float, float, str]]] = {
        "max_abs": (0.0, math.inf, "an absolute error (>= 0)"),
        "mean_abs": (0.0, math.inf, "an absolute error (>= 0)"),
        "cosine": (-1.0, 1.0, "a cosine similarity"),
        "top1": (0.0, 1.0, "a fraction of samples"),
        "pooled_cosine": (-1.0, 1.0, "a cosine similarity"),
        "token_cosine": (-1.0, 1.0, "a cosine similarity"),
    }

    #: budget key -> metric key it limits, and whether the metric must be <= (else >=)
    LIMITS: ClassVar[dict[str, tuple[str, bool]]] = {
        "max_abs": ("max_abs", True),
        "mean_abs": ("mean_abs", True),
        "cosine": ("cosine_min", False),
        "top1": ("top1", False),
        "pooled_cosine": ("pooled_cosine_min", False),
        "token_cosine": ("token_cosine_min", False),
    }

    def meets(self, m: Mapping[str, Any]) -> bool:
        for key, (metric, upper) in self.LIMITS.items():
            limit = getattr(self, key)
            if limit is None:
                continue
            v = m.get(metric)
            if v is None or (v > limit if upper else v < limit):
                return False
        return True

    def check_against(self, m: Mapping[str, Any]) -> None:
        """Refuse limits on metrics the model's outputs do not have."""
        for key, (metric, _) in self.LIMITS.items():
            if getattr(self, key) is not None and m.get(metric) is None:
                kinds = {k: v["kind"] for k, v in m["outputs"].items()}
                need = {
                    "top1": "a classifier or per-token logits output",
                    "pooled_cosine": "an embedding output with a token axis",
                    "token_cosine": "an embedding output with a token axis",
                }.get(key, "an output")
                raise ExportError(
                    f"budget {key}={getattr(self, key):g} needs {need}; this model's outputs "
                    f"are {kinds}"
                )

    def describe(self) -> str:
        return ", ".join(f"{k}={v:g}" for k, v in dataclasses.asdict(self).items() if v is not None)


def end_to_end_metrics(
    ref: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray], **kw: Any
) -> dict[str, Any]:
    """Metrics per output and overall (:func:`hwapprox.export.metrics.end_to_end_metrics`)."""
    return _metrics.end_to_end_metrics(ref, got, **kw)


def site_metrics(
    site: Site,
    spec: ApproxSpec,
    x: np.ndarray,
    y_float: np.ndarray,
    mask: np.ndarray | None = None,
    n_value: float | None = None,
) -> dict:
    """Per-site error of ``spec`` on the float input against the float output
    (``n_value``: a ReLU attention site's run-time n, :func:`apply_spec`).

    ``rel_rms`` = rms(error) / rms(float output); softmax sites also get
    ``row_sum_err`` = max over rows of |Σ approx - Σ float| (the probability
    mass a row gains or loses: a bias no absolute per-element error shows).
    With a ``mask`` only unmasked elements and rows with one count; the float
    model's output at masked elements is ~0 (not exactly) and the approximation's
    exactly 0.

    The error splits into its two causes (each a max over the same elements, in
    output LSBs): ``quant_max_lsb`` -- quantising the site's input: the float
    function the spec approximates, of the quantised input, against the float
    output; ``approx_max_lsb`` -- the approximation itself: the spec's model against
    that float function of the same quantised input (:func:`apply_spec` with
    ``ideal``). ``max_lsb`` is at most their sum.
    """
    p = metrics_pass(site, spec, x, y_float, mask, n_value)
    res = None if p is None else p.kernel(*p.args)
    return _metrics_after(p, res, site, spec, x, y_float, mask, n_value)


def _metrics_after(
    p: MetricsPass | None,
    res: Any,
    site: Site,
    spec: ApproxSpec,
    x: np.ndarray,
    y_float: np.ndarray,
    mask: np.ndarray | None,
    n_value: float | None,
) -> dict:
    """:func:`site_metrics` once its one-pass route ``p`` has run (its kernel's result
    ``res``; run anywhere): that pass's figures, else the other routes'."""
    got = None if p is None else p.finish(res)
    return got if got is not None else _site_metrics_rest(site, spec, x, y_float, mask, n_value)


class MetricsPass(NamedTuple):
    """A site's error figures in one compiled pass, prepared and not run:
    ``finish(kernel(*args))`` gives :func:`site_metrics`' figures, or None where the
    pass gave up (a NaN/inf input, a reciprocal that would raise): then
    ``_site_metrics_rest`` takes the other routes. The kernel releases the GIL, so
    another thread may run it."""

    kernel: Callable[..., Any]
    args: tuple[Any, ...]
    finish: Callable[[Any], dict[str, Any] | None]


def _dtype_of_figures(spec: ApproxSpec) -> type:
    # float32 holds every code of an output format up to 24 bits exactly (value =
    # code·2^-f): the same figures as float64, with half the memory traffic
    exact32 = getattr(getattr(spec, "out_fmt", None), "width", 64) <= 24
    return np.float32 if exact32 else np.float64


def metrics_pass(
    site: Site,
    spec: ApproxSpec,
    x: np.ndarray,
    y_float: np.ndarray,
    mask: np.ndarray | None = None,
    n_value: float | None = None,
) -> MetricsPass | None:
    """:func:`site_metrics`' one-pass route where it has one (an elementwise spec's
    :meth:`~hwapprox.approx.base.ElementwiseSpec.error_sums`, a softmax or LayerNorm
    spec's float32-row report), prepared (:class:`MetricsPass`); else None."""
    dt = _dtype_of_figures(spec)
    if isinstance(spec, ElementwiseSpec) and mask is None and n_value is None:
        ew = spec.error_sums_pass(x, y_float, dt)  # the figures without the arrays
        if ew is None:
            return None

        def finish_ew(res: Any) -> dict[str, Any] | None:
            sums = error_sums_result(res)
            return None if sums is None else _error_figures(spec, *sums)

        return MetricsPass(ew[0], ew[1], finish_ew)
    if _metric_kernels_apply(Operator.SOFTMAX, site, spec, x, y_float):
        return _softmax_sums_f32(site, spec, x, y_float, mask, n_value, dt)
    if mask is None and _metric_kernels_apply(Operator.LAYERNORM, site, spec, x, y_float):
        return _layernorm_pass(site, spec, x, y_float, dt)
    return None


def _site_metrics_rest(
    site: Site,
    spec: ApproxSpec,
    x: np.ndarray,
    y_float: np.ndarray,
    mask: np.ndarray | None,
    n_value: float | None,
) -> dict:
    """:func:`site_metrics` without its one-pass route: the softmax and LayerNorm
    sums from the codes, else the arrays."""
    dt = _dtype_of_figures(spec)
    fused = _softmax_sums(site, spec, x, y_float, mask, n_value, dt)
    if fused is not None:
        n, mx, s1, s2, sr, dq, da, rse = fused
        return {**_error_figures(spec, n, mx, s1, s2, sr, dq, da), "row_sum_err": rse}
    ln = _layernorm_sums(site, spec, x, y_float, dt) if mask is None else None
    if ln is not None:
        return _error_figures(spec, *ln)
    y, yi = apply_spec_pair(site, spec, x, mask, n_value, dtype=dt)  # yi float64
    keep = None
    if mask is not None:
        m = np.broadcast_to(mask, y.shape)
        mrows, ax = rows_view(site, m)
        live = ~mrows.all(axis=ax, keepdims=True)
        keep = ~m & np.broadcast_to(live, mrows.shape).reshape(y.shape)
    if _kernels.available() and y.shape == yi.shape == np.shape(y_float):
        # the three comparisons below in one compiled pass (the same figures)
        k = np.ascontiguousarray(keep).reshape(-1) if keep is not None else np.zeros(1, bool)
        flat = [np.ascontiguousarray(a).reshape(-1) for a in (y, y_float, yi)]
        n, mx, s1, s2, sr, dq, da = (
            float(v) for v in _kernels.err_stats3(*flat, k, keep is not None)
        )
        n = int(n)
    else:
        n, mx, s1, s2, sr = _err_sums(y, np.asarray(y_float), keep)
        dq = _err_sums(yi, np.asarray(y_float), keep)[1]  # input quantisation
        da = _err_sums(y, yi, keep)[1]  # the approximation itself
    out = _error_figures(spec, n, mx, s1, s2, sr, dq, da)
    if site.operator is Operator.SOFTMAX:
        yf = np.asarray(y_float)
        rows_y, ax = rows_view(site, y)
        rows_f, _ = rows_view(site, yf)
        if mask is not None:
            mr, _ = rows_view(site, np.broadcast_to(mask, yf.shape))
            rows_f = np.where(mr, rows_f.dtype.type(0), rows_f)
            live = ~mr.all(axis=ax)
        else:
            live = np.ones(1, dtype=bool)
        err = np.abs(rows_y.sum(axis=ax, dtype=np.float64) - rows_f.sum(axis=ax, dtype=np.float64))
        err = err[np.broadcast_to(live, err.shape)]
        out["row_sum_err"] = float(err.max()) if err.size else 0.0
    return out


#: most entries of the exp table the fused softmax metrics use (8 MB of float64)
_EXP_TABLE_MAX = 1 << 20
#: exp(-x) is 0 in float64 from here on (the smallest subnormal is exp(-745.13...))
_EXP_UNDERFLOW = 746.0


@functools.lru_cache(maxsize=8)
def _exp_table(width: int, frac_bits: int) -> np.ndarray | None:
    """``exp(-k·2^-frac_bits)`` for ``k < 2^width``, by numpy's exp: the values
    :func:`~hwapprox.approx.softmax.stable_softmax` computes for a row of codes whose
    largest is ``k`` above the element (``(c - m)·lsb`` is exact in float64). Cut at
    its first entry past the underflow (0, as every later one; a reader clamps ``k``
    to the last entry); None when even that is over :data:`_EXP_TABLE_MAX` entries."""
    n = 1 << width
    if n > _EXP_TABLE_MAX:
        n = math.ceil(_EXP_UNDERFLOW * 2.0**frac_bits) + 1
        if n > _EXP_TABLE_MAX:
            return None
    t = np.exp(-np.arange(n, dtype=np.float64) * 2.0**-frac_bits)
    if n < 1 << width and t[-1] != 0.0:  # pragma: no cover - IEEE exp underflows there
        return None
    t.flags.writeable = False
    return t


def _softmax_sums(
    site: Site,
    spec: ApproxSpec,
    x: np.ndarray,
    y_float: np.ndarray,
    mask: np.ndarray | None,
    n_value: float | None,
    dt: type,
) -> tuple[int, float, float, float, float, float, float, float] | None:
    """:func:`site_metrics`' sums of a softmax site in one compiled pass over rows along
    the last axis (:func:`~hwapprox.approx._kernels.softmax_err_stats`: the float64
    softmax of the quantised rows on the fly, from an exp table), or None where that
    does not apply (other operators or references, rows along another axis, inputs
    whose exp table is too large (:func:`_exp_table`), no compiled kernels). The count, the
    maximum and the sums of ``|y - y_float|`` are those of the array path exactly;
    the two error-split maxima and the row-sum error equal it up to float64 rounding
    (the softmax denominators and row sums are summed in row order, not pairwise).
    (The float32-row pass, :func:`_softmax_sums_f32`, is tried before this.)"""
    if not _metric_kernels_apply(Operator.SOFTMAX, site, spec, x, y_float):
        return None
    spec, raw, y, axis, mk = model_rows(site, spec, x, mask, n_value, dt)
    if axis not in (-1, raw.ndim - 1):
        return None
    n = raw.shape[-1]
    yf = rows_view(site, np.asarray(y_float))[0]
    m = np.zeros((1, 1), bool)
    if mk is not None:  # (model_rows broadcast it to x)
        m = np.ascontiguousarray(rows_view(site, mk)[0]).reshape(-1, n)
    table = _exp_table(spec.in_fmt.width, spec.in_fmt.frac_bits)
    if table is None:
        return None
    res = _kernels.softmax_err_stats(
        np.ascontiguousarray(raw).reshape(-1, n), table,
        np.ascontiguousarray(y).reshape(-1, n), np.ascontiguousarray(yf).reshape(-1, n),
        m, mk is not None,
    )  # fmt: skip
    cnt, *rest = res
    return (int(cnt), *(float(v) for v in rest))  # type: ignore[return-value]


def _metric_kernels_apply(
    op: Operator, site: Site, spec: ApproxSpec, x: np.ndarray, y_float: np.ndarray
) -> bool:
    """The softmax / LayerNorm metric kernels apply: a site of operator ``op``, its
    standard reference, one shape, compiled kernels."""
    return (
        site.operator is op
        and _kernels.available()
        and getattr(spec, "reference_is_standard", lambda: False)()
        and np.shape(y_float) == np.shape(x)
    )


def _softmax_sums_f32(
    site: Site,
    spec: ApproxSpec,
    x: np.ndarray,
    y_float: np.ndarray,
    mask: np.ndarray | None,
    n_value: float | None,
    dt: type,
) -> MetricsPass | None:
    """:func:`_softmax_sums`' figures from the site's float32 rows in one compiled pass,
    the model included (:func:`~hwapprox.approx._kernels.online_report_f32`: per block of
    rows the model's reals as the emulation's float32-row pass gives them, then the
    comparison of :func:`~hwapprox.approx._kernels.softmax_err_stats` on their codes):
    the same figures, without the codes and reals arrays. None where the spec has no
    such pass or it does not apply (:func:`~hwapprox.export.emulate.softmax_f32_rows`,
    ``f32_plan``); the pass finishes with None where an input is NaN/inf or the
    reciprocal would raise (the codes path then raises)."""
    if np.ndim(x) == 0 or getattr(spec, "f32_plan", None) is None:
        return None
    pre = softmax_f32_rows(site, spec, x, mask)
    if pre is None:
        return None
    sp, rows, mk = pre
    args = sp.f32_plan(rows, mk, np.dtype(dt))
    table = _exp_table(sp.in_fmt.width, sp.in_fmt.frac_bits)
    if args is None or table is None:
        return None
    n = rows.shape[1]
    yf = np.ascontiguousarray(rows_view(site, np.asarray(y_float))[0]).reshape(-1, n)
    y_blk = np.empty((_kernels.online_block_rows(rows.shape[0], n), n), dtype=dt)
    kargs = (
        rows, yf, np.zeros((1, 1), bool) if mk is None else mk, mk is not None, *args, y_blk,
        table,
    )  # fmt: skip

    def finish(res: Any) -> dict[str, Any] | None:
        status, cnt, mx, s1, s2, sr, dq, da, rse = res
        if status != 0:
            return None
        figs = _error_figures(spec, int(cnt), *(float(v) for v in (mx, s1, s2, sr, dq, da)))
        return {**figs, "row_sum_err": float(rse)}

    return MetricsPass(_kernels.online_report_f32, kargs, finish)


def _layernorm_pass(
    site: Site, spec: ApproxSpec, x: np.ndarray, y_float: np.ndarray, dt: type
) -> MetricsPass | None:
    """:func:`_layernorm_sums`' figures with the model in the same pass, from the
    float32 rows (:func:`~hwapprox.approx._kernels.rsqrt_report_f32`: the same figures),
    where the spec has such a pass (``f32_plan``) and the rows lie along the last axis of
    a 2-D view; else None. The pass finishes with None where it gives up."""
    ln: Any = spec  # a LayerNorm spec (reference_is_standard)
    plan = getattr(ln, "f32_plan", None)
    if plan is None:
        return None
    xv, axis = rows_view(site, np.asarray(x))
    if not (xv.ndim == 2 and axis in (-1, 1)):
        return None
    n = xv.shape[-1]
    args = plan(xv, *site_row_params(site, spec, n), np.dtype(dt))
    if args is None:
        return None
    ref = (*_ln_reference_args(site, ln, n), np.empty(n, dtype=np.float64))
    yf2 = np.ascontiguousarray(rows_view(site, np.asarray(y_float))[0]).reshape(-1, n)
    kargs = (xv, yf2, *args, np.empty(n, dtype=dt), *ref)

    def finish(res: Any) -> dict[str, Any] | None:
        status, *figs = res
        if status != 0:
            return None
        return _error_figures(spec, int(figs[0]), *(float(v) for v in figs[1:]))

    return MetricsPass(_kernels.rsqrt_report_f32, kargs, finish)


def _layernorm_sums(
    site: Site, spec: ApproxSpec, x: np.ndarray, y_float: np.ndarray, dt: type
) -> tuple[int, float, float, float, float, float, float] | None:
    """:func:`site_metrics`' sums of a LayerNorm / RMSNorm site in one compiled pass
    (:func:`~hwapprox.approx._kernels.layernorm_err_stats`: the float64 reference of the
    quantised rows on the fly, with the site's float gamma and beta), or None where it
    does not apply (another reference, no compiled kernels). The count, the maximum
    and the sums of ``|y - y_float|`` are those of the array path exactly; the two
    error-split maxima equal it up to float64 rounding (row means summed in order).
    (The float32-row pass, :func:`_layernorm_pass`, is tried before this.)"""
    if not _metric_kernels_apply(Operator.LAYERNORM, site, spec, x, y_float):
        return None
    ln: Any = spec  # a LayerNorm spec (reference_is_standard)
    n = rows_view(site, np.asarray(x))[0].shape[-1]
    ref = (*_ln_reference_args(site, ln, n), np.empty(n, dtype=np.float64))
    yfv = rows_view(site, np.asarray(y_float))[0]
    spec, raw, y, axis, _ = model_rows(site, spec, x, None, None, dt)
    if axis not in (-1, raw.ndim - 1):
        return None
    res = _kernels.layernorm_err_stats(
        np.ascontiguousarray(raw).reshape(-1, n), *ref,
        np.ascontiguousarray(y).reshape(-1, n), np.ascontiguousarray(yfv).reshape(-1, n),
    )  # fmt: skip
    cnt, *rest = res
    return (int(cnt), *(float(v) for v in rest))  # type: ignore[return-value]


#: a LayerNorm site's reference arguments (_ln_reference_args) by the spec's and site's
#: ids (the entry holds both: the ids stay theirs), the row length and gamma/beta bytes
_LN_REFS: BoundedMemo[tuple[ApproxSpec, Site, tuple[Any, ...]]] = BoundedMemo(256)


def _ln_reference_args(site: Site, ln: Any, n: int) -> tuple[Any, ...]:
    """The reference arguments of the LayerNorm metric kernels for rows of ``n``
    (:func:`~hwapprox.approx._kernels._ln_row_acc`, before its row buffer): the input
    LSB, centring, the statistics' element count, eps, gamma and beta as read-only
    float64 rows (a dummy where absent) with their flags, and ``int_sums``: the sums of
    exact terms as integers where every partial sum stays below 2^53 LSBs (then the
    float sums are exact, so the same values). Memoised (:data:`_LN_REFS`)."""
    key = (
        id(ln), id(site), n,
        None if site.gamma is None else np.asarray(site.gamma).tobytes(),
        None if site.beta is None else np.asarray(site.beta).tobytes(),
    )  # fmt: skip
    hit = _LN_REFS.get(key, None)
    if hit is not None and hit[0] is ln and hit[1] is site:
        return hit[2]

    def vec(v: np.ndarray | None) -> np.ndarray:
        a = np.zeros(1)
        if v is not None:
            a = np.ascontiguousarray(np.broadcast_to(np.ravel(v), (n,)), dtype=np.float64)
        a.flags.writeable = False
        return a

    k = int(min(ln.stat_count(n) if hasattr(ln, "stat_count") else n, n))
    top = 1 << (ln.in_fmt.width - 1)  # the largest |code|
    int_sums = abs(ln.in_fmt.frac_bits) <= 511 and (
        n * top < 1 << 53 if ln.center else top * top < 1 << 53 and k * top * top < 1 << 53
    )
    args = (
        ln.in_fmt.float_range()[2], bool(ln.center), k, float(ln.eps), vec(site.gamma),
        vec(site.beta), site.gamma is not None, site.beta is not None, int_sums,
    )  # fmt: skip
    _LN_REFS.put(key, (ln, site, args))
    return args


def _error_figures(
    spec: ApproxSpec, n: int, mx: float, s1: float, s2: float, sr: float, dq: float, da: float
) -> dict[str, float]:
    """:func:`site_metrics`' figures from its sums (count, max, Σ|d|, Σd², Σ y_float²,
    max quantisation and approximation differences)."""
    n = max(n, 1)  # nothing kept: every error figure 0
    lsb = spec.out_fmt.float_range()[2]
    return {
        "max_abs": mx,
        "mean_abs": s1 / n,
        "rms": float(np.sqrt(s2 / n)),
        "rel_rms": float(np.sqrt(s2 / sr)) if sr > 0 else 0.0,
        "out_lsb": lsb,
        "max_lsb": mx / lsb,
        "quant_max_lsb": dq / lsb,
        "approx_max_lsb": da / lsb,
    }


def _err_sums(
    y: np.ndarray, yf: np.ndarray, keep: np.ndarray | None
) -> tuple[int, float, float, float, float]:
    """Over the elements where ``keep`` (all without it): their number, ``max|y - yf|``,
    ``Σ|y - yf|``, ``Σ(y - yf)²`` and ``Σ yf²``, in float64 (one compiled pass where
    numba is present, :func:`hwapprox.approx._kernels.err_stats`)."""
    if _kernels.available():
        k = np.ascontiguousarray(keep).reshape(-1) if keep is not None else np.zeros(1, bool)
        n, mx, s1, s2, sr = _kernels.err_stats(
            np.ascontiguousarray(y).reshape(-1), np.ascontiguousarray(yf).reshape(-1), k,
            keep is not None,
        )  # fmt: skip
        return int(n), float(mx), float(s1), float(s2), float(sr)
    r = np.asarray(yf, dtype=np.float64)
    d = np.abs(np.asarray(y, dtype=np.float64) - r)
    if keep is not None:
        d, r = d[keep], r[keep]
    if d.size == 0:
        return 0, 0.0, 0.0, 0.0, 0.0
    return int(d.size), float(d.max()), float(d.sum()), float((d**2).sum()), float((r**2).sum())


def saturation(
    spec: ApproxSpec,
    x: np.ndarray,
    y_float: np.ndarray,
    mask: np.ndarray | None = None,
    stats: tuple[SiteStats, SiteStats] | None = None,
) -> dict[str, int]:
    """Unmasked inputs (outputs of the float model) more than one LSB outside
    ``spec.in_fmt`` (``spec.out_fmt``): the values the hardware saturates.

    ``stats``: the calibration statistics of ``x`` and ``y_float`` (the same unmasked
    elements, possibly of more batches besides): where their exact extremes lie within
    the bounds and no value is non-finite, no value of this batch lies outside, and the
    count is 0 without a pass over the data."""

    def count(v: np.ndarray, fmt: Any, st: SiteStats | None) -> tuple[int, int]:
        lo, hi, lsb = fmt.float_range()
        if st is not None and not st.nonfinite and lo - lsb <= st.min and st.max <= hi + lsb:
            # (broadcasting repeats each mask element size/mask.size times)
            m = 0 if mask is None else np.count_nonzero(mask) * (np.size(v) // np.size(mask))
            return 0, int(np.size(v) - m)
        if _kernels.available():
            a = np.ascontiguousarray(v).reshape(-1)
            m = np.zeros(1, bool) if mask is None else np.ascontiguousarray(
                np.broadcast_to(mask, np.shape(v))).reshape(-1)  # fmt: skip
            n, t = _kernels.count_outside(a, m, mask is not None, lo - lsb, hi + lsb)
            return int(n), int(t)
        a = np.asarray(v, dtype=np.float64)
        if mask is not None:
            a = a[~np.broadcast_to(mask, a.shape)]
        return int(np.count_nonzero((a < lo - lsb) | (a > hi + lsb))), int(a.size)

    st_in, st_out = (None, None) if stats is None else stats
    n_in, t_in = count(x, spec.in_fmt, st_in)
    n_out, t_out = count(y_float, spec.out_fmt, st_out)
    return {"in": n_in, "in_total": t_in, "out": n_out, "out_total": t_out}


@dataclass
class ValidationResult:
    """Everything :func:`validate` measured (see :meth:`as_dict` for the JSON)."""

    imported: ImportedModel
    selected: list[Site]
    trace: Trace
    in_fmts: dict[str, str]
    specs: dict[str, ApproxSpec | None]
    site_errors: dict[str, dict[str, Any]]
    end_to_end: dict[str, Any]
    emulated: dict[str, np.ndarray]
    timing: dict[str, float]
    n_samples: int
    budget: E2EBudget | None = None
    tuning: list[dict[str, Any]] = field(default_factory=list)
    model_label: str = ""
    saturation: dict[str, dict[str, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    batch_axis: int | None = 0
    token_mask_input: str | None = None
    range_stat: str | float = "max"
    #: ``attention="fused"``: per softmax site fused or why not, the fused specs and
    #: the end-to-end metrics with attention fused (:mod:`hwapprox.export.fused`)
    fused: dict[str, Any] | None = None

    @property
    def stats(self) -> dict[str, SiteStats]:
        return self.trace.stats

    def config(self) -> ApproxConfig:
        """The resolved, fully explicit per-site config (float for unselected sites)."""
        specs: dict[str, ApproxSpec | None] = {s.name: None for s in self.imported.sites}
        specs.update(self.specs)
        return ApproxConfig.from_specs(specs)

    def as_dict(self) -> dict[str, Any]:
        sel = {s.name for s in self.selected}
        sites = []
        for s in self.imported.sites:
            spec = self.specs.get(s.name)
            st = self.stats.get(s.name)
            ost = self.trace.out_stats.get(s.name)
            sites.append(
                {
                    **s.as_dict(),
                    "selected": s.name in sel,
                    "spec": None if spec is None else spec.to_config(),
                    "cost_score": None if spec is None else round(rank_score(spec), 2),
                    "calibrated_in_fmt": self.in_fmts.get(s.name),
                    "calibrated_out_fmt": None if spec is None else str(spec.out_fmt),
                    "input_stats": None if st is None else st.as_dict(),
                    "output_stats": None if ost is None else ost.as_dict(),
                    "saturation": self.saturation.get(s.name),
                    "mask_roles": self.trace.mask_roles.get(s.name),
                    "error": self.site_errors.get(s.name),
                }
            )
        return {
            "model": self.model_label,
            "samples": self.n_samples,
            "batch_axis": self.batch_axis,
            "token_mask_input": self.token_mask_input,
            "range": self.range_stat,
            "warnings": self.warnings,
            "notes": self.notes,
            "per_site_error": (
                "spec applied to the site's float input from the unmodified model, compared "
                "with the float model's output at the site (onnxruntime float32); masked "
                "softmax elements and fully masked rows left out"
            ),
            "end_to_end_error": (
                "graph outputs with all selected sites approximated vs the unmodified model "
                "on onnxruntime; padded tokens left out"
            ),
            "sites": sites,
            "skipped": self.imported.skipped,
            "found_not_emulated": [
                {**s.as_dict(), "message": unsupported_message(s)}
                for s in self.imported.unsupported
            ],
            "end_to_end": self.end_to_end,
            "timing_s": self.timing,
            "budget": None if self.budget is None else dataclasses.asdict(self.budget),
            "tuning": self.tuning,
            "fused_attention": self.fused,
        }


def _method_available(op: Operator, method: str) -> bool:
    try:
        get_method(op, method)
    except (SpecError, ImportError, AttributeError):
        return False
    return True


@functools.cache
def _default_config() -> ApproxConfig:
    """:func:`build_config` without a config or methods (built once: the defaults)."""
    cfg = load_config(None)
    for op, method in DEFAULT_METHODS.items():
        cfg = cfg.with_default(op, {"method": method})
    return cfg


def build_config(
    config: str | Path | Mapping[str, Any] | ApproxConfig | None,
    methods: Mapping[str, str] | None = None,
    *,
    defaults: bool = True,
) -> ApproxConfig:
    """Config file/dict, then ``--method op=method`` overrides, then defaults.

    An operator without a default in the config gets :data:`DEFAULT_METHODS`
    only when no config was given at all (and ``defaults`` is true).
    """
    if config is None and not methods and defaults:
        c = _default_config()
        return ApproxConfig(dict(c.defaults), dict(c.sites))  # (a copy of its mappings)
    cfg = load_config(config)
    for op, method in (methods or {}).items():
        operator = Operator(op) if op in {o.value for o in Operator} else None
        if operator is None:
            raise ExportError(
                f"--method {op}={method}: unknown operator {op!r}; "
                f"expected one of {[o.value for o in Operator]}"
            )
        cfg = cfg.with_default(operator, "float" if method == "float" else {"method": method})
    if config is None and defaults:
        for op, method in DEFAULT_METHODS.items():
            if op not in cfg.defaults:
                cfg = cfg.with_default(op, {"method": method})
    return cfg


def _resolve(
    cfg: ApproxConfig,
    sites: Sequence[Site],
    in_fmts: Mapping[str, str],
    known: Iterable[str] | None = None,
    calibrated: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, ApproxSpec | None]:
    cal = calibrated or {}
    try:
        return cfg.resolve(
            {s.name: s.operator for s in sites},
            known=known,
            in_fmts=in_fmts,
            site_fields={s.name: {**s.fields_for_spec(), **cal.get(s.name, {})} for s in sites},
        )
    except ModuleNotFoundError as exc:
        raise ExportError(
            f"a configured method is not available yet (module {exc.name} is missing); "
            f"pick another with --method or a config file"
        ) from None


def _config_field(cfg: ApproxConfig, site: Site, name: str) -> Any:
    """The value the config gives ``name`` for ``site`` (its entry, else the operator's
    default), or None."""
    for e in (cfg.sites.get(site.name), cfg.defaults.get(site.operator)):
        if isinstance(e, dict) and name in e:
            return e[name]
    return None


def unified_phis(cfg: ApproxConfig, sites: Sequence[Site], trace: Trace) -> dict[str, dict]:
    """``{site: {"unified_max": φ}}`` for the softmax sites whose config says
    ``unified_max: auto``: φ from the site's row extents (:func:`unified_max_phi`, with
    the configured ``unified_low``, default 4)."""
    out: dict[str, dict] = {}
    for s in sites:
        if _config_field(cfg, s, "unified_max") != "auto" or s.name not in trace.row_extents:
            continue
        low = _config_field(cfg, s, "unified_low")
        phi, _ = unified_max_phi(trace.row_extents[s.name], 4 if low is None else int(low))
        out[s.name] = {"unified_max": round(phi, 6)}
    return out


def variant_stats(
    site: Site, spec: ApproxSpec, x: np.ndarray, mask: np.ndarray | None = None
) -> dict[str, Any]:
    """The softmax variants' statistics on the site's float input (``model_stats`` of an
    online softmax with ``unified_max`` or ``skip_threshold``): ``fallback_rate``,
    ``skip_fraction``, ``skip_max_abs``, and φ itself; {} for other specs."""
    stats = getattr(spec, "model_stats", None)
    if stats is None or (spec.unified_max is None and spec.skip_threshold is None):  # type: ignore[attr-defined]
        return {}
    xa = np.asarray(x, dtype=np.float64)
    if mask is not None:
        mask = np.broadcast_to(mask, xa.shape)
        xa = np.where(mask, 0.0, xa)
        mask, _ = rows_view(site, mask)
    xv, axis = rows_view(site, xa)
    st = stats(spec.quantize_input(xv), axis=axis, mask=mask)
    out = {k: st[k] for k in ("fallback_rate", "skip_fraction", "skip_max_abs")}
    out["unified_max"] = spec.unified_max  # type: ignore[attr-defined]
    out["skip_threshold"] = spec.skip_threshold  # type: ignore[attr-defined]
    return out


def _keeps_float(cfg: ApproxConfig, site: Site) -> bool:
    """True when the config leaves ``site`` float (so it needs no calibration)."""
    entry = cfg.sites.get(site.name)
    if entry == "float":
        return True
    if isinstance(entry, dict):
        return False
    return cfg.defaults.get(site.operator, "float") == "float"


def _float_entry(cfg: ApproxConfig, site: Site) -> bool:
    """True when the config explicitly keeps ``site`` float (the tuner skips it)."""
    entry = cfg.sites.get(site.name)
    if entry is not None:
        return entry == "float"
    return cfg.defaults.get(site.operator) == "float"


def _explicit_fields(cfg: ApproxConfig, site: Site, method: str) -> set[str]:
    """Spec fields the config sets for ``site`` (calibration must not override them);
    ``in_fmt: auto`` is not a setting."""
    base = cfg.defaults.get(site.operator)
    entry = cfg.sites.get(site.name)
    base_method = base.get("method") if isinstance(base, dict) else None
    if isinstance(entry, dict) and entry.get("method", base_method) != base_method:
        keys = set(entry)  # another method: the entry replaces the defaults
    else:
        keys = set(base) if isinstance(base, dict) and base_method == method else set()
        keys |= set(entry) if isinstance(entry, dict) else set()
    return {k for k in keys if not (k == "in_fmt" and _is_auto(cfg, site))}


def _is_auto(cfg: ApproxConfig, site: Site) -> bool:
    vals = []
    for e in (cfg.defaults.get(site.operator), cfg.sites.get(site.name)):
        if isinstance(e, dict) and "in_fmt" in e:
            vals.append(e["in_fmt"])
    return not vals or vals[-1] == "auto"


#: the per-site reports run beside the emulation (False: before it, on the calling
#: thread; tests compare both)
REPORTS_BESIDE = True

#: calibrated specs (:func:`_calibrate_spec`) by what they are a function of: (spec,
#: site, result), keyed by the two objects' ids (the entry holds them: the ids stay
#: theirs), the LayerNorm parameters' bytes, the fields the config sets, the integer
#: bits calibrated_fields reads from the statistics, and the settings
_CALIBRATED: BoundedMemo[tuple[ApproxSpec, Site, ApproxSpec]] = BoundedMemo(1024)


def _calibrate_spec(
    spec: ApproxSpec,
    site: Site,
    trace: Trace,
    explicit: set[str],
    *,
    width: int,
    out_width: int | None,
    headroom: int,
    stat: str | float,
) -> ApproxSpec:
    """``spec`` with its formats calibrated (see :func:`calibrated_fields`) except
    those the config sets; the calibrated formats keep ``spec``'s own modes.

    Memoised (:data:`_CALIBRATED`): :func:`calibrated_fields` reads the statistics only
    through ``int_bits`` (input: ``headroom``, ``stat``; output: ``headroom``, max) and
    their non-finite count (statistics with non-finite values are not memoised: they
    raise), the site through its operator and its gamma/beta values (its name only in
    errors, which are not memoised)."""
    st, ost = trace.stats[site.name], trace.out_stats.get(site.name)
    key = None
    if not st.nonfinite:
        key = (
            id(spec), id(site), frozenset(explicit), width, out_width, headroom, stat,
            st.int_bits(headroom, stat), None if ost is None else ost.int_bits(headroom, "max"),
            None if site.gamma is None else np.asarray(site.gamma).tobytes(),
            None if site.beta is None else np.asarray(site.beta).tobytes(),
        )  # fmt: skip
        hit = _CALIBRATED.get(key, None)
        if hit is not None and hit[0] is spec and hit[1] is site:
            return hit[2]
    out = _calibrate_spec_now(
        spec, site, trace, explicit,
        width=width, out_width=out_width, headroom=headroom, stat=stat,
    )  # fmt: skip
    if key is not None:
        _CALIBRATED.put(key, (spec, site, out))
    return out


def _calibrate_spec_now(
    spec: ApproxSpec,
    site: Site,
    trace: Trace,
    explicit: set[str],
    *,
    width: int,
    out_width: int | None,
    headroom: int,
    stat: str | float,
) -> ApproxSpec:
    """:func:`_calibrate_spec` computed (not memoised)."""
    fmts = calibrated_fields(
        site,
        type(spec),
        trace.stats[site.name],
        trace.out_stats.get(site.name),
        width=width,
        out_width=out_width,
        headroom=headroom,
        stat=stat,
    )
    changes: dict[str, Any] = {}
    for k, f in fmts.items():
        if k in explicit:
            continue
        changes[k] = f
    if not changes:
        return spec
    try:
        return spec.replace(**changes)
    except SpecError as exc:
        raise ExportError(
            f"site {site.name}: the calibrated formats "
            f"{ {k: str(v) for k, v in changes.items()} } do not suit {spec.method}: {exc}; "
            f"set them in the config"
        ) from None


def validate(
    model: str | Path | ModelProto | ImportedModel,
    *,
    inputs: str | Path | Mapping[str, np.ndarray] | None = None,
    config: str | Path | Mapping[str, Any] | ApproxConfig | None = None,
    methods: Mapping[str, str] | None = None,
    sites: Iterable[str] | None = None,
    specs: Mapping[str, ApproxSpec | None] | None = None,
    width: int = 16,
    out_width: int | None = None,
    headroom: int = 1,
    range_stat: str | float = "max",
    budget: E2EBudget | str | None = None,
    space: SearchSpace | None = None,
    threads: int = 0,
    seed: int = 0,
    progress: bool = False,
    attention: str = "two_pass",
    jobs: int = 1,
    dask: str | None = None,
) -> ValidationResult:
    """Run the whole validation (see the module docstring).

    ``attention="fused"`` also runs the model with each approximated online-softmax
    site and its ``P·V`` MatMul as one fused attention row
    (:mod:`hwapprox.export.fused`); its end-to-end metrics go to
    :attr:`ValidationResult.fused`.

    ``specs`` (site name -> spec or None) bypasses the config for those sites
    (e.g. float-reference specs in tests); with a ``budget`` they stay fixed
    and only the other selected sites are tuned.

    ``jobs`` / ``dask``: where the budget search's end-to-end evaluations run (``jobs``
    local worker processes, or the Dask scheduler at address ``dask``); the result is
    the serial search's (:mod:`hwapprox.export.evaluators`). With ``dask`` and a
    directory of input batches, calibration's further batches also run on the
    cluster (:func:`~hwapprox.export.calibrate.calibrate`), with the serial
    statistics.
    """
    if attention not in ("two_pass", "fused"):
        raise ExportError(f"attention={attention!r}: use two_pass or fused")
    imported = model if isinstance(model, ImportedModel) else import_model(model)
    label = str(model) if isinstance(model, str | Path) else imported.model.graph.name
    selected = select_sites(imported.sites, sites)
    stat = parse_range(range_stat)
    files = batch_files(inputs)  # a directory / glob of .npz batches: streamed calibration
    feeds = prepare_inputs(imported.model, inputs if files is None else files[0], seed=seed)
    cfg = config_for_kinds(build_config(config, methods), imported.sites)
    user_cfg = config_for_kinds(build_config(config, methods, defaults=False), imported.sites)
    given = dict(specs or {})
    b = E2EBudget.parse(budget) if isinstance(budget, str) else budget
    # Only sites that will be approximated are calibrated.
    active = _active_sites(selected, given, user_cfg if b is not None else cfg, b is not None)
    all_names = [s.name for s in imported.sites]
    unknown = sorted(set(cfg.sites) - set(all_names))
    if unknown:
        raise ExportError(
            f"config names unknown site(s) {', '.join(unknown)}; sites of this model: "
            f"{', '.join(all_names) or '(none)'}"
        )
    more = iter_batches(imported.model, files[1:]) if files else ()
    trace = calibrate(
        imported.model,
        active,
        feeds,
        threads=threads,
        more=more,
        sessions=imported.sessions,
        dask=dask if files and len(files) > 1 else None,
    )
    axis = _metrics.batch_axis(imported.sites)
    tm = _metrics.token_mask(imported.sites, feeds, axis)
    keep = None if tm is None else tm[1]
    kinds = _metrics.output_kinds(imported.sessions.index, imported.sites, trace.outputs, axis)
    mkw = {"kinds": kinds, "axis": axis, "keep": keep}
    ref = trace.outputs
    if b is not None:
        b.check_against(end_to_end_metrics(ref, ref, **mkw))
    in_fmts: dict[str, str] = {}
    for s in active:
        if s.name in given:
            continue
        in_fmts[s.name] = str(trace.stats[s.name].choose_format(width, headroom, stat=stat))
    sizes = [np.size(trace.site_inputs[s.name]) for s in active]
    # a small model's site work runs on this thread (emulation_threads)
    work_threads = emulation_threads(threads, sizes)
    emu = imported.sessions.emulator(active, work_threads)
    tuning: list[dict[str, Any]] = []
    warnings: list[str] = []
    if b is None:
        chosen = _chosen_specs(
            cfg, active, given, trace, in_fmts, all_names,
            width=width, out_width=out_width, headroom=headroom, stat=stat,
        )  # fmt: skip
    else:
        # (the search may fork workers: a pending statistic whose job were still running
        # would never be filled in a child)
        trace.settle()
        chosen, tuning = _tune(
            emu,
            active,
            given,
            trace,
            user_cfg,
            b,
            space or SearchSpace(headroom=headroom),
            feeds,
            ref,
            mkw,
            progress,
            jobs,
            dask,
            threads,
        )
        for t in tuning:
            if t["chosen"] is None:
                warnings.append(
                    f"site {t['site']}: no candidate met the budget ({b.describe()}); kept float"
                )
    chosen_all: dict[str, ApproxSpec | None] = {s.name: chosen.get(s.name) for s in selected}
    # The per-site reports (each site's approximation of its float input) and the
    # emulation (the approximations chained) are independent: the reports run on a
    # thread of their own meanwhile, filling the cores the emulation's small sessions
    # leave idle (with worker threads: a new thread, the reports' sites on the workers;
    # a small model: the background worker, after its calibration statistics); their
    # warnings keep their place in the list.
    for s in active:  # a spec that computes another function: refused before any run
        why = None if chosen.get(s.name) is None else s.spec_mismatch(chosen[s.name])
        if why is not None:
            raise ExportError(why)
    site_warnings: list[str] = []
    args = (active, chosen, trace, site_warnings, work_threads)
    if not REPORTS_BESIDE:
        done = _site_reports(*args)
        reports: Callable[[], Any] = lambda: done  # noqa: E731
    elif site_threads(work_threads) > 1:
        reports = _in_background(_site_reports, *args)
    else:
        reports = _reports_beside(active, chosen, trace, site_warnings)
    # Timing: the float model's calibration run (one onnxruntime run of the whole model,
    # site tensors kept as extra outputs) vs one emulation run. No extra float runs.
    t_float = trace.seconds
    t0 = time.perf_counter()
    try:
        emulated = emu.run(
            feeds, {k: v for k, v in chosen.items() if k in {s.name for s in active}}
        )
        t_emu = time.perf_counter() - t0
        e2e = end_to_end_metrics(ref, emulated, **mkw)  # (while the reports may still run)
    finally:
        site_errors, sat = reports()
    warnings += site_warnings
    timing = {
        "float_onnxruntime": t_float,
        "emulation": t_emu,
        "emulation_sessions": emu.session_seconds,
        "approx_models": emu.approx_seconds,
        "sessions": float(emu.n_sessions),
        # 1: the per-site reports ran beside the emulation (its time includes sharing)
        "reports_beside": float(REPORTS_BESIDE),
    }
    warnings += [unsupported_message(s) for s in imported.unsupported]
    if not imported.sites:
        warnings.insert(
            0,
            "no softmax, GELU, LayerNorm/RMSNorm or attention-normaliser site was found in "
            "this model: nothing is approximated and the end-to-end table compares the float "
            "model with itself (hwapprox list shows the operators it looks for)",
        )
    notes, n = _run_notes(imported, files, feeds, axis, tm, kinds)
    trace.settle()  # (a small model's moments and percentiles: computed meanwhile)
    fused = None
    if attention == "fused":
        fused = _fused_run(
            imported.model, active, chosen, feeds, ref, mkw, warnings,
            width=width, headroom=headroom, stat=stat, threads=threads,
        )  # fmt: skip
    res = ValidationResult(
        imported,
        selected,
        trace,
        in_fmts,
        chosen_all,
        site_errors,
        e2e,
        emulated,
        timing,
        n,
        b,
        tuning,
        label,
        sat,
        warnings,
        notes,
        axis,
        None if tm is None else tm[0],
        stat,
        fused,
    )
    return res


def _active_sites(
    selected: list[Site], given: Mapping[str, Any], cfg: ApproxConfig, tuning: bool
) -> list[Site]:
    """The selected sites that will be approximated (and so calibrated): a given spec
    decides; else the config (under a budget, a site is active unless the user's own
    config keeps it float: the search decides the rest)."""
    keeps = _float_entry if tuning else _keeps_float
    return [
        s for s in selected if (given[s.name] is not None if s.name in given else not keeps(cfg, s))
    ]


def _chosen_specs(
    cfg: ApproxConfig,
    active: list[Site],
    given: Mapping[str, ApproxSpec | None],
    trace: Trace,
    in_fmts: Mapping[str, str],
    all_names: list[str],
    *,
    width: int,
    out_width: int | None,
    headroom: int,
    stat: str | float,
) -> dict[str, ApproxSpec | None]:
    """Without a budget: each active site's spec from the config, its formats
    calibrated where the config does not set them (given specs as they are)."""
    to_resolve = [s for s in active if s.name not in given]
    resolved = _resolve(cfg, to_resolve, in_fmts, all_names, unified_phis(cfg, to_resolve, trace))
    chosen: dict[str, ApproxSpec | None] = {}
    for s in active:
        if s.name in given:
            chosen[s.name] = given[s.name]
            continue
        spec = resolved[s.name]
        if spec is not None:
            spec = _calibrate_spec(
                spec, s, trace, _explicit_fields(cfg, s, spec.method),
                width=width, out_width=out_width, headroom=headroom, stat=stat,
            )  # fmt: skip
        chosen[s.name] = spec
    return chosen


def _site_reports(
    active: list[Site],
    chosen: Mapping[str, ApproxSpec | None],
    trace: Trace,
    warnings: list[str],
    threads: int = 0,
    ran: Mapping[str, tuple[MetricsPass | None, Any]] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, int]]]:
    """Per approximated site: its error metrics and saturation counts (a spec that
    computes another function is refused); saturation and fully masked rows are
    appended to ``warnings``. ``ran``: each site's one-pass metrics already run
    elsewhere (:func:`metrics_pass` and its kernel's result; :func:`_reports_beside`)."""
    site_errors: dict[str, dict[str, Any]] = {}
    sat: dict[str, dict[str, int]] = {}
    todo = [(s, spec) for s in active if (spec := chosen.get(s.name)) is not None]

    def one(item: tuple[Site, ApproxSpec]) -> tuple[dict[str, Any], dict[str, int]]:
        s, spec = item
        why = s.spec_mismatch(spec)
        if why is not None:
            raise ExportError(why)
        x, y = trace.site_inputs[s.name], trace.site_outputs[s.name]
        mask = trace.masks.get(s.name)
        n_value = trace.site_n.get(s.name)
        if ran is None:
            err = site_metrics(s, spec, x, y, mask, n_value)
        else:
            err = _metrics_after(*ran[s.name], s, spec, x, y, mask, n_value)
        err.update(variant_stats(s, spec, x, mask))
        # calibration's extremes cover these elements when it saw them with the mask
        same = mask is not None or trace.stats[s.name].masked == 0
        st = (trace.stats[s.name], trace.out_stats[s.name]) if same else None
        return err, saturation(spec, x, y, mask, st)

    # sites are independent: on worker threads (kernels and numpy release the GIL),
    # results taken in site order
    results = thread_map(one, todo, threads, lane="reports")
    for (s, spec), (err, c) in zip(todo, results, strict=True):
        site_errors[s.name] = err
        sat[s.name] = c
        for side, fmt in (("in", spec.in_fmt), ("out", spec.out_fmt)):
            if c[side]:
                st = trace.stats[s.name] if side == "in" else trace.out_stats[s.name]
                warnings.append(
                    f"site {s.name}: {c[side]} of {c[side + '_total']} {side}puts "
                    f"({100 * c[side] / max(c[side + '_total'], 1):.3g}%) saturate {fmt} "
                    f"(range [{float(fmt.min):.4g}, {float(fmt.max):.4g}], data "
                    f"[{st.min:.4g}, {st.max:.4g}])"
                )
        st = trace.stats[s.name]
        if st.masked_rows:
            warnings.append(
                f"site {s.name}: {st.masked_rows} of {st.rows} rows are fully masked; the "
                f"approximation outputs zeros there (the float model outputs a uniform row)"
            )
    return site_errors, sat


def _reports_beside(
    active: list[Site],
    chosen: Mapping[str, ApproxSpec | None],
    trace: Trace,
    warnings: list[str],
) -> Callable[[], tuple[dict[str, dict[str, Any]], dict[str, dict[str, int]]]]:
    """A small model's :func:`_site_reports` beside the emulation: each site's one-pass
    metrics prepared here (:func:`metrics_pass`); their kernels run on the background
    worker (after calibration's statistics), which takes them from the front, and on
    this thread once its emulation is done, which takes what is left from the end (each
    pass once: the same figures whichever runs it). The worker takes the GIL once per
    kernel; the Python around them (preparing, finishing) stays here, where it does not
    wait for the GIL. The returned callable runs what is left, waits and finishes."""
    passes: dict[str, MetricsPass | None] = {}
    for s in active:
        spec = chosen.get(s.name)
        if spec is not None:
            x, y = trace.site_inputs[s.name], trace.site_outputs[s.name]
            mask, n_value = trace.masks.get(s.name), trace.site_n.get(s.name)
            passes[s.name] = metrics_pass(s, spec, x, y, mask, n_value)
    todo = list(passes.values())
    res: list[Any] = [None] * len(todo)
    left = collections.deque(i for i, p in enumerate(todo) if p is not None)

    def run(take: Callable[[], int]) -> None:
        # (deque pops are atomic: each pass is run once, by whichever thread takes it)
        while True:
            try:
                i = take()
            except IndexError:
                return
            p = todo[i]
            res[i] = p.kernel(*p.args)  # type: ignore[union-attr]

    fut = background(run, left.popleft)

    def join() -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, int]]]:
        run(left.pop)  # this thread takes the passes the worker has not begun, from the end
        fut.result()
        ran = dict(zip(passes, zip(todo, res, strict=True), strict=True))
        return _site_reports(active, chosen, trace, warnings, 1, ran)

    return join


def _in_background(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """``fn(*args)`` started on a thread of its own; the returned callable waits for it
    and gives its result or raises its error."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["r"] = fn(*args)
        except BaseException as exc:  # raised again in the caller's thread
            box["e"] = exc

    t = threading.Thread(target=run, name="hwapprox-site-reports", daemon=True)
    t.start()

    def join() -> Any:
        t.join()
        if "e" in box:
            raise box["e"]
        return box["r"]

    return join


def _run_notes(
    imported: ImportedModel,
    files: list[Path] | None,
    feeds: Mapping[str, np.ndarray],
    axis: int | None,
    tm: tuple[str, np.ndarray] | None,
    kinds: Mapping[str, Any],
) -> tuple[list[str], int]:
    """The report's notes on the run (import notes, batch files, batch axis, padding,
    output kinds) and the number of samples."""
    notes = list(imported.notes)
    if files is not None:
        notes.append(
            f"input formats calibrated over {len(files)} batch files ({files[0].name} .. "
            f"{files[-1].name}, streamed: statistics merged batch by batch); the per-site "
            f"errors, the end-to-end comparison and any budget search use the first, "
            f"{files[0].name}"
        )
    first = next(iter(feeds.values()), None)
    if axis is None:
        n = 1
        notes.append("the model has no batch axis: one sample per input set")
    else:
        n = int(first.shape[0]) if first is not None and first.ndim else 1
    if tm is not None:
        notes.append(
            f"padding mask from input '{tm[0]}': {int(tm[1].sum())} of {tm[1].size} tokens "
            f"real; "
            f"padded tokens are left out of the end-to-end metrics"
        )
    for name, info in kinds.items():
        notes.append(f"output '{name}': {info.kind} ({info.note})")
    return notes, n


def _fused_run(
    model: ModelProto,
    active: list[Site],
    chosen: Mapping[str, ApproxSpec | None],
    feeds: Mapping[str, np.ndarray],
    ref: Mapping[str, np.ndarray],
    mkw: Mapping[str, Any],
    warnings: list[str],
    *,
    width: int,
    headroom: int,
    stat: str | float,
    threads: int,
) -> dict[str, Any]:
    """The model with attention fused where the graph allows (see :func:`validate`)."""
    from hwapprox.export.fused import fuse_site, fused_specs

    index = GraphIndex(model)
    fused: dict[str, Site] = {}
    info: dict[str, dict[str, Any]] = {}
    for s in active:
        if s.operator is not Operator.SOFTMAX:
            continue
        if chosen.get(s.name) is None:
            info[s.name] = {"fused": False, "reason": "the site stays float"}
            continue
        f, why = fuse_site(index, s)
        if f is None:
            info[s.name] = {"fused": False, "reason": why}
        else:
            fused[s.name] = f
    if not fused:
        warnings.append(
            "--attention fused: no approximated softmax site feeds a P·V MatMul ("
            + "; ".join(f"{k}: {v['reason']}" for k, v in info.items())
            + ")"
        )
        return {"sites": info, "end_to_end": None}
    specs, sat = fused_specs(
        model, list(fused.values()), chosen, feeds,
        width=width, headroom=headroom, stat=stat, threads=threads,
    )  # fmt: skip
    for name, sp in specs.items():
        c = sat[name]
        info[name] = {
            "fused": True,
            "v": fused[name].fused_v,
            "context": fused[name].output,
            "v_fmt": str(sp.v_fmt),
            "acc_fmt": str(sp.acc_fmt),
            "out_fmt": str(sp.out_fmt),
            "saturation": c,
        }
        for side, fmt in (("v", sp.v_fmt), ("out", sp.out_fmt)):
            if c[side]:
                warnings.append(
                    f"site {name} (fused): {c[side]} of {c[side + '_total']} "
                    f"{'V' if side == 'v' else 'context'} values saturate {fmt}"
                )
    emu = Emulator(model, [fused.get(s.name, s) for s in active], threads=threads)
    run_specs: dict[str, Any] = {s.name: chosen.get(s.name) for s in active}
    run_specs.update(specs)
    out = emu.run(feeds, run_specs)
    return {
        "sites": info,
        "end_to_end": end_to_end_metrics(ref, out, **mkw),
        "fused_sites": len(specs),
    }


def _fmax_mhz(spec: ApproxSpec | None) -> float | None:
    """``spec``'s unit's post-route Fmax on ECP5-85k (measured or estimated), if any."""
    f = None if spec is None else fmax(spec)
    return None if f is None else f["fmax_mhz"]


def _tune(
    emu: Emulator,
    active: list[Site],
    given: Mapping[str, ApproxSpec | None],
    trace: Trace,
    user_cfg: ApproxConfig,
    budget: E2EBudget,
    space: SearchSpace,
    feeds: Mapping[str, np.ndarray],
    ref: Mapping[str, np.ndarray],
    mkw: Mapping[str, Any],
    progress: bool,
    jobs: int = 1,
    dask: str | None = None,
    threads: int = 0,
) -> tuple[dict[str, ApproxSpec | None], list[dict[str, Any]]]:
    """Greedy per-site search (:mod:`hwapprox.export.tuning`); the end-to-end
    evaluations run where ``jobs``/``dask`` say (:mod:`hwapprox.export.evaluators`),
    with the serial search's result, and so does the screening of the sites' candidates
    (:func:`~hwapprox.export.tuning.fronts_of`: each distinct spec once on all its
    sites, an operator's while the next one's candidates are built), in process on
    ``threads`` worker threads
    (:func:`~hwapprox.export.emulate.thread_map`)."""
    chosen: dict[str, ApproxSpec | None] = {s.name: given.get(s.name) for s in active}
    todo = [s for s in active if s.name not in given]
    tuning: list[dict[str, Any]] = []

    def base_of(s: Site) -> dict[str, Any] | None:
        base = user_cfg.sites.get(s.name, user_cfg.defaults.get(s.operator))
        if isinstance(base, dict) and "method" not in base:
            op_default = user_cfg.defaults.get(s.operator)
            base = {**op_default, **base} if isinstance(op_default, dict) else base
        return base if isinstance(base, dict) else None

    def serial(site: str, done: Mapping[str, ApproxSpec | None], spec: ApproxSpec) -> dict:
        prefix = chain.get(done, emu.site_level[site])  # the last one, continued or kept
        out = emu.run(feeds, {**done, site: spec}, resume=prefix)
        return end_to_end_metrics(ref, out, **mkw)

    chain = PrefixChain(emu, feeds)
    screening: dict[str, ScreenSample] = {}
    for s in todo:
        xs, ys, ms = screen_sample(
            s, trace.site_inputs[s.name], trace.site_outputs[s.name], trace.masks.get(s.name)
        )
        screening[s.name] = (s, xs, ys, ms, trace.site_n.get(s.name))
    ctx = SearchContext(
        emu.model, list(active), dict(feeds), dict(ref), dict(mkw), threads=1, screening=screening
    )
    evaluator = make_evaluator(ctx, serial, jobs=jobs, dask=dask)
    bar = None
    try:
        # screening needs only the float trace: every site's front up front, each distinct
        # candidate spec on all the sites that have it, where the evaluations run (worker
        # processes, the cluster, or worker threads; the same fronts anywhere). Specs of
        # different operators never coincide, so each operator's groups are screened
        # while the next operator's candidates are built (GELU's PWL fits, on a new process)
        by_op: dict[Operator, list[Site]] = {}
        for s in todo:
            by_op.setdefault(s.operator, []).append(s)
        started = []
        for sites in by_op.values():
            cands = {
                s.name: candidate_specs(
                    s, trace.stats[s.name], trace.out_stats.get(s.name), base_of(s), space
                )
                for s in sites
            }
            groups = screen_groups(cands)
            started.append((cands, groups, evaluator.start_screen(groups, threads)))
        fronts: dict[str, tuple[int, list[tuple[ApproxSpec, float]]]] = {}
        for cands, groups, results in started:
            for name, front in fronts_of(cands, groups, results()).items():
                fronts[name] = (len(cands[name]), front)
        if progress:
            from tqdm import tqdm

            total = sum(len(f) for _, f in fronts.values())
            bar = tqdm(total=total, desc=f"budget search ({evaluator.where})", unit="cand")
        for i, s in enumerate(todo):
            n_cands, front = fronts[s.name]
            target = share(budget, i, len(todo))
            done = dict(chosen)

            def on_result(spec: ApproxSpec, m: dict[str, Any], _s: Site = s) -> None:
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix_str(f"{_s.name}: cos {m['cosine_min']:.5f}", refresh=False)

            pick, tried, how = walk_front(
                front,
                None,
                target.meets,
                budget.meets,
                evaluate_many=lambda specs, _s=s, _d=done: evaluator.batch(_s.name, _d, specs),
                width=evaluator.width,
                on_result=on_result,
            )
            if bar is not None:  # the candidates past the pick are never needed
                bar.total -= len(front) - len(tried)
                bar.set_postfix_str(
                    f"{s.name} -> {'float' if pick is None else pick.method}", refresh=True
                )
            chosen[s.name] = pick
            tuning.append(
                {
                    "site": s.name,
                    "chosen": None if pick is None else pick.describe(),
                    "cost_score": None if pick is None else round(rank_score(pick), 2),
                    "cost": None if pick is None else dataclasses.asdict(pick.cost()),
                    "fmax_mhz": _fmax_mhz(pick),
                    "clock_mhz": space.clock_mhz,
                    "met": how,
                    "share": target.describe(),
                    "candidates": n_cands,
                    "front": len(front),
                    "evaluated": tried,
                }
            )
    finally:
        evaluator.close()
        if bar is not None:
            bar.close()
    return chosen, tuning
