"""Calibrated output formats, saturation warnings and the --budget search."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx_models import single_node

from hwapprox.export.builders import EncoderShape, bert_encoder, sample_inputs
from hwapprox.export.tuning import (
    SearchSpace,
    candidate_specs,
    fronts_of,
    screen,
    screen_groups,
    screen_rms,
    screen_sample,
    screen_sampled,
    share,
)
from hwapprox.export.validate import E2EBudget, import_model, validate

SHAPE = EncoderShape(layers=2, width=32, heads=4, ffn=64, seq=8, batch=None, vocab=50)


def _gelu_inputs(hi: float) -> dict[str, np.ndarray]:
    """Inputs of a GELU site reaching ``hi`` (as GELU inputs of real BERTs reach ~24)."""
    x = np.linspace(-6.0, hi, 4 * 256, dtype=np.float32).reshape(4, 256)
    return {"x": x}


def test_gelu_output_format_is_calibrated_not_the_default() -> None:
    model = single_node("Gelu", [4, 256], 20)
    res = validate(model, inputs=_gelu_inputs(24.0))
    spec = res.specs["gelu_node"]
    assert spec is not None
    assert float(spec.out_fmt.max) >= 24.0  # the default ap_fixed<16,5> stops at 16
    assert res.saturation["gelu_node"] == {"in": 0, "in_total": 1024, "out": 0, "out_total": 1024}
    assert res.warnings == []
    assert res.site_errors["gelu_node"]["max_abs"] < 4 * float(spec.out_fmt.lsb)


def test_saturation_is_counted_and_warned_never_silent() -> None:
    """A config that pins the old default output format saturates: counted and warned."""
    model = single_node("Gelu", [4, 256], 20)
    cfg = {"defaults": {"gelu": {"method": "edgemoe", "out_fmt": "ap_fixed<16,5,AP_RND,AP_SAT>"}}}
    res = validate(model, inputs=_gelu_inputs(24.0), config=cfg)
    spec = res.specs["gelu_node"]
    assert str(spec.out_fmt) == "ap_fixed<16,5,AP_RND,AP_SAT>"  # the config wins
    x = _gelu_inputs(24.0)["x"].astype(np.float64)
    expect_out = int(np.count_nonzero(x > 16.0 + 2.0**-11))  # GELU(x) ~ x beyond 16
    assert res.saturation["gelu_node"]["out"] == expect_out
    assert any("gelu_node" in w and "saturate" in w and "outputs" in w for w in res.warnings)
    # A clipping --range saturates inputs on purpose: counted too. Clip 4 without
    # headroom -> ap_fixed<16,4>, range [-8, 8).
    res = validate(model, inputs=_gelu_inputs(24.0), range_stat=4.0, headroom=0)
    assert str(res.specs["gelu_node"].in_fmt) == "ap_fixed<16,4,AP_RND,AP_SAT>"
    assert res.saturation["gelu_node"]["in"] == int(np.count_nonzero(x > 8.0))
    assert any("inputs" in w for w in res.warnings)


def test_layernorm_gamma_beta_formats_from_the_weights() -> None:
    model = single_node("LayerNormalization", [4, 64], 17)
    # An outlier channel as real BERTs have: gamma 40 on one channel.
    for init in model.graph.initializer:
        if init.name == "scale":
            g = np.frombuffer(init.raw_data, dtype=np.float32).copy()
            g[3] = 40.0
            init.raw_data = g.tobytes()
    res = validate(model, inputs={"x": np.random.default_rng(0).normal(0, 3, (4, 64))})
    spec = res.specs["layernormalization_node"]
    assert float(spec.gamma_fmt.max) >= 40.0
    assert float(spec.out_fmt.max) >= res.trace.out_stats["layernormalization_node"].absmax
    assert res.warnings == []


def test_share_splits_the_room() -> None:
    b = E2EBudget(cosine=0.999, max_abs=0.1, top1=1.0)
    s0 = share(b, 0, 4)
    assert s0.cosine == pytest.approx(1 - 0.001 / 4)
    assert s0.max_abs == pytest.approx(0.025)
    assert s0.top1 == 1.0
    assert share(b, 3, 4) == b


def test_screen_keeps_a_pareto_front() -> None:
    imp = import_model(bert_encoder(SHAPE, seed=2))
    res = validate(imp, inputs=sample_inputs(SHAPE, batch=4), budget="cosine=0.999")
    for t in res.tuning:
        assert t["front"] <= t["candidates"]
        costs = [e["score"] for e in t["evaluated"]]
        rms = [e["screen_rms"] for e in t["evaluated"]]
        assert costs == sorted(costs)
        assert all(a > b for a, b in itertools.pairwise(rms))  # strictly better
    site = imp.sites[0]
    stats, out = res.stats[site.name], res.trace.out_stats[site.name]
    cands = candidate_specs(site, stats, out, None, SearchSpace())
    front = screen(site, cands, res.trace.site_inputs[site.name], res.trace.site_outputs[site.name])
    assert 1 <= len(front) < len(cands)


def test_fronts_screened_by_spec_are_each_sites_own() -> None:
    """The search screens each distinct candidate spec once on all the sites that have
    it (screen_groups); every site's front is the one screening its candidates alone
    gives, in any group order."""
    imp = import_model(bert_encoder(SHAPE, seed=2))
    res = validate(imp, inputs=sample_inputs(SHAPE, batch=4))
    tr = res.trace
    cands, samples = {}, {}
    for s in res.selected:
        cands[s.name] = candidate_specs(
            s, tr.stats[s.name], tr.out_stats.get(s.name), None, SearchSpace()
        )
        samples[s.name] = (
            s,
            *screen_sample(
                s, tr.site_inputs[s.name], tr.site_outputs[s.name], tr.masks.get(s.name)
            ),
        )
    groups = screen_groups(cands)
    assert sum(len(names) for _, names in groups) == sum(len(c) for c in cands.values())
    assert len(groups) < sum(len(c) for c in cands.values())  # sites share candidates

    def screen_many(gs: list) -> list:
        return [
            [screen_rms(samples[n][0], sp, *samples[n][1:], None) for n in names]
            for sp, names in gs
        ]

    def reversed_order(gs: list) -> list:
        return screen_many(gs[::-1])[::-1]

    want = {n: screen_sampled(samples[n][0], c, *samples[n][1:]) for n, c in cands.items()}
    assert fronts_of(cands, groups, screen_many(groups)) == want
    assert fronts_of(cands, groups, reversed_order(groups)) == want


@pytest.mark.parametrize("mask", ["additive", "causal"])
def test_budget_leaves_no_site_float_on_a_masked_model(mask: str) -> None:
    model = bert_encoder(SHAPE, seed=4, mask=mask)
    res = validate(model, inputs=sample_inputs(SHAPE, batch=5, mask=True), budget="cosine=0.999")
    assert all(v is not None for v in res.specs.values())
    assert res.budget is not None
    assert res.budget.meets(res.end_to_end)
    assert all(t["cost_score"] is not None for t in res.tuning)
    assert res.end_to_end["cosine_min"] >= 0.999
