"""Build the transformer-family corpus in tests/corpus/hf/: the real ``transformers``
modeling code (random weights from the config classes, small: 2 layers, width 32,
2 heads), exported offline with torch's TorchScript exporter (opset 17) and its
dynamo exporter (opset 18; one Llama with torch's ``nn.RMSNorm`` at opset 23, which
writes ONNX ``RMSNormalization``).

Environment (not the project venv; torch and transformers are not dependencies)::

    python3.11 -m venv /work/.venv-torch
    /work/.venv-torch/bin/pip install /path/to/torch-2.13.0+cpu-*.whl
    /work/.venv-torch/bin/pip install torch==2.13.0 transformers onnxscript onnx==1.23.2 numpy

Usage::

    /work/.venv-torch/bin/python scripts/make_corpus_hf.py --out tests/corpus/hf [--force]
        [--only gpt2,llama]

What is written (``manifest.json`` lists each file; the test is tests/test_corpus_hf.py):

* ``<family>_<exporter><opset>.onnx`` -- the model's ``last_hidden_state`` (the
  model wrapped so that it takes its inputs by name, with ``use_cache=False``);
* ``<stem>.npz`` -- one array per graph input: text batch 2 x 8 tokens, the
  second sample right-padded (``attention_mask`` 0 on its last 3 tokens); images
  2 x 3 x 24 x 24 (patches of 8); Whisper log-mel features 2 x 8 x 16;
* ``<stem>_torch_out.npz`` -- the torch float32 output on those inputs.

Weights: ``torch.manual_seed`` per family, then the model's own initialisation
(``initializer_range`` 0.1 where the config has one, so attention is not
uniform). Families marked ``fresh`` keep it as it is (LayerNorms at 1 / 0: the
TorchScript exporter then deduplicates equal initializers and reaches them
through ``Identity`` nodes, as in a real fresh export); in the others every
parameter the initialisation left constant (LayerNorm gamma/beta, LayerScale,
biases) is perturbed by a seeded ``N(0, 0.1)`` (gammas around 1), so a
matcher that swaps or drops one is caught.

Deterministic for a given torch/transformers: a file that exists is left alone
when the new bytes are identical and is a refusal when they differ, unless
``--force``.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import sys
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
import transformers
from torch import nn

BATCH = 2
SEQ = 8
PAD = 3  # padded tokens at the end of the second sample
VOCAB = 64
IMAGE = 24
PATCH = 8
MELS = 8
FRAMES = 16
COMMON = {"attn_implementation": "eager"}


@dataclass(frozen=True)
class Family:
    """One family: how to build its model and its inputs, and what the corpus notes."""

    name: str
    build: Callable[[], nn.Module]
    inputs: str  # "text", "text_nomask", "image" or "audio"
    notes: str
    #: keep the model's own initialisation (no perturbation of constant parameters)
    fresh: bool = False
    #: the exporters that write it (``"ts"``, ``"dynamo"``)
    exporters: tuple[str, ...] = ("ts17", "dynamo18")


def _tx() -> Any:
    return transformers


def _bert() -> nn.Module:
    t = _tx()
    cfg = t.BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=32, initializer_range=0.1, **COMMON,
    )  # fmt: skip
    return t.BertModel(cfg, add_pooling_layer=False)


def _roberta() -> nn.Module:
    t = _tx()
    cfg = t.RobertaConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=32, initializer_range=0.1, **COMMON,
    )  # fmt: skip
    return t.RobertaModel(cfg, add_pooling_layer=False)


def _distilbert() -> nn.Module:
    t = _tx()
    cfg = t.DistilBertConfig(
        vocab_size=VOCAB, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
        max_position_embeddings=32, initializer_range=0.1, **COMMON,
    )  # fmt: skip
    return t.DistilBertModel(cfg)


def _albert() -> nn.Module:
    t = _tx()
    cfg = t.AlbertConfig(
        vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, max_position_embeddings=32,
        initializer_range=0.1, hidden_act="gelu", **COMMON,
    )  # fmt: skip
    return t.AlbertModel(cfg, add_pooling_layer=False)


def _electra() -> nn.Module:
    t = _tx()
    cfg = t.ElectraConfig(
        vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, max_position_embeddings=32,
        initializer_range=0.1, **COMMON,
    )  # fmt: skip
    return t.ElectraModel(cfg)


def _vit() -> nn.Module:
    t = _tx()
    cfg = t.ViTConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        image_size=IMAGE, patch_size=PATCH, initializer_range=0.1, **COMMON,
    )  # fmt: skip
    return t.ViTModel(cfg, add_pooling_layer=False)


def _deit() -> nn.Module:
    t = _tx()
    cfg = t.DeiTConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        image_size=IMAGE, patch_size=PATCH, initializer_range=0.1, **COMMON,
    )  # fmt: skip
    return t.DeiTModel(cfg, add_pooling_layer=False)


def _dinov2() -> nn.Module:
    t = _tx()
    cfg = t.Dinov2Config(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, mlp_ratio=2,
        image_size=IMAGE, patch_size=PATCH, initializer_range=0.1, layerscale_value=0.5,
        **COMMON,
    )  # fmt: skip
    return t.Dinov2Model(cfg)


def _beit() -> nn.Module:
    t = _tx()
    cfg = t.BeitConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        image_size=IMAGE, patch_size=PATCH, initializer_range=0.1, use_relative_position_bias=True,
        layer_scale_init_value=0.5, use_mean_pooling=False, **COMMON,
    )  # fmt: skip
    return t.BeitModel(cfg, add_pooling_layer=False)


def _clip_vision() -> nn.Module:
    t = _tx()
    cfg = t.CLIPVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        image_size=IMAGE, patch_size=PATCH, initializer_factor=1.0, **COMMON,
    )  # fmt: skip
    return t.CLIPVisionModel(cfg)


def _clip_text() -> nn.Module:
    t = _tx()
    cfg = t.CLIPTextConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, max_position_embeddings=16, eos_token_id=2, bos_token_id=1,
        pad_token_id=0, **COMMON,
    )  # fmt: skip
    return t.CLIPTextModel(cfg)


def _gpt2() -> nn.Module:
    t = _tx()
    cfg = t.GPT2Config(
        vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=2,
        bos_token_id=0, eos_token_id=0, **COMMON,
    )  # fmt: skip
    return t.GPT2Model(cfg)


def _opt() -> nn.Module:
    t = _tx()
    cfg = t.OPTConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        ffn_dim=64, max_position_embeddings=32, word_embed_proj_dim=32, init_std=0.1,
        bos_token_id=2, eos_token_id=2, pad_token_id=1, **COMMON,
    )  # fmt: skip
    return t.OPTModel(cfg)


def _gptneo(window: int = 256) -> nn.Module:
    """GPT-Neo: a global then a local attention layer; the local window is the
    config's default 256 (longer than the sequence: the mask is causal)."""
    t = _tx()
    cfg = t.GPTNeoConfig(
        vocab_size=VOCAB, max_position_embeddings=32, hidden_size=32, num_layers=2,
        num_heads=2, intermediate_size=64, attention_types=[[["global", "local"], 1]],
        window_size=window, initializer_range=0.1, bos_token_id=0, eos_token_id=0, **COMMON,
    )  # fmt: skip
    return t.GPTNeoModel(cfg)


