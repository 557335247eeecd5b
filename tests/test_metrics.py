"""Error metrics on hand-computed cases (expected values derived by hand)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hwapprox.approx.metrics import Metrics, compute_metrics


def test_elementwise_metrics_by_hand() -> None:
    # errors: 0 and -0.25; ref energy 0.25 + 0.25 = 0.5, error energy 0.0625
    m = compute_metrics([0.5, 0.25], [0.5, 0.5], lsb=0.125)
    assert m.n == 2
    assert m.max_abs == 0.25
    assert m.mean_abs == 0.125
    assert m.rms == pytest.approx(math.sqrt(0.0625 / 2), rel=1e-15)
    assert m.max_lsb == 2.0
    assert m.qsnr_db == pytest.approx(10 * math.log10(8.0), rel=1e-14)
    assert m.top1 is None
    assert m.kl is None
    assert m.sum_dev is None


def test_lsb_from_the_output_format() -> None:
    # ap_ufixed<8,0>: LSB 2^-8; an error of 3/256 is 3 LSB
    m = compute_metrics([3 / 256, 0.0], [0.0, 0.0], out_fmt="ap_ufixed<8,0>")
    assert m.lsb == 2.0**-8
    assert m.max_lsb == 3.0
    assert m.qsnr_db == -math.inf  # all-zero reference, non-zero error


def test_exact_output_has_infinite_qsnr() -> None:
    m = compute_metrics([0.25, -1.0], [0.25, -1.0], lsb=0.25)
    assert m.max_abs == 0.0
    assert m.qsnr_db == math.inf


def test_softmax_row_metrics_by_hand() -> None:
    # Row 0: ref (1/2, 1/2), y (3/4, 1/4): sums to 1, no clipping;
    #   KL = 1/2 ln((1/2)/(3/4)) + 1/2 ln((1/2)/(1/4)) = 1/2 ln(4/3).
    #   argmax: ref tie -> first index 0, y -> 0: agree.
    # Row 1: ref (0, 1), y (3/4, 0), lsb 1/4 -> floor eps = 1/8:
    #   q = (3/4, 1/8) renormalised = (6/7, 1/7); KL = 1 * ln(1 / (1/7)) = ln 7.
    #   argmax: ref 1, y 0: disagree.  Row sums: 1 and 3/4.
    y = np.array([[0.75, 0.25], [0.75, 0.0]])
    ref = np.array([[0.5, 0.5], [0.0, 1.0]])
    m = compute_metrics(y, ref, lsb=0.25, softmax=True)
    assert m.top1 == 0.5
    assert m.kl == pytest.approx((0.5 * math.log(4 / 3) + math.log(7)) / 2, rel=1e-14)
    assert m.sum_dev == 0.25
    assert m.mean_sum_dev == 0.125
    assert m.max_abs == 1.0
    assert m.max_lsb == 4.0
    # mean |err| = (1/4 + 1/4 + 3/4 + 1) / 4
    assert m.mean_abs == 0.5625


def test_softmax_metrics_along_another_axis() -> None:
    y = np.array([[0.75, 0.25], [0.75, 0.0]]).T
    ref = np.array([[0.5, 0.5], [0.0, 1.0]]).T
    m = compute_metrics(y, ref, lsb=0.25, softmax=True, axis=0)
    assert m.top1 == 0.5
    assert m.sum_dev == 0.25


def test_kl_floor_override() -> None:
    # ref (0, 1), y (1, 0) with floor 1/3: q = (1, 1/3) -> (3/4, 1/4); KL = ln 4
    m = compute_metrics([[1.0, 0.0]], [[0.0, 1.0]], lsb=0.5, softmax=True, kl_floor=1 / 3)
    assert m.kl == pytest.approx(math.log(4.0), rel=1e-14)


def test_worst_of_two() -> None:
    a = compute_metrics([0.5, 0.25], [0.5, 0.5], lsb=0.125)
    b = compute_metrics([0.5, 0.375], [0.5, 0.5], lsb=0.125)
    w = a.worst(b)
    assert isinstance(w, Metrics)
    assert w.n == 4
    assert w.max_abs == 0.25
    assert w.qsnr_db == a.qsnr_db  # the smaller QSNR
    assert w.top1 is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"y": [1.0, 2.0], "ref": [1.0], "lsb": 1.0}, r"^output shape \(2,\) differs"),
        ({"y": [], "ref": [], "lsb": 1.0}, r"^cannot compute metrics of an empty array$"),
        ({"y": [np.nan], "ref": [1.0], "lsb": 1.0}, r"must be finite"),
        ({"y": [1.0], "ref": [1.0]}, r"^need a positive output LSB"),
        (
            {"y": [1.0], "ref": [1.0], "lsb": 0.5, "out_fmt": "ap_fixed<8,4>"},
            r"^lsb=0.5 disagrees with out_fmt ap_fixed<8,4> \(LSB 0.0625\)$",
        ),
    ],
)
def test_bad_arguments_are_named(kwargs: dict, message: str) -> None:
    y = kwargs.pop("y")
    ref = kwargs.pop("ref")
    with pytest.raises(ValueError, match=message):
        compute_metrics(y, ref, **kwargs)
