"""ONNX in: find Softmax / GELU / LayerNorm sites, calibrate, emulate.

Will hold the importer that finds every nonlinear site of an ONNX model
(including the decomposed patterns exporters write), calibration of site
input ranges, emulation of the model with the bit-accurate approximations
next to onnxruntime, and the hand-off of the graph to :mod:`hwapprox.hls`.
"""
