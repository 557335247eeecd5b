"""The spec/model contract every approximation follows.

A spec is a frozen dataclass (method constants, formats, table sizes). From
it, and only from it, come:

* :meth:`ApproxSpec.model` -- raw integer codes of ``in_fmt`` to raw codes of
  ``out_fmt``, pure integer numpy (the truth HLS and RTL must match);
* :meth:`ApproxSpec.tables` -- every look-up table as exact integers;
* :meth:`ApproxSpec.params` -- every other integer constant/width the hardware
  needs (written into HLS config headers and SV parameters);
* :meth:`ApproxSpec.reference` -- the float64 function approximated;
* :meth:`ApproxSpec.cost` -- a pre-synthesis cost summary.

Formats are :class:`~hwapprox.fixed.FixedFormat`; fields annotated with it
accept the HLS spelling (``"ap_fixed<16,6>"``) and are parsed on construction.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Self, TypeVar

import numpy as np
import numpy.typing as npt

from hwapprox._cache import BoundedMemo
from hwapprox.approx import _kernels
from hwapprox.fixed import MAX_RAW_BITS, FixedFormat, FixedPointError, Overflow, Rounding

__all__ = [
    "ApproxSpec",
    "Cost",
    "ElementwiseSpec",
    "Operator",
    "RowwiseSpec",
    "SpecError",
    "broadcast_mask",
    "require",
]

RawArray = npt.NDArray[np.int64]
#: arrays from this many elements get :meth:`ApproxSpec.check_input`'s compiled range check
_RANGE_KERNEL_MIN = 1 << 12


class SpecError(ValueError):
    """A spec whose parameters are invalid or cannot hold its intermediates."""


def require(ok: object, message: str | Callable[[], str]) -> None:
    """The one check spec validation is written with: raise :class:`SpecError` unless ``ok``.

    ``message`` names the field and its value, the limit it breaks and, where
    there is one, the fix (``"IBertGelu.erf_shift=41: must be in [0, 40]"``;
    :meth:`ApproxSpec._require` writes that form). A callable is called only
    when the check fails, for a message whose hint costs a search.
    """
    if not ok:
        raise SpecError(message() if callable(message) else message)


def broadcast_mask(mask: npt.ArrayLike, shape: tuple[int, ...]) -> npt.NDArray[np.bool_]:
    """``mask`` as a bool array of ``shape`` (a read-only broadcast view), or SpecError."""
    mk = np.asarray(mask)
    if mk.dtype != np.bool_:
        raise SpecError(
            f"mask must be a bool array (True = masked out), got dtype {mk.dtype}; "
            "convert a 0/1 attention mask (1 = attend) with `attention_mask == 0`"
        )
    try:
        return np.broadcast_to(mk, shape)
    except ValueError:
        raise SpecError(
            f"mask of shape {mk.shape} does not broadcast to the input shape {shape}; "
            "give the input's shape or size-1 axes where it repeats "
            "(e.g. [B,1,1,S] against [B,H,S,S])"
        ) from None


class Operator(enum.StrEnum):
    SOFTMAX = "softmax"
    GELU = "gelu"
    LAYERNORM = "layernorm"
    #: σ(x + b) per score (sigmoid attention): no row reduction
    SIGMOID_ATTENTION = "sigmoid_attention"
    #: ReLU(x) / n per score (ReLU attention): no row reduction
    RELU_ATTENTION = "relu_attention"


#: attention normalisers computed per score (no row reduction; a padding mask's -inf
#: saturates their input): the sites export treats elementwise, like GELU
ELEMENTWISE_ATTENTION = (Operator.SIGMOID_ATTENTION, Operator.RELU_ATTENTION)


@dataclass(frozen=True, slots=True)
class Cost:
    """Pre-synthesis cost of one lane of a unit.

    ``table_bits`` sums entries × entry width over all tables; multipliers and
    adders count distinct operators per element (``mult_bits`` lists the
    operand widths ``(a, b)`` of each multiplier); ``widest_bits`` is the widest
    intermediate; ``dividers`` counts true dividers (per row or per element, see
    ``notes``).
    """

    table_bits: int = 0
    tables: int = 0
    multipliers: int = 0
    mult_bits: tuple[tuple[int, int], ...] = ()
    adders: int = 0
    dividers: int = 0
    widest_bits: int = 0
    notes: str = ""

    def score(self) -> float:
        """One scalar for ranking specs: LUT-equivalent area, rough.

        A table bit counts 1/64 of a LUT6 (distributed ROM), a multiplier
        ``a·b/16`` LUTs (no DSP), an adder its widest width, a divider
        ``widest²/8``. Only for ordering candidates; measure real designs with
        ``hwapprox rtl synth``.
        """
        mults = sum(a * b for a, b in self.mult_bits) / 16.0
        if not self.mult_bits:
            mults = self.multipliers * (self.widest_bits**2) / 16.0
        return (
            self.table_bits / 64.0
            + mults
            + self.adders * self.widest_bits
            + self.dividers * self.widest_bits**2 / 8.0
        )

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["mult_bits"] = [list(p) for p in self.mult_bits]
        d["score"] = round(self.score(), 2)
        return d


@dataclass(frozen=True)
class ApproxSpec(abc.ABC):
    """Base of every method spec. Subclasses are ``@dataclass(frozen=True)``.

    Class attributes each subclass sets: ``operator``, ``method`` (registry
    name), ``source`` (paper/repository it follows).
    """

    operator: ClassVar[Operator]
    method: ClassVar[str]
    source: ClassVar[str] = ""

    in_fmt: FixedFormat
    out_fmt: FixedFormat

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            self._check_scalar_type(f, value)
            if isinstance(value, FixedFormat) or (
                value is not None and f.type in ("FixedFormat", "FixedFormat | None", FixedFormat)
            ):
                try:
                    fmt = FixedFormat.parse(value)
                except FixedPointError as exc:
                    raise SpecError(f"{type(self).__name__}.{f.name}: {exc}") from None
                self._require(
                    fmt.width <= MAX_RAW_BITS,
                    f.name,
                    fmt,
                    f"at most {MAX_RAW_BITS} bits wide (raw codes are int64); use a narrower "
                    "format",
                )
                object.__setattr__(self, f.name, fmt)
        self.validate()

    def _check_scalar_type(self, f: dataclasses.Field[Any], value: Any) -> None:
        """A field whose default is a bool / int / float / str takes a value of that type
        (an int where a float is expected; None where the annotation allows it), so a
        config's ``segments: abc`` is refused naming the field, not deep in the model."""
        default = f.default
        if "FixedFormat" in str(f.type) or isinstance(value, FixedFormat):
            return  # formats are parsed (and refused with their own message) below
        if default is dataclasses.MISSING or default is None or value is None:
            needs_value = default is not None and default is not dataclasses.MISSING
            if value is None and needs_value and "None" not in str(f.type):
                self._require(False, f.name, "None", f"needs a {type(default).__name__}")
            return
        if isinstance(default, bool):
            ok, want = isinstance(value, bool | np.bool_), "a bool (true or false)"  # as validate()
        elif isinstance(default, int):
            ok = isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)
            want = "must be an integer"
        elif isinstance(default, float):
            ok = isinstance(value, int | float | np.integer | np.floating) and not isinstance(
                value, bool | np.bool_
            )
            want = "must be a number"
        elif isinstance(default, str):
            ok, want = isinstance(value, str), "must be a string"
        else:
            return
        self._require(ok, f.name, repr(value), want)

    # -- to be provided by each method ---------------------------------------
    def validate(self) -> None:  # noqa: B027 - optional hook
        """Raise :class:`SpecError` naming the field, value and limit (:func:`require`)."""

    def _require(
        self, ok: object, field: str, value: object, limit: str | Callable[[], str]
    ) -> None:
        """:func:`require` with the usual message ``"<Class>.<field>=<value>: <limit>"``.

        ``value`` is written with ``str`` (pass ``repr(v)`` for quotes);
        ``limit`` may be a callable, called only when the check fails.
        """
        require(
            ok,
            lambda: (
                f"{type(self).__name__}.{field}={value}: {limit() if callable(limit) else limit}"
            ),
        )

    @abc.abstractmethod
    def model(self, raw: npt.ArrayLike, **kw: Any) -> RawArray:
        """Raw ``in_fmt`` codes -> raw ``out_fmt`` codes (pure integer numpy)."""

    @abc.abstractmethod
    def reference(self, x: npt.ArrayLike, **kw: Any) -> npt.NDArray[np.float64]:
        """The float64 function this method approximates."""

    def tables(self) -> dict[str, RawArray]:
        """Every look-up table, name -> exact integer entries (the ROM contents)."""
        return {}

    @abc.abstractmethod
    def cost(self) -> Cost:
        """Pre-synthesis cost summary."""

    # -- shared behaviour ----------------------------------------------------
    def check_input(self, raw: npt.ArrayLike) -> RawArray:
        """Raw codes as int64, refusing floats and codes outside ``in_fmt``. A large
        C-contiguous int64 array is range-checked in one compiled pass
        (:func:`._kernels.codes_in_range`) and returned as it is, as ``in_fmt.check``
        returns it; outside codes still get ``in_fmt.check``'s error."""
        fmt = self.in_fmt
        try:
            if (
                type(raw) is np.ndarray  # not a subclass: in_fmt.check returns a base array
                and raw.dtype == np.int64
                and raw.size >= _RANGE_KERNEL_MIN
                and raw.flags.c_contiguous
                and _kernels.available()
            ):
                fmt._check_raw_width()
                if _kernels.codes_in_range(raw.reshape(-1), fmt.min_raw, fmt.max_raw):
                    return raw
            return fmt.check(raw, f"{self.operator}/{self.method} input")
        except FixedPointError as exc:
            raise SpecError(str(exc)) from None

    def evaluate(
        self, x: npt.ArrayLike, dtype: npt.DTypeLike = np.float64, **kw: Any
    ) -> npt.NDArray[np.floating]:
        """Quantise reals to ``in_fmt``, run :meth:`model`, return reals as ``dtype``
        (float64, or float32: the float64 reals rounded as numpy's ``astype`` does).
        A float32 ``x`` is quantised as it is (float32 -> float64 is exact)."""
        arr = np.asarray(x)
        if arr.dtype != np.float32:
            arr = arr.astype(np.float64)
        raw = self.quantize_input(arr)
        return self.output_to_float(self.model(raw, **kw), dtype)

    def output_to_float(
        self, raw: npt.ArrayLike, dtype: npt.DTypeLike = np.float64
    ) -> npt.NDArray[np.floating]:
        """Reals of :meth:`model`'s raw outputs (``out_fmt`` values; a spec whose model
        returns other codes, e.g. a softmax's log codes, decodes them here), as
        ``dtype`` (float64 exact for widths <= 53; float32 rounds that float64)."""
        return _codes_to_float(raw, self.out_fmt, dtype)

    def _f32_quant(self) -> tuple[float, float, float, bool] | None:
        """``(scale, lo, hi, round)`` of the compiled float32 quantisation into ``in_fmt``
        (a saturating AP_RND / AP_TRN format of ``W <= 52``, ``F >= 0``), else None."""
        return _f32_quant_of(self.in_fmt) if _kernels.available() else None

    def quantize_input(self, x: npt.ArrayLike) -> RawArray:
        """Reals -> raw ``in_fmt`` codes (with the format's own modes). float32 arrays into
        a saturating AP_RND / AP_TRN format of ``W <= 52``, ``F >= 0`` (onnxruntime's
        site tensors) take one compiled pass, the same values."""
        arr = np.asarray(x)
        q = self._f32_quant() if arr.dtype == np.float32 and arr.size else None
        if q is not None:
            flat = np.ascontiguousarray(arr).reshape(-1)
            out = np.empty(flat.shape, dtype=np.int64)
            if _kernels.quantize_f32(flat, *q, out):
                return out.reshape(arr.shape)
        return self.in_fmt.quantize(x)

    def to_config(self) -> dict[str, Any]:
        """Plain-data form (formats in HLS spelling); inverse of :func:`from_config`."""
        out: dict[str, Any] = {"operator": str(self.operator), "method": self.method}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, FixedFormat):
                v = str(v)
            elif isinstance(v, enum.Enum):
                v = v.value
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed (validated again). Fields the spec derived
        (left None at construction, e.g. the online softmax's internal formats from
        ``out_fmt`` and ``row_max``) are derived again unless ``changes`` sets them."""
        derived = getattr(self, "_derived", frozenset())
        changes = {**dict.fromkeys(derived), **changes}
        names = _init_names(type(self))
        if not set(changes) <= names:
            return dataclasses.replace(self, **changes)  # its error names the field
        kw = {k: getattr(self, k) for k in names}
        kw.update(changes)
        return new_spec(type(self), kw)

    def describe(self) -> str:
        """One line: method, formats and non-default fields."""
        parts = [f"{self.operator}/{self.method}", f"in={self.in_fmt}", f"out={self.out_fmt}"]
        for f in dataclasses.fields(self):
            if f.name in ("in_fmt", "out_fmt"):
                continue
            parts.append(f"{f.name}={getattr(self, f.name)}")
        return " ".join(parts)


@functools.lru_cache(maxsize=256)
def _f32_quant_of(fmt: FixedFormat) -> tuple[float, float, float, bool] | None:
    """:meth:`ApproxSpec._f32_quant`'s arguments for ``fmt`` (memoised per format)."""
    if (
        fmt.width <= 52
        and fmt.frac_bits >= 0
        and fmt.overflow in (Overflow.SAT, Overflow.SAT_SYM)
        and fmt.rounding in (Rounding.RND, Rounding.TRN)
    ):
        lo, hi = fmt._sat_bounds()
        return 2.0**fmt.frac_bits, float(lo), float(hi), fmt.rounding is Rounding.RND
    return None


