"""Calibrated formats per site, and the ``--budget`` search.

:func:`calibrated_fields` turns a site's calibration statistics into the
formats of a spec: ``in_fmt`` from the input range (width, headroom, range
policy), ``out_fmt`` from the float model's site outputs the same way (GELU,
LayerNorm; softmax outputs lie in [0, 1] and keep the method's integer bits),
and LayerNorm ``gamma_fmt``/``beta_fmt`` from the weights' real range. The
rounding, overflow and signedness of each format are the method's defaults.

:func:`tune_sites` is the ``--budget`` search. For each selected site, in graph
order, candidates are every method (or the configured one) x input width x
range policy x the method's own parameters (:data:`PARAM_GRID`: PWL segments,
table sizes, Newton steps), with the output width equal to the input width
(softmax sites also try wider inputs, ``SearchSpace.softmax_widths``, with 16-bit
outputs).
Each candidate is first *screened* on a sample of the site's float input
(rms error against the float site output); candidates that another
candidate beats on both cost score and rms error are dropped (a Pareto front).
Sites with close calibrated ranges share most of their candidates, so the search
screens each distinct spec once on every site that has it (:func:`screen_groups`,
:func:`fronts_of`:
its memo tables are built once per search, and the work splits evenly over
threads or workers); the fronts are those of each site screened alone.
The front is then walked from the cheapest candidate up, running the emulated
model end to end (earlier sites at their chosen specs, later ones float), and
the first candidate meeting the site's *share* of the budget is taken:
site ``i`` of ``n`` may use ``(i + 1) / n`` of the budget's room (``1 -
cosine``, ``max_abs``, ``mean_abs``; ``top1`` is not split), so the first
sites do not spend the whole budget and leave the later ones float. When no
candidate meets the share, the cheapest one meeting the whole budget is
taken; when none does, the site stays float (and the report warns).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from hwapprox.approx.base import ELEMENTWISE_ATTENTION, ApproxSpec, Operator, SpecError, field_names
from hwapprox.approx.config import ApproxConfig
from hwapprox.approx.costmodel import meets_clock, rank_score
from hwapprox.approx.registry import METHODS, get_method
from hwapprox.export.calibrate import SiteStats, parameter_format
from hwapprox.export.emulate import apply_spec, rows_view
from hwapprox.export.errors import ExportError
from hwapprox.export.patterns import KIND_METHODS, Site
from hwapprox.fixed import FixedFormat, Overflow, Rounding

__all__ = [
    "PARAM_GRID",
    "SearchSpace",
    "calibrated_fields",
    "candidate_specs",
    "fronts_of",
    "pareto_front",
    "screen",
    "screen_groups",
    "screen_rms",
    "screen_sample",
    "screen_sampled",
    "share",
    "softmax_input_format",
]

#: Method parameters the tuner tries (each entry is one set of fields).
PARAM_GRID: dict[tuple[Operator, str], tuple[dict[str, Any], ...]] = {
    (Operator.GELU, "pwl"): (
        {"segments": 8},
        {"segments": 16},
        {"segments": 32, "lo": -8.0, "hi": 8.0},
        {"segments": 64, "lo": -8.0, "hi": 8.0},
    ),
    (Operator.GELU, "lut"): ({"index_bits": 0}, {"index_bits": 10}, {"index_bits": 12}),
    (Operator.LAYERNORM, "rsqrt_lut"): (
        {"rsqrt_table_bits": 4, "newton_steps": 1},
        {"rsqrt_table_bits": 6, "newton_steps": 1},
        {"rsqrt_table_bits": 6, "newton_steps": 2},
    ),
    (Operator.SOFTMAX, "online"): ({"newton_steps": 1}, {"newton_steps": 2}),
    (Operator.SIGMOID_ATTENTION, "pwl"): ({"segments": 16}, {"segments": 32}, {"segments": 64}),
    (Operator.SIGMOID_ATTENTION, "lut"): ({"index_bits": 0}, {"index_bits": 10}),
    (Operator.RELU_ATTENTION, "wortsman"): ({"recip_bits": 10}, {"recip_bits": 16}),
}

#: Methods that do not compute the site's operator as exported (RMSNorm has no mean);
#: a site of a kind in :data:`~hwapprox.export.patterns.KIND_METHODS` searches those.
EXCLUDED: dict[Operator, tuple[str, ...]] = {Operator.LAYERNORM: ("rmsnorm",)}


@dataclass(frozen=True)
class SearchSpace:
    """What ``--budget`` searches per site (see the module docstring)."""

    widths: tuple[int, ...] = (8, 10, 12, 16)
    #: more input widths for softmax sites (output width 16): a softmax input's
    #: precision is that of ``x - max`` (:func:`softmax_input_format`), and a wider
    #: code costs a comparator and subtractor, not the exp path (in the cost model; the
    #: HLS/RTL units do not clamp ``x - max`` yet: see :func:`softmax_input_format`)
    softmax_widths: tuple[int, ...] = (20, 24)
    ranges: tuple[str | float, ...] = ("max", "p99.99", "p99.9")
    params: bool = True
    headroom: int = 1
    #: only these methods per operator (e.g. those with an HLS unit), or all
    methods: dict[Operator, tuple[str, ...]] | None = None
    #: only specs whose RTL unit reaches this clock post-route on ECP5-85k
    #: (:func:`hwapprox.approx.costmodel.meets_clock`; no RTL unit: left out)
    clock_mhz: float | None = None


def _with_width(fmt: FixedFormat, width: int, int_bits: int | None = None) -> FixedFormat:
    """``fmt``'s signedness and rounding at a new size; wrapping becomes saturation
    (a calibrated format must not wrap an outlier around)."""
    return FixedFormat(
        width,
        fmt.int_bits if int_bits is None else int_bits,
        fmt.signed,
        fmt.rounding,
        Overflow.SAT if fmt.overflow is Overflow.WRAP else fmt.overflow,
    )


@functools.cache
def _field_defaults(cls: type[ApproxSpec]) -> Mapping[str, Any]:
    """A spec class's field defaults by name (read once per class; read-only)."""
    return MappingProxyType({f.name: f.default for f in dataclasses.fields(cls)})


