"""Independent tasks of the chain (trainings, per-model measurements) on Dask distributed.

A :class:`TaskRunner` runs a list of :class:`Task` and returns their results in task order, on
one of three schedulers, with the same calling code:

- ``"local"`` (the default): a :class:`distributed.LocalCluster` of ``n_workers`` processes
  (default: the machine's cores), one thread each, torch set to one thread in each task;
- an address such as ``"tcp://host:8786"``: a running Dask cluster. Its workers must import
  this package and see ``results_dir`` on a shared file system (they write the checkpoints);
  their thread settings are left to the cluster;
- ``"serial"``: in this process, one task after the other (debugging; no Dask).

A failed task does not stop the others: every task runs to its end, then one :class:`TaskError`
lists every failed task by name (architecture, seed, configuration). Trainings write their
checkpoints atomically after every epoch (:func:`topolip.nets.train.fit`), so a re-run trains only
what failed or was interrupted.

Large inputs (the image data set, evaluation batches) travel once per worker:
:meth:`TaskRunner.share` sends them to every worker (the result of a task, replicated, so Dask can
compute it again when a worker dies) and the tasks receive a reference that Dask resolves on the
worker. Sharing, rather than letting each worker reload the data set from its parameters, keeps the
library functions as they are (they take an :class:`~topolip.nets.data.split.ImageSplit` and
tensors, not their recipe), needs no data folder on the workers, and in serial mode costs nothing
(the object itself is passed).

The module is a base of the package: torch-free, it imports nothing of :mod:`topolip` (what a
task computes is the caller's). Two helpers build on the runner in the experiments layer:
:func:`topolip.experiments.per_model.train_models` (the trainings of the chain) and
:func:`topolip.experiments.per_model.map_models` (one function over the trained models of
``models.csv``, rows gathered in its order).
"""

from __future__ import annotations

import logging
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_SCHEDULER_TIMEOUT", "Task", "TaskError", "TaskRunner", "check_scheduler",
    "connect_scheduler", "local_cluster", "probe_scheduler", "task_still_wanted",
]


#: Seconds to reach a scheduler given by its address before giving up (the ``scheduler_timeout``
#: parameter; ``topolip run`` passes it to the notebooks in ``TOPOLIP_SCHEDULER_TIMEOUT``).
DEFAULT_SCHEDULER_TIMEOUT = 20.0


_TIMEOUT_VARIABLE = "TOPOLIP_SCHEDULER_TIMEOUT"


def _timeout(timeout: float | None) -> float:
    if timeout is None:
        try:
            timeout = float(os.environ.get(_TIMEOUT_VARIABLE, DEFAULT_SCHEDULER_TIMEOUT))
        except ValueError:
            timeout = DEFAULT_SCHEDULER_TIMEOUT
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError(f"scheduler_timeout must be a positive number of seconds, got "
                         f"{timeout!r}")
    return float(timeout)


def probe_scheduler(address: str, timeout: float) -> None:
    """Open (and close) a TCP connection to a ``tcp://host:port`` scheduler within ``timeout``
    seconds.

    Parameters
    ----------
    address : str
        A Dask scheduler address; protocols other than ``tcp://`` and ``tls://`` are left to
        Dask (nothing is probed).
    timeout : float
        Seconds (the ``scheduler_timeout`` parameter).

    Raises
    ------
    ValueError
        If a ``tcp://`` address has no host or port.
    RuntimeError
        Naming the address and the timeout, when it cannot be reached in time.

    Examples
    --------
    >>> probe_scheduler("inproc://local", 1.0) is None
    True
    """
    import socket
    from urllib.parse import urlsplit

    if not address.startswith(("tcp://", "tls://")):
        return  # other protocols (inproc, ucx) are left to Dask
    try:
        parts = urlsplit(address)
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or not port:
        raise ValueError(f"scheduler {address!r}: expected tcp://host:port")
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError | socket.timeout) else (
            exc.strerror or str(exc))
        raise RuntimeError(
            f"Dask scheduler {address} is unreachable ({reason}; scheduler_timeout "
            f"{timeout:g} s): start it (dask scheduler), check the address, or use "
            f"scheduler=local") from None


