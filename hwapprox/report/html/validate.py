"""``report.html``: the page of ``hwapprox validate`` (one ``validate.json`` dict)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hwapprox.export.validate import E2EBudget
from hwapprox.report.html._page import (
    _E2E_COLS,
    _badge,
    _e,
    _figures,
    _finite,
    _fmt,
    _fmt_key,
    _is_number,
    _is_scalar,
    _kv_table,
    _notes,
    _other,
    _page,
    _records_table,
    _settings,
    _table,
    _td,
    _value,
    _warning_list,
    _warnings,
)

_SITE_KNOWN = {
    "name",
    "operator",
    "pattern",
    "input",
    "output",
    "nodes",
    "axis",
    "trailing",
    "epsilon",
    "approximate",
    "gamma_shape",
    "beta_shape",
    "shape",
    "selected",
    "spec",
    "cost_score",
    "calibrated_in_fmt",
    "calibrated_out_fmt",
    "input_stats",
    "output_stats",
    "error",
    "mask",
    "saturation",
}
_ERR_COLS = [
    ("max_abs", "max |err|"),
    ("mean_abs", "mean |err|"),
    ("max_lsb", "max LSB vs float (input quantisation included)"),
    ("quant_max_lsb", "LSB from input quantisation (exact function of the quantised input)"),
    ("approx_max_lsb", "LSB from the approximation (spec vs that exact function)"),
    ("rel_rms", "rel rms"),
    ("row_sum_err", "row \u03a3 err"),
]
_ERR_DETAIL_ONLY = {"rms", "out_lsb"}
_TIMING = {
    "float_onnxruntime": "float model on onnxruntime (the calibration run)",
    "emulation": "emulation, one run",
    "emulation_sessions": "... in onnxruntime sessions",
    "approx_models": "... in the approximation models",
    "sessions": "onnxruntime sessions (count)",
    "reports_beside": "per-site reports ran beside the emulation (1 = yes: it shared the cores)",
}
_VALIDATE_KNOWN = {
    "model",
    "samples",
    "per_site_error",
    "end_to_end_error",
    "sites",
    "skipped",
    "end_to_end",
    "timing_s",
    "budget",
    "budget_met",
    "tuning",
    "warnings",
    "notes",
}


def _budget_checks(budget: Mapping[str, Any], e2e: Mapping[str, Any]) -> list[tuple]:
    """(budget key, limit, achieved, met or None) per budget item that is set."""
    out = []
    for k, limit in budget.items():
        if limit is None:
            continue
        if k in E2EBudget.LIMITS:
            key, upper = E2EBudget.LIMITS[k]
        elif f"{k}_min" in e2e:  # e.g. pooled_cosine -> pooled_cosine_min, a lower bound
            key, upper = f"{k}_min", False
        else:
            key, upper = k, None
        got = e2e.get(key)
        met: bool | None = None
        if upper is not None and _is_number(limit):
            g = _finite(got)
            met = False if g is None else (g <= limit if upper else g >= limit)
        out.append((k, key, limit, got, met, upper))
    return out


def _budget_met(d: Mapping[str, Any]) -> bool | None:
    """The dict's own ``budget_met``, else the known budget items' checks (None when
    an item is unknown here)."""
    budget = d.get("budget")
    if not isinstance(budget, Mapping) or not budget:
        return None
    if isinstance(d.get("budget_met"), bool):
        return d["budget_met"]
    e2e = d.get("end_to_end")
    if not isinstance(e2e, Mapping):
        return None
    checks = _budget_checks(budget, e2e)
    if not checks or any(c[4] is None for c in checks):
        return None
    return all(c[4] for c in checks)


def _e2e_section(d: Mapping[str, Any]) -> str:
    """One row per metric, one column per output (and the worst over outputs)."""
    e2e = d.get("end_to_end")
    if not isinstance(e2e, Mapping):
        return ""
    outputs = e2e.get("outputs") if isinstance(e2e.get("outputs"), Mapping) else {}
    overall = {k: v for k, v in e2e.items() if k != "outputs"}
    cols = [(str(n), m) for n, m in outputs.items() if isinstance(m, Mapping)]
    # The overall column (worst over outputs) unless it repeats the only output.
    if len(cols) != 1 or any(cols[0][1].get(k) != v for k, v in overall.items()):
        cols = [("worst over outputs", overall), *cols]
    keys = [k for k, _ in _E2E_COLS]
    for _, m in cols:
        keys += [k for k, v in m.items() if k not in keys and _is_scalar(v)]
    labels = dict(_E2E_COLS)
    body = []
    for k in keys:
        if all(m.get(k) is None for _, m in cols):
            continue  # not measured for any output (e.g. no token axis)
        cells = "".join(_td(m.get(k), key=k) for _, m in cols)
        body.append(f"<tr><th scope='row'>{_e(labels.get(k, k))}</th>{cells}</tr>")
    out = ["<h2 id='end-to-end'>End to end</h2>"]
    if d.get("end_to_end_error"):
        out.append(f"<p class='note'>{_e(d['end_to_end_error'])}</p>")
    out.append(_table(["metric", *(n for n, _ in cols)], body))
    nested = {
        k: v for k, v in e2e.items() if k != "outputs" and not _is_scalar(v) and v is not None
    }
    if nested:
        out.append(_kv_table(nested))
    return "".join(out)


def _budget_section(d: Mapping[str, Any], met: bool | None) -> str:
    """Each budget item: its limit, what was achieved, met or not."""
    budget = d.get("budget")
    if not isinstance(budget, Mapping) or not budget:
        return ""
    e2e = d.get("end_to_end") if isinstance(d.get("end_to_end"), Mapping) else {}
    rows = []
    for k, key, limit, got, ok, upper in _budget_checks(budget, e2e):
        rel = "" if upper is None else ("\u2264 " if upper else "\u2265 ")
        cls = "" if ok is None else ("ok" if ok else "warn")
        rows.append(
            f"<tr><td><code>{_e(k)}</code></td><td><code>{_e(key)}</code></td>"
            f"<td class='num'>{_e(rel + _fmt_key(key, limit))}</td>"
            f"{_td(got, key=key)}<td class='{cls}'>{_e(_fmt(ok))}</td></tr>"
        )
    return f"<h3 id='budget'>Budget: {_badge(met, 'met', 'NOT met')}</h3>" + _table(
        ["budget item", "metric", "limit", "achieved", "met"], rows
    )


def _tuning_section(d: Mapping[str, Any]) -> str:
    """Per tuned site: the chosen spec, any other scalar fields of the decision, and
    (collapsed) the candidates evaluated and the non-scalar fields."""
    tuning = [t for t in d.get("tuning") or [] if isinstance(t, Mapping)]
    if not tuning:
        return ""
    fixed = ("site", "chosen", "evaluated")
    extra: list[str] = []
    for t in tuning:
        extra += [k for k, v in t.items() if k not in fixed and k not in extra and _is_scalar(v)]
    rows = []
    for t in tuning:
        ev = t.get("evaluated") if isinstance(t.get("evaluated"), list) else []
        chosen = t.get("chosen")
        chosen_html = (
            f"<code>{_e(chosen)}</code>"
            if chosen
            else "<span class='warn'>float (no candidate met the budget)</span>"
        )
        more = ""
        if ev and all(isinstance(x, Mapping) for x in ev):
            more += f"<details><summary>{len(ev)} candidate(s)</summary>" + _records_table(
                ev, [("spec", "spec"), ("score", "cost score"), ("max_abs", "max |err|")]
            )
            more += "</details>"
        rest = {k: v for k, v in t.items() if k not in fixed and k not in extra}
        if rest:
            more += f"<details><summary>{_e(', '.join(rest))}</summary>{_kv_table(rest)}</details>"
        cells = "".join(_td(t.get(k), key=k) for k in extra)
        rows.append(
            f"<tr><td><code>{_e(t.get('site', '?'))}</code></td>"
            f"<td class='num' data-v='{len(ev)}'>{len(ev)}</td><td>{chosen_html}</td>"
            f"{cells}<td>{more}</td></tr>"
        )
    return (
        "<h2 id='tuning'>Tuning decisions</h2><p class='note'>Greedy, in graph order: each "
        "site takes the cheapest candidate (by cost score) that meets the budget with the "
        "earlier sites at their choices and the later ones float.</p>"
        + _table(["site", "evaluated", "chosen spec", *extra, "details"], rows, sortable=True)
    )


def _sat_cell(v: Any) -> str:
    if not isinstance(v, Mapping):
        return _td(v)
    parts, frac, bad = [], 0.0, False
    for side in ("in", "out"):
        n, total = v.get(side), v.get(f"{side}_total")
        if not _is_number(n):
            continue
        bad = bad or n > 0
        if _is_number(total) and total > 0:
            frac += n / total
            parts.append(f"{side} {n}/{total} ({100 * n / total:.2g}%)")
        else:
            parts.append(f"{side} {n}")
    rest = [
        f"{k}={_fmt(x)}" for k, x in v.items() if k not in ("in", "out", "in_total", "out_total")
    ]
    text = "; ".join(parts + rest) or "-"
    return f"<td class='num{' warn' if bad else ''}' data-v='{frac!r}'>{_e(text)}</td>"


def _short(v: Any) -> str:
    """One-line summary of a dict's scalar items (mask and the like)."""
    if v is None:
        return "-"
    if isinstance(v, Mapping):
        items = [f"{k}={_fmt(x)}" for k, x in v.items() if _is_scalar(x)]
        text = ", ".join(items) if items else f"{len(v)} field(s)"
        return text if len(text) <= 120 else text[:117] + "..."
    return _fmt(v) if _is_scalar(v) else str(v)[:120]


