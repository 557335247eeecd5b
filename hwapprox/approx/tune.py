"""Pick the cheapest spec that meets an error budget.

The search space is a :class:`~hwapprox.approx.sweep.Grid` (methods × any
spec fields × output widths) and its input sets. Candidates are visited in
ascending fitted cost (:func:`hwapprox.approx.costmodel.rank_score`: the
yosys-fitted LUT/FF/DSP/BRAM estimate of the grid's FPGA family in
LUT-equivalents; the pre-synthesis proxy ``spec.cost().score()`` where the
table has nothing); each is measured on *every* input set and
judged on its worst metrics (:meth:`Metrics.worst`). The first cost level
with a candidate inside the budget ends the search: of the candidates at that
cost the most accurate (smallest budget ratio) is returned. So the answer is
the cheapest spec in the space that meets the budget, found without measuring
anything more expensive.

:class:`Budget` limits (each optional, at least one):

* ``max_lsb`` -- max |error| in LSBs of *the candidate's own* output format
  (``1`` = within one output LSB; 0.5 is the floor of any rounded output);
* ``max_abs``, ``rms``, ``mean_abs`` -- absolute limits on the real outputs;
* ``kl`` (softmax) -- mean KL divergence in nats; ``min_top1`` -- top-1
  agreement fraction.

When nothing in the space meets the budget the result says so and carries the
closest candidate (smallest worst ratio metric / limit).

With a target clock (``clock_mhz``) the space is first cut to the specs whose RTL
unit reaches it post-route on ECP5-85k (:func:`hwapprox.approx.costmodel.meets_clock`:
measured, or estimated from the nearest measured format); the others are listed in
``skipped`` with their Fmax, so the answer is the smallest area *at that clock*.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hwapprox.approx.base import ApproxSpec, SpecError
from hwapprox.approx.costmodel import meets_clock, rank_score
from hwapprox.approx.inputs import InputSet
from hwapprox.approx.metrics import Metrics
from hwapprox.approx.registry import spec_from_config
from hwapprox.approx.sweep import Grid, expand, make_executor, measure

__all__ = ["Budget", "Candidate", "TuneResult", "evaluate_spec", "tune"]

_UPPER = ("max_lsb", "max_abs", "rms", "mean_abs", "kl")


@dataclass(frozen=True)
class Budget:
    """Error limits a spec must meet on every input set (see module docstring)."""

    max_lsb: float | None = None
    max_abs: float | None = None
    rms: float | None = None
    mean_abs: float | None = None
    kl: float | None = None
    min_top1: float | None = None

    def __post_init__(self) -> None:
        limits = {n: getattr(self, n) for n in (*_UPPER, "min_top1")}
        if all(v is None for v in limits.values()):
            raise SpecError(
                "an error budget needs at least one limit, e.g. max_lsb=1 or max_abs=0.01"
            )
        for name, v in limits.items():
            if v is not None and not (math.isfinite(v) and v > 0):
                raise SpecError(f"budget {name}={v} must be a positive finite number")
        if self.min_top1 is not None and self.min_top1 > 1:
            raise SpecError(f"budget min_top1={self.min_top1} must be <= 1 (a fraction)")

    def ratio(self, m: Metrics) -> float:
        """Worst metric/limit ratio (<= 1 means the budget is met)."""
        worst = 0.0
        for name in _UPPER:
            limit = getattr(self, name)
            if limit is None:
                continue
            value = getattr(m, name)
            if value is None:
                raise SpecError(f"budget on {name} does not apply to this operator")
            worst = max(worst, value / limit)
        if self.min_top1 is not None:
            if m.top1 is None:
                raise SpecError("budget on top-1 agreement applies to softmax only")
            miss, allowed = 1.0 - m.top1, 1.0 - self.min_top1
            if allowed > 0:
                worst = max(worst, miss / allowed)
            elif miss > 0:
                worst = math.inf
        return worst

    def meets(self, m: Metrics) -> bool:
        return self.ratio(m) <= 1.0

    def describe(self) -> str:
        parts = []
        for name in _UPPER:
            v = getattr(self, name)
            if v is not None:
                parts.append(f"{name} <= {v:g}")
        if self.min_top1 is not None:
            parts.append(f"top1 >= {self.min_top1:g}")
        return ", ".join(parts)


def evaluate_spec(spec: ApproxSpec, inputs: Sequence[InputSet]) -> Metrics:
    """Worst metrics of ``spec`` over the input sets."""
    if not inputs:
        raise SpecError("need at least one input set to evaluate a spec")
    result: Metrics | None = None
    for s in inputs:
        m = measure(spec, s)
        result = m if result is None else result.worst(m)
    assert result is not None
    return result


def _evaluate_config(config: dict[str, Any], inputs: list[dict[str, Any]]) -> dict[str, Any]:
    """Pure worker function: ``{"metrics": {...}}`` or ``{"error": message}``."""
    try:
        spec = spec_from_config(config)
        m = evaluate_spec(spec, [InputSet.from_dict(d) for d in inputs])
        return {"metrics": m.as_dict()}
    except SpecError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # a bug in one candidate must not stop the search
        return {"error": f"{type(exc).__name__}: {exc}"}


@dataclass
class Candidate:
    """One evaluated spec: worst metrics over the input sets and budget ratio."""

    spec: ApproxSpec
    score: float
    metrics: Metrics | None = None
    ratio: float = math.inf
    error: str = ""

    @property
    def meets(self) -> bool:
        return self.metrics is not None and self.ratio <= 1.0


@dataclass
class TuneResult:
    """Outcome of :func:`tune`."""

    budget: Budget
    met: bool
    best: Candidate | None
    closest: Candidate | None
    evaluated: list[Candidate] = field(default_factory=list)
    space_size: int = 0
    skipped: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    family: str = "7series"
    clock_mhz: float | None = None

    def _at_clock(self) -> str:
        if self.clock_mhz is None:
            return ""
        return f" reaching {self.clock_mhz:g} MHz on ECP5-85k"

    def summary(self) -> str:
        """Human-readable verdict (what was chosen, or that nothing fits)."""
        n = len(self.evaluated)
        if self.met and self.best is not None:
            b = self.best
            assert b.metrics is not None
            return (
                f"cheapest spec meeting {self.budget.describe()} "
                f"(evaluated {n} of {self.space_size} candidates, cheapest first"
                f"{self._at_clock()}):\n"
                f"  {b.spec.describe()}\n"
                f"  cost {b.score:.1f} LUT-eq. ({self.family}); "
                f"max error {b.metrics.max_lsb:.3g} LSB, "
                f"max abs {b.metrics.max_abs:.3g}"
            )
        lines = [
            f"no spec in the search space ({self.space_size} candidates"
            f"{self._at_clock()}) meets {self.budget.describe()}"
        ]
        c = self.closest
        if c is not None and c.metrics is not None:
            lines.append(
                f"  closest: {c.spec.describe()}\n"
                f"  cost {c.score:.1f} LUT-eq. ({self.family}); "
                f"max error {c.metrics.max_lsb:.3g} LSB, "
                f"max abs {c.metrics.max_abs:.3g} ({c.ratio:.3g}x the budget)"
            )
        lines.append("  widen the search (more methods, wider formats, bigger tables) or relax it")
        return "\n".join(lines)


def tune(
    grid: Grid,
    budget: Budget,
    *,
    clock_mhz: float | None = None,
    jobs: int = 1,
    dask: str | None = None,
    executor: cf.Executor | None = None,
    progress: bool = False,
) -> TuneResult:
    """Cheapest spec of ``grid`` whose worst metrics over ``grid.inputs`` meet ``budget``
    (and whose unit reaches ``clock_mhz`` post-route, when given)."""
    from tqdm.auto import tqdm

    if clock_mhz is not None and not (math.isfinite(clock_mhz) and clock_mhz > 0):
        raise SpecError(f"clock {clock_mhz} MHz must be a positive number")
    exp = expand(grid)
    specs = []  # ascending cost
    slow: list[tuple[dict[str, Any], str]] = []
    for s in exp.specs:
        ok, why = meets_clock(s, clock_mhz)
        if ok:
            specs.append(s)
        else:
            slow.append(({"method": s.method, **s.to_config()}, why))
    inputs = [s.to_dict() for s in grid.inputs]
    result = TuneResult(
        budget=budget,
        met=False,
        best=None,
        closest=None,
        space_size=len(specs),
        skipped=exp.skipped + slow,
        family=grid.family,
        clock_mhz=clock_mhz,
    )
    if not specs:
        return result
    closer: Callable[[], None] = lambda: None  # noqa: E731
    if executor is None:
        executor, closer = make_executor(jobs, dask)
    batch = max(1, jobs)
    found_score: float | None = None
    bar = tqdm(total=len(specs), disable=not progress, desc="tune", unit="spec")
    try:
        i = 0
        while i < len(specs):
            chunk = specs[i : i + batch]
            if found_score is not None:
                chunk = [s for s in chunk if rank_score(s, grid.family) <= found_score]
                if not chunk:
                    break
            futs = [executor.submit(_evaluate_config, s.to_config(), inputs) for s in chunk]
            for spec, fut in zip(chunk, futs, strict=True):
                out = fut.result()
                cand = Candidate(spec=spec, score=rank_score(spec, grid.family))
                if "error" in out:
                    cand.error = out["error"]
                else:
                    cand.metrics = Metrics(**out["metrics"])
                    cand.ratio = budget.ratio(cand.metrics)
                result.evaluated.append(cand)
                bar.update(1)
                if cand.meets and found_score is None:
                    found_score = cand.score
            i += len(specs[i : i + batch])
    finally:
        bar.close()
        closer()
    scored = [c for c in result.evaluated if c.metrics is not None]
    meeting = [c for c in scored if c.meets]
    if meeting:
        result.met = True
        result.best = min(meeting, key=lambda c: (c.score, c.ratio))
    if scored:
        result.closest = min(scored, key=lambda c: (c.ratio, c.score))
    return result
