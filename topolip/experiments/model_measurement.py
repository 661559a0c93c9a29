"""One measurement of the experiments: a trained model, a clean batch, perturbations → tidy rows.

These are the loops the notebooks run for every model and seed; they live here so that a
notebook holds parameters, narrative and plots only. :func:`measure_model` is the full
measurement of one model (per-layer TopoLip, its noise floor, the accuracy each perturbation
costs, and the baseline measures of the measure study). :func:`model_images` is the one rule
that picks the images a model is measured on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import nn

from topolip.experiments import baselines
from topolip.nets.models.probes import collect_activations, forward_probes
from topolip.perturbations.attacks import PERTURBATIONS, check_strength, perturb_at
from topolip.topology.distances import diagram_distance
from topolip.topology.metric import (
    LayerDiagrams,
    layer_diagrams,
    median_pairwise_distance,
    summarize,
    topolip_table,
)
from topolip.topology.points import pairwise_distances
from topolip.topology.spec import TopoLipSpec, check_n_points

__all__ = [
    "ModelImages", "ModelMeasurement", "measure_bounds", "measure_bounds_trained",
    "measure_model", "measure_trained", "model_images", "model_summaries", "seed_batch",
]


def seed_batch(x: torch.Tensor, y: torch.Tensor, n: int, seed: int, *,
               offset: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Images ``offset .. offset + n`` of a seeded permutation of ``(x, y)``.

    Every architecture trained with seed ``s`` is measured on the batch of seed ``s`` (a paired
    design), and different seeds see different images, so that the spread over seeds holds the
    variance from the images as well as from training.

    Parameters
    ----------
    x : torch.Tensor of shape (N, C, H, W)
        Test images, pixels in [0, 1].
    y : torch.Tensor of shape (N,)
        Their labels.
    n : int
        Batch size, ``1 <= offset + n <= N``.
    seed : int
        Seed of the permutation.
    offset : int, default=0
        Start in the permutation (``offset=n`` gives a disjoint second batch).

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        Shapes (n, C, H, W) and (n,).

    Raises
    ------
    ValueError
        If the batch does not fit in ``x``.

    Examples
    --------
    >>> x, y = torch.arange(10.0).reshape(10, 1, 1, 1), torch.arange(10)
    >>> a, _ = seed_batch(x, y, 3, seed=0); b, _ = seed_batch(x, y, 3, seed=0, offset=3)
    >>> set(a.flatten().tolist()) & set(b.flatten().tolist())
    set()
    """
    if not (isinstance(n, int) and n >= 1 and offset >= 0 and offset + n <= len(x)):
        raise ValueError(f"a batch of n={n} images at offset {offset} does not fit in the "
                         f"{len(x)} test images")
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(int(seed)))
    idx = perm[offset:offset + n]
    return x[idx], y[idx]


@dataclass(frozen=True)
class ModelImages:
    """The images one trained model is measured on (:func:`model_images`).

    ``x``, ``y``: the evaluation batch, shapes (n, C, H, W) and (n,), on which accuracies are
    taken; its first ``n_points`` images are the point cloud (:attr:`cloud`). ``x_floor``: the
    noise floor's clean batch of ``n_points`` images, disjoint from the cloud, or ``None``."""

    x: torch.Tensor
    y: torch.Tensor
    n_points: int | None = None
    x_floor: torch.Tensor | None = None

    @property
    def cloud(self) -> torch.Tensor:
        """The images of the point cloud, ``x[:n_points]`` (all of ``x`` without ``n_points``)."""
        return self.x if self.n_points is None else self.x[:self.n_points]


