"""Execute the notebook chain with papermill, with parameter checks, caching and provenance.

The chain is every ``notebooks/NN_*.py`` (jupytext py:percent) in file-name order. papermill
cannot read ``.py`` notebooks, so each is read with ``jupytext.read`` and the notebook object is
passed to ``papermill.execute_notebook``. Before anything runs, every notebook must have exactly
one ``parameters`` cell and every passed parameter must be declared by some notebook; each
notebook receives only the parameters its cell declares.

An executed notebook is written atomically to ``{root}/book/notebooks/<name>.ipynb`` with a
cache key in its metadata; a later run skips a notebook whose key is unchanged, so an
interrupted chain resumes after the last finished notebook.

The cache follows the data (:mod:`topolip.pipeline.notebook_cache` holds it).
``notebooks/dependencies.yml`` declares, for every notebook, the files it reads and writes; a
notebook's key is its source, its parameters, the content hashes of the files it reads, the
library fingerprint and the hash of ``requirements.lock``. Changing a parameter therefore
re-executes the notebooks that declare it and then those whose inputs changed content, and no
other. Without a declaration file (a
scratch chain) each key includes the previous notebook's key instead: a plain chain.
``run_chain(..., dry_run=True)`` (``topolip run --dry-run``) prints what would execute and why.

Outputs are part of the cache record: a finished notebook records the SHA-256 of every file it
wrote (its declared writes, their ``.json`` sidecars, the figures and other files it created
under ``results_dir``, and the checkpoints a ``checkpoint`` column of its tables names). A
cached notebook is reused only when every recorded file still has its hash; a missing or
changed one re-executes it (the log and the dry run say which file). A declared output that a
notebook did not write fails it, naming the file.

One run at a time per results folder: ``run_chain`` holds a lock file
(``{results_dir}/.topolip-run.lock`` and ``book/notebooks/.topolip-run.lock``) while it runs; a
second run on the same folder stops at once, naming the first. SIGINT and SIGTERM roll back the
notebook in progress (as a failure does) and raise :class:`ChainInterrupted`, whose message
says what was interrupted, what is kept and how to resume.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jupytext
import nbformat

from topolip import roster
from topolip.io import atomic_write_text, remove_temporaries
from topolip.pipeline.notebook_cache import (
    DEPENDENCIES,
    cache_inputs,
    cache_key,
    damaged_outputs,
    declared_writes,
    file_hash,
    load_dependencies,
    notebook_results_dir,
    read_record,
    record_outputs,
    relative_path,
    resolve_declared,
    why_stale,
)
from topolip.pipeline.param_schema import ParameterError, validate_params
from topolip.pipeline.params import EXECUTION_PARAMETERS, declared_parameters
from topolip.pipeline.provenance import library_fingerprint, provenance

__all__ = ["ChainInterrupted", "NotebookFailed", "NotebookRun", "OutputsMissing",
           "ResultsInUse", "chain", "check_parameters", "run_chain", "write_glue"]

BOOK_NOTEBOOKS = Path("book") / "notebooks"
LOCK_FILE = "requirements.lock"
#: The run lock, in each results folder and in ``book/notebooks`` while a run holds them.
RUN_LOCK = ".topolip-run.lock"
#: Parameters read by the runner itself, not by a notebook (so no notebook declares them).
RUNNER_PARAMETERS = ("scheduler_timeout",)


@dataclass(frozen=True)
class NotebookRun:
    """One notebook of a chain run: where it went, whether it was cached, how long it took, and
    why it executed (or would, in a dry run)."""

    name: str
    output: Path
    cached: bool
    seconds: float
    reason: str = ""


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
    unknown = sorted(set(params) - known - set(RUNNER_PARAMETERS))
    if unknown:
        import difflib

        hints = [f"{u!r}" + (f" (did you mean {m[0]!r}?)"
                             if (m := difflib.get_close_matches(u, known, n=1)) else "")
                 for u in unknown]
        raise ParameterError(
            f"unknown parameter(s) {', '.join(hints)}: no notebook of the chain declares them; "
            f"known: {sorted(known)}")
    return {path: {k: params[k] for k in d if k in params} for path, d in declared.items()}


def _shown_parameters(nb_params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters papermill injects: all of a notebook's, less ``data_root`` where the data
    set is not read from a folder (the embedded digits), so an MNIST page does not print a
    CIFAR-10 folder among the values that produced it (the notebook's unused default stands)."""
    injected = dict(nb_params)
    name = injected.get("dataset")
    if name in roster.dataset_names() and not roster.dataset(name).from_folder:
        injected.pop("data_root", None)
    return injected


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
        Parameter values (a profile with overrides applied). ``scheduler_timeout`` (seconds,
        default 20) is the runner's own: how long a ``scheduler`` address may take to answer.
    only : sequence of str, optional
        Run only notebooks whose name (e.g. ``"02_topolip"``) is listed; the others must have
        been run before (their outputs are read from disk, and must still have the hashes
        their notebooks recorded).
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
        Before anything runs, when ``notebooks/dependencies.yml`` is malformed or disagrees
        with the chain.
    ResultsInUse
        Before anything runs, when another run holds the results folder (the message names
        it: process, host, start time, command).
    NotebookFailed
        (a ``papermill.PapermillExecutionError``) when a cell fails; the message names the
        notebook, the cell and the error. The executed part is left next to the output as
        ``*.partial.ipynb``, and every table or figure the failed notebook wrote under its
        ``results_dir`` is removed (or its previous version restored): tables appear only when
        the notebook that writes them succeeds. Checkpoints (``*.pt``) are kept: they are
        verified on load and let training resume.
    OutputsMissing
        When a notebook ran to its end without writing a declared output (named); its other
        outputs are rolled back as for a failure.
    RuntimeError
        When a ``scheduler`` address cannot be reached within ``scheduler_timeout`` seconds
        (the address is named), or, with ``only``, when a file a selected notebook reads no
        longer has the hash its notebook recorded.
    ChainInterrupted
        (a ``KeyboardInterrupt``) on SIGINT or SIGTERM: the notebook in progress is rolled back
        first; the message says what was interrupted, what is kept and how to resume.
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
    lock = file_hash(root / LOCK_FILE)
    out_dir = root / BOOK_NOTEBOOKS
    timeout = float(params.get("scheduler_timeout", _DEFAULT_TIMEOUT))
    runs: list[NotebookRun] = []
    progress = _Progress()
    with _Signals(progress) as signals:
        folders = _results_folders(root, notebooks, params)
        held = _RunLock([*folders, out_dir], params, dry_run=dry_run)
        try:
            if not dry_run:
                _clean_leftovers([*folders, out_dir], log)
            cluster = _SharedCluster(params.get("n_workers"), root, log, timeout)
            saved = os.environ.get(_TIMEOUT_VARIABLE)
            os.environ[_TIMEOUT_VARIABLE] = str(timeout)  # the notebooks' TaskRunner reads it
            try:
                _run_notebooks(root, notebooks, params, per_notebook, deps,
                               fingerprint=fingerprint, lock=lock, runs=runs, cluster=cluster,
                               only=only, force=force, kernel_name=kernel_name,
                               dry_run=dry_run, log=log, progress=progress)
            finally:
                signals.quiet = True  # a second signal does not break the clean-up
                cluster.close()
                if not dry_run:
                    write_glue(root, notebooks, params)
                if saved is None:
                    os.environ.pop(_TIMEOUT_VARIABLE, None)
                else:
                    os.environ[_TIMEOUT_VARIABLE] = saved
        except KeyboardInterrupt:
            raise ChainInterrupted(progress.describe(signals.signum or signal.SIGINT, only),
                                   signals.signum or signal.SIGINT) from None
        finally:
            held.release()
    return runs


