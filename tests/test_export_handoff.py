"""to_hls_graph: the HLS flow's entry point."""

from __future__ import annotations

import pytest
from onnx_models import float_ref_spec, single_node

from hwapprox.approx.base import Operator, SpecError
from hwapprox.export.builders import EncoderShape, bert_encoder
from hwapprox.export.errors import ExportError
from hwapprox.export.handoff import HLS4ML_ONNX_OPS, to_hls_graph
from hwapprox.export.validate import import_model

SHAPE = EncoderShape(layers=1, width=16, heads=2, ffn=32, seq=4, batch=1, vocab=20)


def test_unsupported_operators_are_listed() -> None:
    with pytest.raises(
        ExportError,
        match=r"^the HLS flow cannot build these operators outside the sites: "
        r"Gather \(2: embed_\d+, Gather_\d+\)\. Cut the model before them",
    ):
        to_hls_graph(bert_encoder(SHAPE, gelu="erf", layernorm="decomposed"), {})


def test_specs_from_config_and_mapping() -> None:
    model = bert_encoder(SHAPE, gelu="tanh", layernorm="op", eps=1e-6)
    ops = HLS4ML_ONNX_OPS | {"Gather"}
    cfg = {"defaults": {"layernorm": {"method": "ibert"}}, "sites": {}}
    g = to_hls_graph(model, cfg, supported=ops)
    lns = [s for s in g.sites if s.operator is Operator.LAYERNORM]
    assert [g.specs[s.name].eps for s in lns] == [pytest.approx(1e-6, rel=1e-6)] * len(lns)
    assert all(g.specs[s.name] is None for s in g.sites if s.operator is not Operator.LAYERNORM)
    # The pattern nodes are inside the sites, not left for hls4ml.
    assert not any(
        n.op_type in ("Erf", "Pow", "Tanh") and "pooler" not in n.name for n in g.other_nodes()
    )
    imp = import_model(model)
    specs = {s.name: float_ref_spec(s) for s in imp.sites[:2]}
    g = to_hls_graph(imp, specs, supported=ops)
    assert [r["spec"] is not None for r in g.summary()] == [True, True] + [False] * 3


def test_bad_specs() -> None:
    imp = import_model(single_node("Softmax", [2, 3], 13))
    with pytest.raises(ExportError, match=r"^specs for unknown site\(s\) \['nope'\]"):
        to_hls_graph(imp, {"nope": None})
    gelu_site = import_model(single_node("Gelu", [2, 3], 20)).sites[0]
    with pytest.raises(
        ExportError, match=r"^site softmax_node is a softmax, but its spec is gelu/"
    ):
        to_hls_graph(imp, {"softmax_node": float_ref_spec(gelu_site)})
    with pytest.raises(SpecError, match=r"unknown softmax method 'nope'"):
        to_hls_graph(imp, {"defaults": {"softmax": {"method": "nope"}}})
