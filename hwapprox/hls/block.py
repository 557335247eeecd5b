"""The HLS side of an encoder block: the config structs of ``hwapprox::encoder_block``.

The block itself -- weights, specs, formats and its bit-exact Python model -- is
:class:`hwapprox.approx.block.EncoderBlock`; :func:`block_instances` writes the
config (types, sizes, one ``*_cfg`` alias per sub-unit) that
``include/hwapprox/encoder.h`` reads.
"""

from __future__ import annotations

import numpy as np

from hwapprox.approx.block import FFN_ACTIVATIONS, WEIGHT_NAMES, EncoderBlock
from hwapprox.hls.emit import Instance, add_instance, matmul_instance
from hwapprox.hls.units import unit_instance

__all__ = ["WEIGHT_TYPES", "block_instances"]

#: the linear stages' config names (``{name}_{stage}`` instances, ``{stage}_cfg`` aliases)
_LINEAR_STAGES = ("qkv", "qk", "pv", "o", "add1", "ffn1", "ffn2", "add2", "sbias", "up", "gate")
#: the C++ type name (in the block config) of each weight tensor's codes
WEIGHT_TYPES = {
    n: "weight_t" if n[0] == "w" else {"g1": "gamma1_t", "g2": "gamma2_t", "be1": "beta1_t",
                                       "be2": "beta2_t", "sb": "score_bias_t", "rc": "rope_t",
                                       "rs": "rope_t"}.get(n, "bias_t")
    for n in WEIGHT_NAMES
}  # fmt: skip


def block_instances(block: EncoderBlock, name: str) -> list[Instance]:
    """Config structs of ``block`` for ``hwapprox::encoder_block``: sub-units first, then
    ``name``.

    The block struct carries ``in_t``/``out_t`` (:attr:`EncoderBlock.out_fmt`), the
    weight types (:data:`WEIGHT_TYPES`), the sizes, ``prenorm``/``causal``/
    ``masked`` (0/1) and one ``*_cfg`` alias per sub-unit. The weights
    themselves are function arguments (:data:`WEIGHT_NAMES` order): hls4ml
    weight variables in a project, read from the input in the test harness.
    """
    st = block.stages()
    s, d, f, dh = block.seq, block.dim, block.ffn, block.head_dim
    subs = [
        matmul_instance(f"{name}_qkv", st["qkv"], s, d, d),
        matmul_instance(f"{name}_qk", st["qk"], s, dh, s),
        matmul_instance(f"{name}_pv", st["pv"], s, s, dh),
        matmul_instance(f"{name}_o", st["o"], s, d, d),
        add_instance(f"{name}_add1", st["add1"], s * d),
        matmul_instance(f"{name}_ffn1", st["ffn1"], s, d, f),
        matmul_instance(f"{name}_ffn2", st["ffn2"], s, f, d),
        add_instance(f"{name}_add2", st["add2"], s * d),
        add_instance(f"{name}_sbias", st["sbias"], s * s),
        matmul_instance(f"{name}_up", st["up"], s, d, f),
        add_instance(f"{name}_gate", st["gate"], s * f),
        unit_instance(f"{name}_softmax", block.softmax, s),
        *([unit_instance(f"{name}_gelu", block.gelu, s * f)] if block.gelu is not None else []),
        unit_instance(f"{name}_ln1", block.ln1, d),
        unit_instance(f"{name}_ln2", block.ln2, d),
        Instance(  # the fused schedule's row state (unused by two_pass)
            f"{name}_attn",
            types={"acc_t": block.formats.attn_acc_fmt, "score_t": block.softmax.in_fmt},
            consts={"dim_v": dh, "n_keys": s},
            aliases={"softmax_cfg": f"{name}_softmax"},
        ),
    ]
    aliases = {f"{part}_cfg": f"{name}_{part}" for part in _LINEAR_STAGES}
    aliases |= {
        f"{part}_cfg": f"{name}_{part}" for part in ("softmax", "gelu", "ln1", "ln2", "attn")
        if part != "gelu" or block.gelu is not None
    }  # fmt: skip
    consts = {
        "seq": s, "dim": d, "heads": block.heads, "head_dim": dh, "ffn": f,
        "prenorm": int(block.prenorm), "causal": int(block.causal), "masked": int(block.masked),
        "fused": int(block.attention == "fused"), "score_bias": int(block.score_bias),
        "score_bias_n": block.score_bias_n, "window": block.window,
        "ffn_act": FFN_ACTIVATIONS.index(block.ffn_act), "rope": int(block.rope),
        **{f"{k}_n": int(np.asarray(block.weights[n]).size)
           for k, n in (("up", "wu"), ("up_bias", "bu"), ("rope", "rc"))},
    }  # fmt: skip
    wf = block.weight_formats()
    block = Instance(
        name,
        types={
            "in_t": block.formats.in_fmt,
            "out_t": block.out_fmt,
            **{WEIGHT_TYPES[n]: wf[n] for n in ("wq", "bq", "g1", "be1", "g2", "be2", "sb", "rc")},
        },
        consts=consts,
        aliases=aliases,
        comment=(
            f"encoder block ({block.kind}) S={s} D={d} H={block.heads} F={f}; softmax "
            f"{block.softmax.method}, "
            + (f"gelu {block.gelu.method}" if block.gelu is not None else block.ffn_act)
            + ", layernorm "
            f"{block.ln1.method}/{block.ln2.method}; {block.formats.to_dict()}"
        ),
    )
    return [*subs, block]
