"""Markdown rendering of reports (the demo summary and plain tables).

:func:`md_table` renders one GitHub-flavoured Markdown table;
:func:`demo_markdown` renders the ``summary.json`` dict written by
:mod:`hwapprox.demo` (the only producer of that dict) as ``summary.md``.
Nothing here computes a result: it only formats what the stages measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["demo_markdown", "fmt_num", "md_table"]


def fmt_num(v: Any, digits: int = 3) -> str:
    """``None`` -> ``-``; floats to ``digits`` significant digits; the rest via ``str``."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table; cells are formatted with :func:`fmt_num`, ``|`` escaped."""

    def cell(v: Any) -> str:
        return fmt_num(v).replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


_STATUS = {
    "passed": "passed",
    "failed": "**FAILED**",
    "skipped": "skipped",
    "error": "**ERROR**",
    "does not fit": "**DOES NOT FIT**",
}


def _stage_rows(stages: Mapping[str, Mapping[str, Any]]) -> list[list[Any]]:
    return [
        [name, _STATUS.get(st["status"], st["status"]), f"{st['seconds']:.1f}", st.get("note", "")]
        for name, st in stages.items()
    ]


def demo_verdict(s: Mapping[str, Any]) -> str:
    """What passed and what did not: the checks (accuracy, bit-exactness, RTL) and,
    separately, the board fit (a design that does not fit is not called a pass)."""
    checks = "checks **PASSED**" if s["passed"] else "checks **FAILED**"
    fit = s.get("fit") or {}
    if fit.get("fits") is True:
        return f"{checks}; fits `{s['board']}`."
    if fit.get("fits") is False:
        return f"{checks}; **DOES NOT FIT** `{s['board']}` (see Resources)."
    return f"{checks}; board fit not computed."


def demo_markdown(s: Mapping[str, Any]) -> str:
    """``summary.md`` from the demo's summary dict (see :func:`hwapprox.demo.run_demo`)."""
    verdict = demo_verdict(s)
    out = [
        "# hwapprox demo summary",
        "",
        f"Model: `{s['model']}` ({s['n_sites']} nonlinear sites); board `{s['board']}`; "
        f"error budget `{s['budget']}`; total {s['total_seconds']:.1f} s. {verdict}",
        "",
        "## Stages",
        "",
        md_table(["stage", "status", "seconds", "note"], _stage_rows(s["stages"])),
    ]
    v = s.get("validate")
    if v:
        out += [
            "",
            "## Sites: chosen method, formats and error",
            "",
            "Site error: the site's spec on the float model's site input vs the float "
            "model's site output, so it includes the input's quantisation ('hwapprox eval' "
            "and the README's accuracy tables measure the approximation alone, on quantised "
            "inputs). E2E at tuning: the model outputs' max |error| when this "
            "site's candidate was accepted (earlier sites at their choices, later ones "
            "float). Errors vs onnxruntime float32.",
            "",
            md_table(
                [
                    "site",
                    "operator",
                    "method",
                    "in_fmt",
                    "out_fmt",
                    "site max abs",
                    "site max LSB vs float",
                    "LSB from input quant.",
                    "LSB from approx.",
                    "E2E max abs at tuning",
                ],
                [
                    [
                        r["site"],
                        r["operator"],
                        r["method"],
                        r["in_fmt"],
                        r["out_fmt"],
                        r["site_max_abs"],
                        r["site_max_lsb"],
                        r.get("site_quant_lsb"),
                        r.get("site_approx_lsb"),
                        r["e2e_max_abs_at_tuning"],
                    ]
                    for r in v["sites"]
                ],
            ),
            "",
            "End to end, all sites approximated (vs the float model on onnxruntime, "
            f"{v['samples']} samples):",
            "",
            md_table(
                ["max abs", "mean abs", "cosine min", "top-1 agreement", "budget met"],
                [
                    [
                        v["end_to_end"]["max_abs"],
                        v["end_to_end"]["mean_abs"],
                        f"{v['end_to_end']['cosine_min']:.6f}",
                        v["end_to_end"]["top1"],
                        v["budget_met"],
                    ]
                ],
            ),
        ]
    h = s.get("hls")
    if h:
        out += ["", "## HLS (hls4ml project, g++ C simulation vs the Python block model)", ""]
        out.append(
            md_table(
                ["block", "backend", "part", "samples", "values compared", "bit-exact", "note"],
                [
                    [
                        h["block"],
                        h["backend"],
                        h["part"],
                        h["samples"],
                        h["values"],
                        h["bit_exact"],
                        h.get("first_mismatch") or "",
                    ]
                ],
            )
        )
    rtl = s.get("rtl")
    if rtl:
        out += [
            "",
            "## RTL units (cocotb + Verilator, scoreboard vs the spec's model)",
            "",
            "Latency: cycles from a row's first input to its first output (min-max over "
            "rows). Throughput: outputs per cycle over the whole run (first input to last "
            "output, includes fill).",
            "",
            md_table(
                [
                    "unit",
                    "sites",
                    "bit-exact",
                    "vectors",
                    "latency (cycles)",
                    "throughput (el/cycle)",
                    "note",
                ],
                [
                    [
                        u["unit"],
                        ", ".join(u["sites"]),
                        u.get("bit_exact"),
                        u.get("vectors"),
                        u.get("latency"),
                        u.get("throughput"),
                        u.get("note", ""),
                    ]
                    for u in rtl
                ],
            ),
        ]
    res = s.get("resources")
    if res:
        out += ["", f"## Resources ({res['source']})", ""]
        if res.get("note"):
            out += [res["note"], ""]
        out.append(
            md_table(
                ["site", "unit", *res["columns"]],
                [[r["site"], r["unit"], *(r[c] for c in res["columns"])] for r in res["rows"]],
            )
        )
    fit = s.get("fit")
    if fit:
        out += [
            "",
            f"## Board fit: {fit['board']} ({fit['part']}, {fit['clock_mhz']:g} MHz)",
            "",
            fit["basis"],
            "",
            md_table(
                ["kind", "used", "available", "utilisation"],
                [
                    [k, f"{u['used']:.0f}", u["available"], f"{100 * u['utilisation']:.2f}%"]
                    for k, u in fit["kinds"].items()
                ],
            ),
            "",
            "fits" if fit["fits"] else "**DOES NOT FIT**",
        ]
    out += ["", "## Files", ""]
    out += [f"- `{p}`" for p in s["files"]]
    return "\n".join(out) + "\n"