def _gptneo_local() -> nn.Module:
    """GPT-Neo with a local window of 4 tokens, shorter than the sequence."""
    return _gptneo(window=4)


def _llama() -> nn.Module:
    t = _tx()
    cfg = t.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32,
        initializer_range=0.1, bos_token_id=1, eos_token_id=2, **COMMON,
    )  # fmt: skip
    return t.LlamaModel(cfg)


def _whisper() -> nn.Module:
    t = _tx()
    cfg = t.WhisperConfig(
        vocab_size=VOCAB, num_mel_bins=MELS, d_model=32, encoder_layers=2,
        encoder_attention_heads=2, encoder_ffn_dim=64, decoder_layers=1,
        decoder_attention_heads=2, decoder_ffn_dim=64, max_source_positions=FRAMES // 2,
        max_target_positions=16, init_std=0.1, pad_token_id=0, bos_token_id=0,
        eos_token_id=0, decoder_start_token_id=0, **COMMON,
    )  # fmt: skip
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    return WhisperEncoder(cfg)


def _llama_nn_rmsnorm() -> nn.Module:
    """Llama with each ``LlamaRMSNorm`` swapped for torch's ``nn.RMSNorm`` (same weight
    and eps): the dynamo exporter at opset 23 writes ONNX ``RMSNormalization``."""
    model = _llama()
    for name, mod in list(model.named_modules()):
        if type(mod).__name__ == "LlamaRMSNorm":
            new = nn.RMSNorm(mod.weight.shape[0], eps=mod.variance_epsilon)
            with torch.no_grad():
                new.weight.copy_(mod.weight)
            parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
            setattr(parent, name.rsplit(".", 1)[-1], new)
    return model


