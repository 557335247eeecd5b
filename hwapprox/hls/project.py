"""ONNX encoder -> hls4ml project, and the bit-exactness check of its C simulation.

:func:`prepare_model` folds every encoder block (:mod:`hwapprox.hls.onnx_block`)
and resolves each block's nonlinear sites with the approximation config
(:class:`hwapprox.approx.config.ApproxConfig`; the optional ``hls`` section
holds :class:`~hwapprox.hls.block.BlockFormats`), writing the resolved specs
and formats into the node (attribute ``hwapprox``, JSON). :func:`convert`
hands that model to ``hls4ml.converters.convert_from_onnx_model`` with the
extension registered; :func:`csim_check` runs ``compile()``/``predict()``
and compares with :meth:`EncoderBlock.model` chained over the blocks.

Config (YAML or dict)::

    defaults: {softmax: {method: online}, gelu: {method: pwl}, layernorm: {method: rsqrt_lut}}
    sites: {...}                       # per site, as for ``hwapprox validate``
    hls:                               # BlockFormats fields (all optional)
      in_fmt: "ap_fixed<16,6,AP_RND,AP_SAT>"
      accum_fmt: "ap_fixed<32,12,AP_TRN,AP_SAT>"
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from onnx import ModelProto, helper

from hwapprox.approx.base import SpecError
from hwapprox.approx.config import load_config
from hwapprox.hls.block import BlockFormats, EncoderBlock
from hwapprox.hls.hls4ml_ext import block_from_attrs, register
from hwapprox.hls.onnx_block import fold_blocks

__all__ = ["CsimReport", "Prepared", "convert", "csim_check", "prepare_model", "split_config"]

#: Model-level default precision handed to hls4ml. Deliberately useless (2
#: bits): every type the design uses is set explicitly, so anything that
#: silently inherited it would break the bit-exactness check.
POISON_PRECISION = "ap_fixed<2,1>"


@dataclass(frozen=True, eq=False)
class Prepared:
    """A folded model plus the block models that define its expected output."""

    model: ModelProto
    blocks: list[EncoderBlock]
    site_names: list[dict[str, str]]

    @property
    def input_name(self) -> str:
        return self.model.graph.input[0].name

    def reference(self, x: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Raw codes through every block model in turn (``[S, D]`` or ``[B, S, D]``)."""
        y = np.asarray(x)
        for i, b in enumerate(self.blocks):
            if i:
                y = b.formats.in_fmt.check(
                    y, f"block {i} input (previous block's output must be in_fmt codes)"
                )
            y = b.model(y)
        return y


def split_config(config: Any) -> tuple[Any, dict[str, Any]]:
    """(approximation config, ``hls`` section) from a path, dict or None."""
    if config is None:
        return None, {}
    if isinstance(config, str | Path):
        import yaml

        path = Path(config)
        if not path.is_file():
            raise SpecError(f"config file {str(path)!r} does not exist")
        data = yaml.safe_load(path.read_text()) or {}
    elif isinstance(config, Mapping):
        data = dict(config)
    else:
        raise SpecError(f"config must be a path or a dict, got {type(config).__name__}")
    hls = data.pop("hls", None) or {}
    if not isinstance(hls, Mapping):
        raise SpecError(f"config 'hls' section must be a mapping of formats, got {hls!r}")
    return data, dict(hls)


