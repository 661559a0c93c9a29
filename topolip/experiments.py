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

__all__ = ["measure_topolip", "model_summaries"]


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


def model_summaries(table: pd.DataFrame, by: tuple[str, ...] = ("arch", "seed", "perturbation",
                                                                   "strength")) -> pd.DataFrame:
    """Model TopoLip (:func:`topolip.metric.summarize`) for each group of a tidy table."""
    rows = []
    for key, group in table.groupby(list(by), sort=False):
        rows.append({**dict(zip(by, key, strict=True)),
                     **summarize(group.sort_values("depth").reset_index(drop=True))})
    return pd.DataFrame(rows)
