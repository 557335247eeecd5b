"""``hwapprox list | eval | sweep | tune`` -- the approximation commands.

Formats are given in HLS spelling (``'ap_fixed<16,6,AP_RND,AP_SAT>'``; quote
them in a shell). ``--set field=value`` sets any spec field; in ``sweep`` and
``tune`` a value may be a comma list (``--set exp_table_size=256,1024``;
commas inside ``<...>`` do not split). Input options (``--dist``,
``--sigma``, ``--n``, ...) take comma lists in ``sweep``/``tune`` too, and
the input sets are their product.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import click

from hwapprox.approx.base import Operator, SpecError
from hwapprox.approx.inputs import DISTRIBUTIONS, InputSet
from hwapprox.approx.registry import METHODS, get_method, list_methods, make_spec
from hwapprox.cli.parse import (
    fmt_callback,
    method_class,
    parse_scalar,
    parse_set_lists,
    parse_sets,
    split_list,
)
from hwapprox.fixed import FixedFormat, FixedPointError

__all__ = ["eval_cmd", "list_cmd", "sweep_cmd", "tune_cmd"]

_OPS = [o.value for o in Operator]


def _coerce_fields(op: str, method: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Unknown fields fail clearly; ints for float fields become floats."""
    from hwapprox.approx.sweep import coerce_fields

    cls = method_class(op, method)
    known = {f.name: f for f in dataclasses.fields(cls)}
    out = {}
    for k, v in fields.items():
        f = known.get(k)
        if f is None:
            raise click.BadParameter(
                f"{op}/{method} has no field {k!r}; fields: {', '.join(sorted(known))}",
                param_hint="--set",
            )
        out[k] = v
    return coerce_fields(cls, out)


# -- input options ------------------------------------------------------------------
_INPUT_OPTIONS = [
    click.option(
        "--dist",
        default="gaussian",
        show_default=True,
        help=f"Input distribution ({', '.join(d for d in DISTRIBUTIONS if d != 'file')}).",
    ),
    click.option("--sigma", default="2", show_default=True, help="Std dev (gaussian, heavy)."),
    click.option("--mean", default="0", show_default=True, help="Mean (gaussian, heavy)."),
    click.option("--rows", default="256", show_default=True, help="Number of rows."),
    click.option("--n", "n", default="64", show_default=True, help="Row length (8..1024)."),
    click.option("--low", default=None, help="Uniform: lower bound (default: format min)."),
    click.option("--high", default=None, help="Uniform: upper bound (default: format max)."),
    click.option("--df", default="3", show_default=True, help="Heavy: Student-t dof."),
    click.option("--spikes", default=None, help="Heavy: spikes per row (default n//64, >= 1)."),
    click.option(
        "--affine",
        default="identity",
        show_default=True,
        help="LayerNorm gamma/beta: identity or random.",
    ),
    click.option("--seed", default="0", show_default=True, help="Random seed."),
    click.option(
        "--inputs",
        "inputs_file",
        type=click.Path(dir_okay=False),
        default=None,
        help="User inputs (.npy/.npz; last axis = row) instead of a distribution.",
    ),
    click.option("--key", default=None, help="Array name inside an .npz file."),
]


def _input_options(fn: Any) -> Any:
    for opt in reversed(_INPUT_OPTIONS):
        fn = opt(fn)
    return fn


_INPUT_KEYS = (
    "dist",
    "sigma",
    "mean",
    "rows",
    "n",
    "low",
    "high",
    "df",
    "spikes",
    "affine",
    "seed",
)
_INT_KEYS = ("rows", "n", "spikes", "seed")


