"""The HLS headers compile warning-free: g++ -Wall -Wextra -Werror on every unit.

HLS code carries pragmas and loop labels g++ does not use, so
``-Wno-unknown-pragmas -Wno-unused-label``; the ap_types headers are system
headers (``-isystem``): their own warnings are not ours. One translation unit
(``tests/cxx/hls_lint.cpp``) instantiates every unit with the default spec of
each method and a second format set; a clean result is remembered by content
hash, so only a changed header is linted again. Each header of the library also
compiles alone (its own includes suffice), with the same flags.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hwapprox._cxx import cache_dir, hls4ml_include_dirs
from hwapprox.approx.registry import make_spec
from hwapprox.hls.csim import library_digest
from hwapprox.hls.emit import INCLUDE_DIR, header_digest, render_header, write_header
from hwapprox.hls.units import UNITS, unit_instance

pytestmark = pytest.mark.hls

SOURCE = Path(__file__).parent / "cxx" / "hls_lint.cpp"
#: every header of the library (include/hwapprox/*.h)
HEADERS = sorted(p.name for p in (INCLUDE_DIR / "hwapprox").glob("*.h"))
WARNINGS = ("-Wall", "-Wextra", "-Werror", "-Wno-unknown-pragmas", "-Wno-unused-label")
#: a second format set per operator, on top of each method's defaults
SECOND = {
    "softmax": {"in_fmt": "ap_fixed<12,4,AP_RND,AP_SAT>"},
    "gelu": {"in_fmt": "ap_fixed<12,4>", "out_fmt": "ap_fixed<10,3,AP_RND_CONV,AP_SAT>"},
    "layernorm": {"in_fmt": "ap_fixed<12,5>", "out_fmt": "ap_fixed<12,4,AP_TRN,AP_WRAP>"},
    "sigmoid_attention": {"in_fmt": "ap_fixed<12,6>", "out_fmt": "ap_ufixed<8,0,AP_TRN,AP_SAT>"},
    "relu_attention": {"in_fmt": "ap_fixed<12,5>", "seq_len": 100},
}


def _instances():
    insts, rows = [], []
    for op, method in UNITS:
        for j, fields in enumerate(({}, SECOND[op])):
            if op == "gelu" and method == "lut" and j:
                fields = {"in_fmt": "ap_fixed<12,4>", "index_bits": 9}
            if op == "gelu" and method == "shiftgelu" and j:
                fields = {"in_fmt": "ap_fixed<10,4>", "n": 15}
            i = len(insts)
            insts.append(unit_instance(f"l{i}", make_spec(op, method, **fields), 6))
            rows.append((str(i), f"lint_{op}", f"l{i}"))
    return insts, rows


def test_headers_compile_without_warnings() -> None:
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None:
        pytest.skip("g++ not found")
    insts, rows = _instances()
    header = render_header("HWAPPROX_INSTANCES_H", insts, xmacro=rows)
    gen = cache_dir() / "hls_gen" / header_digest(header)
    write_header(gen / "hwapprox_instances.h", header)
    inc = hls4ml_include_dirs()
    cmd = [
        cxx,
        "-std=c++17",
        "-fsyntax-only",
        *WARNINGS,
        f"-I{INCLUDE_DIR}",
        f"-I{SOURCE.parent}",
        f"-I{gen}",
        *(f"-isystem{d}" for d in inc),
        str(SOURCE),
    ]
    key = hashlib.sha256(
        "\0".join([*cmd, SOURCE.read_text(), library_digest(SOURCE.parent)]).encode()
    ).hexdigest()[:16]
    stamp = cache_dir() / "cxx" / f"hls_lint-{key}.ok"
    if stamp.exists():
        return
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-6000:]
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text("clean\n")


def _syntax_check(cxx: str, source: str, name: str) -> None:
    """g++ -fsyntax-only of ``source`` with the lint flags; a clean result is stamped."""
    inc = hls4ml_include_dirs()
    flags = ["-std=c++17", "-fsyntax-only", *WARNINGS, f"-I{INCLUDE_DIR}"]
    flags += [f"-isystem{d}" for d in inc]
    text = "\0".join([cxx, *flags, source, library_digest()])
    stamp = cache_dir() / "cxx" / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.ok"
    if stamp.exists():
        return
    proc = subprocess.run(
        [cxx, *flags, "-x", "c++", "-"], input=source, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text("clean\n")


@pytest.mark.parametrize("header", HEADERS)
def test_each_header_compiles_alone(header: str) -> None:
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None:
        pytest.skip("g++ not found")
    _syntax_check(cxx, f'#include "hwapprox/{header}"\n', f"hls_alone_{Path(header).stem}")


def test_softmax_umbrella_includes_every_method_header() -> None:
    text = (INCLUDE_DIR / "hwapprox" / "softmax.h").read_text()
    included = set(re.findall(r'^#include "(softmax_\w+\.h)"$', text, re.MULTILINE))
    assert included == {h for h in HEADERS if h.startswith("softmax_")}
