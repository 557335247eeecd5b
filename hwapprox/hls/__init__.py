"""HLS C++ implementations of the approx methods and the hls4ml extension.

Will hold the header-only ``ap_fixed`` library under ``include/hwapprox/``,
the emitter that writes each spec's tables and constants as data-only
headers, and the explicitly registered hls4ml layers, ONNX handlers and
templates that turn an ONNX transformer block into an HLS project whose
C simulation is bit-exact with :mod:`hwapprox.approx`.
"""