def _input_sets(kw: dict[str, Any], many: bool) -> list[InputSet]:
    """Input sets from the input options (the product of their comma lists)."""
    if kw.get("inputs_file"):
        return [
            _make_set(
                "--inputs",
                dist="file",
                path=str(kw["inputs_file"]),
                key=kw.get("key"),
                affine=kw["affine"],
                seed=_one_int(kw["seed"], "--seed"),
            )
        ]
    if kw.get("key"):
        raise click.BadParameter("--key applies only with --inputs FILE.npz", param_hint="--key")
    lists: dict[str, list[Any]] = {}
    for k in _INPUT_KEYS:
        raw = kw.get(k)
        if raw is None:
            continue
        items = split_list(str(raw)) if many else [str(raw)]
        vals = []
        for it in items:
            if k in ("dist", "affine"):
                vals.append(it)
                continue
            v = parse_scalar(it)
            ok = isinstance(v, int) if k in _INT_KEYS else isinstance(v, int | float)
            if isinstance(v, bool) or not ok:
                kind = "an integer" if k in _INT_KEYS else "a number"
                extra = (
                    " (one value; comma lists only in sweep/tune)" if not many and "," in it else ""
                )
                raise click.BadParameter(f"{it!r} is not {kind}{extra}", param_hint=f"--{k}")
            vals.append(float(v) if k not in _INT_KEYS else v)
        lists[k] = vals
    dists = lists.get("dist", [])
    if "file" in dists:
        raise click.BadParameter("use --inputs FILE for user arrays", param_hint="--dist")
    for opt, dist in (("low", "uniform"), ("high", "uniform"), ("spikes", "heavy")):
        if opt in lists and dist not in dists:
            raise click.BadParameter(
                f"--{opt} applies to --dist {dist} only (got --dist {','.join(dists)})",
                param_hint=f"--{opt}",
            )
    keys = list(lists)
    sets = []
    for combo in itertools.product(*(lists[k] for k in keys)):
        d = dict(zip(keys, combo, strict=True))
        if d.get("dist") == "uniform":
            d.pop("sigma", None)
            d.pop("mean", None)
        else:
            d.pop("low", None)
            d.pop("high", None)
        if d.get("dist") != "heavy":
            d.pop("df", None)
            d.pop("spikes", None)
        sets.append(_make_set(None, **d))
    # identical sets (e.g. sigma listed for uniform) collapse
    unique = list(dict.fromkeys(sets))
    return unique


def _one_int(v: str, hint: str) -> int:
    x = parse_scalar(v)
    if not isinstance(x, int) or isinstance(x, bool):
        raise click.BadParameter(f"{v!r} is not an integer", param_hint=hint)
    return x


def _make_set(hint: str | None, **kw: Any) -> InputSet:
    try:
        s = InputSet(**kw)
        if s.dist != "file":
            return s
        s.reals(FixedFormat(16, 6))  # load now: a bad file fails here, clearly
        return s
    except SpecError as exc:
        msg = str(exc)
        if hint is None:
            m = re.search(r"\b(n|rows|sigma|mean|df|spikes|low|high|affine|seed)=", msg)
            hint = f"--{m.group(1)}" if m else "--dist"
            if "distribution" in msg:
                hint = "--dist"
        raise click.BadParameter(msg, param_hint=hint) from None


# -- shared grid building --------------------------------------------------------------
def _grid_from_options(
    op: str,
    methods: tuple[str, ...],
    in_fmts: tuple[str, ...] | None,
    out_fmts: tuple[str, ...] | None,
    out_widths: tuple[str, ...],
    sets: tuple[str, ...],
    kw: dict[str, Any],
) -> Any:
    from hwapprox.approx.sweep import Grid

    for m in methods:
        method_class(op, m)
    fields = parse_set_lists(sets)
    if in_fmts:
        fields["in_fmt"] = list(in_fmts)
    if out_fmts:
        fields["out_fmt"] = list(out_fmts)
    widths: list[int] = []
    for w in out_widths:
        for item in split_list(w):
            x = parse_scalar(item)
            if not isinstance(x, int) or isinstance(x, bool) or x < 1:
                raise click.BadParameter(
                    f"{item!r} is not a positive integer width", param_hint="--out-width"
                )
            widths.append(x)
    return Grid(
        operator=op,
        methods=list(methods),
        fields=fields,
        out_widths=widths,
        inputs=_input_sets(kw, many=True),
        family=kw.pop("family", None) or "7series",
    )


