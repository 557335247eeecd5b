"""hls4ml 1.3 extension: the ``HwApproxEncoderBlock`` layer, its ONNX handler and templates.

Nothing is registered on import. :func:`register` (idempotent) adds, in one
call:

* the IR layer ``HwApproxEncoderBlock`` (:func:`hls4ml.model.layers.register_layer`);
* the ONNX handler for the node of the same name written by
  :func:`hwapprox.export.blockmatch.fold_blocks` (weights as tensor attributes,
  the block's specs and formats as a JSON string attribute ``hwapprox``);
* for the Vivado and Vitis backends: a config template (the data-only config
  of :func:`hwapprox.hls.block.block_instances`, rendered by
  :func:`hwapprox.hls.emit.render_instances`), a one-line function-call
  template (``hwapprox::encoder_block<...>``), and the library headers
  (``include/hwapprox/*.h``, copied into the project's ``nnet_utils``).

Every type the block uses is explicit in its generated config; its output
type is the block's :attr:`~hwapprox.approx.block.EncoderBlock.out_fmt`
(``ln2.out_fmt`` post-LN, ``formats.out_fmt`` pre-LN). The 17 weight tensors
are hls4ml weight variables ``hwa{index}_{name}`` (``firmware/weights/*.h``,
loaded from ``.txt`` in C-sim as hls4ml does for Dense layers), passed to the
call as arguments. ``io_parallel`` and ``io_stream`` (one pack of ``dim``
values per token; ``hwapprox::encoder_block_stream``) are supported; the
standalone ``HwApproxNonlinear`` layer is ``io_parallel`` only (checked).

Node contract (written by :func:`hwapprox.hls.project.prepare_model`): integer
attributes ``heads``, ``prenorm``, ``causal``, ``masked``, ``score_bias``, ``rope`` (0/1;
missing = 0), ``window`` (the causal local window, 0 = none), the string ``ffn_act``,
float ``score_scale``, the weights as ``t_*`` tensors, the JSON ``hwapprox``.
With ``masked`` the node has a second input, the key mask ``[1, seq]`` (a
graph input named :data:`MASK_INPUT`, 1.0 = real token, 0.0 = padding); its
hls4ml input layer must have a precision holding 0 and 1 exactly (set it with
:func:`mask_layer_config`, e.g. ``ap_uint<1>``), and the layer's call becomes
``hwapprox::encoder_block<input_t, mask_t, result_t, config>(x, key_mask, y, W...)``.
:func:`predict_raw` runs ``predict()`` on raw codes (with the key mask as the
second model input) and returns raw output codes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx.base import ApproxSpec, SpecError
from hwapprox.approx.block import OPTIONAL_WEIGHTS, WEIGHT_NAMES, BlockFormats, EncoderBlock
from hwapprox.approx.registry import spec_from_config
from hwapprox.export.handoff import OP_TYPE, SITE_OP_TYPE
from hwapprox.fixed import FixedFormat, cast
from hwapprox.hls.block import block_instances
from hwapprox.hls.emit import INCLUDE_DIR, Instance, render_instances
from hwapprox.hls.head import HEAD_OP_TYPE, DenseHead, head_from_attrs
from hwapprox.hls.units import unit_instance

__all__ = [
    "BACKENDS",
    "HEAD_LAYER_CLASS",
    "IO_TYPES",
    "LAYER_CLASS",
    "MASK_INPUT",
    "MASK_PRECISION",
    "SITE_LAYER_CLASS",
    "SiteStep",
    "block_from_attrs",
    "block_from_node",
    "mask_layer_config",
    "precision_of",
    "predict_inputs",
    "predict_raw",
    "register",
    "site_from_attrs",
]

#: hls4ml backends the templates are registered for.
BACKENDS = ("Vivado", "Vitis")
#: the hls4ml layer class name (also the ONNX op type)
LAYER_CLASS = OP_TYPE
#: the standalone nonlinear layer (softmax/GELU/LayerNorm over rows)
SITE_LAYER_CLASS = SITE_OP_TYPE
#: the dense head after the encoder chain (:mod:`hwapprox.hls.head`)
HEAD_LAYER_CLASS = HEAD_OP_TYPE
#: name of the folded model's key-mask graph input ([1, seq], 1.0 = real token)
MASK_INPUT = "key_mask"
#: hls4ml precision of the key-mask input layer (holds 0 and 1 exactly)
MASK_PRECISION = "ap_uint<1>"
#: hls4ml IOTypes the encoder block supports (io_stream: ``encoder_block_stream``)
IO_TYPES = ("io_parallel", "io_stream")
#: the block kind attributes of a folded node (ints 0/1; missing = 0)
KIND_ATTRS = ("prenorm", "causal", "masked", "score_bias", "rope")

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
    # a node without an optional weight (folded before it existed) gets one zero
    attrs = {f"t_{n}": np.zeros(1) for n in OPTIONAL_WEIGHTS} | attrs
    weights = {n: np.asarray(attrs[f"t_{n}"], dtype=np.float64) for n in WEIGHT_NAMES}
    return EncoderBlock.from_float(
        weights,
        seq=seq,
        heads=int(attrs["heads"]),
        softmax=specs["softmax"],
        gelu=specs.get("gelu"),
        ln1=specs["ln1"],
        ln2=specs["ln2"],
        formats=BlockFormats.from_dict(cfg["formats"]),
        score_scale=float(attrs["score_scale"]),
        **{k: _flag(attrs, k) for k in KIND_ATTRS},
        window=int(attrs.get("window", 0)),
        ffn_act=str(attrs.get("ffn_act", "gelu")),
        attention=str(attrs.get("attention", "two_pass")),
    )


def block_from_node(node: Any, seq: int) -> EncoderBlock:
    """:func:`block_from_attrs` of a folded ``onnx.NodeProto`` (attributes decoded as the
    ONNX handler decodes them)."""
    return block_from_attrs(_onnx_attrs(node), seq)


def _onnx_attrs(node: Any) -> dict[str, Any]:
    """A node's attributes: tensors as numpy arrays, strings decoded."""
    from onnx import helper, numpy_helper

    attrs: dict[str, Any] = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if a.type == a.TENSOR:
            v = numpy_helper.to_array(v)
        elif isinstance(v, bytes):
            v = v.decode()
        attrs[a.name] = v
    return attrs


