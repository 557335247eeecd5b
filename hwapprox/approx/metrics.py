"""Error metrics of an approximation against its float64 reference.

:func:`compute_metrics` takes the approximation's real outputs ``y`` and the
float64 reference ``ref`` (same shape) and returns one :class:`Metrics`:

* ``max_abs`` = max |y - ref|, ``mean_abs`` = mean |y - ref|,
  ``rms`` = sqrt(mean (y - ref)^2);
* ``max_lsb`` = ``max_abs`` / LSB of the output format (the output LSB is
  ``2**-frac_bits``; a correctly rounded output reaches 0.5 at best);
* ``qsnr_db`` = 10 log10(sum ref^2 / sum (y - ref)^2) (``inf`` when the error
  is exactly zero, ``-inf``/``nan`` never: an all-zero reference with a
  non-zero error gives ``-inf``);
* for softmax only (``softmax=True``), per row along ``axis`` and averaged
  over rows unless stated:

  - ``top1`` -- fraction of rows whose ``argmax`` agrees; both argmaxes take
    the *first* index of the maximum (numpy rule), so a quantised output that
    ties several entries agrees only when the first of them is the
    reference's first maximum;
  - ``kl`` -- mean over rows of KL(ref || q) = sum_i ref_i log(ref_i / q_i)
    in nats. Zero-output rule: ``q = max(y, eps)`` with ``eps`` = half an
    output LSB (``kl_floor`` overrides it), then ``q`` is renormalised to sum 1
    over the row, so KL >= 0 and finite; terms with ``ref_i = 0`` contribute 0.
    Row-sum errors are reported separately by ``sum_dev`` rather than
    folded into KL;
  - ``sum_dev`` -- max over rows of |sum_i y_i - 1|, and ``mean_sum_dev``
    the mean over rows.

Everything is vectorised numpy in float64.

Example
-------
>>> m = compute_metrics([0.5, 0.25], [0.5, 0.5], lsb=0.125)
>>> (m.max_abs, m.max_lsb, m.mean_abs)
(0.25, 2.0, 0.125)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.fixed import FixedFormat

__all__ = [
    "LOG_CODE_FORMS",
    "METRIC_NAMES",
    "Metrics",
    "compute_metrics",
    "decode_log_code",
    "log_code_metrics",
]

#: Names of every metric field, in report order.
METRIC_NAMES: tuple[str, ...] = (
    "max_abs",
    "mean_abs",
    "rms",
    "max_lsb",
    "qsnr_db",
    "top1",
    "kl",
    "sum_dev",
    "mean_sum_dev",
)


@dataclass(frozen=True, slots=True)
class Metrics:
    """Errors of one evaluation (see the module docstring for definitions).

    Softmax-only fields are ``None`` for other operators; ``n`` is the number
    of output elements and ``lsb`` the output LSB the ``max_lsb`` is counted in.
    """

    n: int
    lsb: float
    max_abs: float
    mean_abs: float
    rms: float
    max_lsb: float
    qsnr_db: float
    top1: float | None = None
    kl: float | None = None
    sum_dev: float | None = None
    mean_sum_dev: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-friendly: ``inf`` stays a float)."""
        return dataclasses.asdict(self)

    def worst(self, other: Metrics) -> Metrics:
        """Element-wise worst of two evaluations (max errors, min QSNR/top-1)."""
        vals: dict[str, Any] = {"n": self.n + other.n, "lsb": self.lsb}
        for name in ("max_abs", "mean_abs", "rms", "max_lsb", "kl", "sum_dev", "mean_sum_dev"):
            vals[name] = _pick(getattr(self, name), getattr(other, name), max)
        for name in ("qsnr_db", "top1"):
            vals[name] = _pick(getattr(self, name), getattr(other, name), min)
        return Metrics(**vals)


def _pick(a: float | None, b: float | None, fn: Any) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return float(fn(a, b))