def _site_columns(sites: Sequence[Mapping[str, Any]]) -> list[tuple[str, Callable[..., str]]]:
    """(header, cell renderer) for the per-site table, from what the sites carry."""

    def spec(s: Mapping[str, Any]) -> Mapping[str, Any]:
        v = s.get("spec")
        return v if isinstance(v, Mapping) else {}

    def err(s: Mapping[str, Any]) -> Mapping[str, Any]:
        v = s.get("error")
        return v if isinstance(v, Mapping) else {}

    def method(s: Mapping[str, Any]) -> str:
        if spec(s):
            return _td(spec(s).get("method", "?"))
        return _td("float" if s.get("selected", True) else "not selected")

    def op(s: Mapping[str, Any]) -> str:
        text = str(s.get("operator", "?"))
        if s.get("pattern"):
            text += f"/{s['pattern']}"
        return _td(text)

    def rng(s: Mapping[str, Any]) -> str:
        st = s.get("input_stats")
        if not isinstance(st, Mapping) or "min" not in st or "max" not in st:
            return "<td>-</td>"
        text = f"[{_fmt(st['min'])}, {_fmt(st['max'])}]"
        key = _finite(st.get("absmax"))
        attr = "" if key is None else f" data-v='{key!r}'"
        return f"<td class='num'{attr}>{_e(text)}</td>"

    cols: list[tuple[str, Callable[..., str]]] = [
        ("site", lambda s: f"<td><code>{_e(s.get('name', '?'))}</code></td>"),
        ("operator", op),
        ("method", method),
    ]
    if any(spec(s).get("in_fmt") or s.get("calibrated_in_fmt") for s in sites):
        cols.append(("in_fmt", lambda s: _td(spec(s).get("in_fmt"), code=True)))
    if any(spec(s).get("out_fmt") for s in sites):
        cols.append(("out_fmt", lambda s: _td(spec(s).get("out_fmt"), code=True)))
    if any(isinstance(s.get("input_stats"), Mapping) for s in sites):
        cols.append(("input range", rng))
    for k, h in _ERR_COLS:
        if any(k in err(s) for s in sites):
            cols.append((h, lambda s, k=k: _td(err(s).get(k), key=k)))
    if any(s.get("saturation") is not None for s in sites):
        cols.append(("saturated", lambda s: _sat_cell(s.get("saturation"))))
    if any(s.get("mask") is not None for s in sites):
        cols.append(("mask", lambda s: f"<td>{_e(_short(s.get('mask')))}</td>"))
    if any("cost_score" in s for s in sites):
        cols.append(("cost", lambda s: _td(s.get("cost_score"))))
    # Unknown scalar keys: of the error dicts, then of the sites themselves.
    known_err = {k for k, _ in _ERR_COLS} | _ERR_DETAIL_ONLY
    extra_err: list[str] = []
    extra_site: list[str] = []
    for s in sites:
        extra_err += [
            k
            for k, v in err(s).items()
            if k not in known_err and k not in extra_err and _is_scalar(v)
        ]
        extra_site += [
            k
            for k, v in s.items()
            if k not in _SITE_KNOWN and k not in extra_site and _is_scalar(v)
        ]
    cols += [(k, lambda s, k=k: _td(err(s).get(k), key=k)) for k in extra_err]
    cols += [(k, lambda s, k=k: _td(s.get(k), key=k)) for k in extra_site]
    return cols


