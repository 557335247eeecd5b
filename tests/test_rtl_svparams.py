"""SV parameter lists are read from the sources (hwapprox.rtl_sim.svparams), and a unit's
SV parameters are derived from them: every parameter of the top comes from hw_params,
the unit's row geometry, a memory file or a declared knob, or the config fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hwapprox.approx.base import SpecError
from hwapprox.approx.registry import make_spec
from hwapprox.rtl_sim.svparams import derive_sv_params, sv_defaults, sv_long, sv_parameters
from hwapprox.rtl_sim.units import UNITS, get_unit


def test_the_parser_reads_a_units_parameter_list() -> None:
    lut = sv_parameters("hwa_lut")
    assert [(p.name, p.type, p.default) for p in lut] == [
        ("IN_W", "int", "10"),
        ("IN_SIGNED", "bit", "1'b1"),
        ("OUT_W", "int", "10"),
        ("INDEX_BITS", "int", "IN_W"),
        ("LUT_FILE", "string", '""'),
    ]
    ibert = {p.name: p for p in sv_parameters("hwa_gelu_ibert")}
    assert (ibert["C_INT"].type, ibert["C_INT"].is_long) == ("longint", True)
    assert ibert["C_INT"].default == "64'hFFFFFFFFFE44CB92"
    assert (ibert["B_INT"].type, ibert["B_INT"].is_long) == ("int", False)
    eps = {p.name: p for p in sv_parameters("hwa_layernorm_rsqrt")}["EPS_Q"]
    assert (eps.type, eps.width, eps.is_long) == ("logic [63:0]", 64, True)
    # comments between the entries (the online unit's header has many)
    online = [p.name for p in sv_parameters("hwa_softmax_online")]
    assert online[online.index("N_BITS") + 1 : online.index("N_BITS") + 3] == ["PIPE", "OFF_BY_ONE"]
    assert online[-2:] == ["EXP_FILE", "RECIP_FILE"]
    row = sv_defaults("hwa_row_stream")  # a submodule: no defaults at all
    assert set(row.values()) == {None}


def test_the_parser_handles_comments_and_untyped_parameters(tmp_path: Path) -> None:
    (tmp_path / "m.sv").write_text(
        "// module m #(parameter int NOT_ME = 1) (input x);\n"
        "module m #(\n"
        "    parameter int A = 3, // a, with a comma\n"
        "    /* parameter int B_OLD = 2, */ parameter longint unsigned B = 64'd5,\n"
        "    parameter C = {1'b0, 1'b1},\n"
        "    parameter bit [7:0] D\n"
        ") (input x);\nendmodule\n"
    )
    got = [(p.name, p.type, p.default, p.width) for p in sv_parameters("m", tmp_path)]
    assert got == [
        ("A", "int", "3", 32),
        ("B", "longint unsigned", "64'd5", 64),
        ("C", "", "{1'b0, 1'b1}", None),
        ("D", "bit [7:0]", None, 8),
    ]
    with pytest.raises(SpecError, match="no SV source"):
        sv_parameters("nothing", tmp_path)


class _Lacking:
    """A spec whose hw_params lacks one name (everything else: the real spec's)."""

    def __init__(self, spec: Any, drop: str) -> None:
        self._spec, self._drop = spec, drop

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spec, name)

    def hw_params(self, *args: Any) -> dict[str, int]:
        hw = dict(self._spec.hw_params(*args))
        del hw[self._drop]
        return hw


@pytest.mark.parametrize(
    ("op", "method", "drop", "top"),
    [
        ("gelu", "ibert", "ERF_SHIFT", "hwa_gelu_ibert"),
        ("softmax", "online", "SKIP_TAU", "hwa_softmax_online"),
        ("layernorm", "rsqrt_lut", "N_BITS", "hwa_layernorm_rsqrt"),
    ],
)
def test_a_parameter_hw_params_lacks_is_an_error(op: str, method: str, drop: str, top: str) -> None:
    spec = _Lacking(make_spec(op, method), drop)
    with pytest.raises(SpecError, match=rf"SV module {top} needs .*'{drop}'.* {op}/{method} spec"):
        get_unit(op, method).config(spec, 24)  # type: ignore[arg-type]


def test_only_declared_knobs_and_variant_parameters_keep_their_sv_default() -> None:
    hw = make_spec("softmax", "online").hw_params()
    given = {"ROW_MAX": 8, "BUF_DEPTH": 16, "ROWQ": 4, "N_BITS": 5}
    mems = {"EXP_FILE": "", "RECIP_FILE": ""}
    lut = ("LUT_BITS", "LIM_BITS", "LUT_SHIFT")
    p = derive_sv_params(
        "hwa_softmax_online", hw, spec=None, given=given, mems=mems, unused=lut, knobs=("PIPE",)
    )
    assert "PIPE" not in p
    assert (p["ROW_MAX"], p["LOG2E"]) == (8, sv_long(hw["LOG2E"]))
    with pytest.raises(SpecError, match=r"hwa_softmax_online needs the parameter\(s\) \['PIPE'\]"):
        derive_sv_params("hwa_softmax_online", hw, spec=None, given=given, mems=mems, unused=lut)
    with pytest.raises(SpecError, match=r"needs the memory file\(s\) \['EXP_FILE'\]"):
        derive_sv_params(
            "hwa_softmax_online",
            hw,
            spec=None,
            given=given,
            mems={"RECIP_FILE": ""},
            unused=lut,
            knobs=("PIPE",),
        )
    with pytest.raises(SpecError, match=r"has no parameter\(s\) \['NOPE'\]"):
        derive_sv_params("hwa_lut", {}, spec=None, given={"NOPE": 1})


def test_negative_64_bit_values_are_twos_complement_hex() -> None:
    assert sv_long(-2) == "64'hFFFFFFFFFFFFFFFE"
    assert sv_long(-(1 << 63)) == "64'h8000000000000000"
    assert sv_long(5) == "64'd5"
    with pytest.raises(SpecError, match="does not fit"):
        sv_long(1 << 63)
    spec = make_spec("gelu", "ibert")
    hw = dict(spec.hw_params())
    assert hw["C_INT"] < 0  # the default spec's polynomial constant
    params, _ = UNITS[(spec.operator, spec.method)].config(spec)
    assert params["C_INT"] == f"64'h{hw['C_INT'] & ((1 << 64) - 1):016X}"
    hw["C_INT"] = -1
    assert derive_sv_params("hwa_gelu_ibert", hw, spec=spec)["C_INT"] == "64'hFFFFFFFFFFFFFFFF"
