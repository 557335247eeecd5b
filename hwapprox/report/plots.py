"""Sweep plots (matplotlib, Agg canvas, PNG and SVG).

Methods get distinct markers and line styles (hollow markers), so methods
with identical errors remain distinguishable.

* :func:`plot_error_vs_width` -- per operator, one line per method: for each
  output bit-width the *best* spec of that method (smallest error over the
  other swept fields), where a spec's error is its *worst* over the input
  sets. Log y axis.
* :func:`plot_pareto` -- per operator, every spec as a point (cost vs worst
  error over the input sets), coloured by method, with the Pareto front (no
  spec both cheaper and more accurate) drawn as a step line. The cost is the
  sweep's ``cost_score`` (the yosys-fitted estimate of
  :mod:`hwapprox.approx.costmodel` in LUT-equivalents of the grid's family),
  or its ``LUT`` / ``DSP`` part (``pareto_lut_*``, ``pareto_dsp_*``).
  With a target clock (``clock_mhz``, the sweep's ``--clock``) the plot gains
  the Fmax axis: specs whose unit reaches the clock post-route on ECP5-85k
  (:func:`hwapprox.approx.costmodel.fmax`, measured or estimated from the nearest
  measured format) are filled, the others hollow, and the solid front is the
  one *at* that clock; the front over all specs is dashed.

Both read sweep records (``results.jsonl``) and return the files written.
Figures are built with :class:`matplotlib.figure.Figure` directly (no pyplot
state, no display needed).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hwapprox.approx.sweep import aggregate_by_spec, pareto_front

__all__ = ["plot_error_vs_width", "plot_pareto", "plot_sweep"]

_LABELS = {
    "max_abs": "max |error|",
    "mean_abs": "mean |error|",
    "rms": "RMS error",
    "max_lsb": "max error (output LSBs)",
    "kl": "KL divergence (nats)",
}


#: markers and line styles cycled per method, so series that coincide stay visible
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_LINES = ("-", "--", "-.", ":")


def _figure() -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2))
    fig.subplots_adjust(left=0.13, right=0.97, bottom=0.12, top=0.92)
    return fig, fig.add_subplot()


def _save(fig: Any, out_dir: Path, stem: str) -> list[Path]:
    paths = []
    for ext in ("png", "svg"):
        p = out_dir / f"{stem}.{ext}"
        fig.savefig(p, dpi=120)
        paths.append(p)
    return paths


def _positive(v: float) -> float:
    # log axes: an exact zero error is drawn at a tiny floor
    return v if v > 0 else 1e-12


def plot_error_vs_width(
    records: Iterable[dict[str, Any]], out_dir: str | Path, metric: str = "max_abs"
) -> list[Path]:
    """``error_vs_width_<operator>.{png,svg}`` (see the module docstring)."""
    from matplotlib.ticker import MaxNLocator

    out = Path(out_dir)
    specs = aggregate_by_spec(records, metric)
    by_op: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for s in specs:
        w = s["out_width"]
        if w is None:
            continue
        cur = by_op[s["operator"]][s["method"]]
        cur[int(w)] = min(cur.get(int(w), float("inf")), s["error"])
    written: list[Path] = []
    for op, methods in sorted(by_op.items()):
        fig, ax = _figure()
        for i, (method, pts) in enumerate(sorted(methods.items())):
            ws = sorted(pts)
            ax.plot(
                ws,
                [_positive(pts[w]) for w in ws],
                marker=_MARKERS[i % len(_MARKERS)],
                linestyle=_LINES[i % len(_LINES)],
                markerfacecolor="none",
                label=method,
            )
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("output bit-width W")
        ax.set_ylabel(_LABELS.get(metric, metric) + " (worst input set)")
        ax.set_title(f"{op}: error vs output width (best spec per width)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
        written += _save(fig, out, f"error_vs_width_{op}")
    return written


_COST_AXES = {
    "cost_score": ("pareto", "estimated cost (LUT-equivalents, yosys-fitted cost model)"),
    "LUT": ("pareto_lut", "LUTs (yosys-fitted estimate)"),
    "DSP": ("pareto_dsp", "DSP48s (yosys-fitted estimate)"),
}


def _spec_fmax(s: dict[str, Any]) -> float | None:
    """A spec's post-route Fmax: the sweep record's, or looked up for records written
    before sweeps recorded it."""
    if s.get("fmax_mhz") is not None:
        return float(s["fmax_mhz"])
    from hwapprox.approx.base import SpecError
    from hwapprox.approx.costmodel import fmax
    from hwapprox.approx.registry import spec_from_config

    try:
        f = fmax(spec_from_config(s["config"]))
    except SpecError:
        return None
    return None if f is None else float(f["fmax_mhz"])


def plot_pareto(
    records: Iterable[dict[str, Any]],
    out_dir: str | Path,
    metric: str = "max_abs",
    cost: str = "cost_score",
    clock_mhz: float | None = None,
) -> list[Path]:
    """``pareto_<operator>.{png,svg}`` (``cost``: ``cost_score``, ``LUT`` or ``DSP``;
    ``clock_mhz``: mark the specs that reach it and draw the front at it; see the
    module docstring); specs without that cost are left out."""
    stem, xlabel = _COST_AXES[cost]
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    out = Path(out_dir)
    specs = [
        {**s, "cost_score": float(s[cost])}
        for s in aggregate_by_spec(records, metric)
        if s.get(cost) is not None
    ]
    by_op: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in specs:
        by_op[s["operator"]].append(s)
    written: list[Path] = []
    for op, items in sorted(by_op.items()):
        fig, ax = _figure()
        by_method: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for s in items:
            by_method[s["method"]].append(s)
        for s in items:
            s["meets"] = clock_mhz is None or (_spec_fmax(s) or 0.0) >= clock_mhz
        for i, (method, ss) in enumerate(sorted(by_method.items())):
            marker, color = _MARKERS[i % len(_MARKERS)], f"C{i % 10}"
            fast = [s for s in ss if s["meets"]]
            slow = [s for s in ss if not s["meets"]]
            if fast:
                ax.scatter(
                    [s["cost_score"] for s in fast],
                    [_positive(s["error"]) for s in fast],
                    marker=marker,
                    color=color,
                    label=method,
                    s=18,
                    alpha=0.8,
                )
            if slow:
                ax.scatter(
                    [s["cost_score"] for s in slow],
                    [_positive(s["error"]) for s in slow],
                    marker=marker,
                    facecolors="none",
                    edgecolors=color,
                    label=None if fast else f"{method} (< {clock_mhz:g} MHz)",
                    s=18,
                    alpha=0.7,
                )
        front = pareto_front((s["cost_score"], s["error"], s) for s in items if s["meets"])
        if front:
            ax.step(
                [f[0] for f in front],
                [_positive(f[1]) for f in front],
                where="post",
                color="black",
                linewidth=1.0,
                label="Pareto front" if clock_mhz is None else f"front at ≥ {clock_mhz:g} MHz",
            )
        if clock_mhz is not None:
            every = pareto_front((s["cost_score"], s["error"], s) for s in items)
            ax.step(
                [f[0] for f in every],
                [_positive(f[1]) for f in every],
                where="post",
                color="grey",
                linestyle="--",
                linewidth=1.0,
                label="front at any clock (hollow: misses it)",
            )
        ax.set_xscale("log" if min(s["cost_score"] for s in items) > 0 else "symlog")
        costs = [s["cost_score"] for s in items]
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
        if min(costs) > 0 and max(costs) < 10 * min(costs):
            ax.xaxis.set_minor_formatter(FormatStrFormatter("%g"))  # < 1 decade: label minors
        else:
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(_LABELS.get(metric, metric) + " (worst input set)")
        title = f"{op}: error vs {cost if cost != 'cost_score' else 'cost'}"
        if clock_mhz is not None:
            title += f" at ≥ {clock_mhz:g} MHz (ECP5-85k post-route)"
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
        written += _save(fig, out, f"{stem}_{op}")
    return written


def plot_sweep(
    records: Iterable[dict[str, Any]],
    out_dir: str | Path,
    metric: str = "max_abs",
    clock_mhz: float | None = None,
) -> list[Path]:
    """Both plots; returns every file written."""
    recs = list(records)
    out = plot_error_vs_width(recs, out_dir, metric)
    for cost in _COST_AXES:
        out += plot_pareto(recs, out_dir, metric, cost, clock_mhz)
    return out
