"""Sample inputs and calibration of site input ranges.

:func:`prepare_inputs` checks user inputs (``.npz`` or a dict) against the
model's graph inputs -- names, static dims, dtypes -- or generates seeded ones
when none are given (refusing dynamic dims, whose size only the user knows).
:func:`calibrate` runs the unmodified model once on onnxruntime, recording
each site's input and output; :class:`SiteStats` summarises the input and
:meth:`SiteStats.choose_format` picks ``ap_fixed<W, I>`` with
``I = floor(log2(max|x|)) + 2 + headroom`` -- the smallest ``I`` whose signed
range ``[-2^(I-1), 2^(I-1))`` holds ``max|x|`` (one sign bit), plus
``headroom`` extra integer bits for inputs larger than the calibration data.
Output formats are chosen the same way from the site outputs
(:func:`output_format`), and LayerNorm gamma/beta formats from the weights.

Softmax sites with an attention mask (:mod:`hwapprox.export.masks`) are
calibrated over their unmasked elements only; the count of masked elements and
of fully masked rows is recorded. A softmax input that still holds non-finite
values or values at or below :data:`~hwapprox.export.masks.MASK_LIMIT` after
masking is an error naming the node that produced them.

Further batches (``--inputs`` a directory or glob of ``.npz`` files) are folded
into running statistics one at a time; with a Dask scheduler address they run
on its workers instead (:func:`calibrate` ``dask=``): each worker keeps one trace
session of the model, folds the batches it is sent into statistics of its own,
and the partial statistics are merged in batch order, so the result equals the
serial one exactly (min/max, counts and histograms add; the moments merge by
the same update, :meth:`~hwapprox.export.stats.RunningStats.merge`).
"""

from __future__ import annotations

import functools
import math
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from onnx import ModelProto, TensorProto, helper

from hwapprox._cache import BoundedMemo
from hwapprox.approx import _kernels
from hwapprox.approx.base import ELEMENTWISE_ATTENTION, Operator
from hwapprox.export.emulate import (
    ModelSessions,
    background,
    emulation_threads,
    rows_view,
    site_mask_bits,
    thread_map,
    trace_model,
)
from hwapprox.export.errors import ExportError
from hwapprox.export.graph import GraphIndex
from hwapprox.export.masks import MASK_LIMIT
from hwapprox.export.patterns import Site
from hwapprox.export.stats import (
    PERCENTILES,
    RANGE_STATS,
    RunningStats,
    SiteStats,
    StatsBatch,
    parse_range,
)
from hwapprox.fixed import FixedFormat, Overflow, Rounding

__all__ = [
    "PERCENTILES",
    "RANGE_STATS",
    "SiteStats",
    "batch_files",
    "calibrate",
    "graph_inputs",
    "iter_batches",
    "parameter_format",
    "parse_range",
    "prepare_inputs",
    "row_extents",
    "unified_max_phi",
]


#: graph_inputs by the model (its id: the entry holds it), its inputs' encoding and its
#: initializer count (validate checks the feeds against them once per call)
_INPUTS: BoundedMemo[tuple[ModelProto, list[tuple[str, int, tuple[int | str | None, ...]]]]] = (
    BoundedMemo(64)
)


def graph_inputs(model: ModelProto) -> list[tuple[str, int, tuple[int | str | None, ...]]]:
    """``(name, elem_type, dims)`` of the real inputs (initializers excluded); memoised
    (:data:`_INPUTS`)."""
    g = model.graph
    key = (id(model), b"|".join(v.SerializeToString() for v in g.input), len(g.initializer))
    hit = _INPUTS.get(key, None)
    if hit is not None and hit[0] is model:
        return list(hit[1])
    out = _graph_inputs(model)
    _INPUTS.put(key, (model, list(out)))
    return out


