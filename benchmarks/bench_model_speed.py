"""Model throughput: elements/s of every method's integer model vs the float64 reference.

For each registered method (default spec), times ``spec.model(raw)`` on one
seeded input array and, in the same run on the same array, the operator's
float64 numpy reference ``spec.reference(x)`` (x = the real values of the
same codes). Prints elements/s for both and the ratio reference/model (the
target is <= 5x for elementwise and vectorised rowwise methods; methods that
walk the row element by element, like an online recurrence, are marked by
the ratio, not excused). Best of ``--repeat`` runs after one warm-up call
(which builds and caches tables).

Inputs: softmax Gaussian sigma = 2 on rows of 64 (LayerNorm: mean 1, random
gamma/beta); GELU uniform over its input format; ``--elements`` total
(default 2**18).

Usage: ``python benchmarks/bench_model_speed.py [--elements 262144] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

from hwapprox.approx.base import ApproxSpec
from hwapprox.approx.inputs import InputSet
from hwapprox.approx.registry import get_method, list_methods


def best_time(fn: Callable[[], object], repeat: int) -> float:
    """Smallest wall time of ``repeat`` calls, in seconds (after one warm-up)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=1 << 18)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--n", type=int, default=64, help="row length (softmax, LayerNorm)")
    args = ap.parse_args(argv)
    rows = max(1, args.elements // args.n)
    print(f"{rows * args.n} elements per call (rows of {args.n}), best of {args.repeat}\n")
    print("| operator | method | model Melem/s | float64 ref Melem/s | ref/model |")
    print("|---|---|---|---|---|")
    for op, methods in list_methods().items():
        for m in methods:
            spec = get_method(op, m)()
            if op == "gelu":
                iset = InputSet(dist="uniform", rows=rows, n=args.n)
            elif op == "layernorm":
                iset = InputSet(sigma=2.0, mean=1.0, rows=rows, n=args.n, affine="random")
            else:
                iset = InputSet(sigma=2.0, rows=rows, n=args.n)
            try:
                r_model, r_ref = rates(spec, iset, args.repeat)
            except Exception as exc:  # report a broken model, keep measuring the rest
                print(f"| {op} | {m} | error: {type(exc).__name__}: {exc} | | |")
                continue
            print(f"| {op} | {m} | {r_model:.2f} | {r_ref:.2f} | {r_ref / r_model:.2f}x |")


def rates(spec: ApproxSpec, iset: InputSet, repeat: int) -> tuple[float, float]:
    """(model, reference) throughput in millions of elements per second."""
    batch = iset.generate(spec)
    n_el = batch.raw.size
    t_model = best_time(lambda: spec.model(batch.raw, **batch.model_kw), repeat)
    t_ref = best_time(lambda: spec.reference(batch.x, **batch.ref_kw), repeat)
    return n_el / t_model / 1e6, n_el / t_ref / 1e6


if __name__ == "__main__":
    main()
