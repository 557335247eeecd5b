"""SV parameter lists read from the sources, and SV parameters derived from them.

:func:`sv_parameters` reads the parameter port list of a module in ``rtl/`` (the
``module NAME #( parameter TYPE NAME [= default], ... )`` header, comments allowed)
and returns its parameters in declaration order with their types and default text.
:func:`derive_sv_params` builds a top's SV parameters from a hardware parameter set
(``spec.hw_params()``) by those names: a parameter is passed through when the set
has it, 64-bit ones (``longint``, ``logic [63:0]``) as :func:`sv_long` literals, and
any parameter the set lacks that the caller does not supply otherwise (row buffer
geometry, memory files, a variant's unused parameters, unit-level knobs) is a
:class:`SpecError` naming the module, the parameter and the spec -- never left
silently at its SV default.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from hwapprox.approx.base import SpecError
from hwapprox.rtl_sim.runner import RTL_DIR

__all__ = [
    "SvParam",
    "derive_sv_params",
    "sv_defaults",
    "sv_long",
    "sv_parameters",
]

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
#: one entry, whitespace normalised: ``parameter [TYPE ...] NAME [= default]``
_DECL = re.compile(
    r"parameter\s+(?P<type>(?:[\w\[\]:]+\s+)*?)(?P<name>\w+)\s*(?:=\s*(?P<default>.+))?"
)
_RANGE = re.compile(r"\[\s*(\d+)\s*:\s*(\d+)\s*\]")


@dataclass(frozen=True)
class SvParam:
    """One entry of a module's parameter port list."""

    name: str
    #: the declared type as written, whitespace normalised (``int``, ``bit``,
    #: ``longint``, ``string``, ``logic [63:0]``; ``""`` for an untyped parameter)
    type: str
    #: the default's text, or None without one
    default: str | None

    @property
    def width(self) -> int | None:
        """Bits of an integral type (None: a string, or untyped)."""
        words = self.type.split()
        if not words:
            return None
        base = {"longint": 64, "int": 32, "integer": 32, "shortint": 16, "byte": 8}
        if words[0] in base:
            return base[words[0]]
        if words[0] in ("bit", "logic", "reg"):
            m = _RANGE.search(self.type)
            return 1 if m is None else abs(int(m[1]) - int(m[2])) + 1
        return None

    @property
    def is_long(self) -> bool:
        """A 64-bit integral parameter (passed as a 64-bit literal, :func:`sv_long`)."""
        return self.width == 64


def _split_top(text: str) -> list[str]:
    """``text`` split at commas outside brackets and string literals."""
    out, depth, start, quoted = [], 0, 0, False
    for i, ch in enumerate(text):
        if quoted:
            quoted = ch != '"' or text[i - 1] == "\\"
        elif ch == '"':
            quoted = True
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


def _parse(text: str, module: str) -> tuple[SvParam, ...]:
    """The parameter port list of ``module`` in SV source ``text``."""
    text = _COMMENT.sub("", text)
    head = re.search(rf"\bmodule\s+{re.escape(module)}\b\s*(#\s*\()?", text)
    if head is None:
        raise SpecError(f"no module {module!r} in its source")
    if head[1] is None:  # no parameter port list
        return ()
    depth, i = 1, head.end()
    while depth:
        if i >= len(text):
            raise SpecError(f"unterminated parameter list of module {module}")
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    out: list[SvParam] = []
    for item in _split_top(text[head.end() : i - 1]):
        m = _DECL.fullmatch(" ".join(item.split()))
        if m is None:
            raise SpecError(f"module {module}: cannot read the parameter {item!r}")
        default = m["default"]
        out.append(SvParam(m["name"], m["type"].strip(), None if default is None else default))
    return tuple(out)


@functools.cache
def sv_parameters(module: str, rtl_dir: Path = RTL_DIR) -> tuple[SvParam, ...]:
    """The parameter port list of ``rtl_dir/<module>.sv``, in declaration order."""
    path = rtl_dir / f"{module}.sv"
    if not path.is_file():
        raise SpecError(f"no SV source {path.name} for module {module!r} in {rtl_dir}")
    return _parse(path.read_text(), module)


def sv_defaults(module: str, rtl_dir: Path = RTL_DIR) -> dict[str, str | None]:
    """``module``'s parameters: name -> default text (None without one), in order."""
    return {p.name: p.default for p in sv_parameters(module, rtl_dir)}


def sv_long(v: int) -> str:
    """A 64-bit SV literal: ``64'd<v>``, or a negative value's two's complement as
    ``64'h<hex>`` (Verilator's ``-G`` takes no signed sized literals)."""
    v = int(v)
    if not -(1 << 63) <= v < 1 << 63:
        raise SpecError(f"{v} does not fit a 64-bit SV parameter")
    return f"64'd{v}" if v >= 0 else f"64'h{v & ((1 << 64) - 1):016X}"


def _spec_name(spec: object) -> str:
    if spec is None:
        return "no spec"
    op, method = getattr(spec, "operator", None), getattr(spec, "method", None)
    kind = type(spec).__name__
    return f"the {op}/{method} spec ({kind})" if op and method else f"the {kind}"


def derive_sv_params(
    module: str,
    hw: Mapping[str, int],
    *,
    spec: object,
    given: Mapping[str, int | str] | None = None,
    mems: Mapping[str, str] | None = None,
    unused: Collection[str] = (),
    knobs: Collection[str] = (),
) -> dict[str, int | str]:
    """The SV parameters of ``module`` (in declaration order) for a spec's hardware
    parameter set ``hw``: each parameter is

    - in ``given`` (what the unit sets itself: row buffer geometry, its own
      arguments), taken from there even where ``hw`` has it;
    - a memory file (``*_FILE``): must be in ``mems``, and is left to the build
      (``$readmemh`` files are no parameter values here);
    - in ``unused`` (of a variant the spec does not select) or in ``knobs`` (a
      unit-level parameter with an SV default) and not in ``hw``: left at its default;
    - else from ``hw`` by name: an integer, a 64-bit one (``longint``,
      ``logic [63:0]``) as a :func:`sv_long` literal.

    A parameter that is none of these, or a ``given`` / ``mems`` name the module does
    not have, raises a :class:`SpecError` naming ``module``, the parameters and
    ``spec`` (nothing is left silently at its SV default)."""
    given = dict(given or {})
    mems = dict(mems or {})
    decl = sv_parameters(module)
    names = {p.name for p in decl}
    stray = sorted((set(given) | set(mems)) - names)
    if stray:
        raise SpecError(f"SV module {module} has no parameter(s) {stray} (for {_spec_name(spec)})")
    files = [p.name for p in decl if p.name.endswith("_FILE") and p.name not in given]
    if set(files) - set(mems):
        raise SpecError(
            f"SV module {module} needs the memory file(s) {sorted(set(files) - set(mems))}, "
            f"which the unit does not make for {_spec_name(spec)}"
        )
    out: dict[str, int | str] = {}
    missing: list[str] = []
    for p in decl:
        if p.name in given:
            out[p.name] = given[p.name]
        elif p.name in files:
            continue
        elif p.name in hw:
            out[p.name] = sv_long(hw[p.name]) if p.is_long else int(hw[p.name])
        elif not (p.name in unused or (p.name in knobs and p.default is not None)):
            missing.append(p.name)
    if missing:
        raise SpecError(
            f"SV module {module} needs the parameter(s) {missing}, which hw_params() of "
            f"{_spec_name(spec)} lacks (and the unit sets no row geometry, memory file or "
            "knob of that name)"
        )
    return out
