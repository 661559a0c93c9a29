"""Atomic writes: a reader (or an interrupted run) never sees a half-written file."""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_json", "atomic_write_text"]


def atomic_write(path: str | os.PathLike, write: Callable[[io.BufferedWriter], Any]) -> Path:
    """Write ``path`` through ``write(fileobj)`` into a temporary file, then rename it in place.

    The temporary file lives in the same folder (so the rename is atomic on POSIX) and is
    fsync'ed before the rename; on any error it is removed and ``path`` keeps its old content.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "sub" / "x.txt"
    >>> _ = atomic_write(p, lambda f: f.write(b"hello"))
    >>> p.read_text()
    'hello'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Atomically write ``data`` to ``path`` (see :func:`atomic_write`)."""
    return atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Atomically write UTF-8 ``text`` to ``path`` (see :func:`atomic_write`)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Atomically write ``obj`` as indented, key-sorted JSON (byte-stable for equal objects)."""
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")