def _expand_or_fail(grid: Any) -> Any:
    from hwapprox.approx.sweep import SweepError, expand

    try:
        return expand(grid)
    except SpecError as exc:
        hint = "--set" if "field" in str(exc) else "--method"
        raise click.BadParameter(str(exc), param_hint=hint) from None
    except SweepError as exc:
        raise click.ClickException(str(exc)) from None
    except (ModuleNotFoundError, AttributeError) as exc:
        raise click.ClickException(
            f"a method is registered but not importable yet ({exc})"
        ) from None


def _fmt_value(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:.6g}"
    return str(v)


# -- commands ---------------------------------------------------------------------------
@click.command("list")
@click.argument("operator", required=False, type=click.Choice(_OPS))
def list_cmd(operator: str | None) -> None:
    """List the approximation methods of each operator and their sources."""
    for op, methods in list_methods(operator).items():
        click.echo(f"{op}:")
        width = max(len(m) for m in methods)
        for m in methods:
            try:
                cls = get_method(op, m)
                src = cls.source or "(no source given)"
            except (ModuleNotFoundError, AttributeError):
                src = f"(not available yet: {METHODS[op][m]})"
            click.echo(f"  {m:<{width}}  {src}")
            for opt, osrc in getattr(cls, "option_sources", {}).items():
                click.echo(f"  {'':<{width}}    option {opt}: {osrc}")


@click.command("eval")
@click.argument("operator", type=click.Choice(_OPS))
@click.option("--method", "-m", required=True, help="Method name (see 'hwapprox list').")
@click.option("--in-fmt", callback=fmt_callback, help="Input format, e.g. 'ap_fixed<16,6>'.")
@click.option("--out-fmt", callback=fmt_callback, help="Output format, e.g. 'ap_ufixed<8,0>'.")
@click.option("--set", "sets", multiple=True, metavar="FIELD=VALUE", help="Any spec field.")
@_input_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def eval_cmd(
    operator: str,
    method: str,
    in_fmt: str | None,
    out_fmt: str | None,
    sets: tuple[str, ...],
    as_json: bool,
    **kw: Any,
) -> None:
    """Measure one spec against the float64 reference and print its metrics."""
    from hwapprox.approx.sweep import measure

    fields = parse_sets(sets)
    if in_fmt:
        fields["in_fmt"] = in_fmt
    if out_fmt:
        fields["out_fmt"] = out_fmt
    fields = _coerce_fields(operator, method, fields)
    try:
        spec = make_spec(operator, method, **fields)
    except (SpecError, FixedPointError, TypeError) as exc:
        raise click.BadParameter(str(exc), param_hint="--set/--in-fmt/--out-fmt") from None
    (iset,) = _input_sets(kw, many=False)
    try:
        m = measure(spec, iset)
    except SpecError as exc:
        raise click.ClickException(f"{spec.describe()} on {iset.label()}: {exc}") from None
    sat, total = iset.saturation(spec.in_fmt)
    cost = spec.cost()
    from hwapprox.approx.costmodel import FAMILIES, estimate

    est = {fam: estimate(spec, fam).as_dict() for fam in FAMILIES}
    if as_json:
        click.echo(
            json.dumps(
                {
                    "spec": spec.to_config(),
                    "inputs": iset.to_dict(),
                    "metrics": m.as_dict(),
                    "saturated_inputs": {"count": sat, "total": total},
                    "cost": cost.as_dict(),
                    "estimate": est,
                },
                indent=2,
            )
        )
        return
    click.echo(spec.describe())
    click.echo(f"inputs: {iset.label()}  (seed {iset.seed}, quantised to {spec.in_fmt})")
    if sat:
        click.echo(
            f"warning: {sat} of {total} inputs lie outside {spec.in_fmt} "
            f"[{float(spec.in_fmt.min):g}, {float(spec.in_fmt.max):g}] and saturate; the "
            "errors below are measured on the saturated codes (widen --in-fmt to avoid it)",
            err=True,
        )
    rows = [
        ("elements", m.n),
        ("saturated inputs", f"{sat} of {total} ({100 * sat / max(total, 1):.3g}%)"),
        ("output LSB", m.lsb),
        ("max |err|", m.max_abs),
        ("max |err| (LSB)", m.max_lsb),
        ("mean |err|", m.mean_abs),
        ("RMS err", m.rms),
        ("QSNR (dB)", m.qsnr_db),
    ]
    if m.top1 is not None:
        rows += [
            ("top-1 agreement", m.top1),
            ("KL (nats/row)", m.kl),
            ("max |sum-1|", m.sum_dev),
            ("mean |sum-1|", m.mean_sum_dev),
        ]
    rows.append(("cost score (proxy)", round(cost.score(), 2)))
    for fam, e in est.items():
        parts = "  ".join(f"{k} {e[k]}" for k in ("LUT", "FF", "DSP", "BRAM") if e[k] is not None)
        rows.append((f"{fam} (est., {e['source']})", parts))
    w = max(len(r[0]) for r in rows)
    for name, value in rows:
        click.echo(f"  {name:<{w}}  {_fmt_value(value)}")


