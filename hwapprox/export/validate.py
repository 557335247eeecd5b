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

With ``budget`` each selected site is tuned greedily, in graph order, to the
cheapest candidate spec (ascending ``spec.cost().score()``) for which the
end-to-end metrics, with the earlier sites at their chosen specs and the
later ones in float, meet the budget; a site for which no candidate does
stays float.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from onnx import ModelProto

from hwapprox.approx.base import ApproxSpec, Operator, SpecError
from hwapprox.approx.config import ApproxConfig, load_config
from hwapprox.approx.registry import METHODS, get_method
from hwapprox.export.calibrate import SiteStats, Trace, calibrate, prepare_inputs
from hwapprox.export.emulate import Emulator, apply_spec, make_session, rows_view
from hwapprox.export.errors import ExportError
from hwapprox.export.graph import load_model
from hwapprox.export.patterns import Site, find_sites

__all__ = [
    "DEFAULT_METHODS",
    "E2EBudget",
    "ImportedModel",
    "ValidationResult",
    "end_to_end_metrics",
    "import_model",
    "select_sites",
    "validate",
]

#: Method per operator when neither a config nor ``--method`` names one.
DEFAULT_METHODS: dict[Operator, str] = {
    Operator.SOFTMAX: "ibert",
    Operator.GELU: "ibert",
    Operator.LAYERNORM: "ibert",
}


@dataclass
class ImportedModel:
    """A loaded, checked, shape-inferred model and its nonlinear sites."""

    model: ModelProto
    sites: list[Site]
    skipped: dict[str, str] = field(default_factory=dict)

    def site(self, name: str) -> Site:
        for s in self.sites:
            if s.name == name:
                return s
        raise ExportError(
            f"no site named {name!r}; sites: {', '.join(s.name for s in self.sites) or '(none)'}"
        )


def import_model(source: str | Path | ModelProto) -> ImportedModel:
    """Load ``source`` (path or proto) and find every nonlinear site."""
    model = load_model(source)
    sites, skipped = find_sites(model)
    return ImportedModel(model, sites, skipped)


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
    """End-to-end limits (each optional): max/mean |error|, min cosine, min top-1."""

    max_abs: float | None = None
    mean_abs: float | None = None
    cosine: float | None = None
    top1: float | None = None

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
        if not vals:
            raise ExportError(f"empty budget; give KEY=VALUE with KEY one of {keys}")
        return cls(**vals)

    def meets(self, m: Mapping[str, Any]) -> bool:
        if self.max_abs is not None and m["max_abs"] > self.max_abs:
            return False
        if self.mean_abs is not None and m["mean_abs"] > self.mean_abs:
            return False
        if self.cosine is not None and m["cosine_min"] < self.cosine:
            return False
        return not (self.top1 is not None and (m["top1"] is None or m["top1"] < self.top1))

    def describe(self) -> str:
        return ", ".join(f"{k}={v:g}" for k, v in dataclasses.asdict(self).items() if v is not None)


