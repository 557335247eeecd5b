"""Self-contained HTML reports: ``report.html`` (``hwapprox validate``) and
``summary.html`` (``hwapprox demo``).

Both render a plain JSON dict -- what ``validate.json`` / ``summary.json``
hold -- so they show whatever fields exist: known keys as tables, unknown
scalar keys generically (extra columns or key/value rows), missing keys not
at all. Plots are embedded as base64 ``data:`` URIs; the stylesheet and the
small column-sorting script are inline. Nothing is fetched from the network,
so the file can be mailed or archived on its own. Every text is escaped
(:func:`html.escape`). Nothing here computes a result: it only formats what
the stages measured (the budget verdict is re-derived from the dict when the
dict does not state it).
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["demo_html", "validate_html"]

_MIME = {
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
}

_CSS = """
:root { --fg: #1d2430; --muted: #5b6573; --line: #d7dce3; --head: #eef1f5;
        --ok: #1a7f37; --bad: #c62828; --warnbg: #fff4d6; --warnline: #e0a800; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial,
       sans-serif; color: var(--fg); margin: 0 auto; padding: 1.2em 2em 3em; max-width: 1500px; }
h1 { font-size: 1.6em; margin: 0 0 0.2em; }
h2 { font-size: 1.25em; margin: 1.6em 0 0.5em; padding-bottom: 0.2em;
     border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05em; margin: 1.2em 0 0.4em; }
p.meta { color: var(--muted); margin: 0.2em 0; }
p.note { color: var(--muted); font-size: 0.92em; margin: 0.3em 0 0.6em; max-width: 110ch; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
              font-size: 0.92em; }
.badge { display: inline-block; padding: 0.15em 0.7em; border-radius: 1em; color: #fff;
         font-weight: 600; font-size: 0.95em; vertical-align: middle; }
.badge.pass { background: var(--ok); }
.badge.fail { background: var(--bad); }
.badge.info { background: #6b7785; }
section.warnings { background: var(--warnbg); border: 1px solid var(--warnline);
                   border-left: 6px solid var(--warnline); padding: 0.6em 1.2em;
                   margin: 1em 0; border-radius: 4px; }
section.warnings h2 { border: 0; margin: 0.2em 0; font-size: 1.1em; }
section.warnings ul { margin: 0.3em 0 0.4em; padding-left: 1.3em; }
section.notes h2 { font-size: 1.05em; border: 0; margin: 0.8em 0 0.2em; }
section.notes ul { margin: 0.2em 0; padding-left: 1.3em; color: var(--muted); }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.4em 0 0.8em; font-size: 0.93em; }
th, td { border: 1px solid var(--line); padding: 0.28em 0.6em; text-align: left;
         vertical-align: top; }
