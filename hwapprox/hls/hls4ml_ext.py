"""hls4ml 1.3 extension: the ``HwApproxEncoderBlock`` layer, its ONNX handler and templates.

Nothing is registered on import. :func:`register` (idempotent) adds, in one
call:

* the IR layer ``HwApproxEncoderBlock`` (:func:`hls4ml.model.layers.register_layer`);
* the ONNX handler for the node of the same name written by
  :func:`hwapprox.hls.onnx_block.fold_blocks` (weights as tensor attributes,
  the block's specs and formats as a JSON string attribute ``hwapprox``);
* for the Vivado and Vitis backends: a config template (the data-only config
  of :meth:`hwapprox.hls.block.EncoderBlock.instances`, rendered by
  :func:`hwapprox.hls.emit.render_instances`), a one-line function-call
  template (``hwapprox::encoder_block<...>``), and the library headers
  (``include/hwapprox/*.h``, copied into the project's ``nnet_utils``).

Every type the block uses is explicit in its generated config; its output
type is ``ln2.out_fmt``. Only ``io_parallel`` is supported (checked).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from hwapprox.approx.base import SpecError
from hwapprox.approx.registry import spec_from_config
from hwapprox.fixed import FixedFormat
from hwapprox.hls.block import WEIGHT_NAMES, BlockFormats, EncoderBlock
from hwapprox.hls.emit import INCLUDE_DIR, render_instances
from hwapprox.hls.onnx_block import OP_TYPE

__all__ = ["BACKENDS", "LAYER_CLASS", "block_from_attrs", "precision_of", "register"]

#: hls4ml backends the templates are registered for.
BACKENDS = ("Vivado", "Vitis")
#: the hls4ml layer class name (also the ONNX op type)
LAYER_CLASS = OP_TYPE

_state: dict[str, Any] = {}


def precision_of(fmt: FixedFormat) -> Any:
    """The hls4ml ``FixedPrecisionType`` of a format, modes explicit."""
    from hls4ml.model.types import FixedPrecisionType, RoundingMode, SaturationMode

    return FixedPrecisionType(
        width=fmt.width,
        integer=fmt.int_bits,
        signed=fmt.signed,
        rounding_mode=RoundingMode.from_string(fmt.rounding.value),
        saturation_mode=SaturationMode.from_string(fmt.overflow.value),
    )


def block_from_attrs(attrs: dict[str, Any], seq: int) -> EncoderBlock:
    """Rebuild the :class:`EncoderBlock` of a folded ONNX node's attributes."""
    try:
        cfg = json.loads(attrs["hwapprox"])
    except KeyError:
        raise SpecError(
            f"{OP_TYPE} node has no 'hwapprox' attribute (specs and formats); build the model "
            "with hwapprox.hls.project.prepare_model"
        ) from None
    specs = {role: spec_from_config(c) for role, c in cfg["specs"].items()}
    weights = {n: np.asarray(attrs[f"t_{n}"], dtype=np.float64) for n in WEIGHT_NAMES}
    return EncoderBlock.from_float(
        weights,
        seq=seq,
        heads=int(attrs["heads"]),
        softmax=specs["softmax"],
        gelu=specs["gelu"],
        ln1=specs["ln1"],
        ln2=specs["ln2"],
        formats=BlockFormats.from_dict(cfg["formats"]),
        score_scale=float(attrs["score_scale"]),
    )


def _parse_block(node: Any, input_names: Any, input_shapes: Any, graph: Any) -> dict[str, Any]:
    """ONNX handler: the node's attributes become the layer's; shapes from the input."""
    from onnx import helper, numpy_helper

    attrs: dict[str, Any] = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if a.type == a.TENSOR:
            v = numpy_helper.to_array(v)
        elif isinstance(v, bytes):
            v = v.decode()
        attrs[a.name] = v
    shape = list(input_shapes[0])
    if len(shape) != 3 or shape[0] != 1:
        raise SpecError(
            f"{node.name}: input shape {shape} must be [1, seq, dim] (hls4ml takes dim 0 as "
            "the batch)"
        )
    layer = {
        "class_name": LAYER_CLASS,
        "name": node.name,
        "inputs": list(input_names),
        "outputs": list(node.output),
        "seq": int(shape[1]),
        "dim": int(shape[2]),
        "onnx_attrs": attrs,
    }
    return layer


def _layer_class() -> type:
    from hls4ml.model.layers import Layer

    class HwApproxEncoderBlock(Layer):  # type: ignore[misc]
        """A whole encoder block; output ``[seq, dim]`` of type ``ln2.out_fmt``."""

        def initialize(self) -> None:
            if self.model.config.get_config_value("IOType") != "io_parallel":
                raise SpecError(f"{self.name}: {LAYER_CLASS} supports io_parallel only")
            blk = block_from_attrs(self.get_attr("onnx_attrs"), int(self.get_attr("seq")))
            self.set_attr("hwapprox_block", blk)
            inp = self.get_input_variable()
            if list(inp.shape) != [blk.seq, blk.dim]:
                raise SpecError(f"{self.name}: input shape {inp.shape} != [{blk.seq}, {blk.dim}]")
            self.add_output_variable(list(inp.shape), precision=precision_of(blk.ln2.out_fmt))

    return HwApproxEncoderBlock


def _templates(layer_cls: type) -> tuple[type, type]:
    from hls4ml.backends.template import FunctionCallTemplate, LayerConfigTemplate

    class BlockConfigTemplate(LayerConfigTemplate):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(layer_cls)

        def format(self, node: Any) -> str:
            blk: EncoderBlock = node.get_attr("hwapprox_block")
            return render_instances(blk.instances(f"config{node.index}"))

    class BlockFunctionTemplate(FunctionCallTemplate):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(layer_cls, include_header=["nnet_utils/encoder.h"])

        def format(self, node: Any) -> str:
            p = self._default_function_params(node)
            return (
                f"hwapprox::encoder_block<{p['input_t']}, {p['output_t']}, {p['config']}>"
                f"({p['input']}, {p['output']});"
            )

    return BlockConfigTemplate, BlockFunctionTemplate


def register() -> None:
    """Register the layer, ONNX handler, templates and sources (once per process)."""
    if _state.get("done"):
        return
    import hls4ml
    from hls4ml.converters.onnx_to_hls import layer_handlers, register_onnx_layer_handler
    from hls4ml.model.layers import layer_map, register_layer

    layer_cls = _state.get("layer") or _layer_class()
    _state["layer"] = layer_cls
    if LAYER_CLASS not in layer_map:
        register_layer(LAYER_CLASS, layer_cls)
    if OP_TYPE not in layer_handlers:
        register_onnx_layer_handler(OP_TYPE, _parse_block)
    cfg_t, fn_t = _templates(layer_cls)
    headers = sorted((INCLUDE_DIR / "hwapprox").glob("*.h"))
    for name in BACKENDS:
        backend = hls4ml.backends.get_backend(name)
        backend.register_template(cfg_t)
        backend.register_template(fn_t)
        for h in headers:
            backend.register_source(h)
    _state["done"] = True
