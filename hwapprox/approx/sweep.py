"""Resumable sweeps: methods × spec fields × input sets, on a pool or Dask.

A :class:`Grid` names one operator, its methods, lists of values for any spec
fields (formats in HLS spelling, table sizes, ...) and input sets.
:func:`expand` turns it into :class:`SweepPoint` s (one spec × one input set):

* a field that a method's spec class does not have is ignored *for that
  method* (so ``exp_table_size`` can sit next to methods without a table); a
  field no listed method has is an error;
* ``out_widths`` is a shorthand: each output format (given, or the class
  default) with its width replaced and its integer bits kept;
* combinations the spec refuses (:class:`SpecError`) are skipped and listed,
  and specs equal after defaults are run once.

:func:`run_sweep` submits the pure function :func:`run_point` per point to an
executor -- a local :class:`~concurrent.futures.ProcessPoolExecutor` (``jobs``
workers), in-process for ``jobs=1``, or a Dask cluster (``dask="tcp://..."``,
through ``Client.get_executor()``): one code path. Each finished point is
appended at once to ``results.jsonl`` and ``results.csv`` in the output
directory, so an interrupted sweep resumes: points whose key already has an
``ok``/``invalid`` record are skipped; ``error`` records are retried (the last
record of a key wins when reading). The directory holds a ``sweep.json``
manifest; a non-empty directory without it is refused.

A grid as YAML (``hwapprox sweep --config grid.yaml -o out/``; a top-level
``grids:`` list runs several)::

    operator: softmax
    methods: [ibert, softermax, hls4ml_stable]
    fields:
      in_fmt: ["ap_fixed<16,6>"]
      out_fmt: ["ap_ufixed<8,0,AP_RND,AP_SAT>", "ap_ufixed<12,0,AP_RND,AP_SAT>"]
      exp_table_size: [256, 1024]      # only methods with this field vary it
    inputs:
      - {dist: gaussian, sigma: 2, n: 64}
      - {dist: heavy, sigma: 2, n: 256, rows: 128}
"""

from __future__ import annotations

import concurrent.futures as cf
import csv
import ctypes
import dataclasses
import itertools
import json
import math
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hwapprox.approx.base import ApproxSpec, Operator, SpecError
from hwapprox.approx.costmodel import FAMILIES, estimate, fmax, rank_score
from hwapprox.approx.inputs import InputSet
from hwapprox.approx.metrics import METRIC_NAMES, Metrics, compute_metrics
from hwapprox.approx.paths import unwritable
from hwapprox.approx.registry import get_method, list_methods, make_spec, spec_from_config
from hwapprox.fixed import FixedFormat, FixedPointError

__all__ = [
    "CSV_COLUMNS",
    "Grid",
    "SweepError",
    "SweepPoint",
    "SweepResult",
    "expand",
    "load_records",
    "make_executor",
    "measure",
    "pareto_front",
    "run_point",
    "run_sweep",
]

MANIFEST = "sweep.json"
RESULTS_JSONL = "results.jsonl"
RESULTS_CSV = "results.csv"
_TOOL = "hwapprox sweep"

#: cost_score: the fitted estimate in LUT-equivalents of the grid's family
#: (:func:`hwapprox.approx.costmodel.rank_score`); LUT/FF/DSP/BRAM: its parts; proxy_score:
#: the pre-synthesis ``Cost.score()``; the rest: ``spec.cost()`` counts
COST_COLUMNS = (
    "cost_score",
    "LUT",
    "FF",
    "DSP",
    "BRAM",
    "cost_source",
    "proxy_score",
    "table_bits",
    "tables",
    "multipliers",
    "adders",
    "dividers",
)
CSV_COLUMNS: tuple[str, ...] = (
    "key",
    "operator",
    "method",
    "in_fmt",
    "out_fmt",
    "out_width",
    "fields",
    "inputs",
    "status",
    "message",
    "n",
    "lsb",
    *METRIC_NAMES,
    *COST_COLUMNS,
    "fmax_mhz",
    "fmax_basis",
    "seconds",
)


class SweepError(RuntimeError):
    """A sweep that cannot run as asked (output directory, executor, grid)."""


