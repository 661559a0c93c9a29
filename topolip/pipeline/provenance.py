"""Provenance: where a number came from (code version, packages, parameters) and tidy tables
written with it."""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from topolip import schema as _schema
from topolip.io import atomic_write_json
from topolip.pipeline._helpers import git, json_safe
from topolip.schema import TableSchema

__all__ = ["library_fingerprint", "provenance", "read_table", "write_table"]

PACKAGES = ("topolip", "torch", "torchvision", "numpy", "scipy", "ripser", "POT", "torchattacks",
            "pandas", "matplotlib")


def library_fingerprint() -> str:
    """SHA-256 (16 hex digits) of the ``topolip`` package sources: changes when any code does."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def provenance(
    params: Mapping[str, Any] | None = None, *, root: str | Path = "."
) -> dict[str, Any]:
    """What produced a result: git commit (and whether the tree was dirty), the library
    fingerprint, Python and package versions, and the parameters. No time stamp, so equal
    inputs give byte-equal sidecars."""
    root = Path(root)
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    status = git("status", "--porcelain", "--untracked-files=no", cwd=root)
    return {
        "git_commit": git("rev-parse", "HEAD", cwd=root),
        "git_dirty": bool(status) if status is not None else None,
        "library_fingerprint": library_fingerprint(),
        "python": platform.python_version(),
        "packages": versions,
        "parameters": json_safe(dict(params or {})),
    }


def write_table(df: pd.DataFrame, path: str | Path, params: Mapping[str, Any] | None = None,
                *, root: str | Path = ".", schema: TableSchema | None = None) -> Path:
    """Write ``df`` as CSV, checked against its declared schema (:func:`topolip.schema.write_table`:
    10 significant digits, byte-stable), and ``<path>.json`` provenance, both atomically.
    Returns the CSV path.

    Raises
    ------
    KeyError
        If no schema is declared for the table (:data:`topolip.schema.SCHEMAS`).
    ValueError
        If ``df`` does not have its schema's columns, in order.
    """
    path = _schema.write_table(df, path, schema=schema)
    atomic_write_json(path.with_suffix(".json"), provenance(params, root=root))
    return path


def read_table(path: str | Path, *, schema: TableSchema | None = None) -> pd.DataFrame:
    """Read a table written by :func:`write_table`, with its declared dtypes
    (:func:`topolip.schema.read_table`).

    Raises
    ------
    FileNotFoundError
        Naming the notebook that writes it, when the file is missing.
    KeyError
        If no schema is declared for the table.
    ValueError
        If the file does not have its schema's columns or a numeric column holds text.
    """
    return _schema.read_table(path, schema=schema)