def _flag(attrs: dict[str, Any], name: str) -> bool:
    v = attrs.get(name, 0)
    if v not in (0, 1):
        raise SpecError(f"{OP_TYPE} attribute {name}={v!r} must be 0 or 1")
    return bool(v)


def mask_layer_config(name: str = MASK_INPUT) -> dict[str, Any]:
    """hls4ml ``LayerName`` entry for the key-mask input layer: ``{name: {Precision: ...}}``.

    Merge it into ``hls_config["LayerName"]`` next to the hidden state's input
    precision; without it the mask input would take the model default precision
    (the layer refuses one that cannot hold 1).
    """
    return {name: {"Precision": {"result": MASK_PRECISION}}}


def predict_inputs(
    x_raw: npt.ArrayLike, in_fmt: FixedFormat, key_mask: npt.ArrayLike | None = None
) -> np.ndarray | list[np.ndarray]:
    """The argument of ``ModelGraph.predict`` for raw ``in_fmt`` codes ``[B, ...]``.

    Values are float64 exactly on the ``in_fmt`` grid (the bridge's conversion
    is exact), one row per sample. With ``key_mask`` (bool ``[B, seq]``, True =
    real token): the list ``[x, mask]`` in graph-input order (hidden state
    first, :data:`MASK_INPUT` second), the mask as float64 1.0/0.0 -- hls4ml
    takes a list with one array per model input, all of one dtype.
    """
    xr = np.asarray(x_raw, dtype=np.int64)
    x = np.ascontiguousarray(in_fmt.to_float(xr).reshape(xr.shape[0], -1))
    if key_mask is None:
        return x
    km = np.asarray(key_mask)
    if km.dtype != np.bool_ or km.ndim != 2 or km.shape[0] != xr.shape[0]:
        raise SpecError(
            f"key_mask must be bool [B, seq] with B = {xr.shape[0]} (True = real token), got "
            f"{km.dtype} {list(km.shape)}"
        )
    return [x, np.ascontiguousarray(km.astype(np.float64))]