def calibrated_fields(
    site: Site,
    spec_cls: type[ApproxSpec],
    stats: SiteStats,
    out_stats: SiteStats | None,
    *,
    width: int,
    out_width: int | None = None,
    headroom: int = 1,
    stat: str | float = "max",
) -> dict[str, FixedFormat]:
    """Calibrated ``in_fmt``/``out_fmt``/``gamma_fmt``/``beta_fmt`` for one site.

    ``in_fmt`` = ``ap_fixed<width, I, AP_RND, AP_SAT>`` from the input range
    (``stat`` policy, ``headroom`` bits; softmax: :func:`softmax_input_format`, wider
    than ``width`` for outlier ranges); ``out_fmt``
    (GELU, LayerNorm) = ``out_width`` bits with integer bits from the site
    outputs (max, same headroom) with the method default's rounding; softmax
    keeps the default's integer bits at ``out_width``; gamma/beta formats hold
    the weights' largest magnitude at the default width. A softmax without an
    ``out_width`` keeps the default ``out_fmt``. Raises :class:`ExportError`
    when a range does not fit.
    """
    ow = out_width or width
    d = _field_defaults(spec_cls)
    dout: FixedFormat = d["out_fmt"]  # type: ignore[assignment]
    f_in = stats.choose_format(width, headroom, Rounding.RND, Overflow.SAT, stat=stat)
    fields: dict[str, FixedFormat] = {"in_fmt": f_in}
    if site.operator is Operator.SOFTMAX or out_stats is None:
        if out_width is None:
            fields["out_fmt"] = _with_width(dout, dout.width)
        else:
            fields["out_fmt"] = _with_width(dout, ow, min(dout.int_bits, ow))
    if site.operator is Operator.SOFTMAX:
        fields["in_fmt"] = softmax_input_format(
            stats, width, headroom, stat, fields["out_fmt"].frac_bits
        )
    else:
        ib = out_stats.int_bits(headroom, "max")
        if not dout.signed:
            ib -= 1
        if ib >= ow:
            raise ExportError(
                f"site {site.name}: outputs reach {out_stats.absmax:.4g}, which needs {ib} "
                f"integer bits, not less than the output width {ow}; use a wider width"
            )
        fields["out_fmt"] = _with_width(dout, ow, ib)
    if site.operator is Operator.LAYERNORM:
        for name, values in (("gamma_fmt", site.gamma), ("beta_fmt", site.beta)):
            if name in d and values is not None:
                f = parameter_format(values, d[name].width)  # type: ignore[union-attr]
                if f is not None:
                    fields[name] = _with_width(d[name], f.width, f.int_bits)  # type: ignore[arg-type]
    return fields