def connect_scheduler(address: str, *, timeout: float | None = None):
    """A :class:`distributed.Client` of the running scheduler at ``address``, within
    ``timeout`` seconds.

    Parameters
    ----------
    address : str
        ``tcp://host:port`` of a running Dask scheduler.
    timeout : float, optional
        Seconds to connect (default: ``TOPOLIP_SCHEDULER_TIMEOUT`` from the environment, which
        ``topolip run`` sets from the ``scheduler_timeout`` parameter, else
        :data:`DEFAULT_SCHEDULER_TIMEOUT`). The whole connection (a TCP probe, then Dask's
        handshake, which on its own can wait forever for a peer that accepts but never
        answers) must finish within it, whatever the load of the machine.

    Returns
    -------
    distributed.Client

    Raises
    ------
    RuntimeError
        Naming the address and the timeout, when the scheduler cannot be reached in time.
    ValueError
        If ``timeout`` is not a positive number.

    Examples
    --------
    >>> connect_scheduler("tcp://127.0.0.1:1", timeout=2)
    Traceback (most recent call last):
    ...
    RuntimeError: Dask scheduler tcp://127.0.0.1:1 is unreachable (Connection refused; ...
    """
    import threading

    import dask
    from distributed import Client

    timeout = _timeout(timeout)
    t0 = time.monotonic()
    probe_scheduler(address, timeout)
    box: dict[str, Any] = {}

    def connect() -> None:  # Dask's handshake can wait forever on a peer that never answers
        try:
            with dask.config.set({"distributed.comm.timeouts.connect": f"{timeout}s"}):
                box["client"] = Client(address, timeout=timeout)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=connect, name="topolip-connect", daemon=True)
    thread.start()
    thread.join(max(timeout - (time.monotonic() - t0), 0.1))
    if thread.is_alive() or "error" in box:
        exc = box.get("error")
        detail = f" ({type(exc).__name__}: {exc})" if exc is not None else " (no handshake)"
        raise RuntimeError(f"Dask scheduler {address} did not answer within scheduler_timeout "
                           f"{timeout:g} s{detail}: check that it is a running Dask scheduler")
    return box["client"]


def check_scheduler(scheduler: Any) -> str:
    """Return ``scheduler`` if it names a scheduler: ``"local"``, ``"serial"`` or an address.

    Raises
    ------
    ValueError
        If ``scheduler`` is not text, or is neither ``"local"``, ``"serial"`` nor an address
        with a protocol (``tcp://host:8786``).

    Examples
    --------
    >>> check_scheduler("tcp://10.0.0.5:8786")
    'tcp://10.0.0.5:8786'
    >>> check_scheduler("host:1")
    Traceback (most recent call last):
    ...
    ValueError: scheduler must be 'local', 'serial' or an address (tcp://host:8786), got 'host:1'
    """
    if isinstance(scheduler, str) and (scheduler in ("local", "serial") or (
            "://" in scheduler and scheduler.split("://", 1)[1].strip())):
        return scheduler
    raise ValueError("scheduler must be 'local', 'serial' or an address (tcp://host:8786), "
                     f"got {scheduler!r}")


@dataclass(frozen=True)
class Task:
    """One independent unit of work: ``fn(*args, **kwargs)``, reported under ``name``.

    ``name`` says what the task is in a failure report (e.g. ``"train vit seed 1 (epochs 8,
    batch 128, lr 0.002)"``). ``fn`` must be importable or picklable by cloudpickle; the
    arguments may hold references returned by :meth:`TaskRunner.share`.
    """

    name: str
    fn: Callable[..., Any]
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


