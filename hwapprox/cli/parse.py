"""Command-line value parsing shared by the ``hwapprox`` commands.

One home for what several command groups parse the same way: comma lists
that keep formats and lists whole (:func:`split_list`), scalar values
(:func:`parse_scalar`), ``NAME=VALUE`` items (:func:`split_assignment`;
``--set`` of ``eval``/``sweep``/``tune`` and ``rtl``, ``--method OP=METHOD``
of ``validate``), spec fields (:func:`parse_sets`, :func:`parse_set_lists`),
fixed-point formats (:func:`fmt_callback`) and method names
(:func:`method_class`). Every error is a :class:`click.BadParameter` naming
the option.
"""

from __future__ import annotations

import re
from typing import Any

import click

from hwapprox.approx.base import SpecError
from hwapprox.fixed import FixedFormat, FixedPointError

__all__ = [
    "check_fmt",
    "fmt_callback",
    "method_class",
    "parse_scalar",
    "parse_set_lists",
    "parse_sets",
    "split_assignment",
    "split_list",
]

_IDENT = re.compile(r"[A-Za-z_]\w*")


def split_list(text: str) -> list[str]:
    """Split on commas outside ``<...>`` and ``[...]`` (formats and lists stay whole)."""
    parts: list[str] = []
    depth = 0
    cur = ""
    for ch in text:
        if ch in "<[":
            depth += 1
        elif ch in ">]":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return [p for p in parts if p != ""]


def parse_scalar(text: str) -> Any:
    """``"1024"`` -> 1024, ``"1e-5"`` -> 1e-05, ``"true"`` -> True, ``"[1, 2]"`` -> (1, 2),
    else the string."""
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        return tuple(parse_scalar(v) for v in split_list(t[1:-1]))
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    if re.fullmatch(r"[+-]?\d+", t):
        return int(t)
    try:
        return float(t)
    except ValueError:
        return t


def split_assignment(
    item: str,
    *,
    form: str,
    example: str,
    param_hint: str,
    identifier: bool = True,
    need_value: bool = False,
) -> tuple[str, str]:
    """``"name=value"`` -> ``(name, value)``, both stripped.

    Refused (``"<item> is not <form> (e.g. <example>)"``): no ``=``, an empty
    name, a name that is not a Python identifier (``identifier``), an empty
    value (``need_value``).
    """
    name, eq, raw = item.partition("=")
    name, raw = name.strip(), raw.strip()
    if (
        not eq
        or not name
        or (identifier and not _IDENT.fullmatch(name))
        or (need_value and not raw)
    ):
        raise click.BadParameter(f"{item!r} is not {form} (e.g. {example})", param_hint=param_hint)
    return name, raw


def _sets(values: tuple[str, ...], many: bool, example: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for item in values:
        name, raw = split_assignment(
            item, form="field=value", example=f"--set {example}", param_hint="--set"
        )
        vals = split_list(raw) if many else [raw]
        if not vals or vals == [""]:
            raise click.BadParameter(f"{item!r} gives no value for {name!r}", param_hint="--set")
        out[name] = [parse_scalar(v) for v in vals]
    return out


def parse_sets(values: tuple[str, ...], example: str = "exp_table_size=1024") -> dict[str, Any]:
    """``--set FIELD=VALUE`` items -> ``{field: value}`` (one value each, :func:`parse_scalar`)."""
    return {k: v[0] for k, v in _sets(values, False, example).items()}


def parse_set_lists(
    values: tuple[str, ...], example: str = "exp_table_size=1024"
) -> dict[str, list[Any]]:
    """``--set FIELD=V1,V2,...`` items -> ``{field: [values]}`` (sweep/tune grids)."""
    return _sets(values, True, example)


def check_fmt(value: str, hint: str) -> str:
    """A fixed-point format in its canonical HLS spelling, or BadParameter for ``hint``."""
    try:
        return str(FixedFormat.parse(value))
    except FixedPointError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


def fmt_callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """click callback of a format option (a multiple option takes comma lists too)."""
    hint = f"--{param.name.replace('_', '-')}" if param.name else None
    if value is None:
        return None
    if isinstance(value, tuple):
        out: list[str] = []
        for v in value:
            out += [check_fmt(x, hint or "") for x in split_list(v)]
        return tuple(out)
    return check_fmt(value, hint or "")


def method_class(op: str, method: str) -> Any:
    """The spec class of ``op``/``method`` (BadParameter for ``--method`` if unknown)."""
    from hwapprox.approx.registry import get_method

    try:
        return get_method(op, method)
    except SpecError as exc:
        raise click.BadParameter(str(exc), param_hint="--method") from None
    except (ModuleNotFoundError, AttributeError) as exc:
        raise click.ClickException(
            f"{op}/{method} is registered but not importable yet ({exc})"
        ) from None
