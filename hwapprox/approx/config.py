"""Per-site approximation config: which method and formats each nonlinear site uses.

Shared by ``hwapprox validate`` (ONNX emulation) and the HLS flow. The plain
data form (a dict, or the same in YAML) is::

    defaults:                       # per operator; an operator left out stays float
      softmax: {method: ibert, in_fmt: "ap_fixed<16,6,AP_RND,AP_SAT>", out_fmt: ...}
      gelu: {method: pwl, segments: 16}
      layernorm: float              # keep every LayerNorm in float
    sites:                          # per site name (the importer's site names)
      encoder.0.softmax: {method: shiftmax}     # other method: only these fields
      encoder.1.gelu: {segments: 32}            # same method: merged over defaults
      head.layernorm: float                     # this site stays float

Resolution of one site of operator ``op`` (see :meth:`ApproxConfig.resolve`):

1. ``sites[name]`` is ``"float"`` -> no approximation (``None``).
2. Otherwise start from ``defaults[op]`` (``"float"`` or absent -> the site is
   float unless ``sites[name]`` names a ``method``).
3. A ``sites[name]`` dict is merged over the defaults when it names no method or
   the same method; when it names another method it replaces them entirely.
4. ``in_fmt`` omitted or ``"auto"``: the calibrated input format of the site
   when one is given (``in_fmts``), else the spec class default.
5. Model constants of the site (``site_fields``, e.g. LayerNorm ``eps``) fill
   fields of the spec class that the config does not set.
6. The spec is built with :func:`hwapprox.approx.registry.make_spec`, so unknown
   methods and fields fail with the list of what exists.

An optional ``operator`` key in a site entry (as written by
:meth:`ApproxSpec.to_config`) must match the site's operator, so the output of
:meth:`ApproxConfig.from_specs` round-trips.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hwapprox.approx.base import ApproxSpec, Operator, SpecError, field_names
from hwapprox.approx.registry import get_method, make_spec
from hwapprox.fixed import FixedFormat

__all__ = ["FLOAT", "ApproxConfig", "load_config"]

#: The word that keeps a site (or an operator's default) in float.
FLOAT = "float"
_AUTO = "auto"
_TOP_KEYS = ("defaults", "sites")

SiteEntry = dict[str, Any] | str


def _operator(op: str | Operator, where: str) -> Operator:
    try:
        return Operator(op)
    except ValueError:
        names = ", ".join(o.value for o in Operator)
        raise SpecError(f"{where}: unknown operator {op!r}; expected one of: {names}") from None


def _entry(value: Any, where: str) -> SiteEntry:
    """Validate one defaults/sites entry: ``"float"`` or a dict of fields."""
    if value is None or value == FLOAT:
        return FLOAT
    if isinstance(value, str):
        raise SpecError(
            f"{where}: expected a mapping of spec fields or {FLOAT!r}, got the string {value!r}"
        )
    if not isinstance(value, Mapping):
        raise SpecError(
            f"{where}: expected a mapping of spec fields or {FLOAT!r}, "
            f"got {type(value).__name__} {value!r}"
        )
    out = {}
    for k, v in value.items():
        if not isinstance(k, str):
            raise SpecError(f"{where}: field names must be strings, got {k!r}")
        out[k] = v
    if "method" in out and not isinstance(out["method"], str):
        raise SpecError(f"{where}: method must be a string, got {out['method']!r}")
    return out


@dataclass(frozen=True)
class ApproxConfig:
    """Validated config: per-operator defaults plus per-site overrides."""

    defaults: dict[Operator, SiteEntry] = field(default_factory=dict)
    sites: dict[str, SiteEntry] = field(default_factory=dict)

    # -- construction ----------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ApproxConfig:
        """Parse the plain-data form; errors name the offending key and value."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise SpecError(
                f"approximation config must be a mapping with keys {_TOP_KEYS}, "
                f"got {type(data).__name__}"
            )
        unknown = sorted(set(data) - set(_TOP_KEYS))
        if unknown:
            raise SpecError(
                f"approximation config has unknown key(s) {', '.join(map(str, unknown))}; "
                f"allowed: {', '.join(_TOP_KEYS)}"
            )
        raw_defaults = data.get("defaults") or {}
        raw_sites = data.get("sites") or {}
        if not isinstance(raw_defaults, Mapping):
            raise SpecError(f"config 'defaults' must be a mapping, got {raw_defaults!r}")
        if not isinstance(raw_sites, Mapping):
            raise SpecError(f"config 'sites' must be a mapping, got {raw_sites!r}")
        defaults: dict[Operator, SiteEntry] = {}
        for k, v in raw_defaults.items():
            op = _operator(k, "config defaults")
            entry = _entry(v, f"config defaults.{op}")
            if isinstance(entry, dict):
                if "method" not in entry:
                    raise SpecError(f"config defaults.{op} needs a 'method'")
                get_method(op, entry["method"])  # fail early on unknown methods
            defaults[op] = entry
        sites = {str(k): _entry(v, f"config sites.{k}") for k, v in raw_sites.items()}
        return cls(defaults, sites)

    @classmethod
    def from_specs(cls, specs: Mapping[str, ApproxSpec | None]) -> ApproxConfig:
        """A fully explicit config: every site with its complete spec (or float)."""
        sites: dict[str, SiteEntry] = {
            name: FLOAT if spec is None else spec.to_config() for name, spec in specs.items()
        }
        return cls({}, sites)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (YAML/JSON-ready); inverse of :meth:`from_dict`."""
        return {
            "defaults": {str(op): _plain(e) for op, e in self.defaults.items()},
            "sites": {name: _plain(e) for name, e in self.sites.items()},
        }

    def with_default(self, op: str | Operator, entry: SiteEntry) -> ApproxConfig:
        """A copy with ``defaults[op]`` replaced (validated)."""
        d = self.to_dict()
        d["defaults"][str(_operator(op, "with_default"))] = entry
        return ApproxConfig.from_dict(d)

    def with_site(self, name: str, entry: SiteEntry) -> ApproxConfig:
        """A copy with ``sites[name]`` replaced (validated)."""
        d = self.to_dict()
        d["sites"][name] = entry
        return ApproxConfig.from_dict(d)

    # -- resolution --------------------------------------------------------------
    def resolve(
        self,
        sites: Mapping[str, str | Operator],
        *,
        in_fmts: Mapping[str, FixedFormat | str] | None = None,
        site_fields: Mapping[str, Mapping[str, Any]] | None = None,
        known: Iterable[str] | None = None,
    ) -> dict[str, ApproxSpec | None]:
        """Spec per site (``None`` = float) for ``sites`` (name -> operator).

        Site names in the config that are not in ``known`` (default: ``sites``;
        pass every site of the model when resolving a subset) are an error
        listing the known names (a typo must not silently leave a site float).
        """
        names = list(sites) if known is None else list(known)
        unknown = sorted(set(self.sites) - set(names))
        if unknown:
            raise SpecError(
                f"config names unknown site(s) {', '.join(unknown)}; "
                f"sites of this model: {', '.join(names) or '(none)'}"
            )
        in_fmts = in_fmts or {}
        site_fields = site_fields or {}
        return {
            name: self.resolve_one(
                name, op, in_fmt=in_fmts.get(name), site_fields=site_fields.get(name)
            )
            for name, op in sites.items()
        }

    def resolve_one(
        self,
        name: str,
        op: str | Operator,
        *,
        in_fmt: FixedFormat | str | None = None,
        site_fields: Mapping[str, Any] | None = None,
    ) -> ApproxSpec | None:
        """Spec of one site (see the module docstring for the rules)."""
        operator = _operator(op, f"site {name}")
        where = f"site {name} ({operator})"
        site = self.sites.get(name)
        if site == FLOAT:
            return None
        base = self.defaults.get(operator, FLOAT)
        fields: dict[str, Any]
        if isinstance(site, dict):
            site = dict(site)
            site_op = site.pop("operator", None)
            if site_op is not None and _operator(site_op, where) is not operator:
                raise SpecError(f"{where}: config entry is for operator {site_op!r}")
            same = "method" not in site or (
                isinstance(base, dict) and site["method"] == base["method"]
            )
            if same:
                if base == FLOAT:
                    raise SpecError(
                        f"{where}: entry has no 'method' and defaults.{operator} is float; "
                        f"name a method"
                    )
                fields = {**base, **site}  # type: ignore[dict-item]
            else:
                fields = site
        elif base == FLOAT:
            return None
        else:
            fields = dict(base)  # type: ignore[arg-type]
        method = fields.pop("method")
        cls = get_method(operator, method)
        known = field_names(cls)
        if fields.get("in_fmt", _AUTO) == _AUTO:
            fields.pop("in_fmt", None)
            if in_fmt is not None:
                fields["in_fmt"] = in_fmt
        calibrated = dict(site_fields or {})
        phi = calibrated.pop("unified_max", None)  # used only where the config says auto
        if fields.get("unified_max") == _AUTO:
            if phi is None:
                raise SpecError(
                    f"{where}: unified_max: auto needs a φ calibrated from the site's rows "
                    "(hwapprox validate computes it); give a number instead"
                )
            fields["unified_max"] = phi
        for k, v in calibrated.items():
            if k in known and k not in fields:
                fields[k] = v
        for k, v in list(fields.items()):
            if isinstance(v, list):
                fields[k] = tuple(v)
        try:
            return make_spec(operator, method, **fields)
        except SpecError as exc:
            raise SpecError(f"{where}: {exc}") from None
        except TypeError as exc:  # a field of the wrong type deep in a spec
            raise SpecError(f"{where}: {exc}") from None


def _plain(entry: SiteEntry) -> Any:
    if isinstance(entry, str):
        return entry
    out: dict[str, Any] = {}
    for k, v in entry.items():
        if isinstance(v, FixedFormat):
            v = str(v)
        elif isinstance(v, tuple):
            v = list(v)
        out[k] = v
    return out


def load_config(source: str | Path | Mapping[str, Any] | ApproxConfig | None) -> ApproxConfig:
    """An :class:`ApproxConfig` from a YAML/JSON file, a dict, or ``None`` (empty)."""
    if isinstance(source, ApproxConfig):
        return source
    if source is None or isinstance(source, Mapping):
        return ApproxConfig.from_dict(source)
    path = Path(source)
    if not path.is_file():
        raise SpecError(f"config file {str(path)!r} does not exist")
    import yaml  # JSON is a subset of YAML

    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(f"config file {str(path)!r} is not valid YAML: {exc}") from None
    try:
        return ApproxConfig.from_dict(data)
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from None
