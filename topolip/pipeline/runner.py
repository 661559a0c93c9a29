"""Execute the notebook chain with papermill, with parameter checks, caching and provenance.

The chain is every ``notebooks/NN_*.py`` (jupytext py:percent) in file-name order. papermill
cannot read ``.py`` notebooks, so each is read with ``jupytext.read`` and the notebook object is
passed to ``papermill.execute_notebook``. Before anything runs, every notebook must have exactly
one ``parameters`` cell and every passed parameter must be declared by some notebook; each
notebook receives only the parameters its cell declares.

An executed notebook is written atomically to ``{root}/book/notebooks/<name>.ipynb`` with a
cache key in its metadata; a later run skips a notebook whose key is unchanged, so an
interrupted chain resumes after the last finished notebook.

The cache follows the data. ``notebooks/dependencies.yml`` declares, for every notebook, the
files it reads and writes (see :func:`load_dependencies`); a notebook's key is its source, its
parameters, the content hashes of the files it reads, the library fingerprint and the hash of
``requirements.lock``. Changing a parameter therefore re-executes the notebooks that declare it
and then those whose inputs changed content, and no other. Without a declaration file (a
scratch chain) each key includes the previous notebook's key instead: a plain chain.
``run_chain(..., dry_run=True)`` (``topolip run --dry-run``) prints what would execute and why.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jupytext
import nbformat

from ..io import atomic_write_text
from .params import (
    EXECUTION_PARAMETERS,
    ParameterError,
    declared_parameters,
    validate_params,
)
from .provenance import library_fingerprint, provenance

__all__ = ["DependencyError", "NotebookDeps", "NotebookFailed", "NotebookRun", "chain",
           "check_parameters", "load_dependencies", "run_chain"]

BOOK_NOTEBOOKS = Path("book") / "notebooks"
#: The declaration of what each notebook reads and writes, relative to the repository root.
DEPENDENCIES = Path("notebooks") / "dependencies.yml"
LOCK_FILE = "requirements.lock"


@dataclass(frozen=True)
class NotebookRun:
    """One notebook of a chain run: where it went, whether it was cached, how long it took, and
    why it executed (or would, in a dry run)."""

    name: str
    output: Path
    cached: bool
    seconds: float
    reason: str = ""


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
        If a notebook of the chain has no entry, an entry names no notebook of the chain, an
        entry has keys other than ``reads`` and ``writes`` or values that are not lists of
        strings, or a notebook reads a ``{results_dir}`` file that no earlier notebook writes.
    """
    import yaml

    path = Path(root) / DEPENDENCIES
    if not path.exists():
        return None
    raw = yaml.safe_load(path.read_text()) or {}
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


def _results_dir(path: Path, params: Mapping[str, Any]) -> str | None:
    """The ``results_dir`` a notebook runs with: passed, else its own default."""
    if "results_dir" in params:
        return str(params["results_dir"])
    import ast

    default = declared_parameters(jupytext.read(path), name=str(path)).get("results_dir")
    try:
        return str(ast.literal_eval(default)) if default is not None else None
    except (ValueError, SyntaxError):
        return None


def _resolve(template: str, results_dir: str | None, root: Path) -> Path:
    if template.startswith("{results_dir}"):
        if results_dir is None:
            raise DependencyError(f"{DEPENDENCIES}: {template} needs the parameter results_dir, "
                                  f"which neither the run nor the notebook sets to a literal")
        return root / results_dir / template[len("{results_dir}/"):]
    return root / template


def _file_hash(path: Path) -> str | None:
    """SHA-256 of a file's bytes; None when it does not exist."""
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def chain(root: str | Path = ".") -> list[Path]:
    """The notebook sources of the chain, ``{root}/notebooks/[0-9][0-9]_*.py``, in order.

    Raises
    ------
    FileNotFoundError
        If there is none.
    """
    paths = sorted((Path(root) / "notebooks").glob("[0-9][0-9]_*.py"))
    if not paths:
        raise FileNotFoundError(f"no notebooks/NN_*.py under {Path(root).resolve()}")
    return paths


def check_parameters(notebooks: Sequence[Path], params: Mapping[str, Any]) -> dict[Path, dict]:
    """Read every notebook, check its parameters cell and that ``params`` are all declared.

    Returns
    -------
    dict
        ``{notebook path: {name: value}}``, the parameters each notebook receives.

    Raises
    ------
    ParameterError
        If a notebook has no (or several) ``parameters`` cells, or a parameter is declared by no
        notebook of the chain (a close name is suggested).
    """
    declared = {}
    for path in notebooks:
        nb = jupytext.read(path)
        declared[path] = declared_parameters(nb, name=str(path))
    known = set().union(*(d.keys() for d in declared.values()))
    unknown = sorted(set(params) - known)
    if unknown:
        import difflib

        hints = [f"{u!r}" + (f" (did you mean {m[0]!r}?)"
                             if (m := difflib.get_close_matches(u, known, n=1)) else "")
                 for u in unknown]
        raise ParameterError(
            f"unknown parameter(s) {', '.join(hints)}: no notebook of the chain declares them; "
            f"known: {sorted(known)}")
    return {path: {k: params[k] for k in d if k in params} for path, d in declared.items()}


