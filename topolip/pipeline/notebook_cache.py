"""The notebook cache: what a notebook reads and writes, its cache key, and the record of its
outputs.

``notebooks/dependencies.yml`` declares, for every notebook, the files it reads and writes
(:func:`load_dependencies`). A notebook's cache key (:func:`cache_inputs`, :func:`cache_key`)
is its source, its parameters (those that say where the work runs left out), the content
hashes of the files it reads, the library fingerprint and the hash of ``requirements.lock``;
:func:`why_stale` says which part changed. A finished notebook records the SHA-256 of every
file it wrote (:func:`record_outputs`) in its metadata (:func:`read_record`); a cached one is
reused only while :func:`damaged_outputs` finds nothing. The run loop that uses them is
:mod:`topolip.pipeline.runner`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jupytext
import nbformat

from topolip.pipeline.param_schema import ParameterError
from topolip.pipeline.params import EXECUTION_PARAMETERS, declared_parameters

__all__ = ["DEPENDENCIES", "DependencyError", "NotebookDeps", "cache_inputs", "cache_key",
           "damaged_outputs", "declared_writes", "file_hash", "load_dependencies",
           "notebook_results_dir", "read_record", "record_outputs", "relative_path",
           "resolve_declared", "why_stale"]

#: The declaration of what each notebook reads and writes, relative to the repository root.
DEPENDENCIES = Path("notebooks") / "dependencies.yml"


class DependencyError(ParameterError):
    """``notebooks/dependencies.yml`` disagrees with the chain (raised before anything runs)."""


@dataclass(frozen=True)
class NotebookDeps:
    """Files one notebook reads and writes: ``{results_dir}/...`` templates or paths relative to
    the repository root."""

    reads: tuple[str, ...]
    writes: tuple[str, ...]


def load_dependencies(
    root: str | Path, notebooks: Sequence[Path]
) -> dict[str, NotebookDeps] | None:
    """Read and check ``{root}/notebooks/dependencies.yml`` against the chain ``notebooks``.

    The file maps each notebook stem to ``{reads: [...], writes: [...]}``; a path
    ``"{results_dir}/tables/x.csv"`` is under the run's results folder, any other path is
    relative to ``root``.

    Returns
    -------
    dict or None
        ``{stem: NotebookDeps}`` in chain order; None when the file does not exist.

    Raises
    ------
    DependencyError
        If the file is not valid UTF-8 or YAML (its path, line and column given), if a
        notebook of the chain has no entry, an entry names no notebook of the chain, an
        entry has keys other than ``reads`` and ``writes`` or values that are not lists of
        strings, or a notebook reads a ``{results_dir}`` file that no earlier notebook writes.
    """
    import yaml

    path = Path(root) / DEPENDENCIES
    if not path.exists():
        return None
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise DependencyError(f"{path} is not valid UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
                              f"on line {line})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise DependencyError(f"{path} is not valid YAML{where}: {problem}") from None
    if not isinstance(raw, dict):
        raise DependencyError(f"{DEPENDENCIES} must map notebook names to reads/writes; "
                              f"got a {type(raw).__name__}")
    stems = [p.stem for p in notebooks]
    undeclared = [s for s in stems if s not in raw]
    if undeclared:
        raise DependencyError(
            f"{DEPENDENCIES} does not declare notebook(s) {undeclared}: add an entry "
            f"`{undeclared[0]}: {{reads: [...], writes: [...]}}` listing the files it reads and "
            f"writes (the cache needs them)")
    stale = sorted(set(raw) - set(stems))
    if stale:
        raise DependencyError(
            f"{DEPENDENCIES} declares {stale}, which are not notebooks of the chain (no "
            f"notebooks/<name>.py); remove the entries or add the notebooks")
    deps: dict[str, NotebookDeps] = {}
    written: dict[str, str] = {}
    for stem in stems:
        entry = raw[stem] or {}
        extra = sorted(set(entry) - {"reads", "writes"}) if isinstance(entry, dict) else None
        if extra is None or extra:
            raise DependencyError(f"{DEPENDENCIES}: {stem} must be a mapping with keys reads "
                                  f"and writes; got {entry!r}")
        lists = {}
        for field in ("reads", "writes"):
            value = entry.get(field) or []
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise DependencyError(f"{DEPENDENCIES}: {stem}.{field} must be a list of "
                                      f"paths; got {value!r}")
            lists[field] = tuple(value)
        for read in lists["reads"]:
            if read.startswith("{results_dir}") and read not in written:
                raise DependencyError(
                    f"{DEPENDENCIES}: {stem} reads {read}, which no earlier notebook writes; "
                    f"list it under the writes of the notebook that produces it")
        for w in lists["writes"]:
            written.setdefault(w, stem)
        deps[stem] = NotebookDeps(lists["reads"], lists["writes"])
    return deps


def notebook_results_dir(path: Path, params: Mapping[str, Any]) -> str | None:
    """The ``results_dir`` a notebook runs with: passed, else its own default."""
    if "results_dir" in params:
        return str(params["results_dir"])
    import ast

    default = declared_parameters(jupytext.read(path), name=str(path)).get("results_dir")
    try:
        return str(ast.literal_eval(default)) if default is not None else None
    except (ValueError, SyntaxError):
        return None


def resolve_declared(template: str, results_dir: str | None, root: Path) -> Path:
    """The file a declared path names: ``{results_dir}/x`` under ``root / results_dir``,
    anything else under ``root``.

    Raises
    ------
    DependencyError
        If ``template`` needs ``results_dir`` and it is None.

    Examples
    --------
    >>> resolve_declared("{results_dir}/tables/x.csv", "results/quick", Path("/r")).as_posix()
    '/r/results/quick/tables/x.csv'
    """
    if template.startswith("{results_dir}"):
        if results_dir is None:
            raise DependencyError(f"{DEPENDENCIES}: {template} needs the parameter results_dir, "
                                  f"which neither the run nor the notebook sets to a literal")
        return root / results_dir / template[len("{results_dir}/"):]
    return root / template


def file_hash(path: Path) -> str | None:
    """SHA-256 of a file's bytes; None when it does not exist."""
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_inputs(source: str, params: Mapping[str, Any], reads: Mapping[str, str | None],
                fingerprint: str, lock: str | None) -> dict[str, Any]:
    """What a notebook's cache key is made of (stored with the executed notebook, so a later
    run can say which part changed)."""
    kept = {k: v for k, v in params.items() if k not in EXECUTION_PARAMETERS}  # same results
    return {"source": hashlib.sha256(source.encode()).hexdigest(),
            "params": json.loads(json.dumps(kept, sort_keys=True, default=str)),
            "reads": dict(sorted(reads.items())), "library": fingerprint, "lock": lock}


