"""g++ C simulation of the HLS headers on raw integer codes.

A harness is a real ``.cpp`` file that includes ``hwapprox_instances.h``
(written here by :mod:`hwapprox.hls.emit`: one config struct per instance and
an ``HWAPPROX_INSTANCES(X)`` list) and dispatches records read from stdin by
instance id. One binary serves every instance of a test module, so each
harness compiles once; binaries are cached by content
(:func:`hwapprox._cxx.compile_cxx`), the key covering the harness, the
generated header and every library header.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from hwapprox._cxx import cache_dir, compile_cxx, hls4ml_include_dirs
from hwapprox.fixed import FixedFormat
from hwapprox.hls.emit import INCLUDE_DIR, Instance, header_digest, render_header, write_header

__all__ = [
    "CsimError",
    "build_harness",
    "library_digest",
    "run_harness",
    "run_lines",
    "sign_extend",
]


class CsimError(RuntimeError):
    """The harness failed or printed something that is not the expected raw codes."""


def library_digest(*extra_dirs: Path) -> str:
    """Hash of every header of the HLS library (and of ``extra_dirs``)."""
    h = hashlib.sha256()
    for d in (INCLUDE_DIR / "hwapprox", *extra_dirs):
        for p in sorted(Path(d).glob("*.h")):
            h.update(p.name.encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build_harness(
    harness: Path,
    instances: Sequence[Instance],
    xmacro: Sequence[tuple[str, ...]],
    *,
    name: str,
) -> Path:
    """Write the instances header and compile ``harness`` with it; return the binary."""
    header = render_header("HWAPPROX_INSTANCES_H", instances, xmacro=xmacro)
    gen_dir = cache_dir() / "hls_gen" / header_digest(header)
    write_header(gen_dir / "hwapprox_instances.h", header)
    harness = Path(harness)
    deps = library_digest(harness.parent)
    source = f"// hwapprox library {deps}\n" + harness.read_text()
    incs = [INCLUDE_DIR, harness.parent, gen_dir, *hls4ml_include_dirs()]
    return compile_cxx(source, name=name, include_dirs=incs)


def sign_extend(raw: npt.ArrayLike, fmt: FixedFormat) -> npt.NDArray[np.int64]:
    """Bit patterns (``0 .. 2**W - 1``) -> raw codes of ``fmt``."""
    r = np.asarray(raw, dtype=np.uint64).astype(np.int64)
    if fmt.signed:
        r = np.where(r >= (1 << (fmt.width - 1)), r - (1 << fmt.width), r)
    return r.astype(np.int64)


def run_lines(
    exe: Path, records: Sequence[Sequence[int]], *, timeout: float = 120.0
) -> list[list[int]]:
    """Feed ``records`` to ``exe`` (one per line); the integers it prints, one row per record."""
    text = "\n".join(" ".join(str(int(v)) for v in rec) for rec in records) + "\n"
    proc = subprocess.run(
        [str(exe)], input=text, capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise CsimError(f"{exe.name} exited with {proc.returncode}: {proc.stderr[-2000:]}")
    lines = proc.stdout.splitlines()
    if len(lines) != len(records):
        raise CsimError(f"{exe.name} printed {len(lines)} lines for {len(records)} records")
    try:
        return [[int(t) for t in line.split()] for line in lines]
    except ValueError:
        raise CsimError(f"{exe.name} printed non-integers: {proc.stdout[:200]!r}") from None


def run_harness(
    exe: Path,
    records: Sequence[Sequence[int]],
    out_fmts: Sequence[FixedFormat],
    *,
    timeout: float = 120.0,
) -> list[npt.NDArray[np.int64]]:
    """Feed ``records`` (each ``[id, raw, ...]``) to ``exe``; raw outputs per record.

    The harness prints bit patterns; they are sign-extended with ``out_fmts``.
    """
    if len(records) != len(out_fmts):
        raise CsimError(f"{len(records)} records but {len(out_fmts)} output formats")
    rows = run_lines(exe, records, timeout=timeout)
    return [sign_extend(row, fmt) for row, fmt in zip(rows, out_fmts, strict=True)]