def _sites_section(d: Mapping[str, Any]) -> str:
    sites = [s for s in d.get("sites") or [] if isinstance(s, Mapping)]
    if not sites:
        return ""
    cols = _site_columns(sites)
    rows = []
    for i, s in enumerate(sites):
        approximated = isinstance(s.get("spec"), Mapping)
        cls = "" if approximated else " class='float'"
        cells = f"<td class='num' data-v='{i}'>{i}</td>" + "".join(r(s) for _, r in cols)
        rows.append(f"<tr{cls}>{cells}</tr>")
    n_sel = sum(1 for s in sites if s.get("selected", True))
    out = [f"<h2 id='sites'>Per site ({len(sites)} sites, {n_sel} selected)</h2>"]
    if d.get("per_site_error"):
        out.append(f"<p class='note'>Error: {_e(d['per_site_error'])}. Click a header to sort.</p>")
    out.append(_table(["#", *(h for h, _ in cols)], rows, sortable=True, cls="sites"))
    return "".join(out)


def _site_details(d: Mapping[str, Any]) -> str:
    sites = [s for s in d.get("sites") or [] if isinstance(s, Mapping)]
    if not sites:
        return ""
    details = [
        f"<details><summary><code>{_e(s.get('name', '?'))}</code></summary>"
        f"{_kv_table(s, 1)}</details>"
        for s in sites
    ]
    return "<h2 id='site-details'>Site details (every field)</h2>" + "".join(details)