# -- measuring one spec ------------------------------------------------------
def measure(spec: ApproxSpec, inputs: InputSet) -> Metrics:
    """Run ``spec.model`` on ``inputs`` and compare with ``spec.reference``.

    The reference sees the real values of the same quantised inputs (and the
    same LayerNorm gamma/beta codes); the output LSB is ``spec.out_fmt``'s.
    """
    batch = inputs.generate(spec)
    y = spec.output_to_float(spec.model(batch.raw, **batch.model_kw))
    ref = np.asarray(spec.reference(batch.x, **batch.ref_kw), dtype=np.float64)
    return compute_metrics(
        y, ref, lsb=float(spec.out_fmt.lsb), softmax=spec.operator is Operator.SOFTMAX
    )


# -- grid --------------------------------------------------------------------
@dataclass(frozen=True)
class SweepPoint:
    """One spec (as its full config) on one input set."""

    config: dict[str, Any]
    inputs: InputSet
    cost_score: float = math.nan
    family: str = "7series"

    @property
    def key(self) -> str:
        """Canonical identity: the full spec config and the input set, as JSON."""
        return json.dumps(
            {"spec": self.config, "inputs": self.inputs.to_dict()},
            sort_keys=True,
            separators=(",", ":"),
            default=str,
        )


@dataclass
class Grid:
    """A sweep definition (see the module docstring)."""

    operator: str
    methods: Sequence[str] = ()
    fields: dict[str, Sequence[Any]] = field(default_factory=dict)
    out_widths: Sequence[int] = ()
    inputs: Sequence[InputSet] = (InputSet(),)
    #: FPGA family whose fitted cost ranks the candidates (costmodel.FAMILIES)
    family: str = "7series"

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise SweepError(
                f"grid family {self.family!r} has no cost model; use one of {', '.join(FAMILIES)}"
            )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grid:
        """From plain data (YAML): ``operator``, ``methods``, ``fields``,
        ``out_widths``, ``inputs`` (list of input-set mappings)."""
        known = {"operator", "methods", "fields", "out_widths", "inputs", "family"}
        if not isinstance(data, dict):
            raise SweepError(f"a grid must be a mapping with keys {sorted(known)}, got {data!r}")
        unknown = sorted(set(data) - known)
        if unknown:
            raise SweepError(f"grid has unknown key(s) {unknown}; known: {sorted(known)}")
        if "operator" not in data:
            raise SweepError("grid needs 'operator' (softmax, gelu or layernorm)")
        fields_ = data.get("fields") or {}
        if not isinstance(fields_, dict):
            raise SweepError(f"grid 'fields' must map field names to lists, got {fields_!r}")
        inputs = data.get("inputs") or [{}]
        if not isinstance(inputs, list):
            raise SweepError(f"grid 'inputs' must be a list of mappings, got {inputs!r}")
        try:
            sets = [InputSet.from_dict(dict(d)) for d in inputs]
        except (TypeError, ValueError) as exc:
            raise SweepError(f"grid 'inputs': {exc}") from None
        return cls(
            operator=str(data["operator"]),
            methods=_as_list(data.get("methods") or []),
            fields={str(k): _as_list(v) for k, v in fields_.items()},
            out_widths=[int(w) for w in _as_list(data.get("out_widths") or [])],
            inputs=sets,
            family=str(data.get("family") or "7series"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "operator": str(self.operator),
            "methods": list(self.methods),
            "fields": {k: [_plain(v) for v in vs] for k, vs in self.fields.items()},
            "out_widths": list(self.out_widths),
            "inputs": [s.to_dict() for s in self.inputs],
            "family": self.family,
        }


def _as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list | tuple) else [v]


def _plain(v: Any) -> Any:
    if isinstance(v, FixedFormat):
        return str(v)
    if isinstance(v, tuple):
        return list(v)
    return v


@dataclass
class Expansion:
    """Points of a grid, the specs behind them and the combinations skipped."""

    points: list[SweepPoint]
    specs: list[ApproxSpec]
    skipped: list[tuple[dict[str, Any], str]]


