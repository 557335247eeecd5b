"""``hwapprox hls csim`` with no config on every model of the export corpus.

For each torch export in ``tests/corpus`` (manifest order): match the encoder
blocks, calibrate (default methods, calibrated formats; the model's own padded
batch), convert with hls4ml (Vivado backend, ``--io``), build the C-sim
library with g++ (:func:`hwapprox.hls.project.compile_project`: -O1, cached by
content; ``--cold`` uses an empty cache), C-simulate the real block inputs
(with their key masks) plus an all-zero and an all-maximum sample, and
compare with the Python model bit for bit. Also: the fixed-point design
against the float model (real tokens).

Usage: ``.venv/bin/python benchmarks/bench_hls_corpus.py [--only bert_ts14,...]
[--io io_parallel|io_stream] [--cold]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"


def run_one(entry: dict, work: Path, io_type: str) -> dict:
    """One corpus model through prepare / convert / compile / csim."""
    from hwapprox.hls.project import compile_project, convert, csim_check, prepare_model

    t0 = time.perf_counter()
    prep = prepare_model(CORPUS / entry["file"], None, inputs=CORPUS / entry["inputs"])
    t_prep = time.perf_counter() - t0
    log = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(log):
        hmodel = convert(prep, work / entry["file"].replace(".onnx", ""), io_type=io_type)
        compile_project(hmodel, write=False)
    t_build = time.perf_counter() - t0
    fmt = prep.in_fmt
    real = np.asarray(prep.samples)
    s, d = prep.item_shape
    x = np.concatenate([real, np.zeros((1, s, d), np.int64), np.full((1, s, d), fmt.max_raw)])
    km = None
    if prep.masked:
        km = np.concatenate([np.asarray(prep.key_mask), np.ones((2, s), bool)])
    t0 = time.perf_counter()
    rep = csim_check(hmodel, prep, x, compile=False, key_mask=km)
    t_sim = time.perf_counter() - t0
    acc = prep.accuracy() or {}
    b = prep.blocks[0]
    kind = ("pre-LN" if b.prenorm else "post-LN") + (", causal" if b.causal else "")
    kind += ", key mask" if b.masked else ""
    return {
        "file": entry["file"],
        "blocks": f"{len(prep.blocks)} x ({kind})",
        "S x D": f"{s} x {d}",
        "values": rep.values,
        "bit_exact": rep.bit_exact,
        "mismatches": rep.mismatches,
        "token_cosine_min": acc.get("token_cosine_min"),
        "t_prepare": t_prep,
        "t_build": t_build,
        "t_csim": t_sim,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated file stems")
    ap.add_argument("--io", default="io_parallel", choices=["io_parallel", "io_stream"])
    ap.add_argument("--cold", action="store_true", help="an empty g++ cache (cold builds)")
    args = ap.parse_args()
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    models = json.loads((CORPUS / "manifest.json").read_text())["models"]
    work = Path(tempfile.mkdtemp(prefix="hwapprox_hls_corpus_"))
    if args.cold:
        os.environ["HWAPPROX_CACHE"] = str(work / "cache")
    rows = []
    for e in models:
        if only and e["file"].removesuffix(".onnx") not in only:
            continue
        try:
            r = run_one(e, work, args.io)
        except Exception as exc:  # report and go on: a benchmark row per model
            r = {"file": e["file"], "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        rows.append(r)
        print(json.dumps(r, default=str), flush=True)
    print()
    print(
        "| model | blocks | S x D | values | bit-exact | design vs float: token cosine min "
        "| prepare s | g++ build s | C-sim s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['file']} | ERROR: {r['error']} | | | | | | | |")
            continue
        cos = "-" if r["token_cosine_min"] is None else f"{r['token_cosine_min']:.6f}"
        exact = "yes" if r["bit_exact"] else f"NO ({r['mismatches']})"
        print(
            f"| {r['file']} | {r['blocks']} | {r['S x D']} | {r['values']} | {exact} | {cos} | "
            f"{r['t_prepare']:.1f} | {r['t_build']:.1f} | {r['t_csim']:.1f} |"
        )


if __name__ == "__main__":
    main()
