"""The AXI-Stream protocol rules the testbench monitor checks (pure Python, no simulator)."""

from __future__ import annotations

from hwapprox.rtl_sim.tb.axis import axis_violations


def test_legal_stream_has_no_violations() -> None:
    # valid with backpressure held stable, transfers, idle cycles, ready without valid
    s = [
        (0, 0, 1, 0, 0),
        (1, 1, 0, 5, 0),
        (2, 1, 0, 5, 0),
        (3, 1, 1, 5, 0),
        (4, 1, 1, 6, 1),
        (5, 0, 0, 0, 0),
        (6, 0, 1, 9, 1),
    ]
    assert axis_violations(s) == []


def test_valid_dropped_under_backpressure() -> None:
    s = [(0, 1, 0, 5, 0), (1, 0, 0, 5, 0)]
    (v,) = axis_violations(s)
    assert v.startswith("cycle 1: tvalid dropped before the transfer")


def test_data_or_last_changed_while_stalled() -> None:
    assert axis_violations([(0, 1, 0, 5, 0), (1, 1, 0, 6, 0)])[0].startswith(
        "cycle 1: tdata/tlast changed while stalled (5/0 -> 6/0)"
    )
    assert axis_violations([(0, 1, 0, 5, 0), (1, 1, 1, 5, 1)])[0].startswith(
        "cycle 1: tdata/tlast changed while stalled (5/0 -> 5/1)"
    )


def test_x_on_handshake_signals() -> None:
    assert axis_violations([(3, None, 1, 0, 0)]) == ["cycle 3: tvalid/tready is X or Z"]


def test_changing_data_after_a_transfer_is_legal() -> None:
    assert axis_violations([(0, 1, 1, 5, 0), (1, 1, 0, 6, 0), (2, 1, 1, 6, 0)]) == []
