"""The embedded example: a small BERT-style encoder shipped in ``export/data/``.

``data/bert_tiny.onnx`` and ``data/bert_tiny_inputs.npz`` are written by
``scripts/make_example_model.py`` from :func:`hwapprox.export.builders.bert_encoder`
with :data:`SHAPE`, Erf-pattern GELU and decomposed LayerNorm (as
``torch.onnx.export`` writes them at opset 14), weight seed :data:`SEED` and
input seed :data:`INPUT_SEED`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from hwapprox.export.builders import EncoderShape

__all__ = ["INPUT_SEED", "SEED", "SHAPE", "inputs_path", "model_path"]

SHAPE = EncoderShape(layers=2, width=64, heads=4, ffn=128, seq=16, batch=None, vocab=96, classes=4)
SEED = 2024
INPUT_SEED = 7
N_SAMPLES = 16
GELU = "erf"
LAYERNORM = "decomposed"
MODEL_FILE = "bert_tiny.onnx"
INPUTS_FILE = "bert_tiny_inputs.npz"


def _data() -> Path:
    return Path(str(resources.files("hwapprox.export") / "data"))


def model_path() -> Path:
    """Path of the embedded example model."""
    return _data() / MODEL_FILE


def inputs_path() -> Path:
    """Path of its sample inputs (``input_ids``, int64 ``[16, 16]``)."""
    return _data() / INPUTS_FILE