class TaskError(RuntimeError):
    """Some tasks failed; ``failures`` lists ``(name, exception, traceback text)`` of each.

    Raised after every task has finished, so the results of the others (checkpoints) are kept.
    """

    def __init__(self, failures: Sequence[tuple[str, BaseException, str]], n_tasks: int):
        self.failures = list(failures)
        lines = [f"{len(self.failures)} of {n_tasks} tasks failed (the others finished; a "
                 "re-run resumes from their checkpoints):"]
        lines += [f"  - {name}: {type(exc).__name__}: {exc}" for name, exc, _ in self.failures]
        super().__init__("\n".join(lines))


def _run_one(fn: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any],
             threads: int | None) -> Any:
    """Call ``fn`` in the thread that runs the task, with torch at ``threads`` threads."""
    if threads is not None:
        import torch  # set in this thread: OpenMP's thread count is per calling thread

        torch.set_num_threads(threads)
    return fn(*args, **dict(kwargs))


def task_still_wanted() -> bool:
    """Whether the Dask task running in this thread is still wanted by a live client.

    False when the worker lost its scheduler (the stream to it closed, or the worker is
    closing) or the scheduler released the task (its client is gone, or cancelled it); True
    outside a Dask worker (a serial run). Long tasks call it before writing a result that
    would outlive them (:func:`topolip.nets.train.fit` before each checkpoint).

    Returns
    -------
    bool
    """
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # not in a Dask worker
        return True
    status = getattr(getattr(worker, "status", None), "name", "running")
    if status not in ("running", "paused"):
        return False
    stream = getattr(worker, "batched_stream", None)
    comm = getattr(stream, "comm", None)
    if stream is not None and (comm is None or comm.closed()):
        return False
    key = worker.get_current_task()
    task = worker.state.tasks.get(key) if key is not None else None
    return task is not None and task.state not in ("cancelled", "released", "forgotten")


def _identity(obj: Any) -> Any:
    return obj


def _run_flat(fn: Callable[..., Any], threads: int | None, n_args: int,
              names: tuple[str, ...], *values: Any) -> Any:
    """:func:`_run_one` with the positional and keyword arguments passed flat in ``values``."""
    return _run_one(fn, values[:n_args], dict(zip(names, values[n_args:], strict=True)),
                    threads)


class _WorkingDirectory:
    """A Dask worker plugin: the worker runs in ``path`` (relative paths, e.g. the checkpoints
    under ``results_dir``, then mean what they mean to the notebooks)."""

    name = "topolip-working-directory"

    def __init__(self, path: str):
        self.path = path

    def setup(self, worker) -> None:  # noqa: ARG002 - the plugin interface
        os.chdir(self.path)


class _IgnoreInterrupt:
    """A Dask worker plugin: the worker process ignores SIGINT (see :func:`local_cluster`)."""

    def setup(self, *_args, **_kwargs) -> None:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)


class _HeartbeatFilter(logging.Filter):
    """Drops a worker's "Failed to communicate with scheduler during heartbeat" record.

    When the chain stops (Ctrl-C, SIGTERM, the end of a run) the scheduler can close while a
    worker's heartbeat is in flight; the worker then logs that error with a traceback, which
    would be the one line of stderr a user reads. A scheduler that really dies mid-run is
    reported by the runner instead, naming each lost model.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to communicate with scheduler during")


class _QuietHeartbeat:
    """A Dask worker plugin: installs :class:`_HeartbeatFilter` on the worker's logger."""

    def setup(self, *_args, **_kwargs) -> None:
        _install_heartbeat_filter()


def _install_heartbeat_filter() -> None:
    """Install :class:`_HeartbeatFilter` on ``distributed.worker``'s logger (idempotent)."""
    logger = logging.getLogger("distributed.worker")
    if not any(isinstance(f, _HeartbeatFilter) for f in logger.filters):
        logger.addFilter(_HeartbeatFilter())


