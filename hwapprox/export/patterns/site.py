"""What a site is: :class:`Site`, the site kinds and their method/field tables, and the
small node helpers every pattern uses."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import NodeProto, helper

from hwapprox.approx.base import Operator
from hwapprox.export.masks import SiteMask

__all__ = ["CLIP_LIMITS", "CONST_RTOL", "KIND_FIELDS", "KIND_METHODS", "KIND_SPEC_DEFAULTS", "Site"]

#: Relative tolerance when matching pattern constants (√2, 0.5, 0.044715, ...).
CONST_RTOL = 1e-4


#: Clipped-softmax constants the online softmax takes: γ in [-8, 0], ζ in [1, 8].
CLIP_LIMITS = {"clip_gamma": (-8.0, 0.0), "clip_zeta": (1.0, 8.0)}


#: Site kinds beyond the operator names, and what an approximating spec must set.
KIND_FIELDS = {
    "softmax1": ("off_by_one",),
    "clipped_softmax": ("clip_gamma", "clip_zeta"),
    "sigmoid_attention": ("bias",),
    "relu_attention": ("seq_len",),
}


#: Site kinds that only some methods of their operator compute (RMSNorm has no mean;
#: I-BERT's GELU polynomial is of erf, not of CLIP's quick_gelu): the methods, first
#: the one a config that names another method of the operator gets.
KIND_METHODS: dict[str, tuple[str, ...]] = {
    "rmsnorm": ("rmsnorm",),
    "quick_gelu": ("edgemoe", "shiftgelu", "pwl", "lut"),
    "silu": ("edgemoe", "pwl", "lut"),
}


#: Spec fields a site kind gets by default, per method, where the operator's defaults
#: are built for another function: SiLU's correction to ReLU, ``δ(t) = t·σ(-t)``, is
#: still 0.022 at t = 5.5 where the erf GELU's is 1e-7, so edgemoe's table covers
#: ``|x| < 16`` (``δ(16) = 1.8e-6``; 0.62 output LSB at ``ap_fixed<16,5>``) and pwl fits
#: ``[-16, 16]`` with 16 segments. A config that sets a field keeps its value.
KIND_SPEC_DEFAULTS: dict[str, dict[str, dict[str, Any]]] = {
    "silu": {"edgemoe": {"table_size": 513}, "pwl": {"lo": -16.0, "hi": 16.0, "segments": 16}},
}


#: the GELU reference form of each sigmoid-form GELU site kind
_SIGMOID_KIND_FORMS = {"quick_gelu": "quick", "silu": "silu"}


#: Ops through which a tensor may be computed from shapes only (a run-time length n).
_SHAPE_ONLY_OPS = frozenset(
    {"Shape", "Size", "Gather", "Slice", "Squeeze", "Unsqueeze", "Cast", "Concat", "Reshape"}
)


@dataclass(frozen=True, eq=False)
class Site:
    """One nonlinear site: ``output = f(input)`` over ``nodes`` of the graph.

    ``axis`` is the reduction axis as written in the model (may be negative);
    ``trailing`` means rows are the flattened dims ``axis..rank-1`` (LayerNorm,
    opset < 13 Softmax) rather than the single ``axis``. ``gamma``/``beta``
    (LayerNorm) are float64 arrays broadcast over the row, or None.
    ``approximate`` is ``"none"``/``"tanh"`` for GELU. ``pattern`` says how the
    site was found (``"op"``, ``"erf"``, ``"tanh"``, ``"decomposed"``).
    ``mask`` (softmax) is the attention mask found in front of the site
    (:mod:`hwapprox.export.masks`), or None. ``kind`` is the function computed:
    the operator name, or ``softmax1``/``clipped_softmax`` (softmax operator),
    ``sigmoid_attention``/``relu_attention`` (``operator`` None: no operator in
    this build); ``params`` the constants found (module docstring).
    """

    name: str
    operator: Operator | None
    input: str
    output: str
    nodes: tuple[str, ...]
    pattern: str = "op"
    axis: int | None = None
    trailing: bool = False
    epsilon: float | None = None
    gamma: np.ndarray | None = field(default=None, repr=False)
    beta: np.ndarray | None = field(default=None, repr=False)
    approximate: str | None = None
    shape: tuple[int | str | None, ...] | None = None
    mask: SiteMask | None = None
    #: a fused attention site (:mod:`hwapprox.export.fused`): the V tensor of the
    #: ``P·V`` MatMul the site also covers (``output`` is then the context), else None
    fused_v: str | None = None
    kind: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.kind:
            if self.operator is None:
                raise ValueError(f"site {self.name}: a site without an operator needs a kind")
            object.__setattr__(self, "kind", self.operator.value)

    def fields_for_spec(self) -> dict[str, Any]:
        """Model constants a spec may take: LayerNorm ``eps``, GELU ``form`` (erf/tanh/quick),
        softmax ``off_by_one`` (Softmax_1) or ``clip_gamma``/``clip_zeta`` (clipped)."""
        if self.operator is Operator.GELU:
            return {"form": self.gelu_form}
        if self.kind in KIND_FIELDS:
            return {k: self.params[k] for k in KIND_FIELDS[self.kind] if k in self.params}
        return {"eps": self.epsilon} if self.epsilon is not None else {}

    @property
    def gelu_form(self) -> str:
        """The GELU reference form of a GELU site: ``quick`` (a ``quick_gelu`` site),
        ``silu`` (a ``silu`` site), ``tanh`` (``approximate="tanh"``) or ``erf``."""
        if self.kind in _SIGMOID_KIND_FORMS:
            return _SIGMOID_KIND_FORMS[self.kind]
        return "tanh" if self.approximate == "tanh" else "erf"

    def spec_mismatch(self, spec: Any) -> str | None:
        """Why ``spec`` does not compute this site's function (a Softmax_1 or clipped
        site needs a method with those options, set to the model's constants), or None."""
        allowed = KIND_METHODS.get(self.kind)
        method = getattr(spec, "method", None)
        if allowed is not None and method not in allowed:
            return (
                f"site {self.name} is a {self.kind} but method {method} computes another "
                f"function; use method {' or '.join(allowed)} or keep the site float"
            )
        want = _SIGMOID_KIND_FORMS.get(self.kind)
        if want is not None and getattr(spec, "form", want) != want:
            what = "x·sigmoid(1.702x)" if want == "quick" else "x·sigmoid(x)"
            return (
                f"site {self.name} is a {self.kind} {what} but the spec sets "
                f"form={spec.form!r}; leave form out of the config (it is taken from the model)"
            )
        for k, v in self.fields_for_spec().items():
            if self.kind not in KIND_FIELDS:
                break
            if not hasattr(spec, k):
                return (
                    f"site {self.name} is a {self.kind} ({k}={v!r}) but method "
                    f"{getattr(spec, 'method', type(spec).__name__)} has no {k} option; "
                    f"use method online or keep the site float"
                )
            got = getattr(spec, k)
            if isinstance(v, bool | int):
                ok = got == v
            else:
                ok = got is not None and math.isclose(got, v, abs_tol=1e-6)
            if not ok:
                return (
                    f"site {self.name} is a {self.kind} with {k}={v!r} but the spec sets "
                    f"{k}={got!r}; leave {k} out of the config (it is taken from the model)"
                )
        return None

    def as_dict(self) -> dict[str, Any]:
        """Plain data for reports (arrays summarised)."""
        return {
            "name": self.name,
            "operator": None if self.operator is None else str(self.operator),
            "pattern": self.pattern,
            "input": self.input,
            "output": self.output,
            "nodes": list(self.nodes),
            "axis": self.axis,
            "trailing": self.trailing,
            "epsilon": self.epsilon,
            "approximate": self.approximate,
            "gamma_shape": None if self.gamma is None else list(self.gamma.shape),
            "beta_shape": None if self.beta is None else list(self.beta.shape),
            "shape": None if self.shape is None else list(self.shape),
            "mask": None if self.mask is None else self.mask.as_dict(),
            "fused_v": self.fused_v,
            "kind": self.kind,
            "params": dict(self.params),
        }


def _close(value: float | None, target: float) -> bool:
    return value is not None and math.isclose(value, target, rel_tol=CONST_RTOL)


def _other(node: NodeProto, name: str) -> str | None:
    """The other input of a binary node one of whose inputs is ``name``."""
    if len(node.input) != 2:
        return None
    a, b = node.input
    if a == name:
        return b
    if b == name:
        return a
    return None


def _attr(node: NodeProto, name: str, default: Any = None) -> Any:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default
