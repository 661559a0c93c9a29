"""Per-model tasks on a :class:`topolip.tasks.TaskRunner`:
:func:`train_models` trains (or loads from its checkpoint) each model of a roster;
:func:`map_models` maps a function over the trained models of a ``models.csv`` table.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from topolip.tasks import Task, TaskRunner

__all__ = ["map_models", "train_models"]


def _describe(spec, config) -> str:
    params = ", ".join(f"{k}={v}" for k, v in dict(spec.params).items()
                       if k not in ("in_channels", "image_size", "num_classes"))
    return (f"{spec.arch} seed {config.seed} ({params}; epochs {config.epochs}, batch "
            f"{config.batch_size}, lr {config.lr:g}, weight decay {config.weight_decay:g})")


def _train(spec, data, config, results_dir, device, measure, keep_epochs=False):
    from topolip.nets.checkpoints import checkpoint_path
    from topolip.nets.train import fit
    from topolip.tasks import task_still_wanted

    ckpt = checkpoint_path(results_dir, spec, config, data)
    result = fit(spec, data, config, checkpoint=ckpt, device=device, progress=False,
                 still_wanted=task_still_wanted, keep_epochs=keep_epochs)
    out = {"checkpoint": str(ckpt), "test_accuracy": result.test_accuracy,
           "train_accuracy": result.train_accuracy, "val_accuracy": result.val_accuracy,
           "best_epoch": result.best_epoch,
           "parameters": sum(p.numel() for p in result.model.parameters()),
           "history": result.history, "resumed_from_epoch": result.resumed_from_epoch,
           "environment": result.environment, "retrained": result.retrained}
    if measure is not None:
        fn, kwargs = measure
        out["measured"] = fn(result.model, spec, config, **kwargs)
    return out


def train_models(jobs: Sequence[tuple[Any, Any]], data: Any, *, results_dir: str | Path,
                 runner: TaskRunner | None = None, device: Any = None,
                 measure: Callable[..., Any] | None = None,
                 measure_kwargs: Mapping[str, Any] | None = None,
                 desc: str = "train", keep_epochs: Collection[str] = ()
                 ) -> list[dict[str, Any]]:
    """Train ``(spec, config)`` jobs as tasks (checkpoints reused); one dict each, in order.

    Each task calls :func:`topolip.nets.train.fit` on the checkpoint
    :func:`topolip.nets.checkpoints.checkpoint_path` names: a finished one is loaded, not
    retrained, an unfinished one resumed.

    Parameters
    ----------
    jobs : sequence of (ModelSpec, TrainConfig)
        The models to train.
    data : ImageSplit
        Training and test images; shared once with the workers (:meth:`TaskRunner.share`).
    results_dir : path
        Checkpoints go to ``{results_dir}/models/`` (shared by the workers of a remote cluster).
    runner : TaskRunner, optional
        Where the tasks run (default: serial, in this process).
    device : torch.device or str, optional
        Training device (default: each worker's :func:`topolip.nets.train.default_device`).
    measure : callable, optional
        ``measure(model, spec, config, **measure_kwargs)`` called in the task on the trained
        model (in eval mode); its result is returned under ``"measured"``.
    measure_kwargs : mapping, optional
        Keyword arguments of ``measure``; large values should be :meth:`TaskRunner.share`
        references.
    desc : str, default="train"
        Label of the progress bar.
    keep_epochs : collection of str, default=()
        Architectures whose every epoch's weights are kept beside their checkpoint
        (``fit(keep_epochs=True)``; ``04_robustness`` reads them for its accuracy-matched pair).

    Returns
    -------
    list of dict
        Per job: ``checkpoint`` (str), ``test_accuracy`` (on ``data.x_test``),
        ``train_accuracy`` and ``val_accuracy`` (clean, of the chosen epoch; validation None
        without a split), ``best_epoch`` (the epoch chosen), ``parameters``
        (number of weights), ``history`` (per-epoch dicts of :func:`topolip.nets.train.fit`),
        ``resumed_from_epoch`` (``config.epochs`` when nothing was trained), ``environment``
        (:func:`topolip.nets.train.training_environment` of the training), ``retrained`` (why an
        existing checkpoint from another environment was trained again, else "") and, with
        ``measure``, ``measured``.

    Raises
    ------
    TaskError
        After all jobs finished, naming each model (architecture, seed, parameters, training
        configuration) whose training or measurement failed.
    """
    runner = runner if runner is not None else TaskRunner("serial", progress=False)
    shared = runner.share(data)
    measure_arg = None if measure is None else (measure, dict(measure_kwargs or {}))
    tasks = [Task(f"train {_describe(spec, config)}", _train,
                  (spec, shared, config, str(results_dir), device, measure_arg,
                   spec.arch in set(keep_epochs)))
             for spec, config in jobs]
    return runner.map(tasks, desc=desc)


def _model_task(fn, row, device, **kwargs):
    from topolip.nets.train import load_trained

    model = load_trained(row["checkpoint"], device=device).model
    return fn(model, row, **kwargs)


def map_models(models: Any, fn: Callable[..., Any], *, runner: TaskRunner | None = None,
               device: Any = None, first: Sequence[str] = ("arch", "seed"),
               desc: str = "models", **kwargs: Any) -> Any:
    """Run ``fn`` on every trained model of a ``models.csv`` table; gather rows in its order.

    Each model is a task: its checkpoint is loaded (:func:`topolip.nets.train.load_trained`, eval
    mode) and ``fn(model, row, **kwargs)`` called, ``row`` being the table's row as a dict
    (``arch``, ``seed``, ``checkpoint``, ...). ``fn`` returns a pandas DataFrame or a tuple of
    them; each is given the row's ``first`` columns (in front), and the parts are concatenated
    in table order.

    Parameters
    ----------
    models : pandas.DataFrame
        The trained models (``tables/models.csv`` of ``01_train``), with a ``checkpoint``
        column and the ``first`` columns.
    fn : callable
        ``fn(model, row, **kwargs) -> DataFrame or tuple of DataFrame``. It runs on a worker:
        define it at module level or in the notebook, and pass what it needs as ``kwargs``
        rather than reading large notebook variables (they would be pickled into every task).
    runner : TaskRunner, optional
        Where the tasks run (default: serial, in this process).
    device : torch.device or str, optional
        Device of the loaded models (default: each worker's default device).
    first : sequence of str, default=("arch", "seed")
        Columns of ``models`` copied in front of every returned frame.
    desc : str, default="models"
        Label of the progress bar.
    **kwargs
        Passed to ``fn``; each value is shared once with the workers
        (:meth:`TaskRunner.share`).

    Returns
    -------
    pandas.DataFrame or tuple of pandas.DataFrame
        As ``fn`` returns, the parts of all models concatenated (index reset).

    Raises
    ------
    ValueError
        If ``models`` lacks the ``checkpoint`` column or a ``first`` column, or ``fn`` returns
        something other than a DataFrame or a tuple of them.
    TaskError
        After all models finished, naming each model (row of ``models``) whose task failed.
    """
    import pandas as pd

    from topolip.schema import require_columns

    require_columns(models, ("checkpoint", *first), "models (the table of 01_train, "
                    "tables/models.csv)")
    runner = runner if runner is not None else TaskRunner("serial", progress=False)
    shared = {k: runner.share(v) for k, v in kwargs.items()}
    rows = [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
            for r in models.to_dict("records")]
    tasks = [Task("model " + ", ".join(f"{c} {r[c]}" for c in first) + f" ({r['checkpoint']})",
                  _model_task, (fn, r, device), shared) for r in rows]
    outs = runner.map(tasks, desc=desc)
    single = not isinstance(outs[0], tuple) if outs else True
    parts: list[list[pd.DataFrame]] = []
    for r, out in zip(rows, outs, strict=True):
        frames = (out,) if single else out
        if not all(isinstance(f, pd.DataFrame) for f in frames):
            raise ValueError(f"map_models: fn must return a DataFrame or a tuple of them, got "
                             f"{type(out).__name__}")
        for j, f in enumerate(frames):
            f = f.assign(**{c: r[c] for c in first})
            f = f[list(first) + [c for c in f.columns if c not in first]]
            if j == len(parts):
                parts.append([])
            parts[j].append(f)
    if not parts:
        raise ValueError("map_models: models is empty")
    tables = tuple(pd.concat(p, ignore_index=True) for p in parts)
    return tables[0] if single else tables