def local_cluster(n_workers: int | None = None, *, cwd: str | Path | None = None):
    """A :class:`distributed.LocalCluster` for the chain: ``n_workers`` processes (default the
    cores), one thread each, torch and BLAS at one thread in every worker (a dashboard, if
    bokeh is installed, on a free port: the cluster's ``dashboard_link``).

    Processes, not threads: torch and ripser hold the GIL for long stretches. ``topolip run``
    starts one for the whole chain (its address is passed to the notebooks as ``scheduler``),
    so workers start, import torch and receive the data set once, not once per notebook.

    Parameters
    ----------
    n_workers : int, optional
        Worker processes (default: the CPUs this process may use).
    cwd : str or Path, optional
        Working directory of the workers (default: this process's). ``topolip run`` passes the
        repository root, where the notebooks run.

    Returns
    -------
    distributed.LocalCluster
        Close it when done (it is a context manager).

    Raises
    ------
    ValueError
        If ``n_workers`` is not None or a positive int.
    """
    from distributed import LocalCluster

    _check_workers(n_workers)
    import dask

    # Set in each worker before it starts: one OpenMP/BLAS thread, and glibc's default
    # malloc trimming. Dask's default MALLOC_TRIM_THRESHOLD_=65536 returns freed memory to the
    # system so eagerly that torch's training steps run 1.6x slower (measured: 3 ViT epochs
    # 5.9 s in a process, 9.6 s in a worker with it, the same as in a process without it).
    environ = {**dask.config.get("distributed.nanny.pre-spawn-environ"),
               "MALLOC_TRIM_THRESHOLD_": None,
               **{name: 1 for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                       "OPENBLAS_NUM_THREADS")}}
    saved = dict(os.environ)  # the nannies write the pre-spawn variables into this process
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
            cluster = LocalCluster(n_workers=n_workers or _cores(), threads_per_worker=1,
                                   processes=True, dashboard_address=":0",
                                   silence_logs=logging.ERROR)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    from distributed import Client
    from distributed.diagnostics.plugin import WorkerPlugin

    with Client(cluster) as client:
        # Ctrl-C in a terminal signals the whole process group: this process handles it (and
        # closes the cluster, whose nannies run here), the worker processes ignore it rather
        # than each printing a KeyboardInterrupt traceback (restarted workers too).
        client.register_plugin(type("IgnoreInterrupt", (_IgnoreInterrupt, WorkerPlugin),
                                    {"name": "topolip-ignore-interrupt"})())
        client.register_plugin(type("QuietHeartbeat", (_QuietHeartbeat, WorkerPlugin),
                                    {"name": "topolip-quiet-heartbeat"})())
        if cwd is not None:
            plugin = type("WorkingDirectory", (_WorkingDirectory, WorkerPlugin), {})
            client.register_plugin(plugin(str(Path(cwd).resolve())))
    return cluster


