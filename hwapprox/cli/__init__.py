"""Command-line interface: ``hwapprox --help``.

The face of the library: one module per command family (``approx``: list / eval /
sweep / tune; ``validate``; ``hls``; ``rtl``; ``boards``; ``demo``), parsing in
:mod:`.parse`, rendering in :mod:`hwapprox.report`. The library packages never import
this package (``tests/test_architecture.py``). Commands are imported lazily, so
``hwapprox --help`` stays fast and one broken subpackage cannot take the others down.
To add a command, add one entry to :data:`COMMANDS`.
"""

from __future__ import annotations

import importlib

import click

from hwapprox import __version__

#: command name -> "module:attribute" of a click command or group.
COMMANDS: dict[str, str] = {
    "list": "hwapprox.cli.approx:list_cmd",
    "eval": "hwapprox.cli.approx:eval_cmd",
    "sweep": "hwapprox.cli.approx:sweep_cmd",
    "tune": "hwapprox.cli.approx:tune_cmd",
    "validate": "hwapprox.cli.validate:validate_cmd",
    "hls": "hwapprox.cli.hls:hls_group",
    "rtl": "hwapprox.cli.rtl:rtl_group",
    "boards": "hwapprox.cli.boards:boards_cmd",
    "demo": "hwapprox.cli.demo:demo_cmd",
}


def _load(target: str) -> click.Command | None:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only a command whose own module is absent is hidden; any other
        # import failure is a bug and must surface.
        if exc.name is not None and module_name.startswith(exc.name):
            return None
        raise
    return getattr(module, attr, None)


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, target in COMMANDS.items() if _load(target) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        return None if target is None else _load(target)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hwapprox")
def cli() -> None:
    """Hardware approximations of softmax, GELU and LayerNorm.

    One spec per approximation; a bit-accurate Python model, HLS C++ and
    SystemVerilog that agree bit for bit; accuracy, cost and ONNX validation.
    """


def main() -> None:
    """Console-script entry point."""
    cli()
