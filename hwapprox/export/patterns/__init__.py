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
from dataclasses import dataclass

from onnx import ModelProto

from hwapprox.approx.config import FLOAT, ApproxConfig
from hwapprox.approx.registry import get_method
from hwapprox.export.patterns.gelu import GeluPatterns
from hwapprox.export.patterns.norm import NormPatterns
from hwapprox.export.patterns.site import (
    CLIP_LIMITS,
    CONST_RTOL,
    KIND_FIELDS,
    KIND_METHODS,
    KIND_SPEC_DEFAULTS,
    Site,
)
from hwapprox.export.patterns.softmax import SoftmaxPatterns

__all__ = [
    "CLIP_LIMITS",
    "CONST_RTOL",
    "KIND_FIELDS",
    "KIND_METHODS",
    "KIND_SPEC_DEFAULTS",
    "Site",
    "SiteScan",
    "config_for_kinds",
    "find_all",
    "find_sites",
]


class _Finder(SoftmaxPatterns, GeluPatterns, NormPatterns):
    """Every pattern family: :func:`find_all` runs them in its order."""


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
