"""``hwapprox boards``: list the bundled boards and their budgets."""

from __future__ import annotations

import click

from hwapprox.boards.catalog import RESOURCE_KINDS, get_board, list_boards


@click.command("boards")
def boards_cmd() -> None:
    """List the bundled FPGA boards: part, family, clock and resources."""
    header = f"{'board':<12} {'part':<24} {'family':<12} {'MHz':>5} " + " ".join(
        f"{k:>8}" for k in RESOURCE_KINDS
    )
    click.echo(header)
    for name in list_boards():
        b = get_board(name)
        res = " ".join(f"{b.resources[k]:>8}" for k in RESOURCE_KINDS)
        click.echo(f"{name:<12} {b.part:<24} {b.family:<12} {b.clock_mhz:>5.0f} {res}")
