"""Write the embedded example model and its sample inputs into hwapprox/export/data/.

Model: :func:`hwapprox.export.builders.bert_encoder` with
``hwapprox.export.example.SHAPE`` (2 layers, width 64, 4 heads, FFN 128,
sequence 16, dynamic batch, vocabulary 96, 4 classes), ``gelu="erf"``
(PyTorch ``nn.GELU`` export: Div/Erf/Add/Mul/Mul), ``layernorm="decomposed"``
(PyTorch ``nn.LayerNorm`` export at opset 14), weight seed
``example.SEED = 2024``. Inputs: 16 sequences of token ids from
:func:`hwapprox.export.builders.sample_inputs` with ``example.INPUT_SEED = 7``.

Deterministic: running it again writes identical files. Usage::

    .venv/bin/python scripts/make_example_model.py [--check]

``--check`` compares with the committed files instead of writing.
"""

from __future__ import annotations

import io
import sys

import numpy as np
import onnx

from hwapprox.export import example
from hwapprox.export.builders import bert_encoder, sample_inputs


def build() -> tuple[bytes, dict[str, np.ndarray]]:
    model = bert_encoder(
        example.SHAPE, gelu=example.GELU, layernorm=example.LAYERNORM, seed=example.SEED
    )
    model.graph.name = "hwapprox_bert_tiny"
    onnx.checker.check_model(model)
    feeds = sample_inputs(example.SHAPE, batch=example.N_SAMPLES, seed=example.INPUT_SEED)
    return model.SerializeToString(), feeds


def main(argv: list[str]) -> int:
    blob, feeds = build()
    mpath, ipath = example.model_path(), example.inputs_path()
    if "--check" in argv:
        same = mpath.read_bytes() == blob
        with np.load(ipath) as z:
            same = same and all(np.array_equal(z[k], v) for k, v in feeds.items())
        print("up to date" if same else "DIFFERENT from the committed files")
        return 0 if same else 1
    mpath.parent.mkdir(parents=True, exist_ok=True)
    mpath.write_bytes(blob)
    buf = io.BytesIO()
    np.savez(buf, **feeds)
    ipath.write_bytes(buf.getvalue())
    print(f"wrote {mpath} ({len(blob)} bytes) and {ipath}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
