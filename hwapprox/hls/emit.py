"""Write data-only C++ headers: per-instance types, constants and tables.

The algorithms live in the real headers under ``include/hwapprox/``; this
module writes only *data* for them, in the hls4ml style of a config struct
per layer instance:

.. code-block:: c++

    static const ap_uint<20> g0_delta[177] = {...};    // ROM contents (tables())
    struct g0 {
        typedef ap_fixed<16,5,AP_RND,AP_SAT> in_t;     // one typedef per FixedFormat field
        static const long long TABLE_SIZE = 177;       // one constant per hw_params() entry
        typedef hwapprox::gelu_edgemoe_op op;          // aliases: the unit to use
        typedef ap_uint<20> delta_entry_t;             // entry type (narrowest width)
        static const unsigned delta_len = 177;
        static delta_entry_t delta(unsigned i) { return g0_delta[i]; }
    };

Table entries are the exact integers of :meth:`ApproxSpec.tables` in the
narrowest ``ap_int``/``ap_uint`` that holds them; each algorithm header states
how it interprets them. There is one rendering path (:func:`render_instances`,
wrapped by :func:`render_header` for standalone headers).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.fixed import FixedFormat

__all__ = [
    "INCLUDE_DIR",
    "EmitError",
    "Instance",
    "add_instance",
    "cpp_type",
    "header_digest",
    "instance_from_spec",
    "matmul_instance",
    "render_header",
    "render_instances",
    "table_type",
    "write_header",
]

#: Directory holding ``hwapprox/*.h`` (add it to the include path).
INCLUDE_DIR = Path(__file__).resolve().parent / "include"

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_QUALIFIED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$")


class EmitError(ValueError):
    """An instance that cannot be written as a valid header."""


def cpp_type(fmt: FixedFormat) -> str:
    """The full ``ap_fixed``/``ap_ufixed`` spelling, modes always explicit."""
    kind = "ap_fixed" if fmt.signed else "ap_ufixed"
    return f"{kind}<{fmt.width},{fmt.int_bits},{fmt.rounding.value},{fmt.overflow.value}>"


def table_type(values: npt.ArrayLike) -> tuple[str, int, bool]:
    """Narrowest ``ap_int<W>``/``ap_uint<W>`` holding every entry: (spelling, W, signed)."""
    v = np.asarray(values, dtype=np.int64)
    if v.size == 0:
        raise EmitError("empty table")
    from hwapprox.approx.hwparams import table_width

    w, signed = table_width(v), int(v.min()) < 0
    return (f"ap_int<{w}>" if signed else f"ap_uint<{w}>"), w, signed


def _literal(v: int) -> str:
    # ap_int's long long constructor takes every int64; LL keeps wide literals typed.
    if -(2**31) < v < 2**31:
        return str(v)
    return f"{v}LL"


@dataclass(frozen=True)
class Instance:
    """Everything one configured unit needs: name, types, constants, tables."""

    name: str
    types: Mapping[str, FixedFormat] = field(default_factory=dict)
    consts: Mapping[str, int] = field(default_factory=dict)
    tables: Mapping[str, npt.ArrayLike] = field(default_factory=dict)
    comment: str = ""
    #: typedefs naming library types, e.g. ``{"op": "hwapprox::gelu_pwl_op"}``
    aliases: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [self.name, *self.types, *self.consts, *self.tables, *self.aliases]
        for n in names:
            if not _IDENT.match(n):
                raise EmitError(f"{n!r} is not a valid C++ identifier; use [A-Za-z_][A-Za-z0-9_]*")
        for k, v in self.consts.items():
            if isinstance(v, bool | np.bool_):
                continue
            if not isinstance(v, int | np.integer):
                raise EmitError(f"constant {k}={v!r} of {self.name} is not an integer")
        for k, v in self.aliases.items():
            if not _QUALIFIED.match(v):
                raise EmitError(f"alias {k} = {v!r} of {self.name} is not a qualified C++ name")
        generated = [*self.types, *self.consts, *self.tables, *self.aliases]
        for t in self.tables:
            generated += [f"{t}_entry_t", f"{t}_len"]
        clash = {n for n in generated if generated.count(n) > 1}
        if clash:
            raise EmitError(f"{self.name}: names used twice: {sorted(clash)}")


def _type_name(field_name: str) -> str:
    base = field_name[:-4] if field_name.endswith("_fmt") else field_name
    return f"{base}_t"


def instance_from_spec(
    name: str,
    spec: Any,
    *,
    extra_types: Mapping[str, FixedFormat] | None = None,
    extra_consts: Mapping[str, int] | None = None,
    consts: Mapping[str, int] | None = None,
) -> Instance:
    """An :class:`Instance` from a spec: every ``FixedFormat`` field ``x_fmt``
    becomes ``typedef ... x_t``; ``tables()`` become tables; the constants are
    ``consts`` when given (the HLS units pass ``hw_params()``, the hardware
    parameter set), else ``spec.hw_params()``; ``extra_consts`` are added.

    Boolean/enum/int fields of the spec that are not in the constants are not
    written: the algorithm headers read only what the constants state.
    """
    types: dict[str, FixedFormat] = {}
    for f in dataclasses.fields(spec):
        v = getattr(spec, f.name)
        if isinstance(v, FixedFormat):
            types[_type_name(f.name)] = v
    types.update(extra_types or {})
    values: dict[str, int] = {}
    for k, v in (spec.hw_params() if consts is None else consts).items():
        if isinstance(v, enum.Enum):
            v = v.value
        values[k] = int(v)
    values.update(extra_consts or {})
    tables = {k: np.asarray(v, dtype=np.int64) for k, v in spec.tables().items()}
    desc = spec.describe() if hasattr(spec, "describe") else repr(spec)
    return Instance(name, types, values, tables, comment=desc)


def _render_instance(inst: Instance) -> list[str]:
    out: list[str] = []
    if inst.comment:
        out.append(f"// {inst.name}: {inst.comment}")
    for tname, values in inst.tables.items():
        arr = np.asarray(values, dtype=np.int64).ravel()
        spelling, _, _ = table_type(arr)
        out.append(f"static const {spelling} {inst.name}_{tname}[{arr.size}] = {{")
        items = [_literal(int(x)) for x in arr]
        for i in range(0, len(items), 12):
            out.append("    " + ", ".join(items[i : i + 12]) + ",")
        out.append("};")
    out.append(f"struct {inst.name} {{")
    for tname, fmt in inst.types.items():
        out.append(f"    typedef {cpp_type(fmt)} {tname};")
    for aname, target in inst.aliases.items():
        out.append(f"    typedef {target} {aname};")
    for cname, value in inst.consts.items():
        out.append(f"    static const long long {cname} = {_literal(int(value))};")
    for tname, values in inst.tables.items():
        arr = np.asarray(values, dtype=np.int64).ravel()
        spelling, _, _ = table_type(arr)
        out.append(f"    typedef {spelling} {tname}_entry_t;")
        out.append(f"    static const unsigned {tname}_len = {arr.size};")
        out.append(
            f"    static {tname}_entry_t {tname}(unsigned i) {{ return {inst.name}_{tname}[i]; }}"
        )
    out.append("};")
    return out


def render_header(
    guard: str,
    instances: Sequence[Instance],
    *,
    includes: Sequence[str] = ("ap_fixed.h", "ap_int.h"),
    xmacro: Sequence[tuple[str, ...]] | None = None,
) -> str:
    """The header text: guard, includes, instances, optional ``HWAPPROX_INSTANCES`` X-macro.

    ``xmacro`` rows are ``(id, function, config[, ...])``; the harnesses
    expand ``HWAPPROX_INSTANCES(X)`` to dispatch on an instance id.
    """
    if not _IDENT.match(guard):
        raise EmitError(f"guard {guard!r} is not a valid C++ identifier")
    lines = [
        "// Generated by hwapprox.hls.emit: data only (types, constants, tables).",
        "// Do not edit; regenerate from the spec.",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        *(f'#include "{h}"' for h in includes),
        "",
    ]
    lines.append(render_instances(instances))
    if xmacro is not None:
        lines.append("#define HWAPPROX_INSTANCES(X) \\")
        for row in xmacro:
            lines.append(f"    X({', '.join(row)}) \\")
        lines.append("")
    lines.append(f"#endif  // {guard}")
    return "\n".join(lines) + "\n"


def render_instances(instances: Sequence[Instance]) -> str:
    """Tables and config structs of ``instances`` (no guard, no includes)."""
    seen: set[str] = set()
    lines: list[str] = []
    for inst in instances:
        if inst.name in seen:
            raise EmitError(f"two instances named {inst.name!r}")
        seen.add(inst.name)
        lines += _render_instance(inst)
        lines.append("")
    return "\n".join(lines)


def header_digest(text: str) -> str:
    """Short content hash, for cache keys and directory names."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def write_header(path: Path, text: str, *, overwrite: bool = False) -> Path:
    """Write ``text`` to ``path``; refuses to replace a different existing file."""
    path = Path(path)
    if path.exists():
        if path.read_text() == text:
            return path
        if not overwrite:
            raise FileExistsError(f"{path} exists and differs; pass overwrite=True to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    # atomic: concurrent writers (pytest workers) never expose a partial file
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def matmul_instance(name: str, spec: Any, n_rows: int, n_inner: int, n_cols: int) -> Instance:
    """Config of ``hwapprox::matmul[_bias]`` for a :class:`~hwapprox.approx.linear.MatMulSpec`.

    ``bias_t`` is always declared (``a_t`` when the spec has no bias) so that
    code for both variants compiles; ``has_bias`` says which one applies.
    """
    for k, v in (("n_rows", n_rows), ("n_inner", n_inner), ("n_cols", n_cols)):
        if int(v) < 1:
            raise EmitError(f"{name}: {k} must be >= 1, got {v}")
    types = {
        "a_t": spec.a_fmt,
        "b_t": spec.b_fmt,
        "accum_t": spec.accum_fmt,
        "out_t": spec.out_fmt,
        "bias_t": spec.bias_fmt if spec.bias_fmt is not None else spec.a_fmt,
    }
    consts = {
        "n_rows": int(n_rows),
        "n_inner": int(n_inner),
        "n_cols": int(n_cols),
        "transpose_b": int(bool(spec.transpose_b)),
        "has_bias": int(spec.bias_fmt is not None),
    }
    return Instance(name, types, consts, comment=f"matmul {spec}")


def add_instance(name: str, spec: Any, n_elem: int) -> Instance:
    """Config of ``hwapprox::add`` (:class:`~hwapprox.approx.linear.AddSpec`) or
    ``hwapprox::mul`` (:class:`~hwapprox.approx.linear.MulSpec`): the same three types."""
    if int(n_elem) < 1:
        raise EmitError(f"{name}: n_elem must be >= 1, got {n_elem}")
    types = {"a_t": spec.a_fmt, "b_t": spec.b_fmt, "out_t": spec.out_fmt}
    kind = type(spec).__name__.removesuffix("Spec").lower()  # add or mul
    return Instance(name, types, {"n_elem": int(n_elem)}, comment=f"{kind} {spec}")
