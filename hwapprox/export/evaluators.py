"""Where the budget search's end-to-end evaluations run: in this process, on local
worker processes, or on a Dask cluster -- with the same results.

An evaluation is one emulation of the model with the specs chosen so far, one
site's candidate spec added, and the end-to-end metrics against the float
outputs (:func:`hwapprox.export.metrics.end_to_end_metrics`). The search
(:func:`hwapprox.export.tuning.walk_front`) asks for the candidates of a site
in cost order and stops at the first that meets its share; to use ``j``
workers it evaluates the next ``j`` candidates at once and scans their results
in order, so the choice -- and the list of candidates reported as tried -- is
exactly the serial one (evaluations past the pick are discarded).

The screening before the evaluations runs there too: each distinct candidate
spec on the screening samples of the sites that have it
(:meth:`CandidateEvaluator.start_screen`, :func:`hwapprox.export.tuning.fronts_of`).

Workers hold the search context (:class:`SearchContext`: the imported model,
the sites, the inputs, the float outputs and the screening samples), sent once -- to each local
worker at start-up, to a Dask cluster by ``scatter`` -- and build their own
onnxruntime sessions from it (sessions cannot be pickled). Each worker keeps
the prefix state of the site being tuned (the emulation up to that site) and
continues it to the next site (:class:`~hwapprox.export.emulate.PrefixChain`), so
the sessions before a site run once per worker and search, as they run once per
search in the serial one. Local workers are forked (``spawn`` would re-import
the caller's main module: a script without a ``__main__`` guard would hang);
they build new sessions and never touch the parent's, ask the kernel to stop
them when the parent dies (``PR_SET_PDEATHSIG``: a killed search leaves no
workers running), and use one onnxruntime thread each.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hwapprox.approx.base import ApproxSpec
from hwapprox.approx.sweep import die_with_parent
from hwapprox.export.errors import ExportError

if TYPE_CHECKING:
    from hwapprox.export.tuning import ScreenGroup

__all__ = ["CandidateEvaluator", "SearchContext", "die_with_parent", "make_evaluator"]

Metrics = dict[str, Any]
Specs = Mapping[str, ApproxSpec | None]
ScreenSample = tuple[Any, np.ndarray, np.ndarray, np.ndarray | None, float | None]


@dataclass(frozen=True)
class SearchContext:
    """What a worker needs to evaluate candidates (picklable)."""

    model: Any  # onnx.ModelProto (imported: named nodes, shapes inferred)
    sites: list[Any]  # the active Site objects
    feeds: dict[str, np.ndarray]
    ref: dict[str, np.ndarray]
    metric_kw: dict[str, Any]
    threads: int = 1
    #: screening samples by site name: ``(site, xs, ys, mask, n_value)``
    #: (:func:`~hwapprox.export.tuning.screen_sample`, the site's run-time n)
    screening: dict[str, ScreenSample] = field(default_factory=dict)


class _Worker:
    """A worker's emulator over the context, and the prefix of the site being tuned."""

    def __init__(self, ctx: SearchContext) -> None:
        from hwapprox.export.emulate import Emulator, PrefixChain

        self.ctx = ctx
        self.emu = Emulator(ctx.model, ctx.sites, threads=ctx.threads)
        self._chain = PrefixChain(self.emu, ctx.feeds)

    def evaluate(self, site: str, chosen: Specs, spec: ApproxSpec | None) -> Metrics:
        from hwapprox.export.metrics import end_to_end_metrics

        prefix = self._chain.get(chosen, self.emu.site_level[site])
        out = self.emu.run(self.ctx.feeds, {**chosen, site: spec}, resume=prefix)
        return end_to_end_metrics(self.ctx.ref, out, **self.ctx.metric_kw)


#: workers of this process, by search id (a local worker holds one; a Dask worker may
#: serve several searches)
_WORKERS: dict[str, _Worker] = {}


def _install(search_id: str, ctx: SearchContext) -> None:
    die_with_parent()
    _WORKERS[search_id] = _Worker(ctx)


def _evaluate_task(
    search_id: str,
    ctx: SearchContext | None,
    site: str,
    chosen: dict[str, ApproxSpec | None],
    spec: ApproxSpec | None,
) -> Metrics:
    """One evaluation in a worker (``ctx`` given on Dask: built on first use)."""
    w = _WORKERS.get(search_id)
    if w is None:
        if ctx is None:
            raise ExportError(f"worker has no search context {search_id}")
        w = _WORKERS[search_id] = _Worker(ctx)
    return w.evaluate(site, chosen, spec)


def _screen_group(ctx: SearchContext, spec: ApproxSpec, names: list[str]) -> list[float | None]:
    """:func:`~hwapprox.export.tuning.screen_rms` of ``spec`` on each named site's
    screening sample (``ctx.screening``), in order."""
    from hwapprox.export.tuning import screen_rms

    out: list[float | None] = []
    for name in names:
        site, xs, ys, ms, n_value = ctx.screening[name]
        out.append(screen_rms(site, spec, xs, ys, ms, n_value))
    return out


