"""``hwapprox validate`` over the export corpus (``tests/corpus``, torch exports).

Per model: sites found (softmax/GELU/LayerNorm), masks and their roles,
then (1) the defaults (no config: online / edgemoe / rsqrt_lut, calibrated
formats) and (2) ``--budget`` with the metric that fits the output (pooled
cosine 0.999 for embeddings, per-sample cosine 0.999 otherwise): sites left
float, end-to-end cosines, top-1, total cost score, time. Prints Markdown for
``benchmarks/results/export.md``.

Usage: ``.venv/bin/python benchmarks/bench_corpus.py [--skip-budget]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from hwapprox.export.validate import import_model, validate

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"


def _f(v: Any, digits: int = 6) -> str:
    if v is None:
        return "-"
    return f"{v:.{digits}f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-budget", action="store_true")
    args = ap.parse_args()
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    rows = []
    for e in manifest["models"]:
        with np.load(CORPUS / e["inputs"]) as z:
            feeds = {k: z[k] for k in z.files}
        t0 = time.perf_counter()
        imp = import_model(CORPUS / e["file"])
        t_imp = time.perf_counter() - t0
        attn = [s for s in imp.sites if s.operator.value not in ("gelu", "layernorm")]
        kinds = sorted({s.kind for s in attn})
        ops = "/".join(
            [f"{len(attn)}" + ("" if kinds in ([], ["softmax"]) else f" {'+'.join(kinds)}")]
            + [str(sum(s.operator.value == o for s in imp.sites)) for o in ("gelu", "layernorm")]
        )
        t0 = time.perf_counter()
        d = validate(imp, inputs=feeds)
        t_def = time.perf_counter() - t0
        roles = sorted({r for v in d.trace.mask_roles.values() for r in v}) or ["-"]
        emb = e["output_kind"] == "embedding"
        row = {
            "file": e["file"],
            "exporter": f"{e['exporter']} {e['opset']}",
            "sites": ops,
            "mask": "+".join(roles),
            "def_float": sum(v is None for v in d.specs.values()),
            "def_warn": len(d.warnings),
            "def_cos": d.end_to_end["cosine_min"],
            "def_pooled": d.end_to_end["pooled_cosine_min"],
            "def_top1": d.end_to_end["top1"],
            "t_def": t_def,
            "t_imp": t_imp,
        }
        if not args.skip_budget:
            budget = "pooled_cosine=0.999" if emb else "cosine=0.999"
            t0 = time.perf_counter()
            b = validate(imp, inputs=feeds, budget=budget)
            row.update(
                budget=budget,
                b_float=sum(v is None for v in b.specs.values()),
                b_cos=b.end_to_end["cosine_min"],
                b_pooled=b.end_to_end["pooled_cosine_min"],
                b_cost=sum(s.cost().score() for s in b.specs.values() if s is not None),
                d_cost=sum(s.cost().score() for s in d.specs.values() if s is not None),
                t_b=time.perf_counter() - t0,
            )
        rows.append(row)
        print(json.dumps(row, default=str), flush=True)
    print()
    print(
        "| model | exporter, opset | sites attention/gelu/ln | masks | defaults: float sites | "
        "warnings | cosine min | pooled min | top-1 | time s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['file']} | {r['exporter']} | {r['sites']} | {r['mask']} | {r['def_float']} | "
            f"{r['def_warn']} | {_f(r['def_cos'])} | {_f(r['def_pooled'])} | "
            f"{_f(r['def_top1'], 3)} | {r['t_def']:.2f} |"
        )
    if not args.skip_budget:
        print()
        print(
            "| model | budget | float sites | cosine min | pooled min | cost score "
            "(defaults -> budget) | time s |"
        )
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['file']} | {r['budget']} | {r['b_float']} | {_f(r['b_cos'])} | "
                f"{_f(r['b_pooled'])} | {r['d_cost']:.0f} -> {r['b_cost']:.0f} | {r['t_b']:.1f} |"
            )


if __name__ == "__main__":
    main()