def prepare_model(source: str | Path | ModelProto, config: Any = None) -> Prepared:
    """Fold the encoder blocks of ``source`` and attach their resolved specs/formats."""
    approx, hls = split_config(config)
    cfg = load_config(approx)
    formats = BlockFormats.from_dict(hls)
    folded, matches = fold_blocks(source)
    sites: dict[str, str] = {}
    fields: dict[str, dict[str, Any]] = {}
    for m in matches:
        sites[m.softmax.name] = "softmax"
        sites[m.gelu.name] = "gelu"
        sites[m.ln1.name] = "layernorm"
        sites[m.ln2.name] = "layernorm"
        for s in (m.gelu, m.ln1, m.ln2):
            fields[s.name] = s.fields_for_spec()
    specs = cfg.resolve(sites, site_fields=fields)
    floats = sorted(n for n, s in specs.items() if s is None)
    if floats:
        raise SpecError(
            f"site(s) {', '.join(floats)} resolve to float; an HLS block needs an "
            "approximation for every site: set defaults for softmax, gelu and layernorm "
            "in the config"
        )
    seq = folded.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    blocks = []
    for node, m in zip(folded.graph.node, matches, strict=True):
        payload = {
            "specs": {
                role: specs[name].to_config()  # type: ignore[union-attr]
                for role, name in m.sites.items()
            },
            "formats": formats.to_dict(),
        }
        node.attribute.append(helper.make_attribute("hwapprox", json.dumps(payload)))
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
        from onnx import numpy_helper

        for k in list(attrs):
            if k.startswith("t_"):
                attrs[k] = numpy_helper.to_array(attrs[k])
        blocks.append(block_from_attrs(attrs, seq))
    for a, b in itertools.pairwise(blocks):
        if a.ln2.out_fmt != b.formats.in_fmt:
            raise SpecError(
                f"a block's output format {a.ln2.out_fmt} (ln2.out_fmt) must equal the next "
                f"block's in_fmt {b.formats.in_fmt}: set hls.in_fmt and the layernorm out_fmt "
                "to the same format"
            )
    return Prepared(folded, blocks, [m.sites for m in matches])


def convert(
    prepared: Prepared,
    output_dir: str | Path,
    *,
    backend: str = "Vivado",
    part: str | None = None,
    project_name: str = "myproject",
) -> Any:
    """The hls4ml ``ModelGraph`` of a prepared model (written with ``write()``)."""
    if backend not in ("Vivado", "Vitis"):
        raise SpecError(f"backend {backend!r} is not supported; use Vivado or Vitis")
    register()
    import hls4ml

    in_fmt = prepared.blocks[0].formats.in_fmt
    hls_config = {
        "Model": {"Precision": POISON_PRECISION, "ReuseFactor": 1, "Strategy": "Latency"},
        "LayerName": {prepared.input_name: {"Precision": {"result": str(in_fmt)}}},
    }
    kwargs: dict[str, Any] = {}
    if part:
        kwargs["part"] = part
    model = hls4ml.converters.convert_from_onnx_model(
        prepared.model,
        output_dir=str(output_dir),
        project_name=project_name,
        backend=backend,
        io_type="io_parallel",
        hls_config=hls_config,
        **kwargs,
    )
    model.write()
    return model


@dataclass(frozen=True)
class CsimReport:
    """Outcome of :func:`csim_check`: equal raw codes or not, and where."""

    samples: int
    values: int
    mismatches: int
    first: tuple[int, ...] | None

    @property
    def bit_exact(self) -> bool:
        return self.mismatches == 0


def csim_check(
    model: Any, prepared: Prepared, x_raw: npt.ArrayLike, *, compile: bool = True
) -> CsimReport:
    """``compile()`` + ``predict()`` on raw ``in_fmt`` codes ``[B, S, D]``; compare raw outputs.

    Inputs are passed as float64 values exactly on the ``in_fmt`` grid (so the
    bridge's conversion is exact); outputs are converted back with the output
    format (exact: float64 holds every code of formats up to 53 bits).
    ``compile=False`` reuses a library already built by ``model.compile()``.
    """
    xr = np.asarray(x_raw, dtype=np.int64)
    b0 = prepared.blocks[0]
    if xr.ndim != 3 or xr.shape[1:] != (b0.seq, b0.dim):
        raise SpecError(f"csim input must be [B, {b0.seq}, {b0.dim}] raw codes, got {xr.shape}")
    in_fmt = b0.formats.in_fmt
    in_fmt.check(xr, "csim input")
    out_fmt = prepared.blocks[-1].ln2.out_fmt
    if compile:
        model.compile()
    x = in_fmt.to_float(xr).reshape(xr.shape[0], -1)
    y = np.asarray(model.predict(np.ascontiguousarray(x)), dtype=np.float64)
    y = y.reshape(xr.shape)
    got = np.ldexp(y, out_fmt.frac_bits)
    if not np.array_equal(got, np.round(got)):
        raise SpecError("predict() returned values off the output grid (wrong output type?)")
    got_raw = got.astype(np.int64)
    want = prepared.reference(xr)
    bad = np.argwhere(got_raw != want)
    return CsimReport(
        samples=xr.shape[0],
        values=int(want.size),
        mismatches=len(bad),
        first=tuple(int(v) for v in bad[0]) if len(bad) else None,
    )
