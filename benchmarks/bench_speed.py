"""Speed of the integer models and of ``hwapprox validate`` against float numpy and
onnxruntime, each ratio measured side by side in one run (issue 27).

Part ``ops``: every registered method's integer model (``spec.model`` on raw
codes) against a float64 numpy implementation of the same operator on the
same array (the real values of those codes), at the method's default formats
(16-bit inputs for most) and an 8-bit variant where the method takes one,
rows of N = 64, 256 and 1024, 2^20 elements per call. Float baselines:
softmax ``exp(x - max) / Σ`` (stable), GELU the tanh form
``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`` (numpy has no erf; the
erf reference through ``math.erf`` is 10x slower and would flatter the
models), LayerNorm ``(x - μ)/√(σ² + ε)·γ + β``, RMSNorm ``x/√(mean x² + ε)·γ``,
sigmoid ``1/(1 + e^-(x+b))``, ReLU attention ``max(x, 0)/n``. The two timings
alternate, best of ``--repeat`` after a warm-up (which builds the memo tables).

Part ``validate``: the embedded example, a 6 x 384 encoder (sequence 128,
batch 8) and a 12 x 384 ViT-S shape (sequence 197, batch 4; a BERT-style
graph of the same sizes: decomposed LayerNorm, Erf GELU), every site
approximated with the defaults. Per shape: onnxruntime's float run of the
model (warm, median of 3; default session options), ``validate`` as a whole
(import excluded: calibration run, formats, emulation, per-site and end-to-end
metrics) and one emulation run alone (``Emulator.run`` with validate's specs: inside
validate the per-site reports run beside it, so its own timing is not the emulation's),
alternating, median of ``--runs``; and the same in CPU seconds of all threads
(``time.process_time``; onnxruntime in a session without spinning workers).

Part ``budget``: ``validate --budget top1=1,cosine=0.999`` on the 6 x 384
encoder after a warm-up search, serial and with ``jobs=2`` (forked workers)
alternating, best of two each, and whether the results are identical.

Part ``batches``: calibration streamed over 1 and 16 ``.npz`` batches of the same
size (8 sequences of 128 tokens, the 6 x 384 encoder), each in a fresh process:
time and peak RSS (the memory should not grow with the batch count).

Usage: ``.venv/bin/python benchmarks/bench_speed.py [--parts ops,validate,budget,batches]
[--only softmax,layernorm/ibert] [--repeat 7] [--runs 3] [--out benchmarks/results/speed.md]``
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hwapprox.approx.base import ApproxSpec, SpecError
from hwapprox.approx.registry import list_methods, make_spec

HERE = Path(__file__).resolve().parent
ELEMENTS = 1 << 20


def best_pair(a: Callable[[], object], b: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best wall times of ``a`` and ``b`` over ``repeat`` alternating calls (one warm-up)."""
    a()
    b()
    ta = tb = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        a()
        ta = min(ta, time.perf_counter() - t0)
        t0 = time.perf_counter()
        b()
        tb = min(tb, time.perf_counter() - t0)
    return ta, tb


# -- float64 numpy baselines of the same operators ----------------------------------------
def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def _layernorm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def _rmsnorm(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-5) * g


def _narrow(spec: ApproxSpec) -> ApproxSpec | None:
    """An 8-bit-input, 8-bit-output variant of ``spec`` (None if the method refuses)."""
    ib = min(spec.in_fmt.int_bits, 4)
    out = spec.out_fmt
    try:
        return spec.replace(
            in_fmt=f"ap_fixed<8,{ib},{spec.in_fmt.rounding.value},{spec.in_fmt.overflow.value}>",
            out_fmt=(
                f"{'ap_fixed' if out.signed else 'ap_ufixed'}<8,{min(out.int_bits, 3)},"
                f"{out.rounding.value},{out.overflow.value}>"
            ),
        )
    except (SpecError, ValueError, TypeError):
        return None