def expand(grid: Grid) -> Expansion:
    """All valid (spec, input set) points of ``grid``, cheapest spec first."""
    methods = list(grid.methods) or list_methods(grid.operator)[Operator(grid.operator)]
    classes = {m: get_method(grid.operator, m) for m in methods}
    names = {m: {f.name for f in dataclasses.fields(c)} for m, c in classes.items()}
    for fname in grid.fields:
        if not any(fname in n for n in names.values()):
            raise SpecError(
                f"no {grid.operator} method among {', '.join(methods)} has a field {fname!r}; "
                f"fields: {', '.join(sorted(set().union(*names.values())))}"
            )
    if not grid.inputs:
        raise SweepError("the grid has no input sets")
    specs: dict[str, ApproxSpec] = {}
    skipped: list[tuple[dict[str, Any], str]] = []
    for method, cls in classes.items():
        own = {k: v for k, v in grid.fields.items() if k in names[method]}
        keys = list(own)
        for combo in itertools.product(*(own[k] for k in keys)):
            values = coerce_fields(cls, dict(zip(keys, combo, strict=True)))
            for vals in _with_widths(cls, values, grid.out_widths):
                try:
                    spec = make_spec(grid.operator, method, **vals)
                except (SpecError, FixedPointError, TypeError) as exc:
                    desc = {"method": method, **{k: _plain(v) for k, v in vals.items()}}
                    skipped.append((desc, str(exc)))
                    continue
                cfg_key = json.dumps(spec.to_config(), sort_keys=True, default=str)
                specs.setdefault(cfg_key, spec)
    fam = grid.family
    ordered = sorted(specs.values(), key=lambda s: (rank_score(s, fam), s.describe()))
    points = [
        SweepPoint(config=s.to_config(), inputs=i, cost_score=rank_score(s, fam), family=fam)
        for s in ordered
        for i in grid.inputs
    ]
    return Expansion(points=points, specs=ordered, skipped=skipped)


def coerce_fields(cls: type[ApproxSpec], values: dict[str, Any]) -> dict[str, Any]:
    """Integers given for float-valued fields become floats (1 -> 1.0), lists
    for tuple-valued fields tuples, so equal specs get equal keys."""
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    out = {}
    for k, v in values.items():
        d = defaults.get(k)
        if isinstance(d, float) and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        elif isinstance(d, tuple) and isinstance(v, list):
            v = tuple(v)
        out[k] = v
    return out


def _with_widths(
    cls: type[ApproxSpec], values: dict[str, Any], widths: Sequence[int]
) -> Iterator[dict[str, Any]]:
    if not widths:
        yield values
        return
    base = values.get("out_fmt")
    if base is None:
        base = next(f for f in dataclasses.fields(cls) if f.name == "out_fmt").default
    try:
        fmt = FixedFormat.parse(base)
    except FixedPointError as exc:
        raise SpecError(f"out_fmt {base!r}: {exc}") from None
    for w in widths:
        yield {**values, "out_fmt": str(dataclasses.replace(fmt, width=int(w)))}


# -- one point (runs in a worker) ----------------------------------------------
def run_point(
    config: dict[str, Any], inputs: dict[str, Any], family: str = "7series"
) -> dict[str, Any]:
    """Pure: build the spec, measure it on the input set, return one record.

    Never raises for a bad point: a spec the class refuses becomes an
    ``"invalid"`` record (final), any failure while measuring an ``"error"``
    record with message and traceback (retried when the sweep resumes).
    """
    t0 = time.perf_counter()
    iset = InputSet.from_dict(inputs)
    point = SweepPoint(config=config, inputs=iset)
    rec: dict[str, Any] = {"key": point.key, "spec": config, "inputs_set": iset.to_dict()}
    rec.update(
        operator=config.get("operator"),
        method=config.get("method"),
        in_fmt=config.get("in_fmt"),
        out_fmt=config.get("out_fmt"),
        inputs=iset.label(),
        fields=json.dumps(
            {
                k: v
                for k, v in config.items()
                if k not in ("operator", "method", "in_fmt", "out_fmt")
            },
            sort_keys=True,
        ),
    )
    try:
        spec = spec_from_config(config)
    except SpecError as exc:  # the spec refuses this combination: final
        rec["status"] = "invalid"
        rec["message"] = str(exc)
        rec["seconds"] = time.perf_counter() - t0
        return rec
    try:
        rec["out_width"] = spec.out_fmt.width
        cost = spec.cost()
        rec["cost"] = cost.as_dict()
        est = estimate(spec, family)
        rec["cost_score"] = rank_score(spec, family)
        rec.update({k: v for k, v in est.as_dict().items() if k in ("LUT", "FF", "DSP", "BRAM")})
        rec["cost_source"] = f"{est.source} ({family})"
        rec["proxy_score"] = cost.score()
        for c in COST_COLUMNS[7:]:
            rec[c] = getattr(cost, c)
        f = fmax(spec)
        rec["fmax_mhz"] = None if f is None else f["fmax_mhz"]
        rec["fmax_basis"] = None if f is None else ("measured" if f["exact"] else f["basis"])
        m = measure(spec, iset)
        rec.update(m.as_dict())
        rec["status"] = "ok"
        rec["message"] = ""
    except Exception as exc:  # bad inputs or a model bug: retried on resume
        rec["status"] = "error"
        rec["message"] = f"{type(exc).__name__}: {exc}"
        rec["traceback"] = traceback.format_exc()
    rec["seconds"] = time.perf_counter() - t0
    return rec


