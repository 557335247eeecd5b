"""pRMSNorm (rmsnorm partial_k, partial): accuracy of the integer model against its own float64
reference and the float64 gap to full-row RMSNorm, per width and k (rows of 64, N(0,1),
2000 rows, seed 1; 8-bit: eps 1e-3, rsqrt_frac_bits 14, norm_frac_bits 10)."""

import numpy as np

from hwapprox.approx.registry import make_spec

rows = []
for w in (8, 12, 16):
    for k in (0, 8, 16, 32):
        f = {
            "in_fmt": f"ap_fixed<{w},4>",
            "out_fmt": f"ap_fixed<{w},4,AP_RND,AP_SAT>",
            "max_n": 64,
            "partial_k": k,
        }
        if w == 8:
            f |= {
                "gamma_fmt": "ap_fixed<8,2>",
                "beta_fmt": "ap_fixed<8,2>",
                "eps": 1e-3,
                "rsqrt_frac_bits": 14,
                "norm_frac_bits": 10,
            }
        s = make_spec("layernorm", "rmsnorm", **f)
        rng = np.random.default_rng(1)
        x = s.in_fmt.quantize(rng.normal(0, 1, (2000, 64)))
        xf = s.in_fmt.to_float(x)
        y = s.out_fmt.to_float(s.model(x))
        ref = s.reference(xf)
        full = make_spec("layernorm", "rmsnorm", **{**f, "partial_k": 0}).reference(xf)
        ins = np.abs(ref) < s.out_fmt.max
        e = np.abs(y - ref)[ins].max() / float(s.out_fmt.lsb)
        d = np.abs(ref - full).max()
        rows.append((w, k, e, d, 1 - ins.mean()))
print(
    "| in/out bits | k (of 64) | max error vs its reference (LSB) "
    "| max abs(pRMSNorm - RMSNorm) float64 | saturated |"
)
print("|---|---|---|---|---|")
for w, k, e, d, sat in rows:
    print(f"| {w} | {k or 64} | {e:.2f} | {d:.3f} | {sat:.4f} |")

# partial = p (the paper's k = ceil(p·N)): error vs its own float64 reference and the
# gap to full-row RMSNorm, per p, at N = 64 and at N = 100 (where p·N is not whole)
prow = []
for w in (8, 16):
    for n in (64, 100):
        for p in (0.0625, 0.125, 0.25, 0.3125, 0.5, 0.75, 1.0):
            f = {
                "in_fmt": f"ap_fixed<{w},4>",
                "out_fmt": f"ap_fixed<{w},4,AP_RND,AP_SAT>",
                "max_n": 128,
                "partial": p,
            }
            if w == 8:
                f |= {
                    "gamma_fmt": "ap_fixed<8,2>",
                    "beta_fmt": "ap_fixed<8,2>",
                    "eps": 1e-3,
                    "rsqrt_frac_bits": 14,
                    "norm_frac_bits": 10,
                }
            s = make_spec("layernorm", "rmsnorm", **f)
            rng = np.random.default_rng(1)
            x = s.in_fmt.quantize(rng.normal(0, 1, (2000, n)))
            xf = s.in_fmt.to_float(x)
            y = s.out_fmt.to_float(s.model(x))
            ref = s.reference(xf)
            full = make_spec("layernorm", "rmsnorm", **{**f, "partial": 1.0}).reference(xf)
            ins = np.abs(ref) < s.out_fmt.max
            e = np.abs(y - ref)[ins].max() / float(s.out_fmt.lsb)
            gap = np.abs(ref - full)
            prow.append((w, n, p, s.stat_count(n), e, gap.mean(), gap.max(), 1 - ins.mean()))
print()
print(
    "| in/out bits | N | p | k = ceil(p·N) | max error vs its reference (LSB) "
    "| mean / max abs(pRMSNorm - RMSNorm) float64 | saturated |"
)
print("|---|---|---|---|---|---|---|")
for w, n, p, k, e, gm, gx, sat in prow:
    print(f"| {w} | {n} | {p:g} | {k} | {e:.2f} | {gm:.3f} / {gx:.3f} | {sat:.4f} |")
