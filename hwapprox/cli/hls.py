"""``hwapprox hls``: ONNX encoder -> hls4ml project, C-simulation bit-exactness check."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import numpy as np

from hwapprox.approx.base import SpecError
from hwapprox.fixed import FixedPointError

__all__ = ["hls_group"]

F = TypeVar("F", bound=Callable[..., Any])


def _prepare(  # type: ignore[no-untyped-def]
    model: Path,
    config: Path | None,
    inputs: Path | None = None,
    width: int = 16,
    range_stat: str = "max",
    attention: str | None = None,
):
    from hwapprox.export.handoff import ExportError
    from hwapprox.hls.project import prepare_model

    try:
        prep = prepare_model(
            model, config, inputs=inputs, width=width, range_stat=range_stat, attention=attention
        )
    except (SpecError, ExportError, FixedPointError) as exc:
        raise click.ClickException(str(exc)) from None
    for note in prep.notes:
        click.echo(f"note: {note}")
    acc = prep.accuracy()
    if acc is not None:
        click.echo(
            f"fixed-point design vs the float model on the sample inputs: max |error| "
            f"{acc['max_abs']:.3g}, per-token cosine min {acc['token_cosine_min']:.6f}"
        )
    return prep


def _outdir(path: Path, force: bool, *, create: bool = True) -> Path:
    """Check ``-o`` (writable; empty unless ``force``) and, with ``create``, make it."""
    from hwapprox.approx.paths import unwritable

    why = unwritable(path)
    if why is not None:
        raise click.BadParameter(why, param_hint="-o")
    if path.exists() and any(path.iterdir()) and not force:
        raise click.BadParameter(
            f"{path} exists and is not empty; pass --force to write into it", param_hint="-o"
        )
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def _target(board: str | None, part: str | None) -> tuple[str | None, float | None]:
    """(part, clock period in ns) from --board, with --part overriding the board's part."""
    from hwapprox.boards import BoardError, check_part, get_board

    if part is not None:
        try:
            part = check_part(part)
        except BoardError as exc:
            raise click.BadParameter(str(exc), param_hint="--part") from None
    if board is None:
        return part, None

    try:
        b = get_board(board)
    except BoardError as exc:
        raise click.BadParameter(str(exc), param_hint="--board") from None
    return part or b.part, b.clock_period_ns


def _write_resolved(prep, path: Path) -> None:  # type: ignore[no-untyped-def]
    """The resolved specs and formats of every layer, as plain data (traceability)."""
    import json

    layers = [
        {
            "sites": sites,
            "specs": {
                "softmax": b.softmax.to_config(),
                **({"gelu": b.gelu.to_config()} if b.gelu is not None else {}),
                "ln1": b.ln1.to_config(),
                "ln2": b.ln2.to_config(),
            },
            "formats": b.formats.to_dict(),
        }
        for b, sites in zip(prep.blocks, prep.site_names, strict=False)
    ]
    layers += [
        {"sites": sites, "spec": st.spec.to_config()}
        for st, sites in zip(prep.steps, prep.site_names, strict=False)
    ]
    path.write_text(json.dumps({"layers": layers}, indent=2) + "\n")