#: the widest softmax input code :func:`softmax_input_format` gives (the online unit's limit)
SOFTMAX_MAX_IN_WIDTH = 32


def softmax_input_format(
    stats: SiteStats, width: int, headroom: int, stat: str | float, out_frac_bits: int
) -> FixedFormat:
    """A softmax site's input format: what the unit needs, not ``width`` at any range.

    A softmax unit computes ``x - max`` and its exp is 0 at the output precision
    below ``-R``, ``R = (out_frac_bits + 1)·ln 2`` (``exp(-R) = 2^-(F+1)``, half an
    output LSB). So the fraction bits that matter are those of ``x - max`` over
    ``[-R, 0]``: ``F = width - I_R`` with ``I_R`` the signed integer bits of ``R``
    (plus ``headroom``);
    the integer bits ``I`` still come from the input range (``stat``, ``headroom``:
    a row's maximum must not saturate). When ``I <= I_R`` this is
    ``ap_fixed<width, I>`` as for other sites; an outlier range (``I > I_R``, e.g.
    scores reaching 295 where attention sinks form) widens the code to ``I + F``
    bits (at most :data:`SOFTMAX_MAX_IN_WIDTH`) instead of giving up fraction bits:
    in the unit a wider input costs its comparator and subtractor, not the exp path
    (whose argument the cost model counts clamped where E is 0; see
    ``OnlineSoftmax.cost``). The HLS and RTL units do not clamp ``x - max`` yet (they
    multiply it at full width, with the same E), so in hardware the saving is
    potential only; Softermax multiplies ``x`` by log2 e before its max, so its
    multiplier does widen with the input.
    """
    ib = stats.int_bits(headroom, stat)
    r = (out_frac_bits + 1) * math.log(2)
    ib_need = math.ceil(r).bit_length() + 1 + headroom
    frac = width - min(ib, ib_need)
    w = min(SOFTMAX_MAX_IN_WIDTH, max(width, ib + frac))
    return stats.choose_format(w, headroom, Rounding.RND, Overflow.SAT, stat=stat)


def _method_ok(op: Operator, method: str) -> bool:
    try:
        get_method(op, method)
    except (SpecError, ImportError, AttributeError):
        return False
    return True


