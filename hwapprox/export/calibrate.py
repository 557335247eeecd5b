"""Sample inputs and calibration of site input ranges.

:func:`prepare_inputs` checks user inputs (``.npz`` or a dict) against the
model's graph inputs -- names, static dims, dtypes -- or generates seeded ones
when none are given (refusing dynamic dims, whose size only the user knows).
:func:`calibrate` runs the unmodified model once on onnxruntime, recording
each site's input and output; :class:`SiteStats` summarises the input and
:meth:`SiteStats.choose_format` picks ``ap_fixed<W, I>`` with
``I = floor(log2(max|x|)) + 2 + headroom`` -- the smallest ``I`` whose signed
range ``[-2^(I-1), 2^(I-1))`` holds ``max|x|`` (one sign bit), plus
``headroom`` extra integer bits for inputs larger than the calibration data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from onnx import ModelProto, TensorProto, helper

from hwapprox.export.emulate import trace_model
from hwapprox.export.errors import ExportError
from hwapprox.export.graph import GraphIndex
from hwapprox.export.patterns import Site
from hwapprox.fixed import FixedFormat, Overflow, Rounding

__all__ = ["PERCENTILES", "RANGE_STATS", "SiteStats", "calibrate", "graph_inputs", "prepare_inputs"]

#: Percentiles recorded per site.
PERCENTILES = (0.1, 1.0, 50.0, 99.0, 99.9)
#: Range statistics :meth:`SiteStats.choose_format` accepts.
RANGE_STATS = ("max", "p99.9", "p99")


def graph_inputs(model: ModelProto) -> list[tuple[str, int, tuple[int | str | None, ...]]]:
    """``(name, elem_type, dims)`` of the real inputs (initializers excluded)."""
    inits = {i.name for i in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        dims: list[int | str | None] = []
        for d in t.shape.dim:
            if d.HasField("dim_value"):
                dims.append(int(d.dim_value))
            else:
                dims.append(d.dim_param or None)
        out.append((vi.name, t.elem_type, tuple(dims)))
    return out


def _np_dtype(elem_type: int) -> np.dtype:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception:
        raise ExportError(
            f"unsupported input element type {TensorProto.DataType.Name(elem_type)}"
        ) from None


def _fmt_shape(dims: tuple[int | str | None, ...]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _index_bound(model: ModelProto, name: str) -> int | None:
    """Upper bound for integer inputs used as Gather indices (the table length)."""
    g = GraphIndex(model)
    bounds = []
    for node in g.consumers.get(name, []):
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] == name:
            shape = g.shape.get(node.input[0])
            axis = 0
            for a in node.attribute:
                if a.name == "axis":
                    axis = int(a.i)
            if shape is not None and isinstance(shape[axis], int):
                bounds.append(int(shape[axis]))
    return min(bounds) if bounds else None


def prepare_inputs(
    model: ModelProto,
    inputs: str | Path | Mapping[str, np.ndarray] | None = None,
    *,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Feeds for the model's inputs: checked user data, or seeded generated data.

    Generated: floats ``N(0, 1)``; integers used as ``Gather`` indices uniform
    over the table, other integers uniform in ``{0, 1}``; bools uniform.
    """
    specs = graph_inputs(model)
    if inputs is None:
        rng = np.random.default_rng(seed)
        feeds = {}
        for name, et, dims in specs:
            dyn = [d for d in dims if not isinstance(d, int)]
            if dyn:
                raise ExportError(
                    f"input {name!r} has dynamic dims {_fmt_shape(dims)}; sample inputs cannot be "
                    f"generated -- pass them as an .npz file (--inputs) with one array per input"
                )
            dt = _np_dtype(et)
            shape = tuple(int(d) for d in dims)  # type: ignore[arg-type]
            if dt.kind == "f":
                feeds[name] = rng.standard_normal(shape).astype(dt)
            elif dt.kind in "iu":
                hi = _index_bound(model, name) or 2
                feeds[name] = rng.integers(0, hi, shape).astype(dt)
            elif dt.kind == "b":
                feeds[name] = rng.integers(0, 2, shape).astype(bool)
            else:
                raise ExportError(f"cannot generate input {name!r} of dtype {dt}")
        return feeds
    if isinstance(inputs, str | Path):
        path = Path(inputs)
        if not path.is_file():
            raise ExportError(f"inputs file {str(path)!r} does not exist")
        try:
            with np.load(path, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        except Exception as exc:
            raise ExportError(
                f"inputs file {str(path)!r} is not a numpy .npz archive: {exc}"
            ) from None
        label = str(path)
    else:
        data = {k: np.asarray(v) for k, v in inputs.items()}
        label = "sample inputs"
    expected = [n for n, _, _ in specs]
    missing = [n for n in expected if n not in data]
    extra = sorted(set(data) - set(expected))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {missing}")
        if extra:
            parts.append(f"unknown {extra}")
        raise ExportError(
            f"{label}: input names do not match the model ({'; '.join(parts)}); "
            f"the model's inputs are {expected}"
        )
    feeds = {}
    for name, et, dims in specs:
        arr = data[name]
        ok = arr.ndim == len(dims) and all(
            not isinstance(d, int) or d == s for d, s in zip(dims, arr.shape, strict=False)
        )
        if not ok:
            raise ExportError(
                f"{label}: input {name!r} has shape {list(arr.shape)} but the model expects "
                f"{_fmt_shape(dims)}"
            )
        dt = _np_dtype(et)
        if dt.kind in "iub" and arr.dtype.kind == "f":
            raise ExportError(
                f"{label}: input {name!r} holds floats ({arr.dtype}) but the model expects {dt}"
            )
        feeds[name] = arr.astype(dt, copy=False)
    return feeds


@dataclass(frozen=True)
class SiteStats:
    """Distribution of one site's input over the calibration data."""

    name: str
    count: int
    min: float
    max: float
    mean: float
    std: float
    percentiles: tuple[tuple[float, float], ...]
    nonfinite: int = 0

    @property
    def absmax(self) -> float:
        return max(abs(self.min), abs(self.max))

    @classmethod
    def of(cls, name: str, x: np.ndarray) -> SiteStats:
        a = np.asarray(x, dtype=np.float64).ravel()
        fin = a[np.isfinite(a)]
        if fin.size == 0:
            raise ExportError(f"site {name}: its input has no finite values (size {a.size})")
        pct = np.percentile(fin, PERCENTILES)
        return cls(
            name,
            int(a.size),
            float(fin.min()),
            float(fin.max()),
            float(fin.mean()),
            float(fin.std()),
            tuple((float(p), float(v)) for p, v in zip(PERCENTILES, pct, strict=True)),
            int(a.size - fin.size),
        )

    def range_value(self, stat: str = "max") -> float:
        """The magnitude the format must hold: ``"max"`` = max|x|; ``"p99.9"`` /
        ``"p99"`` = the larger of |p0.1|, |p99.9| (|p1|, |p99|) -- outliers beyond
        it saturate (the formats use ``AP_SAT``)."""
        pct = dict(self.percentiles)
        if stat == "max":
            return self.absmax
        if stat == "p99.9":
            return max(abs(pct[0.1]), abs(pct[99.9]))
        if stat == "p99":
            return max(abs(pct[1.0]), abs(pct[99.0]))
        raise ExportError(f"range statistic {stat!r} is not one of {list(RANGE_STATS)}")

    def int_bits(self, headroom: int = 1, stat: str = "max") -> int:
        """``floor(log2(m)) + 2 + headroom`` with ``m = range_value(stat)`` -- the
        smallest ``I`` with ``m < 2^(I-1)``, plus headroom (``1 + headroom`` if m = 0)."""
        m = self.range_value(stat)
        base = 1 if m == 0 else math.floor(math.log2(m)) + 2
        return base + headroom

    def choose_format(
        self,
        width: int = 16,
        headroom: int = 1,
        rounding: Rounding | str = Rounding.RND,
        overflow: Overflow | str = Overflow.SAT,
        stat: str = "max",
    ) -> FixedFormat:
        """``ap_fixed<width, int_bits(headroom, stat), rounding, overflow>``."""
        if self.nonfinite:
            raise ExportError(
                f"site {self.name}: its input holds {self.nonfinite} non-finite values (e.g. -inf "
                f"attention masks), which no fixed-point format represents; keep the site float"
            )
        ib = self.int_bits(headroom, stat)
        if ib >= width:
            raise ExportError(
                f"site {self.name}: {stat} |x| = {self.range_value(stat):.4g} needs {ib} integer "
                f"bits (headroom {headroom}), not less than the width {width}; use a wider "
                f"--width or a percentile --range"
            )
        return FixedFormat(width, ib, True, Rounding(rounding), Overflow(overflow))

    def as_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "std": self.std,
            "absmax": self.absmax,
            "nonfinite": self.nonfinite,
            "percentiles": {f"p{p:g}": v for p, v in self.percentiles},
        }


@dataclass
class Trace:
    """Float values at every site of one onnxruntime run of the unmodified model."""

    outputs: dict[str, np.ndarray]
    site_inputs: dict[str, np.ndarray]
    site_outputs: dict[str, np.ndarray]
    stats: dict[str, SiteStats]


def calibrate(
    model: ModelProto, sites: list[Site], feeds: Mapping[str, np.ndarray], *, threads: int = 0
) -> Trace:
    """Run the float model once, recording each site's input and output."""
    tensors = [t for s in sites for t in (s.input, s.output)]
    sess = trace_model(model, tensors, threads=threads)
    names = [o.name for o in sess.get_outputs()]
    try:
        values = dict(zip(names, sess.run(names, dict(feeds)), strict=True))
    except Exception as exc:
        raise ExportError(f"onnxruntime failed on the sample inputs: {exc}") from None
    outs = {o.name: values[o.name] for o in model.graph.output}
    return Trace(
        outputs=outs,
        site_inputs={s.name: values[s.input] for s in sites},
        site_outputs={s.name: values[s.output] for s in sites},
        stats={s.name: SiteStats.of(s.name, values[s.input]) for s in sites},
    )
