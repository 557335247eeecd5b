"""Per-site config resolution (hwapprox.approx.config)."""

from __future__ import annotations

import pytest

from hwapprox.approx.base import Operator, SpecError
from hwapprox.approx.config import ApproxConfig, load_config
from hwapprox.approx.registry import METHODS

SITES = {"sm0": "softmax", "sm1": "softmax", "g0": "gelu", "ln0": "layernorm"}


@pytest.fixture(autouse=True)
def _float_ref_methods(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the float-reference specs under the method name ``float_ref``."""
    for op, cls in (
        (Operator.SOFTMAX, "FloatRefSoftmax"),
        (Operator.GELU, "FloatRefGelu"),
        (Operator.LAYERNORM, "FloatRefLayerNorm"),
    ):
        monkeypatch.setitem(METHODS[op], "float_ref", f"hwapprox.export.refspec:{cls}")


def test_defaults_site_overrides_and_float() -> None:
    cfg = ApproxConfig.from_dict(
        {
            "defaults": {
                "softmax": {"method": "float_ref", "out_fmt": "ap_fixed<18,2>"},
                "gelu": {"method": "float_ref"},
                "layernorm": "float",
            },
            "sites": {"sm1": {"in_fmt": "ap_fixed<12,4>"}, "g0": "float"},
        }
    )
    specs = cfg.resolve(SITES, in_fmts={"sm0": "ap_fixed<10,3>", "sm1": "ap_fixed<20,9>"})
    assert str(specs["sm0"].in_fmt) == "ap_fixed<10,3>"  # calibrated (auto)
    assert str(specs["sm1"].in_fmt) == "ap_fixed<12,4>"  # site entry wins over calibration
    assert str(specs["sm1"].out_fmt) == "ap_fixed<18,2>"  # merged over the defaults
    assert specs["g0"] is None
    assert specs["ln0"] is None


def test_other_method_replaces_defaults_and_site_fields_fill_in() -> None:
    cfg = ApproxConfig.from_dict(
        {
            "defaults": {"gelu": {"method": "ibert", "erf_shift": 12}},
            "sites": {"g0": {"method": "float_ref"}, "ln0": {"method": "float_ref"}},
        }
    )
    specs = cfg.resolve(
        SITES, site_fields={"g0": {"form": "tanh"}, "ln0": {"eps": 1e-12, "unknown_x": 3}}
    )
    assert specs["g0"].method == "float_ref"  # erf_shift of ibert not carried over
    assert specs["g0"].form == "tanh"
    assert specs["ln0"].eps == 1e-12  # the model's epsilon; unknown site fields ignored
    assert specs["sm0"] is None  # no softmax default -> float


def test_round_trip_through_from_specs() -> None:
    cfg = ApproxConfig.from_dict({"defaults": {"softmax": {"method": "float_ref"}}})
    specs = cfg.resolve(SITES, in_fmts={"sm0": "ap_fixed<10,3,AP_RND,AP_SAT>"})
    again = ApproxConfig.from_dict(ApproxConfig.from_specs(specs).to_dict()).resolve(SITES)
    assert again == specs


def test_yaml_file(tmp_path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("defaults:\n  softmax: {method: float_ref}\nsites:\n  sm1: float\n")
    specs = load_config(p).resolve(SITES)
    assert specs["sm0"].method == "float_ref"
    assert specs["sm1"] is None


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"default": {}}, r"^approximation config has unknown key\(s\) default; allowed: "),
        ({"defaults": {"relu": {"method": "x"}}}, r"unknown operator 'relu'; expected one of"),
        ({"defaults": {"softmax": {"method": "nope"}}}, r"unknown softmax method 'nope'; avail"),
        ({"defaults": {"softmax": {"in_fmt": "ap_fixed<8,3>"}}}, r"defaults.softmax needs a"),
        ({"defaults": {"gelu": "pwl"}}, r"expected a mapping of spec fields or 'float', got the"),
        ({"sites": [1, 2]}, r"config 'sites' must be a mapping"),
    ],
)
def test_bad_config(data: dict, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        ApproxConfig.from_dict(data)


def test_unknown_site_field_and_method_in_resolution() -> None:
    cfg = ApproxConfig.from_dict({"sites": {"sm9": {"method": "float_ref"}}})
    with pytest.raises(SpecError, match=r"^config names unknown site\(s\) sm9; sites of this"):
        cfg.resolve(SITES)
    cfg = ApproxConfig.from_dict({"defaults": {"softmax": {"method": "float_ref", "zz": 1}}})
    with pytest.raises(SpecError, match=r"site sm0 \(softmax\): softmax/float_ref has no field"):
        cfg.resolve(SITES)
    cfg = ApproxConfig.from_dict({"sites": {"g0": {"segments": 4}}})
    with pytest.raises(SpecError, match=r"no 'method' and defaults.gelu is float; name a method"):
        cfg.resolve(SITES)
    cfg = ApproxConfig.from_dict({"sites": {"g0": {"operator": "softmax", "method": "float_ref"}}})
    with pytest.raises(SpecError, match=r"config entry is for operator 'softmax'"):
        cfg.resolve(SITES)


def test_missing_and_bad_yaml(tmp_path) -> None:
    with pytest.raises(SpecError, match=r"config file '.*nope.yaml' does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("defaults: [unclosed\n")
    with pytest.raises(SpecError, match=r"is not valid YAML"):
        load_config(bad)