#: The file, in each results folder, holding the text the chain's notebooks glued.
GLUE_FILE = "glue.json"


def write_glue(root: str | Path, notebooks: Sequence[Path], params: Mapping[str, Any]
               ) -> list[Path]:
    """Write ``<results_dir>/glue.json``: every text the executed notebooks glued.

    Called by :func:`run_chain` when the chain stops (after its last notebook, a failure or an
    interruption), so ``topolip diff`` compares the prose numbers of two results folders. The
    file maps ``"<notebook stem>::<glue name>"`` to the glued text (str), the same keys as the
    site's ``published/<profile>/glue.json``
    (:func:`topolip.pipeline.book.publish_results`); figures and Markdown are left out. Each
    folder gets the notebooks whose ``results_dir`` it is, read from their executed copies in
    ``book/notebooks/`` (a notebook never executed, or whose copy is unreadable, is missing
    from it; a folder none of whose notebooks has an executed copy gets no file). The write is
    atomic (a reader sees the old file or the new one).

    Parameters
    ----------
    root : path
        Repository root.
    notebooks : sequence of path
        The chain's notebook sources (``notebooks/NN_name.py``), in order.
    params : mapping
        The run's parameters (for ``results_dir``).

    Returns
    -------
    list of Path
        The ``glue.json`` files written (none for a folder that cannot be written, e.g. a
        read-only disk: the run's tables are then not there either).
    """
    from topolip.pipeline.book import glue_values

    root = Path(root)
    by_folder: dict[Path, dict[str, str]] = {}
    for path in notebooks:
        where = notebook_results_dir(path, params)
        if not where:
            continue
        folder = (root / where).resolve()
        if folder == root.resolve():
            continue
        executed = root / BOOK_NOTEBOOKS / f"{path.stem}.ipynb"
        try:
            nb = nbformat.read(executed, as_version=4)
        except (OSError, ValueError):  # never executed, or damaged
            continue
        by_folder.setdefault(folder, {}).update(
            {f"{path.stem}::{k}": v for k, v in glue_values(nb).items()})
    written = []
    for folder, values in by_folder.items():
        if not folder.is_dir():
            continue
        try:
            written.append(atomic_write_text(folder / GLUE_FILE, json.dumps(
                values, indent=1, sort_keys=True, ensure_ascii=False) + "\n"))
        except OSError:
            continue
    return written


