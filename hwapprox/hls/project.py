"""ONNX encoder -> hls4ml project, and the bit-exactness check of its C simulation.

:func:`prepare_model` folds every encoder block (:mod:`hwapprox.export.blockmatch`)
and resolves each block's nonlinear sites with the approximation config
(:class:`hwapprox.approx.config.ApproxConfig`; the optional ``hls`` section
holds :class:`~hwapprox.approx.block.BlockFormats`), writing the resolved specs
and formats into the node (attribute ``hwapprox``, JSON). :func:`convert`
hands that model to ``hls4ml.converters.convert_from_onnx_model`` with the
extension registered; :func:`csim_check` runs ``compile()``/``predict()``
and compares with :meth:`EncoderBlock.model` chained over the blocks.

Config (YAML or dict)::

    defaults: {softmax: {method: online}, gelu: {method: pwl}, layernorm: {method: rsqrt_lut}}
    sites: {...}                       # per site, as for ``hwapprox validate``
    hls:                               # BlockFormats fields (all optional)
      in_fmt: "ap_fixed<16,6,AP_RND,AP_SAT>"
      accum_fmt: "ap_fixed<32,12,AP_TRN,AP_SAT>"
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import ModelProto, helper

from hwapprox.approx.base import ELEMENTWISE_ATTENTION, ApproxSpec, SpecError
from hwapprox.approx.block import ATTENTION_SCHEDULES, BlockFormats, EncoderBlock
from hwapprox.approx.config import load_config
from hwapprox.export.handoff import BlockMatch, ExportError, fold_blocks, fold_sites
from hwapprox.fixed import FixedFormat, Overflow, Rounding
from hwapprox.hls.head import HEAD_OP_TYPE, DenseHead, HeadMatch, match_head
from hwapprox.hls.hls4ml_ext import (
    IO_TYPES,
    SiteStep,
    block_from_attrs,
    register,
    site_from_attrs,
)

if TYPE_CHECKING:
    from hwapprox.export.handoff import BlockCalibration

__all__ = [
    "CSIM_OPT",
    "CsimReport",
    "Prepared",
    "compile_project",
    "convert",
    "csim_check",
    "csynth_summary",
    "prepare_model",
    "split_config",
]

#: Model-level default precision handed to hls4ml. Deliberately useless (2
#: bits): every type the design uses is set explicitly, so anything that
#: silently inherited it would break the bit-exactness check.
POISON_PRECISION = "ap_fixed<2,1>"


@dataclass(frozen=True, eq=False)
class Prepared:
    """A folded model plus the models that define its expected output.

    ``blocks`` (encoder blocks) or ``steps`` (standalone nonlinear layers, in
    graph order, when the model has no whole block) -- one of them is empty.
    """

    model: ModelProto
    blocks: list[EncoderBlock]
    site_names: list[dict[str, str]]
    steps: list[SiteStep] = field(default_factory=list)
    #: what the user should know: parts left out, config entries unused, IR lowering
    notes: list[str] = field(default_factory=list)
    #: raw ``in_fmt`` codes ``[B, S, D]`` of the first block's input on the
    #: calibration data (real activations for the C simulation), or None
    samples: npt.NDArray[np.int64] | None = None
    #: the float model's last block output on the same inputs (``[B, S, D]``)
    float_out: npt.NDArray[np.float64] | None = None
    #: key padding of the samples (bool ``[B, S]``, True = real token), masked blocks
    key_mask: npt.NDArray[np.bool_] | None = None
    #: the dense head after the last block (:mod:`hwapprox.hls.head`), or None
    head: DenseHead | None = None

    @property
    def masked(self) -> bool:
        return any(b.masked for b in self.blocks)

    def accuracy(self) -> dict[str, float] | None:
        """The fixed-point design (this Python model) vs the float model on the sample
        inputs: max |error| and the minimum per-token cosine."""
        if self.samples is None or self.float_out is None:
            return None
        y = self.out_fmt.to_float(self.reference(self.samples, self.key_mask))
        f = np.asarray(self.float_out, dtype=np.float64).reshape(y.shape)
        keep = np.ones(y.shape[:2], bool) if self.key_mask is None else self.key_mask
        if self.head is not None and self.head.token is not None:
            keep = keep[:, self.head.token : self.head.token + 1]
        y, f = y[keep], f[keep]  # padded tokens never count
        num = (y * f).sum(axis=-1)
        den = np.linalg.norm(y, axis=-1) * np.linalg.norm(f, axis=-1)
        cos = np.where(den > 0, num / np.maximum(den, 1e-300), 1.0)
        return {"max_abs": float(np.abs(y - f).max()), "token_cosine_min": float(cos.min())}

    @property
    def input_name(self) -> str:
        return self.model.graph.input[0].name

    @property
    def in_fmt(self) -> FixedFormat:
        return self.blocks[0].formats.in_fmt if self.blocks else self.steps[0].in_fmt

    @property
    def out_fmt(self) -> FixedFormat:
        if self.head is not None:
            return self.head.out_fmt
        return self.blocks[-1].out_fmt if self.blocks else self.steps[-1].out_fmt

    @property
    def item_shape(self) -> tuple[int, ...]:
        """Shape of one sample (without the batch dimension)."""
        dims = self.model.graph.input[0].type.tensor_type.shape.dim
        return tuple(int(d.dim_value) for d in dims[1:])

    def reference(
        self, x: npt.ArrayLike, key_mask: npt.ArrayLike | None = None
    ) -> npt.NDArray[np.int64]:
        """Raw ``in_fmt`` codes ``[B, *item_shape]`` through every block / layer model;
        ``key_mask`` (bool ``[B, S]``, True = real token) for masked blocks (default:
        every token real)."""
        y = np.asarray(x)
        if self.masked and key_mask is None:
            key_mask = np.ones(y.shape[:2], dtype=bool)
        for i, b in enumerate(self.blocks):
            if i:
                y = b.formats.in_fmt.check(
                    y, f"block {i} input (previous block's output must be in_fmt codes)"
                )
            y = b.model(y, key_mask) if b.masked else b.model(y)
        if self.head is not None:
            y = self.head.model(y)
        fmt = self.in_fmt
        for st in self.steps:
            y = st.run(y, fmt)
            fmt = st.out_fmt
        return y


def split_config(config: Any) -> tuple[Any, dict[str, Any]]:
    """(approximation config, ``hls`` section) from a path, dict or None."""
    if config is None:
        return None, {}
    if isinstance(config, str | Path):
        import yaml

        path = Path(config)
        if not path.is_file():
            raise SpecError(f"config file {str(path)!r} does not exist")
        data = yaml.safe_load(path.read_text()) or {}
    elif isinstance(config, Mapping):
        data = dict(config)
    else:
        raise SpecError(f"config must be a path or a dict, got {type(config).__name__}")
    hls = data.pop("hls", None) or {}
    if not isinstance(hls, Mapping):
        raise SpecError(f"config 'hls' section must be a mapping of formats, got {hls!r}")
    return data, dict(hls)


def prepare_model(
    source: str | Path | ModelProto,
    config: Any = None,
    *,
    inputs: str | Path | Mapping[str, np.ndarray] | None = None,
    width: int = 16,
    headroom: int = 1,
    range_stat: str | float = "max",
    seed: int = 0,
    calibrate: bool = True,
    attention: str | None = None,
) -> Prepared:
    """Fold the encoder blocks of ``source`` and attach their resolved specs/formats.

    With ``calibrate`` (default) the float model runs once on ``inputs`` (the
    user's, or seeded ones when the input shapes are static) and every format the
    config does not set is calibrated (:mod:`hwapprox.export.blockcal`): ``width``
    and ``range_stat`` (``--width``, ``--range``) set the activations' formats and the
    weights' width; the biases' format follows from the largest bias and the finest
    output a biased stage writes (:func:`~hwapprox.export.blockcal.bias_format`, 12 to
    32 bits). Methods the config does not name are
    :data:`~hwapprox.export.validate.DEFAULT_METHODS`.
    The config may be the one ``hwapprox validate`` writes: sites outside the
    blocks get a note (:attr:`Prepared.notes`), not a refusal. ``attention``
    (or the config's ``hls.attention``): the blocks' attention schedule,
    ``two_pass`` (default) or ``fused`` (one pass per query row,
    :class:`~hwapprox.approx.attention.AttentionRowSpec`; needs the online softmax).
    """
    from hwapprox.export.handoff import (
        DEFAULT_METHODS,
        calibrate_blocks,
        config_for_kinds,
        find_sites,
        load_model,
        match_blocks,
        outside_nodes,
        parse_range,
        prepare_inputs,
        resolve_block_specs,
    )

    approx, hls = split_config(config)
    cfg_attention = str(hls.pop("attention", "two_pass"))
    attention = cfg_attention if attention is None else attention
    if attention not in ATTENTION_SCHEDULES:
        raise SpecError(
            f"attention schedule {attention!r} (hls.attention / --attention): use one of "
            f"{', '.join(ATTENTION_SCHEDULES)}"
        )
    cfg = load_config(approx)
    stat = parse_range(range_stat)
    notes: list[str] = []
    m = load_model(source, notes=notes)
    feeds = None
    if calibrate:
        try:
            feeds = prepare_inputs(m, inputs, seed=seed)
        except ExportError as exc:
            if inputs is not None:  # the user's inputs are wrong: refuse, as validate does
                raise
            notes.append(f"formats not calibrated ({exc}); config and spec defaults used")
    errors: dict[str, str] = {}
    matches = match_blocks(m, feeds, errors=errors)
    if not matches:
        if config is None:
            cfg = load_config({"defaults": {str(k): {"method": v} for k, v in
                                            DEFAULT_METHODS.items()}})  # fmt: skip
        try:
            return _prepare_sites(source, cfg)
        except SpecError as exc:
            if not errors:
                raise
            (site, why), *rest = errors.items()
            more = f" (and {len(rest)} more softmax site(s))" if rest else ""
            raise SpecError(
                f"no encoder block the HLS flow builds was found: around softmax {site}, "
                f"{why}{more}. Without whole blocks, {exc}"
            ) from None
    for site, why in errors.items():  # softmax sites outside the chain, and why
        notes.append(
            f"softmax {site} heads no encoder block the HLS design builds (it stays in the "
            f"float model): {why}"
        )
    all_sites, _ = find_sites(m)
    names = {x.name for x in all_sites}
    unknown = sorted(set(cfg.sites) - names)
    if unknown:
        raise SpecError(
            f"config names unknown site(s) {', '.join(unknown)}; sites of this model: "
            f"{', '.join(sorted(names))}"
        )
    in_blocks = {n for bm in matches for n in bm.sites.values()}
    outside_cfg = sorted(set(cfg.sites) - in_blocks)
    if outside_cfg:
        notes.append(
            f"config entries for sites outside the encoder blocks are not used by the HLS "
            f"design: {', '.join(outside_cfg)}"
        )
    parts = outside_nodes(m, matches)
    hmatch, why_no_head = match_head(m, matches[-1].output, all_sites)
    if hmatch is not None:
        parts["after"] = [n for n in parts["after"] if n.name not in set(hmatch.nodes)]
    notes += _outside_notes(parts, why_no_head)
    # a site kind only some methods compute (quick_gelu: not I-BERT's erf polynomial;
    # RMSNorm: not a LayerNorm) gets the first of them, with the kind's own field
    # defaults (a SiLU's wider table), under an operator default naming another, as in
    # validate; with no config the operator defaults are DEFAULT_METHODS
    if not (cfg.defaults or cfg.sites):
        cfg = load_config({"defaults": {str(k): {"method": v} for k, v in
                                        DEFAULT_METHODS.items()}})  # fmt: skip
    cfg = config_for_kinds(cfg, all_sites)
    cal = None
    seq = None
    if feeds is not None:
        cal = calibrate_blocks(m, matches, feeds)
        seq = int(np.shape(cal.block_inputs[0])[-2])
    folded, matches = fold_blocks(m, matches=matches, seq=seq)
    seq = folded.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    try:
        specs = resolve_block_specs(
            cfg, matches, cal, width=width, headroom=headroom, stat=stat,
            defaults={},  # cfg carries the default methods (set above)
        )  # fmt: skip
    except ExportError as exc:
        raise SpecError(str(exc)) from None
    blocks = _configure_blocks(
        folded, matches, specs, cal, hls, attention, seq, notes,
        width=width, headroom=headroom, stat=stat,
    )  # fmt: skip
    samples, float_out, key_mask = _csim_samples(cal, blocks[0], matches[0], feeds, seq)
    head = None
    if hmatch is not None:
        head, head_out = _prepare_head(
            m, hmatch, blocks[-1], cfg, feeds, width=width, headroom=headroom, stat=stat,
            defaults={},  # cfg carries the default methods (set above)
        )  # fmt: skip
        _append_head(folded, head)
        if head_out is not None and samples is not None:
            float_out = np.asarray(head_out, np.float64).reshape(len(samples), head.rows, -1)
        notes.append(_head_note(hmatch, head))
    return Prepared(
        folded,
        blocks,
        [bm.sites for bm in matches],
        notes=notes,
        samples=samples,
        float_out=float_out,
        key_mask=key_mask,
        head=head,
    )


def _outside_notes(parts: Mapping[str, list[Any]], why_no_head: str | None) -> list[str]:
    """A note per side of the block chain on the nodes that stay in the float model."""
    notes: list[str] = []
    for where, label in (("before", "before the blocks (embeddings)"),
                         ("after", "after the blocks (pooler, head)")):  # fmt: skip
        nodes = parts[where]
        if nodes:
            ops: dict[str, int] = {}
            for n in nodes:
                ops[n.op_type] = ops.get(n.op_type, 0) + 1
            listing = ", ".join(f"{k} x{v}" for k, v in ops.items())
            first = ", ".join(repr(n.name) for n in nodes[:4])
            why = f" (no dense head: {why_no_head})" if where == "after" and why_no_head else ""
            notes.append(
                f"not in the HLS design, {label}: {len(nodes)} nodes ({listing}; first "
                f"{first}{', ...' if len(nodes) > 4 else ''}); they stay in the float model{why}"
            )
    return notes


def _configure_blocks(
    folded: ModelProto,
    matches: list[BlockMatch],
    specs: list[dict[str, ApproxSpec]],
    cal: BlockCalibration | None,
    hls: Mapping[str, Any],
    attention: str,
    seq: int,
    notes: list[str],
    *,
    width: int,
    headroom: int,
    stat: str | float,
) -> list[EncoderBlock]:
    """Each folded block node gets its specs and formats (the ``hwapprox`` and
    ``attention`` attributes): calibrated formats under the config's ``hls`` entries,
    block ``i + 1``'s input format block ``i``'s output format, the fused schedule's
    accumulator from the V format and ``seq``; the blocks as the project builds them."""
    blocks: list[EncoderBlock] = []
    for i, (node, bm, sp) in enumerate(zip(folded.graph.node, matches, specs, strict=True)):
        fm = dict(hls)
        if i > 0:
            prev = blocks[-1].out_fmt
            if "in_fmt" in fm and i == 1 and FixedFormat.parse(fm["in_fmt"]) != prev:
                notes.append(
                    f"hls.in_fmt {fm['in_fmt']} applies to block 0; block {i} takes block "
                    f"{i - 1}'s output format {prev}"
                )
            fm["in_fmt"] = str(prev)
        if cal is not None:
            in_fmt = (
                FixedFormat.parse(fm["in_fmt"])
                if "in_fmt" in fm
                else cal.tensors[f"{bm.ln2.name}:input"].choose_format(width, headroom, stat=stat)
            )
            auto = cal.block_formats(
                bm, in_fmt, sp["softmax"].in_fmt,
                sp["gelu"].in_fmt if "gelu" in sp else None,
                width=width, headroom=headroom, stat=stat,
            ).to_dict()  # fmt: skip
            fm = {**auto, **fm}
        if attention == "fused" and "attn_acc_fmt" not in hls:
            # |o| <= d·max|v| <= S·max|v|: the V format's integer bits plus log2(S) + 1
            qkv = FixedFormat.parse(fm.get("qkv_fmt", BlockFormats().qkv_fmt))
            ib = qkv.int_bits + max(1, int(np.ceil(np.log2(max(seq, 2))))) + 1
            fm["attn_acc_fmt"] = str(FixedFormat(32, ib, True, Rounding.RND, Overflow.SAT))
        formats = BlockFormats.from_dict(fm)
        payload = {
            "specs": {role: spec.to_config() for role, spec in sp.items()},
            "formats": formats.to_dict(),
        }
        node.attribute.append(helper.make_attribute("hwapprox", json.dumps(payload)))
        node.attribute.append(helper.make_attribute("attention", attention))
        blocks.append(block_from_attrs(_node_attrs(node), seq))
    return blocks


def _csim_samples(
    cal: BlockCalibration | None,
    first: EncoderBlock,
    bm: BlockMatch,
    feeds: Mapping[str, np.ndarray] | None,
    seq: int,
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """The real first-block inputs as raw codes, the float model's output of the last
    block, and the key mask (True = real token) of the sample inputs (Nones without
    calibration)."""
    samples = float_out = key_mask = None
    if cal is not None:
        x0 = np.asarray(cal.block_inputs[0], dtype=np.float64)
        x0 = x0.reshape(-1, seq, x0.shape[-1])
        samples = first.formats.in_fmt.quantize(x0)
        if cal.last_output is not None:
            float_out = np.asarray(cal.last_output, np.float64).reshape(x0.shape)
        km = bm.key_mask
        if km is not None and feeds is not None:
            key_mask = np.asarray(feeds[km]).reshape(x0.shape[0], seq) != 0
    return samples, float_out, key_mask


def _head_note(hmatch: HeadMatch, head: DenseHead) -> str:
    """The note on a dense head converted after the blocks."""
    parts = ([f"LayerNorm site {hmatch.ln.name}"] if hmatch.ln is not None else []) + [
        repr(n) for n in hmatch.nodes if hmatch.ln is None or n not in hmatch.ln.nodes
    ]
    return (
        f"dense head converted after the blocks: {', '.join(parts)} -> "
        f"{'token ' + str(head.token) if head.token is not None else 'every token'}, "
        f"{'LayerNorm ' + head.ln.method + ', ' if head.ln is not None else ''}"
        f"Dense {head.dim} -> {head.n_out} (output {head.out_fmt})"
    )


def _prepare_head(
    m: ModelProto,
    hm: HeadMatch,
    last: EncoderBlock,
    cfg: Any,
    feeds: Mapping[str, np.ndarray] | None,
    *,
    width: int,
    headroom: int,
    stat: str | float,
    defaults: Mapping[Any, str],
) -> tuple[DenseHead, np.ndarray | None]:
    """The head's spec and formats, calibrated like the blocks' (the float model runs
    once more for the head's tensors); and the float head output on ``feeds``."""
    from hwapprox.export.handoff import (
        BlockCalibration,
        SiteStats,
        bias_format,
        calibrate,
        parameter_format,
        resolve_site,
        trace_model,
    )
    from hwapprox.fixed import Overflow, Rounding

    cal = out_vals = None
    if feeds is not None:
        trace = calibrate(m, [hm.ln] if hm.ln is not None else [], feeds)
        cal = BlockCalibration(trace)
        sess = trace_model(m, [hm.output])
        out_vals = np.asarray(sess.run([hm.output], dict(feeds))[0], np.float64)
    ln = None
    gamma = beta = None
    if hm.ln is not None:
        try:
            ln = resolve_site(
                cfg, hm.ln, cal, width=width, headroom=headroom, stat=stat, defaults=defaults
            )
        except ExportError as exc:
            raise SpecError(str(exc)) from None
        d = hm.weight.shape[0]
        g = np.broadcast_to(hm.ln.gamma if hm.ln.gamma is not None else 1.0, (d,))
        b = np.broadcast_to(hm.ln.beta if hm.ln.beta is not None else 0.0, (d,))
        gamma, beta = ln.gamma_fmt.quantize(g), ln.beta_fmt.quantize(b)  # type: ignore[attr-defined]
    rs = (Rounding.RND, Overflow.SAT)
    # weights exactly in range at the blocks' weight width
    wfmt = parameter_format(hm.weight, last.formats.weight_fmt.width)
    if wfmt is None:  # pragma: no cover - a given value
        raise SpecError("head weight format could not be derived")
    if out_vals is not None:
        out_fmt = SiteStats.of("head output", out_vals).choose_format(
            width, headroom, *rs, stat=stat
        )
    else:
        out_fmt = FixedFormat(width, 6, True, *rs)
    a_int = ln.out_fmt.int_bits if ln is not None else last.out_fmt.int_bits
    accum = FixedFormat(32, max(out_fmt.int_bits, a_int) + 2, True, Rounding.TRN, Overflow.SAT)
    # the bias exactly in range, resolving the output it lands in (as the blocks' biases)
    bmax = float(np.abs(hm.bias).max(initial=0.0)) if hm.bias is not None else 0.0
    bfmt = bias_format(bmax, [out_fmt], accum)
    bias = bfmt.quantize(hm.bias) if hm.bias is not None else np.zeros(hm.n_out, np.int64)
    seq = last.seq
    head = DenseHead(
        seq=seq, dim=last.dim, token=None if hm.token is None else hm.token % seq, ln=ln,
        gamma=gamma, beta=beta, weight=wfmt.quantize(hm.weight), bias=bias,
        in_fmt=last.out_fmt, weight_fmt=wfmt, bias_fmt=bfmt, accum_fmt=accum, out_fmt=out_fmt,
    )  # fmt: skip
    return head, out_vals


def _append_head(folded: ModelProto, head: DenseHead) -> None:
    """Append the folded ``HwApproxDenseHead`` node; the graph output becomes its output."""
    from onnx import numpy_helper

    from hwapprox.export.handoff import DOMAIN

    g = folded.graph
    last = g.output[0]
    fmts = head.weight_formats()
    tensors = {
        f"t_{k}": numpy_helper.from_array(fmts[k].to_float(v).astype(np.float64), k)
        for k, v in head.weight_arrays().items()
    }
    payload = {
        "ln": head.ln.to_config() if head.ln is not None else None,
        "formats": {k: str(getattr(head, k)) for k in
                    ("in_fmt", "weight_fmt", "bias_fmt", "accum_fmt", "out_fmt")},
    }  # fmt: skip
    node = helper.make_node(
        HEAD_OP_TYPE, [last.name], ["head_out"], name="dense_head", domain=DOMAIN,
        token=-1 if head.token is None else head.token, hwapprox=json.dumps(payload), **tensors,
    )  # fmt: skip
    g.node.append(node)
    g.value_info.append(last)
    del g.output[:]
    g.output.append(
        helper.make_tensor_value_info(
            "head_out", onnx.TensorProto.FLOAT, [1, head.rows, head.n_out]
        )
    )


def _node_attrs(node: Any) -> dict[str, Any]:
    from onnx import numpy_helper

    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    out = {}
    for k, v in attrs.items():
        if isinstance(v, bytes):
            v = v.decode()
        elif k.startswith("t_"):
            v = numpy_helper.to_array(v)
        out[k] = v
    return out


def _prepare_sites(source: str | Path | ModelProto, cfg: Any) -> Prepared:
    """Models without a whole encoder block: one layer per nonlinear site (a chain)."""
    from hwapprox.export.handoff import SITE_OP_TYPE, config_for_kinds

    folded, sites = fold_sites(source)
    others = [n for n in folded.graph.node if n.op_type != SITE_OP_TYPE]
    if others:
        from hwapprox.hls.units import supported

        counts = Counter(n.op_type for n in others)
        first = ", ".join(repr(n.name or "<unnamed>") for n in others[:4])
        found = (
            ", ".join(f"{op} x{c}" for op, c in counts.most_common())
            + f" ({len(others)} node(s); first {first}{', ...' if len(others) > 4 else ''})"
        )
        elementwise = [s for s in sites if s.operator in ELEMENTWISE_ATTENTION]
        why = (
            f" Its attention normaliser is {elementwise[0].kind} (site {elementwise[0].name}): "
            "the HLS encoder block computes softmax attention, so these blocks are not "
            "matched; the unit itself exists (hwapprox/attnact.h, RTL) for a design of "
            "your own, and `hwapprox validate` emulates the model."
            if elementwise
            else ""
        )
        raise SpecError(
            f"unsupported ONNX op(s) {found}: the model has no whole encoder block, and "
            "hls4ml 1.3's stock layers mishandle sequence-shaped tensors." + why + " Supported: "
            "whole encoder blocks (MHSA + residual + LayerNorm + FFN with GELU + residual + "
            "LayerNorm, as PyTorch exports them; softmax, Softmax_1 or clipped softmax), or "
            "chains of Softmax, GELU (Erf/Tanh forms) and LayerNorm sites; HLS units: "
            + ", ".join(supported())
        )
    names = {s.name: str(s.operator) for s in sites}
    fields = {s.name: s.fields_for_spec() for s in sites}
    specs = config_for_kinds(cfg, sites).resolve(names, site_fields=fields)
    floats = sorted(n for n, s in specs.items() if s is None)
    if floats:
        raise SpecError(
            f"site(s) {', '.join(floats)} resolve to float; every site of an HLS design "
            "needs an approximation: set defaults for its operator in the config"
        )
    dims = folded.graph.input[0].type.tensor_type.shape.dim
    shape = [int(d.dim_value) for d in dims[1:]]
    steps = []
    for node in folded.graph.node:
        site = _node_attrs(node)["site"]
        payload = {"spec": specs[site].to_config()}  # type: ignore[union-attr]
        node.attribute.append(helper.make_attribute("hwapprox", json.dumps(payload)))
        steps.append(site_from_attrs(_node_attrs(node), shape))
    return Prepared(folded, [], [{"site": s.name} for s in sites], steps)


def convert(
    prepared: Prepared,
    output_dir: str | Path,
    *,
    backend: str = "Vivado",
    part: str | None = None,
    clock_period: float | None = None,
    project_name: str = "myproject",
    io_type: str = "io_parallel",
) -> Any:
    """The hls4ml ``ModelGraph`` of a prepared model (written with ``write()``).

    ``io_type``: ``io_parallel`` (arrays) or ``io_stream`` (``hls::stream`` of
    one ``dim``-wide pack per token; encoder blocks only).
    """
    if backend not in ("Vivado", "Vitis"):
        raise SpecError(f"backend {backend!r} is not supported; use Vivado or Vitis")
    if io_type not in IO_TYPES:
        raise SpecError(f"io_type {io_type!r} is not supported; use one of {', '.join(IO_TYPES)}")
    if io_type == "io_stream" and not prepared.blocks:
        raise SpecError(
            "io_stream needs whole encoder blocks; this model has standalone nonlinear layers "
            "only, which hwapprox converts io_parallel: use io_type='io_parallel' (--io parallel)"
        )
    register()
    import hls4ml

    in_fmt = prepared.in_fmt
    hls_config = {
        "Model": {"Precision": POISON_PRECISION, "ReuseFactor": 1, "Strategy": "Latency"},
        "LayerName": {prepared.input_name: {"Precision": {"result": str(in_fmt)}}},
    }
    if prepared.masked:
        from hwapprox.hls.hls4ml_ext import mask_layer_config

        hls_config["LayerName"].update(mask_layer_config())
    kwargs: dict[str, Any] = {}
    if part:
        kwargs["part"] = part
    if clock_period is not None:
        if clock_period <= 0:
            raise SpecError(f"clock_period={clock_period!r} ns must be > 0")
        kwargs["clock_period"] = clock_period
    model = hls4ml.converters.convert_from_onnx_model(
        prepared.model,
        output_dir=str(output_dir),
        project_name=project_name,
        backend=backend,
        io_type=io_type,
        hls_config=hls_config,
        **kwargs,
    )
    # write() dumps the config to hls4ml_config.yml, the ONNX model object included:
    # with the weights inside the folded nodes that is minutes of YAML for a real
    # encoder. The config names the folded model's file instead (hls4ml reads
    # either form).
    folded = Path(output_dir) / "hwapprox_folded.onnx"
    folded.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(prepared.model, folded)
    model.config.config["OnnxModel"] = str(folded)
    model.write()
    return model


#: g++ optimisation of the C-simulation library. Measured on the embedded example
#: (2 blocks, S=16, D=64; benchmarks/results/hls.md): -O0 builds in 11 s but runs
#: 7x slower than -O1 (13 s); -O2/-O3 (hls4ml's default) take 15 s for 10 %
#: faster runs. Every level gives the same raw outputs (bit-exact with the model).
CSIM_OPT = "-O1"


def _project_digest(out: Path, opt: str) -> str:
    """Content hash of what the C-sim library is built from: sources, headers,
    weight values, build script, the g++ optimisation and version."""
    import hashlib
    import subprocess

    h = hashlib.sha256(opt.encode())
    ver = subprocess.run(["g++", "--version"], capture_output=True, text=True, check=False)
    h.update(ver.stdout.encode())
    files = sorted(
        f
        for pat in ("firmware/**/*.h", "firmware/**/*.cpp", "firmware/weights/*.txt", "*.cpp")
        for f in out.glob(pat)
    )
    for f in files:
        h.update(str(f.relative_to(out)).encode() + b"\0" + f.read_bytes() + b"\0")
    # the build script, without the per-model library stamp (only the .so name)
    script = (out / "build_lib.sh").read_text().splitlines()
    h.update("\n".join(s for s in script if not s.startswith("LIB_STAMP=")).encode())
    return h.hexdigest()[:20]


def compile_project(model: Any, *, opt: str = CSIM_OPT, write: bool = True) -> Path:
    """``model.write()`` and build its C-sim library with ``opt``, once per content.

    hls4ml's own ``compile()`` rebuilds with ``-O3`` every time. Here the
    library is cached under ``cache_dir()/hls4ml_lib/<digest>`` with a copy of
    the weight ``.txt`` files it loads (so it does not depend on the project
    directory), keyed by the project's sources, weights, flags and g++ version;
    a rerun on the same model -- in any output directory -- only copies it.
    ``write=False`` skips ``model.write()`` for a project :func:`convert` has
    just written (writing a real encoder's weight headers takes seconds).
    Returns the loaded library's path.
    """
    import ctypes
    import fcntl
    import shutil
    import subprocess

    from hwapprox._cxx import CxxBuildError, cache_dir

    if not opt.startswith("-O"):
        raise SpecError(f"opt={opt!r} must be a g++ optimisation flag such as -O1")
    if write:
        model.write()
    out = Path(model.config.get_output_dir())
    name = model.config.get_project_name()
    lib = out / "firmware" / f"{name}-{model.config.get_config_value('Stamp')}.so"
    key = _project_digest(out, opt)
    entry = cache_dir() / "hls4ml_lib" / key
    cached = entry / "lib.so"
    entry.mkdir(parents=True, exist_ok=True)
    with open(entry / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not cached.exists():
            shutil.copytree(out / "firmware" / "weights", entry / "weights", dirs_exist_ok=True)
            script = (out / "build_lib.sh").read_text()
            lines = []
            for line in script.splitlines():
                if line.startswith("CFLAGS="):
                    line = f'CFLAGS="{opt} -fPIC"'
                elif line.startswith("WEIGHTS_DIR="):
                    line = f"WEIGHTS_DIR='\"{entry / 'weights'}\"'"
                lines.append(line)
            build = out / "hwapprox_build_lib.sh"
            build.write_text("\n".join(lines) + "\n")
            proc = subprocess.run(
                ["bash", build.name], cwd=out, capture_output=True, text=True, check=False
            )
            if proc.returncode != 0 or not lib.exists():
                raise CxxBuildError(
                    f"g++ build of the hls4ml project in {out} failed:\n{proc.stdout[-3000:]}"
                    f"{proc.stderr[-3000:]}"
                )
            shutil.copyfile(lib, cached.with_suffix(".tmp"))
            cached.with_suffix(".tmp").replace(cached)
        else:
            # always the cached library of this content (a stale one of the same name may
            # be there); a new file replaces it, so a loaded copy stays mapped intact
            tmp = lib.with_name(f".{lib.name}.{os.getpid()}.tmp")
            shutil.copyfile(cached, tmp)
            tmp.replace(lib)
    # load it as ModelGraph._compile does (hls4ml 1.3: the library handle is
    # _top_function_lib; a previous one is closed first)
    old = getattr(model, "_top_function_lib", None)
    if old is not None:
        dlclose = ctypes.CDLL("libdl.so.2").dlclose
        dlclose.argtypes = [ctypes.c_void_p]
        dlclose(old._handle)
    model._top_function_lib = ctypes.cdll.LoadLibrary(str(lib))
    return lib


@dataclass(frozen=True)
class CsimReport:
    """Outcome of :func:`csim_check`: equal raw codes or not, and where."""

    samples: int
    values: int
    mismatches: int
    first: tuple[int, ...] | None

    @property
    def bit_exact(self) -> bool:
        return self.mismatches == 0


def csim_check(
    model: Any,
    prepared: Prepared,
    x_raw: npt.ArrayLike,
    *,
    compile: bool = True,
    key_mask: npt.ArrayLike | None = None,
) -> CsimReport:
    """``compile()`` + ``predict()`` on raw ``in_fmt`` codes ``[B, ...]``; compare raw outputs.

    Inputs are passed as float64 values exactly on the ``in_fmt`` grid (so the
    bridge's conversion is exact); outputs are converted back with the output
    format (exact: float64 holds every code of formats up to 53 bits).
    ``compile=False`` reuses a library already built (:func:`compile_project` or
    ``model.compile()``).
    ``key_mask`` (bool ``[B, S]``, True = real token) feeds masked blocks
    (default: every token real).
    """
    from hwapprox.hls.hls4ml_ext import predict_raw

    xr = np.asarray(x_raw, dtype=np.int64)
    shape = prepared.item_shape
    if xr.shape[1:] != shape:
        raise SpecError(
            f"csim input must be [B, {', '.join(map(str, shape))}] raw codes, got {xr.shape}"
        )
    in_fmt = prepared.in_fmt
    in_fmt.check(xr, "csim input")
    km = None
    if prepared.masked:
        km = np.ones(xr.shape[:2], bool) if key_mask is None else np.asarray(key_mask, bool)
    if compile:
        compile_project(model)
    want = prepared.reference(xr, km)
    got_raw = predict_raw(model, xr, in_fmt, prepared.out_fmt, km, out_shape=want.shape[1:])
    bad = np.argwhere(got_raw != want)
    return CsimReport(
        samples=xr.shape[0],
        values=int(want.size),
        mismatches=len(bad),
        first=tuple(int(v) for v in bad[0]) if len(bad) else None,
    )


def csynth_summary(report: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Latency and resources of a C-synthesis report as hls4ml parses it (the dict
    ``ModelGraph.build()`` returns; key ``CSynthesisReport``), or None without one.

    ``{"latency_cycles": {"best", "worst"}, "interval_cycles": {"min", "max"},
    "clock_ns": {"target", "estimated"}, "resources": {name: {"used", "available"}}}``
    for LUT, FF, DSP, BRAM_18K and URAM where the report has them (``available``
    None when the report does not state it).
    """
    if not report or "CSynthesisReport" not in report:
        return None
    c = report["CSynthesisReport"]

    def num(key: str) -> int | float | None:
        v = c.get(key)
        if v is None:
            return None
        f = float(v)
        return int(f) if f.is_integer() else f

    res = {}
    for name in ("LUT", "FF", "DSP", "BRAM_18K", "URAM"):
        if c.get(name) is not None:
            res[name] = {"used": num(name), "available": num(f"Available{name}")}
    return {
        "latency_cycles": {"best": num("BestLatency"), "worst": num("WorstLatency")},
        "interval_cycles": {"min": num("IntervalMin"), "max": num("IntervalMax")},
        "clock_ns": {"target": num("TargetClockPeriod"), "estimated": num("EstimatedClockPeriod")},
        "resources": res,
    }
