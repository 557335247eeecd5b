"""Output paths checked before the work, so a long run never ends in a traceback
because its destination cannot be written.

:func:`unwritable` says why a directory (existing or to be created) or a file
cannot be written, without creating anything; the commands call it on their
``-o`` / ``--save`` / ``--keep`` paths before they start.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["unwritable"]


def unwritable(path: str | Path, *, kind: str = "directory") -> str | None:
    """None when ``path`` can be written as a ``kind`` ("directory" or "file"), else a
    one-line reason naming the path. Nothing is created."""
    p = Path(path).expanduser()
    if p.exists():
        if kind == "directory" and not p.is_dir():
            return f"output path {str(p)!r} exists and is not a directory; give a directory"
        if kind == "file" and p.is_dir():
            return f"output file {str(p)!r} is a directory; give a file name"
        target = p if kind == "directory" else p.parent
        if not os.access(target, os.W_OK | os.X_OK) or _read_only_fs(target):
            return f"{str(target)!r} is not writable; choose a directory you can write to"
        if kind == "file" and not os.access(p, os.W_OK):
            return f"output file {str(p)!r} is not writable"
        return None
    parent = p.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot create {str(p)!r}: {str(parent)!r} is a file, not a directory"
    if not os.access(parent, os.W_OK | os.X_OK) or _read_only_fs(parent):
        return (
            f"cannot create {str(p)!r}: {str(parent)!r} is not writable; choose a directory "
            "you can write to"
        )
    return None


def _read_only_fs(d: Path) -> bool:
    """True on a file system that refuses writes whatever the permissions say (/proc,
    /sys, read-only mounts; root passes os.access there)."""
    try:
        st = os.statvfs(d)
    except OSError:
        return True
    if st.f_flag & os.ST_RDONLY:
        return True
    return str(d.resolve()).startswith(("/proc", "/sys"))
