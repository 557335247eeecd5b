"""Top-level CLI: help, version and the lazy command table."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from hwapprox import __version__
from hwapprox.cli import COMMANDS, _load, cli


def test_help_and_version() -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["--help"])
    assert res.exit_code == 0, res.output
    assert "softmax, GELU and LayerNorm" in res.output
    res = runner.invoke(cli, ["--version"])
    assert res.exit_code == 0
    assert res.output.strip() == f"hwapprox, version {__version__}"


def test_console_script_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "hwapprox", "--version"], capture_output=True, text=True, check=True
    )
    assert __version__ in out.stdout


def test_every_listed_command_is_a_click_command() -> None:
    import click

    for name, target in COMMANDS.items():
        cmd = _load(target)
        if cmd is not None:  # modules of later issues may not exist yet
            assert isinstance(cmd, click.Command), name


def test_unknown_command_is_an_error() -> None:
    res = CliRunner().invoke(cli, ["frobnicate"])
    assert res.exit_code != 0
    assert "No such command 'frobnicate'" in res.output