@functools.cache
def field_names(cls: type) -> frozenset[str]:
    """The names of a spec class's fields (read once per class: ``dataclasses.fields``
    costs microseconds, and specs are resolved per site and call)."""
    return frozenset(f.name for f in dataclasses.fields(cls))


@functools.cache
def _init_names(cls: type) -> frozenset[str]:
    """The names of a spec class's ``__init__`` fields (read once per class)."""
    return frozenset(f.name for f in dataclasses.fields(cls) if f.init)


#: specs built from the same field values (the same types) are built once: a spec is
#: frozen, so one instance serves every caller (validation and derivation run once)
_SPEC_CACHE: BoundedMemo[ApproxSpec] = BoundedMemo(4096)
SpecT = TypeVar("SpecT", bound=ApproxSpec)
_PLAIN = (int, bool, str, type(None))


def _spec_key(cls: type, fields: dict[str, Any]) -> tuple[Any, ...] | None:
    """A key telling the field values apart by type and value (floats by their bits:
    -0.0 is not 0.0, 1.0 not 1 or True); None when a value is of another kind."""
    parts: list[Any] = [cls]
    for k in sorted(fields):
        v = fields[k]
        t = type(v)
        if t is float:
            parts.append((k, t, v.hex()))
        elif t in _PLAIN or t is FixedFormat or isinstance(v, enum.Enum):
            parts.append((k, t, v))
        else:
            return None
    return tuple(parts)


