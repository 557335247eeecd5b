"""Seeded input sets for measuring approximations.

An :class:`InputSet` is a frozen description (distribution, shape, seed);
:meth:`InputSet.generate` turns it into a :class:`Batch` for one spec: raw
codes of the spec's ``in_fmt``, their real values, and for LayerNorm the
affine parameters. The float64 reference is evaluated on the *quantised*
input (``batch.x``), so measured errors are those of the approximation, not of
the input quantisation.

Distributions (``dist``), all over ``rows`` rows of length ``n`` (8..1024):

* ``uniform`` -- every raw code of ``in_fmt`` equally likely; with ``low`` /
  ``high`` given, reals uniform on ``[low, high]`` then quantised;
* ``gaussian`` -- ``mean + sigma * N(0, 1)``;
* ``heavy`` -- attention-like logits: ``mean + sigma * t_df`` (Student-t with
  ``df`` degrees of freedom, default 3) plus ``spikes`` entries per row
  (default ``max(1, n // 64)``, at random positions) replaced by
  ``mean + sigma * U(4, 8)`` -- a few keys that dominate the row, as in trained
  attention heads;
* ``file`` -- a user array from ``.npy`` or ``.npz`` (``key`` names the array
  in an ``.npz``; optional when it holds exactly one). The last axis is the row;
  a 1-D array is one row. ``rows``/``n``/``seed`` are ignored.

Generated reals are clipped to ``[in_fmt.min, in_fmt.max]`` and then quantised
with the format's rounding mode (an input set describes a distribution, not an
overflow test). File arrays are clipped the same way.

LayerNorm sets also carry ``gamma``/``beta``: ``affine="identity"`` (ones and
zeros, passed as ``None``) or ``"random"`` (seeded, gamma ~ U(0.5, 1.5),
beta ~ N(0, 0.5²), quantised to the spec's ``gamma_fmt``/``beta_fmt``; the
reference gets the real values of those same codes).
"""

from __future__ import annotations

import dataclasses
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx.base import ApproxSpec, Operator, SpecError
from hwapprox.fixed import FixedFormat

__all__ = ["DISTRIBUTIONS", "MAX_ROW", "MIN_ROW", "Batch", "InputSet", "load_array"]