def candidate_specs(
    site: Site,
    stats: SiteStats,
    out_stats: SiteStats | None,
    base: Mapping[str, Any] | None,
    space: SearchSpace,
) -> list[ApproxSpec]:
    """Every distinct valid spec of the search space for ``site``.

    ``base`` is the site's config entry: with a ``method`` only that method is
    searched and its other fields are kept (fields it sets are not searched).
    """
    fixed = dict(base or {})
    methods = (
        [fixed.pop("method")]
        if "method" in fixed
        else [
            m
            for m in METHODS[site.operator]
            if _method_ok(site.operator, m)
            and (
                m in KIND_METHODS[site.kind]
                if site.kind in KIND_METHODS
                else m not in EXCLUDED.get(site.operator, ())
            )
        ]
    )
    if space.methods is not None:
        allowed = space.methods.get(site.operator, ())
        bad = [m for m in methods if m not in allowed]
        if "method" in (base or {}) and bad:
            raise ExportError(
                f"site {site.name}: the config's method {bad[0]} is not among the allowed "
                f"{site.operator} methods {list(allowed)}"
            )
        methods = [m for m in methods if m in allowed]
    extra = site.fields_for_spec()
    seen: set[str] = set()
    out: list[ApproxSpec] = []
    for m in methods:
        cls = get_method(site.operator, m)
        names = field_names(cls)
        if site.kind != site.operator.value and not set(extra) <= names:
            continue  # e.g. a Softmax_1 site: only methods with off_by_one compute it
        grid = PARAM_GRID.get((site.operator, m), ({},)) if space.params else ({},)
        for params in grid:
            if any(k in fixed for k in params):
                params = {}
            widths = list(space.widths)
            if site.operator is Operator.SOFTMAX:
                widths += [w for w in space.softmax_widths if w not in widths]
            for w in widths:
                for r in space.ranges:
                    try:
                        fmts = calibrated_fields(
                            site,
                            cls,
                            stats,
                            out_stats,
                            width=w,
                            out_width=min(w, 16),
                            headroom=space.headroom,
                            stat=r,
                        )
                    except ExportError:
                        continue
                    fields: dict[str, Any] = {k: v for k, v in extra.items() if k in names}
                    fields.update(fmts)
                    fields.update(params)
                    fields.update(fixed)
                    fields["method"] = m
                    try:
                        spec = ApproxConfig.from_dict({"sites": {site.name: fields}}).resolve_one(
                            site.name, site.operator
                        )
                    except (SpecError, TypeError, ValueError):
                        continue
                    if spec is None:
                        continue
                    key = spec.describe()
                    if key not in seen and meets_clock(spec, space.clock_mhz)[0]:
                        seen.add(key)
                        out.append(spec)
    return out