def op_rows(repeat: int, only: set[str] | None = None) -> list[dict[str, Any]]:
    """The integer-model rows; ``only``: operators (``softmax``) or ``op/method`` names
    (``layernorm/ibert``) to time, None for every method."""
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    for op, methods in list_methods().items():
        for m in methods:
            if only is not None and str(op) not in only and f"{op}/{m}" not in only:
                continue
            base = make_spec(op, m)
            for label, spec in (("default", base), ("8-bit", _narrow(base))):
                for n in (64, 256, 1024):
                    r = {"op": op, "method": m, "formats": label, "n": n}
                    if spec is None:
                        rows.append({**r, "note": "refuses 8-bit formats"})
                        break
                    r["in_fmt"] = str(spec.in_fmt)
                    try:
                        r.update(_time_op(spec, n, rng, repeat))
                    except SpecError as exc:
                        r["note"] = f"refused: {exc}"[:80]
                    rows.append(r)
                    print(_fmt_op_row(r), flush=True)
    return rows


def _time_op(spec: ApproxSpec, n: int, rng: np.random.Generator, repeat: int) -> dict[str, Any]:
    op = str(spec.operator)
    shape = (ELEMENTS // n, n)
    fmt = spec.in_fmt
    span = float(min(fmt.max, 4.0 if op in ("gelu", "sigmoid_attention") else 8.0))
    raw = fmt.quantize(rng.uniform(-span, span, shape) if op != "softmax" else
                       rng.normal(0, span / 4, shape))  # fmt: skip
    x = fmt.to_float(raw)
    kw: dict[str, Any] = {}
    if op == "softmax":
        ref: Callable[[], object] = lambda: _softmax(x)  # noqa: E731
    elif op == "gelu":
        ref = lambda: _gelu_tanh(x)  # noqa: E731
    elif op == "layernorm":
        g, b = rng.normal(1, 0.1, n), rng.normal(0, 0.1, n)
        if getattr(spec, "gamma_fmt", None) is not None:
            kw = {"gamma": spec.gamma_fmt.quantize(g), "beta": spec.beta_fmt.quantize(b)}
            if spec.method == "rmsnorm":
                kw = {"gamma": spec.gamma_fmt.quantize(g)}
        ref = (
            (lambda: _rmsnorm(x, g)) if spec.method == "rmsnorm" else (lambda: _layernorm(x, g, b))
        )
    elif op == "sigmoid_attention":
        ref = lambda: 1.0 / (1.0 + np.exp(-(x - np.log(128.0))))  # noqa: E731
    else:
        ref = lambda: np.maximum(x, 0.0) / 128.0  # noqa: E731
    t_model, t_ref = best_pair(lambda: spec.model(raw, **kw), ref, repeat)
    return {"model_ms": t_model * 1e3, "float_ms": t_ref * 1e3, "ratio": t_model / t_ref}


def _fmt_op_row(r: dict[str, Any]) -> str:
    head = f"| {r['op']} | {r['method']} | {r['formats']} | {r['n']} |"
    if "ratio" not in r:
        return f"{head} {r.get('in_fmt', '')} | {r.get('note', '')} | | |"
    return f"{head} {r['in_fmt']} | {r['model_ms']:.2f} | {r['float_ms']:.2f} | {r['ratio']:.2f}x |"


# -- validate -------------------------------------------------------------------------------
def _shapes() -> list[tuple[str, Any, dict[str, np.ndarray]]]:
    from hwapprox.export import example
    from hwapprox.export.builders import EncoderShape, bert_encoder, sample_inputs

    z = np.load(example.inputs_path())
    out = [("embedded example (2 x 64, seq 16, 16 seqs)", example.model_path(), dict(z))]
    enc = EncoderShape(layers=6, width=384, heads=6, ffn=1536, seq=128, batch=8)
    out.append(
        ("6 x 384 encoder (seq 128, batch 8)", bert_encoder(enc, layernorm="decomposed"),
         sample_inputs(enc, batch=8))
    )  # fmt: skip
    vit = EncoderShape(layers=12, width=384, heads=6, ffn=1536, seq=197, batch=4)
    out.append(
        ("12 x 384 ViT-S shape (seq 197, batch 4)", bert_encoder(vit, layernorm="decomposed"),
         sample_inputs(vit, batch=4))
    )  # fmt: skip
    return out


def _pairs(
    a: Callable[[], object], b: Callable[[], object], n: int, warm: int, cpu: bool = False
) -> tuple[list[float], list[float]]:
    """``n`` alternating runs of ``a`` and ``b`` after ``warm`` unmeasured pairs: their
    wall seconds (CPU seconds of the process with ``cpu``)."""
    clock = time.process_time if cpu else time.perf_counter
    for _ in range(warm):
        a()
        b()
    ta, tb = [], []
    for _ in range(n):
        t0 = clock()
        a()
        ta.append(clock() - t0)
        t0 = clock()
        b()
        tb.append(clock() - t0)
    return ta, tb


def validate_rows(runs: int) -> list[dict[str, Any]]:
    import onnxruntime as ort

    from hwapprox.export.emulate import emulation_threads, make_session
    from hwapprox.export.validate import import_model, validate

    rows = []
    for label, model, feeds in _shapes():
        imp = import_model(model)
        # onnxruntime's default session, except that its workers stop spinning when a run
        # ends (as validate's calibration trace does): a pool left spinning after one
        # call takes the second core from the other's next run (measured: the baseline
        # 0.80 -> 0.96 ms beside a spinning trace, validate 4.9 -> 5.2 ms beside a
        # spinning baseline); its own run time is unchanged (0.66-0.68 ms either way)
        opts = ort.SessionOptions()
        opts.add_session_config_entry("session.force_spinning_stop", "1")
        sess = ort.InferenceSession(
            imp.model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
        )
        sess.run(None, feeds)
        # CPU seconds (all threads): onnxruntime without spinning workers (the
        # emulator's session options), so its CPU time is its work
        quiet = make_session(imp.model)
        quiet.run(None, feeds)
        res = validate(imp, inputs=feeds)  # warm-up: memo tables, first-call costs
        fresh = import_model(model)  # a new import: validate builds its sessions again
        t0 = time.perf_counter()
        validate(fresh, inputs=feeds)
        t_first = time.perf_counter() - t0
        # the emulation alone (inside validate the per-site reports run beside it), on
        # validate's own emulator (a small model's has one-thread sessions)
        sizes = [np.size(res.trace.site_inputs[s.name]) for s in res.selected]
        emu = imp.sessions.emulator(res.selected, emulation_threads(0, sizes))
        specs = {k: v for k, v in res.specs.items() if k in {s.name for s in res.selected}}
        # a call of a few ms: its median over a few runs moves 20-40 % with the machine's
        # phase (onnxruntime's 0.75-1.2 ms); 300 alternating pairs, after 30 of warm-up.
        # Each figure alternates with its own baseline only (another call between them
        # evicts the caches the next one reads: validate ~10 % slower with the
        # emulation and the CPU-time runs in the same loop)
        n = runs if t_first > 0.05 else max(runs, 300)
        warm = 0 if n == runs else 30

        base = functools.partial(sess.run, None, feeds)
        quiet_run = functools.partial(quiet.run, None, feeds)
        val = functools.partial(validate, imp, inputs=feeds)
        emu_run = functools.partial(emu.run, feeds, specs)
        t_ort, t_val = _pairs(base, val, n, warm)
        t_ort2, t_emu = _pairs(base, emu_run, n, warm)
        c_ort, c_val = _pairs(quiet_run, val, n, warm, cpu=True)
        c_ort2, c_emu = _pairs(quiet_run, emu_run, n, warm, cpu=True)
        r = {
            "shape": label,
            "sites": len(res.selected),
            "runs": n,
            "ort_s": statistics.median(t_ort),
            "validate_s": statistics.median(t_val),
            "emulation_s": statistics.median(t_emu),
            "first_s": t_first,
        }
        r["cpu_emu_ratio"] = statistics.median(c_emu) / statistics.median(c_ort2)
        r["cpu_validate_ratio"] = statistics.median(c_val) / statistics.median(c_ort)
        r["emu_ratio"] = r["emulation_s"] / statistics.median(t_ort2)
        r["validate_ratio"] = r["validate_s"] / r["ort_s"]
        r["first_ratio"] = r["first_s"] / r["ort_s"]
        print(r, flush=True)
        rows.append(r)
    return rows


def budget_rows() -> dict[str, Any]:
    from hwapprox.export.validate import import_model, validate

    _, model, feeds = _shapes()[1]
    imp = import_model(model)
    budget = "top1=1,cosine=0.999"
    validate(imp, inputs=feeds, budget=budget)  # warm-up: tables, compiled kernels, sessions
    out: dict[str, Any] = {}
    times: dict[int, list[float]] = {1: [], 2: []}
    res = {}
    for jobs in (1, 2, 1, 2):  # alternating (the workers fork the warm parent)
        t0 = time.perf_counter()
        res[jobs] = validate(imp, inputs=feeds, budget=budget, jobs=jobs)
        times[jobs].append(time.perf_counter() - t0)
    for jobs, ts in times.items():
        out[f"jobs{jobs}_s"] = min(ts)
    out["evaluated"] = sum(len(t["evaluated"]) for t in res[1].tuning)

    def picks(r: Any) -> Any:
        specs = {k: None if v is None else v.describe() for k, v in r.specs.items()}
        tried = [[c["spec"] for c in t["evaluated"]] for t in r.tuning]
        return specs, tried, r.end_to_end["cosine_min"]

    out["identical"] = picks(res[1]) == picks(res[2])
    print(out, flush=True)
    return out


def _calibrate_child(model_path: str, files: list[str]) -> None:
    """In a fresh process: stream-calibrate over ``files``; print seconds and peak RSS."""
    import resource

    from hwapprox.export.calibrate import calibrate, iter_batches, prepare_inputs
    from hwapprox.export.validate import import_model

    imp = import_model(model_path)
    paths = [Path(f) for f in files]
    t0 = time.perf_counter()
    tr = calibrate(
        imp.model,
        imp.sites,
        prepare_inputs(imp.model, paths[0]),
        more=iter_batches(imp.model, paths[1:]),
    )
    secs = time.perf_counter() - t0
    # VmHWM: this process image's peak RSS (ru_maxrss would count the parent's pages
    # that the fork before exec shared, inflating every figure to the parent's size)
    status = Path("/proc/self/status")
    if status.exists():
        kb = next(int(ln.split()[1]) for ln in status.read_text().splitlines()
                  if ln.startswith("VmHWM:"))  # fmt: skip
        peak_mb = kb / 1024
    else:  # pragma: no cover - not Linux
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"RESULT {secs:.3f} {peak_mb:.1f} {tr.batches}")


