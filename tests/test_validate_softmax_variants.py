"""``validate`` on a corpus model (tests/corpus) with the issue-15 softmax options: the
unified max φ calibrated per site (``unified_max: auto``) and threshold skipping; the
per-site fallback rate and skip fraction appear in the result, its JSON and the text
report, and match the spec's own statistics on the site input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hwapprox.approx.base import Operator
from hwapprox.export.calibrate import unified_max_phi
from hwapprox.export.validate import validate, variant_stats
from hwapprox.report.validate import format_report

CORPUS = Path(__file__).parent / "corpus"
ENTRY = next(
    e
    for e in json.loads((CORPUS / "manifest.json").read_text())["models"]
    if e["file"] == "bert_ts14.onnx"
)


def _inputs() -> dict[str, np.ndarray]:
    with np.load(CORPUS / ENTRY["inputs"]) as z:
        return {k: z[k] for k in z.files}


def test_unified_max_phi_minimises_the_predicted_fallback():
    rng = np.random.default_rng(0)
    mx = rng.normal(3.0, 0.5, 5000)
    ext = np.stack([mx, mx + rng.uniform(0.0, 1.0, 5000)], axis=1)
    phi, rate = unified_max_phi(ext, 4)
    safe = (mx <= phi) & (ext[:, 1] + 4 * np.log(2) >= phi)
    assert rate == pytest.approx(1 - safe.mean())
    for other in (phi - 0.5, phi + 0.5, np.quantile(mx, 0.999)):
        s = (mx <= other) & (ext[:, 1] + 4 * np.log(2) >= other)
        assert 1 - s.mean() >= rate
    assert rate < 0.01  # rows within 2.8 of each other: one φ covers (almost) all


@pytest.fixture(scope="module")
def result():
    cfg = {
        "defaults": {"softmax": {"method": "online", "skip_threshold": 6.0}},
        "sites": {},
    }
    res0 = validate(CORPUS / ENTRY["file"], inputs=_inputs(), config=cfg)
    sm = [s for s in res0.selected if s.operator is Operator.SOFTMAX]
    # the first softmax site: unified max with φ calibrated from its rows
    cfg["sites"][sm[0].name] = {"unified_max": "auto", "skip_threshold": None}
    return validate(CORPUS / ENTRY["file"], inputs=_inputs(), config=cfg), sm


def test_validate_reports_fallback_rate_and_skip_fraction(result):
    res, sm = result
    first, rest = sm[0], sm[1:]
    err = res.site_errors[first.name]
    spec = res.specs[first.name]
    assert spec.unified_max is not None
    assert spec.unified_max == err["unified_max"]
    # the toy corpus BERT's row maxima spread over ~25 (per head), so one φ leaves many
    # rows to the exact path; the measured rate is the one the calibration predicted,
    # and a φ one unit either side does no better
    _, predicted = unified_max_phi(res.trace.row_extents[first.name], spec.unified_low)
    assert abs(err["fallback_rate"] - predicted) <= 0.05
    x, mk = res.trace.site_inputs[first.name], res.trace.masks.get(first.name)
    for d in (-1.0, 1.0):
        other = spec.replace(unified_max=spec.unified_max + d)
        assert variant_stats(first, other, x, mk)["fallback_rate"] >= err["fallback_rate"]
    assert err["skip_fraction"] is None
    for s in rest:
        e = res.site_errors[s.name]
        assert e["fallback_rate"] is None
        assert 0.0 < e["skip_fraction"] < 1.0
        assert e["skip_max_abs"] <= 0.01
    # the numbers are the spec's statistics on the site's float input and mask
    s = rest[0]
    again = variant_stats(
        s, res.specs[s.name], res.trace.site_inputs[s.name], res.trace.masks.get(s.name)
    )
    assert again["skip_fraction"] == res.site_errors[s.name]["skip_fraction"]
    text = format_report(res)
    assert "Softmax variants" in text
    assert first.name in text.split("Softmax variants")[1]
    d = res.as_dict()
    row = next(x for x in d["sites"] if x["name"] == first.name)
    assert row["error"]["fallback_rate"] == err["fallback_rate"]
    assert res.end_to_end["cosine_min"] >= 0.99


def test_auto_phi_without_calibration_is_refused():
    from hwapprox.approx.config import ApproxConfig

    cfg = ApproxConfig.from_dict({"defaults": {"softmax": {"method": "online",
                                                           "unified_max": "auto"}}})  # fmt: skip
    with pytest.raises(Exception, match=r"unified_max: auto needs a φ calibrated"):
        cfg.resolve_one("sm", Operator.SOFTMAX)


def test_fused_attention_with_skipping_and_a_refused_unified_max():
    """``--attention fused`` runs a skipping softmax as the fused row (no V loads for the
    skipped keys); a unified-max softmax has no fused form and the site is named."""
    from hwapprox.export.errors import ExportError

    skip = {"defaults": {"softmax": {"method": "online", "skip_threshold": 8.0}}}
    res = validate(CORPUS / ENTRY["file"], inputs=_inputs(), config=skip, attention="fused")
    assert res.fused is not None
    assert res.fused["end_to_end"]["cosine_min"] >= 0.99
    uni = {"defaults": {"softmax": {"method": "online", "unified_max": 4.0}}}
    with pytest.raises(ExportError, match=r"site .*Softmax: no fused attention row: .*unified"):
        validate(CORPUS / ENTRY["file"], inputs=_inputs(), config=uni, attention="fused")
