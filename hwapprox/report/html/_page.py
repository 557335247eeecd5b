"""The HTML page skeleton (stylesheet, sorting script, escaping) and the cells and
tables both reports share."""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

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
