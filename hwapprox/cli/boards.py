"""``hwapprox boards``: list the bundled boards and their budgets."""

from __future__ import annotations

import click

from hwapprox.boards.catalog import FILE_KINDS, BoardError, get_board, list_boards


@click.command("boards")
@click.argument("board", required=False)
def boards_cmd(board: str | None) -> None:
    """List the bundled FPGA boards, or show one BOARD with its data source."""
    if board is not None:
        try:
            b = get_board(board)
        except BoardError as exc:
            raise click.BadParameter(str(exc), param_hint="BOARD") from None
        click.echo(f"{b.name}: {b.description}")
        click.echo(f"  part       {b.part}")
        click.echo(f"  vendor     {b.vendor}")
        click.echo(f"  family     {b.family}")
        click.echo(f"  clock      {b.clock_mhz:g} MHz ({b.clock_period_ns:g} ns)")
        for k in FILE_KINDS:
            click.echo(f"  {k:<10} {b.resources[k]}")
        click.echo(f"  source     {b.source}")
        return
    header = f"{'board':<12} {'part':<24} {'family':<12} {'MHz':>5} " + " ".join(
        f"{k:>8}" for k in FILE_KINDS
    )
    click.echo(header)
    for name in list_boards():
        b = get_board(name)
        res = " ".join(f"{b.resources[k]:>8}" for k in FILE_KINDS)
        click.echo(f"{name:<12} {b.part:<24} {b.family:<12} {b.clock_mhz:>5.0f} {res}")
