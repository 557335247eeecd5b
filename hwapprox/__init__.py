"""hwapprox: hardware approximations of transformer nonlinearities.

One frozen spec per approximation (softmax, GELU, LayerNorm); from it a
bit-accurate numpy model (:mod:`hwapprox.approx`), HLS C++ through hls4ml
(:mod:`hwapprox.hls`) and SystemVerilog units simulated with cocotb +
Verilator (:mod:`hwapprox.rtl_sim`), all agreeing bit for bit on the same raw
integers. :mod:`hwapprox.fixed` is the ``ap_fixed``-exact fixed-point core
everything stands on.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hwapprox")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
