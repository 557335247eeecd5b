"""The SystemVerilog files a top module needs, read from the sources themselves.

:func:`sv_sources` follows a top module's instantiations (and the packages it
references with ``pkg::`` or ``import pkg::*``) through ``rtl/*.sv`` and returns
every file it needs, dependencies before their users, so a composite design (the
encoder block, the attention row) never carries a hand-kept list that a new
primitive in one of its units silently breaks.

The scan is lexical: comments are stripped, a module is declared by ``module NAME``
/ ``package NAME`` and instantiated by ``NAME #(`` or ``NAME INSTANCE (``; that is the
whole SystemVerilog this project writes (``tests/test_rtl_sources.py`` checks every
unit's file list against it).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from hwapprox.approx.base import SpecError
from hwapprox.rtl_sim.runner import RTL_DIR

__all__ = ["RTL_DIR", "sv_sources"]

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_DECL = re.compile(r"^\s*(module|package)\s+(\w+)", re.M)
_INST = re.compile(r"\b(\w+)\s*(?:#\s*\(|(?!\bbegin\b)\w+\s*\()")
_PKG = re.compile(r"\b(\w+)::")
_KEYWORDS = {
    "module", "package", "function", "task", "if", "for", "case", "assign", "always",
    "always_ff", "always_comb", "initial", "begin", "end", "else", "return", "assert",
    "generate", "localparam", "parameter", "typedef", "automatic", "while", "repeat",
}  # fmt: skip


@functools.cache
def _index(rtl_dir: Path) -> dict[str, tuple[Path, str, bool]]:
    """Module/package name -> (its file, its comment-free text, whether a package)."""
    out: dict[str, tuple[Path, str, bool]] = {}
    for path in sorted(rtl_dir.glob("*.sv")):
        text = _COMMENT.sub("", path.read_text())
        for kind, name in _DECL.findall(text):
            out[name] = (path, text, kind == "package")
    return out


def _deps(text: str, known: dict[str, tuple[Path, str, bool]], own: str) -> list[str]:
    names = [n for n in _INST.findall(text) if n not in _KEYWORDS]
    names += _PKG.findall(text)
    seen: list[str] = []
    for n in names:
        if n in known and n != own and n not in seen:
            seen.append(n)
    return seen


def sv_sources(top: str, rtl_dir: Path = RTL_DIR) -> tuple[str, ...]:
    """File names (in ``rtl_dir``) that ``top`` needs, each once, every file after
    the files it depends on (packages first)."""
    known = _index(rtl_dir)
    if top not in known:
        raise SpecError(f"no module {top!r} in {rtl_dir}")
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(name: str) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise SpecError(f"SV modules instantiate each other in a circle through {name}")
        state[name] = 1
        path, text, _ = known[name]
        for dep in _deps(text, known, name):
            if known[dep][0] != path:
                visit(dep)
        state[name] = 2
        if path.name not in order:
            order.append(path.name)

    visit(top)
    pkgs = {path.name for path, _, is_pkg in known.values() if is_pkg}
    return tuple([f for f in order if f in pkgs] + [f for f in order if f not in pkgs])
