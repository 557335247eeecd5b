"""The self-contained HTML reports (``report.html``, ``summary.html``) and ``validate.png``.

One validation of the embedded example is shared (module fixture); the other
inputs are built by hand: a dict with keys the renderer does not know, a
minimal dict, a 100-site stand-in for the plot, a demo summary. The browser
test runs only where a Chromium is installed.
"""

from __future__ import annotations

import base64
import copy
import json
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from hwapprox.approx.base import Operator
from hwapprox.export import example
from hwapprox.export.validate import validate
from hwapprox.report.html import demo_html, validate_html
from hwapprox.report.validate import _jsonable, _plot, _short_name, write_report

PNG_SIG = b"\x89PNG\r\n\x1a\n"
EVIL = "<script>alert('x')</script>"
VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}


class _Page(HTMLParser):
    """Checks that every non-void element is closed in order; collects what the tests need."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[str] = []
        self.imgs: list[dict[str, str | None]] = []
        self.text: list[str] = []
        self.title = ""
        self.alerts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a)
        if tag == "section" and a.get("role") == "alert":
            self.alerts.append("")
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.errors.append(f"self-closing <{tag}/>")  # we emit HTML, not XHTML

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            self.errors.append(f"end tag of void element </{tag}>")
        elif not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1] == "title":
            self.title += data
        if self.stack and self.stack[-1] != "script":
            self.text.append(data)
        if self.alerts and "section" in self.stack:
            self.alerts[-1] += data


def _parse(page: str) -> _Page:
    assert page.startswith("<!DOCTYPE html>")
    p = _Page()
    p.feed(page)
    p.close()
    assert p.errors == []
    assert p.stack == [], f"unclosed: {p.stack}"
    assert p.tags.count("script") == 1  # only the inline sort script
    assert "http://" not in page
    assert "https://" not in page
    return p


@pytest.fixture(scope="module")
def validated():
    return validate(
        example.model_path(),
        inputs=example.inputs_path(),
        budget="top1=1,cosine=0.99",
        seed=0,
        threads=1,
    )


@pytest.fixture(scope="module")
def report(validated, tmp_path_factory):
    out = tmp_path_factory.mktemp("rep")
    return write_report(validated, out)


def test_write_report_writes_self_contained_html(validated, report) -> None:
    assert report["html"] == report["json"].parent / "report.html"
    page = report["html"].read_text(encoding="utf-8")
    p = _parse(page)
    text = " ".join(p.text)
    for s in validated.imported.sites:
        assert s.name in text
    assert "budget met" in text
    assert p.title.startswith("hwapprox validate: bert_tiny.onnx")
    # The plot, embedded byte for byte.
    (img,) = p.imgs
    prefix = "data:image/png;base64,"
    assert img["src"].startswith(prefix)
    blob = base64.b64decode(img["src"][len(prefix) :], validate=True)
    assert blob[:8] == PNG_SIG
    assert blob == report["plot"].read_bytes()


def test_html_escapes_and_shows_warnings_and_unknown_keys(validated, report) -> None:
    d = _jsonable(validated.as_dict())
    d = copy.deepcopy(d)
    site = d["sites"][0]
    site["name"] = EVIL
    site["mask"] = {"input": "attention_mask", "rows_masked": 3}
    site["saturation"] = {"in": 5, "out": 0, "in_total": 1000, "out_total": 1000}
    site["brand_new_metric"] = 0.125
    site["error"]["brand_new_err"] = 7
    d["end_to_end"]["pooled_cosine_min"] = 0.987654321
    d["end_to_end"]["outputs"] = {
        **d["end_to_end"]["outputs"],
        "second & <out>": {"max_abs": float("nan"), "cosine_min": "nan"},
    }
    d["warnings"] = [f"site {EVIL} saturated 5 of 1000 inputs", "second warning"]
    d["mystery"] = {"nested": [1, 2, 3]}
    page = validate_html(d, {"plot": report["plot"], "missing": Path("/nonexistent.png")})
    p = _parse(page)
    assert EVIL not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    text = " ".join(p.text)
    assert EVIL in text  # shown as text, not run
    # Warnings at the top, in an alert, before the measurements.
    (alert,) = p.alerts
    assert "second warning" in alert
    assert f"site {EVIL} saturated" in alert
    assert page.index("role='alert'") < page.index("id='end-to-end'")
    # Known new keys rendered, unknown scalars shown generically, nested ones too.
    assert "in 5/1000 (0.5%)" in text
    assert "rows_masked=3" in text
    for key in ("brand_new_metric", "brand_new_err", "pooled_cosine_min", "mystery"):
        assert key in text
    assert "0.987654" in text
    assert "second & <out>" in text
    assert len(p.imgs) == 1  # the missing image is left out


def test_minimal_and_odd_dicts_render() -> None:
    for d in (
        {},
        {"model": "m.onnx"},
        {"model": None, "sites": [{"name": "a"}, "junk", {"spec": None}], "end_to_end": 3},
        {
            "budget": {"cosine": 0.9, "new_limit": 2},
            "end_to_end": {"cosine_min": "nan", "outputs": {}},
            "tuning": [{"site": "s", "chosen": None}, "junk"],
            "timing_s": {"emulation": 0.5, "other": "x"},
            "warnings": "just one",
        },
    ):
        p = _parse(validate_html(d, {}))
        assert "hwapprox validation report" in " ".join(p.text)
    p = _parse(
        validate_html(
            {"budget": {"max_abs": 0.1}, "end_to_end": {"max_abs": 0.5, "outputs": {}}}, None
        )
    )
    assert "budget NOT met" in " ".join(p.text)


def _png_size(path: Path) -> tuple[int, int]:
    blob = path.read_bytes()
    assert blob[:8] == PNG_SIG
    return struct.unpack(">II", blob[16:24])


def _fake_result(n: int, seed: int = 0) -> SimpleNamespace:
    """A ValidationResult stand-in with ``n`` sites (one float, two unselected)."""
    rng = np.random.default_rng(seed)
    ops = [Operator.LAYERNORM, Operator.SOFTMAX, Operator.GELU]
    sites = [
        SimpleNamespace(name=f"/encoder/layer.{i // 3}/op_{i}", operator=ops[i % 3], pattern="op")
        for i in range(n)
    ]
    selected = sites[: n - 2]
    errs = {}
    for i, s in enumerate(selected):
        if i == 1:
            continue  # left float
        mx = float(10 ** rng.uniform(-4, -1))
        errs[s.name] = {"max_abs": mx, "mean_abs": mx / 5, "max_lsb": mx * 4096}
    ref = rng.normal(size=(8, 32))
    emu = ref + np.where(rng.random(ref.shape) < 0.25, 0.0, rng.normal(scale=1e-2, size=ref.shape))
    return SimpleNamespace(
        selected=selected,
        imported=SimpleNamespace(sites=sites),
        site_errors=errs,
        specs={},
        trace=SimpleNamespace(outputs={"y": ref}, feeds={}),
        emulated={"y": emu},
        token_mask_input=None,
        batch_axis=0,
    )


def test_plot_grows_with_the_number_of_sites(tmp_path) -> None:
    sizes = {}
    for n in (9, 100):
        f = tmp_path / f"p{n}.png"
        _plot(_fake_result(n), f)
        sizes[n] = _png_size(f)
    assert sizes[9][0] == sizes[100][0]  # same width
    # ~0.2 in per site at 100 dpi: 100 sites need a far taller figure
    assert sizes[100][1] > sizes[9][1] + 15 * 91


def test_long_site_names_keep_both_ends() -> None:
    a = "/encoder/layer.2/attention/output/LayerNorm/ReduceMean_80"
    b = a.replace("layer.2/", "layer.20/")
    assert _short_name(a) != _short_name(b)
    for n in (a, b, "x" * 80, "bert.encoder.layer.11.intermediate.act_fn.Erf_123_something"):
        short = _short_name(n)
        assert len(short) <= 48
        assert short[-8:] == n[-8:]
    assert _short_name("layer0.softmax_41") == "layer0.softmax_41"


def test_demo_html(tmp_path, report) -> None:
    summary = {
        "model": "hwapprox/export/data/bert_tiny.onnx (embedded example)",
        "n_sites": 2,
        "board": "pynq-z2",
        "budget": "top1=1,cosine=0.999",
        "passed": False,
        "total_seconds": 12.5,
        "stages": {
            "validate": {"status": "passed", "seconds": 1.0, "note": "ok"},
            "hls": {"status": "error", "seconds": 0.1, "note": "RuntimeError: g++ <exploded>"},
        },
        "validate": {
            "sites": [
                {"site": EVIL, "operator": "softmax/op", "method": "online", "site_max_abs": 0.01},
                {"site": "Erf_1", "operator": "gelu/erf", "method": "pwl", "new_col": 3},
            ],
            "end_to_end": {"max_abs": 0.04, "mean_abs": 0.01, "cosine_min": 0.9996, "top1": 1.0},
            "budget_met": True,
            "samples": 16,
        },
        "hls": None,
        "rtl": [{"unit": "gelu/pwl", "sites": ["Erf_1"], "bit_exact": True, "latency": "3-3"}],
        "resources": {
            "source": "estimate",
            "columns": ["count", "LUT"],
            "rows": [{"unit": "gelu/pwl", "sites": ["Erf_1"], "site": "Erf_1", "LUT": 330}],
        },
        "fit": {
            "board": "pynq-z2",
            "part": "xc7z020",
            "clock_mhz": 100.0,
            "basis": "sum of units",
            "kinds": {"LUT": {"used": 330.0, "available": 53200, "utilisation": 0.0062}},
            "fits": True,
        },
        "files": ["validate/report.html", "summary.md"],
        "warnings": ["demo warning"],
    }
    page = demo_html(json.loads(json.dumps(summary)), {"validate/validate.png": report["plot"]})
    p = _parse(page)
    text = " ".join(p.text)
    assert EVIL in text
    assert EVIL not in page
    for s in (
        "FAILED",
        "demo warning",
        "RuntimeError: g++ <exploded>",
        "Erf_1",
        "new_col",
        "0.62%",
    ):
        assert s in text, s
    assert len(p.alerts) == 2  # the warnings and the failed stage
    assert p.imgs[0]["src"].startswith("data:image/png;base64,")
    assert "href='validate/report.html'" in page


def test_demo_writes_summary_html(tmp_path, monkeypatch, validated) -> None:
    """The demo's call site: summary.html beside summary.md, listed and owned."""
    import hwapprox.export.validate as v
    from hwapprox import demo

    monkeypatch.setattr(v, "validate", lambda *a, **k: validated)
    out = tmp_path / "d"
    s = demo.run_demo(out, skip_hls=True, skip_rtl=True)
    assert "summary.html" in demo.OWNED
    assert {"summary.html", "validate/report.html"} <= set(s["files"])
    p = _parse((out / "summary.html").read_text(encoding="utf-8"))
    assert p.title == "hwapprox demo summary"
    assert [i["src"][:22] for i in p.imgs] == ["data:image/png;base64,"]
    assert "ReduceMean_5" in " ".join(p.text)


def _chromium() -> str | None:
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    return None


@pytest.mark.skipif(_chromium() is None, reason="no Chromium (apt-get install chromium)")
def test_report_renders_in_headless_chromium(report, tmp_path) -> None:
    from PIL import Image

    args = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    url = report["html"].resolve().as_uri()
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*args, f"--screenshot={shot}", "--window-size=1200,2000", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 20_000
    with Image.open(shot) as im:
        assert im.size == (1200, 2000)
        colours = im.convert("RGB").resize((300, 500)).getcolors(maxcolors=1_000_000)
        assert len(colours) > 50  # text, tables and the plot, not a blank page
    dom = subprocess.run(
        [*args, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "<title>hwapprox validate: bert_tiny.onnx</title>" in dom
    assert "budget met" in dom
