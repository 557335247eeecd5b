"""Hand-off of an imported model to the HLS flow: sites, specs and the graph.

This module is the one door from :mod:`hwapprox.hls` into :mod:`hwapprox.export`
(``tests/test_architecture.py`` checks that ``hls`` imports no other ``export``
module): besides :func:`to_hls_graph` it re-exports what the HLS block flow reads
of the ONNX side -- loading and indexing graphs, the site finder and its sites,
attention-mask tracing, calibration statistics and formats, traced onnxruntime
sessions, the float references of the block check, the seeded test encoders, and
the transformer-block matcher (:mod:`hwapprox.export.blockmatch`: blocks found in
the graph, checked in float64, folded into one node each) with the calibration of
each block's specs and formats (:mod:`hwapprox.export.blockcal`).

:func:`to_hls_graph` is the entry point for :mod:`hwapprox.hls`: it imports
the model (or takes an :class:`~hwapprox.export.validate.ImportedModel`),
resolves one spec per site (a mapping of specs, or a per-site config in the
:mod:`hwapprox.approx.config` format, e.g. the ``config.yaml`` that
``hwapprox validate -o DIR`` writes) and checks that every node outside the
sites is an operator the HLS side can build; otherwise it raises an
:class:`ExportError` listing each unsupported operator with its nodes.

:data:`HLS4ML_ONNX_OPS` are the ONNX operators with a handler in hls4ml
1.3's ONNX converter (``hls4ml/converters/onnx/*.py``), plus ``Constant``
and ``Identity``, which carry no computation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onnx import ModelProto, NodeProto

from hwapprox.approx.base import ApproxSpec
from hwapprox.approx.config import ApproxConfig, load_config
from hwapprox.export.blockcal import (
    BlockCalibration,
    bias_format,
    calibrate_blocks,
    resolve_block_specs,
    resolve_site,
)
from hwapprox.export.blockmatch import (
    DOMAIN,
    OP_TYPE,
    SITE_OP_TYPE,
    BlockMatch,
    encoder_block_onnx,
    fold_blocks,
    fold_sites,
    match_blocks,
    outside_nodes,
)
from hwapprox.export.builders import EncoderShape, bert_encoder
from hwapprox.export.calibrate import (
    SiteStats,
    Trace,
    calibrate,
    graph_inputs,
    parameter_format,
    parse_range,
    prepare_inputs,
)
from hwapprox.export.emulate import trace_model
from hwapprox.export.errors import ExportError
from hwapprox.export.graph import GraphIndex, load_model
from hwapprox.export.masks import MASK_LIMIT
from hwapprox.export.masks import _Ancestry as Ancestry
from hwapprox.export.patterns import Site, config_for_kinds, find_sites
from hwapprox.export.refspec import FloatRefNormaliser, gelu_float
from hwapprox.export.tuning import calibrated_fields
from hwapprox.export.validate import DEFAULT_METHODS, ImportedModel, import_model

__all__ = [
    "DEFAULT_METHODS",
    "DOMAIN",
    "HLS4ML_ONNX_OPS",
    "MASK_LIMIT",
    "OP_TYPE",
    "SITE_OP_TYPE",
    "Ancestry",
    "BlockCalibration",
    "BlockMatch",
    "EncoderShape",
    "ExportError",
    "FloatRefNormaliser",
    "GraphIndex",
    "HlsGraph",
    "Site",
    "SiteStats",
    "Trace",
    "bert_encoder",
    "bias_format",
    "calibrate",
    "calibrate_blocks",
    "calibrated_fields",
    "config_for_kinds",
    "encoder_block_onnx",
    "find_sites",
    "fold_blocks",
    "fold_sites",
    "gelu_float",
    "graph_inputs",
    "load_model",
    "match_blocks",
    "outside_nodes",
    "parameter_format",
    "parse_range",
    "prepare_inputs",
    "resolve_block_specs",
    "resolve_site",
    "to_hls_graph",
    "trace_model",
]

HLS4ML_ONNX_OPS: frozenset[str] = frozenset(
    {
        # core.py
        "Gemm", "MatMul", "Relu", "Tanh", "Sigmoid", "LeakyRelu", "ThresholdedRelu", "Elu",
        "Selu", "PRelu", "HardSigmoid", "Softmax", "Softsign", "Softplus", "Clip",
        "BatchNormalization", "Quant", "IntQuant", "BipolarQuant",
        # reshape.py
        "Transpose", "Reshape", "Flatten", "Resize", "Pad",
        # merge.py
        "Add", "Sub", "Mul", "Div", "Average", "Max", "Min", "Concat", "Sum",
        # pooling.py, convolution.py
        "AveragePool", "MaxPool", "GlobalMaxPool", "GlobalAveragePool", "Conv",
        # no computation
        "Constant", "Identity",
    }
)  # fmt: skip


@dataclass(frozen=True)
class HlsGraph:
    """What the HLS flow needs: the checked graph, its sites and their specs.

    ``specs[name]`` is the site's spec, or ``None`` for a site left in float
    (the HLS flow must then refuse it or use its own float path).
    """

    model: ModelProto
    sites: tuple[Site, ...]
    specs: dict[str, ApproxSpec | None]

    def site(self, name: str) -> Site:
        for s in self.sites:
            if s.name == name:
                return s
        raise ExportError(f"no site named {name!r}; sites: {[s.name for s in self.sites]}")

    def other_nodes(self) -> list[NodeProto]:
        """Nodes of the graph outside every site, in graph order."""
        inside = {n for s in self.sites for n in s.nodes}
        return [n for n in self.model.graph.node if n.name not in inside]

    def summary(self) -> list[dict[str, Any]]:
        """One plain row per site: name, operator, tensors, spec (HLS spelling)."""
        return [
            {
                "name": s.name,
                "operator": str(s.operator),
                "input": s.input,
                "output": s.output,
                "spec": None if self.specs[s.name] is None else self.specs[s.name].to_config(),  # type: ignore[union-attr]
            }
            for s in self.sites
        ]


def to_hls_graph(
    model: str | Path | ModelProto | ImportedModel,
    site_specs: Mapping[str, ApproxSpec | None] | ApproxConfig | Mapping[str, Any] | str | Path,
    *,
    supported: Iterable[str] = HLS4ML_ONNX_OPS,
) -> HlsGraph:
    """Import ``model``, attach a spec to each site and check the other operators.

    ``site_specs``: site name -> spec (sites not named stay ``None``), or a
    config (object, dict or YAML path) resolved per site with the model's
    constants (LayerNorm ``eps``, GELU form).
    """
    imp = model if isinstance(model, ImportedModel) else import_model(model)
    names = [s.name for s in imp.sites]
    if (
        isinstance(site_specs, Mapping)
        and all(v is None or isinstance(v, ApproxSpec) for v in site_specs.values())
        and not {"defaults", "sites"} & set(site_specs)
    ):
        unknown = sorted(set(site_specs) - set(names))
        if unknown:
            raise ExportError(f"specs for unknown site(s) {unknown}; sites of this model: {names}")
        specs: dict[str, ApproxSpec | None] = {n: site_specs.get(n) for n in names}  # type: ignore[misc]
        for s in imp.sites:
            spec = specs[s.name]
            if spec is not None and spec.operator is not s.operator:
                raise ExportError(
                    f"site {s.name} is a {s.operator}, but its spec is {spec.describe()}"
                )
    else:
        cfg = config_for_kinds(load_config(site_specs), imp.sites)  # type: ignore[arg-type]
        specs = cfg.resolve(
            {s.name: s.operator for s in imp.sites},
            site_fields={s.name: s.fields_for_spec() for s in imp.sites},
        )
    graph = HlsGraph(imp.model, tuple(imp.sites), specs)
    allowed = set(supported)
    bad: dict[str, list[str]] = defaultdict(list)
    for node in graph.other_nodes():
        if node.op_type not in allowed or node.domain not in ("", "ai.onnx"):
            key = (
                node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
            )
            bad[key].append(node.name)
    if bad:
        listing = "; ".join(
            f"{op} ({len(nodes)}: {', '.join(nodes[:3])}{', ...' if len(nodes) > 3 else ''})"
            for op, nodes in sorted(bad.items())
        )
        raise ExportError(
            f"the HLS flow cannot build these operators outside the sites: {listing}. "
            f"Cut the model before them (e.g. start after the embeddings) or extend `supported`"
        )
    return graph
