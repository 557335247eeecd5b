"""Tables, JSON and a plot of a :class:`~hwapprox.export.validate.ValidationResult`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

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
                f"{s.operator}/{s.pattern}",
                "float" if spec is None else spec.method,
                "-" if spec is None else str(spec.in_fmt),
                "-" if spec is None else str(spec.out_fmt),
                "-" if st is None else f"[{st.min:.3g}, {st.max:.3g}]",
                "-" if st is None or not st.masked else str(st.masked),
                f"{_sat(sat, 'in')}/{_sat(sat, 'out')}",
                _g(err.get("max_abs")),
                _g(err.get("mean_abs")),
                _g(err.get("max_lsb")),
                _g(err.get("rel_rms")),
                _g(err.get("row_sum_err")),
                "-" if spec is None else f"{spec.cost().score():.0f}",
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
        "Per site (spec on the float model's site input vs its float site output; "
        "sat = saturated inputs/outputs):",
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
                "max LSB",
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
        parts += ["", f"Budget {res.budget.describe()}: {'met' if met else 'NOT met'}"]
        for t in res.tuning:
            cost = "" if t.get("cost_score") is None else f", cost {t['cost_score']:g}"
            parts.append(
                f"  {t['site']}: {t['chosen'] or 'float (no candidate met the budget)'}"
                f"{cost} ({len(t['evaluated'])} of {t.get('front', '?')} front candidates "
                f"evaluated end to end, {t.get('candidates', '?')} screened)"
            )
    t = res.timing
    parts += [
        "",
        f"Time: float onnxruntime {t['float_onnxruntime'] * 1e3:.1f} ms; emulation "
        f"{t['emulation'] * 1e3:.1f} ms ({t['emulation_sessions'] * 1e3:.1f} ms in "
        f"{int(t['sessions'])} sessions, {t['approx_models'] * 1e3:.1f} ms in approx models)",
    ]
    return "\n".join(parts)


def prepare_outdir(path: str | Path, force: bool = False) -> Path:
    """Create ``path``; refuse an existing non-empty directory unless ``force``."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ExportError(f"output path {str(p)!r} exists and is not a directory")
    if p.is_dir() and any(p.iterdir()) and not force:
        raise ExportError(
            f"output directory {str(p)!r} is not empty; choose another or pass --force to "
            f"overwrite its report files"
        )
    p.mkdir(parents=True, exist_ok=True)
    return p


def _plot(res: ValidationResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    names = [s.name for s in res.selected if s.name in res.site_errors]
    vals = [max(res.site_errors[n]["max_abs"], 1e-12) for n in names]
    means = [max(res.site_errors[n]["mean_abs"], 1e-12) for n in names]
    x = np.arange(len(names))
    ax1.bar(x - 0.2, vals, 0.4, label="max |err|")
    ax1.bar(x + 0.2, means, 0.4, label="mean |err|")
    ax1.set_xticks(x, names, rotation=60, ha="right", fontsize=7)
    ax1.set_yscale("log")
    ax1.set_title("Per-site error (float site input)")
    ax1.legend(fontsize=8)
    diffs = np.concatenate(
        [
            np.abs(
                np.asarray(res.emulated[k], dtype=np.float64) - np.asarray(r, dtype=np.float64)
            ).ravel()
            for k, r in res.trace.outputs.items()
        ]
    )
    diffs = np.maximum(diffs, 1e-12)
    bins = np.logspace(np.log10(diffs.min()), np.log10(diffs.max()) + 1e-9, 40)
    ax2.hist(diffs, bins=bins)
    ax2.set_xscale("log")
    ax2.set_xlabel("|emulated - float| over all outputs")
    ax2.set_ylabel("count")
    ax2.set_title("End-to-end error distribution")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(res: ValidationResult, outdir: str | Path, force: bool = False) -> dict[str, Path]:
    """Write ``report.txt``, ``validate.json``, ``config.yaml`` (resolved per-site
    specs) and ``validate.png`` into ``outdir`` (see :func:`prepare_outdir`)."""
    import yaml

    out = prepare_outdir(outdir, force)
    files = {
        "text": out / "report.txt",
        "json": out / "validate.json",
        "config": out / "config.yaml",
        "plot": out / "validate.png",
    }
    files["text"].write_text(format_report(res) + "\n")
    files["json"].write_text(json.dumps(_jsonable(res.as_dict()), indent=2) + "\n")
    files["config"].write_text(yaml.safe_dump(res.config().to_dict(), sort_keys=False))
    _plot(res, files["plot"])
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