def end_to_end_metrics(
    ref: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray]
) -> dict[str, Any]:
    """Metrics per output and overall (worst over outputs) -- see module docstring."""
    per: dict[str, dict[str, Any]] = {}
    for name, r in ref.items():
        a = np.asarray(r, dtype=np.float64)
        b = np.asarray(got[name], dtype=np.float64)
        d = np.abs(a - b)
        n = a.shape[0] if a.ndim >= 2 else 1
        fa, fb = a.reshape(n, -1), b.reshape(n, -1)
        na, nb = np.linalg.norm(fa, axis=1), np.linalg.norm(fb, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = np.where(
                (na == 0) & (nb == 0), 1.0, (fa * fb).sum(axis=1) / np.maximum(na * nb, 1e-300)
            )
        top1 = None
        if a.ndim >= 2 and a.shape[-1] >= 2:
            top1 = float((a.argmax(axis=-1) == b.argmax(axis=-1)).mean())
        per[name] = {
            "max_abs": float(d.max()) if d.size else 0.0,
            "mean_abs": float(d.mean()) if d.size else 0.0,
            "ref_absmax": float(np.abs(a).max()) if a.size else 0.0,
            "cosine_mean": float(cos.mean()),
            "cosine_min": float(cos.min()),
            "top1": top1,
        }
    tops = [v["top1"] for v in per.values() if v["top1"] is not None]
    return {
        "max_abs": max(v["max_abs"] for v in per.values()),
        "mean_abs": max(v["mean_abs"] for v in per.values()),
        "cosine_mean": min(v["cosine_mean"] for v in per.values()),
        "cosine_min": min(v["cosine_min"] for v in per.values()),
        "top1": min(tops) if tops else None,
        "outputs": per,
    }


def site_metrics(site: Site, spec: ApproxSpec, x: np.ndarray, y_float: np.ndarray) -> dict:
    """Per-site error of ``spec`` on the float input against the float output.

    ``rel_rms`` = rms(error) / rms(float output); softmax sites also get
    ``row_sum_err`` = max over rows of |Σ approx - Σ float| (the probability
    mass a row gains or loses: a bias no absolute per-element error shows).
    """
    y = apply_spec(site, spec, x)
    yf = np.asarray(y_float, dtype=np.float64)
    d = np.abs(y - yf)
    rms_ref = float(np.sqrt((yf**2).mean()))
    out = {
        "max_abs": float(d.max()),
        "mean_abs": float(d.mean()),
        "rms": float(np.sqrt((d**2).mean())),
        "rel_rms": float(np.sqrt((d**2).mean()) / rms_ref) if rms_ref > 0 else 0.0,
        "out_lsb": float(spec.out_fmt.lsb),
        "max_lsb": float(d.max() / spec.out_fmt.lsb),
    }
    if site.operator is Operator.SOFTMAX:
        rows_y, ax = rows_view(site, y)
        rows_f, _ = rows_view(site, yf)
        out["row_sum_err"] = float(np.abs(rows_y.sum(axis=ax) - rows_f.sum(axis=ax)).max())
    return out


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
            sites.append(
                {
                    **s.as_dict(),
                    "selected": s.name in sel,
                    "spec": None if spec is None else spec.to_config(),
                    "cost_score": None if spec is None else round(spec.cost().score(), 2),
                    "calibrated_in_fmt": self.in_fmts.get(s.name),
                    "input_stats": self.stats[s.name].as_dict(),
                    "error": self.site_errors.get(s.name),
                }
            )
        return {
            "model": self.model_label,
            "samples": self.n_samples,
            "per_site_error": (
                "spec applied to the site's float input from the unmodified model, compared "
                "with the float model's output at the site (onnxruntime float32)"
            ),
            "end_to_end_error": (
                "graph outputs with all selected sites approximated vs the unmodified model "
                "on onnxruntime"
            ),
            "sites": sites,
            "skipped": self.imported.skipped,
            "end_to_end": self.end_to_end,
            "timing_s": self.timing,
            "budget": None if self.budget is None else dataclasses.asdict(self.budget),
            "tuning": self.tuning,
        }


def _method_available(op: Operator, method: str) -> bool:
    try:
        get_method(op, method)
    except (SpecError, ImportError, AttributeError):
        return False
    return True


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
) -> dict[str, ApproxSpec | None]:
    try:
        return cfg.resolve(
            {s.name: s.operator for s in sites},
            known=known,
            in_fmts=in_fmts,
            site_fields={s.name: s.fields_for_spec() for s in sites},
        )
    except ModuleNotFoundError as exc:
        raise ExportError(
            f"a configured method is not available yet (module {exc.name} is missing); "
            f"pick another with --method or a config file"
        ) from None


def candidates(
    site: Site, in_fmt: str, cfg: ApproxConfig, widths: Sequence[int] = (8, 12, 16)
) -> list[ApproxSpec]:
    """Candidate specs for ``site``: the configured method (or every available one)
    at each input width with the calibrated integer bits, sorted by cost score."""
    from hwapprox.fixed import FixedFormat

    base = cfg.sites.get(site.name, cfg.defaults.get(site.operator))
    if base == "float":
        return []
    op_default = cfg.defaults.get(site.operator)
    if isinstance(base, dict) and "method" not in base and isinstance(op_default, dict):
        base = {**op_default, **base}
    methods = (
        [base["method"]]
        if isinstance(base, dict) and "method" in base
        else [m for m in METHODS[site.operator] if _method_available(site.operator, m)]
    )
    fmt = FixedFormat.parse(in_fmt)
    out: list[ApproxSpec] = []
    for m in methods:
        for w in widths:
            if w <= fmt.int_bits:
                continue
            f = FixedFormat(w, fmt.int_bits, True, fmt.rounding, fmt.overflow)
            entry = dict(base) if isinstance(base, dict) and base.get("method") == m else {}
            entry.update(method=m, in_fmt=str(f))
            try:
                spec = ApproxConfig.from_dict({"sites": {site.name: entry}}).resolve_one(
                    site.name, site.operator, site_fields=site.fields_for_spec()
                )
            except (SpecError, TypeError, ValueError):
                continue
            if spec is not None:
                out.append(spec)
    return sorted(out, key=lambda s: s.cost().score())


