"""Run an ONNX model with chosen sites replaced by bit-accurate approximations.

Design: the graph is cut at the selected sites. Every other node gets a
*level* -- the number of selected sites on its longest path from the inputs --
and the nodes of one level form one onnxruntime session (in graph order).
Running level ``k``'s session, then every site whose input has level ``k``,
then level ``k + 1``, ... evaluates the whole model: float everywhere except
at the sites, with one session run per level instead of one per node.

At a site with a spec, the float input ``x`` (what the previous session
produced) is quantised with ``spec.quantize_input``, passed through
``spec.model`` and converted back with ``spec.out_fmt.to_float``, then cast
to the tensor's ONNX element type (float32 usually) for the next session.
A site whose spec is ``None`` runs its own original nodes in a small
onnxruntime session, so it is exactly the float model.

Memory: a run keeps a tensor only until the last segment or site that reads it has
run (the graph's outputs stay), in :meth:`Emulator.run`, :meth:`~Emulator.prefix` and
:meth:`~Emulator.advance` alike, so a run and a prefix state hold the live tensors, not
every one the model made.

Threads: a large site tensor is cut along its first axis (never the site's row axis)
into one block per worker thread (``threads``; 0: the CPU count, at most
:data:`MAX_SITE_THREADS`), each block approximated on its own thread (the compiled
kernels and numpy's large operations release the GIL) and the blocks joined again:
rows and elements are independent, so the values are the one-block run's
(``tests/test_model_fastpath.py`` compares the two).

Bound passes: on one thread, a site whose spec has a compiled float32 pass
(:func:`site_runner`) is bound once per spec and input shape, so later runs call
its kernel with the arguments resolved instead of :func:`apply_spec`'s checks and
lookups (the same reals; ``tests/test_site_runner.py``).
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
from onnx import ModelProto, NodeProto, TensorProto, helper, numpy_helper

from hwapprox._cache import BoundedMemo
from hwapprox.approx.attention import AttentionRowSpec
from hwapprox.approx.base import ELEMENTWISE_ATTENTION, ApproxSpec, ElementwiseSpec, Operator
from hwapprox.export.errors import ExportError
from hwapprox.export.graph import GraphIndex, weight_stub, with_initializers
from hwapprox.export.patterns import Site

__all__ = [
    "Emulator", "PrefixChain", "apply_fused", "apply_spec", "apply_spec_blocks",
    "apply_spec_pair", "make_session", "model_rows", "rows_view", "site_mask_bits",
    "site_row_params", "site_runner", "site_threads", "softmax_f32_rows",
    "thread_map", "thread_start",
]  # fmt: skip


#: worker threads for the site approximations and per-site metrics at most (threads=0)
MAX_SITE_THREADS = 4
#: a site tensor is cut into blocks for threads only from this many elements on
MIN_SPLIT_ELEMENTS = 1 << 16
#: ... and only for at least this many worker threads: on 2 CPUs the cut measured
#: 3-9 % slower than one block (6 x 384 encoder and ViT-S shape, emulation alone and
#: inside validate; the site models stream large arrays and allocate several per
#: block, and the blocks are joined by a copy; benchmarks/results/speed.md)
MIN_SPLIT_THREADS = 3
#: an emulator runs its sites through their bound passes (:func:`site_runner`, once per
#: spec and shape) where they have one; False: :func:`apply_spec` every time (the same
#: values: ``tests/test_site_runner.py`` compares the two)
_BOUND = True
_POOL_PREFIX = "hwapprox-sites"
_pools: dict[tuple[str, int], ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _forget_pools_after_fork() -> None:
    """In a forked child the parent's pool threads do not exist: start afresh (a pool
    inherited with them would take work and never run it)."""
    global _pools_lock
    _pools.clear()
    _pools_lock = threading.Lock()
    _last_background[0] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=lambda: _drain_background(), after_in_child=_forget_pools_after_fork)


_CPUS = os.cpu_count() or 1


def site_threads(threads: int = 0) -> int:
    """Worker threads for site work: ``threads`` (the onnxruntime setting; 0 = the CPU
    count, at most :data:`MAX_SITE_THREADS`); 1 inside a worker (no nesting)."""
    if threading.current_thread().name.startswith(_POOL_PREFIX):
        return 1
    n = threads if threads > 0 else min(_CPUS, MAX_SITE_THREADS)
    return max(1, n)


def emulation_threads(threads: int, site_sizes: Iterable[int]) -> int:
    """The thread setting of a model's site work (calibration's folds, validate's
    per-site reports) and of its emulator's sessions: ``threads`` if set; else 1 when
    every site tensor is below :data:`MIN_SPLIT_ELEMENTS`, else 0 (onnxruntime's
    default; :func:`site_threads` workers). A small model's sites are not split for
    threads, onnxruntime's thread pool costs more than it saves on its small operators
    (the embedded example's 10 sessions: 2.0 ms with the default pool, 1.4 ms on one
    thread), and handing its sites to worker threads costs more than their work (the
    embedded example's whole validate: 12.0 ms with workers, 9.3 ms without).
    Results do not depend on it."""
    if threads:
        return threads
    return 1 if max(site_sizes, default=0) < MIN_SPLIT_ELEMENTS else 0


def thread_map(
    fn: Callable[[Any], Any], items: Iterable[Any], threads: int = 0, lane: str = "sites"
) -> list[Any]:
    """``[fn(i) for i in items]`` on :func:`site_threads` worker threads (results and the
    first error in ``items``' order). Work that runs at the same time as other
    ``thread_map`` work goes in a ``lane`` of its own: each lane has its own workers, so
    one caller's tasks never queue behind another's (validate's per-site reports beside
    the emulation's site blocks)."""
    return thread_start(fn, items, threads, lane)()


def lane_pool(lane: str, n: int) -> ThreadPoolExecutor:
    """The ``n`` worker threads of ``lane`` (made on first use, kept for the process;
    a forked child makes its own)."""
    with _pools_lock:
        pool = _pools.get((lane, n))
        if pool is None:
            pool = _pools[lane, n] = ThreadPoolExecutor(
                n, thread_name_prefix=f"{_POOL_PREFIX}-{lane}"
            )
    return pool


def background(fn: Callable[..., Any], *args: Any) -> Future[Any]:
    """``fn(*args)`` on the background lane's one worker thread (first in, first out):
    a small model's work beside the calling thread (calibration's statistics, then
    validate's per-site reports). Run here, already done, when called on that worker.

    The woken worker needs the GIL to begin, which a caller running Python holds until
    its next blocking call or compiled call without the GIL: a caller that wants the
    work to begin at once makes such a call next (calibration: its extremes kernel;
    else the embedded example's statistics began 0.9 ms late)."""
    if threading.current_thread().name.startswith(f"{_POOL_PREFIX}-background"):
        f: Future[Any] = Future()
        try:
            f.set_result(fn(*args))
        except BaseException as exc:  # (given to the caller by result())
            f.set_exception(exc)
        return f
    fut = lane_pool("background", 1).submit(fn, *args)
    _last_background[0] = fut
    return fut


#: the background lane's last job (its jobs run in order: when it is done, all are)
_last_background: list[Future[Any] | None] = [None]


def _drain_background() -> None:
    """Before a fork: wait for the background lane's jobs, whose results a child would
    otherwise wait for forever (its copy of the lane has no thread)."""
    fut = _last_background[0]
    if fut is None or threading.current_thread().name.startswith(f"{_POOL_PREFIX}-background"):
        return
    wait_all([fut])  # (its error, if any, is its caller's)


def thread_start(
    fn: Callable[[Any], Any], items: Iterable[Any], threads: int = 0, lane: str = "sites"
) -> Callable[[], list[Any]]:
    """:func:`thread_map` started now: returns the function that waits for its results
    (in ``items``' order; the first error is raised there). With one thread (or one
    item) ``fn`` runs here, before this returns (and an error is raised here)."""
    items = list(items)
    n = min(site_threads(threads), len(items))
    if n <= 1:
        done = [fn(i) for i in items]
        return lambda: done
    pool = lane_pool(lane, n)
    futs = [pool.submit(fn, i) for i in items]

    def wait() -> list[Any]:
        try:
            return [f.result() for f in futs]
        finally:
            for f in futs:  # after an error, what has not started is dropped
                f.cancel()

    return wait


#: initializers of at least this many bytes reach the sessions from memory, not the proto
SHARED_MIN_BYTES = 4096


def shared_weights(
    inits: Iterable[TensorProto], index: GraphIndex
) -> tuple[list[TensorProto], dict[str, np.ndarray]]:
    """``inits`` for a session's proto: each large numeric initializer (at least
    :data:`SHARED_MIN_BYTES`, its value in ``index``) as a :func:`weight_stub`, the rest
    as they are; and the stubs' values by name, for :func:`make_session`'s ``shared``.
    Many sessions of one model then read the same arrays, and neither their protos
    nor onnxruntime's parse of them carry the weights."""
    out: list[TensorProto] = []
    shared: dict[str, np.ndarray] = {}
    for t in inits:
        v = index.const(t.name) if t.data_location != TensorProto.EXTERNAL else None
        if (
            v is not None
            and v.nbytes >= SHARED_MIN_BYTES
            and v.dtype.kind in "fiub"
            and v.flags.c_contiguous
            and tuple(v.shape) == tuple(t.dims)
        ):
            out.append(weight_stub(t))
            shared[t.name] = v
        else:
            out.append(t)
    return out, shared


def make_session(
    model: ModelProto,
    threads: int = 0,
    spin: bool = False,
    shared: Mapping[str, np.ndarray] | None = None,
) -> ort.InferenceSession:
    """A CPU onnxruntime session (``threads=0``: onnxruntime's default). ``spin``: its
    workers may spin between operators (onnxruntime's default; for a session that runs
    alone, as the calibration trace does). ``shared``: the values of the model's
    :func:`weight_stub` initializers (given to onnxruntime from memory, not copied; the
    session keeps them alive)."""
    opts = ort.SessionOptions()
    opts.log_severity_level = 4  # fatal only: errors reach the user as ExportError
    if not spin:
        # Many sessions run one after another: idle workers must not spin and
        # steal the cores from the next session.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    else:  # spinning between its operators, not after its run (the cores are others' then)
        opts.add_session_config_entry("session.force_spinning_stop", "1")
    if threads:
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
    values = [ort.OrtValue.ortvalue_from_numpy(v) for v in (shared or {}).values()]
    if values:
        opts.add_external_initializers(list(shared or {}), values)
    try:
        sess = ort.InferenceSession(
            model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:
        raise ExportError(f"onnxruntime cannot load the model: {exc}") from None
    sess._hwapprox_shared = values  # type: ignore[attr-defined]  # (onnxruntime reads them)
    return sess


def rows_view(site: Site, x: np.ndarray) -> tuple[np.ndarray, int]:
    """``x`` arranged so the site's rows lie along the returned axis.

    ``trailing`` sites (LayerNorm, opset < 13 Softmax) are reshaped to
    ``(prod(shape[:axis]), prod(shape[axis:]))`` with axis -1; single-axis
    sites keep their shape and axis.
    """
    if site.axis is None:
        return x, -1
    ax = site.axis + x.ndim if site.axis < 0 else site.axis
    if not 0 <= ax < max(x.ndim, 1):
        raise ExportError(
            f"site {site.name}: axis {site.axis} is out of range for input shape {x.shape}"
        )
    if site.trailing:
        lead = math.prod(x.shape[:ax])
        return x.reshape(lead, -1), -1
    return x, ax


#: quantised LayerNorm gamma/beta by (values, row length, format): every run of a site
#: quantises the same constants (bounded: cleared when full)
_ROW_PARAMS: BoundedMemo[np.ndarray] = BoundedMemo(512)


def _row_param(v: np.ndarray | None, n: int, fmt: Any, what: str, site: Site) -> Any:
    """``fmt.quantize`` of a row parameter broadcast to rows of ``n`` (read-only; the
    same constants and format give the cached codes)."""
    if v is None:
        return None
    a = np.asarray(v)
    key = (a.tobytes(), a.dtype.str, a.shape, n, fmt)
    hit = _ROW_PARAMS.get(key, None)
    if hit is not None:
        return hit
    try:
        flat = np.broadcast_to(np.asarray(a, dtype=np.float64).reshape(-1), (n,))
    except ValueError:
        raise ExportError(
            f"site {site.name}: {what} of shape {np.shape(v)} does not match rows of {n}"
        ) from None
    q = np.asarray(fmt.quantize(flat))
    q.flags.writeable = False
    return _ROW_PARAMS.put(key, q)


def site_row_params(site: Site, spec: ApproxSpec, n: int) -> tuple[Any, Any]:
    """A LayerNorm site's gamma and beta as ``spec``'s codes for rows of ``n`` (None where
    the site has none; memoised, read-only)."""
    return (
        _row_param(site.gamma, n, getattr(spec, "gamma_fmt", None), "gamma", site),
        _row_param(site.beta, n, getattr(spec, "beta_fmt", None), "beta", site),
    )


def site_mask_bits(
    site: Site, values: Mapping[str, np.ndarray], index: GraphIndex, shape: tuple[int, ...]
) -> np.ndarray | None:
    """The site's attention-mask bits (True = masked) over its input ``shape``, from
    the float tensors in ``values`` (constants from ``index``), or None without a mask."""
    if site.mask is None:
        return None
    vals: dict[str, np.ndarray] = {}
    for t in site.mask.tensors():
        v = values.get(t)
        if v is None:
            v = index.const(t)
        if v is None:
            raise ExportError(f"site {site.name}: mask tensor {t!r} was not computed")
        vals[t] = v
    return site.mask.bits(vals, shape)


def apply_spec(
    site: Site,
    spec: ApproxSpec,
    x: np.ndarray,
    mask: np.ndarray | None = None,
    n_value: Any = None,
    dtype: npt.DTypeLike = np.float64,
    ideal: bool = False,
) -> np.ndarray:
    """The approximation of ``site`` on float input ``x`` (``dtype`` out: float64, or
    float32 rounded from it as ``astype`` does; same shape).

    ``ideal``: instead of the model, the float64 function the spec approximates
    (``spec.reference``) of the *quantised* input, with float gamma/beta: what an
    exact unit with this ``in_fmt`` would give (the input quantisation's share of the
    site error; :func:`~hwapprox.export.validate.site_metrics`).

    ``in_fmt.quantize -> spec.model -> out_fmt.to_float``; LayerNorm gamma/beta
    are quantised to ``spec.gamma_fmt``/``spec.beta_fmt``. ``mask`` (softmax
    sites; True = masked, broadcast to ``x``) gives masked elements exactly zero
    probability, as the hardware's mask bits do; a masked score of a sigmoid or
    ReLU attention site enters as the in_fmt minimum (what the -inf/float32-min
    mask saturates to). ``n_value``: a ReLU attention site's run-time n (the
    spec's ``seq_len`` is set to it for this call). A softmax spec whose ``row_max``
    is below the site's row length is built for that length (``row_max`` raised; the
    formats it derives follow).
    """
    if not ideal and site.operator is Operator.SOFTMAX:
        rows = softmax_f32_rows(site, spec, x, mask)
        if rows is not None:  # float32 rows to reals in one compiled pass
            y = rows[0].rows_f32(rows[1], rows[2], dtype)
            if y is not None:
                return y.reshape(np.shape(x))
    spec, xv, axis, mask = _site_rows(site, spec, x, mask, n_value)
    if ideal:
        return _ideal(site, spec, xv, axis, mask).astype(dtype).reshape(np.shape(x))
    if site.operator is Operator.GELU or site.operator in ELEMENTWISE_ATTENTION:
        return spec.evaluate(xv, dtype).reshape(np.shape(x))
    fused = getattr(spec, "rows_f32", None)  # float32 rows to reals in one compiled pass
    rows_ln = site.operator is not Operator.SOFTMAX  # (a softmax site's pass is above)
    if rows_ln and fused is not None and xv.ndim == 2 and axis in (-1, 1):
        y = fused(xv, *site_row_params(site, spec, xv.shape[1]), dtype)
        if y is not None:
            return y.reshape(np.shape(x))
    return _model_of_raw(site, spec, spec.quantize_input(xv), axis, mask, dtype).reshape(
        np.shape(x)
    )


def apply_spec_pair(
    site: Site,
    spec: ApproxSpec,
    x: np.ndarray,
    mask: np.ndarray | None = None,
    n_value: Any = None,
    dtype: npt.DTypeLike = np.float64,
) -> tuple[np.ndarray, np.ndarray]:
    """``(apply_spec(..., dtype), apply_spec(..., ideal=True))``, the row operators'
    input quantised once for both (the same values)."""
    if site.operator is Operator.GELU or site.operator in ELEMENTWISE_ATTENTION:
        return (
            apply_spec(site, spec, x, mask, n_value, dtype),
            apply_spec(site, spec, x, mask, n_value, ideal=True),
        )
    spec, raw, y, axis, mask = model_rows(site, spec, x, mask, n_value, dtype)
    shape = np.shape(x)
    # (a row operator's ideal reads the codes; the rows view gives only the row length)
    yi = np.asarray(_ideal(site, spec, raw, axis, mask, raw), dtype=np.float64).reshape(shape)
    return y.reshape(shape), yi


def model_rows(
    site: Site,
    spec: ApproxSpec,
    x: np.ndarray,
    mask: np.ndarray | None = None,
    n_value: Any = None,
    dtype: npt.DTypeLike = np.float64,
) -> tuple[ApproxSpec, np.ndarray, np.ndarray, int, np.ndarray | None]:
    """A row operator's model of ``x`` in the rows view (:func:`rows_view`), the input
    quantised once: ``(the spec used (row_max or n adjusted as in apply_spec), the input
    codes, the model's reals of dtype, the row axis, the mask broadcast to x)``."""
    spec, xv, axis, mask = _site_rows(site, spec, x, mask, n_value)
    raw = spec.quantize_input(xv)
    return spec, raw, _model_of_raw(site, spec, raw, axis, mask, dtype), axis, mask


def _site_rows(
    site: Site, spec: ApproxSpec, x: np.ndarray, mask: np.ndarray | None, n_value: Any
) -> tuple[ApproxSpec, np.ndarray, int, np.ndarray | None]:
    """:func:`apply_spec`'s checks and input preparation: ``(spec, the rows view of x as
    a float array with masked values replaced, the row axis, the mask)``."""
    if spec.operator is not site.operator:
        raise ExportError(
            f"site {site.name} is a {site.operator} but the spec is for {spec.operator} "
            f"({spec.describe()})"
        )
    xa = np.asarray(x)
    if xa.dtype not in (np.float32, np.float64):  # float32 stays: quantize widens it exactly
        xa = xa.astype(np.float64)
    if mask is not None and site.operator is Operator.SOFTMAX:
        mask = np.broadcast_to(mask, xa.shape)
        xa = np.where(mask, 0.0, xa)  # masked scores (-inf, float32 min) never reach a format
    elif mask is not None and site.operator in ELEMENTWISE_ATTENTION:
        xa = np.where(np.broadcast_to(mask, xa.shape), float(spec.in_fmt.min), xa)
    if n_value is not None and site.operator is Operator.RELU_ATTENTION:
        n = float(np.asarray(n_value).reshape(-1)[0])
        if n != round(n) or n < 1:
            raise ExportError(f"site {site.name}: run-time n = {n:g} is not a sequence length")
        if int(n) != getattr(spec, "seq_len", None):
            spec = spec.replace(seq_len=int(n))
    xv, axis = rows_view(site, xa)
    return spec, xv, axis, mask


def softmax_f32_rows(
    site: Site, spec: ApproxSpec, x: np.ndarray, mask: np.ndarray | None
) -> tuple[Any, np.ndarray, np.ndarray | None] | None:
    """A softmax site's input for a spec's float32-row pass (``OnlineSoftmax.rows_f32``,
    ``f32_plan``): ``(the spec the codes path uses, the rows (R, N), their mask (R, N) or
    None)``, or None where that pass cannot stand in for :func:`apply_spec`'s codes path
    (which then raises the errors of its checks): a spec of another operator or without
    that pass, scores not float32, rows not along the last axis (:func:`rows_view`), a
    mask not bool or not broadcastable. The spec is the one :func:`_model_of_raw` uses
    (``row_max`` raised to the row length), the rows C-contiguous, the mask as the model
    takes it (rows view, None without a True). Masked scores stay as they are (the codes
    path zeroes them, -inf included): the pass reads them as 0."""
    if (
        site.operator is not Operator.SOFTMAX
        or spec.operator is not site.operator
        or getattr(spec, "rows_f32", None) is None
    ):
        return None
    xa = np.asarray(x)
    if xa.dtype != np.float32 or xa.ndim == 0:
        return None
    mb = None
    if mask is not None:
        mb = np.asarray(mask)
        if mb.dtype != np.bool_:
            return None
        try:
            mb = np.broadcast_to(mb, xa.shape)
        except ValueError:
            return None
    xv, axis = rows_view(site, xa)
    if axis not in (-1, xv.ndim - 1):
        return None
    n = xv.shape[-1]
    rows = np.ascontiguousarray(xv).reshape(-1, n)
    mk = None
    if mb is not None:
        mk = np.ascontiguousarray(rows_view(site, mb)[0]).reshape(-1, n)
        mk = mk if mk.any() else None
    return _softmax_row_spec(spec, n), rows, mk


def _softmax_row_spec(spec: ApproxSpec, n_row: int) -> ApproxSpec:
    """The softmax spec for rows of ``n_row``: ``row_max`` raised to it where below (the
    unit is built for the site's rows)."""
    if n_row > getattr(spec, "row_max", n_row):
        return spec.replace(row_max=n_row)
    return spec


def site_runner(
    site: Site, spec: ApproxSpec, x: np.ndarray, dtype: npt.DTypeLike = np.float64
) -> Callable[[np.ndarray], np.ndarray | None] | None:
    """:func:`apply_spec`'s compiled float32 pass of ``site`` and ``spec`` bound to inputs
    like ``x`` (its arguments resolved once; an emulator's site sees the same spec and
    shape call after call): ``run(x2)`` of a C-contiguous float32 ``x2`` of ``x``'s
    shape is ``apply_spec(site, spec, x2, None, None, dtype)`` (no mask, no run-time n),
    or None where the pass gives up on ``x2``'s values (a NaN/inf input, a reciprocal
    that would raise: :func:`apply_spec` then gives the values or raises). None where
    :func:`apply_spec` takes another route for such inputs (``x`` not C-contiguous
    float32, a spec without such a pass or of another operator, rows not along the
    last axis)."""
    if (
        spec.operator is not site.operator
        or type(x) is not np.ndarray
        or x.dtype != np.float32
        or not x.flags.c_contiguous
        or not x.size
    ):
        return None
    shape = x.shape
    if site.operator is Operator.SOFTMAX:
        rows = softmax_f32_rows(site, spec, x, None)
        if rows is None or not hasattr(rows[0], "f32_runner"):
            return None
        run_rows = rows[0].f32_runner(rows[1], None, dtype)
        if run_rows is None:
            return None
        rshape = rows[1].shape
        return lambda x2: _shaped(run_rows(x2.reshape(rshape)), shape)
    if site.operator is Operator.GELU or site.operator in ELEMENTWISE_ATTENTION:
        if (
            not isinstance(spec, ElementwiseSpec)
            or type(spec).evaluate is not ElementwiseSpec.evaluate
        ):
            return None
        run_flat = spec.f32_runner(x, dtype)
        if run_flat is None:
            return None
        return lambda x2: _shaped(run_flat(x2.reshape(-1)), shape)
    if getattr(spec, "rows_f32", None) is None or getattr(spec, "f32_runner", None) is None:
        return None
    xv, axis = rows_view(site, x)
    if not (xv.ndim == 2 and axis in (-1, 1)):
        return None
    run_ln = spec.f32_runner(xv, *site_row_params(site, spec, xv.shape[1]), dtype)  # type: ignore[attr-defined]
    if run_ln is None:
        return None
    rshape = xv.shape
    return lambda x2: _shaped(run_ln(x2.reshape(rshape)), shape)


def _shaped(y: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray | None:
    return None if y is None else y.reshape(shape)


def _model_of_raw(
    site: Site,
    spec: ApproxSpec,
    raw: np.ndarray,
    axis: int,
    mask: np.ndarray | None,
    dtype: npt.DTypeLike,
) -> np.ndarray:
    """A row operator's model of the quantised rows ``raw`` (:func:`_site_rows`), as
    reals of ``dtype`` (rows view shape)."""
    if site.operator is Operator.SOFTMAX:
        spec = _softmax_row_spec(spec, int(np.shape(raw)[axis]) if np.ndim(raw) else 1)
        if mask is None:
            out = spec.model(raw, axis=axis)
        else:
            mv, _ = rows_view(site, mask)
            out = spec.model(raw, axis=axis, mask=mv)
    else:
        gamma, beta = site_row_params(site, spec, raw.shape[-1])
        out = spec.model(raw, axis=-1, gamma=gamma, beta=beta)
    return spec.output_to_float(out, dtype)


def apply_spec_blocks(
    site: Site,
    spec: ApproxSpec,
    x: np.ndarray,
    mask: np.ndarray | None = None,
    n_value: Any = None,
    dtype: npt.DTypeLike = np.float64,
    threads: int = 0,
) -> np.ndarray:
    """:func:`apply_spec` of ``x`` cut along its first axis into one block per worker
    thread (:func:`site_threads`), the blocks joined again: the same values, since the
    site's rows (never along the first axis) and elements are independent. Small
    tensors, fewer than :data:`MIN_SPLIT_THREADS` threads, and sites whose rows run
    along the first axis, go in one block."""
    xa = np.asarray(x)
    n = site_threads(threads)
    k = min(n, xa.shape[0] if xa.ndim else 1)
    big = xa.size >= MIN_SPLIT_ELEMENTS and n >= MIN_SPLIT_THREADS
    if k > 1 and big and _splittable(site, xa.ndim):
        m = None if mask is None else np.broadcast_to(mask, xa.shape)
        cuts = [xa.shape[0] * i // k for i in range(k + 1)]
        blocks = list(itertools.pairwise(cuts))

        def one(b: tuple[int, int]) -> np.ndarray:
            i, j = b
            return apply_spec(site, spec, xa[i:j], None if m is None else m[i:j], n_value, dtype)

        return np.concatenate(thread_map(one, blocks, k), axis=0)
    return apply_spec(site, spec, xa, mask, n_value, dtype)


def _splittable(site: Site, ndim: int) -> bool:
    """True when no row of ``site`` (:func:`rows_view`) runs along axis 0 of a tensor of
    ``ndim`` dimensions: elementwise sites, and row sites with at least two axes whose
    row axis is not the first."""
    if site.operator is Operator.GELU or site.operator in ELEMENTWISE_ATTENTION:
        return ndim >= 1
    if ndim < 2:
        return False
    if site.axis is None:
        return True  # rows along the last axis
    return (site.axis + ndim if site.axis < 0 else site.axis) >= 1


def _ideal(
    site: Site,
    spec: ApproxSpec,
    xv: np.ndarray,
    axis: int,
    mask: np.ndarray | None,
    raw: np.ndarray | None = None,
) -> np.ndarray:
    """``spec.reference`` of the quantised rows ``xv`` (float64; see :func:`apply_spec`);
    ``raw``: their codes, when the caller has them already."""
    if site.operator is Operator.GELU or site.operator in ELEMENTWISE_ATTENTION:
        if isinstance(spec, ElementwiseSpec):  # a memo of the reference over every code
            return spec.quantized_reference(xv)
        return spec.reference(spec.in_fmt.to_float(spec.quantize_input(xv)))
    xq = spec.in_fmt.to_float(spec.quantize_input(xv) if raw is None else raw)
    if site.operator is Operator.SOFTMAX:
        mv = None if mask is None else rows_view(site, mask)[0]
        return spec.reference(xq, axis=axis, mask=mv)
    n = xv.shape[-1]
    g = None if site.gamma is None else np.broadcast_to(np.ravel(site.gamma), (n,))
    b = None if site.beta is None else np.broadcast_to(np.ravel(site.beta), (n,))
    return spec.reference(xq, axis=-1, gamma=g, beta=b)


_NP_OF = {
    TensorProto.FLOAT: np.float32,
    TensorProto.DOUBLE: np.float64,
    TensorProto.FLOAT16: np.float16,
}


def _node_inputs(node: NodeProto) -> list[str]:
    """Explicit inputs plus outer-scope names used inside subgraphs."""
    names = [i for i in node.input if i]
    for attr in node.attribute:
        graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
        for g in graphs:
            defined = {i.name for i in g.input} | {i.name for i in g.initializer}
            for n in g.node:
                for i in _node_inputs(n):
                    if i not in defined:
                        names.append(i)
                defined.update(n.output)
    return names


def _site_inputs(site: Site) -> list[str]:
    """The tensors a site reads: its input, V for a fused attention site, and the
    run-time length n of a ReLU attention site divided by a shape-computed n."""
    ins = [site.input] if site.fused_v is None else [site.input, site.fused_v]
    if site.params.get("n_tensor"):
        ins.append(site.params["n_tensor"])
    return ins


@dataclass
class _Segment:
    level: int
    nodes: list[NodeProto]
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    session: ort.InferenceSession | None = None


class Emulator:
    """Evaluate ``model`` with ``sites`` cut out and replaced (see module docstring).

    ``model`` must come from :func:`hwapprox.export.graph.load_model` (named
    nodes, shape-inferred). Sessions are built once; :meth:`run` takes any
    specs for the same sites.
    """

    def __init__(
        self,
        model: ModelProto,
        sites: list[Site],
        *,
        threads: int = 0,
        index: GraphIndex | None = None,
    ) -> None:
        self.model = model
        self.sites = list(sites)
        self.threads = threads
        self.index = GraphIndex(model) if index is None else index
        self._float_sessions: dict[str, ort.InferenceSession] = {}
        #: per site: (spec, input shape, dtype, gamma/beta bytes, site_runner's pass or None),
        #: the last bound
        self._bound: dict[str, tuple[Any, ...]] = {}
        self._build()
        #: seconds spent in the approximations during the last :meth:`run`
        self.approx_seconds = 0.0
        self.session_seconds = 0.0

    # -- plan --------------------------------------------------------------------
    def _build(self) -> None:
        g = self.model.graph
        by_output = {s.output: s for s in self.sites}
        site_nodes = {n for s in self.sites for n in s.nodes}
        level: dict[str, int] = {}
        self.site_level: dict[str, int] = {}
        plain: list[tuple[int, NodeProto]] = []
        for node in g.node:
            if node.name in site_nodes:
                for out in node.output:
                    s = by_output.get(out)
                    if s is not None:
                        lv = max(level.get(i, 0) for i in _site_inputs(s))
                        self.site_level[s.name] = lv
                        level[out] = lv + 1
                continue
            lv = max((level.get(i, 0) for i in _node_inputs(node)), default=0)
            plain.append((lv, node))
            for out in node.output:
                if out:
                    level[out] = lv
        missing = [s.name for s in self.sites if s.name not in self.site_level]
        if missing:
            raise ExportError(f"sites {missing} do not belong to this model's graph")
        n_levels = max([0, *(lv + 1 for lv in self.site_level.values())])
        self.segments = [
            _Segment(k, [n for lv, n in plain if lv == k]) for k in range(n_levels + 1)
        ]
        # What every consumer needs, to decide segment inputs/outputs.
        needed_later: dict[str, int] = {}  # tensor -> last level needing it

        def need(t: str, lv: float) -> None:
            needed_later[t] = max(needed_later.get(t, -1), int(lv))

        for seg in self.segments:
            for node in seg.nodes:
                for i in _node_inputs(node):
                    need(i, seg.level)
        site_reads: set[str] = set()
        for s in self.sites:
            for i in _site_inputs(s):
                need(i, self.site_level[s.name])
                site_reads.add(i)
            if s.mask is not None:
                for t in s.mask.tensors():
                    need(t, self.site_level[s.name])
                    site_reads.add(t)
        for o in g.output:
            need(o.name, n_levels + 1)
        init_names = {i.name for i in g.initializer}
        graph_inputs = {i.name for i in g.input} - init_names
        for seg in self.segments:
            produced = {o for n in seg.nodes for o in n.output if o}
            used = [i for n in seg.nodes for i in _node_inputs(n)]
            seg.inputs = sorted({i for i in used if i not in produced and i not in init_names})
            # Outputs: produced here and needed by a later segment, a site or the graph.
            outs = []
            for n in seg.nodes:
                for o in n.output:
                    if (
                        o
                        and o in needed_later
                        and (
                            needed_later[o] > seg.level
                            or o in site_reads
                            or o in {x.name for x in g.output}
                        )
                    ):
                        outs.append(o)
            seg.outputs = outs
            if seg.nodes and seg.outputs:
                sub, shared = self._submodel(seg, init_names)
                seg.session = make_session(sub, self.threads, shared=shared)
        self._graph_inputs = graph_inputs
        self._sites_at = {
            k: [s for s in self.sites if self.site_level[s.name] == k] for k in range(n_levels + 1)
        }
        # Each value is dropped once the last segment or site that reads it has run (the
        # graph's outputs are kept): a run holds the live tensors, not every one it made.
        outputs = {o.name for o in g.output}
        self._last_use: dict[int, list[str]] = {}
        for name, lv in needed_later.items():
            if name not in outputs:
                self._last_use.setdefault(lv, []).append(name)

    def _vi(self, name: str) -> onnx.ValueInfoProto:
        et = self.index.elem_type.get(name, TensorProto.FLOAT)
        return helper.make_tensor_value_info(name, et, None)

    def _submodel(
        self, seg: _Segment, init_names: set[str]
    ) -> tuple[ModelProto, dict[str, np.ndarray]]:
        """The segment's model, its large weights as stubs (:func:`shared_weights`), and
        those weights by name."""
        used = {i for n in seg.nodes for i in _node_inputs(n)}
        inits, shared = shared_weights(
            (t for t in self.model.graph.initializer if t.name in used), self.index
        )
        graph = helper.make_graph(
            seg.nodes,
            f"segment{seg.level}",
            [self._vi(i) for i in seg.inputs],
            [self._vi(o) for o in seg.outputs],
            inits,
        )
        return self._wrap(graph), shared

    def _wrap(self, graph: onnx.GraphProto) -> ModelProto:
        m = helper.make_model(graph, opset_imports=list(self.model.opset_import))
        m.ir_version = self.model.ir_version
        for f in self.model.functions:
            m.functions.append(f)
        return m

    def _float_site(self, site: Site) -> ort.InferenceSession:
        sess = self._float_sessions.get(site.name)
        if sess is None:
            names = set(site.nodes)
            nodes = [n for n in self.model.graph.node if n.name in names]
            inits = []
            ins = _site_inputs(site)
            for n in nodes:
                for i in n.input:
                    if i and i not in ins and i not in {o for m in nodes for o in m.output}:
                        v = self.index.const(i)
                        if v is None:
                            raise ExportError(f"site {site.name}: input {i} is not a constant")
                        inits.append(numpy_helper.from_array(np.asarray(v), i))
            graph = helper.make_graph(
                nodes, site.name, [self._vi(i) for i in ins], [self._vi(site.output)], inits
            )
            sess = make_session(self._wrap(graph), self.threads)
            self._float_sessions[site.name] = sess
        return sess

    @property
    def n_sessions(self) -> int:
        return sum(seg.session is not None for seg in self.segments)

    # -- run ---------------------------------------------------------------------
    def run(
        self,
        feeds: Mapping[str, np.ndarray],
        specs: Mapping[str, ApproxSpec | None],
        *,
        resume: tuple[int, Mapping[str, np.ndarray]] | None = None,
    ) -> dict[str, np.ndarray]:
        """Graph outputs with each site's spec applied (``None``: float nodes).

        ``resume=(level, values)`` (from :meth:`prefix`) skips the sessions up
        to and including ``level`` and starts at that level's sites: what the
        budget tuner uses when only sites from ``level`` on change.
        """
        unknown = sorted(set(specs) - {s.name for s in self.sites})
        if unknown:
            raise ExportError(f"specs given for sites {unknown} that this emulator did not cut")
        self.approx_seconds = 0.0
        self.session_seconds = 0.0
        if resume is None:
            values: dict[str, np.ndarray] = dict(feeds)
            first = 0
        else:
            first, saved = resume
            values = dict(saved)
        for seg in self.segments[first:]:
            if seg.session is not None and (resume is None or seg.level > first):
                self._run_segment(seg, values)
            self._run_sites(seg.level, values, specs)
            self._drop_dead(seg.level, values)
        out = {}
        for o in self.model.graph.output:
            if o.name in values:
                out[o.name] = values[o.name]
            else:
                const = self.index.const(o.name)
                if const is None:
                    raise ExportError(f"graph output {o.name} was not computed")
                out[o.name] = const
        return out

    def advance(
        self,
        state: tuple[int, Mapping[str, np.ndarray]],
        specs: Mapping[str, ApproxSpec | None],
        level: int,
    ) -> tuple[int, dict[str, np.ndarray]]:
        """:meth:`prefix` at ``level`` continued from an earlier prefix ``state`` (its
        level at most ``level``, made with the same ``specs`` for every site below its
        level): only the sites and sessions between the two run. The same values."""
        first, saved = state
        if first > level:
            raise ExportError(f"advance: a prefix at level {first} is past level {level}")
        values = dict(saved)
        for seg in self.segments[first : level + 1]:
            if seg.session is not None and seg.level > first:
                self._run_segment(seg, values)
            if seg.level < level:
                self._run_sites(seg.level, values, specs)
                self._drop_dead(seg.level, values)
        return level, values

    def prefix(
        self, feeds: Mapping[str, np.ndarray], specs: Mapping[str, ApproxSpec | None], level: int
    ) -> tuple[int, dict[str, np.ndarray]]:
        """Values after the sessions of levels ``0..level`` and the sites of
        levels ``< level`` (with ``specs``): the ``resume`` state of :meth:`run`."""
        values: dict[str, np.ndarray] = dict(feeds)
        for seg in self.segments[: level + 1]:
            if seg.session is not None:
                self._run_segment(seg, values)
            if seg.level < level:
                self._run_sites(seg.level, values, specs)
                self._drop_dead(seg.level, values)
        return level, values

    def _drop_dead(self, level: int, values: dict[str, np.ndarray]) -> None:
        """Drop from ``values`` the tensors nothing after ``level`` reads (its segment and
        sites have run; the graph's outputs stay)."""
        for name in self._last_use.get(level, ()):
            values.pop(name, None)

    def _run_segment(self, seg: _Segment, values: dict[str, np.ndarray]) -> None:
        assert seg.session is not None
        t0 = time.perf_counter()
        res = seg.session.run(seg.outputs, {i: values[i] for i in seg.inputs})
        self.session_seconds += time.perf_counter() - t0
        values.update(zip(seg.outputs, res, strict=True))

    def _run_sites(
        self, level: int, values: dict[str, np.ndarray], specs: Mapping[str, ApproxSpec | None]
    ) -> None:
        for site in self._sites_at[level]:
            x = values[site.input]
            spec = specs.get(site.name)
            t0 = time.perf_counter()
            if spec is None:
                y = self._float_site(site).run(None, {i: values[i] for i in _site_inputs(site)})[0]
                self.session_seconds += time.perf_counter() - t0
            else:
                dtype = _NP_OF.get(self.index.elem_type.get(site.output, 1), np.float32)
                mask = site_mask_bits(site, values, self.index, np.shape(x))
                if site.fused_v is not None:
                    y = apply_fused(site, spec, x, values[site.fused_v], mask)  # type: ignore[arg-type]
                else:
                    n_t = site.params.get("n_tensor")
                    n_v = values[n_t] if n_t else None
                    if self.threads == 1:  # (one block: apply_spec_blocks' own choice)
                        bound = mask is None and not n_t  # (site_runner's inputs)
                        y = self._run_bound(site, spec, x, dtype) if bound else None
                        if y is None:
                            y = apply_spec(site, spec, x, mask, n_v, dtype)
                    else:
                        y = apply_spec_blocks(site, spec, x, mask, n_v, dtype, self.threads)
                y = y.astype(dtype, copy=False)
                self.approx_seconds += time.perf_counter() - t0
            values[site.output] = y

    def _run_bound(
        self, site: Site, spec: ApproxSpec, x: np.ndarray, dtype: npt.DTypeLike
    ) -> np.ndarray | None:
        """:func:`site_runner`'s pass of ``site`` (bound once per spec, shape and dtype: the
        last one kept per site), or None (then :func:`apply_spec`)."""
        if (
            not _BOUND
            or type(x) is not np.ndarray
            or x.dtype != np.float32
            or not x.flags.c_contiguous
        ):
            return None
        # (a LayerNorm pass binds gamma and beta's codes: their values are part of the key,
        # as they are of site_row_params' memo)
        params = None
        if site.gamma is not None or site.beta is not None:
            params = tuple(
                None if v is None else np.asarray(v).tobytes() for v in (site.gamma, site.beta)
            )
        hit = self._bound.get(site.name)
        if (
            hit is None
            or hit[0] is not spec
            or hit[1] != x.shape
            or hit[2] != dtype
            or hit[3] != params
        ):
            run = site_runner(site, spec, x, dtype)
            hit = self._bound[site.name] = (spec, x.shape, dtype, params, run)
        return None if hit[4] is None else hit[4](x)


class PrefixChain:
    """The prefix states (:meth:`Emulator.prefix`) of a search that tunes sites one
    after another: a new state continues the last one (:meth:`Emulator.advance`)
    when the specs of every site below the last state's level are unchanged, so the
    sessions before the site being tuned run once per search, not once per site;
    otherwise it starts from the inputs. Asked again for the same level and specs below,
    it runs nothing (each candidate of a site asks)."""

    def __init__(self, emu: Emulator, feeds: Mapping[str, np.ndarray]) -> None:
        self.emu = emu
        self.feeds = feeds
        self._state: tuple[int, dict[str, np.ndarray]] | None = None
        self._below: dict[str, ApproxSpec | None] = {}

    def _specs_below(
        self, specs: Mapping[str, ApproxSpec | None], level: int
    ) -> dict[str, ApproxSpec | None]:
        lv = self.emu.site_level
        return {s.name: specs.get(s.name) for s in self.emu.sites if lv[s.name] < level}

    def get(
        self, specs: Mapping[str, ApproxSpec | None], level: int
    ) -> tuple[int, dict[str, np.ndarray]]:
        """``Emulator.prefix(feeds, specs, level)``."""
        st = self._state
        if st is not None and st[0] <= level and self._specs_below(specs, st[0]) == self._below:
            st = self.emu.advance(st, specs, level)
        else:
            st = self.emu.prefix(self.feeds, specs, level)
        self._state = st
        self._below = self._specs_below(specs, level)
        return st


class ModelSessions:
    """What emulation builds from a model alone, kept for repeated calls on it: its
    :class:`GraphIndex`, the trace sessions (per tensor list) and the
    :class:`Emulator` (per site list). ``validate`` called again on the same
    imported model (a sweep, a budget search, a notebook) reuses them; the model
    must not be changed in place while they are kept."""

    def __init__(self, model: ModelProto) -> None:
        self.model = model
        self._index: GraphIndex | None = None
        self._traces: dict[tuple[tuple[str, ...], int], ort.InferenceSession] = {}
        self._emulators: dict[tuple[tuple[str, ...], int], Emulator] = {}

    def __reduce__(self) -> tuple[Any, tuple[ModelProto]]:
        return ModelSessions, (self.model,)  # sessions cannot be pickled: rebuilt on use

    @property
    def index(self) -> GraphIndex:
        if self._index is None:
            self._index = GraphIndex(self.model)
        return self._index

    def trace(self, tensors: list[str], threads: int = 0) -> ort.InferenceSession:
        """:func:`trace_model` of ``tensors`` (built once per list)."""
        key = (tuple(tensors), threads)
        if key not in self._traces:
            self._traces[key] = trace_model(self.model, tensors, threads=threads, index=self.index)
        return self._traces[key]

    def emulator(self, sites: list[Site], threads: int = 0) -> Emulator:
        """An :class:`Emulator` of ``sites`` (built once per site list; sites are
        told apart by name, nodes and fused ``V``)."""
        key = (tuple(f"{s.name}:{','.join(s.nodes)}:{s.fused_v}" for s in sites), threads)
        if key not in self._emulators:
            self._emulators[key] = Emulator(self.model, sites, threads=threads, index=self.index)
        return self._emulators[key]


def trace_model(
    model: ModelProto, tensors: list[str], *, threads: int = 0, index: GraphIndex | None = None
) -> ort.InferenceSession:
    """A session of the unmodified model that also outputs ``tensors`` (site inputs/outputs)."""
    idx = GraphIndex(model) if index is None else index
    m = with_initializers(model, ())
    inits, shared = shared_weights(model.graph.initializer, idx)
    m.graph.initializer.extend(inits)
    existing = {o.name for o in m.graph.output}
    for t in tensors:
        if t not in existing:
            et = idx.elem_type.get(t, TensorProto.FLOAT)
            m.graph.output.append(helper.make_tensor_value_info(t, et, None))
            existing.add(t)
    return make_session(m, threads, spin=True, shared=shared)  # one run of the whole model


# a fused attention site (hwapprox.export.fused) beside the other sites' emulation
def apply_fused(
    site: Site,
    spec: AttentionRowSpec,
    x: npt.ArrayLike,
    v: npt.ArrayLike,
    mask: np.ndarray | None = None,
) -> np.ndarray:
    """The fused row on float scores ``x [..., S, N]`` and ``V [..., N, D_v]`` (leading
    axes broadcast as MatMul does): float64 context ``[..., S, D_v]``.

    Scores and V are quantised to ``spec.score_fmt``/``spec.v_fmt`` (masked scores set
    to 0 first, as the softmax site does: they never reach a format), then
    :meth:`AttentionRowSpec.model_scores` with the site's mask bits.
    """
    xa = np.asarray(x, dtype=np.float64)
    va = np.asarray(v, dtype=np.float64)
    n = xa.shape[-1]
    if va.ndim < 2 or va.shape[-2] != n:
        raise ExportError(
            f"site {site.name}: V {list(va.shape)} does not match {n} keys of scores "
            f"{list(xa.shape)}"
        )
    dv = va.shape[-1]
    if mask is not None:
        mask = np.broadcast_to(mask, xa.shape)
        xa = np.where(mask, 0.0, xa)
    lead = np.broadcast_shapes(xa.shape[:-2], va.shape[:-2])
    xa = np.broadcast_to(xa, (*lead, *xa.shape[-2:]))
    s_raw = spec.score_fmt.quantize(xa).reshape(-1, n)
    v_raw = spec.v_fmt.quantize(np.broadcast_to(va, (*lead, n, dv)))
    rows = xa.shape[-2]
    v_rows = np.broadcast_to(v_raw[..., None, :, :], (*lead, rows, n, dv)).reshape(-1, n, dv)
    mk = None if mask is None else np.broadcast_to(mask, xa.shape).reshape(-1, n)
    y = spec.model_scores(s_raw, v_rows, mk)
    return spec.out_fmt.to_float(y).reshape(*lead, rows, dv)
