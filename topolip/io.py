"""Atomic writes (a reader, or an interrupted run, never sees a half-written file) and the plain
JSON form of a value (:func:`json_plain`)."""

from __future__ import annotations

import io
import json
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "atomic_write", "atomic_write_bytes", "atomic_write_json", "atomic_write_text", "json_plain",
    "current_umask", "remove_temporaries",
]

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's file-mode creation mask (e.g. ``0o022``), read without changing it.

    Linux reports it in ``/proc/self/status``; elsewhere it is set and restored under a lock.

    Examples
    --------
    >>> old = os.umask(0o027); current_umask() == 0o027; _ = os.umask(old)
    True
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def remove_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Delete every temporary file :func:`atomic_write` left under ``folder`` (recursively).

    The temporaries are named ``.{name}.XXXX.tmp``; a process killed between writing and
    renaming leaves one behind. Call this only while no other process writes into ``folder``
    (the pipeline holds its run lock): every such file is removed, whatever its mtime (a
    clock set wrong can date it in the future).

    Returns
    -------
    list of Path
        The removed files.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / ".x.csv.ab12.tmp").write_text("half")
    4
    >>> [p.name for p in remove_temporaries(d)]
    ['.x.csv.ab12.tmp']
    """
    folder = Path(folder)
    removed = []
    if not folder.is_dir():
        return removed
    for tmp in folder.rglob(".*.tmp"):
        try:
            if tmp.is_file():
                tmp.unlink()
                removed.append(tmp)
        except FileNotFoundError:
            pass
    return removed


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

    The temporary file, ``.{name}.{pid}.XXXXXXXX.tmp`` (``pid`` the writer's process id), lives
    in the same folder (so the rename is atomic on POSIX) and is fsync'ed before the rename; on
    any error it is removed and ``path`` keeps its old content.
    The file gets the mode a plain ``open(path, "w")`` would give it: ``0o666`` less the umask
    (``0o644`` under the usual ``022``), not the ``0o600`` of a temporary file.

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
    # the writer's pid in the name (".{name}.{pid}.XXXXXXXX.tmp"): a later run removes the
    # temporary of a dead writer at once (topolip.nets.train.remove_stale_temporaries)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                               dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
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