def validate(
    model: str | Path | ModelProto | ImportedModel,
    *,
    inputs: str | Path | Mapping[str, np.ndarray] | None = None,
    config: str | Path | Mapping[str, Any] | ApproxConfig | None = None,
    methods: Mapping[str, str] | None = None,
    sites: Iterable[str] | None = None,
    specs: Mapping[str, ApproxSpec | None] | None = None,
    width: int = 16,
    headroom: int = 1,
    range_stat: str = "max",
    budget: E2EBudget | str | None = None,
    threads: int = 0,
    seed: int = 0,
) -> ValidationResult:
    """Run the whole validation (see the module docstring).

    ``specs`` (site name -> spec or None) bypasses the config for those sites
    (e.g. float-reference specs in tests); with a ``budget`` they stay fixed
    and only the other selected sites are tuned.
    """
    imported = model if isinstance(model, ImportedModel) else import_model(model)
    label = str(model) if isinstance(model, str | Path) else imported.model.graph.name
    selected = select_sites(imported.sites, sites)
    feeds = prepare_inputs(imported.model, inputs, seed=seed)
    trace = calibrate(imported.model, imported.sites, feeds, threads=threads)
    in_fmts = {
        s.name: str(trace.stats[s.name].choose_format(width, headroom, stat=range_stat))
        for s in selected
    }
    cfg = build_config(config, methods)
    # Candidates for --budget: the operators the user configured keep their
    # method; the others try every available method.
    user_cfg = build_config(config, methods, defaults=False)
    given = dict(specs or {})
    to_resolve = [s for s in selected if s.name not in given]
    all_names = [s.name for s in imported.sites]
    resolved = _resolve(cfg, to_resolve, in_fmts, all_names)
    chosen: dict[str, ApproxSpec | None] = {
        s.name: given[s.name] if s.name in given else resolved[s.name] for s in selected
    }
    emu = Emulator(imported.model, selected, threads=threads)
    ref = trace.outputs
    b = E2EBudget.parse(budget) if isinstance(budget, str) else budget
    tuning: list[dict[str, Any]] = []
    if b is not None:
        if b.top1 is not None and end_to_end_metrics(ref, ref)["top1"] is None:
            raise ExportError(
                f"budget top1={b.top1:g} needs an output with a class axis (rank >= 2, last "
                f"dim >= 2); outputs: {[(k, list(v.shape)) for k, v in ref.items()]}"
            )
        # Sites with an explicitly given spec keep it; the others start float.
        chosen = {s.name: given.get(s.name) for s in selected}
        for s in selected:
            if s.name in given:
                continue
            tried = []
            pick = None
            # Everything before this site's level is fixed while it is tuned.
            state = emu.prefix(feeds, chosen, emu.site_level[s.name])
            for cand in candidates(s, in_fmts[s.name], user_cfg):
                trial = {**chosen, s.name: cand}
                m = end_to_end_metrics(ref, emu.run(feeds, trial, resume=state))
                tried.append(
                    {"spec": cand.describe(), "score": cand.cost().score(), "max_abs": m["max_abs"]}
                )
                if b.meets(m):
                    pick = cand
                    break
            chosen[s.name] = pick
            tuning.append(
                {
                    "site": s.name,
                    "chosen": None if pick is None else pick.describe(),
                    "evaluated": tried,
                }
            )
    site_errors = {
        s.name: site_metrics(s, spec, trace.site_inputs[s.name], trace.site_outputs[s.name])
        for s in selected
        if (spec := chosen[s.name]) is not None
    }
    # Timing: the float model on onnxruntime (second, warm run) vs one emulation
    # run (its sessions were built and, with a budget, already run).
    full = make_session(imported.model, threads)
    full.run(None, feeds)
    t0 = time.perf_counter()
    full.run(None, feeds)
    t_float = time.perf_counter() - t0
    t0 = time.perf_counter()
    emulated = emu.run(feeds, chosen)
    t_emu = time.perf_counter() - t0
    e2e = end_to_end_metrics(ref, emulated)
    timing = {
        "float_onnxruntime": t_float,
        "emulation": t_emu,
        "emulation_sessions": emu.session_seconds,
        "approx_models": emu.approx_seconds,
        "sessions": float(emu.n_sessions),
    }
    n = int(next(iter(feeds.values())).shape[0]) if feeds else 1
    return ValidationResult(
        imported,
        selected,
        trace,
        in_fmts,
        chosen,
        site_errors,
        e2e,
        emulated,
        timing,
        n,
        b,
        tuning,
        label,
    )
