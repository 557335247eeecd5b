"""Errors of the export subpackage."""

from __future__ import annotations

__all__ = ["ExportError"]


class ExportError(ValueError):
    """A model, input file or site selection that cannot be used, with the reason."""