_DEFAULT_TIMEOUT = 20.0
_TIMEOUT_VARIABLE = "TOPOLIP_SCHEDULER_TIMEOUT"


class ChainInterrupted(KeyboardInterrupt):
    """The run was stopped by SIGINT (Ctrl-C) or SIGTERM; ``signum`` says which.

    Its message is one line: which notebook was interrupted (and that its partial outputs
    were rolled back), which notebooks are kept, and how to resume.
    """

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.signum = int(signum)

    def __reduce__(self):
        return (self.__class__, (str(self), self.signum))


class _Progress:
    """Where a run stands, for the message of an interruption."""

    def __init__(self):
        self.current: str | None = None
        self.finished: list[str] = []
        self.cached: list[str] = []
        self.rolled_back = 0

    def describe(self, signum: int, only) -> str:
        name = signal.Signals(signum).name
        if self.current:
            what = (f"{self.current} interrupted by {name}; its partial outputs were rolled "
                    f"back ({self.rolled_back} file(s))")
        else:
            what = f"interrupted by {name} between notebooks"
        kept = self.finished + self.cached
        keep = (f"kept: {', '.join(kept)} and every finished checkpoint" if kept
                else "kept: every finished checkpoint")
        again = "the same `topolip run` command" + (" (with its --only)" if only else "")
        return f"{what}; {keep}; run {again} again to resume"