class _CsimDefaultGroup(click.Group):
    """A group whose first argument, when not a subcommand name or an option, goes to ``csim``.

    ``hwapprox hls MODEL.onnx ...`` is ``hwapprox hls csim MODEL.onnx ...``; ``--help``,
    ``units``, ``project`` and ``csim`` keep their usual meaning.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["csim", *args]
        return super().parse_args(ctx, args)


#: the executable the hls4ml backend's build() calls
_VENDOR_TOOL = {"Vivado": "vivado_hls", "Vitis": "vitis-run"}


@click.group("hls", cls=_CsimDefaultGroup)
def hls_group() -> None:
    """HLS C++ of the approximations and hls4ml projects of encoder blocks.

    "hwapprox hls MODEL.onnx [OPTIONS]" runs the csim command.
    """


@hls_group.command("units")
def units_cmd() -> None:
    """List the operator/method pairs that have an HLS unit."""
    from hwapprox.hls.units import supported

    for name in supported():
        click.echo(name)


_MODEL = click.argument("model", type=click.Path(exists=True, dir_okay=False, path_type=Path))
_CONFIG = click.option(
    "--config",
    "-c",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Approximation config (YAML): defaults/sites per operator, optional 'hls' formats.",
)
_INPUTS = click.option(
    "--inputs",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Sample inputs (.npz, one array per model input) for calibration and the C-sim "
    "data (default: seeded inputs when the model's input shapes are static).",
)
_WIDTH = click.option(
    "--width",
    default=16,
    show_default=True,
    help="Calibrated format width where the config sets none.",
)
_RANGE = click.option(
    "--range",
    "range_stat",
    default="max",
    show_default=True,
    help="Calibrated range policy: max, p99.99, p99.9, p99 or a clipping value.",
)
_BOARD = click.option(
    "--board",
    default=None,
    help="Target board (see 'hwapprox boards'): sets the FPGA part and clock period.",
)
_PART = click.option(
    "--part", default=None, help="FPGA part (overrides --board's; default: the backend's)."
)
_BACKEND = click.option(
    "--backend", type=click.Choice(["Vivado", "Vitis"]), default="Vivado", show_default=True
)
_ATTENTION = click.option(
    "--attention",
    type=click.Choice(["two_pass", "fused"]),
    default=None,
    help="Attention schedule of the blocks: two_pass (scores, softmax rows, P.V) or fused "
    "(one pass per query row over the keys, no score row stored; needs the online softmax). "
    "Default: the config's hls.attention, else two_pass.",
)
_IO = click.option(
    "--io",
    "io",
    type=click.Choice(["parallel", "stream"]),
    default="parallel",
    show_default=True,
    help="hls4ml IOType: arrays (io_parallel) or hls::stream of one dim-wide pack per token "
    "(io_stream; encoder blocks).",
)


_OUTPUT = click.option("-o", "--output", "output", type=click.Path(path_type=Path), required=True)
_FORCE = click.option("--force", is_flag=True, help="Write into a non-empty output directory.")


def _project_options(*, io: bool = True) -> Callable[[F], F]:
    """The options every project command takes (model, config, calibration, output,
    backend, [IOType,] attention schedule, target), in help order."""
    stack = [_MODEL, _CONFIG, _INPUTS, _WIDTH, _RANGE, _OUTPUT, _BACKEND]
    stack += [_IO] if io else []
    stack += [_ATTENTION, _BOARD, _PART]

    def apply(fn: F) -> F:
        for deco in reversed(stack):
            fn = deco(fn)
        return fn

    return apply


def _vendor_tool_or_exit(backend: str, what: str, tail: str) -> str:
    """The backend's HLS executable; exit 2 naming it (``what`` is the command's
    name, ``tail`` what stands instead) when it is not on PATH."""
    import shutil

    tool = _VENDOR_TOOL[backend]
    if shutil.which(tool) is None:
        other = "Vitis" if backend == "Vivado" else "Vivado"
        click.echo(
            f"{what}: {tool!r} (needed by the hls4ml {backend} backend) is not on PATH; "
            "install the AMD tools and source their settings script, or use "
            f"--backend {other} if that tool is installed. {tail}",
            err=True,
        )
        raise SystemExit(2)
    return tool


@hls_group.command("project")
@_project_options()
@_FORCE
def project_cmd(
    model: Path,
    config: Path | None,
    inputs: Path | None,
    width: int,
    range_stat: str,
    output: Path,
    backend: str,
    io: str,
    attention: str | None,
    board: str | None,
    part: str | None,
    force: bool,
) -> None:
    """Fold the encoder blocks of MODEL.onnx and write an hls4ml project to OUTPUT."""
    from hwapprox.hls.project import convert

    part, clock = _target(board, part)
    _outdir(output, force, create=False)  # before the work
    prep = _prepare(model, config, inputs, width, range_stat, attention)
    out = _outdir(output, force)
    convert(prep, out, backend=backend, part=part, clock_period=clock, io_type=f"io_{io}")
    _write_resolved(prep, out / "hwapprox_resolved.json")
    for st, s in zip(prep.steps, prep.site_names, strict=False):
        click.echo(f"layer {s['site']}: {st.spec.describe()} over {st.n_rows} x {st.n_in}")
    for i, (b, s) in enumerate(zip(prep.blocks, prep.site_names, strict=False)):
        click.echo(
            f"block {i}: S={b.seq} D={b.dim} H={b.heads} F={b.ffn}; "
            f"softmax {s['softmax']}={b.softmax.method}, "
            + (
                f"gelu {s['gelu']}={b.gelu.method}, "
                if b.gelu is not None
                else f"{b.ffn_act} FFN, "
            )
            + f"layernorm {s['ln1']}={b.ln1.method}, {s['ln2']}={b.ln2.method}"
        )
    click.echo(f"hls4ml {backend} project written to {out}")


@hls_group.command("csim")
@_project_options()
@click.option("--samples", default=8, show_default=True, help="Random input samples.")
@click.option("--seed", default=0, show_default=True)
@_FORCE
@click.option(
    "--build",
    is_flag=True,
    help="After a bit-exact C simulation, run the vendor HLS flow (synthesis) of the project.",
)
def csim_cmd(
    model: Path,
    config: Path | None,
    inputs: Path | None,
    width: int,
    range_stat: str,
    output: Path,
    backend: str,
    io: str,
    attention: str | None,
    board: str | None,
    part: str | None,
    samples: int,
    seed: int,
    force: bool,
    build: bool,
) -> None:
    """Build the project, run its C simulation (g++) and compare with the Python model.

    With no config the sites get the default methods and every format is
    calibrated on the sample inputs (as 'hwapprox validate' does). C-sim data:
    the first block's real input on the sample inputs (up to --samples), or
    seeded N(0, 1) values quantised to the input format, plus an all-zero and
    an all-maximum sample. Exit status 1 when any raw code differs.
    """
    from hwapprox.hls.project import compile_project, convert, csim_check

    if samples < 1:
        raise click.BadParameter(f"must be >= 1, got {samples}", param_hint="--samples")
    part, clock = _target(board, part)
    _outdir(output, force, create=False)  # before the work
    prep = _prepare(model, config, inputs, width, range_stat, attention)
    out = _outdir(output, force)
    hmodel = convert(prep, out, backend=backend, part=part, clock_period=clock, io_type=f"io_{io}")
    fmt, shape = prep.in_fmt, prep.item_shape
    rng = np.random.default_rng(seed)
    if prep.samples is not None:
        real = np.asarray(prep.samples)[:samples].reshape(-1, *shape)
        click.echo(f"C-sim data: {len(real)} real block input(s) from the sample inputs")
    else:
        real = fmt.quantize(rng.normal(0, 1, (samples, *shape)))
    x = np.concatenate([real, np.zeros((1, *shape), np.int64), np.full((1, *shape), fmt.max_raw)])
    click.echo("building the C-simulation library (g++; cached by content) ...")
    compile_project(hmodel, write=False)
    rep = csim_check(hmodel, prep, x, compile=False)
    verdict = (
        "bit-exact" if rep.bit_exact else f"{rep.mismatches} MISMATCHES (first at {rep.first})"
    )
    click.echo(f"C simulation vs model: {rep.samples} samples, {rep.values} values: {verdict}")
    if not rep.bit_exact:
        raise SystemExit(1)
    if build:
        _vendor_build(hmodel, backend, out)


def _vendor_build(hmodel, backend: str, out: Path) -> None:  # type: ignore[no-untyped-def]
    """Run hls4ml's vendor flow (C synthesis); exit 2 when its executable is not on PATH."""
    tool = _vendor_tool_or_exit(
        backend, "--build", "Not synthesised; the C-simulation result above stands."
    )
    import json

    from hwapprox.hls.project import csynth_summary

    click.echo(f"running {tool} (C synthesis) in {out} ...")
    report = hmodel.build(csim=False, synth=True)
    summary = csynth_summary(report)
    if summary is None:
        click.echo(
            f"--build: {tool} ran but wrote no C-synthesis report under {out} (see its log "
            "there, e.g. vivado_hls.log); nothing to summarise.",
            err=True,
        )
        raise SystemExit(1)
    (out / "hwapprox_csynth.json").write_text(json.dumps(summary, indent=2) + "\n")
    lat, ii, clk = summary["latency_cycles"], summary["interval_cycles"], summary["clock_ns"]
    click.echo(
        f"C synthesis: latency {lat['best']}..{lat['worst']} cycles, interval "
        f"{ii['min']}..{ii['max']} cycles, clock {clk['estimated']} ns estimated "
        f"(target {clk['target']} ns)"
    )
    for name, r in summary["resources"].items():
        avail = r["available"]
        share = f" of {avail} ({100 * r['used'] / avail:.1f} %)" if avail else ""
        click.echo(f"  {name}: {r['used']}{share}")
    click.echo(f"summary written to {out / 'hwapprox_csynth.json'}")


