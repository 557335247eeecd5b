"""The shared edge stimulus (hwapprox.approx.stimulus) used by the HLS and RTL tests."""

from __future__ import annotations

import numpy as np
import pytest

from hwapprox.approx.stimulus import edge_codes, edge_rows, short_rows
from hwapprox.fixed import FixedFormat
from hwapprox.rtl_sim.tb import stimulus as tb_stimulus


@pytest.mark.parametrize("fmt", ["ap_fixed<8,3>", "ap_ufixed<6,2>", "ap_fixed<16,6>"])
@pytest.mark.parametrize("n", [1, 2, 7])
def test_edge_rows_are_in_range_and_have_every_kind(fmt: str, n: int) -> None:
    f = FixedFormat.parse(fmt)
    lo, hi = f.min_raw, f.max_raw
    rows = edge_rows(f, n, np.random.default_rng(0), every_position=True, ties=3)
    assert rows.dtype == np.int64
    assert rows.shape[1] == n
    assert rows.min() >= lo
    assert rows.max() <= hi
    as_set = {tuple(r) for r in rows.tolist()}
    zero = 0 if f.signed else lo
    for v in (lo, zero, hi):
        assert (v,) * n in as_set  # constants
    for p in range(n):  # one-hot at every position, on zero and on min
        for floor in (zero, lo):
            r = [floor] * n
            r[p] = hi
            assert tuple(r) in as_set
    if n >= 2:
        assert tuple(np.where(np.arange(n) % 2 == 0, lo, hi)) in as_set  # alternating
        tied = rows[(rows[:, 0] == rows[:, 1]) & (rows[:, 0] == rows.max(axis=1))]
        assert len(tied) >= 3
    middle_only = edge_rows(f, n)  # no rng: no tied rows; one-hot in the middle only
    assert len(middle_only) == len(rows) - 3 - 2 * (n - 1)


def test_edge_codes_and_short_rows() -> None:
    f = FixedFormat.parse("ap_fixed<8,3>")
    assert edge_codes(f).tolist() == [-128, -127, -1, 0, 1, 126, 127]
    u = FixedFormat.parse("ap_ufixed<4,2>")
    assert edge_codes(u).tolist() == [0, 1, 14, 15]
    assert [r.tolist() for r in short_rows(u)] == [[0], [15]]


def test_rtl_stimulus_starts_with_the_shared_edge_rows() -> None:
    f = FixedFormat.parse("ap_fixed<10,4>")
    rows = tb_stimulus.make_rows(f, 6, 4, seed=3)
    shared = edge_rows(f, 6, np.random.default_rng(3), ties=tb_stimulus.TIES)
    assert np.array_equal(np.stack(rows[: len(shared)]), shared)
    assert [r.size for r in rows[len(shared) : len(shared) + 3]] == [1, 1, 1]