def model_images(x: torch.Tensor, y: torch.Tensor, seed: int, *, n_points: int | None = None,
                 n_robust: int = 0, floor: bool = False) -> ModelImages:
    """The one rule that picks a model's images: cloud, accuracy batch and noise-floor batch.

    Every per-model task (:func:`measure_trained`, :func:`measure_bounds_trained`,
    :func:`topolip.experiments.ood.measure_ood_trained`,
    :func:`topolip.experiments.robustness.robustness_trained`) and the sweeps
    (:func:`topolip.experiments.sweeps.run_sweeps`) take their images here, from the seeded
    permutation of :func:`seed_batch`: the evaluation batch is its first
    ``max(n_robust, n_points)`` images, the point cloud the first ``n_points`` of those, and the
    noise floor's clean batch the next ``n_points`` (disjoint from the cloud).

    Parameters
    ----------
    x : torch.Tensor of shape (N, C, H, W)
        The images to draw from (a test set, an out-of-distribution set), pixels in [0, 1].
    y : torch.Tensor of shape (N,)
        Their labels.
    seed : int
        The model's training seed: the models of one seed share their images.
    n_points : int, optional
        Images per point cloud (:func:`topolip.topology.spec.check_n_points`); ``None`` for a task
        without a cloud.
    n_robust : int, default=0
        Images of the accuracy batch (at least ``n_points`` are taken).
    floor : bool, default=False
        Draw the noise floor's batch too (needs ``2 * n_points <= N``).

    Returns
    -------
    ModelImages

    Raises
    ------
    ValueError
        If ``n_points`` is out of range, ``floor`` is asked without ``n_points``, or the
        batch does not fit in ``x``.

    Examples
    --------
    >>> x, y = torch.arange(10.0).reshape(10, 1, 1, 1), torch.arange(10)
    >>> b = model_images(x, y, 0, n_points=3, n_robust=5, floor=True)
    >>> len(b.x), len(b.cloud), len(b.x_floor)
    (5, 3, 3)
    >>> set(b.cloud.flatten().tolist()) & set(b.x_floor.flatten().tolist())
    set()
    """
    if n_points is not None:
        n_points = check_n_points(n_points, len(x), floor=floor)
    elif floor:
        raise ValueError("floor=True needs n_points: the noise floor's batch has n_points images")
    n = max(n_robust, n_points or 0)
    batch_x, batch_y = seed_batch(x, y, n, seed)
    x_floor = seed_batch(x, y, n_points, seed, offset=n_points)[0] if floor else None
    return ModelImages(batch_x, batch_y, n_points, x_floor)


@dataclass(frozen=True)
class ModelMeasurement:
    """Everything :func:`measure_model` measures on one model.

    ``layers``: per-layer rows of :func:`topolip.topology.metric.topolip_table` for every
    perturbation
    (with the noise floor columns); ``summary``: one row per perturbation (model TopoLip,
    accuracy, baselines). The trained model is the unit of the comparisons: no image
    resamples are taken (a seed's value already holds the variance of its images)."""

    layers: pd.DataFrame
    summary: pd.DataFrame


def _noise_floor(clean: Mapping[str, np.ndarray], floor: Mapping[str, np.ndarray],
                 spec: TopoLipSpec, clean_dgms: LayerDiagrams, *,
                 n_jobs: int | None = None) -> dict[str, float]:
    """Δ_ℓ between the clean batch and a disjoint clean batch of the same size, per layer
    (both diagrams made with ``spec``, its ``n_perm`` subsampling included)."""
    spec.check_diagrams(clean_dgms, "the clean diagrams of the noise floor")
    labels = list(clean)
    floor_dgms = layer_diagrams({label: floor[label] for label in labels}, spec,
                                distances={label: pairwise_distances(floor[label])
                                           for label in labels}, n_jobs=n_jobs)
    return {label: float(diagram_distance(clean_dgms[label], floor_dgms[label], p=spec.p,
                                          q=spec.q, degrees=spec.degrees))
            for label in labels}


