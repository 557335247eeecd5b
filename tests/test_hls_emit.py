"""hwapprox.hls.emit: data-only header rendering (no compilation)."""

from __future__ import annotations

import numpy as np
import pytest

from hwapprox.approx.registry import make_spec
from hwapprox.fixed import FixedFormat
from hwapprox.hls.emit import (
    EmitError,
    Instance,
    cpp_type,
    instance_from_spec,
    render_header,
    table_type,
    write_header,
)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([0, 1], ("ap_uint<1>", 1, False)),
        ([0, 255], ("ap_uint<8>", 8, False)),
        ([0, 256], ("ap_uint<9>", 9, False)),
        ([-1, 0], ("ap_int<1>", 1, True)),
        ([-128, 127], ("ap_int<8>", 8, True)),
        ([-129, 0], ("ap_int<9>", 9, True)),
        ([-1, 128], ("ap_int<9>", 9, True)),
        ([0], ("ap_uint<1>", 1, False)),
    ],
)
def test_table_type_is_narrowest(values, expected):
    assert table_type(values) == expected


def test_cpp_type_spells_modes():
    assert cpp_type(FixedFormat.parse("ap_ufixed<8,0>")) == "ap_ufixed<8,0,AP_TRN,AP_WRAP>"
    assert (
        cpp_type(FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
        == "ap_fixed<16,6,AP_RND,AP_SAT>"
    )


def test_instance_from_spec_holds_every_format_param_and_table():
    spec = make_spec("gelu", "edgemoe")
    inst = instance_from_spec("g0", spec)
    assert inst.types["in_t"] == spec.in_fmt
    assert inst.types["entry_t"] == spec.entry_fmt
    assert inst.consts == {k: int(v) for k, v in spec.hw_params().items()}
    text = render_header("G_H", [inst])
    table = spec.tables()["delta"]
    assert f"static const {table_type(table)[0]} g0_delta[{table.size}] = {{" in text
    assert f"static const long long TABLE_SIZE = {spec.table_size};" in text
    # every entry is written, in order
    body = text.split("g0_delta[")[1].split("};")[0].split("{", 1)[1]
    assert [int(v) for v in body.replace("\n", " ").split(",") if v.strip()] == table.tolist()


def test_bad_names_and_clashes_are_refused(tmp_path):
    with pytest.raises(EmitError, match=r"'1x' is not a valid C\+\+ identifier"):
        Instance("1x")
    with pytest.raises(EmitError, match=r"names used twice: \['t_len'\]"):
        Instance("a", consts={"t_len": 1}, tables={"t": np.array([1])})
    with pytest.raises(EmitError, match=r"two instances named 'a'"):
        render_header("H", [Instance("a"), Instance("a")])
    p = write_header(tmp_path / "h.h", "x\n")
    assert write_header(p, "x\n") == p  # same content: fine
    with pytest.raises(FileExistsError, match=r"exists and differs; pass overwrite=True"):
        write_header(p, "y\n")
