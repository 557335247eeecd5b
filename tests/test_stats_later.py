"""A small model's calibration statistics computed on a worker thread (StatsBatch,
pending SiteStats) against the synchronous RunningStats path on the same tensors."""

from __future__ import annotations

import os
import pickle
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from hwapprox.approx import _kernels
from hwapprox.export import calibrate as cal
from hwapprox.export.builders import EncoderShape, bert_encoder, sample_inputs
from hwapprox.export.emulate import background
from hwapprox.export.errors import ExportError
from hwapprox.export.stats import RunningStats, SiteStats, StatsBatch
from hwapprox.export.validate import import_model

pytestmark = pytest.mark.skipif(_kernels.njit is None, reason="numba is not installed")


def _now(fn: Any) -> Future[Any]:
    """A ``submit`` that runs ``fn`` here."""
    f: Future[Any] = Future()
    f.set_result(fn())
    return f


def _tensors() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.normal(0, 3, 40_000).astype(np.float32)
    return [
        x,
        rng.standard_t(2, 9_000).astype(np.float32) * 40,
        np.array([0.0, -0.0, 5.0, -7.0, 2.0**-130], dtype=np.float32),
        np.array([1.5], dtype=np.float32),
        x[rng.random(x.size) < 0.3],  # (a masked selection: a contiguous copy)
    ]


def _fields(st: SiteStats) -> tuple[Any, ...]:
    return (st.count, st.min, st.max, st.mean, st.std, st.percentiles, st.nonfinite)


@pytest.mark.parametrize("threaded", [False, True])
def test_batch_gives_each_tensor_its_own_running_statistics(threaded: bool) -> None:
    arrays = _tensors()
    if threaded:
        with ThreadPoolExecutor(1) as pool:
            batch = StatsBatch(arrays, pool.submit)
            got = [batch.result(i) for i in range(len(arrays))]
    else:
        batch = StatsBatch(arrays, _now)
        got = [batch.result(i) for i in range(len(arrays))]
    for a, (mean, std, pct) in zip(arrays, got, strict=True):
        ref = SiteStats.from_running("t", RunningStats().add(a))
        assert (mean, std, pct) == (ref.mean, ref.std, ref.percentiles)  # exactly


def test_batch_refuses_what_its_kernel_cannot_read() -> None:
    x = np.arange(8, dtype=np.float32)
    for bad in (x[::2], x.astype(np.float64), x.reshape(2, 4), x[:0]):
        with pytest.raises(ValueError, match="contiguous 1-D float32"):
            StatsBatch([bad], _now)


def test_pending_site_stats_equal_the_synchronous_ones() -> None:
    arrays = _tensors()
    batch = StatsBatch(arrays, _now)
    for i, a in enumerate(arrays):
        ref = SiteStats.from_running("t", RunningStats().add(a), masked_rows=2, rows=7)
        st = SiteStats.pending(
            "t", a.size, float(a.min()), float(a.max()), batch, i, masked_rows=2, rows=7
        )
        assert st.absmax == ref.absmax
        assert "_batch" in st.__dict__  # (the extremes were known: nothing waited)
        assert pickle.loads(pickle.dumps(st)) == ref  # (pickling fills it in)
        assert "_batch" not in st.__dict__
        assert st == ref
        assert hash(st) == hash(ref)
        assert repr(st) == repr(ref)
        assert st.choose_format(16, 1, stat="p99.9") == ref.choose_format(16, 1, stat="p99.9")
    with pytest.raises(AttributeError, match="no attribute 'median'"):
        _ = st.median  # type: ignore[attr-defined]


def _calibrate_both(
    model: Any, feeds: dict[str, np.ndarray], softmax: bool = True, pending: bool = True
) -> tuple[cal.Trace, cal.Trace]:
    imp = import_model(model)
    sites = [s for s in imp.sites if softmax or s.kind != "softmax"]
    traces = []
    for defer in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(cal, "DEFER_STATS", defer)
            t = cal.calibrate(imp.model, sites, feeds, sessions=imp.sessions)
        left = [st for st in (*t.stats.values(), *t.out_stats.values()) if "_batch" in st.__dict__]
        # the small model's statistics were left to the worker exactly when deferred
        assert bool(left) == (defer and pending)
        t.settle()
        assert not [st for st in t.stats.values() if "_batch" in st.__dict__]
        traces.append(t)
    return traces[0], traces[1]


