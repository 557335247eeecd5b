# ruff: noqa: RUF005  (torch.Size + tuple is how the HF modeling code builds view shapes)
"""Build the ONNX export corpus in tests/corpus/: small seeded torch models written
the way Hugging Face writes BERT, DistilBERT, ViT and GPT-2, exported with torch's
TorchScript exporter (opset 14 and 17) and its dynamo exporter (opset 18).

Environment (not the project venv; torch is not a dependency of hwapprox)::

    python3.11 -m venv /work/.venv-torch
    /work/.venv-torch/bin/pip install torch==2.13.0 onnxscript==0.7.2 onnx==1.23.2 \
        onnxruntime==1.32.0 numpy==2.4.6

Usage::

    /work/.venv-torch/bin/python scripts/make_corpus.py --out tests/corpus [--force]
        [--ort-python /work/main/.venv/bin/python]

Each model is checked with onnxruntime run by ``--ort-python`` (default: the
project venv, whose onnxruntime 1.31 reads ONNX IR <= 13) against the torch
output on the model's own inputs; the largest |difference| goes into the
manifest as ``torch_vs_ort_max_abs``.

What is written (see ``manifest.json``; the test is tests/test_corpus_float.py):

* ``<style>_<exporter><opset>.onnx`` -- one model per style and export;
* ``<stem>.npz`` -- one array per graph input (exactly the graph input names),
  batch 4; text models get a real right-padded batch (different true lengths,
  ``attention_mask`` 0 and token id 0 on the padding);
* ``<stem>_torch_out.npz`` -- the torch (float32) outputs on those inputs,
  one array per graph output;
* ``bert_ts17_ir14.onnx`` -- a copy of ``bert_ts17.onnx`` with ``ir_version``
  set to 14 (``"ir_too_new": true``): onnxruntime 1.31 refuses it on purpose;
* ``encoder_nobatch_ts17.onnx`` -- an encoder block stack on [S, D] embeddings
  without a batch axis (``"batch_axis": false``).

Styles (weights drawn from one numpy generator per style, so the files do not
depend on torch's RNG):

* ``bert`` -- word + position + token-type embeddings, embedding LayerNorm,
  post-LN blocks, HF erf GELU ``x * 0.5 * (1 + erf(x / sqrt(2)))``, HF extended
  additive mask ``(1 - mask[:, None, None, :]) * finfo.min`` added to the scores
  ``QK^T / sqrt(dh)``; output last_hidden_state. Outlier channels injected.
* ``distilbert`` -- q / sqrt(dh) before the matmul, ``masked_fill(mask == 0,
  finfo.min)`` (a ``Where``), no token types, post-LN, ``nn.GELU()``. No outliers.
* ``vit`` -- Conv2d patches, CLS token, position embeddings, pre-LN, final
  LayerNorm, ``nn.GELU()``, classifier on the CLS token; no mask.
* ``gpt2`` -- Conv1D (addmm) projections, constant lower-triangle bool buffer
  sliced to the sequence and applied with ``torch.where(causal, w, finfo.min)``,
  then the additive padding mask; pre-LN; explicit tanh GELU with ``torch.pow``;
  tied LM head (logits [B, S, vocab]).
* ``gpt2c`` -- as ``gpt2`` but the causal mask is computed on the fly:
  ``torch.triu(torch.ones(S, S), 1).bool()`` and ``masked_fill`` (Trilu under a
  dynamic sequence axis).
* ``encoder_nobatch`` -- two BERT post-LN blocks on [S, D] embeddings, no mask.
* ``bert_<norm>`` -- ``bert`` (same weights, outliers and HF additive mask) with
  ``F.softmax`` in the attention replaced by another normaliser
  (:data:`NORMALISERS`), TorchScript opset 17 and dynamo opset 18 only:
  ``softmax1`` (Softmax_1 spelled out, ``exp(x - m) / (exp(-m) + sum exp(x - m))``),
  ``softmax1cat`` (a zero logit concatenated before ``F.softmax``, then sliced
  off), ``clipped`` (``clip((zeta - gamma) * softmax + gamma, 0, 1)``, gamma -0.03,
  zeta 1.02), ``sigmoid`` (``sigmoid(x + b)``, b = -log 12), ``relu``
  (``relu(x) / x.size(-1)``: a run-time n) and ``relumul`` (``relu(x) * (1 / 12)``).
  Their manifest entries add ``expected_kinds`` (site kind counts) and
  ``expected_params`` (the constants the site finder must report).

Deterministic: the same command writes byte-identical files. A file that exists
is left alone when the new bytes are identical (so new styles are added without
touching the old files) and is a refusal when they differ, unless ``--force``.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import io
import json
import logging
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ORT_PYTHON = ROOT / ".venv" / "bin" / "python"
BATCH = 4
SEQ = 12
MAX_POS = 32
VOCAB = 128

# --------------------------------------------------------------------------------------
# Models (pure torch, written as the Hugging Face modeling code writes them)
# --------------------------------------------------------------------------------------


def hf_erf_gelu(x: torch.Tensor) -> torch.Tensor:
    """transformers ``GELUActivation`` python form (BERT)."""
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def new_gelu(x: torch.Tensor) -> torch.Tensor:
    """transformers ``NewGELUActivation`` (GPT-2 ``gelu_new``)."""
    return (
        0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    )


class BertSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        new_shape = x.size()[:-1] + (self.heads, self.dh)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None) -> torch.Tensor:
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / math.sqrt(self.dh)
        if ext_mask is not None:
            scores = scores + ext_mask
        probs = F.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size()[:-2] + (self.heads * self.dh,))


class SdpaSelfAttention(BertSelfAttention):
    """transformers' default ``attn_implementation="sdpa"``: the same projections, then
    ``F.scaled_dot_product_attention`` with the additive mask as ``attn_mask``."""

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None) -> torch.Tensor:
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=ext_mask)
        ctx = ctx.permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size()[:-2] + (self.heads * self.dh,))


# Attention normalisers other than softmax (the ``bert_<norm>`` styles), written as
# model code writes them. n = SEQ (the corpus sequence length) where a constant n is used.
CLIP_GAMMA, CLIP_ZETA = -0.03, 1.02  # Bondarenko et al. 2023: gamma <= 0, zeta >= 1
NORM_N = SEQ  # the constant n of sigmoid attention (b = -log n) and relu(x) * (1 / n)


def softmax1_exp(scores: torch.Tensor) -> torch.Tensor:
    """Softmax_1 spelled out: ``exp(x - m) / (exp(-m) + sum exp(x - m))``."""
    m = scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores - m)
    return e / (torch.exp(-m) + e.sum(dim=-1, keepdim=True))


def softmax1_cat(scores: torch.Tensor) -> torch.Tensor:
    """Softmax_1 as a zero logit concatenated in front of the row, then sliced off."""
    zero = torch.zeros_like(scores[..., :1])
    return F.softmax(torch.cat([zero, scores], dim=-1), dim=-1)[..., 1:]


def clipped_softmax(scores: torch.Tensor) -> torch.Tensor:
    """Clipped softmax: ``clip((zeta - gamma) * softmax(x) + gamma, 0, 1)``."""
    return torch.clip((CLIP_ZETA - CLIP_GAMMA) * F.softmax(scores, dim=-1) + CLIP_GAMMA, 0, 1)


def sigmoid_attention(scores: torch.Tensor) -> torch.Tensor:
    """Sigmoid attention: ``sigmoid(x + b)``, ``b = -log(n)`` for n = NORM_N."""
    return torch.sigmoid(scores + (-math.log(NORM_N)))


def relu_attention(scores: torch.Tensor) -> torch.Tensor:
    """ReLU attention: ``relu(x) / n`` with n the key length (``scores.size(-1)``)."""
    return torch.relu(scores) / scores.size(-1)


def relu_attention_mul(scores: torch.Tensor) -> torch.Tensor:
    """ReLU attention as ``relu(x) * (1 / n)`` with a constant n = NORM_N."""
    return torch.relu(scores) * (1.0 / NORM_N)


NORMALISERS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "softmax1": softmax1_exp,
    "softmax1cat": softmax1_cat,
    "clipped": clipped_softmax,
    "sigmoid": sigmoid_attention,
    "relu": relu_attention,
    "relumul": relu_attention_mul,
}


class NormSelfAttention(BertSelfAttention):
    """BERT self-attention with ``F.softmax`` replaced by ``NORMALISERS[norm]``."""

    def __init__(self, d: int, heads: int, norm: str) -> None:
        super().__init__(d, heads)
        self.norm = norm

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None) -> torch.Tensor:
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / math.sqrt(self.dh)
        if ext_mask is not None:
            scores = scores + ext_mask
        probs = NORMALISERS[self.norm](scores)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size()[:-2] + (self.heads * self.dh,))


class BertLayer(nn.Module):
    """Post-LN: LN(x + attn(x)), LN(h + ffn(h))."""

    def __init__(
        self,
        d: int,
        heads: int,
        ffn: int,
        eps: float = 1e-12,
        sdpa: bool = False,
        norm: str | None = None,
    ) -> None:
        super().__init__()
        if norm is not None:
            self.attention: BertSelfAttention = NormSelfAttention(d, heads, norm)
        else:
            self.attention = (SdpaSelfAttention if sdpa else BertSelfAttention)(d, heads)
        self.attn_out = nn.Linear(d, d)
        self.attn_ln = nn.LayerNorm(d, eps=eps)
        self.intermediate = nn.Linear(d, ffn)
        self.output = nn.Linear(ffn, d)
        self.out_ln = nn.LayerNorm(d, eps=eps)

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None) -> torch.Tensor:
        h = self.attn_ln(self.attn_out(self.attention(x, ext_mask)) + x)
        return self.out_ln(self.output(hf_erf_gelu(self.intermediate(h))) + h)


class Bert(nn.Module):
    def __init__(
        self,
        d: int = 32,
        heads: int = 4,
        ffn: int = 64,
        layers: int = 2,
        sdpa: bool = False,
        norm: str | None = None,
    ) -> None:
        super().__init__()
        self.sdpa = sdpa
        self.word_embeddings = nn.Embedding(VOCAB, d, padding_idx=0)
        self.position_embeddings = nn.Embedding(MAX_POS, d)
        self.token_type_embeddings = nn.Embedding(2, d)
        self.emb_ln = nn.LayerNorm(d, eps=1e-12)
        self.register_buffer(
            "position_ids", torch.arange(MAX_POS).expand((1, -1)), persistent=False
        )
        self.layer = nn.ModuleList(
            BertLayer(d, heads, ffn, sdpa=sdpa, norm=norm) for _ in range(layers)
        )

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        x = (
            self.word_embeddings(input_ids)
            + self.token_type_embeddings(token_type_ids)
            + self.position_embeddings(position_ids)
        )
        x = self.emb_ln(x)
        dtype = x.dtype
        if self.sdpa:  # transformers' _prepare_4d_attention_mask_for_sdpa: [B, 1, S, S]
            bsz, src_len = attention_mask.shape
            expanded = attention_mask[:, None, None, :].expand(bsz, 1, seq_length, src_len)
            inverted = 1.0 - expanded.to(dtype)
            ext = inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)
        else:  # get_extended_attention_mask: [B, 1, 1, S]
            ext = attention_mask[:, None, None, :].to(dtype)
            ext = (1.0 - ext) * torch.finfo(dtype).min
        for layer in self.layer:
            x = layer(x, ext)
        return x


class DistilAttention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.n_heads, self.dim = heads, d
        self.q_lin = nn.Linear(d, d)
        self.k_lin = nn.Linear(d, d)
        self.v_lin = nn.Linear(d, d)
        self.out_lin = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        bs, _q_length, _dim = x.size()
        k_length = x.size(1)
        dim_per_head = self.dim // self.n_heads
        mask_reshp = (bs, 1, 1, k_length)

        def shape(t: torch.Tensor) -> torch.Tensor:
            return t.view(bs, -1, self.n_heads, dim_per_head).transpose(1, 2)

        def unshape(t: torch.Tensor) -> torch.Tensor:
            return t.transpose(1, 2).contiguous().view(bs, -1, self.n_heads * dim_per_head)

        q, k, v = shape(self.q_lin(x)), shape(self.k_lin(x)), shape(self.v_lin(x))
        q = q / math.sqrt(dim_per_head)
        scores = torch.matmul(q, k.transpose(2, 3))
        mask = (mask == 0).view(mask_reshp).expand_as(scores)
        scores = scores.masked_fill(mask, torch.tensor(torch.finfo(scores.dtype).min))
        weights = F.softmax(scores, dim=-1)
        return self.out_lin(unshape(torch.matmul(weights, v)))


class DistilBlock(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.attention = DistilAttention(d, heads)
        self.sa_layer_norm = nn.LayerNorm(d, eps=1e-12)
        self.lin1 = nn.Linear(d, ffn)
        self.activation = nn.GELU()
        self.lin2 = nn.Linear(ffn, d)
        self.output_layer_norm = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        sa = self.sa_layer_norm(self.attention(x, mask) + x)
        return self.output_layer_norm(self.lin2(self.activation(self.lin1(sa))) + sa)


class DistilBert(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4, ffn: int = 64, layers: int = 2) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, d, padding_idx=0)
        self.position_embeddings = nn.Embedding(MAX_POS, d)
        self.emb_ln = nn.LayerNorm(d, eps=1e-12)
        self.layer = nn.ModuleList(DistilBlock(d, heads, ffn) for _ in range(layers))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).expand_as(input_ids)
        x = self.emb_ln(self.word_embeddings(input_ids) + self.position_embeddings(position_ids))
        for layer in self.layer:
            x = layer(x, attention_mask)
        return x


class ViTLayer(nn.Module):
    """Pre-LN: x + attn(LN(x)), h + ffn(LN(h))."""

    def __init__(self, d: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.layernorm_before = nn.LayerNorm(d, eps=1e-12)
        self.attention = BertSelfAttention(d, heads)
        self.attn_out = nn.Linear(d, d)
        self.layernorm_after = nn.LayerNorm(d, eps=1e-12)
        self.intermediate = nn.Linear(d, ffn)
        self.act = nn.GELU()
        self.output = nn.Linear(ffn, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.attn_out(self.attention(self.layernorm_before(x), None)) + x
        return self.output(self.act(self.intermediate(self.layernorm_after(h)))) + h


class ViT(nn.Module):
    def __init__(
        self,
        d: int = 32,
        heads: int = 2,
        ffn: int = 64,
        layers: int = 2,
        image: int = 16,
        patch: int = 4,
        classes: int = 10,
    ) -> None:
        super().__init__()
        n = (image // patch) ** 2
        self.projection = nn.Conv2d(3, d, kernel_size=patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.position_embeddings = nn.Parameter(torch.zeros(1, n + 1, d))
        self.layer = nn.ModuleList(ViTLayer(d, heads, ffn) for _ in range(layers))
        self.layernorm = nn.LayerNorm(d, eps=1e-12)
        self.classifier = nn.Linear(d, classes)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        b = pixel_values.shape[0]
        x = self.projection(pixel_values).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(b, -1, -1), x), dim=1)
        x = x + self.position_embeddings
        for layer in self.layer:
            x = layer(x)
        x = self.layernorm(x)
        return self.classifier(x[:, 0, :])


class Conv1D(nn.Module):
    """GPT-2's transposed linear: ``addmm(bias, x.view(-1, nx), weight)``."""

    def __init__(self, nf: int, nx: int) -> None:
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.zeros(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class GPT2Attention(nn.Module):
    def __init__(self, d: int, heads: int, computed_causal: bool) -> None:
        super().__init__()
        self.heads, self.dh, self.d = heads, d // heads, d
        self.computed_causal = computed_causal
        if not computed_causal:
            self.register_buffer(
                "bias",
                torch.tril(torch.ones((MAX_POS, MAX_POS), dtype=torch.bool)).view(
                    1, 1, MAX_POS, MAX_POS
                ),
                persistent=False,
            )
        self.c_attn = Conv1D(3 * d, d)
        self.c_proj = Conv1D(d, d)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        new_shape = x.size()[:-1] + (self.heads, self.dh)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        query, key, value = self.c_attn(x).split(self.d, dim=2)
        query, key, value = self.split(query), self.split(key), self.split(value)
        w = torch.matmul(query, key.transpose(-1, -2))
        w = w / torch.full([], value.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
        query_length, key_length = query.size(-2), key.size(-2)
        if self.computed_causal:
            causal = torch.triu(torch.ones(query_length, key_length, device=w.device), 1).bool()
            w = w.masked_fill(causal, torch.finfo(w.dtype).min)
        else:
            causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
            mask_value = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype, device=w.device)
            w = torch.where(causal_mask, w.to(w.dtype), mask_value)
        w = w + attention_mask
        w = F.softmax(w, dim=-1)
        a = torch.matmul(w, value).permute(0, 2, 1, 3).contiguous()
        a = a.view(a.size()[:-2] + (self.d,))
        return self.c_proj(a)


class GPT2Block(nn.Module):
    def __init__(self, d: int, heads: int, computed_causal: bool) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps=1e-5)
        self.attn = GPT2Attention(d, heads, computed_causal)
        self.ln_2 = nn.LayerNorm(d, eps=1e-5)
        self.c_fc = Conv1D(4 * d, d)
        self.c_proj = Conv1D(d, 4 * d)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), attention_mask)
        return x + self.c_proj(new_gelu(self.c_fc(self.ln_2(x))))