def new_spec(cls: type[SpecT], fields: dict[str, Any]) -> SpecT:
    """``cls(**fields)``, built once per distinct field values (:data:`_SPEC_CACHE`);
    a construction that raises is not kept (it raises again)."""
    key = _spec_key(cls, fields)
    if key is not None:
        hit = _SPEC_CACHE.get(key, None)
        if hit is not None:
            return hit  # type: ignore[return-value]
    spec = cls(**fields)
    if key is not None:
        _SPEC_CACHE.put(key, spec)
    return spec


class RowwiseSpec(ApproxSpec):
    """Softmax/LayerNorm: the model works on rows along ``axis``.

    Subclasses implement :meth:`_model_rows` on a C-contiguous ``(R, N)``
    int64 array (N >= 1) and may take extra keyword arguments.
    """

    @abc.abstractmethod
    def _model_rows(self, x: RawArray, **kw: Any) -> RawArray: ...

    def model(
        self,
        raw: npt.ArrayLike,
        axis: int = -1,
        mask: npt.ArrayLike | None = None,
        **kw: Any,
    ) -> RawArray:
        """Raw codes -> raw codes, row by row along ``axis``.

        ``mask`` (methods whose :meth:`_model_rows` takes a ``mask`` argument,
        the softmax specs): a bool array broadcastable to ``raw``'s shape,
        True = masked out. It is broadcast, moved and reshaped with ``raw``
        and reaches ``_model_rows`` as a C-contiguous ``(R, N)`` bool array;
        a mask without any True reaches it as None (the unmasked path).
        """
        x, lead, mk = self._rows_of(raw, axis, mask)
        if mask is not None:
            kw["mask"] = mk
        y = self._model_rows(x, **kw)
        n = x.shape[1]
        y = y.reshape(*lead, n)
        return y if axis in (-1, len(lead)) else np.moveaxis(y, -1, axis)

    def _rows_of(
        self, raw: npt.ArrayLike, axis: int = -1, mask: npt.ArrayLike | None = None
    ) -> tuple[RawArray, tuple[int, ...], npt.NDArray[np.bool_] | None]:
        """:meth:`model`'s input handling: checked codes as a C-contiguous ``(R, N)``
        array (rows along ``axis``), the leading shape, and the mask as ``(R, N)``
        bools (None when there is none or it has no True)."""
        x = self.check_input(raw)
        if x.ndim == 0:
            raise SpecError(f"{self.operator}/{self.method} needs at least one axis, got a scalar")
        if mask is not None:
            if not _takes_mask(type(self)):
                raise SpecError(
                    f"{self.operator}/{self.method} does not take a mask "
                    "(its _model_rows has no mask argument; the softmax models do)"
                )
            mk = broadcast_mask(mask, x.shape)
        if axis not in (-1, x.ndim - 1):  # (rows already along the last axis: no move)
            try:
                x = np.moveaxis(x, axis, -1)
            except np.exceptions.AxisError:
                raise SpecError(
                    f"axis={axis} is out of range for an input of shape {x.shape}"
                ) from None
        n = x.shape[-1]
        if n == 0:
            raise SpecError(f"{self.operator}/{self.method}: rows of length 0 (shape {x.shape})")
        lead = x.shape[:-1]
        rows_mask = None
        if mask is not None:
            mk = np.ascontiguousarray(np.moveaxis(mk, axis, -1).reshape(-1, n))
            rows_mask = mk if mk.any() else None
        return np.ascontiguousarray(x.reshape(-1, n)), lead, rows_mask