class _Signals:
    """SIGINT and SIGTERM raise :class:`KeyboardInterrupt` in the main thread while a run is in
    progress (SIGTERM otherwise kills the process with nothing rolled back); once ``quiet``,
    further signals are ignored so that the roll-back finishes."""

    def __init__(self, progress: _Progress):
        self.progress, self.signum, self.quiet, self._old = progress, None, False, {}

    def _handle(self, signum, frame):  # noqa: ARG002 - the signal interface
        if self.quiet or self.signum is not None:
            return
        self.signum = signum
        _STOPPING.set()  # the kernel is killed, not asked to shut down mid-cell
        raise KeyboardInterrupt(signal.Signals(signum).name)

    def __enter__(self) -> _Signals:
        _STOPPING.clear()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


#: Set when a run is interrupted: its kernel is then killed rather than asked to shut down
#: (a kernel asked while a cell runs logs a traceback of its closed sockets on our stderr).
_STOPPING = threading.Event()


def _kernel_manager_class():
    """jupyter_client's AsyncKernelManager, killing the kernel at once after an interrupt."""
    from jupyter_client.manager import AsyncKernelManager

    class _KernelManager(AsyncKernelManager):
        async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
            await super().shutdown_kernel(now=now or _STOPPING.is_set(), restart=restart)

    return _KernelManager


class ResultsInUse(RuntimeError):
    """Another run holds the results folder (its process, host, start time and command are
    named)."""


class OutputsMissing(RuntimeError):
    """A notebook finished without writing files that ``notebooks/dependencies.yml`` says it
    writes (they are named)."""


def _results_folders(root: Path, notebooks: Sequence[Path], params) -> list[Path]:
    """The distinct results folders of the chain's notebooks (inside ``root``)."""
    folders = []
    for path in notebooks:
        where = notebook_results_dir(path, params)
        if not where:
            continue
        folder = (root / where).resolve()
        if folder != root and folder not in folders:
            folders.append(folder)
    return folders


class _RunLock:
    """An exclusive ``flock`` on ``RUN_LOCK`` in each folder, for the run's lifetime.

    The kernel releases it when the process dies (SIGKILL included), so a stale lock never
    blocks a later run. A folder that cannot be written (read-only) is not locked: nothing can
    be written there by this run either.
    """

    def __init__(self, folders: Sequence[Path], params, *, dry_run: bool):
        import fcntl
        import socket
        import sys

        self._held: list[tuple[Path, int]] = []
        if dry_run:
            return
        digest = hashlib.sha256(json.dumps(
            {k: v for k, v in params.items() if k not in EXECUTION_PARAMETERS},
            sort_keys=True, default=str).encode()).hexdigest()[:12]
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                "command": " ".join(sys.argv), "parameters": digest}
        try:
            for folder in sorted(set(folders)):
                fd = self._open(folder)
                if fd is None:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    other = _read_lock(fd)
                    os.close(fd)
                    same = ("the same parameters" if other.get("parameters") == digest
                            else "other parameters")
                    raise ResultsInUse(
                        f"{folder} is in use by another topolip run (pid {other.get('pid')} on "
                        f"{other.get('host')} since {other.get('started')}, "
                        f"`{other.get('command')}`, {same}): two runs on one results folder "
                        f"would mix their tables; wait for it to finish, or give this run "
                        f"another results_dir") from None
                lock = folder / RUN_LOCK
                try:
                    if os.fstat(fd).st_ino != os.stat(lock).st_ino:  # released and removed
                        os.close(fd)
                        fd = self._open(folder)
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except FileNotFoundError:
                    pass
                os.ftruncate(fd, 0)
                os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
                self._held.append((lock, fd))
        except BaseException:
            self.release()
            raise

    @staticmethod
    def _open(folder: Path) -> int | None:
        from topolip.io import current_umask

        try:
            folder.mkdir(parents=True, exist_ok=True)
            return os.open(folder / RUN_LOCK, os.O_RDWR | os.O_CREAT, 0o666 & ~current_umask())
        except OSError:
            try:
                return os.open(folder / RUN_LOCK, os.O_RDONLY)
            except OSError:
                return None  # a folder this run cannot write: nothing to protect

    def release(self) -> None:
        for lock, fd in self._held:
            try:
                lock.unlink(missing_ok=True)  # while still holding it
            except OSError:
                pass
            os.close(fd)
        self._held = []