class GPT2(nn.Module):
    def __init__(
        self, d: int = 32, heads: int = 4, layers: int = 2, computed_causal: bool = False
    ) -> None:
        super().__init__()
        self.wte = nn.Embedding(VOCAB, d)
        self.wpe = nn.Embedding(MAX_POS, d)
        self.h = nn.ModuleList(GPT2Block(d, heads, computed_causal) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d, eps=1e-5)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        batch_size, seq_length = input_ids.size()
        position_ids = torch.arange(0, seq_length, dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(position_ids)
        dtype = x.dtype
        mask = attention_mask.view(batch_size, -1)[:, None, None, :].to(dtype)
        mask = (1.0 - mask) * torch.finfo(dtype).min
        for block in self.h:
            x = block(x, mask)
        x = self.ln_f(x)
        return F.linear(x, self.wte.weight)  # tied LM head


class EncoderNoBatch(nn.Module):
    """Two BERT post-LN blocks on [S, D] embeddings: no batch axis, no mask."""

    def __init__(self, d: int = 32, heads: int = 4, ffn: int = 64, layers: int = 2) -> None:
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(d, heads, ffn) for _ in range(layers))
        for layer in self.layer:
            layer.attention.split = self._split(layer.attention)  # type: ignore[method-assign]

    @staticmethod
    def _split(att: BertSelfAttention) -> Callable[[torch.Tensor], torch.Tensor]:
        def split(x: torch.Tensor) -> torch.Tensor:  # [S, D] -> [H, S, dh]
            return x.view(x.size(0), att.heads, att.dh).transpose(0, 1)

        return split

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        x = embeddings
        for layer in self.layer:
            att = layer.attention
            q, k, v = att.split(att.query(x)), att.split(att.key(x)), att.split(att.value(x))
            probs = F.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(att.dh), dim=-1)
            ctx = torch.matmul(probs, v).transpose(0, 1).reshape(x.size(0), -1)
            h = layer.attn_ln(layer.attn_out(ctx) + x)
            x = layer.out_ln(layer.output(hf_erf_gelu(layer.intermediate(h))) + h)
        return x