@functools.cache
def _takes_mask(cls: type[RowwiseSpec]) -> bool:
    """True when ``cls._model_rows`` has a ``mask`` argument (read once per class)."""
    return "mask" in inspect.signature(cls._model_rows).parameters


def _codes_to_float(
    raw: npt.ArrayLike, fmt: FixedFormat, dtype: npt.DTypeLike
) -> npt.NDArray[np.floating]:
    """``fmt.to_float(raw).astype(dtype)``; int64 codes go in one compiled pass."""
    dt = np.dtype(dtype)
    arr = np.asarray(raw)
    if (
        dt in (np.float32, np.float64)
        and arr.dtype == np.int64
        and arr.size
        and abs(fmt.frac_bits) <= 960
        and fmt.width <= 53
        and _kernels.available()
    ):
        out = np.empty(arr.shape, dtype=dt)
        _kernels.codes_to_float(
            np.ascontiguousarray(arr).reshape(-1), 2.0**-fmt.frac_bits, out.reshape(-1)
        )
        return out
    y = fmt.to_float(raw)
    return y if dt == np.float64 else y.astype(dt)


@functools.lru_cache(maxsize=24)
def _elementwise_float_memo(spec: ElementwiseSpec) -> npt.NDArray[np.float64]:
    """The output real (float64) of every ``in_fmt`` code: :func:`_elementwise_memo`
    through :meth:`ApproxSpec.output_to_float` (read-only)."""
    memo = spec.output_to_float(_elementwise_memo(spec))
    memo.setflags(write=False)
    return memo


