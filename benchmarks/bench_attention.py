"""The fused single-pass attention row against the two-pass schedule, at equal formats.

For N = 64..1024 keys (d_k = d_v = 64, scale 1/8): rows of q, K, V drawn from
N(0, sigma) at sigma = 1 (scores of std 1) and 2 (std 4: peaked rows), plus one-hot rows (one
key far above the rest) and padded rows (the last half of the keys masked).
Each row goes through :meth:`AttentionRowSpec.model` (fused: running m, d and
D_v accumulators) and :meth:`AttentionRowSpec.two_pass_model` (the online
softmax of the buffered score row, then P·V), both against the float64
``softmax(q·kᵀ/8)·v``: max and mean |error| in output LSB. Then the storage per
query row (:meth:`AttentionRowSpec.buffer_bits`) and an output-width sweep
(W = 8, 10, 12, 16 with the accumulator and exp formats fixed).

Usage: ``.venv/bin/python benchmarks/bench_attention.py [--rows 64]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hwapprox.approx.attention import AttentionRowSpec
from hwapprox.fixed import FixedFormat

D = DV = 64
NS = (64, 128, 256, 512, 1024)


def rows(sp: AttentionRowSpec, kind: str, n: int, r: int, seed: int):
    rng = np.random.default_rng(seed)
    sigma = 2.0 if kind == "sigma2" else 1.0
    q = rng.normal(0, sigma, (r, D))
    k = rng.normal(0, sigma, (r, n, D))
    v = rng.normal(0, 1, (r, n, DV))
    mask = None
    if kind == "one_hot":  # one key aligned with q: its score ~ |q|^2/8 >> the others
        k[:, n // 3] = q * 1.5
    if kind == "padded":
        mask = np.zeros((r, n), bool)
        mask[:, n // 2 :] = True
    return sp.q_fmt.quantize(q), sp.k_fmt.quantize(k), sp.v_fmt.quantize(v), mask


def err_lsb(sp: AttentionRowSpec, y: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    e = np.abs(sp.out_fmt.to_float(y) - ref) / 2.0**-sp.out_fmt.frac_bits
    return float(e.max()), float(e.mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=64)
    args = ap.parse_args()
    sp = AttentionRowSpec(scale=1 / 8)
    print(f"spec: {sp.describe()}\n")
    print("| N | rows | saturated scores | fused max LSB | fused mean LSB | two-pass max LSB "
          "| two-pass mean LSB | fused s | two-pass s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for n in NS:
        for kind in ("sigma1", "sigma2", "one_hot", "padded"):
            q, k, v, mask = rows(sp, kind, n, args.rows, n)
            ref = sp.reference(q, k, v, mask)
            t = time.perf_counter()
            yf = sp.model(q, k, v, mask)
            tf = time.perf_counter() - t
            t = time.perf_counter()
            y2 = sp.two_pass_model(q, k, v, mask)
            t2 = time.perf_counter() - t
            fm, fa = err_lsb(sp, yf, ref)
            tm, ta = err_lsb(sp, y2, ref)
            s = sp.scores(q, k)
            sat = int(np.sum((s == sp.score_fmt.max_raw) | (s == sp.score_fmt.min_raw)))
            print(f"| {n} | {kind} | {sat} | {fm:.2f} | {fa:.3f} | {tm:.2f} | {ta:.3f} | "
                  f"{tf:.2f} | {t2:.2f} |", flush=True)  # fmt: skip
    print("\nStorage per query row (bits; d_v = 64):\n")
    print("| N | fused (m, d, o) | two-pass (scores + V + m, d, acc) | ratio |")
    print("|---|---|---|---|")
    for n in NS:
        b = sp.buffer_bits(n, DV)
        print(f"| {n} | {b['fused']} | {b['two_pass']} | {b['two_pass'] / b['fused']:.0f}x |")
    print(
        "\nOutput width sweep (N = 256, sigma 1; out ap_fixed<W,4>; the other formats as above):\n"
    )
    print("| out_fmt | fused max LSB | two-pass max LSB |")
    print("|---|---|---|")
    for w in (8, 10, 12, 16):
        spw = sp.with_(out_fmt=FixedFormat.parse(f"ap_fixed<{w},4,AP_RND,AP_SAT>"))
        q, k, v, _ = rows(spw, "sigma1", 256, args.rows, 7)
        ref = spw.reference(q, k, v)
        fm, _ = err_lsb(spw, spw.model(q, k, v), ref)
        tm, _ = err_lsb(spw, spw.two_pass_model(q, k, v), ref)
        print(f"| {spw.out_fmt} | {fm:.2f} | {tm:.2f} |")


if __name__ == "__main__":
    main()