# --------------------------------------------------------------------------------------
# Seeded weights (numpy generator; torch's RNG is not used) and outlier channels
# --------------------------------------------------------------------------------------

QK_NAMES = ("query", "key", "q_lin", "k_lin")


def init_weights(model: nn.Module, seed: int) -> None:
    """Deterministic weights: linear ~ N(0, 1/fan_in) (Q/K ~ N(0, (2.2)^2/fan_in) so that
    attention is far from uniform), embeddings N(0, 1), LayerNorm gamma 1 + N(0, 0.1^2),
    beta N(0, 0.05^2), biases N(0, 0.02^2)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            leaf = name.rsplit(".", 1)
            owner, kind = (leaf[0], leaf[1]) if len(leaf) == 2 else ("", leaf[0])
            mod = model.get_submodule(owner) if owner else model
            shape = tuple(p.shape)
            if isinstance(mod, nn.LayerNorm):
                v = (
                    1.0 + 0.1 * rng.standard_normal(shape)
                    if kind == "weight"
                    else 0.05 * rng.standard_normal(shape)
                )
            elif isinstance(mod, nn.Embedding) or kind in ("cls_token", "position_embeddings"):
                v = (
                    0.5 if isinstance(mod, nn.Embedding) and owner.endswith("wte") else 1.0
                ) * rng.standard_normal(shape)
            elif kind == "bias":
                v = 0.02 * rng.standard_normal(shape)
            else:
                fan_in = shape[0] if isinstance(mod, Conv1D) else int(np.prod(shape[1:]))
                std = 1.0 / math.sqrt(fan_in)
                if owner.rsplit(".", 1)[-1] in QK_NAMES:
                    std *= 2.2
                if isinstance(mod, Conv1D) and owner.endswith("c_attn"):
                    std_vec = np.full(shape[1], std)
                    std_vec[: 2 * (shape[1] // 3)] *= 2.2  # q and k columns
                    v = rng.standard_normal(shape) * std_vec
                else:
                    v = std * rng.standard_normal(shape)
            p.copy_(torch.from_numpy(np.asarray(v, dtype=np.float32)))
        if isinstance(model, (Bert, DistilBert)):
            model.word_embeddings.weight[0] = 0.0  # padding_idx row


OUTLIER_QK_SCALE = 0.03


def _quiet_qk(lin: nn.Module, channels: list[int]) -> None:
    """Shrink the Q/K weights reading the outlier channels (as in trained models, whose
    attention does not key on the huge channels; without this every row is one-hot)."""
    if isinstance(lin, nn.Linear):
        lin.weight[:, channels] *= OUTLIER_QK_SCALE
    elif isinstance(lin, Conv1D):  # c_attn: weight [in, 3*out], q and k columns first
        d = lin.nf // 3
        lin.weight[channels, : 2 * d] *= OUTLIER_QK_SCALE


def inject_outliers(model: nn.Module, style: str) -> str:
    """Real pretrained BERT/GPT-2/ViT have 1-2 hidden channels with LayerNorm gamma/beta
    in the tens and residual-stream values in the hundreds. Returns a note for the
    manifest."""
    with torch.no_grad():
        if style in ("bert", "bert_sdpa", "encoder_nobatch") or style in NORM_STYLES:
            for m in model.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight[5], m.bias[5] = 22.0, -31.0
                    m.weight[17], m.bias[17] = 9.0, 14.0
                if isinstance(m, BertSelfAttention):
                    _quiet_qk(m.query, [5, 17])
                    _quiet_qk(m.key, [5, 17])
            return (
                "all LayerNorms: channel 5 gamma 22 beta -31, channel 17 gamma 9 beta 14 "
                f"(Q/K weights on channels 5, 17 x{OUTLIER_QK_SCALE})"
            )
        if style in ("gpt2", "gpt2c"):
            for m in model.modules():
                if isinstance(m, GPT2Block):
                    m.c_proj.bias[3] = 60.0  # residual channel 3 grows to ~120
                    m.ln_1.weight[3] = m.ln_2.weight[3] = 0.05
                    m.ln_1.weight[11], m.ln_1.bias[11] = 18.0, -12.0
                    _quiet_qk(m.attn.c_attn, [11])
            assert isinstance(model, GPT2)
            model.ln_f.weight[3] = 0.02
            return (
                "MLP c_proj bias channel 3 = 60 per block (residual channel 3 in the hundreds); "
                f"ln_1 channel 11 gamma 18 beta -12 (Q/K weights on it x{OUTLIER_QK_SCALE})"
            )
        if style == "vit":
            for m in model.modules():
                if isinstance(m, ViTLayer):
                    m.layernorm_before.weight[9], m.layernorm_before.bias[9] = 15.0, 10.0
                    m.output.bias[2] = 35.0
                    _quiet_qk(m.attention.query, [9])
                    _quiet_qk(m.attention.key, [9])
            return (
                "layernorm_before channel 9 gamma 15 beta 10 (Q/K weights on it "
                f"x{OUTLIER_QK_SCALE}); FFN output bias channel 2 = 35 (residual stream)"
            )
    return "none (plain random weights)"


# --------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------


def text_batch(seed: int, *, cls: bool, token_types: bool) -> dict[str, np.ndarray]:
    """Right-padded batch: true lengths differ per row (one full row), ids 0 on padding."""
    rng = np.random.default_rng(seed)
    lengths = [SEQ, 9, 5, 7]
    ids = np.zeros((BATCH, SEQ), np.int64)
    mask = np.zeros((BATCH, SEQ), np.int64)
    tt = np.zeros((BATCH, SEQ), np.int64)
    for r, n in enumerate(lengths):
        row = rng.integers(4, VOCAB, n)
        if cls:  # [CLS] ... [SEP] (ids 1 and 2), sentence pairs on rows 0 and 3
            row[0], row[-1] = 1, 2
            if r in (0, 3):
                cut = n // 2
                row[cut - 1] = 2
                tt[r, cut:n] = 1
        ids[r, :n] = row
        mask[r, :n] = 1
    feeds = {"input_ids": ids, "attention_mask": mask}
    if token_types:
        feeds["token_type_ids"] = tt
    return feeds


@dataclass
class Style:
    name: str
    build: Callable[[], nn.Module]
    seed: int
    inputs: Callable[[], dict[str, np.ndarray]]
    output: str
    output_kind: str
    mask: str
    dynamic: dict[str, dict[int, str]]
    expected_sites: dict[str, int]
    batch_axis: bool = True
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


SITES_5LN = {"softmax": 2, "gelu": 2, "layernorm": 5}
BS = {0: "batch", 1: "sequence"}

STYLES = [
    Style(
        "bert",
        Bert,
        101,
        lambda: text_batch(11, cls=True, token_types=True),
        "last_hidden_state",
        "embedding",
        "additive",
        {"input_ids": BS, "attention_mask": BS, "token_type_ids": BS, "last_hidden_state": BS},
        SITES_5LN,
        notes="2 post-LN layers, width 32, 4 heads, FFN 64, eps 1e-12; HF erf GELU; "
        "embedding LN + 2 per layer",
    ),
    Style(
        "bert_sdpa",
        lambda: Bert(sdpa=True),
        101,
        lambda: text_batch(11, cls=True, token_types=True),
        "last_hidden_state",
        "embedding",
        "additive",
        {"input_ids": BS, "attention_mask": BS, "token_type_ids": BS, "last_hidden_state": BS},
        SITES_5LN,
        notes="as bert (same weights) but attention through F.scaled_dot_product_attention "
        "(transformers' default sdpa attention) and the sdpa-path mask of transformers 4.x "
        "(_prepare_4d_attention_mask_for_sdpa): mask[:, None, None, :].expand(B, 1, S, S), "
        "inverted = 1 - m, inverted.masked_fill(inverted.bool(), finfo.min), as attn_mask. "
        "(With the [B, 1, 1, S] mask the opset-23 Attention node fails in onnxruntime "
        "1.31/1.32 CPU: 'inconsistent q_sequence_length (between attn_mask and Q)'.)",
    ),
    Style(
        "distilbert",
        DistilBert,
        202,
        lambda: text_batch(22, cls=True, token_types=False),
        "last_hidden_state",
        "embedding",
        "where",
        {"input_ids": BS, "attention_mask": BS, "last_hidden_state": BS},
        SITES_5LN,
        notes="2 post-LN layers, width 32, 4 heads; q/sqrt(dh) before QK^T; masked_fill; "
        "nn.GELU(); positions from torch.arange",
    ),
    Style(
        "vit",
        ViT,
        303,
        lambda: {
            "pixel_values": np.random.default_rng(33)
            .standard_normal((BATCH, 3, 16, 16))
            .astype(np.float32)
        },
        "logits",
        "classifier",
        "none",
        {"pixel_values": {0: "batch"}, "logits": {0: "batch"}},
        SITES_5LN,
        notes="16x16 image, 4x4 patches (16 + CLS tokens), width 32, 2 heads, 2 pre-LN layers, "
        "final LN, 10 classes; nn.GELU()",
    ),
    Style(
        "gpt2",
        GPT2,
        404,
        lambda: text_batch(44, cls=False, token_types=False),
        "logits",
        "lm_logits",
        "causal+additive",
        {"input_ids": BS, "attention_mask": BS, "logits": BS},
        SITES_5LN,
        notes="2 pre-LN blocks, width 32, 4 heads, Conv1D/addmm, tied LM head (vocab 128), "
        "tanh GELU with torch.pow; causal bool buffer [1,1,32,32] sliced + torch.where",
    ),
    Style(
        "gpt2c",
        lambda: GPT2(computed_causal=True),
        404,
        lambda: text_batch(44, cls=False, token_types=False),
        "logits",
        "lm_logits",
        "causal-computed+additive",
        {"input_ids": BS, "attention_mask": BS, "logits": BS},
        SITES_5LN,
        notes="as gpt2 (same weights) but causal = triu(ones(S, S), 1).bool() + masked_fill",
    ),
    Style(
        "encoder_nobatch",
        EncoderNoBatch,
        505,
        lambda: {
            "embeddings": np.random.default_rng(55).standard_normal((SEQ, 32)).astype(np.float32)
        },
        "hidden_states",
        "embedding",
        "none",
        {"embeddings": {0: "sequence"}, "hidden_states": {0: "sequence"}},
        {"softmax": 2, "gelu": 2, "layernorm": 4},
        batch_axis=False,
        notes="input [S, D=32] float without a batch axis; 2 BERT post-LN blocks, 4 heads; "
        "scores [H, S, S]",
    ),
]


def _norm_style(norm: str, kinds: dict[str, int], params: dict[str, Any], notes: str) -> Style:
    softmax_op = {"softmax1", "clipped_softmax"}.intersection(kinds)  # the softmax operator
    # sigmoid / ReLU attention: their own operators (site kind = operator name)
    sites = SITES_5LN if softmax_op else {"gelu": 2, "layernorm": 5, **kinds}
    return Style(
        f"bert_{norm}",
        lambda: Bert(norm=norm),
        101,
        lambda: text_batch(11, cls=True, token_types=True),
        "last_hidden_state",
        "embedding",
        "additive",
        {"input_ids": BS, "attention_mask": BS, "token_type_ids": BS, "last_hidden_state": BS},
        sites,
        notes="as bert (same weights, outliers, additive mask) but the attention normaliser "
        f"is {notes}",
        extra={"normaliser": norm, "expected_kinds": kinds, "expected_params": params},
    )


NORM_STYLES = {
    s.name: s
    for s in [
        _norm_style(
            "softmax1",
            {"softmax1": 2},
            {"off_by_one": True},
            "Softmax_1 written out: m = amax(x, -1); e = exp(x - m); e / (exp(-m) + e.sum(-1))",
        ),
        _norm_style(
            "softmax1cat",
            {"softmax1": 2},
            {"off_by_one": True},
            "Softmax_1 as F.softmax(cat([zeros_like(x[..., :1]), x], -1), -1)[..., 1:]",
        ),
        _norm_style(
            "clipped",
            {"clipped_softmax": 2},
            {"clip_gamma": CLIP_GAMMA, "clip_zeta": CLIP_ZETA},
            f"clipped softmax clip((zeta - gamma) * softmax(x) + gamma, 0, 1), gamma {CLIP_GAMMA}, "
            f"zeta {CLIP_ZETA}",
        ),
        _norm_style(
            "sigmoid",
            {"sigmoid_attention": 2},
            {"bias": -math.log(NORM_N), "n": NORM_N},
            f"sigmoid attention sigmoid(x + b), b = -log({NORM_N})",
        ),
        _norm_style(
            "relu",
            {"relu_attention": 2},
            {"n": None, "n_form": "div"},
            "ReLU attention relu(x) / x.size(-1) (n read from the shape at run time)",
        ),
        _norm_style(
            "relumul",
            {"relu_attention": 2},
            {"n": NORM_N},
            f"ReLU attention relu(x) * (1 / {NORM_N})",
        ),
    ]
}
STYLES += list(NORM_STYLES.values())

# (exporter, opset) per style; the no-batch model only at TorchScript opset 17
EXPORTS = [("ts", 14), ("ts", 17), ("dynamo", 18)]
EXPORTS_BY_STYLE = {
    "encoder_nobatch": [("ts", 17)],
    # opset 20 has the Gelu op: both exporters write nn.GELU() as Gelu there
    "distilbert": [*EXPORTS, ("ts", 20), ("dynamo", 20)],
    # opset 23 has the Attention op: the dynamo exporter writes sdpa as one Attention node
    "bert_sdpa": [("ts", 14), ("dynamo", 18), ("dynamo", 23)],
    **{name: [("ts", 17), ("dynamo", 18)] for name in NORM_STYLES},
}
IR14_SOURCE = "bert_ts17"


# --------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------


def export(
    model: nn.Module, style: Style, feeds: dict[str, np.ndarray], exporter: str, opset: int
) -> bytes:
    """The exporter's model, unchanged except: graph name set, doc strings cleared and
    (dynamo) the ``pkg.torch.onnx.stack_trace`` node metadata dropped (it holds this
    script's path and line numbers; the other node metadata stays)."""
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    names = list(feeds)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(tmp) / "m.onnx"
        if exporter == "ts":
            torch.onnx.export(
                model,
                args,
                str(path),
                dynamo=False,
                opset_version=opset,
                input_names=names,
                output_names=[style.output],
                dynamic_axes=style.dynamic,
                do_constant_folding=True,
            )
        else:
            dims: dict[str, torch.export.Dim] = {}

            def dim(label: str) -> torch.export.Dim:
                if label not in dims:
                    lo, hi = (1, 64) if label == "batch" else (2, MAX_POS)
                    dims[label] = torch.export.Dim(label, min=lo, max=hi)
                return dims[label]

            dynamic_shapes = {
                n: {a: dim(lbl) for a, lbl in style.dynamic[n].items()} for n in names
            }
            prog = torch.onnx.export(
                model,
                args,
                dynamo=True,
                opset_version=opset,
                input_names=names,
                output_names=[style.output],
                dynamic_shapes=dynamic_shapes,
                external_data=False,
                optimize=True,
                verbose=False,
            )
            assert prog is not None
            prog.save(str(path), external_data=False)
        m = onnx.load(str(path))
    m.graph.name = f"hwapprox_corpus_{style.name}"
    m.doc_string = ""
    for n in m.graph.node:
        keep = [p for p in n.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
        del n.metadata_props[:]
        n.metadata_props.extend(keep)
        n.doc_string = ""
    onnx.checker.check_model(m)
    return m.SerializeToString()


def alt_feeds(style: Style, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A second, smaller shape (first 2 rows, 3 fewer tokens) to check the dynamic axes."""
    if not style.batch_axis:
        return {k: v[: SEQ - 3] for k, v in feeds.items()}
    if "pixel_values" in feeds:
        return {k: v[:2] for k, v in feeds.items()}
    return {k: np.ascontiguousarray(v[:2, : SEQ - 3]) for k, v in feeds.items()}


def savez(feeds: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **feeds)
    return buf.getvalue()


ORT_CHECK = r"""
import json, sys
import numpy as np
import onnxruntime as ort
out = {}
for model, pairs in json.loads(sys.argv[1]):
    res = {"ort": ort.__version__, "max_abs": [], "finite": True}
    try:
        s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        for inputs, expected in pairs:
            with np.load(inputs) as z:
                feeds = {i.name: z[i.name] for i in s.get_inputs()}
            got = s.run(None, feeds)
            with np.load(expected) as z:
                ref = [z[o.name] for o in s.get_outputs()]
            res["max_abs"].append(
                max(float(np.max(np.abs(g.astype(np.float64) - r))) for g, r in zip(got, ref))
            )
            res["finite"] = res["finite"] and all(bool(np.isfinite(g).all()) for g in got)
    except Exception as e:
        msg = str(e).replace(model, model.rsplit("/", 1)[-1])
        res["error"] = f"{type(e).__name__}: {msg[:300]}"
    out[model] = res
print(json.dumps(out))
"""


def ort_check(python: Path, jobs: list[tuple[str, list[tuple[str, str]]]]) -> dict[str, Any]:
    """Run ``jobs`` ([model, [(inputs.npz, expected.npz), ...]]) in ``python``'s onnxruntime."""
    res = subprocess.run(
        [str(python), "-c", ORT_CHECK, json.dumps(jobs)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------
# Graph facts for the manifest: how the exporter wrote the mask, op counts
# --------------------------------------------------------------------------------------

SHAPE_OPS = ("Shape", "Size")
EXPR_DEPTH = 10


class _Graph:
    def __init__(self, m: onnx.ModelProto) -> None:
        self.m = m
        self.nodes = list(m.graph.node)
        self.producer = {o: n for n in self.nodes for o in n.output}
        self.inputs = {i.name for i in m.graph.input}
        self.consts: dict[str, np.ndarray] = {
            i.name: onnx.numpy_helper.to_array(i) for i in m.graph.initializer
        }
        for n in self.nodes:
            if n.op_type == "Constant":
                v = onnx.helper.get_attribute_value(n.attribute[0])
                self.consts[n.output[0]] = (
                    onnx.numpy_helper.to_array(v)
                    if isinstance(v, onnx.TensorProto)
                    else np.asarray(v)
                )

    def const(self, name: str) -> str | None:
        a = self.consts.get(name)
        if a is None:
            return None
        if a.size <= 4:
            return np.array2string(a.reshape(-1), precision=7, separator=",").replace(" ", "")
        return f"{a.dtype}{list(a.shape)}"

    @staticmethod
    def attrs(n: onnx.NodeProto) -> str:
        keep = ("to", "axes", "upper", "perm", "axis", "scale", "q_num_heads", "kv_num_heads")
        vals = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute if a.name in keep}
        return "".join(f" {k}={v}" for k, v in vals.items())

    def expr(self, name: str, depth: int) -> str:
        """``name`` as a nested expression of its producers, ``depth`` producers deep:
        constants shown (small ones by value), ``shape(x)`` for Shape/Size of ``x``
        (``x`` a graph input or the producing op), ``…`` beyond the depth."""
        c = self.const(name)
        if c is not None:
            return c
        if name in self.inputs:
            return name
        n = self.producer.get(name)
        if n is None:
            return name
        if n.op_type in SHAPE_OPS:
            lo, hi = (self.attr(n, "start"), self.attr(n, "end"))
            sl = "" if lo is None and hi is None else f"[{lo or ''}:{'' if hi is None else hi}]"
            return f"shape({self.short(n.input[0])}){sl}"
        if depth == 0:
            return f"{n.op_type}(…)"
        args = ", ".join(self.expr(i, depth - 1) for i in n.input if i)
        return f"{n.op_type}({args}){self.attrs(n)}"

    @staticmethod
    def attr(n: onnx.NodeProto, name: str) -> Any:
        a = next((a for a in n.attribute if a.name == name), None)
        return None if a is None else onnx.helper.get_attribute_value(a)

    def short(self, name: str) -> str:
        if name in self.inputs:
            return name
        n = self.producer.get(name)
        return n.op_type if n is not None else name

    def has_qk(self, name: str) -> bool:
        """``name`` depends by value on a MatMul of two non-constant tensors."""
        by_name = {n.name: n for n in self.nodes}
        return any(
            by_name[k].op_type == "MatMul" and all(i not in self.consts for i in by_name[k].input)
            for k in self.data_cone(name)
        )

    def data_cone(self, name: str) -> set[str]:
        """Nodes ``name`` depends on by value (not through Shape/Size)."""
        out: set[str] = set()
        stack = [name]
        while stack:
            t = stack.pop()
            n = self.producer.get(t)
            if n is None or n.name in out or n.op_type in SHAPE_OPS:
                continue
            out.add(n.name)
            stack.extend(i for i in n.input if i)
        return out


def mask_chain(m: onnx.ModelProto, source: str = "attention_mask") -> list[str]:
    """Nodes on a data path (not through Shape/Size) from ``source`` to the first
    Softmax's (or Attention's) input, in graph order, as ``Op(args)``: ``·`` is the
    previous value on the path, constants are shown, other values are ``~``."""
    g = _Graph(m)
    sink = next((n for n in g.nodes if n.op_type in ("Softmax", "Attention")), None)
    if sink is None or source not in g.inputs:
        return []
    fwd = {source}
    for n in g.nodes:
        if n.op_type not in SHAPE_OPS and any(i in fwd for i in n.input):
            fwd.update(n.output)
    targets = set(sink.input) - {""}
    bwd = set(targets)
    for n in reversed(g.nodes):
        if any(o in bwd for o in n.output):
            bwd.update(i for i in n.input if i)
    chain = []
    for n in g.nodes:
        if any(o in fwd and o in bwd for o in n.output):
            args = []
            for i in n.input:
                if i == source:
                    args.append(i)
                elif i in fwd:
                    args.append("·")
                else:
                    args.append(g.const(i) or "~")
            chain.append(f"{n.op_type}({', '.join(args)}){g.attrs(n)}")
    chain.append(sink.op_type)
    return chain


def softmax_input_chain(m: onnx.ModelProto) -> list[str]:
    """From the Q·K^T MatMul to the first Softmax: the main-path nodes in order, each
    with its other operands written out as expressions (masks, scales, causal
    buffers). With an ``Attention`` node (opset 23) the node itself and its inputs."""
    g = _Graph(m)
    sink = next((n for n in g.nodes if n.op_type in ("Softmax", "Attention")), None)
    if sink is None:
        return []
    if sink.op_type == "Attention":
        args = ", ".join(
            g.expr(i, EXPR_DEPTH) if idx > 2 else f"{'qkv'[idx]}={g.expr(i, 1)}"
            for idx, i in enumerate(sink.input)
        )
        return [f"Attention({args}){g.attrs(sink)}"]
    steps: list[str] = [f"Softmax{g.attrs(sink)}"]
    cur = sink.input[0]
    for _ in range(30):
        n = g.producer.get(cur)
        if n is None:
            break
        dyn = [i for i in n.input if i and i not in g.consts]
        if n.op_type == "MatMul" and len(dyn) == 2:
            steps.append(f"MatMul({', '.join(g.expr(i, 2) for i in n.input)})")
            break
        # the score path: the operand whose value depends on a MatMul of two
        # non-constant tensors (Q·K^T); index/mask side paths can be larger
        scored = [i for i in dyn if g.has_qk(i)] or dyn
        main = max(scored, key=lambda i: len(g.data_cone(i)))
        args = ["·" if i == main else g.expr(i, EXPR_DEPTH) for i in n.input if i]
        steps.append(f"{n.op_type}({', '.join(args)}){g.attrs(n)}")
        cur = main
    return steps[::-1]


def op_counts(m: onnx.ModelProto) -> dict[str, int]:
    c: dict[str, int] = {}
    for n in m.graph.node:
        c[n.op_type] = c.get(n.op_type, 0) + 1
    return dict(sorted(c.items()))


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


def build_all(out: Path, force: bool, ort_python: Path) -> int:
    torch.set_num_threads(2)
    files: dict[str, bytes] = {}
    scratch: dict[str, bytes] = {}  # alt-shape inputs and outputs, checked but not written
    entries: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    scale: dict[str, float] = {}
    for style in STYLES:
        model = style.build()
        init_weights(model, style.seed)
        outliers = inject_outliers(model, style.name)
        model.eval()
        feeds = style.inputs()
        feeds2 = alt_feeds(style, feeds)
        with torch.no_grad():
            y = model(*(torch.from_numpy(v) for v in feeds.values())).numpy()
            y2 = model(*(torch.from_numpy(v) for v in feeds2.values())).numpy()
        assert np.isfinite(y).all(), style.name
        for exporter, opset in EXPORTS_BY_STYLE.get(style.name, EXPORTS):
            stem = f"{style.name}_{exporter}{opset}"
            t0 = time.perf_counter()
            try:
                blob = export(model, style, feeds, exporter, opset)
            except Exception as exc:
                first = (str(exc).strip().splitlines() or [""])[0][:400]
                reason = f"{type(exc).__name__}: {first}"
                failures.append(
                    {"style": style.name, "exporter": exporter, "opset": opset, "failed": reason}
                )
                print(f"{stem}: EXPORT FAILED {reason}")
                continue
            print(f"exported {stem} in {time.perf_counter() - t0:.1f} s", flush=True)
            m = onnx.load_from_string(blob)
            ins = [i.name for i in m.graph.input]
            outs = [o.name for o in m.graph.output]
            files[f"{stem}.onnx"] = blob
            files[f"{stem}.npz"] = savez({k: feeds[k] for k in ins})
            files[f"{stem}_torch_out.npz"] = savez({outs[0]: y})
            scratch[f"{stem}.alt.npz"] = savez({k: feeds2[k] for k in ins})
            scratch[f"{stem}.alt_out.npz"] = savez({outs[0]: y2})
            scale[f"{stem}.onnx"] = float(np.max(np.abs(y)))
            entries.append(
                {
                    "file": f"{stem}.onnx",
                    "inputs": f"{stem}.npz",
                    "torch_outputs": f"{stem}_torch_out.npz",
                    "style": style.name,
                    "exporter": "torchscript" if exporter == "ts" else "dynamo",
                    "opset": next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
                    "ir_version": m.ir_version,
                    "mask": style.mask,
                    "output_kind": style.output_kind,
                    "batch_axis": style.batch_axis,
                    "ir_too_new": False,
                    "graph_inputs": ins,
                    "graph_outputs": outs,
                    "input_shapes": {k: list(feeds[k].shape) for k in ins},
                    "output_max_abs": float(f"{scale[f'{stem}.onnx']:.4g}"),
                    "expected_sites": style.expected_sites,
                    "outliers": outliers,
                    "mask_chain": mask_chain(m),
                    "softmax_input_chain": softmax_input_chain(m),
                    "op_counts": op_counts(m),
                    "notes": style.notes,
                    **style.extra,
                }
            )
    # the one deliberately too-new IR version
    src = next(e for e in entries if e["file"] == f"{IR14_SOURCE}.onnx")
    m14 = onnx.load_from_string(files[src["file"]])
    m14.ir_version = 14
    stem14 = f"{IR14_SOURCE}_ir14"
    files[f"{stem14}.onnx"] = m14.SerializeToString()
    files[f"{stem14}.npz"] = files[src["inputs"]]
    files[f"{stem14}_torch_out.npz"] = files[src["torch_outputs"]]
    for k in ("alt", "alt_out"):
        scratch[f"{stem14}.{k}.npz"] = scratch[f"{IR14_SOURCE}.{k}.npz"]
    scale[f"{stem14}.onnx"] = scale[src["file"]]
    e14 = copy.deepcopy(src)
    e14.update(
        file=f"{stem14}.onnx",
        inputs=f"{stem14}.npz",
        torch_outputs=f"{stem14}_torch_out.npz",
        ir_version=14,
        ir_too_new=True,
        notes=f"{IR14_SOURCE}.onnx with ir_version set to 14 (onnxruntime 1.31 reads IR <= 13)",
    )
    entries.append(e14)

    out.mkdir(parents=True, exist_ok=True)
    clash = sorted(n for n in files if (out / n).exists() and (out / n).read_bytes() != files[n])
    if clash and not force:
        print(
            f"refusing to overwrite {len(clash)} existing file(s) in {out} whose bytes would "
            f"change (e.g. {clash[0]}); use --force"
        )
        return 2
    # check the final bytes in onnxruntime (in ort_python's environment)
    with tempfile.TemporaryDirectory() as tmp:
        for n, b in [*files.items(), *scratch.items()]:
            (Path(tmp) / n).write_bytes(b)
        jobs = []
        for e in entries:
            stem = e["file"][: -len(".onnx")]
            pairs = [
                (str(Path(tmp) / e["inputs"]), str(Path(tmp) / e["torch_outputs"])),
                (str(Path(tmp) / f"{stem}.alt.npz"), str(Path(tmp) / f"{stem}.alt_out.npz")),
            ]
            jobs.append((str(Path(tmp) / e["file"]), pairs))
        checks = ort_check(ort_python, jobs)
    ort_version = next(iter(checks.values()))["ort"]
    bad = []
    print(
        f"{'file':30} {'ir':>3} {'KiB':>6}  torch vs onnxruntime {ort_version} "
        "(committed inputs; 2nd shape)"
    )
    for e, (mp, _) in zip(entries, jobs, strict=True):
        c = checks[mp]
        if "error" in c:
            e["ort_error"] = c["error"].splitlines()[0][:200]
            diff = "refused: " + e["ort_error"][:60]
            if not e["ir_too_new"]:
                bad.append(e["file"])
                diff = "ERROR " + e["ort_error"]
        else:
            d, d2 = c["max_abs"]
            e["torch_vs_ort_max_abs"] = float(f"{d:.3g}")
            e["torch_vs_ort_max_abs_other_shape"] = float(f"{d2:.3g}")
            diff = f"{d:.3g}; {d2:.3g}" + ("" if c["finite"] else " NOT FINITE")
            tol = 1e-5 * max(1.0, scale[e["file"]])
            if e["ir_too_new"] or not c["finite"] or max(d, d2) > tol:
                bad.append(e["file"])
        e["size_bytes"] = len(files[e["file"]])
        print(f"{e['file']:30} {e['ir_version']:>3} {e['size_bytes'] / 1024:6.1f}  {diff}")
    for f in failures:
        print(f"FAILED {f['style']} {f['exporter']} opset {f['opset']}: {f['failed']}")
    manifest = {
        "generator": "scripts/make_corpus.py",
        "torch": torch.__version__,
        "onnx": onnx.__version__,
        "ort_check": ort_version,
        "models": entries,
        "failures": failures,
    }
    files["manifest.json"] = (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode()
    old_manifest = out / "manifest.json"
    if old_manifest.exists() and not force:
        old_entries = {e["file"]: e for e in json.loads(old_manifest.read_text())["models"]}
        changed = [e["file"] for e in entries if old_entries.get(e["file"], e) != e]
        if changed:
            print(f"refusing to rewrite manifest entries {changed[:3]}...; use --force")
            return 2
    unchanged = 0
    for n, b in sorted(files.items()):
        if (out / n).exists() and (out / n).read_bytes() == b:
            unchanged += 1
            continue
        (out / n).write_bytes(b)
    total = sum(len(b) for b in files.values())
    digest = hashlib.sha256(b"".join(files[n] for n in sorted(files))).hexdigest()[:16]
    print(
        f"{len(files)} files, {total / 1024:.0f} KiB, in {out} (sha256 {digest}): "
        f"{len(files) - unchanged} written, {unchanged} already there with the same bytes"
    )
    if bad:
        print(f"CHECK FAILED: {bad}")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "corpus")
    ap.add_argument("--force", action="store_true", help="overwrite existing files")
    ap.add_argument(
        "--ort-python",
        type=Path,
        default=DEFAULT_ORT_PYTHON,
        help="python whose onnxruntime checks the models (default: the project venv)",
    )
    a = ap.parse_args(argv)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    return build_all(a.out, a.force, a.ort_python)


if __name__ == "__main__":
    sys.exit(main())