@hls_group.command("cosim")
@_project_options(io=False)
@_FORCE
def cosim_cmd(
    model: Path,
    config: Path | None,
    inputs: Path | None,
    width: int,
    range_stat: str,
    output: Path,
    backend: str,
    attention: str | None,
    board: str | None,
    part: str | None,
    force: bool,
) -> None:
    """Vendor RTL of the HLS block under the cocotb token testbench (needs vitis/vivado HLS).

    Guarded like 'csim --build': with the backend's HLS executable (vivado_hls for
    Vivado, vitis-run for Vitis) not on PATH it exits 2 naming it, before any work.
    With the tool present it writes the io_stream project and runs C synthesis; the
    adaptor that drives the generated RTL's stream ports from
    hwapprox.rtl_sim.tb.token_test is not built yet, so it then stops with exit 2
    naming the generated RTL directory. That path is untested here (no vendor tool).
    """
    tool = _vendor_tool_or_exit(
        backend, "cosim", "For the project's own RTL of the block use 'hwapprox rtl block'."
    )
    from hwapprox.hls.project import convert

    part, clock = _target(board, part)
    _outdir(output, force, create=False)
    prep = _prepare(model, config, inputs, width, range_stat, attention)
    out = _outdir(output, force)
    hmodel = convert(prep, out, backend=backend, part=part, clock_period=clock, io_type="io_stream")
    click.echo(f"running {tool} (C synthesis) in {out} ...")
    hmodel.build(csim=False, synth=True)
    rtl = sorted(out.glob("*_prj/solution1/syn/verilog"))
    where = str(rtl[0]) if rtl else f"(no syn/verilog directory under {out})"
    click.echo(
        f"cosim: the vendor RTL is at {where}; driving it from the cocotb token testbench "
        "(hwapprox.rtl_sim.tb.token_test) needs a port adaptor that is not built yet "
        "(issue 25). Not simulated.",
        err=True,
    )
    raise SystemExit(2)
