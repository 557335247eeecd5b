"""The explicit method registry and the spec base contract."""

from __future__ import annotations

import pytest

from hwapprox.approx.base import Cost, Operator, SpecError
from hwapprox.approx.registry import (
    METHODS,
    get_method,
    list_methods,
    make_spec,
    spec_from_config,
)


def test_list_methods_covers_every_operator() -> None:
    listed = list_methods()
    assert set(listed) == set(Operator)
    assert "online" in listed[Operator.SOFTMAX]
    assert list_methods("gelu") == {Operator.GELU: sorted(METHODS[Operator.GELU])}


def test_unknown_names_list_what_exists() -> None:
    with pytest.raises(
        SpecError, match=r"^unknown operator 'tanh'; expected one of: softmax, gelu"
    ):
        get_method("tanh", "x")
    with pytest.raises(SpecError, match=r"^unknown gelu method 'nope'; available: edgemoe, ibert"):
        get_method("gelu", "nope")


def test_cost_score_orders_by_size() -> None:
    small = Cost(table_bits=64 * 8, tables=1, adders=1, widest_bits=8)
    big = Cost(table_bits=1024 * 18, tables=1, multipliers=1, mult_bits=((18, 18),), widest_bits=18)
    assert small.score() < big.score()
    assert big.as_dict()["mult_bits"] == [[18, 18]]


@pytest.mark.parametrize(("op", "method"), [(o, m) for o in METHODS for m in METHODS[o]])
def test_every_registered_method_builds_with_defaults(op: Operator, method: str) -> None:
    spec = get_method(op, method)()
    assert spec.operator == op
    assert spec.to_config()["method"] == method
    assert spec_from_config(spec.to_config()) == spec
    assert spec.method == method
    assert spec.source, f"{op}/{method} must cite its source"
    with pytest.raises(SpecError, match=r"has no field\(s\) bogus_field"):
        make_spec(op, method, bogus_field=1)


def test_implemented_lists_exactly_the_unit_tables() -> None:
    """registry.IMPLEMENTED (what the export side may pick for --for hls/rtl without
    importing hls or rtl_sim) = the keys of the HLS and RTL unit tables."""
    from hwapprox.approx.registry import IMPLEMENTED
    from hwapprox.hls.units import UNITS as HLS_UNITS
    from hwapprox.rtl_sim.units import UNITS as RTL_UNITS

    for target, units in (("hls", HLS_UNITS), ("rtl", RTL_UNITS)):
        have = {(str(op), m) for op, m in units}
        listed = {(str(op), m) for op, ms in IMPLEMENTED[target].items() for m in ms}
        assert listed == have, (target, listed ^ have)


@pytest.mark.parametrize(("op", "method"), [("softmax", "online"), ("gelu", "pwl"),
                                            ("layernorm", "rsqrt_lut")])  # fmt: skip
def test_formats_wider_than_the_raw_path_are_refused_at_construction(op, method) -> None:
    """A 70-bit out_fmt is refused when the spec is made (it used to fail in model())."""
    with pytest.raises(
        SpecError, match=r"\.out_fmt=ap_fixed<70,10>: at most 62 bits wide \(raw codes are int64\)"
    ):
        make_spec(op, method, out_fmt="ap_fixed<70,10>")


def test_eval_with_a_too_wide_format_is_a_clear_error() -> None:
    from click.testing import CliRunner

    from hwapprox.cli import cli

    res = CliRunner().invoke(
        cli, ["eval", "softmax", "-m", "online", "--out-fmt", "ap_fixed<70,10>"]
    )
    assert res.exit_code == 2
    assert "OnlineSoftmax.out_fmt=ap_fixed<70,10>: at most 62 bits wide" in res.output
    assert "Traceback" not in res.output


def test_wrong_field_types_are_refused_naming_the_field() -> None:
    """issue 21: a config's ``segments: abc`` ended in a raw Python comparison error."""
    from hwapprox.approx.base import SpecError
    from hwapprox.approx.registry import make_spec

    with pytest.raises(SpecError, match=r"PwlGelu\.segments='abc': must be an integer"):
        make_spec("gelu", "pwl", segments="abc")
    with pytest.raises(SpecError, match=r"must be an integer"):
        make_spec("gelu", "pwl", segments=True)
    with pytest.raises(SpecError, match=r"must be a number"):
        make_spec("gelu", "pwl", lo="x")
    assert make_spec("gelu", "pwl", lo=-4).lo == -4  # an int where a float is expected