# -- executors -------------------------------------------------------------------
class _InlineExecutor(cf.Executor):
    """Runs each submitted call at once in this process (``jobs=1``)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        fut: cf.Future[Any] = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            fut.set_exception(exc)
        return fut


def die_with_parent() -> None:
    """Ask Linux to send this process SIGTERM when its parent exits (a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):  # pragma: no cover
        return
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    except OSError:  # pragma: no cover - no libc.so.6
        return


def dask_client(address: str) -> Any:
    """A ``dask.distributed.Client`` of the scheduler at ``address``, or :class:`SweepError`
    saying how to install dask or how to write the address."""
    try:
        from dask.distributed import Client  # type: ignore[import-not-found]
    except ImportError:
        raise SweepError(
            "running on a Dask cluster needs dask.distributed, which is not installed; "
            "install it with: pip install 'hwapprox[dask]'"
        ) from None
    try:
        return Client(address, timeout=15)
    except (OSError, ValueError, TypeError) as exc:
        raise SweepError(
            f"cannot reach the Dask scheduler at {address!r} ({exc}); give its address as "
            "tcp://host:port"
        ) from None


def make_executor(jobs: int = 1, dask: str | None = None) -> tuple[cf.Executor, Callable[[], None]]:
    """An executor and its closer: in-process, a process pool, or a Dask cluster.

    ``dask`` is a scheduler address (``tcp://host:8786``); it needs the
    optional extra ``pip install 'hwapprox[dask]'``.
    """
    if dask is not None:
        client = dask_client(dask)
        executor = client.get_executor(pure=False)

        def close() -> None:
            executor.shutdown(wait=True)
            client.close()

        return executor, close
    if jobs < 1:
        raise SweepError(f"jobs={jobs} must be >= 1")
    if jobs == 1:
        ex: cf.Executor = _InlineExecutor()
    else:
        ex = cf.ProcessPoolExecutor(max_workers=jobs, initializer=die_with_parent)
    return ex, lambda: ex.shutdown(wait=True, cancel_futures=True)


def _window(executor: cf.Executor | None) -> int:
    """Points in flight at once: 1 in-process, twice the workers of a pool, else 64."""
    if executor is None or isinstance(executor, _InlineExecutor):
        return 1
    workers = getattr(executor, "_max_workers", None)
    return 2 * int(workers) if isinstance(workers, int) and workers > 0 else 64


