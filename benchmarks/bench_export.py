"""Speed of ``hwapprox validate``'s emulation on a BERT-style encoder.

Model: :func:`hwapprox.export.builders.bert_encoder`, 6 layers, width 384,
6 heads, FFN 1536, sequence 128, batch 8, Erf-pattern GELU and
LayerNormalization ops (seed 0), 25 sites. Times (median of ``--repeats``
warm runs, CPU onnxruntime, default threads):

* ``float``: the unmodified model in one onnxruntime session (default options);
* ``emulation``: :class:`~hwapprox.export.emulate.Emulator` with every site
  approximated (default methods: I-BERT softmax, GELU, LayerNorm), split into
  time in onnxruntime sessions and time in the integer approximation models;
* ``cut, all float``: the emulator with every site running its own float
  nodes (the pure cost of cutting the graph).

Target: emulation <= 5 x float + approximation-model time, i.e.
``(emulation - approx) / float <= 5``.

With ``--example``: accuracy on the embedded example (``hwapprox validate``
without a model: 16 sequences) for each registered method, one operator
approximated at a time (calibrated ``ap_fixed<16, I>`` inputs, headroom 1,
the method's default other fields), then all operators with the defaults,
then a ``--budget`` run.

Usage: ``.venv/bin/python benchmarks/bench_export.py [--repeats 5] [--threads 0] [--example]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import onnxruntime as ort

from hwapprox.approx.base import Operator
from hwapprox.approx.registry import make_spec
from hwapprox.export.builders import EncoderShape, bert_encoder, sample_inputs
from hwapprox.export.emulate import Emulator, make_session
from hwapprox.export.validate import DEFAULT_METHODS, import_model

SHAPE = EncoderShape(layers=6, width=384, heads=6, ffn=1536, seq=128, batch=8, vocab=1000)


def _median(f, repeats: int) -> tuple[float, list[float]]:
    f()  # warm-up
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), ts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--example", action="store_true", help="accuracy table on the example")
    args = ap.parse_args()
    if args.example:
        example_table()
        return

    t0 = time.perf_counter()
    imp = import_model(bert_encoder(SHAPE, gelu="erf", layernorm="op", seed=0))
    feeds = sample_inputs(SHAPE, seed=1)
    t_import = time.perf_counter() - t0
    # Baseline: onnxruntime with its default session options.
    full = ort.InferenceSession(imp.model.SerializeToString(), providers=["CPUExecutionProvider"])
    t0 = time.perf_counter()
    emu = Emulator(imp.model, imp.sites, threads=args.threads)
    t_build = time.perf_counter() - t0
    specs = {}
    for s in imp.sites:
        spec = make_spec(s.operator, DEFAULT_METHODS[s.operator], **s.fields_for_spec())
        specs[s.name] = spec

    t_float, _ = _median(lambda: full.run(None, feeds), args.repeats)
    nospin = make_session(imp.model, args.threads)
    t_float_ns, _ = _median(lambda: nospin.run(None, feeds), args.repeats)
    approx, sess = [], []

    def run_emu() -> None:
        emu.run(feeds, specs)
        approx.append(emu.approx_seconds)
        sess.append(emu.session_seconds)

    t_emu, _ = _median(run_emu, args.repeats)
    t_approx = statistics.median(approx[1:])
    t_sess = statistics.median(sess[1:])
    t_cut, _ = _median(lambda: emu.run(feeds, {}), args.repeats)
    ratio = (t_emu - t_approx) / min(t_float, t_float_ns)
    ops = {o: sum(s.operator is o for s in imp.sites) for o in Operator}
    print(f"model: {SHAPE}; sites: {', '.join(f'{o}={n}' for o, n in ops.items())}")
    print(
        f"import + shape inference: {t_import:.2f} s; emulator build ({emu.n_sessions} sessions): "
        f"{t_build:.2f} s"
    )
    print("| measure | time (s) |")
    print("|---|---|")
    print(f"| float onnxruntime, one session (default options) | {t_float:.3f} |")
    print(f"| float onnxruntime, one session (no spinning, as the emulator) | {t_float_ns:.3f} |")
    print(f"| emulation, all {len(imp.sites)} sites approximated | {t_emu:.3f} |")
    print(f"| - of which onnxruntime sessions | {t_sess:.3f} |")
    print(f"| - of which approximation models | {t_approx:.3f} |")
    print(f"| emulation, all sites float (cut only) | {t_cut:.3f} |")
    best = min(t_float, t_float_ns)
    print(f"(emulation - approx) / faster float = {ratio:.2f}  (target <= 5)")
    print(f"cut-only / faster float = {t_cut / best:.2f}")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def example_table() -> None:
    from hwapprox.approx.registry import METHODS
    from hwapprox.export import example
    from hwapprox.export.validate import validate

    imp = import_model(example.model_path())
    print(
        "| sites approximated | method | worst per-site max abs err | e2e max abs | "
        "e2e mean abs | cosine min | top-1 |"
    )
    print("|---|---|---|---|---|---|---|")

    def row(label: str, method: str, **kw: object) -> None:
        try:
            r = validate(imp, inputs=example.inputs_path(), threads=1, **kw)  # type: ignore[arg-type]
        except Exception as exc:
            print(f"| {label} | {method} | error: {exc} | | | | |")
            return
        e = r.end_to_end
        worst = max((v["max_abs"] for v in r.site_errors.values()), default=0.0)
        print(
            f"| {label} | {method} | {worst:.3g} | {e['max_abs']:.3g} | {e['mean_abs']:.3g} | "
            f"{e['cosine_min']:.6f} | {e['top1']:.4f} |"
        )

    for op in Operator:
        for m in sorted(METHODS[op]):
            row(f"all {op}", m, sites=[op.value], methods={op.value: m})
    row("all", "ibert (defaults)")
    row("all, --budget top1=1,cosine=0.9999", "tuned", budget="top1=1,cosine=0.9999")


if __name__ == "__main__":
    main()
