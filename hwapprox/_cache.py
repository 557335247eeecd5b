"""The per-user cache directory: ``$HWAPPROX_CACHE`` or ``~/.cache/hwapprox``.

Everything the package caches on disk lives under it: g++ harnesses
(:mod:`hwapprox._cxx`), Verilator builds and place-and-route runs
(:mod:`hwapprox.rtl_sim`), piecewise-linear fits (:mod:`hwapprox.approx.fntable`).
Imports nothing of the package.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """``$HWAPPROX_CACHE`` or ``~/.cache/hwapprox``; created on demand."""
    root = Path(os.environ.get("HWAPPROX_CACHE", Path.home() / ".cache" / "hwapprox"))
    root.mkdir(parents=True, exist_ok=True)
    return root