# fmt: off
FAMILIES = [
    Family("bert", _bert, "text", "post-LN encoder, erf GELU, additive padding mask"),
    Family("roberta", _roberta, "text", "BERT blocks, position ids from the padding"),
    Family("distilbert", _distilbert, "text", "post-LN, q scaled before QK^T, Where mask"),
    Family("albert", _albert, "text", "one block shared by both layers, 16-wide embeddings"),
    Family("electra", _electra, "text", "BERT blocks after a 16 -> 32 embedding projection"),
    Family("vit", _vit, "image", "pre-LN, CLS token, no mask"),
    Family("deit", _deit, "image", "ViT blocks, CLS + distillation token"),
    Family("dinov2", _dinov2, "image", "pre-LN with LayerScale (per-channel gain before "
           "each residual add)"),
    Family("beit", _beit, "image", "LayerScale + relative position bias added to the scores"),
    Family("clip_vision", _clip_vision, "image", "pre-LN after a pre-LayerNorm, quick_gelu"),
    Family("clip_text", _clip_text, "text", "pre-LN, causal + padding mask, quick_gelu"),
    Family("gpt2", _gpt2, "text", "pre-LN decoder, causal, Conv1D projections, tanh GELU; "
           "fresh initialisation (LayerNorms deduplicated by the TorchScript exporter)",
           fresh=True),
    Family("opt", _opt, "text", "pre-LN decoder, causal, ReLU FFN"),
    Family("gptneo", _gptneo, "text", "decoder, unscaled scores, local window 256 (the "
           "config default; longer than the sequence)"),
    Family("gptneo_local", _gptneo_local, "text", "GPT-Neo with a 4-token local window in "
           "its second layer (shorter than the sequence)", exporters=("ts17",)),
    Family("llama", _llama, "text", "RMSNorm, rotary Q/K, SiLU-gated FFN, causal; fresh "
           "initialisation", fresh=True),
    Family("llama_rmsop", _llama_nn_rmsnorm, "text", "Llama with torch nn.RMSNorm: ONNX "
           "RMSNormalization (opset 23)", fresh=True, exporters=("dynamo23",)),
    Family("whisper_encoder", _whisper, "audio", "conv front end, pre-LN encoder, GELU"),
]
# fmt: on


class Wrapped(nn.Module):
    """The model taking its inputs by name and returning ``last_hidden_state``."""

    def __init__(self, model: nn.Module, names: list[str]) -> None:
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        kw = dict(zip(self.names, args, strict=True))
        if "input_ids" in kw and _accepts(self.model, "use_cache"):
            kw["use_cache"] = False
        return self.model(**kw).last_hidden_state


def _accepts(model: nn.Module, arg: str) -> bool:
    import inspect

    return arg in inspect.signature(model.forward).parameters


def feeds_for(kind: str, seed: int) -> dict[str, np.ndarray]:
    """The family's inputs (module docstring)."""
    rng = np.random.default_rng(seed)
    if kind == "image":
        return {"pixel_values": rng.standard_normal((BATCH, 3, IMAGE, IMAGE)).astype(np.float32)}
    if kind == "audio":
        return {"input_features": rng.standard_normal((BATCH, MELS, FRAMES)).astype(np.float32)}
    ids = rng.integers(3, VOCAB, size=(BATCH, SEQ)).astype(np.int64)
    mask = np.ones((BATCH, SEQ), dtype=np.int64)
    mask[1, SEQ - PAD :] = 0
    ids[1, SEQ - PAD :] = 1  # a pad-like id (the models' pad ids are 0 or 1)
    return {"input_ids": ids, "attention_mask": mask}