def measure_model(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    perturbations: Mapping[str, float],
    spec: TopoLipSpec = TopoLipSpec(),
    *,
    n_points: int | None = None,
    x_floor: torch.Tensor | None = None,
    seed: int = 0,
    baseline_measures: bool = True,
    estimate_samples: int = 4,
    estimate_n_iter: int = 10,
    num_classes: int | None = None,
    pgd_steps: int = 10,
    pgd_restarts: int = 1,
    n_jobs: int | None = None,
) -> ModelMeasurement:
    """The full measurement of one trained model under each perturbation.

    Each perturbation is applied once to the evaluation batch ``x``; its accuracy (and
    the accuracy drop) is taken on all of ``x``, TopoLip on its first ``n_points`` images, so no
    image is perturbed or forwarded twice for the same quantity.

    Parameters
    ----------
    model : torch.nn.Module
        A trained model built by :func:`topolip.nets.models.build_model` (it has probe points).
    x : torch.Tensor of shape (n, C, H, W)
        Clean evaluation images, pixels in [0, 1] (e.g. :func:`seed_batch`).
    y : torch.Tensor of shape (n,)
        Their labels.
    perturbations : mapping of str to float
        ``{kind: strength}``: ε in pixel units (attacks, L∞) or severity 0..5 (corruptions).
    spec : TopoLipSpec
        Degrees, Wasserstein order ``p``, ground metric ``q``, backend and greedy subsample
        ``n_perm`` of every diagram (the noise floor's included).
    n_points : int, optional
        Images of each point cloud (default all of ``x``); ``2 <= n_points <= n``
        (:func:`topolip.topology.spec.check_n_points`).
    x_floor : torch.Tensor of shape (n_points, C, H, W), optional
        A clean batch disjoint from ``x[:n_points]``: its displacement from the clean batch at
        each layer is the noise floor (columns ``noise_floor*``, ``within_noise_floor``,
        ``flag``); without it those columns are NaN / empty.
    seed : int, default=0
        Seed of the random perturbations (pass the training seed: the models of one seed then
        see the same images and the same random perturbations).
    baseline_measures : bool, default=True
        Compute the measure study's baselines (:mod:`topolip.experiments.baselines`).
    estimate_samples, estimate_n_iter : int
        Images and power iterations of the per-layer Lipschitz estimates (baseline).
    num_classes : int, optional
        For the relative accuracy drop ``(clean − perturbed) / (clean − chance)``, chance
        ``1/num_classes`` (default: the model's number of logits).
    pgd_steps, pgd_restarts : int, default=10, 1
        Steps of PGD (step size ``2.5 ε / steps``) and its random restarts (per-image worst
        case, :func:`topolip.perturbations.attacks.pgd`); the chain passes the attack ladder's
        (``ladder_pgd_steps``, ``ladder_pgd_restarts``), so "PGD" is one attack in every table.
    n_jobs : int, optional
        Worker processes for the diagrams (:func:`topolip.topology.rips.rips_diagrams_many`;
        default :func:`topolip.topology.rips.default_jobs`, 1 inside a Dask worker). The result
        does
        not depend on it.

    Returns
    -------
    ModelMeasurement
        ``layers``: :func:`topolip.topology.metric.topolip_table` rows with ``perturbation`` and
        ``strength`` first and ``noise_floor``, ``noise_floor_scale_free``,
        ``within_noise_floor`` (Δ_ℓ at most the floor) and ``flag`` (why a ratio is not to be
        trusted: its denominator is within the noise floor) added.
        ``summary``: per perturbation, ``perturbation``, ``strength``, ``n_images``,
        ``n_points``, ``n_layers`` (``L``), the model TopoLip of
        :func:`topolip.topology.metric.summarize`, ``end_to_end_flag``, ``n_flagged`` (layers whose
        ratio
        is flagged), ``accuracy_clean``, ``accuracy_perturbed``, ``accuracy_drop``,
        ``relative_drop``; with ``baseline_measures`` also ``displacement_ratio_max``,
        ``displacement_ratio_mean``, ``rtd_lite_ratio`` (last probe over input),
        ``cka_distance`` (last probe), and the model-level ``log10_lipschitz_estimate_product``,
        ``log10_spectral_norm_product``, ``logit_margin``, ``parameters``.

    Raises
    ------
    ValueError
        For an unknown perturbation kind (the known ones are listed), a bad ``n_points`` or
        ``x_floor``, or invalid inputs.
    """
    unknown = sorted(set(perturbations) - set(PERTURBATIONS))
    if unknown:
        raise ValueError(f"unknown perturbation(s) {unknown}; known: {list(PERTURBATIONS)}")
    n = len(x)
    n_points = n if n_points is None else check_n_points(n_points, n)
    if x_floor is not None and tuple(x_floor.shape) != (n_points, *x.shape[1:]):
        raise ValueError(f"x_floor must have shape {(n_points, *x.shape[1:])}, got "
                         f"{tuple(x_floor.shape)}")
    # One forward pass per batch: the logits of every image and the activations of the first
    # n_points (the point clouds).
    labels = y.cpu().numpy()
    clean, logits = forward_probes(model, x, n_probe=n_points)
    correct_clean = logits.argmax(1) == labels
    classes = num_classes or logits.shape[1]
    acc_clean = float(correct_clean.mean())
    # One distance matrix per cloud, shared by the diagrams, the scales and the baselines.
    clean_d = {label: pairwise_distances(a, f"clean activations at {label!r}")
               for label, a in clean.items()}
    clean_dgms = layer_diagrams(clean, spec, distances=clean_d, n_jobs=n_jobs)
    scales = {label: median_pairwise_distance(a, distances=clean_d[label])
              for label, a in clean.items()}
    floor = (_noise_floor(clean, collect_activations(model, x_floor), spec, clean_dgms,
                          n_jobs=n_jobs)
             if x_floor is not None else None)
    model_level = {}
    if baseline_measures:
        model_level = {
            "log10_lipschitz_estimate_product": baselines.lipschitz_estimate_product(
                model, x[:estimate_samples], n_iter=estimate_n_iter, seed=seed),
            "log10_spectral_norm_product": baselines.spectral_norm_product(model),
            "logit_margin": baselines.margin_from_logits(logits, labels),
            "parameters": int(sum(p.numel() for p in model.parameters())),
        }
    layers, summary = [], []
    for kind, strength in perturbations.items():
        x_t = perturb_at(kind, model, x, y, strength, seed=seed, pgd_steps=pgd_steps,
                         pgd_restarts=pgd_restarts)
        pert, logits_t = forward_probes(model, x_t, n_probe=n_points)
        correct_t = logits_t.argmax(1) == labels
        pert_d = {label: pairwise_distances(a, f"perturbed activations at {label!r}")
                  for label, a in pert.items()}
        table = topolip_table(clean, pert, spec, clean_diagrams=clean_dgms,
                              clean_distances=clean_d, perturbed_distances=pert_d,
                              n_jobs=n_jobs)
        table.insert(0, "perturbation", kind)
        table.insert(1, "strength", check_strength(kind, strength))
        if floor is not None:
            table["noise_floor"] = table["layer"].map(floor)
            table["noise_floor_scale_free"] = table["noise_floor"] / table["scale"]
            table["within_noise_floor"] = table["delta"] <= table["noise_floor"]
            prev = table["within_noise_floor"].shift(1, fill_value=False).astype(bool)
            table["flag"] = np.where(prev & (table["depth"] > 0),
                                     "denominator within the noise floor", "")
        else:
            table["noise_floor"] = table["noise_floor_scale_free"] = math.nan
            table["within_noise_floor"] = False
            table["flag"] = ""
        acc_t = float(correct_t.mean())
        drop = acc_clean - acc_t
        row = {"perturbation": kind, "strength": table["strength"].iloc[0], "n_images": n,
               "n_points": n_points, "n_layers": len(table) - 1, **summarize(table),
               "end_to_end_flag": ("input displacement within the noise floor"
                                   if bool(table["within_noise_floor"].iloc[0]) else ""),
               "n_flagged": int((table["flag"] != "").sum()),
               "accuracy_clean": acc_clean, "accuracy_perturbed": acc_t,
               "accuracy_drop": drop,
               "relative_drop": (drop / (acc_clean - 1 / classes)
                                 if acc_clean > 1 / classes else math.nan)}
        if baseline_measures:
            first, last = list(clean)[0], list(clean)[-1]
            r0, rl = (baselines.rtd_lite(clean[k], pert[k], scale=scales[k], name=repr(k),
                                         distances=(clean_d[k], pert_d[k]))
                      for k in (first, last))
            row.update(
                displacement_ratio_max=baselines.displacement_ratio(clean, pert, reduce="max",
                                                                    scales=scales),
                displacement_ratio_mean=baselines.displacement_ratio(clean, pert,
                                                                     reduce="mean",
                                                                     scales=scales),
                rtd_lite_ratio=rl / r0 if r0 > 0 else math.nan,
                cka_distance=baselines.cka_distance(clean[last], pert[last], name=repr(last)),
                **model_level)
        summary.append(row)
        layers.append(table)
    return ModelMeasurement(pd.concat(layers, ignore_index=True), pd.DataFrame(summary))


