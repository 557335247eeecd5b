"""Board catalogue and fit report."""

from __future__ import annotations

import pytest

from hwapprox.boards import BoardError, fit_report, get_board, list_boards
from hwapprox.boards.catalog import load_boards

ISSUE_BOARDS = {
    "pynq-z2",
    "zcu102",
    "zcu104",
    "ultra96-v2",
    "kv260",
    "alveo-u50",
    "alveo-u55c",
    "alveo-u200",
    "alveo-u250",
    "alveo-u280",
    "vcu118",
    "arty-a7-100t",
}


def test_catalogue_lists_known_parts() -> None:
    names = list_boards()
    assert set(names) >= ISSUE_BOARDS
    for name in names:
        b = get_board(name)
        assert b.source.startswith("AMD DS"), name  # every count names its data sheet
        assert b.resources["BRAM"] * 2 == b.resources["BRAM_18K"]
    b = get_board("ZCU104")
    assert b.part == "xczu7ev-ffvc1156-2-e"
    assert b.family == "ultrascale+"
    assert b.resources["DSP"] == 1728
    assert b.clock_period_ns == pytest.approx(5.0)


def test_fit_report_utilisation_and_verdict() -> None:
    rep = fit_report({"LUT": 26600, "DSP": 110}, "pynq-z2")
    assert rep.utilisation == {"LUT": 0.5, "DSP": 0.5}
    assert rep.fits
    over = fit_report({"DSP": 221}, "pynq-z2")
    assert not over.fits
    assert "DOES NOT FIT" in over.table()
    # A part without URAM cannot hold any URAM.
    assert not fit_report({"URAM": 1}, "arty-a7-35").fits


def test_errors_name_the_value() -> None:
    with pytest.raises(BoardError, match=r"^unknown board 'zcu999'; available: .*zcu104"):
        get_board("zcu999")
    with pytest.raises(BoardError, match=r"^unknown resource kind\(s\) CLB; expected LUT, FF"):
        fit_report({"CLB": 3}, "pynq-z2")
    with pytest.raises(BoardError, match=r"^resource LUT=-1 must be >= 0$"):
        fit_report({"LUT": -1}, "pynq-z2")


def test_user_board_file_is_validated(tmp_path) -> None:
    good = tmp_path / "b.yaml"
    good.write_text(
        "myboard:\n  part: xc7a100t\n  family: 7series\n  clock_mhz: 50\n"
        "  resources: {LUT: 63400, FF: 126800, DSP: 240, BRAM_18K: 270, URAM: 0}\n"
        "  source: DS180\n"
    )
    assert load_boards(good)["myboard"].resources["BRAM"] == 135
    nosource = tmp_path / "nosource.yaml"
    nosource.write_text(good.read_text().replace("  source: DS180\n", ""))
    with pytest.raises(BoardError, match=r"board 'myboard' lacks source$"):
        load_boards(nosource)
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "x:\n  part: p\n  family: virtex2\n  clock_mhz: 50\n  resources: {}\n  source: s\n"
    )
    with pytest.raises(BoardError, match=r"family 'virtex2'; expected one of"):
        load_boards(bad)
    with pytest.raises(BoardError, match=r"does not exist"):
        load_boards(tmp_path / "missing.yaml")


def test_boards_cli_lists_and_shows() -> None:
    from click.testing import CliRunner

    from hwapprox.cli.boards import boards_cmd

    res = CliRunner().invoke(boards_cmd, [])
    assert res.exit_code == 0
    assert "BRAM_18K" in res.output.splitlines()[0]
    assert sum(ln.startswith(tuple(ISSUE_BOARDS)) for ln in res.output.splitlines()) >= 12
    res = CliRunner().invoke(boards_cmd, ["zcu102"])
    assert res.exit_code == 0
    assert "xczu9eg-ffvb1156-2-e" in res.output
    assert "DS891" in res.output
    res = CliRunner().invoke(boards_cmd, ["zcu999"])
    assert res.exit_code == 2
    assert "unknown board 'zcu999'; available:" in res.output
