r"""Sweeps of TopoLip against model parameters: one parameter varied at a time around a base.

A sweep of architecture ``arch`` takes a base parameter set (e.g. a ViT of depth 2 and width
32) and a grid ``{parameter: [values]}``; each value of each parameter, with every other
parameter at its base value, is a *sweep point*. Each point is trained with
:func:`topolip.nets.train.fit` on a checkpoint named by
:func:`topolip.nets.checkpoints.checkpoint_path`, so a re-run trains nothing that is already
finished (and resumes what was interrupted), then measured:
clean accuracy and model TopoLip (:func:`topolip.topology.metric.summarize`: end-to-end ratio
``Δ_L/Δ_0``, its per-layer geometric mean ``(Δ_L/Δ_0)^{1/L}`` and the largest layer ratio, raw and
scale-free) for one perturbation.

References
----------
.. [1] B. Chen, "Is Smoothness the Key to Robustness? A Comparison of Attention and Convolution
   Models Using a Novel Metric", arXiv:2410.17628.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from topolip.experiments.model_measurement import measure_model, model_images
from topolip.experiments.per_model import train_models
from topolip.io import json_plain
from topolip.nets.checkpoints import checkpoint_path
from topolip.nets.data.split import ImageSplit
from topolip.nets.run_spec import ModelSpec, TrainConfig, spec_for
from topolip.perturbations.attacks import PERTURBATIONS
from topolip.tasks import TaskRunner
from topolip.topology.spec import TopoLipSpec

__all__ = ["SweepPoint", "run_sweeps", "sweep_points"]


@dataclass(frozen=True)
class SweepPoint:
    """One model of a sweep: ``parameter`` set to ``value``, the rest at the base.

    ``spec`` is the full :class:`topolip.nets.run_spec.ModelSpec` (data-derived ``in_channels``,
    ``image_size`` and ``num_classes`` included); ``is_base`` says whether ``value`` is the base
    value (the same model then appears in every parameter's sweep and is trained once).
    """

    arch: str
    parameter: str
    value: Any
    spec: ModelSpec
    is_base: bool

    @property
    def value_label(self) -> str:
        """``value`` as compact JSON (``"4"``, ``"[2, 2, 2, 2]"``)."""
        return json.dumps(self.value)

    @property
    def value_numeric(self) -> float:
        """``value`` as a number for plotting; a sequence (ResNet blocks) counts its sum."""
        if isinstance(self.value, Sequence) and not isinstance(self.value, str):
            return float(sum(self.value))
        return float(self.value)


def sweep_points(arch: str, base: Mapping[str, Any], grid: Mapping[str, Sequence[Any]],
                 data: ImageSplit) -> list[SweepPoint]:
    """The points of a one-at-a-time sweep, each model built once to check its parameters.

    Parameters
    ----------
    arch : str
        An architecture of :data:`topolip.nets.models.ARCHITECTURES`.
    base : mapping of str to value
        Keyword parameters of the architecture's builder at the centre of the sweep.
    grid : mapping of str to sequence
        ``{parameter: [value, ...]}``: each parameter is varied over its values, the others held
        at ``base`` (or at the builder's default if ``base`` does not set them).
    data : ImageSplit
        Gives the image shape and number of classes (see :func:`topolip.nets.run_spec.spec_for`).

    Returns
    -------
    list of SweepPoint
        In grid order, parameter by parameter.

    Raises
    ------
    ValueError
        If ``grid`` is empty, a parameter has no values, repeats a value or is not a parameter of
        the builder, or a point does not build (e.g. a patch size that does not tile the image:
        the builder's message says why), before anything is trained.

    Examples
    --------
    >>> x, y = torch.rand(20, 1, 28, 28), torch.arange(20) % 10
    >>> d = ImageSplit("toy", x, y, x, y)  # 28x28 gray images, 10 classes
    >>> pts = sweep_points("conv_stack", {"channels": 4}, {"num_layers": [1, 2]}, d)
    >>> [(p.parameter, p.value, p.spec.params["channels"], p.is_base) for p in pts]
    [('num_layers', 1, 4, False), ('num_layers', 2, 4, False)]
    >>> sweep_points("vit", {}, {"patch_size": [5]}, d)
    Traceback (most recent call last):
    ...
    ValueError: sweep point vit patch_size=5: vit: image_size=28 is not divisible by
    patch_size=5; choose a patch size that tiles the image
    """
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError(f"grid must be a non-empty mapping {{parameter: [values]}}, got {grid!r}")
    base = {k: json_plain(v) for k, v in dict(base).items()}
    points = []
    for parameter, values in grid.items():
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
            raise ValueError(f"grid[{parameter!r}] must be a non-empty list of values, "
                             f"got {values!r}")
        values = [json_plain(v) for v in values]
        if len({json.dumps(v) for v in values}) != len(values):
            raise ValueError(f"grid[{parameter!r}] repeats a value: {values}")
        for value in values:
            spec = spec_for(arch, {**base, parameter: value}, data)
            try:
                spec.build()
            except (ValueError, TypeError) as exc:
                raise ValueError(f"sweep point {arch} {parameter}={json.dumps(value)}: "
                                 f"{exc}") from exc
            is_base = parameter in base and json.dumps(base[parameter]) == json.dumps(value)
            points.append(SweepPoint(arch, parameter, value, spec, is_base))
    return points


def run_sweeps(
    sweeps: Mapping[str, Mapping[str, Any]],
    data: ImageSplit,
    config: TrainConfig,
    *,
    results_dir: str | Path,
    perturbations: Mapping[str, float],
    n_robust: int,
    n_points: int | None = None,
    floor: bool = False,
    spec: TopoLipSpec = TopoLipSpec(),
    seeds: Sequence[int] = (0,),
    pgd_steps: int = 10,
    pgd_restarts: int = 1,
    device: torch.device | str | None = None,
    progress: bool = False,
    runner: TaskRunner | None = None,
) -> pd.DataFrame:
    """Train every sweep point of every architecture for every seed (reusing checkpoints) and
    measure model TopoLip.

    Each distinct model (sweep point and seed; the base point appears in several sweeps and is
    trained once) is one task of ``runner``: it trains the model and measures it on its seed's
    images, drawn from ``data.x_test`` by the rule every model of the chain follows
    (:func:`topolip.experiments.model_measurement.model_images`), so a sweep model of seed
    ``s`` sees the images of the main models of seed ``s``. The models of every sweep and seed
    are submitted together, so no worker waits for the last model of one architecture or seed
    before the next starts; the rows are those of one call per seed and architecture,
    concatenated seed by seed in the order of ``sweeps``.

    Parameters
    ----------
    sweeps : mapping of str to mapping
        ``{arch: {"base": {...}, "grid": {parameter: [values]}}}`` (the ``sweeps`` parameter of
        the profiles); each entry's ``arch``, ``base`` and ``grid`` as :func:`sweep_points`.
    data : ImageSplit
        The models train on ``data.x_train`` and their clean accuracy is taken on
        ``data.x_test``.
    config : TrainConfig
        Training hyper-parameters; its ``seed`` is replaced by each of ``seeds``.
    results_dir : path
        Checkpoints go to ``{results_dir}/models/``
        (:func:`topolip.nets.checkpoints.checkpoint_path`): a finished one is loaded instead of
        trained, an unfinished one resumed.
    perturbations : mapping of str to float
        ``{kind: strength}`` (ε in pixel units for attacks, severity 0..5 for corruptions), as
        in :func:`topolip.experiments.model_measurement.measure_model`.
    n_robust : int
        Clean evaluation images per seed (pixels in [0, 1], at least ``n_points`` are taken):
        the accuracy drop is taken on all of them, TopoLip on the first ``n_points``.
    n_points : int, optional
        Images per point cloud (default all of the evaluation images).
    floor : bool, default=False
        Measure the noise floor on a clean batch of ``n_points`` more images, disjoint from the
        cloud (needs ``n_points`` and ``2 * n_points`` test images): every row then carries the
        floor columns and its ``within_noise_floor`` flag, as the main models' rows; without it
        they are NaN / empty.
    spec : TopoLipSpec
        Degrees, Wasserstein order ``p``, ground metric ``q``, backend and greedy subsample
        ``n_perm`` of the diagrams.
    seeds : sequence of int, default=(0,)
        Training seeds; the perturbation of a model uses its training seed.
    pgd_steps, pgd_restarts : int, default=10, 1
        Steps and random restarts of PGD, when it is one of the perturbations (the chain passes
        the attack ladder's, as for the main models).
    device : torch.device or str, optional
        Training device (default: each worker's :func:`topolip.nets.train.default_device`).
    progress : bool, default=False
        Show a progress bar over the models when ``runner`` is not given.
    runner : topolip.tasks.TaskRunner, optional
        Where the tasks run (a local Dask cluster, a remote one); default: serially in this
        process.

    Returns
    -------
    pandas.DataFrame
        One row per architecture, sweep point, seed and perturbation kind: ``arch``,
        ``parameter``, ``value`` (JSON text), ``value_numeric``
        (:attr:`SweepPoint.value_numeric`), ``is_base``, ``seed``, ``test_accuracy`` (on
        ``data.x_test``), ``val_accuracy`` (on the validation split, NaN without one),
        ``best_epoch`` (the epoch kept), the columns of
        :func:`topolip.experiments.model_measurement.measure_model`'s summary
        (``perturbation``, ``strength``, ``n_layers`` = ``L``, model TopoLip raw and
        scale-free, ``accuracy_clean``, ``accuracy_perturbed`` and ``accuracy_drop`` on the
        seed's evaluation images,
        the baselines, ``parameters``), ``resumed_from_epoch`` (``config.epochs`` when nothing
        was trained in this call) and ``checkpoint``.

    Raises
    ------
    ValueError
        If ``sweeps`` is empty or an entry lacks ``base`` or ``grid``, ``perturbations`` is
        empty or holds an unknown kind, ``seeds`` is empty, a sweep point is invalid
        (:func:`sweep_points`), or the images do not fit in ``data.x_test``
        (:func:`~topolip.experiments.model_measurement.model_images`), before anything is
        trained.
    topolip.tasks.TaskError
        After every other model finished, naming each sweep model (architecture, seed,
        parameters, training configuration) whose training or measurement failed.

    Examples
    --------
    >>> import tempfile
    >>> g = torch.Generator().manual_seed(0)
    >>> d = ImageSplit("toy", torch.rand(40, 1, 28, 28, generator=g), torch.arange(40) % 10,
    ...                torch.rand(20, 1, 28, 28, generator=g), torch.arange(20) % 10)
    >>> sweep = {"conv_stack": {"base": {"channels": 2}, "grid": {"num_layers": [1, 2]}}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     t = run_sweeps(sweep, d, TrainConfig(epochs=1, batch_size=40), results_dir=tmp,
    ...                    perturbations={"gaussian_noise": 3}, n_robust=8, n_points=8)
    >>> t[["parameter", "value", "n_layers", "resumed_from_epoch"]].values.tolist()
    [['num_layers', '1', 2, 0], ['num_layers', '2', 3, 0]]
    """
    if not isinstance(sweeps, Mapping) or not sweeps:
        raise ValueError(f"sweeps must be a non-empty {{arch: {{base, grid}}}} mapping, got "
                         f"{sweeps!r}")
    for arch, sweep in sweeps.items():
        if not isinstance(sweep, Mapping) or set(sweep) != {"base", "grid"}:
            raise ValueError(f"sweeps[{arch!r}] must have exactly the keys 'base' and 'grid', "
                             f"got {sweep!r}")
    if not isinstance(perturbations, Mapping) or not perturbations:
        raise ValueError(f"perturbations must be a non-empty {{kind: strength}} mapping, got "
                         f"{perturbations!r}")
    unknown = sorted(set(perturbations) - set(PERTURBATIONS))
    if unknown:
        raise ValueError(f"unknown perturbation(s) {unknown}; known: {list(PERTURBATIONS)}")
    seeds = list(seeds)
    if not seeds or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool)
                            for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of integers, got {seeds!r}")
    points_of = {arch: sweep_points(arch, sweep["base"], sweep["grid"], data)
                 for arch, sweep in sweeps.items()}
    drawn = {int(seed): model_images(data.x_test, data.y_test, int(seed), n_points=n_points,
                                     n_robust=n_robust, floor=floor) for seed in seeds}
    runner = runner if runner is not None else TaskRunner("serial", progress=progress)
    images = {seed: {"x": runner.share(m.x), "y": runner.share(m.y),
                     "x_floor": None if m.x_floor is None else runner.share(m.x_floor)}
              for seed, m in drawn.items()}
    jobs: dict[Path, tuple[ModelSpec, TrainConfig]] = {}
    for points in points_of.values():
        for point in points:
            for seed in seeds:
                cfg = replace(config, seed=int(seed))
                jobs.setdefault(checkpoint_path(results_dir, point.spec, cfg, data),
                                (point.spec, cfg))
    outs = train_models(list(jobs.values()), data, results_dir=results_dir, runner=runner,
                        device=device, measure=_measure_point,
                        desc=f"sweep {', '.join(sweeps)}",
                        measure_kwargs={"images": images,
                                        "perturbations": dict(perturbations),
                                        "topolip_spec": spec, "n_points": n_points,
                                        "pgd_steps": pgd_steps,
                                        "pgd_restarts": pgd_restarts})
    done = dict(zip(jobs, outs, strict=True))
    rows = []
    for seed in seeds:
        for arch, points in points_of.items():
            seen = set()
            for point in points:
                ckpt = checkpoint_path(results_dir, point.spec, replace(config, seed=int(seed)),
                                       data)
                out = done[ckpt]
                # a repeat of a model (the base point of another sweep) trained nothing more
                resumed = config.epochs if ckpt in seen else out["resumed_from_epoch"]
                seen.add(ckpt)
                measured = out["measured"].assign(
                    test_accuracy=out["test_accuracy"], val_accuracy=out["val_accuracy"],
                    best_epoch=out["best_epoch"])
                for rec in measured.to_dict("records"):
                    rows.append({"arch": arch, "parameter": point.parameter,
                                 "value": point.value_label, "value_numeric": point.value_numeric,
                                 "is_base": point.is_base, "seed": int(seed), **rec,
                                 "resumed_from_epoch": resumed,
                                 "checkpoint": str(ckpt)})
    return pd.DataFrame(rows)


def _measure_point(model, spec: ModelSpec, config: TrainConfig, *, images, perturbations,
                   topolip_spec, n_points, pgd_steps, pgd_restarts) -> pd.DataFrame:
    """The summary of :func:`measure_model` of one trained sweep model (a task's second half),
    on its seed's images (``images[config.seed]``: ``x``, ``y``, ``x_floor``)."""
    own = images[config.seed]
    m = measure_model(model, own["x"], own["y"], perturbations, topolip_spec, n_points=n_points,
                      x_floor=own["x_floor"], seed=config.seed, pgd_steps=pgd_steps,
                      pgd_restarts=pgd_restarts, num_classes=spec.params.get("num_classes"))
    return m.summary