def predict_raw(
    model: Any,
    x_raw: npt.ArrayLike,
    in_fmt: FixedFormat,
    out_fmt: FixedFormat,
    key_mask: npt.ArrayLike | None = None,
    out_shape: tuple[int, ...] | None = None,
) -> npt.NDArray[np.int64]:
    """``model.predict`` (compiled) on raw ``in_fmt`` codes -> raw ``out_fmt`` codes, the
    input's shape or ``[B, *out_shape]`` (a model ending in a dense head).

    ``key_mask``: bool ``[B, seq]``, True = real token, for models with a key
    mask input (:func:`predict_inputs`). Outputs off the ``out_fmt`` grid (a
    wrong output type) are an error.
    """
    xr = np.asarray(x_raw, dtype=np.int64)
    y = np.asarray(model.predict(predict_inputs(xr, in_fmt, key_mask)), dtype=np.float64)
    shape = xr.shape if out_shape is None else (xr.shape[0], *out_shape)
    got = np.ldexp(y.reshape(shape), out_fmt.frac_bits)
    if not np.array_equal(got, np.round(got)):
        raise SpecError("predict() returned values off the output grid (wrong output type?)")
    return got.astype(np.int64)


@dataclass(frozen=True, eq=False)
class SiteStep:
    """One standalone nonlinear layer: its spec over ``n_rows`` rows of ``n_in``.

    The input is first cast to ``spec.in_fmt`` (from the previous layer's
    type, with ``in_fmt``'s modes), exactly as the C++ wrapper assigns it.
    """

    spec: ApproxSpec
    n_rows: int
    n_in: int
    gamma: npt.NDArray[np.int64] | None = None
    beta: npt.NDArray[np.int64] | None = None

    @property
    def in_fmt(self) -> FixedFormat:
        return self.spec.in_fmt

    @property
    def out_fmt(self) -> FixedFormat:
        return self.spec.out_fmt

    def run(self, raw: npt.ArrayLike, prev_fmt: FixedFormat) -> npt.NDArray[np.int64]:
        """Raw codes of ``prev_fmt`` ``[..., n_in]`` -> raw ``out_fmt`` codes."""
        x = cast(np.asarray(raw, dtype=np.int64), prev_fmt, self.spec.in_fmt)
        if str(self.spec.operator) == "layernorm":
            return self.spec.model(x, axis=-1, gamma=self.gamma, beta=self.beta)
        if str(self.spec.operator) == "softmax":
            return self.spec.model(x, axis=-1)
        return self.spec.model(x)

    def instances(self, name: str) -> list[Instance]:
        inst = unit_instance(name, self.spec, self.n_in)
        tables = dict(inst.tables)
        if self.gamma is not None and self.beta is not None:
            tables |= {"gamma": self.gamma, "beta": self.beta}
        return [
            Instance(
                inst.name,
                inst.types,
                {**inst.consts, "n_rows": self.n_rows},
                tables,
                comment=inst.comment,
                aliases=inst.aliases,
            )
        ]


def site_from_attrs(attrs: dict[str, Any], shape: list[int]) -> SiteStep:
    """The :class:`SiteStep` of a folded ``HwApproxNonlinear`` node (shape without batch)."""
    try:
        spec = spec_from_config(json.loads(attrs["hwapprox"])["spec"])
    except KeyError:
        raise SpecError(
            f"{SITE_OP_TYPE} node has no 'hwapprox' attribute (its spec); build the model "
            "with hwapprox.hls.project.prepare_model"
        ) from None
    n_in = int(shape[-1])
    n_rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    gamma = beta = None
    if str(spec.operator) == "layernorm":
        gamma = spec.gamma_fmt.quantize(np.asarray(attrs["t_gamma"], dtype=np.float64))  # type: ignore[attr-defined]
        beta = spec.beta_fmt.quantize(np.asarray(attrs["t_beta"], dtype=np.float64))  # type: ignore[attr-defined]
    return SiteStep(spec, n_rows, n_in, gamma, beta)


