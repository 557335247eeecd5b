"""Throughput of :meth:`hwapprox.fixed.FixedFormat.quantize` against plain numpy.

Quantises N float64 values (default 10 million, seeded, spread over 1.25x the
format's range so that some saturate) to a few formats and prints values/s
next to the baseline ``np.clip(np.round(x * 2**F), lo, hi)`` measured in the
same run on the same array. The baseline is *not* ap_fixed-exact (it rounds
ties to even and returns floats); it is the floor for what numpy can do in
three passes. Best of ``--repeat`` interleaved runs each.

Usage: ``python benchmarks/bench_fixed.py [--n 10000000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from hwapprox.fixed import FixedFormat

FORMATS = (
    "ap_fixed<16,6>",
    "ap_fixed<16,6,AP_RND,AP_SAT>",
    "ap_fixed<8,3,AP_RND_CONV,AP_SAT_SYM>",
    "ap_ufixed<12,0,AP_RND,AP_SAT>",
)


def best_times(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Smallest wall time of each function over ``repeat`` interleaved rounds, in seconds.

    Interleaving keeps a load change on the shared machine from favouring one side.
    """
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000, help="values per format")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per item (best kept)")
    args = ap.parse_args()
    rng = np.random.default_rng(2024)
    unit = rng.uniform(-1.25, 1.25, size=args.n)
    print(f"N = {args.n:,} float64 values, best of {args.repeat}")
    print(
        "| format | hwapprox quantize (Mvalues/s) | numpy clip(round) (Mvalues/s) "
        "| time ratio (core/baseline) |"
    )
    print("|---|---:|---:|---:|")
    for text in FORMATS:
        fmt = FixedFormat.parse(text)
        x = unit * float(2**fmt.int_bits)
        scale, lo, hi = 2.0**fmt.frac_bits, fmt.min_raw, fmt.max_raw
        t_core, t_base = best_times(
            [
                lambda fmt=fmt, x=x: fmt.quantize(x),
                lambda x=x, scale=scale, lo=lo, hi=hi: np.clip(np.round(x * scale), lo, hi),
            ],
            args.repeat,
        )
        print(
            f"| `{text}` | {args.n / t_core / 1e6:.1f} | {args.n / t_base / 1e6:.1f} "
            f"| {t_core / t_base:.2f} |"
        )


if __name__ == "__main__":
    main()
