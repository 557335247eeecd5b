"""The main job end to end on the embedded example (its command, ``hwapprox demo``, is
:mod:`hwapprox.cli.demo`).

Stages (each one is also a command of its own; this module only composes
their Python APIs):

1. **validate** (:func:`hwapprox.export.validate.validate`) -- import the
   embedded encoder (``hwapprox/export/data``), find its softmax / GELU /
   LayerNorm sites, calibrate their input ranges on the bundled samples,
   tune each site's input width to the error budget and measure per-site and
   end-to-end error against onnxruntime; report + plot in ``validate/``.
2. **hls** (:mod:`hwapprox.hls.project`) -- an hls4ml project of an encoder
   block carrying the tuned specs, built with g++ and C-simulated; its raw
   output codes are compared (``np.array_equal`` semantics) with the Python
   block model (:meth:`EncoderBlock.model`). Project in ``hls/``.
3. **rtl** (:func:`hwapprox.rtl_sim.sim.simulate`) -- every distinct tuned
   spec with an RTL unit is built with Verilator and driven by cocotb with
   the site's recorded input data (plus edge rows); the scoreboard compares
   every output code with the spec's model and measures latency/throughput.
   Logs in ``rtl/``.
4. **resources** -- with ``--synth``, yosys numbers
   (:func:`hwapprox.rtl_sim.synth.synthesize`, in a background thread while
   HLS and RTL run) for the units with RTL; otherwise, and for methods without
   RTL, the spec's :meth:`~hwapprox.approx.base.ApproxSpec.cost` estimate,
   labelled as such; and the board fit report (:func:`hwapprox.boards.fit_report`).
   yosys is opt-in because with nothing cached (WebAssembly compile plus
   synthesis of the units) it takes minutes; cached results come back in
   seconds.

Methods: softmax ``online``, GELU ``pwl``, LayerNorm ``rsqrt_lut``
(:data:`DEMO_CONFIG`): each has both an HLS and an RTL unit, so every site is
checked in all three implementations. The budget tunes each site's input
width (8/12/16 bits, integer bits from calibration).

HLS block: by default (``--hls-block model``) both blocks of the example
(``S=16, D=64``) with the config the validate stage wrote, as is (the
embeddings LayerNorm and the head are noted as outside the blocks), block
formats calibrated on the example's inputs, C-simulated on the real block
inputs (g++ builds are cached by content, so only a first run compiles).
``--hls-block tiny`` uses a small seeded block (``S=4, D=8, H=2, F=16``) with
the specs tuned for the example's first block.

A stage that cannot run here (no g++, no Verilator, no yosys) is *skipped*
with the reason; a stage whose check fails (a bit mismatch, a budget not
met) or that raises is *failed*/*error*, and the demo exits with status 1
after writing the summary.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
import numpy as np

from hwapprox.approx.paths import unwritable

__all__ = ["DEFAULT_BUDGET", "DEMO_CONFIG", "MARKER", "StageResult", "run_demo"]

#: Marker file: a directory holding it was written by a previous demo.
MARKER = ".hwapprox-demo"
#: End-to-end error budget the sites are tuned to.
DEFAULT_BUDGET = "top1=1,cosine=0.999"
#: One method per operator (the budget tunes the widths).
DEMO_CONFIG: dict[str, Any] = {
    "defaults": {
        "softmax": {"method": "online"},
        "gelu": {"method": "pwl"},
        "layernorm": {"method": "rsqrt_lut"},
    }
}
#: Small HLS block (S, D, heads, FFN) for ``--hls-block tiny``.
TINY_BLOCK = (4, 8, 2, 16)
#: What the demo writes (and may replace in a previous demo's directory).
OWNED = ("summary.md", "summary.json", "summary.html", "validate", "hls", "rtl", MARKER)
#: the resources stage's status when the design does not fit the board: not a pass of that
#: stage, not a failed check either (the demo's exit status follows the checks)
NO_FIT = "does not fit"
STATUSES = ("passed", "failed", "skipped", "error", NO_FIT)


@dataclasses.dataclass
class StageResult:
    """Outcome of one stage: status (one of :data:`STATUSES`), time, a note, data."""

    status: str
    seconds: float = 0.0
    note: str = ""
    data: dict[str, Any] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "seconds": round(self.seconds, 2), "note": self.note}


# -- output directory --------------------------------------------------------------
def prepare_outdir(path: Path, force: bool) -> Path:
    """Create ``path``; a previous demo's output is replaced, other content needs ``force``.

    Only the files a previous demo recorded in its :data:`MARKER` (``"files"``) are
    removed, then the directories they leave empty; anything else (a file the user
    put into ``validate/``, say) stays. A marker without that list (an older demo)
    removes nothing: the new run overwrites its files.
    """
    why = unwritable(path)
    if why is not None:
        raise click.BadParameter(why, param_hint="-o")
    if path.is_dir() and any(path.iterdir()):
        if (path / MARKER).is_file():
            _remove_recorded(path)
        elif not force:
            raise click.BadParameter(
                f"{str(path)!r} is not empty and was not written by a previous demo "
                f"(no {MARKER} file); choose another directory or pass --force to write "
                "into it",
                param_hint="-o",
            )
    path.mkdir(parents=True, exist_ok=True)
    _write_marker(path, [])
    return path


def _write_marker(path: Path, files: list[str]) -> None:
    (path / MARKER).write_text(json.dumps({"written_by": "hwapprox demo", "files": files}) + "\n")


def _remove_recorded(path: Path) -> None:
    """Delete the files the previous demo's marker lists (inside ``path`` only) and the
    directories that leaves empty."""
    try:
        files = json.loads((path / MARKER).read_text()).get("files") or []
    except (OSError, ValueError, AttributeError):
        files = []
    root = path.resolve()
    dirs: set[Path] = set()
    for rel in files:
        f = (path / str(rel)).resolve()
        if root not in f.parents or not f.is_file():
            continue  # never outside the directory, never a directory
        f.unlink()
        dirs.update(d for d in f.parents if root in d.parents)
    for d in sorted(dirs, key=lambda d: len(d.parts), reverse=True):
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()


def _echo(msg: str) -> None:
    click.echo(msg, err=False)


# -- stage 1: validate ---------------------------------------------------------------
def stage_validate(out: Path, budget: str) -> StageResult:
    """Import, calibrate, tune to ``budget`` and measure; report in ``out/validate``."""
    from hwapprox.approx.costmodel import rank_score
    from hwapprox.export import example
    from hwapprox.export.validate import validate
    from hwapprox.report.validate import write_report

    res = validate(
        example.model_path(),
        inputs=example.inputs_path(),
        config=DEMO_CONFIG,
        budget=budget,
        seed=0,
    )
    write_report(res, out / "validate", force=True)
    at_tuning: dict[str, float] = {}
    for t in res.tuning:
        for ev in t["evaluated"]:
            if ev["spec"] == t["chosen"]:
                at_tuning[t["site"]] = ev["max_abs"]
    rows = []
    for s in res.imported.sites:
        spec = res.specs.get(s.name)
        err = res.site_errors.get(s.name) or {}
        rows.append(
            {
                "site": s.name,
                "operator": f"{s.operator}/{s.pattern}",
                "method": "float" if spec is None else spec.method,
                "in_fmt": None if spec is None else str(spec.in_fmt),
                "out_fmt": None if spec is None else str(spec.out_fmt),
                "site_max_abs": err.get("max_abs"),
                "site_max_lsb": err.get("max_lsb"),
                "site_quant_lsb": err.get("quant_max_lsb"),
                "site_approx_lsb": err.get("approx_max_lsb"),
                "e2e_max_abs_at_tuning": at_tuning.get(s.name),
                "cost_score": None if spec is None else round(rank_score(spec), 1),
            }
        )
    e2e = {k: res.end_to_end[k] for k in ("max_abs", "mean_abs", "cosine_min", "top1")}
    met = res.budget.meets(res.end_to_end) if res.budget is not None else True
    floats = [r["site"] for r in rows if r["method"] == "float"]
    data = {
        "sites": rows,
        "end_to_end": e2e,
        "budget_met": met,
        "samples": res.n_samples,
        "_result": res,
    }
    note = (
        f"{len(rows)} sites; e2e max|err| {e2e['max_abs']:.3g}, cosine min "
        f"{e2e['cosine_min']:.6f}, top-1 {e2e['top1']}"
    )
    if not met or floats:
        why = "budget not met" if not met else f"site(s) left float: {', '.join(floats)}"
        return StageResult("failed", note=f"{why}; {note}", data=data)
    return StageResult("passed", note=note, data=data)


# -- stage 2: HLS ----------------------------------------------------------------------
def _block_site_config(res: Any) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Per block role -> site name in the example, and the tuned config of those sites."""
    from hwapprox.export.blockmatch import match_blocks
    from hwapprox.export.graph import load_model

    matches = match_blocks(load_model(res.imported.model))
    cfg = res.config().to_dict()
    block_sites = {n for m in matches for n in m.sites.values()}
    sites = {k: v for k, v in cfg["sites"].items() if k in block_sites}
    return [m.sites for m in matches], sites


