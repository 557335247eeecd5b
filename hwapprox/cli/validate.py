"""``hwapprox validate``: approximations on an ONNX model vs onnxruntime."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hwapprox.approx.base import SpecError
from hwapprox.cli.parse import split_assignment
from hwapprox.export.errors import ExportError
from hwapprox.fixed import FixedPointError

__all__ = ["validate_cmd"]


def _allowed_methods(target: str) -> dict | None:  # type: ignore[type-arg]
    """Methods per operator with an HLS or RTL unit (``--for``), or None for any."""
    if target == "any":
        return None
    from hwapprox.approx.registry import implemented

    return implemented(target)


def _methods(values: tuple[str, ...]) -> dict[str, str]:
    return dict(
        split_assignment(
            v,
            form="OP=METHOD",
            example="softmax=ibert, gelu=float",
            param_hint="--method",
            identifier=False,
            need_value=True,
        )
        for v in values
    )


@click.command("validate")
@click.argument("model", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--inputs",
    type=click.Path(path_type=Path),
    help="Sample inputs: .npz with one array per model input (default: generated, seeded); "
    "or a directory / glob of .npz batches, streamed: formats calibrated over all of them "
    "in bounded memory, errors measured on the first.",
)
@click.option(
    "--config",
    "config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Per-site config YAML (defaults per operator, sites by name; hwapprox.approx.config).",
)
@click.option(
    "--sites",
    multiple=True,
    help="Sites to approximate: all (default), an operator name or a site name; repeatable "
    "or comma-separated. Other sites stay float.",
)
@click.option(
    "--method",
    "methods",
    multiple=True,
    help="OP=METHOD default for an operator (e.g. gelu=pwl, softmax=float); repeatable.",
)
@click.option(
    "--budget",
    help="End-to-end budget KEY=VALUE[,..] (max_abs, mean_abs, cosine, top1, pooled_cosine, "
    "token_cosine): tune method, widths, range policy and method parameters of each site to "
    "the cheapest candidate meeting it.",
)
@click.option("--width", default=16, show_default=True, help="Calibrated input format width W.")
@click.option(
    "--out-width",
    type=int,
    default=None,
    help="Calibrated output format width (default: --width; softmax keeps its method's format).",
)
@click.option(
    "--headroom", default=1, show_default=True, help="Extra integer bits above calibration."
)
@click.option(
    "--range",
    "range_stat",
    default="max",
    show_default=True,
    help="Calibrated magnitude the input formats hold: max, p99.99, p99.9, p99 or a number "
    "(a clipping value); larger inputs saturate and are counted in the report.",
)
@click.option(
    "--for",
    "target",
    type=click.Choice(["any", "hls", "rtl"]),
    default="any",
    show_default=True,
    help="Only methods that have an HLS unit (hls) or an RTL unit (rtl): for --budget "
    "candidates and checked for the resolved specs.",
)
@click.option(
    "--attention",
    type=click.Choice(["two_pass", "fused"]),
    default="two_pass",
    show_default=True,
    help="fused: also run the model with each approximated online-softmax site and its "
    "P·V MatMul as one single-pass attention row (no score row stored) and report both.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="--budget: evaluate candidates on N local worker processes (same result as N=1).",
)
@click.option(
    "--dask",
    default=None,
    metavar="ADDRESS",
    help="Use the Dask scheduler at ADDRESS (tcp://host:8786): --budget's candidates and the "
    "further batches of an --inputs directory run on its workers (same result as without).",
)
@click.option(
    "--clock",
    "clock_mhz",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="MHZ",
    help="--budget: only candidates whose RTL unit reaches MHZ post-route on ECP5-85k "
    "(measured, or estimated from the nearest measured format; implies --for rtl).",
)
@click.option("--seed", default=0, show_default=True, help="Seed for generated inputs.")
@click.option(
    "-o",
    "--output",
    "outdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write report.txt, report.html, validate.json, config.yaml and validate.png here.",
)
@click.option("--force", is_flag=True, help="Overwrite report files in a non-empty output dir.")
def validate_cmd(
    model: Path | None,
    inputs: Path | None,
    config: Path | None,
    sites: tuple[str, ...],
    methods: tuple[str, ...],
    budget: str | None,
    width: int,
    out_width: int | None,
    headroom: int,
    range_stat: str,
    target: str,
    attention: str,
    jobs: int,
    dask: str | None,
    clock_mhz: float | None,
    seed: int,
    outdir: Path | None,
    force: bool,
) -> None:
    """Validate approximations on MODEL (default: the embedded example encoder).

    Finds every softmax / GELU / LayerNorm site, calibrates input ranges with
    onnxruntime, replaces the selected sites by the bit-accurate integer
    models and compares per site and end to end with the float model.
    """
    from hwapprox.export import example
    from hwapprox.export.validate import validate
    from hwapprox.report.validate import (
        format_report,
        preload_plotting,
        prepare_outdir,
        write_report,
    )

    meths = _methods(methods)
    space = None
    if clock_mhz is not None:
        if budget is None:
            raise click.UsageError("--clock ranks --budget candidates; give --budget too")
        target = "rtl"
    allowed = _allowed_methods(target)
    if allowed is not None:
        from hwapprox.export.tuning import SearchSpace

        space = SearchSpace(headroom=headroom, methods=allowed, clock_mhz=clock_mhz)
    if model is None:
        model = example.model_path()
    if inputs is None and _same_file(model, example.model_path()):
        inputs = example.inputs_path()  # the example's shipped batch, named or not
    try:
        if outdir is not None:
            prepare_outdir(outdir, force, create=False)  # fail before the work, not after
            if jobs == 1 and dask is None:  # (no worker processes forked meanwhile)
                preload_plotting()  # the plot's imports beside validate's GIL-free work
        res = validate(
            model,
            inputs=inputs,
            config=config,
            methods=meths,
            sites=sites or None,
            width=width,
            out_width=out_width,
            headroom=headroom,
            range_stat=range_stat,
            budget=budget,
            seed=seed,
            progress=True,
            space=space,
            attention=attention,
            jobs=jobs,
            dask=dask,
        )
        if allowed is not None:
            bad = [
                f"{name} ({spec.operator}/{spec.method})"
                for name, spec in res.specs.items()
                if spec is not None and spec.method not in allowed.get(spec.operator, ())
            ]
            if bad:
                raise ExportError(
                    f"--for {target}: site(s) {', '.join(bad)} use a method without a "
                    f"{target.upper()} unit; units exist for "
                    + "; ".join(f"{op}: {', '.join(ms)}" for op, ms in allowed.items())
                )
        click.echo(format_report(res))
        if outdir is not None:
            files = write_report(res, outdir, force=True)
            click.echo(f"\nwrote {', '.join(str(p) for p in files.values())}")
    except (ExportError, SpecError, FixedPointError) as exc:
        raise click.ClickException(str(exc)) from None
    if res.budget is not None and not res.budget.meets(res.end_to_end):
        # the report is written (what was tried and why it failed); the status says it
        click.echo(
            f"error: the budget {res.budget.describe()} is NOT met end to end (see the "
            "report); relax it or widen the search",
            err=True,
        )
        sys.exit(1)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve() or Path(a).samefile(b)
    except OSError:
        return False
