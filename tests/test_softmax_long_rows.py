"""Online softmax accuracy on long rows and hard row kinds (issue 14): at most 1 output
LSB against the float64 reference at W = 8..16 on rows of up to 1024 elements.

Rows: the shared edge rows (one-hot on 0 and on the minimum, tied maxima, ramps,
alternating min/max, constants; ``hwapprox.approx.stimulus.edge_rows``), full-range
uniform rows and Gaussian rows of std 2. The 1.00 LSB cases are one-hot rows, whose
probability 1.0 saturates to ``1 - 2^-W`` in ``ap_ufixed<W,0>``.
"""

from __future__ import annotations

import numpy as np
import pytest

from hwapprox.approx.registry import make_spec
from hwapprox.approx.stimulus import edge_rows


def _rows(fmt, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    one = 1 << fmt.frac_bits
    return np.concatenate(
        [
            np.asarray(edge_rows(fmt, n, rng)),  # tied maxima need the rng
            rng.integers(fmt.min_raw, fmt.max_raw + 1, (4, n)),
            np.clip(rng.normal(0, 2 * one, (4, n)), fmt.min_raw, fmt.max_raw).astype(np.int64),
        ]
    )


@pytest.mark.parametrize("n", [16, 256, 1000, 1024])
@pytest.mark.parametrize("w", [8, 10, 12, 16])
def test_online_softmax_within_one_lsb(w: int, n: int) -> None:
    spec = make_spec("softmax", "online", out_fmt=f"ap_ufixed<{w},0,AP_RND,AP_SAT>")
    x = _rows(spec.in_fmt, n, seed=w * 10_000 + n)
    y = spec.out_fmt.to_float(spec.model(x, axis=-1))
    ref = spec.reference(spec.in_fmt.to_float(x), axis=-1)
    err = np.abs(y - ref).max() * 2.0**w
    assert err <= 1.0 + 1e-9, err


def test_the_bound_can_fail() -> None:
    """The check is tight enough to fail: the LUT-exp variant (12-bit table over 4
    integer bits) misses it at 16 bits on the same rows."""
    spec = make_spec("softmax", "online", out_fmt="ap_ufixed<16,0,AP_RND,AP_SAT>", exp_unit="lut")
    x = _rows(spec.in_fmt, 256, seed=1)
    y = spec.out_fmt.to_float(spec.model(x, axis=-1))
    ref = spec.reference(spec.in_fmt.to_float(x), axis=-1)
    assert np.abs(y - ref).max() * 2.0**16 > 1.0
