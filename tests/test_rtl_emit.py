"""Data emitted for the RTL units: $readmemh words; the table word width."""

from __future__ import annotations

import numpy as np
import pytest

from hwapprox.approx.base import SpecError
from hwapprox.approx.hwparams import table_width
from hwapprox.approx.registry import make_spec
from hwapprox.rtl_sim.emit import memh_text
from hwapprox.rtl_sim.units import get_unit, overflow_code, rounding_code


def test_memh_two_complement_words() -> None:
    assert memh_text([0, 1, -1, -8, 7], 4) == "0\n1\nf\n8\n7\n"
    assert memh_text([255, 256], 9) == "0ff\n100\n"


def test_memh_refuses_values_that_do_not_fit() -> None:
    with pytest.raises(SpecError, match=r"table values in \[-9, 7\] do not fit 4-bit words"):
        memh_text([-9, 7], 4)


def test_table_width() -> None:
    assert table_width([0, 255]) == 8
    assert table_width([-128, 127]) == 8
    assert table_width([-129]) == 9


def test_mode_codes_follow_hwa_pkg() -> None:
    assert rounding_code("AP_TRN") == 0
    assert rounding_code("AP_RND") == 2
    assert rounding_code("AP_RND_CONV") == 6
    assert overflow_code("AP_WRAP") == 0
    assert overflow_code("AP_SAT_SYM") == 3


def test_unit_memories_hold_the_spec_tables() -> None:
    """The ROM words are the spec's own table integers, nothing recomputed."""
    spec = make_spec("gelu", "lut")
    _, mems = get_unit("gelu", "lut").config(spec)
    words = [int(w, 16) for w in mems["LUT_FILE"].split()]
    w = spec.out_fmt.width
    got = np.array([v - (1 << w) if v >= 1 << (w - 1) else v for v in words])
    assert np.array_equal(got, spec.tables()["lut"])
