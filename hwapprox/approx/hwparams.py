"""The hardware parameter set of a spec: one definition for the HLS and RTL units.

Every spec that has an HLS or RTL unit implements ``hw_params(n=None)``: the
complete set of integers the units are built from -- every derived width and
shift of the datapath (exp argument, exp value, running sum, reciprocal,
products, Newton intermediates, accumulators, ...), plus the method constants
and the rounding/overflow codes of the formats. It is computed from the spec's
formats and table sizes only (and, for methods whose accumulators grow with
the row, from the row length ``n``), with the reasoning (largest magnitude ->
bits) written next to each number in the spec's ``hw_params`` docstring.

Names and encodings are those of the SystemVerilog parameters and of the HLS
config constants, so both sides pass the set through unchanged:

* ``rtl_sim.units`` gives each SV unit the subset of keys it declares as
  parameters (no renaming, no arithmetic);
* ``hls.units`` writes every key as a ``static const`` of the generated config
  struct; the HLS headers declare their types as ``ap_int<C::X_W>`` /
  ``ap_uint<C::X_W>`` from them (``tests/test_hls_widths.py`` compiles the
  headers and checks each type's width against this set and the SV
  parameters).

It is the spec's one set of integer constants: the scalar transcriptions in
the tests (``tests/test_softmax.py``, ``tests/test_softmax_frozen.py``) and
hls4ml's own config (``EPS_POW10`` ...) read it too, with its encodings
(``*_RND``/``*_OVF`` are the ``hwa_pkg`` codes below, not 0/1 flags).

Width conventions: ``X_W`` is the width of the value's hardware type. Values
that are never negative are unsigned (``ap_uint``, SV ``logic [X_W-1:0]``) and
``X_W`` counts magnitude bits only; values that can be negative are two's
complement and ``X_W`` includes the sign bit. Each spec's docstring table says
which is which.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hwapprox.fixed import FixedFormat, Overflow, Rounding

__all__ = [
    "OVERFLOW_CODES",
    "ROUNDING_CODES",
    "overflow_code",
    "raw_width",
    "rounding_code",
    "row_stream_params",
    "sbits",
    "table_width",
    "ubits",
]

#: ``hwa_pkg`` RND_* codes (ap_fixed quantisation modes), in code order.
ROUNDING_CODES: dict[Rounding, int] = {
    Rounding.TRN: 0,
    Rounding.TRN_ZERO: 1,
    Rounding.RND: 2,
    Rounding.RND_ZERO: 3,
    Rounding.RND_INF: 4,
    Rounding.RND_MIN_INF: 5,
    Rounding.RND_CONV: 6,
}
#: ``hwa_pkg`` OVF_* codes (ap_fixed overflow modes), in code order.
OVERFLOW_CODES: dict[Overflow, int] = {
    Overflow.WRAP: 0,
    Overflow.SAT: 1,
    Overflow.SAT_ZERO: 2,
    Overflow.SAT_SYM: 3,
}


def rounding_code(mode: Rounding | str) -> int:
    """``hwa_pkg`` RND_* code of an ap_fixed quantisation mode."""
    return ROUNDING_CODES[Rounding(mode)]


def overflow_code(mode: Overflow | str) -> int:
    """``hwa_pkg`` OVF_* code of an ap_fixed overflow mode."""
    return OVERFLOW_CODES[Overflow(mode)]


def ubits(v: int) -> int:
    """Bits of an unsigned type holding every integer in ``[0, v]`` (at least 1)."""
    if v < 0:
        raise ValueError(f"ubits needs v >= 0, got {v}")
    return max(1, int(v).bit_length())


def sbits(lo: int, hi: int) -> int:
    """Bits of a two's-complement type holding every integer in ``[lo, hi]`` (at least 2)."""
    if lo > hi:
        raise ValueError(f"sbits needs lo <= hi, got [{lo}, {hi}]")
    return max(2, (-lo - 1).bit_length() + 1 if lo < 0 else 0, int(hi).bit_length() + 1)


def table_width(values: npt.ArrayLike) -> int:
    """Word width of a look-up table: the fewest bits holding every entry.

    Two's complement (sign bit included) when an entry is negative, else
    unsigned; at least 1 (an empty table: 1). The HLS ROM type
    (``hls.emit.table_type``: ``ap_int<W>``/``ap_uint<W>``) is this width.
    """
    v = np.asarray(values, dtype=np.int64)
    if v.size == 0:
        return 1
    lo, hi = int(v.min()), int(v.max())
    if lo < 0:
        return max((-lo - 1).bit_length(), hi.bit_length()) + 1
    return max(hi.bit_length(), 1)


def raw_width(fmt: FixedFormat) -> int:
    """Width of the signed integer that holds every raw code of ``fmt``.

    ``fmt.width`` for ``ap_fixed``; ``fmt.width + 1`` for ``ap_ufixed`` (a
    zero-extended code, as ``hwapprox::raw_of`` reads it).
    """
    return fmt.width if fmt.signed else fmt.width + 1


def row_stream_params(row_max: int) -> dict[str, int]:
    """Row buffer geometry of a row-wise streaming unit holding rows of ``1..row_max``.

    ``ROW_MAX``; ``BUF_DEPTH`` = the power of two >= 2·row_max (a row streams
    out while the next one streams in); ``ROWQ`` = 4 rows may wait for output;
    ``N_BITS`` = a counter of up to ``row_max`` elements plus one spare bit.
    These depend on the instance's row length, not on the spec's arithmetic.
    """
    if row_max < 1:
        raise ValueError(f"row_max must be >= 1, got {row_max}")
    return {
        "ROW_MAX": row_max,
        "BUF_DEPTH": 1 << max(2 * row_max - 1, 0).bit_length(),
        "ROWQ": 4,
        "N_BITS": row_max.bit_length() + 1,
    }
