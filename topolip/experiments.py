"""One measurement of the experiments: a trained model, a clean batch, perturbations → tidy rows.

This is the loop the notebooks run for every model and seed; it lives here so that a notebook
holds parameters, narrative and plots only.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import torch
from torch import nn

from .attacks import PERTURBATIONS, perturb
from .metric import DistanceSpec, layer_diagrams, summarize, topolip_table
from .models import collect_activations
from .train import accuracy

__all__ = ["measure_ood", "measure_topolip", "model_summaries"]


def measure_topolip(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    perturbations: Mapping[str, float],
    spec: DistanceSpec = DistanceSpec(),
    *,
    n_perm: int | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Per-layer TopoLip of ``model`` for each perturbation of the clean batch ``x``.

    Parameters
    ----------
    model : torch.nn.Module
        A trained model built by :func:`topolip.models.build_model` (it has probe points).
    x : torch.Tensor of shape (m, C, H, W)
        Clean images, pixels in [0, 1]; their activations form the clean clouds.
    y : torch.Tensor of shape (m,)
        True labels (the attacks need them; accuracies are reported).
    perturbations : mapping of str to float
        ``{kind: strength}``, ``kind`` from :data:`topolip.attacks.PERTURBATIONS`; the strength
        is ε in pixel units (attacks, L∞) or the severity 0..5 (corruptions).
    spec : DistanceSpec
        Degrees, Wasserstein order ``p`` and ground metric ``q``.
    n_perm : int, optional
        Greedy-permutation subsample size for the diagrams.
    seed : int, default=0
        Seed of the random perturbations (PGD start, noise, corruptions).

    Returns
    -------
    pandas.DataFrame
        The rows of :func:`topolip.metric.topolip_table` for each perturbation, with columns
        ``perturbation``, ``strength``, ``accuracy_clean`` and ``accuracy_perturbed`` (on the
        ``m`` images) added.

    Raises
    ------
    ValueError
        For an unknown perturbation kind (the known ones are listed) or invalid inputs.
    """
    unknown = sorted(set(perturbations) - set(PERTURBATIONS))
    if unknown:
        raise ValueError(f"unknown perturbation(s) {unknown}; known: {list(PERTURBATIONS)}")
    clean = collect_activations(model, x)
    clean_dgms = layer_diagrams(clean, spec, n_perm=n_perm)
    acc_clean = accuracy(model, x, y)
    tables = []
    for kind, strength in perturbations.items():
        key = "severity" if PERTURBATIONS[kind] == "severity" else "eps"
        value = int(strength) if key == "severity" else float(strength)
        x_t = perturb(kind, model, x, y, seed=seed, **{key: value})
        table = topolip_table(clean, collect_activations(model, x_t), spec,
                              clean_diagrams=clean_dgms, n_perm=n_perm)
        table.insert(0, "perturbation", kind)
        table.insert(1, "strength", value)
        table["accuracy_clean"] = acc_clean
        table["accuracy_perturbed"] = accuracy(model, x_t, y)
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


def measure_ood(
    model: nn.Module,
    x: torch.Tensor,
    ood: Mapping[str, torch.Tensor],
    spec: DistanceSpec = DistanceSpec(),
    *,
    n_perm: int | None = None,
) -> pd.DataFrame:
    """Per-layer TopoLip of ``model`` under distribution shift: clean batch against each OOD set.

    The "perturbed" cloud of layer ``ℓ`` is ``H_ℓ`` of another data set (book/method.md),
    so the samples are not paired: ``topolip_table(..., paired=False)``, and ``eps``,
    ``bottleneck`` and ``envelope`` are NaN (no certified envelope exists without pairing).

    Parameters
    ----------
    model : torch.nn.Module
        A trained model built by :func:`topolip.models.build_model` (it has probe points).
    x : torch.Tensor of shape (m, C, H, W)
        Clean in-distribution images, pixels in [0, 1].
    ood : mapping of str to torch.Tensor of shape (m', C, H, W)
        ``{set name: images}`` with pixels in [0, 1] and ``x``'s image shape (e.g. the images
        of :func:`topolip.robustness.load_ood_batches`); ``m'`` may differ from ``m``.
    spec : DistanceSpec
        Degrees, Wasserstein order ``p`` and ground metric ``q``.
    n_perm : int, optional
        Greedy-permutation subsample size for the diagrams.

    Returns
    -------
    pandas.DataFrame
        The rows of :func:`topolip.metric.topolip_table` for each set, with columns
        ``ood_set``, ``n_clean`` and ``n_ood`` first. Summarize with
        ``model_summaries(table, by=("arch", "seed", "ood_set"))``.

    Raises
    ------
    ValueError
        If ``ood`` is empty, an OOD batch's image shape differs from ``x``'s, or a cloud is
        invalid (see :func:`topolip.metric.topolip_table`).

    Examples
    --------
    >>> from topolip.models import build_model
    >>> _ = torch.manual_seed(0)
    >>> model = build_model("conv_stack", num_layers=1, channels=2)
    >>> t = measure_ood(model, torch.rand(12, 1, 28, 28), {"dark": torch.rand(10, 1, 28, 28) / 4})
    >>> t[["ood_set", "layer", "n_ood"]].values.tolist()[:2], bool(t["eps"].isna().all())
    ([['dark', 'input', 10], ['dark', 'layer1', 10]], True)
    """
    if not ood:
        raise ValueError("ood must hold at least one out-of-distribution batch")
    for name, x_o in ood.items():
        if not isinstance(x_o, torch.Tensor) or tuple(x_o.shape[1:]) != tuple(x.shape[1:]):
            got = tuple(x_o.shape) if isinstance(x_o, torch.Tensor) else type(x_o).__name__
            raise ValueError(f"OOD set {name!r} must be images of shape (m', "
                             f"{', '.join(map(str, x.shape[1:]))}) like x, got {got}")
    clean = collect_activations(model, x)
    clean_dgms = layer_diagrams(clean, spec, n_perm=n_perm)
    tables = []
    for name, x_o in ood.items():
        table = topolip_table(clean, collect_activations(model, x_o), spec, paired=False,
                              clean_diagrams=clean_dgms, n_perm=n_perm)
        table.insert(0, "ood_set", name)
        table.insert(1, "n_clean", len(x))
        table.insert(2, "n_ood", len(x_o))
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


def model_summaries(table: pd.DataFrame, by: tuple[str, ...] = ("arch", "seed", "perturbation",
                                                                   "strength")) -> pd.DataFrame:
    """Model TopoLip (:func:`topolip.metric.summarize`) for each group of a tidy table."""
    rows = []
    for key, group in table.groupby(list(by), sort=False):
        rows.append({**dict(zip(by, key, strict=True)),
                     **summarize(group.sort_values("depth").reset_index(drop=True))})
    return pd.DataFrame(rows)