thead th { background: var(--head); position: sticky; top: 0; white-space: nowrap; }
tbody tr:nth-child(even) { background: #f8f9fb; }
table.sites { font-size: 0.86em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.float td { color: var(--muted); }
tr.worst td { font-weight: 600; }
td.warn, span.warn { color: var(--bad); font-weight: 600; }
td.ok, span.ok { color: var(--ok); font-weight: 600; }
table.sortable thead th { cursor: pointer; }
table.sortable thead th::after { content: " \\2195"; color: #9aa3ad; font-weight: 400; }
table.sortable thead th[aria-sort="ascending"]::after { content: " \\2191"; color: var(--fg); }
table.sortable thead th[aria-sort="descending"]::after { content: " \\2193"; color: var(--fg); }
table.kv th { background: var(--head); font-weight: 500; white-space: nowrap; }
table.kv table.kv { margin: 0; font-size: 1em; }
figure { margin: 0.8em 0 1.2em; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 0.9em; }
details { margin: 0.2em 0; }
details > summary { cursor: pointer; }
td details > summary { color: var(--muted); }
footer { margin-top: 3em; color: var(--muted); font-size: 0.85em; }
@media print { thead th { position: static; } details { display: block; } }
"""

# Click a header of a ``table.sortable`` to sort its rows (numbers by the cell's
# ``data-v``, else by text). Reading the report needs none of it.
_SORT_JS = """
document.querySelectorAll("table.sortable").forEach(function (t) {
  var heads = t.tHead ? t.tHead.rows[0].cells : [];
  Array.prototype.forEach.call(heads, function (th, i) {
    th.addEventListener("click", function () {
      var body = t.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var asc = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      function key(r) {
        var c = r.cells[i];
        if (!c) { return [2, ""]; }
        var v = c.getAttribute("data-v");
        return v === null || v === "" ? [1, c.textContent] : [0, parseFloat(v)];
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x[0] !== y[0]) { return x[0] - y[0]; }
        var r = x[0] === 0 ? x[1] - y[1] : x[1].localeCompare(y[1], undefined, {numeric: true});
        return asc ? r : -r;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


# -- primitives ----------------------------------------------------------------------
def _e(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _finite(v: Any) -> float | None:
    """``v`` as a finite float (numbers only), else None."""
    if _is_number(v) and math.isfinite(v):
        return float(v)
    return None


def _fmt(v: Any, digits: int = 3) -> str:
    """Plain text of a scalar: ``None`` -> ``-``; floats to ``digits`` significant digits."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        return f"{v:.{digits}g}"
    return str(v)


def _fmt_key(key: str, v: Any) -> str:
    """Like :func:`_fmt`, with more digits where the key says they matter."""
    if isinstance(v, float) and math.isfinite(v):
        if "cosine" in key:
            return f"{v:.6f}"
        if key.startswith("top"):
            return f"{v:.4g}"
    return _fmt(v)


def _list_text(v: Sequence[Any], limit: int = 24) -> str:
    items = [_fmt(x) for x in v[:limit]]
    if len(v) > limit:
        items.append(f"... ({len(v)} items)")
    return ", ".join(items)


def _value(v: Any, depth: int = 0) -> str:
    """HTML of any JSON value: scalars as text, dicts as nested key/value tables."""
    if _is_scalar(v):
        return _e(_fmt(v))
    if isinstance(v, Mapping):
        if not v:
            return "-"
        if depth >= 4:
            return _e(str(dict(v))[:500])
        return _kv_table(v, depth + 1)
    if isinstance(v, list | tuple):
        if all(_is_scalar(x) for x in v):
            return _e("[" + _list_text(v) + "]")
        if all(isinstance(x, Mapping) for x in v) and depth < 4:
            return _records_table(v, [])
        return _e(str(v)[:500])
    return _e(str(v))


def _kv_table(d: Mapping[str, Any], depth: int = 0, labels: Mapping[str, str] | None = None) -> str:
    labels = labels or {}
    rows = "".join(
        f"<tr><th scope='row'>{_e(labels.get(str(k), k))}</th><td>{_value(x, depth)}</td></tr>"
        for k, x in d.items()
    )
    return f"<table class='kv'><tbody>{rows}</tbody></table>"


def _td(v: Any, *, key: str = "", cls: str = "", code: bool = False) -> str:
    """One cell: numbers right-aligned with a ``data-v`` sort key; the rest escaped."""
    classes = [cls] if cls else []
    attrs = ""
    if _is_number(v):
        classes.append("num")
        f = _finite(v)
        if f is not None:
            attrs = f" data-v='{f!r}'"
        text = _e(_fmt_key(key, v))
    elif _is_scalar(v):
        text = _e(_fmt(v))
        if code and v is not None:
            text = f"<code>{text}</code>"
    else:
        text = _value(v, 1)
    cl = f" class='{' '.join(classes)}'" if classes else ""
    return f"<td{cl}{attrs}>{text}</td>"


def _table(
    headers: Sequence[str], rows: Sequence[str], *, sortable: bool = False, cls: str = ""
) -> str:
    """``rows`` are ready ``<tr>...</tr>`` strings."""
    classes = " ".join(c for c in (cls, "sortable" if sortable else "") if c)
    cls = f" class='{classes}'" if classes else ""
    head = "".join(f"<th scope='col'>{_e(h)}</th>" for h in headers)
    return (
        f"<div class='scroll'><table{cls}><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _records_table(
    rows: Sequence[Mapping[str, Any]],
    known: Sequence[tuple[str, str]],
    *,
    sortable: bool = False,
    code: Sequence[str] = (),
    skip: Sequence[str] = (),
) -> str:
    """A table of dicts: the ``known`` (key, header) columns that occur, then every
    other key in order of first appearance (header = the key)."""
    present = {k for r in rows for k in r}
    cols = [(k, h) for k, h in known if k in present]
    seen = {k for k, _ in known} | set(skip)
    for r in rows:
        for k in r:
            if k not in seen:
                seen.add(k)
                cols.append((k, k))
    body = []
    for r in rows:
        cells = []
        for k, _ in cols:
            v = r.get(k)
            if isinstance(v, list | tuple) and all(_is_scalar(x) for x in v):
                cells.append(f"<td>{_e(_list_text(v))}</td>")
            elif isinstance(v, str) and len(v) > 90:  # long text (a spec): collapsed
                inner = f"<code>{_e(v)}</code>" if k in code else _e(v)
                cells.append(
                    f"<td><details><summary>{_e(v[:40])}...</summary>{inner}</details></td>"
                )
            else:
                cells.append(_td(v, key=k, code=k in code))
        body.append(f"<tr>{''.join(cells)}</tr>")
    return _table([h for _, h in cols], body, sortable=sortable)


def _figures(images: Mapping[str, str | Path] | None) -> str:
    out = []
    for label, p in (images or {}).items():
        path = Path(p)
        mime = _MIME.get(path.suffix.lower())
        if mime is None or not path.is_file():
            continue
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        out.append(
            f"<figure><img src='data:{mime};base64,{data}' alt='{_e(label)}'>"
            f"<figcaption>{_e(label)} ({_e(path.name)})</figcaption></figure>"
        )
    return "".join(out)


def _warnings(items: Sequence[str], title: str = "Warnings") -> str:
    if not items:
        return ""
    lis = "".join(f"<li>{_e(w)}</li>" for w in items)
    return (
        f"<section class='warnings' role='alert'><h2>{_e(title)} ({len(items)})</h2>"
        f"<ul>{lis}</ul></section>"
    )


def _fit_badge(fit: Any) -> str:
    """The board fit beside the checks' verdict: a design that does not fit is not a pass."""
    fits = fit.get("fits") if isinstance(fit, Mapping) else None
    if not isinstance(fits, bool):
        return ""
    board = fit.get("board", "the board")
    return _badge(fits, f"fits {board}", f"DOES NOT FIT {board}")


def _badge(ok: bool | None, yes: str, no: str, unknown: str = "unknown") -> str:
    if ok is None:
        return f"<span class='badge info'>{_e(unknown)}</span>"
    return f"<span class='badge {'pass' if ok else 'fail'}'>{_e(yes if ok else no)}</span>"


def _version() -> str:
    try:
        from hwapprox import __version__
    except ImportError:  # pragma: no cover - the package always has one
        return ""
    return str(__version__)


def _page(title: str, body: Sequence[str]) -> str:
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(p for p in body if p)
        + f"\n<footer>Generated by hwapprox {_e(_version())}; self-contained (no network"
        " resources).</footer>\n"
        f"<script>{_SORT_JS}</script>\n</body>\n</html>\n"
    )


def _other(d: Mapping[str, Any], known: set[str], title: str = "Other fields") -> str:
    """Unknown top-level non-scalar fields, generically."""
    rest = {k: v for k, v in d.items() if k not in known and not _is_scalar(v)}
    if not rest:
        return ""
    return f"<h2>{_e(title)}</h2>" + _kv_table(rest)


def _settings(d: Mapping[str, Any], known: set[str]) -> str:
    """Unknown top-level scalar fields (run settings and the like) as a compact table."""
    rest = {k: v for k, v in d.items() if k not in known and _is_scalar(v)}
    if not rest:
        return ""
    return "<details open><summary>Run settings</summary>" + _kv_table(rest) + "</details>"


def _notes(d: Mapping[str, Any]) -> str:
    n = d.get("notes")
    items = [n] if isinstance(n, str) else n if isinstance(n, list | tuple) else []
    if not items:
        return ""
    lis = "".join(f"<li>{_e(x if isinstance(x, str) else _fmt(x))}</li>" for x in items)
    return f"<section class='notes'><h2>Notes</h2><ul>{lis}</ul></section>"


def _warning_list(d: Mapping[str, Any]) -> list[str]:
    w = d.get("warnings")
    if isinstance(w, str):
        return [w]
    if isinstance(w, list | tuple):
        return [x if isinstance(x, str) else _fmt(x) for x in w]
    return []


# -- validate ------------------------------------------------------------------------
_E2E_COLS = [
    ("max_abs", "max |err|"),
    ("mean_abs", "mean |err|"),
    ("ref_absmax", "max |ref|"),
    ("cosine_mean", "cosine mean"),
    ("cosine_min", "cosine min"),
    ("top1", "top-1"),
]
#: budget key -> (end_to_end key, True if the value must be <= the limit)
_BUDGET_KEYS = {
    "max_abs": ("max_abs", True),
    "mean_abs": ("mean_abs", True),
    "cosine": ("cosine_min", False),
    "top1": ("top1", False),
}
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
        if k in _BUDGET_KEYS:
            key, upper = _BUDGET_KEYS[k]
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
        if k == "sessions" and _is_number(v):
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
