"""Caches: the per-user cache directory (``$HWAPPROX_CACHE`` or
``~/.cache/hwapprox``) and the bounded in-process memo.

Everything the package caches on disk lives under the directory: g++ harnesses
(:mod:`hwapprox._cxx`), Verilator builds and place-and-route runs
(:mod:`hwapprox.rtl_sim`), piecewise-linear fits (:mod:`hwapprox.approx.fntable`).
:class:`BoundedMemo` holds the process's memos of pure functions (specs by field
values, fits, quantised LayerNorm parameters, ...). Imports nothing of the package.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from pathlib import Path
from typing import Generic, TypeVar

__all__ = ["BoundedMemo", "cache_dir"]

V = TypeVar("V")
_MISSING = object()


def cache_dir() -> Path:
    """``$HWAPPROX_CACHE`` or ``~/.cache/hwapprox``; created on demand."""
    root = Path(os.environ.get("HWAPPROX_CACHE", Path.home() / ".cache" / "hwapprox"))
    root.mkdir(parents=True, exist_ok=True)
    return root


class BoundedMemo(Generic[V]):
    """A memo of a pure function: at most ``size`` entries, cleared when full (a cheap
    bound for memos whose keys repeat within a run). Threads may share one: a lookup
    and a store are single dict operations, and :meth:`put` returns the value it was
    given, so a clear by another thread between them loses only the entry."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._d: dict[Hashable, V] = {}

    def get(self, key: Hashable, default: object = _MISSING) -> V:
        """The value stored for ``key``; ``default`` (or KeyError) when there is none."""
        v = self._d.get(key, _MISSING)
        if v is _MISSING:
            if default is _MISSING:
                raise KeyError(key)
            return default  # type: ignore[return-value]
        return v  # type: ignore[return-value]

    def put(self, key: Hashable, value: V) -> V:
        """Store ``value`` for ``key`` (first clearing a full memo); returns ``value``."""
        if len(self._d) >= self.size:
            self._d.clear()
        self._d[key] = value
        return value

    def __contains__(self, key: Hashable) -> bool:
        return key in self._d

    def __len__(self) -> int:
        return len(self._d)

    def clear(self) -> None:
        self._d.clear()