def _grid_options(fn: Any) -> Any:
    opts = [
        click.option(
            "--method", "-m", "methods", multiple=True, help="Method(s); default: all of OPERATOR."
        ),
        click.option(
            "--in-fmt", "in_fmts", multiple=True, callback=fmt_callback, help="Input format(s)."
        ),
        click.option(
            "--out-fmt", "out_fmts", multiple=True, callback=fmt_callback, help="Output format(s)."
        ),
        click.option(
            "--out-width",
            "out_widths",
            multiple=True,
            help="Output widths (e.g. 8,10,12): each out format with W replaced, I kept.",
        ),
        click.option(
            "--set", "sets", multiple=True, metavar="FIELD=V1,V2", help="Spec field values."
        ),
        click.option(
            "--jobs", "-j", type=click.IntRange(min=1), default=None, help="Local worker processes."
        ),
        click.option(
            "--dask",
            default=None,
            metavar="ADDRESS",
            help="Dask scheduler (tcp://host:8786) instead of a local pool.",
        ),
        click.option(
            "--family",
            type=click.Choice(["7series", "ultrascale+"]),
            default="7series",
            show_default=True,
            help="FPGA family whose yosys-fitted LUT/FF/DSP/BRAM estimate ranks candidates.",
        ),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return _input_options(fn)


def _jobs(jobs: int | None) -> int:
    from hwapprox.approx.sweep import default_jobs

    return jobs if jobs is not None else default_jobs()


@click.command("sweep")
@click.argument("operator", required=False, type=click.Choice(_OPS))
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    help="YAML grid (operator, methods, fields, out_widths, inputs; or 'grids: [...]').",
)
@click.option("--out", "-o", "out_dir", required=True, type=click.Path(), help="Output directory.")
@_grid_options
@click.option(
    "--clock",
    "clock_mhz",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="MHZ",
    help="Target clock: the Pareto plots fill the specs whose RTL unit reaches it post-route "
    "on ECP5-85k (measured or estimated from the nearest measured format) and draw the "
    "front at it.",
)
@click.option("--metric", default="max_abs", show_default=True, help="Metric plotted.")
@click.option("--no-plots", is_flag=True, help="Skip the plots.")
@click.option("--max-points", type=click.IntRange(min=0), default=None, help="Stop after N points.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def sweep_cmd(
    operator: str | None,
    config_file: str | None,
    out_dir: str,
    methods: tuple[str, ...],
    in_fmts: tuple[str, ...],
    out_fmts: tuple[str, ...],
    out_widths: tuple[str, ...],
    sets: tuple[str, ...],
    jobs: int | None,
    dask: str | None,
    clock_mhz: float | None,
    metric: str,
    no_plots: bool,
    max_points: int | None,
    quiet: bool,
    **kw: Any,
) -> None:
    """Run a grid of specs × input sets into OUT (CSV + JSONL + plots); resumes.

    --set, --out-fmt, --out-width and the input options take comma lists; the
    grid is their product. Points already in OUT are skipped, so an
    interrupted sweep continues where it stopped. OUT must be new, empty or a
    previous sweep's directory.

    \b
    Example:
      hwapprox sweep softmax -m ibert -m softermax --out-width 8,10,12 \\
        --sigma 2,4 --n 64,256 -o sweeps/softmax
    """
    from hwapprox.approx.metrics import METRIC_NAMES
    from hwapprox.approx.sweep import SweepError, run_sweep

    if metric not in METRIC_NAMES:
        raise click.BadParameter(
            f"{metric!r} is not a metric; choose one of {', '.join(METRIC_NAMES)}",
            param_hint="--metric",
        )
    if config_file:
        if operator or methods or in_fmts or out_fmts or out_widths or sets:
            raise click.UsageError(
                "give the grid either in --config or as OPERATOR/--method/--set options, not both"
            )
        grids = _load_grid_file(config_file)
    else:
        if operator is None:
            raise click.UsageError("give OPERATOR (softmax, gelu, layernorm) or --config FILE")
        grids = [_grid_from_options(operator, methods, in_fmts, out_fmts, out_widths, sets, kw)]
    points = []
    skipped = []
    for g in grids:
        exp = _expand_or_fail(g)
        points += exp.points
        skipped += exp.skipped
    for desc, why in skipped:
        click.echo(f"skipped {desc}: {why}", err=True)
    if not points:
        raise click.ClickException("the grid has no valid points")
    try:
        res = run_sweep(
            points,
            out_dir,
            jobs=_jobs(jobs),
            dask=dask,
            progress=not quiet,
            grids=grids,
            skipped=skipped,
            max_points=max_points,
        )
    except SweepError as exc:
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt:
        click.echo(
            f"\ninterrupted; finished points are in {out_dir}; run again to resume", err=True
        )
        sys.exit(130)
    n_err = sum(1 for r in res.records if r.get("status") == "error")
    n_bad = sum(1 for r in res.records if r.get("status") == "invalid")
    click.echo(
        f"{res.ran} points run, {res.skipped_done} already done; {len(res.records)} records "
        f"({n_bad} invalid, {n_err} errors) in {res.out_dir}"
    )
    for r in [r for r in res.records if r.get("status") == "error"][:3]:
        click.echo(
            f"error in {r['method']} {r['out_fmt']} on {r['inputs']}: {r['message']}", err=True
        )
    if not no_plots:
        from hwapprox.report.plots import plot_sweep

        files = plot_sweep(res.records, res.out_dir, metric, clock_mhz)
        if files:
            click.echo("plots: " + ", ".join(p.name for p in files))