def cache_key(inputs: Mapping[str, Any]) -> str:
    """The 20-hex-digit key of :func:`cache_inputs` (SHA-256 of their sorted JSON)."""
    blob = json.dumps(inputs, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def why_stale(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> str:
    """The parts of a cache key that changed, in words."""
    if not old:
        return "no cached result with a recorded key"
    parts = []
    if old.get("source") != new["source"]:
        parts.append("its source changed")
    before, after = old.get("params", {}), new["params"]
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    if changed:
        parts.append("parameter(s) changed: " + ", ".join(changed))
    reads_before, reads_after = old.get("reads", {}), new["reads"]
    moved = sorted(k for k in set(reads_before) | set(reads_after)
                   if reads_before.get(k) != reads_after.get(k))
    if moved:
        parts.append("input(s) changed: " + ", ".join(moved))
    if old.get("library") != new["library"]:
        parts.append("the topolip library changed")
    if old.get("lock") != new["lock"]:
        parts.append("requirements.lock changed")
    return "; ".join(parts) or "its cache key changed"


def relative_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` in POSIX form, as the output record stores it; ``path``
    itself when it lies outside ``root``."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def declared_writes(deps, stem: str, where: str | None, root: Path) -> dict[str, Path]:
    """``{declared path: file}`` of what notebook ``stem`` declares it writes (``deps`` from
    :func:`load_dependencies`; empty when it is None), with ``{results_dir}`` set to
    ``where``."""
    if deps is None:
        return {}
    return {t: resolve_declared(t, where, root) for t in deps[stem].writes}


def _checkpoints_named(tables: Sequence[Path], root: Path) -> list[Path]:
    """Checkpoint files named by a ``checkpoint`` column of written CSV tables."""
    import csv

    found = []
    for table in tables:
        if table.suffix != ".csv" or not table.is_file():
            continue
        with open(table, newline="") as f:
            reader = csv.DictReader(f)
            if "checkpoint" not in (reader.fieldnames or []):
                continue
            for row in reader:
                if row.get("checkpoint"):
                    p = Path(row["checkpoint"])
                    found.append(p if p.is_absolute() else root / p)
    return found


def record_outputs(root: Path, written: Sequence[Path], declared: Mapping[str, Path]
                    ) -> dict[str, dict[str, Any]]:
    """``{path relative to root: {"sha256", "bytes"}}`` of what a notebook wrote: the files it
    created or changed, its declared writes and their sidecars, the checkpoints they name."""
    files = set(written) | {p for p in declared.values() if p.is_file()}
    files |= {p.with_suffix(".json") for p in declared.values()
              if p.suffix == ".csv" and p.with_suffix(".json").is_file()}
    files |= set(_checkpoints_named(list(declared.values()), root))
    record = {}
    for f in sorted(files):
        digest = file_hash(f)
        if digest is not None:
            record[relative_path(f, root)] = {"sha256": digest, "bytes": f.stat().st_size}
    return record


def damaged_outputs(record: Mapping[str, Any] | None, root: Path) -> list[str]:
    """The recorded outputs that are missing or no longer have their hash, in words."""
    bad = []
    for rel, entry in (record or {}).items():
        path = Path(rel) if Path(rel).is_absolute() else root / rel
        if not path.is_file():
            bad.append(f"{rel} (missing)")
            continue
        size = path.stat().st_size
        if size != entry.get("bytes"):
            bad.append(f"{rel} ({'truncated' if size < entry.get('bytes', 0) else 'changed'}: "
                       f"{size} of {entry.get('bytes')} bytes)")
        elif file_hash(path) != entry.get("sha256"):
            bad.append(f"{rel} (altered: its SHA-256 differs from the recorded one)")
    return bad


def read_record(out: Path) -> dict[str, Any]:
    """The ``topolip`` record (cache key and inputs, outputs, seconds, provenance) in the
    metadata of the executed notebook ``out``; empty when it is missing or unreadable (the
    notebook then executes again)."""
    if not out.exists():
        return {}
    try:
        return nbformat.read(out, as_version=4).metadata.get("topolip", {})
    except Exception:  # unreadable output: execute again
        return {}