def perturb(model: nn.Module, seed: int) -> None:
    """Every parameter the initialisation left constant gets seeded N(0, 0.1) noise."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            flat = p.reshape(-1)
            if flat.numel() > 1 and bool((flat == flat[0]).all()):
                p.add_(0.1 * torch.randn(p.shape, generator=gen))


def export(model: nn.Module, feeds: dict[str, np.ndarray], exporter: str, opset: int) -> bytes:
    """One export (static shapes), doc strings and dynamo stack traces dropped."""
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    names = list(feeds)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(tmp) / "m.onnx"
        if exporter == "ts":
            torch.onnx.export(
                model, args, str(path), dynamo=False, opset_version=opset, input_names=names,
                output_names=["last_hidden_state"], do_constant_folding=True,
            )  # fmt: skip
        else:
            prog = torch.onnx.export(
                model, args, dynamo=True, opset_version=opset, input_names=names,
                output_names=["last_hidden_state"], external_data=False, optimize=True,
                verbose=False,
            )  # fmt: skip
            assert prog is not None
            prog.save(str(path), external_data=False)
        m = onnx.load(str(path))
    m.doc_string = ""
    for n in m.graph.node:
        keep = [p for p in n.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
        del n.metadata_props[:]
        n.metadata_props.extend(keep)
        n.doc_string = ""
    onnx.checker.check_model(m)
    return m.SerializeToString()


def savez(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def write(path: Path, data: bytes, force: bool) -> None:
    if path.exists() and path.read_bytes() != data and not force:
        raise SystemExit(f"{path} exists with other contents; pass --force to replace it")
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)


EXPORTERS = {"ts17": ("ts", 17), "dynamo18": ("dynamo", 18), "dynamo23": ("dynamo", 23)}


def build(out: Path, force: bool, only: set[str] | None) -> int:
    out.mkdir(parents=True, exist_ok=True)
    man_path = out / "manifest.json"
    old = json.loads(man_path.read_text())["models"] if man_path.exists() else []
    entries = {e["file"]: e for e in old}
    failures = []
    for i, fam in enumerate(FAMILIES):
        if only is not None and fam.name not in only:
            continue
        torch.manual_seed(1000 + i)
        model = fam.build().eval()
        if not fam.fresh:
            perturb(model, 2000 + i)
        feeds = feeds_for(fam.inputs, 3000 + i)
        wrapped = Wrapped(model, list(feeds)).eval()
        with torch.no_grad():
            ref = wrapped(*(torch.from_numpy(v) for v in feeds.values())).numpy()
        for ex in fam.exporters:
            exporter, opset = EXPORTERS[ex]
            stem = f"{fam.name}_{ex}"
            try:
                data = export(wrapped, feeds, exporter, opset)
            except Exception as exc:  # recorded: the table says why
                failures.append({"file": f"{stem}.onnx", "error": f"{type(exc).__name__}: "
                                 f"{str(exc).splitlines()[0][:300]}"})  # fmt: skip
                print(f"{stem}: export failed: {failures[-1]['error']}", file=sys.stderr)
                continue
            write(out / f"{stem}.onnx", data, force)
            write(out / f"{stem}.npz", savez(feeds), force)
            write(out / f"{stem}_torch_out.npz", savez({"last_hidden_state": ref}), force)
            m = onnx.load_from_string(data)
            entries[f"{stem}.onnx"] = {
                "file": f"{stem}.onnx",
                "inputs": f"{stem}.npz",
                "torch_outputs": f"{stem}_torch_out.npz",
                "family": fam.name,
                "model_class": type(model).__name__,
                "exporter": "torchscript" if exporter == "ts" else exporter,
                "opset": opset,
                "ir_version": int(m.ir_version),
                "graph_inputs": [x.name for x in m.graph.input],
                "graph_outputs": [x.name for x in m.graph.output],
                "input_shapes": {k: list(v.shape) for k, v in feeds.items()},
                "fresh_init": fam.fresh,
                "notes": fam.notes,
                "bytes": len(data),
            }
            print(f"{stem}: {len(data)} bytes", file=sys.stderr)
    order = {f"{f.name}_{e}.onnx": (i, e) for i, f in enumerate(FAMILIES)
             for e in f.exporters}  # fmt: skip
    manifest = {
        "generator": "scripts/make_corpus_hf.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "onnx": onnx.__version__,
        "models": sorted(entries.values(), key=lambda e: order.get(e["file"], (99, ""))),
        "failures": failures,
    }
    man_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("tests/corpus/hf"))
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--only", help="comma-separated family names")
    args = ap.parse_args(argv)
    logging.disable(logging.WARNING)
    only = set(args.only.split(",")) if args.only else None
    return build(args.out, args.force, only)


if __name__ == "__main__":
    sys.exit(main())