def _load_grid_file(path: str) -> list[Any]:
    import yaml

    from hwapprox.approx.sweep import Grid, SweepError

    p = Path(path)
    if not p.is_file():
        raise click.BadParameter(f"grid file {path!r} does not exist", param_hint="--config")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise click.BadParameter(
            f"{path!r} is not valid YAML: {exc}", param_hint="--config"
        ) from None
    items = data.get("grids") if isinstance(data, dict) and "grids" in data else [data]
    if not isinstance(items, list) or not items:
        raise click.BadParameter(
            f"{path!r}: 'grids' must be a non-empty list", param_hint="--config"
        )
    try:
        return [Grid.from_dict(d) for d in items]
    except (SweepError, SpecError) as exc:
        raise click.BadParameter(f"{path!r}: {exc}", param_hint="--config") from None


@click.command("tune")
@click.argument("operator", type=click.Choice(_OPS))
@_grid_options
@click.option("--budget-lsb", type=float, default=None, help="Max error in output LSBs.")
@click.option("--budget-abs", type=float, default=None, help="Max absolute error.")
@click.option("--budget-rms", type=float, default=None, help="Max RMS error.")
@click.option("--budget-kl", type=float, default=None, help="Max mean KL (softmax).")
@click.option("--min-top1", type=float, default=None, help="Min top-1 agreement (softmax).")
@click.option(
    "--clock",
    "clock_mhz",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="MHZ",
    help="Target clock: only specs whose RTL unit reaches it post-route on ECP5-85k "
    "(measured, or estimated from the nearest measured format) are candidates.",
)
@click.option(
    "--save", "save_path", type=click.Path(dir_okay=False), help="Write the chosen spec (YAML)."
)
@click.option("--force", is_flag=True, help="Overwrite --save if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def tune_cmd(
    operator: str,
    methods: tuple[str, ...],
    in_fmts: tuple[str, ...],
    out_fmts: tuple[str, ...],
    out_widths: tuple[str, ...],
    sets: tuple[str, ...],
    jobs: int | None,
    dask: str | None,
    budget_lsb: float | None,
    budget_abs: float | None,
    budget_rms: float | None,
    budget_kl: float | None,
    min_top1: float | None,
    clock_mhz: float | None,
    save_path: str | None,
    force: bool,
    as_json: bool,
    quiet: bool,
    **kw: Any,
) -> None:
    """Find the cheapest spec that meets an error budget.

    Cheapest by the cost model fitted to yosys synthesis of the RTL units
    (LUT/FF/DSP/BRAM of --family, in LUT-equivalents; hwapprox.approx.costmodel).

    The search space is built as in 'hwapprox sweep' (by default: the default
    spec of every method; widen it with --out-width, --out-fmt and --set
    lists); candidates are measured cheapest first on every input set (worst
    case counts). Exits with status 1 when nothing in the space meets the
    budget.

    \b
    Example:
      hwapprox tune softmax --budget-lsb 1 --out-width 8,10 --sigma 2,4
    """
    from hwapprox.approx.sweep import SweepError
    from hwapprox.approx.tune import Budget, tune

    try:
        budget = Budget(
            max_lsb=budget_lsb, max_abs=budget_abs, rms=budget_rms, kl=budget_kl, min_top1=min_top1
        )
    except SpecError as exc:
        raise click.UsageError(f"{exc} (use --budget-lsb/--budget-abs/...)") from None
    if save_path and Path(save_path).exists() and not force:
        raise click.BadParameter(
            f"{save_path!r} exists; choose another file or add --force", param_hint="--save"
        )
    if save_path:
        from hwapprox.approx.paths import unwritable

        why = unwritable(save_path, kind="file")
        if why is not None:  # before the search, not after it
            raise click.BadParameter(why, param_hint="--save")
    grid = _grid_from_options(operator, methods, in_fmts, out_fmts, out_widths, sets, kw)
    _expand_or_fail(grid)  # grid errors as usage errors before any work
    try:
        res = tune(
            grid,
            budget,
            clock_mhz=clock_mhz,
            jobs=min(_jobs(jobs), 8),
            dask=dask,
            progress=not quiet,
        )
    except SweepError as exc:
        raise click.ClickException(str(exc)) from None
    except SpecError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:

        def cand(c: Any) -> Any:
            if c is None:
                return None
            return {
                "spec": c.spec.to_config(),
                "cost_score": c.score,
                "ratio": c.ratio,
                "metrics": None if c.metrics is None else c.metrics.as_dict(),
            }

        click.echo(
            json.dumps(
                {
                    "met": res.met,
                    "budget": dataclasses.asdict(budget),
                    "best": cand(res.best),
                    "closest": cand(res.closest),
                    "evaluated": len(res.evaluated),
                    "space_size": res.space_size,
                    "clock_mhz": clock_mhz,
                    "candidates": [{**cand(c), "error": c.error or None} for c in res.evaluated],
                },
                indent=2,
            )
        )
    else:
        click.echo(res.summary())
    if res.met and save_path and res.best is not None:
        import yaml

        Path(save_path).write_text(yaml.safe_dump(res.best.spec.to_config(), sort_keys=False))
        if not as_json:
            click.echo(f"wrote {save_path}")
    if not res.met:
        sys.exit(1)
