"""HLS unit widths per format set, and the cold g++ build time of the HLS harnesses.

Prints Markdown (the measured numbers in ``benchmarks/results/hls_widths.md``):

1. per HLS unit and format set of the HLS tests (``tests/test_hls_softmax.py``,
   ``test_hls_gelu.py``, ``test_hls_layernorm.py``; the RTL tests' parameter
   sets included), every derived width of ``spec.hw_params()``. The tests
   prove that each HLS type has exactly that width (read back from the compiled
   harness) and, for the units that also exist in SystemVerilog, that the SV
   parameters are the same numbers; the ``SV`` column says whether the RTL unit
   takes this format set (``=``: every shared parameter equal);
2. with ``--build``: CPU seconds of g++ for each HLS harness with an empty
   compile cache (``HWAPPROX_CACHE`` set to a fresh directory).

Usage::

    python benchmarks/bench_hls_widths.py [--build]
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"


def _cases() -> list[tuple[str, str, dict, int]]:
    sys.path.insert(0, str(TESTS))
    ts = importlib.import_module("test_hls_softmax")
    tg = importlib.import_module("test_hls_gelu")
    tl = importlib.import_module("test_hls_layernorm")
    return (
        [("softmax", m, f, n) for m, f, n in ts.CASES]
        + [("gelu", m, f, tg.N_IN) for m, f in tg.CASES]
        + [("layernorm", m, f, n) for m, f, n in tl.CASES]
    )


def _label(fields: dict) -> str:
    if not fields:
        return "defaults"
    keys = ("in_fmt", "out_fmt", "exp_unit", "recip_unit", "schedule", "requant", "max_n")
    parts = [f"{k}={fields[k]}" for k in keys if k in fields]
    more = len(fields) - len(parts)
    return ", ".join(parts) + (f" (+{more})" if more > 0 else "")


def width_tables() -> str:
    cases = _cases()  # puts tests/ on sys.path
    from hls_widths_check import rtl_params, sv_value

    from hwapprox.approx.registry import make_spec

    units: dict[tuple[str, str], list[tuple[str, int, dict[str, int], str]]] = {}
    for op, method, fields, n in cases:
        spec = make_spec(op, method, **fields)
        hw = spec.hw_params(n)
        widths = {k: v for k, v in hw.items() if k.endswith("_W")}
        rtl = rtl_params(spec, n)
        if rtl is None:
            sv = "-"
        else:
            same = all(sv_value(rtl[k]) == hw[k] for k in set(rtl) & set(hw))
            sv = "=" if same else "DIFFERS"
        units.setdefault((op, method), []).append((_label(fields), n, widths, sv))
    out = []
    for (op, method), rows in units.items():
        names = list(dict.fromkeys(k for _, _, w, _ in rows for k in w))
        out.append(f"### {op}/{method}\n")
        out.append("| format set | n | " + " | ".join(names) + " | SV |")
        out.append("|---|---|" + "---|" * len(names) + "---|")
        for label, n, w, sv in rows:
            cells = [str(w.get(k, "")) for k in names]
            out.append(f"| {label} | {n} | " + " | ".join(cells) + f" | {sv} |")
        out.append("")
    return "\n".join(out)


def build_times() -> str:
    os.environ["HWAPPROX_CACHE"] = tempfile.mkdtemp(prefix="hwa_cold_")
    sys.path.insert(0, str(TESTS))
    out = ["| harness | instances | g++ CPU s | wall s |", "|---|---|---|---|"]
    for name in ("test_hls_softmax", "test_hls_gelu", "test_hls_layernorm", "test_hls_intmath"):
        mod = importlib.import_module(name)
        fixture = getattr(mod, "setup", None) or mod.exe
        build = fixture.__wrapped__ if hasattr(fixture, "__wrapped__") else fixture
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        build()
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
        count = len(getattr(mod, "CASES", []))
        out.append(f"| {name}.py | {count} | {cpu:.1f} | {time.time() - t0:.1f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="store_true", help="also time cold harness builds")
    args = ap.parse_args()
    print("## Widths per unit and format set (bits; HLS types = hw_params = SV parameters)\n")
    print(width_tables())
    if args.build:
        print("## Cold g++ build of the HLS harnesses\n")
        print(build_times())


if __name__ == "__main__":
    main()