def error_sums_result(
    res: tuple[Any, ...],
) -> tuple[int, float, float, float, float, float, float] | None:
    """:meth:`ElementwiseSpec.error_sums` from its pass's result (None: a NaN/inf input)."""
    ok, n, mx, s1, s2, sr, mq, ma = res
    if not ok:
        return None
    return int(n), float(mx), float(s1), float(s2), float(sr), float(mq), float(ma)


@functools.lru_cache(maxsize=24)
def _elementwise_f32_memo(spec: ElementwiseSpec) -> npt.NDArray[np.float32]:
    """:func:`_elementwise_float_memo` rounded to float32 as ``astype`` rounds (read-only)."""
    memo = _elementwise_float_memo(spec).astype(np.float32)
    memo.setflags(write=False)
    return memo


def _elementwise_stored_memo(
    spec: ElementwiseSpec, dtype: np.dtype[Any]
) -> npt.NDArray[np.floating]:
    """:func:`_elementwise_float_memo` as stored in ``dtype`` (read-only): the model's
    output reals the per-site metrics compare. float32: the float32 table the emulation
    gathers from (:func:`_elementwise_f32_memo`; the kernels widen each value exactly,
    and half the bytes of a float64 copy: the GELU report 12 % faster with cold caches)."""
    return _elementwise_f32_memo(spec) if dtype == np.float32 else _elementwise_float_memo(spec)


