"""Resource estimates fitted to yosys synthesis: LUT / FF / DSP / BRAM per FPGA family
without running yosys.

``benchmarks/bench_synth.py`` synthesises every RTL unit at a grid of specs
(``synth_xilinx`` for 7-series and UltraScale+, plus a generic gate count) and
writes the versioned table ``approx/data/cost_table.json``: the measured rows and,
fitted to them, one non-negative linear model per (unit, family, resource) over
the spec's :func:`features` (from :meth:`ApproxSpec.cost`: multiplier operand
products, DSP tiles, table bits, adder bits, divider bits, I/O width, row buffer
bits; each model keeps at most three of them, chosen by leave-one-out).
:func:`estimate` evaluates it; methods without an RTL unit (the hls4ml baselines)
use the pooled model of their operator's units, marked ``"pooled"``.
Fit error against yosys on held-out specs (leave-one-out) is in the table
(``"loo"``) and in ``benchmarks/results/synth.md``.

These are yosys's mappings, not Vivado's; ``hwapprox rtl synth`` still runs
yosys for exact numbers of one spec.

The table's ``"fmax"`` section (``benchmarks/bench_pnr.py``) holds each RTL unit's
post-route Fmax on ECP5-85k at its default spec and at two format variants (a
narrower and a wider output), measured with nextpnr (:mod:`hwapprox.rtl_sim.pnr`).
:func:`fmax` reads it (any other spec gets the nearest measured point's figure,
marked as an estimate); :func:`meets_clock` is the filter behind the ``--clock``
option of sweep plots, ``tune`` and ``validate --budget``. The clock is the ECP5's
(the open flow's device): a Xilinx part of the table's families runs the same RTL
faster, so a clock met here is a conservative claim there.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx.base import ApproxSpec, Operator, SpecError

__all__ = [
    "FAMILIES",
    "FEATURES",
    "RESOURCES",
    "Estimate",
    "estimate",
    "features",
    "fit_table",
    "fmax",
    "load_table",
    "meets_clock",
    "nnls",
    "rank_score",
    "unit_key",
]

#: resources estimated per family
RESOURCES = ("LUT", "FF", "DSP", "BRAM")
#: families of the table (CLI names, as ``rtl_sim.synth.FAMILIES``)
FAMILIES = ("7series", "ultrascale+")
#: feature names (see :func:`features`)
FEATURES = ("one", "mult", "dsp_tiles", "table", "add", "div", "io", "buf")
#: LUT-equivalents of one FF, DSP and BRAM36 for ranking: the LUT / resource ratios
#: of a mid-size part of each family (xc7z020: 53,200 LUT, 106,400 FF, 220 DSP, 140
#: BRAM36; xczu3eg: 70,560 LUT, 141,120 FF, 360 DSP, 216 BRAM36)
RANK_WEIGHTS = {
    "7series": {"LUT": 1.0, "FF": 0.5, "DSP": 53200 / 220, "BRAM": 53200 / 140},
    "ultrascale+": {"LUT": 1.0, "FF": 0.5, "DSP": 70560 / 360, "BRAM": 70560 / 216},
}

_ROWWISE = (Operator.SOFTMAX, Operator.LAYERNORM)


def unit_key(spec: ApproxSpec) -> str:
    """The cost table's unit of ``spec``: ``"op/method"``, or ``"op/method[variant]"`` for
    a spec whose ``cost_variant`` names structurally different hardware (the online
    softmax's LUT exp + PWL reciprocal datapath), fitted as a unit of its own."""
    base = f"{spec.operator.value}/{spec.method}"
    variant = getattr(spec, "cost_variant", "")
    return f"{base}[{variant}]" if variant else base


def features(spec: ApproxSpec, row_max: int = 64) -> dict[str, float]:
    """The model's inputs for ``spec`` (row-wise units with a row buffer of ``row_max``):

    ``mult`` = Σ a·b/100 over the multipliers' operand widths (``cost().mult_bits``),
    ``dsp_tiles`` = Σ ceil(a/24)·ceil(b/17) over multipliers of at least 10 x 10 bits
    (DSP48 tiles), ``table`` = table bits/1000, ``add`` = adders x widest bits / 10,
    ``div`` = dividers x widest bits² / 100, ``io`` = in + out width, ``buf`` = the
    row buffer, row_max x input width / 1000 (0 for elementwise units)."""
    c = spec.cost()
    pairs = list(c.mult_bits) or [(c.widest_bits, c.widest_bits)] * c.multipliers
    tiles = sum(math.ceil(a / 24) * math.ceil(b / 17) for a, b in pairs if min(a, b) >= 10)
    rowwise = spec.operator in _ROWWISE
    return {
        "one": 1.0,
        "mult": sum(a * b for a, b in pairs) / 100.0,
        "dsp_tiles": float(tiles),
        "table": c.table_bits / 1000.0,
        "add": c.adders * c.widest_bits / 10.0,
        "div": c.dividers * c.widest_bits**2 / 100.0,
        "io": float(spec.in_fmt.width + spec.out_fmt.width),
        "buf": row_max * spec.in_fmt.width / 1000.0 if rowwise else 0.0,
    }


def nnls(a: npt.ArrayLike, b: npt.ArrayLike, max_iter: int = 500) -> npt.NDArray[np.float64]:
    """Non-negative least squares ``min ||A x - b||, x >= 0`` (Lawson & Hanson's active
    set method)."""
    am = np.asarray(a, dtype=np.float64)
    bv = np.asarray(b, dtype=np.float64)
    n = am.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, bool)
    w = am.T @ (bv - am @ x)
    tol = 1e-10 * max(1.0, float(np.abs(am).max()) * max(1.0, float(np.abs(bv).max())))
    for _ in range(max_iter):
        if passive.all() or w[~passive].max(initial=-np.inf) <= tol:
            break
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(am[:, passive], bv, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            passive &= x > 1e-12
            x[~passive] = 0.0
        w = am.T @ (bv - am @ x)
    return x


@dataclass(frozen=True)
class Estimate:
    """Resources of one unit on one family; ``source``: ``"fit"`` (its own unit's model),
    ``"pooled"`` (the family's model over all units: a method without an RTL unit) or
    ``"proxy"`` (no table entry: LUT = ``cost().score()``, others unknown)."""

    LUT: float
    FF: float | None
    DSP: float | None
    BRAM: float | None
    family: str
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "LUT": round(self.LUT),
            "FF": None if self.FF is None else round(self.FF),
            "DSP": None if self.DSP is None else round(self.DSP),
            "BRAM": None if self.BRAM is None else round(self.BRAM, 1),
            "family": self.family,
            "source": self.source,
        }


