"""g++ -Wall -Wextra -Werror syntax check of an HLS harness and its instances."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from hwapprox._cxx import cache_dir, hls4ml_include_dirs
from hwapprox.hls.csim import library_digest
from hwapprox.hls.emit import INCLUDE_DIR, header_digest, render_header, write_header


def assert_warning_clean(harness: Path, insts: list, rows: list, name: str) -> None:
    """Compile ``harness`` with the instances header, syntax only, every warning an
    error (hls4ml's headers as system headers); a stamp per content skips reruns."""
    header = render_header("HWAPPROX_INSTANCES_H", insts, xmacro=rows)
    gen = cache_dir() / "hls_gen" / header_digest(header)
    write_header(gen / "hwapprox_instances.h", header)
    cmd = [
        "g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
        "-Wno-unknown-pragmas", "-Wno-unused-label", f"-I{INCLUDE_DIR}", f"-I{harness.parent}",
        f"-I{gen}", *(f"-isystem{d}" for d in hls4ml_include_dirs()), str(harness),
    ]  # fmt: skip
    key = hashlib.sha256(
        "\0".join([*cmd, harness.read_text(), library_digest(harness.parent)]).encode()
    ).hexdigest()[:16]
    stamp = cache_dir() / "cxx" / f"{name}_lint-{key}.ok"
    if stamp.exists():
        return
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-6000:]
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text("clean\n")
