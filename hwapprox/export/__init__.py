"""ONNX in: find Softmax / GELU / LayerNorm sites, calibrate, emulate, hand off.

Modules (each with its contract in its docstring):

* :mod:`~hwapprox.export.graph` -- load (path or ``ModelProto``), ONNX
  checker, unique node names, shape inference; producer/consumer/constant index.
* :mod:`~hwapprox.export.patterns` -- :class:`Site` and :func:`find_sites`:
  ``Softmax`` (opset < 13 flattened-axis semantics handled), ``Gelu``,
  ``LayerNormalization``, and the exporter patterns: Erf GELU, tanh GELU,
  decomposed LayerNorm.
* :mod:`~hwapprox.export.calibrate` -- sample inputs (``.npz`` checked
  against the model, or seeded generated ones for static shapes), one float
  onnxruntime run recording each site's input/output, :class:`SiteStats`
  and the input format choice ``ap_fixed<W, floor(log2 max|x|) + 2 + headroom>``.
* :mod:`~hwapprox.export.emulate` -- :class:`Emulator`: the graph cut at the
  sites into onnxruntime sessions by level, sites evaluated with
  ``quantize -> spec.model -> to_float``.
* :mod:`~hwapprox.export.validate` -- :func:`validate`: per-site and
  end-to-end errors, greedy ``--budget`` tuning; :mod:`~hwapprox.report.validate`
  text/JSON/YAML/PNG; :mod:`~hwapprox.cli.validate` ``hwapprox validate``.
* :mod:`~hwapprox.export.handoff` -- :func:`to_hls_graph`, the HLS flow's
  entry point (sites + specs + graph; unsupported operators listed).
* :mod:`~hwapprox.export.builders` -- seeded BERT-style encoders written in
  each exporter style (torch is not needed); :mod:`~hwapprox.export.refspec`
  float-reference "approximations" (quantisation only) for checking the path.

Embedded example (``hwapprox validate`` without a model): ``data/bert_tiny.onnx``
(2 layers, width 64, 4 heads, FFN 128, sequence 16, vocabulary 96, 4 classes;
Erf-pattern GELU and decomposed LayerNorm as PyTorch exports them at opset 14)
and ``data/bert_tiny_inputs.npz`` (16 sequences), written by
``scripts/make_example_model.py`` with weight seed 2024 and input seed 7
(:mod:`hwapprox.export.example`).
"""

from __future__ import annotations

from hwapprox.export.errors import ExportError

__all__ = ["ExportError"]