def _check_workers(n_workers: Any) -> None:
    if n_workers is not None and (isinstance(n_workers, bool) or not isinstance(n_workers, int)
                                  or n_workers < 1):
        raise ValueError(f"n_workers must be None or a positive integer, got {n_workers!r}")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class TaskRunner:
    """Run independent tasks on a Dask scheduler; results come back in task order.

    Use as a context manager, so that a local cluster is shut down at the end; the cluster
    starts at the first :meth:`share` or :meth:`map` (nothing starts for ``"serial"``).

    Parameters
    ----------
    scheduler : str, default="local"
        ``"local"`` (a :class:`distributed.LocalCluster` of ``n_workers`` one-thread
        processes), ``"serial"`` (this process) or the address of a running scheduler
        (``"tcp://host:8786"``).
    n_workers : int, optional
        Worker processes of the local cluster (default: the machine's cores). Ignored by the
        other schedulers.
    progress : bool, optional
        Show a progress bar (tqdm, on standard error) as tasks finish. Default: on, except in
        a Jupyter kernel, where ipykernel captures standard error into the notebook and the
        bar would end up in the book; there the runner's log says when each notebook is done.
    timeout : float, optional
        Seconds to reach a scheduler given by its address (:func:`connect_scheduler`; default
        ``TOPOLIP_SCHEDULER_TIMEOUT`` or :data:`DEFAULT_SCHEDULER_TIMEOUT`).

    Raises
    ------
    ValueError
        If ``scheduler`` is not a scheduler (:func:`check_scheduler`), ``n_workers`` is not a
        positive integer or ``timeout`` not a positive number.
    RuntimeError
        At the first :meth:`share` or :meth:`map`, naming the address, when a scheduler
        address cannot be reached within ``timeout``.

    Notes
    -----
    A task whose worker dies is run again on another worker by Dask (up to its
    ``distributed.scheduler.allowed-failures``, 3): shared data are sent to every worker
    (:meth:`share`), so they survive the loss of one. A task lost for good (every try's worker
    died, the scheduler went away) is reported in the :class:`TaskError` with its name, like a
    task that raised.

    Examples
    --------
    >>> with TaskRunner("serial", progress=False) as runner:
    ...     runner.map([Task("square 3", pow, (3, 2)), Task("square 4", pow, (4, 2))])
    [9, 16]
    """

    def __init__(self, scheduler: str = "local", *, n_workers: int | None = None,
                 progress: bool | None = None, timeout: float | None = None):
        self.scheduler = check_scheduler(scheduler)
        self.timeout = _timeout(timeout)
        _check_workers(n_workers)
        self.n_workers = n_workers if n_workers is not None else _cores()
        self.progress = progress if progress is not None else "ipykernel" not in sys.modules
        self._client = None
        self._cluster = None
        self._shared: dict[int, tuple[Any, Any]] = {}  # id(obj) -> (obj, its future)

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> TaskRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def threads(self) -> int | None:
        """Torch threads set in each task: 1 on a local cluster, else left as it is (None)."""
        return 1 if self.scheduler == "local" else None

    @property
    def client(self):
        """The :class:`distributed.Client`, started on first use (None for ``"serial"``)."""
        if self.scheduler == "serial":
            return None
        if self._client is None:
            from distributed import Client

            if self.scheduler == "local":
                self._cluster = local_cluster(self.n_workers)
                self._client = Client(self._cluster)
            else:
                self._client = connect_scheduler(self.scheduler, timeout=self.timeout)
        return self._client

    def close(self) -> None:
        """Close the client and shut down a local cluster (idempotent)."""
        self._shared.clear()
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    # ------------------------------------------------------------------ work
    def share(self, obj: Any) -> Any:
        """``obj`` sent once to the cluster; pass the returned reference as a task argument.

        Serial: ``obj`` itself. Otherwise a Dask future of the scattered object, which Dask
        replaces by the object on the worker. It is sent to every worker (each receives it
        once), and kept by the scheduler as a task's result, which Dask can compute again: a
        task whose worker dies runs again on another one. Sharing the same
        object again returns the same future (it is sent once per runner).
        """
        if self.client is None:
            return obj
        if id(obj) not in self._shared:  # the object is kept, so its id is not reused
            # A task that returns the object, rather than client.scatter: Dask forgets
            # scattered data (and cancels the tasks needing it, "already forgotten") when a
            # worker holding it dies mid-task; a task's result it can compute again.
            with warnings.catch_warnings():
                # the object travels in the graph on purpose (a task result Dask can compute
                # again); Dask's advice to load large data otherwise does not apply
                warnings.filterwarnings("ignore", message="Sending large graph",
                                        category=UserWarning)
                future = self.client.submit(_identity, obj, pure=False,
                                            key=f"topolip-data-{os.urandom(4).hex()}")
            self.client.replicate([future])  # every worker holds it (sent once each)
            self._shared[id(obj)] = (obj, future)
        return self._shared[id(obj)][1]

    def map(self, tasks: Iterable[Task], *, desc: str = "tasks") -> list[Any]:
        """Run ``tasks``; return their results in task order.

        Every task runs to its end, whatever the others do.

        Parameters
        ----------
        tasks : iterable of Task
            The tasks; their names should be distinct, to tell failures apart.
        desc : str, default="tasks"
            Label of the progress bar.

        Returns
        -------
        list
            ``[task.fn(*task.args, **task.kwargs) for task in tasks]``, in task order.

        Raises
        ------
        TaskError
            After all tasks finished, if any failed: it lists each failed task's name and
            error (the first error is chained as its cause).
        TypeError
            If an item of ``tasks`` is not a :class:`Task`.
        """
        from tqdm import tqdm

        tasks = list(tasks)
        bad = [t for t in tasks if not isinstance(t, Task)]
        if bad:
            raise TypeError(f"tasks must be Task objects, got {type(bad[0]).__name__}")
        results: list[Any] = [None] * len(tasks)
        failures: list[tuple[int, BaseException, str]] = []
        bar = tqdm(total=len(tasks), desc=desc, disable=not self.progress or not tasks,
                   file=sys.__stderr__ or sys.stderr)
        try:
            if self.client is None:
                for i, t in enumerate(tasks):
                    try:
                        results[i] = _run_one(t.fn, t.args, t.kwargs, None)
                    except Exception as exc:
                        failures.append((i, exc, traceback.format_exc()))
                    bar.update()
            elif tasks:
                from distributed import as_completed

                # the arguments travel flat: Dask re-runs a task whose worker died only when
                # the futures it needs are top-level arguments (nested in a tuple, the retry
                # is cancelled as "already forgotten")
                futures = {
                    self.client.submit(_run_flat, t.fn, self.threads, len(t.args),
                                       tuple(t.kwargs), *t.args, *dict(t.kwargs).values(),
                                       pure=False, key=f"topolip-task-{i}-{os.urandom(4).hex()}",
                                       retries=0): i
                    for i, t in enumerate(tasks)}
                pending = dict(futures)
                try:
                    for fut in as_completed(futures):
                        i = pending.pop(fut)
                        if fut.status == "finished":
                            try:
                                results[i] = fut.result()
                            except Exception as exc:  # lost while its result was fetched
                                failures.append((i, _lost(fut, exc), ""))
                        elif fut.status == "error":
                            exc = fut.exception()
                            tb = "".join(traceback.format_tb(fut.traceback()))
                            failures.append((i, _lost(fut, exc), tb))
                        else:  # cancelled: its worker, its data or the scheduler went away
                            failures.append((i, _lost(fut, None), ""))
                        fut.release()
                        bar.update()
                except Exception as exc:  # the connection to the scheduler broke
                    for fut, i in pending.items():
                        failures.append((i, _lost(fut, exc), ""))
                    bar.update(len(pending))
        finally:
            bar.close()
        if failures:
            failures.sort(key=lambda f: f[0])
            err = TaskError([(tasks[i].name, exc, tb) for i, exc, tb in failures], len(tasks))
            raise err from failures[0][1]
        return results


def _lost(fut, exc: BaseException | None) -> BaseException:
    """The error of a task's future, in words a reader can act on (Dask's cancellation and
    lost-worker errors name only the task's key)."""
    from distributed.scheduler import KilledWorker

    if exc is not None and not isinstance(exc, KilledWorker | OSError | TimeoutError) and \
            fut.status == "error":
        return exc  # the task itself raised
    if isinstance(exc, KilledWorker):
        return RuntimeError("every worker that ran it died (Dask tried it on several; a "
                            "worker killed for memory, or crashed)")
    state = getattr(fut, "_state", None)  # a cancelled future holds why (Dask's reason)
    reason = str(getattr(state, "exception", None) or "")
    if exc is not None and not reason:
        reason = f"{type(exc).__name__}: {exc}"
    if "scheduler-connection-lost" in reason or "connection" in reason.lower() or isinstance(
            exc, OSError | TimeoutError):
        what = "the connection to the Dask scheduler was lost"
    else:
        what = "Dask lost it (its worker or the data it needs went away)"
    return RuntimeError(f"{what}: {reason or 'cancelled'}; a re-run resumes from the finished "
                        "checkpoints")
