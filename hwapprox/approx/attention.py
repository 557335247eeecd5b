"""A single-pass attention row: online softmax fused with P·V.

One query ``q`` streams over its keys and values, one key per step, and never
stores the row of scores: a running max ``m``, a running sum ``d`` and a
running output vector ``o`` are rescaled by ``exp(m_old - m_new)`` whenever the
max grows; the output is ``o / d`` (Milakov & Gimelshein 2018, "Online
normalizer calculation for softmax"; FlashAttention, Dao et al. 2022;
Edge-MoE's single-pass softmax, Sarkar et al. 2023). :class:`AttentionRowSpec`
is its bit-accurate integer model on the fixed-point core, built from the
exponential, running-sum and reciprocal units of
:class:`~hwapprox.approx.softmax.OnlineSoftmax` (the same arithmetic, the same
tables), so the HLS and RTL units can reuse those blocks.

Datapath, per query (raw codes; ``F_x`` = fraction bits of format ``x``)::

    score  s_j = cast_score(q·k_j [· SCALE])        exact dot product (F_q + F_k),
                                                    optional SCALE (scale_fmt), one
                                                    cast to softmax.in_fmt
    state  (m, d, o) = (empty, 0, 0)                o: D_v lanes of acc_fmt
    key j, not masked:
      s_j > m (or the first key):  E = E(s_j - m)
          d = R_s(d·E) + ONE                       exactly OnlineSoftmax's update
          o = sat(R_a(o·E) + A(v_j))               every lane: o·E rescaled
      else:                         E = E(m - s_j)
          d = d + E                                (exact, sum_fmt)
          o = sat(o + R_a(E·v_j))
    key j masked: no change (no exp, no rescale, no V read in hardware)
    softmax.skip_threshold (BLASST): a key that is not a new max with
      m - s_j > SKIP_TAU is skipped like a masked key (no exp, no V load)
    output y = cast_out(o · r),  r = 1/d  (OnlineSoftmax's reciprocal unit)
    a fully masked row outputs zeros
    softmax.off_by_one (Softmax_1): the state starts at a zero logit with V = 0,
    (m, d, o) = (0, ONE, 0), so a row may attend to nothing

``E`` is :meth:`OnlineSoftmax.exp_unit_raw` (``exp_fmt``), ``R_s`` its sum
rescale, ``R_a`` a cast of the exact product to ``acc_fmt`` (its rounding),
``A(v)`` = ``v`` aligned to ``acc_fmt`` (exact: ``F_a >= F_v``), ``sat`` =
``acc_fmt``'s overflow. ``|o| <= d · max|v|``, so ``acc_fmt`` needs
``log2(N)`` integer bits above ``v_fmt``'s: :meth:`AttentionRowSpec.model`
refuses longer rows than ``acc_fmt`` holds (``max_keys``).

Deviations from the float maths: every rounding above (the score cast, E, the
sum and accumulator rescales, the reciprocal, the output cast); the rescale
of ``o`` happens on the already-rounded accumulator (as in hardware), so the
fused row is not bit-equal to the two-pass schedule
(:meth:`AttentionRowSpec.two_pass_model`: the online softmax of the buffered
row, ``P`` in ``softmax.out_fmt``, then ``P·V`` exact, one output cast).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx.base import SpecError
from hwapprox.approx.hwparams import overflow_code, rounding_code
from hwapprox.approx.softmax import OnlineSoftmax
from hwapprox.fixed import FixedFormat, Overflow, Rounding, cast

__all__ = ["AttentionRowSpec"]

RawArray = npt.NDArray[np.int64]

_MAX_BITS = 62


def _fmt(name: str, v: Any) -> FixedFormat:
    try:
        return FixedFormat.parse(v)
    except ValueError as exc:
        raise SpecError(f"AttentionRowSpec.{name}: {exc}") from None


@dataclass(frozen=True)
class AttentionRowSpec:
    """One fused attention row (see the module docstring for the exact datapath).

    ``softmax`` supplies the score format (its ``in_fmt``), the exponential,
    running-sum and reciprocal units; its ``out_fmt`` is used only by the
    two-pass comparison. ``scale`` (e.g. ``1/sqrt(d_k)``) is quantised to
    ``scale_fmt`` and multiplies the exact dot product; None skips it (the
    scale folded into ``q``).
    """

    q_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    k_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    v_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    acc_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<32,16,AP_RND,AP_SAT>"))
    out_fmt: FixedFormat = field(default=FixedFormat.parse("ap_fixed<16,6,AP_RND,AP_SAT>"))
    softmax: OnlineSoftmax = field(default_factory=OnlineSoftmax)
    scale: float | None = None
    scale_fmt: FixedFormat = field(default=FixedFormat.parse("ap_ufixed<16,1,AP_RND,AP_SAT>"))

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name.endswith("_fmt"):
                object.__setattr__(self, f.name, _fmt(f.name, v))
        sm = self.softmax
        if not isinstance(sm, OnlineSoftmax) or sm.schedule != "online":
            raise SpecError(
                f"AttentionRowSpec.softmax must be an online OnlineSoftmax (schedule 'online'), "
                f"got {getattr(sm, 'describe', lambda: repr(sm))()}"
            )
        if sm.clipped:
            raise SpecError(
                "AttentionRowSpec.softmax is a clipped softmax (clip_gamma, clip_zeta): the "
                "clip acts on each probability, which the fused row never forms; use the "
                "two-pass schedule or an unclipped softmax"
            )
        if sm.unified_max is not None or sm.out_code != "linear":
            raise SpecError(
                "AttentionRowSpec.softmax has unified_max or a log out_code: the fused row "
                "keeps a running max and never forms a probability code; use "
                "unified_max=None, out_code='linear' (skip_threshold is supported)"
            )
        for name in ("q_fmt", "k_fmt", "v_fmt", "acc_fmt", "out_fmt"):
            fmt: FixedFormat = getattr(self, name)
            if not fmt.signed:
                raise SpecError(f"{name} {fmt} must be signed (ap_fixed)")
        a, v = self.acc_fmt, self.v_fmt
        if a.frac_bits < v.frac_bits or a.int_bits < v.int_bits:
            raise SpecError(
                f"acc_fmt {a} must hold every v_fmt {v} value exactly (frac_bits >= "
                f"{v.frac_bits}, int_bits >= {v.int_bits}); widen acc_fmt"
            )
        if a.overflow is not Overflow.SAT:
            raise SpecError(f"acc_fmt {a} must saturate (AP_SAT)")
        if a.rounding not in (Rounding.TRN, Rounding.RND):
            raise SpecError(f"acc_fmt {a} rounding must be AP_TRN or AP_RND")
        if a.width + sm.exp_fmt.width > _MAX_BITS or a.width + sm.recip_fmt.width > _MAX_BITS:
            raise SpecError(
                f"acc_fmt {a} x exp_fmt/recip_fmt products must fit {_MAX_BITS} bits; narrow it"
            )
        if self.scale is not None:
            if not (math.isfinite(self.scale) and self.scale > 0):
                raise SpecError(f"scale={self.scale!r} must be a positive finite number or None")
            if self.scale_raw == 0:
                raise SpecError(f"scale {self.scale} quantises to 0 in {self.scale_fmt}")

    # -- derived -----------------------------------------------------------------------
    @property
    def score_fmt(self) -> FixedFormat:
        return self.softmax.in_fmt

    @property
    def scale_raw(self) -> int:
        """SCALE as a raw ``scale_fmt`` code (0 when there is no scale)."""
        if self.scale is None:
            return 0
        return int(self.scale_fmt.quantize(np.array([self.scale]))[0])

    def max_keys(self) -> int:
        """Longest row ``acc_fmt`` and ``sum_fmt`` hold: ``|o| <= n·max|v|``, ``d <= n``."""
        head = self.acc_fmt.int_bits - self.v_fmt.int_bits
        return int(min(2**head, math.floor(self.softmax.sum_fmt.max)))

    def dot_width(self, d: int) -> int:
        """Bits of the exact dot product of ``d`` lanes (signed)."""
        return self.q_fmt.width + self.k_fmt.width + max(1, math.ceil(math.log2(max(d, 2))))

    def hw_params(self, dim: int, dim_v: int) -> dict[str, int]:
        """The hardware parameter set of ``hwa_attention_row`` for ``dim`` K lanes and
        ``dim_v`` V lanes: the online softmax's units (its :meth:`OnlineSoftmax.hw_params`:
        exp, running sum, reciprocal) plus the row's own widths and shifts.

        ============ ======== ========================================================
        name         sign     value range -> bits
        ============ ======== ========================================================
        DOT_W        signed   ``q·k`` exact: ``dim`` products of Q_W x K_W bits
                              (:meth:`dot_width`)
        SC_W         signed   ``q·k·SCALE`` exact (DOT_W + SCALE_W + 1; DOT_W without scale)
        S_SHIFT      --       fraction bits of that product minus the score's (a right
                              shift with S_RND; negative: an exact left shift)
        V_SHIFT      --       ``v`` aligned to ``acc_fmt``: ``F_acc - F_v >= 0`` (exact)
        MUL_W        signed   ``o·E`` or ``v·E`` (one multiplier per lane, shared by
                              both updates): ACC_W + EXP_W + 1
        Y_SHIFT      --       ``o·r`` has ``F_acc + F_r`` fraction bits; minus ``F_out``
        YP_W         signed   ``o·r`` exact: ACC_W + R_W + 1
        KEY_MAX      --       keys per row that ``acc_fmt`` and ``sum_fmt`` hold
                              (:meth:`max_keys`)
        EXP_V_W      unsigned the exp unit's interpolation value (base2 only): the
                              softmax's ``V_W``, renamed because ``V_W`` here is the
                              V lanes' width (``v_fmt``)
        ============ ======== ========================================================
        """
        if dim < 1 or dim_v < 1:
            raise SpecError(f"dim and dim_v must be >= 1, got dim={dim}, dim_v={dim_v}")
        sm = self.softmax
        hw = dict(sm.hw_params())
        if "V_W" in hw:  # the exp unit's (base2): V_W below is the V lanes' width
            hw["EXP_V_W"] = hw.pop("V_W")
        dot_w = self.dot_width(dim)
        f_dot = self.q_fmt.frac_bits + self.k_fmt.frac_bits
        has_scale = self.scale is not None
        sc_w = dot_w + self.scale_fmt.width + 1 if has_scale else dot_w
        f_sc = f_dot + (self.scale_fmt.frac_bits if has_scale else 0)
        if sc_w > 62:
            raise SpecError(
                f"the exact q·k product of {dim} lanes (x scale) needs {sc_w} > 62 bits; narrow "
                "q_fmt/k_fmt"
            )
        a, s = self.acc_fmt, self.score_fmt
        hw |= {
            "DIM": int(dim),
            "DIM_V": int(dim_v),
            "Q_W": self.q_fmt.width,
            "K_W": self.k_fmt.width,
            "V_W": self.v_fmt.width,
            "DOT_W": dot_w,
            "HAS_SCALE": int(has_scale),
            "SCALE_W": self.scale_fmt.width,
            "SCALE_RAW": self.scale_raw,
            "SC_W": sc_w,
            "S_SHIFT": f_sc - s.frac_bits,
            "S_W": s.width,
            "S_RND": rounding_code(s.rounding),
            "S_OVF": overflow_code(s.overflow),
            "ACC_W": a.width,
            "ACC_RND": rounding_code(a.rounding),
            "V_SHIFT": a.frac_bits - self.v_fmt.frac_bits,
            "MUL_W": a.width + sm.exp_fmt.width + 1,
            "Y_SHIFT": a.frac_bits + sm.recip_fmt.frac_bits - self.out_fmt.frac_bits,
            "YP_W": a.width + sm.recip_fmt.width + 1,
            "Y_W": self.out_fmt.width,
            "Y_RND": rounding_code(self.out_fmt.rounding),
            "Y_OVF": overflow_code(self.out_fmt.overflow),
            "KEY_MAX": self.max_keys(),
        }
        return hw

    def describe(self) -> str:
        sc = "" if self.scale is None else f", scale {self.scale:g} ({self.scale_fmt})"
        return (
            f"attention row: q {self.q_fmt}, k {self.k_fmt}, v {self.v_fmt}, scores "
            f"{self.score_fmt}, acc {self.acc_fmt}, out {self.out_fmt}{sc}; "
            f"{self.softmax.describe()}"
        )

    def with_(self, **changes: Any) -> AttentionRowSpec:
        return replace(self, **changes)

    # -- checks ------------------------------------------------------------------------
    def _inputs(
        self, q: npt.ArrayLike, k: npt.ArrayLike, v: npt.ArrayLike, mask: npt.ArrayLike | None
    ) -> tuple[RawArray, RawArray, RawArray, npt.NDArray[np.bool_] | None]:
        """``q [R, D]``, ``k [R, N, D]`` (or ``[N, D]`` shared), ``v`` likewise ``D_v``."""
        qr = self.q_fmt.check(np.atleast_2d(np.asarray(q)), "q")
        kr = self.k_fmt.check(np.asarray(k), "k")
        vr = self.v_fmt.check(np.asarray(v), "v")
        rows, d = qr.shape
        if kr.ndim == 2:
            kr = np.broadcast_to(kr, (rows, *kr.shape))
        if vr.ndim == 2:
            vr = np.broadcast_to(vr, (rows, *vr.shape))
        if kr.ndim != 3 or kr.shape[0] != rows or kr.shape[2] != d:
            raise SpecError(f"k must be [N, {d}] or [{rows}, N, {d}], got {list(kr.shape)}")
        n = kr.shape[1]
        if vr.ndim != 3 or vr.shape[:2] != (rows, n):
            raise SpecError(f"v must be [{n}, Dv] or [{rows}, {n}, Dv], got {list(vr.shape)}")
        if n < 1:
            raise SpecError("a row needs at least one key")
        if n > self.max_keys():
            raise SpecError(
                f"{n} keys exceed the {self.max_keys()} that acc_fmt {self.acc_fmt} and sum_fmt "
                f"{self.softmax.sum_fmt} hold; add integer bits to acc_fmt"
            )
        if self.dot_width(d) + (self.scale_fmt.width if self.scale is not None else 0) > 62:
            raise SpecError(
                f"the exact q·k product of {d} lanes (x scale) needs more than 62 bits; narrow "
                "q_fmt/k_fmt"
            )
        mk = None
        if mask is not None:
            m = np.asarray(mask)
            if m.dtype != np.bool_:
                raise SpecError(f"mask must be bool (True = masked out), got {m.dtype}")
            try:
                mk = np.broadcast_to(m, (rows, n))
            except ValueError:
                raise SpecError(
                    f"mask {list(m.shape)} does not broadcast to [{rows}, {n}]"
                ) from None
        return qr, kr, vr, mk

    # -- the datapath ------------------------------------------------------------------
    def scores(self, q: npt.ArrayLike, k: npt.ArrayLike) -> RawArray:
        """``s_j``: raw ``score_fmt`` codes ``[R, N]`` of q ``[R, D]`` and k ``[R, N, D]``
        (or ``[N, D]`` shared)."""
        qr = self.q_fmt.check(np.atleast_2d(np.asarray(q)), "q")
        kr = self.k_fmt.check(np.asarray(k), "k")
        if kr.ndim == 2:
            kr = np.broadcast_to(kr, (qr.shape[0], *kr.shape))
        dot = np.einsum("rd,rnd->rn", qr, kr)  # exact in int64 (dot_width <= 62)
        f = self.q_fmt.frac_bits + self.k_fmt.frac_bits
        w = self.dot_width(qr.shape[1])
        if self.scale is not None:
            dot = dot * np.int64(self.scale_raw)
            f += self.scale_fmt.frac_bits
            w += self.scale_fmt.width
        src = FixedFormat(min(w, 63), min(w, 63) - f, True)
        return cast(dot, src, self.score_fmt)

    def model(
        self,
        q: npt.ArrayLike,
        k: npt.ArrayLike,
        v: npt.ArrayLike,
        mask: npt.ArrayLike | None = None,
    ) -> RawArray:
        """Raw ``out_fmt`` codes ``[R, D_v]`` of the fused row, bit-exact (module docstring).

        ``mask`` (bool ``[R, N]`` or broadcastable, True = key masked out).
        """
        qr, kr, vr, mk = self._inputs(q, k, v, mask)
        return self._recurrence(self.scores(qr, kr), vr, mk)

    def model_scores(
        self, s: npt.ArrayLike, v: npt.ArrayLike, mask: npt.ArrayLike | None = None
    ) -> RawArray:
        """The fused row from scores computed elsewhere: raw ``score_fmt`` codes ``[R, N]``
        (e.g. an encoder block's ``Q·Kᵀ`` stage), ``v`` ``[R, N, D_v]`` or ``[N, D_v]``;
        the recurrence and output of :meth:`model`, bit for bit."""
        sr = self.score_fmt.check(np.atleast_2d(np.asarray(s)), "scores")
        rows, n = sr.shape
        vr = self.v_fmt.check(np.asarray(v), "v")
        if vr.ndim == 2:
            vr = np.broadcast_to(vr, (rows, *vr.shape))
        if vr.ndim != 3 or vr.shape[:2] != (rows, n):
            raise SpecError(f"v must be [{n}, Dv] or [{rows}, {n}, Dv], got {list(vr.shape)}")
        if n > self.max_keys():
            raise SpecError(
                f"{n} keys exceed the {self.max_keys()} that acc_fmt {self.acc_fmt} and sum_fmt "
                f"{self.softmax.sum_fmt} hold; add integer bits to acc_fmt"
            )
        mk = None
        if mask is not None:
            m = np.asarray(mask)
            if m.dtype != np.bool_:
                raise SpecError(f"mask must be bool (True = masked out), got {m.dtype}")
            mk = np.broadcast_to(m, (rows, n))
        return self._recurrence(sr, vr, mk)

    def _recurrence(self, s: RawArray, vr: RawArray, mk: npt.NDArray[np.bool_] | None) -> RawArray:
        return self._recurrence_detail(s, vr, mk)[0]

    def skip_stats(
        self, s: npt.ArrayLike, v: npt.ArrayLike, mask: npt.ArrayLike | None = None
    ) -> dict[str, float | int | None]:
        """Threshold skipping on scores ``s`` (as :meth:`model_scores`): ``keys`` (unmasked
        keys), ``skip_fraction`` (skipped / unmasked: the V rows never loaded) and
        ``skip_max_abs`` (max |y - y'| against the row without skipping, output units);
        the last two None when ``softmax.skip_threshold`` is None."""
        sr = self.score_fmt.check(np.atleast_2d(np.asarray(s)), "scores")
        rows, n = sr.shape
        vr = self.v_fmt.check(np.asarray(v), "v")
        if vr.ndim == 2:
            vr = np.broadcast_to(vr, (rows, *vr.shape))
        mk = None if mask is None else np.broadcast_to(np.asarray(mask, bool), (rows, n))
        y, skipped = self._recurrence_detail(sr, vr, mk)
        live = n * rows if mk is None else int((~mk).sum())
        out: dict[str, float | int | None] = {
            "keys": live,
            "skip_fraction": None,
            "skip_max_abs": None,
        }
        if self.softmax.skip_threshold is not None:
            plain = replace(self, softmax=replace(self.softmax, skip_threshold=None))
            y0 = plain._recurrence(sr, vr, mk)
            out["skip_fraction"] = float(skipped.sum() / max(1, live))
            out["skip_max_abs"] = float(np.abs(self.out_fmt.to_float(y - y0)).max())
        return out

    def _recurrence_detail(
        self, s: RawArray, vr: RawArray, mk: npt.NDArray[np.bool_] | None
    ) -> tuple[RawArray, npt.NDArray[np.bool_]]:
        """The fused row's outputs and the ``(R, N)`` flags of the skipped keys."""
        rows, n, dv = vr.shape
        sm = self.softmax
        tabs = sm.tables()
        one = np.int64(1 << sm.sum_fmt.frac_bits)
        up = np.int64(1 << (sm.sum_fmt.frac_bits - sm.exp_fmt.frac_bits))
        fa, fv = self.acc_fmt.frac_bits, self.v_fmt.frac_bits
        a = self.acc_fmt
        wide = FixedFormat(a.width + 1, a.int_bits + 1, True)  # o + term before saturation
        prod_oe = FixedFormat(a.width + sm.exp_fmt.width, a.int_bits + sm.exp_fmt.int_bits, True)
        prod_ev = FixedFormat(
            self.v_fmt.width + sm.exp_fmt.width, self.v_fmt.int_bits + sm.exp_fmt.int_bits, True
        )
        m = np.zeros(rows, np.int64)
        d = np.zeros(rows, np.int64)
        o = np.zeros((rows, dv), np.int64)
        any_ = np.zeros(rows, bool)
        tau = sm.skip_raw
        skipped = np.zeros((rows, n), bool)
        if sm.off_by_one:  # Softmax_1: a zero logit with V = 0 already in the state
            d[:] = one
            any_[:] = True
        for j in range(n):
            sj = s[:, j]
            live = np.ones(rows, bool) if mk is None else ~mk[:, j]
            new = live & (~any_ | (sj > m))
            old = live & ~new
            delta = np.where(any_, np.abs(sj - m), 0)
            if tau:  # BLASST: far below the running max, skipped (no exp, no V load)
                skipped[:, j] = old & (delta > tau)
                old &= ~skipped[:, j]
            e = sm.exp_unit_raw(delta, tabs)
            # new maximum: rescale d and o by E(s_j - m), then add the key at weight 1
            if new.any():
                d_new = sm._rescale(d, e) + one  # the softmax's own R_s
                o_scaled = cast(o * e[:, None], prod_oe, a)
                v_al = vr[:, j, :] << np.int64(fa - fv)
                o_new = cast(o_scaled + v_al, wide, a)
                d = np.where(new, d_new, d)
                o = np.where(new[:, None], o_new, o)
                m = np.where(new, sj, m)
            # otherwise: add E(m - s_j) and E·v_j
            if old.any():
                term = cast(e[:, None] * vr[:, j, :], prod_ev, a)
                o_old = cast(o + term, wide, a)
                d = np.where(old, d + e * up, d)
                o = np.where(old[:, None], o_old, o)
            any_ |= live
        r = sm.recip_raw(np.where(any_, d, one), tabs)
        prod = FixedFormat(a.width + sm.recip_fmt.width, a.int_bits + sm.recip_fmt.int_bits, True)
        y = cast(o * r[:, None], prod, self.out_fmt)
        y[~any_] = 0  # fully masked rows (Softmax_1: o stays 0, so y = 0 as well)
        return y, skipped

    def two_pass_model(
        self,
        q: npt.ArrayLike,
        k: npt.ArrayLike,
        v: npt.ArrayLike,
        mask: npt.ArrayLike | None = None,
    ) -> RawArray:
        """The two-pass schedule on the same scores: ``P = softmax.model(s; mask)`` (the
        buffered row, ``softmax.out_fmt``), then ``P·V`` exact and one cast to ``out_fmt``."""
        qr, kr, vr, mk = self._inputs(q, k, v, mask)
        s = self.scores(qr, kr)
        p = self.softmax.model(s, axis=-1, mask=mk)
        pf = self.softmax.out_fmt
        acc = np.einsum("rn,rnv->rv", p, vr)
        n = vr.shape[1]
        w = pf.width + self.v_fmt.width + max(1, math.ceil(math.log2(max(n, 2)))) + 1
        src = FixedFormat(w, w - pf.frac_bits - self.v_fmt.frac_bits, True)
        return cast(acc, src, self.out_fmt)

    def reference(
        self,
        q: npt.ArrayLike,
        k: npt.ArrayLike,
        v: npt.ArrayLike,
        mask: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.float64]:
        """float64 ``softmax(q·kᵀ·scale; mask)·v`` of the dequantised codes (the exact scale,
        not its quantised code); fully masked rows give 0."""
        qr, kr, vr, mk = self._inputs(q, k, v, mask)
        qf, kf, vf = self.q_fmt.to_float(qr), self.k_fmt.to_float(kr), self.v_fmt.to_float(vr)
        s = np.einsum("rd,rnd->rn", qf, kf) * (1.0 if self.scale is None else self.scale)
        if mk is not None:
            s = np.where(mk, -np.inf, s)
        if self.softmax.off_by_one:  # Softmax_1: a zero logit with V = 0 in front
            s = np.concatenate([np.zeros((s.shape[0], 1)), s], axis=1)
            vf = np.concatenate([np.zeros((vf.shape[0], 1, vf.shape[2])), vf], axis=1)
        mx = np.max(s, axis=1, keepdims=True)
        full = ~np.isfinite(mx[:, 0])
        e = np.exp(s - np.where(np.isfinite(mx), mx, 0.0))
        e = np.where(np.isfinite(s), e, 0.0)
        p = e / np.where(full[:, None], 1.0, e.sum(axis=1, keepdims=True))
        y = np.einsum("rn,rnv->rv", p, vf)
        y[full] = 0.0
        return y

    def buffer_bits(self, n: int, dv: int) -> dict[str, int]:
        """Storage per query row, in bits: the fused row's state (``m``, ``d``, ``o``) and
        the two-pass schedule's (the ``n`` scores, then ``V`` held for ``P·V`` after the
        reciprocal, plus ``m``, ``d`` and the ``D_v`` accumulators)."""
        sm = self.softmax
        sw, dw = self.score_fmt.width, sm.sum_fmt.width
        fused = sw + dw + dv * self.acc_fmt.width
        acc_w = sm.out_fmt.width + self.v_fmt.width + math.ceil(math.log2(max(n, 2)))
        two_pass = n * sw + n * dv * self.v_fmt.width + sw + dw + dv * acc_w
        return {"fused": fused, "two_pass": two_pass}
