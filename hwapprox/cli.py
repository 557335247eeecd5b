"""Command-line interface: ``hwapprox --help``.

Subcommands live next to the code they drive (``hwapprox/<pkg>/cli.py``) and
are imported lazily, so ``hwapprox --help`` stays fast and one broken
subpackage cannot take the others down. To add a command, add one entry to
:data:`COMMANDS`.
"""

from __future__ import annotations

import importlib

import click

from hwapprox import __version__

#: command name -> "module:attribute" of a click command or group.
COMMANDS: dict[str, str] = {
    "list": "hwapprox.approx.cli:list_cmd",
    "eval": "hwapprox.approx.cli:eval_cmd",
    "sweep": "hwapprox.approx.cli:sweep_cmd",
    "tune": "hwapprox.approx.cli:tune_cmd",
    "validate": "hwapprox.export.cli:validate_cmd",
    "hls": "hwapprox.hls.cli:hls_group",
    "rtl": "hwapprox.rtl_sim.cli:rtl_group",
    "boards": "hwapprox.boards.cli:boards_cmd",
    "demo": "hwapprox.demo:demo_cmd",
}


#: subcommands that join two sibling packages (``hls`` finds a model's blocks,
#: ``rtl_sim`` builds them; neither may import the other), attached to their group here
SUBCOMMANDS: dict[str, dict[str, str]] = {"rtl": {"block": "hwapprox.cli:rtl_block_cmd"}}


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
        cmd = None if target is None else _load(target)
        if isinstance(cmd, click.Group):
            for name, sub in SUBCOMMANDS.get(cmd_name, {}).items():
                sub_cmd = _load(sub)
                if sub_cmd is not None and name not in cmd.commands:
                    cmd.add_command(sub_cmd, name)
        return cmd


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hwapprox")
def cli() -> None:
    """Hardware approximations of softmax, GELU and LayerNorm.

    One spec per approximation; a bit-accurate Python model, HLS C++ and
    SystemVerilog that agree bit for bit; accuracy, cost and ONNX validation.
    """


@click.command("block")
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@click.option("--inputs", type=click.Path(exists=True), help="Sample inputs (.npz) of the model.")
@click.option(
    "--config", type=click.Path(exists=True, dir_okay=False), help="Approximation config."
)
@click.option(
    "--parallel",
    "-p",
    "parallel",
    multiple=True,
    type=int,
    default=(64,),
    show_default=True,
    help="Multipliers per linear stage (repeat for several builds).",
)
@click.option("--block", "blocks", multiple=True, type=int, help="Block index (default: all).")
@click.option("--sequences", default=1, show_default=True, help="Sample sequences simulated.")
@click.option("--stall", default=0.0, show_default=True, help="Idle and backpressure probability.")
@click.option("--synth", is_flag=True, help="Also count resources with yosys (slow).")
@click.option("--family", default="7series", show_default=True, help="yosys synth_xilinx family.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def rtl_block_cmd(
    model: str,
    inputs: str | None,
    config: str | None,
    parallel: tuple[int, ...],
    blocks: tuple[int, ...],
    sequences: int,
    stall: float,
    synth: bool,
    family: str,
    as_json: bool,
) -> None:
    """Simulate the encoder blocks of MODEL.onnx in RTL (cocotb + Verilator).

    The HLS matcher finds the blocks (as ``hwapprox hls project`` does); each block is
    built as ``hwa_encoder_block`` at every --parallel and run on the model's real block
    inputs (the first block's calibrated sample codes, then each block's model output);
    every output bit is compared with the Python block model. Prints cycles per
    sequence (measured and the contract formula), tokens per cycle and, with --synth,
    yosys resources. Exit status 1 on any mismatch.
    """
    import json

    import numpy as np

    from hwapprox.approx.base import SpecError
    from hwapprox.hls.project import prepare_model
    from hwapprox.rtl_sim.block import (
        BLOCK_SOURCES,
        BLOCK_TOP,
        block_config,
        block_cycles,
        simulate_block,
    )
    from hwapprox.rtl_sim.synth import synthesize_top

    try:
        prep = prepare_model(model, config, inputs=inputs)
    except SpecError as exc:
        raise click.ClickException(str(exc)) from None
    if not prep.blocks or prep.samples is None:
        raise click.ClickException(f"{model}: no encoder block with sample inputs to run")
    x = np.asarray(prep.samples)[:sequences]
    km = None if prep.key_mask is None else np.asarray(prep.key_mask)[:sequences]
    rows, failed = [], False
    for i, blk in enumerate(prep.blocks):
        if not blocks or i in blocks:
            for p in parallel:
                try:
                    res = simulate_block(blk, x, km if blk.masked else None, parallel=p,
                                         idle=stall, backpressure=stall)  # fmt: skip
                    want = block_cycles(blk, p)
                except SpecError as exc:
                    raise click.ClickException(f"block {i}: {exc}") from None
                st = res.stats
                ins, outs = st.get("in_cycles", []), st.get("out_cycles", [])
                measured = outs[blk.seq - 1] - ins[0] + 1 if len(outs) >= blk.seq else None
                row = {
                    "block": i, "kind": blk.kind, "S": blk.seq, "D": blk.dim, "H": blk.heads,
                    "F": blk.ffn, "parallel": p, "sequences": len(x), "stall": stall,
                    "bit_exact": bool(res.passed), "mismatches": st.get("mismatches"),
                    "outputs_checked": st.get("matched", 0) * blk.dim,
                    "cycles_per_sequence": measured, "formula": want.total,
                    "phases": want.phases, "tokens_per_cycle": blk.seq / want.total,
                    "sim_seconds": round(res.wall_seconds, 1),
                }  # fmt: skip
                failed |= not res.passed
                if synth:
                    params, mems = block_config(blk, p)
                    syn = synthesize_top(BLOCK_TOP, list(BLOCK_SOURCES), params, mems,
                                         family=family)  # fmt: skip
                    row["resources"] = {k: syn[k] for k in ("LUT", "FF", "DSP", "BRAM", "LUTRAM")}
                rows.append(row)
            x = blk.model(x, km) if blk.masked else blk.model(x)  # the next block's input
    if as_json:
        click.echo(json.dumps(rows, indent=1))
    else:
        for r in rows:
            click.echo(
                f"block {r['block']} ({r['kind']}; S={r['S']} D={r['D']} H={r['H']} "
                f"F={r['F']}) P={r['parallel']}: "
                + ("bit-exact" if r["bit_exact"] else f"MISMATCH ({r['mismatches']} tokens)")
                + f" on {r['outputs_checked']} outputs of {r['sequences']} sequence(s); "
                f"{r['cycles_per_sequence']} cycles/sequence (formula {r['formula']}), "
                f"{r['tokens_per_cycle']:.5f} tokens/cycle"
                + (f"; {r['resources']}" if "resources" in r else "")
            )
    if failed:
        raise SystemExit(1)


def main() -> None:
    """Console-script entry point."""
    cli()
