"""Every transformer family of tests/corpus/hf through ``validate`` and ``hls csim``.

For each export (scripts/make_corpus_hf.py: the ``transformers`` modeling code,
TorchScript opset 17 and dynamo opset 18), on the model's own sample batch:

* ``validate`` with the defaults (no config): every site approximated with the
  default method and calibrated formats; the output's per-sample cosine (min over
  samples, padded tokens left out) against onnxruntime;
* ``hls csim`` with no config: match the blocks, calibrate, convert with hls4ml
  (Vivado backend, io_parallel), build the C-sim library with g++ (cached by
  content), C-simulate the real block inputs (with their key masks) plus an
  all-zero and an all-maximum sample, compare raw codes with the Python block
  models (``bit-exact`` or the mismatch count); where no block matches, the
  matcher's reason for the first refused softmax site.

Writes ``benchmarks/results/families.md``.

Usage: ``.venv/bin/python benchmarks/bench_families.py [--only gpt2_ts17,...]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus" / "hf"
OUT = ROOT / "benchmarks" / "results" / "families.md"


def _feeds(entry: dict) -> dict[str, np.ndarray]:
    with np.load(CORPUS / entry["inputs"]) as z:
        return {k: z[k] for k in z.files}


def validate_row(entry: dict) -> dict:
    from hwapprox.export.validate import validate

    t0 = time.perf_counter()
    r = validate(CORPUS / entry["file"], inputs=_feeds(entry))
    return {
        "sites": len(r.specs),
        "approximated": sum(v is not None for v in r.specs.values()),
        "cosine_min": r.end_to_end["cosine_min"],
        "t_validate": time.perf_counter() - t0,
    }


def hls_row(entry: dict, work: Path) -> dict:
    from hwapprox.export.blockmatch import match_blocks
    from hwapprox.export.graph import load_model
    from hwapprox.hls.project import compile_project, convert, csim_check, prepare_model

    errors: dict[str, str] = {}
    blocks = match_blocks(load_model(CORPUS / entry["file"]), _feeds(entry), errors=errors)
    if errors:
        site, why = next(iter(errors.items()))
        return {"blocks": len(blocks), "refused": f"softmax {site}: {why}"}
    t0 = time.perf_counter()
    prep = prepare_model(CORPUS / entry["file"], None, inputs=CORPUS / entry["inputs"])
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        hmodel = convert(prep, work / entry["file"].replace(".onnx", ""), io_type="io_parallel")
        compile_project(hmodel, write=False)
    t_build = time.perf_counter() - t0
    s, d = prep.item_shape
    real = np.asarray(prep.samples)
    top = np.full((1, s, d), prep.in_fmt.max_raw)
    x = np.concatenate([real, np.zeros((1, s, d), np.int64), top])
    km = None
    if prep.masked:
        km = np.concatenate([np.asarray(prep.key_mask), np.ones((2, s), bool)])
    rep = csim_check(hmodel, prep, x, compile=False, key_mask=km)
    kind = "; ".join(dict.fromkeys(b.kind for b in prep.blocks))  # each distinct kind once
    acc = prep.accuracy() or {}
    return {
        "blocks": len(prep.blocks),
        "kind": kind,
        "values": rep.values,
        "bit_exact": rep.bit_exact,
        "mismatches": rep.mismatches,
        "t_build": t_build,
        "design_token_cosine_min": acc.get("token_cosine_min"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated file stems")
    ap.add_argument("--cold", action="store_true", help="an empty g++ cache (cold builds)")
    args = ap.parse_args()
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="hwapprox_families_"))
    if args.cold:
        os.environ["HWAPPROX_CACHE"] = str(work / "cache")
    rows = []
    todo = [e for e in manifest["models"] if not only or e["file"].removesuffix(".onnx") in only]
    for e in todo:
        row: dict = {"file": e["file"], "family": e["family"], "notes": e["notes"]}
        for part, fn in (("validate", validate_row), ("hls", lambda x: hls_row(x, work))):
            try:
                row.update(fn(e))
            except Exception as exc:  # a row per model, errors included
                row[f"{part}_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        rows.append(row)
        print(json.dumps(row, default=str), flush=True)
        text = table(rows, manifest, len(todo), args.cold)
        if not only:  # written after every row: an interrupted run keeps what it measured
            OUT.write_text(text + _kept_tail())
    if rows:
        print(text)


#: sections below this line in ``OUT`` come from other benchmarks: a rerun keeps them
KEEP = "<!-- sections below come from other benchmarks; bench_families.py keeps them -->"


def _kept_tail() -> str:
    """``OUT`` from the :data:`KEEP` line on ("" when there is none)."""
    old = OUT.read_text() if OUT.exists() else ""
    i = old.find(KEEP)
    return "" if i < 0 else "\n" + old[i:]


def table(rows: list[dict], manifest: dict, total: int, cold: bool) -> str:
    """The Markdown of ``rows`` (of ``total`` exports)."""
    lines = [
        "# Transformer families: validate and hls csim with no config",
        "",
        f"Made by `benchmarks/bench_families.py{' --cold' if cold else ''}` on "
        f"{platform.machine()} "
        f"({len(rows)} of {total} exports of tests/corpus/hf: transformers "
        f"{manifest['transformers']}, torch {manifest['torch']}; 2 layers, width 32, 2 heads; "
        "text batch 2 x 8 tokens, one sample right-padded; images 2 x 3 x 24 x 24 in "
        "8-pixel patches; Whisper 2 x 8 mel bins x 16 frames).",
        "",
        "- validate: defaults (online softmax, edgemoe GELU, rsqrt_lut LayerNorm, rmsnorm "
        "RMSNorm; formats calibrated at 16 bits); cosine = min over samples of the output's "
        "per-sample cosine vs onnxruntime (padded tokens left out).",
        "- hls csim: no config; hls4ml io_parallel; values compared = raw output codes of the "
        "C simulation and the Python block models (the real block inputs plus an all-zero "
        "and an all-maximum sample); build s = prepare + hls4ml convert + g++ build (g++ "
        "cached by content; `--cold`: an empty cache at the start of the run, so the first "
        "export of a model pays the build; its other export calibrates to the same blocks "
        "and is a cache hit, < 1 s).",
        "",
        "| export | family | validate: sites approx. | cosine min | hls csim | values "
        "compared | build s | notes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "validate_error" in r:
            val, cos = f"ERROR {r['validate_error']}", "-"
        else:
            val, cos = f"{r['approximated']}/{r['sites']}", f"{r['cosine_min']:.6f}"
        notes = r["notes"]
        if "hls_error" in r:
            hls, vals, build = f"error: {r['hls_error']}", "-", "-"
        elif "refused" in r:
            hls, vals, build = "not converted", "-", "-"
            notes += f". Refused: {r['refused']}"
        else:
            hls = (
                "bit-exact" if r["bit_exact"] else f"NOT bit-exact ({r['mismatches']} differ)"
            ) + f", {r['blocks']} x ({r['kind']})"
            vals, build = str(r["values"]), f"{r['t_build']:.1f}"
        lines.append(
            f"| {r['file']} | {r['family']} | {val} | {cos} | {hls} | {vals} | {build} | "
            f"{notes.replace('|', '/')} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
