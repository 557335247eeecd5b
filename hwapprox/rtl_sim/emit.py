"""Data for the RTL units: ``$readmemh`` table words.

Only data is generated here; the logic lives in the ``rtl/*.sv`` files and
the integer constants are the spec's ``hw_params()`` (passed as SV parameters
by :mod:`hwapprox.rtl_sim.units`). Table words are the exact integers of the
spec's :meth:`~hwapprox.approx.base.ApproxSpec.tables`, written as ``width``-bit
two's-complement hex (one word per line) at the width the unit declares
(:func:`hwapprox.approx.hwparams.table_width` is a table's narrowest word).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hwapprox.approx.base import SpecError

__all__ = ["memh_text"]


def memh_text(values: npt.ArrayLike, width: int) -> str:
    """``$readmemh`` text: one ``width``-bit two's-complement hex word per line.

    Refuses values that do not fit ``width`` bits (signed or unsigned).
    """
    v = np.asarray(values, dtype=np.int64).ravel()
    if width < 1 or width > 63:
        raise SpecError(f"memory word width must be 1..63 bits, got {width}")
    if v.size:
        lo, hi = int(v.min()), int(v.max())
        if lo < -(1 << (width - 1)) or hi >= (1 << width):
            raise SpecError(
                f"table values in [{lo}, {hi}] do not fit {width}-bit words; widen the word"
            )
    digits = (width + 3) // 4
    mask = (1 << width) - 1
    return "".join(f"{int(x) & mask:0{digits}x}\n" for x in v.tolist())