def default_jobs() -> int:
    """Worker count when none is given: the usable CPUs (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


# -- results files ------------------------------------------------------------------
def load_records(path: str | Path) -> list[dict[str, Any]]:
    """Records of a ``results.jsonl`` (a truncated last line, as left by a kill, is ignored)."""
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS_JSONL
    if not p.is_file():
        return []
    out = []
    with p.open(encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def latest_by_key(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last record of each key."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        out[r["key"]] = r
    return out


def _csv_row(rec: dict[str, Any]) -> list[Any]:
    return ["" if rec.get(c) is None else rec.get(c) for c in CSV_COLUMNS]


class _Writer:
    """Appends records to the JSONL and CSV files, flushing after each."""

    def __init__(self, out_dir: Path) -> None:
        self.jsonl = (out_dir / RESULTS_JSONL).open("a", encoding="utf-8")
        csv_path = out_dir / RESULTS_CSV
        new = not csv_path.exists() or csv_path.stat().st_size == 0
        self.csv_fh = csv_path.open("a", encoding="utf-8", newline="")
        self.csv = csv.writer(self.csv_fh)
        if new:
            self.csv.writerow(CSV_COLUMNS)
            self.csv_fh.flush()

    def write(self, rec: dict[str, Any]) -> None:
        self.jsonl.write(json.dumps(rec, sort_keys=True, default=str) + "\n")
        self.jsonl.flush()
        self.csv.writerow(_csv_row(rec))
        self.csv_fh.flush()

    def close(self) -> None:
        self.jsonl.close()
        self.csv_fh.close()


def _rewrite_csv(out_dir: Path, records: list[dict[str, Any]]) -> None:
    tmp = out_dir / (RESULTS_CSV + ".tmp")
    with tmp.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        for r in records:
            w.writerow(_csv_row(r))
    tmp.replace(out_dir / RESULTS_CSV)


def prepare_out_dir(out_dir: str | Path, grids: Sequence[Grid] = ()) -> Path:
    """Create ``out_dir`` or accept one this tool wrote; refuse anything else.

    Writes/updates the ``sweep.json`` manifest (the grids run into it).
    """
    out = Path(out_dir)
    manifest = out / MANIFEST
    if out.exists() and not out.is_dir():
        raise SweepError(f"output path {str(out)!r} is a file; give a directory")
    why = unwritable(out)
    if why is not None:
        raise SweepError(why)
    known: list[dict[str, Any]] = []
    if out.is_dir() and any(out.iterdir()):
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
            ok = data.get("tool") == _TOOL
        except (OSError, ValueError, AttributeError):
            ok = False
        if not ok:
            raise SweepError(
                f"refusing to write into {str(out)!r}: it is not empty and has no {MANIFEST} "
                "from a previous 'hwapprox sweep'; choose a new or empty directory"
            )
        known = list(data.get("grids", []))
    out.mkdir(parents=True, exist_ok=True)
    for g in grids:
        if g.to_dict() not in known:
            known.append(g.to_dict())
    tmp = out / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps({"tool": _TOOL, "grids": known}, indent=2) + "\n", encoding="utf-8")
    tmp.replace(manifest)
    return out


@dataclass
class SweepResult:
    """What a sweep did: all current records (last per key) and counts."""

    out_dir: Path
    records: list[dict[str, Any]]
    ran: int
    skipped_done: int
    skipped_invalid: list[tuple[dict[str, Any], str]]

    def ok(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("status") == "ok"]


def run_sweep(
    points: Sequence[SweepPoint],
    out_dir: str | Path,
    *,
    jobs: int = 1,
    dask: str | None = None,
    executor: cf.Executor | None = None,
    progress: bool = True,
    grids: Sequence[Grid] = (),
    skipped: Sequence[tuple[dict[str, Any], str]] = (),
    max_points: int | None = None,
) -> SweepResult:
    """Run the points not already in ``out_dir``, appending each as it finishes.

    ``executor`` overrides ``jobs``/``dask`` (any :class:`concurrent.futures.Executor`).
    ``max_points`` stops after that many new points (for partial runs).
    On ``KeyboardInterrupt`` pending points are cancelled and what finished is
    kept; run again to resume.
    """
    from tqdm.auto import tqdm

    out = prepare_out_dir(out_dir, grids)
    _drop_partial_line(out / RESULTS_JSONL)
    previous = load_records(out)
    done = latest_by_key(previous)
    csv_path = out / RESULTS_CSV
    if previous and (
        _csv_keys(csv_path) != [r["key"] for r in previous]
        or _csv_header(csv_path) != list(CSV_COLUMNS)
    ):
        # a kill between the two appends, or a sweep from an older version: JSONL is
        # the truth
        _rewrite_csv(out, previous)
    todo: list[SweepPoint] = []
    seen: set[str] = set()
    for p in points:
        k = p.key
        if k in seen:
            continue
        seen.add(k)
        if k in done and done[k].get("status") in ("ok", "invalid"):
            continue
        todo.append(p)
    skipped_done = len(seen) - len(todo)
    if max_points is not None:
        todo = todo[: max(0, max_points)]
    closer: Callable[[], None] = lambda: None  # noqa: E731
    if executor is None and todo:
        executor, closer = make_executor(jobs, dask)
    writer = _Writer(out)
    ran = 0
    bar = tqdm(total=len(todo), disable=not progress, desc="sweep", unit="pt")
    futures: set[cf.Future[Any]] = set()
    window = _window(executor)

    def finish(completed: Iterable[cf.Future[Any]]) -> None:
        nonlocal ran
        for fut in completed:
            futures.discard(fut)
            rec = fut.result()
            writer.write(rec)
            done[rec["key"]] = rec
            ran += 1
            bar.update(1)

    try:
        assert executor is not None or not todo
        # at most `window` points in flight: each is written as soon as it finishes, on
        # every executor (in-process: one at a time, so a kill loses only the current one)
        for p in todo:
            while len(futures) >= window:
                finished, _ = cf.wait(futures, return_when=cf.FIRST_COMPLETED)
                finish(finished)
            futures.add(executor.submit(run_point, p.config, p.inputs.to_dict(), p.family))  # type: ignore[union-attr]
            finish([f for f in list(futures) if f.done()])
        while futures:
            finished, _ = cf.wait(futures, return_when=cf.FIRST_COMPLETED)
            finish(finished)
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    finally:
        bar.close()
        writer.close()
        closer()
    return SweepResult(
        out_dir=out,
        records=list(done.values()),
        ran=ran,
        skipped_done=skipped_done,
        skipped_invalid=list(skipped),
    )


def _drop_partial_line(path: Path) -> None:
    """Cut a last line without its newline (a write killed half-way)."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    with path.open("r+b") as fh:
        fh.truncate(data.rfind(b"\n") + 1)