def _parse_site(node: Any, input_names: Any, input_shapes: Any, graph: Any) -> dict[str, Any]:
    """ONNX handler of ``HwApproxNonlinear``: attributes and the input shape (batch dropped)."""
    layer = _parse_block(node, input_names, input_shapes, graph, expect_rank=None)
    layer["class_name"] = SITE_LAYER_CLASS
    return layer


def _parse_block(
    node: Any, input_names: Any, input_shapes: Any, graph: Any, expect_rank: int | None = 3
) -> dict[str, Any]:
    """ONNX handler: the node's attributes become the layer's; shapes from the input."""
    attrs = _onnx_attrs(node)
    shape = list(input_shapes[0])
    if (expect_rank is not None and len(shape) != expect_rank) or len(shape) < 2 or shape[0] != 1:
        raise SpecError(
            f"{node.name}: input shape {shape} must be [1, ...] with a batch dimension of 1 "
            "(hls4ml takes dim 0 as the batch)" + (" and [1, seq, dim]" if expect_rank else "")
        )
    if expect_rank is not None and len(input_shapes) > 1:
        mshape = list(input_shapes[1])
        if mshape != [1, shape[1]]:
            raise SpecError(
                f"{node.name}: key mask input {input_names[1]!r} has shape {mshape}; it must be "
                f"[1, {shape[1]}] (batch 1, one value per token, nonzero = real token)"
            )
    layer = {
        "class_name": LAYER_CLASS,
        "name": node.name,
        "inputs": list(input_names),
        "outputs": list(node.output),
        "seq": int(shape[1]),
        "dim": int(shape[-1]),
        "shape": [int(v) for v in shape[1:]],
        "onnx_attrs": attrs,
    }
    return layer


def _parse_head(node: Any, input_names: Any, input_shapes: Any, graph: Any) -> dict[str, Any]:
    """ONNX handler of ``HwApproxDenseHead``: attributes and the input shape."""
    layer = _parse_block(node, input_names, input_shapes, graph)
    layer["class_name"] = HEAD_LAYER_CLASS
    return layer


def _head_layer_class() -> type:
    from hls4ml.model.layers import Layer

    class HwApproxDenseHead(Layer):  # type: ignore[misc]
        """[token] -> [LayerNorm] -> Dense; output ``[rows, n_out]`` of ``out_fmt``."""

        def initialize(self) -> None:
            io = self.model.config.get_config_value("IOType")
            if io not in IO_TYPES:
                raise SpecError(f"{self.name}: {HEAD_LAYER_CLASS} supports {IO_TYPES}, not {io!r}")
            inp = self.get_input_variable()
            seq, dim = (int(v) for v in inp.shape)
            head = head_from_attrs(self.get_attr("onnx_attrs"), seq, dim)
            self.set_attr("hwapprox_head", head)
            self.add_output_variable([head.rows, head.n_out], precision=precision_of(head.out_fmt))
            fmts = head.weight_formats()
            for n, raw in head.weight_arrays().items():
                self.add_weights_variable(
                    name=n,
                    var_name=f"hwa{{index}}_{n}",
                    type_name=f"hwa{{index}}_{n}_t",
                    precision=precision_of(fmts[n]),
                    data=fmts[n].to_float(np.asarray(raw)),
                )

    return HwApproxDenseHead