def _screen_task(
    search_id: str, ctx: SearchContext | None, spec: ApproxSpec, names: list[str]
) -> list[float | None]:
    """:func:`_screen_group` in a worker, on its search context (``ctx`` given on Dask)."""
    if ctx is None:
        w = _WORKERS.get(search_id)
        if w is None:
            raise ExportError(f"worker has no search context {search_id}")
        ctx = w.ctx
    return _screen_group(ctx, spec, names)


class CandidateEvaluator:
    """Evaluates a site's candidates, ``width`` at a time, and screens the candidates
    before (see the module docstring)."""

    def __init__(
        self,
        evaluate_many: Callable[[str, Specs, Sequence[ApproxSpec]], list[Metrics]],
        width: int,
        close: Callable[[], None] = lambda: None,
        where: str = "in process",
        *,
        screen: Callable[[list[ScreenGroup], int], Callable[[], list[list[float | None]]]],
    ) -> None:
        self._many = evaluate_many
        self.width = max(1, width)
        self.close = close
        self.where = where
        self._screen = screen

    def start_screen(
        self, groups: list[ScreenGroup], threads: int = 0
    ) -> Callable[[], list[list[float | None]]]:
        """Starts screening: per ``(spec, site names)`` group, the spec's
        :func:`~hwapprox.export.tuning.screen_rms` on each site's sample
        (:attr:`SearchContext.screening`), where the evaluations run (in process on
        ``threads`` worker threads); returns the function that waits for the results
        (in ``groups``' order)."""
        return self._screen(list(groups), threads)

    def batch(self, site: str, chosen: Specs, specs: Sequence[ApproxSpec]) -> list[Metrics]:
        """Metrics of each of ``specs`` for ``site`` on top of ``chosen``, in order."""
        return self._many(site, chosen, specs)


def make_evaluator(
    ctx: SearchContext,
    serial: Callable[[str, Specs, ApproxSpec], Metrics],
    *,
    jobs: int = 1,
    dask: str | None = None,
) -> CandidateEvaluator:
    """In-process (``jobs=1``, no ``dask``: ``serial``, the caller's own emulator),
    ``jobs`` local worker processes, or a Dask cluster at address ``dask``."""
    if jobs < 1:
        raise ExportError(f"jobs={jobs}: give at least 1 (-j N)")
    if dask is None and jobs == 1:
        from hwapprox.export.emulate import thread_start

        def screen_here(
            groups: list[ScreenGroup], threads: int
        ) -> Callable[[], list[list[float | None]]]:
            return thread_start(lambda g: _screen_group(ctx, *g), groups, threads)

        return CandidateEvaluator(
            lambda site, chosen, specs: [serial(site, chosen, s) for s in specs],
            1,
            screen=screen_here,
        )
    search_id = uuid.uuid4().hex
    if dask is not None:
        from hwapprox.approx.sweep import SweepError, dask_client

        try:
            client = dask_client(dask)
        except SweepError as exc:
            raise ExportError(str(exc)) from None
        ctx_ref = client.scatter(ctx, broadcast=True, hash=False)
        n_workers = max(1, len(client.scheduler_info().get("workers", {})))

        def many_dask(site: str, chosen: Specs, specs: Sequence[ApproxSpec]) -> list[Metrics]:
            futs = [
                client.submit(_evaluate_task, search_id, ctx_ref, site, dict(chosen), s, pure=False)
                for s in specs
            ]
            return list(client.gather(futs))

        def screen_dask(
            groups: list[ScreenGroup], _threads: int
        ) -> Callable[[], list[list[float | None]]]:
            futs = [
                client.submit(_screen_task, search_id, ctx_ref, sp, names, pure=False)
                for sp, names in groups
            ]
            return lambda: list(client.gather(futs))

        return CandidateEvaluator(
            many_dask, n_workers, client.close, f"Dask at {dask}", screen=screen_dask
        )
    pool = cf.ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=mp.get_context("fork"),
        initializer=_install,
        initargs=(search_id, ctx),
    )

    def many_local(site: str, chosen: Specs, specs: Sequence[ApproxSpec]) -> list[Metrics]:
        futs = [pool.submit(_evaluate_task, search_id, None, site, dict(chosen), s) for s in specs]
        return [f.result() for f in futs]

    def close_local() -> None:
        pool.shutdown(wait=True, cancel_futures=True)

    def screen_local(
        groups: list[ScreenGroup], _threads: int
    ) -> Callable[[], list[list[float | None]]]:
        futs = [pool.submit(_screen_task, search_id, None, sp, names) for sp, names in groups]
        return lambda: [f.result() for f in futs]

    return CandidateEvaluator(
        many_local,
        jobs,
        close_local,
        f"{jobs} local processes",
        screen=screen_local,
    )
