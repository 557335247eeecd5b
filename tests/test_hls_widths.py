"""One hardware parameter set per spec (see ``tests/hls_widths_check.py``).

The per-unit, per-format-set width identities (HLS type widths =
``hw_params()`` = SV parameters) run in ``test_hls_softmax/gelu/layernorm.py``
and ``test_hls_attnact.py`` on the binaries of their bit-exactness tests. Here:
every HLS unit is covered by at least two format sets there (including every RTL
test's parameter set), the rounding/overflow codes are ``hwa_pkg.sv``'s, the only SV parameters
outside ``hw_params()`` are the row buffer's, and no unit header names a fixed
64-bit (or wider) type.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import test_hls_attnact
import test_hls_gelu
import test_hls_layernorm
import test_hls_softmax
from hls_widths_check import ROW_BUFFER
from rtl_cases import CASES as RTL_CASES

from hwapprox.approx.base import Operator
from hwapprox.approx.hwparams import OVERFLOW_CODES, ROUNDING_CODES
from hwapprox.approx.registry import make_spec
from hwapprox.hls.emit import INCLUDE_DIR
from hwapprox.hls.units import UNITS
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