def stage_hls(
    out: Path, res: Any, block: str, part: str, clock_period: float | None = None
) -> StageResult:
    """hls4ml project of an encoder block with the tuned specs; C-sim vs the block model."""
    if shutil.which("g++") is None:
        return StageResult(
            "skipped", note="g++ is not on PATH (apt-get install g++) -- needed for the C-sim"
        )
    from hwapprox.export import example
    from hwapprox.export.blockmatch import encoder_block_onnx, match_blocks
    from hwapprox.hls.project import compile_project, convert, csim_check, prepare_model

    roles, sites = _block_site_config(res)
    first = roles[0]
    if block == "tiny":
        s, d, h, f = TINY_BLOCK
        model: Any = encoder_block_onnx(s, d, h, f, gelu="erf", layernorm="decomposed", seed=0)
        from hwapprox.export.graph import load_model

        tiny = match_blocks(load_model(model))[0].sites
        ln2 = sites[first["ln2"]]
        cfg: dict[str, Any] = {
            "sites": {tiny[r]: sites[first[r]] for r in first},
            "hls": {"in_fmt": ln2["out_fmt"]},
        }
        inputs = None
        label = (
            f"tiny seeded block S={s} D={d} H={h} F={f} with the specs of the example's "
            f"block 0 ({', '.join(first.values())})"
        )
    else:
        # The config validate wrote, as is: sites outside the blocks are noted, the
        # block formats are calibrated on the example's inputs, blocks chain formats.
        model = example.model_path()
        cfg = res.config().to_dict()
        inputs = example.inputs_path()
        label = f"embedded example, all {len(roles)} blocks (S=16, D=64)"
    hdir = out / "hls"
    hdir.mkdir(parents=True, exist_ok=True)
    import yaml

    (hdir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        prep = prepare_model(model, cfg, inputs=inputs)
        hmodel = convert(
            prep, hdir / "project", backend="Vivado", part=part, clock_period=clock_period
        )
    _echo("    g++ build of the hls4ml project (about 15 s for the example; cached) ...")
    with contextlib.redirect_stdout(log):
        compile_project(hmodel, write=False)
    b0 = prep.blocks[0]
    fmt = b0.formats.in_fmt
    rng = np.random.default_rng(0)
    real = (
        np.asarray(prep.samples)[:8]
        if prep.samples is not None
        else fmt.quantize(rng.normal(0, 1, (8, b0.seq, b0.dim)))
    )
    x = np.concatenate(
        [
            real,
            np.zeros((1, b0.seq, b0.dim), np.int64),
            np.full((1, b0.seq, b0.dim), fmt.max_raw),
            np.full((1, b0.seq, b0.dim), fmt.min_raw),
        ]
    )
    rep = csim_check(hmodel, prep, x, compile=False)
    (hdir / "hls4ml.log").write_text(log.getvalue())
    data = {
        "block": label,
        "backend": "Vivado",
        "part": part,
        "blocks": len(prep.blocks),
        "seq": b0.seq,
        "dim": b0.dim,
        "samples": rep.samples,
        "values": rep.values,
        "bit_exact": rep.bit_exact,
        "mismatches": rep.mismatches,
        "first_mismatch": None if rep.first is None else list(rep.first),
    }
    verdict = (
        f"bit-exact on {rep.values} values ({rep.samples} samples)"
        if rep.bit_exact
        else f"{rep.mismatches} of {rep.values} values differ (first at {rep.first})"
    )
    return StageResult("passed" if rep.bit_exact else "failed", note=verdict, data=data)


# -- stage 3: RTL ----------------------------------------------------------------------
#: Real rows per site fed to a row-wise unit, and elements per site to an elementwise one.
RTL_ROWS_PER_SITE = 16
RTL_ELEMENTS_PER_SITE = 512
#: RTL simulations at once in the demo at most (one Verilator process each; on 2 CPUs
#: two at a time took the embedded example's nine from 13.7-14.4 s to 8.3-9.0 s)
RTL_WORKERS = 2


def _site_rows(spec: Any, x: np.ndarray, rowwise: bool) -> list[np.ndarray]:
    """The site's recorded float input as ``spec.in_fmt`` codes, cut into rows."""
    raw = spec.in_fmt.quantize(np.asarray(x, dtype=np.float64))
    if rowwise:
        r = raw.reshape(-1, raw.shape[-1])[:RTL_ROWS_PER_SITE]
        return list(r)
    flat = raw.ravel()[:RTL_ELEMENTS_PER_SITE]
    return [flat[i : i + 64] for i in range(0, flat.size, 64)]


def stage_rtl(
    out: Path,
    res: Any,
    simulate: Callable[..., Any] | None = None,
    workers: int | None = None,
) -> StageResult:
    """Simulate every distinct tuned spec that has an RTL unit on its sites' data.

    The simulations (a Verilator process each, its build cached and locked per key) run
    ``workers`` at a time (default: one per CPU, at most :data:`RTL_WORKERS`); their
    lines and entries come out in the specs' order."""
    from hwapprox.approx.base import SpecError
    from hwapprox.rtl_sim.runner import simulator_available
    from hwapprox.rtl_sim.sim import default_rows
    from hwapprox.rtl_sim.units import get_unit

    if simulate is None:
        from hwapprox.rtl_sim.sim import simulate
    reason = simulator_available("verilator")
    if reason is not None:
        return StageResult("skipped", note=f"Verilator not usable: {reason}")
    groups = _spec_groups(res)
    units: list[dict[str, Any]] = []
    failed = []

    def run_one(spec: Any, rows: Any, names: list[str], rdir: Path) -> tuple[Any, float]:
        t0 = time.perf_counter()
        r = simulate(spec, rows, seed=0, row_max=_row_max(res, names), keep_dir=rdir)
        return r, time.perf_counter() - t0

    n_workers = workers or max(1, min(RTL_WORKERS, os.cpu_count() or 1))
    pool = ThreadPoolExecutor(max_workers=n_workers, thread_name_prefix="hwapprox-rtl")
    try:
        # every simulation submitted first (per spec: its unit, rows, log dir and run, or
        # None without a unit), then reported in order as each finishes
        runs: list[tuple[Any, list[np.ndarray], Path, Future[tuple[Any, float]]] | None] = []
        for spec, names in groups:
            name = f"{spec.operator}/{spec.method}"
            units.append({"unit": name, "sites": names, "spec": spec.describe()})
            try:
                unit = get_unit(spec.operator, spec.method)
            except SpecError as exc:
                units[-1]["note"] = f"skipped: {exc}"
                runs.append(None)
                continue
            rows = default_rows(spec, 16, 4, seed=0)
            for n in names:
                rows += _site_rows(spec, res.trace.site_inputs[n], unit.rowwise)
            rdir = out.resolve() / "rtl" / f"{unit.toplevel}-{names[0]}"
            runs.append((unit, rows, rdir, pool.submit(run_one, spec, rows, names, rdir)))
        for i, (entry, run) in enumerate(zip(units, runs, strict=True), 1):
            name, names = entry["unit"], entry["sites"]
            if run is None:
                _echo(f"    [{i}/{len(groups)}] {name}: no RTL unit, skipped")
                continue
            unit, rows, rdir, fut = run
            _echo(
                f"    [{i}/{len(groups)}] {unit.toplevel} for {name} ({len(names)} site(s)): "
                f"build + simulate {sum(r.size for r in rows)} inputs ..."
            )
            r, seconds = fut.result()
            blog = Path(r.build.build_dir) / "build.log"
            if blog.is_file():
                shutil.copy2(blog, rdir / "build.log")
            st = r.stats
            lat = st.get("latency_first") or {}
            entry.update(
                toplevel=unit.toplevel,
                bit_exact=bool(r.passed),
                vectors=st.get("n_expected"),
                matched=st.get("matched"),
                mismatches=st.get("mismatches"),
                latency=(f"{lat['min']}-{lat['max']}" if lat else None),
                latency_first=lat,
                throughput=(round(st["throughput"], 3) if "throughput" in st else None),
                throughput_in=st.get("throughput_in"),
                build_seconds=round(r.build.seconds, 1),
                build_reused=r.build.reused,
                sim_seconds=round(seconds, 1),
                log_dir=str(rdir),
            )
            if not r.passed:
                entry["note"] = st.get("summary", "simulation failed; see sim.log")
                failed.append(name)
            _echo(
                f"        {'bit-exact' if r.passed else 'FAILED'}: {st.get('matched')}/"
                f"{st.get('n_expected')} outputs, {seconds:.1f} s "
                f"({'build reused' if r.build.reused else f'build {r.build.seconds:.0f} s'})"
            )
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    simulated = [u for u in units if "bit_exact" in u]
    note = f"{len(simulated)} unit(s) simulated, {len(units) - len(simulated)} without RTL unit"
    if failed:
        return StageResult(
            "failed", note=f"mismatch in {', '.join(failed)}; {note}", data={"units": units}
        )
    return StageResult("passed", note=note, data={"units": units})


# -- stage 4: resources + board fit ------------------------------------------------------
def _spec_groups(res: Any) -> list[tuple[Any, list[str]]]:
    """Distinct tuned specs (in graph order of first use) and the sites using each."""
    groups: dict[str, tuple[Any, list[str]]] = {}
    for s in res.selected:
        spec = res.specs.get(s.name)
        if spec is None:
            continue
        key = json.dumps(spec.to_config(), sort_keys=True, default=str)
        groups.setdefault(key, (spec, []))[1].append(s.name)
    return list(groups.values())


#: Smallest row buffer of the row-wise RTL units (the example's sequence length).
RTL_ROW_MAX = 16


def _row_max(res: Any, names: list[str]) -> int:
    """Row buffer for a unit serving ``names``: their longest row (>= RTL_ROW_MAX)."""
    lengths = [np.asarray(res.trace.site_inputs[n]).shape[-1] for n in names]
    return max([RTL_ROW_MAX, *lengths])


RES_KINDS = ("LUT", "FF", "DSP", "BRAM")


def synth_why_not(synth: bool) -> str | None:
    """None when yosys numbers can be made here, else why not (and how to enable them)."""
    try:
        from hwapprox.rtl_sim.synth import synth_available
    except ImportError as exc:
        return f"hwapprox.rtl_sim.synth is not available ({exc})"
    missing = synth_available()
    if not synth:
        hint = "" if missing is None else f" ({missing})"
        return f"not requested; pass --synth for yosys numbers{hint}"
    return missing


def start_synth(res: Any, family: str, pool: Executor) -> dict[int, Future[dict[str, Any]]]:
    """Submit yosys runs for every distinct spec with an RTL unit (index in ``_spec_groups``).

    They run in ``pool`` (a subprocess each) while the HLS and RTL stages use the
    other core; :func:`stage_resources` collects them.
    """
    from hwapprox.approx.base import SpecError
    from hwapprox.rtl_sim.synth import synthesize
    from hwapprox.rtl_sim.units import get_unit

    jobs = {}
    for i, (spec, names) in enumerate(_spec_groups(res)):
        try:
            get_unit(spec.operator, spec.method)
        except SpecError:
            continue
        jobs[i] = pool.submit(synthesize, spec, row_max=_row_max(res, names), family=family)
    return jobs


def stage_resources(
    res: Any,
    board: str,
    synth_jobs: dict[int, Future[dict[str, Any]]],
    why_not: str | None,
) -> StageResult:
    """Resources per distinct unit (yosys, else the cost estimate) and the board fit."""
    from hwapprox.boards import fit_report, get_board

    b = get_board(board)
    if synth_jobs and not all(f.done() for f in synth_jobs.values()):
        _echo("    waiting for the yosys runs started after the validate stage ...")
    rows = []
    used = dict.fromkeys(RES_KINDS, 0.0)
    estimated = []
    for i, (spec, names) in enumerate(_spec_groups(res)):
        unit = f"{spec.operator}/{spec.method}"
        row: dict[str, Any] = {"unit": unit, "sites": names, "count": len(names)}
        counts = None
        fut = synth_jobs.get(i)
        if fut is None and why_not is None:
            row["note"] = "no RTL unit to synthesise"
        elif fut is not None:
            try:
                counts = fut.result()
            except Exception as exc:  # a failed synthesis falls back to the estimate
                row["note"] = f"yosys failed: {type(exc).__name__}: {str(exc)[:300]}"
        if counts is not None:
            row["source"] = f"yosys ({'cached' if counts.get('cached') else 'run'})"
            row.update({k: counts[k] for k in RES_KINDS})
        else:
            from hwapprox.approx.costmodel import FAMILIES as COST_FAMILIES
            from hwapprox.approx.costmodel import estimate

            fam = b.family if b.family in COST_FAMILIES else "7series"
            est = estimate(spec, fam, row_max=_row_max(res, names))
            row["source"] = f"ESTIMATE ({est.source} cost model, {fam})"
            row.update({k: v for k, v in est.as_dict().items() if k in RES_KINDS})
            estimated.append(unit)
        for k in RES_KINDS:
            if row[k] is not None:
                used[k] += row[k] * len(names)
        rows.append(row)
    # the linear layers: a documented estimate (export.linear_cost), its own row
    from hwapprox.export.linear_cost import linear_estimate

    lin = linear_estimate(res.imported.model, as_written=True)  # the project's linear.h
    rows.append(
        {
            "unit": "linear layers (MatMul/Gemm)",
            "sites": [f"{lin.layers} layers, {lin.weights} weights"],
            "count": lin.layers,
            "source": "ESTIMATE (formula)",
            "LUT": None,
            "FF": None,
            "DSP": lin.dsp,
            "BRAM": lin.bram,
            "note": lin.formula,
        }
    )
    used["DSP"] += lin.dsp
    used["BRAM"] += lin.bram
    # only the kinds something was counted for (a proxy estimate has LUTs only)
    measured = {k for r in rows for k in RES_KINDS if r[k] is not None}
    fit = fit_report({k: v for k, v in used.items() if k in measured}, b)
    basis = (
        "Sum over the nonlinear units, one instance per site, plus the linear layers' "
        f"DSP/BRAM ESTIMATE ({lin.formula}). "
    )
    if estimated:
        basis += (
            "ESTIMATED (cost model fitted to yosys, hwapprox.approx.costmodel) for: "
            f"{', '.join(estimated)}."
        )
    resources = {
        "source": "yosys synth_xilinx where an RTL unit exists, else ESTIMATE"
        if why_not is None
        else "ESTIMATE from the cost model fitted to yosys runs (approx.costmodel), not synthesis",
        "note": (
            "ESTIMATE rows: the cost model fitted to yosys synthesis of the RTL units "
            "(benchmarks/results/synth.md gives its error; 'proxy' rows: Cost.score() LUTs "
            "only). yosys rows: hwapprox.rtl_sim.synth "
            "(yosys mapping, not Vivado), row buffer = the sites' longest row."
            + ("" if why_not is None else f" yosys not used: {why_not}.")
        ),
        "columns": ["count", "source", *RES_KINDS],
        "rows": [{**r, "site": ", ".join(r["sites"])} for r in rows],
    }
    fitd = {
        "board": b.name,
        "part": b.part,
        "clock_mhz": b.clock_mhz,
        "basis": basis,
        "kinds": {
            k: {"used": fit.used[k], "available": b.resources[k], "utilisation": fit.utilisation[k]}
            for k in fit.used
        },
        "fits": fit.fits,
    }
    src = "yosys" if why_not is None else "estimate only"
    note = (
        f"{src}: " + ", ".join(f"{k} {v:.0f}" for k, v in fit.used.items()) + f"; {b.name}: "
        f"{'fits' if fit.fits else 'does NOT fit'}"
    )
    if not fit.fits and fit.utilisation.get("DSP", 0.0) > 1.0:
        left = b.resources["DSP"] - (used["DSP"] - lin.dsp)
        fitd["linear_dsp_as_written"] = lin.dsp
        if left >= 0:
            note += (
                f"; the linear layers as written need {lin.dsp} DSP (fully unrolled, "
                f"{left:.0f} left after the nonlinear units): the generated project has no "
                "reuse/folding setting for them yet, so no setting of it makes this fit"
            )
        else:
            note += "; the nonlinear units alone exceed the board's DSPs"
    if why_not is not None:
        note += f" (yosys not used: {why_not})"
    status = "passed" if fit.fits else NO_FIT
    return StageResult(status, note=note, data={"resources": resources, "fit": fitd})


# -- driver ----------------------------------------------------------------------------
def _run(name: str, what: str, fn: Callable[[], StageResult]) -> StageResult:
    _echo(f"[{name}] {what}")
    t0 = time.perf_counter()
    try:
        r = fn()
    except Exception as exc:  # a stage must never take the demo (and its summary) down
        r = StageResult("error", note=f"{type(exc).__name__}: {exc}"[:2000])
    r.seconds = time.perf_counter() - t0
    _echo(f"[{name}] {r.status} in {r.seconds:.1f} s -- {r.note}")
    return r


def run_demo(
    outdir: str | Path = "hwapprox_out",
    *,
    board: str = "pynq-z2",
    budget: str = DEFAULT_BUDGET,
    skip_hls: bool = False,
    skip_rtl: bool = False,
    hls_block: str = "model",
    synth: bool = False,
    force: bool = False,
) -> dict[str, Any]:
    """Run every stage into ``outdir``; return the summary dict (also ``summary.json``).

    ``summary["passed"]`` is false when any stage failed or raised.
    """
    from hwapprox.boards import get_board

    t_start = time.perf_counter()
    b = get_board(board)
    out = prepare_outdir(Path(outdir), force)
    before = _owned_files(out)  # what is there now and not rewritten is not this run's
    stages: dict[str, StageResult] = {}
    stages["validate"] = _run(
        "validate",
        "import the embedded encoder, find sites, calibrate, tune widths to the budget, "
        "compare with onnxruntime",
        lambda: stage_validate(out, budget),
    )
    res = stages["validate"].data.get("_result")
    no_res = StageResult("skipped", note="the validate stage did not produce specs")
    why_not = synth_why_not(synth)
    pool = ThreadPoolExecutor(max_workers=1)
    synth_jobs: dict[int, Future[dict[str, Any]]] = {}
    if res is not None and why_not is None:
        try:
            synth_jobs = start_synth(res, b.family, pool)
        except Exception as exc:  # the resources stage then reports the estimate
            why_not = f"{type(exc).__name__}: {exc}"
        else:
            _echo(f"[resources] {len(synth_jobs)} yosys run(s) started in the background")
    if skip_hls:
        stages["hls"] = StageResult("skipped", note="--skip-hls given (drop it to run g++ C-sim)")
        _echo(f"[hls] skipped -- {stages['hls'].note}")
    elif res is None:
        stages["hls"] = no_res
    else:
        stages["hls"] = _run(
            "hls",
            f"hls4ml project ({hls_block} block) for {b.part}, g++ C-sim vs the block model",
            lambda: stage_hls(out, res, hls_block, b.part, b.clock_period_ns),
        )
    if skip_rtl:
        stages["rtl"] = StageResult("skipped", note="--skip-rtl given (drop it to simulate RTL)")
        _echo(f"[rtl] skipped -- {stages['rtl'].note}")
    elif res is None:
        stages["rtl"] = no_res
    else:
        stages["rtl"] = _run(
            "rtl",
            "Verilator builds + cocotb scoreboard on the sites' data",
            # (one core fewer while yosys runs beside it)
            lambda: stage_rtl(out, res, workers=1 if synth_jobs else None),
        )
    if res is None:
        stages["resources"] = no_res
    else:
        stages["resources"] = _run(
            "resources",
            f"resources per unit and the {b.name} fit report",
            lambda: stage_resources(res, b.name, synth_jobs, why_not),
        )
    pool.shutdown(wait=True, cancel_futures=True)
    passed = all(s.status in ("passed", "skipped", NO_FIT) for s in stages.values())
    v = {k: x for k, x in stages["validate"].data.items() if not k.startswith("_")}
    summary: dict[str, Any] = {
        "model": "hwapprox/export/data/bert_tiny.onnx (embedded example)",
        "n_sites": len(v.get("sites", [])),
        "board": b.name,
        "budget": budget,
        "passed": passed,
        "total_seconds": time.perf_counter() - t_start,
        "stages": {k: s.as_dict() for k, s in stages.items()},
        "validate": v or None,
        "hls": stages["hls"].data or None,
        "rtl": stages["rtl"].data.get("units"),
        "resources": stages["resources"].data.get("resources"),
        "fit": stages["resources"].data.get("fit"),
        "files": [],
    }
    from hwapprox.report.html import demo_html
    from hwapprox.report.markdown import demo_markdown

    files = sorted(
        str(p.relative_to(out))
        for p in out.rglob("*")
        if p.is_file() and "project" not in p.relative_to(out).parts[:2]
    )
    summary["files"] = [*files, "hls/project/ (hls4ml project)"] if summary["hls"] else files
    summary["files"] += ["summary.md", "summary.json", "summary.html"]
    (out / "summary.json").write_text(json.dumps(_plain(summary), indent=2) + "\n")
    (out / "summary.md").write_text(demo_markdown(summary))
    pngs = {f: out / f for f in files if f.endswith(".png")}
    (out / "summary.html").write_text(demo_html(_plain(summary), pngs), encoding="utf-8")
    after = _owned_files(out)
    _write_marker(out, sorted(k for k, t in after.items() if before.get(k) != t))
    return summary


def _owned_files(out: Path) -> dict[str, int]:
    """Files under the demo's own entries (:data:`OWNED`): relative path -> mtime (ns)."""
    found: dict[str, int] = {}
    for name in OWNED:
        top = out / name
        if name == MARKER or not top.exists():
            continue
        for p in [top] if top.is_file() else top.rglob("*"):
            if p.is_file():
                found[str(p.relative_to(out))] = p.stat().st_mtime_ns
    return found


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return str(v)
    return v