DISTRIBUTIONS = ("uniform", "gaussian", "heavy", "file")
AFFINES = ("identity", "random")
#: Row lengths the generated sets allow.
MIN_ROW, MAX_ROW = 8, 1024
#: At most this many elements per generated set (keeps sweeps bounded).
MAX_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class Batch:
    """Inputs for one evaluation of one spec.

    ``raw`` are ``in_fmt`` codes, ``x`` their real values; ``model_kw`` /
    ``ref_kw`` are the extra keyword arguments of ``spec.model`` /
    ``spec.reference`` (LayerNorm gamma/beta as raw codes / reals).
    """

    raw: npt.NDArray[np.int64]
    x: npt.NDArray[np.float64]
    model_kw: dict[str, Any] = field(default_factory=dict)
    ref_kw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class InputSet:
    """A seeded input distribution (see the module docstring)."""

    dist: str = "gaussian"
    rows: int = 256
    n: int = 64
    sigma: float = 2.0
    mean: float = 0.0
    low: float | None = None
    high: float | None = None
    df: float = 3.0
    spikes: int | None = None
    path: str | None = None
    key: str | None = None
    affine: str = "identity"
    seed: int = 0

    def __post_init__(self) -> None:
        # canonical types, so 2 and 2.0 give the same set (and the same sweep key)
        for name in ("sigma", "mean", "low", "high", "df"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, _number(name, v, float))
        for name in ("rows", "n", "spikes", "seed"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, _number(name, v, int))
        if self.dist not in DISTRIBUTIONS:
            raise SpecError(
                f"unknown input distribution {self.dist!r}; expected one of "
                f"{', '.join(DISTRIBUTIONS)}"
            )
        if self.affine not in AFFINES:
            raise SpecError(f"affine={self.affine!r}; expected one of {', '.join(AFFINES)}")
        if self.dist == "file":
            if not self.path:
                raise SpecError("dist='file' needs path= (a .npy or .npz file)")
            return
        if not (MIN_ROW <= int(self.n) <= MAX_ROW):
            raise SpecError(f"row length n={self.n} is outside [{MIN_ROW}, {MAX_ROW}]")
        if int(self.rows) < 1:
            raise SpecError(f"rows={self.rows} must be >= 1")
        if self.rows * self.n > MAX_ELEMENTS:
            raise SpecError(
                f"rows*n = {self.rows * self.n} exceeds {MAX_ELEMENTS} elements; use fewer rows"
            )
        if not (math.isfinite(self.sigma) and self.sigma > 0):
            raise SpecError(f"sigma={self.sigma} must be a positive finite number")
        if not math.isfinite(self.mean):
            raise SpecError(f"mean={self.mean} must be finite")
        if (self.low is None) != (self.high is None):
            raise SpecError("give both low= and high= (or neither) for a uniform range")
        if self.low is not None and not self.low < self.high:  # type: ignore[operator]
            raise SpecError(f"low={self.low} must be below high={self.high}")
        if not self.df > 0:
            raise SpecError(f"df={self.df} must be positive")
        if self.spikes is not None and not (0 <= self.spikes <= self.n):
            raise SpecError(f"spikes={self.spikes} must be in [0, n={self.n}]")

    # -- naming ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Only the fields that matter for this distribution (stable, for keys)."""
        d = dataclasses.asdict(self)
        keep = {"dist", "affine", "seed"}
        keep |= {
            "uniform": {"rows", "n", "low", "high"},
            "gaussian": {"rows", "n", "sigma", "mean"},
            "heavy": {"rows", "n", "sigma", "mean", "df", "spikes"},
            "file": {"path", "key"},
        }[self.dist]
        return {k: v for k, v in d.items() if k in keep and v is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InputSet:
        """Inverse of :meth:`to_dict`; unknown keys are an error naming the fields."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SpecError(
                f"input set has no field(s) {', '.join(unknown)}; "
                f"fields: {', '.join(sorted(known))}"
            )
        return cls(**data)

    def label(self) -> str:
        """Short human label, e.g. ``gaussian(sigma=2,n=64)``."""
        d = self.to_dict()
        d.pop("dist")
        if d.get("affine") == "identity":
            d.pop("affine")
        d.pop("seed", None)
        inner = ",".join(f"{k}={_fmt_num(v)}" for k, v in d.items())
        return f"{self.dist}({inner})"

    # -- generation -----------------------------------------------------------
    def reals(self, fmt: FixedFormat) -> npt.NDArray[np.float64]:
        """The real-valued samples before quantisation (clipped to ``fmt``: how many
        were outside it, :meth:`saturation` counts)."""
        return np.clip(self._unclipped(fmt), float(fmt.min), float(fmt.max))

    def saturation(self, fmt: FixedFormat) -> tuple[int, int]:
        """``(outside, total)``: samples beyond ``fmt``'s range by more than half an LSB
        (they saturate to its end codes instead of rounding), and all samples."""
        arr = self._unclipped(fmt)
        half = float(fmt.lsb) / 2
        out = (arr < float(fmt.min) - half) | (arr > float(fmt.max) + half)
        return int(np.count_nonzero(out)), int(arr.size)

    def _unclipped(self, fmt: FixedFormat) -> npt.NDArray[np.float64]:
        if self.dist == "file":
            arr = load_array(self.path or "", self.key)
            if arr.shape[-1] < MIN_ROW:
                raise SpecError(
                    f"{self.path}: rows of length {arr.shape[-1]} (shape {list(arr.shape)}); "
                    f"the metrics need rows of at least {MIN_ROW} values along the last axis "
                    "(as --n does): give a longer array or reshape it"
                )
        else:
            rng = np.random.default_rng(self.seed)
            shape = (int(self.rows), int(self.n))
            if self.dist == "uniform":
                if self.low is None:
                    raw = rng.integers(fmt.min_raw, fmt.max_raw, size=shape, endpoint=True)
                    return fmt.to_float(raw)
                arr = rng.uniform(self.low, self.high, size=shape)
            elif self.dist == "gaussian":
                arr = self.mean + self.sigma * rng.standard_normal(shape)
            else:  # heavy
                arr = self.mean + self.sigma * rng.standard_t(self.df, size=shape)
                k = max(1, self.n // 64) if self.spikes is None else self.spikes
                if k:
                    pos = np.argsort(rng.random(shape), axis=1)[:, :k]
                    vals = self.mean + self.sigma * rng.uniform(4.0, 8.0, size=(shape[0], k))
                    np.put_along_axis(arr, pos, vals, axis=1)
        return arr

    def generate(self, spec: ApproxSpec) -> Batch:
        """Raw ``spec.in_fmt`` codes (and LayerNorm gamma/beta) for ``spec``."""
        fmt = spec.in_fmt
        raw = fmt.quantize(self.reals(fmt))
        x = fmt.to_float(raw)
        model_kw: dict[str, Any] = {}
        ref_kw: dict[str, Any] = {}
        if spec.operator is Operator.LAYERNORM and self.affine == "random":
            n = raw.shape[-1]
            rng = np.random.default_rng([self.seed, 1])
            gfmt = FixedFormat.parse(spec.gamma_fmt)  # type: ignore[attr-defined]
            bfmt = FixedFormat.parse(spec.beta_fmt)  # type: ignore[attr-defined]
            g_raw = gfmt.quantize(
                np.clip(rng.uniform(0.5, 1.5, n), float(gfmt.min), float(gfmt.max))
            )
            b_raw = bfmt.quantize(
                np.clip(rng.normal(0.0, 0.5, n), float(bfmt.min), float(bfmt.max))
            )
            model_kw = {"gamma": g_raw, "beta": b_raw}
            ref_kw = {"gamma": gfmt.to_float(g_raw), "beta": bfmt.to_float(b_raw)}
        return Batch(raw=raw, x=x, model_kw=model_kw, ref_kw=ref_kw)


def _number(name: str, v: Any, kind: type) -> Any:
    if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
        raise SpecError(f"{name}={v!r} must be a number")
    if kind is int and float(v) != int(v):
        raise SpecError(f"{name}={v!r} must be an integer")
    return kind(v)


def _fmt_num(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def load_array(path: str | Path, key: str | None = None) -> npt.NDArray[np.float64]:
    """A real array from ``.npy``/``.npz`` with errors that say what to fix.

    Refuses missing files, other suffixes, missing/ambiguous ``.npz`` keys,
    object/complex arrays, empty or 0-d arrays and non-finite values.
    """
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"input file {str(p)!r} does not exist (give a .npy or .npz file)")
    suffix = p.suffix.lower()
    if suffix not in (".npy", ".npz"):
        raise SpecError(f"input file {str(p)!r} must be .npy or .npz, got suffix {suffix!r}")
    try:
        if suffix == ".npy":
            if key is not None:
                raise SpecError(f"key={key!r} applies to .npz files only; {str(p)!r} is .npy")
            arr = np.load(p, allow_pickle=False)
        else:
            with np.load(p, allow_pickle=False) as npz:
                names = list(npz.files)
                if key is None:
                    if len(names) != 1:
                        raise SpecError(
                            f"{str(p)!r} holds {len(names)} arrays ({', '.join(names) or 'none'});"
                            " choose one with key="
                        )
                    key = names[0]
                if key not in names:
                    raise SpecError(
                        f"{str(p)!r} has no array {key!r}; arrays: {', '.join(names) or 'none'}"
                    )
                arr = npz[key]
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        if isinstance(exc, SpecError):
            raise
        raise SpecError(f"cannot read {str(p)!r} as a numpy array: {exc}") from None
    if arr.dtype.kind not in "fiub":
        raise SpecError(f"{str(p)!r}: array dtype {arr.dtype} is not real numbers")
    if arr.ndim == 0 or arr.size == 0:
        raise SpecError(
            f"{str(p)!r}: array of shape {arr.shape} is empty or 0-d; need at least one row"
        )
    out = arr.astype(np.float64)
    if not np.isfinite(out).all():
        raise SpecError(f"{str(p)!r}: array holds NaN or inf values")
    return out
