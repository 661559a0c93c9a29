"""Atomic writes (a reader, or an interrupted run, never sees a half-written file) and the plain
JSON form of a value (:func:`json_plain`)."""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "atomic_write", "atomic_write_bytes", "atomic_write_json", "atomic_write_text", "json_plain",
]


def json_plain(obj: Any) -> Any:
    """``obj`` as it reads back from JSON: tuples to lists and mapping keys to ``str``, recursively.

    Specs and parameters compare and hash the same before and after a JSON round trip.

    Parameters
    ----------
    obj : Any
        A value built of mappings, lists, tuples and scalars; other values are returned as they
        are.

    Returns
    -------
    Any
        The same structure with every mapping a ``dict`` with ``str`` keys and every tuple a
        list.

    Examples
    --------
    >>> json_plain({"blocks": (1, 2), 3: [(4,)]})
    {'blocks': [1, 2], '3': [[4]]}
    """
    if isinstance(obj, Mapping):
        return {str(k): json_plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_plain(v) for v in obj]
    return obj


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