def _read_lock(fd: int) -> dict[str, Any]:
    try:
        return json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        return {}


def _clean_leftovers(folders: Sequence[Path], log) -> None:
    """Remove what killed runs left: ``.tmp`` files of interrupted atomic writes in the run's
    folders (it holds their lock, so none is being written) and the roll-back copies of dead
    runs in the temporary folder."""
    removed = []
    for folder in folders:
        removed += remove_temporaries(folder)
    stale = _remove_stale_backups()
    if removed or stale:
        log(f"[topolip] removed {len(removed)} temporary file(s) and {stale} roll-back "
            f"cop{'y' if stale == 1 else 'ies'} left by interrupted runs")


def _remove_stale_backups() -> int:
    """Delete ``topolip-outputs-*`` folders whose owner is gone (its lock on ``.owner`` is
    free), whatever their mtime; a folder without ``.owner`` (written by an older version, or
    being created) only once it is an hour old. Returns how many were removed."""
    import fcntl
    import shutil
    import tempfile

    n = 0
    for folder in Path(tempfile.gettempdir()).glob("topolip-outputs-*"):
        owner = folder / ".owner"
        try:
            if not owner.exists():
                if time.time() - folder.stat().st_mtime < 3600:  # being created, or a
                    continue  # live run of a version without the owner lock
            else:
                fd = os.open(owner, os.O_RDONLY)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live run's copy
                finally:
                    os.close(fd)
            shutil.rmtree(folder, ignore_errors=True)
            n += 1
        except OSError:
            continue
    return n


class _SharedCluster:
    """One Dask LocalCluster for every notebook run with ``scheduler: local``, started when the
    first of them executes (a cached chain starts none): its address is what they receive. A
    scheduler address is checked once, within ``timeout`` seconds, before a notebook gets it."""

    def __init__(self, n_workers: int | None, root: Path, log, timeout: float = 20.0):
        self.n_workers, self.root, self.log, self._cluster = n_workers, root, log, None
        self.timeout, self._reached = timeout, set()

    def address(self) -> str:
        if self._cluster is None:
            from topolip.tasks import local_cluster

            t0 = time.perf_counter()
            self._cluster = local_cluster(self.n_workers, cwd=self.root)  # where notebooks run
            self.log(f"[topolip] Dask LocalCluster of {len(self._cluster.workers)} workers "
                     f"started in {time.perf_counter() - t0:.1f} s at "
                     f"{self._cluster.scheduler_address} (shared by the notebooks)")
        return self._cluster.scheduler_address

    def check(self, address: str) -> None:
        """Raise RuntimeError naming ``address`` if it does not answer within the timeout."""
        if address not in self._reached:
            from topolip.tasks import probe_scheduler

            probe_scheduler(address, self.timeout)
            self._reached.add(address)

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def _check_reads_of_only(root: Path, notebooks: Sequence[Path], params, deps, only) -> None:
    """With ``only``: a file a selected notebook reads, written by a notebook not selected,
    must still have the hash that notebook recorded."""
    if deps is None:
        return
    producer: dict[str, str] = {}
    for path in notebooks:
        for t in deps[path.stem].writes:
            producer.setdefault(t, path.stem)
    out_dir = root / BOOK_NOTEBOOKS
    for path in notebooks:
        if path.stem not in only:
            continue
        where = notebook_results_dir(path, params)
        for t in deps[path.stem].reads:
            stem = producer.get(t)
            if stem is None or stem in only:
                continue
            rel = relative_path(resolve_declared(t, where, root), root)
            record = read_record(out_dir / f"{stem}.ipynb").get("outputs") or {}
            bad = damaged_outputs({rel: record[rel]} if rel in record else {}, root)
            if rel not in record and (root / rel).exists():
                bad = [f"{rel} (not recorded by {stem}'s last run)"]
            if bad:
                raise RuntimeError(
                    f"{path.stem} reads {bad[0]}, written by {stem}: run {stem} again first "
                    f"(add --only {stem}, or run the whole chain)")


