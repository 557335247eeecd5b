"""One hardware parameter set per spec (see ``tests/hls_widths_check.py``).

The per-unit, per-format-set width identities (HLS type widths =
``hw_params()`` = SV parameters) run in ``test_hls_softmax/gelu/layernorm.py``
and ``test_hls_attnact.py`` on the binaries of their bit-exactness tests. Here:
every HLS unit is covered by at least two format sets there (including every RTL
test's parameter set), the rounding/overflow codes are ``hwa_pkg.sv``'s, the only SV parameters
outside ``hw_params()`` are the row buffer's, every ``*_W`` of ``hw_params()`` is an SV
parameter of the unit (or one of :data:`SV_DERIVED`, each with the reason), so that the
identities above cover the SV intermediates as they do the HLS types, and no unit header
names a fixed 64-bit (or wider) type.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import test_hls_attnact
import test_hls_gelu
import test_hls_layernorm
import test_hls_softmax
from hls_widths_check import ROW_BUFFER, sv_value
from rtl_cases import CASES as RTL_CASES
from test_rtl_attention import SETS as ATTENTION_SETS

from hwapprox.approx.base import Operator
from hwapprox.approx.hwparams import OVERFLOW_CODES, ROUNDING_CODES
from hwapprox.approx.registry import make_spec
from hwapprox.hls.emit import INCLUDE_DIR
from hwapprox.hls.units import UNITS
from hwapprox.rtl_sim.attention import attention_config
from hwapprox.rtl_sim.units import UNITS as RTL_UNITS

RTL_DIR = Path(__file__).resolve().parents[1] / "hwapprox" / "rtl_sim" / "rtl"


def _hls_cases() -> list[tuple[str, str, dict]]:
    return (
        [("softmax", m, f) for m, f, _ in test_hls_softmax.CASES]
        + [("gelu", m, f) for m, f in test_hls_gelu.CASES]
        + [("layernorm", m, f) for m, f, _ in test_hls_layernorm.CASES]
        + list(test_hls_attnact.CASES)
    )


def test_every_unit_has_two_format_sets() -> None:
    count: dict[tuple[str, str], set[str]] = {}
    for op, m, f in _hls_cases():
        count.setdefault((op, m), set()).add(repr(sorted(f.items())))
    assert set(count) == set(UNITS)
    assert min(len(v) for v in count.values()) >= 2, count


def test_every_rtl_parameter_set_is_an_hls_case() -> None:
    hls = {(op, m, repr(sorted(f.items()))) for op, m, f in _hls_cases()}
    for _, op, m, f, _ in RTL_CASES:
        assert (op, m, repr(sorted(f.items()))) in hls, (op, m, f)


@pytest.mark.parametrize(("op", "method"), [(str(o), m) for o, m in RTL_UNITS])
def test_sv_parameters_outside_hw_params_are_the_row_buffer(op: str, method: str) -> None:
    spec = make_spec(op, method)
    params, _ = RTL_UNITS[(Operator(op), method)].config(spec, 24)
    hw = set(spec.hw_params())
    assert set(params) - hw <= ROW_BUFFER


_X_W = (
    "the input code zero-extended for ap_ufixed inputs: HLS only (the SV units take signed inputs)"
)
_RECIP = {
    "RU_W": "hwa_recip's mantissa U is [WF:0], WF + 1 bits: the same number",
    "RT_W": "hwa_recip forms the PWL value at RP_W (>= RT_W + 1, its sign), with the products",
    "RS_W": "hwa_recip's final scaling LW: exact for any d > 0 (an empty row's d = 0 is not "
    "d >= ONE, which RS_W assumes)",
    "RPRE_W": "hwa_recip's final scaling LW saturates straight into R_W",
}
#: hw_params widths that an SV unit takes as no parameter of its own, and why (the
#: audit of issue 23). Every other ``*_W`` of the spec is a parameter of the unit's top
#: (passed on to its submodules), so ``hls_widths_check`` holds it equal to the HLS type
#: and to ``hw_params()``. Entries are exact: a width the SV starts taking (or stops
#: taking) fails :func:`test_sv_derived_is_exact` until this list says so.
SV_DERIVED: dict[tuple[str, str], dict[str, str]] = {
    ("gelu", "lut"): {"CODE_W": "hwa_lut indexes with the IN_W-bit code: the same number"},
    ("sigmoid_attention", "lut"): {"CODE_W": "as gelu/lut"},
    ("softmax", "online"): {
        "X_W": _X_W,
        "DELTA_W": "|x - m| < 2^IN_W: the SV's DW = IN_W, the same number",
        "PROD_W": "hwa_exp_unit's PW: d*LOG2E as a signed product, before the left shift",
        **_RECIP,
    },
    ("softmax", "softermax"): {"X_W": _X_W, **_RECIP},
    ("softmax", "ibert"): {
        "X_W": _X_W,
        "Y_W": "hwa_softmax_3pass shifts e*factor within PROD_W and saturates it into OUT_W",
    },
    ("softmax", "shiftmax"): {"X_W": _X_W, "Y_W": "as softmax/ibert"},
    ("layernorm", "rsqrt_lut"): {"X_W": _X_W},
    ("layernorm", "rmsnorm"): {
        "X_W": _X_W,
        "S1_W": "RMSNorm sums no S1 (the shared rsqrt derivation's width; the SV has none)",
    },
    ("attention_row", "online"): {
        "X_W": _X_W,
        "DELTA_W": "as softmax/online",
        "PROD_W": "as softmax/online",
        "S_W": "the score is the softmax's input code: IN_W, the same number",
        "OUT_W": "the softmax's out_fmt: unused, the row's output is Y_W",
        **dict.fromkeys(
            ("CS_W", "CRS_W", "CZ_W", "U_S_W", "UOUTP_W"),
            "a softmax option the row does not implement (clipped, unified max)",
        ),
        "OUTP_W": "E*r: the row multiplies o*r instead (YP_W)",
        **_RECIP,
    },
}


def _sv_and_hw(case: tuple) -> tuple[tuple[str, str], dict, dict]:
    """(unit key, SV parameters, hw_params) of an RTL test case or attention row set."""
    if case[0] == "attention_row":
        spec, dim, dim_v = ATTENTION_SETS[case[1]]()
        return (
            ("attention_row", "online"),
            attention_config(spec, dim, dim_v)[0],
            (spec.hw_params(dim, dim_v)),
        )
    _, op, m, fields, n = case
    spec = make_spec(op, m, **fields)
    params, _ = RTL_UNITS[(Operator(op), m)].config(spec, n)
    return (op, m), params, spec.hw_params(n)


_SV_CASES = [*RTL_CASES, *(("attention_row", k) for k in ATTENTION_SETS)]


@pytest.mark.parametrize("case", _SV_CASES, ids=["-".join(c[:2]) for c in _SV_CASES])
def test_every_hw_params_width_is_an_sv_parameter(case: tuple) -> None:
    """At every RTL test's parameter set: each ``*_W`` of hw_params is an SV parameter of
    the unit with the same value, unless :data:`SV_DERIVED` says why not."""
    key, params, hw = _sv_and_hw(case)
    missing = {k for k in hw if k.endswith("_W")} - set(params)
    assert missing <= set(SV_DERIVED.get(key, {})), sorted(missing - set(SV_DERIVED.get(key, {})))
    for k in set(hw) & set(params):
        assert sv_value(params[k]) == hw[k], (k, params[k], hw[k])


@pytest.mark.parametrize("key", sorted(SV_DERIVED))
def test_sv_derived_is_exact(key: tuple[str, str]) -> None:
    """Each listed width is one the default spec has and its SV unit does not take."""
    if key[0] == "attention_row":
        _, params, hw = _sv_and_hw(("attention_row", "wide-16b-scale"))
    else:
        spec = make_spec(*key)
        params, _ = RTL_UNITS[(Operator(key[0]), key[1])].config(spec, 24)
        hw = spec.hw_params(24)
    missing = {k for k in hw if k.endswith("_W")} - set(params)
    assert missing == set(SV_DERIVED[key])


def test_rounding_and_overflow_codes_are_hwa_pkg() -> None:
    text = (RTL_DIR / "hwa_pkg.sv").read_text()
    pkg = {k: int(v) for k, v in re.findall(r"localparam int (\w+) = (\d+);", text)}
    for mode, code in ROUNDING_CODES.items():
        assert pkg["RND_" + mode.value.removeprefix("AP_")] == code
    for ovf, code in OVERFLOW_CODES.items():
        assert pkg["OVF_" + ovf.value.removeprefix("AP_")] == code


#: the unit headers: softmax.h and its per-method headers (softmax_*.h), and the rest
UNIT_HEADERS = [
    "common",
    "intmath",
    *sorted(p.stem for p in (INCLUDE_DIR / "hwapprox").glob("softmax*.h")),
    "gelu",
    "layernorm",
    "rows",
]


@pytest.mark.parametrize("header", UNIT_HEADERS)
def test_no_fixed_64_bit_types_in_the_unit_headers(header: str) -> None:
    text = (INCLUDE_DIR / "hwapprox" / f"{header}.h").read_text()
    assert not re.search(r"ap_u?int<\s*(64|96|128)\s*>", text)
