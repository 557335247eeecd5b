"""Find the nonlinear sites of an ONNX graph: single operators and exporter patterns.

Recognised (main graph only; subgraphs of If/Loop are not searched):

* ``Softmax`` -- opset >= 13: one axis (default -1). Opset < 13: the input is
  coerced to 2-D at ``axis`` (default 1) and softmax runs over the flattened
  trailing dims; recorded as ``trailing=True`` and emulated the same way.
* ``LayerNormalization`` (opset 17) -- rows are the flattened dims from ``axis``
  (default -1) to the end; ``Scale``/``B`` must be constants (else the node is
  skipped with a reason); the optional ``Mean``/``InvStdDev`` outputs must be
  unused.
* ``Gelu`` (opset 20), ``approximate`` ``"none"`` or ``"tanh"``.
* Erf-pattern GELU as PyTorch/HuggingFace export it: ``u = Div(x, √2)`` or
  ``Mul(x, 1/√2)``, ``Erf(u)``, ``Add(·, 1)``, then ``0.5·x·(1+erf)`` as two
  ``Mul`` in any association (``(x·a)·0.5``, ``(x·0.5)·a``, ``(a·0.5)·x``; the
  0.5 may be ``Div(·, 2)``). Constants from initializers or ``Constant``
  nodes, any operand order of commutative ops.
* tanh-pattern GELU: ``Tanh(c·(x + k·x³))`` with ``c = √(2/π)``, ``k = 0.044715``,
  ``x³`` as ``Pow(x, 3)`` or ``Mul(Mul(x, x), x)``, then ``Add 1`` and the same
  ``0.5·x·(…)`` ending.
* Decomposed LayerNorm (PyTorch opset < 17): ``ReduceMean(x)``, ``Sub(x, mean)``,
  ``Pow(d, 2)`` (or ``Mul(d, d)``), ``ReduceMean``, ``Add(·, eps)``, ``Sqrt``,
  ``Div(d, ·)``, then optionally ``Mul`` by a constant gamma and ``Add`` of a
  constant beta; reduce axes as attribute (opset < 18) or input (opset 18), a
  trailing set of axes.

* RMSNorm (site ``kind`` ``"rmsnorm"``, operator ``layernorm``; approximated by the
  methods in :data:`KIND_METHODS`): ONNX ``RMSNormalization`` (opset 23; ``Scale``
  a constant), or written out as the ``transformers`` modeling code exports it:
  ``Pow(x, 2)`` (or ``Mul(x, x)``), ``ReduceMean`` over trailing axes, ``Add(·, eps)``,
  ``Sqrt``, then ``Div(x, ·)``, or ``Mul(x, r)`` with ``r = Reciprocal(·)`` or
  ``Div(1, ·)`` (torch's ``rsqrt``); a float-to-float ``Cast`` of ``x`` before and of
  the result after (``.to(float32)`` / ``.to(input_dtype)``) is part of the site;
  then optionally ``Mul`` by a constant gamma.

Attention normalisers other than softmax (site ``kind``, constants in ``params``):

* ``softmax1`` (Softmax_1, "off by one": ``exp(x_i) / (1 + Σ exp(x_j))``), two
  spellings: ``exp(x - m) / (exp(-m) + ReduceSum(exp(x - m)))`` with ``m =
  ReduceMax(x)`` over one axis (``exp(-m)`` as ``Exp(Neg(m))``, ``Exp(0 - m)`` or
  ``Exp(m · -1)``; pattern ``"explicit"``), and a zero logit concatenated at
  either end of the softmax axis, ``Softmax``, then the zero's column sliced off
  (the zeros a ``ConstantOfShape``/``Expand`` of 0 shaped from the input; pattern
  ``"zero_logit"``). Emulated by the online softmax with ``off_by_one=True``.
* ``clipped_softmax`` (Bondarenko et al. 2023): ``Softmax -> Mul(ζ - γ) -> Add(γ)
  -> Clip(0, 1)`` (or ``Max(·, 0)``/``Min(·, 1)`` in either order), scalar
  constants, γ <= 0 and ζ >= 1 (:data:`CLIP_LIMITS`); params ``clip_gamma``,
  ``clip_zeta``. Emulated by the online softmax with those options. Other clip
  bounds or constants out of range leave a plain ``Softmax`` site (reason in
  ``skipped``).
* ``sigmoid_attention`` (Ramapuram et al. 2024): ``Sigmoid(x + b)`` feeding a
  ``P·V`` MatMul; ``b`` a scalar constant (params ``bias`` and ``n = exp(-b)``) or
  absent (``bias`` 0).
* ``relu_attention`` (Wortsman et al. 2023): ``Relu(x)`` then ``Div(·, n)`` or
  ``Mul(·, 1/n)`` feeding a ``P·V`` MatMul; ``n`` a scalar constant (params ``n``)
  or a scalar computed from tensor shapes only (``torch ... / scores.size(-1)``;
  params ``n_tensor`` and ``n_form`` ``"div"``/``"mul"``: read at run time).

Sigmoid and ReLU attention are sites of the operators ``sigmoid_attention``
(spec field ``bias`` = the model's b) and ``relu_attention`` (``seq_len`` = the
model's constant n; a run-time n is read per call by the emulator, which sets
``seq_len`` to it). A constant n that is not an integer leaves the site float
(reason in ``skipped``).

* ``quick_gelu`` (CLIP's ``x·σ(1.702x)``: ``Mul(x, c)``, ``Sigmoid``, ``Mul(x, ·)``,
  params ``alpha`` = c): a GELU site of kind ``quick_gelu``; its specs take
  ``form="quick"``, so the float reference the errors are measured against is
  ``quick_gelu`` itself. :data:`KIND_METHODS` lists the methods that compute it
  (:mod:`hwapprox.approx.gelu` says how each does); I-BERT's GELU approximates
  the erf GELU only and is refused for it (a config naming it there gets the
  message of :meth:`Site.spec_mismatch`).
* ``silu`` (``x·σ(x)``: ``Sigmoid(x)``, ``Mul(x, ·)``; the gate of Llama-style gated
  FFNs, ``SiLU(x·Wg) ⊙ (x·Wu)``): a GELU site of kind ``silu`` (the same family as
  quick_gelu at slope 1, params ``alpha`` = 1), specs ``form="silu"``; edgemoe, pwl
  and lut compute it, with the ranges :data:`KIND_SPEC_DEFAULTS` gives (SiLU's
  correction to ReLU decays as ``t·e^-t``, far more slowly than GELU's).

Constants must match to relative tolerance :data:`CONST_RTOL` (float32 exports).
Every intermediate tensor of a pattern must be used only inside it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto, helper, numpy_helper

from hwapprox.approx.base import Operator
from hwapprox.approx.config import FLOAT, ApproxConfig
from hwapprox.approx.gelu import QUICK_GELU_ALPHA
from hwapprox.approx.registry import get_method
from hwapprox.export.graph import GraphIndex, opset_version
from hwapprox.export.masks import SiteMask, find_mask

__all__ = [
    "CLIP_LIMITS",
    "CONST_RTOL",
    "KIND_METHODS",
    "Site",
    "SiteScan",
    "config_for_kinds",
    "find_all",
    "find_sites",
]

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


class _Finder:
    def __init__(self, model: ModelProto) -> None:
        self.model = model
        self.g = GraphIndex(model)
        self.opset = opset_version(model)
        self.used: set[str] = set()
        self.sites: list[Site] = []
        self.unsupported: list[Site] = []
        self.skipped: dict[str, str] = {}

    # -- helpers -----------------------------------------------------------------
    def _is(self, node: NodeProto | None, op: str) -> bool:
        return node is not None and node.op_type == op and node.domain in ("", "ai.onnx")

    def _add(self, site: Site) -> None:
        if self.used.intersection(site.nodes):
            return
        self.used.update(site.nodes)
        self.sites.append(site)

    def _half_x(self, a_out: str, x: str) -> tuple[list[NodeProto], str] | None:
        """Match ``0.5 · x · a`` built from ``a`` (two Mul, any association)."""
        g = self.g
        m1 = g.sole_consumer(a_out)
        if not self._is(m1, "Mul"):
            return None
        assert m1 is not None
        o = _other(m1, a_out)
        if o is None:
            return None
        if o == x or _close(g.scalar(o), 0.5):
            m2 = g.sole_consumer(m1.output[0])
            if m2 is None:
                return None
            if o == x:  # (x·a) then ·0.5 or /2
                c = _other(m2, m1.output[0])
                if c is None:
                    return None
                if (self._is(m2, "Mul") and _close(g.scalar(c), 0.5)) or (
                    self._is(m2, "Div") and m2.input[0] == m1.output[0] and _close(g.scalar(c), 2)
                ):
                    return [m1, m2], m2.output[0]
                return None
            # (a·0.5) then ·x
            if self._is(m2, "Mul") and _other(m2, m1.output[0]) == x:
                return [m1, m2], m2.output[0]
            return None
        # (x·0.5 or x/2) · a
        h = g.producer.get(o)
        if h is None or len(g.consumers[o]) != 1:
            return None
        if self._is(h, "Mul") and _other(h, x) is not None and _close(g.scalar(_other(h, x)), 0.5):
            return [h, m1], m1.output[0]
        if self._is(h, "Div") and h.input[0] == x and _close(g.scalar(h.input[1]), 2.0):
            return [h, m1], m1.output[0]
        return None

    def _add_one(self, t: str) -> NodeProto | None:
        a = self.g.sole_consumer(t)
        if self._is(a, "Add") and _close(self.g.scalar(_other(a, t) or ""), 1.0):  # type: ignore[arg-type]
            return a
        return None

    # -- single operators ----------------------------------------------------------
    def op_sites(self) -> None:
        g = self.g
        for node in self.model.graph.node:
            if node.domain not in ("", "ai.onnx"):
                continue
            if node.op_type == "Softmax":
                axis, trailing = self._softmax_axis(node)
                self._add(
                    Site(
                        node.name,
                        Operator.SOFTMAX,
                        node.input[0],
                        node.output[0],
                        (node.name,),
                        axis=axis,
                        trailing=trailing,
                        shape=g.shape.get(node.input[0]),
                        mask=find_mask(g, node.input[0]),
                    )
                )
            elif node.op_type == "Gelu":
                approx = _attr(node, "approximate", b"none")
                approx = approx.decode() if isinstance(approx, bytes) else str(approx)
                self._add(
                    Site(
                        node.name,
                        Operator.GELU,
                        node.input[0],
                        node.output[0],
                        (node.name,),
                        approximate=approx,
                        shape=g.shape.get(node.input[0]),
                    )
                )
            elif node.op_type == "LayerNormalization":
                self._layernorm_op(node)
            elif node.op_type == "RMSNormalization":
                self._rmsnorm_op(node)

    def _softmax_axis(self, node: NodeProto) -> tuple[int, bool]:
        """(axis, trailing) of a Softmax node (see the module docstring)."""
        if self.opset >= 13:
            return int(_attr(node, "axis", -1)), False
        return int(_attr(node, "axis", 1)), True

    def _layernorm_op(self, node: NodeProto) -> None:
        g = self.g
        extra = [o for o in node.output[1:] if o and (g.consumers.get(o) or o in g.graph_outputs)]
        if extra:
            self.skipped[node.name] = f"LayerNormalization outputs {extra} (Mean/InvStdDev) used"
            return
        gamma = g.const(node.input[1])
        beta = g.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if gamma is None or (len(node.input) > 2 and node.input[2] and beta is None):
            self.skipped[node.name] = "LayerNormalization Scale/B are not constants"
            return
        self._add_norm_op(node, gamma, beta)

    def _rmsnorm_op(self, node: NodeProto) -> None:
        """ONNX ``RMSNormalization`` (opset 23): ``X``, constant ``Scale``, ``epsilon``."""
        g = self.g
        gamma = g.const(node.input[1]) if len(node.input) > 1 and node.input[1] else None
        if gamma is None:
            self.skipped[node.name] = "RMSNormalization Scale is not a constant"
            return
        self._add_norm_op(node, gamma, None, kind="rmsnorm")

    def _add_norm_op(self, node: NodeProto, gamma: Any, beta: Any | None, kind: str = "") -> None:
        """The site of a one-node normalisation op (its ``axis`` and ``epsilon``
        attributes, constant gamma and beta; ``kind``: the site kind, "" for the
        operator's own)."""
        self._add(
            Site(
                node.name,
                Operator.LAYERNORM,
                node.input[0],
                node.output[0],
                (node.name,),
                axis=int(_attr(node, "axis", -1)),
                trailing=True,
                epsilon=float(np.float32(_attr(node, "epsilon", 1e-5))),
                gamma=np.asarray(gamma, dtype=np.float64),
                beta=None if beta is None else np.asarray(beta, dtype=np.float64),
                shape=self.g.shape.get(node.input[0]),
                kind=kind,
            )
        )

    # -- GELU patterns -------------------------------------------------------------
    def erf_gelu(self) -> None:
        g = self.g
        for e in self.model.graph.node:
            if not self._is(e, "Erf") or e.name in self.used:
                continue
            s = g.producer.get(e.input[0])
            if s is None or len(g.consumers[e.input[0]]) != 1:
                continue
            if self._is(s, "Div") and _close(g.scalar(s.input[1]), math.sqrt(2.0)):
                x = s.input[0]
            elif self._is(s, "Mul"):
                cands = [
                    i
                    for i, c in ((s.input[0], s.input[1]), (s.input[1], s.input[0]))
                    if _close(g.scalar(c), 1.0 / math.sqrt(2.0))
                ]
                if not cands:
                    continue
                x = cands[0]
            else:
                continue
            self._gelu_tail(e, x, [s, e], "erf", "none")

    def tanh_gelu(self) -> None:
        g = self.g
        for t in self.model.graph.node:
            if not self._is(t, "Tanh") or t.name in self.used:
                continue
            m = g.producer.get(t.input[0])
            if not self._is(m, "Mul"):
                continue
            assert m is not None
            inner = None
            for i, c in ((m.input[0], m.input[1]), (m.input[1], m.input[0])):
                if _close(g.scalar(c), math.sqrt(2.0 / math.pi)):
                    inner = i
            ad = g.producer.get(inner) if inner else None
            if not self._is(ad, "Add"):
                continue
            assert ad is not None
            match = None
            for x, k in ((ad.input[0], ad.input[1]), (ad.input[1], ad.input[0])):
                km = g.producer.get(k)
                if not self._is(km, "Mul"):
                    continue
                assert km is not None
                for cube, c in ((km.input[0], km.input[1]), (km.input[1], km.input[0])):
                    if not _close(g.scalar(c), 0.044715):
                        continue
                    cube_nodes = self._cube(cube, x)
                    if cube_nodes is not None:
                        match = (x, [*cube_nodes, km])
            if match is None:
                continue
            x, pre = match
            self._gelu_tail(t, x, [*pre, ad, m, t], "tanh", "tanh")

    def _gelu_tail(
        self, anchor: NodeProto, x: str, head: list[NodeProto], form: str, approximate: str
    ) -> None:
        """``anchor`` (Erf or Tanh) ``-> + 1 -> · x/2``: a GELU site over ``head`` and the tail."""
        a = self._add_one(anchor.output[0])
        if a is None:
            return
        tail = self._half_x(a.output[0], x)
        if tail is None:
            return
        nodes, out = tail
        self._pattern_site(
            anchor.name, Operator.GELU, x, out, [*head, a, *nodes], form, approximate=approximate
        )

    def _cube(self, cube: str, x: str) -> list[NodeProto] | None:
        g = self.g
        p = g.producer.get(cube)
        if self._is(p, "Pow") and p is not None and p.input[0] == x:
            if _close(g.scalar(p.input[1]), 3.0):
                return [p]
            return None
        if self._is(p, "Mul") and p is not None:
            sq = _other(p, x)
            q = g.producer.get(sq) if sq else None
            if self._is(q, "Mul") and q is not None and list(q.input) == [x, x]:
                return [q, p]
            if (
                self._is(q, "Pow")
                and q is not None
                and q.input[0] == x
                and _close(g.scalar(q.input[1]), 2.0)
            ):
                return [q, p]
        return None

    def _pattern_site(
        self,
        name: str,
        op: Operator,
        x: str,
        out: str,
        covered: list[NodeProto],
        pattern: str,
        **kw: Any,
    ) -> None:
        names = {n.name for n in covered}
        inner = [o for n in covered for o in n.output if o and o != out]
        if not self.g.internal(inner, names):
            self.skipped[name] = f"{pattern} pattern has intermediates used outside it"
            return
        order = [n.name for n in self.model.graph.node if n.name in names]
        self._add(Site(name, op, x, out, tuple(order), pattern, shape=self.g.shape.get(x), **kw))

    # -- decomposed LayerNorm ------------------------------------------------------
    def _axes(self, node: NodeProto) -> list[int] | None:
        axes = _attr(node, "axes")
        if axes is None and len(node.input) > 1 and node.input[1]:
            v = self.g.const(node.input[1])
            if v is None:
                return None
            axes = [int(a) for a in np.asarray(v).ravel()]
        if axes is None or int(_attr(node, "keepdims", 1)) != 1:
            return None
        return [int(a) for a in axes]

    def decomposed_layernorm(self) -> None:
        g = self.g
        for r1 in self.model.graph.node:
            if not self._is(r1, "ReduceMean") or r1.name in self.used:
                continue
            x = r1.input[0]
            axes = self._axes(r1)
            if not axes:
                continue
            rank = g.rank(x)
            if rank is not None:
                axes = sorted(a + rank if a < 0 else a for a in axes)
                if axes != list(range(rank - len(axes), rank)):
                    self.skipped[r1.name] = f"decomposed LayerNorm over non-trailing axes {axes}"
                    continue
                axis = axes[0] - rank
            elif sorted(axes) == list(range(-len(axes), 0)):
                axis = -len(axes)
            else:
                continue
            sub = g.sole_consumer(r1.output[0])
            if not self._is(sub, "Sub") or sub is None or list(sub.input) != [x, r1.output[0]]:
                continue
            d = sub.output[0]
            cons = g.consumers.get(d, [])
            sq = next((c for c in cons if self._is(c, "Pow") or self._is(c, "Mul")), None)
            div = next((c for c in cons if self._is(c, "Div")), None)
            if sq is None or div is None or len(cons) != 2 or div.input[0] != d:
                continue
            if sq.op_type == "Pow" and not (
                sq.input[0] == d and _close(g.scalar(sq.input[1]), 2.0)
            ):
                continue
            if sq.op_type == "Mul" and list(sq.input) != [d, d]:
                continue
            r2 = g.sole_consumer(sq.output[0])
            if not self._is(r2, "ReduceMean") or r2 is None:
                continue
            axes2 = self._axes(r2)
            if axes2 is None or (
                rank is not None and sorted(a + rank if a < 0 else a for a in axes2) != axes
            ):
                continue
            ae = g.sole_consumer(r2.output[0])
            if not self._is(ae, "Add") or ae is None:
                continue
            eps = g.scalar(_other(ae, r2.output[0]) or "")
            if eps is None:
                continue
            sq_node = g.sole_consumer(ae.output[0])
            if not self._is(sq_node, "Sqrt") or sq_node is None:
                continue
            if g.sole_consumer(sq_node.output[0]) is not div or div.input[1] != sq_node.output[0]:
                continue
            covered = [r1, sub, sq, r2, ae, sq_node, div]
            out = div.output[0]
            gamma = beta = None
            mul = g.only_consumer(out)
            if self._is(mul, "Mul") and mul is not None:
                c = g.const(_other(mul, out) or "")
                if c is not None and _row_vector(c):
                    gamma = np.asarray(c, dtype=np.float64).reshape(-1)
                    covered.append(mul)
                    out = mul.output[0]
            add = g.only_consumer(out)
            if self._is(add, "Add") and add is not None:
                c = g.const(_other(add, out) or "")
                if c is not None and _row_vector(c):
                    beta = np.asarray(c, dtype=np.float64).reshape(-1)
                    covered.append(add)
                    out = add.output[0]
            self._pattern_site(
                r1.name,
                Operator.LAYERNORM,
                x,
                out,
                covered,
                "decomposed",
                axis=axis,
                trailing=True,
                epsilon=eps,
                gamma=gamma,
                beta=beta,
            )

    def _float_cast(self, node: NodeProto | None) -> bool:
        """A ``Cast`` to float32 of a float32 tensor (a no-op ``.to(float32)``)."""
        if not self._is(node, "Cast") or node is None:
            return False
        float32 = 1  # TensorProto.FLOAT
        return (
            int(_attr(node, "to", 0)) == float32 and self.g.elem_type.get(node.input[0]) == float32
        )

    def _trailing_axis(self, node: NodeProto, x: str) -> int | None:
        """The first of the trailing reduce axes of ``node`` over ``x`` (negative), else None."""
        axes = self._axes(node)
        if not axes:
            return None
        rank = self.g.rank(x)
        if rank is not None:
            axes = sorted(a + rank if a < 0 else a for a in axes)
            return axes[0] - rank if axes == list(range(rank - len(axes), rank)) else None
        return -len(axes) if sorted(axes) == list(range(-len(axes), 0)) else None

    def decomposed_rmsnorm(self) -> None:
        """``x / sqrt(mean(x²) + eps) · gamma`` in the spellings of the module docstring."""
        g = self.g
        for r in self.model.graph.node:
            if not self._is(r, "ReduceMean") or r.name in self.used:
                continue
            sq = g.producer.get(r.input[0])
            if sq is None or g.sole_consumer(sq.output[0]) is not r:
                continue
            pow2 = self._is(sq, "Pow") and _close(g.scalar(sq.input[1]), 2.0)
            if not (pow2 or (self._is(sq, "Mul") and sq.input[0] == sq.input[1])):
                continue
            x = sq.input[0]
            axis = self._trailing_axis(r, x)
            if axis is None:
                continue
            ae = g.sole_consumer(r.output[0])
            if not self._is(ae, "Add") or ae is None:
                continue
            eps = g.scalar(_other(ae, r.output[0]) or "")
            sqrt = g.sole_consumer(ae.output[0])
            if eps is None or not self._is(sqrt, "Sqrt") or sqrt is None:
                continue
            covered = [sq, r, ae, sqrt]
            s_out = sqrt.output[0]
            nxt = g.sole_consumer(s_out)
            if nxt is None:
                continue
            if self._is(nxt, "Div") and list(nxt.input) == [x, s_out]:
                norm = nxt
            else:  # x · (1 / sqrt): Reciprocal or Div(1, ·), then Mul with x
                if not (
                    self._is(nxt, "Reciprocal")
                    or (self._is(nxt, "Div") and nxt.input[1] == s_out
                        and _close(g.scalar(nxt.input[0]), 1.0))
                ):  # fmt: skip
                    continue
                covered.append(nxt)
                norm = g.sole_consumer(nxt.output[0])  # type: ignore[assignment]
                if not self._is(norm, "Mul") or _other(norm, nxt.output[0]) != x:
                    continue
            covered.append(norm)
            out = norm.output[0]
            # the .to(float32) before and .to(input_dtype) after, when they are no-ops
            xin = x
            pre = g.producer.get(x)
            if self._float_cast(pre) and g.internal([x], {n.name for n in covered}):
                assert pre is not None
                covered.insert(0, pre)
                xin = pre.input[0]
            post = g.only_consumer(out)
            if self._float_cast(post):
                assert post is not None
                covered.append(post)
                out = post.output[0]
            gamma = None
            mul = g.only_consumer(out)
            if self._is(mul, "Mul") and mul is not None:
                c = g.const(_other(mul, out) or "")
                if c is not None and _row_vector(c):
                    gamma = np.asarray(c, dtype=np.float64).reshape(-1)
                    covered.append(mul)
                    out = mul.output[0]
            self._pattern_site(
                r.name, Operator.LAYERNORM, xin, out, covered, "decomposed", axis=axis,
                trailing=True, epsilon=eps, gamma=gamma, kind="rmsnorm",
            )  # fmt: skip

    def quick_gelu(self) -> None:
        """``x · sigmoid(α·x)``: with α = :data:`QUICK_GELU_ALPHA` (``Mul(x, α)`` before
        the Sigmoid; CLIP's ``quick_gelu``) a GELU site of kind ``quick_gelu`` (specs
        take ``form="quick"``); with no scale (``Sigmoid(x)``, α = 1: SiLU / swish, the
        gate of Llama-style FFNs) a GELU site of kind ``silu`` (``form="silu"``)."""
        g = self.g
        for sg in self.model.graph.node:
            if not self._is(sg, "Sigmoid") or sg.name in self.used:
                continue
            scale = g.producer.get(sg.input[0])
            x, alpha, kind = sg.input[0], 1.0, "silu"
            if self._is(scale, "Mul") and scale is not None:
                for i in (0, 1):
                    a = g.scalar(scale.input[1 - i])
                    if _close(a, QUICK_GELU_ALPHA):
                        x, alpha, kind = scale.input[i], float(a), "quick_gelu"  # type: ignore[arg-type]
                        break
            mul = g.sole_consumer(sg.output[0])
            if not self._is(mul, "Mul") or mul is None or _other(mul, sg.output[0]) != x:
                continue
            covered = [scale, sg, mul] if kind == "quick_gelu" else [sg, mul]
            inner = [c.output[0] for c in covered[:-1]]
            names = {n.name for n in covered if n is not None}
            if not g.internal(inner, names) or self.used & names:
                continue
            self._add(
                Site(
                    covered[0].name, Operator.GELU, x, mul.output[0],  # type: ignore[union-attr]
                    tuple(n.name for n in self.model.graph.node if n.name in names), "sigmoid",
                    shape=g.shape.get(x), kind=kind, params={"alpha": alpha},
                )
            )  # fmt: skip

    # -- attention normalisers ------------------------------------------------------
    def _norm_site(
        self,
        anchor: str,
        op: Operator | None,
        x: str,
        out: str,
        covered: list[NodeProto],
        pattern: str,
        kind: str,
        axis: int,
        params: dict[str, Any],
        trailing: bool = False,
    ) -> None:
        """A normaliser site over ``covered`` (intermediates used only inside it),
        with the attention mask in front of ``x``."""
        names = {n.name for n in covered}
        inner = [o for n in covered for o in n.output if o and o != out]
        if not self.g.internal(inner, names):
            self.skipped[anchor] = f"{kind} ({pattern}) has intermediates used outside it"
            return
        order = tuple(n.name for n in self.model.graph.node if n.name in names)
        site = Site(
            anchor,
            op,  # type: ignore[arg-type]
            x,
            out,
            order,
            pattern,
            axis=axis,
            trailing=trailing,
            shape=self.g.shape.get(x),
            mask=find_mask(self.g, x),
            kind=kind,
            params=params,
        )
        if self.used.intersection(site.nodes):
            return
        self.used.update(site.nodes)
        (self.sites if op is not None else self.unsupported).append(site)

    def _same_axis(self, axes: list[int] | None, axis: int, x: str) -> bool:
        """``axes`` (a reduce node's) is exactly the one axis ``axis`` of ``x``."""
        if axes is None or len(axes) != 1:
            return False
        if axes[0] == axis:
            return True
        rank = self.g.rank(x)
        return rank is not None and (axes[0] % rank) == (axis % rank)

    def softmax1_explicit(self) -> None:
        """``e = Exp(x - ReduceMax(x)); e / (Exp(-m) + ReduceSum(e))`` over one axis."""
        g = self.g
        for r in self.model.graph.node:
            if not self._is(r, "ReduceMax") or r.name in self.used:
                continue
            x, m = r.input[0], r.output[0]
            axes = self._axes(r)
            if axes is None or len(axes) != 1:
                continue
            axis = axes[0]
            cons = g.consumers.get(m, [])
            sub = next((c for c in cons if self._is(c, "Sub") and list(c.input) == [x, m]), None)
            neg = next((c for c in cons if c is not sub and self._neg_of(c, m)), None)
            if sub is None or neg is None or len(cons) != 2:
                continue
            e1 = g.sole_consumer(sub.output[0])
            e0 = g.sole_consumer(neg.output[0])
            if not (self._is(e1, "Exp") and self._is(e0, "Exp")):
                continue
            assert e1 is not None
            assert e0 is not None
            e = e1.output[0]
            econs = g.consumers.get(e, [])
            rsum = next((c for c in econs if self._is(c, "ReduceSum")), None)
            div = next((c for c in econs if self._is(c, "Div") and c.input[0] == e), None)
            if rsum is None or div is None or len(econs) != 2:
                continue
            if not self._same_axis(self._axes(rsum), axis, x):
                continue
            add = g.sole_consumer(rsum.output[0])
            if (
                not self._is(add, "Add")
                or add is None
                or _other(add, rsum.output[0]) != e0.output[0]
                or g.sole_consumer(e0.output[0]) is not add
                or g.sole_consumer(add.output[0]) is not div
                or div.input[1] != add.output[0]
            ):
                continue
            covered = [r, sub, neg, e1, e0, rsum, add, div]
            self._norm_site(
                r.name, Operator.SOFTMAX, x, div.output[0], covered, "explicit", "softmax1",
                axis, {"off_by_one": True},
            )  # fmt: skip

    def _neg_of(self, node: NodeProto, m: str) -> bool:
        """``node`` computes ``-m``: ``Neg(m)``, ``Sub(0, m)`` or ``Mul(m, -1)``."""
        g = self.g
        if self._is(node, "Neg"):
            return node.input[0] == m
        if self._is(node, "Sub"):
            return node.input[1] == m and g.scalar(node.input[0]) == 0.0
        if self._is(node, "Mul"):
            return _close(g.scalar(_other(node, m) or ""), -1.0)
        return False

    def softmax1_zero_logit(self) -> None:
        """``Concat(zeros, x)`` (or ``(x, zeros)``) on the softmax axis, ``Softmax``,
        then ``Slice`` dropping the zero's column."""
        g = self.g
        for sm in self.model.graph.node:
            if not self._is(sm, "Softmax") or sm.name in self.used:
                continue
            axis, trailing = self._softmax_axis(sm)
            cat = g.producer.get(sm.input[0])
            if trailing or not self._is(cat, "Concat") or cat is None or len(cat.input) != 2:
                continue
            if g.sole_consumer(cat.output[0]) is not sm:
                continue
            rank = g.rank(cat.output[0])
            cax = int(_attr(cat, "axis", 0))
            if rank is None or cax % rank != axis % rank:
                continue
            sl = g.sole_consumer(sm.output[0])
            if not self._is(sl, "Slice") or sl is None:
                continue
            for zi, x in ((0, cat.input[1]), (1, cat.input[0])):
                zeros = self._zero_column(cat.input[zi], x, axis % rank, rank)
                if zeros is None or not self._drops_column(sl, zi, axis % rank, rank):
                    continue
                covered = [*zeros, cat, sm, sl]
                params = {"off_by_one": True, "zero_at": "start" if zi == 0 else "end"}
                self._norm_site(
                    sm.name, Operator.SOFTMAX, x, sl.output[0], covered, "zero_logit",
                    "softmax1", axis, params,
                )  # fmt: skip
                break

    def _zero_column(self, z: str, x: str, axis: int, rank: int) -> list[NodeProto] | None:
        """The nodes making ``z``, a tensor of zeros one column wide on ``axis``,
        from constants and the shape of ``x`` only; None if ``z`` is not that."""
        g = self.g
        shape = g.shape.get(z)
        known = shape is not None and len(shape) == rank and isinstance(shape[axis], int)
        if known and shape[axis] != 1:  # type: ignore[index]
            return None
        p = g.producer.get(z)
        if self._is(p, "ConstantOfShape") and p is not None:
            val = _attr(p, "value")
            if val is not None and np.any(numpy_helper.to_array(val) != 0):
                return None
        elif self._is(p, "Expand") and p is not None:
            c = g.const(p.input[0])
            if c is None or np.any(c != 0):
                return None
        else:
            return None
        nodes: list[NodeProto] = []
        stack = [i for i in p.input if i and g.const(i) is None]
        while stack:
            t = stack.pop()
            q = g.producer.get(t)
            if q is None or q.op_type not in _SHAPE_ONLY_OPS:
                return None
            nodes.append(q)
            if q.op_type in ("Shape", "Size"):
                if q.input[0] != x:
                    src = g.producer.get(q.input[0])
                    # the shape of a slice of x (torch's zeros_like(x[..., :1]))
                    if not (
                        self._is(src, "Slice")
                        and src is not None
                        and src.input[0] == x
                        and self._slice_1d(src, rank) in ((axis, 0, 1), (axis, -1, 2**31 - 1))
                    ):
                        return None
                    nodes.append(src)
                continue
            stack.extend(i for i in q.input if i and g.const(i) is None)
        if not known and not any(self._is(n, "Slice") for n in nodes):
            return None  # width on the axis unknown and not shaped from a slice of x
        return [*nodes, p]

    def _slice_1d(self, sl: NodeProto, rank: int) -> tuple[int, int, int] | None:
        """(axis, start, end) of a constant one-axis, step-1 ``Slice`` (opset >= 10),
        ends at or past 2^31 - 1 reported as 2^31 - 1; else None."""
        g = self.g
        vals = [g.const(i) if i else None for i in sl.input[1:]]
        if len(vals) < 2 or vals[0] is None or vals[1] is None:
            return None
        starts, ends = (np.asarray(v).ravel() for v in vals[:2])
        axes = np.asarray(vals[2]).ravel() if len(vals) > 2 and vals[2] is not None else None
        steps = np.asarray(vals[3]).ravel() if len(vals) > 3 and vals[3] is not None else None
        if starts.size != 1 or ends.size != 1:
            return None
        if axes is None and rank != 1:
            return None
        if axes is not None and axes.size != 1:
            return None
        if steps is not None and int(steps[0]) != 1:
            return None
        ax = 0 if axes is None else int(axes[0]) % rank
        return ax, int(starts[0]), min(int(ends[0]), 2**31 - 1)

    def _drops_column(self, sl: NodeProto, zi: int, axis: int, rank: int) -> bool:
        """``sl`` (Slice) keeps everything on ``axis`` but the first (``zi`` 0) or
        the last (``zi`` 1) column."""
        want = (axis, 1, 2**31 - 1) if zi == 0 else (axis, 0, -1)
        return self._slice_1d(sl, rank) == want

    def clipped_softmax(self) -> None:
        """``Softmax -> Mul(ζ - γ) -> Add(γ) -> Clip(0, 1)``."""
        g = self.g
        for sm in self.model.graph.node:
            if not self._is(sm, "Softmax") or sm.name in self.used:
                continue
            p = sm.output[0]
            mul = g.only_consumer(p)
            if not self._is(mul, "Mul") or mul is None:
                continue
            stretch = g.scalar(_other(mul, p) or "")
            add = g.only_consumer(mul.output[0])
            if stretch is None or not self._is(add, "Add") or add is None:
                continue
            gamma = g.scalar(_other(add, mul.output[0]) or "")
            if gamma is None:
                continue
            clip = self._clip01(add.output[0])
            if clip is None:
                self.skipped.setdefault(
                    sm.name,
                    "Softmax -> Mul -> Add not followed by a clip to [0, 1]: a plain softmax site",
                )
                continue
            zeta = stretch + gamma
            params = {"clip_gamma": gamma, "clip_zeta": zeta}
            bad = [
                f"{k}={v:.6g} not in [{lo:g}, {hi:g}]"
                for k, v in params.items()
                for lo, hi in [CLIP_LIMITS[k]]
                if not lo <= v <= hi
            ]
            if bad:
                self.skipped[sm.name] = (
                    f"clipped softmax with {', '.join(bad)} (Bondarenko et al.: γ <= 0, ζ >= 1): "
                    f"a plain softmax site"
                )
                continue
            axis, trailing = self._softmax_axis(sm)
            self._norm_site(
                sm.name, Operator.SOFTMAX, sm.input[0], clip[-1].output[0],
                [sm, mul, add, *clip], "clip", "clipped_softmax", axis, params, trailing,
            )  # fmt: skip

    def _clip01(self, t: str) -> list[NodeProto] | None:
        """The node(s) clipping ``t`` to exactly [0, 1]: ``Clip`` (bounds as inputs
        or, opset < 11, attributes) or ``Max(·, 0)`` and ``Min(·, 1)`` in either order."""
        g = self.g
        c = g.only_consumer(t)
        if self._is(c, "Clip") and c is not None:
            if len(c.input) >= 3 and c.input[1] and c.input[2]:
                lo, hi = g.scalar(c.input[1]), g.scalar(c.input[2])
            else:
                lo, hi = _attr(c, "min"), _attr(c, "max")
            return [c] if lo == 0.0 and hi == 1.0 else None
        if c is None or c.op_type not in ("Max", "Min") or len(c.input) != 2:
            return None
        c2 = g.only_consumer(c.output[0])
        if c2 is None or {c.op_type, c2.op_type} != {"Max", "Min"} or len(c2.input) != 2:
            return None
        bound = {
            n.op_type: g.scalar(_other(n, src) or "") for n, src in ((c, t), (c2, c.output[0]))
        }
        return [c, c2] if bound == {"Max": 0.0, "Min": 1.0} else None

    def _feeds_pv(self, t: str) -> bool:
        """``t`` is the first input of a MatMul whose second input is not a constant."""
        c = self.g.only_consumer(t)
        return (
            self._is(c, "MatMul")
            and c is not None
            and c.input[0] == t
            and self.g.const(c.input[1]) is None
        )

    def _shape_scalar(self, t: str) -> bool:
        """``t`` is a scalar computed from tensor shapes and constants only."""
        g = self.g
        if g.const(t) is not None:
            return False
        stack, seen = [t], set()
        while stack:
            cur = stack.pop()
            if cur in seen or g.const(cur) is not None:
                continue
            seen.add(cur)
            q = g.producer.get(cur)
            if q is None or q.op_type not in _SHAPE_ONLY_OPS:
                return False
            if q.op_type not in ("Shape", "Size"):
                stack.extend(i for i in q.input if i)
        shape = g.shape.get(t)
        return shape is None or all(d == 1 for d in shape)

    def sigmoid_attention(self) -> None:
        """``Sigmoid(x + b)`` (``b`` a scalar constant, or no ``Add``) feeding ``P·V``."""
        g = self.g
        for sg in self.model.graph.node:
            if not self._is(sg, "Sigmoid") or sg.name in self.used:
                continue
            if not self._feeds_pv(sg.output[0]):
                continue
            a = g.producer.get(sg.input[0])
            covered: list[NodeProto] = [sg]
            x, bias = sg.input[0], 0.0
            if self._is(a, "Add") and a is not None and g.only_consumer(a.output[0]) is sg:
                for xi, bi in ((a.input[0], a.input[1]), (a.input[1], a.input[0])):
                    b = g.scalar(bi)
                    if b is not None and g.const(xi) is None:
                        x, bias = xi, b
                        covered.insert(0, a)
                        break
            self._norm_site(
                sg.name, Operator.SIGMOID_ATTENTION, x, sg.output[0], covered, "sigmoid",
                "sigmoid_attention", -1, {"bias": bias, "n": math.exp(-bias)},
            )  # fmt: skip

    def relu_attention(self) -> None:
        """``Relu(x)`` then ``Div(·, n)`` or ``Mul(·, 1/n)`` feeding ``P·V``."""
        g = self.g
        for r in self.model.graph.node:
            if not self._is(r, "Relu") or r.name in self.used:
                continue
            d = g.only_consumer(r.output[0])
            if d is None or not (self._is(d, "Div") or self._is(d, "Mul")):
                continue
            if self._is(d, "Div"):
                if d.input[0] != r.output[0]:
                    continue
                other = d.input[1]
            else:
                other = _other(d, r.output[0]) or ""
            if not self._feeds_pv(d.output[0]):
                continue
            c = g.scalar(other)
            form = "div" if d.op_type == "Div" else "mul"
            if c is not None:
                if c <= 0:
                    continue
                n = c if form == "div" else 1.0 / c
                params: dict[str, Any] = {"n": n}
                if abs(n - round(n)) > CONST_RTOL * n or round(n) < 1:
                    self.skipped[r.name] = (
                        f"relu_attention: n = {n:.6g} is not a whole sequence length "
                        "(the unit divides by an integer n)"
                    )
                    continue
                params["seq_len"] = round(n)
            elif self._shape_scalar(other):
                params = {"n": None, "n_tensor": other, "n_form": form}
            else:
                continue
            x = r.input[0]
            self._norm_site(
                r.name, Operator.RELU_ATTENTION, x, d.output[0], [r, d], form,
                "relu_attention", -1, params,
            )  # fmt: skip


def _row_vector(c: np.ndarray) -> bool:
    """A constant that varies only along the last axis (gamma/beta shape)."""
    return c.size >= 1 and c.shape[:-1] == (1,) * (c.ndim - 1) if c.ndim else True


@dataclass
class SiteScan:
    """What :func:`find_all` found: emulatable ``sites``, ``unsupported`` sites (a
    recognised function with no operator in this build; they run float) and
    ``skipped`` candidates (node name -> reason)."""

    sites: list[Site]
    unsupported: list[Site]
    skipped: dict[str, str]


def find_all(model: ModelProto) -> SiteScan:
    """Every site of a loaded model (see :func:`hwapprox.export.graph.load_model`),
    in graph order. Normaliser patterns are matched before single ``Softmax`` ops,
    so a clipped or zero-logit softmax is one site, not a plain softmax."""
    f = _Finder(model)
    f.softmax1_explicit()
    f.softmax1_zero_logit()
    f.clipped_softmax()
    f.sigmoid_attention()
    f.relu_attention()
    f.op_sites()
    f.erf_gelu()
    f.tanh_gelu()
    f.decomposed_layernorm()
    f.decomposed_rmsnorm()
    f.quick_gelu()
    order = {n.name: i for i, n in enumerate(model.graph.node)}
    f.sites.sort(key=lambda s: order[s.nodes[0]])
    f.unsupported.sort(key=lambda s: order[s.nodes[0]])
    return SiteScan(f.sites, f.unsupported, f.skipped)


def find_sites(model: ModelProto) -> tuple[list[Site], dict[str, str]]:
    """Emulatable sites of a loaded model in graph order, plus ``{node name: reason}``
    for candidates that were skipped (:func:`find_all` also returns the unsupported)."""
    scan = find_all(model)
    return scan.sites, scan.skipped


def config_for_kinds(cfg: ApproxConfig, sites: list[Site] | tuple[Site, ...]) -> ApproxConfig:
    """``cfg`` with an entry for each site of a kind that only some methods compute
    (:data:`KIND_METHODS`: an RMSNorm under a LayerNorm default) whose method would
    otherwise be another: the first such method, with the operator default's fields
    that method takes; and with the kind's own field defaults for its method
    (:data:`KIND_SPEC_DEFAULTS`, where the config does not set them). A site the
    config names a method for, or keeps float, is left as the config says
    (:meth:`Site.spec_mismatch` reports a wrong method)."""
    for s in sites:
        allowed = KIND_METHODS.get(s.kind)
        if allowed is None or s.operator is None:
            continue
        entry = cfg.sites.get(s.name)
        if entry == FLOAT or (isinstance(entry, dict) and "method" in entry):
            continue
        base = cfg.defaults.get(s.operator, FLOAT)
        if not isinstance(base, dict):
            continue
        method = base.get("method") if base.get("method") in allowed else allowed[0]
        extra = {
            k: v
            for k, v in KIND_SPEC_DEFAULTS.get(s.kind, {}).get(str(method), {}).items()
            if k not in base and not (isinstance(entry, dict) and k in entry)
        }
        if method == base.get("method") and not extra:
            continue
        known = {f.name for f in dataclasses.fields(get_method(s.operator, str(method)))}
        new = {k: v for k, v in base.items() if k in known}
        new.update(extra)
        new.update(entry if isinstance(entry, dict) else {})
        new["method"] = method
        cfg = cfg.with_site(s.name, new)
    return cfg
