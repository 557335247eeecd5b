"""HLS C++ implementations of the approx methods and the hls4ml extension.

Layout
------
``include/hwapprox/*.h``
    Header-only ``ap_fixed`` library (real C++ files, shipped as package data):
    ``intmath.h`` (integer primitives mirroring :mod:`hwapprox.approx.intmath`),
    ``common.h`` (raw-code access), ``linear.h`` (MatMul/Gemm, Q·Kᵀ, P·V,
    residual add: :mod:`hwapprox.approx.linear`), ``softmax.h`` (the softmax
    entry points; it includes one header per method: ``softmax_online.h``,
    ``softmax_3pass.h`` (the skeleton of ``softmax_ibert.h`` and
    ``softmax_shiftmax.h``), ``softmax_softermax.h``, ``softmax_hls4ml.h`` (hls4ml
    stable/latency), with ``softmax_common.h`` and ``softmax_stream.h``),
    ``gelu.h`` (ibert, shiftgelu, edgemoe, pwl, lut),
    ``layernorm.h`` (ibert, rsqrt_lut, rmsnorm), ``encoder.h`` (a post-LN or
    pre-LN encoder block, optionally causal and with key-padding mask bits;
    weights as arguments; io_parallel and io_stream), ``head.h`` (a dense head
    after the chain: token select, LayerNorm, Dense) and ``rows.h`` (one unit
    over the rows of a tensor). Each unit is bit-exact with its spec's
    ``model`` (tests ``tests/test_hls_*.py``, g++ C simulation on the same raw
    codes).
:mod:`hwapprox.hls.emit`
    Writes *data only*: one config struct per configured unit (typedefs of
    every format, the ``hw_params()`` constants the headers type every
    intermediate from, ``tables()`` as ROM arrays with accessors).
    :mod:`hwapprox.hls.units` maps ``(operator, method)`` to the unit's op tag.
:mod:`hwapprox.hls.csim`
    Builds a harness (``tests/cxx/hls_*_harness.cpp``) against a generated
    instances header, once per content (:func:`hwapprox._cxx.compile_cxx`).
:mod:`hwapprox.hls.block`
    :func:`~hwapprox.hls.block.block_instances`: the config of
    :class:`hwapprox.approx.block.EncoderBlock` (the block's exact model, linear
    stages and nonlinear specs composed, in ``approx``) for ``encoder.h``.
:mod:`hwapprox.hls.head`
    :class:`~hwapprox.hls.head.DenseHead`: the head's exact model, and
    :func:`~hwapprox.hls.head.match_head` (the ONNX pattern after the blocks).
:mod:`hwapprox.hls.hls4ml_ext`, :mod:`hwapprox.hls.project`
    ONNX encoder blocks folded into one ``HwApproxEncoderBlock`` node each (by
    :mod:`hwapprox.export.blockmatch`, read through :mod:`hwapprox.export.handoff`)
    (models without a whole block: one ``HwApproxNonlinear`` node per
    softmax/GELU/LayerNorm site); the hls4ml layers, ONNX handlers and
    Vivado/Vitis templates, registered by one explicit call
    (:func:`hwapprox.hls.hls4ml_ext.register`); project writing and the
    ``compile()``/``predict()`` bit-exactness check behind
    ``hwapprox hls project`` and ``hwapprox hls csim``.
"""