def _head_templates(layer_cls: type) -> tuple[type, type]:
    from hls4ml.backends.template import FunctionCallTemplate, LayerConfigTemplate

    class HeadConfigTemplate(LayerConfigTemplate):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(layer_cls)

        def format(self, node: Any) -> str:
            head: DenseHead = node.get_attr("hwapprox_head")
            return render_instances(head.instances(f"config{node.index}"))

    class HeadFunctionTemplate(FunctionCallTemplate):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(layer_cls, include_header=["nnet_utils/head.h"])

        def format(self, node: Any) -> str:
            p = self._default_function_params(node)
            stream = node.model.config.get_config_value("IOType") == "io_stream"
            fn = "dense_head_stream" if stream else "dense_head"
            weights = ", ".join(node.get_weights(n).name for n in ("w", "b", "g", "be"))
            return (
                f"hwapprox::{fn}<{p['input_t']}, {p['output_t']}, {p['config']}>"
                f"({p['input']}, {p['output']}, {weights});"
            )

    return HeadConfigTemplate, HeadFunctionTemplate


def _layer_class() -> type:
    from hls4ml.model.layers import Layer

    class HwApproxEncoderBlock(Layer):  # type: ignore[misc]
        """A whole encoder block; output ``[seq, dim]`` of type ``EncoderBlock.out_fmt``.

        Inputs: the hidden state ``[seq, dim]``; with ``masked`` also the key
        mask ``[seq]`` (nonzero = real token).
        """

        def initialize(self) -> None:
            io = self.model.config.get_config_value("IOType")
            if io not in IO_TYPES:
                raise SpecError(
                    f"{self.name}: {LAYER_CLASS} supports IOType {', '.join(IO_TYPES)}, not {io!r}"
                )
            blk = block_from_attrs(self.get_attr("onnx_attrs"), int(self.get_attr("seq")))
            self.set_attr("hwapprox_block", blk)
            inp = self.get_input_variable()
            if list(inp.shape) != [blk.seq, blk.dim]:
                raise SpecError(f"{self.name}: input shape {inp.shape} != [{blk.seq}, {blk.dim}]")
            want = 2 if blk.masked else 1
            if len(self.inputs) != want:
                raise SpecError(
                    f"{self.name}: a {'key-masked' if blk.masked else 'block without key mask'} "
                    f"({blk.kind}) takes {want} input(s), got {len(self.inputs)}: {self.inputs}"
                )
            if blk.masked:
                _check_mask_variable(self.name, self.get_input_variable(self.inputs[1]), blk.seq)
            self.add_output_variable(list(inp.shape), precision=precision_of(blk.out_fmt))
            # the weights: hls4ml weight variables (firmware/weights/*.h, .txt for C-sim),
            # values exactly on their formats' grids, the types of the block config
            wf = blk.weight_formats()
            for n in WEIGHT_NAMES:
                self.add_weights_variable(
                    name=n,
                    var_name=f"hwa{{index}}_{n}",
                    type_name=f"hwa{{index}}_{n}_t",
                    precision=precision_of(wf[n]),
                    data=wf[n].to_float(np.asarray(blk.weights[n])),
                )

    return HwApproxEncoderBlock


def _check_mask_variable(layer: str, var: Any, seq: int) -> None:
    """The key mask input: shape ``[seq]``, a precision that holds 0 and 1 exactly."""
    if list(var.shape) != [seq]:
        raise SpecError(f"{layer}: key mask {var.name} has shape {list(var.shape)}, not [{seq}]")
    from hls4ml.model.types import FixedPrecisionType, IntegerPrecisionType

    p = var.type.precision
    fixed = isinstance(p, FixedPrecisionType | IntegerPrecisionType)
    if not fixed or p.integer - int(bool(p.signed)) < 1:
        raise SpecError(
            f"{layer}: key mask {var.name} has precision {p}, which cannot hold 1.0 (a real "
            f"token); give its input layer {MASK_PRECISION} (hwapprox.hls.hls4ml_ext."
            "mask_layer_config)"
        )


def _site_layer_class() -> type:
    from hls4ml.model.layers import Layer

    class HwApproxNonlinear(Layer):  # type: ignore[misc]
        """Softmax/GELU/LayerNorm over rows; output type ``spec.out_fmt``."""

        def initialize(self) -> None:
            if self.model.config.get_config_value("IOType") != "io_parallel":
                raise SpecError(f"{self.name}: {SITE_LAYER_CLASS} supports io_parallel only")
            inp = self.get_input_variable()
            step = site_from_attrs(self.get_attr("onnx_attrs"), list(inp.shape))
            self.set_attr("hwapprox_step", step)
            self.add_output_variable(list(inp.shape), precision=precision_of(step.out_fmt))

    return HwApproxNonlinear