def batch_rows(tmp: Path) -> list[dict[str, Any]]:
    """Peak memory and time of streamed calibration over 1 and 16 batches of one size."""
    import subprocess
    import sys

    import onnx

    from hwapprox.export.builders import EncoderShape, bert_encoder, sample_inputs

    enc = EncoderShape(layers=6, width=384, heads=6, ffn=1536, seq=128, batch=8)
    tmp.mkdir(parents=True, exist_ok=True)
    model = tmp / "enc6x384.onnx"
    onnx.save(bert_encoder(enc, layernorm="decomposed"), str(model))
    files = []
    for i in range(16):
        f = tmp / f"batch_{i:02d}.npz"
        np.savez(f, **sample_inputs(enc, batch=8, seed=100 + i))
        files.append(str(f))
    rows = []
    for n in (1, 2, 16):
        code = (
            "import sys; sys.argv = ['x']; import bench_speed as b; "
            f"b._calibrate_child({str(model)!r}, {files[:n]!r})"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True, check=True
        ).stdout
        secs, peak, batches = next(
            ln for ln in out.splitlines() if ln.startswith("RESULT")
        ).split()[1:]
        r = {"batches": int(batches), "sequences": 8 * n, "seconds": float(secs),
             "peak_mb": float(peak)}  # fmt: skip
        print(r, flush=True)
        rows.append(r)
    return rows


