"""A weight-stationary linear layer in RTL: ``hwa_linear`` configured from a
:class:`~hwapprox.approx.linear.MatMulSpec` and its raw weights, simulated against
:meth:`MatMulSpec.model <hwapprox.approx.linear.MatMulSpec.model>`.

Maths (the model's, bit for bit): per token ``x`` (``K`` raw ``a_fmt`` codes),
``y_j = out_fmt(acc_K)``, ``acc_0 = accum_fmt(b_j)`` (or 0), ``acc_{k+1} =
accum_fmt(acc_k + x_k·W[k][j])`` for ``k = 0..K-1``. :func:`linear_params` derives
every width and shift of the datapath from the formats (the reasoning next to each);
:func:`linear_mems` writes the weight and bias ROMs from the same integers the model
takes. ``P`` multipliers compute ``P`` output columns at once, one input code per cycle:
**cycles per token = K·ceil(N/P)** (:func:`cycles_per_token`), latency ``K·ceil(N/P) +
6`` cycles from the input transfer to the output transfer (:data:`LINEAR_LATENCY_EXTRA`;
the weight ROM's word is registered once more after the RAM's read register, so the
RAM's clock-to-out and the multiplier are in different cycles).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx.base import SpecError
from hwapprox.approx.hwparams import overflow_code, rounding_code
from hwapprox.approx.linear import MatMulSpec
from hwapprox.rtl_sim.runner import RTL_DIR, BuildInfo, SimResult, build, lint, run_job

__all__ = [
    "LINEAR_LATENCY_EXTRA",
    "LINEAR_SOURCES",
    "LINEAR_TOP",
    "LinearLayer",
    "cycles_per_token",
    "linear_mems",
    "linear_params",
    "memh_lanes",
    "simulate_linear",
]

LINEAR_TOP = "hwa_linear"
LINEAR_SOURCES = (
    "hwa_pkg.sv",
    "hwa_rom.sv",
    "hwa_round_shift.sv",
    "hwa_sat.sv",
    "hwa_cast.sv",
    "hwa_skid.sv",
    "hwa_linear.sv",
)
#: input transfer -> output transfer of a token into an idle unit = K·G + this
LINEAR_LATENCY_EXTRA = 6

RawArray = npt.NDArray[np.int64]


def cycles_per_token(k: int, n: int, parallel: int) -> int:
    """``hwa_linear``'s issue cycles per token: ``K·ceil(N/P)`` (its throughput)."""
    return k * -(-n // parallel)


def linear_params(spec: MatMulSpec, k: int, n: int, parallel: int) -> dict[str, int]:
    """The SV parameters of ``hwa_linear`` for ``spec`` with ``k`` inputs, ``n`` outputs
    and ``parallel`` multipliers (``1 <= parallel <= n``).

    * ``A_W``/``A_SIGNED``: the input code; ``W_W``, ``B_W``: weight and bias codes
      (signed formats only); the product ``x·w`` is exact in ``A_W + 1 + W_W`` bits.
    * The sum ``acc + x·w`` is exact on the finer grid ``F_s = max(F_acc, F_a + F_w)``:
      ``A_SHL = F_s - F_acc``, ``P_SHL = F_s - F_a - F_w``, ``SUM_W = max(ACC_W + A_SHL,
      PROD_W + P_SHL) + 1`` (the sum of two such numbers needs one bit more), then cast
      back by ``A_SHL`` with the accumulator's rounding and overflow.
    * ``BIAS_SHIFT = F_b - F_acc`` and ``Y_SHIFT = F_acc - F_y``: ``hwa_cast`` shifts
      (positive: right, rounding with the target's mode; negative: exact left shift).
    """
    if spec.transpose_b:
        raise SpecError("hwa_linear takes W as [K, N] (transpose_b=False)")
    if not 1 <= parallel <= n:
        raise SpecError(f"parallel must be in 1..N={n}, got {parallel}")
    if k < 1 or n < 1:
        raise SpecError(f"hwa_linear needs K, N >= 1, got K={k}, N={n}")
    af, wf, accf, yf = spec.a_fmt, spec.b_fmt, spec.accum_fmt, spec.out_fmt
    bf = spec.bias_fmt
    if not wf.signed or (bf is not None and not bf.signed) or not accf.signed:
        raise SpecError(
            f"hwa_linear needs signed weight, bias and accumulator formats, got {wf}, {bf}, {accf}"
        )
    if accf.width > 62 or yf.width > 62:
        raise SpecError(f"hwa_linear: accumulator/output wider than 62 bits ({accf}, {yf})")
    prod_w = af.width + 1 + wf.width
    f_p = af.frac_bits + wf.frac_bits
    f_s = max(accf.frac_bits, f_p)
    a_shl, p_shl = f_s - accf.frac_bits, f_s - f_p
    return {
        "K": k,
        "N": n,
        "P": parallel,
        "A_W": af.width,
        "A_SIGNED": int(af.signed),
        "W_W": wf.width,
        "B_W": bf.width if bf is not None else 2,
        "HAS_BIAS": int(bf is not None),
        "BIAS_SHIFT": (bf.frac_bits - accf.frac_bits) if bf is not None else 0,
        "ACC_W": accf.width,
        "ACC_RND": rounding_code(accf.rounding),
        "ACC_OVF": overflow_code(accf.overflow),
        "A_SHL": a_shl,
        "P_SHL": p_shl,
        "SUM_W": max(accf.width + a_shl, prod_w + p_shl) + 1,
        "Y_W": yf.width,
        "Y_SIGNED": int(yf.signed),
        "Y_SHIFT": accf.frac_bits - yf.frac_bits,
        "Y_RND": rounding_code(yf.rounding),
        "Y_OVF": overflow_code(yf.overflow),
    }


def memh_lanes(words: npt.ArrayLike, lane_w: int) -> str:
    """``$readmemh`` text of wide words: ``words`` ``[depth, lanes]`` of raw codes, each
    lane ``lane_w``-bit two's complement, lane 0 in the low bits (no 63-bit limit)."""
    w = np.asarray(words, dtype=np.int64)
    lanes = w.shape[1]
    lo, hi = int(w.min(initial=0)), int(w.max(initial=0))
    if lo < -(1 << (lane_w - 1)) or hi >= (1 << lane_w):
        raise SpecError(f"ROM values in [{lo}, {hi}] do not fit {lane_w}-bit lanes")
    mask = (1 << lane_w) - 1
    digits = (lanes * lane_w + 3) // 4
    lines = []
    for row in w.tolist():
        word = 0
        for i, v in enumerate(row):
            word |= (int(v) & mask) << (i * lane_w)
        lines.append(f"{word:0{digits}x}\n")
    return "".join(lines)


def linear_mems(
    spec: MatMulSpec, weights: npt.ArrayLike, bias: npt.ArrayLike | None, parallel: int
) -> dict[str, str]:
    """``W_FILE`` (``G·K`` words: word ``g·K + k`` = ``W[k][g·P + l]`` in lane ``l``, 0
    past ``N``) and ``B_FILE`` (``G`` words of ``b[g·P + l]``) for ``hwa_linear``, from
    the raw codes ``weights`` ``[K, N]`` and ``bias`` ``[N]`` (checked against the
    spec's formats)."""
    w = spec.b_fmt.check(np.asarray(weights), "weights")
    if w.ndim != 2:
        raise SpecError(f"weights must be [K, N], got shape {w.shape}")
    k, n = w.shape
    g = -(-n // parallel)
    wp = np.zeros((k, g * parallel), np.int64)
    wp[:, :n] = w
    words = wp.reshape(k, g, parallel).transpose(1, 0, 2).reshape(g * k, parallel)
    mems = {"W_FILE": memh_lanes(words, spec.b_fmt.width)}
    if spec.bias_fmt is not None:
        if bias is None:
            raise SpecError("the spec has a bias_fmt: give the bias codes")
        b = spec.bias_fmt.check(np.asarray(bias), "bias")
        if b.shape != (n,):
            raise SpecError(f"bias must be [{n}], got shape {b.shape}")
        bp = np.zeros(g * parallel, np.int64)
        bp[:n] = b
        mems["B_FILE"] = memh_lanes(bp.reshape(g, parallel), spec.bias_fmt.width)
    return mems


@dataclass(frozen=True, eq=False)
class LinearLayer:
    """One weight-stationary layer: the spec, raw ``weights`` ``[K, N]`` (``b_fmt``),
    raw ``bias`` ``[N]`` (``bias_fmt``; None without one) and ``parallel`` multipliers."""

    spec: MatMulSpec
    weights: RawArray
    bias: RawArray | None
    parallel: int

    @property
    def k(self) -> int:
        return int(np.asarray(self.weights).shape[0])

    @property
    def n(self) -> int:
        return int(np.asarray(self.weights).shape[1])

    @property
    def cycles_per_token(self) -> int:
        """``K·ceil(N/P)`` (see the module docstring)."""
        return cycles_per_token(self.k, self.n, self.parallel)

    def config(self) -> tuple[dict[str, int | str], dict[str, str]]:
        """SV parameters and ``$readmemh`` files."""
        params: dict[str, int | str] = dict(linear_params(self.spec, self.k, self.n, self.parallel))
        return params, linear_mems(self.spec, self.weights, self.bias, self.parallel)

    def model(self, x: npt.ArrayLike) -> RawArray:
        """Raw ``[T, K]`` input codes -> raw ``[T, N]`` outputs (``MatMulSpec.model``)."""
        return self.spec.model(x, self.weights, self.bias)


def build_linear(
    layer: LinearLayer,
    mems: dict[str, str] | None = None,
    *,
    defines: dict[str, int | str] | None = None,
    extra_sources: tuple[Path, ...] = (),
) -> BuildInfo:
    """Build (or reuse) the Verilator model of ``layer`` (``mems`` overrides its ROM
    files: a falsified weight file for the negative test; ``defines`` and
    ``extra_sources``: e.g. ``HWA_ECP5_DSP`` with a test model of the vendor primitive)."""
    params, own = layer.config()
    srcs = [*extra_sources, *(RTL_DIR / s for s in LINEAR_SOURCES)]
    return build(LINEAR_TOP, srcs, params, mems or own, defines=defines)


def lint_linear(layer: LinearLayer) -> str:
    """``verilator --lint-only -Wall`` at ``layer``'s parameters (ROM files aside)."""
    params, _ = layer.config()
    return lint(LINEAR_TOP, [RTL_DIR / s for s in LINEAR_SOURCES], params)


def simulate_linear(
    layer: LinearLayer,
    x: npt.ArrayLike,
    *,
    last: npt.ArrayLike | None = None,
    idle: float = 0.0,
    backpressure: float = 0.0,
    seed: int = 0,
    probe_ready: bool = False,
    falsify_weight: tuple[int, int] | None = None,
    defines: dict[str, int | str] | None = None,
    extra_sources: tuple[Path, ...] = (),
) -> SimResult:
    """Stream tokens ``x`` ``[T, K]`` (raw ``a_fmt`` codes) through ``hwa_linear`` and
    compare every output lane with :meth:`LinearLayer.model`.

    ``last``: the ``tlast`` bit of each token (default: the final token only).
    ``idle``/``backpressure``: per-cycle pause probabilities of the input and output.
    ``falsify_weight=(k, j)``: the ROM file gets ``W[k][j]`` changed by one code (the
    model keeps the true weight), so the comparison must fail: a test of the test.
    ``defines``, ``extra_sources``: as :func:`build_linear`.
    ``stats`` (see :mod:`hwapprox.rtl_sim.tb.token_test`) holds ``matched``,
    ``mismatches``, ``latency``, ``out_gaps`` and ``cycles``.
    """
    xr = layer.spec.a_fmt.check(np.atleast_2d(np.asarray(x)), "linear input")
    if xr.ndim != 2 or xr.shape[1] != layer.k:
        raise SpecError(f"linear input must be [T, {layer.k}], got {list(xr.shape)}")
    expected = layer.model(xr)
    mems = None
    if falsify_weight is not None:
        kk, jj = falsify_weight
        w = np.array(layer.weights, dtype=np.int64)
        fmt = layer.spec.b_fmt
        w[kk, jj] = w[kk, jj] + 1 if w[kk, jj] < fmt.max_raw else w[kk, jj] - 1
        mems = linear_mems(layer.spec, w, layer.bias, layer.parallel)
    info = build_linear(layer, mems, defines=defines, extra_sources=extra_sources)
    t = xr.shape[0]
    lst = np.zeros(t, bool) if last is None else np.asarray(last, bool)
    if last is None:
        lst[-1] = True
    job: dict[str, Any] = {
        "tokens": xr.tolist(),
        "last": lst.astype(int).tolist(),
        "expected": expected.tolist(),
        "in_w": layer.spec.a_fmt.width,
        "out_w": layer.spec.out_fmt.width,
        "out_signed": layer.spec.out_fmt.signed,
        "idle": float(idle),
        "backpressure": float(backpressure),
        "seed": int(seed),
        "probe_ready": bool(probe_ready),
        "cycles_hint": layer.cycles_per_token + LINEAR_LATENCY_EXTRA,
    }
    return run_job(info, job, test_module="hwapprox.rtl_sim.tb.token_test")