#: at most this many features besides ``one`` per model (chosen by leave-one-out)
MAX_TERMS = 3


def _loo_errors(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> list[float]:
    """Relative errors ``|pred - b| / max(b, 1)`` of each row predicted by the fit on the
    others."""
    errs = []
    for i in range(len(b)):
        keep = np.arange(len(b)) != i
        pred = float(a[i] @ nnls(a[keep], b[keep]))
        errs.append(abs(pred - b[i]) / max(b[i], 1.0))
    return errs


def _subsets(k: int) -> list[tuple[int, ...]]:
    """Column subsets: ``one`` (column 0) plus up to MAX_TERMS of the others."""
    import itertools

    rest = range(1, k)
    return [(0, *c) for r in range(MAX_TERMS + 1) for c in itertools.combinations(rest, r)]


def _select(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> tuple[int, ...]:
    """The feature subset with the smallest mean leave-one-out error (ties: fewer terms)."""
    best: tuple[float, int, tuple[int, ...]] | None = None
    for cols in _subsets(a.shape[1]):
        if np.allclose(a[:, cols[1:]], 0.0) and len(cols) > 1:
            continue
        err = float(np.mean(_loo_errors(a[:, cols], b)))
        key = (round(err, 9), len(cols), cols)
        if best is None or key < best:
            best = key
    assert best is not None
    return best[2]


def _fit_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One model per resource over ``rows`` (each with ``features`` and the resources).

    With few specs per unit and eight features a full fit over-fits, so each model
    keeps ``one`` and at most :data:`MAX_TERMS` features, the subset with the smallest
    leave-one-out error. The error reported (``loo``) is *nested*: each held-out spec
    is predicted by a model whose subset was also selected without it, so it is an
    honest held-out error; ``abs_mean`` is the mean absolute error in resource units
    (relative errors of a resource that is near 0 say little)."""
    a = np.array([[r["features"][f] for f in FEATURES] for r in rows])
    out: dict[str, Any] = {"n": len(rows), "coef": {}, "terms": {}, "loo": {}}
    for res in RESOURCES:
        b = np.array([float(r[res]) for r in rows])
        cols = _select(a, b) if len(rows) >= 3 else tuple(range(a.shape[1]))
        coef = np.zeros(a.shape[1])
        coef[list(cols)] = nnls(a[:, cols], b)
        out["coef"][res] = [round(float(v), 6) for v in coef]
        out["terms"][res] = [FEATURES[c] for c in cols]
        rel, absd = [], []
        if len(rows) >= 4:
            for i in range(len(rows)):
                keep = np.arange(len(rows)) != i
                sub = _select(a[keep], b[keep])
                pred = float(a[i, sub] @ nnls(a[keep][:, sub], b[keep]))
                rel.append(abs(pred - b[i]) / max(b[i], 1.0))
                absd.append(abs(pred - b[i]))
        out["loo"][res] = {
            "mean": round(float(np.mean(rel)), 4) if rel else None,
            "max": round(float(np.max(rel)), 4) if rel else None,
            "abs_mean": round(float(np.mean(absd)), 2) if absd else None,
        }
    return out


def fit_table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Models for every (unit, family) of the measured ``rows`` (as the table stores
    them: ``unit`` = ``"op/method"``, ``family``, ``features``, resources) and a pooled
    model per operator and family (``"softmax/*@7series"``: for methods without an
    RTL unit)."""
    models: dict[str, Any] = {}
    for fam in sorted({r["family"] for r in rows}):
        fam_rows = [r for r in rows if r["family"] == fam and r.get("LUT") is not None]
        for unit in sorted({r["unit"] for r in fam_rows}):
            models[f"{unit}@{fam}"] = _fit_rows([r for r in fam_rows if r["unit"] == unit])
        for op in sorted({r["unit"].split("/")[0] for r in fam_rows}):
            pool = [r for r in fam_rows if r["unit"].startswith(op + "/")]
            models[f"{op}/*@{fam}"] = _fit_rows(pool)
    return models


@functools.cache
def load_table() -> dict[str, Any]:
    """The shipped cost table (``approx/data/cost_table.json``); empty models when the
    package has none."""
    try:
        text = resources.files("hwapprox.approx").joinpath("data/cost_table.json").read_text()
    except FileNotFoundError:
        return {"version": 0, "rows": [], "models": {}}
    return json.loads(text)


def _hls_only(op: Operator) -> tuple[str, ...]:
    """Methods with an HLS unit but no RTL unit (the hls4ml baselines): the pooled model
    stands in for their yosys numbers; any other method without a model gets the proxy."""
    from hwapprox.approx.registry import IMPLEMENTED

    rtl = set(IMPLEMENTED["rtl"].get(op, ()))
    return tuple(m for m in IMPLEMENTED["hls"].get(op, ()) if m not in rtl)


def estimate(spec: ApproxSpec, family: str = "7series", row_max: int = 64) -> Estimate:
    """LUT / FF / DSP / BRAM of ``spec``'s unit on ``family`` from the fitted table."""
    if family not in FAMILIES:
        raise SpecError(f"unknown family {family!r}; the cost table has {', '.join(FAMILIES)}")
    models = load_table().get("models", {})
    source = "fit"
    model = models.get(f"{unit_key(spec)}@{family}") or models.get(
        f"{spec.operator.value}/{spec.method}@{family}"
    )
    if model is None and spec.method in _hls_only(spec.operator):
        model, source = models.get(f"{spec.operator.value}/*@{family}"), "pooled"
    if model is None:
        return Estimate(spec.cost().score(), None, None, None, family, "proxy")
    f = features(spec, row_max)
    x = np.array([f[k] for k in FEATURES])
    vals = {res: max(0.0, float(x @ np.array(model["coef"][res]))) for res in RESOURCES}
    return Estimate(vals["LUT"], vals["FF"], vals["DSP"], vals["BRAM"], family, source)


def rank_score(spec: ApproxSpec, family: str = "7series", row_max: int = 64) -> float:
    """One scalar for ranking candidates: the estimate in LUT-equivalents of ``family``'s
    reference part (:data:`RANK_WEIGHTS`); the proxy score when the table has nothing."""
    e = estimate(spec, family, row_max)
    if e.source == "proxy":
        return e.LUT
    w = RANK_WEIGHTS[family]
    return sum(w[r] * float(getattr(e, r) or 0.0) for r in RESOURCES)


def _fmax_points(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The measured points of one unit's ``"fmax"`` row: its default spec and the
    format variants (``"variants"``), each with ``spec``, ``fmax_mhz`` and ``label``."""
    pts = [{"label": "default", **{k: v for k, v in row.items() if k != "variants"}}]
    return pts + list(row.get("variants", ()))


def _feature_distance(a: dict[str, float], b: dict[str, float]) -> float:
    """Distance between two specs' :func:`features`: Σ |log(1 + a) - log(1 + b)|, so
    a doubling counts the same at any size."""
    return sum(abs(math.log1p(a[k]) - math.log1p(b[k])) for k in FEATURES if k != "one")


@functools.cache
def _point_features(config_json: str) -> dict[str, float] | None:
    """:func:`features` of a measured point's spec (its config as canonical JSON),
    computed once per process; None for a config the current spec class refuses."""
    from hwapprox.approx.registry import spec_from_config

    try:
        return features(spec_from_config(json.loads(config_json)))
    except SpecError:
        return None


def fmax(spec: ApproxSpec) -> dict[str, Any] | None:
    """The post-route Fmax of ``spec``'s RTL unit on ECP5-85k (the table's ``"fmax"``
    section): ``{"fmax_mhz", "exact", "basis", "device", "tools"}``.

    ``exact`` is true when ``spec`` is one of the specs that were placed and routed
    (the unit's default and its format variants, ``bench_pnr.py --variants``); otherwise
    the figure is an *estimate*: the measured point nearest to ``spec`` in the cost
    features (:func:`features`, log-scaled), named in ``basis`` (its label, e.g.
    ``"default"`` or ``"out 12 bits"``). None when the unit was never measured (no RTL
    unit -- the hls4ml baselines -- or a table without the section)."""
    sec = load_table().get("fmax") or {}
    row = sec.get("units", {}).get(f"{spec.operator.value}/{spec.method}")
    if row is None:
        return None
    points = _fmax_points(row)
    key = json.dumps(spec.to_config(), sort_keys=True)
    hit = next((p for p in points if json.dumps(p["spec"], sort_keys=True) == key), None)
    exact = hit is not None
    if hit is None:
        mine = features(spec)

        def dist(p: dict[str, Any]) -> float:
            theirs = _point_features(json.dumps(p["spec"], sort_keys=True))
            return math.inf if theirs is None else _feature_distance(mine, theirs)

        hit = min(points, key=dist)
    return {
        "fmax_mhz": hit["fmax_mhz"],
        "exact": exact,
        "basis": hit["label"],
        "device": sec.get("device"),
        "tools": sec.get("tools"),
    }


def meets_clock(spec: ApproxSpec, clock_mhz: float | None) -> tuple[bool, str]:
    """Whether ``spec``'s unit reaches ``clock_mhz`` post-route (:func:`fmax`), and why
    not: ``(True, "")`` when no clock is asked; a spec with no measured RTL unit does
    not meet a clock (nothing proves it does)."""
    if clock_mhz is None:
        return True, ""
    f = fmax(spec)
    if f is None:
        return False, f"no post-route Fmax for {spec.operator.value}/{spec.method} (no RTL unit)"
    if f["fmax_mhz"] < clock_mhz:
        how = "measured" if f["exact"] else f"estimated from its {f['basis']} spec"
        return False, f"Fmax {f['fmax_mhz']:.1f} MHz on ECP5-85k ({how}) < {clock_mhz:g} MHz"
    return True, ""
