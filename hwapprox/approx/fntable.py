"""Table datapaths for smooth elementwise functions: direct LUT and piecewise linear.

The same two datapaths serve GELU (:mod:`hwapprox.approx.gelu`) and the sigmoid
of sigmoid attention (:mod:`hwapprox.approx.attnact`); a spec class mixes one of
them in and names its float64 function ``f`` (:meth:`FnSpec._fn`). The RTL units
``hwa_lut``/``hwa_pwl`` and the HLS ``lut_fn``/``pwl_fn`` are likewise shared.

Maths contract
--------------
* :class:`LutTable`: ``y = T[(x - min_code) >> (W - index_bits)]``; ``T[i]`` is
  ``out_fmt.quantize(f(x_i))`` per code, or with fewer index bits the rounded
  midpoint of ``f``'s min and max over the bin (the best constant in L∞).
* :class:`PwlTable`: ``x < B_0 -> 0``; ``x >= B_N -> x`` (``TOP_ONE`` false:
  GELU) or ``1`` (``TOP_ONE`` true: a sigmoid); else segment ``i`` (``B_i <= x <
  B_i+1``) gives ``s_i·x + c_i`` exactly, then one cast into ``out_fmt``.
  Breakpoints are minimax-fitted (:func:`~hwapprox.approx.pwl.fit_pwl`) and
  rounded to input codes; slopes rounded, intercepts refitted for the rounded
  slope and rounded.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import json
import math
import os
import threading
from collections.abc import Callable, Hashable
from fractions import Fraction
from pathlib import Path
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from hwapprox._cache import BoundedMemo, cache_dir
from hwapprox.approx.base import Cost, ElementwiseSpec
from hwapprox.approx.hwparams import overflow_code, rounding_code
from hwapprox.approx.pwl import PwlFit, fit_lines, fit_pwl, minimax_lines
from hwapprox.fixed import MAX_RAW_BITS, FixedFormat, cast

__all__ = ["FnSpec", "LutTable", "PwlTable", "acc_fmt", "round_half_up"]

RawArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
Func = Callable[[FloatArray], FloatArray]

#: a fit's identity: (the function's key, lo, hi, segments)
_FitKey = tuple[Hashable, float, float, int]
_FITS: BoundedMemo[PwlFit] = BoundedMemo(256)
#: the fields a fit on disk holds (:class:`PwlFit`'s, in order)
_FIT_FIELDS = tuple(f.name for f in dataclasses.fields(PwlFit))


@functools.lru_cache(maxsize=16)
def _code_digest(*modules: str) -> str | None:
    """SHA-256 of the fitter's and the function's source files and numpy's version
    (a disk fit is reused only with the code that made it); None without sources."""
    h = hashlib.sha256(np.__version__.encode())
    for name in ("hwapprox.approx.pwl", *modules):
        path = getattr(importlib.import_module(name), "__file__", None)
        if not path:
            return None
        try:
            with open(path, "rb") as f:
                h.update(f.read())
        except OSError:
            return None
    return h.hexdigest()


def _disk_fit(key: _FitKey, module: str) -> tuple[Path | None, PwlFit | None]:
    """The file a fit of ``key`` is kept in (under the cache directory, named by a hash
    of the key and :func:`_code_digest`) and the fit read from it, or None when there
    is none or it does not read back (it is then fitted and written again)."""
    digest = _code_digest(module)
    if digest is None:
        return None, None
    fn_key, lo, hi, segments = key
    name = hashlib.sha256(repr((fn_key, lo.hex(), hi.hex(), segments, digest)).encode())
    try:
        path = cache_dir() / "pwl" / f"{name.hexdigest()[:32]}.json"
    except OSError:
        return None, None
    try:
        d = json.loads(path.read_text())
        fit = PwlFit(*(tuple(float.fromhex(v) for v in d[k]) for k in _FIT_FIELDS))
    except (OSError, ValueError, KeyError, TypeError):
        return path, None
    return path, fit


def _write_fit(path: Path, fit: PwlFit) -> None:
    """Write ``fit`` to ``path`` exactly (floats as hex), atomically; a cache that
    cannot be written is skipped."""
    data = {k: [float(v).hex() for v in getattr(fit, k)] for k in _FIT_FIELDS}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:
        pass


def round_half_up(q: Fraction) -> int:
    """``floor(q + 1/2)``: exact rounding of a rational, ties up."""
    return math.floor(q + Fraction(1, 2))


def acc_fmt(frac_bits: int) -> FixedFormat:
    """A 62-bit signed carrier format with ``frac_bits`` fraction bits (for :func:`cast`)."""
    return FixedFormat(MAX_RAW_BITS, MAX_RAW_BITS - frac_bits, True)


class FnSpec(ElementwiseSpec):
    """An elementwise spec ``y = f(x)`` with ``in_fmt``/``out_fmt`` fields."""

    in_fmt: FixedFormat
    out_fmt: FixedFormat

    def _fn(self) -> Func:
        """The float64 function the tables approximate."""
        raise NotImplementedError

    def _fn_key(self) -> Hashable:
        """A hashable identity of :meth:`_fn` (caches the breakpoint fit)."""
        raise NotImplementedError

    def _to_out(self, raw: RawArray, frac_bits: int) -> RawArray:
        """Exact value ``raw·2^-frac_bits`` into ``out_fmt`` (its rounding, its overflow)."""
        return cast(raw, acc_fmt(frac_bits), self.out_fmt)

    def _hw_common(self) -> dict[str, int]:
        """Formats of the hardware parameter set (:mod:`hwapprox.approx.hwparams`)."""
        return {
            "IN_W": self.in_fmt.width,
            "IN_F": self.in_fmt.frac_bits,
            "OUT_W": self.out_fmt.width,
            "OUT_F": self.out_fmt.frac_bits,
            "OUT_SIGNED": int(self.out_fmt.signed),
            "OUT_RND": rounding_code(self.out_fmt.rounding),
            "OUT_OVF": overflow_code(self.out_fmt.overflow),
        }


class PwlTable(FnSpec):
    """Piecewise-linear datapath (module docstring). Needs the fields ``segments``,
    ``slope_fmt``, ``intercept_fmt`` and a :attr:`fit_range`."""

    segments: int
    slope_fmt: FixedFormat
    intercept_fmt: FixedFormat

    #: ``x >= B_N`` gives 1 (a sigmoid) instead of ``x`` (GELU)
    TOP_ONE: ClassVar[bool] = False
    MAX_SEGMENTS: ClassVar[int] = 1024

    @property
    def fit_range(self) -> tuple[float, float]:
        raise NotImplementedError

    def _check_pwl(self) -> None:
        self._require(
            1 <= self.segments <= self.MAX_SEGMENTS,
            "segments",
            repr(self.segments),
            f"must be in [1, {self.MAX_SEGMENTS}]",
        )
        for name in ("slope_fmt", "intercept_fmt"):
            fmt = getattr(self, name)
            self._require(fmt.signed, name, repr(str(fmt)), "must be signed")
        fa, f_in = self._acc_frac_bits, self.in_fmt.frac_bits
        acc = max(
            self.in_fmt.width + self.slope_fmt.width + fa - f_in - self.slope_fmt.frac_bits,
            self.intercept_fmt.width + fa - self.intercept_fmt.frac_bits,
            self.in_fmt.width + fa - f_in,
            fa + 2 if self.TOP_ONE else 0,
        )
        self._require(
            acc + 2 <= MAX_RAW_BITS,
            "slope_fmt",
            repr(str(self.slope_fmt)),
            f"with in_fmt {self.in_fmt} and intercept_fmt "
            f"{self.intercept_fmt} needs {acc + 2}-bit sums; int64 allows {MAX_RAW_BITS}",
        )
        self._fitted  # noqa: B018 - fits now: raises SpecError if the formats cannot hold it

    def _fit(self) -> PwlFit:
        """:func:`fit_pwl` of the function on :attr:`fit_range`: memoised in the process
        and kept on disk (:func:`_disk_fit`: a fresh process reads the fit, about 0.2 s
        of fitting each, instead of fitting again; the same floats)."""
        lo, hi = self.fit_range
        key = (self._fn_key(), float(lo), float(hi), int(self.segments))
        hit = _FITS.get(key, None)
        if hit is not None:
            return hit
        path, fit = _disk_fit(key, type(self).__module__)
        if fit is None:
            fit = fit_pwl(self._fn(), lo, hi, self.segments)
            if path is not None:
                _write_fit(path, fit)
        return _FITS.put(key, fit)

    @functools.cached_property
    def _fitted(self) -> dict[str, RawArray]:
        fit = self._fit()
        f_in = self.in_fmt.frac_bits
        bp = np.array([round_half_up(Fraction(b) * 2**f_in) for b in fit.breakpoints])
        self._require(
            not np.any(np.diff(bp) <= 0),
            "segments",
            repr(self.segments),
            f"breakpoints collide after rounding to in_fmt {self.in_fmt}; "
            "use fewer segments or more input fraction bits",
        )
        bpf = self.in_fmt.to_float(bp)
        ref = self._fn()
        m, _, _ = minimax_lines(ref, bpf[:-1], bpf[1:])
        s_raw = self.slope_fmt.quantize(m)
        _, c, _ = minimax_lines(ref, bpf[:-1], bpf[1:], slopes=self.slope_fmt.to_float(s_raw))
        c_raw = self.intercept_fmt.quantize(c)
        for name, fmt, vals, raw in (
            ("slope_fmt", self.slope_fmt, m, s_raw),
            ("intercept_fmt", self.intercept_fmt, c, c_raw),
        ):
            err = np.abs(fmt.to_float(raw) - vals)
            self._require(
                not (err > float(fmt.lsb)).any(),
                name,
                repr(str(fmt)),
                lambda err=err, vals=vals: (
                    f"cannot hold the fitted value {vals[int(np.argmax(err))]:.6g}"
                ),
            )
        return {"breakpoints": bp.astype(np.int64), "slopes": s_raw, "intercepts": c_raw}

    @property
    def _acc_frac_bits(self) -> int:
        f_in = self.in_fmt.frac_bits
        return max(f_in + self.slope_fmt.frac_bits, self.intercept_fmt.frac_bits, f_in)

    def fit(self) -> PwlFit:
        """The float fit on the rounded breakpoints (before coefficient rounding)."""
        return fit_lines(self._fn(), self.in_fmt.to_float(self._fitted["breakpoints"]))

    def tables(self) -> dict[str, RawArray]:
        return {k: v.copy() for k, v in self._fitted.items()}

    def _model_flat(self, x: RawArray) -> RawArray:
        t = self._fitted
        bp, s, c = t["breakpoints"], t["slopes"], t["intercepts"]
        f_in, f_s = self.in_fmt.frac_bits, self.slope_fmt.frac_bits
        f_c = self.intercept_fmt.frac_bits
        fa = self._acc_frac_bits
        seg = np.searchsorted(bp[1:-1], x, side="right")
        y = x * s[seg] << np.int64(fa - f_in - f_s)
        y = y + (c[seg] << np.int64(fa - f_c))
        y = np.where(x < bp[0], 0, y)
        top = np.int64(1) << np.int64(fa) if self.TOP_ONE else x << np.int64(fa - f_in)
        y = np.where(x >= bp[-1], top, y)
        return self._to_out(y, fa)

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set: the SV parameters of ``hwa_pwl`` and the HLS constants.

        ``Fa = max(F_in + F_s, F_c, F_in)`` fraction bits of the exact sum;
        ``SH_XS = Fa - F_in - F_s``, ``SH_C = Fa - F_c``, ``SH_X = Fa - F_in``
        align the three terms; ``OUT_SHIFT = Fa - F_out``; ``TOP_ONE``: the
        ``x >= B_N`` branch is ``1 << Fa`` (else ``x << SH_X``).

        ========= ======== =========================================================
        name      sign     value range -> bits
        ========= ======== =========================================================
        PROD_W    signed   ``x·s_i``: ``IN_W + S_W`` (``(-2^(IN_W-1))·(-2^(S_W-1))``
                           needs the top bit)
        ACC_W     signed   ``(x·s_i << SH_XS) + (c_i << SH_C)`` (one carry above the
                           wider term), ``x << SH_X`` or ``1 << Fa`` (``Fa + 2``)
        ========= ======== =========================================================
        """
        f_in, f_s, f_c = (
            self.in_fmt.frac_bits,
            self.slope_fmt.frac_bits,
            self.intercept_fmt.frac_bits,
        )
        fa = self._acc_frac_bits
        w_in, w_s, w_c = self.in_fmt.width, self.slope_fmt.width, self.intercept_fmt.width
        sh_xs, sh_c, sh_x = fa - f_in - f_s, fa - f_c, fa - f_in
        prod_w = w_in + w_s
        top_w = fa + 2 if self.TOP_ONE else w_in + sh_x
        return {
            **self._hw_common(),
            "NSEG": self.segments,
            "S_W": w_s,
            "S_F": f_s,
            "C_W": w_c,
            "C_F": f_c,
            "FA": fa,
            "SH_XS": sh_xs,
            "SH_C": sh_c,
            "SH_X": sh_x,
            "TOP_ONE": int(self.TOP_ONE),
            "OUT_SHIFT": fa - self.out_fmt.frac_bits,
            "PROD_W": prod_w,
            "ACC_W": max(top_w, max(prod_w + sh_xs, w_c + sh_c) + 1),
        }

    def cost(self) -> Cost:
        n = self.segments
        tb = (n + 1) * self.in_fmt.width + n * (self.slope_fmt.width + self.intercept_fmt.width)
        return Cost(
            table_bits=tb,
            tables=3,
            multipliers=1,
            mult_bits=((self.in_fmt.width, self.slope_fmt.width),),
            adders=n + 2,
            widest_bits=self.in_fmt.width + self.slope_fmt.width + 1,
            notes=f"{n + 1} breakpoint comparators (counted as adders), one MAC",
        )


