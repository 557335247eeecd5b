"""LayerNorm (and RMSNorm) approximations: bit-accurate integer numpy models.

Every spec computes, along the last axis of a row of N raw ``in_fmt`` codes,

    y = (x - mean) / sqrt(var + eps) · γ + β        (population variance)

(:class:`RmsNorm`: ``y = x / sqrt(mean(x²) + eps) · γ + β``) and returns raw
``out_fmt`` codes. ``gamma``/``beta`` are raw codes of ``gamma_fmt`` /
``beta_fmt`` of length N (``None`` means 1.0 and 0.0). :meth:`reference` is the
float64 function with float gamma/beta.

Methods
-------
``ibert``      I-BERT ``IntLayerNorm`` (exact integers, Newton isqrt).
``ivit``       I-ViT ``IntLayerNorm`` (fixed 10-step Newton from 2^16, defect kept).
``hls4ml_lut`` what hls4ml 1.3 ``nnet_layernorm.h`` computes (bit-exact, proven
               against the header with g++ in ``tests/test_layernorm.py``).
``rsqrt_lut``  the hwapprox unit: single-pass Σx, Σx², exact integer variance,
               1/sqrt by leading-one normalisation + table + Newton.
``rmsnorm``    the ``rsqrt_lut`` datapath without the mean.

The I-BERT/I-ViT integer output ``y_int`` (scale √N/2^30) and the normalised
value of ``rsqrt_lut`` are turned into ``out_fmt`` by the same fixed-point
affine stage (:func:`affine_out`): ``Z`` (``norm_frac_bits`` fraction bits,
rounded half up) times raw γ plus aligned raw β, rounded once into ``out_fmt``
with its own quantisation and overflow modes.

Modules: :mod:`._common` (base spec, :func:`affine_out`), :mod:`.ibert` (I-BERT,
I-ViT), :mod:`.hls4ml`, :mod:`.rsqrt` (``rsqrt_lut``, ``rmsnorm``).
"""

from __future__ import annotations

from hwapprox.approx.layernorm._common import affine_out
from hwapprox.approx.layernorm.hls4ml import Hls4mlLayerNorm, hls4ml_invsqrt_table
from hwapprox.approx.layernorm.ibert import IBertLayerNorm, IVitLayerNorm, isqrt_ivit, isqrt_newton
from hwapprox.approx.layernorm.rsqrt import RmsNorm, RsqrtLutLayerNorm, rsqrt_norm, rsqrt_table

__all__ = [
    "Hls4mlLayerNorm",
    "IBertLayerNorm",
    "IVitLayerNorm",
    "RmsNorm",
    "RsqrtLutLayerNorm",
    "affine_out",
    "hls4ml_invsqrt_table",
    "isqrt_ivit",
    "isqrt_newton",
    "rsqrt_norm",
    "rsqrt_table",
]