def measure_trained(model: nn.Module, row: Mapping, *, data, perturbations: Mapping[str, float],
                    spec: TopoLipSpec = TopoLipSpec(), n_points: int, n_robust: int,
                    pgd_steps: int = 10, pgd_restarts: int = 1
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`measure_model` of one trained model of ``models.csv`` on its seed's images.

    The per-model task of ``02_topolip`` (:func:`topolip.experiments.per_model.map_models` calls
    it), on the seed's images of the test set (:func:`model_images`): the evaluation batch is the
    first ``max(n_robust, n_points)`` images of the seed's permutation, the TopoLip cloud its first
    ``n_points``, and the noise floor's clean batch the next ``n_points`` images.

    Parameters
    ----------
    model : torch.nn.Module
        The trained model.
    row : mapping
        Its row of ``models.csv`` (``seed`` is read).
    data : topolip.nets.data.split.ImageSplit
        The data set (its test images, pixels in [0, 1]).
    perturbations : mapping of str to float
        ``{kind: strength}`` as in :func:`measure_model`.
    spec : TopoLipSpec
        Degrees, ``p``, ``q``, backend and ``n_perm`` (of every cloud, the noise floor's
        included).
    n_points, n_robust : int
        Images per point cloud; images of the accuracy drop (at least ``n_points``).
    pgd_steps, pgd_restarts : int, default=10, 1
        Steps and random restarts of PGD (:func:`measure_model`).

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        ``layers`` and ``summary`` of :class:`ModelMeasurement`.

    Raises
    ------
    ValueError
        As :func:`model_images` and :func:`measure_model`.
    """
    seed = int(row["seed"])
    images = model_images(data.x_test, data.y_test, seed, n_points=n_points, n_robust=n_robust,
                          floor=True)
    m = measure_model(model, images.x, images.y, perturbations, spec, n_points=n_points,
                      x_floor=images.x_floor, seed=seed, pgd_steps=pgd_steps,
                      pgd_restarts=pgd_restarts, num_classes=int(data.y_test.max()) + 1)
    return m.layers, m.summary


def model_summaries(table: pd.DataFrame, by: tuple[str, ...] = ("arch", "seed", "perturbation",
                                                                   "strength")) -> pd.DataFrame:
    """Model TopoLip (:func:`topolip.topology.metric.summarize`) for each group of a tidy table."""
    rows = []
    for key, group in table.groupby(list(by), sort=False):
        rows.append({**dict(zip(by, key, strict=True)),
                     **summarize(group.sort_values("depth").reset_index(drop=True))})
    return pd.DataFrame(rows)


def measure_bounds(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    perturbations: Mapping[str, float],
    *,
    n_points: int,
    seed: int = 0,
    pgd_steps: int = 10,
    pgd_restarts: int = 1,
    estimate_samples: int = 16,
    estimate_n_iter: int = 30,
) -> pd.DataFrame:
    """The Lipschitz bounds of one trained model's segments, at the clean batch and per
    perturbation (the rows of ``tables/bounds.csv``).

    First :func:`topolip.bounds.segments.layer_bounds` at the clean clouds ``x[:n_points]`` (margin
    0, with the estimates), then for each perturbation the certified chain with margins ``ε_{ℓ−1}``:
    the perturbation is recreated as :func:`measure_model` makes it (the whole ``x`` perturbed with
    ``seed``, cut to its first ``n_points`` images), so its ``eps`` agrees with the TopoLip table of
    the same batch and seed.

    Parameters
    ----------
    model : torch.nn.Module
        A trained model built by :func:`topolip.nets.models.build_model`.
    x : torch.Tensor of shape (n, C, H, W)
        Clean evaluation images, pixels in [0, 1] (:func:`seed_batch`), ``n >= n_points``.
    y : torch.Tensor of shape (n,)
        Their labels (the attacks need them).
    perturbations : mapping of str to float
        ``{kind: strength}``: ε in pixel units (attacks, L∞) or severity 0..5 (corruptions).
    n_points : int
        Images of each point cloud, ``2 <= n_points <= n``
        (:func:`topolip.topology.spec.check_n_points`).
    seed : int, default=0
        Seed of the random perturbations and of the estimate's start vectors (pass the
        training seed, as for :func:`measure_model`).
    pgd_steps, pgd_restarts : int, default=10, 1
        Steps and random restarts of PGD (as :func:`measure_model`).
    estimate_samples : int, default=16
        Clean images at which each segment's Jacobian norm is estimated.
    estimate_n_iter : int, default=30
        Power iterations of the estimate.

    Returns
    -------
    pandas.DataFrame
        ``perturbation`` first (:data:`topolip.schema.LOCAL` for the clean rows, then
        each kind of ``perturbations`` in order), then the columns of
        :func:`topolip.bounds.segments.layer_bounds` (the chain rows add ``margin``, ``eps``,
        ``eps_bound_step``, ``eps_bound_chain``, ``envelope_chain``; their estimates are NaN).

    Raises
    ------
    ValueError
        For an unknown kind, an invalid strength or ``n_points`` out of range.
    topolip.bounds.segments.BoundViolation
        If an estimate exceeds its bound or a measured ``ε_ℓ`` exceeds ``L_ℓ ε_{ℓ−1}``
        (a bug).

    Notes
    -----
    ``W_{∞,∞,ℓ} ≤ 2ε_ℓ ≤ 2 Π_{j≤ℓ} L_j ε_0`` (DESIGN.md section 2); the TopoLip chapter joins
    these rows with ``tables/topolip.csv``
    (:func:`topolip.evidence.bound_tables.bounds_vs_measured`).

    References
    ----------
    .. [1] B. Chen, "Is smoothness the key to robustness?", arXiv:2410.17628.
    """
    from topolip.bounds.segments import layer_bounds
    from topolip.schema import LOCAL

    n_points = check_n_points(n_points, len(x))
    unknown = sorted(set(perturbations) - set(PERTURBATIONS))
    if unknown:
        raise ValueError(f"perturbations has unknown kinds {unknown}; known: "
                         f"{sorted(PERTURBATIONS)}")
    clean = x[:n_points]
    local = layer_bounds(model, clean, estimate_samples=estimate_samples,
                         n_iter=estimate_n_iter, seed=seed)
    local.insert(0, "perturbation", LOCAL)
    parts = [local]
    for kind, strength in perturbations.items():
        x_t = perturb_at(kind, model, x, y, strength, seed=seed, pgd_steps=pgd_steps,
                         pgd_restarts=pgd_restarts)[:n_points]
        chain = layer_bounds(model, clean, x_t, estimate=False)
        chain.insert(0, "perturbation", kind)
        parts.append(chain)
    return pd.concat(parts, ignore_index=True)


def measure_bounds_trained(model: nn.Module, row: Mapping, *, data,
                           perturbations: Mapping[str, float], n_points: int, n_robust: int,
                           pgd_steps: int = 10, pgd_restarts: int = 1,
                           estimate_samples: int = 16,
                           estimate_n_iter: int = 30) -> pd.DataFrame:
    """:func:`measure_bounds` of one trained model of ``models.csv`` on its seed's images.

    The per-model task of ``05_bounds_vs_measured``
    (:func:`topolip.experiments.per_model.map_models` calls it): the batch :func:`measure_trained`
    measured (:func:`model_images`: the first ``max(n_robust, n_points)`` images of the seed's
    permutation of the test set), perturbed as it was.

    Parameters
    ----------
    model : torch.nn.Module
        The trained model.
    row : mapping
        Its row of ``models.csv`` (``seed`` is read).
    data : topolip.nets.data.split.ImageSplit
        The data set (its test images, pixels in [0, 1]).
    perturbations : mapping of str to float
        ``{kind: strength}`` of the paired perturbations whose chains are bounded.
    n_points, n_robust : int
        As :func:`measure_trained`.
    pgd_steps, pgd_restarts, estimate_samples, estimate_n_iter : int
        As :func:`measure_bounds`.

    Returns
    -------
    pandas.DataFrame
        As :func:`measure_bounds`.

    Raises
    ------
    ValueError
        As :func:`model_images` and :func:`measure_bounds`.
    """
    seed = int(row["seed"])
    images = model_images(data.x_test, data.y_test, seed, n_points=n_points, n_robust=n_robust)
    return measure_bounds(model, images.x, images.y, perturbations, n_points=n_points, seed=seed,
                          pgd_steps=pgd_steps, pgd_restarts=pgd_restarts,
                          estimate_samples=estimate_samples, estimate_n_iter=estimate_n_iter)