@pytest.mark.parametrize("mask", [False, True])
def test_calibration_statistics_are_those_of_the_synchronous_path(mask: bool) -> None:
    """Every site's input and output statistics, masked scores left out, equal field by
    field (a padded batch: masked softmax sites and fully masked rows counted)."""
    shape = EncoderShape(layers=2, width=32, heads=2, ffn=64, seq=12, batch=4)
    model = bert_encoder(shape, mask="additive" if mask else "none", seed=2)
    feeds = sample_inputs(shape, batch=4, mask=mask)
    later, now = _calibrate_both(model, feeds)
    assert later.stats.keys() == now.stats.keys()
    assert len(now.stats) >= 6
    for name in now.stats:
        for a, b in (
            (later.stats[name], now.stats[name]),
            (later.out_stats[name], now.out_stats[name]),
        ):
            assert _fields(a) == _fields(b), name
            assert (a.masked, a.masked_rows, a.rows) == (b.masked, b.masked_rows, b.rows)
    if mask:
        assert any(st.masked for st in now.stats.values())


def test_extremes_are_those_of_running_statistics() -> None:
    specials = [
        np.array([0.0, -0.0, 5.0, -7.0, 2.0**-130, -(2.0**-140)], dtype=np.float32),
        np.array([np.nan, 1.0, np.inf, -np.inf, -3.0], dtype=np.float32),
        np.array([np.nan, np.inf], dtype=np.float32),
        np.array([-1e38, 1e38, 3.4028235e38], dtype=np.float32),
    ]
    arrays = _tensors() + specials
    bad, lo, hi = StatsBatch(arrays, _now).extremes()
    for a, b, mn, mx in zip(arrays, bad, lo, hi, strict=True):
        rs = RunningStats().add(a)
        assert (b, mn, mx) == (rs.nonfinite, rs.min, rs.max)  # (-0.0 == 0.0)


def test_a_tensor_with_nonfinite_values_is_folded_at_once() -> None:
    """An inf in the embeddings reaches every site tensor: recorded for the worker, each
    is found non-finite and folded by RunningStats at once (its non-finite count);
    every figure as the synchronous path, and the softmax sites' error the same."""
    shape = EncoderShape(layers=1, width=32, heads=2, ffn=64, seq=8, batch=2)
    model = bert_encoder(shape, seed=2, token_input=False)
    feeds = sample_inputs(shape, batch=2, token_input=False)
    feeds["embeddings"][1, 3, 5] = np.inf
    errors = []
    for defer in (True, False):  # (the softmax sites refuse the NaN scores, both ways)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(cal, "DEFER_STATS", defer)
            imp = import_model(model)
            with pytest.raises(ExportError, match="input values are -inf") as info:
                cal.calibrate(imp.model, imp.sites, feeds, sessions=imp.sessions)
            errors.append(str(info.value))
    assert errors[0] == errors[1]
    seen = []
    extremes = StatsBatch.extremes

    def spy(self: StatsBatch) -> Any:
        seen.append(got := extremes(self))
        return got

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(StatsBatch, "extremes", spy)
        later, now = _calibrate_both(model, feeds, softmax=False, pending=False)
    assert len(seen) == 1  # (taken the deferred way: every tensor found non-finite there)
    assert all(seen[0][0])
    assert any(st.nonfinite for st in now.stats.values())
    for name in now.stats:
        assert _fields(later.stats[name]) == _fields(now.stats[name]), name
        assert _fields(later.out_stats[name]) == _fields(now.out_stats[name]), name


def test_the_budget_search_starts_with_every_statistic_filled_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The search may fork workers, where a statistic pending on a running job would
    never be filled in: validate settles the trace first."""
    from hwapprox.export import example
    from hwapprox.export import validate as val

    seen: list[int] = []
    tune = val._tune

    def spy(emu: Any, active: Any, given: Any, trace: cal.Trace, *a: Any) -> Any:
        every = (*trace.stats.values(), *trace.out_stats.values())
        seen.append(sum("_batch" in st.__dict__ for st in every))
        return tune(emu, active, given, trace, *a)

    monkeypatch.setattr(val, "_tune", spy)
    val.validate(example.model_path(), inputs=example.inputs_path(), budget="cosine=0.9")
    assert seen == [0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_fork_waits_for_the_background_jobs() -> None:
    """A forked child has no copy of the background worker: the fork waits for its jobs,
    so a child finds their results (else it would wait for them forever)."""
    started = threading.Event()

    def slow() -> int:
        started.set()
        time.sleep(0.3)
        return 7

    fut = background(slow)
    started.wait()
    pid = os.fork()
    if pid == 0:  # (the child: report and leave at once)
        os._exit(0 if fut.done() and fut.result() == 7 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