@functools.lru_cache(maxsize=64)
def _elementwise_ref_memo(spec: ElementwiseSpec) -> npt.NDArray[np.float64]:
    """``spec.reference`` (float64) of the real of every ``in_fmt`` code, index
    ``x - in_fmt.min_raw`` (read-only). Only a speed-up: the references are elementwise
    functions of each value (:meth:`ElementwiseSpec.quantized_reference`)."""
    memo = np.ascontiguousarray(
        spec.reference(spec.in_fmt.to_float(spec.in_fmt.all_codes())), dtype=np.float64
    )
    memo.setflags(write=False)
    return memo


#: elementwise inputs up to this width are mapped through a memo of the model over
#: every input code (2^20 int64 entries: 8 MiB at most)
ELEMENTWISE_MEMO_BITS = 20
#: ... built at once up to this width; between it and ELEMENTWISE_MEMO_BITS only for
#: calls with at least an eighth as many elements as there are codes
_MEMO_EAGER_BITS = 16


@functools.lru_cache(maxsize=24)
def _elementwise_memo(spec: ElementwiseSpec) -> RawArray:
    """``spec._model_flat`` of every ``in_fmt`` code, index ``x - in_fmt.min_raw``
    (read-only). Only a speed-up: the model is a function of the code alone."""
    memo = spec._model_flat(spec.in_fmt.all_codes())
    memo.setflags(write=False)
    return memo