class LutTable(FnSpec):
    """Direct-table datapath (module docstring). Needs the field ``index_bits``
    (0 = the full input width)."""

    index_bits: int

    MAX_INDEX_BITS: ClassVar[int] = 12

    def _check_lut(self) -> None:
        w = self.in_fmt.width
        self._require(
            0 <= self.index_bits <= w,
            "index_bits",
            repr(self.index_bits),
            f"must be in [0, {w}] (0 = the full in_fmt width)",
        )
        fits = self._index_bits <= self.MAX_INDEX_BITS
        self._require(
            fits or self.index_bits != 0,
            "in_fmt",
            repr(str(self.in_fmt)),
            f"has {w} bits; a direct LUT allows at most {self.MAX_INDEX_BITS} index "
            f"bits: set index_bits <= {self.MAX_INDEX_BITS} (index by the top bits) "
            "or use a narrower in_fmt",
        )
        self._require(
            fits, "index_bits", repr(self.index_bits), f"must be <= {self.MAX_INDEX_BITS}"
        )
        self._require(w <= 24, "in_fmt", repr(str(self.in_fmt)), "at most 24 bits for a binned LUT")

    @property
    def _index_bits(self) -> int:
        return self.index_bits or self.in_fmt.width

    @property
    def _shift(self) -> int:
        return self.in_fmt.width - self._index_bits

    @functools.cached_property
    def _table(self) -> RawArray:
        codes = self.in_fmt.all_codes().reshape(1 << self._index_bits, 1 << self._shift)
        ref = self._fn()(self.in_fmt.to_float(codes))
        target = ref[:, 0] if self._shift == 0 else (ref.max(axis=1) + ref.min(axis=1)) / 2.0
        return self.out_fmt.quantize(target)

    def tables(self) -> dict[str, RawArray]:
        return {"lut": self._table.copy()}

    def _model_flat(self, x: RawArray) -> RawArray:
        idx = (x - np.int64(self.in_fmt.min_raw)) >> np.int64(self._shift)
        return self._table[idx]

    def hw_params(self, n: int | None = None) -> dict[str, int]:
        """Hardware parameter set: the SV parameters of ``hwa_lut`` and the HLS constants.

        ``CODE_W``: the offset code ``x - min_code`` (the input with its sign
        bit inverted), unsigned ``IN_W`` bits; ``INDEX_BITS`` of it address
        the table (``INDEX_SHIFT`` low bits dropped).
        """
        return {
            **self._hw_common(),
            "IN_SIGNED": int(self.in_fmt.signed),
            "INDEX_BITS": self._index_bits,
            "INDEX_SHIFT": self._shift,
            "TABLE_SIZE": 1 << self._index_bits,
            "CODE_W": self.in_fmt.width,
        }

    def cost(self) -> Cost:
        return Cost(
            table_bits=(1 << self._index_bits) * self.out_fmt.width,
            tables=1,
            widest_bits=self.out_fmt.width,
            notes="one ROM read; index = input with its sign bit inverted (top bits)",
        )