def _csv_header(path: Path) -> list[str]:
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as fh:
        return next(csv.reader(fh), [])


def _csv_keys(path: Path) -> list[str]:
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return [r[0] for r in rows[1:] if r]


# -- Pareto front -------------------------------------------------------------------
def pareto_front(items: Iterable[tuple[float, float, Any]]) -> list[tuple[float, float, Any]]:
    """Non-dominated ``(cost, error, payload)`` items, by ascending cost.

    An item is kept when no other has cost <= and error <= with one strictly
    smaller; of exact duplicates in (cost, error) the first is kept.
    """
    ordered = sorted(items, key=lambda t: (t[0], t[1]))
    front: list[tuple[float, float, Any]] = []
    best = math.inf
    for item in ordered:
        if item[1] < best:
            front.append(item)
            best = item[1]
    return front


def aggregate_by_spec(
    records: Iterable[dict[str, Any]], metric: str = "max_abs"
) -> list[dict[str, Any]]:
    """Worst ``metric`` over the input sets of each spec (ok records only).

    Returns one dict per spec: ``config``, ``operator``, ``method``,
    ``out_width``, ``cost_score``, ``LUT``/``DSP`` (the fitted estimate, when
    recorded), ``fmax_mhz`` (post-route on ECP5-85k, :func:`costmodel.fmax`),
    ``error`` (worst; for ``qsnr_db``/``top1`` the smallest) and ``inputs`` (how many
    sets).
    """
    lower_is_worse = metric in ("qsnr_db", "top1")
    by: dict[str, dict[str, Any]] = {}
    for r in records:
        if r.get("status") != "ok" or r.get(metric) is None:
            continue
        k = json.dumps(r["spec"], sort_keys=True, default=str)
        v = float(r[metric])
        cur = by.get(k)
        if cur is None:
            by[k] = {
                "config": r["spec"],
                "operator": r["operator"],
                "method": r["method"],
                "out_width": r.get("out_width"),
                "cost_score": float(r["cost_score"]),
                "LUT": r.get("LUT"),
                "DSP": r.get("DSP"),
                "fmax_mhz": r.get("fmax_mhz"),
                "error": v,
                "inputs": 1,
            }
        else:
            cur["error"] = min(cur["error"], v) if lower_is_worse else max(cur["error"], v)
            cur["inputs"] += 1
    return list(by.values())
