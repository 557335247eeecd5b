"""``summary.html``: the page of ``hwapprox demo`` (one ``summary.json`` dict)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hwapprox.report.html._page import (
    _E2E_COLS,
    _badge,
    _e,
    _figures,
    _finite,
    _fit_badge,
    _fmt,
    _is_number,
    _kv_table,
    _notes,
    _other,
    _page,
    _records_table,
    _settings,
    _table,
    _td,
    _warning_list,
    _warnings,
)

_DEMO_KNOWN = {
    "model",
    "n_sites",
    "board",
    "budget",
    "passed",
    "total_seconds",
    "stages",
    "validate",
    "hls",
    "rtl",
    "resources",
    "fit",
    "files",
    "warnings",
    "notes",
}
_STATUS_CLASS = {"passed": "ok", "failed": "warn", "error": "warn", "does not fit": "warn"}


def _stages_section(stages: Any) -> tuple[str, list[str]]:
    if not isinstance(stages, Mapping) or not stages:
        return "", []
    rows, failed = [], []
    for name, st in stages.items():
        st = st if isinstance(st, Mapping) else {"status": st}
        status = str(st.get("status", "?"))
        if status in ("failed", "error"):
            failed.append(f"stage {name} {status}: {st.get('note', '')}".rstrip(": "))
        cls = _STATUS_CLASS.get(status, "")
        secs = st.get("seconds")
        rest = {k: v for k, v in st.items() if k not in ("status", "seconds", "note")}
        note = _e(st.get("note", "")) + (_kv_table(rest) if rest else "")
        rows.append(
            f"<tr><td>{_e(name)}</td><td class='{cls}'>{_e(status)}</td>"
            f"<td class='num'>{_e(f'{secs:.1f}' if _is_number(secs) else _fmt(secs))}</td>"
            f"<td>{note}</td></tr>"
        )
    return "<h2 id='stages'>Stages</h2>" + _table(
        ["stage", "status", "seconds", "note"], rows
    ), failed


def _demo_validate(v: Any) -> str:
    if not isinstance(v, Mapping):
        return ""
    out = ["<h2 id='sites'>Sites: chosen method, formats and error</h2>"]
    out.append(
        "<p class='note'>Site error: the site's spec on the float model's site input vs the "
        "float model's site output. E2E at tuning: the model outputs' max |error| when this "
        "site's candidate was accepted (earlier sites at their choices, later ones float). "
        "Errors vs onnxruntime float32. Click a header to sort.</p>"
    )
    rows = [r for r in v.get("sites") or [] if isinstance(r, Mapping)]
    if rows:
        out.append(
            _records_table(
                rows,
                [
                    ("site", "site"),
                    ("operator", "operator"),
                    ("method", "method"),
                    ("in_fmt", "in_fmt"),
                    ("out_fmt", "out_fmt"),
                    ("site_max_abs", "site max |err|"),
                    ("site_max_lsb", "site max LSB vs float (incl. input quant.)"),
                    ("site_quant_lsb", "of which input quant. (LSB)"),
                    ("site_approx_lsb", "of which approximation (LSB)"),
                    ("e2e_max_abs_at_tuning", "E2E max |err| at tuning"),
                    ("cost_score", "cost"),
                ],
                sortable=True,
                code=("site", "in_fmt", "out_fmt"),
            )
        )
    e2e = v.get("end_to_end")
    if isinstance(e2e, Mapping):
        samples = v.get("samples")
        out.append(
            "<h3>End to end, all sites approximated</h3><p class='note'>vs the float model on "
            f"onnxruntime{'' if samples is None else f', {_e(_fmt(samples))} samples'}.</p>"
        )
        row = {**e2e}
        if "budget_met" in v:
            row["budget_met"] = v["budget_met"]
        out.append(
            _records_table(
                [row],
                [*_E2E_COLS, ("budget_met", "budget met")],
            )
        )
    rest = {k: x for k, x in v.items() if k not in ("sites", "end_to_end", "budget_met", "samples")}
    if rest:
        out.append(_kv_table(rest))
    return "".join(out)


def _demo_hls(h: Any) -> str:
    if not isinstance(h, Mapping) or not h:
        return ""
    labels = {
        "block": "block",
        "backend": "backend",
        "part": "part",
        "samples": "samples",
        "values": "values compared",
        "bit_exact": "bit-exact",
        "mismatches": "mismatches",
        "first_mismatch": "first mismatch",
    }
    verdict = ""
    if isinstance(h.get("bit_exact"), bool):
        verdict = " " + _badge(h["bit_exact"], "bit-exact", "MISMATCH")
    return (
        "<h2 id='hls'>HLS: hls4ml project, g++ C simulation vs the Python block model"
        f"{verdict}</h2>" + _kv_table(h, labels=labels)
    )


def _demo_rtl(rtl: Any) -> str:
    if not isinstance(rtl, list) or not rtl:
        return ""
    units = [u for u in rtl if isinstance(u, Mapping)]
    return (
        "<h2 id='rtl'>RTL units: cocotb + Verilator, scoreboard vs the spec's model</h2>"
        "<p class='note'>Latency: cycles from a row's first input to its first output (min-max "
        "over rows). Throughput: outputs per cycle over the whole run (first input to last "
        "output, includes fill).</p>"
        + _records_table(
            units,
            [
                ("unit", "unit"),
                ("sites", "sites"),
                ("bit_exact", "bit-exact"),
                ("vectors", "vectors"),
                ("matched", "matched"),
                ("mismatches", "mismatches"),
                ("latency", "latency (cycles)"),
                ("throughput", "throughput (el/cycle)"),
                ("note", "note"),
            ],
            sortable=True,
            code=("spec",),
        )
    )


def _demo_resources(res: Any) -> str:
    if not isinstance(res, Mapping) or not res:
        return ""
    out = [f"<h2 id='resources'>Resources ({_e(res.get('source', ''))})</h2>"]
    if res.get("note"):
        out.append(f"<p class='note'>{_e(res['note'])}</p>")
    rows = [r for r in res.get("rows") or [] if isinstance(r, Mapping)]
    cols = [c for c in res.get("columns") or [] if isinstance(c, str)]
    if rows:
        out.append(
            _records_table(
                rows,
                [("site", "site"), ("unit", "unit"), *((c, c) for c in cols)],
                sortable=True,
                skip=("sites",),
            )
        )
    rest = {k: v for k, v in res.items() if k not in ("source", "note", "rows", "columns")}
    if rest:
        out.append(_kv_table(rest))
    return "".join(out)


def _demo_fit(fit: Any) -> str:
    if not isinstance(fit, Mapping) or not fit:
        return ""
    clock = fit.get("clock_mhz")
    head = f"{fit.get('board', '?')} ({fit.get('part', '?')}"
    head += f", {_fmt(clock, 6)} MHz)" if clock is not None else ")"
    verdict = ""
    if isinstance(fit.get("fits"), bool):
        verdict = " " + _badge(fit["fits"], "fits", "DOES NOT FIT")
    out = [f"<h2 id='fit'>Board fit: {_e(head)}{verdict}</h2>"]
    if fit.get("basis"):
        out.append(f"<p class='note'>{_e(fit['basis'])}</p>")
    kinds = fit.get("kinds")
    if isinstance(kinds, Mapping) and kinds:
        rows = []
        for k, u in kinds.items():
            u = u if isinstance(u, Mapping) else {"used": u}
            util = u.get("utilisation")
            util_text = f"{100 * util:.2f}%" if _is_number(util) else _fmt(util)
            cls = " warn" if _is_number(util) and util > 1 else ""
            used = u.get("used")
            rows.append(
                f"<tr><td>{_e(k)}</td>"
                f"<td class='num'>{_e(f'{used:.0f}' if _is_number(used) else _fmt(used))}</td>"
                f"{_td(u.get('available'))}<td class='num{cls}'"
                f"{'' if _finite(util) is None else ' data-v=' + repr(str(_finite(util)))}>"
                f"{_e(util_text)}</td></tr>"
            )
        out.append(_table(["kind", "used", "available", "utilisation"], rows))
    rest = {
        k: v
        for k, v in fit.items()
        if k not in ("board", "part", "clock_mhz", "basis", "kinds", "fits")
    }
    if rest:
        out.append(_kv_table(rest))
    return "".join(out)


def _demo_files(files: Any) -> str:
    if not isinstance(files, list) or not files:
        return ""
    items = []
    for f in files:
        f = str(f)
        path = f.split(" (", 1)[0]
        if path and not path.startswith(("/", "..")) and "://" not in path:
            items.append(f"<li><a href='{_e(path)}'><code>{_e(f)}</code></a></li>")
        else:
            items.append(f"<li><code>{_e(f)}</code></li>")
    return f"<h2 id='files'>Files</h2><ul>{''.join(items)}</ul>"


def demo_html(summary: Mapping[str, Any], images: Mapping[str, str | Path] | None = None) -> str:
    """``summary.html`` from the demo's summary dict (what ``summary.json`` holds).

    ``images`` maps a caption to a PNG/SVG file to embed (missing files are left out).
    """
    s = summary
    passed = s.get("passed") if isinstance(s.get("passed"), bool) else None
    meta = []
    if s.get("model"):
        meta.append(
            f"Model: <code>{_e(s['model'])}</code>"
            + (f" ({_e(_fmt(s['n_sites']))} nonlinear sites)" if "n_sites" in s else "")
        )
    if s.get("board"):
        meta.append(f"board <code>{_e(s['board'])}</code>")
    if s.get("budget"):
        meta.append(f"error budget <code>{_e(s['budget'])}</code>")
    if _is_number(s.get("total_seconds")):
        meta.append(f"total {s['total_seconds']:.1f} s")
    header = (
        f"<header><h1>hwapprox demo summary {_badge(passed, 'checks PASSED', 'checks FAILED')}"
        f" {_fit_badge(s.get('fit'))}</h1>"
        f"<p class='meta'>{' &middot; '.join(meta)}</p></header>"
    )
    stages_html, failed = _stages_section(s.get("stages"))
    figs = _figures(images)
    return _page(
        "hwapprox demo summary",
        [
            header,
            _warnings(_warning_list(s)),
            _warnings(failed, "Failed stages"),
            _settings(s, _DEMO_KNOWN),
            _notes(s),
            stages_html,
            _demo_validate(s.get("validate")),
            f"<h2 id='plots'>Plots</h2>{figs}" if figs else "",
            _demo_hls(s.get("hls")),
            _demo_rtl(s.get("rtl")),
            _demo_resources(s.get("resources")),
            _demo_fit(s.get("fit")),
            _demo_files(s.get("files")),
            _other(s, _DEMO_KNOWN),
        ],
    )