def _run_notebooks(root: Path, notebooks: Sequence[Path], params: Mapping[str, Any],
                   per_notebook: Mapping[Path, dict], deps, *, fingerprint: str,
                   lock: str | None, runs: list[NotebookRun], cluster: _SharedCluster,
                   only, force: bool, kernel_name: str, dry_run: bool, log,
                   progress: _Progress | None = None) -> None:
    """The loop of :func:`run_chain` over the notebooks (appends to ``runs``)."""
    import papermill

    progress = progress if progress is not None else _Progress()
    if only:
        _check_reads_of_only(root, notebooks, params, deps, only)
    out_dir = root / BOOK_NOTEBOOKS
    upstream = ""
    rewrites: dict[Path, str] = {}  # dry run: files an earlier notebook would write, by whom
    for path in notebooks:
        nb_params = per_notebook[path]
        source = path.read_text()
        where = notebook_results_dir(path, params)
        if deps is None:  # no declaration: a plain chain
            reads = {"upstream": upstream or None}
        else:
            files = {t: resolve_declared(t, where, root) for t in deps[path.stem].reads}
            reads = {t: file_hash(f) for t, f in files.items()}
        inputs = cache_inputs(source, nb_params, reads, fingerprint, lock)
        key = cache_key(inputs)
        upstream = key
        out = out_dir / f"{path.stem}.ipynb"
        if only and path.stem not in only:
            continue
        done = read_record(out)
        pending = ([f"{t} (rewritten by {rewrites[f]})" for t, f in files.items()
                    if f in rewrites] if deps is not None and dry_run else [])
        same_key = done.get("cache_key") == key
        damaged = (damaged_outputs(done.get("outputs"), root) if "outputs" in done
                   else ["no record of its outputs"]) if same_key else []
        if not force and same_key and not pending and not damaged:
            stale = out.with_suffix(".partial.ipynb")  # an old failure's executed part
            if not dry_run and stale.exists():  # (unlink fails on a read-only disk, even
                stale.unlink()                  # with missing_ok)
            log(f"[topolip] {path.stem}: unchanged, cached ({out.relative_to(root)})")
            runs.append(NotebookRun(path.stem, out, True, 0.0, "unchanged"))
            progress.cached.append(path.stem)
            continue
        reason = ("--force" if force else "never executed" if not out.exists()
                  else "input(s) an earlier notebook would rewrite: " + ", ".join(pending)
                  if pending and same_key
                  else "output(s) damaged: " + ", ".join(damaged) if damaged
                  else why_stale(done.get("cache_inputs"), inputs))
        if dry_run:
            log(f"[topolip] {path.stem}: would execute ({reason})")
            runs.append(NotebookRun(path.stem, out, False, 0.0, reason))
            if deps is not None:
                for t in deps[path.stem].writes:
                    rewrites.setdefault(resolve_declared(t, where, root), path.stem)
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
        injected = _shown_parameters(nb_params)
        if injected.get("scheduler") == "local":  # the chain's shared cluster
            injected["scheduler"] = cluster.address()
        elif injected.get("scheduler") not in (None, "serial"):
            cluster.check(injected["scheduler"])  # fails within scheduler_timeout, named
        progress.current = path.stem
        snapshot = _snapshot_outputs(root, nb_params, nb)
        declared = declared_writes(deps, path.stem, where, root)
        try:
            result = papermill.execute_notebook(
                nb, str(partial), parameters=injected, kernel_name=kernel_name,
                cwd=str(root), progress_bar=False, log_output=False,
                kernel_manager_class=_kernel_manager_class())
            unwritten = [t for t, f in declared.items() if not snapshot.written_now(f)]
            if unwritten:
                raise OutputsMissing(
                    f"notebook {path.stem} finished without writing {', '.join(unwritten)}, "
                    f"which {DEPENDENCIES} declares it writes: write them in the notebook, or "
                    f"remove them from its writes (executed notebook: {partial})")
        except BaseException as exc:
            removed = snapshot.rollback()
            snapshot.discard()
            progress.rolled_back = len(removed)
            if isinstance(exc, OutputsMissing):
                log(f"[topolip] {exc}")
                raise
            if not isinstance(exc, papermill.PapermillExecutionError):
                raise
            failed = NotebookFailed.from_error(path.stem, exc, partial, removed)
            log(f"[topolip] {failed}")
            raise failed from None
        written = snapshot.written()
        snapshot.discard()
        seconds = time.perf_counter() - t0
        _show_only_injected_parameters(result)
        result.metadata["topolip"] = {"cache_key": key, "cache_inputs": inputs,
                                      "outputs": record_outputs(root, written, declared),
                                      "seconds": round(seconds, 1),
                                      "provenance": provenance(nb_params, root=root)}
        atomic_write_text(out, nbformat.writes(result))
        partial.unlink(missing_ok=True)
        progress.current = None
        progress.finished.append(path.stem)
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
    """Files under a notebook's ``results_dir`` before it runs, to undo a failed run's writes
    and to tell what it wrote.

    Everything but checkpoints (``*.pt``, verified on load and resumable) and hidden files
    (temporaries, the run lock) is backed up (tables and figures are small); :meth:`rollback`
    deletes the files the notebook created and restores the ones it changed. The copy lives in
    a ``topolip-outputs-*`` folder of the temporary directory, locked by its owner: a later run
    removes the copies whose owner died (:func:`_remove_stale_backups`).
    """

    def __init__(self, folder: Path | None):
        import fcntl
        import tempfile

        self.folder = folder
        self.before: dict[Path, tuple[int, int, int]] = {}
        self._owner = None
        self.backup = Path(tempfile.mkdtemp(prefix="topolip-outputs-")) if folder else None
        if self.backup is not None:
            self._owner = os.open(self.backup / ".owner", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._owner, fcntl.LOCK_EX)
        if folder is None or not folder.is_dir():
            return
        import shutil

        try:
            for f in self._files():
                self.before[f] = self._stat(f)
                if f.suffix != ".pt":
                    dest = self.backup / f.relative_to(folder)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(f, dest)
        except BaseException:
            self.discard()
            raise

    @staticmethod
    def _stat(f: Path) -> tuple[int, int, int]:
        st = f.stat()
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _files(self) -> list[Path]:
        if self.folder is None or not self.folder.is_dir():
            return []
        return [f for f in self.folder.rglob("*")
                if f.is_file() and not any(part.startswith(".")
                                           for part in f.relative_to(self.folder).parts)]

    def written_now(self, f: Path) -> bool:
        """Whether ``f`` exists and was created or replaced since the snapshot."""
        try:
            now = self._stat(f)
        except FileNotFoundError:
            return False
        return self.before.get(f) != now

    def written(self) -> list[Path]:
        """The files under the folder created or replaced since the snapshot."""
        return [f for f in self._files() if self.written_now(f)]

    def rollback(self) -> list[Path]:
        import shutil

        changed = []
        for f in self._files():
            if f.suffix == ".pt":
                continue
            old = self.before.get(f)
            if old is None:
                f.unlink(missing_ok=True)
                changed.append(f)
            elif old != self._stat(f):
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
            self.backup = None
        if self._owner is not None:
            os.close(self._owner)
            self._owner = None


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
