"""Execute the notebook chain with papermill, with parameter checks, caching and provenance.

The chain is every ``notebooks/NN_*.py`` (jupytext py:percent) in file-name order. papermill
cannot read ``.py`` notebooks, so each is read with ``jupytext.read`` and the notebook object is
passed to ``papermill.execute_notebook``. Before anything runs, every notebook must have exactly
one ``parameters`` cell and every passed parameter must be declared by some notebook; each
notebook receives only the parameters its cell declares.

An executed notebook is written atomically to ``{root}/book/notebooks/<name>.ipynb`` with a
cache key in its metadata (notebook source, its parameters, the upstream keys and the library
fingerprint); a later run skips a notebook whose key is unchanged, so an interrupted chain
resumes after the last finished notebook.
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
from .params import ParameterError, declared_parameters
from .provenance import library_fingerprint, provenance

__all__ = ["NotebookRun", "chain", "check_parameters", "run_chain"]

BOOK_NOTEBOOKS = Path("book") / "notebooks"


@dataclass(frozen=True)
class NotebookRun:
    """One notebook of a chain run: where it went, whether it was cached, how long it took."""

    name: str
    output: Path
    cached: bool
    seconds: float


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


def _key(source: str, params: Mapping[str, Any], upstream: str, fingerprint: str) -> str:
    blob = json.dumps({"source": source, "params": params, "upstream": upstream,
                       "library": fingerprint}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


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

    Raises
    ------
    ParameterError
        Before anything runs, for a missing parameters cell or an unknown parameter.
    papermill.PapermillExecutionError
        When a cell fails; the executed part is left next to the output as ``*.partial.ipynb``.
    """
    import papermill

    root = Path(root).resolve()
    notebooks = chain(root)
    if only:
        names = {p.stem for p in notebooks}
        missing = sorted(set(only) - names)
        if missing:
            raise ParameterError(f"no notebook named {missing}; the chain: {sorted(names)}")
    per_notebook = check_parameters(notebooks, params)
    fingerprint = library_fingerprint()
    out_dir = root / BOOK_NOTEBOOKS
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: list[NotebookRun] = []
    upstream = ""
    for path in notebooks:
        nb_params = per_notebook[path]
        source = path.read_text()
        key = _key(source, nb_params, upstream, fingerprint)
        upstream = key
        out = out_dir / f"{path.stem}.ipynb"
        if only and path.stem not in only:
            continue
        if not force and out.exists():
            try:
                done = nbformat.read(out, as_version=4).metadata.get("topolip", {})
            except Exception:  # unreadable output: execute again
                done = {}
            if done.get("cache_key") == key:
                out.with_suffix(".partial.ipynb").unlink(missing_ok=True)  # an old failure
                log(f"[topolip] {path.stem}: unchanged, cached ({out.relative_to(root)})")
                runs.append(NotebookRun(path.stem, out, True, 0.0))
                continue
        log(f"[topolip] {path.stem}: executing with {json.dumps(nb_params, default=str)}")
        nb = jupytext.read(path)
        nb.metadata["kernelspec"] = {"name": kernel_name, "display_name": "Python 3",
                                     "language": "python"}
        partial = out.with_suffix(".partial.ipynb")  # papermill writes progress here
        t0 = time.perf_counter()
        try:
            result = papermill.execute_notebook(
                nb, str(partial), parameters=dict(nb_params), kernel_name=kernel_name,
                cwd=str(root), progress_bar=False, log_output=False)
        except papermill.PapermillExecutionError:
            log(f"[topolip] {path.stem} FAILED; the executed part is in {partial}")
            raise
        seconds = time.perf_counter() - t0
        _show_only_injected_parameters(result)
        result.metadata["topolip"] = {"cache_key": key, "seconds": round(seconds, 1),
                                      "provenance": provenance(nb_params, root=root)}
        atomic_write_text(out, nbformat.writes(result))
        partial.unlink(missing_ok=True)
        log(f"[topolip] {path.stem}: done in {seconds:.0f} s -> {out.relative_to(root)}")
        runs.append(NotebookRun(path.stem, out, False, seconds))
    return runs
