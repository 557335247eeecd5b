"""Calibration statistics and the input-format rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hwapprox.export.calibrate import SiteStats
from hwapprox.export.errors import ExportError


def test_stats_of_known_data() -> None:
    s = SiteStats.of("s", np.arange(-500, 501, dtype=np.float32))  # 1001 values
    assert (s.count, s.min, s.max, s.mean, s.absmax) == (1001, -500.0, 500.0, 0.0, 500.0)
    assert s.std == pytest.approx(np.sqrt(1001**2 - 1) / np.sqrt(12))  # discrete uniform
    assert dict(s.percentiles)[50.0] == 0.0
    assert dict(s.percentiles)[1.0] == -490.0  # linear interpolation: index 10 of 1000


@pytest.mark.parametrize(
    ("absmax", "headroom", "int_bits"),
    # smallest I with absmax < 2^(I-1), plus headroom, worked by hand
    [(4.0, 1, 5), (3.9, 1, 4), (3.9, 0, 3), (0.3, 0, 0), (0.5, 0, 1), (0.0, 1, 2), (100.0, 2, 10)],
)
def test_int_bits_rule(absmax: float, headroom: int, int_bits: int) -> None:
    s = SiteStats.of("s", np.array([-absmax / 2, absmax]))
    assert s.int_bits(headroom) == int_bits
    fmt = s.choose_format(16, headroom)
    assert (fmt.width, fmt.int_bits, str(fmt.rounding), str(fmt.overflow)) == (
        16,
        int_bits,
        "AP_RND",
        "AP_SAT",
    )
    if headroom == 0 and absmax > 0:  # tight: absmax fits, twice it saturates
        assert float(fmt.max) >= absmax
        assert float(fmt.max) < 2 * absmax


def test_format_errors() -> None:
    with pytest.raises(ExportError, match=r"^site s: range max = 1e\+05 needs 19 integer bits"):
        SiteStats.of("s", np.array([1e5])).choose_format(16, 1)
    s = SiteStats.of("s", np.array([0.0, -np.inf, 1.0]))
    assert s.nonfinite == 1
    with pytest.raises(ExportError, match=r"^site s: 1 non-finite values"):
        s.choose_format()


def test_percentile_range() -> None:
    """1000 values in [-1, 1] plus one outlier 1000: max needs I = 11 (+1), p99.9
    ignores the outlier (|p0.1|, |p99.9| < 1 -> I = 1 + 1)."""
    x = np.concatenate([np.linspace(-0.99, 0.99, 1000), [1000.0]])
    s = SiteStats.of("s", x)
    assert s.int_bits(1, "max") == 12
    assert s.int_bits(1, "p99.9") == 2
    assert s.int_bits(1, "p99") == 2
    with pytest.raises(ExportError, match=r"^range policy 'p50' is not one of"):
        s.int_bits(1, "p50")


def test_string_inputs_are_refused_naming_the_input(tmp_path: Path) -> None:
    """issue 21: an npz of strings ended in numpy's 'invalid literal for int()'."""
    from hwapprox.export import example
    from hwapprox.export.calibrate import prepare_inputs
    from hwapprox.export.errors import ExportError
    from hwapprox.export.graph import load_model

    f = tmp_path / "str.npz"
    np.savez(f, input_ids=np.array([["a"] * 16] * 2))
    with pytest.raises(ExportError, match=r"input 'input_ids' holds <U1 values \(not numbers\)"):
        prepare_inputs(load_model(example.model_path()), f)