def write(path: Path, ops: list[dict[str, Any]] | None, val: list[dict[str, Any]] | None,
          bud: dict[str, Any] | None, bat: list[dict[str, Any]] | None = None) -> None:  # fmt: skip
    import onnxruntime

    lines = [
        "## Speed: integer models vs float numpy, validate vs onnxruntime",
        "",
        f"`benchmarks/bench_speed.py`, {time.strftime('%Y-%m-%d')}, numpy {np.__version__}, "
        f"onnxruntime {onnxruntime.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs (shared with other jobs: ratios are measured side by side, "
        "absolute times are not comparable between runs).",
        "",
    ]
    if ops:
        worst: dict[tuple[str, str], float] = {}
        for r in ops:
            if "ratio" in r:
                k = (r["op"], r["method"])
                worst[k] = max(worst.get(k, 0.0), r["ratio"])
        lines += [
            "### Integer models vs a float64 numpy implementation of the same operator",
            "",
            "Worst model/float ratio over the formats and row lengths below (target <= 2x):",
            "",
            "| operator | method | worst ratio |",
            "|---|---|---|",
            *[f"| {op} | {m} | {v:.2f}x |" for (op, m), v in worst.items()],
            "",
            f"Every measurement ({ELEMENTS} elements per call, best of the alternating runs):",
            "",
            "| operator | method | formats | N | in_fmt | model ms | float64 ms | model/float |",
            "|---|---|---|---|---|---|---|---|",
            *[_fmt_op_row(r) for r in ops],
            "",
        ]
    if val:
        lines += [
            "### validate vs onnxruntime (every site approximated, default methods)",
            "",
            "onnxruntime's time is one `run` of a session built beforehand (its build "
            "excluded). *whole validate*: median of repeated calls on one imported model, "
            "which keeps its index, trace session and emulator sessions "
            "(`ImportedModel.sessions`); *first call*: one call on a fresh import, which "
            "builds them (model import itself excluded); *emulation*: one run of the "
            "emulator alone with validate's specs (inside validate the per-site reports "
            "run beside it).",
            "",
            "| model | sites | onnxruntime float s | emulation s | emulation / float | "
            "whole validate s | validate / float | first call s | first / float |",
            "|---|---|---|---|---|---|---|---|---|",
            *[
                f"| {r['shape']} | {r['sites']} | {r['ort_s']:.3f} | {r['emulation_s']:.3f} | "
                f"{r['emu_ratio']:.2f}x | {r['validate_s']:.3f} | {r['validate_ratio']:.2f}x | "
                f"{r['first_s']:.3f} | {r['first_ratio']:.2f}x |"
                for r in val
            ],
            "",
            "The same runs in CPU seconds (all threads, `time.process_time`; onnxruntime's "
            "float run in a session without spinning workers, whose CPU time is its work): "
            "less sensitive to the machine's load than the wall times, which on a shared "
            "machine mostly measure how the other jobs slow onnxruntime's threads.",
            "",
            "| model | emulation / float CPU | validate / float CPU |",
            "|---|---|---|",
            *[
                f"| {r['shape']} | {r['cpu_emu_ratio']:.2f}x | {r['cpu_validate_ratio']:.2f}x |"
                for r in val
            ],
            "",
        ]
    if bud:
        lines += [
            "### Budget search in parallel (6 x 384 encoder, top1=1, cosine=0.999)",
            "",
            f"After a warm-up search, serial and `-j 2` alternating, best of two each: serial "
            f"{bud['jobs1_s']:.1f} s, `-j 2` {bud['jobs2_s']:.1f} s (speed-up "
            f"{bud['jobs1_s'] / bud['jobs2_s']:.2f}x on 2 cores, worker start-up included); "
            f"{bud['evaluated']} candidates evaluated; picks, candidates tried and the "
            f"end-to-end cosine identical: {bud['identical']}.",
            "",
        ]
    if bat:
        lines += [
            "### Streamed calibration: 1, 2 and 16 batches of the same size",
            "",
            "6 x 384 encoder, batches of 8 sequences x 128 tokens (`--inputs DIR`), each "
            "measurement in a fresh process (peak RSS includes the interpreter, numpy, "
            "onnxruntime and the model). The trace keeps the first batch's site tensors (the "
            "per-site errors are measured on them) and holds one more batch while it folds "
            "it into the statistics, so memory is bounded by two batches, whatever their "
            "number:",
            "",
            "| batches | sequences | calibration s | peak RSS MB |",
            "|---|---|---|---|",
            *[
                f"| {r['batches']} | {r['sequences']} | {r['seconds']:.2f} | {r['peak_mb']:.0f} |"
                for r in bat
            ],
            "",
        ]
    path.write_text("\n".join(lines))
    print(f"wrote {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="ops,validate,budget,batches")
    ap.add_argument("--tmp", default=str(HERE / ".speed_tmp"), help="batch files go here")
    ap.add_argument(
        "--only",
        default="",
        help="part ops: comma-separated operators or op/method names (default: every method)",
    )
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "speed.md")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    only = set(args.only.split(",")) if args.only else None
    ops = op_rows(args.repeat, only) if "ops" in parts else None
    val = validate_rows(args.runs) if "validate" in parts else None
    bud = budget_rows() if "budget" in parts else None
    bat = batch_rows(Path(args.tmp)) if "batches" in parts else None
    write(args.out, ops, val, bud, bat)


if __name__ == "__main__":
    main()
