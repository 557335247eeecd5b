"""Calibrated specs and block formats for HLS projects, as ``hwapprox validate`` does it.

``hwapprox hls MODEL`` with no config (or a partial one) runs the float model
once on sample inputs (:func:`hwapprox.export.calibrate.prepare_inputs`: the
user's ``--inputs`` or seeded ones) and chooses:

* each nonlinear site's spec: the configured method, or the default of
  :data:`hwapprox.export.validate.DEFAULT_METHODS`, with calibrated
  ``in_fmt``/``out_fmt``/``gamma_fmt``/``beta_fmt``
  (:func:`hwapprox.export.tuning.calibrated_fields`); fields the config sets win;
* each block's :class:`~hwapprox.approx.block.BlockFormats` from the float
  tensors of its linear stages: ``qkv_fmt`` holds ``Q·scale``, ``K`` and ``V``
  (the score scale is folded into ``Wq``), ``ctx_fmt`` the merged ``P·V``,
  ``attn_fmt`` the output projection, ``ffn_fmt`` the second FFN matrix's
  output (with a rotary embedding ``qkv_fmt`` also holds the rotated ``Q·scale`` and
  ``K``; a gated FFN's ``hid_fmt`` the up projection, ``gate_fmt`` the gate product),
  pre-LN ``res_fmt`` the residual stream after attention and
  ``out_fmt`` the block output (``ap_fixed<W, I>``, ``I`` from the range
  policy plus headroom);
  ``weight_fmt`` holds the largest weight exactly in range (``W`` bits);
  ``accum_fmt`` is ``ap_fixed<32, I + 1, AP_TRN, AP_SAT>`` with ``I`` the largest
  integer bits of any linear stage's output format; ``bias_fmt`` holds the largest
  bias exactly in range and resolves the finest output format a biased stage
  writes (:func:`bias_format`: ``qkv_fmt``, ``attn_fmt``, ``ffn_fmt``, the FFN
  hidden layer's format), at least 12 bits wide (the defaults' width) and no finer
  than the accumulator the bias starts. One bias format serves every projection of
  the block, so a fixed 12 bits sized by the largest bias (DINOv2's K biases reach
  37; the softmax ignores them) rounded the small ones to a step larger than their
  stage's resolution: with LayerScale folded into ``Wo``/``bo`` and ``W2``/``b2`` the
  attention and FFN outputs are ~0.03 in magnitude while the step was 2^-7..2^-5,
  the block's largest error by far (a pretrained DINOv2 ViT-S/14: per-token cosine 0.954 at
  the last block with 12 bits, 0.99997 with this rule; see
  ``benchmarks/results/families.md``);
* block chaining: block ``i + 1``'s input format is block ``i``'s output format
  (``ln2.out_fmt`` post-LN, ``out_fmt`` pre-LN: the same tensor), so the chain
  needs no hand-written ``hls.in_fmt``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hwapprox.approx.base import ApproxSpec, Operator, SpecError
from hwapprox.approx.block import BlockFormats
from hwapprox.approx.config import ApproxConfig
from hwapprox.export.blockmatch import BlockMatch
from hwapprox.export.calibrate import Trace, calibrate, parameter_format
from hwapprox.export.emulate import trace_model
from hwapprox.export.errors import ExportError
from hwapprox.export.patterns import Site
from hwapprox.export.stats import SiteStats
from hwapprox.export.tuning import calibrated_fields
from hwapprox.fixed import FixedFormat, Overflow, Rounding

__all__ = [
    "BIAS_MIN_WIDTH",
    "BlockCalibration",
    "bias_format",
    "calibrate_blocks",
    "resolve_block_specs",
    "resolve_site",
]


@dataclass
class BlockCalibration:
    """Float statistics of every site and linear-stage tensor of the matched blocks."""

    trace: Trace
    tensors: dict[str, SiteStats] = field(default_factory=dict)
    block_inputs: list[np.ndarray] = field(default_factory=list)
    #: the float model's output of the last block on the sample inputs
    last_output: np.ndarray | None = None

    def fields_for(
        self,
        site: Site,
        spec_cls: type[ApproxSpec],
        *,
        width: int,
        headroom: int,
        stat: str | float,
    ) -> dict[str, FixedFormat]:
        """Calibrated formats of one nonlinear site (see the module docstring)."""
        return calibrated_fields(
            site,
            spec_cls,
            self.trace.stats[site.name],
            self.trace.out_stats.get(site.name),
            width=width,
            headroom=headroom,
            stat=stat,
        )

    def block_formats(
        self,
        m: BlockMatch,
        in_fmt: FixedFormat,
        score_in: FixedFormat,
        gelu_in: FixedFormat | None,
        *,
        width: int,
        headroom: int,
        stat: str | float,
    ) -> BlockFormats:
        """:class:`BlockFormats` of one block (see the module docstring)."""

        def act(name: str) -> FixedFormat:
            return self.tensors[f"{m.ln2.name}:{name}"].choose_format(
                width, headroom, Rounding.RND, Overflow.SAT, stat=stat
            )

        w = m.weights
        s = m.score_scale
        mats = [w["wq"] * s, w["wk"], w["wv"], w["wo"], w["w1"], w["w2"]]
        biases = [w["bq"] * s, w["bk"], w["bv"], w["bo"], w["b1"], w["b2"]]
        if m.ffn_act == "gated":  # the up projection
            mats, biases = [*mats, w["wu"]], [*biases, w["bu"]]
        wmax = max(float(np.abs(a).max(initial=0.0)) for a in mats)
        bmax = max(float(np.abs(a).max(initial=0.0)) for a in biases)
        wf = parameter_format(np.array([wmax]), width)
        assert wf is not None
        fmts = {
            "qkv_fmt": act("qkv"),
            "ctx_fmt": act("ctx"),
            "attn_fmt": act("attn"),
            "ffn_fmt": act("ffn2"),
            "res_fmt": act("res1"),
            "out_fmt": act("output"),
        }
        if m.ffn_act == "relu":  # H and max(H, 0): the positive range (negatives give 0)
            fmts["hid_fmt"] = act("hid")
        if m.ffn_act == "gated":  # U = Y·Wu + bu and Z = act(H) ⊙ U
            fmts["hid_fmt"], fmts["gate_fmt"] = act("hid"), act("gate")
        ib = max(
            f.int_bits for f in [*fmts.values(), score_in, in_fmt, *([gelu_in] if gelu_in else [])]
        )
        if m.score_bias:  # the table's largest magnitude, exactly, at the weights' width
            sf = parameter_format(np.array([float(np.abs(w["sb"]).max(initial=0.0))]), width)
            assert sf is not None
            fmts["score_bias_fmt"] = FixedFormat(
                sf.width, sf.int_bits, True, Rounding.RND, Overflow.SAT
            )
        accum = FixedFormat(32, ib + 1, True, Rounding.TRN, Overflow.SAT)
        # the outputs of the stages that add a bias: Q/K/V, O, the FFN hidden layer
        # (GELU/SiLU input, or hid_fmt: ReLU's H, the gated FFN's up projection), F
        biased = [fmts["qkv_fmt"], fmts["attn_fmt"], fmts["ffn_fmt"]]
        biased += [f for f in (gelu_in, fmts.get("hid_fmt")) if f is not None]
        return BlockFormats(
            in_fmt=in_fmt,
            weight_fmt=FixedFormat(wf.width, wf.int_bits, True, Rounding.RND, Overflow.SAT),
            bias_fmt=bias_format(bmax, biased, accum),
            accum_fmt=accum,
            **fmts,
        )


#: the least width of a calibrated bias format (the defaults' width, the old fixed one)
BIAS_MIN_WIDTH = 12


def bias_format(
    bmax: float, outputs: list[FixedFormat], accum: FixedFormat, *, min_width: int = BIAS_MIN_WIDTH
) -> FixedFormat:
    """The block's one bias format: ``ap_fixed<W, I, AP_RND, AP_SAT>``.

    ``I`` holds the largest bias magnitude ``bmax`` exactly in range
    (:func:`~hwapprox.export.calibrate.parameter_format`); the fraction bits are the
    finest of ``outputs`` (the formats the biased stages write), so no bias is off by
    more than half a step of the output it lands in, whatever the spread of the biases
    (LayerScale-folded ``bo``/``b2`` next to a large K bias), capped at the
    accumulator's fraction bits (a bias starts the accumulator; finer bits would be
    cut there). ``W = max(min_width, I + F)``: never narrower than the old fixed 12
    bits, so a block whose outputs need no more keeps its format; never wider than
    the accumulator."""
    bf = parameter_format(np.array([bmax]), min_width)
    assert bf is not None
    frac = min(max(f.frac_bits for f in outputs), accum.frac_bits)
    w = min(max(min_width, bf.int_bits + frac), accum.width)
    return FixedFormat(w, bf.int_bits, True, Rounding.RND, Overflow.SAT)


def calibrate_blocks(
    model: Any,
    matches: list[BlockMatch],
    feeds: Mapping[str, np.ndarray],
) -> BlockCalibration:
    """Run the float model once on ``feeds``; statistics of the blocks' sites and
    linear-stage tensors (``Q·scale``, ``K``, ``V`` pooled into ``qkv``)."""
    sites = [s for m in matches for s in m.site_roles.values()]
    trace = calibrate(model, sites, feeds)
    names = [t for m in matches for t in m.tensors.values()]
    names += [m.input for m in matches] + [m.output for m in matches]
    sess = trace_model(model, list(dict.fromkeys(names)))
    outs = [o.name for o in sess.get_outputs()]
    try:
        values = dict(zip(outs, sess.run(outs, dict(feeds)), strict=True))
    except Exception as exc:
        raise ExportError(f"onnxruntime failed on the sample inputs: {exc}") from None
    values.update({k: np.asarray(v) for k, v in feeds.items() if k not in values})
    stats: dict[str, SiteStats] = {}
    for m in matches:
        t = m.tensors
        parts = [
            np.asarray(values[t["q"]], np.float64) * m.score_scale,
            np.asarray(values[t["k"]], np.float64),
            np.asarray(values[t["v"]], np.float64),
        ]
        if m.rope:  # the rotated Q·scale and K share qkv_fmt (RotarySpec's output)
            parts += [
                np.asarray(values[t["qr"]], np.float64) * m.rope_gain["qr"] * m.score_scale,
                np.asarray(values[t["kr"]], np.float64) * m.rope_gain["kr"],
            ]
        qkv = np.concatenate([p.ravel() for p in parts])
        key = m.ln2.name
        stats[f"{key}:qkv"] = SiteStats.of(f"{key} Q·scale/K/V", qkv)
        for role in ("ctx", "attn", "ffn2", "res1", *(r for r in ("hid", "gate") if r in t)):
            stats[f"{key}:{role}"] = SiteStats.of(f"{key} {role}", values[t[role]])
        stats[f"{key}:output"] = SiteStats.of(f"{key} block output", values[m.output])
        stats[f"{key}:input"] = SiteStats.of(f"{key} block input", values[m.input])
    return BlockCalibration(
        trace,
        stats,
        [np.asarray(values[m.input]) for m in matches],
        np.asarray(values[matches[-1].output]),
    )


def resolve_block_specs(
    cfg: ApproxConfig,
    matches: list[BlockMatch],
    cal: BlockCalibration | None,
    *,
    width: int,
    headroom: int,
    stat: str | float,
    defaults: Mapping[Operator, str],
) -> list[dict[str, ApproxSpec]]:
    """Spec per role of each block: config first, then defaults, calibrated formats for
    every format field the config does not set."""
    out = []
    for m in matches:
        specs: dict[str, ApproxSpec] = {}
        for role, site in m.site_roles.items():
            specs[role] = resolve_site(
                cfg, site, cal, width=width, headroom=headroom, stat=stat, defaults=defaults
            )
        out.append(specs)
    return out


def _entry(cfg: ApproxConfig, site: Site, defaults: Mapping[Operator, str]) -> dict[str, Any]:
    """The merged config entry of a site (method and explicit fields)."""
    base = cfg.defaults.get(site.operator)
    entry = cfg.sites.get(site.name)
    if entry == "float" or (entry is None and base == "float"):
        raise ExportError(
            f"site(s) {site.name} resolve to float; an HLS block needs an approximation for "
            f"every site: give it a method (sites: {{{site.name}: {{method: ...}}}})"
        )
    merged: dict[str, Any] = {}
    if isinstance(base, dict):
        merged.update(base)
    if isinstance(entry, dict):
        if "method" in entry and merged.get("method") not in (None, entry["method"]):
            merged = {}
        merged.update(entry)
    merged.pop("operator", None)
    if "method" not in merged:
        if site.operator not in defaults:
            raise ExportError(
                f"site(s) {site.name} resolve to float; an HLS block needs an approximation "
                f"for every site: set defaults for {site.operator} in the config (or give no "
                f"config: every operator then gets its default method)"
            )
        merged["method"] = defaults[site.operator]
    return merged


def resolve_site(
    cfg: ApproxConfig,
    site: Site,
    cal: BlockCalibration | None,
    *,
    width: int,
    headroom: int,
    stat: str | float,
    defaults: Mapping[Operator, str],
) -> ApproxSpec:
    from hwapprox.approx.registry import IMPLEMENTED, get_method, make_spec

    fields = _entry(cfg, site, defaults)
    method = fields.pop("method")
    have = list(IMPLEMENTED["hls"].get(site.operator, ()))
    if method not in have:
        raise ExportError(
            f"site {site.name}: {site.operator}/{method} has no HLS unit; {site.operator} "
            f"methods with one: {', '.join(have)}. Set another in the config (sites: "
            f"{{{site.name}: {{method: {have[0]}}}}}) or tune with 'hwapprox validate "
            f"--budget ... --for hls'"
        )
    cls = get_method(site.operator, method)
    known = set(cls.__dataclass_fields__)
    for k, v in site.fields_for_spec().items():
        if k in known and k not in fields:
            fields[k] = v
    if fields.get("in_fmt") == "auto":
        fields.pop("in_fmt")
    if cal is not None:
        for k, f in cal.fields_for(site, cls, width=width, headroom=headroom, stat=stat).items():
            fields.setdefault(k, f)
    for k, v in list(fields.items()):
        if isinstance(v, list):
            fields[k] = tuple(v)
    try:
        spec = make_spec(site.operator, method, **fields)
    except SpecError as exc:
        raise ExportError(f"site {site.name} ({site.kind}): {exc}") from None
    why = site.spec_mismatch(spec)  # e.g. a LayerNorm method on an RMSNorm site
    if why is not None:
        raise ExportError(why)
    return spec