def _key_inputs(source: str, params: Mapping[str, Any], reads: Mapping[str, str | None],
                fingerprint: str, lock: str | None) -> dict[str, Any]:
    """What a notebook's cache key is made of (stored with the executed notebook, so a later
    run can say which part changed)."""
    kept = {k: v for k, v in params.items() if k not in EXECUTION_PARAMETERS}  # same results
    return {"source": hashlib.sha256(source.encode()).hexdigest(),
            "params": json.loads(json.dumps(kept, sort_keys=True, default=str)),
            "reads": dict(sorted(reads.items())), "library": fingerprint, "lock": lock}


def _key(inputs: Mapping[str, Any]) -> str:
    blob = json.dumps(inputs, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _why(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> str:
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


def _show_only_injected_parameters(nb) -> None:
    """Hide the notebook's own defaults in the book when papermill injected the values used.

    The reader then sees one parameters cell, the one that produced the page (Jupyter Book's
    ``remove-cell`` tag); the defaults stay in the notebook file.
    """
    tags_of = [c.get("metadata", {}).get("tags", []) for c in nb.cells]
    if any("injected-parameters" in tags for tags in tags_of):
        for cell, tags in zip(nb.cells, tags_of, strict=True):
            if "parameters" in tags and "remove-cell" not in tags:
                cell.metadata["tags"] = [*tags, "remove-cell"]
            elif "injected-parameters" in tags and "hide-input" not in tags:
                cell.metadata["tags"] = [*tags, "hide-input"]  # one click away


def run_chain(
    root: str | Path,
    params: Mapping[str, Any],
    *,
    only: Sequence[str] | None = None,
    force: bool = False,
    kernel_name: str = "python3",
    dry_run: bool = False,
    log=print,
) -> list[NotebookRun]:
    """Execute the chain under ``root`` with ``params``; return one :class:`NotebookRun` each.

    Parameters
    ----------
    root : path
        Repository root (holds ``notebooks/`` and ``book/``); notebooks run with it as cwd.
    params : mapping
        Parameter values (a profile with overrides applied).
    only : sequence of str, optional
        Run only notebooks whose name (e.g. ``"02_topolip"``) is listed; the others must have
        been run before (their outputs are read from disk).
    force : bool, default=False
        Execute even notebooks whose cache key is unchanged.
    kernel_name : str, default="python3"
        Jupyter kernel; jupyter_client starts it with the running interpreter.
    dry_run : bool, default=False
        Execute nothing: log, for each notebook, whether it would execute and why (a notebook
        reading a file that an earlier one would rewrite counts as executing). The runs
        returned have ``cached`` False for those that would execute, and the reason.
    log : callable, default=print
        Called with one progress line (str) per notebook.

    Raises
    ------
    ParameterError
        Before anything runs, for a missing parameters cell or an unknown parameter.
    DependencyError
        Before anything runs, when ``notebooks/dependencies.yml`` disagrees with the chain.
    NotebookFailed
        (a ``papermill.PapermillExecutionError``) when a cell fails; the message names the
        notebook, the cell and the error. The executed part is left next to the output as
        ``*.partial.ipynb``, and every table or figure the failed notebook wrote under its
        ``results_dir`` is removed (or its previous version restored): tables appear only when
        the notebook that writes them succeeds. Checkpoints (``*.pt``) are kept: they are
        verified on load and let training resume.
    """

    root = Path(root).resolve()
    notebooks = chain(root)
    if only:
        names = {p.stem for p in notebooks}
        missing = sorted(set(only) - names)
        if missing:
            raise ParameterError(f"no notebook named {missing}; the chain: {sorted(names)}")
    params = validate_params(params, strict=False)  # the schema, before anything runs
    per_notebook = check_parameters(notebooks, params)
    deps = load_dependencies(root, notebooks)
    fingerprint = library_fingerprint()
    lock = _file_hash(root / LOCK_FILE)
    out_dir = root / BOOK_NOTEBOOKS
    if not dry_run:
        out_dir.mkdir(parents=True, exist_ok=True)
    runs: list[NotebookRun] = []
    cluster = _SharedCluster(params.get("n_workers"), root, log)
    try:
        _run_notebooks(root, notebooks, params, per_notebook, deps, fingerprint=fingerprint,
                       lock=lock, runs=runs, cluster=cluster, only=only, force=force,
                       kernel_name=kernel_name, dry_run=dry_run, log=log)
    finally:
        cluster.close()
    return runs


class _SharedCluster:
    """One Dask LocalCluster for every notebook run with ``scheduler: local``, started when the
    first of them executes (a cached chain starts none): its address is what they receive."""

    def __init__(self, n_workers: int | None, root: Path, log):
        self.n_workers, self.root, self.log, self._cluster = n_workers, root, log, None

    def address(self) -> str:
        if self._cluster is None:
            from ..tasks import local_cluster

            t0 = time.perf_counter()
            self._cluster = local_cluster(self.n_workers, cwd=self.root)  # where notebooks run
            self.log(f"[topolip] Dask LocalCluster of {len(self._cluster.workers)} workers "
                     f"started in {time.perf_counter() - t0:.1f} s at "
                     f"{self._cluster.scheduler_address} (shared by the notebooks)")
        return self._cluster.scheduler_address

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def _run_notebooks(root: Path, notebooks: Sequence[Path], params: Mapping[str, Any],
                   per_notebook: Mapping[Path, dict], deps, *, fingerprint: str,
                   lock: str | None, runs: list[NotebookRun], cluster: _SharedCluster,
                   only, force: bool, kernel_name: str, dry_run: bool, log) -> None:
    """The loop of :func:`run_chain` over the notebooks (appends to ``runs``)."""
    import papermill

    out_dir = root / BOOK_NOTEBOOKS
    upstream = ""
    rewrites: dict[Path, str] = {}  # dry run: files an earlier notebook would write, by whom
    for path in notebooks:
        nb_params = per_notebook[path]
        source = path.read_text()
        if deps is None:  # no declaration: a plain chain
            reads = {"upstream": upstream or None}
        else:
            where = _results_dir(path, params)
            files = {t: _resolve(t, where, root) for t in deps[path.stem].reads}
            reads = {t: _file_hash(f) for t, f in files.items()}
        inputs = _key_inputs(source, nb_params, reads, fingerprint, lock)
        key = _key(inputs)
        upstream = key
        out = out_dir / f"{path.stem}.ipynb"
        if only and path.stem not in only:
            continue
        done = {}
        if out.exists():
            try:
                done = nbformat.read(out, as_version=4).metadata.get("topolip", {})
            except Exception:  # unreadable output: execute again
                done = {}
        pending = ([f"{t} (rewritten by {rewrites[f]})" for t, f in files.items()
                    if f in rewrites] if deps is not None and dry_run else [])
        if not force and done.get("cache_key") == key and not pending:
            if not dry_run:
                out.with_suffix(".partial.ipynb").unlink(missing_ok=True)  # an old failure
            log(f"[topolip] {path.stem}: unchanged, cached ({out.relative_to(root)})")
            runs.append(NotebookRun(path.stem, out, True, 0.0, "unchanged"))
            continue
        reason = ("--force" if force else "never executed" if not out.exists()
                  else "input(s) an earlier notebook would rewrite: " + ", ".join(pending)
                  if pending and done.get("cache_key") == key
                  else _why(done.get("cache_inputs"), inputs))
        if dry_run:
            log(f"[topolip] {path.stem}: would execute ({reason})")
            runs.append(NotebookRun(path.stem, out, False, 0.0, reason))
            if deps is not None:
                for t in deps[path.stem].writes:
                    rewrites.setdefault(_resolve(t, where, root), path.stem)
            else:
                upstream = "pending"
            continue
        log(f"[topolip] {path.stem}: executing ({reason}) with "
            f"{json.dumps(nb_params, default=str)}")
        nb = jupytext.read(path)
        nb.metadata["kernelspec"] = {"name": kernel_name, "display_name": "Python 3",
                                     "language": "python"}
        partial = out.with_suffix(".partial.ipynb")  # papermill writes progress here
        t0 = time.perf_counter()
        snapshot = _snapshot_outputs(root, nb_params, nb)
        injected = dict(nb_params)
        if injected.get("scheduler") == "local":  # the chain's shared cluster
            injected["scheduler"] = cluster.address()
        try:
            result = papermill.execute_notebook(
                nb, str(partial), parameters=injected, kernel_name=kernel_name,
                cwd=str(root), progress_bar=False, log_output=False)
        except BaseException as exc:
            removed = snapshot.rollback()
            snapshot.discard()
            if not isinstance(exc, papermill.PapermillExecutionError):
                raise
            failed = NotebookFailed.from_error(path.stem, exc, partial, removed)
            log(f"[topolip] {failed}")
            raise failed from None
        snapshot.discard()
        seconds = time.perf_counter() - t0
        _show_only_injected_parameters(result)
        result.metadata["topolip"] = {"cache_key": key, "cache_inputs": inputs,
                                      "seconds": round(seconds, 1),
                                      "provenance": provenance(nb_params, root=root)}
        atomic_write_text(out, nbformat.writes(result))
        partial.unlink(missing_ok=True)
        log(f"[topolip] {path.stem}: done in {seconds:.0f} s -> {out.relative_to(root)}")
        runs.append(NotebookRun(path.stem, out, False, seconds, reason))


# --------------------------------------------------------------------------- failed notebooks


def _failure_class():
    import papermill

    return papermill.PapermillExecutionError


class NotebookFailed(_failure_class()):
    """A cell of a chain notebook raised: names the notebook, the cell and the error.

    A subclass of ``papermill.PapermillExecutionError`` (same attributes) with ``notebook``,
    ``partial`` (the executed part) and ``removed`` (outputs rolled back) added.
    """

    def __init__(self, notebook: str, cell_index: int, exec_count: int | None, source: str,
                 ename: str, evalue: str, traceback, partial: Path, removed: list[Path]):
        super().__init__(cell_index, exec_count, source, ename, evalue, traceback)
        self.notebook, self.partial, self.removed = notebook, partial, removed

    @classmethod
    def from_error(cls, notebook: str, exc, partial: Path, removed: list[Path]):
        return cls(notebook, exc.cell_index, exc.exec_count, exc.source, exc.ename, exc.evalue,
                   exc.traceback, partial, removed)

    def __str__(self) -> str:
        first = next((ln.strip() for ln in (self.source or "").splitlines()
                      if ln.strip() and not ln.strip().startswith("#")), "")
        first = first if len(first) <= 60 else first[:57] + "..."
        rolled = f"; {len(self.removed)} partial output(s) removed" if self.removed else ""
        return (f"notebook {self.notebook} failed in cell {self.exec_count} (`{first}`): "
                f"{self.ename}: {' '.join(str(self.evalue).split())} (executed part: "
                f"{self.partial}{rolled})")

    def __reduce__(self):  # picklable like its base
        return (self.__class__, (self.notebook, self.cell_index, self.exec_count, self.source,
                                 self.ename, self.evalue, self.traceback, self.partial,
                                 self.removed))


class _OutputSnapshot:
    """Files under a notebook's ``results_dir`` before it runs, to undo a failed run's writes.

    Everything but checkpoints (``*.pt``, verified on load and resumable) and temporaries is
    backed up (tables and figures are small); :meth:`rollback` deletes the files the notebook
    created and restores the ones it changed.
    """

    def __init__(self, folder: Path | None):
        import tempfile

        self.folder = folder
        self.before: dict[Path, tuple[int, int]] = {}
        self.backup = Path(tempfile.mkdtemp(prefix="topolip-outputs-")) if folder else None
        if folder is None or not folder.is_dir():
            return
        import shutil

        for f in self._files():
            st = f.stat()
            self.before[f] = (st.st_mtime_ns, st.st_size)
            if f.suffix != ".pt":
                dest = self.backup / f.relative_to(folder)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dest)

    def _files(self) -> list[Path]:
        if self.folder is None or not self.folder.is_dir():
            return []
        return [f for f in self.folder.rglob("*")
                if f.is_file() and not f.name.endswith(".tmp")]

    def rollback(self) -> list[Path]:
        import shutil

        changed = []
        for f in self._files():
            if f.suffix == ".pt":
                continue
            st = f.stat()
            old = self.before.get(f)
            if old is None:
                f.unlink(missing_ok=True)
                changed.append(f)
            elif old != (st.st_mtime_ns, st.st_size):
                shutil.copy2(self.backup / f.relative_to(self.folder), f)
                changed.append(f)
        for f in self.before:  # deleted by the notebook: restore
            if f.suffix != ".pt" and not f.exists():
                f.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(self.backup / f.relative_to(self.folder), f)
                changed.append(f)
        return changed

    def discard(self) -> None:
        import shutil

        if self.backup is not None:
            shutil.rmtree(self.backup, ignore_errors=True)


def _snapshot_outputs(root: Path, nb_params: Mapping[str, Any], nb) -> _OutputSnapshot:
    """Snapshot the notebook's ``results_dir`` (passed, or its literal default) under ``root``."""
    import ast

    results = nb_params.get("results_dir")
    if results is None:
        try:
            results = ast.literal_eval(declared_parameters(nb).get("results_dir", "None"))
        except (ValueError, SyntaxError):
            results = None
    if not isinstance(results, str) or not results:
        return _OutputSnapshot(None)
    folder = (root / results).resolve()
    if folder == root or root not in folder.parents:  # never treat the repository as outputs
        return _OutputSnapshot(None)
    return _OutputSnapshot(folder)