def _templates(layer_cls: type) -> tuple[type, type]:
    from hls4ml.backends.template import FunctionCallTemplate, LayerConfigTemplate

    class BlockConfigTemplate(LayerConfigTemplate):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(layer_cls)

        def format(self, node: Any) -> str:
            blk: EncoderBlock = node.get_attr("hwapprox_block")
            return render_instances(block_instances(blk, f"config{node.index}"))

    class BlockFunctionTemplate(FunctionCallTemplate):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(layer_cls, include_header=["nnet_utils/encoder.h"])

        def format(self, node: Any) -> str:
            p = self._default_function_params(node)
            stream = node.model.config.get_config_value("IOType") == "io_stream"
            fn = "encoder_block_stream" if stream else "encoder_block"
            weights = ", ".join(node.get_weights(n).name for n in WEIGHT_NAMES)
            if node.get_attr("hwapprox_block").masked:
                m = node.get_input_variable(node.inputs[1])
                return (
                    f"hwapprox::{fn}<{p['input_t']}, {m.type.name}, {p['output_t']}, "
                    f"{p['config']}>({p['input']}, {m.name}, {p['output']}, {weights});"
                )
            return (
                f"hwapprox::{fn}<{p['input_t']}, {p['output_t']}, {p['config']}>"
                f"({p['input']}, {p['output']}, {weights});"
            )

    return BlockConfigTemplate, BlockFunctionTemplate


def _site_templates(layer_cls: type) -> tuple[type, type]:
    from hls4ml.backends.template import FunctionCallTemplate, LayerConfigTemplate

    class SiteConfigTemplate(LayerConfigTemplate):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(layer_cls)

        def format(self, node: Any) -> str:
            step: SiteStep = node.get_attr("hwapprox_step")
            return render_instances(step.instances(f"config{node.index}"))

    class SiteFunctionTemplate(FunctionCallTemplate):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(layer_cls, include_header=["nnet_utils/rows.h"])

        def format(self, node: Any) -> str:
            p = self._default_function_params(node)
            op = str(node.get_attr("hwapprox_step").spec.operator)
            return (
                f"hwapprox::{op}_rows<{p['input_t']}, {p['output_t']}, {p['config']}>"
                f"({p['input']}, {p['output']});"
            )

    return SiteConfigTemplate, SiteFunctionTemplate


def register() -> None:
    """Register the layer, ONNX handler, templates and sources (once per process)."""
    if _state.get("done"):
        return
    import hls4ml
    from hls4ml.converters.onnx_to_hls import layer_handlers, register_onnx_layer_handler
    from hls4ml.model.layers import layer_map, register_layer

    layer_cls = _state.get("layer") or _layer_class()
    site_cls = _state.get("site_layer") or _site_layer_class()
    head_cls = _state.get("head_layer") or _head_layer_class()
    _state["layer"], _state["site_layer"], _state["head_layer"] = layer_cls, site_cls, head_cls
    for name, cls, handler in (
        (LAYER_CLASS, layer_cls, _parse_block),
        (SITE_LAYER_CLASS, site_cls, _parse_site),
        (HEAD_LAYER_CLASS, head_cls, _parse_head),
    ):
        if name not in layer_map:
            register_layer(name, cls)
        if name not in layer_handlers:
            register_onnx_layer_handler(name, handler)
    templates = [*_templates(layer_cls), *_site_templates(site_cls), *_head_templates(head_cls)]
    headers = sorted((INCLUDE_DIR / "hwapprox").glob("*.h"))
    for name in BACKENDS:
        backend = hls4ml.backends.get_backend(name)
        for t in templates:
            backend.register_template(t)
        for h in headers:
            backend.register_source(h)
    _state["done"] = True
