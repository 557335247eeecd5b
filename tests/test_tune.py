"""Tuning to an error budget: the cheapest spec that meets it, or a clear 'none'.

The ideal spec's error is known by construction (tests/approx_ideal_specs.py):
round-to-nearest gives |err| <= 0.5 LSB; clearing c low bits adds [0, 2^c - 1]
LSB. Its cost score is ``width - coarse`` (64 table entries of that many bits).
"""

from __future__ import annotations

import concurrent.futures as cf

import approx_ideal_specs
import pytest

from hwapprox.approx.base import SpecError
from hwapprox.approx.inputs import InputSet
from hwapprox.approx.sweep import Grid
from hwapprox.approx.tune import Budget, tune

SETS = (InputSet(rows=32, n=32, sigma=2.0), InputSet(dist="heavy", rows=32, n=64, sigma=3.0))


@pytest.fixture(autouse=True)
def _ideal(monkeypatch: pytest.MonkeyPatch) -> None:
    approx_ideal_specs.register(monkeypatch)


def _grid() -> Grid:
    return Grid(
        operator="softmax",
        methods=["ideal"],
        fields={"coarse": [0, 1, 2]},
        out_widths=[6, 8, 10],
        inputs=SETS,
    )


def test_cheapest_spec_within_one_lsb() -> None:
    # Scores (width - coarse): 4 (6,2) 5 (6,1) 6 (6,0) (8,2) ...
    # coarse >= 1 reaches errors in (1, 1.5] LSB for a good share of outputs, so the
    # cheapest within 1 LSB is width 6, coarse 0 (score 6); (8, 2) also scores 6 but
    # errs up to 3.5 LSB.
    res = tune(_grid(), Budget(max_lsb=1.0))
    assert res.met
    assert res.best is not None
    assert res.best.spec.out_fmt.width == 6
    assert res.best.spec.coarse == 0
    assert res.best.score == 6.0
    assert res.best.metrics is not None
    assert res.best.metrics.max_lsb <= 0.5
    # nothing dearer than score 6 was measured
    assert max(c.score for c in res.evaluated) == 6.0
    assert "cheapest spec meeting max_lsb <= 1" in res.summary()


def test_absolute_budget_picks_a_wider_output() -> None:
    # max abs <= 1/512: 0.5 LSB of an 8-bit ap_ufixed<8,1> output (LSB 2^-7) is 2^-8,
    # within; 6 bits (LSB 2^-5, half 2^-6) is not. The other score-8 candidate,
    # (10, 2) with LSB 2^-9, errs up to 3.5 * 2^-9 > 2^-8.
    res = tune(_grid(), Budget(max_abs=2.0**-8))
    assert res.met
    assert res.best is not None
    assert (res.best.spec.out_fmt.width, res.best.spec.coarse) == (8, 0)


def test_impossible_budget_reports_none_and_the_closest() -> None:
    # Rounding to nearest cannot beat 0.5 LSB on spread-out outputs.
    res = tune(_grid(), Budget(max_lsb=0.4))
    assert not res.met
    assert res.best is None
    assert len(res.evaluated) == res.space_size == 9
    assert res.closest is not None
    assert res.closest.spec.coarse == 0
    assert 1.0 < res.closest.ratio <= 0.5 / 0.4
    text = res.summary()
    assert text.startswith("no spec in the search space (9 candidates) meets max_lsb <= 0.4")
    assert "closest:" in text


def test_parallel_tune_agrees_with_serial() -> None:
    serial = tune(_grid(), Budget(max_lsb=1.0))
    with cf.ThreadPoolExecutor(3) as ex:
        par = tune(_grid(), Budget(max_lsb=1.0), jobs=3, executor=ex)
    assert par.best is not None
    assert serial.best is not None
    assert par.best.spec == serial.best.spec


def test_budget_validation() -> None:
    with pytest.raises(SpecError, match=r"^an error budget needs at least one limit"):
        Budget()
    with pytest.raises(SpecError, match=r"^budget max_lsb=-1 must be a positive finite number$"):
        Budget(max_lsb=-1)
    with pytest.raises(SpecError, match=r"^budget min_top1=2 must be <= 1"):
        Budget(min_top1=2)


def test_softmax_only_budgets_on_other_operators() -> None:
    grid = Grid(operator="gelu", methods=["ideal"], inputs=(InputSet(rows=4, n=16),))
    with pytest.raises(SpecError, match=r"^budget on kl does not apply to this operator$"):
        tune(grid, Budget(kl=0.1))