def screen_sample(
    site: Site, x: np.ndarray, y: np.ndarray, mask: np.ndarray | None = None, limit: int = 512
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The sample :func:`screen` scores candidates on: at most ``limit`` rows
    (softmax, LayerNorm, attention normalisers: 2-D, rows last) or ``128·limit``
    elements (GELU: 1-D), evenly spaced."""
    if site.operator is Operator.GELU or site.operator in ELEMENTWISE_ATTENTION:
        limit *= 128
    return _sample(site, x, y, mask, limit)


def _sample(
    site: Site, x: np.ndarray, y: np.ndarray, mask: np.ndarray | None, limit: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """At most ``limit`` rows (softmax/LayerNorm) or elements (GELU), evenly spaced,
    for screening; GELU keeps its extreme inputs (where saturation shows)."""
    if site.operator is Operator.GELU:
        xf, yf = np.ravel(x), np.ravel(y)
        if xf.size <= limit:
            return xf, yf, None
        idx = np.unique(
            np.concatenate(
                [np.linspace(0, xf.size - 1, limit).astype(np.int64), [xf.argmax(), xf.argmin()]]
            )
        )
        return xf[idx], yf[idx], None
    xr, ax = rows_view(site, np.asarray(x))
    yr, _ = rows_view(site, np.asarray(y))
    mr = None if mask is None else rows_view(site, np.broadcast_to(mask, np.shape(x)))[0]
    xr, yr = np.moveaxis(xr, ax, -1), np.moveaxis(yr, ax, -1)
    n = xr.shape[-1]
    xr, yr = xr.reshape(-1, n), yr.reshape(-1, n)
    if mr is not None:
        mr = np.moveaxis(mr, ax, -1).reshape(-1, n)
    if xr.shape[0] > limit:
        idx = np.linspace(0, xr.shape[0] - 1, limit).astype(np.int64)
        xr, yr = xr[idx], yr[idx]
        mr = None if mr is None else mr[idx]
    return xr, yr, mr


def screen(
    site: Site,
    specs: Sequence[ApproxSpec],
    x: np.ndarray,
    y: np.ndarray,
    mask: np.ndarray | None = None,
    *,
    limit: int = 512,
    n_value: float | None = None,
) -> list[tuple[ApproxSpec, float]]:
    """``(spec, rms error)`` on a sample of the site's float input (masked elements
    left out), Pareto-pruned on (cost score, rms error), sorted by cost
    (``n_value``: a ReLU attention site's run-time n)."""
    return screen_sampled(site, specs, *screen_sample(site, x, y, mask, limit), n_value=n_value)


def screen_sampled(
    site: Site,
    specs: Sequence[ApproxSpec],
    xs: np.ndarray,
    ys: np.ndarray,
    ms: np.ndarray | None,
    *,
    n_value: float | None = None,
) -> list[tuple[ApproxSpec, float]]:
    """:func:`screen` on the sample :func:`screen_sample` drew."""
    scored = [(sp, screen_rms(site, sp, xs, ys, ms, n_value)) for sp in specs]
    return pareto_front([(sp, r) for sp, r in scored if r is not None])


def screen_rms(
    site: Site,
    spec: ApproxSpec,
    xs: np.ndarray,
    ys: np.ndarray,
    ms: np.ndarray | None,
    n_value: float | None = None,
) -> float | None:
    """``spec``'s rms error (in float64) on the sample ``xs``, ``ys``, ``ms`` of
    :func:`screen_sample`, masked elements left out; None when ``spec`` cannot run
    there (:class:`SpecError`, :class:`ExportError`)."""
    flat_site = dataclasses.replace(site, axis=-1, trailing=False) if xs.ndim == 2 else site
    try:
        got = apply_spec(flat_site, spec, xs, ms, n_value)
    except (SpecError, ExportError):
        return None
    d = np.subtract(got, ys, dtype=np.float64)
    if ms is not None:
        d = d[~ms]
    return float(np.sqrt(np.mean(d**2))) if d.size else 0.0


def pareto_front(scored: Sequence[tuple[ApproxSpec, float]]) -> list[tuple[ApproxSpec, float]]:
    """``(spec, rms)`` pairs (in candidate order) sorted by (cost score, rms), keeping
    each one more accurate than every cheaper one (ties: the first)."""
    ranked = sorted(((sp, rank_score(sp), rms) for sp, rms in scored), key=lambda t: (t[1], t[2]))
    front: list[tuple[ApproxSpec, float]] = []
    best = math.inf
    for spec, _cost, rms in ranked:
        if rms < best:  # cheaper candidates all had a larger error
            front.append((spec, rms))
            best = rms
    return front


#: one screening task: a distinct candidate spec and the sites (by name) that have it
ScreenGroup = tuple[ApproxSpec, list[str]]


def screen_groups(cands: Mapping[str, Sequence[ApproxSpec]]) -> list[ScreenGroup]:
    """The distinct specs of every site's candidates (first appearance order), each with
    the sites that have it, in site order: sites with close calibrated ranges share
    most candidates, and screening a spec on all its sites at once builds its memo
    tables (softmax exp/pow2 memos, elementwise memos) once per search, while they
    are still in their bounded caches."""
    groups: dict[ApproxSpec, list[str]] = {}
    for name, specs in cands.items():
        for sp in specs:
            groups.setdefault(sp, []).append(name)
    return list(groups.items())


def fronts_of(
    cands: Mapping[str, Sequence[ApproxSpec]],
    groups: Sequence[ScreenGroup],
    results: Sequence[Sequence[float | None]],
) -> dict[str, list[tuple[ApproxSpec, float]]]:
    """Every site's screened Pareto front, :func:`screen_sampled`'s on its candidates
    ``cands[name]``, from each distinct spec screened once for all the sites that have
    it: ``groups`` are :func:`screen_groups` of ``cands``, ``results`` per group the
    :func:`screen_rms` of its spec on each of its sites (in order), wherever they ran
    (:meth:`~hwapprox.export.evaluators.CandidateEvaluator.start_screen`). The fronts
    do not depend on where or in what order the groups were screened."""
    rms: dict[tuple[str, ApproxSpec], float | None] = {}
    for (sp, names), vals in zip(groups, results, strict=True):
        for name, v in zip(names, vals, strict=True):
            rms[name, sp] = v
    return {
        name: pareto_front([(sp, r) for sp in specs if (r := rms[name, sp]) is not None])
        for name, specs in cands.items()
    }


def share(budget: Any, i: int, n: int) -> Any:
    """The budget site ``i`` of ``n`` may use: ``(i + 1) / n`` of its room."""
    f = (i + 1) / max(n, 1)
    changes: dict[str, float] = {}
    for k in ("max_abs", "mean_abs"):
        v = getattr(budget, k)
        if v is not None:
            changes[k] = v * f
    for k in ("cosine", "pooled_cosine", "token_cosine"):
        v = getattr(budget, k, None)
        if v is not None:
            changes[k] = 1.0 - (1.0 - v) * f
    return dataclasses.replace(budget, **changes)


def walk_front(
    front: Sequence[tuple[ApproxSpec, float]],
    evaluate: Callable[[ApproxSpec], dict[str, Any]] | None,
    meets_share: Callable[[dict[str, Any]], bool],
    meets_all: Callable[[dict[str, Any]], bool],
    *,
    evaluate_many: Callable[[Sequence[ApproxSpec]], list[dict[str, Any]]] | None = None,
    width: int = 1,
    on_result: Callable[[ApproxSpec, dict[str, Any]], None] | None = None,
) -> tuple[ApproxSpec | None, list[dict[str, Any]], str]:
    """Cheapest front candidate meeting the share, else the whole budget, else None.

    ``evaluate_many`` (with ``width`` > 1) evaluates the next ``width`` candidates at
    once (:mod:`hwapprox.export.evaluators`); their results are scanned in cost
    order, so the pick and the ``tried`` list are those of the one-at-a-time walk
    (results past the pick are dropped). ``on_result`` sees each scanned result.
    """
    if evaluate_many is None:
        if evaluate is None:
            raise TypeError("walk_front needs evaluate or evaluate_many")
        one = evaluate
        evaluate_many = lambda specs: [one(sp) for sp in specs]  # noqa: E731
        width = 1
    tried: list[dict[str, Any]] = []
    fallback: ApproxSpec | None = None
    items = list(front)
    for start in range(0, len(items), max(1, width)):
        chunk = items[start : start + max(1, width)]
        results = evaluate_many([spec for spec, _ in chunk])
        for (spec, rms), m in zip(chunk, results, strict=True):
            if on_result is not None:
                on_result(spec, m)
            ok_share, ok_all = meets_share(m), meets_all(m)
            tried.append(
                {
                    "spec": spec.describe(),
                    "score": round(rank_score(spec), 2),
                    "screen_rms": rms,
                    "max_abs": m["max_abs"],
                    "cosine_min": m["cosine_min"],
                    "pooled_cosine_min": m.get("pooled_cosine_min"),
                    "meets_share": ok_share,
                    "meets_budget": ok_all,
                }
            )
            if ok_share:
                return spec, tried, "share"
            if ok_all and fallback is None:
                fallback = spec
    if fallback is not None:
        return fallback, tried, "budget"
    return None, tried, "none"