def _timing_section(d: Mapping[str, Any]) -> str:
    t = d.get("timing_s")
    if not isinstance(t, Mapping) or not t:
        return ""
    rows = []
    for k, v in t.items():
        if k in ("sessions", "reports_beside") and _is_number(v):
            text = f"{v:.0f}"
        elif k in _TIMING and _is_number(v):
            text = f"{v * 1e3:.1f} ms"
        else:
            text = _fmt(v)
        rows.append(
            f"<tr><th scope='row'>{_e(_TIMING.get(k, k))}</th><td class='num'>{_e(text)}</td></tr>"
        )
    return "<h2 id='timing'>Timing</h2>" + _table(["what", "time"], rows)


def validate_html(
    res_dict: Mapping[str, Any], images: Mapping[str, str | Path] | None = None
) -> str:
    """The validation report as one self-contained HTML page.

    ``res_dict`` is :meth:`ValidationResult.as_dict` made JSON-safe (what
    ``validate.json`` holds); ``images`` maps a caption to a PNG/SVG file to
    embed (missing files are left out).
    """
    d = res_dict
    model = d.get("model") or "(in memory)"
    sites = [s for s in d.get("sites") or [] if isinstance(s, Mapping)]
    n_sel = sum(1 for s in sites if s.get("selected", True))
    met = _budget_met(d)
    meta = [f"Model: <code>{_e(model)}</code>"]
    if "samples" in d:
        meta.append(f"{_e(_fmt(d['samples']))} samples")
    if sites:
        meta.append(f"{len(sites)} sites, {n_sel} selected")
    budget = d.get("budget")
    verdict = ""
    if isinstance(budget, Mapping) and budget:
        desc = ", ".join(f"{k}={_fmt(v, 6)}" for k, v in budget.items() if v is not None)
        meta.append(f"budget <code>{_e(desc)}</code>")
        verdict = " " + _badge(met, "budget met", "budget NOT met")
    header = (
        f"<header><h1>hwapprox validation report{verdict}</h1>"
        f"<p class='meta'>{' &middot; '.join(meta)}</p></header>"
    )
    skipped = d.get("skipped")
    skipped_html = ""
    if isinstance(skipped, Mapping) and skipped:
        skipped_html = "<h2 id='skipped'>Skipped candidates</h2>" + _table(
            ["node", "reason"],
            [
                f"<tr><td><code>{_e(k)}</code></td><td>{_value(v)}</td></tr>"
                for k, v in skipped.items()
            ],
        )
    figs = _figures(images)
    return _page(
        f"hwapprox validate: {Path(str(model)).name}",
        [
            header,
            _warnings(_warning_list(d)),
            _settings(d, _VALIDATE_KNOWN),
            _notes(d),
            _e2e_section(d),
            _budget_section(d, met),
            _sites_section(d),
            f"<h2 id='plots'>Plots</h2>{figs}" if figs else "",
            _tuning_section(d),
            skipped_html,
            _timing_section(d),
            _site_details(d),
            _other(d, _VALIDATE_KNOWN),
        ],
    )


# -- demo ------------------------------------------------------------------------------
