"""Softmax approximations: bit-accurate integer models.

Every class is a frozen spec (see :mod:`hwapprox.approx.base`); ``model(raw,
axis=-1, mask=None)`` maps raw ``in_fmt`` codes to raw ``out_fmt`` codes with
exact int64 numpy, row by row along ``axis``; ``reference`` is the float64
stable softmax ``exp(x - max) / sum(exp(x - max))``.

Attention masks (every method; the contract the HLS and RTL units implement):
``mask`` is a bool array broadcastable to the input's shape, **True = masked
out** (one mask bit per element, no additive -inf). A masked element is
skipped by the row max (the running max of ``online``/``softermax``), adds
nothing to the row sum (its exp term is 0) and outputs raw 0. The unmasked
elements get exactly the codes of the row with the masked elements removed,
``model(row, mask)[~mask] == model(row[~mask])`` (stream order kept); a fully
masked row outputs all zeros. ``mask=None`` or a mask without any True is the
unmasked model. Row-length limits count every element of the row, masked or
not (the unit is sized for its row length). ``reference(x, axis, mask)`` is
the float64 softmax over the unmasked elements, 0 at masked ones and on fully
masked rows.

Methods (registry name -> class):

* ``hls4ml_stable`` / ``hls4ml_latency`` -- :class:`Hls4mlStableSoftmax`,
  :class:`Hls4mlLatencySoftmax`: hls4ml 1.3 ``nnet_activation.h``, bit-exact
  (proven against the header compiled with g++ in ``tests/test_softmax.py``).
* ``ibert`` -- :class:`IBertSoftmax` (Kim et al. 2021, ``IntSoftmax``).
* ``shiftmax`` -- :class:`ShiftmaxSoftmax` (I-ViT, Li & Gu 2023).
* ``online`` -- :class:`OnlineSoftmax`: single-pass running max/sum
  (Milakov & Gimelshein 2018; Edge-MoE ``finalize_attn``), explicit
  fixed-point datapath for RTL/HLS.
* ``softermax`` -- :class:`SoftermaxSoftmax` (Stevens et al., DAC 2021).

Modules: :mod:`._common` (the :class:`SoftmaxSpec` base, the mask contract,
shared exact helpers), :mod:`.lut` (hls4ml baselines), :mod:`.ibert` (I-BERT,
Shiftmax), :mod:`.online` (online), :mod:`.softermax`.
"""

from __future__ import annotations

from hwapprox.approx.softmax._common import SoftmaxSpec, stable_softmax
from hwapprox.approx.softmax.ibert import IBertSoftmax, ShiftmaxSoftmax
from hwapprox.approx.softmax.lut import Hls4mlLatencySoftmax, Hls4mlStableSoftmax
from hwapprox.approx.softmax.online import OnlineSoftmax
from hwapprox.approx.softmax.softermax import SoftermaxSoftmax

__all__ = [
    "Hls4mlLatencySoftmax",
    "Hls4mlStableSoftmax",
    "IBertSoftmax",
    "OnlineSoftmax",
    "ShiftmaxSoftmax",
    "SoftermaxSoftmax",
    "SoftmaxSpec",
    "stable_softmax",
]