def _graph_inputs(model: ModelProto) -> list[tuple[str, int, tuple[int | str | None, ...]]]:
    inits = {i.name for i in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        dims: list[int | str | None] = []
        for d in t.shape.dim:
            if d.HasField("dim_value"):
                dims.append(int(d.dim_value))
            else:
                dims.append(d.dim_param or None)
        out.append((vi.name, t.elem_type, tuple(dims)))
    return out


def _np_dtype(elem_type: int) -> np.dtype:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception:
        raise ExportError(
            f"unsupported input element type {TensorProto.DataType.Name(elem_type)}"
        ) from None


def _fmt_shape(dims: tuple[int | str | None, ...]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _index_bound(model: ModelProto, name: str) -> int | None:
    """Upper bound for integer inputs used as Gather indices (the table length)."""
    g = GraphIndex(model)
    bounds = []
    for node in g.consumers.get(name, []):
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] == name:
            shape = g.shape.get(node.input[0])
            axis = 0
            for a in node.attribute:
                if a.name == "axis":
                    axis = int(a.i)
            if shape is not None and isinstance(shape[axis], int):
                bounds.append(int(shape[axis]))
    return min(bounds) if bounds else None


def prepare_inputs(
    model: ModelProto,
    inputs: str | Path | Mapping[str, np.ndarray] | None = None,
    *,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Feeds for the model's inputs: checked user data, or seeded generated data.

    Generated: floats ``N(0, 1)``; integers used as ``Gather`` indices uniform
    over the table, other integers uniform in ``{0, 1}``; bools uniform.
    """
    specs = graph_inputs(model)
    if inputs is None:
        rng = np.random.default_rng(seed)
        feeds = {}
        for name, et, dims in specs:
            dyn = [d for d in dims if not isinstance(d, int)]
            if dyn:
                raise ExportError(
                    f"input {name!r} has dynamic dims {_fmt_shape(dims)}; sample inputs cannot be "
                    f"generated -- pass them as an .npz file (--inputs) with one array per input"
                )
            dt = _np_dtype(et)
            shape = tuple(int(d) for d in dims)  # type: ignore[arg-type]
            if dt.kind == "f":
                feeds[name] = rng.standard_normal(shape).astype(dt)
            elif dt.kind in "iu":
                hi = _index_bound(model, name) or 2
                feeds[name] = rng.integers(0, hi, shape).astype(dt)
            elif dt.kind == "b":
                feeds[name] = rng.integers(0, 2, shape).astype(bool)
            else:
                raise ExportError(f"cannot generate input {name!r} of dtype {dt}")
        return feeds
    if isinstance(inputs, str | Path):
        path = Path(inputs)
        if not path.is_file():
            raise ExportError(f"inputs file {str(path)!r} does not exist")
        try:
            with np.load(path, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        except Exception as exc:
            raise ExportError(
                f"inputs file {str(path)!r} is not a numpy .npz archive: {exc}"
            ) from None
        label = str(path)
    else:
        data = {k: np.asarray(v) for k, v in inputs.items()}
        label = "sample inputs"
    expected = [n for n, _, _ in specs]
    missing = [n for n in expected if n not in data]
    extra = sorted(set(data) - set(expected))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {missing}")
        if extra:
            parts.append(f"unknown {extra}")
        raise ExportError(
            f"{label}: input names do not match the model ({'; '.join(parts)}); "
            f"the model's inputs are {expected}"
        )
    feeds = {}
    for name, et, dims in specs:
        arr = data[name]
        ok = arr.ndim == len(dims) and all(
            not isinstance(d, int) or d == s for d, s in zip(dims, arr.shape, strict=False)
        )
        if not ok:
            raise ExportError(
                f"{label}: input {name!r} has shape {list(arr.shape)} but the model expects "
                f"{_fmt_shape(dims)}"
            )
        dt = _np_dtype(et)
        if arr.dtype.kind not in "fiub":
            raise ExportError(
                f"{label}: input {name!r} holds {arr.dtype} values (not numbers) but the model "
                f"expects {dt}; save numeric arrays (e.g. token ids as int64)"
            )
        if dt.kind in "iub" and arr.dtype.kind == "f":
            raise ExportError(
                f"{label}: input {name!r} holds floats ({arr.dtype}) but the model expects {dt}"
            )
        feeds[name] = arr.astype(dt, copy=False)
    return feeds


class LazyMap(Mapping[str, np.ndarray]):
    """A read-only mapping whose values are computed on first access, then kept."""

    def __init__(self, makers: Mapping[str, Callable[[], np.ndarray]]) -> None:
        self._makers = dict(makers)
        self._done: dict[str, np.ndarray] = {}

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._done:
            self._done[key] = self._makers[key]()
        return self._done[key]

    def __contains__(self, key: object) -> bool:
        return key in self._makers  # without computing the value (Mapping's would)

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)


def parameter_format(values: np.ndarray | None, width: int = 16) -> FixedFormat | None:
    """``ap_fixed<width, I>`` holding every value of a constant (LayerNorm gamma or
    beta) exactly in range: ``I = floor(log2(max|v|)) + 2`` (no headroom: the
    weights are known). None when there are no values."""
    if values is None:
        return None
    m = float(np.abs(np.asarray(values, dtype=np.float64)).max(initial=0.0))
    ib = 1 if m == 0 else math.floor(math.log2(m)) + 2
    if ib >= width:
        raise ExportError(
            f"a LayerNorm parameter reaches {m:.4g}, which needs {ib} integer bits in a "
            f"{width}-bit format; set gamma_fmt/beta_fmt in the config"
        )
    return FixedFormat(width, ib, True, Rounding.RND, Overflow.SAT)


@dataclass
class Trace:
    """Float values at the calibrated sites of one onnxruntime run of the
    unmodified model: inputs, outputs, mask bits and their statistics."""

    outputs: dict[str, np.ndarray]
    site_inputs: dict[str, np.ndarray]
    site_outputs: dict[str, np.ndarray]
    stats: dict[str, SiteStats]
    out_stats: dict[str, SiteStats] = field(default_factory=dict)
    masks: dict[str, np.ndarray] = field(default_factory=dict)
    mask_roles: dict[str, list[str]] = field(default_factory=dict)
    feeds: dict[str, np.ndarray] = field(default_factory=dict)
    #: softmax sites: (row max, row logsumexp) of the unmasked elements of each row with
    #: one (:func:`row_extents`), for the unified-max calibration (:func:`unified_max_phi`)
    row_extents: Mapping[str, np.ndarray] = field(default_factory=dict)
    #: ReLU attention sites divided by a run-time n (``params["n_tensor"]``): its value
    site_n: dict[str, float] = field(default_factory=dict)
    #: wall time of the float run (onnxruntime, site tensors kept as extra outputs)
    seconds: float = 0.0
    #: input batches the statistics were gathered over (the tensors above: the first)
    batches: int = 1

    def settle(self) -> None:
        """Wait for statistics still being computed (pending
        :class:`~hwapprox.export.stats.SiteStats`) and fill them in."""
        every = [*self.stats.values(), *self.out_stats.values()]
        for batch in {id(b): b for st in every if (b := _batch_of(st)) is not None}.values():
            batch.fill(every)


def _batch_of(st: SiteStats) -> StatsBatch | None:
    pend = st.__dict__.get("_batch")
    return None if pend is None else pend[0]  # type: ignore[no-any-return]


#: a small model's one batch: moments and percentiles on a worker thread (:func:`calibrate`;
#: tests compare both ways)
DEFER_STATS = True

#: rows kept per site for the unified-max calibration (a seeded subsample beyond it)
EXTENT_ROWS = 20_000


def row_extents(site: Site, x: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """``(R, 2)`` float64: each softmax row's max and logsumexp over its unmasked elements
    (rows along the site's axis; fully masked rows left out; at most :data:`EXTENT_ROWS`
    rows, a seeded subsample)."""
    xv, ax = rows_view(site, np.asarray(x, dtype=np.float64))
    rows = np.moveaxis(xv, ax, -1)
    n = rows.shape[-1]
    rows = rows.reshape(-1, n)
    if mask is not None:
        mv, _ = rows_view(site, np.broadcast_to(mask, np.shape(x)))
        mk = np.moveaxis(mv, ax, -1).reshape(-1, n)
        rows = np.where(mk, -np.inf, rows)
        rows = rows[~mk.all(axis=1)]
    if len(rows) > EXTENT_ROWS:
        pick = np.random.default_rng(0).choice(len(rows), EXTENT_ROWS, replace=False)
        rows = rows[np.sort(pick)]
    mx = rows.max(axis=1)
    lse = mx + np.log(np.exp(rows - mx[:, None]).sum(axis=1))
    return np.stack([mx, lse], axis=1)


def unified_max_phi(extents: np.ndarray, low_bits: int = 4) -> tuple[float, float]:
    """The static φ of a unified-max softmax (FlashDecoding++) from a site's row extents,
    and the fallback rate it predicts on them.

    A row keeps the φ path when its max ``<= φ`` and ``Σ exp(x - φ) >= 2^-low_bits``,
    i.e. ``lse >= φ - low_bits·ln 2`` (``OnlineSoftmax``'s safe range, in float). The
    candidates are the rows' maxima (up to 2000 quantiles); φ is the median of those with
    the lowest predicted fallback rate (the middle of the best interval).
    """
    e = np.asarray(extents, dtype=np.float64)
    if e.ndim != 2 or e.shape[1] != 2 or len(e) == 0:
        raise ExportError("unified_max_phi needs (R >= 1, 2) row extents (row max, lse)")
    mx, lse = e[:, 0], e[:, 1] + low_bits * math.log(2.0)
    cand = np.unique(np.quantile(mx, np.linspace(0.0, 1.0, min(2000, len(mx)))))
    fall = np.empty(len(cand))
    for i in range(0, len(cand), 256):
        c = cand[i : i + 256, None]
        fall[i : i + 256] = ((mx > c) | (lse < c)).mean(axis=1)
    best = cand[fall == fall.min()]
    return float(np.median(best)), float(fall.min())


def _check_masked_input(site: Site, x: np.ndarray, mask: np.ndarray | None, g: GraphIndex) -> None:
    """A softmax input must hold no -inf / mask-sized values outside its mask."""
    a = np.asarray(x)
    if _kernels.available() and a.dtype in (np.float32, np.float64):  # one compiled pass
        flat = np.ascontiguousarray(a).reshape(-1)
        if mask is None:
            m = np.zeros(1, bool)
        else:
            m = np.ascontiguousarray(np.broadcast_to(mask, a.shape)).reshape(-1)
        if not _kernels.count_mask_like(flat, m, mask is not None, MASK_LIMIT):
            return
    bad = ~np.isfinite(a) | (a <= MASK_LIMIT)
    if mask is not None:
        bad &= ~mask
    n = int(np.count_nonzero(bad))
    if not n:
        return
    prod = g.producer.get(site.input)
    where = f"node '{prod.name}' ({prod.op_type})" if prod is not None else f"'{site.input}'"
    found = (
        f"the importer found: {site.mask.describe()}"
        if site.mask is not None
        else "the importer found no mask (no Add/Where with a non-score operand in front of it)"
    )
    raise ExportError(
        f"site {site.name}: {n} input values are -inf or <= {MASK_LIMIT:g} (min "
        f"{float(np.min(a[bad])):.4g}) outside any recognised attention mask; they come from "
        f"{where}; {found}. Keep this site float (config 'sites: {{{site.name}: float}}' or "
        f"--sites), or export the mask as an Add of a large negative constant or a Where "
        f"in front of the Softmax"
    )


def calibrate(
    model: ModelProto,
    sites: list[Site],
    feeds: Mapping[str, np.ndarray],
    *,
    threads: int = 0,
    more: Iterable[Mapping[str, np.ndarray]] = (),
    sessions: ModelSessions | None = None,
    dask: str | None = None,
) -> Trace:
    """Run the float model once, recording each site's input, output and mask bits.

    Only ``sites`` are recorded and calibrated (sites kept float need none).
    ``more``: further batches (e.g. :func:`iter_batches`), run one at a time; their
    values are folded into the statistics (:class:`~hwapprox.export.stats.RunningStats`,
    so memory does not grow with their number) and dropped, while the trace keeps
    ``feeds``' tensors as the sample the per-site errors are measured on.
    ``sessions``: the model's kept index and trace sessions (:class:`ModelSessions`).
    ``dask``: a Dask scheduler address; ``more``'s batches are then read here one at
    a time, sent to its workers and folded there (at most two per worker in flight),
    and the partial statistics merged in batch order: the same statistics as the
    serial run (module docstring).
    """
    if sessions is not None and sessions.model is not model:
        raise ExportError("calibrate: the sessions given were built for another model")
    g = GraphIndex(model) if sessions is None else sessions.index
    mask_tensors = [
        t
        for s in sites
        if s.mask is not None
        for t in s.mask.tensors()
        if g.const(t) is None and t not in feeds
    ]
    n_tensors = [s.params["n_tensor"] for s in sites if s.params.get("n_tensor")]
    tensors = list(
        dict.fromkeys([t for s in sites for t in (s.input, s.output)] + mask_tensors + n_tensors)
    )
    if sessions is None:
        sess = trace_model(model, tensors, threads=threads, index=g)
    else:
        sess = sessions.trace(tensors, threads)
    t0 = time.perf_counter()
    values = _run_trace(sess, feeds)
    seconds = time.perf_counter() - t0
    outs = {o.name: values[o.name] for o in model.graph.output}
    masks: dict[str, np.ndarray] = {}
    mask_roles: dict[str, list[str]] = {}
    extents: dict[str, Callable[[], np.ndarray]] = {}
    acc = _StatsAcc(sites)
    # sites are folded on worker threads (their statistics are independent; the
    # compiled histogram pass releases the GIL; a small model's on this thread, by
    # emulation_threads' rule), masks and errors in site order
    fold_threads = emulation_threads(threads, [np.size(values[s.input]) for s in sites])
    # A small model's one batch: its tensors' counts and extremes here (all the formats
    # need), their moments and percentiles in one compiled call on a worker thread
    # while the caller goes on (pending SiteStats; on 2 CPUs the embedded example's
    # statistics cost its validate ~1 ms on this thread, ~0.2 ms so)
    later = (
        fold_threads == 1
        and dask is None
        and isinstance(more, Sequence)
        and not more
        and _kernels.available()
        and DEFER_STATS
    )
    folded = thread_map(lambda s: acc.fold(s, values, g, later=later), sites, fold_threads)
    if acc.later:
        acc.start_later(background)
    for s, mask in zip(sites, folded, strict=True):
        x = values[s.input]
        if mask is not None and (
            s.operator is Operator.SOFTMAX or s.operator in ELEMENTWISE_ATTENTION
        ):  # (attention normalisers: masked scores left out of the errors and saturation)
            masks[s.name] = mask
            assert s.mask is not None
            mvals = {t: values[t] if t in values else g.const(t) for t in s.mask.tensors()}
            mask_roles[s.name] = s.mask.observed_roles(mvals, np.shape(x))
        if s.operator is Operator.SOFTMAX:
            extents[s.name] = functools.partial(row_extents, s, x, mask)  # only unified max
    batches = 1
    if dask is None:
        for batch in more:
            vals = _run_trace(sess, batch)
            thread_map(lambda s, v=vals: acc.fold(s, v, g), sites, fold_threads)
            batches += 1
            del vals
    else:
        batches += _fold_on_dask(dask, model, sites, tensors, threads, more, acc)
    stats = {s.name: acc.site_stats(s.name) for s in sites}
    out_stats = {s.name: acc.site_stats(s.name, out=True) for s in sites}
    return Trace(
        outputs=outs,
        site_inputs={s.name: values[s.input] for s in sites},
        site_outputs={s.name: values[s.output] for s in sites},
        stats=stats,
        out_stats=out_stats,
        masks=masks,
        mask_roles=mask_roles,
        feeds=dict(feeds),
        row_extents=LazyMap(extents),
        seconds=seconds,
        batches=batches,
        site_n={
            s.name: float(np.asarray(values[s.params["n_tensor"]]).reshape(-1)[0])
            for s in sites
            if s.params.get("n_tensor")
        },
    )


def _run_trace(sess: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    names = [o.name for o in sess.get_outputs()]
    try:
        values = dict(zip(names, sess.run(names, dict(feeds)), strict=True))
    except Exception as exc:
        msg = str(exc)
        hint = ""
        if "out of data bounds" in msg and "Gather" in msg:
            hint = (
                " -- an index input (token ids?) is beyond its table: check that the inputs "
                "were made with this model's tokenizer/vocabulary"
            )
        raise ExportError(f"onnxruntime failed on the sample inputs: {msg}{hint}") from None
    values.update({k: np.asarray(v) for k, v in feeds.items() if k not in values})
    return values


#: per worker process: (calibration id) -> (graph index, trace session)
_WORKER_SESSIONS: dict[str, tuple[GraphIndex, Any]] = {}


def _fold_task(
    key: str,
    model_bytes: bytes,
    sites: list[Site],
    tensors: list[str],
    threads: int,
    feeds: Mapping[str, np.ndarray],
) -> _StatsAcc:
    """On a Dask worker: one batch's statistics (the model's trace session is built once
    per worker and calibration, keyed by ``key``)."""
    if key not in _WORKER_SESSIONS:
        _WORKER_SESSIONS.clear()  # one calibration's session at a time
        m = ModelProto()
        m.ParseFromString(model_bytes)
        g = GraphIndex(m)
        _WORKER_SESSIONS[key] = (g, trace_model(m, tensors, threads=threads, index=g))
    g, sess = _WORKER_SESSIONS[key]
    vals = _run_trace(sess, feeds)
    part = _StatsAcc()
    for s in sites:
        part.fold(s, vals, g)
    return part


def _fold_on_dask(
    address: str,
    model: ModelProto,
    sites: list[Site],
    tensors: list[str],
    threads: int,
    more: Iterable[Mapping[str, np.ndarray]],
    acc: _StatsAcc,
) -> int:
    """Fold ``more``'s batches into ``acc`` on the Dask workers at ``address``, merged in
    batch order; returns how many batches were folded."""
    from hwapprox.approx.sweep import SweepError, dask_client

    try:
        client = dask_client(address)
    except SweepError as exc:
        raise ExportError(str(exc)) from None
    try:
        key = uuid.uuid4().hex
        model_ref = client.scatter(model.SerializeToString(), broadcast=True, hash=False)
        n_workers = max(1, len(client.scheduler_info().get("workers", {})))
        pending: list[Any] = []
        n = 0
        for batch in more:
            pending.append(
                client.submit(
                    _fold_task, key, model_ref, sites, tensors, threads, dict(batch), pure=False
                )
            )
            n += 1
            if len(pending) >= 2 * n_workers:
                acc.merge(pending.pop(0).result())
        for fut in pending:
            acc.merge(fut.result())
        return n
    finally:
        client.close()


class _StatsAcc:
    """Per-site running statistics of inputs and outputs over batches."""

    def __init__(self, sites: Sequence[Site] = ()) -> None:
        # one entry per site up front, in site order (folds may run on threads)
        self.ins: dict[str, RunningStats] = {s.name: RunningStats() for s in sites}
        self.outs: dict[str, RunningStats] = {s.name: RunningStats() for s in sites}
        self.rows: dict[str, list[int]] = {}
        #: (site, output?) -> (unmasked values, masked count) of the tensors whose
        #: moments and percentiles come from :attr:`batch` (:meth:`fold` ``later``), their
        #: extremes and index there
        self.later: dict[tuple[str, bool], tuple[np.ndarray, int]] = {}
        self.extremes: dict[tuple[str, bool], tuple[float, float]] = {}
        self.later_index: dict[tuple[str, bool], int] = {}
        self.batch: StatsBatch | None = None
        #: softmax sites whose input check waits for its extremes (:meth:`start_later`)
        self.checks: list[tuple[Site, np.ndarray, np.ndarray | None, GraphIndex]] = []

    def fold(
        self, s: Site, values: Mapping[str, np.ndarray], g: GraphIndex, *, later: bool = False
    ) -> np.ndarray | None:
        """Fold one batch's site tensors in; return the site's mask bits (or None).

        ``later`` (the only batch): a float32 tensor's unmasked values are recorded for
        :meth:`start_later` (its counts, extremes, moments and percentiles; a softmax
        input's mask check waits for them)."""
        x = values[s.input]
        mask = site_mask_bits(s, values, g, np.shape(x))
        for out, acc, t in ((False, self.ins, x), (True, self.outs, values[s.output])):
            if later and self._defer(s.name, out, t, mask):
                continue
            if s.name not in acc:
                acc[s.name] = RunningStats()
            acc[s.name].add(t, mask)
        if s.operator is Operator.SOFTMAX:
            if (s.name, False) in self.later:  # (checked once its extremes are known)
                self.checks.append((s, x, mask, g))
            else:
                self._check_softmax(s, x, mask, g)
            if mask is not None:
                mrows, ax = rows_view(s, mask)
                full = mrows.all(axis=ax)
                counts = self.rows.setdefault(s.name, [0, 0])
                counts[0] += int(np.count_nonzero(full))
                counts[1] += int(full.size)
        return mask

    def _check_softmax(
        self, s: Site, x: np.ndarray, mask: np.ndarray | None, g: GraphIndex
    ) -> None:
        """:func:`_check_masked_input` where the site's unmasked inputs so far (this
        batch's included) hold a non-finite or mask-sized value (else there is none)."""
        ext = self.extremes.get((s.name, False))
        if ext is not None:  # (deferred: finite)
            suspect = ext[0] <= MASK_LIMIT
        else:
            st = self.ins[s.name]
            suspect = bool(st.nonfinite) or st.min <= MASK_LIMIT
        if suspect:
            _check_masked_input(s, x, mask, g)

    def _defer(self, name: str, out: bool, t: np.ndarray, mask: np.ndarray | None) -> bool:
        """Record a float32 tensor's unmasked values for :meth:`start_later`; False
        (nothing recorded) if it is not float32 or has no unmasked value (:meth:`fold`
        then folds it now)."""
        if t.dtype != np.float32:
            return False
        if mask is None:
            a = np.ascontiguousarray(t).reshape(-1)
        else:  # (RunningStats.add's selection: a contiguous copy)
            a = t[~np.broadcast_to(np.asarray(mask, dtype=bool), t.shape)]
        if not a.size:
            return False
        self.later[name, out] = (a, int(t.size - a.size))
        return True

    def start_later(self, submit: Callable[[Callable[[], Any]], Any]) -> None:
        """Start the recorded tensors' moments and percentiles (:class:`StatsBatch`, by
        ``submit``), then take their extremes here (a compiled call without the GIL,
        during which the worker begins). A tensor with a NaN/inf value is folded now
        instead (:class:`RunningStats`: its counts and errors); the softmax inputs'
        mask checks follow, in site order."""
        # last site first: the first sites' tensors, which the per-site reports read
        # first, are then the ones still in the worker's cache (measured ~1 % faster)
        keys = list(reversed(self.later))
        self.batch = StatsBatch([self.later[k][0] for k in keys], submit)
        bad, lo, hi = self.batch.extremes()
        for i, key in enumerate(keys):
            a, masked = self.later[key]
            if bad[i]:
                rs = (self.outs if key[1] else self.ins)[key[0]]
                rs.masked += masked
                rs.add(a)
                del self.later[key]
            else:
                self.extremes[key] = (lo[i], hi[i])
                self.later_index[key] = i
        for s, x, mask, g in self.checks:
            self._check_softmax(s, x, mask, g)
        self.checks = []

    def merge(self, other: _StatsAcc) -> None:
        """Fold in another accumulator's statistics (batches folded elsewhere)."""
        for mine, theirs in ((self.ins, other.ins), (self.outs, other.outs)):
            for name, rs in theirs.items():
                if name in mine:
                    mine[name].merge(rs)
                else:
                    mine[name] = RunningStats().merge(rs)
        for name, (full, rows) in other.rows.items():
            counts = self.rows.setdefault(name, [0, 0])
            counts[0] += full
            counts[1] += rows

    def site_stats(self, name: str, *, out: bool = False) -> SiteStats:
        masked_rows, rows = self.rows.get(name, [0, 0]) if not out else (0, 0)
        deferred = self.later.get((name, out))
        if deferred is not None:
            (a, masked), (lo, hi) = deferred, self.extremes[name, out]
            assert self.batch is not None
            return SiteStats.pending(
                name, int(a.size), lo, hi, self.batch, self.later_index[name, out],
                masked=masked, masked_rows=masked_rows, rows=rows,
            )  # fmt: skip
        if out:
            return SiteStats.from_running(name, self.outs[name])
        return SiteStats.from_running(name, self.ins[name], masked_rows=masked_rows, rows=rows)


def batch_files(inputs: str | Path | Mapping[str, np.ndarray] | None) -> list[Path] | None:
    """The ``.npz`` batch files ``inputs`` names when it is a directory (its ``*.npz``,
    sorted) or a glob pattern (``data/batch_*.npz``); None for one file, a mapping or None."""
    if inputs is None or isinstance(inputs, Mapping):
        return None
    text = str(inputs)
    p = Path(text)
    if p.is_dir():
        files = sorted(p.glob("*.npz"))
        if not files:
            raise ExportError(f"inputs directory {text!r} holds no .npz batch files")
        return files
    if any(c in text for c in "*?["):
        import glob

        files = sorted(Path(f) for f in glob.glob(text) if f.endswith(".npz"))
        if not files:
            raise ExportError(f"inputs pattern {text!r} matches no .npz files")
        return files
    return None


def iter_batches(model: ModelProto, files: Sequence[Path]) -> Iterator[dict[str, np.ndarray]]:
    """Checked feeds of each batch file in turn (:func:`prepare_inputs`), one at a time."""
    for f in files:
        yield prepare_inputs(model, f)
