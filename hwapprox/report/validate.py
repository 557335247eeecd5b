"""Tables, JSON and a plot of a :class:`~hwapprox.export.validate.ValidationResult`."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np

from hwapprox.approx.costmodel import rank_score
from hwapprox.approx.paths import unwritable
from hwapprox.export.errors import ExportError
from hwapprox.export.validate import ValidationResult

__all__ = ["format_report", "prepare_outdir", "write_report"]


def _g(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}g}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def _sat(c: dict[str, int] | None, side: str) -> str:
    if not c:
        return "-"
    return str(c[side]) if c[side] else "0"


def short_spec(spec: Any) -> str:
    """``method in=... out=...`` plus the fields that differ from the method's defaults
    (fields the spec derived from others, e.g. the online softmax's internal formats,
    are defaults)."""
    import dataclasses

    parts = [f"{spec.operator}/{spec.method}", f"in={spec.in_fmt}", f"out={spec.out_fmt}"]
    derived = getattr(spec, "_derived", frozenset())
    for f in dataclasses.fields(spec):
        if f.name in ("in_fmt", "out_fmt", "eps", "form") or f.name in derived:
            continue
        v = getattr(spec, f.name)
        if f.default is not dataclasses.MISSING and v != f.default:
            parts.append(f"{f.name}={v}")
    return " ".join(parts)


def _cos(v: float | None) -> str:
    return "-" if v is None else f"{v:.6f}"


def format_report(res: ValidationResult) -> str:
    """Warnings, per-site table, masks, end-to-end table, tuning and timing, as text."""
    rows = []
    for s in res.imported.sites:
        spec = res.specs.get(s.name)
        st = res.stats.get(s.name)
        err = res.site_errors.get(s.name) or {}
        sat = res.saturation.get(s.name)
        rows.append(
            [
                s.name,
                f"{s.kind}/{s.pattern}",
                "float" if spec is None else spec.method,
                "-" if spec is None else str(spec.in_fmt),
                "-" if spec is None else str(spec.out_fmt),
                "-" if st is None else f"[{st.min:.3g}, {st.max:.3g}]",
                "-" if st is None or not st.masked else str(st.masked),
                f"{_sat(sat, 'in')}/{_sat(sat, 'out')}",
                _g(err.get("max_abs")),
                _g(err.get("mean_abs")),
                _g(err.get("max_lsb")),
                _g(err.get("quant_max_lsb")),
                _g(err.get("approx_max_lsb")),
                _g(err.get("rel_rms")),
                _g(err.get("row_sum_err")),
                "-" if spec is None else f"{rank_score(spec):.0f}",
            ]
        )
    n_float = sum(res.specs.get(s.name) is None for s in res.imported.sites)
    parts = [
        f"model: {res.model_label or '(in memory)'}; {len(res.imported.sites)} sites, "
        f"{len(res.selected)} selected, {n_float} float; {res.n_samples} sample"
        f"{'' if res.n_samples == 1 else 's'}; input range policy {res.range_stat}",
    ]
    if res.warnings:
        parts += ["", f"WARNINGS ({len(res.warnings)}):"]
        parts += [f"  ! {w}" for w in res.warnings]
    if res.notes:
        parts += ["", "Notes:"]
        parts += [f"  - {n}" for n in res.notes]
    parts += [
        "",
        "Per site (spec on the float model's site input vs its float site output, so "
        "max|err| and max LSB include the input's quantisation; the two causes apart, in "
        "output LSBs: 'LSB input q.' = the exact function of the quantised input vs the "
        "float output (fix: the input format), 'LSB approx.' = the spec vs that exact "
        "function (fix: the method or its fields; what 'hwapprox eval' and the README's "
        "accuracy tables measure); sat = saturated inputs/outputs):",
        _table(
            [
                "site",
                "operator",
                "method",
                "in_fmt",
                "out_fmt",
                "input range",
                "masked",
                "sat in/out",
                "max|err|",
                "mean|err|",
                "max LSB vs float",
                "LSB input q.",
                "LSB approx.",
                "rel rms",
                "row Σ err",
                "cost",
            ],
            rows,
        ),
    ]
    masked = [s for s in res.imported.sites if s.mask is not None]
    if masked:
        parts += ["", "Attention masks (found in the graph; masked elements get probability 0):"]
        for s in masked:
            st = res.stats.get(s.name)
            extra = ""
            if st is not None and st.rows:
                extra = f" [{st.masked} elements masked, {st.masked_rows}/{st.rows} rows fully]"
            roles = res.trace.mask_roles.get(s.name, s.mask.roles)
            parts.append(f"  {s.name}: {'+'.join(roles)}: {s.mask.describe()}{extra}")
    if res.imported.unsupported:
        parts += ["", "Found, not emulated (no operator in this build; they run float):"]
        parts += [f"  {s.name}: {s.kind}/{s.pattern} {s.params}" for s in res.imported.unsupported]
    vrows = [
        [
            s.name,
            _g(err.get("unified_max")),
            _g(err.get("fallback_rate")),
            _g(err.get("skip_threshold")),
            _g(err.get("skip_fraction")),
            _g(err.get("skip_max_abs")),
        ]
        for s in res.imported.sites
        for err in [res.site_errors.get(s.name) or {}]
        if err.get("fallback_rate") is not None or err.get("skip_fraction") is not None
    ]
    if vrows:
        parts += [
            "",
            "Softmax variants (unified max φ: rows that fall back to the exact path; "
            "threshold skipping τ: skipped elements and the error vs no skipping):",
            _table(["site", "φ", "fallback rate", "τ", "skip fraction", "skip max|err|"], vrows),
        ]
    if res.imported.skipped:
        parts += ["", "Skipped candidates:"]
        parts += [f"  {k}: {v}" for k, v in res.imported.skipped.items()]
    e = res.end_to_end
    erows = [
        [
            name,
            m.get("kind", "-"),
            _g(m["max_abs"]),
            _g(m["mean_abs"]),
            _g(m["ref_absmax"]),
            _cos(m["cosine_mean"]),
            _cos(m["cosine_min"]),
            _cos(m.get("token_cosine_min")),
            _cos(m.get("pooled_cosine_min")),
            _g(m["top1"], 4),
        ]
        for name, m in e["outputs"].items()
    ]
    parts += [
        "",
        "End to end (all selected sites approximated vs the float model; padded tokens "
        "left out; cos = per sample, token = per token, pooled = mean-pooled embedding):",
        _table(
            [
                "output",
                "kind",
                "max|err|",
                "mean|err|",
                "max|ref|",
                "cos mean",
                "cos min",
                "token min",
                "pooled min",
                "top-1",
            ],
            erows,
        ),
    ]
    if res.budget is not None:
        met = res.budget.meets(e)
        clock = next((t["clock_mhz"] for t in res.tuning if t.get("clock_mhz")), None)
        at = "" if clock is None else f" with every unit at >= {clock:g} MHz (ECP5-85k post-route)"
        parts += ["", f"Budget {res.budget.describe()}{at}: {'met' if met else 'NOT met'}"]
        for t in res.tuning:
            spec = res.specs.get(t["site"])
            chosen = short_spec(spec) if spec is not None else "float (no candidate met the budget)"
            cost = "" if t.get("cost_score") is None else f", cost {t['cost_score']:g}"
            if t.get("fmax_mhz") is not None:
                cost += f", Fmax {t['fmax_mhz']:.0f} MHz"
            parts.append(
                f"  {t['site']}: {chosen}{cost} ({len(t['evaluated'])} of "
                f"{t.get('front', '?')} front candidates evaluated end to end, "
                f"{t.get('candidates', '?')} screened)"
            )
    if res.fused is not None:
        parts += ["", "Fused attention (softmax + P·V as one single-pass row per query):"]
        for name, info in res.fused["sites"].items():
            if info["fused"]:
                parts.append(
                    f"  {name}: fused with P·V (V {info['v']}: {info['v_fmt']}, accumulators "
                    f"{info['acc_fmt']}, context {info['out_fmt']})"
                )
            else:
                parts.append(f"  {name}: not fused ({info['reason']})")
        fe = res.fused["end_to_end"]
        if fe is not None:
            for name, m in fe["outputs"].items():
                two = e["outputs"][name]
                parts.append(
                    f"  end to end, output '{name}': max|err| {_g(m['max_abs'])} (two-pass "
                    f"{_g(two['max_abs'])}), cos min {_cos(m['cosine_min'])} (two-pass "
                    f"{_cos(two['cosine_min'])}), token min {_cos(m.get('token_cosine_min'))} "
                    f"(two-pass {_cos(two.get('token_cosine_min'))})"
                )
    t = res.timing
    parts += [
        "",
        f"Time: float onnxruntime {t['float_onnxruntime'] * 1e3:.1f} ms (the calibration "
        f"run); emulation "
        f"{t['emulation'] * 1e3:.1f} ms ({t['emulation_sessions'] * 1e3:.1f} ms in "
        f"{int(t['sessions'])} sessions, {t['approx_models'] * 1e3:.1f} ms in approx models"
        f"{'; the per-site reports ran beside it' if t.get('reports_beside') else ''})",
    ]
    return "\n".join(parts)


def prepare_outdir(path: str | Path, force: bool = False, *, create: bool = True) -> Path:
    """Create ``path``; refuse an existing non-empty directory unless ``force``, and a
    path that cannot be written. ``create=False`` checks only (before the work: a run
    that fails leaves no empty directory behind)."""
    p = Path(path)
    why = unwritable(p)
    if why is not None:
        raise ExportError(why)
    if p.is_dir() and any(p.iterdir()) and not force:
        raise ExportError(
            f"output directory {str(p)!r} is not empty; choose another or pass --force to "
            f"overwrite its report files"
        )
    if create:
        p.mkdir(parents=True, exist_ok=True)
    return p


#: Bar colour per operator in ``validate.png`` (others take the next free colour).
_OP_COLOURS = {
    "softmax": "#1f77b4",
    "gelu": "#ff7f0e",
    "layernorm": "#2ca02c",
    "sigmoid_attention": "#9467bd",
    "relu_attention": "#8c564b",
}


def _op_name(site: Any) -> str:
    op = getattr(site, "operator", "?")
    return str(getattr(op, "value", op))


def _short_name(name: str, limit: int = 48) -> str:
    """``name`` within ``limit`` characters: whole path components (``/``, else ``.``)
    dropped from the middle (the most components kept, the head first: it carries the
    layer index); else cut in the middle."""
    if len(name) <= limit:
        return name
    sep = "/" if "/" in name else "."
    parts = name.split(sep)
    best: tuple[int, int, str] | None = None
    for h in range(1, len(parts)):
        for t in range(1, len(parts) - h):
            cand = sep.join([*parts[:h], "\u2026", *parts[-t:]])
            if len(cand) <= limit and (best is None or (h + t, h) > best[:2]):
                best = (h + t, h, cand)
    if best is not None:
        return best[2]
    return name[: limit // 2 - 1] + "\u2026" + name[-(limit - limit // 2) :]


def preload_plotting() -> threading.Thread:
    """Import what :func:`_plot` needs (matplotlib's figure, Agg backend and font
    manager, ~0.4-0.6 s, longer on a machine whose font cache is not built yet) on a
    daemon thread, so that the import overlaps work that releases the GIL (onnxruntime,
    the compiled kernels) instead of following it. Start it before a long run whose
    report will be plotted; not before forking worker processes (a fork while the
    thread holds an import lock would leave the child waiting on it)."""

    def load() -> None:
        import matplotlib.backends.backend_agg
        import matplotlib.figure  # noqa: F401

    th = threading.Thread(target=load, name="hwapprox-preload-matplotlib", daemon=True)
    th.start()
    return th


def _plot(res: ValidationResult, path: Path) -> None:
    """``validate.png``: per-site error (one horizontal bar per selected site, the
    figure grows with their number) above the end-to-end error histogram."""
    import matplotlib
    from matplotlib.figure import Figure  # (no pyplot: no GUI backend, no global figures)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    sites = list(res.selected)
    n = max(len(sites), 1)
    imported = getattr(getattr(res, "imported", None), "sites", None)
    n_unselected = len(imported) - len(sites) if imported is not None else 0
    row_h = 0.24 if n <= 40 else 0.2
    top_h = max(2.2, row_h * n + 1.3)
    fig = Figure(figsize=(10, top_h + 3.4), layout="constrained")
    ax1, ax2 = fig.subplots(2, 1, height_ratios=[top_h, 3.4])
    # -- per site: max |err| bar coloured by operator, mean |err| marker ----------
    errs = {s.name: res.site_errors.get(s.name) for s in sites}
    pos = [
        v
        for e in errs.values()
        if e
        for v in (e.get("max_abs"), e.get("mean_abs"))
        if isinstance(v, float | int) and np.isfinite(v) and v > 0
    ]
    lo = 10 ** np.floor(np.log10(min(pos))) if pos else 1e-6
    hi = max(pos) * 6 if pos else 1.0  # room for the value labels
    colours = dict(_OP_COLOURS)
    spare = iter(matplotlib.rcParams["axes.prop_cycle"].by_key()["color"][3:])
    fs = 9 if n <= 40 else 8
    y = np.arange(len(sites))
    n_float = 0
    for i, s in enumerate(sites):
        op = _op_name(s)
        if op not in colours:
            colours[op] = next(spare, "#7f7f7f")
        e = errs[s.name]
        if not e:
            n_float += 1
            ax1.text(
                lo,
                i,
                "  float (not approximated)",
                va="center",
                fontsize=fs - 1,
                color="#666666",
                style="italic",
            )
            continue
        mx, mean = e.get("max_abs"), e.get("mean_abs")
        if mx is not None and mx > 0:
            ax1.barh(i, mx - lo, left=lo, height=0.7, color=colours[op])
            lsb = e.get("max_lsb")
            label = f" {mx:.2g}"
            if isinstance(lsb, float | int):
                label += f" ({lsb:.0f} LSB)" if lsb >= 100 else f" ({lsb:.3g} LSB)"
            ax1.text(mx, i, label, va="center", fontsize=fs - 1.5, color="#333333")
        else:
            ax1.text(lo, i, "  0 (exact)", va="center", fontsize=fs - 1, color="#333333")
        if mean is not None and mean > 0:
            ax1.plot([mean], [i], marker="D", ms=4, color="black", ls="none")
    ax1.set_xscale("log")
    ax1.set_xlim(lo, hi)
    ax1.set_ylim(len(sites) - 0.5, -0.5)  # graph order, top to bottom
    ax1.set_yticks(
        y,
        [_short_name(s.name) for s in sites],
        fontsize=fs,
    )
    ax1.grid(axis="x", which="major", alpha=0.3)
    ax1.set_xlabel("|spec(float site input) - float site output|", fontsize=9)
    note = []
    if n_float:
        note.append(f"{n_float} left float")
    if n_unselected > 0:
        note.append(f"{n_unselected} unselected site(s) not shown")
    ax1.set_title(
        f"Per-site error, {len(sites)} selected site(s)"
        + (f" ({'; '.join(note)})" if note else ""),
        fontsize=11,
    )
    ops_used = [o for o in colours if any(_op_name(s) == o for s in sites)]
    handles = [Patch(color=colours[o], label=f"{o}: max |err|") for o in ops_used]
    handles.append(Line2D([], [], marker="D", ms=4, color="black", ls="none", label="mean |err|"))
    ax1.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False
    )
    # -- end to end: histogram of the nonzero |differences| over every output ---------
    from hwapprox.export.metrics import _samples

    keep = None
    if res.token_mask_input is not None:
        keep = np.asarray(res.trace.feeds[res.token_mask_input]) != 0
    per_out = {}
    for k, r in res.trace.outputs.items():
        # Padded tokens never count: the same token selection as the metrics.
        ref, _ = _samples(np.asarray(r, dtype=np.float64), res.batch_axis, keep)
        got, _ = _samples(np.asarray(res.emulated[k], dtype=np.float64), res.batch_axis, keep)
        per_out[k] = np.concatenate(
            [np.abs(a - b).ravel() for a, b in zip(got, ref, strict=True)] or [np.empty(0)]
        )
    total = sum(d.size for d in per_out.values())
    n_zero = sum(int((d == 0).sum()) for d in per_out.values())
    n_bad = sum(int((~np.isfinite(d)).sum()) for d in per_out.values())
    # The axis spans the data, down to 1e-9 of the largest difference (values
    # below, e.g. float32 denormal-sized differences, are counted in the title).
    top = max((float(d[np.isfinite(d)].max(initial=0.0)) for d in per_out.values()), default=0.0)
    floor = top * 1e-9
    n_tiny = sum(int(((d > 0) & (d < floor)).sum()) for d in per_out.values())
    shown = {k: d[np.isfinite(d) & (d > 0) & (d >= floor)] for k, d in per_out.items()}
    allpos = np.concatenate([*shown.values(), np.empty(0)])
    if allpos.size:
        a, b = np.log10(allpos.min()), np.log10(allpos.max())
        if b - a < 1e-6:
            a, b = a - 0.5, b + 0.5
        bins = np.logspace(a, b, 41)
        data = [d for d in shown.values() if d.size]
        labels = [k for k, d in shown.items() if d.size]
        if len(data) > 1 and len(data) <= 8:
            ax2.hist(data, bins=bins, stacked=True, label=labels)
        else:
            ax2.hist(allpos, bins=bins, label="all outputs")
        mean = float(np.mean(np.concatenate([d[np.isfinite(d)] for d in per_out.values()])))
        ax2.axvline(allpos.max(), color="black", lw=1, ls="--", label=f"max {allpos.max():.3g}")
        if mean > 0:
            ax2.axvline(mean, color="black", lw=1, ls=":", label=f"mean {mean:.3g}")
        ax2.set_xscale("log")
        ax2.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    else:
        ax2.text(
            0.5,
            0.5,
            "no nonzero difference to plot",
            ha="center",
            va="center",
            transform=ax2.transAxes,
        )
    ax2.set_xlabel(
        "|emulated - float| per output value (log scale; exact zeros not shown)", fontsize=9
    )
    ax2.set_ylabel("count")
    extra = f"; {n_bad} non-finite" if n_bad else ""
    if n_tiny:
        extra += f"; {n_tiny} below {floor:.1g} not shown"
    if keep is not None:
        extra += "; padded tokens left out"
    ax2.set_title(
        f"End-to-end error distribution: {total} values\n{n_zero} exactly equal "
        f"({100 * n_zero / max(total, 1):.1f}%, not shown){extra}",
        fontsize=10,
    )
    fig.savefig(path, dpi=100)


def write_report(res: ValidationResult, outdir: str | Path, force: bool = False) -> dict[str, Path]:
    """Write ``report.txt``, ``validate.json``, ``config.yaml`` (resolved per-site
    specs), ``validate.png`` and ``report.html`` (all of it in one self-contained
    page, :func:`hwapprox.report.html.validate_html`) into ``outdir`` (see
    :func:`prepare_outdir`)."""
    import yaml

    from hwapprox.report.html import validate_html

    out = prepare_outdir(outdir, force)
    files = {
        "text": out / "report.txt",
        "json": out / "validate.json",
        "config": out / "config.yaml",
        "plot": out / "validate.png",
        "html": out / "report.html",
    }
    data = _jsonable(res.as_dict())
    files["text"].write_text(format_report(res) + "\n")
    files["json"].write_text(json.dumps(data, indent=2) + "\n")
    files["config"].write_text(yaml.safe_dump(res.config().to_dict(), sort_keys=False))
    _plot(res, files["plot"])
    if res.budget is not None and "budget_met" not in data:
        data = {**data, "budget_met": bool(res.budget.meets(res.end_to_end))}
    files["html"].write_text(
        validate_html(data, {"Per-site and end-to-end error": files["plot"]}), encoding="utf-8"
    )
    return files


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return str(v)
    return v
