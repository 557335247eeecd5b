"""A transformer encoder block (post-LN or pre-LN, optional masks) as one fixed-point unit.

:class:`EncoderBlock` holds the quantised weights, the nonlinear specs
(softmax, GELU, two LayerNorms), the formats of every linear stage
(:class:`BlockFormats`) and the block's kind: ``prenorm`` (post-LN when
False), ``causal`` and ``masked`` (a key-padding mask input).
:meth:`EncoderBlock.model` composes :mod:`hwapprox.approx.linear` and the
specs' models on raw codes -- the one truth of a block that the HLS function
``hwapprox::encoder_block`` (``include/hwapprox/encoder.h``, configured by
:func:`hwapprox.hls.block.block_instances`) and the RTL ``hwa_encoder_block``
(:mod:`hwapprox.rtl_sim.block`) both match bit for bit.

Attention (both kinds; ``A`` is the attention input, every arrow one explicit
cast)::

    Q,K,V = A·W{q,k,v} + b{q,k,v}            -> qkv_fmt     (accum_fmt)
    per head h: A_h = Q_h·K_hᵀ               -> softmax.in_fmt (accum_fmt)
                P_h = softmax(A_h; M) rows    -> softmax.out_fmt
                C_h = P_h·V_h                 -> ctx_fmt     (accum_fmt)
    O   = C·Wo + bo                           -> attn_fmt

With ``score_bias`` (BEiT's relative position bias, any constant per-head
``[H, S, S]`` table ``B``), the scores get it before the softmax, in the
softmax's input format::

    A_h = A_h + B_h                           -> softmax.in_fmt

``M`` (True = masked out, the softmax specs' mask contract) is
``(causal and j > i) or (window and i - j >= window) or (masked and not
key_mask[j])`` for query ``i`` and key ``j``, the same for every head; with
none, the unmasked softmax. ``window`` (a causal local window, GPT-Neo's local
layers, sliding-window attention) keeps the ``window`` newest keys up to ``i``.

Post-LN (``prenorm=False``; ``X`` raw ``in_fmt`` codes ``[S, D]``, ``A = X``)::

    R1  = X + O                               -> ln1.in_fmt
    Y1  = LayerNorm1(R1; γ1, β1) rows         -> ln1.out_fmt
    H   = Y1·W1 + b1                          -> gelu.in_fmt
    G   = GELU(H)                             -> gelu.out_fmt
    F   = G·W2 + b2                           -> ffn_fmt
    R2  = Y1 + F                              -> ln2.in_fmt
    Y   = LayerNorm2(R2; γ2, β2) rows         -> ln2.out_fmt   (block output)

Pre-LN (``prenorm=True``; ln1 is the LayerNorm before attention, ln2 the one
before the FFN; no final LayerNorm)::

    Y1  = LayerNorm1(X -> ln1.in_fmt) rows    -> ln1.out_fmt   (A = Y1)
    R1  = X + O                               -> res_fmt       (residual stream)
    Y2  = LayerNorm2(R1 -> ln2.in_fmt) rows   -> ln2.out_fmt
    H   = Y2·W1 + b1                          -> gelu.in_fmt
    G   = GELU(H)                             -> gelu.out_fmt
    F   = G·W2 + b2                           -> ffn_fmt
    Y   = R1 + F                              -> out_fmt       (block output)

FFN activation (``ffn_act``): ``"gelu"`` as above (the GELU spec, any form:
erf, tanh or CLIP's quick_gelu), or ``"relu"`` (OPT), a stage exact at the block's
formats with no spec::

    H   = Y·W1 + b1                           -> hid_fmt
    G   = max(H, 0)                           -> hid_fmt       (exact)
    F   = G·W2 + b2                           -> ffn_fmt

(a negative ``H`` that saturates at ``hid_fmt``'s minimum still gives 0, so only
the positive range of ``H`` needs to fit ``hid_fmt``), or ``"gated"`` (Llama's
``SiLU(Y·Wg) ⊙ (Y·Wu)``: the ``gelu`` spec is the gate's activation, a SiLU site
``form="silu"``; the up projection and the gate product are exact linear stages)::

    H   = Y·W1 + b1                           -> gelu.in_fmt   (W1 = Wg)
    G   = SiLU(H)                             -> gelu.out_fmt  (the gelu spec)
    U   = Y·Wu + bu                           -> hid_fmt
    Z   = G ⊙ U                               -> gate_fmt      (exact product, one cast)
    F   = Z·W2 + b2                           -> ffn_fmt

With ``rope`` (a rotary position embedding on Q and K, Llama / GPT-NeoX / RoFormer),
each head's queries and keys are rotated before the scores, with constant tables
``cos``, ``sin`` ``[S, d_h]`` (``weights["rc"]``, ``["rs"]``, ``rope_fmt`` codes; the
same for every head, as the model computes them for positions ``0..S-1``)::

    Q_h = Q_h·cos + rotate_half(Q_h)·sin      -> qkv_fmt       (exact, one cast)
    K_h = K_h·cos + rotate_half(K_h)·sin      -> qkv_fmt

(:class:`~hwapprox.approx.linear.RotarySpec`; the score scale folded into ``Wq`` commutes
with the rotation, which is linear).

``X -> ln1.in_fmt`` and ``R1 -> ln2.in_fmt`` are casts with the target
format's rounding and overflow (:func:`hwapprox.fixed.cast`; the identity when
the formats are equal), as the C++ assigns them.

The attention scale ``1/√d_h`` (the exporter's ``Div``/``Mul`` of the scores)
is folded into ``Wq`` and ``bq`` before quantisation (exact in real
arithmetic; the quantised weights carry it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx.attention import AttentionRowSpec
from hwapprox.approx.base import ApproxSpec, SpecError
from hwapprox.approx.linear import AddSpec, MatMulSpec, MulSpec, RotarySpec
from hwapprox.approx.softmax import OnlineSoftmax
from hwapprox.fixed import FixedFormat, cast

__all__ = [
    "ATTENTION_SCHEDULES",
    "FFN_ACTIVATIONS",
    "OPTIONAL_WEIGHTS",
    "WEIGHT_NAMES",
    "BlockFormats",
    "EncoderBlock",
]

#: attention schedules of a block (:attr:`EncoderBlock.attention`)
ATTENTION_SCHEDULES = ("two_pass", "fused")
#: FFN activations of a block (:attr:`EncoderBlock.ffn_act`), index = the C++ ``ffn_act``
FFN_ACTIVATIONS = ("gelu", "relu", "gated")

RawArray = npt.NDArray[np.int64]

#: weight tensors of a block, in the order the C++ functions take them
WEIGHT_NAMES = (
    "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "w1", "b1", "w2", "b2",
    "g1", "be1", "g2", "be2", "sb", "wu", "bu", "rc", "rs",
)  # fmt: skip
#: weights that are one unread zero unless the block uses them (their C++ sizes are 1):
#: the score bias, the gated FFN's up projection, the rotary tables
OPTIONAL_WEIGHTS = ("sb", "wu", "bu", "rc", "rs")


def _fmt(name: str, v: FixedFormat | str) -> FixedFormat:
    try:
        return FixedFormat.parse(v)
    except ValueError as exc:
        raise SpecError(f"BlockFormats.{name}: {exc}") from None


@dataclass(frozen=True)
class BlockFormats:
    """Formats of the linear stages (the nonlinear ones come from their specs).

    ``res_fmt`` (the residual stream ``R1 = X + O``) and ``out_fmt`` (the block
    output ``R1 + F``) are used by pre-LN blocks only; a post-LN block's
    residual sums are ``ln1.in_fmt``/``ln2.in_fmt`` and its output ``ln2.out_fmt``.
    """

    in_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    weight_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<10,2,AP_RND,AP_SAT>"))
    bias_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<12,3,AP_RND,AP_SAT>"))
    accum_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<32,12,AP_TRN,AP_SAT>"))
    qkv_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    ctx_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    attn_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    ffn_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    res_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    out_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    #: the fused attention schedule's D_v accumulators (``attention="fused"`` only)
    attn_acc_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<32,16,AP_RND,AP_SAT>"))
    #: the score bias table's codes (``score_bias`` blocks only)
    score_bias_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    #: the FFN hidden layer ``H`` and ``max(H, 0)`` (``ffn_act="relu"``), or the up
    #: projection ``U`` (``ffn_act="gated"``)
    hid_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    #: the gate product ``Z = SiLU(H) ⊙ U`` (``ffn_act="gated"`` blocks only)
    gate_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    #: the rotary tables' codes (cos, sin in [-1, 1]; ``rope`` blocks only)
    rope_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,2,AP_RND,AP_SAT>"))

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            object.__setattr__(self, name, _fmt(name, getattr(self, name)))

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> BlockFormats:
        """From plain data (HLS spellings); unknown keys are an error listing the known ones."""
        data = dict(data or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise SpecError(
                f"unknown block format(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**data)

    def to_dict(self) -> dict[str, str]:
        return {k: str(getattr(self, k)) for k in self.__dataclass_fields__}


def _weight_formats(fm: BlockFormats, ln1: Any, ln2: Any) -> dict[str, FixedFormat]:
    out: dict[str, FixedFormat] = {}
    for n in WEIGHT_NAMES:
        if n == "sb":
            out[n] = fm.score_bias_fmt
        elif n in ("rc", "rs"):
            out[n] = fm.rope_fmt
        elif n.startswith("w"):
            out[n] = fm.weight_fmt
        elif n.startswith("be"):
            out[n] = (ln1 if n == "be1" else ln2).beta_fmt
        elif n.startswith("b"):
            out[n] = fm.bias_fmt
        else:
            out[n] = (ln1 if n == "g1" else ln2).gamma_fmt
    return out


@dataclass(frozen=True, eq=False)
class EncoderBlock:
    """One encoder block: sizes, raw weights, nonlinear specs, linear formats, kind.

    ``weights`` maps :data:`WEIGHT_NAMES` to raw codes: ``w*`` of
    ``weight_fmt`` (``[in, out]``), ``b*`` of ``bias_fmt``, ``g*``/``be*`` of
    the LayerNorm specs' ``gamma_fmt``/``beta_fmt``. ``prenorm`` selects the
    pre-LN dataflow (module docstring), ``causal`` masks key ``j > i`` for
    query ``i``, ``masked`` makes the block take a key-padding mask
    (:meth:`model`'s ``key_mask``; the C++ function's second input).
    """

    seq: int
    dim: int
    heads: int
    ffn: int
    weights: dict[str, RawArray]
    softmax: ApproxSpec
    #: the FFN's GELU spec (``ffn_act="gelu"``), None for another activation
    gelu: ApproxSpec | None
    ln1: ApproxSpec
    ln2: ApproxSpec
    formats: BlockFormats = field(default_factory=BlockFormats)
    prenorm: bool = False
    causal: bool = False
    masked: bool = False
    #: ``"two_pass"`` (scores, softmax rows, then P·V) or ``"fused"`` (one pass per
    #: query row over the keys: :class:`~hwapprox.approx.attention.AttentionRowSpec`)
    attention: str = "two_pass"
    #: a constant per-head table ``weights["sb"]`` (``[H·S·S]``, ``score_bias_fmt``) is
    #: added to the scores; without it ``sb`` is one zero (the C++ argument's size 1)
    score_bias: bool = False
    #: causal blocks only: query ``i`` attends keys ``i - window < j <= i`` (0 = all)
    window: int = 0
    #: the FFN activation (:data:`FFN_ACTIVATIONS`): ``gelu`` (the ``gelu`` spec),
    #: ``relu`` (exact, in ``formats.hid_fmt``; ``gelu`` is None) or ``gated`` (the
    #: ``gelu`` spec, a SiLU, gates the up projection ``weights["wu"]``)
    ffn_act: str = "gelu"
    #: a rotary position embedding on each head's Q and K (tables ``rc``, ``rs``)
    rope: bool = False

    def __post_init__(self) -> None:
        if self.ffn_act not in FFN_ACTIVATIONS:
            raise SpecError(
                f"EncoderBlock.ffn_act={self.ffn_act!r}: use one of {', '.join(FFN_ACTIVATIONS)}"
            )
        if (self.gelu is None) != (self.ffn_act == "relu"):
            raise SpecError(
                f"EncoderBlock.ffn_act={self.ffn_act!r} "
                + ("needs a gelu spec" if self.gelu is None else "takes no gelu spec (gelu=None)")
            )
        if self.attention not in ATTENTION_SCHEDULES:
            raise SpecError(
                f"EncoderBlock.attention={self.attention!r}: use one of "
                f"{', '.join(ATTENTION_SCHEDULES)}"
            )
        if self.attention == "fused":
            self.attention_row()  # validates softmax (online) and attn_acc_fmt
        unused = {n: np.zeros(1, np.int64) for n in self._unused_weights()}
        object.__setattr__(self, "weights", {**unused, **self.weights})
        for name in ("prenorm", "causal", "masked", "score_bias", "rope"):
            v = getattr(self, name)
            if not isinstance(v, bool | np.bool_ | int | np.integer) or v not in (0, 1):
                raise SpecError(f"EncoderBlock.{name} must be a bool, got {v!r}")
            object.__setattr__(self, name, bool(v))
        if not isinstance(self.window, int | np.integer) or self.window < 0:
            raise SpecError(f"EncoderBlock.window must be an int >= 0, got {self.window!r}")
        if self.window and not self.causal:
            raise SpecError(
                f"EncoderBlock.window={self.window} needs causal=True (a local window of past "
                "keys); set causal or window=0"
            )
        object.__setattr__(self, "window", int(self.window))
        if self.dim % self.heads:
            raise SpecError(f"dim={self.dim} is not a multiple of heads={self.heads}")
        for name, spec, op in (
            ("softmax", self.softmax, "softmax"),
            ("gelu", self.gelu, "gelu"),
            ("ln1", self.ln1, "layernorm"),
            ("ln2", self.ln2, "layernorm"),
        ):
            if spec is not None and str(spec.operator) != op:
                raise SpecError(f"EncoderBlock.{name} must be a {op} spec, got {spec.describe()}")
        missing = [n for n in WEIGHT_NAMES if n not in self.weights]
        if missing:
            raise SpecError(f"EncoderBlock weights missing: {', '.join(missing)}")
        s, d, f = self.seq, self.dim, self.ffn
        shapes = {
            "wq": (d, d), "wk": (d, d), "wv": (d, d), "wo": (d, d), "w1": (d, f), "w2": (f, d),
            "bq": (d,), "bk": (d,), "bv": (d,), "bo": (d,), "b1": (f,), "b2": (d,),
            "g1": (d,), "be1": (d,), "g2": (d,), "be2": (d,),
            "sb": (self.score_bias_n,),
            "wu": (d, f) if self.ffn_act == "gated" else (1,),
            "bu": (f,) if self.ffn_act == "gated" else (1,),
            "rc": (s, d // self.heads) if self.rope else (1,),
            "rs": (s, d // self.heads) if self.rope else (1,),
        }  # fmt: skip
        if self.rope and (d // self.heads) % 2:
            raise SpecError(f"rope needs an even head size, got {d // self.heads}")
        fmts = self.weight_formats()
        for n, shp in shapes.items():
            w = np.asarray(self.weights[n])
            if w.shape != shp:
                raise SpecError(f"EncoderBlock weight {n} has shape {w.shape}, expected {shp}")
            fmts[n].check(w, f"weight {n}")
        if s < 1:
            raise SpecError(f"seq must be >= 1, got {s}")

    def _unused_weights(self) -> list[str]:
        """The optional weights this block does not read (one zero each)."""
        used = {"sb": self.score_bias, "wu": self.ffn_act == "gated",
                "bu": self.ffn_act == "gated", "rc": self.rope, "rs": self.rope}  # fmt: skip
        return [n for n in OPTIONAL_WEIGHTS if not used[n]]

    @property
    def score_bias_n(self) -> int:
        """Length of ``weights["sb"]``: ``H·S·S`` with a score bias, else 1."""
        return self.heads * self.seq * self.seq if self.score_bias else 1

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    @property
    def out_fmt(self) -> FixedFormat:
        """Format of the block output: ``formats.out_fmt`` (pre-LN) or ``ln2.out_fmt``."""
        return self.formats.out_fmt if self.prenorm else self.ln2.out_fmt

    @property
    def kind(self) -> str:
        """``post-LN``/``pre-LN``, with ``causal``, ``key-masked`` and ``fused attention``
        where they apply."""
        parts = ["pre-LN" if self.prenorm else "post-LN"]
        parts += ["causal"] * self.causal + ["key-masked"] * self.masked
        parts += ["score bias"] * self.score_bias
        parts += [f"window {self.window}"] * (self.window > 0)
        parts += ["rotary"] * self.rope
        parts += [f"{self.ffn_act} FFN"] * (self.ffn_act != "gelu")
        parts += ["fused attention"] * (self.attention == "fused")
        return ", ".join(parts)

    def attention_row(self) -> AttentionRowSpec:
        """The fused schedule's row spec: scores from the ``qk`` stage (``softmax.in_fmt``),
        V rows of ``qkv_fmt``, accumulators ``attn_acc_fmt``, output ``ctx_fmt``."""
        fm = self.formats
        if not (isinstance(self.softmax, OnlineSoftmax) and self.softmax.schedule == "online"):
            raise SpecError(
                "fused attention needs the online softmax (method online, schedule online), "
                f"not {self.softmax.describe()}; set the block's softmax method to online or "
                "use attention=two_pass"
            )
        return AttentionRowSpec(
            q_fmt=fm.qkv_fmt, k_fmt=fm.qkv_fmt, v_fmt=fm.qkv_fmt, acc_fmt=fm.attn_acc_fmt,
            out_fmt=fm.ctx_fmt, softmax=self.softmax,
        )  # fmt: skip

    def weight_formats(self) -> dict[str, FixedFormat]:
        """Format of each weight tensor's raw codes."""
        return _weight_formats(self.formats, self.ln1, self.ln2)

    @classmethod
    def from_float(
        cls,
        float_weights: dict[str, npt.ArrayLike],
        *,
        seq: int,
        heads: int,
        softmax: ApproxSpec,
        gelu: ApproxSpec | None,
        ln1: ApproxSpec,
        ln2: ApproxSpec,
        formats: BlockFormats | None = None,
        score_scale: float = 1.0,
        prenorm: bool = False,
        causal: bool = False,
        masked: bool = False,
        attention: str = "two_pass",
        score_bias: bool = False,
        window: int = 0,
        ffn_act: str = "gelu",
        rope: bool = False,
    ) -> EncoderBlock:
        """Quantise float weights (each with its format's own rounding/overflow).

        ``score_scale`` multiplies ``wq`` and ``bq`` first (the attention
        ``1/√d_h`` folded into the query projection).
        """
        fm = formats or BlockFormats()
        fw = {k: np.asarray(v, dtype=np.float64) for k, v in float_weights.items()}
        used = {"sb": score_bias, "wu": ffn_act == "gated", "bu": ffn_act == "gated",
                "rc": rope, "rs": rope}  # fmt: skip
        for n in OPTIONAL_WEIGHTS:
            if not used[n]:
                fw.setdefault(n, np.zeros(1))
        missing = [n for n in WEIGHT_NAMES if n not in fw]
        if missing:
            raise SpecError(f"float weights missing: {', '.join(missing)}")
        fw["wq"] = fw["wq"] * score_scale
        fw["bq"] = fw["bq"] * score_scale
        d, f = fw["w1"].shape
        fmts = _weight_formats(fm, ln1, ln2)
        raw = {n: fmts[n].quantize(fw[n].reshape(-1) if n == "sb" else fw[n])
               for n in WEIGHT_NAMES}  # fmt: skip
        return cls(
            seq, d, heads, f, raw, softmax, gelu, ln1, ln2, fm,
            prenorm=prenorm, causal=causal, masked=masked, attention=attention,
            score_bias=score_bias, window=window, ffn_act=ffn_act, rope=rope,
        )  # fmt: skip

    # -- the stages ------------------------------------------------------------------
    def stages(self) -> dict[str, Any]:
        """The linear stages as exact specs (names as in the C++ config).

        ``qkv`` reads the block input (post-LN) or ``ln1``'s output (pre-LN);
        ``ffn1`` reads ``ln1``'s (post-LN) or ``ln2``'s output (pre-LN); ``add1``
        and ``add2`` end in ``ln1.in_fmt``/``ln2.in_fmt`` (post-LN) or
        ``res_fmt``/``out_fmt`` (pre-LN).
        """
        fm = self.formats
        sm, l1, l2 = self.softmax, self.ln1, self.ln2
        # the FFN hidden layer before and after its activation
        h_fmt, g_fmt = (
            (self.gelu.in_fmt, self.gelu.out_fmt) if self.gelu is not None
            else (fm.hid_fmt, fm.hid_fmt)
        )  # fmt: skip
        gate = MulSpec(g_fmt, fm.hid_fmt, fm.gate_fmt)
        f2_in = fm.gate_fmt if self.ffn_act == "gated" else g_fmt
        if self.prenorm:
            attn_in, ffn_in = l1.out_fmt, l2.out_fmt
            add1 = AddSpec(fm.in_fmt, fm.attn_fmt, fm.res_fmt)
            add2 = AddSpec(fm.res_fmt, fm.ffn_fmt, fm.out_fmt)
        else:
            attn_in, ffn_in = fm.in_fmt, l1.out_fmt
            add1 = AddSpec(fm.in_fmt, fm.attn_fmt, l1.in_fmt)
            add2 = AddSpec(l1.out_fmt, fm.ffn_fmt, l2.in_fmt)
        return {
            "qkv": MatMulSpec(attn_in, fm.weight_fmt, fm.accum_fmt, fm.qkv_fmt, fm.bias_fmt),
            "qk": MatMulSpec(fm.qkv_fmt, fm.qkv_fmt, fm.accum_fmt, sm.in_fmt, transpose_b=True),
            "pv": MatMulSpec(sm.out_fmt, fm.qkv_fmt, fm.accum_fmt, fm.ctx_fmt),
            "o": MatMulSpec(fm.ctx_fmt, fm.weight_fmt, fm.accum_fmt, fm.attn_fmt, fm.bias_fmt),
            "add1": add1,
            "ffn1": MatMulSpec(ffn_in, fm.weight_fmt, fm.accum_fmt, h_fmt, fm.bias_fmt),
            "ffn2": MatMulSpec(f2_in, fm.weight_fmt, fm.accum_fmt, fm.ffn_fmt, fm.bias_fmt),
            "add2": add2,
            "sbias": AddSpec(sm.in_fmt, fm.score_bias_fmt, sm.in_fmt),
            "up": MatMulSpec(ffn_in, fm.weight_fmt, fm.accum_fmt, fm.hid_fmt, fm.bias_fmt),
            "gate": gate,
            "rope": RotarySpec(fm.qkv_fmt, fm.rope_fmt, fm.qkv_fmt),
        }

    def score_mask(self, key_mask: npt.ArrayLike | None = None) -> npt.NDArray[np.bool_] | None:
        """The softmax mask ``[S, S]`` (True = masked out) of one sample, or None (unmasked).

        ``[i, j]`` is True where query ``i`` must not attend key ``j``: ``j > i``
        in a causal block, or key ``j`` padding (``key_mask[j]`` False) in a
        masked block. The same for every head.
        """
        km = self._key_mask(key_mask, (self.seq,))
        if not (self.causal or self.masked):
            return None
        s = self.seq
        m = np.zeros((s, s), dtype=bool)
        if self.causal:
            m |= np.triu(np.ones((s, s), dtype=bool), 1)
        if self.window:
            m |= np.tril(np.ones((s, s), dtype=bool), -self.window)
        if km is not None:
            m |= ~km[None, :]
        return m

    def _key_mask(
        self, key_mask: npt.ArrayLike | None, shapes: tuple[int, ...] | tuple[tuple[int, ...], ...]
    ) -> npt.NDArray[np.bool_] | None:
        """``key_mask`` checked against the block kind, dtype and ``shapes`` (one or a tuple)."""
        if not self.masked:
            if key_mask is not None:
                raise SpecError(
                    "key_mask given to a block without a key mask (masked=False); build it with "
                    "masked=True"
                )
            return None
        if key_mask is None:
            raise SpecError(
                f"this block is masked: model() needs key_mask, bool [{self.seq}] (or [B, "
                f"{self.seq}]), True = real token"
            )
        km = np.asarray(key_mask)
        if km.dtype != np.bool_:
            raise SpecError(
                f"key_mask must be a bool array (True = real token, False = padding), got dtype "
                f"{km.dtype}; convert a 0/1 attention mask with `attention_mask != 0`"
            )
        ok = shapes if isinstance(shapes[0], tuple) else (shapes,)
        if km.shape not in ok:
            want = " or ".join(f"[{', '.join(map(str, o))}]" for o in ok)
            raise SpecError(f"key_mask must be {want}, got {list(km.shape)}")
        return km

    def model(self, x: npt.ArrayLike, key_mask: npt.ArrayLike | None = None) -> RawArray:
        """Raw ``[S, D]`` (or ``[B, S, D]``) ``in_fmt`` codes -> raw :attr:`out_fmt` codes.

        ``key_mask`` (masked blocks only, required there): bool ``[S]``, or
        ``[B, S]`` / ``[S]`` for batched ``x``; **True = real token**, False =
        padding (the opposite of the softmax specs' ``mask``, where True =
        masked out). Padded keys get no attention; padded query rows are
        computed like any other (their outputs are defined, bit for bit).
        """
        xr = np.asarray(x)
        if xr.ndim == 3:
            km = self._key_mask(key_mask, ((xr.shape[0], self.seq), (self.seq,)))
            if km is not None and km.ndim == 1:
                km = np.broadcast_to(km, (xr.shape[0], self.seq))
            if km is None:
                return np.stack([self.model(b) for b in xr])
            return np.stack([self.model(b, k) for b, k in zip(xr, km, strict=True)])
        if xr.shape != (self.seq, self.dim):
            raise SpecError(f"block input must be [{self.seq}, {self.dim}], got {xr.shape}")
        xr = self.formats.in_fmt.check(xr, "block input")
        mask = self.score_mask(key_mask)
        st = self.stages()
        w = self.weights
        fm = self.formats
        a = self._attention_input(xr)
        o = self._attention(a, mask, st)
        r1 = st["add1"].model(xr, o)
        if self.prenorm:
            r1l = cast(r1, fm.res_fmt, self.ln2.in_fmt)
            y2 = self.ln2.model(r1l, axis=-1, gamma=w["g2"], beta=w["be2"])
            return st["add2"].model(r1, self._ffn(y2, st))
        y1 = self.ln1.model(r1, axis=-1, gamma=w["g1"], beta=w["be1"])
        r2 = st["add2"].model(y1, self._ffn(y1, st))
        return self.ln2.model(r2, axis=-1, gamma=w["g2"], beta=w["be2"])

    def _attention_input(self, xr: RawArray) -> RawArray:
        """The attention's input: ``X`` post-LN, ``LN1(cast(X))`` pre-LN."""
        if not self.prenorm:
            return xr
        w = self.weights
        xl = cast(xr, self.formats.in_fmt, self.ln1.in_fmt)
        return self.ln1.model(xl, axis=-1, gamma=w["g1"], beta=w["be1"])

    def softmax_inputs(
        self, x: npt.ArrayLike, key_mask: npt.ArrayLike | None = None
    ) -> tuple[RawArray, npt.NDArray[np.bool_] | None]:
        """The softmax's input rows of one sequence: the scores ``[H, S, S]`` (raw
        ``softmax.in_fmt`` codes, query rows over their keys, after the score bias) and
        the mask ``[S, S]`` (True = masked out, None when unmasked), as :meth:`model`
        computes them; for hardware whose timing depends on them (the pipelined online
        softmax's rescale holds)."""
        xr = np.asarray(x)
        if xr.shape != (self.seq, self.dim):
            raise SpecError(f"block input must be [{self.seq}, {self.dim}], got {xr.shape}")
        xr = self.formats.in_fmt.check(xr, "block input")
        mask = self.score_mask(key_mask)
        return self._scores(self._attention_input(xr), self.stages()), mask

    def _scores(self, a: RawArray, st: dict[str, Any]) -> RawArray:
        """Attention input ``[S, D]`` -> the scores ``[H, S, S]`` (rotary and bias applied)."""
        w = self.weights
        s, h, dh = self.seq, self.heads, self.head_dim
        q = st["qkv"].model(a, w["wq"], w["bq"])
        k = st["qkv"].model(a, w["wk"], w["bk"])
        qh = q.reshape(s, h, dh).transpose(1, 0, 2)
        kh = k.reshape(s, h, dh).transpose(1, 0, 2)
        if self.rope:
            rc, rs = (np.asarray(w[n]).reshape(s, dh) for n in ("rc", "rs"))
            qh, kh = st["rope"].model(qh, rc, rs), st["rope"].model(kh, rc, rs)
        scores = st["qk"].model(qh, kh)  # [H, S, S]
        if self.score_bias:
            scores = st["sbias"].model(scores, np.asarray(w["sb"]).reshape(h, s, s))
        return scores

    def _attention(
        self,
        a: RawArray,
        mask: npt.NDArray[np.bool_] | None,
        st: dict[str, MatMulSpec | AddSpec],
    ) -> RawArray:
        """Attention input ``[S, D]`` (``qkv``'s a_fmt codes) -> ``O`` (``attn_fmt``)."""
        w = self.weights
        s, h, dh = self.seq, self.heads, self.head_dim
        v = st["qkv"].model(a, w["wv"], w["bv"])

        def split(t: RawArray) -> RawArray:  # [S, D] -> [H, S, dh]
            return t.reshape(s, h, dh).transpose(1, 0, 2)

        scores = self._scores(a, st)
        if self.attention == "fused":
            row = self.attention_row()
            vh = split(v)
            ctx = np.stack(
                [row.model_scores(scores[i], vh[i], mask) for i in range(h)]
            )  # [H, S, dh]: query rows of head i over its S keys
            ctx = ctx.transpose(1, 0, 2).reshape(s, self.dim)
            return st["o"].model(ctx, w["wo"], w["bo"])
        if mask is None:
            p = self.softmax.model(scores, axis=-1)
        else:
            p = self.softmax.model(scores, axis=-1, mask=mask[None, :, :])
        ctx = st["pv"].model(p, split(v))  # [H, S, dh]
        ctx = ctx.transpose(1, 0, 2).reshape(s, self.dim)
        return st["o"].model(ctx, w["wo"], w["bo"])

    def _ffn(self, y: RawArray, st: dict[str, MatMulSpec | AddSpec]) -> RawArray:
        """FFN input ``[S, D]`` (``ffn1``'s a_fmt codes) -> ``F`` (``ffn_fmt``)."""
        w = self.weights
        hh = st["ffn1"].model(y, w["w1"], w["b1"])
        g = self.gelu.model(hh) if self.gelu is not None else np.maximum(hh, 0)
        if self.ffn_act == "gated":
            g = st["gate"].model(g, st["up"].model(y, w["wu"], w["bu"]))
        return st["ffn2"].model(g, w["w2"], w["b2"])