class ElementwiseSpec(ApproxSpec):
    """GELU-like elementwise units: subclasses implement :meth:`_model_flat`, a pure
    function of each input code.

    :meth:`model` maps inputs of at most :data:`ELEMENTWISE_MEMO_BITS` through a
    memo of ``_model_flat`` over every input code (built once per spec: eagerly
    up to 16 bits, above that when a call is large enough to repay it), so a
    call costs one gather; the values are ``_model_flat``'s by construction
    (``tests/test_model_fastpath.py`` compares the two on every code).
    """

    @abc.abstractmethod
    def _model_flat(self, x: RawArray) -> RawArray: ...

    def evaluate(
        self, x: npt.ArrayLike, dtype: npt.DTypeLike = np.float64, **kw: Any
    ) -> npt.NDArray[np.floating]:
        """:meth:`ApproxSpec.evaluate`; a float32 ``x`` (onnxruntime's site tensors) of
        an input format of at most 16 bits goes from reals to reals in one compiled pass
        (quantise, then gather from the output real of every input code): the same
        values as quantise -> :meth:`model` -> :meth:`output_to_float`."""
        arr = np.asarray(x)
        run = self.f32_runner(arr, dtype)
        if run is not None:
            y = run(np.ascontiguousarray(arr).reshape(-1))
            if y is not None:
                return y.reshape(arr.shape)
        return super().evaluate(x, dtype, **kw)

    def f32_runner(
        self, x: npt.NDArray[Any], dtype: npt.DTypeLike = np.float64
    ) -> Callable[[npt.NDArray[np.float32]], npt.NDArray[np.floating] | None] | None:
        """:meth:`evaluate`'s compiled pass for inputs like ``x`` (float32, not empty),
        its arguments resolved once: ``run(flat)`` of C-contiguous 1-D float32 ``flat``
        gives the reals of ``dtype`` (flat), or None if a value is NaN/inf (the codes
        path then gives them). None where the pass does not apply: ``x`` not float32
        or empty, an input format above 16 bits or that the compiled quantisation does
        not cover, ``dtype`` not float32/float64, no numba."""
        dt = np.dtype(dtype)
        q = self._f32_quant() if x.dtype == np.float32 and x.size else None
        if q is None or self.in_fmt.width > _MEMO_EAGER_BITS or dt not in (np.float32, np.float64):
            return None
        # (float32 out: gathered from the table already rounded to float32, as the
        # store would round it: the same values from half the memory; 2 % of the
        # embedded example's emulation)
        table = _elementwise_stored_memo(self, dt)
        lo, gather = self.in_fmt.min_raw, _kernels.quantize_gather

        def run(flat: npt.NDArray[np.float32]) -> npt.NDArray[np.floating] | None:
            out = np.empty(flat.shape, dtype=dt)
            return out if gather(flat, *q, lo, table, out) else None

        return run

    def quantized_reference(self, x: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """``reference(in_fmt.to_float(quantize_input(x)))``: the float64 function the
        spec approximates, of the quantised input (what an exact unit with this
        ``in_fmt`` gives). Input formats of at most 16 bits gather from a memo of the
        reference over every input code (float32 ``x``: quantise and gather in one
        compiled pass): the same values, since the reference is elementwise
        (``tests/test_model_fastpath.py`` compares the two)."""
        arr = np.asarray(x)
        if arr.dtype != np.float32:
            arr = arr.astype(np.float64)
        if self.in_fmt.width > _MEMO_EAGER_BITS or not arr.size:
            return self.reference(self.in_fmt.to_float(self.quantize_input(arr)))
        table = _elementwise_ref_memo(self)
        q = self._f32_quant() if arr.dtype == np.float32 else None
        if q is not None:
            flat = np.ascontiguousarray(arr).reshape(-1)
            out = np.empty(flat.shape, dtype=np.float64)
            if _kernels.quantize_gather(flat, *q, self.in_fmt.min_raw, table, out):
                return out.reshape(arr.shape)
        raw = self.quantize_input(arr)
        lo = self.in_fmt.min_raw
        return table[raw - np.int64(lo)] if lo else table[raw]

    def error_sums(
        self, x: npt.ArrayLike, y_float: npt.ArrayLike, dtype: npt.DTypeLike = np.float64
    ) -> tuple[int, float, float, float, float, float, float] | None:
        """``_kernels.err_stats3(evaluate(x, dtype), y_float, quantized_reference(x))``
        over every element (count, max, Σ|d|, Σd², Σ y_float², max quantisation and
        approximation differences) in one compiled pass that builds neither array: the
        same figures. None where that pass does not apply (not float32 ``x`` and
        ``y_float`` of one shape, an input format above 16 bits, no numba, a NaN/inf);
        the caller then takes the arrays' path."""
        p = self.error_sums_pass(x, y_float, dtype)
        return None if p is None else error_sums_result(p[0](*p[1]))

    def error_sums_pass(
        self, x: npt.ArrayLike, y_float: npt.ArrayLike, dtype: npt.DTypeLike = np.float64
    ) -> tuple[Callable[..., Any], tuple[Any, ...]] | None:
        """:meth:`error_sums`' compiled pass as ``(kernel, args)``, not run (None where it
        does not apply): ``error_sums_result(kernel(*args))`` is :meth:`error_sums`."""
        arr, yf = np.asarray(x), np.asarray(y_float)
        dt = np.dtype(dtype)
        if (
            arr.dtype != np.float32
            or yf.dtype != np.float32
            or arr.shape != yf.shape
            or not arr.size
            or dt not in (np.float32, np.float64)
            or self.in_fmt.width > _MEMO_EAGER_BITS
        ):
            return None
        q = self._f32_quant()
        if q is None:
            return None
        t_y = _elementwise_stored_memo(self, dt)
        args = (
            np.ascontiguousarray(arr).reshape(-1),
            np.ascontiguousarray(yf).reshape(-1),
            *q,
            self.in_fmt.min_raw,
            t_y,
            _elementwise_ref_memo(self),
        )
        return _kernels.gather_err_stats3, args

    def model(self, raw: npt.ArrayLike, **kw: Any) -> RawArray:
        w = self.in_fmt.width
        arr = np.asarray(raw)
        if (
            w <= _MEMO_EAGER_BITS
            and arr.dtype.kind in "iu"
            and arr.dtype.itemsize <= 8
            and arr.size
            and _kernels.available()
        ):  # range check and lookup in one compiled pass (errors: check_input's)
            flat = np.ascontiguousarray(arr).reshape(-1)
            out = np.empty(flat.shape, dtype=np.int64)
            lo, hi = self.in_fmt.min_raw, self.in_fmt.max_raw
            if flat.dtype == np.uint64 and int(flat.max()) > hi:
                pass  # beyond int64: the general path names it
            elif _kernels.memo_lookup(flat, _elementwise_memo(self), lo, hi, out):
                return out.reshape(arr.shape)
        x = self.check_input(raw)
        if w <= _MEMO_EAGER_BITS or (w <= ELEMENTWISE_MEMO_BITS and x.size << 3 >= 1 << w):
            memo = _elementwise_memo(self)
            lo = self.in_fmt.min_raw
            return memo[x - np.int64(lo)] if lo else memo[x]
        return self._model_flat(x.ravel()).reshape(x.shape)
