"""Compile small C++ programs with g++, once per content, into a shared cache.

Used by the oracle tests (``ap_types`` from hls4ml), the hls4ml-baseline
bit-exactness checks and the HLS C-simulation harnesses. The binary is keyed
by a hash of the source text, the included headers' paths and the flags, so
every pytest worker and every run reuses it; a file lock makes concurrent
builders wait instead of racing.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from importlib.util import find_spec
from pathlib import Path

from hwapprox._cache import cache_dir

__all__ = ["CXX_FLAGS", "CxxBuildError", "cache_dir", "compile_cxx", "hls4ml_include_dirs"]

# -O1: the harnesses are dominated by g++'s ap_fixed template work, not by their run
# time; measured on the hls4ml LayerNorm harness (12 instances) -O1 takes 40 s CPU,
# -O2 52 s and -O0 more than 45 s (-O0 emits every inline ap_fixed helper). -pipe
# skips the temporary assembly files.
CXX_FLAGS: tuple[str, ...] = ("-O1", "-pipe", "-std=c++17")


class CxxBuildError(RuntimeError):
    """g++ is missing or the compilation failed (the message holds its output)."""


def hls4ml_include_dirs() -> list[Path]:
    """``ap_types`` and ``nnet_utils`` directories bundled inside hls4ml."""
    spec = find_spec("hls4ml")  # located, not imported (importing it is slow)
    if spec is None or not spec.submodule_search_locations:
        raise CxxBuildError("hls4ml is not installed; pip install hls4ml==1.3.0")
    base = Path(next(iter(spec.submodule_search_locations))) / "templates" / "vivado"
    dirs = [base / "ap_types", base / "nnet_utils", base]
    for d in dirs[:2]:
        if not d.is_dir():
            raise CxxBuildError(f"hls4ml installation lacks {d}; reinstall hls4ml==1.3.0")
    return dirs


def compile_cxx(
    source: str | Path,
    *,
    name: str,
    include_dirs: list[Path] | None = None,
    flags: tuple[str, ...] = CXX_FLAGS,
) -> Path:
    """Compile one C++ file (path or source text) to an executable; return its path.

    Reuses a cached binary when the source, include paths and flags are unchanged.
    """
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None:
        raise CxxBuildError("g++ not found on PATH; install g++ (a listed prerequisite)")
    text = Path(source).read_text() if isinstance(source, Path) else source
    incs = [str(p) for p in (include_dirs or [])]
    key = hashlib.sha256("\0".join([text, *incs, *flags, cxx]).encode()).hexdigest()[:16]
    out_dir = cache_dir() / "cxx"
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = out_dir / f"{name}-{key}"
    if exe.exists():
        return exe
    lock_path = out_dir / f"{name}-{key}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if exe.exists():
            return exe
        src = out_dir / f"{name}-{key}.cpp"
        src.write_text(text)
        tmp = exe.with_suffix(".tmp")
        cmd = [cxx, *flags, *(f"-I{i}" for i in incs), str(src), "-o", str(tmp)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise CxxBuildError(f"g++ failed for {name} ({' '.join(cmd)}):\n{proc.stderr[-4000:]}")
        tmp.replace(exe)
    return exe
