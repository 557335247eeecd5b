"""A post-LN transformer encoder block as one fixed-point unit: model and config.

:class:`EncoderBlock` holds the quantised weights, the nonlinear specs
(softmax, GELU, two LayerNorms) and the formats of every linear stage
(:class:`BlockFormats`). :meth:`EncoderBlock.model` composes
:mod:`hwapprox.approx.linear` and the specs' models on raw codes -- the truth
the HLS function ``hwapprox::encoder_block`` (``include/hwapprox/encoder.h``)
must match bit for bit. :meth:`EncoderBlock.instances` writes its config.

Dataflow (``X`` is ``[S, D]`` raw ``in_fmt``, every arrow one explicit cast)::

    Q,K,V = X·W{q,k,v} + b{q,k,v}            -> qkv_fmt     (accum_fmt)
    per head h: A_h = Q_h·K_hᵀ               -> softmax.in_fmt (accum_fmt)
                P_h = softmax(A_h) rows       -> softmax.out_fmt
                C_h = P_h·V_h                 -> ctx_fmt     (accum_fmt)
    O   = C·Wo + bo                           -> attn_fmt
    R1  = X + O                               -> ln1.in_fmt
    Y1  = LayerNorm1(R1; γ1, β1) rows         -> ln1.out_fmt
    H   = Y1·W1 + b1                          -> gelu.in_fmt
    G   = GELU(H)                             -> gelu.out_fmt
    F   = G·W2 + b2                           -> ffn_fmt
    R2  = Y1 + F                              -> ln2.in_fmt
    Y   = LayerNorm2(R2; γ2, β2) rows         -> ln2.out_fmt

The attention scale ``1/√d_h`` (the exporter's ``Div``/``Mul`` of the scores)
is folded into ``Wq`` and ``bq`` before quantisation (exact in real
arithmetic; the quantised weights carry it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx.base import ApproxSpec, SpecError
from hwapprox.approx.linear import AddSpec, MatMulSpec
from hwapprox.fixed import FixedFormat
from hwapprox.hls.emit import Instance, add_instance, matmul_instance
from hwapprox.hls.units import unit_instance

__all__ = ["WEIGHT_NAMES", "BlockFormats", "EncoderBlock"]

RawArray = npt.NDArray[np.int64]

#: weight tensors of a block: name -> (kind, shape key)
WEIGHT_NAMES = (
    "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "w1", "b1", "w2", "b2",
    "g1", "be1", "g2", "be2",
)  # fmt: skip


def _fmt(name: str, v: FixedFormat | str) -> FixedFormat:
    try:
        return FixedFormat.parse(v)
    except ValueError as exc:
        raise SpecError(f"BlockFormats.{name}: {exc}") from None


@dataclass(frozen=True)
class BlockFormats:
    """Formats of the linear stages (the nonlinear ones come from their specs)."""

    in_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    weight_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<10,2,AP_RND,AP_SAT>"))
    bias_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<12,3,AP_RND,AP_SAT>"))
    accum_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<32,12,AP_TRN,AP_SAT>"))
    qkv_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    ctx_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    attn_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    ffn_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))

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
        if n.startswith("w"):
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
    """One encoder block: sizes, raw weights, nonlinear specs and linear formats.

    ``weights`` maps :data:`WEIGHT_NAMES` to raw codes: ``w*`` of
    ``weight_fmt`` (``[in, out]``), ``b*`` of ``bias_fmt``, ``g*``/``be*`` of
    the LayerNorm specs' ``gamma_fmt``/``beta_fmt``.
    """

    seq: int
    dim: int
    heads: int
    ffn: int
    weights: dict[str, RawArray]
    softmax: ApproxSpec
    gelu: ApproxSpec
    ln1: ApproxSpec
    ln2: ApproxSpec
    formats: BlockFormats = field(default_factory=BlockFormats)

    def __post_init__(self) -> None:
        if self.dim % self.heads:
            raise SpecError(f"dim={self.dim} is not a multiple of heads={self.heads}")
        for name, spec, op in (
            ("softmax", self.softmax, "softmax"),
            ("gelu", self.gelu, "gelu"),
            ("ln1", self.ln1, "layernorm"),
            ("ln2", self.ln2, "layernorm"),
        ):
            if str(spec.operator) != op:
                raise SpecError(f"EncoderBlock.{name} must be a {op} spec, got {spec.describe()}")
        missing = [n for n in WEIGHT_NAMES if n not in self.weights]
        if missing:
            raise SpecError(f"EncoderBlock weights missing: {', '.join(missing)}")
        s, d, f = self.seq, self.dim, self.ffn
        shapes = {
            "wq": (d, d), "wk": (d, d), "wv": (d, d), "wo": (d, d), "w1": (d, f), "w2": (f, d),
            "bq": (d,), "bk": (d,), "bv": (d,), "bo": (d,), "b1": (f,), "b2": (d,),
            "g1": (d,), "be1": (d,), "g2": (d,), "be2": (d,),
        }  # fmt: skip
        fmts = self.weight_formats()
        for n, shp in shapes.items():
            w = np.asarray(self.weights[n])
            if w.shape != shp:
                raise SpecError(f"EncoderBlock weight {n} has shape {w.shape}, expected {shp}")
            fmts[n].check(w, f"weight {n}")
        if s < 1:
            raise SpecError(f"seq must be >= 1, got {s}")

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

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
        gelu: ApproxSpec,
        ln1: ApproxSpec,
        ln2: ApproxSpec,
        formats: BlockFormats | None = None,
        score_scale: float = 1.0,
    ) -> EncoderBlock:
        """Quantise float weights (each with its format's own rounding/overflow).

        ``score_scale`` multiplies ``wq`` and ``bq`` first (the attention
        ``1/√d_h`` folded into the query projection).
        """
        fm = formats or BlockFormats()
        fw = {k: np.asarray(v, dtype=np.float64) for k, v in float_weights.items()}
        missing = [n for n in WEIGHT_NAMES if n not in fw]
        if missing:
            raise SpecError(f"float weights missing: {', '.join(missing)}")
        fw["wq"] = fw["wq"] * score_scale
        fw["bq"] = fw["bq"] * score_scale
        d, f = fw["w1"].shape
        fmts = _weight_formats(fm, ln1, ln2)
        raw = {n: fmts[n].quantize(fw[n]) for n in WEIGHT_NAMES}
        return cls(seq, d, heads, f, raw, softmax, gelu, ln1, ln2, fm)

    # -- the stages ------------------------------------------------------------------
    def stages(self) -> dict[str, MatMulSpec | AddSpec]:
        """The linear stages as exact specs (names as in the C++ config)."""
        fm = self.formats
        sm, ge, l1, l2 = self.softmax, self.gelu, self.ln1, self.ln2
        return {
            "qkv": MatMulSpec(fm.in_fmt, fm.weight_fmt, fm.accum_fmt, fm.qkv_fmt, fm.bias_fmt),
            "qk": MatMulSpec(fm.qkv_fmt, fm.qkv_fmt, fm.accum_fmt, sm.in_fmt, transpose_b=True),
            "pv": MatMulSpec(sm.out_fmt, fm.qkv_fmt, fm.accum_fmt, fm.ctx_fmt),
            "o": MatMulSpec(fm.ctx_fmt, fm.weight_fmt, fm.accum_fmt, fm.attn_fmt, fm.bias_fmt),
            "add1": AddSpec(fm.in_fmt, fm.attn_fmt, l1.in_fmt),
            "ffn1": MatMulSpec(l1.out_fmt, fm.weight_fmt, fm.accum_fmt, ge.in_fmt, fm.bias_fmt),
            "ffn2": MatMulSpec(ge.out_fmt, fm.weight_fmt, fm.accum_fmt, fm.ffn_fmt, fm.bias_fmt),
            "add2": AddSpec(l1.out_fmt, fm.ffn_fmt, l2.in_fmt),
        }

    def model(self, x: npt.ArrayLike) -> RawArray:
        """Raw ``[S, D]`` (or ``[B, S, D]``) ``in_fmt`` codes -> raw ``ln2.out_fmt`` codes."""
        xr = np.asarray(x)
        if xr.ndim == 3:
            return np.stack([self.model(b) for b in xr])
        if xr.shape != (self.seq, self.dim):
            raise SpecError(f"block input must be [{self.seq}, {self.dim}], got {xr.shape}")
        xr = self.formats.in_fmt.check(xr, "block input")
        st = self.stages()
        w = self.weights
        s, h, dh = self.seq, self.heads, self.head_dim
        q = st["qkv"].model(xr, w["wq"], w["bq"])
        k = st["qkv"].model(xr, w["wk"], w["bk"])
        v = st["qkv"].model(xr, w["wv"], w["bv"])

        def split(t: RawArray) -> RawArray:  # [S, D] -> [H, S, dh]
            return t.reshape(s, h, dh).transpose(1, 0, 2)

        scores = st["qk"].model(split(q), split(k))  # [H, S, S]
        p = self.softmax.model(scores, axis=-1)
        ctx = st["pv"].model(p, split(v))  # [H, S, dh]
        ctx = ctx.transpose(1, 0, 2).reshape(s, self.dim)
        o = st["o"].model(ctx, w["wo"], w["bo"])
        r1 = st["add1"].model(xr, o)
        y1 = self.ln1.model(r1, axis=-1, gamma=w["g1"], beta=w["be1"])
        hh = st["ffn1"].model(y1, w["w1"], w["b1"])
        g = self.gelu.model(hh)
        f = st["ffn2"].model(g, w["w2"], w["b2"])
        r2 = st["add2"].model(y1, f)
        return self.ln2.model(r2, axis=-1, gamma=w["g2"], beta=w["be2"])

    # -- HLS config --------------------------------------------------------------------
    def instances(self, name: str) -> list[Instance]:
        """Config structs for ``hwapprox::encoder_block``: sub-units first, then ``name``."""
        st = self.stages()
        s, d, f, dh = self.seq, self.dim, self.ffn, self.head_dim
        subs = [
            matmul_instance(f"{name}_qkv", st["qkv"], s, d, d),
            matmul_instance(f"{name}_qk", st["qk"], s, dh, s),
            matmul_instance(f"{name}_pv", st["pv"], s, s, dh),
            matmul_instance(f"{name}_o", st["o"], s, d, d),
            add_instance(f"{name}_add1", st["add1"], s * d),
            matmul_instance(f"{name}_ffn1", st["ffn1"], s, d, f),
            matmul_instance(f"{name}_ffn2", st["ffn2"], s, f, d),
            add_instance(f"{name}_add2", st["add2"], s * d),
            unit_instance(f"{name}_softmax", self.softmax, s),
            unit_instance(f"{name}_gelu", self.gelu, s * f),
            unit_instance(f"{name}_ln1", self.ln1, d),
            unit_instance(f"{name}_ln2", self.ln2, d),
        ]
        aliases = {
            f"{part}_cfg": f"{name}_{part}"
            for part in ("qkv", "qk", "pv", "o", "add1", "ffn1", "ffn2", "add2")
        }
        aliases |= {f"{part}_cfg": f"{name}_{part}" for part in ("softmax", "gelu", "ln1", "ln2")}
        block = Instance(
            name,
            types={"in_t": self.formats.in_fmt, "out_t": self.ln2.out_fmt},
            consts={"seq": s, "dim": d, "heads": self.heads, "head_dim": dh, "ffn": f},
            tables={n: np.asarray(self.weights[n]).ravel() for n in WEIGHT_NAMES},
            aliases=aliases,
            comment=(
                f"encoder block S={s} D={d} H={self.heads} F={f}; softmax "
                f"{self.softmax.method}, gelu {self.gelu.method}, layernorm "
                f"{self.ln1.method}/{self.ln2.method}; {self.formats.to_dict()}"
            ),
        )
        return [*subs, block]