def compute_metrics(
    y: npt.ArrayLike,
    ref: npt.ArrayLike,
    *,
    lsb: float | None = None,
    out_fmt: FixedFormat | str | None = None,
    softmax: bool = False,
    axis: int = -1,
    kl_floor: float | None = None,
) -> Metrics:
    """Metrics of real outputs ``y`` against the float64 reference ``ref``.

    Give the output LSB either as ``lsb`` or through ``out_fmt``. With
    ``softmax=True`` the row metrics (top-1, KL, row-sum deviation) are
    computed along ``axis``.
    """
    yy = np.asarray(y, dtype=np.float64)
    rr = np.asarray(ref, dtype=np.float64)
    if yy.shape != rr.shape:
        raise ValueError(f"output shape {yy.shape} differs from reference shape {rr.shape}")
    if yy.size == 0:
        raise ValueError("cannot compute metrics of an empty array")
    if not (np.isfinite(yy).all() and np.isfinite(rr).all()):
        raise ValueError("outputs and reference must be finite (got NaN or inf)")
    if out_fmt is not None:
        fmt_lsb = float(FixedFormat.parse(out_fmt).lsb)
        if lsb is not None and lsb != fmt_lsb:
            raise ValueError(f"lsb={lsb} disagrees with out_fmt {out_fmt} (LSB {fmt_lsb})")
        lsb = fmt_lsb
    if lsb is None or not lsb > 0:
        raise ValueError(f"need a positive output LSB (lsb= or out_fmt=), got lsb={lsb}")

    err = yy - rr
    aerr = np.abs(err)
    max_abs = float(aerr.max())
    sq_err = float(np.sum(err * err))
    sq_ref = float(np.sum(rr * rr))
    if sq_err == 0.0:
        qsnr = math.inf
    elif sq_ref == 0.0:
        qsnr = -math.inf
    else:
        qsnr = 10.0 * math.log10(sq_ref / sq_err)
    base: dict[str, Any] = {
        "n": int(yy.size),
        "lsb": float(lsb),
        "max_abs": max_abs,
        "mean_abs": float(aerr.mean()),
        "rms": math.sqrt(sq_err / yy.size),
        "max_lsb": max_abs / lsb,
        "qsnr_db": qsnr,
    }
    if softmax:
        if yy.ndim == 0:
            raise ValueError("softmax metrics need at least one axis")
        y2 = np.moveaxis(yy, axis, -1).reshape(-1, yy.shape[axis])
        r2 = np.moveaxis(rr, axis, -1).reshape(-1, rr.shape[axis])
        base["top1"] = float(np.mean(np.argmax(y2, axis=-1) == np.argmax(r2, axis=-1)))
        floor = 0.5 * lsb if kl_floor is None else float(kl_floor)
        if not floor > 0:
            raise ValueError(f"kl_floor must be positive, got {kl_floor}")
        q = np.maximum(y2, floor)
        q = q / q.sum(axis=-1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(r2 > 0, r2 * np.log(np.where(r2 > 0, r2, 1.0) / q), 0.0)
        base["kl"] = float(np.mean(terms.sum(axis=-1)))
        dev = np.abs(y2.sum(axis=-1) - 1.0)
        base["sum_dev"] = float(dev.max())
        base["mean_sum_dev"] = float(dev.mean())
    return Metrics(**base)


# -- log2-quantised softmax outputs (RepQ-ViT) --------------------------------------------
#: output code forms of the softmax specs' ``out_code`` option, besides ``"linear"``
LOG_CODE_FORMS: tuple[str, ...] = ("log2", "log2sqrt2")


def decode_log_code(codes: npt.ArrayLike, form: str, bits: int) -> npt.NDArray[np.float64]:
    """Probabilities of ``bits``-bit log codes (``SoftmaxSpec.out_code``).

    ``form="log2"``: code ``c`` -> ``2^-c``; ``"log2sqrt2"`` (RepQ-ViT's log√2
    quantiser): ``c`` -> ``2^(-c/2)``. The top code ``2^bits - 1`` is the zero
    code and decodes to exactly 0 (a deviation from RepQ-ViT, whose top code is the
    smallest power: here it means "no contribution", so masked and skipped elements
    stay exact zeros).

    >>> decode_log_code([0, 1, 3, 15], "log2", 4).tolist()
    [1.0, 0.5, 0.125, 0.0]
    >>> decode_log_code([2, 3], "log2sqrt2", 4).round(4).tolist()
    [0.5, 0.3536]
    """
    if form not in LOG_CODE_FORMS:
        raise ValueError(f"form must be one of {', '.join(LOG_CODE_FORMS)}, got {form!r}")
    c = np.asarray(codes, dtype=np.int64)
    zero = (1 << bits) - 1
    if c.size and (int(c.min()) < 0 or int(c.max()) > zero):
        raise ValueError(f"log codes must lie in [0, {zero}] for bits={bits}")
    step = 1.0 if form == "log2" else 0.5
    out = np.exp2(-step * c.astype(np.float64))
    out[c == zero] = 0.0
    return out  # type: ignore[no-any-return]


def log_code_metrics(
    codes: npt.ArrayLike,
    ref: npt.ArrayLike,
    form: str,
    bits: int,
    *,
    axis: int = -1,
) -> Metrics:
    """Error of log-coded softmax outputs in the probability domain: the codes are
    decoded (:func:`decode_log_code`) and compared with the float64 probabilities
    ``ref`` (:func:`compute_metrics` with ``softmax=True``). ``lsb`` is the
    coarsest decoded step at 1.0 (``1 - 2^-1`` for log2, ``1 - 2^-0.5`` for log√2),
    so ``max_lsb`` reads in units of the code's largest gap."""
    y = decode_log_code(codes, form, bits)
    lsb = 0.5 if form == "log2" else 1.0 - 2.0**-0.5
    return compute_metrics(y, ref, lsb=lsb, softmax=True, axis=axis)
