"""The SV file lists are read from the sources (hwapprox.rtl_sim.sources): a composite
design's list is derived, and every unit's hand-kept list holds what its top needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwapprox.approx.base import SpecError
from hwapprox.rtl_sim.sources import RTL_DIR, sv_sources
from hwapprox.rtl_sim.units import UNITS


def test_every_unit_lists_every_file_its_top_needs() -> None:
    for key, unit in UNITS.items():
        need = set(sv_sources(unit.toplevel))
        assert need <= set(unit.sources), (key, sorted(need - set(unit.sources)))


def test_dependencies_come_first_and_packages_lead() -> None:
    files = sv_sources("hwa_encoder_block")
    assert files[0] == "hwa_pkg.sv"
    assert files[-1] == "hwa_encoder_block.sv"
    assert files.index("hwa_exp_unit.sv") < files.index("hwa_softmax_online.sv")
    assert files.index("hwa_linear.sv") < files.index("hwa_encoder_block.sv")
    assert len(set(files)) == len(files)
    assert all((RTL_DIR / f).is_file() for f in files)


def test_the_scan_sees_instances_packages_and_comments(tmp_path: Path) -> None:
    (tmp_path / "p.sv").write_text("package p; localparam int A = 1; endpackage\n")
    (tmp_path / "leaf.sv").write_text("module leaf #(parameter W = 1) (input x); endmodule\n")
    (tmp_path / "gone.sv").write_text("module gone (input x); endmodule\n")
    (tmp_path / "top.sv").write_text(
        "module top (input x);\n"
        "  // gone u_c (.x(x));  a comment is no instance\n"
        "  localparam int B = p::A;\n"
        "  leaf #(.W(B)) u_l (.x(x));\n"
        "endmodule\n"
    )
    assert sv_sources("top", tmp_path) == ("p.sv", "leaf.sv", "top.sv")
    with pytest.raises(SpecError, match="no module"):
        sv_sources("nothing", tmp_path)
